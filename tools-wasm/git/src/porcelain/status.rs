//! `git status`: long, `-s`, `--porcelain`, `-b`, with pathspecs; the staged changes
//! against HEAD (compared tree by tree, as git's cache-tree spares work), the work tree's
//! changes, untracked files, and the state of an unfinished merge, pick or rebase; the long
//! block that `commit` and `stash` print too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use sh_utility::io::Io;
use sh_utility::sys::TreeStat;

use super::args::{Opt, Spec, Unknown};
use crate::plumbing::commit::read_commit;
use crate::plumbing::index::worktree_change;
use crate::plumbing::object::{Kind, Oid};
use crate::plumbing::pathspec::{Pathspec, in_pathspecs};
use crate::plumbing::refs::detached_from;
use crate::plumbing::repo::{IndexEntry, Repo, load_all, upstream_of};
use crate::plumbing::text::{prefix, quote_as, quotes_high_bytes, relative, tracking_text};
use crate::plumbing::tree::tree_files;
use crate::plumbing::untracked::{
    Ignores, Listing, untracked, untracked_in_scopes, untracked_matching,
};
use crate::plumbing::walk::tracking_of;

// ----- status -----

/// Paths with their staged change (`A`, `M`, `D`, `R`).
type Staged = BTreeMap<Vec<u8>, char>;

/// What the index stages against HEAD's tree: path -> `A`, `M` or `D` (by id, as status
/// compares), and for each `D` the id HEAD has. Each directory's tree id is computed from the
/// index as `git write-tree` would make it; a directory whose id is HEAD's is skipped without
/// reading HEAD's trees under it (git's cache-tree spares it the same work), so a clean index
/// reads no tree at all.
fn staged_changes(
    repo: &Repo,
    head_tree: Option<Oid>,
    index: &[IndexEntry],
) -> Result<(Staged, BTreeMap<Vec<u8>, Oid>), String> {
    let entries: Vec<&IndexEntry> = index.iter().collect();
    let mut ids: HashMap<Vec<u8>, Oid> = HashMap::new();
    crate::plumbing::tree::build_trees(&entries, 0, &mut |dir, data| {
        let id = crate::plumbing::object::hash(Kind::Tree, data);
        ids.insert(dir.to_vec(), id);
        Ok(id)
    })?;
    let mut staged = BTreeMap::new();
    let mut gone = BTreeMap::new();
    compare_level(repo, &entries, 0, head_tree, &ids, &mut staged, &mut gone)?;
    for p in gone.keys() {
        staged.insert(p.clone(), 'D');
    }
    Ok((staged, gone))
}

/// One directory of [`staged_changes`]: `entries` are the index entries under it (all sharing
/// its `prefix_len` bytes), `head` its tree in HEAD, if HEAD has one there.
fn compare_level(
    repo: &Repo,
    entries: &[&IndexEntry],
    prefix_len: usize,
    head: Option<Oid>,
    ids: &HashMap<Vec<u8>, Oid>,
    staged: &mut BTreeMap<Vec<u8>, char>,
    gone: &mut BTreeMap<Vec<u8>, Oid>,
) -> Result<(), String> {
    let dir: &[u8] = entries.first().map_or(&[][..], |e| &e.path[..prefix_len]);
    if let Some(h) = head
        && !entries.is_empty()
        && ids.get(dir) == Some(&h)
    {
        return Ok(());
    }
    let head_entries = match head {
        Some(h) => crate::plumbing::object::parse_tree(&repo.read_kind(&h, Kind::Tree)?)?,
        None => Vec::new(),
    };
    let in_head: HashMap<&[u8], &crate::plumbing::object::TreeEntry> = head_entries
        .iter()
        .map(|e| (e.name.as_slice(), e))
        .collect();
    let mut files: HashSet<&[u8]> = HashSet::new();
    let mut dirs: HashSet<&[u8]> = HashSet::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = &entries[i].path[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                files.insert(rest);
                match in_head.get(rest) {
                    Some(h) if !h.is_tree() => {
                        if h.oid != entries[i].oid {
                            staged.insert(entries[i].path.clone(), 'M');
                        }
                    }
                    _ => {
                        staged.insert(entries[i].path.clone(), 'A');
                    }
                }
                i += 1;
            }
            Some(slash) => {
                let name = &rest[..slash];
                let mut j = i;
                while j < entries.len() {
                    let r = &entries[j].path[prefix_len..];
                    if r.len() > slash && &r[..slash] == name && r[slash] == b'/' {
                        j += 1;
                    } else {
                        break;
                    }
                }
                dirs.insert(name);
                let sub = in_head.get(name).filter(|h| h.is_tree()).map(|h| h.oid);
                compare_level(
                    repo,
                    &entries[i..j],
                    prefix_len + slash + 1,
                    sub,
                    ids,
                    staged,
                    gone,
                )?;
                i = j;
            }
        }
    }
    for e in &head_entries {
        let mut path = dir.to_vec();
        path.extend_from_slice(&e.name);
        if e.is_tree() {
            if !dirs.contains(e.name.as_slice()) {
                path.push(b'/');
                for (p, (_, id)) in tree_files(repo, e.oid)? {
                    let mut full = path.clone();
                    full.extend_from_slice(&p);
                    gone.insert(full, id);
                }
            }
        } else if !files.contains(e.name.as_slice()) {
            gone.insert(path, e.oid);
        }
    }
    Ok(())
}

/// What `git commit` prints when there is nothing to commit: the long status, with its
/// "Initial commit" heading on an unborn branch.
pub(crate) fn long_status(repo: &Repo, cwd: &Path, io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, &[], io, false)
}

pub(crate) fn commit_status(repo: &Repo, cwd: &Path, io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, &[], io, true)
}

pub(crate) fn status(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    status_as(repo, cwd, args, io, false)
}

#[derive(Default)]
struct Opts {
    short: bool,
    porcelain: bool,
    show_branch: bool,
}

/// status's options, as git's `builtin/commit.c` declares them.
const SPEC: Spec<Opts> = Spec {
    name: "status",
    usage: "git status [<options>] [--] [<pathspec>...]",
    options: &[
        Opt::flag("-s/--short", |o| o.short = true),
        Opt::optional("--porcelain", |o, v| {
            o.porcelain = true;
            match v.as_deref() {
                None | Some("v1") => Ok(()),
                Some(v) => Err(format!("fatal: unsupported porcelain version '{v}'").into()),
            }
        }),
        Opt::flag("-b/--branch", |o| o.show_branch = true),
        Opt::flag("--long", |o| o.short = false),
    ],
    refused: "",
    unknown: Unknown::Usage,
    help: &[],
};

fn status_as(
    repo: &Repo,
    cwd: &Path,
    args: &[String],
    io: &Io,
    for_commit: bool,
) -> Result<i32, String> {
    let mut o = Opts::default();
    let paths = match SPEC.parse(args, &mut o, io) {
        Ok(paths) => paths,
        Err(code) => return Ok(code),
    };
    let Opts {
        short,
        porcelain,
        show_branch,
    } = o;
    let Some(work) = repo.work.clone() else {
        return Err("fatal: this operation must be run in a work tree".into());
    };
    let (head_ref, head_id) = repo.head();
    // One read of the index: merged entries, and a merge's conflicts.
    let (conflicts, index): (Vec<IndexEntry>, Vec<IndexEntry>) =
        load_all(repo)?.into_iter().partition(|e| e.stage != 0);
    let head_tree = match head_id {
        Some(id) => Some(read_commit(repo, &id)?.tree),
        None => None,
    };
    // What the index stages against HEAD, and the ids of the paths it no longer has.
    let (mut staged, gone_ids) = staged_changes(repo, head_tree, &index)?;
    let mut unstaged: BTreeMap<Vec<u8>, char> = BTreeMap::new();
    let mut in_index: HashSet<Vec<u8>> = HashSet::new();
    let mut tracked_dirs: HashSet<Vec<u8>> = HashSet::new();
    let mut tree = TreeStat::new(&work);
    for e in &index {
        in_index.insert(e.path.clone());
        let mut p = e.path.as_slice();
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            // Its own parents are in the set too once it is.
            if tracked_dirs.contains(p) {
                break;
            }
            tracked_dirs.insert(p.to_vec());
        }
        if let Some(c) = worktree_change(&mut tree, e) {
            unstaged.insert(e.path.clone(), c);
        }
    }
    // Unmerged paths (a merge's conflicts), by the stages the index has for them.
    let mut stages: BTreeMap<Vec<u8>, u8> = BTreeMap::new();
    for e in conflicts {
        *stages.entry(e.path).or_default() |= 1 << e.stage;
    }
    let unmerged: BTreeMap<Vec<u8>, &str> = stages
        .into_iter()
        .map(|(p, s)| {
            let code = match s >> 1 {
                0b111 => "UU",
                0b110 => "AA",
                0b011 => "UD",
                0b101 => "DU",
                0b010 => "AU",
                0b100 => "UA",
                _ => "UU",
            };
            (p, code)
        })
        .collect();
    for p in unmerged.keys() {
        staged.remove(p);
        unstaged.remove(p);
        in_index.insert(p.clone());
        let mut d = p.as_slice();
        while let Some(i) = d.iter().rposition(|&b| b == b'/') {
            d = &d[..i];
            tracked_dirs.insert(d.to_vec());
        }
    }
    // Pathspecs limit what is shown (a file, or a directory's contents; a glob, `*` matching
    // `/`), as in git.
    let pre = prefix(repo, cwd);
    let specs: Vec<Pathspec> = paths.iter().map(|p| Pathspec::new(&pre, p)).collect();
    let globs = specs.iter().any(Pathspec::is_glob);
    let scopes: Vec<Vec<u8>> = specs.iter().map(|s| s.path().to_vec()).collect();
    let wanted = |p: &[u8]| in_pathspecs(&specs, p);
    staged.retain(|p, _| wanted(p));
    unstaged.retain(|p, _| wanted(p));
    let unmerged: BTreeMap<Vec<u8>, &str> =
        unmerged.into_iter().filter(|(p, _)| wanted(p)).collect();
    let merging = crate::plumbing::state::merge_head(repo).is_some();
    // Exact renames: a path gone from HEAD whose content a new path has (by new path).
    // Renames with edits (git's similarity detection) show as a deletion and an addition.
    let mut renames: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let index_ids: BTreeMap<&Vec<u8>, Oid> = index.iter().map(|e| (&e.path, e.oid)).collect();
    let gone: Vec<Vec<u8>> = staged
        .iter()
        .filter(|(_, c)| **c == 'D')
        .map(|(p, _)| p.clone())
        .collect();
    for old in gone {
        let Some(&id) = gone_ids.get(&old) else {
            continue;
        };
        let new = staged
            .iter()
            .find(|(p, c)| **c == 'A' && index_ids.get(p) == Some(&id) && !renames.contains_key(*p))
            .map(|(p, _)| p.clone());
        if let Some(new) = new {
            staged.remove(&old);
            staged.insert(new.clone(), 'R');
            renames.insert(new, old);
        }
    }
    // The top's .gitignore is read by `untracked` itself.
    let mut ign = Ignores::new(repo, &work);
    let mut new_files = Vec::new();
    if globs {
        untracked_matching(
            &work,
            b"",
            &in_index,
            &tracked_dirs,
            &mut ign,
            &specs,
            &mut new_files,
        );
    } else {
        untracked(
            &work,
            b"",
            &in_index,
            &tracked_dirs,
            &mut ign,
            Listing::Directories,
            &mut new_files,
        );
        if !scopes.is_empty() {
            new_files = untracked_in_scopes(&work, new_files, &scopes);
        }
    }

    let branch_name = head_ref
        .as_deref()
        .map(|b| b.trim_start_matches("refs/heads/").to_string());
    // The upstream: branch.<b>.remote and .merge.
    let upstream = branch_name.as_deref().and_then(|b| upstream_of(repo, b));
    let tracking = tracking_of(repo, upstream.as_deref(), head_id)?;

    let pre = if porcelain {
        Vec::new()
    } else {
        prefix(repo, cwd)
    };
    // Short and porcelain lines quote a path with a space too (git's QUOTE_PATH_QUOTE_SP).
    let high = quotes_high_bytes(repo);
    let show = |p: &[u8]| quote_as(&relative(p, &pre), high, short || porcelain);
    if short || porcelain {
        let mut out = String::new();
        if show_branch {
            out.push_str("## ");
            match (&branch_name, head_id) {
                (Some(b), None) => out.push_str(&format!("No commits yet on {b}")),
                (Some(b), Some(_)) => {
                    out.push_str(b);
                    if let Some(u) = &upstream {
                        out.push_str(&format!("...{u}"));
                        match tracking {
                            Some(Some((0, 0))) | None => {}
                            Some(Some((a, 0))) => out.push_str(&format!(" [ahead {a}]")),
                            Some(Some((0, b))) => out.push_str(&format!(" [behind {b}]")),
                            Some(Some((a, b))) => {
                                out.push_str(&format!(" [ahead {a}, behind {b}]"))
                            }
                            Some(None) => out.push_str(" [gone]"),
                        }
                    }
                }
                (None, _) => out.push_str("HEAD (no branch)"),
            }
            out.push('\n');
        }
        let mut paths: BTreeSet<&Vec<u8>> = staged.keys().collect();
        paths.extend(unstaged.keys());
        paths.extend(unmerged.keys());
        for p in paths {
            if let Some(code) = unmerged.get(p) {
                out.push_str(&format!("{code} {}\n", show(p)));
                continue;
            }
            let x = staged.get(p).copied().unwrap_or(' ');
            let y = unstaged.get(p).copied().unwrap_or(' ');
            match renames.get(p) {
                Some(old) => out.push_str(&format!("{x}{y} {} -> {}\n", show(old), show(p))),
                None => out.push_str(&format!("{x}{y} {}\n", show(p))),
            }
        }
        for p in &new_files {
            out.push_str(&format!("?? {}\n", show(p)));
        }
        io.print(&out);
        return Ok(0);
    }

    let mut out = String::new();
    match (&branch_name, head_id) {
        (Some(b), _) => out.push_str(&format!("On branch {b}\n")),
        (None, Some(_)) if crate::plumbing::state::rebase(repo).is_some() => {
            out.push_str(&crate::plumbing::state::rebase_heading(repo).unwrap_or_default())
        }
        (None, Some(id)) => match detached_from(repo, &id) {
            Some((true, name)) => out.push_str(&format!("HEAD detached at {name}\n")),
            Some((false, name)) => out.push_str(&format!("HEAD detached from {name}\n")),
            None => out.push_str("Not currently on any branch.\n"),
        },
        (None, None) => {}
    }
    if let Some(u) = &upstream {
        out.push_str(&tracking_text(u, tracking));
        if tracking.is_some() {
            out.push('\n');
        }
    }
    if head_id.is_none() {
        out.push_str(if for_commit {
            "\nInitial commit\n\n"
        } else {
            "\nNo commits yet\n\n"
        });
    }
    if !merging
        && let Some(block) = crate::plumbing::state::status_block(repo, !unmerged.is_empty())
    {
        out.push_str(&block);
    }
    // A merge or a cherry-pick (git's `whence`) has no "restore --staged" hints.
    let no_unstage = crate::plumbing::state::hides_unstage_hints(repo);
    if merging {
        if unmerged.is_empty() {
            out.push_str("All conflicts fixed but you are still merging.\n  (use \"git commit\" to conclude merge)\n\n");
        } else {
            out.push_str("You have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\n");
        }
    }
    let label = |c: char| match c {
        'A' => "new file:   ",
        'D' => "deleted:    ",
        'T' => "typechange: ",
        'R' => "renamed:    ",
        _ => "modified:   ",
    };
    if !staged.is_empty() {
        out.push_str("Changes to be committed:\n");
        // During a merge or cherry-pick git gives no hint here.
        if no_unstage {
        } else if head_id.is_some() {
            out.push_str("  (use \"git restore --staged <file>...\" to unstage)\n");
        } else {
            out.push_str("  (use \"git rm --cached <file>...\" to unstage)\n");
        }
        for (p, c) in &staged {
            match renames.get(p) {
                Some(old) => {
                    out.push_str(&format!("\t{}{} -> {}\n", label(*c), show(old), show(p)))
                }
                None => out.push_str(&format!("\t{}{}\n", label(*c), show(p))),
            }
        }
        out.push('\n');
    }
    if !unmerged.is_empty() {
        out.push_str("Unmerged paths:\n");
        if !no_unstage && head_id.is_some() {
            out.push_str("  (use \"git restore --staged <file>...\" to unstage)\n");
        }
        if unmerged.values().all(|c| *c == "UU" || *c == "AA") {
            out.push_str("  (use \"git add <file>...\" to mark resolution)\n");
        } else {
            out.push_str("  (use \"git add/rm <file>...\" as appropriate to mark resolution)\n");
        }
        for (p, c) in &unmerged {
            let l = match *c {
                "AA" => "both added:      ",
                "UD" => "deleted by them: ",
                "DU" => "deleted by us:   ",
                "AU" => "added by us:     ",
                "UA" => "added by them:   ",
                _ => "both modified:   ",
            };
            out.push_str(&format!("\t{l}{}\n", show(p)));
        }
        out.push('\n');
    }
    if !unstaged.is_empty() {
        out.push_str("Changes not staged for commit:\n");
        if unstaged.values().any(|c| *c == 'D') {
            out.push_str("  (use \"git add/rm <file>...\" to update what will be committed)\n");
        } else {
            out.push_str("  (use \"git add <file>...\" to update what will be committed)\n");
        }
        out.push_str("  (use \"git restore <file>...\" to discard changes in working directory)\n");
        for (p, c) in &unstaged {
            out.push_str(&format!("\t{}{}\n", label(*c), show(p)));
        }
        out.push('\n');
    }
    if !new_files.is_empty() {
        out.push_str(
            "Untracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n",
        );
        for p in &new_files {
            out.push_str(&format!("\t{}\n", show(p)));
        }
        out.push('\n');
    }
    if staged.is_empty() {
        if !unstaged.is_empty() || !unmerged.is_empty() {
            out.push_str("no changes added to commit (use \"git add\" and/or \"git commit -a\")\n");
        } else if !new_files.is_empty() {
            out.push_str(
                "nothing added to commit but untracked files present (use \"git add\" to track)\n",
            );
        } else if head_id.is_none() {
            out.push_str("nothing to commit (create/copy files and use \"git add\" to track)\n");
        } else {
            out.push_str("nothing to commit, working tree clean\n");
        }
    }
    io.print(&out);
    Ok(0)
}
