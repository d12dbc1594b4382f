//! Historic builds: a new snapshot of a fixed date range, with flow metrics, built beside
//! the serving one and switched to by replacing one small file.
//!
//! ```text
//! DATA/historic-<build>.building/   while building (removed by the next build if killed)
//! DATA/historic-<build>/            complete, renamed into place
//! DATA/historic.current             "historic-<build>": written to a temporary file,
//!                                   synced, renamed over the old one, directory synced
//! ```
//!
//! Until the rename of `historic.current`, the serving snapshot is untouched; after it,
//! the old snapshot is removed (by the server once its last reader is done, or here when
//! no server runs).

use crate::info::IndexInfo;
use crate::serving::now;
use crate::{io_error, DataDir, Error, IndexKind, Result};
use bulkbuild::{BuildOptions, BuildReport, Progress};
use flow::{FlowReport, RankParams, Seed};
use linkstore::{format_day, Store};
use std::fs::File;
use std::path::{Path, PathBuf};

/// What a historic build reads.
pub struct HistoricBuild<'a> {
    pub files: &'a [PathBuf],
    /// Crawls fetched in `[from, to)` (day numbers); `None`: every crawl.
    pub days: Option<(u32, u32)>,
    pub seeds: &'a [Seed],
    pub params: RankParams,
    /// Workers and memory of the bulk build (its date range is `days`).
    pub build: BuildOptions,
}

/// What a historic build did.
#[derive(Debug)]
pub struct HistoricReport {
    /// The new snapshot's directory name.
    pub name: String,
    pub build: BuildReport,
    pub flow: FlowReport,
    pub flow_seconds: f64,
    /// The snapshot it replaced, and whether it was removed here (else the running
    /// server removes it once its readers are done).
    pub replaced: String,
    pub removed_old: bool,
}

const BUILDING: &str = ".building";

fn build_lock(dir: &DataDir) -> Result<File> {
    crate::lock_file(
        dir.root(),
        &dir.root().join("historic-build.lock"),
        &format!(
            "another historic build is running in {}",
            dir.root().display()
        ),
    )
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}

/// Snapshot directories that are neither serving nor being built: left by a build killed
/// after its rename, or replaced while no server could remove them. Skipped while a
/// build runs (it may be between its rename and its switch).
pub(crate) fn remove_stale_snapshots(dir: &DataDir) -> Result<()> {
    let Ok(_lock) = build_lock(dir) else {
        return Ok(());
    };
    let current = dir.historic_name();
    let Ok(entries) = std::fs::read_dir(dir.root()) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let snapshot = name == "historic" || name.starts_with("historic-");
        let stale = snapshot && entry.path().is_dir() && name != current;
        if stale {
            std::fs::remove_dir_all(entry.path()).map_err(io_error(&entry.path()))?;
        }
    }
    Ok(())
}

/// `historic-yyyymmddHHMMSS` of a Unix time.
fn snapshot_name(t: i64) -> String {
    let s = t.rem_euclid(86_400);
    format!(
        "historic-{}{:02}{:02}{:02}",
        format_day(t.div_euclid(86_400) as u32).replace('-', ""),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Builds a new historic snapshot from crawl files and switches the data directory to
/// it. A build that fails or is killed leaves the serving snapshot as it was.
pub fn build_historic(
    dir: &DataDir,
    build: &HistoricBuild<'_>,
    on_progress: &(dyn Fn(&Progress) + Sync),
    on_step: &mut dyn FnMut(&str),
) -> Result<HistoricReport> {
    let _lock = build_lock(dir)?;
    // A killed build's leftovers: its directory and the bulk build's files beside it.
    for entry in std::fs::read_dir(dir.root())
        .map_err(io_error(dir.root()))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("historic-") && name.contains(BUILDING) {
            std::fs::remove_dir_all(entry.path()).map_err(io_error(&entry.path()))?;
        }
    }
    let started = now();
    let mut name = snapshot_name(started);
    let mut n = 1;
    while dir.root().join(&name).exists() {
        n += 1;
        name = format!("{}-{n}", snapshot_name(started));
    }
    let building = dir.root().join(format!("{name}{BUILDING}"));
    let mut opts = build.build.clone();
    opts.read.fetched_between = build
        .days
        .map(|(from, to)| (i64::from(from) * 86_400, i64::from(to) * 86_400));
    // The flow build takes the graph and the backlink rows from the bulk build, so
    // backlinks are written once, in their final order.
    opts.keep_flow_input = true;
    // A snapshot is rebuilt, never updated crawl by crawl: it needs none of the rows that
    // only the incremental writer reads.
    opts.writer_rows = false;
    let mut report = bulkbuild::build(&building, build.files, &opts, on_progress)?;
    let kept = report
        .flow_input
        .take()
        .expect("kept by a build asked to keep it");
    let (flow, flow_seconds) = {
        let store = Store::open(&building, &opts.store).map_err(|source| Error::Store {
            index: IndexKind::Historic,
            path: building.clone(),
            source,
        })?;
        on_step("computing flow metrics");
        let started = std::time::Instant::now();
        let rows = flow::BuiltRows {
            edges: kept.edges()?,
            backlinks: kept.backlinks()?,
        };
        let flow = flow::build_from_rows(&store, rows, build.seeds, &build.params, on_step)?;
        drop(kept);
        let flow_seconds = started.elapsed().as_secs_f64();
        let (range_from, range_to) = build.days.unwrap_or((0, 0));
        IndexInfo {
            updated_at: now(),
            range_from,
            range_to,
            expired_before: 0,
        }
        .write(&store)?;
        store.flush()?;
        (flow, flow_seconds)
    };
    let done = dir.root().join(&name);
    std::fs::rename(&building, &done).map_err(io_error(&building))?;
    sync_dir(dir.root())?;

    // The switch: one rename, made durable before the old snapshot may go.
    let replaced = dir.historic_name();
    let pointer = dir.historic_pointer();
    let temporary = dir.root().join("historic.current.tmp");
    {
        use std::io::Write;
        let mut f = File::create(&temporary).map_err(io_error(&temporary))?;
        f.write_all(format!("{name}\n").as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(io_error(&temporary))?;
    }
    std::fs::rename(&temporary, &pointer).map_err(io_error(&pointer))?;
    sync_dir(dir.root())?;
    on_step(&format!("switched historic to {name}"));

    let old = dir.root().join(&replaced);
    let removed_old = !dir.is_served() && old.is_dir();
    if removed_old {
        std::fs::remove_dir_all(&old).map_err(io_error(&old))?;
    }
    Ok(HistoricReport {
        name,
        build: report,
        flow,
        flow_seconds,
        replaced,
        removed_old,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_names_sort_by_time() {
        assert_eq!(snapshot_name(0), "historic-19700101000000");
        assert_eq!(snapshot_name(1_763_764_245), "historic-20251121223045");
    }
}
