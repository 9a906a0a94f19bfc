//! The SQLite file: schema and migrations, connection settings, and the few statements the
//! rest of the crate needs (objects by hash, versions, heads, labels). Nothing above this
//! module writes SQL.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::error::{Error, Result};
use crate::node::Hash;
use crate::{Durability, VersionId};

/// `PRAGMA application_id` of a burrow store ("BRRW").
const APPLICATION_ID: i64 = 0x4252_5257;
/// Current schema version (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 2;

/// Kind column of the objects table (for statistics; objects self-describe).
pub(crate) const OBJ_CHUNK: i64 = 0;
pub(crate) const OBJ_NODE: i64 = 1;

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

/// A head row.
#[derive(Debug, Clone)]
pub struct HeadRow {
    pub name: String,
    pub version: VersionId,
    pub created: i64,
    pub quota_bytes: Option<u64>,
    pub quota_entries: Option<u64>,
    pub last_active: Option<i64>,
}

/// The SQLite database: one connection that writes, a small pool that reads.
pub(crate) struct Db {
    path: std::path::PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    busy_timeout: Duration,
}

pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
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

impl Db {
    pub(crate) fn open(path: &Path, durability: Durability, busy_timeout: Duration) -> Result<Db> {
        let display = path.display().to_string();
        let writer = Self::connect(path, durability, busy_timeout, true)
            .map_err(|e| Self::explain(e, &display))?;
        let db = Db {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            busy_timeout,
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
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
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
        // A process's last connection would otherwise checkpoint the WAL into the database
        // (with fsyncs) and delete the WAL when it closes: with one CLI call per process, that
        // was a millisecond of every call. The WAL stays, and SQLite's automatic checkpoint
        // (after a commit that leaves 1000 pages in it) still folds it back.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        conn.file_control(
            Some(rusqlite::MAIN_DB),
            rusqlite::FileControl::PersistWal(&mut 1),
        )?;
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

        tx.execute_batch(&format!(
            "PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version={SCHEMA_VERSION};"
        ))?;
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn lock_writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A poisoned lock means a panic elsewhere mid-statement; SQLite's own transaction
        // state is still consistent, so keep going with the connection.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a reader connection (WAL: never blocked by the writer).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
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

    pub(crate) fn get_object(&self, hash: &Hash) -> Result<Option<Vec<u8>>> {
        self.read(|c| {
            let mut st = c.prepare_cached("SELECT data FROM objects WHERE hash = ?1")?;
            Ok(st
                .query_row(params![&hash.0[..]], |r| r.get::<_, Vec<u8>>(0))
                .optional()?)
        })
    }

    /// The objects of `hashes` that exist, in one query per 500 (a directory's children read
    /// together instead of one statement each).
    pub(crate) fn get_objects(&self, hashes: &[Hash]) -> Result<Vec<(Hash, Vec<u8>)>> {
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
    pub(crate) fn put_objects(c: &Connection, objs: &[(Hash, i64, &[u8])]) -> Result<()> {
        let now = now_ns();
        let mut st = c.prepare_cached(
            "INSERT INTO objects(hash, kind, data, created) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(hash) DO UPDATE SET created = excluded.created",
        )?;
        for (h, kind, data) in objs {
            st.execute(params![&h.0[..], kind, data, now])?;
        }
        Ok(())
    }

    pub(crate) fn version(c: &Connection, id: VersionId) -> Result<VersionRow> {
        let mut st = c.prepare_cached(&format!(
            "SELECT {VERSION_COLS} FROM versions WHERE id = ?1"
        ))?;
        let raw = st
            .query_row(params![id.0], row_to_version)
            .optional()?
            .ok_or(Error::NoVersion(id))?;
        to_version(raw)
    }

    pub(crate) fn all_versions(c: &Connection) -> Result<Vec<VersionRow>> {
        let mut st =
            c.prepare_cached(&format!("SELECT {VERSION_COLS} FROM versions ORDER BY id"))?;
        let rows = st.query_map([], row_to_version)?;
        rows.map(|r| to_version(r?)).collect()
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_version(
        c: &Connection,
        root: &Hash,
        parent: Option<VersionId>,
        workspace: &str,
        message: &str,
        next_ino: u64,
        bytes: u64,
        entries: u64,
    ) -> Result<VersionId> {
        let mut st = c.prepare_cached(
            "INSERT INTO versions(root, parent, workspace, time, message, next_ino, bytes, entries)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        st.execute(params![
            &root.0[..],
            parent.map(|p| p.0),
            workspace,
            now_ns(),
            message,
            next_ino as i64,
            bytes as i64,
            entries as i64
        ])?;
        Ok(VersionId(c.last_insert_rowid()))
    }

    pub(crate) fn head(c: &Connection, name: &str) -> Result<HeadRow> {
        let mut st = c.prepare_cached(
            "SELECT name, version, created, quota_bytes, quota_entries, last_active FROM heads WHERE name = ?1",
        )?;
        st.query_row(params![name], head_row)
            .optional()?
            .ok_or_else(|| Error::NoWorkspace(name.to_string()))
    }

    pub(crate) fn heads(c: &Connection) -> Result<Vec<HeadRow>> {
        let mut st = c.prepare_cached(
            "SELECT name, version, created, quota_bytes, quota_entries, last_active FROM heads ORDER BY name",
        )?;
        let rows = st.query_map([], head_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub(crate) fn insert_head(c: &Connection, name: &str, version: VersionId) -> Result<()> {
        let mut st = c.prepare_cached(
            "INSERT INTO heads(name, version, created) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING",
        )?;
        if st.execute(params![name, version.0, now_ns()])? == 0 {
            return Err(Error::WorkspaceExists(name.to_string()));
        }
        Ok(())
    }

    /// Compare-and-swap of a head: moves it only if it is still at `expected`.
    pub(crate) fn cas_head(
        c: &Connection,
        name: &str,
        expected: VersionId,
        new: VersionId,
    ) -> Result<()> {
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

    pub(crate) fn set_quota(
        c: &Connection,
        name: &str,
        bytes: Option<u64>,
        entries: Option<u64>,
    ) -> Result<()> {
        let n = c.execute(
            "UPDATE heads SET quota_bytes = ?1, quota_entries = ?2 WHERE name = ?3",
            params![bytes.map(|b| b as i64), entries.map(|e| e as i64), name],
        )?;
        if n == 0 {
            return Err(Error::NoWorkspace(name.to_string()));
        }
        Ok(())
    }

    pub(crate) fn delete_head(c: &Connection, name: &str) -> Result<()> {
        if c.execute("DELETE FROM heads WHERE name = ?1", params![name])? == 0 {
            return Err(Error::NoWorkspace(name.to_string()));
        }
        c.execute(
            "DELETE FROM workspace_meta WHERE workspace = ?1",
            params![name],
        )?;
        Ok(())
    }

    pub(crate) fn touch(c: &Connection, name: &str) -> Result<()> {
        c.prepare_cached("UPDATE heads SET last_active = ?1 WHERE name = ?2")?
            .execute(params![now_ns(), name])?;
        Ok(())
    }

    pub(crate) fn insert_event(
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

    pub(crate) fn set_label(c: &Connection, name: &str, version: VersionId) -> Result<()> {
        c.execute(
            "INSERT INTO labels(name, version, created) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET version = excluded.version",
            params![name, version.0, now_ns()],
        )?;
        Ok(())
    }

    pub(crate) fn labels(c: &Connection) -> Result<Vec<(String, VersionId)>> {
        let mut st = c.prepare_cached("SELECT name, version FROM labels ORDER BY name")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, VersionId(r.get(1)?))))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub(crate) fn version_count(c: &Connection, workspace: &str) -> Result<u64> {
        let n: i64 = c
            .prepare_cached("SELECT count(*) FROM versions WHERE workspace = ?1")?
            .query_row(params![workspace], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    pub(crate) fn version_counts(c: &Connection) -> Result<HashMap<String, u64>> {
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

    pub(crate) fn delete_label(c: &Connection, name: &str) -> Result<()> {
        if c.execute("DELETE FROM labels WHERE name = ?1", params![name])? == 0 {
            return Err(Error::NoLabel(name.to_string()));
        }
        Ok(())
    }
}

fn head_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HeadRow> {
    Ok(HeadRow {
        name: r.get(0)?,
        version: VersionId(r.get(1)?),
        created: r.get(2)?,
        quota_bytes: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
        quota_entries: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
        last_active: r.get(5)?,
    })
}
