//! `git grep`: the tracked files of the work tree (by default), the index (`--cached`) or
//! commits' trees, searched with grep's own matcher and printed as git prints them (names
//! relative to the working directory, `REV:` before a tree's paths, `-c` only for files that
//! match). The search is limited to the working directory's part of the tree, or to the
//! pathspecs given, as in git.

use std::path::PathBuf;

use sh_coreutils::text::{Anchor, Report, Syntax, Target, build_regex};
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Args, usage_error};
use crate::plumbing::commit::read_commit;
use crate::plumbing::index::load_index;
use crate::plumbing::object::{Kind, Oid};
use crate::plumbing::pathspec::{Pathspec, ambiguous, in_pathspecs};
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;
use crate::plumbing::text::{prefix, relative};
use crate::plumbing::tree::tree_files;

const USAGE: &str = "git grep [<options>] [-e] <pattern> [<rev>...] [[--] <path>...]";

/// Options of git grep that burrow's does not implement (refused by name).
const NOT_HERE: &[&str] = &[
    "--no-index",
    "--untracked",
    "--exclude-standard",
    "--recurse-submodules",
    "--and",
    "--or",
    "--not",
    "(",
    ")",
    "--all-match",
    "-p",
    "--show-function",
    "-W",
    "--function-context",
    "--heading",
    "--break",
    "--column",
    "--max-depth",
    "--textconv",
    "-O",
    "--open-files-in-pager",
];

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
    let mut pats: Vec<String> = Vec::new();
    let mut syntax = Syntax::Basic;
    let mut anchor = Anchor::None;
    let mut icase = false;
    let mut cached = false;
    let mut full_name = false;
    let mut report = Report {
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
    };
    let mut operands: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut dashdash = false;
    let mut a = Args::with_values(args, "efABCm");
    let number = |v: String, name: &str| -> Result<usize, String> {
        v.parse()
            .map_err(|_| format!("error: option `{name}' expects a numerical value"))
    };
    while let Some(arg) = a.next() {
        let r: Result<(), String> = match arg.as_str() {
            "-e" => a.value("e").map(|v| pats.push(v)),
            "-f" => a.value("f").and_then(|v| {
                let text = sh_utility::sys::read(sh.path(&v)).map_err(|e| {
                    format!(
                        "fatal: cannot open '{v}': {}",
                        sh_utility::format::io_msg(&e)
                    )
                })?;
                pats.extend(String::from_utf8_lossy(&text).lines().map(str::to_string));
                Ok(())
            }),
            "-i" | "--ignore-case" => a.flag("ignore-case").map(|_| icase = true),
            "-w" | "--word-regexp" => a.flag("word-regexp").map(|_| anchor = Anchor::Word),
            "-v" | "--invert-match" => a.flag("invert-match").map(|_| report.invert = true),
            "-E" | "--extended-regexp" => {
                a.flag("extended-regexp").map(|_| syntax = Syntax::Extended)
            }
            "-G" | "--basic-regexp" => a.flag("basic-regexp").map(|_| syntax = Syntax::Basic),
            "-F" | "--fixed-strings" => a.flag("fixed-strings").map(|_| syntax = Syntax::Fixed),
            "-P" | "--perl-regexp" => a.flag("perl-regexp").map(|_| syntax = Syntax::Perl),
            "-n" | "--line-number" => a.flag("line-number").map(|_| report.numbers = true),
            "--no-line-number" => a.flag("no-line-number").map(|_| report.numbers = false),
            "-h" => a.flag("h").map(|_| report.names = false),
            "-H" => a.flag("H").map(|_| report.names = true),
            "--full-name" => a.flag("full-name").map(|_| full_name = true),
            "-l" | "--files-with-matches" | "--name-only" => a
                .flag("files-with-matches")
                .map(|_| report.files_with = true),
            "-L" | "--files-without-match" => a
                .flag("files-without-match")
                .map(|_| report.files_without = true),
            "-c" | "--count" => a.flag("count").map(|_| report.count = true),
            "-o" | "--only-matching" => {
                a.flag("only-matching").map(|_| report.only_matching = true)
            }
            "-q" | "--quiet" => a.flag("quiet").map(|_| report.quiet = true),
            "-z" | "--null" => a.flag("null").map(|_| report.null = true),
            "-a" | "--text" => a.flag("text").map(|_| report.text = true),
            "-I" => a.flag("I").map(|_| report.skip_binary = true),
            "-r" | "--recursive" | "--no-color" | "--index" => Ok(()),
            "--color" => match a.pending_value() {
                None | Some("never") | Some("auto") => Ok(()),
                Some(_) => {
                    return Err("fatal: 'git grep --color' is not supported in burrow".into());
                }
            },
            "--cached" => a.flag("cached").map(|_| cached = true),
            "--threads" => a.value("threads").map(|_| ()),
            "-A" | "--after-context" => a.value("A").and_then(|v| {
                report.after = number(v, "after-context")?;
                Ok(())
            }),
            "-B" | "--before-context" => a.value("B").and_then(|v| {
                report.before = number(v, "before-context")?;
                Ok(())
            }),
            "-C" | "--context" => a.value("C").and_then(|v| {
                let n = number(v, "context")?;
                report.before = n;
                report.after = n;
                Ok(())
            }),
            "-m" | "--max-count" => a.value("m").and_then(|v| {
                report.max = Some(number(v, "max-count")?);
                Ok(())
            }),
            s if s.len() > 1
                && s.starts_with('-')
                && s[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                let n: usize = s[1..].parse().unwrap_or(0);
                report.before = n;
                report.after = n;
                Ok(())
            }
            "--" => {
                dashdash = true;
                paths.extend(a.rest());
                Ok(())
            }
            s if NOT_HERE.contains(&s) => {
                return Err(format!("fatal: 'git grep {s}' is not supported in burrow"));
            }
            s if s.starts_with('-') && s != "-" => Err(a.unknown(s)),
            // Options end at the first operand, as git's parser stops there: what follows
            // is revisions and paths (`--` still starts the paths).
            _ => {
                operands.push(arg.clone());
                let mut rest = a.rest().into_iter();
                for o in rest.by_ref() {
                    if o == "--" {
                        dashdash = true;
                        break;
                    }
                    operands.push(o);
                }
                paths.extend(rest);
                Ok(())
            }
        };
        if let Err(e) = r {
            return Ok(usage_error(io, &e, USAGE));
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
