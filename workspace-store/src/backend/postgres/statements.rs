//! The SQL text the backend sends, in one place: the statements every tool call runs are
//! prepared when a connection opens ([`hot_statements`](super::hot_statements)), the others on
//! first use and kept per connection.

pub(super) const VERSION_COLS: &str =
    "id, root, parent, workspace, time, message, next_ino, bytes, entries";

pub(super) const HEAD_COLS: &str =
    "name, version, created, quota_bytes, quota_entries, last_active";

/// An event, `last_active` and the notification (see [`Catalog::append_event`] below);
/// `$8` turns the wait for the WAL flush off for its transaction.
pub(super) const APPEND_EVENT: &str = "
    WITH w AS (SELECT value FROM burrow_meta WHERE key = 'writer' FOR UPDATE),
         e AS (INSERT INTO events(workspace, time, kind, version_before, version_after, data)
               SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::bigint, $6::text
               FROM w RETURNING seq),
         t AS (UPDATE heads SET last_active = $2 WHERE name = $1 AND EXISTS (SELECT 1 FROM e))
    SELECT seq, pg_notify($7, '')::text,
           CASE WHEN $8 THEN set_config('synchronous_commit', 'off', true) END
    FROM e";

/// Takes the store's writer lock (held to the end of the transaction).
pub(super) const WRITER_LOCK: &str =
    "SELECT value FROM burrow_meta WHERE key = 'writer' FOR UPDATE";

pub(super) const SETTING: &str = "SELECT value FROM burrow_meta WHERE key = $1";

pub(super) const META: &str = "SELECT key, value FROM workspace_meta WHERE workspace = $1";

pub(super) const FIND_BY_META: &str =
    "SELECT workspace FROM workspace_meta WHERE key = $1 AND value = $2 LIMIT 1";

pub(super) const GET_OBJECT: &str = "SELECT data FROM objects WHERE hash = $1";

pub(super) static HEAD: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {HEAD_COLS} FROM heads WHERE name = $1"));

pub(super) static LOCATE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {PACKED_COLS} FROM packed WHERE hash = ANY($1)"));

/// A page of the pack index, in the order of its primary key.
pub(super) static PACKED_AFTER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {PACKED_COLS} FROM packed WHERE hash > $1 ORDER BY hash LIMIT $2")
});

/// The head, its version and the workspace's metadata as of one snapshot.
pub(super) static HEAD_VERSION_META: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
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

/// Inserts objects, keeping the first `created` of one already there fresh (GC's grace).
pub(super) const PUT_OBJECTS: &str = "INSERT INTO objects(hash, kind, data, created)
     SELECT h, k, d, $4 FROM UNNEST($1::bytea[], $2::smallint[], $3::bytea[]) AS t(h, k, d)
     ON CONFLICT (hash) DO UPDATE SET created = excluded.created";

/// A commit's writer lock, version row, head compare-and-swap, `last_active`, events and
/// notification, in one statement of the caller's transaction (one round trip where they
/// took eight). The lock is taken before the version id and the events' sequence numbers
/// are drawn (the insert reads the locked row), so both still follow commit order; the
/// events are numbered in the order given. A head that moved leaves nothing: the version
/// row and the events are inserted only with the head's move (the id is drawn first, so the
/// head can point at it), and the caller gets [`Error::Conflict`]. `$13` turns the wait for
/// the WAL flush off for its transaction ([`Durability::Normal`]).
pub(super) const COMMIT_STATEMENT: &str = "
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

/// The channel a commit with events notifies (delivered when its transaction commits).
pub(super) const EVENTS_CHANNEL: &str = "burrow_events";

/// Records packed objects' places, moving an entry recorded before (see [`PackIndex`]).
pub(super) const RECORD_PACKED: &str = "INSERT INTO packed(hash, kind, pack, pos, len, created)
     SELECT h, k, p, o, l, $6
     FROM UNNEST($1::bytea[], $2::smallint[], $3::text[], $4::bigint[], $5::int[])
         AS t(h, k, p, o, l)
     ON CONFLICT (hash) DO UPDATE SET kind = excluded.kind, pack = excluded.pack,
         pos = excluded.pos, len = excluded.len, created = excluded.created";

pub(super) const PACKED_COLS: &str = "hash, kind, pack, pos, len, created";
