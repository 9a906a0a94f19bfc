//! awk's main input, split into records as the program asks for them: a piece of stdin or
//! of a file at a time, so awk over a file larger than memory (or an endless writer that
//! awk's `exit` stops) holds only the record it is at and one piece past it.

use std::io::Read;

use sh_utility::io::Io;

/// How much is read at once.
const PIECE: usize = 64 << 10;

/// Where the records come from.
enum Source {
    /// The shell's stdin (shared with the commands after awk in a group).
    Stdin,
    File(std::fs::File),
    /// Everything is in the buffer already.
    Done,
}

pub(super) struct Records {
    source: Source,
    /// Bytes read and not yet returned, from `at`.
    buf: Vec<u8>,
    at: usize,
}

impl Records {
    pub(super) fn empty() -> Records {
        Records::bytes(Vec::new())
    }

    pub(super) fn bytes(data: Vec<u8>) -> Records {
        Records {
            source: Source::Done,
            buf: data,
            at: 0,
        }
    }

    pub(super) fn stdin() -> Records {
        Records {
            source: Source::Stdin,
            buf: Vec::new(),
            at: 0,
        }
    }

    pub(super) fn file(f: std::fs::File) -> Records {
        Records {
            source: Source::File(f),
            buf: Vec::new(),
            at: 0,
        }
    }

    /// Reads the next piece onto the buffer; false at the end of the input.
    fn fill(&mut self, io: &Io) -> bool {
        if self.at > 0 && self.at * 2 >= self.buf.len() {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let piece = match &mut self.source {
            Source::Done => return false,
            Source::Stdin => io.stdin.borrow_mut().chunk(PIECE),
            Source::File(f) => {
                let mut piece = vec![0; PIECE];
                let n = loop {
                    match f.read(&mut piece) {
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        // A read error ends the input there, as the whole read did.
                        r => break r.unwrap_or(0),
                    }
                };
                piece.truncate(n);
                piece
            }
        };
        if piece.is_empty() {
            self.source = Source::Done;
            return false;
        }
        self.buf.extend_from_slice(&piece);
        true
    }

    /// The next record by the record separator `rs`: a literal string, or blank lines when
    /// it is empty (paragraph mode: newlines around records are not part of them). A last
    /// record without its separator is a record; an empty one after the last separator is
    /// not.
    pub(super) fn next(&mut self, io: &Io, rs: &str) -> Option<String> {
        loop {
            let eof = matches!(self.source, Source::Done);
            if rs.is_empty() {
                let skip = self.buf[self.at..]
                    .iter()
                    .take_while(|&&b| b == b'\n')
                    .count();
                self.at += skip;
            }
            let data = &self.buf[self.at..];
            let sep: &[u8] = if rs.is_empty() {
                b"\n\n"
            } else {
                rs.as_bytes()
            };
            let found = match sep {
                [b] => memchr::memchr(*b, data),
                _ => memchr::memmem::find(data, sep),
            };
            if let Some(i) = found {
                let rec = String::from_utf8_lossy(&data[..i]).into_owned();
                // Paragraph mode skips the blank lines before the next record when it is read.
                self.at += if rs.is_empty() { i } else { i + sep.len() };
                return Some(rec);
            }
            if eof {
                if data.is_empty() {
                    return None;
                }
                let end = if rs.is_empty() {
                    data.len() - data.iter().rev().take_while(|&&b| b == b'\n').count()
                } else {
                    data.len()
                };
                let rec = String::from_utf8_lossy(&data[..end]).into_owned();
                self.at = self.buf.len();
                return Some(rec);
            }
            self.fill(io);
        }
    }
}
