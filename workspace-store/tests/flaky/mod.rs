//! An object store that fails on demand with the error a lost store server gives: the
//! objects of one SQLite file, whose reads fail where a test's rule says. Shared by the
//! store's tests (`gc_retry.rs`) and the CLI's (`store_failure.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use burrow_store::backend::sqlite::Sqlite;
use burrow_store::backend::{NewObject, ObjectKind, ObjectStore};
use burrow_store::{Durability, Error, Hash, Options, Result};

/// An SQLite store file at `path` (objects or catalog), as a test opens it for another
/// process's writes or to wrap in a [`Flaky`].
pub fn sqlite(path: &std::path::Path) -> Arc<Sqlite> {
    let busy = Options::default().busy_timeout;
    Arc::new(Sqlite::open(path, Durability::Normal, busy).expect("open"))
}

/// Which reads fail: given the read's kind and its number among `get_many` calls (from 1;
/// 0 for a single `get`).
pub type Rule = Box<dyn Fn(ObjectKind, usize) -> bool + Send + Sync>;

pub struct Flaky {
    inner: Arc<Sqlite>,
    /// `get_many` calls so far.
    pub batches: AtomicUsize,
    rule: Rule,
}

impl Flaky {
    pub fn new(inner: Arc<Sqlite>, rule: Rule) -> Arc<Flaky> {
        Arc::new(Flaky {
            inner,
            batches: AtomicUsize::new(0),
            rule,
        })
    }

    fn fail(&self) -> Error {
        Error::Server("connection closed (injected)".into())
    }
}

impl ObjectStore for Flaky {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.inner.put_many(objects)
    }
    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        if (self.rule)(kind, 0) {
            return Err(self.fail());
        }
        self.inner.get(hash, kind)
    }
    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let n = self.batches.fetch_add(1, Ordering::SeqCst) + 1;
        if (self.rule)(kind, n) {
            return Err(self.fail());
        }
        self.inner.get_many(hashes, kind)
    }
    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        self.inner.exists_many(objects)
    }
    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        self.inner.delete_unreferenced(written_before, referenced)
    }
    fn totals(&self) -> Result<(u64, u64, u64)> {
        self.inner.totals()
    }
    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        self.inner.list()
    }
}
