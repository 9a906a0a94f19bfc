//! The text utilities, a module each (grep, sed, cut, tr, xargs), and what they and their
//! neighbours share: line splitting as GNU tools see it, BRE to ERE translation, regex error
//! wording, the sorted directory walk, `%`-format and strftime rendering, stat/chmod.

/// The lines of `text` as GNU tools see them: split at `\n` only, so a `\r` before it stays
/// part of the line (str::lines would drop it and silently turn CRLF files into LF).
pub fn lines(text: &str) -> std::str::SplitTerminator<'_, char> {
    text.split_terminator('\n')
}

use std::fs;

use crate::shell::builtins::io_msg;
use crate::shell::io::{Io, read_all};
use crate::shell::{Shell, Status};

mod cut;
mod grep;
mod sed;
mod tr;
mod xargs;

pub use cut::cut;
pub use grep::grep;
pub(crate) use grep::{Anchor, Report, Syntax, Target, build_regex};
pub use sed::sed;
pub use tr::tr;
pub use xargs::xargs;

/// Translates a POSIX basic regular expression into the `regex` crate's syntax.
pub fn bre_to_ere(p: &str) -> String {
    let mut out = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(x @ ('(' | ')' | '|' | '{' | '}' | '+' | '?')) => out.push(x),
                Some('<') | Some('>') => out.push_str("\\b"),
                Some(x) => {
                    out.push('\\');
                    out.push(x);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '|' | '{' | '}' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            '[' => {
                // Copy a bracket expression verbatim.
                out.push('[');
                let mut first = true;
                while let Some(x) = chars.next() {
                    if x == ']' && !first {
                        out.push(']');
                        break;
                    }
                    if x == '[' && chars.peek() == Some(&':') {
                        out.push('[');
                        for y in chars.by_ref() {
                            out.push(y);
                            if y == ']' {
                                break;
                            }
                        }
                        first = false;
                        continue;
                    }
                    if x == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(x);
                    }
                    first = x == '^' && first;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// GNU grep's wording of the common regular-expression errors.
pub fn regex_error(e: &regex::Error) -> String {
    let msg = e.to_string();
    let last = msg.lines().last().unwrap_or("").trim().to_string();
    if last.contains("unclosed group") {
        "Unmatched ( or \\(".into()
    } else if last.contains("unopened group") {
        "Unmatched ) or \\)".into()
    } else if last.contains("unclosed character class") {
        "Unmatched [, [^, [:, [., or [=".into()
    } else if last.contains("repetition operator missing expression") {
        "Invalid preceding regular expression".into()
    } else {
        last.trim_start_matches("error: ").to_string()
    }
}

/// ERE as the `regex` crate wants it (`\<`, `\>` word boundaries).
fn ere(p: &str) -> String {
    p.replace("\\<", "\\b").replace("\\>", "\\b")
}

/// What a walked entry is, from the directory listing itself (no stat per entry: WASI's
/// `read-directory` already says).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

pub fn walk_typed(
    root: &std::path::Path,
    display: &str,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    walk_with(root, display, &mut NoFilter, out);
}

/// Hooks of a walk (rg's ignore files): state a directory adds while it is walked, and which
/// entries are left out (an excluded directory is not entered).
pub trait WalkFilter {
    /// Entering `dir`, whose entries (names and kinds, sorted) are `listing`; true when
    /// state was pushed that `leave` must pop.
    fn enter(&mut self, _dir: &std::path::Path, _listing: &[(String, Kind)]) -> bool {
        false
    }
    fn leave(&mut self) {}
    fn skip(&self, _path: &std::path::Path, _is_dir: bool) -> bool {
        false
    }
}

struct NoFilter;

impl WalkFilter for NoFilter {}

/// A directory's entry names, sorted (unreadable entries left out).
pub fn sorted_names(rd: std::fs::ReadDir) -> Vec<String> {
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every entry under `root` that `filter` keeps, in sorted order, depth first, shown as
/// `display/...`.
pub fn walk_with(
    root: &std::path::Path,
    display: &str,
    filter: &mut dyn WalkFilter,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    let Ok(rd) = fs::read_dir(root) else { return };
    let mut entries: Vec<(String, Kind)> = rd
        .filter_map(|e| e.ok())
        .map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(t) if t.is_dir() => Kind::Dir,
                _ => Kind::File,
            };
            (e.file_name().to_string_lossy().into_owned(), kind)
        })
        .collect();
    entries.sort();
    let pushed = filter.enter(root, &entries);
    for (n, kind) in entries {
        let full = root.join(&n);
        if filter.skip(&full, kind == Kind::Dir) {
            continue;
        }
        let disp = if display.ends_with('/') {
            format!("{display}{n}")
        } else {
            format!("{display}/{n}")
        };
        if kind == Kind::Dir {
            out.push((disp.clone(), full.clone(), kind));
            walk_with(&full, &disp, filter, out);
        } else {
            out.push((disp, full, kind));
        }
    }
    if pushed {
        filter.leave();
    }
}

pub fn misc(sh: &Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let ops: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut status = 0;
    match cmd {
        "chmod" => {
            // Options -R and -f (accepted: there are no modes to change); an argument like
            // `-x` or `-rw` is a mode, as GNU reads it; any other option is refused.
            let mut ops: Vec<&String> = Vec::new();
            let mut only_ops = false;
            let mut quiet = false;
            for a in args {
                let letters = a.strip_prefix('-').unwrap_or("");
                // GNU chmod reads these letters as a mode, not options.
                let is_mode = !letters.is_empty()
                    && letters.chars().all(|c| "rwxXstugoa01234567,+=".contains(c));
                if only_ops || !a.starts_with('-') || a == "-" || is_mode {
                    ops.push(a);
                    continue;
                }
                match a.as_str() {
                    "--" => only_ops = true,
                    "--recursive" => {}
                    "--silent" | "--quiet" => quiet = true,
                    l if l.starts_with("--") => {
                        io.eprint(&format!(
                            "chmod: unrecognized option '{l}'\nTry 'chmod --help' for more information.\n"
                        ));
                        return 1;
                    }
                    _ => {
                        quiet |= letters.contains('f');
                        if let Some(c) = letters.chars().find(|c| !"Rf".contains(*c)) {
                            io.eprint(&format!(
                                "chmod: invalid option -- '{c}'\nTry 'chmod --help' for more information.\n"
                            ));
                            return 1;
                        }
                    }
                }
            }
            if ops.len() < 2 {
                // A mode given like an option (`-x`) is not named, as in GNU.
                let msg = match ops.first() {
                    Some(m) if !m.starts_with('-') => format!("missing operand after '{m}'"),
                    _ => "missing operand".to_string(),
                };
                io.eprint(&format!(
                    "chmod: {msg}\nTry 'chmod --help' for more information.\n"
                ));
                return 1;
            }
            for f in ops.iter().skip(1) {
                if let Err(e) = fs::metadata(sh.path(f)) {
                    if !quiet {
                        io.eprint(&format!("chmod: cannot access '{f}': {}\n", io_msg(&e)));
                    }
                    status = 1;
                }
            }
        }
        _ => {
            if let Some(s) = crate::utils::files::stat_format(sh, args, io) {
                return s;
            }
            for f in ops {
                match fs::symlink_metadata(sh.path(f)) {
                    Ok(m) => io.print(&format!(
                        "  File: {f}\n  Size: {}\t{}\n",
                        m.len(),
                        if m.is_dir() {
                            "directory"
                        } else if m.file_type().is_symlink() {
                            "symbolic link"
                        } else {
                            "regular file"
                        }
                    )),
                    Err(e) => {
                        io.eprint(&format!("stat: cannot statx '{f}': {}\n", io_msg(&e)));
                        status = 1;
                    }
                }
            }
        }
    }
    status
}

/// Expands the `%X` directives of `fmt` with `each`, which returns false for a directive it
/// does not know (kept as written); `%%` is `%`.
pub fn percent_format(fmt: &str, mut each: impl FnMut(char, &mut String) -> bool) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(d) => {
                if !each(d, &mut out) {
                    out.push('%');
                    out.push(d);
                }
            }
            None => out.push('%'),
        }
    }
    out
}

/// A small strftime for `date +FORMAT` (UTC).
pub fn strftime(secs: i64, fmt: &str) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = crate::utils::files::civil_from_days(days);
    let wday = (days + 4).rem_euclid(7) as usize;
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const LONG_DAY: [&str; 7] = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    const LONG_MON: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (hour, minute) = (rem / 3600, rem % 3600 / 60);
    // Day of the year: days since January 1st of `year`, plus one.
    let jan1 = crate::utils::files::days_from_civil(year, 1, 1);
    let yday = days - jan1 + 1;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    percent_format(fmt, |d, out| {
        match d {
            'Y' => out.push_str(&year.to_string()),
            'm' => out.push_str(&format!("{month:02}")),
            'd' => out.push_str(&format!("{day:02}")),
            'e' => out.push_str(&format!("{day:>2}")),
            'H' => out.push_str(&format!("{:02}", rem / 3600)),
            'M' => out.push_str(&format!("{:02}", rem % 3600 / 60)),
            'S' => out.push_str(&format!("{:02}", rem % 60)),
            's' => out.push_str(&secs.to_string()),
            'b' | 'h' => out.push_str(MON[(month - 1) as usize]),
            'a' => out.push_str(DAY[wday]),
            'F' => out.push_str(&format!("{year}-{month:02}-{day:02}")),
            'T' => out.push_str(&format!(
                "{:02}:{:02}:{:02}",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )),
            'Z' => out.push_str("UTC"),
            'j' => out.push_str(&format!("{yday:03}")),
            'y' => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            'C' => out.push_str(&format!("{:02}", year.div_euclid(100))),
            'A' => out.push_str(LONG_DAY[wday]),
            'B' => out.push_str(LONG_MON[(month - 1) as usize]),
            'D' => out.push_str(&format!("{month:02}/{day:02}/{:02}", year.rem_euclid(100))),
            'R' => out.push_str(&format!("{hour:02}:{minute:02}")),
            'u' => out.push_str(&(if wday == 0 { 7 } else { wday }).to_string()),
            'w' => out.push_str(&wday.to_string()),
            'N' => out.push_str("000000000"),
            'z' => out.push_str("+0000"),
            'p' => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            'I' => out.push_str(&format!("{hour12:02}")),
            'k' => out.push_str(&format!("{hour:>2}")),
            'l' => out.push_str(&format!("{hour12:>2}")),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            _ => return false,
        }
        true
    })
}
