//! `git diff` (work tree against the index, `--cached` index against HEAD, one commit against
//! the work tree, two commits or `A..B`; `--stat`, `--name-only`, `--name-status`, `-- PATHS`)
//! and the diff of `git show` (through `git log`'s options: [`super::log::show`]), in git's
//! unified format: `diff --git` headers, `index` lines, hunks with three lines of context and
//! the default function-name context after `@@`.

pub(super) use super::rev::scope_of;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use foldhash::HashMap;

use super::object::{Commit, Kind, Oid, hash};
use super::porcelain::{
    abbrev, load_index, prefix, quote, read_commit, resolve, tree_files, worktree_change,
};
use super::repo::IndexEntry;
use super::repo::Repo;
use sh_utility::Ctx;
use sh_utility::io::Io;

/// One side of a file in a diff.
#[derive(Clone)]
struct Side {
    mode: u32,
    oid: Oid,
    data: Vec<u8>,
}

/// path -> (mode, id) with the content read on demand.
/// The diff `git show` gives a merge, as far as burrow's git has git's combined diff
/// (`--cc`): `--stat` against the first parent; nothing when every path is as one of the
/// parents has it (git's dense combined diff is empty then), else refused.
pub(super) fn merge_diff(
    repo: &Repo,
    c: &Commit,
    format: Format,
    scopes: &[Pathspec],
) -> Result<String, String> {
    let limit = |files: Files| -> Files {
        files
            .into_iter()
            .filter(|(p, _)| in_pathspecs(scopes, p))
            .collect()
    };
    let after = limit(tree_files(repo, c.tree)?);
    let mut parents = Vec::new();
    for p in &c.parents {
        parents.push(limit(tree_files(repo, read_commit(repo, p)?.tree)?));
    }
    if format == Format::Stat {
        let first = parents.first().cloned().unwrap_or_default();
        return Ok(render(&changes_of(repo, &first, &after)?, format));
    }
    let mut paths: std::collections::BTreeSet<&Vec<u8>> = after.keys().collect();
    for p in &parents {
        paths.extend(p.keys());
    }
    if paths
        .iter()
        .all(|path| parents.iter().any(|p| p.get(*path) == after.get(*path)))
    {
        return Ok(String::new());
    }
    Err("fatal: 'git show' of a merge with changes of its own (git's combined diff) is not supported in burrow".into())
}

type Files = BTreeMap<Vec<u8>, (u32, Oid)>;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Patch,
    Stat,
    NameOnly,
    NameStatus,
}

pub fn diff(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    match run_diff(&repo, &cwd, args, io) {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

pub(super) fn parse_format(a: &str, format: &mut Format) -> bool {
    *format = match a {
        "--stat" => Format::Stat,
        "--name-only" => Format::NameOnly,
        "--name-status" => Format::NameStatus,
        "-p" | "--patch" | "-u" => Format::Patch,
        _ => return false,
    };
    true
}

fn run_diff(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let mut cached = false;
    let mut format = Format::Patch;
    let mut revs: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut quiet = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        match a.as_str() {
            "--cached" | "--staged" => cached = true,
            "--quiet" | "--exit-code" => quiet = a == "--quiet",
            "--no-color" | "--no-ext-diff" => {}
            "--" => {
                paths.extend(args[i..].iter().cloned());
                break;
            }
            s if parse_format(s, &mut format) => {}
            s if s.starts_with('-') => {
                return Err(format!("fatal: 'git diff {s}' is not supported in burrow"));
            }
            s => {
                if resolve_range(repo, s).is_some() {
                    revs.push(s.to_string());
                } else {
                    // A path (git requires it to exist when not after --).
                    let p = cwd.join(s);
                    if p.symlink_metadata().is_err() {
                        return Err(ambiguous(s));
                    }
                    paths.push(s.to_string());
                    paths.extend(args[i..].iter().cloned());
                    break;
                }
            }
        }
    }
    let work = repo.work.clone();
    // The index, read once: its entries' stat data lets the work tree side skip every file
    // that has not changed since it was staged, as git does, instead of hashing it.
    let entries = load_index(repo)?;
    let index_files = || -> Result<Files, String> {
        Ok(entries
            .iter()
            .map(|e| (e.path.clone(), (e.mode, e.oid)))
            .collect())
    };
    let by_path: HashMap<&[u8], &IndexEntry> =
        entries.iter().map(|e| (e.path.as_slice(), e)).collect();
    let commit_files = |rev: &str| -> Result<Files, String> {
        let id = resolve(repo, rev).ok_or_else(|| ambiguous(rev))?;
        let c = read_commit(repo, &id)?;
        tree_files(repo, c.tree)
    };
    // (old, new, whether the new side is the work tree)
    let (old, new, worktree): (Files, Files, bool) = match (revs.as_slice(), cached) {
        ([], false) => (index_files()?, index_files()?, true),
        ([], true) => {
            let head = match repo.head().1 {
                Some(h) => tree_files(repo, read_commit(repo, &h)?.tree)?,
                None => BTreeMap::new(),
            };
            (head, index_files()?, false)
        }
        ([r], c) if r.contains("..") => {
            if c {
                return Err("fatal: --cached with a range is not supported".into());
            }
            let (a, b) = resolve_range(repo, r).ok_or_else(|| ambiguous(r))?;
            (commit_files(&a)?, commit_files(&b)?, false)
        }
        ([r], true) => (commit_files(r)?, index_files()?, false),
        ([r], false) => (commit_files(r)?, index_files()?, true),
        ([a, b], false) => (commit_files(a)?, commit_files(b)?, false),
        _ => return Err("fatal: this form of 'git diff' is not supported in burrow".into()),
    };
    let pre = prefix(repo, cwd);
    let scopes: Vec<Vec<u8>> = paths.iter().map(|p| scope_of(&pre, p)).collect();
    let wanted = |p: &[u8]| in_scopes(&scopes, p);
    // The work tree side: each index path's current content.
    let read_blob =
        |id: &Oid| -> Result<Vec<u8>, String> { Ok(repo.read_kind(id, Kind::Blob)?.to_vec()) };
    let empty = hash(Kind::Blob, b"");
    let mut changes: Vec<(Vec<u8>, Option<Side>, Option<Side>)> = Vec::new();
    let mut all: Vec<&Vec<u8>> = old.keys().chain(new.keys()).collect();
    all.sort();
    all.dedup();
    let mut tree = work.as_deref().map(sh_utility::sys::TreeStat::new);
    for p in all {
        if !wanted(p) {
            continue;
        }
        let a = old.get(p).map(|(m, id)| (*m, *id));
        let b: Option<Side> = if worktree && !new.contains_key(p) {
            // Not in the index: not tracked, so deleted against the revision whatever the
            // work tree holds there (git diff REV compares tracked paths).
            None
        } else if worktree {
            let Some(w) = &work else {
                return Err("fatal: this operation must be run in a work tree".into());
            };
            let file = w.join(String::from_utf8_lossy(p).as_ref());
            let staged = by_path.get(p.as_slice());
            let unchanged =
                |e: &&&IndexEntry| (tree.as_mut()).is_some_and(|t| worktree_change(t, e).is_none());
            if let Some(e) = staged.filter(unchanged) {
                // As staged: its content is the index's blob, read below if it is shown.
                Some(Side {
                    mode: e.mode,
                    oid: e.oid,
                    data: Vec::new(),
                })
            } else {
                match file.symlink_metadata() {
                    Err(_) => None,
                    Ok(m) if m.is_dir() => None,
                    Ok(m) => {
                        let data = if m.file_type().is_symlink() {
                            std::fs::read_link(&file)
                                .map(|t| t.to_string_lossy().into_owned().into_bytes())
                                .unwrap_or_default()
                        } else {
                            std::fs::read(&file).unwrap_or_default()
                        };
                        let mode = if m.file_type().is_symlink() {
                            0o120000
                        } else {
                            new.get(p).map(|x| x.0).unwrap_or(0o100644)
                        };
                        Some(Side {
                            mode,
                            oid: hash(Kind::Blob, &data),
                            data,
                        })
                    }
                }
            }
        } else {
            new.get(p).map(|(m, id)| Side {
                mode: *m,
                oid: *id,
                data: Vec::new(),
            })
        };
        match (&a, &b) {
            (Some((m, id)), Some(s)) if *id == s.oid && *m == s.mode => continue,
            (None, None) => continue,
            _ => {}
        }
        if a.is_some_and(|(m, _)| m == 0o160000) || b.as_ref().is_some_and(|s| s.mode == 0o160000) {
            continue;
        }
        let a = match a {
            Some((m, id)) => Some(Side {
                mode: m,
                oid: id,
                data: read_blob(&id)?,
            }),
            None => None,
        };
        let b = match b {
            Some(s) if !worktree || (s.data.is_empty() && s.oid != empty) => Some(Side {
                data: read_blob(&s.oid)?,
                ..s
            }),
            other => other,
        };
        changes.push((p.clone(), a, b));
    }
    let changes = pair_renames(changes);
    if quiet {
        return Ok(i32::from(!changes.is_empty()));
    }
    io.print(&render(&changes, format));
    Ok(0)
}

/// Whether a path from the top is in one of the pathspecs (a file, or a directory's
/// contents; an empty pathspec is the whole tree). No pathspecs means every path.
pub(super) fn in_scopes(scopes: &[Vec<u8>], p: &[u8]) -> bool {
    scopes.is_empty()
        || scopes.iter().any(|s| {
            s.is_empty() || p == &s[..] || (p.starts_with(s) && p.get(s.len()) == Some(&b'/'))
        })
}

/// Changes in one of git's diff formats. Paths are from the top of the work tree, as git
/// prints them whatever the working directory.
fn render(changes: &[Change], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::NameOnly => {
            for c in changes {
                out.push_str(&quote(&c.path));
                out.push('\n');
            }
        }
        Format::NameStatus => {
            for c in changes {
                match (&c.from, &c.a, &c.b) {
                    (Some(from), _, _) => {
                        out.push_str(&format!("R100\t{}\t{}\n", quote(from), quote(&c.path)))
                    }
                    (None, None, _) => out.push_str(&format!("A\t{}\n", quote(&c.path))),
                    (None, _, None) => out.push_str(&format!("D\t{}\n", quote(&c.path))),
                    _ => out.push_str(&format!("M\t{}\n", quote(&c.path))),
                }
            }
        }
        Format::Stat => out.push_str(&stat(changes)),
        Format::Patch => {
            for c in changes {
                out.push_str(&patch_of(c));
            }
        }
    }
    out
}

/// A commit's diff against its first parent (the empty tree for a root), limited to the
/// pathspecs, in `format`: what `git log -p`/`--stat` and `git show` print under the header.
/// A merge has none, as git shows no diff for merges without `-m`/`--cc`.
pub(super) fn commit_diff(
    repo: &Repo,
    c: &Commit,
    format: Format,
    scopes: &[Pathspec],
) -> Result<String, String> {
    if c.parents.len() > 1 {
        return Ok(String::new());
    }
    let limit = |files: Files| -> Files {
        files
            .into_iter()
            .filter(|(p, _)| in_pathspecs(scopes, p))
            .collect()
    };
    let before = match c.parents.first() {
        Some(p) => limit(tree_files(repo, read_commit(repo, p)?.tree)?),
        None => Files::new(),
    };
    let after = limit(tree_files(repo, c.tree)?);
    Ok(render(&changes_of(repo, &before, &after)?, format))
}

/// One file's change; `from` is the old path of an exact rename.
struct Change {
    path: Vec<u8>,
    from: Option<Vec<u8>>,
    a: Option<Side>,
    b: Option<Side>,
}

/// Pairs each deleted path with an added path of the same content (git's exact renames; its
/// similarity detection of renames with edits is not done here).
fn pair_renames(changes: Vec<(Vec<u8>, Option<Side>, Option<Side>)>) -> Vec<Change> {
    let mut out: Vec<Change> = changes
        .into_iter()
        .map(|(path, a, b)| Change {
            path,
            from: None,
            a,
            b,
        })
        .collect();
    let deleted: Vec<usize> = (0..out.len())
        .filter(|&i| out[i].a.is_some() && out[i].b.is_none())
        .collect();
    let mut gone = Vec::new();
    for d in deleted {
        let Some(oid) = out[d].a.as_ref().map(|s| s.oid) else {
            continue;
        };
        let found = (0..out.len()).find(|&i| {
            out[i].a.is_none()
                && out[i].from.is_none()
                && out[i].b.as_ref().is_some_and(|s| s.oid == oid)
        });
        if let Some(i) = found {
            out[i].from = Some(out[d].path.clone());
            out[i].a = out[d].a.take();
            gone.push(d);
        }
    }
    let mut k = 0;
    out.retain(|_| {
        k += 1;
        !gone.contains(&(k - 1))
    });
    out
}

/// `--stat` of the change from `before` to `after` (two trees' files).
pub(super) fn stat_of(repo: &Repo, before: &Files, after: &Files) -> Result<String, String> {
    Ok(stat(&changes_of(repo, before, after)?))
}

/// The patch from `before` to `after` (two trees' files).
pub(super) fn patch_of_trees(repo: &Repo, before: &Files, after: &Files) -> Result<String, String> {
    Ok(changes_of(repo, before, after)?
        .iter()
        .map(patch_of)
        .collect())
}

fn changes_of(repo: &Repo, before: &Files, after: &Files) -> Result<Vec<Change>, String> {
    let mut paths: std::collections::BTreeSet<&Vec<u8>> = before.keys().collect();
    paths.extend(after.keys());
    let side = |v: Option<&(u32, Oid)>| -> Result<Option<Side>, String> {
        match v {
            Some(&(mode, oid)) if mode != 0o160000 => Ok(Some(Side {
                mode,
                oid,
                data: repo.read_kind(&oid, Kind::Blob)?.to_vec(),
            })),
            _ => Ok(None),
        }
    };
    let mut changes = Vec::new();
    for p in paths {
        let (a, b) = (before.get(p), after.get(p));
        if a == b {
            continue;
        }
        let (a, b) = (side(a)?, side(b)?);
        // A submodule's commit moving is not a file change.
        if a.is_some() || b.is_some() {
            changes.push((p.clone(), a, b));
        }
    }
    Ok(pair_renames(changes))
}

fn patch_of(c: &Change) -> String {
    match &c.from {
        Some(from) => format!(
            "diff --git a/{f} b/{t}\nsimilarity index 100%\nrename from {f}\nrename to {t}\n",
            f = String::from_utf8_lossy(from),
            t = String::from_utf8_lossy(&c.path)
        ),
        None => patch(&c.path, c.a.as_ref(), c.b.as_ref()),
    }
}

/// git's refusal of an argument that is neither a revision nor an existing path.
pub(super) fn ambiguous(r: &str) -> String {
    format!(
        "fatal: ambiguous argument '{r}': unknown revision or path not in the working tree.\n\
         Use '--' to separate paths from revisions, like this:\n\
         'git <command> [<revision>...] -- [<file>...]'"
    )
}

/// `A..B` as its two ends (an empty end is HEAD); a single revision as itself.
fn resolve_range(repo: &Repo, s: &str) -> Option<(String, String)> {
    match s.split_once("..") {
        Some((a, b)) => {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            (resolve(repo, a).is_some() && resolve(repo, b).is_some())
                .then(|| (a.to_string(), b.to_string()))
        }
        None => resolve(repo, s).map(|_| (s.to_string(), s.to_string())),
    }
}

/// A pathspec from the working directory as a path from the top.
/// A pathspec, from the top of the work tree: a path (a file, or a directory's contents) or,
/// with wildcards, a glob over whole paths whose `*` also matches `/`, as git's pathspecs
/// (`*.rs` selects `src/main.rs`).
pub(super) struct Pathspec {
    path: Vec<u8>,
    glob: Option<regex::Regex>,
}

impl Pathspec {
    /// `p` as given in the directory `pre` (from the top).
    pub(super) fn new(pre: &[u8], p: &str) -> Pathspec {
        let path = scope_of(pre, p);
        let glob = if p.contains(['*', '?', '[']) {
            sh_utility::pattern::pattern_regex(&String::from_utf8_lossy(&path))
        } else {
            None
        };
        Pathspec { path, glob }
    }

    /// The path from the top (the pattern, for a glob).
    pub(super) fn path(&self) -> &[u8] {
        &self.path
    }

    pub(super) fn is_glob(&self) -> bool {
        self.glob.is_some()
    }

    pub(super) fn matches(&self, p: &[u8]) -> bool {
        match &self.glob {
            Some(re) => re.is_match(&String::from_utf8_lossy(p)),
            None => in_scopes(std::slice::from_ref(&self.path), p),
        }
    }
}

/// Whether `p` is in one of `specs` (all paths when there are none).
pub(super) fn in_pathspecs(specs: &[Pathspec], p: &[u8]) -> bool {
    specs.is_empty() || specs.iter().any(|s| s.matches(p))
}

fn is_binary(d: &[u8]) -> bool {
    d[..d.len().min(8000)].contains(&0)
}

/// Lines of `d`, each with its newline (the last may lack one).
pub(super) fn lines(d: &[u8]) -> Vec<&[u8]> {
    d.split_inclusive(|&b| b == b'\n').collect()
}

/// Insertions and deletions between two texts (0, 0 for binary).
pub fn counts(a: &[u8], b: &[u8]) -> (usize, usize) {
    if is_binary(a) || is_binary(b) {
        return (0, 0);
    }
    let (la, lb) = (lines(a), lines(b));
    let mut ins = 0;
    let mut del = 0;
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &la, &lb) {
        let (_, o, n) = op.as_tag_tuple();
        match op.tag() {
            similar::DiffTag::Insert => ins += n.len(),
            similar::DiffTag::Delete => del += o.len(),
            similar::DiffTag::Replace => {
                ins += n.len();
                del += o.len();
            }
            similar::DiffTag::Equal => {}
        }
    }
    (ins, del)
}

/// The default function-name context of a hunk: the nearest line before it that starts
/// with a letter, `_` or `$`.
fn funcname(old: &[&[u8]], before: usize) -> String {
    for l in old[..before.min(old.len())].iter().rev() {
        if l.first()
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
        {
            let t = String::from_utf8_lossy(l);
            let t = t.trim_end();
            let t: String = t.chars().take(80).collect();
            return format!(" {}", t.trim_end());
        }
    }
    String::new()
}

fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// One file's patch in git's format.
fn patch(path: &[u8], a: Option<&Side>, b: Option<&Side>) -> String {
    let p = String::from_utf8_lossy(path);
    let mut out = format!("diff --git a/{p} b/{p}\n");
    let zero = "0000000";
    match (a, b) {
        (None, Some(b)) => {
            out.push_str(&format!(
                "new file mode {:06o}\nindex {zero}..{}\n",
                b.mode,
                abbrev(&b.oid)
            ));
        }
        (Some(a), None) => {
            out.push_str(&format!(
                "deleted file mode {:06o}\nindex {}..{zero}\n",
                a.mode,
                abbrev(&a.oid)
            ));
        }
        (Some(a), Some(b)) => {
            if a.mode != b.mode {
                out.push_str(&format!(
                    "old mode {:06o}\nnew mode {:06o}\n",
                    a.mode, b.mode
                ));
            }
            if a.oid == b.oid {
                return out;
            }
            if a.mode == b.mode {
                out.push_str(&format!(
                    "index {}..{} {:06o}\n",
                    abbrev(&a.oid),
                    abbrev(&b.oid),
                    a.mode
                ));
            } else {
                out.push_str(&format!("index {}..{}\n", abbrev(&a.oid), abbrev(&b.oid)));
            }
        }
        (None, None) => return String::new(),
    }
    let ad: &[u8] = a.map(|s| s.data.as_slice()).unwrap_or(b"");
    let bd: &[u8] = b.map(|s| s.data.as_slice()).unwrap_or(b"");
    let an = if a.is_some() {
        format!("a/{p}")
    } else {
        "/dev/null".into()
    };
    let bn = if b.is_some() {
        format!("b/{p}")
    } else {
        "/dev/null".into()
    };
    if is_binary(ad) || is_binary(bd) {
        out.push_str(&format!("Binary files {an} and {bn} differ\n"));
        return out;
    }
    if ad.is_empty() && bd.is_empty() {
        return out;
    }
    out.push_str(&format!("--- {an}\n+++ {bn}\n"));
    let (la, lb) = (lines(ad), lines(bd));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &la, &lb);
    for group in similar::group_diff_ops(ops, 3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let os = first.old_range().start;
        let oe = last.old_range().end;
        let ns = first.new_range().start;
        let ne = last.new_range().end;
        out.push_str(&format!(
            "@@ -{} +{} @@{}\n",
            range(os, oe - os),
            range(ns, ne - ns),
            funcname(&la, os)
        ));
        let line = |out: &mut String, mark: char, l: &[u8]| {
            out.push(mark);
            out.push_str(&String::from_utf8_lossy(l));
            if !l.ends_with(b"\n") {
                out.push_str("\n\\ No newline at end of file\n");
            }
        };
        for op in &group {
            for r in op.old_range() {
                if matches!(op.tag(), similar::DiffTag::Equal) {
                    line(&mut out, ' ', la[r]);
                } else {
                    line(&mut out, '-', la[r]);
                }
            }
            if !matches!(op.tag(), similar::DiffTag::Equal) {
                for r in op.new_range() {
                    line(&mut out, '+', lb[r]);
                }
            }
        }
    }
    out
}

/// `--stat`: one line per file and the summary, as git prints them for an 80-column width.
/// One line of a diffstat: the name as shown, insertions and deletions, and for a binary
/// file its sizes before and after.
pub(super) struct StatRow {
    pub name: String,
    pub ins: usize,
    pub del: usize,
    pub binary: Option<(usize, usize)>,
}

fn stat(changes: &[Change]) -> String {
    let mut rows = Vec::new();
    for c in changes {
        let ad: &[u8] = c.a.as_ref().map(|s| s.data.as_slice()).unwrap_or(b"");
        let bd: &[u8] = c.b.as_ref().map(|s| s.data.as_slice()).unwrap_or(b"");
        let binary = (is_binary(ad) || is_binary(bd)).then_some((ad.len(), bd.len()));
        let (ins, del) = counts(ad, bd);
        let name = match &c.from {
            Some(f) => super::write::rename_name(f, &c.path),
            None => quote(&c.path),
        };
        rows.push(StatRow {
            name,
            ins,
            del,
            binary,
        });
    }
    stat_rows(&rows)
}

/// git's `--stat` for 80 columns.
pub(super) fn stat_rows(rows: &[StatRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let max_change = rows.iter().map(|r| r.ins + r.del).max().unwrap_or(0);
    let count_w = rows
        .iter()
        .map(|r| {
            if r.binary.is_some() {
                3
            } else {
                (r.ins + r.del).to_string().len()
            }
        })
        .max()
        .unwrap_or(1);
    // git's layout for 80 columns: " NAME | COUNT GRAPH" with 6 columns of punctuation
    // and margin; the graph gets the rest (scaled when the largest change does not fit).
    let graph_w = 80usize.saturating_sub(6 + count_w + name_w).max(6);
    let scale = |n: usize| -> usize {
        if n == 0 {
            0
        } else {
            1 + n * (graph_w - 1) / max_change
        }
    };
    let mut out = String::new();
    let (mut ti, mut td) = (0, 0);
    for r in rows {
        let pad = name_w - r.name.chars().count();
        match r.binary {
            Some((a, b)) => out.push_str(&format!(
                " {}{} | {:>count_w$} {a} -> {b} bytes\n",
                r.name,
                " ".repeat(pad),
                "Bin"
            )),
            None => {
                let total = r.ins + r.del;
                let (mut pi, mut pd) = (r.ins, r.del);
                if graph_w <= max_change {
                    let mut t = scale(total);
                    if t < 2 && pi > 0 && pd > 0 {
                        t = 2;
                    }
                    if pi < pd {
                        pi = scale(pi);
                        pd = t - pi;
                    } else {
                        pd = scale(pd);
                        pi = t - pd;
                    }
                }
                out.push_str(&format!(
                    " {}{} | {:>count_w$}{}\n",
                    r.name,
                    " ".repeat(pad),
                    total,
                    if pi + pd == 0 {
                        String::new()
                    } else {
                        format!(" {}{}", "+".repeat(pi), "-".repeat(pd))
                    }
                ));
            }
        }
        ti += r.ins;
        td += r.del;
    }
    out.push_str(&changed_line(rows.len(), ti, td));
    out
}

/// git's ` N files changed, I insertions(+), D deletions(-)` line (a zero part is left out
/// unless both are zero).
pub(super) fn changed_line(files: usize, ins: usize, del: usize) -> String {
    let plural = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut out = format!(" {files} {} changed", plural(files, "file", "files"));
    if ins > 0 || del == 0 {
        out.push_str(&format!(
            ", {ins} {}(+)",
            plural(ins, "insertion", "insertions")
        ));
    }
    if del > 0 || ins == 0 {
        out.push_str(&format!(
            ", {del} {}(-)",
            plural(del, "deletion", "deletions")
        ));
    }
    out.push('\n');
    out
}

/// `git show`: `git log`'s options and formats over the objects named (see
/// [`super::log::show`]).
pub fn show(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    match super::log::show(&repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}
