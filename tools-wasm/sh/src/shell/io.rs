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
            path: crate::utils::coreutils::lexical(path),
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

/// What a writer may write into a pipe whose reader is done before SIGPIPE stops it.
const PIPE_CAPACITY: usize = 64 << 10;

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

    /// Whether a write went to a pipe whose reader is gone (the writer should stop).
    pub fn broken(&self) -> bool {
        matches!(self, Sink::Pipe(p) if p.borrow().broken)
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
pub type Input = Rc<RefCell<Cursor<Vec<u8>>>>;

pub fn input(bytes: Vec<u8>) -> Input {
    Rc::new(RefCell::new(Cursor::new(bytes)))
}

/// Reads everything left in `input`.
pub fn read_all(input: &Input) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = input.borrow_mut().read_to_end(&mut v);
    v
}

/// Reads one line (its newline included) from `input`; None at its end.
pub fn read_line(input: &Input) -> Option<String> {
    let mut cur = input.borrow_mut();
    let pos = cur.position() as usize;
    let rest = cur.get_ref().get(pos..).unwrap_or_default();
    if rest.is_empty() {
        return None;
    }
    let n = rest
        .iter()
        .position(|&b| b == b'\n')
        .map_or(rest.len(), |i| i + 1);
    let line = String::from_utf8_lossy(&rest[..n]).into_owned();
    cur.set_position((pos + n) as u64);
    Some(line)
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
