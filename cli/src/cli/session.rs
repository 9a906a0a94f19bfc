//! Sessions and their history: new, ls, rm, fork, tree, the network policy, log, history,
//! diff, merge, replay, checkout, undo, label, cat, export.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::bail;
use burrow_host::session::Sandbox;
use burrow_store::ChangeKind;

use super::args::*;
use super::{print_json, time};
use crate::cli_progress;

pub(super) fn new(sb: &Sandbox, json: bool, a: SessionNewArgs) -> anyhow::Result<ExitCode> {
    let SessionNewArgs {
        name,
        from,
        from_git,
        env,
        schema,
        timeout,
        memory_mib,
        cpu_budget,
        allow_net,
        secret,
        deterministic,
    } = a;

    let mut settings = burrow_host::session::Settings {
        family: schema.map(|s| s.parse()).transpose()?,
        timeout_ms: timeout.map(|t| t.as_millis() as u64),
        memory_mib,
        cpu_budget,
        deterministic,
        ..Default::default()
    };
    settings.net.allow(&allow_net)?;
    for s in &secret {
        settings
            .net
            .set_secret(burrow_host::net::SecretRule::parse(s)?);
    }

    for kv in env {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--env takes KEY=VALUE, got '{kv}'");
        };
        settings.env.insert(k.to_string(), v.to_string());
    }
    let info = match &from {
        Some(src) => {
            let bar = cli_progress::Progress::new("importing", cli_progress::import_size(src));
            let mut progress = |s: &burrow_store::ImportStats| bar.update(s);
            // GNU tar's warnings about members changed or skipped, as they come.
            let mut warn = |w: String| bar.println(&format!("burrow: {w}"));
            let info =
                sb.create_from_with(name.as_deref(), src, &settings, &mut progress, &mut warn);
            bar.finish();
            let info = info?;
            if std::io::stderr().is_terminal() {
                eprintln!(
                    "imported {} entries, {:.1} MiB",
                    info.entries,
                    info.bytes as f64 / 1048576.0
                );
            }
            info
        }
        None => sb.create_with(name.as_deref(), &settings)?,
    };
    if let Some(spec) = &from_git {
        clone_into(sb, &info.id, spec)?;
    }
    let info = match &from_git {
        Some(_) => sb.info(&info.id)?,
        None => info,
    };
    if json {
        print_json(&info)?;
    } else {
        outln!("{}", info.id);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn ls(sb: &Sandbox, json: bool) -> anyhow::Result<ExitCode> {
    let list = sb.list()?;
    if json {
        for s in &list {
            print_json(s)?;
        }
    } else {
        outln!(
            "{:<18} {:<16} {:>8} {:>10} {:>8}  LAST ACTIVE",
            "ID",
            "NAME",
            "VERSION",
            "BYTES",
            "ENTRIES"
        );
        for s in list {
            outln!(
                "{:<18} {:<16} {:>8} {:>10} {:>8}  {}",
                s.id,
                s.name.unwrap_or_else(|| "-".into()),
                format!("v{}", s.version),
                s.bytes,
                s.entries,
                s.last_active.map(time).unwrap_or_else(|| "-".into())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn rm(sb: &Sandbox, a: SessionRmArgs) -> anyhow::Result<ExitCode> {
    let SessionRmArgs { sessions } = a;

    for key in sessions {
        let id = sb.resolve(&key)?;
        sb.delete(&id)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn net(sb: &Sandbox, json: bool, a: NetArgs) -> anyhow::Result<ExitCode> {
    let NetArgs {
        session,
        allow,
        revoke,
        secret,
        drop_secret,
    } = a;

    let id = sb.resolve(&session)?;
    let mut net = sb.settings(&id)?.net;
    net.allow(&allow)?;
    for r in &revoke {
        if !net.revoke(std::slice::from_ref(r)) {
            bail!("no rule '{r}' in the policy of {session}");
        }
    }
    for s in &secret {
        net.set_secret(burrow_host::net::SecretRule::parse(s)?);
    }

    for d in &drop_secret {
        let before = net.secrets.len();
        net.secrets.retain(|s| &s.name != d);
        if net.secrets.len() == before {
            bail!("no secret '{d}' in the policy of {session}");
        }
    }
    sb.set_net(&id, net.clone())?;
    if json {
        print_json(&net)?;
    } else if net.allow.is_empty() && net.secrets.is_empty() {
        outln!("no network (no rule)");
    } else {
        for r in &net.allow {
            outln!("allow  {r}");
        }
        for s in &net.secrets {
            outln!("secret {}@{}", s.name, s.hosts.join(","));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn fork(sb: &Sandbox, a: ForkArgs) -> anyhow::Result<ExitCode> {
    let ForkArgs { session, n } = a;

    let id = sb.resolve(&session)?;
    for f in sb.fork(&id, n)? {
        outln!("{f}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn tree(sb: &Sandbox, json: bool) -> anyhow::Result<ExitCode> {
    let list = sb.list()?;
    if json {
        for s in &list {
            print_json(s)?;
        }
    } else {
        let ids: std::collections::HashSet<&str> = list.iter().map(|s| s.id.as_str()).collect();
        fn show(
            list: &[burrow_host::SessionInfo],
            parent: Option<&str>,
            ids: &std::collections::HashSet<&str>,
            depth: usize,
        ) {
            for s in list.iter().filter(|s| match (s.parent.as_deref(), parent) {
                (Some(p), Some(q)) => p == q,
                (p, None) => p.is_none_or(|p| !ids.contains(p)),
                _ => false,
            }) {
                let name = s
                    .name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                outln!("{}{}{} v{}", "  ".repeat(depth), s.id, name, s.version);
                show(list, Some(&s.id), ids, depth + 1);
            }
        }
        show(&list, None, &ids, 0);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn log(sb: &Sandbox, json: bool, a: LogArgs) -> anyhow::Result<ExitCode> {
    let LogArgs {
        session,
        after,
        kind,
        limit,
    } = a;

    let id = sb.resolve(&session)?;
    for e in sb.log(&id, after, limit)? {
        if kind.as_ref().is_some_and(|k| *k != e.kind) {
            continue;
        }
        if json {
            print_json(&burrow_host::session::event_json(&e))?;
        } else {
            let data: serde_json::Value = serde_json::from_str(&e.data).unwrap_or_default();
            let what = match e.kind.as_str() {
                "tool" => {
                    format!(
                        "{} {}{}",
                        data["tool"].as_str().unwrap_or("?"),
                        data["input"],
                        if data["is_error"].as_bool() == Some(true) {
                            "  [error]"
                        } else {
                            ""
                        }
                    ) + &fuel_note(&data)
                }
                _ => data.to_string(),
            };
            let vers = match (e.version_before, e.version_after) {
                (Some(a), Some(b)) if a != b => format!("v{a}->v{b}"),
                (Some(a), _) => format!("v{a}"),
                _ => "-".into(),
            };
            outln!(
                "{:>5} {} {:<12} {:<10} {}",
                e.seq,
                time(e.time),
                e.kind,
                vers,
                what
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `burrow log` adds to a call that ran with a CPU budget: the fuel it used of it.
fn fuel_note(data: &serde_json::Value) -> String {
    match (data["fuel"].as_u64(), data["cpu_budget"].as_u64()) {
        (Some(used), Some(budget)) => format!("  [fuel {used} of {budget}]"),
        _ => String::new(),
    }
}

pub(super) fn history(sb: &Sandbox, json: bool, a: HistoryArgs) -> anyhow::Result<ExitCode> {
    let HistoryArgs { session, limit } = a;

    let id = sb.resolve(&session)?;
    for v in sb.history(&id, limit)? {
        if json {
            print_json(&burrow_host::session::version_json(&v))?;
        } else {
            outln!(
                "v{:<6} {} {:>10} B {:>7} entries  {}",
                v.id,
                time(v.time),
                v.bytes,
                v.entries,
                v.message
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn diff(sb: &Sandbox, json: bool, a: DiffArgs) -> anyhow::Result<ExitCode> {
    let DiffArgs { a, b, stat, all } = a;

    let (va, vb, changes) = if all {
        sb.diff_all(&a, &b)?
    } else {
        sb.diff(&a, &b)?
    };
    if json {
        for c in &changes {
            print_json(&serde_json::json!({
                "path": burrow_host::session::shown_path(&c.path), "change": format!("{:?}", c.kind).to_lowercase(),
                "kind": format!("{:?}", c.entry).to_lowercase(),
            }))?;
        }
    } else if stat {
        for c in &changes {
            let mark = match c.kind {
                ChangeKind::Added => 'A',
                ChangeKind::Removed => 'D',
                ChangeKind::Modified => 'M',
            };
            outln!("{mark} {}", burrow_host::session::shown_path(&c.path));
        }
        outln!("{} path(s) changed between v{va} and v{vb}", changes.len());
    } else {
        out!("{}", sb.patch(va, vb, &changes)?);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn merge(sb: &Sandbox, json: bool, a: MergeArgs) -> anyhow::Result<ExitCode> {
    let MergeArgs {
        source,
        into,
        base,
        no_commit,
    } = a;

    let base = base.map(|b| sb.version_of(&b)).transpose()?;
    let out = sb.merge(&burrow_host::session::MergeRequest {
        source: &source,
        into: into.as_deref(),
        base,
        no_commit,
    })?;
    if json {
        print_json(&out)?;
    } else {
        let mut lines: Vec<(&str, bool)> = out
            .merged
            .iter()
            .map(|p| (p.as_str(), false))
            .chain(out.conflicts.iter().map(|c| (c.path.as_str(), true)))
            .collect();
        lines.sort();
        for (path, conflict) in lines {
            if conflict {
                outln!("CONFLICT {path}");
            } else {
                outln!("{path}");
            }
        }
    }
    Ok(if out.conflicts.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(super) fn replay(sb: &Sandbox, json: bool, a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let ReplayArgs {
        session,
        from,
        into,
    } = a;

    let from = from.map(|v| sb.version_of(&v)).transpose()?;
    let out = sb.replay(&burrow_host::session::ReplayRequest {
        session: &session,
        from,
        into: into.as_deref(),
    })?;
    if json {
        print_json(&out)?;
    } else {
        for (n, c) in out.calls.iter().enumerate() {
            if let Some(why) = &c.difference {
                outln!(
                    "call {} (event {}, {}: {}): {why}",
                    n + 1,
                    c.seq,
                    c.tool,
                    c.summary
                );
            }
        }
        outln!(
            "replayed {} calls into {}: {} identical, {} differ",
            out.calls.len(),
            out.into,
            out.identical,
            out.differ
        );
    }
    Ok(if out.differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(super) fn checkout(sb: &Sandbox, a: CheckoutArgs) -> anyhow::Result<ExitCode> {
    let CheckoutArgs { session, version } = a;

    let id = sb.resolve(&session)?;
    let v = sb.version_of(&version)?;
    let new = sb.checkout(&id, v)?;
    outln!("v{new}");
    Ok(ExitCode::SUCCESS)
}

pub(super) fn undo(sb: &Sandbox, a: UndoArgs) -> anyhow::Result<ExitCode> {
    let UndoArgs { session } = a;

    let id = sb.resolve(&session)?;
    let v = sb.undo(&id)?;
    outln!("back at the tree of v{v}");
    Ok(ExitCode::SUCCESS)
}

pub(super) fn label(sb: &Sandbox, a: LabelArgs) -> anyhow::Result<ExitCode> {
    let LabelArgs { session, name } = a;

    let id = sb.resolve(&session)?;
    let v = sb.label(&id, &name)?;
    outln!("{name} = v{v}");
    Ok(ExitCode::SUCCESS)
}

pub(super) fn cat(sb: &Sandbox, a: CatArgs) -> anyhow::Result<ExitCode> {
    let CatArgs { session, path } = a;

    let id = sb.resolve(&session)?;
    crate::cli_out::write(&sb.cat(&id, &path)?);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn export(sb: &Sandbox, a: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportArgs { session, dest } = a;

    let id = sb.resolve(&session)?;
    let bar = cli_progress::Progress::new("exporting", Some(sb.info(&id)?.bytes));
    let s = sb.export_with_progress(&id, &dest, &mut |s| bar.update(s));
    bar.finish();
    let s = s?;
    eprintln!(
        "exported {} files, {} directories, {} symlinks, {} bytes",
        s.files, s.dirs, s.symlinks, s.bytes
    );
    Ok(ExitCode::SUCCESS)
}

/// `session new --from-git URL[#REF]`: the new session's first call clones the repository
/// into its workspace with the session's own git (so its network policy and secrets apply);
/// when the clone fails the session is deleted and git's message is the error.
fn clone_into(sb: &burrow_host::Sandbox, id: &str, spec: &str) -> anyhow::Result<()> {
    let (url, reference) = match spec.rsplit_once('#') {
        Some((u, r)) if !r.is_empty() => (u, Some(r)),
        _ => (spec, None),
    };
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut cmd = String::from("git clone -q");
    if let Some(r) = reference {
        cmd.push_str(&format!(" --branch {}", quote(r)));
    }
    cmd.push_str(&format!(" -- {} .", quote(url)));
    let failed = match sb.sh(id, &cmd) {
        Ok(r) if r.report.exit_code == 0 => return Ok(()),
        Ok(r) => String::from_utf8_lossy(&r.report.stderr)
            .trim_end()
            .to_string(),
        Err(e) => e.to_string(),
    };
    let _ = sb.delete(id);
    bail!("cannot clone {url}: {failed}")
}
