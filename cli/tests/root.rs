//! The sandbox's composed root through the real CLI: `/` and the directories above mount
//! points, `/tmp` and `/home/agent` persisted and versioned outside the workspace, the
//! shell's state out of the user's project (and migrated out of old sessions), `/dev`
//! devices and `/etc` files, the read-only parts refused with Linux's wording.

use crate::common;

use common::Cli;

/// The CLI with the helpers these tests use.
struct B(Cli);

impl B {
    fn new() -> B {
        B(Cli::new())
    }

    fn ok(&self, args: &[&str]) -> String {
        self.0.ok(args)
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.0.run(args)
    }

    /// `burrow sh S CMD`: (status, stdout + stderr).
    fn sh(&self, s: &str, cmd: &str) -> (i32, String) {
        let (code, out, err) = self.run(&["sh", s, cmd]);
        (code, format!("{out}{err}"))
    }

    fn versions(&self, s: &str) -> usize {
        self.ok(&["history", s]).lines().count()
    }
}

#[test]
fn composed_root_and_devices() {
    let b = B::new();
    b.ok(&["session", "new", "--name", "r"]);
    let (code, out) = b.sh(
        "r",
        "ls /; cd / && pwd; ls -d /home/agent /tmp /workspace; cat /etc/os-release | grep ^ID=; \
         grep agent /etc/passwd; cat /etc/hostname /etc/timezone; echo gone > /dev/null; \
         cat /dev/null | wc -c; test -c /dev/null && echo char; stat -c %F /dev/null; \
         ls /dev; echo $HOME $TMPDIR; cd ~ && pwd; cd /workspace; ls -la | sed -n 3p | cut -c1-10; \
         ls /usr/bin | grep -c -x -e cat -e grep -e sed; ls /bin | grep -c -x awk; which cat; \
         /usr/bin/cat /etc/hostname; /bin/echo via-bin; head -c 16 /dev/urandom | wc -c; \
         < /dev/zero head -c 3 | base64; ls nothere 2>/dev/null || echo quiet",
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "bin\ndev\netc\nhome\nmemories\nrun\ntmp\nusr\nworkspace\n/\n/home/agent\n/tmp\n/workspace\nID=burrow\n\
         agent:x:1000:1000:agent:/home/agent:/bin/bash\nburrow\nEtc/UTC\n0\nchar\n\
         character special file\nburrow\nfd\nnull\nrandom\nstderr\nstdin\nstdout\nurandom\nzero\n/home/agent /tmp\n/home/agent\n\
         drwxr-xr-x\n3\n1\n/usr/bin/cat\nburrow\nvia-bin\n16\nAAAA\nquiet\n"
    );
    // The read-only parts answer as Linux does for an unprivileged user.
    let (code, out) = b.sh("r", "echo x > /etc/os-release; mkdir /opt2; touch /x");
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "bash: /etc/os-release: Permission denied\n\
         mkdir: cannot create directory '/opt2': Permission denied\n\
         touch: cannot touch '/x': Permission denied\n"
    );
}

#[test]
fn tmp_and_home_persist_outside_the_workspace() {
    let b = B::new();
    b.ok(&["session", "new", "--name", "p", "--timeout", "3s"]);
    // A call that only reads makes no version (the system directories are created on
    // first write).
    b.ok(&["tool", "p", "glob", r#"{"pattern":"*"}"#]);
    assert_eq!(b.versions("p"), 1);

    let (code, out) = b.sh(
        "p",
        "echo scratch > /tmp/s.txt; echo 'alias ll=\"ls -l\"' > ~/.bashrc; f=$(mktemp); \
         echo $f | cut -c1-9; cd /tmp; X=1",
    );
    assert_eq!((code, out.as_str()), (0, "/tmp/tmp.\n"));
    // Another process: /tmp, $HOME, the cwd and variables are where they were; the
    // workspace holds none of it.
    let (_, out) = b.sh("p", "pwd; echo $X; cat s.txt ~/.bashrc; find /workspace");
    assert_eq!(out, "/tmp\n1\nscratch\nalias ll=\"ls -l\"\n/workspace\n");
    let stat = b.ok(&["diff", "p", "v1", "--stat"]);
    assert!(stat.starts_with("0 path(s) changed between v"), "{stat}");
    let all = b.ok(&["diff", "v1", "p", "--stat", "--all"]);
    assert!(all.contains("A /tmp/s.txt\n"), "{all}");
    assert!(all.contains("A /home/agent/.bashrc\n"), "{all}");
    assert!(all.contains("A /run/burrow/shell.json\n"), "{all}");
    let export = b.0.db.with_file_name("export");
    b.ok(&["export", "p", export.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_dir(&export).unwrap().count(),
        0,
        "export is the workspace only"
    );

    // Forks get /tmp (O(1), the same tree); the fork's changes stay in the fork.
    let fork = b.ok(&["fork", "p"]).trim().to_string();
    let (_, out) = b.sh(&fork, "cat /tmp/s.txt; echo fork > /tmp/s.txt");
    assert_eq!(out, "scratch\n");
    assert_eq!(b.sh("p", "cat /tmp/s.txt").1, "scratch\n");
    // Undo and a failed call cover /tmp too.
    b.sh("p", "echo changed > /tmp/s.txt");
    b.ok(&["undo", "p"]);
    assert_eq!(b.sh("p", "cat /tmp/s.txt").1, "scratch\n");
    let (code, _) = b.sh("p", "echo doomed > /tmp/s.txt; while :; do :; done");
    assert_ne!(code, 0);
    assert_eq!(
        b.sh("p", "cat /tmp/s.txt").1,
        "scratch\n",
        "the timed-out call left nothing"
    );
}

#[test]
fn old_sessions_shell_state_moves_out_of_the_workspace() {
    let b = B::new();
    b.ok(&["session", "new", "--name", "old"]);
    // A session made before the system area kept its shell state in the project.
    let state = r#"{"cwd":"/workspace/src","vars":{"MODE":{"value":"fast","exported":true}},"functions":{},"aliases":{},"options":{"errexit":false,"nounset":false,"pipefail":false,"xtrace":false,"noglob":false}}"#;
    let input = serde_json::json!({"file_path": "/workspace/.burrow/shell.json", "content": state});
    b.ok(&["tool", "old", "write", &input.to_string()]);
    b.sh("old", "mkdir -p /workspace/src");
    let (_, out) = b.sh("old", "echo $MODE; ls -a /workspace");
    assert_eq!(
        out, "fast\n.\n..\nsrc\n",
        "migrated: the state is kept, .burrow is gone"
    );
}

#[test]
fn file_tools_and_tmp_per_family() {
    let b = B::new();
    b.ok(&["session", "new", "--name", "fam"]);
    // Refusals exit 1 with the tool's text on stdout: keep the text either way.
    let cc = |tool: &str, input: &str| {
        let (_, out, err) = b.run(&["tool", "--schema", "claude-code", "fam", tool, input]);
        format!("{out}{err}")
    };
    // Claude Code's Read, Write and Edit take /tmp, as on Linux (the file state is kept
    // there too); Glob and Grep stay in the workspace.
    assert_eq!(
        cc(
            "Write",
            r#"{"file_path":"/tmp/notes.txt","content":"hello\n"}"#
        )
        .trim(),
        "File created successfully at: /tmp/notes.txt (file state is current in your context \u{2014} no need to Read it back)"
    );
    assert!(cc("Read", r#"{"file_path":"/tmp/notes.txt"}"#).contains("hello"));
    assert!(
        cc(
            "Edit",
            r#"{"file_path":"/tmp/notes.txt","old_string":"hello","new_string":"bye"}"#
        )
        .contains("has been updated")
    );
    assert!(
        cc("Glob", r#"{"pattern":"*","path":"/tmp"}"#).contains("outside the session's workspace")
    );
    assert!(
        cc("Read", r#"{"file_path":"/etc/passwd"}"#).contains("outside the session's workspace")
    );
    // The Messages API text editor likewise.
    let api = |input: &str| {
        b.ok(&[
            "tool",
            "--schema",
            "api",
            "fam",
            "str_replace_based_edit_tool",
            input,
        ])
    };
    assert!(api(r#"{"command":"view","path":"/tmp/notes.txt"}"#).contains("     1\tbye"));
    assert!(
        api(r#"{"command":"create","path":"/tmp/sub/new.md","file_text":"x"}"#)
            .contains("File created successfully")
    );
    // The agent_toolset family keeps the SDK's rule: the working directory only.
    let (_, out, err) = b.run(&[
        "tool",
        "--schema",
        "agent-toolset",
        "fam",
        "read",
        r#"{"file_path":"/tmp/notes.txt"}"#,
    ]);
    assert!(
        format!("{out}{err}").contains("outside the session's working directory"),
        "{out}{err}"
    );
    assert_eq!(
        b.sh("fam", "cat /tmp/notes.txt /tmp/sub/new.md; find /workspace")
            .1,
        "bye\nx/workspace\n"
    );
}

/// Links with absolute targets are made, and resolve in the session's root as the guest
/// sees it (never the host's): into the workspace, `/tmp` and `$HOME`, across them, kept
/// with the session and its forks; a target outside what the session keeps dangles.
#[test]
fn symlinks_with_absolute_targets_resolve_in_the_sessions_root() {
    let b = B::new();
    b.ok(&["session", "new", "--name", "ln"]);
    let (code, out) = b.sh(
        "ln",
        "cd /workspace && echo alpha > a.txt && mkdir -p d && echo in-d > d/f \
         && ln -s /workspace/a.txt c && ln -s /tmp/t /tmp/l && echo tee > /tmp/t \
         && ln -s /workspace/d /tmp/dl && ln -s ~/h.txt hl && echo home > ~/h.txt \
         && cat c /tmp/l /tmp/dl/f hl && readlink c && readlink -f /tmp/dl/f \
         && ls -l c | cut -c1-10 && realpath /tmp/l",
    );
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "alpha\ntee\nin-d\nhome\n/workspace/a.txt\n/workspace/d/f\nlrwxrwxrwx\n/tmp/t\n"
        )
    );
    // Kept with the session: a later call, and a fork, follow the same links.
    let fork = b.ok(&["fork", "ln"]).trim().to_string();
    let (code, out) = b.sh(&fork, "echo beta >> /workspace/c && cat a.txt /tmp/l");
    assert_eq!((code, out.as_str()), (0, "alpha\nbeta\ntee\n"));
    // The file tools follow them too.
    let read = b.ok(&[
        "tool",
        "--schema",
        "claude-code",
        "ln",
        "Read",
        r#"{"file_path":"/workspace/hl"}"#,
    ]);
    assert_eq!(read.trim_end(), "1\thome\n2");
    // A target outside what the session keeps is not in its tree: the link dangles, as one
    // to a missing file does, and nothing of the host is reached.
    let (code, out) = b.sh("ln", "ln -s /etc/passwd p && readlink p && cat p");
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out, "/etc/passwd\ncat: p: No such file or directory\n",
        "{out}"
    );
}
