//! Golden outputs of shell commands whose reference implementation may not be installed on
//! the test machine (so they cannot join the differential bash corpus): jq and rg. The
//! expected strings are what jq 1.7 and ripgrep print when their output is not a terminal
//! (as in a tool call).

use crate::common;

/// The cases whose stdout or exit status differ from the expected ones, described.
fn mismatches(sb: &burrow_host::Sandbox, id: &str, cases: &[(&str, &str, i32)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (cmd, want, code) in cases {
        let r = sb.sh(id, cmd).unwrap();
        let got = String::from_utf8_lossy(&r.report.stdout);
        if got != *want || r.report.exit_code != *code {
            failures.push(format!(
                "{cmd}\n  want ({code}): {want:?}\n  got  ({}): {got:?} {}",
                r.report.exit_code,
                String::from_utf8_lossy(&r.report.stderr)
            ));
        }
    }
    failures
}

#[test]
fn jq_golden() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(
        &id,
        r#"printf '{"name":"burrow","tags":["wasm","sqlite"],"stars":42,"owner":{"login":"x"}}\n' > repo.json"#,
    )
    .unwrap();
    let cases: &[(&str, &str, i32)] = &[
        (
            "jq . repo.json",
            "{\n  \"name\": \"burrow\",\n  \"tags\": [\n    \"wasm\",\n    \"sqlite\"\n  ],\n  \"stars\": 42,\n  \"owner\": {\n    \"login\": \"x\"\n  }\n}\n",
            0,
        ),
        (
            "jq -c . repo.json",
            "{\"name\":\"burrow\",\"tags\":[\"wasm\",\"sqlite\"],\"stars\":42,\"owner\":{\"login\":\"x\"}}\n",
            0,
        ),
        ("jq -r .name repo.json", "burrow\n", 0),
        ("jq '.tags | length' repo.json", "2\n", 0),
        ("jq -r '.tags[]' repo.json", "wasm\nsqlite\n", 0),
        ("jq '.stars + 1' repo.json", "43\n", 0),
        (
            "jq -c '{n: .name, t: .tags[0]}' repo.json",
            "{\"n\":\"burrow\",\"t\":\"wasm\"}\n",
            0,
        ),
        (
            "jq -c 'keys' repo.json",
            "[\"name\",\"owner\",\"stars\",\"tags\"]\n",
            0,
        ),
        ("jq '.missing' repo.json", "null\n", 0),
        (
            "jq -c 'to_entries | map(.key)' repo.json",
            "[\"name\",\"tags\",\"stars\",\"owner\"]\n",
            0,
        ),
        ("jq -r '.tags | join(\",\")' repo.json", "wasm,sqlite\n", 0),
        (
            "jq -c '[.tags[] | select(startswith(\"s\"))]' repo.json",
            "[\"sqlite\"]\n",
            0,
        ),
        ("echo '[3,1,2]' | jq -c 'sort'", "[1,2,3]\n", 0),
        ("echo '1 2 3' | jq -s add", "6\n", 0),
        (
            "jq -n --arg v hi -c '{greet: $v}'",
            "{\"greet\":\"hi\"}\n",
            0,
        ),
        ("jq -n --argjson v '{\"a\":1}' '$v.a'", "1\n", 0),
        (
            "echo '{\"b\":1,\"a\":2}' | jq -S -c .",
            "{\"a\":2,\"b\":1}\n",
            0,
        ),
        ("echo null | jq -e .", "null\n", 1),
        (
            "echo '{\"a\":[1,2]}' | jq -c '.a |= map(. * 10)'",
            "{\"a\":[10,20]}\n",
            0,
        ),
        (
            "jq -r '\"\\(.name) has \\(.stars) stars\"' repo.json",
            "burrow has 42 stars\n",
            0,
        ),
        (
            "jq -c 'paths' repo.json | head -2",
            "[\"name\"]\n[\"tags\"]\n",
            0,
        ),
        ("jq -r '.owner | has(\"login\")' repo.json", "true\n", 0),
    ];
    let mut failures = mismatches(&sb, &id, cases);
    // Errors are clear and non-zero.
    for (cmd, code, needle) in [
        ("echo '{' | jq .", 2, "jq: error"),
        ("jq -n 'nosuchfn(1)'", 3, "not defined"),
        ("jq . missing.json", 2, "Could not open missing.json"),
    ] {
        let r = sb.sh(&id, cmd).unwrap();
        let err = String::from_utf8_lossy(&r.report.stderr);
        if r.report.exit_code != code || !err.contains(needle) {
            failures.push(format!("{cmd}: exit {} stderr {err:?}", r.report.exit_code));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rg_golden() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(
        &id,
        "mkdir -p src .git && printf 'fn main() {}\\n// TODO one\\n' > src/main.rs \
         && printf 'todo lower\\nTODO two\\n' > notes.md && printf 'TODO in git\\n' > .git/x",
    )
    .unwrap();
    let cases: &[(&str, &str, i32)] = &[
        ("rg TODO", "notes.md:TODO two\nsrc/main.rs:// TODO one\n", 0),
        (
            "rg -n TODO",
            "notes.md:2:TODO two\nsrc/main.rs:2:// TODO one\n",
            0,
        ),
        ("rg -n TODO src", "src/main.rs:2:// TODO one\n", 0),
        ("rg -i -c todo", "notes.md:2\nsrc/main.rs:1\n", 0),
        ("rg -l -t rust TODO", "src/main.rs\n", 0),
        ("rg -g '*.md' -w TODO", "notes.md:TODO two\n", 0),
        ("rg --files", "notes.md\nsrc/main.rs\n", 0),
        ("rg -l --hidden 'TODO in'", ".git/x\n", 0),
        ("rg -o 'T[A-Z]+' notes.md", "TODO\n", 0),
        ("rg nothing-matches", "", 1),
    ];
    let failures = mismatches(&sb, &id, cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// ripgrep's ignore files: `.gitignore` inside a git repository (negation, directories,
/// nested files, files above the search root), `.ignore` always, and the flags that turn them
/// off. ripgrep's output order is not defined, so lists are sorted.
#[test]
fn rg_ignore_files() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(
        &id,
        "mkdir -p repo/.git repo/src repo/target repo/sub plain \
         && printf 'target/\\n*.log\\n!keep.log\\n' > repo/.gitignore \
         && printf '/src/skip.rs\\n' > repo/.ignore \
         && printf 'gen.rs\\n' > repo/sub/.gitignore \
         && for f in src/a.rs src/skip.rs target/out.rs debug.log keep.log sub/gen.rs sub/real.rs; do \
              echo needle > repo/$f; done \
         && printf '*.txt\\n' > plain/.gitignore && echo needle > plain/a.txt && echo needle > plain/b.md",
    )
    .unwrap();
    let cases: &[(&str, &str, i32)] = &[
        (
            "cd /workspace/repo && rg -l needle | sort",
            "keep.log\nsrc/a.rs\nsub/real.rs\n",
            0,
        ),
        (
            "cd /workspace/repo && rg -l --no-ignore needle | sort",
            "debug.log\nkeep.log\nsrc/a.rs\nsrc/skip.rs\nsub/gen.rs\nsub/real.rs\ntarget/out.rs\n",
            0,
        ),
        (
            "cd /workspace/repo && rg -l --no-ignore-vcs needle | sort",
            "debug.log\nkeep.log\nsrc/a.rs\nsub/gen.rs\nsub/real.rs\ntarget/out.rs\n",
            0,
        ),
        ("cd /workspace/repo/src && rg -l needle", "a.rs\n", 0),
        (
            "cd /workspace/repo && rg --files | sort",
            "keep.log\nsrc/a.rs\nsub/real.rs\n",
            0,
        ),
        ("cd /workspace/repo && rg needle debug.log", "needle\n", 0),
        (
            "cd /workspace && rg -l needle plain | sort",
            "plain/a.txt\nplain/b.md\n",
            0,
        ),
        (
            "cd /workspace && rg -l --no-require-git needle plain",
            "plain/b.md\n",
            0,
        ),
    ];
    let failures = mismatches(&sb, &id, cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Utilities not installed on the CI machine (tree) or whose answers are the sandbox's own
/// (uname, whoami, id, hostname, nproc, mktemp's default directory).
#[test]
fn sandbox_utilities_golden() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(
        &id,
        "mkdir -p proj/src/deep proj/.hidden && touch proj/README.md proj/src/main.rs \
         proj/src/deep/x.rs proj/.hidden/h && ln -s src/main.rs proj/link",
    )
    .unwrap();
    let cases: &[(&str, &str, i32)] = &[
        (
            "tree proj",
            "proj\n├── README.md\n├── link -> src/main.rs\n└── src\n    ├── deep\n    │   └── x.rs\n    └── main.rs\n\n2 directories, 4 files\n",
            0,
        ),
        (
            "tree -L 1 proj",
            "proj\n├── README.md\n├── link -> src/main.rs\n└── src\n\n1 directory, 2 files\n",
            0,
        ),
        (
            "cd proj && tree -d",
            ".\n└── src\n    └── deep\n\n2 directories\n",
            0,
        ),
        (
            "cd /workspace && tree -a -I 'src|link' proj",
            "proj\n├── .hidden\n│   └── h\n└── README.md\n\n1 directory, 2 files\n",
            0,
        ),
        (
            "uname; uname -sm; whoami; id -un; hostname; nproc",
            "Linux\nLinux wasm32\nagent\nagent\nburrow\n1\n",
            0,
        ),
        (
            "t=$(mktemp) && test -f $t && dirname $t; d=$(mktemp -d -p proj) && test -d $d && dirname $d; mktemp -u x.XXX | grep -c '^/tmp/x\\.'",
            "/tmp\nproj\n1\n",
            0,
        ),
        ("mktemp bad.X", "", 1),
        // GNU's --preserve-root: never a recursive removal of the sandbox's root.
        (
            "rm -rf / 2>&1; echo rc=$?; rm -r /workspace/.. 2>&1 | head -n 1; ls -d /workspace/proj",
            "rm: it is dangerous to operate recursively on '/'\nrm: use --no-preserve-root to override this failsafe\nrc=1\nrm: refusing to remove '.' or '..' directory: skipping '/workspace/..'\n/workspace/proj\n",
            0,
        ),
    ];
    let failures = mismatches(&sb, &id, cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `du` in Linux's units (what GNU du prints on ext4: a directory one 4 KiB block, a file its
/// size rounded up to blocks) and `bc` (what GNU bc 1.07 prints). Neither joins the bash
/// corpus: du's numbers depend on the reference machine's filesystem (tmpfs differs) and bc
/// is not installed everywhere.
#[test]
fn du_and_bc_golden() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(
        &id,
        "mkdir -p d/e && printf 'x\\ny\\n' > d/f && head -c 5000 /dev/zero > d/e/g && ln -s f d/l",
    )
    .unwrap();
    let cases: &[(&str, &str, i32)] = &[
        ("du d", "12\td/e\n20\td\n", 0),
        ("du -sh d", "20K\td\n", 0),
        ("du -a d", "8\td/e/g\n12\td/e\n4\td/f\n0\td/l\n20\td\n", 0),
        ("du -sb d", "13197\td\n", 0),
        ("du -ah --apparent-size d/e", "4.9K\td/e/g\n8.9K\td/e\n", 0),
        ("du -sc d d/e", "20\td\n20\ttotal\n", 0),
        ("du -c d/e d", "12\td/e\n8\td\n20\ttotal\n", 0),
        ("du -BM d", "1M\td/e\n1M\td\n", 0),
        ("du -d0 d; du --max-depth=1 d", "20\td\n12\td/e\n20\td\n", 0),
        ("du -s -d 1 d", "", 1),
        ("du -q d", "", 1),
        ("du nope", "", 1),
        ("echo 'scale=2; 10/3' | bc", "3.33\n", 0),
        ("echo 'scale=3; -1/3; -1/3*3' | bc", "-.333\n-.999\n", 0),
        (
            "echo '1.50*2; .5+.5; 0.0; 7.5%2' | bc",
            "3.00\n1.0\n0\n1.5\n",
            0,
        ),
        (
            "echo '2^256' | bc",
            "11579208923731619542357098500868790785326998466564056403945758400791\\\n3129639936\n",
            0,
        ),
        ("echo '2^-2; scale=4; 2^-2' | bc", "0\n.2500\n", 0),
        ("echo 'sqrt(2)' | bc -l", "1.41421356237309504880\n", 0),
        (
            "echo 's(1); c(1); a(1); l(2); e(1)' | bc -l",
            ".84147098480789650665\n.54030230586813971740\n.78539816339744830961\n.69314718055994530941\n2.71828182845904523536\n",
            0,
        ),
        (
            "echo 'scale=5; e(2); 4*a(1)' | bc -l",
            "7.38905\n3.14156\n",
            0,
        ),
        (
            "echo '1 > 2; 2 >= 2; !0; 1 && 0; 1 || 0' | bc",
            "0\n1\n1\n0\n1\n",
            0,
        ),
        ("echo 'x=5; x++; x; ++x; x+=2; x' | bc", "5\n6\n7\n9\n", 0),
        (
            "echo 'obase=2; 10; obase=16; 255; -255' | bc",
            "1010\nFF\n-FF\n",
            0,
        ),
        ("echo 'ibase=16; FF; A' | bc", "255\n10\n", 0),
        (
            "echo 'for (i=0;i<3;i++) i; i=0; while (i<2) { i; i=i+1 }' | bc",
            "0\n1\n2\n0\n1\n",
            0,
        ),
        (
            "printf 'define f(x) {\\n auto y\\n y = x * 2\\n return (y)\\n}\\nf(21)\\n' | bc",
            "42\n",
            0,
        ),
        (
            "echo 'a[3]=7; a[3]+1; length(123.45); scale(1.250)' | bc",
            "8\n5\n3\n",
            0,
        ),
        ("echo '\"x=\"; 3; print 1, 2, \"\\n\"' | bc", "x=3\n12\n", 0),
        ("echo '1/0; 2+2' | bc; echo '3; quit; 4' | bc", "3\n", 0),
        ("echo '3; last+1; .' | bc", "3\n4\n4\n", 0),
        ("echo '1 +' | bc", "", 0),
        ("echo 'j(1,1)' | bc -l", "", 0),
        ("bc -z", "", 1),
    ];
    let failures = mismatches(&sb, &id, cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The messages, as GNU's.
    let err =
        |cmd: &str| String::from_utf8_lossy(&sb.sh(&id, cmd).unwrap().report.stderr).into_owned();
    assert_eq!(
        err("du -s -d 1 d"),
        "du: warning: summarizing conflicts with --max-depth=1\nTry 'du --help' for more information.\n"
    );
    assert_eq!(err("echo '1 +' | bc"), "(standard_in) 2: syntax error\n");
    assert!(err("echo '1/0' | bc").contains("Divide by zero"));
}

/// `>(cmd)`: bash runs cmd concurrently, so its output's place is a race there and the
/// differential corpus cannot hold it; burrow runs cmd when the command that names it ends.
/// The expected outputs are bash's (with a pause after each line to let cmd finish).
#[test]
fn output_process_substitution_golden() {
    let dir = tempfile::tempdir().unwrap();
    let sb = common::sandbox(dir.path());
    let id = sb.create(None).unwrap().id;
    sb.sh(&id, "printf 'b\\na\\n' > f").unwrap();
    let cases: &[(&str, &str, i32)] = &[
        ("tee >(wc -l) < f", "b\na\n2\n", 0),
        ("sort f > >(cat -n)", "     1\ta\n     2\tb\n", 0),
        ("echo hi | tee >(tr a-z A-Z) > /dev/null", "HI\n", 0),
        ("{ echo x; echo y; } > >(tac)", "y\nx\n", 0),
        ("echo z > >(cat) ; echo after", "z\nafter\n", 0),
        (
            "sort f | tee >(head -1 > first) > /dev/null; cat first",
            "a\n",
            0,
        ),
    ];
    let failures = mismatches(&sb, &id, cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
