//! Where a store's bytes go (`Store::disk_by_table`), read from a real RocksDB store's
//! table properties.

use linkstore::{CrawlOutcome, OutLink, PageCrawl, Store, StoreOptions};

#[test]
fn each_table_reports_its_rows_and_where_its_bytes_go() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let targets = [
        "https://a.example/",
        "https://b.example/x",
        "https://src.example/in",
    ];
    let mut w = store.writer().unwrap();
    w.apply(&PageCrawl {
        url: "https://src.example/".into(),
        fetched_at: 1_735_689_600,
        ip: Some("192.0.2.7".parse().unwrap()),
        outcome: CrawlOutcome::Html {
            links: targets
                .iter()
                .map(|t| OutLink {
                    target: (*t).into(),
                    anchor_text: "text".into(),
                    ..Default::default()
                })
                .collect(),
        },
    })
    .unwrap();
    w.commit().unwrap();
    store.compact().unwrap();

    let tables = store.disk_by_table().unwrap();
    let links = tables.iter().find(|t| t.name == "links").unwrap();
    // Every link, the internal one too, is a `links` row of a 16-byte key, to which
    // RocksDB adds its 8-byte sequence and type.
    assert_eq!(links.entries, 3);
    assert_eq!(links.raw_key_bytes, 3 * (16 + 8));
    assert!(links.raw_value_bytes > 0 && links.data_bytes > 0 && links.filter_bytes > 0);
    let backlinks = tables.iter().find(|t| t.name == "backlinks").unwrap();
    // Two external links, each under its URL and host (each root domain reads its one
    // host's).
    assert_eq!(backlinks.entries, 2 * 2);
    for t in &tables {
        assert!(
            t.data_bytes + t.index_bytes + t.filter_bytes <= t.file_bytes,
            "{t:?}"
        );
        assert_eq!(t.entries == 0, t.file_bytes == 0, "{t:?}");
    }
    let total: u64 = tables.iter().map(|t| t.file_bytes).sum();
    assert_eq!(total, store.disk_bytes().unwrap());
}

/// A bulk build's files go to the bottom level, where a lookup reads the block its key
/// would be in whether or not the key is there: they carry no Bloom filters, unlike the
/// files the database flushes above them (the test above).
#[test]
fn files_built_for_the_bottom_level_carry_no_bloom_filters() {
    use linkstore::build::{Table, TableFileWriter};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), &StoreOptions::default()).unwrap();
    let path = dir.path().join("urls.sst");
    let mut file = TableFileWriter::create(Table::Urls, &path).unwrap();
    for i in 0..1_000u32 {
        let key = format!("{i:08}https://u{i}.example/");
        assert!(file.put(key.as_bytes(), &[2]).unwrap());
    }
    let built = file.finish().unwrap().expect("rows were put");
    store.ingest_table_files(Table::Urls, &[built]).unwrap();

    let tables = store.disk_by_table().unwrap();
    let urls = tables.iter().find(|t| t.name == "urls").unwrap();
    assert_eq!(urls.entries, 1_000);
    assert!(urls.data_bytes > 0);
    assert_eq!(urls.filter_bytes, 0, "{urls:?}");
}

/// RocksDB starts an info log at every open: a store opened again and again (every
/// command, every server swap) keeps the last few, not a thousand.
#[test]
fn a_store_opened_again_and_again_keeps_a_few_info_logs() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..8 {
        drop(Store::open(dir.path(), &StoreOptions::default()).unwrap());
    }
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("LOG"))
        .count();
    assert!((1..=4).contains(&logs), "{logs} info logs kept");
}
