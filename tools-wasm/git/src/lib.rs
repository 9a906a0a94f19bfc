//! sh-git: git for burrow's shell: clone, fetch and push over the session's wasi:http, and
//! the porcelain agents type (see docs/SHELL.md).

mod am;
mod apply;
mod blame;
mod clone;
mod date;
mod describe;
mod diff;
mod files;
mod for_each_ref;
mod format_patch;
mod graph;
mod grep;
mod log;
mod ls_files;
mod merge;
mod object;
mod pack;
mod porcelain;
mod push;
mod remote;
mod repo;
mod rev;
mod sequencer;
mod stash;
mod state;
mod sync;
mod tag;
mod worktree;
mod write;

use sh_utility::Ctx;
use sh_utility::io::Io;

/// The version `git --version` reports: the git burrow's output follows, marked as burrow's.
pub const VERSION: &str = "2.47.3.burrow";

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
                io.print(&format!("git version {VERSION}\n"));
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
    repo::with_overrides(overrides, || dispatch(sh, cmd, rest, io))
}

fn dispatch(sh: &dyn Ctx, cmd: &str, rest: &[String], io: &Io) -> i32 {
    match cmd {
        "clone" => clone::clone(sh, rest, io),
        "init" => write::init(sh, rest, io),
        "diff" => diff::diff(sh, rest, io),
        "show" => diff::show(sh, rest, io),
        "add" => write::add(sh, rest, io),
        "commit" => write::commit(sh, rest, io),
        "checkout" | "switch" => worktree::checkout_or_switch(sh, cmd, rest, io),
        "restore" => worktree::restore(sh, rest, io),
        "reset" => worktree::reset(sh, rest, io),
        "rm" => files::rm(sh, rest, io),
        "merge" => merge::merge(sh, rest, io),
        "fetch" => sync::fetch(sh, rest, io),
        "pull" => sync::pull(sh, rest, io),
        "ls-remote" => sync::ls_remote(sh, rest, io),
        "push" => push::push(sh, rest, io),
        "stash" => stash::stash(sh, rest, io),
        "mv" => files::mv(sh, rest, io),
        "tag" => tag::tag(sh, rest, io),
        "grep" => grep::grep(sh, rest, io),
        "blame" => blame::blame(sh, rest, io),
        "apply" => apply::apply(sh, rest, io),
        "am" => am::am(sh, rest, io),
        "format-patch" => format_patch::format_patch(sh, rest, io),
        "cherry-pick" => sequencer::cherry_pick(sh, rest, io),
        "revert" => sequencer::revert(sh, rest, io),
        "rebase" => sequencer::rebase(sh, rest, io),
        "describe" => describe::describe(sh, rest, io),
        "for-each-ref" => for_each_ref::for_each_ref(sh, rest, io),
        "ls-files" => ls_files::run(sh, rest, io),
        "status" | "log" | "rev-parse" | "branch" | "remote" | "config" => {
            porcelain::run(sh, cmd, rest, io)
        }
        c if KNOWN.contains(&c) => {
            io.eprint(&format!("git: '{c}' is not supported in burrow\n"));
            1
        }
        c => {
            io.eprint(&format!(
                "git: '{c}' is not a git command. See 'git --help'.\n"
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

/// git's options reader for one command: `--name=value` and `--name value`, bundled short
/// flags (`-qn`), a short option's value attached (`-bmain`) or next.
pub struct Args<'a> {
    args: &'a [String],
    i: usize,
    queue: std::collections::VecDeque<String>,
    pending: Option<String>,
    /// Short options that take a value.
    valued: &'static str,
}

impl<'a> Args<'a> {
    pub fn new(args: &'a [String]) -> Args<'a> {
        Args::with_values(args, "b")
    }

    pub fn with_values(args: &'a [String], valued: &'static str) -> Args<'a> {
        Args {
            args,
            i: 0,
            queue: Default::default(),
            pending: None,
            valued,
        }
    }

    pub(crate) fn next(&mut self) -> Option<String> {
        self.pending = None;
        if let Some(q) = self.queue.pop_front() {
            return Some(q);
        }
        let a = self.args.get(self.i)?.clone();
        self.i += 1;
        if let Some(long) = a.strip_prefix("--")
            && let Some((name, value)) = long.split_once('=')
        {
            self.pending = Some(value.to_string());
            return Some(format!("--{name}"));
        }
        // Bundled short flags; `-10` (a count) stays whole.
        if a.len() > 2
            && a.starts_with('-')
            && !a.starts_with("--")
            && !a[1..].bytes().all(|b| b.is_ascii_digit())
        {
            let letters: Vec<char> = a[1..].chars().collect();
            for (k, c) in letters.iter().enumerate() {
                self.queue.push_back(format!("-{c}"));
                if self.valued.contains(*c) {
                    let rest: String = letters[k + 1..].iter().collect();
                    if !rest.is_empty() {
                        self.queue.push_back(rest);
                    }
                    break;
                }
            }
            return self.queue.pop_front();
        }
        Some(a)
    }

    /// The value of the option just read.
    pub fn value(&mut self, name: &str) -> Result<String, String> {
        if let Some(v) = self.pending.take() {
            return Ok(v);
        }
        if let Some(q) = self.queue.pop_front() {
            return Ok(q);
        }
        match self.args.get(self.i) {
            Some(v) => {
                self.i += 1;
                Ok(v.clone())
            }
            None => Err(format!("error: option `{name}' requires a value")),
        }
    }

    /// The `=value` given to the option just read, if any.
    pub fn pending_value(&mut self) -> Option<&str> {
        self.pending.as_deref()
    }

    /// Fails when a flag was given a value (`--quiet=1`).
    pub fn flag(&mut self, name: &str) -> Result<(), String> {
        match self.pending.take() {
            Some(_) => Err(format!("error: option `{name}' takes no value")),
            None => Ok(()),
        }
    }

    /// Everything after `--`.
    pub fn rest(&mut self) -> Vec<String> {
        let r = self.args[self.i..].to_vec();
        self.i = self.args.len();
        r
    }

    /// git's message for an option it does not know.
    pub fn unknown(&self, s: &str) -> String {
        match s.strip_prefix("--") {
            Some(long) => format!("error: unknown option `{long}'"),
            None => format!(
                "error: unknown switch `{}'",
                s.trim_start_matches('-').chars().next().unwrap_or('-')
            ),
        }
    }
}

/// Prints a command's failure and gives git's status for it: 1 for an `error:` alone, 128
/// when it is (or ends in) a `fatal:`.
pub fn fail(io: &Io, e: &str) -> i32 {
    io.eprint(&format!("{e}\n"));
    if e.starts_with("error:") && !e.contains("\nfatal:") {
        1
    } else {
        128
    }
}

/// Refuses an option of git's that burrow's git does not implement (status 128).
pub fn not_here(io: &Io, cmd: &str, arg: &str) -> i32 {
    io.eprint(&format!(
        "fatal: 'git {cmd} {arg}' is not supported in burrow\n"
    ));
    128
}

/// The repository the shell's working directory is in, with that directory, or git's
/// refusal outside one (status 128).
pub fn open_repo(sh: &dyn Ctx, io: &Io) -> Result<(repo::Repo, std::path::PathBuf), i32> {
    let cwd = std::path::PathBuf::from(&sh.cwd());
    match repo::Repo::discover(&cwd) {
        Some(r) => Ok((r, cwd)),
        None => Err(worktree::not_a_repo(io)),
    }
}

/// A usage error: the message, git's usage line, status 129.
pub fn usage_error(io: &Io, msg: &str, usage: &str) -> i32 {
    if !msg.is_empty() {
        io.eprint(&format!("{msg}\n"));
    }
    io.eprint(&format!("usage: {usage}\n"));
    129
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_read_as_git_reads_them() {
        let v = strings(&["-qbmain", "--depth=1", "--branch", "dev", "url"]);
        let mut a = Args::new(&v);
        assert_eq!(a.next().as_deref(), Some("-q"));
        assert_eq!(a.next().as_deref(), Some("-b"));
        assert_eq!(a.value("branch").unwrap(), "main");
        assert_eq!(a.next().as_deref(), Some("--depth"));
        assert_eq!(a.value("depth").unwrap(), "1");
        assert_eq!(a.next().as_deref(), Some("--branch"));
        assert_eq!(a.value("branch").unwrap(), "dev");
        assert_eq!(a.next().as_deref(), Some("url"));
        assert_eq!(a.unknown("--frob"), "error: unknown option `frob'");
        assert_eq!(a.unknown("-x"), "error: unknown switch `x'");
    }
}
