//! The HTTP API (axum): sessions, tool calls, fork/history/diff/merge/replay/checkout/undo/
//! label, files, the event log and its SSE stream, health, metrics, the OpenAPI document, and
//! the MCP Streamable HTTP service mounted at `/mcp`. JSON errors are `{"error": "..."}` with
//! the status the failure calls for.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use burrow_store::VersionId;
use serde::Deserialize;
use serde_json::Value;

use super::types::{self as t, VersionKey};
use super::{Core, ServeConfig, console, mcp, openapi};
use burrow_host::session::{Family, SessionError};

/// An HTTP error: status and message.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(t::Error { error: self.1 })).into_response()
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        use burrow_store::Error as S;
        let status = match &e {
            SessionError::Unknown(_) => StatusCode::NOT_FOUND,
            SessionError::Ambiguous { .. } | SessionError::NameTaken(_) => StatusCode::CONFLICT,
            SessionError::Invalid(_) => StatusCode::BAD_REQUEST,
            SessionError::Store(s) => match s {
                S::NotFound | S::NoWorkspace(_) | S::NoVersion(_) | S::NoLabel(_) => {
                    StatusCode::NOT_FOUND
                }
                S::Conflict { .. } | S::WorkspaceExists(_) => StatusCode::CONFLICT,
                S::Busy | S::Retry(_) => StatusCode::SERVICE_UNAVAILABLE,
                S::IsDir | S::NotDir | S::Invalid(_) | S::NameTooLong => StatusCode::BAD_REQUEST,
                S::QuotaExceeded { .. } => StatusCode::INSUFFICIENT_STORAGE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            SessionError::Run(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, e.to_string())
    }
}

type ApiResult<T> = Result<T, ApiError>;

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

/// Parses a JSON body with a clear 400 on failure (axum's own rejection text is terse).
fn parse<T: for<'de> Deserialize<'de>>(body: &Bytes) -> ApiResult<T> {
    let body: &[u8] = if body.is_empty() { b"{}" } else { body };
    serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON body: {e}")))
}

#[derive(Clone)]
struct App {
    core: Arc<Core>,
    token: Option<String>,
}

/// The whole router: API routes, `/mcp`, auth, body cap.
pub fn router(
    core: Arc<Core>,
    config: &ServeConfig,
    ct: tokio_util::sync::CancellationToken,
) -> Router {
    let app = App {
        core: core.clone(),
        token: config.token.clone(),
    };
    let mcp = mcp::http_service(core, config, ct);
    Router::new()
        .route(
            "/health",
            get(|| async {
                Json(t::Health {
                    status: "ok".into(),
                })
            }),
        )
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .route("/sessions", get(list).post(create))
        .route("/labels", get(labels))
        .route("/sessions/{id}", get(info).delete(delete))
        .route("/sessions/{id}/call", post(call))
        .route("/sessions/{id}/fork", post(fork))
        .route("/sessions/{id}/history", get(history))
        .route("/sessions/{id}/diff", get(diff))
        .route("/sessions/{id}/merge", post(merge))
        .route("/sessions/{id}/replay", post(replay))
        .route("/sessions/{id}/checkout", post(checkout))
        .route("/sessions/{id}/undo", post(undo))
        .route("/sessions/{id}/label", post(label))
        .route("/sessions/{id}/net", get(net_get).put(net_put))
        .route("/sessions/{id}/files/{*path}", get(download).put(upload))
        .route("/sessions/{id}/tree", get(tree_root))
        .route("/sessions/{id}/tree/{*path}", get(tree))
        .route("/sessions/{id}/export", get(export))
        .route("/sessions/{id}/events", get(events))
        .route("/sessions/{id}/events/stream", get(stream))
        .nest_service("/mcp", mcp)
        .merge(console::router())
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such route".into()) })
        .layer(axum::middleware::from_fn(json_errors))
        .layer(DefaultBodyLimit::max(config.max_body))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Bearer-token check (all routes but /health) and request counting.
async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    app.core.metrics.record_request();
    if let Some(token) = &app.token
        && req.uri().path() != "/health"
        && !console::is_public(req.uri().path())
    {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        // Compared in constant time: the token is a secret.
        let ok = given.is_some_and(|g| {
            g.len() == token.len()
                && g.bytes()
                    .zip(token.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        });
        if !ok {
            return ApiError(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token".into(),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// Every error of the API answers `{"error": "..."}`: axum's own rejections (a bad path or
/// query, a body over the limit, a wrong method) come as plain text, so they are rewrapped
/// here with their status and words. MCP and the console keep their own shapes.
async fn json_errors(req: Request, next: Next) -> Response {
    let mcp = req.uri().path().starts_with("/mcp");
    let res = next.run(req).await;
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if mcp || is_json || !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).trim().to_string(),
        _ => status.canonical_reason().unwrap_or("error").to_lowercase(),
    };
    let mut out = ApiError(status, text).into_response();
    // Keep what the original said beyond its body (Allow on a 405, for example).
    for (k, v) in parts.headers.iter() {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}

async fn metrics(State(app): State<App>) -> ApiResult<Response> {
    let (sessions, bytes) = app
        .core
        .blocking(|sb| Ok((sb.list()?.len(), sb.store_bytes())))
        .await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.core.metrics.render(sessions, bytes),
    )
        .into_response())
}

async fn resolve(app: &App, key: String) -> ApiResult<String> {
    Ok(app.core.blocking(move |sb| sb.resolve(&key)).await?)
}

async fn list(State(app): State<App>) -> ApiResult<Json<t::SessionList>> {
    let sessions = app.core.blocking(|sb| sb.list()).await?;
    Ok(Json(t::SessionList { sessions }))
}

/// Every label with its version and the session that committed that version.
async fn labels(State(app): State<App>) -> ApiResult<Json<t::Labels>> {
    let labels = app
        .core
        .blocking(|sb| {
            let mut rows = Vec::new();
            for (label, v) in sb.store().labels()? {
                // A label may outlive its session; its version row stays while labelled.
                let session = sb.store().version(v).ok().map(|row| row.workspace);
                rows.push(t::LabelInfo {
                    label,
                    version: v.0,
                    session,
                });
            }
            Ok(rows)
        })
        .await?;
    Ok(Json(t::Labels { labels }))
}

#[derive(Deserialize)]
struct NameQuery {
    name: Option<String>,
}

async fn create(
    State(app): State<App>,
    Query(q): Query<NameQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<t::SessionInfo>)> {
    let is_tar = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-tar"));
    let info = if is_tar {
        app.core
            .blocking(move |sb| {
                let mut tmp = tempfile::Builder::new()
                    .suffix(".tar")
                    .tempfile()
                    .map_err(|e| SessionError::Invalid(format!("cannot buffer upload: {e}")))?;
                std::io::Write::write_all(&mut tmp, &body)
                    .map_err(|e| SessionError::Invalid(format!("cannot buffer upload: {e}")))?;
                sb.create_from(q.name.as_deref(), tmp.path(), &mut |_| {})
            })
            .await?
    } else {
        let b: t::CreateSession = parse(&body)?;
        let name = b.name.or(q.name);
        app.core
            .blocking(move |sb| sb.create_with(name.as_deref(), &b.settings))
            .await?
    };
    app.core.changed.notify_waiters();
    Ok((StatusCode::CREATED, Json(info)))
}

async fn info(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<t::SessionInfo>> {
    let info = app
        .core
        .blocking(move |sb| sb.info(&sb.resolve(&id)?))
        .await?;
    Ok(Json(info))
}

async fn delete(State(app): State<App>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    app.core.serialised(&id, move |sb| sb.delete(&sid)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn call(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<t::ToolOutput>> {
    let b: t::CallTool = parse(&body)?;
    let input = Value::Object(b.input.unwrap_or_default());
    let id = resolve(&app, id).await?;
    let family: Family = match b.family {
        Some(f) => f,
        None => {
            let sid = id.clone();
            app.core
                .blocking(move |sb| Ok(sb.settings(&sid)?.family.unwrap_or_default()))
                .await?
        }
    };
    if !family.tools().contains(&b.tool.as_str()) {
        return Err(bad(format!(
            "unknown tool '{}' for the {} family ({})",
            b.tool,
            family.name(),
            family.tools().join(", ")
        )));
    }
    let out = app.core.call(&id, family, &b.tool, input).await?;
    Ok(Json(out))
}

async fn fork(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<t::Forked>)> {
    let b: t::ForkSession = parse(&body)?;
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let ids = app
        .core
        .serialised(&id, move |sb| sb.fork(&sid, b.n.unwrap_or(1)))
        .await?;
    Ok((StatusCode::CREATED, Json(t::Forked { ids })))
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<usize>,
}

async fn history(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<LimitQuery>,
) -> ApiResult<Json<t::History>> {
    let id = resolve(&app, id).await?;
    let (versions, labels) = app
        .core
        .blocking(move |sb| {
            Ok((
                sb.history(&id, q.limit.unwrap_or(100))?,
                sb.store().labels()?,
            ))
        })
        .await?;
    let versions = versions
        .iter()
        .map(|v| {
            let names = labels
                .iter()
                .filter(|(_, at)| *at == v.id)
                .map(|(name, _)| name.clone())
                .collect();
            t::VersionInfo::of(v, names)
        })
        .collect();
    Ok(Json(t::History { versions }))
}

#[derive(Deserialize)]
struct DiffQuery {
    against: Option<String>,
    /// The other side: a session, version or label (default: this session's head).
    to: Option<String>,
    /// With `true`, each changed file also carries its unified diff and line counts.
    #[serde(default)]
    patch: bool,
}

async fn diff(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<DiffQuery>,
) -> ApiResult<Json<t::Diff>> {
    let against = q
        .against
        .ok_or_else(|| bad("give ?against=SESSION or VERSION"))?;
    let id = resolve(&app, id).await?;
    let patch = q.patch;
    let to = q.to.unwrap_or(id);
    Ok(Json(
        app.core
            .blocking(move |sb| mcp::diff(sb, &against, &to, patch))
            .await?,
    ))
}

async fn merge(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<burrow_host::session::MergeOutcome>> {
    let b: t::Merge = if body.is_empty() {
        t::Merge::default()
    } else {
        parse(&body)?
    };
    let id = resolve(&app, id).await?;
    let (sid, into) = (id.clone(), b.into.clone());
    let dst = app
        .core
        .blocking(move |sb| sb.merge_destination(&sid, into.as_deref()))
        .await?;
    let out = app
        .core
        .serialised(&dst.clone(), move |sb| {
            let base = match b.base {
                Some(VersionKey::Number(n)) => Some(sb.version_of(&n.to_string())?),
                Some(VersionKey::Label(l)) => Some(sb.version_of(&l)?),
                None => None,
            };
            sb.merge(&burrow_host::session::MergeRequest {
                source: &id,
                into: Some(&dst),
                base,
                no_commit: b.no_commit,
            })
        })
        .await?;
    Ok(Json(out))
}

async fn replay(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<burrow_host::session::ReplayReport>> {
    let b: t::Replay = if body.is_empty() {
        t::Replay::default()
    } else {
        parse(&body)?
    };
    let id = resolve(&app, id).await?;
    let out = app
        .core
        .blocking(move |sb| {
            let from = match b.from {
                Some(VersionKey::Number(n)) => Some(sb.version_of(&n.to_string())?),
                Some(VersionKey::Label(l)) => Some(sb.version_of(&l)?),
                None => None,
            };
            sb.replay(&burrow_host::session::ReplayRequest {
                session: &id,
                from,
                into: b.into.as_deref(),
            })
        })
        .await?;
    Ok(Json(out))
}

async fn checkout(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<t::VersionRef>> {
    let b: t::Checkout = parse(&body)?;
    let key = match b.version {
        VersionKey::Number(n) => n.to_string(),
        VersionKey::Label(s) => s,
    };
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let v = app
        .core
        .serialised(&id, move |sb| {
            let target = sb.version_of(&key)?;
            sb.checkout(&sid, target)
        })
        .await?;
    Ok(Json(t::VersionRef { version: v.0 }))
}

async fn undo(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<t::VersionRef>> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let v: VersionId = app.core.serialised(&id, move |sb| sb.undo(&sid)).await?;
    Ok(Json(t::VersionRef { version: v.0 }))
}

async fn label(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<t::Labelled>> {
    let b: t::LabelVersion = parse(&body)?;
    let id = resolve(&app, id).await?;
    let (sid, name) = (id.clone(), b.label.clone());
    let v = app
        .core
        .serialised(&id, move |sb| sb.label(&sid, &name))
        .await?;
    Ok(Json(t::Labelled {
        version: v.0,
        label: b.label,
    }))
}

async fn net_get(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<t::NetPolicy>> {
    let id = resolve(&app, id).await?;
    let net = app
        .core
        .blocking(move |sb| Ok(sb.settings(&id)?.net))
        .await?;
    Ok(Json(net))
}

async fn net_put(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<t::NetPolicy>> {
    let net: t::NetPolicy = parse(&body)?;
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let net = app
        .core
        .serialised(&id, move |sb| {
            sb.set_net(&sid, net)?;
            Ok(sb.settings(&sid)?.net)
        })
        .await?;
    Ok(Json(net))
}

#[derive(Deserialize)]
struct VersionQuery {
    /// A version number, `v42` or a label; absent: the session's head.
    version: Option<String>,
}

async fn download(
    State(app): State<App>,
    Path((id, path)): Path<(String, String)>,
    Query(q): Query<VersionQuery>,
) -> ApiResult<Response> {
    let id = resolve(&app, id).await?;
    let kind = console::content_type(&path);
    let bytes = app
        .core
        .blocking(move |sb| sb.cat_at(&id, q.version.as_deref(), &path))
        .await?;
    Ok(([(header::CONTENT_TYPE, kind)], bytes).into_response())
}

async fn tree_root(
    app: State<App>,
    Path(id): Path<String>,
    q: Query<VersionQuery>,
) -> ApiResult<Json<t::Tree>> {
    tree(app, Path((id, String::new())), q).await
}

async fn tree(
    State(app): State<App>,
    Path((id, path)): Path<(String, String)>,
    Query(q): Query<VersionQuery>,
) -> ApiResult<Json<t::Tree>> {
    let id = resolve(&app, id).await?;
    let tree = app
        .core
        .blocking(move |sb| sb.tree(&id, q.version.as_deref(), &path))
        .await?;
    Ok(Json(tree))
}

async fn upload(
    State(app): State<App>,
    Path((id, path)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<t::VersionRef>)> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let v = app
        .core
        .serialised(&id, move |sb| sb.put_file(&sid, &path, &body))
        .await?;
    Ok((StatusCode::CREATED, Json(t::VersionRef { version: v.0 })))
}

async fn export(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<VersionQuery>,
) -> ApiResult<Response> {
    let id = resolve(&app, id).await?;
    let tar = app
        .core
        .blocking(move |sb| {
            let mut out = Vec::new();
            sb.export_tar_at(&id, q.version.as_deref(), &mut out)?;
            Ok(out)
        })
        .await?;
    Ok(([(header::CONTENT_TYPE, "application/x-tar")], tar).into_response())
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<i64>,
    limit: Option<usize>,
}

async fn events(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
) -> ApiResult<Json<t::Events>> {
    let id = resolve(&app, id).await?;
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let after = q.after.unwrap_or(0);
    let evs = app
        .core
        .blocking(move |sb| sb.log(&id, after, limit))
        .await?;
    Ok(Json(t::Events {
        next_after: evs.last().map(|e| e.seq),
        events: evs.iter().map(t::EventInfo::of).collect(),
    }))
}

/// How often an idle stream looks for events written by other processes, when the store
/// cannot wake it (the SQLite file)...
const STREAM_POLL: Duration = Duration::from_millis(500);
/// ...and when it can (PostgreSQL's NOTIFY): only a safety net.
const STREAM_POLL_WATCHED: Duration = Duration::from_secs(30);

async fn stream(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>> {
    let id = resolve(&app, id).await?;
    // Resume after the last event the client saw.
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .or(q.after)
        .unwrap_or(0);
    let core = app.core.clone();
    let state = (core, id, after, std::collections::VecDeque::new());
    let s = futures::stream::unfold(state, |(core, id, mut after, mut queue)| async move {
        loop {
            if let Some(e) = queue.pop_front() {
                let e: burrow_store::Event = e;
                after = e.seq;
                let ev = Event::default()
                    .id(e.seq.to_string())
                    .event(e.kind.clone())
                    .data(serde_json::to_string(&t::EventInfo::of(&e)).unwrap_or_default());
                return Some((Ok(ev), (core, id, after, queue)));
            }
            let wake = core.changed.notified();
            let sid = id.clone();
            match core.blocking(move |sb| sb.log(&sid, after, 256)).await {
                Ok(evs) if !evs.is_empty() => queue.extend(evs),
                Ok(_) => {
                    let poll = if core.watched.load(std::sync::atomic::Ordering::Relaxed) {
                        STREAM_POLL_WATCHED
                    } else {
                        STREAM_POLL
                    };
                    let _ = tokio::time::timeout(poll, wake).await;
                }
                // The session is gone or the store failed: end the stream.
                Err(_) => return None,
            }
        }
    });
    Ok(Sse::new(s).keep_alive(KeepAlive::default()))
}
