//! First ingest into an empty index: a bulk build into a directory of its own, renamed
//! into place when complete, so a killed build leaves the index as it was.

use crate::historic::sync_dir;
use crate::info::IndexInfo;
use crate::serving::now;
use crate::{io_error, DataDir, Error, IndexKind, Result};
use bulkbuild::{BuildOptions, BuildReport, Progress};
use linkstore::{ExpireStats, Store, StoreOptions};
use std::path::PathBuf;

/// What a bulk ingest did.
#[derive(Debug)]
pub struct BulkIngest {
    pub build: BuildReport,
    /// Links and pages outside the fresh window (fresh only).
    pub expired: ExpireStats,
}

/// True when an index holds no crawl yet (its directory may not exist): its first ingest
/// can be a bulk build.
pub fn is_empty_index(dir: &DataDir, kind: IndexKind) -> Result<bool> {
    let path = dir.index_path(kind);
    if !path.exists() {
        return Ok(true);
    }
    let store = dir.open(kind, &StoreOptions::default())?;
    store.is_empty().map_err(|source| Error::Store {
        index: kind,
        path,
        source,
    })
}

fn building_path(dir: &DataDir, kind: IndexKind) -> PathBuf {
    linkstore::sibling_path(&dir.index_path(kind), ".building")
}

/// Builds an empty index from crawl files with the bulk builder, then renames it into
/// place. No server may hold the data directory.
///
/// The fresh index takes crawls one by one from then on, so it gets the rows only the
/// incremental writer reads. The historic index is a snapshot, rebuilt rather than
/// updated (`docs/format.md`, "Snapshots"): it is built without them, as by a historic
/// build, whatever `opts.writer_rows` says.
pub fn bulk_ingest(
    dir: &DataDir,
    kind: IndexKind,
    files: &[PathBuf],
    opts: &BuildOptions,
    window_days: u32,
    on_progress: &(dyn Fn(&Progress) + Sync),
) -> Result<BulkIngest> {
    let path = dir.index_path(kind);
    let building = building_path(dir, kind);
    if building.exists() {
        std::fs::remove_dir_all(&building).map_err(io_error(&building))?;
    }
    let opts = BuildOptions {
        writer_rows: kind == IndexKind::Fresh,
        ..opts.clone()
    };
    let build = bulkbuild::build(&building, files, &opts, on_progress)?;
    let store_err = |source| Error::Store {
        index: kind,
        path: building.clone(),
        source,
    };
    let mut expired = ExpireStats::default();
    {
        let store = Store::open(&building, &opts.store).map_err(store_err)?;
        let mut info = IndexInfo::default();
        if kind == IndexKind::Fresh {
            let newest = u32::try_from(
                store
                    .latest_index_counters()
                    .map_err(store_err)?
                    .last_crawl_day,
            )
            .unwrap_or(0);
            let window_from = newest.saturating_sub(window_days.max(1) - 1);
            expired = store
                .writer()
                .map_err(store_err)?
                .expire_before(window_from)
                .map_err(store_err)?;
            info.expired_before = window_from;
        }
        store.flush().map_err(store_err)?;
        info.updated_at = now();
        info.write(&store)?;
    }
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(io_error(&path))?;
    }
    std::fs::rename(&building, &path).map_err(io_error(&building))?;
    sync_dir(dir.root())?;
    Ok(BulkIngest { build, expired })
}
