//! In-memory I/O between commands: pipes are byte buffers, stdin is a shared cursor (so the
//! `read` builtin in a loop consumes it line by line), and outputs are sinks that write to the
//! real stdout/stderr, a buffer (pipe or `$(...)`), a file, or nowhere.

use std::cell::RefCell;
use std::io::{Cursor, Read, Write};
use std::rc::Rc;

/// Where a file descriptor's bytes go.
#[derive(Clone)]
pub enum Sink {
    Stdout,
    Stderr,
    Buf(Rc<RefCell<Vec<u8>>>),
    File(Rc<RefCell<std::fs::File>>),
    Null,
}

impl Sink {
    pub fn buffer() -> (Sink, Rc<RefCell<Vec<u8>>>) {
        let b = Rc::new(RefCell::new(Vec::new()));
        (Sink::Buf(b.clone()), b)
    }

    pub fn write(&self, bytes: &[u8]) {
        // Write errors (a closed stdout, a full quota) end up as a short write; the command
        // still completes, as in a shell whose output pipe was closed.
        match self {
            Sink::Stdout => {
                let _ = std::io::stdout().write_all(bytes);
            }
            Sink::Stderr => {
                let _ = std::io::stderr().write_all(bytes);
            }
            Sink::Buf(b) => b.borrow_mut().extend_from_slice(bytes),
            Sink::File(f) => {
                let _ = f.borrow_mut().write_all(bytes);
            }
            Sink::Null => {}
        }
    }

    pub fn flush(&self) {
        match self {
            Sink::Stdout => {
                let _ = std::io::stdout().flush();
            }
            Sink::Stderr => {
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

/// Reads one line (without its newline); None at end of input.
pub fn read_line(input: &Input) -> Option<String> {
    let mut cur = input.borrow_mut();
    let pos = cur.position() as usize;
    let data = cur.get_ref();
    if pos >= data.len() {
        return None;
    }
    let rest = &data[pos..];
    let (line, used) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], i + 1),
        None => (rest, rest.len()),
    };
    let s = String::from_utf8_lossy(line).into_owned();
    cur.set_position((pos + used) as u64);
    Some(s)
}

/// The standard streams of a command.
#[derive(Clone)]
pub struct Io {
    pub stdin: Input,
    pub out: Sink,
    pub err: Sink,
}

impl Io {
    /// Streams that go nowhere (for evaluations whose diagnostics are not wanted).
    pub fn discard() -> Io {
        Io {
            stdin: input(Vec::new()),
            out: Sink::Null,
            err: Sink::Null,
        }
    }

    pub fn print(&self, s: &str) {
        self.out.write(s.as_bytes());
    }

    pub fn eprint(&self, s: &str) {
        self.err.write(s.as_bytes());
    }
}
