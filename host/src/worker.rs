//! `burrow worker`: a Claude Managed Agents self-hosted environment. Long-polls the
//! environment's work queue, acks, keeps each lease alive with heartbeats
//! (`expected_last_heartbeat` protocol; a 412 means the lease is lost), reconciles the
//! session's event history and then follows its event stream, runs every unanswered
//! `agent.tool_use` of the agent_toolset tools in the burrow session mapped to the Managed
//! Agents session, posts `user.tool_result` events, leaves other tools' calls alone, and stops
//! the work item when the session ends or has been idle for `max_idle`.
//!
//! The first work item of a Managed Agents session creates its burrow session (or forks the
//! one its metadata names in `burrow_fork_from`); every later item resumes the same one, from
//! the store, in any process. The environment key and session tokens stay in this process:
//! the sandbox's environment is the session's settings only.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::api_client::{self, ApiError, SseEvent};
use crate::serve::Core;
use crate::session::{Family, SessionError};
use crate::tools::{Content, ToolOutput, agent_toolset};

/// Headers every Managed Agents call carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
/// Session metadata key naming the session to fork from.
pub const FORK_FROM_KEY: &str = "burrow_fork_from";
/// burrow session metadata key holding the Managed Agents session id.
pub const SESSION_META: &str = "managed_agents_session";
const NO_HEARTBEAT: &str = "NO_HEARTBEAT";
const HEARTBEAT_DEFAULT: Duration = Duration::from_secs(30);

/// Settings of `burrow worker`.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub base_url: String,
    pub environment_id: String,
    /// The environment key (standing credential for poll/ack/stop).
    pub environment_key: Option<String>,
    /// Work items served at once.
    pub concurrency: usize,
    /// How long a session may stay idle (its turn over) before its work item is stopped.
    pub max_idle: Duration,
    /// Pause between empty polls.
    pub poll_interval: Duration,
    pub worker_id: String,
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
}

/// Why serving a work item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Terminated,
    Idle,
    LeaseLost,
    Shutdown,
}

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.trim_end_matches('/'))
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        extra: &[(&str, &str)],
    ) -> Result<reqwest::Response, ApiError> {
        let url = self.url(path);
        api_client::send(method.clone(), path, || {
            let mut b = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(token)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .header("anthropic-beta", MANAGED_AGENTS_BETA)
                .query(query);
            for (k, v) in extra {
                b = b.header(*k, *v);
            }
            if let Some(body) = body {
                b = b.json(body);
            }
            b
        })
        .await
    }

    async fn json(
        &self,
        method: Method,
        path: &str,
        token: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let resp = self.call(method, path, token, query, body, &[]).await?;
        let text = resp
            .text()
            .await
            .map_err(|e| ApiError::Protocol(format!("{path}: unreadable body: {e}")))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|e| ApiError::Protocol(format!("{path}: invalid JSON: {e}")))
    }
}

/// The per-item bearer token found in a work item's `secret` (URL-safe base64 of a JSON
/// object with `sessions_token`).
fn sessions_token(secret: Option<&str>) -> Option<String> {
    use base64::Engine as _;
    let secret = secret?.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(secret)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("sessions_token")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Whether an event ends the agent's turn (an idle whose stop reason is not
/// `requires_action`).
fn ends_turn(ev: &Value) -> bool {
    ev["type"] == "session.status_idle" && ev["stop_reason"]["type"] != "requires_action"
}

fn terminal(ev: &Value) -> bool {
    matches!(
        ev["type"].as_str(),
        Some("session.status_terminated" | "session.deleted")
    )
}

/// Events that neither start nor end activity.
fn neutral(ev: &Value) -> bool {
    matches!(
        ev["type"].as_str(),
        Some("user.tool_confirmation" | "session.thread_status_terminated")
    )
}

/// Updates the idle clock with one event: an idle that ends the turn starts it, any other
/// event but a neutral one stops it. True when the event ends the session.
fn note(ev: &Value, idle_since: &mut Option<tokio::time::Instant>) -> bool {
    if ends_turn(ev) {
        *idle_since = Some(tokio::time::Instant::now());
    } else if !neutral(ev) {
        *idle_since = None;
    }
    terminal(ev)
}

/// Runs the worker until `shutdown` is cancelled; in-flight items finish their current tool
/// call, post its result and release their lease.
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
    let api = Arc::new(Api {
        http: api_client::client()?,
        base: cfg.base_url.clone(),
    });
    let permits = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let poll_path = format!("/v1/environments/{}/work/poll", cfg.environment_id);
    tracing::info!(environment = %cfg.environment_id, worker = %cfg.worker_id, "polling for work");
    while !shutdown.is_cancelled() {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = shutdown.cancelled() => break,
        };
        let query = [("block_ms", "999".to_string())];
        let headers = [("Anthropic-Worker-ID", cfg.worker_id.as_str())];
        let polled = tokio::select! {
            r = api.call(Method::GET, &poll_path, &key, &query, None, &headers) => r,
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
        let (core, api, cfg, key, stop) = (
            core.clone(),
            api.clone(),
            cfg.clone(),
            key.clone(),
            shutdown.clone(),
        );
        tasks.spawn(async move {
            let id = item["id"].as_str().unwrap_or("").to_string();
            if let Err(e) = serve_item(&core, &api, &cfg, &key, item, stop).await {
                tracing::error!(work = %id, error = %e, "work item failed");
            }
            drop(permit);
        });
        // Reap finished items so the set does not grow.
        while tasks.try_join_next().is_some() {}
    }
    tracing::info!("shutting down: finishing in-flight tool calls and releasing leases");
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn serve_item(
    core: &Arc<Core>,
    api: &Arc<Api>,
    cfg: &WorkerConfig,
    key: &str,
    item: Value,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let work_id = item["id"].as_str().unwrap_or("").to_string();
    let env = &cfg.environment_id;
    let work_path = format!("/v1/environments/{env}/work/{work_id}");
    api.call(
        Method::POST,
        &format!("{work_path}/ack"),
        key,
        &[],
        None,
        &[],
    )
    .await?;
    let stop_item = async |force: bool| {
        let r = api
            .call(
                Method::POST,
                &format!("{work_path}/stop"),
                key,
                &[],
                Some(&json!({ "force": force })),
                &[],
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
        stop_item(true).await;
        return Ok(());
    }
    let ma_session = data["id"].as_str().unwrap_or("").to_string();
    let token = sessions_token(item["secret"].as_str()).unwrap_or_else(|| key.to_string());
    tracing::info!(work = %work_id, session = %ma_session, "serving work item");

    // The lease: heartbeats until the item is done; a lost lease ends the session run.
    let lease_lost = CancellationToken::new();
    let done = CancellationToken::new();
    let hb = {
        let (api, key, path, lost, done) = (
            api.clone(),
            key.to_string(),
            format!("{work_path}/heartbeat"),
            lease_lost.clone(),
            done.clone(),
        );
        tokio::spawn(async move { heartbeat(&api, &key, &path, lost, done).await })
    };

    let result = async {
        let burrow_id = session_for(core, api, &token, &ma_session, &item).await?;
        follow(
            core,
            api,
            cfg,
            &token,
            &ma_session,
            &burrow_id,
            &lease_lost,
            &shutdown,
        )
        .await
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
        stop_item(true).await;
    }
    result.map(|_| ())
}

/// Keeps the lease: `expected_last_heartbeat` starts at NO_HEARTBEAT and then echoes the
/// server's `last_heartbeat`; a 412 (or `lease_extended: false`) means the lease is gone.
async fn heartbeat(
    api: &Api,
    key: &str,
    path: &str,
    lost: CancellationToken,
    done: CancellationToken,
) {
    let mut last = NO_HEARTBEAT.to_string();
    let mut interval = HEARTBEAT_DEFAULT;
    loop {
        let r = api
            .json(
                Method::POST,
                path,
                key,
                &[("expected_last_heartbeat", last.clone())],
                None,
            )
            .await;
        match r {
            Ok(v) => {
                last = v["last_heartbeat"].as_str().unwrap_or("").to_string();
                if let Some(ttl) = v["ttl_seconds"].as_f64().filter(|t| *t > 0.0) {
                    interval = Duration::from_secs_f64((ttl / 2.0).clamp(1.0, 30.0));
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
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {},
            _ = done.cancelled() => return,
        }
    }
}

/// The burrow session of a Managed Agents session: found by metadata, else created (or
/// forked from the session its metadata names).
async fn session_for(
    core: &Arc<Core>,
    api: &Api,
    token: &str,
    ma_session: &str,
    item: &Value,
) -> Result<String, WorkerError> {
    let key = ma_session.to_string();
    if let Some(id) = core
        .blocking(move |sb| Ok(sb.store().find_by_meta(SESSION_META, &key)?))
        .await?
    {
        return Ok(id);
    }
    // The fork source may be named on the work item or on the session.
    let mut source = item["metadata"][FORK_FROM_KEY].as_str().map(str::to_string);
    if source.is_none() {
        let s = api
            .json(
                Method::GET,
                &format!("/v1/sessions/{ma_session}"),
                token,
                &[],
                None,
            )
            .await?;
        source = s["metadata"][FORK_FROM_KEY].as_str().map(str::to_string);
    }
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

/// The events of a session so far (paged).
async fn history(api: &Api, token: &str, ma_session: &str) -> Result<Vec<Value>, ApiError> {
    let path = format!("/v1/sessions/{ma_session}/events");
    let mut out = Vec::new();
    let mut page: Option<String> = None;
    loop {
        let mut q = vec![("limit", "1000".to_string())];
        if let Some(p) = &page {
            q.push(("page", p.clone()));
        }
        let v = api.json(Method::GET, &path, token, &q, None).await?;
        out.extend(v["data"].as_array().cloned().unwrap_or_default());
        match v["next_page"].as_str().filter(|p| !p.is_empty()) {
            Some(p) => page = Some(p.to_string()),
            None => return Ok(out),
        }
    }
}

/// The content blocks of a tool result as the Sessions API takes them.
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
#[allow(clippy::too_many_arguments)]
async fn follow(
    core: &Arc<Core>,
    api: &Arc<Api>,
    cfg: &WorkerConfig,
    token: &str,
    ma_session: &str,
    burrow_id: &str,
    lease_lost: &CancellationToken,
    shutdown: &CancellationToken,
) -> Result<End, WorkerError> {
    let mut answered: HashSet<String> = HashSet::new();
    let mut idle_since: Option<tokio::time::Instant> = None;
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
        let stream = api
            .call(
                Method::GET,
                &format!("/v1/sessions/{ma_session}/events/stream"),
                token,
                &[],
                None,
                &[("accept", "text/event-stream")],
            )
            .await?;
        let reader = tokio::spawn(async move {
            let _ = api_client::read_sse(stream, tx).await;
        });
        let mut pending = Vec::new();
        for ev in history(api, token, ma_session).await? {
            match ev["type"].as_str() {
                Some("user.tool_result") => {
                    if let Some(id) = ev["tool_use_id"].as_str() {
                        answered.insert(id.to_string());
                    }
                }
                Some("agent.tool_use") => pending.push(ev.clone()),
                _ => {}
            }
            if note(&ev, &mut idle_since) {
                reader.abort();
                return Ok(End::Terminated);
            }
        }
        for ev in pending {
            run_tool(core, api, token, ma_session, burrow_id, &ev, &mut answered).await?;
        }
        loop {
            let deadline = idle_since.map(|t| t + cfg.max_idle);
            let next = tokio::select! {
                ev = rx.recv() => ev,
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {
                    reader.abort();
                    return Ok(End::Idle);
                }
                _ = lease_lost.cancelled() => {
                    reader.abort();
                    return Ok(End::LeaseLost);
                }
                _ = shutdown.cancelled() => {
                    reader.abort();
                    return Ok(End::Shutdown);
                }
            };
            let Some(sse) = next else {
                break; // the stream ended: reconnect and reconcile
            };
            attempt = 0;
            let Ok(ev) = serde_json::from_str::<Value>(&sse.data) else {
                continue;
            };
            if note(&ev, &mut idle_since) {
                reader.abort();
                return Ok(End::Terminated);
            }
            if ev["type"] == "agent.tool_use" {
                run_tool(core, api, token, ma_session, burrow_id, &ev, &mut answered).await?;
            }
        }
        attempt += 1;
        let wait = Duration::from_millis(250 * (1 << attempt.min(5)));
        tracing::warn!(?wait, "event stream ended; reconnecting");
        tokio::time::sleep(wait).await;
    }
}

/// Runs one `agent.tool_use` if this worker owns the tool and it is unanswered, and posts
/// the result.
async fn run_tool(
    core: &Arc<Core>,
    api: &Api,
    token: &str,
    ma_session: &str,
    burrow_id: &str,
    ev: &Value,
    answered: &mut HashSet<String>,
) -> Result<(), WorkerError> {
    let (Some(id), Some(name)) = (ev["id"].as_str(), ev["name"].as_str()) else {
        return Ok(());
    };
    if answered.contains(id) {
        return Ok(());
    }
    if !agent_toolset::TOOLS.contains(&name) {
        // Not ours (web_fetch, custom tools...): left pending for its owner.
        tracing::debug!(tool = name, "not an agent_toolset tool; left unanswered");
        return Ok(());
    }
    let input = if ev["input"].is_object() {
        ev["input"].clone()
    } else {
        json!({})
    };
    tracing::info!(tool = name, tool_use = id, "running tool call");
    let out = core
        .call(burrow_id, Family::AgentToolset, name, input)
        .await?;
    let body = json!({
        "events": [{
            "type": "user.tool_result",
            "tool_use_id": id,
            "is_error": out.is_error,
            "content": session_content(&out),
        }]
    });
    api.call(
        Method::POST,
        &format!("/v1/sessions/{ma_session}/events"),
        token,
        &[],
        Some(&body),
        &[],
    )
    .await?;
    answered.insert(id.to_string());
    Ok(())
}

/// A unique, readable worker id: host name plus a random suffix.
pub fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "burrow".into());
    format!("{host}-{}", &crate::session::new_id()[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_turns() {
        use base64::Engine as _;
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sessions_token":"tok_1","other":"x"}"#);
        assert_eq!(sessions_token(Some(&secret)).as_deref(), Some("tok_1"));
        assert_eq!(sessions_token(Some("!!")), None);
        assert_eq!(sessions_token(None), None);
        assert!(ends_turn(
            &json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})
        ));
        assert!(!ends_turn(
            &json!({"type": "session.status_idle", "stop_reason": {"type": "requires_action"}})
        ));
        assert!(terminal(&json!({"type": "session.deleted"})));
    }
}
