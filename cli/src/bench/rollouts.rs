//! `burrow bench`'s rollout row: the evaluation / RL pattern. One prepared session (a
//! repository of many small source files), forked N times, and a script of 10 tool calls
//! (reads, an edit, a grep, a shell pipeline, a python one-liner when the python toolchain
//! is installed, else a shell computation) run in each fork, one thread per core. Reported:
//! rollouts per second, p50/p99 per call, and store bytes added per rollout; the baseline in
//! the same run is the same script against `cp -r` copies of the tree with native processes.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;

use super::{BenchError, Ctx, Measure, R, source_tree, stats};
use burrow_host::session::{Family, Sandbox, SandboxConfig};

/// The script each rollout runs: (tool, input) for burrow, and the native shell command
/// doing the same against a copy.
fn script(python: bool) -> Vec<(&'static str, serde_json::Value, String)> {
    let compute = if python {
        "python3 -c 'print(sum(i*i for i in range(1000)))'"
    } else {
        "echo $(( 999 * 1000 * 1999 / 6 ))"
    };
    vec![
        (
            "read",
            json!({"file_path": "src/m00/p00/f0.rs"}),
            "cat src/m00/p00/f0.rs".into(),
        ),
        (
            "read",
            json!({"file_path": "src/m01/p00/f1.rs"}),
            "cat src/m01/p00/f1.rs".into(),
        ),
        (
            "bash",
            json!({"command": "grep -rn TODO src | head -5"}),
            "grep -rn TODO src | head -5".into(),
        ),
        (
            "bash",
            json!({"command": "echo '// edited' >> src/m00/p00/f0.rs"}),
            "echo '// edited' >> src/m00/p00/f0.rs".into(),
        ),
        (
            "read",
            json!({"file_path": "src/m00/p00/f0.rs"}),
            "cat src/m00/p00/f0.rs".into(),
        ),
        (
            "bash",
            json!({"command": "ls src | wc -l"}),
            "ls src | wc -l".into(),
        ),
        (
            "bash",
            json!({"command": "cat src/m02/p00/f2.rs | sort | uniq -c | sort -rn | head -3"}),
            "cat src/m02/p00/f2.rs | sort | uniq -c | sort -rn | head -3".into(),
        ),
        ("bash", json!({"command": compute}), compute.to_string()),
        (
            "read",
            json!({"file_path": "src/m03/p00/f3.rs"}),
            "cat src/m03/p00/f3.rs".into(),
        ),
        (
            "bash",
            json!({"command": "git --version >/dev/null 2>&1; echo done"}),
            "echo done".into(),
        ),
    ]
}

pub(super) fn rollouts(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let rows = ["rollouts.per_second", "rollouts.bytes_per_rollout"];
    if !rows.iter().any(|r| cx.wants(r)) {
        return Ok(());
    }
    let (files, n) = if cx.cfg.quick {
        (1_000, 24)
    } else {
        (10_000, 1_000)
    };
    let threads = std::thread::available_parallelism().map_or(2, |p| p.get());
    let tree = cx.dir.path().join("rollout-tree");
    source_tree(&tree, files, 600)?;

    let toolchains = burrow_host::toolchain::default_dir();
    let python = toolchains.join("python/toolchain.json").is_file();
    let sb = Arc::new(Sandbox::open_with(
        cx.dir.path().join("rollouts.db"),
        SandboxConfig {
            cache_dir: Some(if python {
                burrow_host::session::default_cache_dir()
            } else {
                cx.cache.clone()
            }),
            toolchains: python.then(|| toolchains.clone()),
            compile_builtins: burrow_host::session::compile_builtins_from_env(),
            ..Default::default()
        },
    )?);
    let base = sb.create_from(Some("prepared"), &tree, &mut |_| {})?.id;
    let steps = script(python);
    // Warm: the components compiled and mapped before the clock starts.
    let warm = sb.fork(&base, 1)?;
    for (tool, input, _) in &steps {
        sb.call(&warm[0], Family::AgentToolset, tool, input)?;
    }
    sb.delete(&warm[0])?;

    let before = sb.store_bytes();
    let objects_before = object_bytes(&sb)?;
    let forks = sb.fork(&base, n)?;
    let next = AtomicUsize::new(0);
    let failures = AtomicUsize::new(0);
    let lat = Mutex::new(Vec::with_capacity(n * steps.len()));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (sb, forks, steps, next, failures, lat) =
                (&sb, &forks, &steps, &next, &failures, &lat);
            s.spawn(move || {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(id) = forks.get(i) else { break };
                    for (tool, input, _) in steps {
                        let t = Instant::now();
                        let ok = sb
                            .call(id, Family::AgentToolset, tool, input)
                            .is_ok_and(|o| !o.is_error);
                        mine.push(t.elapsed().as_secs_f64() * 1e3);
                        if !ok {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                lat.lock().unwrap_or_else(|e| e.into_inner()).extend(mine);
            });
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(BenchError::Other(format!("{failed} rollout calls failed")));
    }
    let file_added = sb.store_bytes().saturating_sub(before) as f64 / n as f64;
    let added = object_bytes(&sb)?.saturating_sub(objects_before) as f64 / n as f64;
    let rate = n as f64 / secs;
    let (p50, p99) = stats(lat.into_inner().unwrap_or_else(|e| e.into_inner()));
    let native = native_rate(cx, &tree, &steps, threads)?;
    let what = if python {
        "a python one-liner"
    } else {
        "a shell computation (no python toolchain installed)"
    };
    cx.record(
        "rollouts.per_second",
        "rollouts/s",
        (rate, rate),
        native,
        &format!(
            "{n} forks of a {files}-file session x 10 calls (3 reads, an edit, a grep, pipelines, {what}) on {threads} threads; per call p50 {p50:.2} ms, p99 {p99:.2} ms; baseline: the same script with native processes on `cp -r` copies"
        ),
        report,
    );
    cx.record(
        "rollouts.bytes_per_rollout",
        "bytes",
        (added, added),
        None,
        &format!(
            "objects (pages and tree nodes) added per rollout that edits one file; the SQLite file and its WAL grew {file_added:.0} bytes per rollout (version rows, the ten calls' events with their outputs, WAL not yet checkpointed)"
        ),
        report,
    );
    Ok(())
}

/// Bytes of the store's objects: pages and tree nodes.
fn object_bytes(sb: &Sandbox) -> R<u64> {
    let s = sb
        .store()
        .stats()
        .map_err(|e| BenchError::Other(e.to_string()))?;
    Ok(s.page_bytes + s.node_bytes)
}

/// Rollouts per second of the same script as native processes (`bash -c`) over `cp -r`
/// copies of the tree, the copy included, on as many threads; None without bash.
fn native_rate(
    cx: &Ctx,
    tree: &Path,
    steps: &[(&'static str, serde_json::Value, String)],
    threads: usize,
) -> R<Option<f64>> {
    if Command::new("bash").arg("-c").arg("true").output().is_err() {
        return Ok(None);
    }
    let n = if cx.cfg.quick { 8 } else { 40 };
    let copies = cx.dir.path().join("rollout-copies");
    std::fs::create_dir_all(&copies)?;
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let failed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (next, failed, copies) = (&next, &failed, &copies);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let dest = copies.join(i.to_string());
                    let ok = Command::new("cp")
                        .arg("-r")
                        .arg(tree)
                        .arg(&dest)
                        .status()
                        .is_ok_and(|s| s.success());
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    for (_, _, cmd) in steps {
                        let _ = Command::new("bash")
                            .arg("-c")
                            .arg(cmd)
                            .current_dir(&dest)
                            .output();
                    }
                    let _ = std::fs::remove_dir_all(&dest);
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(BenchError::Other("cp -r failed".into()));
    }
    Ok(Some(n as f64 / started.elapsed().as_secs_f64()))
}
