//! The porcelain that writes: `init`, `add` (paths, `.`, `-A`, `-u`), `commit` (`-m`, `-a`,
//! `--allow-empty`, `-q`, author and committer from `GIT_*` or `user.*`), branch creation and
//! deletion, and `checkout -b` / `switch -c` onto a new branch. Objects are loose zlib files
//! and trees are built from the index, so commits made with the same author, dates and
//! content have the ids native git gives them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Message, Opt, Refusal, Spec, Unknown, push, read_messages, set, usage_error};
use crate::plumbing::commit::{clean_message, global, ident, read_commit, strip_comments};
use crate::plumbing::diff::summary;
use crate::plumbing::index::{index_map, load_index, save_index, stage};
use crate::plumbing::object::{Kind, Oid, hex};
use crate::plumbing::pathspec::spec_path;
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::write_trees;
use crate::plumbing::untracked::Ignores;
use crate::plumbing::write::{init_layout, write_file, write_object};

#[derive(Default)]
struct Init {
    quiet: bool,
    branch: Option<String>,
}

const INIT_USAGE: &str = "git init [-q | --quiet] [--bare] [--template=<template-directory>]\n                [--separate-git-dir <git-dir>] [--object-format=<format>]\n                [--ref-format=<format>]\n                [-b <branch-name> | --initial-branch=<branch-name>]\n                [--shared[=<permissions>]] [<directory>]";

/// init's options, as git's `builtin/init-db.c` declares them.
const INIT: Spec<Init> = Spec {
    name: "init",
    usage: INIT_USAGE,
    options: &[
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::value("-b/--initial-branch", |o, v| set(&mut o.branch, Some(v))),
    ],
    refused: "",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn init(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Init::default();
    let operands = match INIT.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    if operands.len() > 1 {
        return usage_error(io, "", INIT_USAGE);
    }
    let Init { quiet, branch } = o;
    let dir = operands.first();
    let top = sh.path(dir.map_or(".", String::as_str));
    let git = top.join(".git");
    let shown = std::fs::canonicalize(&top).unwrap_or(top.clone());
    if git.join("HEAD").is_file() {
        if !quiet {
            io.print(&format!(
                "Reinitialized existing Git repository in {}/.git/\n",
                shown.display()
            ));
        }
        return 0;
    }
    let configured = sh
        .get("HOME")
        .and_then(|_| global(sh, "init.defaultBranch"));
    let name = branch
        .clone()
        .or(configured.clone())
        .unwrap_or_else(|| "master".into());
    if branch.is_none() && configured.is_none() && !quiet {
        io.eprint(INIT_HINT);
    }
    if let Err(e) = std::fs::create_dir_all(&top)
        .map_err(|e| e.to_string())
        .and_then(|_| init_layout(&git, &name))
    {
        io.eprint(&format!("{e}\n"));
        return 128;
    }
    if !quiet {
        let shown = std::fs::canonicalize(&top).unwrap_or(top);
        io.print(&format!(
            "Initialized empty Git repository in {}/.git/\n",
            shown.display()
        ));
    }
    0
}

const INIT_HINT: &str =
    "hint: Using 'master' as the name for the initial branch. This default branch name
hint: is subject to change. To configure the initial branch name to use in all
hint: of your new repositories, which will suppress this warning, call:
hint:
hint: \tgit config --global init.defaultBranch <name>
hint:
hint: Names commonly chosen instead of 'master' are 'main', 'trunk' and
hint: 'development'. The just-created branch can be renamed via this command:
hint:
hint: \tgit branch -m <name>
";

/// Files under `dir` (relative `rel`) that are not ignored, or tracked.
fn files_under(
    dir: &Path,
    rel: &[u8],
    index: &BTreeMap<Vec<u8>, IndexEntry>,
    ign: &mut Ignores,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) {
    let pushed = ign.push_dir(dir);
    let names = crate::plumbing::untracked::dir_entries(dir);
    for (name, is_dir) in names {
        if name == ".git" {
            continue;
        }
        let mut p = rel.to_vec();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(name.as_bytes());
        let full = dir.join(&name);
        if is_dir {
            if !ign.ignored(&full, true)
                || index
                    .keys()
                    .any(|k| k.starts_with(&p) && k.get(p.len()) == Some(&b'/'))
            {
                files_under(&full, &p, index, ign, out);
            }
        } else if index.contains_key(&p) || !ign.ignored(&full, false) {
            out.push((full, p));
        }
    }
    if pushed {
        ign.pop();
    }
}

#[derive(Default)]
struct Add {
    all: bool,
    update: bool,
    force: bool,
}

/// add's options, as git's `builtin/add.c` declares them.
const ADD: Spec<Add> = Spec {
    name: "add",
    usage: "git add [<options>] [--] <pathspec>...",
    options: &[
        Opt::flag("-A/--all", |o| o.all = true),
        Opt::flag("-u/--update", |o| o.update = true),
        Opt::flag("-f/--force", |o| o.force = true),
    ],
    refused: "",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn add(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Add::default();
    let specs = match ADD.parse(args, &mut o, io) {
        Ok(specs) => specs,
        Err(code) => return code,
    };
    let Add { all, update, force } = o;
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let Some(work) = repo.work.clone() else {
        io.eprint("fatal: this operation must be run in a work tree\n");
        return 128;
    };
    if specs.is_empty() && !all && !update {
        io.eprint("Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?\nhint: Disable this message with \"git config advice.addEmptyPathspec false\"\n");
        return 0;
    }
    match add_paths(&repo, &work, &cwd, &specs, update, force, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// Stages `specs` (the whole tree when there are none: `-A`, `-u`).
fn add_paths(
    repo: &Repo,
    work: &Path,
    cwd: &Path,
    specs: &[String],
    update: bool,
    force: bool,
    io: &Io,
) -> Result<i32, String> {
    let mut index = index_map(repo)?;
    // The scopes: the pathspecs, or the whole tree for -A/-u without any.
    let scopes: Vec<(String, Vec<u8>)> = if specs.is_empty() {
        vec![(".".into(), Vec::new())]
    } else {
        specs
            .iter()
            .map(|s| spec_path(work, cwd, s).map(|p| (s.clone(), p)))
            .collect::<Result<_, _>>()?
    };
    let inside = |path: &[u8], scope: &[u8]| {
        scope.is_empty()
            || path == scope
            || (path.starts_with(scope) && path.get(scope.len()) == Some(&b'/'))
    };
    let mut ignored_named = Vec::new();
    for (spec, scope) in &scopes {
        let full = if scope.is_empty() {
            work.to_path_buf()
        } else {
            work.join(String::from_utf8_lossy(scope).as_ref())
        };
        let tracked_inside = index.keys().any(|k| inside(k, scope));
        let exists = full.symlink_metadata().is_ok();
        if !exists && !tracked_inside {
            return Err(format!("fatal: pathspec '{spec}' did not match any files"));
        }
        // Files gone from the tree leave the index (git add . and -A; -u too).
        let gone: Vec<Vec<u8>> = index
            .keys()
            .filter(|k| inside(k, scope))
            .filter(|k| {
                work.join(String::from_utf8_lossy(k).as_ref())
                    .symlink_metadata()
                    .is_err()
            })
            .cloned()
            .collect();
        for k in gone {
            index.remove(&k);
        }
        if !exists {
            continue;
        }
        let mut files = Vec::new();
        if full.is_dir()
            && !full
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        {
            let parent = full.parent().unwrap_or(work);
            let mut ign = Ignores::for_dir(repo, work, parent);
            if force {
                ign = Ignores::none();
            }
            files_under(&full, scope, &index, &mut ign, &mut files);
        } else {
            let parent = full.parent().unwrap_or(work);
            let ign = Ignores::for_dir(repo, work, parent);
            if !force && !index.contains_key(scope) && ign.ignored(&full, false) {
                ignored_named.push(spec.clone());
                continue;
            }
            files.push((full.clone(), scope.clone()));
        }
        for (path, rel) in files {
            if update && !index.contains_key(&rel) {
                continue;
            }
            let old = index.get(&rel).map(|e| e.mode);
            if let Some(e) = stage(repo, &path, rel.clone(), old)? {
                index.insert(rel, e);
            }
        }
    }
    save_index(repo, &index)?;
    if !ignored_named.is_empty() {
        let mut msg =
            String::from("The following paths are ignored by one of your .gitignore files:\n");
        for p in &ignored_named {
            msg.push_str(p);
            msg.push('\n');
        }
        msg.push_str("hint: Use -f if you really want to add them.\nhint: Disable this message with \"git config advice.addIgnoredFile false\"\n");
        io.eprint(&msg);
        return Ok(1);
    }
    Ok(0)
}

/// What `git commit` was asked for.
#[derive(Default)]
struct CommitOpts {
    /// `-m` texts and `-F` files, in order.
    messages: Vec<Message>,
    all: bool,
    allow_empty: bool,
    quiet: bool,
    amend: Amend,
    date: Option<String>,
}

const COMMIT: Spec<CommitOpts> = Spec {
    name: "commit",
    usage: "git commit [-a | --interactive | --patch] [-s] [-v] [-u<mode>] [--amend]\n                  [--dry-run] [(-c | -C | --squash) <commit> | --fixup [(amend|reword):]<commit>]\n                  [-F <file> | -m <msg>] [--reset-author] [--allow-empty]\n                  [--allow-empty-message] [--no-verify] [-e] [--author=<author>]\n                  [--date=<date>] [--cleanup=<mode>] [--[no-]status]\n                  [-i | -o] [--pathspec-from-file=<file> [--pathspec-file-nul]]\n                  [(--trailer <token>[(=|:)<value>])...] [-S[<keyid>]]\n                  [--] [<pathspec>...]",
    options: &[
        Opt::value("-m/--message", |o, v| {
            push(&mut o.messages, Message::Text(v))
        }),
        Opt::value("-F/--file", |o, v| push(&mut o.messages, Message::File(v))),
        Opt::flag("-a/--all", |o| o.all = true),
        Opt::flag("--allow-empty", |o| o.allow_empty = true),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("--amend", |o| o.amend.on = true),
        Opt::flag("--no-edit", |o| o.amend.no_edit = true),
        Opt::flag("--reset-author", |o| o.amend.reset_author = true),
        Opt::value("--date", |o, v| set(&mut o.date, Some(v))),
    ],
    refused: "--fixup --squash -c -C --author -S --signoff -s --interactive --patch -p --trailer",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn commit(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = CommitOpts::default();
    let pathspecs = COMMIT.parse_with(args, &mut o, io, &mut |_, _| {
        Err(Refusal::Fatal(
            "fatal: 'git commit <pathspec>' is not supported in burrow".into(),
        ))
    });
    match pathspecs {
        Ok((_, Some(after))) if !after.is_empty() => {
            return super::args::not_here(io, "commit", "<pathspec>");
        }
        Ok(_) => {}
        Err(code) => return code,
    }
    let unreadable = |f: &str, e: &str| format!("fatal: could not read log file '{f}': {e}");
    let messages = match read_messages(sh, &o.messages, unreadable) {
        Ok(m) => m,
        Err(e) => return super::args::fail(io, &e),
    };
    let CommitOpts {
        all,
        allow_empty,
        quiet,
        amend,
        date,
        ..
    } = o;
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let date = match date.as_deref().map(forced_date).transpose() {
        Ok(d) => d,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            return 128;
        }
    };
    let r = do_commit(
        sh,
        &repo,
        &messages,
        all,
        allow_empty,
        quiet,
        &amend,
        date.as_deref(),
        io,
    );
    match r {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// `commit --date`: a date as `GIT_AUTHOR_DATE` takes it, else an approximate one
/// (`2 weeks ago`) as `--since` reads it, in UTC, as git's `parse_force_date`.
fn forced_date(d: &str) -> Result<String, String> {
    let now = sh_utility::time::now();
    match crate::plumbing::date::parse_ident_date(d, now) {
        Some(t) => Ok(t),
        None if !crate::plumbing::date::approxidate_reads(d) => {
            Err(format!("fatal: invalid date format: {d}"))
        }
        None => crate::plumbing::date::approxidate(d, now).map(|t| format!("{t} +0000")),
    }
}

/// `commit --amend` and what goes with it.
#[derive(Default)]
pub(crate) struct Amend {
    on: bool,
    no_edit: bool,
    reset_author: bool,
    /// `--cleanup=strip`: `#` lines leave the message (`cherry-pick --continue`).
    strip: bool,
}

/// `git commit --no-edit --cleanup=strip`, as `cherry-pick --continue` and `revert
/// --continue` conclude a step that stopped on a conflict.
pub(crate) fn conclude(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let amend = Amend {
        strip: true,
        ..Amend::default()
    };
    do_commit(sh, repo, &[], false, false, false, &amend, None, io)
}

/// What `commit` says when the cherry-pick it concludes is empty.
pub(crate) const EMPTY_PICK: &str = "The previous cherry-pick is now empty, possibly due to conflict resolution.\nIf you wish to commit it anyway, use:\n\n    git commit --allow-empty\n\n";
pub(crate) const EMPTY_PICK_SINGLE: &str = "Otherwise, please use 'git cherry-pick --skip'\n";
const EMPTY_PICK_MULTI: &str = "and then use:\n\n    git cherry-pick --continue\n\nto resume cherry-picking the remaining commits.\nIf you wish to skip this commit, use:\n\n    git cherry-pick --skip\n\n";

#[allow(clippy::too_many_arguments)]
fn do_commit(
    sh: &dyn Ctx,
    repo: &Repo,
    messages: &[String],
    all: bool,
    allow_empty: bool,
    quiet: bool,
    amend: &Amend,
    date: Option<&str>,
    io: &Io,
) -> Result<i32, String> {
    let Some(work) = repo.work.clone() else {
        return Err("fatal: this operation must be run in a work tree".into());
    };
    // --amend: the commit HEAD is at is replaced; its parents, author and (with --no-edit)
    // message are kept.
    let amended = match (amend.on, repo.head().1) {
        (false, _) => None,
        (true, None) => return Err("fatal: You have nothing to amend.".into()),
        (true, Some(h)) => Some(read_commit(repo, &h)?),
    };
    // An unfinished merge: the commit concludes it, with MERGE_MSG by default.
    let merging = if amend.on {
        None
    } else {
        crate::plumbing::state::merge_head(repo)
    };
    // An unfinished cherry-pick or revert: the commit concludes it, with MERGE_MSG by
    // default and (a cherry-pick) the picked commit's author.
    let picking = (!amend.on)
        .then(|| crate::plumbing::state::cherry_pick_head(repo))
        .flatten();
    let reverting = !amend.on && crate::plumbing::state::revert_head(repo).is_some();
    let concluding = merging.is_some() || picking.is_some() || reverting;
    let messages: Vec<String> = match (&amended, concluding) {
        (Some(c), _) if messages.is_empty() && amend.no_edit => vec![c.message.clone()],
        (None, true) if messages.is_empty() => {
            std::fs::read_to_string(repo.git_dir.join("MERGE_MSG"))
                .map(|m| vec![m])
                .unwrap_or_default()
        }
        _ => messages.to_vec(),
    };
    if messages.is_empty() {
        return Err(if amend.on {
            "fatal: burrow's git has no editor: give the message with -m or -F, or keep it with --no-edit".into()
        } else {
            "fatal: burrow's git has no editor: give the message with -m or -F".into()
        });
    }
    if all {
        // -a: every tracked file's current content (deleted ones leave the index).
        let mut index = index_map(repo)?;
        let mut keys: Vec<Vec<u8>> = index.keys().cloned().collect();
        // Unmerged paths are staged as the work tree has them, as git's -a does.
        keys.extend(
            crate::plumbing::index::load_conflicts(repo)?
                .into_iter()
                .map(|e| e.path),
        );
        keys.dedup();
        for k in keys {
            let path = work.join(String::from_utf8_lossy(&k).as_ref());
            let old = index.get(&k).map(|e| e.mode);
            match stage(repo, &path, k.clone(), old)? {
                Some(e) => {
                    index.insert(k, e);
                }
                None => {
                    index.remove(&k);
                }
            }
        }
        save_index(repo, &index)?;
    }
    let conflicts = crate::plumbing::index::load_conflicts(repo)?;
    if !conflicts.is_empty() {
        let mut names: Vec<String> = conflicts
            .iter()
            .map(|e| format!("U\t{}\n", String::from_utf8_lossy(&e.path)))
            .collect();
        names.dedup();
        io.print(&names.concat());
        return Err("error: Committing is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit.\nfatal: Exiting because of an unresolved conflict.".into());
    }
    let index = load_index(repo)?;
    let (head_ref, head_id) = repo.head();
    let entries: Vec<&IndexEntry> = index.iter().collect();
    let tree = write_trees(repo, &entries, 0)?;
    let parents: Vec<Oid> = match &amended {
        Some(c) => c.parents.clone(),
        None => head_id.into_iter().chain(merging).collect(),
    };
    let parent_tree = match parents.first() {
        Some(p) => Some(read_commit(repo, p)?.tree),
        None => None,
    };
    if amended.is_some() && !allow_empty && parent_tree == Some(tree) && parents.len() == 1 {
        io.eprint("You asked to amend the most recent commit, but doing so would make\nit empty. You can repeat your command with --allow-empty, or you can\nremove the commit entirely with \"git reset HEAD^\".\n");
        return Ok(1);
    }
    if amended.is_none()
        && merging.is_none()
        && !allow_empty
        && (parent_tree == Some(tree) || (head_id.is_none() && index.is_empty()))
    {
        // git's status says what there is (or is not) to commit; the status is 1. git's
        // advice reaches stderr first (its stdout is flushed at exit).
        if picking.is_some() {
            io.eprint(EMPTY_PICK);
            if crate::plumbing::state::sequencer_dir(repo)
                .join("todo")
                .is_file()
                && !amend.strip
            {
                io.eprint(EMPTY_PICK_MULTI);
            } else {
                io.eprint(EMPTY_PICK_SINGLE);
            }
        }
        super::status::commit_status(repo, Path::new(&sh.cwd()), io)?;
        return Ok(1);
    }
    let joined = messages.join("\n\n");
    let message = if amend.strip {
        clean_message(&strip_comments(&joined))
    } else {
        clean_message(&joined)
    };
    if message.is_empty() {
        io.eprint("Aborting commit due to empty commit message.\n");
        return Ok(1);
    }
    let mut author = match (&amended, picking) {
        (Some(c), _) if !amend.reset_author => c.author.clone(),
        (None, Some(p)) if !amend.reset_author => read_commit(repo, &p)?.author,
        _ => ident(sh, repo, "AUTHOR")?,
    };
    // --date replaces the author's date, an amended commit's too.
    if let Some(d) = date
        && let Some((who, _)) = author.rsplit_once('>')
    {
        author = format!("{who}> {d}");
    }
    let committer = ident(sh, repo, "COMMITTER")?;
    let mut body = format!("tree {}\n", hex(&tree));
    for p in &parents {
        body.push_str(&format!("parent {}\n", hex(p)));
    }
    body.push_str(&format!(
        "author {author}\ncommitter {committer}\n\n{message}"
    ));
    let id = write_object(repo, Kind::Commit, body.as_bytes())?;
    let target = head_ref.clone().unwrap_or_else(|| "HEAD".into());
    write_file(
        &repo.git_dir.join(&target),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    if merging.is_some() {
        crate::plumbing::state::clear_state(repo);
    }
    if picking.is_some() || reverting {
        let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
        crate::plumbing::state::post_commit_cleanup(repo);
    }
    if quiet {
        return Ok(0);
    }
    let branch = match &head_ref {
        Some(b) => b.trim_start_matches("refs/heads/").to_string(),
        None => "detached HEAD".into(),
    };
    let root = if head_id.is_none() {
        " (root-commit)"
    } else {
        ""
    };
    let subject = crate::plumbing::commit::subject(&message);
    let mut out = format!("[{branch}{root} {}] {subject}\n", abbrev(&id));
    // git names the author when it is not the committer, and the date when it was kept.
    let (an, ae) = crate::plumbing::commit::ident_name_email(&author);
    if (an.clone(), ae.clone()) != crate::plumbing::commit::ident_name_email(&committer) {
        out.push_str(&format!(" Author: {an} <{ae}>\n"));
    }
    if (amended.is_some() && !amend.reset_author)
        || date.is_some()
        || (picking.is_some() && !amend.reset_author)
    {
        let (secs, zone) = crate::plumbing::commit::ident_time(&author);
        out.push_str(&format!(
            " Date: {}\n",
            crate::plumbing::date::git_date(secs, &zone)
        ));
    }
    // A merge commit's summary is its header alone.
    if merging.is_none() {
        out.push_str(&summary(repo, parent_tree, tree)?);
    }
    io.print(&out);
    Ok(0)
}
