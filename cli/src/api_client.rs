//! The HTTP client burrow uses to talk to Anthropic's APIs (the Managed Agents work queue and
//! sessions, the Messages API): rustls, retries with exponential backoff that honour
//! `retry-after`, debug logs of every exchange with secrets left out (only method, path and
//! status are logged, never headers or bodies), and a minimal Server-Sent Events reader.

use std::time::Duration;

use futures::StreamExt;
use reqwest::{Method, RequestBuilder, Response, StatusCode};

/// Errors talking to an API.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{method} {path}: HTTP {status}: {body}")]
    Status {
        method: Method,
        path: String,
        status: StatusCode,
        body: String,
    },
    #[error("{method} {path}: {source}")]
    Transport {
        method: Method,
        path: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{0}")]
    Protocol(String),
}

impl ApiError {
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Attempts of a retried request (the first included).
pub const MAX_ATTEMPTS: u32 = 6;
const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// Whether a status is worth retrying: throttling and server-side trouble.
fn transient(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// `retry-after` in seconds (the API sends integer seconds), or exponential backoff.
fn wait_before(attempt: u32, resp: Option<&Response>) -> Duration {
    if let Some(secs) = resp
        .and_then(|r| r.headers().get("retry-after"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        return Duration::from_secs_f64(secs.min(60.0));
    }
    let exp = BACKOFF_START.saturating_mul(1 << attempt.min(8));
    exp.min(BACKOFF_CAP)
}

/// Sends the request `make` builds, retrying transport errors and transient statuses.
/// Returns the first non-transient response (success or not) as `Ok` only if it is a
/// success; other statuses become [`ApiError::Status`] with the body.
pub async fn send(
    method: Method,
    path: &str,
    make: impl Fn() -> RequestBuilder,
) -> Result<Response, ApiError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = make().send().await;
        match result {
            Ok(resp) => {
                let status = resp.status();
                tracing::debug!(%method, path, %status, attempt, "api exchange");
                if status.is_success() {
                    return Ok(resp);
                }
                if transient(status) && attempt < MAX_ATTEMPTS {
                    let wait = wait_before(attempt, Some(&resp));
                    tracing::warn!(%method, path, %status, ?wait, "transient failure; retrying");
                    tokio::time::sleep(wait).await;
                    continue;
                }
                let body = resp.text().await.unwrap_or_default();
                return Err(ApiError::Status {
                    method,
                    path: path.to_string(),
                    status,
                    body: body.chars().take(2000).collect(),
                });
            }
            Err(e) => {
                tracing::debug!(%method, path, error = %e, attempt, "api transport error");
                if attempt < MAX_ATTEMPTS && !e.is_builder() {
                    tokio::time::sleep(wait_before(attempt, None)).await;
                    continue;
                }
                return Err(ApiError::Transport {
                    method,
                    path: path.to_string(),
                    source: e,
                });
            }
        }
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

/// Reads Server-Sent Events from a streaming response into `tx` until the stream ends or
/// the receiver is dropped.
pub async fn read_sse(
    resp: Response,
    tx: tokio::sync::mpsc::Sender<SseEvent>,
) -> Result<(), ApiError> {
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut cur = SseEvent::default();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::Protocol(format!("event stream broke: {e}")))?;
        buf.extend_from_slice(&chunk);
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !cur.data.is_empty() || !cur.event.is_empty() {
                    let ev = std::mem::take(&mut cur);
                    if tx.send(ev).await.is_err() {
                        return Ok(());
                    }
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // comment / keep-alive
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => cur.event = value.to_string(),
                "data" => {
                    if !cur.data.is_empty() {
                        cur.data.push('\n');
                    }
                    cur.data.push_str(value);
                }
                "id" => cur.id = Some(value.to_string()),
                _ => {}
            }
        }
    }
    Ok(())
}

/// A reqwest client with sane timeouts for API calls (streams set none).
pub fn client() -> Result<reqwest::Client, ApiError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| ApiError::Protocol(format!("cannot build the HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(wait_before(1, None), Duration::from_millis(500));
        assert_eq!(wait_before(20, None), BACKOFF_CAP);
        assert!(transient(StatusCode::TOO_MANY_REQUESTS));
        assert!(transient(StatusCode::BAD_GATEWAY));
        assert!(!transient(StatusCode::PRECONDITION_FAILED));
    }
}
