//! Crash consistency: a stream of tool calls (writes, multi-file shell commands, renames,
//! appends, forks), each in a child `burrow` process that is killed with SIGKILL at a random
//! moment. After the kills the store must pass `burrow fsck`; every call whose result was
//! reported before its kill must be present; no call may be half-applied.
//!
//! 200 kills by default; `BURROW_CRASH_KILLS=1000` (or more) for the long mode. The same
//! runs against PostgreSQL when it is installed.

use crate::common;
use crate::pg;
use crate::s3;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Rng;

use burrow_host::session::{Sandbox, SandboxConfig};

fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    Multi,
    Rename,
    Append,
    Fork,
}

const OPS: [Op; 5] = [Op::Write, Op::Multi, Op::Rename, Op::Append, Op::Fork];

fn args(op: Op, i: usize) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match op {
        Op::Write => s(&[
            "tool",
            "crash",
            "write",
            &format!(r#"{{"file_path":"acks/{i}.txt","content":"ack-{i}"}}"#),
        ]),
        Op::Multi => s(&[
            "sh",
            "crash",
            &format!(
                "mkdir -p multi/{i} && for j in $(seq 1 25); do echo {i} > multi/{i}/$j; done"
            ),
        ]),
        Op::Rename => s(&[
            "sh",
            "crash",
            &format!("mkdir -p mv/{i}/a && echo {i} > mv/{i}/a/f && mv mv/{i}/a mv/{i}/b"),
        ]),
        Op::Append => s(&["sh", "crash", &format!("echo {i} >> log.txt")]),
        Op::Fork => s(&["fork", "crash", "-n", "1"]),
    }
}

/// Checks the store against what was acknowledged; returns the number of forks found.
fn check(
    db: &Path,
    env: &[(&str, &str)],
    acked: &BTreeMap<usize, (Op, String)>,
    tried: &[(usize, Op)],
) -> usize {
    let fsck = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .envs(env.iter().copied())
        .env("BURROW_STORE", db)
        .arg("fsck")
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "fsck failed: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    let sb = Sandbox::open_with(
        db,
        SandboxConfig {
            cache_dir: Some(cache()),
            object_options: if env.is_empty() {
                Vec::new()
            } else {
                s3::options()
            },
            ..Default::default()
        },
    )
    .unwrap();
    let id = sb.resolve("crash").unwrap();
    let cat = |p: &str| sb.cat(&id, p).ok();
    let log = String::from_utf8(cat("log.txt").unwrap_or_default()).unwrap();
    let logged: Vec<usize> = log.lines().map(|l| l.parse().unwrap()).collect();
    let sessions: Vec<String> = sb.list().unwrap().into_iter().map(|s| s.id).collect();
    for &(i, op) in tried {
        let ok = acked.contains_key(&i);
        match op {
            Op::Write => {
                let got = cat(&format!("acks/{i}.txt"));
                if ok {
                    assert_eq!(
                        got.as_deref(),
                        Some(format!("ack-{i}").as_bytes()),
                        "acked write {i} lost"
                    );
                } else if let Some(g) = got {
                    assert_eq!(g, format!("ack-{i}").as_bytes(), "write {i} half-applied");
                }
            }
            Op::Multi => {
                let present = (1..=25)
                    .filter(|j| cat(&format!("multi/{i}/{j}")).is_some())
                    .count();
                assert!(
                    present == 0 || present == 25,
                    "call {i} half-applied: {present} of 25 files"
                );
                if ok {
                    assert_eq!(present, 25, "acked call {i} lost");
                }
            }
            Op::Rename => {
                let a = cat(&format!("mv/{i}/a/f")).is_some();
                let b = cat(&format!("mv/{i}/b/f")).is_some();
                assert!(!a, "rename {i} half-applied: the source is still there");
                if ok {
                    assert!(b, "acked rename {i} lost");
                }
            }
            Op::Append => {
                let n = logged.iter().filter(|&&x| x == i).count();
                assert!(n <= 1, "append {i} applied {n} times");
                if ok {
                    assert_eq!(n, 1, "acked append {i} lost");
                }
            }
            Op::Fork => {
                if let Some((_, out)) = acked.get(&i) {
                    let fork_id = out.trim();
                    assert!(
                        sessions.iter().any(|s| s == fork_id),
                        "acked fork {fork_id} lost"
                    );
                }
            }
        }
    }
    // Appends keep their order.
    let mut sorted = logged.clone();
    sorted.sort();
    assert_eq!(logged, sorted, "appends out of order");
    sessions.len() - 1
}

#[test]
fn sigkill_at_random_moments_never_loses_or_half_applies_a_call() {
    let kills: usize = std::env::var("BURROW_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    crash_run(&dir.path().join("s.db"), &[], kills);
}

/// The same on PostgreSQL (catalog and objects): a process killed mid-commit leaves the
/// database's transaction rolled back. 60 kills by default (`BURROW_CRASH_KILLS_PG`).
#[test]
fn sigkill_on_postgres_never_loses_or_half_applies_a_call() {
    let Some(server) = pg::server() else { return };
    let kills: usize = std::env::var("BURROW_CRASH_KILLS_PG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    crash_run(Path::new(&server.fresh_db()), &[], kills);
}

/// The same with the objects in a real S3-API server (moto) behind a local object cache: a
/// kill between the objects' upload and the catalog's commit leaves only unreferenced
/// objects. 20 kills by default (`BURROW_CRASH_KILLS_S3`).
#[test]
fn sigkill_on_postgres_and_object_storage_never_loses_or_half_applies_a_call() {
    let Some(pg) = pg::server() else { return };
    let Some(s3) = s3::server() else { return };
    let kills: usize = std::env::var("BURROW_CRASH_KILLS_S3")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let objects = s3.fresh_bucket();
    let cache_dir = tempfile::tempdir().unwrap();
    let mut env = s3::env().to_vec();
    env.push(("BURROW_OBJECTS", &objects));
    let cache_dir = cache_dir.path().to_str().unwrap().to_string();
    env.push(("BURROW_CACHE_DIR", &cache_dir));
    crash_run(Path::new(&pg.fresh_db()), &env, kills);
}

fn crash_run(db: &Path, env: &[(&str, &str)], kills: usize) {
    let burrow = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_burrow"));
        c.envs(env.iter().copied())
            .env("BURROW_STORE", db)
            .env("BURROW_CACHE", cache());
        c
    };
    let out = burrow()
        .args(["session", "new", "--name", "crash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // Warm the component cache so the kill window covers the calls themselves.
    let out = burrow()
        .args(["sh", "crash", "echo warm"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let calibrate = Instant::now();
    burrow().args(args(Op::Multi, 0)).output().unwrap();
    let window = calibrate.elapsed().as_micros() as u64 * 3 / 2;

    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut acked = BTreeMap::new();
    let mut tried = Vec::new();
    let (mut killed, mut completed) = (0, 0);
    let mut i = 1;
    while killed < kills {
        let op = OPS[(rng.next() % OPS.len() as u64) as usize];
        let mut child = burrow()
            .args(args(op, i))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Uniform over the later three quarters of a call: past start-up, into the work
        // and the commit.
        let delay = window / 4 + rng.next() % (window * 3 / 4).max(1);
        let deadline = Instant::now() + Duration::from_micros(delay);
        let mut exited = None;
        while Instant::now() < deadline {
            if let Some(s) = child.try_wait().unwrap() {
                exited = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        if exited.is_none() {
            let _ = child.kill(); // SIGKILL
        }
        let out = child.wait_with_output().unwrap();
        tried.push((i, op));
        if exited.is_some_and(|s| s.success()) {
            completed += 1;
            acked.insert(i, (op, String::from_utf8_lossy(&out.stdout).into_owned()));
        } else if exited.is_none() {
            killed += 1;
        }
        if i % 50 == 0 {
            check(db, env, &acked, &tried);
        }
        i += 1;
    }
    let forks = check(db, env, &acked, &tried);
    eprintln!(
        "crash harness: {} calls, {killed} killed with SIGKILL, {completed} acknowledged, {forks} forks; fsck clean, nothing lost or half-applied",
        tried.len()
    );
}
