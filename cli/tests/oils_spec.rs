//! burrow's shell against an outside suite: the Oils project's spec tests
//! (oils-for-unix/oils, `spec/*.test.sh`, Apache-2.0), vendored under `fixtures/oils-spec/`:
//! every file of the suite that compares bash but the interactive ones (see its README). Each
//! case runs through burrow's shell in a fresh fork of a session and is compared with what the
//! suite expects of bash: stdout, stderr where the case gives it, and the exit status (0
//! unless given). Cases the suite marks as a bug or not implemented in bash (`BUG bash`,
//! `N-I bash`), and files that do not compare bash, are left out. The pass rate per category
//! and overall is printed.
//!
//! `fixtures/oils-spec/known-failures.txt` lists every failing case with why it fails; the test
//! fails on a failure not listed and on a listed case that now passes, so the list stays true.
//! `BURROW_RECORD_OILS_FAILURES=1` rewrites it from a run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use burrow_host::session::{Sandbox, SandboxConfig, Settings};

use crate::common;

fn spec_dir() -> PathBuf {
    common::workspace_root().join("fixtures/oils-spec")
}

/// What a case expects of one shell (or of all, at the case level).
#[derive(Debug, Default, Clone)]
struct Expect {
    qualifier: Option<String>,
    stdout: Option<String>,
    stderr: Option<String>,
    status: Option<i32>,
}

#[derive(Debug)]
struct Case {
    name: String,
    code: String,
    all: Expect,
    bash: Option<Expect>,
}

/// A metadata line: its qualifier and shells (`OK bash/mksh`), key and value.
type KeyValue = (Option<(String, String)>, String, String);

/// A `## [QUALIFIER SHELLS] key: value` line.
fn key_value(line: &str) -> Option<KeyValue> {
    let rest = line.strip_prefix("##")?;
    let rest = rest.strip_prefix(|c: char| c.is_whitespace())?.trim_start();
    let mut words = rest.splitn(3, char::is_whitespace);
    let first = words.next()?;
    let is_qualifier = first == "N-I"
        || first
            .strip_prefix("OK")
            .is_some_and(|r| r.is_empty() || r.starts_with('-'))
        || first
            .strip_prefix("BUG")
            .is_some_and(|r| r.is_empty() || r.starts_with('-'));
    let (qualifier, rest) = if is_qualifier {
        let shells = words.next()?;
        if !shells
            .chars()
            .all(|c| c.is_alphanumeric() || "_+/-".contains(c))
        {
            return None;
        }
        let rest = words.next().unwrap_or("").trim_start();
        (Some((first.to_string(), shells.to_string())), rest)
    } else {
        (None, rest)
    };
    let (key, value) = rest.split_once(':')?;
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    Some((qualifier, key.to_string(), value.trim_start().to_string()))
}

fn set(e: &mut Expect, key: &str, value: String) {
    match key.to_ascii_lowercase().as_str() {
        "stdout" => e.stdout = Some(value),
        "stderr" => e.stderr = Some(value),
        "stdout-json" => e.stdout = serde_json::from_str(&value).ok(),
        "stderr-json" => e.stderr = serde_json::from_str(&value).ok(),
        "status" => e.status = value.trim().parse().ok(),
        _ => {}
    }
}

/// Parses a spec file as the suite's own harness (test/sh_spec.py) does: comment lines are
/// skipped everywhere, blank lines count inside code and STDOUT blocks, `## stdout:` values
/// get their newline.
fn parse(text: &str) -> (BTreeMap<String, String>, Vec<Case>) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut meta = BTreeMap::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut i = 0;
    let is_comment = |l: &str| l.trim_start().starts_with('#') && !l.starts_with("##");
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_end_matches('\n');
        if let Some(name) = trimmed.strip_prefix("####") {
            cases.push(Case {
                name: name.trim().to_string(),
                code: String::new(),
                all: Expect::default(),
                bash: None,
            });
            i += 1;
            continue;
        }
        if let Some((qual, key, value)) = key_value(trimmed) {
            i += 1;
            let value = if key == "STDOUT" || key == "STDERR" {
                // A block up to `## END` (or the next metadata line).
                let mut block = String::new();
                while i < lines.len() {
                    let l = lines[i];
                    let t = l.trim_end_matches('\n');
                    if t.starts_with("##") {
                        if t.trim() == "## END" {
                            i += 1;
                        }
                        break;
                    }
                    if !is_comment(l) {
                        block.push_str(l);
                    }
                    i += 1;
                }
                block
            } else if key == "stdout" || key == "stderr" {
                format!("{value}\n")
            } else {
                value
            };
            let Some(case) = cases.last_mut() else {
                meta.insert(key, value);
                continue;
            };
            match qual {
                None if key == "code" => case.code = value,
                None => set(&mut case.all, &key, value),
                Some((q, shells)) => {
                    if shells
                        .split('/')
                        .any(|s| s == "bash" || s.starts_with("bash-"))
                    {
                        let e = case.bash.get_or_insert_with(Expect::default);
                        e.qualifier = Some(q);
                        set(e, &key, value);
                    }
                }
            }
            continue;
        }
        if let Some(case) = cases.last_mut()
            && !is_comment(line)
            && !(case.code.is_empty() && line.trim().is_empty())
        {
            // Code ends at the first metadata line after it.
            case.code.push_str(line);
        }
        i += 1;
    }
    (meta, cases)
}

/// Helper programs of the suite (spec/bin), as shell scripts: argv.py prints its arguments as
/// Python 2 prints a list of str.
const ARGV_PY: &str = r#"#!/bin/sh
out=
for a in "$@"; do
  q="'"
  case $a in *"'"*) case $a in *'"'*) ;; *) q='"' ;; esac ;; esac
  if printf '%s' "$a" | LC_ALL=C grep -q '[^ -~]'; then
    # Bytes outside printable ASCII: Python 2's repr escapes each one.
    r=
    for h in $(printf '%s' "$a" | od -An -v -tx1); do
      case $h in
        5c) r="$r\\\\" ;;
        0a) r="$r\n" ;;
        09) r="$r\t" ;;
        0d) r="$r\r" ;;
        27) if [ "$q" = "'" ]; then r="$r\'"; else r="$r'"; fi ;;
        2[0-9a-f]|[3-6][0-9a-f]|7[0-9a-e]) r="$r$(printf "\x$h")" ;;
        *) r="$r\x$h" ;;
      esac
    done
    a=$r
  else
    a=${a//\\/\\\\}
    a=${a//$'\n'/\\n}
    a=${a//$'\t'/\\t}
    a=${a//$'\r'/\\r}
    if [ "$q" = "'" ]; then a=${a//\'/\\\'}; fi
  fi
  out="$out${out:+, }$q$a$q"
done
printf '[%s]\n' "$out"
"#;
const PRINTENV_PY: &str = r#"#!/bin/sh
for n in "$@"; do printenv "$n" || echo None; done
"#;
/// read_from_fd.py: for each descriptor named, "N: " and up to 1 KiB read from it.
const READ_FROM_FD_PY: &str = r#"#!/bin/sh
for fd in "$@"; do
  { : <&"$fd"; } 2>/dev/null || { echo "FATAL: Error reading from fd $fd: [Errno 9] Bad file descriptor" >&2; exit 1; }
  printf '%s: ' "$fd"
  head -c 1024 <&"$fd"
done
"#;
const STDOUT_STDERR_PY: &str = r#"#!/bin/sh
echo "${1-STDOUT}"
echo "${2-STDERR}" >&2
exit "${3-0}"
"#;

fn known() -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(spec_dir().join("known-failures.txt")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            Some((
                (parts.next()?.to_string(), parts.next()?.to_string()),
                parts.next().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

#[test]
fn oils_spec_suite_bash_cases() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sb = Sandbox::open_with(
        tmp.path().join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .expect("sandbox");
    // The harness's environment: PATH with the helpers, TMP (here the working directory,
    // which starts empty), SH, REPO_ROOT.
    let mut settings = Settings {
        timeout_ms: Some(5_000),
        ..Default::default()
    };
    for (k, v) in [
        ("PATH", "/tmp/oils/spec/bin:/usr/local/bin:/usr/bin:/bin"),
        ("TMP", "/workspace"),
        ("SH", "bash"),
        ("REPO_ROOT", "/tmp/oils"),
        ("LC_ALL", "C.UTF-8"),
    ] {
        settings.env.insert(k.into(), v.into());
    }
    let base = sb.create_with(None, &settings).expect("base session").id;
    {
        let store = sb.store();
        let mut txn = store.begin(&base).expect("txn");
        let bin = format!("{}/tmp/oils/spec/bin", burrow_store::SYSTEM_DIR);
        txn.mkdir_all(&bin).expect("mkdir");
        for (name, body) in [
            ("argv.py", ARGV_PY),
            ("printenv.py", PRINTENV_PY),
            ("stdout_stderr.py", STDOUT_STDERR_PY),
            ("read_from_fd.py", READ_FROM_FD_PY),
        ] {
            let ino = txn
                .write_file(&format!("{bin}/{name}"), body.as_bytes())
                .expect("write");
            txn.set_mode(ino, 0o755).expect("chmod");
        }
        txn.commit().expect("commit");
    }
    // Files with `legacy_tmp_dir` expect a `_tmp` directory in the working directory.
    let legacy = sb.fork(&base, 1).expect("fork").remove(0);
    {
        let mut txn = sb.store().begin(&legacy).expect("txn");
        txn.mkdir_all("_tmp").expect("mkdir _tmp");
        txn.commit().expect("commit");
    }

    let mut files: Vec<PathBuf> = std::fs::read_dir(spec_dir())
        .expect("fixtures/oils-spec")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.sh"))
        .collect();
    files.sort();
    let only = std::env::var("BURROW_OILS_ONLY").ok();
    let known = known();
    let mut failing: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut per_category: Vec<(String, usize, usize)> = Vec::new();
    let (mut total, mut passed, mut needs_python2) = (0, 0, 0);
    for file in &files {
        let category = file
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".test.sh"))
            .unwrap_or_default()
            .to_string();
        if only.as_ref().is_some_and(|o| o != &category) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("spec file");
        let (meta, cases) = parse(&text);
        if meta
            .get("compare_shells")
            .is_some_and(|s| !s.split_whitespace().any(|s| s.starts_with("bash")))
        {
            continue;
        }
        let origin = if meta.contains_key("legacy_tmp_dir") {
            &legacy
        } else {
            &base
        };
        let (mut n, mut ok) = (0, 0);
        for case in cases {
            // The suite's Python 2 one-liners are outside what a shell provides.
            if case.code.contains("python2") {
                needs_python2 += 1;
                continue;
            }
            let bash = case.bash.clone().unwrap_or_default();
            if matches!(bash.qualifier.as_deref(), Some(q) if q.starts_with("BUG") || q == "N-I") {
                continue;
            }
            let want_stdout = bash.stdout.or(case.all.stdout.clone());
            let want_stderr = bash.stderr.or(case.all.stderr.clone());
            let want_status = bash.status.or(case.all.status).unwrap_or(0);
            n += 1;
            let fork = sb.fork(origin, 1).expect("fork").remove(0);
            // As the suite's harness does: the code on the stdin of `$SH` (a whole shell, so
            // its EXIT trap runs at the end).
            let why = match sb.sh_with(&fork, "bash", case.code.as_bytes(), "oils-spec") {
                Ok(r) => {
                    let out = String::from_utf8_lossy(&r.report.stdout).into_owned();
                    let err = String::from_utf8_lossy(&r.report.stderr).into_owned();
                    let mut why = Vec::new();
                    if want_stdout.as_ref().is_some_and(|w| *w != out) {
                        why.push(format!(
                            "stdout {:?}, bash {:?}",
                            cut(&out),
                            cut(want_stdout.as_deref().unwrap_or(""))
                        ));
                    }
                    if want_stderr.as_ref().is_some_and(|w| *w != err) {
                        why.push("stderr differs".to_string());
                    }
                    if r.report.exit_code != want_status {
                        why.push(format!("status {}, bash {want_status}", r.report.exit_code));
                    }
                    why.join("; ")
                }
                Err(e) => format!("error: {}", cut(&e.to_string())),
            };
            let _ = sb.delete(&fork);
            if why.is_empty() {
                ok += 1;
            } else {
                failing.insert((category.clone(), case.name.clone()), why);
            }
        }
        total += n;
        passed += ok;
        per_category.push((category, ok, n));
    }

    println!("Oils spec tests, bash cases, through burrow's shell:");
    for (cat, ok, n) in &per_category {
        println!(
            "  {cat:<18} {ok:>4}/{n:<4} {:5.1}%",
            100.0 * *ok as f64 / (*n).max(1) as f64
        );
    }
    println!(
        "  {:<18} {passed:>4}/{total:<4} {:5.1}%",
        "overall",
        100.0 * passed as f64 / total.max(1) as f64
    );
    println!("  (left out: {needs_python2} cases that run python2)");

    if std::env::var("BURROW_RECORD_OILS_FAILURES").as_deref() == Ok("1") {
        let mut out = String::from(
            "# Oils spec cases burrow's shell fails (category<TAB>case<TAB>what differs), written by\n\
             # BURROW_RECORD_OILS_FAILURES=1 cargo test -p burrow-cli --test all oils_spec::.\n",
        );
        for ((cat, name), why) in &failing {
            out.push_str(&format!("{cat}\t{name}\t{why}\n"));
        }
        std::fs::write(spec_dir().join("known-failures.txt"), out).expect("write list");
        return;
    }
    if only.is_some() {
        for ((cat, name), why) in &failing {
            println!("FAIL {cat}: {name}: {why}");
        }
        return;
    }
    let failing_keys: BTreeSet<_> = failing.keys().cloned().collect();
    let listed: BTreeSet<_> = known.keys().cloned().collect();
    let new: Vec<String> = failing
        .iter()
        .filter(|(k, _)| !listed.contains(*k))
        .map(|((c, n), why)| format!("{c}: {n}: {why}"))
        .collect();
    let fixed: Vec<String> = listed
        .difference(&failing_keys)
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "new failures (fix them or list them in fixtures/oils-spec/known-failures.txt):\n{}\n\
         listed but now passing (remove them from the list):\n{}",
        new.join("\n"),
        fixed.join("\n")
    );
}

/// A value cut short for a one-line reason.
fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}
