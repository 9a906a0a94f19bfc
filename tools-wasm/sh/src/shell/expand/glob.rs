//! Pathname expansion and shell patterns: globs over the guest filesystem (with globstar,
//! dotglob, nullglob, nocaseglob, extglob) and patterns as regexes for `case`, `[[ == ]]`
//! and `${x#pat}`.

use super::*;

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
    let matches = glob(sh, &pat);
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

/// Pathname expansion of `pat` (relative to the shell's cwd); sorted; empty if nothing matches.
pub fn glob(sh: &Shell, pat: &str) -> Vec<String> {
    let absolute = pat.starts_with('/');
    let comps: Vec<&str> = pat.split('/').filter(|c| !c.is_empty()).collect();
    let mut cands: Vec<String> = vec![if absolute { "/".into() } else { String::new() }];
    let dotglob = sh.options.shopt("dotglob");
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
                for n in crate::utils::text::sorted_names(rd) {
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
                let names = crate::utils::text::sorted_names(rd);
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
    for n in crate::utils::text::sorted_names(rd) {
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

/// A shell pattern as an anchored regex.
pub fn pattern_regex(pat: &str) -> Option<regex::Regex> {
    pattern_regex_case(pat, false)
}

/// [`pattern_regex`], ignoring case when `nocase`.
fn pattern_regex_case(pat: &str, nocase: bool) -> Option<regex::Regex> {
    with_compiled(pat, nocase, |r| r.cloned())
}

/// Runs `f` with `pat` compiled (None when it cannot be). Compiled patterns are remembered:
/// a `case` in a loop, `find -name`, pathname expansion and grep's `--exclude` test one
/// pattern against many names, and compiling it is far dearer than matching. Matching runs
/// on the remembered regex itself, whose match caches stay warm (a clone would start cold).
fn with_compiled<T>(pat: &str, nocase: bool, f: impl FnOnce(Option<&regex::Regex>) -> T) -> T {
    /// Patterns kept before the memory is cleared (a script may make patterns without end).
    const KEPT: usize = 256;
    type Compiled = foldhash::HashMap<String, Option<regex::Regex>>;
    thread_local! {
        /// Case-sensitive patterns, then case-folding ones.
        static COMPILED: std::cell::RefCell<[Compiled; 2]> = Default::default();
    }
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        let map = &mut c[usize::from(nocase)];
        if !map.contains_key(pat) {
            if map.len() >= KEPT {
                map.clear();
            }
            let flags = if nocase { "si" } else { "s" };
            let r = regex::Regex::new(&format!("^(?{flags}:{})$", pattern_body(pat))).ok();
            map.insert(pat.to_string(), r);
        }
        f(map.get(pat).and_then(Option::as_ref))
    })
}

pub(super) fn pattern_body(pat: &str) -> String {
    let mut re = String::new();
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                re.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 1;
            }
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut j = i + 1;
                let mut class = String::from("[");
                if j < chars.len() && (chars[j] == '!' || chars[j] == '^') {
                    class.push('^');
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    class.push_str("\\]");
                    j += 1;
                }
                let mut closed = false;
                while j < chars.len() {
                    if chars[j] == ']' {
                        closed = true;
                        break;
                    }
                    if chars[j] == '['
                        && j + 1 < chars.len()
                        && chars[j + 1] == ':'
                        && let Some(end) = (j + 2..chars.len()).find(|&k| {
                            chars[k] == ':' && k + 1 < chars.len() && chars[k + 1] == ']'
                        })
                    {
                        let name: String = chars[j + 2..end].iter().collect();
                        class.push_str(&format!("[:{name}:]"));
                        j = end + 2;
                        continue;
                    }
                    let ch = chars[j];
                    if ch == '\\' || ch == '[' || ch == '&' || ch == '~' || ch == '|' {
                        class.push('\\');
                    }
                    class.push(ch);
                    j += 1;
                }
                if closed {
                    class.push(']');
                    re.push_str(&class);
                    i = j;
                } else {
                    re.push_str("\\[");
                }
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    re
}

pub fn pattern_matches(pat: &str, s: &str) -> bool {
    with_compiled(pat, false, |r| r.is_some_and(|r| r.is_match(s)))
}

/// [`pattern_matches`] for the shell's own patterns (`case`, `[[ == ]]`), which take bash's
/// extended patterns when `shopt -s extglob` is on and ignore case with `nocasematch`.
pub fn shell_pattern_matches(sh: &Shell, pat: &str, s: &str) -> bool {
    let nocase = sh.options.shopt("nocasematch");
    if sh.options.shopt("extglob") && crate::shell::extglob::has_ext(pat) {
        crate::shell::extglob::matches(pat, s, nocase)
    } else {
        with_compiled(pat, nocase, |r| r.is_some_and(|r| r.is_match(s)))
    }
}
