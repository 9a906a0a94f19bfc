//! End-to-end through the real `burrow` binary: the overnight-then-fork flow with assertions on
//! content, and bad input answered with one-line errors and non-zero exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Burrow {
    store: PathBuf,
    cache: PathBuf,
    _dir: tempfile::TempDir,
}

impl Burrow {
    fn new() -> Burrow {
        let dir = tempfile::tempdir().unwrap();
        Burrow {
            store: dir.path().join("store.db"),
            cache: shared_cache(),
            _dir: dir,
        }
    }

    fn cmd(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .arg("--store")
            .arg(&self.store)
            .args(args)
            .env("BURROW_CACHE", &self.cache)
            .env_remove("BURROW_STORE")
            .output()
            .expect("run burrow")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        assert!(
            out.status.success(),
            "burrow {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs and expects a clean failure; returns stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "burrow {args:?} should fail");
        assert!(!err.contains("panicked"), "burrow {args:?} panicked: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "one-line error expected: {err}"
        );
        err
    }
}

/// One component cache for the whole test binary (the tools compile once).
fn shared_cache() -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache");
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/sample-repo")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn overnight_then_fork_end_to_end() {
    let b = Burrow::new();
    let id = b.ok(&["session", "new", "--name", "analysis", "--from", &fixture()]);
    let id = id.trim();
    assert_eq!(id.len(), 16, "session new prints only the id: {id:?}");

    let todos = b.ok(&["tool", "analysis", "grep", r#"{"pattern":"TODO"}"#]);
    assert_eq!(todos.lines().count(), 7, "{todos}");
    b.ok(&[
        "tool",
        "analysis",
        "write",
        r##"{"file_path":"analysis.md","content":"# Findings\n7 TODOs\n"}"##,
    ]);

    // Each command is a new process: the session resumed from the store alone.
    assert_eq!(
        b.ok(&["cat", "analysis", "analysis.md"]),
        "# Findings\n7 TODOs\n"
    );
    assert_eq!(
        b.ok(&[
            "tool",
            &id[..6],
            "read",
            r#"{"file_path":"/workspace/analysis.md","view_range":[2,2]}"#
        ]),
        "7 TODOs\n"
    );

    let forks: Vec<String> = b
        .ok(&["fork", "analysis", "-n", "3"])
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(forks.len(), 3);
    let edits = [
        ("src/tinyledger/util.py", "def chunks(", "def batches("),
        (
            "src/tinyledger/report.py",
            "# TODO: running balance column\n",
            "",
        ),
        ("README.md", "# tinyledger", "# tinyledger (experiment)"),
    ];
    for (fork, (file, old, new)) in forks.iter().zip(edits) {
        let input = serde_json::json!({ "file_path": file, "old_string": old, "new_string": new })
            .to_string();
        let out = b.ok(&["tool", fork, "edit", &input]);
        assert_eq!(out.trim(), format!("edited {file} (1 replacement(s))"));
    }
    // Each fork sees only its own edit; the source sees none.
    for (i, fork) in forks.iter().enumerate() {
        let stat = b.ok(&["diff", "analysis", fork, "--stat"]);
        assert_eq!(
            stat.lines().next().unwrap(),
            format!("M {}", edits[i].0),
            "{stat}"
        );
        assert_eq!(stat.lines().count(), 2, "{stat}");
    }
    assert!(
        b.ok(&["cat", "analysis", "src/tinyledger/util.py"])
            .contains("def chunks(")
    );
    assert!(
        b.ok(&["cat", &forks[0], "src/tinyledger/util.py"])
            .contains("def batches(")
    );
    assert!(
        !b.ok(&["cat", &forks[1], "README.md"])
            .contains("experiment")
    );
    let unified = b.ok(&["diff", &forks[0], &forks[2]]);
    assert!(
        unified.contains("-def batches(") && unified.contains("+# tinyledger (experiment)"),
        "{unified}"
    );

    // Undo restores the previous bytes; checkout brings back an old version.
    b.ok(&[
        "tool",
        &forks[2],
        "write",
        r#"{"file_path":"README.md","content":"gone"}"#,
    ]);
    assert_eq!(b.ok(&["cat", &forks[2], "README.md"]), "gone");
    b.ok(&["undo", &forks[2]]);
    assert!(
        b.ok(&["cat", &forks[2], "README.md"])
            .starts_with("# tinyledger (experiment)")
    );
    b.ok(&["undo", &forks[2]]);
    assert!(
        b.ok(&["cat", &forks[2], "README.md"])
            .starts_with("# tinyledger\n")
    );
    let history = b.ok(&["--json", "history", "analysis"]);
    let first: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    let v = first["version"].as_i64().unwrap();
    b.ok(&["checkout", "analysis", &format!("v{v}")]);
    assert_eq!(
        b.ok(&["tool", "analysis", "glob", r#"{"pattern":"*"}"#])
            .trim(),
        "no matches"
    );
    b.ok(&["undo", "analysis"]);
    assert_eq!(
        b.ok(&["cat", "analysis", "analysis.md"]),
        "# Findings\n7 TODOs\n"
    );

    // The log has the tool calls and lifecycle events, as JSON lines.
    let log = b.ok(&["--json", "log", &forks[0]]);
    let kinds: Vec<String> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["forked", "tool"]);
    assert_eq!(
        b.ok(&["log", &forks[0], "--kind", "tool"]).lines().count(),
        1
    );
    assert!(b.ok(&["tree"]).contains(&format!("  {}", forks[1])));

    // GC after deleting forks reclaims their unique pages and keeps the rest.
    b.ok(&["tool", &forks[1], "write", r#"{"file_path":"big.bin","content":"unique-to-fork-1 ...................................................."}"#]);
    b.ok(&["session", "rm", &forks[0], &forks[1]]);
    let gc: serde_json::Value =
        serde_json::from_str(&b.ok(&["--json", "gc", "--grace", "0s"])).unwrap();
    assert!(gc["bytes_freed"].as_u64().unwrap() >= 70, "{gc}");
    assert!(gc["objects_kept"].as_u64().unwrap() > 0, "{gc}");
    assert!(b.ok(&["fsck"]).starts_with("clean"));
    assert!(
        b.ok(&["cat", &forks[2], "README.md"])
            .starts_with("# tinyledger\n")
    );
    let ls = b.ok(&["session", "ls"]);
    assert_eq!(ls.lines().count(), 3, "{ls}");
}

#[test]
fn bad_input_gets_one_line_errors() {
    let b = Burrow::new();
    b.ok(&["session", "new", "--name", "alpha"]);
    b.ok(&["session", "new", "--name", "beta"]);
    let err = b.fails(&["cat", "nosuch", "x"]);
    assert!(err.contains("no session matches 'nosuch'"), "{err}");
    // Ids are hex; a one-character prefix shared by both sessions is ambiguous, unless unique.
    let ids: Vec<String> = b
        .ok(&["--json", "session", "ls"])
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let common = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .count();
    if common > 0 {
        let err = b.fails(&["cat", &ids[0][..common], "x"]);
        assert!(err.contains("ambiguous"), "{err}");
    }
    let err = b.fails(&["tool", "alpha", "read", "{not json"]);
    assert!(err.contains("not valid JSON"), "{err}");
    let out = b.cmd(&["tool", "alpha", "frobnicate", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tool: frobnicate"));
    let err = b.fails(&["session", "new", "--name", "alpha"]);
    assert!(err.contains("already exists"), "{err}");
    let err = b.fails(&["tool", "--schema", "nonsense", "alpha", "read", "{}"]);
    assert!(err.contains("unknown tool family"), "{err}");

    // A file that is not a burrow store is refused and left untouched.
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "my notes, not a database ..........................................",
    )
    .unwrap();
    let before = std::fs::read(&text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .arg("--store")
        .arg(&text)
        .args(["session", "ls"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("is not a burrow store"),
        "{err}"
    );
    assert_eq!(std::fs::read(&text).unwrap(), before);

    // A store where nothing can be written: under a regular file (and, when not running as
    // root, in a read-only directory).
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .arg("--store")
        .arg(text.join("s.db"))
        .args(["session", "new"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && !err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mut perms = std::fs::metadata(&ro).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(&ro, perms).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .arg("--store")
        .arg(ro.join("s.db"))
        .args(["session", "new"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    if !out.status.success() {
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn demo_runs_offline() {
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["demo", "--json"])
        .env("BURROW_CACHE", shared_cache())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["forks"].as_array().unwrap().len(), 3);
    let diffs = v["diffs"].as_array().unwrap();
    assert_eq!(
        diffs[0]["changed"],
        serde_json::json!(["src/tinyledger/accounts.py"])
    );
    assert_eq!(
        diffs[2]["changed"],
        serde_json::json!(["docs/cli.md", "src/tinyledger/cli.py"])
    );
}

#[test]
fn shell_state_persists_across_processes_and_into_forks() {
    let b = Burrow::new();
    b.ok(&["session", "new", "--name", "s", "--from", &fixture()]);
    b.ok(&[
        "sh",
        "s",
        "cd src/tinyledger; export GREETING=hi; NOTE=plain; greet() { echo \"$GREETING $1 from $(basename $PWD)\"; }; alias count='ls | wc -l'; set -o pipefail",
    ]);
    // A new process: cwd, exported and plain variables, functions, aliases, options.
    let out = b.ok(&[
        "sh",
        "s",
        "pwd; echo $NOTE; greet you; count; false | true; echo $?",
    ]);
    assert_eq!(
        out,
        "/workspace/src/tinyledger\nplain\nhi you from tinyledger\n9\n1\n"
    );
    // Forks inherit the shell state and then diverge.
    let fork = b.ok(&["fork", "s"]).trim().to_string();
    assert_eq!(
        b.ok(&["sh", &fork, "greet fork; cd /workspace/docs; pwd"]),
        "hi fork from tinyledger\n/workspace/docs\n"
    );
    assert_eq!(b.ok(&["sh", "s", "pwd"]), "/workspace/src/tinyledger\n");
    assert_eq!(b.ok(&["sh", &fork, "pwd"]), "/workspace/docs\n");
    // The agent_toolset bash tool shares the state; restart resets it.
    assert_eq!(
        b.ok(&["tool", "s", "bash", r#"{"command":"pwd"}"#]).trim(),
        "/workspace/src/tinyledger"
    );
    assert_eq!(
        b.ok(&["tool", "s", "bash", r#"{"restart":true}"#]).trim(),
        "bash session restarted"
    );
    assert_eq!(
        b.ok(&[
            "tool",
            "s",
            "bash",
            r#"{"command":"pwd; echo \"[$NOTE]\""}"#
        ])
        .trim(),
        "/workspace\n[]"
    );
    // Exit codes and stderr as a shell gives them.
    let out = b.cmd(&["sh", "s", "echo out; echo err >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    // A runaway loop ends with the timeout and leaves the session as it was.
    let out = b.cmd(&[
        "tool",
        "s",
        "bash",
        r#"{"command":"echo partial > p.txt; while true; do :; done","timeout_ms":1000}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "command timed out after 1s\n[The shell is gone. Call bash with restart set to true to start a new one. It starts in the original working directory, without the old shell's variables, activated environments and background jobs.]"
    );
    let out = b.cmd(&["tool", "s", "bash", r#"{"command":"ls p.txt"}"#]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "[This command did not run, because the shell is gone. Call bash with restart set to true to start a new one. It starts in the original working directory, without the old shell's variables, activated environments and background jobs.]"
    );
    b.ok(&["tool", "s", "bash", r#"{"restart":true}"#]);
    let out = b.cmd(&["tool", "s", "bash", r#"{"command":"ls p.txt"}"#]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "ls: cannot access 'p.txt': No such file or directory"
    );
}

#[test]
fn session_settings_apply_to_calls_and_forks() {
    let b = Burrow::new();
    b.ok(&[
        "session",
        "new",
        "--name",
        "cfg",
        "--env",
        "PROJECT=tinyledger",
        "--env",
        "MODE=ci",
        "--timeout",
        "1s",
    ]);
    assert_eq!(
        b.ok(&["sh", "cfg", "echo $PROJECT-$MODE"]),
        "tinyledger-ci\n"
    );
    // The host's own environment never reaches the session.
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .arg("--store")
        .arg(&b.store)
        .args(["sh", "cfg", "env | grep -c HOST_ONLY_SECRET"])
        .env("HOST_ONLY_SECRET", "x")
        .env("BURROW_CACHE", &b.cache)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
    // The session's timeout is bash's default.
    let out = b.cmd(&[
        "tool",
        "cfg",
        "bash",
        r#"{"command":"while true; do :; done"}"#,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "command timed out after 1s\n[The shell is gone. Call bash with restart set to true to start a new one. It starts in the original working directory, without the old shell's variables, activated environments and background jobs.]"
    );
    b.ok(&["tool", "cfg", "bash", r#"{"restart":true}"#]);
    // Forks inherit the settings; ls shows them.
    let fork = b.ok(&["fork", "cfg"]).trim().to_string();
    assert_eq!(b.ok(&["sh", &fork, "echo $PROJECT"]), "tinyledger\n");
    let ls = b.ok(&["--json", "session", "ls"]);
    let forked: serde_json::Value = ls
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["id"] == fork.as_str())
        .unwrap();
    assert_eq!(forked["settings"]["timeout_ms"], 1000);
    assert_eq!(forked["settings"]["env"]["MODE"], "ci");
    let err = b.fails(&["session", "new", "--env", "NOEQUALS"]);
    assert!(err.contains("KEY=VALUE"), "{err}");
}

/// Runs `burrow ARGS` with its standard output a pipe whose reader has already gone, as in
/// `burrow session ls | grep -q x` once grep has exited: (signal that ended it, exit code,
/// stderr).
fn run_into_closed_pipe(b: &Burrow, args: &[&str]) -> (Option<i32>, Option<i32>, String) {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    use std::os::unix::process::ExitStatusExt as _;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which are then owned exactly once each.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .arg("--store")
        .arg(&b.store)
        .args(args)
        .env("BURROW_CACHE", &b.cache)
        .env("BURROW_TOOLCHAINS", b.store.with_file_name("no-toolchains"))
        .env_remove("BURROW_STORE")
        .stdout(std::process::Stdio::from(writer))
        .output()
        .expect("run burrow");
    (
        out.status.signal(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn printing_verbs_end_quietly_on_a_closed_stdout() {
    let b = Burrow::new();
    let id = b.ok(&["session", "new", "--name", "p"]).trim().to_string();
    b.ok(&["sh", "p", "echo one > a.txt && echo two > b.txt"]);
    let fork = b.ok(&["fork", "p"]).trim().to_string();
    b.ok(&["sh", &fork, "echo changed > a.txt"]);
    b.ok(&["label", "p", "base"]);
    let read = r#"{"file_path":"a.txt"}"#;
    let verbs: Vec<Vec<&str>> = vec![
        vec!["session", "new"],
        vec!["session", "ls"],
        vec!["session", "ls", "--json"],
        vec!["sh", "p", "seq 1 100000"],
        vec!["tool", "p", "read", read],
        vec!["schema", "agent-toolset"],
        vec!["fork", "p", "-n", "2"],
        vec!["log", "p"],
        vec!["log", "p", "--json"],
        vec!["history", "p"],
        vec!["diff", "p", &fork],
        vec!["diff", "p", &fork, "--stat"],
        vec!["diff", "p", &fork, "--all"],
        vec!["tree"],
        vec!["cat", "p", "a.txt"],
        vec!["label", "p", "again"],
        vec!["net", "p"],
        vec!["gc"],
        vec!["toolchain", "list"],
        vec!["checkout", "p", "v1"],
        vec!["undo", "p"],
        vec!["--version"],
        vec!["--help"],
    ];
    for args in verbs {
        let (signal, code, err) = run_into_closed_pipe(&b, &args);
        assert!(
            signal == Some(libc::SIGPIPE) || code == Some(0),
            "burrow {args:?}: signal {signal:?}, code {code:?}, stderr {err}"
        );
        assert_eq!(err, "", "burrow {args:?} printed to stderr");
    }
    // A verb that printed nothing before the pipe broke still did its work.
    assert!(b.ok(&["session", "ls"]).contains(&id));
}

#[test]
fn json_times_have_rfc3339_twins() {
    let b = Burrow::new();
    b.ok(&["session", "new", "--name", "t"]);
    b.ok(&["sh", "t", "echo x > f"]);
    let rfc3339 = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$").unwrap();
    let line = |out: String| -> serde_json::Value {
        serde_json::from_str(out.lines().next().expect("a line")).unwrap()
    };
    let s = line(b.ok(&["--json", "session", "ls"]));
    assert!(rfc3339.is_match(s["created_at"].as_str().unwrap()), "{s}");
    assert!(
        rfc3339.is_match(s["last_active_at"].as_str().unwrap()),
        "{s}"
    );
    let e = line(b.ok(&["--json", "log", "t"]));
    assert!(rfc3339.is_match(e["time_at"].as_str().unwrap()), "{e}");
    let v = line(b.ok(&["--json", "history", "t"]));
    assert!(rfc3339.is_match(v["time_at"].as_str().unwrap()), "{v}");
}

#[test]
fn tar_import_follows_gnu_tar_and_says_what_it_skipped() {
    let b = Burrow::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.tar");
    let mut t = tar::Builder::new(std::fs::File::create(&path).unwrap());
    for (name, kind, data, link) in [
        ("ok/file", tar::EntryType::Regular, "z", ""),
        ("/abs/file", tar::EntryType::Regular, "y", ""),
        ("../escape", tar::EntryType::Regular, "x", ""),
        ("outside", tar::EntryType::Link, "", "not/here"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        if !link.is_empty() {
            h.set_link_name(link).unwrap();
        }
        h.set_cksum();
        t.append(&h, data.as_bytes()).unwrap();
    }
    t.into_inner().unwrap();
    let out = b.cmd(&[
        "session",
        "new",
        "--name",
        "t",
        "--from",
        path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err,
        format!(
            "burrow: Removing leading `/' from member names\n\
             burrow: Removing leading `../' from member names\n\
             burrow: ../escape: Member name contains '..'\n\
             burrow: outside: Cannot hard link to \u{2018}not/here\u{2019}: No such file or directory\n\
             burrow: skipped 2 member(s) of {} that cannot be imported (see above)\n",
            path.display()
        )
    );
    assert_eq!(
        b.ok(&["sh", "t", "find . -type f | sort"]),
        "./abs/file\n./ok/file\n"
    );
}

/// On a terminal `session new --from` and `export` draw a progress bar on stderr and end with
/// a summary; in a pipe (scripts, logs) there is no bar. The terminal is `script`'s (util-
/// linux), skipped with a note where it is missing.
#[test]
fn copies_draw_a_progress_bar_only_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed: apt-get install bsdutils");
        return;
    }
    let b = Burrow::new();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    for i in 0..20 {
        std::fs::write(src.join(format!("d/f{i}")), vec![b'x'; 100_000]).unwrap();
    }
    let on_tty = |args: &str| -> String {
        let line = format!(
            "{} --store {} {args}",
            env!("CARGO_BIN_EXE_burrow"),
            b.store.display()
        );
        let out = Command::new("script")
            .args(["-qefc", &line, "/dev/null"])
            .env("BURROW_CACHE", &b.cache)
            .env_remove("BURROW_STORE")
            .output()
            .expect("run script");
        assert!(out.status.success(), "{line}");
        String::from_utf8_lossy(&out.stdout).replace('\r', "")
    };
    let out = on_tty(&format!("session new --name p --from {}", src.display()));
    assert!(out.contains("importing ["), "{out}");
    assert!(out.contains("/1.91 MiB"), "the total is known: {out}");
    assert!(out.contains("imported 21 entries, 1.9 MiB"), "{out}");
    let dest = dir.path().join("out");
    let out = on_tty(&format!("export p {}", dest.display()));
    assert!(out.contains("exporting ["), "{out}");
    assert!(
        out.contains("exported 20 files, 1 directories, 0 symlinks, 2000000 bytes"),
        "{out}"
    );
    // Not a terminal: the summary alone.
    let out = b.cmd(&["export", "p", dest.join("x.tar").to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "exported 20 files, 1 directories, 0 symlinks, 2000000 bytes\n"
    );
    let out = b.cmd(&[
        "session",
        "new",
        "--name",
        "q",
        "--from",
        src.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// `burrow merge`: a fork's work comes back into its parent as one version; a second fork
/// that edited the same lines conflicts with diff3-style markers; `--no-commit` only reports;
/// merging again brings only what is new.
#[test]
fn merge_brings_a_fork_back() {
    let b = Burrow::new();
    let s = b.ok(&["session", "new", "--name", "s"]).trim().to_string();
    b.ok(&[
        "sh",
        "s",
        "printf 'a\\nb\\nc\\nd\\ne\\n' > f.txt; echo keep > k.txt; echo x > gone.txt",
    ]);
    let forks = b.ok(&["fork", "s", "-n", "2"]);
    let forks: Vec<&str> = forks.lines().collect();
    let (f1, f2) = (forks[0], forks[1]);
    b.ok(&[
        "sh",
        f1,
        "sed -i s/a/A/ f.txt; echo new > new.txt; rm gone.txt; mv k.txt k2.txt",
    ]);
    b.ok(&["sh", "s", "sed -i s/e/E/ f.txt"]);

    assert_eq!(
        b.ok(&["merge", f1]),
        "f.txt\ngone.txt\nk.txt\nk2.txt\nnew.txt\n"
    );
    assert_eq!(b.ok(&["cat", "s", "f.txt"]), "A\nb\nc\nd\nE\n");
    assert_eq!(b.ok(&["sh", "s", "ls"]), "f.txt\nk2.txt\nnew.txt\n");
    // Nothing new in the fork: nothing to merge.
    assert_eq!(b.ok(&["merge", f1]), "");

    b.ok(&["sh", f2, "sed -i s/c/C2/ f.txt"]);
    b.ok(&["sh", "s", "sed -i s/c/C1/ f.txt"]);
    let before = b.ok(&["cat", "s", "f.txt"]);
    let dry = b.cmd(&["merge", f2, "--no-commit"]);
    assert_eq!(dry.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&dry.stdout), "CONFLICT f.txt\n");
    assert_eq!(b.ok(&["cat", "s", "f.txt"]), before);

    let out = b.cmd(&["merge", f2, "--into", "s"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "CONFLICT f.txt\n");
    let merged = b.ok(&["cat", "s", "f.txt"]);
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(lines[..2], ["A", "b"]);
    assert_eq!(lines[2], format!("<<<<<<< {s}"));
    assert_eq!(lines[3], "C1");
    assert!(lines[4].starts_with("||||||| v"), "{merged}");
    assert_eq!(
        lines[5..],
        ["c", "=======", "C2", &format!(">>>>>>> {f2}"), "d", "E"]
    );

    // Every merge is an event with its base, sides and conflicts; undo takes it back.
    let log = b.ok(&["--json", "log", "s", "--kind", "merged"]);
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The first merge, the one with nothing new, the conflicted one.
    assert_eq!(events.len(), 3, "{log}");
    assert_eq!(events[1]["data"]["merged"], 0);
    assert_eq!(events[1]["version_before"], events[1]["version_after"]);
    let data = &events[2]["data"];
    assert_eq!(data["from"], f2);
    assert_eq!(data["conflicts"][0]["path"], "f.txt");
    assert_eq!(data["conflicts"][0]["reason"], "content");
    b.ok(&["undo", "s"]);
    assert_eq!(b.ok(&["cat", "s", "f.txt"]), before);

    let json: serde_json::Value =
        serde_json::from_str(&b.ok(&["--json", "merge", f1, "--no-commit"])).unwrap();
    assert_eq!(json["committed"], false);
    assert_eq!(json["into"], s);

    let err = b.fails(&["merge", "s"]);
    assert!(err.contains("--into"), "{err}");
}

/// Calls on one session from several processes at once: each commits onto the head the
/// others left (before, all but one failed with "moved ... retry on the new head").
#[test]
fn concurrent_processes_on_one_session_all_commit() {
    let b = Burrow::new();
    b.ok(&["session", "new", "--name", "s"]);
    b.ok(&["sh", "s", "echo base > shared.txt"]);
    let children: Vec<std::process::Child> = (0..8)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_burrow"))
                .arg("--store")
                .arg(&b.store)
                .args([
                    "sh",
                    "s",
                    &format!("echo {i} > f{i}.txt; echo {i} > shared.txt; echo {i} >> log.txt"),
                ])
                .env("BURROW_CACHE", &b.cache)
                .env_remove("BURROW_STORE")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let ls = b.ok(&[
        "sh",
        "s",
        "ls f*.txt | wc -l; sort log.txt | tr '\\n' ' '; echo; cat shared.txt",
    ]);
    let mut lines = ls.lines();
    assert_eq!(lines.next(), Some("8"), "{ls}");
    // Appends all land, as O_APPEND writes do.
    assert_eq!(
        lines.next(),
        Some("0 1 2 3 4 5 6 7 "),
        "{ls}\n{}",
        b.ok(&["log", "s"])
    );
    // One of the writers' versions of the file both changed, whole.
    let shared: usize = lines.next().unwrap().parse().unwrap();
    assert!(shared < 8);
    // Every call is in the log (the first, the eight, the check).
    let log = b.ok(&["--json", "log", "s", "--kind", "tool"]);
    assert_eq!(log.lines().count(), 10);
    let concurrent = b.ok(&["--json", "log", "s", "--kind", "concurrent"]);
    assert!(concurrent.lines().count() <= 7, "{concurrent}");
    b.ok(&["fsck"]);
}
