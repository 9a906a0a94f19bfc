//! `git branch`: list (`-a`/`-r`, `--list` with patterns), `--show-current`, create,
//! `-d`/`-D` (of remote-tracking branches with `-r`), its options read from a table as git's
//! parse-options reads them.

use std::path::Path;

use sh_utility::io::Io;

use super::args::{Help, Opt, Spec, Unknown};
use crate::plumbing::refs::detached_from;
use crate::plumbing::repo::Repo;
use crate::plumbing::text::abbrev;

/// Which branches `git branch` acts on (`-a` and `-r`: the last given wins, as in git).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    #[default]
    Local,
    Remote,
    All,
}

/// What `git branch` was asked for.
#[derive(Default)]
struct Opts {
    kind: Kind,
    list: bool,
    show_current: bool,
    /// git's OPT_BITs: 1 for `-d`, 2 for `-D` (which forces); `--no-delete` clears 1.
    delete: u8,
    quiet: bool,
}

const USAGE: &str = "git branch [<options>] [-r | -a] [--merged] [--no-merged]
   or: git branch [<options>] [-f] [--recurse-submodules] <branch-name> [<start-point>]
   or: git branch [<options>] [-l] [<pattern>...]
   or: git branch [<options>] [-r] (-d | -D) <branch-name>...
   or: git branch [<options>] (-m | -M) [<old-branch>] <new-branch>
   or: git branch [<options>] (-c | -C) [<old-branch>] <new-branch>
   or: git branch [<options>] [-r | -a] [--points-at]
   or: git branch [<options>] [-r | -a] [--format]";

/// The options' help git prints under the usage, as `builtin/branch.c` declares them.
const HELP: &[Help] = &[
    Help::group("Generic options"),
    Help(
        "-v, --[no-]verbose",
        "show hash and subject, give twice for upstream branch",
    ),
    Help("-q, --[no-]quiet", "suppress informational messages"),
    Help(
        "-t, --[no-]track[=(direct|inherit)]",
        "set branch tracking configuration",
    ),
    Help(
        "-u, --[no-]set-upstream-to <upstream>",
        "change the upstream info",
    ),
    Help("--[no-]unset-upstream", "unset the upstream info"),
    Help("--[no-]color[=<when>]", "use colored output"),
    Help("-r, --remotes", "act on remote-tracking branches"),
    Help(
        "--contains <commit>",
        "print only branches that contain the commit",
    ),
    Help(
        "--no-contains <commit>",
        "print only branches that don't contain the commit",
    ),
    Help(
        "--[no-]abbrev[=<n>]",
        "use <n> digits to display object names",
    ),
    Help::group("Specific git-branch actions:"),
    Help("-a, --all", "list both remote-tracking and local branches"),
    Help("-d, --[no-]delete", "delete fully merged branch"),
    Help("-D", "delete branch (even if not merged)"),
    Help("-m, --[no-]move", "move/rename a branch and its reflog"),
    Help("-M", "move/rename a branch, even if target exists"),
    Help(
        "--[no-]omit-empty",
        "do not output a newline after empty formatted refs",
    ),
    Help("-c, --[no-]copy", "copy a branch and its reflog"),
    Help("-C", "copy a branch, even if target exists"),
    Help("-l, --[no-]list", "list branch names"),
    Help("--[no-]show-current", "show current branch name"),
    Help("--[no-]create-reflog", "create the branch's reflog"),
    Help(
        "--[no-]edit-description",
        "edit the description for the branch",
    ),
    Help("-f, --[no-]force", "force creation, move/rename, deletion"),
    Help("--merged <commit>", "print only branches that are merged"),
    Help(
        "--no-merged <commit>",
        "print only branches that are not merged",
    ),
    Help("--[no-]column[=<style>]", "list branches in columns"),
    Help("--[no-]sort <key>", "field name to sort on"),
    Help(
        "--[no-]points-at <object>",
        "print only branches of the object",
    ),
    Help(
        "-i, --[no-]ignore-case",
        "sorting and filtering are case insensitive",
    ),
    Help("--[no-]recurse-submodules", "recurse through submodules"),
    Help("--[no-]format <format>", "format to use for the output"),
];

const SPEC: Spec<Opts> = Spec {
    name: "branch",
    usage: USAGE,
    options: &[
        Opt::flag("-a/--all", |o| o.kind = Kind::All),
        Opt::flag("-r/--remotes", |o| o.kind = Kind::Remote),
        Opt::bool("-l/--list", |o, on| o.list = on),
        Opt::bool("--show-current", |o, on| o.show_current = on),
        Opt::bool("-d/--delete", |o, on| {
            o.delete = if on { o.delete | 1 } else { o.delete & !1 }
        }),
        Opt::flag("-D", |o| o.delete |= 2),
        Opt::bool("-q/--quiet", |o, on| o.quiet = on),
        // There is no terminal to colour for.
        Opt::ignored("--no-color"),
    ],
    refused: "-v --verbose --no-verbose -t --track --no-track -u --set-upstream-to --no-set-upstream-to --unset-upstream --no-unset-upstream --color --contains --no-contains --abbrev --no-abbrev -m --move --no-move -M -c --copy --no-copy -C --omit-empty --no-omit-empty --create-reflog --no-create-reflog --edit-description --no-edit-description -f --force --no-force --merged --no-merged --column --no-column --sort --no-sort --points-at --no-points-at -i --ignore-case --no-ignore-case --recurse-submodules --no-recurse-submodules --format --no-format",
    unknown: Unknown::Usage,
    help: &[HELP],
};

pub(crate) fn branch(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let mut o = Opts::default();
    let names = match SPEC.parse(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    // As git decides: listing when nothing else is asked, and one mode at a time.
    let list = o.list || (o.delete == 0 && !o.show_current && names.is_empty());
    if u8::from(o.delete != 0) + u8::from(o.show_current) + u8::from(list) > 1 {
        return Ok(SPEC.usage_error(io, ""));
    }
    if o.delete != 0 {
        if names.is_empty() {
            return Err("fatal: branch name required".into());
        }
        return match o.kind {
            Kind::All => Err("fatal: cannot use -a with -d".into()),
            Kind::Remote => Ok(delete_remote_branches(repo, &names, o.quiet, io)),
            Kind::Local => Ok(delete_branches(repo, &names, o.delete > 1, o.quiet, io)),
        };
    }
    if o.show_current {
        if let Some(b) = &repo.head().0 {
            io.print(&format!("{}\n", b.trim_start_matches("refs/heads/")));
        }
        return Ok(0);
    }
    if list {
        io.print(&listing(repo, o.kind, &names));
        return Ok(0);
    }
    if o.kind != Kind::Local {
        return Err("fatal: the -a, and -r, options to 'git branch' do not take a branch name.\nDid you mean to use: -a|-r --list <pattern>?".into());
    }
    match names.as_slice() {
        [name] => crate::plumbing::refs::create_branch(repo, name, None).map(|_| 0),
        [name, start] => crate::plumbing::refs::create_branch(repo, name, Some(start)).map(|_| 0),
        _ => Ok(SPEC.usage_error(io, "")),
    }
}

/// `git branch --list`: the branches of `kind` whose short names match one of `patterns`
/// (all without any), the current one marked, a detached HEAD first.
fn listing(repo: &Repo, kind: Kind, patterns: &[String]) -> String {
    let wanted = |name: &str| {
        patterns.is_empty()
            || patterns
                .iter()
                .any(|p| sh_utility::pattern::pattern_matches(p, name))
    };
    let (head_ref, head_id) = repo.head();
    let mut out = String::new();
    if kind != Kind::Remote {
        if head_ref.is_none()
            && let Some(id) = head_id
            && wanted("HEAD")
        {
            match detached_from(repo, &id) {
                Some((true, name)) => out.push_str(&format!("* (HEAD detached at {name})\n")),
                Some((false, name)) => out.push_str(&format!("* (HEAD detached from {name})\n")),
                None => out.push_str("* (no branch)\n"),
            }
        }
        for (name, _) in repo.refs_under("refs/heads/") {
            let short = name.trim_start_matches("refs/heads/");
            if !wanted(short) {
                continue;
            }
            let mark = if head_ref.as_deref() == Some(name.as_str()) {
                "* "
            } else {
                "  "
            };
            out.push_str(&format!("{mark}{short}\n"));
        }
    }
    if kind != Kind::Local {
        let mut names: Vec<String> = repo
            .refs_under("refs/remotes/")
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| wanted(n.trim_start_matches("refs/remotes/")))
            .collect();
        names.sort();
        for n in names {
            let shown = if kind == Kind::All {
                n.trim_start_matches("refs/")
            } else {
                n.trim_start_matches("refs/remotes/")
            };
            // A symbolic remote HEAD is listed with its target.
            match repo.read_ref(&n) {
                Some(crate::plumbing::repo::RefValue::Symbolic(t)) => out.push_str(&format!(
                    "  {shown} -> {}\n",
                    t.trim_start_matches("refs/remotes/")
                )),
                _ => out.push_str(&format!("  {shown}\n")),
            }
        }
    }
    out
}

/// `git branch -d NAME...`: each branch that exists, is not checked out and (unless
/// `force`) is merged into HEAD.
fn delete_branches(repo: &Repo, names: &[String], force: bool, quiet: bool, io: &Io) -> i32 {
    let mut code = 0;
    for n in names {
        let r = format!("refs/heads/{n}");
        let Some(id) = repo.resolve_ref(&r) else {
            io.eprint(&format!("error: branch '{n}' not found\n"));
            code = 1;
            continue;
        };
        if repo.head().0.as_deref() == Some(r.as_str()) {
            io.eprint(&format!(
                "error: cannot delete branch '{n}' used by worktree at '{}'\n",
                repo.work.as_deref().unwrap_or(Path::new("")).display()
            ));
            code = 1;
            continue;
        }
        if !force && let Some(h) = repo.head().1 {
            let merged = crate::plumbing::walk::reachable(repo, h).is_ok_and(|s| s.contains(&id));
            if !merged {
                io.eprint(&format!(
                    "error: the branch '{n}' is not fully merged\nhint: If you are sure you want to delete it, run 'git branch -D {n}'\nhint: Disable this message with \"git config advice.forceDeleteBranch false\"\n"
                ));
                code = 1;
                continue;
            }
        }
        crate::plumbing::refs::remove_ref(repo, &r);
        if !quiet {
            io.print(&format!("Deleted branch {n} (was {}).\n", abbrev(&id)));
        }
    }
    code
}

/// `git branch -r -d NAME...`: each remote-tracking branch that exists (git never asks
/// whether one is merged).
fn delete_remote_branches(repo: &Repo, names: &[String], quiet: bool, io: &Io) -> i32 {
    let mut code = 0;
    for n in names {
        let r = format!("refs/remotes/{n}");
        let Some(id) = repo.resolve_ref(&r) else {
            io.eprint(&format!("error: remote-tracking branch '{n}' not found\n"));
            code = 1;
            continue;
        };
        crate::plumbing::refs::remove_ref(repo, &r);
        if !quiet {
            io.print(&format!(
                "Deleted remote-tracking branch {n} (was {}).\n",
                abbrev(&id)
            ));
        }
    }
    code
}
