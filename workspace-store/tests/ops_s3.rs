//! The store operations' shared tests (`cases/ops.rs`) on the shared deployment's shape: the
//! catalog in a real PostgreSQL server (`pg/mod.rs`) and the objects in a real S3-API server
//! (moto, `s3/mod.rs`), each test with a fresh database, a fresh bucket and a local object
//! cache of its own; then what only object storage has (the recorded location, fsck against
//! the bucket, GC's sweep fence under concurrent commits).

#![cfg(all(feature = "postgres", feature = "object-storage"))]

mod pg;
mod s3;

use std::time::Duration;

use burrow_store::{
    ChangeKind, Errno, Error, Kind, Location, OpenFlags, Options, Quota, ROOT_INO, Retention,
    SetTime, Store,
};

/// Where a test's store lives: (catalog URL, objects URL, cache dir).
struct Place {
    catalog: String,
    objects: String,
    cache: tempfile::TempDir,
}

fn place() -> Option<Place> {
    let pg = pg::server()?;
    let s3 = s3::server()?;
    Some(Place {
        catalog: pg.fresh_db(),
        objects: s3.fresh_bucket(),
        cache: tempfile::tempdir().expect("cache dir"),
    })
}

fn open(p: &Place, cache: Option<&std::path::Path>) -> Result<Store, Error> {
    Store::connect(
        &Location {
            catalog: p.catalog.clone(),
            objects: Some(p.objects.clone()),
            object_options: s3::options(),
            cache: cache.map(|d| (d.to_path_buf(), 64 << 20)),
        },
        Options::default(),
    )
}

/// The error of opening `catalog` with objects at `objects` (which must fail).
fn refused(catalog: &str, objects: &str) -> Error {
    Store::connect(
        &Location {
            catalog: catalog.to_string(),
            objects: Some(objects.to_string()),
            object_options: s3::options(),
            ..Location::default()
        },
        Options::default(),
    )
    .err()
    .expect("refused")
}

fn store() -> Option<(Place, Store)> {
    let p = place()?;
    let store = open(&p, Some(p.cache.path())).expect("open");
    store.create_workspace("w").expect("create");
    Some((p, store))
}

/// Another handle on the same store, as another machine has: its own cache directory.
fn reopen(p: &Place) -> Store {
    let dir = tempfile::tempdir().expect("cache dir").keep();
    open(p, Some(&dir)).expect("reopen")
}

macro_rules! store {
    () => {
        match store() {
            Some(s) => s,
            None => return,
        }
    };
}

include!("cases/ops.rs");

// ----- what only object storage has -----

#[test]
fn small_writes_live_in_the_catalog_until_gc_moves_their_pages_to_the_bucket() {
    let (p, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("notes.md", b"kept in s3").unwrap();
    t.commit().unwrap();
    let q = |sql: &str| psql(&p, sql);
    assert_eq!(q("SELECT count(*) FROM versions"), "2");
    // The two roots, the file's inode and its page are rows of the catalog, written by the
    // commit that recorded them: the call waited for no PUT.
    assert_eq!(q("SELECT count(*) FROM objects WHERE kind = 1"), "3");
    assert_eq!(q("SELECT count(*) FROM objects WHERE kind = 0"), "1");
    assert_eq!(s3::server().unwrap().count(&p.objects), 0);
    assert_eq!(s.stats().unwrap().objects, 4);
    // GC moves the page into the bucket; the nodes stay.
    let gc = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!((gc.pages_offloaded, gc.objects_kept), (1, 4));
    assert_eq!(q("SELECT count(*) FROM objects WHERE kind = 0"), "0");
    assert_eq!(q("SELECT count(*) FROM objects WHERE kind = 1"), "3");
    let keys = s3::server().unwrap().keys(&p.objects);
    assert!(keys.len() == 1 && keys[0].contains("/p/"), "{keys:?}");
    assert_eq!(s.stats().unwrap().objects, 4);
    // Another machine reads it from there; the next GC has nothing to move.
    let other = reopen(&p);
    assert_eq!(
        other.begin("w").unwrap().read_file("notes.md").unwrap(),
        b"kept in s3"
    );
    assert!(other.fsck().unwrap().is_clean());
    assert_eq!(
        other
            .gc(Retention::All, Duration::ZERO)
            .unwrap()
            .pages_offloaded,
        0
    );
    assert_eq!(s.objects_location().as_deref(), Some(p.objects.as_str()));
}

#[test]
fn gc_packs_many_small_writes_into_the_bucket() {
    let (p, s) = store!();
    for i in 0..40 {
        let mut t = s.begin("w").unwrap();
        t.write_file(&format!("f{i}"), format!("small {i}").as_bytes())
            .unwrap();
        t.commit().unwrap();
    }
    assert_eq!(
        psql(&p, "SELECT count(*) FROM objects WHERE kind = 0"),
        "40"
    );
    let gc = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(gc.pages_offloaded, 40);
    // One pack, not forty keys.
    assert_eq!(packs(&p).len(), 1);
    assert_eq!(s3::server().unwrap().count(&p.objects), 1);
    let mut t = reopen(&p).begin("w").unwrap();
    for i in 0..40 {
        assert_eq!(
            t.read_file(&format!("f{i}")).unwrap(),
            format!("small {i}").as_bytes()
        );
    }
    assert!(reopen(&p).fsck().unwrap().is_clean());
}

#[test]
fn gc_offloads_more_small_pages_than_one_batch_holds() {
    let (p, s) = store!();
    // Offloading takes the catalog's pages 256 at a time.
    let n = 300;
    for i in 0..n {
        let mut t = s.begin("w").unwrap();
        t.write_file(&format!("f{i}"), format!("small {i}").as_bytes())
            .unwrap();
        t.commit().unwrap();
    }
    let pages = |p: &Place| psql(p, "SELECT count(*) FROM objects WHERE kind = 0");
    assert_eq!(pages(&p), n.to_string());
    let gc = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(gc.pages_offloaded, n as u64);
    assert_eq!(pages(&p), "0");
    let keys = s3::server().unwrap().count(&p.objects);
    assert!(
        keys >= 1 && keys <= packs(&p).len() && keys < 10,
        "{keys} keys"
    );
    let mut t = reopen(&p).begin("w").unwrap();
    for i in 0..n {
        assert_eq!(
            t.read_file(&format!("f{i}")).unwrap(),
            format!("small {i}").as_bytes()
        );
    }
    assert!(reopen(&p).fsck().unwrap().is_clean());
}

#[test]
fn a_store_made_with_nodes_in_the_bucket_keeps_them_there() {
    let Some(p) = place() else { return };
    // A new store records its layout; one made before the layout existed has no such
    // setting, and its nodes are keys of the bucket.
    drop(open(&p, None).unwrap());
    psql(&p, "DELETE FROM burrow_meta WHERE key = 'setting:nodes'");
    assert_eq!(
        psql(
            &p,
            "SELECT count(*) FROM burrow_meta WHERE key LIKE 'setting:%'"
        ),
        "1"
    );
    let s = open(&p, None).unwrap();
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"old layout").unwrap();
    t.commit().unwrap();
    assert_eq!(psql(&p, "SELECT count(*) FROM objects"), "0");
    let keys = s3::server().unwrap().keys(&p.objects);
    assert_eq!(
        keys.iter().filter(|k| k.contains("/n/")).count(),
        3,
        "{keys:?}"
    );
    let other = reopen(&p);
    assert_eq!(
        other.begin("w").unwrap().read_file("f").unwrap(),
        b"old layout"
    );
    assert!(other.fsck().unwrap().is_clean());
}

#[test]
fn the_store_remembers_where_its_objects_are() {
    let (p, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"remembered").unwrap();
    t.commit().unwrap();
    // Opened without --objects (and without a cache), it finds the bucket.
    let again = Store::connect(
        &Location {
            catalog: p.catalog.clone(),
            object_options: s3::options(),
            ..Location::default()
        },
        Options::default(),
    )
    .unwrap();
    assert_eq!(
        again.begin("w").unwrap().read_file("f").unwrap(),
        b"remembered"
    );
    // Another place is refused, whatever it is.
    for other in ["postgres", "file:///tmp/elsewhere"] {
        let err = refused(&p.catalog, other);
        assert!(matches!(err, Error::Config(_)), "{err}");
        assert!(
            err.to_string().contains("keeps its objects in s3://"),
            "{err}"
        );
    }
    // A store that already keeps objects in its catalog cannot be pointed at a bucket.
    let url = pg::server().unwrap().fresh_db();
    Store::open_postgres(&url, Options::default())
        .unwrap()
        .create_workspace("x")
        .unwrap();
    let err = refused(&url, &p.objects);
    assert!(err.to_string().contains("burrow store migrate"), "{err}");
}

#[test]
fn credentials_in_the_url_are_refused() {
    let Some(p) = place() else { return };
    let err = refused(&p.catalog, &format!("{}&secret_access_key=x", p.objects));
    assert!(
        err.to_string()
            .contains("credentials belong in the environment"),
        "{err}"
    );
    let err = refused(&p.catalog, &format!("{}&no_such_option=1", p.objects));
    assert!(
        err.to_string()
            .contains("unknown S3 option 'no_such_option'"),
        "{err}"
    );
}

#[test]
fn fsck_checks_the_bucket_not_the_cache() {
    let (p, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", &vec![7u8; 100_000]).unwrap();
    t.commit().unwrap();
    // GC moves the small commit's pages from the catalog into the bucket.
    let gc = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(gc.pages_offloaded, 2);
    // Read once, so the cache holds every object.
    s.begin("w").unwrap().read_file("f").unwrap();
    assert!(s.fsck().unwrap().is_clean());
    // The page goes missing from the bucket; the cache still has it.
    let hex = {
        let page = vec![7u8; 65536];
        blake3::hash(&page).to_hex().to_string()
    };
    delete_key(&p, &format!("store/p/{}/{hex}", &hex[..2]));
    let report = s.fsck().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|l| l.contains(&hex) && l.contains("missing")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_warm_cache_serves_reads_and_survives_a_damaged_file() {
    let (p, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"cached bytes").unwrap();
    t.commit().unwrap();
    // Read once: the cache has the page (and the nodes) from then on.
    s.begin("w").unwrap().read_file("f").unwrap();
    let hash = blake3::hash(b"cached bytes");
    let cached = || cached_range(p.cache.path(), hash.as_bytes());
    assert_eq!(cached(), b"cached bytes");
    // A damaged cache entry is not believed: a new process reads the bucket.
    let (file, off, _) = cache_location(p.cache.path(), hash.as_bytes());
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .unwrap()
        .write_all_at(b"rotten bytes", off)
        .unwrap();
    let fresh = open(&p, Some(p.cache.path())).unwrap();
    assert_eq!(
        fresh.begin("w").unwrap().read_file("f").unwrap(),
        b"cached bytes"
    );
    assert_eq!(cached(), b"cached bytes");
}

/// Where a cache directory keeps a page: its segment file, offset and length (from the
/// cache's index, `DIR/index.db`).
fn cache_location(dir: &std::path::Path, hash: &[u8]) -> (std::path::PathBuf, u64, usize) {
    let index = rusqlite::Connection::open(dir.join("index.db")).unwrap();
    let (segment, off, len): (i64, i64, i64) = index
        .query_row(
            "SELECT segment, off, len FROM objects WHERE hash = ?1 AND kind = 0",
            [hash],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    (
        dir.join("s").join(segment.to_string()),
        off as u64,
        len as usize,
    )
}

/// The bytes a cache directory holds for a page.
fn cached_range(dir: &std::path::Path, hash: &[u8]) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let (file, off, len) = cache_location(dir, hash);
    let mut out = vec![0; len];
    std::fs::File::open(file)
        .unwrap()
        .read_exact_at(&mut out, off)
        .unwrap();
    out
}

#[test]
fn gc_sweeps_the_bucket_while_another_process_commits_and_keeps_everything_live() {
    let (p, a) = store!();
    let b = reopen(&p);
    for n in 0..3 {
        b.fork("w", &[&format!("gone{n}")]).unwrap();
        let mut t = b.begin(&format!("gone{n}")).unwrap();
        t.write_file("big", &vec![n as u8 + 1; 200_000]).unwrap();
        t.commit().unwrap();
        b.delete_workspace(&format!("gone{n}")).unwrap();
    }
    // The writer keeps rewriting files with contents GC keeps finding unreferenced (the
    // three values cycle, and only the newest version is retained), and with grace zero, so
    // the sweep fence alone keeps a commit's re-put objects from being swept under it.
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            for i in 0..40 {
                let mut t = a.begin("w").unwrap();
                let v = i % 3;
                t.write_file("cycling", format!("{v}").repeat(70_000).as_bytes())
                    .unwrap();
                t.write_file(&format!("live{i}"), format!("{i}").repeat(1000).as_bytes())
                    .unwrap();
                t.commit().unwrap();
            }
        });
        for _ in 0..8 {
            match b.gc(Retention::LastN(1), Duration::ZERO) {
                Ok(_) | Err(Error::Busy) => {}
                Err(e) => panic!("{e}"),
            }
        }
        writer.join().unwrap();
    });
    let stats = b.gc(Retention::LastN(1), Duration::ZERO).unwrap();
    let mut t = reopen(&p).begin("w").unwrap();
    assert_eq!(
        t.read_file("cycling").unwrap(),
        "0".repeat(70_000).as_bytes()
    );
    for i in 0..40 {
        assert_eq!(
            t.read_file(&format!("live{i}")).unwrap(),
            format!("{i}").repeat(1000).as_bytes()
        );
    }
    assert!(reopen(&p).fsck().unwrap().is_clean());
    // And garbage really goes: what is left is what the one retained version needs, and
    // the small commits' pages are in the bucket now.
    assert_eq!(stats.objects_kept, reopen(&p).stats().unwrap().objects);
    assert_eq!(psql(&p, "SELECT count(*) FROM objects WHERE kind = 0"), "0");
    let again = b.gc(Retention::LastN(1), Duration::ZERO).unwrap();
    assert_eq!(again.objects_deleted, 0);
}

#[test]
fn a_store_copied_from_sqlite_into_postgres_and_s3_keeps_its_history() {
    let Some(p) = place() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = Store::open(dir.path().join("src.db")).unwrap();
    src.create_workspace("main").unwrap();
    for i in 0..5 {
        let mut t = src.begin("main").unwrap();
        t.write_file(&format!("f{i}"), format!("v{i}").repeat(10_000).as_bytes())
            .unwrap();
        t.commit_with_event("call", &format!("{{\"i\":{i}}}"))
            .unwrap();
    }
    src.fork("main", &["exp"]).unwrap();
    let dst = open(&p, None).unwrap();
    let stats = src.copy_into(&dst, &mut |_, _| {}).unwrap();
    assert_eq!(stats.workspaces, 2);
    assert_eq!(stats.objects, dst.stats().unwrap().objects);
    // Copied in batches, so packed: fewer keys than objects.
    let keys = s3::server().unwrap().count(&p.objects) as u64;
    assert!(
        keys < stats.objects,
        "{keys} keys for {} objects",
        stats.objects
    );
    assert_eq!(
        src.history("main", 100).unwrap(),
        dst.history("main", 100).unwrap()
    );
    let mut t = dst.begin("exp").unwrap();
    assert_eq!(t.read_file("f4").unwrap(), "v4".repeat(10_000).as_bytes());
    assert!(dst.fsck().unwrap().is_clean());
    // And back out of it, into a new SQLite file.
    let back = Store::open(dir.path().join("back.db")).unwrap();
    dst.copy_into(&back, &mut |_, _| {}).unwrap();
    assert_eq!(
        back.begin("main").unwrap().read_file("f0").unwrap(),
        "v0".repeat(10_000).as_bytes()
    );
    assert!(back.fsck().unwrap().is_clean());
}

#[test]
fn an_unreachable_object_store_is_a_clear_error_and_changes_nothing() {
    let Some(p) = place() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dead = Place {
        catalog: p.catalog.clone(),
        objects: format!("s3://nobody/x?endpoint=http://127.0.0.1:{port}&region=us-east-1"),
        cache: tempfile::tempdir().unwrap(),
    };
    let s = open(&dead, None).unwrap();
    // An empty tree is nodes only: the catalog has it all.
    s.create_workspace("w").unwrap();
    // A small write is the catalog's too; a large one's pages go to the bucket.
    let mut t = s.begin("w").unwrap();
    t.write_file("small", b"kept in the catalog").unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    let big: Vec<u8> = (0..2usize << 20).map(|i| (i % 251) as u8).collect();
    t.write_file("f", &big).unwrap();
    let err = t.commit().expect_err("nothing listens there");
    assert!(err.to_string().contains("object storage"), "{err}");
    assert_eq!(s.history("w", 10).unwrap().len(), 2);
}

#[test]
fn an_sqlite_catalog_with_objects_in_a_directory_is_found_again_and_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db").to_str().unwrap().to_string();
    let objects = format!("file://{}", dir.path().join("objects").display());
    let loc = |objects: Option<String>| Location {
        catalog: db.clone(),
        objects,
        ..Location::default()
    };
    let s = Store::connect(&loc(Some(objects.clone())), Options::default()).unwrap();
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"in a directory").unwrap();
    t.commit().unwrap();
    // More than one batch of offloading (256).
    for i in 0..299 {
        let mut t = s.begin("w").unwrap();
        t.write_file(&format!("g{i}"), format!("small {i}").as_bytes())
            .unwrap();
        t.commit().unwrap();
    }
    // The small commits' pages wait in the catalog until GC moves them.
    assert!(!dir.path().join("objects/p").is_dir());
    assert_eq!(
        s.gc(Retention::All, Duration::ZERO)
            .unwrap()
            .pages_offloaded,
        300
    );
    assert!(dir.path().join("objects/p").is_dir());
    drop(s);
    // GC made the pages' index that offloading reads by, and the query uses it.
    let c = rusqlite::Connection::open(&db).unwrap();
    let plan: String = c
        .query_row(
            "EXPLAIN QUERY PLAN SELECT hash FROM objects WHERE kind = 0 LIMIT 256",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("objects_pages"), "{plan}");
    drop(c);
    let again = Store::connect(&loc(None), Options::default()).unwrap();
    assert_eq!(
        again.begin("w").unwrap().read_file("f").unwrap(),
        b"in a directory"
    );
    assert_eq!(
        again.begin("w").unwrap().read_file("g298").unwrap(),
        b"small 298"
    );
    assert!(again.fsck().unwrap().is_clean());
    // The plain SQLite open would look for the objects in the file: refused, not misread.
    let err = Store::open(&db).err().expect("refused");
    assert!(
        err.to_string().contains("keeps its objects in file://"),
        "{err}"
    );
}

/// Deletes `key` from the bucket of `p`, behind the store's back.
fn delete_key(p: &Place, key: &str) {
    let bucket = p
        .objects
        .trim_start_matches("s3://")
        .split('/')
        .next()
        .unwrap();
    let status = s3::server()
        .unwrap()
        .request("DELETE", &format!("/{bucket}/{key}"))
        .unwrap();
    assert_eq!(status, 204);
}

/// The keys of packs in the bucket of `p`.
fn packs(p: &Place) -> Vec<String> {
    s3::server()
        .unwrap()
        .keys(&p.objects)
        .into_iter()
        .filter(|k| k.starts_with("store/k/"))
        .collect()
}

/// What `sql` prints in the store's catalog database, trimmed.
fn psql(p: &Place, sql: &str) -> String {
    let db = p.catalog.rsplit('/').next().unwrap();
    pg::server()
        .unwrap()
        .psql(db, sql)
        .unwrap()
        .trim()
        .to_string()
}

/// Writes `n` distinct small files under `dir` in one transaction.
fn many_files(s: &Store, dir: &str, n: usize) {
    let mut t = s.begin("w").unwrap();
    t.mkdir_all(dir).unwrap();
    for i in 0..n {
        t.write_file(
            &format!("{dir}/f{i}"),
            format!("file {i}\n").repeat(50).as_bytes(),
        )
        .unwrap();
    }
    t.commit().unwrap();
}

#[test]
fn a_large_put_is_packed_and_another_process_reads_it() {
    let (p, s) = store!();
    many_files(&s, "src", 300);
    // 300 pages in a pack or two, not 300 keys (the inodes are the catalog's rows).
    let keys = s3::server().unwrap().count(&p.objects);
    assert!(keys < 30, "{keys} keys in the bucket");
    assert!(!packs(&p).is_empty());
    let packed: u64 = psql(&p, "SELECT count(*) FROM packed").parse().unwrap();
    assert!(packed >= 300, "{packed} packed");
    assert!(s.stats().unwrap().objects >= packed);
    // Another machine, with an empty cache, reads every file.
    let other = reopen(&p);
    let mut t = other.begin("w").unwrap();
    for i in 0..300 {
        assert_eq!(
            t.read_file(&format!("src/f{i}")).unwrap(),
            format!("file {i}\n").repeat(50).as_bytes()
        );
    }
    assert!(other.fsck().unwrap().is_clean());
    // A small write is the catalog's: no pack.
    let before = packs(&p).len();
    let mut t = other.begin("w").unwrap();
    t.write_file("small", b"loose").unwrap();
    t.commit().unwrap();
    assert_eq!(packs(&p).len(), before);
}

#[test]
fn fsck_finds_objects_whose_pack_is_gone() {
    let (p, s) = store!();
    many_files(&s, "src", 100);
    let pack = packs(&p).pop().unwrap();
    delete_key(&p, &pack);
    let report = reopen(&p).fsck().unwrap();
    assert!(
        report.problems.iter().any(|l| l.contains("missing")),
        "{:?}",
        report.problems
    );
    // A read of a file in it is an error, never other bytes.
    let fresh = open(&p, None).unwrap();
    let err = fresh
        .begin("w")
        .and_then(|mut t| t.read_file("src/f7"))
        .expect_err("its objects are gone");
    assert!(err.to_string().contains("missing object"), "{err}");
}

#[test]
fn gc_forgets_packed_garbage_and_rewrites_sparse_packs() {
    let (p, s) = store!();
    many_files(&s, "src", 300);
    let first = packs(&p);
    // Most of the files go; the pack they were in is now mostly garbage.
    let mut t = s.begin("w").unwrap();
    for i in 30..300 {
        t.remove_all(&format!("src/f{i}")).unwrap();
    }
    t.commit().unwrap();
    let stats = s.gc(Retention::LastN(1), Duration::ZERO).unwrap();
    assert!(stats.objects_deleted >= 540, "{stats:?}");
    let after = packs(&p);
    assert!(
        first.iter().all(|k| !after.contains(k)),
        "the sparse pack was rewritten: {first:?} then {after:?}"
    );
    let other = reopen(&p);
    let mut t = other.begin("w").unwrap();
    for i in 0..30 {
        assert_eq!(
            t.read_file(&format!("src/f{i}")).unwrap(),
            format!("file {i}\n").repeat(50).as_bytes()
        );
    }
    assert_eq!(t.read_file("src/f31").unwrap_err().errno(), Errno::NotFound);
    assert!(other.fsck().unwrap().is_clean());
    let again = s.gc(Retention::LastN(1), Duration::ZERO).unwrap();
    assert_eq!(again.objects_deleted, 0);
    assert_eq!(packs(&p), after);
    assert_eq!(again.objects_kept, other.stats().unwrap().objects);
}

/// GC deletes from object storage on the strength of its own catalog writes (a pack's
/// entries moved, then the old pack deleted): on connections whose every commit skips the
/// WAL flush, a database crash could undo the move after the delete, so GC refuses to run
/// there, clearly and having done nothing; through the same database without that setting
/// it runs. (Only PostgreSQL and a directory are needed: the refusal comes before any
/// object storage request.)
#[test]
fn gc_refuses_to_sweep_object_storage_when_the_catalog_does_not_flush_its_writes() {
    let Some(pg) = pg::server() else { return };
    let url = pg.fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let objects = format!("file://{}", dir.path().join("objects").display());
    let open = |catalog: String| {
        Store::connect(
            &Location {
                catalog,
                objects: Some(objects.clone()),
                ..Location::default()
            },
            Options::default(),
        )
        .unwrap()
    };
    let s = open(url.clone());
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", &vec![7u8; 300_000]).unwrap();
    t.commit().unwrap();
    s.delete_workspace("w").unwrap();
    let relaxed = open(format!("{url}?options=-c%20synchronous_commit%3Doff"));
    let err = relaxed.gc(Retention::All, Duration::ZERO).unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert!(
        err.to_string().contains("synchronous_commit is off"),
        "{err}"
    );
    let stats = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert!(
        stats.versions_deleted > 0 && stats.objects_deleted > 0,
        "{stats:?}"
    );
    assert!(s.fsck().unwrap().is_clean());
}

/// Offloading reads the catalog's pages by a partial index that GC builds (concurrently,
/// before it announces its sweep) on a store that offloads, rather than reading every
/// object each batch; one left invalid by an interrupted build is built again.
#[test]
fn gc_builds_the_pages_index_that_offloading_reads_by() {
    let (p, s) = store!();
    let q = |sql: &str| psql(&p, sql);
    let index = "SELECT coalesce((SELECT indisvalid::text FROM pg_index \
                 WHERE indexrelid = to_regclass('objects_pages')), 'none')";
    assert_eq!(q(index), "none", "made before any GC");
    // An index of that name left invalid: a unique one over duplicate kinds fails.
    many_files(&s, "d", 3);
    let err = pg::server()
        .unwrap()
        .psql(
            p.catalog.rsplit('/').next().unwrap(),
            "CREATE UNIQUE INDEX CONCURRENTLY objects_pages ON objects (kind)",
        )
        .unwrap_err();
    assert!(err.contains("could not create unique index"), "{err}");
    assert_eq!(q(index), "false");
    let gc = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(gc.pages_offloaded, 3);
    assert_eq!(q(index), "true");
    let def = q("SELECT pg_get_indexdef(to_regclass('objects_pages'))");
    assert!(def.contains("(hash) WHERE (kind = 0)"), "{def}");
    // The query offloading makes can read it (the table is too small for the planner to
    // choose it unprompted).
    let plan = q("SET enable_seqscan = off; \
                  EXPLAIN SELECT hash FROM objects WHERE kind = 0 LIMIT 256");
    assert!(plan.contains("objects_pages"), "{plan}");
    // Later writes and GCs keep using it; a second process finds it built.
    many_files(&s, "e", 2);
    let gc = reopen(&p).gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(gc.pages_offloaded, 2);
    assert!(s.fsck().unwrap().is_clean());
}

/// A role that may read and write the store's tables but not create indexes on them (a
/// deployment whose schema an administrator owns): GC still offloads, reading the table.
#[test]
fn gc_offloads_without_the_right_to_build_the_pages_index() {
    let (p, s) = store!();
    many_files(&s, "d", 3);
    for sql in [
        "CREATE ROLE dml_only LOGIN",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO dml_only",
        "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO dml_only",
    ] {
        psql(&p, sql);
    }
    let dml = Place {
        catalog: p.catalog.replacen("burrow@", "dml_only@", 1),
        objects: p.objects.clone(),
        cache: tempfile::tempdir().unwrap(),
    };
    let gc = open(&dml, None)
        .unwrap()
        .gc(Retention::All, Duration::ZERO)
        .unwrap();
    assert_eq!(gc.pages_offloaded, 3);
    assert_eq!(
        psql(&p, "SELECT to_regclass('objects_pages') IS NULL"),
        "t",
        "no index without the right to make it"
    );
    assert!(s.fsck().unwrap().is_clean());
}
