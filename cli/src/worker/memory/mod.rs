//! The memory stores attached to a Managed Agents session, mounted in its burrow session
//! and synced back with the Anthropic SDK's rules (`lib/tools/_memories.py`,
//! `SessionMemoryStores`): a folder per store at its `mount_path` (or
//! `/workspace/memory/<name>`), stamped with the `.anthropic-memory-store` marker; a sync
//! (every `--memory-sync-interval`, checked after each tool call, and once at a clean end)
//! reconciles each path three ways against the last synced sha (the baseline):
//!
//! - changed only remotely: written to the folder; changed only locally: uploaded (an
//!   update with a `content_sha256` precondition, or a create); changed on both sides: the
//!   server's version wins, with a warning;
//! - deleted locally: deleted on the server (`expected_content_sha256`), but only after the
//!   absence has lasted 30 s (waived at the final sync), a bounded number per sync, and as
//!   `--memory-delete` says (`enabled`, `log_only`, `disabled`);
//! - deleted remotely: removed from the folder unless it holds an un-pushed edit (then a
//!   writable store re-creates the memory);
//! - a refused upload (400/413, not UTF-8) is retried only after the file changes; an
//!   upload whose answer never came is settled by the next listing;
//! - a folder whose marker is gone while files remain is left alone; a folder wiped whole
//!   is downloaded again; read-only stores pull and never push.
//!
//! Past the SDK: the folder lives in the burrow session, so it is versioned (each sync that
//! changes files is one version with a `memory_synced` event), survives between work items
//! (the baseline is kept in the session's metadata `managed_agents_memory`, so the next
//! item, in any process, syncs instead of downloading again) and is forked with the
//! session. `write` and `edit` of a file in a writable store's folder go through the store
//! first (`write.rs`): the file changes only once the store took it. A `mount_path` outside
//! `/workspace` is mounted there too, as the SDK does: in
//! `/tmp` or `$HOME` it is a folder of those persisted mounts; anywhere else
//! (`/mnt/memory/notes`) it becomes a directory kept with the session
//! ([`burrow_host::wasi_fs::PERSISTED_DIRS`]), forked and undone with it and outside the project's
//! diff and export. The file tools reach every store's folder (the session's tool roots,
//! as the SDK's `allowed_roots`) and refuse to write into a read-only store's. A path under
//! the sandbox's computed directories (`/dev`, `/etc`, `/usr`, ...) is refused, as the SDK
//! refuses a path it cannot use verbatim.

mod write;
pub use write::{Mount, write_through};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::api::{MEMORY_BETA, Req};
use super::{Item, MemoryConfig, WorkerError};

/// Smallest sync interval (the SDK's `MIN_MEMORY_SYNC_INTERVAL`).
pub const MIN_SYNC_INTERVAL: Duration = Duration::from_secs(5);
const MARKER: &str = ".anthropic-memory-store";
const MARKER_VERSION: u32 = 1;
/// How long a file must stay missing before its server delete goes out.
const DELETE_CORROBORATION: Duration = Duration::from_secs(30);
const LIST_PAGE: usize = 100;
const FULL_LIST_PAGE: usize = 20;
const DELETE_CAP_FLOOR: usize = 8;
const DELETE_CAP_CEILING: usize = 50;
const META_KEY: &str = burrow_host::session::MA_MEMORY_KEY;

/// Whether a file deleted locally may delete its server memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteMode {
    Enabled,
    /// Runs the same checks and only logs what it would delete.
    LogOnly,
    Disabled,
}

impl std::str::FromStr for DeleteMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "enabled" => Ok(DeleteMode::Enabled),
            "log_only" => Ok(DeleteMode::LogOnly),
            "disabled" => Ok(DeleteMode::Disabled),
            _ => Err(format!(
                "invalid value '{s}': expected enabled, log_only or disabled"
            )),
        }
    }
}

/// Whether the session has a memory store attached.
pub fn has_stores(session: &Value) -> bool {
    resources(session).next().is_some()
}

fn resources(session: &Value) -> impl Iterator<Item = &Value> {
    session["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["type"] == "memory_store")
}

fn sha256_hex(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn marker_text(store: &str) -> String {
    format!("version {MARKER_VERSION}\n{store}")
}

/// A clean absolute path: `/`-rooted, no empty, `.` or `..` segment, no control characters.
fn legal_path(p: &str) -> bool {
    p.starts_with('/')
        && p.len() > 1
        && !p.chars().any(char::is_control)
        && p[1..]
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// A memory's path as a relative path under the folder (refused if it would escape).
fn rel_of(path: &str) -> Option<String> {
    let rel = path.trim_start_matches('/');
    legal_path(&format!("/{rel}")).then(|| rel.to_string())
}

/// One call to a store's memory endpoints (`rest` follows `/memories`), with their beta.
async fn call(
    it: &Item,
    method: Method,
    store: &str,
    rest: &str,
    query: &[(&str, String)],
    body: Option<&Value>,
) -> Result<Value, crate::api_client::ApiError> {
    it.api
        .json(
            method,
            &format!("/v1/memory_stores/{store}/memories{rest}"),
            &it.token,
            Req {
                query,
                body,
                beta: Some(MEMORY_BETA),
                ..Req::default()
            },
        )
        .await
}

/// The guest path of a store folder: `memory/x` -> `/workspace/memory/x`,
/// `\0system/root/mnt/m` -> `/mnt/m`, `\0system/tmp/m` -> `/tmp/m`.
fn guest_path(root: &str) -> String {
    burrow_host::wasi_fs::system_guest_path(root)
        .unwrap_or_else(|| format!("{}/{root}", burrow_host::wasi_fs::WORKSPACE))
}

/// One attached store and its sync state.
struct Attached {
    id: String,
    /// The folder's store path: relative to the workspace root (`memory/x`), or in the
    /// system area (`\0system/root/mnt/memory/x`, `\0system/tmp/x`).
    root: String,
    read_only: bool,
    /// rel path -> content sha as of the last download or sync.
    baseline: BTreeMap<String, String>,
    /// rel path -> sha the server refused (retried only after the file changes).
    refused: HashMap<String, String>,
    /// rel path -> when it was first seen missing.
    pending_deletes: HashMap<String, Instant>,
    /// rel path -> sha sent whose outcome is unknown.
    sent: HashMap<String, String>,
}

/// A listing keyed by relative path (memories whose path would escape are left out).
fn by_path(items: Vec<Value>) -> BTreeMap<String, Value> {
    items
        .into_iter()
        .filter_map(|i| i["path"].as_str().and_then(rel_of).map(|r| (r, i)))
        .collect()
}

impl Attached {
    /// Settles the uploads whose answer never came: a listing holding exactly the sha sent
    /// is that upload, saved after all.
    fn settle_sent(&mut self, remote: &BTreeMap<String, Value>) {
        for (rel, sha) in std::mem::take(&mut self.sent) {
            if remote.get(&rel).and_then(|i| i["content_sha256"].as_str()) == Some(sha.as_str()) {
                self.baseline.insert(rel, sha);
            }
        }
    }
}

/// What one scan of a folder found.
struct Scan {
    version: burrow_store::VersionId,
    files: BTreeMap<String, String>,
    marker_ok: bool,
    marker_present: bool,
}

/// Changes one sync makes to the folder, written as one version.
#[derive(Default)]
struct Writes {
    put: Vec<(String, String)>,
    /// (rel, sha it must still have)
    remove: Vec<(String, String)>,
    /// Stamp the marker (a fresh download).
    stamp: bool,
}

/// The session's mounted stores.
pub struct Stores {
    stores: Vec<Attached>,
    cfg: MemoryConfig,
    last_sync: Instant,
    finished: bool,
}

impl Stores {
    /// Mounts every attached store: downloads a store whose folder is new, or syncs one the
    /// session already holds (a resumed session). Fails on the first store that cannot be
    /// mounted, as the SDK does, except a `mount_path` outside `/workspace`, which is
    /// refused with a log line and skipped.
    pub async fn mount(
        it: &Item,
        session: &Value,
        cfg: &MemoryConfig,
    ) -> Result<Stores, WorkerError> {
        let id = it.burrow_id.clone();
        let saved: BTreeMap<String, Value> = it
            .core
            .blocking(move |sb| Ok(sb.store().meta(&id)?.get(META_KEY).cloned()))
            .await?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let mut out = Stores {
            stores: Vec::new(),
            cfg: cfg.clone(),
            last_sync: Instant::now(),
            finished: false,
        };
        for r in resources(session) {
            let store_id = r["memory_store_id"].as_str().unwrap_or("").to_string();
            let root = match r["mount_path"].as_str().filter(|p| !p.is_empty()) {
                Some(p) => {
                    if !legal_path(p) {
                        return Err(WorkerError::Memory(format!(
                            "memory store mount_path is not a clean absolute path: '{p}' (memory_store_id={store_id})"
                        )));
                    }
                    // Where the SDK writes it, verbatim: inside /workspace, in another
                    // persisted mount (/tmp, $HOME), or a directory of its own kept with the
                    // session (`/mnt/memory/notes`, registered at the first write).
                    let root = match burrow_host::wasi_fs::persisted_store_path(p) {
                        Some(root) => root,
                        None => {
                            burrow_host::wasi_fs::check_persisted_dir(p).map_err(|e| {
                                WorkerError::Memory(format!("{e} (memory_store_id={store_id})"))
                            })?;
                            format!(
                                "{}{}",
                                burrow_host::wasi_fs::PERSISTED_ROOT,
                                p.trim_end_matches('/')
                            )
                        }
                    };
                    if root.is_empty()
                        || burrow_host::wasi_fs::SYSTEM_MOUNTS
                            .iter()
                            .any(|(g, _)| *g == p.trim_end_matches('/'))
                    {
                        return Err(WorkerError::Memory(format!(
                            "memory store mount_path is a whole mount of the sandbox: '{p}' (memory_store_id={store_id})"
                        )));
                    }
                    root
                }
                None => {
                    let name = r["name"].as_str().unwrap_or("").trim();
                    let name = name.rsplit('/').next().unwrap_or("");
                    let name = if name.is_empty() || name == "." || name == ".." {
                        &store_id
                    } else {
                        name
                    };
                    format!("memory/{name}")
                }
            };
            let mut store = Attached {
                id: store_id.clone(),
                root,
                read_only: r["access"] == "read_only",
                baseline: BTreeMap::new(),
                refused: HashMap::new(),
                pending_deletes: HashMap::new(),
                sent: HashMap::new(),
            };
            let scan = out.scan(it, &store).await?;
            let resumed = saved
                .get(&store_id)
                .filter(|s| s["root"] == store.root.as_str());
            if scan.marker_ok {
                // The session holds this store already (a later work item, or a fork).
                if let Some(s) = resumed {
                    store.baseline =
                        serde_json::from_value(s["baseline"].clone()).unwrap_or_default();
                }
                out.sync_store(it, &mut store, false).await;
                tracing::info!(memory_store_id = %store_id, root = %store.root, memories = store.baseline.len(), "memory store resumed");
            } else if scan.files.is_empty() && !scan.marker_present {
                out.download(it, &mut store).await.map_err(|e| {
                    WorkerError::Memory(format!(
                        "failed to download memory store memory_store_id={store_id}: {e}"
                    ))
                })?;
                tracing::info!(memory_store_id = %store_id, root = %store.root, memories = store.baseline.len(), "memory store downloaded");
            } else {
                return Err(WorkerError::Memory(format!(
                    "something already exists at the memory store's path: {} (memory_store_id={store_id}) \
                     and it is not this store's folder",
                    guest_path(&store.root)
                )));
            }
            out.stores.push(store);
        }
        out.save(it).await;
        out.save_roots(it).await;
        out.last_sync = Instant::now();
        Ok(out)
    }

    /// Syncs when the interval has passed since the last sync.
    pub async fn sync_if_due(&mut self, it: &Item) {
        if self.last_sync.elapsed() < self.cfg.sync_interval {
            return;
        }
        self.sync_all(it, false).await;
    }

    /// The session's last sync, once, at a clean end (deletes skip the waiting window).
    pub async fn finish(&mut self, it: &Item) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.sync_all(it, true).await;
    }

    async fn sync_all(&mut self, it: &Item, last: bool) {
        let mut stores = std::mem::take(&mut self.stores);
        for s in &mut stores {
            self.sync_store(it, s, last).await;
        }
        self.stores = stores;
        self.save(it).await;
        self.last_sync = Instant::now();
    }

    /// Keeps each store's folder and baseline in the session's metadata.
    async fn save(&self, it: &Item) {
        let map: BTreeMap<&str, Value> = self
            .stores
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    json!({"root": s.root, "baseline": s.baseline}),
                )
            })
            .collect();
        let (id, text) = (
            it.burrow_id.clone(),
            serde_json::to_string(&map).unwrap_or_default(),
        );
        if let Err(e) = it
            .core
            .blocking(move |sb| Ok(sb.store().set_meta(&id, META_KEY, Some(&text))?))
            .await
        {
            tracing::warn!(error = %e, "could not save the memory sync state");
        }
    }

    /// Reads the folder at the session's head: files with their shas, and the marker.
    async fn scan(&self, it: &Item, store: &Attached) -> Result<Scan, WorkerError> {
        let (id, root, sid) = (it.burrow_id.clone(), store.root.clone(), store.id.clone());
        Ok(it
            .core
            .blocking(move |sb| {
                let mut txn = sb.store().begin(&id)?;
                let version = txn.base();
                let mut files = BTreeMap::new();
                let mut marker = None;
                for rel in txn.files_under(&root)? {
                    let data = txn.read_file(&format!("{root}/{rel}"))?;
                    if rel == MARKER {
                        marker = Some(data);
                    } else {
                        files.insert(rel, sha256_hex(&data));
                    }
                }
                Ok(Scan {
                    version,
                    files,
                    marker_ok: marker.as_deref() == Some(marker_text(&sid).as_bytes()),
                    marker_present: marker.is_some(),
                })
            })
            .await?)
    }

    async fn list(&self, it: &Item, store: &str, full: bool) -> Result<Vec<Value>, String> {
        let limit = if full { FULL_LIST_PAGE } else { LIST_PAGE };
        let q = [
            ("view", if full { "full" } else { "basic" }.to_string()),
            ("limit", limit.to_string()),
        ];
        let items = it
            .api
            .list_all(
                &format!("/v1/memory_stores/{store}/memories"),
                &it.token,
                &q,
                Some(MEMORY_BETA),
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(items
            .into_iter()
            .filter(|i| i["type"] == "memory")
            .filter(|i| {
                let marker = i["path"].as_str().unwrap_or("").trim_start_matches('/') == MARKER;
                if marker {
                    tracing::warn!(
                        memory_store_id = store,
                        "the server listed the reserved marker path; skipping it"
                    );
                }
                !marker
            })
            .collect())
    }

    /// Downloads a whole store into its (new) folder: marker first, then every memory.
    async fn download(&self, it: &Item, store: &mut Attached) -> Result<(), String> {
        store.baseline.clear();
        store.sent.clear();
        store.pending_deletes.clear();
        let mut writes = Writes {
            stamp: true,
            ..Writes::default()
        };
        let mut shas = Vec::new();
        for item in self.list(it, &store.id, true).await? {
            let Some(rel) = item["path"].as_str().and_then(rel_of) else {
                tracing::warn!(path = %item["path"], "memory path would escape its folder; skipped");
                continue;
            };
            let content = item["content"].as_str().unwrap_or("").to_string();
            shas.push((
                rel.clone(),
                item["content_sha256"].as_str().unwrap_or("").to_string(),
            ));
            writes.put.push((rel, content));
        }
        let n = writes.put.len();
        self.write(
            it,
            store,
            writes,
            json!({"memory_store_id": store.id, "downloaded": n}),
        )
        .await
        .map_err(|e| e.to_string())?;
        store.baseline.extend(shas);
        Ok(())
    }

    /// Writes one sync's changes to the folder as one version (files whose content moved
    /// since the scan are not removed).
    async fn write(
        &self,
        it: &Item,
        store: &Attached,
        w: Writes,
        event: Value,
    ) -> Result<Vec<String>, WorkerError> {
        if w.put.is_empty() && w.remove.is_empty() && !w.stamp {
            return Ok(Vec::new());
        }
        let (id, root, sid) = (it.burrow_id.clone(), store.root.clone(), store.id.clone());
        let removed = it
            .core
            .serialised(&it.burrow_id, move |sb| {
                let mut txn = sb.store().begin(&id)?;
                // A folder outside the fixed mounts is registered as the session's own, so
                // every later run mounts it.
                burrow_host::wasi_fs::add_persisted_dir(&mut txn, &guest_path(&root))
                    .map_err(burrow_host::session::SessionError::Invalid)?;
                if w.stamp {
                    txn.write_file(&format!("{root}/{MARKER}"), marker_text(&sid).as_bytes())?;
                }
                for (rel, content) in &w.put {
                    let path = format!("{root}/{rel}");
                    if let Some((parent, _)) = path.rsplit_once('/') {
                        txn.mkdir_all(parent)?;
                    }
                    txn.write_file(&path, content.as_bytes())?;
                }
                let mut removed = Vec::new();
                for (rel, sha) in &w.remove {
                    let path = format!("{root}/{rel}");
                    match txn.read_file(&path) {
                        Ok(data) if sha256_hex(&data) == *sha => {
                            txn.unlink_at(burrow_store::ROOT_INO, &path)?;
                            removed.push(rel.clone());
                        }
                        _ => {}
                    }
                }
                let mut event = event;
                event["written"] = json!(w.put.iter().map(|(r, _)| r).collect::<Vec<_>>());
                event["removed"] = json!(removed);
                txn.set_message(format!("memory {sid}"));
                txn.commit_with_event("memory_synced", &event.to_string())?;
                Ok(removed)
            })
            .await?;
        Ok(removed)
    }

    async fn sync_store(&self, it: &Item, store: &mut Attached, last: bool) {
        if let Err(e) = self.try_sync(it, store, last).await {
            tracing::warn!(memory_store_id = %store.id, error = %e, "memory sync failed");
        }
    }

    async fn try_sync(&self, it: &Item, store: &mut Attached, last: bool) -> Result<(), String> {
        let scan = self.scan(it, store).await.map_err(|e| e.to_string())?;
        if !scan.marker_ok {
            if !scan.files.is_empty() {
                tracing::warn!(memory_store_id = %store.id, root = %store.root, "the marker file is gone or names another store; leaving the folder as found and not syncing");
                return Ok(());
            }
            tracing::warn!(memory_store_id = %store.id, "the folder or its marker is gone; downloading the store again");
            return self.download(it, store).await;
        }
        let remote = by_path(self.list(it, &store.id, false).await?);
        store.settle_sent(&remote);
        let local = &scan.files;
        if local.is_empty() && store.baseline.len() > 1 {
            tracing::warn!(memory_store_id = %store.id, "every memory file is gone at once; downloading the store again");
            return self.download(it, store).await;
        }
        let cap = (store.baseline.len() / 4).clamp(DELETE_CAP_FLOOR, DELETE_CAP_CEILING);
        let mut deletes_sent = 0usize;
        let mut writes = Writes::default();
        let mut pulls: Vec<(String, Value)> = Vec::new();
        let mut baseline = BTreeMap::new();
        let mut uploaded = Vec::new();
        let mut deleted = Vec::new();
        let paths: BTreeSet<String> = remote
            .keys()
            .chain(local.keys())
            .chain(store.baseline.keys())
            .cloned()
            .collect();
        for rel in paths {
            let r = remote.get(&rel);
            let r_sha = r
                .and_then(|i| i["content_sha256"].as_str())
                .map(str::to_string);
            let l_sha = local.get(&rel).cloned();
            let b_sha = store.baseline.get(&rel).cloned();
            if l_sha.is_some() {
                store.pending_deletes.remove(&rel);
            }
            let sha = match (r, &l_sha, &b_sha) {
                // Deleted locally, unchanged remotely: a server delete candidate.
                (Some(item), None, Some(b)) if r_sha.as_deref() == Some(b) && !store.read_only => {
                    match self.cfg.deletions {
                        DeleteMode::Disabled => Some(b.clone()),
                        mode => {
                            let first = *store
                                .pending_deletes
                                .entry(rel.clone())
                                .or_insert_with(Instant::now);
                            if !last && first.elapsed() < DELETE_CORROBORATION {
                                Some(b.clone())
                            } else if !self.still_absent(it, store, &rel).await {
                                store.pending_deletes.remove(&rel);
                                Some(b.clone())
                            } else if deletes_sent >= cap {
                                Some(b.clone())
                            } else if mode == DeleteMode::LogOnly {
                                deletes_sent += 1;
                                tracing::info!(path = rel, memory_store_id = %store.id, "log-only: sync would delete this memory on the server");
                                Some(b.clone())
                            } else {
                                deletes_sent += 1;
                                match self.delete_remote(it, store, &rel, item, b).await {
                                    None => {
                                        store.pending_deletes.remove(&rel);
                                        deleted.push(rel.clone());
                                        None
                                    }
                                    keep => keep,
                                }
                            }
                        }
                    }
                }
                // Gone remotely.
                (None, None, _) => {
                    store.pending_deletes.remove(&rel);
                    None
                }
                (None, Some(l), b) => {
                    if b.as_deref() == Some(l.as_str()) {
                        // Unchanged here since the last sync: follow the remote delete.
                        writes.remove.push((rel.clone(), l.clone()));
                        None
                    } else if store.read_only || store.refused.get(&rel) == Some(l) {
                        if b.is_some() && store.read_only {
                            tracing::warn!(
                                path = rel,
                                "memory deleted remotely but edited locally; keeping the file, which a read-only store cannot push"
                            );
                        }
                        None
                    } else {
                        let s = self.upload(it, store, scan.version, &rel, l, None).await;
                        if s.is_some() {
                            uploaded.push(rel.clone());
                        }
                        s
                    }
                }
                (Some(item), l, b) => {
                    let r_sha = r_sha.unwrap_or_default();
                    let remote_changed = b.as_deref() != Some(r_sha.as_str());
                    let locally_edited = l
                        .as_ref()
                        .is_some_and(|l| Some(l) != b.as_ref() && *l != r_sha);
                    if l.is_none() {
                        // Deleted here but changed remotely (a delete candidate was above).
                        tracing::warn!(
                            path = rel,
                            "memory deleted locally but changed remotely; restoring the remote version"
                        );
                        store.pending_deletes.remove(&rel);
                        pulls.push((rel.clone(), item.clone()));
                        b.clone()
                    } else if remote_changed {
                        if l.as_deref() == Some(r_sha.as_str()) {
                            Some(r_sha)
                        } else {
                            if locally_edited {
                                tracing::warn!(path = rel, memory_store_id = %store.id, "memory changed both locally and remotely; keeping the remote version");
                            }
                            pulls.push((rel.clone(), item.clone()));
                            b.clone()
                        }
                    } else if locally_edited && !store.read_only {
                        let l = l.clone().unwrap_or_default();
                        if store.refused.get(&rel) == Some(&l) {
                            Some(r_sha)
                        } else {
                            let s = self
                                .upload(it, store, scan.version, &rel, &l, Some(item))
                                .await;
                            if s.is_some() {
                                uploaded.push(rel.clone());
                            }
                            s.or(Some(r_sha))
                        }
                    } else {
                        Some(r_sha)
                    }
                }
            };
            if let Some(s) = sha {
                baseline.insert(rel, s);
            }
        }
        store.baseline = baseline;
        // The content pass: fetch what is pulled, then write it all as one version.
        let mut pulled = Vec::new();
        for (rel, item) in pulls {
            let mid = item["id"].as_str().unwrap_or("");
            let q = [("view", "full".to_string())];
            let got = call(it, Method::GET, &store.id, &format!("/{mid}"), &q, None).await;
            match got {
                Ok(m) => {
                    let sha = m["content_sha256"].as_str().unwrap_or("").to_string();
                    writes
                        .put
                        .push((rel.clone(), m["content"].as_str().unwrap_or("").to_string()));
                    pulled.push((rel, sha));
                }
                Err(e) if e.status() == Some(reqwest::StatusCode::NOT_FOUND) => {}
                Err(e) => tracing::warn!(path = rel, error = %e, "failed to fetch memory content"),
            }
        }
        let event =
            json!({"memory_store_id": store.id, "uploaded": uploaded, "deleted_remote": deleted});
        let anything = !writes.put.is_empty() || !writes.remove.is_empty();
        match self.write(it, store, writes, event.clone()).await {
            Ok(_) => store.baseline.extend(pulled),
            Err(e) => {
                tracing::warn!(memory_store_id = %store.id, error = %e, "could not write pulled memories")
            }
        }
        if !anything && (!uploaded.is_empty() || !deleted.is_empty()) {
            it.log("memory_synced", event).await;
        }
        Ok(())
    }

    /// Whether the marker is intact and `rel` is still missing at the session's head now.
    async fn still_absent(&self, it: &Item, store: &Attached, rel: &str) -> bool {
        let (id, root, rel, sid) = (
            it.burrow_id.clone(),
            store.root.clone(),
            rel.to_string(),
            store.id.clone(),
        );
        it.core
            .blocking(move |sb| {
                let mut txn = sb.store().begin(&id)?;
                let marker_ok = txn.read_file(&format!("{root}/{MARKER}")).ok()
                    == Some(marker_text(&sid).into_bytes());
                let absent = txn.read_file(&format!("{root}/{rel}")).is_err();
                Ok(marker_ok && absent)
            })
            .await
            .unwrap_or(false)
    }

    async fn delete_remote(
        &self,
        it: &Item,
        store: &Attached,
        rel: &str,
        item: &Value,
        base: &str,
    ) -> Option<String> {
        let mid = item["id"].as_str().unwrap_or("");
        let q = [("expected_content_sha256", base.to_string())];
        let r = call(it, Method::DELETE, &store.id, &format!("/{mid}"), &q, None).await;
        match r {
            Ok(_) => {
                tracing::info!(path = rel, memory_store_id = %store.id, "propagated local deletion");
                None
            }
            Err(e) if e.status() == Some(reqwest::StatusCode::NOT_FOUND) => None,
            Err(e) if matches!(e.status().map(|s| s.as_u16()), Some(409 | 412)) => {
                tracing::warn!(
                    path = rel,
                    "memory deleted locally but changed remotely; keeping the remote version"
                );
                Some(base.to_string())
            }
            Err(e) => {
                tracing::warn!(path = rel, error = %e, "failed to delete memory");
                Some(base.to_string())
            }
        }
    }

    /// Pushes one file; `None` keeps the old baseline so the next pass retries.
    async fn upload(
        &self,
        it: &Item,
        store: &mut Attached,
        version: burrow_store::VersionId,
        rel: &str,
        local_sha: &str,
        existing: Option<&Value>,
    ) -> Option<String> {
        let path = format!("{}/{rel}", store.root);
        let data = it
            .core
            .blocking(move |sb| Ok(sb.store().view(version)?.read_file(&path)?))
            .await
            .ok()?;
        let Ok(text) = String::from_utf8(data) else {
            tracing::warn!(
                path = rel,
                "the memory file is not UTF-8, so it stays un-synced until its content changes"
            );
            store.refused.insert(rel.to_string(), local_sha.to_string());
            return None;
        };
        store
            .sent
            .insert(rel.to_string(), sha256_hex(text.as_bytes()));
        let (rest, body) = match existing {
            None => (
                String::new(),
                json!({"path": format!("/{rel}"), "content": text}),
            ),
            Some(item) => (
                format!("/{}", item["id"].as_str().unwrap_or("")),
                json!({"content": text, "precondition": {"type": "content_sha256",
                       "content_sha256": item["content_sha256"]}}),
            ),
        };
        let r = call(it, Method::POST, &store.id, &rest, &[], Some(&body)).await;
        match r {
            Ok(m) => {
                store.refused.remove(rel);
                store.sent.remove(rel);
                m["content_sha256"].as_str().map(str::to_string)
            }
            Err(e) => {
                let status = e.status().map(|s| s.as_u16());
                if existing.is_some() && status == Some(404) {
                    // Deleted remotely since the listing: this file is now the only copy.
                    return Box::pin(self.upload(it, store, version, rel, local_sha, None)).await;
                }
                if existing.is_some() && status == Some(409) {
                    tracing::warn!(
                        path = rel,
                        "memory changed both locally and remotely; the upload was refused and the local edit loses"
                    );
                } else if matches!(status, Some(400 | 413)) {
                    store.refused.insert(rel.to_string(), local_sha.to_string());
                    tracing::warn!(path = rel, error = %e, "the server rejected this memory file, so it stays un-synced until its content changes");
                } else {
                    tracing::warn!(path = rel, error = %e, "failed to upload memory");
                }
                None
            }
        }
    }

    /// Push-only rescue pass for every teardown: uploads new and changed files; sends no
    /// deletes and pulls nothing.
    pub async fn flush_writes(&mut self, it: &Item) {
        let mut stores = std::mem::take(&mut self.stores);
        for store in stores.iter_mut().filter(|s| !s.read_only) {
            let Ok(scan) = self.scan(it, store).await else {
                continue;
            };
            if !scan.marker_ok {
                tracing::warn!(memory_store_id = %store.id, "the marker file is gone; not uploading anything from the folder");
                continue;
            }
            let dirty: Vec<(String, String)> = scan
                .files
                .iter()
                .filter(|(rel, sha)| {
                    (store.baseline.get(*rel) != Some(*sha) || store.sent.contains_key(*rel))
                        && store.refused.get(*rel) != Some(*sha)
                })
                .map(|(r, s)| (r.clone(), s.clone()))
                .collect();
            if dirty.is_empty() {
                continue;
            }
            let Ok(remote) = self.list(it, &store.id, false).await else {
                continue;
            };
            let remote = by_path(remote);
            store.settle_sent(&remote);
            for (rel, l) in dirty {
                let base = store.baseline.get(&rel).cloned();
                if base.as_deref() == Some(l.as_str()) {
                    continue;
                }
                let existing = remote.get(&rel);
                let r_sha = existing.and_then(|i| i["content_sha256"].as_str());
                if r_sha == Some(l.as_str()) {
                    store.baseline.insert(rel, l);
                    continue;
                }
                if existing.is_some() && r_sha != base.as_deref() {
                    tracing::warn!(
                        path = rel,
                        "memory changed both locally and remotely; the flush leaves the remote version"
                    );
                    continue;
                }
                if let Some(s) = self
                    .upload(it, store, scan.version, &rel, &l, existing)
                    .await
                {
                    store.baseline.insert(rel, s);
                }
            }
        }
        self.stores = stores;
        self.save(it).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_modes() {
        assert!(legal_path("/workspace/memory/notes"));
        assert!(!legal_path("/workspace/../etc"));
        assert!(!legal_path("relative"));
        assert!(!legal_path("/a//b"));
        assert_eq!(rel_of("/notes/a.md").as_deref(), Some("notes/a.md"));
        assert_eq!(rel_of("/../x"), None);
        assert_eq!("log_only".parse::<DeleteMode>(), Ok(DeleteMode::LogOnly));
        assert!("sometimes".parse::<DeleteMode>().is_err());
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
