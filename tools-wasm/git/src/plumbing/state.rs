//! What an unfinished cherry-pick, revert or rebase leaves in `.git`, in git's own files
//! (`CHERRY_PICK_HEAD`, `REVERT_HEAD`, `sequencer/`, `rebase-merge/`), read here for
//! `status` and for the sequencer (`sequencer.rs`), which writes them. A module below both,
//! so that neither imports the other.

use std::path::PathBuf;

use super::object::{Oid, hex, parse_hex};
use super::repo::Repo;

/// The commit an id file of `.git` names (`CHERRY_PICK_HEAD`, `REVERT_HEAD`).
pub(crate) fn id_file(repo: &Repo, name: &str) -> Option<Oid> {
    let t = std::fs::read_to_string(repo.git_dir.join(name)).ok()?;
    parse_hex(t.trim())
}

pub(crate) fn cherry_pick_head(repo: &Repo) -> Option<Oid> {
    id_file(repo, "CHERRY_PICK_HEAD")
}

pub(crate) fn revert_head(repo: &Repo) -> Option<Oid> {
    id_file(repo, "REVERT_HEAD")
}

/// `.git/sequencer`: a cherry-pick or revert of several commits under way.
pub(crate) fn sequencer_dir(repo: &Repo) -> PathBuf {
    repo.git_dir.join("sequencer")
}

/// The command of the sequencer's next step (`pick` or `revert`), as git reads it to know
/// which of the two is under way.
pub(crate) fn sequencer_command(repo: &Repo) -> Option<String> {
    let t = std::fs::read_to_string(sequencer_dir(repo).join("todo")).ok()?;
    let first = t
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))?;
    match first.split(' ').next()? {
        "pick" | "p" => Some("pick".into()),
        "revert" => Some("revert".into()),
        _ => None,
    }
}

/// `.git/rebase-merge`: a rebase under way.
pub(crate) fn rebase_dir(repo: &Repo) -> PathBuf {
    repo.git_dir.join("rebase-merge")
}

/// A rebase under way, as `status` shows it.
pub(crate) struct Rebase {
    /// The branch being rebased (its short name), None for a detached HEAD.
    pub branch: Option<String>,
    pub onto: Oid,
    /// The steps done (the last one is the one stopped at) and those still to do, as
    /// `pick <abbrev> <subject>` lines.
    pub done: Vec<String>,
    pub todo: Vec<String>,
}

pub(crate) fn rebase(repo: &Repo) -> Option<Rebase> {
    let dir = rebase_dir(repo);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let onto = parse_hex(read("onto")?.trim())?;
    let head = read("head-name").unwrap_or_default();
    let head = head.trim();
    let branch = (head != "detached HEAD" && !head.is_empty())
        .then(|| head.trim_start_matches("refs/heads/").to_string());
    let lines = |f: &str| -> Vec<String> {
        read(f)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    Some(Rebase {
        branch,
        onto,
        done: lines("done"),
        todo: lines("git-rebase-todo"),
    })
}

/// Whether `git status` and `git commit` see the unfinished operation as git's `whence`
/// other than a plain commit (a merge or a cherry-pick): git then leaves out its
/// "restore --staged" hints.
pub(crate) fn hides_unstage_hints(repo: &Repo) -> bool {
    repo.git_dir.join("MERGE_HEAD").is_file() || cherry_pick_head(repo).is_some()
}

/// The first line of the long status while a rebase has HEAD detached.
pub(crate) fn rebase_heading(repo: &Repo) -> Option<String> {
    let r = rebase(repo)?;
    Some(format!(
        "interactive rebase in progress; onto {}\n",
        &hex(&r.onto)[..7]
    ))
}

/// The paragraph the long status gives an unfinished rebase, cherry-pick or revert (a
/// merge's is the porcelain's own), its blank line included.
pub(crate) fn status_block(repo: &Repo, unmerged: bool) -> Option<String> {
    let mut out = String::new();
    if repo.git_dir.join("rebase-apply/applying").is_file() {
        return Some(
            "You are in the middle of an am session.\n  (fix conflicts and then run \"git am --continue\")\n  (use \"git am --skip\" to skip this patch)\n  (use \"git am --abort\" to restore the original branch)\n\n"
                .into(),
        );
    }
    if let Some(r) = rebase(repo) {
        if r.done.is_empty() {
            out.push_str("No commands done.\n");
        } else {
            let n = r.done.len();
            if n == 1 {
                out.push_str("Last command done (1 command done):\n");
            } else {
                out.push_str(&format!("Last commands done ({n} commands done):\n"));
            }
            for l in &r.done[n.saturating_sub(2)..] {
                out.push_str(&format!("   {l}\n"));
            }
            if n > 2 {
                out.push_str("  (see more in file .git/rebase-merge/done)\n");
            }
        }
        if r.todo.is_empty() {
            out.push_str("No commands remaining.\n");
        } else {
            let n = r.todo.len();
            if n == 1 {
                out.push_str("Next command to do (1 remaining command):\n");
            } else {
                out.push_str(&format!("Next commands to do ({n} remaining commands):\n"));
            }
            for l in r.todo.iter().take(2) {
                out.push_str(&format!("   {l}\n"));
            }
            out.push_str("  (use \"git rebase --edit-todo\" to view and edit)\n");
        }
        let onto = &hex(&r.onto)[..7];
        match &r.branch {
            Some(b) => out.push_str(&format!(
                "You are currently rebasing branch '{b}' on '{onto}'.\n"
            )),
            None => out.push_str("You are currently rebasing.\n"),
        }
        if unmerged {
            out.push_str("  (fix conflicts and then run \"git rebase --continue\")\n  (use \"git rebase --skip\" to skip this patch)\n  (use \"git rebase --abort\" to check out the original branch)\n");
        } else {
            out.push_str("  (all conflicts fixed: run \"git rebase --continue\")\n");
        }
        out.push('\n');
        return Some(out);
    }
    let last = sequencer_command(repo);
    let (verb, cmd, what, id) = if let Some(id) = cherry_pick_head(repo) {
        ("cherry-picking", "cherry-pick", "Cherry-pick", Some(id))
    } else if let Some(id) = revert_head(repo) {
        ("reverting", "revert", "Revert", Some(id))
    } else {
        match last.as_deref() {
            Some("pick") => ("cherry-picking", "cherry-pick", "Cherry-pick", None),
            Some("revert") => ("reverting", "revert", "Revert", None),
            _ => return None,
        }
    };
    match id {
        Some(id) => out.push_str(&format!(
            "You are currently {verb} commit {}.\n",
            &hex(&id)[..7]
        )),
        None => out.push_str(&format!("{what} currently in progress.\n")),
    }
    if unmerged {
        out.push_str(&format!(
            "  (fix conflicts and run \"git {cmd} --continue\")\n"
        ));
    } else if id.is_none() {
        out.push_str(&format!("  (run \"git {cmd} --continue\" to continue)\n"));
    } else {
        out.push_str(&format!(
            "  (all conflicts fixed: run \"git {cmd} --continue\")\n"
        ));
    }
    out.push_str(&format!(
        "  (use \"git {cmd} --skip\" to skip this patch)\n  (use \"git {cmd} --abort\" to cancel the {cmd} operation)\n\n"
    ));
    Some(out)
}

/// What git does after a commit, a reset or a `--quit` ends a step: CHERRY_PICK_HEAD and
/// REVERT_HEAD go, and the sequencer's state too once its last step is done.
pub(crate) fn post_commit_cleanup(repo: &Repo) {
    let had = cherry_pick_head(repo).is_some() || revert_head(repo).is_some();
    for f in ["CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE"] {
        let _ = std::fs::remove_file(repo.git_dir.join(f));
    }
    if !had {
        return;
    }
    let todo = std::fs::read_to_string(sequencer_dir(repo).join("todo"));
    if let Ok(t) = todo
        && t.trim_end_matches('\n').lines().count() <= 1
    {
        let _ = std::fs::remove_dir_all(sequencer_dir(repo));
    }
}

/// Forgets an unfinished merge (reset, commit, --abort).
pub(crate) fn clear_state(repo: &Repo) {
    for f in ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"] {
        let _ = std::fs::remove_file(repo.git_dir.join(f));
    }
    super::state::post_commit_cleanup(repo);
}

/// The commit an unfinished merge is merging (MERGE_HEAD).
pub(crate) fn merge_head(repo: &Repo) -> Option<Oid> {
    let t = std::fs::read_to_string(repo.git_dir.join("MERGE_HEAD")).ok()?;
    super::object::parse_hex(t.trim())
}
