//! A store written in another format is refused, with a message that names it and says
//! how to rebuild it, and is left exactly as it was.

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
fn older_formats_are_refused_untouched_with_how_to_rebuild_them() {
    for version in [4, 5, 7, 8, 9, 10] {
        refused_untouched(version);
    }
}

fn refused_untouched(version: u8) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("historic");
    older_store(&path, version);
    let before = DB::list_cf(&Options::default(), &path).unwrap();

    let err = Store::open(&path, &StoreOptions::default())
        .err()
        .expect("an older store is refused")
        .to_string();
    assert!(err.contains(&format!("format version {version}")), "{err}");
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
