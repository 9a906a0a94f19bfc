//! `burrow bench`'s Python rows: burrow's `python3` (the installed python toolchain, CPython
//! 3.12 for WASI) against the machine's native `python3` on the same one-liner, in the same
//! run. Without the toolchain, or without a native python3, the rows say so in their note.

use std::process::Command;

use super::{BenchError, Ctx, Measure, R, time_it};
use burrow_host::session::{Sandbox, SandboxConfig};

/// The native interpreter compared against (the executable itself, not a launcher such as
/// pyenv's shim, which costs more than the interpreter), and its version line.
fn native() -> Option<(String, String)> {
    // The same minor version as the toolchain first (on PATH or in pyenv), then any python3.
    let mut candidates = vec!["python3.12".to_string()];
    if let Some(home) = std::env::var_os("HOME")
        && let Ok(rd) = std::fs::read_dir(std::path::Path::new(&home).join(".pyenv/versions"))
    {
        let mut found: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("3.12"))
            .map(|e| {
                e.path()
                    .join("bin/python3.12")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        found.sort();
        candidates.extend(found);
    }
    candidates.push("python3".into());
    for exe in &candidates {
        let Ok(o) = Command::new(exe)
            .args([
                "-c",
                "import sys; print(sys.executable); print(sys.version.split()[0])",
            ])
            .output()
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut lines = text.lines();
        if let (true, Some(path), Some(version)) = (o.status.success(), lines.next(), lines.next())
            && !path.is_empty()
        {
            return Some((path.to_string(), format!("Python {version}")));
        }
    }
    None
}

pub(super) fn python(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let rows = ["python.print_1", "python.print_1_process"];
    if !rows.iter().any(|r| cx.wants(r)) {
        return Ok(());
    }
    let toolchains = burrow_host::toolchain::default_dir();
    if !toolchains.join("python/toolchain.json").is_file() {
        let wanted: Vec<&str> = rows.into_iter().filter(|r| cx.wants(r)).collect();
        for r in wanted {
            cx.record(
                r,
                "ms",
                (0.0, 0.0),
                None,
                "skipped: no python toolchain (burrow toolchain install python)",
                report,
            );
        }
        return Ok(());
    }
    let n = cx.n(3, 20);
    let db = cx.dir.path().join("python.db");
    // The CLI's cache: `toolchain install` compiled the interpreter into it.
    let cache = burrow_host::session::default_cache_dir();
    let sb = Sandbox::open_with(
        &db,
        SandboxConfig {
            cache_dir: Some(cache.clone()),
            toolchains: Some(toolchains.clone()),
            ..Default::default()
        },
    )?;
    let id = sb.create(Some("py"))?.id;
    let cmd = "python3 -c 'print(1)'";
    let check = |out: &[u8]| -> R<()> {
        if out != b"1\n" {
            return Err(BenchError::Other(format!(
                "python3 printed {:?}",
                String::from_utf8_lossy(out)
            )));
        }
        Ok(())
    };
    let native = native();
    let native_ms = match &native {
        Some((exe, _)) => Some(
            time_it(n, 1e3, || {
                let o = Command::new(exe).args(["-c", "print(1)"]).output()?;
                check(&o.stdout)
            })?
            .0,
        ),
        None => None,
    };
    let what = native
        .as_ref()
        .map(|(exe, v)| format!("baseline: native {exe} ({v}) -c 'print(1)' as a process"))
        .unwrap_or_else(|| "no native python3 to compare with".into());
    if cx.wants("python.print_1") {
        let r = time_it(n, 1e3, || {
            let r = sb.sh(&id, cmd)?;
            check(&r.report.stdout)
        })?;
        cx.record(
            "python.print_1",
            "ms",
            r,
            native_ms,
            &format!("a shell call running {cmd}, warm, in-process; {what}"),
            report,
        );
    }
    if cx.wants("python.print_1_process") {
        let exe = cx.cfg.exe.clone();
        let r = time_it(n, 1e3, || {
            let o = Command::new(&exe)
                .env("BURROW_STORE", &db)
                .env("BURROW_CACHE", &cache)
                .env("BURROW_TOOLCHAINS", &toolchains)
                .args(["sh", "py", cmd])
                .output()?;
            check(&o.stdout)
        })?;
        cx.record(
            "python.print_1_process",
            "ms",
            r,
            native_ms,
            &format!("`burrow sh S \"{cmd}\"` as a whole process; {what}"),
            report,
        );
    }
    Ok(())
}
