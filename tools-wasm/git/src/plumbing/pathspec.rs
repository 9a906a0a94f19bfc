//! Pathspecs: paths and globs given on the command line, read relative to the working
//! directory as git reads them (`*` matching `/`), and git's words when one matches nothing
//! or is ambiguous.

use std::collections::BTreeSet;
use std::path::Path;

use super::rev::scope_of;

/// A pathspec from the working directory as a path from the top.
/// A pathspec, from the top of the work tree: a path (a file, or a directory's contents) or,
/// with wildcards, a glob over whole paths whose `*` also matches `/`, as git's pathspecs
/// (`*.rs` selects `src/main.rs`).
pub(crate) struct Pathspec {
    path: Vec<u8>,
    glob: Option<regex::Regex>,
}

impl Pathspec {
    /// `p` as given in the directory `pre` (from the top).
    pub(crate) fn new(pre: &[u8], p: &str) -> Pathspec {
        let path = scope_of(pre, p);
        let glob = if p.contains(['*', '?', '[']) {
            sh_utility::pattern::pattern_regex(&String::from_utf8_lossy(&path))
        } else {
            None
        };
        Pathspec { path, glob }
    }

    /// The path from the top (the pattern, for a glob).
    pub(crate) fn path(&self) -> &[u8] {
        &self.path
    }

    pub(crate) fn is_glob(&self) -> bool {
        self.glob.is_some()
    }

    pub(crate) fn matches(&self, p: &[u8]) -> bool {
        match &self.glob {
            Some(re) => re.is_match(&String::from_utf8_lossy(p)),
            None => in_scopes(std::slice::from_ref(&self.path), p),
        }
    }
}

/// Whether `p` is in one of `specs` (all paths when there are none).
pub(crate) fn in_pathspecs(specs: &[Pathspec], p: &[u8]) -> bool {
    specs.is_empty() || specs.iter().any(|s| s.matches(p))
}

/// Whether a path from the top is in one of the pathspecs (a file, or a directory's
/// contents; an empty pathspec is the whole tree). No pathspecs means every path.
pub(crate) fn in_scopes(scopes: &[Vec<u8>], p: &[u8]) -> bool {
    scopes.is_empty()
        || scopes.iter().any(|s| {
            s.is_empty() || p == &s[..] || (p.starts_with(s) && p.get(s.len()) == Some(&b'/'))
        })
}

/// git's refusal of an argument that is neither a revision nor an existing path.
pub(crate) fn ambiguous(r: &str) -> String {
    format!(
        "fatal: ambiguous argument '{r}': unknown revision or path not in the working tree.\n\
         Use '--' to separate paths from revisions, like this:\n\
         'git <command> [<revision>...] -- [<file>...]'"
    )
}

/// Tracked paths matched by `specs` (relative to `cwd`; globs as git's pathspecs), from
/// `candidates`. Fails on the first spec that matches nothing.
pub(crate) fn match_specs<'a, I>(
    work: &Path,
    cwd: &Path,
    specs: &[String],
    candidates: I,
    unmatched: &dyn Fn(&str) -> String,
) -> Result<BTreeSet<Vec<u8>>, String>
where
    I: Iterator<Item = &'a Vec<u8>> + Clone,
{
    let mut out = BTreeSet::new();
    for s in specs {
        let p = spec_path(work, cwd, s)?;
        let glob = s.contains(['*', '?', '[']);
        let re = if glob {
            sh_utility::pattern::pattern_regex(&String::from_utf8_lossy(&p))
        } else {
            None
        };
        let mut any = false;
        for c in candidates.clone() {
            let hit = p.is_empty()
                || *c == p
                || (c.starts_with(&p) && c.get(p.len()) == Some(&b'/'))
                || re
                    .as_ref()
                    .is_some_and(|r| r.is_match(&String::from_utf8_lossy(c)));
            if hit {
                any = true;
                out.insert(c.clone());
            }
        }
        if !any {
            return Err(unmatched(s));
        }
    }
    Ok(out)
}

pub(crate) fn did_not_match(s: &str) -> String {
    format!("error: pathspec '{s}' did not match any file(s) known to git")
}

/// A pathspec as a path from the top of the work tree (`.` and `..` resolved lexically).
pub(crate) fn spec_path(work: &Path, cwd: &Path, spec: &str) -> Result<Vec<u8>, String> {
    let pre = cwd
        .strip_prefix(work)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut parts: Vec<String> = if spec.starts_with('/') {
        let abs = Path::new(spec);
        match abs.strip_prefix(work) {
            Ok(r) => r
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect(),
            Err(_) => {
                return Err(format!(
                    "fatal: {spec}: '{spec}' is outside repository at '{}'",
                    work.display()
                ));
            }
        }
    } else {
        pre.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    if !spec.starts_with('/') {
        for c in spec.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!(
                            "fatal: {spec}: '{spec}' is outside repository at '{}'",
                            work.display()
                        ));
                    }
                }
                c => parts.push(c.to_string()),
            }
        }
    }
    Ok(parts.join("/").into_bytes())
}
