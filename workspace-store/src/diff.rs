//! Diff of two versions: compares hashes top-down and descends only where they differ, so the
//! cost follows the size of the change, not the size of the tree.

use crate::error::{Error, Result};
use crate::hamt;
use crate::node::{Entry, Hamt, Hash, Kind, Node};
use crate::objects::{Objects, Pending};
use crate::{Store, VersionId};

/// How a path differs between two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    Added,
    Removed,
    Modified,
}

/// One changed path (relative to the workspace root, `/`-separated). Directories appear only
/// when added or removed (with all their contents listed too); a modified directory shows as
/// the changes inside it. A file is modified when its bytes or permission bits differ; times
/// alone are not a change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    /// Kind of the object (the old one for `Removed`, the new one otherwise).
    pub entry: Kind,
}

impl Store {
    /// Paths added, removed or modified from version `a` to version `b`, sorted by path.
    /// The system area (`/tmp`, `$HOME`, shell state) is left out: see [`Store::diff_all`].
    pub fn diff(&self, a: VersionId, b: VersionId) -> Result<Vec<Change>> {
        let mut out = self.diff_all(a, b)?;
        out.retain(|c| !crate::is_system_path(&c.path));
        Ok(out)
    }

    /// [`Store::diff`] including the system area (paths under [`crate::SYSTEM_DIR`]).
    pub fn diff_all(&self, a: VersionId, b: VersionId) -> Result<Vec<Change>> {
        let ra = self.version(a)?.root;
        let rb = self.version(b)?.root;
        let mut out = Vec::new();
        diff_dirs(self.objs(), &ra, &rb, "", &mut out)?;
        out.sort();
        Ok(out)
    }

    /// The changes between two trees given by their root nodes (one of them perhaps not
    /// a version yet: a transaction's tree on its way to a commit); `system` keeps the
    /// system area.
    pub(crate) fn diff_roots(&self, a: &Hash, b: &Hash, system: bool) -> Result<Vec<Change>> {
        let mut out = Vec::new();
        diff_dirs(self.objs(), a, b, "", &mut out)?;
        out.sort();
        if !system {
            out.retain(|c| !crate::is_system_path(&c.path));
        }
        Ok(out)
    }

    /// [`Store::diff`] of two workspaces' current heads.
    pub fn diff_workspaces(&self, a: &str, b: &str) -> Result<Vec<Change>> {
        let va = self.workspace(a)?.version;
        let vb = self.workspace(b)?.version;
        self.diff(va, vb)
    }
}

fn listing(objs: &Objects, h: &Hash) -> Result<Hamt> {
    match &*objs.node(h)? {
        Node::Dir { listing, .. } => Ok(listing.clone()),
        _ => Err(Error::Corrupt(format!("{} is not a directory", h.to_hex()))),
    }
}

fn trie_child(objs: &Objects, h: Option<&Hash>) -> Result<Hamt> {
    match h {
        None => Ok(Hamt::Bucket(Vec::new())),
        Some(h) => match &*objs.node(h)? {
            Node::Trie(t) => Ok(t.clone()),
            _ => Err(Error::Corrupt(format!("{} is not a trie page", h.to_hex()))),
        },
    }
}

fn diff_dirs(
    objs: &Objects,
    a: &Hash,
    b: &Hash,
    prefix: &str,
    out: &mut Vec<Change>,
) -> Result<()> {
    if a == b {
        return Ok(());
    }
    diff_listings(objs, &listing(objs, a)?, &listing(objs, b)?, prefix, out)
}

fn diff_listings(
    objs: &Objects,
    a: &Hamt,
    b: &Hamt,
    prefix: &str,
    out: &mut Vec<Change>,
) -> Result<()> {
    if let (Hamt::Trie { children: ca, .. }, Hamt::Trie { children: cb, .. }) = (a, b) {
        for slot in 0..32u8 {
            let ha = ca.iter().find(|(s, _)| *s == slot).map(|(_, h)| h);
            let hb = cb.iter().find(|(s, _)| *s == slot).map(|(_, h)| h);
            if ha == hb {
                continue;
            }
            diff_listings(
                objs,
                &trie_child(objs, ha)?,
                &trie_child(objs, hb)?,
                prefix,
                out,
            )?;
        }
        return Ok(());
    }
    let p = Pending::default();
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    hamt::entries(&p, objs, a, &mut ea)?;
    hamt::entries(&p, objs, b, &mut eb)?;
    ea.sort_by(|x, y| x.name.cmp(&y.name));
    eb.sort_by(|x, y| x.name.cmp(&y.name));
    let (mut i, mut j) = (0, 0);
    while i < ea.len() || j < eb.len() {
        let ord = match (ea.get(i), eb.get(j)) {
            (Some(x), Some(y)) => x.name.cmp(&y.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ord {
            std::cmp::Ordering::Less => {
                whole(objs, &ea[i], prefix, ChangeKind::Removed, out)?;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                whole(objs, &eb[j], prefix, ChangeKind::Added, out)?;
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (x, y) = (&ea[i], &eb[j]);
                if x.node != y.node {
                    if x.kind != y.kind {
                        whole(objs, x, prefix, ChangeKind::Removed, out)?;
                        whole(objs, y, prefix, ChangeKind::Added, out)?;
                    } else if x.kind == Kind::Dir {
                        diff_dirs(objs, &x.node, &y.node, &join(prefix, &x.name), out)?;
                    } else if !same_content(objs, &x.node, &y.node)? {
                        out.push(Change {
                            path: join(prefix, &x.name),
                            kind: ChangeKind::Modified,
                            entry: x.kind,
                        });
                    }
                }
                i += 1;
                j += 1;
            }
        }
    }
    Ok(())
}

/// Do two file or symlink nodes hold the same content and mode? Times alone do not make a
/// change (as in git): touching a file or re-writing the same bytes is not a modification.
fn same_content(objs: &Objects, a: &Hash, b: &Hash) -> Result<bool> {
    Ok(match (&*objs.node(a)?, &*objs.node(b)?) {
        (
            Node::File {
                meta: ma,
                size: sa,
                pages: pa,
            },
            Node::File {
                meta: mb,
                size: sb,
                pages: pb,
            },
        ) => ma.mode == mb.mode && sa == sb && pa == pb,
        (
            Node::Symlink {
                meta: ma,
                target: ta,
            },
            Node::Symlink {
                meta: mb,
                target: tb,
            },
        ) => ma.mode == mb.mode && ta == tb,
        _ => false,
    })
}

/// Reports `e` and, for a directory, everything under it.
fn whole(
    objs: &Objects,
    e: &Entry,
    prefix: &str,
    kind: ChangeKind,
    out: &mut Vec<Change>,
) -> Result<()> {
    let path = join(prefix, &e.name);
    out.push(Change {
        path: path.clone(),
        kind,
        entry: e.kind,
    });
    if e.kind == Kind::Dir {
        let mut children = Vec::new();
        hamt::entries(
            &Pending::default(),
            objs,
            &listing(objs, &e.node)?,
            &mut children,
        )?;
        for c in &children {
            whole(objs, c, &path, kind, out)?;
        }
    }
    Ok(())
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}
