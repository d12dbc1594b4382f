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
