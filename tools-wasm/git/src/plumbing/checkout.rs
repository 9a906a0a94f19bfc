//! The work tree's checkout (git's `read-tree -m` and `checkout-index`): writing and removing
//! files as a tree has them, the two-way merge that moves the work tree and the index from
//! one commit to another carrying local changes the two agree on, and the hard and `--merge`
//! resets. It prints nothing; a refusal is an `Err` with git's words.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sh_utility::sys::TreeStat;

use super::index::{Files, Index, index_map, save_index_resolved, worktree_change};
use super::object::{Kind, Oid};
use super::repo::{IndexEntry, Repo, mtime_of};
use super::tree::head_files;

/// The repository's work tree, or git's refusal for a bare one.
pub(crate) fn work_of(repo: &Repo) -> Result<PathBuf, String> {
    repo.work
        .clone()
        .ok_or_else(|| "fatal: this operation must be run in a work tree".to_string())
}

pub(crate) fn fs_path(work: &Path, p: &[u8]) -> PathBuf {
    work.join(String::from_utf8_lossy(p).as_ref())
}

/// Writes blob `oid` at `p` as a file of `mode` (a symlink for 120000), replacing what is
/// there, and returns its index entry with the stat data of the file written.
pub(crate) fn write_entry(
    repo: &Repo,
    work: &Path,
    p: &[u8],
    mode: u32,
    oid: Oid,
) -> Result<IndexEntry, String> {
    let path = fs_path(work, p);
    let name = String::from_utf8_lossy(p).into_owned();
    let fail = |e: std::io::Error| format!("error: unable to create file {name}: {e}");
    if mode == 0o160000 {
        std::fs::create_dir_all(&path).map_err(fail)?;
        return Ok(IndexEntry {
            path: p.to_vec(),
            mode,
            oid,
            size: 0,
            mtime: (0, 0),
            stage: 0,
        });
    }
    let data = repo.read_kind(&oid, Kind::Blob)?;
    if let Ok(meta) = path.symlink_metadata() {
        if meta.is_dir() {
            std::fs::remove_dir(&path).map_err(fail)?;
        } else {
            std::fs::remove_file(&path).map_err(fail)?;
        }
    }
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(fail)?;
    }
    let meta = if mode == 0o120000 {
        sh_utility::sys::symlink(&String::from_utf8_lossy(&data), &path).map_err(fail)?;
        path.symlink_metadata().map_err(fail)?
    } else {
        std::fs::write(&path, &data[..]).map_err(fail)?;
        path.metadata().map_err(fail)?
    };
    Ok(IndexEntry {
        path: p.to_vec(),
        mode,
        oid,
        size: meta.len() as u32,
        mtime: mtime_of(&meta),
        stage: 0,
    })
}

/// Removes the file at `p` and the directories it leaves empty (never the top).
pub(crate) fn remove_entry(work: &Path, p: &[u8]) {
    let path = fs_path(work, p);
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir(&path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&path);
        }
        Err(_) => {}
    }
    let mut d = path.parent();
    while let Some(dir) = d {
        if dir == work || std::fs::remove_dir(dir).is_err() {
            break;
        }
        d = dir.parent();
    }
}

/// An index entry for a tree entry: the old entry's stat data when it holds the same
/// content, none otherwise (status then compares contents).
pub(crate) fn entry_from_tree(
    p: &[u8],
    mode: u32,
    oid: Oid,
    old: Option<&IndexEntry>,
) -> IndexEntry {
    match old {
        Some(e) if e.mode == mode && e.oid == oid => e.clone(),
        _ => IndexEntry {
            path: p.to_vec(),
            mode,
            oid,
            size: 0,
            mtime: (0, 0),
            stage: 0,
        },
    }
}

/// Whether the work tree's file differs from its index entry in content or type (a
/// missing file does not count: there is nothing to lose).
pub(crate) fn modified(tree: &mut TreeStat, e: &IndexEntry) -> bool {
    matches!(worktree_change(tree, e), Some('M') | Some('T'))
}

pub(crate) fn as_pair(e: Option<&IndexEntry>) -> Option<(u32, Oid)> {
    e.map(|e| (e.mode, e.oid))
}

/// Moves the index and the work tree from `from` (HEAD's files) to `to`. Without `force`,
/// a path the two agree on keeps its local changes, and a path that differs must be clean
/// (index and file as in `from`, or already as in `to`), else nothing is changed and git's
/// message naming the paths is the error. With `force` (`reset --hard`, `checkout -f`)
/// every tracked path becomes what `to` has.
pub(crate) fn two_way(
    repo: &Repo,
    work: &Path,
    from: &Files,
    to: &Files,
    index: &mut Index,
    force: bool,
    verb: &str,
) -> Result<(), String> {
    let mut paths: BTreeSet<Vec<u8>> = from.keys().cloned().collect();
    paths.extend(to.keys().cloned());
    paths.extend(index.keys().cloned());
    let mut writes: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut removes: Vec<Vec<u8>> = Vec::new();
    let mut local: Vec<&[u8]> = Vec::new();
    let mut untracked: Vec<&[u8]> = Vec::new();
    let mut tree = TreeStat::new(work);
    for p in &paths {
        let (h, t, i) = (from.get(p), to.get(p), index.get(p));
        if force {
            match t {
                Some(&(m, o))
                    if as_pair(i) != Some((m, o))
                        || i.is_some_and(|e| worktree_change(&mut tree, e).is_some()) =>
                {
                    writes.push((p.clone(), m, o));
                }
                Some(_) => {}
                None if i.is_some() || h.is_some() => removes.push(p.clone()),
                None => {}
            }
            continue;
        }
        if h == t || as_pair(i) == t.copied() {
            continue;
        }
        let clean = as_pair(i) == h.copied()
            && match i {
                Some(e) => !modified(&mut tree, e),
                None => fs_path(work, p).symlink_metadata().is_err(),
            };
        if !clean {
            if i.is_none() && h.is_none() {
                let ign = super::untracked::Ignores::new(repo, work);
                if !ign.ignored(&fs_path(work, p), false) {
                    untracked.push(p);
                    continue;
                }
            } else {
                local.push(p);
                continue;
            }
        }
        match t {
            Some(&(m, o)) => writes.push((p.clone(), m, o)),
            None => removes.push(p.clone()),
        }
    }
    if !local.is_empty() || !untracked.is_empty() {
        let list = |v: &[&[u8]]| -> String {
            v.iter()
                .map(|p| format!("\t{}\n", String::from_utf8_lossy(p)))
                .collect()
        };
        let mut msg = String::new();
        if !local.is_empty() {
            let advice = if verb == "checkout" {
                "Please commit your changes or stash them before you switch branches."
            } else {
                "Please commit your changes or stash them before you merge."
            };
            msg.push_str(&format!(
                "error: Your local changes to the following files would be overwritten by {verb}:\n{}{advice}\n",
                list(&local)
            ));
        }
        if !untracked.is_empty() {
            let advice = if verb == "checkout" {
                "Please move or remove them before you switch branches."
            } else {
                "Please move or remove them before you merge."
            };
            msg.push_str(&format!(
                "error: The following untracked working tree files would be overwritten by {verb}:\n{}{advice}\n",
                list(&untracked)
            ));
        }
        msg.push_str("Aborting");
        return Err(msg);
    }
    for p in removes {
        remove_entry(work, &p);
        index.remove(&p);
    }
    for (p, m, o) in writes {
        let e = write_entry(repo, work, &p, m, o)?;
        index.insert(p, e);
    }
    Ok(())
}

/// Moves the index and the work tree from commit `from`'s files (None: none) to `to`'s, as a
/// fast-forward or a checkout moves them: [`two_way`], refusing local changes it would lose
/// (`op` names the command in git's message), then the index saved.
pub(crate) fn move_tree(
    repo: &Repo,
    work: &Path,
    from: Option<Oid>,
    to: Oid,
    op: &str,
) -> Result<(), String> {
    let mut index = index_map(repo)?;
    two_way(
        repo,
        work,
        &head_files(repo, from)?,
        &head_files(repo, Some(to))?,
        &mut index,
        false,
        op,
    )?;
    super::index::save_index(repo, &index)
}

/// What differs between the new HEAD's files and the work tree after a switch, as
/// checkout lists it (`M\tpath`).
pub(crate) fn local_changes(work: &Path, to: &Files, index: &Index) -> String {
    let mut paths: BTreeSet<&Vec<u8>> = to.keys().collect();
    paths.extend(index.keys());
    let mut out = String::new();
    let mut tree = TreeStat::new(work);
    for p in paths {
        let c = match (to.get(p), index.get(p)) {
            (Some(_), None) => Some('D'),
            (None, Some(_)) => Some('A'),
            (Some(t), Some(e)) if (e.mode, e.oid) != *t => Some('M'),
            (Some(_), Some(e)) => worktree_change(&mut tree, e),
            (None, None) => None,
        };
        if let Some(c) = c {
            out.push_str(&format!("{c}\t{}\n", String::from_utf8_lossy(p)));
        }
    }
    out
}

/// The index and work tree made `to`'s, from HEAD at `head`: local changes and conflicts
/// dropped (a conflicted file that `to` does not have is removed).
pub(crate) fn hard_reset(
    repo: &Repo,
    work: &Path,
    head: Option<Oid>,
    to: &Files,
    index: &mut Index,
) -> Result<(), String> {
    for e in super::index::load_conflicts(repo)? {
        if !to.contains_key(&e.path) && !index.contains_key(&e.path) {
            remove_entry(work, &e.path);
        }
    }
    let from = head_files(repo, head)?;
    two_way(repo, work, &from, to, index, true, "reset")?;
    save_index_resolved(repo, index)
}

/// `reset --merge` to `to`, as git's one-way merge runs it: a path whose index entry
/// already is `to`'s keeps its entry and its file, local changes and all; any other path
/// (conflicts included) becomes `to`'s, which git refuses, changing nothing, when its file
/// has unstaged changes or an untracked file stands where `to` puts one. Only the first
/// such path is named, with `rev` (what the reset was asked for) in the fatal line.
pub(crate) fn merge_reset(repo: &Repo, work: &Path, to: &Files, rev: &str) -> Result<(), String> {
    let index = index_map(repo)?;
    let conflicted: BTreeSet<Vec<u8>> = super::index::load_conflicts(repo)?
        .into_iter()
        .map(|e| e.path)
        .collect();
    let mut paths: BTreeSet<&Vec<u8>> = to.keys().collect();
    paths.extend(index.keys());
    paths.extend(conflicted.iter());
    let refuse =
        |why: String| format!("{why}\nfatal: Could not reset index file to revision '{rev}'.");
    let mut tree = TreeStat::new(work);
    let mut ign: Option<super::untracked::Ignores> = None;
    let mut writes: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut removes: Vec<Vec<u8>> = Vec::new();
    let mut next = Index::new();
    for p in paths {
        let t = to.get(p).copied();
        let name = String::from_utf8_lossy(p);
        match index.get(p) {
            Some(e) if t == Some((e.mode, e.oid)) => {
                next.insert(p.clone(), e.clone());
                continue;
            }
            Some(e) => {
                if modified(&mut tree, e) {
                    return Err(refuse(format!(
                        "error: Entry '{name}' not uptodate. Cannot merge."
                    )));
                }
            }
            None if conflicted.contains(p) => {}
            None => {
                let path = fs_path(work, p);
                let there = path.symlink_metadata().is_ok_and(|m| !m.is_dir());
                if there
                    && !ign
                        .get_or_insert_with(|| super::untracked::Ignores::new(repo, work))
                        .ignored(&path, false)
                {
                    return Err(refuse(format!(
                        "error: Untracked working tree file '{name}' would be overwritten by merge."
                    )));
                }
            }
        }
        match t {
            Some((m, o)) => writes.push((p.clone(), m, o)),
            None => removes.push(p.clone()),
        }
    }
    for p in removes {
        remove_entry(work, &p);
    }
    for (p, m, o) in writes {
        let e = write_entry(repo, work, &p, m, o)?;
        next.insert(p, e);
    }
    save_index_resolved(repo, &next)
}
