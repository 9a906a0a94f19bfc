//! `git rev-parse`: revisions (through [`crate::plumbing::rev`]) shown as ids, short ids or
//! names, and its options about the repository (`--show-toplevel`, `--git-dir`, ...).

use std::path::Path;

use sh_utility::io::Io;

use crate::plumbing::object::{Oid, hex};
use crate::plumbing::repo::{Repo, upstream_of};
use crate::plumbing::text::prefix;

/// How `rev-parse` shows the revisions it reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RevShow {
    Id,
    /// `--abbrev-ref`: the ref's short name.
    AbbrevRef,
    /// `--symbolic-full-name`: the ref's full name.
    FullName,
    /// `--symbolic`: the name as given.
    AsGiven,
}

/// Options of git's `rev-parse` that burrow's does not implement (git passes other words
/// that start with `-` through, as flags for the command they are meant for).
pub(crate) const REV_PARSE_NOT_HERE: &[&str] = &[
    "--parseopt",
    "--sq-quote",
    "--keep-dashdash",
    "--stop-at-non-option",
    "--stuck-long",
    "--revs-only",
    "--no-revs",
    "--flags",
    "--no-flags",
    "--default",
    "--prefix",
    "--sq",
    "--not",
    "--all",
    "--branches",
    "--tags",
    "--remotes",
    "--glob",
    "--exclude",
    "--exclude-hidden",
    "--disambiguate",
    "--local-env-vars",
    "--path-format",
    "--git-path",
    "--resolve-git-dir",
    "--shared-index-path",
    "--show-superproject-working-tree",
    "--show-object-format",
    "--show-ref-format",
    "--since",
    "--after",
    "--until",
    "--before",
    "--bisect",
    "--end-of-options",
];

/// `git rev-parse`, as git's reads its arguments: options, revisions (`A..B` and `^A`
/// too), and once something is not a revision, file names (which must exist). `--verify`
/// (and `--short`, which implies it) wants exactly one revision.
pub(crate) fn rev_parse(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let pre = prefix(repo, cwd);
    let has_dashdash = args.iter().any(|a| a == "--");
    let mut verify = false;
    let mut quiet = false;
    let mut short: Option<usize> = None;
    let mut shown = RevShow::Id;
    // 1 after a name that is not a revision (the rest are files that must exist), 2 after
    // `--` (the rest are printed as they are).
    let mut as_is = 0;
    let mut verified: Vec<(bool, Oid, String)> = Vec::new();
    let mut out = String::new();
    // Everything printed so far goes out before git's complaint.
    let fail = |out: &str, msg: &str| {
        io.print(out);
        io.eprint(&format!("{msg}\n"));
        Ok(128)
    };
    for a in args {
        if as_is > 0 {
            out.push_str(&format!("{a}\n"));
            if as_is == 1 && cwd.join(a).symlink_metadata().is_err() {
                return fail(
                    &out,
                    &format!(
                        "fatal: {a}: no such path in the working tree.\n\
                         Use 'git <command> -- <path>...' to specify paths that do not exist locally."
                    ),
                );
            }
            continue;
        }
        let opt = a.split_once('=').map_or(a.as_str(), |(o, _)| o);
        match opt {
            "--" => {
                as_is = 2;
                out.push_str("--\n");
                continue;
            }
            "--verify" => verify = true,
            "-q" | "--quiet" => quiet = true,
            "--short" => {
                verify = true;
                let n = match a.split_once('=') {
                    Some((_, v)) => v
                        .parse::<usize>()
                        .map_err(|_| format!("fatal: '{v}': not an integer"))?,
                    None => 7,
                };
                short = Some(n.clamp(4, 40));
            }
            "--abbrev-ref" => shown = RevShow::AbbrevRef,
            "--symbolic-full-name" => shown = RevShow::FullName,
            "--symbolic" => shown = RevShow::AsGiven,
            "--show-toplevel" => match &repo.work {
                Some(w) => out.push_str(&format!("{}\n", w.display())),
                None => {
                    return fail(&out, "fatal: this operation must be run in a work tree");
                }
            },
            "--git-dir" | "--git-common-dir" => {
                let g = repo.git_dir.as_path();
                let shown = match g.strip_prefix(cwd) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => g.to_path_buf(),
                };
                out.push_str(&format!("{}\n", shown.display()));
            }
            "--absolute-git-dir" => out.push_str(&format!("{}\n", repo.git_dir.display())),
            "--is-inside-work-tree" => out.push_str(if repo.work.is_some() {
                "true\n"
            } else {
                "false\n"
            }),
            "--is-inside-git-dir" => out.push_str(if repo.work.is_some() {
                "false\n"
            } else {
                "true\n"
            }),
            "--is-bare-repository" => out.push_str(if repo.work.is_some() {
                "false\n"
            } else {
                "true\n"
            }),
            "--is-shallow-repository" => out.push_str(if repo.git_dir.join("shallow").is_file() {
                "true\n"
            } else {
                "false\n"
            }),
            "--show-prefix" => {
                if !pre.is_empty() {
                    out.push_str(&format!("{}/", String::from_utf8_lossy(&pre)));
                }
                out.push('\n');
            }
            "--show-cdup" => {
                if !pre.is_empty() {
                    let depth = pre.split(|&b| b == b'/').count();
                    out.push_str(&"../".repeat(depth));
                }
                out.push('\n');
            }
            s if REV_PARSE_NOT_HERE.contains(&s) => {
                return Err(format!(
                    "fatal: rev-parse option '{s}' is not supported in burrow"
                ));
            }
            // An unknown flag is passed through (not once --verify or --short is given).
            s if s.starts_with('-') && s.len() > 1 => {
                if !verify {
                    out.push_str(&format!("{a}\n"));
                }
            }
            _ => {
                if let Some(shown_range) = range(repo, a, &pre, shown, short) {
                    out.push_str(&shown_range);
                    continue;
                }
                let (reversed, name) = match a.strip_prefix('^') {
                    Some(n) => (true, n),
                    None => (false, a.as_str()),
                };
                match crate::plumbing::rev::lookup(repo, name, &pre) {
                    Ok(id) if verify => verified.push((reversed, id, name.to_string())),
                    Ok(id) => show_rev(repo, &mut out, shown, short, reversed, &id, Some(name)),
                    Err(e) => {
                        let errors: String = e.errors.iter().map(|l| format!("{l}\n")).collect();
                        io.eprint(&errors);
                        if let Some(f) = e.dies {
                            return fail(&out, &f);
                        }
                        if verify {
                            return no_single_rev(io, &out, quiet);
                        }
                        if has_dashdash {
                            return fail(&out, &format!("fatal: bad revision '{a}'"));
                        }
                        // Not a revision: a file name, which must exist; else git tries the
                        // name again to say what is wrong with it.
                        as_is = 1;
                        out.push_str(&format!("{a}\n"));
                        if cwd.join(a).symlink_metadata().is_err() {
                            io.eprint(&errors);
                            let msg = e
                                .fatal
                                .unwrap_or_else(|| crate::plumbing::pathspec::ambiguous(a));
                            return fail(&out, &msg);
                        }
                    }
                }
            }
        }
    }
    if verify {
        match verified.as_slice() {
            [(reversed, id, name)] => {
                show_rev(repo, &mut out, shown, short, *reversed, id, Some(name))
            }
            _ => return no_single_rev(io, &out, quiet),
        }
    }
    io.print(&out);
    Ok(0)
}

/// git's `die_no_single_rev`: status 1 and no message with `-q`.
pub(crate) fn no_single_rev(io: &Io, out: &str, quiet: bool) -> Result<i32, String> {
    io.print(out);
    if quiet {
        return Ok(1);
    }
    io.eprint("fatal: Needed a single revision\n");
    Ok(128)
}

/// `A..B` (B, then A excluded) and `A...B` (B, A, then their merge base excluded), as
/// `rev-parse` prints them; None when `a` is not a range of commits.
pub(crate) fn range(
    repo: &Repo,
    a: &str,
    pre: &[u8],
    shown: RevShow,
    short: Option<usize>,
) -> Option<String> {
    let i = a.find("..")?;
    let symmetric = a[i + 2..].starts_with('.');
    let (x, y) = (&a[..i], &a[i + 2 + usize::from(symmetric)..]);
    // `..` alone is the parent directory.
    if x.is_empty() && y.is_empty() && !symmetric {
        return None;
    }
    let (x, y) = (
        if x.is_empty() { "HEAD" } else { x },
        if y.is_empty() { "HEAD" } else { y },
    );
    let start = crate::plumbing::rev::lookup(repo, x, pre).ok()?;
    let end = crate::plumbing::rev::lookup(repo, y, pre).ok()?;
    let (sc, ec) = (repo.peel_commit(&start).ok()?, repo.peel_commit(&end).ok()?);
    let mut out = String::new();
    show_rev(repo, &mut out, shown, short, false, &end, Some(y));
    show_rev(repo, &mut out, shown, short, !symmetric, &start, Some(x));
    if symmetric && let Ok(Some(base)) = crate::plumbing::walk::merge_base(repo, sc, ec) {
        show_rev(repo, &mut out, shown, short, true, &base, None);
    }
    Some(out)
}

/// One revision as `rev-parse` prints it: its id (abbreviated with `--short`, after `^` when
/// excluded), or for a name with `--abbrev-ref` / `--symbolic-full-name` the ref it names
/// (nothing when it names none), with `--symbolic` the name itself.
pub(crate) fn show_rev(
    repo: &Repo,
    out: &mut String,
    shown: RevShow,
    short: Option<usize>,
    reversed: bool,
    id: &Oid,
    name: Option<&str>,
) {
    let mark = if reversed { "^" } else { "" };
    let name = match name {
        Some(n) if shown != RevShow::Id => n,
        _ => {
            let h = hex(id);
            let h = short.map_or(h.as_str(), |n| &h[..n]);
            out.push_str(&format!("{mark}{h}\n"));
            return;
        }
    };
    if shown == RevShow::AsGiven {
        out.push_str(&format!("{mark}{name}\n"));
        return;
    }
    let full = if name == "HEAD" || name == "@" {
        Some(repo.head().0.unwrap_or_else(|| "HEAD".into()))
    } else if let Some(at) = name.find("@{") {
        let branch = match &name[..at] {
            "" | "HEAD" | "@" => repo
                .head()
                .0
                .map(|b| b.trim_start_matches("refs/heads/").to_string()),
            b => Some(b.to_string()),
        };
        let spec = name[at + 2..].trim_end_matches('}').to_ascii_lowercase();
        match (branch, spec.as_str()) {
            (Some(b), "u" | "upstream") => {
                upstream_of(repo, &b).map(|u| format!("refs/remotes/{u}"))
            }
            _ => None,
        }
    } else {
        // A symbolic ref is shown as the ref it leads to.
        crate::plumbing::rev::full_ref(repo, name).map(|mut n| {
            for _ in 0..8 {
                match repo.read_ref(&n) {
                    Some(crate::plumbing::repo::RefValue::Symbolic(t)) => n = t,
                    _ => break,
                }
            }
            n
        })
    };
    let Some(full) = full else {
        return;
    };
    let text = match shown {
        RevShow::AbbrevRef => ["refs/heads/", "refs/tags/", "refs/remotes/", "refs/"]
            .iter()
            .find_map(|p| full.strip_prefix(p))
            .unwrap_or(&full)
            .to_string(),
        _ => full,
    };
    out.push_str(&format!("{mark}{text}\n"));
}
