//! Garbage collection: mark every object reachable from a retained version (the lineage of
//! every head, within the retention policy, and every labelled version), then sweep the rest.
//! Version rows go in one catalog transaction that first checks that heads and labels are as
//! the mark saw them; when they moved, the new versions are marked too (only their new nodes
//! are read: what is marked stays marked) and the check is tried again. The object sweep then
//! spares objects written within the grace period, so transactions running in other processes
//! never lose what they just wrote. A crash between the two leaves only unreferenced objects
//! for the next run.
//!
//! **The sweep fence (object storage).** A database deletes an object only if its write time
//! is still old (`DELETE ... WHERE created < $cutoff`), atomically, so a commit that put the
//! same object again a moment earlier keeps it. Object storage has no such delete: GC lists
//! an old unreferenced object, a commit puts it again (same hash, same bytes) and commits a
//! version naming it, GC deletes it. So GC announces its sweep in the catalog (setting
//! [`SWEEP_KEY`]: an epoch, and a deadline while a sweep runs) after deleting versions and
//! before it lists; it then marks once more every version that exists, and sweeps. A commit
//! whose objects went to object storage reads the setting before its first put and carries
//! what it read into its catalog transaction as a [`Guard`], which the catalog checks under
//! the same lock as the announcement: a commit that lands before the announcement is in
//! the second mark, and one after it fails its guard with nothing written, waits for the
//! sweep to end, puts its objects again, checks that the pages it spilled earlier survived
//! (or fails the call with [`Error::Retry`]) and commits under the new state. Nothing
//! depends on the grace period here. A sweep stops deleting at [`SWEEP_LIMIT`].
//!
//! The announcement is a lease: its deadline is [`LEASE`] ahead, and the GC renews it every
//! [`RENEW_EVERY`] while it sweeps, and stops deleting [`LEASE_MARGIN`] before the last
//! deadline it wrote (when it cannot renew: the catalog is unreachable). A GC that died
//! mid-sweep (killed, or its database restarted under it) so holds commits that upload,
//! and other GCs, for at most [`LEASE`], less than a commit waits ([`FENCE_WAIT`]).

use std::collections::HashSet;
use std::time::Duration;

use crate::backend::{Guard, RefSnapshot, now_ns};
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
    /// Pages of small commits moved from the catalog into object storage (see
    /// `backend::split`).
    pub pages_offloaded: u64,
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

/// The catalog setting of the sweep fence: `"EPOCH"` between sweeps, `"EPOCH UNTIL"` (a
/// deadline, nanoseconds since the epoch) while one runs.
pub(crate) const SWEEP_KEY: &str = "gc.sweep";
/// How long one sweep of object storage may delete; what is left waits for the next run.
pub(crate) const SWEEP_LIMIT: Duration = Duration::from_secs(600);

/// How far ahead a sweep's announcement runs out unless renewed (see the module doc).
pub(crate) const LEASE: Duration = Duration::from_secs(50);

/// How long before its announcement may run out a sweep stops deleting: the longest a
/// batch of deletes already under way may take.
pub(crate) const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// How often a sweeping GC renews its announcement.
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How long a commit waits for a sweep to end before it gives up with [`Error::Retry`].
pub(crate) const FENCE_WAIT: Duration = Duration::from_secs(60);

/// The sweep fence's state as one read saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SweepState {
    /// The setting as read: what a commit's [`Guard`] expects to find unchanged.
    raw: Option<String>,
    epoch: u64,
    /// A sweep is running (its deadline had not passed when this was read).
    active: bool,
}

impl SweepState {
    fn parse(raw: Option<String>, now: i64) -> SweepState {
        let (epoch, until) = {
            let mut it = raw.as_deref().unwrap_or("0").split(' ');
            let epoch = it.next().and_then(|e| e.parse().ok()).unwrap_or(0);
            let until: Option<i64> = it.next().and_then(|d| d.parse().ok());
            (epoch, until)
        };
        SweepState {
            raw,
            epoch,
            active: until.is_some_and(|d| d > now),
        }
    }

    /// The condition a commit under this state carries into its catalog transaction.
    pub(crate) fn guard(&self) -> Guard<'_> {
        Guard {
            key: SWEEP_KEY,
            value: self.raw.as_deref(),
        }
    }
}

impl Store {
    /// The sweep fence's state, where this store's objects need it (object storage).
    pub(crate) fn sweep_state(&self) -> Result<Option<SweepState>> {
        if !self.objs().store.needs_sweep_fence() {
            return Ok(None);
        }
        let raw = self.catalog().setting(SWEEP_KEY)?;
        Ok(Some(SweepState::parse(raw, now_ns())))
    }

    /// Puts `objects` into object storage for a commit whose first put was preceded by
    /// `started` (read now when `None`); returns the fence state the catalog write must
    /// still find (see the module doc), waiting for a sweep that was running to end.
    pub(crate) fn put_fenced(
        &self,
        objects: &[crate::backend::NewObject<'_>],
        started: Option<SweepState>,
        spilled: &[Hash],
    ) -> Result<Option<SweepState>> {
        let start = match started {
            Some(s) => Some(s),
            None => self.sweep_state()?,
        };
        self.objs().store.put_many(objects)?;
        match start {
            Some(s) if s.active => self.settle(objects, spilled).map(Some),
            s => Ok(s),
        }
    }

    /// After a sweep overlapped a commit's puts: waits for it to end, puts `objects` again
    /// and checks that `spilled` (pages the transaction put earlier and no longer holds)
    /// survived; returns the idle state to commit under.
    pub(crate) fn settle(
        &self,
        objects: &[crate::backend::NewObject<'_>],
        spilled: &[Hash],
    ) -> Result<SweepState> {
        let waited = std::time::Instant::now();
        let idle = loop {
            let state = self
                .sweep_state()?
                .unwrap_or_else(|| SweepState::parse(None, 0));
            if !state.active {
                break state;
            }
            if waited.elapsed() > FENCE_WAIT {
                return Err(Error::Retry(
                    "a garbage collection is sweeping the object storage; run the call again when it ends".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let store = &self.objs().store;
        store.put_many(objects)?;
        let spilled: Vec<_> = spilled
            .iter()
            .map(|h| (*h, crate::backend::ObjectKind::Page))
            .collect();
        if store.exists_many(&spilled)?.iter().any(|e| !e) {
            return Err(Error::Retry(
                "a garbage collection swept pages this call had written; run the call again".into(),
            ));
        }
        Ok(idle)
    }

    /// Announces a sweep (see the module doc); returns the setting to restore at the end.
    fn begin_sweep(&self) -> Result<Option<String>> {
        if !self.objs().store.needs_sweep_fence() {
            return Ok(None);
        }
        let cat = self.catalog();
        for _ in 0..50 {
            let raw = cat.setting(SWEEP_KEY)?;
            let now = now_ns();
            let state = SweepState::parse(raw.clone(), now);
            if state.active {
                return Err(Error::Retry(
                    "another garbage collection is sweeping this store's object storage".into(),
                ));
            }
            let epoch = state.epoch + 1;
            let until = now + LEASE.as_nanos() as i64;
            let announced = format!("{epoch} {until}");
            if cat.swap_setting(SWEEP_KEY, raw.as_deref(), Some(&announced))? {
                return Ok(Some(announced));
            }
        }
        Err(Error::Busy)
    }

    /// Renews the announcement `lease` holds (its value, and the instant before which it
    /// was written to run out) every [`RENEW_EVERY`] until `done`; stops renewing when a
    /// renewal fails, so that the sweep stops deleting in time (see the module doc).
    fn renew_sweep(
        &self,
        lease: &std::sync::Mutex<(String, std::time::Instant)>,
        done: &std::sync::atomic::AtomicBool,
    ) {
        let mut last = std::time::Instant::now();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            if last.elapsed() < RENEW_EVERY {
                continue;
            }
            last = std::time::Instant::now();
            let current = lease.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
            let epoch = current.split(' ').next().unwrap_or("0");
            let next = format!("{epoch} {}", now_ns() + LEASE.as_nanos() as i64);
            match self
                .catalog()
                .swap_setting(SWEEP_KEY, Some(&current), Some(&next))
            {
                Ok(true) => {
                    *lease.lock().unwrap_or_else(|p| p.into_inner()) = (next, last + LEASE);
                    self.objs().store.set_sweep_lease(Some(last + LEASE));
                }
                other => {
                    tracing::warn!(
                        ?other,
                        "gc: could not renew the sweep's announcement; the sweep stops deleting before it runs out"
                    );
                    return;
                }
            }
        }
    }

    fn end_sweep(&self, announced: &str) -> Result<()> {
        let epoch = announced.split(' ').next().unwrap_or("0");
        self.catalog()
            .swap_setting(SWEEP_KEY, Some(announced), Some(epoch))?;
        Ok(())
    }

    /// Collects versions outside `retention` and objects no retained version reaches.
    /// Objects written less than `grace` ago are kept whatever their reachability (they may
    /// belong to a transaction still running elsewhere); pass `Duration::ZERO` only when no
    /// other transaction can be running.
    pub fn gc(&self, retention: Retention, grace: Duration) -> Result<GcStats> {
        if self.objs().store.needs_sweep_fence() && !self.catalog().flushes_writes()? {
            return Err(Error::Config(
                "synchronous_commit is off for this store's PostgreSQL connections, so a \
                 crash of the database could undo a move of the pack index after GC deleted \
                 the old pack: GC will not sweep object storage. Remove synchronous_commit \
                 from the store URL (or the role's or database's settings); tool calls' \
                 commits skip the flush anyway at the default durability"
                    .into(),
            ));
        }
        // An index offloading reads by, built (once) before any sweep is announced. Without
        // it (a role that may not create indexes, say) offloading still works, reading more.
        if let Err(e) = self.objs().store.prepare_offload() {
            tracing::warn!(error = %e, "gc: could not build the index offloading reads by");
        }
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
        // Before the announcement is written: the lease runs out no earlier than this.
        let announcing = std::time::Instant::now();
        let announced = self.begin_sweep()?;
        let lease = announced
            .clone()
            .map(|a| std::sync::Mutex::new((a, announcing + LEASE)));
        // Moving pages keeps the sweep announced, and commits that upload wait for it (at
        // most FENCE_WAIT): a third of that per GC, the rest on the next.
        let offload_for = FENCE_WAIT / 3;
        let done = std::sync::atomic::AtomicBool::new(false);
        let mut sweep = || {
            if announced.is_some() {
                // Commits that landed between the mark and the announcement: from here on
                // none that put objects into object storage can (their guard fails), so
                // marking these makes the mark complete. Commits that put nothing there
                // (their objects are the catalog's) reference only such objects and what
                // their base version, marked here or made by such a commit, references.
                for v in cat.versions()? {
                    mark(self.objs(), v.root, seen)?;
                }
            }
            let store = &self.objs().store;
            let deleted = store.delete_unreferenced(cutoff, &|h| seen.contains(h))?;
            // Small commits' pages into object storage while this sweep is announced, so
            // that no other sweep deletes from a listing made before they arrived.
            let moved = match &lease {
                Some(l) => {
                    let until = l.lock().unwrap_or_else(|p| p.into_inner()).1;
                    let deadline =
                        (std::time::Instant::now() + offload_for).min(until - LEASE_MARGIN);
                    store.offload(deadline)?
                }
                None => 0,
            };
            Ok::<_, Error>((deleted, moved))
        };
        let swept = match &lease {
            Some(l) => {
                let until = l.lock().unwrap_or_else(|p| p.into_inner()).1;
                self.objs().store.set_sweep_lease(Some(until));
                let swept = std::thread::scope(|sc| {
                    sc.spawn(|| self.renew_sweep(l, &done));
                    let swept = sweep();
                    done.store(true, std::sync::atomic::Ordering::Relaxed);
                    swept
                });
                self.objs().store.set_sweep_lease(None);
                let current = l.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
                self.end_sweep(&current)?;
                swept
            }
            None => sweep(),
        };
        let ((objects, bytes), moved) = swept?;
        stats.objects_deleted = objects;
        stats.bytes_freed = bytes;
        stats.pages_offloaded = moved;
        stats.objects_kept = self.objs().store.totals()?.0;
        tracing::info!(?stats, "gc finished");
        Ok(Some(stats))
    }

    /// Returns unused pages of the SQLite file to the filesystem (after a large GC).
    pub fn vacuum(&self) -> Result<()> {
        self.catalog().compact()
    }
}
