//! Bulk builds: crawl files into a new, fully queryable store without a single
//! read-modify-write.
//!
//! The build is a sort-based pipeline on timely dataflow ([`pipeline`]): crawl files are
//! read in parallel, crawls are grouped by page and replayed in time order (the same
//! crawl semantics as the incremental writer, from `linkstore`), every view is computed
//! by a sorted group-by, and the rows go into SST files that are added to the store at
//! the end. Sorting spills to disk under a memory budget, so the input is bounded by
//! disk, not memory. Workers are threads today; the dataflow exchanges rows only by
//! timely channels, so the same program runs as several processes.
//!
//! For a historic build the build keeps the link graph and the backlink rows for the flow
//! build that follows ([`FlowInput`]) instead of writing backlinks, which the flow build
//! then writes once, in their final order.
//!
//! This crate knows no key or value layout: `linkstore::build` encodes, reduces and
//! writes rows; this crate moves, sorts and schedules them.

mod error;
mod flow_input;
mod pipeline;
mod progress;
mod row_batch;
mod sorter;

pub use error::{Error, Result};
pub use flow_input::{FlowInput, RowFile};
pub use progress::{Progress, Stage};

use ingest::{FileSummary, ReadOptions};
use linkstore::build::{PageReport, Table};
use linkstore::{Store, StoreOptions};
use sorter::RunPolicy;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// [`BuildOptions::raw_run_bytes`] when the machine's memory is not known.
pub const DEFAULT_RAW_RUN_BYTES: u64 = 2 << 30;

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Worker threads (default: the machine's cores).
    pub workers: usize,
    /// Memory for sorting, all workers together. Each worker runs four sorters (pages,
    /// two view stages at a time, counters); each gets a quarter of its share.
    pub memory_bytes: usize,
    /// Only crawls fetched in this range, as for the incremental ingest.
    pub read: ReadOptions,
    pub store: StoreOptions,
    /// Keep the link graph and the backlink rows for the flow build that follows
    /// ([`BuildReport::flow_input`]) instead of writing backlinks to the store: the
    /// store is queryable once that flow build has published them.
    pub keep_flow_input: bool,
    /// Write the rows that only the incremental writer reads (external links' `links`
    /// summaries, `urls`, `expiry`, writer-only `distinct` kinds; `docs/format.md`,
    /// "Snapshots"). Without them the store serves every read as well and is smaller,
    /// and is marked a snapshot, which takes no crawl one by one
    /// ([`linkstore::Store::is_snapshot`]): a historic build, or a first ingest into the
    /// historic index.
    pub writer_rows: bool,
    /// Raw bytes (keys and values) of rows after which an SST file of a table with a
    /// dictionary is finished and the next begun. RocksDB holds such a file's blocks
    /// uncompressed until it is finished (to train its dictionary), so this bounds that
    /// memory per open file.
    pub file_bytes: u64,
    /// Bytes of rows in sorted runs (spilled past `memory_bytes`, all sorters together)
    /// that a build's first runs may hold and be written as they are; from the first run
    /// past it, the build LZ4-compresses them, which takes about a third of the disk and
    /// about a tenth more CPU. Runs as they are cost no CPU to write and
    /// read back, as long as the page cache holds them: past that, writeback and reclaim
    /// cost more than compression (`docs/benchmarks.md`). Default:
    /// [`DEFAULT_RAW_RUN_BYTES`]; `linkbase` takes an eighth of the machine's memory.
    pub raw_run_bytes: u64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            memory_bytes: 2 << 30,
            read: ReadOptions::default(),
            store: StoreOptions::default(),
            keep_flow_input: false,
            writer_rows: true,
            file_bytes: linkstore::build::FILE_RAW_BYTES,
            raw_run_bytes: DEFAULT_RAW_RUN_BYTES,
        }
    }
}

/// What a build did.
#[derive(Debug)]
pub struct BuildReport {
    /// Per input file, in the order given.
    pub files: Vec<FileSummary>,
    pub pages: PageReport,
    /// Seconds spent reading, sorting/reducing/writing, and ingesting.
    pub read_seconds: f64,
    pub reduce_seconds: f64,
    pub ingest_seconds: f64,
    pub sst_files: usize,
    pub sst_bytes: u64,
    pub rows: u64,
    /// Sorted runs spilled to the scratch directory and written as they are
    /// ([`BuildOptions::raw_run_bytes`]); 0 when every sort fit in memory.
    pub runs_as_they_are: u64,
    /// Sorted runs spilled to the scratch directory and LZ4-compressed.
    pub runs_compressed: u64,
    /// What [`BuildOptions::keep_flow_input`] kept.
    pub flow_input: Option<FlowInput>,
}

impl BuildReport {
    /// Links found in the crawl files (every link of every crawl read).
    pub fn links_read(&self) -> u64 {
        self.files.iter().map(|f| f.links_found).sum()
    }

    pub fn seconds(&self) -> f64 {
        self.read_seconds + self.reduce_seconds + self.ingest_seconds
    }
}

/// Builds a new store at `dest` from `files`. `dest` must not hold a store with crawls
/// (an empty store is fine). The store is complete when this returns; a build that
/// fails or is killed leaves a partial store, so callers build into a directory of their
/// own and rename it into place.
pub fn build(
    dest: &Path,
    files: &[PathBuf],
    opts: &BuildOptions,
    on_progress: &(dyn Fn(&Progress) + Sync),
) -> Result<BuildReport> {
    let store = Store::open(dest, &opts.store)?;
    if !store.is_empty()? {
        return Err(Error::NotEmpty(dest.to_path_buf()));
    }
    let scratch = scratch_dir(dest);
    let flow_input = linkstore::sibling_path(dest, ".flow-input");
    for dir in [&scratch, &flow_input] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
    }
    std::fs::create_dir_all(&scratch).map_err(|e| Error::io(&scratch, e))?;
    let flow_input = match opts.keep_flow_input {
        true => {
            std::fs::create_dir_all(&flow_input).map_err(|e| Error::io(&flow_input, e))?;
            // Removed when dropped: with the report, or now if the build fails.
            Some(FlowInput::new(flow_input))
        }
        false => None,
    };
    let result = build_into(&store, &scratch, files, opts, flow_input, on_progress);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Sorted runs and SST files live beside the store until ingested (same file system,
/// so ingest moves them).
fn scratch_dir(dest: &Path) -> PathBuf {
    linkstore::sibling_path(dest, ".bulk-scratch")
}

fn build_into(
    store: &Store,
    scratch: &Path,
    files: &[PathBuf],
    opts: &BuildOptions,
    mut flow_input: Option<FlowInput>,
    on_progress: &(dyn Fn(&Progress) + Sync),
) -> Result<BuildReport> {
    let workers = opts.workers.max(1);
    let progress = Arc::new(progress::Counters::default());
    let mut bytes_total = 0;
    for f in files {
        bytes_total += std::fs::metadata(f).map_err(|e| Error::io(f, e))?.len();
    }
    progress.add(&progress.bytes_total, bytes_total);
    let plan = Arc::new(pipeline::Plan {
        files: files.to_vec(),
        read: opts.read.clone(),
        hash_bits: store.hash_bits(),
        scratch: scratch.to_path_buf(),
        sorter_budget: opts.memory_bytes / workers / 4,
        runs: RunPolicy::new(opts.raw_run_bytes),
        file_bytes: opts.file_bytes,
        progress: progress.clone(),
        flow_input: flow_input.as_ref().map(|f| f.dir().to_path_buf()),
        writer_rows: opts.writer_rows,
    });
    if !opts.writer_rows {
        store.mark_snapshot()?;
    }

    let started = Instant::now();
    // Dropped when the workers are done: the progress thread then ends at once instead
    // of at its next tick, which held up every build by a quarter second on average.
    let (done, workers_done) = std::sync::mpsc::channel::<std::convert::Infallible>();
    let read_done_at = std::sync::Mutex::new(None::<f64>);
    let outputs = std::thread::scope(|s| {
        let (progress, read_done_at) = (&progress, &read_done_at);
        s.spawn(move || loop {
            let secs = started.elapsed().as_secs_f64();
            let all_read = progress::Counters::get(&progress.files_read) == files.len() as u64;
            let (stage, stage_secs) = if all_read {
                let read_secs = *read_done_at
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(secs);
                (Stage::Reduce, secs - read_secs)
            } else {
                (Stage::Read, secs)
            };
            on_progress(&Progress::of(progress, stage, secs, stage_secs));
            match workers_done.recv_timeout(Duration::from_millis(500)) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(never) => match never {},
                Err(RecvTimeoutError::Disconnected) => break,
            }
        });
        let plan = plan.clone();
        let run = timely::execute(timely::Config::process(workers), move |worker| {
            pipeline::run_worker(worker, &plan).map_err(|e| e.to_string())
        });
        let outputs = match run {
            Ok(guards) => guards.join(),
            Err(e) => vec![Err(e)],
        };
        drop(done);
        outputs
    });
    let reduced_at = started.elapsed().as_secs_f64();
    let read_seconds = read_done_at
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or(reduced_at)
        .min(reduced_at);

    let mut summaries: Vec<Option<FileSummary>> = vec![None; files.len()];
    let mut parsed = Vec::new();
    let mut pages = PageReport::default();
    let mut by_table: Vec<Vec<(usize, PathBuf)>> = vec![Vec::new(); Table::ALL.len()];
    for (w, out) in outputs.into_iter().enumerate() {
        let out = out.map_err(Error::Worker)?.map_err(Error::Worker)?;
        for (i, summary) in out.summaries {
            summaries[i] = Some(summary);
        }
        parsed.extend(out.parsed);
        add_report(&mut pages, &out.pages);
        for (table, path) in out.files {
            by_table[table as usize].push((w, path));
        }
        // Workers in order: the backlink files in key order.
        if let Some(f) = &mut flow_input {
            f.add(out.kept);
        }
    }
    for (i, part) in parsed {
        if let Some(summary) = &mut summaries[i] {
            summary.merge(part);
        }
    }

    let (runs_as_they_are, runs_compressed) = plan.runs.runs();
    on_progress(&Progress::of(&progress, Stage::Ingest, reduced_at, 0.0));
    let ingest_started = Instant::now();
    let mut sst_files = 0;
    for table in Table::ALL {
        let mut files = std::mem::take(&mut by_table[table as usize]);
        // Workers own ascending hash ranges: worker order is key order.
        files.sort();
        sst_files += files.len();
        let paths: Vec<PathBuf> = files.into_iter().map(|(_, p)| p).collect();
        store.ingest_table_files(table, &paths)?;
    }
    store.flush()?;
    let ingest_seconds = ingest_started.elapsed().as_secs_f64();
    Ok(BuildReport {
        files: summaries.into_iter().flatten().collect(),
        pages,
        read_seconds,
        reduce_seconds: reduced_at - read_seconds,
        ingest_seconds,
        sst_files,
        sst_bytes: progress::Counters::get(&progress.sst_bytes),
        rows: progress::Counters::get(&progress.rows_written),
        runs_as_they_are,
        runs_compressed,
        flow_input,
    })
}

fn add_report(acc: &mut PageReport, r: &PageReport) {
    acc.crawls_applied += r.crawls_applied;
    acc.crawls_skipped += r.crawls_skipped;
    acc.pages += r.pages;
    acc.links += r.links;
    acc.stats += r.stats;
}
