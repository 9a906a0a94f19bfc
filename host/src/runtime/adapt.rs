//! Core wasm modules built for wasm32-wasip1 become components by wrapping them with the
//! WASI preview1 adapter that matches wasmtime-wasi, so the large world of existing wasip1
//! CLIs runs against burrow's filesystem too.
//!
//! One thing the adapter loses is fixed on the way: its `proc_exit` turns every non-zero
//! status into a bare failure (the host sees 1). Before adapting, the module's
//! `wasi_snapshot_preview1.proc_exit` import is renamed to `wasi:cli/exit@0.2.12`'s
//! `exit-with-code` (the same core signature, `(i32) -> ()`), so `sys.exit(5)` in a wasip1
//! CPython reaches the shell as 5, as it would on Linux.

use std::borrow::Cow;

use crate::run::RunError;

/// `\0asm` followed by the core-module version 1.
const CORE_HEADER: [u8; 8] = [0, b'a', b's', b'm', 1, 0, 0, 0];

/// The WASI interface whose `exit-with-code` carries a full exit status (stable since 0.2.12,
/// the version wasmtime-wasi 48 and its adapter speak).
const EXIT_WIT: &str = r#"
package wasi:cli@0.2.12;

@since(version = 0.2.0)
interface exit {
  @since(version = 0.2.0)
  exit: func(status: result);
  @since(version = 0.2.12)
  exit-with-code: func(status-code: u8);
}

world burrow-proc-exit {
  @since(version = 0.2.0)
  import exit;
}
"#;
const EXIT_MODULE: &str = "wasi:cli/exit@0.2.12";
const EXIT_FUNC: &str = "exit-with-code";

/// Names the adaptation below; part of a wasip1 module's cache key (see `Engine::load`).
pub const ADAPTATION: &str = "burrow-wasip1-adapter-48.0.8+exit-with-code";

/// Whether `wasm` is a core module (wasip1) rather than a component.
pub fn is_core_module(wasm: &[u8]) -> bool {
    wasm.starts_with(&CORE_HEADER)
}

/// Returns `wasm` unchanged if it is a component; wraps a core module into one.
pub fn to_component(wasm: &[u8]) -> Result<Cow<'_, [u8]>, RunError> {
    if !wasm.starts_with(&CORE_HEADER) {
        return Ok(Cow::Borrowed(wasm));
    }
    let fail = |e: anyhow::Error| RunError::Load(format!("cannot adapt wasip1 module: {e:#}"));
    let module = with_exit_code(wasm).map_err(fail)?;
    let adapter = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER;
    let encoded = wit_component::ComponentEncoder::default()
        .module(&module)
        .and_then(|e| e.adapter("wasi_snapshot_preview1", adapter))
        .and_then(|e| e.validate(true).encode())
        .map_err(fail)?;
    Ok(Cow::Owned(encoded))
}

/// `wasm` with its `proc_exit` import (if any) taken from `wasi:cli/exit.exit-with-code`
/// instead of the adapter, and the WIT that says so embedded.
fn with_exit_code(wasm: &[u8]) -> anyhow::Result<Cow<'_, [u8]>> {
    use wasm_encoder::{EntityType, ImportSection, RawSection};
    use wasmparser::{Parser, Payload, TypeRef};

    let mut out = wasm_encoder::Module::new();
    let mut renamed = false;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        if let Payload::ImportSection(reader) = &payload {
            let mut imports = ImportSection::new();
            for import in reader.clone().into_imports() {
                let import = import?;
                let ty = match import.ty {
                    TypeRef::Func(i) => EntityType::Function(i),
                    // Only function imports are expected from wasi-libc programs; anything
                    // else is left to the encoder below, which refuses what it cannot place.
                    _ => return Ok(Cow::Borrowed(wasm)),
                };
                if import.module == "wasi_snapshot_preview1" && import.name == "proc_exit" {
                    imports.import(EXIT_MODULE, EXIT_FUNC, ty);
                    renamed = true;
                } else {
                    imports.import(import.module, import.name, ty);
                }
            }
            out.section(&imports);
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &wasm[range],
            });
        }
    }
    if !renamed {
        return Ok(Cow::Borrowed(wasm));
    }
    let mut bytes = out.finish();
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve.push_str("burrow-proc-exit.wit", EXIT_WIT)?;
    let world = resolve.select_world(&[pkg], Some("burrow-proc-exit"))?;
    wit_component::embed_component_metadata(
        &mut bytes,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )?;
    Ok(Cow::Owned(bytes))
}
