//! `burrow:sandbox/process` (wit/sandbox/process.wit): a program run by burrow — in practice
//! the shell — starts another WebAssembly program of the sandbox, as a shell forks and execs a
//! command it found on PATH. The child shares the caller's transaction, mounts, limits and the
//! deadline of the whole tool call, and gets its own instance, memory, argv, environment,
//! working directory and stdin. `run` runs it to its end and hands its output back whole;
//! `start` runs it alongside its caller on a thread of its own, its stdin and output bounded
//! pipes (`running.rs`), which is how the shell streams a pipeline's stages and its `.wasm`
//! programs.
//!
//! A child that exits (any code) returns to its caller. A child that traps, times out or hits
//! a limit ends the whole call with that error, so the call is rolled back as if the caller had
//! failed itself: a tool call is one transaction, never half-applied.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Instant;

use wasmtime::component::{HasSelf, Linker};

use crate::engine::Program as Loaded;
use crate::run::{RunError, RunOptions, RunState};

mod running;

pub use running::Running;
pub(crate) use running::{BrokenPipe, Pipes};

wasmtime::component::bindgen!({
    path: "../wit/sandbox",
    world: "burrow:sandbox/shell",
    imports: { default: trappable },
    with: { "burrow:sandbox/process.running": Running },
});

use burrow::sandbox::process::{Command, Exited, Fed, Program, SpawnError};
use wasmtime::component::Resource;

/// How deep programs may start programs (the shell itself is depth 0).
pub const MAX_DEPTH: u32 = 8;

/// How many programs one call may run alongside their callers at once (streaming stages).
pub const MAX_STAGES: usize = 4;

/// The largest program a guest may start. Compiling is not interruptible by the call's
/// deadline, so the size that reaches Cranelift is bounded (real CLI tools are a few MiB).
pub const MAX_PROGRAM_BYTES: usize = 32 << 20;

/// A child's failure that ends the whole call, carried through the caller's trap.
#[derive(Debug)]
pub(crate) struct ChildFailed(Mutex<Option<RunError>>);

impl ChildFailed {
    /// The child's error (taken once; later takes report a generic trap).
    pub(crate) fn take(&self) -> RunError {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| RunError::Trap("a program started by the shell failed".into()))
    }
}

impl std::fmt::Display for ChildFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => write!(f, "{e}"),
            None => f.write_str("a program started by the shell failed"),
        }
    }
}

impl std::error::Error for ChildFailed {}

pub(crate) fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    burrow::sandbox::process::add_to_linker::<RunState, HasSelf<RunState>>(linker, |s| s)
}

/// The program a command names, loaded, and the options it runs with; or why it cannot start.
type Prepared = Result<Result<(Loaded, RunOptions, u32), SpawnError>, wasmtime::Error>;

impl RunState {
    fn prepare(&self, cmd: Command) -> Prepared {
        let parent = &self.parent;
        let depth = parent.depth + 1;
        if depth > MAX_DEPTH {
            return Ok(Err(SpawnError::TooDeep(MAX_DEPTH)));
        }
        let loaded = match &cmd.program {
            Program::Bytes(wasm) => {
                if wasm.len() > MAX_PROGRAM_BYTES {
                    return Ok(Err(SpawnError::NotExecutable(format!(
                        "program is {} MiB, larger than the {} MiB limit",
                        wasm.len() >> 20,
                        MAX_PROGRAM_BYTES >> 20
                    ))));
                }
                parent.engine.load(wasm)
            }
            Program::Installed(path) => match installed_path(&parent.mounts, path) {
                Some((_, len)) if len > MAX_PROGRAM_BYTES as u64 => {
                    return Ok(Err(SpawnError::NotExecutable(format!(
                        "program is larger than the {} MiB limit",
                        MAX_PROGRAM_BYTES >> 20
                    ))));
                }
                Some((host, _)) => parent.engine.load_installed(&host),
                None => {
                    return Ok(Err(SpawnError::NotExecutable(format!(
                        "{path} is not in a read-only program directory of the sandbox"
                    ))));
                }
            },
            Program::Caller => Ok(parent.program.clone()),
        };
        let program = match loaded {
            Ok(p) => p,
            Err(RunError::Load(why)) => return Ok(Err(SpawnError::NotExecutable(why))),
            Err(e) => return Err(child_failed(e)),
        };
        if Instant::now() >= parent.deadline {
            return Err(child_failed(RunError::Timeout(parent.limits.timeout)));
        }
        let mut limits = parent.child_limits();
        // Everything the child writes goes on to the caller, which has its own capture limit;
        // the total output limit still ends a flood.
        limits.capture = usize::try_from(limits.output).unwrap_or(usize::MAX);
        let mut argv = cmd.argv.into_iter();
        let opts = RunOptions {
            program_name: argv.next().unwrap_or_default(),
            args: argv.collect(),
            // The run sets PWD from `cwd` itself.
            env: cmd.env.into_iter().filter(|(k, _)| k != "PWD").collect(),
            cwd: Some(cmd.cwd),
            stdin: cmd.stdin,
            limits,
            mounts: parent.mounts.clone(),
            preopens: parent.preopens.clone(),
            shell: parent.shell.clone(),
        };
        tracing::debug!(program = %program.hash, depth, "starting a program from a program");
        Ok(Ok((program, opts, depth)))
    }
}

impl burrow::sandbox::process::Host for RunState {
    fn run(&mut self, cmd: Command) -> wasmtime::Result<Result<Exited, SpawnError>> {
        let (program, opts, depth) = match self.prepare(cmd)? {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        let parent = &self.parent;
        match parent.engine.run_shared(
            &program,
            &parent.txn,
            &opts,
            parent.deadline,
            depth,
            &parent.egress,
            None,
            &parent.stages,
        ) {
            Ok(report) => Ok(Ok(Exited {
                exit_code: report.exit_code,
                stdout: report.stdout,
                stderr: report.stderr,
                order: report.order,
            })),
            Err(e) => Err(child_failed(e)),
        }
    }

    fn start(&mut self, cmd: Command) -> wasmtime::Result<Result<Resource<Running>, SpawnError>> {
        let (program, mut opts, depth) = match self.prepare(cmd)? {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        opts.stdin.clear();
        let parent = &self.parent;
        // A bounded number at once: each is a thread and an instance (a server's pool of
        // instances is shared by all its calls). Past it the caller buffers, as before.
        let running = parent.stages.fetch_add(1, Ordering::SeqCst);
        if running >= MAX_STAGES {
            parent.stages.fetch_sub(1, Ordering::SeqCst);
            return Ok(Err(SpawnError::Busy(MAX_STAGES as u32)));
        }
        let pipes = running::Pipes::new(parent.deadline, parent.limits.timeout);
        let (engine, txn, deadline, egress, stages) = (
            parent.engine.clone(),
            parent.txn.clone(),
            parent.deadline,
            parent.egress.clone(),
            parent.stages.clone(),
        );
        let theirs = pipes.clone();
        let thread = std::thread::Builder::new()
            .name("burrow-stage".into())
            .stack_size(crate::session::CALL_STACK)
            .spawn(move || {
                let r = engine.run_shared(
                    &program,
                    &txn,
                    &opts,
                    deadline,
                    depth,
                    &egress,
                    Some(&theirs),
                    &stages,
                );
                // Its slot is free before its caller can see it has ended.
                stages.fetch_sub(1, Ordering::SeqCst);
                theirs.finish(r.map(|report| report.exit_code));
            });
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                parent.stages.fetch_sub(1, Ordering::SeqCst);
                return Err(child_failed(RunError::Host(format!(
                    "cannot start a thread: {e}"
                ))));
            }
        };
        let handle = self.table.push(Running {
            pipes,
            thread: Some(thread),
        })?;
        Ok(Ok(handle))
    }
}

impl burrow::sandbox::process::HostRunning for RunState {
    fn feed(&mut self, r: Resource<Running>, data: Vec<u8>) -> wasmtime::Result<Fed> {
        let pipes = self.table.get(&r)?.pipes.clone();
        let (taken, closed, output) = pipes.feed(data).map_err(child_failed)?;
        Ok(Fed {
            taken: taken as u32,
            closed,
            output,
        })
    }

    fn close_stdin(&mut self, r: Resource<Running>) -> wasmtime::Result<()> {
        self.table.get(&r)?.pipes.close_stdin();
        Ok(())
    }

    fn close_output(&mut self, r: Resource<Running>) -> wasmtime::Result<()> {
        self.table.get(&r)?.pipes.close_output();
        Ok(())
    }

    fn drain(&mut self, r: Resource<Running>) -> wasmtime::Result<Option<Vec<(u8, Vec<u8>)>>> {
        let pipes = self.table.get(&r)?.pipes.clone();
        pipes.drain().map_err(child_failed)
    }

    fn wait(&mut self, r: Resource<Running>) -> wasmtime::Result<i32> {
        let pipes = self.table.get(&r)?.pipes.clone();
        pipes.wait_exit().map_err(child_failed)
    }

    fn drop(&mut self, r: Resource<Running>) -> wasmtime::Result<()> {
        // Ends its pipes and joins its thread.
        drop(self.table.delete(r)?);
        Ok(())
    }
}

/// The host file behind `guest` and its size, when it lies inside one of the run's read-only host
/// mounts (a plain absolute path: no `.`, `..` or empty components). The file is opened by
/// the host directly, so the path is checked to stay under the mount's directory, and a
/// symlink inside a mount is not followed out of it.
fn installed_path(
    mounts: &[crate::wasi_fs::Mount],
    guest: &str,
) -> Option<(std::path::PathBuf, u64)> {
    let rel = mounts.iter().find_map(|m| {
        guest
            .strip_prefix(m.guest.trim_end_matches('/'))
            .and_then(|r| r.strip_prefix('/'))
            .map(|r| (m, r))
    });
    let (mount, rel) = rel?;
    if rel
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return None;
    }
    let host = mount.host.join(rel);
    let real = host.canonicalize().ok()?;
    let root = mount.host.canonicalize().ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    (real.starts_with(&root) && meta.is_file()).then_some((real, meta.len()))
}

pub(crate) fn child_failed(e: RunError) -> wasmtime::Error {
    wasmtime::Error::new(ChildFailed(Mutex::new(Some(e))))
}
