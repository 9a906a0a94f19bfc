//! Reading and writing immutable objects: a decoded-node cache shared by every transaction
//! and workspace (objects never change, so it never needs invalidation), and [`Pending`], the
//! objects a commit is about to write, readable before they reach the database.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::backend::{NewObject, ObjectKind, ObjectStore};
use crate::error::{Error, Result};
use crate::node::{Hash, Node};

/// Object access with caches in front of the object store.
pub(crate) struct Objects {
    pub(crate) store: Arc<dyn ObjectStore>,
    nodes: Mutex<LruCache<Hash, Arc<Node>>>,
    pages: Mutex<PageCache>,
}

/// File pages read more than once, kept in memory: a cache that one long sequential read
/// cannot fill (a segmented LRU, as in 2Q). A page read for the first time goes into a
/// small probation segment; only a page asked for again while there moves to the protected
/// part, which holds the rest of the capacity. `cat` of a 1 GiB file used to leave 512
/// pages, 32 MiB, of it in memory that nothing would read again; it now passes through
/// the probation segment (1/8 of the capacity), and what was protected stays.
struct PageCache {
    probation: LruCache<Hash, Arc<Vec<u8>>>,
    protected: LruCache<Hash, Arc<Vec<u8>>>,
}

impl PageCache {
    fn new(capacity: usize) -> PageCache {
        let probation = (capacity / 8).max(2);
        let protected = capacity.saturating_sub(probation).max(2);
        let size = |n: usize| NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN);
        PageCache {
            probation: LruCache::new(size(probation)),
            protected: LruCache::new(size(protected)),
        }
    }

    fn get(&mut self, hash: &Hash) -> Option<Arc<Vec<u8>>> {
        if let Some(p) = self.protected.get(hash) {
            return Some(p.clone());
        }
        let page = self.probation.pop(hash)?;
        // The second use: protected from now on. What that pushes out of the protected
        // part gets one more chance in probation.
        if let Some((h, old)) = self.protected.push(*hash, page.clone())
            && h != *hash
        {
            self.probation.put(h, old);
        }
        Some(page)
    }

    fn insert(&mut self, hash: Hash, page: Arc<Vec<u8>>) {
        if !self.protected.contains(&hash) {
            self.probation.put(hash, page);
        }
    }
}

impl Objects {
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        node_cache: usize,
        page_cache: usize,
    ) -> Objects {
        let n = NonZeroUsize::new(node_cache.max(16)).unwrap_or(NonZeroUsize::MIN);
        Objects {
            store,
            nodes: Mutex::new(LruCache::new(n)),
            pages: Mutex::new(PageCache::new(page_cache.max(4))),
        }
    }

    fn raw(&self, hash: &Hash, kind: ObjectKind) -> Result<Vec<u8>> {
        self.store
            .get(hash, kind)?
            .ok_or_else(|| Error::Corrupt(format!("missing object {}", hash.to_hex())))
    }

    /// A decoded node, from the cache or the database.
    pub(crate) fn node(&self, hash: &Hash) -> Result<Arc<Node>> {
        if let Some(n) = self
            .nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash)
        {
            return Ok(n.clone());
        }
        let node = Arc::new(Node::decode(&self.raw(hash, ObjectKind::Node)?)?);
        self.cache_node(*hash, node.clone());
        Ok(node)
    }

    /// Reads and caches, in batches, the nodes of `hashes` that are not cached yet. Only a
    /// cache fill: a node that is missing or does not decode is left for [`Objects::node`]
    /// to report when it is actually needed.
    pub(crate) fn prefetch(&self, hashes: &[Hash]) -> Result<()> {
        let missing: Vec<Hash> = {
            let cache = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
            hashes
                .iter()
                .filter(|h| !cache.contains(h))
                .copied()
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        for (h, data) in self.store.get_many(&missing, ObjectKind::Node)? {
            if let Ok(node) = Node::decode(&data) {
                self.cache_node(h, Arc::new(node));
            }
        }
        Ok(())
    }

    pub(crate) fn cache_node(&self, hash: Hash, node: Arc<Node>) {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(hash, node);
    }

    /// The bytes of a file page.
    pub(crate) fn page(&self, hash: &Hash) -> Result<Arc<Vec<u8>>> {
        if let Some(p) = self
            .pages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash)
        {
            return Ok(p.clone());
        }
        let page = Arc::new(self.raw(hash, ObjectKind::Page)?);
        self.pages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(*hash, page.clone());
        Ok(page)
    }
}

/// Pages at least this many bytes in all are hashed on two threads ([`Pending::put_pages`]).
const PARALLEL_HASH_BYTES: usize = 1 << 20;

/// Objects produced by a transaction, waiting for its commit.
#[derive(Default)]
pub(crate) struct Pending {
    objs: HashMap<Hash, (ObjectKind, Vec<u8>)>,
    nodes: HashMap<Hash, Arc<Node>>,
}

impl Pending {
    /// Encodes and queues a node; returns its hash.
    pub(crate) fn put_node(&mut self, node: Node) -> Hash {
        let bytes = node.encode();
        let h = Hash::of(&bytes);
        self.objs.entry(h).or_insert((ObjectKind::Node, bytes));
        self.nodes.entry(h).or_insert_with(|| Arc::new(node));
        h
    }

    /// Queues a page; returns its hash, or [`Hash::ZERO`] for an all-zero page (a hole).
    pub(crate) fn put_page(&mut self, data: Vec<u8>) -> Hash {
        if data.iter().all(|&b| b == 0) {
            return Hash::ZERO;
        }
        let h = Hash::of(&data);
        self.objs.entry(h).or_insert((ObjectKind::Page, data));
        h
    }

    /// [`Pending::put_page`] for many pages at once (a transaction's spill), hashed on two
    /// threads when there are at least [`PARALLEL_HASH_BYTES`]: on one thread BLAKE3 was
    /// about 9% of an import's time. Returns the hashes in the order of `pages`.
    pub(crate) fn put_pages(&mut self, pages: Vec<Vec<u8>>) -> Vec<Hash> {
        fn name(d: &[u8]) -> Hash {
            if d.iter().all(|&b| b == 0) {
                Hash::ZERO
            } else {
                Hash::of(d)
            }
        }
        let total: usize = pages.iter().map(Vec::len).sum();
        let mut hashes = Vec::with_capacity(pages.len());
        if total < PARALLEL_HASH_BYTES {
            hashes.extend(pages.iter().map(|p| name(p)));
        } else {
            // Halves by bytes: the other thread takes the pages after the middle byte.
            let mut seen = 0;
            let mid = pages
                .iter()
                .position(|p| {
                    seen += p.len();
                    seen >= total / 2
                })
                .map_or(pages.len(), |i| i + 1);
            let (mine, theirs) = pages.split_at(mid);
            std::thread::scope(|s| {
                let other = std::thread::Builder::new()
                    .name("burrow-hash".into())
                    .spawn_scoped(s, || theirs.iter().map(|p| name(p)).collect::<Vec<_>>());
                hashes.extend(mine.iter().map(|p| name(p)));
                match other.map(|t| t.join()) {
                    Ok(Ok(rest)) => hashes.extend(rest),
                    // No thread to be had: hashed here.
                    _ => hashes.extend(theirs.iter().map(|p| name(p))),
                }
            });
        }
        for (h, d) in hashes.iter().zip(pages) {
            if *h != Hash::ZERO {
                self.objs.entry(*h).or_insert((ObjectKind::Page, d));
            }
        }
        hashes
    }

    pub(crate) fn node(&self, objs: &Objects, hash: &Hash) -> Result<Arc<Node>> {
        match self.nodes.get(hash) {
            Some(n) => Ok(n.clone()),
            None => objs.node(hash),
        }
    }

    /// The queued objects, for the object store (or a catalog that holds them).
    pub(crate) fn list(&self) -> Vec<NewObject<'_>> {
        self.objs
            .iter()
            .map(|(h, (kind, d))| NewObject {
                hash: *h,
                kind: *kind,
                data: d.as_slice(),
            })
            .collect()
    }

    /// After the objects are durable: cache the decoded nodes and forget the queue.
    pub(crate) fn publish(&mut self, objs: &Objects) {
        for (h, n) in self.nodes.drain() {
            objs.cache_node(h, n);
        }
        self.objs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(i: u32) -> (Hash, Arc<Vec<u8>>) {
        let data = i.to_le_bytes().to_vec();
        (Hash::of(&data), Arc::new(data))
    }

    #[test]
    fn a_long_scan_passes_through_probation_and_keeps_what_was_read_twice() {
        let mut cache = PageCache::new(64);
        // Pages 0..8 read twice: protected.
        for i in 0..8 {
            let (h, p) = page(i);
            assert!(cache.get(&h).is_none());
            cache.insert(h, p);
            assert!(cache.get(&h).is_some());
        }
        // A scan of 10,000 pages read once each.
        for i in 1000..11_000 {
            let (h, p) = page(i);
            assert!(cache.get(&h).is_none());
            cache.insert(h, p);
        }
        // The scan holds at most the probation segment; the protected pages are all there.
        assert!(cache.probation.len() <= 8);
        assert_eq!(cache.protected.len(), 8);
        for i in 0..8 {
            assert!(
                cache.get(&page(i).0).is_some(),
                "page {i} was evicted by the scan"
            );
        }
        // A page of the scan's tail, read again, is promoted.
        let (h, _) = page(10_999);
        assert!(cache.get(&h).is_some());
        assert!(cache.protected.contains(&h));
    }

    #[test]
    fn a_full_protected_part_demotes_its_oldest_to_probation() {
        let mut cache = PageCache::new(16); // 2 in probation, 14 protected
        for i in 0..15 {
            let (h, p) = page(i);
            cache.insert(h, p);
            assert!(cache.get(&h).is_some());
        }
        assert_eq!(cache.protected.len(), 14);
        // Page 0 was pushed out of the protected part into probation, not dropped.
        assert!(cache.probation.contains(&page(0).0));
        assert!(cache.get(&page(0).0).is_some());
    }
}
