//! The permission gate and the idle clock of one served session: which tool calls run, which
//! wait for the user's `user.tool_confirmation`, which are denied, and when the session has
//! been idle long enough to stop serving it. Pure state (no I/O), so every rule is unit
//! tested; the rules are the Anthropic SDK's `SessionToolRunner` (`_route_tool_event`,
//! `_note_confirmation`, `_apply_verdict`, `_IdleClock`), failing closed:
//!
//! - `evaluated_permission` `allow` or absent: run.
//! - `deny`: never run, post nothing, mark it answered (the denial resolves it server-side).
//! - `ask`, or any value burrow does not know: hold until a `user.tool_confirmation` with the
//!   same `tool_use_id`; only the verdict `allow` releases it, anything else denies it.
//! - A verdict that arrives before its call is remembered and applied when the call arrives.
//! - A held (or released but still running) call pauses the idle clock.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tokio::time::Instant;

/// Events that neither start nor stop activity (they leave the idle clock as it is).
pub const NEUTRAL: [&str; 2] = ["user.tool_confirmation", "session.thread_status_terminated"];

/// Whether an event ends the agent's turn (an idle whose stop reason is not
/// `requires_action`).
pub fn ends_turn(ev: &Value) -> bool {
    ev["type"] == "session.status_idle" && ev["stop_reason"]["type"] != "requires_action"
}

/// Whether an event ends the session.
pub fn terminal(ev: &Value) -> bool {
    matches!(
        ev["type"].as_str(),
        Some("session.status_terminated" | "session.deleted")
    )
}

fn neutral(ev: &Value) -> bool {
    ev["type"].as_str().is_some_and(|t| NEUTRAL.contains(&t))
}

/// Whether an event is a tool call a worker may answer.
pub fn is_tool_call(ev: &Value) -> bool {
    matches!(
        ev["type"].as_str(),
        Some("agent.tool_use" | "agent.custom_tool_use")
    )
}

/// Who denied a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeniedBy {
    /// The server evaluated the permission to `deny`.
    Server,
    /// The user's `user.tool_confirmation` said this (`deny`, or a verdict burrow does not
    /// know, which fails closed).
    User(String),
}

/// What to do with a tool call now.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run it. `confirmed` when a user's `allow` released it (the call then holds the idle
    /// clock until [`Gate::finished`]).
    Run { ev: Value, confirmed: bool },
    /// Never run it, post nothing.
    Deny { ev: Value, by: DeniedBy },
    /// Wait for the user's verdict (`permission` is what the server evaluated).
    Hold { ev: Value, permission: String },
}

/// The gate's and the idle clock's state for one session, across stream reconnects.
#[derive(Debug, Default)]
pub struct Gate {
    /// Tool-call events already routed from the stream or a reconcile (by event id).
    seen: HashSet<String>,
    /// Calls whose result landed (or that a denial resolved).
    answered: HashSet<String>,
    /// Every verdict seen, by `tool_use_id`.
    confirmations: HashMap<String, String>,
    /// Calls waiting for their verdict.
    held: HashMap<String, Value>,
    /// Threads that accept no more results.
    terminated_threads: HashSet<String>,
    pub clock: IdleClock,
}

fn id_of(ev: &Value) -> &str {
    ev["id"].as_str().unwrap_or("")
}

/// The id a result event answers (`tool_use_id` or `custom_tool_use_id`).
fn answered_id(ev: &Value) -> Option<&str> {
    match ev["type"].as_str()? {
        "user.tool_result" => ev["tool_use_id"].as_str(),
        "user.custom_tool_result" => ev["custom_tool_use_id"].as_str(),
        _ => None,
    }
}

impl Gate {
    pub fn is_answered(&self, id: &str) -> bool {
        self.answered.contains(id)
    }

    pub fn mark_answered(&mut self, id: &str) {
        self.answered.insert(id.to_string());
    }

    /// How many calls wait for a verdict.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    fn in_terminated_thread(&self, ev: &Value) -> bool {
        ev["session_thread_id"]
            .as_str()
            .is_some_and(|t| self.terminated_threads.contains(t))
    }

    /// Routes a tool call by its evaluated permission and any verdict already known.
    pub fn route(&mut self, ev: &Value) -> Option<Decision> {
        if self.in_terminated_thread(ev) {
            return None;
        }
        let id = id_of(ev).to_string();
        let permission = ev.get("evaluated_permission").and_then(Value::as_str);
        if permission == Some("deny") {
            // Never run, even if a stray allow exists for the id.
            self.answered.insert(id);
            if self.held.remove(id_of(ev)).is_some() {
                self.clock.release();
            }
            return Some(Decision::Deny {
                ev: ev.clone(),
                by: DeniedBy::Server,
            });
        }
        match self.confirmations.get(&id).cloned() {
            None => match permission {
                None | Some("allow") => Some(Decision::Run {
                    ev: ev.clone(),
                    confirmed: false,
                }),
                // "ask", or a value this worker does not know: wait for the user.
                Some(other) => {
                    if self.held.contains_key(&id) {
                        return None; // already held (a reconcile re-routes it)
                    }
                    self.held.insert(id, ev.clone());
                    self.clock.hold();
                    Some(Decision::Hold {
                        ev: ev.clone(),
                        permission: other.to_string(),
                    })
                }
            },
            Some(verdict) => Some(self.apply_verdict(ev, &verdict)),
        }
    }

    /// A `user.tool_confirmation` arrived: remember it and release the call it gates.
    pub fn confirm(&mut self, ev: &Value) -> Option<Decision> {
        let id = ev["tool_use_id"].as_str()?.to_string();
        let verdict = ev["result"].as_str().unwrap_or("").to_string();
        self.confirmations.insert(id.clone(), verdict.clone());
        let held = self.held.get(&id).cloned()?;
        Some(self.apply_verdict(&held, &verdict))
    }

    fn apply_verdict(&mut self, ev: &Value, verdict: &str) -> Decision {
        let was_held = self.held.remove(id_of(ev)).is_some();
        if verdict == "allow" {
            // The clock stays held until the released call has run.
            if !was_held {
                self.clock.hold();
            }
            Decision::Run {
                ev: ev.clone(),
                confirmed: true,
            }
        } else {
            if was_held {
                self.clock.release();
            }
            self.answered.insert(id_of(ev).to_string());
            Decision::Deny {
                ev: ev.clone(),
                by: DeniedBy::User(verdict.to_string()),
            }
        }
    }

    /// A released (confirmed) call is done with: drop its hold on the idle clock. `owned`:
    /// false when no handler here owns the tool, so its owner still has to answer and the
    /// deferred countdown is dropped instead of started.
    pub fn finished(&mut self, owned: bool) {
        if !owned {
            self.clock.disarm();
        }
        self.clock.release();
    }

    /// A live event from the stream: updates the clock and the bookkeeping. Returns the
    /// decisions it causes (a tool call routed, a held call released or denied).
    pub fn on_event(&mut self, ev: &Value) -> Vec<Decision> {
        self.clock.note_event(ev);
        let mut out = Vec::new();
        if is_tool_call(ev) {
            if self.seen.insert(id_of(ev).to_string()) {
                out.extend(self.route(ev));
            }
        } else if let Some(id) = answered_id(ev) {
            self.answered.insert(id.to_string());
        } else if ev["type"] == "user.tool_confirmation" {
            out.extend(self.confirm(ev));
        } else if ev["type"] == "session.thread_status_terminated" {
            if let Some(t) = ev["session_thread_id"].as_str() {
                self.terminated_threads.insert(t.to_string());
            }
            self.release_terminated_holds();
        }
        out
    }

    /// Reconciles with the session's whole event history (read after the stream was
    /// opened): two passes, so a call answered or confirmed later in the history is routed
    /// with that known. Returns the decisions for the unanswered calls, and whether the
    /// history shows the session ended.
    pub fn reconcile(&mut self, history: &[Value]) -> (Vec<Decision>, bool) {
        let mut pending = Vec::new();
        let mut last_ended_turn = false;
        for ev in history {
            if is_tool_call(ev) {
                self.seen.insert(id_of(ev).to_string());
                pending.push(ev);
            } else if let Some(id) = answered_id(ev) {
                self.answered.insert(id.to_string());
            } else if ev["type"] == "user.tool_confirmation" {
                if let Some(id) = ev["tool_use_id"].as_str()
                    && !self.answered.contains(id)
                {
                    let verdict = ev["result"].as_str().unwrap_or("").to_string();
                    self.confirmations.insert(id.to_string(), verdict);
                }
            } else if ev["type"] == "session.thread_status_terminated"
                && let Some(t) = ev["session_thread_id"].as_str()
            {
                self.terminated_threads.insert(t.to_string());
            }
            if terminal(ev) {
                return (Vec::new(), true);
            }
            if !neutral(ev) {
                last_ended_turn = ends_turn(ev);
            }
        }
        self.release_terminated_holds();
        let unanswered: Vec<&Value> = pending
            .into_iter()
            .filter(|ev| !self.answered.contains(id_of(ev)))
            .collect();
        self.clock.disarm();
        let mut out = Vec::new();
        for ev in &unanswered {
            out.extend(self.route(ev));
        }
        // A held call whose tool_use fell outside the history still gets its verdict.
        let ready: Vec<(Value, String)> = self
            .held
            .values()
            .filter_map(|ev| {
                self.confirmations
                    .get(id_of(ev))
                    .map(|v| (ev.clone(), v.clone()))
            })
            .collect();
        for (ev, verdict) in ready {
            out.push(self.apply_verdict(&ev, &verdict));
        }
        // Outstanding work keeps the session from counting as idle: calls that run now
        // (not gated), not the gated ones (the clock holds those itself).
        let outstanding = out.iter().any(|d| {
            matches!(
                d,
                Decision::Run {
                    confirmed: false,
                    ..
                }
            )
        });
        if last_ended_turn && !outstanding {
            self.clock.arm();
        }
        (out, false)
    }

    /// Held calls of threads that terminated are dropped: the API takes no result for them.
    fn release_terminated_holds(&mut self) {
        let gone: Vec<String> = self
            .held
            .iter()
            .filter(|(_, ev)| self.in_terminated_thread(ev))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.held.remove(&id);
            self.clock.release();
        }
    }
}

/// How long the session has been idle since its turn ended, paused while gated calls are
/// held or running (the SDK's `_IdleClock`).
#[derive(Debug, Default)]
pub struct IdleClock {
    turn_ended_at: Option<Instant>,
    holds: usize,
    arm_deferred: bool,
}

impl IdleClock {
    /// Arms on an idle that ends the turn, disarms on any other event that is not neutral.
    pub fn note_event(&mut self, ev: &Value) {
        if neutral(ev) {
            return;
        }
        if ends_turn(ev) {
            self.arm();
        } else {
            self.disarm();
        }
    }

    pub fn arm(&mut self) {
        if self.holds > 0 {
            self.arm_deferred = true;
            return;
        }
        self.turn_ended_at = Some(Instant::now());
    }

    pub fn disarm(&mut self) {
        self.arm_deferred = false;
        self.turn_ended_at = None;
    }

    pub fn hold(&mut self) {
        self.holds += 1;
        if self.turn_ended_at.take().is_some() {
            self.arm_deferred = true;
        }
    }

    pub fn release(&mut self) {
        self.holds = self.holds.saturating_sub(1);
        if self.holds == 0 && self.arm_deferred {
            self.arm_deferred = false;
            self.arm();
        }
    }

    /// When the idle countdown started, if it runs.
    pub fn idle_since(&self) -> Option<Instant> {
        self.turn_ended_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, permission: Option<&str>) -> Value {
        let mut ev = json!({"type": "agent.tool_use", "id": id, "name": "bash", "input": {}});
        if let Some(p) = permission {
            ev["evaluated_permission"] = json!(p);
        }
        ev
    }

    fn verdict(id: &str, result: &str) -> Value {
        json!({"type": "user.tool_confirmation", "tool_use_id": id, "result": result})
    }

    fn idle() -> Value {
        json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})
    }

    fn kinds(ds: &[Decision]) -> Vec<&'static str> {
        ds.iter()
            .map(|d| match d {
                Decision::Run {
                    confirmed: true, ..
                } => "run-confirmed",
                Decision::Run { .. } => "run",
                Decision::Deny {
                    by: DeniedBy::Server,
                    ..
                } => "deny-server",
                Decision::Deny { .. } => "deny-user",
                Decision::Hold { .. } => "hold",
            })
            .collect()
    }

    #[test]
    fn permissions_route_fail_closed() {
        let mut g = Gate::default();
        assert_eq!(kinds(&g.on_event(&call("a", None))), ["run"]);
        assert_eq!(kinds(&g.on_event(&call("b", Some("allow")))), ["run"]);
        assert_eq!(
            kinds(&g.on_event(&call("c", Some("deny")))),
            ["deny-server"]
        );
        assert!(g.is_answered("c"));
        assert_eq!(kinds(&g.on_event(&call("d", Some("ask")))), ["hold"]);
        assert_eq!(kinds(&g.on_event(&call("e", Some("sometimes")))), ["hold"]);
        // The same event again (stream and reconcile overlap) is not routed twice.
        assert!(g.on_event(&call("d", Some("ask"))).is_empty());
        assert_eq!(
            kinds(&g.on_event(&verdict("d", "allow"))),
            ["run-confirmed"]
        );
        assert_eq!(kinds(&g.on_event(&verdict("e", "maybe"))), ["deny-user"]);
        assert_eq!(g.held_count(), 0);
        // A server deny wins over a stray allow.
        g.on_event(&verdict("f", "allow"));
        assert_eq!(
            kinds(&g.on_event(&call("f", Some("deny")))),
            ["deny-server"]
        );
    }

    #[test]
    fn verdict_before_call_and_reconcile() {
        let mut g = Gate::default();
        assert!(g.on_event(&verdict("x", "deny")).is_empty());
        assert_eq!(kinds(&g.on_event(&call("x", Some("ask")))), ["deny-user"]);

        // Reconcile after a restart: verdicts later in the history apply to earlier calls;
        // answered calls are left alone; an unconfirmed ask is held.
        let mut g = Gate::default();
        let history = [
            call("1", Some("ask")),
            call("2", Some("ask")),
            call("3", None),
            json!({"type": "user.tool_result", "tool_use_id": "3"}),
            verdict("1", "allow"),
            call("4", Some("ask")),
            verdict("4", "deny"),
        ];
        let (ds, ended) = g.reconcile(&history);
        assert!(!ended);
        assert_eq!(kinds(&ds), ["run-confirmed", "hold", "deny-user"]);
        // A second reconcile (reconnect) keeps the hold without routing it again.
        let (ds, _) = g.reconcile(&history);
        assert_eq!(kinds(&ds), ["run-confirmed"]);
        assert_eq!(g.held_count(), 1);
    }

    #[test]
    fn held_calls_pause_the_idle_clock() {
        let mut g = Gate::default();
        g.on_event(&call("a", Some("ask")));
        g.on_event(&idle());
        assert!(g.clock.idle_since().is_none(), "held: no idle countdown");
        let ds = g.on_event(&verdict("a", "allow"));
        assert_eq!(kinds(&ds), ["run-confirmed"]);
        assert!(g.clock.idle_since().is_none(), "running: still none");
        g.finished(true);
        assert!(
            g.clock.idle_since().is_some(),
            "done: the deferred idle starts"
        );
        // requires_action is not an idle stop.
        let mut g = Gate::default();
        g.on_event(
            &json!({"type": "session.status_idle", "stop_reason": {"type": "requires_action"}}),
        );
        assert!(g.clock.idle_since().is_none());
        // A denial of a held call releases the clock.
        let mut g = Gate::default();
        g.on_event(&call("a", Some("ask")));
        g.on_event(&idle());
        g.on_event(&verdict("a", "deny"));
        assert!(g.clock.idle_since().is_some());
    }

    #[test]
    fn terminated_threads_drop_their_calls() {
        let mut g = Gate::default();
        let mut ev = call("t", Some("ask"));
        ev["session_thread_id"] = json!("th_1");
        assert_eq!(kinds(&g.on_event(&ev)), ["hold"]);
        g.on_event(
            &json!({"type": "session.thread_status_terminated", "session_thread_id": "th_1"}),
        );
        assert_eq!(g.held_count(), 0);
        let mut ev2 = call("t2", None);
        ev2["session_thread_id"] = json!("th_1");
        assert!(g.on_event(&ev2).is_empty());
    }
}
