//! Golden tests of the Claude Code (B) and Messages API (C) tool families: every documented
//! string of ../shared/TOOLS.md, success and error paths, through a real session (SQLite
//! store, wasmtime, the embedded components). Family A is checked against its reference
//! implementation in conformance.rs.

use std::path::Path;

use crate::common;

use burrow_host::session::{Family, Sandbox};
use serde_json::{Value, json};

struct Fx {
    _dir: tempfile::TempDir,
    sb: Sandbox,
    id: String,
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let sb = common::sandbox(dir.path());
        let id = sb.create(None).unwrap().id;
        Fx { _dir: dir, sb, id }
    }

    fn call(&self, family: Family, tool: &str, input: Value) -> (bool, String) {
        let out = self.sb.call(&self.id, family, tool, &input).unwrap();
        (out.is_error, out.joined_text())
    }

    /// A Claude Code call that must succeed with exactly `want`.
    fn cc_ok(&self, tool: &str, input: Value, want: &str) {
        let (err, text) = self.call(Family::ClaudeCode, tool, input.clone());
        assert_eq!(text, want, "{tool} {input}");
        assert!(!err, "{tool} {input} should succeed");
    }

    /// A Claude Code call refused with exactly `want` (inside <tool_use_error>).
    fn cc_refused(&self, tool: &str, input: Value, want: &str) {
        let (err, text) = self.call(Family::ClaudeCode, tool, input.clone());
        assert_eq!(
            text,
            format!("<tool_use_error>{want}</tool_use_error>"),
            "{tool} {input}"
        );
        assert!(err, "{tool} {input} should be an error");
    }

    /// A Claude Code call that fails while running, with exactly `want` (not wrapped, as
    /// Claude Code answers a missing file or a size cap).
    fn cc_failed(&self, tool: &str, input: Value, want: &str) {
        let (err, text) = self.call(Family::ClaudeCode, tool, input.clone());
        assert_eq!(text, want, "{tool} {input}");
        assert!(err, "{tool} {input} should be an error");
    }

    fn api(&self, tool: &str, input: Value) -> (bool, String) {
        self.call(Family::Api, tool, input)
    }

    fn sh(&self, cmd: &str) {
        let (err, text) = self.call(Family::ClaudeCode, "Bash", json!({ "command": cmd }));
        assert!(!err, "{cmd}: {text}");
    }

    fn file(&self, path: &str) -> Option<Vec<u8>> {
        self.sb.cat(&self.id, path).ok()
    }
}

const MODIFIED: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";
/// What Claude Code appends to Edit's success text when the file moved under its Read.
const STALE: &str = " (note: the file had been modified on disk since you last read it \u{2014} the edit applied cleanly, but the file contains other changes not in your context. Read it before edits that depend on surrounding content.)";
/// What Claude Code appends to Write's and Edit's success texts.
const CURRENT: &str = " (file state is current in your context \u{2014} no need to Read it back)";

#[test]
fn claude_code_read_write_and_file_state() {
    let fx = Fx::new();
    fx.cc_failed(
        "Read",
        json!({"file_path": "/workspace/nope.txt"}),
        "File does not exist. Note: your current working directory is /workspace.",
    );
    fx.cc_ok(
        "Write",
        json!({"file_path": "/workspace/a.txt", "content": "one\ntwo\n"}),
        &format!("File created successfully at: /workspace/a.txt{CURRENT}"),
    );
    // Written by this session: the model has the file.
    fx.cc_ok(
        "Write",
        json!({"file_path": "/workspace/a.txt", "content": "one\ntwo\nthree\n"}),
        &format!("The file /workspace/a.txt has been updated successfully.{CURRENT}"),
    );
    // Claude Code numbers the empty line after the last line break too.
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/a.txt"}),
        "1\tone\n2\ttwo\n3\tthree\n4\t",
    );
    // The same window again: Claude Code 2.1.332 answers it again.
    fx.cc_ok(
        "Read",
        json!({"file_path": "a.txt"}),
        "1\tone\n2\ttwo\n3\tthree\n4\t",
    );
    // A window of only the empty line after the last line break.
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/a.txt", "offset": 4}),
        "4\t",
    );
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/a.txt", "offset": 2, "limit": 1}),
        "2\ttwo",
    );
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/a.txt", "offset": 9}),
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (9). The file has 4 lines.</system-reminder>",
    );
    fx.sh("touch empty.txt; printf 'from bash\\n' > b.txt; mkdir -p sub");
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/empty.txt"}),
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
    );
    fx.cc_failed(
        "Read",
        json!({"file_path": "/workspace/sub"}),
        "EISDIR: illegal operation on a directory, read '/workspace/sub'",
    );
    fx.cc_refused(
        "Write",
        json!({"file_path": "/workspace/sub", "content": "x"}),
        "/workspace/sub is a directory, not a file. To create a file inside it, include the file name in file_path.",
    );
    // An unread file: the Edit goes through, without claiming the model has the file.
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "bash", "new_string": "sh"}),
        "The file /workspace/b.txt has been updated successfully.",
    );
    assert_eq!(fx.file("b.txt").unwrap(), b"from sh\n");
    fx.cc_ok("Read", json!({"file_path": "b.txt"}), "1\tfrom sh\n2\t");
    // Changed behind the agent's back: a Write, and an Edit that no longer applies, are
    // refused and change nothing...
    fx.sh("echo more >> b.txt");
    fx.cc_refused(
        "Write",
        json!({"file_path": "/workspace/b.txt", "content": "clobber"}),
        MODIFIED,
    );
    fx.cc_refused(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "nowhere", "new_string": "x"}),
        MODIFIED,
    );
    assert_eq!(fx.file("b.txt").unwrap(), b"from sh\nmore\n");
    // ...an Edit that still applies goes through with Claude Code's note, and then the model
    // no longer has the whole file, until it reads it.
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "sh", "new_string": "bash"}),
        &format!("The file /workspace/b.txt has been updated successfully.{STALE}"),
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "bash", "new_string": "ksh"}),
        "The file /workspace/b.txt has been updated successfully.",
    );
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/b.txt"}),
        "1\tfrom ksh\n2\tmore\n3\t",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "ksh", "new_string": "zsh"}),
        &format!("The file /workspace/b.txt has been updated successfully.{CURRENT}"),
    );
    // A window is not the whole file: no claim after editing it.
    fx.cc_ok(
        "Read",
        json!({"file_path": "/workspace/b.txt", "offset": 2}),
        "2\tmore\n3\t",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "more", "new_string": "More"}),
        "The file /workspace/b.txt has been updated successfully.",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": "/workspace/b.txt", "old_string": "More", "new_string": "more"}),
        "The file /workspace/b.txt has been updated successfully.",
    );
    assert_eq!(fx.file("b.txt").unwrap(), b"from zsh\nmore\n");
    // Relative paths follow the shell's cwd; paths outside the workspace are refused.
    fx.sh("cd sub && printf 'inside\\n' > c.txt");
    fx.cc_ok("Read", json!({"file_path": "c.txt"}), "1\tinside\n2\t");
    fx.cc_refused(
        "Read",
        json!({"file_path": "/etc/passwd"}),
        "Path /etc/passwd is outside the session's workspace (/workspace); only paths under it can be used.",
    );
    fx.cc_refused(
        "Read",
        json!({"file_path": "../../x"}),
        "Path ../../x is outside the session's workspace (/workspace); only paths under it can be used.",
    );
    fx.cc_refused(
        "Read",
        json!({"path": "a.txt"}),
        "InputValidationError: Read failed due to the following issues:\nThe required parameter `file_path` is missing\nAn unexpected parameter `path` was provided",
    );
    // Over the size cap: Claude Code's advice, and allow_large reads it (up to burrow's
    // budget of 1.2 MB).
    fx.sh("cd /workspace && head -c 307200 /dev/zero | tr '\\0' x > big.txt; head -c 1300000 /dev/zero | tr '\\0' y > huge.txt");
    fx.cc_failed(
        "Read",
        json!({"file_path": "/workspace/big.txt"}),
        "File content (300KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file. To read it anyway, up to what still fits in your context, call Read again with allow_large: true \u{2014} only if you genuinely need all of it or the user asked for the whole file.",
    );
    let (err, text) = fx.call(
        Family::ClaudeCode,
        "Read",
        json!({"file_path": "/workspace/big.txt", "allow_large": true}),
    );
    assert!(
        !err && text.len() == 307_202 && text.starts_with("1\txxx"),
        "{}",
        &text[..80.min(text.len())]
    );
    fx.cc_failed(
        "Read",
        json!({"file_path": "/workspace/huge.txt", "allow_large": true}),
        "File content (1.2MB) exceeds maximum allowed size (1.1MB). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file. Even with allow_large, this is more than fits in the context you have left this turn (other large reads in the same turn share that room).",
    );
    // Images come back as image blocks.
    fx.sh("printf '\\211PNG\\r\\n' > /workspace/pic.png");
    let out = fx
        .sb
        .call(
            &fx.id,
            Family::ClaudeCode,
            "Read",
            &json!({"file_path": "/workspace/pic.png"}),
        )
        .unwrap();
    let block = serde_json::to_value(&out.content[0]).unwrap();
    assert_eq!(block["type"], "image");
    assert_eq!(block["source"]["media_type"], "image/png");
}

#[test]
fn claude_code_edit_and_multiedit() {
    let fx = Fx::new();
    let f = "/workspace/e.txt";
    fx.cc_refused(
        "Edit",
        json!({"file_path": f, "old_string": "a", "new_string": "a"}),
        "No changes to make: old_string and new_string are exactly the same.",
    );
    fx.cc_refused(
        "Edit",
        json!({"file_path": f, "old_string": "a", "new_string": "b"}),
        "File does not exist. Note: your current working directory is /workspace.",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": f, "old_string": "", "new_string": "alpha\nbeta\nalpha\n"}),
        &format!("The file /workspace/e.txt has been updated successfully.{CURRENT}"),
    );
    fx.cc_refused(
        "Edit",
        json!({"file_path": f, "old_string": "", "new_string": "x"}),
        "Cannot create new file - file already exists.",
    );
    fx.cc_refused(
        "Edit",
        json!({"file_path": f, "old_string": "gamma", "new_string": "x"}),
        "String to replace not found in file.\nString: gamma",
    );
    fx.cc_refused(
        "Edit",
        json!({"file_path": f, "old_string": "alpha", "new_string": "x"}),
        "Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: alpha",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": f, "old_string": "alpha", "new_string": "A", "replace_all": true}),
        &format!(
            "The file /workspace/e.txt has been updated. All occurrences were successfully replaced.{CURRENT}"
        ),
    );
    assert_eq!(fx.file("e.txt").unwrap(), b"A\nbeta\nA\n");

    // CRLF files match on LF and keep CRLF.
    fx.sh("printf 'first line\\r\\nsecond line\\r\\n' > crlf.txt");
    fx.cc_ok(
        "Read",
        json!({"file_path": "crlf.txt"}),
        "1\tfirst line\n2\tsecond line\n3\t",
    );
    fx.cc_ok(
        "Edit",
        json!({"file_path": "crlf.txt", "old_string": "first line\nsecond", "new_string": "1st line\n2nd"}),
        &format!("The file /workspace/crlf.txt has been updated successfully.{CURRENT}"),
    );
    assert_eq!(fx.file("crlf.txt").unwrap(), b"1st line\r\n2nd line\r\n");

    // MultiEdit: in order, each on the previous result; all or nothing.
    fx.cc_ok(
        "MultiEdit",
        json!({"file_path": f, "edits": [
            {"old_string": "beta", "new_string": "B"},
            {"old_string": "A", "new_string": "alpha", "replace_all": true},
        ]}),
        "Applied 2 edits to /workspace/e.txt:\n1. Replaced \"beta\" with \"B\"\n2. Replaced \"A\" with \"alpha\"",
    );
    assert_eq!(fx.file("e.txt").unwrap(), b"alpha\nB\nalpha\n");
    let before = fx.sb.history(&fx.id, 1000).unwrap().len();
    fx.cc_refused(
        "MultiEdit",
        json!({"file_path": f, "edits": [
            {"old_string": "B", "new_string": "beta"},
            {"old_string": "missing", "new_string": "x"},
        ]}),
        "String to replace not found in file.\nString: missing",
    );
    assert_eq!(
        fx.file("e.txt").unwrap(),
        b"alpha\nB\nalpha\n",
        "first edit rolled back"
    );
    assert_eq!(
        fx.sb.history(&fx.id, 1000).unwrap().len(),
        before,
        "no version for a refusal"
    );
    fx.cc_refused(
        "MultiEdit",
        json!({"file_path": f, "edits": [
            {"old_string": "B", "new_string": "Bee"},
            {"old_string": "Bee", "new_string": "x"},
        ]}),
        "Cannot edit file: old_string is a substring of a new_string from a previous edit.\nString: Bee",
    );
    fx.cc_ok(
        "MultiEdit",
        json!({"file_path": "/workspace/new/m.txt", "edits": [
            {"old_string": "", "new_string": "hello world"},
        ]}),
        "Applied 1 edit to /workspace/new/m.txt:\n1. Replaced \"\" with \"hello world\"",
    );
    assert_eq!(fx.file("new/m.txt").unwrap(), b"hello world");
}

#[test]
fn claude_code_glob_and_grep() {
    let fx = Fx::new();
    fx.sh(
        "mkdir -p src/a docs logs .git && printf 'fn main() {}\\n// TODO one\\n' > src/main.rs \
         && printf 'todo two\\nTODO three\\n' > src/a/lib.rs && printf '# TODO docs\\n' > docs/x.md \
         && printf 'TODO ignored\\n' > logs/app.log && printf 'logs/\\n' > .gitignore \
         && printf 'TODO in git\\n' > .git/HEAD",
    );
    // Oldest first, relative to the cwd; a pattern without `/` matches names at any depth;
    // hidden and ignored files are found too (ripgrep's --hidden --no-ignore).
    fx.cc_ok(
        "Glob",
        json!({"pattern": "**/*.rs"}),
        "src/main.rs\nsrc/a/lib.rs",
    );
    fx.cc_ok(
        "Glob",
        json!({"pattern": "*.rs", "path": "/workspace/src"}),
        "src/main.rs\nsrc/a/lib.rs",
    );
    fx.cc_ok("Glob", json!({"pattern": "src/*.rs"}), "src/main.rs");
    fx.cc_ok("Glob", json!({"pattern": "*.log"}), "logs/app.log");
    fx.cc_ok("Glob", json!({"pattern": "HEAD"}), ".git/HEAD");
    fx.cc_ok("Glob", json!({"pattern": "**/*.py"}), "No files found");
    fx.cc_failed(
        "Glob",
        json!({"pattern": "*", "path": "/workspace/none"}),
        "Directory does not exist: /workspace/none. Note: your current working directory is /workspace.",
    );
    fx.sh("mkdir many && (cd many && for i in $(seq 1 120); do touch f$i.txt; done)");
    let (_, text) = fx.call(Family::ClaudeCode, "Glob", json!({"pattern": "many/*.txt"}));
    assert_eq!(text.lines().count(), 101);
    assert!(
        text.ends_with(
            "\n(Showing 100 of 120 matching files; 20 more are not listed. Narrow the pattern or path to see the rest.)"
        ),
        "{text}"
    );

    // files_with_matches (default): .gitignore and VCS dirs are skipped.
    fx.cc_ok(
        "Grep",
        json!({"pattern": "TODO"}),
        "Found 3 files\ndocs/x.md\nsrc/a/lib.rs\nsrc/main.rs",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "TODO", "path": "/workspace/src", "output_mode": "content"}),
        "src/main.rs:2:// TODO one\nsrc/a/lib.rs:2:TODO three",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "todo", "-i": true, "path": "src", "output_mode": "content", "-n": false}),
        "src/main.rs:// TODO one\nsrc/a/lib.rs:todo two\nsrc/a/lib.rs:TODO three",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "todo", "-i": true, "type": "rust", "output_mode": "count"}),
        "src/a/lib.rs:2\nsrc/main.rs:1\n\nFound 3 total occurrences across 2 files.",
    );
    // Counts are in path order; the totals count every file, shown or not.
    fx.cc_ok(
        "Grep",
        json!({"pattern": "todo", "-i": true, "output_mode": "count", "head_limit": 1}),
        "docs/x.md:1\n\nFound 4 total occurrences across 3 files. with pagination = limit: 1",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "T.DO", "glob": "*.md", "output_mode": "content", "-o": true}),
        "docs/x.md:1:TODO",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "main", "path": "src", "output_mode": "content", "-A": 1}),
        "src/main.rs:1:fn main() {}\nsrc/main.rs-2-// TODO one",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "todo", "-i": true, "path": "src", "output_mode": "content", "head_limit": 1, "offset": 1}),
        "src/a/lib.rs:1:todo two\n\n[Showing results with pagination = limit: 1, offset: 1]",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "one\\n// TODO", "multiline": true, "output_mode": "content", "path": "src"}),
        "No matches found",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "main.*\\n// TODO", "multiline": true, "output_mode": "content", "path": "src"}),
        "src/main.rs:1:fn main() {}\nsrc/main.rs:2:// TODO one",
    );
    fx.cc_ok("Grep", json!({"pattern": "nothing-here"}), "No files found");
    fx.cc_ok(
        "Grep",
        json!({"pattern": "nothing-here", "output_mode": "content"}),
        "No matches found",
    );
    // Patterns ripgrep rejects fail the search in ripgrep's words.
    let rejected = "Search failed \u{2014} ripgrep rejected the pattern, glob, or file type without searching:\nrg: ";
    fx.cc_failed(
        "Grep",
        json!({"pattern": "(unclosed"}),
        &format!("{rejected}regex parse error:\n    (?:(unclosed)\n    ^\nerror: unclosed group"),
    );
    fx.cc_failed(
        "Grep",
        json!({"pattern": "one\\ntwo"}),
        &format!("{rejected}the literal \"\\n\" is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."),
    );
    fx.cc_failed(
        "Grep",
        json!({"pattern": "x", "type": "klingon"}),
        &format!("{rejected}unrecognized file type: klingon"),
    );
}

/// Grep honours .gitignore with git's own rules, as ripgrep does: a `!pattern` un-ignores,
/// a pattern with a slash is anchored to its file's directory, a nested .gitignore applies
/// below it, and a directory pattern ignores what is inside.
#[test]
fn claude_code_grep_follows_gitignore_rules() {
    let fx = Fx::new();
    fx.sh(
        "mkdir -p logs sub/build deep/a && printf 'needle\\n' | tee a.log keep.log logs/x.txt \
         sub/build/o.txt sub/c.txt deep/a/n.txt > /dev/null \
         && printf '*.log\\n!keep.log\\n/logs\\n' > .gitignore \
         && printf 'build/\\n' > sub/.gitignore && printf 'a/n.txt\\n' > deep/.gitignore",
    );
    fx.cc_ok(
        "Grep",
        json!({"pattern": "needle"}),
        "Found 2 files\nsub/c.txt\nkeep.log",
    );
}

#[test]
fn claude_code_bash() {
    let fx = Fx::new();
    fx.cc_ok("Bash", json!({"command": "echo hi"}), "hi");
    fx.cc_ok(
        "Bash",
        json!({"command": "printf '\\n\\n  \\nfirst\\n  second  \\n\\n'", "description": "blank lines"}),
        "first\n  second",
    );
    fx.cc_ok(
        "Bash",
        json!({"command": "true"}),
        "(Bash completed with no output)",
    );
    fx.cc_failed(
        "Bash",
        json!({"command": "echo out; echo err >&2; exit 3"}),
        "Exit code 3\nout\nerr",
    );
    // grep's status 1 is an answer, not an error.
    fx.cc_ok(
        "Bash",
        json!({"command": "grep nothing /dev/null"}),
        "(Bash completed with no output)",
    );
    // Only the working directory carries over to the next command.
    fx.cc_ok(
        "Bash",
        json!({"command": "mkdir -p d && cd d && X=1"}),
        "(Bash completed with no output)",
    );
    fx.cc_ok(
        "Bash",
        json!({"command": "pwd; echo \"[$X]\""}),
        "/workspace/d\n[]",
    );
    fx.cc_ok(
        "Bash",
        json!({"command": "cd /tmp && pwd"}),
        "/tmp\nShell cwd was reset to /workspace",
    );
    fx.cc_ok("Bash", json!({"command": "pwd"}), "/workspace");
    // Long output is saved in the sandbox and previewed.
    let (_, long) = fx.call(
        Family::ClaudeCode,
        "Bash",
        json!({"command": "seq 1 20000"}),
    );
    assert!(
        long.starts_with("<persisted-output>\nOutput too large (106.3KB). Full output saved to: /tmp/tool-results/"),
        "{long}"
    );
    assert!(long.ends_with("\n...\n</persisted-output>"), "{long}");
    let saved = long
        .split("saved to: ")
        .nth(1)
        .unwrap()
        .split('\n')
        .next()
        .unwrap();
    fx.cc_ok(
        "Bash",
        json!({"command": format!("tail -n 1 {saved}; wc -l < {saved}")}),
        "20000\n20000",
    );
    fx.cc_refused(
        "Bash",
        json!({"command": "sleep 1", "run_in_background": true}),
        "run_in_background is not supported: every burrow tool call runs to completion as one transaction",
    );
    // A timeout rolls the call back.
    let (err, text) = fx.call(
        Family::ClaudeCode,
        "Bash",
        json!({"command": "touch /workspace/partial; while true; do :; done", "timeout": 1000}),
    );
    assert!(err);
    assert_eq!(text, "Exit code 143\nCommand timed out after 1s");
    assert!(fx.file("partial").is_none());
    fx.cc_refused(
        "Bash",
        json!({}),
        "InputValidationError: Bash failed due to the following issue:\nThe required parameter `command` is missing",
    );
}

const CAT: &str = "Here's the result of running `cat -n` on";

#[test]
fn api_text_editor_and_bash() {
    let fx = Fx::new();
    let ed = "str_replace_based_edit_tool";
    let f = "/workspace/f.txt";
    assert_eq!(
        fx.api(ed, json!({"command": "view", "path": "/workspace/nope"})),
        (
            true,
            "The path /workspace/nope does not exist. Please provide a valid path.".into()
        )
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "create", "path": f, "file_text": "one\ntwo\nthree\n"})
        ),
        (
            false,
            "File created successfully at: /workspace/f.txt".into()
        )
    );
    assert_eq!(
        fx.api(ed, json!({"command": "create", "path": f, "file_text": "x"})),
        (true, "File already exists at: /workspace/f.txt. Cannot overwrite files using command `create`.".into())
    );
    assert_eq!(
        fx.api(ed, json!({"command": "view", "path": f})),
        (
            false,
            format!("{CAT} /workspace/f.txt:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\t\n")
        )
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": "f.txt", "view_range": [2, 3]})
        ),
        (
            false,
            format!("{CAT} /workspace/f.txt:\n     2\ttwo\n     3\tthree\n")
        )
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": f, "view_range": [3, -1]})
        ),
        (
            false,
            format!("{CAT} /workspace/f.txt:\n     3\tthree\n     4\t\n")
        )
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": f, "view_range": [0, 2]})
        )
        .1,
        "Invalid `view_range`: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 4]"
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": f, "view_range": [3, 2]})
        )
        .1,
        "Invalid `view_range`: [3, 2]. Its second element `2` should be larger or equal than its first `3`"
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": f, "view_range": [1, 9]})
        )
        .1,
        "Invalid `view_range`: [1, 9]. Its second element `9` should be smaller than the number of lines in the file: `4`"
    );
    assert_eq!(
        fx.api(ed, json!({"command": "view", "path": f, "view_range": [1]}))
            .1,
        "Invalid `view_range`. It should be a list of two integers."
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "view", "path": f, "max_characters": 5})
        )
        .1,
        format!(
            "{CAT} /workspace/f.txt:\n     1\tone\n     2\tt<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>\n"
        )
    );
    assert_eq!(
        fx.api(ed, json!({"command": "str_replace", "path": f, "old_str": "four", "new_str": "4"})),
        (true, "No replacement was performed, old_str `four` did not appear verbatim in /workspace/f.txt.".into())
    );
    fx.sh("printf 'x\\ny\\nx\\n' > dup.txt && mkdir -p dir/sub && touch dir/a.txt dir/sub/b.txt dir/.hidden");
    assert_eq!(
        fx.api(ed, json!({"command": "str_replace", "path": "/workspace/dup.txt", "old_str": "x", "new_str": "z"})),
        (true, "No replacement was performed. Multiple occurrences of old_str `x` in lines [1, 3]. Please ensure it is unique".into())
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "str_replace", "path": f, "old_str": "two", "new_str": "TWO"})
        ),
        (
            false,
            format!(
                "The file /workspace/f.txt has been edited. {CAT} a snippet of /workspace/f.txt:\n     1\tone\n     2\tTWO\n     3\tthree\n     4\t\nReview the changes and make sure they are as expected. Edit the file again if necessary."
            )
        )
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "insert", "path": f, "insert_line": 0, "insert_text": "zero"})
        ),
        (
            false,
            format!(
                "The file /workspace/f.txt has been edited. {CAT} a snippet of the edited file:\n     1\tzero\n     2\tone\n     3\tTWO\n     4\tthree\n     5\t\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
            )
        )
    );
    assert_eq!(fx.file("f.txt").unwrap(), b"zero\none\nTWO\nthree\n");
    assert_eq!(
        fx.api(ed, json!({"command": "insert", "path": f, "insert_line": 9, "new_str": "late"})),
        (true, "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 5]".into())
    );
    assert!(
        !fx.api(
            ed,
            json!({"command": "insert", "path": f, "insert_line": 5, "new_str": "end"})
        )
        .0
    );
    assert_eq!(fx.file("f.txt").unwrap(), b"zero\none\nTWO\nthree\n\nend");
    assert_eq!(
        fx.api(ed, json!({"command": "view", "path": "/workspace/dir"})),
        (false, "Here's the files and directories up to 2 levels deep in /workspace/dir, excluding hidden items:\n/workspace/dir\n/workspace/dir/a.txt\n/workspace/dir/sub\n/workspace/dir/sub/b.txt\n".into())
    );
    assert_eq!(
        fx.api(
            ed,
            json!({"command": "str_replace", "path": "/workspace/dir", "old_str": "a"})
        )
        .1,
        "The path /workspace/dir is a directory and only the `view` command can be used on directories"
    );
    assert_eq!(
        fx.api(ed, json!({"command": "undo_edit", "path": f})).1,
        "Unrecognized command undo_edit. The allowed commands for the str_replace_based_edit_tool tool are: view, create, str_replace, insert"
    );
    assert_eq!(
        fx.api(ed, json!({"command": "create", "path": "/workspace/g.txt"}))
            .1,
        "Parameter `file_text` is required for command: create"
    );

    assert_eq!(
        fx.api("bash", json!({"command": "cd dir && export V=7"})),
        (false, "(no output)".into())
    );
    assert_eq!(
        fx.api("bash", json!({"command": "echo $V; pwd"})),
        (false, "7\n/workspace/dir".into())
    );
    assert!(fx.api("bash", json!({"command": "ls nope"})).0);
    assert_eq!(
        fx.api("bash", json!({"restart": true})),
        (false, "tool has been restarted.".into())
    );
    assert_eq!(
        fx.api("bash", json!({"command": "echo ${V:-unset}; pwd"})),
        (false, "unset\n/workspace".into())
    );
    assert_eq!(
        fx.api("bash", json!({})),
        (true, "no command provided.".into())
    );
}

#[test]
fn schemas_are_exported_and_the_cli_takes_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let burrow = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env(
                "BURROW_CACHE",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache"),
            )
            .args(args)
            .output()
            .unwrap()
    };
    for (family, names) in [
        (
            "agent-toolset",
            vec!["bash", "read", "write", "edit", "glob", "grep"],
        ),
        (
            "claude-code",
            vec!["Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep"],
        ),
        ("api", vec!["bash", "str_replace_based_edit_tool"]),
    ] {
        let out = burrow(&["schema", family]);
        assert!(out.status.success());
        let defs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let got: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(got, names);
        for d in &defs {
            assert_eq!(d["input_schema"]["type"], "object");
            assert!(d["annotations"]["readOnlyHint"].is_boolean());
        }
    }
    assert!(!burrow(&["schema", "nope"]).status.success());
    let out = burrow(&[
        "tool",
        "--workspace",
        "w",
        "--schema",
        "claude-code",
        "Write",
        r#"{"file_path":"/workspace/x.txt","content":"hi"}"#,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("File created successfully at: /workspace/x.txt{CURRENT}\n")
    );
    let out = burrow(&[
        "tool",
        "--workspace",
        "w",
        "--schema",
        "api",
        "str_replace_based_edit_tool",
        r#"{"command":"view","path":"/workspace/x.txt"}"#,
    ]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{CAT} /workspace/x.txt:\n     1\thi\n\n")
    );
    let out = burrow(&[
        "tool",
        "--workspace",
        "w",
        "--schema",
        "claude-code",
        "Read",
        r#"{"file_path":"/workspace/missing"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
}

/// The file-tools component answers in one message on stdout: a search whose answer is over
/// 100 MB (200,000 matching lines of 500 bytes) still arrives whole, where the answer used to
/// be cut to the last megabyte and fail as unreadable.
#[test]
fn claude_code_grep_answers_over_100_mb() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let line = format!("{}\n", "x".repeat(499));
    std::fs::write(tree.join("big.txt"), line.repeat(200_000)).unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create_from(None, &tree, &mut |_| {}).unwrap().id;
    let out = sb
        .call(
            &id,
            Family::ClaudeCode,
            "Grep",
            &json!({"pattern": "x", "output_mode": "count"}),
        )
        .unwrap();
    assert_eq!(
        out.joined_text(),
        "big.txt:200000\n\nFound 200000 total occurrences across 1 file."
    );
}
