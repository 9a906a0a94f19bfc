//! Per-workspace metadata (small string key/values, with unique `name`s) and the event log:
//! an append-only, sequence-numbered record per workspace that callers use for their audit
//! trail (tool calls, lifecycle events). Data is opaque text to the store (JSON by convention).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};

use crate::db::Db;
use crate::error::{Error, Result};
use crate::txn::{Commit, Txn};
use crate::{Store, VersionId};

/// One event of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Position in the log of the whole store: strictly increasing, never reused.
    pub seq: i64,
    pub workspace: String,
    /// Nanoseconds since the Unix epoch.
    pub time: i64,
    pub kind: String,
    pub version_before: Option<VersionId>,
    pub version_after: Option<VersionId>,
    pub data: String,
}

/// Which events [`Store::events`] returns.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only this workspace's events.
    pub workspace: Option<String>,
    /// Only events with `seq` greater than this.
    pub after: i64,
    /// Only events of this kind.
    pub kind: Option<String>,
    /// At most this many (0: no limit).
    pub limit: usize,
}

impl Store {
    /// Sets (or with `None` removes) a metadata value of a workspace. The key `name` is unique
    /// across workspaces: setting a taken name fails with [`Error::WorkspaceExists`].
    pub fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()> {
        let conn = self.db().lock_writer();
        Db::head(&conn, workspace)?;
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

    /// All metadata of a workspace.
    pub fn meta(&self, workspace: &str) -> Result<BTreeMap<String, String>> {
        self.db().read(|c| {
            let mut st =
                c.prepare_cached("SELECT key, value FROM workspace_meta WHERE workspace = ?1")?;
            let rows = st.query_map(params![workspace], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// The workspace whose metadata `key` is `value`, if any.
    pub fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        self.db().read(|c| {
            Ok(c.prepare_cached(
                "SELECT workspace FROM workspace_meta WHERE key = ?1 AND value = ?2 LIMIT 1",
            )?
            .query_row(params![key, value], |r| r.get(0))
            .optional()?)
        })
    }

    /// Appends an event to the log; returns its sequence number. Also marks the workspace
    /// active now.
    pub fn append_event(
        &self,
        workspace: &str,
        kind: &str,
        before: Option<VersionId>,
        after: Option<VersionId>,
        data: &str,
    ) -> Result<i64> {
        let conn = self.db().lock_writer();
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        let seq = Db::insert_event(&tx, workspace, kind, before, after, data)?;
        Db::touch(&tx, workspace)?;
        tx.commit()?;
        Ok(seq)
    }

    /// Events matching `filter`, oldest first.
    pub fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        self.db().read(|c| {
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
                |r| {
                    Ok(Event {
                        seq: r.get(0)?,
                        workspace: r.get(1)?,
                        time: r.get(2)?,
                        kind: r.get(3)?,
                        version_before: r.get::<_, Option<i64>>(4)?.map(VersionId),
                        version_after: r.get::<_, Option<i64>>(5)?.map(VersionId),
                        data: r.get(6)?,
                    })
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }
}

impl Txn {
    /// Commits like [`Txn::commit`] and appends an event recording it, in the same SQLite
    /// transaction: the event exists if and only if the commit does. Returns the commit and
    /// the event's sequence number.
    pub fn commit_with_event(self, kind: &str, data: &str) -> Result<(Commit, i64)> {
        self.commit_inner(Some((kind, data)))
            .map(|(c, seq)| (c, seq.unwrap_or_default()))
    }
}
