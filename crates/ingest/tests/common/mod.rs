use std::path::{Path, PathBuf};

/// A file under `../shared/data` (override with `LINKBASE_SHARED_DATA`). Missing data
/// skips the test locally but fails it under `CI=true`.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("LINKBASE_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    if dir.join(rel).exists() {
        return Some(dir.join(rel));
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "shared test data {} is missing under CI",
            dir.join(rel).display()
        );
    }
    eprintln!("skipping: {} not found", dir.join(rel).display());
    None
}
