//! `grep` (and `egrep`, `fgrep`, and `rg`'s search): BRE/ERE/fixed patterns, -r with
//! --include/--exclude, context, counts, -o, -l/-L, -q, -m, and GNU's exit statuses. A
//! streaming stage's stdin is searched a piece at a time (`Report::stream`).

use super::*;

pub fn grep(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    if let Some(s) = sh_utility::options::colour_refused(cmd, args, 2, io) {
        return s;
    }
    let mut pats: Vec<String> = Vec::new();
    let (mut ops, mut flags) = (Vec::new(), std::collections::BTreeSet::new());
    let (mut after, mut before) = (0usize, 0usize);
    let (mut includes, mut excludes, mut exclude_dirs) = (Vec::new(), Vec::new(), Vec::new());
    let mut max_count: Option<usize> = None;
    let mut ignore_mode: Option<bool> = None;
    let mut from_file = false;
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
            // The gate hands the long options that have a short form on as that form.
            match k {
                "include" => includes.extend(v),
                "exclude" => excludes.extend(v),
                "exclude-dir" => exclude_dirs.extend(v),
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
                if "efABCm".contains(c) {
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
                        // -f FILE: a pattern per line (an empty file has none: nothing
                        // matches).
                        'f' => {
                            let data = if v == "-" {
                                read_all(&io.stdin)
                            } else {
                                match sh_utility::sys::read(sh.path(&v)) {
                                    Ok(d) => d,
                                    Err(e) => {
                                        io.eprint(&format!("{cmd}: {v}: {}\n", io_msg(&e)));
                                        return 2;
                                    }
                                }
                            };
                            let text = String::from_utf8_lossy(&data).into_owned();
                            pats.extend(lines(&text).map(str::to_string));
                            from_file = true;
                        }
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
    if pats.is_empty() && !from_file {
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
    let syntax = if fixed {
        Syntax::Fixed
    } else if perl {
        Syntax::Perl
    } else if extended {
        Syntax::Extended
    } else {
        Syntax::Basic
    };
    let anchor = if flags.contains(&'w') {
        Anchor::Word
    } else if flags.contains(&'x') {
        Anchor::Line
    } else {
        Anchor::None
    };
    let re = match build_regex(&pats, syntax, anchor, flags.contains(&'i')) {
        Ok(r) => r,
        Err(e) => {
            io.eprint(&format!("{cmd}: {e}\n"));
            return 2;
        }
    };
    let recursive = flags.contains(&'r') || flags.contains(&'R');
    if ops.is_empty() && recursive {
        ops.push(".".into());
    }
    // A streaming stage's stdin is searched a piece at a time (context and file lists are
    // searched whole).
    // How lines are reported; `names` is whether each starts with its file's name.
    let report_with = |names: bool| Report {
        names,
        numbers: flags.contains(&'n'),
        invert: flags.contains(&'v'),
        only_matching: flags.contains(&'o'),
        files_with: flags.contains(&'l'),
        files_without: flags.contains(&'L'),
        count: flags.contains(&'c'),
        count_zero: true,
        quiet: flags.contains(&'q'),
        before,
        after,
        max: max_count,
        null: flags.contains(&'Z'),
        text: flags.contains(&'a'),
        skip_binary: flags.contains(&'I'),
        binary_note_of: (cmd != "rg").then(|| cmd.to_string()),
    };
    // A streaming stage's stdin is searched a piece at a time (context and file lists are
    // searched whole).
    if (ops.is_empty() || ops == ["-"])
        && !recursive
        && (before, after) == (0, 0)
        && !flags.contains(&'l')
        && !flags.contains(&'L')
        && io.stdin.borrow().streaming()
    {
        let report = report_with(flags.contains(&'H') && !flags.contains(&'h'));
        return if report.stream(&re, io) { 0 } else { 1 };
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
                .any(|g| sh_utility::pattern::pattern_matches(g, base)))
            && !excludes
                .iter()
                .any(|g| sh_utility::pattern::pattern_matches(g, base))
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
                                .any(|g| sh_utility::pattern::pattern_matches(g, seg))
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
    let report = report_with(if flags.contains(&'h') {
        false
    } else {
        flags.contains(&'H') || targets.len() > 1 || recursive
    });
    let any = report.run(targets, &re, io);
    if status_err && !any {
        2
    } else if any {
        0
    } else {
        1
    }
}

/// A file to search: bytes already read (stdin) or a path read when its turn comes.
pub enum Target {
    Data(Vec<u8>),
    Path(std::path::PathBuf),
}

/// The (start, end) byte range of each line, newline excluded; a final newline ends the last
/// line rather than starting an empty one.
pub(super) fn lines_of(data: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
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
pub(super) fn matching_lines(
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

/// How grep's patterns are read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Basic,
    Extended,
    Fixed,
    Perl,
}

/// Whether a match must be a whole word (`-w`) or the whole line (`-x`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    None,
    Word,
    Line,
}

/// One bytes regex for all the patterns (any of them matches; a pattern with newlines is
/// one pattern per line), as grep and git grep read them. The error is the message after
/// the command's name.
pub fn build_regex(
    pats: &[String],
    syntax: Syntax,
    anchor: Anchor,
    icase: bool,
) -> Result<regex::bytes::Regex, String> {
    let parts: Vec<String> = pats
        .iter()
        .flat_map(|p| p.split('\n').map(String::from).collect::<Vec<_>>())
        .map(|p| match syntax {
            Syntax::Fixed => regex::escape(&p),
            // Perl syntax, which the regex crate reads natively except look-around,
            // back-references and \K; those are refused below, never matched differently.
            Syntax::Perl => p,
            Syntax::Extended => ere(&p),
            Syntax::Basic => bre_to_ere(&p),
        })
        .map(|p| match anchor {
            Anchor::Word => format!(r"\b(?:{p})\b"),
            Anchor::Line => format!("^(?:{p})$"),
            Anchor::None => p,
        })
        .collect();
    // A bytes regex over whole files (no UTF-8 copy, no per-line calls); `^`/`$` at line ends.
    // No pattern at all (an empty -f file) matches no line.
    let pattern = if parts.is_empty() {
        r"\b\B".to_string()
    } else {
        parts
            .iter()
            .map(|p| format!("(?:{p})"))
            .collect::<Vec<_>>()
            .join("|")
    };
    regex::bytes::RegexBuilder::new(&pattern)
        .case_insensitive(icase)
        .multi_line(true)
        .build()
        .map_err(|e| {
            if syntax == Syntax::Perl {
                format!(
                    "this Perl regex needs a feature burrow's grep -P does not have (look-around, back-references, \\K or possessive quantifiers): {}",
                    regex_error(&e)
                )
            } else {
                regex_error(&e)
            }
        })
}

/// How matches are printed: GNU grep's output, which git grep shares.
pub struct Report {
    /// `NAME:` before each line (`-H`, several files, `-r`).
    pub names: bool,
    pub numbers: bool,
    pub invert: bool,
    pub only_matching: bool,
    /// `-l`, `-L`, `-c`, `-q`.
    pub files_with: bool,
    pub files_without: bool,
    pub count: bool,
    /// Whether `-c` prints files without a match (GNU grep does, git grep does not).
    pub count_zero: bool,
    pub quiet: bool,
    pub before: usize,
    pub after: usize,
    pub max: Option<usize>,
    /// `-Z`/`-z`: a NUL after each file name instead of `:` or the newline.
    pub null: bool,
    /// `-a`: binary files as text; `-I`: binary files never match.
    pub text: bool,
    pub skip_binary: bool,
    /// GNU grep (3.5 on) notes a binary match on stderr as `CMD: NAME: binary file
    /// matches`; git grep (and rg's search here) prints `Binary file NAME matches` on stdout.
    pub binary_note_of: Option<String>,
}

impl Report {
    /// Searches each target in turn and prints as grep does; whether any line was selected.
    pub fn run(&self, targets: Vec<(String, Target)>, re: &regex::bytes::Regex, io: &Io) -> bool {
        let null = self.null;
        let after_name = if null { "\0" } else { "\n" };
        let show_names = self.names;
        let (before, after) = (self.before, self.after);
        let invert = self.invert;
        let numbers = self.numbers;
        let mut any = false;
        let mut out: Vec<u8> = Vec::new();
        // With context, `--` separates groups of lines, across files too.
        let mut grouped = false;
        for (name, target) in targets {
            let data = match target {
                Target::Data(d) => d,
                Target::Path(p) => match sh_utility::sys::read(&p) {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            // Flush big outputs as they grow instead of holding them all.
            if out.len() > 1 << 16 {
                io.out.write(&out);
                out.clear();
            }
            if memchr::memchr(0, &data).is_some() && !self.text {
                if self.skip_binary {
                    continue;
                }
                let matched = if invert {
                    lines_of(&data).any(|(s, e)| !re.is_match(&data[s..e]))
                } else {
                    !matching_lines(re, &data, 1).is_empty()
                };
                if matched {
                    any = true;
                    if self.quiet {
                        break;
                    } else if self.files_with {
                        out.extend_from_slice(format!("{name}{after_name}").as_bytes());
                    } else if self.count {
                        let n = if invert {
                            lines_of(&data)
                                .filter(|(s, e)| !re.is_match(&data[*s..*e]))
                                .count()
                        } else {
                            matching_lines(re, &data, usize::MAX).len()
                        };
                        self.count_line(&mut out, &name, n);
                    } else if !self.files_without {
                        match &self.binary_note_of {
                            Some(cmd) => {
                                io.eprint(&format!("{cmd}: {name}: binary file matches\n"))
                            }
                            None => out.extend_from_slice(
                                format!("Binary file {name} matches\n").as_bytes(),
                            ),
                        }
                    }
                } else if self.files_without {
                    out.extend_from_slice(format!("{name}{after_name}").as_bytes());
                } else if self.count && self.count_zero {
                    self.count_line(&mut out, &name, 0);
                }
                continue;
            }
            let limit = self.max.unwrap_or(usize::MAX);
            // (line index, start, end) of each shown line and whether it matched.
            let hits: Vec<(usize, usize, usize)> = if invert || before > 0 || after > 0 {
                lines_of(&data)
                    .enumerate()
                    .filter(|(_, (s, e))| re.is_match(&data[*s..*e]) != invert)
                    .map(|(i, (s, e))| (i, s, e))
                    .take(limit)
                    .collect()
            } else {
                matching_lines(re, &data, limit)
            };
            if !hits.is_empty() {
                any = true;
            }
            if self.quiet {
                if any {
                    break;
                }
                continue;
            }
            if self.files_with {
                if !hits.is_empty() {
                    out.extend_from_slice(format!("{name}{after_name}").as_bytes());
                }
                continue;
            }
            if self.files_without {
                if hits.is_empty() {
                    out.extend_from_slice(format!("{name}{after_name}").as_bytes());
                }
                continue;
            }
            if self.count {
                if !hits.is_empty() || self.count_zero {
                    self.count_line(&mut out, &name, hits.len());
                }
                continue;
            }
            let prefix = |out: &mut Vec<u8>, i: usize, sep: u8| {
                if show_names {
                    out.extend_from_slice(name.as_bytes());
                    out.push(if null { 0 } else { sep });
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
                if (before > 0 || after > 0)
                    && (prev.is_some_and(|p| j > p + 1) || (prev.is_none() && grouped))
                {
                    out.extend_from_slice(b"--\n");
                }
                grouped = true;
                prev = Some(j);
                let line = &data[s..e];
                if !hit {
                    prefix(&mut out, j, b'-');
                    out.extend_from_slice(line);
                    out.push(b'\n');
                } else if self.only_matching && !invert {
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
        any
    }

    /// Searches a streamed stdin a piece of whole lines at a time, as [`Report::run`] does
    /// one input without context or file lists; stops reading once `-m`'s count or `-q`'s
    /// first match is reached (the writer then meets SIGPIPE). Binary data (a NUL, without
    /// `-a`) ends the lines shown: as GNU grep does, it then only notes a match. Whether any
    /// line was selected.
    pub fn stream(&self, re: &regex::bytes::Regex, io: &Io) -> bool {
        let name = "(standard input)";
        let limit = self.max.unwrap_or(usize::MAX);
        let (mut carry, mut base, mut selected) = (Vec::<u8>::new(), 0usize, 0usize);
        let mut binary = false;
        while selected < limit && !(self.quiet && selected > 0) {
            let piece = io.stdin.borrow_mut().chunk(256 << 10);
            let end = piece.is_empty();
            carry.extend_from_slice(&piece);
            // Whole lines only, but for the last.
            let upto = if end {
                carry.len()
            } else {
                match memchr::memrchr(b'\n', &carry) {
                    Some(i) => i + 1,
                    None => continue,
                }
            };
            let data = &carry[..upto];
            binary |= !self.text && memchr::memchr(0, data).is_some();
            let hits: Vec<(usize, usize, usize)> = if self.invert {
                lines_of(data)
                    .enumerate()
                    .filter(|(_, (s, e))| !re.is_match(&data[*s..*e]))
                    .map(|(i, (s, e))| (i, s, e))
                    .take(limit - selected)
                    .collect()
            } else {
                matching_lines(re, data, limit - selected)
            };
            if binary {
                if self.skip_binary {
                    return selected > 0;
                }
                if !hits.is_empty() && !self.quiet && !self.count {
                    match &self.binary_note_of {
                        Some(cmd) => io.eprint(&format!("{cmd}: {name}: binary file matches\n")),
                        None => io.print(&format!("Binary file {name} matches\n")),
                    }
                    return true;
                }
            }
            selected += hits.len();
            if !self.quiet && !self.count && !binary {
                let mut out = Vec::new();
                for (j, s, e) in hits {
                    let line = &data[s..e];
                    let prefix = |out: &mut Vec<u8>| {
                        if self.names {
                            out.extend_from_slice(name.as_bytes());
                            out.push(if self.null { 0 } else { b':' });
                        }
                        if self.numbers {
                            out.extend_from_slice((base + j + 1).to_string().as_bytes());
                            out.push(b':');
                        }
                    };
                    if self.only_matching && !self.invert {
                        for m in re.find_iter(line).filter(|m| !m.as_bytes().is_empty()) {
                            prefix(&mut out);
                            out.extend_from_slice(m.as_bytes());
                            out.push(b'\n');
                        }
                    } else {
                        prefix(&mut out);
                        out.extend_from_slice(line);
                        out.push(b'\n');
                    }
                }
                io.out.write(&out);
            }
            base += memchr::memchr_iter(b'\n', data).count();
            carry.drain(..upto);
            if end {
                break;
            }
        }
        if self.count && !self.quiet {
            let mut out = Vec::new();
            self.count_line(&mut out, name, selected);
            io.out.write(&out);
        }
        selected > 0
    }

    fn count_line(&self, out: &mut Vec<u8>, name: &str, n: usize) {
        if self.names {
            let sep = if self.null { "\0" } else { ":" };
            out.extend_from_slice(format!("{name}{sep}{n}\n").as_bytes());
        } else {
            out.extend_from_slice(format!("{n}\n").as_bytes());
        }
    }
}
