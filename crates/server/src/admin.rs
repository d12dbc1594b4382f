//! The operator's endpoints on a running server, for work that must happen in the process
//! holding the fresh index: `POST /admin/ingest` (`file=PATH`) ingests a crawl file into
//! it, `POST /admin/flow` (`seeds=PATH`) computes its flow metrics, both while serving.
//! Only from loopback, only with the token the server wrote to `DATA/admin.token`
//! (readable by its owner). Answers stream one line per progress step and end with
//! `done ...` or `error ...`.

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
pub(crate) const FLOW_PATH: &str = "/admin/flow";

fn plain(status: StatusCode, text: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain;charset=utf-8")
        .body(full(text))
        .expect("valid response")
}

pub(crate) fn token_matches(expected: &str, given: &str) -> bool {
    expected.len() == given.len()
        && expected
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Checks the operator's token and source; reads the form body.
async fn admit(
    svc: &Arc<Service>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Result<Params, Response<Body>> {
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
        return Err(plain(
            StatusCode::FORBIDDEN,
            "admin requests need the token of DATA/admin.token, from this machine\n".into(),
        ));
    }
    let body = read_body(svc, req)
        .await
        .map_err(|e| plain(StatusCode::BAD_REQUEST, format!("error {}\n", e.message)))?;
    Params::parse(b"", &body)
        .map_err(|e| plain(StatusCode::BAD_REQUEST, format!("error {}\n", e.message)))
}

/// Runs `job` on the blocking pool and streams the lines it reports, then its last line.
fn stream(job: impl FnOnce(&mut dyn FnMut(String)) -> String + Send + 'static) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(64);
    tokio::task::spawn_blocking(move || {
        let mut report = |line: String| {
            let _ = tx.blocking_send(line);
        };
        let last = job(&mut report);
        report(last);
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

/// `POST /admin/ingest` with `file=PATH`: one crawl file into the fresh index.
pub(crate) async fn ingest(
    svc: &Arc<Service>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let params = match admit(svc, req, peer).await {
        Ok(p) => p,
        Err(refused) => return refused,
    };
    let path = match params.required("file") {
        Ok(p) => std::path::PathBuf::from(p),
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("error {}\n", e.message)),
    };
    let svc = svc.clone();
    stream(move |report| {
        let mut last = Instant::now();
        let result = svc.ctx.indexes.ingest_fresh(&path, &mut |p| {
            if last.elapsed() >= Duration::from_millis(500) {
                last = Instant::now();
                report(format!(
                    "progress bytes={}/{} records={} links={}\n",
                    p.bytes_read, p.bytes_total, p.records, p.links
                ));
            }
        });
        match result {
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
        }
    })
}

/// `POST /admin/flow` with `seeds=PATH` (optional): flow metrics of the fresh index.
pub(crate) async fn flow(
    svc: &Arc<Service>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let params = match admit(svc, req, peer).await {
        Ok(p) => p,
        Err(refused) => return refused,
    };
    let seeds_path = params.get("seeds").map(std::path::PathBuf::from);
    let svc = svc.clone();
    stream(move |report| {
        let seeds = match seeds_path.as_deref().map(flow::read_seeds).transpose() {
            Ok(seeds) => seeds.unwrap_or_default(),
            Err(e) => return format!("error {e}\n"),
        };
        let result =
            svc.ctx
                .indexes
                .flow_fresh(&seeds, &flow::RankParams::default(), &mut |step| {
                    report(format!("progress {step}\n"))
                });
        match result {
            Ok(r) => format!(
                "done urls={} links={} seed_urls={} topics={} metrics_rows={} backlink_rows={}\n",
                r.nodes, r.edges, r.seed_nodes, r.topics, r.metrics_rows, r.backlink_rows
            ),
            Err(e) => format!("error {e}\n"),
        }
    })
}
