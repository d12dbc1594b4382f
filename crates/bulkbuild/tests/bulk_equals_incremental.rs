//! The bulk build and the incremental writer give the same store: every row of every
//! table (links, pages, URLs, backlinks, counters, referring domains, anchors, their
//! ranked copies, distinct counts, timeline), whatever the file order and the number of
//! workers, with full and with 2-bit (colliding) item hashes.

use bulkbuild::{build, BuildOptions, BuildReport};
use indexes::{ingest_file, IngestOptions};
use linkstore::build::Table;
use linkstore::{Store, StoreOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Rows = BTreeMap<Table, Vec<(Vec<u8>, Vec<u8>)>>;

/// Every row of every table. Timeline rows that sum to nothing are left out: the
/// incremental writer keeps them (merge operands that cancel), readers skip them.
fn rows(store: &Store) -> Rows {
    let mut out = Rows::new();
    for table in Table::ALL {
        let mut v = Vec::new();
        store
            .read()
            .scan_table(table, |k, val| {
                let empty_day = table == Table::Timeline && val == [1, 0, 0];
                if !empty_day {
                    v.push((k.to_vec(), val.to_vec()));
                }
            })
            .unwrap();
        out.insert(table, v);
    }
    out
}

/// `pages` pages over `pages / 10` domains, four crawls. Half the pages also link to a
/// hot URL, so that with 300 domains or more it has more referring domains than an item
/// keeps without ranked copies.
fn web(dir: &Path, pages: usize) -> Vec<PathBuf> {
    let spec = webgen::WebSpec {
        pages,
        domains: pages / 10,
        crawls: 4,
        hot_share: 0.5,
        ..Default::default()
    };
    webgen::generate(&spec, &dir.join("crawl"), &mut |_, _| {})
        .unwrap()
        .files
}

fn incremental(dir: &Path, files: &[PathBuf], hash_bits: u8) -> Rows {
    incremental_in_batches(dir, files, hash_bits, IngestOptions::default().batch_pages)
}

/// Commits every `batch_pages` crawls: with small batches, many rows a batch reads were
/// changed by the batch before, which may still be being written (the writer's unit tests
/// hold a batch in flight on purpose).
fn incremental_in_batches(
    dir: &Path,
    files: &[PathBuf],
    hash_bits: u8,
    batch_pages: usize,
) -> Rows {
    let options = IngestOptions {
        batch_pages,
        ..Default::default()
    };
    let store = Store::open(
        dir,
        &StoreOptions {
            hash_bits,
            ..Default::default()
        },
    )
    .unwrap();
    for f in files {
        ingest_file(&store, f, &options, &mut |_| {}).unwrap();
    }
    rows(&store)
}

/// Both kinds of items are in `rows`: some with ranked copies, more without.
fn assert_some_ranked(rows: &Rows) {
    for (ranked, table) in RANKED.into_iter().zip([Table::RefDomains, Table::Anchors]) {
        let (n, all) = (rows[&ranked].len(), rows[&table].len());
        assert!(n > 0 && n < all, "{ranked:?}: {n} of {all} rows");
    }
}

/// Small enough that every sorter spills on a web of a few thousand pages, and the hot
/// items' sums overflow and are reduced stage by stage. Builds with it also cut their
/// table files small ([`SMALL_FILES`]).
const SPILLING: usize = 8 << 20;
/// Raw bytes per table file for builds with [`SPILLING`] memory: every large table is cut
/// into many files, which must hold the same rows as one would.
const SMALL_FILES: u64 = 16 << 10;

fn bulk(dir: &Path, files: &[PathBuf], hash_bits: u8, workers: usize, memory: usize) -> Rows {
    bulk_with_report(dir, files, hash_bits, workers, memory).0
}

fn bulk_with_report(
    dir: &Path,
    files: &[PathBuf],
    hash_bits: u8,
    workers: usize,
    memory: usize,
) -> (Rows, BuildReport) {
    let small_files = memory == SPILLING;
    let opts = BuildOptions {
        workers,
        memory_bytes: memory,
        store: StoreOptions {
            hash_bits,
            ..Default::default()
        },
        file_bytes: if small_files {
            SMALL_FILES
        } else {
            BuildOptions::default().file_bytes
        },
        // One worker writes its spilled runs as they are; two write their first 2 MiB
        // of runs so (a run of theirs is about 1 MiB) and compress the rest: every mix
        // gives the same store.
        raw_run_bytes: if small_files && workers == 2 {
            2 << 20
        } else {
            u64::MAX
        },
        ..Default::default()
    };
    let report = build(dir, files, &opts, &|_| {}).unwrap();
    assert!(report.pages.pages > 0 && report.sst_files > 0, "{report:?}");
    if opts.raw_run_bytes == u64::MAX {
        assert_eq!(
            report.runs_compressed, 0,
            "every run fits the raw budget: {report:?}"
        );
    }
    let rows = rows(&Store::open(dir, &StoreOptions::default()).unwrap());
    (rows, report)
}

/// Tables that a small web may leave empty: only items with many referring domains or
/// anchors keep ranked copies.
const RANKED: [Table; 2] = [Table::RefDomainsRanked, Table::AnchorsRanked];

fn assert_same(a: &Rows, b: &Rows, what: &str) {
    assert_same_but_empty(a, b, what, &RANKED);
}

/// [`assert_same`] for a web whose items may leave the tables `may_be_empty` empty.
fn assert_same_but_empty(a: &Rows, b: &Rows, what: &str, may_be_empty: &[Table]) {
    for table in Table::ALL {
        let (x, y) = (&a[&table], &b[&table]);
        if table == Table::Sources {
            // Only a snapshot's records leave their source fields to source rows.
            assert!(x.is_empty() && y.is_empty(), "{what}: source rows");
            continue;
        }
        assert!(
            !x.is_empty() || may_be_empty.contains(&table),
            "{what}: {table:?} is empty"
        );
        if x != y {
            let first = x.iter().zip(y).position(|(p, q)| p != q);
            panic!(
                "{what}: {table:?} differs ({} rows vs {}); first difference at {first:?}: {:?} vs {:?}",
                x.len(),
                y.len(),
                first.map(|i| &x[i]),
                first.map(|i| &y[i]),
            );
        }
    }
}

#[test]
fn bulk_and_incremental_stores_are_equal_row_for_row() {
    let tmp = tempfile::tempdir().unwrap();
    let files = web(tmp.path(), 3_000);
    let expected = incremental(&tmp.path().join("inc"), &files, 64);
    assert_some_ranked(&expected);
    let small_batches = incremental_in_batches(&tmp.path().join("inc-37"), &files, 64, 37);
    assert_same(
        &expected,
        &small_batches,
        "incremental, 37 crawls per batch",
    );
    let mut reversed = files.clone();
    reversed.reverse();
    for (order, files) in [("time order", &files), ("reversed", &reversed)] {
        for workers in [1, 2] {
            let dir = tmp.path().join(format!("bulk-{workers}-{}", order.len()));
            let (got, report) = bulk_with_report(&dir, files, 64, workers, SPILLING);
            assert_same(&expected, &got, &format!("{order}, {workers} workers"));
            // Far more files than tables: large tables were cut into many.
            assert!(report.sst_files > 4 * Table::ALL.len(), "{report:?}");
            // Runs spilled in the mix this build was set up to write.
            assert!(report.runs_as_they_are > 0, "{report:?}");
            assert_eq!(report.runs_compressed > 0, workers == 2, "{report:?}");
        }
    }
}

#[test]
fn colliding_item_hashes_give_equal_stores_too() {
    let tmp = tempfile::tempdir().unwrap();
    let files = web(tmp.path(), 3_000);
    let expected = incremental(&tmp.path().join("inc"), &files, 2);
    assert_some_ranked(&expected);
    // Every item's sums overflow (one item hash holds a quarter of the items), or none
    // do and colliding items are reduced together in memory.
    for memory in [SPILLING, BuildOptions::default().memory_bytes] {
        let got = bulk(
            &tmp.path().join(format!("bulk{memory}")),
            &files,
            2,
            2,
            memory,
        );
        assert_same(&expected, &got, &format!("2-bit hashes, {memory} bytes"));
    }
}

#[test]
fn a_store_with_crawls_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let files = web(tmp.path(), 200);
    let dir = tmp.path().join("inc");
    incremental(&dir, &files[..1], 64);
    let err = build(&dir, &files, &BuildOptions::default(), &|_| {}).unwrap_err();
    assert!(err.to_string().contains("already holds crawls"), "{err}");
}

/// Every real crawl file of `../shared/data` (WARC with HTML, WAT), both ways.
#[test]
fn real_crawl_files_build_the_same_store_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(paths) = testdata::crawl_files() else {
        return;
    };
    for (i, (rel, path)) in testdata::CRAWL_FILES.iter().zip(paths).enumerate() {
        let files = vec![path];
        let expected = incremental(&tmp.path().join(format!("inc{i}")), &files, 64);
        let dir = tmp.path().join(format!("bulk{i}"));
        let report = build(&dir, &files, &BuildOptions::default(), &|_| {}).unwrap();
        let got = rows(&Store::open(&dir, &StoreOptions::default()).unwrap());
        assert_eq!(report.files[0].bad_records, 0, "{rel}");
        for table in Table::ALL {
            assert_eq!(expected[&table], got[&table], "{rel}: {table:?}");
        }
    }
}

/// Bad records are skipped and counted as the incremental ingest counts them, the rest
/// is built; a missing file is an error naming it.
#[test]
fn bad_records_are_counted_and_a_missing_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let good = r#"{"url":"http://a.com/","fetched_at":1700000000,"status":200,"links":[{"url":"http://b.com/x","text":"b"}]}"#;
    let crawl = tmp.path().join("mixed.jsonl");
    std::fs::write(&crawl, format!("{good}\nnot json at all\n{{\"url\":5}}\n")).unwrap();
    let files = vec![crawl.clone()];
    let expected = incremental(&tmp.path().join("inc"), &files, 64);
    let dir = tmp.path().join("bulk");
    let report = build(&dir, &files, &BuildOptions::default(), &|_| {}).unwrap();
    assert_eq!(
        report.files[0].bad_records, 2,
        "{:?}",
        report.files[0].problems
    );
    assert_eq!(report.pages.links, 1);
    let got = rows(&Store::open(&dir, &StoreOptions::default()).unwrap());
    assert_eq!(expected, got);

    let missing = tmp.path().join("no-such-crawl.warc.gz");
    let err = build(
        &tmp.path().join("bulk2"),
        &[crawl, missing.clone()],
        &BuildOptions::default(),
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no-such-crawl.warc.gz"), "{err}");
}

/// A page crawled far more often than a page group's share of memory holds is streamed
/// through the replay in time order (its crawls spill with the other pages'), and the
/// store equals the incremental writer's applying the same crawls in time order.
#[test]
fn a_page_crawled_thousands_of_times_is_replayed_in_time_order() {
    let tmp = tempfile::tempdir().unwrap();
    let n: i64 = 30_000;
    let line = |at: i64| {
        // The link set changes from crawl to crawl: links are found, lost and found again.
        let long = "x".repeat(200);
        format!(
            r#"{{"url":"http://busy.com/","fetched_at":{at},"status":200,"links":[{{"url":"http://t{}.org/{long}","text":"a{}"}},{{"url":"http://u.net/","text":"u"}}]}}"#,
            at % 37,
            at % 5
        ) + "\n"
    };
    let quiet = r#"{"url":"http://quiet.com/","fetched_at":1700000000,"status":200,"links":[{"url":"http://u.net/","text":"q"}]}"#.to_string() + "\n";
    let time = |i: i64| 1_700_000_000 + i * 3_600;
    let sorted: String = (0..n).map(|i| line(time(i))).collect::<String>() + &quiet;
    // The same crawls in a scrambled order (7,919 is prime to n).
    let scrambled: String = quiet.clone()
        + &(0..n)
            .map(|i| line(time(i * 7_919 % n)))
            .collect::<String>();
    let (in_order, out_of_order) = (
        tmp.path().join("sorted.jsonl"),
        tmp.path().join("scrambled.jsonl"),
    );
    std::fs::write(&in_order, sorted).unwrap();
    std::fs::write(&out_of_order, scrambled).unwrap();
    let expected = incremental(&tmp.path().join("inc"), &[in_order], 64);
    for workers in [1, 2] {
        let dir = tmp.path().join(format!("bulk{workers}"));
        let opts = BuildOptions {
            workers,
            memory_bytes: 8 << 20,
            ..Default::default()
        };
        let report = build(&dir, std::slice::from_ref(&out_of_order), &opts, &|_| {}).unwrap();
        assert_eq!(report.pages.pages, 2, "{report:?}");
        assert_eq!(report.pages.crawls_applied, n as u64 + 1);
        let got = rows(&Store::open(&dir, &StoreOptions::default()).unwrap());
        // Every item has at most a few dozen backlinks: no member rows.
        let members = [
            Table::RefDomains,
            Table::RefDomainsRanked,
            Table::Anchors,
            Table::AnchorsRanked,
        ];
        assert_same_but_empty(&expected, &got, &format!("{workers} workers"), &members);
    }
}

/// A crawl file of one JSON line per page: `(url, links as (target, anchor text))`.
fn crawl_file(path: &Path, day: u32, pages: &[(String, Vec<(String, String)>)]) -> PathBuf {
    let mut out = String::new();
    for (url, links) in pages {
        let links: Vec<String> = links
            .iter()
            .map(|(target, text)| format!(r#"{{"url":"{target}","type":"a","text":"{text}"}}"#))
            .collect();
        out.push_str(&format!(
            r#"{{"url":"{url}","fetched_at":"2025-01-{day:02}T00:00:00Z","status":200,"ip":"10.0.0.1","links":[{}]}}"#,
            links.join(",")
        ));
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
    path.to_path_buf()
}

fn anchor_text_rows(rows: &Rows) -> usize {
    rows[&Table::Distinct]
        .iter()
        .filter(|(k, _)| {
            let item_key_len = 9 + k[9..].iter().position(|&b| b == 0).unwrap() + 1;
            k[item_key_len] == 3
        })
        .count()
}

/// One domain links to one URL under more anchor texts than a referring-domain row holds
/// (`ANCHORS_IN_ROW`): their counts move to `distinct` rows, and back into the row when a
/// later crawl brings the domain's texts down to the bound. Both paths store the same
/// rows, whatever the batches, before and after.
#[test]
fn anchor_texts_past_the_row_bound_move_out_and_back_the_same_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let many = linkstore::ANCHORS_IN_ROW as usize + 16;
    let target = "http://target.example/x";
    let pages = |texts: &dyn Fn(usize) -> String| -> Vec<(String, Vec<(String, String)>)> {
        let mut pages: Vec<_> = (0..many)
            .map(|i| {
                let url = format!("http://spam.example/p{i}");
                (url, vec![(target.to_string(), texts(i))])
            })
            .collect();
        // Another domain shares some texts: an anchor's referring domains count both.
        pages.push((
            "http://other.example/".to_string(),
            (0..4).map(|i| (target.to_string(), texts(i))).collect(),
        ));
        pages
    };
    let first = crawl_file(
        &tmp.path().join("a.jsonl"),
        1,
        &pages(&|i| format!("text {i:03}")),
    );
    // Recrawled: 17 of the pages now share one text, leaving the bound's number.
    let second = crawl_file(
        &tmp.path().join("b.jsonl"),
        2,
        &pages(&|i| match i {
            0..=16 => "same".to_string(),
            _ => format!("text {i:03}"),
        }),
    );
    for bits in [64, 2] {
        let only_first = incremental(
            &tmp.path().join(format!("i1-{bits}")),
            std::slice::from_ref(&first),
            bits,
        );
        // URL and host each keep the domain's texts out of its row; the root domain,
        // whose backlinks all point to that host, reads the host's.
        assert_eq!(anchor_text_rows(&only_first), 2 * many, "{bits}-bit hashes");
        let got = bulk(
            &tmp.path().join(format!("b1-{bits}")),
            std::slice::from_ref(&first),
            bits,
            2,
            SPILLING,
        );
        assert_same(
            &only_first,
            &got,
            &format!("first crawl, {bits}-bit hashes"),
        );

        let files = [first.clone(), second.clone()];
        let expected = incremental(&tmp.path().join(format!("i2-{bits}")), &files, bits);
        assert_eq!(anchor_text_rows(&expected), 0, "{bits}-bit hashes");
        for batch in [1, 5] {
            let dir = tmp.path().join(format!("i2-{bits}-{batch}"));
            let got = incremental_in_batches(&dir, &files, bits, batch);
            assert_same(
                &expected,
                &got,
                &format!("batches of {batch}, {bits}-bit hashes"),
            );
        }
        for memory in [SPILLING, BuildOptions::default().memory_bytes] {
            let dir = tmp.path().join(format!("b2-{bits}-{memory}"));
            let got = bulk(&dir, &files, bits, 2, memory);
            assert_same(
                &expected,
                &got,
                &format!("{memory} bytes, {bits}-bit hashes"),
            );
        }
    }
}

/// A snapshot keeps ranked copies of a large item's first
/// `SNAPSHOT_RANKED_REF_DOMAINS` referring domains only, and reads the rest from its
/// rows: every referring-domain read answers as in a store with all the copies, whether
/// the build summed the item whole in memory or stage by stage.
#[test]
fn a_snapshot_keeps_the_first_ranked_copies_and_reads_past_them_the_same() {
    use linkstore::{Item, RefDomainQuery, RANKED_COPIES_ABOVE, SNAPSHOT_RANKED_REF_DOMAINS};
    let tmp = tempfile::tempdir().unwrap();
    let kept = SNAPSHOT_RANKED_REF_DOMAINS;
    let n = kept + 300;
    // Domain i links to 1 to 3 of hot.com's pages, with 1 to 5 links to the first: ranks
    // with ties, broken by name.
    let pages: Vec<(String, Vec<(String, String)>)> = (0..n)
        .map(|i| {
            let mut links: Vec<(String, String)> = (0..=i % 3)
                .map(|j| (format!("http://hot.com/p{j}"), format!("a{}", i % 7)))
                .collect();
            for k in 0..i % 5 {
                links.push(("http://hot.com/p0".into(), format!("b{k}")));
            }
            (format!("http://s{i:04}.org/"), links)
        })
        .collect();
    let files = [crawl_file(&tmp.path().join("c.jsonl"), 1, &pages)];
    let store = |name: &str, writer_rows: bool, workers: usize, memory: usize| {
        let dir = tmp.path().join(name);
        let opts = BuildOptions {
            workers,
            memory_bytes: memory,
            writer_rows,
            ..Default::default()
        };
        build(&dir, &files, &opts, &|_| {}).unwrap();
        Store::open(&dir, &StoreOptions::default()).unwrap()
    };
    let full = store("full", true, 1, 1 << 30);
    let whole = store("whole", false, 1, 1 << 30);
    // A megabyte: the hot items' sums overflow and are reduced stage by stage.
    let staged = store("staged", false, 2, 1 << 20);
    assert!(whole.is_snapshot() && !full.is_snapshot());
    let (whole_rows, staged_rows) = (rows(&whole), rows(&staged));
    assert!(
        whole_rows == staged_rows,
        "the snapshot depends on how its items were summed"
    );

    // Items with more than RANKED_COPIES_ABOVE rows keep copies, a snapshot at most
    // `kept` of them (the host and p0 have n referring domains, page j those domains i
    // with i % 3 >= j; the root domain reads its one host's).
    let copies_of = |rows: &[usize], limit: usize| -> usize {
        rows.iter()
            .filter(|&&r| r as i64 > RANKED_COPIES_ABOVE)
            .map(|&r| r.min(limit))
            .sum()
    };
    let page = |j: usize| (0..n).filter(|i| i % 3 >= j).count();
    let per_item = [n, page(0), page(1), page(2)];
    assert_eq!(
        rows(&full)[&Table::RefDomainsRanked].len(),
        copies_of(&per_item, usize::MAX)
    );
    assert_eq!(
        whole_rows[&Table::RefDomainsRanked].len(),
        copies_of(&per_item, kept)
    );

    let items: Vec<Item> = [
        "hot.com",
        "http://hot.com/p0",
        "http://hot.com/p1",
        "http://hot.com/p2",
    ]
    .iter()
    .map(|s| Item::parse(s).unwrap())
    .collect();
    let reads = |store: &Store| {
        let read = store.read();
        let mut out = Vec::new();
        for item in &items {
            let all = read.ref_domains(item, 0, 100_000).unwrap();
            out.push(format!("{all:?}"));
            // Pages before, across and past the kept copies.
            for from in [0, kept - 5, kept, kept + 17] {
                out.push(format!("{:?}", read.ref_domains(item, from, 10).unwrap()));
            }
            for d in ["s0000.org", "s1299.org", "s0999.org", "none.org"] {
                out.push(format!("{:?}", read.ref_domain(item, d).unwrap()));
            }
            out.push(format!("{:?}", read.anchors(item, 0, 100).unwrap()));
        }
        let page = read
            .ref_domain_matches(&RefDomainQuery {
                items: items[1..3].to_vec(),
                depth: 100_000,
                from: kept - 3,
                count: 50,
                order: Vec::new(),
                topic: None,
            })
            .unwrap();
        out.push(format!("{:?}", page.rows));
        out
    };
    let want = reads(&full);
    assert!(
        want[0].matches("RefDomain").count() == n,
        "{n} referring domains"
    );
    assert_eq!(reads(&whole), want);
    assert_eq!(reads(&staged), want);
}
