//! `burrow bench --store postgres://... [--objects URL]`: the shared store (PostgreSQL
//! catalog, objects in object storage or in PostgreSQL) measured next to the SQLite file in
//! the same run, so each row's baseline is the embedded default on the same machine:
//! a fresh process's first read with a cold and a warm object cache, warm per-call overhead,
//! a fork of a large session (and that it copies no object), import speed, and what an
//! idle session costs in the catalog.
//!
//! The measures make sessions named `bench-PID-...` in the given store and delete them at
//! the end (their objects stay until `burrow gc`): point it at a database and bucket made
//! for the run.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use super::{BenchError, Ctx, Measure, R, data_tree, source_tree, time_it, time_pair, write_4k};
use burrow_host::session::{Family, Sandbox, SandboxConfig};
use burrow_store::Durability;

/// A shared store to measure next to the SQLite file.
#[derive(Debug, Clone)]
pub struct SharedStore {
    /// `postgres://...`
    pub catalog: String,
    /// `--objects` (`None`: wherever the store recorded, objects in PostgreSQL for a new one).
    pub objects: Option<String>,
    /// `--cache-size` for the object caches the measures make.
    pub cache_size: u64,
}

struct Shared<'a> {
    store: &'a SharedStore,
    prefix: String,
    made: Vec<String>,
}

impl Shared<'_> {
    /// The shared store with a local object cache in `cache` (`None`: none).
    fn sandbox(&self, cx: &Ctx, cache: Option<&Path>) -> R<Sandbox> {
        self.sandbox_durable(cx, cache, Durability::default())
    }

    /// The same, its calls' commits made with `durability`.
    fn sandbox_durable(
        &self,
        cx: &Ctx,
        cache: Option<&Path>,
        durability: Durability,
    ) -> R<Sandbox> {
        Ok(Sandbox::open_with(
            &self.store.catalog,
            SandboxConfig {
                cache_dir: Some(cx.cache.clone()),
                compile_builtins: burrow_host::session::compile_builtins_from_env(),
                objects: self.store.objects.clone(),
                object_cache: cache.map(|c| (c.to_path_buf(), self.store.cache_size)),
                durability,
                ..Default::default()
            },
        )?)
    }

    fn name(&mut self, what: &str) -> String {
        let n = format!("{}-{what}", self.prefix);
        self.made.push(n.clone());
        n
    }
}

/// Runs the shared-store measures when the run was given one.
pub(super) fn shared(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let Some(store) = cx.cfg.shared.clone() else {
        return Ok(());
    };
    const NAMES: [&str; 8] = [
        "shared.resume.process_cold_cache",
        "shared.resume.process_warm_cache",
        "shared.session.read_4k",
        "shared.session.write_4k",
        "shared.session.write_4k_full",
        "shared.io.import",
        "shared.fork",
        "shared.idle",
    ];
    if !NAMES.iter().any(|m| cx.wants(m)) {
        return Ok(());
    }
    let mut sh = Shared {
        store: &store,
        prefix: format!("bench-{}", std::process::id()),
        made: Vec::new(),
    };
    let warm = cx.dir.path().join("shared-cache");
    let sb = sh.sandbox(cx, Some(&warm))?;
    let done = measures(cx, &mut sh, &sb, report);
    // Leave the store as found, but for objects (GC's to collect).
    for name in &sh.made {
        if let Ok(id) = sb.resolve(name) {
            let _ = sb.delete(&id);
        }
    }
    done
}

fn measures(
    cx: &mut Ctx,
    sh: &mut Shared<'_>,
    sb: &Sandbox,
    report: &mut dyn FnMut(&Measure),
) -> R<()> {
    let local = cx.sandbox("shared-baseline.db")?;
    let local_db = cx.dir.path().join("shared-baseline.db");
    let calls = sh.name("calls");
    let id = sb.create(Some(&calls))?.id;
    write_4k(sb, &id, "4k.txt")?;
    let local_id = local.create(Some("calls"))?.id;
    write_4k(&local, &local_id, "4k.txt")?;

    // A fresh process's first read of a suspended session, cold and warm object cache.
    let n = cx.n(5, 15);
    let exe = cx.cfg.exe.clone();
    let components = cx.dir.path().join("cli-cache");
    let read = [
        "tool".to_string(),
        String::new(),
        "read".into(),
        r#"{"file_path":"4k.txt"}"#.into(),
    ];
    let run = |store: &str, objects_cache: Option<&Path>, session: &str| -> R<()> {
        let mut args = read.clone();
        args[1] = session.to_string();
        let mut c = Command::new(&exe);
        c.env("BURROW_STORE", store)
            .env("BURROW_CACHE", &components)
            .env_remove("BURROW_OBJECTS")
            .env_remove("BURROW_CACHE_DIR")
            .args(&args);
        if let Some(dir) = objects_cache {
            c.env("BURROW_CACHE_DIR", dir);
        }
        let out = c.output()?;
        if !out.status.success() || out.stdout.len() < 4096 {
            return Err(BenchError::Other(format!(
                "burrow {args:?} on {store} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    };
    if cx.wants("shared.resume.process_cold_cache") || cx.wants("shared.resume.process_warm_cache")
    {
        let local_path = local_db.display().to_string();
        let floor = time_it(n, 1e3, || run(&local_path, None, &local_id))?.0;
        let mut fresh = 0;
        let caches = cx.dir.path().join("shared-cold");
        let cold = time_it(n, 1e3, || {
            fresh += 1;
            run(
                &sh.store.catalog,
                Some(&caches.join(fresh.to_string())),
                &id,
            )
        })?;
        cx.record(
            "shared.resume.process_cold_cache",
            "ms",
            cold,
            Some(floor),
            "fresh process, empty object cache, first read; baseline: the same on the SQLite file",
            report,
        );
        let warm_dir = cx.dir.path().join("shared-warm");
        let warm = time_it(n, 1e3, || run(&sh.store.catalog, Some(&warm_dir), &id))?;
        cx.record(
            "shared.resume.process_warm_cache",
            "ms",
            warm,
            Some(floor),
            "fresh process, warm object cache, first read; baseline: the same on the SQLite file",
            report,
        );
    }

    // Warm per-call overhead in one process: at the default durability, where neither
    // store waits for the disk at a call's commit, and at full durability, where both do.
    let n = cx.n(20, 200);
    const FULL: &str = "shared.session.write_4k_full";
    let full = if cx.wants(FULL) {
        let cache = cx.dir.path().join("shared-cache-full");
        Some((
            cx.sandbox_durable("shared-baseline.db", Durability::Full)?,
            sh.sandbox_durable(cx, Some(&cache), Durability::Full)?,
        ))
    } else {
        None
    };
    const WHOLE: &str =
        "a whole tool call in a warm process; baseline: the same on the SQLite file";
    let rows = [
        (
            "shared.session.read_4k",
            Some((&local, sb)),
            "read",
            json!({"file_path": "4k.txt"}),
            WHOLE,
        ),
        (
            "shared.session.write_4k",
            Some((&local, sb)),
            "write",
            json!({"file_path": "w.txt", "content": "y".repeat(4096)}),
            WHOLE,
        ),
        (
            FULL,
            full.as_ref().map(|(l, s)| (l, s)),
            "write",
            json!({"file_path": "w.txt", "content": "z".repeat(4096)}),
            "the same write with --durability full (each commit waits for the WAL flush); \
             baseline: the SQLite file with synchronous=FULL",
        ),
    ];
    for (name, stores, tool, input, note) in rows {
        let Some((local, store)) = stores.filter(|_| cx.wants(name)) else {
            continue;
        };
        // Taking turns, call by call: the two stores share the machine's slow spells.
        let (base, r) = time_pair(
            n,
            1e6,
            || {
                local.call(&local_id, Family::AgentToolset, tool, &input)?;
                Ok(())
            },
            || {
                store.call(&id, Family::AgentToolset, tool, &input)?;
                Ok(())
            },
        )?;
        cx.record(name, "µs", r, Some(base.0), note, report);
    }

    // Import: the same tree into the shared store and into the SQLite file.
    if cx.wants("shared.io.import") {
        let (files, each) = cx.source_size();
        let tree = cx.dir.path().join("shared-src-tree");
        let bytes = source_tree(&tree, files, each)?;
        let mb = bytes as f64 / 1e6;
        let t = Instant::now();
        local.create_from(Some("import"), &tree, &mut |_| {})?;
        let base = mb / t.elapsed().as_secs_f64();
        let name = sh.name("import");
        let t = Instant::now();
        sb.create_from(Some(&name), &tree, &mut |_| {})?;
        let rate = mb / t.elapsed().as_secs_f64();
        // The same without a local object cache, which writes a file per object.
        let uncached = sh.sandbox(cx, None)?;
        let name = sh.name("import-uncached");
        let t = Instant::now();
        uncached.create_from(Some(&name), &tree, &mut |_| {})?;
        let bare = mb / t.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&tree)?;
        for (suffix, rate, what) in [
            ("", rate, "with a local object cache"),
            ("_no_cache", bare, "without an object cache"),
        ] {
            cx.record(
                &format!("shared.io.import_{}MB{suffix}", mb.round()),
                "MB/s",
                (rate, rate),
                Some(base),
                &format!(
                    "import from a host directory (one run), {what}; baseline: into the SQLite file"
                ),
                report,
            );
        }
    }

    // Fork of a large session: catalog rows only, no object copied.
    if cx.wants("shared.fork") {
        let (mib, files) = if cx.cfg.quick {
            (8, 500)
        } else {
            (1024, 4_096)
        };
        let tree = cx.dir.path().join("shared-data-tree");
        data_tree(&tree, files, mib << 20)?;
        let big = sh.name("big");
        let big = sb.create_from(Some(&big), &tree, &mut |_| {})?.id;
        std::fs::remove_dir_all(&tree)?;
        let empty = sh.name("empty");
        let empty = sb.create(Some(&empty))?.id;
        let objects_before = sb.store().stats()?.objects;
        let n = cx.n(10, 30);
        let mut forks = Vec::new();
        let e = time_it(n, 1e6, || {
            forks.extend(sb.fork(&empty, 1)?);
            Ok(())
        })?;
        let b = time_it(n, 1e6, || {
            forks.extend(sb.fork(&big, 1)?);
            Ok(())
        })?;
        let copied = sb.store().stats()?.objects.saturating_sub(objects_before);
        sh.made.extend(forks);
        cx.record(
            &format!("shared.fork.{mib}MiB"),
            "µs",
            b,
            Some(e.0),
            &format!(
                "baseline: fork of an empty session on the same store; objects copied: {copied}"
            ),
            report,
        );
    }

    // What an idle session costs in the catalog.
    if cx.wants("shared.idle") {
        let count = cx.n(200, 10_000);
        let source = sh.name("idle");
        let src = sb.create(Some(&source))?.id;
        sb.sh(&src, "mkdir -p notes && seq 1 1000 > notes/numbers.txt")?;
        let before = sb.store().catalog_bytes()?.unwrap_or(0);
        let forks = sb.fork(&src, count)?;
        let after = sb.store().catalog_bytes()?.unwrap_or(0);
        let lsrc = local.create(Some("idle"))?.id;
        local.sh(&lsrc, "mkdir -p notes && seq 1 1000 > notes/numbers.txt")?;
        let lbefore = local.store_bytes();
        local.fork(&lsrc, count)?;
        let lper = local.store_bytes().saturating_sub(lbefore) as f64 / count as f64;
        sh.made.extend(forks);
        let per = after.saturating_sub(before) as f64 / count as f64;
        cx.record(
            &format!("shared.idle.catalog_bytes_per_session_{count}"),
            "bytes",
            (per, per),
            Some(lper),
            "PostgreSQL table and index bytes per forked session; baseline: SQLite file growth",
            report,
        );
    }
    Ok(())
}
