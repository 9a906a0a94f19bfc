//! burrow's git against real git (Debian's `git`): repositories made by native git with
//! fixed authors and dates, served by `git http-backend` behind a small CGI wrapper this test
//! starts on 127.0.0.1. Clones through the session's network policy (allowed, denied, a
//! private repository whose token is a session secret); the porcelain's output compared with
//! native git's on the same repository after the same edits; the exported session checked
//! by native `git fsck --strict`, `git status` and `git log`; a repository made by native git
//! imported with `--from` and read by burrow's git.
//!
//! Without git installed the tests print one line and pass, unless BURROW_REQUIRE_GIT=1 (set
//! by .ci/run) makes that a failure.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

const TOKEN: &str = "ghp-test-token-0451";

fn have_git() -> bool {
    if burrow_cli::bench::git::http_backend().is_some() {
        return true;
    }
    assert!(
        std::env::var("BURROW_REQUIRE_GIT").as_deref() != Ok("1"),
        "git and git-http-backend are required (BURROW_REQUIRE_GIT=1)"
    );
    eprintln!("skipping: git is not installed (apt-get install git)");
    false
}

/// A command for native git with a clean environment (its own HOME, no system config, no
/// prompts) and fixed identities.
fn native(program: &str, dir: &Path) -> Command {
    let home = std::env::temp_dir().join("burrow-git-test-home");
    let _ = std::fs::create_dir_all(&home);
    let mut c = Command::new(program);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("LC_ALL", "C")
        // The sandbox's local time is UTC: native git reads and shows local dates the same way
        // whatever the machine's zone.
        .env("TZ", "UTC")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com");
    c
}

/// `bash -c CMD` in `dir` under [`native`]'s environment.
fn native_sh(dir: &Path, cmd: &str) -> std::process::Output {
    native("bash", dir)
        .args(["-c", cmd])
        .output()
        .expect("bash")
}

fn git(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = native("git", dir).args(args).output().expect("run git");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn git_ok(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = git(dir, args);
    assert_eq!(code, 0, "git {args:?}: {out}{err}");
    out
}

/// Commits everything in `dir` with a fixed date.
fn commit(dir: &Path, msg: &str, date: &str) {
    git_ok(dir, &["add", "-A"]);
    let out = native("git", dir)
        .args(["commit", "-q", "-m", msg])
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git commit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository with text, binary, nested, executable, CRLF and symlinked files, three
/// commits on main, a branch `dev` with one more, an annotated and a lightweight tag; made in
/// `work` and served bare from `root/NAME.git`.
fn make_repo(base: &Path, root: &Path, name: &str) -> PathBuf {
    let work = base.join(format!("{name}-src"));
    std::fs::create_dir_all(&work).unwrap();
    git_ok(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(
        work.join("README.md"),
        "# sample\n\nA repository for burrow's git.\n",
    )
    .unwrap();
    std::fs::create_dir_all(work.join("src/deep/er")).unwrap();
    std::fs::write(work.join("src/lib.rs"), "pub fn one() -> u32 {\n    1\n}\n").unwrap();
    std::fs::write(work.join("src/deep/er/x.txt"), "deep\n").unwrap();
    commit(&work, "First commit", "1700000000 +0000");
    let bin: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(work.join("data.bin"), &bin).unwrap();
    std::fs::write(work.join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    std::fs::write(work.join("run.sh"), "#!/bin/sh\necho run\n").unwrap();
    let mut perm = std::fs::metadata(work.join("run.sh"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(work.join("run.sh"), perm).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", work.join("link")).unwrap();
    std::fs::write(work.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    commit(
        &work,
        "Add data, scripts and a link\n\nWith a body paragraph.",
        "1700003600 +0100",
    );
    // A bigger file edited slightly, so the pack carries a delta.
    let big: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(work.join("src/big.txt"), &big).unwrap();
    commit(&work, "Add big", "1700007200 -0700");
    std::fs::write(
        work.join("src/big.txt"),
        big.replace("line 1000\n", "line one thousand\n"),
    )
    .unwrap();
    std::fs::rename(work.join("src/deep/er/x.txt"), work.join("src/moved.txt")).unwrap();
    commit(&work, "Edit big, move x", "1700010800 +0000");
    git_ok(&work, &["tag", "-a", "v1", "-m", "version 1"]);
    git_ok(&work, &["tag", "light"]);
    git_ok(&work, &["checkout", "-q", "-b", "dev"]);
    std::fs::write(work.join("dev.txt"), "on dev\n").unwrap();
    commit(&work, "Dev work", "1700014400 +0000");
    git_ok(&work, &["checkout", "-q", "main"]);
    let bare = root.join(format!("{name}.git"));
    git_ok(
        base,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    bare
}

/// `git http-backend` behind burrow bench's CGI wrapper on 127.0.0.1: repositories under
/// `root`, those under `root/private` only with the token as HTTP Basic password.
fn serve(root: PathBuf) -> u16 {
    burrow_cli::bench::git::serve_git_http(root, Some(TOKEN.to_string())).expect("serve git")
}

/// A fixture: served repositories, a burrow store and a native scratch directory.
struct Fixture {
    cli: common::Cli,
    tmp: tempfile::TempDir,
    port: u16,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("served");
        std::fs::create_dir_all(root.join("private")).unwrap();
        make_repo(tmp.path(), &root, "repo");
        make_repo(tmp.path(), &root.join("private"), "secret");
        let port = serve(root);
        Fixture {
            cli: common::Cli::new(),
            tmp,
            port,
        }
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// A new session allowed to reach the server.
    fn session(&self, name: &str) {
        self.cli.ok(&[
            "session",
            "new",
            "--name",
            name,
            "--allow-net",
            &format!("127.0.0.1:{}", self.port),
        ]);
    }

    fn sh(&self, s: &str, cmd: &str) -> (i32, String, String) {
        self.cli.run(&["sh", s, cmd])
    }

    /// A native clone of `name` in a fresh directory; its path.
    fn native_clone(&self, name: &str, args: &[&str]) -> PathBuf {
        let dir = self.tmp.path().join(format!("native-{}", rand_name()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = vec!["clone", "-q"];
        a.extend_from_slice(args);
        let url = self.url(name);
        a.push(&url);
        git_ok(&dir, &a);
        let repo = dir.join(name.trim_end_matches(".git").rsplit('/').next().unwrap());
        assert!(repo.is_dir());
        repo
    }

    /// Runs each of `cmds` in session `s` (in directory `dir`) and natively in `native`:
    /// the exit statuses and the stdouts must be the same.
    fn same_as_native(&self, s: &str, dir: &str, native: &Path, cmds: &[&str]) {
        for cmd in cmds {
            let (code, out, err) = self.sh(s, &format!("cd {dir} && {cmd}"));
            let bash = native_sh(native, cmd);
            assert_eq!(
                (code, out.as_str()),
                (
                    bash.status.code().unwrap_or(-1),
                    String::from_utf8_lossy(&bash.stdout).as_ref()
                ),
                "{dir}: {cmd}: {err}"
            );
        }
    }

    fn export(&self, s: &str) -> PathBuf {
        let dir = self.tmp.path().join(format!("export-{}", rand_name()));
        self.cli.ok(&["export", s, dir.to_str().unwrap()]);
        dir
    }
}

fn rand_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

/// Every file under `dir` but `.git`: path -> content (symlinks as `-> target`).
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    fn walk(root: &Path, d: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if t.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

#[test]
fn clone_gives_the_tree_and_repository_native_git_gives() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.session("gee");
    let (code, out, err) = f.sh("gee", &format!("git clone {}", f.url("repo.git")));
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "", "Cloning into 'repo'...\n")
    );
    let native = f.native_clone("repo.git", &[]);

    // The same commands in both, the same answers.
    f.same_as_native(
        "gee",
        "/workspace/repo",
        &native,
        &[
            "git log",
            "git log --oneline",
            "git log -10 --oneline && git log -2 --oneline && git log -n1 --oneline",
            "git log -n 2 --format='%H %h %an <%ae> %at %s'",
            "git log --format=%s%n%b dev",
            "git log --oneline v1",
            "git rev-parse HEAD",
            "git rev-parse --abbrev-ref HEAD",
            "git rev-parse HEAD~2 main^ origin/dev",
            "git branch",
            "git branch -a",
            "git branch -r",
            "git remote -v | sed 's/127.0.0.1:[0-9]*/HOST/'",
            "git ls-files",
            "git status",
            "git status -s",
            "git status --porcelain -b",
            "cd src && git status && git ls-files && git rev-parse --show-prefix",
            "git config remote.origin.fetch; git config branch.main.merge",
            "git log --frobnicate",
            "git status --frobnicate",
            "git -C src log -1 --format=%s",
            "git show --stat",
            "git show HEAD~1",
            "git diff HEAD~2 HEAD --stat",
            "git diff v1 origin/dev",
            "git diff HEAD~3..HEAD --name-status",
            "git diff",
        ],
    );

    let (code, _, err) = f.sh("gee", "cd /workspace/repo && git log --follow -- a.txt");
    assert_eq!(
        (code, err.as_str()),
        (
            128,
            "fatal: 'git log --follow' is not supported in burrow\n"
        )
    );
    // A date git would silently take as "now" is refused rather than guessed.
    let (code, _, err) = f.sh("gee", "cd /workspace/repo && git log --since='last monday'");
    assert_eq!(
        (code, err.as_str()),
        (
            128,
            "fatal: burrow's git cannot read the date 'last monday'\n"
        )
    );

    // The checkout is the same files (an executable's mode aside: the sandbox keeps none).
    let exported = f.export("gee");
    let repo = exported.join("repo");
    assert_eq!(tree(&repo), tree(&native));
    // Native git finds a valid, clean repository with the same history.
    git_ok(&repo, &["fsck", "--strict", "--no-progress"]);
    assert_eq!(git_ok(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        git_ok(&repo, &["log", "--format=%H %s", "--all"]),
        git_ok(&native, &["log", "--format=%H %s", "--all"])
    );
    assert_eq!(git_ok(&repo, &["show-ref"]), git_ok(&native, &["show-ref"]));
}

#[test]
fn status_after_edits_matches_native() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.session("edits");
    let (code, _, err) = f.sh("edits", &format!("git clone -q {}", f.url("repo.git")));
    assert_eq!(code, 0, "{err}");
    let native = f.native_clone("repo.git", &[]);
    let edits = "echo more >> README.md && rm src/lib.rs && echo new > notes.txt && \
                 mkdir -p newdir/sub && echo x > newdir/sub/f && echo log > debug.log && \
                 mkdir -p build && echo o > build/out && mkdir -p empty && \
                 printf 'one\\r\\ntwo\\r\\n' > crlf.txt";
    let (code, _, err) = f.sh("edits", &format!("cd repo && {edits}"));
    assert_eq!(code, 0, "{err}");
    assert!(native_sh(&native, edits).status.success());
    f.same_as_native(
        "edits",
        "/workspace/repo",
        &native,
        &[
            "git status",
            "git status -s",
            "git status --porcelain --branch",
            "cd src && git status && git status -s",
            "git diff",
            "git diff --stat",
            "git diff --name-status",
            "cd src && git diff --name-only . && git diff ../README.md",
            "git diff --quiet; echo $?",
        ],
    );
}

#[test]
fn shallow_and_branch_clones() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.session("depth");
    for (args, dir) in [
        ("--depth 1", "repo"),
        ("--branch dev --single-branch", "dev-only"),
        ("-b v1", "at-tag"),
        ("--depth=2 -b dev", "two"),
        ("--no-checkout", "bare-ish"),
    ] {
        let (code, _, err) = f.sh(
            "depth",
            &format!(
                "cd /workspace && git clone -q {args} {} {dir}",
                f.url("repo.git")
            ),
        );
        assert_eq!(code, 0, "{args}: {err}");
        let native = f.native_clone("repo.git", &args.split(' ').collect::<Vec<_>>());
        f.same_as_native(
            "depth",
            &format!("/workspace/{dir}"),
            &native,
            &[
                "git log --format='%H %s'",
                "git branch -a",
                "git status --porcelain -b",
                "git config remote.origin.fetch",
            ],
        );
    }
    let exported = f.export("depth");
    for dir in ["repo", "dev-only", "at-tag", "two", "bare-ish"] {
        git_ok(&exported.join(dir), &["fsck", "--strict", "--no-progress"]);
    }
    // A branch that is not there.
    let (code, _, err) = f.sh(
        "depth",
        &format!("cd /workspace && git clone -b nope {} x", f.url("repo.git")),
    );
    assert_eq!(code, 128);
    assert!(
        err.contains("fatal: Remote branch nope not found in upstream origin"),
        "{err}"
    );
    let (_, out, _) = f.sh("depth", "ls x 2>&1; echo $?");
    assert!(
        out.ends_with("2\n"),
        "nothing is left of a failed clone: {out}"
    );
}

#[test]
fn private_repositories_take_the_token_from_a_session_secret() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    let env = [("GH_TOKEN", TOKEN)];
    let (code, _, err) = f.cli.run_env(
        &env,
        &[
            "session",
            "new",
            "--name",
            "priv",
            "--allow-net",
            &format!("127.0.0.1:{}", f.port),
            "--secret",
            &format!("GH_TOKEN@http://127.0.0.1:{}", f.port),
        ],
    );
    assert_eq!(code, 0, "{err}");
    // Without credentials: git's message when it cannot ask for them.
    let url = f.url("private/secret.git");
    let (code, _, err) = f
        .cli
        .run_env(&env, &["sh", "priv", &format!("git clone {url}")]);
    let native = git(
        f.tmp.path(),
        &["clone", &url, f.tmp.path().join("nat").to_str().unwrap()],
    );
    assert_eq!(code, 128, "{err}");
    assert_eq!(native.0, 128);
    assert_eq!(
        err.lines().last(),
        native.2.lines().last(),
        "burrow: {err}\nnative: {}",
        native.2
    );
    // With the secret's placeholder in the URL, the host puts the token in.
    let with = format!(
        "http://x-access-token:$GH_TOKEN@127.0.0.1:{}/private/secret.git",
        f.port
    );
    let (code, _, err) = f.cli.run_env(
        &env,
        &[
            "sh",
            "priv",
            &format!("git clone -q {with} s && cd s && git log --oneline | wc -l"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The token itself never reaches the guest.
    let (_, out, _) = f
        .cli
        .run_env(&env, &["sh", "priv", "cat s/.git/config; echo $GH_TOKEN"]);
    assert!(!out.contains(TOKEN), "{out}");
}

#[test]
fn denied_hosts_and_unsupported_commands_say_so() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.cli.ok(&["session", "new", "--name", "nonet"]);
    let url = f.url("repo.git");
    let (code, _, err) = f.sh("nonet", &format!("git clone {url}"));
    assert_eq!(code, 128, "{err}");
    assert!(
        err.contains(&format!("fatal: unable to access '{url}/': ")) && err.contains("denied"),
        "{err}"
    );
    let (_, out, _) = f.sh("nonet", "ls");
    assert!(!out.contains("repo"), "{out}");
    for (cmd, code, want) in [
        (
            "git bisect start",
            1,
            "git: 'bisect' is not supported in burrow\n",
        ),
        (
            "git frobnicate",
            1,
            "git: 'frobnicate' is not a git command. See 'git --help'.\n",
        ),
        (
            "git clone --frob x",
            129,
            "error: unknown option `frob'\nusage: git clone [<options>] [--] <repo> [<dir>]\n",
        ),
        (
            "git clone",
            129,
            "fatal: You must specify a repository to clone.\n\nusage: git clone [<options>] [--] <repo> [<dir>]\n",
        ),
        (
            "git status",
            128,
            "fatal: not a git repository (or any of the parent directories): .git\n",
        ),
    ] {
        let (c, _, err) = f.sh("nonet", cmd);
        assert_eq!((c, err.as_str()), (code, want), "{cmd}");
    }
    let (_, out, _) = f.sh("nonet", "which git; git --version");
    assert!(out.starts_with("/usr/bin/git\ngit version "), "{out}");
    // What stash, format-patch and am leave out is refused by name; format-patch signs
    // with the version `git --version` gives.
    let (c, _, err) = f.sh(
        "nonet",
        "export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@x \
         && mkdir -p /workspace/fp && cd /workspace/fp && git init -q && echo a > a && printf '\\0b' > b && git add a b && git commit -qm A \
         && echo c >> a && git commit -qam C",
    );
    assert_eq!(c, 0, "{err}");
    for (cmd, code, want) in [
        (
            "git stash -k",
            128,
            "fatal: 'git stash push -k' is not supported in burrow\n",
        ),
        (
            "git format-patch --cover-letter -1",
            128,
            "fatal: 'git format-patch --cover-letter' is not supported in burrow\n",
        ),
        (
            "git format-patch --root HEAD~1 --stdout",
            128,
            "fatal: 'git format-patch --root' is not supported in burrow\n",
        ),
        (
            "git format-patch -2 --stdout",
            128,
            "fatal: 'git format-patch' of a binary file is not supported in burrow\n",
        ),
        (
            "git am -3 x",
            128,
            "fatal: 'git am -3' is not supported in burrow\n",
        ),
    ] {
        let (c, _, err) = f.sh("nonet", &format!("cd /workspace/fp && {cmd}"));
        assert_eq!((c, err.as_str()), (code, want), "{cmd}");
    }
    let (_, version, _) = f.sh("nonet", "git --version");
    let (_, out, _) = f.sh(
        "nonet",
        "cd /workspace/fp && git format-patch -1 --stdout | tail -n 3",
    );
    assert_eq!(
        out,
        format!(
            "-- \n{}\n\n",
            version.trim().trim_start_matches("git version ")
        ),
    );
}

#[test]
fn a_repository_made_by_native_git_reads_the_same_in_burrow() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    let native = f.native_clone("repo.git", &[]);
    // Loose objects and an index native git wrote, on top of the cloned pack.
    std::fs::write(native.join("local.txt"), "local\n").unwrap();
    commit(&native, "Local commit", "1700020000 +0200");
    std::fs::write(native.join("README.md"), "changed\n").unwrap();
    git_ok(&native, &["add", "README.md"]);
    std::fs::write(native.join("untracked.txt"), "u\n").unwrap();
    f.cli.ok(&[
        "session",
        "new",
        "--name",
        "imp",
        "--from",
        native.to_str().unwrap(),
    ]);
    f.same_as_native(
        "imp",
        "/workspace",
        &native,
        &[
            "git status",
            "git status -s -b",
            "git log --oneline",
            "git log -n 1",
            "git branch -a",
            "git ls-files",
        ],
    );
}

#[test]
fn sessions_start_from_a_git_repository() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    let allow = format!("127.0.0.1:{}", f.port);
    let url = f.url("repo.git");
    f.cli.ok(&[
        "session",
        "new",
        "--name",
        "fromgit",
        "--allow-net",
        &allow,
        "--from-git",
        &format!("{url}#dev"),
    ]);
    let (code, out, err) = f.sh(
        "fromgit",
        "git status -s -b && cat dev.txt && git log --oneline | wc -l",
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "## dev...origin/dev\non dev\n5\n"),
        "{err}"
    );
    // A clone that fails leaves no session behind, and says why.
    let (code, _, err) = f.cli.run(&[
        "session",
        "new",
        "--name",
        "broken",
        "--allow-net",
        &allow,
        "--from-git",
        &format!("{url}#nope"),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("Remote branch nope not found"), "{err}");
    let list = f.cli.ok(&["session", "ls"]);
    assert!(!list.contains("broken"), "{list}");
    // Without a network rule, the policy's refusal.
    let (code, _, err) = f.cli.run(&["session", "new", "--from-git", &url]);
    assert_ne!(code, 0);
    assert!(err.contains("denied"), "{err}");
}

#[test]
fn commits_have_the_ids_native_git_gives_them() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.cli.ok(&["session", "new", "--name", "writes"]);
    let native_root = f.tmp.path().join("native-writes");
    std::fs::create_dir_all(native_root.join("proj")).unwrap();
    let (code, _, err) = f.sh("writes", "mkdir -p /workspace/proj");
    assert_eq!(code, 0, "{err}");
    let who = "export GIT_AUTHOR_NAME='Ada Lovelace' GIT_AUTHOR_EMAIL=ada@example.com \
               GIT_COMMITTER_NAME='Ada Lovelace' GIT_COMMITTER_EMAIL=ada@example.com";
    let steps: &[(&str, &str)] = &[
        (
            "1700000000 +0000",
            "git init -q -b main && git status && git status -s -b",
        ),
        ("1700000000 +0000", "git commit -m nothing; echo $?"),
        (
            "1700000000 +0000",
            "mkdir -p src/deep && printf 'a\\nb\\nc\\n' > a.txt && echo 'fn main() {}' > src/main.rs \
             && echo deep > src/deep/d.txt && printf 'no newline' > tail.txt && git add . && git status \
             && git diff --cached && git diff --cached --stat",
        ),
        (
            "1700000100 +0100",
            "git commit -m 'First commit' && git rev-parse HEAD && git log && git show",
        ),
        (
            "1700000200 -0500",
            "printf 'a\\nB\\nc\\nd\\n' > a.txt && rm tail.txt && git status -s && git diff && git diff --stat \
             && git diff --name-only && git diff --name-status && git diff -- a.txt && git diff --cached",
        ),
        (
            "1700000200 -0500",
            "git commit -am 'Second: edit and delete' -m 'A body.' && git show && git show --stat HEAD \
             && git show --name-status && git diff HEAD~1 HEAD && git diff HEAD~1..HEAD --stat",
        ),
        ("1700000300 +0000", "git commit -m 'nothing again'; echo $?"),
        (
            "1700000400 +0000",
            "mv src/deep/d.txt src/moved.txt && git add -A && git status -s && git commit -q -m 'Move' && git log --oneline",
        ),
        (
            "1700000500 +0000",
            "printf '\\0\\1\\2binary' > blob.bin && echo '*.log' > .gitignore && echo x > x.log && git add blob.bin .gitignore && git add x.log; echo $?; git commit -m 'Binary and ignore'",
        ),
        (
            "1700000600 +0000",
            "git add nope; echo $?; cd src && echo sub > sub.txt && git add sub.txt ../a.txt && git status -s && cd .. && git commit -m 'From a subdirectory'",
        ),
        (
            "1700000700 +0000",
            "git checkout -b feature && echo f > feature.txt && git add feature.txt && git commit -m 'On feature' && git branch && git status -b -s",
        ),
        (
            "1700000800 +0000",
            "git branch topic && git branch && git branch -d topic && git branch topic2 HEAD~2 && git log --oneline topic2 && git branch -D topic2",
        ),
        (
            "1700000900 +0000",
            "git switch -c again && git checkout feature && git branch --show-current && git commit --allow-empty -m 'Empty on purpose' && git log --format='%H %T %P %s'",
        ),
        (
            "1700001000 +0000",
            "unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL \
             && git config user.name 'Grace Hopper' && git config user.email grace@example.com \
             && git config user.name && git config --unset user.email && git config user.email; \
             git config user.email grace@example.com && git config --list | grep ^user \
             && git commit --allow-empty -m 'By config' && git log -1 --format='%an <%ae> %H'",
        ),
    ];
    for (date, step) in steps {
        let script = format!(
            "{who} GIT_AUTHOR_DATE='{date}' GIT_COMMITTER_DATE='{date}'; cd {{DIR}} && {step}"
        );
        let (code, out, err) = f.sh("writes", &script.replace("{DIR}", "/workspace/proj"));
        let native = native_sh(&native_root, &script.replace("{DIR}", "proj"));
        assert_eq!(
            (code, out.as_str()),
            (
                native.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&native.stdout).as_ref()
            ),
            "{step}\nburrow stderr: {err}\nnative stderr: {}",
            String::from_utf8_lossy(&native.stderr)
        );
    }
    // Native git reads burrow's objects, refs and index as its own.
    let exported = f.export("writes").join("proj");
    git_ok(&exported, &["fsck", "--strict", "--no-progress"]);
    assert_eq!(git_ok(&exported, &["status", "--porcelain"]), "");
    assert_eq!(
        git_ok(&exported, &["log", "--all", "--format=%H %T %s"]),
        git_ok(
            &native_root.join("proj"),
            &["log", "--all", "--format=%H %T %s"]
        )
    );
    // The global config lives in $HOME/.gitconfig.
    let (code, out, err) = f.sh(
        "writes",
        "git config --global user.name 'Global Name' && git config --global user.name && cat ~/.gitconfig",
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "Global Name\n[user]\n\tname = Global Name\n"),
        "{err}"
    );
    // What burrow's git cannot do yet says so, and changes nothing.
    for (cmd, code) in [
        ("git checkout -p", 128),
        ("git checkout --orphan x", 128),
        ("git reset --keep HEAD~1", 128),
        ("git restore --patch a.txt", 128),
        ("git tag -s v9", 128),
        ("git rebase -i main", 128),
    ] {
        let (c, _, err) = f.sh(
            "writes",
            &format!("cd /workspace/proj && {cmd}; git status --porcelain -b"),
        );
        assert_eq!(c, 0, "{cmd}: {err}");
        assert!(err.contains("is not supported in burrow"), "{cmd}: {err}");
        let _ = code;
    }
    let (c, _, err) = f.sh("writes", "cd /workspace/proj && git checkout -p");
    assert_eq!(
        (c, err.as_str()),
        (128, "fatal: 'git checkout -p' is not supported in burrow\n")
    );
    // Without an identity: git's message.
    let (code, _, err) = f.sh(
        "writes",
        "cd /workspace/proj && unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL \
         && git config --unset user.name && git config --unset user.email \
         && git config --global --unset user.name && git commit --allow-empty -m x",
    );
    assert_eq!(code, 128);
    assert!(err.starts_with("Author identity unknown"), "{err}");
}

/// The sequences of `git_corpus.txt`, each from the same setup in its own directory, run by
/// burrow's git and by native git: exit status, stdout, stderr and the resulting state
/// (status, every ref's commits with their ids, HEAD, the work tree's files and contents)
/// must be the same, and native `git fsck --strict` must accept every repository burrow
/// left.
#[test]
fn the_corpus_runs_as_native_git_runs_it() {
    if !have_git() {
        return;
    }
    let text = include_str!("git_corpus.txt");
    let (setup, mut sequences) = parse_corpus(text);
    assert!(sequences.len() >= 120, "{} sequences", sequences.len());
    // GIT_CORPUS_ONLY=WORDS runs only the sequences whose title has them (while working on
    // one command).
    if let Ok(only) = std::env::var("GIT_CORPUS_ONLY") {
        sequences.retain(|(title, _)| title.contains(&only));
    }
    let f = Fixture::new();
    let native_root = f.tmp.path().join("native-corpus");
    let native_home = f.tmp.path().join("native-corpus-home");
    std::fs::create_dir_all(&native_home).unwrap();
    let who = "export GIT_AUTHOR_NAME='Ada Lovelace' GIT_AUTHOR_EMAIL=ada@example.com \
               GIT_COMMITTER_NAME='Ada Lovelace' GIT_COMMITTER_EMAIL=ada@example.com \
               GIT_AUTHOR_DATE='1700000000 +0000' GIT_COMMITTER_DATE='1700000000 +0000'";
    // Two stores with a session each, one per thread: the sequences are independent.
    const LANES: usize = 2;
    let clis: Vec<common::Cli> = (0..LANES).map(|_| common::Cli::new()).collect();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let (f, cli, setup, sequences) = (&f, &clis[lane], &setup, &sequences);
                let (native_root, native_home) = (&native_root, &native_home);
                scope.spawn(move || {
                    let session = format!("corpus{lane}");
                    cli.ok(&["session", "new", "--name", &session]);
                    let mut failures = Vec::new();
                    for (n, (title, body)) in sequences.iter().enumerate() {
                        if n % LANES != lane {
                            continue;
                        }
                        let script = |dir: &str| {
                            format!(
                                "{who}\nmkdir -p {dir} && cd {dir} || exit 99\n(\n{setup}\n{{\n{body}\n}}\n\
                                 echo \"--- exit $?\"\ncd {dir}\necho '--- state'\ngit status --porcelain -b\n\
                                 git log --all --format='%H %P %s'\ncat .git/HEAD\n\
                                 find . -path ./.git -prune -o -print | LC_ALL=C sort\n\
                                 find . -path ./.git -prune -o -type f -print | LC_ALL=C sort | xargs md5sum\n)"
                            )
                        };
                        let (code, out, err) =
                            cli.run(&["sh", &session, &script(&format!("/workspace/c/{n}"))]);
                        let dir = native_root.join(n.to_string());
                        let native = native("bash", f.tmp.path())
                            .env("HOME", native_home)
                            .args(["-c", &script(dir.to_str().unwrap())])
                            .output()
                            .expect("bash");
                        let want = (
                            native.status.code().unwrap_or(-1),
                            String::from_utf8_lossy(&native.stdout).into_owned(),
                            String::from_utf8_lossy(&native.stderr).into_owned(),
                        );
                        if (code, &out, &err) != (want.0, &want.1, &want.2) {
                            failures.push(format!(
                                "### {title}\n{body}\n--- burrow ({code})\n{out}--- burrow stderr\n{err}--- native ({})\n{}--- native stderr\n{}",
                                want.0, want.1, want.2
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        lanes.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} sequences differ from native git:\n\n{}",
        failures.len(),
        sequences.len(),
        failures.join("\n\n")
    );
    // Every repository burrow left is one native git accepts.
    for (lane, cli) in clis.iter().enumerate() {
        let dir = f.tmp.path().join(format!("export-corpus{lane}"));
        cli.ok(&["export", &format!("corpus{lane}"), dir.to_str().unwrap()]);
        let exported = dir.join("c");
        for n in (0..sequences.len()).filter(|n| n % LANES == lane) {
            git_ok(
                &exported.join(n.to_string()),
                &["fsck", "--strict", "--no-progress"],
            );
        }
    }
}

/// The corpus file's setup and its (title, body) sequences.
fn parse_corpus(text: &str) -> (String, Vec<(String, String)>) {
    let mut setup = String::new();
    let mut seqs: Vec<(String, String)> = Vec::new();
    let mut in_setup = false;
    for line in text.lines() {
        if line.starts_with("# ") || line == "#" {
            continue;
        }
        if line == "%%% setup" {
            in_setup = true;
        } else if let Some(t) = line.strip_prefix("### ") {
            in_setup = false;
            seqs.push((t.to_string(), String::new()));
        } else if in_setup {
            setup.push_str(line);
            setup.push('\n');
        } else if let Some((_, body)) = seqs.last_mut()
            && !line.is_empty()
        {
            body.push_str(line);
            body.push('\n');
        }
    }
    (setup, seqs)
}

/// fetch, pull and ls-remote against the served repository, after the upstream moves:
/// burrow's clone and a native clone run the same commands with the same dates, and the
/// exit statuses, stdouts, stderrs (git's ref update tables) and resulting refs match.
#[test]
fn fetch_pull_and_ls_remote_match_native() {
    if !have_git() {
        return;
    }
    let f = Fixture::new();
    f.session("sync");
    let url = f.url("repo.git");
    let (code, _, err) = f.sh("sync", &format!("cd /workspace && git clone -q {url}"));
    assert_eq!(code, 0, "{err}");
    let native = f.native_clone("repo.git", &[]);
    let upstream = f.tmp.path().join("repo-src");
    let bare = f.tmp.path().join("served/repo.git");
    let who = "export GIT_AUTHOR_NAME='Ada Lovelace' GIT_AUTHOR_EMAIL=ada@example.com \
               GIT_COMMITTER_NAME='Ada Lovelace' GIT_COMMITTER_EMAIL=ada@example.com";
    let same = |step: &str, date: &str| {
        let script = format!(
            "{who} GIT_AUTHOR_DATE='{date}' GIT_COMMITTER_DATE='{date}'; {step}; echo \"exit $?\"; \
             git status -sb; git log --all --format='%H %P %s'; cat .git/FETCH_HEAD 2>/dev/null"
        );
        let (code, out, err) = f.sh("sync", &format!("cd /workspace/repo && {script}"));
        let n = native_sh(&native, &script);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (
                n.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&n.stdout).as_ref(),
                String::from_utf8_lossy(&n.stderr).as_ref()
            ),
            "{step}"
        );
    };
    let push_upstream = |cmds: &str| {
        let out = native_sh(
            &upstream,
            &format!(
                "{who}; {cmds} && git push -q --tags {} main dev feature2 2>&1",
                bare.display()
            ),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    same(
        "git fetch && git ls-remote && git ls-remote --heads && git ls-remote origin main",
        "1700020000 +0000",
    );
    // The upstream moves on: a commit on main, a new branch, an annotated tag.
    push_upstream(
        "export GIT_AUTHOR_DATE='1700030000 +0000' GIT_COMMITTER_DATE='1700030000 +0000' \
         && echo up >> README.md && git commit -q -am 'Upstream edit' \
         && git branch feature2 && git tag -a v2 -m 'version 2'",
    );
    same("git fetch", "1700040000 +0000");
    same("git fetch; git ls-remote --tags", "1700040000 +0000");
    same("git pull", "1700040000 +0000");
    // Both sides move: pull refuses without a policy, then merges.
    push_upstream(
        "export GIT_AUTHOR_DATE='1700050000 +0000' GIT_COMMITTER_DATE='1700050000 +0000' \
         && echo more >> src/lib.rs && git commit -q -am 'Upstream lib'",
    );
    same(
        "echo local > local.txt && git add local.txt && git commit -q -m 'Local work' && git pull",
        "1700060000 +0000",
    );
    same("git pull --ff-only", "1700060000 +0000");
    same(
        "git pull --no-rebase && git log --oneline -3",
        "1700070000 +0000",
    );
    same("git pull", "1700070000 +0000");
    // A conflict through pull.
    push_upstream(
        "export GIT_AUTHOR_DATE='1700080000 +0000' GIT_COMMITTER_DATE='1700080000 +0000' \
         && echo upstream > README.md && git commit -q -am 'Upstream README'",
    );
    same(
        "echo mine > README.md && git commit -q -am 'My README' && git -c pull.rebase=false pull; cat README.md; git merge --abort",
        "1700090000 +0000",
    );
    // A pruned branch.
    let out = native_sh(
        &upstream,
        &format!("git push -q {} :feature2", bare.display()),
    );
    assert!(out.status.success());
    same("git fetch --prune", "1700090000 +0000");

    // push: burrow to the served repository, native git to a copy of it, same commands.
    let bare2 = f.tmp.path().join("served/repo2.git");
    let out = native_sh(
        f.tmp.path(),
        &format!(
            "cp -r {b} {b2} && git config -f {b}/config http.receivepack true \
             && git config -f {b2}/config http.receivepack true",
            b = bare.display(),
            b2 = bare2.display()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git_ok(
        &native,
        &["remote", "set-url", "origin", &f.url("repo2.git")],
    );
    let pushed = |step: &str, date: &str| {
        let script = format!(
            "{who} GIT_AUTHOR_DATE='{date}' GIT_COMMITTER_DATE='{date}'; {step}; echo \"exit $?\"; \
             git status -sb; git log --all --format='%H %P %s'; git ls-remote origin"
        );
        let (code, out, err) = f.sh("sync", &format!("cd /workspace/repo && {script}"));
        let n = native_sh(&native, &script);
        let fix = |b: &[u8]| String::from_utf8_lossy(b).replace("repo2.git", "repo.git");
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (
                n.status.code().unwrap_or(-1),
                fix(&n.stdout).as_str(),
                fix(&n.stderr).as_str()
            ),
            "{step}"
        );
    };
    pushed("git push", "1700100000 +0000");
    pushed(
        "git reset -q --hard origin/main && echo pushed > pushed.txt && git add pushed.txt \
         && git commit -q -m Pushed && git push",
        "1700100000 +0000",
    );
    pushed("git push", "1700100000 +0000");
    pushed("git push origin HEAD:newb", "1700100000 +0000");
    pushed("git checkout -q -b topic && git push", "1700100000 +0000");
    pushed(
        "git push -u origin topic && git config branch.topic.merge",
        "1700100000 +0000",
    );
    pushed("git push origin --delete newb", "1700100000 +0000");
    pushed(
        "git tag -a v3 -m 'version 3' && git push origin v3",
        "1700110000 +0000",
    );
    pushed(
        "git reset -q --hard HEAD~1 && git commit -q --allow-empty -m Diverge && git push origin topic",
        "1700120000 +0000",
    );
    pushed("git push -f origin topic && git push", "1700120000 +0000");
    pushed("git push origin nosuch", "1700120000 +0000");
    // The served repository is one native git accepts.
    git_ok(&bare, &["fsck", "--strict", "--no-progress"]);
}
