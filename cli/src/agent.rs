//! `burrow agent`: a Messages API tool loop. Sends the conversation with the client tools
//! `bash_20250124` and `text_editor_20250728`, streams the model's text to the terminal,
//! runs each `tool_use` in the burrow session (one transaction each) and sends the results
//! back, until the model ends its turn or `max_turns` is reached. The conversation is stored
//! in the session's metadata after every turn, so `burrow agent --session S --prompt ...`
//! continues it later from any process.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api_client::{self, ApiError};
use crate::serve::Core;
use burrow_host::session::{Family, Sandbox, SessionError};
use burrow_host::tools::api;

/// Session metadata key holding the conversation (a JSON array of messages).
pub const CONVERSATION_KEY: &str = "agent_conversation";
pub const DEFAULT_MODEL: &str = "claude-sonnet-5-5";

/// Settings of one `burrow agent` run.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub base_url: String,
    pub api_key: String,
    pub model: String,
    pub max_turns: usize,
    pub max_tokens: u32,
    pub system: Option<String>,
    /// The session whose `/memories` the memory tool (`memory_20250818`) works on: the work
    /// session itself (`--memory`) or a long-term one shared by many (`--memory-session`).
    /// None: no memory tool.
    pub memory: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("the model stream ended unexpectedly: {0}")]
    Stream(String),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOutcome {
    /// Model requests made.
    pub turns: usize,
    /// The last stop reason (`end_turn`, `max_tokens`, ...), or `max_turns`.
    pub stop_reason: String,
}

/// One streamed assistant message, accumulated from its events.
#[derive(Default)]
struct Accumulated {
    blocks: BTreeMap<u64, Value>,
    partial_json: BTreeMap<u64, String>,
    stop_reason: Option<String>,
}

impl Accumulated {
    /// Applies one stream event; text deltas are also written to `out`.
    fn apply(&mut self, ev: &Value, out: &mut dyn Write) -> Result<(), AgentError> {
        let index = ev["index"].as_u64().unwrap_or(0);
        match ev["type"].as_str().unwrap_or("") {
            "content_block_start" => {
                self.blocks.insert(index, ev["content_block"].clone());
            }
            "content_block_delta" => {
                let delta = &ev["delta"];
                match delta["type"].as_str().unwrap_or("") {
                    "text_delta" => {
                        let t = delta["text"].as_str().unwrap_or("");
                        let _ = out.write_all(t.as_bytes());
                        let _ = out.flush();
                        if let Some(b) = self.blocks.get_mut(&index) {
                            let cur = b["text"].as_str().unwrap_or("").to_string();
                            b["text"] = Value::String(cur + t);
                        }
                    }
                    "input_json_delta" => self
                        .partial_json
                        .entry(index)
                        .or_default()
                        .push_str(delta["partial_json"].as_str().unwrap_or("")),
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(json) = self.partial_json.remove(&index)
                    && let Some(b) = self.blocks.get_mut(&index)
                {
                    b["input"] = if json.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            AgentError::Stream(format!("tool input is not JSON ({e}): {json}"))
                        })?
                    };
                }
            }
            "message_delta" => {
                if let Some(r) = ev["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(r.to_string());
                }
            }
            "error" => {
                return Err(AgentError::Stream(ev["error"].to_string()));
            }
            _ => {}
        }
        Ok(())
    }

    fn content(self) -> Vec<Value> {
        self.blocks.into_values().collect()
    }
}

/// The stored conversation of a session.
pub fn conversation(sb: &Sandbox, id: &str) -> Result<Vec<Value>, SessionError> {
    Ok(sb
        .store()
        .meta(id)?
        .get(CONVERSATION_KEY)
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default())
}

/// Runs the loop for `prompt` in session `id`, writing the model's text to `out`.
pub async fn run(
    core: Arc<Core>,
    cfg: &AgentConfig,
    id: &str,
    prompt: &str,
    out: &mut (dyn Write + Send),
) -> Result<AgentOutcome, AgentError> {
    let http = api_client::client()?;
    let sid = id.to_string();
    let mut messages = core.blocking(move |sb| conversation(sb, &sid)).await?;
    messages.push(json!({ "role": "user", "content": prompt }));
    let url = format!("{}/v1/messages", cfg.base_url.trim_end_matches('/'));
    let mut turns = 0;
    loop {
        if turns >= cfg.max_turns {
            save(&core, id, &messages).await?;
            return Ok(AgentOutcome {
                turns,
                stop_reason: "max_turns".into(),
            });
        }
        turns += 1;
        let mut tools = api::definitions();
        if cfg.memory.is_some()
            && let (Some(t), Some(m)) = (
                tools.as_array_mut(),
                burrow_host::tools::memory::definitions().as_array(),
            )
        {
            t.extend(m.iter().cloned());
        }
        let mut body = json!({
            "model": cfg.model,
            "max_tokens": cfg.max_tokens,
            "stream": true,
            "tools": tools,
            "messages": messages,
        });
        if let Some(s) = &cfg.system {
            body["system"] = Value::String(s.clone());
        }
        let resp = api_client::send(Method::POST, "/v1/messages", || {
            let req = http
                .post(&url)
                .header("x-api-key", &cfg.api_key)
                .header("anthropic-version", crate::worker::ANTHROPIC_VERSION)
                .header("accept", "text/event-stream");
            // The memory tool is a beta: the API wants its header.
            let req = if cfg.memory.is_some() {
                req.header("anthropic-beta", burrow_host::tools::memory::BETA)
            } else {
                req
            };
            req.json(&body)
        })
        .await?;
        let (tx, mut rx) = mpsc::channel(256);
        let reader = tokio::spawn(api_client::read_sse(resp, tx));
        let mut acc = Accumulated::default();
        while let Some(ev) = rx.recv().await {
            let Ok(v) = serde_json::from_str::<Value>(&ev.data) else {
                continue;
            };
            acc.apply(&v, out)?;
        }
        reader
            .await
            .map_err(|e| AgentError::Stream(e.to_string()))??;
        let stop = acc.stop_reason.clone().unwrap_or_else(|| "end_turn".into());
        let content = acc.content();
        let uses: Vec<Value> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .cloned()
            .collect();
        messages.push(json!({ "role": "assistant", "content": content }));
        if stop != "tool_use" || uses.is_empty() {
            let _ = writeln!(out);
            save(&core, id, &messages).await?;
            return Ok(AgentOutcome {
                turns,
                stop_reason: stop,
            });
        }
        let mut results = Vec::new();
        for u in uses {
            let name = u["name"].as_str().unwrap_or("").to_string();
            let input = if u["input"].is_object() {
                u["input"].clone()
            } else {
                json!({})
            };
            tracing::info!(tool = %name, "running tool call");
            let r = match &cfg.memory {
                Some(mem) if name == burrow_host::tools::memory::MEMORY => {
                    core.call(mem, Family::Memory, &name, input).await?
                }
                _ => core.call(id, Family::Api, &name, input).await?,
            };
            results.push(r.tool_result(&u["id"]));
        }
        messages.push(json!({ "role": "user", "content": results }));
        // Saved after every turn: a crash or Ctrl-C loses at most the turn in flight.
        save(&core, id, &messages).await?;
    }
}

async fn save(core: &Core, id: &str, messages: &[Value]) -> Result<(), SessionError> {
    let text = serde_json::to_string(messages).unwrap_or_else(|_| "[]".into());
    let id = id.to_string();
    core.blocking(move |sb| Ok(sb.store().set_meta(&id, CONVERSATION_KEY, Some(&text))?))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_events_accumulate_into_a_message() {
        let mut acc = Accumulated::default();
        let mut out = Vec::new();
        for ev in [
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "and\": \"ls\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ] {
            acc.apply(&ev, &mut out).unwrap();
        }
        assert_eq!(out, b"Hello");
        assert_eq!(acc.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            acc.content(),
            vec![
                json!({"type": "text", "text": "Hello"}),
                json!({"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}),
            ]
        );
    }
}
