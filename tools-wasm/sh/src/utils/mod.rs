//! The utilities the shell runs as commands, one module per utility or family: GNU coreutils'
//! everyday set (`coreutils`, file metadata in `files`, `du` in `disk`), the text tools
//! (`text`: grep, sed, cut, tr, xargs; `sort`; `awk`; `find`), calculators and data (`bc`,
//! `jq`, `od`), archives and patches (`archive`, `patch`, `extra`: diff, digests, base64),
//! the network (`curl`: curl and wget; `git`: clone over HTTP and the read-only porcelain), the Python toolchain launcher and its `pip`
//! (`toolchain`, `pip`), and small sandbox answers (`misc`). `registry` names every one with
//! its supported options and help text; `--help`, the option checks, the sandbox's
//! `/usr/bin` listing and the option audit all read it.

pub mod archive;
pub mod awk;
pub mod bc;
pub mod copy;
pub mod coreutils;
pub mod curl;
pub mod disk;
pub mod extra;
pub mod files;
pub mod find;
pub mod git;
pub mod ignore_walk;
pub mod jq;
pub mod misc;
pub mod od;
pub mod options;
pub mod patch;
pub mod pip;
pub mod registry;
pub mod sort;
pub mod text;
pub mod toolchain;

use crate::shell::io::Io;
use crate::shell::{Shell, Status};

/// Runs `argv` if it names a built-in utility (after the option gate); None otherwise.
pub fn run(sh: &mut Shell, argv: &[String], io: &Io) -> Option<Status> {
    let u = registry::find(&argv[0])?;
    let argv = match options::gate(u, argv, io) {
        options::Gate::Run(a) => a,
        options::Gate::Done(status) => return Some(Ok(status)),
    };
    match u.family {
        "builtins" => None,
        "misc" => misc::run(sh, &argv, io),
        "toolchain" | "pip" => toolchain::run(sh, &argv, io),
        "archive" => archive::run(sh, &argv, io),
        "git" => Some(Ok(git::git(sh, &argv[1..], io))),
        "extra" | "awk" | "jq" | "patch" | "bc" | "curl" | "od" => extra::run(sh, &argv, io),
        _ => coreutils::run(sh, &argv, io),
    }
}

/// Whether `name` is a built-in utility.
pub fn is_utility(name: &str) -> bool {
    registry::find(name).is_some()
}

/// Whether `name` is one of the names of the Python toolchain (python3, pip, ...).
pub fn is_python(name: &str) -> bool {
    registry::find(name).is_some_and(|u| matches!(u.family, "toolchain" | "pip"))
}
