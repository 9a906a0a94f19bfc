//! Three-way merge of versions: the changes one version made since a base, applied onto a
//! transaction over another version that also moved on from that base (`burrow merge`, and
//! concurrent calls committing onto a head that moved).
//!
//! Both sides' changes come from [`Store::diff`], which descends only where hashes differ,
//! so a merge costs what the two sides changed, not the size of the tree. Paths merge one
//! by one: a path only the source changed takes the source's state (files are grafted by
//! their page tables: no byte is copied); a path both changed to the same state is left; a
//! text file both changed merges line by line as `git merge-file --diff3` does
//! ([`text`]); anything else both changed (binary files, a file against a directory,
//! symlinks with different targets, a modification against a deletion) is a conflict,
//! which keeps the destination's state, except that a file one side modified and the other
//! deleted stays, as git leaves it. Renames are detected when the content is unchanged (a
//! file removed and one added with the same bytes), so an edit on one side follows a
//! rename on the other.

pub mod text;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::backend::VersionRow;
use crate::error::{Error, Result};
use crate::node::{Kind, PageRef};
use crate::txn::{ROOT_INO, Txn};
use crate::{Change, ChangeKind, Quota, Store, VersionId};

pub use text::{Labels, TextMerge, is_binary};

/// Why a path could not be merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictKind {
    /// Both changed the lines of a text file in overlapping places (the count of conflicted
    /// regions, written with markers into the file).
    Content(usize),
    /// Both changed a binary file differently.
    Binary,
    /// One side modified the file, the other deleted it.
    ModifyDelete,
    /// The two sides made different kinds of entry (file, directory, symlink) at the path.
    Kind,
    /// Both changed a symlink's target differently.
    Symlink,
    /// Both changed the file's permission bits differently.
    Mode,
    /// One side renamed the file, the other deleted it (the renamed file stays).
    RenameDelete,
    /// The two sides renamed the file to different names (both stay).
    RenameRename,
}

impl ConflictKind {
    /// A short name, as events and JSON answers carry it.
    pub fn name(&self) -> &'static str {
        match self {
            ConflictKind::Content(_) => "content",
            ConflictKind::Binary => "binary",
            ConflictKind::ModifyDelete => "modify/delete",
            ConflictKind::Kind => "file/directory",
            ConflictKind::Symlink => "symlink",
            ConflictKind::Mode => "mode",
            ConflictKind::RenameDelete => "rename/delete",
            ConflictKind::RenameRename => "rename/rename",
        }
    }
}

/// One conflicted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    pub kind: ConflictKind,
}

/// What a merge did to the destination transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Paths the merge changed cleanly, sorted.
    pub merged: Vec<String>,
    /// Paths in conflict, sorted.
    pub conflicts: Vec<Conflict>,
    /// With [`MergeOptions::later_wins`]: paths both sides changed, now theirs.
    pub replaced: Vec<String>,
}

/// How to merge.
#[derive(Debug, Clone, Copy)]
pub struct MergeOptions<'a> {
    /// Labels of conflict markers.
    pub labels: Labels<'a>,
    /// Merge the system area too (`/tmp`, `$HOME`, the shell's state): concurrent calls on
    /// one session do; merging a fork into its parent leaves the parent's own.
    pub system: bool,
    /// A path both sides changed takes theirs whole, as the later of two writes on a real
    /// filesystem does (concurrent calls), listed in [`MergeReport::replaced`]; except that
    /// appends by both to one file keep both (ours first) and text edits that merge
    /// cleanly merge. Only renames still report conflicts (a rename against a deletion
    /// keeps the renamed file, two renames keep both names).
    pub later_wins: bool,
}

/// A path's state in one version.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Absent,
    Dir,
    File {
        size: u64,
        pages: PageRef,
        mode: u32,
    },
    Link(String),
}

impl State {
    fn same_bytes(&self, other: &State) -> bool {
        matches!((self, other), (State::File { size: a, pages: p, .. }, State::File { size: b, pages: q, .. }) if a == b && p == q)
    }
}

fn state(v: &mut Txn, path: &str) -> Result<State> {
    let ino = match v.resolve(ROOT_INO, path, false) {
        Ok(i) => i,
        Err(Error::NotFound | Error::NotDir) => return Ok(State::Absent),
        Err(e) => return Err(e),
    };
    let st = v.stat(ino)?;
    Ok(match st.kind {
        Kind::Dir => State::Dir,
        Kind::Symlink => State::Link(v.readlink_at(ROOT_INO, path)?),
        Kind::File => match v.stored_content(ino)? {
            Some((size, pages, mode)) => State::File { size, pages, mode },
            None => {
                return Err(Error::Corrupt(format!(
                    "{path}: a view holds changed bytes"
                )));
            }
        },
    })
}

fn read(v: &mut Txn, path: &str) -> Result<Vec<u8>> {
    let ino = v.resolve(ROOT_INO, path, false)?;
    v.read_all(ino)
}

/// Exact renames in one side's changes: removed file -> added file with the same bytes.
fn renames(side: &[Change], base: &mut Txn, after: &mut Txn) -> Result<BTreeMap<String, String>> {
    let mut removed: Vec<(String, State)> = Vec::new();
    for c in side {
        if c.kind == ChangeKind::Removed && c.entry == Kind::File {
            removed.push((c.path.clone(), state(base, &c.path)?));
        }
    }
    let mut out = BTreeMap::new();
    if removed.is_empty() {
        return Ok(out);
    }
    let mut taken = BTreeSet::new();
    for c in side {
        if c.kind != ChangeKind::Added || c.entry != Kind::File {
            continue;
        }
        let now = state(after, &c.path)?;
        if let Some((from, _)) = removed
            .iter()
            .find(|(from, s)| !taken.contains(from) && s.same_bytes(&now))
        {
            taken.insert(from.clone());
            out.insert(from.clone(), c.path.clone());
        }
    }
    Ok(out)
}

/// The permission bits both sides agree on, or None when they changed them differently.
fn merge_mode(base: Option<u32>, ours: u32, theirs: u32) -> Option<u32> {
    match base {
        _ if ours == theirs => Some(ours),
        Some(b) if b == ours => Some(theirs),
        Some(b) if b == theirs => Some(ours),
        None => Some(ours),
        _ => None,
    }
}

struct Merger<'a> {
    txn: &'a mut Txn,
    base: Txn,
    ours: Txn,
    theirs: Txn,
    opts: MergeOptions<'a>,
    report: MergeReport,
    /// Directories the source removed, removed at the end when nothing is left in them.
    rmdirs: Vec<String>,
}

impl Store {
    /// Merges into `txn` (a transaction over the destination's head, "ours") the changes
    /// version `theirs` made since `base`. The transaction is left for the caller to commit
    /// (or drop, for a dry run); conflicted text files hold diff3-style markers.
    pub fn merge_into(
        &self,
        txn: &mut Txn,
        base: VersionId,
        theirs: VersionId,
        opts: MergeOptions<'_>,
    ) -> Result<MergeReport> {
        let base = self.version(base)?;
        let theirs = self.version(theirs)?;
        self.merge_trees(txn, &base, &theirs, opts)
    }

    /// [`Store::merge_into`] of trees given as version rows (`theirs` perhaps a tree not
    /// committed yet, its objects stored: an optimistic commit's).
    pub(crate) fn merge_trees(
        &self,
        txn: &mut Txn,
        base: &VersionRow,
        theirs: &VersionRow,
        opts: MergeOptions<'_>,
    ) -> Result<MergeReport> {
        let ours = self.version(txn.base())?;
        let dt = self.diff_roots(&base.root, &theirs.root, opts.system)?;
        let do_ = self.diff_roots(&base.root, &ours.root, opts.system)?;
        let view = |row: &VersionRow| Txn::new(self.clone(), None, row.clone(), Quota::default());
        let mut m = Merger {
            txn,
            base: view(base)?,
            ours: view(&ours)?,
            theirs: view(theirs)?,
            opts,
            report: MergeReport::default(),
            rmdirs: Vec::new(),
        };
        m.run(&dt, &do_)?;
        Ok(m.report)
    }
}

impl Merger<'_> {
    fn run(&mut self, dt: &[Change], do_: &[Change]) -> Result<()> {
        let ours_changed: HashMap<&str, ChangeKind> =
            do_.iter().map(|c| (c.path.as_str(), c.kind)).collect();
        let theirs_changed: HashMap<&str, ChangeKind> =
            dt.iter().map(|c| (c.path.as_str(), c.kind)).collect();
        let mut done: BTreeSet<String> = BTreeSet::new();

        // An edit on one side follows the other side's rename of the same file; a rename
        // against a deletion or another rename is a conflict at the new names (git's
        // rename/delete and rename/rename), the renamed files kept.
        let theirs_renames = renames(dt, &mut self.base, &mut self.theirs)?;
        let ours_renames = renames(do_, &mut self.base, &mut self.ours)?;
        for (from, to) in &theirs_renames {
            let ours_kind = ours_changed.get(from.as_str()).copied();
            if let Some(other) = ours_renames.get(from) {
                if other != to {
                    let t = state(&mut self.theirs, to)?;
                    self.take_theirs(to, &t)?;
                    self.report.merged.retain(|p| p != to);
                    self.conflict(to, ConflictKind::RenameRename);
                    self.conflict(other, ConflictKind::RenameRename);
                    self.conflict(from, ConflictKind::RenameRename);
                    done.insert(to.clone());
                }
            } else if ours_kind == Some(ChangeKind::Removed) {
                if !ours_changed.contains_key(to.as_str()) {
                    let t = state(&mut self.theirs, to)?;
                    self.take_theirs(to, &t)?;
                    self.report.merged.retain(|p| p != to);
                }
                self.conflict(to, ConflictKind::RenameDelete);
                done.insert(to.clone());
            } else if ours_kind == Some(ChangeKind::Modified)
                && !ours_changed.contains_key(to.as_str())
                && let State::File { size, pages, mode } = state(&mut self.ours, from)?
            {
                self.apply(to, |t| t.graft_file(to, size, pages, mode).map(drop))?;
                self.apply(from, |t| t.unlink_at(ROOT_INO, from))?;
                done.insert(from.clone());
                done.insert(to.clone());
            }
        }
        for (from, to) in &ours_renames {
            let theirs_kind = theirs_changed.get(from.as_str()).copied();
            if theirs_renames.contains_key(from) {
                continue;
            }
            if theirs_kind == Some(ChangeKind::Removed) {
                self.conflict(to, ConflictKind::RenameDelete);
                done.insert(to.clone());
            } else if theirs_kind == Some(ChangeKind::Modified)
                && !theirs_changed.contains_key(to.as_str())
                && let State::File { size, pages, mode } = state(&mut self.theirs, from)?
            {
                self.apply(to, |t| t.graft_file(to, size, pages, mode).map(drop))?;
                done.insert(from.clone());
                done.insert(to.clone());
            }
        }

        for c in dt {
            if done.contains(&c.path) {
                continue;
            }
            let path = c.path.as_str();
            let t = state(&mut self.theirs, path)?;
            if !ours_changed.contains_key(path) {
                self.take_theirs(path, &t)?;
            } else {
                let o = state(&mut self.ours, path)?;
                if o != t && self.opts.later_wins {
                    self.later_wins(path, &o, &t)?;
                } else if o != t {
                    self.both_changed(path, &o, &t)?;
                }
            }
        }

        self.rmdirs.sort_by(|a, b| b.cmp(a));
        for d in std::mem::take(&mut self.rmdirs) {
            match self.txn.rmdir_at(ROOT_INO, &d) {
                Ok(()) => self.report.merged.push(d),
                Err(Error::NotEmpty | Error::NotFound | Error::NotDir) => {}
                Err(e) => return Err(e),
            }
        }
        self.report.merged.sort();
        self.report.merged.dedup();
        self.report.replaced.sort();
        self.report.replaced.dedup();
        self.report.conflicts.sort_by(|a, b| a.path.cmp(&b.path));
        self.report.conflicts.dedup_by(|a, b| a.path == b.path);
        let conflicted: BTreeSet<&str> = self
            .report
            .conflicts
            .iter()
            .map(|c| c.path.as_str())
            .collect();
        self.report
            .merged
            .retain(|p| !conflicted.contains(p.as_str()));
        Ok(())
    }

    /// Runs one change on the destination; a path it cannot take (a directory where a file
    /// goes, a file where a directory goes) is a conflict, not an error.
    fn apply(&mut self, path: &str, f: impl FnOnce(&mut Txn) -> Result<()>) -> Result<()> {
        match f(self.txn) {
            Ok(()) => {
                self.report.merged.push(path.to_string());
                Ok(())
            }
            Err(Error::NotDir | Error::IsDir | Error::Exists | Error::NotEmpty) => {
                self.conflict(path, ConflictKind::Kind);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn conflict(&mut self, path: &str, kind: ConflictKind) {
        self.report.conflicts.push(Conflict {
            path: path.to_string(),
            kind,
        });
    }

    /// Gives `path` the source's state.
    fn take_theirs(&mut self, path: &str, t: &State) -> Result<()> {
        let current = state(self.txn, path)?;
        match t {
            State::Absent => match current {
                State::Dir => self.rmdirs.push(path.to_string()),
                State::Absent => {}
                _ => self.apply(path, |x| x.unlink_at(ROOT_INO, path))?,
            },
            State::Dir => {
                if current != State::Dir {
                    self.apply(path, |x| {
                        if current != State::Absent {
                            x.unlink_at(ROOT_INO, path)?;
                        }
                        x.mkdir_all(path).map(drop)
                    })?;
                }
            }
            State::File { size, pages, mode } => {
                let (size, pages, mode) = (*size, *pages, *mode);
                self.apply(path, |x| x.graft_file(path, size, pages, mode).map(drop))?;
            }
            State::Link(target) => {
                self.apply(path, |x| {
                    match current {
                        State::Absent => {
                            if let Some((dir, _)) = path.rsplit_once('/') {
                                x.mkdir_all(dir)?;
                            }
                        }
                        State::Dir => return Err(Error::IsDir),
                        _ => x.unlink_at(ROOT_INO, path)?,
                    }
                    x.symlink_at(target, ROOT_INO, path).map(drop)
                })?;
            }
        }
        Ok(())
    }

    /// Both changed `path` and the later (theirs) wins, except where a filesystem would
    /// keep both: appends by both to a file (as `O_APPEND` writes land one after the other:
    /// ours', then theirs') and edits of a text file that merge without conflict.
    fn later_wins(&mut self, path: &str, o: &State, t: &State) -> Result<()> {
        if let (State::File { mode: om, .. }, State::File { mode: tm, .. }) = (o, t) {
            let (bb, bmode) = match state(&mut self.base, path)? {
                State::File { mode, .. } => (read(&mut self.base, path)?, Some(mode)),
                State::Absent => (Vec::new(), None),
                _ => return self.replace(path, t),
            };
            let ob = read(&mut self.ours, path)?;
            let tb = read(&mut self.theirs, path)?;
            let merged = if ob.starts_with(&bb) && tb.starts_with(&bb) {
                let mut both = ob.clone();
                both.extend_from_slice(&tb[bb.len()..]);
                Some(both)
            } else if !is_binary(&ob) && !is_binary(&tb) && !is_binary(&bb) {
                let m = text::merge(&bb, &ob, &tb, self.opts.labels);
                (m.conflicts == 0).then_some(m.bytes)
            } else {
                None
            };
            if let Some(bytes) = merged {
                let ino = self.txn.write_file(path, &bytes)?;
                // The later call's permission bits, unless only the earlier changed them.
                let mode = if bmode == Some(*tm) { *om } else { *tm };
                self.txn.set_mode(ino, mode)?;
                self.report.merged.push(path.to_string());
                return Ok(());
            }
        }
        self.replace(path, t)
    }

    fn replace(&mut self, path: &str, t: &State) -> Result<()> {
        self.take_theirs(path, t)?;
        self.report.replaced.push(path.to_string());
        Ok(())
    }

    /// Both sides changed `path`, to different states.
    fn both_changed(&mut self, path: &str, o: &State, t: &State) -> Result<()> {
        match (o, t) {
            (State::File { mode: om, .. }, State::File { mode: tm, .. }) => {
                let b = state(&mut self.base, path)?;
                let bmode = match b {
                    State::File { mode, .. } => Some(mode),
                    _ => None,
                };
                let Some(mode) = merge_mode(bmode, *om, *tm) else {
                    self.conflict(path, ConflictKind::Mode);
                    return Ok(());
                };
                let ob = read(&mut self.ours, path)?;
                let tb = read(&mut self.theirs, path)?;
                let bb = match b {
                    State::File { .. } => read(&mut self.base, path)?,
                    _ => Vec::new(),
                };
                if o.same_bytes(t) {
                    return self.apply(path, |x| set_mode(x, path, mode));
                }
                if is_binary(&ob) || is_binary(&tb) || is_binary(&bb) {
                    self.conflict(path, ConflictKind::Binary);
                    return Ok(());
                }
                let merged = text::merge(&bb, &ob, &tb, self.opts.labels);
                if merged.bytes != ob || mode != *om {
                    let ino = self.txn.write_file(path, &merged.bytes)?;
                    self.txn.set_mode(ino, mode)?;
                }
                if merged.conflicts > 0 {
                    self.conflict(path, ConflictKind::Content(merged.conflicts));
                } else {
                    self.report.merged.push(path.to_string());
                }
            }
            (State::Absent, State::File { size, pages, mode }) => {
                // Deleted here, modified there: the modified file stays, in conflict.
                let (size, pages, mode) = (*size, *pages, *mode);
                match self.txn.graft_file(path, size, pages, mode) {
                    Ok(_) | Err(Error::NotDir | Error::IsDir) => {}
                    Err(e) => return Err(e),
                }
                self.conflict(path, ConflictKind::ModifyDelete);
            }
            (State::File { .. }, State::Absent) => self.conflict(path, ConflictKind::ModifyDelete),
            (State::Dir | State::Absent, State::Absent) => self.rmdirs.push(path.to_string()),
            (State::Absent, State::Dir) => self.apply(path, |x| x.mkdir_all(path).map(drop))?,
            (State::Link(_), State::Link(_)) => self.conflict(path, ConflictKind::Symlink),
            (State::Link(_), State::Absent) | (State::Absent, State::Link(_)) => {
                self.conflict(path, ConflictKind::ModifyDelete)
            }
            _ => self.conflict(path, ConflictKind::Kind),
        }
        Ok(())
    }
}

fn set_mode(x: &mut Txn, path: &str, mode: u32) -> Result<()> {
    let ino = x.resolve(ROOT_INO, path, false)?;
    x.set_mode(ino, mode)
}
