//! `burrow serve` and `burrow mcp` as real processes on loopback: every HTTP endpoint and its
//! error statuses through reqwest, SSE resume with Last-Event-ID, auth and body limits, the
//! OpenAPI document against the route table, and the official MCP Python SDK client over
//! stdio and Streamable HTTP.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::common;
use common::{Server, cache, start};

/// What Claude Code appends to Write's and Edit's success texts.
const CURRENT: &str = " (file state is current in your context \u{2014} no need to Read it back)";

fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut s = start(&dir.path().join("s.db"), &[]);
    s._dir = Some(dir);
    s
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = client().post(self.url(path)).json(&body).send().unwrap();
        let status = r.status();
        (status, r.json().unwrap_or(Value::Null))
    }

    fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = client().get(self.url(path)).send().unwrap();
        let status = r.status();
        (status, r.json().unwrap_or(Value::Null))
    }

    fn call(&self, session: &str, tool: &str, input: Value) -> Value {
        let (status, body) = self.post(
            &format!("/sessions/{session}/call"),
            json!({ "tool": tool, "input": input }),
        );
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

fn text(out: &Value) -> &str {
    out["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn http_api_every_endpoint_and_error() {
    let s = server();
    let c = client();
    assert_eq!(s.get("/health"), (StatusCode::OK, json!({"status": "ok"})));

    // Sessions.
    let (st, a) = s.post(
        "/sessions",
        json!({"name": "proj", "settings": {"env": {"GREETING": "hi"}}}),
    );
    assert_eq!(st, StatusCode::CREATED);
    let a_id = a["id"].as_str().unwrap().to_string();
    assert_eq!(
        s.post("/sessions", json!({"name": "proj"})).0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        s.post("/sessions", json!({"nmae": "typo"})).0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(s.get("/sessions/proj").1["id"], a_id.as_str());
    assert_eq!(
        s.get(&format!("/sessions/{}", &a_id[..6])).1["name"],
        "proj"
    );
    assert_eq!(s.get("/sessions/nope").0, StatusCode::NOT_FOUND);
    assert_eq!(
        s.get("/sessions").1["sessions"].as_array().unwrap().len(),
        1
    );

    // Tool calls, in the session's default family and in others.
    let out = s.call(
        "proj",
        "write",
        json!({"file_path": "notes.md", "content": "one\n"}),
    );
    assert_eq!(text(&out), "wrote 4 bytes to notes.md");
    assert_eq!(out["is_error"], false);
    let out = s.call(
        "proj",
        "bash",
        json!({"command": "echo $GREETING; cat notes.md"}),
    );
    assert_eq!(text(&out), "hi\none");
    let (st, out) = s.post(
        "/sessions/proj/call",
        json!({"family": "claude-code", "tool": "Read", "input": {"file_path": "/workspace/notes.md"}}),
    );
    assert_eq!((st, text(&out)), (StatusCode::OK, "1\tone\n2\t"));
    let (st, out) = s.post(
        "/sessions/proj/call",
        json!({"family": "api", "tool": "str_replace_based_edit_tool", "input": {"command": "view", "path": "/workspace/nope"}}),
    );
    assert_eq!(st, StatusCode::OK);
    assert_eq!(out["is_error"], true);
    let bad_json = c
        .post(s.url("/sessions/proj/call"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(bad_json.status(), StatusCode::BAD_REQUEST);
    assert!(bad_json.text().unwrap().contains("invalid JSON body"));
    assert_eq!(
        s.post("/sessions/proj/call", json!({"tool": "rm"})).0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post("/sessions/proj/call", json!({"tool": "read", "input": [1]}))
            .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post(
            "/sessions/proj/call",
            json!({"tool": "read", "family": "cobol"})
        )
        .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post("/sessions/zzz/call", json!({"tool": "read", "input": {}}))
            .0,
        StatusCode::NOT_FOUND
    );

    // Files.
    let put = c
        .put(s.url("/sessions/proj/files/data/blob.bin"))
        .body(vec![0u8, 1, 2, 255])
        .send()
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let got = c
        .get(s.url("/sessions/proj/files/data/blob.bin"))
        .send()
        .unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(got.bytes().unwrap().as_ref(), &[0u8, 1, 2, 255]);
    assert_eq!(
        c.get(s.url("/sessions/proj/files/missing"))
            .send()
            .unwrap()
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(s.url("/sessions/proj/files/data"))
            .send()
            .unwrap()
            .status(),
        StatusCode::BAD_REQUEST
    );

    // Fork, diff, history, label, checkout, undo.
    let (st, forked) = s.post("/sessions/proj/fork", json!({"n": 2}));
    assert_eq!(st, StatusCode::CREATED);
    let ids: Vec<String> = forked["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    s.call(
        &ids[0],
        "write",
        json!({"file_path": "experiment.txt", "content": "x"}),
    );
    let (st, d) = s.get(&format!("/sessions/{}/diff?against=proj", ids[0]));
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        d["changes"],
        json!([{"path": "/workspace/experiment.txt", "kind": "added"}])
    );
    assert_eq!(s.get("/sessions/proj/diff").0, StatusCode::BAD_REQUEST);
    let (_, h) = s.get("/sessions/proj/history?limit=2");
    let versions = h["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    let (st, l) = s.post("/sessions/proj/label", json!({"label": "before-undo"}));
    assert_eq!(
        (st, l["label"].clone()),
        (StatusCode::OK, json!("before-undo"))
    );
    let (st, _) = s.post("/sessions/proj/undo", json!({}));
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        c.get(s.url("/sessions/proj/files/data/blob.bin"))
            .send()
            .unwrap()
            .status(),
        StatusCode::NOT_FOUND,
        "undo removed the upload"
    );
    let (st, _) = s.post("/sessions/proj/checkout", json!({"version": "before-undo"}));
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        c.get(s.url("/sessions/proj/files/data/blob.bin"))
            .send()
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        s.post("/sessions/proj/checkout", json!({"version": 999999}))
            .0,
        StatusCode::NOT_FOUND
    );
    // Merge the experiment back: a dry run reports, the merge makes a version.
    let (st, m) = s.post(
        &format!("/sessions/{}/merge", ids[0]),
        json!({"no_commit": true}),
    );
    assert_eq!(st, StatusCode::OK, "{m}");
    assert_eq!(
        (m["merged"].clone(), m["committed"].clone()),
        (json!(["experiment.txt"]), json!(false))
    );
    let (st, m) = s.post(&format!("/sessions/{}/merge", ids[0]), json!({}));
    assert_eq!(st, StatusCode::OK, "{m}");
    assert_eq!(m["committed"], json!(true));
    assert_eq!(m["conflicts"], json!([]));
    assert_eq!(
        c.get(s.url("/sessions/proj/files/experiment.txt"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
        "x"
    );
    assert_eq!(
        s.post("/sessions/proj/merge", json!({})).0,
        StatusCode::BAD_REQUEST,
        "proj was forked from nothing"
    );

    // Export as tar, and create a session from that tar.
    let tar = c.get(s.url("/sessions/proj/export")).send().unwrap();
    assert_eq!(tar.status(), StatusCode::OK);
    let tar = tar.bytes().unwrap();
    let created = c
        .post(s.url("/sessions?name=from-tar"))
        .header("content-type", "application/x-tar")
        .body(tar.to_vec())
        .send()
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let got = c
        .get(s.url("/sessions/from-tar/files/notes.md"))
        .send()
        .unwrap();
    assert_eq!(got.text().unwrap(), "one\n");

    // Event log, paged.
    let (_, all) = s.get("/sessions/proj/events?limit=1000");
    let all = all["events"].as_array().unwrap().clone();
    assert!(all.len() >= 8, "{all:?}");
    let (_, page) = s.get(&format!(
        "/sessions/proj/events?after={}&limit=2",
        all[1]["seq"]
    ));
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    assert_eq!(page["events"][0]["seq"], all[2]["seq"]);
    assert_eq!(page["next_after"], all[3]["seq"]);

    // Metrics.
    let m = c.get(s.url("/metrics")).send().unwrap().text().unwrap();
    for needle in [
        "burrow_tool_calls_total ",
        "burrow_tool_call_errors_total 1",
        "burrow_tool_call_seconds_bucket{le=\"+Inf\"}",
        "burrow_sessions 4",
        "burrow_store_bytes ",
    ] {
        assert!(m.contains(needle), "{needle} missing from\n{m}");
    }

    // Delete.
    assert_eq!(
        c.delete(s.url(&format!("/sessions/{}", ids[1])))
            .send()
            .unwrap()
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        s.get(&format!("/sessions/{}", ids[1])).0,
        StatusCode::NOT_FOUND
    );
}

#[test]
fn concurrent_calls_on_one_session_are_serialised() {
    let s = server();
    s.post("/sessions", json!({"name": "busy"}));
    std::thread::scope(|scope| {
        for i in 0..8 {
            let s = &s;
            scope.spawn(move || {
                let out = s.call(
                    "busy",
                    "bash",
                    json!({"command": format!("echo {i} >> log.txt")}),
                );
                assert_eq!(out["is_error"], false, "{out}");
            });
        }
    });
    let log = client()
        .get(s.url("/sessions/busy/files/log.txt"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0", "1", "2", "3", "4", "5", "6", "7"]);
}

/// Reads SSE events (id, event name) from a streaming response until `n` arrived.
fn read_events(resp: reqwest::blocking::Response, n: usize) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let (mut id, mut name) = (None, String::new());
    for line in BufReader::new(resp).lines() {
        let line = line.unwrap();
        if let Some(v) = line.strip_prefix("id:") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("event:") {
            name = v.trim().to_string();
        } else if line.is_empty()
            && let Some(i) = id.take()
        {
            out.push((i, std::mem::take(&mut name)));
            if out.len() == n {
                break;
            }
        }
    }
    out
}

#[test]
fn event_stream_resumes_with_last_event_id() {
    let s = server();
    s.post("/sessions", json!({"name": "ev"}));
    for i in 0..3 {
        s.call(
            "ev",
            "write",
            json!({"file_path": format!("f{i}"), "content": "x"}),
        );
    }
    let (_, all) = s.get("/sessions/ev/events");
    let seqs: Vec<i64> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs.len(), 4); // created + 3 tool calls
    // A client that saw the second event resumes exactly after it.
    let resp = client()
        .get(s.url("/sessions/ev/events/stream"))
        .header("Last-Event-ID", seqs[1].to_string())
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // Live events arrive on the open stream too.
    let writer = std::thread::spawn({
        let base = s.base.clone();
        move || {
            std::thread::sleep(Duration::from_millis(300));
            client()
                .post(format!("{base}/sessions/ev/call"))
                .json(&json!({"tool": "write", "input": {"file_path": "live", "content": "y"}}))
                .send()
                .unwrap();
        }
    });
    let got = read_events(resp, 3);
    writer.join().unwrap();
    let ids: Vec<i64> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(&ids[..2], &seqs[2..4], "no loss, no duplicate");
    assert!(ids[2] > seqs[3]);
    assert!(got.iter().all(|(_, name)| name == "tool"));
}

/// Every failure answers `{"error": "..."}` as JSON, including axum's own rejections (unknown
/// route, wrong method, a query that does not parse, a body over the limit).
#[test]
fn every_error_is_a_json_error_body() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("s.db"), &["--max-body", "1024"]);
    let c = client();
    s.post("/sessions", json!({"name": "e"}));
    let cases = [
        (c.get(s.url("/no/such/route")), StatusCode::NOT_FOUND),
        (
            c.patch(s.url("/sessions/e")),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            c.get(s.url("/sessions/e/events?limit=many")),
            StatusCode::BAD_REQUEST,
        ),
        (
            c.get(s.url("/sessions/e/history?limit=-1")),
            StatusCode::BAD_REQUEST,
        ),
        (
            c.post(s.url("/sessions/e/call")).body("{not json"),
            StatusCode::BAD_REQUEST,
        ),
        (
            c.put(s.url("/sessions/e/files/x")).body(vec![0u8; 4096]),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            c.get(s.url("/sessions/e/tree/missing")),
            StatusCode::NOT_FOUND,
        ),
        (c.get(s.url("/sessions/nope")), StatusCode::NOT_FOUND),
    ];
    for (req, want) in cases {
        let r = req.send().unwrap();
        let url = r.url().to_string();
        assert_eq!(r.status(), want, "{url}");
        let kind = r.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_string();
        assert!(kind.starts_with("application/json"), "{url}: {kind}");
        let body: Value = r.json().unwrap();
        let msg = body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{url}: {body}"));
        assert!(
            !msg.is_empty() && body.as_object().unwrap().len() == 1,
            "{url}: {body}"
        );
    }
    // The console's pages are HTML and need no token; the API beside them still does.
    let guarded = start(&dir.path().join("t.db"), &["--token", "tok"]);
    let page = c.get(guarded.url("/")).send().unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().unwrap().contains("/console/app.js"));
    for asset in ["/console/app.js", "/console/style.css"] {
        assert_eq!(
            c.get(guarded.url(asset)).send().unwrap().status(),
            StatusCode::OK
        );
    }
    assert_eq!(
        c.get(guarded.url("/sessions")).send().unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn token_body_limit_and_exposure_rules() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(
        &dir.path().join("s.db"),
        &["--token", "s3cret", "--max-body", "2048"],
    );
    let c = client();
    assert_eq!(
        c.get(s.url("/health")).send().unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        c.get(s.url("/sessions")).send().unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.get(s.url("/sessions"))
            .bearer_auth("wrong")
            .send()
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.post(s.url("/mcp")).body("{}").send().unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.get(s.url("/sessions"))
            .bearer_auth("s3cret")
            .send()
            .unwrap()
            .status(),
        StatusCode::OK
    );
    let r = c
        .post(s.url("/sessions"))
        .bearer_auth("s3cret")
        .json(&json!({"name": "x"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = c
        .put(s.url("/sessions/x/files/big"))
        .bearer_auth("s3cret")
        .body(vec![b'a'; 10_000])
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Nothing was written by the refused upload.
    let r = c
        .get(s.url("/sessions/x/files/big"))
        .bearer_auth("s3cret")
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Beyond loopback, a token is mandatory.
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", dir.path().join("t.db"))
        .env_remove("BURROW_TOKEN")
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without a token"));
}

#[test]
fn openapi_document_lists_every_route() {
    let s = server();
    let (st, doc) = s.get("/openapi.json");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let mut op_ids = std::collections::HashSet::new();
    for r in burrow_cli::serve::openapi::ROUTES {
        let op = &paths[r.path][r.method];
        assert!(op["summary"].is_string(), "{} {}", r.method, r.path);
        let ok = &op["responses"][r.status.to_string()];
        assert!(ok.is_object(), "{} {}", r.method, r.path);
        // Typed bodies: every JSON body is a named schema of the document.
        use burrow_cli::serve::openapi::Body;
        for (body, content) in [
            (r.response, &ok["content"]),
            (r.request, &op["requestBody"]["content"]),
        ] {
            if let Body::Json(_) = body {
                let reference = content["application/json"]["schema"]["$ref"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{} {}: no schema ref", r.method, r.path));
                let name = reference.trim_start_matches("#/components/schemas/");
                assert!(
                    doc["components"]["schemas"][name].is_object(),
                    "{reference}"
                );
            }
        }
        // Readable, unique operation ids.
        let id = op["operationId"].as_str().unwrap();
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric())
                && id.starts_with(|c: char| c.is_ascii_lowercase()),
            "{id}"
        );
        assert!(op_ids.insert(id.to_string()), "duplicate operation id {id}");
        // Every path parameter is declared.
        let declared = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "path")
            .count();
        assert_eq!(declared, r.path.matches('{').count(), "{}", r.path);
        // And the route exists on the server: no 404/405 for the path itself.
        let url = s.url(&r.path.replace("{id}", "nope").replace("{path}", "f"));
        let resp = match r.method {
            "get" => client().get(&url).send(),
            "post" => client().post(&url).body("{}").send(),
            "put" => client().put(&url).body("x").send(),
            "delete" => client().delete(&url).send(),
            m => panic!("method {m}"),
        }
        .unwrap();
        assert_ne!(
            resp.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{} {}",
            r.method,
            r.path
        );
        if !r.path.contains("{id}") {
            assert_ne!(
                resp.status(),
                StatusCode::NOT_FOUND,
                "{} {}",
                r.method,
                r.path
            );
        }
    }
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(documented, burrow_cli::serve::openapi::ROUTES.len());
}

/// A Python client generated from `/openapi.json` by openapi-python-client drives a session
/// (cli/tests/openapi/drive.py): every answer parses into its typed model, errors included.
/// Needs `openapi-python-client` (on PATH or `BURROW_OPENAPI_PYTHON_CLIENT`) and a Python with
/// httpx and attrs beside it (its own venv has them); `.ci/run` installs it.
#[test]
fn generated_python_client_drives_a_session() {
    let generator = std::env::var_os("BURROW_OPENAPI_PYTHON_CLIENT")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("openapi-python-client"))
                .find(|p| p.is_file())
        });
    let Some(generator) = generator else {
        assert!(
            std::env::var("BURROW_REQUIRE_OPENAPI_CLIENT").as_deref() != Ok("1"),
            "BURROW_REQUIRE_OPENAPI_CLIENT=1 but openapi-python-client is missing"
        );
        println!("skipped: pip install openapi-python-client to test a generated API client");
        return;
    };
    // The generator's own Python has httpx and attrs, which the generated code imports.
    let python = generator
        .parent()
        .map(|d| d.join("python"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("s.db"), &["--token", "typed-token"]);
    let doc = client()
        .get(s.url("/openapi.json"))
        .bearer_auth("typed-token")
        .send()
        .unwrap()
        .text()
        .unwrap();
    let spec = dir.path().join("openapi.json");
    std::fs::write(&spec, doc).unwrap();
    let out = Command::new(&generator)
        .args(["generate", "--meta", "none", "--overwrite", "--path"])
        .arg(&spec)
        .arg("--output-path")
        .arg(dir.path().join("burrow_client"))
        .env(
            "PATH",
            std::env::join_paths(generator.parent().into_iter().map(Path::to_path_buf).chain(
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
            ))
            .unwrap(),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "generate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi/drive.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(&s.base)
        .arg("typed-token")
        .env("PYTHONPATH", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "drive.py: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

/// Raw JSON-RPC over `burrow mcp`'s stdio: malformed and ill-typed input gets an answer (or
/// is ignored, for a line that is not JSON) and the server keeps serving; concurrent first
/// requests on a new session name share one session.
#[test]
fn mcp_stdio_survives_malformed_input() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", dir.path().join("s.db"))
        .env("BURROW_CACHE", cache())
        .args(["mcp", "--session", "raw"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        "{not json}".to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Read","arguments":{"file_path":42}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Nope","arguments":{}}}"#.into(),
        format!(r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"Write","arguments":{{"file_path":"/workspace/x","content":"{}"}}}}}}"#, "y".repeat(1 << 20)),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"wc -c < /workspace/x"}}}"#.into(),
    ];
    for l in &lines {
        stdin.write_all(l.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(150));
    }
    let mut answers: std::collections::HashMap<i64, Value> = Default::default();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    while answers.len() < 5 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v["id"].as_i64() {
            answers.insert(id, v);
        }
    }
    drop(stdin);
    let _ = child.wait();
    assert_eq!(answers[&1]["result"]["serverInfo"]["name"], "burrow");
    assert_eq!(answers[&2]["result"]["isError"], true);
    assert!(
        answers[&2]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("InputValidationError")
    );
    assert!(
        answers[&3].get("error").is_some(),
        "unknown tool: {}",
        answers[&3]
    );
    assert_eq!(answers[&4]["result"]["isError"], false, "{}", answers[&4]);
    assert_eq!(answers[&5]["result"]["content"][0]["text"], "1048576");
}

// ----- MCP, through the official Python SDK client -----

fn mcp_sdk_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp.client.streamable_http, mcp.client.stdio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("BURROW_REQUIRE_REFERENCE").is_none(),
            "the MCP Python SDK (pip install mcp) is required"
        );
        eprintln!("skipped: python3 -c 'import mcp' failed (pip install mcp)");
    }
    ok
}

fn run_client(db: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args(args)
        .env("BURROW_STORE", db)
        .env("BURROW_CACHE", cache())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "MCP client failed:\n{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}

fn check_mcp_run(run: &Value) {
    let tools: Vec<&str> = run["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "Bash",
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "Glob",
            "Grep",
            "memory",
            "fork",
            "list",
            "history",
            "diff",
            "merge",
            "undo",
            "checkout"
        ]
    );
    let read = &run["tools"][1];
    assert_eq!(
        (
            read["readOnlyHint"].clone(),
            read["destructiveHint"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(run["tools"][2]["destructiveHint"], true);
    let calls = run["calls"].as_array().unwrap();
    let at = |i: usize| {
        (
            calls[i]["isError"].as_bool().unwrap(),
            calls[i]["text"].as_str().unwrap(),
        )
    };
    assert_eq!(
        at(0),
        (
            false,
            format!("File created successfully at: /workspace/notes.md{CURRENT}").as_str()
        )
    );
    assert_eq!(at(1), (false, "1\t# Notes\n2\tTODO: read the code\n3\t"));
    assert_eq!(
        at(2),
        (
            false,
            format!("The file /workspace/notes.md has been updated successfully.{CURRENT}")
                .as_str()
        )
    );
    assert_eq!(
        at(3),
        (
            false,
            "Applied 1 edit to /workspace/notes.md:\n1. Replaced \"# Notes\" with \"# Log\""
        )
    );
    assert_eq!(at(4), (false, "# Log\nDONE: read the code"));
    assert_eq!(at(5), (false, "src/main.rs"));
    assert_eq!(at(6), (false, "notes.md:2:DONE: read the code"));
    assert!(at(7).0);
    assert!(at(7).1.starts_with("File does not exist."));
    assert!(at(8).1.lines().count() == 3 && at(8).1.contains("Bash"));
    assert!(at(9).1.starts_with("forked "));
    assert_eq!(at(9).1.lines().count(), 3);
    assert!(at(10).1.contains("\"id\""));
    assert!(at(11).1.starts_with("undone: "), "{}", at(11).1);
    assert!(!at(12).0, "{}", at(12).1);
    assert!(
        at(13).1.starts_with("checked out version 1"),
        "{}",
        at(13).1
    );
}

#[test]
fn mcp_sdk_clients_over_stdio_and_streamable_http() {
    if !mcp_sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // Over stdio: burrow mcp --session stdio-work.
    let run = run_client(&db, &["stdio", env!("CARGO_BIN_EXE_burrow"), "stdio-work"]);
    check_mcp_run(&run);

    // Over Streamable HTTP, on another session of the same store.
    let s = start(&db, &[]);
    let url = s.url("/mcp?session=http-work");
    let run = run_client(&db, &["http", &url]);
    let tools = run["tools"].as_array().unwrap().len();
    assert_eq!(tools, 15);
    let calls = run["calls"].as_array().unwrap();
    assert_eq!(
        calls[0]["text"],
        format!("File created successfully at: /workspace/notes.md{CURRENT}")
    );
    assert_eq!(calls[6]["text"], "notes.md:2:DONE: read the code");

    // The MCP sessions persist in the store: the stdio one is visible over HTTP, and a
    // reconnecting client finds its files.
    let (st, info) = s.get("/sessions/stdio-work");
    assert_eq!(st, StatusCode::OK, "{info}");
    let again = run_client(&db, &["http", &url]);
    let again = again["calls"].as_array().unwrap();
    assert_eq!(
        again[0]["text"],
        format!("File created successfully at: /workspace/notes.md{CURRENT}"),
        "the last call of the first run checked out version 1 (empty), so notes.md is new again"
    );
}

/// The network policy over the HTTP API: the server's `--allow-net` default for new
/// sessions, `settings.net` at creation, `GET`/`PUT /sessions/{id}/net` (presets expanded, bad
/// rules refused with 400, secrets shown by name and placeholder only), a `net_policy` event.
#[test]
fn network_policy_over_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(
        &dir.path().join("s.db"),
        &[
            "--allow-net",
            "example.com",
            "--secret",
            "TOKEN@api.example.com",
        ],
    );
    let (st, info) = s.post("/sessions", json!({ "name": "defaults" }));
    assert_eq!(st, StatusCode::CREATED, "{info}");
    let (st, net) = s.get("/sessions/defaults/net");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(net["allow"], json!(["example.com"]));
    assert_eq!(net["secrets"][0]["name"], "TOKEN");
    assert!(
        net["secrets"][0]["placeholder"]
            .as_str()
            .unwrap()
            .starts_with("burrow-secret-")
    );
    // An explicit policy at creation wins over the server's default.
    let (st, _) = s.post(
        "/sessions",
        json!({ "name": "explicit", "settings": { "net": { "allow": ["@crates"] } } }),
    );
    assert_eq!(st, StatusCode::CREATED);
    let (_, net) = s.get("/sessions/explicit/net");
    assert_eq!(
        net["allow"],
        json!(["crates.io", "index.crates.io", "static.crates.io"])
    );
    // PUT replaces it; a bad rule is a 400 and changes nothing.
    let put = |body: Value| {
        let r = client()
            .put(s.url("/sessions/explicit/net"))
            .json(&body)
            .send()
            .unwrap();
        (r.status(), r.json::<Value>().unwrap_or(Value::Null))
    };
    let (st, net) = put(json!({ "allow": ["10.0.0.0/8", "GET@pypi.org"] }));
    assert_eq!(st, StatusCode::OK, "{net}");
    assert_eq!(net["allow"], json!(["10.0.0.0/8", "GET@pypi.org"]));
    let (st, err) = put(json!({ "allow": ["ftp://x"] }));
    assert_eq!(st, StatusCode::BAD_REQUEST, "{err}");
    let (_, net) = s.get("/sessions/explicit/net");
    assert_eq!(net["allow"], json!(["10.0.0.0/8", "GET@pypi.org"]));
    let (_, events) = s.get("/sessions/explicit/events");
    let changes = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "net_policy")
        .count();
    assert_eq!(changes, 1, "{events}");
    // Guests' requests show in /metrics by host and verdict.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut c, &mut buf);
            let _ = std::io::Write::write_all(
                &mut c,
                b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n",
            );
        }
    });
    let (_, net) = put(json!({ "allow": [format!("127.0.0.1:{port}")] }));
    assert_eq!(net["allow"][0], format!("127.0.0.1:{port}"));
    let out = s.call(
        "explicit",
        "bash",
        json!({ "command": format!("curl -s http://127.0.0.1:{port}/; curl -s http://127.0.0.2:{port}/; echo rc=$?") }),
    );
    assert!(text(&out).contains("ok\nrc=7"), "{out}");
    let metrics = client()
        .get(s.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(r#"burrow_net_requests_total{host="127.0.0.1",verdict="allowed"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"burrow_net_requests_total{host="127.0.0.2",verdict="denied"} 1"#),
        "{metrics}"
    );
}
