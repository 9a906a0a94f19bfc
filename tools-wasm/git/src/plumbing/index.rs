//! The index as the commands use it: its merged entries and conflict stages, saved back as
//! git writes it, a path staged from the work tree, and how a work tree file differs from
//! its entry (by stat data, then by content).

use std::collections::BTreeMap;
use std::path::Path;

use sh_utility::sys::TreeStat;

use super::object;
use super::object::{Kind, Oid};
use super::repo::{IndexEntry, Repo, load_all, mtime_of, write_index};
use super::tree::head_files;
use super::write::{write_file, write_object};

/// The index's merged (stage 0) entries.
pub(crate) fn load_index(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    Ok(load_all(repo)?
        .into_iter()
        .filter(|e| e.stage == 0)
        .collect())
}

/// The index's unmerged entries (stages 1-3), a merge's conflicts.
pub(crate) fn load_conflicts(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    Ok(load_all(repo)?
        .into_iter()
        .filter(|e| e.stage != 0)
        .collect())
}

/// How a work tree file differs from its index entry. `tree` stats paths below the work
/// tree and keeps the directory of the last entry open (see [`sh_utility::sys::TreeStat`]): make
/// one per command and pass it to every entry.
pub(crate) fn worktree_change(tree: &mut TreeStat, e: &IndexEntry) -> Option<char> {
    if e.mode == 0o160000 {
        return None;
    }
    let Some(meta) = tree.lstat(&e.path) else {
        return Some('D');
    };
    if meta.is_dir {
        return Some('D');
    }
    let is_link = meta.is_symlink;
    if is_link != (e.mode == 0o120000) {
        return Some('T');
    }
    let mtime = (meta.mtime.0 as u32, meta.mtime.1);
    if meta.len as u32 == e.size && mtime == e.mtime && e.mtime != (0, 0) {
        return None;
    }
    let path = tree.root().join(String::from_utf8_lossy(&e.path).as_ref());
    let data = if is_link {
        std::fs::read_link(&path)
            .ok()?
            .to_string_lossy()
            .into_owned()
            .into_bytes()
    } else {
        std::fs::read(&path).ok()?
    };
    (object::hash(Kind::Blob, &data) != e.oid).then_some('M')
}

/// The index as a map by path.
pub(crate) fn index_map(repo: &Repo) -> Result<BTreeMap<Vec<u8>, IndexEntry>, String> {
    Ok(load_index(repo)?
        .into_iter()
        .map(|e| (e.path.clone(), e))
        .collect())
}

/// Writes the index: `map`'s entries, and the unmerged entries of paths `map` does not
/// have (staging a path resolves its conflict).
pub(crate) fn save_index(repo: &Repo, map: &BTreeMap<Vec<u8>, IndexEntry>) -> Result<(), String> {
    let mut entries: Vec<IndexEntry> = map.values().cloned().collect();
    entries.extend(
        super::index::load_conflicts(repo)?
            .into_iter()
            .filter(|e| !map.contains_key(&e.path)),
    );
    entries.sort_by(|a, b| a.path.cmp(&b.path).then(a.stage.cmp(&b.stage)));
    write_file(&repo.git_dir.join("index"), &write_index(&entries))
}

/// Writes the index as `map` alone: every conflict dropped (reset, a forced checkout).
pub(crate) fn save_index_resolved(
    repo: &Repo,
    map: &BTreeMap<Vec<u8>, IndexEntry>,
) -> Result<(), String> {
    let entries: Vec<IndexEntry> = map.values().cloned().collect();
    write_file(&repo.git_dir.join("index"), &write_index(&entries))
}

/// An index entry for the file at `path` (its blob written), or None if it is not a file
/// or symlink.
pub(crate) fn stage(
    repo: &Repo,
    path: &Path,
    rel: Vec<u8>,
    old_mode: Option<u32>,
) -> Result<Option<IndexEntry>, String> {
    let Ok(meta) = path.symlink_metadata() else {
        return Ok(None);
    };
    let (data, mode) = if meta.file_type().is_symlink() {
        let t = std::fs::read_link(path)
            .map_err(|e| format!("error: readlink {}: {e}", path.display()))?;
        (t.to_string_lossy().into_owned().into_bytes(), 0o120000)
    } else if meta.is_file() {
        let d = std::fs::read(path).map_err(|e| {
            format!(
                "error: open(\"{}\"): {e}\nerror: unable to index file '{}'",
                String::from_utf8_lossy(&rel),
                String::from_utf8_lossy(&rel)
            )
        })?;
        // The sandbox keeps no permission bits: an executable stays one (core.filemode).
        (
            d,
            if old_mode == Some(0o100755) {
                0o100755
            } else {
                0o100644
            },
        )
    } else {
        return Ok(None);
    };
    let oid = write_object(repo, Kind::Blob, &data)?;
    let mtime = mtime_of(&meta);
    Ok(Some(IndexEntry {
        path: rel,
        mode,
        oid,
        size: meta.len() as u32,
        mtime,
        stage: 0,
    }))
}

/// Whether the index differs from HEAD's tree.
pub(crate) fn index_dirty(repo: &Repo, head: Option<Oid>) -> Result<bool, String> {
    let files = head_files(repo, head)?;
    let index = index_map(repo)?;
    Ok(files.len() != index.len()
        || index
            .iter()
            .any(|(p, e)| files.get(p) != Some(&(e.mode, e.oid))))
}

pub(crate) fn index_files(index: &Index) -> Files {
    index
        .iter()
        .map(|(p, e)| (p.clone(), (e.mode, e.oid)))
        .collect()
}

/// A tree's files: path -> (mode, id).
pub(crate) type Files = BTreeMap<Vec<u8>, (u32, Oid)>;

/// The index by path.
pub(crate) type Index = BTreeMap<Vec<u8>, IndexEntry>;
