//! URLs (format 12), hosts and root domains (format 19) with few backlinks keep no
//! referring-domain, anchor or address rows: readers work them out from the backlinks,
//! the incremental writer keeps the counters exact, and an item that crosses the bound
//! gains or loses all its rows.

use linkstore::build::Table;
use linkstore::{
    CrawlOutcome, Item, ItemHasher, OutLink, PageCrawl, Store, StoreOptions, MEMBER_ROWS_ABOVE,
};

const DAY: i64 = 86_400;
const T0: i64 = 1_735_689_600; // 2025-01-01
const HOT: &str = "http://t.org/hot";
const QUIET: &str = "http://t.org/quiet";

/// `n` pages on their own domains (`prefix0.com` ...) crawled on `day`, each linking to
/// [`HOT`], and the first ten also to [`QUIET`] (from ten addresses in seven subnets).
fn pages(prefix: &str, n: usize, day: i64) -> Vec<PageCrawl> {
    linking_pages(prefix, n, day, |_| HOT.into(), QUIET)
}

/// `n` pages on their own domains crawled on `day`, page `i` linking to `hot(i)` with
/// one of five anchor texts, and the first ten also to `quiet` with one of three.
fn linking_pages(
    prefix: &str,
    n: usize,
    day: i64,
    hot: impl Fn(usize) -> String,
    quiet: &str,
) -> Vec<PageCrawl> {
    (0..n)
        .map(|i| {
            let mut links = vec![OutLink {
                target: hot(i),
                anchor_text: format!("text {}", i % 5),
                ..Default::default()
            }];
            if i < 10 {
                links.push(OutLink {
                    target: quiet.into(),
                    anchor_text: format!("quiet {}", i % 3),
                    ..Default::default()
                });
            }
            PageCrawl {
                url: format!("http://{prefix}{i}.com/"),
                fetched_at: T0 + day * DAY,
                ip: Some(format!("10.0.{}.{}", i % 7, i).parse().unwrap()),
                outcome: CrawlOutcome::Html { links },
            }
        })
        .collect()
}

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, &StoreOptions::default()).unwrap()
}

/// Applies `crawls`, committing every `per_batch` in the background (the next batch is
/// applied while the last is written).
fn apply(store: &Store, crawls: &[PageCrawl], per_batch: usize) {
    apply_batches(store, crawls.chunks(per_batch), true);
}

/// Applies each of `batches` and commits it: in the background (`pipelined`: the next is
/// applied while it is written) or waiting for its write.
fn apply_batches<'c>(
    store: &Store,
    batches: impl IntoIterator<Item = &'c [PageCrawl]>,
    pipelined: bool,
) {
    let mut w = store.writer().unwrap();
    for batch in batches {
        for c in batch {
            w.apply(c).unwrap();
        }
        if pipelined {
            w.commit_in_background().unwrap();
        } else {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
}

const MEMBER_TABLES: [Table; 5] = [
    Table::Distinct,
    Table::RefDomains,
    Table::Anchors,
    Table::RefDomainsRanked,
    Table::AnchorsRanked,
];

/// Rows of the member tables under `item`'s key (of `distinct`, the address and anchor
/// text kinds 1 and 3: a host's out-domains are its own).
fn item_member_rows(store: &Store, item: &Item) -> usize {
    let prefix = ItemHasher::new(64).item_key(item);
    let mut n = 0;
    for table in MEMBER_TABLES {
        store
            .read()
            .scan_table(table, |k, _| {
                let member = table != Table::Distinct || matches!(k.get(prefix.len()), Some(1 | 3));
                n += usize::from(k.starts_with(&prefix) && member);
            })
            .unwrap();
    }
    n
}

fn member_rows(store: &Store, url: &str) -> usize {
    item_member_rows(store, &Item::url(url))
}

fn all_rows(store: &Store) -> Vec<(Table, Vec<u8>, Vec<u8>)> {
    let mut rows = Vec::new();
    for table in Table::ALL {
        store
            .read()
            .scan_table(table, |k, v| {
                // Timeline days that sum to nothing stay as merge operands; readers skip them.
                if !(table == Table::Timeline && v == [1, 0, 0]) {
                    rows.push((table, k.to_vec(), v.to_vec()));
                }
            })
            .unwrap();
    }
    rows
}

type Views = (
    Vec<linkstore::RefDomain>,
    Vec<linkstore::AnchorText>,
    Option<linkstore::RefDomain>,
    Option<linkstore::AnchorText>,
    (i64, i64, i64),
    (i64, i64, i64),
);

/// What a reader sees of a URL's member views.
fn views(store: &Store, url: &str) -> Views {
    views_of(store, &Item::url(url))
}

/// What a reader sees of an item's member views.
fn views_of(store: &Store, item: &Item) -> Views {
    let read = store.read();
    let c = read.counters(item).unwrap().unwrap_or_default();
    (
        read.ref_domains(item, 0, 1_000).unwrap(),
        read.anchors(item, 0, 1_000).unwrap(),
        read.ref_domain(item, "hot3.com").unwrap(),
        read.anchor(item, "text 2").unwrap(),
        (c.ext_backlinks, c.ref_domains, c.ref_domains_live),
        (c.ref_ips, c.ref_subnets, c.anchor_texts),
    )
}

#[test]
fn a_url_crossing_the_row_bound_gains_and_loses_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let early = pages("early", 40, 0);
    let late = pages("hot", 40, 10);
    let all: Vec<PageCrawl> = early.iter().chain(&late).cloned().collect();

    // Batches of 7 crawls: HOT crosses the bound in one of them, with the batch before
    // still being written.
    let pipelined = open(&tmp.path().join("pipelined"));
    apply(&pipelined, &all, 7);
    let whole = open(&tmp.path().join("whole"));
    apply(&whole, &all, all.len());
    assert_eq!(all_rows(&pipelined), all_rows(&whole));

    const { assert!(80 > MEMBER_ROWS_ABOVE && 20 <= MEMBER_ROWS_ABOVE) };
    assert!(member_rows(&whole, HOT) > 0);
    assert_eq!(member_rows(&whole, QUIET), 0);
    let item = Item::url(QUIET);
    let read = whole.read();
    let quiet = read.ref_domains(&item, 0, 100).unwrap();
    assert_eq!(quiet.len(), 20, "{quiet:?}");
    assert_eq!(read.anchors(&item, 0, 100).unwrap().len(), 3);
    let c = read.counters(&item).unwrap().unwrap();
    assert_eq!((c.ref_domains, c.ref_ips, c.anchor_texts), (20, 10, 3));
    assert_eq!(c.ref_subnets, 7);

    // The early pages leave the window: HOT keeps 40 backlinks, and no rows.
    pipelined
        .writer()
        .unwrap()
        .expire_before(linkstore::day_of(T0 + 5 * DAY))
        .unwrap();
    assert_eq!(member_rows(&pipelined, HOT), 0);
    let only_late = open(&tmp.path().join("late"));
    apply(&only_late, &late, 7);
    assert_eq!(views(&pipelined, HOT), views(&only_late, HOT));
    assert_eq!(views(&pipelined, QUIET), views(&only_late, QUIET));
    assert_eq!(views(&pipelined, QUIET).0.len(), 10);
}

/// `n` pages on their own domains crawled on `day`, each linking to one of seven pages
/// of `www.t.org` (a few backlinks each), and the first ten also to `shop.t.org`.
fn site_pages(prefix: &str, n: usize, day: i64) -> Vec<PageCrawl> {
    let www = |i: usize| format!("http://www.t.org/p{}", i % 7);
    linking_pages(prefix, n, day, www, "http://shop.t.org/")
}

#[test]
fn hosts_and_root_domains_crossing_the_row_bound_gain_and_lose_their_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let early = site_pages("early", 40, 0);
    let late = site_pages("hot", 40, 10);
    let all: Vec<PageCrawl> = early.iter().chain(&late).cloned().collect();
    let (www, shop, domain) = (
        Item::host("www.t.org"),
        Item::host("shop.t.org"),
        Item::domain("t.org"),
    );

    let pipelined = open(&tmp.path().join("pipelined"));
    apply(&pipelined, &all, 7);
    let whole = open(&tmp.path().join("whole"));
    apply(&whole, &all, all.len());
    assert_eq!(all_rows(&pipelined), all_rows(&whole));

    // 80 backlinks on `www`, 100 on the domain: rows; 20 on `shop`: none, but views.
    assert!(item_member_rows(&whole, &www) > 0);
    assert!(item_member_rows(&whole, &domain) > 0);
    assert_eq!(item_member_rows(&whole, &shop), 0);
    assert_eq!(
        item_member_rows(&whole, &Item::url("http://www.t.org/p0")),
        0
    );
    let read = whole.read();
    assert_eq!(read.ref_domains(&shop, 0, 100).unwrap().len(), 20);
    assert_eq!(read.anchors(&shop, 0, 100).unwrap().len(), 3);
    assert_eq!(
        read.ref_domain(&shop, "hot3.com").unwrap().unwrap().links,
        1
    );
    let c = read.counters(&shop).unwrap().unwrap();
    assert_eq!((c.ref_domains, c.ref_ips, c.anchor_texts), (20, 10, 3));
    // Each referring domain counts t.org among its out-domains once.
    let source = read.counters(&Item::domain("hot3.com")).unwrap().unwrap();
    assert_eq!(source.out_domains_external, 1);

    // The early pages leave the window: 40 backlinks on `www` and 50 on the domain, and
    // no rows; every view as if the late pages were all there ever was.
    pipelined
        .writer()
        .unwrap()
        .expire_before(linkstore::day_of(T0 + 5 * DAY))
        .unwrap();
    for item in [&www, &shop, &domain] {
        assert_eq!(item_member_rows(&pipelined, item), 0, "{item}");
    }
    let only_late = open(&tmp.path().join("late"));
    apply(&only_late, &late, 7);
    for item in [&www, &shop, &domain] {
        assert_eq!(
            views_of(&pipelined, item),
            views_of(&only_late, item),
            "{item}"
        );
    }
    assert_eq!(views_of(&pipelined, &domain).0.len(), 40);
    let out_domains = |s: &Store, d: &str| {
        let c = s.read().counters(&Item::domain(d)).unwrap().unwrap();
        c.out_domains_external
    };
    assert_eq!(out_domains(&pipelined, "early3.com"), 0);
    assert_eq!(out_domains(&pipelined, "hot3.com"), 1);
}

/// A host and its root domain grow past the bound in a batch still being written when the
/// next batches change them: re-crawls that drop, change or keep their links, new links, and
/// then so many that they grow too far to be settled from their records again, and the
/// batch after waits and finds them large. Every row is as if each batch had waited for
/// the one before, or all came in one.
#[test]
fn items_grown_past_the_bound_by_the_batch_in_flight_keep_exact_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let address = |net: u8, i: usize| Some(std::net::Ipv4Addr::new(192, 168, net, i as u8).into());
    let mut first = site_pages("a", 70, 0);
    for (i, page) in first.iter_mut().enumerate() {
        page.ip = address(0, i);
    }
    // Re-crawled from new addresses: `a15`'s old one goes with its record's change.
    let mut second: Vec<PageCrawl> = first[..20]
        .iter()
        .enumerate()
        .map(|(i, page)| {
            let target = if i < 10 {
                "http://elsewhere.net/"
            } else {
                "http://www.t.org/p1"
            };
            PageCrawl {
                fetched_at: T0 + DAY,
                ip: address(1, i),
                outcome: CrawlOutcome::Html {
                    links: vec![OutLink {
                        target: target.into(),
                        anchor_text: format!("changed {i}"),
                        ..Default::default()
                    }],
                },
                ..page.clone()
            }
        })
        .collect();
    // Seen again, unchanged.
    second.extend(first[20..30].iter().map(|page| PageCrawl {
        fetched_at: T0 + DAY,
        ..page.clone()
    }));
    second.extend(site_pages("b", 20, 1));
    let third = site_pages("c", 200, 2);
    // Past the bound for grown items: this batch waits, and finds them large.
    let fourth = site_pages("d", 5, 3);
    let batches = [&first[..], &second[..], &third[..], &fourth[..]];
    const { assert!(70 > MEMBER_ROWS_ABOVE && 290 > 4 * MEMBER_ROWS_ABOVE) };

    let pipelined = open(&tmp.path().join("pipelined"));
    apply_batches(&pipelined, batches, true);
    let waited = open(&tmp.path().join("waited"));
    apply_batches(&waited, batches, false);
    let whole = open(&tmp.path().join("whole"));
    let all: Vec<PageCrawl> = batches.concat();
    apply(&whole, &all, all.len());
    let rows = all_rows(&whole);
    assert_eq!(all_rows(&waited), rows);
    assert_eq!(all_rows(&pipelined), rows);

    let (www, domain) = (Item::host("www.t.org"), Item::domain("t.org"));
    assert!(item_member_rows(&whole, &www) > 0);
    let read = whole.read();
    let c = read.counters(&www).unwrap().unwrap();
    // 295 pages: ten dropped their links, nine moved theirs to `p1` (the tenth had it
    // there already), with `changed` texts.
    assert_eq!((c.ext_backlinks, c.deleted_links), (304, 19));
    assert_eq!((c.ref_domains, c.ref_domains_live), (295, 285));
    assert_eq!(c.anchor_texts, 5 + 10);
    assert_eq!(c.ref_ips, 70 - 1 + 10 + 200);
    assert_eq!(views_of(&pipelined, &domain), views_of(&whole, &domain));
}
