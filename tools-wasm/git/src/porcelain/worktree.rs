//! Moving the work tree and the index between commits, as git's two-way merge does:
//! `checkout`/`switch` to another branch or commit (local changes carried when the two
//! commits agree on a path, refused with git's message when they would be overwritten),
//! `checkout [REV] -- PATHS`, `restore`, and `reset` (`--soft`, `--mixed`, `--hard`,
//! `--merge`, paths).
//! Every check runs before the first file is written, so a refused command changes nothing.

use std::collections::BTreeSet;
use std::path::Path;

use sh_utility::Ctx;
use sh_utility::io::Io;
use sh_utility::sys::TreeStat;

use super::args::{Opt, Refusal, Spec, Unknown, set};
use crate::plumbing::checkout::{
    entry_from_tree, hard_reset, local_changes, merge_reset, remove_entry, two_way, work_of,
    write_entry,
};
use crate::plumbing::commit::{read_commit, resolve_commit, subject};
use crate::plumbing::index::{
    Files, Index, index_map, save_index, save_index_resolved, worktree_change,
};
use crate::plumbing::object::{Kind, Oid, hex};
use crate::plumbing::pathspec::{ambiguous, did_not_match, match_specs};
use crate::plumbing::refs::{reflog, valid_branch};
use crate::plumbing::repo::{Repo, upstream_of};
use crate::plumbing::rev::resolve;
use crate::plumbing::text::{abbrev, tracking_text};
use crate::plumbing::tree::{head_files, tree_files};
use crate::plumbing::walk::tracking_of;
use crate::plumbing::write::write_file;

/// `@{-N}`: the branch or commit HEAD was on N checkouts ago.
fn previous(repo: &Repo, n: usize) -> Option<String> {
    let log = std::fs::read_to_string(repo.git_dir.join("logs/HEAD")).ok()?;
    let line = log
        .lines()
        .rev()
        .filter(|l| l.contains("\tcheckout: moving from "))
        .nth(n.checked_sub(1)?)?;
    let from = line.split_once("\tcheckout: moving from ")?.1;
    Some(from.rsplit_once(" to ")?.0.to_string())
}

/// The one remote-tracking branch named `name` (`origin/NAME`), for checkout's guess.
fn remote_guess(repo: &Repo, name: &str) -> Option<(String, String)> {
    let found: Vec<(String, String)> = repo
        .refs_under("refs/remotes/")
        .into_iter()
        .filter_map(|(r, _)| {
            let rest = r.strip_prefix("refs/remotes/")?;
            let (remote, b) = rest.split_once('/')?;
            (b == name && repo.config(&format!("remote.{remote}.fetch")).is_some())
                .then(|| (remote.to_string(), r.clone()))
        })
        .collect();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

fn set_upstream(repo: &Repo, branch: &str, remote: &str, merge: &str) -> Result<(), String> {
    let path = repo.git_dir.join("config");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text = crate::plumbing::repo::config_set(&text, &format!("branch.{branch}.remote"), remote);
    text = crate::plumbing::repo::config_set(&text, &format!("branch.{branch}.merge"), merge);
    write_file(&path, text.as_bytes())
}

const DETACHED_ADVICE: &str =
    "You are in 'detached HEAD' state. You can look around, make experimental
changes and commit them, and you can discard any commits you make in this
state without impacting any branches by switching back to a branch.

If you want to create a new branch to retain commits you create, you may
do so (now or later) by using -c with the switch command. Example:

  git switch -c <new-branch-name>

Or undo this operation with:

  git switch -

Turn off this advice by setting config variable advice.detachedHead to false

";

fn describe(repo: &Repo, id: &Oid) -> Result<String, String> {
    let c = read_commit(repo, id)?;
    Ok(format!("{} {}", abbrev(id), subject(&c.message)))
}

/// A branch checkout or switch makes: its name, whether it existed (`-B`), and the
/// upstream it tracks (remote, merge ref).
type NewBranch = (String, bool, Option<(String, String)>);

/// What checkout and switch were asked for.
#[derive(Default)]
struct Switch {
    /// `-b`/`-c` (create) or `-B`/`-C` (create or reset).
    new_branch: Option<(String, bool)>,
    force: bool,
    quiet: bool,
    detach: bool,
    track: Option<bool>,
}

/// The options checkout and switch share, as git's `builtin/checkout.c` declares them.
macro_rules! switch_options {
    ($($extra:expr,)*) => {
        &[
            $($extra,)*
            Opt::flag("-f/--force/--discard-changes", |o| o.force = true),
            Opt::flag("-q/--quiet", |o| o.quiet = true),
            Opt::flag("--detach", |o| o.detach = true),
            Opt::flag("-t/--track", |o| o.track = Some(true)),
            Opt::flag("--no-track", |o| o.track = Some(false)),
            Opt::ignored("--progress/--no-progress"),
        ]
    };
}

/// `-b`/`-c`: a branch made at the commit checked out.
fn create(o: &mut Switch, name: String) -> Result<(), Refusal> {
    o.new_branch = Some((name, false));
    Ok(())
}

/// `-B`/`-C`: a branch made, or reset if it exists, at the commit checked out.
fn force_create(o: &mut Switch, name: String) -> Result<(), Refusal> {
    o.new_branch = Some((name, true));
    Ok(())
}

const SWITCH_REFUSED: &str = "-m --merge -p --patch --orphan --ours --theirs --conflict -l --guess --no-guess --overlay --no-overlay --recurse-submodules --pathspec-from-file --ignore-other-worktrees";

const CHECKOUT: Spec<Switch> = Spec {
    name: "checkout",
    usage: "git checkout [<options>] <branch>\n   or: git checkout [<options>] [<branch>] -- <file>...",
    options: switch_options![Opt::value("-b", create), Opt::value("-B", force_create),],
    refused: SWITCH_REFUSED,
    unknown: Unknown::Usage,
    help: &[],
};

const SWITCH: Spec<Switch> = Spec {
    name: "switch",
    usage: "git switch [<options>] [<branch>]",
    options: switch_options![
        Opt::value("-c/--create", create),
        Opt::value("-C/--force-create", force_create),
        Opt::flag("-d", |o| o.detach = true),
    ],
    refused: SWITCH_REFUSED,
    unknown: Unknown::Usage,
    help: &[],
};

pub fn checkout_or_switch(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let is_switch = cmd == "switch";
    let mut o = Switch::default();
    let spec = if is_switch { &SWITCH } else { &CHECKOUT };
    let (positional, dashdash) = match spec.parse_split(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = if is_switch {
        if dashdash.is_some() || positional.len() > 1 {
            Err("fatal: only one reference expected".to_string())
        } else {
            switch_to(
                sh,
                &repo,
                cmd,
                positional.first().map(String::as_str),
                &o,
                io,
            )
        }
    } else {
        checkout(sh, &repo, &cwd, positional, dashdash, &o, io)
    };
    match r {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

/// `git checkout`: a branch or commit to switch to, or paths to restore from the index or
/// from a commit.
fn checkout(
    sh: &dyn Ctx,
    repo: &Repo,
    cwd: &Path,
    positional: Vec<String>,
    dashdash: Option<Vec<String>>,
    o: &Switch,
    io: &Io,
) -> Result<i32, String> {
    if o.new_branch.is_some() || o.detach {
        if dashdash.as_ref().is_some_and(|d| !d.is_empty()) || positional.len() > 1 {
            return Err(
                "fatal: 'git checkout -b/--detach' with paths is not supported in burrow".into(),
            );
        }
        return switch_to(
            sh,
            repo,
            "checkout",
            positional.first().map(String::as_str),
            o,
            io,
        );
    }
    match dashdash {
        Some(paths) => {
            if positional.len() > 1 {
                return Err(format!(
                    "fatal: only one reference expected, {} given.",
                    positional.len()
                ));
            }
            let source = positional.first().map(String::as_str);
            checkout_paths(repo, cwd, source, &paths, false, io)
        }
        None => {
            let Some(first) = positional.first() else {
                // `git checkout` alone reports local changes and tracking: nothing moves.
                return switch_to(sh, repo, "checkout", Some("HEAD"), o, io);
            };
            let is_rev = first == "-"
                || first == "HEAD"
                || resolve(repo, first).is_some_and(|id| repo.read_kind(&id, Kind::Commit).is_ok());
            if is_rev && positional.len() == 1 {
                return switch_to(sh, repo, "checkout", Some(first), o, io);
            }
            if is_rev {
                return checkout_paths(repo, cwd, Some(first), &positional[1..], !o.quiet, io);
            }
            if positional.len() == 1 && remote_guess(repo, first).is_some() {
                return switch_to(sh, repo, "checkout", Some(first), o, io);
            }
            // `-q`: without git's count of the paths checked out.
            checkout_paths(repo, cwd, None, &positional, !o.quiet, io)
        }
    }
}

/// Switches HEAD, the index and the work tree to `target` (a branch, `-`, a commit), or to
/// a new branch at it.
fn switch_to(
    sh: &dyn Ctx,
    repo: &Repo,
    cmd: &str,
    target: Option<&str>,
    o: &Switch,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (old_ref, old_id) = repo.head();
    let is_switch = cmd == "switch";
    let target = match target {
        Some("-") => Some(previous(repo, 1).ok_or_else(|| {
            if is_switch {
                "fatal: invalid reference: @{-1}".to_string()
            } else {
                "error: pathspec '-' did not match any file(s) known to git".to_string()
            }
        })?),
        t => t.map(str::to_string),
    };
    // The branch HEAD will name (None: detached) and the commit it will be at.
    let mut branch: Option<String> = None;
    let mut create: Option<NewBranch> = None;
    let new_id: Option<Oid>;
    let commit_of = |rev: &str| resolve_commit(repo, rev);
    if let Some((name, reset)) = &o.new_branch {
        if !valid_branch(name) {
            return Err(format!(
                "fatal: '{name}' is not a valid branch name\nhint: See `man git check-ref-format`\nhint: Disable this message with \"git config advice.refSyntax false\""
            ));
        }
        let exists = repo.resolve_ref(&format!("refs/heads/{name}")).is_some();
        if exists && !reset {
            return Err(format!("fatal: a branch named '{name}' already exists"));
        }
        let start = target.clone().unwrap_or_else(|| "HEAD".into());
        new_id = match commit_of(&start) {
            Some(id) => Some(id),
            None if start == "HEAD" && old_id.is_none() => None,
            None => {
                return Err(format!(
                    "fatal: '{start}' is not a commit and a branch '{name}' cannot be created from it"
                ));
            }
        };
        // A start on a remote-tracking branch sets it as the upstream (git's default).
        let upstream = if o.track != Some(false) {
            start
                .strip_prefix("refs/remotes/")
                .or(Some(start.as_str()))
                .and_then(|s| {
                    let (remote, b) = s.split_once('/')?;
                    repo.resolve_ref(&format!("refs/remotes/{s}"))?;
                    repo.config(&format!("remote.{remote}.fetch"))?;
                    Some((remote.to_string(), format!("refs/heads/{b}")))
                })
        } else {
            None
        };
        create = Some((name.clone(), exists, upstream));
        branch = Some(name.clone());
    } else {
        let t = target.clone().unwrap_or_else(|| "HEAD".into());
        let local = format!("refs/heads/{t}");
        if !o.detach && t != "HEAD" && repo.resolve_ref(&local).is_some() {
            branch = Some(t.clone());
            new_id = repo.resolve_ref(&local);
        } else if let Some(id) = (!(o.detach && t == "HEAD" && old_id.is_none()))
            .then(|| commit_of(&t))
            .flatten()
        {
            if !o.detach && t != "HEAD" && is_switch {
                let what = if repo.resolve_ref(&format!("refs/tags/{t}")).is_some() {
                    "tag"
                } else if repo.resolve_ref(&format!("refs/remotes/{t}")).is_some() {
                    "remote branch"
                } else {
                    "commit"
                };
                return Err(format!(
                    "fatal: a branch is expected, got {what} '{t}'\nhint: If you want to detach HEAD at the commit, try again with the --detach option."
                ));
            }
            new_id = Some(id);
            if t == "HEAD" && !o.detach {
                branch = old_ref
                    .as_deref()
                    .map(|r| r.trim_start_matches("refs/heads/").to_string());
            }
        } else if t == "HEAD" && old_id.is_none() && !o.detach {
            // An unborn branch: nothing to switch.
            return Ok(0);
        } else if let Some((remote, r)) = (o.track != Some(false))
            .then(|| remote_guess(repo, &t))
            .flatten()
        {
            new_id = repo.resolve_ref(&r);
            create = Some((t.clone(), false, Some((remote, format!("refs/heads/{t}")))));
            branch = Some(t.clone());
        } else if is_switch {
            return Err(format!("fatal: invalid reference: {t}"));
        } else {
            return Err(format!(
                "error: pathspec '{t}' did not match any file(s) known to git"
            ));
        }
    }

    // The work tree and index, moved first: a refusal leaves HEAD where it was.
    let from = head_files(repo, old_id)?;
    let to = head_files(repo, new_id)?;
    let mut index = index_map(repo)?;
    if o.force {
        hard_reset(repo, &work, old_id, &to, &mut index)?;
    } else {
        let conflicts = crate::plumbing::index::load_conflicts(repo)?;
        if !conflicts.is_empty() {
            let mut names: Vec<String> = conflicts
                .iter()
                .map(|e| format!("{}: needs merge\n", String::from_utf8_lossy(&e.path)))
                .collect();
            names.dedup();
            io.print(&names.concat());
            return Err("error: you need to resolve your current index first".into());
        }
        two_way(repo, &work, &from, &to, &mut index, false, "checkout")?;
        save_index(repo, &index)?;
    }
    let mut out = String::new();
    let mut err = String::new();
    if !o.quiet && !o.force {
        out.push_str(&local_changes(&work, &to, &index));
    }

    let old_desc = match (&old_ref, old_id) {
        (Some(r), _) => r.trim_start_matches("refs/heads/").to_string(),
        (None, Some(id)) => hex(&id),
        (None, None) => "HEAD".into(),
    };
    let new_desc;
    if let Some((name, existed, upstream)) = &create {
        let r = format!("refs/heads/{name}");
        if let Some(id) = new_id {
            write_file(&repo.git_dir.join(&r), format!("{}\n", hex(&id)).as_bytes())?;
        }
        if let Some((remote, merge)) = upstream {
            set_upstream(repo, name, remote, merge)?;
            if !o.quiet {
                out.push_str(&format!(
                    "branch '{name}' set up to track '{remote}/{}'.\n",
                    merge.trim_start_matches("refs/heads/")
                ));
            }
        }
        new_desc = name.clone();
        let _ = existed;
    } else {
        // What was asked for, as typed; checkout of HEAD itself records the commit.
        new_desc = match target.as_deref() {
            None | Some("HEAD") => hex(&new_id.unwrap_or([0; 20])),
            Some(t) => t.to_string(),
        };
    }
    let head_text = match &branch {
        Some(b) => format!("ref: refs/heads/{b}\n"),
        None => format!("{}\n", hex(&new_id.unwrap_or([0; 20]))),
    };
    // Leaving a detached HEAD: where it was, or the commits it leaves behind.
    if old_ref.is_none()
        && let Some(old) = old_id
        && !o.quiet
        && new_id != Some(old)
    {
        err.push_str(&format!(
            "Previous HEAD position was {}\n",
            describe(repo, &old)?
        ));
    }
    write_file(&repo.git_dir.join("HEAD"), head_text.as_bytes())?;
    if let Some(id) = new_id
        && (target.is_some() || o.detach || create.is_some())
    {
        reflog(
            sh,
            repo,
            old_id,
            id,
            &format!("checkout: moving from {old_desc} to {new_desc}"),
        );
    }
    if !o.quiet {
        match (&branch, &create) {
            (Some(b), Some((_, true, _)))
                if old_ref.as_deref() == Some(&format!("refs/heads/{b}")) =>
            {
                err.push_str(&format!("Reset branch '{b}'\n"))
            }
            (Some(b), Some((_, true, _))) => {
                err.push_str(&format!("Switched to and reset branch '{b}'\n"))
            }
            (Some(b), Some(_)) => err.push_str(&format!("Switched to a new branch '{b}'\n")),
            (Some(b), None) if old_ref.as_deref() == Some(&format!("refs/heads/{b}")) => {
                if target.as_deref() != Some("HEAD") {
                    err.push_str(&format!("Already on '{b}'\n"));
                }
            }
            (Some(b), None) => err.push_str(&format!("Switched to branch '{b}'\n")),
            (None, _) => {
                if let Some(id) = new_id {
                    if old_ref.is_some()
                        && !o.detach
                        && repo.config("advice.detachedHead").as_deref() != Some("false")
                    {
                        err.push_str(&format!(
                            "Note: switching to '{}'.\n\n{DETACHED_ADVICE}",
                            target.as_deref().unwrap_or("HEAD")
                        ));
                    }
                    err.push_str(&format!("HEAD is now at {}\n", describe(repo, &id)?));
                }
            }
        }
        // A branch just made says whom it tracks instead.
        if let Some(b) = &branch
            && create.is_none()
            && let Some(u) = upstream_of(repo, b)
        {
            out.push_str(&tracking_text(&u, tracking_of(repo, Some(&u), new_id)?));
        }
    }
    io.print(&out);
    io.eprint(&err);
    Ok(0)
}

/// `checkout [REV] [--] PATHS`: the files from the index, or from REV into the index too.
fn checkout_paths(
    repo: &Repo,
    cwd: &Path,
    source: Option<&str>,
    specs: &[String],
    count: bool,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    if specs.is_empty() {
        return Err("fatal: you must specify path(s) to restore".into());
    }
    let mut index = index_map(repo)?;
    let from_tree = match source {
        Some(rev) => {
            let id =
                resolve(repo, rev).ok_or_else(|| format!("fatal: invalid reference: {rev}"))?;
            let tree = read_commit(repo, &repo.peel_commit(&id)?)?.tree;
            Some((tree, tree_files(repo, tree)?))
        }
        None => None,
    };
    let n = match &from_tree {
        Some((_, files)) => {
            let hits = match_specs(&work, cwd, specs, files.keys(), &did_not_match)?;
            for p in &hits {
                let (m, o) = files[p];
                let e = write_entry(repo, &work, p, m, o)?;
                index.insert(p.clone(), e);
            }
            hits.len()
        }
        None => {
            let hits = match_specs(&work, cwd, specs, index.keys(), &did_not_match)?;
            let mut n = 0;
            let mut tree = TreeStat::new(&work);
            for p in &hits {
                let e = index[p].clone();
                if worktree_change(&mut tree, &e).is_some() {
                    let fresh = write_entry(repo, &work, p, e.mode, e.oid)?;
                    index.insert(p.clone(), fresh);
                    n += 1;
                }
            }
            n
        }
    };
    save_index(repo, &index)?;
    if count {
        let from = match &from_tree {
            Some((tree, _)) => abbrev(tree),
            None => "the index".into(),
        };
        io.eprint(&format!(
            "Updated {n} path{} from {from}\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    Ok(0)
}

/// `git restore [--source=REV] [--staged] [--worktree] [--] PATHS`.
#[derive(Default)]
struct Restore {
    staged: bool,
    worktree: bool,
    source: Option<String>,
}

/// restore's options, as git's `builtin/checkout.c` declares them.
const RESTORE: Spec<Restore> = Spec {
    name: "restore",
    usage: "git restore [<options>] [--source=<branch>] <file>...",
    options: &[
        Opt::flag("-S/--staged", |o| o.staged = true),
        Opt::flag("-W/--worktree", |o| o.worktree = true),
        Opt::value("-s/--source", |o, v| set(&mut o.source, Some(v))),
        Opt::ignored("-q/--quiet"),
        Opt::ignored("--progress"),
        Opt::ignored("--no-progress"),
    ],
    refused: "-p --patch -m --merge --ours --theirs --conflict --overlay --no-overlay --pathspec-from-file --recurse-submodules --ignore-unmerged",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn restore(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Restore::default();
    let specs = match RESTORE.parse(args, &mut o, io) {
        Ok(specs) => specs,
        Err(code) => return code,
    };
    let Restore {
        staged,
        mut worktree,
        source,
    } = o;
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if specs.is_empty() {
        io.eprint("fatal: you must specify path(s) to restore\n");
        return 128;
    }
    if !staged {
        worktree = true;
    }
    match restore_paths(&repo, &cwd, source.as_deref(), staged, worktree, &specs) {
        Ok(()) => 0,
        Err(e) => super::args::fail(io, &e),
    }
}

fn restore_paths(
    repo: &Repo,
    cwd: &Path,
    source: Option<&str>,
    staged: bool,
    worktree: bool,
    specs: &[String],
) -> Result<(), String> {
    let work = work_of(repo)?;
    let mut index = index_map(repo)?;
    // The source: --source, else HEAD for the index, else the index for the work tree.
    let src: Option<Files> = match source {
        Some(rev) => Some(commit_files(repo, rev)?),
        None if staged => Some(head_files(repo, repo.head().1)?),
        None => None,
    };
    let src_files: Files = match &src {
        Some(f) => f.clone(),
        None => index
            .iter()
            .map(|(p, e)| (p.clone(), (e.mode, e.oid)))
            .collect(),
    };
    let mut candidates: BTreeSet<Vec<u8>> = src_files.keys().cloned().collect();
    if staged {
        candidates.extend(index.keys().cloned());
    }
    let hits = match_specs(&work, cwd, specs, candidates.iter(), &did_not_match)?;
    let mut tree = TreeStat::new(&work);
    for p in &hits {
        let want = src_files.get(p).copied();
        if staged {
            match want {
                Some((m, o)) => {
                    let e = entry_from_tree(p, m, o, index.get(p));
                    index.insert(p.clone(), e);
                }
                None => {
                    index.remove(p);
                }
            }
        }
        if worktree {
            match want {
                Some((m, o)) => {
                    let same = index.get(p).is_some_and(|e| {
                        (e.mode, e.oid) == (m, o) && worktree_change(&mut tree, e).is_none()
                    });
                    if !same {
                        let e = write_entry(repo, &work, p, m, o)?;
                        if index
                            .get(p)
                            .is_some_and(|old| (old.mode, old.oid) == (m, o))
                        {
                            index.insert(p.clone(), e);
                        }
                    }
                }
                None => remove_entry(&work, p),
            }
        }
    }
    save_index(repo, &index)
}

/// The files of the commit `rev` names.
fn commit_files(repo: &Repo, rev: &str) -> Result<Files, String> {
    let id = resolve(repo, rev).ok_or_else(|| format!("fatal: could not resolve {rev}"))?;
    tree_files(repo, read_commit(repo, &repo.peel_commit(&id)?)?.tree)
}

/// The work tree's changes against the index, as reset lists them (`M\tpath`).
fn unstaged(work: &Path, index: &Index) -> String {
    let mut out = String::new();
    let mut tree = TreeStat::new(work);
    for (p, e) in index {
        if let Some(c) = worktree_change(&mut tree, e) {
            let c = if c == 'T' {
                'T'
            } else if c == 'D' {
                'D'
            } else {
                'M'
            };
            out.push_str(&format!("{c}\t{}\n", String::from_utf8_lossy(p)));
        }
    }
    out
}

/// `git reset [--soft | --mixed | --hard | --merge] [REV]` and `git reset [REV] [--] PATHS`.
#[derive(Default)]
struct Reset {
    mode: Option<&'static str>,
    quiet: bool,
}

/// reset's options, as git's `builtin/reset.c` declares them.
const RESET: Spec<Reset> = Spec {
    name: "reset",
    usage: "git reset [--mixed | --soft | --hard | --merge | --keep] [-q] [<commit>]\n   or: git reset [-q] [<tree-ish>] [--] <pathspec>...",
    options: &[
        Opt::flag("--soft", |o| o.mode = Some("soft")),
        Opt::flag("--mixed", |o| o.mode = Some("mixed")),
        Opt::flag("--hard", |o| o.mode = Some("hard")),
        Opt::flag("--merge", |o| o.mode = Some("merge")),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
    ],
    refused: "--keep -p --patch -N --intent-to-add --pathspec-from-file --recurse-submodules",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn reset(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Reset::default();
    let (positional, dashdash) = match RESET.parse_split(args, &mut o, io) {
        Ok(split) => split,
        Err(code) => return code,
    };
    let Reset { mode, quiet } = o;
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match do_reset(sh, &repo, &cwd, mode, quiet, positional, dashdash, io) {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn do_reset(
    sh: &dyn Ctx,
    repo: &Repo,
    cwd: &Path,
    mode: Option<&str>,
    quiet: bool,
    positional: Vec<String>,
    dashdash: Option<Vec<String>>,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let commit_of = |rev: &str| resolve_commit(repo, rev);
    let lenient = dashdash.is_some();
    // The first operand is the commit when it names one (or before `--`).
    let (rev, specs): (Option<String>, Vec<String>) = match dashdash {
        Some(paths) => {
            if positional.len() > 1 {
                return Err(format!(
                    "fatal: ambiguous argument '{}': unknown revision or path not in the working tree.",
                    positional[1]
                ));
            }
            (positional.first().cloned(), paths)
        }
        None => match positional.split_first() {
            Some((first, rest)) if commit_of(first).is_some() => {
                (Some(first.clone()), rest.to_vec())
            }
            Some(_) => {
                // Not a commit: every operand must then be a path in the work tree.
                if let Some(bad) = positional.iter().find(|p| {
                    let p = cwd.join(p);
                    p.symlink_metadata().is_err()
                }) {
                    return Err(ambiguous(bad));
                }
                (None, positional.clone())
            }
            None => (None, Vec::new()),
        },
    };
    let head = repo.head().1;
    let target = match &rev {
        Some(r) => Some(commit_of(r).ok_or_else(|| ambiguous(r))?),
        None => head,
    };
    let to = head_files(repo, target)?;
    let mut index = index_map(repo)?;
    if !specs.is_empty() {
        if let Some(m) = mode.filter(|m| *m != "mixed") {
            return Err(format!("fatal: Cannot do {m} reset with paths."));
        }
        let mut candidates: BTreeSet<Vec<u8>> = to.keys().cloned().collect();
        candidates.extend(index.keys().cloned());
        // After `--` a path that matches nothing is no error (there is nothing to reset).
        let hits = if lenient {
            let mut all = BTreeSet::new();
            for s in &specs {
                if let Ok(h) = match_specs(
                    &work,
                    cwd,
                    std::slice::from_ref(s),
                    candidates.iter(),
                    &ambiguous,
                ) {
                    all.extend(h);
                }
            }
            all
        } else {
            match_specs(&work, cwd, &specs, candidates.iter(), &ambiguous)?
        };
        for p in &hits {
            match to.get(p) {
                Some(&(m, o)) => {
                    let e = entry_from_tree(p, m, o, index.get(p));
                    index.insert(p.clone(), e);
                }
                None => {
                    index.remove(p);
                }
            }
        }
        save_index(repo, &index)?;
        let list = unstaged(&work, &index);
        if !quiet && !list.is_empty() {
            io.print(&format!("Unstaged changes after reset:\n{list}"));
        }
        return Ok(0);
    }
    let Some(target) = target else {
        // An unborn branch: the index empties (mixed), nothing else moves.
        if mode != Some("soft") {
            index.clear();
            save_index_resolved(repo, &index)?;
        }
        return Ok(0);
    };
    match mode.unwrap_or("mixed") {
        "soft" => {}
        "hard" => hard_reset(repo, &work, head, &to, &mut index)?,
        "merge" => merge_reset(repo, &work, &to, rev.as_deref().unwrap_or("HEAD"))?,
        _ => {
            let old = std::mem::take(&mut index);
            for (p, &(m, o)) in &to {
                index.insert(p.clone(), entry_from_tree(p, m, o, old.get(p)));
            }
            save_index_resolved(repo, &index)?;
        }
    }
    crate::plumbing::state::clear_state(repo);
    // git keeps where HEAD was in ORIG_HEAD, whatever the mode.
    if let Some(h) = head {
        write_file(
            &repo.git_dir.join("ORIG_HEAD"),
            format!("{}\n", hex(&h)).as_bytes(),
        )?;
    }
    let (head_ref, _) = repo.head();
    let r = head_ref.unwrap_or_else(|| "HEAD".into());
    write_file(
        &repo.git_dir.join(&r),
        format!("{}\n", hex(&target)).as_bytes(),
    )?;
    reflog(
        sh,
        repo,
        head,
        target,
        &format!("reset: moving to {}", rev.as_deref().unwrap_or("HEAD")),
    );
    if !quiet {
        match mode.unwrap_or("mixed") {
            "hard" => io.print(&format!("HEAD is now at {}\n", describe(repo, &target)?)),
            "mixed" => {
                let list = unstaged(&work, &index);
                if !list.is_empty() {
                    io.print(&format!("Unstaged changes after reset:\n{list}"));
                }
            }
            _ => {}
        }
    }
    Ok(0)
}
