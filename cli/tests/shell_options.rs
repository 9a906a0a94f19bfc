//! The option audit of the shell's built-in utilities (issue 24): the registry
//! (tools-wasm/utility/src/registry.rs) says which options burrow implements; GNU's --help of
//! each utility (recorded in fixtures/gnu-options.txt by scripts/gnu-options) says which exist.
//!
//! - every option the registry lists is one GNU documents, with the same kind of argument;
//! - every documented GNU option that burrow does not implement is refused, with the words
//!   and exit status the real tool on this machine gives an unknown option;
//! - every option burrow implements is exercised by a snippet of the differential corpus
//!   (fixtures/shell-corpus.sh, compared with GNU there), or listed in
//!   fixtures/shell-options-uncovered.txt (which must stay exact);
//! - `NAME --help` prints every implemented option and exits 0;
//! - docs/SHELL.md's table of options is the registry's (`BURROW_UPDATE_DOCS=1` rewrites it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use burrow_host::session::{Sandbox, SandboxConfig};

use crate::common;

#[allow(dead_code)]
mod registry {
    include!("../../tools-wasm/utility/src/registry.rs");
}
use registry::{Arg, Digits, Parse, UTILITIES, Utility};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// One documented GNU option: short letter, long name, argument kind.
#[derive(Clone, Debug)]
struct Gnu {
    short: Option<char>,
    long: Option<String>,
    arg: String,
}

fn gnu_options() -> BTreeMap<String, Vec<Gnu>> {
    let text = std::fs::read_to_string(root().join("fixtures/gnu-options.txt")).unwrap();
    let mut out: BTreeMap<String, Vec<Gnu>> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let [name, short, long, arg] = f[..] else {
            panic!("bad line in fixtures/gnu-options.txt: {line}");
        };
        out.entry(name.to_string()).or_default().push(Gnu {
            short: short.strip_prefix('-').and_then(|s| s.chars().next()),
            long: long.strip_prefix("--").map(str::to_string),
            arg: arg.to_string(),
        });
    }
    out
}

fn arg_kind(a: Arg) -> &'static str {
    match a {
        Arg::None => "none",
        Arg::Required => "required",
        Arg::Optional => "optional",
    }
}

/// Whether the machine has the GNU tools the fixture was recorded from.
fn have_gnu() -> bool {
    Command::new("ls")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU coreutils"))
}

#[test]
fn registry_options_are_gnu_options() {
    let gnu = gnu_options();
    let mut wrong = Vec::new();
    for u in UTILITIES {
        let Some(theirs) = gnu.get(u.name) else {
            continue;
        };
        for o in u.opts() {
            if let Some(c) = o.short
                && !theirs.iter().any(|g| g.short == Some(c))
            {
                wrong.push(format!("{}: -{c} is not a GNU option", u.name));
            }
            for l in &o.long {
                match theirs.iter().find(|g| g.long.as_deref() == Some(*l)) {
                    None => wrong.push(format!("{}: --{l} is not a GNU option", u.name)),
                    Some(g) if g.arg != arg_kind(o.arg) && o.short.is_none() => {
                        wrong.push(format!("{}: --{l} takes {} argument in GNU", u.name, g.arg))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A shell-ish split of the corpus into commands: (utility, its option words). Each snippet
/// is read line by line (continuation lines joined) into words and separators; quotes and
/// backslashes are removed, comments and here-document bodies skipped.
fn corpus_commands() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("fixtures/shell-corpus.sh")).unwrap();
    let mut snippets: Vec<Vec<&str>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("### ") {
            snippets.push(Vec::new());
        } else if let Some(s) = snippets.last_mut() {
            s.push(line);
        }
    }
    let heredoc = regex::Regex::new(r#"<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)"#).unwrap();
    // Words (with whether any part was quoted); None separates commands.
    let mut tokens: Vec<Option<(String, bool)>> = Vec::new();
    for snippet in snippets {
        tokens.push(None);
        let mut k = 0;
        while k < snippet.len() {
            let mut line = snippet[k].to_string();
            k += 1;
            while line.ends_with('\\') && k < snippet.len() {
                line.pop();
                line.push(' ');
                line.push_str(snippet[k]);
                k += 1;
            }
            let delims: Vec<String> = heredoc
                .captures_iter(&line)
                .map(|c| c[1].to_string())
                .collect();
            let (mut cur, mut quoted, mut started) = (String::new(), false, false);
            let mut chars = line.chars();
            let flush = |tokens: &mut Vec<Option<(String, bool)>>,
                         cur: &mut String,
                         quoted: &mut bool,
                         started: &mut bool| {
                if *started {
                    tokens.push(Some((std::mem::take(cur), *quoted)));
                }
                (*quoted, *started) = (false, false);
            };
            while let Some(c) = chars.next() {
                match c {
                    '\'' | '"' => {
                        (started, quoted) = (true, true);
                        for q in chars.by_ref() {
                            if q == c {
                                break;
                            }
                            cur.push(q);
                        }
                    }
                    '\\' => {
                        started = true;
                        cur.extend(chars.next());
                    }
                    '#' if !started => break,
                    ' ' | '\t' => flush(&mut tokens, &mut cur, &mut quoted, &mut started),
                    '|' | ';' | '&' | '(' | ')' | '`' | '{' | '}' | '$' | '<' | '>' => {
                        flush(&mut tokens, &mut cur, &mut quoted, &mut started);
                        tokens.push(None);
                    }
                    o => {
                        started = true;
                        cur.push(o);
                    }
                }
            }
            flush(&mut tokens, &mut cur, &mut quoted, &mut started);
            tokens.push(None);
            for d in delims {
                while k < snippet.len() && snippet[k].trim() != d {
                    k += 1;
                }
                k += 1;
            }
        }
    }
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut at_start = true;
    let mut current: Option<usize> = None;
    for t in tokens {
        let Some((word, quoted)) = t else {
            at_start = true;
            current = None;
            continue;
        };
        let is_util = !quoted && registry::find(&word).is_some();
        // A command word: at the start of a command, or the command that a Posix utility
        // (xargs, timeout, env) or find's -exec runs.
        let runs_command = current.is_some_and(|i| {
            let (name, words) = &out[i];
            let posix = registry::find(name).is_some_and(|u| u.parse == Parse::Posix);
            (posix && name != "awk")
                || words
                    .last()
                    .is_some_and(|w| w == "-exec" || w == "-execdir")
        });
        if is_util && (at_start || runs_command) {
            out.push((word, Vec::new()));
            current = Some(out.len() - 1);
            at_start = false;
            continue;
        }
        at_start = false;
        if let Some(i) = current {
            out[i].1.push(word);
        }
    }
    out
}

/// The options (as registry spellings `-x` or `--long`) that these words use.
fn used_options(u: &Utility, words: &[String]) -> BTreeSet<String> {
    let opts = u.opts();
    let mut used = BTreeSet::new();
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
            continue;
        }
        if w == "--" {
            break;
        }
        if !w.starts_with('-') || w == "-" {
            continue;
        }
        if let Some(l) = w.strip_prefix("--") {
            let name = l.split('=').next().unwrap_or(l);
            let hit = opts.iter().find(|o| o.long.contains(&name)).or_else(|| {
                let m: Vec<_> = opts
                    .iter()
                    .filter(|o| o.long.iter().any(|x| x.starts_with(name)))
                    .collect();
                (m.len() == 1).then(|| m[0])
            });
            if let Some(o) = hit {
                used.insert(key(o));
                skip = o.arg == Arg::Required && !l.contains('=');
            }
            continue;
        }
        let body = &w[1..];
        if let Digits::Count(c) = u.digits
            && body.bytes().all(|b| b.is_ascii_digit())
        {
            used.insert(format!("-{c}"));
            continue;
        }
        for (j, c) in body.char_indices() {
            let Some(o) = opts.iter().find(|o| o.short == Some(c)) else {
                break;
            };
            used.insert(key(o));
            if o.arg != Arg::None {
                skip = o.arg == Arg::Required && j + c.len_utf8() == body.len();
                break;
            }
        }
    }
    used
}

/// How an option is named in the coverage list: its short form, else its first long name.
fn key(o: &registry::Opt) -> String {
    match o.short {
        Some(c) => format!("-{c}"),
        None => format!("--{}", o.long[0]),
    }
}

#[test]
fn implemented_options_are_exercised_by_the_corpus() {
    let mut covered: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, words) in corpus_commands() {
        let u = registry::find(&name).unwrap();
        covered
            .entry(name)
            .or_default()
            .extend(used_options(u, &words));
    }
    // Utilities that are one implementation under several names (egrep and grep, zcat and
    // gzip, md5sum and sha256sum) share their coverage.
    let twins = |u: &Utility| -> Vec<&'static str> {
        UTILITIES
            .iter()
            .filter(|t| t.family == u.family && t.options == u.options)
            .map(|t| t.name)
            .collect()
    };
    let mut uncovered = BTreeSet::new();
    for u in UTILITIES {
        for o in u.opts() {
            let k = key(&o);
            if !twins(u)
                .iter()
                .any(|t| covered.get(*t).is_some_and(|c| c.contains(&k)))
            {
                uncovered.insert(format!("{} {k}", u.name));
            }
        }
    }
    // Each line: `NAME OPTION`, then optionally `# why it has no snippet`.
    let path = root().join("fixtures/shell-options-uncovered.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let key_of = |l: &str| l.split('#').next().unwrap_or("").trim().to_string();
    if std::env::var_os("BURROW_RECORD_UNCOVERED").is_some() {
        let reasons: BTreeMap<String, String> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| (key_of(l), l.to_string()))
            .collect();
        let mut out = String::from(
            "# Options burrow implements that no snippet of fixtures/shell-corpus.sh exercises\n# (cli/tests/shell_options.rs; BURROW_RECORD_UNCOVERED=1 rewrites the list, keeping reasons).\n",
        );
        for k in &uncovered {
            out.push_str(reasons.get(k).map_or(k.as_str(), String::as_str));
            out.push('\n');
        }
        std::fs::write(&path, out).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let listed: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(key_of)
        .collect();
    let total: usize = UTILITIES.iter().map(|u| u.opts().len()).sum();
    eprintln!(
        "option coverage: {}/{total} implemented options exercised by the corpus",
        total - uncovered.len()
    );
    let new: Vec<_> = uncovered.difference(&listed).collect();
    let now_covered: Vec<_> = listed.difference(&uncovered).collect();
    assert!(
        new.is_empty() && now_covered.is_empty(),
        "not exercised by the corpus and not listed: {new:?}\nlisted but now exercised (remove them): {now_covered:?}"
    );
}

/// The registry's table for docs/SHELL.md.
fn options_table() -> String {
    let mut t =
        String::from("| utility | options burrow implements (any other is refused) |\n|---|---|\n");
    for u in UTILITIES {
        let opts: Vec<String> = u
            .options
            .split_whitespace()
            .map(|o| format!("`{o}`"))
            .collect();
        let how = match u.parse {
            Parse::Own if opts.is_empty() => "its own command line".to_string(),
            Parse::Own => format!("{} (its own command line)", opts.join(" ")),
            Parse::Program => "a program with its own options".to_string(),
            _ if opts.is_empty() => "none".to_string(),
            _ => opts.join(" "),
        };
        let notes = if u.notes.is_empty() {
            String::new()
        } else {
            format!(" — {}", u.notes)
        };
        t.push_str(&format!("| `{}` | {how}{notes} |\n", u.name));
    }
    t
}

#[test]
fn docs_list_the_registry() {
    let path = root().join("docs/SHELL.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- options:begin -->\n", "<!-- options:end -->");
    let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) else {
        panic!("docs/SHELL.md has no {begin:?} ... {end:?} section");
    };
    let table = options_table();
    let current = &doc[a + begin.len()..b];
    if current != table {
        if std::env::var_os("BURROW_UPDATE_DOCS").is_some() {
            let new = format!("{}{table}{}", &doc[..a + begin.len()], &doc[b..]);
            std::fs::write(&path, new).unwrap();
        } else {
            panic!(
                "docs/SHELL.md's option table is not the registry's: run with BURROW_UPDATE_DOCS=1"
            );
        }
    }
}

fn sandbox(tmp: &Path) -> (Sandbox, String) {
    let sb = Sandbox::open_with(
        tmp.join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .unwrap();
    let dir = tmp.join("empty");
    std::fs::create_dir(&dir).unwrap();
    let s = sb.create_from(None, &dir, &mut |_| {}).unwrap();
    (sb, s.id)
}

/// Runs each command line under burrow's shell: (first line of stderr, status) each.
fn burrow_runs(sb: &Sandbox, id: &str, lines: &[String]) -> Vec<(String, i32)> {
    let mut script = String::new();
    for l in lines {
        script.push_str(&format!(
            "{l} </dev/null 2>/workspace/.err >/dev/null; s=$?; echo \"$s $(head -n 1 /workspace/.err)\"\n"
        ));
    }
    let r = sb.sh(id, &script).unwrap();
    let out = String::from_utf8_lossy(&r.report.stdout).into_owned();
    out.lines()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap_or((l, ""));
            (e.to_string(), s.parse().unwrap_or(-1))
        })
        .collect()
}

fn host_run(line: &str) -> (String, i32) {
    let o = common::reference_bash()
        .arg("-c")
        .arg(format!("{line} </dev/null"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    (
        err.lines().next().unwrap_or("").to_string(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn unimplemented_gnu_options_are_refused_as_gnu_refuses_unknown_ones() {
    if !have_gnu() {
        assert!(
            std::env::var_os("BURROW_REQUIRE_REFERENCE").is_none(),
            "GNU coreutils are required (BURROW_REQUIRE_REFERENCE)"
        );
        println!(
            "SKIPPED: the option audit needs GNU coreutils, grep, sed, findutils, diffutils, tar, gzip, patch and bc"
        );
        return;
    }
    let gnu = gnu_options();
    let tmp = tempfile::tempdir().unwrap();
    let (sb, id) = sandbox(tmp.path());
    // First, each utility's answer to an option nobody has (a long one, and a letter the
    // real tool refuses): the wording and status to match.
    let mut probes = Vec::new();
    let mut lines = Vec::new();
    let mut usage: BTreeMap<&str, i32> = BTreeMap::new();
    for u in UTILITIES.iter().filter(|u| gnu.contains_key(u.name)) {
        let long = "--burrow-no-such-option".to_string();
        let (_, status) = host_run(&format!("{} {long}", u.name));
        usage.insert(u.name, status);
        // A letter GNU does not document may still be one it takes (gzip -a, od -e).
        let letter = ('a'..='z')
            .chain('A'..='Z')
            .filter(|c| !gnu[u.name].iter().any(|g| g.short == Some(*c)))
            .find(|c| {
                host_run(&format!("{} -{c}", u.name))
                    .0
                    .contains("invalid option")
            });
        for opt in std::iter::once(long).chain(letter.map(|c| format!("-{c}"))) {
            lines.push(format!("{} {opt}", u.name));
            probes.push((u.name, opt));
        }
    }
    let got = burrow_runs(&sb, &id, &lines);
    let mut wrong = Vec::new();
    for ((name, opt), (err, status)) in probes.iter().zip(&got) {
        let (want_err, want_status) = host_run(&format!("{name} {opt}"));
        if (err, *status) != (&want_err, want_status) {
            wrong.push(format!(
                "{name} {opt}: GNU says {want_err:?} (status {want_status}), burrow {err:?} (status {status})"
            ));
        }
    }
    // Then every GNU option burrow does not implement.
    let mut cases = Vec::new();
    let mut lines = Vec::new();
    for u in UTILITIES.iter().filter(|u| gnu.contains_key(u.name)) {
        let ours = u.opts();
        let prog = match u.name {
            "egrep" | "fgrep" => "grep",
            "gunzip" | "zcat" => "gzip",
            n => n,
        };
        for g in &gnu[u.name] {
            if matches!(g.long.as_deref(), Some("help" | "version")) {
                continue;
            }
            let short_ok = g
                .short
                .is_some_and(|c| ours.iter().any(|o| o.short == Some(c)));
            let long_ok = g
                .long
                .as_ref()
                .is_some_and(|l| ours.iter().any(|o| o.long.contains(&l.as_str())));
            if let Some(c) = g.short
                && !short_ok
            {
                lines.push(format!("{} -{c}", u.name));
                cases.push((u.name, format!("{prog}: invalid option -- '{c}'")));
            }
            if let Some(l) = &g.long
                && !long_ok
            {
                lines.push(format!("{} --{l}", u.name));
                cases.push((u.name, format!("{prog}: unrecognized option '--{l}'")));
            }
        }
    }
    let got = burrow_runs(&sb, &id, &lines);
    for ((name, want), (line, (err, status))) in cases.iter().zip(lines.iter().zip(&got)) {
        let want_status = usage[name];
        if err != want || *status != want_status {
            wrong.push(format!(
                "{line}: want {want:?} (status {want_status}), burrow {err:?} (status {status})"
            ));
        }
    }
    eprintln!(
        "option audit: {} documented GNU options that burrow does not implement, each refused",
        cases.len()
    );
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn help_lists_every_implemented_option() {
    let tmp = tempfile::tempdir().unwrap();
    let (sb, id) = sandbox(tmp.path());
    let mut wrong = Vec::new();
    let listed: Vec<&Utility> = UTILITIES
        .iter()
        .filter(|u| u.parse != Parse::Program && !matches!(u.name, "which" | "env" | "printenv"))
        .collect();
    let mut script = String::new();
    for u in &listed {
        script.push_str(&format!(
            "{} --help; echo \"status=$?\"; echo '=====';\n",
            u.name
        ));
    }
    let r = sb.sh(&id, &script).unwrap();
    let out = String::from_utf8_lossy(&r.report.stdout).into_owned();
    let parts: Vec<&str> = out.split("=====\n").collect();
    for (u, part) in listed.iter().zip(&parts) {
        if !part.starts_with(&format!("Usage: {} ", u.name)) || !part.contains("status=0") {
            wrong.push(format!("{} --help: {part:?}", u.name));
            continue;
        }
        for o in u.opts() {
            for l in &o.long {
                if !part.contains(&format!("--{l}")) {
                    wrong.push(format!("{} --help does not list --{l}", u.name));
                }
            }
            if let Some(c) = o.short
                && !part.contains(&format!("-{c}"))
            {
                wrong.push(format!("{} --help does not list -{c}", u.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
