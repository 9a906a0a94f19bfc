//! In-memory I/O between commands: pipes are byte buffers, stdin is a shared cursor (so the
//! `read` builtin in a loop consumes it line by line), and outputs are sinks that write to the
//! real stdout/stderr, a buffer (pipe or `$(...)`), a file, or nowhere.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::rc::Rc;

thread_local! {
    /// The shell's own file descriptors as `exec` left them: 1 and 2 when redirected (the
    /// shell's stdout and stderr write there), 3 and up when opened for output or input. They
    /// last for the call (files are closed when it ends). A command's own redirections still
    /// win: they give it other descriptors.
    static SHELL_FDS: RefCell<BTreeMap<i32, Fd>> = const { RefCell::new(BTreeMap::new()) };
}

/// An open descriptor above the standard three (or one `exec` moved): where its writes go,
/// or what its reads consume (a cursor shared by everything that reads it, as a file offset
/// is).
#[derive(Clone)]
pub enum Fd {
    Out(Sink),
    In(Input),
}

/// The sink `exec` gave descriptor `fd`, if it is open for output.
pub fn shell_fd(fd: i32) -> Option<Sink> {
    SHELL_FDS.with(|f| match f.borrow().get(&fd) {
        Some(Fd::Out(s)) => Some(s.clone()),
        _ => None,
    })
}

/// The input `exec` opened as descriptor `fd` (`exec 3< file`), if any.
pub fn shell_input(fd: i32) -> Option<Input> {
    SHELL_FDS.with(|f| match f.borrow().get(&fd) {
        Some(Fd::In(i)) => Some(i.clone()),
        _ => None,
    })
}

/// Opens the shell's descriptor `fd` for reading `input` (None closes it).
pub fn set_shell_input(fd: i32, input: Option<Input>) {
    SHELL_FDS.with(|f| {
        let mut f = f.borrow_mut();
        match input {
            Some(i) => f.insert(fd, Fd::In(i)),
            None => f.remove(&fd),
        }
    });
}

/// Points the shell's descriptor `fd` at `sink` (None closes it).
pub fn set_shell_fd(fd: i32, sink: Option<Sink>) {
    // Stored resolved, so `exec 2>&1` means where fd 1 goes now, and never a cycle.
    let sink = sink.map(|s| s.resolved());
    SHELL_FDS.with(|f| {
        let mut f = f.borrow_mut();
        match sink {
            Some(Sink::RealStdout) if fd == 1 => f.remove(&fd),
            Some(Sink::RealStderr) if fd == 2 => f.remove(&fd),
            Some(s) => f.insert(fd, Fd::Out(s)),
            None => f.remove(&fd),
        }
    });
}

/// The shell's descriptors (for a subshell to restore when it ends).
pub fn shell_fds() -> BTreeMap<i32, Fd> {
    SHELL_FDS.with(|f| f.borrow().clone())
}

pub fn restore_shell_fds(fds: BTreeMap<i32, Fd>) {
    SHELL_FDS.with(|f| *f.borrow_mut() = fds);
}

/// The lowest descriptor from 10 up that is free (bash's `{var}>` allocation).
pub fn free_shell_fd() -> i32 {
    SHELL_FDS.with(|f| {
        let f = f.borrow();
        (10..).find(|n| !f.contains_key(n)).unwrap_or(10)
    })
}

/// Where a file descriptor's bytes go.
#[derive(Clone)]
pub enum Sink {
    /// The shell's stdout (where `exec` last pointed descriptor 1; the call's stdout at first).
    Stdout,
    Stderr,
    /// The call's own stdout and stderr, whatever `exec` did since (what `exec 4>&1` saves).
    RealStdout,
    RealStderr,
    Buf(Rc<RefCell<Vec<u8>>>),
    /// A pipe into a stage that reads only a known prefix (`head`).
    Pipe(Rc<RefCell<Pipe>>),
    /// A pipe into a utility that can run as a streaming stage: a buffer until it holds a
    /// pipe's worth, then the stage, started and fed as the writer goes on.
    Spill(Rc<Spill>),
    File(Rc<OutFile>),
    Null,
}

/// A file opened for a redirection, and the path it was opened by (absolute, `.` and `..`
/// resolved lexically): what `cat` compares its inputs with ("input file is output file").
pub struct OutFile {
    pub file: RefCell<std::fs::File>,
    pub path: std::path::PathBuf,
}

impl Sink {
    /// A sink writing to `file`, opened by `path` (absolute).
    pub fn file(file: std::fs::File, path: &std::path::Path) -> Sink {
        Sink::File(Rc::new(OutFile {
            file: RefCell::new(file),
            path: crate::path::lexical(path),
        }))
    }

    /// The file this sink writes to, where it is one (after `exec`'s redirections).
    pub fn file_path(&self) -> Option<std::path::PathBuf> {
        match self.clone().resolved() {
            Sink::File(f) => Some(f.path.clone()),
            _ => None,
        }
    }
}

/// How much of a pipe its reader will consume before it exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    Lines(usize),
    Bytes(usize),
}

/// A pipe whose reader stops early. Once it holds what the reader will consume, later
/// writes are dropped; past a pipe buffer's worth of them (64 KiB: by then a real reader would
/// have exited and the writer met SIGPIPE) the pipe is `broken`, which ends the writing
/// command with bash's SIGPIPE status (141). Infinite producers (`yes | head`,
/// `while :; do ...; done | head`) end as under bash instead of running into the time limit,
/// and a short producer still runs to its end, as it does under bash.
#[derive(Debug)]
pub struct Pipe {
    pub data: Vec<u8>,
    wants: Wants,
    lines: usize,
    /// Bytes written after the reader had what it wants.
    extra: usize,
    pub broken: bool,
}

/// What a writer may write into a pipe whose reader is done before SIGPIPE stops it; also
/// what a [`Spill`] holds before it starts its reader.
pub const PIPE_CAPACITY: usize = 64 << 10;

/// How a [`Spill`] starts its reader: None when it cannot (then it stays a buffer).
pub type StartStage = Box<dyn FnOnce() -> Option<Rc<dyn Stage>>>;

/// A pipeline stage running as a program of its own (the interpreter's), fed as its writer
/// goes on; see [`Spill`].
pub trait Stage {
    /// Feeds it `data` (waiting while its pipe is full).
    fn write(&self, data: &[u8]);
    /// Whether it stopped reading (it exited): its writer meets SIGPIPE.
    fn closed(&self) -> bool;
    /// Ends its input and waits for it: its exit status.
    fn finish(&self) -> i32;
}

/// The pipe into a stage that can stream (see [`Sink::Spill`]). A writer that stays under a
/// pipe's worth costs nothing more than a buffer, and its reader runs after it, in the
/// shell, as before; past that the reader starts as a program of its own and the rest
/// streams through it, so memory stays bounded whatever flows, and a reader that exits early
/// (`yes | head -n $((n+1))`) ends the writer with SIGPIPE.
pub struct Spill {
    buf: RefCell<Vec<u8>>,
    start: RefCell<Option<StartStage>>,
    stage: RefCell<Option<Rc<dyn Stage>>>,
    ends: Ends,
}

/// Whether the stage a [`Spill`] starts would end an endless writer.
pub enum Ends {
    /// It exits when it has had enough (`head`).
    Itself,
    /// It passes everything on (`cat`): if what it writes into does.
    Through(Sink),
    /// It reads to the end (`wc`).
    Never,
}

impl Spill {
    /// The stage, once started.
    pub fn stage(&self) -> Option<Rc<dyn Stage>> {
        self.stage.borrow().clone()
    }

    /// What was written, while no stage started.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.borrow_mut())
    }

    fn write(&self, bytes: &[u8]) {
        let stage = self.stage.borrow().clone();
        if let Some(stage) = stage {
            stage.write(bytes);
            return;
        }
        self.buf.borrow_mut().extend_from_slice(bytes);
        if self.buf.borrow().len() <= PIPE_CAPACITY {
            return;
        }
        let start = self.start.borrow_mut().take();
        if let Some(stage) = start.and_then(|f| f()) {
            *self.stage.borrow_mut() = Some(stage.clone());
            let held = self.take();
            stage.write(&held);
        }
    }

    /// Whether an endless writer may go on into it: it streams (or may still start to),
    /// and a stage after it will end the flow.
    fn streams(&self) -> bool {
        (self.stage.borrow().is_some() || self.start.borrow().is_some())
            && match &self.ends {
                Ends::Itself => true,
                Ends::Through(next) => next.streams(),
                Ends::Never => false,
            }
    }
}

impl Pipe {
    fn satisfied(&self) -> bool {
        match self.wants {
            Wants::Lines(n) => self.lines >= n,
            Wants::Bytes(n) => self.data.len() >= n,
        }
    }
}

impl Sink {
    pub fn buffer() -> (Sink, Rc<RefCell<Vec<u8>>>) {
        let b = Rc::new(RefCell::new(Vec::new()));
        (Sink::Buf(b.clone()), b)
    }

    /// A pipe into a reader that consumes only `wants`.
    pub fn pipe(wants: Wants) -> (Sink, Rc<RefCell<Pipe>>) {
        let p = Rc::new(RefCell::new(Pipe {
            data: Vec::new(),
            wants,
            lines: 0,
            extra: 0,
            broken: false,
        }));
        (Sink::Pipe(p.clone()), p)
    }

    /// A pipe into a stage that may stream, started by `start` once a pipe's worth is
    /// written.
    pub fn spill(start: StartStage, ends: Ends) -> (Sink, Rc<Spill>) {
        let s = Rc::new(Spill {
            buf: RefCell::new(Vec::new()),
            start: RefCell::new(Some(start)),
            stage: RefCell::new(None),
            ends,
        });
        (Sink::Spill(s.clone()), s)
    }

    /// Whether a write went to a pipe whose reader is gone (the writer should stop).
    pub fn broken(&self) -> bool {
        match self {
            Sink::Pipe(p) => p.borrow().broken,
            Sink::Spill(s) => s.stage().is_some_and(|st| st.closed()),
            _ => false,
        }
    }

    /// Whether this is a pipe whose readers stop the writer when they have had enough, so
    /// an endless writer (`yes`) may go on into it.
    pub fn streams(&self) -> bool {
        match self {
            Sink::Pipe(_) => true,
            Sink::Spill(s) => s.streams(),
            _ => false,
        }
    }

    /// The sink the shell's stdout or stderr stands for now (`exec >file` moved it).
    fn resolved(self) -> Sink {
        match &self {
            Sink::Stdout => shell_fd(1).unwrap_or(Sink::RealStdout),
            Sink::Stderr => shell_fd(2).unwrap_or(Sink::RealStderr),
            _ => self,
        }
    }

    pub fn write(&self, bytes: &[u8]) {
        // Write errors (a closed stdout, a full quota) end up as a short write; the command
        // still completes, as in a shell whose output pipe was closed.
        match self {
            Sink::Stdout if let Some(s) = shell_fd(1) => s.write(bytes),
            Sink::Stderr if let Some(s) = shell_fd(2) => s.write(bytes),
            Sink::Stdout | Sink::RealStdout => {
                let _ = std::io::stdout().write_all(bytes);
            }
            Sink::Stderr | Sink::RealStderr => {
                let _ = std::io::stderr().write_all(bytes);
            }
            Sink::Buf(b) => b.borrow_mut().extend_from_slice(bytes),
            Sink::Pipe(p) => {
                let mut p = p.borrow_mut();
                // The part of this write the reader consumes; the rest is written past it,
                // as one large write (`seq 100000 | head -1`) is in a kernel pipe.
                let take = match p.wants {
                    _ if p.satisfied() => 0,
                    Wants::Lines(n) => memchr::memchr_iter(b'\n', bytes)
                        .nth(n - p.lines - 1)
                        .map_or(bytes.len(), |i| i + 1),
                    Wants::Bytes(n) => (n - p.data.len()).min(bytes.len()),
                };
                p.lines += memchr::memchr_iter(b'\n', &bytes[..take]).count();
                p.data.extend_from_slice(&bytes[..take]);
                p.extra += bytes.len() - take;
                p.broken = p.extra > PIPE_CAPACITY;
            }
            Sink::Spill(s) => s.write(bytes),
            Sink::File(f) => {
                let _ = f.file.borrow_mut().write_all(bytes);
            }
            Sink::Null => {}
        }
    }

    pub fn flush(&self) {
        match self {
            Sink::Stdout | Sink::RealStdout => {
                let _ = std::io::stdout().flush();
            }
            Sink::Stderr | Sink::RealStderr => {
                let _ = std::io::stderr().flush();
            }
            _ => {}
        }
    }
}

/// A readable input shared by the commands of a compound command.
pub type Input = Rc<RefCell<InputBuf>>;

/// An input's bytes: those in memory, then (for a stage of a streaming pipeline) the rest of
/// the real stdin, read only as a command asks for it.
pub struct InputBuf {
    cur: Cursor<Vec<u8>>,
    source: Option<Box<dyn Read>>,
    /// A regular file (`< path`): see [`InputBuf::unread`].
    seekable: bool,
}

impl InputBuf {
    /// The whole input as one cursor (a stream is read to its end first): for commands that
    /// take their input whole.
    pub fn cursor(&mut self) -> &mut Cursor<Vec<u8>> {
        if let Some(mut source) = self.source.take() {
            let pos = (self.cur.position() as usize).min(self.cur.get_ref().len());
            let mut rest = self.cur.get_ref()[pos..].to_vec();
            let _ = source.read_to_end(&mut rest);
            self.cur = Cursor::new(rest);
        }
        &mut self.cur
    }

    /// Whether more of it is still to be read from a stream.
    pub fn streaming(&self) -> bool {
        self.source.is_some()
    }

    /// Whether it is a regular file (`< path`), so that a command that read past what it
    /// used should give the rest back ([`InputBuf::unread`]), as GNU `head` seeks back on a
    /// seekable input: `{ head -n1; cat; } < file` prints the whole file. (From a pipe, the
    /// bytes it read are gone, as they are in a kernel pipe.)
    pub fn seekable(&self) -> bool {
        self.seekable
    }

    /// Puts `bytes` back in front of what is left to read.
    pub fn unread(&mut self, bytes: &[u8]) {
        let pos = (self.cur.position() as usize).min(self.cur.get_ref().len());
        let mut front = bytes.to_vec();
        front.extend_from_slice(&self.cur.get_ref()[pos..]);
        self.cur = Cursor::new(front);
    }

    /// The next piece of at most `max` bytes (what is in memory first, then the stream's next
    /// read); empty at the end.
    pub fn chunk(&mut self, max: usize) -> Vec<u8> {
        // A stream's read gives at most what its pipe holds: no larger buffer is filled.
        let mut out = vec![0; max.min(STREAM_READ)];
        let n = self.read(&mut out).unwrap_or(0);
        out.truncate(n);
        out
    }

    /// The next line, its newline included (the last may lack one); None at the end.
    pub fn line(&mut self) -> Option<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            let pos = (self.cur.position() as usize).min(self.cur.get_ref().len());
            let rest = &self.cur.get_ref()[pos..];
            if let Some(i) = memchr::memchr(b'\n', rest) {
                line.extend_from_slice(&rest[..=i]);
                self.cur.set_position((pos + i + 1) as u64);
                return Some(line);
            }
            line.extend_from_slice(rest);
            let more = match &mut self.source {
                Some(source) => {
                    let mut buf = vec![0; 64 << 10];
                    let n = read_retrying(source.as_mut(), &mut buf);
                    buf.truncate(n);
                    buf
                }
                None => Vec::new(),
            };
            if more.is_empty() {
                self.source = None;
                self.cur = Cursor::new(Vec::new());
                return (!line.is_empty()).then_some(line);
            }
            self.cur = Cursor::new(more);
        }
    }
}

/// The most one read of a streamed input asks for (a file's read may give this much; the
/// host's pipe holds at most 64 KiB).
const STREAM_READ: usize = 256 << 10;

/// One read, retried when interrupted; 0 at the end (or on an error: the input ends there).
fn read_retrying(r: &mut dyn Read, buf: &mut [u8]) -> usize {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r.unwrap_or(0),
        }
    }
}

impl Read for InputBuf {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.cur.read(buf)?;
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        match &mut self.source {
            Some(source) => {
                let n = read_retrying(source.as_mut(), buf);
                if n == 0 {
                    self.source = None;
                }
                Ok(n)
            }
            None => Ok(0),
        }
    }
}

pub fn input(bytes: Vec<u8>) -> Input {
    Rc::new(RefCell::new(InputBuf {
        cur: Cursor::new(bytes),
        source: None,
        seekable: false,
    }))
}

/// An input read from `source` as commands ask for it (a streaming stage's real stdin).
pub fn streamed(source: Box<dyn Read>) -> Input {
    Rc::new(RefCell::new(InputBuf {
        cur: Cursor::new(Vec::new()),
        source: Some(source),
        seekable: false,
    }))
}

/// A regular file's contents read as commands ask for them (`< path`): seekable.
pub fn file(source: Box<dyn Read>) -> Input {
    Rc::new(RefCell::new(InputBuf {
        cur: Cursor::new(Vec::new()),
        source: Some(source),
        seekable: true,
    }))
}

/// Reads everything left in `input`.
pub fn read_all(input: &Input) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = input.borrow_mut().read_to_end(&mut v);
    v
}

/// Reads one line (its newline included) from `input`; None at its end.
pub fn read_line(input: &Input) -> Option<String> {
    let line = input.borrow_mut().line()?;
    Some(String::from_utf8_lossy(&line).into_owned())
}

/// The standard streams of a command.
#[derive(Clone)]
pub struct Io {
    pub stdin: Input,
    pub out: Sink,
    pub err: Sink,
    /// Descriptors 3 and up that the command's redirections opened (`3< file`, `4> log`,
    /// `5<<EOF`); the shell's own (`exec`) are looked up after these.
    pub fds: BTreeMap<i32, Fd>,
}

impl Io {
    /// Streams that go nowhere (for evaluations whose diagnostics are not wanted).
    pub fn discard() -> Io {
        Io {
            stdin: input(Vec::new()),
            out: Sink::Null,
            err: Sink::Null,
            fds: BTreeMap::new(),
        }
    }

    /// Standard streams with no other descriptors open.
    pub fn new(stdin: Input, out: Sink, err: Sink) -> Io {
        Io {
            stdin,
            out,
            err,
            fds: BTreeMap::new(),
        }
    }

    /// What reading descriptor `fd` reads: stdin for 0, else an input this command or
    /// `exec` opened.
    pub fn input_fd(&self, fd: i32) -> Option<Input> {
        match (fd, self.fds.get(&fd)) {
            (0, _) => Some(self.stdin.clone()),
            (_, Some(Fd::In(i))) => Some(i.clone()),
            (_, Some(Fd::Out(_))) => None,
            (_, None) => shell_input(fd),
        }
    }

    /// Where writing descriptor `fd` (3 and up) goes: an output this command or `exec`
    /// opened.
    pub fn output_fd(&self, fd: i32) -> Option<Sink> {
        match self.fds.get(&fd) {
            Some(Fd::Out(s)) => Some(s.clone()),
            Some(Fd::In(_)) => None,
            None => shell_fd(fd),
        }
    }

    pub fn print(&self, s: &str) {
        self.out.write(s.as_bytes());
    }

    pub fn eprint(&self, s: &str) {
        self.err.write(s.as_bytes());
    }
}
