//! Flow builds over a real store: link farms, seeds, determinism, monotonicity,
//! stability under growth, and what serving sees before, during and after a build.

use flow::{build, parse_seeds, rank, received, scale, Dangling, Graph, RankParams};
use linkstore::{BacklinkQuery, CrawlOutcome, Item, OutLink, PageCrawl, Store, StoreOptions};

const T0: i64 = 1_735_689_600;

fn page(url: &str, links: &[&str]) -> PageCrawl {
    PageCrawl {
        url: url.into(),
        fetched_at: T0,
        ip: None,
        outcome: CrawlOutcome::Html {
            links: links
                .iter()
                .map(|t| OutLink {
                    target: t.to_string(),
                    anchor_text: "x".into(),
                    ..Default::default()
                })
                .collect(),
        },
    }
}

fn apply(store: &Store, pages: &[PageCrawl]) {
    let mut w = store.writer().unwrap();
    for p in pages {
        w.apply(p).unwrap();
    }
    w.commit().unwrap();
}

/// A trusted hub linking to a few sites, a chain away from it, and a link farm: 40 pages
/// on 40 domains all linking each other, nothing linking in from the trusted part.
fn web() -> Vec<PageCrawl> {
    let mut pages = vec![
        page(
            "http://www.trusted.org/",
            &["http://www.good.com/", "http://www.news.net/"],
        ),
        page(
            "http://www.good.com/",
            &["http://www.far.com/", "http://www.trusted.org/"],
        ),
        page("http://www.news.net/", &["http://www.good.com/"]),
        page("http://www.far.com/", &["http://www.farther.com/"]),
    ];
    let farm: Vec<String> = (0..40)
        .map(|i| format!("http://www.farm{i}.biz/"))
        .collect();
    for (i, f) in farm.iter().enumerate() {
        let others: Vec<&str> = farm
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, u)| u.as_str())
            .collect();
        pages.push(page(f, &others));
    }
    pages
}

fn seeds() -> Vec<flow::Seed> {
    parse_seeds("trusted.org\tReference/Education\nnews.net\tNews\n", "test").unwrap()
}

fn built() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    apply(&store, &web());
    build(&store, &seeds(), &RankParams::default(), &mut |_| {}).unwrap();
    (dir, store)
}

fn metrics(store: &Store, item: &str) -> linkstore::ItemMetrics {
    store
        .read()
        .metrics(&Item::parse(item).unwrap())
        .unwrap()
        .unwrap()
}

#[test]
fn a_link_farm_gets_citation_flow_but_no_trust_flow() {
    let (_d, store) = built();
    let farm = metrics(&store, "http://www.farm7.biz/");
    let good = metrics(&store, "http://www.good.com/");
    let far = metrics(&store, "http://www.farther.com/");
    assert!(
        farm.citation_flow > good.citation_flow,
        "{farm:?} vs {good:?}"
    );
    assert_eq!(farm.trust_flow, 0);
    assert!(farm.topics.is_empty());
    assert!(
        good.trust_flow > far.trust_flow && far.trust_flow > 0,
        "{good:?} {far:?}"
    );
    for seed in ["trusted.org", "news.net"] {
        let m = metrics(&store, seed);
        assert!(m.trust_flow > 0, "{seed}: {m:?}");
        assert_eq!(
            m.trust_flow, m.citation_flow,
            "{seed}: all its citation is trusted"
        );
    }
    let topics: Vec<&str> = good.topics.iter().map(|t| t.0.as_str()).collect();
    assert!(
        topics.contains(&"Reference/Education") && topics.contains(&"News"),
        "{topics:?}"
    );
    assert!(good.topics.windows(2).all(|w| w[0].1 >= w[1].1));
}

#[test]
fn backlinks_follow_the_new_trust_flow_and_carry_flow_columns() {
    let (_d, store) = built();
    let rows = store
        .read()
        .backlinks(&Item::parse("good.com").unwrap(), &BacklinkQuery::default())
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].source_flow.trust_flow >= rows[1].source_flow.trust_flow);
    for r in &rows {
        let src = metrics(&store, &r.source_url);
        let tgt = metrics(&store, &r.target_url);
        assert_eq!(
            (r.source_flow.trust_flow, r.source_flow.citation_flow),
            (src.trust_flow, src.citation_flow)
        );
        assert_eq!(
            (r.target_flow.trust_flow, r.target_flow.citation_flow),
            (tgt.trust_flow, tgt.citation_flow)
        );
    }
    assert_eq!(store.generation(), 1);

    // A link ingested after the build is keyed and labelled with current metrics, and a
    // later change of it removes exactly that row.
    apply(
        &store,
        &[PageCrawl {
            fetched_at: T0 + 86_400,
            ..page(
                "http://www.trusted.org/",
                &[
                    "http://www.good.com/",
                    "http://www.news.net/",
                    "http://www.new.io/",
                ],
            )
        }],
    );
    let new = store
        .read()
        .backlinks(&Item::parse("new.io").unwrap(), &BacklinkQuery::default())
        .unwrap();
    assert_eq!(
        new[0].source_flow.trust_flow,
        metrics(&store, "http://www.trusted.org/").trust_flow
    );
    // The links the crawl showed again were rewritten with their targets' metrics, which
    // the writer reads for all of a crawl's targets at once.
    let good = metrics(&store, "http://www.good.com/");
    assert!(good.trust_flow > 0, "{good:?}");
    let again = store
        .read()
        .backlinks(
            &Item::parse("http://www.good.com/").unwrap(),
            &BacklinkQuery::default(),
        )
        .unwrap();
    let again = again
        .iter()
        .find(|r| r.source_url == "http://www.trusted.org/")
        .expect("the link from www.trusted.org");
    assert_eq!(again.last_seen, linkstore::day_of(T0 + 86_400));
    assert_eq!(
        (
            again.target_flow.trust_flow,
            again.target_flow.citation_flow
        ),
        (good.trust_flow, good.citation_flow)
    );
    apply(
        &store,
        &[PageCrawl {
            fetched_at: T0 + 2 * 86_400,
            ..page("http://www.trusted.org/", &["http://www.good.com/"])
        }],
    );
    let rows = store
        .read()
        .backlinks(
            &Item::parse("news.net").unwrap(),
            &BacklinkQuery {
                count: 100,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(rows.len(), 1, "one row, now deleted, not a stale duplicate");
    assert!(rows[0].is_deleted());
}

#[test]
fn builds_are_deterministic_and_a_killed_build_changes_nothing() {
    let (_d1, a) = built();
    let (_d2, b) = built();
    for item in [
        "http://www.good.com/",
        "www.farm3.biz",
        "far.com",
        "trusted.org",
    ] {
        assert_eq!(metrics(&a, item), metrics(&b, item), "{item}");
    }
    // A build that dies before switching: its rows are invisible, then cleared.
    let before = metrics(&a, "good.com");
    {
        let mut u = a.begin_flow_update().unwrap();
        u.put_metrics(
            &Item::parse("good.com").unwrap(),
            &linkstore::ItemMetrics::default(),
        )
        .unwrap();
    }
    assert_eq!(metrics(&a, "good.com"), before);
    assert_eq!(a.generation(), 1);
    build(&a, &seeds(), &RankParams::default(), &mut |_| {}).unwrap();
    assert_eq!(a.generation(), 2);
    assert_eq!(metrics(&a, "good.com"), before);
}

/// A flow build adds its backlink files at the bottom level: no range deletion covers
/// the new generation when they arrive (RocksDB puts a file added under one in level 0),
/// so the generation is not compacted down again. Its metrics and top pages, written
/// through memtables, are rewritten there once it has published. Its backlink files,
/// written once per generation, are compressed harder than the other tables' files.
#[test]
fn a_flow_builds_files_go_to_the_bottom_level() {
    let (dir, store) = built();
    assert_eq!(store.generation(), 1);
    drop(store);
    let opts = rocksdb::Options::default();
    let cfs = rocksdb::DB::list_cf(&opts, dir.path()).unwrap();
    let db = rocksdb::DB::open_cf_for_read_only(&opts, dir.path(), &cfs, false).unwrap();
    let live = db.live_files().unwrap();
    for table in ["backlinks", "metrics", "top_pages"] {
        let files: Vec<&rocksdb::LiveFile> = live
            .iter()
            .filter(|f| f.column_family_name == table)
            .filter(|f| {
                f.start_key
                    .as_deref()
                    .is_some_and(|k| k.first() == Some(&1))
            })
            .collect();
        assert!(!files.is_empty(), "no {table} file of generation 1");
        // RocksDB's default of seven levels: the bottom one is 6.
        for f in files {
            assert_eq!(f.level, 6, "{table}: {} is not at the bottom", f.name);
            // A file records the compression it was written with among its properties.
            let path = dir.path().join(f.name.trim_start_matches('/'));
            let bytes = std::fs::read(&path).unwrap();
            let level_6 = bytes.windows(9).any(|w| w == b" level=6;");
            assert_eq!(
                level_6,
                table == "backlinks",
                "{table}: {} is not at the ZSTD level its table takes",
                f.name
            );
        }
    }
}

#[test]
fn seeds_must_be_in_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    apply(&store, &web());
    let s = parse_seeds("trusted.org\nnowhere.example\n", "s").unwrap();
    let err = build(&store, &s, &RankParams::default(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nowhere.example") && err.contains("line 2"),
        "{err}"
    );
    assert_eq!(store.generation(), 0, "nothing published");
}

/// Deterministic pseudo-random graphs for property checks.
fn random_graph(seed: u64, n: usize, m: usize) -> Vec<(u32, u32)> {
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..m)
        .map(|_| ((next() % n as u64) as u32, (next() % n as u64) as u32))
        .collect()
}

fn citation(edges: &[(u32, u32)], n: usize) -> Vec<f64> {
    let g = Graph::from_edges(n, edges.to_vec());
    let out: Vec<u32> = (0..n).map(|v| g.outdegree(v) as u32).collect();
    let p = RankParams {
        dangling: Dangling::Drop,
        tolerance: 1e-14,
        max_iterations: 2_000,
        ..Default::default()
    };
    rank(&g.transpose(), &out, &vec![1.0; n], &p).scores
}

#[test]
fn adding_links_into_a_page_never_lowers_its_citation_flow() {
    for seed in 1..20u64 {
        let n = 60;
        let mut edges = random_graph(seed, n, 200);
        let before = citation(&edges, n);
        let v = (seed as u32 * 7) % n as u32;
        for extra in 0..5u32 {
            edges.push(((v + 1 + extra * 11) % n as u32, v));
        }
        let after = citation(&edges, n);
        assert!(
            after[v as usize] >= before[v as usize] - 1e-12,
            "seed {seed}"
        );
        assert!(
            scale::citation_flow(received(after[v as usize], 0.85))
                >= scale::citation_flow(received(before[v as usize], 0.85))
        );
    }
}

#[test]
fn an_unrelated_site_changes_nobodys_scores() {
    let n = 80;
    let edges = random_graph(99, n, 300);
    let before = citation(&edges, n);
    // Add a disconnected site of 20 pages linking among themselves.
    let mut grown = edges.clone();
    grown.extend((0..20u32).map(|i| (n as u32 + i, n as u32 + (i + 1) % 20)));
    let after = citation(&grown, n + 20);
    for v in 0..n {
        assert!((after[v] - before[v]).abs() < 1e-9, "node {v}");
        assert_eq!(
            scale::citation_flow(received(after[v], 0.85)),
            scale::citation_flow(received(before[v], 0.85))
        );
    }
}

/// Expiring the window after a flow build removes every backlink row of the expired
/// links: rows are keyed by the source's Trust Flow of the build, not the one stored with
/// the link record when it was written.
#[test]
fn expiry_after_a_flow_build_leaves_no_backlink_rows_behind() {
    let (_dir, store) = built();
    let good = Item::parse("good.com").unwrap();
    let q = BacklinkQuery {
        count: 1000,
        ..Default::default()
    };
    assert!(store.read().backlinks(&good, &q).unwrap().len() >= 2);
    assert!(metrics(&store, "trusted.org").trust_flow > 0);
    // A crawl a year later keeps one page; everything crawled at T0 leaves the window.
    let later = PageCrawl {
        fetched_at: T0 + 365 * 86_400,
        ..page("http://www.other.org/", &["http://www.good.com/"])
    };
    apply(&store, &[later]);
    let cutoff = linkstore::day_of(T0 + 200 * 86_400);
    let stats = store.writer().unwrap().expire_before(cutoff).unwrap();
    assert!(stats.pages >= 44, "{stats:?}");
    let left = store.read().backlinks(&good, &q).unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    let mut rows = 0;
    store
        .read()
        .scan_table(linkstore::build::Table::Backlinks, |_, _| rows += 1)
        .unwrap();
    // good.com's backlinks all point to www.good.com, whose rows it reads.
    let host = store.read().linked_host(&good).unwrap();
    assert_eq!(host.as_deref(), Some("www.good.com"));
    assert_eq!(rows, 2, "one link at its URL and host, no orphan rows");
}

/// After a flow build a page's external links are found by its new Trust Flow (their
/// records are kept only under their targets, in rows keyed by it): a re-crawl keeps a
/// link's history, and a link it lost leaves the window on its own while the page stays.
#[test]
fn a_trusted_pages_links_are_found_again_and_a_lost_one_expires_after_a_flow_build() {
    let (_dir, store) = built();
    let trusted = "http://www.trusted.org/";
    assert!(metrics(&store, trusted).trust_flow > 0);
    let day = |d: i64| linkstore::day_of(T0 + d * 86_400);
    let recrawl = PageCrawl {
        fetched_at: T0 + 100 * 86_400,
        ..page(trusted, &["http://www.good.com/"])
    };
    apply(&store, &[recrawl]);
    let links_of_trusted = || {
        let mut links = Vec::new();
        store
            .read()
            .scan_links(|r| {
                if r.source_url == trusted {
                    links.push(r.clone());
                }
            })
            .unwrap();
        links.sort_by(|a, b| a.target_url.cmp(&b.target_url));
        links
    };
    let links = links_of_trusted();
    assert_eq!(links.len(), 2, "{links:?}");
    let (good, news) = (&links[0], &links[1]);
    assert_eq!((good.first_seen, good.last_seen), (day(0), day(100)));
    assert!(!good.is_deleted());
    assert!(news.is_deleted());
    assert_eq!((news.first_seen, news.date_lost), (day(0), day(100)));

    // Every other page was last crawled on day 0 and leaves with its links.
    let stats = store.writer().unwrap().expire_before(day(50)).unwrap();
    assert_eq!(stats.pages as usize, web().len() - 1, "{stats:?}");
    let links = links_of_trusted();
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].target_url, "http://www.good.com/");
    let mut news_rows = 0;
    let news_hash = linkstore::ItemHasher::new(64).hash(linkstore::Level::RootDomain, "news.net");
    store
        .read()
        .scan_table(linkstore::build::Table::Backlinks, |k, _| {
            news_rows += usize::from(k[1..9] == news_hash.to_be_bytes());
        })
        .unwrap();
    assert_eq!(news_rows, 0, "the lost link's backlink rows go with it");
}

/// A site of several pages with different inbound links, on a store whose item hashes
/// keep `hash_bits` bits (2: every site collides with others).
fn site_web(hash_bits: u8) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        hash_bits,
        ..Default::default()
    };
    let store = Store::open(dir.path(), &options).unwrap();
    let mut pages = web();
    pages.push(page(
        "http://www.trusted.org/links.html",
        &["http://www.good.com/a.html", "http://blog.good.com/"],
    ));
    pages.push(page(
        "http://www.news.net/today.html",
        &["http://www.good.com/b.html"],
    ));
    pages.push(page(
        "http://www.farm3.biz/x.html",
        &["http://www.good.com/c.html"],
    ));
    apply(&store, &pages);
    build(&store, &seeds(), &RankParams::default(), &mut |_| {}).unwrap();
    (dir, store)
}

#[test]
fn a_sites_pages_are_listed_by_trust_flow_then_citation_flow() {
    for bits in [64, 2] {
        let (_dir, store) = site_web(bits);
        // Twice: a second build replaces the first one's list.
        build(&store, &seeds(), &RankParams::default(), &mut |_| {}).unwrap();
        let view = store.read();
        let site = Item::parse("good.com").unwrap();
        let (pages, total) = view.top_pages(&site, 0, 100, 1000).unwrap();
        let urls: Vec<&str> = pages.iter().map(|p| p.url.as_str()).collect();
        let mut expected = vec![
            "http://blog.good.com/",
            "http://www.good.com/",
            "http://www.good.com/a.html",
            "http://www.good.com/b.html",
            "http://www.good.com/c.html",
        ];
        let mut sorted = urls.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected, "hash bits {bits}");
        assert_eq!(total, Some(5));
        let ranks: Vec<(u8, u8)> = pages
            .iter()
            .map(|p| (p.flow.trust_flow, p.flow.citation_flow))
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "{ranks:?}");
        for p in &pages {
            let m = view.metrics(&Item::url(p.url.clone())).unwrap().unwrap();
            assert_eq!(
                (m.trust_flow, m.citation_flow),
                ranks[urls.iter().position(|u| *u == p.url).unwrap()]
            );
        }
        // The page linked from the trusted hub outranks the one linked from the farm.
        let pos = |u: &str| urls.iter().position(|x| *x == u).unwrap();
        assert!(pos("http://www.good.com/a.html") < pos("http://www.good.com/c.html"));
        // A host lists only its own pages; paging walks the same order.
        let (blog, _) = view
            .top_pages(&Item::parse("blog.good.com").unwrap(), 0, 100, 1000)
            .unwrap();
        assert_eq!(blog.len(), 1);
        let (second, _) = view.top_pages(&site, 1, 2, 1000).unwrap();
        assert_eq!(second, pages[1..3].to_vec());
        // Counting stops at the limit.
        assert_eq!(view.top_pages(&site, 0, 1, 2).unwrap().1, None);
    }
}

/// Every URL, host and root domain the pages of `web` mention.
fn items_of(pages: &[PageCrawl]) -> Vec<Item> {
    let mut items = std::collections::BTreeSet::new();
    for p in pages {
        let CrawlOutcome::Html { links } = &p.outcome else {
            continue;
        };
        for url in std::iter::once(&p.url).chain(links.iter().map(|l| &l.target)) {
            let host = linkstore::host_of(url).to_string();
            items.insert(Item::url(url.clone()));
            items.insert(Item::domain(
                linkstore::root_domain(&host).unwrap_or(&host).to_string(),
            ));
            items.insert(Item::host(host));
        }
    }
    items.into_iter().collect()
}

#[test]
fn trust_flow_never_exceeds_citation_flow_nor_a_topic_trust_flow() {
    let (_d, store) = built();
    let mut trusted = 0;
    for item in items_of(&web()) {
        let m = store.read().metrics(&item).unwrap().unwrap();
        assert!(m.trust_flow <= m.citation_flow, "{item:?}: {m:?}");
        assert!(
            m.topics.iter().all(|t| t.1 <= m.trust_flow),
            "{item:?}: {m:?}"
        );
        trusted += usize::from(m.trust_flow > 0);
    }
    assert!(trusted >= 10, "trust reaches the trusted part: {trusted}");
}

#[test]
fn an_unrelated_site_changes_nobodys_published_values() {
    let (_d, store) = built();
    let dir = tempfile::tempdir().unwrap();
    let grown = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let mut pages = web();
    pages.extend((0..20).map(|i| {
        page(
            &format!("http://www.elsewhere.info/{i}"),
            &[&format!("http://www.elsewhere.info/{}", (i + 1) % 20)],
        )
    }));
    apply(&grown, &pages);
    build(&grown, &seeds(), &RankParams::default(), &mut |_| {}).unwrap();
    for item in items_of(&web()) {
        assert_eq!(
            store.read().metrics(&item).unwrap(),
            grown.read().metrics(&item).unwrap(),
            "{item:?}"
        );
    }
}

/// A site reached mostly through the News seed and a little through the Sports seed
/// shows News above Sports; a site only the Sports seed links to shows Sports at its
/// Trust Flow and News only for the part of the Sports seed's citation News gave it.
#[test]
fn topics_follow_the_trust_that_reaches_an_item() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let mut sports_links: Vec<String> = (0..30)
        .map(|i| format!("http://www.club{i}.com/"))
        .collect();
    sports_links.push("http://www.target.com/".into());
    let sports_links: Vec<&str> = sports_links.iter().map(String::as_str).collect();
    apply(
        &store,
        &[
            page(
                "http://www.news.org/",
                &["http://www.target.com/", "http://www.sports.org/"],
            ),
            page("http://www.sports.org/", &sports_links),
            page("http://www.fan.net/", &["http://www.news.org/"]),
        ],
    );
    let seeds = parse_seeds("news.org\tNews\nsports.org\tSports\n", "test").unwrap();
    build(&store, &seeds, &RankParams::default(), &mut |_| {}).unwrap();
    let target = metrics(&store, "target.com");
    let topic =
        |m: &linkstore::ItemMetrics, name: &str| m.topics.iter().find(|t| t.0 == name).map(|t| t.1);
    let (news, sports) = (topic(&target, "News"), topic(&target, "Sports"));
    assert!(news > sports && sports > Some(0), "{target:?}");
    assert_eq!(
        news,
        Some(target.trust_flow),
        "all of it passed the News seed"
    );
    let club = metrics(&store, "club3.com");
    assert_eq!(topic(&club, "Sports"), Some(club.trust_flow), "{club:?}");
    let news = topic(&club, "News");
    assert!(news < topic(&club, "Sports") && news > Some(0), "{club:?}");
}
