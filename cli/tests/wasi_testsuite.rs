//! The WebAssembly wasi-testsuite's filesystem tests (vendored under
//! `fixtures/wasi-testsuite/`, see its SOURCE) through `burrow run --preopen /workspace:/`,
//! side by side with plain wasmtime-wasi on a host directory holding the same files. Every
//! test that passes under wasmtime-wasi must pass under burrow, except the ones listed in
//! [`KNOWN`] with the reason; a listed test that starts passing fails this test too, so the
//! list stays true.

use crate::common;

use std::path::{Path, PathBuf};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Tests burrow does not pass although wasmtime-wasi does, and why.
const KNOWN: &[(&str, &str)] = &[(
    "rust/path_link",
    "hard links: the store gives every inode one parent (link-count 1), so link-at is \
     `not-supported`",
)];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/wasi-testsuite")
}

/// One test's spec (the legacy form the filesystem tests use).
struct Spec {
    name: String,
    wasm: PathBuf,
    root: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    exit_code: i32,
    stdout: Option<String>,
}

fn specs() -> Vec<Spec> {
    let mut out = Vec::new();
    for suite in ["rust", "c"] {
        let dir = fixtures().join(suite);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        names.sort();
        for n in names {
            let j: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join(format!("{n}.json"))).unwrap())
                    .unwrap();
            let strs = |v: &serde_json::Value| -> Vec<String> {
                v.as_array()
                    .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                    .unwrap_or_default()
            };
            out.push(Spec {
                name: format!("{suite}/{n}"),
                wasm: dir.join(format!("{n}.wasm")),
                root: dir.join(j["root"].as_str().unwrap()),
                args: strs(&j["args"]),
                env: j["env"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                            .collect()
                    })
                    .unwrap_or_default(),
                exit_code: j["exit_code"].as_i64().unwrap_or(0) as i32,
                stdout: j["stdout"].as_str().map(str::to_string),
            });
        }
    }
    out
}

/// Whether a run's exit code and stdout are what the spec expects (the suite's runner
/// checks stdout only when the spec gives it).
fn passes(spec: &Spec, code: i32, stdout: &str) -> bool {
    code == spec.exit_code && spec.stdout.as_deref().is_none_or(|s| s == stdout)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Runs `spec` through the real CLI: a session made from the test's directory, the workspace
/// preopened at `/`. Returns (exit code, stdout, stderr).
fn under_burrow(spec: &Spec, db: &Path, cache: &Path) -> (i32, String, String) {
    let burrow = |args: &[&str]| common::burrow_cli(db, cache, args);
    let (code, id, err) = burrow(&["session", "new", "--from", spec.root.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut args = vec![
        "run".to_string(),
        id.trim().to_string(),
        spec.wasm.to_str().unwrap().to_string(),
        "--preopen".into(),
        "/workspace:/".into(),
    ];
    if !spec.args.is_empty() {
        args.push("--".into());
        args.extend(spec.args.iter().cloned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    burrow(&args)
}

struct Plain {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Plain {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// Runs `spec` under plain wasmtime-wasi with a copy of the test's directory preopened at
/// `/`, as the suite's own wasmtime adapter does (`--dir ROOT::/`).
fn under_wasmtime(spec: &Spec, engine: &wasmtime::Engine, scratch: &Path) -> (i32, String) {
    let root = scratch.join(spec.name.replace('/', "_"));
    copy_dir(&spec.root, &root);
    let wasm = std::fs::read(&spec.wasm).unwrap();
    let component = burrow_host::adapt::to_component(&wasm).unwrap();
    let component = Component::new(engine, &component).unwrap();
    let mut linker: Linker<Plain> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let stdout = MemoryOutputPipe::new(1 << 20);
    let mut b = WasiCtxBuilder::new();
    b.arg(spec.name.rsplit('/').next().unwrap());
    for a in &spec.args {
        b.arg(a);
    }
    for (k, v) in &spec.env {
        b.env(k, v);
    }
    b.stdout(stdout.clone());
    b.preopened_dir(&root, "/", FsPerms::ReadWrite).unwrap();
    let mut store = wasmtime::Store::new(
        engine,
        Plain {
            ctx: b.build(),
            table: ResourceTable::new(),
        },
    );
    let cmd =
        wasmtime_wasi::p2::bindings::sync::Command::instantiate(&mut store, &component, &linker)
            .unwrap();
    let code = match cmd.wasi_cli_run().call_run(&mut store) {
        Ok(Ok(())) => 0,
        Ok(Err(())) => 1,
        Err(e) => match e.downcast_ref::<wasmtime_wasi::I32Exit>() {
            Some(x) => x.0,
            None => 134, // a trap, as a panicking test ends
        },
    };
    drop(store);
    (
        code,
        String::from_utf8_lossy(&stdout.contents()).into_owned(),
    )
}

#[test]
fn filesystem_tests_pass_as_under_wasmtime_wasi() {
    let specs = specs();
    assert!(specs.len() >= 40, "fixtures missing: {}", specs.len());
    let dir = tempfile::tempdir().unwrap();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache");
    let engine = wasmtime::Engine::default();
    let mut table = String::new();
    let (mut ok_burrow, mut ok_plain) = (0, 0);
    let mut wrong = Vec::new();
    for spec in &specs {
        assert!(
            spec.env.is_empty(),
            "{}: env in a spec is not supported",
            spec.name
        );
        let (code, out, err) = under_burrow(spec, &dir.path().join("s.db"), &cache);
        let b = passes(spec, code, &out);
        let (pcode, pout) = under_wasmtime(spec, &engine, dir.path());
        let p = passes(spec, pcode, &pout);
        ok_burrow += usize::from(b);
        ok_plain += usize::from(p);
        let known = KNOWN.iter().find(|(n, _)| *n == spec.name);
        table.push_str(&format!(
            "{:<45} burrow {:<5} wasmtime-wasi {}\n",
            spec.name,
            if b { "pass" } else { "FAIL" },
            if p { "pass" } else { "FAIL" },
        ));
        match (b, p, known) {
            (false, true, None) => wrong.push(format!(
                "{}: fails under burrow (exit {code}): {out}{err}",
                spec.name
            )),
            (true, _, Some(_)) => {
                wrong.push(format!("{}: passes now; take it out of KNOWN", spec.name))
            }
            _ => {}
        }
    }
    println!(
        "{table}wasi-testsuite filesystem tests: burrow {ok_burrow}/{n}, wasmtime-wasi {ok_plain}/{n}",
        n = specs.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
