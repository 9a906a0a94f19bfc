//! Unit tests of every store operation and its errors, through the public API, on the
//! embedded SQLite store: the cases every backend shares (`cases/ops.rs`) and those about
//! the SQLite file itself.

use std::time::Duration;

use burrow_store::{
    ChangeKind, Errno, Error, Kind, OpenFlags, Quota, ROOT_INO, Retention, SetTime, Store,
};

/// Another handle on the same file, as another process has.
fn reopen(d: &tempfile::TempDir) -> Store {
    Store::open(d.path().join("s.db")).expect("reopen")
}

macro_rules! store {
    () => {
        store()
    };
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("s.db")).expect("open");
    store.create_workspace("w").expect("create");
    (dir, store)
}

include!("cases/ops.rs");
include!("cases/guard.rs");

#[test]
fn a_guarded_commit_on_the_sqlite_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let cat = burrow_store::backend::sqlite::Sqlite::open(
        &dir.path().join("c.db"),
        burrow_store::Durability::Normal,
        Duration::from_secs(5),
    )
    .unwrap();
    guarded_writes_land_only_while_the_setting_holds(&cat);
}

#[test]
fn fsck_finds_a_corrupted_page() {
    let (d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"some bytes worth keeping").unwrap();
    t.commit().unwrap();
    assert!(s.fsck().unwrap().is_clean());
    drop(s);
    let conn = rusqlite::Connection::open(d.path().join("s.db")).unwrap();
    let n = conn
        .execute("UPDATE objects SET data = X'00' WHERE kind = 0", [])
        .unwrap();
    assert_eq!(n, 1);
    drop(conn);
    let s = Store::open(d.path().join("s.db")).unwrap();
    let report = s.fsck().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("does not match its hash")),
        "{:?}",
        report.problems
    );
}

#[test]
fn reopen_persists_and_foreign_files_are_refused() {
    let (d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"persisted").unwrap();
    t.commit().unwrap();
    drop(s);
    let s = Store::open(d.path().join("s.db")).unwrap();
    assert_eq!(s.begin("w").unwrap().read_file("f").unwrap(), b"persisted");
    let text = d.path().join("text.db");
    std::fs::write(
        &text,
        "this is not a database, just some text that is long enough",
    )
    .unwrap();
    assert!(
        matches!(Store::open(&text), Err(Error::NotAStore { .. })),
        "text file"
    );
    let foreign = d.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t(x)")
        .unwrap();
    let e = Store::open(&foreign).err().expect("foreign db refused");
    assert!(
        e.to_string().contains("foreign.db is not a burrow store"),
        "{e}"
    );
}

#[test]
fn schema_migrates_from_v1_and_refuses_newer() {
    let (d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"old data").unwrap();
    t.commit().unwrap();
    drop(s);
    let path = d.path().join("s.db");
    {
        // Turn the file back into a version-1 store.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP TABLE workspace_meta; DROP TABLE events; DROP TABLE settings; ALTER TABLE heads DROP COLUMN last_active;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.begin("w").unwrap().read_file("f").unwrap(), b"old data");
    s.set_meta("w", "name", Some("migrated")).unwrap();
    drop(s);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(Error::SchemaTooNew { found: 99, .. })
    ));
}

#[test]
fn contention_is_a_clear_busy_error_and_readers_are_not_blocked() {
    let (d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"committed").unwrap();
    t.commit().unwrap();
    let path = d.path().join("s.db");
    let impatient = Store::open_with(
        &path,
        burrow_store::Options {
            busy_timeout: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .unwrap();
    // Another "process" holds the write lock.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut t = impatient.begin("w").unwrap();
    // Reading is not blocked by the writer.
    assert_eq!(t.read_file("f").unwrap(), b"committed");
    t.write_file("g", b"x").unwrap();
    let err = t.commit().unwrap_err();
    assert!(matches!(err, Error::Busy), "{err}");
    assert!(err.to_string().contains("retry"), "{err}");
    holder.execute_batch("ROLLBACK").unwrap();
    let mut t = impatient.begin("w").unwrap();
    t.write_file("g", b"x").unwrap();
    t.commit().unwrap();
}

#[test]
fn a_store_closed_with_a_large_write_ahead_log_empties_it() {
    let (d, s) = store!();
    let wal = d.path().join("s.db-wal");
    let wal_len = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    // A small log is left for the next process (closing without a checkpoint is what
    // keeps a one-call process fast).
    let mut t = s.begin("w").unwrap();
    t.write_file("small", b"x").unwrap();
    t.commit().unwrap();
    drop(s);
    let small = wal_len();
    assert!(small > 0 && small <= burrow_store::backend::sqlite::WAL_TRUNCATE_BYTES);
    // A large one is folded into the database and emptied, so the next process does not
    // read it all to rebuild its index, and the data is all there.
    let s = reopen(&d);
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut t = s.begin("w").unwrap();
    t.write_file("big", &big).unwrap();
    t.commit().unwrap();
    assert!(wal_len() > burrow_store::backend::sqlite::WAL_TRUNCATE_BYTES);
    drop(s);
    assert_eq!(wal_len(), 0);
    let s = reopen(&d);
    assert_eq!(s.begin("w").unwrap().read_file("big").unwrap(), big);
    // With another handle open too, the log stays bounded and nothing is lost.
    let other = reopen(&d);
    let mut t = s.begin("w").unwrap();
    t.write_file("again", &big[..2_000_000]).unwrap();
    t.commit().unwrap();
    drop(s);
    assert!(other.begin("w").unwrap().read_file("again").unwrap() == big[..2_000_000]);
    drop(other);
    assert!(wal_len() <= burrow_store::backend::sqlite::WAL_TRUNCATE_BYTES);
    assert!(reopen(&d).fsck().unwrap().is_clean());
}
