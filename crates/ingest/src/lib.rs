//! Crawl file reading: WARC (HTML responses and redirects), Common Crawl WAT (`Links`
//! arrays) and JSON-lines crawl records, plain or gzipped (per-record members or one
//! stream), as a stream of [`PageCrawl`]s handed to a [`CrawlSink`]: the store's
//! incremental writer or a bulk build, neither of which this crate knows.
//!
//! Bad input never stops a file: each bad record is skipped and counted, and the
//! [`FileSummary`] says what and where. Only a failing sink ends a file early.
//!
//! Reading is two steps: a [`FileReader`] cuts a file into [`RawRecord`]s, and a
//! [`RecordParser`] turns records into crawls. [`read_file`] runs both in turn; a bulk
//! build cuts a file on one worker and parses its records on every worker, then merges
//! the summaries ([`FileSummary::merge`]).

pub mod html;
pub mod http;
mod jsonl;
mod links;
mod parser;
mod reader;
pub mod time;
pub mod warc;
pub mod wat;

use linkstore::{ApplyStats, PageCrawl};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub use html::{extract_links, HtmlLinks, LinkTag, RawLink};
pub use links::resolve_links;
pub use parser::RecordParser;
pub use reader::{FileReader, RawBody, RawRecord};

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
    /// Ordinal of the record in its file, from 1 ([`RawRecord::seq`]).
    pub record: u64,
    /// Byte offset in the decompressed stream (WARC) or line number (JSON-lines).
    pub at: String,
    pub reason: String,
}

/// What one file contributed, and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    pub(crate) fn new(path: &Path) -> Self {
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

    pub(crate) fn problem(&mut self, record: u64, at: String, reason: String) {
        let group = reason.split(':').next().unwrap_or(&reason).to_string();
        *self.problem_counts.entry(group).or_default() += 1;
        if self.problems.len() < MAX_LISTED_PROBLEMS {
            self.problems.push(Problem { record, at, reason });
        }
    }

    pub(crate) fn bad_record(&mut self, record: u64, at: String, reason: String) {
        self.bad_records += 1;
        self.problem(record, at, reason);
    }

    /// Adds what another part of the same file's reading found: the reader's summary
    /// first, then parsers' in any order. The first problems listed are the file's first
    /// by record, as if one thread had read it; the reader's come first within a record.
    pub fn merge(&mut self, other: FileSummary) {
        self.format = self.format.or(other.format);
        self.records += other.records;
        self.pages += other.pages;
        self.pages_unchanged += other.pages_unchanged;
        self.other_records += other.other_records;
        self.pages_out_of_range += other.pages_out_of_range;
        self.links_found += other.links_found;
        self.links_new += other.links_new;
        self.links_deleted += other.links_deleted;
        self.bad_records += other.bad_records;
        self.bad_links += other.bad_links;
        for (reason, n) in other.problem_counts {
            *self.problem_counts.entry(reason).or_default() += n;
        }
        self.problems.extend(other.problems);
        // Stable: within a record, problems keep the order they were found in.
        self.problems.sort_by_key(|p| p.record);
        self.problems.truncate(MAX_LISTED_PROBLEMS);
        self.truncated = self.truncated.take().or(other.truncated);
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
    let mut reader = FileReader::open(path)?;
    let mut parser = RecordParser::new(path, opts.clone());
    let progress = |reader: &FileReader, parser: &RecordParser| {
        let (bytes_read, bytes_total) = reader.bytes();
        Progress {
            bytes_read,
            bytes_total,
            records: reader.records(),
            links: parser.summary().links_found,
        }
    };
    while let Some(record) = reader.next_record() {
        parser.parse(&record, sink)?;
        on_progress(&progress(&reader, &parser));
        sink.record_done().map_err(Error::Sink)?;
    }
    if reader.format().is_some() {
        sink.file_done().map_err(Error::Sink)?;
    }
    on_progress(&progress(&reader, &parser));
    let mut summary = reader.finish();
    summary.merge(parser.finish());
    Ok(summary)
}
