//! A local on-disk cache of objects in front of a remote [`ObjectStore`] (object storage, or
//! objects in PostgreSQL), so a warm process reads pages at local-disk speed.
//!
//! Objects are immutable and named by their hash, so a cached copy is never stale and needs
//! no invalidation: the cache only has to bound its size.
//!
//! **Layout.** Objects are appended to *segment* files, `DIR/s/ID`, of at most
//! [`SEGMENT_MAX`] (or a thirty-second of the cache, if smaller), and a SQLite index,
//! `DIR/index.db`, maps each (hash, kind) to its segment, offset and length. A file per
//! object cost a create and a rename each: on this project's machines about 160 µs an object,
//! so caching an import of 10,000 files took longer than the import; a segment takes a whole
//! batch in one write and one index transaction. Each process appends to a segment of its
//! own; several processes may share one directory (the index is in WAL mode).
//!
//! **Reads** look the object up in the index, read its range and verify it against its hash
//! (a damaged range is forgotten and read from the remote again).
//!
//! **Eviction** is least-recently-used by segment: a hit refreshes its segment's time when it
//! is more than [`TOUCH_EVERY`] old (one index write per segment per interval, not per
//! read), and a trim forgets the oldest segments, then deletes their files, until the cache
//! is at 90% of its size. A trim runs in a background thread when the process has added an
//! eighth of the size since the last one, and at open when no process has trimmed for
//! [`TOUCH_EVERY`] (so a short-lived CLI process does not trim every time it starts).
//!
//! Writes are write-through: a put goes to the remote first and then into the cache. The
//! cache is best effort throughout: an index or file error makes a read a miss and a write a
//! no-op (logged), never a failed call.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::{NewObject, ObjectKind, ObjectStore, PutTicket};
use crate::error::Result;
use crate::node::Hash;

/// How stale a segment's time may get before a hit refreshes it (and how often a new process
/// trims at open).
pub const TOUCH_EVERY: Duration = Duration::from_secs(600);

/// The largest segment file (a smaller cache uses a thirty-second of its size, so that a
/// trim forgets a small part of it at a time).
pub const SEGMENT_MAX: u64 = 16 << 20;

/// The index's schema version (`PRAGMA user_version`); an index of another version is
/// dropped with its segments (it is a cache).
const INDEX_VERSION: i64 = 1;

/// Background cache writers at most at once.
const WRITERS_MAX: usize = 2;

/// Segment files whose descriptors a process keeps open.
const OPEN_FILES_MAX: usize = 32;

/// An on-disk object cache over `remote`.
pub struct Cached {
    remote: Arc<dyn ObjectStore>,
    shared: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    cap: u64,
    segment_max: u64,
    /// Index connections not in use.
    pool: Mutex<Vec<Connection>>,
    /// The segment this process appends to.
    appending: Mutex<Option<Appending>>,
    /// Segment files open for reading, by id.
    files: Mutex<HashMap<i64, Arc<File>>>,
    /// Bytes this process added since its last trim.
    added: AtomicU64,
    trimming: AtomicBool,
    /// Background writers of [`ObjectStore::put_many_behind`]'s objects under way.
    writers: AtomicUsize,
}

struct Appending {
    id: i64,
    file: File,
    len: u64,
}

/// Seconds since the Unix epoch (segment times).
fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn kind_code(kind: ObjectKind) -> i64 {
    match kind {
        ObjectKind::Page => 0,
        ObjectKind::Node => 1,
    }
}

impl Cached {
    /// A cache of at most `cap` bytes in `dir` (created if missing) in front of `remote`.
    pub fn new(remote: Arc<dyn ObjectStore>, dir: &Path, cap: u64) -> Result<Cached> {
        std::fs::create_dir_all(dir.join("s"))?;
        let (first, made) = match Shared::connect(dir) {
            Ok(c) => c,
            Err(e) => {
                // A damaged or foreign index: the cache starts again.
                tracing::warn!(dir = %dir.display(), error = %e, "object cache index reset");
                Shared::reset(dir)?;
                Shared::connect(dir)?
            }
        };
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            cap,
            segment_max: (cap / 32).min(SEGMENT_MAX),
            pool: Mutex::new(vec![first]),
            appending: Mutex::new(None),
            files: Mutex::new(HashMap::new()),
            added: AtomicU64::new(0),
            trimming: AtomicBool::new(false),
            writers: AtomicUsize::new(0),
        });
        let stamp = dir.join("trimmed");
        // A new index has nothing to trim, unless the directory holds the file-per-object
        // layout of earlier versions (which a trim deletes).
        let stale = if made {
            dir.join("p").exists() || dir.join("n").exists()
        } else {
            std::fs::metadata(&stamp)
                .and_then(|m| m.modified())
                .map(|t| t.elapsed().unwrap_or_default() > TOUCH_EVERY)
                .unwrap_or(true)
        };
        if stale {
            Shared::trim_in_background(&shared);
        }
        Ok(Cached { remote, shared })
    }

    /// What the cache holds: (objects, bytes of segments).
    pub fn usage(&self) -> (u64, u64) {
        self.shared
            .with_index(|c| {
                let objects: i64 = c.query_row("SELECT count(*) FROM objects", [], |r| r.get(0))?;
                let bytes: i64 =
                    c.query_row("SELECT coalesce(sum(bytes), 0) FROM segments", [], |r| {
                        r.get(0)
                    })?;
                Ok((objects as u64, bytes as u64))
            })
            .unwrap_or((0, 0))
    }
}

impl Shared {
    /// Opens (creating if needed) the index of the cache in `dir`; true if it made it.
    fn connect(dir: &Path) -> rusqlite::Result<(Connection, bool)> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let c = Connection::open_with_flags(dir.join("index.db"), flags)?;
        c.busy_timeout(Duration::from_secs(5))?;
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let made = version == 0;
        if version != INDEX_VERSION {
            if version != 0 {
                return Err(rusqlite::Error::InvalidQuery);
            }
            // A new index is made without a single fsync (they were 2 ms of a cold
            // process's first read). One left damaged by a crash fails an open here, which
            // starts the cache again, or fails its queries, which are misses.
            c.execute_batch("PRAGMA synchronous=OFF;")?;
            c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
            c.execute_batch(
                "BEGIN IMMEDIATE;
                 CREATE TABLE IF NOT EXISTS segments(
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     bytes INTEGER NOT NULL,
                     used INTEGER NOT NULL);
                 CREATE TABLE IF NOT EXISTS objects(
                     hash BLOB NOT NULL,
                     kind INTEGER NOT NULL,
                     segment INTEGER NOT NULL,
                     off INTEGER NOT NULL,
                     len INTEGER NOT NULL,
                     PRIMARY KEY (hash, kind)) WITHOUT ROWID;
                 CREATE INDEX IF NOT EXISTS objects_by_segment ON objects(segment);
                 PRAGMA user_version = 1;
                 COMMIT;",
            )?;
        }
        // No fsync per commit (a cache lost with the machine is refilled; WAL keeps it
        // consistent), and the WAL left for the next process, as the store does.
        c.execute_batch("PRAGMA synchronous=NORMAL;")?;
        super::sqlite::leave_wal_on_close(&c)?;
        c.set_prepared_statement_cache_capacity(16);
        Ok((c, made))
    }

    /// Deletes the index and every segment: the cache starts empty.
    fn reset(dir: &Path) -> std::io::Result<()> {
        for f in ["index.db", "index.db-wal", "index.db-shm"] {
            match std::fs::remove_file(dir.join(f)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let _ = std::fs::remove_dir_all(dir.join("s"));
        std::fs::create_dir_all(dir.join("s"))
    }

    /// Runs `f` on an index connection; errors are logged and returned for the caller to
    /// treat as a miss.
    fn with_index<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Option<T> {
        let conn = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match conn {
            Some(c) => c,
            None => match Self::connect(&self.dir) {
                Ok((c, _)) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "object cache index unavailable");
                    return None;
                }
            },
        };
        let out = f(&mut conn);
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < 8 {
            pool.push(conn);
        }
        match out {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(error = %e, "object cache index");
                None
            }
        }
    }

    fn segment_path(&self, id: i64) -> PathBuf {
        self.dir.join("s").join(id.to_string())
    }

    fn open_segment(&self, id: i64) -> Option<Arc<File>> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = files.get(&id) {
            return Some(f.clone());
        }
        let f = Arc::new(File::open(self.segment_path(id)).ok()?);
        if files.len() >= OPEN_FILES_MAX {
            files.clear();
        }
        files.insert(id, f.clone());
        Some(f)
    }

    fn read(&self, hash: &Hash, kind: ObjectKind) -> Option<Vec<u8>> {
        let (segment, off, len, used) = self.with_index(|c| {
            c.prepare_cached(
                "SELECT o.segment, o.off, o.len, s.used FROM objects o
                 JOIN segments s ON s.id = o.segment WHERE o.hash = ?1 AND o.kind = ?2",
            )?
            .query_row(params![&hash.0[..], kind_code(kind)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .optional()
        })??;
        let file = self.open_segment(segment)?;
        let mut data = vec![0u8; usize::try_from(len).ok()?];
        let whole = file.read_exact_at(&mut data, off as u64).is_ok();
        if !whole || Hash::of(&data) != *hash {
            tracing::warn!(segment, off, "damaged object cache entry dropped");
            self.with_index(|c| {
                c.execute(
                    "DELETE FROM objects WHERE hash = ?1 AND kind = ?2",
                    params![&hash.0[..], kind_code(kind)],
                )
            });
            return None;
        }
        // Recency for the LRU trim, refreshed at most every TOUCH_EVERY.
        let now = now_s();
        if now - used > TOUCH_EVERY.as_secs() as i64 {
            self.with_index(|c| {
                c.execute(
                    "UPDATE segments SET used = ?1 WHERE id = ?2",
                    params![now, segment],
                )
            });
        }
        Some(data)
    }

    /// Appends `objects` to this process's segment (a new one when it is full) and indexes
    /// them. Best effort: a cache that cannot write only makes reads slower.
    fn write(self: &Arc<Self>, objects: &[(Hash, ObjectKind, &[u8])]) {
        let mut appending = self.appending.lock().unwrap_or_else(|p| p.into_inner());
        let mut rest = objects;
        while !rest.is_empty() {
            let Some(seg) = self.segment(&mut appending) else {
                return;
            };
            // A run that fits in the segment; at least one object.
            let mut take = 0;
            let mut bytes = 0u64;
            while take < rest.len()
                && (take == 0 || seg.len + bytes + rest[take].2.len() as u64 <= self.segment_max)
            {
                bytes += rest[take].2.len() as u64;
                take += 1;
            }
            let (run, later) = rest.split_at(take);
            let mut buf = Vec::with_capacity(bytes as usize);
            for (_, _, d) in run {
                buf.extend_from_slice(d);
            }
            if let Err(e) = seg.file.write_all_at(&buf, seg.len) {
                tracing::warn!(error = %e, "object cache write");
                *appending = None;
                return;
            }
            let (id, start) = (seg.id, seg.len);
            let indexed = self.with_index(|c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                // Zero rows: a trim (of any process) forgot the segment meanwhile.
                if tx.execute(
                    "UPDATE segments SET bytes = bytes + ?1 WHERE id = ?2",
                    params![bytes as i64, id],
                )? == 0
                {
                    return Ok(false);
                }
                {
                    let mut st = tx.prepare_cached(
                        "INSERT OR IGNORE INTO objects (hash, kind, segment, off, len)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?;
                    let mut off = start;
                    for (h, k, d) in run {
                        st.execute(params![
                            &h.0[..],
                            kind_code(*k),
                            id,
                            off as i64,
                            d.len() as i64
                        ])?;
                        off += d.len() as u64;
                    }
                }
                tx.commit()?;
                Ok(true)
            });
            match indexed {
                Some(true) => {
                    seg.len += bytes;
                    rest = later;
                }
                // Forgotten by a trim: the run goes to a new segment.
                Some(false) => *appending = None,
                None => {
                    *appending = None;
                    return;
                }
            }
        }
        drop(appending);
        let size: u64 = objects.iter().map(|o| o.2.len() as u64).sum();
        let added = self.added.fetch_add(size, Ordering::Relaxed) + size;
        if added > self.cap / 8 {
            Shared::trim_in_background(self);
        }
    }

    /// This process's segment with room left, starting a new one when there is none.
    fn segment<'a>(&self, appending: &'a mut Option<Appending>) -> Option<&'a mut Appending> {
        if appending
            .as_ref()
            .is_some_and(|s| s.len >= self.segment_max)
        {
            *appending = None;
        }
        if appending.is_none() {
            let id = self.with_index(|c| {
                c.prepare_cached("INSERT INTO segments (bytes, used) VALUES (0, ?1)")?
                    .execute(params![now_s()])?;
                Ok(c.last_insert_rowid())
            })?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(self.segment_path(id));
            match file {
                Ok(file) => *appending = Some(Appending { id, file, len: 0 }),
                Err(e) => {
                    tracing::warn!(error = %e, "object cache segment");
                    return None;
                }
            }
        }
        appending.as_mut()
    }

    fn trim_in_background(this: &Arc<Self>) {
        if this.trimming.swap(true, Ordering::AcqRel) {
            return;
        }
        this.added.store(0, Ordering::Relaxed);
        let me = this.clone();
        let spawned = std::thread::Builder::new()
            .name("burrow-cache-trim".into())
            .spawn(move || {
                me.trim();
                me.trimming.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            this.trimming.store(false, Ordering::Release);
        }
    }

    /// Forgets the least recently used segments until the cache is at 90% of its size, then
    /// deletes their files (and files no segment names, of writers that died).
    pub(crate) fn trim(&self) {
        let cap = self.cap;
        let doomed = self.with_index(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut segments: Vec<(i64, i64)> = tx
                .prepare("SELECT id, bytes FROM segments ORDER BY used, id")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let mut total: u64 = segments.iter().map(|s| s.1 as u64).sum();
            let goal = cap / 10 * 9;
            let mut doomed = Vec::new();
            if total > cap {
                for (id, bytes) in segments.drain(..) {
                    if total <= goal {
                        break;
                    }
                    tx.execute("DELETE FROM objects WHERE segment = ?1", [id])?;
                    tx.execute("DELETE FROM segments WHERE id = ?1", [id])?;
                    total -= bytes as u64;
                    doomed.push(id);
                }
            }
            tx.commit()?;
            let known: std::collections::HashSet<i64> = c
                .prepare("SELECT id FROM segments")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok((doomed, known))
        });
        let Some((doomed, known)) = doomed else {
            return;
        };
        {
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            for id in &doomed {
                files.remove(id);
                let _ = std::fs::remove_file(self.segment_path(*id));
            }
        }
        // Files no segment names, of a trim that died between its commit and its deletes.
        // Only old ones: a segment made since `known` was read is not in it.
        if let Ok(entries) = std::fs::read_dir(self.dir.join("s")) {
            for e in entries.flatten() {
                let id = e.file_name().to_str().and_then(|n| n.parse::<i64>().ok());
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .map(|t| t.elapsed().unwrap_or_default() > TOUCH_EVERY)
                    .unwrap_or(false);
                if old && id.is_none_or(|id| !known.contains(&id)) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        // The file-per-object layout of earlier versions.
        for old in ["p", "n", "tmp"] {
            let _ = std::fs::remove_dir_all(self.dir.join(old));
        }
        let _ = std::fs::write(self.dir.join("trimmed"), b"");
    }
}

impl Drop for Shared {
    /// The index's connections close without a checkpoint, as the store's do, and for the
    /// same reason its log is emptied by the closer that leaves a large one.
    fn drop(&mut self) {
        let pool = self.pool.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = pool.first() {
            super::sqlite::empty_large_wal(conn, &self.dir.join("index.db"));
        }
    }
}

impl Cached {
    /// Writes objects just put to the remote into the local cache too.
    fn remember(&self, objects: &[NewObject<'_>]) {
        let run: Vec<_> = objects.iter().map(|o| (o.hash, o.kind, o.data)).collect();
        self.shared.write(&run);
    }
}

impl ObjectStore for Cached {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.remote.put_many(objects)?;
        self.remember(objects);
        Ok(())
    }

    fn put_small(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.remote.put_small(objects)?;
        self.remember(objects);
        Ok(())
    }

    fn put_many_behind(&self, objects: &[NewObject<'_>]) -> Result<PutTicket> {
        let ticket = self.remote.put_many_behind(objects)?;
        // Cached on a thread of its own (a hash names its bytes, whether the upload ends
        // well or not), so a large call's thousands of files cost it nothing; with writers
        // already busy, here.
        if self.shared.writers.fetch_add(1, Ordering::AcqRel) < WRITERS_MAX {
            let owned: Vec<(Hash, ObjectKind, Vec<u8>)> = objects
                .iter()
                .map(|o| (o.hash, o.kind, o.data.to_vec()))
                .collect();
            let me = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("burrow-cache-write".into())
                .spawn(move || {
                    let run: Vec<_> = owned.iter().map(|(h, k, d)| (*h, *k, &d[..])).collect();
                    me.write(&run);
                    me.writers.fetch_sub(1, Ordering::AcqRel);
                });
            if spawned.is_ok() {
                return Ok(ticket);
            }
        }
        let run: Vec<_> = objects.iter().map(|o| (o.hash, o.kind, o.data)).collect();
        self.shared.write(&run);
        self.shared.writers.fetch_sub(1, Ordering::AcqRel);
        Ok(ticket)
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        if let Some(d) = self.shared.read(hash, kind) {
            return Ok(Some(d));
        }
        let got = self.remote.get(hash, kind)?;
        if let Some(d) = &got {
            self.shared.write(&[(*hash, kind, d)]);
        }
        Ok(got)
    }

    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let mut out = Vec::with_capacity(hashes.len());
        let mut missing = Vec::new();
        for h in hashes {
            match self.shared.read(h, kind) {
                Some(d) => out.push((*h, d)),
                None => missing.push(*h),
            }
        }
        if !missing.is_empty() {
            let got = self.remote.get_many(&missing, kind)?;
            let run: Vec<_> = got.iter().map(|(h, d)| (*h, kind, &d[..])).collect();
            self.shared.write(&run);
            out.extend(got);
        }
        Ok(out)
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        self.remote.exists_many(objects)
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        // Cached copies of deleted objects stay until trimmed: nothing references them, and
        // a commit that needs the bytes again puts them to the remote anyway.
        self.remote.delete_unreferenced(written_before, referenced)
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        self.remote.totals()
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        self.remote.list()
    }

    fn uncached(&self) -> Option<&dyn ObjectStore> {
        Some(&*self.remote)
    }

    fn remove(&self, hashes: &[Hash]) -> Result<()> {
        // The cached copies stay: the objects were copied elsewhere, not deleted.
        self.remote.remove(hashes)
    }

    fn offload(&self, deadline: std::time::Instant) -> Result<u64> {
        self.remote.offload(deadline)
    }

    fn prepare_offload(&self) -> Result<()> {
        self.remote.prepare_offload()
    }

    fn index_kind(&self, kind: ObjectKind) -> Result<()> {
        self.remote.index_kind(kind)
    }

    fn set_sweep_lease(&self, until: Option<std::time::Instant>) {
        self.remote.set_sweep_lease(until)
    }

    fn needs_sweep_fence(&self) -> bool {
        self.remote.needs_sweep_fence()
    }

    fn location(&self) -> Option<String> {
        self.remote.location()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sqlite::Sqlite;

    fn obj(data: &[u8]) -> (Hash, Vec<u8>) {
        (Hash::of(data), data.to_vec())
    }

    fn news(objs: &[(Hash, Vec<u8>)]) -> Vec<NewObject<'_>> {
        objs.iter()
            .map(|(h, d)| NewObject {
                hash: *h,
                kind: ObjectKind::Page,
                data: d,
            })
            .collect()
    }

    impl Cached {
        /// Where the cache keeps a page: (segment file, offset, length).
        fn locate(&self, hash: &Hash) -> Option<(PathBuf, u64, usize)> {
            let (id, off, len) = self.shared.with_index(|c| {
                c.query_row(
                    "SELECT segment, off, len FROM objects WHERE hash = ?1 AND kind = 0",
                    [&hash.0[..]],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                        ))
                    },
                )
                .optional()
            })??;
            Some((self.shared.segment_path(id), off as u64, len as usize))
        }

        fn wait_for_trim(&self) {
            while self.shared.trimming.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// A temporary directory holding an SQLite store (the remote) and the place of a cache
    /// in front of it.
    struct Fixture {
        dir: tempfile::TempDir,
        db: Arc<Sqlite>,
        at: PathBuf,
    }

    fn fixture() -> Result<Fixture> {
        let dir = tempfile::tempdir()?;
        let db = Arc::new(Sqlite::open(
            &dir.path().join("s.db"),
            crate::Durability::Normal,
            Duration::from_secs(5),
        )?);
        let at = dir.path().join("cache");
        Ok(Fixture { dir, db, at })
    }

    impl Fixture {
        /// A cache of `size` bytes there, as a process opens it.
        fn cache(&self, size: u64) -> Result<Cached> {
            Cached::new(self.db.clone(), &self.at, size)
        }
    }

    #[test]
    fn reads_through_verifies_and_trims() -> Result<()> {
        let f = fixture()?;
        let (dir, db) = (&f.dir, &f.db);
        let cache = f.cache(64 << 10)?;
        let objs: Vec<_> = (0..40u8).map(|i| obj(&[i; 4096])).collect();
        let news = news(&objs);
        // Written through: in the remote and in the cache.
        db.put_many(&news[..1])?;
        cache.put_many(&news[1..2])?;
        assert!(cache.locate(&objs[1].0).is_some());
        assert!(cache.locate(&objs[0].0).is_none());
        // Read through: a miss fills the cache.
        assert_eq!(
            cache.get(&objs[0].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[0].1[..])
        );
        let (path, off, len) = cache.locate(&objs[0].0).expect("cached on read");
        let f = std::fs::OpenOptions::new().write(true).open(&path)?;
        let mut back = vec![0; len];
        File::open(&path)?.read_exact_at(&mut back, off)?;
        assert_eq!(back, objs[0].1);
        // A damaged range is dropped and read again from the remote.
        f.write_all_at(b"garbage", off)?;
        assert_eq!(
            cache.get(&objs[0].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[0].1[..])
        );
        let (path, off, len) = cache.locate(&objs[0].0).expect("cached again");
        File::open(&path)?.read_exact_at(&mut back[..len], off)?;
        assert_eq!(back, objs[0].1);
        // Bounded: 40 x 4 KiB into a 64 KiB cache, least recently used first out. Every
        // segment is made an hour old, then one object is read (which refreshes its
        // segment) before the trim.
        cache.put_many(&news)?;
        cache.wait_for_trim();
        let hour_ago = now_s() - 3600;
        cache
            .shared
            .with_index(|c| c.execute("UPDATE segments SET used = ?1", [hour_ago]));
        cache.get(&objs[3].0, ObjectKind::Page)?;
        cache.shared.trim();
        assert!(cache.locate(&objs[3].0).is_some());
        let (objects, bytes) = cache.usage();
        assert!(bytes <= 64 << 10, "{bytes} bytes cached");
        assert!(objects > 0 && objects < 40, "{objects} objects cached");
        // The files of forgotten segments are gone: what is on disk is what is indexed.
        let on_disk: u64 = std::fs::read_dir(dir.path().join("cache/s"))?
            .map(|e| e.and_then(|e| e.metadata()).map(|m| m.len()))
            .sum::<std::io::Result<u64>>()?;
        assert!(on_disk <= 64 << 10, "{on_disk} bytes in segment files");
        // Everything still reads (from the remote where evicted).
        let hashes: Vec<Hash> = objs.iter().map(|o| o.0).collect();
        assert_eq!(cache.get_many(&hashes, ObjectKind::Page)?.len(), 40);
        Ok(())
    }

    #[test]
    fn a_batch_is_one_segment_and_processes_share_the_directory() -> Result<()> {
        let f = fixture()?;
        let a = f.cache(1 << 30)?;
        let b = f.cache(1 << 30)?;
        let objs: Vec<_> = (0..100u32)
            .map(|i| obj(&i.to_le_bytes().repeat(1000)))
            .collect();
        a.put_many_behind(&news(&objs[..50]))?.wait()?;
        // One batch, one segment file (written by a background thread: wait for it).
        let mut located = None;
        for _ in 0..5000 {
            located = a.locate(&objs[49].0);
            if located.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let (seg, _, _) = located.expect("the batch is cached");
        for (h, _) in &objs[..50] {
            assert_eq!(a.locate(h).map(|l| l.0).as_ref(), Some(&seg));
        }
        // Another process on the same directory appends to its own segment and reads the
        // first one's objects from the cache.
        b.put_many(&news(&objs[50..]))?;
        let (other, _, _) = b.locate(&objs[50].0).expect("cached");
        assert_ne!(other, seg);
        assert_eq!(
            b.get(&objs[7].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[7].1[..])
        );
        assert_eq!(a.usage().0, 100);
        Ok(())
    }

    #[test]
    fn a_large_index_log_is_emptied_when_the_cache_closes() -> Result<()> {
        let f = fixture()?;
        let cache = f.cache(1 << 30)?;
        let objs: Vec<_> = (0..30_000u32).map(|i| obj(&i.to_le_bytes())).collect();
        cache.put_many(&news(&objs))?;
        let wal = f.at.join("index.db-wal");
        assert!(std::fs::metadata(&wal)?.len() > crate::backend::sqlite::WAL_TRUNCATE_BYTES);
        drop(cache);
        assert_eq!(std::fs::metadata(&wal)?.len(), 0);
        // Nothing was lost with it.
        let again = f.cache(1 << 30)?;
        assert_eq!(again.usage().0, 30_000);
        Ok(())
    }

    #[test]
    fn a_segment_another_process_forgot_is_not_appended_to() -> Result<()> {
        let f = fixture()?;
        // Left by the file-per-object layout of earlier versions.
        std::fs::create_dir_all(f.at.join("p/ab"))?;
        let a = f.cache(1 << 30)?;
        a.wait_for_trim();
        assert!(!f.at.join("p").exists());
        let objs: Vec<_> = (0..2u8).map(|i| obj(&[i; 100])).collect();
        let news = news(&objs);
        a.put_many(&news[..1])?;
        // A process with a zero-size cache trims everything, a's open segment too.
        let trimmer = f.cache(0)?;
        trimmer.wait_for_trim();
        trimmer.shared.trim();
        assert!(a.locate(&objs[0].0).is_none());
        // a's next write goes to a new segment, whose objects read back.
        a.put_many(&news[1..])?;
        let (path, _, _) = a.locate(&objs[1].0).expect("cached in a new segment");
        assert!(path.exists());
        assert_eq!(
            a.get(&objs[1].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[1].1[..])
        );
        Ok(())
    }
}
