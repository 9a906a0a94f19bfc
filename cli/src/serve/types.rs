//! The HTTP API's request and response bodies as Rust types: the handlers parse and answer
//! with them, and `/openapi.json` derives its schemas from them (schemars), so the document
//! and the wire cannot drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use burrow_host::net::NetPolicy;
pub use burrow_host::session::{EventInfo, SessionInfo, Settings, Tree, VersionInfo};
pub use burrow_host::tools::ToolOutput;

/// Every error: a status code and this body.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Error {
    /// What went wrong, in words.
    pub error: String,
}

/// `GET /health`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// `GET /sessions`: every session, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

/// `POST /sessions` with a JSON body.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// A unique name (the `?name=` query works too).
    pub name: Option<String>,
    /// Environment, default tool family, limits and network policy; forks inherit them.
    #[serde(default)]
    pub settings: Settings,
}

/// `POST /sessions/{id}/call`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallTool {
    /// The tool's name in its family (`bash`, `read`, `Bash`, `str_replace_based_edit_tool`, ...).
    pub tool: String,
    /// The tool's input object, as the model sends it (absent or null: `{}`).
    #[serde(default)]
    #[schemars(with = "ToolInput")]
    pub input: Option<serde_json::Map<String, Value>>,
    /// `agent-toolset` (default unless the session says otherwise), `claude-code`, `api` or
    /// `memory`.
    pub family: Option<burrow_host::tools::Family>,
}

/// A tool's input: an object whose fields the tool defines (see each family's schemas).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CallToolInput")]
pub struct ToolInput(pub serde_json::Map<String, Value>);

/// `POST /sessions/{id}/fork`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSession {
    /// How many forks (1 to 10000; default 1).
    pub n: Option<usize>,
}

/// The sessions a fork made.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Forked {
    pub ids: Vec<String>,
}

/// `GET /sessions/{id}/history`: newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct History {
    pub versions: Vec<VersionInfo>,
}

/// A changed path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Change {
    /// `/workspace/...`.
    pub path: String,
    /// `added`, `removed` or `modified`.
    pub kind: String,
    /// With `?patch=true`: `file`, `dir` or `symlink`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// With `?patch=true`: lines added and removed (0 for binary files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_lines: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_lines: Option<usize>,
    /// With `?patch=true`: the unified diff of a file (git's shape, 3 lines of context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// `GET /sessions/{id}/diff`: what changed from version `from` to version `to`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diff {
    pub from: i64,
    pub to: i64,
    pub changes: Vec<Change>,
}

/// A version given by number or by label.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VersionKey {
    Number(i64),
    Label(String),
}

/// `POST /sessions/{id}/merge`: merge this session's changes into another.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Merge {
    /// The session to merge into (default: this session's parent).
    #[serde(default)]
    pub into: Option<String>,
    /// The common version, a number or a label (default: the version last merged from this
    /// session, or the one it was forked at).
    #[serde(default)]
    pub base: Option<VersionKey>,
    /// Only report; the destination is left unchanged.
    #[serde(default)]
    pub no_commit: bool,
}

/// `POST /sessions/{id}/replay`: run this session's recorded calls again in a new fork.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// Replay the calls made from this version on, a number or a label (default: every
    /// call in the session's log).
    #[serde(default)]
    pub from: Option<VersionKey>,
    /// The name of the fork the calls run in (default: unnamed).
    #[serde(default)]
    pub into: Option<String>,
}

/// `POST /sessions/{id}/checkout`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkout {
    /// The version to move to: a number or a label.
    pub version: VersionKey,
}

/// The session's version after a change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionRef {
    pub version: i64,
}

/// `POST /sessions/{id}/label`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelVersion {
    pub label: String,
}

/// A label and the version it names.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Labelled {
    pub version: i64,
    pub label: String,
}

/// One label of the store.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LabelInfo {
    pub label: String,
    pub version: i64,
    /// The session that committed the version (None once it is deleted).
    pub session: Option<String>,
}

/// `GET /labels`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Labels {
    pub labels: Vec<LabelInfo>,
}

/// `GET /sessions/{id}/events`: a page, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Events {
    pub events: Vec<EventInfo>,
    /// Give it as `?after=` for the next page (None: the page was empty).
    pub next_after: Option<i64>,
}
