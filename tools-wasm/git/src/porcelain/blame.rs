//! `git blame`: which commit last changed each line of a file, found as git finds it. Lines
//! start as the suspects of the commit being blamed (or of the work tree, whose changed lines
//! are "Not Committed Yet"); commits are visited newest first by committer date, and each
//! passes to a parent every line its diff with that parent leaves unchanged (all of them to
//! a parent with the same blob), following the file across a rename whose old content is at
//! least half the same. What no parent takes is that commit's. The output is git's default
//! format (`-s`, `-e`, `-l`, `-n`, `-f`, `-t`, `--root`, `-L`) or `--porcelain` /
//! `--line-porcelain`.

use std::collections::BinaryHeap;
use std::path::Path;

use foldhash::{HashMap, HashMapExt};
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Operands, Opt, Spec, Unknown, push, usage_error};
use crate::plumbing::commit::{ident_name_email, ident_time, read_commit, subject};
use crate::plumbing::date::iso_date;
use crate::plumbing::diff::lines as split_lines;
use crate::plumbing::index::load_index;
use crate::plumbing::object::{Commit, Kind, Oid, hex};
use crate::plumbing::repo::{Repo, entry_at};
use crate::plumbing::rev::resolve;
use crate::plumbing::text::prefix;
use crate::plumbing::tree::tree_files;
use crate::plumbing::walk::shallow;

const USAGE: &str = "git blame [<options>] [<rev-opts>] [<rev>] [--] <file>";

/// Who a line is blamed on: a commit and the file's path there, or the work tree.
struct Origin {
    /// None for the work tree's own lines ("Not Committed Yet").
    commit: Option<Oid>,
    path: Vec<u8>,
    /// The parent this origin was compared with and the file's path there (porcelain's
    /// `previous`).
    previous: Option<(Oid, Vec<u8>)>,
    /// A root or shallow-boundary commit (`^` in the output) unless `--root`.
    boundary: bool,
}

/// Output choices.
#[derive(Default)]
struct Show {
    suppress: bool,
    email: bool,
    long: bool,
    number: bool,
    name: bool,
    raw_time: bool,
    root: bool,
    porcelain: bool,
    line_porcelain: bool,
}

pub fn blame(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match run(&repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => super::args::fail(io, &e),
    }
}

/// What blame was asked for: how to show it, and the `-L` ranges.
#[derive(Default)]
struct Opts {
    show: Show,
    ranges: Vec<String>,
}

const SPEC: Spec<Opts> = Spec {
    name: "blame",
    usage: USAGE,
    options: &[
        Opt::flag("-s", |o| o.show.suppress = true),
        Opt::flag("-e/--show-email", |o| o.show.email = true),
        Opt::flag("-l", |o| o.show.long = true),
        Opt::flag("-n/--show-number", |o| o.show.number = true),
        Opt::flag("-f/--show-name", |o| o.show.name = true),
        Opt::flag("-t", |o| o.show.raw_time = true),
        Opt::flag("--root", |o| o.show.root = true),
        Opt::flag("-p/--porcelain", |o| o.show.porcelain = true),
        Opt::flag("--line-porcelain", |o| {
            o.show.porcelain = true;
            o.show.line_porcelain = true;
        }),
        Opt::value("-L", |o, v| push(&mut o.ranges, v)),
        Opt::ignored("--no-color"),
    ],
    refused: "-w -M -C --reverse --first-parent -c --incremental --date --abbrev --contents -S --ignore-rev --ignore-revs-file --minimal --progress --score-debug",
    unknown: Unknown::Usage,
    help: &[],
};

/// blame's operands as git's cmd_blame reads them: `[REV...] FILE`, `FILE REV` (when REV is
/// one), `[REV...] -- FILE` or `-- FILE REV`; the revisions and the file, None for git's
/// usage.
fn rev_and_file(repo: &Repo, operands: Operands) -> Option<(Vec<String>, String)> {
    match operands {
        (before, Some(after)) => match (before.as_slice(), after.as_slice()) {
            (revs, [f]) => Some((revs.to_vec(), f.clone())),
            ([], [f, r]) => Some((vec![r.clone()], f.clone())),
            _ => None,
        },
        (operands, None) => match operands.as_slice() {
            [] => None,
            [f, r] if resolve(repo, r).is_some() => Some((vec![r.clone()], f.clone())),
            [revs @ .., f] => Some((revs.to_vec(), f.clone())),
        },
    }
}

fn run(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let mut o = Opts::default();
    let operands = match SPEC.parse_split(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let Opts { show, ranges } = o;
    let Some((revs, file)) = rev_and_file(repo, operands) else {
        return Ok(usage_error(io, "", USAGE));
    };
    // git's revision reader reads each revision, then blame wants one to start from.
    if let Some(bad) = revs.iter().find(|r| resolve(repo, r).is_none()) {
        return Err(format!("fatal: bad revision '{bad}'"));
    }
    let rev = match revs.as_slice() {
        [] => None,
        [r] => Some(r.clone()),
        [first, second, ..] => {
            return Err(format!(
                "fatal: More than one commit to dig from {second} and {first}?"
            ));
        }
    };
    let path = crate::plumbing::rev::scope_of(&prefix(repo, cwd), &file);
    let shown_path = String::from_utf8_lossy(&path).into_owned();
    // The version blamed: a commit's, or the work tree's on top of HEAD.
    let (start, data, worktree) = match &rev {
        Some(r) => {
            let id = resolve(repo, r).ok_or_else(|| format!("fatal: bad revision '{r}'"))?;
            let id = repo.peel_commit(&id)?;
            let c = read_commit(repo, &id)?;
            let data = blob_at(repo, &c, &path)?
                .ok_or_else(|| format!("fatal: no such path {shown_path} in {r}"))?;
            (Some(id), data, false)
        }
        None => {
            let Some(work) = repo.work.clone() else {
                return Err("fatal: this operation must be run in a work tree".into());
            };
            let head = repo.head().1;
            let in_head = match head {
                Some(h) => blob_at(repo, &read_commit(repo, &h)?, &path)?.is_some(),
                None => false,
            };
            let in_index = load_index(repo)?.iter().any(|e| e.path == path);
            if !in_head && !in_index {
                return Err(format!("fatal: no such path '{shown_path}' in HEAD"));
            }
            let full = work.join(&shown_path);
            let data = std::fs::read(&full).map_err(|_| {
                format!("fatal: cannot stat path '{shown_path}': No such file or directory")
            })?;
            (head.filter(|_| in_head), data, true)
        }
    };
    let lines = split_lines(&data);
    let wanted = line_ranges(&ranges, lines.len(), &shown_path)?;
    let (origins, blamed) = assign(repo, start, &path, &lines, worktree, show.root)?;
    let text = if show.porcelain {
        porcelain(
            repo,
            &origins,
            &blamed,
            &lines,
            &wanted,
            show.line_porcelain,
        )?
    } else {
        default_format(repo, &origins, &blamed, &lines, &wanted, &path, &show)?
    };
    io.print(&text);
    Ok(0)
}

fn blob_at(repo: &Repo, c: &Commit, path: &[u8]) -> Result<Option<Vec<u8>>, String> {
    match entry_at(repo, &c.tree, path)? {
        Some((mode, id)) if mode != 0o40000 && mode != 0o160000 => {
            Ok(Some(repo.read_kind(&id, Kind::Blob)?.to_vec()))
        }
        _ => Ok(None),
    }
}

/// `-L` ranges (`A,B`, `A,+N`, `A,-N`, `A`, `,B`; 1-based, inclusive) as the lines shown
/// (0-based), in order; every line without any.
fn line_ranges(ranges: &[String], n: usize, path: &str) -> Result<Vec<usize>, String> {
    if ranges.is_empty() {
        return Ok((0..n).collect());
    }
    let mut shown = std::collections::BTreeSet::new();
    for r in ranges {
        let bad = || format!("fatal: -L parameter '{r}' starting at line 1: invalid line range");
        let num = |s: &str| -> Result<usize, String> {
            if s.starts_with('/') || s.starts_with(':') || s.starts_with('^') {
                return Err(format!(
                    "fatal: 'git blame -L {r}' (a pattern range) is not supported in burrow"
                ));
            }
            s.parse::<usize>().map_err(|_| bad())
        };
        let (a, b) = match r.split_once(',') {
            Some((a, b)) => {
                let a = if a.is_empty() { 1 } else { num(a)? };
                let b = if let Some(k) = b.strip_prefix('+') {
                    a + num(k)?.max(1) - 1
                } else if let Some(k) = b.strip_prefix('-') {
                    let k = num(k)?.max(1);
                    let lo = a.saturating_sub(k - 1).max(1);
                    shown.extend(lo - 1..a.min(n));
                    continue;
                } else if b.is_empty() {
                    n
                } else {
                    num(b)?
                };
                (a, b)
            }
            None => (num(r)?, n),
        };
        let (a, b) = if b < a { (b, a) } else { (a, b) };
        if a == 0 && b == 0 {
            return Err(bad());
        }
        if a > n {
            return Err(format!(
                "fatal: file {path} has only {n} line{}",
                if n == 1 { "" } else { "s" }
            ));
        }
        shown.extend(a.max(1) - 1..b.min(n));
    }
    Ok(shown.into_iter().collect())
}

/// For each line of the blamed version: the index of its origin and its line number (0-based)
/// in that origin's version of the file.
type Blamed = Vec<(usize, usize)>;

fn assign(
    repo: &Repo,
    start: Option<Oid>,
    path: &[u8],
    lines: &[&[u8]],
    worktree: bool,
    root: bool,
) -> Result<(Vec<Origin>, Blamed), String> {
    let boundary_set = shallow(repo);
    let mut board = Board {
        repo,
        origins: Vec::new(),
        pending: HashMap::new(),
        heap: BinaryHeap::new(),
        seq: u64::MAX,
    };
    let mut blamed: Blamed = vec![(usize::MAX, 0); lines.len()];
    let all: Vec<(usize, usize)> = (0..lines.len()).map(|i| (i, i)).collect();
    if worktree {
        // The work tree's lines that HEAD's version has go to HEAD; the rest are its own.
        board.origins.push(Origin {
            commit: None,
            path: path.to_vec(),
            previous: None,
            boundary: false,
        });
        let mut rest = all;
        if let Some(h) = start {
            let c = read_commit(repo, &h)?;
            if let Some(old) = blob_at(repo, &c, path)? {
                board.origins[0].previous = Some((h, path.to_vec()));
                let (moved, kept) = pass(&split_lines(&old), lines, rest);
                board.hand(h, path, moved)?;
                rest = kept;
            }
        }
        for (f, l) in rest {
            blamed[f] = (0, l);
        }
    } else if let Some(h) = start {
        board.hand(h, path, all)?;
    }
    while let Some((_, _, id, p)) = board.heap.pop() {
        let Some((me, suspects)) = board.pending.remove(&(id, p.clone())) else {
            continue;
        };
        let c = read_commit(repo, &id)?;
        let mine = blob_at(repo, &c, &p)?.unwrap_or_default();
        let my_lines = split_lines(&mine);
        let parents: Vec<Oid> = if boundary_set.contains(&id) {
            Vec::new()
        } else {
            c.parents.clone()
        };
        if parents.is_empty() {
            board.origins[me].boundary = !root || boundary_set.contains(&id);
        }
        // Each parent's version of the file (by path, or the file it was renamed from).
        let mut versions: Vec<(Oid, Vec<u8>, Vec<u8>)> = Vec::new();
        for par in &parents {
            let pc = read_commit(repo, par)?;
            match blob_at(repo, &pc, &p)? {
                Some(d) => versions.push((*par, p.clone(), d)),
                None => {
                    if let Some((from, d)) = renamed_from(repo, &c, &pc, &mine)? {
                        versions.push((*par, from, d));
                    }
                }
            }
        }
        if let Some((par, pp, _)) = versions.first() {
            board.origins[me].previous = Some((*par, pp.clone()));
        }
        let mut rest = suspects;
        // A parent with the same content takes every line.
        if let Some(k) = versions.iter().position(|(_, _, d)| *d == mine) {
            let (par, pp, _) = &versions[k];
            board.hand(*par, pp, rest)?;
            continue;
        }
        for (par, pp, d) in &versions {
            let (moved, kept) = pass(&split_lines(d), &my_lines, rest);
            board.hand(*par, pp, moved)?;
            rest = kept;
        }
        for (f, l) in rest {
            blamed[f] = (me, l);
        }
    }
    Ok((board.origins, blamed))
}

/// Lines waiting for a commit: (final line, line in that commit's version).
type Suspects = Vec<(usize, usize)>;

/// The walk's state: every origin so far, the suspects waiting at each (commit, path) with
/// its origin, and those keys by committer date (newest first; ties by arrival).
struct Board<'a> {
    repo: &'a Repo,
    origins: Vec<Origin>,
    pending: HashMap<(Oid, Vec<u8>), (usize, Suspects)>,
    heap: BinaryHeap<(i64, u64, Oid, Vec<u8>)>,
    seq: u64,
}

impl Board<'_> {
    /// Hands lines to `commit`'s version of the file at `p`.
    fn hand(&mut self, commit: Oid, p: &[u8], moved: Suspects) -> Result<(), String> {
        if moved.is_empty() {
            return Ok(());
        }
        let key = (commit, p.to_vec());
        if let Some((_, l)) = self.pending.get_mut(&key) {
            l.extend(moved);
            return Ok(());
        }
        let c = read_commit(self.repo, &commit)?;
        self.origins.push(Origin {
            commit: Some(commit),
            path: p.to_vec(),
            previous: None,
            boundary: false,
        });
        self.heap
            .push((ident_time(&c.committer).0, self.seq, commit, p.to_vec()));
        self.seq -= 1;
        self.pending.insert(key, (self.origins.len() - 1, moved));
        Ok(())
    }
}

/// Splits suspects (final line, line in `new`) into those `new` has unchanged from `old`
/// (moved to their line in `old`) and the rest.
fn pass(old: &[&[u8]], new: &[&[u8]], suspects: Suspects) -> (Suspects, Suspects) {
    // new line -> old line, for the lines the diff keeps.
    let mut map: HashMap<usize, usize> = HashMap::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                map.insert(new_index + k, old_index + k);
            }
        }
    }
    let mut moved = Vec::new();
    let mut kept = Vec::new();
    for (f, l) in suspects {
        match map.get(&l) {
            Some(&o) => moved.push((f, o)),
            None => kept.push((f, l)),
        }
    }
    (moved, kept)
}

/// A file's old path and content.
type Renamed = (Vec<u8>, Vec<u8>);

/// The file `c`'s blob was renamed from: a path of the parent's tree that `c` no longer has,
/// whose content shares at least half its lines with `data` (the most similar one).
fn renamed_from(
    repo: &Repo,
    c: &Commit,
    parent: &Commit,
    data: &[u8],
) -> Result<Option<Renamed>, String> {
    let now = tree_files(repo, c.tree)?;
    let before = tree_files(repo, parent.tree)?;
    let new = split_lines(data);
    let mut best: Option<(usize, Vec<u8>, Vec<u8>)> = None;
    for (p, (mode, id)) in before {
        if now.contains_key(&p) || mode == 0o160000 {
            continue;
        }
        let old_data = repo.read_kind(&id, Kind::Blob)?.to_vec();
        let old = split_lines(&old_data);
        let same: usize = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new)
            .iter()
            .map(|op| match op {
                similar::DiffOp::Equal { old_index, len, .. } => old[*old_index..old_index + len]
                    .iter()
                    .map(|l| l.len())
                    .sum(),
                _ => 0,
            })
            .sum();
        let size = old_data.len().max(data.len()).max(1);
        if same * 2 >= size && best.as_ref().is_none_or(|b| same > b.0) {
            best = Some((same, p, old_data));
        }
    }
    Ok(best.map(|(_, p, d)| (p, d)))
}

/// The author and committer lines of an origin (the work tree's are "Not Committed Yet",
/// now).
fn idents(repo: &Repo, o: &Origin) -> Result<(String, String, Option<Commit>), String> {
    match o.commit {
        Some(id) => {
            let c = read_commit(repo, &id)?;
            Ok((c.author.clone(), c.committer.clone(), Some(c)))
        }
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let who = format!("Not Committed Yet <not.committed.yet> {now} +0000");
            Ok((who.clone(), who, None))
        }
    }
}

fn default_format(
    repo: &Repo,
    origins: &[Origin],
    blamed: &Blamed,
    lines: &[&[u8]],
    wanted: &[usize],
    path: &[u8],
    show: &Show,
) -> Result<String, String> {
    // Per origin: (id column, author or email, date).
    let mut cols: Vec<(String, String, String)> = Vec::new();
    for o in origins {
        let (author, _, _) = idents(repo, o)?;
        let (name, email) = ident_name_email(&author);
        let (t, z) = ident_time(&author);
        let id = match o.commit {
            Some(c) if show.long => hex(&c),
            Some(c) => hex(&c)[..8].to_string(),
            None if show.long => "0".repeat(40),
            None => "0".repeat(8),
        };
        let id = if o.boundary {
            format!("^{}", &id[..id.len() - 1])
        } else {
            id
        };
        let who = if show.email {
            format!("<{email}>")
        } else {
            name
        };
        let when = if show.raw_time {
            format!("{t} {z}")
        } else {
            iso_date(t, &z)
        };
        cols.push((id, who, when));
    }
    let used: Vec<&(usize, usize)> = wanted.iter().map(|&i| &blamed[i]).collect();
    let name_width = used
        .iter()
        .map(|(o, _)| cols[*o].1.chars().count())
        .max()
        .unwrap_or(0);
    let with_path = show.name || used.iter().any(|(o, _)| origins[*o].path != path);
    let path_width = used
        .iter()
        .map(|(o, _)| String::from_utf8_lossy(&origins[*o].path).chars().count())
        .max()
        .unwrap_or(0);
    let orig_width = used
        .iter()
        .map(|(_, l)| (l + 1).to_string().len())
        .max()
        .unwrap_or(1);
    let final_width = wanted.last().map_or(1, |l| (l + 1).to_string().len());
    let mut out = String::new();
    for &i in wanted {
        let (o, l) = blamed[i];
        let (id, who, when) = &cols[o];
        out.push_str(id);
        if with_path {
            let p = String::from_utf8_lossy(&origins[o].path);
            out.push_str(&format!(" {p:<path_width$}"));
        }
        if show.number {
            out.push_str(&format!(" {:>orig_width$}", l + 1));
        }
        if show.suppress {
            out.push_str(&format!(" {:>final_width$}) ", i + 1));
        } else {
            let pad = name_width - who.chars().count();
            out.push_str(&format!(
                " ({who}{} {when} {:>final_width$}) ",
                " ".repeat(pad),
                i + 1
            ));
        }
        out.push_str(&String::from_utf8_lossy(lines[i]));
        if !lines[i].ends_with(b"\n") {
            out.push('\n');
        }
    }
    Ok(out)
}

fn porcelain(
    repo: &Repo,
    origins: &[Origin],
    blamed: &Blamed,
    lines: &[&[u8]],
    wanted: &[usize],
    every_line: bool,
) -> Result<String, String> {
    let mut out = String::new();
    let mut described = vec![false; origins.len()];
    let mut k = 0;
    while k < wanted.len() {
        // A group: consecutive lines from one origin, consecutive there too.
        let (o, l0) = blamed[wanted[k]];
        let mut n = 1;
        while k + n < wanted.len()
            && wanted[k + n] == wanted[k] + n
            && blamed[wanted[k + n]] == (o, l0 + n)
        {
            n += 1;
        }
        let id = origins[o]
            .commit
            .map_or_else(|| "0".repeat(40), |c| hex(&c));
        for j in 0..n {
            let i = wanted[k + j];
            if j == 0 {
                out.push_str(&format!("{id} {} {} {n}\n", l0 + 1, i + 1));
            } else {
                out.push_str(&format!("{id} {} {}\n", l0 + j + 1, i + 1));
            }
            if (j == 0 && !described[o]) || every_line {
                described[o] = true;
                out.push_str(&details(repo, &origins[o])?);
            }
            out.push('\t');
            out.push_str(&String::from_utf8_lossy(lines[i]));
            if !lines[i].ends_with(b"\n") {
                out.push('\n');
            }
        }
        k += n;
    }
    Ok(out)
}

/// An origin's lines in porcelain output: author, committer, summary, boundary, previous,
/// filename.
fn details(repo: &Repo, o: &Origin) -> Result<String, String> {
    let (author, committer, c) = idents(repo, o)?;
    let mut out = String::new();
    for (role, ident) in [("author", &author), ("committer", &committer)] {
        let (name, email) = ident_name_email(ident);
        let (t, z) = ident_time(ident);
        out.push_str(&format!(
            "{role} {name}\n{role}-mail <{email}>\n{role}-time {t}\n{role}-tz {z}\n"
        ));
    }
    let p = String::from_utf8_lossy(&o.path).into_owned();
    let summary = match &c {
        Some(c) => subject(&c.message),
        None => format!("Version of {p} from {p}"),
    };
    out.push_str(&format!("summary {summary}\n"));
    if o.boundary {
        out.push_str("boundary\n");
    }
    if let Some((par, pp)) = &o.previous {
        out.push_str(&format!(
            "previous {} {}\n",
            hex(par),
            String::from_utf8_lossy(pp)
        ));
    }
    out.push_str(&format!("filename {p}\n"));
    Ok(out)
}
