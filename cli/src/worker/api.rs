//! The Managed Agents endpoints the worker calls (work queue, sessions and their events,
//! skills, memory stores), over `api_client`'s retrying reqwest client. Every call carries
//! `anthropic-version` and an `anthropic-beta` (the Managed Agents one unless the endpoint
//! family takes its own, as the memory endpoints do), and a bearer credential the caller
//! chooses: the environment key for the queue, the work item's sessions token for the rest.

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
        let url = self.url(path);
        api_client::send(method.clone(), path, || {
            let mut b = self
                .http
                .request(method.clone(), &url)
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
        })
        .await
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

    /// The events of a Managed Agents session so far.
    pub async fn history(&self, token: &str, session: &str) -> Result<Vec<Value>, ApiError> {
        self.list_all(
            &format!("/v1/sessions/{session}/events"),
            token,
            &[("limit", "1000".to_string())],
            None,
        )
        .await
    }

    /// Posts events to a session.
    pub async fn post_events(
        &self,
        token: &str,
        session: &str,
        events: Value,
    ) -> Result<(), ApiError> {
        let body = serde_json::json!({ "events": events });
        self.send(
            Method::POST,
            &format!("/v1/sessions/{session}/events"),
            token,
            Req {
                body: Some(&body),
                ..Req::default()
            },
        )
        .await
        .map(|_| ())
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
    fn secrets() {
        use base64::Engine as _;
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sessions_token":"tok_1","other":"x"}"#);
        assert_eq!(sessions_token(Some(&secret)).as_deref(), Some("tok_1"));
        assert_eq!(sessions_token(Some("!!")), None);
        assert_eq!(sessions_token(None), None);
    }
}
