//! The HTTP front: hyper on tokio, HTTP/1.1 keep-alive, `/api/json`, `/api/xml` and
//! `/api_command` for GET and POST, a bounded body, and timeouts for slow clients.

use crate::commands::{execute, Context};
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Server limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Time a client has to send its request headers, and then its body.
    pub read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 10,
            read_timeout: Duration::from_secs(10),
        }
    }
}

/// Shared state of every connection.
pub struct Service {
    pub ctx: Arc<Context>,
    /// Accepted API keys (until the account store replaces them).
    pub keys: HashSet<String>,
    pub limits: Limits,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Xml,
}

/// Every response body: small ones in memory, download files streamed from disk.
type Body = BoxBody<Bytes, std::io::Error>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn render(reply: &Reply, format: Format) -> Response<Body> {
    let (body, ct) = match format {
        Format::Json => (reply.to_json(), "application/json;charset=UTF-8"),
        Format::Xml => (reply.to_xml(), "text/xml;charset=UTF-8"),
    };
    Response::builder()
        .header("content-type", ct)
        .body(full(body))
        .expect("valid response")
}

fn error_reply(e: ApiError) -> Reply {
    Reply::error(e.code, e.message)
}

async fn handle(svc: Arc<Service>, req: Request<Incoming>) -> Response<Body> {
    if let Some(name) = req.uri().path().strip_prefix("/downloads/") {
        return download_file(&svc, name).await;
    }
    let format = match req.uri().path() {
        "/api/json" => Format::Json,
        "/api/xml" | "/api_command" => Format::Xml,
        _ => return not_found(),
    };
    let query = req.uri().query().unwrap_or("").as_bytes().to_vec();
    let body = if req.method() == Method::POST {
        let limited = Limited::new(req.into_body(), svc.limits.max_body_bytes);
        match tokio::time::timeout(svc.limits.read_timeout, limited.collect()).await {
            Err(_) => {
                return render(
                    &error_reply(ApiError::new(
                        "RequestTimeout",
                        "the request body was not received in time",
                    )),
                    format,
                )
            }
            Ok(Err(_)) => {
                return render(
                    &error_reply(ApiError::new(
                        "RequestTooLarge",
                        format!("request body over {} bytes", svc.limits.max_body_bytes),
                    )),
                    format,
                )
            }
            Ok(Ok(b)) => b.to_bytes().to_vec(),
        }
    } else {
        Vec::new()
    };
    let svc2 = svc.clone();
    let reply = tokio::task::spawn_blocking(move || {
        let params = Params::parse(&query, &body)?;
        let key = params
            .get("authentication_token")
            .or_else(|| params.get("app_api_key"))
            .unwrap_or("");
        if !svc2.keys.contains(key) {
            return Err(ApiError::new(
                "FailedRequestViaAPI",
                "API Key does not appear to be correct",
            ));
        }
        let cmd = params.required("cmd")?;
        execute(&svc2.ctx, cmd, &params)
    })
    .await
    .unwrap_or_else(|e| Err(ApiError::new("InternalError", e.to_string())))
    .unwrap_or_else(error_reply);
    render(&reply, format)
}

/// Serves a finished export file. Its name holds the job's 128-bit random id, so the URL
/// itself is the capability, as with Majestic's public download locations.
async fn download_file(svc: &Service, name: &str) -> Response<Body> {
    let Some(path) = svc.ctx.downloads.file(name) else {
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

fn not_found() -> Response<Body> {
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

async fn serve_connection<IO>(svc: Arc<Service>, io: IO)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let timeout = svc.limits.read_timeout;
    let service = service_fn(move |req| {
        let svc = svc.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(svc, req).await) }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// Accepts connections until the listener fails; with `tls`, every connection is HTTPS.
pub async fn serve(
    svc: Arc<Service>,
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<()> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    *svc.ctx
        .downloads
        .public_base
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = format!("{scheme}://{}", listener.local_addr()?);
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (stream, _peer) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let svc = svc.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => serve_connection(svc, stream).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(svc.limits.read_timeout, acceptor.accept(stream))
                            .await;
                    if let Ok(Ok(tls_stream)) = handshake {
                        serve_connection(svc, tls_stream).await;
                    }
                }
            }
        });
    }
}
