//! `git branch` (list with `-a`/`-r`, `--show-current`, create, `-d`/`-D`) and
//! `git remote` (`-v`, `get-url`).

use std::path::Path;

use sh_utility::io::Io;

use crate::plumbing::refs::detached_from;
use crate::plumbing::repo::Repo;
use crate::plumbing::text::abbrev;

pub(crate) fn branch(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let mut all = false;
    let mut remotes = false;
    let mut show_current = false;
    let mut delete = None;
    let mut names = Vec::new();
    for a in args {
        match a.as_str() {
            "-a" | "--all" => all = true,
            "-r" | "--remotes" => remotes = true,
            "--show-current" => show_current = true,
            "-l" | "--list" => {}
            "-d" | "--delete" => delete = Some(false),
            "-D" => delete = Some(true),
            s if s.starts_with('-') => {
                return Err(format!(
                    "fatal: 'git branch {s}' is not supported in burrow"
                ));
            }
            _ => names.push(a.clone()),
        }
    }
    if let Some(force) = delete {
        if names.is_empty() {
            return Err("fatal: branch name required".into());
        }
        return Ok(delete_branches(repo, &names, force, io));
    }
    match names.as_slice() {
        [] => {}
        [name] => return crate::plumbing::refs::create_branch(repo, name, None).map(|_| 0),
        [name, start] => {
            return crate::plumbing::refs::create_branch(repo, name, Some(start)).map(|_| 0);
        }
        _ => return Err("fatal: too many arguments for a create operation".into()),
    }
    let (head_ref, head_id) = repo.head();
    if show_current {
        if let Some(b) = &head_ref {
            io.print(&format!("{}\n", b.trim_start_matches("refs/heads/")));
        }
        return Ok(0);
    }
    let mut out = String::new();
    if !remotes {
        if head_ref.is_none()
            && let Some(id) = head_id
        {
            match detached_from(repo, &id) {
                Some((true, name)) => out.push_str(&format!("* (HEAD detached at {name})\n")),
                Some((false, name)) => out.push_str(&format!("* (HEAD detached from {name})\n")),
                None => out.push_str("* (no branch)\n"),
            }
        }
        for (name, _) in repo.refs_under("refs/heads/") {
            let mark = if head_ref.as_deref() == Some(name.as_str()) {
                "* "
            } else {
                "  "
            };
            out.push_str(&format!(
                "{mark}{}\n",
                name.trim_start_matches("refs/heads/")
            ));
        }
    }
    if all || remotes {
        let shown = |n: &str| -> String {
            if all {
                n.trim_start_matches("refs/").to_string()
            } else {
                n.trim_start_matches("refs/remotes/").to_string()
            }
        };
        let mut names: Vec<String> = repo
            .refs_under("refs/remotes/")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        // A symbolic remote HEAD is listed with its target.
        names.sort();
        for n in names {
            match repo.read_ref(&n) {
                Some(crate::plumbing::repo::RefValue::Symbolic(t)) => out.push_str(&format!(
                    "  {} -> {}\n",
                    shown(&n),
                    t.trim_start_matches("refs/remotes/")
                )),
                _ => out.push_str(&format!("  {}\n", shown(&n))),
            }
        }
    }
    io.print(&out);
    Ok(0)
}

pub(crate) fn remotes_of(repo: &Repo) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo.git_dir.join("config")).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(name) = l
            .strip_prefix("[remote \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            let url = repo
                .config(&format!("remote.{name}.url"))
                .unwrap_or_default();
            out.push((name.to_string(), url));
        }
    }
    out
}

pub(crate) fn remote(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let verbose = match args.first().map(String::as_str) {
        None => false,
        Some("-v" | "--verbose") if args.len() == 1 => true,
        Some("get-url") if args.len() == 2 => {
            return match remotes_of(repo).into_iter().find(|(n, _)| *n == args[1]) {
                Some((_, url)) => {
                    io.print(&format!("{url}\n"));
                    Ok(0)
                }
                None => {
                    io.eprint(&format!("error: No such remote '{}'\n", args[1]));
                    Ok(2)
                }
            };
        }
        Some(other) => {
            return Err(format!(
                "fatal: 'git remote {other}' is not supported in burrow (burrow's git lists remotes only)"
            ));
        }
    };
    let mut out = String::new();
    for (name, url) in remotes_of(repo) {
        if verbose {
            out.push_str(&format!("{name}\t{url} (fetch)\n{name}\t{url} (push)\n"));
        } else {
            out.push_str(&format!("{name}\n"));
        }
    }
    io.print(&out);
    Ok(0)
}

/// `git branch -d NAME...`.
pub fn delete_branches(repo: &Repo, names: &[String], force: bool, io: &Io) -> i32 {
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
        io.print(&format!("Deleted branch {n} (was {}).\n", abbrev(&id)));
    }
    code
}
