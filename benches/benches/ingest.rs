//! Ingest throughput (links/s) from gzipped JSON-lines and WARC files made by the
//! synthetic web generator, into a fresh store, to a fully queryable state (orderings,
//! counters and aggregates current).
//!
//! `cargo bench -p linkbase-benches --bench ingest`; `LINKBASE_BENCH_PAGES` sets the web
//! size (default 20,000 pages, about 300k links per crawl round, 2 rounds).

use ingest::{ingest_file, IngestOptions};
use linkbase_benches::bench_dir;
use linkstore::{Store, StoreOptions};
use std::time::Instant;
use webgen::{generate, OutputFormat, WebSpec};

fn main() {
    let pages: usize = std::env::var("LINKBASE_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for format in [OutputFormat::JsonLines, OutputFormat::Warc] {
        let spec = WebSpec {
            pages,
            domains: pages / 10,
            crawls: 2,
            format,
            ..Default::default()
        };
        let crawl = bench_dir().join(format!("web-{pages}-{format:?}"));
        let generated = generate(&spec, &crawl, &mut |_, _| {}).expect("generate");
        let db = bench_dir().join("ingest-db");
        let _ = std::fs::remove_dir_all(&db);
        let store = Store::open(&db, &StoreOptions::default()).expect("open");
        let started = Instant::now();
        let mut links = 0;
        for f in &generated.files {
            let s = ingest_file(&store, f, &IngestOptions::default(), &mut |_| {}).expect("ingest");
            links += s.links_found;
        }
        store.flush().expect("flush");
        let secs = started.elapsed().as_secs_f64();
        store.compact().expect("compact");
        let idx = store.index_counters().expect("counters");
        let bytes = store.disk_bytes().expect("disk bytes");
        println!(
            "ingest {format:?}: {links} links ({} live links stored, {} crawl bytes) in {secs:.1}s = {:.0} links/s; {:.0} bytes on disk per live stored link",
            idx.out_links_external + idx.out_links_internal,
            generated.bytes,
            links as f64 / secs,
            bytes as f64 / (idx.out_links_external + idx.out_links_internal).max(1) as f64,
        );
    }
}
