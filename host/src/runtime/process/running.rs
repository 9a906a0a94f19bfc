//! A program running alongside its caller (`burrow:sandbox/process.start`): the stage of a
//! pipeline that streams. It runs on its own thread with its own store, in the caller's
//! transaction; its stdin and its output (stdout and stderr, in write order) are bounded pipes
//! shared with the caller, who feeds the one and drains the other. A full pipe makes its
//! writer wait and a reader that has gone makes the next write fail, as with kernel pipes:
//! the caller's write then meets SIGPIPE in the shell, and the program's ends it with status
//! 141. Every wait ends at the call's deadline.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wasmtime_wasi::cli::{IsTerminal, StdinStream, StdoutStream};
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::streams::{InputStream, OutputStream, StreamError, StreamResult};

use crate::run::RunError;

/// What each of the two pipes holds at most before its writer waits: a Linux pipe's size.
/// It decides more than speed: a writer that has more than this left to write when its
/// reader exits meets SIGPIPE (`seq 200000 | head -n 150000` reports 141 for seq under bash,
/// and here too), where a larger pipe would have taken the rest.
pub(crate) const PIPE_BYTES: usize = 64 << 10;

/// Runs of (1 stdout / 2 stderr, bytes) a program wrote, in write order.
pub(crate) type Output = Vec<(u8, Vec<u8>)>;

/// The caller is woken for half a pipe of room or of output, not for every write.
const HALF: usize = PIPE_BYTES / 2;

/// The program died of SIGPIPE: it wrote after its reader had gone. Carried through its trap
/// and turned into exit status 141 (128 + SIGPIPE), as a shell reports a killed process.
#[derive(Debug)]
pub(crate) struct BrokenPipe;

impl std::fmt::Display for BrokenPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("write to a pipe whose reader has exited (SIGPIPE)")
    }
}

impl std::error::Error for BrokenPipe {}

/// The state both ends of a running program's pipes share.
#[derive(Default)]
struct State {
    stdin: Fifo,
    /// The caller wrote its last byte (`close-stdin`, `wait` or a drop).
    stdin_ended: bool,
    /// Runs of (1 stdout / 2 stderr, bytes), in write order.
    output: VecDeque<(u8, Vec<u8>)>,
    output_bytes: usize,
    /// The caller reads no more output.
    output_closed: bool,
    /// How the program ended, once it has.
    done: Option<Result<i32, RunError>>,
}

pub(crate) struct Pipes {
    state: Mutex<State>,
    changed: Condvar,
    deadline: Instant,
    /// The call's time limit, which the deadline ends (for the caller's timeout error).
    timeout: Duration,
}

impl Pipes {
    pub(crate) fn new(deadline: Instant, timeout: Duration) -> Arc<Pipes> {
        Arc::new(Pipes {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            deadline,
            timeout,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a change, until the deadline. False once the deadline has passed.
    fn wait<'a>(&self, g: MutexGuard<'a, State>) -> (MutexGuard<'a, State>, bool) {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (g, false);
        }
        let (g, _) = self
            .changed
            .wait_timeout(g, left)
            .unwrap_or_else(|p| p.into_inner());
        (g, true)
    }

    /// The caller's wait: until `ready` holds, the program fails (its error, taken) or the
    /// deadline passes (the call's timeout).
    fn wait_for<'a>(
        &'a self,
        mut g: MutexGuard<'a, State>,
        ready: impl Fn(&State) -> bool,
    ) -> Result<MutexGuard<'a, State>, RunError> {
        loop {
            if let Some(Err(_)) = &g.done {
                return Err(take_failure(&mut g));
            }
            if ready(&g) {
                return Ok(g);
            }
            let (next, in_time) = self.wait(g);
            g = next;
            if !in_time {
                return Err(RunError::Timeout(self.timeout));
            }
        }
    }

    /// Records how the program ended (its thread's last act).
    pub(crate) fn finish(&self, result: Result<i32, RunError>) {
        self.lock().done = Some(result);
        self.changed.notify_all();
    }

    /// The stream the program reads as stdin.
    pub(crate) fn stdin(self: &Arc<Self>) -> PipeIn {
        PipeIn(self.clone())
    }

    /// The stream the program writes as stdout (1) or stderr (2).
    pub(crate) fn output(self: &Arc<Self>, fd: u8) -> PipeOut {
        PipeOut {
            pipes: self.clone(),
            fd,
        }
    }

    /// The caller's write: takes what fits of `data` and whatever output is waiting. It
    /// waits (as a writer into a full pipe does) until half a pipe is free or at least as much
    /// as `data` needs, half a pipe of output is waiting, or the program has ended: returning
    /// on every small change would trade the pipe's bytes a few KiB at a time.
    pub(crate) fn feed(&self, data: Vec<u8>) -> Result<(usize, bool, Output), RunError> {
        let mut data = Bytes::from(data);
        let room = |g: &State| PIPE_BYTES.saturating_sub(g.stdin.len());
        let mut g = self.wait_for(self.lock(), |g| {
            g.done.is_some() || room(g) >= data.len().min(HALF) || g.output_bytes >= HALF
        })?;
        let closed = g.done.is_some();
        let taken = if closed { 0 } else { room(&g).min(data.len()) };
        data.truncate(taken);
        g.stdin.push(data);
        let output = take_output(&mut g);
        drop(g);
        self.changed.notify_all();
        Ok((taken, closed, output))
    }

    pub(crate) fn close_stdin(&self) {
        self.lock().stdin_ended = true;
        self.changed.notify_all();
    }

    pub(crate) fn close_output(&self) {
        let mut g = self.lock();
        g.output_closed = true;
        g.output.clear();
        g.output_bytes = 0;
        drop(g);
        self.changed.notify_all();
    }

    /// The next output, waiting for half a pipe of it or the program's end; None once the
    /// program has exited and all of it was handed back.
    pub(crate) fn drain(&self) -> Result<Option<Output>, RunError> {
        let mut g = self.wait_for(self.lock(), |g| g.output_bytes >= HALF || g.done.is_some())?;
        if g.output.is_empty() {
            return Ok(None);
        }
        let output = take_output(&mut g);
        drop(g);
        self.changed.notify_all();
        Ok(Some(output))
    }

    /// Ends stdin and the output (output nobody will drain must not hold the program up: a
    /// program still writing dies of SIGPIPE) and waits for the exit code.
    pub(crate) fn wait_exit(&self) -> Result<i32, RunError> {
        self.abandon();
        let g = self.wait_for(self.lock(), |g| g.done.is_some())?;
        match &g.done {
            Some(Ok(code)) => Ok(*code),
            _ => Err(RunError::Trap(
                "a program started by the shell failed".into(),
            )),
        }
    }

    /// The caller is gone: the program sees the end of its input and dies at its next write.
    pub(crate) fn abandon(&self) {
        let mut g = self.lock();
        g.stdin_ended = true;
        g.output_closed = true;
        g.output.clear();
        g.output_bytes = 0;
        drop(g);
        self.changed.notify_all();
    }
}

/// A byte queue of the pieces the caller fed (kept as they came, not copied), read from
/// the front.
#[derive(Default)]
struct Fifo {
    pieces: VecDeque<Bytes>,
    len: usize,
}

impl Fifo {
    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.pieces.push_back(piece);
        }
    }

    /// At most `n` bytes from the front: a piece, or the front part of one.
    fn take(&mut self, n: usize) -> Bytes {
        let Some(front) = self.pieces.front_mut() else {
            return Bytes::new();
        };
        let out = if n >= front.len() {
            self.pieces.pop_front().unwrap_or_default()
        } else {
            front.split_to(n)
        };
        self.len -= out.len();
        out
    }
}

fn take_output(g: &mut State) -> Output {
    g.output_bytes = 0;
    g.output.drain(..).collect()
}

/// The program's failure (taken once; later calls see a generic one).
fn take_failure(g: &mut State) -> RunError {
    match g.done.replace(Err(RunError::Trap(
        "a program started by the shell failed".into(),
    ))) {
        Some(Err(e)) => e,
        _ => RunError::Trap("a program started by the shell failed".into()),
    }
}

/// The program's stdin: what the caller fed, end-of-file once it has ended it.
#[derive(Clone)]
pub(crate) struct PipeIn(Arc<Pipes>);

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for PipeIn {
    async fn ready(&mut self) {
        // Blocks the program's thread (it has nothing else to do), until the deadline, after
        // which the program's next instructions meet the epoch trap.
        let mut g = self.0.lock();
        while g.stdin.is_empty() && !g.stdin_ended {
            let (next, in_time) = self.0.wait(g);
            g = next;
            if !in_time {
                return;
            }
        }
    }
}

impl InputStream for PipeIn {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let mut g = self.0.lock();
        if g.stdin.is_empty() {
            return if g.stdin_ended {
                Err(StreamError::Closed)
            } else {
                Ok(Bytes::new())
            };
        }
        let n = size.min(g.stdin.len());
        let before = g.stdin.len();
        let bytes = g.stdin.take(n);
        // The caller waits for half a pipe of room (or for all of it to be read).
        let woke =
            PIPE_BYTES - before < HALF && PIPE_BYTES - g.stdin.len() >= HALF || g.stdin.is_empty();
        drop(g);
        if woke {
            self.0.changed.notify_all();
        }
        Ok(bytes)
    }
}

impl IsTerminal for PipeIn {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for PipeIn {
    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncRead + Send + Sync> {
        // Only WASIp3 guests read this way; burrow runs WASIp2 components and wasip1 modules.
        Box::new(tokio::io::empty())
    }
}

/// The program's stdout or stderr, into the shared output pipe.
#[derive(Clone)]
pub(crate) struct PipeOut {
    pipes: Arc<Pipes>,
    fd: u8,
}

fn broken() -> StreamError {
    StreamError::Trap(wasmtime::Error::new(BrokenPipe))
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for PipeOut {
    async fn ready(&mut self) {
        let mut g = self.pipes.lock();
        while g.output_bytes >= PIPE_BYTES && !g.output_closed {
            let (next, in_time) = self.pipes.wait(g);
            g = next;
            if !in_time {
                return;
            }
        }
    }
}

impl OutputStream for PipeOut {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let mut g = self.pipes.lock();
        if g.output_closed {
            return Err(broken());
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let before = g.output_bytes;
        g.output_bytes += bytes.len();
        match g.output.back_mut() {
            Some((fd, run)) if *fd == self.fd => run.extend_from_slice(&bytes),
            _ => g.output.push_back((self.fd, bytes.to_vec())),
        }
        // The caller waits for half a pipe of output.
        let woke = before < HALF && g.output_bytes >= HALF;
        drop(g);
        if woke {
            self.pipes.changed.notify_all();
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let g = self.pipes.lock();
        if g.output_closed {
            return Err(broken());
        }
        Ok(PIPE_BYTES.saturating_sub(g.output_bytes))
    }
}

impl IsTerminal for PipeOut {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for PipeOut {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        // Only WASIp3 guests write this way; burrow runs WASIp2 components and wasip1 modules.
        Box::new(tokio::io::sink())
    }
}

/// The caller's handle (the `running` resource): the pipes and the program's thread, which
/// is always joined, so nothing of a call outlives it.
pub struct Running {
    pub(crate) pipes: Arc<Pipes>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.pipes.abandon();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
