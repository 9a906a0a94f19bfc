//! Rows `pipe.cat_wc_<size>` and `pipe.cat_wc_<size>_peak_rss`: `cat big.txt | wc -l` over
//! a large file (1 GiB in a full run) in a fresh `burrow sh` process against the same
//! pipeline under bash on the file on disk, in the same run: the time, and the peak resident
//! memory of the process (for bash, the largest of bash, cat and wc). A shell whose stages
//! stream through bounded pipes keeps its memory flat whatever the file's size; one that
//! buffers each stage's whole output holds the file in memory, or fails at the memory limit.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{BenchError, Ctx, Measure, R, time_it};

pub(super) fn pipe(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let size: u64 = if cx.cfg.quick { 8 << 20 } else { 1 << 30 };
    let row = format!("pipe.cat_wc_{}MiB", size >> 20);
    let rss_row = format!("{row}_peak_rss");
    let anon_row = format!("{row}_peak_anon");
    if !cx.wants(&row) && !cx.wants(&rss_row) && !cx.wants(&anon_row) {
        return Ok(());
    }
    let n = cx.n(2, 3);
    let dir = cx.dir.path().join("pipe-src");
    std::fs::create_dir_all(&dir)?;
    let lines = big_file(&dir.join("big.txt"), size)?;
    let db = cx.dir.path().join("pipe.db");
    cx.sandbox("pipe.db")?
        .create_from(Some("pipe"), &dir, &mut |_| {})?;
    let command = "cat big.txt | wc -l";
    let expect = lines.to_string();
    let check = |who: &str, out: &Outcome| {
        if out.ok && String::from_utf8_lossy(&out.stdout).trim() == expect {
            Ok(())
        } else {
            Err(BenchError::Other(format!(
                "{row}: {who} printed {:?}, expected {expect}: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    };

    let native = time_it(n, 1e3, || {
        check(
            "bash",
            &run(Command::new("bash").args(["-c", command]).current_dir(&dir))?,
        )
    })?;
    // The kernel's own accounting (`ru_maxrss`) of a process started from this one counts
    // this process's memory too (it carries over exec), so each side reports its peak from
    // a process of its own: burrow its `VmHWM` at exit, the pipeline GNU time's `%M` (time
    // is small, and the largest of bash, cat and wc is what it reports).
    let rss_file = cx.dir.path().join("pipe-peak-rss");
    let native_kib = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&rss_file)
        .args(["-f", "%M", "bash", "-c", command])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .and_then(|_| kib_in(&rss_file));
    let mut ours_kib: f64 = 0.0;
    let mut ours_anon_kib: f64 = 0.0;
    let exe = cx.cfg.exe.clone();
    let cache = cx.cache.clone();
    let ours = match time_it(n, 1e3, || {
        let out = run(Command::new(&exe)
            .env("BURROW_STORE", &db)
            .env("BURROW_CACHE", &cache)
            .env("BURROW_PEAK_RSS_FILE", &rss_file)
            .args(["sh", "pipe", command]))?;
        check("burrow", &out)?;
        ours_kib = ours_kib.max(kib_in(&rss_file).unwrap_or(0.0));
        ours_anon_kib = ours_anon_kib.max(nth_kib_in(&rss_file, 1).unwrap_or(0.0));
        Ok(())
    }) {
        Ok(r) => r,
        // A shell that buffers whole stages runs out of memory on a large file: that is
        // this row's finding, not a reason to stop the other rows.
        Err(e) => {
            eprintln!("bench: {row}: no measure: {e}");
            std::fs::remove_dir_all(&dir)?;
            return Ok(());
        }
    };
    std::fs::remove_dir_all(&dir)?;
    let mib = size >> 20;
    cx.record(
        &row,
        "ms",
        ours,
        Some(native.0),
        &format!(
            "`{command}` of a {mib} MiB file in a fresh `burrow sh` process; baseline: the same \
             under bash on the file on disk"
        ),
        report,
    );
    cx.record(
        &rss_row,
        "MiB",
        (ours_kib / 1024.0, ours_kib / 1024.0),
        native_kib.map(|k| k / 1024.0),
        if native_kib.is_some() {
            "peak RSS of that burrow process; baseline: the largest of bash, cat and wc (GNU time)"
        } else {
            "peak RSS of that burrow process; GNU time (/usr/bin/time) not installed: no baseline"
        },
        report,
    );
    cx.record(
        &anon_row,
        "MiB",
        (ours_anon_kib / 1024.0, ours_anon_kib / 1024.0),
        native_kib.map(|k| k / 1024.0),
        "peak anonymous memory of that burrow process (`RssAnon` sampled every 2 ms: the peak \
         RSS above also counts the pages of the database its readers map, up to 256 MiB, \
         which the kernel may drop at will); baseline: as above",
        report,
    );
    Ok(())
}

/// Writes numbered text lines to `path` until it holds `size` bytes; returns the lines.
fn big_file(path: &Path, size: u64) -> R<u64> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let (mut written, mut lines) = (0u64, 0u64);
    while written < size {
        let line = format!("{lines:012} the quick brown fox jumps over the lazy dog\n");
        f.write_all(line.as_bytes())?;
        written += line.len() as u64;
        lines += 1;
    }
    f.flush()?;
    Ok(lines)
}

/// What a measured process did.
struct Outcome {
    ok: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run(cmd: &mut Command) -> R<Outcome> {
    let out = cmd.stdin(Stdio::null()).output()?;
    Ok(Outcome {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

/// The KiB a file written by `BURROW_PEAK_RSS_FILE` or GNU time's `%M` holds.
fn kib_in(path: &Path) -> Option<f64> {
    nth_kib_in(path, 0)
}

/// The `n`th number of such a file (burrow writes its peak RSS, then its peak anonymous
/// memory).
fn nth_kib_in(path: &Path, n: usize) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.split_whitespace().nth(n)?.parse().ok()
}
