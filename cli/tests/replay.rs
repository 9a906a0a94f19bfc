//! Deterministic sessions and `burrow replay`: a session created `--deterministic` whose
//! calls read the clock (`date`, `ls -l` times, python's `time.time()`), draw random numbers
//! (`$RANDOM`, `/dev/urandom`, python's `random`) and fetch from a server on 127.0.0.1 (`curl`,
//! python's `urllib`) replays identically, call for call and tree hash for tree hash, and
//! without reaching the server again (its answers change on every request, so a replay that
//! asked it would differ). An undo between calls is crossed (each call replays from the tree
//! it started from). A session that is not deterministic replays with its differences shown,
//! through the CLI with exit status 1.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burrow_host::session::{Family, ReplayRequest, Sandbox, SandboxConfig, Settings};
use serde_json::json;

/// A server whose every answer differs: `hit N` for its N-th request. Returns its port and
/// its count of requests.
fn counting_server() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicU64::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                }
                let body = format!("hit {n}\n");
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, hits)
}

/// The installed toolchains (python3), or None after saying so; required in CI.
fn toolchains() -> Option<PathBuf> {
    let dir = burrow_host::toolchain::default_dir();
    if dir.join("python/toolchain.json").is_file() {
        return Some(dir);
    }
    let msg = format!(
        "skipping the python calls: the python toolchain is not installed in {} (run: burrow toolchain install python)",
        dir.display()
    );
    if std::env::var("BURROW_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("{msg}; BURROW_REQUIRE_PYTHON=1");
    }
    println!("{msg}");
    None
}

fn sandbox(dir: &Path, toolchains: Option<PathBuf>) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            cache_dir: Some(match &toolchains {
                // Shared with the CLI: `toolchain install` compiled the interpreter into it.
                Some(_) => burrow_host::session::default_cache_dir(),
                None => common::cache(),
            }),
            toolchains,
            ..Default::default()
        },
    )
    .expect("sandbox")
}

fn text(out: &burrow_host::tools::ToolOutput) -> String {
    out.joined_text()
}

#[test]
fn a_deterministic_session_replays_identically_without_the_network() {
    let tmp = tempfile::tempdir().unwrap();
    let python = toolchains();
    let sb = sandbox(tmp.path(), python.clone());
    let (port, hits) = counting_server();
    let mut settings = Settings {
        deterministic: true,
        ..Default::default()
    };
    settings.net.allow(&[format!("127.0.0.1:{port}")]).unwrap();
    let id = sb.create_with(Some("det"), &settings).unwrap().id;
    assert!(sb.info(&id).unwrap().settings.deterministic);

    // The clock, the shell's random numbers, /dev/urandom, file times.
    let r = sb
        .sh(
            &id,
            "date +%s%N > t.txt; echo $RANDOM $RANDOM > r.txt; head -c 16 /dev/urandom | od -An -tx1 > u.txt; cat t.txt r.txt u.txt",
        )
        .unwrap();
    assert_eq!(r.report.exit_code, 0);
    let first = String::from_utf8_lossy(&r.report.stdout).into_owned();
    // A tool family's call (bash) and its file tools.
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({"command": "ls -l /workspace; date"}),
        )
        .unwrap();
    assert!(!out.is_error, "{}", text(&out));
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "write",
            &json!({"file_path": "notes.md", "content": "one\n"}),
        )
        .unwrap();
    assert!(!out.is_error, "{}", text(&out));
    // A call undone: the next call starts from the tree before it.
    common::sh(&sb, &id, "echo gone > gone.txt");
    sb.undo(&id).unwrap();
    // The network, through curl.
    let (code, fetched, err) = common::sh(
        &sb,
        &id,
        &format!("curl -sS http://127.0.0.1:{port}/a | tee c.txt"),
    );
    assert_eq!(code, 0, "{err}");
    assert!(fetched.starts_with("hit "), "{fetched}");
    // Python: random, the clock, urllib.
    if python.is_some() {
        let script = format!(
            "import random, time, urllib.request\n\
             print(random.random(), random.randint(1, 10**9), time.time())\n\
             print(urllib.request.urlopen('http://127.0.0.1:{port}/p').read().decode(), end='')\n"
        );
        sb.put_file(&id, "p.py", script.as_bytes()).unwrap();
        let (code, out, err) = common::sh(&sb, &id, "python3 p.py > p.txt; cat p.txt");
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("hit "), "{out}");
    }
    let recorded_hits = hits.load(Ordering::SeqCst);

    let report = sb
        .replay(&ReplayRequest {
            session: &id,
            from: None,
            into: Some("again"),
        })
        .unwrap();
    let calls = if python.is_some() { 6 } else { 5 }; // the undone call is a call too
    assert_eq!(report.calls.len(), calls, "{report:#?}");
    assert_eq!(report.differ, 0, "{report:#?}");
    assert_eq!(report.identical, calls);
    assert!(report.calls.iter().all(|c| c.deterministic));
    // The replay asked the server nothing: its answers came from the recording.
    assert_eq!(hits.load(Ordering::SeqCst), recorded_hits);
    // The fork holds what the session holds, byte for byte and time for time.
    let fork = sb.resolve("again").unwrap();
    assert_eq!(report.into, fork);
    for f in ["t.txt", "r.txt", "u.txt", "c.txt", "notes.md"] {
        assert_eq!(sb.cat(&fork, f).unwrap(), sb.cat(&id, f).unwrap(), "{f}");
    }
    let head = |s: &str| {
        let v = sb.store().workspace(s).unwrap().version;
        sb.store().version(v).unwrap().root
    };
    assert_eq!(head(&fork), head(&id));
    let (_, again, _) = common::sh(&sb, &fork, "cat t.txt r.txt u.txt");
    assert_eq!(again, first);

    // The fork's own calls were recorded as they were replayed: its replay is identical too.
    let twice = sb
        .replay(&ReplayRequest {
            session: &fork,
            from: None,
            into: None,
        })
        .unwrap();
    assert_eq!(twice.differ, 0, "{twice:#?}");
    assert_eq!(hits.load(Ordering::SeqCst), recorded_hits);
}

#[test]
fn replay_through_the_cli_shows_what_the_world_changed() {
    let cli = common::Cli::new();
    // Deterministic: identical, exit 0.
    let det = cli.ok(&["session", "new", "--name", "det-a", "--deterministic"]);
    let det = det.trim();
    cli.ok(&["sh", det, "date +%s%N > t.txt; echo $RANDOM"]);
    cli.ok(&["sh", det, "cat t.txt; ls -l"]);
    let (code, out, err) = cli.run(&["replay", det, "--into", "det-b"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("replayed 2 calls into ") && out.contains(": 2 identical, 0 differ"),
        "{out}"
    );
    // From the version the first call made: only the second call.
    let history: Vec<serde_json::Value> = cli
        .ok(&["--json", "history", det])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // (The second call only read: the newest version is the first call's.)
    let after_first = history[0]["version"].as_i64().expect("a version");
    let json: serde_json::Value = serde_json::from_str(&cli.ok(&[
        "--json",
        "replay",
        det,
        "--from",
        &format!("v{after_first}"),
    ]))
    .unwrap();
    assert_eq!(json["differ"], 0, "{json}");
    assert_eq!(json["calls"].as_array().map(Vec::len), Some(1), "{json}");

    // Not deterministic: the clock's answer differs, shown with the first difference; the
    // fork still holds the replayed tree.
    let plain = cli.ok(&["session", "new", "--name", "plain-a"]);
    let plain = plain.trim();
    cli.ok(&["sh", plain, "date +%s%N > t.txt"]);
    let (code, out, err) = cli.run(&["replay", plain, "--into", "plain-b"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("call 1 (event ") && out.contains("the tree differs: changed: t.txt"),
        "{out}"
    );
    assert!(out.contains(": 0 identical, 1 differ"), "{out}");
    // A name already taken is refused before anything runs.
    let (code, _, err) = cli.run(&["replay", plain, "--into", "plain-b"]);
    assert_ne!(code, 0);
    assert!(err.contains("plain-b"), "{err}");
}
