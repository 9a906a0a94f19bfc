//! A GC whose store server fails in the middle of its mark tries again, and the next try
//! must mark everything again: a mark cut short holds nodes whose subtrees it never reached,
//! and marking skips below what is marked, so keeping it let the sweep delete live objects
//! (found by the chaos harness's 30-minute run: "store is corrupt: missing object"). Here the
//! failure is injected: an object store that fails one batched read of the mark with the
//! error a lost server gives.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use burrow_store::backend::sqlite::Sqlite;
use burrow_store::backend::{NewObject, ObjectKind, ObjectStore};
use burrow_store::{Durability, Error, Hash, Options, Result, Retention, Store};

/// The objects of one SQLite file, whose `get_many` number `fail_at` (counted from 1) fails
/// as a lost store server does.
struct Flaky {
    inner: Arc<Sqlite>,
    calls: AtomicUsize,
    fail_at: usize,
}

impl ObjectStore for Flaky {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.inner.put_many(objects)
    }
    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        self.inner.get(hash, kind)
    }
    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_at {
            return Err(Error::Server("connection closed (injected)".into()));
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

fn sqlite(path: &Path) -> Arc<Sqlite> {
    let busy = Options::default().busy_timeout;
    Arc::new(Sqlite::open(path, Durability::Normal, busy).expect("open"))
}

#[test]
fn a_mark_cut_short_is_not_kept_for_the_next_try() {
    // The read that fails: the first two batches read the versions' roots and the level
    // below them, so every failure from the third on cuts a mark below marked nodes.
    for fail_at in 1..=5 {
        let dir = tempfile::tempdir().expect("tempdir");
        let (objects, catalog) = (
            sqlite(&dir.path().join("objects.db")),
            sqlite(&dir.path().join("catalog.db")),
        );
        let writer = Store::with_backends(
            objects.clone(),
            catalog.clone(),
            dir.path(),
            Options::default(),
        );
        writer.create_workspace("w").expect("workspace");
        let mut t = writer.begin("w").expect("begin");
        t.mkdir_all("a/b/c").expect("mkdir");
        t.commit().expect("commit");
        for i in 0..4 {
            let mut t = writer.begin("w").expect("begin");
            t.write_file(
                &format!("a/b/c/deep-{i}.txt"),
                format!("deep {i}").as_bytes(),
            )
            .expect("write");
            t.write_file(&format!("a/side-{i}.txt"), b"side")
                .expect("write");
            t.write_file("a/b/changing.txt", format!("v{i}").as_bytes())
                .expect("write");
            t.commit().expect("commit");
        }
        writer.fork("w", &["f"]).expect("fork");
        let mut t = writer.begin("f").expect("begin");
        t.write_file("a/b/c/fork.txt", b"fork").expect("write");
        t.commit().expect("commit");

        // A GC in another process: nothing of the tree in its caches.
        let flaky = Arc::new(Flaky {
            inner: objects.clone(),
            calls: AtomicUsize::new(0),
            fail_at,
        });
        let gc = Store::with_backends(
            flaky.clone(),
            catalog.clone(),
            dir.path(),
            Options::default(),
        );
        gc.gc(Retention::All, std::time::Duration::ZERO)
            .expect("the GC finishes after the failed read");
        assert!(
            flaky.calls.load(Ordering::SeqCst) > fail_at,
            "the injected failure happened (fail_at {fail_at})"
        );

        // Everything either head reaches is still there, read by a third process.
        let reader = Store::with_backends(objects, catalog, dir.path(), Options::default());
        let report = reader.fsck().expect("fsck");
        assert!(report.is_clean(), "fail_at {fail_at}: {report:?}");
        let mut t = reader.begin("f").expect("begin");
        for i in 0..4 {
            assert_eq!(
                t.read_file(&format!("a/b/c/deep-{i}.txt")).expect("read"),
                format!("deep {i}").as_bytes()
            );
        }
        assert_eq!(t.read_file("a/b/c/fork.txt").expect("read"), b"fork");
        assert_eq!(t.read_file("a/b/changing.txt").expect("read"), b"v3");
    }
}
