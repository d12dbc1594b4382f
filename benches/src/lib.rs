//! Fixtures shared by the benchmarks: a store with one very hot target, built once and
//! kept under `target/bench-data` between runs.

use linkstore::{CrawlOutcome, OutLink, PageCrawl, Store, StoreOptions, FORMAT_VERSION};
use std::path::PathBuf;
use std::time::Instant;

/// The allocator `linkbase` runs with, in place of the C library's malloc as there
/// (RocksDB's allocations too), for every benchmark binary that links this library. Its
/// options stay mimalloc's defaults: `linkbase` also sets a purge delay per command and
/// keeps transparent huge pages off (`crates/linkbase/src/main.rs`), which these do not.
/// Under the C library's malloc a quarter of the peer suite's in-process backlink reads
/// went to allocating and freeing (`docs/benchmarks.md`, "Reads under the product's
/// allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub const HOT_URL: &str = "http://www.hot-target.com/";

/// Where fixtures live (`LINKBASE_BENCH_DIR` overrides).
pub fn bench_dir() -> PathBuf {
    std::env::var_os("LINKBASE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data"))
}

/// Backlinks of each of the hot store's `small` URLs: as many as a URL may have and keep
/// no member rows (`linkstore::MEMBER_ROWS_ABOVE`), so its views are worked out from them.
/// Each is on a root domain of its own, which (a host and root domain with as many
/// backlinks) keeps none either and reads them through its pointer rows.
pub const SMALL_URL_BACKLINKS: usize = 64;

/// The `n`th of the hot store's URLs with [`SMALL_URL_BACKLINKS`] backlinks.
pub fn small_url(n: usize) -> String {
    format!("http://small{n}.net/")
}

/// Backlinks, referring domains and anchor texts of each of the hot store's `unranked`
/// URLs: as many rows as an item may have and keep no ranked copies
/// (`linkstore::RANKED_COPIES_ABOVE`), so a read sorts them all.
pub const UNRANKED_ROWS: usize = linkstore::RANKED_COPIES_ABOVE as usize;

/// The `n`th of the hot store's URLs with [`UNRANKED_ROWS`] backlinks (one more for the
/// first `links % UNRANKED_ROWS` of them).
pub fn unranked_url(n: usize) -> String {
    format!("http://unranked{n}.net/")
}

/// A store in which `HOT_URL` has `links` backlinks from `links / 20` source domains
/// (20 pages each), every source also linking to one of 1,000 cold targets, a small URL
/// and an unranked one. 10% of the hot links are later deleted. Built on first use, then
/// reused while the storage format stays the same (the format is in its directory's
/// name).
pub fn hot_store(links: usize) -> Store {
    let path = bench_dir().join(format!("hot-{links}-format{FORMAT_VERSION}"));
    let done = path.join("BUILT");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&path);
        let store = Store::open(&path, &StoreOptions::default()).expect("open bench store");
        let started = Instant::now();
        let mut w = store.writer().expect("a new store takes crawls");
        let t0 = 1_735_689_600;
        for i in 0..links {
            let domain = i / 20;
            let url = format!("http://www.src{domain}.org/page{}", i % 20);
            let out = vec![
                OutLink {
                    target: HOT_URL.into(),
                    anchor_text: format!("anchor {}", i % 500),
                    nofollow: i % 7 == 0,
                    ..Default::default()
                },
                OutLink {
                    target: format!("http://cold{}.net/", i % 1000),
                    anchor_text: "cold".into(),
                    ..Default::default()
                },
                // Each `small` URL gets `SMALL_URL_BACKLINKS`, from as many domains.
                OutLink {
                    target: small_url(i % (links / SMALL_URL_BACKLINKS).max(1)),
                    anchor_text: format!("small {}", i % 7),
                    ..Default::default()
                },
                // Each `unranked` URL gets `UNRANKED_ROWS`, from as many domains, each
                // with its own text.
                OutLink {
                    target: unranked_url(i % (links / UNRANKED_ROWS).max(1)),
                    anchor_text: format!("unranked {}", i / (links / UNRANKED_ROWS).max(1)),
                    ..Default::default()
                },
            ];
            let mut crawl = PageCrawl {
                url,
                fetched_at: t0 + (i % 90) as i64 * 86_400,
                ip: Some(std::net::Ipv4Addr::from(0x0a00_0000 + domain as u32).into()),
                outcome: CrawlOutcome::Html { links: out },
            };
            w.apply(&crawl).expect("apply");
            if i % 10 == 0 {
                crawl.fetched_at += 100 * 86_400;
                crawl.outcome = CrawlOutcome::Html { links: Vec::new() };
                w.apply(&crawl).expect("apply");
            }
            if w.pending_pages() >= 5_000 {
                w.commit().expect("commit");
            }
            if i % 100_000 == 0 {
                eprintln!(
                    "building bench store: {i}/{links} ({:.0?})",
                    started.elapsed()
                );
            }
        }
        w.commit().expect("commit");
        drop(w);
        store.compact().expect("compact");
        std::fs::write(&done, b"").expect("mark built");
        eprintln!("bench store built in {:.0?}", started.elapsed());
        return store;
    }
    Store::open(&path, &StoreOptions::default()).expect("open bench store")
}
