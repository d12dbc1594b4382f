//! A root domain whose backlinks all point to one host reads that host's views (format
//! 18): the incremental writer keeps none of the domain's own while that holds, keeps its
//! counters exact, and gives it its own views when a second host gets a link, in a
//! later batch or within one.

use linkstore::build::Table;
use linkstore::{CrawlOutcome, Item, ItemHasher, OutLink, PageCrawl, Store, StoreOptions};
use std::path::Path;

const DAY: i64 = 86_400;
const T0: i64 = 1_735_689_600; // 2025-01-01

/// A crawl of `page` on `day` linking to `targets`, from an address of its own.
fn crawl(page: &str, day: i64, targets: &[&str], ip: u8) -> PageCrawl {
    PageCrawl {
        url: page.to_string(),
        fetched_at: T0 + day * DAY,
        ip: Some(format!("10.1.{ip}.1").parse().unwrap()),
        outcome: CrawlOutcome::Html {
            links: targets
                .iter()
                .map(|t| OutLink {
                    target: t.to_string(),
                    anchor_text: format!("to {t}"),
                    ..Default::default()
                })
                .collect(),
        },
    }
}

/// Forty pages on five domains linking to `www.d.example` (80 backlinks: past the
/// bound below which a host keeps no member rows), then (`day` 1) a page linking
/// elsewhere and three pages linking to `shop.d.example` as well.
fn crawls() -> (Vec<PageCrawl>, Vec<PageCrawl>) {
    let first = (0..40)
        .map(|i| {
            let page = format!("http://s{}.example/p{i}", i % 5);
            crawl(
                &page,
                0,
                &["http://www.d.example/a", "http://www.d.example/b"],
                i,
            )
        })
        .collect();
    // With a batch of one crawl each, the page linking elsewhere is in flight while the
    // first link to `shop` has the host's rows copied.
    let elsewhere = crawl("http://u.example/", 1, &["http://e.example/"], 49);
    let second = std::iter::once(elsewhere)
        .chain((0..3).map(|i| {
            let page = format!("http://t{i}.example/");
            crawl(
                &page,
                1,
                &["http://shop.d.example/", "http://www.d.example/a"],
                50 + i,
            )
        }))
        .collect();
    (first, second)
}

/// Applies each group of crawls as one batch.
fn apply(store: &Store, batches: &[&[PageCrawl]]) {
    let mut w = store.writer().unwrap();
    for batch in batches {
        for c in *batch {
            w.apply(c).unwrap();
        }
        w.commit_in_background().unwrap();
    }
    w.commit().unwrap();
}

/// Rows of `table` under the item key of `item`.
fn rows_of(store: &Store, table: Table, item: &Item) -> usize {
    let key = ItemHasher::new(StoreOptions::default().hash_bits).item_key(item);
    rows_under(store, table, &key).len()
}

/// Rows of `table` whose keys start with `prefix`, in key order.
fn rows_under(store: &Store, table: Table, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rows = Vec::new();
    store
        .read()
        .scan_table(table, |k, v| {
            if k.starts_with(prefix) {
                rows.push((k.to_vec(), v.to_vec()));
            }
        })
        .unwrap();
    rows
}

/// A store under `dir` with `first` applied in two batches, whose domain `d.example`
/// reads the views of `www.d.example`.
fn store_reading_www(dir: &Path, first: &[PageCrawl]) -> Store {
    let store = Store::open(dir.join("a"), &StoreOptions::default()).unwrap();
    apply(&store, &[&first[..4], &first[4..]]);
    let domain = Item::domain("d.example");
    assert_eq!(
        store.read().linked_host(&domain).unwrap().as_deref(),
        Some("www.d.example")
    );
    store
}

/// Applies `all` to fresh stores under `dir` in one batch and one crawl per batch: the
/// same reads of `domain`, and the same rows, as `store`.
fn assert_same_in_any_batches(dir: &Path, all: &[PageCrawl], store: &Store, domain: &Item) {
    let whole = reads(store, domain);
    for (name, batches) in [
        ("one", vec![all]),
        ("each", all.chunks(1).collect::<Vec<_>>()),
    ] {
        let other = Store::open(dir.join(name), &StoreOptions::default()).unwrap();
        apply(&other, &batches);
        assert_eq!(reads(&other, domain), whole, "{name}");
        for table in Table::ALL {
            let rows = |s: &Store| rows_under(s, table, &[]);
            assert_eq!(rows(&other), rows(store), "{name}: {table:?}");
        }
    }
}

/// What a reader gets for the root domain: counters, backlinks, referring domains,
/// anchors and timeline, spelt out.
fn reads(store: &Store, domain: &Item) -> String {
    let read = store.read();
    let mut backlinks = Vec::new();
    read.scan_backlinks(domain, |rec| {
        backlinks.push(format!("{} -> {}", rec.source_url, rec.target_url));
        true
    })
    .unwrap();
    backlinks.sort();
    format!(
        "{:?}\n{backlinks:?}\n{:?}\n{:?}\n{:?}",
        read.counters(domain).unwrap(),
        read.ref_domains(domain, 0, 100).unwrap(),
        read.anchors(domain, 0, 100).unwrap(),
        read.timeline(domain, 0, u32::MAX).unwrap(),
    )
}

#[test]
fn a_domain_reads_its_host_until_a_second_host_gets_a_link() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = crawls();
    let domain = Item::domain("d.example");
    let www = Item::host("www.d.example");

    let store = store_reading_www(tmp.path(), &first);
    for table in [Table::RefDomains, Table::Anchors, Table::Timeline] {
        assert_eq!(rows_of(&store, table, &domain), 0, "{table:?}");
        assert!(rows_of(&store, table, &www) > 0, "{table:?}");
    }
    let counters = store.read().counters(&domain).unwrap().unwrap();
    assert_eq!(counters, store.read().counters(&www).unwrap().unwrap());
    assert_eq!((counters.ref_domains, counters.ext_backlinks), (5, 80));
    assert!(
        counters.ref_ips == 40 && counters.anchor_texts == 2,
        "{counters:?}"
    );
    // Each referring domain counts d.example among its out-domains.
    let source = store.read().counters(&Item::domain("s0.example")).unwrap();
    assert_eq!(source.unwrap().out_domains_external, 1);

    // A second host: the domain's own views from then on, as if it always had them.
    apply(&store, &[&second[..]]);
    assert_eq!(store.read().linked_host(&domain).unwrap(), None);
    assert_eq!(
        rows_of(&store, Table::RefDomains, &domain),
        8,
        "five referring domains of www, three of both"
    );
    let counters = store.read().counters(&domain).unwrap().unwrap();
    assert_eq!((counters.ref_domains, counters.ext_backlinks), (8, 86));
    assert_eq!(counters.ref_ips, 43);

    // The same crawls in one batch (the second host met within it), and one crawl at a
    // time: the same reads.
    let all: Vec<PageCrawl> = first.iter().chain(&second).cloned().collect();
    assert_same_in_any_batches(tmp.path(), &all, &store, &domain);
}

/// A domain reading a host small enough to keep no member rows (format 19): its views
/// and counters are the records', and the copy for a second host gives it the same rows
/// in whatever batches the crawls come.
#[test]
fn a_domain_reading_a_small_host_gets_its_own_views_the_same_in_any_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = crawls();
    let (first, second) = (&first[..10], &second[..]);
    let domain = Item::domain("d.example");
    let www = Item::host("www.d.example");

    let store = store_reading_www(tmp.path(), first);
    for item in [&domain, &www] {
        assert_eq!(rows_of(&store, Table::RefDomains, item), 0, "{item}");
        assert_eq!(store.read().ref_domains(item, 0, 100).unwrap().len(), 5);
    }
    let counters = store.read().counters(&domain).unwrap().unwrap();
    assert_eq!(counters, store.read().counters(&www).unwrap().unwrap());
    assert_eq!((counters.ref_domains, counters.ext_backlinks), (5, 20));
    assert_eq!((counters.ref_ips, counters.anchor_texts), (10, 2));
    let source = store.read().counters(&Item::domain("s0.example")).unwrap();
    assert_eq!(source.unwrap().out_domains_external, 1);

    apply(&store, &[second]);
    assert_eq!(store.read().linked_host(&domain).unwrap(), None);
    assert_eq!(rows_of(&store, Table::RefDomains, &domain), 0);
    assert_eq!(store.read().ref_domains(&domain, 0, 100).unwrap().len(), 8);
    let counters = store.read().counters(&domain).unwrap().unwrap();
    assert_eq!((counters.ref_domains, counters.ext_backlinks), (8, 26));
    assert_eq!(counters.ref_ips, 13);
    let source = store.read().counters(&Item::domain("t0.example")).unwrap();
    assert_eq!(source.unwrap().out_domains_external, 1);

    let all: Vec<PageCrawl> = first.iter().chain(second).cloned().collect();
    assert_same_in_any_batches(tmp.path(), &all, &store, &domain);
}

#[test]
fn a_batch_never_written_leaves_no_class_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, _) = crawls();
    let domain = Item::domain("d.example");
    let store = Store::open(tmp.path().join("a"), &StoreOptions::default()).unwrap();
    {
        let mut w = store.writer().unwrap();
        for c in &first[..4] {
            w.apply(c).unwrap();
        }
        // Dropped before it commits, as an ingest stopped by an error is: the batch,
        // and the classes it gave its domains, are not in the store.
    }
    assert_eq!(store.read().counters(&domain).unwrap(), None);
    apply(&store, &[&first[..]]);

    let fresh = Store::open(tmp.path().join("b"), &StoreOptions::default()).unwrap();
    apply(&fresh, &[&first[..]]);
    assert_eq!(
        store.read().linked_host(&domain).unwrap().as_deref(),
        Some("www.d.example")
    );
    assert_eq!(reads(&store, &domain), reads(&fresh, &domain));
}

#[test]
fn a_domain_whose_links_all_expired_reads_the_host_of_its_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, _) = crawls();
    let domain = Item::domain("d.example");
    let store = Store::open(tmp.path().join("a"), &StoreOptions::default()).unwrap();
    apply(&store, &[&first[..]]);
    let expired = store
        .writer()
        .unwrap()
        .expire_before(linkstore::day_of(T0 + 5 * DAY))
        .unwrap();
    assert_eq!((expired.pages, expired.links), (40, 80));
    assert_eq!(
        store
            .read()
            .counters(&domain)
            .unwrap()
            .unwrap()
            .ext_backlinks,
        0
    );

    let later = [crawl(
        "http://v.example/",
        10,
        &["http://shop.d.example/x"],
        90,
    )];
    apply(&store, &[&later[..]]);
    assert_eq!(
        store.read().linked_host(&domain).unwrap().as_deref(),
        Some("shop.d.example")
    );
    let fresh = Store::open(tmp.path().join("b"), &StoreOptions::default()).unwrap();
    apply(&fresh, &[&later[..]]);
    // Views read as the new host's; counters alike but for the first link's day, which
    // expiry leaves as it was.
    let views = |s: &Store| reads(s, &domain).split_once('\n').unwrap().1.to_string();
    assert_eq!(views(&store), views(&fresh));
    let counters = |s: &Store| s.read().counters(&domain).unwrap().unwrap();
    let (mut expired_since, new) = (counters(&store), counters(&fresh));
    assert_eq!(
        expired_since.first_link_day,
        i64::from(linkstore::day_of(T0))
    );
    expired_since.first_link_day = new.first_link_day;
    assert_eq!(expired_since, new);
    assert_eq!(
        rows_of(&store, Table::Distinct, &domain),
        rows_of(&fresh, Table::Distinct, &domain),
        "the expired host's row is gone"
    );
}

#[test]
fn a_domain_given_views_again_after_expiry_keeps_its_ranked_copies_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let domain = Item::domain("d.example");
    // Its own views from one crawl linking two hosts, all expired; then 300 referring
    // domains on `www` (past the 256 rows that have ranked copies), a link on `shop`
    // (the copy), and one more on `www`: all through one writer.
    let first = [crawl(
        "http://o.example/",
        0,
        &["http://www.d.example/", "http://shop.d.example/"],
        1,
    )];
    let many: Vec<PageCrawl> = (0..300)
        .map(|i| {
            crawl(
                &format!("http://r{i}.example/"),
                10,
                &["http://www.d.example/p"],
                2,
            )
        })
        .collect();
    let second = [crawl(
        "http://t.example/",
        11,
        &["http://shop.d.example/q"],
        3,
    )];
    let more = [crawl(
        "http://u.example/",
        12,
        &["http://www.d.example/p"],
        4,
    )];

    let store = Store::open(tmp.path().join("a"), &StoreOptions::default()).unwrap();
    let mut w = store.writer().unwrap();
    for c in &first {
        w.apply(c).unwrap();
    }
    w.commit().unwrap();
    let expired = w.expire_before(linkstore::day_of(T0 + 5 * DAY)).unwrap();
    assert_eq!(expired.links, 2);
    for batch in [&many[..], &second[..], &more[..]] {
        for c in batch {
            w.apply(c).unwrap();
        }
        w.commit().unwrap();
    }
    drop(w);

    let fresh = Store::open(tmp.path().join("b"), &StoreOptions::default()).unwrap();
    apply(&fresh, &[&many[..], &second[..], &more[..]]);
    let key = ItemHasher::new(StoreOptions::default().hash_bits).item_key(&domain);
    for table in [Table::RefDomains, Table::RefDomainsRanked] {
        let rows = |s: &Store| rows_under(s, table, &key);
        assert_eq!(rows(&store).len(), 302, "{table:?}");
        assert!(rows(&store) == rows(&fresh), "{table:?}");
    }
}

#[test]
fn an_older_crawl_showing_a_second_host_changes_no_class() {
    let tmp = tempfile::tempdir().unwrap();
    let domain = Item::domain("d.example");
    let store = Store::open(tmp.path().join("a"), &StoreOptions::default()).unwrap();
    let newer = crawl("http://p.example/", 5, &["http://www.d.example/a"], 1);
    // Crawled before the page's latest crawl: it adds none of the links it shows.
    let older = crawl(
        "http://p.example/",
        3,
        &["http://www.d.example/a", "http://shop.d.example/b"],
        1,
    );
    apply(&store, &[&[newer][..], &[older][..]]);
    assert_eq!(
        store.read().linked_host(&domain).unwrap().as_deref(),
        Some("www.d.example")
    );
    assert_eq!(rows_of(&store, Table::RefDomains, &domain), 0);
    let counters = store.read().counters(&domain).unwrap().unwrap();
    assert_eq!(counters.ext_backlinks, 1);
}
