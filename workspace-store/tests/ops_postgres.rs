//! The store operations' shared tests (`cases/ops.rs`) on PostgreSQL: the catalog and the
//! objects in a real server started for the test process (see `pg/mod.rs`), a fresh
//! database per test.

#![cfg(feature = "postgres")]

mod pg;

use std::time::Duration;

use burrow_store::{
    ChangeKind, Errno, Error, Kind, OpenFlags, Options, Quota, ROOT_INO, Retention, SetTime, Store,
};

fn store() -> Option<(String, Store)> {
    let url = pg::server()?.fresh_db();
    let store = Store::open_postgres(&url, Options::default()).expect("open");
    store.create_workspace("w").expect("create");
    Some((url, store))
}

/// Another handle on the same database, as another process (or machine) has.
fn reopen(url: &str) -> Store {
    Store::open_postgres(url, Options::default()).expect("reopen")
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
include!("cases/guard.rs");

#[test]
fn a_guarded_commit_on_the_postgres_catalog() {
    let Some(server) = pg::server() else { return };
    let cat = burrow_store::backend::postgres::Postgres::open(
        &server.fresh_db(),
        burrow_store::Durability::Normal,
    )
    .unwrap();
    guarded_writes_land_only_while_the_setting_holds(&cat);
}

/// A connection is driven only while a call uses it: a commit that failed (a fenced guard,
/// a moved head) must still have ended its transaction on the server when the call
/// returns, or the writer lock it holds would stop every other process's commits.
#[test]
fn a_failed_commit_leaves_no_transaction_open_on_the_server() {
    let Some(server) = pg::server() else { return };
    let url = server.fresh_db();
    let db = url.rsplit('/').next().unwrap().to_string();
    let open_transactions = || {
        server
            .psql(
                &db,
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
            )
            .unwrap()
            .trim()
            .to_string()
    };
    // A guarded commit refused (its transaction holds the writer lock when refused), as
    // the last thing its connection did.
    {
        use burrow_store::backend::{Catalog, CommitRecord, Guard, NewVersion};
        let cat =
            burrow_store::backend::postgres::Postgres::open(&url, burrow_store::Durability::Normal)
                .unwrap();
        let version = |parent| NewVersion {
            root: burrow_store::Hash::of(b"a tree"),
            parent,
            workspace: "g",
            message: "m",
            next_ino: 2,
            bytes: 0,
            entries: 0,
        };
        let first = cat.create_workspace(&version(None), &[], None).unwrap();
        assert!(cat.swap_setting("test.fence", None, Some("1")).unwrap());
        let refused = cat.commit(
            &CommitRecord {
                version: version(Some(first)),
                expected: first,
                events: &[],
                event: None,
                guard: Some(Guard {
                    key: "test.fence",
                    value: None,
                }),
            },
            &[],
        );
        assert!(matches!(refused, Err(Error::Fenced)), "{refused:?}");
        assert_eq!(open_transactions(), "0");
    }
    // A commit whose head moved (its statements were sent with its BEGIN).
    let a = Store::open_postgres(&url, Options::default()).unwrap();
    a.create_workspace("w").unwrap();
    let mut first = a.begin("w").unwrap();
    let mut second = a.begin("w").unwrap();
    first.write_file("f", b"1").unwrap();
    second.write_file("f", b"2").unwrap();
    first.commit().unwrap();
    assert!(matches!(second.commit(), Err(Error::Conflict { .. })));
    assert_eq!(open_transactions(), "0");
    // And another process commits at once.
    let b = reopen(&url);
    let mut t = b.begin("w").unwrap();
    t.write_file("g", b"3").unwrap();
    t.commit().unwrap();
    assert_eq!(a.begin("w").unwrap().read_file("g").unwrap(), b"3");
}

// ----- what only a shared server has -----

#[test]
fn events_recorded_without_waiting_are_in_order_and_in_the_log_when_read() {
    let (url, store) = store!();
    let events = |s: &Store| {
        s.events(&burrow_store::EventFilter {
            workspace: Some("w".into()),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.data))
        .collect::<Vec<_>>()
    };
    // Reads (transactions that change nothing) interleaved with writes: the reads' events
    // are sent without waiting, the writes' with their commits.
    let mut want = Vec::new();
    for i in 0..20 {
        let mut t = store.begin("w").unwrap();
        if i % 3 == 0 {
            let ino = t.open_at(ROOT_INO, &format!("f{i}"), CREATE, true).unwrap();
            t.write(ino, 0, b"x").unwrap();
            t.commit_recording("write", &i.to_string()).unwrap();
            want.push(("write".to_string(), i.to_string()));
        } else {
            t.commit_recording("read", &i.to_string()).unwrap();
            want.push(("read".to_string(), i.to_string()));
        }
        // A catalog write that begins a transaction of its own right after a read's event;
        // otherwise the next call follows at once (its reads may go on another connection
        // while this one's event is still running).
        if i % 2 == 0 {
            store.set_meta("w", "k", Some(&i.to_string())).unwrap();
        }
    }
    assert_eq!(events(&store), want, "read back in this process");
    // Another process sees them too, once this one has dropped its store.
    store.record_event("w", "read", None, None, "last").unwrap();
    let t = store.begin("w").unwrap();
    t.commit_recording("read", "very last").unwrap();
    drop(store);
    want.push(("read".to_string(), "last".to_string()));
    want.push(("read".to_string(), "very last".to_string()));
    assert_eq!(events(&reopen(&url)), want, "read back by another process");
}

#[test]
fn the_pack_index_is_read_a_page_at_a_time_in_hash_order() {
    use burrow_store::backend::{
        ObjectKind, PackIndex, PackedObject, for_each_packed, postgres::Postgres,
    };
    let Some(server) = pg::server() else { return };
    let index = Postgres::open(&server.fresh_db(), Default::default()).unwrap();
    let entries: Vec<PackedObject> = (0..25u8)
        .map(|i| PackedObject {
            // Not recorded in hash order.
            hash: burrow_store::Hash([i.wrapping_mul(37); 32]),
            kind: ObjectKind::Page,
            pack: format!("pack{}", i % 3),
            offset: i as u64 * 100,
            len: 100,
            created: 0,
        })
        .collect();
    index.record_packed(&entries).unwrap();
    for page in [1, 10, 25, 26, 1000] {
        let mut pages = Vec::new();
        for_each_packed(&index, page, |got| {
            pages.push(got.iter().map(|e| e.hash).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
        assert!(pages.iter().all(|p| p.len() <= page), "pages of {page}");
        let seen: Vec<_> = pages.concat();
        let mut want: Vec<_> = entries.iter().map(|e| e.hash).collect();
        want.sort();
        assert_eq!(
            seen, want,
            "pages of {page}: each entry once, in hash order"
        );
    }
    // Forgetting entries of the page being read (as GC does) skips nothing after them.
    let mut kept = Vec::new();
    for_each_packed(&index, 4, |got| {
        let (gone, keep) = got.split_at(got.len() / 2);
        let gone: Vec<_> = gone.iter().map(|e| e.hash).collect();
        index.forget_packed(&gone, i64::MAX).unwrap();
        kept.extend(keep.iter().map(|e| e.hash));
        Ok(())
    })
    .unwrap();
    let left: Vec<_> = index.packed().unwrap().iter().map(|e| e.hash).collect();
    assert_eq!(left, kept);
    assert!(!left.is_empty() && left.len() < entries.len());
}

#[test]
fn the_catalog_and_the_objects_live_in_the_database() {
    let (url, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("notes.md", b"kept in postgres").unwrap();
    t.commit().unwrap();
    let db = url.rsplit('/').next().unwrap().to_string();
    let server = pg::server().unwrap();
    let q = |sql: &str| server.psql(&db, sql).unwrap().trim().to_string();
    assert_eq!(q("SELECT name FROM heads"), "w");
    assert_eq!(q("SELECT count(*) FROM versions"), "2");
    // The root, the file node and its page at least.
    assert!(q("SELECT count(*) FROM objects").parse::<u32>().unwrap() >= 3);
    assert_eq!(
        q("SELECT count(*) FROM objects WHERE data = convert_to('kept in postgres', 'UTF8')"),
        "1"
    );
    // Objects are compressed with lz4 where the server has it (14 and up, with lz4).
    let lz4 =
        q("SELECT count(*) FROM pg_config WHERE name = 'CONFIGURE' AND setting LIKE '%with-lz4%'");
    let version: u32 = q("SHOW server_version_num").parse().unwrap();
    let method = q("SELECT attcompression FROM pg_attribute
                    WHERE attrelid = 'objects'::regclass AND attname = 'data'");
    if version >= 140000 && lz4 == "1" {
        assert_eq!(method, "l");
    }
}

#[test]
fn two_machines_serve_one_session_alternately_and_concurrently() {
    let (url, a) = store!();
    // A second process with its own caches.
    let b = reopen(&url);
    // Alternately: each sees what the other committed, at once.
    for i in 0..5 {
        let (w, r) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let mut t = w.begin("w").unwrap();
        t.write_file(&format!("f{i}"), format!("round {i}").as_bytes())
            .unwrap();
        t.commit_with_event("call", &format!("{{\"i\":{i}}}"))
            .unwrap();
        let mut v = r.begin("w").unwrap();
        assert_eq!(
            v.read_file(&format!("f{i}")).unwrap(),
            format!("round {i}").as_bytes()
        );
    }
    // A fork made on one is used on the other.
    a.fork("w", &["exp"]).unwrap();
    let mut t = b.begin("exp").unwrap();
    t.write_file("only-in-exp", b"x").unwrap();
    t.commit().unwrap();
    assert!(a.begin("w").unwrap().read_file("only-in-exp").is_err());
    assert_eq!(
        a.begin("exp").unwrap().read_file("only-in-exp").unwrap(),
        b"x"
    );
    // Concurrently on one workspace: every commit either lands or reports the conflict, and
    // those that land are all there, with their events in commit order.
    let landed: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = [&a, &b]
            .into_iter()
            .enumerate()
            .map(|(n, s)| {
                sc.spawn(move || {
                    let mut ok = Vec::new();
                    for i in 0..20 {
                        let name = format!("c{n}-{i}");
                        let mut t = s.begin("w").unwrap();
                        t.write_file(&name, b"c").unwrap();
                        match t.commit_with_event("call", &name) {
                            Ok(_) => ok.push(name),
                            Err(Error::Conflict { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    ok
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(!landed.is_empty());
    let mut t = a.begin("w").unwrap();
    for name in &landed {
        assert_eq!(t.read_file(name).unwrap(), b"c", "{name}");
    }
    let events = b
        .events(&burrow_store::EventFilter {
            workspace: Some("w".into()),
            ..Default::default()
        })
        .unwrap();
    let calls: Vec<_> = events.iter().filter(|e| e.data.starts_with('c')).collect();
    assert_eq!(calls.len(), landed.len());
    for pair in events.windows(2) {
        assert!(pair[0].seq < pair[1].seq);
        assert!(pair[0].version_after < pair[1].version_after);
    }
    assert!(a.fsck().unwrap().is_clean());
}

#[test]
fn gc_on_the_shared_database_while_another_process_commits_keeps_everything_live() {
    let (url, a) = store!();
    let b = reopen(&url);
    for n in 0..3 {
        b.fork("w", &[&format!("gone{n}")]).unwrap();
        let mut t = b.begin(&format!("gone{n}")).unwrap();
        t.write_file("big", &vec![n as u8 + 1; 200_000]).unwrap();
        t.commit().unwrap();
        b.delete_workspace(&format!("gone{n}")).unwrap();
    }
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            for i in 0..30 {
                let mut t = a.begin("w").unwrap();
                t.write_file(&format!("live{i}"), format!("{i}").repeat(1000).as_bytes())
                    .unwrap();
                t.commit().unwrap();
            }
        });
        for _ in 0..5 {
            b.gc(Retention::LastN(3), Duration::from_secs(30)).unwrap();
        }
        writer.join().unwrap();
    });
    let stats = b.gc(Retention::LastN(3), Duration::ZERO).unwrap();
    assert!(stats.bytes_freed > 0 || stats.objects_deleted > 0 || stats.versions_deleted > 0);
    let mut t = a.begin("w").unwrap();
    for i in 0..30 {
        assert_eq!(
            t.read_file(&format!("live{i}")).unwrap(),
            format!("{i}").repeat(1000).as_bytes()
        );
    }
    assert!(reopen(&url).fsck().unwrap().is_clean());
}

#[test]
fn a_server_that_cannot_be_reached_is_a_clear_error() {
    if pg::server().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let err = Store::open_postgres(
        &format!("postgres://burrow@127.0.0.1:{port}/none"),
        Options::default(),
    )
    .err()
    .expect("no server there");
    assert!(matches!(err, Error::Server(_)), "{err}");
    assert!(err.to_string().contains("store server"), "{err}");
}

#[test]
fn a_store_copied_from_sqlite_into_postgres_keeps_every_session_and_its_history() {
    let Some(server) = pg::server() else { return };
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
    let mut t = src.begin("exp").unwrap();
    t.write_file("exp-only", b"x").unwrap();
    t.commit().unwrap();
    let v = src.workspace("main").unwrap().version;
    src.label("before-exp", v).unwrap();
    src.set_meta("exp", "name", Some("experiment")).unwrap();
    src.set_quota(
        "exp",
        Quota {
            bytes: Some(10 << 20),
            entries: None,
        },
    )
    .unwrap();

    let url = server.fresh_db();
    let dst = Store::open_postgres(&url, Options::default()).unwrap();
    let mut calls = 0;
    let stats = src.copy_into(&dst, &mut |_, _| calls += 1).unwrap();
    assert!(calls > 0);
    assert_eq!(stats.workspaces, 2);
    assert_eq!(stats.objects, src.stats().unwrap().objects);
    // A second copy into the same (now full) store is refused.
    assert!(matches!(
        src.copy_into(&dst, &mut |_, _| {}),
        Err(Error::Invalid(_))
    ));

    // A fresh process on the database sees the same sessions, ids and history.
    let dst = reopen(&url);
    assert_eq!(dst.workspaces().unwrap(), src.workspaces().unwrap());
    for w in ["main", "exp"] {
        assert_eq!(dst.history(w, 100).unwrap(), src.history(w, 100).unwrap());
        assert_eq!(dst.meta(w).unwrap(), src.meta(w).unwrap());
    }
    assert_eq!(dst.labels().unwrap(), src.labels().unwrap());
    let all = burrow_store::EventFilter::default();
    assert_eq!(dst.events(&all).unwrap(), src.events(&all).unwrap());
    let mut t = dst.begin("main").unwrap();
    assert_eq!(t.read_file("f3").unwrap(), "v3".repeat(10_000).as_bytes());
    assert!(dst.fsck().unwrap().is_clean());
    // New versions and events continue after the copied ones.
    let last = src.events(&all).unwrap().last().unwrap().seq;
    t.write_file("after", b"y").unwrap();
    let (c, seq) = t.commit_with_event("call", "after").unwrap();
    let newest = ["main", "exp"]
        .iter()
        .flat_map(|w| src.history(w, 100).unwrap())
        .map(|v| v.id)
        .max()
        .unwrap();
    assert!(c.version > newest);
    assert!(seq > last);
    // And back: PostgreSQL into a new SQLite file.
    let back = Store::open(dir.path().join("back.db")).unwrap();
    dst.copy_into(&back, &mut |_, _| {}).unwrap();
    assert_eq!(back.workspaces().unwrap(), dst.workspaces().unwrap());
    assert_eq!(back.events(&all).unwrap(), dst.events(&all).unwrap());
    assert_eq!(
        back.begin("main").unwrap().read_file("after").unwrap(),
        b"y"
    );
    assert!(back.fsck().unwrap().is_clean());
}

#[test]
fn commits_with_events_wake_watchers_in_other_processes() {
    let (url, a) = store!();
    let b = reopen(&url);
    let (tx, rx) = std::sync::mpsc::channel();
    let watching = b
        .watch(std::sync::Arc::new(move || {
            let _ = tx.send(());
        }))
        .unwrap();
    assert!(watching);
    let wait = Duration::from_secs(20);
    rx.recv_timeout(wait).expect("a wake once it listens");
    let mut t = a.begin("w").unwrap();
    t.write_file("x", b"1").unwrap();
    t.commit_with_event("call", "x").unwrap();
    rx.recv_timeout(wait)
        .expect("woken by another process's commit");
    a.append_event("w", "note", None, None, "{}").unwrap();
    rx.recv_timeout(wait)
        .expect("woken by another process's event");
    // The SQLite file cannot tell: its readers poll.
    let dir = tempfile::tempdir().unwrap();
    let local = Store::open(dir.path().join("s.db")).unwrap();
    assert!(!local.watch(std::sync::Arc::new(|| {})).unwrap());
}

#[test]
fn a_restarted_server_fails_calls_cleanly_then_they_recover() {
    let Some(private) = pg::Private::start() else {
        return;
    };
    let url = private.server.fresh_db();
    let s = Store::open_postgres(&url, Options::default()).unwrap();
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("before", b"kept").unwrap();
    t.commit().unwrap();
    // A transaction in flight when the server goes away.
    let mut t = s.begin("w").unwrap();
    t.write_file("lost", b"never committed").unwrap();
    private.stop();
    let err = t.commit().unwrap_err();
    assert!(matches!(err, Error::Server(_)), "{err}");
    let err = s.begin("w").err().expect("no server, no transaction");
    assert!(matches!(err, Error::Server(_)), "{err}");
    private.restart();
    // The same store handle recovers: new connections, the state as before the failure.
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.read_file("before").unwrap(), b"kept");
    assert!(t.read_file("lost").is_err());
    t.write_file("after", b"recovered").unwrap();
    t.commit().unwrap();
    assert_eq!(s.history("w", 10).unwrap().len(), 3);
    assert!(s.fsck().unwrap().is_clean());
}

/// A GC that finds the server gone (restarted, failed over, a pooler refusing logins while
/// it comes back) tries again with what it has and finishes once the server answers, instead
/// of failing the run (cron-style GCs under a busy fleet otherwise rarely complete).
#[test]
fn gc_rides_out_a_server_restart() {
    let Some(private) = pg::Private::start() else {
        return;
    };
    let url = private.server.fresh_db();
    let s = Store::open_postgres(&url, Options::default()).unwrap();
    s.create_workspace("w").unwrap();
    for i in 0..3 {
        let mut t = s.begin("w").unwrap();
        t.write_file("f", format!("version {i}").as_bytes())
            .unwrap();
        t.commit().unwrap();
    }
    private.stop();
    let gc = std::thread::scope(|sc| {
        let gc = sc.spawn(|| s.gc(burrow_store::Retention::LastN(1), Duration::ZERO));
        std::thread::sleep(Duration::from_millis(1500));
        private.restart();
        gc.join().unwrap()
    });
    let stats = gc.expect("the GC finishes once the server is back");
    assert_eq!(stats.versions_kept, 1, "{stats:?}");
    assert!(stats.versions_deleted >= 3, "{stats:?}");
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.read_file("f").unwrap(), b"version 2");
    t.write_file("g", b"after").unwrap();
    t.commit().unwrap();
    assert!(s.fsck().unwrap().is_clean());
}

/// Which commits wait for the server's WAL flush, seen through a synchronous standby that
/// never connects: a commit made with `synchronous_commit` on then waits for that standby
/// (for ever), one made with it off returns at once. At the default durability a tool call's
/// commit and a read's event do not wait; a session's fork does, and so does every commit
/// of a store opened with `Durability::Full`. Once the standby is no longer required, the
/// waiting ones finish, and everything is there.
#[test]
fn only_calls_commits_at_the_default_durability_skip_the_wal_flush() {
    let Some(private) = pg::Private::start() else {
        return;
    };
    let url = private.server.fresh_db();
    let normal = Store::open_postgres(&url, Options::default()).unwrap();
    let full = Store::open_postgres(
        &url,
        Options {
            durability: burrow_store::Durability::Full,
            ..Options::default()
        },
    )
    .unwrap();
    normal.create_workspace("w").unwrap();
    private.require_standby("nobody");
    // The default durability: a call's commit, and a read's event, return. (Should they
    // wait, the standby stops being required after a long look, so the test fails rather
    // than hangs.)
    std::thread::scope(|sc| {
        let calls = sc.spawn(|| {
            let mut t = normal.begin("w")?;
            t.write_file("normal", b"not waiting")?;
            t.commit_recording("call", "{\"tool\":\"write\"}")?;
            normal
                .begin("w")?
                .commit_recording("call", "{\"tool\":\"read\"}")
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !calls.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let waited = !calls.is_finished();
        if waited {
            private.require_standby("");
        }
        calls.join().unwrap().unwrap();
        assert!(!waited, "a call's commit waited for the flush");
    });
    // One at a time (a write waiting for the standby holds the writer lock, which would hold
    // the next one up for the wrong reason), each given a generous look: they would wait for
    // ever.
    let waits = |what: &str, write: &(dyn Fn() -> burrow_store::Result<()> + Sync)| {
        std::thread::scope(|sc| {
            let w = sc.spawn(write);
            std::thread::sleep(Duration::from_millis(500));
            assert!(!w.is_finished(), "{what} did not wait for the flush");
            private.require_standby("");
            w.join().unwrap().unwrap();
        });
    };
    waits("a fork", &|| normal.fork("w", &["forked"]).map(|_| ()));
    private.require_standby("nobody");
    waits("a Full store's commit", &|| {
        let mut t = full.begin("w")?;
        t.write_file("full", b"waited")?;
        t.commit().map(|_| ())
    });
    let mut t = reopen(&url).begin("forked").unwrap();
    assert_eq!(t.read_file("normal").unwrap(), b"not waiting");
    let mut t = reopen(&url).begin("w").unwrap();
    assert_eq!(t.read_file("full").unwrap(), b"waited");
    assert!(reopen(&url).fsck().unwrap().is_clean());
}

/// A CA and a certificate it signed for `names`: (the CA's PEM, the certificate's PEM, its
/// key's PEM).
fn throwaway_ca(names: &[&str]) -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let leaf = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca_cert, &ca_key)
        .unwrap();
    (ca_cert.pem(), leaf.pem(), key.serialize_pem())
}

/// TLS to the database as libpq's `sslmode` and `sslrootcert` mean it, against a server
/// with a certificate for `localhost` (not for 127.0.0.1) from a throwaway CA: `prefer` (the
/// default) and `require` encrypt without checking the certificate unless given a root
/// file, with which they check the chain; `verify-ca` checks the chain, `verify-full` the
/// chain and the name; SCRAM channel binding works over it; and a server without TLS is refused where
/// TLS is required.
#[test]
fn sslmode_and_sslrootcert_mean_what_they_mean_to_libpq() {
    let Some(private) = pg::Private::start() else {
        return;
    };
    let (ca, cert, key) = throwaway_ca(&["localhost"]);
    let (other_ca, _, _) = throwaway_ca(&["localhost"]);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("root.pem");
    let other_file = dir.path().join("other-root.pem");
    std::fs::write(&ca_file, ca).unwrap();
    std::fs::write(&other_file, other_ca).unwrap();
    private.enable_tls(&cert, &key);
    // A role that must prove its password, over TLS or not (channel binding's case).
    private
        .server
        .psql("postgres", "CREATE ROLE cb LOGIN PASSWORD 'pw'")
        .unwrap();
    private.prepend_hba("host all cb 127.0.0.1/32 scram-sha-256");
    private.stop();
    private.restart();

    let port = private.server.port;
    let db = private
        .server
        .fresh_db()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    // How many of this database's connections (the store's pooled ones) use TLS, of all.
    let tls_of = |db: &str| -> String {
        private
            .server
            .psql(
                "postgres",
                &format!(
                    "SELECT count(*) FILTER (WHERE s.ssl) || '/' || count(*) FROM pg_stat_ssl s \
                     JOIN pg_stat_activity a USING (pid) WHERE a.datname = '{db}'"
                ),
            )
            .unwrap()
            .trim()
            .to_string()
    };
    let open = |host: &str, query: &str| -> Result<Store, Error> {
        let url = format!("postgres://burrow@{host}:{port}/{db}?{query}");
        let s = Store::open_postgres(&url, Options::default())?;
        s.workspaces()?;
        Ok(s)
    };
    let ca_path = ca_file.display();
    let other_path = other_file.display();
    for (host, query) in [
        ("127.0.0.1", ""),
        ("127.0.0.1", "sslmode=prefer"),
        ("127.0.0.1", "sslmode=require"),
        (
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={ca_path}"),
        ),
        (
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca_path}"),
        ),
        (
            "127.0.0.1",
            &format!("sslmode=require&sslrootcert={ca_path}"),
        ),
        ("127.0.0.1", &format!("sslrootcert={ca_path}")),
    ] {
        let s = open(host, query).unwrap_or_else(|e| panic!("{host} {query}: {e}"));
        let seen = tls_of(&db);
        assert!(
            !seen.starts_with("0/") && seen.split('/').next() == seen.split('/').nth(1),
            "{host} {query}: {seen} connections use TLS"
        );
        drop(s);
    }
    let s = open("127.0.0.1", "sslmode=disable").unwrap();
    let seen = tls_of(&db);
    assert!(seen.starts_with("0/"), "sslmode=disable: {seen}");
    drop(s);

    // The event listener's connection (made on the runtime, not by the pool) verifies too,
    // and is woken by another process's commit.
    let full = format!("sslmode=verify-full&sslrootcert={ca_path}");
    let watcher = open("localhost", &full).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    assert!(
        watcher
            .watch(std::sync::Arc::new(move || {
                let _ = tx.send(());
            }))
            .unwrap()
    );
    let wait = Duration::from_secs(20);
    rx.recv_timeout(wait).expect("a wake once it listens");
    let writer = open("localhost", &full).unwrap();
    writer.create_workspace("tls").unwrap();
    writer
        .append_event("tls", "note", None, None, "{}")
        .unwrap();
    rx.recv_timeout(wait).expect("woken over TLS");
    let seen = tls_of(&db);
    assert!(
        seen.split('/').next() == seen.split('/').nth(1),
        "listener and pool: {seen} use TLS"
    );
    drop((watcher, writer));

    // The certificate names localhost, not 127.0.0.1; the other CA signed nothing here.
    for (host, query, says) in [
        (
            "127.0.0.1",
            format!("sslmode=verify-full&sslrootcert={ca_path}"),
            "certificate not valid for name \"127.0.0.1\"",
        ),
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={other_path}"),
            "certificate",
        ),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca&sslrootcert={other_path}"),
            "certificate",
        ),
        (
            "127.0.0.1",
            format!("sslmode=require&sslrootcert={other_path}"),
            "certificate",
        ),
        // A root file makes `prefer` check the chain too (libpq's rule).
        (
            "127.0.0.1",
            format!("sslrootcert={other_path}"),
            "certificate",
        ),
        (
            "127.0.0.1",
            "sslmode=verify-full&sslrootcert=/nonexistent/root.pem".to_string(),
            "does not exist",
        ),
        ("127.0.0.1", "sslmode=allow".to_string(), "sslmode=allow"),
    ] {
        let err = open(host, &query).err().map(|e| e.to_string());
        let err = err.unwrap_or_else(|| panic!("{host} {query} connected"));
        assert!(err.contains(says), "{host} {query}: {err}");
    }

    // SCRAM with channel binding (hosted services' connection strings ask for it) needs TLS.
    private
        .server
        .psql("postgres", "CREATE DATABASE cb OWNER cb")
        .unwrap();
    let cb = |query: &str| {
        let url = format!("postgres://cb:pw@127.0.0.1:{port}/cb?{query}");
        Store::open_postgres(&url, Options::default()).and_then(|s| s.workspaces())
    };
    cb("sslmode=require&channel_binding=require").expect("channel binding over TLS");
    let err = cb("sslmode=disable&channel_binding=require").unwrap_err();
    assert!(err.to_string().contains("channel binding"), "{err}");
    assert!(matches!(err, Error::Server(_)), "{err}");
    let url = format!("postgres://cb:wrong@127.0.0.1:{port}/cb?sslmode=require");
    let err = Store::open_postgres(&url, Options::default()).err();
    assert!(err.is_some(), "a wrong password was accepted");

    // The shared test server has no TLS: required, it is refused; preferred, it is plain.
    let plain = pg::server().unwrap().fresh_db();
    let err = Store::open_postgres(&format!("{plain}?sslmode=require"), Options::default())
        .err()
        .map(|e| e.to_string())
        .expect("a server without TLS, sslmode=require");
    assert!(err.contains("TLS"), "{err}");
    Store::open_postgres(&plain, Options::default()).expect("prefer falls back to plain");
}
