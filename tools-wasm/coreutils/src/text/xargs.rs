//! `xargs`: builds command lines from input items and runs them in the shell. Items are
//! blank-separated with quotes and backslashes as GNU xargs reads them, or lines (-I, -L), or
//! split at one delimiter (-0, -d); a command line takes -n items, -L lines or one item with
//! -I. Exit statuses are GNU's: 123 when a command failed, 124 when one exited 255, 127 when
//! the command does not exist.

use super::*;

/// The options, after the registry's gate (long names arrive as their short forms).
struct Opts {
    max_args: Option<usize>,
    max_lines: Option<usize>,
    replace: Option<String>,
    delim: Option<u8>,
    no_run_if_empty: bool,
    verbose: bool,
}

fn usage(io: &Io, msg: &str) -> Status {
    io.eprint(&format!(
        "xargs: {msg}\nTry 'xargs --help' for more information.\n"
    ));
    Ok(1)
}

/// `-d`'s character: one byte, or an escape (`\n`, `\t`, `\0`, `\\`, `\NNN` octal, `\xHH`).
fn delimiter(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    match b {
        [c] => Some(*c),
        [b'\\', rest @ ..] => match rest {
            [b'n'] => Some(b'\n'),
            [b't'] => Some(b'\t'),
            [b'r'] => Some(b'\r'),
            [b'0'] => Some(0),
            [b'\\'] => Some(b'\\'),
            [b'a'] => Some(7),
            [b'b'] => Some(8),
            [b'f'] => Some(12),
            [b'v'] => Some(11),
            [b'x', hex @ ..] => u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok(),
            oct => u8::from_str_radix(std::str::from_utf8(oct).ok()?, 8).ok(),
        },
        _ => None,
    }
}

/// Items with GNU's quoting (quotes group, a backslash escapes), split at blanks unless
/// `keep_blanks`, and grouped by input line: a line whose last item is followed by a blank
/// continues on the next, as -L counts lines. The message of an unmatched quote comes with
/// the items before it.
fn quoted_items(input: &str, keep_blanks: bool) -> (Vec<Vec<String>>, Option<String>) {
    let mut lines: Vec<Vec<String>> = vec![Vec::new()];
    let mut cur = String::new();
    let mut in_item = false;
    let mut trailing_blank = false;
    let end_item = |lines: &mut Vec<Vec<String>>, cur: &mut String| {
        if let Some(l) = lines.last_mut() {
            l.push(std::mem::take(cur));
        }
    };
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                if in_item {
                    end_item(&mut lines, &mut cur);
                    in_item = false;
                    trailing_blank = false;
                }
                if !trailing_blank && lines.last().is_some_and(|l| !l.is_empty()) {
                    lines.push(Vec::new());
                }
            }
            ' ' | '\t' if !keep_blanks => {
                if in_item {
                    end_item(&mut lines, &mut cur);
                    in_item = false;
                }
                trailing_blank = true;
            }
            '\'' | '"' => {
                in_item = true;
                trailing_blank = false;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\n') | None => {
                            let which = if c == '\'' { "single" } else { "double" };
                            lines.retain(|l| !l.is_empty());
                            return (
                                lines,
                                Some(format!(
                                    "unmatched {which} quote; by default quotes are special to xargs unless you use the -0 option"
                                )),
                            );
                        }
                        Some(o) => cur.push(o),
                    }
                }
            }
            '\\' => {
                in_item = true;
                trailing_blank = false;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            o => {
                in_item = true;
                trailing_blank = false;
                cur.push(o);
            }
        }
    }
    if in_item {
        end_item(&mut lines, &mut cur);
    }
    lines.retain(|l| !l.is_empty());
    (lines, None)
}

pub fn xargs(sh: &mut dyn Ctx, args: &[String], io: &Io) -> Status {
    let mut o = Opts {
        max_args: None,
        max_lines: None,
        replace: None,
        delim: None,
        no_run_if_empty: false,
        verbose: false,
    };
    let mut i = 0;
    // The gate has checked the options; each short one arrives alone or as a cluster.
    while i < args.len() && args[i].starts_with('-') && args[i] != "-" {
        let a = &args[i];
        i += 1;
        if a == "--" {
            break;
        }
        let body: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < body.len() {
            let c = body[j];
            j += 1;
            if "dInLP".contains(c) {
                let v = if j < body.len() {
                    body[j..].iter().collect()
                } else {
                    i += 1;
                    args.get(i - 1).cloned().unwrap_or_default()
                };
                j = body.len();
                let count = |v: &str| -> Result<usize, Status> {
                    match v.parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(usage(
                            io,
                            &format!("invalid number \"{v}\" for -{c} option"),
                        )),
                    }
                };
                match c {
                    'd' => match delimiter(&v) {
                        Some(d) => o.delim = Some(d),
                        None => {
                            return usage(
                                io,
                                &format!(
                                    "invalid input delimiter specification {v}: the delimiter must be either a single character or an escape sequence starting with \\."
                                ),
                            );
                        }
                    },
                    'I' => o.replace = Some(v),
                    'n' => match count(&v) {
                        Ok(n) => o.max_args = Some(n),
                        Err(s) => return s,
                    },
                    'L' => match count(&v) {
                        Ok(n) => o.max_lines = Some(n),
                        Err(s) => return s,
                    },
                    // -P: the commands run one at a time (same output, in order).
                    _ => {
                        if v.parse::<usize>().is_err() {
                            return usage(io, &format!("invalid number \"{v}\" for -P option"));
                        }
                    }
                }
            } else {
                match c {
                    '0' => o.delim = Some(0),
                    'r' => o.no_run_if_empty = true,
                    't' => o.verbose = true,
                    _ => {}
                }
            }
        }
    }
    let cmd: Vec<String> = if i < args.len() {
        args[i..].to_vec()
    } else {
        vec!["echo".into()]
    };
    let input = String::from_utf8_lossy(&read_all(&io.stdin)).into_owned();
    // The input as lines of items (-L and -I count lines; otherwise only items matter).
    let (lines, unmatched): (Vec<Vec<String>>, Option<String>) = match o.delim {
        Some(d) => {
            let d = d as char;
            let mut items: Vec<String> = input.split(d).map(String::from).collect();
            if items.last().is_some_and(|s| s.is_empty()) {
                items.pop();
            }
            (items.into_iter().map(|s| vec![s]).collect(), None)
        }
        // -I: each line is one item (leading blanks dropped, quotes still apply).
        None if o.replace.is_some() => {
            let trimmed: Vec<&str> = input
                .split('\n')
                .map(|l| l.trim_start_matches([' ', '\t']))
                .collect();
            quoted_items(&trimmed.join("\n"), true)
        }
        None => quoted_items(&input, false),
    };
    let mut status = 0;
    let run_io = Io {
        stdin: sh_utility::io::input(Vec::new()),
        out: io.out.clone(),
        err: io.err.clone(),
        fds: io.fds.clone(),
    };
    // Each command line, in order.
    let mut commands: Vec<Vec<String>> = Vec::new();
    if let Some(r) = &o.replace {
        for l in &lines {
            let item = l.join(" ");
            commands.push(cmd.iter().map(|a| a.replace(r.as_str(), &item)).collect());
        }
    } else if let Some(per) = o.max_lines {
        for group in lines.chunks(per) {
            let mut argv = cmd.clone();
            argv.extend(group.iter().flatten().cloned());
            commands.push(argv);
        }
    } else {
        let items: Vec<String> = lines.into_iter().flatten().collect();
        let per = o.max_args.unwrap_or(items.len().max(1));
        for group in items.chunks(per) {
            let mut argv = cmd.clone();
            argv.extend(group.iter().cloned());
            commands.push(argv);
        }
    }
    // Without input the command runs once, unless -r (or -I, which needs an item).
    if commands.is_empty() && !o.no_run_if_empty && o.replace.is_none() && unmatched.is_none() {
        commands.push(cmd.clone());
    }
    // GNU reports an unmatched quote when it reads it, then runs what came before.
    if let Some(m) = &unmatched {
        io.eprint(&format!("xargs: {m}\n"));
    }
    for argv in commands {
        if o.verbose {
            io.eprint(&format!("{}\n", argv.join(" ")));
        }
        let s = match sh.dispatch(&argv, &run_io) {
            Ok(s) | Err(sh_utility::Flow::Exit(s)) => s,
            Err(_) => 1,
        };
        match s {
            0 => {}
            255 => {
                io.eprint(&format!(
                    "xargs: {}: exited with status 255; aborting\n",
                    argv[0]
                ));
                return Ok(124);
            }
            126 | 127 => return Ok(s),
            _ => status = 123,
        }
    }
    if unmatched.is_some() {
        return Ok(1);
    }
    Ok(status)
}
