//! Garbage collection: mark every object reachable from a retained version (the lineage of
//! every head, within the retention policy, and every labelled version), then sweep the rest.
//! The sweep runs inside one write transaction and spares objects written within the grace
//! period, so transactions running in other processes never lose what they just wrote.

use std::collections::HashSet;
use std::time::Duration;

use rusqlite::params;

use crate::db::{Db, now_ns};
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
        // Heads and labels may move while we mark; the sweep re-checks them under the write
        // lock and starts over if they did.
        for _ in 0..5 {
            if let Some(stats) = self.try_gc(retention, grace)? {
                return Ok(stats);
            }
        }
        Err(Error::Busy)
    }

    fn try_gc(&self, retention: Retention, grace: Duration) -> Result<Option<GcStats>> {
        let start = now_ns();
        let (heads, labels, versions) = self
            .db()
            .read(|c| Ok((Db::heads(c)?, Db::labels(c)?, Db::all_versions(c)?)))?;
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
        let mut seen = HashSet::new();
        for v in &versions {
            if keep.contains(&v.id) {
                mark(self.objs(), v.root, &mut seen)?;
            }
        }
        let cutoff = start - grace.as_nanos() as i64;
        let mut stats = GcStats {
            versions_kept: keep.len() as u64,
            ..Default::default()
        };
        let conn = self.db().lock_writer();
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        let refs = |h: &[crate::db::HeadRow], l: &[(String, VersionId)]| {
            let mut r: Vec<(String, VersionId)> =
                h.iter().map(|h| (h.name.clone(), h.version)).collect();
            r.extend(l.iter().map(|(n, v)| (format!("label:{n}"), *v)));
            r
        };
        if refs(&heads, &labels) != refs(&Db::heads(&tx)?, &Db::labels(&tx)?) {
            return Ok(None);
        }
        for v in &versions {
            if !keep.contains(&v.id) {
                tx.execute("DELETE FROM versions WHERE id = ?1", params![v.id.0])?;
                stats.versions_deleted += 1;
            }
        }
        let mut doomed = Vec::new();
        {
            let mut st = tx.prepare("SELECT hash, length(data) FROM objects WHERE created < ?1")?;
            let rows = st.query_map(params![cutoff], |r| {
                Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?))
            })?;
            for row in rows {
                let (h, len) = row?;
                let Ok(arr) = <[u8; 32]>::try_from(h.as_slice()) else {
                    continue;
                };
                if !seen.contains(&Hash(arr)) {
                    doomed.push((h, len));
                }
            }
        }
        {
            let mut del = tx.prepare("DELETE FROM objects WHERE hash = ?1 AND created < ?2")?;
            for (h, len) in &doomed {
                if del.execute(params![h, cutoff])? == 1 {
                    stats.objects_deleted += 1;
                    stats.bytes_freed += *len as u64;
                }
            }
        }
        stats.objects_kept =
            tx.query_row("SELECT count(*) FROM objects", [], |r| r.get::<_, i64>(0))? as u64;
        tx.commit()?;
        drop(conn);
        tracing::info!(?stats, "gc finished");
        Ok(Some(stats))
    }

    /// Returns unused pages of the SQLite file to the filesystem (after a large GC).
    pub fn vacuum(&self) -> Result<()> {
        let conn = self.db().lock_writer();
        conn.execute_batch("VACUUM")?;
        Ok(())
    }
}
