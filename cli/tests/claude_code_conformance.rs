//! Conformance of the `claude-code` tool family with the real Claude Code CLI.
//!
//! The reference is Claude Code itself (npm `@anthropic-ai/claude-code`, the version in
//! [`PINNED`]), run headless (`claude -p`) against a fake Messages API served by this test on
//! 127.0.0.1. The fake answers each turn with the next scripted tool call ([`calls`]) and
//! records the `tool_result` blocks Claude Code sends back. Then the same calls run through
//! burrow's family on the same starting tree, in one session, in order. Every result must be
//! identical (host paths written as `/workspace`) except the differences listed in
//! `fixtures/claude-code-known-differences.txt`, each with its reason.
//!
//! Claude Code is found through `BURROW_CLAUDE_CODE` (the `claude` executable) or `claude` on
//! PATH, and must report the pinned version. Without it the results recorded from it
//! (`fixtures/claude-code-<version>.json`) stand in for it and the test says so in one line;
//! `BURROW_REQUIRE_CLAUDE_CODE=1` (set by .ci/run) makes a missing Claude Code a failure.
//! `BURROW_RECORD_CLAUDE_CODE=1` rewrites the recording from the live run
//! (`scripts/record-claude-code` does the whole procedure).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use burrow_host::session::Family;
use serde_json::{Value, json};

/// The Claude Code version the recording and the known differences belong to: the one
/// `cli/tests/claude-code/package.json` pins (`scripts/record-claude-code VERSION` moves it).
static PINNED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let p = root().join("cli/tests/claude-code/package.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["dependencies"]["@anthropic-ai/claude-code"]
        .as_str()
        .unwrap()
        .to_string()
});

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn recording_path() -> PathBuf {
    root().join(format!("fixtures/claude-code-{}.json", *PINNED))
}

// ----- the starting tree -----

/// A valid 1x1 PNG (one red pixel).
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Every file and directory gets a distinct modification time (oldest first in path order,
/// directories after their contents), so "newest first" orders are comparable.
fn build_tree(root: &Path) {
    let w = |p: &str, data: &[u8]| {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, data).unwrap();
    };
    w(
        "README.md",
        b"# demo\n\nA small project for the conformance test.\nTODO: write more docs\n",
    );
    w(
        "src/app.py",
        b"import os\nimport sys\n\n\ndef main():\n    # TODO: parse arguments\n    print(\"hello\")\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n",
    );
    w(
        "src/util.py",
        b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
    w(
        "src/lib.rs",
        b"pub fn answer() -> u32 {\n    42\n}\n\n// TODO: more\npub struct Config {\n    pub name: String,\n}\n",
    );
    w(
        "docs/guide.md",
        b"# Guide\n\nStep one.\nStep two.\n\n## Errors\n\nfoo\nbar\nbaz\n",
    );
    w(
        "notes/todo.txt",
        b"alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\n",
    );
    w("notes/multi.txt", b"apple\nbanana\napple\ncherry\napple\n");
    w("empty.txt", b"");
    w("no-newline.txt", b"one\ntwo");
    w("crlf.txt", b"first line\r\nsecond line\r\nthird line\r\n");
    w("unicode.txt", "héllo wörld\nnaïve café ☕\n".as_bytes());
    w(
        "wide.txt",
        format!("{}END\nshort\n", "w".repeat(2500)).as_bytes(),
    );
    let mut long = String::new();
    for i in 1..=3000 {
        long.push_str(&format!("line {i}\n"));
    }
    w("long.txt", long.as_bytes());
    w("big.txt", "x".repeat(300 * 1024).as_bytes());
    // Under the size cap, over the token cap (characters / 4 > 25,000).
    let mut tokens = String::new();
    while tokens.len() < 150 * 1024 {
        tokens.push_str("the quick brown fox jumps over the lazy dog\n");
    }
    w("tokens.txt", tokens.as_bytes());
    let mut matches = String::new();
    for i in 0..20_000 {
        matches.push_str(&format!("match {i:05}\n"));
    }
    w("matches.txt", matches.as_bytes());
    w("binary.bin", &[0, 159, 146, 150, 0, 1, 2, 3]);
    w("image.png", PNG_1X1);
    for i in 0..120 {
        w(&format!("many/f{i:03}.log"), b"entry\n");
    }
    std::fs::create_dir_all(root.join("emptydir")).unwrap();
    let mut paths = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            paths.push(p);
        }
    }
    paths.sort();
    paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for (i, p) in paths.iter().enumerate() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 10);
        let f = std::fs::File::options().read(true).open(p).unwrap();
        f.set_modified(t).unwrap();
    }
}

// ----- the script -----

fn calls() -> Vec<Value> {
    let mut c = Vec::new();
    let mut add = |tool: &str, input: Value| c.push(json!({ "tool": tool, "input": input }));
    let ws = |p: &str| format!("/workspace/{p}");

    // Read
    add("Read", json!({ "file_path": ws("README.md") }));
    add("Read", json!({ "file_path": ws("README.md") }));
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 2, "limit": 3 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 0 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 0, "limit": 2 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 12 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 13 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 40 }),
    );
    add("Read", json!({ "file_path": ws("empty.txt") }));
    add("Read", json!({ "file_path": ws("no-newline.txt") }));
    add("Read", json!({ "file_path": ws("crlf.txt") }));
    add("Read", json!({ "file_path": ws("unicode.txt") }));
    add("Read", json!({ "file_path": ws("wide.txt") }));
    add("Read", json!({ "file_path": ws("long.txt") }));
    add(
        "Read",
        json!({ "file_path": ws("long.txt"), "offset": 2995, "limit": 10 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("long.txt"), "offset": 1, "limit": 3 }),
    );
    add("Read", json!({ "file_path": ws("big.txt") }));
    add(
        "Read",
        json!({ "file_path": ws("big.txt"), "offset": 1, "limit": 1 }),
    );
    add("Read", json!({ "file_path": ws("tokens.txt") }));
    add("Read", json!({ "file_path": ws("tokens.txt"), "limit": 2 }));
    add("Read", json!({ "file_path": ws("binary.bin") }));
    add("Read", json!({ "file_path": ws("image.png") }));
    add("Read", json!({ "file_path": ws("src") }));
    add("Read", json!({ "file_path": ws("missing.txt") }));
    add("Read", json!({ "file_path": ws("nodir/missing.txt") }));
    add(
        "Read",
        json!({ "file_path": ws("notes/todo.txt"), "limit": 1 }),
    );
    add(
        "Read",
        json!({ "file_path": ws("notes/todo.txt"), "limit": 1 }),
    );
    add("Read", json!({ "file_path": ws("notes/todo.txt") }));
    add("Read", json!({ "file_path": "README.md" }));
    add("Read", json!({ "file_path": ws("README.md"), "limit": 0 }));
    add("Read", json!({}));

    // Write
    add(
        "Write",
        json!({ "file_path": ws("out/new.txt"), "content": "created\n" }),
    );
    add("Read", json!({ "file_path": ws("out/new.txt") }));
    add(
        "Write",
        json!({ "file_path": ws("README.md"), "content": "# replaced\n" }),
    );
    add("Read", json!({ "file_path": ws("README.md") }));
    add(
        "Write",
        json!({ "file_path": ws("src/util.py"), "content": "x = 1\n" }),
    );
    add("Write", json!({ "file_path": ws("src"), "content": "x" }));
    add(
        "Write",
        json!({ "file_path": ws("crlf-new.txt"), "content": "a\r\nb\r\n" }),
    );
    add("Read", json!({ "file_path": ws("crlf-new.txt") }));
    add(
        "Write",
        json!({ "file_path": ws("blank.txt"), "content": "" }),
    );
    add(
        "Write",
        json!({ "file_path": ws("out/new.txt"), "content": "again\n" }),
    );
    add("Write", json!({ "file_path": ws("x.txt") }));

    // Edit
    add("Read", json!({ "file_path": ws("notes/multi.txt") }));
    add(
        "Edit",
        json!({ "file_path": ws("notes/multi.txt"), "old_string": "banana", "new_string": "BANANA" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("notes/multi.txt"), "old_string": "apple", "new_string": "pear" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("notes/multi.txt"), "old_string": "apple", "new_string": "pear", "replace_all": true }),
    );
    add("Read", json!({ "file_path": ws("notes/multi.txt") }));
    add(
        "Edit",
        json!({ "file_path": ws("notes/multi.txt"), "old_string": "kiwi", "new_string": "lime" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("notes/multi.txt"), "old_string": "pear", "new_string": "pear" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("src/lib.rs"), "old_string": "42", "new_string": "43" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("src"), "old_string": "a", "new_string": "b" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("missing.txt"), "old_string": "a", "new_string": "b" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("fresh.txt"), "old_string": "", "new_string": "fresh\n" }),
    );
    add("Read", json!({ "file_path": ws("fresh.txt") }));
    add("Read", json!({ "file_path": ws("crlf.txt"), "offset": 2 }));
    add(
        "Edit",
        json!({ "file_path": ws("crlf.txt"), "old_string": "second line", "new_string": "2nd line" }),
    );
    add("Read", json!({ "file_path": ws("crlf.txt") }));
    add("Read", json!({ "file_path": ws("src/app.py") }));
    add(
        "Edit",
        json!({ "file_path": ws("src/app.py"), "old_string": "    print(\"hello\")\n", "new_string": "" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("src/app.py"), "old_string": "import os\nimport sys\n", "new_string": "import sys\n" }),
    );
    add(
        "Read",
        json!({ "file_path": ws("src/app.py"), "offset": 1, "limit": 4 }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("src/app.py"), "old_string": "sys", "new_string": "system" }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("src/app.py"), "old_string": "x" }),
    );

    // Glob
    for (pattern, path) in [
        ("**/*.py", None),
        ("*.md", None),
        ("**/*.md", None),
        ("*.py", Some("src")),
        ("**/*.log", None),
        ("*.nothing", None),
        ("**/*.py", Some("missing-dir")),
        ("src/*", None),
        ("*", Some("notes")),
        ("**/*.txt", Some("/workspace/notes")),
    ] {
        let mut input = json!({ "pattern": pattern });
        if let Some(p) = path {
            input["path"] = json!(p.strip_prefix('/').map_or(ws(p), |_| p.to_string()));
        }
        add("Glob", input);
    }

    // Grep
    let grep = |pattern: &str, extra: Value| {
        let mut input = json!({ "pattern": pattern });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        input
    };
    for input in [
        grep("TODO", json!({})),
        grep("TODO", json!({ "output_mode": "content" })),
        grep("TODO", json!({ "output_mode": "count" })),
        grep("TODO", json!({ "output_mode": "content", "-n": false })),
        grep("todo", json!({ "-i": true })),
        grep("todo", json!({ "-i": true, "output_mode": "content" })),
        grep(
            "gamma",
            json!({ "output_mode": "content", "-A": 1, "path": ws("notes") }),
        ),
        grep(
            "gamma",
            json!({ "output_mode": "content", "-B": 2, "path": ws("notes") }),
        ),
        grep(
            "gamma|eta",
            json!({ "output_mode": "content", "-C": 1, "path": ws("notes/todo.txt") }),
        ),
        grep(
            "Step",
            json!({ "output_mode": "content", "context": 1, "path": ws("docs") }),
        ),
        grep(
            "a[a-z]+",
            json!({ "output_mode": "content", "-o": true, "path": ws("notes/todo.txt") }),
        ),
        grep("def", json!({ "glob": "*.py" })),
        grep("def", json!({ "glob": "*.py", "output_mode": "content" })),
        grep("TODO", json!({ "type": "rust" })),
        grep("TODO", json!({ "type": "py", "output_mode": "content" })),
        grep(
            "e",
            json!({ "path": ws("notes/todo.txt"), "output_mode": "content", "head_limit": 3 }),
        ),
        grep(
            "e",
            json!({ "path": ws("notes/todo.txt"), "output_mode": "content", "head_limit": 3, "offset": 2 }),
        ),
        grep(".", json!({ "head_limit": 2 })),
        grep(".", json!({ "head_limit": 2, "offset": 1 })),
        grep(".", json!({ "output_mode": "count", "head_limit": 1 })),
        grep(
            "foo\\nbar",
            json!({ "multiline": true, "output_mode": "content" }),
        ),
        grep("foo\\nbar", json!({ "output_mode": "content" })),
        grep("(unclosed", json!({})),
        grep(
            "answer",
            json!({ "path": ws("src/lib.rs"), "output_mode": "content" }),
        ),
        grep("nothing-matches-this", json!({})),
        grep("nothing-matches-this", json!({ "output_mode": "content" })),
        grep("nothing-matches-this", json!({ "output_mode": "count" })),
        grep("x", json!({ "path": ws("missing") })),
        grep(
            "line\\r$",
            json!({ "path": ws("crlf.txt"), "output_mode": "content" }),
        ),
        grep(
            "match",
            json!({ "path": ws("matches.txt"), "output_mode": "count" }),
        ),
        grep(
            "match 1999",
            json!({ "path": ws("matches.txt"), "output_mode": "content" }),
        ),
        grep(
            "match",
            json!({ "path": ws("matches.txt"), "output_mode": "content", "head_limit": 0 }),
        ),
        grep("café", json!({ "output_mode": "content" })),
    ] {
        add("Grep", input);
    }

    // Bash
    for input in [
        json!({ "command": "echo hello", "description": "Say hello" }),
        json!({ "command": "true" }),
        json!({ "command": "false" }),
        json!({ "command": "echo out; echo err >&2; exit 3" }),
        json!({ "command": "ls nope" }),
        json!({ "command": "echo only-err >&2" }),
        json!({ "command": "cd src && pwd" }),
        json!({ "command": "pwd" }),
        json!({ "command": "ls" }),
        json!({ "command": "cd .." }),
        json!({ "command": "pwd" }),
        json!({ "command": "x=5; echo $((x * 3))" }),
        json!({ "command": "echo \"[$x]\"" }),
        json!({ "command": "export Y=7; echo $Y" }),
        json!({ "command": "echo \"[$Y]\"" }),
        json!({ "command": "printf '\\n\\nafter blank lines\\n\\n\\n'" }),
        json!({ "command": "printf 'no newline'" }),
        json!({ "command": "seq 1 40000" }),
        json!({ "command": "sleep 5", "timeout": 1000 }),
        json!({ "command": "echo after-timeout" }),
        json!({ "command": "cd / && pwd" }),
        json!({ "command": "pwd" }),
        json!({ "command": "cat notes/todo.txt | wc -l" }),
        json!({ "command": "" }),
        json!({}),
        json!({ "command": "grep -c nope README.md" }),
        json!({ "command": "echo hi | grep nope" }),
        json!({ "command": "test -f nope" }),
        json!({ "command": "head -c 30001 /dev/zero | tr '\\0' a" }),
        json!({ "command": "head -c 20000 /dev/zero | tr '\\0' b; exit 1" }),
        json!({ "command": "cd /tmp && pwd" }),
        json!({ "command": "pwd" }),
        json!({ "command": "echo hi", "run_in_background": false, "timeout": "5000" }),
        json!({ "command": "echo hi", "bogus": 1 }),
    ] {
        add("Bash", input);
    }

    // More of each, after the state the calls above left.
    add("Read", json!({ "file_path": ws("src/app.txt") }));
    add(
        "Read",
        json!({ "file_path": ws("no-newline.txt"), "offset": "2" }),
    );
    add(
        "Read",
        json!({ "file_path": ws("no-newline.txt"), "bogus": true }),
    );
    add(
        "Read",
        json!({ "file_path": ws("notes/todo.txt"), "offset": 3, "limit": 2 }),
    );
    add("Bash", json!({ "command": "echo iota >> notes/todo.txt" }));
    add(
        "Edit",
        json!({ "file_path": ws("notes/todo.txt"), "old_string": "alpha", "new_string": "ALPHA" }),
    );
    add(
        "Read",
        json!({ "file_path": ws("notes/todo.txt"), "offset": 8 }),
    );
    add(
        "Edit",
        json!({ "file_path": ws("notes/todo.txt"), "old_string": "alpha", "new_string": "ALPHA" }),
    );
    add("Glob", json!({ "pattern": "/workspace/src/*.py" }));
    add("Glob", json!({ "pattern": "**/*.{py,rs}" }));
    add(
        "Glob",
        json!({ "pattern": "*.txt", "path": ws("notes/todo.txt") }),
    );
    add(
        "Grep",
        grep(
            "END",
            json!({ "path": ws("wide.txt"), "output_mode": "content" }),
        ),
    );
    add(
        "Grep",
        grep(
            "a[a-z]+",
            json!({ "path": ws("notes"), "output_mode": "content", "-o": true }),
        ),
    );
    add("Grep", grep("TODO", json!({ "glob": "*.{md,rs}" })));
    add(
        "Grep",
        grep("TODO", json!({ "glob": "!*.py", "output_mode": "count" })),
    );
    add(
        "Grep",
        grep("todo", json!({ "-i": true, "output_mode": "count" })),
    );
    add(
        "Grep",
        grep(
            "alpha",
            json!({ "path": ws("notes"), "output_mode": "content", "-n": false }),
        ),
    );
    // Each command is a whole shell: its EXIT trap runs when it ends, and is gone after.
    add(
        "Bash",
        json!({ "command": "trap 'echo cleanup' EXIT; echo work" }),
    );
    add("Bash", json!({ "command": "echo next" }));
    // Claude Code 2.1.332: Read's allow_large reads past the usual caps; a pattern with a
    // newline needs multiline.
    add(
        "Read",
        json!({ "file_path": ws("tokens.txt"), "allow_large": true }),
    );
    add(
        "Read",
        json!({ "file_path": ws("big.txt"), "allow_large": true }),
    );
    add(
        "Read",
        json!({ "file_path": ws("tokens.txt"), "offset": 3000, "limit": 3, "allow_large": false }),
    );
    add(
        "Grep",
        grep(
            "gamma\\ndelta",
            json!({ "path": ws("notes"), "output_mode": "content", "multiline": true }),
        ),
    );
    c
}

// ----- the fake Messages API -----

#[derive(Default)]
struct Fake {
    /// The scripted calls, with host paths.
    script: Vec<Value>,
    /// tool_use id -> the tool_result block Claude Code sent, first time seen.
    results: BTreeMap<String, Value>,
    /// Requests that were neither the main loop nor count_tokens (title generation, ...).
    side_requests: usize,
    /// The last main-loop request's messages (`BURROW_CLAUDE_CODE_MESSAGES` writes them:
    /// what Claude Code sends beside its tool results, for a version bump's review).
    last_messages: Value,
    /// The input schemas of the tools Claude Code offered, by name.
    schemas: BTreeMap<String, Value>,
}

type Shared = Arc<Mutex<Fake>>;

fn tool_use_id(n: usize) -> String {
    format!("toolu_{n:04}")
}

/// The stand-in for the API's token count: Claude Code's own estimate, the text's length in
/// UTF-16 code units / 4, rounded (Read counts one message holding the file's text).
fn estimate_tokens(messages: &Value) -> usize {
    fn text_len(v: &Value) -> usize {
        match v {
            Value::String(s) => s.encode_utf16().count(),
            Value::Array(a) => a.iter().map(|b| text_len(&b["text"])).sum(),
            _ => 0,
        }
    }
    let len: usize = messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| text_len(&m["content"]))
        .sum();
    (len as f64 / 4.0).round() as usize
}

async fn count_tokens(Json(body): Json<Value>) -> Response {
    Json(json!({ "input_tokens": estimate_tokens(&body["messages"]) })).into_response()
}

async fn messages(State(fake): State<Shared>, Json(body): Json<Value>) -> Response {
    let is_main = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    let (blocks, stop) = {
        let mut f = fake.lock().unwrap();
        if !is_main {
            f.side_requests += 1;
            (vec![json!({ "type": "text", "text": "ok" })], "end_turn")
        } else {
            if f.schemas.is_empty() {
                for t in body["tools"].as_array().into_iter().flatten() {
                    let name = t["name"].as_str().unwrap_or("").to_string();
                    f.schemas.insert(name, t["input_schema"].clone());
                }
            }
            f.last_messages = body["messages"].clone();
            // The turn is the number of tool results in the conversation so far: a retried
            // request gets the same answer.
            let mut seen = 0;
            for m in body["messages"].as_array().into_iter().flatten() {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_result" {
                        seen += 1;
                        let id = b["tool_use_id"].as_str().unwrap_or("").to_string();
                        f.results.entry(id).or_insert_with(|| b.clone());
                    }
                }
            }
            match f.script.get(seen) {
                Some(call) => (
                    vec![json!({
                        "type": "tool_use", "id": tool_use_id(seen),
                        "name": call["tool"], "input": call["input"],
                    })],
                    "tool_use",
                ),
                None => (vec![json!({ "type": "text", "text": "done" })], "end_turn"),
            }
        }
    };
    let model = body["model"].clone();
    let usage = json!({ "input_tokens": 10, "output_tokens": 5 });
    if body["stream"] != json!(true) {
        return Json(json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": usage,
        }))
        .into_response();
    }
    let mut events = vec![(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage,
        }}),
    )];
    for (index, b) in blocks.iter().enumerate() {
        let (start, delta) = if b["type"] == "text" {
            (
                json!({ "type": "text", "text": "" }),
                json!({ "type": "text_delta", "text": b["text"] }),
            )
        } else {
            (
                json!({ "type": "tool_use", "id": b["id"], "name": b["name"], "input": {} }),
                json!({ "type": "input_json_delta", "partial_json": b["input"].to_string() }),
            )
        };
        events.push((
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        events.push((
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": index, "delta": delta }),
        ));
        events.push((
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    events.push((
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": { "output_tokens": 5 } }),
    ));
    events.push(("message_stop", json!({ "type": "message_stop" })));
    let body: String = events
        .iter()
        .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
        .collect();
    ([("content-type", "text/event-stream")], body).into_response()
}

/// The Claude Code executable and whether it is the pinned version.
fn claude_code() -> Option<PathBuf> {
    let exe = std::env::var_os("BURROW_CLAUDE_CODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("claude"));
    let out = Command::new(&exe).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout);
    if version.split_whitespace().next() == Some(PINNED.as_str()) {
        Some(exe)
    } else {
        eprintln!(
            "note: {} reports version {:?}, not the pinned {}",
            exe.display(),
            version.trim(),
            *PINNED
        );
        None
    }
}

/// What one run of Claude Code answered.
struct Recording {
    results: Vec<Value>,
    /// The input schemas of the six tools, by name.
    schemas: BTreeMap<String, Value>,
}

/// Runs the script through the real Claude Code in `workdir`; the results with host paths
/// written as `/workspace`, normalised to burrow's shape (`{content: [blocks], is_error}`).
fn run_claude_code(exe: &Path, workdir: &Path, calls: &[Value]) -> Recording {
    let prefix = workdir.to_string_lossy().into_owned();
    let script: Vec<Value> =
        serde_json::from_str(&json!(calls).to_string().replace("/workspace", &prefix)).unwrap();
    let fake: Shared = Arc::new(Mutex::new(Fake {
        script,
        ..Default::default()
    }));
    let app = axum::Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
        .with_state(fake.clone());
    let (_rt, base) = common::serve(app);

    let home = tempfile::tempdir().unwrap();
    let out = Command::new(exe)
        .current_dir(workdir)
        .args([
            "-p",
            "Run the scripted tool calls.",
            "--dangerously-skip-permissions",
        ])
        .args(["--output-format", "json", "--max-turns", "1000"])
        .arg("--allowedTools")
        .args(TOOLS)
        .arg("--tools")
        .arg(TOOLS.join(","))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("IS_SANDBOX", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ANTHROPIC_BASE_URL", &base)
        .env("ANTHROPIC_API_KEY", "sk-ant-conformance-test")
        .env("TZ", "UTC")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "claude failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let f = fake.lock().unwrap();
    if let Ok(path) = std::env::var("BURROW_CLAUDE_CODE_MESSAGES") {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&f.last_messages).unwrap(),
        )
        .unwrap();
    }
    let schemas = TOOLS
        .iter()
        .map(|t| {
            (
                t.to_string(),
                f.schemas.get(*t).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    let results = (0..calls.len())
        .map(|n| {
            let r = f
                .results
                .get(&tool_use_id(n))
                .unwrap_or_else(|| panic!("no result for call #{n} {}\n{stdout}", calls[n]));
            let content = match &r["content"] {
                Value::String(s) => vec![json!({ "type": "text", "text": s })],
                Value::Array(a) => a
                    .iter()
                    .map(|b| {
                        let mut b = b.clone();
                        if let Some(o) = b.as_object_mut() {
                            o.remove("cache_control");
                        }
                        b
                    })
                    .collect(),
                Value::Null => vec![],
                other => panic!("unexpected tool_result content {other}"),
            };
            let v = json!({ "content": content, "is_error": r["is_error"] == json!(true) });
            serde_json::from_str(&v.to_string().replace(&prefix, "/workspace")).unwrap()
        })
        .collect();
    Recording { results, schemas }
}

/// The tools compared (Claude Code's; burrow's MultiEdit is an addition).
const TOOLS: &[&str] = &["Bash", "Read", "Write", "Edit", "Glob", "Grep"];

/// `fixtures/claude-code-known-differences.txt`: `#N reason` lines name the calls whose
/// results may differ.
fn known_differences() -> BTreeMap<usize, String> {
    let path = root().join("fixtures/claude-code-known-differences.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix('#')?;
            let (n, reason) = rest.split_once(' ')?;
            Some((n.parse().ok()?, reason.trim().to_string()))
        })
        .collect()
}

/// The recording in `fixtures/`, or a live run of the pinned Claude Code when it is installed
/// (`BURROW_RECORD_CLAUDE_CODE=1` rewrites the recording from it).
fn reference(tree: &Path, tmp: &Path, calls: &[Value]) -> Recording {
    let recorded = std::fs::read_to_string(recording_path()).ok().map(|t| {
        let v: Value = serde_json::from_str(&t).unwrap();
        Recording {
            results: serde_json::from_value(v["results"].clone()).unwrap(),
            schemas: serde_json::from_value(v["schemas"].clone()).unwrap_or_default(),
        }
    });
    let recorded_calls = std::fs::read_to_string(recording_path())
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| v["calls"].clone());
    let Some(exe) = claude_code() else {
        let pinned = PINNED.as_str();
        let msg = format!(
            "Claude Code {pinned} is not installed (npm install @anthropic-ai/claude-code@{pinned}, then set BURROW_CLAUDE_CODE to its bin/claude); comparing with its recording"
        );
        if std::env::var("BURROW_REQUIRE_CLAUDE_CODE").as_deref() == Ok("1") {
            panic!("{msg}");
        }
        eprintln!("{msg}");
        assert_eq!(
            recorded_calls.as_ref(),
            Some(&json!(calls)),
            "the recording is of another script: re-record it (scripts/record-claude-code)"
        );
        return recorded.expect("no recording of Claude Code's results");
    };
    let workdir = tmp.join("ref");
    let status = Command::new("cp")
        .arg("-a")
        .arg(tree)
        .arg(&workdir)
        .status()
        .unwrap();
    assert!(status.success());
    let live = run_claude_code(&exe, &workdir.canonicalize().unwrap(), calls);
    if std::env::var("BURROW_RECORD_CLAUDE_CODE").as_deref() == Ok("1") {
        let v = json!({
            "claude_code": *PINNED, "calls": calls, "schemas": live.schemas, "results": live.results,
        });
        std::fs::write(
            recording_path(),
            serde_json::to_string_pretty(&v).unwrap() + "\n",
        )
        .unwrap();
    }
    live
}

/// What is compared of a result:
/// - where a result too large to return was saved differs by design (Claude Code: its project
///   directory under `~/.claude`; burrow: `/tmp/tool-results/` in the sandbox);
/// - Grep's content and count lines come in the order ripgrep's parallel threads finish the
///   files (it varies from run to run), so unless the output was cut by a limit they are
///   compared as a set.
fn normalise(call: &Value, v: &Value) -> Value {
    let text = v.to_string();
    let re = regex::Regex::new(r"Full output saved to: [^ ]+?\.txt").unwrap();
    let mut v: Value =
        serde_json::from_str(&re.replace_all(&text, "Full output saved to: <file>")).unwrap();
    let mode = call["input"]["output_mode"].as_str().unwrap_or("");
    if call["tool"] == "Grep"
        && (mode == "content" || mode == "count")
        && let Some(t) = v["content"][0]["text"].as_str()
        && !t.contains("pagination")
        && !t.starts_with("<persisted-output>")
    {
        let (body, tail) = t.split_once("\n\nFound ").unwrap_or((t, ""));
        let mut lines: Vec<&str> = body.lines().collect();
        lines.sort_unstable();
        v["content"][0]["text"] = json!(format!("{}|{tail}", lines.join("\n")));
    }
    v
}

/// At most `n` characters of a result, for failure messages.
fn clip(v: &Value, n: usize) -> String {
    let s = v.to_string();
    match s.char_indices().nth(n) {
        Some((cut, _)) => format!("{}... ({} chars)", &s[..cut], s.len()),
        None => s,
    }
}

#[test]
fn claude_code_family_matches_the_real_claude_code() {
    let calls = calls();
    assert!(calls.len() >= 100, "{} calls", calls.len());
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    build_tree(&tree);
    let theirs = reference(&tree, tmp.path(), &calls).results;

    let sb = common::sandbox(tmp.path());
    let s = sb.create_from(None, &tree, &mut |_| {}).unwrap();
    let known = known_differences();
    let mut mismatches = Vec::new();
    let mut dump = Vec::new();
    let mut saved = Vec::new();
    for (i, (call, theirs)) in calls.iter().zip(&theirs).enumerate() {
        let out = sb
            .call(
                &s.id,
                Family::ClaudeCode,
                call["tool"].as_str().unwrap(),
                &call["input"],
            )
            .unwrap();
        let ours = serde_json::to_value(&out).unwrap();
        dump.push(json!({ "n": i, "call": call, "burrow": ours, "claude_code": theirs }));
        if let Some(path) = ours.to_string().split("Full output saved to: ").nth(1) {
            saved.push(path.split(".txt").next().unwrap_or("").to_string() + ".txt");
        }
        if normalise(call, &ours) != normalise(call, theirs) && !known.contains_key(&i) {
            mismatches.push(format!(
                "#{i} {call}\n  burrow:      {}\n  claude code: {}",
                clip(&ours, 600),
                clip(theirs, 600)
            ));
        }
    }
    if let Ok(path) = std::env::var("BURROW_CLAUDE_CODE_DUMP") {
        std::fs::write(path, serde_json::to_string_pretty(&dump).unwrap()).unwrap();
    }
    // A saved result is there for the agent to read, in the session.
    assert!(!saved.is_empty());
    for path in saved {
        let out = sb
            .call(
                &s.id,
                Family::ClaudeCode,
                "Bash",
                &json!({ "command": format!("test -s {path} && echo saved") }),
            )
            .unwrap();
        assert_eq!(
            serde_json::to_value(&out).unwrap()["content"][0]["text"],
            "saved",
            "{path}"
        );
    }
    eprintln!(
        "{} calls compared, {} known differences, {} mismatches",
        calls.len(),
        known.len(),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The shape of a schema that matters to a caller: properties with their types and enums,
/// what is required, whether other properties are refused (descriptions are burrow's own).
fn shape(schema: &Value) -> Value {
    let props: BTreeMap<String, Value> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let mut t = v["type"].clone();
            if let Some(a) = t.as_array() {
                let rest: Vec<&Value> = a.iter().filter(|x| *x != "null").collect();
                t = if rest.len() == 1 {
                    rest[0].clone()
                } else {
                    json!(rest)
                };
            }
            (k.clone(), json!({ "type": t, "enum": v["enum"] }))
        })
        .collect();
    let mut required: Vec<String> =
        serde_json::from_value(schema["required"].clone()).unwrap_or_default();
    required.sort();
    json!({
        "properties": props,
        "required": required,
        "additionalProperties": schema["additionalProperties"],
    })
}

#[test]
fn claude_code_schemas_match_the_real_claude_code() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    build_tree(&tree);
    assert_eq!(
        burrow_host::tools::claude_code::CLAUDE_CODE_VERSION,
        PINNED.as_str(),
        "the family and its conformance test follow one Claude Code version"
    );
    let theirs = reference(&tree, tmp.path(), &calls()).schemas;
    let ours: BTreeMap<String, Value> = burrow_host::tools::schema::tools(Family::ClaudeCode)
        .into_iter()
        .map(|d| (d.name, d.input_schema))
        .collect();
    for tool in TOOLS {
        let theirs = theirs
            .get(*tool)
            .unwrap_or_else(|| panic!("no recorded schema for {tool}"));
        let ours = ours
            .get(*tool)
            .unwrap_or_else(|| panic!("burrow has no {tool}"));
        assert_eq!(shape(ours), shape(theirs), "{tool}");
    }
}
