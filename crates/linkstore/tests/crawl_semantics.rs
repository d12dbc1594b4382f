//! Crawl semantics (product brief §1.11), orderings, filters, counters and hash-collision
//! safety, on a real RocksDB store in a temporary directory.

use linkstore::{
    parse_day, BacklinkQuery, CrawlOutcome, Item, LinkKind, LostReason, OutLink, PageCrawl, Store,
    StoreOptions,
};

const DAY: i64 = 86_400;
const T0: i64 = 1_735_689_600; // 2025-01-01

fn link(target: &str, text: &str) -> OutLink {
    OutLink {
        target: target.into(),
        anchor_text: text.into(),
        ..Default::default()
    }
}

fn html(url: &str, at: i64, links: Vec<OutLink>) -> PageCrawl {
    PageCrawl {
        url: url.into(),
        fetched_at: at,
        ip: Some("192.0.2.7".parse().unwrap()),
        outcome: CrawlOutcome::Html { links },
    }
}

fn open(bits: u8) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        &StoreOptions {
            hash_bits: bits,
            ..Default::default()
        },
    )
    .unwrap();
    (dir, store)
}

fn apply_all(store: &Store, crawls: &[PageCrawl]) {
    let mut w = store.writer().unwrap();
    for c in crawls {
        w.apply(c).unwrap();
    }
    w.commit().unwrap();
}

fn all_backlinks(store: &Store, item: &str) -> Vec<linkstore::LinkRecord> {
    store
        .read()
        .backlinks(
            &Item::parse(item).unwrap(),
            &BacklinkQuery {
                count: 50_000,
                ..Default::default()
            },
        )
        .unwrap()
}

#[test]
fn links_are_found_seen_again_and_lost() {
    let (_d, store) = open(64);
    let target = "http://t.com/";
    apply_all(
        &store,
        &[
            html(
                "http://a.com/p",
                T0,
                vec![link(target, "T"), link("http://b.org/", "B")],
            ),
            html("http://a.com/p", T0 + 10 * DAY, vec![link(target, "T2")]),
        ],
    );
    let rows = all_backlinks(&store, target);
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r.anchor_text, "T2", "latest crawl's anchor text");
    assert_eq!(r.first_seen, parse_day("2025-01-01").unwrap());
    assert_eq!(r.last_seen, parse_day("2025-01-11").unwrap());
    assert_eq!(r.history.len(), 2);
    assert!(!r.is_deleted());

    let lost = all_backlinks(&store, "b.org");
    assert_eq!(lost.len(), 1);
    assert!(lost[0].is_deleted());
    assert_eq!(lost[0].date_lost, parse_day("2025-01-11").unwrap());
    assert_eq!(lost[0].lost_reason, LostReason::LinkRemoved);

    let c = store
        .read()
        .counters(&Item::parse("b.org").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!((c.ext_backlinks, c.deleted_links, c.ref_domains), (1, 1, 1));
    assert_eq!(c.ref_domains_live, 0);
    let tl = store
        .read()
        .timeline(&Item::parse("b.org").unwrap(), 0, u32::MAX)
        .unwrap();
    assert_eq!(tl.len(), 2);
    assert_eq!((tl[0].found, tl[0].lost), (1, 0));
    assert_eq!((tl[1].found, tl[1].lost), (0, 1));
}

#[test]
fn reingest_is_idempotent_and_older_crawls_never_resurrect() {
    let (_d, store) = open(64);
    let crawls = vec![
        html("http://a.com/p", T0, vec![link("http://t.com/", "x")]),
        html("http://a.com/p", T0 + 5 * DAY, vec![]),
    ];
    apply_all(&store, &crawls);
    let item = Item::parse("t.com").unwrap();
    let before = store.read().counters(&item).unwrap();
    let rows_before = all_backlinks(&store, "t.com");

    apply_all(&store, &crawls);
    assert_eq!(
        store.read().counters(&item).unwrap(),
        before,
        "same file twice"
    );
    assert_eq!(all_backlinks(&store, "t.com"), rows_before);

    // An older crawl showing the link again must not bring it back.
    apply_all(
        &store,
        &[html(
            "http://a.com/p",
            T0 + 2 * DAY,
            vec![link("http://t.com/", "x")],
        )],
    );
    let rows = all_backlinks(&store, "t.com");
    assert!(rows[0].is_deleted());
    assert!(rows[0].history.contains(parse_day("2025-01-03").unwrap()));
    assert_eq!(
        store.read().counters(&item).unwrap().unwrap().deleted_links,
        1
    );

    // A newer crawl that finds it again does.
    apply_all(
        &store,
        &[html(
            "http://a.com/p",
            T0 + 9 * DAY,
            vec![link("http://t.com/", "x")],
        )],
    );
    let rows = all_backlinks(&store, "t.com");
    assert!(!rows[0].is_deleted());
    assert_eq!(rows[0].date_lost, 0);
    assert_eq!(
        store.read().counters(&item).unwrap().unwrap().deleted_links,
        0
    );
}

#[test]
fn gone_and_redirecting_pages_lose_their_links_with_a_reason() {
    let (_d, store) = open(64);
    apply_all(
        &store,
        &[
            html("http://a.com/1", T0, vec![link("http://t.com/", "one")]),
            html("http://a.com/2", T0, vec![link("http://t.com/", "two")]),
            PageCrawl {
                url: "http://a.com/1".into(),
                fetched_at: T0 + DAY,
                ip: None,
                outcome: CrawlOutcome::Gone { status: 410 },
            },
            PageCrawl {
                url: "http://a.com/2".into(),
                fetched_at: T0 + DAY,
                ip: None,
                outcome: CrawlOutcome::Redirect {
                    status: 301,
                    location: "http://new.net/".into(),
                },
            },
            PageCrawl {
                url: "http://a.com/3".into(),
                fetched_at: T0 + DAY,
                ip: None,
                outcome: CrawlOutcome::Failed { status: 503 },
            },
        ],
    );
    let mut reasons: Vec<LostReason> = all_backlinks(&store, "t.com")
        .iter()
        .map(|r| r.lost_reason)
        .collect();
    reasons.sort_by_key(|r| *r as u8);
    assert_eq!(reasons, [LostReason::PageGone, LostReason::PageRedirected]);
    let redirect = all_backlinks(&store, "http://new.net/");
    assert_eq!(redirect.len(), 1);
    assert_eq!(redirect[0].kind, LinkKind::Redirect);
    assert_eq!(redirect[0].redirect_status, 301);
    assert!(
        store.read().page("http://a.com/3").unwrap().is_none(),
        "5xx says nothing"
    );
}

#[test]
fn internal_links_are_outlinks_not_backlinks() {
    let (_d, store) = open(64);
    apply_all(
        &store,
        &[html(
            "http://www.a.com/",
            T0,
            vec![
                link("http://blog.a.com/x", "in"),
                link("http://b.com/", "out"),
            ],
        )],
    );
    assert!(all_backlinks(&store, "blog.a.com").is_empty());
    let out = all_backlinks(&store, "b.com")[0].source_out;
    assert_eq!(
        (out.external, out.internal, out.external_domains),
        (1, 1, 1),
        "the source page's out-links travel with its records"
    );
    let c = store
        .read()
        .counters(&Item::parse("a.com").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!((c.out_links_internal, c.out_links_external), (1, 1));
    assert_eq!(c.out_domains_external, 1);
    assert_eq!(c.ext_backlinks, 0);
    assert_eq!(c.crawled_urls, 1);
}

/// A page on `d{i}.com` linking to the target with TF-neutral records; many domains so
/// the per-domain and per-source caps have something to cut.
fn fan_in(store: &Store, target: &str, domains: usize, pages_per_domain: usize) {
    let mut crawls = Vec::new();
    for d in 0..domains {
        for p in 0..pages_per_domain {
            crawls.push(html(
                &format!("http://www.d{d}.com/p{p}"),
                T0 + (d as i64) * 60,
                vec![
                    OutLink {
                        nofollow: p % 2 == 1,
                        ..link(target, &format!("anchor {}", d % 3))
                    },
                    link(&format!("{target}sub{p}"), "deep"),
                ],
            ));
        }
    }
    apply_all(store, &crawls);
}

#[test]
fn backlink_reads_page_filter_and_cap() {
    let (_d, store) = open(64);
    fan_in(&store, "http://t.com/", 30, 4);
    let item = Item::parse("t.com").unwrap();
    let all = all_backlinks(&store, "t.com");
    assert_eq!(all.len(), 30 * 4 * 2);

    // Paging: From/Count windows concatenate to the full ordering.
    let mut paged = Vec::new();
    for from in (0..all.len()).step_by(7) {
        paged.extend(
            store
                .read()
                .backlinks(
                    &item,
                    &BacklinkQuery {
                        from,
                        count: 7,
                        ..Default::default()
                    },
                )
                .unwrap(),
        );
    }
    assert_eq!(paged, all);

    let one_per_domain = store
        .read()
        .backlinks(
            &item,
            &BacklinkQuery {
                count: 1000,
                max_per_ref_domain: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(one_per_domain.len(), 30);

    let one_per_source = store
        .read()
        .backlinks(
            &item,
            &BacklinkQuery {
                count: 1000,
                max_per_source_url: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(one_per_source.len(), 30 * 4);

    let from_d7 = store
        .read()
        .backlinks(
            &item,
            &BacklinkQuery {
                count: 1000,
                ref_domain: Some("D7.com".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(from_d7.len(), 8);
    assert!(from_d7.iter().all(|r| r.source_url.contains("d7.com")));

    let c = store.read().counters(&item).unwrap().unwrap();
    assert_eq!(c.ext_backlinks, 240);
    assert_eq!(c.ref_domains, 30);
    assert_eq!(
        c.nofollow_links, 60,
        "half the pages mark their first link nofollow"
    );
    assert_eq!(c.ref_ips, 1);
    assert_eq!(c.ref_subnets, 1);
    assert_eq!(c.indexed_urls, 5, "t.com/ and four sub pages");

    let domains = store.read().ref_domains(&item, 0, 100).unwrap();
    assert_eq!(domains.len(), 30);
    assert!(domains.iter().all(|d| d.links == 8));
    let anchors = store.read().anchors(&item, 0, 100).unwrap();
    assert_eq!(anchors[0].text, "deep");
    assert_eq!(anchors[0].ref_domains, 30);
    assert_eq!(anchors.iter().map(|a| a.links).sum::<i64>(), 240);
    assert_eq!(
        anchors
            .iter()
            .find(|a| a.text == "anchor 0")
            .unwrap()
            .ref_domains,
        10
    );
}

#[test]
fn deleted_links_can_be_excluded() {
    let (_d, store) = open(64);
    apply_all(
        &store,
        &[
            html("http://a.com/", T0, vec![link("http://t.com/", "a")]),
            html("http://b.com/", T0, vec![link("http://t.com/", "b")]),
            html("http://b.com/", T0 + DAY, vec![]),
        ],
    );
    let live = store
        .read()
        .backlinks(
            &Item::parse("t.com").unwrap(),
            &BacklinkQuery {
                exclude_deleted: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].source_url, "http://a.com/");
}

/// With 2-bit item hashes nearly every item collides with others; every read must still
/// answer exactly what a 64-bit store answers.
#[test]
fn hash_collisions_never_leak_another_items_links() {
    let (_d1, tiny) = open(2);
    let (_d2, full) = open(64);
    let targets: Vec<String> = (0..12)
        .map(|i| format!("http://www.target{i}.org/"))
        .collect();
    let mut crawls = Vec::new();
    for s in 0..40 {
        let links = targets
            .iter()
            .enumerate()
            .filter(|(i, _)| (s + i) % 3 == 0)
            .map(|(i, t)| link(t, &format!("to {i}")))
            .collect();
        crawls.push(html(&format!("http://src{s}.com/"), T0 + s as i64, links));
    }
    apply_all(&tiny, &crawls);
    apply_all(&full, &crawls);
    let mut items: Vec<String> = targets.clone();
    items.extend((0..12).map(|i| format!("www.target{i}.org")));
    items.extend((0..12).map(|i| format!("target{i}.org")));
    for item in &items {
        let i = Item::parse(item).unwrap();
        let mut a: Vec<String> = all_backlinks(&tiny, item)
            .into_iter()
            .map(|r| r.source_url)
            .collect();
        let mut b: Vec<String> = all_backlinks(&full, item)
            .into_iter()
            .map(|r| r.source_url)
            .collect();
        a.sort();
        b.sort();
        assert!(!b.is_empty());
        assert_eq!(a, b, "backlinks of {item}");
        assert_eq!(
            tiny.read().counters(&i).unwrap(),
            full.read().counters(&i).unwrap(),
            "{item}"
        );
        assert_eq!(
            tiny.read().ref_domains(&i, 0, 100).unwrap(),
            full.read().ref_domains(&i, 0, 100).unwrap()
        );
        assert_eq!(
            tiny.read().anchors(&i, 0, 100).unwrap(),
            full.read().anchors(&i, 0, 100).unwrap()
        );
    }
    assert_eq!(tiny.hash_bits(), 2);
}

/// A link's record is kept once among its backlink rows: whole under its target URL, a
/// 5-byte pointer to that row under the target's host and root domain. Every level
/// still reads every record as the `links` table holds it, through re-crawls that keep,
/// change and lose links, and with 2-bit item hashes.
#[test]
fn a_record_is_kept_once_among_its_backlink_rows_and_read_at_every_level() {
    for bits in [64, 2] {
        let (_d, store) = open(bits);
        let targets = [
            "http://www.t.org/a",
            "http://www.t.org/b",
            "http://blog.t.org/",
        ];
        let page = |s: usize, round: i64| {
            let links = targets
                .iter()
                .enumerate()
                // Round 1 loses page 0's second link and adds one to page 1: the other
                // pages' links are seen again, some with new out-link counts.
                .filter(|&(i, _)| (s + i).is_multiple_of(2) || (round == 1 && s == 1))
                .filter(|&(i, _)| !(round == 1 && s == 0 && i == 2))
                .map(|(i, t)| link(t, &format!("to {i}")))
                .collect();
            html(&format!("http://src{s}.com/"), T0 + round * DAY, links)
        };
        for round in 0..2 {
            apply_all(&store, &(0..60).map(|s| page(s, round)).collect::<Vec<_>>());
        }
        let mut links = Vec::new();
        store.read().scan_links(|r| links.push(r.clone())).unwrap();
        assert!(links.iter().any(|r| r.is_deleted()), "a link was lost");

        let (mut records, mut pointers) = (0usize, 0usize);
        store
            .read()
            .scan_table(linkstore::build::Table::Backlinks, |_, v| {
                if v == [linkstore::BACKLINK_POINTER] {
                    pointers += 1;
                } else {
                    records += 1;
                }
            })
            .unwrap();
        // Levels whose hashes collide share a row; a URL's row always holds the record.
        assert_eq!(records, links.len(), "{bits} bits");
        if bits == 64 {
            assert_eq!(pointers, 2 * links.len());
        } else {
            assert!(pointers > 0 && pointers <= 2 * links.len(), "{pointers}");
        }

        let key = |r: &linkstore::LinkRecord| (r.source_url.clone(), r.target_url.clone());
        for item in targets
            .iter()
            .copied()
            .chain(["www.t.org", "blog.t.org", "t.org"])
        {
            let i = Item::parse(item).unwrap();
            let mut want: Vec<_> = links
                .iter()
                .filter(|r| i.contains_url(&r.target_url))
                .cloned()
                .collect();
            let mut got = all_backlinks(&store, item);
            want.sort_by_key(key);
            got.sort_by_key(key);
            assert!(want.len() >= 30, "{item}: {}", want.len());
            assert_eq!(got, want, "{item}, {bits} bits");
        }
    }
}

#[test]
fn a_store_reopens_with_its_data_and_hash_width() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(
            dir.path(),
            &StoreOptions {
                hash_bits: 8,
                ..Default::default()
            },
        )
        .unwrap();
        apply_all(
            &store,
            &[html("http://a.com/", T0, vec![link("http://t.com/", "x")])],
        );
    }
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    assert_eq!(store.hash_bits(), 8, "fixed at creation");
    assert_eq!(all_backlinks(&store, "t.com").len(), 1);
}

#[test]
fn readers_see_only_what_was_published() {
    let (_dir, store) = open(64);
    let b = Item::parse("b.com").unwrap();
    let backlinks = |s: &Store| {
        s.read()
            .counters(&b)
            .unwrap()
            .map_or(0, |c| c.ext_backlinks)
    };
    apply_all(
        &store,
        &[html("http://a.com/", T0, vec![link("http://b.com/", "x")])],
    );
    assert_eq!(backlinks(&store), 1, "never published: the latest writes");
    store.publish();
    apply_all(
        &store,
        &[html("http://c.com/", T0, vec![link("http://b.com/", "y")])],
    );
    // Every read path shows the published state until the next publish.
    assert_eq!(backlinks(&store), 1);
    assert_eq!(all_backlinks(&store, "b.com").len(), 1);
    assert_eq!(store.read().ref_domains(&b, 0, 10).unwrap().len(), 1);
    assert_eq!(store.read().anchors(&b, 0, 10).unwrap().len(), 1);
    assert!(store.read().page("http://c.com/").unwrap().is_none());
    assert_eq!(store.latest_index_counters().unwrap().ext_backlinks, 2);
    store.publish();
    assert_eq!(backlinks(&store), 2);
    assert_eq!(all_backlinks(&store, "b.com").len(), 2);
    assert!(store.read().page("http://c.com/").unwrap().is_some());
}

#[test]
fn writer_sees_its_own_unpublished_pages_across_batches() {
    // A served store: readers see the published state, but a writer must apply each
    // crawl against what it already wrote, or a page re-crawled in a later batch would
    // count as newly crawled.
    let (_dir, store) = open(64);
    store.publish();
    let page = |at| html("http://a.com/", at, vec![link("http://b.com/", "x")]);
    apply_all(&store, &[page(T0)]);
    apply_all(&store, &[page(T0 + DAY)]);
    store.publish();
    let index = store.read().index_counters().unwrap();
    assert_eq!(index.crawled_urls, 1, "one page crawled twice");
    let b = store
        .read()
        .counters(&Item::parse("b.com").unwrap())
        .unwrap();
    assert_eq!(b.unwrap().ext_backlinks, 1);
    let state = store.read().page("http://a.com/").unwrap().unwrap();
    assert_eq!((state.first_fetch, state.last_fetch), (T0, T0 + DAY));
}

#[test]
fn a_view_outlives_later_publishes_unchanged() {
    let (_dir, store) = open(64);
    let b = Item::parse("b.com").unwrap();
    apply_all(
        &store,
        &[html("http://a.com/", T0, vec![link("http://b.com/", "x")])],
    );
    store.publish();
    let held = store.read();
    apply_all(
        &store,
        &[html("http://c.com/", T0, vec![link("http://b.com/", "y")])],
    );
    store.publish();
    // The old snapshot stays readable and unchanged after it stopped being published,
    // also from another thread, while the new one shows both links.
    let old = std::thread::spawn(move || held.counters(&b).unwrap().unwrap().ext_backlinks)
        .join()
        .unwrap();
    assert_eq!(old, 1);
    let b = Item::parse("b.com").unwrap();
    assert_eq!(store.read().counters(&b).unwrap().unwrap().ext_backlinks, 2);
}

#[test]
fn hosted_domains_follow_the_address_of_each_domains_latest_crawl() {
    for bits in [64, 2] {
        let (_dir, store) = open(bits);
        let at = |url: &str, t: i64, ip: &str| PageCrawl {
            ip: Some(ip.parse().unwrap()),
            ..html(url, t, vec![link("http://t.org/", "x")])
        };
        apply_all(
            &store,
            &[
                at("http://www.a.com/", T0, "192.0.2.7"),
                at("http://blog.a.com/", T0, "192.0.2.7"),
                at("http://b.net/", T0, "192.0.2.7"),
                at("http://c.org/", T0, "192.0.2.99"),
                at("http://d.io/", T0, "2001:db8::1"),
            ],
        );
        let view = store.read();
        let on = |prefix: &str| -> Vec<String> {
            let mut d: Vec<String> = view
                .hosted_domains(prefix, 100)
                .unwrap()
                .into_iter()
                .map(|(d, _, _)| d)
                .collect();
            d.sort();
            d
        };
        assert_eq!(on("192.0.2.7\u{1}"), ["a.com", "b.net"], "bits {bits}");
        assert_eq!(on("192.0.2."), ["a.com", "b.net", "c.org"]);
        assert_eq!(
            view.domain_addresses("a.com").unwrap(),
            [("192.0.2.7".to_string(), 2)]
        );
        let v6 = linkstore::ip_member("2001:db8::1".parse().unwrap());
        assert_eq!(v6, "2001:0db8:0000:0000:0000:0000:0000:0001");
        assert_eq!(on(&v6[..15]), ["d.io"]);
        drop(view);

        // b.net moves: re-crawled from another address, it leaves the old one.
        apply_all(&store, &[at("http://b.net/", T0 + DAY, "198.51.100.1")]);
        let view = store.read();
        let on = |prefix: &str| -> Vec<String> {
            view.hosted_domains(prefix, 100)
                .unwrap()
                .into_iter()
                .map(|(d, _, _)| d)
                .collect()
        };
        assert_eq!(on("192.0.2.7\u{1}"), ["a.com"]);
        assert_eq!(on("198.51.100.1\u{1}"), ["b.net"]);
        assert_eq!(
            view.domain_addresses("b.net").unwrap(),
            [("198.51.100.1".to_string(), 1)]
        );
    }
}

#[test]
fn anchor_queries_page_filter_and_merge_case_variants_exactly() {
    use linkstore::{AnchorFilter, AnchorQuery};
    let (_dir, store) = open(64);
    let mut crawls = Vec::new();
    // "Click Here" and "click here" from the same 5 domains (one row, 5 domains); "Shop!"
    // and "shop" from 3 other domains each; "deep" from 1.
    for i in 0..5 {
        crawls.push(html(
            &format!("http://a{i}.com/"),
            T0,
            vec![link("http://t.com/", "Click Here")],
        ));
        crawls.push(html(
            &format!("http://a{i}.com/2"),
            T0,
            vec![link("http://t.com/", "click here")],
        ));
    }
    for i in 0..3 {
        crawls.push(html(
            &format!("http://b{i}.com/"),
            T0,
            vec![link("http://t.com/", "Shop!")],
        ));
        crawls.push(html(
            &format!("http://c{i}.com/"),
            T0,
            vec![link("http://t.com/", "shop")],
        ));
    }
    crawls.push(html(
        "http://d.com/",
        T0,
        vec![link("http://t.com/", "deep")],
    ));
    apply_all(&store, &crawls);
    let view = store.read();
    let item = Item::parse("t.com").unwrap();
    let q = |from, count, filter, cleaned| AnchorQuery {
        from,
        count,
        filter,
        cleaned,
    };
    let texts = |p: &linkstore::AnchorPage| -> Vec<(String, i64, i64)> {
        p.rows
            .iter()
            .map(|a| (a.text.clone(), a.ref_domains, a.links))
            .collect()
    };
    let all = view.anchor_texts(&item, &q(0, 10, None, false)).unwrap();
    assert_eq!(
        texts(&all),
        [
            ("click here".to_string(), 5, 10),
            ("shop".to_string(), 3, 3),
            ("shop!".to_string(), 3, 3),
            ("deep".to_string(), 1, 1)
        ]
    );
    assert_eq!(all.total, Some(4));
    let page = view.anchor_texts(&item, &q(1, 2, None, false)).unwrap();
    assert_eq!(texts(&page), texts(&all)[1..3]);
    assert_eq!(page.total, Some(4));
    let exact = AnchorFilter::Exact("CLICK HERE".into());
    let one = view
        .anchor_texts(&item, &q(0, 10, Some(exact), false))
        .unwrap();
    assert_eq!(
        (texts(&one), one.total),
        (texts(&all)[..1].to_vec(), Some(1))
    );
    let contains = AnchorFilter::Contains("sho".into());
    let some = view
        .anchor_texts(&item, &q(0, 1, Some(contains), false))
        .unwrap();
    assert_eq!((some.rows.len(), some.total), (1, Some(2)));
    // Cleaned: "shop!" and "shop" merge, their domains a lower bound (here disjoint: 3).
    let cleaned = view.anchor_texts(&item, &q(0, 10, None, true)).unwrap();
    assert_eq!(
        texts(&cleaned),
        [
            ("click here".to_string(), 5, 10),
            ("shop".to_string(), 3, 6),
            ("deep".to_string(), 1, 1)
        ]
    );
}

#[test]
fn referring_domains_of_several_items_carry_each_items_row() {
    use linkstore::{RefDomainOrder, RefDomainQuery};
    let (_dir, store) = open(64);
    let mut crawls = Vec::new();
    // a{i}.com links to t.com i+1 times; the even ones also link to u.com once.
    for i in 0..6 {
        let mut links: Vec<OutLink> = (0..=i)
            .map(|n| link(&format!("http://t.com/{n}"), "x"))
            .collect();
        if i % 2 == 0 {
            links.push(link("http://u.com/", "y"));
        }
        crawls.push(html(&format!("http://a{i}.com/"), T0, links));
    }
    apply_all(&store, &crawls);
    let view = store.read();
    let (t, u) = (Item::parse("t.com").unwrap(), Item::parse("u.com").unwrap());
    let q = RefDomainQuery {
        items: vec![t.clone(), u.clone()],
        depth: 100,
        from: 0,
        count: 100,
        order: vec![
            (RefDomainOrder::Matches, true),
            (RefDomainOrder::MatchedLinks, true),
        ],
        topic: None,
    };
    let page = view.ref_domain_matches(&q).unwrap();
    assert_eq!((page.considered, page.matched), (6, 6));
    let names: Vec<&str> = page.rows.iter().map(|r| r.domain.as_str()).collect();
    assert_eq!(
        names,
        ["a4.com", "a2.com", "a0.com", "a5.com", "a3.com", "a1.com"]
    );
    for r in &page.rows {
        for (i, item) in [&t, &u].into_iter().enumerate() {
            let stored = view
                .ref_domain(item, &r.domain)
                .unwrap()
                .unwrap_or_default();
            assert_eq!(r.per_item[i], stored, "{} {}", r.domain, item.name);
        }
    }
    // Depth bounds each item's candidates; paging walks the same order.
    let shallow = view
        .ref_domain_matches(&RefDomainQuery {
            depth: 1,
            ..q.clone()
        })
        .unwrap();
    assert_eq!(shallow.considered, 2, "t.com's and u.com's strongest");
    let second = view
        .ref_domain_matches(&RefDomainQuery {
            from: 1,
            count: 2,
            ..q.clone()
        })
        .unwrap();
    assert_eq!(
        second
            .rows
            .iter()
            .map(|r| r.domain.as_str())
            .collect::<Vec<_>>(),
        names[1..3]
    );
    // Many items share a bound on the rows read: the depth per item shrinks with the
    // square of the items.
    let many = view
        .ref_domain_matches(&RefDomainQuery {
            items: vec![t.clone(); 100],
            depth: 100_000,
            ..q.clone()
        })
        .unwrap();
    assert_eq!(many.depth, linkstore::MAX_CANDIDATE_ROWS / 10_000);
    assert_eq!(page.depth, 100, "a depth under the bound is kept");
    // No flows computed here: a topic filter matches nothing.
    let topical = view
        .ref_domain_matches(&RefDomainQuery {
            topic: Some("News".into()),
            ..q
        })
        .unwrap();
    assert_eq!((topical.considered, topical.matched), (6, 0));
}

#[test]
fn a_scan_budget_bounds_rows_read_even_when_nothing_matches() {
    let (_dir, store) = open(64);
    let crawls: Vec<PageCrawl> = (0..30)
        .map(|i| {
            html(
                &format!("http://s{i}.com/"),
                T0,
                vec![link("http://t.com/", "x")],
            )
        })
        .collect();
    apply_all(&store, &crawls);
    let view = store.read();
    let item = Item::parse("t.com").unwrap();
    // A referring domain that matches nothing: every row is read to find out.
    let q = |max_scan| BacklinkQuery {
        count: 100,
        ref_domain: Some("nowhere.org".into()),
        max_scan,
        ..Default::default()
    };
    let page = view.backlink_page(&item, &q(Some(10))).unwrap();
    assert!(page.rows.is_empty() && page.budget_spent);
    let page = view.backlink_page(&item, &q(Some(30))).unwrap();
    assert!(
        page.rows.is_empty() && !page.budget_spent,
        "30 rows fit a budget of 30"
    );
    let mut seen = 0;
    let spent = view
        .for_each_backlink(
            &item,
            &BacklinkQuery {
                max_scan: Some(12),
                ..Default::default()
            },
            |_| {
                seen += 1;
                true
            },
        )
        .unwrap();
    assert_eq!((seen, spent), (12, true));
}

#[test]
fn summaries_read_again_through_a_snapshot_are_its_own_and_a_publish_shows_the_new_ones() {
    let (_d, store) = open(64);
    let target = Item::parse("http://t.com/").unwrap();
    let page = |n: usize, at: i64| {
        let links = (0..n)
            .map(|i| link("http://t.com/", &format!("a{i}")))
            .collect();
        html(&format!("http://s{n}.com/p"), at, links)
    };
    let summary = |view: &linkstore::ReadView| {
        let c = view.counters(&target).unwrap().unwrap_or_default();
        let many = view.counters_many(std::slice::from_ref(&target)).unwrap();
        assert_eq!(many[0].unwrap_or_default(), c, "one row, read twice");
        (
            c.ext_backlinks,
            view.page("http://s1.com/p").unwrap().is_some(),
        )
    };
    apply_all(&store, &[page(1, T0)]);
    assert_eq!(store.read().published_id(), None, "nothing published yet");
    store.publish();
    let first = store.read();
    assert!(first.published_id().is_some());
    assert_eq!(first.published_id(), store.read().published_id());
    assert_eq!(summary(&first), (1, true));
    assert_eq!(summary(&first), (1, true), "the same from memory");
    apply_all(&store, &[page(2, T0 + DAY)]);
    // Unpublished writes: the published snapshot's views still show what it holds.
    assert_eq!(summary(&store.read()), (1, true));
    store.publish();
    assert_ne!(store.read().published_id(), first.published_id());
    assert_eq!(
        summary(&store.read()),
        (2, true),
        "a publish shows the new rows"
    );
    assert_eq!(
        summary(&first),
        (1, true),
        "an older view keeps its snapshot's rows"
    );
}

/// Items with more than `RANKED_COPIES_ABOVE` referring domains (or anchors) keep ranked
/// copies of those rows; smaller ones none, read by sorting. The incremental writer
/// gives an item its copies when it grows past the bound and takes them all when
/// expiry shrinks it back, and reads come in the same order either way.
#[test]
fn ranked_copies_follow_an_item_across_the_bound() {
    use linkstore::build::Table;
    let (_d, store) = open(64);
    let n = linkstore::RANKED_COPIES_ABOVE as usize + 6;
    // Domain i links to 1 to 3 of the target's pages, all with anchor `a{i}`.
    let crawl = |i: usize, at: i64| {
        let links = (0..=i % 3)
            .map(|j| link(&format!("http://target.com/p{j}"), &format!("a{i}")))
            .collect();
        html(&format!("http://s{i:03}.org/"), at, links)
    };
    let ranked_rows = |store: &Store| {
        [Table::RefDomainsRanked, Table::AnchorsRanked].map(|t| {
            let mut n = 0;
            store.read().scan_table(t, |_, _| n += 1).unwrap();
            n
        })
    };
    let root = Item::parse("target.com").unwrap();
    // Referring domains as the ranked table orders them: most links, then by name.
    let check_order = |store: &Store, domains: std::ops::Range<usize>| {
        let mut want: Vec<(i64, String)> = domains
            .map(|i| ((i % 3 + 1) as i64, format!("s{i:03}.org")))
            .collect();
        want.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let got: Vec<(i64, String)> = store
            .read()
            .ref_domains(&root, 0, 1_000)
            .unwrap()
            .into_iter()
            .map(|d| (d.links, d.domain))
            .collect();
        assert_eq!(got, want);
        let page: Vec<String> = (store.read().ref_domains(&root, 5, 10).unwrap())
            .into_iter()
            .map(|d| d.domain)
            .collect();
        let want_page: Vec<String> = want.iter().skip(5).take(10).map(|w| w.1.clone()).collect();
        assert_eq!(page, want_page);
        let anchors = store.read().anchors(&root, 0, 1_000).unwrap();
        assert_eq!(anchors.len(), want.len());
        assert!(anchors
            .windows(2)
            .all(|w| (w[0].ref_domains, w[0].links) >= (w[1].ref_domains, w[1].links)));
    };

    // Ten domains crawled early, the rest ten days later, in separate batches.
    apply_all(&store, &(0..10).map(|i| crawl(i, T0)).collect::<Vec<_>>());
    check_order(&store, 0..10);
    assert_eq!(
        ranked_rows(&store),
        [0, 0],
        "small items keep no ranked copies"
    );
    let later: Vec<PageCrawl> = (10..n).map(|i| crawl(i, T0 + 10 * DAY)).collect();
    apply_all(&store, &later);
    check_order(&store, 0..n);
    // The host and page p0 each have n referring domains and anchors; the root domain,
    // whose backlinks all point to that host, reads the host's.
    assert_eq!(ranked_rows(&store), [2 * n, 2 * n]);

    // Expiring the early ten leaves n - 10 (within the bound): every copy goes.
    let stats = store
        .writer()
        .unwrap()
        .expire_before(linkstore::day_of(T0 + 5 * DAY))
        .unwrap();
    assert_eq!(stats.pages, 10, "{stats:?}");
    check_order(&store, 10..n);
    assert_eq!(ranked_rows(&store), [0, 0]);

    // Back above the bound.
    apply_all(
        &store,
        &(0..10).map(|i| crawl(i, T0 + 20 * DAY)).collect::<Vec<_>>(),
    );
    check_order(&store, 0..n);
    assert_eq!(ranked_rows(&store), [2 * n, 2 * n]);
    let c = store.read().counters(&root).unwrap().unwrap();
    assert_eq!((c.ref_domains, c.anchor_texts), (n as i64, n as i64));
}

/// Referring subnets are counted from the referring addresses' rows: a /24 or /48 counts
/// while one of its addresses has a link, across batches (one of them still being written)
/// and expiry; "10.0.1." and "10.0.10." are different subnets.
#[test]
fn referring_subnets_follow_their_addresses() {
    let (_d, store) = open(64);
    let crawl = |source: &str, ip: &str, at: i64| PageCrawl {
        url: source.into(),
        fetched_at: at,
        ip: Some(ip.parse().unwrap()),
        outcome: CrawlOutcome::Html {
            links: vec![link("http://t.com/", "t")],
        },
    };
    let counts = |store: &Store| {
        ["t.com", "http://t.com/"].map(|i| {
            let c = store.read().counters(&Item::parse(i).unwrap()).unwrap();
            let c = c.unwrap_or_default();
            (c.ref_ips, c.ref_subnets)
        })
    };
    let mut w = store.writer().unwrap();
    w.apply(&crawl("http://a.com/", "10.0.1.5", T0)).unwrap();
    w.apply(&crawl("http://c.com/", "10.0.10.1", T0)).unwrap();
    // The next crawls read this batch's subnets while it is written.
    w.commit_in_background().unwrap();
    let later = T0 + 10 * DAY;
    w.apply(&crawl("http://b.com/", "10.0.1.50", later))
        .unwrap();
    w.apply(&crawl("http://d.com/", "2001:db8:1::1", later))
        .unwrap();
    w.apply(&crawl("http://e.com/", "2001:db8:1:ffff::2", later))
        .unwrap();
    w.commit().unwrap();
    drop(w);
    assert_eq!(counts(&store), [(5, 3); 2]);

    // a.com and c.com expire: 10.0.1.0/24 keeps b.com's address, 10.0.10.0/24 goes.
    let stats = store
        .writer()
        .unwrap()
        .expire_before(linkstore::day_of(T0 + 5 * DAY))
        .unwrap();
    assert_eq!(stats.pages, 2, "{stats:?}");
    assert_eq!(counts(&store), [(3, 2); 2]);

    // A second address in the same /48 adds an address, not a subnet.
    apply_all(&store, &[crawl("http://f.com/", "2001:db8:1:2::9", later)]);
    assert_eq!(counts(&store), [(4, 2); 2]);
}

/// A link seen again only notes its referring-domain rows' last seen day; the batch's
/// write reads and moves them. In a batch that also takes the item above the ranked-copy
/// bound, the row's plain and ranked copies both carry the new day, whichever crawl
/// comes first in the batch.
#[test]
fn a_seen_again_day_reaches_ranked_copies_made_in_the_same_batch() {
    let bound = linkstore::RANKED_COPIES_ABOVE as usize;
    let crawl = |i: usize, at: i64| {
        html(
            &format!("http://s{i:03}.org/"),
            at,
            vec![link("http://target.com/p0", &format!("a{i}"))],
        )
    };
    let later = T0 + 10 * DAY;
    for recrawl_first in [true, false] {
        let (_d, store) = open(64);
        apply_all(
            &store,
            &(0..bound - 4).map(|i| crawl(i, T0)).collect::<Vec<_>>(),
        );
        let mut batch: Vec<PageCrawl> = (bound - 4..bound + 6).map(|i| crawl(i, later)).collect();
        let recrawl = crawl(0, later);
        if recrawl_first {
            batch.insert(0, recrawl);
        } else {
            batch.push(recrawl);
        }
        apply_all(&store, &batch);
        for item in ["target.com", "http://target.com/p0"] {
            let item = Item::parse(item).unwrap();
            let view = store.read();
            let plain = view.ref_domain(&item, "s000.org").unwrap().unwrap();
            assert_eq!(plain.last_seen, linkstore::day_of(later), "{item:?}");
            assert_eq!(plain.first_seen, linkstore::day_of(T0), "{item:?}");
            let ranked = view.ref_domains(&item, 0, 1_000).unwrap();
            assert_eq!(ranked.len(), bound + 6);
            let row = ranked.iter().find(|d| d.domain == "s000.org").unwrap();
            assert_eq!(row, &plain, "{item:?}, recrawl first: {recrawl_first}");
            // A domain not crawled again keeps its day.
            let other = ranked.iter().find(|d| d.domain == "s001.org").unwrap();
            assert_eq!(other.last_seen, linkstore::day_of(T0));
        }
    }
}

/// Crawls applied in one batch give the store that one batch per crawl gives: a newer
/// crawl and then an older one of the same page (whose link set the batch holds), a page
/// seen again, one losing a link, and one crawled for the first time.
#[test]
fn one_batch_equals_one_batch_per_crawl() {
    let crawls = [
        html(
            "http://a.com/p",
            T0,
            vec![link("http://t.com/", "x"), link("http://u.org/", "u")],
        ),
        html("http://b.com/", T0, vec![link("http://t.com/x", "bx")]),
        html(
            "http://a.com/p",
            T0 + 10 * DAY,
            vec![link("http://t.com/", "x")],
        ),
        html(
            "http://a.com/p",
            T0 + 5 * DAY,
            vec![link("http://t.com/", "x"), link("http://t.com/y", "y")],
        ),
        html(
            "http://b.com/",
            T0 + 3 * DAY,
            vec![link("http://t.com/x", "bx")],
        ),
        html(
            "http://c.com/",
            T0 + 7 * DAY,
            vec![link("http://t.com/x", "cx")],
        ),
    ];
    let (_d1, one) = open(64);
    apply_all(&one, &crawls);
    let (_d2, each) = open(64);
    for c in &crawls {
        apply_all(&each, std::slice::from_ref(c));
    }
    for item in [
        "t.com",
        "http://t.com/",
        "http://t.com/x",
        "http://t.com/y",
        "u.org",
    ] {
        let parsed = Item::parse(item).unwrap();
        assert_eq!(
            all_backlinks(&one, item),
            all_backlinks(&each, item),
            "{item}"
        );
        let (a, b) = (one.read(), each.read());
        assert_eq!(
            a.counters(&parsed).unwrap(),
            b.counters(&parsed).unwrap(),
            "{item}"
        );
        assert_eq!(
            a.ref_domains(&parsed, 0, 100).unwrap(),
            b.ref_domains(&parsed, 0, 100).unwrap(),
            "{item}"
        );
        assert_eq!(
            a.anchors(&parsed, 0, 100).unwrap(),
            b.anchors(&parsed, 0, 100).unwrap(),
            "{item}"
        );
    }
    // The older crawl added its day to the link the newer one saw again, and its own link
    // only as history, never as live.
    let rows = all_backlinks(&one, "http://t.com/");
    assert!(rows[0].history.contains(linkstore::day_of(T0 + 5 * DAY)));
    assert_eq!(rows[0].last_seen, linkstore::day_of(T0 + 10 * DAY));
    assert!(all_backlinks(&one, "http://t.com/y")
        .iter()
        .all(|r| r.is_deleted()));
}

/// Anchor texts of one referring domain past the bound its row holds
/// (`ANCHORS_IN_ROW`) move out to `distinct` rows and back, and each anchor's
/// referring-domain count stays exact throughout, in one batch or one batch per crawl,
/// texts holding the `\x01` that joins a domain and a text in a `distinct` member.
#[test]
fn anchor_texts_past_the_row_bound_keep_exact_counts_whatever_the_batches() {
    let many = linkstore::ANCHORS_IN_ROW as usize + 6;
    let target = "http://t.com/x";
    let spam = |i: usize, at: i64, text: String| {
        html(
            &format!("http://spam.org/p{i}"),
            at,
            vec![link(target, &text)],
        )
    };
    let text = |i: usize| format!("t\u{1}{i}");
    let mut rounds: Vec<Vec<PageCrawl>> = Vec::new();
    // Past the bound, with another domain sharing four texts.
    let mut first: Vec<PageCrawl> = (0..many).map(|i| spam(i, T0, text(i))).collect();
    first.extend((0..4).map(|i| {
        html(
            &format!("http://other.org/p{i}"),
            T0,
            vec![link(target, &text(i))],
        )
    }));
    rounds.push(first);
    // Ten pages share one text: back to the bound's number, and into the row.
    rounds.push(
        (0..10)
            .map(|i| spam(i, T0 + DAY, "same\u{1}x".to_string()))
            .collect(),
    );
    // Ten new texts: past the bound again.
    rounds.push(
        (0..10)
            .map(|i| spam(i, T0 + 2 * DAY, format!("n\u{1}{i}")))
            .collect(),
    );
    // What each text's referring domains must be after each round.
    let expected: [Vec<(String, i64)>; 3] = [
        (0..many).map(|i| (text(i), 1 + i64::from(i < 4))).collect(),
        (0..many)
            .map(|i| (text(i), i64::from(i >= 10) + i64::from(i < 4)))
            .chain([("same\u{1}x".to_string(), 1)])
            .collect(),
        (0..many)
            .map(|i| (text(i), i64::from(i >= 10) + i64::from(i < 4)))
            .chain([("same\u{1}x".to_string(), 0)])
            .chain((0..10).map(|i| (format!("n\u{1}{i}"), 1)))
            .collect(),
    ];
    let (_d1, one) = open(64);
    let (_d2, each) = open(64);
    for (round, want) in rounds.iter().zip(&expected) {
        apply_all(&one, round);
        for c in round {
            apply_all(&each, std::slice::from_ref(c));
        }
        for store in [&one, &each] {
            let view = store.read();
            for item in ["t.com", target] {
                let item = Item::parse(item).unwrap();
                for (text, domains) in want {
                    let got = view
                        .anchor(&item, text)
                        .unwrap()
                        .map_or(0, |a| a.ref_domains);
                    assert_eq!(got, *domains, "{item:?} {text:?}");
                }
            }
        }
    }
}
