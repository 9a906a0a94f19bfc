//! Differential test of burrow's shell against GNU bash and coreutils on this machine: every
//! snippet of fixtures/shell-corpus.sh runs on the same starting tree once under `bash -c` in a
//! temporary directory and once through `burrow`'s shell in a fork of a session; stdout,
//! stderr (normalised only for bash's `line N:` prefix and the directory's path), the exit
//! code and the resulting tree must agree. Known differences are listed, with a reason each,
//! in fixtures/shell-known-differences.txt; the pass rate is printed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use burrow_host::session::{Sandbox, SandboxConfig};

use crate::common;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The corpus's snippets: (name, body). A header `### NAME needs:TOOL` marks a snippet
/// whose reference needs TOOL installed next to bash (bc is not on every machine).
fn corpus() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("fixtures/shell-corpus.sh")).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            out.push((name.trim().to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(line);
        }
    }
    out
}

fn known() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root().join("fixtures/shell-known-differences.txt"))
        .unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once(':')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        })
        .collect()
}

fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if rel == ".burrow" {
                continue;
            }
            if p.is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).ok());
            }
        }
    }
    out
}

fn normalize(s: &[u8], dir: &str) -> String {
    let s = String::from_utf8_lossy(s).replace(dir, "/workspace");
    let re = regex::Regex::new(r"bash: line \d+: ").unwrap();
    re.replace_all(&s, "bash: ").into_owned()
}

#[test]
fn shell_agrees_with_gnu_bash() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no bash on this machine");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let status = Command::new("cp")
        .arg("-a")
        .arg(root().join("fixtures/sample-repo"))
        .arg(&base)
        .status()
        .unwrap();
    assert!(status.success());
    let sb = Sandbox::open_with(
        tmp.path().join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .unwrap();
    let base_session = sb.create_from(None, &base, &mut |_| {}).unwrap();
    let known = known();
    let corpus = corpus();
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut known_passing = Vec::new();
    let mut missing: BTreeMap<String, usize> = BTreeMap::new();
    for (header, snippet) in &corpus {
        let mut words = header.split_whitespace();
        let name = &words.next().unwrap_or_default().to_string();
        if let Some(tool) = words.find_map(|w| w.strip_prefix("needs:")) {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .output()
                .is_ok_and(|o| o.status.success());
            if !found {
                assert!(
                    std::env::var_os("BURROW_REQUIRE_REFERENCE").is_none(),
                    "{tool} is required (BURROW_REQUIRE_REFERENCE) for snippet {name}"
                );
                *missing.entry(tool.to_string()).or_default() += 1;
                continue;
            }
        }
        let dir = tmp.path().join(format!("bash-{name}"));
        Command::new("cp")
            .arg("-a")
            .arg(&base)
            .arg(&dir)
            .status()
            .unwrap();
        let dir = dir.canonicalize().unwrap();
        // The sandbox's $HOME is its own empty directory, outside the project.
        let home = tmp.path().join(format!("home-{name}"));
        std::fs::create_dir(&home).unwrap();
        let real = common::reference_bash()
            .arg("-c")
            .arg(snippet)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &home)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let dir_s = dir.to_string_lossy().into_owned();
        let want = (
            normalize(&real.stdout, &dir_s),
            normalize(&real.stderr, &dir_s),
            real.status.code().unwrap_or(-1),
            tree(&dir),
        );
        let fork = sb.fork(&base_session.id, 1).unwrap().remove(0);
        let got = match sb.sh(&fork, snippet) {
            Ok(r) => {
                let out = tmp.path().join(format!("burrow-{name}"));
                sb.export(&fork, &out).unwrap();
                (
                    normalize(&r.report.stdout, "/workspace"),
                    normalize(&r.report.stderr, "/workspace"),
                    r.report.exit_code,
                    tree(&out),
                )
            }
            Err(e) => (
                String::new(),
                format!("burrow error: {e}"),
                -1,
                BTreeMap::new(),
            ),
        };
        let same = want == got;
        if same {
            passed += 1;
            if known.contains_key(name) {
                known_passing.push(name.clone());
            }
        } else if !known.contains_key(name) {
            let trees = if want.3 == got.3 { "same" } else { "DIFFERENT" };
            failures.push(format!(
                "--- {name}: {snippet}\n bash:   out={:?} err={:?} status={}\n burrow: out={:?} err={:?} status={}\n trees: {trees}",
                want.0, want.1, want.2, got.0, got.1, got.2
            ));
        }
    }
    eprintln!(
        "shell corpus: {passed}/{} snippets identical to GNU bash ({:.1}%); {} known differences listed",
        corpus.len() - missing.values().sum::<usize>(),
        100.0 * passed as f64 / (corpus.len() - missing.values().sum::<usize>()).max(1) as f64,
        known.len()
    );
    for (tool, n) in &missing {
        println!("SKIPPED {n} snippets that need {tool}: install {tool} (apt-get install {tool})");
    }
    if !known_passing.is_empty() {
        eprintln!(
            "listed as different but now passing: {}",
            known_passing.join(", ")
        );
    }
    assert!(
        failures.is_empty(),
        "{} unexpected differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
