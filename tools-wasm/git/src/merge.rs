//! `git merge` and what `pull` needs of it: the merge base, fast-forwards, a three-way
//! merge of trees with a line-level merge of files both sides changed (git's conflict
//! markers, conflicts refined to the lines that really differ, as xdiff's zealous level
//! does), the unmerged index stages and MERGE_HEAD/MERGE_MSG that `commit` concludes and
//! `merge --abort` undoes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use foldhash::HashSet;

use super::diff::lines;
use super::object::{Kind, Oid, hex};
use super::porcelain::{abbrev, head_files, reachable, read_commit, resolve};
use super::repo::{IndexEntry, Repo};
use super::worktree::{Files, Index, hard_reset, two_way, work_of};
use super::write::{index_map, save_index, write_file, write_object};
use super::{Args, usage_error};
use sh_utility::Ctx;
use sh_utility::io::Io;

/// What `merge --ff-only` and `pull --ff-only` say of diverged histories.
pub(super) const NOT_FAST_FORWARD: &str = "hint: Diverging branches can't be fast-forwarded, you need to either:\nhint:\nhint: \tgit merge --no-ff\nhint:\nhint: or:\nhint:\nhint: \tgit rebase\nhint:\nhint: Disable this message with \"git config advice.diverging false\"\nfatal: Not possible to fast-forward, aborting.";

/// Forgets an unfinished merge (reset, commit, --abort).
pub(super) fn clear_state(repo: &Repo) {
    for f in ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"] {
        let _ = std::fs::remove_file(repo.git_dir.join(f));
    }
    super::state::post_commit_cleanup(repo);
}

/// The commit an unfinished merge is merging (MERGE_HEAD).
pub(super) fn merge_head(repo: &Repo) -> Option<Oid> {
    let t = std::fs::read_to_string(repo.git_dir.join("MERGE_HEAD")).ok()?;
    super::object::parse_hex(t.trim())
}

/// The best common ancestor of `a` and `b`: of the commits both reach, one no other
/// common commit descends from (the newest by commit date when there are several).
pub(super) fn merge_base(repo: &Repo, a: Oid, b: Oid) -> Result<Option<Oid>, String> {
    let from_a = reachable(repo, a)?;
    let from_b = reachable(repo, b)?;
    let common: HashSet<Oid> = from_a.intersection(&from_b).copied().collect();
    let mut best: Option<(i64, Oid)> = None;
    for c in &common {
        // The newest common commit by date: for histories without criss-cross merges
        // that is the one no other common commit descends from.
        let cc = read_commit(repo, c)?;
        let t = super::porcelain::ident_time(&cc.committer).0;
        if best.is_none_or(|(bt, bid)| t > bt || (t == bt && *c < bid)) {
            best = Some((t, *c));
        }
    }
    Ok(best.map(|(_, id)| id))
}

/// The changed regions from `base` to `side`: (base start, base end, side start, side end).
fn hunks(base: &[&[u8]], side: &[&[u8]]) -> Vec<(usize, usize, usize, usize)> {
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, base, side);
    let mut out: Vec<(usize, usize, usize, usize)> = Vec::new();
    for op in ops {
        if let similar::DiffOp::Equal { .. } = op {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some(h) if h.1 == o.start && h.3 == n.start => {
                h.1 = o.end;
                h.3 = n.end;
            }
            _ => out.push((o.start, o.end, n.start, n.end)),
        }
    }
    out
}

/// A three-way merge of file contents: the result and how many conflicts it holds (marked
/// `<<<<<<< OURS` / `=======` / `>>>>>>> THEIRS`, as git marks them).
pub(super) fn merge_files(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    ours_name: &str,
    theirs_name: &str,
) -> (Vec<u8>, usize) {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (ho, ht) = (hunks(&b, &o), hunks(&b, &t));
    let mut out: Vec<u8> = Vec::new();
    let mut conflicts = 0;
    let (mut i, mut j, mut pos) = (0, 0, 0);
    while i < ho.len() || j < ht.len() {
        // A group: hunks of either side whose base ranges overlap or touch.
        let start_o = ho.get(i).map(|h| h.0);
        let start_t = ht.get(j).map(|h| h.0);
        let gs = match (start_o, start_t) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        let (i0, j0) = (i, j);
        let mut ge = gs;
        loop {
            let mut grew = false;
            if let Some(h) = ho.get(i)
                && h.0 <= ge
                && (h.0 >= gs)
            {
                ge = ge.max(h.1);
                i += 1;
                grew = true;
            }
            if let Some(h) = ht.get(j)
                && h.0 <= ge
                && (h.0 >= gs)
            {
                ge = ge.max(h.1);
                j += 1;
                grew = true;
            }
            if !grew {
                break;
            }
        }
        for l in &b[pos..gs] {
            out.extend_from_slice(l);
        }
        // Each side's text for base[gs..ge].
        let side = |hs: &[(usize, usize, usize, usize)], lines: &[&[u8]]| -> Vec<u8> {
            let mut v = Vec::new();
            let mut p = gs;
            for h in hs {
                for l in &b[p..h.0] {
                    v.extend_from_slice(l);
                }
                for l in &lines[h.2..h.3] {
                    v.extend_from_slice(l);
                }
                p = h.1;
            }
            for l in &b[p..ge] {
                v.extend_from_slice(l);
            }
            v
        };
        let (os, ts) = (&ho[i0..i], &ht[j0..j]);
        if ts.is_empty() {
            out.extend(side(os, &o));
        } else if os.is_empty() {
            out.extend(side(ts, &t));
        } else {
            let (a, c) = (side(os, &o), side(ts, &t));
            if a == c {
                out.extend(a);
            } else {
                conflicts += refine(&a, &c, ours_name, theirs_name, &mut out);
            }
        }
        pos = ge;
    }
    for l in &b[pos.min(b.len())..] {
        out.extend_from_slice(l);
    }
    (out, conflicts)
}

/// Writes a conflict between `a` and `c`, with the lines both sides share left outside the
/// markers; returns the number of conflicts written.
fn refine(a: &[u8], c: &[u8], ours_name: &str, theirs_name: &str, out: &mut Vec<u8>) -> usize {
    let (la, lc) = (lines(a), lines(c));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &la, &lc);
    let mut n = 0;
    let mut pending: Option<(Vec<u8>, Vec<u8>)> = None;
    let flush = |p: &mut Option<(Vec<u8>, Vec<u8>)>, out: &mut Vec<u8>, n: &mut usize| {
        if let Some((x, y)) = p.take() {
            let nl = |v: &mut Vec<u8>| {
                if !v.is_empty() && v.last() != Some(&b'\n') {
                    v.push(b'\n');
                }
            };
            let (mut x, mut y) = (x, y);
            nl(&mut x);
            nl(&mut y);
            out.extend_from_slice(format!("<<<<<<< {ours_name}\n").as_bytes());
            out.extend(x);
            out.extend_from_slice(b"=======\n");
            out.extend(y);
            out.extend_from_slice(format!(">>>>>>> {theirs_name}\n").as_bytes());
            *n += 1;
        }
    };
    for op in ops {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                flush(&mut pending, out, &mut n);
                for l in &la[old_index..old_index + len] {
                    out.extend_from_slice(l);
                }
            }
            _ => {
                let p = pending.get_or_insert_with(Default::default);
                for l in &la[op.old_range()] {
                    p.0.extend_from_slice(l);
                }
                for l in &lc[op.new_range()] {
                    p.1.extend_from_slice(l);
                }
            }
        }
    }
    flush(&mut pending, out, &mut n);
    n
}

/// What a three-way merge of trees gives.
pub(super) struct Merged {
    /// The merged files, conflicted paths with ours (or theirs when ours has none).
    pub files: Files,
    /// Paths whose work tree file is the content merge's result (markers and all).
    pub contents: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Unmerged paths: their (base, ours, theirs).
    pub conflicts: BTreeMap<Vec<u8>, [Option<(u32, Oid)>; 3]>,
    /// What git prints as it goes (`Auto-merging`, `CONFLICT (...)`).
    pub messages: String,
}

impl Merged {
    /// Leaves the conflicts for the user: each conflicted file's merged text (markers and
    /// all) in the work tree, and the index as `index` with every unmerged path as its
    /// stages 1-3 (base, ours, theirs).
    pub(super) fn write_conflicts(
        &self,
        repo: &Repo,
        work: &Path,
        index: &Index,
    ) -> Result<(), String> {
        for (p, data) in &self.contents {
            let path = work.join(String::from_utf8_lossy(p).as_ref());
            std::fs::write(&path, data)
                .map_err(|e| format!("error: unable to write {}: {e}", path.display()))?;
        }
        let mut entries: Vec<IndexEntry> = index
            .iter()
            .filter(|(p, _)| !self.conflicts.contains_key(*p))
            .map(|(_, e)| e.clone())
            .collect();
        for (p, sides) in &self.conflicts {
            for (k, s) in sides.iter().enumerate() {
                if let Some((mode, oid)) = s {
                    entries.push(IndexEntry {
                        path: p.clone(),
                        mode: *mode,
                        oid: *oid,
                        size: 0,
                        mtime: (0, 0),
                        stage: k as u8 + 1,
                    });
                }
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path).then(a.stage.cmp(&b.stage)));
        write_file(
            &repo.git_dir.join("index"),
            &super::repo::write_index(&entries),
        )
    }
}

pub(super) fn merge_trees(
    repo: &Repo,
    base: &Files,
    ours: &Files,
    theirs: &Files,
    ours_name: &str,
    theirs_name: &str,
) -> Result<Merged, String> {
    let mut paths: BTreeSet<&Vec<u8>> = base.keys().collect();
    paths.extend(ours.keys());
    paths.extend(theirs.keys());
    let mut m = Merged {
        files: Files::new(),
        contents: BTreeMap::new(),
        conflicts: BTreeMap::new(),
        messages: String::new(),
    };
    for p in paths {
        let (b, o, t) = (base.get(p), ours.get(p), theirs.get(p));
        let name = String::from_utf8_lossy(p).into_owned();
        let take = |m: &mut Merged, v: Option<&(u32, Oid)>| {
            if let Some(v) = v {
                m.files.insert(p.clone(), *v);
            }
        };
        if o == t || b == t {
            take(&mut m, o);
            continue;
        }
        if b == o {
            take(&mut m, t);
            continue;
        }
        match (o, t) {
            (Some(&(om, oo)), Some(&(tm, to))) if om != 0o160000 && tm != 0o160000 => {
                m.messages.push_str(&format!("Auto-merging {name}\n"));
                let read = |id: &Oid| repo.read_kind(id, Kind::Blob);
                let base_data = match b {
                    Some((_, bid)) => read(bid)?.to_vec(),
                    None => Vec::new(),
                };
                let (od, td) = (read(&oo)?, read(&to)?);
                let mode = if om == b.map_or(om, |x| x.0) { tm } else { om };
                let binary = |d: &[u8]| d.iter().take(8000).any(|&c| c == 0);
                if binary(&od) || binary(&td) || binary(&base_data) {
                    m.messages.push_str(&format!(
                        "warning: Cannot merge binary files: {name} (HEAD vs. {theirs_name})\nCONFLICT (content): Merge conflict in {name}\n"
                    ));
                    m.files.insert(p.clone(), (om, oo));
                    m.conflicts
                        .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
                    continue;
                }
                let (data, n) = merge_files(&base_data, &od, &td, ours_name, theirs_name);
                if n == 0 {
                    let id = write_object(repo, Kind::Blob, &data)?;
                    m.files.insert(p.clone(), (mode, id));
                } else {
                    let kind = if b.is_none() { "add/add" } else { "content" };
                    m.messages
                        .push_str(&format!("CONFLICT ({kind}): Merge conflict in {name}\n"));
                    m.files.insert(p.clone(), (om, oo));
                    m.contents.insert(p.clone(), data);
                    m.conflicts
                        .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
                }
            }
            (Some(v), None) | (None, Some(v)) => {
                // Deleted on one side, changed on the other: the changed version stays.
                let (deleted_in, modified_in) = if o.is_none() {
                    ("HEAD", theirs_name)
                } else {
                    (theirs_name, "HEAD")
                };
                m.messages.push_str(&format!(
                    "CONFLICT (modify/delete): {name} deleted in {deleted_in} and modified in {modified_in}.  Version {modified_in} of {name} left in tree.\n"
                ));
                m.files.insert(p.clone(), *v);
                m.conflicts
                    .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
            }
            _ => {
                m.messages
                    .push_str(&format!("CONFLICT (submodule): Merge conflict in {name}\n"));
                take(&mut m, o);
                m.conflicts
                    .insert(p.clone(), [b.copied(), o.copied(), t.copied()]);
            }
        }
    }
    Ok(m)
}

/// How `merge` was asked to go.
#[derive(Default)]
pub(super) struct MergeOpts {
    pub ff_only: bool,
    pub no_ff: bool,
    pub quiet: bool,
    pub message: Option<String>,
}

/// Merges `theirs` into HEAD: up to date, a fast-forward, or a merge commit (or the
/// conflicts left for `commit`). `name` is what the merge is called in its message.
pub(super) fn merge_commit(
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
        super::worktree::reflog(
            sh,
            repo,
            Some(ours),
            theirs,
            &format!("merge {name}: Fast-forward"),
        );
        if !o.quiet {
            io.print("Fast-forward\n");
            io.print(&super::write::tree_stat(repo, &ours_files, &theirs_files)?);
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
    let mut tree = sh_utility::sys::TreeStat::new(&work);
    let dirty: Vec<&Vec<u8>> = merged
        .files
        .keys()
        .chain(ours_files.keys())
        .filter(|p| merged.files.get(*p) != ours_files.get(*p) || merged.contents.contains_key(*p))
        .filter(|p| {
            index
                .get(*p)
                .is_some_and(|e| super::porcelain::worktree_change(&mut tree, e).is_some())
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !dirty.is_empty() {
        let list: String = dirty
            .iter()
            .map(|p| format!("\t{}\n", String::from_utf8_lossy(p)))
            .collect();
        io.eprint(&format!(
            "error: Your local changes to the following files would be overwritten by merge:\n{list}Please commit your changes or stash them before you merge.\nAborting\nMerge with strategy ort failed.\n"
        ));
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
    let tree = super::write::write_trees(repo, &entries, 0)?;
    let author = super::write::ident(sh, repo, "AUTHOR")?;
    let committer = super::write::ident(sh, repo, "COMMITTER")?;
    let body = format!(
        "tree {}\nparent {}\nparent {}\nauthor {author}\ncommitter {committer}\n\n{}",
        hex(&tree),
        hex(&ours),
        hex(&theirs),
        super::write::clean_message(&message)
    );
    let id = write_object(repo, Kind::Commit, body.as_bytes())?;
    write_file(
        &repo.git_dir.join(&target_ref),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    super::worktree::reflog(
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
        io.print(&super::write::tree_stat(repo, &ours_files, &merged.files)?);
    }
    Ok(0)
}

/// `git merge [--ff | --no-ff | --ff-only] [-m MSG] [-q] BRANCH` and `git merge --abort`.
pub fn merge(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git merge [<options>] [<commit>...]\n   or: git merge --abort\n   or: git merge --continue";
    let mut o = MergeOpts::default();
    let mut abort = false;
    let mut cont = false;
    let mut revs: Vec<String> = Vec::new();
    let mut a = Args::with_values(args, "m");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "--ff-only" => a.flag("ff-only").map(|_| o.ff_only = true),
            "--no-ff" => a.flag("no-ff").map(|_| o.no_ff = true),
            "--ff" => a.flag("ff").map(|_| o.no_ff = false),
            "-q" | "--quiet" => a.flag("quiet").map(|_| o.quiet = true),
            "-m" | "--message" => a.value("message").map(|v| o.message = Some(v)),
            "--no-edit" | "--stat" | "--no-progress" | "--progress" => Ok(()),
            "--abort" => a.flag("abort").map(|_| abort = true),
            "--continue" => a.flag("continue").map(|_| cont = true),
            "-s"
            | "--strategy"
            | "-X"
            | "--strategy-option"
            | "--squash"
            | "--no-commit"
            | "--edit"
            | "-e"
            | "--allow-unrelated-histories"
            | "--signoff"
            | "-S"
            | "--autostash"
            | "--quit"
            | "--log"
            | "--verify-signatures"
            | "-n"
            | "--no-stat"
            | "--into-name" => return super::not_here(io, "merge", &arg),
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                revs.push(arg);
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, USAGE);
        }
    }
    let (repo, _) = match super::open_repo(sh, io) {
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
        if !super::porcelain::load_conflicts(&repo)?.is_empty() {
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
                super::porcelain::upstream_of(&repo, &b)
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
        Err(e) => super::fail(io, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_merges_take_both_sides() {
        let base = b"a\nb\nc\nd\ne\n";
        let ours = b"A\nb\nc\nd\ne\n";
        let theirs = b"a\nb\nc\nd\nE\n";
        assert_eq!(
            merge_files(base, ours, theirs, "HEAD", "dev"),
            (b"A\nb\nc\nd\nE\n".to_vec(), 0)
        );
    }

    #[test]
    fn conflicts_are_marked_and_refined() {
        let base = b"1\n2\n3\n";
        let ours = b"1\ntwo\n3\n";
        let theirs = b"1\nTWO\n3\n";
        let (out, n) = merge_files(base, ours, theirs, "HEAD", "dev");
        assert_eq!(n, 1);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "1\n<<<<<<< HEAD\ntwo\n=======\nTWO\n>>>>>>> dev\n3\n"
        );
        // The same change on both sides is no conflict.
        assert_eq!(
            merge_files(base, ours, ours, "HEAD", "dev"),
            (ours.to_vec(), 0)
        );
    }
}
