//! Launchers of the toolchains burrow installs on the host (`burrow toolchain install python`)
//! and mounts read-only at `/opt/burrow/toolchains`: `python3` runs CPython for WASI through
//! the host (which maps the 26 MB program itself), `pip` installs pure-Python wheels into the
//! session (crate::pip). Without the toolchain they answer what to run, with bash's 127.

pub use crate::layout::{PYTHON_DIR, site_packages};
use std::path::Path;

use crate::interpreter::{PYTHON_PROGRAM, python};

use sh_utility::Ctx;
use sh_utility::io::Io;
use sh_utility::{Command, Status};

/// The launchers of the Python toolchain, for the shell's registry.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "python3",
        run,
    },
    Command {
        name: "python",
        run,
    },
    Command {
        name: "python3.12",
        run,
    },
    Command { name: "pip", run },
    Command { name: "pip3", run },
    Command {
        name: "pip3.12",
        run,
    },
];

pub fn run(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let name = argv[0].as_str();
    if !Path::new(PYTHON_PROGRAM).is_file() {
        io.eprint(&format!(
            "{name}: not installed in this burrow; run: burrow toolchain install python\n"
        ));
        return Ok(127);
    }
    if name.starts_with("pip") {
        return Ok(crate::pip::run(sh, argv, io));
    }
    // `python3 -m pip ...` is pip (the interpreter has no pip of its own: it would need
    // sockets), with the same arguments.
    if argv.get(1).map(String::as_str) == Some("-m")
        && argv.get(2).map(String::as_str) == Some("pip")
    {
        let mut args = vec!["pip".to_string()];
        args.extend(argv[3..].iter().cloned());
        return Ok(crate::pip::run(sh, &args, io));
    }
    Ok(python(sh, argv, io))
}
