//! sh-coreutils: the everyday utilities of burrow's shell: GNU coreutils' set
//! ([`coreutils`]: cat, ls, head, tail, wc, uniq, mkdir, rm, ln, tee, ...; file metadata in
//! [`files`], `cp`/`mv` in [`copy`], `du` in [`disk`]), the text tools ([`text`]: grep, sed,
//! cut, tr, xargs; [`sort`]; [`find`]), rg ([`ignore_walk`]), diff, digests and base64
//! ([`extra`]), [`patch`], [`od`], and small sandbox answers ([`misc`]). Each module names
//! its commands in a table that [`COMMANDS`] gathers for the shell's registry; they see the
//! shell only through [`sh_utility::Ctx`].

pub mod copy;
pub mod coreutils;
pub mod disk;
pub mod extra;
pub mod files;
pub mod find;
pub mod ignore_walk;
pub mod misc;
pub mod od;
pub mod patch;
pub mod sort;
pub mod text;

/// Every command of this crate.
pub static COMMANDS: &[&[sh_utility::Command]] = &[
    coreutils::COMMANDS,
    copy::COMMANDS,
    misc::COMMANDS,
    extra::COMMANDS,
];
