//! The two indexes of a data directory and their lifecycle.
//!
//! - `fresh` (`DATA/fresh/`): a rolling window (90 days by default) of the newest crawls,
//!   ingested while the server serves (`Indexes::ingest_fresh`); each crawl file is
//!   published whole, and links that leave the window are expired after it.
//! - `historic` (`DATA/historic-<build>/`, named by `DATA/historic.current`): a snapshot
//!   of a fixed date range with flow metrics, rebuilt beside the serving one by
//!   [`build_historic`] and swapped in atomically (`Indexes::reload_historic`).
//!
//! A request or an ingest names its index; this crate maps the name to the store.

mod bulk;
mod historic;
mod info;
mod serving;
mod writer_sink;

pub use bulk::{bulk_ingest, is_empty_index, BulkIngest};
pub use historic::{build_historic, HistoricBuild, HistoricReport};
pub use info::{IndexInfo, IndexStats};
pub use serving::{ingest_into, FreshIngest, Indexes, DEFAULT_WINDOW_DAYS};
pub use writer_sink::{ingest_file, IngestOptions, WriterSink};

use linkstore::{Store, StoreOptions};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown index {0:?}: expected \"fresh\" or \"historic\"")]
    UnknownIndex(String),
    #[error("index {index} at {path}: {source}")]
    Store {
        index: IndexKind,
        path: PathBuf,
        source: linkstore::Error,
    },
    #[error("{0}")]
    Linkstore(#[from] linkstore::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Ingest {
        path: PathBuf,
        source: ingest::Error,
    },
    #[error("flow metrics: {0}")]
    Flow(#[from] flow::Error),
    #[error("bulk build: {0}")]
    Build(#[from] bulkbuild::Error),
    #[error("{0}")]
    Busy(String),
    #[error("index information: {0}")]
    Info(String),
}

/// Creates (if needed) and locks a file in `dir` for as long as the returned file lives;
/// `busy` says who holds it when it is taken.
fn lock_file(dir: &Path, path: &Path, busy: &str) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_error(path))?;
    file.try_lock().map_err(|_| Error::Busy(busy.to_string()))?;
    Ok(file)
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which index (Majestic's `datasource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    Fresh,
    Historic,
}

impl IndexKind {
    pub const ALL: [IndexKind; 2] = [IndexKind::Historic, IndexKind::Fresh];

    pub fn as_str(self) -> &'static str {
        match self {
            IndexKind::Fresh => "fresh",
            IndexKind::Historic => "historic",
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IndexKind {
    type Err = Error;

    /// Case-insensitive, as Majestic's `datasource` parameter.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fresh" => Ok(IndexKind::Fresh),
            "historic" | "historical" => Ok(IndexKind::Historic),
            _ => Err(Error::UnknownIndex(s.chars().take(64).collect())),
        }
    }
}

/// A data directory holding both indexes.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    pub fn new(root: impl Into<PathBuf>) -> DataDir {
        DataDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where an index's store lives: `DATA/fresh`, and for historic the directory named
    /// by `DATA/historic.current` (`DATA/historic` before any historic build).
    pub fn index_path(&self, index: IndexKind) -> PathBuf {
        match index {
            IndexKind::Fresh => self.root.join("fresh"),
            IndexKind::Historic => self.root.join(self.historic_name()),
        }
    }

    /// The directory name of the current historic snapshot.
    pub fn historic_name(&self) -> String {
        std::fs::read_to_string(self.historic_pointer())
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .unwrap_or_else(|| "historic".into())
    }

    /// The file naming the current historic snapshot (replaced atomically by a build).
    pub fn historic_pointer(&self) -> PathBuf {
        self.root.join("historic.current")
    }

    /// Held (file lock) by a running server for its lifetime.
    pub fn serve_lock_path(&self) -> PathBuf {
        self.root.join("serve.lock")
    }

    /// Whether a server holds this data directory.
    pub fn is_served(&self) -> bool {
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.serve_lock_path())
        else {
            return false;
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                false
            }
            Err(_) => true,
        }
    }

    /// Takes the serve lock for as long as the returned file lives, or says who has it.
    pub fn lock_for_serving(&self) -> Result<std::fs::File> {
        lock_file(
            &self.root,
            &self.serve_lock_path(),
            &format!("another server is serving {}", self.root.display()),
        )
    }

    /// The account store (keys, apps, tokens, usage).
    pub fn accounts_path(&self) -> PathBuf {
        self.root.join("accounts.sqlite")
    }

    /// Download job files and their state.
    pub fn downloads_path(&self) -> PathBuf {
        self.root.join("downloads")
    }

    /// The sandbox's own data directory (its indexes and downloads).
    pub fn sandbox(&self) -> DataDir {
        DataDir::new(self.root.join("sandbox"))
    }

    /// Opens (creating if needed) one index's store.
    pub fn open(&self, index: IndexKind, options: &StoreOptions) -> Result<Store> {
        let path = self.index_path(index);
        Store::open(&path, options).map_err(|source| Error::Store {
            index,
            path,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_parse_case_insensitively_and_reject_others() {
        assert_eq!("Fresh".parse::<IndexKind>().unwrap(), IndexKind::Fresh);
        assert_eq!(
            "HISTORIC".parse::<IndexKind>().unwrap(),
            IndexKind::Historic
        );
        let err = "weekly".parse::<IndexKind>().unwrap_err().to_string();
        assert!(err.contains("weekly"), "{err}");
    }

    #[test]
    fn the_historic_pointer_names_the_serving_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::new(dir.path());
        assert_eq!(
            data.index_path(IndexKind::Historic),
            dir.path().join("historic")
        );
        std::fs::write(data.historic_pointer(), "historic-20261121000000\n").unwrap();
        assert_eq!(
            data.index_path(IndexKind::Historic),
            dir.path().join("historic-20261121000000")
        );
        std::fs::write(data.historic_pointer(), "../elsewhere").unwrap();
        assert_eq!(
            data.index_path(IndexKind::Historic),
            dir.path().join("historic")
        );
    }

    #[test]
    fn one_server_per_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::new(dir.path());
        assert!(!data.is_served());
        let lock = data.lock_for_serving().unwrap();
        assert!(data.is_served());
        assert!(data
            .lock_for_serving()
            .unwrap_err()
            .to_string()
            .contains("another server"));
        drop(lock);
        assert!(!data.is_served());
    }

    #[test]
    fn indexes_are_separate_stores() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::new(dir.path());
        let fresh = data
            .open(IndexKind::Fresh, &StoreOptions::default())
            .unwrap();
        assert_eq!(fresh.path(), dir.path().join("fresh"));
        drop(fresh);
        let historic = data
            .open(IndexKind::Historic, &StoreOptions::default())
            .unwrap();
        assert_eq!(historic.path(), dir.path().join("historic"));
    }
}
