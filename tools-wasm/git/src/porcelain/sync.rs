//! The commands that talk to a remote after a clone: `ls-remote`, `fetch` (the remote's
//! branches into `refs/remotes/`, tags that come along, `FETCH_HEAD`, git's ref update
//! table) and `pull` (fetch, then a fast-forward or a merge of the upstream), all over smart
//! HTTP through the session's network policy as `clone` is.

use std::collections::{BTreeMap, BTreeSet};

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Refusal, Spec, Unknown};
use super::merge::{MergeOpts, merge_commit};
use crate::plumbing::checkout::{move_tree, work_of};
use crate::plumbing::object::{Oid, hex};
use crate::plumbing::pack;
use crate::plumbing::remote::{Ref, Remote};
use crate::plumbing::repo::Repo;
use crate::plumbing::text::abbrev;
use crate::plumbing::walk::merge_base;
use crate::plumbing::write::write_file;

/// A URL as git shows it in messages: without credentials.
pub(crate) fn display_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if path.is_empty() {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => url.to_string(),
    }
}

/// The URL as FETCH_HEAD and merge messages name it: also without trailing slashes and
/// `.git`.
fn short_url(url: &str) -> String {
    let u = display_url(url);
    let u = u.trim_end_matches('/');
    u.strip_suffix(".git").unwrap_or(u).to_string()
}

/// A remote's URL: a configured remote's `url`, else the argument itself when it is one.
fn remote_url(repo: Option<&Repo>, name: &str) -> Option<String> {
    if let Some(u) = repo.and_then(|r| r.config(&format!("remote.{name}.url"))) {
        return Some(u);
    }
    name.contains("://").then(|| name.to_string())
}

#[derive(Default)]
struct LsRemote {
    heads: bool,
    tags: bool,
    refs_only: bool,
    quiet: bool,
    exit_code: bool,
    symref: bool,
}

/// ls-remote's options, as git's `builtin/ls-remote.c` declares them.
const LS_REMOTE: Spec<LsRemote> = Spec {
    name: "ls-remote",
    usage: "git ls-remote [--branches] [--tags] [--refs] [--upload-pack=<exec>]\n              [-q | --quiet] [--exit-code] [--get-url] [--sort=<key>]\n              [--symref] [<repository> [<patterns>...]]",
    options: &[
        Opt::flag("--heads/--branches/-h/-b", |o| o.heads = true),
        Opt::flag("--tags/-t", |o| o.tags = true),
        Opt::flag("--refs", |o| o.refs_only = true),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("--exit-code", |o| o.exit_code = true),
        Opt::flag("--symref", |o| o.symref = true),
    ],
    refused: "--get-url --sort --upload-pack -o --server-option",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git ls-remote [--heads|--branches] [--tags] [--refs] [-q] [REMOTE [PATTERN...]]`.
pub fn ls_remote(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = LsRemote::default();
    let operands = match LS_REMOTE.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let LsRemote {
        heads,
        tags,
        refs_only,
        quiet,
        exit_code,
        symref,
    } = o;
    let repo = Repo::discover(std::path::Path::new(&sh.cwd()));
    let (name, patterns) = match operands.split_first() {
        Some((n, p)) => (n.clone(), p.to_vec()),
        None => ("origin".to_string(), Vec::new()),
    };
    let Some(url) = remote_url(repo.as_ref(), &name) else {
        if repo.is_none() && operands.is_empty() {
            io.eprint("fatal: No remote configured to list refs from.\n");
        } else {
            io.eprint(&format!(
                "fatal: '{name}' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n"
            ));
        }
        return 128;
    };
    let r = (|| -> Result<i32, String> {
        let remote = Remote::connect(&url)?;
        let listed = remote.ls_refs(&[])?;
        if operands.is_empty() && !quiet {
            io.eprint(&format!("From {}\n", display_url(&url)));
        }
        let mut out = String::new();
        let mut any = false;
        for r in &listed {
            let Some(id) = r.oid else { continue };
            let is_head = r.name.starts_with("refs/heads/");
            let is_tag = r.name.starts_with("refs/tags/");
            if (heads || tags) && !((heads && is_head) || (tags && is_tag)) {
                continue;
            }
            if (refs_only || heads || tags) && r.name == "HEAD" {
                continue;
            }
            if !patterns.is_empty()
                && !patterns.iter().any(|p| {
                    r.name == *p
                        || r.name.ends_with(&format!("/{p}"))
                        || sh_utility::pattern::pattern_matches(&format!("*/{p}"), &r.name)
                })
            {
                continue;
            }
            any = true;
            if symref && let Some(t) = &r.symref {
                out.push_str(&format!("ref: {t}\t{}\n", r.name));
            }
            out.push_str(&format!("{}\t{}\n", hex(&id), r.name));
            if !refs_only && let Some(p) = r.peeled {
                out.push_str(&format!("{}\t{}^{{}}\n", hex(&p), r.name));
            }
        }
        if !quiet {
            io.print(&out);
        }
        Ok(if exit_code && !any { 2 } else { 0 })
    })();
    match r {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// How a fetch went: the remote-tracking refs it set (remote branch -> new id), and the
/// remote's advertised branches.
pub(crate) struct FetchResult {
    pub url: String,
    pub branches: BTreeMap<String, Oid>,
}

/// `remote.<name>.fetch`'s mapping of a remote branch to its remote-tracking ref.
fn tracking_ref(specs: &[String], branch: &str) -> Option<String> {
    let full = format!("refs/heads/{branch}");
    for s in specs {
        let s = s.trim_start_matches('+');
        let (src, dst) = s.split_once(':')?;
        if let (Some(sp), Some(dp)) = (src.strip_suffix('*'), dst.strip_suffix('*')) {
            if let Some(rest) = full.strip_prefix(sp) {
                return Some(format!("{dp}{rest}"));
            }
        } else if src == full {
            return Some(dst.to_string());
        }
    }
    None
}

/// Fetches from remote `name` what the repository lacks, updates remote-tracking refs and
/// followed tags, writes FETCH_HEAD and prints git's table of updates (unless `quiet`).
pub(crate) fn fetch_remote(
    repo: &Repo,
    name: &str,
    prune: bool,
    all_tags: bool,
    quiet: bool,
    io: &Io,
) -> Result<FetchResult, String> {
    let url = remote_url(Some(repo), name).ok_or_else(|| {
        format!(
            "fatal: '{name}' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists."
        )
    })?;
    let specs: Vec<String> = crate::plumbing::repo::config_entries(
        &std::fs::read_to_string(repo.git_dir.join("config")).unwrap_or_default(),
    )
    .into_iter()
    .filter(|(k, _)| k.eq_ignore_ascii_case(&format!("remote.{name}.fetch")))
    .map(|(_, v)| v)
    .collect();
    let remote = Remote::connect(&url)?;
    let listed: Vec<Ref> = remote.ls_refs(&["refs/heads/", "refs/tags/"])?;
    let have = |id: &Oid| repo.read(id).is_ok();

    // Remote branches and where they go.
    let mut updates: Vec<(String, String, Oid)> = Vec::new();
    let mut branches = BTreeMap::new();
    for r in &listed {
        let (Some(id), Some(b)) = (r.oid, r.name.strip_prefix("refs/heads/")) else {
            continue;
        };
        branches.insert(b.to_string(), id);
        if let Some(dst) = tracking_ref(&specs, b) {
            updates.push((b.to_string(), dst, id));
        }
    }
    let mut wants: Vec<Oid> = updates.iter().map(|u| u.2).filter(|id| !have(id)).collect();
    let tag_refs: Vec<&Ref> = listed
        .iter()
        .filter(|r| r.name.starts_with("refs/tags/") && r.oid.is_some())
        .filter(|r| repo.resolve_ref(&r.name).is_none())
        .collect();
    if all_tags {
        wants.extend(tag_refs.iter().filter_map(|r| r.oid).filter(|id| !have(id)));
    }
    wants.sort_unstable();
    wants.dedup();
    let mut haves: Vec<Oid> = repo
        .refs_under("refs/")
        .into_iter()
        .map(|(_, id)| id)
        .chain(repo.head().1)
        .collect();
    haves.sort_unstable();
    haves.dedup();
    if !wants.is_empty() {
        let fetched = remote.fetch(&wants, &haves, None, &mut |_| {}, true)?;
        if !fetched.pack.is_empty() {
            let ix = pack::index(&fetched.pack)?;
            let n = hex(&ix.checksum);
            write_file(
                &repo.git_dir.join(format!("objects/pack/pack-{n}.idx")),
                &pack::write_idx(&ix),
            )?;
            write_file(
                &repo.git_dir.join(format!("objects/pack/pack-{n}.pack")),
                &fetched.pack,
            )?;
        }
    }
    // A fresh view of the objects, with the new pack.
    let repo = &Repo::at(repo.git_dir.clone(), repo.work.clone());
    let have = |id: &Oid| repo.read(id).is_ok();

    // FETCH_HEAD: the current branch's upstream first, to be merged.
    let merge_branch = repo.head().0.and_then(|h| {
        let b = h.strip_prefix("refs/heads/")?.to_string();
        (repo.config(&format!("branch.{b}.remote")).as_deref() == Some(name))
            .then(|| repo.config(&format!("branch.{b}.merge")))
            .flatten()
    });
    // git lists (and writes to FETCH_HEAD) the branch to be merged first.
    updates.sort_by_key(|(b, _, _)| merge_branch.as_deref() != Some(&format!("refs/heads/{b}")));
    let short = short_url(&url);
    let mut lines: Vec<(String, String, String)> = Vec::new();
    for (b, dst, id) in &updates {
        let old = repo.resolve_ref(dst);
        let local = dst.strip_prefix("refs/remotes/").unwrap_or(dst).to_string();
        match old {
            Some(o) if o == *id => continue,
            Some(o) => {
                let ff = crate::plumbing::walk::reachable(repo, *id).is_ok_and(|s| s.contains(&o));
                if ff {
                    lines.push((
                        format!("   {}..{}  ", abbrev(&o), abbrev(id)),
                        b.clone(),
                        local,
                    ));
                } else {
                    lines.push((
                        format!(" + {}...{} ", abbrev(&o), abbrev(id)),
                        b.clone(),
                        format!("{local}  (forced update)"),
                    ));
                }
            }
            None => lines.push((" * [new branch]      ".into(), b.clone(), local)),
        }
        write_file(&repo.git_dir.join(dst), format!("{}\n", hex(id)).as_bytes())?;
    }
    let mut tags_fetched: Vec<(String, Oid)> = Vec::new();
    // Tags that point at what we now have come along (git's auto-following).
    for t in &tag_refs {
        let Some(id) = t.oid else { continue };
        let target = t.peeled.unwrap_or(id);
        if have(&id) && (all_tags || have(&target)) {
            let name = t.name.trim_start_matches("refs/tags/").to_string();
            write_file(
                &repo.git_dir.join(&t.name),
                format!("{}\n", hex(&id)).as_bytes(),
            )?;
            tags_fetched.push((name.clone(), id));
            lines.push((" * [new tag]         ".into(), name.clone(), name));
        }
    }
    if prune {
        let prefix = format!("refs/remotes/{name}/");
        for (r, _) in repo.refs_under(&prefix) {
            let b = &r[prefix.len()..];
            if b != "HEAD" && !branches.contains_key(b) {
                crate::plumbing::refs::remove_ref(repo, &r);
                lines.push((
                    " - [deleted]         ".into(),
                    "(none)".into(),
                    r.trim_start_matches("refs/remotes/").to_string(),
                ));
            }
        }
    }
    let mut fetch_head = String::new();
    let mut rest = String::new();
    for (b, _, id) in &updates {
        let merge = merge_branch.as_deref() == Some(&format!("refs/heads/{b}"));
        let line = format!(
            "{}\t{}\tbranch '{b}' of {short}\n",
            hex(id),
            if merge { "" } else { "not-for-merge" }
        );
        if merge {
            fetch_head.push_str(&line);
        } else {
            rest.push_str(&line);
        }
    }
    fetch_head.push_str(&rest);
    for (t, id) in &tags_fetched {
        fetch_head.push_str(&format!(
            "{}\tnot-for-merge\ttag '{t}' of {short}\n",
            hex(id)
        ));
    }
    write_file(&repo.git_dir.join("FETCH_HEAD"), fetch_head.as_bytes())?;
    if !quiet && !lines.is_empty() {
        // git's ref column is at least 10 wide, or as wide as the longest remote name.
        let width = updates
            .iter()
            .map(|u| u.0.len())
            .chain(lines.iter().map(|l| l.1.len()))
            .max()
            .unwrap_or(0)
            .max(10);
        let mut out = format!("From {short}\n");
        for (summary, from, to) in &lines {
            out.push_str(&format!("{summary}{from:<width$} -> {to}\n"));
        }
        io.eprint(&out);
    }
    Ok(FetchResult { url, branches })
}

#[derive(Default)]
struct Fetch {
    quiet: bool,
    prune: bool,
    tags: bool,
    all: bool,
}

/// fetch's options, as git's `builtin/fetch.c` declares them.
const FETCH: Spec<Fetch> = Spec {
    name: "fetch",
    usage: "git fetch [<options>] [<repository> [<refspec>...]]\n   or: git fetch [<options>] <group>\n   or: git fetch --multiple [<options>] [(<repository> | <group>)...]\n   or: git fetch --all [<options>]",
    options: &[
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("-p/--prune", |o| o.prune = true),
        Opt::flag("-t/--tags", |o| o.tags = true),
        Opt::flag("--all", |o| o.all = true),
        Opt::ignored("-v/--verbose"),
        Opt::ignored("--progress"),
        Opt::ignored("--no-progress"),
        Opt::ignored("--no-tags"),
    ],
    refused: "--depth --deepen --shallow-since --shallow-exclude --unshallow --dry-run -n --force -f --multiple --recurse-submodules --filter -j --jobs --prefetch --refetch -u --update-head-ok --set-upstream --append -a --atomic",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git fetch [-q] [--prune] [--tags] [--all] [REMOTE]`.
pub fn fetch(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Fetch::default();
    let operands = match FETCH.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let Fetch {
        quiet,
        prune,
        tags,
        all,
    } = o;
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if operands.len() > 1 {
        return super::args::not_here(io, "fetch", "<refspec>");
    }
    let names: Vec<String> = if all {
        remote_names(&repo)
    } else {
        vec![
            operands
                .first()
                .cloned()
                .unwrap_or_else(|| default_remote(&repo)),
        ]
    };
    for n in names {
        if let Err(e) = fetch_remote(&repo, &n, prune, tags, quiet, io) {
            return super::args::fail(io, &e);
        }
    }
    0
}

fn remote_names(repo: &Repo) -> Vec<String> {
    let text = std::fs::read_to_string(repo.git_dir.join("config")).unwrap_or_default();
    let names: BTreeSet<String> = crate::plumbing::repo::config_entries(&text)
        .into_iter()
        .filter_map(|(k, _)| {
            let rest = k.strip_prefix("remote.")?;
            let (n, key) = rest.rsplit_once('.')?;
            (key == "url").then(|| n.to_string())
        })
        .collect();
    names.into_iter().collect()
}

/// The current branch's remote, else origin.
fn default_remote(repo: &Repo) -> String {
    repo.head()
        .0
        .and_then(|h| {
            let b = h.strip_prefix("refs/heads/")?.to_string();
            repo.config(&format!("branch.{b}.remote"))
        })
        .unwrap_or_else(|| "origin".into())
}

const NO_TRACKING: &str = "There is no tracking information for the current branch.
Please specify which branch you want to merge with.
See git-pull(1) for details.

    git pull <remote> <branch>

If you wish to set tracking information for this branch you can do so with:

";

const DIVERGENT: &str =
    "hint: You have divergent branches and need to specify how to reconcile them.
hint: You can do so by running one of the following commands sometime before
hint: your next pull:
hint:
hint:   git config pull.rebase false  # merge
hint:   git config pull.rebase true   # rebase
hint:   git config pull.ff only       # fast-forward only
hint:
hint: You can replace \"git config\" with \"git config --global\" to set a default
hint: preference for all repositories. You can also pass --rebase, --no-rebase,
hint: or --ff-only on the command line to override the configured default per
hint: invocation.
fatal: Need to specify how to reconcile divergent branches.";

#[derive(Default)]
struct Pull {
    merge: MergeOpts,
    /// How divergent branches are reconciled, when the command line says.
    reconcile: Option<&'static str>,
}

/// pull's options, as git's `builtin/pull.c` declares them.
const PULL: Spec<Pull> = Spec {
    name: "pull",
    usage: "git pull [<options>] [<repository> [<refspec>...]]",
    options: &[
        Opt::flag("-q/--quiet", |o| o.merge.quiet = true),
        Opt::flag("--ff-only", |o| {
            o.merge.ff_only = true;
            o.reconcile = Some("ff-only");
        }),
        Opt::flag("--no-rebase", |o| o.reconcile = Some("merge")),
        Opt::flag("--ff", |o| o.reconcile = Some("merge")),
        Opt::flag("--no-ff", |o| {
            o.merge.no_ff = true;
            o.reconcile = Some("merge");
        }),
        Opt::ignored("-v/--verbose"),
        Opt::ignored("--progress"),
        Opt::ignored("--no-progress"),
        Opt::ignored("--no-edit"),
        Opt::ignored("--stat"),
        Opt::optional("-r/--rebase", |o, v| match v.as_deref() {
            Some("false") => {
                o.reconcile = Some("merge");
                Ok(())
            }
            _ => Err(Refusal::NotHere("--rebase".into())),
        }),
    ],
    refused: "--autostash --squash --no-commit -s --strategy -X --strategy-option --depth --unshallow --all --tags -t --prune -p --dry-run --recurse-submodules --edit -e",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git pull [-q] [--ff-only | --no-rebase | --ff | --no-ff] [REMOTE [BRANCH]]`.
pub fn pull(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Pull::default();
    let operands = match PULL.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let Pull {
        merge: o,
        reconcile,
    } = o;
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = do_pull(sh, &repo, &operands, &o, reconcile, io);
    match r {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            if e.starts_with("error:") || e.starts_with("There is no tracking") {
                1
            } else {
                128
            }
        }
    }
}

fn do_pull(
    sh: &dyn Ctx,
    repo: &Repo,
    operands: &[String],
    o: &MergeOpts,
    reconcile: Option<&str>,
    io: &Io,
) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (head_ref, head) = repo.head();
    let branch = head_ref
        .as_deref()
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .map(str::to_string);
    let (remote, merge_branch) = match operands {
        [] => {
            let b = branch.clone().ok_or_else(|| {
                "You are not currently on a branch.\nPlease specify which branch you want to merge with.\nSee git-pull(1) for details.\n\n    git pull <remote> <branch>\n".to_string()
            })?;
            let remote = repo.config(&format!("branch.{b}.remote"));
            let merge = repo.config(&format!("branch.{b}.merge"));
            match (remote, merge) {
                (Some(r), Some(m)) => (r, m.trim_start_matches("refs/heads/").to_string()),
                _ => {
                    return Err(format!(
                        "{NO_TRACKING}    git branch --set-upstream-to=origin/<branch> {b}\n"
                    ));
                }
            }
        }
        [r] => {
            let b = branch.clone().unwrap_or_default();
            let m = repo
                .config(&format!("branch.{b}.merge"))
                .filter(|_| repo.config(&format!("branch.{b}.remote")).as_deref() == Some(r))
                .map(|m| m.trim_start_matches("refs/heads/").to_string())
                .ok_or_else(|| {
                    format!(
                        "You asked to pull from the remote '{r}', but did not specify\na branch. Because this is not the default configured remote\nfor your current branch, you must specify a branch on the command line."
                    )
                })?;
            (r.clone(), m)
        }
        [r, b] => (r.clone(), b.clone()),
        _ => return Err("fatal: 'git pull' of several refspecs is not supported in burrow".into()),
    };
    let fetched = fetch_remote(repo, &remote, false, false, o.quiet, io)?;
    let repo = &Repo::at(repo.git_dir.clone(), repo.work.clone());
    let theirs = *fetched
        .branches
        .get(&merge_branch)
        .ok_or_else(|| format!("fatal: couldn't find remote ref {merge_branch}"))?;
    let name = format!("branch '{merge_branch}' of {}", short_url(&fetched.url));
    let Some(ours) = head else {
        // An unborn branch (an empty clone): the fetched branch is checked out.
        move_tree(repo, &work, None, theirs, "merge")?;
        let r = head_ref.unwrap_or_else(|| "HEAD".into());
        write_file(
            &repo.git_dir.join(r),
            format!("{}\n", hex(&theirs)).as_bytes(),
        )?;
        return Ok(0);
    };
    let base = merge_base(repo, ours, theirs)?;
    let ff = base == Some(ours);
    if base != Some(theirs) && !ff {
        let policy = reconcile.map(str::to_string).or_else(|| {
            match (
                repo.config("pull.ff").as_deref(),
                repo.config("pull.rebase").as_deref(),
            ) {
                (Some("only"), _) => Some("ff-only".into()),
                (_, Some("false")) => Some("merge".into()),
                (_, Some("true" | "merges" | "interactive")) => Some("rebase".into()),
                (Some("true" | "false"), _) => Some("merge".into()),
                _ => None,
            }
        });
        match policy.as_deref() {
            Some("ff-only") => return Err(super::merge::NOT_FAST_FORWARD.into()),
            Some("rebase") => {
                return Err("fatal: 'git pull --rebase' is not supported in burrow".into());
            }
            Some(_) => {}
            None => return Err(DIVERGENT.into()),
        }
    }
    merge_commit(sh, repo, theirs, &name, &hex(&theirs), o, io)
}
