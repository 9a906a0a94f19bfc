//! Failover of the PostgreSQL store: a primary and its streaming replica (two real servers
//! on 127.0.0.1, `pg/mod.rs`), and store handles (as processes) given both in one URL with
//! `target_session_attrs=read-write`. The primary stops, the replica is promoted, and the
//! same handles go on against it without being reopened: a call in flight fails cleanly and
//! changes nothing, later calls succeed.

#![cfg(feature = "postgres")]

mod pg;

use std::sync::Arc;
use std::time::Duration;

use burrow_store::{Error, EventFilter, Options, Store};

#[test]
fn handles_resume_against_a_promoted_replica_without_a_restart() {
    let Some(primary) = pg::Private::start() else {
        return;
    };
    let direct = primary.server.fresh_db();
    let db = direct.rsplit('/').next().unwrap().to_string();
    // The schema, before the replica is copied from the primary (as on a deployment).
    drop(Store::open_postgres(&direct, Options::default()).unwrap());
    let standby = pg::Private::standby_of(&primary.server);
    let url = format!(
        "postgres://burrow@127.0.0.1:{},127.0.0.1:{}/{db}?target_session_attrs=read-write\
         &connect_timeout=5",
        primary.server.port, standby.server.port
    );
    // The standby first in the URL: a connection skips it while it is read-only.
    let reversed = format!(
        "postgres://burrow@127.0.0.1:{},127.0.0.1:{}/{db}?target_session_attrs=read-write",
        standby.server.port, primary.server.port
    );
    let a = Store::open_postgres(&url, Options::default()).unwrap();
    let b = Store::open_postgres(&reversed, Options::default()).unwrap();
    a.create_workspace("w").unwrap();
    for i in 0..5 {
        let s = if i % 2 == 0 { &a } else { &b };
        let mut t = s.begin("w").unwrap();
        t.write_file(&format!("f{i}"), format!("before {i}").as_bytes())
            .unwrap();
        t.commit_with_event("call", &format!("f{i}")).unwrap();
    }
    b.fork("w", &["fork"]).unwrap();
    // A watcher, which must follow the failover too.
    let (tx, rx) = std::sync::mpsc::channel();
    assert!(
        b.watch(Arc::new(move || {
            let _ = tx.send(());
        }))
        .unwrap()
    );
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a wake once it listens");

    // A planned failover: the replica has everything, the primary stops.
    primary.wait_replayed(&standby);
    let mut in_flight = a.begin("w").unwrap();
    in_flight
        .write_file("in-flight", b"never committed")
        .unwrap();
    primary.stop();
    // With no primary, calls fail cleanly: the one in flight, and new ones (the replica
    // refuses to be a writer's server).
    let err = in_flight.commit().unwrap_err();
    assert!(matches!(err, Error::Server(_)), "{err}");
    let err = a.begin("w").err().expect("no server takes writes");
    assert!(matches!(err, Error::Server(_)), "{err}");
    eprintln!("before the promotion: {err}");
    assert!(err.to_string().contains("read-only"), "{err}");

    standby.promote();
    // The same handles, without reopening: every acknowledged call is there, the one in
    // flight is not, and new calls commit on the promoted server.
    for s in [&a, &b] {
        let mut t = s.begin("w").unwrap();
        for i in 0..5 {
            assert_eq!(
                t.read_file(&format!("f{i}")).unwrap(),
                format!("before {i}").as_bytes()
            );
        }
        assert!(t.read_file("in-flight").is_err());
    }
    while rx.try_recv().is_ok() {}
    let mut t = a.begin("w").unwrap();
    t.write_file("after", b"on the new primary").unwrap();
    t.commit_with_event("call", "after").unwrap();
    let mut t = b.begin("fork").unwrap();
    t.write_file("fork-after", b"x").unwrap();
    t.commit().unwrap();
    assert_eq!(
        b.begin("w").unwrap().read_file("after").unwrap(),
        b"on the new primary"
    );
    // The watcher reconnected to the promoted server and hears its commits.
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the watcher follows the failover");
    let events = b
        .events(&EventFilter {
            workspace: Some("w".into()),
            ..Default::default()
        })
        .unwrap();
    let calls: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(calls, ["f0", "f1", "f2", "f3", "f4", "after"]);
    assert_eq!(a.history("w", 100).unwrap().len(), 7);
    assert!(a.fsck().unwrap().is_clean());
}
