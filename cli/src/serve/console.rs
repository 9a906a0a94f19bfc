//! The web console `burrow serve` answers at `/`: plain HTML, CSS and a JavaScript module,
//! embedded in the binary (no build step), that draw the fork tree, each session's timeline,
//! its files at any version and diffs, all through the public HTTP API. The pages hold no
//! data, so they are served without the bearer token; the console asks for the token and
//! sends it with every API request.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

const INDEX: &str = include_str!("console/index.html");
const APP: &str = include_str!("console/app.js");
const STYLE: &str = include_str!("console/style.css");

/// The console's routes: `/` and its assets under `/console/`.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let page = |kind: &'static str, body: &'static str| {
        get(move || async move {
            (
                [
                    (header::CONTENT_TYPE, kind),
                    // Served from the binary: a new burrow brings new assets, so revalidate.
                    (header::CACHE_CONTROL, "no-cache"),
                    (
                        header::CONTENT_SECURITY_POLICY,
                        "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; \
                         script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
                    ),
                ],
                body,
            )
                .into_response()
        })
    };
    Router::new()
        .route("/", page("text/html; charset=utf-8", INDEX))
        .route(
            "/console/app.js",
            page("text/javascript; charset=utf-8", APP),
        )
        .route("/console/style.css", page("text/css; charset=utf-8", STYLE))
}

/// Whether a request path is one of the console's token-free pages.
pub fn is_public(path: &str) -> bool {
    path == "/" || path.starts_with("/console/")
}

/// The media type a workspace file is downloaded with: images by extension (so the console
/// can show them), everything else as bytes.
pub fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        // SVG can carry script: served as bytes, the console shows it through an <img>.
        _ => "application/octet-stream",
    }
}
