//! The native half of the npm package `burrow-sandbox` (a Node-API addon).
//!
//! One class, `Core`, wraps a `burrow_embed::Core` (the same library the CLI, the HTTP API,
//! the worker and the Python package use: nothing is implemented twice). Every method returns
//! a Promise at once and runs its work on a thread of the addon's own pool, never on the event
//! loop's thread and never on libuv's four shared threads (a long shell call must not stall
//! the embedding program's file and DNS work); the promise is settled from that thread through
//! a threadsafe function (one hop there, one back). Calls that make a version are serialised
//! per session, so concurrent calls on one session queue instead of conflicting. Structured results cross as JSON text (the CLI's
//! `--json` shapes), bytes as `Buffer`s; the typed API lives in `index.js` / `index.d.ts`.
//! A failure rejects with an `Error` whose message is `[Class] message`, where `Class` names
//! one of the package's error classes (errors.js), which the JavaScript side throws instead.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use burrow_embed::{Failure, NewSession, Res};
use napi::bindgen_prelude::{Buffer, Object, ToNapiValue};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;

/// A failure as the Error the JavaScript side turns into its class.
fn reject(f: Failure) -> Error {
    Error::new(
        Status::GenericFailure,
        format!("[{}] {}", f.class, f.message),
    )
}

/// The threads calls run on: tokio's blocking pool (threads made on demand, kept while busy,
/// let go after ten idle seconds). The runtime itself is never driven.
fn pool() -> &'static tokio::runtime::Runtime {
    static POOL: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .thread_name("burrow-call")
            .max_blocking_threads(256)
            .build()
            .unwrap_or_else(|e| panic!("cannot make the addon's thread pool: {e}"))
    })
}

type Settle<J> = Box<dyn FnOnce(Env) -> Result<J> + Send>;

/// A promise of `work`'s result, run on the pool; `to_js` makes the value on the JS thread.
fn promise<'env, T, J>(
    env: &'env Env,
    work: impl FnOnce() -> Res<T> + Send + 'static,
    to_js: impl FnOnce(T) -> J + Send + 'static,
) -> Result<Object<'env>>
where
    T: Send + 'static,
    J: ToNapiValue + 'static,
{
    let (deferred, promise) = env.create_deferred::<J, Settle<J>>()?;
    pool().spawn_blocking(move || {
        // A panic must still settle the promise (an unsettled one would hang its caller).
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(Ok(v)) => deferred.resolve(Box::new(move |_| Ok(to_js(v)))),
            Ok(Err(f)) => deferred.reject(reject(f)),
            Err(_) => deferred.reject(reject(Failure {
                class: "BurrowError",
                message: "the call panicked; the session is unchanged".into(),
            })),
        }
    });
    Ok(promise)
}

/// [`promise`] of a value that crosses as it is.
fn run<'env, T: ToNapiValue + Send + 'static>(
    env: &'env Env,
    work: impl FnOnce() -> Res<T> + Send + 'static,
) -> Result<Object<'env>> {
    promise(env, work, |v| v)
}

fn milliseconds(ms: Option<f64>) -> Result<Option<Duration>> {
    burrow_embed::duration(ms, "timeoutMs", "milliseconds", 1000.0).map_err(reject)
}

/// What `Core.sh` resolves to.
#[napi(object)]
pub struct ShOutcome {
    pub exit_code: i32,
    pub stdout: Buffer,
    pub stderr: Buffer,
    pub version_before: i64,
    pub version_after: i64,
}

/// How `Core.create` makes a session.
#[napi(object)]
pub struct NewSessionOptions {
    pub name: Option<String>,
    pub allow_net: Option<Vec<String>>,
    pub secrets: Option<Vec<String>>,
    /// `[name, value]` pairs.
    pub env: Option<Vec<Vec<String>>>,
    pub family: Option<String>,
    pub timeout_ms: Option<f64>,
    pub memory_mib: Option<u32>,
}

/// What `Core.diff` resolves to: the two versions and the changes as JSON.
#[napi(object)]
pub struct DiffOutcome {
    pub a: i64,
    pub b: i64,
    pub changes: String,
    pub patch: String,
}

/// A burrow store, open in this process (`Sandbox` in index.js wraps it).
#[napi]
pub struct Core {
    core: Arc<burrow_embed::Core>,
}

/// Opens (creating if needed) the store at `path` (an SQLite file or a PostgreSQL URL), or the
/// CLI's default store.
#[napi]
pub fn open(env: &Env, path: Option<String>) -> Result<Object<'_>> {
    promise(
        env,
        move || burrow_embed::Core::open(path.map(PathBuf::from)),
        |core| Core {
            core: Arc::new(core),
        },
    )
}

/// The `tools` list of a Messages API request for a family (JSON).
#[napi]
pub fn tools(family: String) -> Result<String> {
    burrow_embed::Core::tools(&family).map_err(reject)
}

/// The store the CLI uses when none is given (`$XDG_DATA_HOME/burrow/burrow.db`).
#[napi]
pub fn default_store_path() -> String {
    burrow_embed::default_store_path()
}

/// The version of burrow this addon was built from.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[napi]
impl Core {
    /// The store's path or URL.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.core.path().to_string_lossy().into_owned()
    }

    /// Creates a session; resolves to its info as JSON.
    #[napi]
    pub fn create<'env>(&self, env: &'env Env, options: NewSessionOptions) -> Result<Object<'env>> {
        let mut vars = Vec::new();
        for pair in options.env.unwrap_or_default() {
            match <[String; 2]>::try_from(pair) {
                Ok([k, v]) => vars.push((k, v)),
                Err(_) => {
                    return Err(reject(burrow_embed::invalid(
                        "env takes name/value pairs of strings",
                    )));
                }
            }
        }
        let new = NewSession {
            name: options.name,
            allow_net: options.allow_net.unwrap_or_default(),
            secrets: options.secrets.unwrap_or_default(),
            env: vars,
            family: options.family,
            timeout: milliseconds(options.timeout_ms)?,
            memory_mib: options.memory_mib.map(|m| m as usize),
        };
        let core = self.core.clone();
        run(env, move || core.create(new))
    }

    /// The id a session key (id, unique id prefix or name) designates.
    #[napi]
    pub fn resolve<'env>(&self, env: &'env Env, key: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.resolve(&key))
    }

    /// A session's info as JSON.
    #[napi]
    pub fn info<'env>(&self, env: &'env Env, id: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.info(&id))
    }

    /// Every session's info, as a JSON array.
    #[napi]
    pub fn list<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.list())
    }

    /// Forks a session `n` times; the new ids.
    #[napi]
    pub fn fork<'env>(&self, env: &'env Env, id: String, n: u32) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.fork(&id, n as usize))
    }

    #[napi]
    pub fn delete<'env>(&self, env: &'env Env, id: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.delete(&id))
    }

    /// A shell command as one version.
    #[napi]
    pub fn sh<'env>(
        &self,
        env: &'env Env,
        id: String,
        command: String,
        stdin: Option<Buffer>,
        timeout_ms: Option<f64>,
    ) -> Result<Object<'env>> {
        let timeout = milliseconds(timeout_ms)?;
        let stdin: Vec<u8> = stdin.map(|b| b.to_vec()).unwrap_or_default();
        let core = self.core.clone();
        promise(
            env,
            move || core.sh(&id, &command, &stdin, timeout),
            |r| ShOutcome {
                exit_code: r.exit_code,
                stdout: r.stdout.into(),
                stderr: r.stderr.into(),
                version_before: r.version_before,
                version_after: r.version_after,
            },
        )
    }

    /// A file's bytes at the session's head (no version is made).
    #[napi]
    pub fn read<'env>(&self, env: &'env Env, id: String, path: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        promise(env, move || core.read(&id, &path), Buffer::from)
    }

    /// Writes a file (parents created) as one version; the new version.
    #[napi]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        id: String,
        path: String,
        data: Buffer,
    ) -> Result<Object<'env>> {
        let data = data.to_vec();
        let core = self.core.clone();
        run(env, move || core.write(&id, &path, &data))
    }

    /// One tool call of a family as one version; the tool output as JSON.
    #[napi]
    pub fn call<'env>(
        &self,
        env: &'env Env,
        id: String,
        family: String,
        tool: String,
        input: String,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.call(&id, &family, &tool, &input))
    }

    /// Runs a Messages API `tool_use` block (JSON) and resolves to its `tool_result` block
    /// (JSON); the tool runs in `family` when it has the tool, else in the family that does.
    #[napi]
    pub fn tool_use<'env>(
        &self,
        env: &'env Env,
        id: String,
        family: String,
        block: String,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.tool_use(&id, &family, &block))
    }

    /// The version a key designates: a session's head (id, prefix or name), `42` or `v42`.
    #[napi]
    pub fn version_of<'env>(&self, env: &'env Env, key: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.version_of(&key))
    }

    /// Changes between two keys (sessions or versions) and their unified diff; `all`
    /// includes the system area (/tmp, /memories, the shell's state).
    #[napi]
    pub fn diff<'env>(
        &self,
        env: &'env Env,
        a: String,
        b: String,
        all: bool,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || {
            let (va, vb, changes) = core.diff(&a, &b, all)?;
            // The patch between the two versions just resolved, not the keys' heads again.
            let patch = core.patch(&format!("v{va}"), &format!("v{vb}"), all)?;
            Ok(DiffOutcome {
                a: va,
                b: vb,
                changes,
                patch,
            })
        })
    }

    #[napi]
    pub fn undo<'env>(&self, env: &'env Env, id: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.undo(&id))
    }

    #[napi]
    pub fn checkout<'env>(
        &self,
        env: &'env Env,
        id: String,
        version: String,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.checkout(&id, &version))
    }

    #[napi]
    pub fn label<'env>(&self, env: &'env Env, id: String, name: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.label(&id, &name))
    }

    /// The session's versions, newest first (JSON array, `burrow history --json` rows).
    #[napi]
    pub fn history<'env>(&self, env: &'env Env, id: String, limit: u32) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.history(&id, limit as usize))
    }

    /// The session's events, oldest first (JSON array, `burrow log --json` rows).
    #[napi]
    pub fn log<'env>(
        &self,
        env: &'env Env,
        id: String,
        after: i64,
        limit: u32,
        kind: Option<String>,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || {
            core.log(&id, after, limit as usize, kind.as_deref())
        })
    }

    /// Exports the session's tree to a host directory (or a `.tar` file); the counts as JSON.
    #[napi]
    pub fn export<'env>(&self, env: &'env Env, id: String, dest: String) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.export(&id, std::path::Path::new(&dest)))
    }

    /// Garbage collection, as `burrow gc` (`grace` in milliseconds); the counts as JSON.
    #[napi]
    pub fn gc<'env>(
        &self,
        env: &'env Env,
        keep_last: Option<u32>,
        grace_ms: f64,
    ) -> Result<Object<'env>> {
        if !(grace_ms.is_finite() && (0.0..1e12).contains(&grace_ms)) {
            return Err(reject(burrow_embed::invalid(format!(
                "graceMs must be a non-negative number of milliseconds, got {grace_ms}"
            ))));
        }
        let grace = Duration::from_secs_f64(grace_ms / 1000.0);
        let core = self.core.clone();
        run(env, move || core.gc(keep_last.map(|k| k as usize), grace))
    }

    /// The store's consistency check, as `burrow fsck`; the report as JSON.
    #[napi]
    pub fn fsck<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.fsck())
    }

    /// Benchmark baseline: `n` reads of `path` through the Rust library in a loop, without
    /// JavaScript in between; the total in seconds.
    #[napi]
    pub fn bench_read<'env>(
        &self,
        env: &'env Env,
        id: String,
        path: String,
        n: u32,
    ) -> Result<Object<'env>> {
        let core = self.core.clone();
        run(env, move || core.bench_read(&id, &path, n as usize))
    }
}
