//! The untracked walk (git's `dir.c`): ignore rules (`.gitignore` per directory,
//! `.git/info/exclude`, `ls-files` patterns) and the files of the work tree the index does
//! not track, whole untracked directories collapsed as status shows them.

use std::path::{Path, PathBuf};

use foldhash::HashSet;

use super::pathspec::{Pathspec, in_pathspecs};
use super::repo::Repo;

/// The ignore rules of one directory (its `.gitignore`).
pub(crate) struct Ignores {
    stack: Vec<ignore::gitignore::Gitignore>,
    /// Patterns above every file's (`ls-files -x`).
    top: Option<ignore::gitignore::Gitignore>,
    /// Whether directories' `.gitignore` files count (`ls-files` reads them only with
    /// `--exclude-standard`).
    per_dir: bool,
}

impl Ignores {
    /// No rules (`git add -f`).
    pub(crate) fn none() -> Ignores {
        Ignores {
            stack: Vec::new(),
            top: None,
            per_dir: true,
        }
    }

    /// The rules of `.git/info/exclude`.
    pub(crate) fn new(repo: &Repo, work: &Path) -> Ignores {
        Ignores::with_rules(repo, work, true, true, &[], &[])
    }

    /// The rules `ls-files` is given: `patterns` above all, the directories' `.gitignore`
    /// files with `per_dir`, `.git/info/exclude` with `standard`, then `files`.
    pub(crate) fn with_rules(
        repo: &Repo,
        work: &Path,
        standard: bool,
        per_dir: bool,
        patterns: &[String],
        files: &[PathBuf],
    ) -> Ignores {
        let mut ign = Ignores {
            stack: Vec::new(),
            top: None,
            per_dir,
        };
        let exclude = repo.git_dir.join("info/exclude");
        let lists = files
            .iter()
            .chain(standard.then_some(&exclude))
            .filter(|f| f.is_file());
        for f in lists {
            let mut b = ignore::gitignore::GitignoreBuilder::new(work);
            let _ = b.add(f);
            if let Ok(g) = b.build() {
                ign.stack.push(g);
            }
        }
        if !patterns.is_empty() {
            let mut b = ignore::gitignore::GitignoreBuilder::new(work);
            for p in patterns {
                let _ = b.add_line(None, p);
            }
            ign.top = b.build().ok();
        }
        ign
    }

    /// Those and the `.gitignore` files from the top of the work tree down to `dir`.
    pub(crate) fn for_dir(repo: &Repo, work: &Path, dir: &Path) -> Ignores {
        let mut ign = Ignores::new(repo, work);
        let mut d = work.to_path_buf();
        ign.push_dir(&d);
        if let Ok(rest) = dir.strip_prefix(work) {
            for c in rest.components() {
                d.push(c);
                ign.push_dir(&d);
            }
        }
        ign
    }

    pub(crate) fn push_dir(&mut self, dir: &Path) -> bool {
        let gi = dir.join(".gitignore");
        self.push_file(&gi, gi.is_file())
    }

    /// [`Ignores::push_dir`] for a directory whose listing is at hand: whether it has a
    /// `.gitignore` file is read from the listing instead of asked of the file system.
    pub(crate) fn push_listed(&mut self, dir: &Path, names: &[(String, bool)]) -> bool {
        let has = names.iter().any(|(n, is_dir)| n == ".gitignore" && !is_dir);
        self.push_file(&dir.join(".gitignore"), has)
    }

    fn push_file(&mut self, gi: &Path, pushed: bool) -> bool {
        let pushed = pushed && self.per_dir;
        if pushed {
            self.stack.push(ignore::gitignore::Gitignore::new(gi).0);
        }
        pushed
    }

    pub(crate) fn pop(&mut self) {
        self.stack.pop();
    }

    pub(crate) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.top.iter().chain(self.stack.iter().rev()) {
            match g.matched(path, is_dir) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
        false
    }
}

/// The names in `dir`, sorted, each with whether it is a directory.
pub(crate) fn dir_entries(dir: &Path) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                    (e.file_name().to_string_lossy().into_owned(), is_dir)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// What the untracked walk lists.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    /// As `status` shows them: an untracked directory whole, as `dir/`, when it holds a file
    /// that is not ignored; a tracked one looked into.
    Directories,
    /// Every untracked file that is not ignored, one by one, nested repositories left out
    /// (`ls-files -o --exclude-standard`; `stash -u`).
    Files,
    /// Every untracked file, ignored ones too, nested repositories left out (`stash -a`).
    FilesAndIgnored,
}

/// The untracked files under `dir` (`rel` from the top of the work tree), as `how` lists
/// them, appended to `out` in the order of the walk (names sorted in each directory).
/// `tracked` are the index's paths; `tracked_dirs` the directories that hold them (only
/// [`Listing::Directories`] asks).
pub(crate) fn untracked(
    dir: &Path,
    rel: &[u8],
    tracked: &HashSet<Vec<u8>>,
    tracked_dirs: &HashSet<Vec<u8>>,
    ign: &mut Ignores,
    how: Listing,
    out: &mut Vec<Vec<u8>>,
) {
    let names = dir_entries(dir);
    let pushed = ign.push_listed(dir, &names);
    let with_ignored = how == Listing::FilesAndIgnored;
    for (name, is_dir) in names {
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let mut p = rel.to_vec();
        p.extend_from_slice(name.as_bytes());
        let full = dir.join(&name);
        if is_dir {
            if how != Listing::Directories {
                // A nested repository is not this one's to list.
                if (with_ignored || !ign.ignored(&full, true)) && !full.join(".git").exists() {
                    p.push(b'/');
                    untracked(&full, &p, tracked, tracked_dirs, ign, how, out);
                }
            } else if tracked_dirs.contains(&p) {
                p.push(b'/');
                untracked(&full, &p, tracked, tracked_dirs, ign, how, out);
            } else if !ign.ignored(&full, true) && has_untracked_file(&full, ign) {
                p.push(b'/');
                out.push(p);
            }
        } else if !tracked.contains(&p) && (with_ignored || !ign.ignored(&full, false)) {
            out.push(p);
        }
    }
    if pushed {
        ign.pop();
    }
}

/// The untracked entries under `dir` that glob pathspecs select, as git's `dir.c` finds
/// them: an untracked directory that a pathspec matches as `dir/` is shown whole (when it
/// holds a file that is not ignored), any other is looked into; a file is shown when a
/// pathspec matches it.
pub(crate) fn untracked_matching(
    dir: &Path,
    rel: &[u8],
    tracked: &HashSet<Vec<u8>>,
    tracked_dirs: &HashSet<Vec<u8>>,
    ign: &mut Ignores,
    specs: &[Pathspec],
    out: &mut Vec<Vec<u8>>,
) {
    let names = dir_entries(dir);
    let pushed = ign.push_listed(dir, &names);
    for (name, is_dir) in names {
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let mut p = rel.to_vec();
        p.extend_from_slice(name.as_bytes());
        let full = dir.join(&name);
        if is_dir {
            let tracked_dir = tracked_dirs.contains(&p);
            p.push(b'/');
            if tracked_dir {
                untracked_matching(&full, &p, tracked, tracked_dirs, ign, specs, out);
            } else if !ign.ignored(&full, true) {
                if in_pathspecs(specs, &p) {
                    if has_untracked_file(&full, ign) {
                        out.push(p);
                    }
                } else {
                    untracked_matching(&full, &p, tracked, tracked_dirs, ign, specs, out);
                }
            }
        } else if !tracked.contains(&p) && !ign.ignored(&full, false) && in_pathspecs(specs, &p) {
            out.push(p);
        }
    }
    if pushed {
        ign.pop();
    }
}

/// The untracked entries that pathspecs select: an entry inside one, or, for a pathspec
/// inside an untracked directory, the pathspec itself (`dir/` for a directory) when it
/// exists, as git narrows the directory it collapses.
pub(crate) fn untracked_in_scopes(
    work: &Path,
    found: Vec<Vec<u8>>,
    scopes: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for u in found {
        let bare = u.strip_suffix(b"/").unwrap_or(&u);
        if super::pathspec::in_scopes(scopes, bare) {
            out.push(u);
            continue;
        }
        if u.ends_with(b"/") {
            for s in scopes {
                if s.starts_with(&u) {
                    let full = work.join(String::from_utf8_lossy(s).as_ref());
                    match full.symlink_metadata() {
                        Ok(m) if m.is_dir() => {
                            let mut d = s.clone();
                            d.push(b'/');
                            out.push(d);
                        }
                        Ok(_) => out.push(s.clone()),
                        Err(_) => {}
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether an untracked directory holds a file that is not ignored (git hides empty ones).
pub(crate) fn has_untracked_file(dir: &Path, ign: &mut Ignores) -> bool {
    let pushed = ign.push_dir(dir);
    let found = std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let p = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            !ign.ignored(&p, is_dir) && (!is_dir || has_untracked_file(&p, ign))
        })
    });
    if pushed {
        ign.pop();
    }
    found
}
