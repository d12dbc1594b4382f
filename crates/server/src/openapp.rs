//! The OpenApp grant page: a user signs in with their API key and approves (or denies)
//! an application's request for access; the application receives an access token,
//! bound to the user's account and allowance, by redirect to its registered address.
//!
//! `GET /openapp/authorize?app=ID&state=S` shows the page; the form posts back to the
//! same path. The redirect carries `access_token`, `token_type`, `expires_in` and the
//! app's `state`, or `error=access_denied`.

use crate::envelope::xml_escape as html;
use crate::http::{full, not_found, read_body, Body, Service};
use crate::params::Params;
use accounts::{App, Credential};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use std::fmt::Write;
use std::net::IpAddr;
use std::sync::Arc;

pub(crate) const PATH: &str = "/openapp/authorize";

/// Percent-encodes a query component (RFC 3986 unreserved characters kept).
fn query_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn page(status: StatusCode, title: &str, body: &str) -> Response<Body> {
    let doc = format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>{t}</title>\
         <meta name=viewport content=\"width=device-width\">\
         <style>body{{font:16px system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em}}\
         .err{{color:#a00}}button{{font-size:1em;margin-right:.5em}}</style></head>\
         <body><h1>{t}</h1>{body}</body></html>",
        t = html(title)
    );
    Response::builder()
        .status(status)
        .header("content-type", "text/html;charset=utf-8")
        // The page takes a key: no framing (clickjacking), no caching, no referrer.
        .header("x-frame-options", "DENY")
        .header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        )
        .header("cache-control", "no-store")
        .header("referrer-policy", "no-referrer")
        .body(full(doc))
        .expect("valid response")
}

fn form(app: &App, state: &str, error: Option<&str>) -> String {
    let publisher = if app.publisher.is_empty() {
        String::new()
    } else {
        format!(" by <b>{}</b>", html(&app.publisher))
    };
    let error = error.map_or_else(String::new, |e| {
        format!("<p class=err role=alert>{}</p>", html(e))
    });
    format!(
        "<p>The application <b>{name}</b>{publisher} asks to use the Linkbase API on your behalf. \
         Its requests will be charged to your account's allowance until you revoke its access.</p>\
         {error}<form method=post action=\"{PATH}\">\
         <input type=hidden name=app value=\"{id}\"><input type=hidden name=state value=\"{state}\">\
         <p><label>Your API key <input name=key type=password autocomplete=off required></label></p>\
         <p><button name=decision value=approve>Approve</button>\
         <button name=decision value=deny formnovalidate>Deny</button></p></form>\
         <p><small>You will be sent back to {redirect}</small></p>",
        name = html(&app.name),
        id = app.id,
        state = html(state),
        redirect = html(&app.redirect_uri),
    )
}

fn redirect(app: &App, query: &str) -> Response<Body> {
    let sep = if app.redirect_uri.contains('?') {
        '&'
    } else {
        '?'
    };
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header("location", format!("{}{sep}{query}", app.redirect_uri))
        .header("cache-control", "no-store")
        .header("referrer-policy", "no-referrer")
        .body(full(""))
        .expect("valid response")
}

pub(crate) async fn authorize(
    svc: &Arc<Service>,
    req: Request<Incoming>,
    client: Option<IpAddr>,
) -> Response<Body> {
    let method = req.method().clone();
    if method != Method::GET && method != Method::POST {
        return not_found();
    }
    let query = req.uri().query().unwrap_or("").as_bytes().to_vec();
    let body = match read_body(svc, req).await {
        Ok(b) => b,
        Err(e) => {
            return page(
                StatusCode::BAD_REQUEST,
                "Request refused",
                &html(&e.message),
            )
        }
    };
    let svc = svc.clone();
    tokio::task::spawn_blocking(move || decide(&svc, method, &query, &body, client))
        .await
        .unwrap_or_else(|e| {
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                &html(&e.to_string()),
            )
        })
}

fn decide(
    svc: &Service,
    method: Method,
    query: &[u8],
    body: &[u8],
    client: Option<IpAddr>,
) -> Response<Body> {
    let params = match Params::parse(query, body) {
        Ok(p) => p,
        Err(e) => {
            return page(
                StatusCode::BAD_REQUEST,
                "Request refused",
                &html(&e.message),
            )
        }
    };
    let app = params
        .int("app", 0)
        .ok()
        .and_then(|id| svc.accounts.app(id).ok())
        .filter(|a| a.revoked.is_none());
    let Some(app) = app else {
        return page(
            StatusCode::NOT_FOUND,
            "Unknown application",
            "<p>No such OpenApp, or it was withdrawn.</p>",
        );
    };
    let state = params.get("state").unwrap_or("");
    let title = format!("Grant {} access?", app.name);
    if method == Method::GET {
        return page(StatusCode::OK, &title, &form(&app, state, None));
    }
    if params.get("decision") != Some("approve") {
        return redirect(
            &app,
            &format!("error=access_denied&state={}", query_component(state)),
        );
    }
    let key = params.get("key").unwrap_or("");
    let principal = match svc.accounts.authenticate(Credential::Key(key), client) {
        Ok(p) => p,
        Err(e) => {
            return page(
                StatusCode::FORBIDDEN,
                &title,
                &form(&app, state, Some(&format!("{}: {e}", e.code()))),
            )
        }
    };
    let ttl = svc.token_ttl.as_secs() as i64;
    match svc.accounts.grant(app.id, principal.account, ttl) {
        Ok((_, token)) => redirect(
            &app,
            &format!(
                "access_token={}&token_type=accesstoken&expires_in={ttl}&state={}",
                query_component(&token),
                query_component(state)
            ),
        ),
        Err(e) => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            &title,
            &html(&e.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html_and_urls() {
        assert_eq!(
            html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;"
        );
        assert_eq!(query_component("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
