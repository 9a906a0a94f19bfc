//! `git stash`: `push` (`-m`, `-q`), `list`, `show` (`--stat`, `-p`), `apply`, `pop`, `drop`,
//! `clear`. A stash is the two commits git makes (the index, and the work tree with HEAD and
//! the index as parents) kept in `refs/stash` and its reflog, so native git reads burrow's
//! stashes and the reverse; applying is the three-way merge `merge` uses.

use std::collections::BTreeMap;
use std::path::Path;

use foldhash::HashSet;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, set, usage_error};
use crate::plumbing::checkout::{hard_reset, two_way, work_of};
use crate::plumbing::commit::{ident, read_commit, subject};
use crate::plumbing::index::{index_map, save_index, stage};
use crate::plumbing::merge::merge_trees;
use crate::plumbing::object::{Kind, Oid, hex, parse_hex};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::{head_files, tree_files, write_trees};
use crate::plumbing::untracked::{Ignores, Listing, untracked};
use crate::plumbing::write::{write_file, write_object};

/// The stash reflog's entries, newest first: (commit, message).
fn entries(repo: &Repo) -> Vec<(Oid, String)> {
    raw_entries(repo)
        .into_iter()
        .map(|(id, _, msg)| (id, msg))
        .collect()
}

/// Rewrites the stash reflog (newest first in `list`) and `refs/stash`.
fn save_entries(repo: &Repo, list: &[(Oid, String, String)]) -> Result<(), String> {
    let log = repo.git_dir.join("logs/refs/stash");
    if list.is_empty() {
        let _ = std::fs::remove_file(&log);
        crate::plumbing::refs::remove_ref(repo, "refs/stash");
        return Ok(());
    }
    let mut text = String::new();
    let mut prev = [0u8; 20];
    for (id, who, msg) in list.iter().rev() {
        text.push_str(&format!("{} {} {who}\t{msg}\n", hex(&prev), hex(id)));
        prev = *id;
    }
    write_file(&log, text.as_bytes())?;
    write_file(
        &repo.git_dir.join("refs/stash"),
        format!("{}\n", hex(&list[0].0)).as_bytes(),
    )
}

/// The raw reflog lines (id, identity and time, message), newest first.
fn raw_entries(repo: &Repo) -> Vec<(Oid, String, String)> {
    let text = std::fs::read_to_string(repo.git_dir.join("logs/refs/stash")).unwrap_or_default();
    let mut out: Vec<(Oid, String, String)> = text
        .lines()
        .filter_map(|l| {
            let (head, msg) = l.split_once('\t')?;
            let mut parts = head.splitn(3, ' ');
            let _old = parts.next()?;
            let new = parse_hex(parts.next()?)?;
            Some((new, parts.next()?.to_string(), msg.to_string()))
        })
        .collect();
    out.reverse();
    out
}

/// `stash@{N}` (or `N`, or nothing for 0) as an index into the entries.
fn which(arg: Option<&String>, n: usize) -> Result<usize, String> {
    let Some(a) = arg else {
        return if n == 0 {
            Err("No stash entries found.".into())
        } else {
            Ok(0)
        };
    };
    let k = a
        .strip_prefix("stash@{")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(a);
    match k.parse::<usize>() {
        Ok(i) if i < n => Ok(i),
        _ => Err(format!("error: {a} is not a valid reference")),
    }
}

/// How git names the entry dropped: as given, else (for nothing or a bare number)
/// `refs/stash@{N}`.
fn stash_name(arg: Option<&String>, i: usize) -> String {
    match arg {
        Some(a) if !a.bytes().all(|b| b.is_ascii_digit()) => a.clone(),
        _ => format!("refs/stash@{{{i}}}"),
    }
}

const USAGE: &str = "git stash list [<log-options>]\n   or: git stash show [-u | --include-untracked | --only-untracked] [<diff-options>] [<stash>]\n   or: git stash drop [-q | --quiet] [<stash>]\n   or: git stash pop [--index] [-q | --quiet] [<stash>]\n   or: git stash apply [--index] [-q | --quiet] [<stash>]\n   or: git stash clear\n   or: git stash [push [-p | --patch] [-S | --staged] [-k | --[no-]keep-index] [-q | --quiet]\n          [-u | --include-untracked] [-a | --all] [(-m | --message) <message>]\n          [--pathspec-from-file=<file> [--pathspec-file-nul]]\n          [--] [<pathspec>...]]";

/// What stash's command line asks for.
#[derive(Default)]
struct Opts {
    quiet: bool,
    message: Option<String>,
    patch: bool,
    /// `-u` (the untracked files that are not ignored) or `-a` (all of them).
    untracked: Option<Listing>,
}

/// The options git's stash has that burrow's does not implement.
const REFUSED: &str = "-u --include-untracked -a --all -k --keep-index --no-keep-index -S --staged -p --patch --index --only-untracked --pathspec-from-file";

/// Each subcommand's options, as git's `builtin/stash.c` declares them.
const PUSH: Spec<Opts> = Spec {
    name: "stash push",
    usage: USAGE,
    options: &[
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::value("-m/--message", |o, v| set(&mut o.message, Some(v))),
        Opt::flag("-u/--include-untracked", |o| {
            o.untracked = Some(Listing::Files)
        }),
        Opt::flag("--no-include-untracked", |o| o.untracked = None),
        Opt::flag("-a/--all", |o| o.untracked = Some(Listing::FilesAndIgnored)),
    ],
    refused: REFUSED,
    unknown: Unknown::Usage,
    help: &[],
};

const SHOW: Spec<Opts> = Spec {
    name: "stash show",
    usage: USAGE,
    options: &[
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("-p/--patch", |o| o.patch = true),
        Opt::ignored("--stat"),
    ],
    refused: REFUSED,
    unknown: Unknown::Usage,
    help: &[],
};

/// list, apply, pop, drop and clear.
const OTHERS: Spec<Opts> = Spec {
    name: "stash",
    usage: USAGE,
    options: &[Opt::flag("-q/--quiet", |o| o.quiet = true)],
    refused: REFUSED,
    unknown: Unknown::Usage,
    help: &[],
};

pub fn stash(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (sub, rest) = match args.split_first() {
        Some((s, r)) if !s.starts_with('-') => (s.as_str(), r),
        _ => ("push", args),
    };
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let spec = match sub {
        "push" => &PUSH,
        // `save` is push with its words as the message.
        "save" => &Spec {
            name: "stash save",
            ..PUSH
        },
        "show" => &SHOW,
        "list" => &Spec {
            name: "stash list",
            ..OTHERS
        },
        "apply" => &Spec {
            name: "stash apply",
            ..OTHERS
        },
        "pop" => &Spec {
            name: "stash pop",
            ..OTHERS
        },
        "drop" => &Spec {
            name: "stash drop",
            ..OTHERS
        },
        "clear" => &Spec {
            name: "stash clear",
            ..OTHERS
        },
        _ => &OTHERS,
    };
    let mut o = Opts::default();
    let operands = match spec.parse(rest, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let Opts {
        quiet,
        mut message,
        patch,
        untracked,
    } = o;
    let r = match sub {
        "push" | "save" => {
            if sub == "save" && !operands.is_empty() {
                message = Some(operands.join(" "));
            } else if !operands.is_empty() {
                return super::args::not_here(io, "stash push", "<pathspec>");
            }
            push(sh, &repo, message, quiet, untracked, io)
        }
        "list" => {
            let mut out = String::new();
            for (i, (_, msg)) in entries(&repo).iter().enumerate() {
                out.push_str(&format!("stash@{{{i}}}: {msg}\n"));
            }
            io.print(&out);
            Ok(0)
        }
        "show" => show(&repo, operands.first(), patch, io),
        "apply" | "pop" => apply(&repo, &cwd, operands.first(), sub == "pop", quiet, io),
        "drop" => drop(&repo, operands.first(), quiet, io),
        "clear" => save_entries(&repo, &[]).map(|_| 0),
        s => {
            io.eprint(&format!("error: unknown subcommand: `{s}'\n"));
            return usage_error(io, "", USAGE);
        }
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            if e.starts_with("fatal:") { 128 } else { 1 }
        }
    }
}

fn push(
    sh: &dyn Ctx,
    repo: &Repo,
    message: Option<String>,
    quiet: bool,
    include_untracked: Option<Listing>,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (head_ref, head) = repo.head();
    let Some(head) = head else {
        return Err("You do not have the initial commit yet".into());
    };
    let head_tree = head_files(repo, Some(head))?;
    let index = index_map(repo)?;
    // The work tree's tracked files as they are now.
    let mut worktree = index.clone();
    for (p, e) in &index {
        let path = work.join(String::from_utf8_lossy(p).as_ref());
        match stage(repo, &path, p.clone(), Some(e.mode))? {
            Some(n) => {
                worktree.insert(p.clone(), n);
            }
            None => {
                worktree.remove(p);
            }
        }
    }
    let same = |m: &crate::plumbing::index::Index| {
        m.len() == head_tree.len()
            && m.iter()
                .all(|(p, e)| head_tree.get(p) == Some(&(e.mode, e.oid)))
    };
    let untracked = match include_untracked {
        Some(how) => untracked_files(repo, &work, &index, how),
        None => Vec::new(),
    };
    if same(&index) && same(&worktree) && untracked.is_empty() {
        if !quiet {
            io.print("No local changes to save\n");
        }
        return Ok(0);
    }
    let branch = head_ref
        .as_deref()
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .unwrap_or("(no branch)")
        .to_string();
    let head_commit = read_commit(repo, &head)?;
    let desc = format!("{} {}", abbrev(&head), subject(&head_commit.message));
    let who = ident(sh, repo, "COMMITTER")?;
    // git ends the index commit's message with a newline, the work tree commit's without.
    let commit = |tree: Oid, parents: &[Oid], msg: &str| -> Result<Oid, String> {
        let mut body = format!("tree {}\n", hex(&tree));
        for p in parents {
            body.push_str(&format!("parent {}\n", hex(p)));
        }
        body.push_str(&format!("author {who}\ncommitter {who}\n\n{msg}"));
        write_object(repo, Kind::Commit, body.as_bytes())
    };
    let tree_of = |m: &crate::plumbing::index::Index| -> Result<Oid, String> {
        let entries: Vec<&IndexEntry> = m.values().collect();
        write_trees(repo, &entries, 0)
    };
    let i_commit = commit(
        tree_of(&index)?,
        &[head],
        &format!("index on {branch}: {desc}\n"),
    )?;
    let msg = match &message {
        Some(m) => format!("On {branch}: {m}"),
        None => format!("WIP on {branch}: {desc}"),
    };
    let mut parents = vec![head, i_commit];
    if !untracked.is_empty() {
        // git's third parent: a root commit of the untracked files alone.
        let mut files = crate::plumbing::index::Index::new();
        for p in &untracked {
            let path = work.join(String::from_utf8_lossy(p).as_ref());
            if let Some(e) = stage(repo, &path, p.clone(), None)? {
                files.insert(p.clone(), e);
            }
        }
        parents.push(commit(
            tree_of(&files)?,
            &[],
            &format!("untracked files on {branch}: {desc}\n"),
        )?);
    }
    let w_commit = commit(tree_of(&worktree)?, &parents, &msg)?;
    let mut list = raw_entries(repo);
    list.insert(0, (w_commit, who.clone(), msg.clone()));
    save_entries(repo, &list)?;
    // Back to HEAD, as `reset --hard`; untracked files stay.
    let mut idx = index;
    hard_reset(repo, &work, Some(head), &head_tree, &mut idx)?;
    // The stashed untracked files go, as `git clean` takes them (directories left empty too).
    for p in &untracked {
        crate::plumbing::checkout::remove_entry(&work, p);
    }
    if !quiet {
        io.print(&format!("Saved working directory and index state {msg}\n"));
    }
    Ok(0)
}

/// The untracked files `push -u` (or, with ignored ones, `-a`) takes, one by one.
fn untracked_files(
    repo: &Repo,
    work: &Path,
    index: &crate::plumbing::index::Index,
    how: Listing,
) -> Vec<Vec<u8>> {
    let tracked: HashSet<Vec<u8>> = index.keys().cloned().collect();
    let mut ign = Ignores::new(repo, work);
    let mut out = Vec::new();
    untracked(
        work,
        b"",
        &tracked,
        &HashSet::default(),
        &mut ign,
        how,
        &mut out,
    );
    out.sort();
    out
}

/// Writes the stash's untracked files back (git's `checkout-index` of its third parent):
/// a file already there is left alone and named, and the restore fails.
fn restore_untracked(repo: &Repo, work: &Path, u: Oid, io: &Io) -> Result<bool, String> {
    let files = tree_files(repo, read_commit(repo, &u)?.tree)?;
    let mut ok = true;
    for (p, &(mode, oid)) in &files {
        let path = work.join(String::from_utf8_lossy(p).as_ref());
        if path.symlink_metadata().is_ok() {
            io.eprint(&format!(
                "{} already exists, no checkout\n",
                String::from_utf8_lossy(p)
            ));
            ok = false;
            continue;
        }
        crate::plumbing::checkout::write_entry(repo, work, p, mode, oid)?;
    }
    if !ok {
        io.eprint("error: could not restore untracked files from stash\n");
    }
    Ok(ok)
}

fn show(repo: &Repo, arg: Option<&String>, patch: bool, io: &Io) -> Result<i32, String> {
    let list = entries(repo);
    let i = which(arg, list.len())?;
    let w = read_commit(repo, &list[i].0)?;
    let base = w
        .parents
        .first()
        .copied()
        .ok_or("fatal: a stash has a parent")?;
    let before = head_files(repo, Some(base))?;
    let after = tree_files(repo, w.tree)?;
    if patch {
        io.print(&crate::plumbing::diff::patch_of_trees(
            repo, &before, &after,
        )?);
    } else {
        io.print(&crate::plumbing::diff::stat_of(repo, &before, &after)?);
    }
    Ok(0)
}

fn drop(repo: &Repo, arg: Option<&String>, quiet: bool, io: &Io) -> Result<i32, String> {
    let mut list = raw_entries(repo);
    let i = which(arg, list.len())?;
    let (id, _, _) = list.remove(i);
    save_entries(repo, &list)?;
    if !quiet {
        io.print(&format!("Dropped {} ({})\n", stash_name(arg, i), hex(&id)));
    }
    Ok(0)
}

fn apply(
    repo: &Repo,
    cwd: &Path,
    arg: Option<&String>,
    pop: bool,
    quiet: bool,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let list = entries(repo);
    let i = which(arg, list.len())?;
    let w_id = list[i].0;
    let w = read_commit(repo, &w_id)?;
    let (Some(&base_id), Some(&i_id)) = (w.parents.first(), w.parents.get(1)) else {
        return Err(format!("fatal: {} is not a stash-like commit", hex(&w_id)));
    };
    // The stash is merged onto the index as it is (staged changes stay staged), as git
    // merges onto the index's tree; an unfinished merge has none.
    let conflicts = crate::plumbing::index::load_conflicts(repo)?;
    if !conflicts.is_empty() {
        let mut paths: Vec<String> = conflicts
            .iter()
            .map(|e| format!("{}: needs merge\n", String::from_utf8_lossy(&e.path)))
            .collect();
        paths.dedup();
        io.print(&paths.concat());
        io.eprint("error: could not write index\n");
        if pop {
            io.print("The stash entry is kept in case you need it again.\n");
        }
        return Ok(1);
    }
    let mut index = index_map(repo)?;
    let ours: BTreeMap<Vec<u8>, (u32, Oid)> = index
        .iter()
        .map(|(p, e)| (p.clone(), (e.mode, e.oid)))
        .collect();
    let base = head_files(repo, Some(base_id))?;
    let theirs = tree_files(repo, w.tree)?;
    let staged = tree_files(repo, read_commit(repo, &i_id)?.tree)?;
    let merged = merge_trees(
        repo,
        &base,
        &ours,
        &theirs,
        "Updated upstream",
        "Stashed changes",
    )?;
    // git's merge says so when the stash's tree is its base's (only untracked files).
    let messages = if base == theirs {
        format!("Already up to date.\n{}", merged.messages)
    } else {
        merged.messages.clone()
    };
    // Local changes in the way: git's refusal, then the status as it stands.
    if let Err(e) = two_way(
        repo,
        &work,
        &ours,
        &merged.files,
        &mut index,
        false,
        "merge",
    ) {
        io.eprint(&format!("{e}\n"));
        if !quiet {
            super::status::long_status(repo, cwd, io)?;
        }
        if pop {
            io.print("The stash entry is kept in case you need it again.\n");
        }
        return Ok(1);
    }
    // Without --index the changes are left unstaged, except files the stash added (git's
    // `unstage_changes_unless_new`).
    let mut result: crate::plumbing::index::Index = crate::plumbing::index::Index::new();
    for (p, e) in &index {
        match ours.get(p) {
            Some(&(m, o)) => {
                let mut e = e.clone();
                if (e.mode, e.oid) != (m, o) {
                    e.mode = m;
                    e.oid = o;
                    e.mtime = (0, 0);
                    e.size = 0;
                }
                result.insert(p.clone(), e);
            }
            None if staged.contains_key(p) && !base.contains_key(p) => {
                result.insert(p.clone(), e.clone());
            }
            None => {}
        }
    }
    for p in ours.keys() {
        if !result.contains_key(p) && !merged.files.contains_key(p) {
            // Deleted by the stash: the deletion stays unstaged, as in git.
            let (m, o) = ours[p];
            result.insert(
                p.clone(),
                IndexEntry {
                    path: p.clone(),
                    mode: m,
                    oid: o,
                    size: 0,
                    mtime: (0, 0),
                    stage: 0,
                },
            );
        }
    }
    let u_id = w.parents.get(2).copied();
    if !merged.conflicts.is_empty() {
        merged.write_conflicts(repo, &work, &result)?;
        // -q keeps the merge's messages and leaves out the status.
        io.print(&messages);
        if let Some(u) = u_id {
            restore_untracked(repo, &work, u, io)?;
        }
        if !quiet {
            super::status::long_status(repo, cwd, io)?;
        }
        if pop {
            io.print("The stash entry is kept in case you need it again.\n");
        }
        return Ok(1);
    }
    save_index(repo, &result)?;
    io.print(&messages);
    let restored = match u_id {
        Some(u) => restore_untracked(repo, &work, u, io)?,
        None => true,
    };
    if !quiet {
        super::status::long_status(repo, cwd, io)?;
    }
    if !restored {
        if pop {
            io.print("The stash entry is kept in case you need it again.\n");
        }
        return Ok(1);
    }
    if pop {
        let mut raw = raw_entries(repo);
        raw.remove(i);
        save_entries(repo, &raw)?;
        if !quiet {
            io.print(&format!(
                "Dropped {} ({})\n",
                stash_name(arg, i),
                hex(&w_id)
            ));
        }
    }
    Ok(0)
}
