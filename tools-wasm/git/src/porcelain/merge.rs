//! `git merge` and what `pull` needs of it: the merge base, fast-forwards, a three-way
//! merge of trees with a line-level merge of files both sides changed (git's conflict
//! markers, conflicts refined to the lines that really differ, as xdiff's zealous level
//! does), the unmerged index stages and MERGE_HEAD/MERGE_MSG that `commit` concludes and
//! `merge --abort` undoes.

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, set};
use crate::plumbing::checkout::{hard_reset, two_way, work_of};
use crate::plumbing::index::{Files, Index, index_map, save_index};
use crate::plumbing::merge::merge_trees;
use crate::plumbing::object::{Kind, Oid, hex};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::rev::resolve;
use crate::plumbing::state::{clear_state, merge_head};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::head_files;
use crate::plumbing::walk::merge_base;
use crate::plumbing::write::{write_file, write_object};

/// What `merge --ff-only` and `pull --ff-only` say of diverged histories.
pub(crate) const NOT_FAST_FORWARD: &str = "hint: Diverging branches can't be fast-forwarded, you need to either:\nhint:\nhint: \tgit merge --no-ff\nhint:\nhint: or:\nhint:\nhint: \tgit rebase\nhint:\nhint: Disable this message with \"git config advice.diverging false\"\nfatal: Not possible to fast-forward, aborting.";

/// How `merge` was asked to go.
#[derive(Default)]
pub(crate) struct MergeOpts {
    pub ff_only: bool,
    pub no_ff: bool,
    pub quiet: bool,
    pub message: Option<String>,
}

/// Merges `theirs` into HEAD: up to date, a fast-forward, or a merge commit (or the
/// conflicts left for `commit`). `name` is what the merge is called in its message.
pub(crate) fn merge_commit(
    sh: &dyn Ctx,
    repo: &Repo,
    theirs: Oid,
    name: &str,
    label: &str,
    o: &MergeOpts,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (head_ref, head) = repo.head();
    let Some(ours) = head else {
        return Err("fatal: burrow's git cannot merge into an unborn branch yet".into());
    };
    let base = merge_base(repo, ours, theirs)?;
    if base == Some(theirs) {
        if !o.quiet {
            io.print("Already up to date.\n");
        }
        return Ok(0);
    }
    let ours_files = head_files(repo, Some(ours))?;
    let theirs_files = head_files(repo, Some(theirs))?;
    let mut index = index_map(repo)?;
    let target_ref = head_ref.clone().unwrap_or_else(|| "HEAD".into());
    if base == Some(ours) && !o.no_ff {
        // A fast-forward: the work tree moves as a checkout moves it.
        if !o.quiet {
            io.print(&format!(
                "Updating {}..{}\n",
                abbrev(&ours),
                abbrev(&theirs)
            ));
        }
        two_way(
            repo,
            &work,
            &ours_files,
            &theirs_files,
            &mut index,
            false,
            "merge",
        )?;
        save_index(repo, &index)?;
        write_file(
            &repo.git_dir.join(&target_ref),
            format!("{}\n", hex(&theirs)).as_bytes(),
        )?;
        write_file(
            &repo.git_dir.join("ORIG_HEAD"),
            format!("{}\n", hex(&ours)).as_bytes(),
        )?;
        crate::plumbing::refs::reflog(
            sh,
            repo,
            Some(ours),
            theirs,
            &format!("merge {name}: Fast-forward"),
        );
        if !o.quiet {
            io.print("Fast-forward\n");
            io.print(&crate::plumbing::diff::tree_stat(
                repo,
                &ours_files,
                &theirs_files,
            )?);
        }
        return Ok(0);
    }
    if o.ff_only {
        return Err(NOT_FAST_FORWARD.into());
    }
    // The index must be HEAD's, and no file the merge changes may have local changes.
    let staged: Vec<&Vec<u8>> = index
        .iter()
        .filter(|(p, e)| ours_files.get(*p) != Some(&(e.mode, e.oid)))
        .map(|(p, _)| p)
        .chain(ours_files.keys().filter(|p| !index.contains_key(*p)))
        .collect();
    if !staged.is_empty() {
        let list: String = staged
            .iter()
            .map(|p| format!("  {}\n", String::from_utf8_lossy(p)))
            .collect();
        io.eprint(&format!(
            "error: Your local changes to the following files would be overwritten by merge:\n{list}Merge with strategy ort failed.\n"
        ));
        return Ok(2);
    }
    let base_files = match base {
        Some(b) => head_files(repo, Some(b))?,
        None => Files::new(),
    };
    let merged = merge_trees(repo, &base_files, &ours_files, &theirs_files, "HEAD", label)?;
    // Local changes to files the merge rewrites refuse it, before anything is written.
    if let Some(e) = merged.local_changes(&work, &ours_files, &index) {
        io.eprint(&format!("{e}\nMerge with strategy ort failed.\n"));
        return Ok(2);
    }
    two_way(
        repo,
        &work,
        &ours_files,
        &merged.files,
        &mut index,
        false,
        "merge",
    )?;
    write_file(
        &repo.git_dir.join("ORIG_HEAD"),
        format!("{}\n", hex(&ours)).as_bytes(),
    )?;
    let message = o.message.clone().unwrap_or_else(|| {
        let branch = head_ref
            .as_deref()
            .map(|r| r.trim_start_matches("refs/heads/"))
            .unwrap_or("HEAD");
        if matches!(branch, "main" | "master") {
            format!("Merge {name}")
        } else {
            format!("Merge {name} into {branch}")
        }
    });
    if !merged.conflicts.is_empty() {
        merged.write_conflicts(repo, &work, &index)?;
        write_file(
            &repo.git_dir.join("MERGE_HEAD"),
            format!("{}\n", hex(&theirs)).as_bytes(),
        )?;
        let mut msg = format!("{message}\n\n# Conflicts:\n");
        for p in merged.conflicts.keys() {
            msg.push_str(&format!("#\t{}\n", String::from_utf8_lossy(p)));
        }
        write_file(&repo.git_dir.join("MERGE_MSG"), msg.as_bytes())?;
        write_file(&repo.git_dir.join("MERGE_MODE"), b"")?;
        io.print(&merged.messages);
        io.print("Automatic merge failed; fix conflicts and then commit the result.\n");
        return Ok(1);
    }
    save_index(repo, &index)?;
    let entries: Vec<&IndexEntry> = index.values().collect();
    let tree = crate::plumbing::tree::write_trees(repo, &entries, 0)?;
    let author = crate::plumbing::commit::ident(sh, repo, "AUTHOR")?;
    let committer = crate::plumbing::commit::ident(sh, repo, "COMMITTER")?;
    let body = format!(
        "tree {}\nparent {}\nparent {}\nauthor {author}\ncommitter {committer}\n\n{}",
        hex(&tree),
        hex(&ours),
        hex(&theirs),
        crate::plumbing::commit::clean_message(&message)
    );
    let id = write_object(repo, Kind::Commit, body.as_bytes())?;
    write_file(
        &repo.git_dir.join(&target_ref),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    crate::plumbing::refs::reflog(
        sh,
        repo,
        Some(ours),
        id,
        &format!("merge {name}: Merge made by the 'ort' strategy."),
    );
    // ort's own messages (`Auto-merging`) come even with -q, as in git.
    io.print(&merged.messages);
    if !o.quiet {
        io.print("Merge made by the 'ort' strategy.\n");
        io.print(&crate::plumbing::diff::tree_stat(
            repo,
            &ours_files,
            &merged.files,
        )?);
    }
    Ok(0)
}

/// What merge's command line asks for.
#[derive(Default)]
struct Invocation {
    opts: MergeOpts,
    abort: bool,
    cont: bool,
}

/// merge's options, as git's `builtin/merge.c` declares them.
const SPEC: Spec<Invocation> = Spec {
    name: "merge",
    usage: "git merge [<options>] [<commit>...]\n   or: git merge --abort\n   or: git merge --continue",
    options: &[
        Opt::flag("--ff-only", |i| i.opts.ff_only = true),
        Opt::flag("--no-ff", |i| i.opts.no_ff = true),
        Opt::flag("--ff", |i| i.opts.no_ff = false),
        Opt::flag("-q/--quiet", |i| i.opts.quiet = true),
        Opt::value("-m/--message", |i, v| set(&mut i.opts.message, Some(v))),
        Opt::ignored("--no-edit"),
        Opt::ignored("--stat"),
        Opt::ignored("--no-progress"),
        Opt::ignored("--progress"),
        Opt::flag("--abort", |i| i.abort = true),
        Opt::flag("--continue", |i| i.cont = true),
    ],
    refused: "-s --strategy -X --strategy-option --squash --no-commit --edit -e --allow-unrelated-histories --signoff -S --autostash --quit --log --verify-signatures -n --no-stat --into-name",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git merge [--ff | --no-ff | --ff-only] [-m MSG] [-q] BRANCH` and `git merge --abort`.
pub fn merge(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut inv = Invocation::default();
    let revs = match SPEC.parse(args, &mut inv, io) {
        Ok(revs) => revs,
        Err(code) => return code,
    };
    let Invocation {
        opts: o,
        abort,
        cont,
    } = inv;
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = (|| {
        if abort {
            let Some(_) = merge_head(&repo) else {
                return Err("fatal: There is no merge to abort (MERGE_HEAD missing).".into());
            };
            let work = work_of(&repo)?;
            let head = repo.head().1;
            let to = head_files(&repo, head)?;
            let mut index: Index = index_map(&repo)?;
            hard_reset(&repo, &work, head, &to, &mut index)?;
            clear_state(&repo);
            return Ok(0);
        }
        if cont {
            return Err(
                "fatal: 'git merge --continue' is not supported in burrow: run 'git commit'".into(),
            );
        }
        if !crate::plumbing::index::load_conflicts(&repo)?.is_empty() {
            return Err("error: Merging is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit.\nfatal: Exiting because of an unresolved conflict.".into());
        }
        if merge_head(&repo).is_some() {
            return Err("fatal: You have not concluded your merge (MERGE_HEAD exists).\nPlease, commit your changes before you merge.".into());
        }
        let rev = match revs.as_slice() {
            [r] => r.clone(),
            [] => {
                // The upstream, as git merges with no argument.
                let b = repo
                    .head()
                    .0
                    .map(|r| r.trim_start_matches("refs/heads/").to_string())
                    .unwrap_or_default();
                crate::plumbing::repo::upstream_of(&repo, &b)
                    .ok_or_else(|| "fatal: No remote for the current branch.".to_string())?
            }
            _ => return Err("fatal: octopus merges are not supported in burrow".into()),
        };
        let Some(id) = resolve(&repo, &rev) else {
            io.eprint(&format!("merge: {rev} - not something we can merge\n"));
            return Ok(1);
        };
        let id = repo.peel_commit(&id)?;
        let name = if repo.resolve_ref(&format!("refs/heads/{rev}")).is_some() {
            format!("branch '{rev}'")
        } else if repo.resolve_ref(&format!("refs/remotes/{rev}")).is_some() {
            format!("remote-tracking branch '{rev}'")
        } else if repo.resolve_ref(&format!("refs/tags/{rev}")).is_some() {
            format!("tag '{rev}'")
        } else {
            format!("commit '{rev}'")
        };
        merge_commit(sh, &repo, id, &name, &rev, &o, io)
    })();
    match r {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}
