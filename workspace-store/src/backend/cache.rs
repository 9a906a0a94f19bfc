//! A local on-disk cache of objects in front of a remote [`ObjectStore`] (object storage, or
//! objects in PostgreSQL), so a warm process reads pages at local-disk speed.
//!
//! Objects are immutable and named by their hash, so a cached copy is never stale and needs
//! no invalidation: the cache only has to bound its size. Files live at `DIR/p|n/HH/HASH`;
//! every read verifies the content against its hash (a damaged file is dropped and read
//! from the remote again). Writes go to a temporary name and are renamed into place, so
//! several processes may share one directory.
//!
//! Eviction is least-recently-used by file time: a hit refreshes the file's modification
//! time when it is more than [`TOUCH_EVERY`] old (one syscall per file per interval, not per
//! read), and a trim deletes the oldest files until the cache is at 90% of its size. A trim
//! runs in a background thread when the process has added an eighth of the size since the
//! last one, and at open when no process has trimmed for [`TOUCH_EVERY`] (so a short-lived
//! CLI process does not scan a large cache every time it starts).
//!
//! Writes are write-through: a put goes to the remote first and then into the cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::{NewObject, ObjectKind, ObjectStore, PutTicket};
use crate::error::Result;
use crate::node::Hash;

/// How stale a file's time may get before a hit refreshes it (and how often a new process
/// trims at open).
pub const TOUCH_EVERY: Duration = Duration::from_secs(600);

/// An on-disk object cache over `remote`.
pub struct Cached {
    remote: Arc<dyn ObjectStore>,
    shared: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    cap: u64,
    /// Bytes this process added since its last trim.
    added: AtomicU64,
    trimming: AtomicBool,
    tmp_seq: AtomicU64,
    /// Background writers of [`ObjectStore::put_many_behind`]'s objects under way.
    writers: std::sync::atomic::AtomicUsize,
}

/// Background cache writers at most at once.
const WRITERS_MAX: usize = 2;

impl Cached {
    /// A cache of at most `cap` bytes in `dir` (created if missing) in front of `remote`.
    pub fn new(remote: Arc<dyn ObjectStore>, dir: &Path, cap: u64) -> Result<Cached> {
        std::fs::create_dir_all(dir.join("tmp"))?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            cap,
            added: AtomicU64::new(0),
            trimming: AtomicBool::new(false),
            tmp_seq: AtomicU64::new(0),
            writers: Default::default(),
        });
        let stamp = dir.join("trimmed");
        let stale = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .map(|t| t.elapsed().unwrap_or_default() > TOUCH_EVERY)
            .unwrap_or(true);
        if stale {
            Shared::trim_in_background(&shared);
        }
        Ok(Cached { remote, shared })
    }

    /// What the cache holds: (files, bytes). Scans the directory.
    pub fn usage(&self) -> (u64, u64) {
        let files = self.shared.files();
        (files.len() as u64, files.iter().map(|f| f.1).sum())
    }
}

impl Shared {
    fn path(&self, hash: &Hash, kind: ObjectKind) -> PathBuf {
        let hex = hash.to_hex();
        let k = match kind {
            ObjectKind::Page => "p",
            ObjectKind::Node => "n",
        };
        self.dir.join(k).join(&hex[..2]).join(hex)
    }

    fn read(&self, hash: &Hash, kind: ObjectKind) -> Option<Vec<u8>> {
        use std::io::Read;
        let path = self.path(hash, kind);
        let mut f = std::fs::File::open(&path).ok()?;
        let mut data = Vec::new();
        f.read_to_end(&mut data).ok()?;
        if Hash::of(&data) != *hash {
            tracing::warn!(path = %path.display(), "damaged cache file dropped");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        // Recency for the LRU trim, refreshed at most every TOUCH_EVERY (setting explicit
        // times needs ownership, not a writable descriptor).
        if let Ok(m) = f.metadata()
            && m.modified()
                .map(|t| t.elapsed().unwrap_or_default() > TOUCH_EVERY)
                .unwrap_or(false)
        {
            let _ = f.set_modified(SystemTime::now());
        }
        Some(data)
    }

    /// Best effort: a cache that cannot write only makes reads slower.
    fn write(self: &Arc<Self>, hash: &Hash, kind: ObjectKind, data: &[u8]) {
        let path = self.path(hash, kind);
        if path.exists() {
            return;
        }
        let tmp = self.dir.join("tmp").join(format!(
            "{}.{}.{}",
            hash.to_hex(),
            std::process::id(),
            self.tmp_seq.fetch_add(1, Ordering::Relaxed)
        ));
        let done = (|| -> std::io::Result<()> {
            std::fs::write(&tmp, data)?;
            match std::fs::rename(&tmp, &path) {
                // The first file of its directory: made then, not at open (a new process
                // with an empty cache would pay 512 of them before its first read).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::fs::rename(&tmp, &path)
                }
                r => r,
            }
        })();
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return;
        }
        let added = self.added.fetch_add(data.len() as u64, Ordering::Relaxed) + data.len() as u64;
        if added > self.cap / 8 {
            Shared::trim_in_background(self);
        }
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

    /// Every cached file: (path, size, modified).
    fn files(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let mut out = Vec::new();
        for k in ["p", "n"] {
            let Ok(fans) = std::fs::read_dir(self.dir.join(k)) else {
                continue;
            };
            for fan in fans.flatten() {
                let Ok(entries) = std::fs::read_dir(fan.path()) else {
                    continue;
                };
                for e in entries.flatten() {
                    if let Ok(m) = e.metadata() {
                        let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                        out.push((e.path(), m.len(), t));
                    }
                }
            }
        }
        out
    }

    /// Deletes the least recently used files until the cache is at 90% of its size.
    pub(crate) fn trim(&self) {
        let mut files = self.files();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        if total > self.cap {
            files.sort_by_key(|f| f.2);
            let goal = self.cap / 10 * 9;
            for (path, size, _) in files {
                if total <= goal {
                    break;
                }
                if std::fs::remove_file(&path).is_ok() {
                    total -= size;
                }
            }
        }
        // Temporary files of writers that died.
        if let Ok(tmps) = std::fs::read_dir(self.dir.join("tmp")) {
            for t in tmps.flatten() {
                let old = t
                    .metadata()
                    .and_then(|m| m.modified())
                    .map(|m| m.elapsed().unwrap_or_default() > TOUCH_EVERY)
                    .unwrap_or(false);
                if old {
                    let _ = std::fs::remove_file(t.path());
                }
            }
        }
        let _ = std::fs::write(self.dir.join("trimmed"), b"");
    }
}

impl ObjectStore for Cached {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        self.remote.put_many(objects)?;
        for o in objects {
            self.shared.write(&o.hash, o.kind, o.data);
        }
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
                    for (h, k, d) in owned {
                        me.write(&h, k, &d);
                    }
                    me.writers.fetch_sub(1, Ordering::AcqRel);
                });
            if spawned.is_ok() {
                return Ok(ticket);
            }
        }
        for o in objects {
            self.shared.write(&o.hash, o.kind, o.data);
        }
        self.shared.writers.fetch_sub(1, Ordering::AcqRel);
        Ok(ticket)
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        if let Some(d) = self.shared.read(hash, kind) {
            return Ok(Some(d));
        }
        let got = self.remote.get(hash, kind)?;
        if let Some(d) = &got {
            self.shared.write(hash, kind, d);
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
            for (h, d) in self.remote.get_many(&missing, kind)? {
                self.shared.write(&h, kind, &d);
                out.push((h, d));
            }
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

    #[test]
    fn reads_through_verifies_and_trims() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let db = Arc::new(Sqlite::open(
            &dir.path().join("s.db"),
            crate::Durability::Normal,
            Duration::from_secs(5),
        )?);
        let cache = Cached::new(db.clone(), &dir.path().join("cache"), 64 << 10)?;
        let objs: Vec<_> = (0..40u8).map(|i| obj(&[i; 4096])).collect();
        let news: Vec<NewObject<'_>> = objs
            .iter()
            .map(|(h, d)| NewObject {
                hash: *h,
                kind: ObjectKind::Page,
                data: d,
            })
            .collect();
        // Written through: in the remote and in the cache.
        db.put_many(&news[..1])?;
        cache.put_many(&news[1..2])?;
        assert!(cache.shared.path(&objs[1].0, ObjectKind::Page).exists());
        // Read through: a miss fills the cache.
        assert_eq!(
            cache.get(&objs[0].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[0].1[..])
        );
        let p0 = cache.shared.path(&objs[0].0, ObjectKind::Page);
        assert!(p0.exists());
        // A damaged file is dropped and read again from the remote.
        std::fs::write(&p0, b"garbage")?;
        assert_eq!(
            cache.get(&objs[0].0, ObjectKind::Page)?.as_deref(),
            Some(&objs[0].1[..])
        );
        assert_eq!(std::fs::read(&p0)?, objs[0].1);
        // Bounded: 40 x 4 KiB into a 64 KiB cache, least recently used first out. Every file
        // is made an hour old, then one is read (which refreshes it) before the trim.
        cache.put_many(&news)?;
        // The puts started a trim in the background; let it finish first.
        while cache.shared.trimming.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for (path, _, _) in cache.shared.files() {
            std::fs::File::open(&path)?.set_modified(hour_ago)?;
        }
        cache.get(&objs[3].0, ObjectKind::Page)?;
        cache.shared.trim();
        assert!(cache.shared.path(&objs[3].0, ObjectKind::Page).exists());
        let (_, bytes) = cache.usage();
        assert!(bytes <= 64 << 10, "{bytes} bytes cached");
        // Everything still reads (from the remote where evicted).
        let hashes: Vec<Hash> = objs.iter().map(|o| o.0).collect();
        assert_eq!(cache.get_many(&hashes, ObjectKind::Page)?.len(), 40);
        Ok(())
    }
}
