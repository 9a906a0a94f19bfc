//! `patch`: applies unified diffs (`diff -u`, `git diff`) the way GNU patch 2.7 does, with its
//! messages: `-p`/`-R`/`-N`/`--dry-run`/`-i`/`-o`/`-d`/`-F`/`-s`/`-b`/`-E`/`-t`/`-f`, hunks
//! found at an offset or with fuzz (context lines dropped from the ends), `.orig` backups when a
//! hunk does not match exactly, `.rej` files for hunks that fail, previously applied patches
//! detected and skipped, files created from and deleted to `/dev/null`. Written here: no crate
//! applies patches with GNU's placement rules and wording.

use std::fs;
use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, read_all};

#[derive(Default, Clone)]
struct Opts {
    strip: Option<usize>,
    reverse: bool,
    forward: bool,
    dry_run: bool,
    input: Option<String>,
    output: Option<String>,
    dir: Option<String>,
    fuzz: usize,
    silent: bool,
    backup: bool,
    no_backup_mismatch: bool,
    remove_empty: bool,
    batch: bool,
    force: bool,
    /// Applying a file a second time, reversed (-t): its "patching file" line is out already.
    again: bool,
}

/// One line of a hunk: ' ' context, '-' removed, '+' added; `eol` false for the last line of a
/// file without a newline.
#[derive(Clone)]
pub struct Line {
    pub kind: u8,
    pub text: String,
    pub eol: bool,
}

#[derive(Clone)]
pub struct Hunk {
    pub old_start: usize,
    pub new_start: usize,
    /// The hunk's text as it appeared (for .rej files).
    pub raw: String,
    pub lines: Vec<Line>,
}

impl Hunk {
    pub fn reversed(&self) -> Hunk {
        let lines = self
            .lines
            .iter()
            .map(|l| Line {
                kind: match l.kind {
                    b'-' => b'+',
                    b'+' => b'-',
                    k => k,
                },
                ..l.clone()
            })
            .collect();
        Hunk {
            old_start: self.new_start,
            new_start: self.old_start,
            raw: self.raw.clone(),
            lines,
        }
    }

    /// The lines the file must have (context and removed), in order.
    pub fn old(&self) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.kind != b'+').collect()
    }

    /// The lines the file has afterwards (context and added), in order.
    pub fn added_side(&self) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.kind != b'-').collect()
    }

    /// Context lines before the first change and after the last.
    fn context(&self) -> (usize, usize) {
        let pre = self.lines.iter().take_while(|l| l.kind == b' ').count();
        let post = self
            .lines
            .iter()
            .rev()
            .take_while(|l| l.kind == b' ')
            .count();
        (pre, post)
    }
}

struct FilePatch {
    old_name: String,
    new_name: String,
    /// The `---`/`+++` header lines as they appeared (for .rej files).
    header: String,
    /// The lines since the previous file's last hunk, header included (for "can't find file").
    preamble: String,
    /// Line number (1-based) in the patch where the header ends.
    line_no: usize,
    hunks: Vec<Hunk>,
}

pub fn run(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts {
        fuzz: 2,
        ..Default::default()
    };
    let mut operands = Vec::new();
    let mut i = 0;
    let bad = |msg: String| {
        io.eprint(&format!(
            "patch: {msg}\npatch: Try 'patch --help' for more information.\n"
        ));
        2
    };
    while i < args.len() {
        let a = &args[i];
        i += 1;
        // The gate hands the long options with a short form on as that form, each short
        // option alone, and refuses what patch does not implement.
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "" => {
                    operands.extend(args[i..].iter().cloned());
                    break;
                }
                "dry-run" => o.dry_run = true,
                "no-backup-if-mismatch" => o.no_backup_mismatch = true,
                "backup-if-mismatch" => o.no_backup_mismatch = false,
                _ => return bad(format!("unrecognized option '{a}'")),
            }
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            operands.push(a.clone());
            continue;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            if matches!(c, 'p' | 'i' | 'o' | 'd' | 'F') {
                let rest: String = flags[j..].iter().collect();
                let value = if !rest.is_empty() {
                    rest
                } else if let Some(v) = args.get(i) {
                    i += 1;
                    v.clone()
                } else {
                    return bad(format!("option requires an argument -- '{c}'"));
                };
                match c {
                    'p' => match value.parse() {
                        Ok(n) => o.strip = Some(n),
                        Err(_) => return bad(format!("strip count {value} is not a number")),
                    },
                    'i' => o.input = Some(value),
                    'o' => o.output = Some(value),
                    'd' => o.dir = Some(value),
                    'F' => o.fuzz = value.parse().unwrap_or(2),
                    _ => {}
                }
                break;
            }
            match c {
                'R' => o.reverse = true,
                'N' => o.forward = true,
                's' => o.silent = true,
                'b' => o.backup = true,
                'E' => o.remove_empty = true,
                't' => o.batch = true,
                'f' => o.force = true,
                // -u: the patch is read as a unified diff, the one format burrow reads.
                'u' => {}
                _ => return bad(format!("invalid option -- '{c}'")),
            }
        }
    }
    let base = match &o.dir {
        Some(d) => {
            let p = sh.path(d);
            if !p.is_dir() {
                io.eprint(&format!(
                    "patch: **** Can't change to directory {d} : No such file or directory\n"
                ));
                return 2;
            }
            p
        }
        None => PathBuf::from(&sh.cwd()),
    };
    let target = operands.first().cloned();
    if o.input.is_none() {
        o.input = operands.get(1).cloned();
    }
    // GNU patch changes to -d's directory first: a relative -i names a file there.
    let text = match &o.input {
        Some(f) if f != "-" => {
            match fs::read(sh_utility::path::normalize(&base.join(f).to_string_lossy())) {
                Ok(b) => b,
                Err(e) => {
                    io.eprint(&format!(
                        "patch: **** Can't open patch file {f} : {}\n",
                        io_msg(&e)
                    ));
                    return 2;
                }
            }
        }
        _ => read_all(&io.stdin),
    };
    let text = String::from_utf8_lossy(&text);
    let files = parse(&text);
    if files.is_empty() {
        if !text.trim().is_empty() {
            io.eprint("patch: **** Only garbage was found in the patch input.\n");
            return 2;
        }
        return 0;
    }
    let mut status = 0;
    let mut written = Vec::new();
    for fp in &files {
        status = status.max(apply_file(
            sh,
            &o,
            &base,
            target.as_deref(),
            fp,
            &mut written,
            io,
        ));
    }
    status
}

/// Splits a patch into files and hunks; anything between files (`diff --git`, `index`, mail
/// headers) is skipped.
fn parse(text: &str) -> Vec<FilePatch> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    let mut since = 0; // where the text after the last hunk begins
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with("--- ") && i + 1 < lines.len() && lines[i + 1].starts_with("+++ ") {
            files.push(FilePatch {
                old_name: header_name(&l[4..]),
                new_name: header_name(&lines[i + 1][4..]),
                header: format!("{}{}", l, lines[i + 1]),
                preamble: lines[since..i + 2].concat(),
                line_no: i + 3,
                hunks: Vec::new(),
            });
            i += 2;
            continue;
        }
        if l.starts_with("@@ ")
            && let (Some(fp), Some((os, oc, ns, nc))) = (files.last_mut(), hunk_header(l))
        {
            let (hunk, next, _) = read_hunk(&lines, i + 1, l, (os, oc, ns, nc));
            fp.hunks.push(hunk);
            i = next;
            since = i;
            continue;
        }
        i += 1;
    }
    files.retain(|f| !f.hunks.is_empty());
    files
}

/// One hunk's body, from `lines[i]` (the line after its `@@` header line `header`, whose
/// numbers are `(old start, old count, new start, new count)`): the hunk, the index of the
/// line after it, and whether the body held every line the header counts.
pub fn read_hunk(
    lines: &[&str],
    mut i: usize,
    header: &str,
    (os, oc, ns, nc): (usize, usize, usize, usize),
) -> (Hunk, usize, bool) {
    let mut raw = header.to_string();
    let mut body: Vec<Line> = Vec::new();
    let (mut old_left, mut new_left) = (oc, nc);
    // A "\ No newline at end of file" line marks the line before it.
    while i < lines.len() && (old_left > 0 || new_left > 0 || lines[i].starts_with('\\')) {
        let t = lines[i];
        let (kind, content) = match t.as_bytes().first() {
            Some(b' ') => (b' ', &t[1..]),
            Some(b'-') => (b'-', &t[1..]),
            Some(b'+') => (b'+', &t[1..]),
            Some(b'\\') => {
                raw.push_str(t);
                if let Some(last) = body.last_mut() {
                    last.eol = false;
                }
                i += 1;
                continue;
            }
            // An empty line stands for an empty context line (mailers strip the space).
            Some(b'\n') | Some(b'\r') => (b' ', ""),
            _ => break,
        };
        match kind {
            b' ' => {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            b'-' => old_left = old_left.saturating_sub(1),
            _ => new_left = new_left.saturating_sub(1),
        }
        raw.push_str(t);
        body.push(Line {
            kind,
            text: content.strip_suffix('\n').unwrap_or(content).to_string(),
            eol: true,
        });
        i += 1;
    }
    let hunk = Hunk {
        old_start: os,
        new_start: ns,
        raw,
        lines: body,
    };
    (hunk, i, old_left == 0 && new_left == 0)
}

/// The file name of a `---`/`+++` line: up to a tab (the timestamp), quotes removed.
pub fn header_name(s: &str) -> String {
    let s = s.trim_end_matches(['\n', '\r']);
    let s = s.split('\t').next().unwrap_or(s);
    let s = s.trim_end();
    s.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(s)
        .to_string()
}

/// `@@ -a[,b] +c[,d] @@`.
pub fn hunk_header(l: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = l.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (os, oc) = range(old)?;
    let (ns, nc) = range(new)?;
    Some((os, oc, ns, nc))
}

/// A name after `-p N` (None: strip everything but the base name, as GNU does without -p).
fn strip(name: &str, n: Option<usize>) -> Option<String> {
    match n {
        None => Some(name.rsplit('/').next().unwrap_or(name).to_string()),
        Some(0) => Some(name.to_string()),
        Some(n) => {
            let parts: Vec<&str> = name.split('/').collect();
            // "a//b" counts one separator, as in GNU.
            let mut seen = 0;
            for (k, p) in parts.iter().enumerate() {
                if k + 1 == parts.len() {
                    break;
                }
                if p.is_empty() && k > 0 {
                    continue;
                }
                seen += 1;
                if seen == n {
                    return Some(parts[k + 1..].join("/"));
                }
            }
            None
        }
    }
}

/// The file's lines, each with whether it ended in a newline.
pub fn split_lines(data: &str) -> Vec<(String, bool)> {
    data.split_inclusive('\n')
        .map(|l| match l.strip_suffix('\n') {
            Some(t) => (t.to_string(), true),
            None => (l.to_string(), false),
        })
        .collect()
}

/// Where `h` applies in `lines` (0-based index of its first old line) with `fuzz` context
/// lines ignored at each end, searching outward from the expected place but never before
/// `floor` (the end of the previous hunk). Returns the place and the lines skipped at the start.
pub fn locate(
    h: &Hunk,
    lines: &[(String, bool)],
    expected: isize,
    floor: usize,
    fuzz: usize,
) -> Option<usize> {
    let old = h.old();
    let (pre, post) = h.context();
    let context = pre.max(post);
    // A hunk with less context on one side is anchored to that end of the file.
    let pre_fuzz = (fuzz + pre) as isize - context as isize;
    let post_fuzz = (fuzz + post) as isize - context as isize;
    let skip_pre = pre_fuzz.max(0) as usize;
    let skip_post = post_fuzz.max(0) as usize;
    if skip_pre + skip_post >= old.len() && !old.is_empty() {
        return None;
    }
    let matches = |at: usize| -> bool {
        if at + old.len() > lines.len() {
            // Lines dropped at the end may run past the end of the file.
            if at + old.len() - skip_post > lines.len() {
                return false;
            }
        }
        old.iter()
            .enumerate()
            .skip(skip_pre)
            .take(old.len() - skip_pre - skip_post)
            .all(|(k, l)| lines.get(at + k).is_some_and(|(t, _)| *t == l.text))
    };
    if old.is_empty() {
        let at = expected.clamp(floor as isize, lines.len() as isize) as usize;
        return Some(at);
    }
    if pre_fuzz < 0 && h.old_start <= 1 {
        // Only the start of the file.
        return (floor == 0 && matches(0)).then_some(0);
    }
    if post_fuzz < 0 {
        // Only the end of the file.
        let at = lines.len().checked_sub(old.len())?;
        return (at >= floor && matches(at)).then_some(at);
    }
    let max = lines.len() as isize;
    for off in 0..=max {
        for cand in [expected + off, expected - off] {
            if cand < floor as isize || cand > max {
                continue;
            }
            if matches(cand as usize) {
                return Some(cand as usize);
            }
            if off == 0 {
                break;
            }
        }
    }
    None
}

fn apply_file(
    sh: &dyn Ctx,
    o: &Opts,
    base: &Path,
    target: Option<&str>,
    fp: &FilePatch,
    written: &mut Vec<PathBuf>,
    io: &Io,
) -> i32 {
    let say = |s: &str| {
        if !o.silent {
            io.print(s);
        }
    };
    let total = fp.hunks.len();
    let hunks_word = if total == 1 { "hunk" } else { "hunks" };
    let creating = fp.old_name == "/dev/null";
    let deleting = fp.new_name == "/dev/null";
    let (old_name, new_name) = if o.reverse {
        (&fp.new_name, &fp.old_name)
    } else {
        (&fp.old_name, &fp.new_name)
    };
    let (creating, deleting) = if o.reverse {
        (deleting, creating)
    } else {
        (creating, deleting)
    };
    let name = match target {
        Some(t) => Some(t.to_string()),
        None => {
            let cands: Vec<String> = [old_name, new_name]
                .iter()
                .filter(|n| n.as_str() != "/dev/null")
                .filter_map(|n| strip(n, o.strip))
                .filter(|n| !n.is_empty())
                .collect();
            cands
                .iter()
                .find(|n| base.join(n).is_file())
                .or(if creating { cands.first() } else { None })
                .cloned()
        }
    };
    let Some(name) = name else {
        say(&format!(
            "can't find file to patch at input line {}\nPerhaps you used the wrong -p or --strip option?\nThe text leading up to this was:\n--------------------------\n{}--------------------------\nFile to patch: \nSkip this patch? [y] \nSkipping patch.\n{total} out of {total} {hunks_word} ignored\n",
            fp.line_no,
            fp.preamble
                .split_inclusive('\n')
                .map(|l| format!("|{l}"))
                .collect::<String>()
        ));
        return 1;
    };
    let path = if Path::new(&name).is_absolute() {
        PathBuf::from(&name)
    } else {
        base.join(&name)
    };
    if creating && path.exists() && !o.force {
        let ask = if o.forward || o.batch {
            "  Skipping patch.\n"
        } else {
            "  Assume -R? [n] \nApply anyway? [n] \nSkipping patch.\n"
        };
        say(&format!(
            "The next patch would create the file {name},\nwhich already exists!{ask}{total} out of {total} {hunks_word} ignored\n"
        ));
        return 1;
    }
    let original = match fs::read(&path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) if creating => String::new(),
        Err(e) => {
            if target.is_some() {
                say(&format!("patching file {name}\n"));
                io.eprint(&format!(
                    "patch: **** Can't open file {name} : {}\n",
                    io_msg(&e)
                ));
                return 2;
            }
            io.eprint(&format!(
                "patch: **** Can't open file {name} : {}\n",
                io_msg(&e)
            ));
            return 2;
        }
    };
    let out_name = o.output.clone().unwrap_or_else(|| name.clone());
    let verb = if o.dry_run { "checking" } else { "patching" };
    if o.again {
    } else if o.output.is_some() {
        say(&format!("{verb} file {out_name} (read from {name})\n"));
    } else {
        say(&format!("{verb} file {name}\n"));
    }
    let hunks: Vec<Hunk> = if o.reverse {
        fp.hunks.iter().map(Hunk::reversed).collect()
    } else {
        fp.hunks.clone()
    };
    let lines = split_lines(&original);
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut pos = 0usize; // next unconsumed line of the original
    let mut offset: isize = 0; // found minus stated, carried to the next hunk
    let mut delta: isize = 0; // lines added minus removed so far (new-file numbering)
    let mut failed: Vec<&Hunk> = Vec::new();
    let mut mismatch = o.again; // GNU backs up a file it patched reversed by assumption
    for (n, h) in hunks.iter().enumerate() {
        let stated = h.old_start.max(1) as isize - 1;
        let stated = if h.old().is_empty() {
            h.old_start as isize
        } else {
            stated
        };
        let mut found = None;
        for fuzz in 0..=o.fuzz {
            if let Some(at) = locate(h, &lines, stated + offset, pos, fuzz) {
                found = Some((at, fuzz));
                break;
            }
        }
        if found.is_none() && n == 0 && !o.force {
            // Already applied? Then the reversed hunk matches exactly.
            let r = h.reversed();
            let stated_r = if r.old().is_empty() {
                r.old_start as isize
            } else {
                r.old_start.max(1) as isize - 1
            };
            let reversed_applies =
                !r.old().is_empty() && locate(&r, &lines, stated_r, 0, 0).is_some();
            if reversed_applies || (creating && !lines.is_empty()) {
                if o.forward {
                    say("Reversed (or previously applied) patch detected!  Skipping patch.\n");
                } else if o.batch && !o.again {
                    // -t: assume -R and apply the file's hunks reversed.
                    say("Reversed (or previously applied) patch detected!  Assuming -R.\n");
                    let flipped = Opts {
                        reverse: !o.reverse,
                        again: true,
                        ..o.clone()
                    };
                    return apply_file(sh, &flipped, base, target, fp, written, io);
                } else {
                    say(
                        "Reversed (or previously applied) patch detected!  Assume -R? [n] \nApply anyway? [n] \nSkipping patch.\n",
                    );
                }
                let rej = format!("{out_name}.rej");
                say(&format!(
                    "{total} out of {total} {hunks_word} ignored -- saving rejects to file {rej}\n"
                ));
                if !o.dry_run {
                    write_rej(base, &rej, fp, o, written, fp.hunks.iter().collect(), io);
                }
                return 1;
            }
        }
        let Some((at, fuzz)) = found else {
            say(&format!(
                "Hunk #{} FAILED at {}.\n",
                n + 1,
                (stated + offset + 1).max(1)
            ));
            failed.push(&fp.hunks[n]);
            mismatch = true;
            continue;
        };
        let this_offset = at as isize - stated;
        let shown = at as isize + 1 + delta;
        let shown = if h.old().is_empty() {
            at as isize + delta
        } else {
            shown
        };
        let plural = |k: isize| if k.abs() == 1 { "line" } else { "lines" };
        if fuzz > 0 || this_offset != 0 {
            mismatch = true;
            let mut msg = format!("Hunk #{} succeeded at {shown}", n + 1);
            if fuzz > 0 {
                msg.push_str(&format!(" with fuzz {fuzz}"));
            }
            if this_offset != 0 {
                msg.push_str(&format!(" (offset {this_offset} {})", plural(this_offset)));
            }
            msg.push_str(".\n");
            say(&msg);
        }
        offset = this_offset;
        out.extend_from_slice(&lines[pos..at]);
        // Context lines keep the file's own text (fuzz may have matched them loosely).
        let old = h.old();
        let mut k = 0;
        for l in &h.lines {
            match l.kind {
                b' ' => {
                    out.push(
                        lines
                            .get(at + k)
                            .cloned()
                            .unwrap_or((l.text.clone(), l.eol)),
                    );
                    k += 1;
                }
                b'-' => k += 1,
                _ => out.push((l.text.clone(), l.eol)),
            }
        }
        pos = (at + old.len()).min(lines.len());
        delta += h.added_side().len() as isize - old.len() as isize;
    }
    out.extend_from_slice(&lines[pos.min(lines.len())..]);
    // A line without a newline that is no longer last gets one.
    let last = out.len().saturating_sub(1);
    for (k, l) in out.iter_mut().enumerate() {
        if k != last {
            l.1 = true;
        }
    }
    let result: String = out
        .iter()
        .map(|(t, eol)| if *eol { format!("{t}\n") } else { t.clone() })
        .collect();
    let mut status = 0;
    if !failed.is_empty() {
        let rej = format!("{out_name}.rej");
        let n = failed.len();
        // An error: printed even with -s, as GNU does.
        io.print(&format!(
            "{n} out of {total} {hunks_word} FAILED -- saving rejects to file {rej}\n"
        ));
        if !o.dry_run {
            write_rej(base, &rej, fp, o, written, failed, io);
        }
        status = 1;
    }
    if o.dry_run {
        return status;
    }
    let out_path = match &o.output {
        Some(f) => sh.path(f),
        None => path.clone(),
    };
    if (o.backup || (mismatch && !o.no_backup_mismatch)) && o.output.is_none() && !creating {
        let _ = fs::write(format!("{}.orig", path.display()), original.as_bytes());
    }
    if let Some(parent) = out_path.parent() {
        let _ = fs::create_dir_all(parent);
    }
    if (deleting || o.remove_empty) && result.is_empty() && o.output.is_none() {
        if let Err(e) = fs::remove_file(&out_path) {
            io.eprint(&format!(
                "patch: **** Can't remove file {name} : {}\n",
                io_msg(&e)
            ));
            return 2;
        }
        return status;
    }
    if let Err(e) = fs::write(&out_path, result.as_bytes()) {
        io.eprint(&format!(
            "patch: **** Can't create file {out_name} : {}\n",
            io_msg(&e)
        ));
        return 2;
    }
    status
}

/// Writes the rejected hunks under the patch's headers, file names stripped as `-p` says
/// (timestamps kept). A second file rejected into the same .rej in one run is appended, as GNU
/// does.
fn write_rej(
    base: &Path,
    rej: &str,
    fp: &FilePatch,
    o: &Opts,
    written: &mut Vec<PathBuf>,
    hunks: Vec<&Hunk>,
    io: &Io,
) {
    let mut text: String = fp
        .header
        .split_inclusive('\n')
        .map(|l| {
            let (mark, rest) = l.split_at(4.min(l.len()));
            let name = header_name(rest);
            let name = strip(&name, o.strip).unwrap_or(name);
            let tail = match rest.find('\t') {
                Some(t) => &rest[t..],
                None => "\n",
            };
            format!("{mark}{name}{tail}")
        })
        .collect();
    for h in hunks {
        text.push_str(&h.raw);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let p = base.join(rej);
    let result = if written.contains(&p) {
        fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
    } else {
        written.push(p.clone());
        fs::write(&p, text)
    };
    if let Err(e) = result {
        io.eprint(&format!(
            "patch: **** Can't create file {rej} : {}\n",
            io_msg(&e)
        ));
    }
}
