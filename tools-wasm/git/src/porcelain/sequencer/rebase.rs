//! `git rebase [--onto NEWBASE] [UPSTREAM [BRANCH]]`, non-interactive: the commits to
//! replay (merges and patches already upstream left out), `.git/rebase-merge` in git's
//! layout, each step through the sequencer's three-way merge, and `--continue`, `--skip`,
//! `--abort` and `--quit`.

use std::path::Path;

use foldhash::HashSet;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::{Action, Applied, Step, apply, commit_summary, first_line, reset_to};
use crate::plumbing::checkout::{move_tree, work_of};
use crate::plumbing::commit::{make_commit, read_commit, subject};
use crate::plumbing::index::{index_dirty, index_map, load_conflicts, worktree_change};
use crate::plumbing::object::{Commit, Oid, hex};
use crate::plumbing::refs::{reflog, set_head};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::rev::resolve;
use crate::plumbing::state::rebase_dir;
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::{head_files, write_trees};
use crate::plumbing::write::write_file;
use crate::porcelain::args::{Opt, Spec, Unknown, set, usage_error};

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
    /// `--continue`, `--skip`, `--abort` or `--quit`.
    sub: Option<&'static str>,
    quiet: bool,
    force: bool,
    onto: Option<String>,
}

/// rebase's options, as git's `builtin/rebase.c` declares them.
const REBASE: Spec<RebaseOpts> = Spec {
    name: "rebase",
    usage: REBASE_USAGE,
    options: &[
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("--verbose/--no-quiet/-v", |o| o.quiet = false),
        Opt::flag("--force-rebase/-f/--no-ff", |o| o.force = true),
        Opt::flag("--ff/--no-force-rebase", |o| o.force = false),
        Opt::ignored("-m/--merge"),
        Opt::ignored("--no-stat/-n"),
        Opt::ignored("--stat"),
        Opt::ignored("--no-autostash"),
        Opt::ignored("--no-update-refs"),
        Opt::ignored("--no-autosquash"),
        Opt::ignored("--no-verify"),
        Opt::ignored("--verify"),
        Opt::value("--onto", |o, v| set(&mut o.onto, Some(v))),
        Opt::flag("--continue", |o| o.sub = Some("continue")),
        Opt::flag("--abort", |o| o.sub = Some("abort")),
        Opt::flag("--skip", |o| o.sub = Some("skip")),
        Opt::flag("--quit", |o| o.sub = Some("quit")),
    ],
    refused: "-i --interactive --edit-todo --show-current-patch --apply --keep-base --signoff --committer-date-is-author-date --reset-author-date -C --ignore-whitespace --whitespace --rerere-autoupdate --empty --autosquash --update-refs -S --gpg-sign --autostash -x --exec -r --rebase-merges --fork-point -s --strategy -X --strategy-option --root --reschedule-failed-exec --reapply-cherry-picks --no-reapply-cherry-picks",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git rebase [--onto NEWBASE] [UPSTREAM [BRANCH]]` and `--continue`, `--skip`,
/// `--abort`, `--quit`.
pub fn rebase(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = RebaseOpts::default();
    let operands = match REBASE.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let sub = o.sub;
    if operands.len() > 2 || (sub.is_some() && !operands.is_empty()) {
        return usage_error(io, "", REBASE_USAGE);
    }
    let (repo, _) = match crate::porcelain::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let in_progress = rebase_dir(&repo).is_dir();
    let r = match sub {
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
        Err(e) => crate::porcelain::args::fail(io, &e),
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
    move_tree(repo, &work, head, onto, "checkout")?;
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
    move_tree(repo, work, head, id, "checkout")?;
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
            move_tree(repo, &work_of(repo)?, head, id, "merge")?;
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
        let applied = match apply(
            repo,
            &Step {
                action: Action::Pick,
                id: &id,
                commit: &c,
                mainline: None,
            },
            head,
            false,
            io,
        ) {
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
