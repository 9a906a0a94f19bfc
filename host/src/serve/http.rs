//! The HTTP API (axum): sessions, tool calls, fork/history/diff/checkout/undo/label, files,
//! the event log and its SSE stream, health, metrics, the OpenAPI document, and the MCP
//! Streamable HTTP service mounted at `/mcp`. JSON errors are `{"error": "..."}` with the
//! status the failure calls for.

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
use serde_json::{Value, json};

use super::{Core, ServeConfig, mcp, openapi};
use crate::session::{Family, SessionError, Settings};

/// An HTTP error: status and message.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
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
                S::Busy => StatusCode::SERVICE_UNAVAILABLE,
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
        .route("/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .route("/sessions", get(list).post(create))
        .route("/sessions/{id}", get(info).delete(delete))
        .route("/sessions/{id}/call", post(call))
        .route("/sessions/{id}/fork", post(fork))
        .route("/sessions/{id}/history", get(history))
        .route("/sessions/{id}/diff", get(diff))
        .route("/sessions/{id}/checkout", post(checkout))
        .route("/sessions/{id}/undo", post(undo))
        .route("/sessions/{id}/label", post(label))
        .route("/sessions/{id}/net", get(net_get).put(net_put))
        .route("/sessions/{id}/files/{*path}", get(download).put(upload))
        .route("/sessions/{id}/export", get(export))
        .route("/sessions/{id}/events", get(events))
        .route("/sessions/{id}/events/stream", get(stream))
        .nest_service("/mcp", mcp)
        .layer(DefaultBodyLimit::max(config.max_body))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Bearer-token check (all routes but /health) and request counting.
async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    app.core.metrics.record_request();
    if let Some(token) = &app.token
        && req.uri().path() != "/health"
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

async fn list(State(app): State<App>) -> ApiResult<Json<Value>> {
    let all = app.core.blocking(|sb| sb.list()).await?;
    Ok(Json(json!({ "sessions": all })))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: Option<String>,
    #[serde(default)]
    settings: Settings,
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
) -> ApiResult<(StatusCode, Json<Value>)> {
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
        let b: CreateBody = parse(&body)?;
        let name = b.name.or(q.name);
        app.core
            .blocking(move |sb| sb.create_with(name.as_deref(), &b.settings))
            .await?
    };
    app.core.changed.notify_waiters();
    Ok((StatusCode::CREATED, Json(json!(info))))
}

async fn info(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let info = app
        .core
        .blocking(move |sb| sb.info(&sb.resolve(&id)?))
        .await?;
    Ok(Json(json!(info)))
}

async fn delete(State(app): State<App>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    app.core.serialised(&id, move |sb| sb.delete(&sid)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallBody {
    tool: String,
    #[serde(default)]
    input: Value,
    family: Option<String>,
}

async fn call(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let b: CallBody = parse(&body)?;
    let input = if b.input.is_null() {
        json!({})
    } else {
        b.input
    };
    if !input.is_object() {
        return Err(bad("input must be a JSON object"));
    }
    let id = resolve(&app, id).await?;
    let family: Family = match b.family {
        Some(f) => f
            .parse()
            .map_err(|e: crate::tools::UnknownFamily| bad(e.to_string()))?,
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
    Ok(Json(json!(out)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    n: Option<usize>,
}

async fn fork(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b: ForkBody = parse(&body)?;
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let ids = app
        .core
        .serialised(&id, move |sb| sb.fork(&sid, b.n.unwrap_or(1)))
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "ids": ids }))))
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<usize>,
}

async fn history(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<LimitQuery>,
) -> ApiResult<Json<Value>> {
    let id = resolve(&app, id).await?;
    let versions = app
        .core
        .blocking(move |sb| sb.history(&id, q.limit.unwrap_or(100)))
        .await?;
    let rows: Vec<Value> = versions.iter().map(crate::session::version_json).collect();
    Ok(Json(json!({ "versions": rows })))
}

#[derive(Deserialize)]
struct DiffQuery {
    against: Option<String>,
}

async fn diff(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<DiffQuery>,
) -> ApiResult<Json<Value>> {
    let against = q
        .against
        .ok_or_else(|| bad("give ?against=SESSION or VERSION"))?;
    let id = resolve(&app, id).await?;
    Ok(Json(
        app.core
            .blocking(move |sb| mcp::diff_json(sb, &against, &id))
            .await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckoutBody {
    version: Value,
}

async fn checkout(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let b: CheckoutBody = parse(&body)?;
    let key = match b.version {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s,
        _ => return Err(bad("version must be a number or a label")),
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
    Ok(Json(json!({ "version": v.0 })))
}

async fn undo(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let v: VersionId = app.core.serialised(&id, move |sb| sb.undo(&sid)).await?;
    Ok(Json(json!({ "version": v.0 })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelBody {
    label: String,
}

async fn label(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let b: LabelBody = parse(&body)?;
    let id = resolve(&app, id).await?;
    let (sid, name) = (id.clone(), b.label.clone());
    let v = app
        .core
        .serialised(&id, move |sb| sb.label(&sid, &name))
        .await?;
    Ok(Json(json!({ "version": v.0, "label": b.label })))
}

async fn net_get(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let id = resolve(&app, id).await?;
    let net = app
        .core
        .blocking(move |sb| Ok(sb.settings(&id)?.net))
        .await?;
    Ok(Json(json!(net)))
}

async fn net_put(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let net: crate::net::NetPolicy = parse(&body)?;
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let net = app
        .core
        .serialised(&id, move |sb| {
            sb.set_net(&sid, net)?;
            Ok(sb.settings(&sid)?.net)
        })
        .await?;
    Ok(Json(json!(net)))
}

async fn download(
    State(app): State<App>,
    Path((id, path)): Path<(String, String)>,
) -> ApiResult<Response> {
    let id = resolve(&app, id).await?;
    let bytes = app.core.blocking(move |sb| sb.cat(&id, &path)).await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

async fn upload(
    State(app): State<App>,
    Path((id, path)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let id = resolve(&app, id).await?;
    let sid = id.clone();
    let v = app
        .core
        .serialised(&id, move |sb| sb.put_file(&sid, &path, &body))
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "version": v.0 }))))
}

async fn export(State(app): State<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = resolve(&app, id).await?;
    let tar = app
        .core
        .blocking(move |sb| {
            let mut out = Vec::new();
            sb.export_tar(&id, &mut out)?;
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

/// An event of a session's stream: the session is the URL's, so its rows leave it out.
fn event_json(e: &burrow_store::Event) -> Value {
    let mut v = crate::session::event_json(e);
    if let Some(o) = v.as_object_mut() {
        o.remove("session");
    }
    v
}

async fn events(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
) -> ApiResult<Json<Value>> {
    let id = resolve(&app, id).await?;
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let after = q.after.unwrap_or(0);
    let evs = app
        .core
        .blocking(move |sb| sb.log(&id, after, limit))
        .await?;
    let next = evs.last().map(|e| e.seq);
    Ok(Json(json!({
        "events": evs.iter().map(event_json).collect::<Vec<_>>(),
        "next_after": next,
    })))
}

/// How often an idle stream looks for events written by other processes.
const STREAM_POLL: Duration = Duration::from_millis(500);

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
                    .data(event_json(&e).to_string());
                return Some((Ok(ev), (core, id, after, queue)));
            }
            let wake = core.changed.notified();
            let sid = id.clone();
            match core.blocking(move |sb| sb.log(&sid, after, 256)).await {
                Ok(evs) if !evs.is_empty() => queue.extend(evs),
                Ok(_) => {
                    let _ = tokio::time::timeout(STREAM_POLL, wake).await;
                }
                // The session is gone or the store failed: end the stream.
                Err(_) => return None,
            }
        }
    });
    Ok(Sse::new(s).keep_alive(KeepAlive::default()))
}
