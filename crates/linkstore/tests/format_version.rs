//! A store written in another format is refused, with a message that names it and says
//! how to rebuild it, and is left exactly as it was; format 5, which lacks only a column
//! family, is upgraded in place.

use linkstore::{Store, StoreOptions, FORMAT_VERSION};
use rocksdb::{Options, DB};

/// A store as an earlier format left it: its own column families and `meta/format`.
fn older_store(path: &std::path::Path, version: u8) {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let db = DB::open_cf(&opts, path, ["meta", "links", "backlinks", "pages"]).unwrap();
    let meta = db.cf_handle("meta").unwrap();
    db.put_cf(meta, b"format", [version, 64]).unwrap();
}

#[test]
fn a_format_4_store_is_refused_untouched_with_how_to_rebuild_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("historic");
    older_store(&path, 4);
    let before = DB::list_cf(&Options::default(), &path).unwrap();

    let err = Store::open(&path, &StoreOptions::default())
        .err()
        .expect("a format-4 store is refused")
        .to_string();
    assert!(err.contains("format version 4"), "{err}");
    assert!(err.contains(&format!("reads {FORMAT_VERSION}")), "{err}");
    assert!(err.contains("historic"), "names the store: {err}");
    assert!(err.contains("rebuild"), "says how to rebuild: {err}");
    assert_eq!(
        DB::list_cf(&Options::default(), &path).unwrap(),
        before,
        "no column family added to the refused store"
    );
}

#[test]
fn a_new_store_and_a_reopened_one_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path(), &StoreOptions::default()).unwrap());
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    assert!(store.is_empty().unwrap());
}

#[test]
fn a_format_5_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("historic");
    older_store(&path, 5);
    drop(Store::open(&path, &StoreOptions::default()).expect("format 5 opens"));
    let cfs = DB::list_cf(&Options::default(), &path).unwrap();
    assert!(cfs.iter().any(|c| c == "top_pages"), "{cfs:?}");
    let db = DB::open_cf_for_read_only(&Options::default(), &path, &cfs, false).unwrap();
    let meta = db.cf_handle("meta").unwrap();
    assert_eq!(
        db.get_cf(meta, b"format").unwrap(),
        Some(vec![FORMAT_VERSION, 64])
    );
    drop(db);
    drop(Store::open(&path, &StoreOptions::default()).expect("and reopens"));
}
