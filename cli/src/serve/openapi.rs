//! The OpenAPI 3.1 document served at `/openapi.json`, built from [`ROUTES`] (the table the
//! tests walk to check that every route is documented and answers) with every request and
//! response schema derived from the Rust types the handlers use ([`super::types`], through
//! schemars), so generated clients are typed.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::types as t;

/// A request or response body.
#[derive(Clone, Copy)]
pub enum Body {
    None,
    /// JSON of a Rust type: its schema.
    Json(fn(&mut SchemaGenerator) -> Schema),
    /// Bytes of this media type.
    Bytes(&'static str),
    /// Server-Sent Events.
    Sse,
}

/// A query parameter: name, JSON type, description.
pub type Param = (&'static str, &'static str, &'static str);

/// One route of the HTTP API.
pub struct Route {
    pub method: &'static str,
    /// OpenAPI template syntax.
    pub path: &'static str,
    /// The operation id generated clients name their function after.
    pub operation_id: &'static str,
    pub summary: &'static str,
    pub query: &'static [Param],
    pub request: Body,
    /// The success status and its body.
    pub status: u16,
    pub response: Body,
}

fn s<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

const VERSION_Q: Param = (
    "version",
    "string",
    "A version number, v42 or a label (default: the session's head).",
);

pub const ROUTES: &[Route] = &[
    Route {
        method: "get",
        path: "/health",
        operation_id: "health",
        summary: "Liveness: {\"status\":\"ok\"} (no token needed).",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Health>),
    },
    Route {
        method: "get",
        path: "/metrics",
        operation_id: "metrics",
        summary: "Prometheus metrics: calls, errors, latency, sessions, store bytes.",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Bytes("text/plain"),
    },
    Route {
        method: "get",
        path: "/openapi.json",
        operation_id: "openapi",
        summary: "This document.",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Bytes("application/json"),
    },
    Route {
        method: "get",
        path: "/sessions",
        operation_id: "listSessions",
        summary: "List sessions, oldest first.",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::SessionList>),
    },
    Route {
        method: "post",
        path: "/sessions",
        operation_id: "createSession",
        summary: "Create a session: JSON {name?, settings?} (settings.net is its network policy; default: the server's --allow-net/--secret), or an application/x-tar body (query ?name=) to start from a tree.",
        query: &[(
            "name",
            "string",
            "The new session's name (with a tar body).",
        )],
        request: Body::Json(s::<t::CreateSession>),
        status: 201,
        response: Body::Json(s::<t::SessionInfo>),
    },
    Route {
        method: "get",
        path: "/labels",
        operation_id: "listLabels",
        summary: "Every label, with its version and the session that made it.",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Labels>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}",
        operation_id: "getSession",
        summary: "Get a session (id, unique id prefix or name).",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::SessionInfo>),
    },
    Route {
        method: "delete",
        path: "/sessions/{id}",
        operation_id: "deleteSession",
        summary: "Delete a session.",
        query: &[],
        request: Body::None,
        status: 204,
        response: Body::None,
    },
    Route {
        method: "post",
        path: "/sessions/{id}/call",
        operation_id: "callTool",
        summary: "Run a tool call as one atomic version: {tool, input, family?} -> {content, is_error}.",
        query: &[],
        request: Body::Json(s::<t::CallTool>),
        status: 200,
        response: Body::Json(s::<t::ToolOutput>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/fork",
        operation_id: "forkSession",
        summary: "Fork the session n times in O(1): {n?} -> {ids}.",
        query: &[],
        request: Body::Json(s::<t::ForkSession>),
        status: 201,
        response: Body::Json(s::<t::Forked>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/history",
        operation_id: "getHistory",
        summary: "Versions, newest first, with their labels.",
        query: &[("limit", "integer", "At most this many (default 100).")],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::History>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/diff",
        operation_id: "diffSession",
        summary: "Paths changed from ?against= (a session, version or label) to ?to= (default: this session); ?patch=true adds each file's unified diff and line counts.",
        query: &[
            (
                "against",
                "string",
                "The older side: a session, version or label.",
            ),
            (
                "to",
                "string",
                "The newer side (default: this session's head).",
            ),
            ("patch", "boolean", "Include unified diffs and line counts."),
        ],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Diff>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/merge",
        operation_id: "mergeSession",
        summary: "Merge this session's changes since {base?} (default: its fork point or last merge) into {into?} (default: its parent) as one new version; conflicts are listed and written into text files with diff3-style markers; {no_commit?} only reports.",
        query: &[],
        request: Body::Json(s::<t::Merge>),
        status: 200,
        response: Body::Json(s::<burrow_host::session::MergeOutcome>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/replay",
        operation_id: "replaySession",
        summary: "Run this session's recorded calls (from {from?} on; default: all) again in a new fork (named {into?}), each from the tree it started from, and report each call whose output or resulting tree differs; a deterministic session's calls replay with their recorded clocks, random numbers, environment and network replies.",
        query: &[],
        request: Body::Json(s::<t::Replay>),
        status: 200,
        response: Body::Json(s::<burrow_host::session::ReplayReport>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/checkout",
        operation_id: "checkoutVersion",
        summary: "Move the session to a version (a new version; nothing is lost): {version}.",
        query: &[],
        request: Body::Json(s::<t::Checkout>),
        status: 200,
        response: Body::Json(s::<t::VersionRef>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/undo",
        operation_id: "undoCall",
        summary: "Undo the last change.",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::VersionRef>),
    },
    Route {
        method: "post",
        path: "/sessions/{id}/label",
        operation_id: "labelVersion",
        summary: "Label the current version: {label}.",
        query: &[],
        request: Body::Json(s::<t::LabelVersion>),
        status: 200,
        response: Body::Json(s::<t::Labelled>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/net",
        operation_id: "getNetPolicy",
        summary: "The session's network policy: {allow: [PATTERN], secrets: [{name, hosts, placeholder}]} (never secret values).",
        query: &[],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::NetPolicy>),
    },
    Route {
        method: "put",
        path: "/sessions/{id}/net",
        operation_id: "setNetPolicy",
        summary: "Replace the session's network policy: {allow?: [PATTERN], secrets?: [{name, hosts}]}; presets expand; 400 on a bad rule. Recorded as a net_policy event.",
        query: &[],
        request: Body::Json(s::<t::NetPolicy>),
        status: 200,
        response: Body::Json(s::<t::NetPolicy>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/files/{path}",
        operation_id: "downloadFile",
        summary: "Download a file (at ?version=, default the head).",
        query: &[VERSION_Q],
        request: Body::None,
        status: 200,
        response: Body::Bytes("application/octet-stream"),
    },
    Route {
        method: "put",
        path: "/sessions/{id}/files/{path}",
        operation_id: "uploadFile",
        summary: "Upload a file (the body), as one version.",
        query: &[],
        request: Body::Bytes("application/octet-stream"),
        status: 201,
        response: Body::Json(s::<t::VersionRef>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/tree",
        operation_id: "listWorkspace",
        summary: "The entries of /workspace at ?version= (default the head).",
        query: &[VERSION_Q],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Tree>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/tree/{path}",
        operation_id: "listDirectory",
        summary: "The entries of a directory of /workspace at ?version= (default the head); 400 if it is not a directory.",
        query: &[VERSION_Q],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Tree>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/export",
        operation_id: "exportTar",
        summary: "The session's tree (at ?version=, default the head) as a tar stream.",
        query: &[VERSION_Q],
        request: Body::None,
        status: 200,
        response: Body::Bytes("application/x-tar"),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/events",
        operation_id: "listEvents",
        summary: "Event log, oldest first, a page at a time.",
        query: &[
            (
                "after",
                "integer",
                "Only events after this seq (the last page's next_after).",
            ),
            ("limit", "integer", "Page size, 1 to 1000 (default 100)."),
        ],
        request: Body::None,
        status: 200,
        response: Body::Json(s::<t::Events>),
    },
    Route {
        method: "get",
        path: "/sessions/{id}/events/stream",
        operation_id: "streamEvents",
        summary: "Server-Sent Events of the log (each data line an Event); resume with Last-Event-ID or ?after=.",
        query: &[("after", "integer", "Start after this seq.")],
        request: Body::None,
        status: 200,
        response: Body::Sse,
    },
    Route {
        method: "post",
        path: "/mcp",
        operation_id: "mcp",
        summary: "MCP Streamable HTTP endpoint (?session= picks the session).",
        query: &[(
            "session",
            "string",
            "The session (created if the name is new).",
        )],
        request: Body::Bytes("application/json"),
        status: 200,
        response: Body::Bytes("application/json"),
    },
];

fn content(body: Body, g: &mut SchemaGenerator) -> Option<Value> {
    match body {
        Body::None => None,
        Body::Json(f) => Some(json!({ "application/json": { "schema": f(g) } })),
        Body::Bytes(media) if media == "application/json" => {
            Some(json!({ media: { "schema": { "type": "object" } } }))
        }
        Body::Bytes(media) if media.starts_with("text/") => {
            Some(json!({ media: { "schema": { "type": "string" } } }))
        }
        Body::Bytes(media) => {
            Some(json!({ media: { "schema": { "type": "string", "format": "binary" } } }))
        }
        Body::Sse => Some(json!({ "text/event-stream": { "schema": { "type": "string" } } })),
    }
}

/// The group a route belongs to (generated clients make one module of each).
fn tag(path: &str) -> &'static str {
    let rest = path.strip_prefix("/sessions/{id}/").unwrap_or("");
    match rest.split('/').next().unwrap_or("") {
        _ if path == "/labels" => "versions",
        "history" | "diff" | "merge" | "replay" | "checkout" | "undo" | "label" => "versions",
        "files" | "tree" | "export" => "files",
        "events" => "events",
        "call" | "net" => "calls",
        _ if path.starts_with("/sessions") => "sessions",
        _ => "server",
    }
}

/// The document.
pub fn document() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let error = json!({ "application/json": { "schema": s::<t::Error>(&mut g) } });
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        let mut params = Vec::new();
        for name in ["id", "path"] {
            if route.path.contains(&format!("{{{name}}}")) {
                params.push(json!({
                    "name": name, "in": "path", "required": true, "schema": {"type": "string"},
                    "description": if name == "id" { "Session id, unique id prefix or name." } else { "A path under /workspace." },
                }));
            }
        }
        for (name, kind, description) in route.query {
            params.push(json!({
                "name": name, "in": "query", "required": false,
                "schema": {"type": kind}, "description": description,
            }));
        }
        let mut ok = json!({ "description": "Success" });
        if let Some(c) = content(route.response, &mut g) {
            ok["content"] = c;
        }
        let err = |d: &str| json!({ "description": d, "content": error.clone() });
        let mut op = json!({
            "operationId": route.operation_id,
            "tags": [tag(route.path)],
            "summary": route.summary,
            "parameters": params,
            "responses": {
                route.status.to_string(): ok,
                "400": err("Bad input"),
                "401": err("Missing or wrong bearer token"),
                "404": err("No such session, version or file"),
                "409": err("Conflict (name taken, concurrent commit)"),
                "413": err("Request body too large"),
                "500": err("Internal error"),
            },
        });
        if route.path == "/health" {
            op["security"] = json!([]);
        }
        if let Some(mut c) = content(route.request, &mut g) {
            if route.operation_id == "createSession" {
                c["application/x-tar"] =
                    json!({ "schema": { "type": "string", "format": "binary" } });
            }
            op["requestBody"] = json!({ "required": true, "content": c });
        }
        entry[route.method] = op;
    }
    let schemas: Map<String, Value> = g.take_definitions(true).into_iter().collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "burrow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of persistent, forkable agent workspaces; tool calls run as WASI components. Errors answer {\"error\": \"...\"} with the status the failure calls for.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas,
        },
        "security": [{"bearer": []}],
        "paths": paths,
    })
}
