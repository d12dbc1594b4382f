//! Crawl file reading: WARC (HTML responses and redirects), Common Crawl WAT (`Links`
//! arrays) and JSON-lines crawl records, plain or gzipped (per-record members or one
//! stream), as a stream of [`PageCrawl`]s handed to a [`CrawlSink`]: the store's
//! incremental writer or a bulk build, neither of which this crate knows.
//!
//! Bad input never stops a file: each bad record is skipped and counted, and the
//! [`FileSummary`] says what and where. Only a failing sink ends a file early.

pub mod html;
pub mod http;
mod jsonl;
mod links;
pub mod time;
pub mod warc;
pub mod wat;

use flate2::read::MultiGzDecoder;
use linkstore::{normalize_url, ApplyStats, CrawlOutcome, PageCrawl};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use url::Url;

pub use html::{extract_links, HtmlLinks, LinkTag, RawLink};
pub use links::resolve_links;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("{path}: not a crawl file (neither WARC nor JSON-lines); it starts with {start:?}")]
    UnknownFormat { path: PathBuf, start: String },
    /// The sink failed (for the incremental writer, the store).
    #[error("{0}")]
    Sink(SinkError),
}

/// A sink's failure, as the sink reports it.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The longest JSON-lines record accepted.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Problems listed individually in a summary; the rest are only counted.
const MAX_LISTED_PROBLEMS: usize = 20;

/// What a reader applies and what it leaves out.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Only crawls fetched in `[from, to)` (Unix seconds) are applied; the others are
    /// counted in `FileSummary::pages_out_of_range`. For a historic build's date range.
    pub fetched_between: Option<(i64, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Warc,
    JsonLines,
}

/// Progress of one file, reported after every record.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    /// Bytes of the file (compressed) consumed so far.
    pub bytes_read: u64,
    pub bytes_total: u64,
    pub records: u64,
    pub links: u64,
}

/// A problem with one record or link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset in the decompressed stream (WARC) or line number (JSON-lines).
    pub at: String,
    pub reason: String,
}

/// What one file contributed, and what was wrong with it.
#[derive(Debug, Clone)]
pub struct FileSummary {
    pub path: PathBuf,
    pub format: Option<Format>,
    pub records: u64,
    /// Crawls applied to the store; for a sink that applies crawls later (a bulk
    /// build), crawls read.
    pub pages: u64,
    /// Crawls the store already had (same page, same fetch time).
    pub pages_unchanged: u64,
    /// Records that are not page fetches (requests, warcinfo, DNS, metadata).
    pub other_records: u64,
    /// Crawls outside `ReadOptions::fetched_between`, not applied.
    pub pages_out_of_range: u64,
    pub links_found: u64,
    pub links_new: u64,
    pub links_deleted: u64,
    pub bad_records: u64,
    pub bad_links: u64,
    /// Problem counts by reason (URLs and offsets removed so reasons group).
    pub problem_counts: BTreeMap<String, u64>,
    /// The first problems, with where they are.
    pub problems: Vec<Problem>,
    /// Set when the file ends early (truncated or corrupt compression).
    pub truncated: Option<Problem>,
}

impl FileSummary {
    fn new(path: &Path) -> Self {
        FileSummary {
            path: path.to_path_buf(),
            format: None,
            records: 0,
            pages: 0,
            pages_unchanged: 0,
            other_records: 0,
            pages_out_of_range: 0,
            links_found: 0,
            links_new: 0,
            links_deleted: 0,
            bad_records: 0,
            bad_links: 0,
            problem_counts: BTreeMap::new(),
            problems: Vec::new(),
            truncated: None,
        }
    }

    fn problem(&mut self, at: String, reason: String) {
        let group = reason.split(':').next().unwrap_or(&reason).to_string();
        *self.problem_counts.entry(group).or_default() += 1;
        if self.problems.len() < MAX_LISTED_PROBLEMS {
            self.problems.push(Problem { at, reason });
        }
    }

    fn bad_record(&mut self, at: String, reason: String) {
        self.bad_records += 1;
        self.problem(at, reason);
    }
}

/// Counts compressed bytes consumed, for progress.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Where a reader's page crawls go: the store's incremental writer, or a bulk build
/// that applies them later.
pub trait CrawlSink {
    /// Takes one crawl; says what it did to the store when it applies crawls at once,
    /// `None` when it applies them later.
    fn accept(&mut self, crawl: PageCrawl) -> Result<Option<ApplyStats>, SinkError>;
    /// Called after every record: a place to commit.
    fn record_done(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// Called at the end of each file.
    fn file_done(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Reads one crawl file and hands each page crawl to `sink`. Bad records are skipped and
/// listed in the summary; only a failure of the sink (the store) is an error.
pub fn read_file(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn CrawlSink,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<FileSummary> {
    let open_err = |source| Error::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let bytes_total = file.metadata().map_err(open_err)?.len();
    let count = Rc::new(Cell::new(0));
    let mut raw = BufReader::with_capacity(
        1 << 16,
        Counting {
            inner: file,
            count: count.clone(),
        },
    );
    let gzipped = raw.fill_buf().map_err(open_err)?.starts_with(&[0x1f, 0x8b]);
    let mut input: Box<dyn BufRead> = if gzipped {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let mut summary = FileSummary::new(path);
    let head = match input.fill_buf() {
        Ok(h) => h.to_vec(),
        Err(e) => {
            summary.truncated = Some(Problem {
                at: "0".into(),
                reason: format!("unreadable stream: {e}"),
            });
            return Ok(summary);
        }
    };
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let format = if head[start..].starts_with(b"WARC/") {
        Format::Warc
    } else if head[start..].starts_with(b"{") {
        Format::JsonLines
    } else if head.is_empty() {
        return Ok(summary);
    } else {
        return Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            start: String::from_utf8_lossy(&head[start..head.len().min(start + 16)]).into(),
        });
    };
    summary.format = Some(format);
    let mut run = Run {
        sink,
        opts,
        summary,
        progress: Progress {
            bytes_total,
            ..Default::default()
        },
        count,
        on_progress,
    };
    match format {
        Format::Warc => run.warc(input)?,
        Format::JsonLines => run.jsonl(input)?,
    }
    run.sink.file_done().map_err(Error::Sink)?;
    run.progress.bytes_read = run.count.get();
    (run.on_progress)(&run.progress);
    Ok(run.summary)
}

struct Run<'a> {
    sink: &'a mut dyn CrawlSink,
    opts: &'a ReadOptions,
    summary: FileSummary,
    progress: Progress,
    count: Rc<Cell<u64>>,
    on_progress: &'a mut dyn FnMut(&Progress),
}

/// A page fetch as a crawl format describes it, before normalisation.
struct Fetch<'a> {
    url: &'a str,
    fetched_at: Option<i64>,
    ip: Option<&'a str>,
    status: u16,
    is_html: bool,
    location: Option<&'a str>,
    base: Option<&'a str>,
    links: &'a [RawLink],
    robots_nofollow: bool,
}

/// Why a record was not applied: bad input (skipped, counted) or a sink failure (fatal).
enum RecordError {
    Bad(String),
    Sink(SinkError),
}

impl From<String> for RecordError {
    fn from(s: String) -> Self {
        RecordError::Bad(s)
    }
}

impl From<&str> for RecordError {
    fn from(s: &str) -> Self {
        RecordError::Bad(s.to_string())
    }
}

impl Run<'_> {
    fn record_result(&mut self, at: String, r: Result<(), RecordError>) -> Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(RecordError::Bad(reason)) => {
                self.summary.bad_record(at, reason);
                Ok(())
            }
            Err(RecordError::Sink(e)) => Err(Error::Sink(e)),
        }
    }

    fn record_done(&mut self) -> Result<()> {
        self.summary.records += 1;
        self.progress.records = self.summary.records;
        self.progress.links = self.summary.links_found;
        self.progress.bytes_read = self.count.get();
        (self.on_progress)(&self.progress);
        self.sink.record_done().map_err(Error::Sink)?;
        Ok(())
    }

    fn warc(&mut self, input: Box<dyn BufRead>) -> Result<()> {
        let mut reader = warc::WarcReader::new(input);
        let mut garbage_reported = 0;
        while let Some(next) = reader.next_record() {
            for at in &reader.garbage_at[garbage_reported..] {
                self.summary.bad_record(
                    format!("byte {at}"),
                    "garbage between records skipped".into(),
                );
            }
            garbage_reported = reader.garbage_at.len();
            match next {
                Ok(rec) => {
                    let at = format!("byte {}", rec.offset);
                    let r = self.warc_record(&rec);
                    self.record_result(at, r)?;
                }
                Err(warc::ReadError::Bad { offset, reason }) => {
                    self.summary.bad_record(format!("byte {offset}"), reason)
                }
                Err(warc::ReadError::Fatal { offset, reason }) => {
                    self.summary.truncated = Some(Problem {
                        at: format!("byte {offset}"),
                        reason,
                    });
                    break;
                }
            }
            self.record_done()?;
        }
        Ok(())
    }

    /// One WARC record: `response` records are HTTP fetches; `metadata` records with a
    /// JSON payload are WAT; everything else is counted and passed over.
    fn warc_record(&mut self, rec: &warc::WarcRecord) -> Result<(), RecordError> {
        let kind = rec.header("WARC-Type").unwrap_or("");
        let content_type = rec
            .header("Content-Type")
            .unwrap_or("")
            .to_ascii_lowercase();
        if kind == "metadata" && content_type.contains("json") {
            return self.wat_record(&rec.block);
        }
        if kind != "response" || !content_type.contains("http") && !content_type.is_empty() {
            self.summary.other_records += 1;
            return Ok(());
        }
        let uri = rec.header("WARC-Target-URI").unwrap_or("");
        let uri = uri.trim_start_matches('<').trim_end_matches('>');
        if !(uri.starts_with("http://") || uri.starts_with("https://")) {
            self.summary.other_records += 1;
            return Ok(());
        }
        let resp =
            http::parse_response(&rec.block).ok_or("response without an HTTP status line")?;
        let fetched_at = rec
            .header("WARC-Date")
            .and_then(time::parse_iso8601)
            .or_else(|| resp.header("date").and_then(time::parse_http_date));
        let extracted = if (200..300).contains(&resp.status) && resp.is_html() {
            Some(extract_links(&resp.text()))
        } else {
            None
        };
        let (base, links, robots) = match &extracted {
            Some(h) => (h.base.as_deref(), h.links.as_slice(), h.robots_nofollow),
            None => (None, &[][..], false),
        };
        self.apply(Fetch {
            url: uri,
            fetched_at,
            ip: rec.header("WARC-IP-Address"),
            status: resp.status,
            is_html: extracted.is_some(),
            location: resp.header("location"),
            base,
            links,
            robots_nofollow: robots,
        })
    }

    fn wat_record(&mut self, json: &[u8]) -> Result<(), RecordError> {
        let Some(page) = wat::parse_wat(json)? else {
            self.summary.other_records += 1;
            return Ok(());
        };
        let status = page.status.ok_or("WAT response without a status")?;
        let is_html = page
            .content_type
            .as_deref()
            .map_or(!page.links.is_empty(), |c| {
                c.to_ascii_lowercase().contains("html")
            });
        self.apply(Fetch {
            url: page.url.trim(),
            fetched_at: page.date.as_deref().and_then(time::parse_iso8601),
            ip: page.ip.as_deref(),
            status,
            is_html: is_html && (200..300).contains(&status),
            location: page.location.as_deref(),
            base: page.base.as_deref(),
            links: &page.links,
            robots_nofollow: false,
        })
    }

    fn jsonl(&mut self, mut input: Box<dyn BufRead>) -> Result<()> {
        let mut line = Vec::new();
        let mut line_no = 0u64;
        loop {
            line.clear();
            line_no += 1;
            let n = match (&mut input)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(n) => n,
                Err(e) => {
                    self.summary.truncated = Some(Problem {
                        at: format!("line {line_no}"),
                        reason: match e.kind() {
                            io::ErrorKind::UnexpectedEof => {
                                "stream ends inside a record (truncated)".into()
                            }
                            _ => format!("unreadable stream: {e}"),
                        },
                    });
                    return Ok(());
                }
            };
            if n == 0 {
                return Ok(());
            }
            let at = format!("line {line_no}");
            if n > MAX_LINE_BYTES {
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                let _ = input.read_until(b'\n', &mut rest);
                self.summary
                    .bad_record(at, format!("record longer than {MAX_LINE_BYTES} bytes"));
            } else if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            } else {
                let r = self.jsonl_record(&line);
                self.record_result(at, r)?;
            }
            self.record_done()?;
        }
    }

    fn jsonl_record(&mut self, line: &[u8]) -> Result<(), RecordError> {
        let page = jsonl::parse_line(line)?;
        let fetched_at = match &page.fetched_at {
            serde_json::Value::Number(n) => n.as_i64(),
            serde_json::Value::String(s) => time::parse_iso8601(s),
            _ => None,
        };
        let links = page
            .links
            .iter()
            .map(jsonl::JsonLink::to_raw)
            .collect::<Result<Vec<_>, _>>()?;
        let is_html = page
            .content_type
            .as_deref()
            .is_none_or(|c| c.to_ascii_lowercase().contains("html"));
        self.apply(Fetch {
            url: &page.url,
            fetched_at,
            ip: page.ip.as_deref(),
            status: page.status,
            is_html: is_html && (200..300).contains(&page.status),
            location: page.location.as_deref(),
            base: page.base.as_deref(),
            links: &links,
            robots_nofollow: false,
        })
    }

    /// Normalises a fetch into a [`PageCrawl`] and applies it.
    fn apply(&mut self, f: Fetch<'_>) -> Result<(), RecordError> {
        let url = normalize_url(f.url, None).map_err(|e| format!("page URL: {e}"))?;
        let fetched_at = f.fetched_at.ok_or("no valid fetch date")?;
        if let Some((from, to)) = self.opts.fetched_between {
            if fetched_at < from || fetched_at >= to {
                self.summary.pages_out_of_range += 1;
                return Ok(());
            }
        }
        let page = Url::parse(&url).map_err(|e| format!("page URL: {e}"))?;
        let outcome = match f.status {
            200..=299 if f.is_html => {
                let (links, problems) = resolve_links(&page, f.base, f.links, f.robots_nofollow);
                self.summary.bad_links += problems.len() as u64;
                for p in problems {
                    self.summary.problem(url.chars().take(200).collect(), p);
                }
                self.summary.links_found += links.len() as u64;
                CrawlOutcome::Html { links }
            }
            200..=299 => CrawlOutcome::NotHtml,
            300..=399 => match f.location.map(|l| normalize_url(l.trim(), Some(&page))) {
                Some(Ok(location)) => CrawlOutcome::Redirect {
                    status: f.status,
                    location,
                },
                _ => CrawlOutcome::Failed { status: f.status },
            },
            404 | 410 => CrawlOutcome::Gone { status: f.status },
            status => CrawlOutcome::Failed { status },
        };
        let crawl = PageCrawl {
            url,
            fetched_at,
            ip: f.ip.and_then(|s| s.trim().parse().ok()),
            outcome,
        };
        match self.sink.accept(crawl).map_err(RecordError::Sink)? {
            Some(stats) if stats.skipped => self.summary.pages_unchanged += 1,
            Some(stats) => {
                self.summary.pages += 1;
                self.summary.links_new += stats.links_new;
                self.summary.links_deleted += stats.links_deleted;
            }
            None => self.summary.pages += 1,
        }
        Ok(())
    }
}
