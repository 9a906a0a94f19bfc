//! sh-utility: the interface between burrow's shell and its utilities.
//!
//! A utility (`cat`, `grep`, `git`...) is a function from its arguments, a [`Ctx`] (the
//! shell as it may see it: the working directory, variables, running another command) and an
//! [`Io`] (its streams) to a [`Status`]. Utility crates depend on this crate only, never on
//! the interpreter or on one another's internals, and name their commands in a table
//! ([`Command`]) that the interpreter registers; the [`registry`] says how each one's command
//! line is read and which options it implements ([`options`] refuses the rest with GNU's
//! words). The helpers every utility shares live here too: [`path`], [`pattern`], [`format`],
//! [`time`], and [`sys`] (what std cannot do on wasm32-wasip2).

pub mod ctx;
pub mod format;
pub mod io;
pub mod options;
pub mod path;
pub mod pattern;
pub mod registry;
pub mod sys;
pub mod time;

pub use ctx::{Ctx, Flow, Status};
pub use io::Io;

/// A utility's entry point: its argv (the name first), the shell, its streams.
pub type Run = fn(&mut dyn Ctx, &[String], &Io) -> Status;

/// A command a utility crate offers: its name and the function that runs it.
#[derive(Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    pub run: Run,
}
