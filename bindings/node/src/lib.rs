//! The native half of the npm package `burrow-sandbox` (a Node-API addon).
//!
//! One class, `Core`, wraps a `burrow_embed::Core` (the same library the CLI, the HTTP API,
//! the worker and the Python package use: nothing is implemented twice). Every call returns at
//! once and runs its work on a thread of the addon's own pool, never on the event loop's
//! thread and never on libuv's four shared threads (a long shell call must not stall the
//! embedding program's file and DNS work). Its answer comes back through one threadsafe
//! function per store (`Core.attach`): the JavaScript side (index.js) passes a ticket with
//! each call and settles the promise it made for that ticket when the answer arrives, so a
//! call costs one hop to the pool and one back, with nothing made or torn down per call. The
//! threadsafe function does not keep node's event loop alive on its own; index.js holds it
//! (`Core.hold`) while calls are in flight. Calls that make a version are serialised per
//! session, so concurrent calls on one session queue instead of conflicting. Structured
//! results cross as JSON text (the CLI's `--json` shapes), bytes as `Buffer`s. A failure
//! answers `[Class] message`, where `Class` names one of the package's error classes
//! (errors.js), which the JavaScript side throws.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_embed::{Failure, NewSession, Res};
use napi::bindgen_prelude::{Buffer, FnArgs, Function, Object, ToNapiValue, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Error, Result, Status, sys};
use napi_derive::napi;

/// A failure as the text the JavaScript side turns into its error class.
fn failure_text(f: &Failure) -> String {
    format!("[{}] {}", f.class, f.message)
}

/// A failure as an Error thrown at once (arguments refused before any work).
fn reject(f: Failure) -> Error {
    Error::new(Status::GenericFailure, failure_text(&f))
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

/// Runs `work`, turning a panic into a failure: every call must be answered (an unanswered
/// one would hang its caller).
fn guarded<T>(work: impl FnOnce() -> Res<T>) -> Res<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| {
        Err(Failure {
            class: "BurrowError",
            message: "the call panicked; the session is unchanged".into(),
        })
    })
}

type Settle<J> = Box<dyn FnOnce(Env) -> Result<J> + Send>;

/// A promise of `work`'s result, run on the pool (for `open`, before there is a `Core` to
/// answer through); `to_js` makes the value on the JS thread.
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
    pool().spawn_blocking(move || match guarded(work) {
        Ok(v) => deferred.resolve(Box::new(move |_| Ok(to_js(v)))),
        Err(f) => deferred.reject(reject(f)),
    });
    Ok(promise)
}

fn milliseconds(ms: Option<f64>) -> Result<Option<Duration>> {
    burrow_embed::duration(ms, "timeoutMs", "milliseconds", 1000.0).map_err(reject)
}

/// What a call answers, made into its JavaScript value on the JS thread.
pub enum Answer {
    Unit,
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    Texts(Vec<String>),
    Sh(ShOutcome),
    Diff(DiffOutcome),
}

impl ToNapiValue for Answer {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: called by napi on the JS thread with its env, as each arm's own impl is.
        unsafe {
            match val {
                Answer::Unit => <()>::to_napi_value(env, ()),
                Answer::Int(v) => i64::to_napi_value(env, v),
                Answer::Float(v) => f64::to_napi_value(env, v),
                Answer::Text(v) => String::to_napi_value(env, v),
                Answer::Bytes(v) => Buffer::to_napi_value(env, Buffer::from(v)),
                Answer::Texts(v) => Vec::<String>::to_napi_value(env, v),
                Answer::Sh(v) => ShOutcome::to_napi_value(env, v),
                Answer::Diff(v) => DiffOutcome::to_napi_value(env, v),
            }
        }
    }
}

/// What the settle function receives: the call's ticket, its answer, its failure's text.
type Settled = (u32, Answer, Option<String>);
/// The store's answer channel: the tuple spread as three arguments, not called back with an
/// error argument first (`CalleeHandled` false), weak (it does not keep the event loop alive
/// unless held).
type Settler = ThreadsafeFunction<Settled, Unknown<'static>, FnArgs<Settled>, Status, false, true>;

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
    /// Deterministic calls, which `replay` runs again with identical results.
    pub deterministic: Option<bool>,
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
    settle: Arc<Mutex<Option<Settler>>>,
}

impl Core {
    /// Runs `work` on the pool and answers ticket `ticket` through the settle function.
    fn submit<T: Send + 'static>(
        &self,
        ticket: u32,
        work: impl FnOnce(&burrow_embed::Core) -> Res<T> + Send + 'static,
        answer: impl FnOnce(T) -> Answer + Send + 'static,
    ) {
        let core = self.core.clone();
        let settle = self.settle.clone();
        pool().spawn_blocking(move || {
            let settled = match guarded(|| work(&core)) {
                Ok(v) => (ticket, answer(v), None),
                Err(f) => (ticket, Answer::Unit, Some(failure_text(&f))),
            };
            let settle = settle.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = settle.as_ref() {
                s.call(settled, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
    }
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
            settle: Arc::new(Mutex::new(None)),
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

    /// Sets the function every call of this store is answered through:
    /// `settle(ticket, answer, failure)`.
    #[napi]
    pub fn attach(&self, settle: Function<'_, FnArgs<Settled>, Unknown<'static>>) -> Result<()> {
        let tsfn: Settler = settle
            .build_threadsafe_function::<Settled>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(|ctx| Ok(FnArgs::from(ctx.value)))?;
        *self.settle.lock().unwrap_or_else(|e| e.into_inner()) = Some(tsfn);
        Ok(())
    }

    /// Keeps node's event loop alive while calls are in flight (`true`), or lets it end.
    #[napi]
    #[allow(deprecated)] // napi-rs keeps refer/unref for exactly this (a weak function held)
    pub fn hold(&self, env: &Env, on: bool) -> Result<()> {
        let mut settle = self.settle.lock().unwrap_or_else(|e| e.into_inner());
        match settle.as_mut() {
            Some(s) if on => s.refer(env),
            Some(s) => s.unref(env),
            None => Ok(()),
        }
    }

    /// Creates a session; answers its info as JSON.
    #[napi]
    pub fn create(&self, ticket: u32, options: NewSessionOptions) -> Result<()> {
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
            cpu_budget: None,
            deterministic: options.deterministic.unwrap_or(false),
        };
        self.submit(ticket, move |c| c.create(new), Answer::Text);
        Ok(())
    }

    /// The id a session key (id, unique id prefix or name) designates.
    #[napi]
    pub fn resolve(&self, ticket: u32, key: String) {
        self.submit(ticket, move |c| c.resolve(&key), Answer::Text);
    }

    /// A session's info as JSON.
    #[napi]
    pub fn info(&self, ticket: u32, id: String) {
        self.submit(ticket, move |c| c.info(&id), Answer::Text);
    }

    /// Every session's info, as a JSON array.
    #[napi]
    pub fn list(&self, ticket: u32) {
        self.submit(ticket, move |c| c.list(), Answer::Text);
    }

    /// Forks a session `n` times; the new ids.
    #[napi]
    pub fn fork(&self, ticket: u32, id: String, n: u32) {
        self.submit(ticket, move |c| c.fork(&id, n as usize), Answer::Texts);
    }

    #[napi]
    pub fn delete(&self, ticket: u32, id: String) {
        self.submit(ticket, move |c| c.delete(&id), |()| Answer::Unit);
    }

    /// A shell command as one version.
    #[napi]
    pub fn sh(
        &self,
        ticket: u32,
        id: String,
        command: String,
        stdin: Option<Buffer>,
        timeout_ms: Option<f64>,
    ) -> Result<()> {
        let timeout = milliseconds(timeout_ms)?;
        let stdin: Vec<u8> = stdin.map(|b| b.to_vec()).unwrap_or_default();
        self.submit(
            ticket,
            move |c| {
                let limits = burrow_embed::CallLimits {
                    timeout,
                    ..Default::default()
                };
                c.sh(&id, &command, &stdin, limits)
            },
            |r| {
                Answer::Sh(ShOutcome {
                    exit_code: r.exit_code,
                    stdout: r.stdout.into(),
                    stderr: r.stderr.into(),
                    version_before: r.version_before,
                    version_after: r.version_after,
                })
            },
        );
        Ok(())
    }

    /// A file's bytes at the session's head (no version is made).
    #[napi]
    pub fn read(&self, ticket: u32, id: String, path: String) {
        self.submit(ticket, move |c| c.read(&id, &path), Answer::Bytes);
    }

    /// Writes a file (parents created) as one version; the new version.
    #[napi]
    pub fn write(&self, ticket: u32, id: String, path: String, data: Buffer) {
        let data = data.to_vec();
        self.submit(ticket, move |c| c.write(&id, &path, &data), Answer::Int);
    }

    /// One tool call of a family as one version; the tool output as JSON.
    #[napi]
    pub fn call(&self, ticket: u32, id: String, family: String, tool: String, input: String) {
        self.submit(
            ticket,
            move |c| c.call(&id, &family, &tool, &input),
            Answer::Text,
        );
    }

    /// Runs a Messages API `tool_use` block (JSON) and answers its `tool_result` block (JSON);
    /// the tool runs in `family` when it has the tool, else in the family that does.
    #[napi]
    pub fn tool_use(&self, ticket: u32, id: String, family: String, block: String) {
        self.submit(
            ticket,
            move |c| c.tool_use(&id, &family, &block),
            Answer::Text,
        );
    }

    /// The version a key designates: a session's head (id, prefix or name), `42` or `v42`.
    #[napi]
    pub fn version_of(&self, ticket: u32, key: String) {
        self.submit(ticket, move |c| c.version_of(&key), Answer::Int);
    }

    /// Changes between two keys (sessions or versions) and their unified diff; `all`
    /// includes the system area (/tmp, /memories, the shell's state).
    #[napi]
    pub fn diff(&self, ticket: u32, a: String, b: String, all: bool) {
        self.submit(
            ticket,
            move |c| {
                let (va, vb, changes) = c.diff(&a, &b, all)?;
                // The patch between the two versions just resolved, not the keys' heads again.
                let patch = c.patch(&format!("v{va}"), &format!("v{vb}"), all)?;
                Ok(DiffOutcome {
                    a: va,
                    b: vb,
                    changes,
                    patch,
                })
            },
            Answer::Diff,
        );
    }

    #[napi]
    pub fn merge(
        &self,
        ticket: u32,
        source: String,
        into: Option<String>,
        base: Option<String>,
        no_commit: bool,
    ) {
        self.submit(
            ticket,
            move |c| c.merge(&source, into.as_deref(), base.as_deref(), no_commit),
            Answer::Text,
        );
    }

    #[napi]
    pub fn replay(
        &self,
        ticket: u32,
        session: String,
        from_version: Option<String>,
        into: Option<String>,
    ) {
        self.submit(
            ticket,
            move |c| c.replay(&session, from_version.as_deref(), into.as_deref()),
            Answer::Text,
        );
    }

    #[napi]
    pub fn undo(&self, ticket: u32, id: String) {
        self.submit(ticket, move |c| c.undo(&id), Answer::Int);
    }

    #[napi]
    pub fn checkout(&self, ticket: u32, id: String, version: String) {
        self.submit(ticket, move |c| c.checkout(&id, &version), Answer::Int);
    }

    #[napi]
    pub fn label(&self, ticket: u32, id: String, name: String) {
        self.submit(ticket, move |c| c.label(&id, &name), Answer::Int);
    }

    /// The session's versions, newest first (JSON array, `burrow history --json` rows).
    #[napi]
    pub fn history(&self, ticket: u32, id: String, limit: u32) {
        self.submit(
            ticket,
            move |c| c.history(&id, limit as usize),
            Answer::Text,
        );
    }

    /// The session's events, oldest first (JSON array, `burrow log --json` rows).
    #[napi]
    pub fn log(&self, ticket: u32, id: String, after: i64, limit: u32, kind: Option<String>) {
        self.submit(
            ticket,
            move |c| c.log(&id, after, limit as usize, kind.as_deref()),
            Answer::Text,
        );
    }

    /// Exports the session's tree to a host directory (or a `.tar` file); the counts as JSON.
    #[napi]
    pub fn export(&self, ticket: u32, id: String, dest: String) {
        self.submit(
            ticket,
            move |c| c.export(&id, std::path::Path::new(&dest)),
            Answer::Text,
        );
    }

    /// Garbage collection, as `burrow gc` (`grace` in milliseconds); the counts as JSON.
    #[napi]
    pub fn gc(&self, ticket: u32, keep_last: Option<u32>, grace_ms: f64) -> Result<()> {
        if !(grace_ms.is_finite() && (0.0..1e12).contains(&grace_ms)) {
            return Err(reject(burrow_embed::invalid(format!(
                "graceMs must be a non-negative number of milliseconds, got {grace_ms}"
            ))));
        }
        let grace = Duration::from_secs_f64(grace_ms / 1000.0);
        self.submit(
            ticket,
            move |c| c.gc(keep_last.map(|k| k as usize), grace),
            Answer::Text,
        );
        Ok(())
    }

    /// The store's consistency check, as `burrow fsck`; the report as JSON.
    #[napi]
    pub fn fsck(&self, ticket: u32) {
        self.submit(ticket, move |c| c.fsck(), Answer::Text);
    }

    /// Benchmark baseline: `n` reads of `path` through the Rust library in a loop, without
    /// JavaScript in between; the total in seconds.
    #[napi]
    pub fn bench_read(&self, ticket: u32, id: String, path: String, n: u32) {
        self.submit(
            ticket,
            move |c| c.bench_read(&id, &path, n as usize),
            Answer::Float,
        );
    }
}
