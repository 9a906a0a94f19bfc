//! `git diff` (work tree against the index, `--cached` index against HEAD, one commit against
//! the work tree, two commits or `A..B`; `--stat`, `--name-only`, `--name-status`, `-- PATHS`)
//! and the diff of `git show` (through `git log`'s options: [`super::log::show`]), in git's
//! unified format: `diff --git` headers, `index` lines, hunks with three lines of context and
//! the default function-name context after `@@`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use foldhash::HashMap;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Next, Opt, Refusal, Spec, Unknown};
use crate::plumbing::commit::read_commit;
use crate::plumbing::diff::{
    Change, Format, NAME, NAME_STATUS, NO_OUTPUT, PATCH, STAT, Side, pair_renames, render,
};
use crate::plumbing::index::{Files, load_index, worktree_change};
use crate::plumbing::object::{Kind, Oid, hash};
use crate::plumbing::pathspec::{ambiguous, in_scopes};
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::rev::resolve;
pub(crate) use crate::plumbing::rev::scope_of;
use crate::plumbing::text::prefix;
use crate::plumbing::tree::tree_files;

/// What `git diff` was asked for.
#[derive(Default)]
struct Opts {
    cached: bool,
    /// The formats asked for, git's output_format bits ([`PATCH`], ...): they add up.
    output: u8,
    /// `--quiet`: nothing shown, the status says whether anything differs.
    quiet: bool,
    /// `--exit-code`: the status says whether anything differs.
    exit_code: bool,
    /// The revisions given, in order (`A..B` among them).
    revs: Vec<String>,
    /// The first option git's diff does not know, refused once the rest is read.
    invalid: Option<String>,
}

/// git's usage of `git diff`, with the common diff options it lists (builtin/diff.c).
const USAGE: &str = concat!(
    "git diff [<options>] [<commit>] [--] [<path>...]\n",
    "   or: git diff [<options>] --cached [--merge-base] [<commit>] [--] [<path>...]\n",
    "   or: git diff [<options>] [--merge-base] <commit> [<commit>...] <commit> [--] [<path>...]\n",
    "   or: git diff [<options>] <commit>...<commit> [--] [<path>...]\n",
    "   or: git diff [<options>] <blob> <blob>\n",
    "   or: git diff [<options>] --no-index [--] <path> <path>\n",
    "\n",
    "common diff options:\n",
    "  -z            output diff-raw with lines terminated with NUL.\n",
    "  -p            output patch format.\n",
    "  -u            synonym for -p.\n",
    "  --patch-with-raw\n",
    "                output both a patch and the diff-raw format.\n",
    "  --stat        show diffstat instead of patch.\n",
    "  --numstat     show numeric diffstat instead of patch.\n",
    "  --patch-with-stat\n",
    "                output a patch and prepend its diffstat.\n",
    "  --name-only   show only names of changed files.\n",
    "  --name-status show names and status of changed files.\n",
    "  --full-index  show full object name on index lines.\n",
    "  --abbrev=<n>  abbreviate object names in diff-tree header and diff-raw.\n",
    "  -R            swap input file pairs.\n",
    "  -B            detect complete rewrites.\n",
    "  -M            detect renames.\n",
    "  -C            detect copies.\n",
    "  --find-copies-harder\n",
    "                try unchanged files as candidate for copy detection.\n",
    "  -l<n>         limit rename attempts up to <n> paths.\n",
    "  -O<file>      reorder diffs according to the <file>.\n",
    "  -S<string>    find filepair whose only one side contains the string.\n",
    "  --pickaxe-all\n",
    "                show all files diff when -S is used and hit is found.\n",
    "  -a  --text    treat all files as text.\n",
);

const SPEC: Spec<Opts> = Spec {
    name: "diff",
    usage: USAGE,
    options: &[
        Opt::flag("--cached/--staged", |o| o.cached = true),
        Opt::flag("--quiet", |o| o.quiet = true),
        Opt::flag("--exit-code", |o| o.exit_code = true),
        Opt::flag("-p/--patch/-u", |o| {
            o.output = (o.output & !NO_OUTPUT) | PATCH
        }),
        Opt::flag("-s/--no-patch", |o| o.output = NO_OUTPUT),
        Opt::optional("--stat", |o, v| match v {
            None => {
                o.output = (o.output & !NO_OUTPUT) | STAT;
                Ok(())
            }
            Some(v) => Err(Refusal::NotHere(format!("--stat={v}"))),
        }),
        Opt::flag("--name-only", |o| o.output |= NAME),
        Opt::flag("--name-status", |o| o.output |= NAME_STATUS),
        // There is no terminal to colour for, and no external diff program.
        Opt::ignored("--no-color"),
        Opt::ignored("--no-ext-diff"),
    ],
    refused: "--numstat --shortstat --raw --summary --check -z --color --word-diff --color-words --word-diff-regex -U --unified -W --function-context --no-function-context -M --find-renames -C --find-copies --find-copies-harder -B --break-rewrites -D --irreversible-delete --no-renames --rename-empty --no-rename-empty -l -R -a --text -w --ignore-all-space -b --ignore-space-change --ignore-space-at-eol --ignore-cr-at-eol --ignore-blank-lines -I --ignore-matching-lines --diff-algorithm --minimal --patience --histogram --anchored --indent-heuristic --no-indent-heuristic --full-index --no-full-index --binary --abbrev --no-abbrev --src-prefix --dst-prefix --no-prefix --default-prefix --line-prefix --relative --no-relative -S -G --pickaxe-all --pickaxe-regex --find-object --diff-filter -O --rotate-to --skip-to -X --dirstat --cumulative --dirstat-by-file --compact-summary --no-compact-summary --patch-with-stat --patch-with-raw --stat-width --stat-name-width --stat-graph-width --stat-count --ext-diff --textconv --no-textconv --ignore-submodules --submodule --color-moved --no-color-moved --color-moved-ws --no-color-moved-ws --ws-error-highlight --output --output-indicator-new --output-indicator-old --output-indicator-context --inter-hunk-context --ita-invisible-in-index --ita-visible-in-index --follow --no-follow --merge-base --no-index -q --base --ours --theirs -0 -1 -2 -3 -m -c --cc --combined-all-paths",
    // git's diff reads revision options: whole words, and what it does not know it refuses
    // once it has read the rest (see [`refuse_invalid`]).
    unknown: Unknown::Operand,
    help: &[],
};

pub fn diff(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let mut o = Opts::default();
    let (operands, after) = match SPEC.parse_with(args, &mut o, io, &mut |o, s| {
        if s.starts_with('-') && s != "-" {
            o.invalid.get_or_insert_with(|| s.to_string());
            return Ok(Next::Taken);
        }
        if resolve_range(&repo, s).is_some() {
            o.revs.push(s.to_string());
            return Ok(Next::Taken);
        }
        // The first path: it and what follows are paths.
        Ok(Next::Stop)
    }) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let paths = match paths_of(&cwd, operands, after) {
        Ok(p) => p,
        Err(e) => return super::args::fail(io, &e),
    };
    let one_of = o.output & (NAME | NAME_STATUS | NO_OUTPUT);
    if one_of.count_ones() > 1 {
        return super::args::fail(
            io,
            "fatal: options '--name-only', '--name-status', '--check', and '-s' cannot be used together",
        );
    }
    if let Some(invalid) = &o.invalid {
        return refuse_invalid(&o, invalid, io);
    }
    match run_diff(&repo, &cwd, &o, &paths, io) {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// The paths of a diff's command line, checked as git's revision reader checks them: those
/// after `--` as they are; without `--`, the first name that is not a revision must exist
/// (git's "ambiguous argument") and so must each name after it, which cannot be an option.
fn paths_of(
    cwd: &Path,
    operands: Vec<String>,
    after: Option<Vec<String>>,
) -> Result<Vec<String>, String> {
    let Some(first) = operands.first() else {
        return Ok(after.unwrap_or_default());
    };
    if after.is_some() {
        return Err(format!("fatal: bad revision '{first}'"));
    }
    if cwd.join(first).symlink_metadata().is_err() {
        return Err(ambiguous(first));
    }
    for p in &operands[1..] {
        if p.starts_with('-') {
            return Err(format!(
                "fatal: option '{p}' must come before non-option arguments"
            ));
        }
        if cwd.join(p).symlink_metadata().is_err() {
            return Err(format!(
                "fatal: {p}: no such path in the working tree.\n\
                 Use 'git <command> -- <path>...' to specify paths that do not exist locally."
            ));
        }
    }
    Ok(operands)
}

/// git's refusal of an option its diff does not know, status 129: comparing the work tree
/// with the index, its "invalid option" and the usage; comparing anything else, the usage.
fn refuse_invalid(o: &Opts, invalid: &str, io: &Io) -> i32 {
    let msg = if o.revs.is_empty() && !o.cached {
        format!("error: invalid option: {invalid}")
    } else {
        String::new()
    };
    SPEC.usage_error(io, &msg)
}

fn run_diff(repo: &Repo, cwd: &Path, o: &Opts, paths: &[String], io: &Io) -> Result<i32, String> {
    let (cached, revs) = (o.cached, &o.revs);
    let work = repo.work.clone();
    // The index, read once: its entries' stat data lets the work tree side skip every file
    // that has not changed since it was staged, as git does, instead of hashing it.
    let entries = load_index(repo)?;
    let index_files = || -> Result<Files, String> {
        Ok(entries
            .iter()
            .map(|e| (e.path.clone(), (e.mode, e.oid)))
            .collect())
    };
    let by_path: HashMap<&[u8], &IndexEntry> =
        entries.iter().map(|e| (e.path.as_slice(), e)).collect();
    let commit_files = |rev: &str| -> Result<Files, String> {
        let id = resolve(repo, rev).ok_or_else(|| ambiguous(rev))?;
        let c = read_commit(repo, &id)?;
        tree_files(repo, c.tree)
    };
    // (old, new, whether the new side is the work tree)
    let (old, new, worktree): (Files, Files, bool) = match (revs.as_slice(), cached) {
        ([], false) => (index_files()?, index_files()?, true),
        ([], true) => {
            let head = match repo.head().1 {
                Some(h) => tree_files(repo, read_commit(repo, &h)?.tree)?,
                None => BTreeMap::new(),
            };
            (head, index_files()?, false)
        }
        ([r], c) if r.contains("..") => {
            if c {
                return Err("fatal: --cached with a range is not supported".into());
            }
            let (a, b) = resolve_range(repo, r).ok_or_else(|| ambiguous(r))?;
            (commit_files(&a)?, commit_files(&b)?, false)
        }
        ([r], true) => (commit_files(r)?, index_files()?, false),
        ([r], false) => (commit_files(r)?, index_files()?, true),
        ([a, b], false) => (commit_files(a)?, commit_files(b)?, false),
        _ => return Err("fatal: this form of 'git diff' is not supported in burrow".into()),
    };
    let pre = prefix(repo, cwd);
    let scopes: Vec<Vec<u8>> = paths.iter().map(|p| scope_of(&pre, p)).collect();
    let wanted = |p: &[u8]| in_scopes(&scopes, p);
    // The work tree side: each index path's current content.
    let read_blob =
        |id: &Oid| -> Result<Vec<u8>, String> { Ok(repo.read_kind(id, Kind::Blob)?.to_vec()) };
    let empty = hash(Kind::Blob, b"");
    let mut changes: Vec<(Vec<u8>, Option<Side>, Option<Side>)> = Vec::new();
    let mut all: Vec<&Vec<u8>> = old.keys().chain(new.keys()).collect();
    all.sort();
    all.dedup();
    let mut tree = work.as_deref().map(sh_utility::sys::TreeStat::new);
    for p in all {
        if !wanted(p) {
            continue;
        }
        let a = old.get(p).map(|(m, id)| (*m, *id));
        let b: Option<Side> = if worktree && !new.contains_key(p) {
            // Not in the index: not tracked, so deleted against the revision whatever the
            // work tree holds there (git diff REV compares tracked paths).
            None
        } else if worktree {
            let Some(w) = &work else {
                return Err("fatal: this operation must be run in a work tree".into());
            };
            let file = w.join(String::from_utf8_lossy(p).as_ref());
            let staged = by_path.get(p.as_slice());
            let unchanged =
                |e: &&&IndexEntry| (tree.as_mut()).is_some_and(|t| worktree_change(t, e).is_none());
            if let Some(e) = staged.filter(unchanged) {
                // As staged: its content is the index's blob, read below if it is shown.
                Some(Side {
                    mode: e.mode,
                    oid: e.oid,
                    data: Vec::new(),
                })
            } else {
                match file.symlink_metadata() {
                    Err(_) => None,
                    Ok(m) if m.is_dir() => None,
                    Ok(m) => {
                        let data = if m.file_type().is_symlink() {
                            std::fs::read_link(&file)
                                .map(|t| t.to_string_lossy().into_owned().into_bytes())
                                .unwrap_or_default()
                        } else {
                            std::fs::read(&file).unwrap_or_default()
                        };
                        let mode = if m.file_type().is_symlink() {
                            0o120000
                        } else {
                            new.get(p).map(|x| x.0).unwrap_or(0o100644)
                        };
                        Some(Side {
                            mode,
                            oid: hash(Kind::Blob, &data),
                            data,
                        })
                    }
                }
            }
        } else {
            new.get(p).map(|(m, id)| Side {
                mode: *m,
                oid: *id,
                data: Vec::new(),
            })
        };
        match (&a, &b) {
            (Some((m, id)), Some(s)) if *id == s.oid && *m == s.mode => continue,
            (None, None) => continue,
            _ => {}
        }
        if a.is_some_and(|(m, _)| m == 0o160000) || b.as_ref().is_some_and(|s| s.mode == 0o160000) {
            continue;
        }
        let a = match a {
            Some((m, id)) => Some(Side {
                mode: m,
                oid: id,
                data: read_blob(&id)?,
            }),
            None => None,
        };
        let b = match b {
            Some(s) if !worktree || (s.data.is_empty() && s.oid != empty) => Some(Side {
                data: read_blob(&s.oid)?,
                ..s
            }),
            other => other,
        };
        changes.push((p.clone(), a, b));
    }
    let changes = pair_renames(changes);
    if !o.quiet {
        io.print(&output(&changes, o.output));
    }
    Ok(i32::from((o.quiet || o.exit_code) && !changes.is_empty()))
}

/// The changes in the formats asked for, as git's diff_flush writes them: names alone,
/// nothing, or a stat and a patch (an empty line between), the patch by default.
fn output(changes: &[Change], output: u8) -> String {
    if output & NO_OUTPUT != 0 || changes.is_empty() {
        return String::new();
    }
    if output & NAME_STATUS != 0 {
        return render(changes, Format::NameStatus);
    }
    if output & NAME != 0 {
        return render(changes, Format::NameOnly);
    }
    match (output & STAT != 0, output & PATCH != 0) {
        (true, true) => format!(
            "{}\n{}",
            render(changes, Format::Stat),
            render(changes, Format::Patch)
        ),
        (true, false) => render(changes, Format::Stat),
        _ => render(changes, Format::Patch),
    }
}

/// `A..B` as its two ends (an empty end is HEAD); a single revision as itself.
fn resolve_range(repo: &Repo, s: &str) -> Option<(String, String)> {
    match s.split_once("..") {
        Some((a, b)) => {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            (resolve(repo, a).is_some() && resolve(repo, b).is_some())
                .then(|| (a.to_string(), b.to_string()))
        }
        None => resolve(repo, s).map(|_| (s.to_string(), s.to_string())),
    }
}

/// `git show`: `git log`'s options and formats over the objects named (see
/// [`super::log::show`]).
pub fn show(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    match super::log::show(&repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}
