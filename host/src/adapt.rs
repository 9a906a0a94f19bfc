//! Core wasm modules built for wasm32-wasip1 become components by wrapping them with the
//! WASI preview1 adapter that matches wasmtime-wasi, so the large world of existing wasip1
//! CLIs runs against burrow's filesystem too.

use crate::run::RunError;

/// `\0asm` followed by the core-module version 1.
const CORE_HEADER: [u8; 8] = [0, b'a', b's', b'm', 1, 0, 0, 0];

/// Returns `wasm` unchanged if it is a component; wraps a core module into one.
pub fn to_component(wasm: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, RunError> {
    if !wasm.starts_with(&CORE_HEADER) {
        return Ok(std::borrow::Cow::Borrowed(wasm));
    }
    let adapter = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER;
    let encoded = wit_component::ComponentEncoder::default()
        .module(wasm)
        .and_then(|e| e.adapter("wasi_snapshot_preview1", adapter))
        .and_then(|e| e.validate(true).encode())
        .map_err(|e| RunError::Load(format!("cannot adapt wasip1 module: {e:#}")))?;
    Ok(std::borrow::Cow::Owned(encoded))
}
