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

pub mod backend;
mod diff;
mod error;
mod event;
mod fsck;
mod gc;
mod hamt;
mod io;
mod merge;
mod meta;
mod node;
mod objects;
mod pagetable;
mod txn;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use backend::VersionRow as Version;
pub use diff::{Change, ChangeKind};
pub use error::{Errno, Error, Result};
pub use event::{Event, EventFilter, NewEvent};
pub use fsck::FsckReport;
pub use gc::{GcStats, Retention};
pub use io::ImportStats;
pub use merge::{
    Conflict, ConflictKind, Labels, MergeOptions, MergeReport, TextMerge, is_binary,
    text::merge as merge_text,
};
pub use node::{Hash, Kind, PAGE_SIZE};
pub use txn::{
    Commit, DirEntry, FILE_MAX, Ino, NAME_MAX, OpenFlags, PATH_MAX, ROOT_INO, SYMLINK_MAX,
    SYSTEM_DIR, SetTime, Stat, Txn, is_system_path,
};

use backend::{
    Catalog, CatalogCapabilities, NewObject, NewVersion, ObjectKind, ObjectStore, sqlite::Sqlite,
};
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

/// How hard a tool call's commit waits for the disk. The same promise on either catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A commit survives a crash of the process that made it; a crash of the machine (or of
    /// the database server) may lose the last commits, never more than a fraction of a
    /// second of them, and never corrupts the store: what is left is a consistent earlier
    /// state. SQLite: `synchronous=NORMAL` in WAL mode. PostgreSQL: the commits of tool
    /// calls (and the events of calls that changed nothing) are made with
    /// `synchronous_commit` off for their transaction; everything else (a session's
    /// creation, fork or deletion, labels, GC, the pack index) waits for the WAL flush, so
    /// GC never acts on something a crash could undo. The default.
    #[default]
    Normal,
    /// Every commit is on disk before it returns. SQLite: `synchronous=FULL`. PostgreSQL:
    /// every commit waits for the server's WAL flush (and for synchronous standbys, if the
    /// server has them).
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
    /// File pages kept in memory (64 KiB each); an eighth of them for pages read once (a
    /// long sequential read passes through those), the rest for pages read again.
    pub page_cache: usize,
    /// Where symlinks with absolute targets lead (see [`AbsoluteLinks`]).
    pub absolute_links: Option<AbsoluteLinks>,
}

/// Where a symlink's absolute target leads in the tree: the store path (from the root, no
/// leading `/`) that the path names in the layout of whoever mounts the tree. The host lays
/// a session out as a Linux-like root (`/workspace/a` is `a`, `/tmp/t` is in the system
/// area), and gives that layout here so that links resolve as the guest wrote them. The
/// function sees the target with `.` and `..` already folded, so what it returns cannot
/// climb out of what it maps to. Without one, `/x` is `x` (the tree is the root).
#[derive(Clone)]
pub struct AbsoluteLinks(pub Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for AbsoluteLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AbsoluteLinks(..)")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(5),
            node_cache: 16_384,
            page_cache: 512,
            absolute_links: None,
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
    catalog: Arc<dyn CatalogCapabilities>,
    /// Which objects the catalog holds itself: those a commit writes in the catalog's
    /// transaction instead of putting them into object storage first.
    with_catalog: WithCatalog,
    path: PathBuf,
    absolute_links: Option<AbsoluteLinks>,
}

impl Store {
    /// Opens (creating if needed) the store at `path` with default [`Options`].
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path, Options::default())
    }

    /// Opens (creating if needed) the store at `path`.
    pub fn open_with(path: impl AsRef<Path>, opts: Options) -> Result<Store> {
        let path = path.as_ref();
        let db = Arc::new(Sqlite::open(path, opts.durability, opts.busy_timeout)?);
        // A file whose objects live elsewhere would read as missing objects here.
        if let Some(objects) = db.setting(OBJECTS_KEY)? {
            return Err(Error::Config(format!(
                "{} keeps its objects in {objects}: open it with Store::connect",
                path.display()
            )));
        }
        Ok(Store {
            inner: Arc::new(Inner {
                objs: Objects::new(db.clone(), opts.node_cache, opts.page_cache),
                catalog: db,
                with_catalog: WithCatalog::All,
                path: path.to_path_buf(),
                absolute_links: opts.absolute_links,
            }),
        })
    }

    /// Opens (creating the schema if needed) a store in a PostgreSQL database, objects
    /// included (as `bytea`, in the commit's own transaction): `url` is
    /// `postgres://user:password@host:port/dbname`.
    #[cfg(feature = "postgres")]
    pub fn open_postgres(url: &str, opts: Options) -> Result<Store> {
        Store::connect(
            &Location {
                catalog: url.to_string(),
                ..Location::default()
            },
            opts,
        )
    }

    /// Opens the store at `location`: its catalog (an SQLite file, created if needed, or a
    /// PostgreSQL database), its objects (the catalog's own table, or object storage) and
    /// an optional local object cache.
    ///
    /// A store records where its objects live the first time it is opened with
    /// [`Location::objects`] naming object storage, while it is still empty; later opens
    /// find them there without being told, and an open that names another place is refused
    /// ([`Error::Config`]) rather than writing objects where readers will not look.
    pub fn connect(location: &Location, opts: Options) -> Result<Store> {
        // The catalog, its own object table, its index of packed objects (where it keeps
        // one) and its kind.
        type Parts = (
            Arc<dyn CatalogCapabilities>,
            Arc<dyn ObjectStore>,
            Option<Arc<dyn backend::PackIndex>>,
            &'static str,
        );
        let (catalog, in_catalog, index, kind): Parts = if is_postgres_url(&location.catalog) {
            #[cfg(feature = "postgres")]
            {
                let pg = Arc::new(backend::postgres::Postgres::open(
                    &location.catalog,
                    opts.durability,
                )?);
                (pg.clone(), pg.clone(), Some(pg), "postgres")
            }
            #[cfg(not(feature = "postgres"))]
            return Err(Error::Config(
                "this build of burrow-store has no PostgreSQL support (feature `postgres`)".into(),
            ));
        } else {
            let db = Arc::new(Sqlite::open(
                Path::new(&location.catalog),
                opts.durability,
                opts.busy_timeout,
            )?);
            (db.clone(), db, None, "sqlite")
        };
        let shown = redact(&location.catalog);
        let requested = match location.objects.as_deref() {
            None => None,
            Some(o) if o == kind => Some(None),
            Some(o @ ("postgres" | "sqlite")) => {
                return Err(Error::Config(format!(
                    "objects '{o}' need a {o} store; {shown} is a {kind} store"
                )));
            }
            Some(url) => Some(Some(url.trim_end_matches('/').to_string())),
        };
        let recorded = catalog.setting(OBJECTS_KEY)?;
        let objects_url = match (recorded, requested) {
            (Some(r), None) => Some((r, false)),
            (Some(r), Some(Some(q))) if r == q => Some((r, false)),
            (Some(r), Some(q)) => {
                return Err(Error::Config(format!(
                    "{shown} keeps its objects in {r}, not in {}",
                    q.as_deref().unwrap_or(kind)
                )));
            }
            (None, None | Some(None)) => None,
            (None, Some(Some(q))) => Some((q, true)),
        };
        let (mut objects, with_catalog) = match objects_url {
            None => (in_catalog, WithCatalog::All),
            Some((url, new)) => {
                // Opened (so checked) before it is recorded: a bad URL is never remembered.
                let objects = open_object_storage(&url, &location.object_options, index, new)?;
                let nodes_here = if new {
                    let (versions, heads) = catalog.totals()?;
                    if versions + heads > 0 {
                        return Err(Error::Config(format!(
                            "{shown} already keeps its objects in its own {kind} tables; copy \
                             it with `burrow store migrate` into a new store whose objects are \
                             in {url}"
                        )));
                    }
                    // The layout first, then the place: a process that finds the place
                    // recorded finds the layout too.
                    if !catalog.swap_setting(NODES_KEY, None, Some(NODES_IN_CATALOG))? {
                        nodes_in_catalog(catalog.setting(NODES_KEY)?, &shown)?;
                    }
                    if !catalog.swap_setting(OBJECTS_KEY, None, Some(&url))? {
                        // Another process recorded a place first: it must be the same one.
                        let r = catalog.setting(OBJECTS_KEY)?.unwrap_or_default();
                        if r != url {
                            return Err(Error::Config(format!(
                                "{shown} keeps its objects in {r}, not in {url}"
                            )));
                        }
                    }
                    true
                } else {
                    nodes_in_catalog(catalog.setting(NODES_KEY)?, &shown)?
                };
                if nodes_here {
                    let split = backend::split::Split::new(in_catalog, objects);
                    (Arc::new(split) as Arc<dyn ObjectStore>, WithCatalog::Nodes)
                } else {
                    // A store made before nodes moved to the catalog: all in object storage.
                    (objects, WithCatalog::Nothing)
                }
            }
        };
        if let Some((dir, size)) = &location.cache {
            objects = Arc::new(backend::cache::Cached::new(objects, dir, *size)?);
        }
        Ok(Store {
            inner: Arc::new(Inner {
                objs: Objects::new(objects, opts.node_cache, opts.page_cache),
                catalog,
                with_catalog,
                path: PathBuf::from(shown),
                absolute_links: opts.absolute_links,
            }),
        })
    }

    /// Where this store's objects live, when not in its catalog (the URL it recorded).
    pub fn objects_location(&self) -> Option<String> {
        self.objs().store.location()
    }

    /// A store over any pair of backends: `objects` for the content-addressed objects,
    /// `catalog` for versions, heads and the rest (see [`backend`] for their contracts).
    /// `path` is only what [`Store::path`] reports.
    pub fn with_backends(
        objects: Arc<dyn ObjectStore>,
        catalog: Arc<dyn CatalogCapabilities>,
        path: impl Into<PathBuf>,
        opts: Options,
    ) -> Store {
        Store {
            inner: Arc::new(Inner {
                objs: Objects::new(objects, opts.node_cache, opts.page_cache),
                catalog,
                with_catalog: WithCatalog::Nothing,
                path: path.into(),
                absolute_links: opts.absolute_links,
            }),
        }
    }

    /// The store file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub(crate) fn objs(&self) -> &Objects {
        &self.inner.objs
    }

    pub(crate) fn catalog(&self) -> &dyn CatalogCapabilities {
        &*self.inner.catalog
    }

    /// The components, from the root, of where the absolute symlink target `target` leads
    /// (see [`AbsoluteLinks`]): `.` and `..` folded first, as far as the root.
    pub(crate) fn absolute_target(&self, target: &str) -> Vec<String> {
        let mut parts: Vec<&str> = Vec::new();
        for c in target.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        let folded = format!("/{}", parts.join("/"));
        let path = match &self.inner.absolute_links {
            Some(AbsoluteLinks(map)) => map(&folded),
            None => folded,
        };
        path.split('/')
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    }

    /// Writes `objects` with a catalog write `write(objects, guard)`: in its own transaction
    /// when the catalog holds the objects; otherwise into the object store first, and then
    /// the catalog write with no objects under the GC sweep fence (see [`gc`]; `started` is
    /// the fence as read before the transaction's first put, `spilled` the pages it put
    /// before), again after waiting for a sweep that began in between.
    pub(crate) fn write_objects<T>(
        &self,
        objects: Vec<NewObject<'_>>,
        started: Option<gc::SweepState>,
        spilled: &[Hash],
        mut write: impl FnMut(&[NewObject<'_>], Option<backend::Guard<'_>>) -> Result<T>,
    ) -> Result<T> {
        let small = || {
            spilled.is_empty()
                && started.is_none()
                && objects
                    .iter()
                    .filter(|o| o.kind == ObjectKind::Page)
                    .count()
                    < backend::split::SMALL_COMMIT_PAGES
        };
        let (here, elsewhere) = match self.inner.with_catalog {
            WithCatalog::All => return write(&objects, None),
            // A small commit puts nothing into object storage, so it needs no fence (see
            // `gc.rs`): its pages wait in the catalog for GC to move them.
            WithCatalog::Nodes if small() => return write(&objects, None),
            WithCatalog::Nodes => objects
                .into_iter()
                .partition(|o| o.kind == ObjectKind::Node),
            WithCatalog::Nothing => (Vec::new(), objects),
        };
        let mut fence = self.put_fenced(&elsewhere, started, spilled)?;
        // Sweeps that keep beginning between a settle and the catalog write are bounded by
        // time, not by a count: GC runs back to back (a cron loop, several processes) must
        // slow a commit down, not fail it, unless they keep it out for the whole wait.
        let since = std::time::Instant::now();
        while since.elapsed() <= gc::FENCE_WAIT {
            match write(&here, fence.as_ref().map(|f| f.guard())) {
                Err(Error::Fenced) => fence = Some(self.settle(&elsewhere, spilled)?),
                done => return done,
            }
        }
        Err(Error::Retry(
            "garbage collections kept sweeping the object storage while this call committed; run it again".into(),
        ))
    }

    /// Whether the catalog holds every object (so commits put nothing into a separate
    /// object store).
    /// Stores a transaction's objects before a commit that will reference them (a
    /// concurrent call's tree, merged onto a moved head), placed as [`Store::write_objects`]
    /// would place them: a small commit's in the catalog (no PUT, no fence), anything
    /// else through object storage with the sweep fence read first. Returns the fence and
    /// the hashes the later commit must check against it (as a spill's).
    pub(crate) fn put_detached(
        &self,
        objects: &[NewObject<'_>],
        started: Option<gc::SweepState>,
        spilled: &[Hash],
    ) -> Result<(Option<gc::SweepState>, Vec<Hash>)> {
        let pages = objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Page)
            .count();
        let small =
            spilled.is_empty() && started.is_none() && pages < backend::split::SMALL_COMMIT_PAGES;
        match self.inner.with_catalog {
            WithCatalog::All => {
                self.objs().store.put_many(objects)?;
                Ok((started, Vec::new()))
            }
            WithCatalog::Nodes if small => {
                self.objs().store.put_small(objects)?;
                Ok((None, Vec::new()))
            }
            _ => {
                let fence = match started {
                    Some(f) => Some(f),
                    None => self.sweep_state()?,
                };
                self.objs().store.put_many(objects)?;
                let put = if fence.is_some() {
                    objects.iter().map(|o| o.hash).collect()
                } else {
                    Vec::new()
                };
                Ok((fence, put))
            }
        }
    }

    pub(crate) fn colocated(&self) -> bool {
        self.inner.with_catalog == WithCatalog::All
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
        let now = backend::now_ns();
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
        let version = NewVersion {
            root,
            parent: None,
            workspace: name,
            message: "create",
            next_ino: txn::ROOT_INO + 1,
            bytes: 0,
            entries: 0,
        };
        let v = self.write_objects(pending.list(), None, &[], |objects, guard| {
            self.catalog().create_workspace(&version, objects, guard)
        })?;
        pending.publish(self.objs());
        Ok(v)
    }

    /// Calls `wake` whenever any process appends events to this store, where the backend can
    /// tell (PostgreSQL's `LISTEN`/`NOTIFY`); false where it cannot (the SQLite file), and
    /// readers of the event log poll instead.
    pub fn watch(&self, wake: Arc<dyn Fn() + Send + Sync>) -> Result<bool> {
        self.catalog().watch(wake)
    }

    /// Every workspace, by name.
    pub fn workspaces(&self) -> Result<Vec<Workspace>> {
        let rows = self.catalog().heads()?;
        Ok(rows.into_iter().map(to_workspace).collect())
    }

    /// One workspace.
    pub fn workspace(&self, name: &str) -> Result<Workspace> {
        self.catalog().head(name).map(to_workspace)
    }

    /// Deletes a workspace's head. Its versions stay until [`Store::gc`] finds them unreachable.
    pub fn delete_workspace(&self, name: &str) -> Result<()> {
        self.catalog().delete_head(name)
    }

    /// Sets a workspace's quota (`None` = unlimited).
    pub fn set_quota(&self, name: &str, quota: Quota) -> Result<()> {
        self.catalog().set_quota(name, quota)
    }

    /// Forks `source` into new workspaces `names`, all at `source`'s current version, in one
    /// SQLite transaction. O(1) per fork whatever the workspace's size; the source is neither
    /// paused nor copied. Forks inherit the source's quota.
    pub fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        for n in names {
            Self::check_workspace_name(n)?;
        }
        self.catalog().fork(source, names)
    }

    /// Creates a workspace whose head is `version` (a fork of any version, e.g. a label).
    pub fn create_workspace_at(&self, name: &str, version: VersionId) -> Result<()> {
        Self::check_workspace_name(name)?;
        self.catalog().create_head(name, version)
    }

    /// Names `version` with a label (replacing a label of the same name).
    pub fn label(&self, name: &str, version: VersionId) -> Result<()> {
        self.catalog().set_label(name, version)
    }

    /// All labels, by name.
    pub fn labels(&self) -> Result<Vec<(String, VersionId)>> {
        self.catalog().labels()
    }

    /// How many versions each workspace has committed (its own, not those it shares with the
    /// session it was forked from), by workspace: one query for all of them.
    pub fn version_counts(&self) -> Result<std::collections::HashMap<String, u64>> {
        self.catalog().version_counts()
    }

    /// How many versions `workspace` has committed itself (`versions_by_workspace`).
    pub fn version_count(&self, workspace: &str) -> Result<u64> {
        self.catalog().version_count(workspace)
    }

    /// Removes a label (its version may then be collected by GC).
    pub fn delete_label(&self, name: &str) -> Result<()> {
        self.catalog().delete_label(name)
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
        self.catalog().checkout(workspace, version, message)
    }

    /// A version's row.
    pub fn version(&self, id: VersionId) -> Result<Version> {
        self.catalog().version(id)
    }

    /// The versions of a workspace's lineage, newest first (following parent links, so a fork
    /// shows the history it shares with its source), at most `limit`.
    pub fn history(&self, workspace: &str, limit: usize) -> Result<Vec<Version>> {
        self.catalog().lineage(workspace, limit)
    }

    /// Begins a transaction on `workspace`'s current head.
    pub fn begin(&self, workspace: &str) -> Result<Txn> {
        let (head, base) = self.catalog().head_version(workspace)?;
        Txn::new(self.clone(), Some(workspace.to_string()), base, head.quota)
    }

    /// [`Store::begin`] and the workspace's metadata, read together (one round trip on a
    /// networked catalog): what a tool call needs before it runs.
    pub fn begin_with_meta(
        &self,
        workspace: &str,
    ) -> Result<(Txn, std::collections::BTreeMap<String, String>)> {
        let (head, base, meta) = self.catalog().head_version_meta(workspace)?;
        let txn = Txn::new(self.clone(), Some(workspace.to_string()), base, head.quota)?;
        Ok((txn, meta))
    }

    /// A read-only view of any version (commit returns [`Error::ReadOnly`]).
    pub fn view(&self, version: VersionId) -> Result<Txn> {
        let base = self.version(version)?;
        Txn::new(self.clone(), None, base, Quota::default())
    }

    /// Statistics of the store's contents.
    /// Bytes the catalog's tables take, where the backend can tell (PostgreSQL); the SQLite
    /// file's size is in [`StoreStats::file_bytes`].
    pub fn catalog_bytes(&self) -> Result<Option<u64>> {
        self.catalog().catalog_bytes()
    }

    pub fn stats(&self) -> Result<StoreStats> {
        let (objects, page_bytes, node_bytes) = self.objs().store.totals()?;
        let (versions, workspaces) = self.catalog().totals()?;
        Ok(StoreStats {
            objects,
            page_bytes,
            node_bytes,
            versions,
            workspaces,
            file_bytes: self.catalog().disk_bytes().unwrap_or(0),
        })
    }
}

/// What [`Store::copy_into`] copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub objects: u64,
    pub bytes: u64,
    pub versions: u64,
    pub workspaces: u64,
    pub events: u64,
}

impl Store {
    /// Copies everything this store holds into `dest`, which must be empty: every object,
    /// then every version (ids kept), head, label, metadata value and event, the catalog in
    /// one transaction. Objects first, so the destination never names a missing one; a copy
    /// that fails part-way leaves only unreferenced objects there. `progress` hears (objects
    /// copied, objects in all).
    pub fn copy_into(&self, dest: &Store, progress: &mut dyn FnMut(u64, u64)) -> Result<CopyStats> {
        let (versions, heads) = dest.catalog().totals()?;
        if versions + heads > 0 {
            return Err(Error::Invalid("the destination store is not empty"));
        }
        let listed = self.objs().store.list()?;
        let total = listed.len() as u64;
        let mut stats = CopyStats::default();
        for chunk in listed.chunks(256) {
            let mut got = Vec::with_capacity(chunk.len());
            for kind in [ObjectKind::Page, ObjectKind::Node] {
                let hashes: Vec<Hash> = chunk
                    .iter()
                    .filter(|(_, k)| *k == kind)
                    .map(|(h, _)| *h)
                    .collect();
                if !hashes.is_empty() {
                    got.extend(
                        self.objs()
                            .store
                            .get_many(&hashes, kind)?
                            .into_iter()
                            .map(|(h, d)| (h, kind, d)),
                    );
                }
            }
            if got.len() != chunk.len() {
                return Err(Error::Corrupt(
                    "an object vanished while the store was copied".into(),
                ));
            }
            let objects: Vec<NewObject<'_>> = got
                .iter()
                .map(|(hash, kind, data)| NewObject {
                    hash: *hash,
                    kind: *kind,
                    data,
                })
                .collect();
            dest.objs().store.put_many(&objects)?;
            stats.objects += got.len() as u64;
            stats.bytes += got.iter().map(|(_, _, d)| d.len() as u64).sum::<u64>();
            progress(stats.objects, total);
        }
        let dump = self.catalog().dump()?;
        dest.catalog().restore(&dump)?;
        stats.versions = dump.versions.len() as u64;
        stats.workspaces = dump.heads.len() as u64;
        stats.events = dump.events.len() as u64;
        Ok(stats)
    }
}

/// The catalog setting naming where a store's objects live (absent: in the catalog).
const OBJECTS_KEY: &str = "objects";
/// The catalog setting saying where tree nodes live when the objects are in object storage:
/// [`NODES_IN_CATALOG`] for every store made since that layout ([`backend::split`]);
/// absent for one made before, whose nodes are in object storage with its pages.
const NODES_KEY: &str = "nodes";
const NODES_IN_CATALOG: &str = "catalog";

/// Whether the recorded [`NODES_KEY`] setting puts tree nodes in the catalog (absent: a
/// store made before that layout); a value this code does not know is refused.
fn nodes_in_catalog(recorded: Option<String>, shown: &str) -> Result<bool> {
    match recorded.as_deref() {
        None => Ok(false),
        Some(NODES_IN_CATALOG) => Ok(true),
        Some(v) => Err(Error::Config(format!(
            "{shown} keeps its tree nodes in {v}, a layout this burrow does not know"
        ))),
    }
}

/// Which objects a store's catalog holds itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WithCatalog {
    /// All of them (the SQLite file, or objects in PostgreSQL).
    All,
    /// Tree nodes; pages are in object storage.
    Nodes,
    /// None: every object is in object storage.
    Nothing,
}

/// Whether a `--store` value names a PostgreSQL database rather than a file.
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// Object storage at `url`, packing into `index` where the catalog keeps one; with `check`,
/// its client is built before this returns (a store about to record the URL).
#[cfg(feature = "object-storage")]
fn open_object_storage(
    url: &str,
    extra: &[(String, String)],
    index: Option<Arc<dyn backend::PackIndex>>,
    check: bool,
) -> Result<Arc<dyn ObjectStore>> {
    let mut objects = backend::object_storage::ObjectStorage::open(url, extra)?;
    if check {
        objects = objects.checked()?;
    }
    if let Some(index) = index {
        objects = objects.with_index(index);
    }
    Ok(Arc::new(objects))
}

#[cfg(not(feature = "object-storage"))]
fn open_object_storage(
    url: &str,
    _extra: &[(String, String)],
    _index: Option<Arc<dyn backend::PackIndex>>,
    _check: bool,
) -> Result<Arc<dyn ObjectStore>> {
    Err(Error::Config(format!(
        "objects in {url} need burrow-store's `object-storage` feature"
    )))
}

/// Where a store keeps its parts (see [`Store::connect`]).
#[derive(Debug, Clone, Default)]
pub struct Location {
    /// The catalog: an SQLite file's path, or a `postgres://` / `postgresql://` URL.
    pub catalog: String,
    /// The objects: `None` for wherever the store recorded (its catalog's own table for a
    /// new store); `postgres` or `sqlite` for the catalog's table; or an object storage URL
    /// (`s3://`, `gs://`, `az://`, `file://`, see
    /// `backend::object_storage::ObjectStorage::open`).
    pub objects: Option<String>,
    /// More options for the object storage client, by `object_store`'s names (e.g.
    /// `access_key_id`, `secret_access_key`): for embedders that hold credentials somewhere
    /// other than the environment. Used, never recorded.
    pub object_options: Vec<(String, String)>,
    /// A local object cache: its directory and size in bytes.
    pub cache: Option<(PathBuf, u64)>,
}

/// A URL without its password, for display.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let cred = &url[s + 3..at];
            match cred.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

fn to_workspace(h: backend::HeadRow) -> Workspace {
    Workspace {
        name: h.name,
        version: h.version,
        created: h.created,
        last_active: h.last_active,
        quota: h.quota,
    }
}
