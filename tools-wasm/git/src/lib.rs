//! sh-git: git for burrow's shell: clone, fetch and push over the session's wasi:http, and
//! the porcelain agents type (see docs/SHELL.md).

mod plumbing;
mod porcelain;

use std::path::Path;

use plumbing::repo::Repo;
use porcelain::{
    am, apply, args, blame, branch, clone, config, describe, diff, files, for_each_ref,
    format_patch, grep, log, ls_files, merge, push, remote, rev_parse, sequencer, stash, status,
    sync, tag, worktree, write,
};
use sh_utility::Ctx;
use sh_utility::io::Io;

/// git's commands that burrow's git does not implement (yet): they are refused by name
/// instead of being reported as unknown.
const KNOWN: &[&str] = &[
    "annotate",
    "archive",
    "bisect",
    "bundle",
    "cat-file",
    "check-ignore",
    "cherry",
    "clean",
    "commit-tree",
    "count-objects",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fsck",
    "gc",
    "hash-object",
    "help",
    "ls-tree",
    "merge-base",
    "mergetool",
    "notes",
    "range-diff",
    "reflog",
    "repack",
    "replace",
    "shortlog",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "submodule",
    "symbolic-ref",
    "update-index",
    "update-ref",
    "var",
    "verify-pack",
    "worktree",
    "write-tree",
];

/// git, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[&[sh_utility::Command {
    name: "git",
    run: |sh, argv, io| Ok(git(sh, &argv[1..], io)),
}]];

pub fn git(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut cwd = std::path::PathBuf::from(&sh.cwd());
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-c" => {
                let Some(kv) = args.get(i + 1) else {
                    io.eprint("error: -c expects a configuration string\n");
                    return 129;
                };
                // `-c key` alone sets a boolean true, as git reads it.
                let (k, v) = kv.split_once('=').unwrap_or((kv, "true"));
                if !k.contains('.') {
                    io.eprint(&format!("error: key does not contain a section: {k}\nfatal: unable to parse command-line config\n"));
                    return 128;
                }
                overrides.push((k.to_string(), v.to_string()));
                i += 2;
            }
            "-C" => {
                let Some(p) = args.get(i + 1) else {
                    io.eprint("error: no directory given for '-C' option\n");
                    return 129;
                };
                cwd = cwd.join(p);
                if !cwd.is_dir() {
                    io.eprint(&format!(
                        "fatal: cannot change to '{p}': No such file or directory\n"
                    ));
                    return 128;
                }
                i += 2;
            }
            // No pager ever runs here.
            "--no-pager" | "-P" => i += 1,
            "--version" | "version" => {
                io.print(&format!("git version {}\n", args::VERSION));
                return 0;
            }
            "--help" | "-h" => {
                io.print(HELP);
                return 0;
            }
            s if s.starts_with('-') => {
                io.eprint(&format!("unknown option: {s}\n{GLOBAL_USAGE}"));
                return 129;
            }
            _ => break,
        }
    }
    let Some(cmd) = args.get(i) else {
        io.print(HELP);
        return 1;
    };
    let rest = &args[i + 1..];
    let cwd_sh;
    let sh: &dyn Ctx = if cwd.to_string_lossy() != sh.cwd() {
        cwd_sh = sh.in_dir(&cwd.to_string_lossy());
        cwd_sh.as_ref()
    } else {
        sh
    };
    plumbing::repo::with_overrides(overrides, || dispatch(sh, cmd, rest, io))
}

/// How a command of the table is run.
enum Run {
    /// The command reads its own command line and finds (or makes) its repository.
    Own(fn(&dyn Ctx, &[String], &Io) -> i32),
    /// The command runs in the repository of the working directory: outside one it is
    /// git's "not a git repository" (128); an error it returns is printed, status 128.
    InRepo(fn(&Repo, &Path, &[String], &Io) -> Result<i32, String>),
}

/// The commands burrow's git implements, each with the module that does it: the one place
/// a new command is registered.
const TABLE: &[(&str, Run)] = &[
    ("clone", Run::Own(clone::clone)),
    ("init", Run::Own(write::init)),
    ("add", Run::Own(write::add)),
    ("commit", Run::Own(write::commit)),
    ("status", Run::InRepo(status::status)),
    ("log", Run::InRepo(log::log)),
    ("diff", Run::Own(diff::diff)),
    ("show", Run::Own(diff::show)),
    ("rev-parse", Run::InRepo(rev_parse::rev_parse)),
    (
        "branch",
        Run::InRepo(|repo, _, args, io| branch::branch(repo, args, io)),
    ),
    (
        "remote",
        Run::InRepo(|repo, _, args, io| remote::remote(repo, args, io)),
    ),
    ("config", Run::Own(config::config)),
    ("ls-files", Run::Own(ls_files::run)),
    (
        "checkout",
        Run::Own(|sh, args, io| worktree::checkout_or_switch(sh, "checkout", args, io)),
    ),
    (
        "switch",
        Run::Own(|sh, args, io| worktree::checkout_or_switch(sh, "switch", args, io)),
    ),
    ("restore", Run::Own(worktree::restore)),
    ("reset", Run::Own(worktree::reset)),
    ("rm", Run::Own(files::rm)),
    ("mv", Run::Own(files::mv)),
    ("tag", Run::Own(tag::tag)),
    ("merge", Run::Own(merge::merge)),
    ("stash", Run::Own(stash::stash)),
    ("fetch", Run::Own(sync::fetch)),
    ("pull", Run::Own(sync::pull)),
    ("ls-remote", Run::Own(sync::ls_remote)),
    ("push", Run::Own(push::push)),
    ("grep", Run::Own(grep::grep)),
    ("blame", Run::Own(blame::blame)),
    ("apply", Run::Own(apply::apply)),
    ("am", Run::Own(am::am)),
    ("format-patch", Run::Own(format_patch::format_patch)),
    ("cherry-pick", Run::Own(sequencer::cherry_pick)),
    ("revert", Run::Own(sequencer::revert)),
    ("rebase", Run::Own(sequencer::rebase)),
    ("describe", Run::Own(describe::describe)),
    ("for-each-ref", Run::Own(for_each_ref::for_each_ref)),
];

fn dispatch(sh: &dyn Ctx, cmd: &str, rest: &[String], io: &Io) -> i32 {
    match TABLE.iter().find(|(name, _)| *name == cmd) {
        Some((_, Run::Own(run))) => run(sh, rest, io),
        Some((_, Run::InRepo(run))) => {
            let (repo, cwd) = match args::open_repo(sh, io) {
                Ok(r) => r,
                Err(code) => return code,
            };
            match run(&repo, &cwd, rest, io) {
                Ok(code) => code,
                Err(e) => {
                    io.eprint(&format!("{e}\n"));
                    128
                }
            }
        }
        None if KNOWN.contains(&cmd) => {
            io.eprint(&format!("git: '{cmd}' is not supported in burrow\n"));
            1
        }
        None => {
            io.eprint(&format!(
                "git: '{cmd}' is not a git command. See 'git --help'.\n"
            ));
            1
        }
    }
}

const GLOBAL_USAGE: &str =
    "usage: git [-v | --version] [-h | --help] [-C <path>] [--no-pager] <command> [<args>]\n";

const HELP: &str =
    "usage: git [-v | --version] [-h | --help] [-C <path>] [--no-pager] <command> [<args>]

burrow's git implements these commands:

   clone      Clone a repository over HTTP(S) into a new directory
   init       Create an empty Git repository
   add        Add file contents to the index
   commit     Record changes to the repository
   checkout   Create a branch and switch to it (-b), or switch to one at the same commit
   switch     The same (-c to create)
   status     Show the working tree status
   log        Show commit logs
   diff       Show changes between the index, the work tree and commits
   show       Show commits with their changes, tags, trees and blobs
   rev-parse  Pick out and massage parameters
   branch     List, create or delete branches
   remote     List the remotes
   ls-files   Show the files in the index and the work tree
   config     Get repository or global options

Other git commands answer that they are not supported in burrow.
";
