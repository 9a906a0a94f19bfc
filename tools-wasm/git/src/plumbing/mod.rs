//! git's plumbing: the repository's formats and the operations every command is made of
//! (objects, packs, refs, the index, revisions, walks, tree diffs, three-way merges, the
//! work tree's checkout, the untracked walk). Nothing here prints a command's output or
//! reads a command line, and nothing here imports `porcelain`.

pub(crate) mod checkout;
pub(crate) mod commit;
pub(crate) mod date;
pub(crate) mod diff;
pub(crate) mod index;
pub(crate) mod merge;
pub(crate) mod object;
pub(crate) mod pack;
pub(crate) mod pathspec;
pub(crate) mod refs;
pub(crate) mod remote;
pub(crate) mod repo;
pub(crate) mod rev;
pub(crate) mod state;
pub(crate) mod text;
pub(crate) mod tree;
pub(crate) mod untracked;
pub(crate) mod walk;
pub(crate) mod write;
