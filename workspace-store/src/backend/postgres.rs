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
//! - Durability ([`Durability`]): by default a tool call's commit does not wait for the WAL
//!   flush (`synchronous_commit` off for its transaction), the promise of the SQLite file's
//!   `synchronous=NORMAL`; everything else waits, so that GC, which deletes from object
//!   storage on the strength of its own writes, never acts on something a crash could undo.
//! - Features used: `BIGSERIAL`, `bytea`, `ON CONFLICT`, `= ANY(array)`, `UNNEST`, recursive
//!   CTEs, `SELECT ... FOR UPDATE` and `LISTEN`/`NOTIFY`; no advisory locks or extensions, so
//!   PostgreSQL-wire services (CockroachDB, YugabyteDB, Neon) that have those should work;
//!   only PostgreSQL itself is tested.
//! - TLS as libpq's `sslmode` and `sslrootcert` ask (`postgres/tls.rs`), on rustls.
//! - Behind a connection pooler in transaction mode (the URL's `pool_mode=transaction`,
//!   `postgres/pooler.rs`), statements are sent unnamed and nothing LISTENs; nothing burrow
//!   does depends on a session outliving its transaction otherwise.
//!
//! The store's API is synchronous; the client is tokio-postgres, each pooled connection
//! driven by the thread that uses it (`postgres/conn.rs`), so the store can be called from
//! any thread, inside an async runtime or not. Only the connection that LISTENs runs on a
//! small runtime of the backend's own.
//!
//! This file is the backend's core (the pool, the writer lock, commits' round trips, row
//! mapping); beside it: `schema.rs` (the tables and their migrations), `statements.rs` (the
//! SQL text), `pooler.rs` (the URL's pooler options, unnamed statements), `objects.rs` (the [`ObjectStore`] and [`PackIndex`] impls), `catalog.rs` (the
//! [`Catalog`] impl), `conn.rs` (connections driven by their caller) and `tls.rs`.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use tokio_postgres::Row;

use super::{
    Catalog, CatalogCapabilities, CatalogDump, CommitRecord, Guard, HeadRow, NewObject, NewVersion,
    ObjectKind, ObjectStore, PackIndex, PackedObject, RefSnapshot, VersionRow, now_ns,
};
use crate::error::{Error, Result};
use crate::event::{Event, EventFilter, NewEvent};
use crate::node::Hash;
use crate::{Durability, Quota, VersionId};

mod catalog;
mod conn;
mod objects;
pub(crate) mod pooler;
mod schema;
mod statements;
mod tls;
use conn::{Cached, Pool, Pooled, Tx};
use schema::*;
use statements::*;

/// Objects per `INSERT` at most (and their bytes), so one statement stays a few MB.
const PUT_BATCH: usize = 256;
const PUT_BATCH_BYTES: usize = 8 << 20;

/// A PostgreSQL database holding a store's catalog and, when asked, its objects.
pub struct Postgres {
    /// Always present until drop.
    runtime: Option<tokio::runtime::Runtime>,
    /// The store URL as tokio-postgres takes it, and the TLS its `sslmode` calls for (the
    /// event listener's connection is made from them).
    target: tls::Target,
    pool: Pool,
    /// What the URL says about a pooler in front of the database (`pooler`).
    pooler: pooler::Pooler,
    durability: Durability,
    /// Whether [`ObjectStore::index_kind`] found the pages' index built (checked once).
    pages_indexed: std::sync::atomic::AtomicBool,
}

fn server(e: tokio_postgres::Error) -> Error {
    // The database's own message ("duplicate key ...", "connection refused") says more than
    // the driver's summary.
    match e.as_db_error() {
        Some(db) if pooler::lost_statement(&e) => Error::Server(format!(
            "{}: {}: {}",
            db.code().code(),
            db.message(),
            pooler::LOST_STATEMENT_HINT
        )),
        Some(db) => Error::Server(format!("{}: {}", db.code().code(), db.message())),
        // The driver's summary ("error performing TLS handshake") and what caused it
        // ("invalid peer certificate: UnknownIssuer").
        None => Error::Server(with_causes(&e)),
    }
}

/// `e`'s message followed by those of its causes.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let more = cause.to_string();
        if !text.ends_with(&more) {
            text = format!("{text}: {more}");
        }
        next = cause.source();
    }
    text
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
    /// Connects to `url` (`postgres://user:password@host:port/db`, with libpq's options,
    /// `sslmode` and `sslrootcert` among them: see the `tls` module) and creates or migrates
    /// the schema. With [`Durability::Normal`], tool calls' commits and the events of calls
    /// that changed nothing do not wait for the server's WAL flush (see [`Catalog::commit`]
    /// and [`Catalog::append_event`]); every other write does.
    pub fn open(url: &str, durability: Durability) -> Result<Postgres> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("burrow-postgres")
            .enable_all()
            .build()?;
        let (url, pooler) = pooler::split(url)?;
        let target = tls::target(&url)?;
        let pg = Postgres {
            runtime: Some(runtime),
            pool: Pool::new(target.config.clone(), target.tls.clone(), pooler.prepared),
            target,
            pooler,
            durability,
            pages_indexed: std::sync::atomic::AtomicBool::new(false),
        };
        pg.migrate()?;
        Ok(pg)
    }

    fn rt(&self) -> &tokio::runtime::Handle {
        match &self.runtime {
            Some(rt) => rt.handle(),
            None => unreachable!("the runtime is only taken by drop"),
        }
    }

    /// Whether an event with these versions is of a call that changed nothing (the same
    /// version before and after), on a store that does not wait for such events' WAL flush.
    fn relaxed_event(&self, e: &NewEvent<'_>) -> bool {
        self.durability == Durability::Normal && e.changed_nothing()
    }

    /// A connection from the pool, on which what is sent comes after the events this process
    /// sent without waiting ([`Catalog::record_event`]).
    fn client(&self) -> Result<Pooled<'_>> {
        self.pool.get()
    }

    /// A connection for a call's reads (its head, its objects): one not still busy with an
    /// event sent without waiting, so that a call made right after another does not wait
    /// for the server to run the last one's event first.
    fn reader(&self) -> Result<Pooled<'_>> {
        self.pool.get_read()
    }

    fn migrate(&self) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            // The common case, a database at this schema already, in one round trip and
            // without the writer lock: every process start pays it, and prepares its hot
            // statements on the way (sent together, answered together).
            let schema = pc.query_opt("SELECT value FROM burrow_meta WHERE key = 'schema'", &[]);
            let (schema, prepared) = futures::future::join(
                schema,
                futures::future::join_all(hot_statements().map(|sql| pc.ready(sql))),
            )
            .await;
            if let Ok(Some(r)) = schema
                && r.get::<_, String>(0) == SCHEMA_VERSION.to_string()
                && prepared.iter().all(|p| p.is_ok())
            {
                return Ok(());
            }
            pc.batch_execute(
                "CREATE TABLE IF NOT EXISTS burrow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO burrow_meta(key, value) VALUES ('writer', '') ON CONFLICT DO NOTHING;",
            )
            .await
            .map_err(server)?;
            let mut tx = begin_write(&mut pc).await?;
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
                // Objects are compressed with lz4 where the server has it (PostgreSQL 14 and
                // up, built with lz4, as the usual packages are): importing 147 MB of source
                // took 1.5 s instead of pglz's 3.7 s, for 83 MB stored instead of 53. A
                // server without it keeps pglz; the schema is the same either way.
                let lz4 = tx.tx.savepoint("lz4").await.map_err(server)?;
                if lz4
                    .batch_execute("ALTER TABLE objects ALTER COLUMN data SET COMPRESSION lz4")
                    .await
                    .is_ok()
                {
                    lz4.commit().await.map_err(server)?;
                }
            }
            if found < 2 {
                tx.batch_execute(SCHEMA_V2).await.map_err(server)?;
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
        // Events sent without waiting ([`Catalog::record_event`]) are answered first.
        self.pool.settle_idle();
        // Dropping a runtime waits for its tasks, which is not allowed inside an async
        // context (where a server may drop its store): let them go in the background.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Begins a write transaction holding the store's writer lock.
async fn begin_write<'a>(pc: &'a mut Pooled<'_>) -> Result<Tx<'a>> {
    let tx = Tx::begin(pc).await?;
    tx.execute(WRITER_LOCK, &[]).await.map_err(server)?;
    Ok(tx)
}

/// Statements nearly every process runs (a tool call's lookups, reads and event): prepared
/// with the schema check on a new connection, all in one round trip, rather than each in
/// one of its own on first use.
fn hot_statements() -> [&'static str; 8] {
    [
        SETTING,
        META,
        FIND_BY_META,
        GET_OBJECT,
        APPEND_EVENT,
        HEAD.as_str(),
        LOCATE.as_str(),
        HEAD_VERSION_META.as_str(),
    ]
}

async fn setting(c: &impl Cached, key: &str) -> Result<Option<String>> {
    let key = format!("setting:{key}");
    let row = c.query_opt(SETTING, &[&key]).await.map_err(server)?;
    Ok(row.map(|r| r.get(0)))
}

/// Whether `guard` no longer holds, read in the caller's transaction after taking the
/// writer lock, with the two statements sent together: the server runs a connection's
/// statements in order, so the setting is read (by a statement of its own, with a snapshot
/// taken then) only once the lock is granted, without a round trip between.
async fn fenced(pc: &Pooled<'_>, guard: Guard<'_>) -> Result<bool> {
    // Prepared first (once per connection), so that the two go out in this order.
    pc.ready(WRITER_LOCK).await.map_err(server)?;
    pc.ready(SETTING).await.map_err(server)?;
    let key = format!("setting:{}", guard.key);
    let (_, row) =
        futures::future::try_join(pc.execute(WRITER_LOCK, &[]), pc.query_opt(SETTING, &[&key]))
            .await
            .map_err(server)?;
    Ok(row.map(|r| r.get::<_, String>(0)).as_deref() != guard.value)
}

/// [`Guard`]'s check, as a statement of its own after [`begin_write`] took the writer lock
/// (a statement begun before the lock was granted would read the setting as it was then).
async fn check_guard(tx: &Tx<'_>, guard: Option<Guard<'_>>) -> Result<()> {
    match guard {
        Some(g) if setting(tx, g.key).await?.as_deref() != g.value => Err(Error::Fenced),
        _ => Ok(()),
    }
}

/// Commits `tx` and returns `out`.
async fn finish<T>(tx: Tx<'_>, out: T) -> Result<T> {
    tx.tx.commit().await.map_err(server)?;
    Ok(out)
}

/// Runs `body` (statements on `pc`) in a transaction whose `BEGIN` is sent together with
/// them instead of a round trip ahead, then commits once they are answered, or rolls back
/// when `body` fails. A lock the transaction needs first is `body`'s first statement (see
/// [`fenced`]). (A [`Tx`] cannot do this: its `BEGIN` is answered before it exists.)
/// Should the thread panic in between, the connection is not pooled again, so no
/// transaction outlives the call.
async fn pipelined<T>(pc: &Pooled<'_>, body: impl Future<Output = Result<T>>) -> Result<T> {
    let begin = async { pc.batch_execute("BEGIN").await.map_err(server) };
    match futures::future::try_join(begin, body).await {
        Ok(((), out)) => {
            pc.batch_execute("COMMIT").await.map_err(server)?;
            Ok(out)
        }
        Err(e) => {
            // A failed statement has aborted the transaction already; this ends it.
            let _ = pc.batch_execute("ROLLBACK").await;
            Err(e)
        }
    }
}

/// [`pipelined`] with `COMMIT` sent in the same round trip: `BEGIN`, `body`'s statements and
/// `COMMIT` go out together. `body` must send every statement when first polled (each
/// prepared already, none waiting on another's answer), or `COMMIT` would go out before
/// them; and whatever its statements did must be fit to keep when it returns an error
/// without one of them failing. A failed statement aborts the transaction, and `COMMIT`
/// then rolls it back.
async fn in_one_trip<T>(pc: &Pooled<'_>, body: impl Future<Output = Result<T>>) -> Result<T> {
    let commit_sent = std::cell::Cell::new(false);
    let begin = async { pc.batch_execute("BEGIN").await.map_err(server) };
    let commit = async {
        commit_sent.set(true);
        pc.batch_execute("COMMIT").await.map_err(server)
    };
    match futures::future::try_join3(begin, body, commit).await {
        Ok(((), out, ())) => Ok(out),
        Err(e) => {
            // `body` failed before `COMMIT` went out: end the transaction here.
            if !commit_sent.get() {
                let _ = pc.batch_execute("ROLLBACK").await;
            }
            Err(e)
        }
    }
}

/// `objs` in the runs that one [`PUT_OBJECTS`] inserts.
fn batches<'o, 'a>(objs: &'o [NewObject<'a>]) -> impl Iterator<Item = &'o [NewObject<'a>]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= objs.len() {
            return None;
        }
        let mut end = start;
        let mut bytes = 0;
        while end < objs.len() && end - start < PUT_BATCH && bytes < PUT_BATCH_BYTES {
            bytes += objs[end].data.len();
            end += 1;
        }
        let chunk = &objs[start..end];
        start = end;
        Some(chunk)
    })
}

async fn put_objects(c: &impl Cached, objs: &[NewObject<'_>]) -> Result<()> {
    let now = now_ns();
    for chunk in batches(objs) {
        let hashes: Vec<&[u8]> = chunk.iter().map(|o| &o.hash.0[..]).collect();
        let kinds: Vec<i16> = chunk.iter().map(|o| kind_code(o.kind)).collect();
        let datas: Vec<&[u8]> = chunk.iter().map(|o| o.data).collect();
        c.execute(PUT_OBJECTS, &[&hashes, &kinds, &datas, &now])
            .await
            .map_err(server)?;
    }
    Ok(())
}

async fn version(c: &impl Cached, id: VersionId) -> Result<VersionRow> {
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

async fn head(c: &impl Cached, name: &str) -> Result<HeadRow> {
    let row = c
        .query_opt(&HEAD, &[&name])
        .await
        .map_err(server)?
        .ok_or_else(|| Error::NoWorkspace(name.to_string()))?;
    Ok(to_head(&row))
}

async fn insert_version(c: &impl Cached, v: &NewVersion<'_>) -> Result<VersionId> {
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

async fn commit_statement(
    c: &impl Cached,
    r: &CommitRecord<'_>,
    relaxed: bool,
) -> Result<(VersionId, Option<i64>)> {
    let v = &r.version;
    let (kinds, datas): (Vec<&str>, Vec<&str>) = r
        .events
        .iter()
        .map(|(k, d)| (k.as_str(), d.as_str()))
        .chain(r.event)
        .unzip();
    let row = c
        .query_one(
            COMMIT_STATEMENT,
            &[
                &&v.root.0[..],
                &v.parent.map(|p| p.0),
                &v.workspace,
                &now_ns(),
                &v.message,
                &(v.next_ino as i64),
                &(v.bytes as i64),
                &(v.entries as i64),
                &r.expected.0,
                &kinds,
                &datas,
                &EVENTS_CHANNEL,
                &relaxed,
            ],
        )
        .await
        .map_err(server)?;
    let id = VersionId(row.get(0));
    if row.get::<_, i64>(1) != 1 {
        let actual = head(c, v.workspace).await?.version;
        return Err(Error::Conflict {
            workspace: v.workspace.to_string(),
            expected: r.expected,
            actual,
        });
    }
    let seq = r.event.and(row.get::<_, Option<i64>>(2));
    Ok((id, seq))
}

async fn insert_head(c: &impl Cached, name: &str, version: VersionId) -> Result<()> {
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

async fn cas_head(c: &impl Cached, name: &str, expected: VersionId, new: VersionId) -> Result<()> {
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

async fn set_quota(c: &impl Cached, name: &str, quota: Quota) -> Result<()> {
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

async fn labels(c: &impl Cached) -> Result<Vec<(String, VersionId)>> {
    let rows = c
        .query("SELECT name, version FROM labels ORDER BY name", &[])
        .await
        .map_err(server)?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), VersionId(r.get(1))))
        .collect())
}

async fn heads(c: &impl Cached) -> Result<Vec<HeadRow>> {
    let rows = c
        .query(&format!("SELECT {HEAD_COLS} FROM heads ORDER BY name"), &[])
        .await
        .map_err(server)?;
    Ok(rows.iter().map(to_head).collect())
}
