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
    pages: Mutex<LruCache<Hash, Arc<Vec<u8>>>>,
}

impl Objects {
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        node_cache: usize,
        page_cache: usize,
    ) -> Objects {
        let n = NonZeroUsize::new(node_cache.max(16)).unwrap_or(NonZeroUsize::MIN);
        let p = NonZeroUsize::new(page_cache.max(4)).unwrap_or(NonZeroUsize::MIN);
        Objects {
            store,
            nodes: Mutex::new(LruCache::new(n)),
            pages: Mutex::new(LruCache::new(p)),
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
            .put(*hash, page.clone());
        Ok(page)
    }
}

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
