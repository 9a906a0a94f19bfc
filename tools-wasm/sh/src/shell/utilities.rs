//! The utilities the shell runs as commands: one crate per concern under `tools-wasm/`
//! (`sh-coreutils`: coreutils, text tools, find, rg, diff, patch...; `sh-awk`, `sh-jq`,
//! `sh-bc`, `sh-archive`, `sh-curl`, `sh-pip`, `sh-git`), each seeing the shell only through
//! `sh_utility::Ctx` and naming its commands in a table. This module registers the tables
//! (one line per crate) and runs a command: the registry (`sh_utility::registry`) says how its
//! command line is read and which options it implements, the option gate refuses the rest with
//! GNU's words, and the crate's table gives the function. `--help`, the sandbox's `/usr/bin`
//! listing and the option audit read the same registry.

pub use sh_utility::{options, registry};

use crate::shell::io::Io;
use crate::shell::{Shell, Status};

/// Every utility crate's commands: one line per crate.
static CRATES: &[&[&[sh_utility::Command]]] = &[
    sh_coreutils::COMMANDS,
    sh_awk::COMMANDS,
    sh_jq::COMMANDS,
    sh_bc::COMMANDS,
    sh_archive::COMMANDS,
    sh_curl::COMMANDS,
    sh_pip::COMMANDS,
    sh_git::COMMANDS,
];

/// Runs `argv` if it names a built-in utility (after the option gate); None otherwise.
pub fn run(sh: &mut Shell, argv: &[String], io: &Io) -> Option<Status> {
    let u = registry::find(&argv[0])?;
    let argv = match options::gate(u, argv, io) {
        options::Gate::Run(a) => a,
        options::Gate::Done(status) => return Some(Ok(status)),
    };
    if matches!(argv[0].as_str(), "sh" | "bash") {
        // A new whole shell: the interpreter's own business, not a utility's.
        return Some(crate::shell::bash_command(sh, &argv[1..], io));
    }
    let command = CRATES
        .iter()
        .flat_map(|c| c.iter())
        .flat_map(|t| t.iter())
        .find(|c| c.name == argv[0])?;
    Some((command.run)(sh, &argv, io))
}

/// Whether `name` is a built-in utility.
pub fn is_utility(name: &str) -> bool {
    registry::find(name).is_some()
}

/// Whether `name` is one of the names of the Python toolchain (python3, pip, ...).
pub fn is_python(name: &str) -> bool {
    registry::find(name).is_some_and(|u| matches!(u.family, "toolchain" | "pip"))
}
