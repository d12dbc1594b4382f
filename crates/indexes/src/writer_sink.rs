//! The incremental writer as a sink of crawl files: reading (`ingest`) hands it page
//! crawls, it applies them to a store in batches that commit atomically.

use ingest::{CrawlSink, FileSummary, Progress, ReadOptions, SinkError};
use linkstore::{ApplyStats, PageCrawl, Store};
use std::path::Path;

/// How a crawl file is read into a store by the incremental writer.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub read: ReadOptions,
    /// Crawls per atomic commit.
    pub batch_pages: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            read: ReadOptions::default(),
            batch_pages: 2000,
        }
    }
}

/// Applies crawls with the store's incremental writer, committing every `batch_pages`.
/// Applying a crawl twice changes nothing, so an interrupted ingest is simply run again.
pub struct WriterSink<'s> {
    writer: linkstore::Writer<'s>,
    batch_pages: usize,
}

impl<'s> WriterSink<'s> {
    /// Refused on a snapshot store ([`Store::is_snapshot`]).
    pub fn new(store: &'s Store, batch_pages: usize) -> linkstore::Result<WriterSink<'s>> {
        Ok(WriterSink {
            writer: store.writer()?,
            batch_pages,
        })
    }
}

impl CrawlSink for WriterSink<'_> {
    fn accept(&mut self, crawl: PageCrawl) -> Result<Option<ApplyStats>, SinkError> {
        Ok(Some(self.writer.apply(&crawl)?))
    }

    fn record_done(&mut self) -> Result<(), SinkError> {
        if self.writer.pending_pages() >= self.batch_pages {
            // The file's next crawls are applied while this batch is written.
            self.writer.commit_in_background()?;
        }
        Ok(())
    }

    fn file_done(&mut self) -> Result<(), SinkError> {
        Ok(self.writer.commit()?)
    }
}

/// Reads one crawl file into `store` with the incremental writer.
pub fn ingest_file(
    store: &Store,
    path: &Path,
    opts: &IngestOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> ingest::Result<FileSummary> {
    let mut sink =
        WriterSink::new(store, opts.batch_pages).map_err(|e| ingest::Error::Sink(e.into()))?;
    ingest::read_file(path, &opts.read, &mut sink, on_progress)
}
