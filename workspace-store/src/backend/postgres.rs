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
//! - Connections are plain TCP (no TLS yet): run it on loopback or a private network.
//!
//! The store's API is synchronous; the client is tokio-postgres, each pooled connection
//! driven by the thread that uses it (`postgres/conn.rs`), so the store can be called from
//! any thread, inside an async runtime or not. Only the connection that LISTENs runs on a
//! small runtime of the backend's own.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use tokio_postgres::Row;

use super::{
    Catalog, CatalogDump, CommitRecord, Guard, HeadRow, NewObject, NewVersion, ObjectKind,
    ObjectStore, PackIndex, PackedObject, RefSnapshot, VersionRow, now_ns,
};
use crate::error::{Error, Result};
use crate::meta::{Event, EventFilter};
use crate::node::Hash;
use crate::{Durability, Quota, VersionId};

mod conn;
mod tls;
use conn::{Cached, Pool, Pooled, Tx};

/// The schema version this code writes (`burrow_meta.schema`).
const SCHEMA_VERSION: i64 = 2;

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

/// Version 2: the index of objects packed into larger objects in object storage
/// ([`PackIndex`]).
const SCHEMA_V2: &str = "
CREATE TABLE packed (
    hash    BYTEA PRIMARY KEY,
    kind    SMALLINT NOT NULL,
    pack    TEXT NOT NULL,
    pos     BIGINT NOT NULL,
    len     INTEGER NOT NULL,
    created BIGINT NOT NULL
);
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
    /// The store URL as tokio-postgres takes it, and the TLS its `sslmode` calls for (the
    /// event listener's connection is made from them).
    target: tls::Target,
    pool: Pool,
    durability: Durability,
    /// Whether [`ObjectStore::index_kind`] found the pages' index built (checked once).
    pages_indexed: std::sync::atomic::AtomicBool,
}

fn server(e: tokio_postgres::Error) -> Error {
    // The database's own message ("duplicate key ...", "connection refused") says more than
    // the driver's summary.
    match e.as_db_error() {
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
        let target = tls::target(url)?;
        let pg = Postgres {
            runtime: Some(runtime),
            pool: Pool::new(target.config.clone(), target.tls.clone()),
            target,
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
    fn relaxed_event(&self, before: Option<VersionId>, after: Option<VersionId>) -> bool {
        self.durability == Durability::Normal && before.is_some() && before == after
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
                futures::future::join_all(hot_statements().map(|sql| pc.statement(sql))),
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

/// An event, `last_active` and the notification (see [`Catalog::append_event`] below);
/// `$8` turns the wait for the WAL flush off for its transaction.
const APPEND_EVENT: &str = "
    WITH w AS (SELECT value FROM burrow_meta WHERE key = 'writer' FOR UPDATE),
         e AS (INSERT INTO events(workspace, time, kind, version_before, version_after, data)
               SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::bigint, $6::text
               FROM w RETURNING seq),
         t AS (UPDATE heads SET last_active = $2 WHERE name = $1 AND EXISTS (SELECT 1 FROM e))
    SELECT seq, pg_notify($7, '')::text,
           CASE WHEN $8 THEN set_config('synchronous_commit', 'off', true) END
    FROM e";

/// Takes the store's writer lock (held to the end of the transaction).
const WRITER_LOCK: &str = "SELECT value FROM burrow_meta WHERE key = 'writer' FOR UPDATE";

const SETTING: &str = "SELECT value FROM burrow_meta WHERE key = $1";
const META: &str = "SELECT key, value FROM workspace_meta WHERE workspace = $1";
const FIND_BY_META: &str =
    "SELECT workspace FROM workspace_meta WHERE key = $1 AND value = $2 LIMIT 1";
const GET_OBJECT: &str = "SELECT data FROM objects WHERE hash = $1";
static HEAD: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {HEAD_COLS} FROM heads WHERE name = $1"));
static LOCATE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {PACKED_COLS} FROM packed WHERE hash = ANY($1)"));
/// A page of the pack index, in the order of its primary key.
static PACKED_AFTER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {PACKED_COLS} FROM packed WHERE hash > $1 ORDER BY hash LIMIT $2")
});
/// The head, its version and the workspace's metadata as of one snapshot.
static HEAD_VERSION_META: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let cols: Vec<String> = HEAD_COLS
        .split(", ")
        .map(|c| format!("h.{c}"))
        .chain(VERSION_COLS.split(", ").map(|c| format!("v.{c}")))
        .collect();
    format!(
        "SELECT {}, m.keys, m.vals
         FROM heads h LEFT JOIN versions v ON v.id = h.version
         LEFT JOIN LATERAL (SELECT array_agg(key) AS keys, array_agg(value) AS vals
                            FROM workspace_meta WHERE workspace = h.name) m ON true
         WHERE h.name = $1",
        cols.join(", ")
    )
});

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
    let lock = pc.statement(WRITER_LOCK).await.map_err(server)?;
    let read = pc.statement(SETTING).await.map_err(server)?;
    let key = format!("setting:{}", guard.key);
    let client: &tokio_postgres::Client = pc;
    let (_, row) =
        futures::future::try_join(client.execute(&lock, &[]), client.query_opt(&read, &[&key]))
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

/// Inserts objects, keeping the first `created` of one already there fresh (GC's grace).
const PUT_OBJECTS: &str = "INSERT INTO objects(hash, kind, data, created)
     SELECT h, k, d, $4 FROM UNNEST($1::bytea[], $2::smallint[], $3::bytea[]) AS t(h, k, d)
     ON CONFLICT (hash) DO UPDATE SET created = excluded.created";

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

/// A commit's writer lock, version row, head compare-and-swap, `last_active`, events and
/// notification, in one statement of the caller's transaction (one round trip where they
/// took eight). The lock is taken before the version id and the events' sequence numbers
/// are drawn (the insert reads the locked row), so both still follow commit order; the
/// events are numbered in the order given. A head that moved leaves nothing: the version
/// row and the events are inserted only with the head's move (the id is drawn first, so the
/// head can point at it), and the caller gets [`Error::Conflict`]. `$13` turns the wait for
/// the WAL flush off for its transaction ([`Durability::Normal`]).
const COMMIT_STATEMENT: &str = "
    WITH w AS (SELECT 1 FROM burrow_meta WHERE key = 'writer' FOR UPDATE),
         n AS (SELECT nextval('versions_id_seq') AS id FROM w),
         h AS (UPDATE heads SET version = (SELECT id FROM n), last_active = $4
               WHERE name = $3 AND version = $9 RETURNING version),
         v AS (INSERT INTO versions(id, root, parent, workspace, time, message, next_ino,
                                    bytes, entries)
               SELECT h.version, $1::bytea, $2::bigint, $3::text, $4::bigint, $5::text,
                      $6::bigint, $7::bigint, $8::bigint
               FROM h RETURNING id),
         e AS (INSERT INTO events(workspace, time, kind, version_before, version_after, data)
               SELECT $3, $4, x.k, $9, h.version, x.d
               FROM h, unnest($10::text[], $11::text[]) WITH ORDINALITY AS x(k, d, o)
               ORDER BY x.o RETURNING seq)
    SELECT (SELECT id FROM n), (SELECT count(*) FROM v), (SELECT max(seq) FROM e),
           CASE WHEN cardinality($10::text[]) > 0 AND EXISTS (SELECT 1 FROM h)
                THEN pg_notify($12, '')::text END,
           CASE WHEN $13 THEN set_config('synchronous_commit', 'off', true) END";

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

/// The channel a commit with events notifies (delivered when its transaction commits).
const EVENTS_CHANNEL: &str = "burrow_events";

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

impl ObjectStore for Postgres {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        // No writer lock: objects are immutable and the insert is idempotent.
        let pc = self.client()?;
        pc.driver().block(pipelined(&pc, put_objects(&pc, objects)))
    }

    fn get(&self, hash: &Hash, _kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        let pc = self.reader()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(GET_OBJECT, &[&&hash.0[..]])
                .await
                .map_err(server)?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn get_many(&self, hashes: &[Hash], _kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let pc = self.reader()?;
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        pc.driver().block(async {
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

    fn remove(&self, hashes: &[Hash]) -> Result<()> {
        let pc = self.client()?;
        pc.driver().block(async {
            for chunk in hashes.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                pc.execute("DELETE FROM objects WHERE hash = ANY($1)", &[&keys])
                    .await
                    .map_err(server)?;
            }
            Ok(())
        })
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let pc = self.client()?;
        pc.driver().block(async {
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

    fn list_kind(&self, kind: ObjectKind, limit: usize) -> Result<Vec<Hash>> {
        // The kind as a literal, so the planner can prove the pages' partial index
        // (`index_kind`) applies, whatever plan it caches.
        let sql = format!(
            "SELECT hash FROM objects WHERE kind = {} LIMIT $1",
            kind_code(kind)
        );
        let pc = self.client()?;
        let limit = limit as i64;
        pc.driver().block(async {
            pc.query(&sql, &[&limit])
                .await
                .map_err(server)?
                .iter()
                .map(|r| hash_of(r.get::<_, &[u8]>(0)))
                .collect()
        })
    }

    /// The pages' partial index, which offloading reads by (the catalog's objects are mostly
    /// tree nodes; without it each batch read the table until it found its pages). Built
    /// with `CREATE INDEX CONCURRENTLY`, which does not block commits but waits for the
    /// transactions open when it starts; one left invalid by a build that was interrupted
    /// is dropped and built again, and one being built by another process is left to it
    /// (offloading then reads the table meanwhile). Only a store that offloads has it: on
    /// one that keeps its pages in the database for good, it would be every page's.
    fn index_kind(&self, kind: ObjectKind) -> Result<()> {
        use std::sync::atomic::Ordering;
        if kind != ObjectKind::Page || self.pages_indexed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let pc = self.client()?;
        let built = pc.driver().block(async {
            let valid: Option<bool> = pc
                .query_one(
                    "SELECT (SELECT indisvalid FROM pg_index
                             WHERE indexrelid = to_regclass('objects_pages'))",
                    &[],
                )
                .await
                .map_err(server)?
                .get(0);
            match valid {
                Some(true) => return Ok(true),
                Some(false) => {
                    // Invalid: being built, or left by a build that was interrupted. (A
                    // server without the progress view is taken to be building it.)
                    let building = pc
                        .query_one(
                            "SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
                                            WHERE index_relid = to_regclass('objects_pages'))",
                            &[],
                        )
                        .await
                        .map_or(true, |r| r.get(0));
                    if building {
                        return Ok(false);
                    }
                    pc.batch_execute("DROP INDEX CONCURRENTLY IF EXISTS objects_pages")
                        .await
                        .map_err(server)?;
                }
                None => {}
            }
            tracing::info!("building the index of the catalog's pages (objects_pages), once");
            pc.batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS objects_pages ON objects (hash) \
                 WHERE kind = {}",
                kind_code(ObjectKind::Page)
            ))
            .await
            .map_err(server)?;
            Ok(true)
        })?;
        self.pages_indexed.store(built, Ordering::Relaxed);
        Ok(())
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let pc = self.client()?;
        pc.driver().block(async {
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

/// Records packed objects' places, moving an entry recorded before (see [`PackIndex`]).
const RECORD_PACKED: &str = "INSERT INTO packed(hash, kind, pack, pos, len, created)
     SELECT h, k, p, o, l, $6
     FROM UNNEST($1::bytea[], $2::smallint[], $3::text[], $4::bigint[], $5::int[])
         AS t(h, k, p, o, l)
     ON CONFLICT (hash) DO UPDATE SET kind = excluded.kind, pack = excluded.pack,
         pos = excluded.pos, len = excluded.len, created = excluded.created";

const PACKED_COLS: &str = "hash, kind, pack, pos, len, created";

/// Entries per statement: a few hundred KB of parameters.
const PACKED_BATCH: usize = 4096;

fn kind_of(code: i16) -> ObjectKind {
    if code == kind_code(ObjectKind::Node) {
        ObjectKind::Node
    } else {
        ObjectKind::Page
    }
}

fn to_packed(r: &Row) -> Result<PackedObject> {
    Ok(PackedObject {
        hash: hash_of(r.get::<_, &[u8]>(0))?,
        kind: kind_of(r.get(1)),
        pack: r.get(2),
        offset: r.get::<_, i64>(3) as u64,
        len: r.get::<_, i32>(4) as u32,
        created: r.get(5),
    })
}

impl PackIndex for Postgres {
    fn record_packed(&self, entries: &[PackedObject]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        let pc = self.client()?;
        pc.driver().block(pipelined(&pc, async {
            for chunk in entries.chunks(PACKED_BATCH) {
                let hashes: Vec<&[u8]> = chunk.iter().map(|e| &e.hash.0[..]).collect();
                let kinds: Vec<i16> = chunk.iter().map(|e| kind_code(e.kind)).collect();
                let packs: Vec<&str> = chunk.iter().map(|e| e.pack.as_str()).collect();
                let offsets: Vec<i64> = chunk.iter().map(|e| e.offset as i64).collect();
                let lens: Vec<i32> = chunk.iter().map(|e| e.len as i32).collect();
                pc.execute(
                    RECORD_PACKED,
                    &[&hashes, &kinds, &packs, &offsets, &lens, &now],
                )
                .await
                .map_err(server)?;
            }
            Ok(())
        }))
    }

    fn locate(&self, hashes: &[Hash]) -> Result<Vec<PackedObject>> {
        let pc = self.client()?;
        pc.driver()
            .block(for_hashes(&pc, &LOCATE, hashes, &[]))?
            .iter()
            .map(to_packed)
            .collect()
    }

    fn packed_after(&self, after: Option<&Hash>, limit: usize) -> Result<Vec<PackedObject>> {
        let pc = self.client()?;
        // Every hash sorts after the empty string.
        let after: &[u8] = after.map(|h| &h.0[..]).unwrap_or(&[]);
        let limit = limit as i64;
        pc.driver().block(async {
            pc.query(&PACKED_AFTER, &[&after, &limit])
                .await
                .map_err(server)?
                .iter()
                .map(to_packed)
                .collect()
        })
    }

    fn forget_packed(&self, hashes: &[Hash], written_before: i64) -> Result<Vec<u32>> {
        let pc = self.client()?;
        let sql = "DELETE FROM packed WHERE hash = ANY($1) AND created < $2 RETURNING len";
        let rows = pc
            .driver()
            .block(for_hashes(&pc, sql, hashes, &[&written_before]))?;
        Ok(rows.iter().map(|r| r.get::<_, i32>(0) as u32).collect())
    }
}

/// Runs `sql`, whose `$1` is an array of hashes and whose further parameters are `rest`,
/// over `hashes` a thousand at a time; returns every row.
async fn for_hashes(
    c: &impl Cached,
    sql: &str,
    hashes: &[Hash],
    rest: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for chunk in hashes.chunks(1000) {
        let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&keys];
        params.extend_from_slice(rest);
        out.extend(c.query(sql, &params).await.map_err(server)?);
    }
    Ok(out)
}

impl Catalog for Postgres {
    fn version(&self, id: VersionId) -> Result<VersionRow> {
        let pc = self.reader()?;
        pc.driver().block(version(&pc, id))
    }

    fn versions(&self) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        pc.driver().block(async {
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
        let pc = self.reader()?;
        pc.driver().block(head(&pc, name))
    }

    fn heads(&self) -> Result<Vec<HeadRow>> {
        let pc = self.client()?;
        pc.driver().block(heads(&pc))
    }

    fn head_version(&self, name: &str) -> Result<(HeadRow, VersionRow)> {
        self.head_version_meta(name).map(|(h, v, _)| (h, v))
    }

    fn head_version_meta(
        &self,
        name: &str,
    ) -> Result<(HeadRow, VersionRow, BTreeMap<String, String>)> {
        let pc = self.reader()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(&HEAD_VERSION_META, &[&name])
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
            let keys: Vec<String> = row.get::<_, Option<Vec<String>>>(15).unwrap_or_default();
            let vals: Vec<String> = row.get::<_, Option<Vec<String>>>(16).unwrap_or_default();
            Ok((h, v, keys.into_iter().zip(vals).collect()))
        })
    }

    fn lineage(&self, name: &str, limit: usize) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let h = head(&pc, name).await?;
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
        pc.driver().block(labels(&pc))
    }

    fn version_count(&self, workspace: &str) -> Result<u64> {
        let pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            version(&tx, v).await?;
            insert_head(&tx, name, v).await?;
            finish(tx, ()).await
        })
    }

    fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        // One statement, so one round trip and atomic by itself: a taken name fails the
        // whole insert. The source head is read as of the statement's start, so the fork
        // takes effect before any commit that was waiting for the writer lock with it.
        let pc = self.client()?;
        pc.driver().block(async {
            let names: Vec<&str> = names.to_vec();
            let r = pc
                .query_one(
                    "WITH w AS (SELECT 1 FROM burrow_meta WHERE key = 'writer' FOR UPDATE),
                          s AS (SELECT h.version, h.quota_bytes, h.quota_entries
                                FROM heads h, w WHERE h.name = $1),
                          i AS (INSERT INTO heads(name, version, created, quota_bytes,
                                                  quota_entries)
                                SELECT n, s.version, $3, s.quota_bytes, s.quota_entries
                                FROM s, unnest($2::text[]) AS n RETURNING name)
                     SELECT (SELECT version FROM s), (SELECT count(*) FROM i)",
                    &[&source, &names, &now_ns()],
                )
                .await;
            match r {
                Ok(row) => match row.get::<_, Option<i64>>(0) {
                    Some(v) => Ok(VersionId(v)),
                    None => Err(Error::NoWorkspace(source.to_string())),
                },
                Err(e) if unique_violation(&e) => {
                    // Which name: the first that is taken now (or repeated in `names`).
                    let taken = pc
                        .query("SELECT name FROM heads WHERE name = ANY($1)", &[&names])
                        .await
                        .map_err(server)?;
                    let taken: Vec<String> = taken.iter().map(|r| r.get(0)).collect();
                    let name = names
                        .iter()
                        .enumerate()
                        .find(|(i, n)| taken.iter().any(|t| t == *n) || names[..*i].contains(n))
                        .map(|(_, n)| n.to_string())
                        .unwrap_or_default();
                    Err(Error::WorkspaceExists(name))
                }
                Err(e) => Err(server(e)),
            }
        })
    }

    fn delete_head(&self, name: &str) -> Result<()> {
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            set_quota(&tx, name, quota).await?;
            finish(tx, ()).await
        })
    }

    fn set_label(&self, name: &str, v: VersionId) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        // A tool call's commit waits for the WAL flush only with `Durability::Full` (see
        // [`Postgres::open`]).
        let relaxed = self.durability == Durability::Normal;
        let pc = self.client()?;
        let pc = &pc;
        if record.guard.is_none() && batches(objects).nth(1).is_none() {
            // No guard to check before committing, and the objects in one insert: one round
            // trip, `COMMIT` included. A head that moved leaves only the objects' rows,
            // which are garbage until something refers to them (GC's to collect).
            return pc.driver().block(async {
                for sql in [PUT_OBJECTS, COMMIT_STATEMENT] {
                    pc.statement(sql).await.map_err(server)?;
                }
                in_one_trip(pc, async {
                    let ((), out) = futures::future::try_join(
                        put_objects(pc, objects),
                        commit_statement(pc, record, relaxed),
                    )
                    .await?;
                    Ok(out)
                })
                .await
            });
        }
        // One round trip, then `COMMIT`: `BEGIN`; for a guarded commit the writer lock and
        // the guard's setting ([`fenced`]); the objects' inserts; and the commit's statement,
        // all sent without waiting between. A guard that no longer holds rolls back what
        // the statements after it did. On a connection's first guarded commit the guard's
        // statements are prepared first, so the commit's statement may go out before them;
        // that is still sound: it takes the writer lock itself, and the setting is read
        // after the lock either way.
        pc.driver().block(pipelined(pc, async {
            let guard = async {
                match record.guard {
                    Some(g) => fenced(pc, g).await,
                    None => Ok(false),
                }
            };
            let (fenced, (), out) = futures::future::try_join3(
                guard,
                put_objects(pc, objects),
                commit_statement(pc, record, relaxed),
            )
            .await?;
            if fenced {
                return Err(Error::Fenced);
            }
            Ok(out)
        }))
    }

    fn checkout(&self, workspace: &str, target: VersionId, message: &str) -> Result<VersionId> {
        let mut pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver().block(async {
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
        pc.driver().block(async {
            let rows = pc.query(META, &[&workspace]).await.map_err(server)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(FIND_BY_META, &[&key, &value])
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
        // One statement in a transaction of its own (one round trip, where a transaction
        // around four statements took six): the writer lock is taken before the event's
        // sequence number is drawn, since the insert reads the locked row, and is held to
        // the commit, so sequence numbers still follow commit order. `last_active` is set
        // after the insert, and the notification goes out at the commit.
        //
        // The event of a call that changed nothing (a read: the same version before and
        // after) does not wait for the server's WAL flush (`synchronous_commit` off for its
        // transaction alone, a tenth of a millisecond of a read call here): a crash of the
        // database server can lose the last such events, never a version or a session's
        // creation or deletion, and what it keeps stays consistent. This is the durability
        // of the SQLite store's WAL with `synchronous=NORMAL`, and `Durability::Full` turns
        // it off.
        let changed_nothing = self.relaxed_event(before, after);
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_one(
                    APPEND_EVENT,
                    &[
                        &workspace,
                        &now_ns(),
                        &kind,
                        &before.map(|v| v.0),
                        &after.map(|v| v.0),
                        &data,
                        &EVENTS_CHANNEL,
                        &changed_nothing,
                    ],
                )
                .await
                .map_err(server)?;
            Ok(row.get(0))
        })
    }

    /// The event of a call that changed nothing (the same version before and after) is sent
    /// without waiting for its answer, with the durability [`Catalog::append_event`] gives it:
    /// the call's own round trip is then the head's query alone. The connection's next use
    /// reads the answer on the way (one of this process's calls that follows on the same
    /// connection is numbered after it), and reading the log, deleting a workspace, GC and
    /// dropping the store wait for every such answer first. Another process reading the log
    /// may see the event a fraction of a millisecond after the call returned; one that fails
    /// (the database gone) is logged rather than reported to the call. `Durability::Full`
    /// waits, as every other event does.
    fn record_event(
        &self,
        workspace: &str,
        kind: &str,
        before: Option<VersionId>,
        after: Option<VersionId>,
        data: &str,
    ) -> Result<()> {
        let changed_nothing = self.relaxed_event(before, after);
        if !changed_nothing {
            return self
                .append_event(workspace, kind, before, after, data)
                .map(|_| ());
        }
        let pc = self.client()?;
        // Prepared now (once per connection) so that the statement goes out at once.
        let st = pc
            .driver()
            .block(async { pc.statement(APPEND_EVENT).await.map_err(server) })?;
        let client = pc.shared_client();
        let (workspace, kind, data) = (workspace.to_string(), kind.to_string(), data.to_string());
        let (before, after, now) = (before.map(|v| v.0), after.map(|v| v.0), now_ns());
        pc.defer(Box::pin(async move {
            client
                .execute(
                    &st,
                    &[
                        &workspace,
                        &now,
                        &kind,
                        &before,
                        &after,
                        &data,
                        &EVENTS_CHANNEL,
                        &true,
                    ],
                )
                .await
        }));
        Ok(())
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let pc = self.client()?;
        pc.driver().block(async {
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
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver().block(setting(&pc, key))
    }

    fn swap_setting(&self, key: &str, expected: Option<&str>, new: Option<&str>) -> Result<bool> {
        let mut pc = self.client()?;
        pc.driver().block(async {
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
        pc.driver()
            .block(async { pc.batch_execute("VACUUM objects").await.map_err(server) })
    }

    fn disk_bytes(&self) -> Option<u64> {
        None
    }

    fn catalog_bytes(&self) -> Result<Option<u64>> {
        let pc = self.client()?;
        pc.driver().block(async {
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

    fn flushes_writes(&self) -> Result<bool> {
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_one("SELECT current_setting('synchronous_commit') <> 'off'", &[])
                .await
                .map_err(server)?;
            Ok(row.get(0))
        })
    }

    fn watch(&self, wake: std::sync::Arc<dyn Fn() + Send + Sync>) -> Result<bool> {
        use futures::StreamExt;
        let (config, tls) = (self.target.config.clone(), self.target.tls.clone());
        // A connection of its own that LISTENs, on the backend's runtime, reconnecting when
        // it is lost (a restarted server), with a wake after each (re)connect for what was
        // missed meanwhile.
        self.rt().spawn(async move {
            loop {
                if let Ok((client, mut conn)) = config.connect(tls.clone()).await {
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
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
            let (client, statements) = pc.exclusive().await?;
            let tx = Tx {
                tx: client
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start()
                    .await
                    .map_err(server)?,
                statements,
            };
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
        pc.driver().block(async {
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
                tx.tx
                    .execute(
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
                tx.tx
                    .execute(
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
