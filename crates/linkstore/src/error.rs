use std::fmt;

/// Errors of the link store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    /// A stored value or key could not be decoded: names the column family and what broke.
    #[error("corrupt {cf} value: {what}")]
    Corrupt { cf: &'static str, what: String },
    /// The store on disk was written by a different format version.
    #[error(
        "{}: store format version {found} is not supported (this build reads {supported}): \
         rebuild the index from its crawl files (`linkbase ingest` into an empty data \
         directory, or `linkbase historic build`)",
        path.display()
    )]
    Version {
        path: std::path::PathBuf,
        found: u8,
        supported: u8,
    },
    /// An incremental write into a snapshot store, which has none of the rows the
    /// incremental writer reads.
    #[error(
        "{}: this historic index is a snapshot, made by its first ingest or by a historic \
         build: it keeps none of the rows the incremental writer needs, so it takes no \
         crawl one by one. Rebuild it from all its crawl files with `linkbase historic \
         build` (or remove it and ingest them again, with `--incremental` for an index \
         that takes later crawls one by one), or ingest into the fresh index \
         (`--index fresh`)",
        path.display()
    )]
    Snapshot { path: std::path::PathBuf },
    /// An item string that is not a URL, host or domain.
    #[error("invalid item {item:?}: {reason}")]
    InvalidItem { item: String, reason: String },
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn corrupt(cf: &'static str, what: impl fmt::Display) -> Self {
        Error::Corrupt {
            cf,
            what: what.to_string(),
        }
    }
}
