//! Ordered backlink reads from a target with >= 1M backlinks (in-process, warm cache).
//! `cargo bench -p linkbase-benches --bench backlinks`; `LINKBASE_BENCH_LINKS` sets the
//! hot target's backlink count (default 1,000,000).

use criterion::{criterion_group, criterion_main, Criterion};
use linkbase_benches::{
    hot_store, small_url, unranked_url, HOT_URL, SMALL_URL_BACKLINKS, UNRANKED_ROWS,
};
use linkstore::{host_of, root_domain, BacklinkQuery, Item};
use std::hint::black_box;

fn backlinks(c: &mut Criterion) {
    let links: usize = std::env::var("LINKBASE_BENCH_LINKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let store = hot_store(links);
    let item = Item::parse(HOT_URL).unwrap();
    let total = store.read().counters(&item).unwrap().unwrap().ext_backlinks;
    assert!(total as usize >= links, "hot target has {total} backlinks");

    let mut g = c.benchmark_group("backlinks");
    let q = |f: fn(&mut BacklinkQuery)| {
        let mut q = BacklinkQuery::default();
        f(&mut q);
        q
    };
    for (name, query) in [
        ("top100", q(|_| {})),
        ("top100_exclude_deleted", q(|q| q.exclude_deleted = true)),
        (
            "top100_one_per_ref_domain",
            q(|q| q.max_per_ref_domain = Some(1)),
        ),
        ("top100_from_10000", q(|q| q.from = 10_000)),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let rows = store.read().backlinks(&item, &query).unwrap();
                assert_eq!(rows.len(), 100);
                black_box(rows)
            })
        });
    }
    // The root domain's rows point to the URL's: each row read is a batched lookup.
    let domain = Item::parse(root_domain(host_of(HOT_URL)).unwrap()).unwrap();
    let top100 = BacklinkQuery::default();
    g.bench_function("domain_top100", |b| {
        b.iter(|| {
            let rows = store.read().backlinks(&domain, &top100).unwrap();
            assert_eq!(rows.len(), 100);
            black_box(rows)
        })
    });
    g.sample_size(20);
    let all = q(|q| q.count = 50_000);
    for (name, item) in [("count50000", &item), ("domain_count50000", &domain)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let rows = store.read().backlinks(item, &all).unwrap();
                assert_eq!(rows.len(), 50_000);
                black_box(rows)
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("aggregates");
    g.bench_function("ref_domains_top100", |b| {
        b.iter(|| black_box(store.read().ref_domains(&item, 0, 100).unwrap()))
    });
    g.bench_function("anchors_top100", |b| {
        b.iter(|| black_box(store.read().anchors(&item, 0, 100).unwrap()))
    });
    // A URL with as many backlinks as keep no rows: read from its backlink records.
    let small = Item::parse(&small_url(0)).unwrap();
    let rows = store.read().ref_domains(&small, 0, 100).unwrap();
    assert_eq!(rows.len(), SMALL_URL_BACKLINKS, "{}", small_url(0));
    g.bench_function("ref_domains_top100_small_url", |b| {
        b.iter(|| black_box(store.read().ref_domains(&small, 0, 100).unwrap()))
    });
    g.bench_function("anchors_top100_small_url", |b| {
        b.iter(|| black_box(store.read().anchors(&small, 0, 100).unwrap()))
    });
    // Its root domain, which reads the views of its one host: both small, so the views
    // come from the host's pointer rows, each resolved to its URL row.
    let small_domain = Item::domain(
        small
            .name
            .trim_start_matches("http://")
            .trim_end_matches('/'),
    );
    let rows = store.read().ref_domains(&small_domain, 0, 100).unwrap();
    assert_eq!(rows.len(), SMALL_URL_BACKLINKS, "{small_domain}");
    g.bench_function("ref_domains_top100_small_domain", |b| {
        b.iter(|| black_box(store.read().ref_domains(&small_domain, 0, 100).unwrap()))
    });
    g.bench_function("anchors_top100_small_domain", |b| {
        b.iter(|| black_box(store.read().anchors(&small_domain, 0, 100).unwrap()))
    });
    // The largest item without ranked copies: all its rows read and sorted. The last
    // unranked URL has exactly `UNRANKED_ROWS` rows (the first ones get one link more
    // when `links` is not a multiple of it).
    let unranked = Item::parse(&unranked_url(links / UNRANKED_ROWS - 1)).unwrap();
    let counters = store.read().counters(&unranked).unwrap().unwrap();
    assert_eq!(counters.ref_domains as usize, UNRANKED_ROWS);
    assert_eq!(counters.anchor_texts as usize, UNRANKED_ROWS);
    g.bench_function("ref_domains_top100_unranked", |b| {
        b.iter(|| black_box(store.read().ref_domains(&unranked, 0, 100).unwrap()))
    });
    g.bench_function("anchors_top100_unranked", |b| {
        b.iter(|| black_box(store.read().anchors(&unranked, 0, 100).unwrap()))
    });
    let items: Vec<Item> = (0..100)
        .map(|i| Item::parse(&format!("http://cold{i}.net/")).unwrap())
        .collect();
    g.bench_function("counters_100_items", |b| {
        b.iter(|| black_box(store.read().counters_many(&items).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, backlinks);
criterion_main!(benches);
