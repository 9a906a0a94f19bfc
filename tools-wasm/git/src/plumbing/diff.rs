//! Tree and blob diffs (git's `diff-tree` and `diff-index`): the changes between two sets of
//! files with exact renames paired, unified patches with git's headers and hunk context,
//! `--stat`/`--name-only`/`--name-status` renderings and the diffstat summary lines
//! (`create mode`, `rename`) that commit, merge and the sequencer print.

use std::collections::BTreeMap;

use super::commit::read_commit;
use super::object::{Commit, Kind, Oid};
use super::pathspec::{Pathspec, in_pathspecs};
use super::repo::Repo;
use super::text::{abbrev, quote};
use super::tree::tree_files;

/// One side of a file in a diff.
#[derive(Clone)]
pub(crate) struct Side {
    pub(crate) mode: u32,
    pub(crate) oid: Oid,
    pub(crate) data: Vec<u8>,
}

/// path -> (mode, id) with the content read on demand.
/// The diff `git show` gives a merge, as far as burrow's git has git's combined diff
/// (`--cc`): `--stat` against the first parent; nothing when every path is as one of the
/// parents has it (git's dense combined diff is empty then), else refused.
pub(crate) fn merge_diff(
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

pub(crate) type Files = BTreeMap<Vec<u8>, (u32, Oid)>;

/// git's output_format bits (diff's, log's and show's): what `-p`, `--stat`, `--name-only`,
/// `--name-status` and `-s` ask for. The first two add up (a stat, then the patch); the
/// others exclude each other and the first two.
pub(crate) const PATCH: u8 = 1;
pub(crate) const STAT: u8 = 2;
pub(crate) const NAME: u8 = 4;
pub(crate) const NAME_STATUS: u8 = 8;
pub(crate) const NO_OUTPUT: u8 = 16;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Patch,
    Stat,
    NameOnly,
    NameStatus,
}

/// Changes in one of git's diff formats. Paths are from the top of the work tree, as git
/// prints them whatever the working directory.
pub(crate) fn render(changes: &[Change], format: Format) -> String {
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
pub(crate) fn commit_diff(
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
pub(crate) struct Change {
    path: Vec<u8>,
    from: Option<Vec<u8>>,
    a: Option<Side>,
    b: Option<Side>,
}

/// Pairs each deleted path with an added path of the same content (git's exact renames; its
/// similarity detection of renames with edits is not done here).
pub(crate) fn pair_renames(changes: Vec<(Vec<u8>, Option<Side>, Option<Side>)>) -> Vec<Change> {
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
pub(crate) fn stat_of(repo: &Repo, before: &Files, after: &Files) -> Result<String, String> {
    Ok(stat(&changes_of(repo, before, after)?))
}

/// The patch from `before` to `after` (two trees' files).
pub(crate) fn patch_of_trees(repo: &Repo, before: &Files, after: &Files) -> Result<String, String> {
    Ok(changes_of(repo, before, after)?
        .iter()
        .map(patch_of)
        .collect())
}

pub(crate) fn changes_of(
    repo: &Repo,
    before: &Files,
    after: &Files,
) -> Result<Vec<Change>, String> {
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

pub(crate) fn patch_of(c: &Change) -> String {
    match &c.from {
        Some(from) => format!(
            "diff --git a/{f} b/{t}\nsimilarity index 100%\nrename from {f}\nrename to {t}\n",
            f = String::from_utf8_lossy(from),
            t = String::from_utf8_lossy(&c.path)
        ),
        None => patch(&c.path, c.a.as_ref(), c.b.as_ref()),
    }
}

pub(crate) fn is_binary(d: &[u8]) -> bool {
    d[..d.len().min(8000)].contains(&0)
}

/// Lines of `d`, each with its newline (the last may lack one).
pub(crate) fn lines(d: &[u8]) -> Vec<&[u8]> {
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
pub(crate) fn funcname(old: &[&[u8]], before: usize) -> String {
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

pub(crate) fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// One file's patch in git's format.
pub(crate) fn patch(path: &[u8], a: Option<&Side>, b: Option<&Side>) -> String {
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
pub(crate) struct StatRow {
    pub name: String,
    pub ins: usize,
    pub del: usize,
    pub binary: Option<(usize, usize)>,
}

pub(crate) fn stat(changes: &[Change]) -> String {
    let mut rows = Vec::new();
    for c in changes {
        let ad: &[u8] = c.a.as_ref().map(|s| s.data.as_slice()).unwrap_or(b"");
        let bd: &[u8] = c.b.as_ref().map(|s| s.data.as_slice()).unwrap_or(b"");
        let binary = (is_binary(ad) || is_binary(bd)).then_some((ad.len(), bd.len()));
        let (ins, del) = counts(ad, bd);
        let name = match &c.from {
            Some(f) => super::diff::rename_name(f, &c.path),
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
pub(crate) fn stat_rows(rows: &[StatRow]) -> String {
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
pub(crate) fn changed_line(files: usize, ins: usize, del: usize) -> String {
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

/// The diffstat summary git prints after a commit: files changed, insertions, deletions,
/// then create/delete mode lines. Exact renames are shown as git shows them.
pub(crate) fn summary(repo: &Repo, old: Option<Oid>, new: Oid) -> Result<String, String> {
    let before = match old {
        Some(t) => tree_files(repo, t)?,
        None => BTreeMap::new(),
    };
    let after = tree_files(repo, new)?;
    summary_of(repo, &before, &after, false)
}

/// The diffstat a merge or pull prints: `--stat`'s lines, then the create, delete and
/// rename lines.
pub(crate) fn tree_stat(
    repo: &Repo,
    before: &BTreeMap<Vec<u8>, (u32, Oid)>,
    after: &BTreeMap<Vec<u8>, (u32, Oid)>,
) -> Result<String, String> {
    summary_of(repo, before, after, true)
}

pub(crate) fn summary_of(
    repo: &Repo,
    before: &BTreeMap<Vec<u8>, (u32, Oid)>,
    after: &BTreeMap<Vec<u8>, (u32, Oid)>,
    full_stat: bool,
) -> Result<String, String> {
    let mut added: Vec<&Vec<u8>> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let mut deleted: Vec<&Vec<u8>> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    // Exact renames: a deleted path whose blob a new path has.
    let mut renames: Vec<(&Vec<u8>, &Vec<u8>)> = Vec::new();
    deleted.retain(|d| {
        let (mode, id) = before[*d];
        if let Some(pos) = added.iter().position(|a| after[*a] == (mode, id)) {
            renames.push((d, added.remove(pos)));
            false
        } else {
            true
        }
    });
    let mut files = 0;
    let (mut ins, mut del) = (0usize, 0usize);
    let read = |id: &Oid| repo.read_kind(id, Kind::Blob);
    let mut count = |a: Option<&[u8]>, b: Option<&[u8]>| {
        let (i, d) = super::diff::counts(a.unwrap_or(b""), b.unwrap_or(b""));
        ins += i;
        del += d;
    };
    for (path, (mode, id)) in after {
        match before.get(path) {
            Some((m, old)) if old == id && m == mode => {}
            Some((_, old)) => {
                files += 1;
                count(Some(&read(old)?), Some(&read(id)?));
            }
            None => {
                if renames.iter().any(|(_, n)| *n == path) {
                    files += 1;
                } else {
                    files += 1;
                    count(None, Some(&read(id)?));
                }
            }
        }
    }
    for d in &deleted {
        files += 1;
        count(Some(&read(&before[*d].1)?), None);
    }
    if files == 0 {
        // An empty commit: no stat line at all.
        return Ok(String::new());
    }
    let mut out = if full_stat {
        super::diff::stat_of(repo, before, after)?
    } else {
        super::diff::changed_line(files, ins, del)
    };
    // create/delete/rename lines in path order.
    let mut lines: Vec<(Vec<u8>, String)> = Vec::new();
    for p in &added {
        lines.push((
            (*p).clone(),
            format!(" create mode {:06o} {}\n", after[*p].0, quote(p)),
        ));
    }
    for p in &deleted {
        lines.push((
            (*p).clone(),
            format!(" delete mode {:06o} {}\n", before[*p].0, quote(p)),
        ));
    }
    for (a, b) in &renames {
        lines.push((
            (*a).clone(),
            format!(" rename {} (100%)\n", rename_name(a, b)),
        ));
    }
    lines.sort();
    for (_, l) in lines {
        out.push_str(&l);
    }
    Ok(out)
}

/// git's compact form of a rename: `dir/{old => new}/rest`.
pub(crate) fn rename_name(a: &[u8], b: &[u8]) -> String {
    let mut pfx = 0;
    let mut i = 0;
    while i < a.len() && i < b.len() && a[i] == b[i] {
        if a[i] == b'/' {
            pfx = i + 1;
        }
        i += 1;
    }
    let mut sfx = 0;
    let adjust = usize::from(pfx > 0);
    let (mut ia, mut ib) = (a.len() as isize, b.len() as isize);
    let limit = pfx as isize - adjust as isize;
    while ia >= limit && ib >= limit {
        let ca = if ia == a.len() as isize {
            0
        } else {
            a[ia as usize]
        };
        let cb = if ib == b.len() as isize {
            0
        } else {
            b[ib as usize]
        };
        if ca != cb {
            break;
        }
        if ca == b'/' {
            sfx = a.len() - ia as usize;
        }
        ia -= 1;
        ib -= 1;
    }
    let amid = a.len().saturating_sub(pfx + sfx);
    let bmid = b.len().saturating_sub(pfx + sfx);
    let s = |x: &[u8]| String::from_utf8_lossy(x).into_owned();
    if pfx + sfx > 0 {
        format!(
            "{}{{{} => {}}}{}",
            s(&a[..pfx]),
            s(&a[pfx..pfx + amid]),
            s(&b[pfx..pfx + bmid]),
            s(&a[a.len() - sfx..])
        )
    } else {
        format!("{} => {}", s(a), s(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_shown_compactly() {
        assert_eq!(
            rename_name(b"src/deep/er/x.txt", b"src/moved.txt"),
            "src/{deep/er/x.txt => moved.txt}"
        );
        assert_eq!(rename_name(b"a.txt", b"b.txt"), "a.txt => b.txt");
        assert_eq!(rename_name(b"a/x.rs", b"b/x.rs"), "{a => b}/x.rs");
    }
}
