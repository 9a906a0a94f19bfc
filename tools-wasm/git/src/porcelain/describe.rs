//! `git describe`: the newest tag a commit descends from, as `TAG-N-gABBREV` (N commits
//! since the tag), or the tag alone on the tagged commit; annotated tags only unless
//! `--tags`, `--long`, `--abbrev=N`, `--always`, `--exact-match`, `--match`/`--exclude`,
//! `--dirty[=MARK]`, with git's errors when nothing describes it.

use foldhash::{HashMap, HashMapExt, HashSet};
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, set};
use crate::plumbing::commit::ident_time;
use crate::plumbing::index::worktree_change;
use crate::plumbing::object::{Kind, Oid, hex};
use crate::plumbing::repo::{Repo, load_all};
use crate::plumbing::rev::resolve;
use crate::plumbing::tree::head_files;

const USAGE: &str = "git describe [--all] [--tags] [--contains] [--abbrev=<n>] [<commit-ish>...]
   or: git describe [--all] [--tags] [--contains] [--abbrev=<n>] --dirty[=<mark>]
   or: git describe <blob>

    --[no-]contains       find the tag that comes after the commit
    --[no-]debug          debug search strategy on stderr
    --[no-]all            use any ref
    --[no-]tags           use any tag, even unannotated
    --[no-]long           always use long format
    --[no-]first-parent   only follow first parent
    --[no-]abbrev[=<n>]   use <n> digits to display object names
    --[no-]exact-match    only output exact matches
    --[no-]candidates <n> consider <n> most recent tags (default: 10)
    --[no-]match <pattern>
                          only consider tags matching <pattern>
    --[no-]exclude <pattern>
                          do not consider tags matching <pattern>
    --[no-]always         show abbreviated commit object as fallback
    --[no-]dirty[=<mark>] append <mark> on dirty working tree (default: \"-dirty\")
    --[no-]broken[=<mark>]
                          append <mark> on broken working tree (default: \"-broken\")
";

#[derive(Default)]
struct Opts {
    tags: bool,
    long: bool,
    always: bool,
    exact: bool,
    abbrev: Option<usize>,
    dirty: Option<String>,
    matches: Vec<String>,
    excludes: Vec<String>,
}

/// A tag that can name a commit: its name, whether it is annotated (git's priority 2) and
/// an annotated tag's date (the newer one wins on the same commit).
#[derive(Clone)]
struct Name {
    tag: String,
    annotated: bool,
    date: i64,
}

/// describe's options, as git's `describe.c` declares them.
const SPEC: Spec<Opts> = Spec {
    name: "describe",
    usage: USAGE,
    options: &[
        Opt::flag("--tags", |o| o.tags = true),
        Opt::flag("--no-tags", |o| o.tags = false),
        Opt::flag("--long", |o| o.long = true),
        Opt::flag("--no-long", |o| o.long = false),
        Opt::flag("--always", |o| o.always = true),
        Opt::flag("--no-always", |o| o.always = false),
        Opt::flag("--exact-match", |o| o.exact = true),
        Opt::flag("--no-exact-match", |o| o.exact = false),
        Opt::optional("--abbrev", |o, v| {
            o.abbrev =
                match v {
                    None => None,
                    Some(v) => Some(v.parse::<usize>().map_err(|_| {
                        "error: option `abbrev' expects a numerical value".to_string()
                    })?),
                };
            Ok(())
        }),
        Opt::flag("--no-abbrev", |o| o.abbrev = Some(0)),
        Opt::optional("--dirty", |o, v| {
            set(&mut o.dirty, Some(v.unwrap_or_else(|| "-dirty".into())))
        }),
        Opt::value("--match", |o, v| {
            o.matches.push(v);
            Ok(())
        }),
        Opt::flag("--no-match", |o| o.matches.clear()),
        Opt::value("--exclude", |o, v| {
            o.excludes.push(v);
            Ok(())
        }),
        Opt::flag("--no-exclude", |o| o.excludes.clear()),
    ],
    refused: "--contains --all --first-parent --candidates --broken --debug",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn describe(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    let revs = match SPEC.parse(args, &mut o, io) {
        Ok(revs) => revs,
        Err(code) => return code,
    };
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match run(&repo, &o, &revs, io) {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

fn run(repo: &Repo, o: &Opts, revs: &[String], io: &Io) -> Result<i32, String> {
    if o.dirty.is_some() && !revs.is_empty() {
        return Err("fatal: option '--dirty' and commit-ishes cannot be used together".into());
    }
    // The tags, by the commit they name.
    let mut names: HashMap<Oid, Name> = HashMap::new();
    for (r, id) in repo.refs_under("refs/tags/") {
        let tag = r["refs/tags/".len()..].to_string();
        if !o.matches.is_empty()
            && !o
                .matches
                .iter()
                .any(|p| sh_utility::pattern::pattern_matches(p, &tag))
        {
            continue;
        }
        if o.excludes
            .iter()
            .any(|p| sh_utility::pattern::pattern_matches(p, &tag))
        {
            continue;
        }
        let Ok((kind, data)) = repo.read(&id) else {
            continue;
        };
        let annotated = kind == Kind::Tag;
        let Ok(commit) = repo.peel_commit(&id) else {
            continue;
        };
        let date = if annotated {
            String::from_utf8_lossy(&data)
                .lines()
                .find_map(|l| l.strip_prefix("tagger ").map(|t| ident_time(t).0))
                .unwrap_or(0)
        } else {
            0
        };
        let new = Name {
            tag,
            annotated,
            date,
        };
        let replace = match names.get(&commit) {
            None => true,
            Some(e) if !e.annotated && annotated => true,
            Some(e) => e.annotated && annotated && date > e.date,
        };
        if replace {
            names.insert(commit, new);
        }
    }
    if names.is_empty() && !o.always {
        return Err("fatal: No names found, cannot describe anything.".into());
    }
    let revs: Vec<String> = if revs.is_empty() {
        vec!["HEAD".into()]
    } else {
        revs.to_vec()
    };
    let abbrev_len = |n: usize| n.clamp(4, 40);
    let mut out = String::new();
    for rev in &revs {
        let id = resolve(repo, rev)
            .and_then(|id| repo.peel_commit(&id).ok())
            .ok_or_else(|| format!("fatal: Not a valid object name {rev}"))?;
        let usable = |n: &Name| n.annotated || o.tags;
        let short = |n: usize| hex(&id)[..abbrev_len(n)].to_string();
        let abbrev = o.abbrev.unwrap_or(7);
        if let Some(n) = names.get(&id).filter(|n| usable(n)) {
            if o.long && abbrev > 0 {
                out.push_str(&format!("{}-0-g{}", n.tag, short(abbrev)));
            } else {
                out.push_str(&n.tag);
            }
        } else if o.exact {
            return Err(format!("fatal: no tag exactly matches '{}'", hex(&id)));
        } else {
            // The walk from the commit, newest first: the tag with the fewest commits
            // since it, the one met first among equals.
            let walk = crate::plumbing::walk::walk(repo, &[id])?;
            let mine: HashSet<Oid> = walk.iter().map(|(c, _)| *c).collect();
            let mut best: Option<(usize, &Name)> = None;
            let mut unannotated = false;
            for (c, _) in &walk {
                let Some(n) = names.get(c) else {
                    continue;
                };
                if !usable(n) {
                    unannotated = true;
                    continue;
                }
                let theirs: HashSet<Oid> = crate::plumbing::walk::walk(repo, &[*c])?
                    .into_iter()
                    .map(|(x, _)| x)
                    .collect();
                let depth = mine.difference(&theirs).count();
                if best.is_none_or(|(d, _)| depth < d) {
                    best = Some((depth, n));
                }
            }
            match best {
                Some((depth, n)) => {
                    if abbrev == 0 {
                        out.push_str(&n.tag);
                    } else {
                        out.push_str(&format!("{}-{depth}-g{}", n.tag, short(abbrev)));
                    }
                }
                None if o.always => out.push_str(&short(if abbrev == 0 { 7 } else { abbrev })),
                None if unannotated => {
                    return Err(format!(
                        "fatal: No annotated tags can describe '{}'.\nHowever, there were unannotated tags: try --tags.",
                        hex(&id)
                    ));
                }
                None => {
                    return Err(format!(
                        "fatal: No tags can describe '{}'.\nTry --always, or create some tags.",
                        hex(&id)
                    ));
                }
            }
        }
        if let Some(mark) = &o.dirty
            && dirty(repo)?
        {
            out.push_str(mark);
        }
        out.push('\n');
        io.print(&out);
        out.clear();
    }
    Ok(0)
}

/// Whether the index or the work tree's tracked files differ from HEAD.
fn dirty(repo: &Repo) -> Result<bool, String> {
    let Some(work) = repo.work.clone() else {
        return Ok(false);
    };
    let head = head_files(repo, repo.head().1)?;
    let index = load_all(repo)?;
    if index.iter().any(|e| e.stage != 0) {
        return Ok(true);
    }
    if index.len() != head.len()
        || index
            .iter()
            .any(|e| head.get(&e.path) != Some(&(e.mode, e.oid)))
    {
        return Ok(true);
    }
    let mut tree = sh_utility::sys::TreeStat::new(&work);
    Ok(index
        .iter()
        .any(|e| worktree_change(&mut tree, e).is_some()))
}
