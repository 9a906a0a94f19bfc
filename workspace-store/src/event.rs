//! The event log's vocabulary, below everything that reads or writes it: an [`Event`] as
//! stored, the [`NewEvent`] a caller appends (the same five fields at every layer: the store's
//! API, a commit's record, the catalogs), and the [`EventFilter`] of a query.

use crate::VersionId;

/// An event to append: what happened in a workspace, between which versions. Data is opaque
/// text to the store (JSON by convention).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewEvent<'a> {
    pub workspace: &'a str,
    pub kind: &'a str,
    pub before: Option<VersionId>,
    pub after: Option<VersionId>,
    pub data: &'a str,
}

impl NewEvent<'_> {
    /// Whether the event records a call that changed nothing (the same version before and
    /// after): such an event may be stored without waiting for the disk at the default
    /// durability.
    pub fn changed_nothing(&self) -> bool {
        self.before.is_some() && self.before == self.after
    }
}

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
