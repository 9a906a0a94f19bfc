//! `git apply`: patches in git's format (`diff --git` with its extended headers: new and
//! deleted files, modes, renames) or plain unified diffs, applied to the work tree (by
//! default), the index (`--cached`) or both (`--index`), all or nothing: every file is
//! checked first, and one that does not apply leaves everything as it was, with git's
//! errors. `--check`, `--stat`, `--numstat` and `--summary` report without applying;
//! `-R`, `-p N`, `-v`, `--allow-empty`. Hunks apply where their context matches exactly,
//! at the line the header names or at an offset (git apply has no fuzz), with the patch
//! machinery of the shell's `patch`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sh_coreutils::patch::{Hunk, header_name, hunk_header, locate, read_hunk, split_lines};
use sh_utility::Ctx;
use sh_utility::io::{Io, read_all};

use super::args::{Opt, Refusal, Spec, Unknown};
use crate::plumbing::diff::changed_line;
use crate::plumbing::index::{index_map, save_index};
use crate::plumbing::object::Kind;
use crate::plumbing::repo::{IndexEntry, Repo, mtime_of};
use crate::plumbing::write::write_object;

const USAGE: &str = "git apply [<options>] [<patch>...]";

/// One file's patch.
#[derive(Clone)]
struct FilePatch {
    /// Paths from the top of the work tree; None for /dev/null (a new or deleted file).
    old: Option<String>,
    new: Option<String>,
    old_mode: Option<u32>,
    new_mode: Option<u32>,
    rename: bool,
    /// `Binary files ... differ` or `GIT binary patch`.
    binary: bool,
    hunks: Vec<Hunk>,
}

impl FilePatch {
    /// A patch of `old` to `new` with nothing else known yet.
    fn named(old: Option<String>, new: Option<String>) -> FilePatch {
        FilePatch {
            old,
            new,
            old_mode: None,
            new_mode: None,
            rename: false,
            binary: false,
            hunks: Vec::new(),
        }
    }

    fn reversed(&self) -> FilePatch {
        FilePatch {
            old: self.new.clone(),
            new: self.old.clone(),
            old_mode: self.new_mode,
            new_mode: self.old_mode,
            rename: self.rename,
            binary: self.binary,
            hunks: self.hunks.iter().map(Hunk::reversed).collect(),
        }
    }

    /// The name git's messages use for it.
    fn name(&self) -> &str {
        self.old
            .as_deref()
            .or(self.new.as_deref())
            .unwrap_or_default()
    }

    fn counts(&self) -> (usize, usize) {
        let mut ins = 0;
        let mut del = 0;
        for h in &self.hunks {
            for l in &h.lines {
                match l.kind {
                    b'+' => ins += 1,
                    b'-' => del += 1,
                    _ => {}
                }
            }
        }
        (ins, del)
    }
}

/// Where patches are applied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    WorkTree,
    Index,
    Both,
}

/// A file's state while patches are applied: its content and mode, None when absent.
type State = BTreeMap<String, Option<(Vec<u8>, u32)>>;

pub fn apply(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    match run(sh, args, io) {
        Ok(code) => code,
        Err(e) => super::args::fail(io, &e),
    }
}

/// What `git apply` was asked for.
struct Opts {
    target: Target,
    check: bool,
    stat: bool,
    numstat: bool,
    summary: bool,
    /// `--apply`: apply as well as report.
    apply_too: bool,
    reverse: bool,
    strip: usize,
    verbose: bool,
    allow_empty: bool,
}

const SPEC: Spec<Opts> = Spec {
    name: "apply",
    usage: USAGE,
    options: &[
        Opt::flag("--cached", |o| o.target = Target::Index),
        Opt::flag("--index", |o| o.target = Target::Both),
        Opt::flag("--check", |o| o.check = true),
        Opt::flag("--stat", |o| o.stat = true),
        Opt::flag("--numstat", |o| o.numstat = true),
        Opt::flag("--summary", |o| o.summary = true),
        Opt::flag("--apply", |o| o.apply_too = true),
        Opt::flag("-R/--reverse", |o| o.reverse = true),
        Opt::flag("-v/--verbose", |o| o.verbose = true),
        Opt::flag("-q/--quiet", |o| o.verbose = false),
        Opt::flag("--allow-empty", |o| o.allow_empty = true),
        Opt::number("-p", |o, n| o.strip = n),
        Opt::optional("--whitespace", |_, v| match v.as_deref() {
            Some("nowarn" | "warn") => Ok(()),
            _ => Err(Refusal::Fatal(
                "fatal: 'git apply --whitespace' with this value is not supported in burrow".into(),
            )),
        }),
    ],
    refused: "--3way -3 --reject --directory --include --exclude --recount --unidiff-zero --inaccurate-eof -C --no-add --intent-to-add -N --ignore-whitespace --ignore-space-change --binary --allow-binary-replacement -z --build-fake-ancestor",
    unknown: Unknown::Usage,
    help: &[],
};

fn run(sh: &dyn Ctx, args: &[String], io: &Io) -> Result<i32, String> {
    let mut o = Opts {
        target: Target::WorkTree,
        check: false,
        stat: false,
        numstat: false,
        summary: false,
        apply_too: false,
        reverse: false,
        strip: 1,
        verbose: false,
        allow_empty: false,
    };
    let mut inputs = match SPEC.parse(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let Opts {
        target,
        check,
        stat,
        numstat,
        summary,
        apply_too,
        reverse,
        strip,
        verbose,
        allow_empty,
    } = o;
    let cwd = PathBuf::from(&sh.cwd());
    let repo = Repo::discover(&cwd);
    if target != Target::WorkTree && repo.is_none() {
        return Err("fatal: not a git repository (or any of the parent directories): .git".into());
    }
    // The patches, in order.
    let mut patches: Vec<FilePatch> = Vec::new();
    if inputs.is_empty() {
        inputs.push("-".into());
    }
    for input in &inputs {
        let data = if input == "-" {
            read_all(&io.stdin)
        } else {
            match sh_utility::sys::read(sh.path(input)) {
                Ok(d) => d,
                Err(e) => {
                    io.eprint(&format!(
                        "error: can't open patch '{input}': {}\n",
                        sh_utility::format::io_msg(&e)
                    ));
                    return Ok(128);
                }
            }
        };
        match parse(&String::from_utf8_lossy(&data), strip) {
            Ok(p) => patches.extend(p),
            // A corrupt patch is an error with status 128.
            Err(e) => {
                io.eprint(&format!("{e}\n"));
                return Ok(128);
            }
        }
    }
    if patches.is_empty() && !allow_empty {
        io.eprint("error: No valid patches in input (allow with \"--allow-empty\")\n");
        return Ok(128);
    }
    if reverse {
        // git's list of reversed patches is built by prepending: last file first.
        patches = patches.iter().rev().map(FilePatch::reversed).collect();
    }
    let report_only = (stat || numstat || summary || check) && !apply_too;
    // In git's order: the stat, the numbers, the summary.
    let mut out = String::new();
    if stat {
        out.push_str(&apply_stat(&patches));
    }
    if numstat {
        for p in &patches {
            let (i, d) = p.counts();
            // The file's name after the patch (before it for a deletion), quoted as git
            // quotes names.
            let name = crate::plumbing::text::quote(
                p.new
                    .as_deref()
                    .or(p.old.as_deref())
                    .unwrap_or("")
                    .as_bytes(),
            );
            if p.binary {
                out.push_str(&format!("-\t-\t{name}\n"));
            } else {
                out.push_str(&format!("{i}\t{d}\t{name}\n"));
            }
        }
    }
    if summary {
        for p in &patches {
            out.push_str(&summary_line(p));
        }
    }
    // Where paths are: the top of the work tree (or the working directory outside one).
    let top: PathBuf = repo
        .as_ref()
        .and_then(|r| r.work.clone())
        .unwrap_or_else(|| cwd.clone());
    if repo.is_some() && top != cwd {
        return Err(
            "fatal: 'git apply' from a subdirectory of the work tree is not supported in burrow"
                .into(),
        );
    }
    let index = match &repo {
        Some(r) if target != Target::WorkTree => Some(index_map(r)?),
        _ => None,
    };
    let mut state: State = State::new();
    let mut errors = String::new();
    let mut logs = String::new();
    // `--stat`, `--numstat` and `--summary` alone only report: git checks nothing then.
    let checked = if check || !report_only {
        patches.as_slice()
    } else {
        &[]
    };
    for p in checked {
        if verbose {
            logs.push_str(&format!("Checking patch {}...\n", p.name()));
        }
        match check_one(p, &top, repo.as_ref(), target, index.as_ref(), &mut state) {
            Ok(notes) if verbose => logs.push_str(&notes),
            Ok(_) => {}
            Err(e) => errors.push_str(&e),
        }
    }
    // A patch that does not apply: its errors alone, as git reports nothing then.
    if !errors.is_empty() {
        io.eprint(&logs);
        io.eprint(&errors);
        return Ok(1);
    }
    io.print(&out);
    if report_only {
        io.eprint(&logs);
        return Ok(0);
    }
    // Everything applies: write it.
    let mut index = index;
    write_state(repo.as_ref(), &top, target, &state, index.as_mut())?;
    if let (Some(r), Some(ix)) = (&repo, &index) {
        save_index(r, ix)?;
    }
    if verbose {
        for p in &patches {
            logs.push_str(&format!("Applied patch {} cleanly.\n", p.name()));
        }
    }
    io.eprint(&logs);
    Ok(0)
}

/// Writes what the checks left in `state`: the files (unless only the index is the
/// target) and the index entries.
fn write_state(
    repo: Option<&Repo>,
    top: &Path,
    target: Target,
    state: &State,
    mut index: Option<&mut BTreeMap<Vec<u8>, IndexEntry>>,
) -> Result<(), String> {
    for (path, now) in state {
        let file = top.join(path);
        if target != Target::Index {
            match now {
                Some((data, _)) => {
                    if let Some(d) = file.parent() {
                        std::fs::create_dir_all(d)
                            .map_err(|e| format!("error: unable to create {path}: {e}"))?;
                    }
                    std::fs::write(&file, data)
                        .map_err(|e| format!("error: unable to write file '{path}': {e}"))?;
                }
                None => crate::plumbing::checkout::remove_entry(top, path.as_bytes()),
            }
        }
        if let (Some(r), Some(ix)) = (repo, index.as_mut()) {
            match now {
                Some((data, mode)) => {
                    let oid = write_object(r, Kind::Blob, data)?;
                    let (size, mtime) = match (target, file.metadata()) {
                        (Target::Both, Ok(m)) => (m.len() as u32, mtime_of(&m)),
                        _ => (0, (0, 0)),
                    };
                    ix.insert(
                        path.as_bytes().to_vec(),
                        IndexEntry {
                            path: path.as_bytes().to_vec(),
                            mode: *mode,
                            oid,
                            size,
                            mtime,
                            stage: 0,
                        },
                    );
                }
                None => {
                    ix.remove(path.as_bytes());
                }
            }
        }
    }
    Ok(())
}

/// `git apply --index` of `text` at the top of the work tree, as `git am` runs it: Ok(None)
/// once written, Ok(Some(errors)) when a patch does not apply (nothing written then).
pub(crate) fn apply_index(repo: &Repo, text: &str) -> Result<Option<String>, String> {
    let top = crate::plumbing::checkout::work_of(repo)?;
    let patches = parse(text, 1)?;
    let mut index = index_map(repo)?;
    let mut state: State = State::new();
    let mut errors = String::new();
    for p in &patches {
        if let Err(e) = check_one(p, &top, Some(repo), Target::Both, Some(&index), &mut state) {
            errors.push_str(&e);
        }
    }
    if !errors.is_empty() {
        return Ok(Some(errors));
    }
    write_state(Some(repo), &top, Target::Both, &state, Some(&mut index))?;
    save_index(repo, &index)?;
    Ok(None)
}

/// `--stat` as git apply prints it (its own layout, not diff's): names up to 50 columns,
/// a five-wide count, the graph scaled to 70 columns with the name.
fn apply_stat(patches: &[FilePatch]) -> String {
    let names: Vec<String> = patches
        .iter()
        .map(|p| {
            crate::plumbing::text::quote(
                p.new
                    .as_deref()
                    .or(p.old.as_deref())
                    .unwrap_or("")
                    .as_bytes(),
            )
        })
        .collect();
    let max_len = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let max_change = patches
        .iter()
        .filter(|p| !p.binary)
        .map(|p| {
            let (i, d) = p.counts();
            i + d
        })
        .max()
        .unwrap_or(0);
    let width = max_len.min(50);
    let mut out = String::new();
    let (mut ti, mut td) = (0, 0);
    for (p, name) in patches.iter().zip(&names) {
        let mut name = name.clone();
        if name.len() > width {
            // Cut at a '/' after the first len + 3 - width bytes, with "..." in front.
            let cut = name.len() + 3 - width;
            let at = name[cut..].find('/').map_or(cut, |k| cut + k);
            name = format!("...{}", &name[at..]);
        }
        if p.binary {
            out.push_str(&format!(" {name:<width$} |  Bin\n"));
            continue;
        }
        let (ins, del) = p.counts();
        ti += ins;
        td += del;
        let graph = if width + max_change > 70 {
            70 - width
        } else {
            max_change
        };
        let (mut add, mut sub) = (ins, del);
        let half = max_change / 2;
        if let (Some(total), Some(a)) = (
            ((ins + del) * graph + half).checked_div(max_change),
            (ins * graph + half).checked_div(max_change),
        ) {
            add = a;
            sub = total - a;
        }
        out.push_str(&format!(
            " {name:<width$} |{:5} {}{}\n",
            ins + del,
            "+".repeat(add),
            "-".repeat(sub)
        ));
    }
    out.push_str(&changed_line(patches.len(), ti, td));
    out
}

fn summary_line(p: &FilePatch) -> String {
    match (&p.old, &p.new) {
        (None, Some(n)) => format!(" create mode {:06o} {n}\n", p.new_mode.unwrap_or(0o100644)),
        (Some(o), None) => format!(" delete mode {:06o} {o}\n", p.old_mode.unwrap_or(0o100644)),
        (Some(o), Some(n)) if p.rename => {
            format!(
                " rename {} (100%)\n",
                crate::plumbing::diff::rename_name(o.as_bytes(), n.as_bytes())
            )
        }
        (Some(o), Some(_)) => match (p.old_mode, p.new_mode) {
            (Some(a), Some(b)) if a != b => format!(" mode change {a:06o} => {b:06o} {o}\n"),
            _ => String::new(),
        },
        (None, None) => String::new(),
    }
}

/// Applies one patch to the state (reading files the state does not have yet): the notes
/// of `-v` (hunks at an offset), or the errors git prints for it (with -v's search text).
fn check_one(
    p: &FilePatch,
    top: &Path,
    repo: Option<&Repo>,
    target: Target,
    index: Option<&BTreeMap<Vec<u8>, IndexEntry>>,
    state: &mut State,
) -> Result<String, String> {
    let mut notes = String::new();
    let place = if target == Target::WorkTree {
        "working directory"
    } else {
        "index"
    };
    if p.binary {
        return Err(format!(
            "error: cannot apply binary patch to '{n}' without full index line\nerror: {n}: patch does not apply\n",
            n = p.name()
        ));
    }
    // The current content of a path: from the state, else the target.
    let mut current = |path: &str| -> Result<Option<(Vec<u8>, u32)>, String> {
        if let Some(s) = state.get(path) {
            return Ok(s.clone());
        }
        let in_index = index.and_then(|ix| ix.get(path.as_bytes()));
        let found = match target {
            Target::WorkTree | Target::Both => {
                let f = top.join(path);
                match std::fs::read(&f) {
                    Ok(d) => {
                        if target == Target::Both {
                            let Some(e) = in_index else {
                                return Err(format!("error: {path}: does not exist in index\n"));
                            };
                            if crate::plumbing::object::hash(Kind::Blob, &d) != e.oid {
                                return Err(format!("error: {path}: does not match index\n"));
                            }
                        }
                        Some((d, in_index.map_or(0o100644, |e| e.mode)))
                    }
                    Err(_) => None,
                }
            }
            Target::Index => match in_index {
                Some(e) => {
                    let r = repo.ok_or("fatal: not a git repository")?;
                    Some((r.read_kind(&e.oid, Kind::Blob)?.to_vec(), e.mode))
                }
                None => None,
            },
        };
        state.insert(path.to_string(), found.clone());
        Ok(found)
    };
    let before = match &p.old {
        None => None,
        Some(o) => match current(o)? {
            Some(b) => Some(b),
            None if target == Target::WorkTree => {
                return Err(format!("error: {o}: No such file or directory\n"));
            }
            None => return Err(format!("error: {o}: does not exist in index\n")),
        },
    };
    if let Some(n) = &p.new
        && (p.old.as_ref() != Some(n))
        && current(n)?.is_some()
    {
        return Err(format!("error: {n}: already exists in {place}\n"));
    }
    let text = match &before {
        Some((d, _)) => String::from_utf8(d.clone()).map_err(|_| {
            format!(
                "error: {}: burrow's git apply patches text files only\n",
                p.name()
            )
        })?,
        None => String::new(),
    };
    let src = split_lines(&text);
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut pos = 0usize;
    let mut offset: isize = 0;
    for (n, h) in p.hunks.iter().enumerate() {
        let old_lines = h.old().len();
        let start = if old_lines == 0 {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        let expected = start as isize + offset;
        let Some(at) = locate(h, &src, expected, pos, 0) else {
            return Err(format!(
                "error: patch failed: {name}:{}\nerror: {name}: patch does not apply\n",
                h.old_start,
                name = p.name()
            ));
        };
        if at as isize != expected {
            let d = at as isize - start as isize;
            notes.push_str(&format!(
                "Hunk #{} succeeded at {} (offset {d} line{}).\n",
                n + 1,
                at + 1,
                if d.abs() == 1 { "" } else { "s" }
            ));
        }
        offset = at as isize - start as isize;
        out.extend(src[pos..at].iter().cloned());
        out.extend(h.added_side().iter().map(|l| (l.text.clone(), l.eol)));
        pos = at + old_lines;
    }
    out.extend(src[pos..].iter().cloned());
    let mut data = Vec::new();
    for (t, eol) in &out {
        data.extend_from_slice(t.as_bytes());
        if *eol {
            data.push(b'\n');
        }
    }
    match &p.new {
        None => {
            if !data.is_empty() {
                return Err(format!(
                    "error: removal patch leaves file contents\nerror: {}: patch does not apply\n",
                    p.name()
                ));
            }
        }
        Some(n) => {
            let mode = p
                .new_mode
                .or(before.as_ref().map(|(_, m)| *m))
                .unwrap_or(0o100644);
            state.insert(n.clone(), Some((data, mode)));
        }
    }
    if let Some(o) = &p.old
        && p.new.as_ref() != Some(o)
    {
        state.insert(o.clone(), None);
    }
    Ok(notes)
}

/// A patch path after `-p N`; None for /dev/null.
fn stripped(name: &str, n: usize) -> Option<String> {
    if name == "/dev/null" {
        return None;
    }
    let mut rest = name;
    for _ in 0..n {
        match rest.split_once('/') {
            Some((_, r)) => rest = r.trim_start_matches('/'),
            None => return Some(rest.to_string()),
        }
    }
    Some(rest.to_string())
}

fn mode_of(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim(), 8).ok()
}

/// The file patches in a patch text (anything before, between and after them is ignored,
/// as in mail), or git's error for a corrupt one.
fn parse(text: &str, strip: usize) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: Vec<FilePatch> = Vec::new();
    // Whether the current patch is still in its header (before its first hunk).
    let mut in_header = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end_matches(['\n', '\r']);
        if let Some(rest) = l.strip_prefix("diff --git ") {
            // `a/OLD b/NEW`: the names, for patches without ---/+++ lines.
            let (a, b) = rest.split_once(" b/").map_or((rest, rest), |(a, b)| (a, b));
            let a_name = stripped(a, strip);
            let b_name = stripped(&format!("b/{b}"), strip);
            out.push(FilePatch::named(a_name, b_name));
            in_header = true;
            i += 1;
            continue;
        }
        if l.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")) {
            let old = stripped(&header_name(&l[4..]), strip);
            let new = stripped(&header_name(&lines[i + 1][4..]), strip);
            match out.last_mut() {
                Some(p) if in_header => {
                    p.old = old;
                    p.new = new;
                }
                _ => out.push(FilePatch::named(old, new)),
            }
            in_header = true;
            i += 2;
            continue;
        }
        if l.starts_with("@@ ")
            && let Some(p) = out.last_mut()
        {
            let numbers =
                hunk_header(l).ok_or_else(|| format!("error: corrupt patch at line {}", i + 1))?;
            let (hunk, next, complete) = read_hunk(&lines, i + 1, lines[i], numbers);
            if !complete {
                return Err(format!("error: corrupt patch at line {}", next + 1));
            }
            p.hunks.push(hunk);
            in_header = false;
            i = next;
            continue;
        }
        if in_header && let Some(p) = out.last_mut() {
            if let Some(m) = l.strip_prefix("new file mode ") {
                p.new_mode = mode_of(m);
                p.old = None;
            } else if let Some(m) = l.strip_prefix("deleted file mode ") {
                p.old_mode = mode_of(m);
                p.new = None;
            } else if let Some(m) = l.strip_prefix("old mode ") {
                p.old_mode = mode_of(m);
            } else if let Some(m) = l.strip_prefix("new mode ") {
                p.new_mode = mode_of(m);
            } else if let Some(n) = l.strip_prefix("rename from ") {
                p.old = Some(n.to_string());
                p.rename = true;
            } else if let Some(n) = l.strip_prefix("rename to ") {
                p.new = Some(n.to_string());
                p.rename = true;
            } else if l.starts_with("copy from ") || l.starts_with("copy to ") {
                return Err("fatal: 'git apply' of a copy patch is not supported in burrow".into());
            } else if l.starts_with("Binary files ") || l == "GIT binary patch" {
                p.binary = true;
            } else if let Some(rest) = l.strip_prefix("index ") {
                // `index A..B MODE`: the mode of both sides.
                if let Some((_, m)) = rest.split_once(' ') {
                    p.old_mode = p.old_mode.or(mode_of(m));
                    p.new_mode = p.new_mode.or(mode_of(m));
                }
            }
        }
        i += 1;
    }
    Ok(out)
}
