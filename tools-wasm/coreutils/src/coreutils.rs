//! The file and text utilities agents type, as builtins with GNU-compatible output and
//! messages for the common flags: cat ls head tail wc grep find sed sort uniq cut tr mkdir rm
//! rmdir cp mv touch ln basename dirname realpath seq tee date sleep xargs rev tac nl.

pub use sh_utility::path::lexical;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::path::PathBuf;

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, Wants, read_all};
use sh_utility::{Command, Status};

/// Parsed command line: single-letter flags, flags with values, operands.
struct Args {
    flags: BTreeSet<char>,
    values: Vec<(char, String)>,
    operands: Vec<String>,
}

impl Args {
    fn has(&self, c: char) -> bool {
        self.flags.contains(&c)
    }

    fn value(&self, c: char) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| *k == c)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses GNU-style options: `flags` take no value, `valued` take one (attached or next).
/// The registry's gate has already refused what the utility does not implement and turned
/// `-NUM` into `-n NUM`; long options left (the ones without a short form) are skipped.
fn parse(cmd: &str, args: &[String], flags: &str, valued: &str, io: &Io) -> Result<Args, i32> {
    let mut a = Args {
        flags: BTreeSet::new(),
        values: Vec::new(),
        operands: Vec::new(),
    };
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let s = &args[i];
        if only_operands || s == "-" || !s.starts_with('-') {
            a.operands.push(s.clone());
            i += 1;
            continue;
        }
        if s == "--" {
            only_operands = true;
            i += 1;
            continue;
        }
        if s.starts_with("--") {
            i += 1;
            continue;
        }
        let body: Vec<char> = s[1..].chars().collect();
        let mut j = 0;
        while j < body.len() {
            let c = body[j];
            if valued.contains(c) {
                let rest: String = body[j + 1..].iter().collect();
                let v = if !rest.is_empty() {
                    rest
                } else {
                    i += 1;
                    match args.get(i) {
                        Some(v) => v.clone(),
                        None => {
                            io.eprint(&format!("{cmd}: option requires an argument -- '{c}'\nTry '{cmd} --help' for more information.\n"));
                            return Err(usage_status(cmd));
                        }
                    }
                };
                a.values.push((c, v));
                break;
            } else if flags.contains(c) {
                a.flags.insert(c);
            } else {
                io.eprint(&format!(
                    "{cmd}: invalid option -- '{c}'\nTry '{cmd} --help' for more information.\n"
                ));
                return Err(usage_status(cmd));
            }
            j += 1;
        }
        i += 1;
    }
    Ok(a)
}

macro_rules! args {
    ($cmd:expr, $args:expr, $flags:expr, $valued:expr, $io:expr) => {
        match parse($cmd, $args, $flags, $valued, $io) {
            Ok(a) => a,
            Err(code) => return Ok(code),
        }
    };
}

/// How much of a regular file a utility that passes data through (plain `cat`, `wc -l`)
/// holds at once.
const PASS_THROUGH_CHUNK: usize = 1 << 20;

/// Reads the named inputs (or stdin for none or `-`), reporting unreadable ones.
fn inputs(
    sh: &dyn Ctx,
    cmd: &str,
    files: &[String],
    io: &Io,
    status: &mut i32,
) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    each_input(sh, cmd, files, io, status, None, |_, name, data, _| {
        out.push((name.to_string(), data.into_owned()))
    });
    out
}

/// Hands each named input (or stdin for none or `-`) to `f` as it is read, and reports an
/// unreadable one in its place among them, as GNU's utilities do. With `chunk`, a regular
/// file comes in pieces of at most that many bytes (several calls with its name), so a
/// command that passes data through holds one piece at a time; otherwise each input comes
/// whole, in one call. `f` gets the input's position among them (pieces of one input share
/// it), its name, the bytes (a whole file as read, without a copy), and whether the input is complete with them (a chunked file
/// ends with an empty piece that says so). Stdin is handed over without a copy.
fn each_input(
    sh: &dyn Ctx,
    cmd: &str,
    files: &[String],
    io: &Io,
    status: &mut i32,
    chunk: Option<usize>,
    mut f: impl FnMut(usize, &str, Cow<[u8]>, bool),
) {
    each_input_while(sh, cmd, files, io, status, chunk, |k, name, data, done| {
        f(k, name, data, done);
        true
    })
}

/// [`each_input`] for a command that may have had enough of an input before its end
/// (`head`): `f` returns whether it wants more of the input, and when it does not, no more
/// of it is read (the input still ends with its empty final piece).
fn each_input_while(
    sh: &dyn Ctx,
    cmd: &str,
    files: &[String],
    io: &Io,
    status: &mut i32,
    chunk: Option<usize>,
    mut f: impl FnMut(usize, &str, Cow<[u8]>, bool) -> bool,
) {
    let stdin_only = ["-".to_string()];
    let names = if files.is_empty() {
        &stdin_only[..]
    } else {
        files
    };
    for (k, name) in names.iter().enumerate() {
        if name == "-" {
            let mut input = io.stdin.borrow_mut();
            // A stage of a streaming pipeline reads its stdin a piece at a time when it can.
            if let Some(n) = chunk
                && input.streaming()
            {
                loop {
                    let piece = input.chunk(n);
                    if piece.is_empty() || !f(k, name, Cow::Owned(piece), false) {
                        break;
                    }
                }
                f(k, name, Cow::Borrowed(&[]), true);
                continue;
            }
            let cur = input.cursor();
            let pos = (cur.position() as usize).min(cur.get_ref().len());
            f(k, name, Cow::Borrowed(&cur.get_ref()[pos..]), true);
            let end = cur.get_ref().len() as u64;
            cur.set_position(end);
            continue;
        }
        let path = sh.path(name);
        let read = match chunk {
            Some(n) => sh_utility::sys::read_chunks(path, n, |piece| {
                f(k, name, Cow::Borrowed(piece), false)
            })
            .map(|()| {
                f(k, name, Cow::Borrowed(&[]), true);
            }),
            None => sh_utility::sys::read(path).map(|data| {
                f(k, name, Cow::Owned(data), true);
            }),
        };
        if let Err(e) = read {
            if matches!(cmd, "head" | "tail") {
                io.eprint(&format!(
                    "{cmd}: cannot open '{name}' for reading: {}\n",
                    io_msg(&e)
                ));
            } else {
                io.eprint(&format!("{cmd}: {name}: {}\n", io_msg(&e)));
            }
            *status = 1;
        }
    }
}

/// The exit status GNU gives a usage error: 2 where 1 means something else (ls, sort,
/// diff), 125 for env, 1 for the rest of coreutils.
fn usage_status(cmd: &str) -> i32 {
    sh_utility::registry::find(cmd).map_or(1, |u| u.usage_status)
}

/// GNU cat's line options: numbering (`-n`, `-b`), `-s`, and the visible forms of ends
/// (`-E`), tabs (`-T`) and other non-printing bytes (`-v`: `^X`, `^?`, `M-`).
struct CatOpts {
    number: bool,
    nonblank: bool,
    squeeze: bool,
    ends: bool,
    tabs: bool,
    nonprinting: bool,
    /// Line number so far (numbering runs on across files, as GNU's does).
    line: usize,
    /// The previous line was empty (for `-s`).
    blank_run: bool,
}

impl CatOpts {
    fn render(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + data.len() / 8);
        for l in data.split_inclusive(|&c| c == b'\n') {
            let (body, nl) = match l.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (l, false),
            };
            let blank = body.is_empty() && nl;
            if self.squeeze && blank && self.blank_run {
                continue;
            }
            self.blank_run = blank;
            if self.nonblank && !blank || self.number && !self.nonblank {
                self.line += 1;
                out.extend(format!("{:>6}\t", self.line).as_bytes());
            }
            for &b in body {
                self.byte(b, &mut out);
            }
            if nl {
                if self.ends {
                    out.push(b'$');
                }
                out.push(b'\n');
            }
        }
        out
    }

    fn byte(&self, b: u8, out: &mut Vec<u8>) {
        if b == b'\t' {
            out.extend(if self.tabs { &b"^I"[..] } else { &b"\t"[..] });
            return;
        }
        if !self.nonprinting {
            out.push(b);
            return;
        }
        let mut c = b;
        if c >= 128 {
            out.extend(b"M-");
            c -= 128;
        }
        match c {
            0..=31 => out.extend([b'^', c + 64]),
            127 => out.extend(b"^?"),
            _ => out.push(c),
        }
    }
}

/// The commands this module runs, for the shell's registry.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "cat",
        run: cmd_cat,
    },
    Command {
        name: "ls",
        run: |sh, argv, io| Ok(ls(sh, &argv[1..], io)),
    },
    Command {
        name: "head",
        run: cmd_head,
    },
    Command {
        name: "tail",
        run: cmd_head,
    },
    Command {
        name: "wc",
        run: cmd_wc,
    },
    Command {
        name: "grep",
        run: |sh, argv, io| Ok(crate::text::grep(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "egrep",
        run: |sh, argv, io| Ok(crate::text::grep(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "fgrep",
        run: |sh, argv, io| Ok(crate::text::grep(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "sed",
        run: |sh, argv, io| Ok(crate::text::sed(sh, &argv[1..], io)),
    },
    Command {
        name: "sort",
        run: |sh, argv, io| Ok(crate::sort::sort(sh, &argv[1..], io)),
    },
    Command {
        name: "uniq",
        run: cmd_uniq,
    },
    Command {
        name: "cut",
        run: |sh, argv, io| Ok(crate::text::cut(sh, &argv[1..], io)),
    },
    Command {
        name: "tr",
        run: |_, argv, io| Ok(crate::text::tr(&argv[1..], io)),
    },
    Command {
        name: "nl",
        run: cmd_nl,
    },
    Command {
        name: "rev",
        run: cmd_rev,
    },
    Command {
        name: "tac",
        run: cmd_rev,
    },
    Command {
        name: "mkdir",
        run: cmd_mkdir,
    },
    Command {
        name: "rmdir",
        run: cmd_rmdir,
    },
    Command {
        name: "rm",
        run: cmd_rm,
    },
    Command {
        name: "touch",
        run: |sh, argv, io| Ok(crate::files::touch(sh, &argv[1..], io)),
    },
    Command {
        name: "ln",
        run: cmd_ln,
    },
    Command {
        name: "basename",
        run: cmd_basename,
    },
    Command {
        name: "dirname",
        run: cmd_dirname,
    },
    Command {
        name: "realpath",
        run: cmd_realpath,
    },
    Command {
        name: "readlink",
        run: cmd_realpath,
    },
    Command {
        name: "seq",
        run: |_, argv, io| Ok(seq(&argv[1..], io)),
    },
    Command {
        name: "tee",
        run: cmd_tee,
    },
    Command {
        name: "date",
        run: |sh, argv, io| Ok(crate::files::date(sh, &argv[1..], io)),
    },
    Command {
        name: "sleep",
        run: cmd_sleep,
    },
    Command {
        name: "yes",
        run: cmd_yes,
    },
    Command {
        name: "xargs",
        run: |sh, argv, io| crate::text::xargs(sh, &argv[1..], io),
    },
    Command {
        name: "find",
        run: |sh, argv, io| Ok(crate::find::find(sh, &argv[1..], io)),
    },
    Command {
        name: "stat",
        run: |sh, argv, io| Ok(crate::text::misc(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "chmod",
        run: |sh, argv, io| Ok(crate::text::misc(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "du",
        run: |sh, argv, io| Ok(crate::disk::du(sh, &argv[1..], io)),
    },
];

fn cmd_cat(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "nAvetsbETu", "", io);
    let mut c = CatOpts {
        number: a.has('n'),
        nonblank: a.has('b'),
        squeeze: a.has('s'),
        ends: a.has('E') || a.has('A') || a.has('e'),
        tabs: a.has('T') || a.has('A') || a.has('t'),
        nonprinting: a.has('v') || a.has('A') || a.has('e') || a.has('t'),
        line: 0,
        blank_run: false,
    };
    let plain = !(c.number || c.nonblank || c.squeeze || c.ends || c.tabs || c.nonprinting);
    // Plain cat passes each file through a piece at a time; the line options see
    // each input whole (a line never spans two pieces).
    let chunk = plain.then_some(PASS_THROUGH_CHUNK);
    let stdin_only = ["-".to_string()];
    let names = if a.operands.is_empty() {
        &stdin_only[..]
    } else {
        &a.operands[..]
    };
    let output = io.out.file_path();
    for name in names {
        // GNU cat refuses a non-empty input that is the file its output goes to
        // (`cat a >> a` would otherwise read what it writes).
        if name != "-"
            && let Some(out) = &output
            && lexical(&sh.path(name)) == *out
            && std::fs::metadata(out).is_ok_and(|m| m.len() > 0)
        {
            io.eprint(&format!("cat: {name}: input file is output file\n"));
            status = 1;
            continue;
        }
        each_input(
            sh,
            cmd,
            std::slice::from_ref(name),
            io,
            &mut status,
            chunk,
            |_, _, data, _| {
                if plain {
                    io.out.write(&data);
                } else {
                    io.out.write(&c.render(&data));
                }
            },
        );
    }

    Ok(status)
}

fn cmd_head(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "qvf", "nc", io);
    // A count: digits with GNU's suffixes (b, K/KiB, kB, M, ...), `+N` (tail: from
    // N) or `-N` (head: all but the last N).
    let count = |v: &str, what: &str| -> Result<(char, usize), i32> {
        let (sign, digits) = match v.chars().next() {
            Some(c @ ('+' | '-')) => (c, &v[1..]),
            _ => (' ', v),
        };
        let split = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        let (num, suffix) = digits.split_at(split);
        let mult: Option<usize> = match suffix {
            "" => Some(1),
            "b" => Some(512),
            "kB" => Some(1000),
            "K" | "KiB" => Some(1024),
            "MB" => Some(1000 * 1000),
            "M" | "MiB" => Some(1 << 20),
            "GB" => Some(1000 * 1000 * 1000),
            "G" | "GiB" => Some(1 << 30),
            _ => None,
        };
        match (num.parse::<usize>(), mult) {
            (Ok(n), Some(m)) => Ok((sign, n.saturating_mul(m))),
            _ => {
                io.eprint(&format!("{cmd}: invalid number of {what}: '{v}'\n"));
                Err(1)
            }
        }
    };
    let bytes = match a.value('c').map(|c| count(c, "bytes")).transpose() {
        Ok(b) => b,
        Err(s) => return Ok(s),
    };
    let lines = match count(a.value('n').unwrap_or("10"), "lines") {
        Ok(l) => l,
        Err(s) => return Ok(s),
    };
    // `head N` (a positive count) reads each input only as far as it prints: a piece
    // at a time, stopping there (a file larger than memory, a streaming stage's stdin
    // whose writer then meets SIGPIPE).
    let first = match (cmd, bytes, lines) {
        ("head", Some((' ' | '+', n)), _) => Some(Wants::Bytes(n)),
        ("head", None, (' ' | '+', n)) => Some(Wants::Lines(n)),
        _ => None,
    };
    if let Some(first) = first {
        let many = (a.operands.len() > 1 || a.has('v')) && !a.has('q');
        let (mut current, mut left, mut shown) = (usize::MAX, first, 0);
        let wanted = match first {
            Wants::Bytes(n) => n as u64,
            Wants::Lines(_) => 0,
        };
        // What was read of stdin past the last byte printed.
        let mut unused = Vec::new();
        sh_utility::sys::with_device_limit(wanted, || {
            each_input_while(
                sh,
                cmd,
                &a.operands,
                io,
                &mut status,
                Some(PASS_THROUGH_CHUNK),
                |k, name, data, _| {
                    if k != current {
                        current = k;
                        left = first;
                        if many {
                            io.print(&format!(
                                "{}==> {} <==\n",
                                if shown > 0 { "\n" } else { "" },
                                if name == "-" { "standard input" } else { name }
                            ));
                        }
                        shown += 1;
                    }
                    let (take, rest) = match left {
                        Wants::Bytes(n) => {
                            let t = n.min(data.len());
                            (t, Wants::Bytes(n - t))
                        }
                        Wants::Lines(0) => (0, Wants::Lines(0)),
                        Wants::Lines(n) => match memchr::memchr_iter(b'\n', &data).nth(n - 1) {
                            Some(i) => (i + 1, Wants::Lines(0)),
                            None => (
                                data.len(),
                                Wants::Lines(n - memchr::memchr_iter(b'\n', &data).count()),
                            ),
                        },
                    };
                    io.out.write(&data[..take]);
                    left = rest;
                    let done = matches!(left, Wants::Bytes(0) | Wants::Lines(0));
                    // (The empty piece that ends the input leaves it as it is.)
                    if done && name == "-" && take < data.len() {
                        unused = data[take..].to_vec();
                    }
                    !done
                },
            )
        });
        // On a seekable stdin the next reader starts after what head printed.
        let mut stdin = io.stdin.borrow_mut();
        if !unused.is_empty() && stdin.seekable() {
            stdin.unread(&unused);
        }
        return Ok(status);
    }
    // `head -c N` of a device (/dev/urandom) takes N bytes of it, however many.
    let wanted = match bytes {
        Some((' ' | '+', n)) if cmd == "head" => n as u64,
        _ => 0,
    };
    let files = sh_utility::sys::with_device_limit(wanted, || {
        // `tail N` of a regular file reads only the file's end.
        let last = match (bytes, lines) {
            (Some((' ', n)), _) => Some((0, Some(n))),
            (None, (' ', n)) => Some((n, None)),
            _ => None,
        };
        match last {
            Some((n, b)) if cmd == "tail" && !a.operands.is_empty() => {
                let mut files = Vec::new();
                for name in &a.operands {
                    let end = (name != "-")
                        .then(|| sh_utility::sys::read_tail(&sh.path(name), n, b))
                        .flatten();
                    match end {
                        Some(Ok(data)) => files.push((name.clone(), data)),
                        Some(Err(e)) => {
                            io.eprint(&format!("tail: error reading '{name}': {}\n", io_msg(&e)));
                            status = 1;
                        }
                        None => files.extend(inputs(
                            sh,
                            cmd,
                            std::slice::from_ref(name),
                            io,
                            &mut status,
                        )),
                    }
                }
                files
            }
            _ => inputs(sh, cmd, &a.operands, io, &mut status),
        }
    });
    // Headers with several file operands (readable or not) or -v, never with -q (the last
    // of them wins in GNU).
    let many = (a.operands.len() > 1 || a.has('v')) && !a.has('q');
    for (k, (name, data)) in files.iter().enumerate() {
        if many {
            io.print(&format!(
                "{}==> {} <==\n",
                if k > 0 { "\n" } else { "" },
                if name == "-" { "standard input" } else { name }
            ));
        }
        // The part of a sequence of `len` items that the count selects.
        let range = |(sign, n): (char, usize), len: usize| -> std::ops::Range<usize> {
            match (cmd, sign) {
                ("head", '-') => 0..len.saturating_sub(n),
                ("head", _) => 0..n.min(len),
                (_, '+') => n.saturating_sub(1).min(len)..len,
                _ => len.saturating_sub(n)..len,
            }
        };
        if let Some(c) = bytes {
            io.out.write(&data[range(c, data.len())]);
            continue;
        }
        let ls: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
        io.out.write(&ls[range(lines, ls.len())].concat());
    }

    Ok(status)
}

fn cmd_wc(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "lwcmL", "", io);
    // GNU's columns, in its order: lines, words, chars, bytes, longest line.
    let mut sel = [a.has('l'), a.has('w'), a.has('m'), a.has('c'), a.has('L')];
    if !sel.iter().any(|s| *s) {
        sel = [true, true, false, true, false];
    }
    let bytes_are_chars = sh_utility::ctx::byte_locale(sh);
    // Lines and bytes add up over pieces of a file; words, characters and the
    // longest line are counted on each input whole.
    let whole = sel[1] || (sel[2] && !bytes_are_chars) || sel[4];
    let chunk = (!whole).then_some(PASS_THROUGH_CHUNK);
    let ncols = sel.iter().filter(|&&s| s).count();
    let width = wc_width(sh, &a.operands, ncols);
    let print = |counts: &[usize; 5], name: &str| {
        let nums: Vec<String> = (0..5)
            .filter(|&k| sel[k])
            .map(|k| format!("{:>width$}", counts[k]))
            .collect();
        let mut line = nums.join(" ");
        if !name.is_empty() {
            line.push(' ');
            line.push_str(name);
        }
        io.print(&format!("{line}\n"));
    };
    // Each input's row prints once it is read, as GNU's does (an unreadable one's
    // error comes in its place).
    let (mut counts, mut tot, mut inputs) = ([0usize; 5], [0usize; 5], 0);
    each_input(
        sh,
        cmd,
        &a.operands,
        io,
        &mut status,
        chunk,
        |_, name, data, done| {
            let data = &*data;
            let lines = memchr::memchr_iter(b'\n', data).count();
            let piece = if whole {
                let text = String::from_utf8_lossy(data);
                [
                    lines,
                    text.split_whitespace().count(),
                    // Characters are bytes in the C locale.
                    if bytes_are_chars {
                        data.len()
                    } else {
                        text.chars().count()
                    },
                    data.len(),
                    longest_line(&text),
                ]
            } else {
                [lines, 0, data.len(), data.len(), 0]
            };
            for (sum, n) in counts.iter_mut().zip(piece) {
                *sum += n;
            }
            if done {
                print(&counts, if a.operands.is_empty() { "" } else { name });
                for k in 0..4 {
                    tot[k] += counts[k];
                }
                // The total of -L is the longest of all, not a sum.
                tot[4] = tot[4].max(counts[4]);
                counts = [0; 5];
                inputs += 1;
            }
        },
    );
    if inputs > 1 {
        print(&tot, "total");
    }

    Ok(status)
}

fn cmd_uniq(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "cdui", "fsw", io);
    let num = |c: char| -> Result<Option<usize>, i32> {
        match a.value(c) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                let what = match c {
                    'f' => "number of fields to skip",
                    's' => "number of bytes to skip",
                    _ => "number of bytes to compare",
                };
                io.eprint(&format!("uniq: {v}: invalid {what}\n"));
                1
            }),
        }
    };
    let (skip_fields, skip_chars, width) = match (num('f'), num('s'), num('w')) {
        (Ok(f), Ok(s), Ok(w)) => (f.unwrap_or(0), s.unwrap_or(0), w),
        _ => return Ok(1),
    };
    // The part of a line compared: -f fields (blanks then non-blanks) and -s
    // characters skipped, then at most -w characters.
    let key = |line: &str| -> String {
        let mut rest = line;
        for _ in 0..skip_fields {
            rest = rest.trim_start_matches([' ', '\t']);
            rest = rest.trim_start_matches(|c: char| c != ' ' && c != '\t');
        }
        let chars = rest.chars().skip(skip_chars);
        match width {
            Some(w) => chars.take(w).collect(),
            None => chars.collect(),
        }
    };
    let files = inputs(
        sh,
        cmd,
        &a.operands[..a.operands.len().min(1)],
        io,
        &mut status,
    );
    let data = files.into_iter().next().map(|(_, d)| d).unwrap_or_default();
    let mut out = String::new();
    let text = String::from_utf8_lossy(&data).into_owned();
    let mut groups: Vec<(String, usize)> = Vec::new();
    for line in crate::text::lines(&text) {
        let same = groups.last().is_some_and(|(g, _)| {
            let (g, line) = (key(g), key(line));
            if a.has('i') {
                g.to_lowercase() == line.to_lowercase()
            } else {
                g == line
            }
        });
        if same {
            if let Some(g) = groups.last_mut() {
                g.1 += 1;
            }
        } else {
            groups.push((line.to_string(), 1));
        }
    }
    for (g, n) in groups {
        if (a.has('d') && n < 2) || (a.has('u') && n > 1) {
            continue;
        }
        if a.has('c') {
            out.push_str(&format!("{n:>7} {g}\n"));
        } else {
            out.push_str(&g);
            out.push('\n');
        }
    }
    io.print(&out);

    Ok(status)
}

fn cmd_nl(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let a = args!(cmd, args, "", "bnwsvi", io);
    Ok(nl(sh, &a, io))
}

fn cmd_rev(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "", "", io);
    let mut out = String::new();
    for (_, data) in inputs(sh, cmd, &a.operands, io, &mut status) {
        let text = String::from_utf8_lossy(&data).into_owned();
        let mut ls: Vec<&str> = crate::text::lines(&text).collect();
        if cmd == "tac" {
            ls.reverse();
        }
        for l in ls {
            match cmd {
                "rev" => out.push_str(&l.chars().rev().collect::<String>()),
                _ => out.push_str(l),
            }
            out.push('\n');
        }
    }
    io.print(&out);

    Ok(status)
}

fn cmd_mkdir(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "pv", "m", io);
    if a.operands.is_empty() {
        io.eprint("mkdir: missing operand\nTry 'mkdir --help' for more information.\n");
        return Ok(1);
    }
    for d in &a.operands {
        // With -p each missing ancestor is made first, and -v names each as a prefix
        // of the operand as typed (`./a//b` makes './a', then './a//b').
        let mut steps: Vec<&str> = Vec::new();
        if a.has('p') {
            for (i, _) in d.match_indices('/') {
                let prefix = &d[..i];
                let last = prefix.rsplit('/').next().unwrap_or("");
                if i > 0 && !prefix.ends_with('/') && !matches!(last, "." | "..") {
                    steps.push(prefix);
                }
            }
        }
        steps.push(d);
        for (k, step) in steps.iter().enumerate() {
            let p = sh.path(step);
            let is_last = k + 1 == steps.len();
            if a.has('p') && p.is_dir() {
                continue;
            }
            match fs::create_dir(&p) {
                Ok(()) => {
                    if a.has('v') {
                        io.print(&format!("mkdir: created directory '{step}'\n"));
                    }
                }
                Err(e) if !is_last && e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    io.eprint(&format!(
                        "mkdir: cannot create directory '{step}': {}\n",
                        io_msg(&e)
                    ));
                    status = 1;
                    break;
                }
            }
        }
    }

    Ok(status)
}

fn cmd_rmdir(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "p", "", io);
    if a.operands.is_empty() {
        io.eprint("rmdir: missing operand\nTry 'rmdir --help' for more information.\n");
        return Ok(1);
    }
    for d in &a.operands {
        if let Err(e) = fs::remove_dir(sh.path(d)) {
            io.eprint(&format!("rmdir: failed to remove '{d}': {}\n", io_msg(&e)));
            status = 1;
            continue;
        }
        // -p: then each parent named in the operand, innermost first.
        let mut rest = d.trim_end_matches('/');
        while a.has('p') {
            let Some((parent, _)) = rest.rsplit_once('/') else {
                break;
            };
            let parent = parent.trim_end_matches('/');
            if parent.is_empty() {
                break;
            }
            if let Err(e) = fs::remove_dir(sh.path(parent)) {
                io.eprint(&format!(
                    "rmdir: failed to remove directory '{parent}': {}\n",
                    io_msg(&e)
                ));
                status = 1;
                break;
            }
            rest = parent;
        }
    }

    Ok(status)
}

fn cmd_rm(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "rRfvid", "", io);
    if a.operands.is_empty() && !a.has('f') {
        io.eprint("rm: missing operand\nTry 'rm --help' for more information.\n");
        return Ok(1);
    }
    let o = RmOpts {
        recursive: a.has('r') || a.has('R'),
        dirs: a.has('d'),
        force: a.has('f'),
        interactive: a.has('i'),
        verbose: a.has('v'),
    };
    for f in &a.operands {
        let last = f.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        if o.recursive && matches!(last, "." | "..") {
            io.eprint(&format!(
                "rm: refusing to remove '.' or '..' directory: skipping '{f}'\n"
            ));
            status = 1;
            continue;
        }
        // GNU's --preserve-root, always on.
        if o.recursive && lexical(&sh.path(f)) == Path::new("/") {
            io.eprint(&format!(
                    "rm: it is dangerous to operate recursively on '{f}'\nrm: use --no-preserve-root to override this failsafe\n"
                ));
            status = 1;
            continue;
        }
        if !rm_path(&sh.path(f), f, &o, io) {
            status = 1;
        }
    }

    Ok(status)
}

fn cmd_ln(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "sfnv", "", io);
    if !a.has('s') {
        io.eprint("ln: hard links are not supported in burrow workspaces; use ln -s\n");
        return Ok(1);
    }
    let (targets, dir): (&[String], Option<&String>) = match a.operands.as_slice() {
        [] => {
            io.eprint("ln: missing file operand\nTry 'ln --help' for more information.\n");
            return Ok(1);
        }
        // One operand: a link of the same name in the current directory.
        [_] => (&a.operands[..], None),
        [t, l] => {
            // A directory (or, without -n, a symlink to one) receives the link.
            let lp = sh.path(l);
            let is_link = fs::symlink_metadata(&lp).is_ok_and(|m| m.file_type().is_symlink());
            if lp.is_dir() && !(a.has('n') && is_link) {
                (std::slice::from_ref(t), Some(l))
            } else {
                return Ok(make_link(sh, t, l, &a, io));
            }
        }
        [ts @ .., d] => {
            if !sh.path(d).is_dir() {
                io.eprint(&format!("ln: target '{d}': No such file or directory\n"));
                return Ok(1);
            }
            (ts, Some(d))
        }
    };
    for t in targets {
        let name = Path::new(t.trim_end_matches('/'))
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let link = match dir {
            Some(d) => format!("{}/{name}", d.trim_end_matches('/')),
            None => name,
        };
        status |= make_link(sh, t, &link, &a, io);
    }

    Ok(status)
}

fn cmd_basename(_sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let a = args!(cmd, args, "az", "s", io);
    if a.operands.is_empty() {
        io.eprint("basename: missing operand\nTry 'basename --help' for more information.\n");
        return Ok(1);
    }
    // -a or -s: every operand is a name; else NAME [SUFFIX].
    let multiple = a.has('a') || a.value('s').is_some();
    if !multiple && a.operands.len() > 2 {
        io.eprint(&format!(
            "basename: extra operand '{}'\nTry 'basename --help' for more information.\n",
            a.operands[2]
        ));
        return Ok(1);
    }
    let (names, suffix) = if multiple {
        (&a.operands[..], a.value('s').map(String::from))
    } else {
        (&a.operands[..1], a.operands.get(1).cloned())
    };
    let end = if a.has('z') { "\0" } else { "\n" };
    let mut out = String::new();
    for p in names {
        let t = p.trim_end_matches('/');
        let mut b = if t.is_empty() {
            if p.is_empty() {
                String::new()
            } else {
                "/".to_string()
            }
        } else {
            t.rsplit('/').next().unwrap_or(t).to_string()
        };
        if let Some(s) = &suffix
            && b.ends_with(s.as_str())
            && b != *s
        {
            b.truncate(b.len() - s.len());
        }
        out.push_str(&b);
        out.push_str(end);
    }
    io.print(&out);

    Ok(0)
}

fn cmd_dirname(_sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let args = &argv[1..];
    // -z: each name ends with NUL, not newline.
    let end = if args.iter().any(|a| a == "-z") {
        '\0'
    } else {
        '\n'
    };
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if names.is_empty() {
        io.eprint("dirname: missing operand\nTry 'dirname --help' for more information.\n");
        return Ok(1);
    }
    for p in names {
        let t = p.trim_end_matches('/');
        let d = match t.rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => t[..i].trim_end_matches('/').to_string(),
            None => {
                if p.starts_with('/') {
                    "/".into()
                } else {
                    ".".into()
                }
            }
        };
        io.print(&format!("{d}{end}"));
    }

    Ok(0)
}

fn cmd_realpath(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    Ok(crate::files::resolve(sh, cmd, args, io))
}

fn cmd_tee(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    let mut status = 0;
    let a = args!(cmd, args, "ai", "", io);
    let data = read_all(&io.stdin);
    for f in &a.operands {
        // The command's own streams, which may be redirected or piped.
        match f.as_str() {
            "/dev/stdout" | "/dev/fd/1" => {
                io.out.write(&data);
                continue;
            }
            "/dev/stderr" | "/dev/fd/2" => {
                io.err.write(&data);
                continue;
            }
            _ => {}
        }
        if let Some(buf) = sh_utility::sys::output_buffer(&sh.path(f)) {
            buf.borrow_mut().extend_from_slice(&data);
            continue;
        }
        let r = if a.has('a') {
            fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(sh.path(f))
                .and_then(|mut h| std::io::Write::write_all(&mut h, &data))
        } else {
            fs::write(sh.path(f), &data)
        };
        if let Err(e) = r {
            io.eprint(&format!("tee: {f}: {}\n", io_msg(&e)));
            status = 1;
        }
    }
    io.out.write(&data);

    Ok(status)
}

fn cmd_sleep(_sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let args = &argv[1..];
    // GNU sleeps for the sum of its operands.
    let mut secs = 0.0;
    for a in args {
        match sh_utility::sys::parse_duration(a) {
            Some(v) => secs += v,
            None => {
                io.eprint(&format!(
                    "sleep: invalid time interval '{a}'\nTry 'sleep --help' for more information.\n"
                ));
                return Ok(1);
            }
        }
    }
    if args.is_empty() {
        io.eprint("sleep: missing operand\nTry 'sleep --help' for more information.\n");
        return Ok(1);
    }
    // In short steps, so the host's wall-clock limit can stop a long sleep promptly;
    // a `timeout` around it ends it at its deadline.
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e9));
    let stop = sh_utility::sys::deadline().map_or(end, |d| d.min(end));
    while std::time::Instant::now() < stop {
        std::thread::sleep(
            (stop - std::time::Instant::now()).min(std::time::Duration::from_millis(20)),
        );
    }
    if sh_utility::sys::deadline_passed() {
        return Err(sh_utility::Flow::Exit(124));
    }

    Ok(0)
}

fn cmd_yes(_sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let args = &argv[1..];
    let word = if args.is_empty() {
        "y".to_string()
    } else {
        args.join(" ")
    };
    // Until its reader has had enough (`yes | head`, `yes | cat | grep -m1 y`: a pipe
    // whose readers end it); else bounded, since a pipe into a reader that runs after
    // it (`yes | while read ...`) or reads to the end (`yes | wc -l`) would never end.
    let chunk = format!("{word}\n").repeat(100);
    let mut rounds = 0;
    while !io.out.broken() && (rounds < 100 || io.out.streams()) {
        io.out.write(chunk.as_bytes());
        rounds += 1;
    }

    Ok(0)
}

/// `ln -s TARGET LINK` (with -f replacing LINK, -v reporting); the status.
fn make_link(sh: &dyn Ctx, target: &str, link: &str, a: &Args, io: &Io) -> i32 {
    let lp = sh.path(link);
    if a.has('f') && fs::symlink_metadata(&lp).is_ok_and(|m| !m.is_dir()) {
        let _ = fs::remove_file(&lp);
    }
    match sh_utility::sys::symlink(target, &lp) {
        Ok(()) => {
            if a.has('v') {
                io.print(&format!("'{link}' -> '{target}'\n"));
            }
            0
        }
        Err(e) => {
            io.eprint(&format!(
                "ln: failed to create symbolic link '{link}': {}\n",
                io_msg(&e)
            ));
            1
        }
    }
}

/// rm's options.
struct RmOpts {
    recursive: bool,
    dirs: bool,
    force: bool,
    interactive: bool,
    verbose: bool,
}

/// Asks on stderr and reads the answer from stdin, as GNU's -i does: yes when it starts with
/// `y` or `Y`.
pub fn confirm(io: &Io, question: &str) -> bool {
    io.eprint(question);
    sh_utility::io::read_line(&io.stdin).is_some_and(|l| l.trim_start().starts_with(['y', 'Y']))
}

/// Removes `p` (shown as `shown`) as GNU rm does, with -r, -d, -i and -v; false on an error.
fn rm_path(p: &Path, shown: &str, o: &RmOpts, io: &Io) -> bool {
    let m = match fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) => {
            if o.force && e.kind() == std::io::ErrorKind::NotFound {
                return true;
            }
            io.eprint(&format!("rm: cannot remove '{shown}': {}\n", io_msg(&e)));
            return false;
        }
    };
    let fail = |e: std::io::Error| {
        io.eprint(&format!("rm: cannot remove '{shown}': {}\n", io_msg(&e)));
        false
    };
    if m.is_dir() {
        if !o.recursive && !o.dirs {
            io.eprint(&format!("rm: cannot remove '{shown}': Is a directory\n"));
            return false;
        }
        let mut names: Vec<String> = fs::read_dir(p)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        if !names.is_empty() {
            if !o.recursive {
                return fail(std::io::Error::from(std::io::ErrorKind::DirectoryNotEmpty));
            }
            if o.interactive && !confirm(io, &format!("rm: descend into directory '{shown}'? ")) {
                return true;
            }
            let mut ok = true;
            for n in &names {
                let child = format!("{}/{n}", shown.trim_end_matches('/'));
                ok &= rm_path(&p.join(n), &child, o, io);
            }
            if !ok {
                return false;
            }
        }
        if o.interactive && !confirm(io, &format!("rm: remove directory '{shown}'? ")) {
            return true;
        }
        if let Err(e) = fs::remove_dir(p) {
            return fail(e);
        }
        if o.verbose {
            io.print(&format!("removed directory '{shown}'\n"));
        }
        return true;
    }
    if o.interactive {
        let kind = if m.file_type().is_symlink() {
            "symbolic link"
        } else if m.len() == 0 {
            "regular empty file"
        } else {
            "regular file"
        };
        if !confirm(io, &format!("rm: remove {kind} '{shown}'? ")) {
            return true;
        }
    }
    if let Err(e) = fs::remove_file(p) {
        return fail(e);
    }
    if o.verbose {
        io.print(&format!("removed '{shown}'\n"));
    }
    true
}

fn ls(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    if let Some(s) = sh_utility::options::colour_refused("ls", args, 2, io) {
        return s;
    }
    let a = match parse("ls", args, "alAd1RhtrSFp", "", io) {
        Ok(a) => a,
        Err(c) => return c,
    };
    let mut status = 0;
    let ops = if a.operands.is_empty() {
        vec![".".to_string()]
    } else {
        a.operands.clone()
    };
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    for o in &ops {
        let p = sh.path(o);
        // As GNU ls: an operand that is a symlink is listed itself with -l, -d and -F (its
        // directory's contents otherwise), and a dangling one is listed as it is.
        let link = fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        match fs::metadata(&p) {
            Ok(m) if m.is_dir() && !a.has('d') && !(link && (a.has('l') || a.has('F'))) => {
                dirs.push(o.clone())
            }
            Ok(_) => files.push(o.clone()),
            Err(_) if link => files.push(o.clone()),
            Err(e) => {
                io.eprint(&format!("ls: cannot access '{o}': {}\n", io_msg(&e)));
                status = 2;
            }
        }
    }
    files.sort();
    dirs.sort();
    let mut out = String::new();
    let entry = |name: &str, full: &Path| -> String {
        let mut n = name.to_string();
        // -F and -p classify the entry itself (a symlink is `@`, not its target's kind).
        let own = fs::symlink_metadata(full);
        let is_link = own.as_ref().is_ok_and(|m| m.file_type().is_symlink());
        if (a.has('F') || a.has('p')) && own.as_ref().is_ok_and(|m| m.is_dir()) {
            n.push('/');
        } else if a.has('F') && is_link && !a.has('l') {
            n.push('@');
        }
        if a.has('l') {
            let m = fs::symlink_metadata(full);
            let (kind, size) = match &m {
                Ok(m) if m.is_dir() => ('d', 4096),
                Ok(m) if m.file_type().is_symlink() => ('l', m.len()),
                Ok(m) if sh_utility::sys::is_char_device(&m.file_type()) => ('c', 0),
                Ok(m) => ('-', m.len()),
                Err(_) => ('?', 0),
            };
            let perm = match kind {
                'd' => "rwxr-xr-x",
                'c' => "rw-rw-rw-",
                // As on Linux: a link's own permissions are all bits.
                'l' => "rwxrwxrwx",
                _ => "rw-r--r--",
            };
            let mtime = m
                .as_ref()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            // -h: GNU's human-readable sizes (powers of 1024, rounded up).
            let size = if a.has('h') {
                crate::disk::human(size, 1024)
            } else {
                size.to_string()
            };
            let mut line = format!(
                "{kind}{perm} 1 agent agent {size:>8} {} {n}",
                sh_utility::time::strftime(mtime, "%b %e %H:%M")
            );
            if kind == 'l'
                && let Ok(t) = fs::read_link(full)
            {
                line.push_str(&format!(" -> {}", t.display()));
            }
            line
        } else {
            n
        }
    };
    for f in &files {
        out.push_str(&entry(f, &sh.path(f)));
        out.push('\n');
    }
    let show_header = ops.len() > 1 || a.has('R');
    let mut queue: Vec<String> = dirs;
    let mut first = files.is_empty();
    while !queue.is_empty() {
        let d = queue.remove(0);
        let full = sh.path(&d);
        let mut names: Vec<String> = match fs::read_dir(&full) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(e) => {
                io.eprint(&format!(
                    "ls: cannot open directory '{d}': {}\n",
                    io_msg(&e)
                ));
                status = 2;
                continue;
            }
        };
        if !(a.has('a') || a.has('A')) {
            names.retain(|n| !n.starts_with('.'));
        }
        names.sort();
        if a.has('t') {
            names.sort_by_key(|n| {
                std::cmp::Reverse(fs::metadata(full.join(n)).and_then(|m| m.modified()).ok())
            });
        }
        if a.has('S') {
            names.sort_by_key(|n| {
                std::cmp::Reverse(fs::metadata(full.join(n)).map(|m| m.len()).unwrap_or(0))
            });
        }
        if a.has('r') {
            names.reverse();
        }
        if a.has('a') {
            names.insert(0, "..".into());
            names.insert(0, ".".into());
        }
        if show_header {
            if !first {
                out.push('\n');
            }
            out.push_str(&format!("{d}:\n"));
        }
        first = false;
        if a.has('l') {
            out.push_str(&format!("total {}\n", names.len() * 4));
        }
        let mut subdirs = Vec::new();
        for n in &names {
            // `..` of a mount's root (`/workspace/..`) is `/`: name it so, the sandbox's
            // mounts do not lead back above themselves.
            let target = if n == ".." {
                full.parent()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| full.clone())
            } else {
                full.join(n)
            };
            out.push_str(&entry(n, &target));
            out.push('\n');
            if a.has('R') && n != "." && n != ".." && full.join(n).is_dir() {
                subdirs.push(if d == "." {
                    format!("./{n}")
                } else {
                    format!("{d}/{n}")
                });
            }
        }
        for (i, s) in subdirs.into_iter().enumerate() {
            queue.insert(i, s);
        }
    }
    io.print(&out);
    status
}

/// The display width of the longest line (`wc -L`): tabs to the next multiple of 8, a
/// character one column.
/// The width of wc's columns, by GNU's rule: none for one count of one input; else the
/// digits of the regular files' total size, and at least 7 when an input is not a regular
/// file (stdin, a device).
fn wc_width(sh: &dyn Ctx, operands: &[String], ncols: usize) -> usize {
    if ncols == 1 && operands.len() <= 1 {
        return 0;
    }
    if operands.is_empty() {
        return 7;
    }
    let (mut total, mut least) = (0u64, 1);
    for op in operands {
        let meta = if op == "-" {
            None
        } else {
            match std::fs::metadata(sh.path(op)) {
                Ok(m) => Some(m),
                // An unreadable operand has no row and does not count.
                Err(_) => continue,
            }
        };
        match meta {
            Some(m) if m.is_file() => total += m.len(),
            _ => least = 7,
        }
    }
    total.to_string().len().max(least)
}

fn longest_line(text: &str) -> usize {
    let mut best = 0;
    for line in text.split('\n') {
        let mut col = 0;
        for c in line.chars() {
            match c {
                '\t' => col = (col / 8 + 1) * 8,
                '\r' | '\x0c' => col = 0,
                c if c.is_control() => {}
                _ => col += 1,
            }
        }
        best = best.max(col);
    }
    best
}

/// `seq [-w] [-s SEP] [-f FORMAT] [FIRST [INCREMENT]] LAST`.
fn seq(args: &[String], io: &Io) -> i32 {
    let mut sep = "\n".to_string();
    let mut format: Option<String> = None;
    let mut equal_width = false;
    let mut nums: Vec<String> = Vec::new();
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        k += 1;
        let value = |k: &mut usize, inline: &str| -> Option<String> {
            if !inline.is_empty() {
                return Some(inline.to_string());
            }
            *k += 1;
            args.get(*k - 1).cloned()
        };
        if a == "-w" || a == "--equal-width" {
            equal_width = true;
        } else if let Some(v) = a
            .strip_prefix("-s")
            .or_else(|| a.strip_prefix("--separator="))
        {
            match value(&mut k, v) {
                Some(v) => sep = v,
                None => return seq_usage(io, "option requires an argument -- 's'"),
            }
        } else if let Some(v) = a.strip_prefix("-f").or_else(|| a.strip_prefix("--format=")) {
            match value(&mut k, v) {
                Some(v) => format = Some(v),
                None => return seq_usage(io, "option requires an argument -- 'f'"),
            }
        } else if a == "--" {
            nums.extend(args[k..].iter().cloned());
            break;
        } else {
            nums.push(a.clone());
        }
    }
    if format.is_some() && equal_width {
        io.eprint("seq: format string may not be specified when printing equal width strings\nTry 'seq --help' for more information.\n");
        return 1;
    }
    let mut parsed = Vec::new();
    for n in &nums {
        match n.parse::<f64>() {
            Ok(v) if n.trim() == n && !n.is_empty() => parsed.push(v),
            _ => {
                io.eprint(&format!(
                    "seq: invalid floating point argument: '{n}'\nTry 'seq --help' for more information.\n"
                ));
                return 1;
            }
        }
    }
    let (first, step, last) = match parsed.as_slice() {
        [l] => (1.0, 1.0, *l),
        [f, l] => (*f, 1.0, *l),
        [f, s, l] => (*f, *s, *l),
        [] => return seq_usage(io, "missing operand"),
        _ => {
            return seq_usage(io, &format!("extra operand '{}'", nums[3]));
        }
    };
    if step == 0.0 {
        io.eprint(&format!(
            "seq: invalid Zero increment value: '{}'\nTry 'seq --help' for more information.\n",
            nums[1]
        ));
        return 1;
    }
    // Decimal places as GNU: the most any operand was written with.
    let places = |s: &str| -> usize {
        if s.contains(['e', 'E']) {
            return 0;
        }
        s.split_once('.').map_or(0, |(_, f)| f.len())
    };
    let prec = match nums.len() {
        1 => places(&nums[0]),
        2 => places(&nums[0]).max(places(&nums[1])),
        _ => places(&nums[0]).max(places(&nums[1])),
    };
    let mut values = Vec::new();
    let mut i: u64 = 0;
    loop {
        let x = first + step * i as f64;
        if (step > 0.0 && x > last + 1e-9) || (step < 0.0 && x < last - 1e-9) {
            break;
        }
        values.push(x);
        i += 1;
        if values.len() > 10_000_000 {
            break;
        }
    }
    let mut out: Vec<String> = values
        .iter()
        .map(|x| match &format {
            Some(f) => sh_utility::format::printf_format(f, &[format!("{x}")]),
            None => format!("{x:.prec$}"),
        })
        .collect();
    if equal_width {
        let w = out.iter().map(|s| s.len()).max().unwrap_or(0);
        for s in &mut out {
            if s.len() < w {
                let neg = s.starts_with('-');
                let digits = s.trim_start_matches('-').to_string();
                *s = format!(
                    "{}{}{digits}",
                    if neg { "-" } else { "" },
                    "0".repeat(w - s.len())
                );
            }
        }
    }
    if !out.is_empty() {
        io.print(&format!("{}\n", out.join(&sep)));
    }
    0
}

fn seq_usage(io: &Io, msg: &str) -> i32 {
    io.eprint(&format!(
        "seq: {msg}\nTry 'seq --help' for more information.\n"
    ));
    1
}

/// GNU nl: `-b a|t|n` (which lines get numbers: all, non-empty, none), `-n ln|rn|rz`
/// (left, right, zero-padded), `-w WIDTH`, `-s SEP`, `-v START`, `-i STEP`. The regular
/// expression style (`-b pRE`) and the header/footer sections are refused, not ignored.
fn nl(sh: &dyn Ctx, a: &Args, io: &Io) -> i32 {
    let style = a.value('b').unwrap_or("t");
    if !matches!(style, "a" | "t" | "n") {
        let msg = if style.starts_with('p') {
            "nl: the 'p' (regular expression) body numbering style is not supported in burrow\n"
                .to_string()
        } else {
            format!(
                "nl: invalid body numbering style: '{style}'\nTry 'nl --help' for more information.\n"
            )
        };
        io.eprint(&msg);
        return 1;
    }
    let format = a.value('n').unwrap_or("rn");
    if !matches!(format, "ln" | "rn" | "rz") {
        io.eprint(&format!(
            "nl: invalid line numbering format: '{format}'\nTry 'nl --help' for more information.\n"
        ));
        return 1;
    }
    let number = |c: char, default: i64, what: &str| -> Result<i64, ()> {
        match a.value(c) {
            None => Ok(default),
            Some(v) => v.trim().parse::<i64>().map_err(|_| {
                io.eprint(&format!("nl: invalid {what}: '{v}'\n"));
            }),
        }
    };
    let (Ok(width), Ok(start), Ok(step)) = (
        number('w', 6, "line number field width"),
        number('v', 1, "starting line number"),
        number('i', 1, "line number increment"),
    ) else {
        return 1;
    };
    if width < 1 {
        io.eprint(&format!(
            "nl: invalid line number field width: '{width}': Numerical result out of range\n"
        ));
        return 1;
    }
    let width = width as usize;
    let sep = a.value('s').unwrap_or("\t");
    let blank = " ".repeat(width + sep.chars().count());
    let mut status = 0;
    let mut out = String::new();
    let mut n = start;
    for (_, data) in inputs(sh, "nl", &a.operands, io, &mut status) {
        let text = String::from_utf8_lossy(&data).into_owned();
        for l in crate::text::lines(&text) {
            let numbered = match style {
                "a" => true,
                "t" => !l.is_empty(),
                _ => false,
            };
            if numbered {
                let num = match format {
                    "ln" => format!("{n:<width$}"),
                    "rz" if n < 0 => format!("-{:0>w$}", n.unsigned_abs(), w = width - 1),
                    "rz" => format!("{n:0>width$}"),
                    _ => format!("{n:>width$}"),
                };
                out.push_str(&num);
                out.push_str(sep);
                n += step;
            } else {
                out.push_str(&blank);
            }
            out.push_str(l);
            out.push('\n');
        }
    }
    io.print(&out);
    status
}
