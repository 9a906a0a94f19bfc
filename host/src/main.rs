//! The `burrow` command-line interface.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use burrow_host::{Engine, EngineConfig, Limits, RunOptions};
use burrow_store::Store;
use clap::{Parser, Subcommand};

/// burrow: durable, forkable workspaces for AI agents' tool calls, run as WebAssembly.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// The store file (created if missing).
    #[arg(long, global = true, env = "BURROW_STORE")]
    store: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a WASI component (or wasip1 module) against a workspace, as one transaction.
    ///
    /// The guest sees the workspace at /workspace and nothing else of the host. Its stdout and
    /// stderr are printed and burrow exits with its exit code. A trap, timeout or limit rolls
    /// the workspace back and exits 125.
    ///
    ///   burrow run --workspace main tool.wasm -- --flag arg
    Run {
        /// Workspace to run in (created empty if it does not exist).
        #[arg(long)]
        workspace: String,
        /// Wall-clock limit, e.g. 30s, 2m, 500ms.
        #[arg(long, default_value = "120s", value_parser = parse_duration)]
        timeout: Duration,
        /// Memory limit in MiB.
        #[arg(long, default_value_t = 1024)]
        memory_mib: usize,
        /// The component or module.
        component: PathBuf,
        /// Arguments passed to the guest.
        #[arg(last = true)]
        args: Vec<String>,
    },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let n: f64 = num.parse().map_err(|_| format!("not a duration: {s}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit in {s} (use ms, s, m or h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

fn default_store() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("burrow").join("burrow.db")
}

fn cache_dir() -> PathBuf {
    std::env::var_os("BURROW_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("burrow")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/burrow")))
        .unwrap_or_else(|| std::env::temp_dir().join("burrow-cache"))
        .join("components")
}

fn open_store(path: Option<PathBuf>) -> anyhow::Result<Store> {
    let path = path.unwrap_or_else(default_store);
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    Ok(Store::open(&path)?)
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("BURROW_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("burrow: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run {
            workspace,
            timeout,
            memory_mib,
            component,
            args,
        } => {
            let store = open_store(cli.store)?;
            if let Err(burrow_store::Error::NoWorkspace(_)) = store.workspace(&workspace) {
                store.create_workspace(&workspace)?;
            }
            let engine = Engine::new(EngineConfig {
                cache_dir: Some(cache_dir()),
                ..Default::default()
            })?;
            let program = engine.load_file(&component)?;
            let opts = RunOptions {
                args,
                program_name: component
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                limits: Limits {
                    timeout,
                    memory: memory_mib << 20,
                    ..Limits::default()
                },
                ..Default::default()
            };
            match engine.run(&store, &workspace, &program, &opts) {
                Ok(r) => {
                    use std::io::Write;
                    std::io::stdout().write_all(&r.report.stdout)?;
                    std::io::stderr().write_all(&r.report.stderr)?;
                    Ok(ExitCode::from(r.report.exit_code.clamp(0, 255) as u8))
                }
                Err(e) => {
                    eprintln!("burrow: {e}");
                    Ok(ExitCode::from(125))
                }
            }
        }
    }
}
