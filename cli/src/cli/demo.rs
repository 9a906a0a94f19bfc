//! `burrow demo`: the seed scenario, offline, on the sample repository in fixtures/ (embedded
//! in the binary). A session is created from the repository ("clone"), a scripted agent
//! explores it and writes an analysis, the process exits, a new process resumes the session,
//! the finished analysis forks three ways, each fork gets a different refactoring, and the
//! forks are compared. Prints what happened and a table of timings and sizes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use burrow_host::Family;
use burrow_host::session::Sandbox;
use serde_json::{Value, json};

static SAMPLE_REPO: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sample-repo.tar"));

struct Timings {
    calls: Vec<(String, Duration)>,
}

impl Timings {
    fn call(&mut self, sb: &Sandbox, id: &str, tool: &str, input: Value) -> anyhow::Result<String> {
        let t = Instant::now();
        let out = sb.call(id, Family::AgentToolset, tool, &input)?;
        self.calls.push((tool.to_string(), t.elapsed()));
        let text = out.joined_text();
        if out.is_error {
            bail!("{tool} failed: {text}");
        }
        Ok(text)
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

pub fn run(keep: Option<PathBuf>, json_out: bool) -> anyhow::Result<ExitCode> {
    let tmp = tempfile::tempdir()?;
    let dir = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let store_path = dir.join("demo.db");
    let _ = std::fs::remove_file(&store_path);
    let say = |s: &str| {
        if !json_out {
            outln!("{s}");
        }
    };

    say("== day 1: clone a repository into a new session");
    let t = Instant::now();
    let sb = super::Config::local(&store_path)?.open(false)?;
    let repo = tmp.path().join("sample-repo.tar");
    std::fs::write(&repo, SAMPLE_REPO)?;
    let session = sb.create_from(Some("analysis"), &repo, &mut |_| {})?;
    let clone_time = t.elapsed();
    say(&format!(
        "   session {} ('analysis'): {} entries, {} bytes, in {}",
        session.id,
        session.entries,
        session.bytes,
        ms(clone_time)
    ));
    let id = session.id.clone();

    say("== the agent explores (agent_toolset tool calls)");
    let mut tm = Timings { calls: Vec::new() };
    // The first call loads the shell component (compiled once, then cached on disk).
    let t = Instant::now();
    let listing = tm.call(&sb, &id, "bash", json!({ "command": "ls" }))?;
    let first_call = t.elapsed();
    say(&format!(
        "   bash: ls -> {} entries",
        listing.lines().count()
    ));
    // The file tools are another component, loaded on their first call.
    let py = tm.call(&sb, &id, "glob", json!({ "pattern": "**/*.py" }))?;
    say(&format!("   glob **/*.py -> {} files", py.lines().count()));
    // Per-call medians below are of warm calls.
    tm.calls.clear();
    let found = tm.call(
        &sb,
        &id,
        "bash",
        json!({ "command": "find . -name '*.py' | wc -l" }),
    )?;
    say(&format!(
        "   bash: find . -name '*.py' | wc -l -> {}",
        found.trim()
    ));
    let md = tm.call(&sb, &id, "glob", json!({ "pattern": "**/*.md" }))?;
    say(&format!("   glob **/*.md -> {} files", md.lines().count()));
    let readme = tm.call(&sb, &id, "read", json!({ "file_path": "README.md" }))?;
    say(&format!(
        "   read README.md -> {} lines",
        readme.lines().count()
    ));
    let ledger = tm.call(
        &sb,
        &id,
        "read",
        json!({ "file_path": "/workspace/src/tinyledger/ledger.py", "view_range": [1, 12] }),
    )?;
    say(&format!(
        "   read ledger.py lines 1-12 -> {} lines",
        ledger.lines().count()
    ));
    let todos = tm.call(&sb, &id, "grep", json!({ "pattern": "TODO" }))?;
    let todo_lines: Vec<&str> = todos.lines().collect();
    say(&format!("   grep TODO -> {} hits", todo_lines.len()));
    let tests = tm.call(
        &sb,
        &id,
        "grep",
        json!({ "pattern": "^def test_", "path": "tests" }),
    )?;
    let mut analysis = String::from("# Analysis of tinyledger\n\n");
    analysis.push_str(&format!(
        "- {} Python files, {} tests.\n- {} TODOs:\n",
        py.lines().count(),
        tests.lines().count(),
        todo_lines.len()
    ));
    for l in &todo_lines {
        let mut parts = l.splitn(3, ':');
        let (path, line, text) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        analysis.push_str(&format!(
            "  - {}:{} {}\n",
            path.trim_start_matches("/workspace/"),
            line,
            text.trim().trim_start_matches("# ")
        ));
    }
    analysis.push_str("\nExperiments worth trying: Decimal precision checks, file-order parsing, a real CLI parser.\n");
    tm.call(
        &sb,
        &id,
        "write",
        json!({ "file_path": "/workspace/analysis.md", "content": analysis }),
    )?;
    say("   write /workspace/analysis.md");
    drop(sb);

    say("== the process exits; the session costs nothing but its rows in the store");
    say("== next morning: a new process resumes the session");
    let exe = std::env::current_exe()?;
    let mut resumes = Vec::new();
    let mut resumed_text = String::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = std::process::Command::new(&exe)
            .arg("--store")
            .arg(&store_path)
            .args([
                "tool",
                "analysis",
                "read",
                r#"{"file_path":"analysis.md","view_range":[1,3]}"#,
            ])
            .output()
            .context("cannot start a new burrow process")?;
        resumes.push(t.elapsed());
        if !out.status.success() {
            bail!("resume failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        resumed_text = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    let resume = median(resumes);
    say(&format!(
        "   fresh process -> first read: {} (median of 5); analysis.md begins {:?}",
        ms(resume),
        resumed_text.lines().next().unwrap_or("")
    ));

    let sb = super::Config::local(&store_path)?.open(false)?;
    say("== fork the finished analysis into three experiments");
    let t = Instant::now();
    let forks = sb.fork(&id, 3)?;
    let fork_time = t.elapsed();
    say(&format!(
        "   3 forks in {}: {}",
        ms(fork_time),
        forks.join(", ")
    ));
    let experiments: [(&str, Vec<(&str, Value)>); 3] = [
        (
            "exact amounts",
            vec![(
                "edit",
                json!({ "file_path": "src/tinyledger/accounts.py",
                        "old_string": "        # TODO: reject amounts with more than two decimal places\n",
                        "new_string": "        if amount != amount.quantize(Decimal(\"0.01\")):\n            raise ValueError(f\"too many decimals: {amount}\")\n" }),
            )],
        ),
        (
            "keep file order",
            vec![(
                "edit",
                json!({ "file_path": "src/tinyledger/parser.py",
                        "old_string": "    # TODO: keep the file order instead of sorting by id\n    return [txns[k] for k in sorted(txns)]",
                        "new_string": "    return list(txns.values())" }),
            )],
        ),
        (
            "argparse cli",
            vec![
                (
                    "edit",
                    json!({ "file_path": "src/tinyledger/cli.py",
                            "old_string": "import sys\n", "new_string": "import argparse\nimport sys\n" }),
                ),
                (
                    "write",
                    json!({ "file_path": "docs/cli.md",
                            "content": "# CLI\n\n`tinyledger report FILE` and `tinyledger register FILE ACCOUNT`.\n" }),
                ),
            ],
        ),
    ];
    for (fork, (what, calls)) in forks.iter().zip(experiments.iter()) {
        for (tool, input) in calls {
            tm.call(&sb, fork, tool, input.clone())?;
        }
        say(&format!("   {fork}: {what}"));
    }

    say("== compare the experiments");
    let mut diff_rows = Vec::new();
    for fork in &forks {
        let (_, _, changes) = sb.diff(&id, fork)?;
        let paths: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
        say(&format!("   analysis..{fork}: {}", paths.join(", ")));
        diff_rows.push(json!({ "fork": fork, "changed": paths }));
    }
    let (_, _, ab) = sb.diff(&forks[0], &forks[1])?;
    say(&format!(
        "   {}..{}: {}",
        forks[0],
        forks[1],
        ab.iter()
            .map(|c| c.path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));

    let stats = sb.store().stats()?;
    let logical: u64 = std::iter::once(&id)
        .chain(forks.iter())
        .map(|s| sb.info(s).map(|i| i.bytes).unwrap_or(0))
        .sum();
    let per_tool = |name: &str| {
        median(
            tm.calls
                .iter()
                .filter(|(t, _)| t == name)
                .map(|(_, d)| *d)
                .collect(),
        )
    };
    let rows = [
        ("clone (import sample repo)", ms(clone_time)),
        (
            "first tool call (loads the shell component)",
            ms(first_call),
        ),
        ("bash, median", ms(per_tool("bash"))),
        ("read, median", ms(per_tool("read"))),
        ("grep, median", ms(per_tool("grep"))),
        ("glob, median", ms(per_tool("glob"))),
        ("edit, median", ms(per_tool("edit"))),
        ("write, median", ms(per_tool("write"))),
        ("resume: new process -> first read, median of 5", ms(resume)),
        ("fork x3", ms(fork_time)),
        (
            "store file size",
            format!("{} KiB", stats.file_bytes / 1024),
        ),
        ("file bytes across the 4 sessions", format!("{logical} B")),
        (
            "unique page bytes stored",
            format!("{} B", stats.page_bytes),
        ),
        (
            "bytes shared between forks",
            format!("{} B", logical.saturating_sub(stats.page_bytes)),
        ),
    ];
    if json_out {
        let table: serde_json::Map<String, Value> = rows
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        outln!(
            "{}",
            json!({ "session": id, "forks": forks, "diffs": diff_rows, "table": table })
        );
    } else {
        outln!("== results");
        for (k, v) in rows {
            outln!("   {k:<48} {v:>12}");
        }
        outln!("   store: {}", store_path.display());
    }
    let report = sb.store().fsck()?;
    if !report.is_clean() {
        bail!("fsck found problems: {:?}", report.problems);
    }
    Ok(ExitCode::SUCCESS)
}
