//! Per-workspace metadata (small string key/values, with unique `name`s) and the event log:
//! an append-only, sequence-numbered record per workspace that callers use for their audit
//! trail (tool calls, lifecycle events). Data is opaque text to the store (JSON by convention).

use std::collections::BTreeMap;

use crate::error::Result;
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
    ///
    /// [`Error::WorkspaceExists`]: crate::Error::WorkspaceExists
    pub fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()> {
        self.catalog().set_meta(workspace, key, value)
    }

    /// All metadata of a workspace.
    pub fn meta(&self, workspace: &str) -> Result<BTreeMap<String, String>> {
        self.catalog().meta(workspace)
    }

    /// The workspace whose metadata `key` is `value`, if any.
    pub fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        self.catalog().find_by_meta(key, value)
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
        self.catalog()
            .append_event(workspace, kind, before, after, data)
    }

    /// [`Store::append_event`] for an event whose sequence number nobody waits for: it may
    /// return before the event is stored (see [`crate::backend::Catalog::record_event`]). It
    /// is stored before this store reads the log, deletes a workspace or is dropped.
    pub fn record_event(
        &self,
        workspace: &str,
        kind: &str,
        before: Option<VersionId>,
        after: Option<VersionId>,
        data: &str,
    ) -> Result<()> {
        self.catalog()
            .record_event(workspace, kind, before, after, data)
    }

    /// Events matching `filter`, oldest first.
    pub fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        self.catalog().events(filter)
    }
}

impl Txn {
    /// Commits like [`Txn::commit`] and appends an event recording it, in the same catalog
    /// transaction: the event exists if and only if the commit does. Returns the commit and
    /// the event's sequence number.
    pub fn commit_with_event(self, kind: &str, data: &str) -> Result<(Commit, i64)> {
        self.commit_inner(Some((kind, data)))
            .map(|(c, seq)| (c, seq.unwrap_or_default()))
    }
}
