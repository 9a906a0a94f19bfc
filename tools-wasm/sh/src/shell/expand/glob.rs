//! Pathname expansion and shell patterns: globs over the guest filesystem (with globstar,
//! dotglob, nullglob, nocaseglob, extglob) and patterns as regexes for `case`, `[[ == ]]`
//! and `${x#pat}`.

use super::*;
use sh_utility::pattern::with_compiled;
pub use sh_utility::pattern::{pattern_body, pattern_regex};

pub(super) fn has_glob(sh: &Shell, segs: &[Seg]) -> bool {
    let ext = sh.options.shopt("extglob");
    segs.iter().any(|s| {
        !s.quoted
            && (s.text.contains(['*', '?', '['])
                || (ext && crate::shell::extglob::has_ext(&s.text)))
    })
}

/// Pathname expansion of one field: its matches, or the field itself when none (nothing
/// with `nullglob`; with `failglob`, bash's "no match" error, which ends the complete command).
pub(super) fn glob_field(sh: &Shell, segs: &[Seg], io: &Io) -> Result<Vec<String>, Flow> {
    let literal: String = segs.iter().map(|s| s.text.as_str()).collect();
    if sh.options.noglob || !has_glob(sh, segs) {
        return Ok(vec![literal]);
    }
    let mut pat = String::new();
    for s in segs {
        for c in s.text.chars() {
            if s.quoted && "*?[]\\()|@!+".contains(c) {
                pat.push('\\');
            }
            pat.push(c);
        }
    }
    let mut matches = glob(sh, &pat);
    // $GLOBIGNORE: the names matching one of its patterns are left out, `.` and `..` too.
    if let Some(ignore) = sh.get("GLOBIGNORE").filter(|g| !g.is_empty()) {
        let pats: Vec<&str> = ignore.split(':').filter(|p| !p.is_empty()).collect();
        matches.retain(|m| {
            let base = m.rsplit('/').next().unwrap_or(m);
            base != "." && base != ".." && !pats.iter().any(|p| path_matches(p, m))
        });
    }
    if matches.is_empty() && sh.options.shopt("failglob") {
        let _ = err(sh, io, &format!("no match: {literal}"));
        return Err(Flow::Abort(1));
    }
    if matches.is_empty() && !sh.options.shopt("nullglob") {
        Ok(vec![literal])
    } else {
        Ok(matches)
    }
}

/// Whether path `p` matches pattern `pat` a component at a time (a `*` never matches `/`).
fn path_matches(pat: &str, p: &str) -> bool {
    let pc: Vec<&str> = pat.split('/').collect();
    let nc: Vec<&str> = p.split('/').collect();
    pc.len() == nc.len()
        && pc
            .iter()
            .zip(&nc)
            .all(|(a, b)| with_compiled(a, false, |r| r.is_some_and(|r| r.is_match(b))))
}

/// Pathname expansion of `pat` (relative to the shell's cwd); sorted; empty if nothing matches.
pub fn glob(sh: &Shell, pat: &str) -> Vec<String> {
    let absolute = pat.starts_with('/');
    let comps: Vec<&str> = pat.split('/').filter(|c| !c.is_empty()).collect();
    let mut cands: Vec<String> = vec![if absolute { "/".into() } else { String::new() }];
    // A non-empty $GLOBIGNORE also makes `*` match names that start with a dot.
    let dotglob =
        sh.options.shopt("dotglob") || sh.get("GLOBIGNORE").is_some_and(|g| !g.is_empty());
    let nocase = sh.options.shopt("nocaseglob");
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let mut next = Vec::new();
        let ext = sh.options.shopt("extglob") && crate::shell::extglob::has_ext(comp);
        let is_pat = ext || comp.contains(['*', '?', '[']);
        // globstar: `**` alone matches any depth of directories (and, last, everything).
        if *comp == "**" && sh.options.shopt("globstar") {
            for c in &cands {
                let mut found = Vec::new();
                if !last {
                    found.push(c.clone());
                }
                walk_all(sh, c, dotglob, last, &mut found);
                next.extend(found);
            }
            next.dedup();
            cands = next;
            continue;
        }
        for c in &cands {
            let dir = if c.is_empty() {
                sh.cwd.clone()
            } else if absolute {
                c.clone()
            } else {
                sh.path(c).to_string_lossy().into_owned()
            };
            if ext {
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for n in sh_utility::path::sorted_names(rd) {
                    if n.starts_with('.') && !comp.starts_with('.') && !dotglob {
                        continue;
                    }
                    if crate::shell::extglob::matches(comp, &n, nocase) {
                        let p = join(c, &n);
                        if last || sh.path(&p).is_dir() {
                            next.push(p);
                        }
                    }
                }
            } else if is_pat {
                let re = if nocase {
                    regex::Regex::new(&format!("(?i)^(?s:{})$", pattern_body(comp))).ok()
                } else {
                    pattern_regex(comp)
                };
                let Some(re) = re else {
                    continue;
                };
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let names = sh_utility::path::sorted_names(rd);
                for n in names {
                    if n.starts_with('.') && !comp.starts_with('.') && !dotglob {
                        continue;
                    }
                    if re.is_match(&n) {
                        let p = join(c, &n);
                        if !last && !sh.path(&p).is_dir() {
                            continue;
                        }
                        next.push(p);
                    }
                }
            } else {
                let lit = unescape(comp);
                let p = join(c, &lit);
                if last || sh.path(&p).is_dir() {
                    next.push(p);
                }
            }
        }
        cands = next;
        if cands.is_empty() {
            return Vec::new();
        }
    }
    if pat.ends_with('/') {
        cands = cands
            .into_iter()
            .filter(|c| sh.path(c).is_dir())
            .map(|c| c + "/")
            .collect();
    }
    cands.retain(|c| std::fs::symlink_metadata(sh.path(c)).is_ok());
    // bash sorts the whole names (C locale: by bytes), not component by component.
    cands.sort();
    cands.dedup();
    cands
}

/// Everything under `base` (depth first, sorted), for globstar's `**`: directories only when
/// `files` is false.
pub(super) fn walk_all(sh: &Shell, base: &str, dotglob: bool, files: bool, out: &mut Vec<String>) {
    let dir = if base.is_empty() {
        sh.cwd.clone()
    } else {
        sh.path(base).to_string_lossy().into_owned()
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for n in sh_utility::path::sorted_names(rd) {
        if n.starts_with('.') && !dotglob {
            continue;
        }
        let p = join(base, &n);
        let is_dir = std::fs::symlink_metadata(sh.path(&p)).is_ok_and(|m| m.is_dir());
        if is_dir || files {
            out.push(p.clone());
        }
        if is_dir && out.len() < 1_000_000 {
            walk_all(sh, &p, dotglob, files, out);
        }
    }
}

pub(super) fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

pub(super) fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// [`pattern_matches`] for the shell's own patterns (`case`, `[[ == ]]`), which take bash's
/// extended patterns when `shopt -s extglob` is on and ignore case with `nocasematch`.
pub fn shell_pattern_matches(sh: &Shell, pat: &str, s: &str) -> bool {
    pattern_matches_with(sh, pat, s, sh.options.shopt("extglob"))
}

/// [`shell_pattern_matches`] for `[[ == ]]`, where bash always takes extended patterns.
pub fn test_pattern_matches(sh: &Shell, pat: &str, s: &str) -> bool {
    pattern_matches_with(sh, pat, s, true)
}

fn pattern_matches_with(sh: &Shell, pat: &str, s: &str, extglob: bool) -> bool {
    let nocase = sh.options.shopt("nocasematch");
    if extglob && crate::shell::extglob::has_ext(pat) {
        crate::shell::extglob::matches(pat, s, nocase)
    } else {
        with_compiled(pat, nocase, |r| r.is_some_and(|r| r.is_match(s)))
    }
}
