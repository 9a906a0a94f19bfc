//! The PostgreSQL store through a real PgBouncer (`pgbouncer/mod.rs`, in front of the test
//! process's PostgreSQL, `pg/mod.rs`): every store operation's shared test (`cases/ops.rs`)
//! through it in transaction mode; then, in transaction mode and in session mode, what a
//! deployment does (sessions made, calls committed and read from several store handles at
//! once, as several processes, forks, GC, fsck, the event watcher) and the server sessions
//! each mode needed; and a URL without `pool_mode` in front of transaction pooling. Without
//! PgBouncer the tests skip with one line, unless `BURROW_REQUIRE_PGBOUNCER=1` (CI).

#![cfg(feature = "postgres")]

mod pg;
mod pgbouncer;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use burrow_store::Store;
use burrow_store::{
    ChangeKind, Errno, Error, EventFilter, Kind, OpenFlags, Options, Quota, ROOT_INO, Retention,
    SetTime,
};
use pgbouncer::Bouncer;

/// A fresh database through the shared PgBouncer in transaction mode (`pgbouncer/mod.rs`),
/// for the store operations' shared tests.
fn store() -> Option<(String, Store)> {
    let bouncer = pgbouncer::shared()?;
    let direct = pg::server()?.fresh_db();
    let url = bouncer.url(db_of(&direct), "pool_mode=transaction");
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

// Every store operation and error, through the pooler in transaction mode.
include!("cases/ops.rs");

fn db_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or_default()
}

/// Server sessions PostgreSQL has open on database `db`.
fn server_sessions(server: &pg::Server, db: &str) -> usize {
    server
        .psql(
            "postgres",
            &format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'"),
        )
        .expect("pg_stat_activity")
        .trim()
        .parse()
        .expect("a count")
}

/// Threads, each with a store handle of its own (as separate processes have).
const HANDLES: usize = 6;

/// What a deployment does, through `url`: sessions created, calls committed (with their
/// events) and read from [`HANDLES`] handles at once, forks, reads' events sent without
/// waiting, GC and fsck; then checks everything acknowledged is there.
fn workload(url: &str) {
    let s = Store::open_postgres(url, Options::default()).expect("open through the pooler");
    s.create_workspace("base").unwrap();
    let mut t = s.begin("base").unwrap();
    t.write_file("readme", b"shared base").unwrap();
    t.commit_with_event("call", "base").unwrap();
    let forks: Vec<String> = (0..HANDLES).map(|i| format!("fork{i}")).collect();
    let names: Vec<&str> = forks.iter().map(String::as_str).collect();
    s.fork("base", &names).unwrap();
    std::thread::scope(|sc| {
        for (i, name) in forks.iter().enumerate() {
            sc.spawn(move || {
                let h = Store::open_postgres(url, Options::default()).expect("open");
                for n in 0..15 {
                    // A write call: its commit and event.
                    let mut t = h.begin(name).unwrap();
                    t.write_file(&format!("f{n}"), format!("{i}/{n}").repeat(50).as_bytes())
                        .unwrap();
                    t.commit_with_event("call", &format!("{name} {n}")).unwrap();
                    // A read call: its reads, and its event sent without waiting.
                    let mut r = h.begin(name).unwrap();
                    assert_eq!(r.read_file("readme").unwrap(), b"shared base");
                    let v = h.workspace(name).unwrap().version;
                    h.record_event(name, "read", Some(v), Some(v), "{}")
                        .unwrap();
                    // And a read of the shared session, which all handles do at once.
                    let mut b = h.begin("base").unwrap();
                    assert_eq!(b.read_file("readme").unwrap(), b"shared base");
                }
                // Concurrent commits to one session: each lands or is a conflict.
                for n in 0..5 {
                    let mut t = h.begin("base").unwrap();
                    t.write_file(&format!("c{i}-{n}"), b"c").unwrap();
                    match t.commit_with_event("call", "c") {
                        Ok(_) | Err(Error::Conflict { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    // A fresh handle sees every acknowledged call, and every event.
    let check = Store::open_postgres(url, Options::default()).unwrap();
    for (i, name) in forks.iter().enumerate() {
        let mut t = check.begin(name).unwrap();
        for n in 0..15 {
            assert_eq!(
                t.read_file(&format!("f{n}")).unwrap(),
                format!("{i}/{n}").repeat(50).as_bytes()
            );
        }
        let events = check
            .events(&EventFilter {
                workspace: Some(name.clone()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(events.iter().filter(|e| e.kind == "call").count(), 15);
        assert_eq!(events.iter().filter(|e| e.kind == "read").count(), 15);
    }
    // GC while another handle commits, then fsck.
    check.delete_workspace("fork0").unwrap();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            for n in 0..10 {
                let mut t = s.begin("fork1").unwrap();
                t.write_file(&format!("during-gc{n}"), b"x").unwrap();
                t.commit().unwrap();
            }
        });
        check.gc(Retention::LastN(2), Duration::ZERO).unwrap();
    });
    let stats = check.gc(Retention::LastN(2), Duration::ZERO).unwrap();
    assert!(stats.versions_deleted > 0 || stats.objects_deleted > 0 || stats.bytes_freed > 0);
    let mut t = check.begin("fork1").unwrap();
    assert_eq!(t.read_file("during-gc9").unwrap(), b"x");
    assert!(check.fsck().unwrap().is_clean());
}

/// Whether a commit of `writer`'s wakes `watcher`'s watch (within 20 s); whether it watches.
fn watch_wakes(watcher: &Store, writer: &Store) -> (bool, bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    let watching = watcher
        .watch(std::sync::Arc::new(move || {
            let _ = tx.send(());
        }))
        .unwrap();
    if !watching {
        return (false, false);
    }
    let wait = Duration::from_secs(20);
    rx.recv_timeout(wait).expect("a wake once it listens");
    let mut t = writer.begin("base").unwrap();
    t.write_file("watched", b"1").unwrap();
    t.commit_with_event("call", "watched").unwrap();
    (true, rx.recv_timeout(wait).is_ok())
}

#[test]
fn the_store_works_through_pgbouncer_in_transaction_mode() {
    let Some(server) = pg::server() else { return };
    let pool_size = 3;
    let Some(bouncer) = Bouncer::start(server, "transaction", pool_size) else {
        return;
    };
    let direct = server.fresh_db();
    let db = direct.rsplit('/').next().unwrap().to_string();
    let url = bouncer.url(&db, "pool_mode=transaction");
    workload(&url);
    // Seven handles and more connections than that multiplexed onto the pool's sessions.
    let sessions = server_sessions(server, &db);
    eprintln!("transaction mode: {sessions} server sessions for {HANDLES} + 2 store handles");
    assert!(
        sessions <= pool_size as usize,
        "{sessions} server sessions, pool size {pool_size}"
    );
    // No LISTEN through it: the watcher says so, and streams poll.
    let a = Store::open_postgres(&url, Options::default()).unwrap();
    let b = Store::open_postgres(&url, Options::default()).unwrap();
    assert_eq!(watch_wakes(&a, &b), (false, false));
}

#[test]
fn the_store_works_through_pgbouncer_in_session_mode() {
    let Some(server) = pg::server() else { return };
    let Some(bouncer) = Bouncer::start(server, "session", 100) else {
        return;
    };
    let direct = server.fresh_db();
    let db = direct.rsplit('/').next().unwrap().to_string();
    let url = bouncer.url(&db, "sslmode=disable");
    workload(&url);
    let sessions = server_sessions(server, &db);
    eprintln!("session mode: {sessions} server sessions for {HANDLES} + 2 store handles");
    // A server session per client connection: at least one per handle that ran at once.
    assert!(sessions >= HANDLES, "{sessions} server sessions");
    // LISTEN works in session mode: another handle's commit wakes the watcher.
    let a = Store::open_postgres(&url, Options::default()).unwrap();
    let b = Store::open_postgres(&url, Options::default()).unwrap();
    assert_eq!(watch_wakes(&a, &b), (true, true));
}

/// A URL without `pool_mode` through a pooler in transaction mode: the first statement that
/// lands on a server session without the statements this connection prepared fails with an
/// error that says what to add to the URL, and from then on the process sends them
/// unprepared and works.
#[test]
fn a_lost_prepared_statement_names_pool_mode_and_later_calls_work() {
    let Some(server) = pg::server() else { return };
    let Some(bouncer) = Bouncer::start(server, "transaction", 2) else {
        return;
    };
    let direct = server.fresh_db();
    let db = direct.rsplit('/').next().unwrap().to_string();
    let url = bouncer.url(&db, "sslmode=disable");
    let s = Store::open_postgres(&url, Options::default()).unwrap();
    s.create_workspace("w").unwrap();
    // A call's lookup, prepared on the one server session there is.
    s.begin("w").unwrap();
    // Another client holds that session in a transaction, so the next statement goes to a
    // new one, which never saw it.
    let mut holder = Command::new(server.bin().join("psql"))
        .args(["-h", "127.0.0.1", "-p", &bouncer.port.to_string()])
        .args(["-U", "burrow", "-d", &db, "-qAt"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql");
    let mut stdin = holder.stdin.take().expect("psql's stdin");
    writeln!(stdin, "BEGIN; SELECT 'holding';").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().expect("psql's stdout"))
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "holding");
    let err = s
        .begin("w")
        .err()
        .expect("the statement is not on that session");
    assert!(matches!(err, Error::Server(_)), "{err}");
    assert!(err.to_string().contains("pool_mode=transaction"), "{err}");
    // From now on nothing is prepared: the same handle works, on either session.
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"after").unwrap();
    t.commit_with_event("call", "f").unwrap();
    writeln!(stdin, "COMMIT;").unwrap();
    drop(stdin);
    let _ = holder.wait();
    assert_eq!(s.begin("w").unwrap().read_file("f").unwrap(), b"after");
    assert!(s.fsck().unwrap().is_clean());
}

/// What a call costs through each path, printed (not asserted): read calls (the head's
/// query, a file read, the event sent without waiting) and write calls (a file written and
/// committed with its event), one handle calling back to back, directly with prepared
/// statements and without, and through PgBouncer in each mode. Run by hand (release build
/// for the numbers in docs/DEPLOY.md):
/// `cargo test --release -p burrow-store --features postgres --test pooler -- --ignored --nocapture`
#[test]
#[ignore]
fn calls_per_second_through_each_path() {
    let Some(server) = pg::server() else { return };
    let Some(transaction) = Bouncer::start(server, "transaction", 4) else {
        return;
    };
    let Some(session) = Bouncer::start(server, "session", 20) else {
        return;
    };
    let n = 2000;
    type Url<'a> = Box<dyn Fn(&str) -> String + 'a>;
    let paths: [(&str, Url); 4] = [
        (
            "direct, prepared",
            Box::new(|db| format!("{}?sslmode=disable", server.url(db))),
        ),
        (
            "direct, prepared_statements=off",
            Box::new(|db| format!("{}?sslmode=disable&prepared_statements=off", server.url(db))),
        ),
        (
            "PgBouncer session mode",
            Box::new(|db| session.url(db, "sslmode=disable")),
        ),
        (
            "PgBouncer transaction mode",
            Box::new(|db| transaction.url(db, "pool_mode=transaction")),
        ),
    ];
    for (name, url) in &paths {
        let direct = server.fresh_db();
        let s = Store::open_postgres(&url(db_of(&direct)), Options::default()).unwrap();
        s.create_workspace("w").unwrap();
        let mut t = s.begin("w").unwrap();
        t.write_file("f", b"content").unwrap();
        t.commit().unwrap();
        let started = std::time::Instant::now();
        for _ in 0..n {
            let mut t = s.begin("w").unwrap();
            t.read_file("f").unwrap();
            let v = s.workspace("w").unwrap().version;
            s.record_event("w", "read", Some(v), Some(v), "{}").unwrap();
        }
        let reads = n as f64 / started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        for i in 0..n {
            let mut t = s.begin("w").unwrap();
            t.write_file("g", format!("{i}").as_bytes()).unwrap();
            t.commit_with_event("call", "{}").unwrap();
        }
        let writes = n as f64 / started.elapsed().as_secs_f64();
        eprintln!("{name}: {reads:.0} read calls/s, {writes:.0} write calls/s");
    }
}
