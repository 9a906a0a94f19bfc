//! Trees: a tree's files as path -> (mode, id), HEAD's files, and the trees `git write-tree`
//! builds from the index.

use std::collections::BTreeMap;

use super::commit::read_commit;
use super::object::{Kind, Oid};
use super::repo::{IndexEntry, Repo};
use super::write::write_object;

/// A tree's files as path -> (mode, id), recursively.
pub(crate) fn tree_files(repo: &Repo, tree: Oid) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>, String> {
    let mut out = BTreeMap::new();
    fn walk(
        repo: &Repo,
        t: &Oid,
        pre: &[u8],
        out: &mut BTreeMap<Vec<u8>, (u32, Oid)>,
    ) -> Result<(), String> {
        for e in super::object::parse_tree(&repo.read_kind(t, Kind::Tree)?)? {
            let mut p = pre.to_vec();
            p.extend_from_slice(&e.name);
            if e.is_tree() {
                p.push(b'/');
                walk(repo, &e.oid, &p, out)?;
            } else {
                out.insert(p, (e.mode, e.oid));
            }
        }
        Ok(())
    }
    walk(repo, &tree, b"", &mut out)?;
    Ok(out)
}

/// HEAD's tree as path -> (mode, id).
pub(crate) fn head_files(
    repo: &Repo,
    head: Option<Oid>,
) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>, String> {
    match head {
        Some(id) => tree_files(repo, read_commit(repo, &id)?.tree),
        None => Ok(BTreeMap::new()),
    }
}

/// Builds the trees of `index` (written as loose objects) and returns the root's id.
pub(crate) fn write_trees(
    repo: &Repo,
    entries: &[&IndexEntry],
    prefix_len: usize,
) -> Result<Oid, String> {
    build_trees(entries, prefix_len, &mut |_, data| {
        write_object(repo, Kind::Tree, data)
    })
}

/// What [`build_trees`] hands each tree to: its directory and data, returning its id.
pub(crate) type EmitTree<'a> = dyn FnMut(&[u8], &[u8]) -> Result<Oid, String> + 'a;

/// The tree objects of index `entries` (sorted, all under the same `prefix_len` bytes), as
/// `git write-tree` makes them: `emit` gets each tree's directory (`dir/` from the top, empty
/// for the top) and data, children before parents, and returns its id.
pub(crate) fn build_trees(
    entries: &[&IndexEntry],
    prefix_len: usize,
    emit: &mut EmitTree<'_>,
) -> Result<Oid, String> {
    // (sort key, mode, name, id); a directory sorts as `name/`.
    let mut items: Vec<(Vec<u8>, u32, Vec<u8>, Oid)> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = &entries[i].path[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                items.push((
                    rest.to_vec(),
                    entries[i].mode,
                    rest.to_vec(),
                    entries[i].oid,
                ));
                i += 1;
            }
            Some(slash) => {
                let dir = rest[..slash].to_vec();
                let mut j = i;
                while j < entries.len() {
                    let r = &entries[j].path[prefix_len..];
                    if r.len() > slash && r[..slash] == dir[..] && r[slash] == b'/' {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let id = build_trees(&entries[i..j], prefix_len + slash + 1, emit)?;
                let mut key = dir.clone();
                key.push(b'/');
                items.push((key, 0o40000, dir, id));
                i = j;
            }
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let mut data = Vec::new();
    for (_, mode, name, id) in items {
        data.extend_from_slice(format!("{mode:o} ").as_bytes());
        data.extend_from_slice(&name);
        data.push(0);
        data.extend_from_slice(&id);
    }
    let dir = entries.first().map_or(&[][..], |e| &e.path[..prefix_len]);
    emit(dir, &data)
}
