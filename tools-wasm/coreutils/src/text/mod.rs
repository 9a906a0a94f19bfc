//! The text utilities, a module each (grep, sed, cut, tr, xargs), and what they and their
//! neighbours share: line splitting as GNU tools see it, BRE to ERE translation, regex error
//! wording, the sorted directory walk, `%`-format and strftime rendering, stat/chmod.

/// The lines of `text` as GNU tools see them: split at `\n` only, so a `\r` before it stays
/// part of the line (str::lines would drop it and silently turn CRLF files into LF).
pub fn lines(text: &str) -> std::str::SplitTerminator<'_, char> {
    text.split_terminator('\n')
}

use std::fs;

use sh_utility::Ctx;
use sh_utility::Status;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, read_all};

pub use sh_utility::path::sorted_names;
pub use sh_utility::pattern::bre_to_ere;
pub use sh_utility::time::{percent_format, strftime};

mod cut;
mod grep;
mod sed;
mod tr;
mod xargs;

pub use cut::cut;
pub use grep::grep;
pub use grep::{Anchor, Report, Syntax, Target, build_regex};
pub use sed::sed;
pub use tr::tr;
pub use xargs::xargs;

/// GNU grep's wording of the common regular-expression errors.
pub fn regex_error(e: &regex::Error) -> String {
    let msg = e.to_string();
    let last = msg.lines().last().unwrap_or("").trim().to_string();
    if last.contains("unclosed group") {
        "Unmatched ( or \\(".into()
    } else if last.contains("unopened group") {
        "Unmatched ) or \\)".into()
    } else if last.contains("unclosed character class") {
        "Unmatched [, [^, [:, [., or [=".into()
    } else if last.contains("repetition operator missing expression") {
        "Invalid preceding regular expression".into()
    } else {
        last.trim_start_matches("error: ").to_string()
    }
}

/// ERE as the `regex` crate wants it (`\<`, `\>` word boundaries).
fn ere(p: &str) -> String {
    p.replace("\\<", "\\b").replace("\\>", "\\b")
}

/// What a walked entry is, from the directory listing itself (no stat per entry: WASI's
/// `read-directory` already says).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

pub fn walk_typed(
    root: &std::path::Path,
    display: &str,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    walk_with(root, display, &mut NoFilter, out);
}

/// Hooks of a walk (rg's ignore files): state a directory adds while it is walked, and which
/// entries are left out (an excluded directory is not entered).
pub trait WalkFilter {
    /// Entering `dir`, whose entries (names and kinds, sorted) are `listing`; true when
    /// state was pushed that `leave` must pop.
    fn enter(&mut self, _dir: &std::path::Path, _listing: &[(String, Kind)]) -> bool {
        false
    }
    fn leave(&mut self) {}
    fn skip(&self, _path: &std::path::Path, _is_dir: bool) -> bool {
        false
    }
}

struct NoFilter;

impl WalkFilter for NoFilter {}

/// Every entry under `root` that `filter` keeps, in sorted order, depth first, shown as
/// `display/...`.
pub fn walk_with(
    root: &std::path::Path,
    display: &str,
    filter: &mut dyn WalkFilter,
    out: &mut Vec<(String, std::path::PathBuf, Kind)>,
) {
    let Ok(rd) = fs::read_dir(root) else { return };
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
    let pushed = filter.enter(root, &entries);
    for (n, kind) in entries {
        let full = root.join(&n);
        if filter.skip(&full, kind == Kind::Dir) {
            continue;
        }
        let disp = if display.ends_with('/') {
            format!("{display}{n}")
        } else {
            format!("{display}/{n}")
        };
        if kind == Kind::Dir {
            out.push((disp.clone(), full.clone(), kind));
            walk_with(&full, &disp, filter, out);
        } else {
            out.push((disp, full, kind));
        }
    }
    if pushed {
        filter.leave();
    }
}

pub fn misc(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let ops: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut status = 0;
    match cmd {
        "chmod" => {
            // Options -R and -f (accepted: there are no modes to change); an argument like
            // `-x` or `-rw` is a mode, as GNU reads it; any other option is refused.
            let mut ops: Vec<&String> = Vec::new();
            let mut only_ops = false;
            let mut quiet = false;
            for a in args {
                let letters = a.strip_prefix('-').unwrap_or("");
                // GNU chmod reads these letters as a mode, not options.
                let is_mode = !letters.is_empty()
                    && letters.chars().all(|c| "rwxXstugoa01234567,+=".contains(c));
                if only_ops || !a.starts_with('-') || a == "-" || is_mode {
                    ops.push(a);
                    continue;
                }
                match a.as_str() {
                    "--" => only_ops = true,
                    "--recursive" => {}
                    "--silent" | "--quiet" => quiet = true,
                    l if l.starts_with("--") => {
                        io.eprint(&format!(
                            "chmod: unrecognized option '{l}'\nTry 'chmod --help' for more information.\n"
                        ));
                        return 1;
                    }
                    _ => {
                        quiet |= letters.contains('f');
                        if let Some(c) = letters.chars().find(|c| !"Rf".contains(*c)) {
                            io.eprint(&format!(
                                "chmod: invalid option -- '{c}'\nTry 'chmod --help' for more information.\n"
                            ));
                            return 1;
                        }
                    }
                }
            }
            if ops.len() < 2 {
                // A mode given like an option (`-x`) is not named, as in GNU.
                let msg = match ops.first() {
                    Some(m) if !m.starts_with('-') => format!("missing operand after '{m}'"),
                    _ => "missing operand".to_string(),
                };
                io.eprint(&format!(
                    "chmod: {msg}\nTry 'chmod --help' for more information.\n"
                ));
                return 1;
            }
            for f in ops.iter().skip(1) {
                if let Err(e) = fs::metadata(sh.path(f)) {
                    if !quiet {
                        io.eprint(&format!("chmod: cannot access '{f}': {}\n", io_msg(&e)));
                    }
                    status = 1;
                }
            }
        }
        _ => {
            if let Some(s) = crate::files::stat_format(sh, args, io) {
                return s;
            }
            for f in ops {
                match fs::symlink_metadata(sh.path(f)) {
                    Ok(m) => io.print(&format!(
                        "  File: {f}\n  Size: {}\t{}\n",
                        m.len(),
                        if m.is_dir() {
                            "directory"
                        } else if m.file_type().is_symlink() {
                            "symbolic link"
                        } else {
                            "regular file"
                        }
                    )),
                    Err(e) => {
                        io.eprint(&format!("stat: cannot statx '{f}': {}\n", io_msg(&e)));
                        status = 1;
                    }
                }
            }
        }
    }
    status
}
