//! Rows `cpu_budget.*`: what metering costs a call. Each row runs the same call in one session
//! without a CPU budget (the unmetered engine, the default) and with one far above what the
//! call uses (the metered engine: fuel counted at every instruction, settled at every epoch
//! tick), taking turns; the ratio is metered over unmetered. The metered engine compiles its
//! own shell and file tools on its first call, outside the timings (the warm-up); the row
//! `cpu_budget.first_call` shows that cost once, against a first unmetered call in a fresh
//! process's worth of state (a new sandbox on the same cache).

use std::time::Instant;

use serde_json::json;

use super::{Ctx, Measure, R, time_pair};
use burrow_host::session::{CallLimits, Family};

/// A budget no measured call comes near: metering without stopping.
const BUDGET: u64 = 1 << 60;

/// (row, shell command, what it is).
const SHELL_ROWS: &[(&str, &str, &str)] = &[
    ("cpu_budget.echo_hi", "echo hi", "a near-empty call"),
    (
        "cpu_budget.loop_20k",
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo $i",
        "20,000 iterations of a shell loop: compute in the interpreter",
    ),
];

pub(super) fn fuel(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    let wanted = SHELL_ROWS.iter().any(|r| cx.wants(r.0))
        || cx.wants("cpu_budget.read_4k")
        || cx.wants("cpu_budget.first_call");
    if !wanted {
        return Ok(());
    }
    let n = cx.n(10, 100);
    let sb = cx.sandbox("fuel.db")?;
    let id = sb.create(None)?.id;
    super::write_4k(&sb, &id, "4k.txt")?;
    if cx.wants("cpu_budget.first_call") {
        // A new sandbox on the same cache: the unmetered engine maps the embedded shell, the
        // metered one compiles it (or, on a later run, maps what it compiled into the cache).
        let fresh = cx.sandbox("fuel.db")?;
        let t = Instant::now();
        fresh.sh(&id, "true")?;
        let plain = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        fresh.sh_call(&id, "true", b"", "sh", metered())?;
        let first = t.elapsed().as_secs_f64() * 1e3;
        cx.record(
            "cpu_budget.first_call",
            "ms",
            (first, first),
            Some(plain),
            "the first metered call of a process (its shell compiled with fuel, or loaded from \
             the cache); baseline: the first unmetered call",
            report,
        );
    }
    for &(name, command, what) in SHELL_ROWS {
        if !cx.wants(name) {
            continue;
        }
        let (base, r) = time_pair(
            n,
            1e6,
            || {
                sb.sh(&id, command)?;
                Ok(())
            },
            || {
                sb.sh_call(&id, command, b"", "sh", metered())?;
                Ok(())
            },
        )?;
        cx.record(
            name,
            "µs",
            r,
            Some(base.0),
            &format!("{what}, with a CPU budget; baseline: without one, taking turns"),
            report,
        );
    }
    if cx.wants("cpu_budget.read_4k") {
        let metered_sb = {
            let mut s = cx.sandbox("fuel.db")?;
            s.set_default_cpu_budget(Some(BUDGET));
            s
        };
        let input = json!({"file_path": "4k.txt"});
        let (base, r) = time_pair(
            n,
            1e6,
            || {
                sb.call(&id, Family::AgentToolset, "read", &input)?;
                Ok(())
            },
            || {
                metered_sb.call(&id, Family::AgentToolset, "read", &input)?;
                Ok(())
            },
        )?;
        cx.record(
            "cpu_budget.read_4k",
            "µs",
            r,
            Some(base.0),
            "a read tool call of 4 KiB with a CPU budget; baseline: without one, taking turns",
            report,
        );
    }
    Ok(())
}

fn metered() -> CallLimits {
    CallLimits {
        cpu_budget: Some(BUDGET),
        ..Default::default()
    }
}
