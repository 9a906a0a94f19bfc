//! What a Managed Agents session is waiting on, read from its events: which tool calls the
//! worker may run now, which wait for the user's confirmation, which are denied, and when the
//! session has been idle since its turn ended. Pure state (no I/O), so every rule is unit
//! tested. The rules are the Anthropic SDK 2.17.0's `SessionView` and `TrackedCall`
//! (`lib/tools/_beta_session_runner.py`), failing closed:
//!
//! - A call runs only once the session waits on it: at once when its event carries an
//!   `evaluated_permission` or names a subagent thread, otherwise (custom tools, calls
//!   without a permission) once a `requires_action` idle lists it. A turn-ending idle stops
//!   the session waiting on every call (after `retries_exhausted` it keeps waiting on the
//!   calls it waited on).
//! - `evaluated_permission` `deny`, or a first `user.tool_confirmation` that is not `allow`:
//!   never run, post nothing. `ask`, or a value burrow does not know: wait for the first
//!   confirmation. Later confirmations are ignored.
//! - Session threads (subagents): a thread's idle or termination that does not list a call
//!   of that thread ends the wait on it; a terminated thread's calls are never run, posted
//!   or reported (late input can make it run again); the calls of one thread run in the
//!   order of their events, a later one held while an earlier one the worker owns is
//!   unanswered (an idle that lists only the later one ends that wait; a thread that sent
//!   no status is never held).
//! - Events re-delivered (the stream after the history, a reconnect) change nothing; the
//!   time an event was first read survives a reconnect, so the idle countdown does too.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tokio::time::Instant;

/// A confirmation's verdict (anything but `allow` reads as deny).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
}

/// One tool call the view tracks. `event` is None for a placeholder: a confirmation or an
/// idle that named the call arrived before the call.
#[derive(Debug, Clone, Default)]
struct Tracked {
    id: String,
    event: Option<Value>,
    /// Whether the session waits on the call (made or listed since it last ended a turn);
    /// None until that shows.
    session_waits: Option<bool>,
    /// How many events had been read when an idle last listed the call.
    listed_at: usize,
    /// Set on a subagent's call when its thread's latest idle or termination did not list it.
    thread_stop_reason: Option<String>,
    /// The first confirmation's verdict, and its text as the user sent it.
    confirmation: Option<(Verdict, String)>,
}

/// The `evaluated_permission` of a call event (a non-string value reads as one burrow does
/// not know, so it waits for a confirmation).
pub fn permission(ev: &Value) -> Option<String> {
    match ev.get("evaluated_permission") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// The session thread of an event (None: the primary thread, which names none).
pub fn thread_of(ev: &Value) -> Option<&str> {
    ev.get("session_thread_id")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
}

pub fn id_of(ev: &Value) -> &str {
    ev["id"].as_str().unwrap_or("")
}

impl Tracked {
    fn thread(&self) -> Option<&str> {
        self.event.as_ref().and_then(thread_of)
    }

    fn permission(&self) -> Option<String> {
        self.event.as_ref().and_then(permission)
    }

    fn is_waited_on(&self) -> bool {
        self.session_waits == Some(true) && self.thread_stop_reason.is_none()
    }

    fn is_denied(&self) -> bool {
        self.event.is_some()
            && (self.permission().as_deref() == Some("deny")
                || matches!(self.confirmation, Some((Verdict::Deny, _))))
    }

    fn is_unconfirmed(&self) -> bool {
        self.confirmation.is_none()
            && !matches!(self.permission().as_deref(), None | Some("allow" | "deny"))
    }

    /// Whether the session could still hold back a later call's result until this one has
    /// its own (an earlier call of the same thread that the worker owns).
    fn is_unanswered(&self, thread: Option<&str>, owns: &dyn Fn(&Value) -> bool) -> bool {
        let Some(ev) = &self.event else {
            return false;
        };
        if thread_of(ev) != thread || !owns(ev) {
            return false;
        }
        !self.is_denied()
            && (self.session_waits.is_none() || (self.is_waited_on() && self.is_unconfirmed()))
    }
}

/// What the worker does with a call now (see [`View::plan`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// It waits for the user's confirmation (reported once).
    Hold(Value),
    /// It is denied (`by_server`: its evaluated permission; else the user's verdict text).
    Deny {
        ev: Value,
        by_server: bool,
        verdict: String,
    },
    /// The session waits on it, but no handler here owns the tool: left to its owner.
    Unowned(Value),
    /// Run it (`confirmed`: a user's `allow` released it).
    Start { ev: Value, confirmed: bool },
}

/// The session as its events show it.
#[derive(Debug, Default)]
pub struct View {
    /// The thread of the first thread status read.
    pub primary_thread_id: Option<String>,
    /// When the idle that ended the turn (or a later idle or termination of a thread) was
    /// first read; None unless the newest session status is an idle that ends the turn.
    pub idle_since: Option<Instant>,
    /// The session was terminated or deleted.
    pub ended: bool,
    /// For each thread that sent a status, whether its newest one is a termination.
    terminated: HashMap<String, bool>,
    /// First-read times carried over from the view before (a reconnect).
    seen_before: HashMap<String, Instant>,
    /// First-read time of every event applied.
    seen_at: HashMap<String, Instant>,
    /// Events applied (ids or not).
    read: usize,
    /// Calls in the order of their events.
    calls: Vec<Tracked>,
}

impl View {
    /// A fresh view for a reconnect: only the first-read times carry over.
    pub fn without_events(&self) -> View {
        let mut seen_before = self.seen_before.clone();
        seen_before.extend(self.seen_at.iter().map(|(k, v)| (k.clone(), *v)));
        View {
            seen_before,
            ..View::default()
        }
    }

    fn call(&self, id: &str) -> Option<&Tracked> {
        self.calls.iter().find(|c| c.id == id)
    }

    /// Whether the view tracks call `id` (a call leaves it when its result is read).
    pub fn has_call(&self, id: &str) -> bool {
        self.call(id).is_some()
    }

    /// Whether the session waits on call `id`.
    pub fn is_waiting_on(&self, id: &str) -> bool {
        self.call(id).is_some_and(Tracked::is_waited_on)
    }

    /// Whether the session no longer takes a result for call `id`: its result was read, or
    /// its thread went idle or terminated without listing it.
    pub fn is_resolved(&self, id: &str) -> bool {
        self.call(id).is_none_or(|c| {
            c.thread_stop_reason
                .as_deref()
                .is_some_and(|r| r != "retries_exhausted")
        })
    }

    /// Whether `thread`'s newest status is a termination (the primary thread never is).
    pub fn has_terminated(&self, thread: Option<&str>) -> bool {
        thread.is_some_and(|t| self.terminated.get(t).copied().unwrap_or(false))
    }

    /// The threads whose newest status is a termination.
    pub fn terminated_threads(&self) -> impl Iterator<Item = &str> {
        self.terminated
            .iter()
            .filter(|(_, t)| **t)
            .map(|(k, _)| k.as_str())
    }

    /// Whether `ev` must wait for an earlier call of its thread.
    pub fn is_behind_unanswered_call(&self, ev: &Value, owns: &dyn Fn(&Value) -> bool) -> bool {
        let thread = thread_of(ev);
        // A thread that sends no status never shows that an earlier call stopped waiting.
        if let Some(t) = thread
            && !self.terminated.contains_key(t)
        {
            return false;
        }
        let id = id_of(ev);
        let Some(pos) = self.calls.iter().position(|c| c.id == id) else {
            return false;
        };
        let me = &self.calls[pos];
        self.calls[..pos]
            .iter()
            .any(|earlier| earlier.is_unanswered(thread, owns) && earlier.listed_at >= me.listed_at)
    }

    /// The decision pass (the SDK's `_act_on_view`), oldest call first: calls newly waiting
    /// for a confirmation, denied and unowned calls to report, and calls to start given the
    /// threads already running a call (one per thread, at most `limit` threads). Calls in
    /// `handled` were run or reported already; `held` were reported as waiting; nothing
    /// starts while `connected` is false.
    pub fn plan(
        &self,
        handled: &HashSet<String>,
        held: &HashSet<String>,
        running: &HashSet<Option<String>>,
        limit: Option<usize>,
        connected: bool,
        owns: &dyn Fn(&Value) -> bool,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        for c in &self.calls {
            if let Some(ev) = &c.event
                && c.is_waited_on()
                && c.is_unconfirmed()
                && !held.contains(&c.id)
            {
                steps.push(Step::Hold(ev.clone()));
            }
        }
        let mut running = running.clone();
        for c in &self.calls {
            let Some(ev) = &c.event else { continue };
            if self.has_terminated(thread_of(ev)) || handled.contains(&c.id) {
                continue;
            }
            if c.is_denied() {
                let by_server = c.permission().as_deref() == Some("deny");
                let verdict = match &c.confirmation {
                    Some((_, text)) if !by_server => text.clone(),
                    _ => String::new(),
                };
                steps.push(Step::Deny {
                    ev: ev.clone(),
                    by_server,
                    verdict,
                });
                continue;
            }
            if !c.is_waited_on() || c.is_unconfirmed() {
                continue;
            }
            if !owns(ev) {
                steps.push(Step::Unowned(ev.clone()));
                continue;
            }
            if !connected || self.is_behind_unanswered_call(ev, owns) {
                continue;
            }
            let thread = thread_of(ev).map(str::to_string);
            if running.contains(&thread) || limit.is_some_and(|l| running.len() >= l) {
                continue;
            }
            running.insert(thread);
            steps.push(Step::Start {
                ev: ev.clone(),
                confirmed: matches!(c.confirmation, Some((Verdict::Allow, _))),
            });
        }
        steps
    }

    /// Applies one event (from the history or the stream).
    pub fn apply(&mut self, ev: &Value) {
        let kind = ev["type"].as_str().unwrap_or("");
        if matches!(kind, "event_start" | "event_delta") {
            return;
        }
        let seen = match ev["id"].as_str() {
            Some(id) => {
                if self.seen_at.contains_key(id) {
                    return;
                }
                let at = self
                    .seen_before
                    .get(id)
                    .copied()
                    .unwrap_or_else(Instant::now);
                self.seen_at.insert(id.to_string(), at);
                at
            }
            None => Instant::now(),
        };
        self.read += 1;
        match kind {
            "agent.tool_use" | "agent.custom_tool_use" => self.apply_call(ev),
            "user.tool_result" | "agent.tool_result" => {
                self.apply_result(ev["tool_use_id"].as_str().unwrap_or(""))
            }
            "user.custom_tool_result" => {
                self.apply_result(ev["custom_tool_use_id"].as_str().unwrap_or(""))
            }
            "user.tool_confirmation" => {
                let text = ev["result"].as_str().unwrap_or("").to_string();
                let verdict = if text == "allow" {
                    Verdict::Allow
                } else {
                    Verdict::Deny
                };
                let id = ev["tool_use_id"].as_str().unwrap_or("").to_string();
                for i in self.calls_among(&[id]) {
                    let c = &mut self.calls[i];
                    if c.confirmation.is_none() {
                        c.confirmation = Some((verdict, text.clone()));
                    }
                }
            }
            "session.status_terminated" | "session.deleted" => self.ended = true,
            "session.status_idle" => self.apply_session_idle(ev, seen),
            "session.thread_status_running" | "session.thread_status_rescheduled" => {
                self.apply_thread_status(thread_of(ev), false)
            }
            "session.thread_status_idle" | "session.thread_status_terminated" => {
                let terminated = kind == "session.thread_status_terminated";
                self.apply_thread_status(thread_of(ev), terminated);
                self.apply_thread_idle_or_terminated(ev, seen, terminated);
            }
            k if k.starts_with("session.status_") => self.idle_since = None,
            _ => {}
        }
    }

    fn apply_call(&mut self, ev: &Value) {
        let id = id_of(ev).to_string();
        // Moved to the end, so the calls stay in the order of their events.
        let mut c = match self.calls.iter().position(|c| c.id == id) {
            Some(i) => self.calls.remove(i),
            None => Tracked {
                id,
                ..Tracked::default()
            },
        };
        c.event = Some(ev.clone());
        // A call without a permission (a custom tool's) runs only once an idle lists it:
        // the server never lists one it refused.
        if thread_of(ev).is_some() || permission(ev).is_some_and(|p| !p.is_empty()) {
            c.session_waits = Some(true);
        }
        self.calls.push(c);
    }

    fn apply_result(&mut self, id: &str) {
        // A denied call is kept: it is still reported when its result is read with the
        // denial.
        if let Some(i) = self.calls.iter().position(|c| c.id == id)
            && !self.calls[i].is_denied()
        {
            self.calls.remove(i);
        }
    }

    fn apply_session_idle(&mut self, ev: &Value, seen: Instant) {
        let reason = ev["stop_reason"]["type"].as_str().unwrap_or("");
        if reason == "requires_action" {
            self.idle_since = None;
            self.apply_listed(&ev["stop_reason"]["event_ids"]);
            return;
        }
        self.idle_since = Some(seen);
        // After `retries_exhausted` the session still takes the results of the calls it
        // waited on.
        for c in &mut self.calls {
            c.session_waits = Some(reason == "retries_exhausted" && c.session_waits == Some(true));
        }
    }

    fn apply_thread_status(&mut self, thread: Option<&str>, terminated: bool) {
        let Some(t) = thread else { return };
        if self.primary_thread_id.is_none() {
            self.primary_thread_id = Some(t.to_string());
        }
        self.terminated.insert(t.to_string(), terminated);
    }

    fn apply_thread_idle_or_terminated(&mut self, ev: &Value, seen: Instant, terminated: bool) {
        // This can make the primary thread run again, so the countdown starts over.
        if let Some(since) = self.idle_since {
            self.idle_since = Some(since.max(seen));
        }
        let thread = thread_of(ev);
        // A subagent's results stay on its own thread, so its idle is the sign.
        let reason = if terminated {
            "session.thread_status_terminated".to_string()
        } else {
            ev["stop_reason"]["type"].as_str().unwrap_or("").to_string()
        };
        if thread.is_some() {
            for c in &mut self.calls {
                if c.event.is_some() && c.thread() == thread {
                    c.thread_stop_reason = Some(reason.clone());
                }
            }
        }
        if !terminated && ev["stop_reason"]["type"] == "requires_action" {
            for i in self.apply_listed(&ev["stop_reason"]["event_ids"]) {
                self.calls[i].thread_stop_reason = None;
            }
        }
    }

    /// Marks the calls an idle lists as waited on; returns their indices.
    fn apply_listed(&mut self, ids: &Value) -> Vec<usize> {
        let ids: Vec<String> = ids
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let found = self.calls_among(&ids);
        for &i in &found {
            self.calls[i].session_waits = Some(true);
            self.calls[i].listed_at = self.read;
        }
        found
    }

    /// The calls with these ids; an id not read yet can be that of a later call, so it
    /// gets a placeholder.
    fn calls_among(&mut self, ids: &[String]) -> Vec<usize> {
        let mut out = Vec::new();
        for id in ids {
            match self.calls.iter().position(|c| &c.id == id) {
                Some(i) => out.push(i),
                None if !self.seen_at.contains_key(id) => {
                    self.calls.push(Tracked {
                        id: id.clone(),
                        ..Tracked::default()
                    });
                    out.push(self.calls.len() - 1);
                }
                None => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tu(id: &str, name: &str, thread: Option<&str>, perm: Option<&str>) -> Value {
        let mut ev = json!({"type": "agent.tool_use", "id": id, "name": name, "input": {}});
        if let Some(t) = thread {
            ev["session_thread_id"] = json!(t);
        }
        if let Some(p) = perm {
            ev["evaluated_permission"] = json!(p);
        }
        ev
    }

    fn custom(id: &str, name: &str) -> Value {
        json!({"type": "agent.custom_tool_use", "id": id, "name": name, "input": {}})
    }

    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn ev(v: Value) -> Value {
        let mut v = v;
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        v["id"] = json!(format!("sevt_{n}"));
        v
    }

    fn idle(reason: &str, ids: &[&str]) -> Value {
        ev(json!({"type": "session.status_idle",
                  "stop_reason": {"type": reason, "event_ids": ids}}))
    }

    fn thread_idle(t: &str, reason: &str, ids: &[&str]) -> Value {
        ev(
            json!({"type": "session.thread_status_idle", "session_thread_id": t,
                  "stop_reason": {"type": reason, "event_ids": ids}}),
        )
    }

    fn thread_status(kind: &str, t: &str) -> Value {
        ev(json!({"type": format!("session.thread_status_{kind}"), "session_thread_id": t}))
    }

    fn confirm(id: &str, result: &str) -> Value {
        ev(json!({"type": "user.tool_confirmation", "tool_use_id": id, "result": result}))
    }

    fn result(id: &str) -> Value {
        ev(json!({"type": "user.tool_result", "tool_use_id": id}))
    }

    /// Tools a..e and custom tool `a` are owned; anything else is not.
    fn owns(ev: &Value) -> bool {
        matches!(
            ev["name"].as_str(),
            Some("a" | "b" | "c" | "d" | "e" | "slow")
        )
    }

    /// A scheduler over a view: applies events, then runs the plan as the worker does
    /// (starting marks handled and running; `finish` ends a call).
    #[derive(Default)]
    struct Sim {
        view: View,
        handled: HashSet<String>,
        held: HashSet<String>,
        running: HashMap<Option<String>, String>,
        limit: Option<usize>,
        log: Vec<String>,
    }

    impl Sim {
        fn new(limit: Option<usize>) -> Sim {
            Sim {
                limit,
                ..Sim::default()
            }
        }

        fn feed(&mut self, events: &[Value]) {
            for e in events {
                self.view.apply(e);
            }
            self.act();
        }

        fn act(&mut self) {
            let running: HashSet<Option<String>> = self.running.keys().cloned().collect();
            for s in self
                .view
                .plan(&self.handled, &self.held, &running, self.limit, true, &owns)
            {
                match s {
                    Step::Hold(ev) => {
                        self.held.insert(id_of(&ev).to_string());
                        self.log.push(format!("hold {}", id_of(&ev)));
                    }
                    Step::Deny { ev, by_server, .. } => {
                        self.handled.insert(id_of(&ev).to_string());
                        let by = if by_server { "server" } else { "user" };
                        self.log.push(format!("deny {} {by}", id_of(&ev)));
                    }
                    Step::Unowned(ev) => {
                        self.handled.insert(id_of(&ev).to_string());
                        self.log.push(format!("unowned {}", id_of(&ev)));
                    }
                    Step::Start { ev, confirmed } => {
                        let id = id_of(&ev).to_string();
                        self.handled.insert(id.clone());
                        let t = thread_of(&ev).map(str::to_string);
                        self.running.insert(t, id.clone());
                        let c = if confirmed { " confirmed" } else { "" };
                        self.log.push(format!("start {id}{c}"));
                    }
                }
            }
        }

        fn finish(&mut self, id: &str) {
            self.running.retain(|_, v| v != id);
            self.view.apply(&result(id));
            self.act();
        }

        fn take(&mut self) -> Vec<String> {
            std::mem::take(&mut self.log)
        }
    }

    #[test]
    fn calls_with_a_permission_run_in_order() {
        // S1: one at a time, in order.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            tu("A", "a", None, Some("allow")),
            tu("B", "b", None, Some("allow")),
        ]);
        assert_eq!(s.take(), ["start A"]);
        s.finish("A");
        assert_eq!(s.take(), ["start B"]);
    }

    #[test]
    fn threads_run_at_once_up_to_the_limit() {
        // S2: two threads at a time, one call per thread.
        let mut s = Sim::new(Some(2));
        s.feed(&[
            tu("A", "a", None, Some("allow")),
            tu("B", "b", None, Some("allow")),
            tu("C", "c", Some("T1"), None),
            tu("D", "d", Some("T1"), None),
            tu("E", "e", Some("T2"), None),
        ]);
        assert_eq!(s.take(), ["start A", "start C"]);
        s.finish("A");
        assert_eq!(s.take(), ["start B"]);
        s.finish("C");
        assert_eq!(s.take(), ["start D"]);
        s.finish("B");
        s.finish("D");
        assert_eq!(s.take(), ["start E"]);
        // S2b: with a limit of 1, the first eligible call in event order starts next.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            tu("A", "a", None, Some("allow")),
            tu("C", "c", Some("T1"), None),
            tu("B", "b", None, Some("allow")),
        ]);
        s.finish("A");
        s.finish("C");
        assert_eq!(s.take(), ["start A", "start C", "start B"]);
        // No limit: every thread at once.
        let mut s = Sim::new(None);
        s.feed(&[
            tu("A", "a", None, Some("allow")),
            tu("C", "c", Some("T1"), None),
            tu("E", "e", Some("T2"), None),
        ]);
        assert_eq!(s.take(), ["start A", "start C", "start E"]);
    }

    #[test]
    fn ask_holds_and_holds_what_follows() {
        // S3: an asked call holds the later call of its thread until the verdict.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            tu("A", "a", None, Some("ask")),
            tu("B", "b", None, Some("allow")),
            idle("requires_action", &["A"]),
        ]);
        assert_eq!(s.take(), ["hold A"]);
        s.feed(&[
            confirm("A", "allow"),
            ev(json!({"type": "session.status_running"})),
        ]);
        assert_eq!(s.take(), ["start A confirmed"]);
        s.finish("A");
        assert_eq!(s.take(), ["start B"]);
        // S4: the first verdict counts; a deny reports the call and frees the next.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            tu("A", "a", None, Some("ask")),
            tu("B", "b", None, Some("allow")),
            idle("requires_action", &["A"]),
            confirm("A", "deny"),
            confirm("A", "allow"),
        ]);
        assert_eq!(s.take(), ["deny A user", "start B"]);
        // An unknown verdict, or an unknown permission, fails closed.
        let mut s = Sim::new(Some(1));
        s.feed(&[tu("X", "a", None, Some("sometimes"))]);
        assert_eq!(s.take(), ["hold X"]);
        s.feed(&[confirm("X", "maybe")]);
        assert_eq!(s.take(), ["deny X user"]);
        // A verdict that arrives before its call.
        let mut s = Sim::new(Some(1));
        s.feed(&[confirm("V", "allow"), tu("V", "a", None, Some("ask"))]);
        assert_eq!(s.take(), ["start V confirmed"]);
    }

    #[test]
    fn server_denials_and_unowned_calls_are_reported_in_order() {
        // S5.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            tu("A", "a", None, Some("deny")),
            tu("X", "notmine", None, Some("allow")),
            tu("B", "b", None, Some("allow")),
        ]);
        assert_eq!(s.take(), ["deny A server", "unowned X", "start B"]);
        // A server deny wins over a stray allow.
        let mut s = Sim::new(Some(1));
        s.feed(&[confirm("F", "allow"), tu("F", "a", None, Some("deny"))]);
        assert_eq!(s.take(), ["deny F server"]);
    }

    #[test]
    fn calls_without_a_permission_wait_for_an_idle_that_lists_them() {
        // S6: a custom call holds the later call until an idle lists them.
        let mut s = Sim::new(Some(1));
        s.feed(&[custom("C1", "a"), tu("B", "b", None, Some("allow"))]);
        assert!(s.take().is_empty());
        s.feed(&[idle("requires_action", &["C1", "B"])]);
        assert_eq!(s.take(), ["start C1"]);
        s.view.apply(&ev(
            json!({"type": "user.custom_tool_result", "custom_tool_use_id": "C1"}),
        ));
        s.running.clear();
        s.act();
        assert_eq!(s.take(), ["start B"]);
        // S7: an idle that lists only the later call ends the wait on the earlier one.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            custom("C1", "a"),
            tu("B", "b", None, Some("allow")),
            idle("requires_action", &["B"]),
        ]);
        assert_eq!(s.take(), ["start B"]);
        s.finish("B");
        assert!(s.take().is_empty(), "C1 never runs");
        // S7b: a turn-ending idle stops the wait; a later listing starts it.
        let mut s = Sim::new(Some(1));
        s.feed(&[custom("C1", "a"), idle("end_turn", &[])]);
        assert!(s.take().is_empty());
        assert!(s.view.idle_since.is_some());
        s.feed(&[idle("requires_action", &["C1"])]);
        assert_eq!(s.take(), ["start C1"]);
        assert!(s.view.idle_since.is_none());
    }

    #[test]
    fn a_thread_without_status_is_never_held() {
        // S8.
        let mut s = Sim::new(None);
        s.feed(&[
            tu("A", "a", Some("T1"), Some("ask")),
            tu("B", "b", Some("T1"), Some("allow")),
        ]);
        assert_eq!(s.take(), ["hold A", "start B"]);
        let mut s = Sim::new(None);
        s.feed(&[
            tu("P", "a", Some("T2"), Some("ask")),
            thread_status("running", "T2"),
            tu("Q", "b", Some("T2"), Some("allow")),
        ]);
        assert_eq!(s.take(), ["hold P"]);
        s.feed(&[thread_idle("T2", "requires_action", &["Q"])]);
        assert_eq!(s.take(), ["start Q"]);
        assert!(!s.view.is_waiting_on("P"));
    }

    #[test]
    fn thread_ends_resolve_their_calls() {
        // S9: a thread idle that does not list a running call resolves it.
        let mut s = Sim::new(None);
        s.feed(&[
            thread_status("running", "T1"),
            tu("A", "slow", Some("T1"), None),
        ]);
        assert_eq!(s.take(), ["start A"]);
        assert!(!s.view.is_resolved("A"));
        s.feed(&[thread_idle("T1", "end_turn", &[])]);
        assert!(s.view.is_resolved("A"));
        assert!(!s.view.has_terminated(Some("T1")));
        // S10: a termination: resolved, and the thread takes no result.
        let mut s = Sim::new(None);
        s.feed(&[
            thread_status("running", "T1"),
            tu("A", "slow", Some("T1"), None),
            tu("B", "a", Some("T1"), None),
        ]);
        assert_eq!(s.take(), ["start A"]);
        s.feed(&[thread_status("terminated", "T1")]);
        assert!(s.view.is_resolved("A"));
        assert!(s.view.has_terminated(Some("T1")));
        assert_eq!(s.view.terminated_threads().collect::<Vec<_>>(), ["T1"]);
        s.running.clear();
        s.act();
        assert!(s.take().is_empty(), "B of a terminated thread never runs");
        // Late input makes it run again.
        s.feed(&[thread_status("running", "T1")]);
        assert!(!s.view.has_terminated(Some("T1")));
        // S17: a thread idle that lists only the later call resolves the running one.
        let mut s = Sim::new(None);
        s.feed(&[
            thread_status("running", "T1"),
            tu("A", "slow", Some("T1"), None),
            tu("B", "a", Some("T1"), None),
        ]);
        assert_eq!(s.take(), ["start A"]);
        s.feed(&[thread_idle("T1", "requires_action", &["B"])]);
        assert!(s.view.is_resolved("A"));
        s.running.clear();
        s.act();
        assert_eq!(s.take(), ["start B"]);
        // A session's end_turn idle does not resolve a running primary call.
        let mut s = Sim::new(None);
        s.feed(&[tu("A", "slow", None, Some("allow")), idle("end_turn", &[])]);
        assert!(!s.view.is_resolved("A"));
    }

    #[test]
    fn retries_exhausted_keeps_the_waited_calls() {
        // S15.
        let mut s = Sim::new(Some(1));
        s.feed(&[tu("A", "slow", None, Some("allow")), custom("C", "a")]);
        assert_eq!(s.take(), ["start A"]);
        s.feed(&[idle("retries_exhausted", &[])]);
        assert!(s.view.is_waiting_on("A"));
        assert!(!s.view.is_resolved("A"));
        s.finish("A");
        assert!(s.take().is_empty(), "C never runs");
    }

    #[test]
    fn a_history_from_earlier_turns() {
        // S16: answered calls are skipped; a past denial is reported; the rest run.
        let mut s = Sim::new(Some(1));
        s.feed(&[
            ev(json!({"type": "session.status_running"})),
            tu("OLD", "a", None, Some("allow")),
            result("OLD"),
            tu("D", "a", None, Some("deny")),
            idle("end_turn", &[]),
            ev(json!({"type": "session.status_running"})),
            tu("A", "a", None, Some("ask")),
            idle("requires_action", &["A"]),
            confirm("A", "allow"),
            ev(json!({"type": "session.status_running"})),
            tu("B", "b", None, Some("allow")),
        ]);
        assert_eq!(s.take(), ["deny D server", "start A confirmed"]);
        s.finish("A");
        assert_eq!(s.take(), ["start B"]);
    }

    #[test]
    fn events_read_together_are_applied_before_acting() {
        // S20.
        let mut s = Sim::new(None);
        s.feed(&[
            tu("A", "a", None, Some("allow")),
            result("A"),
            thread_status("running", "T1"),
            tu("B", "b", Some("T1"), None),
            thread_idle("T1", "end_turn", &[]),
            tu("C", "a", None, Some("ask")),
            confirm("C", "deny"),
            tu("D", "b", None, Some("allow")),
        ]);
        assert_eq!(s.take(), ["deny C user", "start D"]);
    }

    #[test]
    fn redelivery_and_reconnects() {
        let mut v = View::default();
        let call = tu("A", "a", None, Some("ask"));
        v.apply(&call);
        let i = idle("end_turn", &[]);
        v.apply(&i);
        let since = v.idle_since.expect("idle");
        // The same idle again changes nothing; a reconnect keeps its first-read time.
        v.apply(&i);
        assert_eq!(v.idle_since, Some(since));
        let mut v2 = v.without_events();
        v2.apply(&call);
        v2.apply(&i);
        assert_eq!(v2.idle_since, Some(since));
        // A status that is not an idle clears it; a terminal one ends the session.
        v2.apply(&ev(json!({"type": "session.status_rescheduled"})));
        assert!(v2.idle_since.is_none());
        v2.apply(&ev(json!({"type": "session.deleted"})));
        assert!(v2.ended);
    }
}
