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
//!
//! A GC that loses the store server (a database restart or failover, a pooler refusing
//! logins meanwhile, object storage unreachable) tries again for up to [`RECONNECT_FOR`],
//! marking again from scratch (a mark cut short holds nodes whose subtrees it never reached,
//! and marking skips below what is marked), and takes over the announcement it could not
//! withdraw rather than waiting for it to run out. Only a mark that completed is kept for
//! the next look (when heads moved meanwhile).

use std::collections::HashSet;
use std::time::Duration;

use crate::backend::{Guard, RefSnapshot, now_ns};
use crate::error::{Error, Result};
use crate::node::{Hamt, Hash, Node};
use crate::objects::Objects;
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

/// How many objects one read of the mark asks the store for.
const MARK_BATCH: usize = 1024;

/// What an object the mark has yet to read is.
#[derive(Clone, Copy)]
enum Unread {
    Inode,
    /// A directory listing's trie page.
    Trie,
    /// A file's page table at this depth (above 0: 0 is a data page, never read).
    Table(u8),
}

/// Marks `roots` and everything below them; `seen` makes shared subtrees cost once. The
/// walk goes level by level and reads each level's nodes in batches (one round trip to a
/// store server per [`MARK_BATCH`] nodes instead of one per node).
pub(crate) fn mark(
    objs: &Objects,
    roots: impl IntoIterator<Item = Hash>,
    seen: &mut HashSet<Hash>,
) -> Result<()> {
    let mut level: Vec<(Hash, Unread)> = roots
        .into_iter()
        .filter(|h| !h.is_zero() && !seen.contains(h))
        .map(|h| (h, Unread::Inode))
        .collect();
    while !level.is_empty() {
        let mut below = Vec::new();
        for batch in level.chunks(MARK_BATCH) {
            let unread: Vec<Hash> = batch
                .iter()
                .map(|(h, _)| *h)
                .filter(|h| !seen.contains(h))
                .collect();
            objs.prefetch(&unread)?;
            for &(h, what) in batch {
                if !seen.insert(h) {
                    continue;
                }
                let node = objs.node(&h)?;
                let mut push = |h: Hash, what: Unread| {
                    if !h.is_zero() && !seen.contains(&h) {
                        match what {
                            Unread::Table(0) => {
                                seen.insert(h);
                            }
                            _ => below.push((h, what)),
                        }
                    }
                };
                match (what, &*node) {
                    (Unread::Inode, Node::Dir { listing: l, .. })
                    | (Unread::Trie, Node::Trie(l)) => match l {
                        Hamt::Bucket(entries) => {
                            for e in entries {
                                push(e.node, Unread::Inode);
                            }
                        }
                        Hamt::Trie { children, .. } => {
                            for (_, c) in children {
                                push(*c, Unread::Trie);
                            }
                        }
                    },
                    (Unread::Inode, Node::File { pages, .. }) => {
                        push(pages.root, Unread::Table(pages.depth));
                    }
                    (Unread::Inode, Node::Symlink { .. }) => {}
                    (Unread::Table(d), Node::Table(children)) => {
                        for c in children {
                            push(*c, Unread::Table(d - 1));
                        }
                    }
                    (Unread::Inode, _) => {
                        return Err(Error::Corrupt(format!(
                            "{} is a page, not an inode",
                            h.to_hex()
                        )));
                    }
                    (Unread::Trie, _) => {
                        return Err(Error::Corrupt(format!("{} is not a trie page", h.to_hex())));
                    }
                    (Unread::Table(_), _) => {
                        return Err(Error::Corrupt(format!(
                            "{} is not a page table",
                            h.to_hex()
                        )));
                    }
                }
            }
        }
        level = below;
    }
    Ok(())
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
/// How long a GC keeps trying again after losing the store server (a restart, a failover,
/// a pooler refusing logins while the server comes back) before it reports the error.
const RECONNECT_FOR: Duration = Duration::from_secs(60);
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
    /// An announcement equal to `held` (this run's own, left by a try that lost its
    /// connection) is replaced rather than waited for.
    fn begin_sweep(&self, held: Option<&str>) -> Result<Option<String>> {
        if !self.objs().store.needs_sweep_fence() {
            return Ok(None);
        }
        let cat = self.catalog();
        for _ in 0..50 {
            let raw = cat.setting(SWEEP_KEY)?;
            let now = now_ns();
            let state = SweepState::parse(raw.clone(), now);
            if state.active && (held.is_none() || raw.as_deref() != held) {
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
        // Objects written after the first look are spared, however many looks it takes.
        let cutoff = now_ns() - grace.as_nanos() as i64;
        let mut seen = HashSet::new();
        let mut held = None;
        let (mut checked, mut moved) = (false, 0);
        let lost_since = std::time::Instant::now();
        let mut backoff = Duration::from_millis(200);
        loop {
            let attempt = if checked {
                self.try_gc(retention, cutoff, &mut seen, &mut held)
            } else {
                self.check_gc().and_then(|()| {
                    checked = true;
                    self.try_gc(retention, cutoff, &mut seen, &mut held)
                })
            };
            match attempt {
                Ok(Some(stats)) => return Ok(stats),
                Ok(None) => {
                    moved += 1;
                    if moved >= 50 {
                        return Err(Error::Busy);
                    }
                }
                // The database restarted, failed over or cut the connection: the next try
                // marks from scratch, since a mark cut short has marked nodes whose subtrees
                // it had not reached yet (and a later mark skips what is marked), and it
                // takes over the announcement this run wrote. (Found by the chaos harness's
                // long run: keeping such marks let a sweep delete live objects.)
                Err(Error::Server(why)) if lost_since.elapsed() < RECONNECT_FOR => {
                    tracing::warn!(%why, "gc: lost the store server; trying again");
                    seen.clear();
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// What GC checks once before its first mark: that it may sweep, and the index
    /// offloading reads by.
    fn check_gc(&self) -> Result<()> {
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
        Ok(())
    }

    /// One mark and sweep. `held` is an announcement this run wrote and could not withdraw
    /// (its connection was lost): the next try takes it over instead of waiting it out.
    fn try_gc(
        &self,
        retention: Retention,
        cutoff: i64,
        seen: &mut HashSet<Hash>,
        held: &mut Option<String>,
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
        let kept = versions.iter().filter(|v| keep.contains(&v.id));
        mark(self.objs(), kept.map(|v| v.root), seen)?;
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
        let announced = self.begin_sweep(held.as_deref())?;
        if announced.is_some() {
            held.clone_from(&announced);
        }
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
                mark(self.objs(), cat.versions()?.iter().map(|v| v.root), seen)?;
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
                *held = Some(current.clone());
                self.end_sweep(&current)?;
                *held = None;
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
