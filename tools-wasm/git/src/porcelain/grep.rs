//! `git grep`: the tracked files of the work tree (by default), the index (`--cached`) or
//! commits' trees, searched with grep's own matcher and printed as git prints them (names
//! relative to the working directory, `REV:` before a tree's paths, `-c` only for files that
//! match). The search is limited to the working directory's part of the tree, or to the
//! pathspecs given, as in git.

use std::path::PathBuf;

use sh_coreutils::text::{Anchor, Report, Syntax, Target, build_regex};
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Next, Opt, Refusal, Spec, Unknown, push};
use crate::plumbing::commit::read_commit;
use crate::plumbing::index::load_index;
use crate::plumbing::object::{Kind, Oid};
use crate::plumbing::pathspec::{Pathspec, ambiguous, in_pathspecs};
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;
use crate::plumbing::text::{prefix, relative};
use crate::plumbing::tree::tree_files;

const USAGE: &str = "git grep [<options>] [-e] <pattern> [<rev>...] [[--] <path>...]";

/// What grep was asked for.
struct Opts {
    patterns: Vec<Pattern>,
    syntax: Syntax,
    anchor: Anchor,
    icase: bool,
    cached: bool,
    full_name: bool,
    report: Report,
}

/// A pattern given: `-e PATTERN`, or `-f FILE` (a pattern a line).
enum Pattern {
    Given(String),
    File(String),
}

const SPEC: Spec<Opts> = Spec {
    name: "grep",
    usage: USAGE,
    options: &[
        Opt::value("-e", |o, v| push(&mut o.patterns, Pattern::Given(v))),
        Opt::value("-f", |o, v| push(&mut o.patterns, Pattern::File(v))),
        Opt::flag("-i/--ignore-case", |o| o.icase = true),
        Opt::flag("-w/--word-regexp", |o| o.anchor = Anchor::Word),
        Opt::flag("-v/--invert-match", |o| o.report.invert = true),
        Opt::flag("-E/--extended-regexp", |o| o.syntax = Syntax::Extended),
        Opt::flag("-G/--basic-regexp", |o| o.syntax = Syntax::Basic),
        Opt::flag("-F/--fixed-strings", |o| o.syntax = Syntax::Fixed),
        Opt::flag("-P/--perl-regexp", |o| o.syntax = Syntax::Perl),
        Opt::flag("-n/--line-number", |o| o.report.numbers = true),
        Opt::flag("--no-line-number", |o| o.report.numbers = false),
        Opt::flag("-h", |o| o.report.names = false),
        Opt::flag("-H", |o| o.report.names = true),
        Opt::flag("--full-name", |o| o.full_name = true),
        Opt::flag("-l/--files-with-matches/--name-only", |o| {
            o.report.files_with = true
        }),
        Opt::flag("-L/--files-without-match", |o| {
            o.report.files_without = true
        }),
        Opt::flag("-c/--count", |o| o.report.count = true),
        Opt::flag("-o/--only-matching", |o| o.report.only_matching = true),
        Opt::flag("-q/--quiet", |o| o.report.quiet = true),
        Opt::flag("-z/--null", |o| o.report.null = true),
        Opt::flag("-a/--text", |o| o.report.text = true),
        Opt::flag("-I", |o| o.report.skip_binary = true),
        Opt::ignored("-r/--recursive/--no-color/--index"),
        Opt::optional("--color", |_, v| match v.as_deref() {
            None | Some("never" | "auto") => Ok(()),
            Some(_) => Err(Refusal::NotHere("--color".into())),
        }),
        Opt::flag("--cached", |o| o.cached = true),
        Opt::value("--threads", |_, _| Ok(())),
        Opt::number("-A/--after-context", |o, n| o.report.after = n),
        Opt::number("-B/--before-context", |o, n| o.report.before = n),
        Opt::number("-C/--context", |o, n| {
            o.report.before = n;
            o.report.after = n;
        }),
        Opt::number("-m/--max-count", |o, n| o.report.max = Some(n)),
        Opt::count(|o, n| {
            let n: usize = n.parse().unwrap_or(0);
            o.report.before = n;
            o.report.after = n;
        }),
    ],
    refused: "--no-index --untracked --exclude-standard --recurse-submodules --and --or --not ( ) --all-match -p --show-function -W --function-context --heading --break --column --max-depth --textconv -O --open-files-in-pager",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn grep(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match run(sh, &repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => super::args::fail(io, &e),
    }
}

fn run(
    sh: &dyn Ctx,
    repo: &Repo,
    cwd: &std::path::Path,
    args: &[String],
    io: &Io,
) -> Result<i32, String> {
    let mut o = Opts {
        patterns: Vec::new(),
        syntax: Syntax::Basic,
        anchor: Anchor::None,
        icase: false,
        cached: false,
        full_name: false,
        report: Report {
            names: true,
            numbers: false,
            invert: false,
            only_matching: false,
            files_with: false,
            files_without: false,
            count: false,
            count_zero: false,
            quiet: false,
            before: 0,
            after: 0,
            max: None,
            null: false,
            text: false,
            skip_binary: false,
            binary_note_of: None,
        },
    };
    // Options end at the first operand, as git's parser stops there: what follows is
    // revisions and paths (`--` still starts the paths).
    let (operands, paths) = match SPEC.parse_with(args, &mut o, io, &mut |_, _| Ok(Next::Stop)) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let dashdash = paths.is_some();
    let paths = paths.unwrap_or_default();
    let Opts {
        patterns,
        syntax,
        anchor,
        icase,
        cached,
        full_name,
        report,
    } = o;
    let mut pats: Vec<String> = Vec::new();
    for p in patterns {
        match p {
            Pattern::Given(p) => pats.push(p),
            Pattern::File(f) => {
                let text = sh_utility::sys::read(sh.path(&f)).map_err(|e| {
                    format!(
                        "fatal: cannot open '{f}': {}",
                        sh_utility::format::io_msg(&e)
                    )
                })?;
                pats.extend(String::from_utf8_lossy(&text).lines().map(str::to_string));
            }
        }
    }
    let mut operands = operands.into_iter();
    if pats.is_empty() {
        match operands.next() {
            Some(p) => pats.push(p),
            None => return Err("fatal: no pattern given".into()),
        }
    }
    // Revisions, then paths (which must exist when no `--` comes first).
    let mut revs: Vec<(String, Oid)> = Vec::new();
    let mut rest: Vec<String> = Vec::new();
    for o in operands {
        if rest.is_empty()
            && let Some(id) = resolve(repo, &o)
        {
            // A commit (or a tag of one) is searched in its tree; a tree as itself.
            let tree = match repo.peel(&id, Kind::Commit) {
                Ok((c, _)) => read_commit(repo, &c)?.tree,
                Err(_) => repo.peel(&id, Kind::Tree)?.0,
            };
            revs.push((o, tree));
            continue;
        }
        // git's messages for an option after the pattern: a revision that does not resolve
        // when `--` ends the revisions, else the option's misplacement.
        if o.starts_with('-') && dashdash {
            return Err(format!("fatal: unable to resolve revision: {o}"));
        }
        if o.starts_with('-') {
            return Err(format!(
                "fatal: option '{o}' must come before non-option arguments"
            ));
        }
        // A path must exist when no `--` comes first, unless it has wildcards (git's
        // looks_like_pathspec).
        if !o.contains(['*', '?', '[']) && cwd.join(&o).symlink_metadata().is_err() {
            return Err(ambiguous(&o));
        }
        rest.push(o);
    }
    rest.extend(paths);
    if cached && !revs.is_empty() {
        return Err("fatal: --cached cannot be used with revisions".into());
    }
    let re = build_regex(&pats, syntax, anchor, icase).map_err(|e| format!("fatal: {e}"))?;
    let pre = prefix(repo, cwd);
    // Without pathspecs, the working directory's part of the tree.
    let scopes: Vec<Pathspec> = if rest.is_empty() {
        if pre.is_empty() {
            Vec::new()
        } else {
            vec![Pathspec::new(&pre, ".")]
        }
    } else {
        rest.iter().map(|p| Pathspec::new(&pre, p)).collect()
    };
    let shown = |p: &[u8]| -> String {
        let p = if full_name {
            p.to_vec()
        } else {
            relative(p, &pre)
        };
        String::from_utf8_lossy(&p).into_owned()
    };
    let mut targets: Vec<(String, Target)> = Vec::new();
    if revs.is_empty() {
        let work = repo
            .work
            .clone()
            .ok_or_else(|| "fatal: this operation must be run in a work tree".to_string())?;
        let mut last: Option<Vec<u8>> = None;
        for e in load_index(repo)? {
            // One target per path (a conflict's stages share the work tree file).
            if e.mode == 0o160000
                || !in_pathspecs(&scopes, &e.path)
                || last.as_ref() == Some(&e.path)
            {
                continue;
            }
            last = Some(e.path.clone());
            let name = shown(&e.path);
            if cached {
                let data = repo.read_kind(&e.oid, Kind::Blob)?.to_vec();
                targets.push((name, Target::Data(data)));
            } else {
                let file: PathBuf = work.join(String::from_utf8_lossy(&e.path).as_ref());
                match file.symlink_metadata() {
                    Ok(m) if m.file_type().is_symlink() => {
                        let t = std::fs::read_link(&file).unwrap_or_default();
                        targets.push((
                            name,
                            Target::Data(t.to_string_lossy().into_owned().into_bytes()),
                        ));
                    }
                    Ok(m) if m.is_file() => targets.push((name, Target::Path(file))),
                    _ => {}
                }
            }
        }
    } else {
        for (rev, tree) in &revs {
            for (p, (mode, oid)) in tree_files(repo, *tree)? {
                if mode == 0o160000 || !in_pathspecs(&scopes, &p) {
                    continue;
                }
                let data = repo.read_kind(&oid, Kind::Blob)?.to_vec();
                targets.push((format!("{rev}:{}", shown(&p)), Target::Data(data)));
            }
        }
    }
    Ok(i32::from(!report.run(targets, &re, io)))
}
