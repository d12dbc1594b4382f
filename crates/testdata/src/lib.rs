//! Where tests find the real crawl files, graphs and fixtures: `../shared/data` beside the
//! repository, or `LINKBASE_SHARED_DATA`.

use std::path::{Path, PathBuf};

/// A file under the shared data directory. Missing data skips the calling test locally
/// (returns `None` with a note) but panics under `CI=true`, so CI never passes by skipping.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("LINKBASE_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    let path = dir.join(rel);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("shared test data {} is missing under CI", path.display());
    }
    eprintln!("skipping: {} not found", path.display());
    None
}

/// The real crawl files of the shared data that hold page fetches (WARC with HTML, WAT).
pub const CRAWL_FILES: &[&str] = &[
    "warc/aut-example.warc.gz",
    "warc/resiliparse-warcfile.warc.gz",
    "warc/resiliparse-clueweb-quirk.warc.gz",
    "warc/jwarc-cc.warc.gz",
    "warc/whirlwind.warc.gz",
    "warc/cc-link-extraction-test.warc",
    "wat/fluo-webindex-wat-18.warc",
    "wat/pycommoncrawl-file1.warc.wat.gz",
];

/// Every file of [`CRAWL_FILES`], or `None` (as [`shared`]) when one is missing.
pub fn crawl_files() -> Option<Vec<PathBuf>> {
    CRAWL_FILES.iter().map(|rel| shared(rel)).collect()
}
