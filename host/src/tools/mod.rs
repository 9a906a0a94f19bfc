//! The agent tools: the shared file-tool component (`tools-wasm/fs-tools`, embedded in the
//! binary) and one thin adapter per tool family that maps the family's inputs, paths and exact
//! strings onto the component's operations. Adapters are functions from input JSON to
//! operations and from results to the family's text; every operation runs inside the caller's
//! transaction, so a tool call is one atomic version.

pub mod agent_toolset;
pub mod api;
pub mod claude_code;
pub mod memory;
pub mod schema;

use std::sync::Arc;

use burrow_store::Txn;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Engine, Limits, Program, RunError, RunOptions};

/// Which tool family's names, schemas and strings a call uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Claude Managed Agents `agent_toolset_20260401`.
    #[default]
    AgentToolset,
    /// Claude Code / Agent SDK tools (Bash, Read, Write, Edit, MultiEdit, Glob, Grep).
    ClaudeCode,
    /// Messages API client tools (`bash_20250124`, `text_editor_20250728`).
    Api,
    /// Claude's memory tool (`memory_20250818`) over the session's `/memories`.
    Memory,
}

/// One of Claude's tool families over the shared file-tool component and shell.
///
/// A family is an adapter: it maps its tools' inputs, paths and exact strings onto the
/// operations of [`Call`] (the file-tool component, the shell), all in the call's one
/// transaction, and words the results as its reference does. What a family remembers between
/// the calls of a session (the agent toolset's dead shell, Claude Code's reads) is its own
/// state: the session keeps it in its metadata under [`ToolFamily::state`]'s key, hands it
/// in before each call and stores what the family leaves there. Adding a family: a module
/// implementing this trait, a [`Family`] variant, and its line in [`FAMILIES`].
pub trait ToolFamily: Send + Sync {
    /// Which family this is.
    fn family(&self) -> Family;
    /// The name `--schema` takes, and other names accepted for it.
    fn names(&self) -> &'static [&'static str];
    /// The tools' names.
    fn tools(&self) -> &'static [&'static str];
    /// The tools, in the order clients list them, with their input schemas.
    fn definitions(&self) -> Vec<schema::ToolDef>;
    /// The `tools` a Messages API request lists: custom tools (`name`, `description`,
    /// `input_schema`) unless the family is one of Anthropic's defined tool types.
    fn messages_tools(&self) -> Value {
        schema::custom_tools(&self.definitions())
    }
    /// Where the family keeps per-session state, if it keeps any.
    fn state(&self) -> Option<StateKey> {
        None
    }
    /// Runs `tool` with `input`. `state` holds what the family left after the session's
    /// last call (None: nothing); what it holds afterwards is stored, even for a call that
    /// is rolled back.
    fn call(
        &self,
        cx: Cx<'_>,
        tool: &str,
        input: &Value,
        state: &mut Option<String>,
    ) -> Result<Outcome, RunError>;
    /// Ends the named shell `shell` (its thread is over): later calls in it are refused as
    /// the family's reference refuses calls on a closed shell. A family without a persistent
    /// shell of its own ignores this.
    fn close_shell(&self, _shell: &str, _state: &mut Option<String>) {}
}

/// The session metadata key of a family's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateKey {
    pub key: &'static str,
    /// Whether a fork starts with its parent's state (it describes the fork's files too) or
    /// without.
    pub forked: bool,
}

/// What a family's call runs with.
pub struct Cx<'a> {
    pub tb: &'a Toolbox,
    pub txn: Txn,
    pub limits: &'a Limits,
    pub env: &'a [(String, String)],
    /// The session's own call timeout, when it set one (a family's bash otherwise takes its
    /// reference's default).
    pub timeout: Option<std::time::Duration>,
    /// Which of the session's persistent shells a shell tool uses: None for the session's
    /// own, else a [`shell_name`] (a Managed Agents subagent thread has its own shell).
    pub shell: Option<&'a str>,
    /// Directories outside the workspace the file tools may reach too.
    pub roots: &'a [ToolRoot],
}

/// A directory outside the workspace that a family's file tools may reach (absolute guest
/// path), and whether they may only read it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolRoot {
    pub path: String,
    #[serde(default)]
    pub read_only: bool,
}

impl ToolRoot {
    /// Whether the absolute guest path `abs` is this directory or inside it.
    pub fn holds(&self, abs: &str) -> bool {
        let root = self.path.trim_end_matches('/');
        abs == root || abs.starts_with(&format!("{root}/"))
    }
}

/// Every family, by [`Family`].
pub static FAMILIES: [&dyn ToolFamily; 4] = [
    &agent_toolset::AgentToolset,
    &claude_code::ClaudeCode,
    &api::Api,
    &memory::Memory,
];

impl Family {
    /// The family's adapter.
    pub fn adapter(self) -> &'static dyn ToolFamily {
        FAMILIES
            .iter()
            .copied()
            .find(|f| f.family() == self)
            .unwrap_or(FAMILIES[0])
    }

    /// The name `--schema` takes.
    pub fn name(self) -> &'static str {
        self.adapter().names()[0]
    }

    /// The family's tool names.
    pub fn tools(self) -> &'static [&'static str] {
        self.adapter().tools()
    }

    /// The family that runs a `tool_use` named `tool`: `self` when it has the tool, else the
    /// first family that does (so one loop can mix the api family's `bash` and editor with
    /// the memory tool and the agent toolset's `read`); `None` for a name no family has.
    pub fn serving(self, tool: &str) -> Option<Family> {
        [
            self,
            Family::Api,
            Family::AgentToolset,
            Family::Memory,
            Family::ClaudeCode,
        ]
        .into_iter()
        .find(|f| f.tools().contains(&tool))
    }
}

/// A `--schema` value that names no family.
#[derive(Debug, thiserror::Error)]
#[error("unknown tool family '{0}' (agent-toolset, claude-code, api, memory)")]
pub struct UnknownFamily(pub String);

impl std::str::FromStr for Family {
    type Err = UnknownFamily;
    fn from_str(s: &str) -> Result<Family, UnknownFamily> {
        FAMILIES
            .iter()
            .find(|f| f.names().contains(&s))
            .map(|f| f.family())
            .ok_or_else(|| UnknownFamily(s.to_string()))
    }
}

/// The file-tool component, built by `build.rs` from `tools-wasm/fs-tools`.
pub static FS_TOOLS_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fs-tools.wasm"));
/// The shell component, built by `build.rs` from `tools-wasm/sh`.
pub static SH_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sh.wasm"));

/// The components' native code, precompiled by `build.rs` with the engine's configuration
/// (empty when the build could not, e.g. when cross-compiling), and their BLAKE3 hashes.
/// All embedded bytes are statics, not consts: a const's value travels in the crate's
/// metadata and is copied into every crate that names it (tens of MB per test binary).
static FS_TOOLS_CWASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fs-tools.cwasm"));
static SH_CWASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sh.cwasm"));
static FS_TOOLS_HASH: &[u8; 32] = include_bytes!(concat!(env!("OUT_DIR"), "/fs-tools.blake3"));
static SH_HASH: &[u8; 32] = include_bytes!(concat!(env!("OUT_DIR"), "/sh.blake3"));

/// Whether this build embeds native code for its built-in components (the first call on an
/// empty disk then runs no compiler).
pub fn precompiled() -> bool {
    !SH_CWASM.is_empty() && !FS_TOOLS_CWASM.is_empty()
}

/// Where the workspace appears to tools and guests.
pub const WORKSPACE: &str = crate::wasi_fs::WORKSPACE;

/// Base64 payload of an image or document block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Source {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: String,
    pub data: String,
}

/// One block of a tool result, shaped as the Anthropic API's content blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text { text: String },
    Image { source: Source },
    Document { source: Source },
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![Content::Text { text: text.into() }],
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![Content::Text { text: text.into() }],
            is_error: true,
        }
    }

    /// The Messages API `tool_result` block answering the `tool_use` block `tool_use_id`.
    pub fn tool_result(&self, tool_use_id: &Value) -> Value {
        serde_json::json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content,
            "is_error": self.is_error,
        })
    }

    /// The text blocks joined (what a terminal shows).
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub use burrow_fs_proto as proto;
pub use burrow_fs_proto::Failure;

/// The loaded tool components.
pub struct Toolbox {
    engine: Arc<Engine>,
    fs: std::sync::OnceLock<Program>,
    sh: std::sync::OnceLock<Program>,
    /// The same two in the metered engine (calls with a CPU budget).
    fs_metered: std::sync::OnceLock<Program>,
    sh_metered: std::sync::OnceLock<Program>,
    /// The shared read-only tool layer the shell sees, if any.
    tool_layer: Option<crate::wasi_fs::Mount>,
    toolchains: Option<crate::wasi_fs::Mount>,
}

impl Toolbox {
    /// The embedded components, each loaded into `engine` on first use (compiled once, then
    /// taken from the on-disk cache), so a process that only reads never loads the shell.
    pub fn new(engine: Arc<Engine>) -> Result<Toolbox, RunError> {
        Ok(Toolbox {
            engine,
            fs: std::sync::OnceLock::new(),
            sh: std::sync::OnceLock::new(),
            fs_metered: std::sync::OnceLock::new(),
            sh_metered: std::sync::OnceLock::new(),
            tool_layer: None,
            toolchains: None,
        })
    }

    /// Mounts a host directory of programs read-only into every shell call.
    pub fn set_tool_layer(&mut self, mount: crate::wasi_fs::Mount) {
        self.tool_layer = Some(mount);
    }

    /// Mounts the toolchains directory read-only into every shell call in which it exists
    /// (so one installed while a server runs is seen by its next call).
    pub fn set_toolchains(&mut self, mount: crate::wasi_fs::Mount) {
        self.toolchains = Some(mount);
    }

    /// The host directories a shell call sees.
    fn shell_mounts(&self) -> Vec<crate::wasi_fs::Mount> {
        let toolchains = self.toolchains.iter().filter(|m| m.host.is_dir());
        self.tool_layer.iter().chain(toolchains).cloned().collect()
    }

    /// A built-in component in the engine a run with `limits` runs on (see
    /// [`Engine::for_limits`]), and that engine.
    fn program<'a>(
        &self,
        cells: (
            &'a std::sync::OnceLock<Program>,
            &'a std::sync::OnceLock<Program>,
        ),
        (wasm, cwasm, hash): (&[u8], &[u8], &[u8; 32]),
        limits: &Limits,
    ) -> Result<(&'a Program, Engine), RunError> {
        let engine = self.engine.for_limits(limits)?;
        let cell = if engine.is_metered() {
            cells.1
        } else {
            cells.0
        };
        if let Some(p) = cell.get() {
            return Ok((p, engine));
        }
        let p = engine.load_builtin(wasm, cwasm, *hash)?;
        Ok((cell.get_or_init(|| p), engine))
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Runs one file operation in `txn`.
    pub fn fs_op(
        &self,
        txn: Txn,
        request: &proto::Request,
        limits: &Limits,
    ) -> Result<(Txn, Result<Value, Failure>), RunError> {
        // The answer is the component's whole stdout: a result capped like a command's output
        // would be cut (a grep with 20,000 matching lines is several megabytes).
        let opts = RunOptions {
            program_name: "fs-tools".into(),
            stdin: serde_json::to_vec(request).map_err(|e| RunError::Host(e.to_string()))?,
            limits: Limits {
                capture: FS_ANSWER_MAX,
                output: FS_ANSWER_MAX as u64,
                ..limits.clone()
            },
            ..Default::default()
        };
        let (fs, engine) = self.program(
            (&self.fs, &self.fs_metered),
            (FS_TOOLS_WASM, FS_TOOLS_CWASM, FS_TOOLS_HASH),
            limits,
        )?;
        let (txn, report) = engine.run_txn(fs, txn, &opts)?;
        if report.stdout_dropped > 0 {
            return Err(RunError::Host(format!(
                "fs-tools answered more than {} MiB",
                FS_ANSWER_MAX >> 20
            )));
        }
        let response: proto::Response<Value> =
            serde_json::from_slice(&report.stdout).map_err(|e| {
                RunError::Host(format!(
                    "fs-tools answered something unreadable ({e}): {}",
                    String::from_utf8_lossy(&report.stderr)
                ))
            })?;
        Ok((txn, response.into()))
    }
}

/// Largest answer of the file-tools component, in bytes (a search over a large tree; the
/// host holds it in memory a few times over while parsing).
pub const FS_ANSWER_MAX: usize = 256 << 20;

impl Toolbox {
    /// Runs a shell command in `txn` (the session's shell state lives in the workspace), with
    /// the session's environment. `restart` resets that state instead.
    pub fn shell(
        &self,
        txn: Txn,
        command: &str,
        restart: bool,
        limits: &Limits,
        env: &[(String, String)],
    ) -> Result<(Txn, crate::RunReport), RunError> {
        self.shell_input(txn, command, restart, limits, env, Vec::new())
    }

    /// [`Toolbox::shell`] in the session's named shell `name` (None: its own): a shell with
    /// its own working directory, variables and options, as a Managed Agents subagent thread
    /// has. `name` is a [`shell_name`].
    pub fn shell_named(
        &self,
        txn: Txn,
        command: &str,
        restart: bool,
        limits: &Limits,
        env: &[(String, String)],
        name: Option<&str>,
    ) -> Result<(Txn, crate::RunReport), RunError> {
        let Some(name) = name else {
            return self.shell(txn, command, restart, limits, env);
        };
        let mut args = vec!["--shell".to_string(), name.to_string()];
        if restart {
            args.push("--restart".into());
        } else {
            args.extend(["-c".to_string(), command.to_string()]);
        }
        self.run_sh(txn, args, limits, env, Vec::new())
    }

    /// A whole shell, as `bash -c` runs one: fresh (no variables, functions or traps carried
    /// over) in `cwd`, its EXIT trap run at the end, and the state it ends with saved.
    pub fn shell_whole(
        &self,
        txn: Txn,
        command: &str,
        cwd: &str,
        limits: &Limits,
        env: &[(String, String)],
    ) -> Result<(Txn, crate::RunReport), RunError> {
        let mut env: Vec<(String, String)> =
            env.iter().filter(|(k, _)| k != "PWD").cloned().collect();
        env.push(("PWD".into(), cwd.to_string()));
        let args = vec!["--whole-shell".into(), "-c".into(), command.to_string()];
        self.run_sh(txn, args, limits, &env, Vec::new())
    }

    /// [`Toolbox::shell`] with bytes on the command's standard input.
    pub fn shell_input(
        &self,
        txn: Txn,
        command: &str,
        restart: bool,
        limits: &Limits,
        env: &[(String, String)],
        stdin: Vec<u8>,
    ) -> Result<(Txn, crate::RunReport), RunError> {
        let args = if restart {
            vec!["--restart".to_string()]
        } else {
            vec!["-c".to_string(), command.to_string()]
        };
        self.run_sh(txn, args, limits, env, stdin)
    }

    /// One run of the shell component with `args`.
    fn run_sh(
        &self,
        txn: Txn,
        args: Vec<String>,
        limits: &Limits,
        env: &[(String, String)],
        stdin: Vec<u8>,
    ) -> Result<(Txn, crate::RunReport), RunError> {
        let opts = RunOptions {
            program_name: "bash".into(),
            args,
            limits: limits.clone(),
            env: env.to_vec(),
            mounts: self.shell_mounts(),
            stdin,
            ..Default::default()
        };
        let (sh, engine) = self.program(
            (&self.sh, &self.sh_metered),
            (SH_WASM, SH_CWASM, SH_HASH),
            limits,
        )?;
        // Programs the shell's programs start through `/dev/burrow` run this shell again.
        let opts = RunOptions {
            shell: Some(sh.clone()),
            ..opts
        };
        engine.run_txn(sh, txn, &opts)
    }
}

/// What a call did: the transaction to commit (None when the call is rolled back, as a
/// timed-out bash command or a failed multi-edit is), the result, and whether the bash session
/// is now terminated (agent_toolset only).
pub struct Outcome {
    pub txn: Option<Txn>,
    pub output: ToolOutput,
}

/// One tool call in progress: the transaction it runs in, threaded through the component
/// runs it makes, so every operation of a call sees the previous one's changes.
pub struct Call<'a> {
    tb: &'a Toolbox,
    txn: Option<Txn>,
    pub limits: &'a Limits,
    pub env: &'a [(String, String)],
}

impl<'a> Call<'a> {
    pub fn new(
        tb: &'a Toolbox,
        txn: Txn,
        limits: &'a Limits,
        env: &'a [(String, String)],
    ) -> Call<'a> {
        Call {
            tb,
            txn: Some(txn),
            limits,
            env,
        }
    }

    fn take(&mut self) -> Result<Txn, RunError> {
        self.txn
            .take()
            .ok_or_else(|| RunError::Host("transaction lost".into()))
    }

    /// Runs one file operation of the shared component.
    pub fn op<O: proto::Op>(&mut self, op: O) -> Result<Result<O::Reply, Failure>, RunError> {
        let txn = self.take()?;
        let (txn, r) = self.tb.fs_op(txn, &op.into(), self.limits)?;
        self.txn = Some(txn);
        match r {
            Ok(v) => serde_json::from_value(v)
                .map(Ok)
                .map_err(|e| RunError::Host(format!("fs-tools answered an unexpected reply: {e}"))),
            Err(f) => Ok(Err(f)),
        }
    }

    /// Runs a shell command (or a restart) with the call's limits, or `limits` when given.
    pub fn shell(
        &mut self,
        command: &str,
        restart: bool,
        limits: Option<&Limits>,
    ) -> Result<crate::RunReport, RunError> {
        let txn = self.take()?;
        let (txn, report) = self.tb.shell(
            txn,
            command,
            restart,
            limits.unwrap_or(self.limits),
            self.env,
        )?;
        self.txn = Some(txn);
        Ok(report)
    }

    /// [`Toolbox::shell_whole`] in the call's transaction, in the session's [`Call::cwd`].
    pub fn shell_whole(
        &mut self,
        command: &str,
        limits: &Limits,
    ) -> Result<crate::RunReport, RunError> {
        let cwd = self.cwd();
        let txn = self.take()?;
        let (txn, report) = self.tb.shell_whole(txn, command, &cwd, limits, self.env)?;
        self.txn = Some(txn);
        Ok(report)
    }

    /// The transaction, for host-side lookups (stat, the shell's cwd).
    pub fn txn(&mut self) -> Result<&mut Txn, RunError> {
        self.txn
            .as_mut()
            .ok_or_else(|| RunError::Host("transaction lost".into()))
    }

    /// The session's current directory as the shell left it (`/workspace` by default).
    pub fn cwd(&mut self) -> String {
        self.shell_cwd()
            .filter(|c| workspace_path(WORKSPACE, c).is_some())
            .unwrap_or_else(|| WORKSPACE.to_string())
    }

    /// The working directory the shell's saved state names, wherever it is.
    pub fn shell_cwd(&mut self) -> Option<String> {
        let t = self.txn().ok()?;
        let bytes = t
            .read_file(&shell_state())
            .or_else(|_| t.read_file(LEGACY_SHELL_STATE))
            .ok()?;
        let state: Value = serde_json::from_slice(&bytes).ok()?;
        state.get("cwd").and_then(Value::as_str).map(str::to_string)
    }

    /// Whether a workspace-relative path is a directory (following links).
    pub fn is_dir(&mut self, rel: &str) -> bool {
        self.stat(rel)
            .is_some_and(|st| st.kind == burrow_store::Kind::Dir)
    }

    /// The metadata of a workspace-relative path (following links), if it exists.
    pub fn stat(&mut self, rel: &str) -> Option<burrow_store::Stat> {
        let txn = self.txn().ok()?;
        txn.stat_at(burrow_store::ROOT_INO, &store_path(rel), true)
            .ok()
    }

    /// Modification time (ns) of a workspace-relative path, if it exists.
    pub fn mtime(&mut self, rel: &str) -> Option<i64> {
        let txn = self.txn().ok()?;
        let st = txn
            .stat_at(burrow_store::ROOT_INO, &store_path(rel), true)
            .ok()?;
        Some(st.mtime)
    }

    /// The call's end: commit what it did.
    pub fn finish(self, output: ToolOutput) -> Outcome {
        Outcome {
            txn: self.txn,
            output,
        }
    }

    /// The call's end: roll back everything it did.
    pub fn abort(self, output: ToolOutput) -> Outcome {
        Outcome { txn: None, output }
    }
}

/// The media type of a file the read tools return as an image or document block.
pub fn media_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// An image or PDF read by the component (`base64` or `text` field) as a content block.
pub fn media_block(media: &str, read: &proto::ReadReply) -> Content {
    let data = match (&read.base64, &read.text) {
        (Some(b), _) => b.clone(),
        (_, Some(t)) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(t.as_bytes())
        }
        _ => String::new(),
    };
    let source = Source {
        kind: "base64".into(),
        media_type: media.into(),
        data,
    };
    if media == "application/pdf" {
        Content::Document { source }
    } else {
        Content::Image { source }
    }
}

/// Largest image read, in bytes (5 MiB once base64-encoded).
pub const MAX_IMAGE_BYTES: u64 = (5 * 1024 * 1024 / 4) * 3;
/// Largest PDF read, in bytes.
pub const MAX_PDF_BYTES: u64 = 20 * 1024 * 1024;

/// The byte cap of reading a media file.
pub fn media_limit(media: &str) -> u64 {
    if media == "application/pdf" {
        MAX_PDF_BYTES
    } else {
        MAX_IMAGE_BYTES
    }
}

/// Keeps the last `limit` bytes of `text` (on a character boundary); true if it cut.
pub fn keep_tail(text: &mut String, limit: usize) -> bool {
    if text.len() <= limit {
        return false;
    }
    let mut cut = text.len() - limit;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.drain(..cut);
    true
}

/// The shell's saved state in the store: the system area's `run/shell.json`, which the guest
/// sees as `/run/burrow/shell.json`.
pub fn shell_state() -> String {
    format!("{}/run/shell.json", burrow_store::SYSTEM_DIR)
}

/// Where sessions made before the system area kept it (moved out by the shell on next use).
pub const LEGACY_SHELL_STATE: &str = ".burrow/shell.json";

/// Maps a caller's path (absolute under `/workspace`, or relative to `cwd`) to a path
/// relative to the workspace root, collapsing `.` and `..`. `None` if it lands outside.
pub fn workspace_path(cwd: &str, path: &str) -> Option<String> {
    let parts = guest_parts(cwd, path)?;
    let root: Vec<&str> = WORKSPACE.split('/').filter(|c| !c.is_empty()).collect();
    if parts.len() < root.len() || parts[..root.len()] != root[..] {
        return None;
    }
    let rel = parts[root.len()..].join("/");
    Some(if rel.is_empty() { ".".into() } else { rel })
}

/// [`workspace_path`], or for a path under `/tmp` (which the Claude Code file tools and the
/// Messages API text editor may use, as on Linux) its absolute guest path, e.g. `/tmp/x`.
/// Either form is what the file-tools component opens and what [`Call::mtime`] takes.
pub fn sandbox_path(cwd: &str, path: &str) -> Option<String> {
    if let Some(rel) = workspace_path(cwd, path) {
        return Some(rel);
    }
    let parts = guest_parts(cwd, path)?;
    (parts.first().map(String::as_str) == Some("tmp")).then(|| format!("/{}", parts.join("/")))
}

/// The components of a caller's path (absolute, or relative to `cwd`) with `.` and `..`
/// folded; None if `..` climbs above `/` or a NUL appears (no caller path names the
/// store's system area).
/// `path` resolved against `cwd` lexically, as an absolute guest path.
pub fn guest_path(cwd: &str, path: &str) -> Option<String> {
    Some(format!("/{}", guest_parts(cwd, path)?.join("/")))
}

/// The marker the shell leaves when a call's script ended it (`exit`, a fatal error): the
/// system area's `run/exited`, the guest's `/run/burrow/exited`.
pub fn shell_exited() -> String {
    format!("{}/run/exited", burrow_store::SYSTEM_DIR)
}

/// [`shell_exited`] of the named shell `name` (None: the session's own).
pub fn shell_exited_in(name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{}/run/shells/{n}/exited", burrow_store::SYSTEM_DIR),
        None => shell_exited(),
    }
}

/// The name under which a named shell for `key` (a Managed Agents thread id) is kept: the key
/// itself when it is made of letters, digits, `_`, `-` and `.` (and is not `.` or `..`),
/// else `x` and its hex, so that any key names one directory and no two keys share it.
pub fn shell_name(key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 100
        && key != "."
        && key != ".."
        && !key.starts_with('x')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if plain {
        return key.to_string();
    }
    let hex: String = key.bytes().take(60).map(|b| format!("{b:02x}")).collect();
    let digest = {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(key.as_bytes());
        d.iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    format!("x{hex}-{digest}")
}

fn guest_parts(cwd: &str, path: &str) -> Option<Vec<String>> {
    if path.contains('\0') || cwd.contains('\0') {
        return None;
    }
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c.to_string()),
        }
    }
    Some(parts)
}

/// The store path (from the root) of what [`sandbox_path`] returned.
pub fn store_path(rel: &str) -> String {
    match rel.strip_prefix("/tmp") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}/tmp{rest}", burrow_store::SYSTEM_DIR)
        }
        _ => rel.to_string(),
    }
}

/// The absolute guest path of a workspace-relative path.
pub fn absolute(rel: &str) -> String {
    if rel.starts_with('/') {
        rel.to_string() // already a guest path outside the workspace (`/tmp/...`)
    } else if rel == "." || rel.is_empty() {
        WORKSPACE.to_string()
    } else {
        format!("{WORKSPACE}/{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        assert_eq!(workspace_path("/workspace", "a/b").as_deref(), Some("a/b"));
        assert_eq!(
            workspace_path("/workspace/src", "../x").as_deref(),
            Some("x")
        );
        assert_eq!(
            workspace_path("/workspace", "/workspace/a/./b/../c").as_deref(),
            Some("a/c")
        );
        assert_eq!(workspace_path("/workspace", ".").as_deref(), Some("."));
        assert_eq!(workspace_path("/workspace", ".."), None);
        assert_eq!(workspace_path("/workspace", "/etc/passwd"), None);
        assert_eq!(workspace_path("/workspace", "/workspacex/a"), None);
        assert_eq!(workspace_path("/workspace", "../../../etc"), None);
        assert_eq!(absolute("a/b"), "/workspace/a/b");
        assert_eq!(absolute("."), "/workspace");
    }
}
