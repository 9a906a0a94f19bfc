//! Tree nodes with the catalog, file pages in object storage: the layout of a store whose
//! objects live in object storage (the shape JuiceFS and Neon have, metadata in a database
//! and data in a bucket).
//!
//! A tree node (inode, directory trie level, page-table level) is small and read on the
//! way to every byte: a path lookup walks several of them one after another. In object
//! storage each is a GET (milliseconds, and a request billed); in the catalog's own object
//! table it is an indexed row a fraction of a millisecond away, and a commit writes its
//! nodes in the catalog transaction that records the version, so a tool call that writes
//! one small file makes one PUT (its page) instead of four or five. File pages, which are
//! the bytes, go to object storage.
//!
//! [`Split`] routes every [`ObjectStore`] operation by [`ObjectKind`]; the store records
//! that it uses this layout (setting `nodes` = `catalog`, see `Store::connect`), so a store
//! made before it (nodes in object storage too) keeps its layout.

use std::sync::Arc;

use super::{NewObject, ObjectKind, ObjectStore, PutTicket};
use crate::error::Result;
use crate::node::Hash;

/// Nodes in `nodes` (the catalog's object table), pages in `pages` (object storage).
pub struct Split {
    nodes: Arc<dyn ObjectStore>,
    pages: Arc<dyn ObjectStore>,
}

impl Split {
    pub fn new(nodes: Arc<dyn ObjectStore>, pages: Arc<dyn ObjectStore>) -> Split {
        Split { nodes, pages }
    }

    fn of(&self, kind: ObjectKind) -> &dyn ObjectStore {
        match kind {
            ObjectKind::Node => &*self.nodes,
            ObjectKind::Page => &*self.pages,
        }
    }
}

/// `objects` cut into (nodes, pages).
fn by_kind<'a>(objects: &[NewObject<'a>]) -> (Vec<NewObject<'a>>, Vec<NewObject<'a>>) {
    objects.iter().partition(|o| o.kind == ObjectKind::Node)
}

impl ObjectStore for Split {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        let (nodes, pages) = by_kind(objects);
        // Pages first: a crash in between leaves unreferenced objects either way.
        self.pages.put_many(&pages)?;
        self.nodes.put_many(&nodes)
    }

    fn put_many_behind(&self, objects: &[NewObject<'_>]) -> Result<PutTicket> {
        let (nodes, pages) = by_kind(objects);
        let ticket = self.pages.put_many_behind(&pages)?;
        // The catalog is a round trip away: nodes go now (a spill has none).
        self.nodes.put_many(&nodes)?;
        Ok(ticket)
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        self.of(kind).get(hash, kind)
    }

    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        self.of(kind).get_many(hashes, kind)
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let (nodes, pages): (Vec<_>, Vec<_>) = objects
            .iter()
            .copied()
            .partition(|(_, k)| *k == ObjectKind::Node);
        let mut nodes = self.nodes.exists_many(&nodes)?.into_iter();
        let mut pages = self.pages.exists_many(&pages)?.into_iter();
        Ok(objects
            .iter()
            .map(|(_, k)| {
                match k {
                    ObjectKind::Node => nodes.next(),
                    ObjectKind::Page => pages.next(),
                }
                .unwrap_or(false)
            })
            .collect())
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let (n1, b1) = self.pages.delete_unreferenced(written_before, referenced)?;
        let (n2, b2) = self.nodes.delete_unreferenced(written_before, referenced)?;
        Ok((n1 + n2, b1 + b2))
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let (n1, p1, d1) = self.pages.totals()?;
        let (n2, p2, d2) = self.nodes.totals()?;
        Ok((n1 + n2, p1 + p2, d1 + d2))
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let mut all = self.pages.list()?;
        all.extend(self.nodes.list()?);
        Ok(all)
    }

    fn needs_sweep_fence(&self) -> bool {
        self.pages.needs_sweep_fence() || self.nodes.needs_sweep_fence()
    }

    fn location(&self) -> Option<String> {
        self.pages.location()
    }
}
