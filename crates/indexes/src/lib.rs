//! The two indexes of a data directory, `fresh` and `historic`, each a separate
//! [`linkstore::Store`] under `DATA/<index>/`.
//!
//! A request or an ingest names its index; this crate maps the name to the store.

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

    pub fn index_path(&self, index: IndexKind) -> PathBuf {
        self.root.join(index.as_str())
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
