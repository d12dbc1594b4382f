//! API keys that authenticated, by digest, so a request checks its key without a query.
//!
//! An entry is good while the account store is unchanged: `PRAGMA data_version` on a
//! connection that never writes moves with every commit of any other connection, in this
//! process or another (the `linkbase keys` CLI), so a key revoked, cycled or restricted
//! anywhere is read again on its next use. Only keys that exist are cached, so the cache
//! holds at most one entry per key in the store.

use crate::secret::Digest;
use crate::{lock, KeyInfo, Result};
use rusqlite::Connection;
use std::collections::HashMap;
use std::sync::Mutex;

pub(crate) struct KeyCache {
    /// Read-only; used for nothing but `data_version`.
    watch: Mutex<Connection>,
    entries: Mutex<Entries>,
}

struct Entries {
    /// The store's version the entries were read at.
    version: i64,
    keys: HashMap<Digest, KeyInfo>,
}

impl KeyCache {
    pub(crate) fn new(watch: Connection) -> KeyCache {
        KeyCache {
            watch: Mutex::new(watch),
            entries: Mutex::new(Entries {
                version: i64::MIN,
                keys: HashMap::new(),
            }),
        }
    }

    /// The store's version now: read it before reading a key to [`KeyCache::put`].
    pub(crate) fn version(&self) -> Result<i64> {
        Ok(lock(&self.watch)
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?)
    }

    /// The key of `digest` as cached, if the store has not changed since.
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

    /// Caches a key read after the store was at `version`; a key read before a change
    /// that [`KeyCache::get`] has already seen is dropped.
    pub(crate) fn put(&self, version: i64, digest: Digest, key: KeyInfo) {
        let mut entries = lock(&self.entries);
        if entries.version == version {
            entries.keys.insert(digest, key);
        }
    }
}
