//! `burrow._burrow`: the native half of the Python package `burrow`.
//!
//! One class, `Core`, wraps a `burrow_embed::Core` (a `burrow_host::Sandbox`, the same library
//! the CLI, the HTTP API, the worker and the npm package use: nothing is implemented twice).
//! Every method releases the GIL for the whole call, so Python threads run sessions in
//! parallel; calls that make a version are serialised per session (as `burrow serve` does), so
//! two threads on one session queue instead of conflicting. Structured results cross as JSON
//! text (the CLI's `--json` shapes), bytes as `bytes`; the typed API, docstrings and
//! exceptions live in `python/burrow/`. Errors are raised as the classes of `burrow.errors`,
//! with the CLI's messages.

use std::path::PathBuf;
use std::time::Duration;

use burrow_embed::{Failure, NewSession, invalid};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A failure raised as the class of `burrow.errors` it names.
fn raise(f: Failure) -> PyErr {
    Python::attach(|py| {
        let class = py.import("burrow.errors").and_then(|m| m.getattr(f.class));
        match class.and_then(|c| c.call1((f.message.clone(),))) {
            Ok(exc) => PyErr::from_value(exc),
            Err(_) => PyRuntimeError::new_err(f.message),
        }
    })
}

/// Runs `f` with the GIL released; a failure becomes the Python exception.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    py.detach(f).map_err(raise)
}

fn seconds(s: Option<f64>) -> PyResult<Option<Duration>> {
    burrow_embed::duration(s, "timeout", "seconds", 1.0).map_err(raise)
}

fn fuel(b: Option<f64>) -> PyResult<Option<u64>> {
    burrow_embed::cpu_budget(b, "cpu_budget").map_err(raise)
}

/// What `Core::sh` returns: exit code, stdout, stderr, version before, version after, and
/// the fuel the call used (None without a CPU budget).
type ShOutcome<'py> = (
    i32,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    i64,
    i64,
    Option<u64>,
);

/// A burrow store, open in this process (`burrow.Sandbox` wraps it).
#[pyclass(frozen, module = "burrow._burrow")]
struct Core {
    core: burrow_embed::Core,
}

#[pymethods]
impl Core {
    /// Opens (creating if needed) the store at `path`, or the CLI's default store.
    #[new]
    #[pyo3(signature = (path=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>) -> PyResult<Core> {
        let core = detached(py, || burrow_embed::Core::open(path))?;
        Ok(Core { core })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.core.path().to_path_buf()
    }

    /// Creates a session; returns its info as JSON.
    #[pyo3(signature = (name, allow_net, secrets, env, family_name, timeout, memory_mib, cpu_budget=None, deterministic=false))]
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
        cpu_budget: Option<f64>,
        deterministic: bool,
    ) -> PyResult<String> {
        let new = NewSession {
            name,
            allow_net,
            secrets,
            env,
            family: family_name,
            timeout: seconds(timeout)?,
            memory_mib,
            cpu_budget: fuel(cpu_budget)?,
            deterministic,
        };
        detached(py, || self.core.create(new))
    }

    /// The id a session key (id, unique id prefix or name) designates.
    fn resolve(&self, py: Python<'_>, key: &str) -> PyResult<String> {
        detached(py, || self.core.resolve(key))
    }

    /// A session's info as JSON.
    fn info(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        detached(py, || self.core.info(id))
    }

    /// Every session's info, as a JSON array.
    fn list(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, || self.core.list())
    }

    /// Forks a session `n` times; the new ids.
    fn fork(&self, py: Python<'_>, id: &str, n: usize) -> PyResult<Vec<String>> {
        detached(py, || self.core.fork(id, n))
    }

    fn delete(&self, py: Python<'_>, id: &str) -> PyResult<()> {
        detached(py, || self.core.delete(id))
    }

    /// A shell command as one version: (exit code, stdout, stderr, version before, after).
    #[pyo3(signature = (id, command, stdin, timeout, cpu_budget=None))]
    fn sh<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        command: &str,
        stdin: &[u8],
        timeout: Option<f64>,
        cpu_budget: Option<f64>,
    ) -> PyResult<ShOutcome<'py>> {
        let limits = burrow_embed::CallLimits {
            timeout: seconds(timeout)?,
            cpu_budget: fuel(cpu_budget)?,
        };
        let r = detached(py, || self.core.sh(id, command, stdin, limits))?;
        Ok((
            r.exit_code,
            PyBytes::new(py, &r.stdout),
            PyBytes::new(py, &r.stderr),
            r.version_before,
            r.version_after,
            r.fuel,
        ))
    }

    /// A file's bytes at the session's head (no version is made).
    fn read<'py>(&self, py: Python<'py>, id: &str, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let data = detached(py, || self.core.read(id, path))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Writes a file (parents created) as one version; the new version.
    fn write(&self, py: Python<'_>, id: &str, path: &str, data: &[u8]) -> PyResult<i64> {
        detached(py, || self.core.write(id, path, data))
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
        detached(py, || self.core.call(id, family_name, tool, input))
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
        detached(py, || self.core.tool_use(id, family_name, block))
    }

    /// The `tools` list of a Messages API request for a family (JSON).
    #[staticmethod]
    fn tools(family_name: &str) -> PyResult<String> {
        burrow_embed::Core::tools(family_name).map_err(raise)
    }

    /// The version a key designates: a session's head (id, prefix or name), `42` or `v42`.
    fn version_of(&self, py: Python<'_>, key: &str) -> PyResult<i64> {
        detached(py, || self.core.version_of(key))
    }

    /// Changes between two keys (sessions or versions), as (a, b, changes JSON); `all`
    /// includes the system area (/tmp, /memories, the shell's state).
    fn diff(&self, py: Python<'_>, a: &str, b: &str, all: bool) -> PyResult<(i64, i64, String)> {
        detached(py, || self.core.diff(a, b, all))
    }

    /// The unified diff (text) between two keys, as `burrow diff` prints it.
    fn patch(&self, py: Python<'_>, a: &str, b: &str, all: bool) -> PyResult<String> {
        detached(py, || self.core.patch(a, b, all))
    }

    /// Merges `source` into `into` (None: its parent); the outcome as JSON.
    #[pyo3(signature = (source, into=None, base=None, no_commit=false))]
    fn merge(
        &self,
        py: Python<'_>,
        source: &str,
        into: Option<String>,
        base: Option<String>,
        no_commit: bool,
    ) -> PyResult<String> {
        detached(py, || {
            self.core
                .merge(source, into.as_deref(), base.as_deref(), no_commit)
        })
    }

    /// Replays a session's recorded calls in a new fork; the report as JSON.
    #[pyo3(signature = (session, from_version=None, into=None))]
    fn replay(
        &self,
        py: Python<'_>,
        session: &str,
        from_version: Option<String>,
        into: Option<String>,
    ) -> PyResult<String> {
        detached(py, || {
            self.core
                .replay(session, from_version.as_deref(), into.as_deref())
        })
    }

    fn undo(&self, py: Python<'_>, id: &str) -> PyResult<i64> {
        detached(py, || self.core.undo(id))
    }

    fn checkout(&self, py: Python<'_>, id: &str, version: &str) -> PyResult<i64> {
        detached(py, || self.core.checkout(id, version))
    }

    fn label(&self, py: Python<'_>, id: &str, name: &str) -> PyResult<i64> {
        detached(py, || self.core.label(id, name))
    }

    /// The session's versions, newest first (JSON array, `burrow history --json` rows).
    fn history(&self, py: Python<'_>, id: &str, limit: usize) -> PyResult<String> {
        detached(py, || self.core.history(id, limit))
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
        detached(py, || self.core.log(id, after, limit, kind.as_deref()))
    }

    /// Exports the session's tree to a host directory (or a `.tar` file); the counts as JSON.
    fn export(&self, py: Python<'_>, id: &str, dest: PathBuf) -> PyResult<String> {
        detached(py, || self.core.export(id, &dest))
    }

    /// Garbage collection, as `burrow gc`; the counts as JSON.
    #[pyo3(signature = (keep_last, grace))]
    fn gc(&self, py: Python<'_>, keep_last: Option<usize>, grace: f64) -> PyResult<String> {
        if !(grace.is_finite() && (0.0..1e9).contains(&grace)) {
            return Err(raise(invalid(format!(
                "grace must be a non-negative number of seconds, got {grace}"
            ))));
        }
        let grace = Duration::from_secs_f64(grace);
        detached(py, || self.core.gc(keep_last, grace))
    }

    /// The store's consistency check, as `burrow fsck`; the report as JSON.
    fn fsck(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, || self.core.fsck())
    }

    /// Benchmark baseline: `n` reads of `path` through the Rust library in a loop, without
    /// Python in between; the total in seconds.
    fn bench_read(&self, py: Python<'_>, id: &str, path: &str, n: usize) -> PyResult<f64> {
        detached(py, || self.core.bench_read(id, path, n))
    }
}

/// The native module; `burrow/__init__.py` builds the public API on it.
#[pymodule]
fn _burrow(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add("BURROW_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
