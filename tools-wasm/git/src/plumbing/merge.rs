//! The three-way merge (git's `merge-file` and `merge-tree`): a line-level merge of files both
//! sides changed, with git's conflict markers narrowed as xdiff's zealous level narrows them,
//! and the merge of whole trees into the index stages and the work tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::diff::lines;
use super::index::{Files, Index};
use super::object::{Kind, Oid};
use super::repo::{IndexEntry, Repo};
use super::write::{write_file, write_object};

/// The changed regions from `base` to `side`: (base start, base end, side start, side end).
pub(crate) fn hunks(base: &[&[u8]], side: &[&[u8]]) -> Vec<(usize, usize, usize, usize)> {
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, base, side);
    let mut out: Vec<(usize, usize, usize, usize)> = Vec::new();
    for op in ops {
        if let similar::DiffOp::Equal { .. } = op {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some(h) if h.1 == o.start && h.3 == n.start => {
                h.1 = o.end;
                h.3 = n.end;
            }
            _ => out.push((o.start, o.end, n.start, n.end)),
        }
    }
    out
}

/// A three-way merge of file contents: the result and how many conflicts it holds (marked
/// `<<<<<<< OURS` / `=======` / `>>>>>>> THEIRS`, as git marks them).
pub(crate) fn merge_files(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    ours_name: &str,
    theirs_name: &str,
) -> (Vec<u8>, usize) {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (ho, ht) = (hunks(&b, &o), hunks(&b, &t));
    let mut out: Vec<u8> = Vec::new();
    let mut conflicts = 0;
    let (mut i, mut j, mut pos) = (0, 0, 0);
    while i < ho.len() || j < ht.len() {
        // A group: hunks of either side whose base ranges overlap or touch.
        let start_o = ho.get(i).map(|h| h.0);
        let start_t = ht.get(j).map(|h| h.0);
        let gs = match (start_o, start_t) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        let (i0, j0) = (i, j);
        let mut ge = gs;
        loop {
            let mut grew = false;
            if let Some(h) = ho.get(i)
                && h.0 <= ge
                && (h.0 >= gs)
            {
                ge = ge.max(h.1);
                i += 1;
                grew = true;
            }
            if let Some(h) = ht.get(j)
                && h.0 <= ge
                && (h.0 >= gs)
            {
                ge = ge.max(h.1);
                j += 1;
                grew = true;
            }
            if !grew {
                break;
            }
        }
        for l in &b[pos..gs] {
            out.extend_from_slice(l);
        }
        // Each side's text for base[gs..ge].
        let side = |hs: &[(usize, usize, usize, usize)], lines: &[&[u8]]| -> Vec<u8> {
            let mut v = Vec::new();
            let mut p = gs;
            for h in hs {
                for l in &b[p..h.0] {
                    v.extend_from_slice(l);
                }
                for l in &lines[h.2..h.3] {
                    v.extend_from_slice(l);
                }
                p = h.1;
            }
            for l in &b[p..ge] {
                v.extend_from_slice(l);
            }
            v
        };
        let (os, ts) = (&ho[i0..i], &ht[j0..j]);
        if ts.is_empty() {
            out.extend(side(os, &o));
        } else if os.is_empty() {
            out.extend(side(ts, &t));
        } else {
            let (a, c) = (side(os, &o), side(ts, &t));
            if a == c {
                out.extend(a);
            } else {
                conflicts += refine(&a, &c, ours_name, theirs_name, &mut out);
            }
        }
        pos = ge;
    }
    for l in &b[pos.min(b.len())..] {
        out.extend_from_slice(l);
    }
    (out, conflicts)
}

/// Writes a conflict between `a` and `c`, with the lines both sides share left outside the
/// markers; returns the number of conflicts written.
pub(crate) fn refine(
    a: &[u8],
    c: &[u8],
    ours_name: &str,
    theirs_name: &str,
    out: &mut Vec<u8>,
) -> usize {
    let (la, lc) = (lines(a), lines(c));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &la, &lc);
    let mut n = 0;
    let mut pending: Option<(Vec<u8>, Vec<u8>)> = None;
    let flush = |p: &mut Option<(Vec<u8>, Vec<u8>)>, out: &mut Vec<u8>, n: &mut usize| {
        if let Some((x, y)) = p.take() {
            let nl = |v: &mut Vec<u8>| {
                if !v.is_empty() && v.last() != Some(&b'\n') {
                    v.push(b'\n');
                }
            };
            let (mut x, mut y) = (x, y);
            nl(&mut x);
            nl(&mut y);
            out.extend_from_slice(format!("<<<<<<< {ours_name}\n").as_bytes());
            out.extend(x);
            out.extend_from_slice(b"=======\n");
            out.extend(y);
            out.extend_from_slice(format!(">>>>>>> {theirs_name}\n").as_bytes());
            *n += 1;
        }
    };
    for op in ops {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                flush(&mut pending, out, &mut n);
                for l in &la[old_index..old_index + len] {
                    out.extend_from_slice(l);
                }
            }
            _ => {
                let p = pending.get_or_insert_with(Default::default);
                for l in &la[op.old_range()] {
                    p.0.extend_from_slice(l);
                }
                for l in &lc[op.new_range()] {
                    p.1.extend_from_slice(l);
                }
            }
        }
    }
    flush(&mut pending, out, &mut n);
    n
}

/// What a three-way merge of trees gives.
pub(crate) struct Merged {
    /// The merged files, conflicted paths with ours (or theirs when ours has none).
    pub files: Files,
    /// Paths whose work tree file is the content merge's result (markers and all).
    pub contents: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Unmerged paths: their (base, ours, theirs).
    pub conflicts: BTreeMap<Vec<u8>, [Option<(u32, Oid)>; 3]>,
    /// What git prints as it goes (`Auto-merging`, `CONFLICT (...)`).
    pub messages: String,
}

impl Merged {
    /// Leaves the conflicts for the user: each conflicted file's merged text (markers and
    /// all) in the work tree, and the index as `index` with every unmerged path as its
    /// stages 1-3 (base, ours, theirs).
    pub(crate) fn write_conflicts(
        &self,
        repo: &Repo,
        work: &Path,
        index: &Index,
    ) -> Result<(), String> {
        for (p, data) in &self.contents {
            let path = work.join(String::from_utf8_lossy(p).as_ref());
            std::fs::write(&path, data)
                .map_err(|e| format!("error: unable to write {}: {e}", path.display()))?;
        }
        let mut entries: Vec<IndexEntry> = index
            .iter()
            .filter(|(p, _)| !self.conflicts.contains_key(*p))
            .map(|(_, e)| e.clone())
            .collect();
        for (p, sides) in &self.conflicts {
            for (k, s) in sides.iter().enumerate() {
                if let Some((mode, oid)) = s {
                    entries.push(IndexEntry {
                        path: p.clone(),
                        mode: *mode,
                        oid: *oid,
                        size: 0,
                        mtime: (0, 0),
                        stage: k as u8 + 1,
                    });
                }
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path).then(a.stage.cmp(&b.stage)));
        write_file(
            &repo.git_dir.join("index"),
            &super::repo::write_index(&entries),
        )
    }

    /// git's refusal of a merge (up to its "Aborting") when a file it rewrites from `ours`
    /// (HEAD's files, or the index's) has local changes, before anything is written.
    pub(crate) fn local_changes(&self, work: &Path, ours: &Files, index: &Index) -> Option<String> {
        let mut tree = sh_utility::sys::TreeStat::new(work);
        let dirty: BTreeSet<&Vec<u8>> = self
            .files
            .keys()
            .chain(ours.keys())
            .filter(|p| self.files.get(*p) != ours.get(*p) || self.contents.contains_key(*p))
            .filter(|p| {
                index
                    .get(*p)
                    .is_some_and(|e| super::index::worktree_change(&mut tree, e).is_some())
            })
            .collect();
        if !dirty.is_empty() {
            let list: String = dirty
                .iter()
                .map(|p| format!("\t{}\n", String::from_utf8_lossy(p)))
                .collect();
            return Some(format!(
                "error: Your local changes to the following files would be overwritten by merge:\n{list}Please commit your changes or stash them before you merge.\nAborting"
            ));
        }
        None
    }
}

pub(crate) fn merge_trees(
    repo: &Repo,
    base: &Files,
    ours: &Files,
    theirs: &Files,
    ours_name: &str,
    theirs_name: &str,
) -> Result<Merged, String> {
    let mut paths: BTreeSet<&Vec<u8>> = base.keys().collect();
    paths.extend(ours.keys());
    paths.extend(theirs.keys());
    let mut m = Merged {
        files: Files::new(),
        contents: BTreeMap::new(),
        conflicts: BTreeMap::new(),
        messages: String::new(),
    };
    for p in paths {
        let (b, o, t) = (base.get(p), ours.get(p), theirs.get(p));
        let name = String::from_utf8_lossy(p).into_owned();
        let take = |m: &mut Merged, v: Option<&(u32, Oid)>| {
            if let Some(v) = v {
                m.files.insert(p.clone(), *v);
            }
        };
        if o == t || b == t {
            take(&mut m, o);
            continue;
        }
        if b == o {
            take(&mut m, t);
            continue;
        }
        match (o, t) {
            (Some(&(om, oo)), Some(&(tm, to))) if om != 0o160000 && tm != 0o160000 => {
                m.messages.push_str(&format!("Auto-merging {name}\n"));
                let read = |id: &Oid| repo.read_kind(id, Kind::Blob);
                let base_data = match b {
                    Some((_, bid)) => read(bid)?.to_vec(),
                    None => Vec::new(),
                };
                let (od, td) = (read(&oo)?, read(&to)?);
                let mode = if om == b.map_or(om, |x| x.0) { tm } else { om };
                let binary = |d: &[u8]| d.iter().take(8000).any(|&c| c == 0);
                if binary(&od) || binary(&td) || binary(&base_data) {
                    m.messages.push_str(&format!(
                        "warning: Cannot merge binary files: {name} (HEAD vs. {theirs_name})\nCONFLICT (content): Merge conflict in {name}\n"
                    ));
                    m.files.insert(p.clone(), (om, oo));
                    m.conflicts
                        .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
                    continue;
                }
                let (data, n) = merge_files(&base_data, &od, &td, ours_name, theirs_name);
                if n == 0 {
                    let id = write_object(repo, Kind::Blob, &data)?;
                    m.files.insert(p.clone(), (mode, id));
                } else {
                    let kind = if b.is_none() { "add/add" } else { "content" };
                    m.messages
                        .push_str(&format!("CONFLICT ({kind}): Merge conflict in {name}\n"));
                    m.files.insert(p.clone(), (om, oo));
                    m.contents.insert(p.clone(), data);
                    m.conflicts
                        .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
                }
            }
            (Some(v), None) | (None, Some(v)) => {
                // Deleted on one side, changed on the other: the changed version stays.
                let (deleted_in, modified_in) = if o.is_none() {
                    ("HEAD", theirs_name)
                } else {
                    (theirs_name, "HEAD")
                };
                m.messages.push_str(&format!(
                    "CONFLICT (modify/delete): {name} deleted in {deleted_in} and modified in {modified_in}.  Version {modified_in} of {name} left in tree.\n"
                ));
                m.files.insert(p.clone(), *v);
                m.conflicts
                    .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
            }
            _ => {
                m.messages
                    .push_str(&format!("CONFLICT (submodule): Merge conflict in {name}\n"));
                take(&mut m, o);
                m.conflicts
                    .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
            }
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_merges_take_both_sides() {
        let base = b"a\nb\nc\nd\ne\n";
        let ours = b"A\nb\nc\nd\ne\n";
        let theirs = b"a\nb\nc\nd\nE\n";
        assert_eq!(
            merge_files(base, ours, theirs, "HEAD", "dev"),
            (b"A\nb\nc\nd\nE\n".to_vec(), 0)
        );
    }

    #[test]
    fn conflicts_are_marked_and_refined() {
        let base = b"1\n2\n3\n";
        let ours = b"1\ntwo\n3\n";
        let theirs = b"1\nTWO\n3\n";
        let (out, n) = merge_files(base, ours, theirs, "HEAD", "dev");
        assert_eq!(n, 1);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "1\n<<<<<<< HEAD\ntwo\n=======\nTWO\n>>>>>>> dev\n3\n"
        );
        // The same change on both sides is no conflict.
        assert_eq!(
            merge_files(base, ours, ours, "HEAD", "dev"),
            (ours.to_vec(), 0)
        );
    }
}
