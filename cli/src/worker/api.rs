//! The Managed Agents endpoints the worker calls (work queue, sessions and their events,
//! skills, memory stores), over `api_client`'s retrying reqwest client. Every call carries
//! `anthropic-version` and an `anthropic-beta` (the Managed Agents one unless the endpoint
//! family takes its own, as the memory endpoints do), and a bearer credential the caller
//! chooses: the environment key for the queue, the work item's sessions token for the rest.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::api_client::{self, ApiError};

/// Headers every Managed Agents call carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
/// The memory endpoints' own beta (the SDK sends it in place of the Managed Agents one).
pub const MEMORY_BETA: &str = "agent-memory-2026-07-22";

/// One request's extras.
#[derive(Default)]
pub struct Req<'a> {
    pub query: &'a [(&'a str, String)],
    pub body: Option<&'a Value>,
    pub headers: &'a [(&'a str, &'a str)],
    /// Replaces the Managed Agents beta header.
    pub beta: Option<&'a str>,
}

pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
}

impl Api {
    pub fn new(base: &str) -> Result<Api, ApiError> {
        Ok(Api {
            http: api_client::client()?,
            base: base.to_string(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.trim_end_matches('/'))
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: &str,
        req: Req<'_>,
    ) -> Result<reqwest::Response, ApiError> {
        api_client::send(method.clone(), path, || {
            self.request(method.clone(), path, token, &req)
        })
        .await
    }

    /// One request with the headers every call carries and `req`'s extras.
    fn request(
        &self,
        method: Method,
        path: &str,
        token: &str,
        req: &Req<'_>,
    ) -> reqwest::RequestBuilder {
        let mut b = self
            .http
            .request(method, self.url(path))
            .bearer_auth(token)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("anthropic-beta", req.beta.unwrap_or(MANAGED_AGENTS_BETA))
            .query(req.query);
        for (k, v) in req.headers {
            b = b.header(*k, *v);
        }
        if let Some(body) = req.body {
            b = b.json(body);
        }
        b
    }

    /// A call whose answer is JSON (an empty body reads as `null`).
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        token: &str,
        req: Req<'_>,
    ) -> Result<Value, ApiError> {
        let resp = self.send(method, path, token, req).await?;
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

    /// Every item of a cursor-paged list (`data` + `next_page`, asked for with `page`).
    pub async fn list_all(
        &self,
        path: &str,
        token: &str,
        query: &[(&str, String)],
        beta: Option<&str>,
    ) -> Result<Vec<Value>, ApiError> {
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut q: Vec<(&str, String)> = query.to_vec();
            if let Some(p) = &page {
                q.push(("page", p.clone()));
            }
            let v = self
                .json(
                    Method::GET,
                    path,
                    token,
                    Req {
                        query: &q,
                        beta,
                        ..Req::default()
                    },
                )
                .await?;
            out.extend(v["data"].as_array().cloned().unwrap_or_default());
            match v["next_page"].as_str().filter(|p| !p.is_empty()) {
                Some(p) => page = Some(p.to_string()),
                None => return Ok(out),
            }
        }
    }

    /// One attempt of a request (no retry: the caller has its own policy, as the SDK's
    /// session runner and lease do), bounded by `timeout`. A success's body must be JSON (an
    /// empty one reads as `null`): anything else is a transient failure.
    pub async fn attempt(
        &self,
        method: Method,
        path: &str,
        token: &str,
        req: Req<'_>,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        let resp = self
            .attempt_response(method, path, token, req, timeout)
            .await?;
        let text = tokio::time::timeout(timeout, resp.text())
            .await
            .map_err(|_| Failure::Timeout(timeout))?
            .map_err(|e| Failure::Transport(e.to_string()))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|_| Failure::NotJson)
    }

    /// [`Api::attempt`] that hands back the successful response itself (an event stream).
    pub async fn attempt_response(
        &self,
        method: Method,
        path: &str,
        token: &str,
        req: Req<'_>,
        timeout: Duration,
    ) -> Result<reqwest::Response, Failure> {
        let b = self.request(method.clone(), path, token, &req);
        let resp = tokio::time::timeout(timeout, b.send())
            .await
            .map_err(|_| Failure::Timeout(timeout))?
            .map_err(|e| Failure::Transport(e.to_string()))?;
        let status = resp.status();
        tracing::debug!(%method, path, %status, "api exchange");
        if status.is_success() {
            return Ok(resp);
        }
        let request_id = resp
            .headers()
            .get("request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = tokio::time::timeout(timeout, resp.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Err(Failure::Status(StatusError {
            status: status.as_u16(),
            body: body.chars().take(4000).collect(),
            request_id,
            path: path.split('?').next().unwrap_or(path).to_string(),
        }))
    }
}

/// The per-attempt timeout of the session runner's requests: 15 s doubling to 240 s (the
/// SDK's `request_timeout`).
pub fn request_timeout(attempt: u32) -> Duration {
    Duration::from_secs(15 * (1u64 << attempt.min(4)))
}

/// A uniformly random duration in `[lo, hi)` (retry jitter; not for secrets).
pub fn jitter(lo: Duration, hi: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    let unit = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    lo + (hi.saturating_sub(lo)).mul_f64(unit)
}

/// `min(cap, 2^attempt)` seconds (the SDK's `backoff`), attempts counted from 0.
pub fn backoff(attempt: u32, cap: Duration) -> Duration {
    Duration::from_secs(1u64 << attempt.min(20)).min(cap)
}

/// An HTTP status the API answered with.
#[derive(Debug, Clone)]
pub struct StatusError {
    pub status: u16,
    pub body: String,
    pub request_id: Option<String>,
    pub path: String,
}

impl StatusError {
    /// `error.details.error_code` of the body, if any.
    pub fn error_code(&self) -> Option<String> {
        let v: Value = serde_json::from_str(&self.body).ok()?;
        v["error"]["details"]["error_code"]
            .as_str()
            .map(str::to_string)
    }

    /// The text the SDK gives this error (`APIStatusError.message`): the status, the
    /// body's `error.message` (else the body), then what identifies it.
    pub fn message(&self) -> String {
        let v: Option<Value> = serde_json::from_str(&self.body).ok();
        let err = v.as_ref().map(|v| &v["error"]);
        let text = match err
            .and_then(|e| e["message"].as_str())
            .filter(|m| !m.is_empty())
        {
            Some(m) => m.to_string(),
            None if self.body.is_empty() => "status code (no body)".to_string(),
            None => match &v {
                Some(v) => v.to_string(),
                None => self.body.clone(),
            },
        };
        let mut extra = Vec::new();
        if let Some(code) = self.error_code().filter(|c| !c.is_empty()) {
            extra.push(format!("error_code: {code}"));
        }
        let body_id = v
            .as_ref()
            .and_then(|v| v["request_id"].as_str())
            .map(str::to_string);
        if let Some(id) = self
            .request_id
            .clone()
            .or(body_id)
            .filter(|i| !i.is_empty())
        {
            extra.push(format!("request_id: {id}"));
        }
        if !self.path.is_empty() {
            extra.push(format!("path: {}", self.path));
        }
        if let Some(t) = err
            .and_then(|e| e["type"].as_str())
            .filter(|t| !t.is_empty())
        {
            extra.push(format!("type: {t}"));
        }
        let mut out = format!("{} {text}", self.status);
        if !extra.is_empty() {
            out.push_str(&format!(" ({})", extra.join(", ")));
        }
        out
    }
}

/// Why one attempt failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    #[error("{}", .0.message())]
    Status(StatusError),
    #[error("connection error: {0}")]
    Transport(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the response is not JSON")]
    NotJson,
}

impl Failure {
    pub fn status(&self) -> Option<u16> {
        match self {
            Failure::Status(s) => Some(s.status),
            _ => None,
        }
    }

    /// A client error that retrying will not change (4xx but 408, 409 and 429), as the SDK
    /// classes it; everything else is retried.
    pub fn is_fatal(&self) -> bool {
        self.status()
            .is_some_and(|s| (400..500).contains(&s) && !matches!(s, 408 | 409 | 429))
    }
}

/// The per-item bearer token found in a work item's `secret` (URL-safe base64 of a JSON
/// object with `sessions_token`; padding optional).
pub fn sessions_token(secret: Option<&str>) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages_read_as_the_sdk_writes_them() {
        let e = StatusError {
            status: 400,
            body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"content too long"}}"#.into(),
            request_id: Some("req_1".into()),
            path: "/v1/sessions/sesn_1/events".into(),
        };
        assert_eq!(
            e.message(),
            "400 content too long (request_id: req_1, path: /v1/sessions/sesn_1/events, type: invalid_request_error)"
        );
        let e = StatusError {
            status: 413,
            body: String::new(),
            request_id: None,
            path: "/p".into(),
        };
        assert_eq!(e.message(), "413 status code (no body) (path: /p)");
        assert!(Failure::Status(e).is_fatal());
        for s in [408, 409, 429, 500] {
            let f = Failure::Status(StatusError {
                status: s,
                body: String::new(),
                request_id: None,
                path: String::new(),
            });
            assert!(!f.is_fatal(), "{s}");
        }
        assert_eq!(request_timeout(0), Duration::from_secs(15));
        assert_eq!(request_timeout(9), Duration::from_secs(240));
        assert_eq!(backoff(0, Duration::from_secs(30)), Duration::from_secs(1));
        assert_eq!(backoff(9, Duration::from_secs(30)), Duration::from_secs(30));
        let j = jitter(Duration::from_secs(1), Duration::from_secs(2));
        assert!(j >= Duration::from_secs(1) && j < Duration::from_secs(2));
    }

    #[test]
    fn secrets() {
        use base64::Engine as _;
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sessions_token":"tok_1","other":"x"}"#);
        assert_eq!(sessions_token(Some(&secret)).as_deref(), Some("tok_1"));
        assert_eq!(sessions_token(Some("!!")), None);
        assert_eq!(sessions_token(None), None);
    }
}
