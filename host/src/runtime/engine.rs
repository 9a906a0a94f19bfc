//! The wasmtime engine of a process and its component cache. One [`Engine`] per process:
//! pooling allocator, copy-on-write memory images, epoch interruption for wall-clock limits.
//! A component is compiled once: the precompiled bytes are kept on disk (keyed by the
//! component's BLAKE3 hash and the engine's compatibility hash) and loaded by mmap, and one
//! `InstancePre` per component is kept in memory, so later runs never invoke Cranelift.
//!
//! Calls with a CPU budget run on a second engine, made on first need ([`Engine::metered`]):
//! the same configuration with wasmtime's fuel consumption, which changes the generated code.
//! The default engine stays unmetered, so a call without a budget pays nothing for the
//! feature; the metered engine compiles its own artifacts (the embedded ones are the
//! unmetered engine's) into the same cache, under its own compatibility hash.

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
    /// Compile the built-in components for this CPU (once, into the cache) instead of using
    /// the portable native code embedded at build time: a little faster per call for a
    /// long-lived server, at the price of one compile (seconds) on an empty cache.
    pub compile_builtins: bool,
    /// Count fuel (wasmtime's `consume_fuel`): the engine of calls with a CPU budget. Made
    /// by [`Engine::metered`] rather than directly, as a rule.
    pub metered: bool,
}

/// A component ready to instantiate.
#[derive(Clone)]
pub struct Program {
    pub(crate) pre: CommandPre<RunState>,
    /// BLAKE3 of the component's bytes, hex.
    pub hash: String,
    /// Whether loading it invoked the compiler (false: cache hit).
    pub compiled: bool,
    /// Loaded into the metered engine (it runs only with a CPU budget).
    pub(crate) metered: bool,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("hash", &self.hash).finish()
    }
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
    /// [`Engine::load_installed`]'s memo: file key -> content hash.
    files: Mutex<HashMap<String, [u8; 32]>>,
    compat: String,
    compile_builtins: bool,
    /// How this engine was made (its metered twin is made the same way).
    config: EngineConfig,
    /// The metered twin of an unmetered engine, once a call with a CPU budget needed it.
    metered: std::sync::OnceLock<Engine>,
}

mod config {
    #![allow(dead_code)] // `portable_cpu` is build.rs's
    include!("engine_config.rs");
}
use config::wasmtime_config;

impl Engine {
    /// Creates the engine (and its epoch ticker thread).
    pub fn new(config: EngineConfig) -> Result<Engine, RunError> {
        let host = |e: wasmtime::Error| RunError::Host(format!("{e:#}"));
        // Fuel is set here, not in `wasmtime_config`: build.rs precompiles the built-in
        // components for the unmetered engine only.
        let make = |pooling: bool| {
            let mut c = wasmtime_config(pooling);
            c.consume_fuel(config.metered);
            wasmtime::Engine::new(&c)
        };
        let engine = if config.no_pooling {
            make(false).map_err(host)?
        } else {
            // Pooling reserves virtual memory up front; where that is refused, run without.
            match make(true) {
                Ok(e) => e,
                Err(err) => {
                    tracing::warn!(%err, "pooling allocator unavailable; using on-demand allocation");
                    make(false).map_err(host)?
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
            cache_dir: config.cache_dir.clone(),
            programs: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            compat,
            compile_builtins: config.compile_builtins,
            config,
            metered: std::sync::OnceLock::new(),
        })))
    }

    /// Whether this engine counts fuel (runs only calls with a CPU budget).
    pub fn is_metered(&self) -> bool {
        self.config.metered
    }

    /// The engine of calls with a CPU budget: this one if it counts fuel, else its metered
    /// twin, made on first use (a second epoch thread; its own programs, compiled once into
    /// the same cache).
    pub fn metered(&self) -> Result<Engine, RunError> {
        if self.is_metered() {
            return Ok(self.clone());
        }
        if let Some(e) = self.metered.get() {
            return Ok(e.clone());
        }
        let twin = Engine::new(EngineConfig {
            metered: true,
            ..self.config.clone()
        })?;
        // Two threads may both make one; the first kept wins and the other is dropped.
        Ok(self.metered.get_or_init(|| twin).clone())
    }

    /// The engine a run with `limits` runs on: [`Engine::metered`] with a CPU budget, else
    /// this one.
    pub fn for_limits(&self, limits: &crate::Limits) -> Result<Engine, RunError> {
        if limits.cpu.is_some() {
            self.metered()
        } else {
            Ok(self.clone())
        }
    }

    /// Loads a component (or a wasip1 core module, adapted into a component) from bytes.
    pub fn load(&self, wasm: &[u8]) -> Result<Program, RunError> {
        // A wasip1 module's artifact also depends on how it is adapted: the adaptation's
        // version is part of its key, so a changed adaptation never meets an old artifact.
        let hash = if crate::adapt::is_core_module(wasm) {
            let mut h = blake3::Hasher::new();
            h.update(crate::adapt::ADAPTATION.as_bytes());
            h.update(wasm);
            *h.finalize().as_bytes()
        } else {
            *blake3::hash(wasm).as_bytes()
        };
        if let Some(p) = self.loaded(&hash) {
            return Ok(p);
        }
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let (component, compiled) = self.component(wasm, &hex)?;
        let program = self.program(&component, hex, compiled)?;
        self.remember(hash, &program);
        Ok(program)
    }

    /// Loads a built-in component: `cwasm` is its build-time native code (see build.rs) and
    /// `hash` the BLAKE3 of `wasm`. The artifact is used without compiling anything: mapped
    /// from the cache directory when a copy is there, else loaded from memory (and copied
    /// into the cache for later processes). With no artifact, one the engine rejects (another
    /// CPU, another configuration) or `compile_builtins`, this is [`Engine::load`]: compiled
    /// for the host, once, into the cache.
    pub fn load_builtin(
        &self,
        wasm: &[u8],
        cwasm: &[u8],
        hash: [u8; 32],
    ) -> Result<Program, RunError> {
        if let Some(p) = self.loaded(&hash) {
            return Ok(p);
        }
        // The embedded code is the unmetered engine's: the metered one compiles its own.
        if cwasm.is_empty() || self.compile_builtins || self.is_metered() {
            return self.load(wasm);
        }
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        // SAFETY (both loads): the bytes are the artifact build.rs embedded in this binary,
        // made by `precompile_component` with this engine's configuration, or a copy of them
        // in burrow's own cache directory under a name carrying the engine's compatibility
        // hash; wasmtime checks them against the engine and the CPU before use.
        let from_memory = || unsafe { Component::deserialize(&self.engine, cwasm) };
        let component = match &self.cache_dir {
            Some(dir) => {
                let path = dir.join(format!("{hex}-{}-built-in.cwasm", self.compat));
                match path
                    .exists()
                    .then(|| unsafe { Component::deserialize_file(&self.engine, &path) })
                {
                    Some(Ok(c)) => Ok(c),
                    // Missing or damaged: loaded from memory, and (re)written for the next
                    // process only when the engine accepts it (not on a CPU it rejects).
                    _ => from_memory().inspect(|_| {
                        let _ = write_atomically(dir, &path, cwasm);
                    }),
                }
            }
            None => from_memory(),
        };
        let component = match component {
            Ok(c) => c,
            Err(err) => {
                tracing::info!(%err, "built-in component not usable as precompiled; compiling");
                return self.load(wasm);
            }
        };
        let program = self.program(&component, hex, false)?;
        self.remember(hash, &program);
        Ok(program)
    }

    fn program(
        &self,
        component: &Component,
        hash: String,
        compiled: bool,
    ) -> Result<Program, RunError> {
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| RunError::Load(format!("cannot link: {e:#}")))?;
        let pre = CommandPre::new(pre)
            .map_err(|e| RunError::Load(format!("not a wasi:cli command: {e:#}")))?;
        Ok(Program {
            pre,
            hash,
            compiled,
            metered: self.is_metered(),
        })
    }

    /// A component this engine has loaded before (its `compiled` flag cleared).
    fn loaded(&self, hash: &[u8; 32]) -> Option<Program> {
        let programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        programs.get(hash).map(|p| Program {
            compiled: false,
            ..p.clone()
        })
    }

    fn remember(&self, hash: [u8; 32], program: &Program) {
        self.programs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(hash, program.clone());
    }

    /// Loads a program from a file that only the operator changes (the tool layer, the
    /// toolchains): known by its path, size, modification time and inode, so a 26 MB
    /// interpreter is neither read nor hashed again. The memo lives in memory and, with a
    /// cache directory, in `<cache>/files/`; the program itself is still the cached artifact
    /// named by its content hash, so a replaced file (new size, time or inode) is read anew.
    pub fn load_installed(&self, path: &Path) -> Result<Program, RunError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| RunError::Load(format!("cannot read {}: {e}", path.display())))?;
        let key = file_key(path, &meta);
        let known = self
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .copied();
        if let Some(hash) = known
            && let Some(p) = self.loaded(&hash)
        {
            return Ok(p);
        }
        let memo = self.cache_dir.as_ref().map(|d| {
            d.join("files")
                .join(blake3::hash(key.as_bytes()).to_hex().as_str())
        });
        if let (Some(memo), Some(dir)) = (&memo, &self.cache_dir)
            && let Ok(text) = std::fs::read_to_string(memo)
            && let Some(hash) = parse_hash(text.trim())
        {
            let artifact = dir.join(format!("{}-{}.cwasm", text.trim(), self.compat));
            if artifact.exists() {
                // SAFETY: as in `component`: an artifact of this engine's configuration in
                // burrow's own cache directory, mapped rather than copied.
                if let Ok(c) = unsafe { Component::deserialize_file(&self.engine, &artifact) } {
                    let program = self.program(&c, text.trim().to_string(), false)?;
                    self.remember(hash, &program);
                    self.remember_file(key, hash);
                    return Ok(program);
                }
            }
        }
        let bytes = std::fs::read(path)
            .map_err(|e| RunError::Load(format!("cannot read {}: {e}", path.display())))?;
        let program = self.load(&bytes)?;
        // Remembered only if the file did not change while it was read.
        let unchanged = std::fs::metadata(path).is_ok_and(|m| file_key(path, &m) == key);
        if unchanged && let Some(hash) = parse_hash(&program.hash) {
            self.remember_file(key, hash);
            if let (Some(memo), Some(dir)) = (&memo, &self.cache_dir) {
                let files = dir.join("files");
                if std::fs::create_dir_all(&files).is_ok() {
                    let _ = write_atomically(&files, memo, program.hash.as_bytes());
                }
            }
        }
        Ok(program)
    }

    fn remember_file(&self, key: String, hash: [u8; 32]) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, hash);
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
            write_atomically(dir, &path, &bytes).map_err(|e| {
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

/// What identifies a file's contents without reading it: path, size, modification time, inode.
fn file_key(path: &Path, meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt as _;
    format!(
        "{}\0{}\0{}.{}\0{}:{}",
        path.display(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.dev(),
        meta.ino()
    )
}

fn parse_hash(hex: &str) -> Option<[u8; 32]> {
    blake3::Hash::from_hex(hex).ok().map(|h| *h.as_bytes())
}

/// Writes `bytes` to `path` in `dir` through a temporary file and a rename, so a reader
/// never maps a half-written artifact. The temporary name is unique per process and per call:
/// two threads may write the same component.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}-{}-{n}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Shared handle to the engine.
pub type SharedEngine = Arc<Engine>;
