//! `git diff` (work tree against the index, `--cached` index against HEAD, one commit against
//! the work tree, two commits or `A..B`; `--stat`, `--name-only`, `--name-status`, `-- PATHS`)
//! and the diff of `git show` (through `git log`'s options: [`super::log::show`]), in git's
//! unified format: `diff --git` headers, `index` lines, hunks with three lines of context and
//! the default function-name context after `@@`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use foldhash::HashMap;
use sh_utility::Ctx;
use sh_utility::io::Io;

use crate::plumbing::commit::read_commit;
use crate::plumbing::diff::{Format, Side, pair_renames, parse_format, render};
use crate::plumbing::index::{Files, load_index, worktree_change};
use crate::plumbing::object::{Kind, Oid, hash};
use crate::plumbing::pathspec::{ambiguous, in_scopes};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::rev::resolve;
pub(crate) use crate::plumbing::rev::scope_of;
use crate::plumbing::text::prefix;
use crate::plumbing::tree::tree_files;

pub fn diff(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    match run_diff(&repo, &cwd, args, io) {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

fn run_diff(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let mut cached = false;
    let mut format = Format::Patch;
    let mut revs: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut quiet = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        match a.as_str() {
            "--cached" | "--staged" => cached = true,
            "--quiet" | "--exit-code" => quiet = a == "--quiet",
            "--no-color" | "--no-ext-diff" => {}
            "--" => {
                paths.extend(args[i..].iter().cloned());
                break;
            }
            s if parse_format(s, &mut format) => {}
            s if s.starts_with('-') => {
                return Err(format!("fatal: 'git diff {s}' is not supported in burrow"));
            }
            s => {
                if resolve_range(repo, s).is_some() {
                    revs.push(s.to_string());
                } else {
                    // A path (git requires it to exist when not after --).
                    let p = cwd.join(s);
                    if p.symlink_metadata().is_err() {
                        return Err(ambiguous(s));
                    }
                    paths.push(s.to_string());
                    paths.extend(args[i..].iter().cloned());
                    break;
                }
            }
        }
    }
    let work = repo.work.clone();
    // The index, read once: its entries' stat data lets the work tree side skip every file
    // that has not changed since it was staged, as git does, instead of hashing it.
    let entries = load_index(repo)?;
    let index_files = || -> Result<Files, String> {
        Ok(entries
            .iter()
            .map(|e| (e.path.clone(), (e.mode, e.oid)))
            .collect())
    };
    let by_path: HashMap<&[u8], &IndexEntry> =
        entries.iter().map(|e| (e.path.as_slice(), e)).collect();
    let commit_files = |rev: &str| -> Result<Files, String> {
        let id = resolve(repo, rev).ok_or_else(|| ambiguous(rev))?;
        let c = read_commit(repo, &id)?;
        tree_files(repo, c.tree)
    };
    // (old, new, whether the new side is the work tree)
    let (old, new, worktree): (Files, Files, bool) = match (revs.as_slice(), cached) {
        ([], false) => (index_files()?, index_files()?, true),
        ([], true) => {
            let head = match repo.head().1 {
                Some(h) => tree_files(repo, read_commit(repo, &h)?.tree)?,
                None => BTreeMap::new(),
            };
            (head, index_files()?, false)
        }
        ([r], c) if r.contains("..") => {
            if c {
                return Err("fatal: --cached with a range is not supported".into());
            }
            let (a, b) = resolve_range(repo, r).ok_or_else(|| ambiguous(r))?;
            (commit_files(&a)?, commit_files(&b)?, false)
        }
        ([r], true) => (commit_files(r)?, index_files()?, false),
        ([r], false) => (commit_files(r)?, index_files()?, true),
        ([a, b], false) => (commit_files(a)?, commit_files(b)?, false),
        _ => return Err("fatal: this form of 'git diff' is not supported in burrow".into()),
    };
    let pre = prefix(repo, cwd);
    let scopes: Vec<Vec<u8>> = paths.iter().map(|p| scope_of(&pre, p)).collect();
    let wanted = |p: &[u8]| in_scopes(&scopes, p);
    // The work tree side: each index path's current content.
    let read_blob =
        |id: &Oid| -> Result<Vec<u8>, String> { Ok(repo.read_kind(id, Kind::Blob)?.to_vec()) };
    let empty = hash(Kind::Blob, b"");
    let mut changes: Vec<(Vec<u8>, Option<Side>, Option<Side>)> = Vec::new();
    let mut all: Vec<&Vec<u8>> = old.keys().chain(new.keys()).collect();
    all.sort();
    all.dedup();
    let mut tree = work.as_deref().map(sh_utility::sys::TreeStat::new);
    for p in all {
        if !wanted(p) {
            continue;
        }
        let a = old.get(p).map(|(m, id)| (*m, *id));
        let b: Option<Side> = if worktree && !new.contains_key(p) {
            // Not in the index: not tracked, so deleted against the revision whatever the
            // work tree holds there (git diff REV compares tracked paths).
            None
        } else if worktree {
            let Some(w) = &work else {
                return Err("fatal: this operation must be run in a work tree".into());
            };
            let file = w.join(String::from_utf8_lossy(p).as_ref());
            let staged = by_path.get(p.as_slice());
            let unchanged =
                |e: &&&IndexEntry| (tree.as_mut()).is_some_and(|t| worktree_change(t, e).is_none());
            if let Some(e) = staged.filter(unchanged) {
                // As staged: its content is the index's blob, read below if it is shown.
                Some(Side {
                    mode: e.mode,
                    oid: e.oid,
                    data: Vec::new(),
                })
            } else {
                match file.symlink_metadata() {
                    Err(_) => None,
                    Ok(m) if m.is_dir() => None,
                    Ok(m) => {
                        let data = if m.file_type().is_symlink() {
                            std::fs::read_link(&file)
                                .map(|t| t.to_string_lossy().into_owned().into_bytes())
                                .unwrap_or_default()
                        } else {
                            std::fs::read(&file).unwrap_or_default()
                        };
                        let mode = if m.file_type().is_symlink() {
                            0o120000
                        } else {
                            new.get(p).map(|x| x.0).unwrap_or(0o100644)
                        };
                        Some(Side {
                            mode,
                            oid: hash(Kind::Blob, &data),
                            data,
                        })
                    }
                }
            }
        } else {
            new.get(p).map(|(m, id)| Side {
                mode: *m,
                oid: *id,
                data: Vec::new(),
            })
        };
        match (&a, &b) {
            (Some((m, id)), Some(s)) if *id == s.oid && *m == s.mode => continue,
            (None, None) => continue,
            _ => {}
        }
        if a.is_some_and(|(m, _)| m == 0o160000) || b.as_ref().is_some_and(|s| s.mode == 0o160000) {
            continue;
        }
        let a = match a {
            Some((m, id)) => Some(Side {
                mode: m,
                oid: id,
                data: read_blob(&id)?,
            }),
            None => None,
        };
        let b = match b {
            Some(s) if !worktree || (s.data.is_empty() && s.oid != empty) => Some(Side {
                data: read_blob(&s.oid)?,
                ..s
            }),
            other => other,
        };
        changes.push((p.clone(), a, b));
    }
    let changes = pair_renames(changes);
    if quiet {
        return Ok(i32::from(!changes.is_empty()));
    }
    io.print(&render(&changes, format));
    Ok(0)
}

/// `A..B` as its two ends (an empty end is HEAD); a single revision as itself.
fn resolve_range(repo: &Repo, s: &str) -> Option<(String, String)> {
    match s.split_once("..") {
        Some((a, b)) => {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            (resolve(repo, a).is_some() && resolve(repo, b).is_some())
                .then(|| (a.to_string(), b.to_string()))
        }
        None => resolve(repo, s).map(|_| (s.to_string(), s.to_string())),
    }
}

/// `git show`: `git log`'s options and formats over the objects named (see
/// [`super::log::show`]).
pub fn show(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    match super::log::show(&repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}
