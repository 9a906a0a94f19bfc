//! Transactions: every change to a workspace goes through a [`Txn`]. It reads its base version
//! lazily into an in-memory overlay of inodes (only what the operations touch), and on
//! [`Txn::commit`] writes the changed nodes bottom-up and moves the head with compare-and-swap,
//! all in one SQLite transaction. Dropping a `Txn` without committing changes nothing.
//!
//! Inodes are addressed by number ([`Ino`]) so that an open descriptor survives a rename, as
//! on a real filesystem. Hard links are not supported (documented `unsupported` error): every
//! inode has exactly one parent, which keeps copy-on-write trees simple and fork O(1).

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::HashMap;

use crate::backend::{VersionRow, now_ns};
use crate::error::{Error, Result};
use crate::hamt;
use crate::node::{Agg, Entry, Hamt, Hash, Kind, Meta, Node, PAGE_SIZE, PageRef};
use crate::objects::Pending;
use crate::pagetable;
use crate::{Quota, Store, VersionId};

mod commit;
mod paths;

/// An inode number: identity of a file, directory or symlink within a workspace tree.
pub type Ino = u64;

/// The inode number of a workspace's root directory.
pub const ROOT_INO: Ino = 1;

/// The name, at the root of every version's tree, of the session's system area: what
/// persists outside the workspace (the sandbox's `/tmp`, `$HOME`, the shell's own state),
/// versioned with the same commit as the workspace. It starts with a NUL, which no guest
/// path, host file name or tar member can contain, so only host code reaches it; diffs,
/// exports and the guest's view of the workspace leave it out.
pub const SYSTEM_DIR: &str = "\u{0}system";

/// Whether a path relative to the root lies in the system area.
pub fn is_system_path(path: &str) -> bool {
    path == SYSTEM_DIR || path.starts_with(&format!("{SYSTEM_DIR}/"))
}

/// Longest name of one directory entry, in bytes.
pub const NAME_MAX: usize = 255;
/// Longest path accepted, in bytes.
pub const PATH_MAX: usize = 4096;
/// Symlinks followed while resolving one path before giving up with `Loop`.
pub const SYMLINK_MAX: usize = 40;
/// Largest file size (64 TiB).
pub const FILE_MAX: u64 = 1 << 46;
/// In-memory dirty page bytes above which a transaction spills finished pages to the database
/// (content-addressed, so harmless if the transaction later aborts; GC reclaims them).
const SPILL_BYTES: usize = 8 << 20;

/// Attributes of an inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub ino: Ino,
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Always 1: hard links are not supported.
    pub nlink: u64,
    pub atime: i64,
    pub mtime: i64,
    pub ctime: i64,
}

/// One entry of [`Txn::readdir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: Kind,
    pub ino: Ino,
}

/// How [`Txn::open_at`] opens or creates a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// Create a regular file if the path does not exist.
    pub create: bool,
    /// With `create`: fail with `Exists` if the path exists.
    pub exclusive: bool,
    /// Truncate an existing regular file to zero length.
    pub truncate: bool,
    /// Fail with `NotDir` unless the path is a directory.
    pub directory: bool,
}

/// A new value for a timestamp in [`Txn::set_times`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    Now,
    /// Nanoseconds since the Unix epoch.
    At(i64),
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    /// The head's version after the commit.
    pub version: VersionId,
    /// The version the transaction started from.
    pub base: VersionId,
    /// False when the transaction changed nothing (no new version was made).
    pub changed: bool,
}

enum PageState {
    Mem(Vec<u8>),
    Stored(Hash),
}

enum Slot {
    Removed,
    Live(Ino),
}

enum Body {
    File {
        size: u64,
        base: PageRef,
        /// Pages of `base` at or beyond this index are holes (the file was truncated).
        base_floor: u64,
        pages: BTreeMap<u64, PageState>,
    },
    Dir {
        listing: Hamt,
        changes: BTreeMap<String, Slot>,
        count: u64,
        /// Names of `listing` resolved so far (looked up, or listed by `readdir`) and their
        /// inodes, so a path walked again (`stat` then `metadata-hash` of the same path, or
        /// every file below one directory) skips hashing the name and walking the trie.
        /// Valid for the inode's whole life in the transaction: a directory's `listing` never
        /// changes before the commit, and `changes` is consulted first.
        seen: HashMap<Box<str>, Ino>,
    },
    Symlink(String),
}

struct Inode {
    /// None for the root and for unlinked inodes still reachable through a descriptor.
    parent: Option<Ino>,
    name: String,
    meta: Meta,
    dirty: bool,
    orig: Option<(Hash, Agg)>,
    body: Body,
}

impl Inode {
    fn kind(&self) -> Kind {
        match self.body {
            Body::File { .. } => Kind::File,
            Body::Dir { .. } => Kind::Dir,
            Body::Symlink(_) => Kind::Symlink,
        }
    }
}

/// A transaction over one workspace (or a read-only view of one version).
/// The largest directory whose children [`Txn::prefetch_children`] reads in one go.
const PREFETCH_MAX: u64 = 4096;

pub struct Txn {
    store: Store,
    workspace: Option<String>,
    base: VersionRow,
    inodes: HashMap<Ino, Inode>,
    /// Entries listed by `readdir` but not loaded yet: inode -> (parent, entry).
    listed: HashMap<Ino, (Ino, Entry)>,
    /// Children loaded by name so far, per directory (the second one prefetches the rest).
    misses: HashMap<Ino, u32>,
    next_ino: u64,
    /// Bytes and entries (excluding the root) of the tree as it stands in this transaction.
    usage: Agg,
    quota: Quota,
    mem_bytes: usize,
    message: String,
    /// Events written with the commit, before its own (e.g. the call's network requests).
    events: Vec<(String, String)>,
    /// The GC sweep fence as read before this transaction's first put to object storage,
    /// and the pages it put there before its commit (see [`crate::gc`]).
    fence: Option<crate::gc::SweepState>,
    spilled: Vec<Hash>,
    /// Spills still uploading: the commit waits for them before its catalog write.
    behind: Vec<crate::backend::PutTicket>,
    /// When the head moved meanwhile, merge onto it instead of failing
    /// ([`Txn::merge_if_moved`]).
    concurrent: bool,
    /// The time every change of this transaction stamps on the nodes it touches instead of
    /// the clock's (a deterministic call: [`Txn::set_time`]).
    time: Option<i64>,
}

fn check_name(name: &str) -> Result<()> {
    if name.len() > NAME_MAX {
        return Err(Error::NameTooLong);
    }
    if name == SYSTEM_DIR {
        return Ok(());
    }
    if name.is_empty() || name.contains('\0') || name.contains('/') {
        return Err(Error::Invalid("bad file name"));
    }
    Ok(())
}

fn page_count(size: u64) -> u64 {
    size.div_ceil(PAGE_SIZE as u64)
}

impl Txn {
    pub(crate) fn new(
        store: Store,
        workspace: Option<String>,
        base: VersionRow,
        quota: Quota,
    ) -> Result<Txn> {
        let root = store.objs().node(&base.root)?;
        let (meta, listing) = match &*root {
            Node::Dir { meta, listing } => (*meta, listing.clone()),
            _ => return Err(Error::Corrupt("version root is not a directory".into())),
        };
        let count = hamt::count(&listing);
        let agg = hamt::agg(&listing);
        let mut inodes = HashMap::default();
        inodes.insert(
            ROOT_INO,
            Inode {
                parent: None,
                name: String::new(),
                meta,
                dirty: false,
                orig: Some((
                    base.root,
                    Agg {
                        bytes: agg.bytes,
                        entries: agg.entries + 1,
                    },
                )),
                body: Body::Dir {
                    listing,
                    changes: BTreeMap::new(),
                    count,
                    seen: HashMap::default(),
                },
            },
        );
        Ok(Txn {
            store,
            workspace,
            next_ino: base.next_ino,
            usage: agg,
            base,
            inodes,
            listed: HashMap::default(),
            misses: HashMap::default(),
            quota,
            mem_bytes: 0,
            message: String::new(),
            events: Vec::new(),
            fence: None,
            spilled: Vec::new(),
            behind: Vec::new(),
            concurrent: false,
            time: None,
        })
    }

    /// Lets the commit merge onto the workspace's head when another commit moved it since
    /// this transaction began (concurrent calls on one session): paths only one of them
    /// touched merge silently; a path both changed takes this transaction's state (the later
    /// write wins, as on a real filesystem), listed in a `concurrent` event committed with
    /// it. Without it, such a commit fails with [`Error::Conflict`].
    pub fn merge_if_moved(&mut self) {
        self.concurrent = true;
    }

    /// Stamps `ns` (nanoseconds since the Unix epoch) as the access, change and modification
    /// time of everything this transaction changes, instead of the clock's time: a
    /// deterministic call's changes then hash the same whenever it is replayed.
    pub fn set_time(&mut self, ns: i64) {
        self.time = Some(ns);
    }

    /// The inode number the next file this transaction creates gets.
    pub fn next_ino(&self) -> u64 {
        self.next_ino
    }

    /// Numbers the files this transaction creates from `n` on, which no inode of the tree may
    /// have reached: a replayed call numbers its files as the call did when it was recorded
    /// (a checkout keeps the higher number of the two versions, so its tree's own number is
    /// not the one the call started from).
    pub fn set_next_ino(&mut self, n: u64) {
        self.next_ino = n;
    }

    /// The time a change made now stamps on its nodes.
    fn now(&self) -> i64 {
        self.time.unwrap_or_else(now_ns)
    }

    /// The version this transaction started from.
    pub fn base(&self) -> VersionId {
        self.base.id
    }

    /// The workspace this transaction commits to (None for a read-only view).
    pub fn workspace(&self) -> Option<&str> {
        self.workspace.as_deref()
    }

    /// Bytes of regular files and number of entries in the tree as it stands now.
    pub fn usage(&self) -> (u64, u64) {
        (self.usage.bytes, self.usage.entries)
    }

    /// Sets the message recorded with the version this transaction commits.
    pub fn set_message(&mut self, message: impl Into<String>) {
        self.message = message.into();
    }

    /// Queues an event to be written with this transaction's commit (in the same SQLite
    /// transaction when it changed the tree), before the commit's own event. Dropped with a
    /// rolled-back transaction.
    pub fn add_event(&mut self, kind: &str, data: &str) {
        self.events.push((kind.to_string(), data.to_string()));
    }

    /// Has anything changed since the transaction began?
    pub fn is_dirty(&self) -> bool {
        self.inodes.get(&ROOT_INO).is_some_and(|r| r.dirty)
    }

    fn writable(&self) -> Result<()> {
        if self.workspace.is_none() {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    /// Loads an inode known only from a directory listing.
    fn ensure(&mut self, ino: Ino) -> Result<()> {
        if !self.inodes.contains_key(&ino)
            && let Some((parent, e)) = self.listed.remove(&ino)
        {
            self.prefetch_children(parent)?;
            self.load(&e, parent)?;
        }
        Ok(())
    }

    fn inode(&self, ino: Ino) -> Result<&Inode> {
        self.inodes.get(&ino).ok_or(Error::Invalid("unknown inode"))
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        self.inodes
            .get_mut(&ino)
            .ok_or(Error::Invalid("unknown inode"))
    }

    fn load(&mut self, e: &Entry, parent: Ino) -> Result<Ino> {
        let node = self.store.objs().node(&e.node)?;
        let body = match &*node {
            Node::File { size, pages, .. } => Body::File {
                size: *size,
                base: *pages,
                base_floor: u64::MAX,
                pages: BTreeMap::new(),
            },
            Node::Dir { listing, .. } => Body::Dir {
                count: hamt::count(listing),
                listing: listing.clone(),
                changes: BTreeMap::new(),
                seen: HashMap::default(),
            },
            Node::Symlink { target, .. } => Body::Symlink(target.clone()),
            _ => {
                return Err(Error::Corrupt(format!(
                    "entry {} names a non-inode",
                    e.name
                )));
            }
        };
        let meta = *node
            .meta()
            .ok_or(Error::Corrupt("node without metadata".into()))?;
        self.inodes.insert(
            e.ino,
            Inode {
                parent: Some(parent),
                name: e.name.clone(),
                meta,
                dirty: false,
                orig: Some((e.node, e.agg)),
                body,
            },
        );
        Ok(e.ino)
    }

    /// Marks `ino` changed and records it in each ancestor's changes up to the root.
    fn mark_dirty(&mut self, ino: Ino) {
        let mut cur = ino;
        loop {
            let Some(node) = self.inodes.get_mut(&cur) else {
                return;
            };
            node.dirty = true;
            let Some(parent) = node.parent else { return };
            let name = node.name.clone();
            let Some(p) = self.inodes.get_mut(&parent) else {
                return;
            };
            if let Body::Dir { changes, .. } = &mut p.body {
                let already = matches!(changes.get(&name), Some(Slot::Live(i)) if *i == cur);
                if already && p.dirty {
                    return;
                }
                changes.insert(name, Slot::Live(cur));
            }
            cur = parent;
        }
    }

    fn touch_dir(&mut self, dir: Ino) {
        let now = self.now();
        if let Some(d) = self.inodes.get_mut(&dir) {
            d.meta.mtime = now;
            d.meta.ctime = now;
        }
        self.mark_dirty(dir);
    }

    /// Looks up one name in a directory (`.` and `..` included; `..` of the root is the root).
    pub fn lookup(&mut self, dir: Ino, name: &str) -> Result<Ino> {
        self.ensure(dir)?;
        let d = self.inode(dir)?;
        let Body::Dir {
            listing,
            changes,
            seen,
            ..
        } = &d.body
        else {
            return Err(Error::NotDir);
        };
        match name {
            "." | "" => return Ok(dir),
            ".." => return Ok(d.parent.unwrap_or(dir)),
            _ => {}
        }
        check_name(name)?;
        match changes.get(name) {
            Some(Slot::Removed) => return Err(Error::NotFound),
            Some(Slot::Live(i)) => return Ok(*i),
            None => {}
        }
        if let Some(&ino) = seen.get(name) {
            if self.inodes.contains_key(&ino) {
                return Ok(ino);
            }
            if self.listed.contains_key(&ino) {
                self.ensure(ino)?;
                return Ok(ino);
            }
        }
        let found = hamt::get(&Pending::default(), self.store.objs(), listing, name)?;
        let ino = match found {
            None => return Err(Error::NotFound),
            Some(e) if self.inodes.contains_key(&e.ino) => e.ino,
            Some(e) => {
                self.listed.remove(&e.ino);
                self.prefetch_children(dir)?;
                self.load(&e, dir)?
            }
        };
        if let Ok(Inode {
            body: Body::Dir { seen, .. },
            ..
        }) = self.inode_mut(dir)
        {
            seen.insert(name.into(), ino);
        }
        Ok(ino)
    }

    /// On the second child of `dir` loaded by name, reads every child's node in one batch:
    /// a walk (status, find, grep -r) would otherwise make one query per file.
    fn prefetch_children(&mut self, dir: Ino) -> Result<()> {
        let n = self.misses.entry(dir).or_insert(0);
        *n += 1;
        if *n != 2 {
            return Ok(());
        }
        let Ok(Inode {
            body: Body::Dir { listing, count, .. },
            ..
        }) = self.inode(dir)
        else {
            return Ok(());
        };
        if *count > PREFETCH_MAX {
            return Ok(());
        }
        let mut entries = Vec::new();
        hamt::entries(
            &Pending::default(),
            self.store.objs(),
            listing,
            &mut entries,
        )?;
        let hashes: Vec<Hash> = entries.iter().map(|e| e.node).collect();
        self.store.objs().prefetch(&hashes)
    }

    /// Resolves `path` relative to directory `start` (absolute paths start at the workspace
    /// root). Symlinks are followed in every component, and in the last one if `follow`.
    /// `..` never climbs above the root.
    pub fn resolve(&mut self, start: Ino, path: &str, follow: bool) -> Result<Ino> {
        if path.len() > PATH_MAX {
            return Err(Error::NameTooLong);
        }
        if path.is_empty() {
            return Err(Error::NotFound);
        }
        self.ensure(start)?;
        let mut cur = if path.starts_with('/') {
            ROOT_INO
        } else {
            start
        };
        // Components still to walk: those of symlink targets met so far (a stack, innermost
        // first), then the unread rest of `path`, read in place.
        let mut todo: Vec<String> = Vec::new();
        let mut rest = path;
        let mut links = 0;
        loop {
            let owned;
            let comp = match todo.pop() {
                Some(c) => {
                    owned = c;
                    owned.as_str()
                }
                None => {
                    rest = rest.trim_start_matches('/');
                    if rest.is_empty() {
                        break;
                    }
                    let (c, r) = rest.split_once('/').unwrap_or((rest, ""));
                    rest = r;
                    c
                }
            };
            let next = self.lookup(cur, comp)?;
            let is_last = todo.is_empty() && rest.trim_start_matches('/').is_empty();
            if let Body::Symlink(target) = &self.inode(next)?.body
                && (!is_last || follow)
            {
                links += 1;
                if links > SYMLINK_MAX {
                    return Err(Error::Loop);
                }
                let target = target.clone();
                if target.starts_with('/') {
                    cur = ROOT_INO;
                    todo.extend(self.store.absolute_target(&target).into_iter().rev());
                } else {
                    todo.extend(
                        target
                            .split('/')
                            .filter(|c| !c.is_empty())
                            .rev()
                            .map(String::from),
                    );
                }
                continue;
            }
            cur = next;
        }
        Ok(cur)
    }

    /// Splits `path` into its parent directory (resolved, following symlinks) and last name.
    fn parent_of(&mut self, start: Ino, path: &str) -> Result<(Ino, String)> {
        if path.len() > PATH_MAX {
            return Err(Error::NameTooLong);
        }
        let trimmed = path.trim_end_matches('/');
        if trimmed.is_empty() {
            return Err(if path.is_empty() {
                Error::NotFound
            } else {
                Error::Invalid("the root has no parent")
            });
        }
        let (dir, name) = match trimmed.rfind('/') {
            Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
            None => ("", trimmed),
        };
        if name == "." || name == ".." {
            return Err(Error::Invalid("'.' or '..' as the last component"));
        }
        check_name(name)?;
        let d = if dir.is_empty() {
            start
        } else {
            self.resolve(start, dir, true)?
        };
        if !matches!(self.inode(d)?.body, Body::Dir { .. }) {
            return Err(Error::NotDir);
        }
        Ok((d, name.to_string()))
    }

    /// Number of directories between the root and `ino` (0 for the root); `NotFound` if the
    /// inode has been unlinked.
    pub fn depth(&mut self, ino: Ino) -> Result<usize> {
        self.ensure(ino)?;
        let mut depth = 0;
        let mut cur = ino;
        while cur != ROOT_INO {
            cur = self.inode(cur)?.parent.ok_or(Error::NotFound)?;
            depth += 1;
        }
        Ok(depth)
    }

    /// Attributes of an inode.
    pub fn stat(&mut self, ino: Ino) -> Result<Stat> {
        self.ensure(ino)?;
        let n = self.inode(ino)?;
        let size = match &n.body {
            Body::File { size, .. } => *size,
            Body::Dir { count, .. } => *count,
            Body::Symlink(t) => t.len() as u64,
        };
        Ok(Stat {
            kind: n.kind(),
            ino,
            size,
            mode: n.meta.mode,
            nlink: 1,
            atime: n.meta.atime,
            mtime: n.meta.mtime,
            ctime: n.meta.ctime,
        })
    }

    /// [`Txn::stat`] of a path.
    pub fn stat_at(&mut self, dir: Ino, path: &str, follow: bool) -> Result<Stat> {
        let ino = self.resolve(dir, path, follow)?;
        self.stat(ino)
    }

    /// Is `ino` part of the tree (not unlinked, nor inside an unlinked directory)?
    fn attached(&self, ino: Ino) -> bool {
        let mut cur = ino;
        loop {
            if cur == ROOT_INO {
                return true;
            }
            match self.inodes.get(&cur).and_then(|n| n.parent) {
                Some(p) => cur = p,
                None => return false,
            }
        }
    }

    fn check_entries(&self, add: u64) -> Result<()> {
        if let Some(limit) = self.quota.entries {
            let would_be = self.usage.entries + add;
            if would_be > limit {
                return Err(Error::QuotaExceeded {
                    what: "entries",
                    would_be,
                    limit,
                });
            }
        }
        Ok(())
    }

    fn check_bytes(&self, grow: u64) -> Result<()> {
        if let Some(limit) = self.quota.bytes {
            let would_be = self.usage.bytes + grow;
            if grow > 0 && would_be > limit {
                return Err(Error::QuotaExceeded {
                    what: "bytes",
                    would_be,
                    limit,
                });
            }
        }
        Ok(())
    }

    fn create(&mut self, dir: Ino, name: &str, body: Body, mode: u32) -> Result<Ino> {
        self.writable()?;
        if !self.attached(dir) {
            // Creating inside a removed directory (reached through an open descriptor).
            return Err(Error::NotFound);
        }
        self.check_entries(1)?;
        let ino = self.next_ino;
        self.next_ino += 1;
        let now = self.now();
        self.inodes.insert(
            ino,
            Inode {
                parent: Some(dir),
                name: name.to_string(),
                meta: Meta {
                    mode,
                    atime: now,
                    mtime: now,
                    ctime: now,
                },
                dirty: true,
                orig: None,
                body,
            },
        );
        if let Body::Dir { count, .. } = &mut self.inode_mut(dir)?.body {
            *count += 1;
        }
        self.usage.entries += 1;
        self.mark_dirty(ino);
        self.touch_dir(dir);
        Ok(ino)
    }

    /// Opens (and with `flags.create`, creates) the file at `path`; returns its inode.
    pub fn open_at(&mut self, dir: Ino, path: &str, flags: OpenFlags, follow: bool) -> Result<Ino> {
        let found = match self.resolve(dir, path, follow) {
            Ok(ino) => Some(ino),
            Err(Error::NotFound) if flags.create => None,
            Err(e) => return Err(e),
        };
        let ino = match found {
            Some(ino) => {
                if flags.create && flags.exclusive {
                    return Err(Error::Exists);
                }
                ino
            }
            None => {
                let (parent, name) = self.parent_of(dir, path)?;
                match self.lookup(parent, &name) {
                    // A dangling symlink: creating through it is not supported.
                    Ok(_) => return Err(Error::NotFound),
                    Err(Error::NotFound) => {}
                    Err(e) => return Err(e),
                }
                if path.ends_with('/') {
                    return Err(Error::IsDir);
                }
                return self.create(parent, &name, Self::empty_file(), 0o644);
            }
        };
        let kind = self.inode(ino)?.kind();
        if flags.directory && kind != Kind::Dir {
            return Err(Error::NotDir);
        }
        if path.ends_with('/') && kind != Kind::Dir {
            return Err(Error::NotDir);
        }
        if flags.truncate {
            match kind {
                Kind::Dir => return Err(Error::IsDir),
                Kind::File => self.set_size(ino, 0)?,
                Kind::Symlink => return Err(Error::Loop),
            }
        }
        if kind == Kind::Symlink {
            // Opening a symlink itself (no follow), as O_NOFOLLOW does.
            return Err(Error::Loop);
        }
        Ok(ino)
    }

    fn empty_file() -> Body {
        Body::File {
            size: 0,
            base: PageRef::EMPTY,
            base_floor: u64::MAX,
            pages: BTreeMap::new(),
        }
    }

    /// Creates a directory at `path` with permission bits 0o755.
    pub fn mkdir_at(&mut self, dir: Ino, path: &str) -> Result<Ino> {
        let trimmed = path.trim_end_matches('/');
        if trimmed.ends_with("/.") || trimmed.ends_with("/..") || trimmed == "." || trimmed == ".."
        {
            return Err(Error::Exists);
        }
        let (parent, name) = self.parent_of(dir, path)?;
        match self.lookup(parent, &name) {
            Ok(_) => return Err(Error::Exists),
            Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
        let body = Body::Dir {
            listing: Hamt::Bucket(Vec::new()),
            changes: BTreeMap::new(),
            count: 0,
            seen: HashMap::default(),
        };
        self.create(parent, &name, body, 0o755)
    }

    /// Creates a symlink at `path` pointing at `target` (stored as given; resolved inside the
    /// workspace when followed).
    pub fn symlink_at(&mut self, target: &str, dir: Ino, path: &str) -> Result<Ino> {
        if target.is_empty() || target.contains('\0') {
            return Err(Error::Invalid("bad symlink target"));
        }
        if target.len() > PATH_MAX {
            return Err(Error::NameTooLong);
        }
        let (parent, name) = self.parent_of(dir, path)?;
        match self.lookup(parent, &name) {
            Ok(_) => return Err(Error::Exists),
            Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
        self.create(parent, &name, Body::Symlink(target.to_string()), 0o777)
    }

    /// The target of the symlink at `path`.
    pub fn readlink_at(&mut self, dir: Ino, path: &str) -> Result<String> {
        let ino = self.resolve(dir, path, false)?;
        match &self.inode(ino)?.body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => Err(Error::Invalid("not a symlink")),
        }
    }

    /// Hard links are not supported by this store.
    pub fn link_at(&mut self, _dir: Ino, _old: &str, _new_dir: Ino, _new: &str) -> Result<()> {
        Err(Error::Unsupported("hard links"))
    }

    /// Entries of a directory, sorted by name (`.` and `..` not included). An entry's `ino`
    /// is its identity; operations by inode need it looked up first ([`Txn::lookup`] of the
    /// name), which loads it into the transaction.
    pub fn readdir(&mut self, dir: Ino) -> Result<Vec<DirEntry>> {
        self.ensure(dir)?;
        let d = self.inode(dir)?;
        let Body::Dir {
            listing, changes, ..
        } = &d.body
        else {
            return Err(Error::NotDir);
        };
        let mut base = Vec::new();
        hamt::entries(&Pending::default(), self.store.objs(), listing, &mut base)?;
        base.retain(|e| !changes.contains_key(&e.name));
        let mut out: Vec<DirEntry> = Vec::with_capacity(base.len() + changes.len());
        for (name, slot) in changes {
            if let Slot::Live(ino) = slot {
                out.push(DirEntry {
                    name: name.clone(),
                    kind: self.inode(*ino)?.kind(),
                    ino: *ino,
                });
            }
        }
        let mut names = Vec::with_capacity(base.len());
        for e in base {
            out.push(DirEntry {
                name: e.name.clone(),
                kind: e.kind,
                ino: e.ino,
            });
            names.push((Box::<str>::from(e.name.as_str()), e.ino));
            if !self.inodes.contains_key(&e.ino) {
                self.listed.insert(e.ino, (dir, e));
            }
        }
        if let Body::Dir { seen, .. } = &mut self.inode_mut(dir)?.body {
            seen.extend(names);
        }
        out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Page `idx` as stored (spilled or in the base version); `None` for a hole. Pages held
    /// in memory are the caller's to check first.
    fn stored_page(
        &self,
        base: PageRef,
        base_floor: u64,
        pages: &BTreeMap<u64, PageState>,
        idx: u64,
    ) -> Result<Option<Arc<Vec<u8>>>> {
        let objs = self.store.objs();
        let h = match pages.get(&idx) {
            Some(PageState::Mem(_)) => return Err(Error::Corrupt("page is in memory".into())),
            Some(PageState::Stored(h)) => *h,
            None if idx >= base_floor => Hash::ZERO,
            None => pagetable::lookup(&Pending::default(), objs, base, idx)?,
        };
        if h.is_zero() {
            return Ok(None);
        }
        Ok(Some(objs.page(&h)?))
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns the number read (0 at end of file).
    pub fn read(&mut self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.ensure(ino)?;
        let n = self.inode(ino)?;
        let Body::File {
            size,
            base,
            base_floor,
            pages,
        } = &n.body
        else {
            return Err(match n.body {
                Body::Dir { .. } => Error::IsDir,
                _ => Error::Invalid("not a regular file"),
            });
        };
        if offset >= *size {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(size - offset) as usize;
        let mut done = 0;
        while done < want {
            let pos = offset + done as u64;
            let idx = pos / PAGE_SIZE as u64;
            let within = (pos % PAGE_SIZE as u64) as usize;
            let take = (PAGE_SIZE - within).min(want - done);
            let dst = &mut buf[done..done + take];
            match pages.get(&idx) {
                Some(PageState::Mem(v)) => copy_page(v, within, dst),
                _ => match self.stored_page(*base, *base_floor, pages, idx)? {
                    Some(p) => copy_page(&p, within, dst),
                    None => dst.fill(0),
                },
            }
            done += take;
        }
        Ok(done)
    }

    /// The whole content of a regular file.
    pub fn read_all(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let size = self.stat(ino)?.size;
        let mut buf = vec![0; size as usize];
        let n = self.read(ino, 0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// A mutable in-memory copy of page `idx` of file `ino`.
    fn page_mut(&mut self, ino: Ino, idx: u64) -> Result<&mut Vec<u8>> {
        let needs_load = match &self.inode(ino)?.body {
            Body::File { pages, .. } => !matches!(pages.get(&idx), Some(PageState::Mem(_))),
            _ => return Err(Error::IsDir),
        };
        if needs_load {
            let data = match &self.inode(ino)?.body {
                Body::File {
                    base,
                    base_floor,
                    pages,
                    ..
                } => self
                    .stored_page(*base, *base_floor, pages, idx)?
                    .map(|p| p.as_ref().clone())
                    .unwrap_or_else(|| Vec::with_capacity(PAGE_SIZE)),
                _ => Vec::new(),
            };
            self.mem_bytes += PAGE_SIZE;
            if let Body::File { pages, .. } = &mut self.inode_mut(ino)?.body {
                pages.insert(idx, PageState::Mem(data));
            }
        }
        match &mut self.inode_mut(ino)?.body {
            Body::File { pages, .. } => match pages.get_mut(&idx) {
                Some(PageState::Mem(v)) => Ok(v),
                _ => Err(Error::Corrupt("page vanished".into())),
            },
            _ => Err(Error::IsDir),
        }
    }

    fn file_size(&mut self, ino: Ino) -> Result<u64> {
        self.ensure(ino)?;
        match &self.inode(ino)?.body {
            Body::File { size, .. } => Ok(*size),
            Body::Dir { .. } => Err(Error::IsDir),
            Body::Symlink(_) => Err(Error::Invalid("not a regular file")),
        }
    }

    /// Writes `data` at `offset` (extending the file, leaving a hole if `offset` is past the
    /// end); returns the number of bytes written.
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.writable()?;
        let size = self.file_size(ino)?;
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e <= FILE_MAX)
            .ok_or(Error::FileTooLarge)?;
        let attached = self.attached(ino);
        if attached {
            self.check_bytes(end.saturating_sub(size))?;
        }
        if data.is_empty() {
            return Ok(0);
        }
        let mut done = 0;
        while done < data.len() {
            let pos = offset + done as u64;
            let idx = pos / PAGE_SIZE as u64;
            let within = (pos % PAGE_SIZE as u64) as usize;
            let take = (PAGE_SIZE - within).min(data.len() - done);
            let page = self.page_mut(ino, idx)?;
            if page.len() < within + take {
                page.resize(within + take, 0);
            }
            page[within..within + take].copy_from_slice(&data[done..done + take]);
            done += take;
        }
        let now = self.now();
        let n = self.inode_mut(ino)?;
        if let Body::File { size, .. } = &mut n.body {
            *size = (*size).max(end);
        }
        n.meta.mtime = now;
        n.meta.ctime = now;
        if attached {
            self.usage.bytes += end.saturating_sub(size);
        }
        self.mark_dirty(ino);
        if self.mem_bytes > SPILL_BYTES {
            self.spill()?;
        }
        Ok(data.len())
    }

    /// Sets a file's size (truncating or extending with a hole).
    pub fn set_size(&mut self, ino: Ino, new: u64) -> Result<()> {
        self.writable()?;
        let size = self.file_size(ino)?;
        if new > FILE_MAX {
            return Err(Error::FileTooLarge);
        }
        let attached = self.attached(ino);
        if attached {
            self.check_bytes(new.saturating_sub(size))?;
        }
        if new < size {
            let keep = page_count(new);
            let partial = (new % PAGE_SIZE as u64) as usize;
            if partial != 0 {
                let page = self.page_mut(ino, keep - 1)?;
                page.truncate(partial);
            }
            if let Body::File {
                pages, base_floor, ..
            } = &mut self.inode_mut(ino)?.body
            {
                // The partial last page now lives in `pages`; base pages from `keep` on are
                // holes from here on, even if the file grows again.
                pages.retain(|i, _| *i < keep);
                *base_floor = (*base_floor).min(keep);
            }
        }
        let now = self.now();
        let n = self.inode_mut(ino)?;
        if let Body::File { size: s, .. } = &mut n.body {
            *s = new;
        }
        n.meta.mtime = now;
        n.meta.ctime = now;
        if attached {
            self.usage.bytes = self.usage.bytes - size + new;
        }
        self.mark_dirty(ino);
        Ok(())
    }

    /// Sets access and/or modification times.
    pub fn set_times(
        &mut self,
        ino: Ino,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<()> {
        self.writable()?;
        self.ensure(ino)?;
        let now = self.now();
        let n = self.inode_mut(ino)?;
        let pick = |t: SetTime| match t {
            SetTime::Now => now,
            SetTime::At(v) => v,
        };
        if let Some(a) = atime {
            n.meta.atime = pick(a);
        }
        if let Some(m) = mtime {
            n.meta.mtime = pick(m);
        }
        n.meta.ctime = now;
        self.mark_dirty(ino);
        Ok(())
    }

    /// Sets permission bits (the low 12 bits are kept).
    pub fn set_mode(&mut self, ino: Ino, mode: u32) -> Result<()> {
        self.writable()?;
        self.ensure(ino)?;
        let now = self.now();
        let n = self.inode_mut(ino)?;
        n.meta.mode = mode & 0o7777;
        n.meta.ctime = now;
        self.mark_dirty(ino);
        Ok(())
    }

    /// Removes the entry `name` from `dir`, adjusting counts and usage; the inode stays
    /// readable through descriptors that hold it.
    fn detach(&mut self, dir: Ino, name: &str, child: Ino) -> Result<()> {
        let c = self.inode_mut(child)?;
        c.parent = None;
        let freed = match &c.body {
            Body::File { size, .. } => *size,
            _ => 0,
        };
        if let Body::Dir { changes, count, .. } = &mut self.inode_mut(dir)?.body {
            changes.insert(name.to_string(), Slot::Removed);
            *count -= 1;
        }
        self.usage.bytes -= freed;
        self.usage.entries -= 1;
        self.touch_dir(dir);
        Ok(())
    }

    /// Removes a file or symlink.
    pub fn unlink_at(&mut self, dir: Ino, path: &str) -> Result<()> {
        self.writable()?;
        let (parent, name) = self.parent_of(dir, path)?;
        let child = self.lookup(parent, &name)?;
        if self.inode(child)?.kind() == Kind::Dir {
            return Err(Error::IsDir);
        }
        if path.ends_with('/') {
            return Err(Error::NotDir);
        }
        self.detach(parent, &name, child)
    }

    /// Removes an empty directory.
    pub fn rmdir_at(&mut self, dir: Ino, path: &str) -> Result<()> {
        self.writable()?;
        let (parent, name) = self.parent_of(dir, path)?;
        let child = self.lookup(parent, &name)?;
        match &self.inode(child)?.body {
            Body::Dir { count, .. } if *count > 0 => return Err(Error::NotEmpty),
            Body::Dir { .. } => {}
            _ => return Err(Error::NotDir),
        }
        self.detach(parent, &name, child)
    }

    /// Renames `from` (relative to `from_dir`) to `to` (relative to `to_dir`), atomically
    /// replacing an existing file or empty directory at `to`.
    pub fn rename_at(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        self.writable()?;
        let (sp, sname) = self.parent_of(from_dir, from)?;
        let src = self.lookup(sp, &sname)?;
        let (dp, dname) = self.parent_of(to_dir, to)?;
        let src_kind = self.inode(src)?.kind();
        if (from.ends_with('/') || to.ends_with('/')) && src_kind != Kind::Dir {
            return Err(Error::NotDir);
        }
        // Moving a directory into its own subtree.
        if src_kind == Kind::Dir {
            let mut cur = Some(dp);
            while let Some(c) = cur {
                if c == src {
                    return Err(Error::Invalid("cannot move a directory into itself"));
                }
                cur = self.inode(c)?.parent;
            }
        }
        match self.lookup(dp, &dname) {
            Ok(dst) if dst == src => return Ok(()),
            Ok(dst) => {
                // Renaming onto one's own ancestor: Linux answers ENOTEMPTY whatever the kinds.
                let mut cur = self.inode(src)?.parent;
                while let Some(c) = cur {
                    if c == dst {
                        return Err(Error::NotEmpty);
                    }
                    cur = self.inode(c)?.parent;
                }
                let dst_kind = self.inode(dst)?.kind();
                match (src_kind, dst_kind) {
                    (Kind::Dir, Kind::Dir) => {
                        if let Body::Dir { count, .. } = &self.inode(dst)?.body
                            && *count > 0
                        {
                            return Err(Error::NotEmpty);
                        }
                    }
                    (Kind::Dir, _) => return Err(Error::NotDir),
                    (_, Kind::Dir) => return Err(Error::IsDir),
                    _ => {}
                }
                self.detach(dp, &dname, dst)?;
            }
            Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
        if let Body::Dir { changes, count, .. } = &mut self.inode_mut(sp)?.body {
            changes.insert(sname.clone(), Slot::Removed);
            *count -= 1;
        }
        if let Body::Dir { count, .. } = &mut self.inode_mut(dp)?.body {
            *count += 1;
        }
        let now = self.now();
        let s = self.inode_mut(src)?;
        s.parent = Some(dp);
        s.name = dname;
        s.meta.ctime = now;
        self.mark_dirty(src);
        self.touch_dir(sp);
        self.touch_dir(dp);
        Ok(())
    }

    /// Moves in-memory pages of every dirty file to the database to bound memory.
    fn spill(&mut self) -> Result<()> {
        let mut pending = Pending::default();
        let (mut slots, mut data) = (Vec::new(), Vec::new());
        for n in self.inodes.values_mut() {
            if let Body::File { pages, .. } = &mut n.body {
                for st in pages.values_mut() {
                    if let PageState::Mem(v) = st {
                        data.push(std::mem::take(v));
                        slots.push(st);
                    }
                }
            }
        }
        for (st, h) in slots.into_iter().zip(pending.put_pages(data)) {
            *st = PageState::Stored(h);
        }
        if !self.store.colocated() && self.fence.is_none() {
            self.fence = self.store.sweep_state()?;
        }
        let list = pending.list();
        // The import goes on while the pages upload; the commit waits for them.
        self.behind
            .push(self.store.objs().store.put_many_behind(&list)?);
        if self.fence.is_some() {
            self.spilled.extend(list.iter().map(|o| o.hash));
        }
        drop(list);
        pending.publish(self.store.objs());
        self.mem_bytes = 0;
        Ok(())
    }

    /// Writes the changed subtree under `ino`; returns its node hash and aggregates.
    fn flush(&mut self, ino: Ino, pending: &mut Pending) -> Result<(Hash, Agg)> {
        let store = self.store.clone();
        let objs = store.objs();
        let n = self.inode_mut(ino)?;
        if !n.dirty {
            return n
                .orig
                .ok_or(Error::Corrupt("clean inode without origin".into()));
        }
        let meta = n.meta;
        match &mut n.body {
            Body::File {
                size,
                base,
                base_floor,
                pages,
            } => {
                let (size, base, floor) = (*size, *base, *base_floor);
                let mut dirty = BTreeMap::new();
                // The transaction ends with this commit, so pages are moved, not copied.
                for (i, st) in std::mem::take(pages) {
                    let h = match st {
                        PageState::Mem(v) => pending.put_page(v),
                        PageState::Stored(h) => h,
                    };
                    dirty.insert(i, h);
                }
                let mut table = base;
                if floor != u64::MAX {
                    table = pagetable::update(pending, objs, table, floor, &BTreeMap::new())?;
                }
                let table = pagetable::update(pending, objs, table, page_count(size), &dirty)?;
                let h = pending.put_node(Node::File {
                    meta,
                    size,
                    pages: table,
                });
                Ok((
                    h,
                    Agg {
                        bytes: size,
                        entries: 1,
                    },
                ))
            }
            Body::Symlink(t) => {
                let h = pending.put_node(Node::Symlink {
                    meta,
                    target: t.clone(),
                });
                Ok((
                    h,
                    Agg {
                        bytes: 0,
                        entries: 1,
                    },
                ))
            }
            Body::Dir {
                listing, changes, ..
            } => {
                let mut listing = listing.clone();
                let work: Vec<(String, Option<Ino>)> = changes
                    .iter()
                    .map(|(k, s)| {
                        (
                            k.clone(),
                            match s {
                                Slot::Removed => None,
                                Slot::Live(i) => Some(*i),
                            },
                        )
                    })
                    .collect();
                for (name, slot) in work {
                    match slot {
                        None => listing = hamt::remove(pending, objs, &listing, 0, &name)?,
                        Some(child) => {
                            let (h, agg) = self.flush(child, pending)?;
                            let kind = self.inode(child)?.kind();
                            let e = Entry {
                                name,
                                kind,
                                ino: child,
                                node: h,
                                agg,
                            };
                            listing = hamt::insert(pending, objs, &listing, 0, e)?;
                        }
                    }
                }
                let agg = hamt::agg(&listing);
                let h = pending.put_node(Node::Dir { meta, listing });
                Ok((
                    h,
                    Agg {
                        bytes: agg.bytes,
                        entries: agg.entries + 1,
                    },
                ))
            }
        }
    }

    // ----- grafts between versions (merge) -----

    /// The stored content of the file `ino` as the page table it was loaded with: its size,
    /// pages and permission bits, or None when this transaction changed its bytes (or it is
    /// not a regular file). Another transaction of the same store can graft it without
    /// copying a byte ([`Txn::graft_file`]).
    pub(crate) fn stored_content(&mut self, ino: Ino) -> Result<Option<(u64, PageRef, u32)>> {
        self.ensure(ino)?;
        let n = self.inode(ino)?;
        Ok(match &n.body {
            Body::File {
                size,
                base,
                base_floor,
                pages,
            } if pages.is_empty() && *base_floor == u64::MAX => Some((*size, *base, n.meta.mode)),
            _ => None,
        })
    }

    /// Creates or replaces the regular file at `path` (relative to the root; missing parents
    /// are made) with stored content: `size` bytes in the page table `pages`, which must be
    /// this store's. A file or symlink in the way is replaced; a directory is not (`IsDir`).
    pub(crate) fn graft_file(
        &mut self,
        path: &str,
        size: u64,
        pages: PageRef,
        mode: u32,
    ) -> Result<Ino> {
        self.writable()?;
        let (dir, name) = match path.rsplit_once('/') {
            Some((d, n)) => (self.mkdir_all(d)?, n.to_string()),
            None => (ROOT_INO, path.to_string()),
        };
        check_name(&name)?;
        match self.lookup(dir, &name) {
            Ok(old) => {
                if self.inode(old)?.kind() == Kind::Dir {
                    return Err(Error::IsDir);
                }
                self.detach(dir, &name, old)?;
            }
            Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
        self.check_bytes(size)?;
        let body = Body::File {
            size,
            base: pages,
            base_floor: u64::MAX,
            pages: BTreeMap::new(),
        };
        let ino = self.create(dir, &name, body, mode & 0o7777)?;
        self.usage.bytes += size;
        Ok(ino)
    }
}

fn copy_page(page: &[u8], within: usize, dst: &mut [u8]) {
    let avail = page.len().saturating_sub(within).min(dst.len());
    if avail > 0 {
        dst[..avail].copy_from_slice(&page[within..within + avail]);
    }
    dst[avail..].fill(0);
}
