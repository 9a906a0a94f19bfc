//! Walking history (git's `rev-list`): commits reachable from some starts, newest committer
//! date first, with log's limits (hidden commits, path simplification, `--first-parent`,
//! `--since`); reachability, merge bases and how far a branch is ahead of its upstream.

use std::collections::BinaryHeap;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::commit::{ident_time, read_commit};
use super::object::{Commit, Oid, parse_hex};
use super::pathspec::Pathspec;
use super::repo::{Repo, entry_at};

/// The shallow boundary: commits whose parents are not in the repository.
pub(crate) fn shallow(repo: &Repo) -> HashSet<Oid> {
    std::fs::read_to_string(repo.git_dir.join("shallow"))
        .map(|t| t.lines().filter_map(parse_hex).collect())
        .unwrap_or_default()
}

/// Every commit reachable from `id`.
pub(crate) fn reachable(repo: &Repo, id: Oid) -> Result<HashSet<Oid>, String> {
    Ok(super::walk::walk(repo, &[id])?
        .into_iter()
        .map(|(c, _)| c)
        .collect())
}

/// How far HEAD is ahead of and behind `upstream`: None without one, Some(None) when the
/// upstream's ref is gone.
pub(crate) type Tracking = Option<Option<(usize, usize)>>;

pub(crate) fn tracking_of(
    repo: &Repo,
    upstream: Option<&str>,
    head: Option<Oid>,
) -> Result<Tracking, String> {
    Ok(match (upstream, head) {
        (Some(u), Some(h)) => match repo.resolve_ref(&format!("refs/remotes/{u}")) {
            Some(up) => Some(Some(ahead_behind(repo, h, up)?)),
            None => Some(None),
        },
        _ => None,
    })
}

/// Commits in `a` not reachable from `b`, and the reverse.
pub(crate) fn ahead_behind(repo: &Repo, a: Oid, b: Oid) -> Result<(usize, usize), String> {
    let from_a = reachable(repo, a)?;
    let from_b = reachable(repo, b)?;
    Ok((
        from_a.difference(&from_b).count(),
        from_b.difference(&from_a).count(),
    ))
}

/// The best common ancestor of `a` and `b`: of the commits both reach, one no other
/// common commit descends from (the newest by commit date when there are several).
pub(crate) fn merge_base(repo: &Repo, a: Oid, b: Oid) -> Result<Option<Oid>, String> {
    let from_a = reachable(repo, a)?;
    let from_b = reachable(repo, b)?;
    let common: HashSet<Oid> = from_a.intersection(&from_b).copied().collect();
    let mut best: Option<(i64, Oid)> = None;
    for c in &common {
        // The newest common commit by date: for histories without criss-cross merges
        // that is the one no other common commit descends from.
        let cc = read_commit(repo, c)?;
        let t = super::commit::ident_time(&cc.committer).0;
        if best.is_none_or(|(bt, bid)| t > bt || (t == bt && *c < bid)) {
            best = Some((t, *c));
        }
    }
    Ok(best.map(|(_, id)| id))
}

/// Which commits the walk shows and which of their parents it follows.
#[derive(Default)]
pub(crate) struct Limits {
    /// Commits reachable from an excluded revision (`^A`, the `A` of `A..B`).
    pub(crate) hidden: HashSet<Oid>,
    /// Pathspecs from the top of the work tree; none means the whole tree.
    pub(crate) scopes: Vec<Pathspec>,
    pub(crate) first_parent: bool,
    /// `--since`: older commits are not shown and the walk does not go past them.
    pub(crate) since: Option<i64>,
}

/// Every commit reachable from `starts`, newest first (shallow boundaries end the walk).
pub(crate) fn walk(repo: &Repo, starts: &[Oid]) -> Result<Vec<(Oid, Commit)>, String> {
    walk_limited(repo, starts, &Limits::default(), &mut HashMap::new())
}

/// The walk of `git log`. Commits that path limiting simplifies away are not returned;
/// `simplified` records, for each, the one parent the walk followed through it (none at a
/// root), so that the graph can rewrite parents to the nearest shown ancestor as git does.
pub(crate) fn walk_limited(
    repo: &Repo,
    starts: &[Oid],
    limits: &Limits,
    simplified: &mut HashMap<Oid, Option<Oid>>,
) -> Result<Vec<(Oid, Commit)>, String> {
    let boundary = shallow(repo);
    // Newest committer date first; among equal dates, the one queued first.
    let mut heap: BinaryHeap<(i64, u64, Oid)> = BinaryHeap::new();
    let mut seen: HashSet<Oid> = HashSet::new();
    let mut n = u64::MAX;
    let mut queue = |heap: &mut BinaryHeap<(i64, u64, Oid)>, id: Oid| -> Result<(), String> {
        let c = read_commit(repo, &id)?;
        heap.push((ident_time(&c.committer).0, n, id));
        n -= 1;
        Ok(())
    };
    for s in starts {
        if !limits.hidden.contains(s) && seen.insert(*s) {
            queue(&mut heap, *s)?;
        }
    }
    let mut out = Vec::new();
    let mut frontier: HashMap<Oid, Vec<Scoped>> = HashMap::new();
    while let Some((time, _, id)) = heap.pop() {
        let c = read_commit(repo, &id)?;
        // As git's walk without limiting: a commit older than --since ends its line.
        if limits.since.is_some_and(|s| time < s) {
            continue;
        }
        let mut parents: Vec<Oid> = if boundary.contains(&id) {
            Vec::new()
        } else if limits.first_parent {
            c.parents.iter().take(1).copied().collect()
        } else {
            c.parents.clone()
        };
        let mut show = true;
        if !limits.scopes.is_empty() {
            // A tree's entries are kept from when a child compared with it until the walk
            // reaches the tree's own commit, so each tree is read once.
            let mine = match frontier.remove(&c.tree) {
                Some(m) => m,
                None => scoped(repo, &c.tree, &limits.scopes)?,
            };
            if parents.is_empty() {
                show = mine.iter().any(Scoped::is_some);
            } else {
                let mut same = None;
                for p in &parents {
                    let pc = read_commit(repo, p)?;
                    let theirs = match frontier.entry(pc.tree) {
                        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(scoped(repo, &pc.tree, &limits.scopes)?)
                        }
                    };
                    if *theirs == mine {
                        same = Some(*p);
                        break;
                    }
                }
                if let Some(p) = same {
                    show = false;
                    parents = vec![p];
                }
            }
        }
        if show {
            out.push((id, c));
        } else {
            simplified.insert(id, parents.first().copied());
        }
        for p in parents {
            if !limits.hidden.contains(&p) && seen.insert(p) {
                queue(&mut heap, p)?;
            }
        }
    }
    Ok(out)
}

/// What a tree has at one pathspec, compared between a commit and its parents.
#[derive(PartialEq)]
pub(crate) enum Scoped {
    /// The entry at a path (the whole tree for an empty one).
    Entry(Option<(u32, Oid)>),
    /// The files a glob matches.
    Files(Vec<(Vec<u8>, u32, Oid)>),
}

impl Scoped {
    pub(crate) fn is_some(&self) -> bool {
        match self {
            Scoped::Entry(e) => e.is_some(),
            Scoped::Files(f) => !f.is_empty(),
        }
    }
}

/// What `tree` has at each pathspec.
pub(crate) fn scoped(repo: &Repo, tree: &Oid, scopes: &[Pathspec]) -> Result<Vec<Scoped>, String> {
    let mut files = None;
    let mut out = Vec::new();
    for s in scopes {
        if !s.is_glob() {
            out.push(Scoped::Entry(entry_at(repo, tree, s.path())?));
            continue;
        }
        if files.is_none() {
            files = Some(super::tree::tree_files(repo, *tree)?);
        }
        let matched = files
            .iter()
            .flatten()
            .filter(|(p, _)| s.matches(p))
            .map(|(p, (m, id))| (p.clone(), *m, *id))
            .collect();
        out.push(Scoped::Files(matched));
    }
    Ok(out)
}
