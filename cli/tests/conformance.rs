//! Conformance of the agent_toolset_20260401 file tools with the Anthropic Python SDK's
//! reference implementation: the same calls on the same starting tree, once through the
//! reference on a host directory and once through burrow; every result must match byte for
//! byte (host paths normalised to /workspace) except the differences `known_difference`
//! names, each of which docs/CLAUDE.md lists with its reason.
//!
//! Needs `python3` with the `anthropic` package (.ci/run installs it). Without it the test is
//! skipped with a message, unless BURROW_REQUIRE_REFERENCE=1 (set by .ci/run) makes that a
//! failure.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use burrow_host::session::{Family, Sandbox, SandboxConfig};
use serde_json::{Value, json};

/// docs/CLAUDE.md, whose table names every difference from the reference this test allows.
const DOCUMENTED: &str = include_str!("../../docs/CLAUDE.md");

/// The release of the reference CI installs (`.ci/run` exports it); a different one installed
/// fails the test where the reference is required, so a bump is one line in `.ci/run`.
fn check_reference_version() {
    let Ok(pinned) = std::env::var("BURROW_ANTHROPIC_SDK") else {
        return;
    };
    let out = Command::new("python3")
        .args(["-c", "import anthropic; print(anthropic.__version__)"])
        .output()
        .expect("python3");
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        found, pinned,
        "the reference installed is anthropic {found}, CI pins {pinned}"
    );
}

fn reference_available() -> bool {
    Command::new("python3")
        .args(["-c", "import anthropic.lib.tools.agent_toolset"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The starting tree: the sample repository plus edge cases. Every file and directory gets a
/// distinct modification time so "newest first" orders are comparable.
fn build_tree(root: &Path) {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/sample-repo");
    copy_dir(&sample, root);
    let w = |p: &str, data: &[u8]| {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, data).unwrap();
    };
    w("empty.txt", b"");
    w("crlf.txt", b"first line\r\nsecond line\r\nthird line\r\n");
    w("unicode.txt", "héllo wörld\nnaïve café ☕\n".as_bytes());
    w("binary.bin", &[0, 159, 146, 150, 0, 1, 2, 3]);
    w("notes/multi.txt", b"alpha\nbeta\nalpha\ngamma\nalpha\n");
    w("notes/no-newline.txt", b"one\ntwo");
    w("big.txt", "x".repeat(300 * 1024).as_bytes());
    let mut lines = String::new();
    for i in 0..6000 {
        lines.push_str(&format!("line {i} of a long file with some padding text\n"));
    }
    w("long.txt", lines.as_bytes());
    w(
        "image.png",
        &[0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0, 0, 13],
    );
    w("doc.pdf", b"%PDF-1.4\n%fake but fine\n");
    w("photo.JPG", &[0xff, 0xd8, 0xff, 0xe0, 0, 16]);
    w(".git/config", b"[core]\nTODO = hidden in git\n");
    w(
        "node_modules/pkg/index.js",
        b"// TODO: inside node_modules\n",
    );
    w("wide.txt", format!("{}TODO\n", "y".repeat(2100)).as_bytes());
    w("grow.txt", "ab".repeat(125_000).as_bytes());
    std::fs::create_dir_all(root.join("emptydir")).unwrap();
    std::os::unix::fs::symlink("README.md", root.join("readme-link")).unwrap();
    // Distinct times, oldest first in path order, directories after their contents.
    let mut paths = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p.clone());
            }
            if !m.file_type().is_symlink() {
                paths.push(p);
            }
        }
    }
    paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for (i, p) in paths.iter().enumerate() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 10);
        let f = std::fs::File::options().read(true).open(p).unwrap();
        f.set_modified(t).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn calls() -> Vec<Value> {
    let mut c = Vec::new();
    let mut add = |tool: &str, input: Value| c.push(json!({ "tool": tool, "input": input }));
    // read
    for f in [
        "README.md",
        "src/tinyledger/ledger.py",
        "/workspace/pyproject.toml",
        "./docs/design.md",
        "src/../README.md",
        "empty.txt",
        "crlf.txt",
        "unicode.txt",
        "notes/no-newline.txt",
        "readme-link",
    ] {
        add("read", json!({ "file_path": f }));
    }
    for r in [
        json!([1, 1]),
        json!([2, 0]),
        json!([0, 3]),
        json!([5, -1]),
        json!([100, 200]),
        json!([3, 2]),
        json!([1]),
        json!([1, 2, 3]),
        json!([]),
        json!([4, 4]),
    ] {
        add(
            "read",
            json!({ "file_path": "src/tinyledger/util.py", "view_range": r }),
        );
    }
    for f in [
        "missing.txt",
        "src",
        "emptydir",
        "binary.bin",
        "big.txt",
        "../outside",
        "/etc/passwd",
        "nodir/file",
    ] {
        add("read", json!({ "file_path": f }));
    }
    add(
        "read",
        json!({ "file_path": "big.txt", "view_range": [1, 1] }),
    );
    add("read", json!({ "file_path": "long.txt" }));
    add(
        "read",
        json!({ "file_path": "long.txt", "view_range": [5990, 6001] }),
    );
    add("read", json!({ "file_path": "image.png" }));
    add("read", json!({ "file_path": "doc.pdf" }));
    add("read", json!({ "file_path": "photo.JPG" }));
    add(
        "read",
        json!({ "file_path": "image.png", "view_range": [1, 2] }),
    );
    // write
    add(
        "write",
        json!({ "file_path": "new/deep/file.txt", "content": "created\n" }),
    );
    add("read", json!({ "file_path": "new/deep/file.txt" }));
    add(
        "write",
        json!({ "file_path": "README.md", "content": "# replaced\n" }),
    );
    add(
        "write",
        json!({ "file_path": "unicode-out.txt", "content": "ünïcödé ☕ 🎉" }),
    );
    add("write", json!({ "file_path": "src", "content": "x" }));
    add(
        "write",
        json!({ "file_path": "../escape.txt", "content": "x" }),
    );
    add(
        "write",
        json!({ "file_path": "/workspace/abs.txt", "content": "" }),
    );
    add(
        "write",
        json!({ "file_path": "crlf-new.txt", "content": "a\r\nb\r\n" }),
    );
    add("read", json!({ "file_path": "crlf-new.txt" }));
    add("read", json!({ "file_path": "README.md" }));
    // edit
    add(
        "edit",
        json!({ "file_path": "notes/multi.txt", "old_string": "beta", "new_string": "BETA" }),
    );
    add(
        "edit",
        json!({ "file_path": "notes/multi.txt", "old_string": "alpha", "new_string": "A" }),
    );
    add(
        "edit",
        json!({ "file_path": "notes/multi.txt", "old_string": "alpha", "new_string": "A", "replace_all": true }),
    );
    add("read", json!({ "file_path": "notes/multi.txt" }));
    add(
        "edit",
        json!({ "file_path": "notes/multi.txt", "old_string": "zeta", "new_string": "Z" }),
    );
    add(
        "edit",
        json!({ "file_path": "missing.txt", "old_string": "a", "new_string": "b" }),
    );
    add(
        "edit",
        json!({ "file_path": "src", "old_string": "a", "new_string": "b" }),
    );
    add(
        "edit",
        json!({ "file_path": "binary.bin", "old_string": "a", "new_string": "b" }),
    );
    add(
        "edit",
        json!({ "file_path": "big.txt", "old_string": "x", "new_string": "y" }),
    );
    add(
        "edit",
        json!({ "file_path": "crlf.txt", "old_string": "second line", "new_string": "2nd line" }),
    );
    add("read", json!({ "file_path": "crlf.txt" }));
    add(
        "edit",
        json!({ "file_path": "unicode.txt", "old_string": "café", "new_string": "coffee" }),
    );
    add(
        "edit",
        json!({ "file_path": "../x", "old_string": "a", "new_string": "b" }),
    );
    add(
        "edit",
        json!({ "file_path": "src/tinyledger/util.py", "old_string": "def chunks(items, n):\n", "new_string": "" }),
    );
    add("read", json!({ "file_path": "src/tinyledger/util.py" }));
    add(
        "edit",
        json!({ "file_path": "notes/no-newline.txt", "old_string": "two", "new_string": "two\nthree", "replace_all": false }),
    );
    add("read", json!({ "file_path": "notes/no-newline.txt" }));
    // glob
    for (pattern, path) in [
        ("*.md", None),
        ("**/*.py", None),
        ("**/test_*.py", Some("tests")),
        ("*.py", Some("src/tinyledger")),
        ("docs/*", None),
        ("**/*.md", Some("docs")),
        ("*.nothing", None),
        ("**/*.txt", None),
        ("src/**/*.py", None),
        ("*", Some("notes")),
        ("*.py", Some("missing-dir")),
        ("*.md", Some("README.md")),
        ("/etc/*", None),
        ("../*", None),
        ("a/../*", None),
        ("*", Some("../")),
        ("**/index.js", None),
        ("*.PNG", None),
        ("[a-c]*.txt", None),
        ("?mpty.txt", None),
    ] {
        let mut input = json!({ "pattern": pattern });
        if let Some(p) = path {
            input["path"] = json!(p);
        }
        add("glob", input);
    }
    // grep
    for (pattern, path) in [
        ("TODO", None),
        ("def \\w+", None),
        ("^import", Some("src")),
        ("Decimal", Some("src/tinyledger/util.py")),
        ("nothing-matches-this", None),
        ("(unclosed", None),
        ("[Tt]inyledger", Some("docs")),
        ("café|coffee", None),
        ("alpha|A$", Some("notes")),
        ("TODO", Some("node_modules")),
        ("second|2nd", Some("crlf.txt")),
        ("x", Some("missing")),
        ("TODO", Some("../")),
        ("line 59[0-9][0-9] ", Some("long.txt")),
        ("^$", Some("notes")),
        ("\\d{4}-\\d{2}-\\d{2}", Some("data")),
        ("class \\w+", Some("src")),
        ("return", Some("src/tinyledger")),
    ] {
        let mut input = json!({ "pattern": pattern });
        if let Some(p) = path {
            input["path"] = json!(p);
        }
        add("grep", input);
    }
    // bash: one persistent shell per session (no `exit`: the reference's shell process would
    // end with it).
    for input in [
        json!({ "command": "echo hello" }),
        json!({ "command": "pwd" }),
        json!({ "command": "cd src && pwd" }),
        json!({ "command": "pwd; ls" }),
        json!({ "command": "cd ..; ls docs" }),
        json!({ "command": "echo err >&2; echo out" }),
        json!({ "command": "grep -c TODO src/tinyledger/ledger.py" }),
        json!({ "command": "printf 'a\\n\\n\\n'" }),
        json!({ "command": "false" }),
        json!({ "command": "ls nope" }),
        json!({ "command": "printf '\\033[31mred\\033[0m\\n'" }),
        json!({ "command": "x=5; echo $((x * 3))" }),
        json!({ "command": "echo $x" }),
        json!({ "command": "cat < /dev/null; echo stdin-is-empty" }),
        json!({ "command": "seq 1 30000 | tail -n 2" }),
        json!({ "command": "" }),
        json!({}),
        json!({ "restart": true }),
        json!({ "command": "pwd; echo \"[$x]\"" }),
        json!({ "command": "while true; do :; done", "timeout_ms": 700 }),
        json!({ "command": "echo after-timeout" }),
        json!({ "restart": true }),
        json!({ "command": "echo back" }),
        // stdout then stderr; stderr first when the command failed.
        json!({ "command": "echo hi; echo err >&2" }),
        json!({ "command": "echo err >&2" }),
        json!({ "command": "echo hi; echo err >&2; false" }),
        json!({ "command": "true" }),
        // An output over 30,000 characters: its start, the lines left out, the file it is
        // saved in (the path is compared away).
        json!({ "command": "seq 1 20000" }),
        json!({ "command": "printf '%s\\n' {1..4000} | sed 's/$/ caf\u{e9} \u{1F600}/'" }),
        // `exit` ends the shell: the next call does not run until a restart, which may carry
        // a command (run in a fresh shell in the working directory).
        json!({ "command": "cd src; exit 3" }),
        json!({ "command": "echo not-run" }),
        json!({ "restart": true, "command": "echo fresh; pwd" }),
        json!({ "command": "exit 0" }),
        json!({ "restart": true }),
        json!({ "command": "echo again", "timeout_ms": -5 }),
    ] {
        add("bash", input);
    }
    // An edit whose replacements would take the file over the edit cap.
    add(
        "edit",
        json!({ "file_path": "grow.txt", "old_string": "b", "new_string": "bbbb", "replace_all": true }),
    );
    // Inputs that fail validation.
    add("read", json!({}));
    add("write", json!({ "file_path": "x" }));
    add(
        "edit",
        json!({ "file_path": "README.md", "old_string": "a" }),
    );
    c
}

/// Differences burrow keeps deliberately, each named in docs/CLAUDE.md's table of them (the
/// test checks that every name it uses is there): the name and the normalised pair to compare
/// instead.
fn known_difference(
    call: &Value,
    ours: &Value,
    theirs: &Value,
) -> Option<(&'static str, Value, Value)> {
    let text = |v: &Value| v["content"][0]["text"].as_str().unwrap_or("").to_string();
    let tool = call["tool"].as_str().unwrap_or("");
    let saved = regex::Regex::new(r"/[^ ]*bash-output-[a-z0-9_]+/tmp[a-z0-9_]+\.txt").unwrap();
    if tool == "bash" && saved.is_match(&text(theirs)) {
        let norm = |v: &Value| {
            json!({
                "is_error": v["is_error"],
                "text": saved.replace_all(&text(v), "SAVED").into_owned(),
            })
        };
        return Some(("saved-output-name", norm(ours), norm(theirs)));
    }
    if text(theirs).starts_with("grep: invalid regex:") {
        return Some((
            "regex-wording",
            json!(text(ours).starts_with("grep: invalid regex:")),
            json!(true),
        ));
    }
    if theirs["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("ValueError: Invalid arguments"))
    {
        return Some(("validation-wording", ours["is_error"].clone(), json!(true)));
    }
    if tool == "grep" {
        let sorted = |v: &Value| {
            let mut l: Vec<String> = text(v).lines().map(String::from).collect();
            l.sort();
            json!({ "is_error": v["is_error"], "lines": l })
        };
        return Some(("walk-order", sorted(ours), sorted(theirs)));
    }
    if tool == "glob" {
        let norm = |v: &Value| {
            let lines: Vec<String> = text(v).lines().map(String::from).collect();
            let mut set = lines.clone();
            set.sort();
            let old: Vec<String> = lines
                .into_iter()
                .filter(|l| !created_during_run(l))
                .collect();
            json!({ "is_error": v["is_error"], "set": set, "order": old })
        };
        return Some(("coarse-mtimes", norm(ours), norm(theirs)));
    }
    None
}

/// Paths the calls create (as opposed to the starting tree, whose times are distinct).
fn created_during_run(path: &str) -> bool {
    [
        "/workspace/new/",
        "/workspace/unicode-out.txt",
        "/workspace/abs.txt",
        "/workspace/crlf-new.txt",
    ]
    .iter()
    .any(|p| path.starts_with(p))
}

#[test]
fn agent_toolset_matches_the_python_reference() {
    if !reference_available() {
        let msg = "the Python reference (pip install anthropic) is not installed";
        if std::env::var("BURROW_REQUIRE_REFERENCE").as_deref() == Ok("1") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED: {msg}");
        return;
    }
    check_reference_version();
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    build_tree(&tree);
    let ref_dir = tmp.path().join("ref");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&tree)
        .arg(&ref_dir)
        .status()
        .unwrap();
    assert!(status.success());
    let ref_dir = ref_dir.canonicalize().unwrap();
    let calls = calls();
    assert!(calls.len() >= 100, "{} calls", calls.len());

    let prefix = ref_dir.to_string_lossy().into_owned();
    // The reference's workdir is a host directory: absolute inputs name it instead of /workspace.
    let ref_calls = json!(calls)
        .to_string()
        .replace("\"/workspace", &format!("\"{prefix}"));
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/agent_toolset_ref.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(&ref_dir)
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
            .write_all(ref_calls.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<Value> =
        serde_json::from_str(&String::from_utf8_lossy(&out.stdout).replace(&prefix, "/workspace"))
            .unwrap();

    let sb = Sandbox::open_with(
        tmp.path().join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .unwrap();
    let s = sb.create_from(None, &tree, &mut |_| {}).unwrap();
    let mut mismatches = Vec::new();
    for (i, (call, theirs)) in calls.iter().zip(&theirs).enumerate() {
        let out = sb
            .call(
                &s.id,
                Family::AgentToolset,
                call["tool"].as_str().unwrap(),
                &call["input"],
            )
            .unwrap();
        let ours = serde_json::to_value(&out).unwrap();
        let (a, b) = match known_difference(call, &ours, theirs) {
            Some((name, a, b)) => {
                assert!(
                    DOCUMENTED.contains(&format!("`{name}`")),
                    "the difference `{name}` is not listed in docs/CLAUDE.md"
                );
                (a, b)
            }
            None => (ours.clone(), theirs.clone()),
        };
        if a != b {
            mismatches.push(format!(
                "#{i} {call}\n  burrow:    {ours}\n  reference: {theirs}"
            ));
        }
    }
    eprintln!(
        "{} calls compared, {} mismatches",
        calls.len(),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
