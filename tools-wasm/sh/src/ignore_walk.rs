//! The directory walk of `rg`: ripgrep's ignore files, matched by the `ignore` crate's
//! gitignore matcher (the one ripgrep uses). In each directory `.gitignore` (when `vcs`),
//! `.ignore` and `.rgignore` apply to everything below it, later files and deeper directories
//! taking precedence, `!pattern` re-including; ignore files of the directories above the
//! search root (up to /workspace) apply too. An ignored directory is not entered.

use std::fs;
use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::text::Kind;

/// Every entry under `root` that the ignore files do not exclude, in sorted order, depth
/// first, shown as `display/...`.
pub fn walk(
    root: &Path,
    display: &str,
    vcs: bool,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    let mut stack = Vec::new();
    let root_abs = crate::coreutils::lexical(root);
    let mut above: Vec<&Path> = root_abs
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with("/workspace"))
        .collect();
    above.reverse();
    for dir in above {
        if let Some(g) = matcher(dir, vcs) {
            stack.push(g);
        }
    }
    // Matchers compare paths by prefix, so the walk uses the normalised root ("a/./b" would
    // not match a rule for "a/b").
    descend(&root_abs, display, vcs, &mut stack, out);
}

/// The ignore rules `dir` itself adds, if it has any ignore file.
fn matcher(dir: &Path, vcs: bool) -> Option<Gitignore> {
    let names: &[&str] = if vcs {
        &[".gitignore", ".ignore", ".rgignore"]
    } else {
        &[".ignore", ".rgignore"]
    };
    let mut b = GitignoreBuilder::new(dir);
    let mut any = false;
    for n in names {
        let p = dir.join(n);
        if p.is_file() {
            // A malformed line is skipped, as ripgrep does (it warns).
            let _ = b.add(&p);
            any = true;
        }
    }
    if !any {
        return None;
    }
    b.build().ok().filter(|g| !g.is_empty())
}

fn ignored(stack: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for g in stack.iter().rev() {
        match g.matched(path, is_dir) {
            Match::None => continue,
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
        }
    }
    false
}

fn descend(
    dir: &Path,
    display: &str,
    vcs: bool,
    stack: &mut Vec<Gitignore>,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let pushed = match matcher(dir, vcs) {
        Some(g) => {
            stack.push(g);
            true
        }
        None => false,
    };
    let mut entries: Vec<(String, Kind)> = rd
        .filter_map(|e| e.ok())
        .map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(t) if t.is_dir() => Kind::Dir,
                _ => Kind::File,
            };
            (e.file_name().to_string_lossy().into_owned(), kind)
        })
        .collect();
    entries.sort();
    for (n, kind) in entries {
        let full = dir.join(&n);
        if ignored(stack, &full, kind == Kind::Dir) {
            continue;
        }
        let disp = if display.ends_with('/') {
            format!("{display}{n}")
        } else {
            format!("{display}/{n}")
        };
        if kind == Kind::Dir {
            out.push((disp.clone(), full.clone(), kind));
            descend(&full, &disp, vcs, stack, out);
        } else {
            out.push((disp, full, kind));
        }
    }
    if pushed {
        stack.pop();
    }
}
