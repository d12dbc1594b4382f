//! A historic build hands its flow build the graph and the backlink rows its bulk build
//! kept, so backlinks are written once, in their final order. The snapshot it makes
//! holds exactly the rows of a bulk build without writer-only rows followed by a flow
//! build over the store: every table, with 1 and 2 workers, and with 2-bit (colliding)
//! item hashes. Those are the rows of a bulk build with them, less the writer's rows and
//! the views of root domains that read their one linked host's, with records that leave
//! their source fields to their source page's row (every item and link reads the same
//! from both, also after flow builds from other seeds); and a snapshot takes no crawl
//! one by one.

use bulkbuild::BuildOptions;
use flow::{parse_seeds, RankParams, Seed};
use indexes::{build_historic, DataDir, HistoricBuild, IndexKind};
use linkstore::{
    build::Table, row_flow_edges, source_row_url, url_hash, BacklinkQuery, Item, PageState,
    RefDomain, Store, StoreOptions, ALL_CFS, LINK_AT_TARGET, MAX_BACKLINK_COUNT,
    MEMBER_ROW_VERSION, REF_DOMAIN_ROW_VERSION,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

type Rows = Vec<(&'static str, Vec<u8>, Vec<u8>)>;

/// Every row of every column family but `meta` (which records when the build ran).
fn rows(store: &Store) -> Rows {
    let mut out = Vec::new();
    for &cf in ALL_CFS.iter().filter(|&&cf| cf != "meta") {
        store
            .read()
            .scan_column_family(cf, |k, v| out.push((cf, k.to_vec(), v.to_vec())))
            .unwrap();
    }
    out
}

/// A snapshot's rows after a flow build, with the `backlinks` and `sources` keys naming
/// source pages by their URL hashes, as a store that takes crawls one by one names them,
/// where the snapshot numbers them (the rank of the hash among its `sources` rows). A key
/// that holds no page number fails.
fn sources_by_hash(rows: &Rows) -> Rows {
    let sources = rows.iter().filter(|r| r.0 == "sources");
    let hashes: Vec<u64> = sources
        .map(|(_, _, v)| url_hash(&source_row_url(v).unwrap()))
        .collect();
    let by_hash = |(cf, key, value): &(&'static str, Vec<u8>, Vec<u8>)| {
        let mut key = key.clone();
        // Where the source's name is: after the generation and item hash and the Trust
        // Flow byte of a backlink key, after the generation of a source key.
        let at = match *cf {
            "backlinks" => 10,
            "sources" => 1,
            _ => return (*cf, key, value.clone()),
        };
        let number = u64::from_be_bytes(key[at..at + 8].try_into().unwrap());
        key[at..at + 8].copy_from_slice(&hashes[usize::try_from(number).unwrap()].to_be_bytes());
        (*cf, key, value.clone())
    };
    rows.iter().map(by_hash).collect()
}

fn options(workers: usize, hash_bits: u8) -> BuildOptions {
    BuildOptions {
        workers,
        // Small enough that every sorter spills; the runs are LZ4-compressed in one case,
        // written as they are in the others.
        memory_bytes: 8 << 20,
        raw_run_bytes: if hash_bits == 2 { 0 } else { u64::MAX },
        store: StoreOptions {
            hash_bits,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Bulk build, then flow read from the store.
fn in_two_passes(dir: &Path, files: &[PathBuf], seeds: &[Seed], opts: &BuildOptions) -> Store {
    let report = bulkbuild::build(dir, files, opts, &|_| {}).unwrap();
    assert!(report.flow_input.is_none(), "nothing kept unless asked");
    let store = Store::open(dir, &opts.store).unwrap();
    flow::build(&store, seeds, &RankParams::default(), &mut |_| {}).unwrap();
    store
}

fn historic(data: &Path, files: &[PathBuf], seeds: &[Seed], opts: &BuildOptions) -> Store {
    let dir = DataDir::new(data);
    let build = HistoricBuild {
        files,
        days: None,
        seeds,
        params: RankParams::default(),
        build: opts.clone(),
    };
    build_historic(&dir, &build, &|_| {}, &mut |_| {}).unwrap();
    let kept: Vec<String> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("flow-input") || n.contains("scratch"))
        .collect();
    assert!(kept.is_empty(), "kept rows removed: {kept:?}");
    dir.open(IndexKind::Historic, &opts.store).unwrap()
}

/// The crawl files of a generated web of `pages` (a tenth as many domains), and seeds of
/// its `seeds` most linked domains.
fn web(dir: &Path, pages: usize, crawls: usize, seeds: usize) -> (Vec<PathBuf>, Vec<Seed>) {
    let spec = webgen::WebSpec {
        pages,
        domains: pages / 10,
        crawls,
        ..Default::default()
    };
    let files = webgen::generate(&spec, &dir.join("crawl"), &mut |_, _| {})
        .unwrap()
        .files;
    let seeds = parse_seeds(&webgen::Web::new(spec).seed_file(seeds), "seeds").unwrap();
    (files, seeds)
}

#[test]
fn a_historic_build_equals_a_bulk_build_then_a_flow_build() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, seeds) = web(tmp.path(), 3000, 3, 5);
    for (workers, hash_bits) in [(1, 64), (2, 64), (2, 2)] {
        let opts = options(workers, hash_bits);
        let case = tmp.path().join(format!("w{workers}-b{hash_bits}"));
        let snapshot_opts = BuildOptions {
            writer_rows: false,
            ..opts.clone()
        };
        let two_passes = rows(&in_two_passes(
            &case.join("two"),
            &files,
            &seeds,
            &snapshot_opts,
        ));
        let one = rows(&historic(&case.join("data"), &files, &seeds, &opts));
        let count = |r: &Rows, cf: &str| r.iter().filter(|(t, ..)| *t == cf).count();
        for (cf, least) in [("backlinks", 1000), ("metrics", 100), ("top_pages", 100)] {
            assert!(count(&one, cf) > least, "{cf}: {} rows", count(&one, cf));
            assert_eq!(count(&one, cf), count(&two_passes, cf), "{cf}");
        }
        assert!(
            one == two_passes,
            "{workers} workers, {hash_bits}-bit hashes: the stores differ"
        );
        if hash_bits == 2 {
            // The same rows from one worker with memory enough to reduce every item whole
            // (with 2-bit hashes a quarter of the items share each partition hash): what a
            // build leaves out does not depend on how it reduces.
            let opts = BuildOptions {
                memory_bytes: 1 << 30,
                ..options(1, hash_bits)
            };
            let whole = rows(&historic(&case.join("whole"), &files, &seeds, &opts));
            assert!(one == whole, "the store depends on memory and workers");
        }

        // With writer rows: the same rows, and those of the tables only the incremental
        // writer reads: referring addresses and hosts' out-domains in `distinct`, URL
        // reference counts, the expiry index, external links' `links` summaries. Both
        // give a root domain whose backlinks all point to one host only a `LinkedHost`
        // row saying so. A snapshot's root domain with a few linked hosts keeps no
        // backlink rows, but a `BacklinkHost` row for each host, and so does a host with
        // a few linked URLs, with a `BacklinkUrl` row for each URL; its records leave the
        // fields they share with their source page to the page's `sources` row; its
        // referring-domain rows keep their counts but not their anchor texts; and its
        // internal links that carry flow are their targets in their page's row, the
        // others left out; and its items with few backlinks keep no timeline rows.
        let full_store = in_two_passes(&case.join("full"), &files, &seeds, &opts);
        let full = rows(&full_store);
        let one_by_hash = sources_by_hash(&one);
        let (in_full, in_one): (HashSet<_>, HashSet<_>) =
            (full.iter().collect(), one_by_hash.iter().collect());
        assert!(
            in_one.difference(&in_full).all(|row| {
                is_member(row, ROOT_DOMAIN, BACKLINK_HOST)
                    || is_member(row, HOST, BACKLINK_URL)
                    || row.0 == "sources"
                    || has_source_row(row)
                    || row.0 == "refdomains"
                    || has_flow_targets(row)
            }),
            "a snapshot row is new"
        );
        let ref_domains = |rows: &Rows| -> Vec<(Vec<u8>, RefDomain)> {
            let rows = rows.iter().filter(|r| r.0 == "refdomains");
            rows.map(|(_, k, v)| (k.clone(), RefDomain::decode("", v).unwrap()))
                .collect()
        };
        let without_texts = ref_domains(&one);
        assert!(without_texts.len() > 100, "{} rows", without_texts.len());
        assert!(
            without_texts == ref_domains(&full),
            "referring domains differ"
        );
        let versions = |rows: &Rows| -> HashSet<u8> {
            let values = rows.iter().filter(|r| r.0 == "refdomains");
            values.map(|(_, _, v)| v[0]).collect()
        };
        // Version 3 holds the texts; 2, the counts alone (`docs/format.md`).
        assert_eq!(versions(&full), HashSet::from([REF_DOMAIN_ROW_VERSION]));
        assert_eq!(versions(&one), HashSet::from([MEMBER_ROW_VERSION]));
        let sources = count(&one, "sources");
        assert!(sources > 1000 && count(&full, "sources") == 0, "{sources}");
        let records = one.iter().filter(|r| r.0 == "backlinks" && r.2.len() > 1);
        let (with_row, whole): (Vec<_>, Vec<_>) = records.partition(has_source_row);
        assert!(
            with_row.len() > 10 * whole.len() && !whole.is_empty(),
            "{} records with a source row, {} whole",
            with_row.len(),
            whole.len()
        );
        let linked = |level, kind| one.iter().filter(|r| is_member(r, level, kind)).count();
        let one_host = linked(ROOT_DOMAIN, LINKED_HOST);
        let (few_hosts, few_urls) = (
            linked(ROOT_DOMAIN, BACKLINK_HOST),
            linked(HOST, BACKLINK_URL),
        );
        assert!(one_host > 20, "{one_host} root domains read a host's views");
        assert!(
            few_hosts > 40,
            "{few_hosts} hosts' backlinks read by their domain"
        );
        assert!(
            few_urls > 40,
            "{few_urls} URLs' backlinks read by their host"
        );
        assert!(count(&one, "backlinks") < count(&full, "backlinks"));
        let left_out = [
            "pages",
            "distinct",
            "urls",
            "expiry",
            "links",
            "backlinks",
            "refdomains",
            // Past an item's first 1,000 (none on this web).
            "refdomains_ranked",
            "timeline",
        ];
        assert!(in_full
            .difference(&in_one)
            .all(|(cf, ..)| left_out.contains(cf)));
        // Items with few backlinks keep no timeline rows; the others keep theirs.
        let timeline = (count(&one, "timeline"), count(&full, "timeline"));
        assert!(
            timeline.0 > 10 && timeline.1 > 2 * timeline.0,
            "{timeline:?}"
        );
        assert!(count(&full, "distinct") > 2 * count(&one, "distinct"));
        assert!(count(&one, "distinct") > 0, "the index's hosting rows stay");
        for cf in ["urls", "expiry"] {
            assert!(count(&full, cf) > 100 && count(&one, cf) == 0, "{cf}");
        }
        // Internal links that carry flow stay as their pages' targets (the flow graph
        // reads them), the others go.
        let edges = |rows: &Rows| {
            let mut edges = Vec::new();
            for (cf, k, v) in rows {
                let table = match *cf {
                    "links" => Table::Links,
                    "pages" => Table::Pages,
                    _ => continue,
                };
                row_flow_edges(table, k, v, |s, t| {
                    edges.push((s.to_string(), t.to_string()));
                    Ok::<_, linkstore::Error>(())
                })
                .unwrap();
            }
            edges.sort();
            edges
        };
        let (kept, carrying) = (edges(&one), edges(&full));
        let with_targets = one.iter().filter(has_flow_targets).count();
        assert!(kept.len() > 2 * with_targets, "{} pages", with_targets);
        assert!(kept.len() > 100 && kept == carrying, "{} edges", kept.len());
        assert_eq!(count(&one, "links"), 0);
        assert_eq!(count(&one, "pages"), count(&full, "pages"));
        let internal = full
            .iter()
            .filter(|r| r.0 == "links" && r.2[0] != LINK_AT_TARGET);
        assert!(
            internal.count() > carrying.len(),
            "every internal link carries flow"
        );

        // Whatever the snapshot left out, linked items read the same at each level, and
        // so does every link.
        let snapshot = DataDir::new(case.join("data"))
            .open(IndexKind::Historic, &opts.store)
            .unwrap();
        let mut items = linked_items(&full_store);
        assert!(items.len() > 1000, "{} items", items.len());
        if hash_bits == 2 {
            // Each read scans a quarter of the store: root domains, whose reads the
            // snapshot changes most, only.
            // Their hosts may read their URLs' rows, a quarter of the store again for
            // each URL hash: one in four.
            items.retain(|item| item.level == linkstore::Level::RootDomain);
            items = items.into_iter().step_by(4).collect();
        }
        for item in &items {
            assert_eq!(reads(&snapshot, item), reads(&full_store, item), "{item:?}");
        }
        // Among them, small items whose timelines lost links on other days than they found
        // them.
        let read = snapshot.read();
        let lost_later = items.iter().filter(|item| {
            let counters = read.counters(item).unwrap().unwrap_or_default();
            let timeline = read.timeline(item, 0, u32::MAX).unwrap();
            counters.ext_backlinks <= 64
                && timeline.len() > 1
                && timeline.iter().any(|p| p.lost > 0)
        });
        assert!(lost_later.count() > 10);
        // Every external link, and what a flow build reads of every link.
        let links = |store: &Store| {
            let mut links = Vec::new();
            let read = store.read();
            read.scan_links(|r| {
                if !r.is_internal() {
                    links.push(format!("{r:?}"));
                }
            })
            .unwrap();
            read.scan_flow_links(|l| links.push(format!("{l:?}")))
                .unwrap();
            links.sort_unstable();
            links
        };
        assert!(links(&snapshot) == links(&full_store), "the links differ");

        // A second flow build over records that left their source fields to source rows
        // finds their sources by number and writes the same rows, source rows and page
        // numbers too, in its generation (so every read answers the same); other tables do
        // not move.
        flow::build(&snapshot, &seeds, &RankParams::default(), &mut |_| {}).unwrap();
        let again = rows(&snapshot);
        let by_generation = ["backlinks", "metrics", "top_pages", "sources"];
        let without_generation = |rows: &Rows| -> HashSet<(&str, Vec<u8>, Vec<u8>)> {
            rows.iter()
                .filter(|r| by_generation.contains(&r.0))
                .map(|(cf, k, v)| (*cf, k[1..].to_vec(), v.clone()))
                .collect()
        };
        assert!(without_generation(&again) == without_generation(&one));
        for cf in by_generation {
            // The previous generation's rows are gone.
            assert_eq!(count(&again, cf), count(&one, cf), "{cf}");
        }
        let others = |rows: &Rows| -> Rows {
            let others = rows.iter().filter(|r| !by_generation.contains(&r.0));
            others.cloned().collect()
        };
        assert!(
            others(&again) == others(&one),
            "a second flow moved other rows"
        );
        assert!(
            links(&snapshot) == links(&full_store),
            "the links differ after a second flow"
        );

        // A flow build from other seeds moves the sources' flows: records and their
        // source rows move together, and read as a store with the writer's rows flowed
        // the same way does.
        let other_seeds = &seeds[..1];
        flow::build(&snapshot, other_seeds, &RankParams::default(), &mut |_| {}).unwrap();
        flow::build(
            &full_store,
            other_seeds,
            &RankParams::default(),
            &mut |_| {},
        )
        .unwrap();
        let sources = |rows: &Rows| -> HashSet<(Vec<u8>, Vec<u8>)> {
            let sources = rows.iter().filter(|r| r.0 == "sources");
            sources
                .map(|(_, k, v)| (k[1..].to_vec(), v.clone()))
                .collect()
        };
        assert!(
            sources(&rows(&snapshot)) != sources(&again),
            "other seeds moved no source row"
        );
        for item in items.iter().step_by(5) {
            assert_eq!(reads(&snapshot, item), reads(&full_store, item), "{item:?}");
        }
        assert!(
            links(&snapshot) == links(&full_store),
            "the links differ after a flow from other seeds"
        );
    }
}

/// `distinct` kinds (`docs/format.md`): a root domain's one linked host, whose views it
/// reads, and in a snapshot each of its few linked hosts, whose backlink rows it reads,
/// and a host's few linked URLs, whose backlink rows it reads.
const LINKED_HOST: u8 = 7;
const BACKLINK_HOST: u8 = 8;
const BACKLINK_URL: u8 = 9;

/// Item levels as item keys hold them.
const ROOT_DOMAIN: u8 = 1;
const HOST: u8 = 2;

/// Whether a row is a `distinct` row of `kind` of an item of `level`:
/// `hash(8) | level | name | 0 | kind | member | 0`.
fn is_member((cf, key, _): &&(&str, Vec<u8>, Vec<u8>), level: u8, kind: u8) -> bool {
    *cf == "distinct"
        && key.get(8) == Some(&level)
        && key[9..]
            .iter()
            .position(|&b| b == 0)
            .is_some_and(|end| key.get(9 + end + 1) == Some(&kind))
}

/// Whether a row is a snapshot's `pages` row with flow targets after the page's state.
fn has_flow_targets((cf, _, value): &&(&str, Vec<u8>, Vec<u8>)) -> bool {
    *cf == "pages" && value.len() > PageState::decode(value).unwrap().encode().len()
}

/// Whether a row is a `backlinks` URL row whose record leaves its source fields to a
/// `sources` row (its flags, after its version byte, have `SOURCE_ROW`).
fn has_source_row((cf, _, value): &&(&str, Vec<u8>, Vec<u8>)) -> bool {
    *cf == "backlinks"
        && value.len() > 3
        && u16::from_le_bytes([value[1], value[2]]) & linkstore::flags::SOURCE_ROW != 0
}

/// Every root domain and host some link of `store` points to, and one in 20 of the URLs.
fn linked_items(store: &Store) -> Vec<Item> {
    let mut items = std::collections::BTreeSet::new();
    store
        .read()
        .scan_links(|rec| items.extend(Item::levels_of_url(&rec.target_url)))
        .unwrap();
    let mut urls = 0;
    items.retain(|item| {
        urls += usize::from(item.level == linkstore::Level::Url);
        item.level != linkstore::Level::Url || urls % 20 == 0
    });
    items.into_iter().collect()
}

/// What every view read of `item` returns, spelt out.
fn reads(store: &Store, item: &Item) -> Vec<String> {
    let read = store.read();
    let all = BacklinkQuery {
        count: MAX_BACKLINK_COUNT,
        ..Default::default()
    };
    let one_per_domain = BacklinkQuery {
        max_per_ref_domain: Some(1),
        ..all.clone()
    };
    // A snapshot's small item works its timeline out from its records: whole, one day,
    // and a range that ends before it starts.
    let timeline = read.timeline(item, 0, u32::MAX).unwrap();
    let last_day = timeline.last().map_or(0, |p| p.day);
    vec![
        format!("{timeline:?}"),
        format!("{:?}", read.timeline(item, last_day, last_day).unwrap()),
        format!("{:?}", read.timeline(item, last_day + 1, last_day).unwrap()),
        format!("{:?}", read.counters(item).unwrap()),
        format!("{:?}", read.metrics(item).unwrap()),
        format!("{:?}", read.backlinks(item, &all).unwrap()),
        format!("{:?}", read.backlinks(item, &one_per_domain).unwrap()),
        format!("{:?}", read.ref_domains(item, 0, 100_000).unwrap()),
        format!("{:?}", read.anchors(item, 0, 100_000).unwrap()),
    ]
}

#[test]
fn a_snapshot_takes_no_crawl_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, seeds) = web(tmp.path(), 500, 2, 3);
    let opts = options(2, 64);
    let store = historic(&tmp.path().join("data"), &files[..1], &seeds, &opts);
    assert!(store.is_snapshot());
    let before = rows(&store);
    assert!(matches!(
        store.writer(),
        Err(linkstore::Error::Snapshot { .. })
    ));
    let err = indexes::ingest_file(
        &store,
        &files[1],
        &indexes::IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&store.path().display().to_string()) && err.contains("historic build"),
        "{err}"
    );
    assert!(
        rows(&store) == before,
        "a refused ingest changed the snapshot"
    );

    // A bulk build with writer rows (the fresh index's first ingest) is no snapshot.
    let first = tmp.path().join("first");
    bulkbuild::build(&first, &files[..1], &opts, &|_| {}).unwrap();
    let store = Store::open(&first, &opts.store).unwrap();
    assert!(!store.is_snapshot());
    assert!(store.writer().is_ok());
}

/// Generations cycle through 0..=254. A snapshot's flow builds carry its numbered source
/// pages round the cycle, through generation 0 (which a bulk build writes with pages
/// named by hash): every generation reads the same, with the same rows under it.
#[test]
fn numbered_source_pages_go_round_the_generations() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, seeds) = web(tmp.path(), 300, 1, 3);
    let store = historic(&tmp.path().join("data"), &files, &seeds, &options(1, 64));
    let by_generation = ["backlinks", "metrics", "top_pages", "sources"];
    let without_generation = |store: &Store| -> Rows {
        let rows = rows(store)
            .into_iter()
            .filter(|r| by_generation.contains(&r.0));
        rows.map(|(cf, k, v)| (cf, k[1..].to_vec(), v)).collect()
    };
    let first = without_generation(&store);
    assert!(
        first.iter().filter(|r| r.0 == "sources").count() > 100,
        "a web with source pages"
    );
    let items = linked_items(&store);
    assert!(items.len() > 100, "{} items", items.len());
    let first_reads: Vec<_> = items.iter().map(|item| reads(&store, item)).collect();
    let mut generation = store.generation();
    // Once round the cycle: every generation, each the last one's successor.
    for _ in 0..255 {
        flow::build(&store, &seeds, &RankParams::default(), &mut |_| {}).unwrap();
        let next = if generation == 254 { 0 } else { generation + 1 };
        generation = store.generation();
        assert_eq!(generation, next);
        assert!(store.numbers_sources(generation).unwrap());
        if generation <= 1 {
            assert!(
                without_generation(&store) == first,
                "generation {generation} holds other rows"
            );
            let now: Vec<_> = items.iter().map(|item| reads(&store, item)).collect();
            assert!(
                now == first_reads,
                "generation {generation} reads otherwise"
            );
        }
    }
}
