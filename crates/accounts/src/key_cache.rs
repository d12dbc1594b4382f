//! API keys that authenticated, by digest, so a request checks its key without a query.
//!
//! An entry is good while no key has changed since it was read. Every change of a key
//! (revoked, cycled, restricted), by this process or another (the `linkbase keys` CLI),
//! writes a new random stamp into the file beside the store (`<store>-keys`, see
//! `docs/format.md`) after its commit; a request reads the stamp (one `pread`, no lock,
//! no query) and drops every entry when it moved, so a changed key is read again on its
//! next use. Only keys that exist are cached, so the cache holds at most one entry per
//! key in the store.

use crate::secret::Digest;
use crate::{io_error, lock, Error, KeyInfo, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &[u8; 4] = b"LBKC";
const VERSION: u8 = 1;
/// Magic, version, padding, then the stamp.
const STAMP_AT: u64 = 8;
const FILE_LEN: usize = 16;

pub(crate) struct KeyCache {
    path: PathBuf,
    stamp: File,
    entries: Mutex<Entries>,
}

struct Entries {
    /// The stamp the entries were read at.
    version: u64,
    keys: HashMap<Digest, KeyInfo>,
}

/// The stamp file of the account store at `store`.
pub(crate) fn stamp_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-keys");
    PathBuf::from(name)
}

impl KeyCache {
    /// Opens (creating if needed) the key-change stamp of the account store at `store`.
    pub(crate) fn open(store: &Path) -> Result<KeyCache> {
        let path = stamp_path(store);
        let io = |e: std::io::Error| io_error(&path, e);
        let stamp = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let mut head = [0u8; FILE_LEN];
        let read = stamp.read_at(&mut head, 0).map_err(io)?;
        if read == 0 {
            // New (or left empty by a crash before its first write): any content will
            // do, as long as it is whole.
            head[..4].copy_from_slice(MAGIC);
            head[4] = VERSION;
            head[STAMP_AT as usize..].copy_from_slice(&random()?.to_le_bytes());
            stamp.write_all_at(&head, 0).map_err(io)?;
        } else if read < FILE_LEN || &head[..4] != MAGIC || head[4] != VERSION {
            return Err(Error::Open {
                path: path.display().to_string(),
                message: format!(
                    "not a key-change stamp of version {VERSION} (remove the file: it is \
                     written again, and every cached key is read again)"
                ),
            });
        }
        Ok(KeyCache {
            path,
            stamp,
            entries: Mutex::new(Entries {
                version: 0,
                keys: HashMap::new(),
            }),
        })
    }

    /// The stamp now: read it before reading a key to [`KeyCache::put`].
    pub(crate) fn version(&self) -> Result<u64> {
        let mut stamp = [0u8; 8];
        self.stamp
            .read_exact_at(&mut stamp, STAMP_AT)
            .map_err(|e| io_error(&self.path, e))?;
        Ok(u64::from_le_bytes(stamp))
    }

    /// Records that a key changed: call after the change is committed. A fresh random
    /// stamp, not a count, so two processes changing keys at once can never write back a
    /// value a reader cached entries at.
    pub(crate) fn changed(&self) -> Result<()> {
        self.stamp
            .write_all_at(&random()?.to_le_bytes(), STAMP_AT)
            .map_err(|e| io_error(&self.path, e))
    }

    /// The key of `digest` as cached, if no key has changed since.
    pub(crate) fn get(&self, digest: &Digest) -> Result<Option<KeyInfo>> {
        let version = self.version()?;
        let mut entries = lock(&self.entries);
        if entries.version != version {
            entries.keys.clear();
            entries.version = version;
            return Ok(None);
        }
        Ok(entries.keys.get(digest).cloned())
    }

    /// Caches a key read after the stamp was `version`; a key read before a change that
    /// [`KeyCache::get`] has already seen is dropped.
    pub(crate) fn put(&self, version: u64, digest: Digest, key: KeyInfo) {
        let mut entries = lock(&self.entries);
        if entries.version == version {
            entries.keys.insert(digest, key);
        }
    }
}

fn random() -> Result<u64> {
    Ok(u64::from_le_bytes(crate::secret::random_bytes()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_moves_the_stamp_every_process_reads() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("accounts.sqlite");
        let (server, cli) = (
            KeyCache::open(&store).unwrap(),
            KeyCache::open(&store).unwrap(),
        );
        let before = server.version().unwrap();
        assert_eq!(
            cli.version().unwrap(),
            before,
            "one stamp, kept on reopening"
        );
        cli.changed().unwrap();
        let after = server.version().unwrap();
        assert_ne!(after, before);
        assert_eq!(KeyCache::open(&store).unwrap().version().unwrap(), after);
    }

    #[test]
    fn a_file_of_another_kind_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("accounts.sqlite");
        std::fs::write(stamp_path(&store), b"not a stamp at all").unwrap();
        let Err(e) = KeyCache::open(&store) else {
            panic!("opened a file of another kind")
        };
        let e = e.to_string();
        assert!(
            e.contains("accounts.sqlite-keys") && e.contains("version 1"),
            "{e}"
        );
    }
}
