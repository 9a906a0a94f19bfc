//! `burrow worker` and `burrow agent` as real processes against protocol-faithful fakes of
//! the Claude Managed Agents endpoints (tests/fake_ma: work queue, leases, session events
//! and their SSE stream) and of the Messages API (streaming), served by axum on 127.0.0.1.

use crate::common;
use crate::fake_ma;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use fake_ma::*;
use serde_json::{Value, json};

#[test]
fn worker_serves_resumes_overnight_and_forks() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");

    // A session whose first tool calls happened before any worker was up.
    fake.with(|f| {
        f.session("sesn_A", json!({}));
        f.push_event(
            "sesn_A",
            json!({"type": "user.message", "content": [{"type": "text", "text": "analyse"}]}),
        );
        f.push_event(
            "sesn_A",
            tool_use(
                "tu1",
                "write",
                json!({"file_path": "/workspace/notes.md", "content": "overnight"}),
            ),
        );
        f.push_event(
            "sesn_A",
            tool_use("tu2", "web_fetch", json!({"url": "https://example.com"})),
        );
        f.enqueue("w1", "sesn_A", "tok_sesn_A");
    });
    let w = worker(&db, &fake.base);
    assert_eq!(
        text_of(&fake.result_for("sesn_A", "tu1")),
        (false, "wrote 9 bytes to /workspace/notes.md".into())
    );
    // Live, on the stream: secrets never reach the sandbox.
    fake.with(|f| {
        f.push_event(
            "sesn_A",
            tool_use(
                "tu3",
                "bash",
                json!({"command": "cat notes.md; env | grep -c -e SECRET -e tok_ || true"}),
            ),
        )
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_A", "tu3")),
        (false, "overnight0".into())
    );
    fake.with(|f| {
        f.push_event(
            "sesn_A",
            tool_use("tu4", "read", json!({"file_path": "/workspace/missing"})),
        );
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_A", "tu4")),
        (
            true,
            "read: /workspace/missing: no such file or directory".into()
        )
    );
    // Idle: the work item is stopped after --max-idle.
    fake.with(|f| f.push_event("sesn_A", idle()));
    fake.wait("w1 stopped", || fake.stopped("w1").then_some(()));
    let beats = fake.with(|f| f.works["w1"].heartbeats.clone());
    assert_eq!(beats[0], "NO_HEARTBEAT");
    assert!(
        beats.len() >= 2,
        "the lease was kept with heartbeats: {beats:?}"
    );
    assert!(
        beats[1].starts_with("2026-11-29T"),
        "later beats echo last_heartbeat"
    );
    drop(w);

    // The next morning: a new worker process, a new work item for the same session.
    let w = worker(&db, &fake.base);
    fake.with(|f| {
        f.push_event(
            "sesn_A",
            json!({"type": "user.message", "content": [{"type": "text", "text": "continue"}]}),
        );
        f.push_event(
            "sesn_A",
            tool_use("tu5", "read", json!({"file_path": "/workspace/notes.md"})),
        );
        f.enqueue("w2", "sesn_A", "tok_sesn_A");
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_A", "tu5")),
        (false, "overnight".into())
    );

    // A fork: the session's metadata names the source; it starts with its files.
    fake.with(|f| {
        f.session("sesn_B", json!({"burrow_fork_from": "sesn_A"}));
        f.push_event("sesn_B", tool_use("tu6", "bash", json!({"command": "cat /workspace/notes.md && echo experiment > /workspace/notes.md"})));
        f.enqueue("w3", "sesn_B", "tok_sesn_B");
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_B", "tu6")),
        (false, "overnight".into())
    );
    fake.with(|f| {
        f.push_event(
            "sesn_A",
            tool_use("tu7", "read", json!({"file_path": "/workspace/notes.md"})),
        );
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_A", "tu7")),
        (false, "overnight".into()),
        "the fork's change stays in the fork"
    );
    fake.with(|f| {
        f.push_event("sesn_B", json!({"type": "session.status_terminated"}));
    });
    fake.wait("w3 stopped on termination", || {
        fake.stopped("w3").then_some(())
    });

    // The tool the worker does not own was never answered; nothing was sent badly.
    let (unanswered, violations) = fake.with(|f| {
        (
            f.sessions["sesn_A"]
                .events
                .iter()
                .any(|e| e["type"] == "user.tool_result" && e["tool_use_id"] == "tu2"),
            f.violations.clone(),
        )
    });
    assert!(!unanswered, "web_fetch belongs to someone else");
    assert!(violations.is_empty(), "{violations:?}");
    drop(w);
}

#[test]
fn lost_lease_and_sigterm_mid_call() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut w = worker(&db, &fake.base);

    // A lease taken by someone else (412 on the next heartbeat): the worker stops serving
    // the session and does not stop the item it no longer owns.
    fake.with(|f| {
        f.session("sesn_L", json!({}));
        f.push_event(
            "sesn_L",
            tool_use("l1", "write", json!({"file_path": "a", "content": "x"})),
        );
        f.enqueue("wl", "sesn_L", "tok_sesn_L");
    });
    fake.result_for("sesn_L", "l1");
    fake.with(|f| {
        if let Some(w) = f.works.get_mut("wl") {
            w.last_heartbeat = Some("someone-else".into());
        }
    });
    fake.wait("a 412 heartbeat", || {
        fake.with(|f| (f.works["wl"].rejected >= 1).then_some(()))
    });
    std::thread::sleep(Duration::from_millis(500));
    fake.with(|f| {
        f.push_event(
            "sesn_L",
            tool_use("l2", "write", json!({"file_path": "b", "content": "y"})),
        )
    });
    std::thread::sleep(Duration::from_millis(1500));
    let (answered, stopped) = fake.with(|f| {
        (
            f.sessions["sesn_L"]
                .events
                .iter()
                .any(|e| e["tool_use_id"] == "l2"),
            f.works["wl"].stopped,
        )
    });
    assert!(
        !answered,
        "a worker without the lease must not run tool calls"
    );
    assert!(
        !stopped,
        "a worker without the lease must not stop the item"
    );

    // SIGTERM while a call runs: it finishes, its result is posted, the lease is released,
    // and the workspace is at a committed version.
    fake.with(|f| {
        f.session("sesn_T", json!({}));
        f.push_event(
            "sesn_T",
            tool_use(
                "t1",
                "bash",
                json!({"command": "sleep 2; echo done > /workspace/done.txt; echo finished"}),
            ),
        );
        f.enqueue("wt", "sesn_T", "tok_sesn_T");
    });
    fake.wait("wt acked", || {
        fake.with(|f| f.works["wt"].acked.then_some(()))
    });
    std::thread::sleep(Duration::from_millis(1200));
    let pid = w.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let start = Instant::now();
    let status = loop {
        if let Some(s) = w.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "worker did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(
        text_of(&fake.result_for("sesn_T", "t1")),
        (false, "finished".into())
    );
    assert!(fake.stopped("wt"), "the lease was released");
    let fsck = burrow(&db, &["fsck"]);
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    let id = burrow(&db, &["--json", "session", "ls"]);
    let sessions: Vec<Value> = String::from_utf8_lossy(&id.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
}

// ----- the fake Messages API -----

#[derive(Default)]
struct Messages {
    requests: Vec<Value>,
    bad_key: bool,
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// One streamed assistant turn: optional text (sent in two deltas), optional tool use
/// (its input JSON sent in two halves).
fn turn(text: Option<&str>, tool: Option<(&str, &str, Value)>) -> String {
    let mut evs = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "fake"}}),
    ];
    let mut index = 0;
    if let Some(t) = text {
        let (a, b) = t.split_at(t.len() / 2);
        evs.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        evs.push(json!({"type": "ping"}));
        evs.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": a}}));
        evs.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": b}}));
        evs.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = if let Some((id, name, input)) = &tool {
        let js = input.to_string();
        let (a, b) = js.split_at(js.len() / 2);
        evs.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        evs.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": a}}));
        evs.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": b}}));
        evs.push(json!({"type": "content_block_stop", "index": index}));
        "tool_use"
    } else {
        "end_turn"
    };
    evs.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}));
    evs.push(json!({"type": "message_stop"}));
    sse(&evs)
}

async fn messages(
    State(m): State<Arc<Mutex<Messages>>>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let n = {
        let mut m = m.lock().unwrap();
        if h.get("x-api-key").and_then(|v| v.to_str().ok()) != Some("sk-test") {
            m.bad_key = true;
        }
        m.requests.push(body.clone());
        m.requests.len()
    };
    let script = match n {
        1 => turn(
            Some("Looking around."),
            Some((
                "toolu_1",
                "bash",
                json!({"command": "echo hi > /workspace/a.txt; cat /workspace/a.txt"}),
            )),
        ),
        2 => turn(
            None,
            Some((
                "toolu_2",
                "str_replace_based_edit_tool",
                json!({"command": "view", "path": "/workspace/a.txt"}),
            )),
        ),
        3 => turn(Some("Done for today."), None),
        _ => turn(Some("Resumed."), None),
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(script))
        .unwrap()
}

#[test]
fn agent_loop_streams_runs_tools_and_resumes() {
    let state: Arc<Mutex<Messages>> = Arc::default();
    let (_rt, base) = common::serve(
        axum::Router::new()
            .route("/v1/messages", post(messages))
            .with_state(state.clone()),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let agent = |prompt: &str| {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", cache())
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env("ANTHROPIC_BASE_URL", &base)
            .args(["agent", "--session", "research", "--prompt", prompt])
            .output()
            .unwrap()
    };
    let out = agent("look at the repo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Looking around.Done for today.\n"
    );
    let reqs = state.lock().unwrap().requests.clone();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0]["stream"], true);
    assert_eq!(
        reqs[0]["tools"],
        json!([{"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}])
    );
    let result1 = &reqs[1]["messages"][2]["content"][0];
    assert_eq!(
        result1,
        &json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [{"type": "text", "text": "hi"}]})
    );
    assert_eq!(
        reqs[1]["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo hi > /workspace/a.txt; cat /workspace/a.txt"}})
    );
    assert_eq!(
        reqs[2]["messages"][4]["content"][0]["content"][0]["text"],
        "Here's the result of running `cat -n` on /workspace/a.txt:\n     1\thi\n     2\t\n"
    );

    // Later, another process: the conversation and the files are still there.
    let out = agent("continue");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Resumed.\n");
    let reqs = state.lock().unwrap().requests.clone();
    let msgs = reqs[3]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 7, "{msgs:?}");
    assert_eq!(msgs[0]["content"], "look at the repo");
    assert_eq!(msgs[5]["content"][0]["text"], "Done for today.");
    assert_eq!(msgs[6], json!({"role": "user", "content": "continue"}));
    let cat = burrow(&db, &["cat", "research", "a.txt"]);
    assert_eq!(cat.stdout, b"hi\n");
    assert!(!state.lock().unwrap().bad_key);

    // No key: a clear error, nothing sent.
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", &db)
        .env_remove("ANTHROPIC_API_KEY")
        .args(["agent", "--prompt", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY"));
}

#[derive(Default)]
struct MemoryApi {
    requests: Vec<Value>,
    betas: Vec<String>,
}

async fn memory_messages(
    State(m): State<Arc<Mutex<MemoryApi>>>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let n = {
        let mut m = m.lock().unwrap();
        m.betas.push(
            h.get("anthropic-beta")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
        );
        m.requests.push(body.clone());
        m.requests.len()
    };
    let script = match n {
        // First process: the model writes a memory.
        1 => turn(
            None,
            Some((
                "toolu_m1",
                "memory",
                json!({"command": "create", "path": "/memories/user.md", "file_text": "prefers tabs\n"}),
            )),
        ),
        2 => turn(Some("Noted."), None),
        // Second process, another work session: it looks at its memories first.
        3 => turn(
            None,
            Some((
                "toolu_m2",
                "memory",
                json!({"command": "view", "path": "/memories/user.md"}),
            )),
        ),
        _ => turn(Some("You prefer tabs."), None),
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(script))
        .unwrap()
}

#[test]
fn agent_memory_is_kept_in_a_session_and_recalled_by_another_process() {
    let state: Arc<Mutex<MemoryApi>> = Arc::default();
    let (_rt, base) = common::serve(
        axum::Router::new()
            .route("/v1/messages", post(memory_messages))
            .with_state(state.clone()),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let agent = |session: &str, prompt: &str| {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", cache())
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env("ANTHROPIC_BASE_URL", &base)
            .args([
                "agent",
                "--session",
                session,
                "--memory-session",
                "longterm",
                "--prompt",
                prompt,
            ])
            .output()
            .unwrap()
    };
    let out = agent("task-one", "I like tabs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = agent("task-two", "what do I like?");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "You prefer tabs.\n");
    let m = state.lock().unwrap();
    assert_eq!(
        m.requests[0]["tools"][2],
        json!({"type": "memory_20250818", "name": "memory"})
    );
    assert!(
        m.betas.iter().all(|b| b == "context-management-2025-06-27"),
        "{:?}",
        m.betas
    );
    // The second process read back what the first one wrote, through another work session.
    let recalled = &m.requests[3]["messages"][2]["content"][0];
    assert_eq!(recalled["tool_use_id"], "toolu_m2");
    assert_eq!(
        recalled["content"][0]["text"],
        "Here's the content of /memories/user.md with line numbers:\n     1\tprefers tabs\n     2\t"
    );
    // The memory lives in the long-term session (versioned there), not in the work sessions.
    let cat = burrow(&db, &["sh", "longterm", "cat /memories/user.md"]);
    assert_eq!(cat.stdout, b"prefers tabs\n");
    let none = burrow(&db, &["sh", "task-one", "ls /memories"]);
    assert_eq!(none.stdout, b"");
}

/// A Messages API that plays `turns` in order (then ends every turn), keeping the requests.
#[derive(Default)]
struct Scripted {
    turns: std::collections::VecDeque<String>,
    requests: Vec<Value>,
}

async fn scripted(State(m): State<Arc<Mutex<Scripted>>>, Json(body): Json<Value>) -> Response {
    let script = {
        let mut m = m.lock().unwrap();
        m.requests.push(body);
        m.turns
            .pop_front()
            .unwrap_or_else(|| turn(Some("Done."), None))
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(script))
        .unwrap()
}

/// `burrow agent --allow-net --secret`: a new session gets that policy, an existing one has
/// the rules added; a call to the allowed server reaches it and one to another port is
/// refused with the policy's words.
#[test]
fn agent_applies_its_network_flags() {
    let hello = || {
        let (rt, base) = common::serve(axum::Router::new().fallback(|| async { "hello\n" }));
        let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
        (rt, port)
    };
    let ((_a, allowed), (_b, other)) = (hello(), hello());
    let state: Arc<Mutex<Scripted>> = Arc::default();
    let (_rt, base) = common::serve(
        axum::Router::new()
            .route("/v1/messages", post(scripted))
            .with_state(state.clone()),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let bash = |id: &str, cmd: String| turn(None, Some((id, "bash", json!({ "command": cmd }))));
    let agent = |session: &str| {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", cache())
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env("ANTHROPIC_BASE_URL", &base)
            .env("BURROW_LOG", "burrow=info")
            .env_remove("BURROW_DURABILITY")
            .args(["agent", "--session", session, "--prompt", "fetch"])
            .args(["--allow-net", &format!("127.0.0.1:{allowed}")])
            .args(["--secret", &format!("TOKEN@http://127.0.0.1:{allowed}")])
            .output()
            .unwrap()
    };
    // The result of the tool call `id` in the conversation the model saw last.
    let result = |id: &str| -> (bool, String) {
        let m = state.lock().unwrap();
        let last = m.requests.last().unwrap();
        for msg in last["messages"].as_array().unwrap() {
            for block in msg["content"].as_array().into_iter().flatten() {
                if block["tool_use_id"] == id {
                    let text = block["content"][0]["text"].as_str().unwrap_or("");
                    return (block["is_error"] == true, text.to_string());
                }
            }
        }
        panic!("no result for {id}");
    };
    // An existing session made without network: the flags are added to its policy.
    assert!(
        burrow(&db, &["session", "new", "--name", "old"])
            .status
            .success()
    );
    for session in ["new-one", "old"] {
        {
            let mut m = state.lock().unwrap();
            m.requests.clear();
            m.turns = [
                bash("toolu_a", format!("curl -sS http://127.0.0.1:{allowed}/")),
                bash("toolu_b", format!("curl -sS http://127.0.0.1:{other}/")),
                bash("toolu_c", "echo $TOKEN".into()),
            ]
            .into();
        }
        let out = agent(session);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // Its default durability is full: a result goes to the model once it is on disk.
        assert!(stderr.contains("durability=Full"), "{stderr}");
        assert_eq!(result("toolu_a"), (false, "hello".into()), "{session}");
        let (err, text) = result("toolu_b");
        assert!(err, "{session}: {text}");
        assert!(
            text.contains(&format!("network access to 127.0.0.1:{other}"))
                && text.contains("is denied by the session's policy"),
            "{session}: {text}"
        );
        let (err, text) = result("toolu_c");
        assert!(
            !err && text.starts_with("burrow-secret-"),
            "{session}: {text}"
        );
    }
}
