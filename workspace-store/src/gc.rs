//! Garbage collection: mark every object reachable from a retained version (the lineage of
//! every head, within the retention policy, and every labelled version), then sweep the rest.
//! Version rows go in one catalog transaction that first checks that heads and labels are as
//! the mark saw them; when they moved, the new versions are marked too (only their new nodes
//! are read: what is marked stays marked) and the check is tried again. The object sweep then
//! spares objects written within the grace period, so transactions running in other processes
//! never lose what they just wrote. A crash between the two leaves only unreferenced objects
//! for the next run.

use std::collections::HashSet;
use std::time::Duration;

use crate::backend::{RefSnapshot, now_ns};
use crate::error::{Error, Result};
use crate::hamt;
use crate::node::{Hash, Node};
use crate::objects::Objects;
use crate::pagetable;
use crate::{Store, VersionId};

/// Which versions GC keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// Every version in the lineage of a head, and every labelled version.
    #[default]
    All,
    /// The newest N versions of each head's lineage, and every labelled version.
    LastN(usize),
}

/// What a GC run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcStats {
    pub versions_kept: u64,
    pub versions_deleted: u64,
    /// Objects in the store after the sweep.
    pub objects_kept: u64,
    pub objects_deleted: u64,
    pub bytes_freed: u64,
}

/// Marks `h` and everything below it; `seen` makes shared subtrees cost once.
pub(crate) fn mark(objs: &Objects, h: Hash, seen: &mut HashSet<Hash>) -> Result<()> {
    if h.is_zero() || !seen.insert(h) {
        return Ok(());
    }
    match &*objs.node(&h)? {
        Node::Dir { listing, .. } => {
            let mut pages = Vec::new();
            hamt::pages(objs, listing, &mut pages)?;
            seen.extend(pages);
            let mut entries = Vec::new();
            hamt::entries(&Default::default(), objs, listing, &mut entries)?;
            for e in entries {
                mark(objs, e.node, seen)?;
            }
            Ok(())
        }
        Node::File { pages, .. } => pagetable::walk(objs, *pages, &mut |h, _| Ok(seen.insert(h))),
        Node::Symlink { .. } => Ok(()),
        Node::Table(_) | Node::Trie(_) => Err(Error::Corrupt(format!(
            "{} is a page, not an inode",
            h.to_hex()
        ))),
    }
}

impl Store {
    /// Collects versions outside `retention` and objects no retained version reaches.
    /// Objects written less than `grace` ago are kept whatever their reachability (they may
    /// belong to a transaction still running elsewhere); pass `Duration::ZERO` only when no
    /// other transaction can be running.
    pub fn gc(&self, retention: Retention, grace: Duration) -> Result<GcStats> {
        // Objects written after the first look are spared, however many looks it takes.
        let cutoff = now_ns() - grace.as_nanos() as i64;
        let mut seen = HashSet::new();
        for _ in 0..50 {
            if let Some(stats) = self.try_gc(retention, cutoff, &mut seen)? {
                return Ok(stats);
            }
        }
        Err(Error::Busy)
    }

    fn try_gc(
        &self,
        retention: Retention,
        cutoff: i64,
        seen: &mut HashSet<Hash>,
    ) -> Result<Option<GcStats>> {
        let cat = self.catalog();
        let (heads, labels, versions) = (cat.heads()?, cat.labels()?, cat.versions()?);
        let by_id: std::collections::HashMap<VersionId, &crate::Version> =
            versions.iter().map(|v| (v.id, v)).collect();
        let mut keep: HashSet<VersionId> = labels.iter().map(|(_, v)| *v).collect();
        for h in &heads {
            let mut cur = Some(h.version);
            let mut n = 0;
            while let Some(id) = cur {
                if let Retention::LastN(max) = retention
                    && n >= max.max(1)
                {
                    break;
                }
                keep.insert(id);
                n += 1;
                cur = by_id.get(&id).and_then(|v| v.parent);
            }
        }
        for v in &versions {
            if keep.contains(&v.id) {
                mark(self.objs(), v.root, seen)?;
            }
        }
        let mut stats = GcStats {
            versions_kept: keep.len() as u64,
            ..Default::default()
        };
        let doomed: Vec<VersionId> = versions
            .iter()
            .filter(|v| !keep.contains(&v.id))
            .map(|v| v.id)
            .collect();
        let refs = RefSnapshot {
            heads: heads.iter().map(|h| (h.name.clone(), h.version)).collect(),
            labels,
        };
        if !cat.delete_versions(&refs, &doomed)? {
            return Ok(None);
        }
        stats.versions_deleted = doomed.len() as u64;
        let (objects, bytes) = self
            .objs()
            .store
            .delete_unreferenced(cutoff, &|h| seen.contains(h))?;
        stats.objects_deleted = objects;
        stats.bytes_freed = bytes;
        stats.objects_kept = self.objs().store.totals()?.0;
        tracing::info!(?stats, "gc finished");
        Ok(Some(stats))
    }

    /// Returns unused pages of the SQLite file to the filesystem (after a large GC).
    pub fn vacuum(&self) -> Result<()> {
        self.catalog().compact()
    }
}
