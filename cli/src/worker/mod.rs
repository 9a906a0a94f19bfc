//! `burrow worker`: a Claude Managed Agents self-hosted environment, at parity with the
//! Anthropic SDK's `EnvironmentWorker` + `SessionToolRunner` and past it (every session is a
//! persistent, forkable burrow session). Long-polls the environment's work queue (or serves
//! one already-claimed item: `--item-id`, or one polled item: `--once`), acks, keeps each
//! lease alive with heartbeats (`expected_last_heartbeat`; a 412 means the lease is lost),
//! installs the session agent's skills and mounts its memory stores in the burrow session,
//! reconciles the session's event history and follows its event stream, and answers:
//!
//! - `agent.tool_use` of the agent_toolset tools, through the permission gate (`gate.rs`:
//!   `ask` waits for the user's confirmation, `deny` never runs; fail closed);
//! - `agent.custom_tool_use` of tools given a handler (`--custom-tool NAME=CMD`);
//!
//! leaving every other call to its owner. The first work item of a Managed Agents session
//! creates its burrow session (or forks the one its metadata names in `burrow_fork_from`);
//! every later item resumes the same one, from the store, in any process. The environment
//! key and session tokens stay in this process: the sandbox's environment is the session's
//! settings only.

mod api;
pub mod gate;
mod memory;
mod skills;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::api_client::{self, ApiError, SseEvent};
use crate::serve::Core;
pub use api::{ANTHROPIC_VERSION, MANAGED_AGENTS_BETA};
use api::{Api, Req, sessions_token};
use burrow_host::session::{Family, SessionError};
use burrow_host::tools::{Content, ToolOutput, agent_toolset};
use gate::{Decision, DeniedBy, Gate};
pub use memory::{DeleteMode, MIN_SYNC_INTERVAL};

/// Session metadata key naming the session to fork from.
pub const FORK_FROM_KEY: &str = "burrow_fork_from";
/// burrow session metadata key holding the Managed Agents session id.
pub const SESSION_META: &str = "managed_agents_session";
const NO_HEARTBEAT: &str = "NO_HEARTBEAT";
const HEARTBEAT_DEFAULT: Duration = Duration::from_secs(30);
/// Lease TTL assumed until the first heartbeat answer gives the real one.
const HEARTBEAT_TTL_DEFAULT: Duration = Duration::from_secs(90);
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
}

/// Why serving a work item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Terminated,
    Idle,
    LeaseLost,
    Shutdown,
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
/// or none came within `max_idle`); in-flight items finish their current tool call, post
/// its result and release their lease.
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
    let poll_path = format!("/v1/environments/{}/work/poll", cfg.environment_id);
    let started = tokio::time::Instant::now();
    tracing::info!(environment = %cfg.environment_id, worker = %cfg.worker_id, once = cfg.once, "polling for work");
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
            r = api.send(Method::GET, &poll_path, &key, req) => r,
            _ = shutdown.cancelled() => break,
        };
        let item = match polled {
            Ok(resp) if resp.status() == reqwest::StatusCode::NO_CONTENT => Value::Null,
            Ok(resp) => resp.json::<Value>().await.unwrap_or(Value::Null),
            Err(e) => {
                if e.status().is_some_and(|s| s.is_client_error()) {
                    return Err(e.into());
                }
                tracing::warn!(error = %e, "poll failed");
                Value::Null
            }
        };
        if item.get("type").and_then(Value::as_str) != Some("work") {
            drop(permit);
            tokio::select! {
                _ = tokio::time::sleep(cfg.poll_interval) => {},
                _ = shutdown.cancelled() => break,
            }
            continue;
        }
        let id = item["id"].as_str().unwrap_or("").to_string();
        let ack = api
            .send(
                Method::POST,
                &format!("/v1/environments/{}/work/{id}/ack", cfg.environment_id),
                &key,
                Req::default(),
            )
            .await;
        if let Err(e) = ack {
            tracing::warn!(work = %id, error = %e, "ack failed; leaving the item");
            continue;
        }
        let (core, api, cfg2, key, stop) = (
            core.clone(),
            api.clone(),
            cfg.clone(),
            key.clone(),
            shutdown.clone(),
        );
        tasks.spawn(async move {
            if let Err(e) = serve_item(&core, &api, &cfg2, Some(&key), &item, stop).await {
                tracing::error!(work = %id, error = %e, "work item failed");
            }
            drop(permit);
        });
        if cfg.once {
            break;
        }
        // Reap finished items so the set does not grow.
        while tasks.try_join_next().is_some() {}
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
    if item["secret"].as_str().is_some() && secret_token.is_none() {
        tracing::warn!(work = %work_id, "the work item's secret carries no sessions token; using the environment key");
    }
    let Some(token) = secret_token.clone().or(key.map(str::to_string)) else {
        return Err(WorkerError::Config(format!(
            "work item {work_id}: its secret yields no sessions token and there is no environment key"
        )));
    };
    let stop_item = async |token: &str| {
        let body = json!({ "force": true });
        let r = api
            .send(
                Method::POST,
                &format!("{work_path}/stop"),
                token,
                Req {
                    body: Some(&body),
                    ..Req::default()
                },
            )
            .await;
        if let Err(e) = r
            && e.status() != Some(reqwest::StatusCode::CONFLICT)
        {
            tracing::warn!(work = %work_id, error = %e, "stop failed");
        }
    };
    let data = &item["data"];
    if data["type"] != "session" {
        tracing::warn!(work = %work_id, kind = %data["type"], "not a session work item; stopping it");
        stop_item(&token).await;
        return Ok(());
    }
    let ma_session = data["id"].as_str().unwrap_or("").to_string();
    tracing::info!(work = %work_id, session = %ma_session, "serving work item");

    // The lease: heartbeats until the item is done (also during skill and memory
    // downloads, which may outlast a TTL); a lost lease ends the session run.
    let lease_lost = CancellationToken::new();
    let done = CancellationToken::new();
    let hb = {
        let (api, token, path, lost, done) = (
            api.clone(),
            token.clone(),
            format!("{work_path}/heartbeat"),
            lease_lost.clone(),
            done.clone(),
        );
        tokio::spawn(async move { heartbeat(&api, &token, &path, lost, done).await })
    };

    let result = async {
        let session = api
            .json(
                Method::GET,
                &format!("/v1/sessions/{ma_session}"),
                &token,
                Req::default(),
            )
            .await?;
        if session["status"] == "terminated" {
            tracing::info!(work = %work_id, session = %ma_session, "the session is terminated; nothing to serve");
            return Ok(End::Terminated);
        }
        let burrow_id = session_for(core, &ma_session, item, &session).await?;
        let it = Item {
            core: core.clone(),
            api: api.clone(),
            token: token.clone(),
            ma_session: ma_session.clone(),
            burrow_id,
        };
        // Memory endpoints take only the sessions token, never the environment key.
        let mut stores = None;
        if let Some(mcfg) = &cfg.memory {
            if secret_token.is_some() {
                stores = Some(memory::Stores::mount(&it, &session, mcfg).await?);
            } else if memory::has_stores(&session) {
                return Err(WorkerError::Memory(format!(
                    "session {ma_session} has memory stores attached, but work item {work_id} carried no \
                     sessions token; the memory endpoints reject the environment key, so the item is \
                     failed rather than run without its memories"
                )));
            }
        }
        skills::install(&it, &session).await;
        let mut gate = Gate::default();
        let r = follow(&it, cfg, &mut gate, stores.as_mut(), &lease_lost, &shutdown).await;
        if let Some(stores) = stores.as_mut() {
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
        r
    }
    .await;
    done.cancel();
    let _ = hb.await;
    let end = match &result {
        Ok(end) => *end,
        Err(_) => End::Terminated,
    };
    tracing::info!(work = %work_id, ?end, "work item ended");
    if end != End::LeaseLost && !lease_lost.is_cancelled() {
        stop_item(&token).await;
    } else {
        tracing::info!(work = %work_id, "lease lost; released the item without stopping it");
    }
    result.map(|_| ())
}

/// Keeps the lease: `expected_last_heartbeat` starts at NO_HEARTBEAT and then echoes the
/// server's `last_heartbeat`; a 412 (or `lease_extended: false`) means the lease is gone,
/// and so does a run of failures longer than the lease's TTL (so two workers never serve
/// one session).
async fn heartbeat(
    api: &Api,
    token: &str,
    path: &str,
    lost: CancellationToken,
    done: CancellationToken,
) {
    let mut last = NO_HEARTBEAT.to_string();
    let mut interval = HEARTBEAT_DEFAULT;
    let mut ttl = HEARTBEAT_TTL_DEFAULT;
    let mut last_success = tokio::time::Instant::now();
    loop {
        let query = [("expected_last_heartbeat", last.clone())];
        let r = api
            .json(
                Method::POST,
                path,
                token,
                Req {
                    query: &query,
                    ..Req::default()
                },
            )
            .await;
        match r {
            Ok(v) => {
                last = v["last_heartbeat"].as_str().unwrap_or("").to_string();
                last_success = tokio::time::Instant::now();
                if let Some(t) = v["ttl_seconds"].as_f64().filter(|t| *t > 0.0) {
                    ttl = Duration::from_secs_f64(t);
                    interval = Duration::from_secs_f64((t / 2.0).clamp(1.0, 30.0));
                }
                let state = v["state"].as_str().unwrap_or("");
                if matches!(state, "stopping" | "stopped") || v["lease_extended"] == false {
                    tracing::info!(state, "heartbeat signals the end of the work item");
                    lost.cancel();
                    return;
                }
            }
            Err(e) if e.status() == Some(reqwest::StatusCode::PRECONDITION_FAILED) => {
                tracing::error!("lease lost: heartbeat precondition failed");
                lost.cancel();
                return;
            }
            Err(e) if last_success.elapsed() > ttl => {
                tracing::error!(error = %e, "lease assumed lost: no successful heartbeat within its TTL");
                lost.cancel();
                return;
            }
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {},
            _ = done.cancelled() => return,
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

/// The content blocks of a tool result as the Sessions API takes them (the SDK's
/// `_to_session_content`: empty text reads `(no output)`).
fn session_content(out: &ToolOutput) -> Vec<Value> {
    let mut blocks: Vec<Value> = out
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } if text.is_empty() => {
                json!({"type": "text", "text": "(no output)"})
            }
            other => serde_json::to_value(other).unwrap_or(Value::Null),
        })
        .collect();
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "(no output)"}));
    }
    blocks
}

/// Serves the session: reconcile, then follow the stream, until it ends.
async fn follow(
    it: &Item,
    cfg: &WorkerConfig,
    gate: &mut Gate,
    mut stores: Option<&mut memory::Stores>,
    lease_lost: &CancellationToken,
    shutdown: &CancellationToken,
) -> Result<End, WorkerError> {
    let mut attempt = 0u32;
    loop {
        if shutdown.is_cancelled() {
            return Ok(End::Shutdown);
        }
        if lease_lost.is_cancelled() {
            return Ok(End::LeaseLost);
        }
        // Open the stream first, so nothing that happens during the reconcile is missed.
        let (tx, mut rx) = mpsc::channel::<SseEvent>(256);
        let stream = it
            .api
            .send(
                Method::GET,
                &format!("/v1/sessions/{}/events/stream", it.ma_session),
                &it.token,
                Req {
                    headers: &[("accept", "text/event-stream")],
                    ..Req::default()
                },
            )
            .await;
        let reader = match stream {
            Ok(stream) => Some(tokio::spawn(async move {
                let _ = api_client::read_sse(stream, tx).await;
            })),
            Err(e) if e.status().is_some_and(|s| s.is_client_error()) => return Err(e.into()),
            Err(e) => {
                tracing::warn!(error = %e, "event stream failed to open");
                None
            }
        };
        if let Some(reader) = reader {
            // A failed history read dispatches nothing: a result on an unread page could
            // make a call run twice. The next reconnect reads it again.
            match it.api.history(&it.token, &it.ma_session).await {
                Ok(history) => {
                    let (decisions, ended) = gate.reconcile(&history);
                    if ended {
                        reader.abort();
                        return Ok(End::Terminated);
                    }
                    for d in decisions {
                        apply(it, cfg, gate, d, stores.as_deref_mut()).await;
                    }
                    if let Some(end) = stream_events(
                        it,
                        cfg,
                        gate,
                        &mut rx,
                        stores.as_deref_mut(),
                        lease_lost,
                        shutdown,
                    )
                    .await
                    {
                        reader.abort();
                        return Ok(end);
                    }
                    attempt = 0;
                }
                Err(e) => tracing::warn!(error = %e, "reading the session's events failed"),
            }
            reader.abort();
        }
        attempt += 1;
        let wait = Duration::from_millis(250 * (1 << attempt.min(5)));
        tracing::warn!(?wait, "event stream ended; reconnecting");
        tokio::select! {
            _ = tokio::time::sleep(wait) => {},
            _ = shutdown.cancelled() => return Ok(End::Shutdown),
            _ = lease_lost.cancelled() => return Ok(End::LeaseLost),
        }
    }
}

/// Follows the live stream until the session ends (`Some`) or the stream does (`None`).
async fn stream_events(
    it: &Item,
    cfg: &WorkerConfig,
    gate: &mut Gate,
    rx: &mut mpsc::Receiver<SseEvent>,
    mut stores: Option<&mut memory::Stores>,
    lease_lost: &CancellationToken,
    shutdown: &CancellationToken,
) -> Option<End> {
    loop {
        let deadline = gate.clock.idle_since().map(|t| t + cfg.max_idle);
        let next = tokio::select! {
            ev = rx.recv() => ev,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => return Some(End::Idle),
            _ = lease_lost.cancelled() => return Some(End::LeaseLost),
            _ = shutdown.cancelled() => return Some(End::Shutdown),
        };
        let sse = next?;
        let Ok(ev) = serde_json::from_str::<Value>(&sse.data) else {
            continue;
        };
        if gate::terminal(&ev) {
            tracing::info!("session terminated");
            return Some(End::Terminated);
        }
        for d in gate.on_event(&ev) {
            apply(it, cfg, gate, d, stores.as_deref_mut()).await;
        }
    }
}

/// Carries out one gate decision: runs and answers a call, or records a hold or a denial.
async fn apply(
    it: &Item,
    cfg: &WorkerConfig,
    gate: &mut Gate,
    d: Decision,
    stores: Option<&mut memory::Stores>,
) {
    match d {
        Decision::Hold { ev, permission } => {
            tracing::info!(tool = %ev["name"], tool_use = %ev["id"], permission, "tool call requires confirmation; holding it");
            it.log(
                "held",
                json!({"tool_use_id": ev["id"], "tool": ev["name"], "input": ev["input"],
                       "permission": permission}),
            )
            .await;
        }
        Decision::Deny { ev, by } => {
            let (by, verdict) = match by {
                DeniedBy::Server => ("server", Value::Null),
                DeniedBy::User(v) => ("user", json!(v)),
            };
            tracing::info!(tool = %ev["name"], tool_use = %ev["id"], by, "tool call denied; not running it");
            it.log(
                "denied",
                json!({"tool_use_id": ev["id"], "tool": ev["name"], "input": ev["input"],
                       "by": by, "verdict": verdict}),
            )
            .await;
        }
        Decision::Run { ev, confirmed } => {
            if confirmed {
                it.log(
                    "confirmed",
                    json!({"tool_use_id": ev["id"], "tool": ev["name"]}),
                )
                .await;
            }
            let owned = dispatch(it, cfg, gate, &ev).await;
            if confirmed {
                gate.finished(owned);
            }
            if owned && let Some(stores) = stores {
                stores.sync_if_due(it).await;
            }
        }
    }
}

/// Runs a released call if a handler here owns it, and posts its result. Returns whether
/// it was owned (an unowned call is left pending for its owner, as the SDK does).
async fn dispatch(it: &Item, cfg: &WorkerConfig, gate: &mut Gate, ev: &Value) -> bool {
    let (Some(id), Some(name)) = (ev["id"].as_str(), ev["name"].as_str()) else {
        return false;
    };
    if gate.is_answered(id) {
        return true;
    }
    let input = if ev["input"].is_object() {
        ev["input"].clone()
    } else {
        json!({})
    };
    let result = match ev["type"].as_str() {
        Some("agent.tool_use") if agent_toolset::TOOLS.contains(&name) => {
            tracing::info!(tool = name, tool_use = id, "running tool call");
            let (is_error, content) = match it
                .core
                .call(&it.burrow_id, Family::AgentToolset, name, input)
                .await
            {
                Ok(out) => (out.is_error, session_content(&out)),
                Err(e) => (true, vec![json!({"type": "text", "text": e.to_string()})]),
            };
            json!({"type": "user.tool_result", "tool_use_id": id, "is_error": is_error,
                   "content": content})
        }
        Some("agent.custom_tool_use") => {
            let Some((_, cmd)) = cfg.custom_tools.iter().find(|(n, _)| n == name) else {
                tracing::debug!(
                    tool = name,
                    "no handler for this custom tool; left unanswered"
                );
                return false;
            };
            tracing::info!(tool = name, tool_use = id, "running custom tool");
            let (is_error, text) = run_custom(it, name, cmd, &input).await;
            json!({"type": "user.custom_tool_result", "custom_tool_use_id": id,
                   "is_error": is_error, "content": [{"type": "text", "text": text}]})
        }
        _ => {
            tracing::debug!(tool = name, "not a tool this worker owns; left unanswered");
            return false;
        }
    };
    match it
        .api
        .post_events(&it.token, &it.ma_session, json!([result]))
        .await
    {
        Ok(()) => gate.mark_answered(id),
        // Left unanswered: the next reconcile retries it, as the SDK does.
        Err(e) => tracing::error!(tool_use = id, error = %e, "failed to post the tool result"),
    }
    true
}

/// Runs a custom tool's command in the session's shell with the input JSON on stdin: its
/// stdout is the result (stderr when stdout is empty and it failed), an error when it exits
/// non-zero. One version and one event (`tool`, named `custom:NAME`) like any call.
async fn run_custom(it: &Item, name: &str, cmd: &str, input: &Value) -> (bool, String) {
    let (id, cmd, stdin, tool) = (
        it.burrow_id.clone(),
        cmd.to_string(),
        input.to_string().into_bytes(),
        format!("custom:{name}"),
    );
    let r = it
        .core
        .serialised(&it.burrow_id, move |sb| {
            sb.sh_with(&id, &cmd, &stdin, &tool)
        })
        .await;
    match r {
        Ok(run) => {
            let r = &run.report;
            let failed = r.exit_code != 0;
            let mut text = String::from_utf8_lossy(&r.stdout).into_owned();
            if text.trim().is_empty() && failed {
                text = String::from_utf8_lossy(&r.stderr).into_owned();
            }
            if text.is_empty() {
                text = "(no output)".into();
            }
            (failed, text)
        }
        Err(e) => (true, format!("{name}: {e}")),
    }
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
