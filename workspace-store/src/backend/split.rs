//! Tree nodes and recent small writes with the catalog, the bulk of file pages in object
//! storage: the layout of a store whose objects live in object storage (the shape JuiceFS
//! and Neon have: metadata and recent writes in a database, data in a bucket).
//!
//! - **Tree nodes** (inodes, directory trie levels, page-table levels) are small and read
//!   on the way to every byte: a path lookup walks several of them one after another. In
//!   object storage each is a GET (milliseconds, and a billed request); in the catalog's
//!   own object table each is an indexed row a fraction of a millisecond away. A commit
//!   writes its nodes in the catalog transaction that records the version.
//! - **Pages of a small commit** (fewer than [`SMALL_COMMIT_PAGES`], and no spill: an agent's
//!   write or edit call) go into that transaction too, so the call waits for no PUT.
//!   [`ObjectStore::offload`] (run by GC after its sweep) later moves them into packs in
//!   the bucket, uploading before it deletes, so a read finds each page in one place or the
//!   other throughout.
//! - **Pages of a large commit** (an import, a clone, a spill) go to object storage.
//!
//! [`Split`] routes every [`ObjectStore`] operation accordingly: node reads to the catalog,
//! page reads to the catalog first and then to object storage. The store records that it
//! uses this layout (setting `nodes` = `catalog`, see `Store::connect`), so a store made
//! before it (every object in object storage) keeps its layout.

use std::collections::HashSet;
use std::sync::Arc;

use super::{NewObject, ObjectKind, ObjectStore, PutTicket};
use crate::error::Result;
use crate::node::Hash;

/// A commit with fewer new pages than this (and no spill) writes them in its catalog
/// transaction; it is also the smallest put that object storage packs.
pub const SMALL_COMMIT_PAGES: usize = 16;

/// Pages moved per round of [`Split::offload`] (at most 16 MiB in memory).
const OFFLOAD_BATCH: usize = 256;

/// Nodes and small commits' pages in `catalog` (its object table), other pages in `bucket`.
pub struct Split {
    catalog: Arc<dyn ObjectStore>,
    bucket: Arc<dyn ObjectStore>,
}

impl Split {
    pub fn new(catalog: Arc<dyn ObjectStore>, bucket: Arc<dyn ObjectStore>) -> Split {
        Split { catalog, bucket }
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
        self.bucket.put_many(&pages)?;
        self.catalog.put_many(&nodes)
    }

    fn put_small(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.catalog.put_many(objects)
    }

    fn put_many_behind(&self, objects: &[NewObject<'_>]) -> Result<PutTicket> {
        let (nodes, pages) = by_kind(objects);
        let ticket = self.bucket.put_many_behind(&pages)?;
        // The catalog is a round trip away: nodes go now (a spill has none).
        self.catalog.put_many(&nodes)?;
        Ok(ticket)
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        match (self.catalog.get(hash, kind)?, kind) {
            (Some(d), _) => Ok(Some(d)),
            (None, ObjectKind::Node) => Ok(None),
            (None, ObjectKind::Page) => self.bucket.get(hash, kind),
        }
    }

    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let mut found = self.catalog.get_many(hashes, kind)?;
        if kind == ObjectKind::Page && found.len() < hashes.len() {
            let here: HashSet<Hash> = found.iter().map(|(h, _)| *h).collect();
            let rest: Vec<Hash> = hashes
                .iter()
                .filter(|h| !here.contains(h))
                .copied()
                .collect();
            found.extend(self.bucket.get_many(&rest, kind)?);
        }
        Ok(found)
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let mut present = self.catalog.exists_many(objects)?;
        let rest: Vec<(usize, (Hash, ObjectKind))> = objects
            .iter()
            .enumerate()
            .filter(|(i, (_, k))| *k == ObjectKind::Page && !present[*i])
            .map(|(i, o)| (i, *o))
            .collect();
        let asked: Vec<(Hash, ObjectKind)> = rest.iter().map(|(_, o)| *o).collect();
        for ((i, _), there) in rest.iter().zip(self.bucket.exists_many(&asked)?) {
            present[*i] = there;
        }
        Ok(present)
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let (n1, b1) = self
            .bucket
            .delete_unreferenced(written_before, referenced)?;
        let (n2, b2) = self
            .catalog
            .delete_unreferenced(written_before, referenced)?;
        Ok((n1 + n2, b1 + b2))
    }

    fn offload(&self, deadline: std::time::Instant) -> Result<u64> {
        let mut moved = 0;
        // A batch at a time, asking the catalog for its pages each time rather than listing
        // every object it holds (tree nodes are most of them).
        while std::time::Instant::now() <= deadline {
            let batch = self.catalog.list_kind(ObjectKind::Page, OFFLOAD_BATCH)?;
            let got = self.catalog.get_many(&batch, ObjectKind::Page)?;
            if got.is_empty() {
                break;
            }
            let objects: Vec<NewObject<'_>> = got
                .iter()
                .map(|(hash, data)| NewObject {
                    hash: *hash,
                    kind: ObjectKind::Page,
                    data,
                })
                .collect();
            // Durable in the bucket (and its index) before it leaves the catalog.
            self.bucket.put_many(&objects)?;
            let hashes: Vec<Hash> = got.iter().map(|(h, _)| *h).collect();
            self.catalog.remove(&hashes)?;
            moved += hashes.len() as u64;
        }
        Ok(moved)
    }

    fn prepare_offload(&self) -> Result<()> {
        self.catalog.index_kind(ObjectKind::Page)
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        // A page being offloaded is briefly in both and counted twice.
        let (n1, p1, d1) = self.bucket.totals()?;
        let (n2, p2, d2) = self.catalog.totals()?;
        Ok((n1 + n2, p1 + p2, d1 + d2))
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let mut all = self.catalog.list()?;
        let here: HashSet<Hash> = all.iter().map(|(h, _)| *h).collect();
        all.extend(
            self.bucket
                .list()?
                .into_iter()
                .filter(|(h, _)| !here.contains(h)),
        );
        Ok(all)
    }

    fn set_sweep_lease(&self, until: Option<std::time::Instant>) {
        self.bucket.set_sweep_lease(until);
        self.catalog.set_sweep_lease(until);
    }

    fn needs_sweep_fence(&self) -> bool {
        self.bucket.needs_sweep_fence() || self.catalog.needs_sweep_fence()
    }

    fn location(&self) -> Option<String> {
        self.bucket.location()
    }
}
