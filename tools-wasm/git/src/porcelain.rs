//! The read-only porcelain: `status` (long, `-s`, `--porcelain`, `-b`), `rev-parse`, `branch` (list, `-a`, `-r`), `remote` (`-v`)
//! and `config` (get, set, unset, list), with git's output for each (`ls-files` is
//! [`super::ls_files`]); and the helpers the other commands share (commits, dates, paths,
//! the index, ignore rules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::object::{self, Commit, Kind, Oid, hex, parse_commit, parse_hex};
use super::repo::{IndexEntry, Repo};
pub(super) use super::repo::{load_all, upstream_of};
use super::{Args, usage_error};
use sh_utility::Ctx;
use sh_utility::io::Io;
use sh_utility::sys::TreeStat;

pub fn run(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    if cmd == "config" {
        return config(sh, Repo::discover(&cwd).as_ref(), args, io);
    }
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let r = match cmd {
        "status" => status(&repo, &cwd, args, io),
        "log" => super::log::log(&repo, &cwd, args, io),
        "rev-parse" => rev_parse(&repo, &cwd, args, io),
        "branch" => branch(&repo, args, io),
        "remote" => remote(&repo, args, io),
        _ => return config(sh, Some(&repo), args, io),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// A path as git prints it: in double quotes with C escapes when it has control characters,
/// quotes, backslashes or bytes above ASCII (core.quotePath).
pub(super) fn quote(path: &[u8]) -> String {
    if !path
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f)
    {
        return String::from_utf8_lossy(path).into_owned();
    }
    let mut s = String::from("\"");
    for &b in path {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s.push('"');
    s
}

/// `path` (from the top of the work tree) relative to `cwd` (also from the top).
pub(super) fn relative(path: &[u8], cwd: &[u8]) -> Vec<u8> {
    if cwd.is_empty() {
        return path.to_vec();
    }
    let p: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let c: Vec<&[u8]> = cwd.split(|&b| b == b'/').collect();
    let common = p.iter().zip(&c).take_while(|(a, b)| a == b).count();
    let mut out = Vec::new();
    for _ in common..c.len() {
        out.extend_from_slice(b"../");
    }
    let rest = p[common..].join(&b'/');
    out.extend_from_slice(&rest);
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// The working directory from the top of the work tree (`src/lib`), empty at the top.
pub(super) fn prefix(repo: &Repo, cwd: &Path) -> Vec<u8> {
    repo.work
        .as_ref()
        .and_then(|w| cwd.strip_prefix(w).ok())
        .map(|p| p.to_string_lossy().as_bytes().to_vec())
        .unwrap_or_default()
}

pub(super) fn abbrev(oid: &Oid) -> String {
    hex(oid)[..7].to_string()
}

pub use super::rev::resolve;

/// The commit a revision names (a tag peeled to it), or None.
pub(super) fn resolve_commit(repo: &Repo, rev: &str) -> Option<Oid> {
    repo.peel_commit(&resolve(repo, rev)?).ok()
}

pub(super) fn read_commit(repo: &Repo, id: &Oid) -> Result<Commit, String> {
    parse_commit(&repo.read_kind(id, Kind::Commit)?)
}

/// The shallow boundary: commits whose parents are not in the repository.
pub(super) fn shallow(repo: &Repo) -> HashSet<Oid> {
    std::fs::read_to_string(repo.git_dir.join("shallow"))
        .map(|t| t.lines().filter_map(parse_hex).collect())
        .unwrap_or_default()
}

/// The seconds and zone of an ident line's end (`Name <e> 1700000000 +0100`).
pub(super) fn ident_time(ident: &str) -> (i64, String) {
    let mut parts = ident.rsplitn(3, ' ');
    let zone = parts.next().unwrap_or("+0000").to_string();
    let secs = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (secs, zone)
}

pub(super) fn ident_name_email(ident: &str) -> (String, String) {
    let (name, rest) = ident.split_once(" <").unwrap_or((ident, ""));
    let email = rest.split_once('>').map(|(e, _)| e).unwrap_or("");
    (name.to_string(), email.to_string())
}

pub(super) use super::date::{git_date, iso_date};

/// A commit message's subject: its first paragraph, the lines joined by spaces.
pub(super) fn subject(message: &str) -> String {
    message
        .split("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A commit as `git log` and `git show` print it by default (the medium format), with the
/// author date as `--date=` shows it.
pub(super) fn format_show_header_dated(id: &Oid, c: &Commit, date: &str) -> String {
    let (name, email) = ident_name_email(&c.author);
    let mut out = format!("commit {}\n", hex(id));
    if c.parents.len() > 1 {
        let p: Vec<String> = c.parents.iter().map(abbrev).collect();
        out.push_str(&format!("Merge: {}\n", p.join(" ")));
    }
    out.push_str(&format!("Author: {name} <{email}>\nDate:   {date}\n\n"));
    // Every line indented, blank ones too, as git does.
    for line in c.message.trim_end_matches('\n').lines() {
        out.push_str(&format!("    {line}\n"));
    }
    out
}

/// How `rev-parse` shows the revisions it reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RevShow {
    Id,
    /// `--abbrev-ref`: the ref's short name.
    AbbrevRef,
    /// `--symbolic-full-name`: the ref's full name.
    FullName,
    /// `--symbolic`: the name as given.
    AsGiven,
}

/// Options of git's `rev-parse` that burrow's does not implement (git passes other words
/// that start with `-` through, as flags for the command they are meant for).
const REV_PARSE_NOT_HERE: &[&str] = &[
    "--parseopt",
    "--sq-quote",
    "--keep-dashdash",
    "--stop-at-non-option",
    "--stuck-long",
    "--revs-only",
    "--no-revs",
    "--flags",
    "--no-flags",
    "--default",
    "--prefix",
    "--sq",
    "--not",
    "--all",
    "--branches",
    "--tags",
    "--remotes",
    "--glob",
    "--exclude",
    "--exclude-hidden",
    "--disambiguate",
    "--local-env-vars",
    "--path-format",
    "--git-path",
    "--resolve-git-dir",
    "--shared-index-path",
    "--show-superproject-working-tree",
    "--show-object-format",
    "--show-ref-format",
    "--since",
    "--after",
    "--until",
    "--before",
    "--bisect",
    "--end-of-options",
];

/// `git rev-parse`, as git's reads its arguments: options, revisions (`A..B` and `^A`
/// too), and once something is not a revision, file names (which must exist). `--verify`
/// (and `--short`, which implies it) wants exactly one revision.
fn rev_parse(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let pre = prefix(repo, cwd);
    let has_dashdash = args.iter().any(|a| a == "--");
    let mut verify = false;
    let mut quiet = false;
    let mut short: Option<usize> = None;
    let mut shown = RevShow::Id;
    // 1 after a name that is not a revision (the rest are files that must exist), 2 after
    // `--` (the rest are printed as they are).
    let mut as_is = 0;
    let mut verified: Vec<(bool, Oid, String)> = Vec::new();
    let mut out = String::new();
    // Everything printed so far goes out before git's complaint.
    let fail = |out: &str, msg: &str| {
        io.print(out);
        io.eprint(&format!("{msg}\n"));
        Ok(128)
    };
    for a in args {
        if as_is > 0 {
            out.push_str(&format!("{a}\n"));
            if as_is == 1 && cwd.join(a).symlink_metadata().is_err() {
                return fail(
                    &out,
                    &format!(
                        "fatal: {a}: no such path in the working tree.\n\
                         Use 'git <command> -- <path>...' to specify paths that do not exist locally."
                    ),
                );
            }
            continue;
        }
        let opt = a.split_once('=').map_or(a.as_str(), |(o, _)| o);
        match opt {
            "--" => {
                as_is = 2;
                out.push_str("--\n");
                continue;
            }
            "--verify" => verify = true,
            "-q" | "--quiet" => quiet = true,
            "--short" => {
                verify = true;
                let n = match a.split_once('=') {
                    Some((_, v)) => v
                        .parse::<usize>()
                        .map_err(|_| format!("fatal: '{v}': not an integer"))?,
                    None => 7,
                };
                short = Some(n.clamp(4, 40));
            }
            "--abbrev-ref" => shown = RevShow::AbbrevRef,
            "--symbolic-full-name" => shown = RevShow::FullName,
            "--symbolic" => shown = RevShow::AsGiven,
            "--show-toplevel" => match &repo.work {
                Some(w) => out.push_str(&format!("{}\n", w.display())),
                None => {
                    return fail(&out, "fatal: this operation must be run in a work tree");
                }
            },
            "--git-dir" | "--git-common-dir" => {
                let g = repo.git_dir.as_path();
                let shown = match g.strip_prefix(cwd) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => g.to_path_buf(),
                };
                out.push_str(&format!("{}\n", shown.display()));
            }
            "--absolute-git-dir" => out.push_str(&format!("{}\n", repo.git_dir.display())),
            "--is-inside-work-tree" => out.push_str(if repo.work.is_some() {
                "true\n"
            } else {
                "false\n"
            }),
            "--is-inside-git-dir" => out.push_str(if repo.work.is_some() {
                "false\n"
            } else {
                "true\n"
            }),
            "--is-bare-repository" => out.push_str(if repo.work.is_some() {
                "false\n"
            } else {
                "true\n"
            }),
            "--is-shallow-repository" => out.push_str(if repo.git_dir.join("shallow").is_file() {
                "true\n"
            } else {
                "false\n"
            }),
            "--show-prefix" => {
                if !pre.is_empty() {
                    out.push_str(&format!("{}/", String::from_utf8_lossy(&pre)));
                }
                out.push('\n');
            }
            "--show-cdup" => {
                if !pre.is_empty() {
                    let depth = pre.split(|&b| b == b'/').count();
                    out.push_str(&"../".repeat(depth));
                }
                out.push('\n');
            }
            s if REV_PARSE_NOT_HERE.contains(&s) => {
                return Err(format!(
                    "fatal: rev-parse option '{s}' is not supported in burrow"
                ));
            }
            // An unknown flag is passed through (not once --verify or --short is given).
            s if s.starts_with('-') && s.len() > 1 => {
                if !verify {
                    out.push_str(&format!("{a}\n"));
                }
            }
            _ => {
                if let Some(shown_range) = range(repo, a, &pre, shown, short) {
                    out.push_str(&shown_range);
                    continue;
                }
                let (reversed, name) = match a.strip_prefix('^') {
                    Some(n) => (true, n),
                    None => (false, a.as_str()),
                };
                match super::rev::lookup(repo, name, &pre) {
                    Ok(id) if verify => verified.push((reversed, id, name.to_string())),
                    Ok(id) => show_rev(repo, &mut out, shown, short, reversed, &id, Some(name)),
                    Err(e) => {
                        let errors: String = e.errors.iter().map(|l| format!("{l}\n")).collect();
                        io.eprint(&errors);
                        if let Some(f) = e.dies {
                            return fail(&out, &f);
                        }
                        if verify {
                            return no_single_rev(io, &out, quiet);
                        }
                        if has_dashdash {
                            return fail(&out, &format!("fatal: bad revision '{a}'"));
                        }
                        // Not a revision: a file name, which must exist; else git tries the
                        // name again to say what is wrong with it.
                        as_is = 1;
                        out.push_str(&format!("{a}\n"));
                        if cwd.join(a).symlink_metadata().is_err() {
                            io.eprint(&errors);
                            let msg = e.fatal.unwrap_or_else(|| super::diff::ambiguous(a));
                            return fail(&out, &msg);
                        }
                    }
                }
            }
        }
    }
    if verify {
        match verified.as_slice() {
            [(reversed, id, name)] => {
                show_rev(repo, &mut out, shown, short, *reversed, id, Some(name))
            }
            _ => return no_single_rev(io, &out, quiet),
        }
    }
    io.print(&out);
    Ok(0)
}

/// git's `die_no_single_rev`: status 1 and no message with `-q`.
fn no_single_rev(io: &Io, out: &str, quiet: bool) -> Result<i32, String> {
    io.print(out);
    if quiet {
        return Ok(1);
    }
    io.eprint("fatal: Needed a single revision\n");
    Ok(128)
}

/// `A..B` (B, then A excluded) and `A...B` (B, A, then their merge base excluded), as
/// `rev-parse` prints them; None when `a` is not a range of commits.
fn range(repo: &Repo, a: &str, pre: &[u8], shown: RevShow, short: Option<usize>) -> Option<String> {
    let i = a.find("..")?;
    let symmetric = a[i + 2..].starts_with('.');
    let (x, y) = (&a[..i], &a[i + 2 + usize::from(symmetric)..]);
    // `..` alone is the parent directory.
    if x.is_empty() && y.is_empty() && !symmetric {
        return None;
    }
    let (x, y) = (
        if x.is_empty() { "HEAD" } else { x },
        if y.is_empty() { "HEAD" } else { y },
    );
    let start = super::rev::lookup(repo, x, pre).ok()?;
    let end = super::rev::lookup(repo, y, pre).ok()?;
    let (sc, ec) = (repo.peel_commit(&start).ok()?, repo.peel_commit(&end).ok()?);
    let mut out = String::new();
    show_rev(repo, &mut out, shown, short, false, &end, Some(y));
    show_rev(repo, &mut out, shown, short, !symmetric, &start, Some(x));
    if symmetric && let Ok(Some(base)) = super::merge::merge_base(repo, sc, ec) {
        show_rev(repo, &mut out, shown, short, true, &base, None);
    }
    Some(out)
}

/// One revision as `rev-parse` prints it: its id (abbreviated with `--short`, after `^` when
/// excluded), or for a name with `--abbrev-ref` / `--symbolic-full-name` the ref it names
/// (nothing when it names none), with `--symbolic` the name itself.
fn show_rev(
    repo: &Repo,
    out: &mut String,
    shown: RevShow,
    short: Option<usize>,
    reversed: bool,
    id: &Oid,
    name: Option<&str>,
) {
    let mark = if reversed { "^" } else { "" };
    let name = match name {
        Some(n) if shown != RevShow::Id => n,
        _ => {
            let h = hex(id);
            let h = short.map_or(h.as_str(), |n| &h[..n]);
            out.push_str(&format!("{mark}{h}\n"));
            return;
        }
    };
    if shown == RevShow::AsGiven {
        out.push_str(&format!("{mark}{name}\n"));
        return;
    }
    let full = if name == "HEAD" || name == "@" {
        Some(repo.head().0.unwrap_or_else(|| "HEAD".into()))
    } else if let Some(at) = name.find("@{") {
        let branch = match &name[..at] {
            "" | "HEAD" | "@" => repo
                .head()
                .0
                .map(|b| b.trim_start_matches("refs/heads/").to_string()),
            b => Some(b.to_string()),
        };
        let spec = name[at + 2..].trim_end_matches('}').to_ascii_lowercase();
        match (branch, spec.as_str()) {
            (Some(b), "u" | "upstream") => {
                upstream_of(repo, &b).map(|u| format!("refs/remotes/{u}"))
            }
            _ => None,
        }
    } else {
        // A symbolic ref is shown as the ref it leads to.
        super::rev::full_ref(repo, name).map(|mut n| {
            for _ in 0..8 {
                match repo.read_ref(&n) {
                    Some(super::repo::RefValue::Symbolic(t)) => n = t,
                    _ => break,
                }
            }
            n
        })
    };
    let Some(full) = full else {
        return;
    };
    let text = match shown {
        RevShow::AbbrevRef => ["refs/heads/", "refs/tags/", "refs/remotes/", "refs/"]
            .iter()
            .find_map(|p| full.strip_prefix(p))
            .unwrap_or(&full)
            .to_string(),
        _ => full,
    };
    out.push_str(&format!("{mark}{text}\n"));
}

/// What a detached HEAD was checked out from, as git finds it: the last `checkout: moving
/// from A to B` in HEAD's reflog names B, and HEAD is "at" it while it still names the commit
/// then checked out. None without such an entry (a clone of a tag writes none here).
fn detached_from(repo: &Repo, head: &Oid) -> Option<(bool, String)> {
    let log = std::fs::read_to_string(repo.git_dir.join("logs/HEAD")).ok()?;
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("\tcheckout: moving from "))?;
    let new = parse_hex(line.split(' ').nth(1)?)?;
    let target = line.rsplit_once(" to ")?.1;
    // The name is shown when it is a ref still at the commit checked out (tags and
    // remote-tracking branches shortened), else that commit's abbreviated id.
    let candidates = [
        target.to_string(),
        format!("refs/{target}"),
        format!("refs/tags/{target}"),
        format!("refs/heads/{target}"),
        format!("refs/remotes/{target}"),
        format!("refs/remotes/{target}/HEAD"),
    ];
    let found = candidates
        .iter()
        .filter(|n| n.starts_with("refs/") || repo.git_dir.join(n).is_file())
        .find_map(|n| Some((n.clone(), repo.resolve_ref(n)?)));
    let name = match found {
        Some((full, id)) if id == new || repo.peel_commit(&id).is_ok_and(|c| c == new) => full
            .strip_prefix("refs/tags/")
            .or_else(|| full.strip_prefix("refs/remotes/"))
            .unwrap_or(&full)
            .to_string(),
        _ => abbrev(&new),
    };
    Some((new == *head, name))
}

fn branch(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let mut all = false;
    let mut remotes = false;
    let mut show_current = false;
    let mut delete = None;
    let mut names = Vec::new();
    for a in args {
        match a.as_str() {
            "-a" | "--all" => all = true,
            "-r" | "--remotes" => remotes = true,
            "--show-current" => show_current = true,
            "-l" | "--list" => {}
            "-d" | "--delete" => delete = Some(false),
            "-D" => delete = Some(true),
            s if s.starts_with('-') => {
                return Err(format!(
                    "fatal: 'git branch {s}' is not supported in burrow"
                ));
            }
            _ => names.push(a.clone()),
        }
    }
    if let Some(force) = delete {
        if names.is_empty() {
            return Err("fatal: branch name required".into());
        }
        return Ok(super::write::delete_branches(repo, &names, force, io));
    }
    match names.as_slice() {
        [] => {}
        [name] => return super::write::create_branch(repo, name, None).map(|_| 0),
        [name, start] => {
            return super::write::create_branch(repo, name, Some(start)).map(|_| 0);
        }
        _ => return Err("fatal: too many arguments for a create operation".into()),
    }
    let (head_ref, head_id) = repo.head();
    if show_current {
        if let Some(b) = &head_ref {
            io.print(&format!("{}\n", b.trim_start_matches("refs/heads/")));
        }
        return Ok(0);
    }
    let mut out = String::new();
    if !remotes {
        if head_ref.is_none()
            && let Some(id) = head_id
        {
            match detached_from(repo, &id) {
                Some((true, name)) => out.push_str(&format!("* (HEAD detached at {name})\n")),
                Some((false, name)) => out.push_str(&format!("* (HEAD detached from {name})\n")),
                None => out.push_str("* (no branch)\n"),
            }
        }
        for (name, _) in repo.refs_under("refs/heads/") {
            let mark = if head_ref.as_deref() == Some(name.as_str()) {
                "* "
            } else {
                "  "
            };
            out.push_str(&format!(
                "{mark}{}\n",
                name.trim_start_matches("refs/heads/")
            ));
        }
    }
    if all || remotes {
        let shown = |n: &str| -> String {
            if all {
                n.trim_start_matches("refs/").to_string()
            } else {
                n.trim_start_matches("refs/remotes/").to_string()
            }
        };
        let mut names: Vec<String> = repo
            .refs_under("refs/remotes/")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        // A symbolic remote HEAD is listed with its target.
        names.sort();
        for n in names {
            match repo.read_ref(&n) {
                Some(super::repo::RefValue::Symbolic(t)) => out.push_str(&format!(
                    "  {} -> {}\n",
                    shown(&n),
                    t.trim_start_matches("refs/remotes/")
                )),
                _ => out.push_str(&format!("  {}\n", shown(&n))),
            }
        }
    }
    io.print(&out);
    Ok(0)
}

fn remotes_of(repo: &Repo) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo.git_dir.join("config")).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(name) = l
            .strip_prefix("[remote \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            let url = repo
                .config(&format!("remote.{name}.url"))
                .unwrap_or_default();
            out.push((name.to_string(), url));
        }
    }
    out
}

fn remote(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let verbose = match args.first().map(String::as_str) {
        None => false,
        Some("-v" | "--verbose") if args.len() == 1 => true,
        Some("get-url") if args.len() == 2 => {
            return match remotes_of(repo).into_iter().find(|(n, _)| *n == args[1]) {
                Some((_, url)) => {
                    io.print(&format!("{url}\n"));
                    Ok(0)
                }
                None => {
                    io.eprint(&format!("error: No such remote '{}'\n", args[1]));
                    Ok(2)
                }
            };
        }
        Some(other) => {
            return Err(format!(
                "fatal: 'git remote {other}' is not supported in burrow (burrow's git lists remotes only)"
            ));
        }
    };
    let mut out = String::new();
    for (name, url) in remotes_of(repo) {
        if verbose {
            out.push_str(&format!("{name}\t{url} (fetch)\n{name}\t{url} (push)\n"));
        } else {
            out.push_str(&format!("{name}\n"));
        }
    }
    io.print(&out);
    Ok(0)
}

/// The index's merged (stage 0) entries.
pub(super) fn load_index(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    Ok(load_all(repo)?
        .into_iter()
        .filter(|e| e.stage == 0)
        .collect())
}

/// The index's unmerged entries (stages 1-3), a merge's conflicts.
pub(super) fn load_conflicts(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    Ok(load_all(repo)?
        .into_iter()
        .filter(|e| e.stage != 0)
        .collect())
}

/// `git config`: get (`KEY`, `--get KEY`), set (`KEY VALUE`), `--unset KEY` and
/// `--list`, in the repository's `.git/config` or with `--global` in `$HOME/.gitconfig`.
fn config(sh: &dyn Ctx, repo: Option<&Repo>, args: &[String], io: &Io) -> i32 {
    let mut global = false;
    let mut unset = false;
    let mut list = false;
    let mut rest: Vec<&String> = Vec::new();
    for a in args {
        match a.as_str() {
            "--global" => global = true,
            "--local" => global = false,
            "--get" => {}
            "--unset" => unset = true,
            "-l" | "--list" => list = true,
            s if s.starts_with('-') => {
                io.eprint(&format!("git: 'config {s}' is not supported in burrow\n"));
                return 1;
            }
            _ => rest.push(a),
        }
    }
    let home = sh.get("HOME").unwrap_or("/home/agent").to_string();
    let global_path = Path::new(&home).join(".gitconfig");
    let global_text = std::fs::read_to_string(&global_path).unwrap_or_default();
    let local_path = repo.map(|r| r.git_dir.join("config"));
    let local_text = local_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    if list {
        let mut out = String::new();
        for t in if global {
            vec![&global_text]
        } else {
            vec![&global_text, &local_text]
        } {
            for (k, v) in super::repo::config_entries(t) {
                out.push_str(&format!("{k}={v}\n"));
            }
        }
        io.print(&out);
        return 0;
    }
    let Some(key) = rest.first() else {
        io.eprint("error: no action specified\n");
        return 129;
    };
    if !key.contains('.') || key.starts_with('.') || key.ends_with('.') {
        io.eprint(&format!("error: key does not contain a section: {key}\n"));
        return 2;
    }
    let target = if global {
        Some(global_path.clone())
    } else {
        local_path.clone()
    };
    if unset || rest.len() == 2 {
        let Some(target) = target else {
            io.eprint("fatal: not in a git directory\n");
            return 128;
        };
        let text = if global { &global_text } else { &local_text };
        let new = if unset {
            match super::repo::config_unset(text, key) {
                Some(t) => t,
                None => return 5,
            }
        } else {
            super::repo::config_set(text, key, rest[1])
        };
        if let Err(e) = std::fs::write(&target, new) {
            io.eprint(&format!(
                "error: could not write config file {}: {e}\n",
                target.display()
            ));
            return 4;
        }
        return 0;
    }
    if rest.len() > 2 {
        io.eprint("error: wrong number of arguments, should be from 1 to 2\n");
        return 129;
    }
    let value = if global {
        super::repo::config_get(&global_text, key)
    } else {
        super::repo::config_get(&local_text, key)
            .or_else(|| super::repo::config_get(&global_text, key))
    };
    match value {
        Some(v) => {
            io.print(&format!("{v}\n"));
            0
        }
        None => 1,
    }
}

/// A tree's files as path -> (mode, id), recursively.
pub(super) fn tree_files(repo: &Repo, tree: Oid) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>, String> {
    let mut out = BTreeMap::new();
    fn walk(
        repo: &Repo,
        t: &Oid,
        pre: &[u8],
        out: &mut BTreeMap<Vec<u8>, (u32, Oid)>,
    ) -> Result<(), String> {
        for e in super::object::parse_tree(&repo.read_kind(t, Kind::Tree)?)? {
            let mut p = pre.to_vec();
            p.extend_from_slice(&e.name);
            if e.is_tree() {
                p.push(b'/');
                walk(repo, &e.oid, &p, out)?;
            } else {
                out.insert(p, (e.mode, e.oid));
            }
        }
        Ok(())
    }
    walk(repo, &tree, b"", &mut out)?;
    Ok(out)
}

// ----- status -----

/// HEAD's tree as path -> (mode, id).
pub(super) fn head_files(
    repo: &Repo,
    head: Option<Oid>,
) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>, String> {
    match head {
        Some(id) => tree_files(repo, read_commit(repo, &id)?.tree),
        None => Ok(BTreeMap::new()),
    }
}

/// Paths with their staged change (`A`, `M`, `D`, `R`).
type Staged = BTreeMap<Vec<u8>, char>;

/// What the index stages against HEAD's tree: path -> `A`, `M` or `D` (by id, as status
/// compares), and for each `D` the id HEAD has. Each directory's tree id is computed from the
/// index as `git write-tree` would make it; a directory whose id is HEAD's is skipped without
/// reading HEAD's trees under it (git's cache-tree spares it the same work), so a clean index
/// reads no tree at all.
fn staged_changes(
    repo: &Repo,
    head_tree: Option<Oid>,
    index: &[IndexEntry],
) -> Result<(Staged, BTreeMap<Vec<u8>, Oid>), String> {
    let entries: Vec<&IndexEntry> = index.iter().collect();
    let mut ids: HashMap<Vec<u8>, Oid> = HashMap::new();
    super::write::build_trees(&entries, 0, &mut |dir, data| {
        let id = super::object::hash(Kind::Tree, data);
        ids.insert(dir.to_vec(), id);
        Ok(id)
    })?;
    let mut staged = BTreeMap::new();
    let mut gone = BTreeMap::new();
    compare_level(repo, &entries, 0, head_tree, &ids, &mut staged, &mut gone)?;
    for p in gone.keys() {
        staged.insert(p.clone(), 'D');
    }
    Ok((staged, gone))
}

/// One directory of [`staged_changes`]: `entries` are the index entries under it (all sharing
/// its `prefix_len` bytes), `head` its tree in HEAD, if HEAD has one there.
fn compare_level(
    repo: &Repo,
    entries: &[&IndexEntry],
    prefix_len: usize,
    head: Option<Oid>,
    ids: &HashMap<Vec<u8>, Oid>,
    staged: &mut BTreeMap<Vec<u8>, char>,
    gone: &mut BTreeMap<Vec<u8>, Oid>,
) -> Result<(), String> {
    let dir: &[u8] = entries.first().map_or(&[][..], |e| &e.path[..prefix_len]);
    if let Some(h) = head
        && !entries.is_empty()
        && ids.get(dir) == Some(&h)
    {
        return Ok(());
    }
    let head_entries = match head {
        Some(h) => super::object::parse_tree(&repo.read_kind(&h, Kind::Tree)?)?,
        None => Vec::new(),
    };
    let in_head: HashMap<&[u8], &super::object::TreeEntry> = head_entries
        .iter()
        .map(|e| (e.name.as_slice(), e))
        .collect();
    let mut files: HashSet<&[u8]> = HashSet::new();
    let mut dirs: HashSet<&[u8]> = HashSet::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = &entries[i].path[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                files.insert(rest);
                match in_head.get(rest) {
                    Some(h) if !h.is_tree() => {
                        if h.oid != entries[i].oid {
                            staged.insert(entries[i].path.clone(), 'M');
                        }
                    }
                    _ => {
                        staged.insert(entries[i].path.clone(), 'A');
                    }
                }
                i += 1;
            }
            Some(slash) => {
                let name = &rest[..slash];
                let mut j = i;
                while j < entries.len() {
                    let r = &entries[j].path[prefix_len..];
                    if r.len() > slash && &r[..slash] == name && r[slash] == b'/' {
                        j += 1;
                    } else {
                        break;
                    }
                }
                dirs.insert(name);
                let sub = in_head.get(name).filter(|h| h.is_tree()).map(|h| h.oid);
                compare_level(
                    repo,
                    &entries[i..j],
                    prefix_len + slash + 1,
                    sub,
                    ids,
                    staged,
                    gone,
                )?;
                i = j;
            }
        }
    }
    for e in &head_entries {
        let mut path = dir.to_vec();
        path.extend_from_slice(&e.name);
        if e.is_tree() {
            if !dirs.contains(e.name.as_slice()) {
                path.push(b'/');
                for (p, (_, id)) in tree_files(repo, e.oid)? {
                    let mut full = path.clone();
                    full.extend_from_slice(&p);
                    gone.insert(full, id);
                }
            }
        } else if !files.contains(e.name.as_slice()) {
            gone.insert(path, e.oid);
        }
    }
    Ok(())
}

/// How a work tree file differs from its index entry. `tree` stats paths below the work
/// tree and keeps the directory of the last entry open (see [`sh_utility::sys::TreeStat`]): make
/// one per command and pass it to every entry.
pub(super) fn worktree_change(tree: &mut TreeStat, e: &IndexEntry) -> Option<char> {
    if e.mode == 0o160000 {
        return None;
    }
    let Some(meta) = tree.lstat(&e.path) else {
        return Some('D');
    };
    if meta.is_dir {
        return Some('D');
    }
    let is_link = meta.is_symlink;
    if is_link != (e.mode == 0o120000) {
        return Some('T');
    }
    let mtime = (meta.mtime.0 as u32, meta.mtime.1);
    if meta.len as u32 == e.size && mtime == e.mtime && e.mtime != (0, 0) {
        return None;
    }
    let path = tree.root().join(String::from_utf8_lossy(&e.path).as_ref());
    let data = if is_link {
        std::fs::read_link(&path)
            .ok()?
            .to_string_lossy()
            .into_owned()
            .into_bytes()
    } else {
        std::fs::read(&path).ok()?
    };
    (object::hash(Kind::Blob, &data) != e.oid).then_some('M')
}

/// The ignore rules of one directory (its `.gitignore`).
pub(super) struct Ignores {
    stack: Vec<ignore::gitignore::Gitignore>,
    /// Patterns above every file's (`ls-files -x`).
    top: Option<ignore::gitignore::Gitignore>,
    /// Whether directories' `.gitignore` files count (`ls-files` reads them only with
    /// `--exclude-standard`).
    per_dir: bool,
}

impl Ignores {
    /// No rules (`git add -f`).
    pub(super) fn none() -> Ignores {
        Ignores {
            stack: Vec::new(),
            top: None,
            per_dir: true,
        }
    }

    /// The rules of `.git/info/exclude`.
    pub(super) fn new(repo: &Repo, work: &Path) -> Ignores {
        Ignores::with_rules(repo, work, true, true, &[], &[])
    }

    /// The rules `ls-files` is given: `patterns` above all, the directories' `.gitignore`
    /// files with `per_dir`, `.git/info/exclude` with `standard`, then `files`.
    pub(super) fn with_rules(
        repo: &Repo,
        work: &Path,
        standard: bool,
        per_dir: bool,
        patterns: &[String],
        files: &[PathBuf],
    ) -> Ignores {
        let mut ign = Ignores {
            stack: Vec::new(),
            top: None,
            per_dir,
        };
        let exclude = repo.git_dir.join("info/exclude");
        let lists = files
            .iter()
            .chain(standard.then_some(&exclude))
            .filter(|f| f.is_file());
        for f in lists {
            let mut b = ignore::gitignore::GitignoreBuilder::new(work);
            let _ = b.add(f);
            if let Ok(g) = b.build() {
                ign.stack.push(g);
            }
        }
        if !patterns.is_empty() {
            let mut b = ignore::gitignore::GitignoreBuilder::new(work);
            for p in patterns {
                let _ = b.add_line(None, p);
            }
            ign.top = b.build().ok();
        }
        ign
    }

    /// Those and the `.gitignore` files from the top of the work tree down to `dir`.
    pub(super) fn for_dir(repo: &Repo, work: &Path, dir: &Path) -> Ignores {
        let mut ign = Ignores::new(repo, work);
        let mut d = work.to_path_buf();
        ign.push_dir(&d);
        if let Ok(rest) = dir.strip_prefix(work) {
            for c in rest.components() {
                d.push(c);
                ign.push_dir(&d);
            }
        }
        ign
    }

    pub(super) fn push_dir(&mut self, dir: &Path) -> bool {
        let gi = dir.join(".gitignore");
        self.push_file(&gi, gi.is_file())
    }

    /// [`Ignores::push_dir`] for a directory whose listing is at hand: whether it has a
    /// `.gitignore` file is read from the listing instead of asked of the file system.
    pub(super) fn push_listed(&mut self, dir: &Path, names: &[(String, bool)]) -> bool {
        let has = names.iter().any(|(n, is_dir)| n == ".gitignore" && !is_dir);
        self.push_file(&dir.join(".gitignore"), has)
    }

    fn push_file(&mut self, gi: &Path, pushed: bool) -> bool {
        let pushed = pushed && self.per_dir;
        if pushed {
            self.stack.push(ignore::gitignore::Gitignore::new(gi).0);
        }
        pushed
    }

    pub(super) fn pop(&mut self) {
        self.stack.pop();
    }

    pub(super) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.top.iter().chain(self.stack.iter().rev()) {
            match g.matched(path, is_dir) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
        false
    }
}

/// The names in `dir`, sorted, each with whether it is a directory.
pub(super) fn dir_entries(dir: &Path) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                    (e.file_name().to_string_lossy().into_owned(), is_dir)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Untracked files under `dir` (relative `rel`): whole untracked directories as `dir/`.
fn untracked(
    dir: &Path,
    rel: &[u8],
    tracked: &HashSet<Vec<u8>>,
    tracked_dirs: &HashSet<Vec<u8>>,
    ign: &mut Ignores,
    out: &mut Vec<Vec<u8>>,
) {
    let names = dir_entries(dir);
    let pushed = ign.push_listed(dir, &names);
    for (name, is_dir) in names {
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let mut p = rel.to_vec();
        p.extend_from_slice(name.as_bytes());
        let full = dir.join(&name);
        if is_dir {
            if tracked_dirs.contains(&p) {
                p.push(b'/');
                untracked(&full, &p, tracked, tracked_dirs, ign, out);
            } else if !ign.ignored(&full, true) && has_untracked_file(&full, ign) {
                p.push(b'/');
                out.push(p);
            }
        } else if !tracked.contains(&p) && !ign.ignored(&full, false) {
            out.push(p);
        }
    }
    if pushed {
        ign.pop();
    }
}

/// The untracked entries that pathspecs select: an entry inside one, or, for a pathspec
/// inside an untracked directory, the pathspec itself (`dir/` for a directory) when it
/// exists, as git narrows the directory it collapses.
fn untracked_in_scopes(work: &Path, found: Vec<Vec<u8>>, scopes: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for u in found {
        let bare = u.strip_suffix(b"/").unwrap_or(&u);
        if super::diff::in_scopes(scopes, bare) {
            out.push(u);
            continue;
        }
        if u.ends_with(b"/") {
            for s in scopes {
                if s.starts_with(&u) {
                    let full = work.join(String::from_utf8_lossy(s).as_ref());
                    match full.symlink_metadata() {
                        Ok(m) if m.is_dir() => {
                            let mut d = s.clone();
                            d.push(b'/');
                            out.push(d);
                        }
                        Ok(_) => out.push(s.clone()),
                        Err(_) => {}
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether an untracked directory holds a file that is not ignored (git hides empty ones).
fn has_untracked_file(dir: &Path, ign: &mut Ignores) -> bool {
    let pushed = ign.push_dir(dir);
    let found = std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let p = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            !ign.ignored(&p, is_dir) && (!is_dir || has_untracked_file(&p, ign))
        })
    });
    if pushed {
        ign.pop();
    }
    found
}

/// Every commit reachable from `id`.
pub(super) fn reachable(repo: &Repo, id: Oid) -> Result<HashSet<Oid>, String> {
    Ok(super::log::walk(repo, &[id])?
        .into_iter()
        .map(|(c, _)| c)
        .collect())
}

/// How far HEAD is ahead of and behind `upstream`: None without one, Some(None) when the
/// upstream's ref is gone.
pub(super) type Tracking = Option<Option<(usize, usize)>>;

pub(super) fn tracking_of(
    repo: &Repo,
    upstream: Option<&str>,
    head: Option<Oid>,
) -> Result<Tracking, String> {
    Ok(match (upstream, head) {
        (Some(u), Some(h)) => match repo.resolve_ref(&format!("refs/remotes/{u}")) {
            Some(up) => Some(Some(ahead_behind(repo, h, up)?)),
            None => Some(None),
        },
        _ => None,
    })
}

/// git's tracking lines ("Your branch is up to date with 'origin/main'."), as status and
/// checkout print them.
pub(super) fn tracking_text(u: &str, tracking: Tracking) -> String {
    let mut out = String::new();
    match tracking {
            Some(Some((0, 0))) => out.push_str(&format!("Your branch is up to date with '{u}'.\n")),
            Some(Some((a, 0))) => out.push_str(&format!(
                "Your branch is ahead of '{u}' by {a} {}.\n  (use \"git push\" to publish your local commits)\n",
                plural(a)
            )),
            Some(Some((0, b))) => out.push_str(&format!(
                "Your branch is behind '{u}' by {b} {}, and can be fast-forwarded.\n  (use \"git pull\" to update your local branch)\n",
                plural(b)
            )),
            Some(Some((a, b))) => out.push_str(&format!(
                "Your branch and '{u}' have diverged,\nand have {a} and {b} different commits each, respectively.\n  (use \"git pull\" if you want to integrate the remote branch with yours)\n"
            )),
            Some(None) => out.push_str(&format!(
                "Your branch is based on '{u}', but the upstream is gone.\n  (use \"git branch --unset-upstream\" to fixup)\n"
            )),
            None => {}
        }
    out
}

/// Commits in `a` not reachable from `b`, and the reverse.
fn ahead_behind(repo: &Repo, a: Oid, b: Oid) -> Result<(usize, usize), String> {
    let from_a = reachable(repo, a)?;
    let from_b = reachable(repo, b)?;
    Ok((
        from_a.difference(&from_b).count(),
        from_b.difference(&from_a).count(),
    ))
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "commit" } else { "commits" }
}

/// What `git commit` prints when there is nothing to commit: the long status, with its
/// "Initial commit" heading on an unborn branch.
pub(super) fn long_status(repo: &Repo, cwd: &Path, io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, &[], io, false)
}

pub(super) fn commit_status(repo: &Repo, cwd: &Path, io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, &[], io, true)
}

fn status(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, args, io, false)
}

fn status_as(
    repo: &Repo,
    cwd: &Path,
    args: &[String],
    io: &Io,
    for_commit: bool,
) -> Result<i32, String> {
    const USAGE: &str = "git status [<options>] [--] [<pathspec>...]";
    let mut short = false;
    let mut porcelain = false;
    let mut show_branch = false;
    let mut paths: Vec<String> = Vec::new();
    let mut a = Args::with_values(args, "");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-s" | "--short" => a.flag("short").map(|_| short = true),
            "--porcelain" => {
                porcelain = true;
                match a.pending_value() {
                    None | Some("v1") => Ok(()),
                    Some(v) => Err(format!("fatal: unsupported porcelain version '{v}'")),
                }
            }
            "-b" | "--branch" => a.flag("branch").map(|_| show_branch = true),
            "--long" => a.flag("long").map(|_| short = false),
            "--" => {
                paths.extend(a.rest());
                Ok(())
            }
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                paths.push(arg.clone());
                Ok(())
            }
        };
        if let Err(e) = r {
            return Ok(usage_error(io, &e, USAGE));
        }
    }
    let Some(work) = repo.work.clone() else {
        return Err("fatal: this operation must be run in a work tree".into());
    };
    let (head_ref, head_id) = repo.head();
    // One read of the index: merged entries, and a merge's conflicts.
    let (conflicts, index): (Vec<IndexEntry>, Vec<IndexEntry>) =
        load_all(repo)?.into_iter().partition(|e| e.stage != 0);
    let head_tree = match head_id {
        Some(id) => Some(read_commit(repo, &id)?.tree),
        None => None,
    };
    // What the index stages against HEAD, and the ids of the paths it no longer has.
    let (mut staged, gone_ids) = staged_changes(repo, head_tree, &index)?;
    let mut unstaged: BTreeMap<Vec<u8>, char> = BTreeMap::new();
    let mut in_index: HashSet<Vec<u8>> = HashSet::new();
    let mut tracked_dirs: HashSet<Vec<u8>> = HashSet::new();
    let mut tree = TreeStat::new(&work);
    for e in &index {
        in_index.insert(e.path.clone());
        let mut p = e.path.as_slice();
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            // Its own parents are in the set too once it is.
            if tracked_dirs.contains(p) {
                break;
            }
            tracked_dirs.insert(p.to_vec());
        }
        if let Some(c) = worktree_change(&mut tree, e) {
            unstaged.insert(e.path.clone(), c);
        }
    }
    // Unmerged paths (a merge's conflicts), by the stages the index has for them.
    let mut stages: BTreeMap<Vec<u8>, u8> = BTreeMap::new();
    for e in conflicts {
        *stages.entry(e.path).or_default() |= 1 << e.stage;
    }
    let unmerged: BTreeMap<Vec<u8>, &str> = stages
        .into_iter()
        .map(|(p, s)| {
            let code = match s >> 1 {
                0b111 => "UU",
                0b110 => "AA",
                0b011 => "UD",
                0b101 => "DU",
                0b010 => "AU",
                0b100 => "UA",
                _ => "UU",
            };
            (p, code)
        })
        .collect();
    for p in unmerged.keys() {
        staged.remove(p);
        unstaged.remove(p);
        in_index.insert(p.clone());
        let mut d = p.as_slice();
        while let Some(i) = d.iter().rposition(|&b| b == b'/') {
            d = &d[..i];
            tracked_dirs.insert(d.to_vec());
        }
    }
    // Pathspecs limit what is shown (a file, or a directory's contents), as in git.
    if let Some(p) = paths.iter().find(|p| p.contains(['*', '?', '['])) {
        return Err(format!(
            "fatal: the glob pathspec '{p}' is not supported in burrow's git status"
        ));
    }
    let scopes: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| super::diff::scope_of(&prefix(repo, cwd), p))
        .collect();
    let wanted = |p: &[u8]| super::diff::in_scopes(&scopes, p);
    staged.retain(|p, _| wanted(p));
    unstaged.retain(|p, _| wanted(p));
    let unmerged: BTreeMap<Vec<u8>, &str> =
        unmerged.into_iter().filter(|(p, _)| wanted(p)).collect();
    let merging = super::merge::merge_head(repo).is_some();
    // Exact renames: a path gone from HEAD whose content a new path has (by new path).
    // Renames with edits (git's similarity detection) show as a deletion and an addition.
    let mut renames: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let index_ids: BTreeMap<&Vec<u8>, Oid> = index.iter().map(|e| (&e.path, e.oid)).collect();
    let gone: Vec<Vec<u8>> = staged
        .iter()
        .filter(|(_, c)| **c == 'D')
        .map(|(p, _)| p.clone())
        .collect();
    for old in gone {
        let Some(&id) = gone_ids.get(&old) else {
            continue;
        };
        let new = staged
            .iter()
            .find(|(p, c)| **c == 'A' && index_ids.get(p) == Some(&id) && !renames.contains_key(*p))
            .map(|(p, _)| p.clone());
        if let Some(new) = new {
            staged.remove(&old);
            staged.insert(new.clone(), 'R');
            renames.insert(new, old);
        }
    }
    // The top's .gitignore is read by `untracked` itself.
    let mut ign = Ignores::new(repo, &work);
    let mut new_files = Vec::new();
    untracked(
        &work,
        b"",
        &in_index,
        &tracked_dirs,
        &mut ign,
        &mut new_files,
    );
    if !scopes.is_empty() {
        new_files = untracked_in_scopes(&work, new_files, &scopes);
    }

    let branch_name = head_ref
        .as_deref()
        .map(|b| b.trim_start_matches("refs/heads/").to_string());
    // The upstream: branch.<b>.remote and .merge.
    let upstream = branch_name.as_deref().and_then(|b| upstream_of(repo, b));
    let tracking = tracking_of(repo, upstream.as_deref(), head_id)?;

    let pre = if porcelain {
        Vec::new()
    } else {
        prefix(repo, cwd)
    };
    let show = |p: &[u8]| quote(&relative(p, &pre));
    if short || porcelain {
        let mut out = String::new();
        if show_branch {
            out.push_str("## ");
            match (&branch_name, head_id) {
                (Some(b), None) => out.push_str(&format!("No commits yet on {b}")),
                (Some(b), Some(_)) => {
                    out.push_str(b);
                    if let Some(u) = &upstream {
                        out.push_str(&format!("...{u}"));
                        match tracking {
                            Some(Some((0, 0))) | None => {}
                            Some(Some((a, 0))) => out.push_str(&format!(" [ahead {a}]")),
                            Some(Some((0, b))) => out.push_str(&format!(" [behind {b}]")),
                            Some(Some((a, b))) => {
                                out.push_str(&format!(" [ahead {a}, behind {b}]"))
                            }
                            Some(None) => out.push_str(" [gone]"),
                        }
                    }
                }
                (None, _) => out.push_str("HEAD (no branch)"),
            }
            out.push('\n');
        }
        let mut paths: BTreeSet<&Vec<u8>> = staged.keys().collect();
        paths.extend(unstaged.keys());
        paths.extend(unmerged.keys());
        for p in paths {
            if let Some(code) = unmerged.get(p) {
                out.push_str(&format!("{code} {}\n", show(p)));
                continue;
            }
            let x = staged.get(p).copied().unwrap_or(' ');
            let y = unstaged.get(p).copied().unwrap_or(' ');
            match renames.get(p) {
                Some(old) => out.push_str(&format!("{x}{y} {} -> {}\n", show(old), show(p))),
                None => out.push_str(&format!("{x}{y} {}\n", show(p))),
            }
        }
        for p in &new_files {
            out.push_str(&format!("?? {}\n", show(p)));
        }
        io.print(&out);
        return Ok(0);
    }

    let mut out = String::new();
    match (&branch_name, head_id) {
        (Some(b), _) => out.push_str(&format!("On branch {b}\n")),
        (None, Some(_)) if super::state::rebase(repo).is_some() => {
            out.push_str(&super::state::rebase_heading(repo).unwrap_or_default())
        }
        (None, Some(id)) => match detached_from(repo, &id) {
            Some((true, name)) => out.push_str(&format!("HEAD detached at {name}\n")),
            Some((false, name)) => out.push_str(&format!("HEAD detached from {name}\n")),
            None => out.push_str("Not currently on any branch.\n"),
        },
        (None, None) => {}
    }
    if let Some(u) = &upstream {
        out.push_str(&tracking_text(u, tracking));
        if tracking.is_some() {
            out.push('\n');
        }
    }
    if head_id.is_none() {
        out.push_str(if for_commit {
            "\nInitial commit\n\n"
        } else {
            "\nNo commits yet\n\n"
        });
    }
    if !merging && let Some(block) = super::state::status_block(repo, !unmerged.is_empty()) {
        out.push_str(&block);
    }
    // A merge or a cherry-pick (git's `whence`) has no "restore --staged" hints.
    let no_unstage = super::state::hides_unstage_hints(repo);
    if merging {
        if unmerged.is_empty() {
            out.push_str("All conflicts fixed but you are still merging.\n  (use \"git commit\" to conclude merge)\n\n");
        } else {
            out.push_str("You have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\n");
        }
    }
    let label = |c: char| match c {
        'A' => "new file:   ",
        'D' => "deleted:    ",
        'T' => "typechange: ",
        'R' => "renamed:    ",
        _ => "modified:   ",
    };
    if !staged.is_empty() {
        out.push_str("Changes to be committed:\n");
        // During a merge or cherry-pick git gives no hint here.
        if no_unstage {
        } else if head_id.is_some() {
            out.push_str("  (use \"git restore --staged <file>...\" to unstage)\n");
        } else {
            out.push_str("  (use \"git rm --cached <file>...\" to unstage)\n");
        }
        for (p, c) in &staged {
            match renames.get(p) {
                Some(old) => {
                    out.push_str(&format!("\t{}{} -> {}\n", label(*c), show(old), show(p)))
                }
                None => out.push_str(&format!("\t{}{}\n", label(*c), show(p))),
            }
        }
        out.push('\n');
    }
    if !unmerged.is_empty() {
        out.push_str("Unmerged paths:\n");
        if !no_unstage && head_id.is_some() {
            out.push_str("  (use \"git restore --staged <file>...\" to unstage)\n");
        }
        if unmerged.values().all(|c| *c == "UU" || *c == "AA") {
            out.push_str("  (use \"git add <file>...\" to mark resolution)\n");
        } else {
            out.push_str("  (use \"git add/rm <file>...\" as appropriate to mark resolution)\n");
        }
        for (p, c) in &unmerged {
            let l = match *c {
                "AA" => "both added:      ",
                "UD" => "deleted by them: ",
                "DU" => "deleted by us:   ",
                "AU" => "added by us:     ",
                "UA" => "added by them:   ",
                _ => "both modified:   ",
            };
            out.push_str(&format!("\t{l}{}\n", show(p)));
        }
        out.push('\n');
    }
    if !unstaged.is_empty() {
        out.push_str("Changes not staged for commit:\n");
        if unstaged.values().any(|c| *c == 'D') {
            out.push_str("  (use \"git add/rm <file>...\" to update what will be committed)\n");
        } else {
            out.push_str("  (use \"git add <file>...\" to update what will be committed)\n");
        }
        out.push_str("  (use \"git restore <file>...\" to discard changes in working directory)\n");
        for (p, c) in &unstaged {
            out.push_str(&format!("\t{}{}\n", label(*c), show(p)));
        }
        out.push('\n');
    }
    if !new_files.is_empty() {
        out.push_str(
            "Untracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n",
        );
        for p in &new_files {
            out.push_str(&format!("\t{}\n", show(p)));
        }
        out.push('\n');
    }
    if staged.is_empty() {
        if !unstaged.is_empty() || !unmerged.is_empty() {
            out.push_str("no changes added to commit (use \"git add\" and/or \"git commit -a\")\n");
        } else if !new_files.is_empty() {
            out.push_str(
                "nothing added to commit but untracked files present (use \"git add\" to track)\n",
            );
        } else if head_id.is_none() {
            out.push_str("nothing to commit (create/copy files and use \"git add\" to track)\n");
        } else {
            out.push_str("nothing to commit, working tree clean\n");
        }
    }
    io.print(&out);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_relative_and_quoted() {
        assert_eq!(relative(b"src/a.rs", b"src"), b"a.rs");
        assert_eq!(relative(b"README", b"src/x"), b"../../README");
        assert_eq!(quote(b"a b"), "a b");
        assert_eq!(quote("é".as_bytes()), "\"\\303\\251\"");
    }
}
