//! The wasmtime engine of a process and its component cache. One [`Engine`] per process:
//! pooling allocator, copy-on-write memory images, epoch interruption for wall-clock limits.
//! A component is compiled once: the precompiled bytes are kept on disk (keyed by the
//! component's BLAKE3 hash and the engine's compatibility hash) and loaded by mmap, and one
//! `InstancePre` per component is kept in memory, so later runs never invoke Cranelift.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime_wasi::p2::bindings::sync::CommandPre;

use crate::run::{RunError, RunState};

/// How often the epoch advances; wall-clock limits have this granularity.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Engine settings.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Where precompiled components are kept. `None`: compile in memory only.
    pub cache_dir: Option<PathBuf>,
    /// Use the pooling instance allocator (default true; set false where virtual memory is
    /// scarce).
    pub no_pooling: bool,
}

/// A component ready to instantiate.
#[derive(Clone)]
pub struct Program {
    pub(crate) pre: CommandPre<RunState>,
    /// BLAKE3 of the component's bytes, hex.
    pub hash: String,
    /// Whether loading it invoked the compiler (false: cache hit).
    pub compiled: bool,
}

/// The process's wasmtime engine, linker and component cache. Cloning is cheap (a shared
/// handle): a run keeps one so the programs it starts (`burrow:sandbox/process`) use the same
/// engine and cache.
#[derive(Clone)]
pub struct Engine(Arc<EngineInner>);

impl std::ops::Deref for Engine {
    type Target = EngineInner;
    fn deref(&self) -> &EngineInner {
        &self.0
    }
}

#[doc(hidden)]
pub struct EngineInner {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) linker: Linker<RunState>,
    cache_dir: Option<PathBuf>,
    programs: Mutex<HashMap<[u8; 32], Program>>,
    compat: String,
}

fn wasmtime_config(pooling: bool) -> wasmtime::Config {
    let mut c = wasmtime::Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.memory_init_cow(true);
    c.cranelift_opt_level(wasmtime::OptLevel::Speed);
    if pooling {
        let mut p = wasmtime::PoolingAllocationConfig::default();
        p.total_component_instances(64);
        p.total_core_instances(512);
        p.total_memories(128);
        p.total_tables(512);
        p.max_memory_size(4 << 30);
        p.table_elements(200_000);
        c.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(p));
    }
    c
}

impl Engine {
    /// Creates the engine (and its epoch ticker thread).
    pub fn new(config: EngineConfig) -> Result<Engine, RunError> {
        let host = |e: wasmtime::Error| RunError::Host(format!("{e:#}"));
        let engine = if config.no_pooling {
            wasmtime::Engine::new(&wasmtime_config(false)).map_err(host)?
        } else {
            // Pooling reserves virtual memory up front; where that is refused, run without.
            match wasmtime::Engine::new(&wasmtime_config(true)) {
                Ok(e) => e,
                Err(err) => {
                    tracing::warn!(%err, "pooling allocator unavailable; using on-demand allocation");
                    wasmtime::Engine::new(&wasmtime_config(false)).map_err(host)?
                }
            }
        };
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(host)?;
        crate::wasi_fs::add_to_linker(&mut linker, RunState::fs_view).map_err(host)?;
        crate::process::add_to_linker(&mut linker).map_err(host)?;
        // Outgoing HTTP, through the call's egress policy (raw sockets stay denied).
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).map_err(host)?;
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("burrow-epoch".into())
            .spawn(move || {
                while let Some(e) = weak.upgrade() {
                    e.increment_epoch();
                    drop(e);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .map_err(|e| RunError::Host(format!("cannot start the epoch thread: {e}")))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let compat = format!("{:016x}", h.finish());
        if let Some(dir) = &config.cache_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| RunError::Host(format!("cannot create {}: {e}", dir.display())))?;
        }
        Ok(Engine(Arc::new(EngineInner {
            engine,
            linker,
            cache_dir: config.cache_dir,
            programs: Mutex::new(HashMap::new()),
            compat,
        })))
    }

    /// Loads a component (or a wasip1 core module, adapted into a component) from bytes.
    pub fn load(&self, wasm: &[u8]) -> Result<Program, RunError> {
        let hash = *blake3::hash(wasm).as_bytes();
        if let Some(p) = self
            .programs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&hash)
        {
            let mut p = p.clone();
            p.compiled = false;
            return Ok(p);
        }
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let (component, compiled) = self.component(wasm, &hex)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| RunError::Load(format!("cannot link: {e:#}")))?;
        let pre = CommandPre::new(pre)
            .map_err(|e| RunError::Load(format!("not a wasi:cli command: {e:#}")))?;
        let program = Program {
            pre,
            hash: hex,
            compiled,
        };
        self.programs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(hash, program.clone());
        Ok(program)
    }

    /// Loads a component from a file.
    pub fn load_file(&self, path: &Path) -> Result<Program, RunError> {
        let bytes = std::fs::read(path)
            .map_err(|e| RunError::Load(format!("cannot read {}: {e}", path.display())))?;
        self.load(&bytes)
    }

    fn component(&self, wasm: &[u8], hex: &str) -> Result<(Component, bool), RunError> {
        let wasm = crate::adapt::to_component(wasm)?;
        let Some(dir) = &self.cache_dir else {
            let c = Component::new(&self.engine, &wasm)
                .map_err(|e| RunError::Load(format!("invalid component: {e:#}")))?;
            return Ok((c, true));
        };
        let path = dir.join(format!("{hex}-{}.cwasm", self.compat));
        let mut compiled = false;
        if !path.exists() {
            let bytes = self
                .engine
                .precompile_component(&wasm)
                .map_err(|e| RunError::Load(format!("invalid component: {e:#}")))?;
            // Unique per process and per call: two threads may compile the same component.
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".{hex}-{}-{n}.tmp", std::process::id()));
            std::fs::write(&tmp, &bytes)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| {
                    RunError::Load(format!("cannot write cache {}: {e}", path.display()))
                })?;
            compiled = true;
        }
        // SAFETY: the file was produced by `precompile_component` of an engine with the same
        // compatibility hash (part of its name) and lives in burrow's own cache directory;
        // `deserialize_file` maps it rather than copying.
        let c = unsafe { Component::deserialize_file(&self.engine, &path) }
            .map_err(|e| RunError::Load(format!("bad cache entry {}: {e:#}", path.display())))?;
        Ok((c, compiled))
    }
}

/// Shared handle to the engine.
pub type SharedEngine = Arc<Engine>;
