//! `burrow worker` at parity with the Anthropic SDK's self-hosted worker, as a real process
//! against the fake Managed Agents API (tests/fake_ma): the permission gate fails closed
//! (ask, deny, unknown values, verdicts before calls, holds across a stream reconnect and a
//! worker restart), custom tools, `--once` and `--item-id`, skills and memory stores.

use crate::fake_ma;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_ma::*;
use serde_json::{Value, json};

fn ask(id: &str, command: &str) -> Value {
    let mut ev = tool_use(id, "bash", json!({ "command": command }));
    ev["evaluated_permission"] = json!("ask");
    ev
}

fn verdict(id: &str, result: &str) -> Value {
    json!({"type": "user.tool_confirmation", "tool_use_id": id, "result": result})
}

/// Whether any result was posted for `id` (builtin or custom).
fn answered(fake: &FakeServer, session: &str, id: &str) -> usize {
    fake.with(|f| {
        f.sessions[session]
            .events
            .iter()
            .filter(|e| e["tool_use_id"] == id || e["custom_tool_use_id"] == id)
            .filter(|e| e["type"] != "user.tool_confirmation")
            .count()
    })
}

/// The burrow session's events of `kind`, as JSON data.
fn events(db: &std::path::Path, session: &str, kind: &str) -> Vec<Value> {
    let out = burrow(db, &["log", session, "--json"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// The burrow session serving a Managed Agents session (the only one in the store).
fn only_session(db: &std::path::Path) -> String {
    let out = burrow(db, &["--json", "session", "ls"]);
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_string)
        .unwrap_or_default();
    let v: Value = serde_json::from_str(&first).unwrap_or_default();
    v["id"].as_str().unwrap_or("").to_string()
}

fn exists(db: &std::path::Path, session: &str, path: &str) -> bool {
    burrow(db, &["cat", session, path]).status.success()
}

#[test]
fn permission_gates_fail_closed() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.session("sesn_G", json!({}));
        // Held from history: asked before any worker was up.
        f.push_event(
            "sesn_G",
            ask("g1", "echo g1 >> /workspace/ran.txt; echo ran-g1"),
        );
        // A verdict that arrives before its call.
        f.push_event("sesn_G", verdict("g4", "allow"));
        f.enqueue("w1", "sesn_G", "tok_sesn_G");
    });
    let w = worker(&db, &fake.base);
    fake.with(|f| {
        f.push_event(
            "sesn_G",
            ask("g4", "echo g4 >> /workspace/ran.txt; echo early"),
        );
    });
    // g4 is confirmed, but an earlier call (g1) waits for the user: the session takes
    // their results in order, so g4 waits too.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(answered(&fake, "sesn_G", "g1"), 0, "g1 waits for the user");
    assert_eq!(answered(&fake, "sesn_G", "g4"), 0, "g4 waits behind g1");

    fake.with(|f| {
        // The user denies one, the server denies another, a third has a permission value
        // this worker does not know.
        f.push_event(
            "sesn_G",
            ask("g2", "echo DENIED > /workspace/denied-user.txt"),
        );
        let mut g3 = tool_use(
            "g3",
            "bash",
            json!({"command": "echo DENIED > /workspace/denied-server.txt"}),
        );
        g3["evaluated_permission"] = json!("deny");
        f.push_event("sesn_G", g3);
        let mut g5 = tool_use(
            "g5",
            "bash",
            json!({"command": "echo DENIED > /workspace/unknown.txt"}),
        );
        g5["evaluated_permission"] = json!("sometimes");
        f.push_event("sesn_G", g5);
        f.push_event("sesn_G", verdict("g2", "deny"));
        f.push_event("sesn_G", verdict("g1", "allow"));
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_G", "g1")),
        (false, "ran-g1".into())
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_G", "g4")),
        (false, "early".into())
    );

    // The session waits on g5 (held for the user): a held call keeps the work item alive
    // past --max-idle (2 s).
    fake.with(|f| f.push_event("sesn_G", requires_action(&["g5"])));
    std::thread::sleep(Duration::from_secs(4));
    assert!(!fake.stopped("w1"), "a held call keeps the item alive");

    // A network blip: the stream reconnects, the reconcile keeps the hold (it does not run
    // g5), and a verdict sent meanwhile is honoured.
    fake.with(|f| {
        f.push_event(
            "sesn_G",
            ask("g7", "echo g7 >> /workspace/ran.txt; echo after-blip"),
        );
        // The session now waits on g7 (an idle that lists only it: g5 no longer holds it).
        f.push_event("sesn_G", requires_action(&["g7"]));
        f.disconnect("sesn_G");
        f.push_event("sesn_G", verdict("g7", "allow"));
    });
    assert_eq!(
        text_of(&fake.result_for("sesn_G", "g7")),
        (false, "after-blip".into())
    );
    assert_eq!(answered(&fake, "sesn_G", "g5"), 0);

    // An unknown verdict fails closed; then the session is idle with nothing held and the
    // item stops.
    fake.with(|f| {
        f.push_event("sesn_G", verdict("g5", "maybe"));
        f.push_event("sesn_G", idle());
    });
    fake.wait("w1 stopped once nothing is held", || {
        fake.stopped("w1").then_some(())
    });
    drop(w);

    for id in ["g2", "g3", "g5"] {
        assert_eq!(
            answered(&fake, "sesn_G", id),
            0,
            "{id}: denied calls post nothing"
        );
    }
    for id in ["g1", "g4", "g7"] {
        assert_eq!(
            answered(&fake, "sesn_G", id),
            1,
            "{id}: allowed calls run once"
        );
    }
    let s = only_session(&db);
    for p in ["denied-user.txt", "denied-server.txt", "unknown.txt"] {
        assert!(!exists(&db, &s, p), "{p}: a denied command never ran");
    }
    let ran = burrow(&db, &["cat", &s, "ran.txt"]);
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "g1\ng4\ng7\n");
    // Every gate decision is in the session's log; no tool event for a denied call.
    // (g2 is reported held only if its denial came in a later read than the call.)
    let held: Vec<String> = events(&db, &s, "held")
        .iter()
        .map(|e| e["data"]["tool_use_id"].as_str().unwrap_or("").to_string())
        .filter(|id| id != "g2")
        .collect();
    assert_eq!(held, ["g1", "g5", "g7"]);
    let mut denied: Vec<(String, String)> = events(&db, &s, "denied")
        .iter()
        .map(|e| {
            (
                e["data"]["tool_use_id"].as_str().unwrap_or("").to_string(),
                e["data"]["by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    denied.sort();
    assert_eq!(
        denied,
        [
            ("g2".into(), "user".into()),
            ("g3".into(), "server".into()),
            ("g5".into(), "user".into())
        ]
    );
    assert_eq!(events(&db, &s, "confirmed").len(), 3);
    let tools = events(&db, &s, "tool");
    assert_eq!(tools.len(), 3, "only the allowed calls ran: {tools:?}");
    assert!(fake.with(|f| f.violations.clone()).is_empty());
}

#[test]
fn holds_survive_a_worker_restart() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.session("sesn_R", json!({}));
        f.push_event(
            "sesn_R",
            ask("r1", "echo r1 >> /workspace/ran.txt; echo one"),
        );
        f.push_event(
            "sesn_R",
            ask("r2", "echo r2 >> /workspace/ran.txt; echo two"),
        );
        f.enqueue("w1", "sesn_R", "tok_sesn_R");
    });
    let mut w = worker(&db, &fake.base);
    fake.wait("w1 acked", || {
        fake.with(|f| f.works["w1"].acked.then_some(()))
    });
    std::thread::sleep(Duration::from_millis(1500));
    // The worker dies hard while both calls are held.
    w.0.kill().unwrap();
    w.0.wait().unwrap();
    assert_eq!(
        answered(&fake, "sesn_R", "r1") + answered(&fake, "sesn_R", "r2"),
        0
    );
    // The user approves r1 while no worker is up; a new process serves a new item.
    fake.with(|f| {
        f.push_event("sesn_R", verdict("r1", "allow"));
        f.enqueue("w2", "sesn_R", "tok_sesn_R");
    });
    let w2 = worker(&db, &fake.base);
    assert_eq!(
        text_of(&fake.result_for("sesn_R", "r1")),
        (false, "one".into())
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        answered(&fake, "sesn_R", "r2"),
        0,
        "r2 is still held after the restart"
    );
    fake.with(|f| f.push_event("sesn_R", verdict("r2", "allow")));
    assert_eq!(
        text_of(&fake.result_for("sesn_R", "r2")),
        (false, "two".into())
    );
    fake.with(|f| f.push_event("sesn_R", json!({"type": "session.status_terminated"})));
    fake.wait("w2 stopped", || fake.stopped("w2").then_some(()));
    drop(w2);
    let s = only_session(&db);
    let ran = burrow(&db, &["cat", &s, "ran.txt"]);
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "r1\nr2\n",
        "each ran exactly once"
    );
}

#[test]
fn custom_tools_once_and_claimed_items() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");

    // --once with an empty queue: exits 0 after --max-idle.
    let started = Instant::now();
    let w = worker_with(&db, &fake.base, &["--once"]);
    let status = wait_exit(w, 30);
    assert!(status.success());
    assert!(started.elapsed() >= Duration::from_secs(2));

    fake.with(|f| {
        f.session("sesn_C", json!({}));
        let custom = |id: &str, name: &str, input: Value| {
            json!({"type": "agent.custom_tool_use", "id": id, "name": name, "input": input})
        };
        f.push_event("sesn_C", custom("c1", "lookup", json!({"q": "café", "n": 2})));
        f.push_event("sesn_C", custom("c2", "fail", json!({})));
        f.push_event("sesn_C", custom("c3", "someone_else", json!({})));
        f.push_event("sesn_C", custom("c4", "quiet", json!({})));
        // A client's tools run once the session waits on them.
        f.push_event("sesn_C", requires_action(&["c1", "c2", "c3", "c4"]));
        f.enqueue("w1", "sesn_C", "tok_sesn_C");
        f.enqueue("w2", "sesn_C", "tok_sesn_C");
    });
    let w = worker_with(
        &db,
        &fake.base,
        &[
            "--once",
            "--custom-tool",
            "lookup=jq -r '.q + \" x\" + (.n|tostring)' | tee /workspace/looked-up.txt",
            "--custom-tool",
            "fail=echo oops >&2; exit 3",
            "--custom-tool",
            "quiet=true",
        ],
    );
    let c1 = fake.result_for_custom("sesn_C", "c1");
    assert_eq!(c1["is_error"], false);
    assert_eq!(
        c1["content"],
        json!([{"type": "text", "text": "café x2\n"}])
    );
    let c2 = fake.result_for_custom("sesn_C", "c2");
    assert_eq!(c2["is_error"], true);
    assert_eq!(c2["content"][0]["text"], "oops\n");
    let c4 = fake.result_for_custom("sesn_C", "c4");
    assert_eq!(c4["content"][0]["text"], "(no output)");
    fake.with(|f| f.push_event("sesn_C", idle()));
    let status = wait_exit(w, 60);
    assert!(status.success());
    assert!(fake.stopped("w1"));
    assert!(
        !fake.with(|f| f.works["w2"].acked),
        "--once claims one item only"
    );
    assert_eq!(
        answered(&fake, "sesn_C", "c3"),
        0,
        "a custom tool without a handler is left alone"
    );
    let s = only_session(&db);
    assert_eq!(
        burrow(&db, &["cat", &s, "looked-up.txt"]).stdout,
        "café x2\n".as_bytes()
    );
    let tools: Vec<String> = events(&db, &s, "tool")
        .iter()
        .map(|e| e["data"]["tool"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tools, ["custom:lookup", "custom:fail", "custom:quiet"]);

    // --item-id: an item claimed elsewhere, served with only its secret (no environment
    // key in the process), no poll, no ack; the same burrow session resumes.
    use base64::Engine as _;
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"sessions_token": "tok_sesn_C"}).to_string());
    fake.with(|f| {
        f.push_event(
            "sesn_C",
            tool_use(
                "c5",
                "read",
                json!({"file_path": "/workspace/looked-up.txt"}),
            ),
        );
    });
    let polls = fake.with(|f| f.polls);
    let child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env("BURROW_STORE", &db)
        .env("BURROW_CACHE", cache())
        .env_remove("ANTHROPIC_ENVIRONMENT_KEY")
        .env("ANTHROPIC_ENVIRONMENT_ID", "env_1")
        .env("ANTHROPIC_WORK_ID", "w2")
        .env("ANTHROPIC_SESSION_ID", "sesn_C")
        .env("ANTHROPIC_WORK_SECRET", &secret)
        .args(["worker", "--base-url", &fake.base, "--max-idle", "1s"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(
        text_of(&fake.result_for("sesn_C", "c5")),
        (false, "café x2\n".into())
    );
    fake.with(|f| f.push_event("sesn_C", json!({"type": "session.status_terminated"})));
    let status = wait_exit(Worker(child), 60);
    assert!(status.success());
    assert!(fake.stopped("w2"));
    assert_eq!(fake.with(|f| f.polls), polls, "--item-id never polls");
    assert_eq!(only_session(&db), s);
    assert!(fake.with(|f| f.violations.clone()).is_empty());
}

fn wait_exit(mut w: Worker, secs: u64) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = w.0.try_wait().unwrap() {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "the worker did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A tar.gz of `entries` (name, data, mode), names written raw (hostile ones too).
fn tar_gz(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data, mode) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(tar::EntryType::Regular);
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

#[test]
fn skills_land_once_per_session() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.skills.insert(
            "skill_pdf".into(),
            Skill {
                name: "pdf".into(),
                version: "v1".into(),
                archive: tar_gz(&[
                    ("pdf/SKILL.md", b"# PDF skill\n", 0o644),
                    ("pdf/scripts/fill.sh", b"echo filled\n", 0o755),
                ]),
            },
        );
        f.skills.insert(
            "skill_bad".into(),
            Skill {
                name: "bad".into(),
                version: "v1".into(),
                archive: tar_gz(&[
                    ("bad/SKILL.md", b"x", 0o644),
                    ("bad/../../escape", b"x", 0o644),
                ]),
            },
        );
        f.skills.insert(
            "skill_sub".into(),
            Skill {
                name: "sub".into(),
                version: "v3".into(),
                archive: tar_gz(&[("sub/SKILL.md", b"# a subagent's skill\n", 0o644)]),
            },
        );
        f.session("sesn_S", json!({}));
        let s = f.sessions.get_mut("sesn_S").unwrap();
        s.skills = json!([
            {"type": "custom", "skill_id": "skill_pdf", "version": "latest"},
            {"type": "custom", "skill_id": "skill_bad", "version": "v1"},
        ]);
        // A subagent's skills land too; a skill the agent has already is not fetched twice.
        s.multiagent = json!({"type": "coordinator", "agents": [
            {"type": "agent", "skills": [
                {"type": "custom", "skill_id": "skill_sub", "version": "v3"},
                {"type": "custom", "skill_id": "skill_pdf", "version": "v0"},
            ]},
        ]});
        f.push_event(
            "sesn_S",
            tool_use(
                "s1",
                "bash",
                json!({"command": "cat skills/pdf/SKILL.md; ls skills"}),
            ),
        );
        f.enqueue("w1", "sesn_S", "tok_sesn_S");
    });
    let w = worker(&db, &fake.base);
    assert_eq!(
        text_of(&fake.result_for("sesn_S", "s1")),
        (false, "# PDF skill\npdf\nsub".into())
    );
    fake.with(|f| f.push_event("sesn_S", idle()));
    fake.wait("w1 stopped", || fake.stopped("w1").then_some(()));
    drop(w);
    assert_eq!(fake.with(|f| f.skill_downloads), 3);

    // The next morning, another process: the skill is there, not downloaded again.
    fake.with(|f| {
        f.push_event(
            "sesn_S",
            tool_use(
                "s2",
                "bash",
                json!({"command": "skills/pdf/scripts/fill.sh"}),
            ),
        );
        f.enqueue("w2", "sesn_S", "tok_sesn_S");
    });
    let w = worker(&db, &fake.base);
    assert_eq!(
        text_of(&fake.result_for("sesn_S", "s2")),
        (false, "filled".into())
    );
    drop(w);
    assert_eq!(
        fake.with(|f| f.skill_downloads),
        4,
        "only the bad skill is tried again"
    );
    let s = only_session(&db);
    let installed = events(&db, &s, "skills_installed");
    assert_eq!(installed.len(), 1, "{installed:?}");
    assert_eq!(
        installed[0]["data"]["installed"][0]["dir"],
        "/workspace/skills/pdf"
    );
    assert!(
        installed[0]["data"]["skipped"][0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("'..'"),
        "{installed:?}"
    );
    assert!(!exists(&db, &s, "skills/bad/SKILL.md"));
    // Modes as the SDK sets them (WASI shows guests no permission bits; the export does).
    let out = dir.path().join("export");
    assert!(
        burrow(&db, &["export", &s, out.to_str().unwrap()])
            .status
            .success()
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &str| std::fs::metadata(out.join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("skills/pdf/scripts/fill.sh"), 0o755);
    assert_eq!(mode("skills/pdf/SKILL.md"), 0o644);
    assert_eq!(mode("skills/pdf"), 0o700);
    assert!(fake.with(|f| f.violations.clone()).is_empty());
}

#[test]
fn memory_stores_round_trip() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.add_memory("memstore_a", "/prefs.md", "tabs\n");
        f.add_memory("memstore_a", "/deep/dir/b.md", "beta\n");
        f.add_memory("memstore_a", "/gone.md", "delete me\n");
        f.add_memory("memstore_a", "/keep.md", "keep\n");
        f.add_memory("memstore_t", "/team.md", "team\n");
        f.add_memory("memstore_x", "/o.md", "outside\n");
        f.session("sesn_M", json!({}));
        let s = f.sessions.get_mut("sesn_M").unwrap();
        s.resources = json!([
            {"type": "memory_store", "memory_store_id": "memstore_a", "mount_path": "/workspace/memory/prefs", "access": "read_write", "name": "prefs"},
            {"type": "memory_store", "memory_store_id": "memstore_t", "name": "team", "access": "read_only"},
            {"type": "memory_store", "memory_store_id": "memstore_x", "mount_path": "/mnt/memory/outside", "name": "outside"},
        ]);
        f.push_event(
            "sesn_M",
            tool_use("m1", "bash", json!({"command": "cat memory/prefs/prefs.md memory/prefs/deep/dir/b.md memory/team/team.md /mnt/memory/outside/o.md; ls -a memory"})),
        );
        f.enqueue("w1", "sesn_M", "tok_sesn_M");
    });
    let w = worker_with(&db, &fake.base, &["--memory-sync-interval", "5s"]);
    assert_eq!(
        text_of(&fake.result_for("sesn_M", "m1")),
        (
            false,
            "tabs\nbeta\nteam\noutside\n.\n..\nprefs\nteam".into()
        ),
        "downloaded, each store at its mount_path, /mnt/memory/outside too"
    );
    // The file tools write through the store: the store takes the file first (before the
    // result, with no sync in between), refuses the marker, and a conflicting edit changes
    // nothing. They reach a folder outside /workspace; a read-only store's they only read.
    let write = |id: &str, path: &str, content: &str| {
        tool_use(id, "write", json!({"file_path": path, "content": content}))
    };
    fake.with(|f| {
        f.push_event(
            "sesn_M",
            write("w1", "/workspace/memory/prefs/direct.md", "direct\n"),
        );
        f.push_event(
            "sesn_M",
            write("w2", "/workspace/memory/prefs/.anthropic-memory-store", "x"),
        );
        f.push_event("sesn_M", write("w3", "/workspace/memory/team/x.md", "x"));
        f.push_event("sesn_M", write("w4", "/mnt/memory/outside/w.md", "out\n"));
        f.push_event(
            "sesn_M",
            tool_use(
                "w5",
                "read",
                json!({"file_path": "/mnt/memory/outside/o.md"}),
            ),
        );
    });
    let (err, text) = text_of(&fake.result_for("sesn_M", "w1"));
    assert_eq!(
        (err, text.as_str()),
        (false, "wrote 7 bytes to /workspace/memory/prefs/direct.md")
    );
    assert_eq!(
        fake.with(|f| f.memory_map("memstore_a"))
            .get("/direct.md")
            .map(String::as_str),
        Some("direct\n"),
        "the store took the write before its result was posted"
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_M", "w2")),
        (true, "write: /workspace/memory/prefs/.anthropic-memory-store: not saved to memory, so the change was not made: this file marks the folder as a memory store.".into())
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_M", "w3")),
        (true, "write: /workspace/memory/team/x.md is inside read-only directory /workspace/memory/team".into())
    );
    assert!(!text_of(&fake.result_for("sesn_M", "w4")).0);
    assert_eq!(
        fake.with(|f| f.memory_map("memstore_x"))
            .get("/w.md")
            .map(String::as_str),
        Some("out\n")
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_M", "w5")),
        (false, "outside\n".into())
    );
    fake.with(|f| {
        f.edit_memory("memstore_a", "/direct.md", "remote\n");
        f.push_event(
            "sesn_M",
            tool_use(
                "w6",
                "edit",
                json!({"file_path": "/workspace/memory/prefs/direct.md",
                "old_string": "direct", "new_string": "DIRECT"}),
            ),
        );
    });
    let (err, text) = text_of(&fake.result_for("sesn_M", "w6"));
    assert!(err, "{text}");
    assert!(
        text.starts_with("edit: /workspace/memory/prefs/direct.md: not saved to memory, so the change was not made: 409 ")
            && text.ends_with(". Read the file again before you retry."),
        "{text}"
    );
    assert_eq!(
        fake.with(|f| f.memory_map("memstore_a"))
            .get("/direct.md")
            .map(String::as_str),
        Some("remote\n"),
        "the conflicting edit did not reach the store"
    );

    // The agent edits, creates and deletes memories; a remote edit happens meanwhile.
    fake.with(|f| {
        f.push_event(
            "sesn_M",
            tool_use("m2", "bash", json!({"command": "echo spaces > memory/prefs/prefs.md; echo new > memory/prefs/new.md; rm memory/prefs/gone.md; echo /w== | base64 -d > memory/prefs/binary.bin; echo there > /mnt/memory/outside/new.md"})),
        );
        f.edit_memory("memstore_a", "/keep.md", "kept remotely\n");
    });
    fake.result_for("sesn_M", "m2");
    // The turn ends and the item with it: the final sync pushes edits and sends the delete
    // at once.
    fake.with(|f| f.push_event("sesn_M", idle()));
    fake.wait("w1 stopped", || fake.stopped("w1").then_some(()));
    drop(w);
    let remote = fake.with(|f| f.memory_map("memstore_a"));
    assert_eq!(
        remote.get("/prefs.md").map(String::as_str),
        Some("spaces\n")
    );
    assert_eq!(remote.get("/new.md").map(String::as_str), Some("new\n"));
    assert_eq!(
        remote.get("/gone.md"),
        None,
        "the local delete reached the server"
    );
    assert_eq!(remote.get("/binary.bin"), None, "not UTF-8: never uploaded");
    assert_eq!(
        fake.with(|f| f.memory_map("memstore_x"))
            .get("/new.md")
            .map(String::as_str),
        Some("there\n"),
        "a write under a mount_path outside /workspace synced back"
    );
    let s = only_session(&db);
    // That folder is the session's own: another process sees it, a fork has it, and it is
    // not part of the project (its diff and export).
    let out = burrow(
        &db,
        &["sh", &s, "cat /mnt/memory/outside/new.md; ls /mnt/memory"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "there\noutside\n");
    let fork = String::from_utf8_lossy(&burrow(&db, &["fork", &s]).stdout)
        .trim()
        .to_string();
    let out = burrow(&db, &["sh", &fork, "cat /mnt/memory/outside/o.md"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "outside\n");
    let tar = dir.path().join("export.tar");
    assert!(
        burrow(&db, &["export", &s, tar.to_str().unwrap()])
            .status
            .success()
    );
    let listing = String::from_utf8_lossy(&std::fs::read(&tar).unwrap()).into_owned();
    assert!(
        listing.contains("memory/prefs/new.md") && !listing.contains("outside"),
        "export holds the project only"
    );
    assert_eq!(
        burrow(&db, &["cat", &s, "memory/prefs/keep.md"]).stdout,
        b"kept remotely\n",
        "the remote edit was pulled"
    );

    // Resumed by a new work item in another process (a new Managed Agents session run on
    // the same burrow session): the folder syncs instead of downloading again.
    fake.with(|f| {
        f.edit_memory("memstore_a", "/deep/dir/b.md", "beta 2\n");
        f.push_event(
            "sesn_M",
            tool_use(
                "m3",
                "bash",
                json!({"command": "cat memory/prefs/deep/dir/b.md; rm memory/prefs/keep.md"}),
            ),
        );
        f.enqueue("w2", "sesn_M", "tok_sesn_M");
    });
    let w = worker_with(&db, &fake.base, &["--memory-delete", "log_only"]);
    assert_eq!(
        text_of(&fake.result_for("sesn_M", "m3")),
        (false, "beta 2".into())
    );
    fake.with(|f| f.push_event("sesn_M", json!({"type": "session.status_terminated"})));
    fake.wait("w2 stopped", || fake.stopped("w2").then_some(()));
    drop(w);
    let remote = fake.with(|f| f.memory_map("memstore_a"));
    assert!(remote.contains_key("/keep.md"), "log_only never deletes");
    let synced = events(&db, &s, "memory_synced");
    let downloads = synced
        .iter()
        .filter(|e| e["data"]["downloaded"].is_number())
        .count();
    assert_eq!(downloads, 3, "one download per store, ever: {synced:?}");
    assert!(fake.with(|f| f.violations.clone()).is_empty());
}

/// A server on 127.0.0.1 that answers every GET with `hello from PORT`: its port, and the
/// runtime to keep alive.
fn hello_server() -> (tokio::runtime::Runtime, u16) {
    let (rt, base) = crate::common::serve(axum::Router::new().fallback(|| async { "hello\n" }));
    let port = base.rsplit(':').next().unwrap().parse().unwrap();
    (rt, port)
}

/// `burrow worker --allow-net --secret`: the sessions it serves get that policy. A call to
/// the allowed server reaches it; one to another port is refused with the policy's words;
/// the secret is a placeholder in the guest.
#[test]
fn network_flags_apply_to_the_sessions_it_serves() {
    let (_a, allowed) = hello_server();
    let (_b, other) = hello_server();
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.session("sesn_N", json!({}));
        let bash = |id: &str, cmd: String| tool_use(id, "bash", json!({ "command": cmd }));
        f.push_event(
            "sesn_N",
            bash("n1", format!("curl -sS http://127.0.0.1:{allowed}/")),
        );
        f.push_event(
            "sesn_N",
            bash("n2", format!("curl -sS http://127.0.0.1:{other}/")),
        );
        f.push_event("sesn_N", bash("n3", "echo $TOKEN".into()));
        f.enqueue("w1", "sesn_N", "tok_sesn_N");
    });
    let w = worker_with(
        &db,
        &fake.base,
        &[
            "--once",
            "--allow-net",
            &format!("127.0.0.1:{allowed}"),
            "--secret",
            &format!("TOKEN@http://127.0.0.1:{allowed}"),
        ],
    );
    let (err, text) = text_of(&fake.result_for("sesn_N", "n1"));
    assert_eq!((err, text.as_str()), (false, "hello"));
    let (err, text) = text_of(&fake.result_for("sesn_N", "n2"));
    assert!(err, "{text}");
    assert!(
        text.contains(&format!("network access to 127.0.0.1:{other}"))
            && text.contains("is denied by the session's policy"),
        "{text}"
    );
    let (err, text) = text_of(&fake.result_for("sesn_N", "n3"));
    assert!(!err && text.starts_with("burrow-secret-"), "{text}");
    fake.with(|f| f.push_event("sesn_N", idle()));
    assert!(wait_exit(w, 60).success());
    // The policy is the session's own, kept for later work items and shown by `burrow net`.
    let s = only_session(&db);
    let out = burrow(&db, &["net", &s]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("allow  127.0.0.1:{allowed}"))
            && shown.contains(&format!("secret TOKEN@http://127.0.0.1:{allowed}")),
        "{shown}"
    );
}

/// The worker posts a tool call's result only once its commit is durable (its default
/// `--durability full`). On a PostgreSQL store that requires a synchronous standby which
/// never connects, every commit that waits for the WAL flush waits for ever: a write call's
/// result is not posted while the standby is required, and is posted once it is not. (At
/// `normal` the commit would not wait and the result would go out first.)
#[test]
fn a_result_is_posted_only_once_its_call_is_durable() {
    let Some(private) = crate::pg::Private::start() else {
        return;
    };
    let url = private.server.fresh_db();
    let fake = fake_managed_agents();
    fake.with(|f| {
        f.session("sesn_D", json!({}));
        f.push_event(
            "sesn_D",
            tool_use("d1", "bash", json!({"command": "echo ready"})),
        );
        f.enqueue("w1", "sesn_D", "tok_sesn_D");
    });
    let w = worker_with(std::path::Path::new(&url), &fake.base, &[]);
    assert_eq!(
        text_of(&fake.result_for("sesn_D", "d1")),
        (false, "ready".into())
    );
    private.require_standby("nobody");
    fake.with(|f| {
        f.push_event(
            "sesn_D",
            tool_use(
                "d2",
                "write",
                json!({"file_path": "/workspace/kept.txt", "content": "kept\n"}),
            ),
        );
    });
    std::thread::sleep(Duration::from_secs(3));
    let early = answered(&fake, "sesn_D", "d2");
    private.require_standby("");
    assert_eq!(
        early, 0,
        "the result was posted before its commit was durable"
    );
    let (err, text) = text_of(&fake.result_for("sesn_D", "d2"));
    assert!(!err, "{text}");
    fake.with(|f| f.push_event("sesn_D", idle()));
    drop(w);
    let s = {
        let out = burrow(std::path::Path::new(&url), &["--json", "session", "ls"]);
        let first = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        serde_json::from_str::<Value>(&first).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let out = burrow(std::path::Path::new(&url), &["cat", &s, "kept.txt"]);
    assert_eq!(out.stdout, b"kept\n");
}

/// Session threads (subagents), as the SDK 2.17 serves them: each thread works in a shell of
/// its own; a thread's calls run in order, a later one held behind an earlier one that waits
/// for the user; a thread that terminates while its call runs gets no result posted, its
/// other calls never run, and its shell is gone (a later call is refused until a restart).
#[test]
fn session_threads() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let bash = |cmd: &str| json!({ "command": cmd });
    fake.with(|f| {
        f.session("sesn_T", json!({}));
        f.push_event(
            "sesn_T",
            tool_use(
                "p1",
                "bash",
                bash("mkdir -p sub && cd sub && X=primary; pwd"),
            ),
        );
        f.push_event(
            "sesn_T",
            thread_tool_use(
                "t1",
                "sthr_1",
                "bash",
                bash("pwd; echo ${X:-unset}; cd /tmp"),
            ),
        );
        f.push_event("sesn_T", tool_use("p2", "bash", bash("pwd; echo $X")));
        f.push_event(
            "sesn_T",
            thread_tool_use("t2", "sthr_1", "bash", bash("pwd")),
        );
        f.enqueue("w1", "sesn_T", "tok_sesn_T");
    });
    let w = worker_with(&db, &fake.base, &["--max-concurrent-calls", "2"]);
    assert_eq!(
        text_of(&fake.result_for("sesn_T", "p1")),
        (false, "/workspace/sub".into())
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_T", "t1")),
        (false, "/workspace\nunset".into())
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_T", "p2")),
        (false, "/workspace/sub\nprimary".into())
    );
    assert_eq!(
        text_of(&fake.result_for("sesn_T", "t2")),
        (false, "/tmp".into())
    );

    // Thread 2 sent a status, so its calls keep their order: t4 waits behind t3, which
    // waits for the user.
    fake.with(|f| {
        f.push_event("sesn_T", thread_status("running", "sthr_2"));
        let mut t3 = thread_tool_use(
            "t3",
            "sthr_2",
            "bash",
            bash("echo t3 >> /workspace/order.txt"),
        );
        t3["evaluated_permission"] = json!("ask");
        f.push_event("sesn_T", t3);
        f.push_event(
            "sesn_T",
            thread_tool_use(
                "t4",
                "sthr_2",
                "bash",
                bash("echo t4 >> /workspace/order.txt"),
            ),
        );
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(answered(&fake, "sesn_T", "t4"), 0, "t4 is held behind t3");
    fake.with(|f| f.push_event("sesn_T", verdict("t3", "allow")));
    fake.result_for("sesn_T", "t4");
    let s = only_session(&db);
    assert_eq!(burrow(&db, &["cat", &s, "order.txt"]).stdout, b"t3\nt4\n");

    // Thread 3 terminates while its call runs: the call finishes (a burrow call is never
    // cut short) but its result is not posted; its next call never runs.
    fake.with(|f| {
        f.push_event("sesn_T", thread_status("running", "sthr_3"));
        f.push_event(
            "sesn_T",
            thread_tool_use(
                "t5",
                "sthr_3",
                "bash",
                bash("sleep 2; echo done > /workspace/t5.txt"),
            ),
        );
        f.push_event(
            "sesn_T",
            thread_tool_use("t6", "sthr_3", "bash", bash("echo ran > /workspace/t6.txt")),
        );
    });
    std::thread::sleep(Duration::from_millis(700));
    fake.with(|f| f.push_event("sesn_T", thread_status("terminated", "sthr_3")));
    fake.wait("t5's effect", || exists(&db, &s, "t5.txt").then_some(()));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        answered(&fake, "sesn_T", "t5"),
        0,
        "no result for a terminated thread"
    );
    assert_eq!(answered(&fake, "sesn_T", "t6"), 0);
    assert!(!exists(&db, &s, "t6.txt"), "t6 never ran");
    // Late input makes the thread run again; its shell is gone.
    fake.with(|f| {
        f.push_event("sesn_T", thread_status("running", "sthr_3"));
        f.push_event(
            "sesn_T",
            thread_tool_use("t7", "sthr_3", "bash", bash("echo hi")),
        );
    });
    let (err, text) = text_of(&fake.result_for("sesn_T", "t7"));
    assert!(
        err && text.starts_with("[This command did not run, because the shell is gone."),
        "{text}"
    );
    fake.with(|f| f.push_event("sesn_T", json!({"type": "session.status_terminated"})));
    fake.wait("w1 stopped", || fake.stopped("w1").then_some(()));
    drop(w);
    assert!(fake.with(|f| f.violations.clone()).is_empty());
    // One GET of the session per connection (the item's, then the runner's).
    assert!(fake.with(|f| f.sessions["sesn_T"].reads) >= 2);
}

/// The lease and the posting rules of the SDK 2.17: a result the API refuses (400) is
/// answered with an error result naming the refusal; a heartbeat that lets the item go
/// (`lease_extended: false`) ends it and stops it; a lost lease (412) ends it without
/// stopping it, and nothing more is posted.
#[test]
fn lease_ends_and_refused_results() {
    let fake = fake_managed_agents();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    fake.with(|f| {
        f.session("sesn_L", json!({}));
        f.sessions
            .get_mut("sesn_L")
            .unwrap()
            .refuse
            .insert("l1".into());
        f.push_event(
            "sesn_L",
            tool_use("l1", "bash", json!({"command": "echo too long"})),
        );
        f.enqueue("w1", "sesn_L", "tok_sesn_L");
    });
    let w = worker(&db, &fake.base);
    assert_eq!(
        text_of(&fake.result_for("sesn_L", "l1")),
        (true, "The API refused the result of tool 'bash': 400 content too long (request_id: req_1, path: /v1/sessions/sesn_L/events, type: invalid_request_error)".into())
    );
    fake.with(|f| f.works.get_mut("w1").unwrap().shutdown = true);
    fake.wait("w1 stopped after the server let it go", || {
        fake.stopped("w1").then_some(())
    });

    // Another item of the same session: its lease is taken by someone else.
    fake.with(|f| f.enqueue("w2", "sesn_L", "tok_sesn_L"));
    fake.wait("w2 heartbeats", || {
        fake.with(|f| (f.works["w2"].heartbeats.len() >= 2).then_some(()))
    });
    fake.with(|f| {
        f.works.get_mut("w2").unwrap().last_heartbeat = Some("someone else's".into());
    });
    fake.wait("w2's lease lost", || {
        fake.with(|f| (f.works["w2"].rejected > 0).then_some(()))
    });
    std::thread::sleep(Duration::from_millis(500));
    fake.with(|f| {
        f.push_event(
            "sesn_L",
            tool_use("l2", "bash", json!({"command": "echo after"})),
        );
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        answered(&fake, "sesn_L", "l2"),
        0,
        "a lost lease posts nothing"
    );
    assert!(!fake.stopped("w2"), "a lost lease does not stop the item");
    drop(w);
    assert!(fake.with(|f| f.violations.clone()).is_empty());
}

#[test]
fn max_concurrent_calls_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = burrow(
        &dir.path().join("s.db"),
        &[
            "worker",
            "--environment-id",
            "e",
            "--max-concurrent-calls",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("must be at least 1, or none for no limit (got 0)"),
        "{err}"
    );
}
