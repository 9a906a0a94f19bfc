//! Moving the work tree and the index between commits, as git's two-way merge does:
//! `checkout`/`switch` to another branch or commit (local changes carried when the two
//! commits agree on a path, refused with git's message when they would be overwritten),
//! `checkout [REV] -- PATHS`, `restore`, and `reset` (`--soft`, `--mixed`, `--hard`,
//! `--merge`, paths).
//! Every check runs before the first file is written, so a refused command changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::diff::ambiguous;
use super::object::{Kind, Oid, hex};
use super::porcelain::{
    abbrev, head_files, read_commit, resolve, resolve_commit, subject, tracking_of, tracking_text,
    tree_files, upstream_of, worktree_change,
};
use super::repo::{IndexEntry, Repo, mtime_of};
use super::write::{
    index_map, save_index, save_index_resolved, spec_path, valid_branch, write_file,
};
use super::{Args, usage_error};
use sh_utility::Ctx;
use sh_utility::io::Io;
use sh_utility::sys::TreeStat;

/// A tree's files: path -> (mode, id).
pub(super) type Files = BTreeMap<Vec<u8>, (u32, Oid)>;
/// The index by path.
pub(super) type Index = BTreeMap<Vec<u8>, IndexEntry>;

pub(super) fn not_a_repo(io: &Io) -> i32 {
    io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
    128
}

/// The repository's work tree, or git's refusal for a bare one.
pub(super) fn work_of(repo: &Repo) -> Result<PathBuf, String> {
    repo.work
        .clone()
        .ok_or_else(|| "fatal: this operation must be run in a work tree".to_string())
}

fn fs_path(work: &Path, p: &[u8]) -> PathBuf {
    work.join(String::from_utf8_lossy(p).as_ref())
}

/// Writes blob `oid` at `p` as a file of `mode` (a symlink for 120000), replacing what is
/// there, and returns its index entry with the stat data of the file written.
pub(super) fn write_entry(
    repo: &Repo,
    work: &Path,
    p: &[u8],
    mode: u32,
    oid: Oid,
) -> Result<IndexEntry, String> {
    let path = fs_path(work, p);
    let name = String::from_utf8_lossy(p).into_owned();
    let fail = |e: std::io::Error| format!("error: unable to create file {name}: {e}");
    if mode == 0o160000 {
        std::fs::create_dir_all(&path).map_err(fail)?;
        return Ok(IndexEntry {
            path: p.to_vec(),
            mode,
            oid,
            size: 0,
            mtime: (0, 0),
            stage: 0,
        });
    }
    let data = repo.read_kind(&oid, Kind::Blob)?;
    if let Ok(meta) = path.symlink_metadata() {
        if meta.is_dir() {
            std::fs::remove_dir(&path).map_err(fail)?;
        } else {
            std::fs::remove_file(&path).map_err(fail)?;
        }
    }
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(fail)?;
    }
    let meta = if mode == 0o120000 {
        sh_utility::sys::symlink(&String::from_utf8_lossy(&data), &path).map_err(fail)?;
        path.symlink_metadata().map_err(fail)?
    } else {
        std::fs::write(&path, &data[..]).map_err(fail)?;
        path.metadata().map_err(fail)?
    };
    Ok(IndexEntry {
        path: p.to_vec(),
        mode,
        oid,
        size: meta.len() as u32,
        mtime: mtime_of(&meta),
        stage: 0,
    })
}

/// Removes the file at `p` and the directories it leaves empty (never the top).
pub(super) fn remove_entry(work: &Path, p: &[u8]) {
    let path = fs_path(work, p);
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir(&path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&path);
        }
        Err(_) => {}
    }
    let mut d = path.parent();
    while let Some(dir) = d {
        if dir == work || std::fs::remove_dir(dir).is_err() {
            break;
        }
        d = dir.parent();
    }
}

/// An index entry for a tree entry: the old entry's stat data when it holds the same
/// content, none otherwise (status then compares contents).
fn entry_from_tree(p: &[u8], mode: u32, oid: Oid, old: Option<&IndexEntry>) -> IndexEntry {
    match old {
        Some(e) if e.mode == mode && e.oid == oid => e.clone(),
        _ => IndexEntry {
            path: p.to_vec(),
            mode,
            oid,
            size: 0,
            mtime: (0, 0),
            stage: 0,
        },
    }
}

/// Whether the work tree's file differs from its index entry in content or type (a
/// missing file does not count: there is nothing to lose).
fn modified(tree: &mut TreeStat, e: &IndexEntry) -> bool {
    matches!(worktree_change(tree, e), Some('M') | Some('T'))
}

fn as_pair(e: Option<&IndexEntry>) -> Option<(u32, Oid)> {
    e.map(|e| (e.mode, e.oid))
}

/// Moves the index and the work tree from `from` (HEAD's files) to `to`. Without `force`,
/// a path the two agree on keeps its local changes, and a path that differs must be clean
/// (index and file as in `from`, or already as in `to`), else nothing is changed and git's
/// message naming the paths is the error. With `force` (`reset --hard`, `checkout -f`)
/// every tracked path becomes what `to` has.
pub(super) fn two_way(
    repo: &Repo,
    work: &Path,
    from: &Files,
    to: &Files,
    index: &mut Index,
    force: bool,
    verb: &str,
) -> Result<(), String> {
    let mut paths: BTreeSet<Vec<u8>> = from.keys().cloned().collect();
    paths.extend(to.keys().cloned());
    paths.extend(index.keys().cloned());
    let mut writes: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut removes: Vec<Vec<u8>> = Vec::new();
    let mut local: Vec<&[u8]> = Vec::new();
    let mut untracked: Vec<&[u8]> = Vec::new();
    let mut tree = TreeStat::new(work);
    for p in &paths {
        let (h, t, i) = (from.get(p), to.get(p), index.get(p));
        if force {
            match t {
                Some(&(m, o))
                    if as_pair(i) != Some((m, o))
                        || i.is_some_and(|e| worktree_change(&mut tree, e).is_some()) =>
                {
                    writes.push((p.clone(), m, o));
                }
                Some(_) => {}
                None if i.is_some() || h.is_some() => removes.push(p.clone()),
                None => {}
            }
            continue;
        }
        if h == t || as_pair(i) == t.copied() {
            continue;
        }
        let clean = as_pair(i) == h.copied()
            && match i {
                Some(e) => !modified(&mut tree, e),
                None => fs_path(work, p).symlink_metadata().is_err(),
            };
        if !clean {
            if i.is_none() && h.is_none() {
                let ign = super::porcelain::Ignores::new(repo, work);
                if !ign.ignored(&fs_path(work, p), false) {
                    untracked.push(p);
                    continue;
                }
            } else {
                local.push(p);
                continue;
            }
        }
        match t {
            Some(&(m, o)) => writes.push((p.clone(), m, o)),
            None => removes.push(p.clone()),
        }
    }
    if !local.is_empty() || !untracked.is_empty() {
        let list = |v: &[&[u8]]| -> String {
            v.iter()
                .map(|p| format!("\t{}\n", String::from_utf8_lossy(p)))
                .collect()
        };
        let mut msg = String::new();
        if !local.is_empty() {
            let advice = if verb == "checkout" {
                "Please commit your changes or stash them before you switch branches."
            } else {
                "Please commit your changes or stash them before you merge."
            };
            msg.push_str(&format!(
                "error: Your local changes to the following files would be overwritten by {verb}:\n{}{advice}\n",
                list(&local)
            ));
        }
        if !untracked.is_empty() {
            let advice = if verb == "checkout" {
                "Please move or remove them before you switch branches."
            } else {
                "Please move or remove them before you merge."
            };
            msg.push_str(&format!(
                "error: The following untracked working tree files would be overwritten by {verb}:\n{}{advice}\n",
                list(&untracked)
            ));
        }
        msg.push_str("Aborting");
        return Err(msg);
    }
    for p in removes {
        remove_entry(work, &p);
        index.remove(&p);
    }
    for (p, m, o) in writes {
        let e = write_entry(repo, work, &p, m, o)?;
        index.insert(p, e);
    }
    Ok(())
}

/// What differs between the new HEAD's files and the work tree after a switch, as
/// checkout lists it (`M\tpath`).
fn local_changes(work: &Path, to: &Files, index: &Index) -> String {
    let mut paths: BTreeSet<&Vec<u8>> = to.keys().collect();
    paths.extend(index.keys());
    let mut out = String::new();
    let mut tree = TreeStat::new(work);
    for p in paths {
        let c = match (to.get(p), index.get(p)) {
            (Some(_), None) => Some('D'),
            (None, Some(_)) => Some('A'),
            (Some(t), Some(e)) if (e.mode, e.oid) != *t => Some('M'),
            (Some(_), Some(e)) => worktree_change(&mut tree, e),
            (None, None) => None,
        };
        if let Some(c) = c {
            out.push_str(&format!("{c}\t{}\n", String::from_utf8_lossy(p)));
        }
    }
    out
}

/// Appends to HEAD's reflog, as git does on every move of HEAD (`checkout: moving from A
/// to B` is how `@{-1}` and "HEAD detached at" find their way back).
pub(super) fn reflog(sh: &dyn Ctx, repo: &Repo, old: Option<Oid>, new: Oid, msg: &str) {
    let ident = super::write::ident(sh, repo, "COMMITTER").unwrap_or_else(|_| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!("agent <agent@burrow> {now} +0000")
    });
    let line = format!(
        "{} {} {ident}\t{msg}\n",
        hex(&old.unwrap_or([0; 20])),
        hex(&new)
    );
    let path = repo.git_dir.join("logs/HEAD");
    let mut text = std::fs::read(&path).unwrap_or_default();
    text.extend_from_slice(line.as_bytes());
    let _ = write_file(&path, &text);
}

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
    text = super::repo::config_set(&text, &format!("branch.{branch}.remote"), remote);
    text = super::repo::config_set(&text, &format!("branch.{branch}.merge"), merge);
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

pub fn checkout_or_switch(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let is_switch = cmd == "switch";
    let usage = if is_switch {
        "git switch [<options>] [<branch>]"
    } else {
        "git checkout [<options>] <branch>\n   or: git checkout [<options>] [<branch>] -- <file>..."
    };
    let mut o = Switch::default();
    let mut positional: Vec<String> = Vec::new();
    let mut dashdash: Option<Vec<String>> = None;
    let mut a = Args::with_values(args, if is_switch { "cC" } else { "bB" });
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-b" | "-c" | "--create" if (arg == "-b") != is_switch => {
                a.value(&arg).map(|v| o.new_branch = Some((v, false)))
            }
            "-B" | "-C" | "--force-create" if (arg == "-B") != is_switch => {
                a.value(&arg).map(|v| o.new_branch = Some((v, true)))
            }
            "-f" | "--force" | "--discard-changes" => a.flag("force").map(|_| o.force = true),
            "-q" | "--quiet" => a.flag("quiet").map(|_| o.quiet = true),
            "--detach" => a.flag("detach").map(|_| o.detach = true),
            "-d" if is_switch => a.flag("detach").map(|_| o.detach = true),
            "-t" | "--track" => a.flag("track").map(|_| o.track = Some(true)),
            "--no-track" => a.flag("no-track").map(|_| o.track = Some(false)),
            "--progress" | "--no-progress" => Ok(()),
            "--" => {
                dashdash = Some(a.rest());
                Ok(())
            }
            "-m"
            | "--merge"
            | "-p"
            | "--patch"
            | "--orphan"
            | "--ours"
            | "--theirs"
            | "--conflict"
            | "-l"
            | "--guess"
            | "--no-guess"
            | "--overlay"
            | "--no-overlay"
            | "--recurse-submodules"
            | "--pathspec-from-file"
            | "--ignore-other-worktrees" => {
                io.eprint(&format!(
                    "fatal: 'git {cmd} {arg}' is not supported in burrow\n"
                ));
                return 128;
            }
            s if s.starts_with('-') && s != "-" => Err(a.unknown(s)),
            _ => {
                positional.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, usage);
        }
    }
    let (repo, cwd) = match super::open_repo(sh, io) {
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
        Err(e) => super::fail(io, &e),
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
                return checkout_paths(repo, cwd, Some(first), &positional[1..], true, io);
            }
            if positional.len() == 1 && remote_guess(repo, first).is_some() {
                return switch_to(sh, repo, "checkout", Some(first), o, io);
            }
            checkout_paths(repo, cwd, None, &positional, true, io)
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
        let conflicts = super::porcelain::load_conflicts(repo)?;
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

/// Tracked paths matched by `specs` (relative to `cwd`; globs as git's pathspecs), from
/// `candidates`. Fails on the first spec that matches nothing.
pub(super) fn match_specs<'a, I>(
    work: &Path,
    cwd: &Path,
    specs: &[String],
    candidates: I,
    unmatched: &dyn Fn(&str) -> String,
) -> Result<BTreeSet<Vec<u8>>, String>
where
    I: Iterator<Item = &'a Vec<u8>> + Clone,
{
    let mut out = BTreeSet::new();
    for s in specs {
        let p = spec_path(work, cwd, s)?;
        let glob = s.contains(['*', '?', '[']);
        let re = if glob {
            sh_utility::pattern::pattern_regex(&String::from_utf8_lossy(&p))
        } else {
            None
        };
        let mut any = false;
        for c in candidates.clone() {
            let hit = p.is_empty()
                || *c == p
                || (c.starts_with(&p) && c.get(p.len()) == Some(&b'/'))
                || re
                    .as_ref()
                    .is_some_and(|r| r.is_match(&String::from_utf8_lossy(c)));
            if hit {
                any = true;
                out.insert(c.clone());
            }
        }
        if !any {
            return Err(unmatched(s));
        }
    }
    Ok(out)
}

fn did_not_match(s: &str) -> String {
    format!("error: pathspec '{s}' did not match any file(s) known to git")
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
pub fn restore(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git restore [<options>] [--source=<branch>] <file>...";
    let mut staged = false;
    let mut worktree = false;
    let mut source: Option<String> = None;
    let mut specs: Vec<String> = Vec::new();
    let mut a = Args::with_values(args, "s");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-S" | "--staged" => a.flag("staged").map(|_| staged = true),
            "-W" | "--worktree" => a.flag("worktree").map(|_| worktree = true),
            "-s" | "--source" => a.value("source").map(|v| source = Some(v)),
            "-q" | "--quiet" | "--progress" | "--no-progress" => Ok(()),
            "--" => {
                specs.extend(a.rest());
                Ok(())
            }
            "-p"
            | "--patch"
            | "-m"
            | "--merge"
            | "--ours"
            | "--theirs"
            | "--conflict"
            | "--overlay"
            | "--no-overlay"
            | "--pathspec-from-file"
            | "--recurse-submodules"
            | "--ignore-unmerged" => {
                return super::not_here(io, "restore", &arg);
            }
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                specs.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, USAGE);
        }
    }
    let (repo, cwd) = match super::open_repo(sh, io) {
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
        Err(e) => super::fail(io, &e),
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

/// The index and work tree made `to`'s, from HEAD at `head`: local changes and conflicts
/// dropped (a conflicted file that `to` does not have is removed).
pub(super) fn hard_reset(
    repo: &Repo,
    work: &Path,
    head: Option<Oid>,
    to: &Files,
    index: &mut Index,
) -> Result<(), String> {
    for e in super::porcelain::load_conflicts(repo)? {
        if !to.contains_key(&e.path) && !index.contains_key(&e.path) {
            remove_entry(work, &e.path);
        }
    }
    let from = head_files(repo, head)?;
    two_way(repo, work, &from, to, index, true, "reset")?;
    save_index_resolved(repo, index)
}

/// `reset --merge` to `to`, as git's one-way merge runs it: a path whose index entry
/// already is `to`'s keeps its entry and its file, local changes and all; any other path
/// (conflicts included) becomes `to`'s, which git refuses, changing nothing, when its file
/// has unstaged changes or an untracked file stands where `to` puts one. Only the first
/// such path is named, with `rev` (what the reset was asked for) in the fatal line.
pub(super) fn merge_reset(repo: &Repo, work: &Path, to: &Files, rev: &str) -> Result<(), String> {
    let index = index_map(repo)?;
    let conflicted: BTreeSet<Vec<u8>> = super::porcelain::load_conflicts(repo)?
        .into_iter()
        .map(|e| e.path)
        .collect();
    let mut paths: BTreeSet<&Vec<u8>> = to.keys().collect();
    paths.extend(index.keys());
    paths.extend(conflicted.iter());
    let refuse =
        |why: String| format!("{why}\nfatal: Could not reset index file to revision '{rev}'.");
    let mut tree = TreeStat::new(work);
    let mut ign: Option<super::porcelain::Ignores> = None;
    let mut writes: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut removes: Vec<Vec<u8>> = Vec::new();
    let mut next = Index::new();
    for p in paths {
        let t = to.get(p).copied();
        let name = String::from_utf8_lossy(p);
        match index.get(p) {
            Some(e) if t == Some((e.mode, e.oid)) => {
                next.insert(p.clone(), e.clone());
                continue;
            }
            Some(e) => {
                if modified(&mut tree, e) {
                    return Err(refuse(format!(
                        "error: Entry '{name}' not uptodate. Cannot merge."
                    )));
                }
            }
            None if conflicted.contains(p) => {}
            None => {
                let path = fs_path(work, p);
                let there = path.symlink_metadata().is_ok_and(|m| !m.is_dir());
                if there
                    && !ign
                        .get_or_insert_with(|| super::porcelain::Ignores::new(repo, work))
                        .ignored(&path, false)
                {
                    return Err(refuse(format!(
                        "error: Untracked working tree file '{name}' would be overwritten by merge."
                    )));
                }
            }
        }
        match t {
            Some((m, o)) => writes.push((p.clone(), m, o)),
            None => removes.push(p.clone()),
        }
    }
    for p in removes {
        remove_entry(work, &p);
    }
    for (p, m, o) in writes {
        let e = write_entry(repo, work, &p, m, o)?;
        next.insert(p, e);
    }
    save_index_resolved(repo, &next)
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
pub fn reset(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git reset [--mixed | --soft | --hard | --merge | --keep] [-q] [<commit>]\n   or: git reset [-q] [<tree-ish>] [--] <pathspec>...";
    let mut mode: Option<&str> = None;
    let mut quiet = false;
    let mut positional: Vec<String> = Vec::new();
    let mut dashdash: Option<Vec<String>> = None;
    let mut a = Args::with_values(args, "");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "--soft" => a.flag("soft").map(|_| mode = Some("soft")),
            "--mixed" => a.flag("mixed").map(|_| mode = Some("mixed")),
            "--hard" => a.flag("hard").map(|_| mode = Some("hard")),
            "--merge" => a.flag("merge").map(|_| mode = Some("merge")),
            "-q" | "--quiet" => a.flag("quiet").map(|_| quiet = true),
            "--" => {
                dashdash = Some(a.rest());
                Ok(())
            }
            "--keep"
            | "-p"
            | "--patch"
            | "-N"
            | "--intent-to-add"
            | "--pathspec-from-file"
            | "--recurse-submodules" => {
                return super::not_here(io, "reset", &arg);
            }
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                positional.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, USAGE);
        }
    }
    let (repo, cwd) = match super::open_repo(sh, io) {
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
    super::merge::clear_state(repo);
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
