//! The tables, as created and migrated on open (`Postgres::migrate`, under the writer lock):
//! version 1 (objects, versions, heads, labels, metadata, events, settings) and version 2
//! (the pack index).

/// The schema version this code writes (`burrow_meta.schema`).
pub(super) const SCHEMA_VERSION: i64 = 2;

pub(super) const SCHEMA_V1: &str = "
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
pub(super) const SCHEMA_V2: &str = "
CREATE TABLE packed (
    hash    BYTEA PRIMARY KEY,
    kind    SMALLINT NOT NULL,
    pack    TEXT NOT NULL,
    pos     BIGINT NOT NULL,
    len     INTEGER NOT NULL,
    created BIGINT NOT NULL
);
";
