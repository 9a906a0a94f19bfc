//! burrow on PostgreSQL, end to end: the real binary with `BURROW_STORE=postgres://...` on a
//! server the test starts (`workspace-store/tests/pg`), `burrow store migrate` from an
//! SQLite file, and two `burrow serve` processes (two machines, separate component caches)
//! serving one session alternately and concurrently, also with the objects in a real S3-API
//! server and a local object cache each. Skips with one line without PostgreSQL (or moto),
//! unless `BURROW_REQUIRE_POSTGRES=1` (`BURROW_REQUIRE_S3=1`).

use crate::common;
use crate::pg;
use crate::s3;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

fn cli(store: &str, args: &[&str]) -> (i32, String, String) {
    common::burrow_cli(Path::new(store), &common::cache(), args)
}

fn ok(store: &str, args: &[&str]) -> String {
    let (code, out, err) = cli(store, args);
    assert_eq!(code, 0, "burrow {args:?}: {out}{err}");
    out
}

#[test]
fn the_cli_on_postgres_and_a_migration_from_sqlite() {
    let Some(server) = pg::server() else { return };
    // Start on the embedded default, as a user upgrading would.
    let local = common::Cli::new();
    local.ok(&["session", "new", "--name", "proj"]);
    local.ok(&[
        "sh",
        "proj",
        "mkdir -p src && echo 'fn main() {}' > src/main.rs && echo notes > notes.md",
    ]);
    local.ok(&["sh", "proj", "echo more >> notes.md && cd src"]);
    local.ok(&["label", "proj", "baseline"]);
    let url = server.fresh_db();
    let migrate = [
        "store",
        "migrate",
        "--from",
        local.db.to_str().unwrap(),
        "--to",
        &url,
    ];
    let out = local.ok(&migrate);
    assert!(out.contains("copied 1 sessions"), "{out}");
    assert!(out.contains("clean:"), "{out}");
    // A second migration into the now full database is refused, and changes nothing.
    let (code, _, err) = local.run(&migrate);
    assert_ne!(code, 0);
    assert!(err.contains("not empty"), "{err}");

    // Every verb on the database.
    assert_eq!(
        ok(&url, &["sh", "proj", "pwd && cat ../notes.md"]),
        "/workspace/src\nnotes\nmore\n"
    );
    // A call that changes nothing adds no version: the history is the one copied.
    assert_eq!(
        ok(&url, &["history", "proj"]),
        ok(local.db.to_str().unwrap(), &["history", "proj"])
    );
    let fork = ok(&url, &["fork", "proj", "-n", "1"]).trim().to_string();
    ok(&url, &["sh", &fork, "echo experiment > ../exp.txt"]);
    let diff = ok(&url, &["diff", "proj", &fork]);
    assert!(diff.contains("exp.txt"), "{diff}");
    ok(&url, &["undo", &fork]);
    assert!(!ok(&url, &["diff", "proj", &fork]).contains("exp.txt"));
    let log = ok(&url, &["log", "proj", "--json"]);
    assert!(log.lines().count() >= 2, "{log}");
    ok(&url, &["session", "rm", &fork]);
    let gc = ok(&url, &["gc", "--grace", "0s"]);
    assert!(gc.starts_with("removed "), "{gc}");
    assert!(ok(&url, &["fsck"]).starts_with("clean:"));
    let (code, out, err) = cli(&url, &["sh", "proj", "exit 3"]);
    assert_eq!(code, 3, "{out}{err}");
    // A server that is not there: a clear error, no panic.
    let (code, _, err) = cli("postgres://burrow@127.0.0.1:1/none", &["session", "ls"]);
    assert_ne!(code, 0);
    assert!(err.contains("store server"), "{err}");
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

fn call(base: &str, session: &str, command: &str) -> (StatusCode, Value) {
    let r = client()
        .post(format!("{base}/sessions/{session}/call"))
        .json(&json!({"tool": "bash", "input": {"command": command}}))
        .send()
        .unwrap();
    let status = r.status();
    (status, r.json().unwrap_or(Value::Null))
}

fn text(v: &Value) -> String {
    v["content"][0]["text"].as_str().unwrap_or("").to_string()
}

/// Two `burrow serve` processes on one fresh database, and a session made through the first;
/// None without PostgreSQL.
fn two_servers(session: &str) -> Option<(String, common::Server, common::Server)> {
    let url = pg::server()?.fresh_db();
    let a = common::start(Path::new(&url), &[]);
    let b = common::start(Path::new(&url), &[]);
    let r = client()
        .post(format!("{}/sessions", a.base))
        .json(&json!({ "name": session }))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    Some((url, a, b))
}

#[test]
fn two_serve_processes_share_one_session() {
    let Some((url, a, b)) = two_servers("shared") else {
        return;
    };
    share_one_session(&url, a, b, &[]);
}

/// The same with the objects in a real S3-API server (moto) and a local object cache per
/// process: the first process names the bucket, the second finds it recorded in the store.
#[test]
fn two_serve_processes_with_their_own_caches_share_one_session_over_s3() {
    let Some(pg) = pg::server() else { return };
    let Some(s3) = s3::server() else { return };
    let (url, objects) = (pg.fresh_db(), s3.fresh_bucket());
    let (ca, cb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = s3::env();
    let a = common::start_env(
        Path::new(&url),
        &[
            "--objects",
            &objects,
            "--cache-dir",
            ca.path().to_str().unwrap(),
        ],
        &env,
    );
    let b = common::start_env(
        Path::new(&url),
        &["--cache-dir", cb.path().to_str().unwrap()],
        &env,
    );
    let r = client()
        .post(format!("{}/sessions", a.base))
        .json(&json!({ "name": "shared" }))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    // A fork made on one machine is used on the other.
    let (st, _) = call(&a.base, "shared", "echo base > base.txt");
    assert_eq!(st, StatusCode::OK);
    let r = client()
        .post(format!("{}/sessions/shared/fork", b.base))
        .json(&json!({ "n": 1 }))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let forked: Value = r.json().unwrap();
    let fork = forked["ids"][0].as_str().unwrap().to_string();
    let (st, out) = call(&a.base, &fork, "cat base.txt && echo more >> base.txt");
    assert_eq!(st, StatusCode::OK, "{out}");
    assert_eq!(text(&out), "base");
    let (_, out) = call(&b.base, &fork, "cat base.txt | wc -l");
    assert_eq!(text(&out).trim(), "2");
    share_one_session(&url, a, b, &env);
    // Both caches filled. The calls' small pages wait in the catalog until GC moves them
    // into the bucket, after which the session reads the same and fsck is clean.
    for c in [&ca, &cb] {
        let segments = std::fs::read_dir(c.path().join("s")).unwrap();
        let bytes: u64 = segments.map(|e| e.unwrap().metadata().unwrap().len()).sum();
        assert!(bytes > 0, "{}", c.path().display());
    }
    assert_eq!(s3.count(&objects), 0, "{:?}", s3.keys(&objects));
    let cli = |args: &[&str]| {
        let (code, out, err) =
            common::burrow_cli_env(Path::new(&url), &common::cache(), &env, args);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        out
    };
    let gc: Value = serde_json::from_str(&cli(&["--json", "gc", "--grace", "0s"])).unwrap();
    assert!(gc["pages_offloaded"].as_u64().unwrap() > 0, "{gc}");
    assert!(s3.count(&objects) > 0);
    assert!(cli(&["cat", "shared", "log.txt"]).ends_with("after\n"));
    assert!(cli(&["fsck"]).starts_with("clean:"));
}

fn share_one_session(url: &str, a: common::Server, b: common::Server, env: &[(&str, &str)]) {
    // Alternately: each machine sees the other's last call at once.
    for i in 0..6 {
        let (w, r) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let (st, out) = call(&w.base, "shared", &format!("echo {i} >> log.txt"));
        assert_eq!(st, StatusCode::OK, "{out}");
        let (_, out) = call(&r.base, "shared", "tail -1 log.txt");
        assert_eq!(text(&out), i.to_string());
    }
    // Concurrently: every call lands once (merged onto the head the other moved; a 409
    // would be retried), in some order, and none PUTs to the bucket.
    std::thread::scope(|sc| {
        for (n, s) in [&a, &b].into_iter().enumerate() {
            sc.spawn(move || {
                for i in 0..8 {
                    loop {
                        let (st, out) = call(&s.base, "shared", &format!("echo c{n}-{i} >> c.txt"));
                        if st == StatusCode::OK {
                            break;
                        }
                        assert_eq!(st, StatusCode::CONFLICT, "{out}");
                    }
                }
            });
        }
    });
    let (_, out) = call(&a.base, "shared", "sort c.txt | tr '\\n' ' '");
    let mut want: Vec<String> = (0..2)
        .flat_map(|n| (0..8).map(move |i| format!("c{n}-{i}")))
        .collect();
    want.sort();
    assert_eq!(text(&out).trim(), want.join(" "));
    // A process killed mid-call: the other carries on, the store stays clean.
    drop(a);
    let (st, _) = call(&b.base, "shared", "echo after >> log.txt");
    assert_eq!(st, StatusCode::OK);
    let (code, out, err) = common::burrow_cli_env(Path::new(url), &common::cache(), env, &["fsck"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("clean:"), "{out}");
}

#[test]
fn an_event_stream_on_one_process_wakes_for_a_call_on_another() {
    let Some((_url, a, b)) = two_servers("watched") else {
        return;
    };
    // The stream on A is idle (no events yet after `after`); without PostgreSQL's NOTIFY it
    // would look again only after 30 s, longer than this client waits for its first line.
    let after = {
        let r: Value = client()
            .get(format!("{}/sessions/watched/events?limit=1000", a.base))
            .send()
            .unwrap()
            .json()
            .unwrap();
        r["next_after"].as_i64().unwrap_or(0)
    };
    let stream = Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
        .get(format!(
            "{}/sessions/watched/events/stream?after={after}",
            a.base
        ))
        .send()
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    std::thread::sleep(Duration::from_millis(300));
    let (st, out) = call(&b.base, "watched", "echo from-b > f");
    assert_eq!(st, StatusCode::OK, "{out}");
    let mut event = None;
    for line in BufReader::new(stream).lines() {
        let line = line.expect("an event within 20 s: the NOTIFY from B woke A's stream");
        if let Some(name) = line.strip_prefix("event:") {
            event = Some(name.trim().to_string());
            break;
        }
    }
    assert!(event.is_some(), "the stream ended without an event");
}

/// `burrow bench --store postgres://... --objects s3://...` (quick sizes): every shared-store
/// row, each with its SQLite baseline from the same run, a fork that copies no object, and
/// the bench's sessions gone afterwards.
#[test]
fn bench_measures_the_shared_store_next_to_sqlite() {
    let Some(pg) = pg::server() else { return };
    let Some(s3) = s3::server() else { return };
    let (url, objects) = (pg.fresh_db(), s3.fresh_bucket());
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = common::burrow_cli_env(
        Path::new(&url),
        &common::cache(),
        &s3::env(),
        &[
            "--json",
            "--objects",
            &objects,
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "bench",
            "--quick",
            "--only",
            "shared",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for want in [
        "shared.resume.process_cold_cache",
        "shared.resume.process_warm_cache",
        "shared.session.read_4k",
        "shared.session.write_4k",
        "shared.session.write_4k_full",
        "shared.io.import_2MB",
        "shared.fork.8MiB",
        "shared.idle.catalog_bytes_per_session_200",
    ] {
        let row = rows
            .iter()
            .find(|r| r["name"] == want)
            .unwrap_or_else(|| panic!("no {want} in {names:?}"));
        assert!(row["median"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["baseline"].as_f64().unwrap() > 0.0, "{row}");
    }
    let fork = rows
        .iter()
        .find(|r| r["name"] == "shared.fork.8MiB")
        .unwrap();
    assert!(
        fork["note"]
            .as_str()
            .unwrap()
            .ends_with("objects copied: 0"),
        "{fork}"
    );
    // The bench's sessions are gone; the objects wait for GC.
    let (code, listed, err) = common::burrow_cli_env(
        Path::new(&url),
        &common::cache(),
        &s3::env(),
        &["--json", "session", "ls"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(listed.trim(), "", "{listed}");
    assert!(s3.count(&objects) > 0);
}

/// `--durability` reaches the store. With a synchronous standby required that never
/// connects, a commit that waits for the WAL flush waits for ever: a write call at the
/// default durability returns, one with `--durability full` waits until the standby is no
/// longer required, and then both writes are in the session.
#[test]
fn the_durability_flag_decides_whether_a_write_waits_for_the_flush() {
    let Some(private) = pg::Private::start() else {
        return;
    };
    let url = private.server.fresh_db();
    ok(&url, &["session", "new", "--name", "durable"]);
    let spawn = |durability: &str, cmd: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &url)
            .env("BURROW_CACHE", common::cache())
            .args(["--durability", durability, "sh", "durable", cmd])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // Polls for up to `secs`; the exit status if it ended.
    let ended = |child: &mut std::process::Child, secs: f64| {
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(secs);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    private.require_standby("nobody");
    let mut normal = spawn("normal", "echo normal > normal.txt");
    let status = ended(&mut normal, 60.0);
    if status.is_none() {
        private.require_standby("");
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "a write at the default durability waited for the flush ({status:?})"
    );
    let mut full = spawn("full", "echo full > full.txt");
    assert_eq!(
        ended(&mut full, 1.0),
        None,
        "--durability full did not wait"
    );
    private.require_standby("");
    assert!(ended(&mut full, 60.0).is_some_and(|s| s.success()));
    assert_eq!(
        ok(&url, &["sh", "durable", "cat normal.txt full.txt"]),
        "normal\nfull\n"
    );
}
