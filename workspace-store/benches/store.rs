//! Store benchmarks (criterion): fork cost against workspace size, commit of a one-file change
//! in a large workspace, sequential write/read throughput, warm path lookup, and diff of two
//! forks that differ in a few files.
//!
//! `cargo bench -p burrow-store`. The large workspace is 1 GiB in 50,000 files by default;
//! set `BURROW_BENCH_MB` and `BURROW_BENCH_FILES` to change it (e.g. for a quick run).

use std::hint::black_box;
use std::time::Duration;

use burrow_store::{OpenFlags, ROOT_INO, Store};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic, incompressible-looking bytes (xorshift), so pages do not deduplicate.
fn fill(seed: u64, buf: &mut [u8]) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// A workspace of `files` files totalling about `mb` MiB, in directories of 100 files,
/// two levels deep.
fn build(store: &Store, ws: &str, mb: u64, files: u64) {
    store.create_workspace(ws).unwrap();
    let per_file = (mb << 20) / files.max(1);
    let mut buf = vec![0u8; per_file as usize];
    let batch = 5_000;
    for start in (0..files).step_by(batch) {
        let mut t = store.begin(ws).unwrap();
        for i in start..(start + batch as u64).min(files) {
            let dir = format!("d{:03}/e{:02}", i / 1000, (i / 100) % 10);
            if i % 100 == 0 {
                t.mkdir_all(&dir).unwrap();
            }
            fill(i, &mut buf);
            t.write_file(&format!("{dir}/f{i}.dat"), &buf).unwrap();
        }
        t.commit().unwrap();
    }
}

fn benches(c: &mut Criterion) {
    let mb = env("BURROW_BENCH_MB", 1024);
    let files = env("BURROW_BENCH_FILES", 50_000);
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("bench.db")).unwrap();
    store.create_workspace("empty").unwrap();
    eprintln!("building a {mb} MiB / {files}-file workspace ...");
    let t0 = std::time::Instant::now();
    build(&store, "big", mb, files);
    eprintln!("built in {:.1?}", t0.elapsed());

    let mut g = c.benchmark_group("fork");
    let mut n = 0u64;
    for src in ["empty", "big"] {
        g.bench_function(BenchmarkId::from_parameter(src), |b| {
            b.iter(|| {
                n += 1;
                store.fork(src, &[&format!("{src}-fork-{n}")]).unwrap();
            })
        });
    }
    g.finish();
    let before = store.stats().unwrap();
    store.fork("big", &["one-more"]).unwrap();
    let after = store.stats().unwrap();
    eprintln!(
        "bytes added by one fork: objects +{}, file +{} (WAL/page granularity)",
        after.objects - before.objects,
        after.file_bytes.saturating_sub(before.file_bytes)
    );

    let mut g = c.benchmark_group("commit");
    let mut k = 0u64;
    g.bench_function("one-file-change-in-big", |b| {
        b.iter(|| {
            k += 1;
            let mut t = store.begin("big").unwrap();
            t.write_file("d000/e00/f0.dat", &k.to_le_bytes()).unwrap();
            t.commit().unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("throughput");
    let size = 64usize << 20;
    let mut data = vec![0u8; size];
    fill(7, &mut data);
    g.throughput(Throughput::Bytes(size as u64));
    g.sample_size(10);
    store.create_workspace("tp").unwrap();
    g.bench_function("sequential-write-64MiB", |b| {
        b.iter(|| {
            let mut t = store.begin("tp").unwrap();
            let ino = t
                .open_at(
                    ROOT_INO,
                    "big.bin",
                    OpenFlags {
                        create: true,
                        truncate: true,
                        ..Default::default()
                    },
                    true,
                )
                .unwrap();
            for (i, chunk) in data.chunks(1 << 20).enumerate() {
                t.write(ino, (i << 20) as u64, chunk).unwrap();
            }
            t.commit().unwrap()
        })
    });
    let mut out = vec![0u8; 1 << 20];
    g.bench_function("sequential-read-64MiB-warm", |b| {
        let mut t = store.begin("tp").unwrap();
        let ino = t.resolve(ROOT_INO, "big.bin", true).unwrap();
        b.iter(|| {
            let mut off = 0u64;
            loop {
                let n = t.read(ino, off, &mut out).unwrap();
                if n == 0 {
                    break;
                }
                off += n as u64;
            }
            black_box(off)
        })
    });
    g.finish();

    let mut g = c.benchmark_group("lookup");
    {
        let mut t = store.begin("tp").unwrap();
        t.mkdir_all("a/b/c/d/e").unwrap();
        t.write_file("a/b/c/d/e/f", b"x").unwrap();
        t.commit().unwrap();
    }
    g.bench_function("depth-6-warm", |b| {
        let mut t = store.begin("tp").unwrap();
        t.resolve(ROOT_INO, "a/b/c/d/e/f", true).unwrap();
        b.iter(|| black_box(t.resolve(ROOT_INO, black_box("a/b/c/d/e/f"), true).unwrap()))
    });
    g.bench_function("depth-6-fresh-txn", |b| {
        b.iter(|| {
            let mut t = store.begin("tp").unwrap();
            black_box(t.resolve(ROOT_INO, "a/b/c/d/e/f", true).unwrap())
        })
    });
    g.finish();

    store.fork("big", &["diff-a", "diff-b"]).unwrap();
    let mut t = store.begin("diff-b").unwrap();
    for i in 0..10u64 {
        let f = i * (files / 10).max(1);
        t.write_file(
            &format!("d{:03}/e{:02}/f{f}.dat", f / 1000, (f / 100) % 10),
            b"changed",
        )
        .unwrap();
    }
    t.commit().unwrap();
    let mut g = c.benchmark_group("diff");
    g.bench_function("forks-differing-in-10-files", |b| {
        b.iter(|| {
            let d = store.diff_workspaces("diff-a", "diff-b").unwrap();
            assert_eq!(d.len(), 10);
            d
        })
    });
    g.finish();
}

criterion_group! {
    name = store;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(store);
