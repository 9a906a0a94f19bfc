//! `git remote`: the remotes listed (`-v` with their URLs, `show` without a name) and
//! `get-url`, its options and subcommands read from tables as git's parse-options reads
//! them; git's other subcommands are refused by name.

use sh_utility::io::Io;

use super::args::{Help, Next, Opt, Spec, Unknown};
use crate::plumbing::repo::Repo;

/// The remotes of the repository's config, in the order they are declared, with their URLs.
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

const USAGE: &str = "git remote [-v | --verbose]
   or: git remote add [-t <branch>] [-m <master>] [-f] [--tags | --no-tags] [--mirror=<fetch|push>] <name> <url>
   or: git remote rename [--[no-]progress] <old> <new>
   or: git remote remove <name>
   or: git remote set-head <name> (-a | --auto | -d | --delete | <branch>)
   or: git remote [-v | --verbose] show [-n] <name>
   or: git remote prune [-n | --dry-run] <name>
   or: git remote [-v | --verbose] update [-p | --prune] [(<group> | <remote>)...]
   or: git remote set-branches [--add] <name> <branch>...
   or: git remote get-url [--push] [--all] <name>
   or: git remote set-url [--push] <name> <newurl> [<oldurl>]
   or: git remote set-url --add <name> <newurl>
   or: git remote set-url --delete <name> <url>";

/// `git remote`'s own options, before its subcommand.
const SPEC: Spec<bool> = Spec {
    name: "remote",
    usage: USAGE,
    options: &[Opt::bool("-v/--verbose", |verbose, on| *verbose = on)],
    refused: "",
    unknown: Unknown::Usage,
    help: &[&[Help(
        "-v, --[no-]verbose",
        "be verbose; must be placed before a subcommand",
    )]],
};

const GET_URL: Spec<()> = Spec {
    name: "remote get-url",
    usage: "git remote get-url [--push] [--all] <name>",
    options: &[],
    refused: "--push --no-push --all --no-all",
    unknown: Unknown::Usage,
    help: &[&[
        Help("--[no-]push", "query push URLs rather than fetch URLs"),
        Help("--[no-]all", "return all URLs"),
    ]],
};

/// git's subcommands of `remote` that burrow's git does not implement.
const NOT_HERE: &[&str] = &[
    "add",
    "rename",
    "remove",
    "rm",
    "set-head",
    "prune",
    "update",
    "set-branches",
    "set-url",
];

pub(crate) fn remote(repo: &Repo, args: &[String], io: &Io) -> Result<i32, String> {
    let mut verbose = false;
    // Options end at the subcommand; what follows it is the subcommand's.
    let (operands, after) =
        match SPEC.parse_with(args, &mut verbose, io, &mut |_, _| Ok(Next::Stop)) {
            Ok(v) => v,
            Err(code) => return Ok(code),
        };
    // The subcommand and its own command line, its `--` kept.
    let (sub, rest) = match (operands.split_first(), after) {
        (Some((sub, more)), after) => {
            let mut rest = more.to_vec();
            if let Some(after) = after {
                rest.push("--".into());
                rest.extend(after);
            }
            (sub.clone(), rest)
        }
        (None, Some(after)) if !after.is_empty() => (after[0].clone(), after[1..].to_vec()),
        _ => return Ok(list(repo, verbose, io)),
    };
    match sub.as_str() {
        "get-url" => {
            let names = match GET_URL.parse(&rest, &mut (), io) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            let [name] = names.as_slice() else {
                return Ok(GET_URL.usage_error(io, ""));
            };
            match remotes_of(repo).into_iter().find(|(n, _)| n == name) {
                Some((_, url)) => {
                    io.print(&format!("{url}\n"));
                    Ok(0)
                }
                None => {
                    io.eprint(&format!("error: No such remote '{name}'\n"));
                    Ok(2)
                }
            }
        }
        // `show` without a name lists the remotes, as `git remote` does.
        "show" if rest.is_empty() => Ok(list(repo, verbose, io)),
        s if s == "show" || NOT_HERE.contains(&s) => Err(format!(
            "fatal: 'git remote {s}' is not supported in burrow (burrow's git lists remotes only)"
        )),
        s => Ok(SPEC.usage_error(io, &format!("error: unknown subcommand: `{s}'"))),
    }
}

/// The remotes' names, or with `verbose` each with its URL for fetch and for push.
fn list(repo: &Repo, verbose: bool, io: &Io) -> i32 {
    let mut out = String::new();
    for (name, url) in remotes_of(repo) {
        if verbose {
            out.push_str(&format!("{name}\t{url} (fetch)\n{name}\t{url} (push)\n"));
        } else {
            out.push_str(&format!("{name}\n"));
        }
    }
    io.print(&out);
    0
}
