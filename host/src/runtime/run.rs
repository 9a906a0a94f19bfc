//! One run of a component: instantiate, call `wasi:cli/run`, capture output and exit code,
//! and decide the transaction's fate. A normal exit (any exit code) keeps the transaction's
//! changes; a trap, timeout or limit rolls them back. The host process is never at risk.
//!
//! A run with a CPU budget ([`crate::limits::CpuBudget`]) runs on the metered engine and draws
//! fuel from its call's meter, which every run of the call shares, nested ones included. A
//! nested run starts while its caller's store is borrowed (inside the caller's host call), so
//! no run can reach another's fuel: each takes what the call has left when it starts, and at
//! each epoch tick (10 ms) and at its end puts what it used on the meter and goes on with what
//! the call has left then. Runs of one call that execute at once (streaming stages) may
//! together pass the budget by what they use within one tick; the meter counts it all, and the
//! call fails at its end if the total passed the budget, so no call over its budget commits.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use burrow_store::{Store, Txn, VersionId};
use wasmtime::AsContextMut as _;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_io::bytes::Bytes;

use crate::engine::{EPOCH_TICK, Engine, Program};
use crate::limits::{Limiter, Limits};
use crate::output::Capture;
use crate::wasi_fs::{FsState, SharedTxn, WasiFsView};

/// The store data of one run.
pub struct RunState {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    fs: FsState,
    http: wasmtime_wasi_http::WasiHttpCtx,
    /// The call's egress (policy, limits, audit records), shared with the programs it starts.
    egress: crate::net::Egress,
    limiter: Limiter,
    /// The fuel this run's store was last given (a metered run): what it used since is that
    /// minus what it has left.
    fuel_given: u64,
    /// What a program started by this one (`burrow:sandbox/process`) inherits.
    pub(crate) parent: Parent,
}

/// The context a run hands to the programs it starts: the same engine, transaction, mounts
/// and limits, the wall-clock deadline of the whole call, and how deep the nesting is.
#[derive(Clone)]
pub(crate) struct Parent {
    pub engine: Engine,
    /// The program running (what `program::caller` starts again).
    pub program: Program,
    pub txn: SharedTxn,
    pub mounts: Vec<crate::wasi_fs::Mount>,
    pub preopens: Vec<crate::wasi_fs::Preopen>,
    pub limits: Limits,
    pub deadline: Instant,
    pub depth: u32,
    pub egress: crate::net::Egress,
    /// Programs of this call running alongside their callers now (streaming stages).
    pub stages: Arc<std::sync::atomic::AtomicUsize>,
    /// The session's shell, which runs what a guest asks `/dev/burrow` to spawn.
    pub shell: Option<Program>,
    /// A deterministic call: this run's seed, from which the programs it starts get theirs.
    pub det: Option<crate::determinism::RunDeterminism>,
}

impl Parent {
    /// The limits of a program this run starts: its own, and in a deterministic call the
    /// next seed of this run's programs.
    pub(crate) fn child_limits(&self) -> Limits {
        let mut limits = self.limits.clone();
        if let Some(d) = &self.det {
            limits.det = Some(d.child());
        }
        limits
    }
}

impl RunState {
    pub(crate) fn fs_view(&mut self) -> WasiFsView<'_> {
        WasiFsView {
            table: &mut self.table,
            fs: &mut self.fs,
        }
    }
}

impl wasmtime_wasi_http::WasiHttpView for RunState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// What to run with: arguments, environment, working directory, stdin, limits. The host's own
/// environment is never passed through.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// argv[1..]; argv[0] is `program_name`.
    pub args: Vec<String>,
    pub program_name: String,
    pub env: Vec<(String, String)>,
    /// Guest working directory (`PWD`), e.g. `/workspace/src`. Default `/workspace`.
    pub cwd: Option<String>,
    pub stdin: Vec<u8>,
    pub limits: Limits,
    /// Read-only host directories the guest may see (nothing else of the host).
    pub mounts: Vec<crate::wasi_fs::Mount>,
    /// Directories of the session preopened under names of the caller's choosing; when any
    /// are given the guest sees only these, not the composed root (see
    /// [`crate::wasi_fs::Preopen`]).
    pub preopens: Vec<crate::wasi_fs::Preopen>,
    /// The session's shell component, which runs the commands a guest asks `/dev/burrow` to
    /// start (CPython's `subprocess`); passed on to the programs this one starts. None: such
    /// requests are refused.
    pub shell: Option<Program>,
}

/// The outcome of a run that ended normally (any exit code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub exit_code: i32,
    /// The call's network requests (allowed and denied), for the audit log.
    pub net: Vec<crate::net::NetRecord>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// stdout and stderr interleaved in the order written.
    pub merged: Vec<u8>,
    pub stdout_dropped: u64,
    pub stderr_dropped: u64,
    pub merged_dropped: u64,
    pub duration: Duration,
    /// Runs of (1 = stdout / 2 = stderr, bytes) in write order; recorded only for programs
    /// started through `burrow:sandbox/process`.
    pub order: Vec<(u8, u32)>,
    /// With a CPU budget: the fuel the call has used so far, this run's included.
    pub fuel: Option<u64>,
}

/// A run in a workspace, committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    pub report: RunReport,
    pub version_before: VersionId,
    /// Equal to `version_before` when the run changed nothing.
    pub version_after: VersionId,
}

/// Why a run did not complete. Every variant leaves the workspace as it was.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("timeout: the run exceeded its wall-clock limit of {0:?}")]
    Timeout(Duration),
    #[error("cpu budget: the call used more than its budget of {0} fuel units")]
    CpuBudget(u64),
    #[error("memory limit: the guest tried to grow memory beyond {0} bytes")]
    Memory(usize),
    #[error("table limit: the guest tried to grow a table beyond {0} elements")]
    Table(usize),
    #[error("output limit: the guest wrote more than {0} bytes to stdout and stderr")]
    Output(u64),
    #[error("workspace {0}")]
    Quota(String),
    #[error("the guest trapped: {0}")]
    Trap(String),
    #[error("cannot load component: {0}")]
    Load(String),
    #[error(transparent)]
    Store(#[from] burrow_store::Error),
    #[error("host error: {0}")]
    Host(String),
}

/// Puts what a metered run used since it was last given fuel on its call's meter.
fn settle(
    cx: &mut wasmtime::StoreContextMut<'_, RunState>,
    cpu: &crate::limits::CpuBudget,
) -> wasmtime::Result<()> {
    let left = cx.get_fuel()?;
    let given = std::mem::replace(&mut cx.data_mut().fuel_given, left);
    cpu.spend(given.saturating_sub(left));
    Ok(())
}

/// How much of a trapped guest's stderr (in characters) its trap error quotes.
const TRAP_STDERR_TAIL: usize = 2000;

/// Points a run's stdout and stderr, and `/dev/stdout` and `/dev/stderr`, at `out` and `err`
/// (`/dev/stdin` reads `stdin`).
fn wire_output<O>(
    b: &mut wasmtime_wasi::WasiCtxBuilder,
    fs: &mut FsState,
    stdin: Bytes,
    out: O,
    err: O,
) where
    O: wasmtime_wasi::cli::StdoutStream
        + wasmtime_wasi_io::streams::OutputStream
        + Clone
        + Sync
        + 'static,
{
    b.stdout(out.clone());
    b.stderr(err.clone());
    fs.set_stdio(crate::wasi_fs::Stdio {
        stdin,
        stdout: Box::new(move || Box::new(out.clone())),
        stderr: Box::new(move || Box::new(err.clone())),
    });
}

impl Engine {
    /// Runs `program` inside `txn`. On a normal exit returns the transaction (with the run's
    /// changes) and the report; on any failure the transaction is dropped, i.e. rolled back.
    pub fn run_txn(
        &self,
        program: &Program,
        txn: Txn,
        opts: &RunOptions,
    ) -> Result<(Txn, RunReport), RunError> {
        let shared = Arc::new(Mutex::new(txn));
        let deadline = Instant::now() + opts.limits.timeout;
        let egress = crate::net::Egress::new(
            opts.limits.network.clone(),
            opts.limits.net.clone(),
            opts.limits.egress.clone(),
        )
        .deterministic(opts.limits.det.clone());
        let stages = Arc::default();
        let result = self.run_shared(program, &shared, opts, deadline, 0, &egress, None, &stages);
        // Over its budget, the call fails whatever its runs reported (a program that ran out
        // may have been reported to its caller as a plain failure; runs at once may have
        // passed the budget together without one running out).
        let result = match &opts.limits.cpu {
            Some(cpu) if cpu.exceeded() => Err(RunError::CpuBudget(cpu.budget())),
            _ => result,
        };
        let mut txn = Arc::try_unwrap(shared)
            .map_err(|_| RunError::Host("transaction still shared after the run".into()))?
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        // One `net` event per request, written with the call's commit; a call rolled back
        // (timeout, trap, limit) loses its changes but keeps its requests on the record.
        let records = match &result {
            Ok(report) => report.net.clone(),
            Err(_) => {
                std::mem::take(&mut *egress.records().lock().unwrap_or_else(|p| p.into_inner()))
            }
        };
        for r in &records {
            if let Ok(data) = serde_json::to_string(r) {
                txn.add_event("net", &data);
            }
        }
        match result {
            Ok(report) => Ok((txn, report)),
            Err(e) => {
                if !records.is_empty()
                    && let Err(w) = txn.abort_keeping_events()
                {
                    tracing::warn!(error = %w, "could not record a rolled-back call's requests");
                }
                Err(e)
            }
        }
    }

    /// Runs `program` in a transaction shared with its caller (a program started through
    /// `burrow:sandbox/process` shares its parent's), ending by `deadline` at the latest.
    /// With `piped` (a program started as a streaming stage), stdin and the output are those
    /// pipes instead of `opts.stdin` and the capture.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_shared(
        &self,
        program: &Program,
        shared: &SharedTxn,
        opts: &RunOptions,
        deadline: Instant,
        depth: u32,
        egress: &crate::net::Egress,
        piped: Option<&std::sync::Arc<crate::process::Pipes>>,
        stages: &Arc<std::sync::atomic::AtomicUsize>,
    ) -> Result<RunReport, RunError> {
        let started = Instant::now();
        let limits = &opts.limits;
        if program.metered != self.is_metered() || limits.cpu.is_some() != self.is_metered() {
            return Err(RunError::Host(
                "a run with a CPU budget runs on the metered engine (Engine::for_limits), with \
                 a program loaded there, and a run without one on the unmetered engine"
                    .into(),
            ));
        }
        let capture = Capture::new(limits.capture, limits.output);
        if depth > 0 {
            capture.keep_order();
        }
        let mut b = WasiCtx::builder();
        let name = if opts.program_name.is_empty() {
            "main"
        } else {
            &opts.program_name
        };
        b.arg(name);
        for a in &opts.args {
            b.arg(a);
        }
        b.envs(&opts.env);
        let cwd = opts
            .cwd
            .clone()
            .unwrap_or_else(|| match opts.preopens.first() {
                // A run with its own preopens starts in the first of them, as wasmtime's does.
                Some(p) if p.guest.starts_with('/') => p.guest.clone(),
                Some(_) => "/".to_string(),
                None => crate::wasi_fs::WORKSPACE.to_string(),
            });
        b.env("PWD", &cwd);
        // `wasi:cli/environment.initial-cwd`. The wasi-libc of Rust 1.95 ignores it and starts
        // at "/", so guests that use relative paths chdir to $PWD first (burrow's own tools do).
        b.initial_cwd(&cwd);
        // One copy of stdin, shared by the pipe and `/dev/stdin`.
        let stdin = Bytes::from(opts.stdin.clone());
        let mut fs = FsState::new(shared.clone(), &opts.mounts, &opts.preopens)
            .map_err(|e| RunError::Host(e.to_string()))?;
        match piped {
            Some(p) => {
                b.stdin(p.stdin());
                wire_output(&mut b, &mut fs, stdin, p.output(1), p.output(2));
            }
            None => {
                b.stdin(wasmtime_wasi::p2::pipe::MemoryInputPipe::new(stdin.clone()));
                wire_output(&mut b, &mut fs, stdin, capture.pipe(0), capture.pipe(1));
            }
        }
        // A deterministic call: the run's clocks and generators from its seed.
        let det = limits.det.as_ref().map(|d| d.for_run());
        if let Some(d) = &det {
            d.configure(&mut b);
            fs.set_random(d.dev_random());
        }
        let quota_hit = fs.quota_hit.clone();
        let parent = Parent {
            engine: self.clone(),
            program: program.clone(),
            txn: shared.clone(),
            mounts: opts.mounts.clone(),
            preopens: opts.preopens.clone(),
            limits: limits.clone(),
            deadline,
            depth,
            egress: egress.clone(),
            stages: stages.clone(),
            shell: opts.shell.clone(),
            det,
        };
        fs.set_control(Arc::new(crate::control::Services {
            parent: parent.clone(),
        }));
        let state = RunState {
            wasi: b.build(),
            table: ResourceTable::new(),
            fs,
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            egress: egress.clone(),
            limiter: Limiter {
                memory: limits.memory,
                table_elements: limits.table_elements,
                memory_hit: false,
                table_hit: false,
            },
            fuel_given: 0,
            parent,
        };
        let mut store = wasmtime::Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        match &limits.cpu {
            None => {
                let left = deadline.saturating_duration_since(started);
                let ticks = (left.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
                store.set_epoch_deadline(ticks);
                store.epoch_deadline_trap();
            }
            Some(cpu) => {
                // What the call has left; nothing left traps at the first instruction.
                let given = cpu.remaining();
                store
                    .set_fuel(given)
                    .map_err(|e| RunError::Host(format!("{e:#}")))?;
                store.data_mut().fuel_given = given;
                let cpu = cpu.clone();
                store.epoch_deadline_callback(move |mut cx| {
                    if Instant::now() >= deadline {
                        return Ok(wasmtime::UpdateDeadline::Interrupt);
                    }
                    settle(&mut cx, &cpu)?;
                    let now = cpu.remaining();
                    cx.set_fuel(now)?;
                    cx.data_mut().fuel_given = now;
                    Ok(wasmtime::UpdateDeadline::Continue(1))
                });
                store.set_epoch_deadline(1);
            }
        }

        let outcome = program
            .pre
            .instantiate(&mut store)
            .and_then(|cmd| cmd.wasi_cli_run().call_run(&mut store));
        if let Some(cpu) = &limits.cpu {
            settle(&mut store.as_context_mut(), cpu)
                .map_err(|e| RunError::Host(format!("{e:#}")))?;
        }
        let exit_code = match outcome {
            Ok(Ok(())) => 0,
            Ok(Err(())) => 1,
            Err(e) => {
                // The store failed under a filesystem call: the call fails with its error.
                let e = match e.downcast::<crate::wasi_fs::StoreFailed>() {
                    Ok(crate::wasi_fs::StoreFailed(failure)) => {
                        return Err(RunError::Store(failure));
                    }
                    Err(e) => e,
                };
                if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
                    exit.0
                } else if e.downcast_ref::<crate::process::BrokenPipe>().is_some() {
                    // It wrote after its reader had gone: killed by SIGPIPE, as a shell reports.
                    141
                } else if let Some(nested) = e.downcast_ref::<crate::process::ChildFailed>() {
                    // A program this one started failed in a way that ends the whole call.
                    return Err(nested.take());
                } else {
                    let lim = store.data().limiter.memory_hit;
                    let tab = store.data().limiter.table_hit;
                    let trap = e.downcast_ref::<wasmtime::Trap>();
                    return Err(
                        if let (Some(wasmtime::Trap::OutOfFuel), Some(cpu)) = (trap, &limits.cpu) {
                            cpu.ran_out();
                            RunError::CpuBudget(cpu.budget())
                        } else if matches!(trap, Some(wasmtime::Trap::Interrupt)) {
                            RunError::Timeout(limits.timeout)
                        } else if capture.over_limit() {
                            RunError::Output(limits.output)
                        } else if lim {
                            RunError::Memory(limits.memory)
                        } else if tab {
                            RunError::Table(limits.table_elements)
                        } else {
                            // The root cause ("wasm trap: call stack exhausted"), not the
                            // guest backtrace: that goes to the debug log.
                            {
                                tracing::debug!(error = format!("{e:?}"), "guest trapped");
                                let mut why = e.root_cause().to_string();
                                // A Rust guest's panic message comes just before its trap.
                                let (_, err, _) = capture.take();
                                let tail = String::from_utf8_lossy(&err.bytes()).into_owned();
                                let tail = tail.trim();
                                if !tail.is_empty() {
                                    let start = tail
                                        .char_indices()
                                        .rev()
                                        .nth(TRAP_STDERR_TAIL)
                                        .map_or(0, |(i, _)| i);
                                    why.push_str("; the guest's stderr ended with:\n");
                                    why.push_str(&tail[start..]);
                                }
                                RunError::Trap(why)
                            }
                        },
                    );
                }
            }
        };
        if let Some(q) = quota_hit.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(RunError::Quota(q));
        }
        if capture.over_limit() {
            return Err(RunError::Output(limits.output));
        }
        drop(store);
        let (out, err, merged) = capture.take();
        // Only the outermost run reports the call's requests (children share its records).
        let net = if depth == 0 {
            std::mem::take(&mut *egress.records().lock().unwrap_or_else(|p| p.into_inner()))
        } else {
            Vec::new()
        };
        Ok(RunReport {
            exit_code,
            net,
            stdout: out.bytes(),
            stderr: err.bytes(),
            merged: merged.bytes(),
            stdout_dropped: out.dropped,
            stderr_dropped: err.dropped,
            merged_dropped: merged.dropped,
            duration: started.elapsed(),
            order: capture.order(),
            fuel: limits.cpu.as_ref().map(crate::limits::CpuBudget::used),
        })
    }

    /// Runs `program` in a new transaction on `workspace` and commits it on a normal exit.
    pub fn run(
        &self,
        store: &Store,
        workspace: &str,
        program: &Program,
        opts: &RunOptions,
    ) -> Result<RunResult, RunError> {
        let mut txn = store.begin(workspace)?;
        let before = txn.base();
        txn.set_message(format!("run {}", opts.program_name));
        let (txn, report) = self.run_txn(program, txn, opts)?;
        let commit = txn.commit()?;
        Ok(RunResult {
            report,
            version_before: before,
            version_after: commit.version,
        })
    }
}
