//! Ingest throughput (links/s) from gzipped JSON-lines, WARC and WAT files made by the
//! synthetic web generator, to a fully queryable store (orderings, counters and
//! aggregates current), three ways in one run: reading alone (parse, extract and
//! normalise, into a sink that drops the crawls: the share of time the crawl format
//! costs), the bulk build into an empty store, and the incremental writer.
//!
//! `cargo bench -p linkbase-benches --bench ingest`; `LINKBASE_BENCH_PAGES` sets the web
//! size (default 20,000 pages, about 300k links per crawl round, 2 rounds).

use bulkbuild::{build, BuildOptions};
use indexes::{ingest_file, IngestOptions};
use ingest::{read_file, CrawlSink, ReadOptions, SinkError};
use linkbase_benches::bench_dir;
use linkstore::{ApplyStats, PageCrawl, Store, StoreOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;
use webgen::{generate, OutputFormat, WebSpec};

/// Drops every crawl: what reading alone costs.
struct Discard;

impl CrawlSink for Discard {
    fn accept(&mut self, _: PageCrawl) -> Result<Option<ApplyStats>, SinkError> {
        Ok(None)
    }
}

/// Bytes on disk per live stored link, after compaction.
fn bytes_per_link(db: &Path) -> f64 {
    let store = Store::open(db, &StoreOptions::default()).expect("open");
    store.compact().expect("compact");
    let idx = store.read().index_counters().expect("counters");
    store.disk_bytes().expect("disk bytes") as f64
        / (idx.out_links_external + idx.out_links_internal).max(1) as f64
}

fn read_only(files: &[PathBuf]) -> (u64, f64) {
    let started = Instant::now();
    let mut links = 0;
    for f in files {
        let s = read_file(f, &ReadOptions::default(), &mut Discard, &mut |_| {}).expect("read");
        links += s.links_found;
    }
    (links, started.elapsed().as_secs_f64())
}

fn incremental(files: &[PathBuf], db: &Path) -> f64 {
    let _ = std::fs::remove_dir_all(db);
    let store = Store::open(db, &StoreOptions::default()).expect("open");
    let started = Instant::now();
    for f in files {
        ingest_file(&store, f, &IngestOptions::default(), &mut |_| {}).expect("ingest");
    }
    store.flush().expect("flush");
    started.elapsed().as_secs_f64()
}

fn bulk(files: &[PathBuf], db: &Path) -> f64 {
    let _ = std::fs::remove_dir_all(db);
    let started = Instant::now();
    build(db, files, &BuildOptions::default(), &|_| {}).expect("bulk build");
    started.elapsed().as_secs_f64()
}

fn main() {
    let pages: usize = std::env::var("LINKBASE_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for format in [
        OutputFormat::JsonLines,
        OutputFormat::Warc,
        OutputFormat::Wat,
    ] {
        let spec = WebSpec {
            pages,
            domains: pages / 10,
            crawls: 2,
            format,
            ..Default::default()
        };
        let crawl = bench_dir().join(format!("web-{pages}-{format:?}"));
        let generated = generate(&spec, &crawl, &mut |_, _| {}).expect("generate");
        let files = &generated.files;
        let (links, read_secs) = read_only(files);
        let bulk_db = bench_dir().join("ingest-bulk-db");
        let bulk_secs = bulk(files, &bulk_db);
        let inc_db = bench_dir().join("ingest-incremental-db");
        let inc_secs = incremental(files, &inc_db);
        let rate = |secs: f64| links as f64 / secs;
        println!(
            "{format:?} ({links} links, {} crawl bytes): read only {:.0} links/s; bulk build {:.0} links/s ({bulk_secs:.1}s, reading is {:.0}% of it on one core of two); incremental {:.0} links/s ({inc_secs:.1}s); bulk/incremental {:.1}x; bytes on disk per live link: bulk {:.0}, incremental {:.0}",
            generated.bytes,
            rate(read_secs),
            rate(bulk_secs),
            100.0 * read_secs / 2.0 / bulk_secs,
            rate(inc_secs),
            inc_secs / bulk_secs,
            bytes_per_link(&bulk_db),
            bytes_per_link(&inc_db),
        );
    }
}
