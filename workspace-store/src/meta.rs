//! Per-workspace metadata (small string key/values, with unique `name`s) and the event log:
//! an append-only, sequence-numbered record per workspace that callers use for their audit
//! trail (tool calls, lifecycle events), as [`Store`] methods over the catalog. The log's
//! types are in [`crate::event`].

use std::collections::BTreeMap;

use crate::error::Result;
use crate::event::{Event, EventFilter, NewEvent};
use crate::{Store, VersionId};

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
        self.catalog().append_event(&NewEvent {
            workspace,
            kind,
            before,
            after,
            data,
        })
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
        self.catalog().record_event(&NewEvent {
            workspace,
            kind,
            before,
            after,
            data,
        })
    }

    /// Events matching `filter`, oldest first.
    pub fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        self.catalog().events(filter)
    }
}
