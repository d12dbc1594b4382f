//! A deterministic synthetic web: root domains of power-law sizes with several hosts,
//! links whose targets follow a power law (a few pages get most backlinks), anchor-text,
//! nofollow, image and redirect mixes, and repeated crawls over time in which links
//! appear and disappear and pages die. Written as real crawl files (JSON-lines or WARC,
//! gzipped), one file per crawl round, so the same bytes feed the demo, the tests and the
//! benchmarks.
//!
//! Everything is a pure function of the spec and seed: the same spec gives the same
//! files byte for byte.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    JsonLines,
    /// WARC response records of HTML pages, with same-host links root-relative as pages
    /// write them.
    Warc,
    /// Common Crawl WAT: a request, a response and a metadata record per fetch, each a
    /// JSON envelope gzipped as its own member, with same-host links root-relative as
    /// pages write them.
    Wat,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct WebSpec {
    pub seed: u64,
    pub domains: usize,
    /// Pages in total, spread over domains by a power law.
    pub pages: usize,
    /// Mean links per page (internal and external).
    pub links_per_page: usize,
    /// Crawl rounds; each writes one file.
    pub crawls: usize,
    /// Unix time of the first crawl round.
    pub start: i64,
    pub crawl_interval_days: i64,
    /// Share of pages fetched in each round.
    pub crawl_coverage: f64,
    /// Share of pages (outside the hot domain) that also link to the hot URL: a target
    /// with a chosen number of backlinks from nearly every domain, for benchmarks.
    pub hot_share: f64,
    pub format: OutputFormat,
}

impl Default for WebSpec {
    fn default() -> Self {
        WebSpec {
            seed: 42,
            domains: 2_000,
            pages: 20_000,
            links_per_page: 20,
            crawls: 3,
            start: 1_735_689_600, // 2025-01-01
            crawl_interval_days: 30,
            crawl_coverage: 0.9,
            hot_share: 0.0,
            format: OutputFormat::JsonLines,
        }
    }
}

impl WebSpec {
    /// The web `linkbase demo` generates: `pages` pages over `pages / 10` domains.
    pub fn demo(pages: usize) -> WebSpec {
        WebSpec {
            pages,
            domains: (pages / 10).max(10),
            ..Default::default()
        }
    }
}

/// Topics given to seed domains, from the flow taxonomy.
const SEED_TOPICS: &[&str] = &[
    "News",
    "Computers/Internet",
    "Recreation/Travel",
    "Health",
    "Business/Financial Services",
    "Sports",
    "Science",
    "Arts/Music",
];

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct GenSummary {
    pub files: Vec<PathBuf>,
    pub fetches: u64,
    pub links: u64,
    pub bytes: u64,
}

const TLDS: &[&str] = &[
    "com", "com", "com", "org", "net", "co.uk", "de", "fr", "io", "com.au", "edu", "gov", "ac.uk",
    "nl", "it", "es",
];
const WORDS: &[&str] = &[
    "alpha", "blue", "cedar", "delta", "ember", "falcon", "garden", "harbor", "indigo", "juniper",
    "kettle", "lumen", "maple", "nova", "orbit", "pixel", "quartz", "river", "summit", "tango",
    "umber", "velvet", "willow", "xenon", "yonder", "zephyr",
];
const TOPICS: &[&str] = &[
    "news", "blog", "shop", "travel", "recipes", "software", "health", "finance", "sports",
    "music", "science", "garden", "history", "cars", "books",
];
const GENERIC_ANCHORS: &[&str] = &["click here", "read more", "here", "website", "link", "more"];
const HOSTS: &[&str] = &["www", "blog", "shop", "news"];

/// SplitMix64: a tiny, fast, well-mixed deterministic hash of a few integers.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn h(parts: &[u64]) -> u64 {
    parts.iter().fold(0x1234_5678, |acc, &p| mix(acc ^ p))
}

/// Uniform in [0, 1).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The generated web's structure.
pub struct Web {
    spec: WebSpec,
    /// First global page id of each domain (prefix sums of power-law sizes).
    domain_start: Vec<usize>,
    /// Cumulative popularity of domains (Zipf, exponent 1) for target choice.
    domain_cdf: Vec<f64>,
}

impl Web {
    pub fn new(spec: WebSpec) -> Web {
        let n = spec.domains.max(1);
        let weights: Vec<f64> = (0..n).map(|d| 1.0 / (d as f64 + 1.0).powf(0.9)).collect();
        let total: f64 = weights.iter().sum();
        let pages = spec.pages.max(n);
        let mut domain_start = Vec::with_capacity(n + 1);
        let mut acc = 0usize;
        for w in &weights {
            domain_start.push(acc);
            acc += ((w / total) * (pages - n) as f64) as usize + 1;
        }
        domain_start.push(acc);
        let mut cdf = Vec::with_capacity(n);
        let mut c = 0.0;
        for d in 0..n {
            c += 1.0 / (d as f64 + 1.0);
            cdf.push(c);
        }
        for x in &mut cdf {
            *x /= c;
        }
        Web {
            spec,
            domain_start,
            domain_cdf: cdf,
        }
    }

    pub fn pages(&self) -> usize {
        *self.domain_start.last().expect("at least one domain")
    }

    fn domain_of(&self, page: usize) -> usize {
        self.domain_start.partition_point(|&s| s <= page) - 1
    }

    fn domain_size(&self, d: usize) -> usize {
        self.domain_start[d + 1] - self.domain_start[d]
    }

    /// Registered domain name of domain `d`.
    pub fn domain_name(&self, d: usize) -> String {
        let x = h(&[self.spec.seed, 1, d as u64]);
        let a = WORDS[(x % WORDS.len() as u64) as usize];
        let b = WORDS[((x >> 8) % WORDS.len() as u64) as usize];
        let tld = TLDS[((x >> 16) % TLDS.len() as u64) as usize];
        format!("{a}{b}{d}.{tld}")
    }

    /// URL of a global page id. Page 0 of each domain is `http://www.<domain>/`.
    pub fn url(&self, page: usize) -> String {
        let d = self.domain_of(page);
        let j = page - self.domain_start[d];
        let name = self.domain_name(d);
        let hosts = 1 + d % HOSTS.len();
        let host = HOSTS[j % hosts];
        if j == 0 {
            return format!("http://www.{name}/");
        }
        let scheme = if d.is_multiple_of(3) { "https" } else { "http" };
        let topic = TOPICS[(h(&[self.spec.seed, 2, page as u64]) % TOPICS.len() as u64) as usize];
        format!("{scheme}://{host}.{name}/{topic}/{j}.html")
    }

    /// A seed file (see `docs/flow.md`) trusting the `count` most popular root domains,
    /// each with a topic.
    pub fn seed_file(&self, count: usize) -> String {
        let mut out = String::from(
            "# Trusted seeds for the demo web (webgen seed 42): the most linked-to root domains.\n",
        );
        for d in 0..count.min(self.spec.domains) {
            let topic = SEED_TOPICS[d % SEED_TOPICS.len()];
            out.push_str(&format!("{}\t{topic}\n", self.domain_name(d)));
        }
        out
    }

    /// The most linked-to URL of the web (home page of the most popular domain).
    pub fn hot_url(&self) -> String {
        self.url(0)
    }

    /// Picks a link target for slot `slot` of `page`: internal (same domain) 30% of the
    /// time, otherwise a power-law choice of domain and of page within it.
    fn target(&self, page: usize, slot: usize) -> usize {
        let x = h(&[self.spec.seed, 3, page as u64, slot as u64]);
        let d = if unit(x) < 0.3 {
            self.domain_of(page)
        } else {
            let u = unit(mix(x));
            self.domain_cdf
                .partition_point(|&c| c < u)
                .min(self.spec.domains - 1)
        };
        let size = self.domain_size(d) as f64;
        // Log-uniform rank: P(rank j) ~ 1/j, so home pages collect most links.
        let j = (size.powf(unit(mix(x ^ 0xABCD))) - 1.0) as usize;
        self.domain_start[d] + j.min(self.domain_size(d) - 1)
    }

    /// The links of `page` as crawled in `round`.
    pub fn links(&self, page: usize, round: usize) -> Vec<GenLink> {
        let s = self.spec.seed;
        let base = h(&[s, 4, page as u64]);
        let n = (unit(base) * 2.0 * self.spec.links_per_page as f64) as usize;
        let d = self.domain_of(page);
        let mut out = Vec::with_capacity(n);
        for slot in 0..n {
            let x = h(&[s, 5, page as u64, slot as u64]);
            // Lifecycle: most links exist from the first round; some are added later,
            // some removed.
            let born = if unit(x) < 0.8 {
                0
            } else {
                (x >> 20) as usize % self.spec.crawls.max(1)
            };
            let dies = if unit(mix(x)) < 0.15 {
                born + 1 + (x >> 40) as usize % self.spec.crawls.max(1)
            } else {
                usize::MAX
            };
            if round < born || round >= dies {
                continue;
            }
            let t = self.target(page, slot);
            let kind = match (x >> 8) % 100 {
                0..=4 => "img",
                5 => "iframe",
                _ => "a",
            };
            let td = self.domain_of(t);
            let anchor = match (x >> 16) % 10 {
                0..=2 => self.domain_name(td),
                3 => GENERIC_ANCHORS[((x >> 24) % GENERIC_ANCHORS.len() as u64) as usize].into(),
                4 => self.url(t),
                _ => format!(
                    "{} {}",
                    WORDS[((x >> 28) % WORDS.len() as u64) as usize],
                    TOPICS[((x >> 32) % TOPICS.len() as u64) as usize]
                ),
            };
            out.push(GenLink {
                url: self.url(t),
                text: if kind == "a" {
                    anchor.clone()
                } else {
                    String::new()
                },
                alt: if kind == "img" { anchor } else { String::new() },
                nofollow: d != td && (x >> 36).is_multiple_of(10),
                kind,
            });
        }
        let y = h(&[s, 9, page as u64]);
        if d != self.domain_of(0) && unit(y) < self.spec.hot_share {
            let anchor = GENERIC_ANCHORS[((y >> 24) % GENERIC_ANCHORS.len() as u64) as usize];
            out.push(GenLink {
                url: self.hot_url(),
                text: anchor.into(),
                alt: String::new(),
                nofollow: (y >> 36).is_multiple_of(10),
                kind: "a",
            });
        }
        out
    }

    /// What a fetch of `page` in `round` returns: `None` if not fetched this round.
    pub fn fetch(&self, page: usize, round: usize) -> Option<GenFetch> {
        let s = self.spec.seed;
        let x = h(&[s, 6, page as u64, round as u64]);
        if unit(x) >= self.spec.crawl_coverage {
            return None;
        }
        let fate = h(&[s, 7, page as u64]);
        // 3% of non-home pages die (404) from some round on; 1% start redirecting home.
        let j = page - self.domain_start[self.domain_of(page)];
        let change_round = 1 + (fate >> 32) as usize % self.spec.crawls.max(1);
        let status = if j > 0 && round >= change_round && unit(fate) < 0.03 {
            404
        } else if j > 0 && round >= change_round && unit(fate) < 0.04 {
            301
        } else {
            200
        };
        let fetched_at = self.spec.start
            + round as i64 * self.spec.crawl_interval_days * 86_400
            + (x >> 40) as i64 % 86_400;
        let d = self.domain_of(page);
        let ipx = h(&[s, 8, d as u64]);
        Some(GenFetch {
            url: self.url(page),
            fetched_at,
            ip: format!(
                "10.{}.{}.{}",
                (ipx >> 8) % 256,
                (ipx >> 16) % 256,
                1 + ipx % 250
            ),
            status,
            location: (status == 301).then(|| self.url(self.domain_start[d])),
            links: if status == 200 {
                self.links(page, round)
            } else {
                Vec::new()
            },
        })
    }
}

pub struct GenLink {
    pub url: String,
    pub text: String,
    pub alt: String,
    pub nofollow: bool,
    pub kind: &'static str,
}

pub struct GenFetch {
    pub url: String,
    pub fetched_at: i64,
    pub ip: String,
    pub status: u16,
    pub location: Option<String>,
    pub links: Vec<GenLink>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialise")
}

fn iso(ts: i64) -> String {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn write_jsonl(out: &mut impl Write, f: &GenFetch) -> io::Result<()> {
    write!(
        out,
        "{{\"url\":{},\"fetched_at\":\"{}\",\"status\":{},\"ip\":\"{}\"",
        json_str(&f.url),
        iso(f.fetched_at),
        f.status,
        f.ip
    )?;
    if let Some(l) = &f.location {
        write!(out, ",\"location\":{}", json_str(l))?;
    }
    out.write_all(b",\"links\":[")?;
    for (i, l) in f.links.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(
            out,
            "{{\"url\":{},\"type\":\"{}\"",
            json_str(&l.url),
            l.kind
        )?;
        if !l.text.is_empty() {
            write!(out, ",\"text\":{}", json_str(&l.text))?;
        }
        if !l.alt.is_empty() {
            write!(out, ",\"alt\":{}", json_str(&l.alt))?;
        }
        if l.nofollow {
            out.write_all(b",\"rel\":\"nofollow\"")?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"]}\n")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One WARC response record, gzipped as its own member (as Common Crawl writes them).
fn write_warc(out: &mut impl Write, f: &GenFetch) -> io::Result<()> {
    let mut http = Vec::new();
    match f.status {
        200 => {
            let mut body =
                String::from("<!doctype html><html><head><title>page</title></head><body>\n");
            for l in &f.links {
                let rel = if l.nofollow { " rel=\"nofollow\"" } else { "" };
                let href = html_escape(as_written(&f.url, &l.url));
                match l.kind {
                    "img" => body.push_str(&format!(
                        "<a href=\"{href}\"{rel}><img src=\"/i.png\" alt=\"{}\"></a>\n",
                        html_escape(&l.alt)
                    )),
                    "iframe" => body.push_str(&format!("<iframe src=\"{href}\"></iframe>\n")),
                    _ => body.push_str(&format!(
                        "<p><a href=\"{href}\"{rel}>{}</a></p>\n",
                        html_escape(&l.text)
                    )),
                }
            }
            body.push_str("</body></html>\n");
            write!(
                http,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )?;
        }
        301 => write!(
            http,
            "HTTP/1.1 301 Moved Permanently\r\nLocation: {}\r\nContent-Length: 0\r\n\r\n",
            f.location.as_deref().unwrap_or("/")
        )?,
        s => write!(http, "HTTP/1.1 {s} Not Found\r\nContent-Length: 0\r\n\r\n")?,
    }
    let headers = format!(
        "WARC-Type: response\r\nWARC-Target-URI: {}\r\nWARC-Date: {}\r\nWARC-IP-Address: {}\r\nContent-Type: application/http; msgtype=response\r\n",
        f.url,
        iso(f.fetched_at),
        f.ip,
    );
    write_warc_record(out, &headers, &http)
}

/// One WARC record (`headers`: every header line but `Content-Length`, each ending in
/// CRLF), gzipped as its own member, as Common Crawl writes them.
fn write_warc_record(out: &mut impl Write, headers: &str, block: &[u8]) -> io::Result<()> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    write!(
        gz,
        "WARC/1.0\r\n{headers}Content-Length: {}\r\n\r\n",
        block.len()
    )?;
    gz.write_all(block)?;
    gz.write_all(b"\r\n\r\n")?;
    out.write_all(&gz.finish()?)
}

/// A deterministic record id for the `n`th record of a fetch.
fn record_id(f: &GenFetch, n: u64) -> String {
    let a = h(&[f.fetched_at as u64, n, f.url.len() as u64])
        ^ h(&[f.url.as_bytes().iter().map(|&b| u64::from(b)).sum(), n]);
    let b = mix(a ^ 0x9e37_79b9_7f4a_7c15);
    format!(
        "<urn:uuid:{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}>",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// A link's URL as its page writes it: relative on the page's own host.
fn as_written<'a>(page: &str, url: &'a str) -> &'a str {
    let host_end = |u: &str| {
        u.find("://")
            .map(|i| i + 3 + u[i + 3..].find('/').unwrap_or(u.len() - i - 3))
    };
    match (host_end(page), host_end(url)) {
        (Some(p), Some(u)) if page[..p] == url[..u] && u < url.len() => &url[u..],
        _ => url,
    }
}

/// One WAT record: a WARC metadata record of the JSON `envelope`.
fn write_wat_record(out: &mut impl Write, f: &GenFetch, n: u64, envelope: &str) -> io::Result<()> {
    let json = format!(
        "{{\"Container\":{{\"Filename\":\"CC-MAIN-{}-00000.warc.gz\",\"Compressed\":true,\"Offset\":\"{}\",\"Gzip-Metadata\":{{\"Deflate-Length\":\"{}\",\"Header-Length\":\"10\",\"Footer-Length\":\"8\",\"Inflated-CRC\":\"{}\",\"Inflated-Length\":\"{}\"}}}},\"Envelope\":{envelope}}}",
        f.fetched_at,
        h(&[f.fetched_at as u64, n]) % 1_000_000_000,
        600 + envelope.len() / 3,
        h(&[n, f.fetched_at as u64]) as i32,
        900 + envelope.len() / 2,
    );
    let headers = format!(
        "WARC-Type: metadata\r\nWARC-Target-URI: {}\r\nWARC-Date: {}\r\nWARC-Record-ID: {}\r\nWARC-Refers-To: {}\r\nContent-Type: application/json\r\n",
        f.url,
        iso(f.fetched_at + 86_400),
        record_id(f, n + 10),
        record_id(f, n),
    );
    write_warc_record(out, &headers, json.as_bytes())
}

/// The three WAT records of one fetch, as Common Crawl writes them: its request, its
/// response (HTTP metadata and the page's links), and the fetch's metadata.
fn write_wat(out: &mut impl Write, f: &GenFetch) -> io::Result<()> {
    let date = iso(f.fetched_at);
    let warc_header = |kind: &str, n: u64, content_type: &str, ip: bool| {
        let ip = if ip {
            format!(",\"WARC-IP-Address\":\"{}\"", f.ip)
        } else {
            String::new()
        };
        format!(
            "\"Format\":\"WARC\",\"WARC-Header-Length\":\"{}\",\"WARC-Header-Metadata\":{{\"WARC-Type\":\"{kind}\",\"WARC-Date\":\"{date}\",\"WARC-Record-ID\":\"{}\",\"Content-Length\":\"{}\",\"Content-Type\":\"{content_type}\",\"WARC-Warcinfo-ID\":\"{}\"{ip},\"WARC-Target-URI\":{},\"WARC-Payload-Digest\":\"sha1:{:032X}\",\"WARC-Block-Digest\":\"sha1:{:032X}\"}}",
            400 + f.url.len(),
            record_id(f, n),
            300 + 40 * f.links.len(),
            record_id(f, 99),
            json_str(&f.url),
            h(&[n, 1, f.fetched_at as u64]),
            h(&[n, 2, f.fetched_at as u64]),
        )
    };
    let host = f.url.split('/').nth(2).unwrap_or("");
    let request = format!(
        "{{{},\"Payload-Metadata\":{{\"Actual-Content-Type\":\"application/http; msgtype=request\",\"HTTP-Request-Metadata\":{{\"Request-Message\":{{\"Method\":\"GET\",\"Path\":{},\"Version\":\"HTTP/1.1\"}},\"Headers-Length\":\"300\",\"Headers\":{{\"Host\":\"{host}\",\"Accept\":\"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\",\"Accept-Language\":\"en-US,en;q=0.5\",\"User-Agent\":\"CCBot/2.0 (https://commoncrawl.org/faq/)\",\"Connection\":\"Keep-Alive\",\"Accept-Encoding\":\"gzip\"}},\"Entity-Length\":\"0\",\"Entity-Trailing-Slop-Length\":\"0\"}},\"Actual-Content-Length\":\"300\",\"Trailing-Slop-Length\":\"0\"}}}}",
        warc_header("request", 0, "application/http; msgtype=request", true),
        json_str(as_written(&f.url, &f.url)),
    );
    write_wat_record(out, f, 0, &request)?;

    let (reason, location) = match f.status {
        200 => ("OK", String::new()),
        301 => (
            "Moved Permanently",
            format!(
                ",\"Location\":{}",
                json_str(f.location.as_deref().unwrap_or("/"))
            ),
        ),
        _ => ("Not Found", String::new()),
    };
    let mut links = String::new();
    for l in &f.links {
        if !links.is_empty() {
            links.push(',');
        }
        let url = json_str(as_written(&f.url, &l.url));
        let rel = if l.nofollow {
            ",\"rel\":\"nofollow\""
        } else {
            ""
        };
        match l.kind {
            "img" => links.push_str(&format!(
                "{{\"path\":\"IMG@/src\",\"url\":\"/i.png\",\"alt\":{alt}}},{{\"path\":\"A@/href\",\"url\":{url},\"alt\":{alt}{rel}}}",
                alt = json_str(&l.alt)
            )),
            "iframe" => links.push_str(&format!("{{\"path\":\"IFRAME@/src\",\"url\":{url}{rel}}}")),
            _ => links.push_str(&format!(
                "{{\"path\":\"A@/href\",\"url\":{url},\"text\":{}{rel}}}",
                json_str(&l.text)
            )),
        }
    }
    let html = if f.status == 200 {
        format!(
            ",\"HTML-Metadata\":{{\"Head\":{{\"Title\":\"page\",\"Metas\":[{{\"name\":\"viewport\",\"content\":\"width=device-width, initial-scale=1\"}},{{\"name\":\"description\",\"content\":\"A page of {host}\"}}],\"Link\":[{{\"path\":\"LINK@/href\",\"url\":\"/style.css\",\"rel\":\"stylesheet\"}}]}},\"Links\":[{links}]}}"
        )
    } else {
        String::new()
    };
    let content_type = if f.status == 200 {
        "text/html; charset=utf-8"
    } else {
        "text/html"
    };
    let response = format!(
        "{{{},\"Payload-Metadata\":{{\"Actual-Content-Type\":\"application/http; msgtype=response\",\"HTTP-Response-Metadata\":{{\"Response-Message\":{{\"Status\":\"{}\",\"Version\":\"HTTP/1.1\",\"Reason\":\"{reason}\"}},\"Headers-Length\":\"250\",\"Headers\":{{\"Date\":\"{date}\",\"Server\":\"nginx\",\"Content-Type\":\"{content_type}\",\"X-Crawler-Content-Length\":\"{}\",\"Cache-Control\":\"max-age=600\"{location}}}{html},\"Entity-Length\":\"{}\",\"Entity-Digest\":\"sha1:{:032X}\",\"Entity-Trailing-Slop-Length\":\"0\"}},\"Actual-Content-Length\":\"{}\",\"Block-Digest\":\"sha1:{:032X}\",\"Trailing-Slop-Length\":\"4\"}}}}",
        warc_header("response", 1, "application/http; msgtype=response", true),
        f.status,
        2000 + 60 * f.links.len(),
        2000 + 60 * f.links.len(),
        h(&[3, f.fetched_at as u64]),
        2250 + 60 * f.links.len(),
        h(&[4, f.fetched_at as u64]),
    );
    write_wat_record(out, f, 1, &response)?;

    let metadata = format!(
        "{{{},\"Payload-Metadata\":{{\"Actual-Content-Type\":\"application/metadata-fields\",\"WARC-Metadata-Metadata\":{{\"Metadata-Records\":[{{\"Name\":\"fetchTimeMs\",\"Value\":\"{}\"}},{{\"Name\":\"charset-detected\",\"Value\":\"UTF-8\"}},{{\"Name\":\"languages-cld2\",\"Value\":\"{{\\\"reliable\\\":true,\\\"text-bytes\\\":2145,\\\"languages\\\":[{{\\\"code\\\":\\\"en\\\",\\\"code-iso-639-3\\\":\\\"eng\\\",\\\"text-covered\\\":0.99,\\\"score\\\":1012.0,\\\"name\\\":\\\"ENGLISH\\\"}}]}}\"}}]}},\"Actual-Content-Length\":\"200\",\"Trailing-Slop-Length\":\"0\"}}}}",
        warc_header("metadata", 2, "application/warc-fields", false),
        h(&[5, f.fetched_at as u64]) % 2000,
    );
    write_wat_record(out, f, 2, &metadata)
}

/// Writes one gzipped crawl file per round into `dir`, calling `progress` with the
/// round number and the fetches written so far.
pub fn generate(
    spec: &WebSpec,
    dir: &Path,
    progress: &mut dyn FnMut(usize, u64),
) -> io::Result<GenSummary> {
    std::fs::create_dir_all(dir)?;
    let web = Web::new(spec.clone());
    let mut summary = GenSummary::default();
    for round in 0..spec.crawls {
        let ext = match spec.format {
            OutputFormat::JsonLines => "jsonl.gz",
            OutputFormat::Warc => "warc.gz",
            OutputFormat::Wat => "warc.wat.gz",
        };
        let path = dir.join(format!("crawl-{round:03}.{ext}"));
        let file = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        // JSON-lines is one gzip stream; WARC and WAT records are gzipped one member each.
        let mut out: Box<dyn Write> = match spec.format {
            OutputFormat::JsonLines => Box::new(GzEncoder::new(file, Compression::fast())),
            OutputFormat::Warc | OutputFormat::Wat => Box::new(file),
        };
        for page in 0..web.pages() {
            let Some(f) = web.fetch(page, round) else {
                continue;
            };
            summary.fetches += 1;
            summary.links += f.links.len() as u64;
            match spec.format {
                OutputFormat::JsonLines => write_jsonl(&mut out, &f)?,
                OutputFormat::Warc => write_warc(&mut out, &f)?,
                OutputFormat::Wat => write_wat(&mut out, &f)?,
            }
            if summary.fetches.is_multiple_of(10_000) {
                progress(round, summary.fetches);
            }
        }
        out.flush()?;
        drop(out);
        summary.bytes += std::fs::metadata(&path)?.len();
        summary.files.push(path);
        progress(round, summary.fetches);
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_power_law() {
        let spec = WebSpec {
            domains: 200,
            pages: 2_000,
            ..Default::default()
        };
        let a = Web::new(spec.clone());
        let b = Web::new(spec);
        let mut indeg = vec![0u32; a.pages()];
        for p in 0..a.pages() {
            let la: Vec<String> = a.links(p, 0).into_iter().map(|l| l.url).collect();
            let lb: Vec<String> = b.links(p, 0).into_iter().map(|l| l.url).collect();
            assert_eq!(la, lb);
            for slot in 0..10 {
                indeg[a.target(p, slot)] += 1;
            }
        }
        indeg.sort_unstable_by(|x, y| y.cmp(x));
        let top: u32 = indeg[..20].iter().sum();
        let total: u32 = indeg.iter().sum();
        // The top 1% of pages collect far more than 1% of the links.
        assert!(top * 10 > total, "top 20 pages have {top} of {total} links");
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_735_689_600), "2025-01-01T00:00:00Z");
    }
}
