//! The HTTP response inside a WARC `response` record: status line, headers, body
//! (de-chunked and decompressed when the headers say so), and charset decoding.

use flate2::read::MultiGzDecoder;
use std::io::Read;

/// Body bytes decoded beyond this are ignored (pages are capped, not rejected).
pub const MAX_BODY_BYTES: usize = 8 << 20;

pub struct HttpResponse<'a> {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: &'a [u8],
}

impl HttpResponse<'_> {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn is_html(&self) -> bool {
        match self.header("content-type") {
            Some(ct) => {
                let ct = ct.to_ascii_lowercase();
                ct.contains("html")
            }
            None => sniff_html(self.body),
        }
    }

    /// The body as it was sent: de-chunked and gunzipped when the headers say so and the
    /// bytes agree (some archives store bodies already decoded but keep the headers).
    pub fn payload(&self) -> Vec<u8> {
        let mut body = self.body.to_vec();
        if self
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
        {
            if let Some(d) = dechunk(&body) {
                body = d;
            }
        }
        if self
            .header("content-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("gzip"))
            && body.starts_with(&[0x1f, 0x8b])
        {
            let mut out = Vec::new();
            let _ = MultiGzDecoder::new(&body[..])
                .take(MAX_BODY_BYTES as u64)
                .read_to_end(&mut out);
            body = out;
        }
        body.truncate(MAX_BODY_BYTES);
        body
    }

    /// Decodes the body to text using the charset of the headers or a `<meta charset>`,
    /// falling back to UTF-8 with replacement characters.
    pub fn text(&self) -> String {
        let body = self.payload();
        let label = self
            .header("content-type")
            .and_then(charset_param)
            .or_else(|| meta_charset(&body));
        let encoding = label
            .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
            .unwrap_or(encoding_rs::UTF_8);
        let (text, _, _) = encoding.decode(&body);
        text.into_owned()
    }
}

fn sniff_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

fn charset_param(ct: &str) -> Option<String> {
    ct.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_string())
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    loop {
        let line_end = b.windows(2).position(|w| w == b"\r\n")?;
        let size_str = std::str::from_utf8(&b[..line_end]).ok()?;
        let size = usize::from_str_radix(size_str.split(';').next()?.trim(), 16).ok()?;
        b = &b[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size..)?;
        b = b.strip_prefix(b"\r\n").unwrap_or(b);
    }
}

/// Splits `HTTP/1.1 200 OK\r\nHeader: v\r\n\r\nbody`. `None` when there is no status line.
pub fn parse_response(block: &[u8]) -> Option<HttpResponse<'_>> {
    let (head_end, sep) = find_head_end(block)?;
    let head = String::from_utf8_lossy(&block[..head_end]);
    let mut lines = head.split('\n').map(|l| l.trim_end_matches('\r'));
    let status_line = lines.next()?;
    if !status_line.starts_with("HTTP/") {
        return None;
    }
    let status: u16 = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    Some(HttpResponse {
        status,
        headers,
        body: &block[head_end + sep..],
    })
}

fn find_head_end(b: &[u8]) -> Option<(usize, usize)> {
    let crlf = b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| (p, 4));
    let lf = b.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2));
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_and_decode() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<p>\xe9t\r\n0\r\n\r\n";
        let r = parse_response(raw).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.is_html());
        assert_eq!(r.text(), "<p>ét");
        assert!(parse_response(b"garbage without status").is_none());
    }
}
