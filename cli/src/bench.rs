//! `burrow bench`: burrow's performance claims as numbers anyone can reproduce, each measured
//! several times after a warm-up and reported as median and p99, next to a baseline measured
//! in the same run where one exists (plain wasmtime-wasi on a host directory, GNU grep on the
//! same tree on disk, a bare process start, a fork of an empty session). Fixture trees are
//! generated deterministically into a temporary directory; nothing large is committed.
//!
//! `--quick` shrinks every size so the whole run takes seconds (CI runs it as a smoke test);
//! the numbers of docs/BENCHMARKS.md come from the full run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

mod fuel;
pub mod git;
mod just_bash;
mod pipe;
mod python;
mod rollouts;
mod shared;
mod utilities;

pub use shared::SharedStore;

use burrow_host::session::{Family, Sandbox, SandboxConfig, SessionError};
use burrow_host::tools::FS_TOOLS_WASM;
use burrow_host::{Engine, EngineConfig, RunOptions};

/// One measured quantity.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    pub name: String,
    pub unit: String,
    pub median: f64,
    pub p99: f64,
    /// The same quantity for the baseline, in the same unit.
    pub baseline: Option<f64>,
    /// `median / baseline`.
    pub ratio: Option<f64>,
    /// What the baseline is, or why the measure was skipped.
    pub note: String,
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub quick: bool,
    /// Run only measures whose name contains this.
    pub only: Option<String>,
    /// The burrow binary (for the process-level measures).
    pub exe: PathBuf,
    /// A shared store (`--store postgres://...`) to measure next to the SQLite file.
    pub shared: Option<SharedStore>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Run(#[from] burrow_host::RunError),
    #[error(transparent)]
    Store(#[from] burrow_store::Error),
    #[error("{0}")]
    Other(String),
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Other(format!("i/o: {e}"))
    }
}

type R<T> = Result<T, BenchError>;

/// Median and p99 of samples.
fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// Times `f` `n` times after one warm-up run, in the unit's scale (`1e3` = ms, `1e6` = µs).
fn time_it(n: usize, scale: f64, mut f: impl FnMut() -> R<()>) -> R<(f64, f64)> {
    f()?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64() * scale);
    }
    Ok(stats(v))
}

/// Times `base` and `subject` `n` times each, taking turns, so that a slow spell of a shared
/// machine falls on both and their ratio holds: (base, subject), each (median, p99).
fn time_pair(
    n: usize,
    scale: f64,
    mut base: impl FnMut() -> R<()>,
    mut subject: impl FnMut() -> R<()>,
) -> R<((f64, f64), (f64, f64))> {
    base()?;
    subject()?;
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        base()?;
        a.push(t.elapsed().as_secs_f64() * scale);
        let t = Instant::now();
        subject()?;
        b.push(t.elapsed().as_secs_f64() * scale);
    }
    Ok((stats(a), stats(b)))
}

/// A deterministic pseudo-random generator (xorshift), so fixture trees are identical runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const WORDS: &[&str] = &[
    "let", "fn", "self", "return", "match", "value", "error", "store", "page", "commit", "version",
    "table", "index", "buffer", "result", "config", "handle", "stream", "reader",
];

/// Writes a source-like tree: `files` files of about `bytes_each` bytes of text lines, 1 in
/// 40 lines holding `TODO`, spread over nested directories.
fn source_tree(root: &Path, files: usize, bytes_each: usize) -> R<u64> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = 0;
    for i in 0..files {
        let dir = root.join(format!("src/m{:02}/p{:02}", i % 37, (i / 37) % 23));
        std::fs::create_dir_all(&dir)?;
        let mut text = String::with_capacity(bytes_each + 80);
        while text.len() < bytes_each {
            let n = 4 + (rng.next() % 8) as usize;
            for _ in 0..n {
                text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                text.push(' ');
            }
            if rng.next().is_multiple_of(40) {
                text.push_str("// TODO: revisit");
            }
            text.push('\n');
        }
        total += text.len() as u64;
        std::fs::write(dir.join(format!("f{i}.rs")), text)?;
    }
    Ok(total)
}

/// Writes a data tree of `files` files totalling about `bytes` (incompressible bytes).
fn data_tree(root: &Path, files: usize, bytes: u64) -> R<()> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let each = (bytes / files as u64).max(1) as usize;
    let mut buf = vec![0u8; each];
    for i in 0..files {
        let dir = root.join(format!("d{:03}/e{:02}", i / 1000, (i / 100) % 10));
        std::fs::create_dir_all(&dir)?;
        for chunk in buf.chunks_mut(8) {
            let r = rng.next().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        std::fs::write(dir.join(format!("f{i}.dat")), &buf)?;
    }
    Ok(())
}

struct Ctx {
    cfg: BenchConfig,
    dir: tempfile::TempDir,
    cache: PathBuf,
    out: Vec<Measure>,
}

impl Ctx {
    fn wants(&self, name: &str) -> bool {
        self.cfg.only.as_deref().is_none_or(|o| name.contains(o))
    }

    fn sandbox(&self, db: &str) -> R<Sandbox> {
        self.sandbox_durable(db, Default::default())
    }

    /// [`Ctx::sandbox`] whose calls' commits are made with `durability`.
    fn sandbox_durable(&self, db: &str, durability: burrow_store::Durability) -> R<Sandbox> {
        Ok(Sandbox::open_with(
            self.dir.path().join(db),
            SandboxConfig {
                cache_dir: Some(self.cache.clone()),
                compile_builtins: burrow_host::session::compile_builtins_from_env(),
                durability,
                ..Default::default()
            },
        )?)
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        name: &str,
        unit: &str,
        (median, p99): (f64, f64),
        baseline: Option<f64>,
        note: &str,
        report: &mut dyn FnMut(&Measure),
    ) {
        let m = Measure {
            name: name.into(),
            unit: unit.into(),
            median,
            p99,
            baseline,
            ratio: baseline.filter(|b| *b > 0.0).map(|b| median / b),
            note: note.into(),
        };
        report(&m);
        self.out.push(m);
    }

    fn n(&self, quick: usize, full: usize) -> usize {
        if self.cfg.quick { quick } else { full }
    }

    /// The source-like tree of the search and import rows: (files, bytes each), about
    /// 100 MB in a full run.
    fn source_size(&self) -> (usize, usize) {
        if self.cfg.quick {
            (500, 4_000)
        } else {
            (10_000, 10_000)
        }
    }
}

/// Runs every measure (or those `--only` names), calling `report` as each completes.
pub fn run(cfg: BenchConfig, report: &mut dyn FnMut(&Measure)) -> R<Vec<Measure>> {
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let mut cx = Ctx {
        cfg,
        dir,
        cache,
        out: Vec::new(),
    };
    per_call(&mut cx, report)?;
    fuel::fuel(&mut cx, report)?;
    resume(&mut cx, report)?;
    fork(&mut cx, report)?;
    search_and_io(&mut cx, report)?;
    pipe::pipe(&mut cx, report)?;
    idle(&mut cx, report)?;
    concurrency(&mut cx, report)?;
    one_session(&mut cx, report)?;
    http(&mut cx, report)?;
    egress(&mut cx, report)?;
    python::python(&mut cx, report)?;
    rollouts::rollouts(&mut cx, report)?;
    git::git(&mut cx, report)?;
    shared::shared(&mut cx, report)?;
    Ok(cx.out)
}

/// Writes a 4 KiB file into a session with a tool call.
fn write_4k(sb: &Sandbox, id: &str, path: &str) -> R<()> {
    sb.call(
        id,
        Family::AgentToolset,
        "write",
        &json!({"file_path": path, "content": "x".repeat(4096)}),
    )?;
    Ok(())
}

/// The fs-tools component reading 4 KiB: in burrow (store-backed filesystem, in a
/// transaction) vs plain wasmtime-wasi on a host directory; then full tool calls.
fn per_call(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let n = cx.n(20, 300);
    if cx.wants("per_call.read_4k") {
        let host = cx.dir.path().join("plain");
        std::fs::create_dir_all(&host)?;
        std::fs::write(host.join("4k.txt"), [b'x'; 4096])?;
        let request = br#"{"op":"read","path":"4k.txt","max_bytes":null}"#.to_vec();
        let floor = plain_wasi_runs(&host, &request, n)?;

        let engine = Engine::new(EngineConfig {
            cache_dir: Some(cx.cache.clone()),
            no_pooling: true,
            ..Default::default()
        })?;
        let program = engine.load(FS_TOOLS_WASM)?;
        let store = burrow_store::Store::open(cx.dir.path().join("percall.db"))?;
        store.create_workspace("w")?;
        let mut t = store.begin("w")?;
        t.write_file("4k.txt", &[b'x'; 4096])?;
        t.commit()?;
        let opts = RunOptions {
            program_name: "fs-tools".into(),
            stdin: request,
            ..Default::default()
        };
        let burrow = time_it(n, 1e6, || {
            let t = store.begin("w")?;
            let (_t, r) = engine.run_txn(&program, t, &opts)?;
            if r.stdout.len() < 4096 {
                return Err(BenchError::Other("short read".into()));
            }
            Ok(())
        })?;
        cx.record(
            "per_call.read_4k",
            "µs",
            burrow,
            Some(floor.0),
            "same component and request under plain wasmtime-wasi on a host dir",
            report,
        );
    }
    let sb = cx.sandbox("calls.db")?;
    let id = sb.create(None)?.id;
    write_4k(&sb, &id, "4k.txt")?;
    if cx.wants("session.read_4k") {
        let input = json!({"file_path": "4k.txt"});
        let r = time_it(n, 1e6, || {
            sb.call(&id, Family::AgentToolset, "read", &input)?;
            Ok(())
        })?;
        cx.record(
            "session.read_4k",
            "µs",
            r,
            None,
            "a whole tool call: transaction, component, event row",
            report,
        );
    }
    if cx.wants("session.write_4k_full") {
        // What the worker's and the agent's default (`--durability full`) costs a write call:
        // the same call on a second file at each durability, taking turns.
        let full = cx.sandbox_durable("calls-full.db", burrow_store::Durability::Full)?;
        let full_id = full.create(None)?.id;
        let input = json!({"file_path": "w.txt", "content": "y".repeat(4096)});
        let (base, r) = time_pair(
            n,
            1e6,
            || {
                sb.call(&id, Family::AgentToolset, "write", &input)?;
                Ok(())
            },
            || {
                full.call(&full_id, Family::AgentToolset, "write", &input)?;
                Ok(())
            },
        )?;
        cx.record(
            "session.write_4k_full",
            "µs",
            r,
            Some(base.0),
            "a 4 KiB write call at --durability full (synchronous=FULL: the WAL synced at each \
             commit); baseline: the same at the default durability, taking turns",
            report,
        );
    }
    if cx.wants("session.echo_hi") {
        let r = time_it(n, 1e6, || {
            sb.sh(&id, "echo hi")?;
            Ok(())
        })?;
        cx.record(
            "session.echo_hi",
            "µs",
            r,
            None,
            "through the shell component",
            report,
        );
    }
    if cx.wants("session.cat_wc") {
        let r = time_it(n, 1e6, || {
            sb.sh(&id, "cat 4k.txt | wc -l")?;
            Ok(())
        })?;
        cx.record(
            "session.cat_wc",
            "µs",
            r,
            None,
            "`cat 4k.txt | wc -l` through the shell component",
            report,
        );
    }
    let file = [("/home/user/4k.txt", "x".repeat(4096))];
    compare_just_bash(
        cx,
        n,
        &[
            ("session.echo_hi", "echo hi", &file, None),
            ("session.cat_wc", "cat 4k.txt | wc -l", &file, None),
        ],
        report,
    );
    Ok(())
}

/// The store data of a run under plain wasmtime-wasi (no burrow): the baseline of the
/// per-call measures here and in the criterion benches.
pub struct PlainWasi {
    wasi: wasmtime_wasi::WasiCtx,
    table: wasmtime::component::ResourceTable,
}

impl PlainWasi {
    pub fn new(wasi: wasmtime_wasi::WasiCtx) -> PlainWasi {
        PlainWasi {
            wasi,
            table: wasmtime::component::ResourceTable::new(),
        }
    }
}

impl wasmtime_wasi::WasiView for PlainWasi {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Runs the fs-tools component `n` times under plain wasmtime-wasi with `host` preopened as
/// /workspace; returns (median, p99) in µs.
fn plain_wasi_runs(host: &Path, request: &[u8], n: usize) -> R<(f64, f64)> {
    use wasmtime::component::{Component, Linker};
    use wasmtime_wasi::p2::bindings::sync::Command as WasiCommand;
    use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
    use wasmtime_wasi::{FsPerms, WasiCtx};
    let err = |e: wasmtime::Error| BenchError::Other(format!("plain wasmtime-wasi: {e:#}"));
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let engine = wasmtime::Engine::new(&config).map_err(err)?;
    let mut linker = Linker::<PlainWasi>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(err)?;
    let component = Component::new(&engine, FS_TOOLS_WASM).map_err(err)?;
    let pre = linker.instantiate_pre(&component).map_err(err)?;
    time_it(n, 1e6, || {
        let mut b = WasiCtx::builder();
        b.arg("fs-tools")
            .env("PWD", "/workspace")
            .stdin(MemoryInputPipe::new(request.to_vec()))
            .stdout(MemoryOutputPipe::new(1 << 20))
            .preopened_dir(host, "/workspace", FsPerms::ReadWrite)
            .map_err(err)?;
        let mut store = wasmtime::Store::new(&engine, PlainWasi::new(b.build()));
        let instance = pre.instantiate(&mut store).map_err(err)?;
        let cmd = WasiCommand::new(&mut store, &instance).map_err(err)?;
        let _ = cmd.wasi_cli_run().call_run(&mut store).map_err(err)?;
        Ok(())
    })
}

/// Resume: a fresh process to the first read result (vs the bare process start), and a
/// cold in-library open to the first read.
fn resume(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let n = cx.n(5, 30);
    let db = cx.dir.path().join("resume.db");
    {
        let sb = cx.sandbox("resume.db")?;
        let id = sb.create(Some("resume"))?.id;
        sb.call(
            &id,
            Family::AgentToolset,
            "write",
            &json!({"file_path": "notes.md", "content": "resume me\n"}),
        )?;
    }
    let exe = cx.cfg.exe.clone();
    let cache_root = cx.dir.path().join("cli-cache");
    let run_cached = |cache: &Path, args: &[&str]| -> R<()> {
        let out = Command::new(&exe)
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", cache)
            .args(args)
            .output()?;
        if !out.status.success() {
            return Err(BenchError::Other(format!(
                "burrow {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    };
    let run = |args: &[&str]| run_cached(&cache_root, args);
    let cold = ["coldstart.sh_echo_hi", "coldstart.tool_read"];
    let floor = if cx.wants("resume.process") || cold.iter().any(|c| cx.wants(c)) {
        time_it(n, 1e3, || run(&["--version"]))?.0
    } else {
        0.0
    };
    // A fresh machine or serverless container: the component cache is empty at every call.
    let mut fresh = 0;
    for (name, args) in [
        ("coldstart.sh_echo_hi", &["sh", "resume", "echo hi"][..]),
        (
            "coldstart.tool_read",
            &["tool", "resume", "read", r#"{"file_path":"notes.md"}"#][..],
        ),
    ] {
        if !cx.wants(name) {
            continue;
        }
        let r = time_it(n, 1e3, || {
            fresh += 1;
            run_cached(&cx.dir.path().join(format!("empty-cache-{fresh}")), args)
        })?;
        cx.record(
            name,
            "ms",
            r,
            Some(floor),
            "first call of a process with an empty component cache; baseline: --version",
            report,
        );
    }
    if cx.wants("resume.process") {
        let r = time_it(n, 1e3, || {
            run(&["tool", "resume", "read", r#"{"file_path":"notes.md"}"#])
        })?;
        cx.record(
            "resume.process",
            "ms",
            r,
            Some(floor),
            "baseline: the same binary printing its version",
            report,
        );
    }
    if cx.wants("resume.library_cold") {
        let cache = cx.cache.clone();
        let r = time_it(n, 1e3, || {
            let sb = Sandbox::open_with(
                &db,
                SandboxConfig {
                    cache_dir: Some(cache.clone()),
                    ..Default::default()
                },
            )?;
            let id = sb.resolve("resume")?;
            sb.call(
                &id,
                Family::AgentToolset,
                "read",
                &json!({"file_path": "notes.md"}),
            )?;
            Ok(())
        })?;
        cx.record(
            "resume.library_cold",
            "ms",
            r,
            None,
            "new Sandbox on the store file, engine, cached component, first read",
            report,
        );
    }
    Ok(())
}

fn fork(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("fork") {
        return Ok(());
    }
    let (mib, files) = if cx.cfg.quick {
        (8, 2_000)
    } else {
        (1024, 50_000)
    };
    let n = cx.n(10, 50);
    let tree = cx.dir.path().join("data-tree");
    data_tree(&tree, files, mib << 20)?;
    let sb = cx.sandbox("fork.db")?;
    let empty = sb.create(Some("empty"))?.id;
    let big = sb.create_from(Some("big"), &tree, &mut |_| {})?.id;
    std::fs::remove_dir_all(&tree)?;
    let e = time_it(n, 1e6, || {
        sb.fork(&empty, 1)?;
        Ok(())
    })?;
    let b = time_it(n, 1e6, || {
        sb.fork(&big, 1)?;
        Ok(())
    })?;
    cx.record(
        &format!("fork.{mib}MiB_{files}files"),
        "µs",
        b,
        Some(e.0),
        "baseline: fork of an empty session",
        report,
    );
    let before = sb.store_bytes();
    let t = Instant::now();
    let ids = sb.fork(&big, 100)?;
    let took = t.elapsed().as_secs_f64() * 1e3;
    cx.record(
        "fork.n100",
        "ms",
        (took, took),
        None,
        "100 forks in one call",
        report,
    );
    let added = sb.store_bytes().saturating_sub(before) as f64 / ids.len() as f64;
    cx.record(
        "fork.bytes_added_per_fork",
        "bytes",
        (added, added),
        None,
        "store growth (database + WAL) per fork: metadata rows only",
        report,
    );
    Ok(())
}

/// Import and export speed of a source-like tree, then grep, rg, find, cat and wc over it
/// (burrow vs the host's own programs on disk).
fn search_and_io(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let rows = ["io.import", "io.export", "just_bash.search.grep_rn"];
    if !rows.iter().any(|r| cx.wants(r)) && !utilities::wanted(cx) {
        return Ok(());
    }
    let (files, each) = cx.source_size();
    let n = cx.n(3, 10);
    let tree = cx.dir.path().join("src-tree");
    let bytes = source_tree(&tree, files, each)?;
    let mb = bytes as f64 / 1e6;
    let sb = cx.sandbox("search.db")?;
    let mut imported = None;
    let import = time_it(n, 1.0, || {
        let name = format!("src-{}", sb.list()?.len());
        imported = Some(sb.create_from(Some(&name), &tree, &mut |_| {})?.id);
        Ok(())
    })?;
    let id = imported.ok_or_else(|| BenchError::Other("no import".into()))?;
    if cx.wants("io.import") {
        let copy = copy_tree_secs(&tree, &cx.dir.path().join("cp-dest"), n)?;
        cx.record(
            "io.import",
            "MB/s",
            (mb / import.0, mb / import.1),
            copy.map(|s| mb / s),
            &format!(
                "{files} files, {mb:.0} MB from a host directory; baseline: `cp -r` of it to a \
                 directory beside the store (a ratio above 1 is faster than cp)"
            ),
            report,
        );
    }
    if cx.wants("io.export") {
        let r = time_it(n, 1.0, || {
            sb.export_tar(&id, std::io::sink())?;
            Ok(())
        })?;
        cx.record(
            "io.export",
            "MB/s",
            (mb / r.0, mb / r.1),
            None,
            "tar stream of the same tree",
            report,
        );
    }
    utilities::rows(cx, n, &sb, &id, &tree, report)?;
    compare_just_bash(
        cx,
        n,
        &[("search.grep_rn", "grep -rn TODO .", &[], Some(&tree))],
        report,
    );
    std::fs::remove_dir_all(&tree)?;
    Ok(())
}

/// The median seconds of `cp -r tree dest` (dest removed before each run, untimed), or None
/// when `cp` cannot be run.
fn copy_tree_secs(tree: &Path, dest: &Path, n: usize) -> R<Option<f64>> {
    let mut times = Vec::with_capacity(n);
    for i in 0..=n {
        if dest.exists() {
            std::fs::remove_dir_all(dest)?;
        }
        let t = Instant::now();
        let Ok(status) = Command::new("cp").arg("-r").arg(tree).arg(dest).status() else {
            return Ok(None);
        };
        if !status.success() {
            return Ok(None);
        }
        // The first run warms the page cache, as the import's warm-up does.
        if i > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    std::fs::remove_dir_all(dest)?;
    Ok(Some(stats(times).0))
}

/// Rows `just_bash.*`: the same commands through just-bash in this run, each against burrow's
/// row of the same name measured just before (its baseline; a ratio above 1 means just-bash is
/// slower). Not in `--quick` runs (they stay offline); skipped with a note without Node.js.
#[allow(clippy::type_complexity)]
fn compare_just_bash(
    cx: &mut Ctx,
    n: usize,
    rows: &[(&str, &str, &[(&str, String)], Option<&Path>)],
    report: &mut dyn FnMut(&Measure),
) {
    let rows: Vec<_> = rows
        .iter()
        .filter(|r| cx.wants(&format!("just_bash.{}", r.0)))
        .filter_map(|r| {
            let ours = cx.out.iter().find(|m| m.name == r.0)?;
            Some((r, ours.median, ours.unit.clone()))
        })
        .collect();
    if rows.is_empty() || cx.cfg.quick {
        return;
    }
    let cache = burrow_host::session::default_cache_dir();
    let jb = match just_bash::JustBash::find(cache.parent().unwrap_or(&cache)) {
        Ok(jb) => jb,
        Err(why) => {
            eprintln!("bench: {why}");
            return;
        }
    };
    let jobs: Vec<just_bash::Job<'_>> = rows
        .iter()
        .map(|((name, command, files, root), _, _)| just_bash::Job {
            name,
            command,
            files,
            root: *root,
        })
        .collect();
    match jb.time(n, &jobs) {
        Ok(samples) => {
            for (((name, command, _, _), ours, unit), ms) in rows.iter().zip(samples) {
                let scale = if unit == "µs" { 1e3 } else { 1.0 };
                let v = stats(ms.iter().map(|m| m * scale).collect());
                cx.record(
                    &format!("just_bash.{name}"),
                    unit,
                    v,
                    Some(*ours),
                    &format!(
                        "`{command}` in just-bash {} (Node.js), one exec each; baseline: burrow's {name}",
                        just_bash::VERSION
                    ),
                    report,
                );
            }
        }
        Err(why) => eprintln!("bench: {why}"),
    }
}

/// Many idle sessions: store bytes per session, and a fresh process resuming a random one.
fn idle(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("idle") {
        return Ok(());
    }
    let count = cx.n(500, 10_000);
    let db = cx.dir.path().join("idle.db");
    let ids = {
        let sb = cx.sandbox("idle.db")?;
        let id = sb.create(Some("source"))?.id;
        sb.sh(&id, "mkdir -p notes && seq 1 1000 > notes/numbers.txt")?;
        let before = sb.store_bytes();
        let ids = sb.fork(&id, count)?;
        let per = sb.store_bytes().saturating_sub(before) as f64 / count as f64;
        cx.record(
            &format!("idle.store_bytes_per_session_{count}"),
            "bytes",
            (per, per),
            None,
            "idle sessions hold no process and no memory: only these bytes",
            report,
        );
        ids
    };
    let mut rng = Rng(42);
    let n = cx.n(5, 20);
    let exe = cx.cfg.exe.clone();
    let cache = cx.dir.path().join("cli-cache");
    let rss_file = cx.dir.path().join("peak-rss");
    let mut peak_kib: f64 = 0.0;
    let r = time_it(n, 1e3, || {
        let id = &ids[(rng.next() % ids.len() as u64) as usize];
        let out = Command::new(&exe)
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", &cache)
            .env("BURROW_PEAK_RSS_FILE", &rss_file)
            .args([
                "tool",
                id,
                "read",
                r#"{"file_path":"notes/numbers.txt","view_range":[1,3]}"#,
            ])
            .output()?;
        if let Ok(text) = std::fs::read_to_string(&rss_file)
            && let Some(kib) = text
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        {
            peak_kib = peak_kib.max(kib);
        }
        if out.stdout != b"1\n2\n3\n" {
            return Err(BenchError::Other(format!(
                "resume of {id} read {:?}",
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        Ok(())
    })?;
    cx.record(
        "idle.resume_random_process",
        "ms",
        r,
        None,
        &format!("fresh process, random one of {count} sessions, first read"),
        report,
    );
    if peak_kib > 0.0 {
        let mib = peak_kib / 1024.0;
        cx.record(
            "idle.process_peak_rss",
            "MiB",
            (mib, mib),
            None,
            "peak RSS of one of those processes; between calls nothing is resident",
            report,
        );
    }
    Ok(())
}

/// 64 sessions calling in parallel (threads in this process), per-call latency.
fn concurrency(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("concurrency") {
        return Ok(());
    }
    let sessions = 64;
    let calls = cx.n(3, 20);
    let sb = Arc::new(cx.sandbox("conc.db")?);
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let id = sb.create(None)?.id;
        write_4k(&sb, &id, "f.txt")?;
        ids.push(id);
    }
    let lat = std::sync::Mutex::new(Vec::new());
    let failures = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for id in &ids {
            let (sb, lat, failures) = (&sb, &lat, &failures);
            s.spawn(move || {
                for _ in 0..calls {
                    let t = Instant::now();
                    let ok = sb
                        .call(
                            id,
                            Family::AgentToolset,
                            "read",
                            &json!({"file_path": "f.txt"}),
                        )
                        .is_ok_and(|o| !o.is_error);
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    if !ok {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    lat.lock().unwrap_or_else(|e| e.into_inner()).push(ms);
                }
            });
        }
    });
    let failed = failures.load(std::sync::atomic::Ordering::Relaxed);
    if failed > 0 {
        return Err(BenchError::Other(format!(
            "{failed} concurrent calls failed"
        )));
    }
    let v = lat.into_inner().unwrap_or_else(|e| e.into_inner());
    cx.record(
        "concurrency.64_sessions_read",
        "ms",
        stats(v),
        None,
        &format!("{sessions} sessions x {calls} reads at once, one thread each"),
        report,
    );
    Ok(())
}

/// Write calls on one session from 1, 2 and 8 threads at once: each call commits onto the
/// head the others left (the store's concurrent commits); calls per second, and each call's
/// latency (p50, p99), against one thread's rate.
fn one_session(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("concurrency") {
        return Ok(());
    }
    let calls = cx.n(8, 40);
    let sb = Arc::new(cx.sandbox("one.db")?);
    let mut single = None;
    for clients in [1usize, 2, 8] {
        let id = sb.create(None)?.id;
        write_4k(&sb, &id, "warm.txt")?;
        let lat = std::sync::Mutex::new(Vec::new());
        let failures = std::sync::atomic::AtomicUsize::new(0);
        let started = Instant::now();
        std::thread::scope(|s| {
            for c in 0..clients {
                let (sb, lat, failures, id) = (&sb, &lat, &failures, &id);
                s.spawn(move || {
                    for i in 0..calls {
                        let t = Instant::now();
                        let ok = sb
                            .call(
                                id,
                                Family::AgentToolset,
                                "write",
                                &json!({"file_path": format!("c{c}/f{i}.txt"), "content": "x"}),
                            )
                            .is_ok_and(|o| !o.is_error);
                        if !ok {
                            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        let ms = t.elapsed().as_secs_f64() * 1e3;
                        lat.lock().unwrap_or_else(|e| e.into_inner()).push(ms);
                    }
                });
            }
        });
        let secs = started.elapsed().as_secs_f64();
        let failed = failures.load(std::sync::atomic::Ordering::Relaxed);
        if failed > 0 {
            return Err(BenchError::Other(format!(
                "{failed} concurrent calls on one session failed"
            )));
        }
        let rate = (clients * calls) as f64 / secs;
        let (p50, p99) = stats(lat.into_inner().unwrap_or_else(|e| e.into_inner()));
        cx.record(
            &format!("concurrency.one_session_writes_{clients}"),
            "calls/s",
            (rate, rate),
            single,
            &format!(
                "{clients} thread(s) x {calls} writes on one session; per call p50 {p50:.2} ms, p99 {p99:.2} ms; ratio: against 1 thread"
            ),
            report,
        );
        single.get_or_insert(rate);
    }
    Ok(())
}

/// HTTP round trip of a read through `burrow serve`'s router on loopback, 1 and 32 clients.
fn http(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("http") {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sb = cx.sandbox("http.db")?;
    // One session per client: calls on one session are serialised by design.
    for i in 0..32 {
        let id = sb.create(Some(&format!("web-{i}")))?.id;
        write_4k(&sb, &id, "f.txt")?;
    }
    let core = crate::serve::Core::new(sb, 64);
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let config = crate::serve::ServeConfig {
        listen: addr,
        ..Default::default()
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let done = stop.clone();
    rt.spawn(crate::serve::serve(core, config, listener, async move {
        done.cancelled().await
    }));
    let per_client = cx.n(10, 100);
    for clients in [1usize, 32] {
        let lat: Vec<f64> = rt.block_on(async {
            let http = reqwest::Client::new();
            let mut tasks = tokio::task::JoinSet::new();
            for c in 0..clients {
                let (http, url) = (http.clone(), format!("http://{addr}/sessions/web-{c}/call"));
                tasks.spawn(async move {
                    let mut v = Vec::new();
                    for i in 0..=per_client {
                        let t = Instant::now();
                        let ok = http
                            .post(&url)
                            .json(&json!({"tool": "read", "input": {"file_path": "f.txt"}}))
                            .send()
                            .await
                            .is_ok_and(|r| r.status().is_success());
                        if ok && i > 0 {
                            v.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    }
                    v
                });
            }
            let mut all = Vec::new();
            while let Some(r) = tasks.join_next().await {
                all.extend(r.unwrap_or_default());
            }
            all
        });
        if lat.len() < clients * per_client {
            return Err(BenchError::Other(format!(
                "{} of {} HTTP calls failed",
                clients * per_client - lat.len(),
                clients * per_client
            )));
        }
        cx.record(
            &format!("http.read_{clients}_clients"),
            "ms",
            stats(lat),
            None,
            "POST /sessions/{id}/call read 4 KiB on loopback, one session per client",
            report,
        );
    }
    stop.cancel();
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

/// A loopback server answering every connection with 4 KiB, then closing it (each request
/// below opens its own connection, as the egress layer does).
fn serve_4k() -> R<std::net::SocketAddr> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        let body = vec![b'x'; 4096];
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut buf = [0u8; 2048];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = c
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4096\r\nconnection: close\r\n\r\n");
            let _ = c.write_all(&body);
        }
    });
    Ok(addr)
}

/// A GET of 4 KiB through the egress layer (policy, own DNS and address checks, connect,
/// audit record) vs the same request made by reqwest; then the whole path from a guest's
/// `curl` in a shell call.
fn egress(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("egress") {
        return Ok(());
    }
    let addr = serve_4k()?;
    let url = format!("http://{addr}/4k");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut policy = burrow_host::net::NetPolicy::default();
    policy
        .allow(&[addr.to_string()])
        .map_err(|e| BenchError::Other(e.to_string()))?;
    let policy = Arc::new(policy);
    let n = cx.n(50, 500);
    let native = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .no_proxy()
        .build()
        .map_err(|e| BenchError::Other(e.to_string()))?;
    let reqwest_get = || -> R<()> {
        rt.block_on(async {
            let r = native.get(&url).send().await?;
            let b = r.bytes().await?;
            Ok::<_, reqwest::Error>(b.len())
        })
        .map_err(|e| BenchError::Other(e.to_string()))
        .and_then(|len| check_len(len, 4096))
    };
    let egress_get = || -> R<()> {
        // A fresh egress per request, as each tool call gets.
        let e =
            burrow_host::net::Egress::new(policy.clone(), Default::default(), Default::default());
        rt.block_on(e.get(&url))
            .map_err(BenchError::Other)
            .and_then(|(_, b)| check_len(b.len(), 4096))
    };
    // Interleaved, so both see the same machine.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..=n {
        let t = Instant::now();
        reqwest_get()?;
        let ta = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        egress_get()?;
        let tb = t.elapsed().as_secs_f64() * 1e3;
        if i > 0 {
            a.push(ta);
            b.push(tb);
        }
    }
    let native_ms = stats(a);
    let through = stats(b);
    cx.record(
        "egress.reqwest_get_4k",
        "ms",
        native_ms,
        None,
        "GET 4 KiB on loopback by reqwest, a new connection each (the baseline)",
        report,
    );
    cx.record(
        "egress.get_4k",
        "ms",
        through,
        Some(native_ms.0),
        "the same GET through burrow's egress layer (policy, DNS and address checks, audit)",
        report,
    );
    // The whole path: a shell call whose curl fetches 4 KiB, vs a shell call that does not.
    let sb = cx.sandbox("egress.db")?;
    let id = sb.create(Some("egress"))?.id;
    let mut rule = burrow_host::net::NetPolicy::default();
    rule.allow(&[addr.to_string()])
        .map_err(|e| BenchError::Other(e.to_string()))?;
    sb.set_net(&id, rule)?;
    let calls = cx.n(10, 50);
    let bash = |cmd: &str| -> R<()> {
        let out = sb.call(
            &id,
            Family::AgentToolset,
            "bash",
            &json!({ "command": cmd }),
        )?;
        if out.is_error {
            return Err(BenchError::Other(format!("{cmd}: {}", out.joined_text())));
        }
        Ok(())
    };
    let plain = time_it(calls, 1e3, || bash("true"))?;
    let curl = time_it(calls, 1e3, || bash(&format!("curl -sf {url} >/dev/null")))?;
    cx.record(
        "egress.shell_curl_4k",
        "ms",
        curl,
        Some(plain.0),
        "a bash call running `curl URL` (4 KiB) vs a bash call running `true`",
        report,
    );
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

fn check_len(got: usize, want: usize) -> R<()> {
    if got == want {
        Ok(())
    } else {
        Err(BenchError::Other(format!("got {got} bytes, wanted {want}")))
    }
}

/// The table line of a measure.
pub fn table_row(m: &Measure) -> String {
    let fmt = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 1.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.3}")
        }
    };
    format!(
        "{:<36} {:>10} {:>10} {:>6} {:>10} {:>7}  {}",
        m.name,
        fmt(m.median),
        fmt(m.p99),
        m.unit,
        m.baseline.map(fmt).unwrap_or_else(|| "-".into()),
        m.ratio
            .map(|r| format!("{r:.2}x"))
            .unwrap_or_else(|| "-".into()),
        m.note
    )
}

pub const TABLE_HEADER: &str =
    "measure                                  median        p99   unit   baseline   ratio  note";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(stats(v), (51.0, 99.0));
        assert_eq!(stats(vec![3.0]), (3.0, 3.0));
    }
}
