//! The SQLite file, the embedded default: one database that is both the [`ObjectStore`] and
//! the [`Catalog`], so a commit's objects, version row, head move and events are one SQLite
//! transaction. Schema and migrations, connection settings and every statement live here;
//! nothing else in the crate writes SQL.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::now_ns;
use super::{
    Catalog, CatalogCapabilities, CatalogDump, CommitRecord, Guard, HeadRow, NewObject, NewVersion,
    ObjectKind, ObjectStore, RefSnapshot, VersionRow,
};
use crate::error::{Error, Result};
use crate::event::{Event, EventFilter, NewEvent};
use crate::node::Hash;
use crate::{Durability, Quota, VersionId};

/// `PRAGMA application_id` of a burrow store ("BRRW").
const APPLICATION_ID: i64 = 0x4252_5257;
/// Current schema version (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 3;

/// Kind column of the objects table (for statistics; objects self-describe).
const OBJ_PAGE: i64 = 0;
const OBJ_NODE: i64 = 1;

/// The `synchronous` pragma's value for `durability`.
fn synchronous(durability: Durability) -> &'static str {
    match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    }
}

fn kind_code(kind: ObjectKind) -> i64 {
    match kind {
        ObjectKind::Page => OBJ_PAGE,
        ObjectKind::Node => OBJ_NODE,
    }
}

const SCHEMA_V1: &str = "
CREATE TABLE objects (
    hash    BLOB PRIMARY KEY,
    kind    INTEGER NOT NULL,
    data    BLOB NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE versions (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    root      BLOB NOT NULL,
    parent    INTEGER,
    workspace TEXT NOT NULL,
    time      INTEGER NOT NULL,
    message   TEXT NOT NULL,
    next_ino  INTEGER NOT NULL,
    bytes     INTEGER NOT NULL,
    entries   INTEGER NOT NULL
);
CREATE INDEX versions_by_workspace ON versions(workspace, id);
CREATE TABLE heads (
    name          TEXT PRIMARY KEY,
    version       INTEGER NOT NULL,
    created       INTEGER NOT NULL,
    quota_bytes   INTEGER,
    quota_entries INTEGER
);
CREATE TABLE labels (
    name    TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    created INTEGER NOT NULL
);
";

/// Version 2: per-workspace metadata (with unique names), the event log, last activity.
/// Store-wide settings (where the objects live, the GC sweep state).
const SCHEMA_V3: &str = "
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
";

const SCHEMA_V2: &str = "
ALTER TABLE heads ADD COLUMN last_active INTEGER;
CREATE TABLE workspace_meta (
    workspace TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (workspace, key)
) WITHOUT ROWID;
CREATE UNIQUE INDEX workspace_names ON workspace_meta(value) WHERE key = 'name';
CREATE TABLE events (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace      TEXT NOT NULL,
    time           INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    version_before INTEGER,
    version_after  INTEGER,
    data           TEXT NOT NULL
);
CREATE INDEX events_by_workspace ON events(workspace, seq);
";

/// The SQLite database: one connection that writes, a small pool that reads.
pub struct Sqlite {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    busy_timeout: Duration,
    durability: Durability,
}

/// A store closed with a write-ahead log larger than this folds it into the database and
/// empties it ([`Sqlite`]'s `Drop`).
pub const WAL_TRUNCATE_BYTES: u64 = 1 << 20;

impl Drop for Sqlite {
    /// Connections close without checkpointing (see `connect`), so the log outlives the
    /// process. The next process to open the store rebuilds its index of the log by reading
    /// all of it, and SQLite only starts the log over from a checkpoint that the same index
    /// saw complete: with one process per call, the log never started over. It grew by
    /// about 17 KB a call (5.3 MB after 300 `burrow tool` calls), every process read and
    /// checksummed all of it on open (a read call took 13.1 ms against 7.1 ms with an empty
    /// log), and every commit past 1,000 frames checkpointed again with three fsyncs. So the
    /// process that leaves more than [`WAL_TRUNCATE_BYTES`] behind checkpoints and empties
    /// the log, if no other connection is reading (it does not wait: another process will).
    fn drop(&mut self) {
        let conn = self.writer.get_mut().unwrap_or_else(|p| p.into_inner());
        empty_large_wal(conn, &self.path);
    }
}

/// Makes `conn` close without checkpointing and leave the write-ahead log in place. A
/// process's last connection would otherwise checkpoint the log into the database (with
/// fsyncs) and delete it: with one CLI call per process, that was a millisecond of every
/// call. The log then outlives processes, so whoever closes such connections also calls
/// [`empty_large_wal`] (see [`Sqlite`]'s `Drop`).
pub(crate) fn leave_wal_on_close(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    conn.file_control(
        Some(rusqlite::MAIN_DB),
        rusqlite::FileControl::PersistWal(&mut 1),
    )
}

/// If the write-ahead log of the database at `db` (open on `conn`) is larger than
/// [`WAL_TRUNCATE_BYTES`], checkpoints it and empties it, without waiting for readers (a
/// busy log is left for the next closer). For a closing connection that leaves its log
/// behind: see [`Sqlite`]'s `Drop`.
pub(crate) fn empty_large_wal(conn: &Connection, db: &Path) {
    let wal = {
        let mut p = db.to_path_buf().into_os_string();
        p.push("-wal");
        PathBuf::from(p)
    };
    let large = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_TRUNCATE_BYTES);
    if !large {
        return;
    }
    let done = conn.busy_timeout(Duration::ZERO).and_then(|()| {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
    });
    match done {
        Ok(0) => tracing::debug!(wal = %wal.display(), "write-ahead log emptied"),
        Ok(_) => tracing::debug!(wal = %wal.display(), "write-ahead log in use; left"),
        Err(e) => tracing::debug!(error = %e, "write-ahead log checkpoint"),
    }
}

fn hash_of(blob: Vec<u8>) -> Result<Hash> {
    let arr: [u8; 32] = blob
        .try_into()
        .map_err(|_| Error::Corrupt("hash column is not 32 bytes".into()))?;
    Ok(Hash(arr))
}

type RawVersion = (
    i64,
    Vec<u8>,
    Option<i64>,
    String,
    i64,
    String,
    i64,
    i64,
    i64,
);

fn row_to_version(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawVersion> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
    ))
}

fn to_version(v: RawVersion) -> Result<VersionRow> {
    Ok(VersionRow {
        id: VersionId(v.0),
        root: hash_of(v.1)?,
        parent: v.2.map(VersionId),
        workspace: v.3,
        time: v.4,
        message: v.5,
        next_ino: v.6 as u64,
        bytes: v.7 as u64,
        entries: v.8 as u64,
    })
}

const VERSION_COLS: &str = "id, root, parent, workspace, time, message, next_ino, bytes, entries";

impl Sqlite {
    pub fn open(path: &Path, durability: Durability, busy_timeout: Duration) -> Result<Sqlite> {
        let display = path.display().to_string();
        let writer = Self::connect(path, durability, busy_timeout, true)
            .map_err(|e| Self::explain(e, &display))?;
        let db = Sqlite {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            busy_timeout,
            durability,
        };
        db.migrate().map_err(|e| Self::explain(e, &display))?;
        Ok(db)
    }

    fn explain(e: Error, path: &str) -> Error {
        match e {
            Error::NotAStore { why, .. } => Error::NotAStore {
                path: path.to_string(),
                why,
            },
            other => other,
        }
    }

    /// Opens a connection; the writer (the one that may create the file) is tuned for
    /// writing, the others for reading.
    fn connect(
        path: &Path,
        durability: Durability,
        busy_timeout: Duration,
        writer: bool,
    ) -> Result<Connection> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        if writer {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(busy_timeout)?;
        // journal_mode returns a row; WAL lets readers proceed while one writer commits.
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(
                mode,
                "store could not switch to WAL; concurrent readers may block"
            );
        }
        let sync = synchronous(durability);
        // Readers map the file (reads without a copy into SQLite's cache). The one writer
        // does not, and keeps a small cache: a transaction writing a large file streams its
        // pages through it, and neither should grow the process by the size of that file.
        let (mmap, cache_kib) = if writer {
            (0, 8 << 10)
        } else {
            (256 << 20, 32 << 10)
        };
        conn.execute_batch(&format!(
            "PRAGMA synchronous={sync}; PRAGMA mmap_size={mmap}; PRAGMA cache_size=-{cache_kib}; PRAGMA foreign_keys=OFF;"
        ))?;
        conn.set_prepared_statement_cache_capacity(64);
        leave_wal_on_close(&conn)?;
        Ok(conn)
    }

    fn migrate(&self) -> Result<()> {
        let mut conn = self.lock_writer();
        let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let ver: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if app == APPLICATION_ID {
            if ver > SCHEMA_VERSION {
                return Err(Error::SchemaTooNew {
                    found: ver,
                    supported: SCHEMA_VERSION,
                });
            }
            if ver == SCHEMA_VERSION {
                return Ok(());
            }
        } else {
            let tables: i64 =
                conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if app != 0 || tables != 0 {
                return Err(Error::NotAStore {
                    path: String::new(),
                    why: "an SQLite database of another application".into(),
                });
            }
        }
        // Migrations run in one immediate transaction: two processes creating the same new
        // store serialise here and the second sees the first's schema.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let ver: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if ver < 1 {
            tx.execute_batch(SCHEMA_V1)?;
        }
        if ver < 2 {
            tx.execute_batch(SCHEMA_V2)?;
        }
        if ver < 3 {
            tx.execute_batch(SCHEMA_V3)?;
        }

        tx.execute_batch(&format!(
            "PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version={SCHEMA_VERSION};"
        ))?;
        tx.commit()?;
        Ok(())
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A poisoned lock means a panic elsewhere mid-statement; SQLite's own transaction
        // state is still consistent, so keep going with the connection.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in one immediate write transaction (the only writer of this process; other
    /// processes wait up to the busy timeout).
    fn write<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        Self::write_on(&self.lock_writer(), f)
    }

    fn write_on<T>(
        conn: &Connection,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// [`Sqlite::write`] whose commit is on disk before it returns, whatever the store's
    /// durability: with `synchronous=FULL` the commit syncs the log, and with it every commit
    /// before it. GC's writes go this way: with objects in object storage, GC deletes from
    /// there on their strength, and a power loss that undid a version's deletion after its
    /// objects were deleted would leave that version without them.
    fn write_durable<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let conn = self.lock_writer();
        if self.durability == Durability::Full {
            return Self::write_on(&conn, f);
        }
        let pragma = |d| format!("PRAGMA synchronous={}", synchronous(d));
        conn.execute_batch(&pragma(Durability::Full))?;
        let out = Self::write_on(&conn, f);
        conn.execute_batch(&pragma(self.durability))?;
        out
    }

    fn setting(c: &Connection, key: &str) -> Result<Option<String>> {
        Ok(c.query_row(
            "SELECT value FROM settings WHERE key = ?1",
            params![key],
            |r| r.get(0),
        )
        .optional()?)
    }

    /// [`Guard`]'s check, inside the write transaction (which holds the write lock, as every
    /// setting swap does).
    fn check_guard(tx: &Connection, guard: Option<Guard<'_>>) -> Result<()> {
        match guard {
            Some(g) if Self::setting(tx, g.key)?.as_deref() != g.value => Err(Error::Fenced),
            _ => Ok(()),
        }
    }

    /// Runs `f` on a reader connection (WAL: never blocked by the writer).
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = {
            let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
            pool.pop()
        };
        let conn = match conn {
            Some(c) => c,
            None => Self::connect(&self.path, Durability::Normal, self.busy_timeout, false)?,
        };
        let out = f(&conn);
        let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < 8 {
            pool.push(conn);
        }
        out
    }

    fn get_object(&self, hash: &Hash) -> Result<Option<Vec<u8>>> {
        self.read(|c| {
            let mut st = c.prepare_cached("SELECT data FROM objects WHERE hash = ?1")?;
            Ok(st
                .query_row(params![&hash.0[..]], |r| r.get::<_, Vec<u8>>(0))
                .optional()?)
        })
    }

    /// The objects of `hashes` that exist, in one query per 500 (a directory's children read
    /// together instead of one statement each).
    fn get_objects(&self, hashes: &[Hash]) -> Result<Vec<(Hash, Vec<u8>)>> {
        self.read(|c| {
            let mut out = Vec::with_capacity(hashes.len());
            for chunk in hashes.chunks(500) {
                let marks = vec!["?"; chunk.len()].join(",");
                let mut st = c.prepare_cached(&format!(
                    "SELECT hash, data FROM objects WHERE hash IN ({marks})"
                ))?;
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                let rows = st.query_map(rusqlite::params_from_iter(keys), |r| {
                    Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Vec<u8>>(1)?))
                })?;
                for row in rows {
                    let (h, d) = row?;
                    out.push((hash_of(h)?, d));
                }
            }
            Ok(out)
        })
    }

    /// Inserts objects (idempotent; refreshes `created` so a concurrent GC's grace period
    /// protects objects a live transaction has just re-used).
    fn put_objects(c: &Connection, objs: &[NewObject<'_>]) -> Result<()> {
        if objs.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        let mut st = c.prepare_cached(
            "INSERT INTO objects(hash, kind, data, created) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(hash) DO UPDATE SET created = excluded.created",
        )?;
        for o in objs {
            st.execute(params![&o.hash.0[..], kind_code(o.kind), o.data, now])?;
        }
        Ok(())
    }

    fn version(c: &Connection, id: VersionId) -> Result<VersionRow> {
        let mut st = c.prepare_cached(&format!(
            "SELECT {VERSION_COLS} FROM versions WHERE id = ?1"
        ))?;
        let raw = st
            .query_row(params![id.0], row_to_version)
            .optional()?
            .ok_or(Error::NoVersion(id))?;
        to_version(raw)
    }

    fn all_versions(c: &Connection) -> Result<Vec<VersionRow>> {
        let mut st =
            c.prepare_cached(&format!("SELECT {VERSION_COLS} FROM versions ORDER BY id"))?;
        let rows = st.query_map([], row_to_version)?;
        rows.map(|r| to_version(r?)).collect()
    }

    fn insert_version(c: &Connection, v: &NewVersion<'_>) -> Result<VersionId> {
        let mut st = c.prepare_cached(
            "INSERT INTO versions(root, parent, workspace, time, message, next_ino, bytes, entries)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        st.execute(params![
            &v.root.0[..],
            v.parent.map(|p| p.0),
            v.workspace,
            now_ns(),
            v.message,
            v.next_ino as i64,
            v.bytes as i64,
            v.entries as i64
        ])?;
        Ok(VersionId(c.last_insert_rowid()))
    }

    fn head(c: &Connection, name: &str) -> Result<HeadRow> {
        let mut st = c.prepare_cached(
            "SELECT name, version, created, quota_bytes, quota_entries, last_active FROM heads WHERE name = ?1",
        )?;
        st.query_row(params![name], head_row)
            .optional()?
            .ok_or_else(|| Error::NoWorkspace(name.to_string()))
    }

    fn heads(c: &Connection) -> Result<Vec<HeadRow>> {
        let mut st = c.prepare_cached(
            "SELECT name, version, created, quota_bytes, quota_entries, last_active FROM heads ORDER BY name",
        )?;
        let rows = st.query_map([], head_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn insert_head(c: &Connection, name: &str, version: VersionId) -> Result<()> {
        let mut st = c.prepare_cached(
            "INSERT INTO heads(name, version, created) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING",
        )?;
        if st.execute(params![name, version.0, now_ns()])? == 0 {
            return Err(Error::WorkspaceExists(name.to_string()));
        }
        Ok(())
    }

    /// Compare-and-swap of a head: moves it only if it is still at `expected`.
    fn cas_head(c: &Connection, name: &str, expected: VersionId, new: VersionId) -> Result<()> {
        let mut st =
            c.prepare_cached("UPDATE heads SET version = ?1 WHERE name = ?2 AND version = ?3")?;
        if st.execute(params![new.0, name, expected.0])? == 1 {
            return Ok(());
        }
        let actual = Self::head(c, name)?.version;
        Err(Error::Conflict {
            workspace: name.to_string(),
            expected,
            actual,
        })
    }

    fn set_quota(c: &Connection, name: &str, quota: Quota) -> Result<()> {
        let n = c.execute(
            "UPDATE heads SET quota_bytes = ?1, quota_entries = ?2 WHERE name = ?3",
            params![
                quota.bytes.map(|b| b as i64),
                quota.entries.map(|e| e as i64),
                name
            ],
        )?;
        if n == 0 {
            return Err(Error::NoWorkspace(name.to_string()));
        }
        Ok(())
    }

    fn delete_head(c: &Connection, name: &str) -> Result<()> {
        if c.execute("DELETE FROM heads WHERE name = ?1", params![name])? == 0 {
            return Err(Error::NoWorkspace(name.to_string()));
        }
        c.execute(
            "DELETE FROM workspace_meta WHERE workspace = ?1",
            params![name],
        )?;
        Ok(())
    }

    fn touch(c: &Connection, name: &str) -> Result<()> {
        c.prepare_cached("UPDATE heads SET last_active = ?1 WHERE name = ?2")?
            .execute(params![now_ns(), name])?;
        Ok(())
    }

    fn insert_event(
        c: &Connection,
        workspace: &str,
        kind: &str,
        before: Option<VersionId>,
        after: Option<VersionId>,
        data: &str,
    ) -> Result<i64> {
        c.prepare_cached(
            "INSERT INTO events(workspace, time, kind, version_before, version_after, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            workspace,
            now_ns(),
            kind,
            before.map(|v| v.0),
            after.map(|v| v.0),
            data
        ])?;
        Ok(c.last_insert_rowid())
    }

    fn set_label(c: &Connection, name: &str, version: VersionId) -> Result<()> {
        c.execute(
            "INSERT INTO labels(name, version, created) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET version = excluded.version",
            params![name, version.0, now_ns()],
        )?;
        Ok(())
    }

    fn labels(c: &Connection) -> Result<Vec<(String, VersionId)>> {
        let mut st = c.prepare_cached("SELECT name, version FROM labels ORDER BY name")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, VersionId(r.get(1)?))))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn version_count(c: &Connection, workspace: &str) -> Result<u64> {
        let n: i64 = c
            .prepare_cached("SELECT count(*) FROM versions WHERE workspace = ?1")?
            .query_row(params![workspace], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn version_counts(c: &Connection) -> Result<HashMap<String, u64>> {
        let mut st =
            c.prepare_cached("SELECT workspace, count(*) FROM versions GROUP BY workspace")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (w, n) = row?;
            out.insert(w, u64::try_from(n).unwrap_or(0));
        }
        Ok(out)
    }

    fn delete_label(c: &Connection, name: &str) -> Result<()> {
        if c.execute("DELETE FROM labels WHERE name = ?1", params![name])? == 0 {
            return Err(Error::NoLabel(name.to_string()));
        }
        Ok(())
    }
}

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    Ok(Event {
        seq: r.get(0)?,
        workspace: r.get(1)?,
        time: r.get(2)?,
        kind: r.get(3)?,
        version_before: r.get::<_, Option<i64>>(4)?.map(VersionId),
        version_after: r.get::<_, Option<i64>>(5)?.map(VersionId),
        data: r.get(6)?,
    })
}

fn head_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HeadRow> {
    Ok(HeadRow {
        name: r.get(0)?,
        version: VersionId(r.get(1)?),
        created: r.get(2)?,
        quota: Quota {
            bytes: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
            entries: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
        },
        last_active: r.get(5)?,
    })
}

impl ObjectStore for Sqlite {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        self.write(|tx| Self::put_objects(tx, objects))
    }

    fn get(&self, hash: &Hash, _kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        self.get_object(hash)
    }

    fn get_many(&self, hashes: &[Hash], _kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        self.get_objects(hashes)
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        self.read(|c| {
            let mut st = c.prepare_cached("SELECT 1 FROM objects WHERE hash = ?1")?;
            objects
                .iter()
                .map(|(h, _)| Ok(st.exists(params![&h.0[..]])?))
                .collect()
        })
    }

    fn remove(&self, hashes: &[Hash]) -> Result<()> {
        self.write(|tx| {
            let mut del = tx.prepare("DELETE FROM objects WHERE hash = ?1")?;
            for h in hashes {
                del.execute(params![&h.0[..]])?;
            }
            Ok(())
        })
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        self.write(|tx| {
            let mut doomed = Vec::new();
            {
                let mut st =
                    tx.prepare("SELECT hash, length(data) FROM objects WHERE created < ?1")?;
                let rows = st.query_map(params![written_before], |r| {
                    Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?))
                })?;
                for row in rows {
                    let (h, len) = row?;
                    let Ok(arr) = <[u8; 32]>::try_from(h.as_slice()) else {
                        continue;
                    };
                    if !referenced(&Hash(arr)) {
                        doomed.push((h, len));
                    }
                }
            }
            let mut del = tx.prepare("DELETE FROM objects WHERE hash = ?1 AND created < ?2")?;
            let (mut objects, mut bytes) = (0, 0);
            for (h, len) in &doomed {
                if del.execute(params![h, written_before])? == 1 {
                    objects += 1;
                    bytes += *len as u64;
                }
            }
            Ok((objects, bytes))
        })
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        self.read(|c| {
            let mut st = c.prepare("SELECT hash, kind FROM objects")?;
            let rows = st.query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)))?;
            rows.map(|row| {
                let (h, k) = row?;
                let kind = if k == OBJ_NODE {
                    ObjectKind::Node
                } else {
                    ObjectKind::Page
                };
                Ok((hash_of(h)?, kind))
            })
            .collect()
        })
    }

    fn list_kind(&self, kind: ObjectKind, limit: usize) -> Result<Vec<Hash>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // The kind as a literal: SQLite uses a partial index (`index_kind`) only for a
        // query whose terms imply its condition.
        let sql = format!(
            "SELECT hash FROM objects WHERE kind = {} LIMIT ?1",
            kind_code(kind)
        );
        self.read(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(params![limit], |r| r.get::<_, Vec<u8>>(0))?;
            rows.map(|h| hash_of(h?)).collect()
        })
    }

    /// The pages' partial index, which offloading reads by (the objects of a store that
    /// offloads are mostly tree nodes), made by the first GC that offloads; building it
    /// holds the write lock while it reads the table once.
    fn index_kind(&self, kind: ObjectKind) -> Result<()> {
        if kind != ObjectKind::Page {
            return Ok(());
        }
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS objects_pages ON objects(hash) WHERE kind = {}",
            kind_code(ObjectKind::Page)
        );
        self.write(|tx| Ok(tx.execute_batch(&sql)?))
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        self.read(|c| {
            let (objects, pages, nodes): (i64, i64, i64) = c.query_row(
                "SELECT count(*), coalesce(sum(CASE WHEN kind = 0 THEN length(data) END), 0),
                        coalesce(sum(CASE WHEN kind = 1 THEN length(data) END), 0) FROM objects",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            Ok((objects as u64, pages as u64, nodes as u64))
        })
    }
}

impl Catalog for Sqlite {
    fn version(&self, id: VersionId) -> Result<VersionRow> {
        self.read(|c| Self::version(c, id))
    }

    fn versions(&self) -> Result<Vec<VersionRow>> {
        self.read(Self::all_versions)
    }

    fn head(&self, name: &str) -> Result<HeadRow> {
        self.read(|c| Self::head(c, name))
    }

    fn heads(&self) -> Result<Vec<HeadRow>> {
        self.read(Self::heads)
    }

    fn head_version(&self, name: &str) -> Result<(HeadRow, VersionRow)> {
        self.read(|c| {
            let head = Self::head(c, name)?;
            let base = Self::version(c, head.version)?;
            Ok((head, base))
        })
    }

    fn lineage(&self, name: &str, limit: usize) -> Result<Vec<VersionRow>> {
        self.read(|c| {
            let head = Self::head(c, name)?;
            let mut out = Vec::new();
            let mut cur = Some(head.version);
            while let Some(id) = cur {
                if out.len() >= limit {
                    break;
                }
                match Self::version(c, id) {
                    Ok(v) => {
                        cur = v.parent;
                        out.push(v);
                    }
                    Err(Error::NoVersion(_)) => break,
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
    }

    fn labels(&self) -> Result<Vec<(String, VersionId)>> {
        self.read(Self::labels)
    }

    fn version_count(&self, workspace: &str) -> Result<u64> {
        self.read(|c| Self::version_count(c, workspace))
    }

    fn version_counts(&self) -> Result<HashMap<String, u64>> {
        self.read(Self::version_counts)
    }

    fn totals(&self) -> Result<(u64, u64)> {
        self.read(|c| {
            let versions: i64 = c.query_row("SELECT count(*) FROM versions", [], |r| r.get(0))?;
            let heads: i64 = c.query_row("SELECT count(*) FROM heads", [], |r| r.get(0))?;
            Ok((versions as u64, heads as u64))
        })
    }

    fn create_workspace(
        &self,
        version: &NewVersion<'_>,
        objects: &[NewObject<'_>],
        guard: Option<Guard<'_>>,
    ) -> Result<VersionId> {
        self.write(|tx| {
            Self::check_guard(tx, guard)?;
            Self::put_objects(tx, objects)?;
            let v = Self::insert_version(tx, version)?;
            Self::insert_head(tx, version.workspace, v)?;
            Ok(v)
        })
    }

    fn create_head(&self, name: &str, version: VersionId) -> Result<()> {
        self.write(|tx| {
            Self::version(tx, version)?;
            Self::insert_head(tx, name, version)
        })
    }

    fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        self.write(|tx| {
            let head = Self::head(tx, source)?;
            for n in names {
                Self::insert_head(tx, n, head.version)?;
                Self::set_quota(tx, n, head.quota)?;
            }
            Ok(head.version)
        })
    }

    fn delete_head(&self, name: &str) -> Result<()> {
        self.write(|tx| Self::delete_head(tx, name))
    }

    fn set_quota(&self, name: &str, quota: Quota) -> Result<()> {
        self.write(|tx| Self::set_quota(tx, name, quota))
    }

    fn set_label(&self, name: &str, version: VersionId) -> Result<()> {
        self.write(|tx| {
            Self::version(tx, version)?;
            Self::set_label(tx, name, version)
        })
    }

    fn delete_label(&self, name: &str) -> Result<()> {
        self.write(|tx| Self::delete_label(tx, name))
    }

    fn commit(
        &self,
        record: &CommitRecord<'_>,
        objects: &[NewObject<'_>],
    ) -> Result<(VersionId, Option<i64>)> {
        let ws = record.version.workspace;
        self.write(|tx| {
            Self::check_guard(tx, record.guard)?;
            Self::put_objects(tx, objects)?;
            let v = Self::insert_version(tx, &record.version)?;
            Self::cas_head(tx, ws, record.expected, v)?;
            Self::touch(tx, ws)?;
            for (kind, data) in record.events {
                Self::insert_event(tx, ws, kind, Some(record.expected), Some(v), data)?;
            }
            let seq = match record.event {
                Some((kind, data)) => Some(Self::insert_event(
                    tx,
                    ws,
                    kind,
                    Some(record.expected),
                    Some(v),
                    data,
                )?),
                None => None,
            };
            Ok((v, seq))
        })
    }

    fn checkout(&self, workspace: &str, version: VersionId, message: &str) -> Result<VersionId> {
        self.write(|tx| {
            let head = Self::head(tx, workspace)?;
            let target = Self::version(tx, version)?;
            let cur = Self::version(tx, head.version)?;
            let v = Self::insert_version(
                tx,
                &NewVersion {
                    root: target.root,
                    parent: Some(head.version),
                    workspace,
                    message,
                    next_ino: cur.next_ino.max(target.next_ino),
                    bytes: target.bytes,
                    entries: target.entries,
                },
            )?;
            Self::cas_head(tx, workspace, head.version, v)?;
            Ok(v)
        })
    }

    fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()> {
        let conn = self.lock_writer();
        Self::head(&conn, workspace)?;
        let r = match value {
            Some(v) => conn.execute(
                "INSERT INTO workspace_meta(workspace, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT(workspace, key) DO UPDATE SET value = excluded.value",
                params![workspace, key, v],
            ),
            None => conn.execute(
                "DELETE FROM workspace_meta WHERE workspace = ?1 AND key = ?2",
                params![workspace, key],
            ),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => {
                Err(Error::WorkspaceExists(
                    value.unwrap_or_default().to_string(),
                ))
            }
            Err(e) => Err(e.into()),
        }
    }

    fn meta(&self, workspace: &str) -> Result<BTreeMap<String, String>> {
        self.read(|c| {
            let mut st =
                c.prepare_cached("SELECT key, value FROM workspace_meta WHERE workspace = ?1")?;
            let rows = st.query_map(params![workspace], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        self.read(|c| {
            Ok(c.prepare_cached(
                "SELECT workspace FROM workspace_meta WHERE key = ?1 AND value = ?2 LIMIT 1",
            )?
            .query_row(params![key, value], |r| r.get(0))
            .optional()?)
        })
    }

    fn append_event(&self, e: &NewEvent<'_>) -> Result<i64> {
        self.write(|tx| {
            let seq = Self::insert_event(tx, e.workspace, e.kind, e.before, e.after, e.data)?;
            Self::touch(tx, e.workspace)?;
            Ok(seq)
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        self.read(|c| {
            let limit = if filter.limit == 0 {
                -1
            } else {
                filter.limit as i64
            };
            let mut st = c.prepare_cached(
                "SELECT seq, workspace, time, kind, version_before, version_after, data FROM events
                 WHERE seq > ?1 AND (?2 IS NULL OR workspace = ?2) AND (?3 IS NULL OR kind = ?3)
                 ORDER BY seq LIMIT ?4",
            )?;
            let rows = st.query_map(
                params![filter.after, filter.workspace, filter.kind, limit],
                event_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    fn delete_versions(&self, seen: &RefSnapshot, doomed: &[VersionId]) -> Result<bool> {
        self.write_durable(|tx| {
            let now = RefSnapshot {
                heads: Self::heads(tx)?
                    .into_iter()
                    .map(|h| (h.name, h.version))
                    .collect(),
                labels: Self::labels(tx)?,
            };
            if &now != seen {
                return Ok(false);
            }
            let mut st = tx.prepare_cached("DELETE FROM versions WHERE id = ?1")?;
            for v in doomed {
                st.execute(params![v.0])?;
            }
            Ok(true)
        })
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.read(|c| Self::setting(c, key))
    }

    fn swap_setting(&self, key: &str, expected: Option<&str>, new: Option<&str>) -> Result<bool> {
        self.write_durable(|tx| {
            if Self::setting(tx, key)?.as_deref() != expected {
                return Ok(false);
            }
            match new {
                Some(v) => tx.execute(
                    "INSERT INTO settings(key, value) VALUES (?1, ?2)
                     ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    params![key, v],
                )?,
                None => tx.execute("DELETE FROM settings WHERE key = ?1", params![key])?,
            };
            Ok(true)
        })
    }

    fn dump(&self) -> Result<CatalogDump> {
        self.read(|c| {
            // One read transaction: one snapshot for every table.
            c.execute_batch("BEGIN DEFERRED")?;
            let out = (|| {
                let mut st =
                    c.prepare("SELECT name, version, created FROM labels ORDER BY name")?;
                let labels = st
                    .query_map([], |r| Ok((r.get(0)?, VersionId(r.get(1)?), r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut st = c.prepare(
                    "SELECT workspace, key, value FROM workspace_meta ORDER BY workspace, key",
                )?;
                let meta = st
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut st = c.prepare(
                    "SELECT seq, workspace, time, kind, version_before, version_after, data
                     FROM events ORDER BY seq",
                )?;
                let events = st
                    .query_map([], event_row)?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(CatalogDump {
                    versions: Self::all_versions(c)?,
                    heads: Self::heads(c)?,
                    labels,
                    meta,
                    events,
                })
            })();
            c.execute_batch("COMMIT")?;
            out
        })
    }

    fn restore(&self, d: &CatalogDump) -> Result<()> {
        self.write(|tx| {
            let n: i64 = tx.query_row(
                "SELECT (SELECT count(*) FROM versions) + (SELECT count(*) FROM heads)",
                [],
                |r| r.get(0),
            )?;
            if n > 0 {
                return Err(Error::Invalid("the destination store is not empty"));
            }
            let mut st = tx.prepare(&format!(
                "INSERT INTO versions({VERSION_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?;
            for v in &d.versions {
                st.execute(params![
                    v.id.0,
                    &v.root.0[..],
                    v.parent.map(|p| p.0),
                    v.workspace,
                    v.time,
                    v.message,
                    v.next_ino as i64,
                    v.bytes as i64,
                    v.entries as i64
                ])?;
            }
            let mut st = tx.prepare(
                "INSERT INTO heads(name, version, created, quota_bytes, quota_entries, last_active)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for h in &d.heads {
                st.execute(params![
                    h.name,
                    h.version.0,
                    h.created,
                    h.quota.bytes.map(|b| b as i64),
                    h.quota.entries.map(|e| e as i64),
                    h.last_active
                ])?;
            }
            let mut st =
                tx.prepare("INSERT INTO labels(name, version, created) VALUES (?1, ?2, ?3)")?;
            for (name, v, created) in &d.labels {
                st.execute(params![name, v.0, created])?;
            }
            let mut st = tx
                .prepare("INSERT INTO workspace_meta(workspace, key, value) VALUES (?1, ?2, ?3)")?;
            for (w, k, v) in &d.meta {
                st.execute(params![w, k, v])?;
            }
            let mut st = tx.prepare(
                "INSERT INTO events(seq, workspace, time, kind, version_before, version_after, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for e in &d.events {
                st.execute(params![
                    e.seq,
                    e.workspace,
                    e.time,
                    e.kind,
                    e.version_before.map(|v| v.0),
                    e.version_after.map(|v| v.0),
                    e.data
                ])?;
            }
            Ok(())
        })
    }
}

impl CatalogCapabilities for Sqlite {
    fn compact(&self) -> Result<()> {
        self.lock_writer().execute_batch("VACUUM")?;
        Ok(())
    }

    fn disk_bytes(&self) -> Option<u64> {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        Some(size(&self.path) + size(&wal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync_level(tx: &rusqlite::Transaction<'_>) -> Result<i64> {
        Ok(tx.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
    }

    /// GC's writes (a version's deletion, the sweep announcement) commit with
    /// `synchronous=FULL` on a store opened with `Normal`, and the writer is back at
    /// `NORMAL` for the next commit, failed or not.
    #[test]
    fn gc_writes_sync_the_log_and_the_next_commit_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(
            &dir.path().join("s.db"),
            Durability::Normal,
            Duration::from_secs(1),
        )
        .unwrap();
        const FULL: i64 = 2;
        const NORMAL: i64 = 1;
        assert_eq!(db.write(sync_level).unwrap(), NORMAL);
        assert_eq!(db.write_durable(sync_level).unwrap(), FULL);
        assert_eq!(db.write(sync_level).unwrap(), NORMAL);
        let failed = db.write_durable(|_| -> Result<()> { Err(Error::Busy) });
        assert!(matches!(failed, Err(Error::Busy)));
        assert_eq!(db.write(sync_level).unwrap(), NORMAL);
        assert!(db.swap_setting("k", None, Some("v")).unwrap());
        assert_eq!(db.write(sync_level).unwrap(), NORMAL);
    }
}
