//! The OpenAPI 3.1 document served at `/openapi.json`, built from [`ROUTES`], the same table
//! the tests walk to check that every route is documented and answers.

use serde_json::{Map, Value, json};

/// One route of the HTTP API: method, path (OpenAPI template syntax), summary, and whether
/// it takes a JSON body.
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub json_body: bool,
}

const fn r(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    json_body: bool,
) -> Route {
    Route {
        method,
        path,
        summary,
        json_body,
    }
}

pub const ROUTES: &[Route] = &[
    r(
        "get",
        "/health",
        "Liveness: {\"status\":\"ok\"} (no token needed).",
        false,
    ),
    r(
        "get",
        "/metrics",
        "Prometheus metrics: calls, errors, latency, sessions, store bytes.",
        false,
    ),
    r("get", "/openapi.json", "This document.", false),
    r("get", "/sessions", "List sessions.", false),
    r(
        "post",
        "/sessions",
        "Create a session: JSON {name?, settings?} (settings.net is its network policy; default: the server's --allow-net/--secret), or an application/x-tar body (query ?name=) to start from a tree.",
        true,
    ),
    r(
        "get",
        "/sessions/{id}",
        "Get a session (id, unique id prefix or name).",
        false,
    ),
    r("delete", "/sessions/{id}", "Delete a session.", false),
    r(
        "post",
        "/sessions/{id}/call",
        "Run a tool call: {tool, input, family?} -> {content, is_error}.",
        true,
    ),
    r(
        "post",
        "/sessions/{id}/fork",
        "Fork the session n times in O(1): {n?} -> {ids}.",
        true,
    ),
    r(
        "get",
        "/sessions/{id}/history",
        "Versions, newest first (?limit=).",
        false,
    ),
    r(
        "get",
        "/sessions/{id}/diff",
        "Paths changed against another session or version (?against=).",
        false,
    ),
    r(
        "post",
        "/sessions/{id}/checkout",
        "Move the session to a version: {version}.",
        true,
    ),
    r(
        "post",
        "/sessions/{id}/undo",
        "Undo the last change.",
        false,
    ),
    r(
        "post",
        "/sessions/{id}/label",
        "Label the current version: {label}.",
        true,
    ),
    r(
        "get",
        "/sessions/{id}/net",
        "The session's network policy: {allow: [PATTERN], secrets: [{name, hosts, placeholder}]} (never secret values).",
        false,
    ),
    r(
        "put",
        "/sessions/{id}/net",
        "Replace the session's network policy: {allow?: [PATTERN], secrets?: [{name, hosts}]}; presets expand; 400 on a bad rule. Recorded as a net_policy event.",
        true,
    ),
    r(
        "get",
        "/sessions/{id}/files/{path}",
        "Download a file.",
        false,
    ),
    r(
        "put",
        "/sessions/{id}/files/{path}",
        "Upload a file (the body), as one version.",
        false,
    ),
    r(
        "get",
        "/sessions/{id}/export",
        "The session's tree as a tar stream.",
        false,
    ),
    r(
        "get",
        "/sessions/{id}/events",
        "Event log, oldest first (?after=SEQ&limit=N).",
        false,
    ),
    r(
        "get",
        "/sessions/{id}/events/stream",
        "Server-Sent Events of the log; resume with Last-Event-ID.",
        false,
    ),
    r(
        "post",
        "/mcp",
        "MCP Streamable HTTP endpoint (?session= picks the session).",
        true,
    ),
];

/// The document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        let mut params = Vec::new();
        for name in ["id", "path"] {
            if route.path.contains(&format!("{{{name}}}")) {
                params.push(json!({
                    "name": name, "in": "path", "required": true, "schema": {"type": "string"}
                }));
            }
        }
        let mut op = json!({
            "summary": route.summary,
            "operationId": format!("{}{}", route.method, route.path.replace(['/', '{', '}', '.'], "_")),
            "parameters": params,
            "responses": {
                "200": {"description": "Success"},
                "400": {"description": "Bad input", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                "401": {"description": "Missing or wrong bearer token"},
                "404": {"description": "No such session or file"},
                "409": {"description": "Conflict (name taken, concurrent commit)"},
                "413": {"description": "Request body too large"},
            },
        });
        if route.json_body {
            op["requestBody"] = json!({
                "content": {"application/json": {"schema": {"type": "object"}}}
            });
        }
        entry[route.method] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "burrow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of persistent, forkable agent workspaces; tool calls run as WASI components.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    })
}
