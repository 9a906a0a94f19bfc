//! sh-pip: the Python toolchain's launchers ([`toolchain`]: python3 and its names, run as an
//! installed program by [`interpreter`]) and [`pip`] (a resolver over the package index's
//! simple API, wheels unpacked into the session's site-packages, source distributions built
//! in the session).

pub mod interpreter;
pub mod layout;
pub mod pip;
pub mod toolchain;

/// The launchers and pip, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[toolchain::COMMANDS];
