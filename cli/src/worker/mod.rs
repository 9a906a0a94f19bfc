//! `burrow worker`: a Claude Managed Agents self-hosted environment, at parity with the
//! Anthropic SDK 2.17.0's `EnvironmentWorker` and `SessionToolRunner` and past it (every
//! session is a persistent, forkable burrow session). Long-polls the environment's work
//! queue (or serves one already-claimed item: `--item-id`, or one polled item: `--once`),
//! acks, claims the item's lease with a first heartbeat and keeps it (`lease.rs`), mounts the
//! session's memory stores and then installs the skills of its agent and subagents, and
//! serves the session (`runner.rs`, with `view.rs` deciding what runs):
//!
//! - `agent.tool_use` of the agent_toolset tools, through the permission rules (`ask` waits
//!   for the user's confirmation, `deny` never runs; fail closed), each subagent thread in
//!   a shell of its own;
//! - `agent.custom_tool_use` of tools given a handler (`--custom-tool NAME=CMD`);
//!
//! leaving every other call to its owner. The first work item of a Managed Agents session
//! creates its burrow session (or forks the one its metadata names in `burrow_fork_from`);
//! every later item resumes the same one, from the store, in any process. The environment
//! key and session tokens stay in this process: the sandbox's environment is the session's
//! settings only.

mod api;
mod lease;
mod memory;
mod runner;
mod skills;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::{Mutex, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::api_client::ApiError;
use crate::serve::Core;
pub use api::{ANTHROPIC_VERSION, MANAGED_AGENTS_BETA};
use api::{Api, Req, backoff, jitter, sessions_token};
use burrow_host::session::SessionError;
use lease::{Lease, LeaseError, LeaseState};
pub use memory::{DeleteMode, MIN_SYNC_INTERVAL};
pub use runner::End;

/// Session metadata key naming the session to fork from.
pub const FORK_FROM_KEY: &str = "burrow_fork_from";
/// burrow session metadata key holding the Managed Agents session id.
pub const SESSION_META: &str = "managed_agents_session";
/// One poll or ack.
const WORK_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest pause after failed polls or acks.
const POLL_BACKOFF_CAP: Duration = Duration::from_secs(60);
/// Bound on each teardown pass of the memory stores (the SDK's `MEMORY_FLUSH_TIMEOUT`).
const MEMORY_FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// Memory store settings of the worker.
#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// How often the session's memory stores sync back while it runs (at least 5 s).
    pub sync_interval: Duration,
    pub deletions: DeleteMode,
}

/// An already-claimed work item (`--item-id`, the SDK's `handle_item`).
#[derive(Debug, Clone)]
pub struct ClaimedItem {
    pub work_id: String,
    pub session_id: String,
    /// The item's `secret` payload (its sessions token), if the claimer passed it on.
    pub secret: Option<String>,
}

/// Settings of `burrow worker`.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub base_url: String,
    pub environment_id: String,
    /// The environment key (standing credential for poll/ack, fallback for the rest).
    pub environment_key: Option<String>,
    /// Work items served at once.
    pub concurrency: usize,
    /// Session threads whose calls may run at once (one call per thread); None: no limit.
    pub max_concurrent_calls: Option<usize>,
    /// How long a session may stay idle (its turn over) before its work item is stopped;
    /// with `once`, also how long to wait for an item at all.
    pub max_idle: Duration,
    /// Pause between empty polls.
    pub poll_interval: Duration,
    pub worker_id: String,
    /// Custom tools this worker answers: name -> shell command (input JSON on stdin).
    pub custom_tools: Vec<(String, String)>,
    /// Claim at most one work item, serve it, return.
    pub once: bool,
    /// None: memory stores are not mounted (the SDK's `memory_sync_interval=None`).
    pub memory: Option<MemoryConfig>,
}

/// Errors of the worker.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Memory(String),
    /// The API refused to let the session be read (a client error retrying will not change).
    #[error("reading the session failed permanently: {0}")]
    Refused(String),
    #[error(transparent)]
    Lease(#[from] LeaseError<Box<WorkerError>>),
}

/// What serving one work item needs: where to talk, with which credential, about which
/// session, and where its burrow session is.
pub(crate) struct Item {
    core: Arc<Core>,
    api: Arc<Api>,
    /// The item credential: its sessions token, else the environment key.
    token: String,
    ma_session: String,
    burrow_id: String,
}

impl Item {
    /// Appends a worker event (gate decisions, skills, memory) to the burrow session's log.
    async fn log(&self, kind: &'static str, data: Value) {
        let id = self.burrow_id.clone();
        let r = self
            .core
            .blocking(move |sb| {
                Ok(sb
                    .store()
                    .append_event(&id, kind, None, None, &data.to_string())?)
            })
            .await;
        self.core.changed.notify_waiters();
        if let Err(e) = r {
            tracing::warn!(kind, error = %e, "could not log a worker event");
        }
    }
}

/// Runs the worker until `shutdown` is cancelled (or, with `once`, until one item is served
/// or none came within `max_idle`); items in flight finish their calls, post their results
/// and release their leases.
pub async fn run(
    core: Arc<Core>,
    cfg: WorkerConfig,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let key = cfg.environment_key.clone().ok_or_else(|| {
        WorkerError::Config(
            "an environment key is required: --environment-key or ANTHROPIC_ENVIRONMENT_KEY".into(),
        )
    })?;
    let api = Arc::new(Api::new(&cfg.base_url)?);
    let permits = Arc::new(Semaphore::new(if cfg.once {
        1
    } else {
        cfg.concurrency.max(1)
    }));
    let mut tasks = tokio::task::JoinSet::new();
    let env = &cfg.environment_id;
    let poll_path = format!("/v1/environments/{env}/work/poll");
    let started = tokio::time::Instant::now();
    // Poll and ack failures share one count (the SDK's `PollDelays`).
    let mut failures = 0u32;
    tracing::info!(environment = %env, worker = %cfg.worker_id, once = cfg.once, "polling for work");
    while !shutdown.is_cancelled() {
        if cfg.once && started.elapsed() >= cfg.max_idle {
            tracing::info!("no work item within --max-idle; exiting");
            break;
        }
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = shutdown.cancelled() => break,
        };
        let query = [("block_ms", "999".to_string())];
        let headers = [("Anthropic-Worker-ID", cfg.worker_id.as_str())];
        let req = Req {
            query: &query,
            headers: &headers,
            ..Req::default()
        };
        let polled = tokio::select! {
            r = api.attempt(Method::GET, &poll_path, &key, req, WORK_REQUEST_TIMEOUT) => r,
            _ = shutdown.cancelled() => break,
        };
        let pause = match polled {
            Ok(item) if item["type"] == "work" => {
                let id = item["id"].as_str().unwrap_or("").to_string();
                let ack = api
                    .attempt(
                        Method::POST,
                        &format!("/v1/environments/{env}/work/{id}/ack"),
                        &key,
                        Req::default(),
                        WORK_REQUEST_TIMEOUT,
                    )
                    .await;
                match ack {
                    Ok(_) => {
                        failures = 0;
                        tracing::info!(work = %id, kind = %item["data"]["type"], "claimed work");
                        let (core, api, cfg2, key, stop) = (
                            core.clone(),
                            api.clone(),
                            cfg.clone(),
                            key.clone(),
                            shutdown.clone(),
                        );
                        tasks.spawn(async move {
                            if let Err(e) =
                                serve_item(&core, &api, &cfg2, Some(&key), &item, stop).await
                            {
                                tracing::error!(work = %id, error = %e, "work item failed");
                            }
                            drop(permit);
                        });
                        if cfg.once {
                            break;
                        }
                        // Reap finished items so the set does not grow.
                        while tasks.try_join_next().is_some() {}
                        continue;
                    }
                    // Any ack failure skips the item (it is neither served nor stopped).
                    Err(e) => {
                        tracing::warn!(work = %id, error = %e, "ack failed");
                        failures += 1;
                        backoff(failures, POLL_BACKOFF_CAP)
                            + jitter(Duration::ZERO, Duration::from_secs(1))
                    }
                }
            }
            Ok(_) => {
                failures = 0;
                cfg.poll_interval
            }
            Err(e) if e.is_fatal() => {
                tracing::error!(error = %e, "poll failed permanently");
                return Err(WorkerError::Refused(format!("polling for work: {e}")));
            }
            Err(e) => {
                failures += 1;
                tracing::warn!(error = %e, "poll failed");
                backoff(failures, POLL_BACKOFF_CAP) + jitter(Duration::ZERO, Duration::from_secs(1))
            }
        };
        drop(permit);
        tokio::select! {
            _ = tokio::time::sleep(pause) => {},
            _ = shutdown.cancelled() => break,
        }
    }
    if !cfg.once {
        tracing::info!("shutting down: finishing in-flight tool calls and releasing leases");
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Serves one already-claimed work item (the SDK's `handle_item`): no poll, no ack. The
/// environment key is needed only when the item's secret carries no sessions token.
pub async fn handle_item(
    core: Arc<Core>,
    cfg: WorkerConfig,
    claimed: ClaimedItem,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let key = cfg.environment_key.clone();
    if key.is_none() && claimed.secret.is_none() {
        return Err(WorkerError::Config(
            "--item-id needs the work item's secret (ANTHROPIC_WORK_SECRET) or an environment key (ANTHROPIC_ENVIRONMENT_KEY)".into(),
        ));
    }
    let api = Arc::new(Api::new(&cfg.base_url)?);
    let item = json!({
        "type": "work", "id": claimed.work_id, "environment_id": cfg.environment_id,
        "secret": claimed.secret, "data": {"type": "session", "id": claimed.session_id},
    });
    serve_item(&core, &api, &cfg, key.as_deref(), &item, shutdown).await
}

/// Claims the item's lease and serves it while the lease holds.
async fn serve_item(
    core: &Arc<Core>,
    api: &Arc<Api>,
    cfg: &WorkerConfig,
    key: Option<&str>,
    item: &Value,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let work_id = item["id"].as_str().unwrap_or("").to_string();
    let env = &cfg.environment_id;
    let work_path = format!("/v1/environments/{env}/work/{work_id}");
    let secret_token = sessions_token(item["secret"].as_str());
    if item["secret"].as_str().is_some_and(|s| !s.is_empty()) && secret_token.is_none() {
        tracing::warn!(work = %work_id, "work item carried a secret payload but no sessions token could be extracted; falling back to the environment key");
    }
    let Some(token) = secret_token.clone().or(key.map(str::to_string)) else {
        return Err(WorkerError::Config(
            "the work secret carries no sessions token and no environment key is set — provide a work secret whose payload carries a sessions token, or provide the environment key".into(),
        ));
    };
    let lease = Lease::new(api.clone(), token.clone(), work_path, work_id.clone());
    let r = lease
        .hold_during(|state| async move {
            serve_session(
                core,
                api,
                cfg,
                item,
                &token,
                secret_token.is_some(),
                state,
                shutdown,
            )
            .await
            .map_err(Box::new)
        })
        .await;
    match r {
        Ok(()) => Ok(()),
        Err(LeaseError::Serve(e)) => Err(*e),
        Err(e) => Err(e.into()),
    }
}

/// Serves the session of a claimed item: its memory, then its skills, then its calls.
#[allow(clippy::too_many_arguments)]
async fn serve_session(
    core: &Arc<Core>,
    api: &Arc<Api>,
    cfg: &WorkerConfig,
    item: &Value,
    token: &str,
    has_sessions_token: bool,
    lease: LeaseState,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let work_id = item["id"].as_str().unwrap_or("");
    let data = &item["data"];
    if data["type"] != "session" {
        tracing::info!(work = %work_id, kind = %data["type"], "skipping a work item that is not for a session");
        return Ok(());
    }
    let ma_session = data["id"].as_str().unwrap_or("").to_string();
    tracing::info!(work = %work_id, session = %ma_session, "serving work item");
    let Some(session) = read_session(api, token, &ma_session, &lease, &shutdown).await? else {
        return Ok(());
    };
    if session["status"] == "terminated" {
        tracing::info!(work = %work_id, session = %ma_session, "skipping the work item of a terminated session");
        return Ok(());
    }
    let burrow_id = session_for(core, &ma_session, item, &session).await?;
    let it = Arc::new(Item {
        core: core.clone(),
        api: api.clone(),
        token: token.to_string(),
        ma_session: ma_session.clone(),
        burrow_id,
    });
    // Memory first, then skills (the SDK's order); memory endpoints take only the sessions
    // token, never the environment key.
    let mut stores = None;
    if let Some(mcfg) = &cfg.memory {
        if has_sessions_token {
            stores = Some(memory::Stores::mount(&it, &session, mcfg).await?);
        } else if memory::has_stores(&session) {
            return Err(WorkerError::Memory(format!(
                "cannot mount the session's memories: the work item carried no sessions token \
                 (work_id={work_id}, session_id={ma_session}); the memory endpoints reject the \
                 environment key, so the poller must issue a per-item `secret` carrying \
                 `sessions_token`, or run with --no-memory to run without memory"
            )));
        }
    }
    skills::install(&it, &session).await;
    let mounts = stores
        .as_ref()
        .map(memory::Stores::mounts)
        .unwrap_or_default();
    let stores = stores.map(|s| Arc::new(Mutex::new(s)));
    let r = runner::Runner::new(it.clone(), cfg, stores.clone(), mounts, lease, shutdown)
        .run()
        .await;
    if let Some(stores) = stores {
        let mut stores = stores.lock().await;
        // The last full sync only at a clean end; every end gets the push-only flush.
        let clean = matches!(r, Ok(End::Terminated | End::Idle));
        if clean
            && tokio::time::timeout(MEMORY_FLUSH_TIMEOUT, stores.finish(&it))
                .await
                .is_err()
        {
            tracing::warn!(work = %work_id, "final memory sync cut off after 30s; the flush that follows still uploads changed files");
        }
        if tokio::time::timeout(MEMORY_FLUSH_TIMEOUT, stores.flush_writes(&it))
            .await
            .is_err()
        {
            tracing::warn!(work = %work_id, "memory flush cut off after 30s; changed files it had not uploaded are not saved");
        }
    }
    let end = r?;
    tracing::info!(work = %work_id, ?end, "work item ended");
    Ok(())
}

/// Reads the session, retrying for as long as the lease holds (None: the lease ended or the
/// worker is shutting down first).
async fn read_session(
    api: &Api,
    token: &str,
    session: &str,
    lease: &LeaseState,
    shutdown: &CancellationToken,
) -> Result<Option<Value>, WorkerError> {
    let path = format!("/v1/sessions/{session}");
    let mut attempt = 0;
    loop {
        let r = tokio::select! {
            r = api.attempt(Method::GET, &path, token, Req::default(), WORK_REQUEST_TIMEOUT) => r,
            _ = lease.ended.cancelled() => return Ok(None),
            _ = shutdown.cancelled() => return Ok(None),
        };
        match r {
            Ok(v) => return Ok(Some(v)),
            Err(e) if e.is_fatal() => return Err(WorkerError::Refused(e.to_string())),
            Err(e) => {
                tracing::warn!(session, error = %e, "reading the session failed; retrying");
                let d = backoff(attempt, Duration::from_secs(8)) / 2;
                attempt += 1;
                tokio::select! {
                    _ = tokio::time::sleep(jitter(d / 2, d.max(Duration::from_millis(1)))) => {},
                    _ = lease.ended.cancelled() => return Ok(None),
                    _ = shutdown.cancelled() => return Ok(None),
                }
            }
        }
    }
}

/// The burrow session of a Managed Agents session: found by metadata, else created (or
/// forked from the session the work item's or the session's metadata names).
async fn session_for(
    core: &Arc<Core>,
    ma_session: &str,
    item: &Value,
    session: &Value,
) -> Result<String, WorkerError> {
    let key = ma_session.to_string();
    if let Some(id) = core
        .blocking(move |sb| Ok(sb.store().find_by_meta(SESSION_META, &key)?))
        .await?
    {
        return Ok(id);
    }
    let source = item["metadata"][FORK_FROM_KEY]
        .as_str()
        .or(session["metadata"][FORK_FROM_KEY].as_str())
        .map(str::to_string);
    let ma = ma_session.to_string();
    let id = core
        .blocking(move |sb| {
            let id = match source {
                Some(src) => {
                    let from = match sb.store().find_by_meta(SESSION_META, &src)? {
                        Some(id) => id,
                        None => sb.resolve(&src)?,
                    };
                    let id = sb
                        .fork(&from, 1)?
                        .pop()
                        .ok_or_else(|| SessionError::Invalid("fork made nothing".into()))?;
                    tracing::info!(session = %ma, from = %src, burrow = %id, "forked");
                    id
                }
                None => sb.create(None)?.id,
            };
            sb.store().set_meta(&id, SESSION_META, Some(&ma))?;
            Ok(id)
        })
        .await?;
    Ok(id)
}

/// A unique, readable worker id: host name plus a random suffix.
pub fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "burrow".into());
    format!("{host}-{}", &burrow_host::session::new_id()[..12])
}
