//! What an index says about itself: when it was last updated, the dates it covers, and
//! (fresh) how far its window has expired. Kept in the store's `meta` column family under
//! `x.index` (layout in `docs/format.md`).

use crate::{Error, IndexKind, Result};
use linkstore::{Store, StoreStamp};
use std::sync::{Arc, Mutex, Weak};

const INFO_NAME: &str = "index";
const INFO_VERSION: u8 = 1;
const INFO_LEN: usize = 1 + 8 + 4 + 4 + 4;

/// The stored description of an index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexInfo {
    /// Unix seconds of the last change: the end of the last fresh ingest, or the historic
    /// build's completion.
    pub updated_at: i64,
    /// A historic build's fixed range, as day numbers (`to` exclusive); 0 when open.
    pub range_from: u32,
    pub range_to: u32,
    /// Fresh: links last seen before this day are gone.
    pub expired_before: u32,
}

impl IndexInfo {
    pub fn read(store: &Store) -> Result<Option<IndexInfo>> {
        let Some(v) = store.info(INFO_NAME)? else {
            return Ok(None);
        };
        if v.len() != INFO_LEN || v[0] != INFO_VERSION {
            return Err(Error::Info(format!(
                "{}: index information version {} of {} bytes; this build reads version {INFO_VERSION} of {INFO_LEN}",
                store.path().display(),
                v.first().copied().unwrap_or(0),
                v.len()
            )));
        }
        let u32_at = |i: usize| u32::from_be_bytes(v[i..i + 4].try_into().expect("4 bytes"));
        Ok(Some(IndexInfo {
            updated_at: i64::from_be_bytes(v[1..9].try_into().expect("8 bytes")),
            range_from: u32_at(9),
            range_to: u32_at(13),
            expired_before: u32_at(17),
        }))
    }

    pub fn write(&self, store: &Store) -> Result<()> {
        let mut v = Vec::with_capacity(INFO_LEN);
        v.push(INFO_VERSION);
        v.extend_from_slice(&self.updated_at.to_be_bytes());
        v.extend_from_slice(&self.range_from.to_be_bytes());
        v.extend_from_slice(&self.range_to.to_be_bytes());
        v.extend_from_slice(&self.expired_before.to_be_bytes());
        store.put_info(INFO_NAME, &v)?;
        Ok(())
    }
}

/// The four statistics an index publishes, and the identity of its build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStats {
    pub kind: IndexKind,
    pub crawled_urls: i64,
    pub found_urls: i64,
    /// First and last day of links covered (0: none).
    pub first_day: u32,
    pub last_day: u32,
    /// Unix seconds of the last update (0: never).
    pub updated_at: i64,
}

impl IndexStats {
    pub fn of(kind: IndexKind, store: &Store) -> Result<IndexStats> {
        let c = store.read().index_counters()?;
        let info = IndexInfo::read(store)?.unwrap_or_default();
        let day = |d: i64| u32::try_from(d.max(0)).unwrap_or(0);
        let (mut first, mut last) = (day(c.first_link_day), day(c.last_link_day));
        // The first link date never moves later as links expire; the window does.
        if info.expired_before > 0 && first > 0 {
            first = first.max(info.expired_before);
        }
        if info.range_from > 0 {
            first = info.range_from;
        }
        if info.range_to > 0 {
            last = info.range_to - 1;
        }
        Ok(IndexStats {
            kind,
            crawled_urls: c.crawled_urls,
            found_urls: c.indexed_urls,
            first_day: first,
            last_day: last,
            updated_at: if info.updated_at > 0 {
                info.updated_at
            } else {
                // Stores written before index information existed: their last crawl day.
                c.last_crawl_day.max(0) * 86_400
            },
        })
    }
}

/// An index's last [`IndexStats`], kept while its store's stamp stands still: every data
/// reply carries them, and reading them costs a merged counter row and a `meta` read.
#[derive(Default)]
pub(crate) struct StatsMemo(Mutex<Option<Memo>>);

struct Memo {
    /// Not an `Arc`: the memo must not keep a swapped-out store open. The allocation it
    /// keeps alive cannot be reused by another store, so equal pointers are one store.
    store: Weak<Store>,
    stamp: StoreStamp,
    stats: IndexStats,
}

impl StatsMemo {
    pub(crate) fn stats(&self, kind: IndexKind, store: &Arc<Store>) -> Result<IndexStats> {
        let stamp = store.stamp();
        let kept =
            |m: &Memo| m.stamp == stamp && std::ptr::eq(m.store.as_ptr(), Arc::as_ptr(store));
        if let Some(m) = self
            .lock()
            .as_ref()
            .filter(|m| kept(m) && m.stats.kind == kind)
        {
            return Ok(m.stats.clone());
        }
        let stats = IndexStats::of(kind, store)?;
        *self.lock() = Some(Memo {
            store: Arc::downgrade(store),
            stamp,
            stats: stats.clone(),
        });
        Ok(stats)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Memo>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_round_trips_and_refuses_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        assert_eq!(IndexInfo::read(&store).unwrap(), None);
        let info = IndexInfo {
            updated_at: 1_763_000_000,
            range_from: 20_000,
            range_to: 20_100,
            expired_before: 7,
        };
        info.write(&store).unwrap();
        assert_eq!(IndexInfo::read(&store).unwrap(), Some(info));
        store.put_info(INFO_NAME, &[9; INFO_LEN]).unwrap();
        let e = IndexInfo::read(&store).unwrap_err().to_string();
        assert!(e.contains("version 9"), "{e}");
    }

    #[test]
    fn kept_stats_follow_writes_publishes_and_swapped_stores() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let open =
            |d: &tempfile::TempDir| Arc::new(Store::open(d.path(), &Default::default()).unwrap());
        let (a, b) = (open(&dirs[0]), open(&dirs[1]));
        a.publish();
        let memo = StatsMemo::default();
        let updated =
            |store: &Arc<Store>| memo.stats(IndexKind::Historic, store).unwrap().updated_at;
        let info = |at: i64| IndexInfo {
            updated_at: at,
            ..Default::default()
        };
        info(100).write(&a).unwrap();
        assert_eq!(updated(&a), 100);
        let stamp = a.stamp();
        assert_eq!(updated(&a), 100);
        assert_eq!(a.stamp(), stamp, "reading moves no stamp");
        // A write the memo has not seen, then a publish: both are read again.
        info(200).write(&a).unwrap();
        assert_eq!(updated(&a), 200);
        a.publish();
        assert_ne!(a.stamp(), stamp);
        assert_eq!(updated(&a), 200);
        // Another store (a historic swap) at the same stamp is never taken for it.
        info(300).write(&b).unwrap();
        info(300).write(&b).unwrap();
        b.publish();
        b.publish();
        assert_eq!(b.stamp(), a.stamp());
        assert_eq!(updated(&b), 300);
        assert_eq!(updated(&a), 200);
    }
}
