//! Host benchmarks (criterion): per-call overhead against the plain wasmtime-wasi floor, a
//! guest reading a 4 KiB file, and compile vs cached load of a component.
//!
//! `cargo bench -p burrow-cli --bench engine`

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use burrow_cli::bench::PlainWasi as Plain;
use burrow_host::{EngineConfig, RunOptions};
use burrow_store::Store;
use criterion::{Criterion, criterion_group, criterion_main};
use wasmtime::component::{Component, Linker};
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p2::bindings::sync::CommandPre;

fn opts(args: &[&str]) -> RunOptions {
    RunOptions {
        program_name: "fs-probe".into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let wasm_path = common::guest("fs-probe");
    let wasm = std::fs::read(&wasm_path).unwrap();
    let engine = common::engine(&tmp.path().join("cache"));
    let program = engine.load(&wasm).unwrap();
    let store = Store::open(tmp.path().join("bench.db")).unwrap();
    store.create_workspace("w").unwrap();
    {
        let mut t = store.begin("w").unwrap();
        t.write_file("4k.txt", &[b'x'; 4096]).unwrap();
        t.commit().unwrap();
    }

    // The floor: the same component under plain wasmtime-wasi, no filesystem, no store.
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let plain_engine = wasmtime::Engine::new(&config).unwrap();
    let mut linker = Linker::<Plain>::new(&plain_engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let component = Component::new(&plain_engine, &wasm).unwrap();
    let pre = CommandPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();

    let mut g = c.benchmark_group("per-call");
    g.bench_function("plain-wasmtime-wasi-noop", |b| {
        b.iter(|| {
            let mut w = WasiCtx::builder();
            w.arg("fs-probe").arg("noop");
            let mut s = wasmtime::Store::new(&plain_engine, Plain::new(w.build()));
            let cmd = pre.instantiate(&mut s).unwrap();
            black_box(cmd.wasi_cli_run().call_run(&mut s).unwrap())
        })
    });
    g.bench_function("burrow-noop-in-transaction", |b| {
        b.iter(|| black_box(engine.run(&store, "w", &program, &opts(&["noop"])).unwrap()))
    });
    g.bench_function("burrow-cat-4KiB", |b| {
        b.iter(|| {
            let r = engine
                .run(&store, "w", &program, &opts(&["cat", "4k.txt"]))
                .unwrap();
            assert_eq!(r.report.stdout.len(), 4096);
            r
        })
    });
    g.finish();

    // The shell, through the session layer (one transaction and version per call).
    let sb = burrow_host::Sandbox::open_with(
        tmp.path().join("sessions.db"),
        burrow_host::SandboxConfig {
            cache_dir: Some(tmp.path().join("cache")),
            ..Default::default()
        },
    )
    .unwrap();
    let session = sb.create(None).unwrap().id;
    sb.sh(&session, "seq 1 200 > small.txt").unwrap();
    let mut g = c.benchmark_group("shell");
    g.bench_function("echo-hi", |b| {
        b.iter(|| {
            let r = sb.sh(&session, "echo hi").unwrap();
            assert_eq!(r.report.stdout, b"hi\n");
        })
    });
    g.bench_function("cat-small-file-pipe-wc-l", |b| {
        b.iter(|| {
            let r = sb.sh(&session, "cat small.txt | wc -l").unwrap();
            assert_eq!(r.report.stdout, b"200\n");
        })
    });
    g.bench_function("agent-read-4KiB", |b| {
        let input = serde_json::json!({ "file_path": "4k.txt" });
        sb.call(
            &session,
            burrow_host::Family::AgentToolset,
            "write",
            &serde_json::json!({ "file_path": "4k.txt", "content": "x".repeat(4096) }),
        )
        .unwrap();
        b.iter(|| {
            let out = sb
                .call(&session, burrow_host::Family::AgentToolset, "read", &input)
                .unwrap();
            assert!(!out.is_error);
        })
    });
    // Resume inside a process: a new Sandbox on the same store file (new engine, tool
    // component from the disk cache), then the first read.
    g.sample_size(20);
    let store_path = tmp.path().join("sessions.db");
    g.bench_function("cold-open-first-read", |b| {
        b.iter(|| {
            let sb = burrow_host::Sandbox::open_with(
                &store_path,
                burrow_host::SandboxConfig {
                    cache_dir: Some(tmp.path().join("cache")),
                    ..Default::default()
                },
            )
            .unwrap();
            let out = sb
                .call(
                    &session,
                    burrow_host::Family::AgentToolset,
                    "read",
                    &serde_json::json!({ "file_path": "4k.txt" }),
                )
                .unwrap();
            assert!(!out.is_error);
        })
    });
    g.finish();

    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    g.bench_function("compile-no-cache", |b| {
        b.iter(|| {
            let e = burrow_host::Engine::new(EngineConfig {
                cache_dir: None,
                no_pooling: true,
                ..Default::default()
            })
            .unwrap();
            black_box(e.load(&wasm).unwrap())
        })
    });
    let cache = tmp.path().join("cache2");
    common::engine(&cache).load(&wasm).unwrap();
    g.bench_function("load-from-disk-cache", |b| {
        b.iter(|| {
            let e = burrow_host::Engine::new(EngineConfig {
                cache_dir: Some(cache.clone()),
                no_pooling: true,
                ..Default::default()
            })
            .unwrap();
            let p = e.load(&wasm).unwrap();
            assert!(!p.compiled);
            black_box(p)
        })
    });
    g.finish();
}

criterion_group! {
    name = engine;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = benches
}
criterion_main!(engine);
