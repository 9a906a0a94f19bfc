//! Sessions: a workspace head plus settings and an event log, addressed by id, unique id
//! prefix, or name. Nothing is held in memory between calls: every call opens a transaction on
//! the session's head, runs, and commits one version together with its event row. Suspend is
//! implicit; resume is the next call, from any process.
//!
//! ```no_run
//! # fn main() -> Result<(), burrow_host::session::SessionError> {
//! use burrow_host::session::{Family, Sandbox};
//! let sandbox = Sandbox::open("burrow.db")?;
//! let s = sandbox.create(Some("analysis"))?;
//! let out = sandbox.call(&s.id, Family::AgentToolset, "write",
//!     &serde_json::json!({"file_path": "notes.md", "content": "hello"}))?;
//! assert!(!out.is_error);
//! let forks = sandbox.fork(&s.id, 3)?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use burrow_store::{Change, EventFilter, Store, Txn, Version, VersionId};
use serde::Serialize;
use serde_json::{Value, json};

use crate::determinism::Determinism;
use crate::tools::{ToolOutput, Toolbox};
use crate::{Engine, EngineConfig, Limits, RunError, RunOptions, RunResult};

/// Errors of the session layer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session matches '{0}'")]
    Unknown(String),
    #[error("'{key}' is ambiguous: it matches {}", .candidates.join(", "))]
    Ambiguous {
        key: String,
        candidates: Vec<String>,
    },
    #[error("a session named '{0}' already exists")]
    NameTaken(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] burrow_store::Error),
    #[error(transparent)]
    Run(#[from] RunError),
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;

pub use crate::tools::Family;

mod merge;
mod replay;
pub use merge::{FORKED_AT_KEY, MergeConflict, MergeOutcome, MergeRequest};
pub use replay::{ReplayReport, ReplayRequest, ReplayedCall};

/// Metadata keys of the interfaces that a fork inherits because they describe files the
/// fork has too: the Managed Agents worker's installed skills and memory stores' sync state.
pub const FORKED_KEYS: &[&str] = &[MA_SKILLS_KEY, MA_MEMORY_KEY, TOOL_ROOTS_KEY];
/// Directories outside the workspace that the file tools may reach too (a JSON list of
/// [`crate::tools::ToolRoot`]): the worker's memory stores mounted at their `mount_path`, as
/// the SDK's `allowed_roots` and `read_only_roots`.
pub const TOOL_ROOTS_KEY: &str = "tool_roots";
/// The Managed Agents skills installed in the session (kept by the worker).
pub const MA_SKILLS_KEY: &str = "managed_agents_skills";
/// The Managed Agents memory stores' sync state (kept by the worker).
pub const MA_MEMORY_KEY: &str = "managed_agents_memory";

/// What one call may set of its own limits instead of its session's (see
/// [`Sandbox::sh_call`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallLimits {
    /// The call's wall-clock limit.
    pub timeout: Option<std::time::Duration>,
    /// The call's CPU budget, in fuel units (see [`Settings::cpu_budget`]).
    pub cpu_budget: Option<u64>,
}

/// A check run before a call's changes commit (see [`Sandbox::call_checked`]).
pub type PreCommit<'a> = Box<dyn FnOnce(&mut Txn, &ToolOutput) -> Result<(), String> + Send + 'a>;

/// A session's own settings, fixed at creation and inherited by its forks.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Settings {
    /// Environment of the session's shell and components (the host's is never passed).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// The tool family calls use when the caller does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    /// Wall-clock limit of a call (also bash's default timeout), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Memory limit of a call, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<usize>,
    /// CPU budget of a call, in wasmtime fuel units (about one per WebAssembly instruction
    /// executed, across every program the call runs). A call that uses more is stopped and
    /// rolled back; the fuel each call used is in its event. Absent: no budget, and calls
    /// run unmetered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub cpu_budget: Option<u64>,
    /// The network policy (no rule: no network).
    #[serde(default, skip_serializing_if = "is_default_net")]
    pub net: crate::net::NetPolicy,
    /// Deterministic calls: clocks, random numbers and network replies come from values
    /// each call's event records (with the call's environment), so `burrow replay` runs the
    /// session's calls again with the same results (see [`crate::determinism`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deterministic: bool,
}

fn is_default_net(p: &crate::net::NetPolicy) -> bool {
    *p == crate::net::NetPolicy::default()
}

/// What `burrow session ls` shows of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionInfo {
    pub id: String,
    pub name: Option<String>,
    /// The session it was forked from.
    pub parent: Option<String>,
    pub version: i64,
    /// Nanoseconds since the Unix epoch.
    pub created: i64,
    pub last_active: Option<i64>,
    /// The same two times in RFC 3339 (UTC, milliseconds): `2026-12-01T01:30:39.123Z`.
    pub created_at: String,
    pub last_active_at: Option<String>,
    /// Bytes of files and number of entries in the workspace.
    pub bytes: u64,
    pub entries: u64,
    /// Versions the session committed itself (a fork's shared history is its parent's).
    pub versions: u64,
    pub settings: Settings,
}

/// A directory of a session's tree at one version, as the HTTP API's `tree` route shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Tree {
    pub version: i64,
    /// The directory as the guest sees it (`/workspace/src`).
    pub path: String,
    pub entries: Vec<TreeEntry>,
}

/// One entry of a [`Tree`].
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TreeEntry {
    pub name: String,
    /// `file`, `dir` or `symlink`.
    pub kind: &'static str,
    /// Bytes (a symlink: its target's length).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modification time, RFC 3339.
    pub mtime_at: String,
}

/// How an entry's kind is named in JSON: `file`, `dir` or `symlink`.
pub fn kind_name(kind: burrow_store::Kind) -> &'static str {
    match kind {
        burrow_store::Kind::Dir => "dir",
        burrow_store::Kind::Symlink => "symlink",
        _ => "file",
    }
}

/// A caller's workspace path (absolute under /workspace or relative to it) as the store's.
fn workspace_rel(path: &str) -> Result<String> {
    crate::tools::workspace_path(crate::tools::WORKSPACE, path)
        .ok_or_else(|| SessionError::Invalid(format!("path '{path}' is outside the workspace")))
}

/// Settings of a [`Sandbox`].
#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {
    /// Where compiled components are cached (default: compile in memory per process).
    pub cache_dir: Option<PathBuf>,
    /// Limits of each tool call.
    pub limits: Limits,
    /// Use wasmtime's pooling allocator. It reserves its slots up front (about 3 ms when the
    /// engine is made) and then saves a few microseconds per call: worth it for a long-lived
    /// server, not for a one-shot CLI process or a short-lived embedder. Default off.
    pub pooling: bool,
    /// A host directory of shared programs, mounted read-only at [`TOOL_LAYER`] in every shell
    /// call, where the shell's PATH finds them (the CLI reads it from `BURROW_TOOLS`).
    pub tool_layer: Option<PathBuf>,
    /// The toolchains directory ([`crate::toolchain`]), mounted read-only at
    /// [`crate::paths::TOOLCHAINS_GUEST_DIR`] in every shell call while it exists (the CLI uses
    /// [`crate::paths::default_toolchains_dir`]).
    pub toolchains: Option<PathBuf>,
    /// The network policy of sessions created without one (`--allow-net` / `--secret` on
    /// `burrow serve`, `mcp`, `worker`, `agent`). Default: none (no network).
    pub default_net: crate::net::NetPolicy,
    /// Compile the built-in tools for this CPU instead of using their portable precompiled
    /// code (see [`crate::EngineConfig::compile_builtins`]; the CLI reads
    /// `BURROW_COMPILE_BUILTINS=1`).
    pub compile_builtins: bool,
    /// Where the store's objects live (`--objects`): `None` for wherever the store recorded
    /// (its catalog for a new store), or `postgres`, `sqlite`, `s3://...`, `gs://...`,
    /// `az://...`, `file:///...` (see [`burrow_store::Location`]).
    pub objects: Option<String>,
    /// Options for the object storage client, credentials allowed (for embedders that hold
    /// them elsewhere than the environment; see [`burrow_store::Location::object_options`]).
    pub object_options: Vec<(String, String)>,
    /// A local object cache (`--cache-dir`, `--cache-size`): its directory and size in bytes.
    pub object_cache: Option<(PathBuf, u64)>,
    /// How hard a tool call's commit waits for the disk (`--durability`; see
    /// [`burrow_store::Durability`]).
    pub durability: burrow_store::Durability,
}

/// Where the shared tool layer appears inside the sandbox (on the shell's default PATH).
pub const TOOL_LAYER: &str = "/opt/burrow/bin";

pub use crate::paths::{default_cache_dir, default_store_path};

/// `BURROW_COMPILE_BUILTINS=1`: see [`SandboxConfig::compile_builtins`].
pub fn compile_builtins_from_env() -> bool {
    std::env::var("BURROW_COMPILE_BUILTINS").as_deref() == Ok("1")
}

impl SandboxConfig {
    /// The configuration the `burrow` CLI runs with, from its environment: the component
    /// cache ([`default_cache_dir`]), the network limits (`BURROW_NET_*`) and the tool layer
    /// (`BURROW_TOOLS`). Embedders that want the CLI's behaviour use this.
    pub fn from_env() -> std::result::Result<SandboxConfig, String> {
        Ok(SandboxConfig {
            cache_dir: Some(default_cache_dir()),
            limits: Limits {
                net: crate::net::NetLimits::from_env()?,
                egress: Arc::new(crate::net::Operator::from_env()?),
                ..Limits::default()
            },
            pooling: false,
            tool_layer: std::env::var_os("BURROW_TOOLS").map(PathBuf::from),
            toolchains: Some(crate::paths::default_toolchains_dir()),
            default_net: Default::default(),
            compile_builtins: compile_builtins_from_env(),
            objects: None,
            object_options: Vec::new(),
            object_cache: None,
            durability: Default::default(),
        })
    }
}

/// An open store handing out sessions.
pub struct Sandbox {
    store: Store,
    config: SandboxConfig,
    toolbox: OnceLock<Arc<Toolbox>>,
}

/// A fresh random session id (16 hex digits).
pub fn new_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut b = blake3::Hasher::new();
    b.update(&h.finish().to_le_bytes());
    b.update(&nanos.to_le_bytes());
    b.finalize().to_hex()[..16].to_string()
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.chars().all(|c| c.is_ascii_hexdigit());
    if !ok {
        return Err(SessionError::Invalid(format!(
            "invalid session name '{name}': use 1-64 letters, digits, '-', '_' or '.', not all hex digits (those look like ids)"
        )));
    }
    Ok(())
}

pub use burrow_store::is_postgres_url;

/// A CPU budget of 0 would refuse every call: refused itself.
fn check_budget(budget: Option<u64>) -> Result<()> {
    if budget == Some(0) {
        return Err(SessionError::Invalid(
            "the CPU budget must be at least 1 fuel unit".into(),
        ));
    }
    Ok(())
}

/// What a call's event records of its CPU budget: the budget and the fuel the call used
/// (nothing for a call without a budget, which runs unmetered).
fn record_fuel(data: &mut Value, limits: &Limits) {
    if let Some(cpu) = &limits.cpu {
        data["cpu_budget"] = json!(cpu.budget());
        data["fuel"] = json!(cpu.used());
    }
}

impl Sandbox {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Sandbox> {
        Sandbox::open_with(path, SandboxConfig::default())
    }

    /// Opens the store at `path`: an SQLite file (created if needed, with its directory), or,
    /// when `path` is a `postgres://` (or `postgresql://`) URL, a PostgreSQL database holding
    /// the catalog and the objects.
    pub fn open_with(path: impl AsRef<Path>, config: SandboxConfig) -> Result<Sandbox> {
        let path = path.as_ref();
        let catalog = path
            .to_str()
            .ok_or_else(|| {
                SessionError::Invalid(format!(
                    "the store path {} is not valid UTF-8",
                    path.display()
                ))
            })?
            .to_string();
        if !is_postgres_url(&catalog)
            && let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
            && !parent.exists()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                SessionError::Invalid(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        let location = burrow_store::Location {
            catalog,
            objects: config.objects.clone(),
            object_options: config.object_options.clone(),
            cache: config.object_cache.clone(),
        };
        Ok(Sandbox {
            store: Store::connect(
                &location,
                burrow_store::Options {
                    durability: config.durability,
                    // Links with absolute targets resolve in the session's root, as the
                    // guest sees it.
                    absolute_links: Some(burrow_store::AbsoluteLinks(Arc::new(|p: &str| {
                        crate::runtime::wasi_fs::link_store_path(p)
                    }))),
                    ..Default::default()
                },
            )?,
            config,
            toolbox: OnceLock::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The tool components, loaded on first use (no engine is made for commands that do not
    /// run anything).
    pub fn toolbox(&self) -> Result<Arc<Toolbox>> {
        if let Some(t) = self.toolbox.get() {
            return Ok(t.clone());
        }
        let engine = Arc::new(Engine::new(EngineConfig {
            cache_dir: self.config.cache_dir.clone(),
            no_pooling: !self.config.pooling,
            compile_builtins: self.config.compile_builtins,
            metered: false,
        })?);
        let mut tb = Toolbox::new(engine)?;
        if let Some(dir) = &self.config.tool_layer {
            tb.set_tool_layer(crate::wasi_fs::Mount {
                host: dir.clone(),
                guest: TOOL_LAYER.to_string(),
            });
        }
        if let Some(dir) = &self.config.toolchains {
            tb.set_toolchains(crate::wasi_fs::Mount {
                host: dir.clone(),
                guest: crate::paths::TOOLCHAINS_GUEST_DIR.to_string(),
            });
        }
        let tb = Arc::new(tb);
        Ok(self.toolbox.get_or_init(|| tb).clone())
    }

    /// Creates an empty session.
    pub fn create(&self, name: Option<&str>) -> Result<SessionInfo> {
        self.create_with(name, &Settings::default())
    }

    /// Creates an empty session with its own settings.
    pub fn create_with(&self, name: Option<&str>, settings: &Settings) -> Result<SessionInfo> {
        // The network policy is checked (and a server's default applied) before anything is
        // created.
        let mut settings = settings.clone();
        if settings.net == crate::net::NetPolicy::default() {
            settings.net = self.config.default_net.clone();
        }
        settings
            .net
            .normalise()
            .map_err(|e| SessionError::Invalid(e.to_string()))?;
        let settings = &settings;
        check_budget(settings.cpu_budget)?;
        if let Some(n) = name {
            check_name(n)?;
            if self.store.find_by_meta("name", n)?.is_some() {
                return Err(SessionError::NameTaken(n.to_string()));
            }
        }
        let id = new_id();
        self.store.create_workspace(&id)?;
        if let Some(n) = name
            && let Err(e) = self.store.set_meta(&id, "name", Some(n))
        {
            let _ = self.store.delete_workspace(&id);
            return Err(match e {
                burrow_store::Error::WorkspaceExists(_) => SessionError::NameTaken(n.to_string()),
                e => e.into(),
            });
        }
        if *settings != Settings::default() {
            let text = serde_json::to_string(settings)
                .map_err(|e| SessionError::Invalid(e.to_string()))?;
            self.store.set_meta(&id, "settings", Some(&text))?;
        }
        self.store.append_event(
            &id,
            "created",
            None,
            None,
            &json!({ "name": name, "settings": settings }).to_string(),
        )?;
        self.info(&id)
    }

    /// Replaces a session's network policy, recording the change (rules and secret names,
    /// never values) as a `net_policy` event. Forks made later inherit it.
    pub fn set_net(&self, id: &str, mut net: crate::net::NetPolicy) -> Result<()> {
        net.normalise()
            .map_err(|e| SessionError::Invalid(e.to_string()))?;
        let mut settings = self.settings(id)?;
        if settings.net == net {
            return Ok(());
        }
        let before = std::mem::replace(&mut settings.net, net);
        let text =
            serde_json::to_string(&settings).map_err(|e| SessionError::Invalid(e.to_string()))?;
        self.store.set_meta(id, "settings", Some(&text))?;
        self.store.append_event(
            id,
            "net_policy",
            None,
            None,
            &json!({ "before": before, "after": settings.net }).to_string(),
        )?;
        Ok(())
    }

    /// Sets the policy of sessions created without one from now on.
    pub fn set_default_net(&mut self, net: crate::net::NetPolicy) {
        self.config.default_net = net;
    }

    /// Sets the CPU budget (fuel units) of every call in a session that sets none (each
    /// call gets a meter of its own); None: such calls run unmetered. It is
    /// [`SandboxConfig::limits`]' `cpu`.
    pub fn set_default_cpu_budget(&mut self, budget: Option<u64>) {
        self.config.limits.cpu = budget.map(crate::limits::CpuBudget::new);
    }

    /// A session's settings.
    pub fn settings(&self, id: &str) -> Result<Settings> {
        Ok(settings_in(&self.store.meta(id)?))
    }

    /// The limits and environment of a call in a session with `settings`.
    fn call_env(&self, settings: &Settings) -> (Limits, Vec<(String, String)>) {
        let mut limits = self.config.limits.clone();
        if let Some(t) = settings.timeout_ms {
            limits.timeout = std::time::Duration::from_millis(t);
        }
        if let Some(m) = settings.memory_mib {
            limits.memory = m << 20;
        }
        // A meter of the call's own: the session's budget, else the sandbox's.
        limits.cpu = match settings.cpu_budget {
            Some(b) => Some(crate::limits::CpuBudget::new(b)),
            None => limits.cpu.as_ref().map(crate::limits::CpuBudget::fresh),
        };
        limits.network = std::sync::Arc::new(settings.net.clone());
        // A secret's placeholder, never its value: the egress layer swaps it in for the
        // secret's hosts.
        let env = settings
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(
                settings
                    .net
                    .secrets
                    .iter()
                    .map(|s| (s.name.clone(), s.placeholder.clone())),
            )
            .collect();
        (limits, env)
    }

    /// Creates a session whose workspace starts as a copy of a host directory or tar file.
    pub fn create_from(
        &self,
        name: Option<&str>,
        source: &Path,
        progress: &mut dyn FnMut(&burrow_store::ImportStats),
    ) -> Result<SessionInfo> {
        self.create_from_with(name, source, &Settings::default(), progress, &mut |_| {})
    }

    /// [`Sandbox::create_from`] with the session's own settings; `warn` hears about every
    /// member of a tar file changed or skipped on the way in, in GNU tar's words (see
    /// `burrow_store::Store::import_tar_warning`).
    pub fn create_from_with(
        &self,
        name: Option<&str>,
        source: &Path,
        settings: &Settings,
        progress: &mut dyn FnMut(&burrow_store::ImportStats),
        warn: &mut dyn FnMut(String),
    ) -> Result<SessionInfo> {
        let info = self.create_with(name, settings)?;
        let r = if source.is_dir() {
            self.store.import_dir(&info.id, source, "", progress)
        } else {
            match std::fs::File::open(source) {
                Ok(f) => self.store.import_tar_warning(
                    &info.id,
                    std::io::BufReader::new(f),
                    "",
                    progress,
                    warn,
                ),
                Err(e) => Err(e.into()),
            }
        };
        match r {
            Err(e) => {
                let _ = self.store.delete_workspace(&info.id);
                Err(e.into())
            }
            Ok((_, stats)) => {
                if stats.skipped > 0 && source.is_dir() {
                    warn(format!(
                        "skipped {} entries of {}: special files (devices, fifos, sockets) and \
                         names that are not UTF-8",
                        stats.skipped,
                        source.display()
                    ));
                } else if stats.skipped > 0 {
                    warn(format!(
                        "skipped {} member(s) of {} that cannot be imported (see above)",
                        stats.skipped,
                        source.display()
                    ));
                }
                self.info(&info.id)
            }
        }
    }

    /// Makes sure a session with exactly this id exists (for `--workspace` style addressing).
    pub fn ensure(&self, id: &str) -> Result<String> {
        match self.store.workspace(id) {
            Ok(_) => Ok(id.to_string()),
            Err(burrow_store::Error::NoWorkspace(_)) => {
                self.store.create_workspace(id)?;
                self.store.append_event(id, "created", None, None, "{}")?;
                Ok(id.to_string())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The session id that `key` (an id, a unique id prefix, or a name) designates.
    pub fn resolve(&self, key: &str) -> Result<String> {
        if key.is_empty() {
            return Err(SessionError::Unknown(key.to_string()));
        }
        if self.store.workspace(key).is_ok() {
            return Ok(key.to_string());
        }
        if let Some(id) = self.store.find_by_meta("name", key)? {
            return Ok(id);
        }
        let matches: Vec<String> = self
            .store
            .workspaces()?
            .into_iter()
            .map(|w| w.name)
            .filter(|n| n.starts_with(key))
            .collect();
        match matches.len() {
            0 => Err(SessionError::Unknown(key.to_string())),
            1 => Ok(matches.into_iter().next().unwrap_or_default()),
            _ => Err(SessionError::Ambiguous {
                key: key.to_string(),
                candidates: matches,
            }),
        }
    }

    /// A session's summary.
    pub fn info(&self, id: &str) -> Result<SessionInfo> {
        let versions = self.store.version_count(id)?;
        self.info_counted(id, versions)
    }

    fn info_counted(&self, id: &str, versions: u64) -> Result<SessionInfo> {
        let ws = self.store.workspace(id)?;
        let meta = self.store.meta(id)?;
        let v = self.store.version(ws.version)?;
        Ok(SessionInfo {
            id: ws.name,
            name: meta.get("name").cloned(),
            parent: meta.get("parent").cloned(),
            version: ws.version.0,
            created: ws.created,
            last_active: ws.last_active,
            created_at: rfc3339(ws.created),
            last_active_at: ws.last_active.map(rfc3339),
            bytes: v.bytes,
            entries: v.entries,
            versions,
            settings: meta
                .get("settings")
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default(),
        })
    }

    /// Every session, oldest first.
    pub fn list(&self) -> Result<Vec<SessionInfo>> {
        let counts = self.store.version_counts()?;
        let mut out = Vec::new();
        for w in self.store.workspaces()? {
            let versions = counts.get(&w.name).copied().unwrap_or(0);
            out.push(self.info_counted(&w.name, versions)?);
        }
        out.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Forks a session `n` times, in O(1) each; returns the new ids.
    pub fn fork(&self, id: &str, n: usize) -> Result<Vec<String>> {
        if n == 0 || n > 10_000 {
            return Err(SessionError::Invalid("fork count must be 1..=10000".into()));
        }
        let ids: Vec<String> = (0..n).map(|_| new_id()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let v = self.store.fork(id, &refs)?;
        let meta = self.store.meta(id)?;
        for f in &ids {
            self.store.set_meta(f, "parent", Some(id))?;
            self.store
                .set_meta(f, FORKED_AT_KEY, Some(&v.0.to_string()))?;
            // Forks inherit settings, the state of the families that keep it for the
            // files (Claude Code's reads), and what else describes the files they share.
            let families = crate::tools::FAMILIES
                .iter()
                .filter_map(|f| f.state())
                .filter(|k| k.forked)
                .map(|k| k.key);
            for key in ["settings"]
                .into_iter()
                .chain(families)
                .chain(FORKED_KEYS.iter().copied())
            {
                if let Some(v) = meta.get(key) {
                    self.store.set_meta(f, key, Some(v))?;
                }
            }
            self.store.append_event(
                f,
                "forked",
                Some(v),
                Some(v),
                &json!({ "from": id }).to_string(),
            )?;
        }
        Ok(ids)
    }

    /// Deletes a session (its unique data is reclaimed by the next `gc`).
    pub fn delete(&self, id: &str) -> Result<()> {
        self.store.delete_workspace(id)?;
        self.store.append_event(id, "deleted", None, None, "{}")?;
        Ok(())
    }

    /// Runs one tool call as one transaction and one version, with its event row.
    pub fn call(&self, id: &str, family: Family, tool: &str, input: &Value) -> Result<ToolOutput> {
        self.call_in(id, family, tool, input, None)
    }

    /// [`Sandbox::call`] whose shell tools use the session's named shell `shell` (None: its
    /// own): each Managed Agents subagent thread works in a shell of its own, with its own
    /// working directory and variables, over the session's one filesystem.
    pub fn call_in(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: &Value,
        shell: Option<&str>,
    ) -> Result<ToolOutput> {
        self.call_checked(id, family, tool, input, shell, None)
    }

    /// [`Sandbox::call_in`] with a check that runs before a call that changed files commits:
    /// given the transaction and the call's output, an `Err(text)` rolls the call back and
    /// makes `text` its (error) result. The worker saves a write to a memory store this way:
    /// the store takes it first, or the file is not changed.
    pub fn call_checked(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: &Value,
        shell: Option<&str>,
        check: Option<PreCommit<'_>>,
    ) -> Result<ToolOutput> {
        let name = shell.map(crate::tools::shell_name);
        self.call_with(id, family, tool, input, name.as_deref(), check, None)
    }

    /// [`Sandbox::call_checked`] in the shell named `shell` (already a shell's name) and, to
    /// replay a deterministic call, with its recorded determinism.
    #[allow(clippy::too_many_arguments)]
    fn call_with(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: &Value,
        shell: Option<&str>,
        check: Option<PreCommit<'_>>,
        det: Option<Determinism>,
    ) -> Result<ToolOutput> {
        let (output, event) =
            on_deep_stack(|| self.call_here(id, family, tool, input, shell, check, det))?;
        // The event of a call that changed nothing is sent from here, once the call's
        // thread has handed the output back: on a networked catalog the server starts on it
        // at once, and a wake-up of this thread then competes with it for the cores.
        if let Some(e) = event {
            self.store
                .record_event(id, "tool", Some(e.version), Some(e.version), &e.data)?;
        }
        Ok(output)
    }

    #[allow(clippy::too_many_arguments)]
    fn call_here(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: &Value,
        shell: Option<&str>,
        check: Option<PreCommit<'_>>,
        det: Option<Determinism>,
    ) -> Result<(ToolOutput, Option<Unchanged>)> {
        let tb = self.toolbox()?;
        let started = Instant::now();
        let start_ns = now_ns();
        // The head and the metadata (settings, the bash flag, Claude Code's file state)
        // in one read: one round trip on a networked catalog.
        let (mut txn, meta) = self.store.begin_with_meta(id)?;
        let base = txn.base();
        let settings = settings_in(&meta);
        let (mut limits, mut env) = self.call_env(&settings);
        replay::deterministic(&settings, det, &mut txn, &mut limits, &mut env);
        let adapter = family.adapter();
        let key = adapter.state().map(|k| k.key);
        let before = key.and_then(|k| meta.get(k).cloned());
        let mut state = before.clone();
        let roots: Vec<crate::tools::ToolRoot> = meta
            .get(TOOL_ROOTS_KEY)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let cx = crate::tools::Cx {
            tb: &tb,
            txn,
            limits: &limits,
            env: &env,
            timeout: settings_in(&meta)
                .timeout_ms
                .map(std::time::Duration::from_millis),
            shell,
            roots: &roots,
        };
        let mut result = adapter.call(cx, tool, input, &mut state);
        if let (Some(check), Ok(outcome)) = (check, result.as_mut())
            && !outcome.output.is_error
            && let Some(txn) = outcome.txn.as_mut()
            && txn.is_dirty()
            && let Err(text) = check(txn, &outcome.output)
        {
            outcome.txn = None;
            outcome.output = ToolOutput::error(text);
        }
        let record = |output: &ToolOutput, error: Option<String>| {
            let mut data = json!({
                "tool": tool,
                "family": family,
                "input": input,
                "output": output,
                "is_error": output.is_error,
                "error": error,
                "started": start_ns,
                "duration_us": started.elapsed().as_micros() as u64,
            });
            if let Some(s) = shell {
                data["shell"] = json!(s);
            }
            record_fuel(&mut data, &limits);
            replay::record_determinism(&mut data, &limits);
            data.to_string()
        };
        match result {
            Ok(outcome) => {
                // The family's state, when the call changed it.
                if let Some(k) = key
                    && state != before
                {
                    self.store.set_meta(id, k, state.as_deref())?;
                }
                let data = record(&outcome.output, None);
                let event = match outcome.txn {
                    Some(mut txn) if txn.is_dirty() => {
                        txn.set_message(tool.to_string());
                        // Calls on one session may run at once (other processes, the
                        // server's threads): a call that finds the head moved merges onto it.
                        txn.merge_if_moved();
                        txn.commit_recording("tool", &data)?;
                        None
                    }
                    // Nothing changed: no version; its queued events (if any) now, the
                    // call's own after the handoff.
                    Some(txn) => Some(Unchanged {
                        version: txn.commit()?.version,
                        data,
                    }),
                    // Rolled back (a timed-out command): the event records it, nothing else.
                    None => Some(Unchanged {
                        version: base,
                        data,
                    }),
                };
                Ok((outcome.output, event))
            }
            Err(e) => {
                // The transaction was dropped: nothing of the call is in the workspace.
                let output = ToolOutput::error(format!("{tool}: {e}"));
                let data = record(&output, Some(e.to_string()));
                let event = Unchanged {
                    version: base,
                    data,
                };
                Ok((output, Some(event)))
            }
        }
    }

    /// Ends the session's named shell `shell` of `family` (a Managed Agents subagent thread
    /// that terminated): the family's later calls in it are refused until a restart, as the
    /// reference's are. Only the family's state changes: no version.
    pub fn close_shell(&self, id: &str, family: Family, shell: &str) -> Result<()> {
        let adapter = family.adapter();
        let Some(key) = adapter.state().map(|k| k.key) else {
            return Ok(());
        };
        let name = crate::tools::shell_name(shell);
        let before = self.store.meta(id)?.get(key).cloned();
        let mut state = before.clone();
        adapter.close_shell(&name, &mut state);
        if state != before {
            self.store.set_meta(id, key, state.as_deref())?;
        }
        Ok(())
    }

    /// Runs a component (or wasip1 module) in the session, as one transaction. `opts`
    /// carries the guest's arguments, environment, mounts and limits.
    pub fn run(&self, id: &str, wasm: &[u8], opts: &RunOptions) -> Result<RunResult> {
        on_deep_stack(|| self.run_here(id, wasm, opts))
    }

    fn run_here(&self, id: &str, wasm: &[u8], opts: &RunOptions) -> Result<RunResult> {
        check_budget(
            opts.limits
                .cpu
                .as_ref()
                .map(crate::limits::CpuBudget::budget),
        )?;
        let tb = self.toolbox()?;
        let name = opts.program_name.clone();
        let mut txn = self.store.begin(id)?;
        // The session's environment first; the caller's own variables win.
        let settings = self.settings(id)?;
        let (mut limits, mut env) = self.call_env(&settings);
        env.extend(opts.env.iter().cloned());
        replay::deterministic(&settings, None, &mut txn, &mut limits, &mut env);
        let opts = &RunOptions {
            env,
            limits: Limits {
                network: limits.network,
                net: limits.net,
                // The caller's budget on a meter of this call's own.
                cpu: opts
                    .limits
                    .cpu
                    .as_ref()
                    .map(crate::limits::CpuBudget::fresh),
                det: limits.det,
                ..opts.limits.clone()
            },
            ..opts.clone()
        };
        let engine = tb.engine().for_limits(&opts.limits)?;
        let program = engine.load(wasm)?;
        let started = Instant::now();
        let base = txn.base();
        match engine.run_txn(&program, txn, opts) {
            Ok((mut txn, report)) => {
                txn.set_message(format!("run {name}"));
                let mut data = json!({
                    "tool": "run", "program": name, "args": opts.args,
                    "exit_code": report.exit_code, "duration_us": started.elapsed().as_micros() as u64,
                });
                record_fuel(&mut data, &opts.limits);
                replay::record_determinism(&mut data, &opts.limits);
                txn.merge_if_moved();
                let c = txn.commit_recording("run", &data.to_string())?;
                Ok(RunResult {
                    report,
                    version_before: base,
                    version_after: c.version,
                })
            }
            Err(e) => {
                let mut data = json!({ "tool": "run", "program": name, "error": e.to_string() });
                record_fuel(&mut data, &opts.limits);
                self.store
                    .record_event(id, "run", Some(base), Some(base), &data.to_string())?;
                Err(e.into())
            }
        }
    }

    /// Runs a shell command in the session (as one transaction), with stdout and stderr kept
    /// apart and the exit code, as a terminal shell gives them.
    pub fn sh(&self, id: &str, command: &str) -> Result<RunResult> {
        self.sh_with(id, command, &[], "sh")
    }

    /// [`Sandbox::sh`] with `stdin` on the command's standard input, recorded in the event
    /// log as the tool `tool` (a worker's custom tool, for example).
    pub fn sh_with(&self, id: &str, command: &str, stdin: &[u8], tool: &str) -> Result<RunResult> {
        self.sh_limited(id, command, stdin, tool, None)
    }

    /// [`Sandbox::sh_with`] with the call's wall-clock limit set to `timeout` instead of the
    /// session's (a timed-out command leaves the session unchanged).
    pub fn sh_limited(
        &self,
        id: &str,
        command: &str,
        stdin: &[u8],
        tool: &str,
        timeout: Option<std::time::Duration>,
    ) -> Result<RunResult> {
        let limits = CallLimits {
            timeout,
            ..Default::default()
        };
        self.sh_call(id, command, stdin, tool, limits)
    }

    /// [`Sandbox::sh_with`] with the call's own limits where `limits` sets them: a
    /// wall-clock limit, a CPU budget (a call stopped by either leaves the session
    /// unchanged).
    pub fn sh_call(
        &self,
        id: &str,
        command: &str,
        stdin: &[u8],
        tool: &str,
        limits: CallLimits,
    ) -> Result<RunResult> {
        check_budget(limits.cpu_budget)?;
        on_deep_stack(|| self.sh_here(id, command, stdin, tool, limits, None))
    }

    fn sh_here(
        &self,
        id: &str,
        command: &str,
        stdin: &[u8],
        tool: &str,
        call: CallLimits,
        det: Option<Determinism>,
    ) -> Result<RunResult> {
        let tb = self.toolbox()?;
        let started = Instant::now();
        let mut txn = self.store.begin(id)?;
        let base = txn.base();
        let settings = self.settings(id)?;
        let (mut limits, mut env) = self.call_env(&settings);
        replay::deterministic(&settings, det, &mut txn, &mut limits, &mut env);
        if let Some(t) = call.timeout {
            limits.timeout = t;
        }
        if let Some(b) = call.cpu_budget {
            limits.cpu = Some(crate::limits::CpuBudget::new(b));
        }
        match tb.shell_input(txn, command, false, &limits, &env, stdin.to_vec()) {
            Ok((mut txn, report)) => {
                txn.set_message(tool.to_string());
                let mut data = json!({
                    "tool": tool, "input": { "command": command }, "exit_code": report.exit_code,
                    "is_error": report.exit_code != 0,
                    "duration_us": started.elapsed().as_micros() as u64,
                });
                record_fuel(&mut data, &limits);
                if limits.det.is_some() {
                    // What a replay compares (and runs the command with).
                    replay::record_sh(&mut data, stdin, &report);
                }
                replay::record_determinism(&mut data, &limits);
                txn.merge_if_moved();
                let c = txn.commit_recording("tool", &data.to_string())?;
                Ok(RunResult {
                    report,
                    version_before: base,
                    version_after: c.version,
                })
            }
            Err(e) => {
                let mut data = json!({ "tool": tool, "input": { "command": command }, "error": e.to_string(), "is_error": true });
                record_fuel(&mut data, &limits);
                if limits.det.is_some() {
                    replay::record_sh_stdin(&mut data, stdin);
                }
                replay::record_determinism(&mut data, &limits);
                self.store
                    .record_event(id, "tool", Some(base), Some(base), &data.to_string())?;
                Err(e.into())
            }
        }
    }

    /// The session's versions, newest first.
    pub fn history(&self, id: &str, limit: usize) -> Result<Vec<Version>> {
        Ok(self.store.history(id, limit)?)
    }

    /// The session's events, oldest first.
    pub fn log(&self, id: &str, after: i64, limit: usize) -> Result<Vec<burrow_store::Event>> {
        Ok(self.store.events(&EventFilter {
            workspace: Some(id.to_string()),
            after,
            kind: None,
            limit,
        })?)
    }

    /// A version designated by a session key (its head) or a number (`42` or `v42`).
    pub fn version_of(&self, key: &str) -> Result<VersionId> {
        let num = key.strip_prefix('v').unwrap_or(key);
        if let Ok(n) = num.parse::<i64>()
            && self.store.version(VersionId(n)).is_ok()
        {
            return Ok(VersionId(n));
        }
        if let Some(v) = self
            .store
            .labels()?
            .into_iter()
            .find(|(l, _)| l == key)
            .map(|(_, v)| v)
        {
            return Ok(v);
        }
        let id = self.resolve(key)?;
        Ok(self.store.workspace(&id)?.version)
    }

    /// Paths changed between two sessions or versions.
    pub fn diff(&self, a: &str, b: &str) -> Result<(VersionId, VersionId, Vec<Change>)> {
        let va = self.version_of(a)?;
        let vb = self.version_of(b)?;
        Ok((va, vb, self.store.diff(va, vb)?))
    }

    /// [`Sandbox::diff`] including the system area (`/tmp`, `/home/agent`, shell state).
    pub fn diff_all(&self, a: &str, b: &str) -> Result<(VersionId, VersionId, Vec<Change>)> {
        let va = self.version_of(a)?;
        let vb = self.version_of(b)?;
        Ok((va, vb, self.store.diff_all(va, vb)?))
    }

    /// Moves the session to an old version (recorded as a new version; nothing is lost).
    pub fn checkout(&self, id: &str, version: VersionId) -> Result<VersionId> {
        let before = self.store.workspace(id)?.version;
        let v = self.store.checkout(id, version)?;
        self.store.append_event(
            id,
            "checked_out",
            Some(before),
            Some(v),
            &json!({ "version": version.0 }).to_string(),
        )?;
        Ok(v)
    }

    /// Goes back one tool call: the tree returns to what it was before the last change
    /// (repeated undos keep going back).
    pub fn undo(&self, id: &str) -> Result<VersionId> {
        let head = self.store.workspace(id)?.version;
        // Follow earlier undos so that undo twice goes back two calls, not forth again.
        let mut effective = head;
        loop {
            let v = self.store.version(effective)?;
            match v
                .message
                .strip_prefix("undo to ")
                .and_then(|n| n.parse::<i64>().ok())
            {
                Some(n) => effective = VersionId(n),
                None => break,
            }
        }
        let v = self.store.version(effective)?;
        let Some(target) = v.parent else {
            return Err(SessionError::Invalid(
                "nothing to undo: this is the session's first version".into(),
            ));
        };
        let after = self
            .store
            .checkout_as(id, target, &format!("undo to {}", target.0))?;
        self.store.append_event(
            id,
            "undo",
            Some(head),
            Some(after),
            &json!({ "to": target.0 }).to_string(),
        )?;
        Ok(target)
    }

    /// Labels the session's current version.
    pub fn label(&self, id: &str, label: &str) -> Result<VersionId> {
        let v = self.store.workspace(id)?.version;
        self.store.label(label, v)?;
        self.store.append_event(
            id,
            "labelled",
            Some(v),
            Some(v),
            &json!({ "label": label }).to_string(),
        )?;
        Ok(v)
    }

    /// The bytes of a file of the session (path absolute under /workspace or relative to it).
    pub fn cat(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        self.cat_at(id, None, path)
    }

    /// [`Sandbox::cat`] at a version (a number, `v42`, a label; None: the session's head).
    pub fn cat_at(&self, id: &str, version: Option<&str>, path: &str) -> Result<Vec<u8>> {
        let rel = workspace_rel(path)?;
        let (_, mut view) = self.view_at(id, version)?;
        Ok(view.read_file(&rel)?)
    }

    /// The version a `version` key designates for session `id` (None: its head), and a
    /// read-only view of that tree.
    fn view_at(&self, id: &str, version: Option<&str>) -> Result<(VersionId, burrow_store::Txn)> {
        let v = self.version_at(id, version)?;
        Ok((v, self.store.view(v)?))
    }

    /// The version a `version` key designates (None: session `id`'s head).
    fn version_at(&self, id: &str, version: Option<&str>) -> Result<VersionId> {
        match version {
            Some(key) => self.version_of(key),
            None => Ok(self.store.workspace(id)?.version),
        }
    }

    /// The entries of a workspace directory at a version (None: the head), sorted by name.
    pub fn tree(&self, id: &str, version: Option<&str>, path: &str) -> Result<Tree> {
        let rel = workspace_rel(path)?;
        let (v, mut view) = self.view_at(id, version)?;
        let dir = view.resolve(burrow_store::ROOT_INO, &rel, true)?;
        let mut entries = Vec::new();
        for e in view.readdir(dir)? {
            // The store's system area (/tmp, /home/agent, shell state) is not the project.
            if dir == burrow_store::ROOT_INO && e.name == burrow_store::SYSTEM_DIR {
                continue;
            }
            let st = view.stat(e.ino)?;
            entries.push(TreeEntry {
                name: e.name,
                kind: kind_name(e.kind),
                size: st.size,
                mode: st.mode,
                mtime_at: rfc3339(st.mtime),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let shown = if rel == "." {
            crate::tools::WORKSPACE.to_string()
        } else {
            format!("{}/{rel}", crate::tools::WORKSPACE)
        };
        Ok(Tree {
            version: v.0,
            path: shown,
            entries,
        })
    }

    /// Writes one file (parents created) as one version with an `upload` event.
    pub fn put_file(&self, id: &str, path: &str, data: &[u8]) -> Result<VersionId> {
        let rel = crate::tools::workspace_path(crate::tools::WORKSPACE, path)
            .filter(|r| r != ".")
            .ok_or_else(|| {
                SessionError::Invalid(format!("path '{path}' is not a file path in the workspace"))
            })?;
        let mut txn = self.store.begin(id)?;
        if let Some((parent, _)) = rel.rsplit_once('/') {
            txn.mkdir_all(parent)?;
        }
        txn.write_file(&rel, data)?;
        txn.set_message(format!("upload {rel}"));
        let data = json!({ "path": rel, "bytes": data.len() }).to_string();
        Ok(txn.commit_with_event("upload", &data)?.0.version)
    }

    /// Writes the session's current tree as a tar stream.
    pub fn export_tar(
        &self,
        id: &str,
        out: impl std::io::Write,
    ) -> Result<burrow_store::ImportStats> {
        self.export_tar_at(id, None, out)
    }

    /// [`Sandbox::export_tar`] of a version (None: the head).
    pub fn export_tar_at(
        &self,
        id: &str,
        version: Option<&str>,
        out: impl std::io::Write,
    ) -> Result<burrow_store::ImportStats> {
        Ok(self.store.export_tar(self.version_at(id, version)?, out)?)
    }

    /// The store's path and size on disk (database plus write-ahead log), in bytes.
    pub fn store_bytes(&self) -> u64 {
        let p = self.store.path();
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = p.as_os_str().to_owned();
        wal.push("-wal");
        size(p) + size(Path::new(&wal))
    }

    /// Exports the session's current tree to a host directory, or a tar file if `dest` ends
    /// in `.tar`.
    pub fn export(&self, id: &str, dest: &Path) -> Result<burrow_store::ImportStats> {
        self.export_with_progress(id, dest, &mut |_| {})
    }

    /// [`Sandbox::export`], telling `progress` the running totals after each file.
    pub fn export_with_progress(
        &self,
        id: &str,
        dest: &Path,
        progress: &mut dyn FnMut(&burrow_store::ImportStats),
    ) -> Result<burrow_store::ImportStats> {
        let v = self.store.workspace(id)?.version;
        if dest.extension().is_some_and(|e| e == "tar") {
            let f = std::fs::File::create(dest).map_err(burrow_store::Error::from)?;
            let out = std::io::BufWriter::new(f);
            Ok(self.store.export_tar_with_progress(v, out, progress)?)
        } else {
            Ok(self.store.export_dir_with_progress(v, dest, progress)?)
        }
    }
}

/// One version of a session's lineage.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VersionInfo {
    pub version: i64,
    pub parent: Option<i64>,
    /// Nanoseconds since the Unix epoch.
    pub time: i64,
    /// The same time, RFC 3339.
    pub time_at: String,
    /// What made it: the tool, `upload ...`, `checkout N`, `undo to N`.
    pub message: String,
    pub bytes: u64,
    pub entries: u64,
    /// Labels naming this version (left out when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

impl VersionInfo {
    pub fn of(v: &Version, labels: Vec<String>) -> VersionInfo {
        VersionInfo {
            version: v.id.0,
            parent: v.parent.map(|p| p.0),
            time: v.time,
            time_at: rfc3339(v.time),
            message: v.message.clone(),
            bytes: v.bytes,
            entries: v.entries,
            labels,
        }
    }
}

/// One event of a session's log.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct EventInfo {
    /// Position in the store's log (resume after it).
    pub seq: i64,
    /// Nanoseconds since the Unix epoch.
    pub time: i64,
    /// The same time, RFC 3339.
    pub time_at: String,
    /// `created`, `tool`, `run`, `forked`, `labelled`, `checked_out`, `undo`, `upload`, ...
    pub kind: String,
    pub version_before: Option<i64>,
    pub version_after: Option<i64>,
    /// What the event records (a tool call: tool, input, output, is_error, duration_us).
    pub data: Value,
}

impl EventInfo {
    pub fn of(e: &burrow_store::Event) -> EventInfo {
        EventInfo {
            seq: e.seq,
            time: e.time,
            time_at: rfc3339(e.time),
            kind: e.kind.clone(),
            version_before: e.version_before.map(|v| v.0),
            version_after: e.version_after.map(|v| v.0),
            data: serde_json::from_str(&e.data).unwrap_or(Value::Null),
        }
    }
}

/// A version as the JSON interfaces show it (`burrow history --json`, the HTTP API, the
/// Python package).
pub fn version_json(v: &Version) -> Value {
    json!(VersionInfo::of(v, Vec::new()))
}

/// An event as `burrow log --json` and the Python package show it: [`EventInfo`] with its
/// session (the HTTP API's per-session stream leaves that out).
pub fn event_json(e: &burrow_store::Event) -> Value {
    let mut v = json!(EventInfo::of(e));
    v["session"] = json!(e.workspace);
    v
}

/// A time in nanoseconds since the Unix epoch as RFC 3339 in UTC with milliseconds
/// (`2026-12-01T01:30:39.123Z`), the readable twin of every `time`/`created` field.
pub fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let millis = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (d, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since the epoch (proleptic Gregorian; Howard Hinnant's algorithm).
    let z = d + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// How a changed path is shown: workspace paths relative, system-area paths as the guest
/// sees them (`/tmp/x`).
pub fn shown_path(path: &str) -> String {
    crate::wasi_fs::system_guest_path(path).unwrap_or_else(|| path.to_string())
}

impl Sandbox {
    /// A unified diff (git's shape, 3 lines of context) of the text files among `changes`
    /// between versions `a` and `b`; binary files get git's "Binary files ... differ" line.
    pub fn patch(&self, a: VersionId, b: VersionId, changes: &[Change]) -> Result<String> {
        use burrow_store::ChangeKind;
        let mut va = self.store.view(a)?;
        let mut vb = self.store.view(b)?;
        let mut out = String::new();
        for c in changes {
            if c.entry != burrow_store::Kind::File {
                continue;
            }
            let old = if c.kind == ChangeKind::Added {
                Vec::new()
            } else {
                va.read_file(&c.path).unwrap_or_default()
            };
            let new = if c.kind == ChangeKind::Removed {
                Vec::new()
            } else {
                vb.read_file(&c.path).unwrap_or_default()
            };
            // System-area files are named by their absolute guest path, workspace files
            // git-style.
            let (a_name, b_name) = match crate::wasi_fs::system_guest_path(&c.path) {
                Some(g) => (g.clone(), g),
                None => (format!("a/{}", c.path), format!("b/{}", c.path)),
            };
            let (Ok(old), Ok(new)) = (String::from_utf8(old), String::from_utf8(new)) else {
                out.push_str(&format!("Binary files {a_name} and {b_name} differ\n"));
                continue;
            };
            let from = if c.kind == ChangeKind::Added {
                "/dev/null".to_string()
            } else {
                a_name
            };
            let to = if c.kind == ChangeKind::Removed {
                "/dev/null".to_string()
            } else {
                b_name
            };
            let diff = similar::TextDiff::from_lines(&old, &new);
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&from, &to)
                    .to_string(),
            );
        }
        Ok(out)
    }
}

/// The event of a tool call that left its session as it was, for [`Sandbox::call`] to send
/// from the caller's thread.
struct Unchanged {
    /// The session's version before and after.
    version: VersionId,
    data: String,
}

/// Stack of the thread a call runs on. Guests run on the native stack (wasmtime's own limit
/// is 512 KiB of it) and the store walks directory trees recursively, so a call gets a
/// generous stack of its own rather than whatever its caller's thread has (2 MiB for test
/// and tokio blocking threads): a deep tree must give an error, never overflow the host.
/// Only touched pages are committed.
pub(crate) const CALL_STACK: usize = 64 << 20;

thread_local! {
    /// This thread's call thread: a pool of one thread with [`CALL_STACK`], made at the
    /// thread's first call and kept until the thread ends. Making a thread (and mapping and
    /// unmapping its stack, which makes the kernel flush every core's TLB) for each call cost
    /// more than the rest of a small call's host side.
    static CALL_THREAD: std::cell::OnceCell<Option<rayon_core::ThreadPool>> =
        const { std::cell::OnceCell::new() };
}

/// Runs `f` on this thread's call thread, which has [`CALL_STACK`] (inline if no thread can
/// be made). Each calling thread has its own, so concurrent calls from several threads still
/// run at once.
fn on_deep_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    CALL_THREAD.with(|cell| {
        let pool = cell.get_or_init(|| {
            rayon_core::ThreadPoolBuilder::new()
                .num_threads(1)
                .stack_size(CALL_STACK)
                .thread_name(|_| "burrow-call".into())
                .build()
                .ok()
        });
        match pool {
            Some(p) => p.install(f),
            None => f(),
        }
    })
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A session's settings, from its metadata.
fn settings_in(meta: &std::collections::BTreeMap<String, String>) -> Settings {
    match meta.get("settings") {
        Some(text) => serde_json::from_str(text).unwrap_or_default(),
        None => Settings::default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_times() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_709_251_200_123_456_789),
            "2024-03-01T00:00:00.123Z"
        );
        assert_eq!(
            super::rfc3339(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(super::rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
