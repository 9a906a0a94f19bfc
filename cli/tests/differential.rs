//! Property test across layers: random sequences of shell tool calls, forks and aborted
//! (timed-out) calls run through the whole host (shell component, wasi:filesystem, store,
//! sessions), and the same sequence run by GNU bash and coreutils on a real temporary
//! directory. After every step the two trees must be identical (names, kinds, bytes).
//!
//! 40 random cases by default; `BURROW_DIFF_CASES=500` for more. The seed of a failing case
//! is printed so it can be replayed with `BURROW_DIFF_SEED`.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Rng;

use burrow_host::session::{Family, Sandbox, SandboxConfig};
use serde_json::json;

const DIRS: &[&str] = &["a", "b", "a/c", "b/d"];
const FILES: &[&str] = &["f1", "f2", "a/f3", "b/f4", "a/c/f5"];

/// One random shell command over a small namespace, so operations collide often.
fn random_command(rng: &mut Rng, step: usize) -> String {
    match rng.next() % 9 {
        0 => format!("mkdir -p {}", rng.pick(DIRS)),
        1 | 2 => format!(
            "mkdir -p {d} && printf 'step {step}\\n' > {f}",
            f = rng.pick(FILES),
            d = rng.pick(DIRS)
        ),
        3 => format!("echo line {step} >> {}", rng.pick(FILES)),
        4 => format!("rm -rf {}", rng.pick(&[DIRS, FILES].concat())),
        5 => format!(
            "mv {} {}",
            rng.pick(FILES),
            rng.pick(&[DIRS, FILES].concat())
        ),
        6 => {
            let (from, to) = (rng.pick(DIRS), rng.pick(&["a", "b", "e"]));
            // GNU cp's copy of a directory into itself stops or goes on depending on the
            // order the real file system lists the entries: no reference to compare with.
            if from == to {
                format!("cp -r {from} {to}2")
            } else {
                format!("cp -r {from} {to}")
            }
        }
        7 => format!("cp {} {}", rng.pick(FILES), rng.pick(FILES)),
        _ => format!("touch {} && rm -f {}", rng.pick(FILES), rng.pick(FILES)),
    }
}

/// relative path -> file bytes (or None for a directory), `.burrow` excluded.
fn snapshot(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".burrow" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .args(["-a", &format!("{}/.", from.display())])
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn run_case(seed: u64, sb: &Sandbox, work: &Path) -> usize {
    let mut rng = Rng(seed | 1);
    let steps = 8 + (rng.next() % 10) as usize;
    // Live sessions and their reference directories; operations go to the current one.
    let mut lives: Vec<(String, PathBuf)> = Vec::new();
    let id = sb.create(None).unwrap().id;
    let root = work.join(format!("ref-{seed}-0"));
    std::fs::create_dir_all(&root).unwrap();
    lives.push((id, root));
    let mut cur = 0;
    for step in 0..steps {
        let roll = rng.next() % 10;
        let what;
        if roll == 0 && lives.len() < 4 {
            // Fork: O(1) in burrow, a full copy for the reference.
            let (id, root) = lives[cur].clone();
            let fork = sb.fork(&id, 1).unwrap().pop().unwrap();
            let froot = work.join(format!("ref-{seed}-{}", lives.len()));
            std::fs::create_dir_all(&froot).unwrap();
            copy_tree(&root, &froot);
            lives.push((fork, froot));
            cur = lives.len() - 1;
            what = "fork".to_string();
        } else if roll == 1 {
            // Switch to another live session (forks must not have touched it).
            cur = (rng.next() % lives.len() as u64) as usize;
            what = format!("switch to {cur}");
        } else if roll == 2 {
            // An aborted call: writes, then times out; burrow rolls it back, the reference
            // never ran it.
            let (id, _) = &lives[cur];
            let out = sb
                .call(
                    id,
                    Family::AgentToolset,
                    "bash",
                    &json!({"command": "cd /workspace && echo junk > f1 && rm -rf a && while :; do :; done", "timeout_ms": 300}),
                )
                .unwrap();
            assert!(out.is_error, "the spin must time out");
            what = "aborted call".to_string();
        } else {
            let cmd = random_command(&mut rng, step);
            let (id, root) = &lives[cur];
            sb.sh(id, &format!("cd /workspace; {cmd}")).unwrap();
            Command::new("bash")
                .arg("-c")
                .arg(&cmd)
                .current_dir(root)
                .output()
                .unwrap();
            what = cmd;
        }
        for (n, (id, root)) in lives.iter().enumerate() {
            let exported = work.join(format!("export-{seed}"));
            let _ = std::fs::remove_dir_all(&exported);
            sb.export(id, &exported).unwrap();
            let (ours, theirs) = (snapshot(&exported), snapshot(root));
            if ours != theirs {
                let fmt = |m: &BTreeMap<String, Option<Vec<u8>>>| {
                    m.iter()
                        .map(|(k, v)| match v {
                            Some(b) => format!("{k}: {:?}", String::from_utf8_lossy(b)),
                            None => format!("{k}/"),
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                panic!(
                    "seed {seed}, step {step} ({what}), session {n}: trees differ\n--- burrow\n{}\n--- bash\n{}",
                    fmt(&ours),
                    fmt(&theirs)
                );
            }
        }
    }
    steps
}

#[test]
fn random_tool_call_sequences_match_bash_on_a_real_directory() {
    let cases: u64 = std::env::var("BURROW_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::open_with(
        dir.path().join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .unwrap();
    let seeds: Vec<u64> = match std::env::var("BURROW_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => vec![s],
        None => (0..cases).map(|c| 0x1000 + c * 7919).collect(),
    };
    let mut steps = 0;
    for seed in &seeds {
        steps += run_case(*seed, &sb, dir.path());
    }
    eprintln!(
        "differential: {} cases, {steps} steps, every tree identical to bash + coreutils",
        seeds.len()
    );
}
