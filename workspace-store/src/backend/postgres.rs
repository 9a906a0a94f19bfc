//! PostgreSQL as the [`Catalog`] (and, for small deployments, the [`ObjectStore`], objects as
//! `bytea`): what lets several burrow processes on several machines serve the same
//! sessions.
//!
//! - Writes are serialised store-wide by a row lock (`SELECT ... FOR UPDATE` on one row of
//!   `burrow_meta`) taken first in every write transaction: commits get version ids and event
//!   sequence numbers in commit order, so an event stream that reads `seq > N` never skips a
//!   commit that finished late, and a head's compare-and-swap is one
//!   `UPDATE heads ... WHERE version = $old` inside it. This is the same one-writer model as
//!   the SQLite file, shared over the network.
//! - Reads run on pooled connections without locks (read committed).
//! - The schema is created and migrated on open, under the same lock, so two processes
//!   opening a new database serialise.
//! - Commits with events `NOTIFY burrow_events`; [`Catalog::watch`] LISTENs on a connection
//!   of its own, so event streams in every process wake at once instead of polling.
//! - Features used: `BIGSERIAL`, `bytea`, `ON CONFLICT`, `= ANY(array)`, `UNNEST`, recursive
//!   CTEs, `SELECT ... FOR UPDATE` and `LISTEN`/`NOTIFY`; no advisory locks or extensions, so
//!   PostgreSQL-wire services (CockroachDB, YugabyteDB, Neon) that have those should work;
//!   only PostgreSQL itself is tested.
//! - Connections are plain TCP (no TLS yet): run it on loopback or a private network.
//!
//! The store's API is synchronous; the client is tokio-postgres on a small runtime of its
//! own, so the store can be called from any thread, inside an async runtime or not.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Mutex;

use tokio_postgres::{Client, GenericClient, NoTls, Row, Transaction};

use super::{
    Catalog, CatalogDump, CommitRecord, Guard, HeadRow, NewObject, NewVersion, ObjectKind,
    ObjectStore, RefSnapshot, VersionRow, now_ns,
};
use crate::error::{Error, Result};
use crate::meta::{Event, EventFilter};
use crate::node::Hash;
use crate::{Quota, VersionId};

/// The schema version this code writes (`burrow_meta.schema`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA_V1: &str = "
CREATE TABLE objects (
    hash    BYTEA PRIMARY KEY,
    kind    SMALLINT NOT NULL,
    data    BYTEA NOT NULL,
    created BIGINT NOT NULL
);
CREATE TABLE versions (
    id        BIGSERIAL PRIMARY KEY,
    root      BYTEA NOT NULL,
    parent    BIGINT,
    workspace TEXT NOT NULL,
    time      BIGINT NOT NULL,
    message   TEXT NOT NULL,
    next_ino  BIGINT NOT NULL,
    bytes     BIGINT NOT NULL,
    entries   BIGINT NOT NULL
);
CREATE INDEX versions_by_workspace ON versions(workspace, id);
CREATE TABLE heads (
    name          TEXT PRIMARY KEY,
    version       BIGINT NOT NULL,
    created       BIGINT NOT NULL,
    quota_bytes   BIGINT,
    quota_entries BIGINT,
    last_active   BIGINT
);
CREATE TABLE labels (
    name    TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    created BIGINT NOT NULL
);
CREATE TABLE workspace_meta (
    workspace TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (workspace, key)
);
CREATE UNIQUE INDEX workspace_names ON workspace_meta(value) WHERE key = 'name';
CREATE TABLE events (
    seq            BIGSERIAL PRIMARY KEY,
    workspace      TEXT NOT NULL,
    time           BIGINT NOT NULL,
    kind           TEXT NOT NULL,
    version_before BIGINT,
    version_after  BIGINT,
    data           TEXT NOT NULL
);
CREATE INDEX events_by_workspace ON events(workspace, seq);
";

const VERSION_COLS: &str = "id, root, parent, workspace, time, message, next_ino, bytes, entries";
const HEAD_COLS: &str = "name, version, created, quota_bytes, quota_entries, last_active";

/// Objects per `INSERT` at most (and their bytes), so one statement stays a few MB.
const PUT_BATCH: usize = 256;
const PUT_BATCH_BYTES: usize = 8 << 20;

/// A PostgreSQL database holding a store's catalog and, when asked, its objects.
pub struct Postgres {
    /// Always present until drop.
    runtime: Option<tokio::runtime::Runtime>,
    url: String,
    pool: Mutex<Vec<Client>>,
}

fn server(e: tokio_postgres::Error) -> Error {
    // The database's own message ("duplicate key ...", "connection refused") says more than
    // the driver's summary.
    match e.as_db_error() {
        Some(db) => Error::Server(format!("{}: {}", db.code().code(), db.message())),
        None => Error::Server(e.to_string()),
    }
}

fn unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
}

fn hash_of(bytes: &[u8]) -> Result<Hash> {
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| Error::Corrupt("hash column is not 32 bytes".into()))?;
    Ok(Hash(arr))
}

fn to_version(r: &Row) -> Result<VersionRow> {
    Ok(VersionRow {
        id: VersionId(r.get(0)),
        root: hash_of(r.get::<_, &[u8]>(1))?,
        parent: r.get::<_, Option<i64>>(2).map(VersionId),
        workspace: r.get(3),
        time: r.get(4),
        message: r.get(5),
        next_ino: r.get::<_, i64>(6) as u64,
        bytes: r.get::<_, i64>(7) as u64,
        entries: r.get::<_, i64>(8) as u64,
    })
}

fn to_head(r: &Row) -> HeadRow {
    HeadRow {
        name: r.get(0),
        version: VersionId(r.get(1)),
        created: r.get(2),
        quota: Quota {
            bytes: r.get::<_, Option<i64>>(3).map(|v| v as u64),
            entries: r.get::<_, Option<i64>>(4).map(|v| v as u64),
        },
        last_active: r.get(5),
    }
}

fn to_event(r: &Row) -> Event {
    Event {
        seq: r.get(0),
        workspace: r.get(1),
        time: r.get(2),
        kind: r.get(3),
        version_before: r.get::<_, Option<i64>>(4).map(VersionId),
        version_after: r.get::<_, Option<i64>>(5).map(VersionId),
        data: r.get(6),
    }
}

fn kind_code(k: ObjectKind) -> i16 {
    match k {
        ObjectKind::Page => 0,
        ObjectKind::Node => 1,
    }
}

impl Postgres {
    /// Connects to `url` (`postgres://user:password@host:port/db`) and creates or migrates
    /// the schema.
    pub fn open(url: &str) -> Result<Postgres> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("burrow-postgres")
            .enable_all()
            .build()?;
        let pg = Postgres {
            runtime: Some(runtime),
            url: url.to_string(),
            pool: Mutex::new(Vec::new()),
        };
        pg.migrate()?;
        Ok(pg)
    }

    fn connect(&self) -> Result<Client> {
        let url = self.url.clone();
        let handle = self.rt().spawn(async move {
            let (client, connection) = tokio_postgres::connect(&url, NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "postgres connection ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        match futures::executor::block_on(handle) {
            Ok(r) => r.map_err(server),
            Err(e) => Err(Error::Server(format!("connecting: {e}"))),
        }
    }

    fn rt(&self) -> &tokio::runtime::Handle {
        match &self.runtime {
            Some(rt) => rt.handle(),
            None => unreachable!("the runtime is only taken by drop"),
        }
    }

    /// A connection from the pool (a new one when the pool is empty or its connections
    /// died), back into the pool when dropped.
    fn client(&self) -> Result<Pooled<'_>> {
        let pooled = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let client = match pooled {
            Some(c) if !c.is_closed() => c,
            _ => self.connect()?,
        };
        Ok(Pooled {
            pg: self,
            client: Some(client),
        })
    }

    fn migrate(&self) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            // The common case, a database at this schema already, in one round trip and
            // without the writer lock: every process start pays it.
            if let Ok(Some(r)) = pc
                .query_opt("SELECT value FROM burrow_meta WHERE key = 'schema'", &[])
                .await
                && r.get::<_, String>(0) == SCHEMA_VERSION.to_string()
            {
                return Ok(());
            }
            pc.batch_execute(
                "CREATE TABLE IF NOT EXISTS burrow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO burrow_meta(key, value) VALUES ('writer', '') ON CONFLICT DO NOTHING;",
            )
            .await
            .map_err(server)?;
            let tx = begin_write(&mut pc).await?;
            let found: i64 = match tx
                .query_opt("SELECT value FROM burrow_meta WHERE key = 'schema'", &[])
                .await
                .map_err(server)?
            {
                Some(r) => r.get::<_, String>(0).parse().unwrap_or(0),
                None => 0,
            };
            if found > SCHEMA_VERSION {
                return Err(Error::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            if found < 1 {
                tx.batch_execute(SCHEMA_V1).await.map_err(server)?;
            }
            tx.execute(
                "INSERT INTO burrow_meta(key, value) VALUES ('schema', $1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&SCHEMA_VERSION.to_string()],
            )
            .await
            .map_err(server)?;
            finish(tx, ()).await
        })
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which is not allowed inside an async
        // context (where a server may drop its store): let them go in the background.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A pooled connection.
struct Pooled<'a> {
    pg: &'a Postgres,
    client: Option<Client>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client
            .as_ref()
            .expect("a pooled client is present until drop")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client
            .as_mut()
            .expect("a pooled client is present until drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take()
            && !c.is_closed()
        {
            let mut pool = self.pg.pool.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < 8 {
                pool.push(c);
            }
        }
    }
}

/// Drives a query future on the calling thread: the client's futures only exchange messages
/// with its connection task (on the backend's runtime), so this works from any thread,
/// inside an async runtime or not.
fn block<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    futures::executor::block_on(f)
}

/// Begins a write transaction holding the store's writer lock.
async fn begin_write(c: &mut Client) -> Result<Transaction<'_>> {
    let tx = c.transaction().await.map_err(server)?;
    tx.execute(
        "SELECT value FROM burrow_meta WHERE key = 'writer' FOR UPDATE",
        &[],
    )
    .await
    .map_err(server)?;
    Ok(tx)
}

async fn setting(c: &impl GenericClient, key: &str) -> Result<Option<String>> {
    let key = format!("setting:{key}");
    let row = c
        .query_opt("SELECT value FROM burrow_meta WHERE key = $1", &[&key])
        .await
        .map_err(server)?;
    Ok(row.map(|r| r.get(0)))
}

/// [`Guard`]'s check, as a statement of its own after [`begin_write`] took the writer lock
/// (a statement begun before the lock was granted would read the setting as it was then).
async fn check_guard(tx: &Transaction<'_>, guard: Option<Guard<'_>>) -> Result<()> {
    match guard {
        Some(g) if setting(tx, g.key).await?.as_deref() != g.value => Err(Error::Fenced),
        _ => Ok(()),
    }
}

/// Commits `tx` and returns `out`.
async fn finish<T>(tx: Transaction<'_>, out: T) -> Result<T> {
    tx.commit().await.map_err(server)?;
    Ok(out)
}

async fn put_objects(c: &impl GenericClient, objs: &[NewObject<'_>]) -> Result<()> {
    let now = now_ns();
    let mut start = 0;
    while start < objs.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < objs.len() && end - start < PUT_BATCH && bytes < PUT_BATCH_BYTES {
            bytes += objs[end].data.len();
            end += 1;
        }
        let chunk = &objs[start..end];
        let hashes: Vec<&[u8]> = chunk.iter().map(|o| &o.hash.0[..]).collect();
        let kinds: Vec<i16> = chunk.iter().map(|o| kind_code(o.kind)).collect();
        let datas: Vec<&[u8]> = chunk.iter().map(|o| o.data).collect();
        c.execute(
            "INSERT INTO objects(hash, kind, data, created)
             SELECT h, k, d, $4 FROM UNNEST($1::bytea[], $2::smallint[], $3::bytea[]) AS t(h, k, d)
             ON CONFLICT (hash) DO UPDATE SET created = excluded.created",
            &[&hashes, &kinds, &datas, &now],
        )
        .await
        .map_err(server)?;
        start = end;
    }
    Ok(())
}

async fn version(c: &impl GenericClient, id: VersionId) -> Result<VersionRow> {
    let row = c
        .query_opt(
            &format!("SELECT {VERSION_COLS} FROM versions WHERE id = $1"),
            &[&id.0],
        )
        .await
        .map_err(server)?
        .ok_or(Error::NoVersion(id))?;
    to_version(&row)
}

async fn head(c: &impl GenericClient, name: &str) -> Result<HeadRow> {
    let row = c
        .query_opt(
            &format!("SELECT {HEAD_COLS} FROM heads WHERE name = $1"),
            &[&name],
        )
        .await
        .map_err(server)?
        .ok_or_else(|| Error::NoWorkspace(name.to_string()))?;
    Ok(to_head(&row))
}

async fn insert_version(c: &impl GenericClient, v: &NewVersion<'_>) -> Result<VersionId> {
    let row = c
        .query_one(
            "INSERT INTO versions(root, parent, workspace, time, message, next_ino, bytes, entries)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &&v.root.0[..],
                &v.parent.map(|p| p.0),
                &v.workspace,
                &now_ns(),
                &v.message,
                &(v.next_ino as i64),
                &(v.bytes as i64),
                &(v.entries as i64),
            ],
        )
        .await
        .map_err(server)?;
    Ok(VersionId(row.get(0)))
}

async fn insert_head(c: &impl GenericClient, name: &str, version: VersionId) -> Result<()> {
    let n = c
        .execute(
            "INSERT INTO heads(name, version, created) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING",
            &[&name, &version.0, &now_ns()],
        )
        .await
        .map_err(server)?;
    if n == 0 {
        return Err(Error::WorkspaceExists(name.to_string()));
    }
    Ok(())
}

async fn cas_head(
    c: &impl GenericClient,
    name: &str,
    expected: VersionId,
    new: VersionId,
) -> Result<()> {
    let n = c
        .execute(
            "UPDATE heads SET version = $1 WHERE name = $2 AND version = $3",
            &[&new.0, &name, &expected.0],
        )
        .await
        .map_err(server)?;
    if n == 1 {
        return Ok(());
    }
    let actual = head(c, name).await?.version;
    Err(Error::Conflict {
        workspace: name.to_string(),
        expected,
        actual,
    })
}

async fn set_quota(c: &impl GenericClient, name: &str, quota: Quota) -> Result<()> {
    let n = c
        .execute(
            "UPDATE heads SET quota_bytes = $1, quota_entries = $2 WHERE name = $3",
            &[
                &quota.bytes.map(|b| b as i64),
                &quota.entries.map(|e| e as i64),
                &name,
            ],
        )
        .await
        .map_err(server)?;
    if n == 0 {
        return Err(Error::NoWorkspace(name.to_string()));
    }
    Ok(())
}

async fn insert_event(
    c: &impl GenericClient,
    workspace: &str,
    kind: &str,
    before: Option<VersionId>,
    after: Option<VersionId>,
    data: &str,
) -> Result<i64> {
    let row = c
        .query_one(
            "INSERT INTO events(workspace, time, kind, version_before, version_after, data)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
            &[
                &workspace,
                &now_ns(),
                &kind,
                &before.map(|v| v.0),
                &after.map(|v| v.0),
                &data,
            ],
        )
        .await
        .map_err(server)?;
    Ok(row.get(0))
}

/// The channel a commit with events notifies (delivered when its transaction commits).
const EVENTS_CHANNEL: &str = "burrow_events";

async fn notify(c: &impl GenericClient) -> Result<()> {
    c.execute("SELECT pg_notify($1, '')", &[&EVENTS_CHANNEL])
        .await
        .map_err(server)?;
    Ok(())
}

async fn touch(c: &impl GenericClient, name: &str) -> Result<()> {
    c.execute(
        "UPDATE heads SET last_active = $1 WHERE name = $2",
        &[&now_ns(), &name],
    )
    .await
    .map_err(server)?;
    Ok(())
}

async fn labels(c: &impl GenericClient) -> Result<Vec<(String, VersionId)>> {
    let rows = c
        .query("SELECT name, version FROM labels ORDER BY name", &[])
        .await
        .map_err(server)?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), VersionId(r.get(1))))
        .collect())
}

async fn heads(c: &impl GenericClient) -> Result<Vec<HeadRow>> {
    let rows = c
        .query(&format!("SELECT {HEAD_COLS} FROM heads ORDER BY name"), &[])
        .await
        .map_err(server)?;
    Ok(rows.iter().map(to_head).collect())
}

impl ObjectStore for Postgres {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        // No writer lock: objects are immutable and the insert is idempotent.
        let mut pc = self.client()?;
        block(async {
            let tx = pc.transaction().await.map_err(server)?;
            put_objects(&tx, objects).await?;
            finish(tx, ()).await
        })
    }

    fn get(&self, hash: &Hash, _kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        let pc = self.client()?;
        block(async {
            let row = pc
                .query_opt("SELECT data FROM objects WHERE hash = $1", &[&&hash.0[..]])
                .await
                .map_err(server)?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn get_many(&self, hashes: &[Hash], _kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let pc = self.client()?;
        block(async {
            let mut out = Vec::with_capacity(hashes.len());
            for chunk in hashes.chunks(500) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                let rows = pc
                    .query(
                        "SELECT hash, data FROM objects WHERE hash = ANY($1)",
                        &[&keys],
                    )
                    .await
                    .map_err(server)?;
                for r in rows {
                    out.push((hash_of(r.get::<_, &[u8]>(0))?, r.get::<_, Vec<u8>>(1)));
                }
            }
            Ok(out)
        })
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let hashes: Vec<Hash> = objects.iter().map(|(h, _)| *h).collect();
        let pc = self.client()?;
        block(async {
            let mut present = std::collections::HashSet::new();
            for chunk in hashes.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                for r in pc
                    .query("SELECT hash FROM objects WHERE hash = ANY($1)", &[&keys])
                    .await
                    .map_err(server)?
                {
                    present.insert(hash_of(r.get::<_, &[u8]>(0))?);
                }
            }
            Ok(hashes.iter().map(|h| present.contains(h)).collect())
        })
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let pc = self.client()?;
        block(async {
            let rows = pc
                .query(
                    "SELECT hash FROM objects WHERE created < $1",
                    &[&written_before],
                )
                .await
                .map_err(server)?;
            let mut doomed: Vec<Vec<u8>> = Vec::new();
            for r in rows {
                let h: Vec<u8> = r.get(0);
                if let Ok(hash) = hash_of(&h)
                    && !referenced(&hash)
                {
                    doomed.push(h);
                }
            }
            let (mut objects, mut bytes) = (0u64, 0u64);
            for chunk in doomed.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| h.as_slice()).collect();
                // The time test again: an object put again since the listing is live.
                for r in pc
                    .query(
                        "DELETE FROM objects WHERE hash = ANY($1) AND created < $2
                         RETURNING length(data)",
                        &[&keys, &written_before],
                    )
                    .await
                    .map_err(server)?
                {
                    objects += 1;
                    bytes += r.get::<_, i32>(0) as u64;
                }
            }
            Ok((objects, bytes))
        })
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let pc = self.client()?;
        block(async {
            let rows = pc
                .query("SELECT hash, kind FROM objects", &[])
                .await
                .map_err(server)?;
            rows.iter()
                .map(|r| {
                    let kind = if r.get::<_, i16>(1) == kind_code(ObjectKind::Node) {
                        ObjectKind::Node
                    } else {
                        ObjectKind::Page
                    };
                    Ok((hash_of(r.get::<_, &[u8]>(0))?, kind))
                })
                .collect()
        })
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let pc = self.client()?;
        block(async {
            let r = pc
                .query_one(
                    "SELECT count(*),
                            coalesce(sum(CASE WHEN kind = 0 THEN length(data) END), 0)::bigint,
                            coalesce(sum(CASE WHEN kind = 1 THEN length(data) END), 0)::bigint
                     FROM objects",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok((
                r.get::<_, i64>(0) as u64,
                r.get::<_, i64>(1) as u64,
                r.get::<_, i64>(2) as u64,
            ))
        })
    }
}

impl Catalog for Postgres {
    fn version(&self, id: VersionId) -> Result<VersionRow> {
        let pc = self.client()?;
        block(version(&*pc, id))
    }

    fn versions(&self) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        block(async {
            let rows = pc
                .query(
                    &format!("SELECT {VERSION_COLS} FROM versions ORDER BY id"),
                    &[],
                )
                .await
                .map_err(server)?;
            rows.iter().map(to_version).collect()
        })
    }

    fn head(&self, name: &str) -> Result<HeadRow> {
        let pc = self.client()?;
        block(head(&*pc, name))
    }

    fn heads(&self) -> Result<Vec<HeadRow>> {
        let pc = self.client()?;
        block(heads(&*pc))
    }

    fn head_version(&self, name: &str) -> Result<(HeadRow, VersionRow)> {
        // One statement: the head and its version as of one snapshot.
        let pc = self.client()?;
        block(async {
            let cols: Vec<String> = HEAD_COLS
                .split(", ")
                .map(|c| format!("h.{c}"))
                .chain(VERSION_COLS.split(", ").map(|c| format!("v.{c}")))
                .collect();
            let row = pc
                .query_opt(
                    &format!(
                        "SELECT {} FROM heads h LEFT JOIN versions v ON v.id = h.version
                         WHERE h.name = $1",
                        cols.join(", ")
                    ),
                    &[&name],
                )
                .await
                .map_err(server)?
                .ok_or_else(|| Error::NoWorkspace(name.to_string()))?;
            let h = to_head(&row);
            if row.get::<_, Option<i64>>(6).is_none() {
                return Err(Error::NoVersion(h.version));
            }
            let v = VersionRow {
                id: VersionId(row.get(6)),
                root: hash_of(row.get::<_, &[u8]>(7))?,
                parent: row.get::<_, Option<i64>>(8).map(VersionId),
                workspace: row.get(9),
                time: row.get(10),
                message: row.get(11),
                next_ino: row.get::<_, i64>(12) as u64,
                bytes: row.get::<_, i64>(13) as u64,
                entries: row.get::<_, i64>(14) as u64,
            };
            Ok((h, v))
        })
    }

    fn lineage(&self, name: &str, limit: usize) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        block(async {
            let h = head(&*pc, name).await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let cols: Vec<String> = VERSION_COLS.split(", ").map(|c| format!("v.{c}")).collect();
            let rows = pc
                .query(
                    &format!(
                        "WITH RECURSIVE l(id, depth) AS (
                             SELECT $1::bigint, 0::bigint
                             UNION ALL
                             SELECT v.parent, l.depth + 1 FROM l JOIN versions v ON v.id = l.id
                             WHERE v.parent IS NOT NULL AND l.depth + 1 < $2
                         )
                         SELECT {} FROM l JOIN versions v ON v.id = l.id ORDER BY l.depth",
                        cols.join(", ")
                    ),
                    &[&h.version.0, &limit],
                )
                .await
                .map_err(server)?;
            // A collected version ends the lineage (the join finds no row for it).
            let mut out = Vec::new();
            let mut want = Some(h.version);
            for r in &rows {
                let v = to_version(r)?;
                if Some(v.id) != want || out.len() as i64 >= limit {
                    break;
                }
                want = v.parent;
                out.push(v);
            }
            Ok(out)
        })
    }

    fn labels(&self) -> Result<Vec<(String, VersionId)>> {
        let pc = self.client()?;
        block(labels(&*pc))
    }

    fn version_count(&self, workspace: &str) -> Result<u64> {
        let pc = self.client()?;
        block(async {
            let r = pc
                .query_one(
                    "SELECT count(*) FROM versions WHERE workspace = $1",
                    &[&workspace],
                )
                .await
                .map_err(server)?;
            Ok(r.get::<_, i64>(0) as u64)
        })
    }

    fn version_counts(&self) -> Result<HashMap<String, u64>> {
        let pc = self.client()?;
        block(async {
            let rows = pc
                .query(
                    "SELECT workspace, count(*) FROM versions GROUP BY workspace",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64))
                .collect())
        })
    }

    fn totals(&self) -> Result<(u64, u64)> {
        let pc = self.client()?;
        block(async {
            let r = pc
                .query_one(
                    "SELECT (SELECT count(*) FROM versions), (SELECT count(*) FROM heads)",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok((r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64))
        })
    }

    fn create_workspace(
        &self,
        v: &NewVersion<'_>,
        objects: &[NewObject<'_>],
        guard: Option<Guard<'_>>,
    ) -> Result<VersionId> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            check_guard(&tx, guard).await?;
            put_objects(&tx, objects).await?;
            let id = insert_version(&tx, v).await?;
            insert_head(&tx, v.workspace, id).await?;
            finish(tx, id).await
        })
    }

    fn create_head(&self, name: &str, v: VersionId) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            version(&tx, v).await?;
            insert_head(&tx, name, v).await?;
            finish(tx, ()).await
        })
    }

    fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let h = head(&tx, source).await?;
            for n in names {
                insert_head(&tx, n, h.version).await?;
                set_quota(&tx, n, h.quota).await?;
            }
            finish(tx, h.version).await
        })
    }

    fn delete_head(&self, name: &str) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let n = tx
                .execute("DELETE FROM heads WHERE name = $1", &[&name])
                .await
                .map_err(server)?;
            if n == 0 {
                return Err(Error::NoWorkspace(name.to_string()));
            }
            tx.execute("DELETE FROM workspace_meta WHERE workspace = $1", &[&name])
                .await
                .map_err(server)?;
            finish(tx, ()).await
        })
    }

    fn set_quota(&self, name: &str, quota: Quota) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            set_quota(&tx, name, quota).await?;
            finish(tx, ()).await
        })
    }

    fn set_label(&self, name: &str, v: VersionId) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            version(&tx, v).await?;
            tx.execute(
                "INSERT INTO labels(name, version, created) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                &[&name, &v.0, &now_ns()],
            )
            .await
            .map_err(server)?;
            finish(tx, ()).await
        })
    }

    fn delete_label(&self, name: &str) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let n = tx
                .execute("DELETE FROM labels WHERE name = $1", &[&name])
                .await
                .map_err(server)?;
            if n == 0 {
                return Err(Error::NoLabel(name.to_string()));
            }
            finish(tx, ()).await
        })
    }

    fn commit(
        &self,
        record: &CommitRecord<'_>,
        objects: &[NewObject<'_>],
    ) -> Result<(VersionId, Option<i64>)> {
        let ws = record.version.workspace;
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            check_guard(&tx, record.guard).await?;
            put_objects(&tx, objects).await?;
            let v = insert_version(&tx, &record.version).await?;
            cas_head(&tx, ws, record.expected, v).await?;
            touch(&tx, ws).await?;
            for (kind, data) in record.events {
                insert_event(&tx, ws, kind, Some(record.expected), Some(v), data).await?;
            }
            let seq = match record.event {
                Some((kind, data)) => {
                    Some(insert_event(&tx, ws, kind, Some(record.expected), Some(v), data).await?)
                }
                None => None,
            };
            if !record.events.is_empty() || seq.is_some() {
                notify(&tx).await?;
            }
            finish(tx, (v, seq)).await
        })
    }

    fn checkout(&self, workspace: &str, target: VersionId, message: &str) -> Result<VersionId> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let h = head(&tx, workspace).await?;
            let t = version(&tx, target).await?;
            let cur = version(&tx, h.version).await?;
            let v = insert_version(
                &tx,
                &NewVersion {
                    root: t.root,
                    parent: Some(h.version),
                    workspace,
                    message,
                    next_ino: cur.next_ino.max(t.next_ino),
                    bytes: t.bytes,
                    entries: t.entries,
                },
            )
            .await?;
            cas_head(&tx, workspace, h.version, v).await?;
            finish(tx, v).await
        })
    }

    fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            head(&tx, workspace).await?;
            let r = match value {
                Some(v) => {
                    tx.execute(
                        "INSERT INTO workspace_meta(workspace, key, value) VALUES ($1, $2, $3)
                         ON CONFLICT (workspace, key) DO UPDATE SET value = excluded.value",
                        &[&workspace, &key, &v],
                    )
                    .await
                }
                None => {
                    tx.execute(
                        "DELETE FROM workspace_meta WHERE workspace = $1 AND key = $2",
                        &[&workspace, &key],
                    )
                    .await
                }
            };
            match r {
                Ok(_) => finish(tx, ()).await,
                Err(e) if unique_violation(&e) => Err(Error::WorkspaceExists(
                    value.unwrap_or_default().to_string(),
                )),
                Err(e) => Err(server(e)),
            }
        })
    }

    fn meta(&self, workspace: &str) -> Result<BTreeMap<String, String>> {
        let pc = self.client()?;
        block(async {
            let rows = pc
                .query(
                    "SELECT key, value FROM workspace_meta WHERE workspace = $1",
                    &[&workspace],
                )
                .await
                .map_err(server)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        let pc = self.client()?;
        block(async {
            let row = pc
                .query_opt(
                    "SELECT workspace FROM workspace_meta WHERE key = $1 AND value = $2 LIMIT 1",
                    &[&key, &value],
                )
                .await
                .map_err(server)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn append_event(
        &self,
        workspace: &str,
        kind: &str,
        before: Option<VersionId>,
        after: Option<VersionId>,
        data: &str,
    ) -> Result<i64> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let seq = insert_event(&tx, workspace, kind, before, after, data).await?;
            touch(&tx, workspace).await?;
            notify(&tx).await?;
            finish(tx, seq).await
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let pc = self.client()?;
        block(async {
            let limit = if filter.limit == 0 {
                i64::MAX
            } else {
                filter.limit as i64
            };
            let rows = pc
                .query(
                    "SELECT seq, workspace, time, kind, version_before, version_after, data
                     FROM events
                     WHERE seq > $1 AND ($2::text IS NULL OR workspace = $2)
                       AND ($3::text IS NULL OR kind = $3)
                     ORDER BY seq LIMIT $4",
                    &[&filter.after, &filter.workspace, &filter.kind, &limit],
                )
                .await
                .map_err(server)?;
            Ok(rows.iter().map(to_event).collect())
        })
    }

    fn delete_versions(&self, seen: &RefSnapshot, doomed: &[VersionId]) -> Result<bool> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let now = RefSnapshot {
                heads: heads(&tx)
                    .await?
                    .into_iter()
                    .map(|h| (h.name, h.version))
                    .collect(),
                labels: labels(&tx).await?,
            };
            if &now != seen {
                return Ok(false);
            }
            let ids: Vec<i64> = doomed.iter().map(|v| v.0).collect();
            tx.execute("DELETE FROM versions WHERE id = ANY($1)", &[&ids])
                .await
                .map_err(server)?;
            finish(tx, true).await
        })
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        let pc = self.client()?;
        block(setting(&*pc, key))
    }

    fn swap_setting(&self, key: &str, expected: Option<&str>, new: Option<&str>) -> Result<bool> {
        let mut pc = self.client()?;
        block(async {
            // Under the writer lock, which serialises the swap with guarded writes.
            let tx = begin_write(&mut pc).await?;
            if setting(&tx, key).await?.as_deref() != expected {
                return Ok(false);
            }
            let key = format!("setting:{key}");
            match new {
                Some(v) => {
                    tx.execute(
                        "INSERT INTO burrow_meta(key, value) VALUES ($1, $2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        &[&key, &v],
                    )
                    .await
                }
                None => {
                    tx.execute("DELETE FROM burrow_meta WHERE key = $1", &[&key])
                        .await
                }
            }
            .map_err(server)?;
            finish(tx, true).await
        })
    }

    fn compact(&self) -> Result<()> {
        // VACUUM cannot run inside a transaction; autovacuum does this work anyway.
        let pc = self.client()?;
        block(async { pc.batch_execute("VACUUM objects").await.map_err(server) })
    }

    fn disk_bytes(&self) -> Option<u64> {
        None
    }

    fn catalog_bytes(&self) -> Result<Option<u64>> {
        let pc = self.client()?;
        block(async {
            let row = pc
                .query_one(
                    "SELECT sum(pg_total_relation_size(t))::BIGINT FROM unnest(ARRAY[
                        'versions', 'heads', 'labels', 'workspace_meta', 'events', 'burrow_meta'
                     ]::regclass[]) AS t",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok(row.get::<_, Option<i64>>(0).map(|b| b as u64))
        })
    }

    fn watch(&self, wake: std::sync::Arc<dyn Fn() + Send + Sync>) -> Result<bool> {
        use futures::StreamExt;
        let url = self.url.clone();
        // A connection of its own that LISTENs, on the backend's runtime, reconnecting when
        // it is lost (a restarted server), with a wake after each (re)connect for what was
        // missed meanwhile.
        self.rt().spawn(async move {
            loop {
                if let Ok((client, mut conn)) = tokio_postgres::connect(&url, NoTls).await {
                    let on_message = wake.clone();
                    let driver = tokio::spawn(async move {
                        let mut messages =
                            futures::stream::poll_fn(move |cx| conn.poll_message(cx));
                        while let Some(m) = messages.next().await {
                            match m {
                                Ok(tokio_postgres::AsyncMessage::Notification(_)) => on_message(),
                                Ok(_) => {}
                                Err(_) => break,
                            }
                        }
                    });
                    if client
                        .batch_execute(&format!("LISTEN {EVENTS_CHANNEL}"))
                        .await
                        .is_ok()
                    {
                        wake();
                    }
                    let _ = driver.await;
                    drop(client);
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        Ok(true)
    }

    fn dump(&self) -> Result<CatalogDump> {
        let mut pc = self.client()?;
        block(async {
            let tx = pc
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(server)?;
            let q = |sql: &'static str| tx.query(sql, &[]);
            let versions = q(
                "SELECT id, root, parent, workspace, time, message, next_ino, bytes, entries
                              FROM versions ORDER BY id",
            )
            .await
            .map_err(server)?
            .iter()
            .map(to_version)
            .collect::<Result<_>>()?;
            let heads = heads(&tx).await?;
            let labels = q("SELECT name, version, created FROM labels ORDER BY name")
                .await
                .map_err(server)?
                .iter()
                .map(|r| (r.get(0), VersionId(r.get(1)), r.get(2)))
                .collect();
            let meta =
                q("SELECT workspace, key, value FROM workspace_meta ORDER BY workspace, key")
                    .await
                    .map_err(server)?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect();
            let events = q(
                "SELECT seq, workspace, time, kind, version_before, version_after, data
                            FROM events ORDER BY seq",
            )
            .await
            .map_err(server)?
            .iter()
            .map(to_event)
            .collect();
            Ok(CatalogDump {
                versions,
                heads,
                labels,
                meta,
                events,
            })
        })
    }

    fn restore(&self, d: &CatalogDump) -> Result<()> {
        let mut pc = self.client()?;
        block(async {
            let tx = begin_write(&mut pc).await?;
            let n: i64 = tx
                .query_one(
                    "SELECT (SELECT count(*) FROM versions) + (SELECT count(*) FROM heads)",
                    &[],
                )
                .await
                .map_err(server)?
                .get(0);
            if n > 0 {
                return Err(Error::Invalid("the destination store is not empty"));
            }
            let st = tx
                .prepare(&format!(
                    "INSERT INTO versions({VERSION_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                ))
                .await
                .map_err(server)?;
            for v in &d.versions {
                tx.execute(
                    &st,
                    &[
                        &v.id.0,
                        &&v.root.0[..],
                        &v.parent.map(|p| p.0),
                        &v.workspace,
                        &v.time,
                        &v.message,
                        &(v.next_ino as i64),
                        &(v.bytes as i64),
                        &(v.entries as i64),
                    ],
                )
                .await
                .map_err(server)?;
            }
            for h in &d.heads {
                tx.execute(
                    &format!("INSERT INTO heads({HEAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6)"),
                    &[
                        &h.name,
                        &h.version.0,
                        &h.created,
                        &h.quota.bytes.map(|b| b as i64),
                        &h.quota.entries.map(|e| e as i64),
                        &h.last_active,
                    ],
                )
                .await
                .map_err(server)?;
            }
            for (name, v, created) in &d.labels {
                tx.execute(
                    "INSERT INTO labels(name, version, created) VALUES ($1, $2, $3)",
                    &[name, &v.0, created],
                )
                .await
                .map_err(server)?;
            }
            for (w, k, v) in &d.meta {
                tx.execute(
                    "INSERT INTO workspace_meta(workspace, key, value) VALUES ($1, $2, $3)",
                    &[w, k, v],
                )
                .await
                .map_err(server)?;
            }
            let st = tx
                .prepare(
                    "INSERT INTO events(seq, workspace, time, kind, version_before, version_after, data)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .await
                .map_err(server)?;
            for e in &d.events {
                tx.execute(
                    &st,
                    &[
                        &e.seq,
                        &e.workspace,
                        &e.time,
                        &e.kind,
                        &e.version_before.map(|v| v.0),
                        &e.version_after.map(|v| v.0),
                        &e.data,
                    ],
                )
                .await
                .map_err(server)?;
            }
            // New ids continue after the copied ones.
            tx.batch_execute(
                "SELECT setval('versions_id_seq', coalesce((SELECT max(id) FROM versions), 0) + 1, false);
                 SELECT setval('events_seq_seq', coalesce((SELECT max(seq) FROM events), 0) + 1, false);",
            )
            .await
            .map_err(server)?;
            finish(tx, ()).await
        })
    }
}
