//! A protocol-faithful fake of the Claude Managed Agents endpoints `burrow worker` calls
//! (work queue, leases, sessions, session events and their SSE stream, skills, memory
//! stores), served by axum on 127.0.0.1, shaped as the Anthropic SDK's client calls them;
//! plus helpers that start the worker as a real process.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

pub const ENV_KEY: &str = "envkey-SECRET-123";

pub fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")
}

// ----- the fake Managed Agents API -----

#[derive(Default)]
pub struct Work {
    pub item: Value,
    pub acked: bool,
    /// What the next heartbeat must send as expected_last_heartbeat.
    pub last_heartbeat: Option<String>,
    pub heartbeats: Vec<String>,
    /// Heartbeats answered with 412.
    pub rejected: usize,
    pub stopped: bool,
    /// The next heartbeat answers `lease_extended: false` (the server lets the item go).
    pub shutdown: bool,
}

pub struct Session {
    pub metadata: Value,
    pub events: Vec<Value>,
    tx: broadcast::Sender<Value>,
    /// `resources` of the session (memory stores).
    pub resources: Value,
    /// `agent.skills`.
    pub skills: Value,
    /// `agent.multiagent` (subagents and their skills).
    pub multiagent: Value,
    pub status: String,
    /// Results for these call ids are refused with a 400.
    pub refuse: std::collections::HashSet<String>,
    /// `GET /v1/sessions/{id}` answered.
    pub reads: usize,
}

/// One memory of a store.
#[derive(Clone, Debug)]
pub struct Memory {
    pub path: String,
    pub content: String,
}

impl Memory {
    fn sha(&self) -> String {
        sha_hex(self.content.as_bytes())
    }
    fn json(&self, id: &str, full: bool) -> Value {
        let mut v = json!({"type": "memory", "id": id, "path": self.path,
            "content_sha256": self.sha(), "content_size_bytes": self.content.len()});
        if full {
            v["content"] = json!(self.content);
        }
        v
    }
}

pub fn sha_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A skill: its name, concrete version id and archive.
pub struct Skill {
    pub name: String,
    pub version: String,
    pub archive: Vec<u8>,
}

#[derive(Default)]
pub struct Fake {
    queue: VecDeque<String>,
    pub works: HashMap<String, Work>,
    pub sessions: HashMap<String, Session>,
    /// Problems the fake saw in the worker's requests (missing headers, bad auth).
    pub violations: Vec<String>,
    next_event: u64,
    beat: u64,
    pub skills: HashMap<String, Skill>,
    pub skill_downloads: usize,
    /// store id -> memory id -> memory.
    pub memories: HashMap<String, std::collections::BTreeMap<String, Memory>>,
    next_memory: u64,
    /// Requests to the memory endpoints, as "METHOD what".
    pub memory_requests: Vec<String>,
    pub polls: usize,
}

type Shared = Arc<Mutex<Fake>>;

impl Fake {
    /// Heartbeat and stop take the environment key or the item's sessions token (the SDK
    /// sends the latter when the item carries one).
    fn item_tokens(&self, work: &str) -> [String; 2] {
        let session = self
            .works
            .get(work)
            .and_then(|w| w.item["data"]["id"].as_str())
            .unwrap_or("");
        session_tokens(session)
    }

    pub fn session(&mut self, id: &str, metadata: Value) {
        let (tx, _) = broadcast::channel(64);
        self.sessions.insert(
            id.to_string(),
            Session {
                metadata,
                events: Vec::new(),
                tx,
                resources: json!([]),
                skills: json!([]),
                multiagent: Value::Null,
                status: "idle".into(),
                refuse: Default::default(),
                reads: 0,
            },
        );
    }

    /// Ends every open event stream of the session (a network blip): the worker must
    /// reconnect and reconcile.
    pub fn disconnect(&mut self, session: &str) {
        let (tx, _) = broadcast::channel(64);
        if let Some(s) = self.sessions.get_mut(session) {
            s.tx = tx;
        }
    }

    /// Adds a memory to a store; returns its id.
    pub fn add_memory(&mut self, store: &str, path: &str, content: &str) -> String {
        self.next_memory += 1;
        let id = format!("mem_{}", self.next_memory);
        self.memories.entry(store.to_string()).or_default().insert(
            id.clone(),
            Memory {
                path: path.into(),
                content: content.into(),
            },
        );
        id
    }

    /// Changes a memory's content on the server (someone else's edit).
    pub fn edit_memory(&mut self, store: &str, path: &str, content: &str) {
        let m = self
            .memories
            .get_mut(store)
            .and_then(|m| m.values_mut().find(|m| m.path == path))
            .expect("memory");
        m.content = content.to_string();
    }

    /// The store's memories as path -> content.
    pub fn memory_map(&self, store: &str) -> std::collections::BTreeMap<String, String> {
        self.memories
            .get(store)
            .map(|m| {
                m.values()
                    .map(|x| (x.path.clone(), x.content.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn push_event(&mut self, session: &str, mut ev: Value) -> Value {
        self.next_event += 1;
        if ev.get("id").is_none() {
            ev["id"] = json!(format!("sevt_{}", self.next_event));
        }
        let s = self.sessions.get_mut(session).expect("session");
        s.events.push(ev.clone());
        let _ = s.tx.send(ev.clone());
        ev
    }

    pub fn enqueue(&mut self, work_id: &str, session: &str, token: &str) {
        use base64::Engine as _;
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({ "sessions_token": token, "ingress_token": "x" }).to_string());
        let item = json!({
            "type": "work", "id": work_id, "environment_id": "env_1",
            "data": {"type": "session", "id": session}, "state": "queued",
            "secret": secret, "metadata": {}, "created_at": "2026-11-29T00:00:00Z",
        });
        self.works.insert(
            work_id.to_string(),
            Work {
                item,
                ..Default::default()
            },
        );
        self.queue.push_back(work_id.to_string());
    }

    fn check(&mut self, h: &HeaderMap, tokens: &[&str], what: &str) {
        self.check_beta(h, tokens, what, "managed-agents-2026-04-01")
    }

    fn check_beta(&mut self, h: &HeaderMap, tokens: &[&str], what: &str, beta: &str) {
        if h.get("anthropic-beta").and_then(|v| v.to_str().ok()) != Some(beta) {
            self.violations
                .push(format!("{what}: missing anthropic-beta"));
        }
        if h.get("anthropic-version").and_then(|v| v.to_str().ok()) != Some("2023-06-01") {
            self.violations
                .push(format!("{what}: missing anthropic-version"));
        }
        let auth = h
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !tokens.contains(&auth) {
            self.violations.push(format!("{what}: bad credentials"));
        }
    }
}

async fn poll(State(f): State<Shared>, UrlPath(_env): UrlPath<String>, h: HeaderMap) -> Response {
    {
        let mut f = f.lock().unwrap();
        f.check(&h, &[ENV_KEY], "poll");
        f.polls += 1;
        if h.get("anthropic-worker-id").is_none() {
            f.violations.push("poll: no Anthropic-Worker-ID".into());
        }
        if let Some(id) = f.queue.pop_front() {
            return Json(f.works[&id].item.clone()).into_response();
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    StatusCode::NO_CONTENT.into_response()
}

async fn ack(
    State(f): State<Shared>,
    UrlPath((_env, id)): UrlPath<(String, String)>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    f.check(&h, &[ENV_KEY], "ack");
    match f.works.get_mut(&id) {
        Some(w) => {
            w.acked = true;
            Json(json!({})).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn heartbeat(
    State(f): State<Shared>,
    UrlPath((_env, id)): UrlPath<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    let t = f.item_tokens(&id);
    f.check(&h, &[&t[0], &t[1]], "heartbeat");
    f.beat += 1;
    let now = format!("2026-11-29T00:00:{:02}Z", f.beat % 60);
    let Some(w) = f.works.get_mut(&id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let expected = q
        .get("expected_last_heartbeat")
        .cloned()
        .unwrap_or_default();
    w.heartbeats.push(expected.clone());
    let current = w
        .last_heartbeat
        .clone()
        .unwrap_or_else(|| "NO_HEARTBEAT".into());
    if expected != current {
        w.rejected += 1;
        return (
            StatusCode::PRECONDITION_FAILED,
            Json(json!({"type": "error", "error": {"type": "precondition_failed_error",
                "message": "heartbeat precondition failed",
                "details": {"error_code": "heartbeat_precondition_failed",
                    "current_state": {"state": "active", "last_heartbeat": current, "ttl_seconds": 2}}}})),
        )
            .into_response();
    }
    if w.shutdown {
        return Json(json!({"type": "work_heartbeat", "last_heartbeat": current,
            "lease_extended": false, "state": "stopping", "ttl_seconds": 2}))
        .into_response();
    }
    w.last_heartbeat = Some(now.clone());
    Json(
        json!({"type": "work_heartbeat", "last_heartbeat": now, "lease_extended": true,
        "state": if w.stopped { "stopped" } else { "active" }, "ttl_seconds": 2}),
    )
    .into_response()
}

async fn stop(
    State(f): State<Shared>,
    UrlPath((_env, id)): UrlPath<(String, String)>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    let t = f.item_tokens(&id);
    f.check(&h, &[&t[0], &t[1]], "stop");
    match f.works.get_mut(&id) {
        Some(w) => {
            w.stopped = true;
            Json(json!({})).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn session_tokens(id: &str) -> [String; 2] {
    [ENV_KEY.to_string(), format!("tok_{id}")]
}

async fn get_session(
    State(f): State<Shared>,
    UrlPath(id): UrlPath<String>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    let t = session_tokens(&id);
    f.check(&h, &[&t[0], &t[1]], "get session");
    match f.sessions.get_mut(&id) {
        Some(s) => {
            s.reads += 1;
            Json(json!({"id": id, "type": "session", "status": s.status,
                "metadata": s.metadata, "resources": s.resources,
                "agent": {"type": "agent", "skills": s.skills, "multiagent": s.multiagent}}))
            .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn skill_version(
    State(f): State<Shared>,
    UrlPath((skill, _version)): UrlPath<(String, String)>,
) -> Response {
    let f = f.lock().unwrap();
    match f.skills.get(&skill) {
        Some(s) => Json(
            json!({"type": "skill_version", "id": s.version, "skill_id": skill,
            "name": s.name, "version": s.version}),
        )
        .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn skill_content(
    State(f): State<Shared>,
    UrlPath((skill, version)): UrlPath<(String, String)>,
) -> Response {
    let mut f = f.lock().unwrap();
    let Some((body, concrete)) = f
        .skills
        .get(&skill)
        .map(|s| (s.archive.clone(), s.version.clone()))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if concrete != version {
        f.violations
            .push(format!("skill {skill} downloaded by alias {version}"));
    }
    f.skill_downloads += 1;
    body.into_response()
}

/// The memory endpoints take the sessions token only (never the environment key) and
/// their own beta header.
fn memory_auth(f: &mut Fake, h: &HeaderMap, what: &str) -> Option<Response> {
    let auth = h
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    f.memory_requests.push(what.to_string());
    if !auth.starts_with("Bearer tok_") {
        f.violations.push(format!("{what}: not a sessions token"));
        return Some(StatusCode::UNAUTHORIZED.into_response());
    }
    let t = auth.trim_start_matches("Bearer ").to_string();
    f.check_beta(h, &[&t], what, "agent-memory-2026-07-22");
    None
}

async fn list_memories(
    State(f): State<Shared>,
    UrlPath(store): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    if let Some(r) = memory_auth(&mut f, &h, "GET memories") {
        return r;
    }
    let full = q.get("view").map(String::as_str) == Some("full");
    let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
    let all: Vec<Value> = f
        .memories
        .get(&store)
        .map(|m| m.iter().map(|(id, x)| x.json(id, full)).collect())
        .unwrap_or_default();
    let start: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let end = (start + limit.min(3)).min(all.len());
    let next = (end < all.len()).then(|| end.to_string());
    Json(json!({"data": all[start.min(end)..end], "next_page": next})).into_response()
}

async fn get_memory(
    State(f): State<Shared>,
    UrlPath((store, id)): UrlPath<(String, String)>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    if let Some(r) = memory_auth(&mut f, &h, "GET memory") {
        return r;
    }
    match f.memories.get(&store).and_then(|m| m.get(&id)) {
        Some(m) => Json(m.json(&id, true)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn create_memory(
    State(f): State<Shared>,
    UrlPath(store): UrlPath<String>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut f = f.lock().unwrap();
    if let Some(r) = memory_auth(&mut f, &h, "POST memories") {
        return r;
    }
    let path = body["path"].as_str().unwrap_or("").to_string();
    let content = body["content"].as_str().unwrap_or("").to_string();
    if content.len() > 102_400 {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    if f.memories
        .get(&store)
        .is_some_and(|m| m.values().any(|x| x.path == path))
    {
        return StatusCode::CONFLICT.into_response();
    }
    let id = f.add_memory(&store, &path, &content);
    let m = f.memories[&store][&id].json(&id, false);
    Json(m).into_response()
}

async fn update_memory(
    State(f): State<Shared>,
    UrlPath((store, id)): UrlPath<(String, String)>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut f = f.lock().unwrap();
    if let Some(r) = memory_auth(&mut f, &h, "POST memory") {
        return r;
    }
    let Some(m) = f.memories.get_mut(&store).and_then(|m| m.get_mut(&id)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(want) = body["precondition"]["content_sha256"].as_str()
        && want != m.sha()
    {
        return StatusCode::CONFLICT.into_response();
    }
    if let Some(c) = body["content"].as_str() {
        m.content = c.to_string();
    }
    Json(m.json(&id, false)).into_response()
}

async fn delete_memory(
    State(f): State<Shared>,
    UrlPath((store, id)): UrlPath<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    if let Some(r) = memory_auth(&mut f, &h, "DELETE memory") {
        return r;
    }
    let Some(m) = f.memories.get_mut(&store) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match m.get(&id) {
        None => StatusCode::NOT_FOUND.into_response(),
        Some(x)
            if q.get("expected_content_sha256")
                .is_some_and(|w| *w != x.sha()) =>
        {
            StatusCode::CONFLICT.into_response()
        }
        Some(_) => {
            m.remove(&id);
            Json(json!({"type": "memory_deleted", "id": id})).into_response()
        }
    }
}

/// Pages of two events, so the worker must follow `next_page`; only the `types[]` asked for
/// (the SDK's runner always asks for the types it acts on).
async fn list_events(
    State(f): State<Shared>,
    UrlPath(id): UrlPath<String>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    h: HeaderMap,
) -> Response {
    let mut f = f.lock().unwrap();
    let t = session_tokens(&id);
    f.check(&h, &[&t[0], &t[1]], "list events");
    let mut page = 0usize;
    let mut types = Vec::new();
    for (k, v) in url_pairs(raw.as_deref().unwrap_or("")) {
        match k.as_str() {
            "page" => page = v.parse().unwrap_or(0),
            "types[]" => types.push(v),
            _ => {}
        }
    }
    if types.is_empty() {
        f.violations.push("list events: no types[] filter".into());
    }
    let Some(s) = f.sessions.get(&id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let events: Vec<&Value> = s
        .events
        .iter()
        .filter(|e| types.is_empty() || types.iter().any(|t| e["type"] == t.as_str()))
        .collect();
    let end = (page + 2).min(events.len());
    let next = (end < events.len()).then(|| end.to_string());
    Json(json!({"data": events[page.min(end)..end], "next_page": next})).into_response()
}

/// The pairs of a query string, percent-decoded.
fn url_pairs(q: &str) -> Vec<(String, String)> {
    fn decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'%' if i + 2 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(v) => {
                            out.push(v);
                            i += 3;
                            continue;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                b'+' => out.push(b' '),
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

async fn stream_events(
    State(f): State<Shared>,
    UrlPath(id): UrlPath<String>,
    h: HeaderMap,
) -> Response {
    let rx = {
        let mut f = f.lock().unwrap();
        let t = session_tokens(&id);
        f.check(&h, &[&t[0], &t[1]], "stream");
        match f.sessions.get(&id) {
            Some(s) => s.tx.subscribe(),
            None => return StatusCode::NOT_FOUND.into_response(),
        }
    };
    let s = futures::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let name = ev["type"].as_str().unwrap_or("message").to_string();
                    let e = Event::default().event(name).data(ev.to_string());
                    return Some((Ok::<_, std::convert::Infallible>(e), rx));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return None,
            }
        }
    });
    Sse::new(s).into_response()
}

async fn post_events(
    State(f): State<Shared>,
    UrlPath(id): UrlPath<String>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut f = f.lock().unwrap();
    let t = session_tokens(&id);
    f.check(&h, &[&t[0], &t[1]], "post events");
    if !f.sessions.contains_key(&id) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let refused = body["events"].as_array().into_iter().flatten().any(|ev| {
        ev["is_error"] != true
            && ev["tool_use_id"]
                .as_str()
                .is_some_and(|t| f.sessions[&id].refuse.contains(t))
    });
    if refused {
        return (
            StatusCode::BAD_REQUEST,
            [("request-id", "req_1")],
            Json(
                json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "content too long"}}),
            ),
        )
            .into_response();
    }
    for ev in body["events"].as_array().cloned().unwrap_or_default() {
        f.push_event(&id, ev);
    }
    Json(json!({})).into_response()
}

pub struct FakeServer {
    state: Shared,
    pub base: String,
    _rt: tokio::runtime::Runtime,
}

pub fn fake_managed_agents() -> FakeServer {
    let state: Shared = Arc::default();
    let app = axum::Router::new()
        .route("/v1/environments/{env}/work/poll", get(poll))
        .route("/v1/environments/{env}/work/{id}/ack", post(ack))
        .route(
            "/v1/environments/{env}/work/{id}/heartbeat",
            post(heartbeat),
        )
        .route("/v1/environments/{env}/work/{id}/stop", post(stop))
        .route("/v1/sessions/{id}", get(get_session))
        .route(
            "/v1/sessions/{id}/events",
            get(list_events).post(post_events),
        )
        .route("/v1/sessions/{id}/events/stream", get(stream_events))
        .route("/v1/skills/{skill}/versions/{version}", get(skill_version))
        .route(
            "/v1/skills/{skill}/versions/{version}/content",
            get(skill_content),
        )
        .route(
            "/v1/memory_stores/{store}/memories",
            get(list_memories).post(create_memory),
        )
        .route(
            "/v1/memory_stores/{store}/memories/{id}",
            get(get_memory).post(update_memory).delete(delete_memory),
        )
        .with_state(state.clone());
    let (rt, base) = crate::common::serve(app);
    FakeServer {
        state,
        base,
        _rt: rt,
    }
}

impl FakeServer {
    pub fn with<T>(&self, f: impl FnOnce(&mut Fake) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// The tool result posted for `tool_use_id`, waiting up to 60 s.
    pub fn result_for(&self, session: &str, tool_use_id: &str) -> Value {
        self.wait(&format!("a result for {tool_use_id}"), || {
            self.with(|f| {
                f.sessions[session]
                    .events
                    .iter()
                    .find(|e| e["type"] == "user.tool_result" && e["tool_use_id"] == tool_use_id)
                    .cloned()
            })
        })
    }

    /// The custom tool result posted for `id`, waiting up to 60 s.
    pub fn result_for_custom(&self, session: &str, id: &str) -> Value {
        self.wait(&format!("a custom result for {id}"), || {
            self.with(|f| {
                f.sessions[session]
                    .events
                    .iter()
                    .find(|e| {
                        e["type"] == "user.custom_tool_result" && e["custom_tool_use_id"] == id
                    })
                    .cloned()
            })
        })
    }

    pub fn wait<T>(&self, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = probe() {
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stopped(&self, work: &str) -> bool {
        self.with(|f| f.works[work].stopped)
    }
}

pub struct Worker(pub Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn worker(db: &Path, base: &str) -> Worker {
    worker_with(db, base, &[])
}

/// The worker with extra arguments (`--custom-tool`, `--memory-delete`, ...).
pub fn worker_with(db: &Path, base: &str, extra: &[&str]) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", db)
            .env("BURROW_CACHE", cache())
            .env("ANTHROPIC_ENVIRONMENT_KEY", ENV_KEY)
            // The worker's own default durability (full) is what the tests see.
            .env_remove("BURROW_DURABILITY")
            .args([
                "worker",
                "--environment-id",
                "env_1",
                "--base-url",
                base,
                "--max-idle",
                // Longer than two heartbeat intervals (the fake's TTL is 2 s, so one beat a
                // second): every served item shows the echo of last_heartbeat.
                "2s",
                "--poll-interval",
                "100ms",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start burrow worker"),
    )
}

/// A call of the agent toolset, as the API sends it: with the permission it evaluated.
pub fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "agent.tool_use", "id": id, "name": name, "input": input,
           "evaluated_permission": "allow"})
}

/// A subagent thread's call.
pub fn thread_tool_use(id: &str, thread: &str, name: &str, input: Value) -> Value {
    json!({"type": "agent.tool_use", "id": id, "name": name, "input": input,
           "session_thread_id": thread})
}

/// A thread's status event (`running`, `idle`, `terminated`, ...).
pub fn thread_status(kind: &str, thread: &str) -> Value {
    let mut ev =
        json!({"type": format!("session.thread_status_{kind}"), "session_thread_id": thread});
    if kind == "idle" {
        ev["stop_reason"] = json!({"type": "end_turn"});
    }
    ev
}

/// The turn is over.
pub fn idle() -> Value {
    json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})
}

/// The session waits on the calls `ids` (a confirmation, or a client's tool).
pub fn requires_action(ids: &[&str]) -> Value {
    json!({"type": "session.status_idle",
           "stop_reason": {"type": "requires_action", "event_ids": ids}})
}

pub fn text_of(result: &Value) -> (bool, String) {
    (
        result["is_error"].as_bool().unwrap(),
        result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

pub fn burrow(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", db)
        .env("BURROW_CACHE", cache())
        .args(args)
        .output()
        .unwrap()
}
