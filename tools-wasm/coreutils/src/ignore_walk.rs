//! The directory walk of `rg`: ripgrep's ignore files, matched by the `ignore` crate's
//! gitignore matcher (the one ripgrep uses). In each directory `.gitignore` (when `vcs`),
//! `.ignore` and `.rgignore` apply to everything below it, later files and deeper directories
//! taking precedence, `!pattern` re-including; ignore files of the directories above the
//! search root (up to /workspace) apply too. An ignored directory is not entered.

use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::text::{Kind, WalkFilter};

/// Every entry under `root` that the ignore files do not exclude, in sorted order, depth
/// first, shown as `display/...`.
pub fn walk(
    root: &Path,
    display: &str,
    vcs: bool,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    let mut filter = Ignores {
        vcs,
        stack: Vec::new(),
    };
    let root_abs = sh_utility::path::lexical(root);
    let mut above: Vec<&Path> = root_abs
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with("/workspace"))
        .collect();
    above.reverse();
    for dir in above {
        if let Some(g) = matcher(dir, vcs) {
            filter.stack.push(g);
        }
    }
    // Matchers compare paths by prefix, so the walk uses the normalised root ("a/./b" would
    // not match a rule for "a/b").
    crate::text::walk_with(&root_abs, display, &mut filter, out);
}

/// The ignore rules in force: one matcher per directory on the way down that has any.
struct Ignores {
    vcs: bool,
    stack: Vec<Gitignore>,
}

impl WalkFilter for Ignores {
    fn enter(&mut self, dir: &Path, listing: &[(String, Kind)]) -> bool {
        // Only a directory that lists an ignore file has rules to read.
        let names = ignore_files(self.vcs);
        if !listing.iter().any(|(n, _)| names.contains(&n.as_str())) {
            return false;
        }
        match matcher(dir, self.vcs) {
            Some(g) => {
                self.stack.push(g);
                true
            }
            None => false,
        }
    }

    fn leave(&mut self) {
        self.stack.pop();
    }

    /// The deepest rule that matches decides; `!pattern` re-includes.
    fn skip(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.stack.iter().rev() {
            match g.matched(path, is_dir) {
                Match::None => continue,
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
            }
        }
        false
    }
}

/// The ignore rules `dir` itself adds, if it has any ignore file.
/// The names of the ignore files ripgrep reads (`.gitignore` only with `vcs`).
fn ignore_files(vcs: bool) -> &'static [&'static str] {
    if vcs {
        &[".gitignore", ".ignore", ".rgignore"]
    } else {
        &[".ignore", ".rgignore"]
    }
}

fn matcher(dir: &Path, vcs: bool) -> Option<Gitignore> {
    let mut b = GitignoreBuilder::new(dir);
    let mut any = false;
    for n in ignore_files(vcs) {
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
