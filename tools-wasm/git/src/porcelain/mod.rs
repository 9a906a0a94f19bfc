//! git's porcelain: one module per command (or family of commands), each reading its
//! command line and printing git's words, built on `plumbing` alone and on the few
//! commands that other commands finish with (`commit`'s summary, `status`'s block).

pub(crate) mod am;
pub(crate) mod apply;
pub(crate) mod args;
pub(crate) mod blame;
pub(crate) mod branch;
pub(crate) mod clone;
pub(crate) mod config;
pub(crate) mod describe;
pub(crate) mod diff;
pub(crate) mod files;
pub(crate) mod for_each_ref;
pub(crate) mod format_patch;
pub(crate) mod graph;
pub(crate) mod grep;
pub(crate) mod log;
pub(crate) mod ls_files;
pub(crate) mod merge;
pub(crate) mod push;
pub(crate) mod remote;
pub(crate) mod rev_parse;
pub(crate) mod sequencer;
pub(crate) mod stash;
pub(crate) mod status;
pub(crate) mod sync;
pub(crate) mod tag;
pub(crate) mod worktree;
pub(crate) mod write;
