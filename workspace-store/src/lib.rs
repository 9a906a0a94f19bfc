//! burrow-store: a versioned, content-addressed, copy-on-write filesystem in one SQLite file.
//!
//! The model is git's, with a real filesystem's metadata:
//! - file bytes are cut into 64 KiB pages stored once by BLAKE3 hash, across all workspaces;
//! - a file node holds its metadata and a page table (a tree, so a 1-byte write rewrites one
//!   page and O(log n) of table); a directory node holds a hash-array-mapped trie of entries
//!   (so a change in a directory of 100k entries rewrites O(log n));
//! - a [`Version`] is an immutable root hash with a parent; a workspace is a *head*, the only
//!   mutable thing, moved by compare-and-swap; a label names a version;
//! - a [`Txn`] is the only way to change a workspace: it commits one new version atomically, or
//!   changes nothing.
//!
//! Fork is a new head row at the same version: O(1) in time and bytes. Diff compares hashes and
//! descends only where they differ. This crate knows nothing of WebAssembly.
//!
//! ```
//! # fn main() -> burrow_store::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let store = burrow_store::Store::open(dir.path().join("burrow.db"))?;
//! store.create_workspace("main")?;
//! let mut txn = store.begin("main")?;
//! txn.write_file("notes.md", b"hello")?;
//! txn.commit()?;
//! store.fork("main", &["experiment"])?;
//! let mut view = store.begin("experiment")?;
//! assert_eq!(view.read_file("notes.md")?, b"hello");
//! # Ok(()) }
//! ```

mod db;
mod diff;
mod error;
mod fsck;
mod gc;
mod hamt;
mod io;
mod meta;
mod node;
mod objects;
mod pagetable;
mod txn;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use db::VersionRow as Version;
pub use diff::{Change, ChangeKind};
pub use error::{Errno, Error, Result};
pub use fsck::FsckReport;
pub use gc::{GcStats, Retention};
pub use io::ImportStats;
pub use meta::{Event, EventFilter};
pub use node::{Hash, Kind, PAGE_SIZE};
pub use txn::{
    Commit, DirEntry, FILE_MAX, Ino, NAME_MAX, OpenFlags, PATH_MAX, ROOT_INO, SYMLINK_MAX,
    SYSTEM_DIR, SetTime, Stat, Txn, is_system_path,
};

use db::Db;
use node::{Hamt, Meta, Node};
use objects::{Objects, Pending};

/// Identifies a version (one committed state of a workspace tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VersionId(pub i64);

impl std::fmt::Display for VersionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=NORMAL` in WAL mode: a commit survives a process crash; a power loss may
    /// lose the last commits but never corrupts the store. The default.
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit is on disk before `commit` returns.
    Full,
}

/// Options for [`Store::open_with`].
#[derive(Debug, Clone)]
pub struct Options {
    pub durability: Durability,
    /// How long a writer waits for another process's write lock before [`Error::Busy`].
    pub busy_timeout: Duration,
    /// Decoded nodes kept in memory (shared by all transactions and workspaces).
    pub node_cache: usize,
    /// File pages kept in memory (64 KiB each).
    pub page_cache: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(5),
            node_cache: 16_384,
            page_cache: 512,
        }
    }
}

/// Per-workspace limits, checked on every operation that grows the tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Sum of regular file sizes (logical, holes included).
    pub bytes: Option<u64>,
    /// Number of files, directories and symlinks (the root excluded).
    pub entries: Option<u64>,
}

/// A workspace: a named head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub name: String,
    pub version: VersionId,
    /// Nanoseconds since the Unix epoch.
    pub created: i64,
    /// Last commit or event (nanoseconds since the Unix epoch), if any.
    pub last_active: Option<i64>,
    pub quota: Quota,
}

/// Counts of what the store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub objects: u64,
    pub page_bytes: u64,
    pub node_bytes: u64,
    pub versions: u64,
    pub workspaces: u64,
    /// Size of the SQLite file on disk (main file plus WAL).
    pub file_bytes: u64,
}

/// An open store. Cheap to clone; safe to share between threads. Several processes may open
/// the same file: one writes at a time (others wait up to `busy_timeout`, then get
/// [`Error::Busy`]) and readers are never blocked.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    objs: Objects,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store at `path` with default [`Options`].
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path, Options::default())
    }

    /// Opens (creating if needed) the store at `path`.
    pub fn open_with(path: impl AsRef<Path>, opts: Options) -> Result<Store> {
        let path = path.as_ref();
        let db = Db::open(path, opts.durability, opts.busy_timeout)?;
        Ok(Store {
            inner: Arc::new(Inner {
                objs: Objects::new(db, opts.node_cache, opts.page_cache),
                path: path.to_path_buf(),
            }),
        })
    }

    /// The store file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub(crate) fn objs(&self) -> &Objects {
        &self.inner.objs
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.objs.db
    }

    fn write<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let conn = self.db().lock_writer();
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    fn check_workspace_name(name: &str) -> Result<()> {
        if name.is_empty() || name.len() > 200 || name.chars().any(|c| c.is_control()) {
            return Err(Error::Invalid(
                "workspace names are 1-200 printable characters",
            ));
        }
        Ok(())
    }

    /// Creates an empty workspace; returns its first version.
    pub fn create_workspace(&self, name: &str) -> Result<VersionId> {
        Self::check_workspace_name(name)?;
        let now = db::now_ns();
        let mut pending = Pending::default();
        let root = pending.put_node(Node::Dir {
            meta: Meta {
                mode: 0o755,
                atime: now,
                mtime: now,
                ctime: now,
            },
            listing: Hamt::Bucket(Vec::new()),
        });
        let v = self.write(|tx| {
            pending.write(tx)?;
            let v = Db::insert_version(tx, &root, None, name, "create", txn::ROOT_INO + 1, 0, 0)?;
            Db::insert_head(tx, name, v)?;
            Ok(v)
        })?;
        pending.publish(self.objs());
        Ok(v)
    }

    /// Every workspace, by name.
    pub fn workspaces(&self) -> Result<Vec<Workspace>> {
        let rows = self.db().read(Db::heads)?;
        Ok(rows.into_iter().map(to_workspace).collect())
    }

    /// One workspace.
    pub fn workspace(&self, name: &str) -> Result<Workspace> {
        self.db().read(|c| Db::head(c, name)).map(to_workspace)
    }

    /// Deletes a workspace's head. Its versions stay until [`Store::gc`] finds them unreachable.
    pub fn delete_workspace(&self, name: &str) -> Result<()> {
        self.write(|tx| Db::delete_head(tx, name))
    }

    /// Sets a workspace's quota (`None` = unlimited).
    pub fn set_quota(&self, name: &str, quota: Quota) -> Result<()> {
        self.write(|tx| Db::set_quota(tx, name, quota.bytes, quota.entries))
    }

    /// Forks `source` into new workspaces `names`, all at `source`'s current version, in one
    /// SQLite transaction. O(1) per fork whatever the workspace's size; the source is neither
    /// paused nor copied. Forks inherit the source's quota.
    pub fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        for n in names {
            Self::check_workspace_name(n)?;
        }
        self.write(|tx| {
            let head = Db::head(tx, source)?;
            for n in names {
                Db::insert_head(tx, n, head.version)?;
                Db::set_quota(tx, n, head.quota_bytes, head.quota_entries)?;
            }
            Ok(head.version)
        })
    }

    /// Creates a workspace whose head is `version` (a fork of any version, e.g. a label).
    pub fn create_workspace_at(&self, name: &str, version: VersionId) -> Result<()> {
        Self::check_workspace_name(name)?;
        self.write(|tx| {
            Db::version(tx, version)?;
            Db::insert_head(tx, name, version)
        })
    }

    /// Names `version` with a label (replacing a label of the same name).
    pub fn label(&self, name: &str, version: VersionId) -> Result<()> {
        self.write(|tx| {
            Db::version(tx, version)?;
            Db::set_label(tx, name, version)
        })
    }

    /// All labels, by name.
    pub fn labels(&self) -> Result<Vec<(String, VersionId)>> {
        self.db().read(Db::labels)
    }

    /// How many versions each workspace has committed (its own, not those it shares with the
    /// session it was forked from), by workspace: one query for all of them.
    pub fn version_counts(&self) -> Result<std::collections::HashMap<String, u64>> {
        self.db().read(Db::version_counts)
    }

    /// How many versions `workspace` has committed itself (`versions_by_workspace`).
    pub fn version_count(&self, workspace: &str) -> Result<u64> {
        self.db().read(|c| Db::version_count(c, workspace))
    }

    /// Removes a label (its version may then be collected by GC).
    pub fn delete_label(&self, name: &str) -> Result<()> {
        self.write(|tx| Db::delete_label(tx, name))
    }

    /// Moves `workspace` to the tree of `version` by committing a new version with that root
    /// (parent: the current head), so history is never lost and the checkout can be undone.
    pub fn checkout(&self, workspace: &str, version: VersionId) -> Result<VersionId> {
        self.checkout_as(workspace, version, &format!("checkout {version}"))
    }

    /// [`Store::checkout`] recording `message` on the new version.
    pub fn checkout_as(
        &self,
        workspace: &str,
        version: VersionId,
        message: &str,
    ) -> Result<VersionId> {
        self.write(|tx| {
            let head = Db::head(tx, workspace)?;
            let target = Db::version(tx, version)?;
            let cur = Db::version(tx, head.version)?;
            let v = Db::insert_version(
                tx,
                &target.root,
                Some(head.version),
                workspace,
                message,
                cur.next_ino.max(target.next_ino),
                target.bytes,
                target.entries,
            )?;
            Db::cas_head(tx, workspace, head.version, v)?;
            Ok(v)
        })
    }

    /// A version's row.
    pub fn version(&self, id: VersionId) -> Result<Version> {
        self.db().read(|c| Db::version(c, id))
    }

    /// The versions of a workspace's lineage, newest first (following parent links, so a fork
    /// shows the history it shares with its source), at most `limit`.
    pub fn history(&self, workspace: &str, limit: usize) -> Result<Vec<Version>> {
        self.db().read(|c| {
            let head = Db::head(c, workspace)?;
            let mut out = Vec::new();
            let mut cur = Some(head.version);
            while let Some(id) = cur {
                if out.len() >= limit {
                    break;
                }
                match Db::version(c, id) {
                    Ok(v) => {
                        cur = v.parent;
                        out.push(v);
                    }
                    // Older versions may have been collected under a retention policy.
                    Err(Error::NoVersion(_)) => break,
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
    }

    /// Begins a transaction on `workspace`'s current head.
    pub fn begin(&self, workspace: &str) -> Result<Txn> {
        let (head, base) = self.db().read(|c| {
            let head = Db::head(c, workspace)?;
            let base = Db::version(c, head.version)?;
            Ok((head, base))
        })?;
        let quota = Quota {
            bytes: head.quota_bytes,
            entries: head.quota_entries,
        };
        Txn::new(self.clone(), Some(workspace.to_string()), base, quota)
    }

    /// A read-only view of any version (commit returns [`Error::ReadOnly`]).
    pub fn view(&self, version: VersionId) -> Result<Txn> {
        let base = self.version(version)?;
        Txn::new(self.clone(), None, base, Quota::default())
    }

    /// Statistics of the store's contents.
    pub fn stats(&self) -> Result<StoreStats> {
        let mut s = self.db().read(|c| {
            let (objects, pages, nodes): (i64, i64, i64) = c.query_row(
                "SELECT count(*), coalesce(sum(CASE WHEN kind = 0 THEN length(data) END), 0),
                        coalesce(sum(CASE WHEN kind = 1 THEN length(data) END), 0) FROM objects",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let versions: i64 = c.query_row("SELECT count(*) FROM versions", [], |r| r.get(0))?;
            let heads: i64 = c.query_row("SELECT count(*) FROM heads", [], |r| r.get(0))?;
            Ok(StoreStats {
                objects: objects as u64,
                page_bytes: pages as u64,
                node_bytes: nodes as u64,
                versions: versions as u64,
                workspaces: heads as u64,
                file_bytes: 0,
            })
        })?;
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let path = self.path();
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        s.file_bytes = size(path) + size(&wal);
        Ok(s)
    }
}

fn to_workspace(h: db::HeadRow) -> Workspace {
    Workspace {
        name: h.name,
        version: h.version,
        created: h.created,
        last_active: h.last_active,
        quota: Quota {
            bytes: h.quota_bytes,
            entries: h.quota_entries,
        },
    }
}
