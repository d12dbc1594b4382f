//! The Site Explorer web tool: three static files compiled into the binary. The page
//! talks only to the public API (`/api/json`, or the sandbox's) with the user's own key.

use crate::http::{full, Body};
use hyper::{Response, StatusCode};

const INDEX_HTML: &str = include_str!("explorer/index.html");
const SCRIPT: &str = include_str!("explorer/explorer.js");
const STYLE: &str = include_str!("explorer/explorer.css");

/// Where the tool lives.
pub(crate) const PREFIX: &str = "/explorer/";

/// The response for a path of the tool, if `path` is one (`/` leads to the tool).
pub(crate) fn asset(path: &str) -> Option<Response<Body>> {
    if path == "/" || path == "/explorer" {
        return Some(
            Response::builder()
                .status(StatusCode::SEE_OTHER)
                .header("location", PREFIX)
                .body(full(""))
                .expect("valid response"),
        );
    }
    let (body, content_type) = match path.strip_prefix(PREFIX)? {
        "" | "index.html" => (INDEX_HTML, "text/html;charset=utf-8"),
        "explorer.js" => (SCRIPT, "text/javascript;charset=utf-8"),
        "explorer.css" => (STYLE, "text/css;charset=utf-8"),
        _ => return None,
    };
    Some(
        Response::builder()
            .header("content-type", content_type)
            // Scripts and styles only from this server; data only from its API.
            .header(
                "content-security-policy",
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
            )
            .header("x-content-type-options", "nosniff")
            .header("referrer-policy", "no-referrer")
            .header("cache-control", "no-cache")
            .body(full(body))
            .expect("valid response"),
    )
}
