//! One call in a session: a tool call of a family (`tool`), a shell command (`sh`), a raw
//! WASI component (`run`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use burrow_host::session::{Family, Sandbox};
use burrow_host::{Limits, RunError};

use super::args::*;
use super::print_json;

pub(super) fn tool(sb: &Sandbox, json: bool, a: ToolArgs) -> anyhow::Result<ExitCode> {
    let ToolArgs {
        workspace,
        schema,
        args,
    } = a;

    let (id, name, input) = match (workspace, args.as_slice()) {
        (Some(ws), [name, input]) => (sb.ensure(&ws)?, name.clone(), input.clone()),
        (None, [s, name, input]) => (sb.resolve(s)?, name.clone(), input.clone()),
        (Some(_), _) => bail!("with --workspace, give NAME and JSON"),
        (None, _) => bail!("give SESSION NAME JSON"),
    };
    let family: Family = match schema {
        Some(s) => s.parse()?,
        None => sb.settings(&id)?.family.unwrap_or_default(),
    };
    let input: serde_json::Value =
        serde_json::from_str(&input).context("the tool input is not valid JSON")?;
    if !input.is_object() {
        bail!("the tool input must be a JSON object");
    }
    let out = sb.call(&id, family, &name, &input)?;
    if json {
        print_json(&out)?;
    } else {
        let text = out.joined_text();
        if out.is_error {
            eprintln!("{text}");
        } else {
            outln!("{text}");
        }
    }
    Ok(ExitCode::from(u8::from(out.is_error)))
}

pub(super) fn run(sb: &Sandbox, a: RunArgs) -> anyhow::Result<ExitCode> {
    let RunArgs {
        workspace,
        timeout,
        memory_mib,
        cpu_budget,
        mount,
        preopen,
        targets,
        args,
    } = a;

    let (id, component) = match (workspace, targets.as_slice()) {
        (Some(ws), [c]) => (sb.ensure(&ws)?, c.clone()),
        (None, [s, c]) => (sb.resolve(s)?, c.clone()),
        (Some(_), _) => bail!("with --workspace, give only COMPONENT"),
        (None, _) => bail!("give SESSION COMPONENT"),
    };
    let wasm = std::fs::read(&component).with_context(|| format!("cannot read {component}"))?;
    let name = Path::new(&component)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let opts = burrow_host::RunOptions {
        args,
        program_name: name,
        limits: Limits {
            timeout,
            memory: memory_mib << 20,
            cpu: cpu_budget.map(burrow_host::CpuBudget::new),
            ..Limits::default()
        },
        mounts: mount,
        preopens: preopen,
        ..Default::default()
    };
    finish_run(sb.run(&id, &wasm, &opts))
}

pub(super) fn sh(sb: &Sandbox, a: ShArgs) -> anyhow::Result<ExitCode> {
    let ShArgs { session, command } = a;

    let id = sb.resolve(&session)?;
    finish_run(sb.sh(&id, &command))
}

/// Prints a run's output and turns its outcome into the process's exit code: the guest's own
/// code, 124 for a timeout and 125 for a trap or another limit, the CPU budget included (the
/// session is then unchanged).
fn finish_run(
    r: Result<burrow_host::RunResult, burrow_host::SessionError>,
) -> anyhow::Result<ExitCode> {
    use burrow_host::SessionError::Run;
    match r {
        Ok(r) => {
            crate::cli_out::write(&r.report.stdout);
            std::io::stderr().write_all(&r.report.stderr)?;
            Ok(ExitCode::from(r.report.exit_code.clamp(0, 255) as u8))
        }
        Err(Run(e @ (RunError::Load(_) | RunError::Host(_)))) => bail!(e),
        Err(Run(e)) => {
            eprintln!("burrow: {e} (the session is unchanged)");
            Ok(ExitCode::from(if matches!(e, RunError::Timeout(_)) {
                124
            } else {
                125
            }))
        }
        Err(e) => Err(e.into()),
    }
}
