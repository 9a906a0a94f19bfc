//! Integrity check: every head and label points at an existing version; every object reachable
//! from a version is present, hashes to its key and decodes; directory aggregates, trie counts
//! and page-table shapes are consistent; each version's recorded totals match its tree.

use std::collections::HashMap;

use crate::backend::{ObjectKind, ObjectStore};
use crate::error::Result;
use crate::node::{Agg, BUCKET_MAX, Hamt, Hash, Kind, Node, PageRef, TABLE_FANOUT};
use crate::pagetable::depth_for;
use crate::{PAGE_SIZE, Store};

/// What [`Store::fsck`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsckReport {
    pub workspaces: u64,
    pub versions: u64,
    pub objects: u64,
    /// One line per problem; empty when the store is clean.
    pub problems: Vec<String>,
}

impl FsckReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

struct Checker<'a> {
    store: &'a Store,
    /// Aggregates of verified inode nodes (None: checked and broken).
    done: HashMap<Hash, Option<Agg>>,
    verified: std::collections::HashSet<Hash>,
    problems: Vec<String>,
}

impl Checker<'_> {
    fn problem(&mut self, s: String) {
        if self.problems.len() < 1000 {
            self.problems.push(s);
        }
    }

    /// Fetches an object from the authoritative store (not a cache in front of it) and
    /// checks it hashes to its key.
    fn raw(&mut self, h: &Hash, kind: ObjectKind, what: &str) -> Option<Vec<u8>> {
        let store: &dyn ObjectStore = &*self.store.objs().store;
        match store.uncached().unwrap_or(store).get(h, kind) {
            Ok(Some(bytes)) => {
                if self.verified.insert(*h) && Hash::of(&bytes) != *h {
                    self.problem(format!(
                        "{what} {}: content does not match its hash",
                        h.to_hex()
                    ));
                    return None;
                }
                Some(bytes)
            }
            Ok(None) => {
                self.problem(format!("{what} {}: missing", h.to_hex()));
                None
            }
            Err(e) => {
                self.problem(format!("{what} {}: {e}", h.to_hex()));
                None
            }
        }
    }

    fn node(&mut self, h: &Hash, what: &str) -> Option<Node> {
        let bytes = self.raw(h, ObjectKind::Node, what)?;
        match Node::decode(&bytes) {
            Ok(n) => Some(n),
            Err(e) => {
                self.problem(format!("{what} {}: {e}", h.to_hex()));
                None
            }
        }
    }

    /// Checks the inode node `h` and its subtree; returns its aggregates.
    fn inode(&mut self, h: &Hash, path: &str) -> Option<Agg> {
        if let Some(a) = self.done.get(h) {
            return *a;
        }
        let agg = match self.node(h, path)? {
            Node::File { size, pages, .. } => {
                self.pages(pages, size, path);
                Some(Agg {
                    bytes: size,
                    entries: 1,
                })
            }
            Node::Symlink { .. } => Some(Agg {
                bytes: 0,
                entries: 1,
            }),
            Node::Dir { listing, .. } => self.listing(&listing, 0, path).map(|(a, _)| Agg {
                bytes: a.bytes,
                entries: a.entries + 1,
            }),
            _ => {
                self.problem(format!("{path}: entry names a page, not an inode"));
                None
            }
        };
        self.done.insert(*h, agg);
        agg
    }

    /// Checks a trie level; returns its aggregates and entry count.
    fn listing(&mut self, l: &Hamt, lvl: usize, path: &str) -> Option<(Agg, u64)> {
        match l {
            Hamt::Bucket(v) => {
                if v.len() > BUCKET_MAX && lvl < 51 {
                    self.problem(format!(
                        "{path}: bucket of {} entries is not canonical",
                        v.len()
                    ));
                }
                if v.windows(2).any(|w| w[0].name >= w[1].name) {
                    self.problem(format!("{path}: bucket not sorted"));
                }
                let mut total = Agg::default();
                for e in v {
                    let child = format!("{path}/{}", e.name);
                    let kind_ok = match self.store.objs().node(&e.node) {
                        Ok(n) => matches!(
                            (&*n, e.kind),
                            (Node::File { .. }, Kind::File)
                                | (Node::Dir { .. }, Kind::Dir)
                                | (Node::Symlink { .. }, Kind::Symlink)
                        ),
                        Err(_) => true, // reported by inode() below
                    };
                    if !kind_ok {
                        self.problem(format!("{child}: entry kind does not match its node"));
                    }
                    if let Some(a) = self.inode(&e.node, &child)
                        && a != e.agg
                    {
                        self.problem(format!(
                            "{child}: entry aggregates {:?} but subtree has {:?}",
                            e.agg, a
                        ));
                    }
                    total = total.add(e.agg);
                }
                Some((total, v.len() as u64))
            }
            Hamt::Trie {
                count,
                agg,
                children,
            } => {
                let mut total = Agg::default();
                let mut n = 0;
                for (_, c) in children {
                    match self.node(c, path) {
                        Some(Node::Trie(sub)) => {
                            let (a, k) = self.listing(&sub, lvl + 1, path)?;
                            total = total.add(a);
                            n += k;
                        }
                        Some(_) => self.problem(format!("{path}: trie child is not a trie page")),
                        None => {}
                    }
                }
                if n != *count || total != *agg {
                    self.problem(format!("{path}: trie totals disagree with its children"));
                }
                if (n as usize) <= BUCKET_MAX {
                    self.problem(format!("{path}: trie of {n} entries is not canonical"));
                }
                Some((*agg, *count))
            }
        }
    }

    fn pages(&mut self, pages: PageRef, size: u64, path: &str) {
        let npages = size.div_ceil(PAGE_SIZE as u64);
        if !pages.root.is_zero() && pages.depth != depth_for(npages) {
            self.problem(format!(
                "{path}: page table depth {} for {npages} pages",
                pages.depth
            ));
        }
        let mut stack = vec![(pages.root, pages.depth)];
        while let Some((h, d)) = stack.pop() {
            if h.is_zero() {
                continue;
            }
            if d == 0 {
                if !self.verified.contains(&h) {
                    self.raw(&h, ObjectKind::Page, path);
                }
                continue;
            }
            match self.node(&h, path) {
                Some(Node::Table(v)) => {
                    if v.len() > TABLE_FANOUT {
                        self.problem(format!("{path}: page table fan-out {}", v.len()));
                    }
                    stack.extend(v.into_iter().map(|c| (c, d - 1)));
                }
                Some(_) => self.problem(format!("{path}: page table entry is not a table")),
                None => {}
            }
        }
    }
}

impl Store {
    /// Checks the whole store; see the module docs for what is verified.
    pub fn fsck(&self) -> Result<FsckReport> {
        let cat = self.catalog();
        let (heads, labels, versions) = (cat.heads()?, cat.labels()?, cat.versions()?);
        let mut ck = Checker {
            store: self,
            done: HashMap::new(),
            verified: Default::default(),
            problems: Vec::new(),
        };
        let ids: std::collections::HashSet<_> = versions.iter().map(|v| v.id).collect();
        for h in &heads {
            if !ids.contains(&h.version) {
                ck.problem(format!(
                    "workspace {}: head points at missing version {}",
                    h.name, h.version
                ));
            }
        }
        for (name, v) in &labels {
            if !ids.contains(v) {
                ck.problem(format!("label {name}: points at missing version {v}"));
            }
        }
        for v in &versions {
            match ck.inode(&v.root, &format!("v{}:", v.id)) {
                Some(a) if a.bytes != v.bytes || a.entries != v.entries + 1 => ck.problem(format!(
                    "version {}: records {} bytes / {} entries, tree has {} / {}",
                    v.id,
                    v.bytes,
                    v.entries,
                    a.bytes,
                    a.entries - 1
                )),
                _ => {}
            }
        }
        let objects = ck.verified.len() as u64;
        Ok(FsckReport {
            workspaces: heads.len() as u64,
            versions: versions.len() as u64,
            objects,
            problems: ck.problems,
        })
    }
}
