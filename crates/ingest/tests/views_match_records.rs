//! Invariant: every view (counters, referring domains, anchors, timeline) equals what a
//! full scan of the stored backlink records gives, after several crawl rounds in which
//! links appear, are seen again, disappear and come back.

use indexes::{ingest_file, IngestOptions};
use linkstore::{BacklinkQuery, Item, LinkKind, LinkRecord, Store, StoreOptions};
use std::collections::{BTreeMap, BTreeSet};

fn domain(url: &str) -> String {
    let host = linkstore::host_of(url);
    linkstore::root_domain(host).unwrap_or(host).to_string()
}

/// `first_day_exact`: false after links expired, as the first link date never moves
/// later (minima only move on additions).
fn check_item(store: &Store, item: &Item, first_day_exact: bool) {
    let rows: Vec<LinkRecord> = store
        .read()
        .backlinks(
            item,
            &BacklinkQuery {
                count: 50_000,
                ..Default::default()
            },
        )
        .unwrap();
    let c = store.read().counters(item).unwrap().unwrap_or_default();
    let n = |f: &dyn Fn(&LinkRecord) -> bool| rows.iter().filter(|r| f(r)).count() as i64;
    assert_eq!(c.ext_backlinks, rows.len() as i64, "{item}");
    assert_eq!(c.deleted_links, n(&|r| r.is_deleted()), "{item}");
    assert_eq!(c.nofollow_links, n(&|r| r.is_nofollow()), "{item}");
    assert_eq!(c.image_links, n(&|r| r.kind == LinkKind::Image), "{item}");
    assert_eq!(c.frame_links, n(&|r| r.kind == LinkKind::Frame), "{item}");
    assert_eq!(
        c.last_link_day,
        rows.iter()
            .map(|r| i64::from(r.last_seen))
            .max()
            .unwrap_or(0),
        "{item}"
    );
    let first = rows
        .iter()
        .map(|r| i64::from(r.first_seen))
        .min()
        .unwrap_or(0);
    if first_day_exact {
        assert_eq!(c.first_link_day, first, "{item}");
    } else {
        assert!(c.first_link_day <= first, "{item}");
    }

    let mut by_domain: BTreeMap<String, (i64, i64, u32, u32)> = BTreeMap::new();
    for r in &rows {
        let e = by_domain
            .entry(domain(&r.source_url))
            .or_insert((0, 0, u32::MAX, 0));
        e.0 += 1;
        e.1 += i64::from(r.is_deleted());
        e.2 = e.2.min(r.first_seen);
        e.3 = e.3.max(r.last_seen);
    }
    assert_eq!(c.ref_domains, by_domain.len() as i64, "{item}");
    assert_eq!(
        c.ref_domains_live,
        by_domain.values().filter(|v| v.0 > v.1).count() as i64
    );
    let ips: BTreeSet<String> = rows
        .iter()
        .filter_map(|r| r.source_ip.map(linkstore::ip_member))
        .collect();
    let subnets: BTreeSet<&str> = ips.iter().map(|m| linkstore::subnet_of_member(m)).collect();
    assert_eq!(
        (c.ref_ips, c.ref_subnets),
        (ips.len() as i64, subnets.len() as i64),
        "{item}"
    );
    let stored = store.read().ref_domains(item, 0, 1_000_000).unwrap();
    assert_eq!(stored.len(), by_domain.len(), "{item}");
    for d in &stored {
        let e = by_domain[&d.domain];
        let first_seen = if first_day_exact {
            d.first_seen
        } else {
            assert!(d.first_seen <= e.2, "{item} {}", d.domain);
            e.2
        };
        assert_eq!(
            (d.links, d.deleted_links, first_seen, d.last_seen),
            e,
            "{item} {}",
            d.domain
        );
    }
    assert!(
        stored.windows(2).all(|w| w[0].links >= w[1].links),
        "ranked by links"
    );

    let mut by_anchor: BTreeMap<String, (i64, BTreeSet<String>)> = BTreeMap::new();
    for r in &rows {
        let e = by_anchor.entry(r.anchor_text.to_lowercase()).or_default();
        e.0 += 1;
        e.1.insert(domain(&r.source_url));
    }
    let anchors = store.read().anchors(item, 0, 1_000_000).unwrap();
    assert_eq!(anchors.len(), by_anchor.len(), "{item}");
    assert_eq!(c.anchor_texts, by_anchor.len() as i64, "{item}");
    for a in &anchors {
        let (links, domains) = &by_anchor[&a.text];
        assert_eq!(
            (a.links, a.ref_domains),
            (*links, domains.len() as i64),
            "{item} {:?}",
            a.text
        );
    }

    let timeline = store.read().timeline(item, 0, u32::MAX).unwrap();
    let found: i64 = timeline.iter().map(|p| p.found).sum();
    let lost: i64 = timeline.iter().map(|p| p.lost).sum();
    assert_eq!(
        (found, lost),
        (rows.len() as i64, c.deleted_links),
        "{item}"
    );
}

/// Every page's, host's and root domain's `out_domains_external` equals the distinct root
/// domains its live external link records point to: those of the stored records' sources
/// and those of `web` (0 for pages with no record left).
fn check_out_domains(store: &Store, web: &webgen::Web) {
    let mut want: BTreeMap<Item, BTreeSet<String>> = BTreeMap::new();
    store
        .read()
        .scan_links(|r| {
            for item in Item::levels_of_url(&r.source_url) {
                let domains = want.entry(item).or_default();
                if !r.is_internal() && !r.is_deleted() {
                    domains.insert(domain(&r.target_url));
                }
            }
        })
        .unwrap();
    assert!(want.values().any(|d| d.len() > 1));
    for page in 0..web.pages() {
        for item in Item::levels_of_url(&web.url(page)) {
            want.entry(item).or_default();
        }
    }
    for (item, domains) in &want {
        let c = store.read().counters(item).unwrap().unwrap_or_default();
        assert_eq!(c.out_domains_external, domains.len() as i64, "{item}");
    }
}

/// A 3,000-page web crawled four times, ingested into a store in `dir`.
fn four_crawl_rounds(dir: &std::path::Path, opts: IngestOptions) -> (webgen::WebSpec, Store) {
    let spec = webgen::WebSpec {
        pages: 3_000,
        domains: 300,
        crawls: 4,
        ..Default::default()
    };
    let files = webgen::generate(&spec, &dir.join("crawl"), &mut |_, _| {}).unwrap();
    let store = Store::open(dir.join("db"), &StoreOptions::default()).unwrap();
    for f in &files.files {
        ingest_file(&store, f, &opts, &mut |_| {}).unwrap();
    }
    (spec, store)
}

#[test]
fn views_equal_a_scan_of_the_records_after_many_crawl_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, store) = four_crawl_rounds(
        tmp.path(),
        IngestOptions {
            batch_pages: 500,
            ..Default::default()
        },
    );
    let web = webgen::Web::new(spec);
    let mut checked = 0;
    for page in (0..web.pages()).step_by(97) {
        let url = web.url(page);
        let [u, h, d] = Item::levels_of_url(&url);
        for item in [u, h, d] {
            check_item(&store, &item, true);
            checked += 1;
        }
    }
    check_item(&store, &Item::parse(&web.hot_url()).unwrap(), true);
    assert!(checked > 50);
    check_out_domains(&store, &web);
    let hot = store
        .read()
        .counters(&Item::parse(&web.hot_url()).unwrap())
        .unwrap()
        .unwrap();
    assert!(hot.deleted_links > 0 && hot.ext_backlinks > 100, "{hot:?}");
}

#[test]
fn views_equal_a_scan_of_the_records_left_after_the_window_expires() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, store) = four_crawl_rounds(tmp.path(), IngestOptions::default());
    let before = store.read().index_counters().unwrap();
    // Keep the last two crawl rounds.
    let cutoff = linkstore::day_of(spec.start + 2 * spec.crawl_interval_days * 86_400);
    let stats = store.writer().unwrap().expire_before(cutoff).unwrap();
    assert!(stats.links > 0 && stats.pages > 0, "{stats:?}");
    let after = store.read().index_counters().unwrap();
    assert!(after.ext_backlinks < before.ext_backlinks);

    // Nothing older than the window is left, and every view equals what is left.
    let (mut records, mut external, mut urls) = (0, 0, std::collections::HashSet::new());
    store
        .read()
        .scan_links(|r| {
            records += 1;
            external += i64::from(!r.is_internal());
            assert!(r.last_seen >= cutoff, "{r:?}");
            assert!(!r.is_deleted() || r.date_lost >= cutoff, "{r:?}");
            urls.insert(r.target_url.clone());
        })
        .unwrap();
    assert!(records > 0);
    assert_eq!(after.ext_backlinks, external);
    let web = webgen::Web::new(spec);
    let mut crawled = 0;
    for page in 0..web.pages() {
        let url = web.url(page);
        if let Some(p) = store.read().page(&url).unwrap() {
            assert!(linkstore::day_of(p.last_fetch) >= cutoff);
            crawled += 1;
            urls.insert(url);
        }
    }
    assert_eq!(after.crawled_urls, crawled);
    assert_eq!(
        after.indexed_urls,
        urls.len() as i64,
        "URLs found = URLs still referenced"
    );
    for page in (0..web.pages()).step_by(97) {
        for item in Item::levels_of_url(&web.url(page)) {
            check_item(&store, &item, false);
        }
    }
    check_item(&store, &Item::parse(&web.hot_url()).unwrap(), false);
    check_out_domains(&store, &web);
    // Expiring again at the same cutoff changes nothing.
    assert_eq!(
        store.writer().unwrap().expire_before(cutoff).unwrap(),
        Default::default()
    );
    assert_eq!(store.read().index_counters().unwrap(), after);
}

/// Every row of every table, in key order.
fn all_rows(store: &Store) -> Vec<(linkstore::build::Table, Vec<u8>, Vec<u8>)> {
    let mut rows = Vec::new();
    for table in linkstore::build::Table::ALL {
        store
            .read()
            .scan_table(table, |k, v| rows.push((table, k.to_vec(), v.to_vec())))
            .unwrap();
    }
    rows
}

#[test]
fn batches_written_while_the_next_is_applied_give_the_store_one_batch_gives() {
    // Small batches: most crawls are applied while the batch before is still being
    // written, reading its rows from memory.
    let tmp = tempfile::tempdir().unwrap();
    let (_, small) = four_crawl_rounds(
        &tmp.path().join("small"),
        IngestOptions {
            batch_pages: 37,
            ..Default::default()
        },
    );
    let (_, whole) = four_crawl_rounds(
        &tmp.path().join("whole"),
        IngestOptions {
            batch_pages: usize::MAX,
            ..Default::default()
        },
    );
    assert_same_rows(&small, &whole);

    // Each page crawled twice in a row: where a batch ends between the two, the second
    // crawl reads the page's state and link set from the batch still being written.
    let lines = |f: &std::path::Path| -> Vec<String> {
        let gz = flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap());
        std::io::BufRead::lines(std::io::BufReader::new(gz))
            .map(Result::unwrap)
            .collect()
    };
    let crawl = tmp.path().join("small/crawl");
    let url = |line: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["url"].as_str().unwrap().to_string()
    };
    let mut second: BTreeMap<String, String> = lines(&crawl.join("crawl-001.jsonl.gz"))
        .into_iter()
        .map(|l| (url(&l), l))
        .collect();
    let twice = tmp.path().join("twice.jsonl");
    let mut text = String::new();
    let mut pairs = 0;
    for a in lines(&crawl.join("crawl-000.jsonl.gz")) {
        text.push_str(&a);
        text.push('\n');
        if let Some(b) = second.remove(&url(&a)) {
            text.push_str(&b);
            text.push('\n');
            pairs += 1;
        }
    }
    assert!(pairs > 2_000, "{pairs} pages crawled twice");
    std::fs::write(&twice, text).unwrap();
    let ingest = |name: &str, batch_pages: usize| {
        let store = Store::open(tmp.path().join(name), &StoreOptions::default()).unwrap();
        let opts = IngestOptions {
            batch_pages,
            ..Default::default()
        };
        ingest_file(&store, &twice, &opts, &mut |_| {}).unwrap();
        store
    };
    assert_same_rows(
        &ingest("twice-small", 37),
        &ingest("twice-whole", usize::MAX),
    );
}

fn assert_same_rows(a: &Store, b: &Store) {
    let (a, b) = (all_rows(a), all_rows(b));
    assert!(b.len() > 10_000, "{} rows", b.len());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "first differing row");
    }
}
