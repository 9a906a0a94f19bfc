//! git's sequencer: `cherry-pick` and `revert` ([`pick`]: one commit, or several with
//! `.git/sequencer` for `--continue`, `--skip`, `--abort` and `--quit`) and the merge backend
//! of `rebase` ([`rebase`]: `.git/rebase-merge`). This module is the step they share: a
//! commit applied as a three-way merge of trees ([`crate::plumbing::merge::merge_trees`]),
//! the message and author git gives the new commit (so the ids are git's), the summary
//! printed for it, and git's refusals. A conflict stops with git's messages, markers, index
//! stages, `CHERRY_PICK_HEAD`/`REVERT_HEAD` and `MERGE_MSG`. The editor is never started:
//! burrow is never run from a terminal, where git does not start one for these commands
//! either, and `rebase --continue` keeps the message as it is (as `GIT_EDITOR=true` does).

mod pick;
mod rebase;

pub(crate) use pick::{cherry_pick, revert};
pub(crate) use rebase::rebase;
use sh_utility::io::Io;

use crate::plumbing::checkout::{hard_reset, two_way, work_of};
use crate::plumbing::commit::{ident_name_email, ident_time, read_commit, subject};
use crate::plumbing::date::git_date;
use crate::plumbing::index::{Files, index_files, index_map, save_index};
use crate::plumbing::merge::merge_trees;
use crate::plumbing::object::{Commit, Oid, hex};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::{head_files, write_trees};

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

/// One step: the commit it takes (or reverts) and the parent it is taken against (with
/// `-m N`, a merge's Nth).
struct Step<'a> {
    action: Action,
    id: &'a Oid,
    commit: &'a Commit,
    mainline: Option<usize>,
}

/// Applies a step's commit (or its reverse) to the index and the work tree at HEAD `head`
/// (the index itself with `-n`). Errors are git's messages, before anything was written.
fn apply(
    repo: &Repo,
    step: &Step,
    head: Option<Oid>,
    no_commit: bool,
    io: &Io,
) -> Result<Applied, String> {
    let &Step {
        action,
        id,
        commit: c,
        mainline,
    } = step;
    let work = work_of(repo)?;
    let parent = match mainline_parent(id, c, mainline)? {
        Some(p) => head_files(repo, Some(p))?,
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
    if let Some(e) = merged.local_changes(&work, &ours, &index) {
        return Err(e);
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

/// The parent a step is taken against: the only one, or with `-m N` (git's mainline) the
/// Nth of a merge; git's errors for a merge without `-m` and a parent it does not have.
fn mainline_parent(id: &Oid, c: &Commit, mainline: Option<usize>) -> Result<Option<Oid>, String> {
    match mainline {
        None if c.parents.len() > 1 => Err(format!(
            "error: commit {} is a merge but no -m option was given.",
            hex(id)
        )),
        None => Ok(c.parents.first().copied()),
        Some(m) => match c.parents.get(m.wrapping_sub(1)) {
            Some(p) => Ok(Some(*p)),
            None => Err(format!(
                "error: commit {} does not have parent {m}",
                hex(id)
            )),
        },
    }
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
fn message_of(
    action: Action,
    id: &Oid,
    c: &Commit,
    record_origin: bool,
    mainline: Option<usize>,
) -> String {
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
                let p = c.parents[mainline
                    .unwrap_or(1)
                    .saturating_sub(1)
                    .min(c.parents.len() - 1)];
                m.push_str(&format!(", reversing\nchanges made to {}", hex(&p)));
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

/// `git reset --hard TO`, as git's rebase runs it for `--skip` and `--abort`: local
/// changes are dropped (git drops them too).
fn reset_to(repo: &Repo, to: Option<Oid>) -> Result<(), String> {
    let work = work_of(repo)?;
    let head = repo.head().1;
    let files = head_files(repo, to)?;
    let mut index = index_map(repo)?;
    hard_reset(repo, &work, head, &files, &mut index)
}
