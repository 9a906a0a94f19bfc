//! The read-only porcelain: `status` (long, `-s`, `--porcelain`, `-b`), `rev-parse`, `branch` (list, `-a`, `-r`), `remote` (`-v`), `ls-files`
//! and `config` (get, set, unset, list), with git's output for each; and the helpers the
//! other commands share (revisions, commits, dates, paths, the index, ignore rules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::object::{self, Commit, Kind, Oid, hex, parse_commit, parse_hex};
use super::repo::{IndexEntry, Repo, read_index};
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
        "ls-files" => ls_files(&repo, &cwd, args, io),
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

/// A revision: `HEAD`, a branch, tag or remote-tracking name, a full or abbreviated id, any
/// of them followed by `~N` or `^` steps.
pub fn resolve(repo: &Repo, rev: &str) -> Option<Oid> {
    let (base, steps) = match rev.find(['~', '^']) {
        Some(i) => (&rev[..i], &rev[i..]),
        None => (rev, ""),
    };
    let base = if base == "@" { "HEAD" } else { base };
    let mut id = if base == "HEAD" {
        repo.head().1?
    } else if let Some(id) = [
        base.to_string(),
        format!("refs/{base}"),
        format!("refs/tags/{base}"),
        format!("refs/heads/{base}"),
        format!("refs/remotes/{base}"),
        format!("refs/remotes/{base}/HEAD"),
    ]
    .iter()
    .filter(|n| n.starts_with("refs/"))
    .find_map(|n| repo.resolve_ref(n))
    {
        id
    } else if let Some(id) = parse_hex(base) {
        id
    } else {
        abbreviated(repo, base)?
    };
    if !steps.is_empty() {
        id = repo.peel_commit(&id).ok()?;
    }
    let mut s = steps;
    while !s.is_empty() {
        let (op, rest) = s.split_at(1);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        s = &rest[digits.len()..];
        let n: usize = if digits.is_empty() {
            1
        } else {
            digits.parse().ok()?
        };
        let commit = |id: &Oid| -> Option<Commit> {
            parse_commit(&repo.read_kind(id, Kind::Commit).ok()?).ok()
        };
        if op == "~" {
            for _ in 0..n {
                id = *commit(&id)?.parents.first()?;
            }
        } else if n == 0 {
            id = repo.peel_commit(&id).ok()?;
        } else {
            id = *commit(&id)?.parents.get(n - 1)?;
        }
    }
    Some(id)
}

/// The commit a revision names (a tag peeled to it), or None.
pub(super) fn resolve_commit(repo: &Repo, rev: &str) -> Option<Oid> {
    repo.peel_commit(&resolve(repo, rev)?).ok()
}

/// The one object whose id starts with `prefix` (4 to 39 hex digits).
fn abbreviated(repo: &Repo, prefix: &str) -> Option<Oid> {
    if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let p = prefix.to_ascii_lowercase();
    let mut found: BTreeSet<Oid> = BTreeSet::new();
    let dir = repo.objects().join(&p[..2]);
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let name = format!("{}{}", &p[..2], e.file_name().to_string_lossy());
            if name.starts_with(&p)
                && let Some(id) = parse_hex(&name)
            {
                found.insert(id);
            }
        }
    }
    for id in repo.pack_ids() {
        if hex(&id).starts_with(&p) {
            found.insert(id);
        }
    }
    (found.len() == 1)
        .then(|| found.into_iter().next())
        .flatten()
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

/// A commit as `git log` and `git show` print it by default (the medium format).
pub(super) fn format_show_header(id: &Oid, c: &Commit) -> String {
    let (t, z) = ident_time(&c.author);
    format_show_header_dated(id, c, &git_date(t, &z))
}

/// [`format_show_header`] with the author date already shown (`git log --date=`).
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

fn rev_parse(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let mut abbrev_ref = false;
    let mut short = false;
    let mut verify = false;
    let mut out = String::new();
    for a in args {
        match a.as_str() {
            "--abbrev-ref" => abbrev_ref = true,
            "--short" => short = true,
            "--verify" | "-q" | "--quiet" => verify = true,
            "--show-toplevel" => match &repo.work {
                Some(w) => out.push_str(&format!("{}\n", w.display())),
                None => {
                    return Err("fatal: this operation must be run in a work tree".into());
                }
            },
            "--git-dir" => {
                let g = repo.git_dir.as_path();
                let shown = match g.strip_prefix(cwd) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => g.to_path_buf(),
                };
                out.push_str(&format!("{}\n", shown.display()));
            }
            "--is-inside-work-tree" => out.push_str(if repo.work.is_some() {
                "true\n"
            } else {
                "false\n"
            }),
            "--is-bare-repository" => out.push_str(if repo.work.is_some() {
                "false\n"
            } else {
                "true\n"
            }),
            "--show-prefix" => {
                let p = prefix(repo, cwd);
                if !p.is_empty() {
                    out.push_str(&format!("{}/", String::from_utf8_lossy(&p)));
                }
                out.push('\n');
            }
            s if s.starts_with('-') => {
                return Err(format!(
                    "fatal: rev-parse option '{s}' is not supported in burrow"
                ));
            }
            rev => {
                if abbrev_ref {
                    let name = if rev == "HEAD" {
                        match repo.head() {
                            (Some(b), _) => b.trim_start_matches("refs/heads/").to_string(),
                            (None, Some(_)) => "HEAD".into(),
                            (None, None) => return Err(unknown_rev(rev)),
                        }
                    } else if repo.resolve_ref(&format!("refs/heads/{rev}")).is_some()
                        || repo.resolve_ref(&format!("refs/remotes/{rev}")).is_some()
                    {
                        rev.to_string()
                    } else {
                        return Err(unknown_rev(rev));
                    };
                    out.push_str(&format!("{name}\n"));
                    continue;
                }
                match resolve(repo, rev) {
                    Some(id) if short => out.push_str(&format!("{}\n", abbrev(&id))),
                    Some(id) => out.push_str(&format!("{}\n", hex(&id))),
                    None if verify => {
                        io.print(&out);
                        io.eprint("fatal: Needed a single revision\n");
                        return Ok(128);
                    }
                    None => {
                        io.print(&out);
                        return Err(unknown_rev(rev));
                    }
                }
            }
        }
    }
    io.print(&out);
    Ok(0)
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

fn unknown_rev(rev: &str) -> String {
    format!(
        "{rev}\nfatal: ambiguous argument '{rev}': unknown revision or path not in the working tree.\n\
         Use '--' to separate paths from revisions, like this:\n\
         'git <command> [<revision>...] -- [<file>...]'"
    )
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

fn load_all(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    match std::fs::read(repo.git_dir.join("index")) {
        Ok(d) => read_index(&d),
        Err(_) => Ok(Vec::new()),
    }
}

fn ls_files(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    if let Some(a) = args.iter().find(|a| a.starts_with('-')) {
        return Err(format!(
            "fatal: 'git ls-files {a}' is not supported in burrow"
        ));
    }
    let pre = prefix(repo, cwd);
    let mut out = String::new();
    for e in load_index(repo)? {
        let inside =
            pre.is_empty() || (e.path.starts_with(&pre) && e.path.get(pre.len()) == Some(&b'/'));
        if !inside {
            continue;
        }
        let rel = relative(&e.path, &pre);
        if !args.is_empty()
            && !args.iter().any(|a| {
                let a = a.trim_end_matches('/').as_bytes();
                rel == a || (rel.starts_with(a) && rel.get(a.len()) == Some(&b'/')) || a == b"."
            })
        {
            continue;
        }
        out.push_str(&quote(&rel));
        out.push('\n');
    }
    io.print(&out);
    Ok(0)
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
}

impl Ignores {
    /// No rules (`git add -f`).
    pub(super) fn none() -> Ignores {
        Ignores { stack: Vec::new() }
    }

    /// The rules of `.git/info/exclude`.
    pub(super) fn new(repo: &Repo, work: &Path) -> Ignores {
        let mut ign = Ignores { stack: Vec::new() };
        let exclude = repo.git_dir.join("info/exclude");
        if exclude.is_file() {
            let mut b = ignore::gitignore::GitignoreBuilder::new(work);
            let _ = b.add(&exclude);
            if let Ok(g) = b.build() {
                ign.stack.push(g);
            }
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
        if pushed {
            self.stack.push(ignore::gitignore::Gitignore::new(gi).0);
        }
        pushed
    }

    pub(super) fn pop(&mut self) {
        self.stack.pop();
    }

    pub(super) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.stack.iter().rev() {
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

/// The upstream of branch `b` (`branch.<b>.remote` and `.merge`), as `origin/main`.
pub(super) fn upstream_of(repo: &Repo, b: &str) -> Option<String> {
    let remote = repo.config(&format!("branch.{b}.remote"))?;
    let merge = repo.config(&format!("branch.{b}.merge"))?;
    // Without the remote's fetch refspec there is no remote-tracking ref to compare with.
    repo.config(&format!("remote.{remote}.fetch"))?;
    Some(format!(
        "{remote}/{}",
        merge.trim_start_matches("refs/heads/")
    ))
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
        // During a merge git gives no hint here.
        if merging {
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
        if !merging && head_id.is_some() {
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
