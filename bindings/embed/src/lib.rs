//! burrow-embed: what the language packages (Python's `burrow-sandbox` in bindings/python,
//! npm's `burrow-sandbox` in bindings/node) share, so neither implements anything twice.
//!
//! [`Core`] is a store open in the process, with one method per call a package offers. Each
//! method blocks (the packages run it with the GIL released, or on a blocking thread off
//! Node's event loop), takes and returns plain Rust values, and carries structured results as
//! JSON text in the CLI's `--json` shapes. Calls that make a version are serialised per
//! session, as `burrow serve` does, so two threads on one session queue instead of
//! conflicting. Errors are a [`Failure`]: the name of the error class both packages define
//! (`UnknownSession`, `FileNotFound`, ...) and the CLI's message.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use burrow_host::session::CallLimits;
use burrow_host::session::{Family, SandboxConfig, SessionError, Settings};
use burrow_host::{RunError, Sandbox};
use burrow_store::{ChangeKind, Retention};
use serde_json::{Value, json};

/// An error on its way to a package: the name of its error class and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub class: &'static str,
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        use burrow_store::Error as S;
        let class = match &e {
            SessionError::Unknown(_) | SessionError::Ambiguous { .. } => "UnknownSession",
            SessionError::NameTaken(_) | SessionError::Invalid(_) => "InvalidInput",
            SessionError::Run(RunError::Timeout(_)) => "CallTimeout",
            SessionError::Run(
                RunError::Memory(_)
                | RunError::Table(_)
                | RunError::Output(_)
                | RunError::Quota(_)
                | RunError::CpuBudget(_)
                | RunError::Trap(_),
            ) => "CallFailed",
            SessionError::Store(S::NotFound) => "FileNotFound",
            SessionError::Store(S::IsDir) => "IsADirectory",
            SessionError::Store(S::NotDir) => "NotADirectory",
            SessionError::Store(S::Conflict { .. }) => "Conflict",
            _ => "BurrowError",
        };
        // A call that failed as a whole changed nothing, and the CLI says so.
        let message = match class {
            "CallTimeout" | "CallFailed" => format!("{e} (the session is unchanged)"),
            _ => e.to_string(),
        };
        Failure { class, message }
    }
}

impl From<burrow_store::Error> for Failure {
    fn from(e: burrow_store::Error) -> Failure {
        SessionError::Store(e).into()
    }
}

/// A file error names the file, as the languages' own do (`notes.md: no such file or
/// directory`).
fn about(path: &str) -> impl FnOnce(SessionError) -> Failure + '_ {
    move |e| {
        let mut f = Failure::from(e);
        if matches!(f.class, "FileNotFound" | "IsADirectory" | "NotADirectory") {
            f.message = format!("{path}: {}", f.message);
        }
        f
    }
}

/// An `InvalidInput` failure.
pub fn invalid(message: impl Into<String>) -> Failure {
    Failure {
        class: "InvalidInput",
        message: message.into(),
    }
}

pub type Res<T> = Result<T, Failure>;

fn to_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn family(name: &str) -> Res<Family> {
    name.parse()
        .map_err(|e: burrow_host::tools::UnknownFamily| invalid(e.to_string()))
}

/// A time limit given in a language's unit: `value` of `unit` (`"seconds"`, `"milliseconds"`),
/// `per_second` of them in a second; `name` is the parameter's name in that language.
pub fn duration(
    value: Option<f64>,
    name: &str,
    unit: &str,
    per_second: f64,
) -> Res<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 && v / per_second < 1e9 => {
            Ok(Some(Duration::from_secs_f64(v / per_second)))
        }
        Some(v) => Err(invalid(format!(
            "{name} must be a positive number of {unit}, got {v}"
        ))),
    }
}

/// A CPU budget given by a language: a positive whole number of fuel units (`name` is the
/// parameter's name there).
pub fn cpu_budget(value: Option<f64>, name: &str) -> Res<Option<u64>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= u64::MAX as f64 => {
            Ok(Some(v as u64))
        }
        Some(v) => Err(invalid(format!(
            "{name} must be a positive whole number of fuel units, got {v}"
        ))),
    }
}

/// The store the CLI uses when none is given (`$XDG_DATA_HOME/burrow/burrow.db`).
pub fn default_store_path() -> String {
    burrow_host::session::default_store_path()
        .to_string_lossy()
        .into_owned()
}

/// What [`Core::sh`] returns.
#[derive(Debug, Clone)]
pub struct ShOutcome {
    pub exit_code: i32,
    /// With a CPU budget: the fuel the call used.
    pub fuel: Option<u64>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub version_before: i64,
    pub version_after: i64,
}

/// How a session is made ([`Core::create`]); the fields are `burrow session new`'s options.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub name: Option<String>,
    pub allow_net: Vec<String>,
    pub secrets: Vec<String>,
    pub env: Vec<(String, String)>,
    pub family: Option<String>,
    pub timeout: Option<Duration>,
    pub memory_mib: Option<usize>,
    /// CPU budget of each call, in fuel units.
    pub cpu_budget: Option<u64>,
    /// Deterministic calls, which `replay` runs again with identical results.
    pub deterministic: bool,
}

/// A burrow store, open in this process.
pub struct Core {
    sandbox: Arc<Sandbox>,
    path: PathBuf,
    /// One lock per session: calls that make a version queue here.
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl Core {
    /// Opens (creating if needed) the store at `path` (an SQLite file or a PostgreSQL URL), or
    /// the CLI's default store; the process environment is read as the CLI reads it.
    pub fn open(path: Option<PathBuf>) -> Res<Core> {
        let path = path.unwrap_or_else(burrow_host::session::default_store_path);
        let config = SandboxConfig::from_env().map_err(invalid)?;
        let sandbox = Sandbox::open_with(&path, config)?;
        Ok(Core {
            sandbox: Arc::new(sandbox),
            path,
            locks: Mutex::new(HashMap::new()),
        })
    }

    /// The store's path or URL.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on session `id` after the calls on it queued before.
    fn serialised<T>(&self, id: &str, f: impl FnOnce(&Sandbox) -> Res<T>) -> Res<T> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(id.to_string()).or_default().clone()
        };
        let _turn = lock.lock().unwrap_or_else(|e| e.into_inner());
        f(&self.sandbox)
    }

    /// Creates a session; returns its info as JSON.
    pub fn create(&self, new: NewSession) -> Res<String> {
        let mut settings = Settings {
            family: new.family.as_deref().map(family).transpose()?,
            timeout_ms: new.timeout.map(|t| t.as_millis() as u64),
            memory_mib: new.memory_mib,
            cpu_budget: new.cpu_budget,
            deterministic: new.deterministic,
            env: new.env.into_iter().collect(),
            ..Default::default()
        };
        settings
            .net
            .allow(&new.allow_net)
            .map_err(|e| invalid(e.to_string()))?;
        for s in &new.secrets {
            let rule =
                burrow_host::net::SecretRule::parse(s).map_err(|e| invalid(e.to_string()))?;
            settings.net.set_secret(rule);
        }
        let info = self.sandbox.create_with(new.name.as_deref(), &settings)?;
        Ok(to_json(&info))
    }

    /// The id a session key (id, unique id prefix or name) designates.
    pub fn resolve(&self, key: &str) -> Res<String> {
        Ok(self.sandbox.resolve(key)?)
    }

    /// A session's info as JSON.
    pub fn info(&self, id: &str) -> Res<String> {
        Ok(to_json(&self.sandbox.info(id)?))
    }

    /// Every session's info, as a JSON array.
    pub fn list(&self) -> Res<String> {
        Ok(to_json(&self.sandbox.list()?))
    }

    /// Forks a session `n` times; the new ids.
    pub fn fork(&self, id: &str, n: usize) -> Res<Vec<String>> {
        self.serialised(id, |sb| Ok(sb.fork(id, n)?))
    }

    pub fn delete(&self, id: &str) -> Res<()> {
        self.serialised(id, |sb| Ok(sb.delete(id)?))
    }

    /// A shell command as one version, with its own limits where `limits` sets them.
    pub fn sh(&self, id: &str, command: &str, stdin: &[u8], limits: CallLimits) -> Res<ShOutcome> {
        let r = self.serialised(id, |sb| Ok(sb.sh_call(id, command, stdin, "sh", limits)?))?;
        Ok(ShOutcome {
            fuel: r.report.fuel,
            exit_code: r.report.exit_code,
            stdout: r.report.stdout,
            stderr: r.report.stderr,
            version_before: r.version_before.0,
            version_after: r.version_after.0,
        })
    }

    /// A file's bytes at the session's head (no version is made).
    pub fn read(&self, id: &str, path: &str) -> Res<Vec<u8>> {
        self.sandbox.cat(id, path).map_err(about(path))
    }

    /// Writes a file (parents created) as one version; the new version.
    pub fn write(&self, id: &str, path: &str, data: &[u8]) -> Res<i64> {
        self.serialised(id, |sb| {
            sb.put_file(id, path, data)
                .map(|v| v.0)
                .map_err(about(path))
        })
    }

    /// One tool call of a family as one version; the tool output as JSON.
    pub fn call(&self, id: &str, family_name: &str, tool: &str, input: &str) -> Res<String> {
        let f = family(family_name)?;
        let input: Value = serde_json::from_str(input)
            .map_err(|e| invalid(format!("the tool input is not valid JSON: {e}")))?;
        if !input.is_object() {
            return Err(invalid("the tool input must be a JSON object"));
        }
        let out = self.serialised(id, |sb| Ok(sb.call(id, f, tool, &input)?))?;
        Ok(to_json(&out))
    }

    /// Runs a Messages API `tool_use` block (JSON) and returns its `tool_result` block (JSON).
    /// The tool runs in `family` when it has the tool, else in the family that does.
    pub fn tool_use(&self, id: &str, family_name: &str, block: &str) -> Res<String> {
        let preferred = family(family_name)?;
        let block: Value = serde_json::from_str(block)
            .map_err(|e| invalid(format!("the tool_use block is not valid JSON: {e}")))?;
        if block["type"] != "tool_use" {
            return Err(invalid("expected a block with \"type\": \"tool_use\""));
        }
        let Some(name) = block["name"].as_str() else {
            return Err(invalid("the tool_use block has no \"name\""));
        };
        let input = if block["input"].is_object() {
            block["input"].clone()
        } else {
            json!({})
        };
        let out = match preferred.serving(name) {
            Some(f) => self.serialised(id, |sb| Ok(sb.call(id, f, name, &input)?))?,
            None => burrow_host::tools::ToolOutput::error(format!("Unknown tool: {name}")),
        };
        Ok(to_json(&out.tool_result(&block["id"])))
    }

    /// The `tools` list of a Messages API request for a family (JSON).
    pub fn tools(family_name: &str) -> Res<String> {
        let f = family(family_name)?;
        Ok(to_json(&burrow_host::tools::schema::messages_tools(f)))
    }

    /// The version a key designates: a session's head (id, prefix or name), `42` or `v42`.
    pub fn version_of(&self, key: &str) -> Res<i64> {
        Ok(self.sandbox.version_of(key)?.0)
    }

    fn changes(
        &self,
        a: &str,
        b: &str,
        all: bool,
    ) -> Res<(
        burrow_store::VersionId,
        burrow_store::VersionId,
        Vec<burrow_store::Change>,
    )> {
        Ok(if all {
            self.sandbox.diff_all(a, b)?
        } else {
            self.sandbox.diff(a, b)?
        })
    }

    /// Changes between two keys (sessions or versions), as (a, b, changes JSON); `all`
    /// includes the system area (/tmp, /memories, the shell's state).
    pub fn diff(&self, a: &str, b: &str, all: bool) -> Res<(i64, i64, String)> {
        let (va, vb, changes) = self.changes(a, b, all)?;
        let rows: Vec<Value> = changes
            .iter()
            .map(|c| {
                json!({
                    "path": burrow_host::session::shown_path(&c.path),
                    "change": match c.kind {
                        ChangeKind::Added => "added",
                        ChangeKind::Removed => "removed",
                        ChangeKind::Modified => "modified",
                    },
                    "kind": format!("{:?}", c.entry).to_lowercase(),
                })
            })
            .collect();
        Ok((va.0, vb.0, to_json(&rows)))
    }

    /// The unified diff (text) between two keys, as `burrow diff` prints it.
    pub fn patch(&self, a: &str, b: &str, all: bool) -> Res<String> {
        let (va, vb, changes) = self.changes(a, b, all)?;
        Ok(self.sandbox.patch(va, vb, &changes)?)
    }

    /// Merges `source`'s changes into `into` (default: its parent) as `burrow merge` does;
    /// the outcome as JSON (`burrow merge --json`). Serialised with the destination's calls.
    pub fn merge(
        &self,
        source: &str,
        into: Option<&str>,
        base: Option<&str>,
        no_commit: bool,
    ) -> Res<String> {
        let dst = self.sandbox.merge_destination(source, into)?;
        self.serialised(&dst, |sb| {
            let base = base.map(|b| sb.version_of(b)).transpose()?;
            let out = sb.merge(&burrow_host::session::MergeRequest {
                source,
                into: Some(&dst),
                base,
                no_commit,
            })?;
            Ok(to_json(&out))
        })
    }

    /// Runs a session's recorded calls again in a new fork (from the calls made from the
    /// version `from` designates on; named `into`); the report as JSON.
    pub fn replay(&self, session: &str, from: Option<&str>, into: Option<&str>) -> Res<String> {
        let from = from.map(|v| self.sandbox.version_of(v)).transpose()?;
        let out = self.sandbox.replay(&burrow_host::session::ReplayRequest {
            session,
            from,
            into,
        })?;
        Ok(to_json(&out))
    }

    pub fn undo(&self, id: &str) -> Res<i64> {
        self.serialised(id, |sb| Ok(sb.undo(id)?.0))
    }

    /// Moves the session to the version `version` designates (a key), as a new version.
    pub fn checkout(&self, id: &str, version: &str) -> Res<i64> {
        self.serialised(id, |sb| {
            let v = sb.version_of(version)?;
            Ok(sb.checkout(id, v)?.0)
        })
    }

    pub fn label(&self, id: &str, name: &str) -> Res<i64> {
        self.serialised(id, |sb| Ok(sb.label(id, name)?.0))
    }

    /// The session's versions, newest first (JSON array, `burrow history --json` rows).
    pub fn history(&self, id: &str, limit: usize) -> Res<String> {
        let rows: Vec<Value> = self
            .sandbox
            .history(id, limit)?
            .iter()
            .map(burrow_host::session::version_json)
            .collect();
        Ok(to_json(&rows))
    }

    /// The session's events, oldest first (JSON array, `burrow log --json` rows), only those
    /// of `kind` when given.
    pub fn log(&self, id: &str, after: i64, limit: usize, kind: Option<&str>) -> Res<String> {
        let rows: Vec<Value> = self
            .sandbox
            .log(id, after, limit)?
            .iter()
            .filter(|e| kind.is_none_or(|k| k == e.kind))
            .map(burrow_host::session::event_json)
            .collect();
        Ok(to_json(&rows))
    }

    /// Exports the session's tree to a host directory (or a `.tar` file); the counts as JSON.
    pub fn export(&self, id: &str, dest: &Path) -> Res<String> {
        let s = self.sandbox.export(id, dest)?;
        Ok(to_json(&json!({
            "files": s.files, "dirs": s.dirs, "symlinks": s.symlinks, "bytes": s.bytes,
        })))
    }

    /// Garbage collection, as `burrow gc`; the counts as JSON.
    pub fn gc(&self, keep_last: Option<usize>, grace: Duration) -> Res<String> {
        let retention = keep_last.map(Retention::LastN).unwrap_or(Retention::All);
        let s = self.sandbox.store().gc(retention, grace)?;
        Ok(to_json(&json!({
            "versions_deleted": s.versions_deleted, "objects_deleted": s.objects_deleted,
            "bytes_freed": s.bytes_freed, "objects_kept": s.objects_kept,
            "pages_offloaded": s.pages_offloaded,
        })))
    }

    /// The store's consistency check, as `burrow fsck`; the report as JSON.
    pub fn fsck(&self) -> Res<String> {
        let r = self.sandbox.store().fsck()?;
        Ok(to_json(&json!({
            "clean": r.is_clean(), "problems": r.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "workspaces": r.workspaces, "versions": r.versions, "objects": r.objects,
        })))
    }

    /// Benchmark baseline: `n` reads of `path` through the Rust library in a loop, without the
    /// language in between; the total in seconds.
    pub fn bench_read(&self, id: &str, path: &str, n: usize) -> Res<f64> {
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(self.sandbox.cat(id, path)?);
        }
        Ok(t.elapsed().as_secs_f64())
    }
}
