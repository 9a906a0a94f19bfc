//! Serving one Managed Agents session for the length of a work item: the Anthropic SDK
//! 2.17.0's `SessionToolRunner` (`lib/tools/_beta_session_runner.py`) over burrow sessions.
//!
//! Each (re)connect opens the session's event stream, reads the session (archiving adds no
//! event, so only its status shows it), then reads its history (the events the runner acts
//! on, `types[]`), builds a fresh [`View`] from it and follows the stream. After every event
//! (and every batch of events read together, so a call whose result or whose thread's end
//! came with it never runs) and after every call, the decision pass reports calls waiting for
//! a confirmation, denied calls and calls no handler here owns (in burrow's session log),
//! and starts the calls the session waits on: one per session thread, at most
//! `--max-concurrent-calls` threads at once. A subagent thread's calls run in its own shell.
//!
//! A call's result is posted unless its thread terminated meanwhile or its result arrived
//! from elsewhere; a post is retried (jittered backoff up to 30 s, each attempt bounded by
//! 15 s doubling to 240 s) for as long as the runner runs, within the lease's TTL once it
//! stops, and never once the lease is lost; a 400 or 413 is answered once with an error
//! result naming the refusal. The runner ends when the session is terminated, archived or
//! deleted, when a reconnect confirms it has been idle `--max-idle` since its turn ended
//! with no call running, when the lease ends, on shutdown, or when reading the session is
//! refused for good (the error is the item's). Calls in flight then finish (a burrow call
//! is never cut short: it ends within its own limits and commits or rolls back whole) and
//! their results are posted.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::api::{Failure, Req, backoff, jitter, request_timeout};
use super::lease::LeaseState;
use super::view::{Step, View, id_of, thread_of};
use super::{Item, WorkerConfig, WorkerError, memory};
use crate::api_client::{self, SseEvent};
use burrow_host::session::Family;
use burrow_host::tools::{Content, ToolOutput, agent_toolset};

/// The events the view acts on, asked of the history (`session.deleted` is only streamed).
pub const HISTORY_EVENT_TYPES: [&str; 14] = [
    "agent.tool_use",
    "agent.custom_tool_use",
    "agent.tool_result",
    "user.tool_result",
    "user.custom_tool_result",
    "user.tool_confirmation",
    "session.status_idle",
    "session.status_running",
    "session.status_rescheduled",
    "session.status_terminated",
    "session.thread_status_running",
    "session.thread_status_rescheduled",
    "session.thread_status_idle",
    "session.thread_status_terminated",
];
const STREAM_BACKOFF_START: Duration = Duration::from_millis(500);
const STREAM_BACKOFF_CAP: Duration = Duration::from_secs(10);
const SEND_BACKOFF_CAP: Duration = Duration::from_secs(30);
/// How long the memory hooks (the flush after an idle) may take.
const MEMORY_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// Why serving a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Terminated,
    Idle,
    LeaseEnded,
    Shutdown,
}

/// What a call task reports back to the runner.
enum Done {
    /// The tool ran; `result` is the result event to post.
    Ran { ev: Value, result: Value },
    /// The post is over (`posted`: the API took it).
    Posted {
        thread: Option<String>,
        id: String,
        posted: bool,
    },
}

/// Why a connection ended.
enum Next {
    Reconnect,
    Stop(End),
}

/// The idle countdown: with no call running, the runner may stop `max_idle` after the later
/// of the turn's end and the last activity (a call that ended, a connect while the session
/// was not idle).
struct Countdown {
    max_idle: Duration,
    active_at: Instant,
    deadline: Option<Instant>,
}

impl Countdown {
    fn record_activity(&mut self) {
        self.active_at = Instant::now();
    }

    fn count_from(&mut self, idle_since: Option<Instant>) {
        self.deadline = idle_since.map(|s| s.max(self.active_at) + self.max_idle);
    }

    fn ended_by(&self, t: Instant) -> bool {
        self.deadline.is_some_and(|d| d <= t)
    }
}

/// One session's run.
pub struct Runner<'a> {
    it: Arc<Item>,
    cfg: &'a WorkerConfig,
    stores: Option<Arc<Mutex<memory::Stores>>>,
    /// The stores' folders (writes there go through the store).
    mounts: Arc<Vec<memory::Mount>>,
    lease: LeaseState,
    shutdown: CancellationToken,
    view: View,
    /// Calls run or reported, for the runner's lifetime (a reconnect never runs one twice).
    handled: HashSet<String>,
    /// Calls reported as waiting for a confirmation.
    held: HashSet<String>,
    /// The call each thread runs (None: the primary thread).
    running: HashMap<Option<String>, String>,
    countdown: Countdown,
    connected: bool,
    stopping: Arc<AtomicBool>,
    /// Threads whose shell was closed after they terminated.
    closed: HashSet<String>,
    /// A memory sync already waits for its turn (another is not queued).
    sync_waiting: Arc<AtomicBool>,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    delay: Duration,
    attempts: u32,
}

impl<'a> Runner<'a> {
    pub fn new(
        it: Arc<Item>,
        cfg: &'a WorkerConfig,
        stores: Option<Arc<Mutex<memory::Stores>>>,
        mounts: Vec<memory::Mount>,
        lease: LeaseState,
        shutdown: CancellationToken,
    ) -> Runner<'a> {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Runner {
            countdown: Countdown {
                max_idle: cfg.max_idle,
                active_at: Instant::now(),
                deadline: None,
            },
            it,
            cfg,
            stores,
            mounts: Arc::new(mounts),
            lease,
            shutdown,
            view: View::default(),
            handled: HashSet::new(),
            held: HashSet::new(),
            running: HashMap::new(),
            connected: false,
            stopping: Arc::default(),
            closed: HashSet::new(),
            sync_waiting: Arc::default(),
            done_tx,
            done_rx,
            delay: STREAM_BACKOFF_START,
            attempts: 0,
        }
    }

    /// Serves the session until it ends; then lets the calls in flight finish and post.
    pub async fn run(mut self) -> Result<End, WorkerError> {
        let r = self.read_until_stop().await;
        self.stopping.store(true, Ordering::SeqCst);
        self.connected = false;
        while !self.running.is_empty() {
            match self.done_rx.recv().await {
                Some(d) => self.on_done(d).await,
                None => break,
            }
        }
        r
    }

    async fn read_until_stop(&mut self) -> Result<End, WorkerError> {
        loop {
            match self.read_connection().await? {
                Next::Stop(end) => return Ok(end),
                Next::Reconnect => {}
            }
            let wait = jitter(self.delay / 2, self.delay);
            self.delay = (self.delay * 2).min(STREAM_BACKOFF_CAP);
            let until = Instant::now() + wait;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => break,
                    Some(d) = self.done_rx.recv() => self.on_done(d).await,
                    _ = self.lease.ended.cancelled() => return Ok(End::LeaseEnded),
                    _ = self.shutdown.cancelled() => return Ok(End::Shutdown),
                }
            }
        }
    }

    /// One connection: stream, session, history, then the stream until it ends.
    async fn read_connection(&mut self) -> Result<Next, WorkerError> {
        if self.lease.ended.is_cancelled() {
            return Ok(Next::Stop(End::LeaseEnded));
        }
        if self.shutdown.is_cancelled() {
            return Ok(Next::Stop(End::Shutdown));
        }
        let timeout = request_timeout(self.attempts);
        self.attempts += 1;
        match self.connect(timeout).await {
            Ok((rx, reader, reads_began, idle)) => {
                self.connected = true;
                self.attempts = 0;
                let next = self.read_stream(rx, reads_began, idle).await;
                self.connected = false;
                reader.abort();
                Ok(next)
            }
            Err(ConnectError::Terminated) => {
                tracing::info!(session = %self.it.ma_session, "session terminated");
                Ok(Next::Stop(End::Terminated))
            }
            Err(ConnectError::Failed(e)) if e.is_fatal() => {
                tracing::error!(session = %self.it.ma_session, error = %e, "reading the session failed permanently");
                Err(WorkerError::Refused(e.to_string()))
            }
            Err(ConnectError::Failed(e)) => {
                tracing::warn!(session = %self.it.ma_session, backoff = ?self.delay, error = %e, "reading the session failed, reconnecting");
                Ok(Next::Reconnect)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    async fn connect(
        &mut self,
        timeout: Duration,
    ) -> Result<
        (
            mpsc::Receiver<SseEvent>,
            tokio::task::JoinHandle<()>,
            Instant,
            bool,
        ),
        ConnectError,
    > {
        let it = self.it.clone();
        let session_path = format!("/v1/sessions/{}", it.ma_session);
        // The stream opens first, so an event too new for the history arrives on it.
        let stream = it
            .api
            .attempt_response(
                Method::GET,
                &format!("{session_path}/events/stream"),
                &it.token,
                Req {
                    headers: &[("accept", "text/event-stream")],
                    ..Req::default()
                },
                timeout,
            )
            .await?;
        let (tx, rx) = mpsc::channel::<SseEvent>(1024);
        let reader = tokio::spawn(async move {
            let _ = api_client::read_sse(stream, tx).await;
        });
        let reads_began = Instant::now();
        let r = async {
            let session = it
                .api
                .attempt(
                    Method::GET,
                    &session_path,
                    &it.token,
                    Req::default(),
                    timeout,
                )
                .await?;
            let mut view = self.view.without_events();
            let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_string())];
            query.extend(
                HISTORY_EVENT_TYPES
                    .iter()
                    .map(|t| ("types[]", t.to_string())),
            );
            let mut page: Option<String> = None;
            loop {
                let mut q = query.clone();
                if let Some(p) = &page {
                    q.push(("page", p.clone()));
                }
                let v = it
                    .api
                    .attempt(
                        Method::GET,
                        &format!("{session_path}/events"),
                        &it.token,
                        Req {
                            query: &q,
                            ..Req::default()
                        },
                        timeout,
                    )
                    .await?;
                for ev in v["data"].as_array().into_iter().flatten() {
                    view.apply(ev);
                }
                match v["next_page"].as_str().filter(|p| !p.is_empty()) {
                    Some(p) => page = Some(p.to_string()),
                    None => break,
                }
            }
            Ok::<_, Failure>((session, view))
        }
        .await;
        let (session, view) = match r {
            Ok(x) => x,
            Err(e) => {
                reader.abort();
                return Err(e.into());
            }
        };
        if view.ended || session["status"] == "terminated" {
            reader.abort();
            return Err(ConnectError::Terminated);
        }
        // The newest status event can be an idle while a subagent still runs.
        let idle = session["status"] == "idle";
        if !idle {
            self.countdown.record_activity();
        }
        self.view = view;
        Ok((rx, reader, reads_began, idle))
    }

    async fn read_stream(
        &mut self,
        mut rx: mpsc::Receiver<SseEvent>,
        reads_began: Instant,
        idle: bool,
    ) -> Next {
        self.act().await;
        // Only reads that began after the countdown ended confirm the session is idle.
        if self.countdown.ended_by(reads_began) {
            tracing::info!(max_idle = ?self.cfg.max_idle, "session idle after its turn ended; stopping");
            return Next::Stop(End::Idle);
        }
        if idle && self.running.is_empty() {
            self.on_idle();
        }
        loop {
            let deadline = self.countdown.deadline;
            tokio::select! {
                sse = rx.recv() => {
                    let Some(sse) = sse else { return Next::Reconnect };
                    self.delay = STREAM_BACKOFF_START;
                    // The events already read come with it (the SDK's checkpoint): a call
                    // whose result or thread end is among them never runs.
                    let mut batch = vec![sse];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    let mut saw_idle = false;
                    for sse in batch {
                        let Ok(ev) = serde_json::from_str::<Value>(&sse.data) else {
                            tracing::warn!("an event of the stream is not JSON; reconnecting");
                            return Next::Reconnect;
                        };
                        self.view.apply(&ev);
                        if self.view.ended {
                            tracing::info!(session = %self.it.ma_session, "session terminated");
                            return Next::Stop(End::Terminated);
                        }
                        saw_idle |= ev["type"] == "session.status_idle";
                    }
                    self.act().await;
                    if saw_idle && self.running.is_empty() {
                        self.on_idle();
                    }
                }
                Some(d) = self.done_rx.recv() => self.on_done(d).await,
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => return Next::Reconnect,
                _ = self.lease.ended.cancelled() => return Next::Stop(End::LeaseEnded),
                _ = self.shutdown.cancelled() => return Next::Stop(End::Shutdown),
            }
        }
    }

    /// Whether a handler here owns the call.
    fn owns(cfg: &WorkerConfig, ev: &Value) -> bool {
        let name = ev["name"].as_str().unwrap_or("");
        match ev["type"].as_str() {
            Some("agent.tool_use") => agent_toolset::TOOLS.contains(&name),
            Some("agent.custom_tool_use") => cfg.custom_tools.iter().any(|(n, _)| n == name),
            _ => false,
        }
    }

    /// The decision pass.
    async fn act(&mut self) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let running: HashSet<Option<String>> = self.running.keys().cloned().collect();
        let cfg = self.cfg;
        let steps = self.view.plan(
            &self.handled,
            &self.held,
            &running,
            cfg.max_concurrent_calls,
            self.connected,
            &|ev| Self::owns(cfg, ev),
        );
        for step in steps {
            match step {
                Step::Hold(ev) => {
                    self.held.insert(id_of(&ev).to_string());
                    tracing::info!(tool = %ev["name"], tool_use = id_of(&ev), "tool call awaiting confirmation; holding");
                    self.it
                        .log(
                            "held",
                            json!({"tool_use_id": ev["id"], "tool": ev["name"], "input": ev["input"],
                                   "permission": ev["evaluated_permission"],
                                   "session_thread_id": ev["session_thread_id"]}),
                        )
                        .await;
                }
                Step::Deny {
                    ev,
                    by_server,
                    verdict,
                } => {
                    self.handled.insert(id_of(&ev).to_string());
                    let by = if by_server { "server" } else { "user" };
                    tracing::info!(tool = %ev["name"], tool_use = id_of(&ev), by, "not executing tool: denied");
                    let verdict = if by_server {
                        Value::Null
                    } else {
                        json!(verdict)
                    };
                    self.it
                        .log(
                            "denied",
                            json!({"tool_use_id": ev["id"], "tool": ev["name"], "input": ev["input"],
                                   "by": by, "verdict": verdict}),
                        )
                        .await;
                }
                Step::Unowned(ev) => {
                    self.handled.insert(id_of(&ev).to_string());
                    tracing::info!(tool = %ev["name"], tool_use = id_of(&ev), "not executing tool: no handler here owns it");
                }
                Step::Start { ev, confirmed } => {
                    let id = id_of(&ev).to_string();
                    self.handled.insert(id.clone());
                    let thread = thread_of(&ev).map(str::to_string);
                    self.running.insert(thread, id.clone());
                    if confirmed {
                        self.it
                            .log(
                                "confirmed",
                                json!({"tool_use_id": ev["id"], "tool": ev["name"]}),
                            )
                            .await;
                    }
                    self.start(ev);
                }
            }
        }
        // A call whose thread ended without listing it (or whose result came from
        // elsewhere) is not cut short: a burrow call finishes (or rolls back) whole; its
        // result is then posted only where the session still takes it.
        self.close_terminated_shells();
        let since = if self.running.is_empty() {
            self.view.idle_since
        } else {
            None
        };
        self.countdown.count_from(since);
    }

    /// Ends the shells of threads that terminated with no call running (as the SDK closes a
    /// thread's tools): a later call of such a thread is refused until a restart.
    fn close_terminated_shells(&mut self) {
        let now: HashSet<String> = self.view.terminated_threads().map(str::to_string).collect();
        self.closed.retain(|t| now.contains(t));
        for t in now {
            if self.closed.contains(&t) || self.running.contains_key(&Some(t.clone())) {
                continue;
            }
            self.closed.insert(t.clone());
            let (core, id) = (self.it.core.clone(), self.it.burrow_id.clone());
            tokio::spawn(async move {
                let r = core
                    .blocking(move |sb| sb.close_shell(&id, Family::AgentToolset, &t))
                    .await;
                if let Err(e) = r {
                    tracing::warn!(error = %e, "could not close a terminated thread's shell");
                }
            });
        }
    }

    /// Runs a call in a task of its own; it reports [`Done::Ran`].
    fn start(&self, ev: Value) {
        let (it, cfg_tools, tx) = (
            self.it.clone(),
            self.cfg.custom_tools.clone(),
            self.done_tx.clone(),
        );
        let through = self.stores.clone().map(|s| (s, self.mounts.clone()));
        tokio::spawn(async move {
            let result = execute(&it, &cfg_tools, through, &ev).await;
            let _ = tx.send(Done::Ran { ev, result });
        });
    }

    async fn on_done(&mut self, d: Done) {
        match d {
            Done::Ran { ev, result } => {
                let id = id_of(&ev).to_string();
                let thread = thread_of(&ev).map(str::to_string);
                let name = ev["name"].as_str().unwrap_or("").to_string();
                if self.view.has_terminated(thread.as_deref()) {
                    tracing::info!(tool = %name, tool_use = %id, "thread terminated; not posting the result");
                    self.finished(thread).await;
                } else if self.answered_elsewhere(&id) {
                    tracing::info!(tool = %name, tool_use = %id, "the call was answered elsewhere; not posting the result");
                    self.finished(thread).await;
                } else {
                    let poster = Poster {
                        it: self.it.clone(),
                        lease: self.lease.clone(),
                        stopping: self.stopping.clone(),
                    };
                    let tx = self.done_tx.clone();
                    tokio::spawn(async move {
                        let posted = poster.post(&name, &id, result).await;
                        let _ = tx.send(Done::Posted { thread, id, posted });
                    });
                }
            }
            Done::Posted { thread, id, posted } => {
                if !posted {
                    tracing::error!(session = %self.it.ma_session, tool_use = %id, "failed to send tool result");
                }
                self.finished(thread).await;
            }
        }
    }

    /// Whether the session read a result for `id` that this runner did not post (the call
    /// is gone from the view: only a result removes a call that was read).
    fn answered_elsewhere(&self, id: &str) -> bool {
        !self.view.has_call(id)
    }

    async fn finished(&mut self, thread: Option<String>) {
        self.running.remove(&thread);
        self.countdown.record_activity();
        self.on_yield();
        self.act().await;
    }

    /// After each call: the memory stores sync when their interval has passed (in the
    /// background; a sync already waiting for its turn is not queued twice).
    fn on_yield(&self) {
        let Some(stores) = self.stores.clone() else {
            return;
        };
        if self.sync_waiting.swap(true, Ordering::SeqCst) {
            return;
        }
        let (it, waiting) = (self.it.clone(), self.sync_waiting.clone());
        tokio::spawn(async move {
            let mut s = stores.lock().await;
            waiting.store(false, Ordering::SeqCst);
            s.sync_if_due(&it).await;
        });
    }

    /// The session went idle with no call running: push what changed in the memory stores.
    fn on_idle(&self) {
        let Some(stores) = self.stores.clone() else {
            return;
        };
        let it = self.it.clone();
        tokio::spawn(async move {
            let flush = async {
                let mut s = stores.lock().await;
                s.flush_writes(&it).await;
            };
            if tokio::time::timeout(MEMORY_HOOK_TIMEOUT, flush)
                .await
                .is_err()
            {
                tracing::warn!("memory flush after the idle cut off after 30s");
            }
        });
    }
}

enum ConnectError {
    Terminated,
    Failed(Failure),
}

impl From<Failure> for ConnectError {
    fn from(f: Failure) -> Self {
        ConnectError::Failed(f)
    }
}

/// The memory stores and their folders, for writes that go through a store.
type Through = (Arc<Mutex<memory::Stores>>, Arc<Vec<memory::Mount>>);

/// Runs a call and builds its result event.
async fn execute(
    it: &Arc<Item>,
    custom_tools: &[(String, String)],
    through: Option<Through>,
    ev: &Value,
) -> Value {
    let id = id_of(ev);
    let name = ev["name"].as_str().unwrap_or("");
    let input = if ev["input"].is_object() {
        ev["input"].clone()
    } else {
        json!({})
    };
    match ev["type"].as_str() {
        Some("agent.custom_tool_use") => {
            let cmd = custom_tools
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, c)| c.as_str())
                .unwrap_or("false");
            tracing::info!(tool = name, tool_use = id, "executing custom tool");
            let (is_error, text) = run_custom(it, name, cmd, &input).await;
            json!({"type": "user.custom_tool_result", "custom_tool_use_id": id,
                   "is_error": is_error, "content": [{"type": "text", "text": text}]})
        }
        _ => {
            tracing::info!(tool = name, tool_use = id, thread = ?thread_of(ev), "executing tool");
            let shell = thread_of(ev).map(str::to_string);
            let saved = match &through {
                Some((stores, mounts)) => {
                    memory::write_through(it, stores, mounts, name, &input, shell.clone()).await
                }
                None => None,
            };
            let out = match saved {
                Some(out) => out,
                None => {
                    it.core
                        .call_in(&it.burrow_id, Family::AgentToolset, name, input, shell)
                        .await
                }
            };
            let (is_error, content) = match out {
                Ok(out) => (out.is_error, session_content(&out)),
                Err(e) => (true, vec![json!({"type": "text", "text": e.to_string()})]),
            };
            json!({"type": "user.tool_result", "tool_use_id": id, "is_error": is_error,
                   "content": content})
        }
    }
}

/// The content blocks of a tool result as the Sessions API takes them (the SDK's
/// `_to_session_content`: empty text reads `(no output)`).
pub fn session_content(out: &ToolOutput) -> Vec<Value> {
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

/// Posts one call's result (the SDK's `ResultPoster`).
struct Poster {
    it: Arc<Item>,
    lease: LeaseState,
    stopping: Arc<AtomicBool>,
}

impl Poster {
    /// Whether the API took the result (or, after refusing it with 400 or 413, the error
    /// result that names the refusal).
    async fn post(&self, name: &str, id: &str, result: Value) -> bool {
        let began = Instant::now();
        let mut attempt = 0;
        match self.send(&result, id, began, &mut attempt).await {
            None => true,
            Some(Failure::Status(e)) if matches!(e.status, 400 | 413) => {
                let text = format!(
                    "The API refused the result of tool {}: {}",
                    py_repr(name),
                    e.message()
                );
                let mut refusal = result.clone();
                refusal["is_error"] = json!(true);
                refusal["content"] = json!([{"type": "text", "text": text}]);
                self.send(&refusal, id, began, &mut attempt).await.is_none()
            }
            Some(_) => false,
        }
    }

    /// Sends until taken (None), refused for good, or given up.
    async fn send(
        &self,
        event: &Value,
        id: &str,
        began: Instant,
        attempt: &mut u32,
    ) -> Option<Failure> {
        let it = &self.it;
        let body = json!({ "events": [event] });
        let path = format!("/v1/sessions/{}/events", it.ma_session);
        loop {
            if self.lease.lost() {
                return Some(Failure::Timeout(Duration::ZERO));
            }
            let n = *attempt;
            *attempt += 1;
            let r = it
                .api
                .attempt(
                    Method::POST,
                    &path,
                    &it.token,
                    Req {
                        body: Some(&body),
                        ..Req::default()
                    },
                    request_timeout(n),
                )
                .await;
            let e = match r {
                Ok(_) => return None,
                Err(e) => e,
            };
            tracing::warn!(session = %it.ma_session, tool_use = id, error = %e, "tool result send failed");
            if e.is_fatal() {
                return Some(e);
            }
            // While the runner runs, retries go on; once it stops, within the lease's TTL.
            let d = backoff(n, SEND_BACKOFF_CAP);
            tokio::time::sleep(jitter(d / 2, d)).await;
            if self.stopping.load(Ordering::SeqCst) && began.elapsed() >= self.lease.ttl() {
                return Some(e);
            }
        }
    }
}

/// A string as Python's `repr` writes it (the SDK quotes tool names so).
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_python_repr_quotes_them() {
        assert_eq!(py_repr("bash"), "'bash'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a'\"b"), "'a\\'\"b'");
        assert_eq!(py_repr("a\nb"), "'a\\nb'");
    }

    #[test]
    fn the_countdown_counts_from_the_later_of_idle_and_activity() {
        let mut c = Countdown {
            max_idle: Duration::from_secs(2),
            active_at: Instant::now(),
            deadline: None,
        };
        c.count_from(None);
        assert!(!c.ended_by(Instant::now() + Duration::from_secs(100)));
        let t = Instant::now();
        c.count_from(Some(t - Duration::from_secs(10)));
        assert_eq!(c.deadline, Some(c.active_at + Duration::from_secs(2)));
        c.count_from(Some(t + Duration::from_secs(5)));
        assert_eq!(c.deadline, Some(t + Duration::from_secs(7)));
    }
}
