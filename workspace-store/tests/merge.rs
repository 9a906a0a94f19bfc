//! Three-way merges checked against git: the text merge against `git merge-file --diff3` on
//! generated files, and tree merges against `git merge` on generated histories (adds,
//! deletes, edits, exact renames, executable bits), both sides made from one base in a
//! store and in a git repository. Without git installed the git comparisons print one line
//! and pass, unless BURROW_REQUIRE_GIT=1 (set by .ci/run).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use burrow_store::{
    ConflictKind, Labels, MergeOptions, ROOT_INO, Store, VersionId, is_binary, merge_text,
};

fn have_git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("BURROW_REQUIRE_GIT").as_deref() != Ok("1"),
            "git is required (BURROW_REQUIRE_GIT=1)"
        );
        println!("skipped: install git to compare merges with git's");
    }
    ok
}

/// xorshift: reproducible cases without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A file of short lines from a small alphabet (so diffs have choices to make).
fn text(rng: &mut Rng, tag: &str, lines: usize) -> Vec<String> {
    (0..lines)
        .map(|_| format!("{tag}{}\n", rng.below(6)))
        .collect()
}

/// Random line edits: replace, insert, delete, a few times.
fn edit(rng: &mut Rng, lines: &[String], tag: &str) -> Vec<String> {
    let mut out = lines.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(3) {
            0 if at < out.len() => out[at] = format!("{tag}{}\n", rng.below(4)),
            1 if at < out.len() => {
                out.remove(at);
            }
            _ => out.insert(at, format!("{tag}{}\n", rng.below(4))),
        }
    }
    out
}

fn join(lines: &[String]) -> String {
    lines.concat()
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("run git")
}

const LABELS: Labels<'static> = Labels {
    ours: "ours",
    base: "base",
    theirs: "theirs",
};

#[test]
fn text_merges_match_git_merge_file() {
    if !have_git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut clean, mut conflicted) = (0, 0);
    for case in 0..300 {
        let n = 1 + rng.below(12);
        let base = text(&mut rng, "l", n);
        let ours = edit(&mut rng, &base, "o");
        let theirs = if rng.below(5) == 0 {
            ours.clone()
        } else {
            edit(&mut rng, &base, "t")
        };
        let mut files = [join(&base), join(&ours), join(&theirs)];
        // Now and then a last line without its newline.
        if rng.below(6) == 0 {
            let i = rng.below(3);
            if files[i].ends_with('\n') {
                files[i].pop();
            }
        }
        for (name, body) in ["base", "ours", "theirs"].iter().zip(&files) {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let out = git(
            dir.path(),
            &[
                "merge-file",
                "--diff3",
                "-p",
                "-L",
                "ours",
                "-L",
                "base",
                "-L",
                "theirs",
                "ours",
                "base",
                "theirs",
            ],
        );
        let want_conflicts = out.status.code().expect("exit code") as usize;
        let got = merge_text(
            files[0].as_bytes(),
            files[1].as_bytes(),
            files[2].as_bytes(),
            LABELS,
        );
        assert_eq!(
            String::from_utf8_lossy(&got.bytes),
            String::from_utf8_lossy(&out.stdout),
            "case {case}: base {:?} ours {:?} theirs {:?}",
            files[0],
            files[1],
            files[2]
        );
        assert_eq!(got.conflicts, want_conflicts, "case {case}");
        if got.conflicts > 0 {
            conflicted += 1;
        } else {
            clean += 1;
        }
    }
    assert!(
        clean > 30 && conflicted > 30,
        "{clean} clean, {conflicted} conflicted"
    );
}

/// One side's changes to a tree of files: path -> (content, executable).
type Tree = BTreeMap<String, (String, bool)>;

fn change_tree(rng: &mut Rng, base: &Tree, tag: &str, fresh: &mut usize) -> Tree {
    let mut t = base.clone();
    let paths: Vec<String> = base.keys().cloned().collect();
    for p in &paths {
        match rng.below(9) {
            0 => {
                t.remove(p);
            }
            1 | 2 => {
                let lines: Vec<String> = t[p].0.split_inclusive('\n').map(String::from).collect();
                let e = edit(rng, &lines, tag);
                t.get_mut(p).unwrap().0 = join(&e);
            }
            3 => {
                // An exact rename within the directory (git would see a directory rename
                // otherwise, which burrow does not detect).
                let v = t.remove(p).unwrap();
                *fresh += 1;
                let to = match p.rsplit_once('/') {
                    Some((d, _)) => format!("{d}/moved{fresh}.txt"),
                    None => format!("moved{fresh}.txt"),
                };
                t.insert(to, v);
            }
            4 => t.get_mut(p).unwrap().1 ^= true,
            _ => {}
        }
    }
    for _ in 0..rng.below(3) {
        *fresh += 1;
        let dir = ["", "src/", "docs/deep/"][rng.below(3)];
        // Unique lines, so git's similarity rename detection never pairs it with a
        // deleted file.
        let body: String = (0..3).map(|i| format!("new{fresh}-{tag}-{i}\n")).collect();
        t.insert(format!("{dir}new{fresh}.txt"), (body, false));
    }
    // Sometimes both sides add the same path.
    if rng.below(4) == 0 {
        t.insert("both.txt".into(), (format!("common\n{tag}\n"), false));
    }
    t
}

fn write_store(s: &Store, ws: &str, want: &Tree) {
    let mut txn = s.begin(ws).unwrap();
    let have = txn.files_under(".").unwrap();
    for p in have {
        if !want.contains_key(&p) {
            txn.unlink_at(ROOT_INO, &p).unwrap();
        }
    }
    for (p, (body, x)) in want {
        if let Some((d, _)) = p.rsplit_once('/') {
            txn.mkdir_all(d).unwrap();
        }
        let old = txn.read_file(p).ok();
        if old.as_deref() != Some(body.as_bytes()) {
            txn.write_file(p, body.as_bytes()).unwrap();
        }
        let ino = txn.resolve(ROOT_INO, p, false).unwrap();
        txn.set_mode(ino, if *x { 0o755 } else { 0o644 }).unwrap();
    }
    // Directories left empty go, as git has none.
    for d in ["docs/deep", "docs", "src"] {
        let _ = txn.rmdir_at(ROOT_INO, d);
    }
    txn.commit().unwrap();
}

fn write_git(dir: &Path, want: &Tree, msg: &str) {
    let out = git(dir, &["ls-files", "-z"]);
    for p in out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let p = String::from_utf8_lossy(p).to_string();
        if !want.contains_key(&p) {
            std::fs::remove_file(dir.join(&p)).unwrap();
        }
    }
    for (p, (body, x)) in want {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            &f,
            std::fs::Permissions::from_mode(if *x { 0o755 } else { 0o644 }),
        )
        .unwrap();
    }
    assert!(git(dir, &["add", "-A"]).status.success());
    assert!(
        git(dir, &["commit", "-q", "--allow-empty", "-m", msg])
            .status
            .success()
    );
}

/// Marker lines carry labels that differ between git and burrow: compare the markers only.
fn unlabel(s: &str) -> String {
    s.lines()
        .map(|l| {
            for m in ["<<<<<<<", "|||||||", ">>>>>>>"] {
                if l.starts_with(m) {
                    return m.to_string();
                }
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn tree_merges_match_git_merge() {
    if !have_git() {
        return;
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut fresh = 0;
    let mut conflicted_cases = 0;
    for case in 0..40 {
        let mut base = Tree::new();
        for (i, p) in ["a.txt", "b.txt", "src/c.rs", "src/d.rs", "docs/deep/e.md"]
            .iter()
            .enumerate()
        {
            let tag = format!("f{i}-");
            let n = 4 + rng.below(6);
            base.insert(p.to_string(), (join(&text(&mut rng, &tag, n)), false));
        }
        let theirs = change_tree(&mut rng, &base, "t", &mut fresh);
        let ours = change_tree(&mut rng, &base, "o", &mut fresh);

        // The store: base, then two forks.
        let sd = tempfile::tempdir().unwrap();
        let s = Store::open(sd.path().join("s.db")).unwrap();
        s.create_workspace("w").unwrap();
        write_store(&s, "w", &base);
        let v0: VersionId = s.workspace("w").unwrap().version;
        s.fork("w", &["src"]).unwrap();
        write_store(&s, "src", &theirs);
        write_store(&s, "w", &ours);
        let mut txn = s.begin("w").unwrap();
        let report = s
            .merge_into(
                &mut txn,
                v0,
                s.workspace("src").unwrap().version,
                MergeOptions {
                    labels: LABELS,
                    system: false,
                    later_wins: false,
                },
            )
            .unwrap();
        txn.commit().unwrap();

        // git: the same three trees as commits, then `git merge`.
        let gd = tempfile::tempdir().unwrap();
        let g = gd.path();
        assert!(git(g, &["init", "-q", "-b", "main"]).status.success());
        write_git(g, &base, "base");
        assert!(git(g, &["branch", "side"]).status.success());
        write_git(g, &ours, "ours");
        assert!(git(g, &["checkout", "-q", "side"]).status.success());
        write_git(g, &theirs, "theirs");
        assert!(git(g, &["checkout", "-q", "main"]).status.success());
        let out = git(
            g,
            &[
                "-c",
                "merge.conflictStyle=diff3",
                "-c",
                "merge.directoryRenames=false",
                "merge",
                "-q",
                "--no-edit",
                "side",
            ],
        );
        let unmerged = git(g, &["diff", "--name-only", "--diff-filter=U"]);
        let mut want_conflicts: Vec<String> = String::from_utf8_lossy(&unmerged.stdout)
            .lines()
            .map(String::from)
            .collect();
        want_conflicts.sort();
        let got_conflicts: Vec<String> = report.conflicts.iter().map(|c| c.path.clone()).collect();
        assert_eq!(
            got_conflicts,
            want_conflicts,
            "case {case}: conflicts (git said {})",
            String::from_utf8_lossy(&out.stdout)
        );
        if !want_conflicts.is_empty() {
            conflicted_cases += 1;
        }

        // The resulting trees: every file, its bytes and its executable bit.
        let mut view = s.view(s.workspace("w").unwrap().version).unwrap();
        let got_files = view.files_under(".").unwrap();
        let listed = git(
            g,
            &[
                "ls-files",
                "-z",
                "--others",
                "--cached",
                "--exclude-standard",
            ],
        );
        let mut want_files: Vec<String> = listed
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).to_string())
            .collect();
        // The index still names a conflicted rename's source; the work tree is what counts.
        want_files.retain(|p| g.join(p).exists());
        want_files.sort();
        want_files.dedup();
        assert_eq!(got_files, want_files, "case {case}: files");
        for p in &want_files {
            let want = std::fs::read_to_string(g.join(p)).unwrap();
            let got = String::from_utf8(view.read_file(p).unwrap()).unwrap();
            assert_eq!(unlabel(&got), unlabel(&want), "case {case}: {p}");
            use std::os::unix::fs::PermissionsExt;
            let want_x = std::fs::metadata(g.join(p)).unwrap().permissions().mode() & 0o100 != 0;
            let ino = view.resolve(ROOT_INO, p, false).unwrap();
            let got_x = view.stat(ino).unwrap().mode & 0o100 != 0;
            if !got_conflicts.contains(p) {
                assert_eq!(got_x, want_x, "case {case}: mode of {p}");
            }
        }
    }
    assert!(
        conflicted_cases > 5,
        "{conflicted_cases} cases with conflicts"
    );
}

#[test]
fn conflicts_by_kind_and_a_clean_report() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path().join("s.db")).unwrap();
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("bin", b"\0one").unwrap();
    t.write_file("gone", b"x\n").unwrap();
    t.mkdir_all("dir").unwrap();
    t.write_file("dir/f", b"f\n").unwrap();
    t.symlink_at("a", ROOT_INO, "link").unwrap();
    let base = t.commit().unwrap().version;
    s.fork("w", &["f"]).unwrap();

    let mut t = s.begin("f").unwrap();
    t.write_file("bin", b"\0theirs").unwrap();
    t.write_file("gone", b"edited\n").unwrap();
    t.unlink_at(ROOT_INO, "link").unwrap();
    t.symlink_at("b", ROOT_INO, "link").unwrap();
    t.write_file("added", b"new\n").unwrap();
    t.unlink_at(ROOT_INO, "dir/f").unwrap();
    t.rmdir_at(ROOT_INO, "dir").unwrap();
    t.write_file("dir", b"now a file\n").unwrap();
    let theirs = t.commit().unwrap().version;

    let mut t = s.begin("w").unwrap();
    t.write_file("bin", b"\0ours").unwrap();
    t.unlink_at(ROOT_INO, "gone").unwrap();
    t.unlink_at(ROOT_INO, "link").unwrap();
    t.symlink_at("c", ROOT_INO, "link").unwrap();
    t.write_file("dir/g", b"g\n").unwrap();
    t.commit().unwrap();

    assert!(is_binary(b"\0ours"));
    let mut t = s.begin("w").unwrap();
    let r = s
        .merge_into(
            &mut t,
            base,
            theirs,
            MergeOptions {
                labels: LABELS,
                system: false,
                later_wins: false,
            },
        )
        .unwrap();
    let kinds: Vec<(&str, ConflictKind)> = r
        .conflicts
        .iter()
        .map(|c| (c.path.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("bin", ConflictKind::Binary),
            ("dir", ConflictKind::Kind),
            ("gone", ConflictKind::ModifyDelete),
            ("link", ConflictKind::Symlink),
        ]
    );
    assert_eq!(r.merged, vec!["added".to_string(), "dir/f".to_string()]);
    // Ours stays where the sides conflict; the modified file deleted here comes back.
    assert_eq!(t.read_file("bin").unwrap(), b"\0ours");
    assert_eq!(t.read_file("gone").unwrap(), b"edited\n");
    assert_eq!(t.readlink_at(ROOT_INO, "link").unwrap(), "c");
    assert_eq!(t.read_file("dir/g").unwrap(), b"g\n");
    assert_eq!(t.read_file("added").unwrap(), b"new\n");
}

#[test]
fn concurrent_commits_merge_onto_the_moved_head() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path().join("s.db")).unwrap();
    s.create_workspace("w").unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("shared", b"base\n").unwrap();
    t.write_file("doomed", b"x\n").unwrap();
    t.write_file("log", b"start\n").unwrap();
    t.write_file("notes", b"1\n2\n3\n4\n5\n").unwrap();
    t.commit().unwrap();

    // Two calls start from the same head.
    let mut first = s.begin("w").unwrap();
    let mut second = s.begin("w").unwrap();
    first.merge_if_moved();
    second.merge_if_moved();
    first.write_file("a", b"from first\n").unwrap();
    first.write_file("shared", b"first\n").unwrap();
    second.write_file("b", b"from second\n").unwrap();
    second.write_file("shared", b"second\n").unwrap();
    second.unlink_at(ROOT_INO, "doomed").unwrap();
    // Both append to one file, both edit other lines of another.
    first.write_file("log", b"start\nfirst\n").unwrap();
    second.write_file("log", b"start\nsecond\n").unwrap();
    first.write_file("notes", b"one\n2\n3\n4\n5\n").unwrap();
    second.write_file("notes", b"1\n2\n3\n4\nfive\n").unwrap();
    let c1 = first.commit_recording("tool", "{}").unwrap();
    let c2 = second.commit_recording("tool", "{}").unwrap();
    assert!(c2.changed && c2.version.0 > c1.version.0);

    let mut head = s.view(s.workspace("w").unwrap().version).unwrap();
    assert_eq!(head.read_file("a").unwrap(), b"from first\n");
    assert_eq!(head.read_file("b").unwrap(), b"from second\n");
    assert_eq!(
        head.read_file("shared").unwrap(),
        b"second\n",
        "the later write wins"
    );
    assert!(head.read_file("doomed").is_err());
    assert_eq!(
        head.read_file("log").unwrap(),
        b"start\nfirst\nsecond\n",
        "both appends land"
    );
    assert_eq!(head.read_file("notes").unwrap(), b"one\n2\n3\n4\nfive\n");
    // The second call's version sits on the first's: undoing it keeps the first's work.
    assert_eq!(s.version(c2.version).unwrap().parent, Some(c1.version));
    let events = s
        .events(&burrow_store::EventFilter {
            workspace: Some("w".into()),
            after: 0,
            kind: Some("concurrent".into()),
            limit: 0,
        })
        .unwrap();
    assert_eq!(events.len(), 1);
    let note: serde_json::Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(note["onto"], c1.version.0);
    assert_eq!(note["replaced"], serde_json::json!(["shared"]));
    assert!(s.fsck().unwrap().is_clean());

    // Without it, the second commit fails and changes nothing.
    let mut x = s.begin("w").unwrap();
    let mut y = s.begin("w").unwrap();
    x.write_file("x", b"1").unwrap();
    y.write_file("y", b"2").unwrap();
    x.commit().unwrap();
    assert!(matches!(
        y.commit(),
        Err(burrow_store::Error::Conflict { .. })
    ));
}
