//! `write` and `edit` of a file in a memory store's folder go through the store first (the
//! Anthropic SDK 2.17.0's `SessionMemoryStores.write_file`): the call runs, and before its
//! change commits the new content is uploaded (an update with the last synced sha as its
//! precondition, else a create); only if the store takes it does the file change, so a
//! write the store refused or did not confirm leaves the folder as it was, and the agent is
//! told which. The store's lock (held by syncs and flushes) is waited for within the same
//! 30 s as the upload. The texts are the SDK's.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{MARKER, Stores, by_path, marker_text, sha256_hex};
use crate::worker::Item;
use crate::worker::api::{Failure, Req};
use burrow_host::session::{Family, SessionError, TOOL_ROOTS_KEY};
use burrow_host::tools::{ToolOutput, ToolRoot};

/// The most a write may wait for the store (its lock included).
const SAVE_TIMEOUT: Duration = Duration::from_secs(30);
const NOT_SAVED: &str = "not saved to memory, so the change was not made: ";
const UNCONFIRMED: &str =
    "the memory store did not confirm the change, so read the file again before you retry: ";

/// A store's folder as the file tools see it.
#[derive(Debug, Clone)]
pub struct Mount {
    /// Its absolute guest path.
    pub guest: String,
    /// Its store path (see `Attached::root`).
    root: String,
    store_id: String,
    index: usize,
    pub read_only: bool,
}

impl Mount {
    /// The path of `abs` (absolute, guest) relative to the folder, if inside it.
    fn rel(&self, abs: &str) -> Option<String> {
        let rest = abs.strip_prefix(self.guest.trim_end_matches('/'))?;
        let rel = rest.strip_prefix('/')?;
        (!rel.is_empty()).then(|| rel.to_string())
    }
}

/// Why a save failed: the agent's text, and whether the store must sync again (a conflict).
struct SaveFailure {
    text: String,
    resync: bool,
}

impl Stores {
    /// The stores' folders.
    pub fn mounts(&self) -> Vec<Mount> {
        self.stores
            .iter()
            .enumerate()
            .map(|(index, s)| Mount {
                guest: super::guest_path(&s.root),
                root: s.root.clone(),
                store_id: s.id.clone(),
                index,
                read_only: s.read_only,
            })
            .collect()
    }

    /// Records the folders as the session's tool roots, so its file tools reach them (and
    /// refuse writes into read-only ones), in this process and any that resumes it.
    pub(super) async fn save_roots(&self, it: &Item) {
        let roots: Vec<ToolRoot> = self
            .mounts()
            .into_iter()
            .map(|m| ToolRoot {
                path: m.guest,
                read_only: m.read_only,
            })
            .collect();
        let text = (!roots.is_empty()).then(|| serde_json::to_string(&roots).unwrap_or_default());
        let id = it.burrow_id.clone();
        if let Err(e) = it
            .core
            .blocking(move |sb| Ok(sb.store().set_meta(&id, TOOL_ROOTS_KEY, text.as_deref())?))
            .await
        {
            tracing::warn!(error = %e, "could not record the memory folders as tool roots");
        }
    }

    /// Uploads `content` as memory `rel` of store `index`; returns its sha.
    async fn save_through(
        &mut self,
        it: &Item,
        index: usize,
        rel: &str,
        content: &str,
    ) -> Result<String, SaveFailure> {
        let sha = sha256_hex(content.as_bytes());
        let (store_id, base) = {
            let s = &self.stores[index];
            (s.id.clone(), s.baseline.get(rel).cloned())
        };
        // Uploads to this path whose answer never came are settled first; a known memory
        // is updated on the condition that it is still the version last synced.
        let needs_listing = base.is_some() || self.stores[index].sent.contains_key(rel);
        let mut existing: Option<Value> = None;
        if needs_listing {
            let remote = by_path(self.list(it, &store_id, false).await.map_err(unconfirmed)?);
            self.stores[index].settle_sent(&remote);
            existing = remote.get(rel).cloned();
        }
        let base = self.stores[index].baseline.get(rel).cloned();
        self.stores[index].sent.insert(rel.to_string(), sha.clone());
        let path = format!("/v1/memory_stores/{store_id}/memories");
        let update = match (&existing, &base) {
            (Some(item), Some(base)) => Some((item["id"].as_str().unwrap_or("").to_string(), base)),
            _ => None,
        };
        let r = match &update {
            Some((id, base)) => {
                let body = json!({"content": content,
                    "precondition": {"type": "content_sha256", "content_sha256": base}});
                let r = post(it, &format!("{path}/{id}"), &body).await;
                match r {
                    // Deleted on the server since: this write makes it again.
                    Err(Failure::Status(e)) if e.status == 404 => {
                        create(it, &path, rel, content).await
                    }
                    r => r,
                }
            }
            None => create(it, &path, rel, content).await,
        };
        match r {
            Ok(_) => {
                self.stores[index].sent.remove(rel);
                Ok(sha)
            }
            Err(Failure::Status(e)) if e.status == 409 => {
                // The client may have retried an upload that was saved.
                let remote = by_path(self.list(it, &store_id, false).await.map_err(unconfirmed)?);
                if remote.get(rel).and_then(|i| i["content_sha256"].as_str()) == Some(sha.as_str())
                {
                    self.stores[index].sent.remove(rel);
                    return Ok(sha);
                }
                self.stores[index].sent.remove(rel);
                let v: Option<Value> = serde_json::from_str(&e.body).ok();
                let api = v
                    .as_ref()
                    .and_then(|v| v["error"]["message"].as_str())
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(|| e.message());
                Err(SaveFailure {
                    text: format!("{NOT_SAVED}{api}. Read the file again before you retry."),
                    resync: true,
                })
            }
            Err(Failure::Status(e)) if e.status < 500 => {
                self.stores[index].sent.remove(rel);
                Err(SaveFailure {
                    text: format!("{NOT_SAVED}{}", e.message()),
                    resync: false,
                })
            }
            Err(e) => Err(unconfirmed(e.to_string())),
        }
    }
}

fn unconfirmed(msg: String) -> SaveFailure {
    SaveFailure {
        text: format!("{UNCONFIRMED}{msg}"),
        resync: false,
    }
}

async fn post(it: &Item, path: &str, body: &Value) -> Result<Value, Failure> {
    it.api
        .attempt(
            Method::POST,
            path,
            &it.token,
            Req {
                body: Some(body),
                beta: Some(super::MEMORY_BETA),
                ..Req::default()
            },
            SAVE_TIMEOUT,
        )
        .await
}

async fn create(it: &Item, path: &str, rel: &str, content: &str) -> Result<Value, Failure> {
    post(
        it,
        path,
        &json!({"path": format!("/{rel}"), "content": content}),
    )
    .await
}

/// Runs a `write` or `edit` of the agent toolset whose file lies in a writable store's
/// folder through the store; None when the call is not one (it then runs as any call).
pub async fn write_through(
    it: &Arc<Item>,
    stores: &Arc<Mutex<Stores>>,
    mounts: &[Mount],
    name: &str,
    input: &Value,
    shell: Option<String>,
) -> Option<Result<ToolOutput, SessionError>> {
    if !matches!(name, "write" | "edit") {
        return None;
    }
    let p = input["file_path"].as_str()?.to_string();
    let abs = burrow_host::tools::guest_path(burrow_host::wasi_fs::WORKSPACE, &p)?;
    let (mount, rel) = mounts
        .iter()
        .filter(|m| !m.read_only)
        .find_map(|m| m.rel(&abs).map(|r| (m.clone(), r)))?;
    let prefix = format!("{name}: {p}: ");
    let deadline = Instant::now() + SAVE_TIMEOUT;
    let Ok(guard) = tokio::time::timeout(SAVE_TIMEOUT, stores.clone().lock_owned()).await else {
        return Some(Ok(ToolOutput::error(format!(
            "{prefix}{UNCONFIRMED}no answer within 30 seconds"
        ))));
    };
    let handle = tokio::runtime::Handle::current();
    let (item, id, name2, input2) = (
        it.clone(),
        it.burrow_id.clone(),
        name.to_string(),
        input.clone(),
    );
    let (rel2, prefix2, mount2) = (rel.clone(), prefix.clone(), mount.clone());
    let r = it
        .core
        .serialised(&it.burrow_id, move |sb| {
            let mut guard = guard;
            let mut saved: Option<String> = None;
            let mut resync = false;
            let check = |txn: &mut burrow_store::Txn, _: &ToolOutput| -> Result<(), String> {
                let (rel, prefix, mount) = (&rel2, &prefix2, &mount2);
                if rel == MARKER {
                    return Err(format!(
                        "{prefix}{NOT_SAVED}this file marks the folder as a memory store."
                    ));
                }
                if rel.contains('\\') {
                    return Err(format!(
                        "{prefix}{NOT_SAVED}a path with a backslash cannot sync."
                    ));
                }
                let marker = txn.read_file(&format!("{}/{MARKER}", mount.root)).ok();
                if marker.as_deref() != Some(marker_text(&mount.store_id).as_bytes()) {
                    return Err(format!(
                        "{prefix}{NOT_SAVED}the folder cannot sync without its original .anthropic-memory-store file."
                    ));
                }
                let data = txn
                    .read_file(&format!("{}/{rel}", mount.root))
                    .map_err(|_| format!("{prefix}{NOT_SAVED}the path is not a regular file"))?;
                let content = String::from_utf8(data)
                    .map_err(|_| format!("{prefix}{NOT_SAVED}the path is not valid utf-8"))?;
                let left = deadline.saturating_duration_since(Instant::now());
                let save = guard.save_through(&item, mount.index, rel, &content);
                match handle.block_on(async { tokio::time::timeout(left, save).await }) {
                    Err(_) => Err(format!("{prefix}{UNCONFIRMED}no answer within 30 seconds")),
                    Ok(Err(f)) => {
                        resync = f.resync;
                        Err(format!("{prefix}{}", f.text))
                    }
                    Ok(Ok(sha)) => {
                        saved = Some(sha);
                        Ok(())
                    }
                }
            };
            let out = sb.call_checked(
                &id,
                Family::AgentToolset,
                &name2,
                &input2,
                shell.as_deref(),
                Some(Box::new(check)),
            );
            Ok((out, saved, resync, guard))
        })
        .await;
    let (out, saved, resync, mut guard) = match r {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    match (&out, saved) {
        (Ok(o), Some(sha)) if !o.is_error => {
            guard.stores[mount.index].baseline.insert(rel, sha);
            guard.save(it).await;
        }
        // The store took it but the file could not be written: the next sync pulls it.
        (Err(_), Some(_)) => {
            return Some(Ok(ToolOutput::error(format!(
                "{prefix}the memory store saved this, but the file could not be written."
            ))));
        }
        _ => {}
    }
    if resync {
        let mut stores = std::mem::take(&mut guard.stores);
        if let Some(s) = stores.get_mut(mount.index) {
            guard.sync_store(it, s, false).await;
        }
        guard.stores = stores;
        guard.save(it).await;
    }
    Some(out)
}
