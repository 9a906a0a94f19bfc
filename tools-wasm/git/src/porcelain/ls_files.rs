//! `git ls-files`: the index's files (`-c`, the default), with their stage (`-s`, `-u`),
//! those deleted or modified in the work tree (`-d`, `-m`), the untracked ones (`-o`, whole
//! directories with `--directory`), and with exclude rules (`--exclude-standard`, `-x`,
//! `-X`) the ignored ones (`-i`). As git prints them: the untracked first, then the index
//! in its order, each path relative to the working directory (`--full-name`: from the top),
//! quoted unless `-z`, after its `-t` tag.

use std::path::{Path, PathBuf};

use foldhash::{HashSet, HashSetExt};
use sh_utility::io::Io;
use sh_utility::sys::TreeStat;

use super::args::{Opt, Refusal, Spec, Unknown, push};
use crate::plumbing::index::worktree_change;
use crate::plumbing::object::hex;
use crate::plumbing::pathspec::Pathspec;
use crate::plumbing::repo::{Repo, load_all};
use crate::plumbing::text::{prefix, quote, relative};
use crate::plumbing::untracked::{Ignores, dir_entries};

const USAGE: &str = "git ls-files [<options>] [<file>...]

    -z                    separate paths with the NUL character
    -t                    identify the file status with tags
    -v                    use lowercase letters for 'assume unchanged' files
    -f                    use lowercase letters for 'fsmonitor clean' files
    -c, --[no-]cached     show cached files in the output (default)
    -d, --[no-]deleted    show deleted files in the output
    -m, --[no-]modified   show modified files in the output
    -o, --[no-]others     show other files in the output
    -i, --[no-]ignored    show ignored files in the output
    -s, --[no-]stage      show staged contents' object name in the output
    -k, --[no-]killed     show files on the filesystem that need to be removed
    --[no-]directory      show 'other' directories' names only
    --[no-]eol            show line endings of files
    --[no-]empty-directory
                          don't show empty directories
    -u, --[no-]unmerged   show unmerged files in the output
    --[no-]resolve-undo   show resolve-undo information
    -x, --exclude <pattern>
                          skip files matching pattern
    -X, --exclude-from <file>
                          read exclude patterns from <file>
    --[no-]exclude-per-directory <file>
                          read additional per-directory exclude patterns in <file>
    --exclude-standard    add the standard git exclusions
    --full-name           make the output relative to the project top directory
    --[no-]recurse-submodules
                          recurse through submodules
    --[no-]error-unmatch  if any <file> is not in the index, treat this as an error
    --[no-]with-tree <tree-ish>
                          pretend that paths removed since <tree-ish> are still present
    --[no-]abbrev[=<n>]   use <n> digits to display object names
    --[no-]debug          show debugging data
    --[no-]deduplicate    suppress duplicate entries
    --[no-]sparse         show sparse directories in the presence of a sparse index
    --format <format>     format to use for the output
";

/// What `ls-files` shows and how.
#[derive(Default)]
struct Opts {
    cached: bool,
    deleted: bool,
    modified: bool,
    others: bool,
    ignored: bool,
    stage: bool,
    unmerged: bool,
    directory: bool,
    no_empty_directory: bool,
    tags: bool,
    nul: bool,
    full_name: bool,
    error_unmatch: bool,
    deduplicate: bool,
    abbrev: Option<usize>,
    /// `--exclude-standard` (or `--exclude-per-directory=.gitignore`).
    standard: bool,
    per_dir: bool,
    /// `-x` patterns.
    patterns: Vec<String>,
    /// `-X` files.
    exclude_files: Vec<String>,
}

/// `git ls-files ARGS` from the shell's working directory.
pub fn run(sh: &dyn sh_utility::ctx::Ctx, args: &[String], io: &Io) -> i32 {
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match ls_files(&repo, &cwd, args, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

const SPEC: Spec<Opts> = Spec {
    name: "ls-files",
    usage: USAGE,
    options: &[
        Opt::bool("-c/--cached", |o, on| o.cached = on),
        Opt::bool("-d/--deleted", |o, on| o.deleted = on),
        Opt::bool("-m/--modified", |o, on| o.modified = on),
        Opt::bool("-o/--others", |o, on| o.others = on),
        Opt::bool("-i/--ignored", |o, on| o.ignored = on),
        Opt::bool("-s/--stage", |o, on| o.stage = on),
        Opt::bool("-u/--unmerged", |o, on| o.unmerged = on),
        Opt::bool("--directory", |o, on| o.directory = on),
        // The option's sense is inverted: --no-empty-directory hides them.
        Opt::bool("--empty-directory", |o, on| o.no_empty_directory = !on),
        Opt::flag("-t", |o| o.tags = true),
        Opt::flag("-z", |o| o.nul = true),
        Opt::flag("--full-name", |o| o.full_name = true),
        Opt::bool("--error-unmatch", |o, on| o.error_unmatch = on),
        Opt::bool("--deduplicate", |o, on| o.deduplicate = on),
        Opt::optional("--abbrev", |o, v| {
            o.abbrev = Some(match v {
                None => 7,
                Some(v) => v
                    .parse::<usize>()
                    .map_err(|_| {
                        Refusal::Alone("error: option `abbrev' expects a numerical value".into())
                    })?
                    .clamp(4, 40),
            });
            Ok(())
        }),
        Opt::flag("--no-abbrev", |o| o.abbrev = None),
        Opt::flag("--exclude-standard", |o| o.standard = true),
        Opt::value("-x/--exclude", |o, v| push(&mut o.patterns, v)),
        Opt::value("-X/--exclude-from", |o, v| push(&mut o.exclude_files, v)),
        Opt::value("--exclude-per-directory", |o, v| match v.as_str() {
            ".gitignore" => {
                o.per_dir = true;
                Ok(())
            }
            _ => Err(Refusal::NotHere("--exclude-per-directory".into())),
        }),
    ],
    refused: "-v -f -k --killed --eol --resolve-undo --with-tree --recurse-submodules --debug --format --sparse",
    unknown: Unknown::Usage,
    help: &[],
};

fn ls_files(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    let mut o = Opts::default();
    let specs = match SPEC.parse(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    if o.unmerged {
        o.stage = true;
    }
    let excludes_given =
        o.standard || o.per_dir || !o.patterns.is_empty() || !o.exclude_files.is_empty();
    if o.ignored && !o.others && !o.cached {
        return Err("fatal: ls-files -i must be used with either -o or -c".into());
    }
    if o.ignored && !excludes_given {
        return Err("fatal: ls-files --ignored needs some exclude pattern".into());
    }
    if !(o.stage || o.deleted || o.others || o.unmerged || o.modified) {
        o.cached = true;
    }
    let needs_work = o.others || o.deleted || o.modified || o.ignored;
    let work = match &repo.work {
        Some(w) => w.clone(),
        None if needs_work => {
            return Err("fatal: this operation must be run in a work tree".into());
        }
        None => PathBuf::new(),
    };
    let pre = prefix(repo, cwd);
    let pathspecs: Vec<Pathspec> = specs.iter().map(|p| Pathspec::new(&pre, p)).collect();
    // Without pathspecs only what is under the working directory is listed.
    let wanted = |p: &[u8]| {
        if pathspecs.is_empty() {
            pre.is_empty() || (p.starts_with(&pre) && p.get(pre.len()) == Some(&b'/'))
        } else {
            pathspecs.iter().any(|s| s.matches(p))
        }
    };
    let mut matched = vec![false; pathspecs.len()];
    let mut note = |p: &[u8]| {
        for (m, s) in matched.iter_mut().zip(&pathspecs) {
            if s.matches(p) {
                *m = true;
            }
        }
    };
    let show_tag = o.tags;
    let tag = |t: &str| {
        if show_tag {
            t.to_string()
        } else {
            String::new()
        }
    };
    let shown_path = |p: &[u8]| -> String {
        let p = if o.full_name {
            p.to_vec()
        } else if let Some(dir) = p.strip_suffix(b"/") {
            // The working directory itself is `./`.
            let mut r = relative(dir, &pre);
            r.push(b'/');
            r
        } else {
            relative(p, &pre)
        };
        if o.nul {
            format!("{}\0", String::from_utf8_lossy(&p))
        } else {
            format!("{}\n", quote(&p))
        }
    };
    let mut out = String::new();
    let index = load_all(repo)?;
    if o.others {
        let mut ign = exclude_rules(repo, &work, &o);
        let tracked: HashSet<Vec<u8>> = index.iter().map(|e| e.path.clone()).collect();
        let mut tracked_dirs: HashSet<Vec<u8>> = HashSet::new();
        for e in &index {
            let mut p = e.path.as_slice();
            while let Some(i) = p.iter().rposition(|&b| b == b'/') {
                p = &p[..i];
                if !tracked_dirs.insert(p.to_vec()) {
                    break;
                }
            }
        }
        // Without pathspecs the working directory is the one.
        let here = [Pathspec::new(&pre, ".")];
        let walk = Walk {
            tracked: &tracked,
            tracked_dirs: &tracked_dirs,
            opts: &o,
            specs: if pathspecs.is_empty() && !pre.is_empty() {
                &here
            } else {
                &pathspecs
            },
        };
        let mut found = Vec::new();
        walk.dir(&work, b"", &mut ign, false, &mut found);
        for p in found {
            note(p.strip_suffix(b"/").unwrap_or(&p));
            out.push_str(&tag("? "));
            out.push_str(&shown_path(&p));
        }
    }
    if o.cached || o.stage || o.deleted || o.modified {
        let mut tree = TreeStat::new(&work);
        let mut last: Option<&[u8]> = None;
        for e in &index {
            if !wanted(&e.path) {
                continue;
            }
            if o.ignored && !excluded(repo, &work, &e.path, &o) {
                continue;
            }
            // --deduplicate: one line per path.
            if o.deduplicate && !o.tags && !o.stage && last == Some(e.path.as_slice()) {
                continue;
            }
            let mut line = |t: &str, out: &mut String| {
                note(&e.path);
                out.push_str(&tag(t));
                if o.stage {
                    let id = hex(&e.oid);
                    let id = o.abbrev.map_or(id.as_str(), |n| &id[..n]);
                    out.push_str(&format!("{:06o} {id} {}\t", e.mode, e.stage));
                }
                out.push_str(&shown_path(&e.path));
                last = Some(e.path.as_slice());
            };
            if (o.cached || o.stage) && (!o.unmerged || e.stage > 0) {
                line(if e.stage > 0 { "M " } else { "H " }, &mut out);
                if o.deduplicate && !o.tags && !o.stage {
                    continue;
                }
            }
            if !(o.deleted || o.modified) {
                continue;
            }
            let gone = tree.lstat(&e.path).is_none();
            if gone && o.deleted {
                line("R ", &mut out);
                if o.deduplicate && !o.tags && !o.stage {
                    continue;
                }
            }
            if o.modified && (gone || worktree_change(&mut tree, e).is_some()) {
                line("C ", &mut out);
            }
        }
    }
    io.print(&out);
    // --error-unmatch: each pathspec nothing matched, then one hint.
    let unmatched: String = specs
        .iter()
        .zip(&matched)
        .filter(|(_, m)| o.error_unmatch && !**m)
        .map(|(s, _)| format!("error: pathspec '{s}' did not match any file(s) known to git\n"))
        .collect();
    if !unmatched.is_empty() {
        io.eprint(&format!("{unmatched}Did you forget to 'git add'?\n"));
        return Ok(1);
    }
    Ok(0)
}

/// The exclude rules asked for: `-x` patterns above everything, then (deepest first) the
/// directories' `.gitignore` files, `.git/info/exclude` and the `-X` files.
fn exclude_rules(repo: &Repo, work: &Path, o: &Opts) -> Ignores {
    let files: Vec<PathBuf> = o.exclude_files.iter().map(|f| work.join(f)).collect();
    Ignores::with_rules(
        repo,
        work,
        o.standard,
        o.standard || o.per_dir,
        &o.patterns,
        &files,
    )
}

/// Whether an index path is excluded: it or one of its directories matches.
fn excluded(repo: &Repo, work: &Path, path: &[u8], o: &Opts) -> bool {
    let mut ign = exclude_rules(repo, work, o);
    let text = String::from_utf8_lossy(path);
    let parts: Vec<&str> = text.split('/').collect();
    let mut d = work.to_path_buf();
    ign.push_dir(&d);
    for (i, part) in parts.iter().enumerate() {
        d.push(part);
        let last = i + 1 == parts.len();
        if ign.ignored(&d, !last) {
            return true;
        }
        if !last {
            ign.push_dir(&d);
        }
    }
    false
}

/// The walk of the work tree for `-o`.
struct Walk<'a> {
    tracked: &'a HashSet<Vec<u8>>,
    tracked_dirs: &'a HashSet<Vec<u8>>,
    opts: &'a Opts,
    /// The pathspecs (none: everything).
    specs: &'a [Pathspec],
}

/// How the pathspecs take a directory (`dir/`).
#[derive(PartialEq)]
enum Fit {
    /// A pathspec matches the directory itself: it is listed whole with --directory.
    Whole,
    /// A pathspec may match something below it: the walk goes in.
    Below,
    None,
}

impl Walk<'_> {
    /// Whether the pathspecs take a file.
    fn wants(&self, path: &[u8]) -> bool {
        self.specs.is_empty() || self.specs.iter().any(|s| s.matches(path))
    }

    /// How the pathspecs take directory `dir` (ending in `/`), as git's walk matches
    /// directories (a glob against the name with its slash, then as a leading path).
    fn fit(&self, dir: &[u8]) -> Fit {
        if self.specs.is_empty() {
            return Fit::Whole;
        }
        let bare = &dir[..dir.len() - 1];
        let mut fit = Fit::None;
        for s in self.specs {
            let p = s.path();
            if s.is_glob() {
                if s.matches(dir) || s.matches(bare) {
                    return Fit::Whole;
                }
                // The part before the first wildcard; `*` also matches `/`.
                let lit_len = p
                    .iter()
                    .position(|b| matches!(b, b'*' | b'?' | b'['))
                    .unwrap_or(p.len());
                let lit = &p[..lit_len];
                if lit.starts_with(dir) || dir.starts_with(lit) {
                    fit = Fit::Below;
                }
            } else if p.is_empty() || s.matches(bare) {
                return Fit::Whole;
            } else if p.starts_with(dir) {
                fit = Fit::Below;
            }
        }
        fit
    }

    /// The untracked entries under `dir` (`rel` from the top, ending in `/` below it), in
    /// name order as git lists them; `inside_ignored` below an excluded directory.
    fn dir(
        &self,
        dir: &Path,
        rel: &[u8],
        ign: &mut Ignores,
        inside_ignored: bool,
        out: &mut Vec<Vec<u8>>,
    ) {
        let names = dir_entries(dir);
        let pushed = ign.push_listed(dir, &names);
        // git sorts a directory as its name with a slash.
        let mut names: Vec<(String, bool)> = names;
        names.sort_by(|a, b| {
            let key = |(n, d): &(String, bool)| {
                let mut k = n.as_bytes().to_vec();
                if *d {
                    k.push(b'/');
                }
                k
            };
            key(a).cmp(&key(b))
        });
        for (name, is_dir) in names {
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let mut p = rel.to_vec();
            p.extend_from_slice(name.as_bytes());
            let full = dir.join(&name);
            let excluded = inside_ignored || ign.ignored(&full, is_dir);
            if !is_dir {
                if !self.tracked.contains(&p) && excluded == self.opts.ignored && self.wants(&p) {
                    out.push(p);
                }
                continue;
            }
            let mut slashed = p.clone();
            slashed.push(b'/');
            let fit = self.fit(&slashed);
            if fit == Fit::None {
                continue;
            }
            if self.tracked_dirs.contains(&p) {
                self.dir(&full, &slashed, ign, excluded, out);
                continue;
            }
            // Another repository inside: listed as a directory, never entered.
            if full.join(".git").exists() {
                if excluded == self.opts.ignored && fit == Fit::Whole {
                    out.push(slashed);
                }
                continue;
            }
            // A directory a pathspec reaches into is walked, not listed whole.
            if fit == Fit::Below {
                if self.opts.ignored || !excluded {
                    self.dir(&full, &slashed, ign, excluded, out);
                }
                continue;
            }
            if self.opts.ignored {
                if excluded {
                    if self.opts.directory {
                        out.push(slashed);
                    } else {
                        self.dir(&full, &slashed, ign, true, out);
                    }
                    continue;
                }
                // A directory of nothing but ignored files is itself ignored with
                // --directory, and its files are listed too.
                if self.opts.directory
                    && !has_content(&full, ign, false)
                    && has_content(&full, ign, true)
                {
                    out.push(slashed.clone());
                }
                self.dir(&full, &slashed, ign, false, out);
                continue;
            }
            if excluded {
                continue;
            }
            if self.opts.directory {
                if !self.opts.no_empty_directory || has_content(&full, ign, false) {
                    out.push(slashed);
                }
                continue;
            }
            self.dir(&full, &slashed, ign, false, out);
        }
        if pushed {
            ign.pop();
        }
    }
}

/// Whether `dir` holds a file: one not ignored, or with `any` any file at all.
fn has_content(dir: &Path, ign: &mut Ignores, any: bool) -> bool {
    let pushed = ign.push_dir(dir);
    let found = std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let p = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (any || !ign.ignored(&p, is_dir)) && (!is_dir || has_content(&p, ign, any))
        })
    });
    if pushed {
        ign.pop();
    }
    found
}
