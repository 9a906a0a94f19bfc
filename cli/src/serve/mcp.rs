//! The MCP server (official Rust SDK, `rmcp`): the Claude Code tools (Bash, Read, Write, Edit,
//! MultiEdit, Glob, Grep) plus session tools (fork, list, history, diff, merge, undo, checkout), over
//! stdio (`burrow mcp`) or Streamable HTTP (`/mcp` of `burrow serve`). A connection works on
//! one burrow session: the one named by `?session=` on the HTTP endpoint, else the server's
//! default. Sessions live in the store, so a reconnecting client finds its files, shell state
//! and Claude Code file state where they left them.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Core, ServeConfig};
use burrow_host::session::{Family, Sandbox, SessionError};
use burrow_host::tools::schema::{Annotations, ToolDef};
use burrow_host::tools::{Content, ToolOutput};

/// The MCP handler of one connection.
#[derive(Clone)]
pub struct BurrowMcp {
    core: Arc<Core>,
    /// Session key (id or name) used when the request does not name one.
    default_session: String,
}

/// Fork the workspace session in O(1); the forks start with its files and shell state.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkArgs {
    /// How many forks (default 1).
    #[serde(default)]
    pub n: Option<usize>,
}

/// List the sessions of the store (id, name, parent, version, size).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}

/// The versions of this session, newest first: one per tool call that changed something.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// At most this many versions (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Paths that differ between this session and another session or version.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// Another session (id or name), a version number (`42` or `v42`) or a label.
    pub against: String,
}

/// Undo the last change of this session (repeat to go further back).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoArgs {}

/// Move this session to an earlier version (recorded as a new version; nothing is lost).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutArgs {
    /// A version number (`42` or `v42`) or a label.
    pub version: String,
}

/// Merge another session's changes (a fork's, since it was forked or last merged) into this
/// one as one new version. Lists the merged paths; conflicts as `CONFLICT <path>` lines,
/// text conflicts written into the files with diff3-style markers.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeArgs {
    /// The session whose changes come in (id or name), typically a fork of this one.
    pub source: String,
    /// The common version (`42`, `v42` or a label); default: the version last merged from
    /// the source, or the one it was forked at.
    #[serde(default)]
    pub base: Option<String>,
    /// Only report what would merge and conflict; nothing changes.
    #[serde(default)]
    pub no_commit: bool,
}

const SESSION_TOOLS: &[&str] = &[
    "fork", "list", "history", "diff", "merge", "undo", "checkout",
];

/// Every tool an MCP client sees: the Claude Code family, the memory tool, then the session
/// tools.
pub fn tool_defs() -> Vec<ToolDef> {
    use burrow_host::tools::schema::def;
    let read = Annotations {
        read_only_hint: true,
        destructive_hint: false,
    };
    let write = Annotations {
        read_only_hint: false,
        destructive_hint: false,
    };
    let destroy = Annotations {
        read_only_hint: false,
        destructive_hint: true,
    };
    let mut defs = burrow_host::tools::schema::tools(Family::ClaudeCode);
    defs.extend(burrow_host::tools::schema::tools(Family::Memory));
    defs.extend([
        def::<ForkArgs>("fork", write),
        def::<ListArgs>("list", read),
        def::<HistoryArgs>("history", read),
        def::<DiffArgs>("diff", read),
        def::<MergeArgs>("merge", write),
        def::<UndoArgs>("undo", destroy),
        def::<CheckoutArgs>("checkout", destroy),
    ]);
    defs
}

fn to_tool(d: ToolDef) -> Tool {
    let schema = match d.input_schema {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    };
    Tool::new(d.name, d.description, schema).with_annotations(
        ToolAnnotations::new()
            .read_only(d.annotations.read_only_hint)
            .destructive(d.annotations.destructive_hint),
    )
}

fn result(out: ToolOutput) -> CallToolResult {
    let blocks = out
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text { text } => ContentBlock::text(text),
            Content::Image { source } => ContentBlock::image(source.data, source.media_type),
            // MCP has no document block: a PDF travels as an embedded resource (base64 blob).
            Content::Document { source } => ContentBlock::resource(
                rmcp::model::ResourceContents::blob(source.data, "burrow://document")
                    .with_mime_type(source.media_type),
            ),
        })
        .collect();
    if out.is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    }
}

/// The paths changed from `against` to `to` (sessions, versions or labels); with `patch`,
/// each file's unified diff and its added and removed line counts.
pub fn diff(
    sb: &Sandbox,
    against: &str,
    to: &str,
    patch: bool,
) -> Result<super::types::Diff, SessionError> {
    let (from, to, changes) = sb.diff(against, to)?;
    let mut rows = Vec::new();
    for c in &changes {
        let kind = match c.kind {
            burrow_store::ChangeKind::Added => "added",
            burrow_store::ChangeKind::Removed => "removed",
            burrow_store::ChangeKind::Modified => "modified",
        };
        let mut row = super::types::Change {
            path: format!("/workspace/{}", c.path),
            kind: kind.into(),
            entry: None,
            added_lines: None,
            removed_lines: None,
            patch: None,
        };
        if patch {
            let text = sb.patch(from, to, std::slice::from_ref(c))?;
            let count = |sign: char, header: &str| {
                text.lines()
                    .filter(|l| l.starts_with(sign) && !l.starts_with(header))
                    .count()
            };
            row.entry = Some(burrow_host::session::kind_name(c.entry).into());
            row.added_lines = Some(count('+', "+++"));
            row.removed_lines = Some(count('-', "---"));
            row.patch = Some(text);
        }
        rows.push(row);
    }
    Ok(super::types::Diff {
        from: from.0,
        to: to.0,
        changes: rows,
    })
}

impl BurrowMcp {
    pub fn new(core: Arc<Core>, default_session: impl Into<String>) -> BurrowMcp {
        BurrowMcp {
            core,
            default_session: default_session.into(),
        }
    }

    /// The session of this request: `?session=` on HTTP, else the default; a name that
    /// does not exist yet is created (so a client can pick its workspace by name).
    async fn session(&self, ctx: &RequestContext<RoleServer>) -> Result<String, SessionError> {
        let from_query = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.uri.query())
            .and_then(|q| {
                q.split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(k, _)| *k == "session")
                    .map(|(_, v)| v.to_string())
            });
        let key = from_query.unwrap_or_else(|| self.default_session.clone());
        self.core
            .blocking(move |sb| match sb.resolve(&key) {
                Ok(id) => Ok(id),
                // Concurrent first requests race to create it: the loser uses the winner's.
                Err(SessionError::Unknown(_)) => match sb.create(Some(&key)) {
                    Ok(info) => Ok(info.id),
                    Err(SessionError::NameTaken(_)) => sb.resolve(&key),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            })
            .await
    }

    async fn session_tool(&self, id: String, name: &str, args: Value) -> Result<String, String> {
        fn parse<T: for<'de> Deserialize<'de>>(name: &str, v: Value) -> Result<T, String> {
            serde_json::from_value(v).map_err(|e| format!("{name}: invalid arguments: {e}"))
        }
        let core = &self.core;
        let pretty = |v: Value| serde_json::to_string_pretty(&v).unwrap_or_default();
        let r: Result<String, SessionError> = match name {
            "fork" => {
                let a: ForkArgs = parse(name, args)?;
                let sid = id.clone();
                core.serialised(&id, move |sb| sb.fork(&sid, a.n.unwrap_or(1)))
                    .await
                    .map(|ids| format!("forked {id} into:\n{}", ids.join("\n")))
            }
            "list" => {
                let _: ListArgs = parse(name, args)?;
                core.blocking(|sb| sb.list())
                    .await
                    .map(|l| pretty(json!(l)))
            }
            "history" => {
                let a: HistoryArgs = parse(name, args)?;
                core.blocking(move |sb| sb.history(&id, a.limit.unwrap_or(50)))
                    .await
                    .map(|vs| {
                        vs.iter()
                            .map(|v| format!("v{} {}", v.id.0, v.message))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
            }
            "diff" => {
                let a: DiffArgs = parse(name, args)?;
                core.blocking(move |sb| diff(sb, &a.against, &id, false))
                    .await
                    .map(|d| pretty(json!(d)))
            }
            "merge" => {
                let a: MergeArgs = parse(name, args)?;
                let into = id.clone();
                core.serialised(&id, move |sb| {
                    let base = a.base.as_deref().map(|b| sb.version_of(b)).transpose()?;
                    sb.merge(&burrow_host::session::MergeRequest {
                        source: &a.source,
                        into: Some(&into),
                        base,
                        no_commit: a.no_commit,
                    })
                })
                .await
                .map(|o| merge_text(&o))
            }
            "undo" => {
                let _: UndoArgs = parse(name, args)?;
                let sid = id.clone();
                core.serialised(&id, move |sb| sb.undo(&sid))
                    .await
                    .map(|v| format!("undone: the workspace is now as at version {}", v.0))
            }
            "checkout" => {
                let a: CheckoutArgs = parse(name, args)?;
                let sid = id.clone();
                core.serialised(&id, move |sb| {
                    let target = sb.version_of(&a.version)?;
                    sb.checkout(&sid, target).map(|v| (target, v))
                })
                .await
                .map(|(t, v)| format!("checked out version {} as version {}", t.0, v.0))
            }
            other => return Err(format!("unknown tool {other}")),
        };
        r.map_err(|e| e.to_string())
    }
}

impl ServerHandler for BurrowMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                "burrow",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
            "A burrow workspace: files under /workspace persist across connections and can be forked, diffed and undone.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            tool_defs().into_iter().map(to_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let id = match self.session(&context).await {
            Ok(id) => id,
            Err(e) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into());
            }
        };
        if SESSION_TOOLS.contains(&name.as_str()) {
            return Ok(match self.session_tool(id, &name, args).await {
                Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
            }
            .into());
        }
        let family = if Family::Memory.tools().contains(&name.as_str()) {
            Family::Memory
        } else if Family::ClaudeCode.tools().contains(&name.as_str()) {
            Family::ClaudeCode
        } else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        };
        match self.core.call(&id, family, &name, args).await {
            Ok(out) => Ok(result(out).into()),
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()),
        }
    }
}

/// The Streamable HTTP service mounted at `/mcp`.
pub fn http_service(
    core: Arc<Core>,
    config: &ServeConfig,
    ct: tokio_util::sync::CancellationToken,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    BurrowMcp,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let handler = BurrowMcp::new(core, config.mcp_session.clone());
    let mut cfg = StreamableHttpServerConfig::default().with_cancellation_token(ct);
    if !super::is_loopback(&config.listen) {
        // Host validation guards local servers against DNS rebinding; a server bound beyond
        // loopback is reached by other names and is protected by its bearer token instead.
        cfg = cfg.disable_allowed_hosts();
    }
    StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), cfg)
}

/// Serves MCP over stdin/stdout until the client closes it.
pub async fn serve_stdio(core: Arc<Core>, session: String) -> Result<(), rmcp::RmcpError> {
    use rmcp::ServiceExt;
    let running = BurrowMcp::new(core, session)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(rmcp::RmcpError::from)?;
    let _ = running.waiting().await;
    Ok(())
}

/// A merge's answer to an agent: each path on a line (`CONFLICT <path>` for conflicts), then
/// what happened.
fn merge_text(o: &burrow_host::session::MergeOutcome) -> String {
    let mut lines: Vec<String> = o.merged.clone();
    lines.extend(
        o.conflicts
            .iter()
            .map(|c| format!("CONFLICT {} ({})", c.path, c.reason)),
    );
    lines.sort_by(|a, b| {
        let key = |s: &str| s.strip_prefix("CONFLICT ").unwrap_or(s).to_string();
        key(a).cmp(&key(b))
    });
    let summary = if !o.committed && o.merged.is_empty() && o.conflicts.is_empty() {
        format!(
            "nothing to merge from {} since version {}",
            o.source, o.base
        )
    } else if !o.committed {
        format!(
            "would merge {} path(s) from {} with {} conflict(s); nothing changed",
            o.merged.len(),
            o.source,
            o.conflicts.len()
        )
    } else {
        format!(
            "merged {} path(s) from {} as version {}, {} conflict(s)",
            o.merged.len(),
            o.source,
            o.version,
            o.conflicts.len()
        )
    };
    lines.push(summary);
    lines.join("\n")
}
