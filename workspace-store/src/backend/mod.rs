//! Where a store keeps its bytes: two traits the rest of the crate goes through.
//!
//! - an [`ObjectStore`] holds the immutable, content-addressed objects (file pages and tree
//!   nodes, named by their BLAKE3 hash);
//! - a [`Catalog`] holds everything that names or orders them: versions, heads (the only
//!   mutable pointers, moved by compare-and-swap), labels, workspace metadata and the event
//!   log. What every catalog must do is [`Catalog`]; what one may do better (one round trip
//!   for a call's first read, events recorded behind the call, waking other processes'
//!   event streams, telling its size and durability) is [`CatalogCapabilities`], whose
//!   every method has a default that is right for any backend.
//!
//! Because objects never change, the object store needs no coordination beyond
//! put-if-absent; every consistency question is the catalog's. The SQLite file
//! ([`sqlite::Sqlite`]) implements both, in one database, and is the embedded default; a
//! catalog on a database server and objects in object storage are other implementations of
//! the same contracts.

pub mod cache;
#[cfg(feature = "object-storage")]
pub mod object_storage;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod split;
pub mod sqlite;

use crate::error::Result;
use crate::event::{Event, EventFilter, NewEvent};
use crate::node::Hash;
use crate::{Quota, VersionId};

/// What an object is (for statistics; objects describe themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A 64 KiB (or shorter, final) page of file bytes.
    Page,
    /// A node of a tree: an inode, a directory trie level or a page table level.
    Node,
}

/// An object to store: its hash (of `data`), kind and bytes.
#[derive(Debug, Clone, Copy)]
pub struct NewObject<'a> {
    pub hash: Hash,
    pub kind: ObjectKind,
    pub data: &'a [u8],
}

/// Immutable objects by hash.
///
/// Contract:
/// - **Put is put-if-absent and idempotent**: putting an object that exists changes nothing
///   of its content (a hash names one content) but refreshes its write time, which is what
///   [`ObjectStore::delete_unreferenced`]'s grace period is measured from. When `put_many`
///   returns, every object it was given is durable; when it fails, any subset may be, and
///   that subset is harmless (unreferenced objects are collected by GC).
/// - **Reads are never stale**: an object once put reads back byte for byte until GC deletes
///   it, from any process. A missing object reads as `None`, not as an error.
/// - **Ordering**: a committer puts a version's objects before the catalog records the
///   version, so a version the catalog shows never references a missing object (unless GC
///   broke the grace rule, which fsck reports).
pub trait ObjectStore: Send + Sync {
    /// Stores the objects that are absent (and refreshes the write time of the others).
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()>;
    /// [`ObjectStore::put_many`] that may return before the objects are durable, so the
    /// caller goes on working while they upload; [`PutTicket::wait`] says when they are
    /// (or why they are not). Until then reads of this store find them all the same. A
    /// store bounds how many such puts are under way (a new one waits for room). By
    /// default it is `put_many`.
    /// Puts objects where a small commit's go (see [`split::Split`]): into the catalog's own
    /// object table where the store keeps some there, else as [`ObjectStore::put_many`].
    fn put_small(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.put_many(objects)
    }

    fn put_many_behind(&self, objects: &[NewObject<'_>]) -> Result<PutTicket> {
        self.put_many(objects).map(|()| PutTicket::done())
    }
    /// One object's bytes (`kind` is what the caller expects it to be: object storage keys
    /// objects by kind and hash).
    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>>;
    /// The objects of `hashes`, all of one kind, that exist (in no particular order).
    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>>;
    /// Whether each object exists, in the order given. Asks the authoritative store, never a
    /// cache in front of it (fsck relies on that).
    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>>;
    /// Deletes every object last written before `written_before` (nanoseconds since the Unix
    /// epoch) for which `referenced` is false; returns how many objects and bytes went.
    /// Objects written at or after `written_before` are never deleted, whatever `referenced`
    /// says: that is the grace period that protects a transaction still being committed.
    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)>;
    /// How many objects there are and their bytes by kind: (objects, page bytes, node bytes).
    fn totals(&self) -> Result<(u64, u64, u64)>;
    /// Every object's hash and kind, in no particular order (for copying a store).
    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>>;
    /// At most `limit` objects of `kind`, in no particular order (offloading takes a
    /// catalog's pages with it, a batch at a time). By default, from [`ObjectStore::list`].
    fn list_kind(&self, kind: ObjectKind, limit: usize) -> Result<Vec<Hash>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|(_, k)| *k == kind)
            .map(|(h, _)| h)
            .take(limit)
            .collect())
    }
    /// The store behind any cache this one is (fsck reads through it), or `None` if this is
    /// not a cache.
    fn uncached(&self) -> Option<&dyn ObjectStore> {
        None
    }
    /// Deletes the objects of `hashes` whatever their write time, for objects copied to
    /// where reads find them ([`ObjectStore::offload`]), never for garbage (that is
    /// [`ObjectStore::delete_unreferenced`], with its grace). A store with no such use
    /// refuses.
    fn remove(&self, _hashes: &[Hash]) -> Result<()> {
        Err(crate::Error::Config(
            "this object store does not remove objects outside GC".into(),
        ))
    }
    /// Moves the objects a store keeps in a tier for recent small writes (a small commit's
    /// pages in the catalog, see [`split`]) to their long-term place, and returns how many
    /// it moved. Reads find each object in one place or the other throughout. GC calls it
    /// after its sweep's deletes, inside the announced sweep (so no other sweep lists the
    /// bucket meanwhile), and it stops between batches after `deadline`; by default there
    /// is no such tier.
    fn offload(&self, _deadline: std::time::Instant) -> Result<u64> {
        Ok(0)
    }
    /// Readies what [`ObjectStore::offload`] reads by (an index), called by GC before it
    /// announces its sweep: building one on a large store takes a while, and no commit
    /// should wait for that. By default there is nothing to ready.
    fn prepare_offload(&self) -> Result<()> {
        Ok(())
    }
    /// Makes listing the objects of `kind` ([`ObjectStore::list_kind`]) read an index rather
    /// than every object, for a store that offloads them. Idempotent; by default there is
    /// nothing to do.
    fn index_kind(&self, _kind: ObjectKind) -> Result<()> {
        Ok(())
    }
    /// Whether a commit must fence its puts against a concurrent GC sweep (see
    /// [`Catalog::setting`] and the sweep protocol in `gc.rs`): true for stores whose
    /// delete cannot re-check an object's write time atomically (object storage); false for
    /// databases, whose `DELETE ... WHERE created < $cutoff` does.
    fn needs_sweep_fence(&self) -> bool {
        false
    }
    /// Until when this process's GC holds its sweep's announcement in the catalog (it
    /// renews it while it sweeps; `None` once the sweep ended): deletes stop
    /// [`crate::gc::LEASE_MARGIN`] before it, so that none runs once commits may take the
    /// announcement for expired. By default there is nothing to stop.
    fn set_sweep_lease(&self, _until: Option<std::time::Instant>) {}
    /// Where the objects live, as the store records it (`--objects`), without credentials;
    /// `None` for a catalog's own table.
    fn location(&self) -> Option<String> {
        None
    }
}

/// A put under way ([`ObjectStore::put_many_behind`]).
#[must_use = "a put behind is durable only once waited for"]
pub struct PutTicket(Option<std::sync::Arc<dyn PutJob>>);

/// What a [`PutTicket`] waits on: the put's outcome, once.
pub trait PutJob: Send + Sync {
    /// Blocks until the put has ended; its outcome (the first call gets an error, if any).
    fn wait(&self) -> Result<()>;
}

impl PutTicket {
    /// A put that was done before its ticket was made.
    pub fn done() -> PutTicket {
        PutTicket(None)
    }

    pub fn new(job: std::sync::Arc<dyn PutJob>) -> PutTicket {
        PutTicket(Some(job))
    }

    /// Blocks until the objects are durable; the put's error otherwise.
    pub fn wait(self) -> Result<()> {
        match &self.0 {
            Some(job) => job.wait(),
            None => Ok(()),
        }
    }
}

/// Where one packed object is: object storage that packs many small objects into one
/// larger object (a *pack*) keeps this index in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedObject {
    pub hash: Hash,
    pub kind: ObjectKind,
    /// The pack's name (the hex BLAKE3 hash of its bytes).
    pub pack: String,
    /// Where the object's bytes start in the pack, and how many there are.
    pub offset: u64,
    pub len: u32,
    /// When the entry was recorded (nanoseconds since the Unix epoch): GC's grace period is
    /// measured from it, as from a loose object's write time.
    pub created: i64,
}

/// The index of packed objects, kept by a catalog for object storage that packs.
///
/// Contract:
/// - **Recording replaces**: an object recorded again points at its newest pack and its
///   `created` is refreshed (that is put-if-absent's "refreshes its write time"); each call
///   is atomic.
/// - **Ordering**: a pack is uploaded before its entries are recorded, so an entry never
///   names a pack that was not written (unless GC broke the grace rule, which fsck
///   reports). A crash between the two leaves a pack nothing points into, which GC deletes.
/// - **Forgetting re-checks the time**, atomically: an entry recorded again since GC listed
///   it is kept.
pub trait PackIndex: Send + Sync {
    /// Records (or moves, refreshing their time) the entries; hashes are distinct.
    fn record_packed(&self, entries: &[PackedObject]) -> Result<()>;
    /// The entries of those of `hashes` that are packed (in no particular order).
    fn locate(&self, hashes: &[Hash]) -> Result<Vec<PackedObject>>;
    /// At most `limit` entries in the order of their hashes, from the first after `after`
    /// (from the first of all with `None`): GC and totals page through the index with it, so
    /// that they hold a page of it at a time rather than all of it.
    fn packed_after(&self, after: Option<&Hash>, limit: usize) -> Result<Vec<PackedObject>>;
    /// Every entry (for listing).
    fn packed(&self) -> Result<Vec<PackedObject>> {
        let mut all = Vec::new();
        for_each_packed(self, PACKED_PAGE, |page| {
            all.extend_from_slice(page);
            Ok(())
        })?;
        Ok(all)
    }
    /// Deletes the entries of `hashes` recorded before `written_before`; returns the
    /// lengths of those it deleted.
    fn forget_packed(&self, hashes: &[Hash], written_before: i64) -> Result<Vec<u32>>;
}

/// Entries per page of [`PackIndex::packed_after`].
pub const PACKED_PAGE: usize = 10_000;

/// Calls `f` with each page of `index`'s entries (`page` of them, the last one fewer), in
/// the order of their hashes. An entry recorded or forgotten meanwhile may or may not be
/// seen; none is seen twice.
pub fn for_each_packed<I: PackIndex + ?Sized>(
    index: &I,
    page: usize,
    mut f: impl FnMut(&[PackedObject]) -> Result<()>,
) -> Result<()> {
    let mut after: Option<Hash> = None;
    loop {
        let got = index.packed_after(after.as_ref(), page.max(1))?;
        f(&got)?;
        match got.last() {
            Some(last) if got.len() >= page.max(1) => after = Some(last.hash),
            _ => return Ok(()),
        }
    }
}

/// A version row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRow {
    pub id: VersionId,
    pub root: Hash,
    pub parent: Option<VersionId>,
    pub workspace: String,
    /// Nanoseconds since the Unix epoch.
    pub time: i64,
    pub message: String,
    pub next_ino: u64,
    pub bytes: u64,
    pub entries: u64,
}

/// A head row: a workspace's name, where it points, and its settings.
#[derive(Debug, Clone)]
pub struct HeadRow {
    pub name: String,
    pub version: VersionId,
    pub created: i64,
    pub quota: Quota,
    pub last_active: Option<i64>,
}

/// A version about to be recorded (its id and time are the catalog's to assign).
#[derive(Debug, Clone)]
pub struct NewVersion<'a> {
    pub root: Hash,
    pub parent: Option<VersionId>,
    pub workspace: &'a str,
    pub message: &'a str,
    pub next_ino: u64,
    pub bytes: u64,
    pub entries: u64,
}

/// One commit of a transaction: the new version, the head move and the events, which the
/// catalog applies all together or not at all.
#[derive(Debug, Clone)]
pub struct CommitRecord<'a> {
    pub version: NewVersion<'a>,
    /// The version the head must still be at (the transaction's base).
    pub expected: VersionId,
    /// Events recorded with the commit (kind, data), before `event`.
    pub events: &'a [(String, String)],
    /// An event whose sequence number the caller wants back.
    pub event: Option<(&'a str, &'a str)>,
    /// A setting the commit depends on (the GC sweep fence): see [`Guard`].
    pub guard: Option<Guard<'a>>,
}

/// A condition on a store-wide setting checked inside a write's own transaction, serialised
/// with [`Catalog::swap_setting`]: the write happens only if setting `key` still reads
/// `value`, and otherwise fails with [`crate::Error::Fenced`] having written nothing. The
/// GC sweep fence uses it so that no commit lands once a sweep has been announced.
#[derive(Debug, Clone, Copy)]
pub struct Guard<'a> {
    pub key: &'a str,
    pub value: Option<&'a str>,
}

/// Heads and labels as GC saw them when it marked; it deletes only if they are unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefSnapshot {
    pub heads: Vec<(String, VersionId)>,
    pub labels: Vec<(String, VersionId)>,
}

/// Everything a catalog holds, as rows: what [`Catalog::dump`] reads and [`Catalog::restore`]
/// writes to copy a store to another backend with its history, ids included.
#[derive(Debug, Clone, Default)]
pub struct CatalogDump {
    pub versions: Vec<VersionRow>,
    pub heads: Vec<HeadRow>,
    /// (name, version, created).
    pub labels: Vec<(String, VersionId, i64)>,
    /// (workspace, key, value).
    pub meta: Vec<(String, String, String)>,
    pub events: Vec<Event>,
}

/// Versions, heads, labels, workspace metadata and events.
///
/// Contract:
/// - **Atomicity**: every method that writes is one transaction: after a crash, it happened
///   entirely or not at all. [`Catalog::commit`] inserts the version row, moves the head
///   (compare-and-swap from `expected`), marks the workspace active and appends its events
///   together: an event exists if and only if its commit does.
/// - **Compare-and-swap**: a head moves only from the version the writer read; otherwise
///   the write fails with [`crate::Error::Conflict`] naming the actual version, and nothing
///   is written. Two processes committing to one workspace: one wins, the other gets the
///   conflict.
/// - **Ordering**: version ids and event sequence numbers strictly increase in commit order
///   and are never reused. A reader sees a commit completely or not at all.
/// - **Objects**: a catalog that also stores objects writes a commit's `objects` in the
///   commit's own transaction: all of them when it holds them all (one SQLite file), the
///   tree nodes when pages live in object storage ([`split`]). Objects kept elsewhere are
///   not given to it: the store put them there first, so a crash between the two leaves
///   only unreferenced objects.
/// - **Idempotence**: none for writes (a retried commit after an unknown outcome may find
///   the head moved by its own first attempt, and reports the conflict); reads are
///   side-effect free.
pub trait Catalog: Send + Sync {
    // --- reads ---
    fn version(&self, id: VersionId) -> Result<VersionRow>;
    /// Every version, by id.
    fn versions(&self) -> Result<Vec<VersionRow>>;
    fn head(&self, name: &str) -> Result<HeadRow>;
    /// Every head, by name.
    fn heads(&self) -> Result<Vec<HeadRow>>;
    /// A head and the version it points at, read together.
    fn head_version(&self, name: &str) -> Result<(HeadRow, VersionRow)>;
    /// A workspace's lineage from its head, newest first, at most `limit`; it ends early at a
    /// version GC has collected.
    fn lineage(&self, name: &str, limit: usize) -> Result<Vec<VersionRow>>;
    /// Every label, by name.
    fn labels(&self) -> Result<Vec<(String, VersionId)>>;
    /// How many versions a workspace committed itself.
    fn version_count(&self, workspace: &str) -> Result<u64>;
    /// [`Catalog::version_count`] of every workspace with one.
    fn version_counts(&self) -> Result<std::collections::HashMap<String, u64>>;
    /// (versions, heads).
    fn totals(&self) -> Result<(u64, u64)>;

    // --- writes ---
    /// Records a first version and a head pointing at it; fails with
    /// [`crate::Error::WorkspaceExists`] if the name is taken.
    fn create_workspace(
        &self,
        version: &NewVersion<'_>,
        objects: &[NewObject<'_>],
        guard: Option<Guard<'_>>,
    ) -> Result<VersionId>;
    /// A new head at an existing version.
    fn create_head(&self, name: &str, version: VersionId) -> Result<()>;
    /// New heads at `source`'s version, with its quota; returns that version.
    fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId>;
    /// Removes a head and its metadata (its versions stay until GC).
    fn delete_head(&self, name: &str) -> Result<()>;
    fn set_quota(&self, name: &str, quota: Quota) -> Result<()>;
    /// Names an existing version (replacing a label of the same name).
    fn set_label(&self, name: &str, version: VersionId) -> Result<()>;
    fn delete_label(&self, name: &str) -> Result<()>;
    /// Commits `record` (see the contract); returns the new version and the sequence number
    /// of `record.event`.
    fn commit(
        &self,
        record: &CommitRecord<'_>,
        objects: &[NewObject<'_>],
    ) -> Result<(VersionId, Option<i64>)>;
    /// A new version of `workspace` with `version`'s tree, parent the current head.
    fn checkout(&self, workspace: &str, version: VersionId, message: &str) -> Result<VersionId>;

    // --- metadata and events ---
    /// Sets or removes a metadata value; `name` values are unique across workspaces.
    fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()>;
    fn meta(&self, workspace: &str) -> Result<std::collections::BTreeMap<String, String>>;
    fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>>;
    /// Appends an event and marks the workspace active; returns its sequence number.
    fn append_event(&self, event: &NewEvent<'_>) -> Result<i64>;
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>>;

    // --- garbage collection ---
    /// Deletes the version rows `doomed` if every head and label is still as in `seen` (by
    /// name, sorted); returns false, deleting nothing, if one moved. Any move counts: a
    /// checkout to an old version reuses that version's tree, which GC may not have marked.
    fn delete_versions(&self, seen: &RefSnapshot, doomed: &[VersionId]) -> Result<bool>;
    // --- store-wide settings ---
    /// A store-wide setting (where the objects live, the GC sweep state).
    fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Compare-and-swap of a setting: writes `new` (`None` removes it) only if the value is
    /// still `expected`; returns whether it did. Serialised with every write that carries a
    /// [`Guard`]: such a write sees the setting as before the swap or as after it, and
    /// commits before the swap or not at all.
    fn swap_setting(&self, key: &str, expected: Option<&str>, new: Option<&str>) -> Result<bool>;

    // --- copying ---
    /// Every row, as of one snapshot.
    fn dump(&self) -> Result<CatalogDump>;
    /// Writes `dump` into this catalog, which must be empty, in one transaction, keeping
    /// version ids and event sequence numbers (later ones continue after them).
    fn restore(&self, dump: &CatalogDump) -> Result<()>;
}

/// What a catalog may do beyond [`Catalog`]. Every method has a default that is right for
/// any backend (a slower path, or "cannot tell"); a backend overrides those it does better,
/// and one with only the required part writes `impl CatalogCapabilities for X {}`. The store
/// holds its catalog as this trait.
pub trait CatalogCapabilities: Catalog {
    // --- faster paths ---
    /// [`Catalog::head_version`] and the workspace's metadata ([`Catalog::meta`]): what
    /// every tool call reads first. A networked catalog answers in one round trip.
    fn head_version_meta(
        &self,
        name: &str,
    ) -> Result<(
        HeadRow,
        VersionRow,
        std::collections::BTreeMap<String, String>,
    )> {
        let (h, v) = self.head_version(name)?;
        Ok((h, v, self.meta(name)?))
    }
    /// [`Catalog::append_event`] for an event whose sequence number nobody waits for: it may
    /// return before the event is stored. The event is stored before this catalog reads the
    /// log, deletes a workspace or versions, or is dropped; one that then fails to be stored
    /// is logged. By default it is `append_event`.
    fn record_event(&self, event: &NewEvent<'_>) -> Result<()> {
        self.append_event(event).map(|_| ())
    }

    // --- space ---
    /// Gives unused space back to the filesystem, where that means something.
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    /// Bytes the catalog (and objects it holds) take on local disk, if it is local.
    fn disk_bytes(&self) -> Option<u64> {
        None
    }
    /// Bytes the catalog's own tables take (indexes included, objects it may also hold
    /// excluded), where the backend can tell; what an idle session costs in the catalog.
    fn catalog_bytes(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    // --- other processes ---
    /// Calls `wake` (from a thread of the backend's) whenever any process appends events to
    /// this catalog, so event streams need not poll; returns false (and never calls it)
    /// where the backend cannot tell, and streams keep polling. A wake may be spurious or
    /// cover several events; after a lost connection the watcher reconnects and wakes once.
    fn watch(&self, _wake: std::sync::Arc<dyn Fn() + Send + Sync>) -> Result<bool> {
        Ok(false)
    }

    // --- durability ---
    /// Whether this catalog's own writes outside tool calls' commits (GC's, the pack index's,
    /// a session's deletion) are flushed before they return. GC deletes from object storage
    /// on the strength of such writes (versions deleted, a pack's entries moved, then the
    /// objects or the old pack deleted), so it refuses to sweep object storage when they are
    /// not. (The SQLite file makes GC's writes durable whatever the store's durability.)
    fn flushes_writes(&self) -> Result<bool> {
        Ok(true)
    }
}

/// Now, in nanoseconds since the Unix epoch (the unit of every time the store records).
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
