//! Download callbacks (`NotifyURL`): one GET to the client's URL when its job is done,
//! with Majestic's macros replaced. The URL comes from the network, so it is bounded
//! (length, scheme, host) before a job is queued, and the server never calls an address
//! of its own networks (loopback, private, link-local, ...) unless the operator allows
//! that range (`linkbase serve --notify-allow CIDR`): a callback must not become a way
//! to reach services behind the server.

use accounts::IpRange;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// Longest `NotifyURL` accepted.
pub const MAX_URL_LEN: usize = 2_000;
/// Connect, send and receive limits of one callback.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Longest response status line read.
const MAX_STATUS_LINE: u64 = 8 << 10;

/// Which addresses callbacks may reach besides public ones.
#[derive(Debug, Clone, Default)]
pub struct NotifyPolicy {
    pub allowed: Vec<IpRange>,
}

/// Checks a `NotifyURL` when a job is queued: `http` or `https`, a host, bounded length.
pub fn validate(url: &str) -> Result<(), String> {
    if url.len() > MAX_URL_LEN {
        return Err(format!("NotifyURL is longer than {MAX_URL_LEN} characters"));
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("NotifyURL {url:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!("NotifyURL {url:?} is not an http or https URL"));
    }
    Ok(())
}

/// The URL with `%%DOWNLOAD_FILE%%` (the file name) and `%%DOWNLOAD_FILE_LOCATION%%` (its
/// public URL) replaced, each percent-encoded.
pub fn expand(url: &str, file_name: &str, location: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    url.replace("%%DOWNLOAD_FILE_LOCATION%%", &enc(location))
        .replace("%%DOWNLOAD_FILE%%", &enc(file_name))
}

/// Addresses no callback may reach unless allowed: loopback, private, link-local,
/// shared (CGNAT), unspecified, multicast and broadcast ranges, IPv4 and IPv6.
fn is_internal(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            let o = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_multicast()
                || a.is_broadcast()
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || o[0] == 0
        }
        IpAddr::V6(a) => {
            let first = a.segments()[0];
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

impl NotifyPolicy {
    fn may_call(&self, ip: IpAddr) -> bool {
        !is_internal(ip) || self.allowed.iter().any(|r| r.contains(ip))
    }

    /// Calls `url` once (GET); `Ok` on a 2xx answer.
    pub fn call(&self, url: &str) -> Result<(), String> {
        validate(url)?;
        let parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
        let host = parsed.host_str().unwrap_or_default().to_string();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let (addrs, name): (Vec<SocketAddr>, String) = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => (vec![SocketAddr::new(ip.into(), port)], ip.to_string()),
            Some(url::Host::Ipv6(ip)) => (vec![SocketAddr::new(ip.into(), port)], ip.to_string()),
            Some(url::Host::Domain(d)) => (
                (d, port)
                    .to_socket_addrs()
                    .map_err(|e| format!("{host}: {e}"))?
                    .collect(),
                d.to_string(),
            ),
            None => return Err(format!("NotifyURL {url:?} has no host")),
        };
        // Every address the name resolves to must be allowed: a name that also points
        // inside is refused, whichever address a connection would take.
        if let Some(bad) = addrs.iter().find(|a| !self.may_call(a.ip())) {
            return Err(format!(
                "{host} resolves to {}, an internal address callbacks may not reach",
                bad.ip()
            ));
        }
        // The first address that answers (a name may resolve to IPv6 and IPv4 ones).
        let mut failure = format!("{host}: no address");
        let mut connected = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, TIMEOUT) {
                Ok(tcp) => {
                    connected = Some(tcp);
                    break;
                }
                Err(e) => failure = format!("{addr}: {e}"),
            }
        }
        let tcp = connected.ok_or(failure)?;
        tcp.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        tcp.set_write_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        let target = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_string(),
        };
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Linkbase\r\nConnection: close\r\n\r\n"
        );
        let status = if parsed.scheme() == "https" {
            let name = rustls::pki_types::ServerName::try_from(name)
                .map_err(|e| format!("{host}: {e}"))?;
            let conn =
                rustls::ClientConnection::new(client_config()?, name).map_err(|e| e.to_string())?;
            exchange(rustls::StreamOwned::new(conn, tcp), &request)?
        } else {
            exchange(tcp, &request)?
        };
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(format!("{url} answered HTTP {status}"))
        }
    }
}

/// Sends the request and reads the status code of the answer.
fn exchange(mut stream: impl Read + Write, request: &str) -> Result<u16, String> {
    stream
        .write_all(request.as_bytes())
        .and_then(|()| stream.flush())
        .map_err(|e| format!("sending the callback: {e}"))?;
    let mut line = String::new();
    BufReader::new(stream.take(MAX_STATUS_LINE))
        .read_line(&mut line)
        .map_err(|e| format!("reading the callback's answer: {e}"))?;
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {:?}", line.trim()))
}

/// TLS settings of callbacks: the system's trusted roots (`SSL_CERT_FILE`, else the
/// Debian bundle).
fn client_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let path = std::env::var("SSL_CERT_FILE")
        .unwrap_or_else(|_| "/etc/ssl/certs/ca-certificates.crt".into());
    let pem = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots
            .add(cert.map_err(|e| format!("{path}: {e}"))?)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_refused_unless_allowed() {
        let none = NotifyPolicy::default();
        for url in [
            "http://127.0.0.1:9/x",
            "http://10.1.2.3/x",
            "http://[::1]:9/x",
            "http://169.254.169.254/latest/meta-data",
            "http://localhost:9/x",
        ] {
            let e = none.call(url).unwrap_err();
            assert!(e.contains("internal address"), "{url}: {e}");
        }
        let loopback = NotifyPolicy {
            allowed: vec!["127.0.0.0/8".parse().unwrap()],
        };
        // Allowed, so it is tried (and nothing listens on port 9).
        let e = loopback.call("http://127.0.0.1:9/x").unwrap_err();
        assert!(!e.contains("internal address"), "{e}");
    }

    #[test]
    fn bad_urls_are_refused_before_queueing() {
        assert!(validate("ftp://example.com/x").is_err());
        assert!(validate("not a url").is_err());
        assert!(validate(&format!("http://e.com/{}", "a".repeat(MAX_URL_LEN))).is_err());
        assert!(validate("https://example.com/done?f=%%DOWNLOAD_FILE%%").is_ok());
    }

    #[test]
    fn macros_are_replaced_encoded() {
        assert_eq!(
            expand(
                "http://e.com/cb?loc=%%DOWNLOAD_FILE_LOCATION%%&f=%%DOWNLOAD_FILE%%",
                "a b.csv.gz",
                "http://h/downloads/a b.csv.gz"
            ),
            "http://e.com/cb?loc=http%3A%2F%2Fh%2Fdownloads%2Fa+b.csv.gz&f=a+b.csv.gz"
        );
    }
}
