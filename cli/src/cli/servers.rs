//! The long-lived verbs, over a sandbox with the pooling allocator and an async runtime:
//! `serve` (HTTP API, console, MCP over Streamable HTTP), `mcp` (stdio), `worker` (Claude
//! Managed Agents), `agent` (a Messages API loop); and `bench`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use burrow_host::session::Sandbox;

use super::Config;
use super::args::*;
use crate::serve::{self, Core, ServeConfig};

/// A server's sandbox (pooling allocator; `--allow-net` and `--secret` as the policy of the
/// sessions it creates) and its async runtime.
fn server(cx: &Config, net: &PolicyArgs) -> anyhow::Result<(Sandbox, tokio::runtime::Runtime)> {
    let mut sandbox = cx.open(true)?;
    sandbox.set_default_net(net.policy()?);
    sandbox.set_default_cpu_budget(net.cpu_budget);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok((sandbox, rt))
}

/// `burrow serve`: the HTTP API, the console and MCP over Streamable HTTP.
pub(super) fn serve(cx: &Config, a: ServeArgs) -> anyhow::Result<ExitCode> {
    let ServeArgs {
        listen,
        token,
        max_body,
        concurrency,
        concurrent_calls,
        mcp_session,
        net,
    } = a;
    let (sandbox, rt) = server(cx, &net)?;

    let mut config = ServeConfig {
        listen,
        token: token.filter(|t| !t.is_empty()),
        max_body,
        mcp_session,
        ..Default::default()
    };
    if let Some(c) = concurrency {
        config.concurrency = c;
    }
    if config.token.is_none() && !serve::is_loopback(&listen) {
        bail!("{}", serve::ServeError::TokenRequired(listen));
    }
    let core = Core::new(sandbox, config.concurrency);
    core.concurrent_calls
        .store(concurrent_calls, std::sync::atomic::Ordering::Relaxed);
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| serve::ServeError::Bind(listen, e))?;
        let addr = listener.local_addr()?;
        config.listen = addr;
        outln!("listening on http://{addr}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        serve::serve(core, config, listener, serve::shutdown_signal()).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `burrow mcp`: MCP over stdin and stdout.
pub(super) fn mcp(cx: &Config, a: McpArgs) -> anyhow::Result<ExitCode> {
    let McpArgs {
        session,
        new_session,
        net,
    } = a;
    let (sandbox, rt) = server(cx, &net)?;

    let key = if new_session {
        let info = sandbox.create(None)?;
        eprintln!("burrow: new session {}", info.id);
        info.id
    } else {
        session.unwrap_or_else(|| "mcp".into())
    };
    let core = Core::new(sandbox, 4);
    rt.block_on(serve::mcp::serve_stdio(core, key))
        .map_err(|e| anyhow::anyhow!("MCP over stdio failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `burrow worker`: a Claude Managed Agents self-hosted environment.
pub(super) fn worker(cx: &Config, a: WorkerArgs) -> anyhow::Result<ExitCode> {
    let WorkerArgs {
        environment_id,
        environment_key,
        base_url,
        concurrency,
        max_concurrent_calls,
        max_idle,
        poll_interval,
        custom_tools,
        once,
        item_id,
        session_id,
        work_secret,
        memory_delete,
        memory_sync_interval,
        no_memory,
        net,
    } = a;
    let (sandbox, rt) = server(cx, &net)?;

    use crate::worker;
    let cfg = worker::WorkerConfig {
        base_url,
        environment_id,
        environment_key: environment_key.filter(|k| !k.is_empty()),
        concurrency,
        max_concurrent_calls: max_concurrent_calls.0,
        max_idle,
        poll_interval,
        worker_id: worker::default_worker_id(),
        custom_tools,
        once,
        memory: (!no_memory).then_some(worker::MemoryConfig {
            sync_interval: memory_sync_interval,
            deletions: memory_delete,
        }),
    };
    let claimed = match item_id.filter(|i| !i.is_empty()) {
        Some(work_id) => Some(worker::ClaimedItem {
            work_id,
            session_id: session_id.filter(|s| !s.is_empty()).ok_or_else(|| {
                anyhow::anyhow!("--item-id needs --session-id (or ANTHROPIC_SESSION_ID)")
            })?,
            secret: work_secret.filter(|s| !s.is_empty()),
        }),
        None => None,
    };
    let core = Core::new(sandbox, concurrency);
    // Session threads' calls run at once, as the reference runs them in one container.
    core.concurrent_calls.store(
        cfg.max_concurrent_calls != Some(1),
        std::sync::atomic::Ordering::Relaxed,
    );
    let stop = tokio_util::sync::CancellationToken::new();
    rt.block_on(async {
        let signal = stop.clone();
        tokio::spawn(async move {
            serve::shutdown_signal().await;
            signal.cancel();
        });
        match claimed {
            Some(item) => worker::handle_item(core, cfg, item, stop).await,
            None => worker::run(core, cfg, stop).await,
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `burrow agent`: a Messages API tool loop in a session.
pub(super) fn agent(cx: &Config, a: AgentArgs) -> anyhow::Result<ExitCode> {
    let AgentArgs {
        prompt,
        session,
        model,
        max_turns,
        max_tokens,
        system,
        base_url,
        memory,
        memory_session,
        net,
    } = a;
    let (sandbox, rt) = server(cx, &net)?;

    let api_key = std::env::var("ANTHROPIC_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
        .context("set ANTHROPIC_API_KEY")?;
    // A session named on the command line is created when it does not exist yet.
    let named = |key: &str| -> anyhow::Result<String> {
        match sandbox.resolve(key) {
            Ok(id) => Ok(id),
            Err(burrow_host::session::SessionError::Unknown(_)) => {
                Ok(sandbox.create(Some(key))?.id)
            }
            Err(e) => Err(e.into()),
        }
    };
    let id = match session {
        // An existing session keeps its policy, with the rules and secrets given here
        // added to it (a `net_policy` event), so the flags never go unheard.
        Some(key) if sandbox.resolve(&key).is_ok() => {
            let id = sandbox.resolve(&key)?;
            if !net.allow_net.is_empty() || !net.secret.is_empty() {
                let mut policy = sandbox.settings(&id)?.net;
                policy.allow(&net.allow_net)?;
                for s in &net.secret {
                    policy.set_secret(burrow_host::net::SecretRule::parse(s)?);
                }
                sandbox.set_net(&id, policy)?;
            }
            id
        }
        Some(key) => named(&key)?,
        None => {
            let id = sandbox.create(None)?.id;
            eprintln!("burrow: new session {id} (continue with --session {id})");
            id
        }
    };
    let memory = match memory_session {
        Some(key) => Some(named(&key)?),
        None => memory.then(|| id.clone()),
    };
    let cfg = crate::agent::AgentConfig {
        base_url,
        api_key,
        model,
        max_turns,
        max_tokens,
        system,
        memory,
    };
    let core = Core::new(sandbox, 1);
    let outcome = rt.block_on(async {
        let mut stdout = std::io::stdout();
        crate::agent::run(core, &cfg, &id, &prompt, &mut stdout).await
    })?;
    if outcome.stop_reason != "end_turn" {
        eprintln!(
            "burrow: stopped after {} turn(s): {}",
            outcome.turns, outcome.stop_reason
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `burrow bench`: measures against same-run baselines (docs/BENCHMARKS.md).
pub(super) fn bench(cx: &Config, a: BenchArgs) -> anyhow::Result<ExitCode> {
    let json = cx.json;
    let cfg = crate::bench::BenchConfig {
        quick: a.quick,
        only: a.only.clone(),
        exe: std::env::current_exe().context("cannot find the burrow binary")?,
        shared: cx
            .store
            .to_str()
            .map(|p| p.to_string())
            .filter(|p| burrow_host::session::is_postgres_url(p))
            .map(|url| crate::bench::SharedStore {
                catalog: url,
                objects: cx.objects.clone(),
                cache_size: cx.cache_size,
            }),
    };
    if !json {
        outln!("{}", crate::bench::TABLE_HEADER);
    }
    let mut report = |m: &crate::bench::Measure| {
        if json {
            outln!("{}", serde_json::to_string(m).unwrap_or_default());
        } else {
            outln!("{}", crate::bench::table_row(m));
        }
    };
    crate::bench::run(cfg, &mut report)?;
    Ok(ExitCode::SUCCESS)
}
