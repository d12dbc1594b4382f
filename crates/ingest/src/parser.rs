//! Parsing records cut by the [`crate::FileReader`] into page crawls: WARC responses
//! (HTTP, HTML links), WAT metadata, JSON-lines; URL normalisation; crawl outcomes.

use crate::html::{extract_links, RawLink};
use crate::links::resolve_links;
use crate::reader::{RawBody, RawRecord};
use crate::warc::WarcRecord;
use crate::{http, jsonl, time, wat, CrawlSink, Error, FileSummary, ReadOptions, Result};
use linkstore::{normalize_url, CrawlOutcome, PageCrawl};
use std::path::Path;
use url::Url;

/// Parses the records of one file, or of the share of one file's records that comes its
/// way, and counts what it found in a [`FileSummary`] of its own.
pub struct RecordParser {
    opts: ReadOptions,
    summary: FileSummary,
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
    Sink(crate::SinkError),
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

impl RecordParser {
    pub fn new(path: &Path, opts: ReadOptions) -> RecordParser {
        RecordParser {
            opts,
            summary: FileSummary::new(path),
        }
    }

    /// Parses one record and hands its crawl, if it has one, to `sink`. A bad record is
    /// counted and listed; only the sink's failure is an error.
    pub fn parse(&mut self, rec: &RawRecord, sink: &mut dyn CrawlSink) -> Result<()> {
        let r = match &rec.body {
            RawBody::Line { bytes, .. } => self.jsonl_record(rec.seq, bytes, sink),
            RawBody::Warc(w) => self.warc_record(rec.seq, w, sink),
        };
        match r {
            Ok(()) => Ok(()),
            Err(RecordError::Bad(reason)) => {
                self.summary.bad_record(rec.seq, rec.body.at(), reason);
                Ok(())
            }
            Err(RecordError::Sink(e)) => Err(Error::Sink(e)),
        }
    }

    pub fn summary(&self) -> &FileSummary {
        &self.summary
    }

    pub fn finish(self) -> FileSummary {
        self.summary
    }

    /// One WARC record: `response` records are HTTP fetches; `metadata` records with a
    /// JSON payload are WAT; everything else is counted and passed over.
    fn warc_record(
        &mut self,
        seq: u64,
        rec: &WarcRecord,
        sink: &mut dyn CrawlSink,
    ) -> Result<(), RecordError> {
        let kind = rec.header("WARC-Type").unwrap_or("");
        let content_type = rec
            .header("Content-Type")
            .unwrap_or("")
            .to_ascii_lowercase();
        if kind == "metadata" && content_type.contains("json") {
            return self.wat_record(seq, &rec.block, sink);
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
        let fetch = Fetch {
            url: uri,
            fetched_at,
            ip: rec.header("WARC-IP-Address"),
            status: resp.status,
            is_html: extracted.is_some(),
            location: resp.header("location"),
            base,
            links,
            robots_nofollow: robots,
        };
        self.apply(seq, fetch, sink)
    }

    fn wat_record(
        &mut self,
        seq: u64,
        json: &[u8],
        sink: &mut dyn CrawlSink,
    ) -> Result<(), RecordError> {
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
        let fetch = Fetch {
            url: page.url.trim(),
            fetched_at: page.date.as_deref().and_then(time::parse_iso8601),
            ip: page.ip.as_deref(),
            status,
            is_html: is_html && (200..300).contains(&status),
            location: page.location.as_deref(),
            base: page.base.as_deref(),
            links: &page.links,
            robots_nofollow: false,
        };
        self.apply(seq, fetch, sink)
    }

    fn jsonl_record(
        &mut self,
        seq: u64,
        line: &[u8],
        sink: &mut dyn CrawlSink,
    ) -> Result<(), RecordError> {
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
        let fetch = Fetch {
            url: &page.url,
            fetched_at,
            ip: page.ip.as_deref(),
            status: page.status,
            is_html: is_html && (200..300).contains(&page.status),
            location: page.location.as_deref(),
            base: page.base.as_deref(),
            links: &links,
            robots_nofollow: false,
        };
        self.apply(seq, fetch, sink)
    }

    /// Normalises a fetch into a [`PageCrawl`] and hands it to the sink.
    fn apply(
        &mut self,
        seq: u64,
        f: Fetch<'_>,
        sink: &mut dyn CrawlSink,
    ) -> Result<(), RecordError> {
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
                    self.summary
                        .problem(seq, url.chars().take(200).collect(), p);
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
        match sink.accept(crawl).map_err(RecordError::Sink)? {
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
