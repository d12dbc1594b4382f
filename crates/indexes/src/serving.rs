//! The indexes as a server holds them: fresh ingested while serving and published one
//! whole file at a time, historic swapped when a build names a new snapshot.

use crate::info::{IndexInfo, IndexStats, StatsMemo};
use crate::writer_sink::{ingest_file, IngestOptions};
use crate::{DataDir, Error, IndexKind, Result};
use ingest::{FileSummary, Progress};
use linkstore::{ExpireStats, Store, StoreOptions};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Default length of the fresh window, in days.
pub const DEFAULT_WINDOW_DAYS: u32 = 90;

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// What one ingested file did to an index.
#[derive(Debug, Clone)]
pub struct FreshIngest {
    pub file: FileSummary,
    /// Links and pages that left the fresh window after this file (none for historic).
    pub expired: ExpireStats,
    /// First day of the fresh window after this file (0 for historic).
    pub window_from: u32,
}

/// Ingests one crawl file into an index's store and brings its information up to date;
/// for fresh, then expires whatever left the window of `window_days` ending at the
/// newest crawl day. Used by the server (for fresh, then publishing) and by the CLI when
/// no server holds the data directory.
pub fn ingest_into(
    store: &Store,
    kind: IndexKind,
    path: &Path,
    opts: &IngestOptions,
    window_days: u32,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<FreshIngest> {
    let file = ingest_file(store, path, opts, on_progress).map_err(|source| Error::Ingest {
        path: path.to_path_buf(),
        source,
    })?;
    let mut info = IndexInfo::read(store)?.unwrap_or_default();
    let (mut expired, mut window_from) = (ExpireStats::default(), 0);
    if kind == IndexKind::Fresh {
        // The file is not published yet: read what was written.
        let newest = u32::try_from(store.latest_index_counters()?.last_crawl_day).unwrap_or(0);
        window_from = newest.saturating_sub(window_days.max(1) - 1);
        if window_from > info.expired_before {
            expired = store.writer()?.expire_before(window_from)?;
            info.expired_before = window_from;
        }
    }
    // Durable before the index says it was updated (ingest writes skip the WAL).
    store.flush()?;
    info.updated_at = now();
    info.write(store)?;
    Ok(FreshIngest {
        file,
        expired,
        window_from,
    })
}

/// The indexes of a served data directory.
pub struct Indexes {
    dir: DataDir,
    options: StoreOptions,
    fresh: Arc<Store>,
    /// The serving historic snapshot and its directory name.
    historic: RwLock<(String, Arc<Store>)>,
    window_days: u32,
    /// One fresh ingest at a time, so each publishes exactly one whole file.
    fresh_ingest: Mutex<()>,
    /// Each index's statistics, fresh then historic.
    stats: [StatsMemo; 2],
}

impl Indexes {
    /// Opens both indexes for serving: readers see published states only. Removes
    /// historic snapshots a finished or killed build left behind.
    pub fn open(dir: DataDir, window_days: u32, options: StoreOptions) -> Result<Indexes> {
        crate::historic::remove_stale_snapshots(&dir)?;
        let fresh = Arc::new(dir.open(IndexKind::Fresh, &options)?);
        fresh.publish();
        let name = dir.historic_name();
        let historic = Arc::new(dir.open(IndexKind::Historic, &options)?);
        historic.publish();
        Ok(Indexes {
            dir,
            options,
            fresh,
            historic: RwLock::new((name, historic)),
            window_days,
            fresh_ingest: Mutex::new(()),
            stats: Default::default(),
        })
    }

    pub fn data_dir(&self) -> &DataDir {
        &self.dir
    }

    pub fn window_days(&self) -> u32 {
        self.window_days
    }

    /// The store serving an index now.
    pub fn store(&self, kind: IndexKind) -> Arc<Store> {
        match kind {
            IndexKind::Fresh => self.fresh.clone(),
            IndexKind::Historic => self
                .historic
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .1
                .clone(),
        }
    }

    pub fn stats(&self, kind: IndexKind) -> Result<IndexStats> {
        self.stats_of(kind, &self.store(kind))
    }

    /// The statistics of `store`, which serves (or served until a swap) index `kind`:
    /// read again only when the store has changed since the last call.
    pub fn stats_of(&self, kind: IndexKind, store: &Arc<Store>) -> Result<IndexStats> {
        let memo = match kind {
            IndexKind::Fresh => &self.stats[0],
            IndexKind::Historic => &self.stats[1],
        };
        memo.stats(kind, store)
    }

    /// Ingests a crawl file into fresh while serving. Readers keep seeing the state before
    /// the file until it is whole and the window is expired; then both appear at once.
    pub fn ingest_fresh(
        &self,
        path: &Path,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<FreshIngest> {
        let _one = self.fresh_ingest.lock().unwrap_or_else(|p| p.into_inner());
        let report = ingest_into(
            &self.fresh,
            IndexKind::Fresh,
            path,
            &IngestOptions::default(),
            self.window_days,
            on_progress,
        )?;
        self.fresh.publish();
        Ok(report)
    }

    /// Computes flow metrics of the fresh index while serving (no ingest meanwhile);
    /// readers switch to them at once when the build publishes.
    pub fn flow_fresh(
        &self,
        seeds: &[flow::Seed],
        params: &flow::RankParams,
        progress: &mut dyn FnMut(&str),
    ) -> Result<flow::FlowReport> {
        let _one = self.fresh_ingest.lock().unwrap_or_else(|p| p.into_inner());
        Ok(flow::build(&self.fresh, seeds, params, progress)?)
    }

    /// Switches to the historic snapshot `DATA/historic.current` names, if it changed.
    /// Requests already reading the old snapshot finish on it; it is closed and removed
    /// when the last of them lets go.
    pub fn reload_historic(&self) -> Result<bool> {
        let name = self.dir.historic_name();
        if self.historic.read().unwrap_or_else(|p| p.into_inner()).0 == name {
            return Ok(false);
        }
        // Never create an empty store for a name that points nowhere.
        let path = self.dir.index_path(IndexKind::Historic);
        if !path.is_dir() {
            return Err(Error::Io {
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "historic.current names no snapshot directory",
                ),
            });
        }
        let store = Arc::new(self.dir.open(IndexKind::Historic, &self.options)?);
        store.publish();
        let (_, old) = std::mem::replace(
            &mut *self.historic.write().unwrap_or_else(|p| p.into_inner()),
            (name, store),
        );
        std::thread::spawn(move || {
            while Arc::strong_count(&old) > 1 {
                std::thread::sleep(Duration::from_millis(20));
            }
            let path = old.path().to_path_buf();
            drop(old);
            // If this fails, the next start removes it (`remove_stale_snapshots`).
            let _ = std::fs::remove_dir_all(&path);
        });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_to_nothing_keeps_the_serving_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::new(dir.path());
        let indexes = Indexes::open(data.clone(), 90, StoreOptions::default()).unwrap();
        let serving = indexes.store(IndexKind::Historic).path().to_path_buf();
        std::fs::write(data.historic_pointer(), "historic-20990101000000\n").unwrap();
        let e = indexes.reload_historic().unwrap_err().to_string();
        assert!(e.contains("names no snapshot"), "{e}");
        assert!(!dir.path().join("historic-20990101000000").exists());
        assert_eq!(indexes.store(IndexKind::Historic).path(), serving);
    }
}
