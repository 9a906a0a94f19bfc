//! Committing a transaction: the objects of its changed subtrees written and the head moved
//! by compare-and-swap in one catalog transaction, with its events; and the concurrent
//! commit, which merges onto a head that another commit moved meanwhile.

use super::*;
use crate::backend::{CommitRecord, NewVersion, VersionRow, now_ns};

/// Merges onto a head that keeps moving before a concurrent commit gives up.
const CONCURRENT_RETRIES: usize = 16;

/// A JSON array of strings.
/// How many merged paths a `concurrent` event names.
const MERGED_SHOWN: usize = 32;

fn json_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let mut q = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => q.push_str("\\\""),
                    '\\' => q.push_str("\\\\"),
                    c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
                    c => q.push(c),
                }
            }
            q.push('"');
            q
        })
        .collect();
    format!("[{}]", quoted.join(","))
}

impl Txn {
    /// Discards the transaction's changes but writes its queued events (against its base
    /// version): what happened during a call that is rolled back (its network requests, say)
    /// stays on the record.
    pub fn abort_keeping_events(mut self) -> Result<()> {
        let Some(ws) = self.workspace.clone() else {
            return Ok(());
        };
        for (kind, data) in std::mem::take(&mut self.events) {
            self.store
                .append_event(&ws, &kind, Some(self.base.id), Some(self.base.id), &data)?;
        }
        Ok(())
    }

    /// Commits: writes the changed nodes and moves the head from the base version to a new
    /// one with compare-and-swap, in one SQLite transaction. A transaction that changed
    /// nothing makes no version. If the head moved meanwhile, returns [`Error::Conflict`] and
    /// changes nothing, unless [`Txn::merge_if_moved`] asked for a merge onto the new head.
    pub fn commit(self) -> Result<Commit> {
        self.commit_inner(None).map(|(c, _)| c)
    }

    /// [`Txn::commit_with_event`](crate::Txn::commit_with_event) for a caller that needs no
    /// sequence number: the event of a transaction that changed nothing goes through
    /// [`Store::record_event`], which may return before it is stored (a networked catalog
    /// does not wait for it), after the transaction's queued events.
    pub fn commit_recording(self, kind: &str, data: &str) -> Result<Commit> {
        let ws = match &self.workspace {
            Some(ws) if !self.is_dirty() => ws.clone(),
            _ => return self.commit_inner(Some((kind, data))).map(|(c, _)| c),
        };
        let store = self.store.clone();
        let (c, _) = self.commit_inner(None)?;
        store.record_event(&ws, kind, Some(c.version), Some(c.version), data)?;
        Ok(c)
    }

    pub(crate) fn commit_inner(
        mut self,
        event: Option<(&str, &str)>,
    ) -> Result<(Commit, Option<i64>)> {
        let Some(ws) = self.workspace.clone() else {
            return Err(Error::ReadOnly);
        };
        if !self.is_dirty() {
            for (kind, data) in std::mem::take(&mut self.events) {
                self.store.append_event(
                    &ws,
                    &kind,
                    Some(self.base.id),
                    Some(self.base.id),
                    &data,
                )?;
            }
            let seq = match event {
                Some((kind, data)) => Some(self.store.append_event(
                    &ws,
                    kind,
                    Some(self.base.id),
                    Some(self.base.id),
                    data,
                )?),
                None => None,
            };
            return Ok((
                Commit {
                    version: self.base.id,
                    base: self.base.id,
                    changed: false,
                },
                seq,
            ));
        }
        for put in std::mem::take(&mut self.behind) {
            put.wait()?;
        }
        let mut pending = Pending::default();
        let (root, agg) = self.flush(ROOT_INO, &mut pending)?;
        let (bytes, entries) = (agg.bytes, agg.entries - 1);
        debug_assert_eq!((bytes, entries), (self.usage.bytes, self.usage.entries));
        let store = self.store.clone();
        let events = std::mem::take(&mut self.events);
        let record = CommitRecord {
            version: NewVersion {
                root,
                parent: Some(self.base.id),
                workspace: &ws,
                message: &self.message,
                next_ino: self.next_ino,
                bytes,
                entries,
            },
            expected: self.base.id,
            events: &events,
            event,
            guard: None,
        };
        let fence = self.fence.take();
        let written = store.write_objects(
            pending.list(),
            fence.clone(),
            &self.spilled,
            |objects, guard| {
                let record = CommitRecord {
                    guard,
                    ..record.clone()
                };
                store.catalog().commit(&record, objects)
            },
        );
        let (v, seq) = match written {
            Err(Error::Conflict { actual, .. }) if self.concurrent => {
                // Another call committed first: this call's tree becomes "theirs" of a
                // merge onto the new head (its objects stored as a spill's are).
                let list = pending.list();
                let (fence, put) = store.put_detached(&list, fence, &self.spilled)?;
                self.fence = fence;
                self.spilled.extend(put);
                drop(list);
                pending.publish(store.objs());
                let tree = VersionRow {
                    id: self.base.id,
                    root,
                    parent: Some(self.base.id),
                    workspace: ws.clone(),
                    time: now_ns(),
                    message: self.message.clone(),
                    next_ino: self.next_ino,
                    bytes,
                    entries,
                };
                tracing::debug!(workspace = %ws, base = self.base.id.0, head = actual.0, "merging a call onto a moved head");
                return self.commit_onto_head(&tree, events, event);
            }
            other => other?,
        };
        pending.publish(store.objs());
        Ok((
            Commit {
                version: v,
                base: self.base.id,
                changed: true,
            },
            seq,
        ))
    }

    /// Commits `tree` (this transaction's flushed tree, its objects stored) onto the
    /// workspace's current head by a three-way merge from this transaction's base, the later
    /// call winning a path both changed; the merge is recorded as a `concurrent` event before
    /// the others. Tried again while other commits keep moving the head.
    fn commit_onto_head(
        self,
        tree: &VersionRow,
        events: Vec<(String, String)>,
        event: Option<(&str, &str)>,
    ) -> Result<(Commit, Option<i64>)> {
        let ws = tree.workspace.clone();
        let mut last = None;
        for _ in 0..CONCURRENT_RETRIES {
            let mut onto = self.store.begin(&ws)?;
            onto.quota = self.quota;
            let report = self.store.merge_trees(
                &mut onto,
                &self.base,
                tree,
                crate::MergeOptions {
                    labels: crate::Labels {
                        ours: "",
                        base: "",
                        theirs: "",
                    },
                    system: true,
                    later_wins: true,
                },
            )?;
            onto.message = self.message.clone();
            onto.fence = self.fence.clone();
            onto.spilled = self.spilled.clone();
            // The paths this call brought onto the head (the first of them, and how many).
            let shown = &report.merged[..report.merged.len().min(MERGED_SHOWN)];
            let note = format!(
                "{{\"base\":{},\"onto\":{},\"replaced\":{},\"merged\":{},\"merged_total\":{}}}",
                self.base.id.0,
                onto.base.id.0,
                json_strings(&report.replaced),
                json_strings(shown),
                report.merged.len()
            );
            onto.events.push(("concurrent".to_string(), note));
            onto.events.extend(events.iter().cloned());
            match onto.commit_inner(event) {
                Err(e @ Error::Conflict { .. }) => last = Some(e),
                Ok((commit, seq)) => {
                    return Ok((
                        Commit {
                            version: commit.version,
                            base: self.base.id,
                            changed: commit.changed,
                        },
                        seq,
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(Error::Retry("the head kept moving".into())))
    }

    /// Commits like [`Txn::commit`] and appends an event recording it, in the same catalog
    /// transaction: the event exists if and only if the commit does. Returns the commit and
    /// the event's sequence number.
    pub fn commit_with_event(self, kind: &str, data: &str) -> Result<(Commit, i64)> {
        self.commit_inner(Some((kind, data)))
            .map(|(c, seq)| (c, seq.unwrap_or_default()))
    }
}
