//! Claude's memory tool (`memory_20250818`) on burrow: every command and error path run
//! through the Anthropic Python SDK's reference (`BetaLocalFilesystemMemoryTool` on a temporary
//! directory) and through burrow's `memory` family; results must be identical. Then what
//! plain files cannot do: forked memories diverge, undo brings a deleted memory back.
//!
//! The comparison needs `python3` with the `anthropic` package (.ci/run installs it); without
//! it that test is skipped with a message, unless BURROW_REQUIRE_REFERENCE=1.

use std::path::Path;
use std::process::{Command, Stdio};

use burrow_host::session::{Family, Sandbox, SandboxConfig};
use serde_json::{Value, json};

fn sandbox(dir: &Path) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .unwrap()
}

/// Symlinks made in the memory directory before the commands: (name, target). Targets are
/// relative (a guest cannot make absolute symlinks); `../etc` leaves /memories on both sides.
const SYMLINKS: &[(&str, &str)] = &[
    ("out", "../etc"),
    ("up", "../"),
    ("inside", "project"),
    ("dangling", "nowhere/x"),
];

/// The commands, in order, on one memory directory (each sees what the previous ones did).
fn commands() -> Vec<Value> {
    let big: String = (1..=300)
        .map(|i| format!("line {i} of a long memory\n"))
        .collect();
    let mut c = vec![
        // An empty directory, then files at several depths.
        json!({"command": "view", "path": "/memories"}),
        json!({"command": "view", "path": "/memories/"}),
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "# Notes\nfirst\nsecond\nthird\n"}),
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "again"}),
        json!({"command": "create", "path": "/memories/project/plan.txt", "file_text": "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\nstep 7\n"}),
        json!({"command": "create", "path": "/memories/project/deep/er/file.txt", "file_text": "deep"}),
        json!({"command": "create", "path": "/memories/.hidden", "file_text": "secret"}),
        json!({"command": "create", "path": "/memories/empty.txt", "file_text": ""}),
        json!({"command": "create", "path": "/memories/crlf.txt", "file_text": "one\r\ntwo\r\nthree\r\n"}),
        json!({"command": "create", "path": "/memories/unicodé ☕.txt", "file_text": "naïve café\nŝtep ☕\n"}),
        json!({"command": "create", "path": "/memories/big.txt", "file_text": big}),
        json!({"command": "create", "path": "/memories/no-newline.txt", "file_text": "a\nb"}),
        json!({"command": "view", "path": "/memories"}),
        json!({"command": "view", "path": "/memories/project"}),
        json!({"command": "view", "path": "/memories/project/deep"}),
        // Files, whole and in ranges.
        json!({"command": "view", "path": "/memories/notes.md"}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [0, 2]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [4, 100]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [3, 1]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [1, -2]}),
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [7]}),
        json!({"command": "view", "path": "/memories/empty.txt"}),
        json!({"command": "view", "path": "/memories/crlf.txt"}),
        json!({"command": "view", "path": "/memories/unicodé ☕.txt"}),
        json!({"command": "view", "path": "/memories/big.txt", "view_range": [295, -1]}),
        json!({"command": "view", "path": "/memories/no-newline.txt"}),
        json!({"command": "view", "path": "/memories/.hidden"}),
        json!({"command": "view", "path": "/memories/missing.txt"}),
        json!({"command": "view", "path": "/memories/project/missing/x"}),
        // Path rules.
        json!({"command": "view", "path": "/etc/passwd"}),
        json!({"command": "view", "path": "memories/notes.md"}),
        json!({"command": "view", "path": "/memoriesx"}),
        json!({"command": "view", "path": "/memories/../etc/passwd"}),
        json!({"command": "view", "path": "/memories/../memories/notes.md"}),
        json!({"command": "view", "path": "/memories/project/../notes.md"}),
        json!({"command": "view", "path": "/memories/./project/./plan.txt"}),
        json!({"command": "view", "path": "/memories//project//plan.txt"}),
        json!({"command": "create", "path": "/memories/../escape.txt", "file_text": "x"}),
        json!({"command": "create", "path": "/tmp/x.txt", "file_text": "x"}),
        json!({"command": "create", "path": "/memories", "file_text": "x"}),
        json!({"command": "create", "path": "/memories/project", "file_text": "x"}),
        // str_replace.
        json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "second", "new_str": "SECOND"}),
        json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "absent", "new_str": "x"}),
        json!({"command": "create", "path": "/memories/dups.txt", "file_text": "a x\nb\na x\nc a x\n"}),
        json!({"command": "str_replace", "path": "/memories/dups.txt", "old_str": "a x", "new_str": "y"}),
        json!({"command": "str_replace", "path": "/memories/dups.txt", "old_str": "aa", "new_str": "y"}),
        json!({"command": "create", "path": "/memories/overlap.txt", "file_text": "aaa\n"}),
        json!({"command": "str_replace", "path": "/memories/overlap.txt", "old_str": "aa", "new_str": "b"}),
        json!({"command": "str_replace", "path": "/memories/project/plan.txt", "old_str": "step 5", "new_str": "step five\nstep 5b"}),
        json!({"command": "view", "path": "/memories/project/plan.txt"}),
        json!({"command": "str_replace", "path": "/memories/project/plan.txt", "old_str": "step 1\n", "new_str": ""}),
        json!({"command": "str_replace", "path": "/memories/crlf.txt", "old_str": "two\r\n", "new_str": "2\r\n"}),
        json!({"command": "str_replace", "path": "/memories/unicodé ☕.txt", "old_str": "café", "new_str": "coffee"}),
        json!({"command": "str_replace", "path": "/memories/missing.txt", "old_str": "a", "new_str": "b"}),
        json!({"command": "str_replace", "path": "/memories/project", "old_str": "a", "new_str": "b"}),
        json!({"command": "str_replace", "path": "/memories/big.txt", "old_str": "line 150 of", "new_str": "line 150 (edited) of"}),
        // insert.
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "top\n"}),
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 2, "insert_text": "middle"}),
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 6, "insert_text": "end\n\n"}),
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 99, "insert_text": "x"}),
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": -1, "insert_text": "x"}),
        json!({"command": "view", "path": "/memories/notes.md"}),
        json!({"command": "insert", "path": "/memories/empty.txt", "insert_line": 0, "insert_text": "now there is"}),
        json!({"command": "insert", "path": "/memories/no-newline.txt", "insert_line": 2, "insert_text": "c"}),
        json!({"command": "view", "path": "/memories/no-newline.txt"}),
        json!({"command": "insert", "path": "/memories/crlf.txt", "insert_line": 1, "insert_text": "one-and-a-half"}),
        json!({"command": "view", "path": "/memories/crlf.txt"}),
        json!({"command": "insert", "path": "/memories/missing.txt", "insert_line": 0, "insert_text": "x"}),
        json!({"command": "insert", "path": "/memories/project", "insert_line": 0, "insert_text": "x"}),
        // rename.
        json!({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/archive/2026/notes.md"}),
        json!({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/again.md"}),
        json!({"command": "rename", "old_path": "/memories/empty.txt", "new_path": "/memories/crlf.txt"}),
        json!({"command": "rename", "old_path": "/memories/project", "new_path": "/memories/proj"}),
        json!({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}),
        json!({"command": "rename", "old_path": "/memories/proj/plan.txt", "new_path": "/tmp/plan.txt"}),
        json!({"command": "rename", "old_path": "/memories/../x", "new_path": "/memories/y"}),
        json!({"command": "view", "path": "/memories"}),
        json!({"command": "view", "path": "/memories/archive/2026/notes.md", "view_range": [1, 2]}),
        // delete.
        json!({"command": "delete", "path": "/memories/overlap.txt"}),
        json!({"command": "delete", "path": "/memories/overlap.txt"}),
        json!({"command": "delete", "path": "/memories/proj"}),
        json!({"command": "delete", "path": "/memories"}),
        json!({"command": "delete", "path": "/memories/"}),
        json!({"command": "delete", "path": "/memories/../etc"}),
        json!({"command": "delete", "path": "/other"}),
        json!({"command": "view", "path": "/memories"}),
    ];
    // Symlinks: out of /memories refused, inside followed.
    for cmd in [
        json!({"command": "view", "path": "/memories/out"}),
        json!({"command": "view", "path": "/memories/out/passwd"}),
        json!({"command": "view", "path": "/memories/dangling"}),
        json!({"command": "view", "path": "/memories/up"}),
        json!({"command": "view", "path": "/memories/up/memories/kb.txt"}),
        json!({"command": "view", "path": "/memories/inside"}),
        json!({"command": "create", "path": "/memories/out/new.txt", "file_text": "x"}),
        json!({"command": "create", "path": "/memories/dangling", "file_text": "x"}),
        json!({"command": "delete", "path": "/memories/out"}),
        json!({"command": "rename", "old_path": "/memories/up", "new_path": "/memories/up2"}),
    ] {
        c.push(cmd);
    }
    // Sizes past a kilobyte in the listing.
    c.push(json!({"command": "create", "path": "/memories/kb.txt", "file_text": "z".repeat(1536)}));
    c.push(json!({"command": "create", "path": "/memories/mb.txt", "file_text": "y".repeat(3_000_000)}));
    c.push(json!({"command": "view", "path": "/memories"}));
    c
}

#[test]
fn memory_tool_matches_the_python_reference() {
    let available = Command::new("python3")
        .args(["-c", "import anthropic.lib.tools._beta_builtin_memory_tool"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        let msg = "the Python reference (pip install anthropic) is not installed";
        if std::env::var("BURROW_REQUIRE_REFERENCE").as_deref() == Ok("1") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let cmds = commands();
    assert!(cmds.len() >= 60, "{} commands", cmds.len());
    // The reference writes under a directory of the same filesystem as the tests' target
    // directory, whose directories report 4096 bytes as burrow's do.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/memory_ref.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(tmp.path().join("ref"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(
                json!({"symlinks": SYMLINKS, "commands": cmds})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();

    let sb = sandbox(tmp.path());
    let id = sb.create(Some("mem")).unwrap().id;
    let links: String = SYMLINKS
        .iter()
        .map(|(n, t)| format!("ln -s '{t}' '/memories/{n}'; "))
        .collect();
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({ "command": format!("mkdir -p /memories; {links}") }),
        )
        .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let mut mismatches = Vec::new();
    let mut exceptions = 0;
    for (cmd, want) in cmds.iter().zip(&theirs) {
        let got = sb.call(&id, Family::Memory, "memory", cmd).unwrap();
        let text = got.joined_text();
        if want.get("exception").is_some() {
            exceptions += 1;
            // The reference raised something other than ToolError: burrow must still refuse.
            if !got.is_error {
                mismatches.push(format!("{cmd}\n  reference: {want}\n  burrow ok: {text}"));
            }
            continue;
        }
        let ok = want["is_error"] == json!(got.is_error) && want["text"] == json!(text);
        if !ok {
            mismatches.push(format!(
                "{cmd}\n  reference: {} {:?}\n  burrow:    {} {text:?}",
                want["is_error"], want["text"], got.is_error
            ));
        }
    }
    println!(
        "memory conformance: {}/{} commands identical to the SDK's reference ({exceptions} where it raised, burrow refused)",
        cmds.len() - mismatches.len(),
        cmds.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn memories_fork_diverge_and_undo() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path());
    let id = sb.create(Some("agent")).unwrap().id;
    let mem = |s: &str, input: Value| {
        let out = sb.call(s, Family::Memory, "memory", &input).unwrap();
        (out.is_error, out.joined_text())
    };
    let (err, _) = mem(
        &id,
        json!({"command": "create", "path": "/memories/prefs.md", "file_text": "likes: coffee\n"}),
    );
    assert!(!err);
    // Two experiments from the same past.
    let forks = sb.fork(&id, 2).unwrap();
    let (a, b) = (&forks[0], &forks[1]);
    mem(
        a,
        json!({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "coffee", "new_str": "tea"}),
    );
    mem(
        b,
        json!({"command": "delete", "path": "/memories/prefs.md"}),
    );
    let view = |s: &str| mem(s, json!({"command": "view", "path": "/memories/prefs.md"}));
    assert!(view(a).1.contains("likes: tea"), "{:?}", view(a));
    assert!(view(b).0, "deleted in b");
    assert!(view(&id).1.contains("likes: coffee"));
    // The shell sees the same memories.
    let out = sb
        .call(
            a,
            Family::AgentToolset,
            "bash",
            &json!({"command": "cat /memories/prefs.md"}),
        )
        .unwrap();
    assert_eq!(out.joined_text().trim(), "likes: tea");
    // Undo brings b's deleted memory back.
    sb.undo(b).unwrap();
    assert!(view(b).1.contains("likes: coffee"), "{:?}", view(b));
    // Memories are not part of the project's diff.
    let changes = sb.diff(&id, a).unwrap();
    assert!(changes.2.is_empty(), "{:?}", changes.2);
}
