//! git's sequencer: `cherry-pick` and `revert` (one commit, or several with
//! `.git/sequencer` for `--continue`, `--skip`, `--abort` and `--quit`) and the merge backend
//! of `rebase` (`.git/rebase-merge`), each step a three-way merge of trees
//! ([`crate::plumbing::merge::merge_trees`]) made into a commit with the author and message git gives
//! it, so the ids are git's. A conflict stops with git's messages, markers, index stages,
//! `CHERRY_PICK_HEAD`/`REVERT_HEAD` and `MERGE_MSG`. The editor is never started: burrow is
//! never run from a terminal, where git does not start one for these commands either, and
//! `rebase --continue` keeps the message as it is (as `GIT_EDITOR=true` does).

use std::collections::BTreeSet;
use std::path::Path;

use foldhash::HashSet;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Args, usage_error};
use crate::plumbing::checkout::{hard_reset, two_way, work_of};
use crate::plumbing::commit::{
    ident, ident_name_email, ident_time, make_commit, read_commit, subject,
};
use crate::plumbing::date::git_date;
use crate::plumbing::index::{
    Files, index_dirty, index_files, index_map, load_conflicts, save_index, worktree_change,
};
use crate::plumbing::merge::merge_trees;
use crate::plumbing::object::{Commit, Oid, hex};
use crate::plumbing::refs::{reflog, set_head};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::rev::resolve;
use crate::plumbing::state::{self, cherry_pick_head, rebase_dir, revert_head, sequencer_dir};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::{head_files, write_trees};
use crate::plumbing::write::write_file;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Pick,
    Revert,
}

impl Action {
    /// The command's name, as its messages give it.
    fn cmd(self) -> &'static str {
        match self {
            Action::Pick => "cherry-pick",
            Action::Revert => "revert",
        }
    }

    /// The word of a sequencer's todo line.
    fn word(self) -> &'static str {
        match self {
            Action::Pick => "pick",
            Action::Revert => "revert",
        }
    }
}

/// How the picks were asked for.
#[derive(Clone, Copy, Default)]
struct Opts {
    no_commit: bool,
    /// `-x`: "(cherry picked from commit ...)".
    record_origin: bool,
    /// `--ff`: a commit whose parent is HEAD is taken as it is.
    ff: bool,
}

/// What one step gave.
enum Applied {
    /// Merged cleanly: the tree the index now has.
    Clean(Oid),
    /// Stopped on conflicts (written to the index and the work tree).
    Conflict(Vec<Vec<u8>>),
}

fn head_name(repo: &Repo) -> String {
    match repo.head().0 {
        Some(b) => b.trim_start_matches("refs/heads/").to_string(),
        None => "detached HEAD".into(),
    }
}

/// The label a conflict marks the picked side with: `abc1234 (subject)`, or `parent of
/// abc1234 (subject)` for a revert.
fn label(action: Action, id: &Oid, c: &Commit) -> String {
    let s = format!("{} ({})", abbrev(id), subject(&c.message));
    match action {
        Action::Pick => s,
        Action::Revert => format!("parent of {s}"),
    }
}

/// Applies commit `id` (or its reverse) to the index and the work tree at HEAD `head`
/// (the index itself with `-n`). Errors are git's messages, before anything was written.
fn apply(
    repo: &Repo,
    action: Action,
    id: &Oid,
    c: &Commit,
    head: Option<Oid>,
    no_commit: bool,
    io: &Io,
) -> Result<Applied, String> {
    let work = work_of(repo)?;
    if c.parents.len() > 1 {
        return Err(format!(
            "error: commit {} is a merge but no -m option was given.",
            hex(id)
        ));
    }
    let parent = match c.parents.first() {
        Some(p) => head_files(repo, Some(*p))?,
        None => Files::new(),
    };
    let mine = head_files(repo, Some(*id))?;
    let (base, theirs) = match action {
        Action::Pick => (parent, mine),
        Action::Revert => (mine, parent),
    };
    let mut index = index_map(repo)?;
    let ours = if no_commit {
        index_files(&index)
    } else {
        head_files(repo, head)?
    };
    let merged = merge_trees(repo, &base, &ours, &theirs, "HEAD", &label(action, id, c))?;
    // Local changes to files the merge rewrites refuse it, as merge refuses them.
    let mut tree = sh_utility::sys::TreeStat::new(&work);
    let dirty: BTreeSet<&Vec<u8>> = merged
        .files
        .keys()
        .chain(ours.keys())
        .filter(|p| merged.files.get(*p) != ours.get(*p) || merged.contents.contains_key(*p))
        .filter(|p| {
            index
                .get(*p)
                .is_some_and(|e| worktree_change(&mut tree, e).is_some())
        })
        .collect();
    if !dirty.is_empty() {
        let list: String = dirty
            .iter()
            .map(|p| format!("\t{}\n", String::from_utf8_lossy(p)))
            .collect();
        return Err(format!(
            "error: Your local changes to the following files would be overwritten by merge:\n{list}Please commit your changes or stash them before you merge.\nAborting"
        ));
    }
    two_way(
        repo,
        &work,
        &ours,
        &merged.files,
        &mut index,
        false,
        "merge",
    )?;
    io.print(&merged.messages);
    if !merged.conflicts.is_empty() {
        merged.write_conflicts(repo, &work, &index)?;
        return Ok(Applied::Conflict(
            merged.conflicts.keys().cloned().collect(),
        ));
    }
    save_index(repo, &index)?;
    let entries: Vec<&IndexEntry> = index.values().collect();
    Ok(Applied::Clean(write_trees(repo, &entries, 0)?))
}

/// Whether the last paragraph of `msg` is a block of trailers (`Key: value` lines or an
/// earlier "(cherry picked from commit ...)"), which `-x` then joins.
fn ends_in_trailers(msg: &str) -> bool {
    let body = msg.trim_end_matches('\n');
    let Some((_, last)) = body.rsplit_once("\n\n") else {
        return false;
    };
    last.lines().all(|l| {
        l.starts_with("(cherry picked from commit ")
            || l.split_once(": ").is_some_and(|(k, _)| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    })
}

/// The message of a step's commit: the picked commit's (with `-x`'s line), or git's
/// "Revert" / "Reapply" message.
fn message_of(action: Action, id: &Oid, c: &Commit, record_origin: bool) -> String {
    match action {
        Action::Pick => {
            let mut m = c.message.clone();
            if record_origin {
                if !m.is_empty() && !m.ends_with('\n') {
                    m.push('\n');
                }
                if !ends_in_trailers(&m) {
                    m.push('\n');
                }
                m.push_str(&format!("(cherry picked from commit {})\n", hex(id)));
            }
            m
        }
        Action::Revert => {
            let s = first_line(&c.message);
            let mut m = match s.strip_prefix("Revert \"") {
                Some(orig) if !orig.starts_with("Revert \"") => format!("Reapply \"{orig}"),
                _ => format!("Revert \"{s}\""),
            };
            m.push_str(&format!("\n\nThis reverts commit {}", hex(id)));
            if c.parents.len() > 1 {
                m.push_str(&format!(
                    ", reversing\nchanges made to {}",
                    hex(&c.parents[0])
                ));
            }
            m.push_str(".\n");
            m
        }
    }
}

/// A commit message's subject as the sequencer quotes it: its first line.
fn first_line(m: &str) -> String {
    m.lines().next().unwrap_or("").to_string()
}

/// What the sequencer prints for a commit it made: `[branch id] subject`, the author when
/// it is not the committer, its date, the diffstat summary.
fn commit_summary(repo: &Repo, id: &Oid, show_date: bool) -> Result<String, String> {
    let c = read_commit(repo, id)?;
    let mut out = format!(
        "[{} {}] {}\n",
        head_name(repo),
        abbrev(id),
        subject(&c.message)
    );
    let (an, ae) = ident_name_email(&c.author);
    if (an.clone(), ae.clone()) != ident_name_email(&c.committer) {
        out.push_str(&format!(" Author: {an} <{ae}>\n"));
    }
    if show_date {
        let (secs, zone) = ident_time(&c.author);
        out.push_str(&format!(" Date: {}\n", git_date(secs, &zone)));
    }
    let parent_tree = match c.parents.first() {
        Some(p) => Some(read_commit(repo, p)?.tree),
        None => None,
    };
    out.push_str(&crate::plumbing::diff::summary(repo, parent_tree, c.tree)?);
    Ok(out)
}

/// What a failed step ends with: git's message and `fatal: cherry-pick failed` (128).
fn failed(io: &Io, action: Action, e: &str) -> i32 {
    io.eprint(&format!("{e}\nfatal: {} failed\n", action.cmd()));
    128
}

fn unmerged_refusal(action: Action) -> String {
    let what = match action {
        Action::Pick => "Cherry-picking",
        Action::Revert => "Reverting",
    };
    format!(
        "error: {what} is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit."
    )
}

fn dirty_refusal(action: Action) -> String {
    format!(
        "error: your local changes would be overwritten by {}.\nhint: commit your changes or stash them to proceed.",
        action.cmd()
    )
}

const PICK_USAGE: &str = "git cherry-pick [--edit] [-n] [-m <parent-number>] [-s] [-x] [--ff]
                       [-S[<keyid>]] <commit>...
   or: git cherry-pick (--continue | --skip | --abort | --quit)

    --quit                end revert or cherry-pick sequence
    --continue            resume revert or cherry-pick sequence
    --abort               cancel revert or cherry-pick sequence
    --skip                skip current commit and continue
    --[no-]cleanup <mode> how to strip spaces and #comments from message
    -n, --no-commit       don't automatically commit
    --commit              opposite of --no-commit
    -e, --[no-]edit       edit the commit message
    -s, --[no-]signoff    add a Signed-off-by trailer
    -m, --[no-]mainline <parent-number>
                          select mainline parent
    --[no-]rerere-autoupdate
                          update the index with reused conflict resolution if possible
    --[no-]strategy <strategy>
                          merge strategy
    -X, --[no-]strategy-option <option>
                          option for merge strategy
    -S, --[no-]gpg-sign[=<key-id>]
                          GPG sign commit
    -x                    append commit name
    --[no-]ff             allow fast-forward
    --[no-]allow-empty    preserve initially empty commits
    --[no-]allow-empty-message
                          allow commits with empty messages
    --[no-]keep-redundant-commits
                          deprecated: use --empty=keep instead
    --empty (stop|drop|keep)
                          how to handle commits that become empty
";

const REVERT_USAGE: &str =
    "git revert [--[no-]edit] [-n] [-m <parent-number>] [-s] [-S[<keyid>]] <commit>...
   or: git revert (--continue | --skip | --abort | --quit)

    --quit                end revert or cherry-pick sequence
    --continue            resume revert or cherry-pick sequence
    --abort               cancel revert or cherry-pick sequence
    --skip                skip current commit and continue
    --[no-]cleanup <mode> how to strip spaces and #comments from message
    -n, --no-commit       don't automatically commit
    --commit              opposite of --no-commit
    -e, --[no-]edit       edit the commit message
    -s, --[no-]signoff    add a Signed-off-by trailer
    -m, --[no-]mainline <parent-number>
                          select mainline parent
    --[no-]rerere-autoupdate
                          update the index with reused conflict resolution if possible
    --[no-]strategy <strategy>
                          merge strategy
    -X, --[no-]strategy-option <option>
                          option for merge strategy
    -S, --[no-]gpg-sign[=<key-id>]
                          GPG sign commit
    --[no-]reference      use the 'reference' format to refer to commits
";

/// `git cherry-pick`.
pub fn cherry_pick(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    run(sh, Action::Pick, args, io)
}

/// `git revert`.
pub fn revert(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    run(sh, Action::Revert, args, io)
}

fn run(sh: &dyn Ctx, action: Action, args: &[String], io: &Io) -> i32 {
    let usage = match action {
        Action::Pick => PICK_USAGE,
        Action::Revert => REVERT_USAGE,
    };
    let mut o = Opts::default();
    let mut sub: Option<String> = None;
    let mut revs: Vec<String> = Vec::new();
    let mut a = Args::with_values(args, "mXS");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-n" | "--no-commit" => a.flag("no-commit").map(|_| o.no_commit = true),
            "--commit" => a.flag("commit").map(|_| o.no_commit = false),
            "-x" if action == Action::Pick => a.flag("x").map(|_| o.record_origin = true),
            "--ff" if action == Action::Pick => a.flag("ff").map(|_| o.ff = true),
            "--no-ff" if action == Action::Pick => a.flag("no-ff").map(|_| o.ff = false),
            // burrow is never at a terminal: no editor, as git without one.
            "--no-edit" => a.flag("no-edit"),
            "--continue" | "--abort" | "--skip" | "--quit" => a.flag(&arg[2..]).map(|_| {
                sub = Some(arg[2..].to_string());
            }),
            "-e"
            | "--edit"
            | "-m"
            | "--mainline"
            | "-s"
            | "--signoff"
            | "-S"
            | "--gpg-sign"
            | "--cleanup"
            | "--strategy"
            | "-X"
            | "--strategy-option"
            | "--allow-empty"
            | "--allow-empty-message"
            | "--keep-redundant-commits"
            | "--empty"
            | "--rerere-autoupdate"
            | "--no-rerere-autoupdate"
            | "--reference" => {
                return super::args::not_here(io, action.cmd(), &arg);
            }
            "--" => {
                revs.extend(a.rest());
                Ok(())
            }
            s if s.starts_with('-') && s != "-" => Err(String::new()),
            _ => {
                revs.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, usage);
        }
    }
    if sub.is_none() && revs.is_empty() {
        return usage_error(io, "", usage);
    }
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = match sub.as_deref() {
        Some("continue") => seq_continue(sh, &repo, action, io),
        Some("skip") => seq_skip(sh, &repo, action, io),
        Some("abort") => seq_abort(sh, &repo, action, io),
        Some(_) => {
            let _ = std::fs::remove_dir_all(sequencer_dir(&repo));
            crate::plumbing::state::clear_state(&repo);
            Ok(0)
        }
        None => start(sh, &repo, action, o, &revs, io),
    };
    match r {
        Ok(c) => c,
        Err(e) if e.starts_with("fatal:") || e.contains("\nfatal:") => super::args::fail(io, &e),
        Err(e) => failed(io, action, &e),
    }
}

/// The commits the revisions name, in the order they are picked: as given (each once),
/// or, with a range, the walk (oldest first for a cherry-pick, newest first for a revert).
fn commits_of(repo: &Repo, action: Action, revs: &[String]) -> Result<Vec<Oid>, String> {
    let named = |r: &str| -> Result<Oid, String> {
        let r = if r == "-" { "@{-1}" } else { r };
        resolve(repo, r)
            .and_then(|id| repo.peel_commit(&id).ok())
            .ok_or_else(|| format!("fatal: bad revision '{r}'"))
    };
    let ranged = revs.iter().any(|r| r.contains("..") || r.starts_with('^'));
    if !ranged {
        let mut out: Vec<Oid> = Vec::new();
        for r in revs {
            let id = named(r)?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
        return Ok(out);
    }
    let (mut plus, mut minus) = (Vec::new(), Vec::new());
    for r in revs {
        if let Some((a, b)) = r.split_once("..") {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            minus.push(named(a)?);
            plus.push(named(b)?);
        } else if let Some(n) = r.strip_prefix('^') {
            minus.push(named(n)?);
        } else {
            plus.push(named(r)?);
        }
    }
    let hidden: HashSet<Oid> = crate::plumbing::walk::walk(repo, &minus)?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut out: Vec<Oid> = crate::plumbing::walk::walk(repo, &plus)?
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !hidden.contains(id))
        .collect();
    if action == Action::Pick {
        out.reverse();
    }
    Ok(out)
}

/// A sequencer's todo line for a step.
fn todo_line(repo: &Repo, action: Action, id: &Oid) -> Result<String, String> {
    let c = read_commit(repo, id)?;
    Ok(format!(
        "{} {} {}\n",
        action.word(),
        hex(id),
        first_line(&c.message)
    ))
}

fn start(
    sh: &dyn Ctx,
    repo: &Repo,
    action: Action,
    o: Opts,
    revs: &[String],
    io: &Io,
) -> Result<i32, String> {
    let ids = commits_of(repo, action, revs)?;
    let single = revs.len() == 1 && ids.len() == 1 && !revs[0].contains("..");
    if !single && sequencer_dir(repo).exists() {
        // Named by the step the sequencer is at; --skip offered when one is stopped.
        let skip = if cherry_pick_head(repo).is_some() || revert_head(repo).is_some() {
            "--skip | "
        } else {
            ""
        };
        return Err(match state::sequencer_command(repo).as_deref() {
            Some("revert") => format!(
                "error: revert is already in progress\nhint: try \"git revert (--continue | {skip}--abort | --quit)\""
            ),
            Some(_) => format!(
                "error: cherry-pick is already in progress\nhint: try \"git cherry-pick (--continue | {skip}--abort | --quit)\""
            ),
            None => "error: a cherry-pick or revert is already in progress".to_string(),
        });
    }
    if !load_conflicts(repo)?.is_empty() {
        return Err(unmerged_refusal(action));
    }
    if ids.is_empty() {
        return Err("error: empty commit set passed".into());
    }
    let steps: Vec<(Action, Oid)> = ids.into_iter().map(|id| (action, id)).collect();
    if !single {
        let dir = sequencer_dir(repo);
        let head = repo.head().1.map(|h| hex(&h)).unwrap_or_default();
        write_file(&dir.join("head"), format!("{head}\n").as_bytes())?;
        write_file(&dir.join("abort-safety"), format!("{head}\n").as_bytes())?;
        save_todo(repo, &steps)?;
    }
    pick_all(sh, repo, o, steps, !single, io)
}

fn save_todo(repo: &Repo, steps: &[(Action, Oid)]) -> Result<(), String> {
    let mut t = String::new();
    for (a, id) in steps {
        t.push_str(&todo_line(repo, *a, id)?);
    }
    write_file(&sequencer_dir(repo).join("todo"), t.as_bytes())
}

fn load_todo(repo: &Repo) -> Result<Vec<(Action, Oid)>, String> {
    let t = std::fs::read_to_string(sequencer_dir(repo).join("todo")).unwrap_or_default();
    let mut out = Vec::new();
    for l in t
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut w = l.split(' ');
        let a = match w.next() {
            Some("revert") => Action::Revert,
            _ => Action::Pick,
        };
        let id = w
            .next()
            .and_then(|r| resolve(repo, r))
            .ok_or_else(|| format!("error: invalid line: {l}"))?;
        out.push((a, id));
    }
    Ok(out)
}

/// Runs the steps; with `multi` the sequencer's todo follows each one, so that a stop can
/// be continued.
fn pick_all(
    sh: &dyn Ctx,
    repo: &Repo,
    o: Opts,
    steps: Vec<(Action, Oid)>,
    multi: bool,
    io: &Io,
) -> Result<i32, String> {
    for k in 0..steps.len() {
        if multi {
            save_todo(repo, &steps[k..])?;
        }
        let (action, id) = steps[k];
        let code = pick_one(sh, repo, action, &id, o, io);
        let code = match code {
            Ok(c) => c,
            Err(e) if multi && k == 0 => {
                let _ = std::fs::remove_dir_all(sequencer_dir(repo));
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if code != 0 {
            return Ok(code);
        }
        if multi && let Some(h) = repo.head().1 {
            write_file(
                &sequencer_dir(repo).join("abort-safety"),
                format!("{}\n", hex(&h)).as_bytes(),
            )?;
        }
    }
    if multi {
        let _ = std::fs::remove_dir_all(sequencer_dir(repo));
    }
    Ok(0)
}

/// One cherry-pick or revert: committed, or left for `--continue` (status 1).
fn pick_one(
    sh: &dyn Ctx,
    repo: &Repo,
    action: Action,
    id: &Oid,
    o: Opts,
    io: &Io,
) -> Result<i32, String> {
    let c = read_commit(repo, id)?;
    let head = repo.head().1;
    if !o.no_commit && index_dirty(repo, head)? {
        return Err(dirty_refusal(action));
    }
    if action == Action::Pick
        && o.ff
        && !o.no_commit
        && head.is_some()
        && c.parents.first() == head.as_ref()
    {
        let work = work_of(repo)?;
        let mut index = index_map(repo)?;
        two_way(
            repo,
            &work,
            &head_files(repo, head)?,
            &head_files(repo, Some(*id))?,
            &mut index,
            false,
            "merge",
        )?;
        save_index(repo, &index)?;
        set_head(sh, repo, head, *id, "cherry-pick: fast-forward")?;
        return Ok(0);
    }
    let message = message_of(action, id, &c, o.record_origin);
    let applied = apply(repo, action, id, &c, head, o.no_commit, io)?;
    let write_head = |name: &str| {
        write_file(
            &repo.git_dir.join(name),
            format!("{}\n", hex(id)).as_bytes(),
        )
    };
    match applied {
        Applied::Conflict(paths) => {
            let mut msg = format!("{message}\n# Conflicts:\n");
            for p in &paths {
                msg.push_str(&format!("#\t{}\n", String::from_utf8_lossy(p)));
            }
            write_file(&repo.git_dir.join("MERGE_MSG"), msg.as_bytes())?;
            match action {
                Action::Pick if !o.no_commit => write_head("CHERRY_PICK_HEAD")?,
                Action::Revert => write_head("REVERT_HEAD")?,
                _ => {}
            }
            let (verb, cmd) = match action {
                Action::Pick => ("apply", "cherry-pick"),
                Action::Revert => ("revert", "revert"),
            };
            let mut err = format!(
                "error: could not {verb} {}... {}\n",
                abbrev(id),
                first_line(&c.message)
            );
            if o.no_commit {
                err.push_str("hint: after resolving the conflicts, mark the corrected paths\nhint: with 'git add <paths>' or 'git rm <paths>'\n");
            } else {
                err.push_str(&format!(
                    "hint: After resolving the conflicts, mark them with\nhint: \"git add/rm <pathspec>\", then run\nhint: \"git {cmd} --continue\".\nhint: You can instead skip this commit with \"git {cmd} --skip\".\nhint: To abort and get back to the state before \"git {cmd}\",\nhint: run \"git {cmd} --abort\".\n"
                ));
            }
            err.push_str(
                "hint: Disable this message with \"git config advice.mergeConflict false\"\n",
            );
            io.eprint(&err);
            Ok(1)
        }
        Applied::Clean(tree) => {
            write_file(&repo.git_dir.join("MERGE_MSG"), message.as_bytes())?;
            if o.no_commit {
                if action == Action::Revert {
                    write_head("REVERT_HEAD")?;
                }
                return Ok(0);
            }
            let head_tree = match head {
                Some(h) => Some(read_commit(repo, &h)?.tree),
                None => None,
            };
            if action == Action::Pick {
                write_head("CHERRY_PICK_HEAD")?;
            }
            if head_tree == Some(tree) {
                // Nothing left to commit: git's commit says so (its advice first, as its
                // stdout is flushed at exit), and the pick waits.
                if action == Action::Pick {
                    io.eprint(super::write::EMPTY_PICK);
                    io.eprint(super::write::EMPTY_PICK_SINGLE);
                }
                super::status::commit_status(repo, Path::new(&sh.cwd()), io)?;
                return Ok(1);
            }
            let author = match action {
                Action::Pick => c.author.clone(),
                Action::Revert => ident(sh, repo, "AUTHOR")?,
            };
            let new = make_commit(sh, repo, tree, head, &author, &message)?;
            let what = match action {
                Action::Pick => "cherry-pick",
                Action::Revert => "revert",
            };
            set_head(
                sh,
                repo,
                head,
                new,
                &format!("{what}: {}", subject(&message)),
            )?;
            let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
            state::post_commit_cleanup(repo);
            io.print(&commit_summary(repo, &new, true)?);
            Ok(0)
        }
    }
}

fn seq_continue(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let todo = sequencer_dir(repo).join("todo");
    let stopped = cherry_pick_head(repo).is_some() || revert_head(repo).is_some();
    if !todo.is_file() {
        if !stopped {
            return Err("error: no cherry-pick or revert in progress".into());
        }
        return super::write::conclude(sh, repo, io);
    }
    let steps = load_todo(repo)?;
    if stopped {
        let code = super::write::conclude(sh, repo, io)?;
        if code != 0 {
            return Ok(code);
        }
    }
    if index_dirty(repo, repo.head().1)? {
        return Err(dirty_refusal(action));
    }
    if !sequencer_dir(repo).exists() {
        // The commit concluded the last step.
        return Ok(0);
    }
    let rest: Vec<(Action, Oid)> = steps.into_iter().skip(1).collect();
    pick_all(sh, repo, Opts::default(), rest, true, io)
}

/// The HEAD the sequencer left after its last step (`abort-safety`): HEAD moved since
/// means the user committed, and the step is not undone.
fn rollback_is_safe(repo: &Repo) -> bool {
    let saved = std::fs::read_to_string(sequencer_dir(repo).join("abort-safety"))
        .ok()
        .and_then(|t| crate::plumbing::object::parse_hex(t.trim()));
    saved == repo.head().1
}

/// `git reset --hard TO`, as git's rebase runs it for `--skip` and `--abort`: local
/// changes are dropped (git drops them too).
fn reset_to(repo: &Repo, to: Option<Oid>) -> Result<(), String> {
    let work = work_of(repo)?;
    let head = repo.head().1;
    let files = head_files(repo, to)?;
    let mut index = index_map(repo)?;
    hard_reset(repo, &work, head, &files, &mut index)
}

/// `git reset --merge TO`, which git's sequencer runs to drop a step (`--skip`) or go back
/// (`--abort`): local changes the reset need not touch survive it; the error is git's
/// refusal when they would be lost, nothing changed.
fn merge_to(repo: &Repo, to: Oid) -> Result<(), String> {
    let work = work_of(repo)?;
    let files = head_files(repo, Some(to))?;
    crate::plumbing::checkout::merge_reset(repo, &work, &files, &hex(&to))?;
    // As `git reset` does, whatever the mode.
    if let Some(h) = repo.head().1 {
        write_file(
            &repo.git_dir.join("ORIG_HEAD"),
            format!("{}\n", hex(&h)).as_bytes(),
        )?;
    }
    Ok(())
}

fn seq_skip(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let last = state::sequencer_command(repo);
    let here = match action {
        Action::Pick => cherry_pick_head(repo).is_some(),
        Action::Revert => revert_head(repo).is_some(),
    };
    if !here {
        if last.as_deref() != Some(action.word()) {
            return Err(format!("error: no {} in progress", action.cmd()));
        }
        if !rollback_is_safe(repo) {
            return Err(format!(
                "error: there is nothing to skip\nhint: have you committed already?\nhint: try \"git {} --continue\"",
                action.cmd()
            ));
        }
    }
    if let Some(h) = repo.head().1 {
        merge_to(repo, h).map_err(|e| {
            format!(
                "{e}\nerror: failed to skip the commit\nfatal: {} failed",
                action.cmd()
            )
        })?;
    } else {
        reset_to(repo, None)?;
    }
    crate::plumbing::state::clear_state(repo);
    if !sequencer_dir(repo).join("todo").is_file() {
        return Ok(0);
    }
    let steps = load_todo(repo)?;
    let rest: Vec<(Action, Oid)> = steps.into_iter().skip(1).collect();
    pick_all(sh, repo, Opts::default(), rest, true, io)
}

fn seq_abort(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let head_file = std::fs::read_to_string(sequencer_dir(repo).join("head")).ok();
    let Some(orig) = head_file else {
        if cherry_pick_head(repo).is_none() && revert_head(repo).is_none() {
            return Err("error: no cherry-pick or revert in progress".into());
        }
        // A single pick: git's `reset --merge` refusal is all it says (128).
        match repo.head().1 {
            Some(h) => merge_to(repo, h)?,
            None => reset_to(repo, None)?,
        }
        crate::plumbing::state::clear_state(repo);
        return Ok(0);
    };
    let orig = crate::plumbing::object::parse_hex(orig.trim());
    if !rollback_is_safe(repo) {
        io.eprint("warning: You seem to have moved HEAD. Not rewinding, check your HEAD!\n");
    } else if let Some(o) = orig {
        let head = repo.head().1;
        merge_to(repo, o).map_err(|e| format!("{e}\nfatal: {} failed", action.cmd()))?;
        set_head(sh, repo, head, o, &format!("reset: moving to {}", hex(&o)))?;
    }
    let _ = std::fs::remove_dir_all(sequencer_dir(repo));
    crate::plumbing::state::clear_state(repo);
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// rebase

const REBASE_USAGE: &str = "git rebase [-i] [options] [--exec <cmd>] [--onto <newbase> | --keep-base] [<upstream> [<branch>]]
   or: git rebase [-i] [options] [--exec <cmd>] [--onto <newbase>] --root [<branch>]
   or: git rebase --continue | --abort | --skip | --edit-todo

    --[no-]onto <revision>
                          rebase onto given branch instead of upstream
    --[no-]keep-base      use the merge-base of upstream and branch as the current base
    --no-verify           allow pre-rebase hook to run
    --verify              opposite of --no-verify
    -q, --[no-]quiet      be quiet. implies --no-stat
    -v, --[no-]verbose    display a diffstat of what changed upstream
    -n, --no-stat         do not show diffstat of what changed upstream
    --stat                opposite of --no-stat
    --[no-]signoff        add a Signed-off-by trailer to each commit
    --[no-]committer-date-is-author-date
                          make committer date match author date
    --[no-]reset-author-date
                          ignore author date and use current date
    -C <n>                passed to 'git apply'
    --[no-]ignore-whitespace
                          ignore changes in whitespace
    --[no-]whitespace <action>
                          passed to 'git apply'
    -f, --[no-]force-rebase
                          cherry-pick all commits, even if unchanged
    --no-ff               cherry-pick all commits, even if unchanged
    --ff                  opposite of --no-ff
    --continue            continue
    --skip                skip current patch and continue
    --abort               abort and check out the original branch
    --quit                abort but keep HEAD where it is
    --edit-todo           edit the todo list during an interactive rebase
    --show-current-patch  show the patch file being applied or merged
    --apply               use apply strategies to rebase
    -m, --merge           use merging strategies to rebase
    -i, --interactive     let the user edit the list of commits to rebase
    --[no-]rerere-autoupdate
                          update the index with reused conflict resolution if possible
    --empty (drop|keep|stop)
                          how to handle commits that become empty
    --[no-]autosquash     move commits that begin with squash!/fixup! under -i
    --[no-]update-refs    update branches that point to commits that are being rebased
    -S, --[no-]gpg-sign[=<key-id>]
                          GPG-sign commits
    --[no-]autostash      automatically stash/stash pop before and after
    -x, --[no-]exec <exec>
                          add exec lines after each commit of the editable list
    -r, --[no-]rebase-merges[=<mode>]
                          try to rebase merges instead of skipping them
    --[no-]fork-point     use 'merge-base --fork-point' to refine upstream
    -s, --[no-]strategy <strategy>
                          use the given merge strategy
    -X, --[no-]strategy-option <option>
                          pass the argument through to the merge strategy
    --[no-]root           rebase all reachable commits up to the root(s)
    --[no-]reschedule-failed-exec
                          automatically re-schedule any `exec` that fails
    --[no-]reapply-cherry-picks
                          apply all changes, even those already present upstream
";

const REBASE_IN_PROGRESS: &str = "fatal: It seems that there is already a rebase-merge directory, and\nI wonder if you are in the middle of another rebase.  If that is the\ncase, please try\n\tgit rebase (--continue | --abort | --skip)\nIf that is not the case, please\n\trm -fr \".git/rebase-merge\"\nand run me again.  I am stopping in case you still have something\nvaluable there.\n";

/// How `rebase` was asked to go.
#[derive(Default)]
struct RebaseOpts {
    quiet: bool,
    force: bool,
    onto: Option<String>,
}

/// `git rebase [--onto NEWBASE] [UPSTREAM [BRANCH]]` and `--continue`, `--skip`,
/// `--abort`, `--quit`.
pub fn rebase(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = RebaseOpts::default();
    let mut sub: Option<String> = None;
    let mut operands: Vec<String> = Vec::new();
    let mut a = Args::with_values(args, "CsXSx");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-q" | "--quiet" => a.flag("quiet").map(|_| o.quiet = true),
            "--no-quiet" | "-v" | "--verbose" => a.flag("verbose").map(|_| o.quiet = false),
            "-f" | "--force-rebase" | "--no-ff" => a.flag("force-rebase").map(|_| o.force = true),
            "--ff" | "--no-force-rebase" => a.flag("ff").map(|_| o.force = false),
            "-m" | "--merge" | "--no-stat" | "-n" | "--stat" | "--no-autostash"
            | "--no-update-refs" | "--no-autosquash" | "--no-verify" | "--verify" => {
                a.flag(arg.trim_start_matches('-'))
            }
            "--onto" => a.value("onto").map(|v| o.onto = Some(v)),
            "--continue" | "--abort" | "--skip" | "--quit" => a.flag(&arg[2..]).map(|_| {
                sub = Some(arg[2..].to_string());
            }),
            "-i"
            | "--interactive"
            | "--edit-todo"
            | "--show-current-patch"
            | "--apply"
            | "--keep-base"
            | "--signoff"
            | "--committer-date-is-author-date"
            | "--reset-author-date"
            | "-C"
            | "--ignore-whitespace"
            | "--whitespace"
            | "--rerere-autoupdate"
            | "--empty"
            | "--autosquash"
            | "--update-refs"
            | "-S"
            | "--gpg-sign"
            | "--autostash"
            | "-x"
            | "--exec"
            | "-r"
            | "--rebase-merges"
            | "--fork-point"
            | "-s"
            | "--strategy"
            | "-X"
            | "--strategy-option"
            | "--root"
            | "--reschedule-failed-exec"
            | "--reapply-cherry-picks"
            | "--no-reapply-cherry-picks" => return super::args::not_here(io, "rebase", &arg),
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                operands.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, REBASE_USAGE);
        }
    }
    if operands.len() > 2 || (sub.is_some() && !operands.is_empty()) {
        return usage_error(io, "", REBASE_USAGE);
    }
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let in_progress = rebase_dir(&repo).is_dir();
    let r = match sub.as_deref() {
        Some(_) if !in_progress => Err("fatal: no rebase in progress".to_string()),
        Some("continue") => rebase_continue(sh, &repo, io),
        Some("skip") => rebase_skip(sh, &repo, io),
        Some("abort") => rebase_abort(sh, &repo),
        Some(_) => {
            let _ = std::fs::remove_dir_all(rebase_dir(&repo));
            Ok(0)
        }
        None if in_progress => Err(REBASE_IN_PROGRESS.to_string()),
        None => rebase_start(sh, &repo, &o, &operands, io),
    };
    match r {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

/// The commits `rebase` replays: those of `head` that `upstream` does not have, oldest
/// first, without merges and without those whose change `upstream` has already (git's
/// patch-id comparison), with the ids of the ones left out that way.
fn to_replay(repo: &Repo, upstream: Oid, head: Oid) -> Result<(Vec<Oid>, Vec<Oid>), String> {
    let ids = |starts: &[Oid]| -> Result<Vec<(Oid, Commit)>, String> {
        crate::plumbing::walk::walk(repo, starts)
    };
    let from_up: HashSet<Oid> = ids(&[upstream])?.into_iter().map(|(i, _)| i).collect();
    let from_head: HashSet<Oid> = ids(&[head])?.into_iter().map(|(i, _)| i).collect();
    let mut mine: Vec<(Oid, Commit)> = ids(&[head])?
        .into_iter()
        .filter(|(i, _)| !from_up.contains(i))
        .collect();
    mine.reverse();
    let theirs: Vec<(Oid, Commit)> = ids(&[upstream])?
        .into_iter()
        .filter(|(i, c)| !from_head.contains(i) && c.parents.len() <= 1)
        .collect();
    let mut upstream_patches: HashSet<String> = HashSet::default();
    if !mine.is_empty() {
        for (_, c) in &theirs {
            upstream_patches.insert(patch_key(repo, c)?);
        }
    }
    let (mut keep, mut skipped) = (Vec::new(), Vec::new());
    for (id, c) in mine {
        if c.parents.len() > 1 {
            continue;
        }
        if !upstream_patches.is_empty() && upstream_patches.contains(&patch_key(repo, &c)?) {
            skipped.push(id);
        } else {
            keep.push(id);
        }
    }
    Ok((keep, skipped))
}

/// What a commit changes, as git's patch id sees it: the diff without its line numbers,
/// object ids and whitespace.
fn patch_key(repo: &Repo, c: &Commit) -> Result<String, String> {
    let before = head_files(repo, c.parents.first().copied())?;
    let after = crate::plumbing::tree::tree_files(repo, c.tree)?;
    let patch = crate::plumbing::diff::patch_of_trees(repo, &before, &after)?;
    Ok(patch
        .lines()
        .filter(|l| !l.starts_with("index ") && !l.starts_with("@@"))
        .map(|l| l.split_whitespace().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n"))
}

fn rebase_start(
    sh: &dyn Ctx,
    repo: &Repo,
    o: &RebaseOpts,
    operands: &[String],
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (head_ref, head) = repo.head();
    let commit = |r: &str| resolve(repo, r).and_then(|id| repo.peel_commit(&id).ok());
    let upstream_name = match operands.first() {
        Some(u) => u.clone(),
        None => {
            let b = head_ref
                .as_deref()
                .map(|r| r.trim_start_matches("refs/heads/").to_string());
            match b
                .as_deref()
                .and_then(|b| crate::plumbing::repo::upstream_of(repo, b))
            {
                Some(u) => u,
                None => {
                    let b = b.unwrap_or_default();
                    io.print(&format!(
                        "There is no tracking information for the current branch.\nPlease specify which branch you want to rebase against.\nSee git-rebase(1) for details.\n\n    git rebase '<branch>'\n\nIf you wish to set tracking information for this branch you can do so with:\n\n    git branch --set-upstream-to=<remote>/<branch> {b}\n\n"
                    ));
                    return Ok(1);
                }
            }
        }
    };
    let upstream = commit(&upstream_name)
        .ok_or_else(|| format!("fatal: invalid upstream '{upstream_name}'"))?;
    let (onto_name, onto) = match &o.onto {
        Some(n) => (
            n.clone(),
            commit(n).ok_or_else(|| format!("fatal: Does not point to a valid commit '{n}'"))?,
        ),
        None => (upstream_name.clone(), upstream),
    };
    // The branch rebased: BRANCH (switched to first), or HEAD's.
    let (switch_to, head_name, orig) = match operands.get(1) {
        Some(b) => {
            let full = format!("refs/heads/{b}");
            match repo.resolve_ref(&full) {
                Some(id) => (Some(full.clone()), full, id),
                None => {
                    let id =
                        commit(b).ok_or_else(|| format!("fatal: no such branch/commit '{b}'"))?;
                    (None, "detached HEAD".to_string(), id)
                }
            }
        }
        None => {
            let h = head.ok_or("fatal: invalid upstream 'HEAD'")?;
            (
                None,
                head_ref.clone().unwrap_or_else(|| "detached HEAD".into()),
                h,
            )
        }
    };
    // The work tree and the index must be clean.
    let index = index_map(repo)?;
    let mut tree = sh_utility::sys::TreeStat::new(&work);
    let unstaged = index
        .values()
        .any(|e| worktree_change(&mut tree, e).is_some())
        || !load_conflicts(repo)?.is_empty();
    let staged = index_dirty(repo, head)?;
    if unstaged || staged {
        let mut msg = String::new();
        if unstaged {
            msg.push_str("error: cannot rebase: You have unstaged changes.\n");
        }
        if staged {
            if unstaged {
                msg.push_str("error: additionally, your index contains uncommitted changes.\n");
            } else {
                msg.push_str("error: cannot rebase: Your index contains uncommitted changes.\n");
            }
        }
        msg.push_str("error: Please commit or stash them.\n");
        io.eprint(&msg);
        return Ok(1);
    }
    let short = head_name.trim_start_matches("refs/heads/").to_string();
    // Nothing to do: onto is where the branch starts from, and upstream has nothing more.
    let base = crate::plumbing::walk::merge_base(repo, onto, orig)?;
    let up_base = crate::plumbing::walk::merge_base(repo, upstream, orig)?;
    let up_to_date = base == Some(onto) && up_base == Some(onto);
    if o.force && up_to_date && !o.quiet {
        if head_name == "detached HEAD" {
            io.print("HEAD is up to date, rebase forced.\n");
        } else {
            io.print(&format!(
                "Current branch {} is up to date, rebase forced.\n",
                head_name.trim_start_matches("refs/heads/")
            ));
        }
    }
    if !o.force && up_to_date {
        if let Some(b) = &switch_to {
            switch_branch(
                sh,
                repo,
                &work,
                b,
                orig,
                &format!("rebase: checkout {short}"),
            )?;
        }
        if !o.quiet {
            if head_name == "detached HEAD" {
                io.print("HEAD is up to date.\n");
            } else {
                io.print(&format!("Current branch {short} is up to date.\n"));
            }
        }
        return Ok(0);
    }
    let (picks, skipped) = to_replay(repo, upstream, orig)?;
    if !skipped.is_empty() && !o.quiet {
        let mut w = String::new();
        for s in &skipped {
            w.push_str(&format!(
                "warning: skipped previously applied commit {}\n",
                abbrev(s)
            ));
        }
        w.push_str("hint: use --reapply-cherry-picks to include skipped commits\nhint: Disable this message with \"git config advice.skippedCherryPicks false\"\n");
        io.eprint(&w);
    }
    // The state, then HEAD detached at onto.
    let dir = rebase_dir(repo);
    write_file(&dir.join("head-name"), format!("{head_name}\n").as_bytes())?;
    write_file(&dir.join("onto"), format!("{}\n", hex(&onto)).as_bytes())?;
    write_file(
        &dir.join("orig-head"),
        format!("{}\n", hex(&orig)).as_bytes(),
    )?;
    write_file(&dir.join("interactive"), b"")?;
    if o.quiet {
        write_file(&dir.join("quiet"), b"")?;
    }
    if o.force {
        write_file(&dir.join("force"), b"")?;
    }
    let mut todo = String::new();
    for p in &picks {
        let c = read_commit(repo, p)?;
        todo.push_str(&format!("pick {} {}\n", abbrev(p), first_line(&c.message)));
    }
    write_file(&dir.join("git-rebase-todo"), todo.as_bytes())?;
    write_file(&dir.join("done"), b"")?;
    write_file(&dir.join("end"), format!("{}\n", picks.len()).as_bytes())?;
    write_file(&dir.join("msgnum"), b"0\n")?;
    write_file(
        &repo.git_dir.join("ORIG_HEAD"),
        format!("{}\n", hex(&orig)).as_bytes(),
    )?;
    let mut index = index;
    let from = head_files(repo, head)?;
    two_way(
        repo,
        &work,
        &from,
        &head_files(repo, Some(onto))?,
        &mut index,
        false,
        "checkout",
    )?;
    save_index(repo, &index)?;
    write_file(
        &repo.git_dir.join("HEAD"),
        format!("{}\n", hex(&onto)).as_bytes(),
    )?;
    reflog(
        sh,
        repo,
        head,
        onto,
        &format!("rebase (start): checkout {onto_name}"),
    );
    rebase_run(sh, repo, io)
}

/// Checks out branch `full` (at `id`) from wherever HEAD is.
fn switch_branch(
    sh: &dyn Ctx,
    repo: &Repo,
    work: &Path,
    full: &str,
    id: Oid,
    msg: &str,
) -> Result<(), String> {
    let head = repo.head().1;
    let mut index = index_map(repo)?;
    two_way(
        repo,
        work,
        &head_files(repo, head)?,
        &head_files(repo, Some(id))?,
        &mut index,
        false,
        "checkout",
    )?;
    save_index(repo, &index)?;
    write_file(
        &repo.git_dir.join("HEAD"),
        format!("ref: {full}\n").as_bytes(),
    )?;
    reflog(sh, repo, head, id, msg);
    Ok(())
}

fn read_state(repo: &Repo, f: &str) -> String {
    std::fs::read_to_string(rebase_dir(repo).join(f))
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// Replays the rest of the todo list: each commit as a pick (a commit whose parent is HEAD
/// is kept as it is), until the end or a conflict.
fn rebase_run(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let dir = rebase_dir(repo);
    let quiet = dir.join("quiet").exists();
    let force = dir.join("force").exists();
    let end: usize = read_state(repo, "end").parse().unwrap_or(0);
    loop {
        let todo = read_state(repo, "git-rebase-todo");
        let mut lines: Vec<&str> = todo.lines().filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            break;
        }
        let line = lines.remove(0).to_string();
        let rest: String = lines.iter().map(|l| format!("{l}\n")).collect();
        write_file(&dir.join("git-rebase-todo"), rest.as_bytes())?;
        let mut done = std::fs::read_to_string(dir.join("done")).unwrap_or_default();
        done.push_str(&line);
        done.push('\n');
        write_file(&dir.join("done"), done.as_bytes())?;
        let n: usize = read_state(repo, "msgnum").parse().unwrap_or(0) + 1;
        write_file(&dir.join("msgnum"), format!("{n}\n").as_bytes())?;
        if !quiet {
            io.eprint(&format!("Rebasing ({n}/{end})\r"));
        }
        let id = line
            .split(' ')
            .nth(1)
            .and_then(|r| resolve(repo, r))
            .ok_or_else(|| format!("error: invalid line: {line}"))?;
        let c = read_commit(repo, &id)?;
        let head = repo.head().1;
        if !force && c.parents.first() == head.as_ref() {
            let work = work_of(repo)?;
            let mut index = index_map(repo)?;
            two_way(
                repo,
                &work,
                &head_files(repo, head)?,
                &head_files(repo, Some(id))?,
                &mut index,
                false,
                "merge",
            )?;
            save_index(repo, &index)?;
            set_head(
                sh,
                repo,
                head,
                id,
                &format!("rebase (pick): {}", subject(&c.message)),
            )?;
            continue;
        }
        let stop = |e: String| -> Result<i32, String> {
            io.eprint(&format!(
                "{e}\nCould not apply {}... {}\n",
                abbrev(&id),
                first_line(&c.message)
            ));
            Ok(1)
        };
        let applied = match apply(repo, Action::Pick, &id, &c, head, false, io) {
            Ok(a) => a,
            Err(e) => return stop(e),
        };
        match applied {
            Applied::Conflict(paths) => {
                let mut msg = c.message.clone();
                msg.push_str("\n# Conflicts:\n");
                for p in &paths {
                    msg.push_str(&format!("#\t{}\n", String::from_utf8_lossy(p)));
                }
                write_file(&repo.git_dir.join("MERGE_MSG"), msg.as_bytes())?;
                write_file(&dir.join("message"), msg.as_bytes())?;
                write_file(
                    &dir.join("stopped-sha"),
                    format!("{}\n", hex(&id)).as_bytes(),
                )?;
                io.eprint(&format!(
                    "error: could not apply {}... {}\nhint: Resolve all conflicts manually, mark them as resolved with\nhint: \"git add/rm <conflicted_files>\", then run \"git rebase --continue\".\nhint: You can instead skip this commit: run \"git rebase --skip\".\nhint: To abort and get back to the state before \"git rebase\", run \"git rebase --abort\".\nhint: Disable this message with \"git config advice.mergeConflict false\"\nCould not apply {}... {}\n",
                    abbrev(&id),
                    first_line(&c.message),
                    abbrev(&id),
                    first_line(&c.message)
                ));
                return Ok(1);
            }
            Applied::Clean(tree) => {
                let head_tree = match head {
                    Some(h) => Some(read_commit(repo, &h)?.tree),
                    None => None,
                };
                // A commit whose change is already there is dropped (--empty=drop).
                if head_tree == Some(tree) {
                    io.eprint(&format!(
                        "dropping {} {} -- patch contents already upstream\n",
                        hex(&id),
                        first_line(&c.message)
                    ));
                    continue;
                }
                let new = make_commit(sh, repo, tree, head, &c.author, &c.message)?;
                set_head(
                    sh,
                    repo,
                    head,
                    new,
                    &format!("rebase (pick): {}", subject(&c.message)),
                )?;
            }
        }
    }
    rebase_finish(sh, repo, io, quiet)
}

/// The branch rebased is moved to HEAD and checked out again.
fn rebase_finish(sh: &dyn Ctx, repo: &Repo, io: &Io, quiet: bool) -> Result<i32, String> {
    let head_name = read_state(repo, "head-name");
    let head = repo.head().1.ok_or("fatal: no HEAD")?;
    if head_name.starts_with("refs/") {
        write_file(
            &repo.git_dir.join(&head_name),
            format!("{}\n", hex(&head)).as_bytes(),
        )?;
        write_file(
            &repo.git_dir.join("HEAD"),
            format!("ref: {head_name}\n").as_bytes(),
        )?;
        reflog(
            sh,
            repo,
            Some(head),
            head,
            &format!("rebase (finish): returning to {head_name}"),
        );
    }
    let _ = std::fs::remove_dir_all(rebase_dir(repo));
    let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
    if !quiet {
        io.eprint(&format!("Successfully rebased and updated {head_name}.\n"));
    }
    Ok(0)
}

fn rebase_continue(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let conflicts = load_conflicts(repo)?;
    if !conflicts.is_empty() {
        let mut paths: Vec<Vec<u8>> = conflicts.into_iter().map(|e| e.path).collect();
        paths.dedup();
        let mut out: String = paths
            .iter()
            .map(|p| format!("{}: needs merge\n", String::from_utf8_lossy(p)))
            .collect();
        out.push_str(
            "You must edit all merge conflicts and then\nmark them as resolved using git add\n",
        );
        io.print(&out);
        return Ok(1);
    }
    let head = repo.head().1;
    if index_dirty(repo, head)? {
        // The step that stopped: its staged resolution becomes its commit.
        let stopped = crate::plumbing::object::parse_hex(&read_state(repo, "stopped-sha"))
            .ok_or("error: could not commit staged changes.")?;
        let c = read_commit(repo, &stopped)?;
        let message = std::fs::read_to_string(rebase_dir(repo).join("message"))
            .unwrap_or_else(|_| c.message.clone());
        let message = crate::plumbing::commit::clean_message(
            &crate::plumbing::commit::strip_comments(&message),
        );
        let index = index_map(repo)?;
        let entries: Vec<&IndexEntry> = index.values().collect();
        let tree = write_trees(repo, &entries, 0)?;
        let new = make_commit(sh, repo, tree, head, &c.author, &message)?;
        set_head(
            sh,
            repo,
            head,
            new,
            &format!("rebase (continue): {}", subject(&message)),
        )?;
        io.print(&commit_summary(repo, &new, false)?);
    }
    let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
    rebase_run(sh, repo, io)
}

fn rebase_skip(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    reset_to(repo, repo.head().1)?;
    let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
    rebase_run(sh, repo, io)
}

fn rebase_abort(sh: &dyn Ctx, repo: &Repo) -> Result<i32, String> {
    let head_name = read_state(repo, "head-name");
    let orig = crate::plumbing::object::parse_hex(&read_state(repo, "orig-head"))
        .ok_or("fatal: could not read orig-head")?;
    let head = repo.head().1;
    reset_to(repo, Some(orig))?;
    if head_name.starts_with("refs/") {
        write_file(
            &repo.git_dir.join("HEAD"),
            format!("ref: {head_name}\n").as_bytes(),
        )?;
    } else {
        write_file(
            &repo.git_dir.join("HEAD"),
            format!("{}\n", hex(&orig)).as_bytes(),
        )?;
    }
    reflog(
        sh,
        repo,
        head,
        orig,
        &format!("rebase (abort): returning to {head_name}"),
    );
    let _ = std::fs::remove_dir_all(rebase_dir(repo));
    let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
    Ok(0)
}
