//! Per-call CPU budgets (`--cpu-budget`, `Settings::cpu_budget`): a call within its budget
//! succeeds and records the fuel it used; a runaway call is stopped at the budget, fails with
//! the budget's error and leaves the session exactly as it was (files it wrote first
//! included), whether the loop runs in the shell itself, in a pipeline stage (a nested store)
//! or in python3; the engine level (the metered engine's own artifacts, the guard against a
//! program of the other engine), the CLI (`session new`, `run`, `burrow log`) and the HTTP
//! API. No timing is asserted: a budget is counted in instructions, not time.

use crate::common;

use std::path::Path;

use burrow_host::session::{CallLimits, Family, Settings};
use burrow_host::{CpuBudget, Limits, RunError, RunOptions};
use burrow_store::Store;
use serde_json::{Value, json};

/// A budget no test call comes near.
const AMPLE: u64 = 10_000_000_000;
/// A budget a runaway loop uses up in well under a second.
const SMALL: u64 = 20_000_000;

fn last_event(sb: &burrow_host::Sandbox, id: &str) -> Value {
    let events = sb.log(id, 0, 10_000).unwrap();
    let e = events.last().expect("an event");
    serde_json::from_str(&e.data).unwrap()
}

fn text(out: &burrow_host::tools::ToolOutput) -> String {
    out.joined_text()
}

#[test]
fn a_call_within_its_budget_succeeds_and_records_its_fuel() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = common::sandbox(tmp.path());
    let settings = Settings {
        cpu_budget: Some(AMPLE),
        ..Default::default()
    };
    let id = sb.create_with(Some("m"), &settings).unwrap().id;
    assert_eq!(sb.info(&id).unwrap().settings.cpu_budget, Some(AMPLE));

    // A shell call (the shell and a pipeline stage, each in its own store).
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({"command": "echo hi > a.txt; cat a.txt | tr a-z A-Z"}),
        )
        .unwrap();
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out), "HI");
    let data = last_event(&sb, &id);
    assert_eq!(data["cpu_budget"], AMPLE);
    let shell_fuel = data["fuel"].as_u64().expect("fuel in the event");
    assert!(shell_fuel > 0 && shell_fuel < AMPLE, "{data}");

    // A file-tool call (another component) is metered too.
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "write",
            &json!({"file_path": "b.txt", "content": "x"}),
        )
        .unwrap();
    assert!(!out.is_error, "{}", text(&out));
    let data = last_event(&sb, &id);
    assert!(data["fuel"].as_u64().is_some_and(|f| f > 0), "{data}");

    // A session without a budget runs unmetered: no fuel in its events.
    let plain = sb.create(None).unwrap().id;
    sb.call(
        &plain,
        Family::AgentToolset,
        "bash",
        &json!({"command": "true"}),
    )
    .unwrap();
    let data = last_event(&sb, &plain);
    assert!(data.get("fuel").is_none(), "{data}");

    // A budget of 0 is refused.
    let zero = Settings {
        cpu_budget: Some(0),
        ..Default::default()
    };
    assert!(sb.create_with(None, &zero).is_err());
}

/// Runs `command` as a bash tool call in a fresh session with budget `budget`, after writing
/// keep.txt and `files`; asserts that the call failed with the budget's error and changed
/// nothing.
fn assert_stopped(sb: &burrow_host::Sandbox, files: &[(&str, &[u8])], command: &str, budget: u64) {
    let settings = Settings {
        cpu_budget: Some(budget),
        ..Default::default()
    };
    let id = sb.create_with(None, &settings).unwrap().id;
    sb.put_file(&id, "keep.txt", b"before\n").unwrap();
    for (path, bytes) in files {
        sb.put_file(&id, path, bytes).unwrap();
    }
    let head = sb.info(&id).unwrap().version;
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({ "command": command }),
        )
        .unwrap();
    assert!(out.is_error, "{command}: {}", text(&out));
    let expected = format!("cpu budget: the call used more than its budget of {budget} fuel units");
    assert!(text(&out).contains(&expected), "{command}: {}", text(&out));
    // The session is exactly as before: the head, the file changed and the file made.
    assert_eq!(sb.info(&id).unwrap().version, head, "{command}");
    assert_eq!(sb.cat(&id, "keep.txt").unwrap(), b"before\n", "{command}");
    assert!(sb.cat(&id, "spin.txt").is_err(), "{command}");
    let data = last_event(sb, &id);
    assert_eq!(data["cpu_budget"], budget, "{data}");
    assert!(
        data["fuel"].as_u64().is_some_and(|f| f >= budget),
        "{command}: {data}"
    );
    assert!(
        data["error"]
            .as_str()
            .is_some_and(|e| e.contains(&expected)),
        "{data}"
    );
    // The session works on: the next call runs (and is metered afresh).
    let out = sb
        .call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({"command": "cat keep.txt"}),
        )
        .unwrap();
    assert_eq!(text(&out), "before", "{command}");
    let fuel = last_event(sb, &id)["fuel"].as_u64().unwrap_or(u64::MAX);
    assert!(
        fuel < budget,
        "{command}: the next call started from 0, used {fuel}"
    );
}

#[test]
fn a_runaway_loop_is_stopped_at_the_budget_and_rolled_back() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = common::sandbox(tmp.path());
    // In the shell itself, and in a pipeline.
    assert_stopped(
        &sb,
        &[],
        "echo changed > keep.txt; echo x > spin.txt; while true; do :; done",
        SMALL,
    );
    assert_stopped(
        &sb,
        &[],
        "echo changed > keep.txt; echo x > spin.txt; (while true; do :; done) | cat",
        SMALL,
    );
    // In a program the shell starts (a nested store, drawing on the same budget): fs-probe's
    // `spin` writes spin.txt and loops; run alone and as a streaming pipeline stage.
    let probe = std::fs::read(common::guest("fs-probe")).unwrap();
    for command in [
        "echo changed > keep.txt; ./probe.wasm spin",
        "echo changed > keep.txt; ./probe.wasm spin | cat",
    ] {
        assert_stopped(&sb, &[("probe.wasm", &probe)], command, SMALL);
    }
    // A call's own budget (`sh_call`) replaces the session's none.
    let id = sb.create(None).unwrap().id;
    let head = sb.info(&id).unwrap().version;
    let limits = CallLimits {
        cpu_budget: Some(SMALL),
        ..Default::default()
    };
    let err = sb
        .sh_call(
            &id,
            "echo x > spin.txt; while true; do :; done",
            b"",
            "sh",
            limits,
        )
        .expect_err("over its budget");
    assert!(
        matches!(
            err,
            burrow_host::SessionError::Run(RunError::CpuBudget(SMALL))
        ),
        "{err}"
    );
    assert_eq!(sb.info(&id).unwrap().version, head);
    assert!(sb.cat(&id, "spin.txt").is_err());
    let r = sb.sh_call(&id, "echo ok", b"", "sh", limits).unwrap();
    assert!(r.report.fuel.is_some_and(|f| f > 0 && f < SMALL));
}

#[test]
fn python_busy_loop_is_stopped_at_the_budget() {
    let dir = burrow_host::toolchain::default_dir();
    if !dir.join("python/toolchain.json").is_file() {
        let msg = format!(
            "skipping: the python toolchain is not installed in {}",
            dir.display()
        );
        if std::env::var("BURROW_REQUIRE_PYTHON").as_deref() == Ok("1") {
            panic!("{msg}; BURROW_REQUIRE_PYTHON=1");
        }
        println!("{msg}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sb = burrow_host::Sandbox::open_with(
        tmp.path().join("s.db"),
        burrow_host::SandboxConfig {
            // The CLI's cache: the metered interpreter compiled once there serves later runs.
            cache_dir: Some(burrow_host::session::default_cache_dir()),
            toolchains: Some(dir),
            ..Default::default()
        },
    )
    .unwrap();
    // Starting the interpreter takes a few hundred million instructions; the loop the rest.
    assert_stopped(
        &sb,
        &[],
        "echo changed > keep.txt; python3 -c 'open(\"spin.txt\", \"w\").write(\"x\")\nwhile True: pass'",
        3_000_000_000,
    );
}

#[test]
fn the_metered_engine_has_its_own_artifacts_and_programs() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let engine = common::engine(&cache);
    let metered = engine.metered().unwrap();
    assert!(metered.is_metered() && !engine.is_metered());
    let wasm = common::guest("fs-probe");
    let plain = engine.load_file(&wasm).unwrap();
    let counted = metered.load_file(&wasm).unwrap();
    assert!(plain.compiled && counted.compiled, "one artifact each");
    let artifacts = std::fs::read_dir(&cache)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        })
        .count();
    assert_eq!(artifacts, 2);
    // A new process's metered engine maps the artifact instead of compiling.
    let again = common::engine(&cache).metered().unwrap();
    assert!(!again.load_file(&wasm).unwrap().compiled);

    let store = Store::open(tmp.path().join("s.db")).unwrap();
    store.create_workspace("w").unwrap();
    let head = store.workspace("w").unwrap().version;
    let spin = |cpu: Option<CpuBudget>| RunOptions {
        program_name: "fs-probe".into(),
        args: vec!["spin".into()],
        limits: Limits {
            cpu,
            ..Limits::default()
        },
        ..Default::default()
    };
    // Over the budget: the budget's error, the write before the loop rolled back.
    let cpu = CpuBudget::new(SMALL);
    let err = metered
        .run(&store, "w", &counted, &spin(Some(cpu.clone())))
        .expect_err("over budget");
    assert!(matches!(err, RunError::CpuBudget(SMALL)), "{err}");
    assert!(cpu.exceeded() && cpu.used() >= SMALL);
    assert_eq!(store.workspace("w").unwrap().version, head);
    assert!(store.begin("w").unwrap().read_file("spin.txt").is_err());
    // A program of one engine on the other, or a budget on the unmetered one: refused, not
    // run unmetered (or out of fuel at once).
    for (e, p, cpu) in [
        (&metered, &plain, Some(CpuBudget::new(AMPLE))),
        (&engine, &counted, None),
        (&engine, &plain, Some(CpuBudget::new(AMPLE))),
        (&metered, &counted, None),
    ] {
        let err = e.run(&store, "w", p, &spin(cpu)).expect_err("mismatch");
        assert!(matches!(err, RunError::Host(_)), "{err}");
    }
}

fn cli(db: &Path, args: &[&str]) -> (i32, String, String) {
    common::burrow_cli(db, &common::cache(), args)
}

#[test]
fn cli_session_budget_run_budget_and_log() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let (code, id, err) = cli(
        &db,
        &["session", "new", "--name", "m", "--cpu-budget", "20000000"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!id.trim().is_empty());
    let (code, out, err) = cli(&db, &["sh", "m", "echo hi > a.txt; cat a.txt"]);
    assert_eq!((code, out.as_str()), (0, "hi\n"), "{err}");
    let (code, _, err) = cli(
        &db,
        &["sh", "m", "echo x > spin.txt; while true; do :; done"],
    );
    assert_eq!(code, 125, "{err}");
    assert!(
        err.contains("cpu budget: the call used more than its budget of 20000000 fuel units")
            && err.contains("the session is unchanged"),
        "{err}"
    );
    let (code, _, _) = cli(&db, &["cat", "m", "spin.txt"]);
    assert_ne!(code, 0, "spin.txt survived");
    // `burrow log` shows the fuel of each metered call.
    let (code, log, err) = cli(&db, &["log", "m"]);
    assert_eq!(code, 0, "{err}");
    let fuel_lines: Vec<&str> = log.lines().filter(|l| l.contains("[fuel ")).collect();
    assert_eq!(fuel_lines.len(), 2, "{log}");
    assert!(fuel_lines[0].contains(" of 20000000]"), "{log}");
    // `burrow run --cpu-budget`: a component past it exits 125, the session unchanged.
    let probe = common::guest("fs-probe");
    let probe = probe.to_str().unwrap();
    let (code, _, err) = cli(
        &db,
        &["run", "--cpu-budget", "20000000", "m", probe, "--", "spin"],
    );
    assert_eq!(code, 125, "{err}");
    assert!(err.contains("cpu budget"), "{err}");
    let (code, _, err) = cli(
        &db,
        &["run", "--cpu-budget", "20000000", "m", probe, "--", "noop"],
    );
    assert_eq!(code, 0, "{err}");
    let (_, log, _) = cli(&db, &["log", "m", "--json"]);
    let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "run");
    assert!(
        last["data"]["fuel"].as_u64().is_some_and(|f| f > 0),
        "{last}"
    );
    // 0 is not a budget.
    let (code, _, _) = cli(&db, &["session", "new", "--cpu-budget", "0"]);
    assert_ne!(code, 0);
}

#[test]
fn http_sessions_take_a_budget_and_events_carry_fuel() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("s.db"), &[]);
    let c = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .unwrap();
    let post = |path: &str, body: Value| -> (u16, Value) {
        let r = c
            .post(format!("{}{path}", s.base))
            .json(&body)
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    };
    let (st, info) = post(
        "/sessions",
        json!({"name": "m", "settings": {"cpu_budget": SMALL}}),
    );
    assert_eq!(st, 201, "{info}");
    assert_eq!(info["settings"]["cpu_budget"], SMALL);
    let (st, out) = post(
        "/sessions/m/call",
        json!({"tool": "bash", "input": {"command": "echo hi"}}),
    );
    assert_eq!(st, 200, "{out}");
    assert_eq!(out["is_error"], false, "{out}");
    let (st, out) = post(
        "/sessions/m/call",
        json!({"tool": "bash", "input": {"command": "echo x > spin.txt; while true; do :; done"}}),
    );
    assert_eq!(st, 200, "{out}");
    assert_eq!(out["is_error"], true, "{out}");
    assert!(
        out["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("cpu budget")),
        "{out}"
    );
    let events: Value = c
        .get(format!("{}/sessions/m/events?limit=100", s.base))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let tools: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool")
        .collect();
    assert_eq!(tools.len(), 2, "{events}");
    assert!(tools.iter().all(|e| e["data"]["fuel"].as_u64().is_some()));
    // The budget is in the OpenAPI document's session settings.
    let doc: Value = c
        .get(format!("{}/openapi.json", s.base))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let settings = &doc["components"]["schemas"]["Settings"]["properties"]["cpu_budget"];
    assert!(
        settings.is_object(),
        "{}",
        doc["components"]["schemas"]["Settings"]
    );
    // A budget of 0 is refused.
    let (st, _) = post("/sessions", json!({"settings": {"cpu_budget": 0}}));
    assert_eq!(st, 400);
}
