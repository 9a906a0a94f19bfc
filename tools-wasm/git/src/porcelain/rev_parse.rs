//! `git rev-parse`: revisions (through [`crate::plumbing::rev`]) shown as ids, short ids or
//! names, and its options about the repository (`--show-toplevel`, `--git-dir`, ...).

use std::path::Path;

use sh_utility::io::Io;

use super::args::{Next, Opt, Refusal, Spec, Unknown};

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

/// What `rev-parse` asks the repository (`--show-toplevel`, `--git-dir`, ...).
#[derive(Clone, Copy)]
enum Query {
    Toplevel,
    GitDir,
    AbsoluteGitDir,
    InsideWorkTree,
    InsideGitDir,
    Bare,
    Shallow,
    Prefix,
    Cdup,
}

/// One of `rev-parse`'s words, in the order given: what each prints depends on the options
/// before it, as git's rev-parse reads and prints one word at a time.
enum Word {
    Verify,
    Quiet,
    /// `--short[=N]`: implies `--verify`; N read as C's strtoul reads it.
    Short(Option<String>),
    Shown(RevShow),
    Query(Query),
    /// A revision (`A..B`, `^A` too).
    Rev(String),
    /// A word that starts with `-` and is no option of rev-parse's: passed through.
    Flag(String),
}

/// The words read so far.
#[derive(Default)]
struct Opts {
    words: Vec<Word>,
}

impl Opts {
    fn push(&mut self, w: Word) {
        self.words.push(w);
    }
}

const SPEC: Spec<Opts> = Spec {
    name: "rev-parse",
    usage: "git rev-parse --parseopt [<options>] -- [<args>...]\n   or: git rev-parse --sq-quote [<arg>...]\n   or: git rev-parse [<options>] [<arg>...]\n\nRun \"git rev-parse --parseopt -h\" for more information on the first usage.",
    options: &[
        Opt::flag("--verify", |o| o.push(Word::Verify)),
        Opt::flag("-q/--quiet", |o| o.push(Word::Quiet)),
        Opt::optional("--short", |o, v| {
            o.push(Word::Short(v));
            Ok(())
        }),
        Opt::optional("--abbrev-ref", |o, v| match v.as_deref() {
            None => {
                o.push(Word::Shown(RevShow::AbbrevRef));
                Ok(())
            }
            Some(m @ ("strict" | "loose")) => Err(Refusal::NotHere(format!("--abbrev-ref={m}"))),
            Some(m) => Err(Refusal::Fatal(format!(
                "fatal: unknown mode for --abbrev-ref: {m}"
            ))),
        }),
        Opt::flag("--symbolic-full-name", |o| {
            o.push(Word::Shown(RevShow::FullName))
        }),
        Opt::flag("--symbolic", |o| o.push(Word::Shown(RevShow::AsGiven))),
        Opt::flag("--show-toplevel", |o| o.push(Word::Query(Query::Toplevel))),
        Opt::flag("--git-dir/--git-common-dir", |o| {
            o.push(Word::Query(Query::GitDir))
        }),
        Opt::flag("--absolute-git-dir", |o| {
            o.push(Word::Query(Query::AbsoluteGitDir))
        }),
        Opt::flag("--is-inside-work-tree", |o| {
            o.push(Word::Query(Query::InsideWorkTree))
        }),
        Opt::flag("--is-inside-git-dir", |o| {
            o.push(Word::Query(Query::InsideGitDir))
        }),
        Opt::flag("--is-bare-repository", |o| o.push(Word::Query(Query::Bare))),
        Opt::flag("--is-shallow-repository", |o| {
            o.push(Word::Query(Query::Shallow))
        }),
        Opt::flag("--show-prefix", |o| o.push(Word::Query(Query::Prefix))),
        Opt::flag("--show-cdup", |o| o.push(Word::Query(Query::Cdup))),
    ],
    refused: "--parseopt --sq-quote --keep-dashdash --stop-at-non-option --stuck-long --revs-only --no-revs --flags --no-flags --default --prefix --sq --not --all --branches --tags --remotes --glob --exclude --exclude-hidden --disambiguate --local-env-vars --path-format --git-path --resolve-git-dir --shared-index-path --show-superproject-working-tree --show-object-format --show-ref-format --since --after --until --before --bisect --end-of-options",
    // git's rev-parse is no parse-options: whole words, and one it does not know is passed
    // through.
    unknown: Unknown::Operand,
    help: &[],
};

/// `git rev-parse`, as git's reads its arguments: options, revisions (`A..B` and `^A`
/// too), and once something is not a revision, file names (which must exist). `--verify`
/// (and `--short`, which implies it) wants exactly one revision.
pub(crate) fn rev_parse(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let pre = prefix(repo, cwd);
    let has_dashdash = args.iter().any(|a| a == "--");
    let mut o = Opts::default();
    let (files, after) = match SPEC.parse_with(args, &mut o, io, &mut |o, a| {
        if a.starts_with('-') && a.len() > 1 {
            o.push(Word::Flag(a.to_string()));
            return Ok(Next::Taken);
        }
        let name = a.strip_prefix('^').unwrap_or(a);
        if range(repo, a, &pre, RevShow::Id, None).is_some()
            || crate::plumbing::rev::lookup(repo, name, &pre).is_ok()
        {
            o.push(Word::Rev(a.to_string()));
            return Ok(Next::Taken);
        }
        // Not a revision: it and what follows are file names.
        Ok(Next::Stop)
    }) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let mut verify = false;
    let mut quiet = false;
    let mut short: Option<usize> = None;
    let mut shown = RevShow::Id;
    let mut verified: Vec<(bool, Oid, String)> = Vec::new();
    let mut out = String::new();
    // Everything printed so far goes out before git's complaint.
    let fail = |out: &str, msg: &str| {
        io.print(out);
        io.eprint(&format!("{msg}\n"));
        Ok(128)
    };
    for w in o.words {
        match w {
            Word::Verify => verify = true,
            Word::Quiet => quiet = true,
            Word::Short(n) => {
                verify = true;
                // As C's strtoul reads it: the leading digits, 0 without any.
                let n = n.map_or(7, |v| {
                    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                    digits
                        .parse::<usize>()
                        .unwrap_or(if digits.is_empty() { 0 } else { 40 })
                });
                short = Some(n.clamp(4, 40));
            }
            Word::Shown(s) => shown = s,
            Word::Query(q) => match answer(repo, cwd, &pre, q) {
                Ok(line) => out.push_str(&line),
                Err(e) => return fail(&out, &e),
            },
            // An unknown flag is passed through (not once --verify or --short is given).
            Word::Flag(a) => {
                if !verify {
                    out.push_str(&format!("{a}\n"));
                }
            }
            Word::Rev(a) => {
                if let Some(shown_range) = range(repo, &a, &pre, shown, short) {
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
                    Err(e) => return fail(&out, &e.dies.or(e.fatal).unwrap_or_default()),
                }
            }
        }
    }
    // The first word that is not a revision, and the file names after it.
    if let Some(a) = files.first() {
        let name = a.strip_prefix('^').unwrap_or(a);
        let e = crate::plumbing::rev::lookup(repo, name, &pre)
            .err()
            .unwrap_or_default();
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
        // A file name, which must exist; else git tries the name again to say what is
        // wrong with it.
        out.push_str(&format!("{a}\n"));
        if cwd.join(a).symlink_metadata().is_err() {
            io.eprint(&errors);
            let msg = e
                .fatal
                .unwrap_or_else(|| crate::plumbing::pathspec::ambiguous(a));
            return fail(&out, &msg);
        }
        for f in &files[1..] {
            out.push_str(&format!("{f}\n"));
            if f.starts_with('-') {
                return fail(
                    &out,
                    &format!("fatal: option '{f}' must come before non-option arguments"),
                );
            }
            if cwd.join(f).symlink_metadata().is_err() {
                return fail(
                    &out,
                    &format!(
                        "fatal: {f}: no such path in the working tree.\n\
                         Use 'git <command> -- <path>...' to specify paths that do not exist locally."
                    ),
                );
            }
        }
    }
    // After `--`, every word as it is.
    if let Some(after) = after {
        out.push_str("--\n");
        for a in after {
            out.push_str(&format!("{a}\n"));
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

/// The line `rev-parse` prints for a question about the repository, or git's refusal.
fn answer(repo: &Repo, cwd: &Path, pre: &[u8], q: Query) -> Result<String, String> {
    let yes = |b: bool| if b { "true\n" } else { "false\n" }.to_string();
    Ok(match q {
        Query::Toplevel => match &repo.work {
            Some(w) => format!("{}\n", w.display()),
            None => return Err("fatal: this operation must be run in a work tree".into()),
        },
        Query::GitDir => {
            let g = repo.git_dir.as_path();
            let shown = match g.strip_prefix(cwd) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => g.to_path_buf(),
            };
            format!("{}\n", shown.display())
        }
        Query::AbsoluteGitDir => format!("{}\n", repo.git_dir.display()),
        Query::InsideWorkTree => yes(repo.work.is_some()),
        Query::InsideGitDir | Query::Bare => yes(repo.work.is_none()),
        Query::Shallow => yes(repo.git_dir.join("shallow").is_file()),
        Query::Prefix if pre.is_empty() => "\n".into(),
        Query::Prefix => format!("{}/\n", String::from_utf8_lossy(pre)),
        Query::Cdup if pre.is_empty() => "\n".into(),
        Query::Cdup => format!("{}\n", "../".repeat(pre.split(|&b| b == b'/').count())),
    })
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
