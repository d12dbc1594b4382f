//! The operator's endpoint on a running server: `POST /admin/ingest` with `file=PATH`
//! ingests a crawl file into the fresh index while the server serves. Only from loopback,
//! only with the token the server wrote to `DATA/admin.token` (readable by its owner).
//! The answer streams one line per progress step and ends with `done ...` or `error ...`.

use crate::http::{full, read_body, Body, Service};
use crate::params::Params;
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const INGEST_PATH: &str = "/admin/ingest";

fn plain(status: StatusCode, text: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain;charset=utf-8")
        .body(full(text))
        .expect("valid response")
}

fn token_matches(expected: &str, given: &str) -> bool {
    expected.len() == given.len()
        && expected
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

pub(crate) async fn ingest(
    svc: &Arc<Service>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let given = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    let allowed = peer.to_canonical().is_loopback()
        && svc
            .admin_token
            .as_deref()
            .is_some_and(|t| token_matches(t, &given));
    if !allowed {
        return plain(
            StatusCode::FORBIDDEN,
            "admin requests need the token of DATA/admin.token, from this machine\n".into(),
        );
    }
    let body = match read_body(svc, req).await {
        Ok(b) => b,
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("error {}\n", e.message)),
    };
    let path = match Params::parse(b"", &body).and_then(|p| Ok(p.required("file")?.to_string())) {
        Ok(p) => std::path::PathBuf::from(p),
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("error {}\n", e.message)),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(64);
    let svc2 = svc.clone();
    tokio::task::spawn_blocking(move || {
        let mut last = Instant::now();
        let result = svc2.ctx.indexes.ingest_fresh(&path, &mut |p| {
            if last.elapsed() >= Duration::from_millis(500) {
                last = Instant::now();
                let _ = tx.blocking_send(format!(
                    "progress bytes={}/{} records={} links={}\n",
                    p.bytes_read, p.bytes_total, p.records, p.links
                ));
            }
        });
        let line = match result {
            Ok(r) => format!(
                "done pages={} unchanged={} links_found={} links_new={} links_deleted={} bad_records={} truncated={} expired_links={} expired_pages={} window_from={}\n",
                r.file.pages,
                r.file.pages_unchanged,
                r.file.links_found,
                r.file.links_new,
                r.file.links_deleted,
                r.file.bad_records,
                r.file.truncated.is_some(),
                r.expired.links,
                r.expired.pages,
                linkstore::format_day(r.window_from),
            ),
            Err(e) => format!("error {e}\n"),
        };
        let _ = tx.blocking_send(line);
    });
    let lines = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|line| (Ok::<_, std::io::Error>(Frame::data(Bytes::from(line))), rx))
    });
    Response::builder()
        .header("content-type", "text/plain;charset=utf-8")
        .body(BodyExt::boxed(StreamBody::new(lines)))
        .expect("valid response")
}
