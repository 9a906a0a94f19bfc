//! The `burrow` command line: [`args`] is what clap reads; each verb is one function in the
//! module of its concern ([`session`]: sessions and their history; [`calls`]: tool calls,
//! shell commands and raw runs; [`store`]: GC, fsck, migrate; [`toolchain`]; [`servers`]:
//! serve, mcp, worker, agent). The global flags travel as one [`Config`] value; nothing is
//! process-wide. Everything a verb does goes through the library's `Sandbox` (sessions) or
//! `Engine` (raw runs); this module only parses and prints.

mod args;
mod calls;
mod demo;
mod servers;
mod session;
mod store;
mod toolchain;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use burrow_host::net::Operator;
use burrow_host::session::{Family, Sandbox, SandboxConfig};
use clap::Parser;

use args::{Cli, Command, DurabilityArg, SessionCmd, StoreCmd};

/// The global flags, as the value every verb receives: where the store is and how to open
/// it, the operator's egress settings, and whether to print JSON.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub store: PathBuf,
    /// `--objects`.
    pub objects: Option<String>,
    /// `--cache-dir` and `--cache-size`.
    pub cache: Option<(PathBuf, u64)>,
    /// `--cache-size` (also without `--cache-dir`: `bench` gives it to the stores it makes).
    pub cache_size: u64,
    /// `--durability`, or the verb's own default.
    pub durability: burrow_store::Durability,
    /// `--ca-file` and `--secrets-file`.
    pub operator: Arc<Operator>,
    pub json: bool,
}

impl Config {
    fn from_cli(cli: &Cli) -> anyhow::Result<Config> {
        Ok(Config {
            store: cli
                .store
                .clone()
                .unwrap_or_else(burrow_host::session::default_store_path),
            objects: cli.objects.clone(),
            cache: cli.cache_dir.clone().map(|d| (d, cli.cache_size)),
            cache_size: cli.cache_size,
            durability: cli
                .durability
                .unwrap_or(match cli.command {
                    Command::Worker(_) | Command::Agent(_) => DurabilityArg::Full,
                    _ => DurabilityArg::Normal,
                })
                .into(),
            operator: Arc::new(
                Operator::new(cli.ca_file.as_deref(), cli.secrets_file.as_deref())
                    .map_err(anyhow::Error::msg)?,
            ),
            json: cli.json,
        })
    }

    /// The defaults for a store at `path` (the demo's own).
    pub(crate) fn local(path: &Path) -> anyhow::Result<Config> {
        Ok(Config {
            store: path.to_path_buf(),
            objects: None,
            cache: None,
            cache_size: 1 << 30,
            durability: Default::default(),
            operator: Arc::new(Operator::from_env().map_err(anyhow::Error::msg)?),
            json: false,
        })
    }

    /// Opens the store. A one-call process does without the pooling allocator (its set-up
    /// costs more than it saves); a server wants it.
    /// [`Config::open`], tried again for up to `patience` while the store's server is
    /// unreachable (a restart, a failover, a pooler refusing logins while it comes back).
    pub(crate) fn open_riding_out(&self, patience: std::time::Duration) -> anyhow::Result<Sandbox> {
        let since = std::time::Instant::now();
        let mut backoff = std::time::Duration::from_millis(200);
        loop {
            match self.open(false) {
                Err(e)
                    if since.elapsed() < patience
                        && matches!(
                            e.downcast_ref::<burrow_host::session::SessionError>(),
                            Some(burrow_host::session::SessionError::Store(
                                burrow_store::Error::Server(_)
                            ))
                        ) =>
                {
                    tracing::warn!(error = %e, "the store server is unreachable; trying again");
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
                }
                other => return other,
            }
        }
    }

    pub(crate) fn open(&self, pooling: bool) -> anyhow::Result<Sandbox> {
        tracing::info!(durability = ?self.durability, "opening the store");
        let mut config = SandboxConfig {
            pooling,
            objects: self.objects.clone(),
            object_cache: self.cache.clone(),
            durability: self.durability,
            ..SandboxConfig::from_env().map_err(anyhow::Error::msg)?
        };
        config.limits.egress = self.operator.clone();
        Ok(Sandbox::open_with(&self.store, config)?)
    }
}

pub fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("BURROW_LOG"))
        .with_writer(std::io::stderr)
        // Colours only on a terminal: a log piped to a file or a collector stays plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    let anon = std::env::var_os("BURROW_PEAK_RSS_FILE").map(|_| anon_sampler());
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("burrow: {e:#}");
            ExitCode::from(1)
        }
    };
    // Diagnostics for `burrow bench`: this process's peak RSS (a parent's getrusage would
    // also count the memory it shared with the child between fork and exec).
    if let Some(path) = std::env::var_os("BURROW_PEAK_RSS_FILE")
        && let Ok(status) = std::fs::read_to_string("/proc/self/status")
        && let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:"))
    {
        // The peak (file-backed pages included: the store's database mapped by its readers),
        // then the peak of anonymous memory alone (sampled), both in kB.
        let hwm = line
            .trim_start_matches("VmHWM:")
            .trim()
            .trim_end_matches("kB")
            .trim();
        let anon = anon.map_or(0, |a| a.load(std::sync::atomic::Ordering::Relaxed));
        let _ = std::fs::write(path, format!("{hwm} {anon}"));
    }
    code
}

/// For `BURROW_PEAK_RSS_FILE`: a thread that samples this process's anonymous resident memory
/// (`RssAnon`: what it allocated, not the files it maps) every 2 ms, keeping the largest.
fn anon_sampler() -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let theirs = peak.clone();
    let _ = std::thread::Builder::new()
        .name("rss-sampler".into())
        .spawn(move || {
            loop {
                let kib = std::fs::read_to_string("/proc/self/status")
                    .ok()
                    .and_then(|s| {
                        let line = s.lines().find(|l| l.starts_with("RssAnon:"))?.to_string();
                        line.split_whitespace().nth(1)?.parse::<u64>().ok()
                    })
                    .unwrap_or(0);
                theirs.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
    peak
}

/// A time for the tables: `2026-12-01 01:30:39` (UTC).
pub(crate) fn time(ns: i64) -> String {
    burrow_host::session::rfc3339(ns)[..19].replacen('T', " ", 1)
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(v)?);
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cx = Config::from_cli(&cli)?;
    let json = cx.json;
    // Verbs that need no store, or open it their own way.
    match cli.command {
        Command::Demo(a) => return demo::run(a.keep, json),
        Command::Serve(a) => return servers::serve(&cx, a),
        Command::Mcp(a) => return servers::mcp(&cx, a),
        Command::Worker(a) => return servers::worker(&cx, a),
        Command::Agent(a) => return servers::agent(&cx, a),
        Command::Bench(a) => return servers::bench(&cx, a),
        Command::Toolchain(cmd) => return toolchain::run(&cmd, json),
        Command::Store(StoreCmd::Migrate(a)) => return store::migrate(&cx, &a.from, &a.to),
        Command::Schema(a) => {
            let family: Family = a.family.parse()?;
            print_json(&burrow_host::tools::schema::export(family))?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let sb = match cli.command {
        // Maintenance rides out a store server that restarts, fails over or has its pooler
        // refuse logins meanwhile, as `Store::gc` itself does once open.
        Command::Gc(_) => cx.open_riding_out(std::time::Duration::from_secs(60))?,
        _ => cx.open(false)?,
    };
    match cli.command {
        Command::Session(SessionCmd::New(a)) => session::new(&sb, json, a),
        Command::Session(SessionCmd::Ls) => session::ls(&sb, json),
        Command::Session(SessionCmd::Rm(a)) => session::rm(&sb, a),
        Command::Tool(a) => calls::tool(&sb, json, a),
        Command::Run(a) => calls::run(&sb, a),
        Command::Sh(a) => calls::sh(&sb, a),
        Command::Net(a) => session::net(&sb, json, a),
        Command::Fork(a) => session::fork(&sb, a),
        Command::Tree => session::tree(&sb, json),
        Command::Log(a) => session::log(&sb, json, a),
        Command::History(a) => session::history(&sb, json, a),
        Command::Diff(a) => session::diff(&sb, json, a),
        Command::Merge(a) => session::merge(&sb, json, a),
        Command::Replay(a) => session::replay(&sb, json, a),
        Command::Checkout(a) => session::checkout(&sb, a),
        Command::Undo(a) => session::undo(&sb, a),
        Command::Label(a) => session::label(&sb, a),
        Command::Cat(a) => session::cat(&sb, a),
        Command::Export(a) => session::export(&sb, a),
        Command::Gc(a) => store::gc(&sb, json, a),
        Command::Fsck => store::fsck(&sb),
        Command::Demo(_)
        | Command::Serve(_)
        | Command::Mcp(_)
        | Command::Worker(_)
        | Command::Agent(_)
        | Command::Bench(_)
        | Command::Toolchain(_)
        | Command::Store(_)
        | Command::Schema(_) => unreachable!("handled above"),
    }
}
