use std::path::{Path, PathBuf};

/// Errors of a bulk build.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store: {0}")]
    Store(#[from] linkstore::Error),
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: ingest::Error,
    },
    #[error("{0} already holds crawls: a bulk build fills an empty store")]
    NotEmpty(PathBuf),
    #[error("a build worker failed: {0}")]
    Worker(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
