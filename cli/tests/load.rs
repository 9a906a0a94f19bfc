//! Load and concurrency: 100 sessions x 100 calls at once through `burrow serve` on loopback
//! (no errors; p50/p99 and the server's peak RSS printed), and two processes committing to
//! the same session (every call commits, every append lands, nothing corrupts).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")
}

fn peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

#[test]
fn hundred_sessions_times_hundred_calls_through_http() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", dir.path().join("s.db"))
        .env("BURROW_CACHE", cache())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().trim_start_matches("listening on ").to_string();
    let (sessions, calls) = (100usize, 100usize);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let (latencies, errors) = rt.block_on(async {
        let http = reqwest::Client::new();
        let mut ids = Vec::new();
        for _ in 0..sessions {
            let r: serde_json::Value = http
                .post(format!("{base}/sessions"))
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            ids.push(r["id"].as_str().unwrap().to_string());
        }
        let mut tasks = tokio::task::JoinSet::new();
        for id in ids {
            let (http, base) = (http.clone(), base.clone());
            tasks.spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0;
                for i in 0..calls {
                    let body = if i % 2 == 0 {
                        json!({"tool": "write", "input": {"file_path": format!("f{}.txt", i % 10), "content": format!("call {i}")}})
                    } else {
                        json!({"tool": "read", "input": {"file_path": format!("f{}.txt", (i - 1) % 10)}})
                    };
                    let t = Instant::now();
                    let r = http
                        .post(format!("{base}/sessions/{id}/call"))
                        .json(&body)
                        .send()
                        .await;
                    let ok = match r {
                        Ok(r) if r.status().is_success() => {
                            let v: serde_json::Value = r.json().await.unwrap_or_default();
                            v["is_error"] == false
                        }
                        _ => false,
                    };
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                    if !ok {
                        errors += 1;
                    }
                }
                (lat, errors)
            });
        }
        let mut all = Vec::new();
        let mut errors = 0;
        while let Some(r) = tasks.join_next().await {
            let (l, e) = r.unwrap();
            all.extend(l);
            errors += e;
        }
        (all, errors)
    });
    let took = started.elapsed();
    let rss = peak_rss_mib(server.id());
    let _ = server.kill();
    let _ = server.wait();
    let mut l = latencies;
    l.sort_by(|a, b| a.total_cmp(b));
    let pct = |q: f64| l[((l.len() - 1) as f64 * q) as usize];
    eprintln!(
        "load: {} calls in {:.1}s ({:.0}/s), errors {errors}, p50 {:.2} ms, p99 {:.2} ms, server peak RSS {rss:.0} MiB",
        l.len(),
        took.as_secs_f64(),
        l.len() as f64 / took.as_secs_f64(),
        pct(0.5),
        pct(0.99)
    );
    assert_eq!(errors, 0);
    assert_eq!(l.len(), sessions * calls);
    assert!(rss > 0.0 && rss < 2048.0, "server peak RSS {rss} MiB");
}

#[test]
fn two_processes_committing_to_one_session_never_corrupt_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let burrow = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", cache())
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        burrow(&["session", "new", "--name", "shared"])
            .status
            .success()
    );
    let rounds = 15;
    let results: Vec<(bool, String)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|p| {
                let burrow = &burrow;
                s.spawn(move || {
                    (0..rounds)
                        .map(|r| {
                            let out =
                                burrow(&["sh", "shared", &format!("echo p{p}-{r} >> log.txt")]);
                            (
                                out.status.success(),
                                String::from_utf8_lossy(&out.stderr).into_owned(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    // Every call commits (a call that finds the head moved merges onto it) and every
    // append lands, as on a filesystem.
    for (ok, err) in &results {
        assert!(ok, "a call failed: {err}");
    }
    let wins = results.len();
    let log = burrow(&["cat", "shared", "log.txt"]);
    let lines = String::from_utf8_lossy(&log.stdout).lines().count();
    assert_eq!(lines, wins, "every call's line is in the log");
    assert!(burrow(&["fsck"]).status.success());
    let merged = burrow(&["log", "shared", "--kind", "concurrent"]);
    eprintln!(
        "concurrency: {wins} calls from 2 processes, all committed, {} merged onto a moved head",
        String::from_utf8_lossy(&merged.stdout).lines().count()
    );
}
