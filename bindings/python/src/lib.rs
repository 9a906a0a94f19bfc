//! `burrow._burrow`: the native half of the Python package `burrow`.
//!
//! One class, `Core`, wraps a `burrow_host::Sandbox` (the same library the CLI, the HTTP API
//! and the worker use: nothing is implemented twice). Every method releases the GIL for the
//! whole call, so Python threads run sessions in parallel; calls that make a version are
//! serialised per session (as `burrow serve` does), so two threads on one session queue
//! instead of conflicting. Structured results cross as JSON text (the CLI's `--json` shapes),
//! bytes as `bytes`; the typed API, docstrings and exceptions live in `python/burrow/`.
//! Errors are raised as the classes of `burrow.errors`, with the CLI's messages.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_host::session::{Family, SandboxConfig, SessionError, Settings};
use burrow_host::{RunError, Sandbox};
use burrow_store::{ChangeKind, Retention};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{Value, json};

/// An error on its way to Python: the name of a class in `burrow.errors` and the message.
struct Failure {
    class: &'static str,
    message: String,
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

/// A file error names the file, as Python's own do (`notes.md: no such file or directory`).
fn about(path: &str) -> impl FnOnce(SessionError) -> Failure + '_ {
    move |e| {
        let mut f = Failure::from(e);
        if matches!(f.class, "FileNotFound" | "IsADirectory" | "NotADirectory") {
            f.message = format!("{path}: {}", f.message);
        }
        f
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure {
        class: "InvalidInput",
        message: message.into(),
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        Python::attach(|py| {
            let class = py.import("burrow.errors").and_then(|m| m.getattr(f.class));
            match class.and_then(|c| c.call1((f.message.clone(),))) {
                Ok(exc) => PyErr::from_value(exc),
                Err(_) => PyRuntimeError::new_err(f.message),
            }
        })
    }
}

type Res<T> = Result<T, Failure>;

fn to_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn family(name: &str) -> Res<Family> {
    name.parse()
        .map_err(|e: burrow_host::tools::UnknownFamily| invalid(e.to_string()))
}

fn seconds(s: Option<f64>) -> Res<Option<Duration>> {
    match s {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(invalid(format!(
            "timeout must be a positive number of seconds, got {s}"
        ))),
    }
}

/// What `Core::sh` returns: exit code, stdout, stderr, version before, version after.
type ShOutcome<'py> = (i32, Bound<'py, PyBytes>, Bound<'py, PyBytes>, i64, i64);

/// A burrow store, open in this process (`burrow.Sandbox` wraps it).
#[pyclass(frozen, module = "burrow._burrow")]
struct Core {
    sandbox: Arc<Sandbox>,
    path: PathBuf,
    /// One lock per session: calls that make a version queue here (the GIL is not held).
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl Core {
    /// Runs `f` on session `id` after the calls on it queued before.
    fn serialised<T>(&self, id: &str, f: impl FnOnce(&Sandbox) -> Res<T>) -> Res<T> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(id.to_string()).or_default().clone()
        };
        let _turn = lock.lock().unwrap_or_else(|e| e.into_inner());
        f(&self.sandbox)
    }
}

#[pymethods]
impl Core {
    /// Opens (creating if needed) the store at `path`, or the CLI's default store.
    #[new]
    #[pyo3(signature = (path=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>) -> PyResult<Core> {
        let path = path.unwrap_or_else(burrow_host::session::default_store_path);
        let config = SandboxConfig::from_env().map_err(invalid)?;
        let sandbox = py.detach(|| Sandbox::open_with(&path, config).map_err(Failure::from))?;
        Ok(Core {
            sandbox: Arc::new(sandbox),
            path,
            locks: Mutex::new(HashMap::new()),
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Creates a session; returns its info as JSON.
    #[pyo3(signature = (name, allow_net, secrets, env, family_name, timeout, memory_mib))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        &self,
        py: Python<'_>,
        name: Option<String>,
        allow_net: Vec<String>,
        secrets: Vec<String>,
        env: Vec<(String, String)>,
        family_name: Option<String>,
        timeout: Option<f64>,
        memory_mib: Option<usize>,
    ) -> PyResult<String> {
        let mut settings = Settings {
            family: family_name.as_deref().map(family).transpose()?,
            timeout_ms: seconds(timeout)?.map(|t| t.as_millis() as u64),
            memory_mib,
            env: env.into_iter().collect(),
            ..Default::default()
        };
        settings
            .net
            .allow(&allow_net)
            .map_err(|e| invalid(e.to_string()))?;
        for s in &secrets {
            let rule =
                burrow_host::net::SecretRule::parse(s).map_err(|e| invalid(e.to_string()))?;
            settings.net.set_secret(rule);
        }
        let info = py
            .detach(|| self.sandbox.create_with(name.as_deref(), &settings))
            .map_err(Failure::from)?;
        Ok(to_json(&info))
    }

    /// The id a session key (id, unique id prefix or name) designates.
    fn resolve(&self, py: Python<'_>, key: &str) -> PyResult<String> {
        Ok(py
            .detach(|| self.sandbox.resolve(key))
            .map_err(Failure::from)?)
    }

    /// A session's info as JSON.
    fn info(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        let info = py.detach(|| self.sandbox.info(id)).map_err(Failure::from)?;
        Ok(to_json(&info))
    }

    /// Every session's info, as a JSON array.
    fn list(&self, py: Python<'_>) -> PyResult<String> {
        let list = py.detach(|| self.sandbox.list()).map_err(Failure::from)?;
        Ok(to_json(&list))
    }

    /// Forks a session `n` times; the new ids.
    fn fork(&self, py: Python<'_>, id: &str, n: usize) -> PyResult<Vec<String>> {
        Ok(py.detach(|| self.serialised(id, |sb| Ok(sb.fork(id, n)?)))?)
    }

    fn delete(&self, py: Python<'_>, id: &str) -> PyResult<()> {
        Ok(py.detach(|| self.serialised(id, |sb| Ok(sb.delete(id)?)))?)
    }

    /// A shell command as one version: (exit code, stdout, stderr, version before, after).
    #[pyo3(signature = (id, command, stdin, timeout))]
    fn sh<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        command: &str,
        stdin: &[u8],
        timeout: Option<f64>,
    ) -> PyResult<ShOutcome<'py>> {
        let timeout = seconds(timeout)?;
        let r = py.detach(|| {
            self.serialised(id, |sb| {
                Ok(sb.sh_limited(id, command, stdin, "sh", timeout)?)
            })
        })?;
        Ok((
            r.report.exit_code,
            PyBytes::new(py, &r.report.stdout),
            PyBytes::new(py, &r.report.stderr),
            r.version_before.0,
            r.version_after.0,
        ))
    }

    /// A file's bytes at the session's head (no version is made).
    fn read<'py>(&self, py: Python<'py>, id: &str, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let data = py
            .detach(|| self.sandbox.cat(id, path))
            .map_err(about(path))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Writes a file (parents created) as one version; the new version.
    fn write(&self, py: Python<'_>, id: &str, path: &str, data: &[u8]) -> PyResult<i64> {
        Ok(py.detach(|| {
            self.serialised(id, |sb| {
                sb.put_file(id, path, data)
                    .map(|v| v.0)
                    .map_err(about(path))
            })
        })?)
    }

    /// One tool call of a family as one version; the tool output as JSON.
    fn call(
        &self,
        py: Python<'_>,
        id: &str,
        family_name: &str,
        tool: &str,
        input: &str,
    ) -> PyResult<String> {
        let f = family(family_name)?;
        let input: Value = serde_json::from_str(input)
            .map_err(|e| invalid(format!("the tool input is not valid JSON: {e}")))?;
        if !input.is_object() {
            return Err(invalid("the tool input must be a JSON object").into());
        }
        let out = py.detach(|| self.serialised(id, |sb| Ok(sb.call(id, f, tool, &input)?)))?;
        Ok(to_json(&out))
    }

    /// Runs a Messages API `tool_use` block (JSON) and returns its `tool_result` block (JSON).
    /// The tool runs in `family` when it has the tool, else in the family that does.
    fn tool_use(
        &self,
        py: Python<'_>,
        id: &str,
        family_name: &str,
        block: &str,
    ) -> PyResult<String> {
        let preferred = family(family_name)?;
        let block: Value = serde_json::from_str(block)
            .map_err(|e| invalid(format!("the tool_use block is not valid JSON: {e}")))?;
        if block["type"] != "tool_use" {
            return Err(invalid("expected a block with \"type\": \"tool_use\"").into());
        }
        let Some(name) = block["name"].as_str() else {
            return Err(invalid("the tool_use block has no \"name\"").into());
        };
        let input = if block["input"].is_object() {
            block["input"].clone()
        } else {
            json!({})
        };
        let out = match preferred.serving(name) {
            Some(f) => py.detach(|| self.serialised(id, |sb| Ok(sb.call(id, f, name, &input)?)))?,
            None => burrow_host::tools::ToolOutput::error(format!("Unknown tool: {name}")),
        };
        Ok(to_json(&out.tool_result(&block["id"])))
    }

    /// The `tools` list of a Messages API request for a family (JSON).
    #[staticmethod]
    fn tools(family_name: &str) -> PyResult<String> {
        let f = family(family_name)?;
        Ok(to_json(&burrow_host::tools::schema::messages_tools(f)))
    }

    /// The version a key designates: a session's head (id, prefix or name), `42` or `v42`.
    fn version_of(&self, py: Python<'_>, key: &str) -> PyResult<i64> {
        Ok(py
            .detach(|| self.sandbox.version_of(key))
            .map_err(Failure::from)?
            .0)
    }

    /// Changes between two keys (sessions or versions), as (a, b, changes JSON); `all`
    /// includes the system area (/tmp, /memories, the shell's state).
    fn diff(&self, py: Python<'_>, a: &str, b: &str, all: bool) -> PyResult<(i64, i64, String)> {
        let (va, vb, changes) = py
            .detach(|| {
                if all {
                    self.sandbox.diff_all(a, b)
                } else {
                    self.sandbox.diff(a, b)
                }
            })
            .map_err(Failure::from)?;
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
    fn patch(&self, py: Python<'_>, a: &str, b: &str, all: bool) -> PyResult<String> {
        Ok(py
            .detach(|| {
                let (va, vb, changes) = if all {
                    self.sandbox.diff_all(a, b)?
                } else {
                    self.sandbox.diff(a, b)?
                };
                self.sandbox.patch(va, vb, &changes)
            })
            .map_err(Failure::from)?)
    }

    fn undo(&self, py: Python<'_>, id: &str) -> PyResult<i64> {
        Ok(py.detach(|| self.serialised(id, |sb| Ok(sb.undo(id)?.0)))?)
    }

    fn checkout(&self, py: Python<'_>, id: &str, version: &str) -> PyResult<i64> {
        Ok(py.detach(|| {
            self.serialised(id, |sb| {
                let v = sb.version_of(version)?;
                Ok(sb.checkout(id, v)?.0)
            })
        })?)
    }

    fn label(&self, py: Python<'_>, id: &str, name: &str) -> PyResult<i64> {
        Ok(py.detach(|| self.serialised(id, |sb| Ok(sb.label(id, name)?.0)))?)
    }

    /// The session's versions, newest first (JSON array, `burrow history --json` rows).
    fn history(&self, py: Python<'_>, id: &str, limit: usize) -> PyResult<String> {
        let list = py
            .detach(|| self.sandbox.history(id, limit))
            .map_err(Failure::from)?;
        let rows: Vec<Value> = list
            .iter()
            .map(burrow_host::session::version_json)
            .collect();
        Ok(to_json(&rows))
    }

    /// The session's events, oldest first (JSON array, `burrow log --json` rows).
    #[pyo3(signature = (id, after, limit, kind=None))]
    fn log(
        &self,
        py: Python<'_>,
        id: &str,
        after: i64,
        limit: usize,
        kind: Option<String>,
    ) -> PyResult<String> {
        let list = py
            .detach(|| self.sandbox.log(id, after, limit))
            .map_err(Failure::from)?;
        let rows: Vec<Value> = list
            .iter()
            .filter(|e| kind.as_ref().is_none_or(|k| *k == e.kind))
            .map(burrow_host::session::event_json)
            .collect();
        Ok(to_json(&rows))
    }

    /// Exports the session's tree to a host directory (or a `.tar` file); the counts as JSON.
    fn export(&self, py: Python<'_>, id: &str, dest: PathBuf) -> PyResult<String> {
        let s = py
            .detach(|| self.sandbox.export(id, &dest))
            .map_err(Failure::from)?;
        Ok(to_json(&json!({
            "files": s.files, "dirs": s.dirs, "symlinks": s.symlinks, "bytes": s.bytes,
        })))
    }

    /// Garbage collection, as `burrow gc`; the counts as JSON.
    #[pyo3(signature = (keep_last, grace))]
    fn gc(&self, py: Python<'_>, keep_last: Option<usize>, grace: f64) -> PyResult<String> {
        if !(grace.is_finite() && grace >= 0.0) {
            return Err(invalid(format!(
                "grace must be a non-negative number of seconds, got {grace}"
            ))
            .into());
        }
        let retention = keep_last.map(Retention::LastN).unwrap_or(Retention::All);
        let grace = Duration::from_secs_f64(grace);
        let s = py
            .detach(|| self.sandbox.store().gc(retention, grace))
            .map_err(Failure::from)?;
        Ok(to_json(&json!({
            "versions_deleted": s.versions_deleted, "objects_deleted": s.objects_deleted,
            "bytes_freed": s.bytes_freed, "objects_kept": s.objects_kept,
            "pages_offloaded": s.pages_offloaded,
        })))
    }

    /// The store's consistency check, as `burrow fsck`; the report as JSON.
    fn fsck(&self, py: Python<'_>) -> PyResult<String> {
        let r = py
            .detach(|| self.sandbox.store().fsck())
            .map_err(Failure::from)?;
        Ok(to_json(&json!({
            "clean": r.is_clean(), "problems": r.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "workspaces": r.workspaces, "versions": r.versions, "objects": r.objects,
        })))
    }

    /// Benchmark baseline: `n` reads of `path` through the Rust library in a loop, without
    /// Python in between; the total in seconds.
    fn bench_read(&self, py: Python<'_>, id: &str, path: &str, n: usize) -> PyResult<f64> {
        Ok(py.detach(|| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(self.sandbox.cat(id, path)?);
            }
            Ok::<_, Failure>(t.elapsed().as_secs_f64())
        })?)
    }
}

/// The native module; `burrow/__init__.py` builds the public API on it.
#[pymodule]
fn _burrow(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add("BURROW_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
