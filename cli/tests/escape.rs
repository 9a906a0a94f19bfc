//! The escape corpus: hostile inputs through every interface (shell commands, the three tool
//! families, guest components, the CLI), each with the clear error it must get. After every
//! case the host is still up, the next call works, and a failed case left the workspace
//! exactly as it was (no new version, or an identical tree).

use crate::common;

use std::path::Path;
use std::process::Command;

use burrow_host::RunOptions;
use burrow_host::session::{Family, Sandbox, SandboxConfig, Settings};
use serde_json::{Value, json};

/// A sandbox with a small output limit, so floods end quickly.
fn sandbox(dir: &Path) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            limits: burrow_host::Limits {
                output: 2 << 20,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap()
}

/// What a case must produce: every listed fragment in its error text.
enum Via {
    Sh(&'static str),
    Tool(Family, &'static str, Value),
    Probe(&'static str),
}

struct Case {
    name: &'static str,
    via: Via,
    expect: &'static [&'static str],
    /// The case may legitimately change the tree (e.g. a failed shell command after a
    /// successful one); by default nothing may change.
    changes_ok: bool,
}

const fn sh(name: &'static str, cmd: &'static str, expect: &'static [&'static str]) -> Case {
    Case {
        name,
        via: Via::Sh(cmd),
        expect,
        changes_ok: false,
    }
}

fn tool(
    name: &'static str,
    f: Family,
    t: &'static str,
    input: Value,
    expect: &'static [&'static str],
) -> Case {
    Case {
        name,
        via: Via::Tool(f, t, input),
        expect,
        changes_ok: false,
    }
}

/// The output text (stdout + stderr, or the error) of a case.
fn run_case(sb: &Sandbox, id: &str, via: &Via, probe: &[u8]) -> String {
    match via {
        Via::Sh(cmd) => match sb.sh(id, cmd) {
            Ok(r) => format!(
                "{}{}[exit {}]",
                String::from_utf8_lossy(&r.report.stdout),
                String::from_utf8_lossy(&r.report.stderr),
                r.report.exit_code
            ),
            Err(e) => format!("error: {e}"),
        },
        Via::Tool(f, t, input) => match sb.call(id, *f, t, input) {
            Ok(o) => format!("{}[is_error {}]", o.joined_text(), o.is_error),
            Err(e) => format!("error: {e}"),
        },
        Via::Probe(arg) => {
            let opts = RunOptions {
                program_name: "fs-probe".into(),
                args: vec![arg.to_string()],
                limits: burrow_host::Limits {
                    timeout: std::time::Duration::from_secs(2),
                    memory: 64 << 20,
                    output: 2 << 20,
                    ..Default::default()
                },
                ..Default::default()
            };
            match sb.run(id, probe, &opts) {
                Ok(r) => format!(
                    "{}{}",
                    String::from_utf8_lossy(&r.report.stdout),
                    String::from_utf8_lossy(&r.report.stderr)
                ),
                Err(e) => format!("error: {e}"),
            }
        }
    }
}

fn long_name(n: usize) -> String {
    "n".repeat(n)
}

#[test]
fn escape_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path());
    let probe = std::fs::read(common::guest("fs-probe")).unwrap();
    let settings = Settings {
        timeout_ms: Some(2_000),
        memory_mib: Some(64),
        ..Default::default()
    };
    let id = sb.create_with(Some("target"), &settings).unwrap().id;
    sb.sh(
        &id,
        "mkdir -p src && echo 'fn main() {}' > src/main.rs && echo secret-notes > notes.md",
    )
    .unwrap();
    let quota_id = sb.create(Some("small")).unwrap().id;
    sb.store()
        .set_quota(
            &quota_id,
            burrow_store::Quota {
                bytes: Some(64 * 1024),
                entries: Some(200),
            },
        )
        .unwrap();

    let long = long_name(300);
    let deep = "d/".repeat(3000);
    let a = Family::AgentToolset;
    let c = Family::ClaudeCode;
    let api = Family::Api;
    let mut cases = vec![
        // Traversal and host paths, from the shell.
        sh(
            "dotdot read",
            "cat ../../etc/passwd",
            &["Permission denied"],
        ),
        sh(
            "dotdot from subdir",
            "(cd src && cat ../../../../etc/shadow)",
            &["Permission denied"],
        ),
        // The sandbox's own /etc, never the host's (which has no user `agent`).
        sh(
            "absolute host path",
            "cat /etc/passwd",
            &["agent:x:1000:1000:agent:/home/agent:/bin/bash"],
        ),
        // `/` is the composed root: its mounts and computed directories, nothing of the host.
        sh(
            "list root",
            "ls /",
            &[
                "[exit 0]",
                "bin\ndev\netc\nhome\nmemories\nrun\ntmp\nusr\nworkspace\n[exit",
            ],
        ),
        sh("cd root", "(cd / && pwd)", &["/\n[exit 0]"]),
        sh(
            "cd up",
            "(cd /workspace && cd .. && ls)",
            &["bin\ndev\netc\nhome\nmemories\nrun\ntmp\nusr\nworkspace\n[exit"],
        ),
        sh(
            "write outside",
            "echo x > ../escape.txt",
            &["Permission denied"],
        ),
        sh("mkdir outside", "mkdir ../../x", &["Permission denied"]),
        sh(
            "cp outside",
            "cp notes.md ../stolen.md",
            &["Permission denied"],
        ),
        sh(
            "mv outside",
            "mv notes.md /etc/notes.md",
            &["Permission denied"],
        ),
        sh(
            "proc environ",
            "cat /proc/self/environ",
            &["No such file or directory"],
        ),
        sh(
            "proc cpuinfo",
            "cat /proc/cpuinfo",
            &["No such file or directory"],
        ),
        sh(
            "dev listing",
            "ls /dev",
            &["fd\nnull\nrandom\nstderr\nstdin\nstdout\nurandom\nzero\n[exit 0]"],
        ),
        sh("dev write", "echo x > /dev/sda", &["Permission denied"]),
        sh(
            "dev tcp",
            "echo hi > /dev/tcp/127.0.0.1/80",
            &["No such file or directory"],
        ),
        sh(
            "find outside",
            "find / -name passwd",
            &["/etc/passwd\n[exit 0]"],
        ),
        sh(
            "grep outside",
            "grep -r :0: /etc",
            &["/etc/group:root:x:0:\n/etc/passwd:root:x:0:0:root:/root:/bin/bash\n[exit 0]"],
        ),
        // Symlinks.
        Case {
            changes_ok: true,
            ..sh(
                "symlink to host path then read",
                "ln -s /etc/shadow hostlink && cat hostlink",
                &["No such file"],
            )
        },
        Case {
            changes_ok: true,
            ..sh(
                "symlink to dotdot then read",
                "ln -s ../../../../etc/passwd up && cat up",
                &["No such file"],
            )
        },
        Case {
            changes_ok: true,
            ..sh(
                "symlink loop",
                "ln -s l2 l1 && ln -s l1 l2 && cat l1",
                &["Too many levels of symbolic links"],
            )
        },
        Case {
            changes_ok: true,
            ..sh(
                "long symlink chain",
                "ln -s notes.md c0 && for i in $(seq 1 60); do ln -s c$((i-1)) c$i; done && cat c60",
                &["Too many levels of symbolic links"],
            )
        },
        sh(
            "hard link",
            "ln notes.md hard",
            &["hard links are not supported"],
        ),
        // Names and paths.
        sh(
            "very long name",
            "touch nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
            &["too long"],
        ),
        // Runaway programs.
        sh(
            "infinite loop",
            "touch partial && while true; do :; done",
            &["timeout"],
        ),
        sh(
            "unbounded recursion",
            "f() { f; }; f",
            &["maximum function nesting level exceeded"],
        ),
        sh("recursive fan-out", "f() { f | f; }; f", &["limit"]),
        sh(
            "memory bomb",
            "x=aaaaaaaa; while true; do x=$x$x; done",
            &["memory"],
        ),
        sh(
            "output flood",
            "while true; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done",
            &["limit"],
        ),
        sh("busy sleep", "sleep 100", &["timeout"]),
        // Network and processes.
        sh(
            "curl",
            "curl http://127.0.0.1:1/",
            &["is denied: this session has no network rule"],
        ),
        sh(
            "wget",
            "wget http://example.com",
            &["is denied: this session has no network rule"],
        ),
        sh("nc", "nc -l 8080", &["command not found"]),
        // No native interpreter: without the toolchain python3 says how to get the WASI one.
        sh(
            "python",
            "python3 -c 'print(1)'",
            &["not installed in this burrow"],
        ),
        sh("background job", "sleep 100 &", &["timeout"]),
        // Guests through the WASI boundary.
        Case {
            name: "guest escapes",
            via: Via::Probe("escapes"),
            expect: &["read ..", "read abs host", "proc"],
            changes_ok: true,
        },
        Case {
            name: "guest spins",
            via: Via::Probe("spin"),
            expect: &["timeout"],
            changes_ok: false,
        },
        Case {
            name: "guest memory bomb",
            via: Via::Probe("memory-bomb"),
            expect: &["memory limit"],
            changes_ok: false,
        },
        Case {
            name: "guest output flood",
            via: Via::Probe("flood"),
            expect: &["output limit"],
            changes_ok: false,
        },
        Case {
            name: "guest opens thousands of descriptors",
            via: Via::Probe("many-fds"),
            expect: &["opened 4096 then"],
            changes_ok: true,
        },
        // Tool inputs, every family.
        tool(
            "read dotdot",
            a,
            "read",
            json!({"file_path": "../../etc/passwd"}),
            &["outside the session's working directory"],
        ),
        tool(
            "read host path",
            a,
            "read",
            json!({"file_path": "/etc/passwd"}),
            &["outside the session's working directory"],
        ),
        tool(
            "write outside",
            a,
            "write",
            json!({"file_path": "/tmp/x", "content": "x"}),
            &["outside the session's working directory"],
        ),
        tool(
            "edit outside",
            a,
            "edit",
            json!({"file_path": "/workspace/../etc/hosts", "old_string": "a", "new_string": "b"}),
            &["outside"],
        ),
        tool(
            "glob dotdot",
            a,
            "glob",
            json!({"pattern": "../*"}),
            &["'..' is not permitted"],
        ),
        tool(
            "glob absolute",
            a,
            "glob",
            json!({"pattern": "/etc/*"}),
            &["absolute pattern not permitted"],
        ),
        tool(
            "grep outside",
            a,
            "grep",
            json!({"pattern": "root", "path": "/etc"}),
            &["outside"],
        ),
        tool(
            "read NUL",
            a,
            "read",
            json!({"file_path": "a\u{0}b"}),
            &["read:"],
        ),
        tool(
            "read long name",
            a,
            "read",
            json!({"file_path": long.clone()}),
            &["name too long"],
        ),
        tool(
            "read deep path",
            a,
            "read",
            json!({"file_path": deep.clone()}),
            &["read:"],
        ),
        tool(
            "read wrong type",
            a,
            "read",
            json!({"file_path": 42}),
            &["invalid input"],
        ),
        tool(
            "bash timeout",
            a,
            "bash",
            json!({"command": "touch t && while :; do :; done", "timeout_ms": 500}),
            &["timed out"],
        ),
        tool(
            "cc read host",
            c,
            "Read",
            json!({"file_path": "/etc/passwd"}),
            &["outside the session's workspace"],
        ),
        tool(
            "cc write dotdot",
            c,
            "Write",
            json!({"file_path": "../../x", "content": "x"}),
            &["outside the session's workspace"],
        ),
        tool(
            "cc glob absolute host",
            c,
            "Glob",
            json!({"pattern": "/etc/*"}),
            &["outside"],
        ),
        tool(
            "cc grep host",
            c,
            "Grep",
            json!({"pattern": "x", "path": "/"}),
            &["outside"],
        ),
        tool(
            "cc bash background",
            c,
            "Bash",
            json!({"command": "sleep 1", "run_in_background": true}),
            &["not supported"],
        ),
        tool(
            "cc unknown field",
            c,
            "Read",
            json!({"file_path": "/workspace/notes.md", "evil": true}),
            &["InputValidationError"],
        ),
        tool(
            "api view host",
            api,
            "str_replace_based_edit_tool",
            json!({"command": "view", "path": "/etc/passwd"}),
            &["outside the workspace"],
        ),
        tool(
            "api create outside",
            api,
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": "/workspace/../../x", "file_text": "x"}),
            &["outside the workspace"],
        ),
        tool(
            "api bad command",
            api,
            "str_replace_based_edit_tool",
            json!({"command": "rm", "path": "/workspace/notes.md"}),
            &["Unrecognized command"],
        ),
        tool(
            "unknown tool",
            a,
            "exec",
            json!({"command": "ls"}),
            &["unknown tool"],
        ),
    ];
    // Disk fill past the quota, on the session that has one.
    let quota_cases = [
        sh("fill past byte quota", "seq 1 100000 > big.txt", &["quota"]),
        sh(
            "fill past entry quota",
            "for i in $(seq 1 500); do touch f$i; done",
            &["quota"],
        ),
    ];

    let mut failures = Vec::new();
    let mut run_all = |id: &str, cases: &mut Vec<Case>| {
        for case in cases.drain(..) {
            let before = sb.info(id).unwrap().version;
            let started = std::time::Instant::now();
            let out = run_case(&sb, id, &case.via, &probe);
            eprintln!("{:>6} ms  {}", started.elapsed().as_millis(), case.name);
            for want in case.expect {
                if !out.contains(want) {
                    failures.push(format!(
                        "{}: expected {want:?} in:\n{}",
                        case.name,
                        &out[..out.len().min(600)]
                    ));
                }
            }
            if !case.changes_ok {
                let after = sb.info(id).unwrap().version;
                if after != before {
                    let (_, _, changes) = sb
                        .diff(&format!("v{before}"), &format!("v{after}"))
                        .unwrap();
                    let real: Vec<_> = changes
                        .iter()
                        .filter(|c| !c.path.starts_with(".burrow"))
                        .collect();
                    if !real.is_empty() {
                        failures.push(format!("{}: the workspace changed: {real:?}", case.name));
                    }
                }
            }
            // The host is up and the next call works.
            let next = sb.sh(id, "echo next-call-ok").unwrap();
            if next.report.stdout != b"next-call-ok\n" {
                failures.push(format!("{}: the next call failed", case.name));
            }
        }
    };
    let total = cases.len() + quota_cases.len();
    run_all(&id, &mut cases);
    run_all(&quota_id, &mut quota_cases.into_iter().collect());
    // The workspace still has its files.
    assert_eq!(sb.cat(&id, "notes.md").unwrap(), b"secret-notes\n");
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(total >= 60, "the corpus has {total} cases");
    eprintln!("escape corpus: {total} cases passed");
}

#[test]
fn host_environment_never_reaches_the_guest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", &db)
        .env(
            "BURROW_CACHE",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache"),
        )
        .env("BURROW_CANARY_SECRET", "canary-7f3a")
        .env("ANTHROPIC_API_KEY", "sk-canary-key")
        .args([
            "tool",
            "--workspace",
            "w",
            "bash",
            r#"{"command":"env; echo done"}"#,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("done"), "{text}");
    assert!(!text.contains("canary"), "host environment leaked: {text}");
    assert!(!text.contains("sk-"), "host environment leaked: {text}");
}

#[test]
fn malformed_inputs_to_the_cli_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let burrow = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env(
                "BURROW_CACHE",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache"),
            )
            .args(args)
            .output()
            .unwrap()
    };
    // Deeper than serde_json's recursion limit, within the kernel's 128 KiB argument limit.
    let deep_json = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
    let big = format!(
        r#"{{"file_path":"big","content":"{}"}}"#,
        "x".repeat(100_000)
    );
    for (args, want) in [
        (
            vec!["tool", "--workspace", "w", "read", "{bad json"],
            "not valid JSON",
        ),
        (
            vec!["tool", "--workspace", "w", "read", "[1,2]"],
            "must be a JSON object",
        ),
        (
            vec!["tool", "--workspace", "w", "read", &deep_json],
            "not valid JSON",
        ),
        (
            vec![
                "tool",
                "--workspace",
                "w",
                "--schema",
                "cobol",
                "read",
                "{}",
            ],
            "unknown tool family",
        ),
        (vec!["sh", "no-such-session", "ls"], "no session matches"),
        (vec!["fork", "w", "-n", "0"], "fork count"),
    ] {
        let out = burrow(&args);
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{:?}: {err}", &args[..2]);
        assert!(err.lines().count() <= 3, "a short error, not a dump: {err}");
    }
    // A large (100 KB) input through the CLI works.
    let out = burrow(&["tool", "--workspace", "w", "write", &big]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
