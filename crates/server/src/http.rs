//! The HTTP front: hyper on tokio, HTTP/1.1 keep-alive, `/api/json`, `/api/xml` and
//! `/api_command` for GET and POST, a bounded body, and timeouts for slow clients.

use crate::commands::{execute, Command};
use crate::context::Context;
use crate::deadlines::{Deadlines, Handling};
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::metering::Caller;
use crate::params::Params;
use accounts::{Accounts, Credential, IpRange};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use indexes::IndexKind;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Server limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Time a connection has to send each request head, counted from its last progress
    /// (opened, a request handled, a byte of a reply written), and then the request's
    /// body.
    pub read_timeout: Duration,
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Time a client may read nothing of a reply before its connection is closed.
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 10,
            read_timeout: Duration::from_secs(10),
            max_connections: 4_096,
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// Shared state of every connection.
pub struct Service {
    pub ctx: Arc<Context>,
    /// The sandbox database served under `/sandbox/`: any valid credential, no charge.
    pub sandbox: Option<Arc<Context>>,
    pub accounts: Arc<Accounts>,
    pub limits: Limits,
    /// Proxies whose `X-Forwarded-For` header names the client (empty: none is believed).
    pub trusted_proxies: Vec<IpRange>,
    /// Lifetime of the access tokens users grant OpenApps on the grant page.
    pub token_ttl: Duration,
    /// The operator's token for `/admin/` requests (none: no admin endpoint).
    pub admin_token: Option<String>,
    pub metrics: crate::metrics::Metrics,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Xml,
}

/// Every response body: small ones in memory, download files streamed from disk.
pub(crate) type Body = BoxBody<Bytes, std::io::Error>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn render(reply: Reply, format: Format) -> Response<Body> {
    render_held(reply, format, None)
}

/// JSON replies of more cells than this are streamed: rendered in pieces of
/// [`STREAM_CHUNK_BYTES`] on a background thread while the connection writes the pieces
/// before (a 50,000-row reply is about 57 MB).
const STREAM_CELLS: usize = 20_000;
const STREAM_CHUNK_BYTES: usize = 256 * 1024;
/// Rendered pieces waiting for the connection, per streamed reply.
const STREAM_QUEUE: usize = 4;

/// Renders a reply whose bytes (about) count against `admission`'s reply budget until
/// the body is written or dropped, or, when streamed, until the last piece is rendered.
fn render_held(
    reply: Reply,
    format: Format,
    admission: Option<&crate::admission::Admission>,
) -> Response<Body> {
    let ct = match format {
        Format::Json => "application/json;charset=UTF-8",
        Format::Xml => "text/xml;charset=UTF-8",
    };
    let cells = reply.cells();
    let streamed = format == Format::Json && cells > STREAM_CELLS;
    let body = if streamed {
        // About what the rendering takes (the typed rows, then their JSON).
        let hold = admission.map(|a| a.hold_reply(cells * 24));
        let (tx, mut rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
        crate::priority::spawn_background(move || {
            let _counted_until_rendered = hold;
            reply.to_json_chunks(STREAM_CHUNK_BYTES, |piece| {
                // Fails when the connection is gone: the rest is not rendered.
                tx.blocking_send(Ok(hyper::body::Frame::data(Bytes::from(piece))))
                    .is_ok()
            });
        });
        BodyExt::boxed(StreamBody::new(futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx)
        })))
    } else {
        let text = match format {
            Format::Json => reply.to_json(),
            Format::Xml => reply.to_xml(),
        };
        match admission {
            Some(a) => {
                let hold = a.hold_reply(text.len());
                BodyExt::boxed(Held {
                    body: Full::new(Bytes::from(text)),
                    _counted_until_written: hold,
                })
            }
            None => full(text),
        }
    };
    Response::builder()
        .header("content-type", ct)
        .body(body)
        .expect("valid response")
}

/// A whole reply and its place in the reply budget, given back when the body is dropped
/// (written, or its connection gone). Its length is known, so it goes out with a
/// `content-length`, not chunked.
struct Held {
    body: Full<Bytes>,
    _counted_until_written: crate::admission::ReplyHold,
}

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        std::pin::Pin::new(&mut self.body)
            .poll_frame(cx)
            .map_err(|never| match never {})
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

fn error_reply(e: ApiError) -> Reply {
    Reply::error(e.code, e.message)
}

/// The client's address: the peer's, or, when the peer is a trusted proxy, the last
/// address in `X-Forwarded-For` that is not itself a trusted proxy. `None` when a
/// trusted proxy forwarded something that is not an address.
pub(crate) fn client_ip(
    peer: IpAddr,
    forwarded_for: Option<&str>,
    trusted: &[IpRange],
) -> Option<IpAddr> {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|r| r.contains(ip));
    let Some(chain) = forwarded_for.filter(|_| is_trusted(peer)) else {
        return Some(peer);
    };
    let mut client = peer;
    for hop in chain.rsplit(',') {
        client = hop.trim().parse().ok()?;
        if !is_trusted(client) {
            break;
        }
    }
    Some(client)
}

/// Reads a POST body within the size and time limits.
pub(crate) async fn read_body(svc: &Service, req: Request<Incoming>) -> Result<Vec<u8>, ApiError> {
    if req.method() != Method::POST {
        return Ok(Vec::new());
    }
    let limited = Limited::new(req.into_body(), svc.limits.max_body_bytes);
    match tokio::time::timeout(svc.limits.read_timeout, limited.collect()).await {
        Err(_) => Err(ApiError::new(
            "RequestTimeout",
            "the request body was not received in time",
        )),
        Ok(Err(_)) => Err(ApiError::new(
            "RequestTooLarge",
            format!("request body over {} bytes", svc.limits.max_body_bytes),
        )),
        Ok(Ok(b)) => Ok(b.to_bytes().to_vec()),
    }
}

/// The credential a request carries: an OpenApp's `privatekey` with a user's token in
/// `accesstoken` or `authentication_token`, or an API key in `authentication_token` or
/// `app_api_key` (a parameter, else the `app_api_key` cookie some clients set).
fn credential<'a>(p: &'a Params, cookie: Option<&'a str>) -> Result<Credential<'a>, ApiError> {
    if let Some(private_key) = p.get("privatekey") {
        let token = p
            .get("accesstoken")
            .or_else(|| p.get("authentication_token"))
            .ok_or_else(|| {
                ApiError::new(
                    "MissingParameter",
                    "an OpenApp request needs the user's token in 'accesstoken'",
                )
            })?;
        return Ok(Credential::OpenApp { private_key, token });
    }
    p.get("authentication_token")
        .or_else(|| p.get("app_api_key"))
        .or(cookie)
        .map(Credential::Key)
        .ok_or_else(|| {
            ApiError::new(
                "FailedRequestViaAPI",
                "API Key does not appear to be correct: no key given",
            )
        })
}

/// The `app_api_key` cookie's value, if the request sends one.
fn cookie_key(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("app_api_key")
                .then(|| value.trim().trim_matches('"').to_string())
        })
}

async fn handle(svc: Arc<Service>, req: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    // Every X-Forwarded-For line, joined; one that is not text (bytes over 0x7f) makes
    // the whole chain unreadable, so a trusted proxy's request then names no client
    // (skipping that line would leave the proxy's own address as the client).
    let forwarded: Option<String> = match req
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .map(|v| v.to_str())
        .collect::<Result<Vec<&str>, _>>()
    {
        Ok(lines) => (!lines.is_empty()).then(|| lines.join(",")),
        Err(_) => Some("unreadable".to_string()),
    };
    let client = client_ip(peer, forwarded.as_deref(), &svc.trusted_proxies);
    let path = req.uri().path().to_string();
    if let Some(name) = path.strip_prefix("/downloads/") {
        return download_file(&svc, name).await;
    }
    if let Some(page) = crate::explorer::asset(&path) {
        return page;
    }
    if req.method() == Method::POST {
        match path.as_str() {
            crate::admin::INGEST_PATH => return crate::admin::ingest(&svc, req, peer).await,
            crate::admin::FLOW_PATH => return crate::admin::flow(&svc, req, peer).await,
            _ => {}
        }
    }
    if path == "/metrics" {
        return metrics(&svc, &req, peer).await;
    }
    if path == crate::openapp::PATH {
        return crate::openapp::authorize(&svc, req, client).await;
    }
    let (sandbox, api_path) = match path.strip_prefix("/sandbox") {
        Some(rest) => (true, rest),
        None => (false, path.as_str()),
    };
    let format = match api_path {
        "/api/json" => Format::Json,
        "/api/xml" | "/api_command" => Format::Xml,
        _ => return not_found(),
    };
    let ctx = match (sandbox, &svc.sandbox) {
        (false, _) => svc.ctx.clone(),
        (true, Some(sandbox)) => sandbox.clone(),
        (true, None) => return not_found(),
    };
    let started = std::time::Instant::now();
    let query = req.uri().query().unwrap_or("").as_bytes().to_vec();
    let cookie = cookie_key(&req);
    let body = match read_body(&svc, req).await {
        Ok(body) => body,
        Err(e) => return render(error_reply(e), format),
    };
    let params = Params::parse(&query, &body);
    // Parsed once, before authentication, so metrics name the command either way.
    let command = params
        .as_ref()
        .ok()
        .and_then(|p| p.get("cmd"))
        .and_then(|c| c.parse::<Command>().ok());
    let api = ApiRequest {
        svc: svc.clone(),
        ctx: ctx.clone(),
        cookie,
        client,
        sandbox,
        command,
    };
    // Heavy commands run and render (up to 50,000 rows of JSON) on a blocking thread,
    // never on the connections' workers; quick ones and small bounded pages run here.
    let inline = match (&params, command) {
        (Err(_), _) => true,
        (Ok(p), Some(c)) => c.runs_inline(p),
        (Ok(_), None) => false,
    };
    if inline {
        return api.answer(params, format, started);
    }
    crate::priority::spawn_background(move || api.answer(params, format, started))
        .await
        .unwrap_or_else(|e| {
            render(
                error_reply(ApiError::new("InternalError", e.to_string())),
                format,
            )
        })
}

/// An API request between parsing and its reply: who asks, where, for what.
struct ApiRequest {
    svc: Arc<Service>,
    ctx: Arc<Context>,
    cookie: Option<String>,
    client: Option<IpAddr>,
    sandbox: bool,
    command: Option<Command>,
}

impl ApiRequest {
    /// Runs the request, counts it in the metrics and the log, and renders the reply.
    fn answer(
        &self,
        params: Result<Params, ApiError>,
        format: Format,
        started: std::time::Instant,
    ) -> Response<Body> {
        let reply = params
            .and_then(|p| self.run(&p))
            .unwrap_or_else(error_reply);
        let elapsed = started.elapsed();
        self.svc.metrics.request(self.command, &reply, elapsed);
        // One line per request at debug level: the command, never a credential or an item.
        tracing::debug!(
            command = self.command.map_or("", Command::name),
            code = %reply.code,
            micros = elapsed.as_micros() as u64,
            client = ?self.client,
            sandbox = self.sandbox,
            "request"
        );
        render_held(reply, format, Some(&self.ctx.admission))
    }

    /// Authenticates the caller and runs the command (charging it).
    fn run(&self, params: &Params) -> Result<Reply, ApiError> {
        let principal = self
            .svc
            .accounts
            .authenticate(credential(params, self.cookie.as_deref())?, self.client)
            .map_err(|e| ApiError::new(e.code(), e.to_string()))?;
        let caller = Caller {
            principal,
            accounts: &self.svc.accounts,
            sandbox: self.sandbox,
        };
        let cmd = params.required("cmd")?;
        execute(
            &self.ctx,
            &caller,
            self.command.map_or_else(|| Command::named(cmd), Ok)?,
            params,
        )
    }
}

/// `GET /metrics`: Prometheus' text format, from this machine or with the operator's
/// token (counts only: no item, key or account is named).
async fn metrics(svc: &Arc<Service>, req: &Request<Incoming>, peer: IpAddr) -> Response<Body> {
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let token_ok = bearer.is_some_and(|b| {
        svc.admin_token
            .as_deref()
            .is_some_and(|t| crate::admin::token_matches(t, b))
    });
    if !peer.to_canonical().is_loopback() && !token_ok {
        return Response::builder()
            .status(StatusCode::FORBIDDEN)
            .body(full(
                "metrics are served to this machine or with the operator's token\n",
            ))
            .expect("valid response");
    }
    let svc2 = svc.clone();
    let text = tokio::task::spawn_blocking(move || {
        let indexes: Vec<crate::metrics::IndexGauges> = IndexKind::ALL
            .into_iter()
            .map(|kind| {
                let store = svc2.ctx.store(kind);
                let memory = store.memory().unwrap_or_default();
                crate::metrics::IndexGauges {
                    index: kind.as_str(),
                    disk_bytes: store.disk_bytes().unwrap_or(0),
                    backlinks: store
                        .read()
                        .index_counters()
                        .map_or(0, |c| c.ext_backlinks.max(0) as u64),
                    memtable_bytes: memory.memtables,
                    block_cache_bytes: memory.block_cache,
                    table_readers_bytes: memory.table_readers,
                }
            })
            .collect();
        svc2.metrics.render(&indexes)
    })
    .await
    .unwrap_or_default();
    Response::builder()
        .header("content-type", "text/plain; version=0.0.4")
        .body(full(text))
        .expect("valid response")
}

/// Serves a finished export file. Its name holds the job's 128-bit random id, so the URL
/// itself is the capability, as with Majestic's public download locations.
async fn download_file(svc: &Service, name: &str) -> Response<Body> {
    let sandbox = svc.sandbox.as_ref().and_then(|s| s.downloads.file(name));
    let Some(path) = svc.ctx.downloads.file(name).or(sandbox) else {
        return not_found();
    };
    let Ok(file) = tokio::fs::File::open(&path).await else {
        return not_found();
    };
    let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    // Streamed in chunks: memory does not grow with the file.
    let frames = futures_util::StreamExt::map(tokio_util::io::ReaderStream::new(file), |chunk| {
        chunk.map(hyper::body::Frame::data)
    });
    Response::builder()
        .header("content-type", "application/gzip")
        .header("content-length", len)
        .header(
            "content-disposition",
            format!("attachment; filename=\"{name}\""),
        )
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .expect("valid response")
}

pub(crate) fn not_found() -> Response<Body> {
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .body(full(Bytes::from_static(
            b"not found: use /api/json, /api/xml or /api_command\n",
        )))
        .expect("valid response")
}

/// Loads a TLS configuration from PEM files: a certificate chain and a private key.
pub fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> crate::Result<Arc<rustls::ServerConfig>> {
    let tls_err = |path: &std::path::Path, message: String| crate::Error::Tls {
        path: path.display().to_string(),
        message,
    };
    let read =
        |path: &std::path::Path| std::fs::read(path).map_err(|e| tls_err(path, e.to_string()));
    let certs: Vec<_> = rustls_pemfile::certs(&mut &read(cert)?[..])
        .collect::<Result<_, _>>()
        .map_err(|e| tls_err(cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(tls_err(cert, "no certificate in file".into()));
    }
    let key_der = rustls_pemfile::private_key(&mut &read(key)?[..])
        .map_err(|e| tls_err(key, e.to_string()))?
        .ok_or_else(|| tls_err(key, "no private key in file".into()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| tls_err(cert, e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(certs, key_der)
    .map_err(|e| tls_err(key, e.to_string()))?;
    Ok(Arc::new(config))
}

async fn serve_connection<IO>(svc: Arc<Service>, io: IO, peer: IpAddr)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limits = svc.limits.clone();
    svc.metrics.connection_opened();
    let counted = svc.clone();
    let handling = Handling::default();
    let io = Deadlines::new(
        io,
        limits.read_timeout,
        limits.write_timeout,
        handling.clone(),
    );
    let service = service_fn(move |req| {
        let svc = svc.clone();
        let handled = handling.start();
        async move {
            let reply = handle(svc, req, peer).await;
            drop(handled);
            Ok::<_, std::convert::Infallible>(reply)
        }
    });
    // The request-head deadline of `Deadlines` bounds the time to send a head, without
    // hyper's timer per request.
    let _ = http1::Builder::new()
        .header_read_timeout(None)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service)
        .await;
    counted.metrics.connection_closed();
}

/// Accepts connections until the listener fails; with `tls`, every connection is HTTPS.
pub async fn serve(
    svc: Arc<Service>,
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<()> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let base = format!("{scheme}://{}", listener.local_addr()?);
    for ctx in std::iter::once(&svc.ctx).chain(&svc.sandbox) {
        *ctx.downloads
            .public_base
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = base.clone();
    }
    // A historic build switches `DATA/historic.current`; follow it.
    let watcher = svc.clone();
    tokio::spawn(async move {
        // A broken pointer is reported once, not every half second.
        let mut last_error = String::new();
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let svc = watcher.clone();
            let switched = tokio::task::spawn_blocking(move || {
                let indexes = &svc.ctx.indexes;
                indexes
                    .reload_historic()
                    .map(|done| done.then(|| indexes.data_dir().historic_name()))
            })
            .await;
            match switched {
                Ok(Ok(Some(name))) => tracing::info!(snapshot = %name, "serving historic snapshot"),
                Ok(Err(e)) if e.to_string() != last_error => {
                    last_error = e.to_string();
                    tracing::warn!(error = %last_error, "historic snapshot not switched");
                }
                _ => {}
            }
        }
    });
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut last_accept_error: Option<std::time::Instant> = None;
    let mut last_full: Option<std::time::Instant> = None;
    let places = Arc::new(tokio::sync::Semaphore::new(svc.limits.max_connections));
    let threads = crate::connection_threads::ConnectionThreads::start()?;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(connection) => connection,
            Err(e) => {
                // Out of descriptors or memory, or a connection reset before it was
                // accepted: pause and go on, reporting at most every 10 s, instead of
                // letting one failed accept end the server.
                if last_accept_error.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(error = %e, "accepting a connection failed (retrying)");
                    last_accept_error = Some(std::time::Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Past the cap a connection is closed at once: descriptors stay for the ones held.
        let Ok(place) = places.clone().try_acquire_owned() else {
            if last_full.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                tracing::warn!(
                    max = svc.limits.max_connections,
                    "connection limit reached: closing new connections"
                );
                last_full = Some(std::time::Instant::now());
            }
            drop(stream);
            continue;
        };
        let peer = peer.ip();
        let _ = stream.set_nodelay(true);
        let svc = svc.clone();
        let acceptor = acceptor.clone();
        // Moved to the thread that serves it: registered again with that thread's runtime.
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "handing a connection to its thread failed");
                continue;
            }
        };
        threads.serve(async move {
            let _place = place;
            let stream = match tokio::net::TcpStream::from_std(stream) {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "registering a connection failed");
                    return;
                }
            };
            match acceptor {
                None => serve_connection(svc, stream, peer).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(svc.limits.read_timeout, acceptor.accept(stream))
                            .await;
                    if let Ok(Ok(tls_stream)) = handshake {
                        serve_connection(svc, tls_stream, peer).await;
                    }
                }
            }
        });
    }
}
