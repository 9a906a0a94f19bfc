//! Text utilities with more options: grep, sed, sort, cut, tr, find, xargs, and small helpers.

/// The lines of `text` as GNU tools see them: split at `\n` only, so a `\r` before it stays
/// part of the line (str::lines would drop it and silently turn CRLF files into LF).
pub fn lines(text: &str) -> std::str::SplitTerminator<'_, char> {
    text.split_terminator('\n')
}

use std::fs;

use crate::builtins::io_msg;
use crate::io::{Io, read_all};
use crate::shell::{Shell, Status};

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
    /// Entering `dir`; true when state was pushed that `leave` must pop.
    fn enter(&mut self, _dir: &std::path::Path) -> bool {
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
    let pushed = filter.enter(root);
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

pub fn grep(sh: &Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let mut pats: Vec<String> = Vec::new();
    let (mut ops, mut flags) = (Vec::new(), std::collections::BTreeSet::new());
    let (mut after, mut before) = (0usize, 0usize);
    let (mut includes, mut excludes, mut exclude_dirs) = (Vec::new(), Vec::new(), Vec::new());
    let mut max_count: Option<usize> = None;
    let mut ignore_mode: Option<bool> = None;
    let mut i = 0;
    let mut only_ops = false;
    while i < args.len() {
        let a = &args[i];
        if only_ops || !a.starts_with('-') || a == "-" {
            ops.push(a.clone());
        } else if a == "--" {
            only_ops = true;
        } else if let Some(l) = a.strip_prefix("--") {
            let (k, v) = l
                .split_once('=')
                .map(|(k, v)| (k, Some(v.to_string())))
                .unwrap_or((l, None));
            match k {
                "include" => includes.extend(v),
                "exclude" => excludes.extend(v),
                "exclude-dir" => exclude_dirs.extend(v),
                "recursive" => {
                    flags.insert('r');
                }
                "ignore-case" => {
                    flags.insert('i');
                }
                "line-number" => {
                    flags.insert('n');
                }
                "count" => {
                    flags.insert('c');
                }
                "files-with-matches" => {
                    flags.insert('l');
                }
                "invert-match" => {
                    flags.insert('v');
                }
                "word-regexp" => {
                    flags.insert('w');
                }
                "only-matching" => {
                    flags.insert('o');
                }
                "perl-regexp" => {
                    flags.insert('P');
                }
                "color" | "colour" => {}
                // rg's ignore files (`all`: .gitignore too, `dot`: .ignore/.rgignore only);
                // the shell's own flag, not GNU grep's.
                "burrow-ignore" if cmd == "rg" => {
                    ignore_mode = match v.as_deref() {
                        Some("all") => Some(true),
                        Some("dot") => Some(false),
                        _ => None,
                    };
                }
                _ => {
                    io.eprint(&format!("{cmd}: unrecognized option '--{k}'\nUsage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"));
                    return 2;
                }
            }
        } else {
            let body: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < body.len() {
                let c = body[j];
                if "eABCm".contains(c) {
                    let rest: String = body[j + 1..].iter().collect();
                    let v = if !rest.is_empty() {
                        rest
                    } else {
                        i += 1;
                        match args.get(i) {
                            Some(v) => v.clone(),
                            None => {
                                io.eprint(&format!("{cmd}: option requires an argument -- '{c}'\nUsage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"));
                                return 2;
                            }
                        }
                    };
                    match c {
                        'e' => pats.push(v),
                        'A' => after = v.parse().unwrap_or(0),
                        'B' => before = v.parse().unwrap_or(0),
                        'C' => {
                            after = v.parse().unwrap_or(0);
                            before = after;
                        }
                        _ => max_count = v.parse().ok(),
                    }
                    break;
                } else if "rRnilLcvEFPowxqsHhIZ".contains(c) {
                    flags.insert(c);
                } else if c.is_ascii_digit() {
                    let n: String = body[j..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit())
                        .collect();
                    after = n.parse().unwrap_or(0);
                    before = after;
                    j += n.len();
                    continue;
                } else {
                    io.eprint(&format!("{cmd}: invalid option -- '{c}'\nUsage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"));
                    return 2;
                }
                j += 1;
            }
        }
        i += 1;
    }
    if pats.is_empty() {
        if ops.is_empty() {
            io.eprint("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n");
            return 2;
        }
        pats.push(ops.remove(0));
    }
    let fixed = flags.contains(&'F') || cmd == "fgrep";
    let extended = flags.contains(&'E') || cmd == "egrep";
    // -P: Perl syntax, which the regex crate reads natively except look-around,
    // back-references and \K; those are refused below, never matched differently.
    let perl = flags.contains(&'P');
    let parts: Vec<String> = pats
        .iter()
        .flat_map(|p| p.split('\n').map(String::from).collect::<Vec<_>>())
        .map(|p| {
            if fixed {
                regex::escape(&p)
            } else if perl {
                p.clone()
            } else if extended {
                ere(&p)
            } else {
                bre_to_ere(&p)
            }
        })
        .map(|p| {
            if flags.contains(&'w') {
                format!(r"\b(?:{p})\b")
            } else if flags.contains(&'x') {
                format!("^(?:{p})$")
            } else {
                p
            }
        })
        .collect();
    // A bytes regex over whole files (no UTF-8 copy, no per-line calls); `^`/`$` at line ends.
    let re = match regex::bytes::RegexBuilder::new(
        &parts
            .iter()
            .map(|p| format!("(?:{p})"))
            .collect::<Vec<_>>()
            .join("|"),
    )
    .case_insensitive(flags.contains(&'i'))
    .multi_line(true)
    .build()
    {
        Ok(r) => r,
        Err(e) if perl => {
            io.eprint(&format!(
                "{cmd}: this Perl regex needs a feature burrow's grep -P does not have (look-around, back-references, \\K or possessive quantifiers): {}\n",
                regex_error(&e)
            ));
            return 2;
        }
        Err(e) => {
            io.eprint(&format!("{cmd}: {}\n", regex_error(&e)));
            return 2;
        }
    };
    let recursive = flags.contains(&'r') || flags.contains(&'R');
    if ops.is_empty() && recursive {
        ops.push(".".into());
    }
    // Files are read one at a time as they are searched.
    let mut targets: Vec<(String, Target)> = Vec::new();
    let mut status_err = false;
    if ops.is_empty() {
        targets.push(("(standard input)".into(), Target::Data(read_all(&io.stdin))));
    }
    let glob_ok = |name: &str| {
        let base = name.rsplit('/').next().unwrap_or(name);
        (includes.is_empty()
            || includes
                .iter()
                .any(|g| crate::expand::pattern_matches(g, base)))
            && !excludes
                .iter()
                .any(|g| crate::expand::pattern_matches(g, base))
    };
    for o in &ops {
        if o == "-" {
            targets.push(("(standard input)".into(), Target::Data(read_all(&io.stdin))));
            continue;
        }
        let p = sh.path(o);
        match fs::metadata(&p) {
            Ok(m) if m.is_dir() => {
                if !recursive {
                    io.eprint(&format!("{cmd}: {o}: Is a directory\n"));
                    continue;
                }
                let mut all = Vec::new();
                match ignore_mode {
                    Some(vcs) => {
                        crate::ignore_walk::walk(&p, o.trim_end_matches('/'), vcs, &mut all)
                    }
                    None => walk_typed(&p, o.trim_end_matches('/'), &mut all),
                }
                for (disp, full, kind) in all {
                    let excluded_dir = !exclude_dirs.is_empty()
                        && disp.split('/').any(|seg| {
                            exclude_dirs
                                .iter()
                                .any(|g| crate::expand::pattern_matches(g, seg))
                        });
                    if excluded_dir || kind == Kind::Dir || !glob_ok(&disp) {
                        continue;
                    }
                    // -r skips symlinks met on the way; -R follows them (to files).
                    if kind == Kind::Symlink && (flags.contains(&'r') || full.is_dir()) {
                        continue;
                    }
                    targets.push((disp, Target::Path(full)));
                }
            }
            Ok(_) => targets.push((o.clone(), Target::Path(p))),
            Err(e) => {
                if !flags.contains(&'s') {
                    io.eprint(&format!("{cmd}: {o}: {}\n", io_msg(&e)));
                }
                status_err = true;
            }
        }
    }
    let show_names = if flags.contains(&'h') {
        false
    } else {
        flags.contains(&'H') || targets.len() > 1 || recursive
    };
    let mut any = false;
    let mut out: Vec<u8> = Vec::new();
    let invert = flags.contains(&'v');
    let numbers = flags.contains(&'n');
    for (name, target) in targets {
        let data = match target {
            Target::Data(d) => d,
            Target::Path(p) => match crate::sys::read(&p) {
                Ok(d) => d,
                Err(_) => continue,
            },
        };
        // Flush big outputs as they grow instead of holding them all.
        if out.len() > 1 << 16 {
            io.out.write(&out);
            out.clear();
        }
        if memchr::memchr(0, &data).is_some() && !flags.contains(&'a') {
            let matched = if invert {
                lines_of(&data).any(|(s, e)| !re.is_match(&data[s..e]))
            } else {
                !matching_lines(&re, &data, 1).is_empty()
            };
            if matched {
                any = true;
                if !flags.contains(&'q')
                    && !flags.contains(&'l')
                    && !flags.contains(&'c')
                    && !flags.contains(&'I')
                {
                    out.extend_from_slice(format!("Binary file {name} matches\n").as_bytes());
                } else if flags.contains(&'l') {
                    out.extend_from_slice(format!("{name}\n").as_bytes());
                }
            }
            continue;
        }
        let limit = max_count.unwrap_or(usize::MAX);
        // (line index, start, end) of each shown line and whether it matched.
        let hits: Vec<(usize, usize, usize)> = if invert || before > 0 || after > 0 {
            lines_of(&data)
                .enumerate()
                .filter(|(_, (s, e))| re.is_match(&data[*s..*e]) != invert)
                .map(|(i, (s, e))| (i, s, e))
                .take(limit)
                .collect()
        } else {
            matching_lines(&re, &data, limit)
        };
        if !hits.is_empty() {
            any = true;
        }
        if flags.contains(&'q') {
            if any {
                io.out.write(&out);
                return 0;
            }
            continue;
        }
        if flags.contains(&'l') {
            if !hits.is_empty() {
                out.extend_from_slice(format!("{name}\n").as_bytes());
            }
            continue;
        }
        if flags.contains(&'L') {
            if hits.is_empty() {
                out.extend_from_slice(format!("{name}\n").as_bytes());
            }
            continue;
        }
        if flags.contains(&'c') {
            if show_names {
                out.extend_from_slice(format!("{name}:{}\n", hits.len()).as_bytes());
            } else {
                out.extend_from_slice(format!("{}\n", hits.len()).as_bytes());
            }
            continue;
        }
        let prefix = |out: &mut Vec<u8>, i: usize, sep: u8| {
            if show_names {
                out.extend_from_slice(name.as_bytes());
                out.push(sep);
            }
            if numbers {
                out.extend_from_slice((i + 1).to_string().as_bytes());
                out.push(sep);
            }
        };
        let shown: Vec<(usize, usize, usize, bool)> = if before > 0 || after > 0 {
            let all: Vec<(usize, usize)> = lines_of(&data).collect();
            let mut shown: Vec<(usize, usize, usize, bool)> = Vec::new();
            let hitset: std::collections::HashSet<usize> = hits.iter().map(|h| h.0).collect();
            for &(h, _, _) in &hits {
                let first = h.saturating_sub(before);
                let window = all
                    .iter()
                    .enumerate()
                    .skip(first)
                    .take(h + after + 1 - first);
                for (j, &(s, e)) in window {
                    if shown.last().is_none_or(|l| j > l.0) {
                        shown.push((j, s, e, hitset.contains(&j)));
                    }
                }
            }
            shown
        } else {
            hits.iter().map(|&(i, s, e)| (i, s, e, true)).collect()
        };
        let mut prev: Option<usize> = None;
        for (j, s, e, hit) in shown {
            if (before > 0 || after > 0) && prev.is_some_and(|p| j > p + 1) {
                out.extend_from_slice(b"--\n");
            }
            prev = Some(j);
            let line = &data[s..e];
            if !hit {
                prefix(&mut out, j, b'-');
                out.extend_from_slice(line);
                out.push(b'\n');
            } else if flags.contains(&'o') && !invert {
                for m in re.find_iter(line) {
                    if !m.as_bytes().is_empty() {
                        prefix(&mut out, j, b':');
                        out.extend_from_slice(m.as_bytes());
                        out.push(b'\n');
                    }
                }
            } else {
                prefix(&mut out, j, b':');
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
    }
    io.out.write(&out);
    if status_err && !any {
        2
    } else if any {
        0
    } else {
        1
    }
}

/// A file to search: bytes already read (stdin) or a path read when its turn comes.
enum Target {
    Data(Vec<u8>),
    Path(std::path::PathBuf),
}

/// The (start, end) byte range of each line, newline excluded; a final newline ends the last
/// line rather than starting an empty one.
fn lines_of(data: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= data.len() {
            return None;
        }
        let s = pos;
        let e = memchr::memchr(b'\n', &data[s..]).map_or(data.len(), |i| s + i);
        pos = e + 1;
        Some((s, e))
    })
}

/// The lines of `data` that `re` matches, at most `limit`, as (line index, start, end). One
/// regex scan over the whole buffer finds candidates; a candidate that spans lines is checked
/// again on its first line alone, so the result is exactly the per-line answer.
fn matching_lines(
    re: &regex::bytes::Regex,
    data: &[u8],
    limit: usize,
) -> Vec<(usize, usize, usize)> {
    let mut hits = Vec::new();
    let (mut pos, mut line_no, mut counted) = (0usize, 0usize, 0usize);
    while hits.len() < limit && pos < data.len() {
        let Some(m) = re.find_at(data, pos) else {
            break;
        };
        let at = m.start();
        if at >= data.len() {
            break;
        }
        let s = memchr::memrchr(b'\n', &data[pos..at]).map_or(pos, |i| pos + i + 1);
        let e = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i);
        if m.end() <= e || re.is_match(&data[s..e]) {
            line_no += memchr::memchr_iter(b'\n', &data[counted..s]).count();
            counted = s;
            hits.push((line_no, s, e));
        }
        pos = e + 1;
    }
    hits
}

#[derive(Debug)]
enum Addr {
    Line(usize),
    Last,
    Re(regex::Regex),
}

#[derive(Debug)]
enum SedCmd {
    Subst {
        re: regex::Regex,
        rep: String,
        global: bool,
        nth: usize,
        print: bool,
    },
    Delete,
    Print,
    Quit,
    LineNo,
    Append(String),
    Insert(String),
    Change(String),
    Translit(Vec<char>, Vec<char>),
    /// `ADDR{`: the commands up to the item at this index (its `}`) run only on lines the
    /// address selects.
    Block(usize),
    BlockEnd,
}

#[derive(Debug)]
struct SedItem {
    a1: Option<Addr>,
    a2: Option<Addr>,
    negate: bool,
    cmd: SedCmd,
}

fn sed_parse(script: &str, extended: bool) -> Result<Vec<SedItem>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut items = Vec::new();
    // Indexes of the `{` items whose `}` has not come yet.
    let mut open: Vec<usize> = Vec::new();
    let compile = |p: &str, icase: bool| -> Result<regex::Regex, String> {
        let p = if extended { ere(p) } else { bre_to_ere(p) };
        regex::RegexBuilder::new(&p)
            .case_insensitive(icase)
            .build()
            .map_err(|e| {
                format!(
                    "-e expression #1, char 0: {}",
                    e.to_string().lines().last().unwrap_or("")
                )
            })
    };
    let read_delim = |i: &mut usize, d: char| -> String {
        let mut s = String::new();
        while *i < chars.len() && chars[*i] != d {
            if chars[*i] == '\\' && *i + 1 < chars.len() {
                if chars[*i + 1] == d {
                    s.push(d);
                } else if chars[*i + 1] == 'n' {
                    s.push('\n');
                } else {
                    s.push('\\');
                    s.push(chars[*i + 1]);
                }
                *i += 2;
                continue;
            }
            s.push(chars[*i]);
            *i += 1;
        }
        *i += 1;
        s
    };
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let addr = |i: &mut usize| -> Result<Option<Addr>, String> {
            if *i < chars.len() && chars[*i].is_ascii_digit() {
                let n: String = chars[*i..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                *i += n.len();
                return Ok(Some(Addr::Line(n.parse().unwrap_or(0))));
            }
            if *i < chars.len() && chars[*i] == '$' {
                *i += 1;
                return Ok(Some(Addr::Last));
            }
            if *i < chars.len() && chars[*i] == '/' {
                *i += 1;
                let p = read_delim(i, '/');
                return Ok(Some(Addr::Re(compile(&p, false)?)));
            }
            Ok(None)
        };
        let a1 = addr(&mut i)?;
        let mut a2 = None;
        if a1.is_some() && i < chars.len() && chars[i] == ',' {
            i += 1;
            a2 = addr(&mut i)?;
        }
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        let mut negate = false;
        if i < chars.len() && chars[i] == '!' {
            negate = true;
            i += 1;
        }
        let Some(&c) = chars.get(i) else {
            return Err("-e expression #1, char 1: missing command".into());
        };
        i += 1;
        let text_arg = |i: &mut usize| -> String {
            while *i < chars.len() && (chars[*i] == ' ' || chars[*i] == '\\') {
                *i += 1;
                if *i < chars.len() && chars[*i - 1] == '\\' && chars[*i] == '\n' {
                    *i += 1;
                    break;
                }
            }
            let s: String = chars[*i..].iter().take_while(|&&c| c != '\n').collect();
            *i += s.len();
            s
        };
        let cmd = match c {
            's' => {
                let d = chars.get(i).copied().unwrap_or('/');
                i += 1;
                let pat = read_delim(&mut i, d);
                let rep = read_delim(&mut i, d);
                let mut global = false;
                let mut nth = 1;
                let mut print = false;
                let mut icase = false;
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | ' ') {
                    match chars[i] {
                        'g' => global = true,
                        'p' => print = true,
                        'i' | 'I' => icase = true,
                        d if d.is_ascii_digit() => nth = d.to_digit(10).unwrap_or(1) as usize,
                        _ => {}
                    }
                    i += 1;
                }
                let mut r = String::new();
                let rc: Vec<char> = rep.chars().collect();
                let mut k = 0;
                while k < rc.len() {
                    match rc[k] {
                        '&' => r.push_str("${0}"),
                        '\\' if k + 1 < rc.len() && rc[k + 1].is_ascii_digit() => {
                            r.push_str(&format!("${{{}}}", rc[k + 1]));
                            k += 1;
                        }
                        '\\' if k + 1 < rc.len() => {
                            match rc[k + 1] {
                                'n' => r.push('\n'),
                                't' => r.push('\t'),
                                '&' => r.push('&'),
                                o => r.push(o),
                            }
                            k += 1;
                        }
                        '$' => r.push_str("$$"),
                        o => r.push(o),
                    }
                    k += 1;
                }
                SedCmd::Subst {
                    re: compile(&pat, icase)?,
                    rep: r,
                    global,
                    nth,
                    print,
                }
            }
            'd' => SedCmd::Delete,
            'p' => SedCmd::Print,
            'q' => SedCmd::Quit,
            '=' => SedCmd::LineNo,
            'a' => SedCmd::Append(text_arg(&mut i)),
            'i' => SedCmd::Insert(text_arg(&mut i)),
            'c' => SedCmd::Change(text_arg(&mut i)),
            'y' => {
                let d = chars.get(i).copied().unwrap_or('/');
                i += 1;
                let a = read_delim(&mut i, d);
                let b = read_delim(&mut i, d);
                SedCmd::Translit(a.chars().collect(), b.chars().collect())
            }
            '{' => SedCmd::Block(usize::MAX),
            '}' => SedCmd::BlockEnd,
            other => {
                return Err(format!(
                    "-e expression #1, char {}: unknown command: `{other}'",
                    i
                ));
            }
        };
        items.push(SedItem {
            a1,
            a2,
            negate,
            cmd,
        });
        let k = items.len() - 1;
        match items[k].cmd {
            SedCmd::Block(_) => open.push(k),
            SedCmd::BlockEnd => match open.pop() {
                Some(start) => items[start].cmd = SedCmd::Block(k),
                None => return Err(format!("-e expression #1, char {i}: unexpected `}}'")),
            },
            _ => {}
        }
    }
    if !open.is_empty() {
        // GNU sed reports an unclosed block at char 0.
        return Err("-e expression #1, char 0: unmatched `{'".to_string());
    }
    Ok(items)
}

fn sed_run(items: &[SedItem], text: &str, quiet: bool) -> String {
    let ls: Vec<&str> = lines(text).collect();
    let n = ls.len();
    let mut out = String::new();
    let mut active = vec![false; items.len()];
    'lines: for (idx, line) in ls.iter().enumerate() {
        let lineno = idx + 1;
        let mut pat = line.to_string();
        let mut append = Vec::new();
        let mut deleted = false;
        // Inside a block whose address did not select this line: skip to its `}`.
        let mut skip_until: Option<usize> = None;
        for (k, it) in items.iter().enumerate() {
            if let Some(end) = skip_until {
                if k <= end {
                    continue;
                }
                skip_until = None;
            }
            let hit = |a: &Addr, p: &str| match a {
                Addr::Line(l) => *l == lineno,
                Addr::Last => lineno == n,
                Addr::Re(r) => r.is_match(p),
            };
            let selected = match (&it.a1, &it.a2) {
                (None, _) => true,
                (Some(a), None) => hit(a, &pat),
                (Some(a), Some(b)) => {
                    if active[k] {
                        let end = match b {
                            Addr::Line(l) => lineno >= *l,
                            _ => hit(b, &pat),
                        };
                        if end {
                            active[k] = false;
                        }
                        true
                    } else if hit(a, &pat) {
                        let ends_now = matches!(b, Addr::Line(l) if *l <= lineno);
                        active[k] = !ends_now;
                        true
                    } else {
                        false
                    }
                }
            };
            if let SedCmd::Block(end) = it.cmd {
                if selected == it.negate {
                    skip_until = Some(end);
                }
                continue;
            }
            if selected == it.negate {
                continue;
            }
            match &it.cmd {
                SedCmd::Subst {
                    re,
                    rep,
                    global,
                    nth,
                    print,
                } => {
                    let mut changed = false;
                    if *global {
                        let r = re.replace_all(&pat, rep.as_str()).into_owned();
                        changed = r != pat || re.is_match(&pat);
                        pat = r;
                    } else if let Some(m) = re.find_iter(&pat).nth(nth - 1) {
                        let caps = re.captures_at(&pat, m.start());
                        let mut rep_s = String::new();
                        if let Some(c) = caps {
                            c.expand(rep, &mut rep_s);
                        }
                        pat = format!("{}{}{}", &pat[..m.start()], rep_s, &pat[m.end()..]);
                        changed = true;
                    }
                    if changed && *print {
                        out.push_str(&pat);
                        out.push('\n');
                    }
                }
                SedCmd::Delete => {
                    deleted = true;
                    break;
                }
                SedCmd::Print => {
                    out.push_str(&pat);
                    out.push('\n');
                }
                SedCmd::Quit => {
                    if !quiet {
                        out.push_str(&pat);
                        out.push('\n');
                    }
                    break 'lines;
                }
                SedCmd::LineNo => out.push_str(&format!("{lineno}\n")),
                SedCmd::Append(t) => append.push(t.clone()),
                SedCmd::Insert(t) => {
                    out.push_str(t);
                    out.push('\n');
                }
                SedCmd::Change(t) => {
                    out.push_str(t);
                    out.push('\n');
                    deleted = true;
                    break;
                }
                SedCmd::Block(_) | SedCmd::BlockEnd => {}
                SedCmd::Translit(a, b) => {
                    pat = pat
                        .chars()
                        .map(|c| {
                            a.iter()
                                .position(|&x| x == c)
                                .and_then(|i| b.get(i).copied())
                                .unwrap_or(c)
                        })
                        .collect();
                }
            }
        }
        if !deleted && !quiet {
            out.push_str(&pat);
            out.push('\n');
        }
        for a in append {
            out.push_str(&a);
            out.push('\n');
        }
    }
    if !text.ends_with('\n') && out.ends_with('\n') && !text.is_empty() {
        out.pop();
    }
    out
}

pub fn sed(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let (mut quiet, mut inplace, mut extended) = (false, false, false);
    let mut backup: Option<String> = None;
    let mut scripts = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "-n" | "--quiet" | "--silent" => quiet = true,
            "-E" | "-r" | "--regexp-extended" => extended = true,
            "-e" => {
                i += 1;
                scripts.extend(args.get(i).cloned());
            }
            s if s.starts_with("-i") || s.starts_with("--in-place") => {
                inplace = true;
                // -iSUFFIX / --in-place=SUFFIX keeps a backup (`*` in SUFFIX is the name).
                let suffix = s
                    .strip_prefix("--in-place")
                    .map(|r| r.strip_prefix('=').unwrap_or(r))
                    .unwrap_or(&s[2..]);
                if !suffix.is_empty() {
                    backup = Some(suffix.to_string());
                }
            }
            s if s.starts_with('-') && s.len() > 1 && s[1..].chars().all(|c| "nEr".contains(c)) => {
                quiet |= s.contains('n');
                extended |= s.contains('E') || s.contains('r');
            }
            s if s.starts_with('-') && s.len() > 1 => {
                io.eprint(&format!("sed: invalid option -- '{}'\nUsage: sed [OPTION]... {{script-only-if-no-other-script}} [input-file]...\n", &s[1..2]));
                return 1;
            }
            _ => {
                if scripts.is_empty() {
                    scripts.push(a.clone());
                } else {
                    files.push(a.clone());
                }
            }
        }
        i += 1;
    }
    let script = scripts.join("\n");
    let items = match sed_parse(&script, extended) {
        Ok(it) => it,
        Err(e) => {
            io.eprint(&format!("sed: {e}\n"));
            return 1;
        }
    };
    let mut status = 0;
    if files.is_empty() {
        let data = read_all(&io.stdin);
        io.print(&sed_run(&items, &String::from_utf8_lossy(&data), quiet));
        return 0;
    }
    let mut all = String::new();
    for f in &files {
        match crate::sys::read(sh.path(f)) {
            Ok(d) => {
                let t = String::from_utf8_lossy(&d).into_owned();
                if inplace {
                    if let Some(suf) = &backup {
                        let name = if suf.contains('*') {
                            let base = f.rsplit('/').next().unwrap_or(f);
                            let b = suf.replace('*', base);
                            match f.rsplit_once('/') {
                                Some((d, _)) if !b.contains('/') => format!("{d}/{b}"),
                                _ => b,
                            }
                        } else {
                            format!("{f}{suf}")
                        };
                        if let Err(e) = fs::write(sh.path(&name), &d) {
                            io.eprint(&format!("sed: couldn't open file {name}: {}\n", io_msg(&e)));
                            status = 4;
                            continue;
                        }
                    }
                    let out = sed_run(&items, &t, quiet);
                    if let Err(e) = fs::write(sh.path(f), out) {
                        io.eprint(&format!("sed: couldn't open {f}: {}\n", io_msg(&e)));
                        status = 4;
                    }
                } else {
                    all.push_str(&t);
                    if !t.ends_with('\n') && !t.is_empty() {
                        all.push('\n');
                    }
                }
            }
            Err(e) => {
                io.eprint(&format!("sed: can't read {f}: {}\n", io_msg(&e)));
                status = 2;
            }
        }
    }
    if !inplace {
        io.print(&sed_run(&items, &all, quiet));
    }
    status
}

fn ranges(spec: &str) -> Option<Vec<(usize, usize)>> {
    let mut v = Vec::new();
    for part in spec.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                if a.is_empty() { 1 } else { a.parse().ok()? },
                if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                },
            ),
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
        if a == 0 {
            return None;
        }
        v.push((a, b));
    }
    Some(v)
}

pub fn cut(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let mut delim = '\t';
    let (mut fields, mut chars) = (None, None);
    let mut files = Vec::new();
    let mut suppress = false;
    let mut complement = false;
    let mut out_delim: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (k, v) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (long, None),
            };
            let needs = matches!(
                k,
                "delimiter" | "fields" | "characters" | "bytes" | "output-delimiter"
            );
            let v = match (needs, v) {
                (true, Some(v)) => Some(v),
                (true, None) => {
                    i += 1;
                    match args.get(i) {
                        Some(v) => Some(v.clone()),
                        None => {
                            io.eprint(&format!("cut: option '--{k}' requires an argument\nTry 'cut --help' for more information.\n"));
                            return 1;
                        }
                    }
                }
                (false, _) => None,
            };
            match k {
                "delimiter" => delim = v.and_then(|d| d.chars().next()).unwrap_or('\t'),
                "fields" => fields = v,
                "characters" | "bytes" => chars = v,
                "output-delimiter" => out_delim = v,
                "only-delimited" => suppress = true,
                "complement" => complement = true,
                _ => {
                    io.eprint(&format!(
                        "cut: unrecognized option '{a}'\nTry 'cut --help' for more information.\n"
                    ));
                    return 1;
                }
            }
            i += 1;
            continue;
        }
        let mut take = |flag: &str| -> Option<String> {
            if a == flag {
                i += 1;
                args.get(i).cloned()
            } else {
                a.strip_prefix(flag).map(String::from)
            }
        };
        if a.starts_with("-d") {
            delim = take("-d").and_then(|d| d.chars().next()).unwrap_or('\t');
        } else if a.starts_with("-f") {
            fields = take("-f");
        } else if a.starts_with("-c") || a.starts_with("-b") {
            chars = take(if a.starts_with("-c") { "-c" } else { "-b" });
        } else if a == "-s" {
            suppress = true;
        } else if a.starts_with('-') && a.len() > 1 {
            io.eprint(&format!(
                "cut: invalid option -- '{}'\nTry 'cut --help' for more information.\n",
                &a[1..2]
            ));
            return 1;
        } else {
            files.push(a.clone());
        }
        i += 1;
    }
    let (spec, by_field) = match (fields, chars) {
        (Some(f), _) => (f, true),
        (None, Some(c)) => (c, false),
        _ => {
            io.eprint("cut: you must specify a list of bytes, characters, or fields\nTry 'cut --help' for more information.\n");
            return 1;
        }
    };
    let Some(rs) = ranges(&spec) else {
        io.eprint("cut: fields and positions are numbered from 1\nTry 'cut --help' for more information.\n");
        return 1;
    };
    let sel = |n: usize| rs.iter().any(|&(a, b)| n >= a && n <= b) != complement;
    let mut status = 0;
    let mut data = Vec::new();
    if files.is_empty() {
        data = read_all(&io.stdin);
    }
    for f in &files {
        match crate::sys::read(sh.path(f)) {
            Ok(d) => data.extend(d),
            Err(e) => {
                io.eprint(&format!("cut: {f}: {}\n", io_msg(&e)));
                status = 1;
            }
        }
    }
    let text = String::from_utf8_lossy(&data).into_owned();
    let mut out = String::new();
    for l in lines(&text) {
        if by_field {
            if !l.contains(delim) {
                if !suppress {
                    out.push_str(l);
                    out.push('\n');
                }
                continue;
            }
            let parts: Vec<&str> = l
                .split(delim)
                .enumerate()
                .filter(|(k, _)| sel(k + 1))
                .map(|(_, p)| p)
                .collect();
            let joint = out_delim.clone().unwrap_or_else(|| delim.to_string());
            out.push_str(&parts.join(&joint));
        } else {
            // With --output-delimiter, it separates runs of selected characters.
            let mut last: Option<usize> = None;
            for (k, c) in l.chars().enumerate().filter(|(k, _)| sel(k + 1)) {
                if let (Some(d), Some(p)) = (&out_delim, last)
                    && k > p + 1
                {
                    out.push_str(d);
                }
                out.push(c);
                last = Some(k);
            }
        }
        out.push('\n');
    }
    io.print(&out);
    status
}

fn tr_set(s: &str) -> Vec<char> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '['
            && chars.get(i + 1) == Some(&':')
            && let Some(end) = s[i..].find(":]")
        {
            let name = &s[i + 2..i + end];
            let class: Vec<char> = match name {
                "upper" => ('A'..='Z').collect(),
                "lower" => ('a'..='z').collect(),
                "digit" => ('0'..='9').collect(),
                "alpha" => ('A'..='Z').chain('a'..='z').collect(),
                "alnum" => ('0'..='9').chain('A'..='Z').chain('a'..='z').collect(),
                "space" => vec![' ', '\t', '\n', '\r', '\x0b', '\x0c'],
                "blank" => vec![' ', '\t'],
                "punct" => "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars().collect(),
                _ => Vec::new(),
            };
            out.extend(class);
            i += end + 2;
            continue;
        }
        let c = if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
            match chars[i] {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'v' => '\x0b',
                '\\' => '\\',
                // \NNN: one to three octal digits (GNU tr).
                d @ '0'..='7' => {
                    let mut v = d.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.get(i + 1).and_then(|c| c.to_digit(8)) {
                            Some(n) if v * 8 + n <= 0o377 => {
                                v = v * 8 + n;
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    char::from_u32(v).unwrap_or('\0')
                }
                o => o,
            }
        } else {
            chars[i]
        };
        if chars.get(i + 1) == Some(&'-') && i + 2 < chars.len() {
            let e = chars[i + 2];
            for x in c..=e {
                out.push(x);
            }
            i += 3;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

pub fn tr(args: &[String], io: &Io) -> i32 {
    let (mut delete, mut squeeze, mut complement) = (false, false, false);
    let mut sets = Vec::new();
    for a in args {
        if a.starts_with('-') && a.len() > 1 && a[1..].chars().all(|c| "dscC".contains(c)) {
            delete |= a.contains('d');
            squeeze |= a.contains('s');
            complement |= a.contains('c') || a.contains('C');
        } else {
            sets.push(tr_set(a));
        }
    }
    if sets.is_empty() {
        io.eprint("tr: missing operand\nTry 'tr --help' for more information.\n");
        return 1;
    }
    let data = String::from_utf8_lossy(&read_all(&io.stdin)).into_owned();
    let s1 = &sets[0];
    let in1 = |c: char| s1.contains(&c) != complement;
    let mut out = String::new();
    let mut last: Option<char> = None;
    for c in data.chars() {
        let mapped = if delete {
            if in1(c) {
                continue;
            }
            Some(c)
        } else if let Some(s2) = sets.get(1) {
            if in1(c) {
                let pos = if complement {
                    s2.len().saturating_sub(1)
                } else {
                    s1.iter().position(|&x| x == c).unwrap_or(0)
                };
                Some(*s2.get(pos).or(s2.last()).unwrap_or(&c))
            } else {
                Some(c)
            }
        } else {
            Some(c)
        };
        let Some(m) = mapped else { continue };
        let sq_set = if delete || sets.len() < 2 {
            sets.last()
        } else {
            sets.get(1)
        };
        if squeeze && last == Some(m) && sq_set.is_some_and(|s| s.contains(&m)) {
            continue;
        }
        out.push(m);
        last = Some(m);
    }
    io.print(&out);
    0
}

pub fn xargs(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let mut n: Option<usize> = None;
    let mut replace: Option<String> = None;
    let mut i = 0;
    let mut null = false;
    while i < args.len() && args[i].starts_with('-') {
        match args[i].as_str() {
            "-n" => {
                i += 1;
                n = args.get(i).and_then(|v| v.parse().ok());
            }
            "-I" => {
                i += 1;
                replace = args.get(i).cloned();
            }
            "-0" => null = true,
            "-r" | "--no-run-if-empty" | "-t" => {}
            s if s.starts_with("-n") => n = s[2..].parse().ok(),
            s if s.starts_with("-I") => replace = Some(s[2..].to_string()),
            _ => {}
        }
        i += 1;
    }
    let cmd: Vec<String> = if i < args.len() {
        args[i..].to_vec()
    } else {
        vec!["echo".into()]
    };
    let input = String::from_utf8_lossy(&read_all(&io.stdin)).into_owned();
    let items: Vec<String> = if null {
        input
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    } else if replace.is_some() {
        input
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect()
    } else {
        input
            .split_whitespace()
            .map(|s| s.trim_matches(|c| c == '"' || c == '\'').to_string())
            .collect()
    };
    let mut status = 0;
    let run_io = Io {
        stdin: crate::io::input(Vec::new()),
        out: io.out.clone(),
        err: io.err.clone(),
        fds: io.fds.clone(),
    };
    let mut run = |sh: &mut Shell, argv: Vec<String>| {
        let s = sh.dispatch(&argv, &run_io).unwrap_or(1);
        if s != 0 {
            status = 123;
        }
    };
    if let Some(r) = replace {
        for it in items {
            let argv = cmd.iter().map(|a| a.replace(&r, &it)).collect();
            run(sh, argv);
        }
    } else if items.is_empty() {
        if cmd[0] == "echo" {
            run(sh, cmd.clone());
        }
    } else {
        let chunk = n.unwrap_or(items.len()).max(1);
        for group in items.chunks(chunk) {
            let mut argv = cmd.clone();
            argv.extend(group.iter().cloned());
            run(sh, argv);
        }
    }
    Ok(status)
}

pub fn misc(sh: &Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let ops: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut status = 0;
    match cmd {
        "chmod" => {
            for f in ops.iter().skip(1) {
                if let Err(e) = fs::metadata(sh.path(f)) {
                    io.eprint(&format!("chmod: cannot access '{f}': {}\n", io_msg(&e)));
                    status = 1;
                }
            }
        }
        _ => {
            if let Some(s) = crate::files::stat_format(sh, args, io) {
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
    let (year, month, day) = crate::files::civil_from_days(days);
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
    let jan1 = crate::files::days_from_civil(year, 1, 1);
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
