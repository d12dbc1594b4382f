//! `linkbase`: the command line of the Linkbase link intelligence engine.

/// `println!` for what a command prints: when the reader of a pipe closes it early
/// (`linkbase backlinks ... | head`), the command ends without a word and with the status
/// of a Unix tool the closed pipe stopped, instead of panicking; any other failure to
/// write is an error naming standard output.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            $crate::output_failed(e);
        }
    }};
}

mod ingest_cache;
mod keys;
mod serve_config;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use indexes::{DataDir, IndexKind, IngestOptions};
use indicatif::{ProgressBar, ProgressStyle};
use ingest::FileSummary;
use linkstore::{format_day, BacklinkQuery, Counters, Item, Store, StoreOptions};
use serve_config::{ServeFlags, ServeOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Builds and ingest allocate many small rows from several threads at once; mimalloc's
/// per-thread heaps keep that off a shared lock (`docs/benchmarks.md`, "Bulk build").
/// It also replaces the C library's malloc (libmimalloc-sys `override`), so RocksDB's
/// allocations follow the same options as ours.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its index in `mi_option_t`, the same in the
/// library's versions 2 and 3) and its defaults there, milliseconds (10 in version 2,
/// 1,000 in version 3, which this build uses).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_PURGE_DELAY_DEFAULTS: [std::os::raw::c_long; 2] = [10, 1_000];
/// The server's purge delay, milliseconds.
const SERVE_PURGE_DELAY_MS: std::os::raw::c_long = 100;
/// The incremental writer's: never (mimalloc's -1).
const INCREMENTAL_PURGE_DELAY_MS: std::os::raw::c_long = -1;

/// Sets mimalloc's purge delay, the time freed memory is kept before it goes back to the
/// system, for what this process does:
///
/// - A server runs for weeks, so it gives freed memory back instead of keeping it
///   (`SERVE_PURGE_DELAY_MS`):
///   - It frees replies of tens of megabytes many times a second; mimalloc (Rust's
///     allocations) returns freed memory only after a delay, and under load its default
///     second alone held about a gigabyte (the abuse test: 1.3 GB peak with immediate
///     purging against 2.0-2.9 GB without). A tenth of a second keeps memory for the
///     next request instead: purging at once made every 50,000-row reply fault in and
///     zero its pages afresh (a fifth of its CPU by `perf`; 100 -> 87 ms at the client).
///   - RocksDB's allocations (blocks moving through the cache, memtables, compactions
///     under fresh ingest) go through mimalloc too; the C library's malloc, which it used
///     before, kept what was freed in per-thread arenas: about 250 MB more after each
///     fresh ingest.
/// - An incremental ingest never gives memory back (`INCREMENTAL_PURGE_DELAY_MS`): it
///   frees and allocates batches and memtables again all the time, and `perf` showed 5%
///   of its writer thread zeroing pages faulted in afresh. A 957k-link round took
///   25.3-26.7 s against 26.7-29.2 s, for about 10% more peak memory (2.53-2.59 against
///   2.33-2.34 GB).
/// - Bulk builds keep the defaults: they reuse what they free, and never purging added
///   half to their peak memory for no speed.
///
/// # Safety
///
/// No other thread may exist yet (none may read mimalloc's options while one changes).
unsafe fn set_purge_delay(ms: std::os::raw::c_long) {
    // SAFETY: both functions take and return integers and touch no memory of ours; the
    // caller guarantees that no other thread reads the option while it changes. The
    // option is changed only if it reads as one of its defaults, so a library whose
    // options are numbered otherwise is left alone.
    unsafe {
        if MI_PURGE_DELAY_DEFAULTS.contains(&libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY))
        {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms);
        }
    }
}

/// True when an index already holds table files, so an ingest into it is incremental.
/// Decided from the directory alone, before any store (and its threads) is opened; a
/// store that holds rows has table files, since writers skip the WAL and flush on exit.
fn has_table_files(index: &std::path::Path) -> bool {
    std::fs::read_dir(index).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "sst"))
    })
}

#[derive(Parser)]
#[command(
    name = "linkbase",
    version,
    about = "Self-hosted link intelligence engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read crawl files (WARC, WAT, JSON-lines; plain or gzipped) into an index.
    Ingest {
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value = "historic")]
        index: IndexKind,
        /// Crawls per atomic commit.
        #[arg(long, default_value_t = 2000)]
        batch: usize,
        /// Days the fresh index keeps, ending at its newest crawl (when no server runs;
        /// a running server uses its own --fresh-window-days).
        #[arg(long, default_value_t = indexes::DEFAULT_WINDOW_DAYS)]
        window_days: u32,
        /// Apply crawls one by one with the incremental writer even when the index is
        /// empty (by default, an empty index is filled by a bulk build). A historic index
        /// so begun takes later crawls one by one; a bulk-built one is a snapshot,
        /// rebuilt rather than updated.
        #[arg(long)]
        incremental: bool,
        /// Block cache of the incremental writer (512M, 4G, ...): its reads of aggregate
        /// rows miss less with more (a 2.1M-link round on an 18.1M-link index: 76.4-77.0 s
        /// with 1G, 65.3-66.5 s with 2G, 57.1-58.0 s with 6G). Default: four times the
        /// index's size on disk (blocks are cached decompressed, and a long ingest grows
        /// the index), at least 2G and at most a third of memory. Crawls handed to a
        /// running server use its cache.
        #[arg(long, value_parser = parse_size)]
        cache: Option<usize>,
        /// Memtables of the incremental writer, all tables together: fewer, larger
        /// flushes leave compactions less to rewrite (a 4.0M-link round on a 3.9M-link
        /// index: 187 s with 256M, 157 s with 1G). A running server uses its own.
        #[arg(long, default_value = "1G", value_parser = parse_size)]
        memtables: usize,
        #[command(flatten)]
        bulk: BulkArgs,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Historic snapshots: `historic build` makes a new one and switches to it.
    Historic {
        #[command(subcommand)]
        action: HistoricAction,
    },
    /// Whole-index totals, or one item's counters.
    Stats {
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value = "historic")]
        index: IndexKind,
        /// A URL, subdomain or root domain.
        item: Option<String>,
        /// Also the bytes on disk of each table, and per external backlink.
        #[arg(long)]
        disk: bool,
    },
    /// Backlinks of an item by SourceTrustFlow, as tab-separated rows.
    Backlinks {
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value = "historic")]
        index: IndexKind,
        item: String,
        #[arg(long, default_value_t = 20)]
        count: usize,
        #[arg(long, default_value_t = 0)]
        from: usize,
        /// Leave out deleted links.
        #[arg(long)]
        exclude_deleted: bool,
        /// At most N source URLs per referring domain.
        #[arg(long)]
        max_per_domain: Option<usize>,
        /// At most N rows per source URL.
        #[arg(long)]
        max_per_source: Option<usize>,
        /// Only links from this referring root domain.
        #[arg(long)]
        ref_domain: Option<String>,
    },
    /// Compute Citation Flow, Trust Flow and Topical Trust Flow and publish them.
    Flow {
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value = "historic")]
        index: IndexKind,
        /// Trusted seeds (docs/flow.md). Without seeds, Trust Flow is 0 everywhere.
        #[arg(long)]
        seeds: Option<PathBuf>,
        /// Threads for the rank iterations (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Serve the Majestic-compatible API (`/api/json`, `/api/xml`, `/api_command`), the
    /// sandbox under `/sandbox/`, and the OpenApp grant page.
    Serve {
        #[command(flatten)]
        flags: ServeFlags,
    },
    /// Accounts, API keys, OpenApps and access tokens (works while the server runs).
    Keys(keys::KeysArgs),
    /// Generate a sample crawl, ingest it, compute flow metrics, and show what the index knows.
    Demo {
        /// Working directory for the sample crawl and the data.
        #[arg(long, default_value = "demo-data")]
        dir: PathBuf,
        /// Where the API listens once the demo data is ready.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Pages in the synthetic web.
        #[arg(long, default_value_t = 20_000)]
        pages: usize,
    },
}

#[derive(Subcommand)]
enum HistoricAction {
    /// Build a historic snapshot of a date range from crawl files, with flow metrics,
    /// beside the serving one, then switch to it atomically (a running server follows).
    Build {
        #[arg(long)]
        data: PathBuf,
        /// First day of crawls included (yyyy-mm-dd); default: the earliest.
        #[arg(long)]
        from: Option<String>,
        /// Last day of crawls included (yyyy-mm-dd); default: the latest.
        #[arg(long)]
        to: Option<String>,
        /// Trusted seeds for Trust Flow (docs/flow.md).
        #[arg(long)]
        seeds: Option<PathBuf>,
        #[command(flatten)]
        bulk: BulkArgs,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// How a bulk build runs.
#[derive(clap::Args)]
struct BulkArgs {
    /// Worker threads of a bulk build, and of a historic build's rank iterations
    /// (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory for a bulk build's sorting (512M, 4G, ...); beyond it, sorted runs spill
    /// to disk beside the index.
    #[arg(long, default_value = "2G", value_parser = parse_size)]
    memory: usize,
    /// LZ4-compress every sorted run that spills to disk: about a third of the scratch
    /// space, for about a tenth more CPU. By default the first runs, up to an eighth of
    /// the machine's memory, are written as they are (about 550 bytes per link).
    #[arg(long)]
    compress_runs: bool,
}

impl BulkArgs {
    fn options(&self) -> bulkbuild::BuildOptions {
        let mut o = bulkbuild::BuildOptions {
            memory_bytes: self.memory,
            raw_run_bytes: if self.compress_runs {
                0
            } else {
                ingest_cache::physical_memory().map_or(bulkbuild::DEFAULT_RAW_RUN_BYTES, |m| m / 8)
            },
            ..Default::default()
        };
        if let Some(t) = self.threads {
            o.workers = t.max(1);
        }
        o
    }
}

/// `123`, `512K`, `512M`, `4G` (powers of 1024).
fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: usize = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a size like 512M or 4G"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b >= 16 << 20)
        .ok_or_else(|| format!("{s:?}: expected at least 16M"))
}

/// mimalloc 3.3's `mi_option_allow_thp` and `mi_option_minimal_purge_size` (indexes in
/// `mi_option_t`; other versions number them otherwise and are left alone).
const MI_VERSION_3_3: std::os::raw::c_int = 303;
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;
const MI_OPTION_MINIMAL_PURGE_SIZE: libmimalloc_sys::mi_option_t = 44;
/// mimalloc's smallest purge without huge pages, KiB.
const MI_PURGE_SIZE_KIB: std::os::raw::c_long = 64;

/// No transparent huge pages from the allocator (which serves RocksDB too: it replaces
/// the C library's malloc). A huge page is zeroed whole when first touched and split
/// when part of it is given back: a bulk build spent a tenth of its CPU in the kernel
/// zeroing them (1.04M links: 18.1 -> 16.6 s, system time 4.6 -> 1.2 s), and a server's
/// resident size counted whole huge pages of which little was in use.
///
/// The option takes effect from `main` on: mimalloc's first arena (1 GiB), reserved and
/// advised for huge pages at its first allocation before `main`, keeps them. An
/// incremental ingest turns them back on ([`allow_transparent_huge_pages`]).
fn no_transparent_huge_pages() {
    // SAFETY: these functions take and return integers and touch no memory of ours; they
    // are called first thing in `main`, before any other thread exists, so no thread
    // reads an option while it changes. The indexes are those of the version checked.
    unsafe {
        if libmimalloc_sys::mi_version() / 100 == MI_VERSION_3_3 {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
            libmimalloc_sys::mi_option_set(MI_OPTION_MINIMAL_PURGE_SIZE, MI_PURGE_SIZE_KIB);
        }
    }
}

/// Transparent huge pages for an incremental ingest, which never gives memory back
/// (`INCREMENTAL_PURGE_DELAY_MS`) and touches gigabytes of it afresh: block cache,
/// memtables, batches. Faulting that in 4 KiB at a time cost it more system time than
/// zeroing whole huge pages: on the 2.12M-link round on an 18.13M-link index (5.7 GB
/// resident) 66.2-66.6 s against 72.0-72.3 s (system time 11.2-11.4 s against
/// 15.4-19.5 s); on the 957k-link round on a 942k-link index (1.9 GB) no difference
/// (22.5-22.7 s against 21.4-24.1 s). Huge pages nowhere (`PR_SET_THP_DISABLE`) was 8%
/// slower on the smaller round.
///
/// # Safety
///
/// No other thread may exist yet (none may read mimalloc's options while one changes).
unsafe fn allow_transparent_huge_pages() {
    // SAFETY: the function takes and returns integers and touches no memory of ours; the
    // caller guarantees that no other thread reads the option while it changes. The
    // index is that of the version checked.
    unsafe {
        if libmimalloc_sys::mi_version() / 100 == MI_VERSION_3_3 {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 1);
        }
    }
}

fn main() -> Result<()> {
    no_transparent_huge_pages();
    match Cli::parse().command {
        Command::Ingest {
            data,
            index,
            batch,
            window_days,
            incremental,
            cache,
            memtables,
            bulk,
            files,
        } => {
            let dir = DataDir::new(&data);
            if dir.is_served() {
                if index == IndexKind::Historic {
                    bail!(
                        "a server is serving {}: the historic index is replaced with `linkbase historic build`, and crawls go into the fresh index while serving (--index fresh)",
                        data.display()
                    );
                }
                return ingest_via_server(&dir, &files);
            }
            if incremental || has_table_files(&dir.index_path(index)) {
                // SAFETY: only the command line and the data directory's files were read
                // so far: no store is open and no thread has started.
                unsafe {
                    set_purge_delay(INCREMENTAL_PURGE_DELAY_MS);
                    allow_transparent_huge_pages();
                }
            }
            if !incremental && indexes::is_empty_index(&dir, index)? {
                return bulk_ingest(&dir, index, &files, &bulk.options(), window_days);
            }
            let cache = cache.unwrap_or_else(|| ingest_cache::for_index(&dir.index_path(index)));
            tracing::info!(
                cache_mib = cache >> 20,
                "block cache of the incremental writer"
            );
            let options = StoreOptions {
                block_cache_bytes: cache,
                memtable_bytes: memtables,
                ..StoreOptions::default()
            };
            let store = dir.open(index, &options)?;
            // Refused once for all the files, not once per file.
            store.check_writable()?;
            ingest_files(&store, index, &files, batch, window_days)
        }
        Command::Historic {
            action:
                HistoricAction::Build {
                    data,
                    from,
                    to,
                    seeds,
                    bulk,
                    files,
                },
        } => build_historic(&data, from, to, seeds, bulk.options(), &files),
        Command::Stats {
            data,
            index,
            item,
            disk,
        } => {
            let store = open_existing(&data, index)?;
            match item {
                None => print_index_stats(&store)?,
                Some(item) => print_item(&store, &Item::parse(&item)?)?,
            }
            if disk {
                print_disk_bytes(&store)?;
            }
            Ok(())
        }
        Command::Backlinks {
            data,
            index,
            item,
            count,
            from,
            exclude_deleted,
            max_per_domain,
            max_per_source,
            ref_domain,
        } => {
            let store = open_existing(&data, index)?;
            let q = BacklinkQuery {
                from,
                count,
                exclude_deleted,
                max_per_ref_domain: max_per_domain,
                max_per_source_url: max_per_source,
                ref_domain,
                max_scan: None,
            };
            print_backlinks(&store, &Item::parse(&item)?, &q)
        }
        Command::Flow {
            data,
            index,
            seeds,
            threads,
        } => {
            let dir = DataDir::new(&data);
            if dir.is_served() {
                if index == IndexKind::Historic {
                    bail!(
                        "a server is serving {}: historic flows are computed by `linkbase historic build`",
                        data.display()
                    );
                }
                outln!(
                    "a server is serving {}: computing the fresh index's flows in it",
                    data.display()
                );
                let seeds = seeds
                    .map(|p| std::fs::canonicalize(&p).with_context(|| p.display().to_string()))
                    .transpose()?
                    .map(|p| p.display().to_string());
                let form: Vec<(&str, &str)> = seeds.iter().map(|s| ("seeds", s.as_str())).collect();
                if !admin_request(&dir, "/admin/flow", &form, "fresh flow")? {
                    bail!("the server could not compute the flows");
                }
                return Ok(());
            }
            let store = open_existing(&data, index)?;
            let seeds = match seeds {
                Some(path) => flow::read_seeds(&path)?,
                None => {
                    eprintln!("no --seeds: Trust Flow and topics will be 0 everywhere");
                    Vec::new()
                }
            };
            run_flow(&store, &seeds, threads)
        }
        Command::Serve { flags } => {
            // SAFETY: first thing in `serve`: the stores, their background threads and
            // the runtime come after.
            unsafe { set_purge_delay(SERVE_PURGE_DELAY_MS) };
            serve(&flags.resolve()?, None)
        }
        Command::Keys(args) => keys::run(args),
        Command::Demo { dir, listen, pages } => {
            let data = dir.join("data");
            demo(&dir, pages)?;
            let key = demo_key(&data)?;
            serve(&ServeOptions::new(data, listen), Some(&key))
        }
    }
}

/// The demo's account (created on first run) and a new key for it.
fn demo_key(data: &Path) -> Result<String> {
    let store = accounts::Accounts::open(&DataDir::new(data).accounts_path())?;
    let account = match store.accounts(None)?.into_iter().next() {
        Some(a) => a,
        None => store.create_account(&accounts::NewAccount {
            name: "demo".into(),
            parent: None,
            reseller: true,
            allowance: accounts::Units {
                index_item_info: 1_000_000,
                analysis: 10_000_000_000,
                retrieval: 100_000_000,
            },
            period_days: 30,
        })?,
    };
    Ok(store.create_key(account.id, &[])?.1)
}

/// The storage format `index` of `dir` was written in, when it is not this build's
/// (which refuses it); `None` for an index of this format or none at all.
fn other_format(dir: &DataDir, index: IndexKind) -> Result<Option<u8>> {
    match indexes::is_empty_index(dir, index) {
        Err(indexes::Error::Store {
            source: linkstore::Error::Version { found, .. },
            ..
        }) => Ok(Some(found)),
        other => Ok(other.map(|_| None)?),
    }
}

/// The sandbox database: a small generated web with flows, built once beside the data
/// (into a temporary directory renamed into place, so a killed build leaves none), and
/// built again when an earlier build wrote it in another storage format.
fn ensure_sandbox(data: &Path) -> Result<DataDir> {
    let sandbox = DataDir::new(data).sandbox();
    if sandbox.root().exists() {
        let mut found = None;
        for index in [IndexKind::Historic, IndexKind::Fresh] {
            found = found.or(other_format(&sandbox, index)?);
        }
        let Some(found) = found else {
            return Ok(sandbox);
        };
        tracing::info!(dir = %sandbox.root().display(), format = found, "rebuilding the sandbox database in this build's storage format");
        std::fs::remove_dir_all(sandbox.root())
            .with_context(|| format!("removing {}", sandbox.root().display()))?;
    }
    let building = data.join("sandbox.building");
    if building.exists() {
        std::fs::remove_dir_all(&building)?;
    }
    tracing::info!(dir = %sandbox.root().display(), "building the sandbox database");
    let spec = webgen::WebSpec::demo(SANDBOX_PAGES);
    let generated = webgen::generate(&spec, &building.join("crawl"), &mut |_, _| {})?;
    {
        let dir = DataDir::new(&building);
        let store = dir.open(IndexKind::Historic, &StoreOptions::default())?;
        for file in &generated.files {
            indexes::ingest_file(&store, file, &IngestOptions::default(), &mut |_| {})
                .with_context(|| format!("sandbox crawl {}", file.display()))?;
        }
        let seeds = flow::parse_seeds(DEMO_SEEDS, "data/demo-seeds.tsv")?;
        flow::build(&store, &seeds, &flow::RankParams::default(), &mut |_| {})?;
        store.flush()?;
    }
    std::fs::remove_dir_all(building.join("crawl"))?;
    std::fs::rename(&building, sandbox.root())?;
    Ok(sandbox)
}

/// Pages of the sandbox's generated web: small enough to build in seconds.
const SANDBOX_PAGES: usize = 1_500;

/// What a server holds for one data directory; `refunds` is where failed downloads'
/// charges go back (none for the sandbox, which charges nothing).
fn context(
    dir: &DataDir,
    window_days: u32,
    notify: &server::NotifyPolicy,
    stores: StoreOptions,
    refunds: Option<std::sync::Arc<accounts::Accounts>>,
    heavy: (usize, usize),
) -> Result<server::Context> {
    Ok(server::Context {
        indexes: indexes::Indexes::open(dir.clone(), window_days, stores)?,
        server_name: "LINKBASE".into(),
        server_version: env!("CARGO_PKG_VERSION").into(),
        server_build: "2026-11-21 00:00:00".into(),
        downloads: server::Downloads::open(&dir.downloads_path(), notify.clone(), refunds)?,
        admission: server::admission::Admission::new(heavy.0, heavy.1),
        build_names: Default::default(),
        info_rows: Default::default(),
    })
}

/// The server's log: structured lines on standard error, at the level `LINKBASE_LOG` sets
/// (`info` by default; `debug` adds one line per request).
fn init_server_log() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LINKBASE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

fn serve(options: &ServeOptions, example_key: Option<&str>) -> Result<()> {
    init_server_log();
    let (data, listen) = (options.data.as_path(), options.listen.as_str());
    let tls = match (&options.tls_cert, &options.tls_key) {
        (Some(c), Some(k)) => Some(server::tls_config(c, k)?),
        _ => None,
    };
    let dir = DataDir::new(data);
    let _serving = dir.lock_for_serving()?;
    let accounts = std::sync::Arc::new(accounts::Accounts::open(&dir.accounts_path())?);
    accounts.start_metering()?;
    keys::warn_if_no_accounts(&accounts, data)?;
    let window = options.fresh_window_days;
    let notify = server::NotifyPolicy {
        allowed: options.notify_allow.clone(),
    };
    let ctx = context(
        &dir,
        window,
        &notify,
        StoreOptions::default(),
        Some(accounts.clone()),
        (options.max_heavy, options.max_heavy_per_account),
    )?;
    let sandbox = if options.no_sandbox {
        None
    } else {
        // The sandbox's small stores need few files and little cache.
        let small = StoreOptions {
            block_cache_bytes: 32 << 20,
            max_open_files: 64,
            memtable_bytes: 32 << 20,
            ..StoreOptions::default()
        };
        Some(std::sync::Arc::new(context(
            &ensure_sandbox(data)?,
            window,
            &notify,
            small,
            None,
            (options.max_heavy, options.max_heavy_per_account),
        )?))
    };
    let admin_token = admin_token(&dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen:?}"))?;
        let addr = listener.local_addr()?;
        // Where `linkbase ingest` finds this server to hand it fresh crawls.
        std::fs::write(data.join("serve.addr"), format!("{addr}\n"))?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut banner = format!(
            "serving the API on {scheme}://{addr}/api/json (accounts in {})\n",
            dir.accounts_path().display()
        );
        if sandbox.is_some() {
            banner += &format!("sandbox (any valid key, nothing charged): {scheme}://{addr}/sandbox/api/json\n");
        }
        banner += &format!("Site Explorer (sign in with an API key): {scheme}://{addr}/explorer/\n");
        banner += &format!("OpenApp grant page: {scheme}://{addr}/openapp/authorize?app=ID\n");
        if let Some(key) = example_key {
            // A self-signed certificate needs curl's -k.
            let insecure = if tls.is_some() { "-k " } else { "" };
            banner += &format!("API key: {key}\ntry:\n  curl {insecure}'{scheme}://{addr}/api/json?app_api_key={key}&cmd=GetIndexItemInfo&items=1&item0=tangoblue0.nl'\n  curl {insecure}'{scheme}://{addr}/api/json?app_api_key={key}&cmd=GetBackLinkData&item=http://www.tangoblue0.nl/&Count=5'\n  curl {insecure}'{scheme}://{addr}/api_command?app_api_key={key}&cmd=GetRefDomains&item0=tangoblue0.nl&Count=5'\n  curl {insecure}'{scheme}://{addr}/api/json?app_api_key={key}&cmd=GetSubscriptionInfo'\n");
        }
        // Written in one go, errors ignored: a closed stdout must not stop the server.
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(banner.as_bytes());
            let _ = out.flush();
        }
        let svc = std::sync::Arc::new(server::Service {
            ctx: std::sync::Arc::new(ctx),
            sandbox,
            accounts: accounts.clone(),
            limits: server::Limits {
                max_connections: options.max_connections,
                write_timeout: std::time::Duration::from_secs(options.write_timeout),
                ..server::Limits::default()
            },
            trusted_proxies: options.trusted_proxies.clone(),
            token_ttl: std::time::Duration::from_secs(options.token_ttl.max(1) as u64),
            admin_token: Some(admin_token),
            metrics: Default::default(),
        });
        server::serve(svc, listener, tls).await?;
        Ok::<_, anyhow::Error>(())
    })
}

/// Exit status of a command whose standard output's reader went away: that of a process
/// ended by SIGPIPE (128 + 13), as a shell reports it. Not 0: the command stopped before
/// its end (an ingest may not have read every file), and it is not an error to report.
const CLOSED_PIPE_STATUS: i32 = 141;

/// Ends the program after standard output failed: quietly when its reader went away.
fn output_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(CLOSED_PIPE_STATUS);
    }
    eprintln!("Error: writing to standard output: {e}");
    std::process::exit(1);
}

/// A new operator token for this server's `/admin/` endpoint, in `DATA/admin.token`
/// (readable by its owner only).
fn admin_token(dir: &DataDir) -> Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let token = accounts::new_secret()?;
    let path = dir.root().join("admin.token");
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(format!("{token}\n").as_bytes())?;
    Ok(token)
}

/// Sends one operator request to the server holding the data directory and prints the
/// lines it streams back; false when it reports an error.
fn admin_request(dir: &DataDir, path: &str, form: &[(&str, &str)], label: &str) -> Result<bool> {
    use std::io::BufRead;
    let read = |name: &str| {
        let file = dir.root().join(name);
        std::fs::read_to_string(&file)
            .map(|s| s.trim().to_string())
            .with_context(|| {
                format!(
                    "a server holds {} but {} is unreadable",
                    dir.root().display(),
                    file.display()
                )
            })
    };
    let (addr, token) = (read("serve.addr")?, read("admin.token")?);
    let response = ureq::post(&format!("http://{addr}{path}"))
        .set("authorization", &format!("Bearer {token}"))
        .send_form(form)
        .with_context(|| format!("{label}: asking the server at {addr}"))?;
    let mut ok = true;
    for line in std::io::BufReader::new(response.into_reader()).lines() {
        let line = line?;
        if let Some(progress) = line.strip_prefix("progress ") {
            eprint!("\r{label}: {progress}   ");
        } else if let Some(done) = line.strip_prefix("done ") {
            eprintln!();
            outln!("{label}: {done}");
        } else if let Some(e) = line.strip_prefix("error ") {
            eprintln!();
            eprintln!("{label}: {e}");
            ok = false;
        }
    }
    Ok(ok)
}

/// Hands crawl files to the server holding the data directory, which ingests them into
/// the fresh index while it serves.
fn ingest_via_server(dir: &DataDir, files: &[PathBuf]) -> Result<()> {
    outln!(
        "a server is serving {}: handing the files to it (fresh index)",
        dir.root().display()
    );
    let mut failed = 0;
    for path in files {
        let absolute = std::fs::canonicalize(path).with_context(|| path.display().to_string())?;
        let file = absolute.display().to_string();
        if !admin_request(
            dir,
            "/admin/ingest",
            &[("file", &file)],
            &path.display().to_string(),
        )? {
            failed += 1;
        }
    }
    if failed > 0 {
        bail!("{failed} file(s) could not be ingested");
    }
    Ok(())
}

fn build_historic(
    data: &Path,
    from: Option<String>,
    to: Option<String>,
    seeds: Option<PathBuf>,
    build: bulkbuild::BuildOptions,
    files: &[PathBuf],
) -> Result<()> {
    let day = |s: Option<String>, name: &str| -> Result<Option<u32>> {
        s.map(|s| {
            linkstore::parse_day(&s).with_context(|| format!("--{name} {s:?}: expected yyyy-mm-dd"))
        })
        .transpose()
    };
    let (from, to) = (day(from, "from")?, day(to, "to")?);
    let days = match (from, to) {
        (None, None) => None,
        (f, t) => Some((f.unwrap_or(0), t.map_or(u32::MAX, |t| t + 1))),
    };
    if let Some((f, t)) = days {
        if f >= t {
            bail!("--from is after --to");
        }
    }
    let seeds = match seeds {
        Some(path) => flow::read_seeds(&path)?,
        None => {
            eprintln!("no --seeds: Trust Flow and topics will be 0 everywhere");
            Vec::new()
        }
    };
    let params = flow::RankParams {
        threads: build.workers,
        ..Default::default()
    };
    let started = Instant::now();
    let report = indexes::build_historic(
        &DataDir::new(data),
        &indexes::HistoricBuild {
            files,
            days,
            seeds: &seeds,
            params,
            build,
        },
        &show_build_progress,
        &mut |step| eprintln!("\n[{:>6.1}s] {step}", started.elapsed().as_secs_f64()),
    )?;
    print_build_report(&report.build);
    outln!("  flow metrics: {:.1}s", report.flow_seconds);
    outln!(
        "historic snapshot {} built in {:.1}s ({} links in the flow graph); replaced {}{}",
        report.name,
        started.elapsed().as_secs_f64(),
        report.flow.edges,
        report.replaced,
        if report.removed_old {
            " (removed)"
        } else {
            " (the running server removes it once its requests are done)"
        }
    );
    Ok(())
}

/// Seeds for the demo web, shipped with the binary.
const DEMO_SEEDS: &str = include_str!("../../../data/demo-seeds.tsv");

fn run_flow(store: &Store, seeds: &[flow::Seed], threads: Option<usize>) -> Result<()> {
    let mut params = flow::RankParams::default();
    if let Some(t) = threads {
        params.threads = t.max(1);
    }
    let started = Instant::now();
    let report = flow::build(store, seeds, &params, &mut |msg| {
        eprintln!("[{:>6.1}s] {msg}", started.elapsed().as_secs_f64())
    })?;
    outln!(
        "flow: {} URLs, {} links, {} seed URLs, {} topics; Citation Flow {} iterations, Trust Flow {}; {:.2} ns/edge/iteration; {} metrics rows, {} backlink rows re-ordered in {:.1}s",
        report.nodes,
        report.edges,
        report.seed_nodes,
        report.topics,
        report.citation_iterations,
        report.trust_iterations,
        report.ns_per_edge_iteration,
        report.metrics_rows,
        report.backlink_rows,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn open_existing(data: &Path, index: IndexKind) -> Result<Store> {
    let dir = DataDir::new(data);
    if dir.is_served() {
        bail!(
            "a server is serving {}: ask it through the API, or stop it first",
            data.display()
        );
    }
    if !dir.index_path(index).exists() {
        bail!(
            "no {index} index in {}: run `linkbase ingest --data {} FILE...` first",
            data.display(),
            data.display()
        );
    }
    Ok(dir.open(index, &StoreOptions::default())?)
}

fn ingest_files(
    store: &Store,
    index: IndexKind,
    files: &[PathBuf],
    batch: usize,
    window_days: u32,
) -> Result<()> {
    let opts = IngestOptions {
        batch_pages: batch,
        ..Default::default()
    };
    let started = Instant::now();
    let (mut links, mut bad) = (0u64, 0u64);
    let mut failed = Vec::new();
    for path in files {
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {bytes}/{total_bytes} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into()),
        );
        let file_started = Instant::now();
        let mut last_draw = 0u64;
        let result = indexes::ingest_into(store, index, path, &opts, window_days, &mut |p| {
            if p.records - last_draw >= 200 || p.bytes_read == p.bytes_total {
                last_draw = p.records;
                bar.set_length(p.bytes_total);
                bar.set_position(p.bytes_read);
                let secs = file_started.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!(
                    "{} records, {} links, {:.0} links/s",
                    p.records,
                    p.links,
                    p.links as f64 / secs
                ));
            }
        });
        bar.finish_and_clear();
        match result {
            Ok(r) => {
                print_summary(&r.file, file_started.elapsed().as_secs_f64());
                if r.expired.links + r.expired.pages > 0 {
                    outln!(
                        "  fresh window from {}: {} links and {} pages expired",
                        format_day(r.window_from),
                        r.expired.links,
                        r.expired.pages
                    );
                }
                links += r.file.links_found;
                bad += r.file.bad_records;
            }
            Err(e) => {
                eprintln!("{e}");
                failed.push(path.clone());
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    outln!(
        "total: {} files, {links} links in {secs:.1}s ({:.0} links/s), {bad} bad records",
        files.len(),
        links as f64 / secs.max(1e-3)
    );
    if !failed.is_empty() {
        bail!("{} file(s) could not be read", failed.len());
    }
    Ok(())
}

fn bulk_ingest(
    dir: &DataDir,
    index: IndexKind,
    files: &[PathBuf],
    opts: &bulkbuild::BuildOptions,
    window_days: u32,
) -> Result<()> {
    outln!(
        "{index} index is empty: bulk build with {} workers, {} MiB for sorting",
        opts.workers,
        opts.memory_bytes >> 20
    );
    let r = indexes::bulk_ingest(dir, index, files, opts, window_days, &show_build_progress)?;
    print_build_report(&r.build);
    if r.expired.links + r.expired.pages > 0 {
        outln!(
            "  fresh window: {} links and {} pages expired",
            r.expired.links,
            r.expired.pages
        );
    }
    Ok(())
}

/// One status line per report (every 0.5 s), overwritten in place.
fn show_build_progress(p: &bulkbuild::Progress) {
    let mut line = format!(
        "\r[{:>6.1}s] {}: {}/{} MiB read, {} crawls, {} pages replayed, {} view groups reduced, {} rows written",
        p.seconds,
        p.stage.name(),
        p.bytes_read >> 20,
        p.bytes_total >> 20,
        p.crawls,
        p.pages,
        p.groups,
        p.rows_written,
    );
    if let Some(rate) = p.rate() {
        line += &format!("; {rate:.0} {}/s", p.unit());
    }
    if let Some(eta) = p.eta() {
        line += &format!(", {eta:.0}s left in this stage");
    }
    eprint!("{line}   ");
}

fn print_build_report(r: &bulkbuild::BuildReport) {
    eprintln!();
    for s in &r.files {
        print_summary(s, 0.0);
    }
    let links = r.links_read();
    outln!(
        "bulk build: {} pages, {} links stored from {links} links read ({} new, {} deleted); {} crawls applied, {} skipped",
        r.pages.pages,
        r.pages.links,
        r.pages.stats.links_new,
        r.pages.stats.links_deleted,
        r.pages.crawls_applied,
        r.pages.crawls_skipped,
    );
    outln!(
        "total: {} files, {links} links in {:.1}s ({:.0} links/s), {} bad records",
        r.files.len(),
        r.seconds(),
        links as f64 / r.seconds().max(1e-3),
        r.files.iter().map(|f| f.bad_records).sum::<u64>()
    );
    outln!(
        "  read {:.1}s, sort/reduce/write {:.1}s, ingest {:.1}s: {:.0} links read/s; {} SST files, {} MiB, {} rows; {} sorted runs spilled ({} compressed)",
        r.read_seconds,
        r.reduce_seconds,
        r.ingest_seconds,
        links as f64 / r.seconds().max(1e-3),
        r.sst_files,
        r.sst_bytes >> 20,
        r.rows,
        r.runs_as_they_are + r.runs_compressed,
        r.runs_compressed
    );
}

fn print_summary(s: &FileSummary, secs: f64) {
    outln!(
        "{}: {} records, {} pages applied ({} already known), {} other records, {} links ({} new, {} deleted) in {secs:.1}s",
        s.path.display(),
        s.records,
        s.pages,
        s.pages_unchanged,
        s.other_records,
        s.links_found,
        s.links_new,
        s.links_deleted,
    );
    if s.bad_records + s.bad_links > 0 {
        outln!(
            "  skipped {} bad records, {} bad links:",
            s.bad_records,
            s.bad_links
        );
        for (reason, n) in &s.problem_counts {
            outln!("    {n:>8}  {reason}");
        }
        for p in s.problems.iter().take(5) {
            outln!("    at {}: {}", p.at, p.reason);
        }
    }
    if let Some(t) = &s.truncated {
        outln!("  file ends early at {}: {}", t.at, t.reason);
    }
    if s.pages_out_of_range > 0 {
        outln!(
            "  {} crawls outside the date range left out",
            s.pages_out_of_range
        );
    }
}

fn day(d: i64) -> String {
    if d <= 0 {
        "-".into()
    } else {
        format_day(d as u32)
    }
}

fn print_counters(c: &Counters) {
    let rows: [(&str, String); 16] = [
        ("external backlinks", c.ext_backlinks.to_string()),
        ("  live", c.live_links().to_string()),
        ("  deleted", c.deleted_links.to_string()),
        ("  nofollow", c.nofollow_links.to_string()),
        (
            "  redirect / image / frame / text",
            format!(
                "{} / {} / {} / {}",
                c.redirect_links, c.image_links, c.frame_links, c.text_links
            ),
        ),
        ("referring domains", c.ref_domains.to_string()),
        ("  with live links", c.ref_domains_live.to_string()),
        (
            "  EDU / GOV",
            format!("{} / {}", c.ref_domains_edu, c.ref_domains_gov),
        ),
        (
            "referring IPs / subnets",
            format!("{} / {}", c.ref_ips, c.ref_subnets),
        ),
        ("indexed URLs", c.indexed_urls.to_string()),
        ("crawled URLs", c.crawled_urls.to_string()),
        (
            "outlinks external / internal",
            format!("{} / {}", c.out_links_external, c.out_links_internal),
        ),
        ("out domains external", c.out_domains_external.to_string()),
        ("first link date", day(c.first_link_day)),
        ("last link date", day(c.last_link_day)),
        ("last crawl date", day(c.last_crawl_day)),
    ];
    print_rows(&rows);
}

/// Label/value lines, labels padded to one column.
fn print_rows(rows: &[(&str, String)]) {
    for (k, v) in rows {
        outln!("{k:<34} {v}");
    }
}

fn print_index_stats(store: &Store) -> Result<()> {
    let c = store.read().index_counters()?;
    outln!("index {}", store.path().display());
    let rows: [(&str, String); 9] = [
        ("URLs crawled", c.crawled_urls.to_string()),
        ("URLs known (crawled or linked)", c.indexed_urls.to_string()),
        (
            "live links (external / internal)",
            format!("{} / {}", c.out_links_external, c.out_links_internal),
        ),
        (
            "external backlinks incl. deleted",
            c.ext_backlinks.to_string(),
        ),
        ("  deleted", c.deleted_links.to_string()),
        ("  nofollow", c.nofollow_links.to_string()),
        ("first link date", day(c.first_link_day)),
        ("last link date", day(c.last_link_day)),
        ("last crawl date", day(c.last_crawl_day)),
    ];
    print_rows(&rows);
    Ok(())
}

fn print_disk_bytes(store: &Store) -> Result<()> {
    let c = store.read().index_counters()?;
    let tables = store.disk_by_table()?;
    let per_link = |b: u64| b as f64 / c.ext_backlinks.max(1) as f64;
    let sum = |f: fn(&linkstore::TableDisk) -> u64| tables.iter().map(f).sum::<u64>();
    let total = sum(|t| t.file_bytes);
    outln!(
        "\non disk: {total} bytes, {:.1} per external backlink \
         (data {:.1}, index {:.1}, filter {:.1}; raw keys {:.1}, raw values {:.1})",
        per_link(total),
        per_link(sum(|t| t.data_bytes)),
        per_link(sum(|t| t.index_bytes)),
        per_link(sum(|t| t.filter_bytes)),
        per_link(sum(|t| t.raw_key_bytes)),
        per_link(sum(|t| t.raw_value_bytes)),
    );
    // Bytes and rows as they are; every other column per external backlink.
    outln!(
        "  {:<20} {:>14} {:>9} {:>11} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "table",
        "bytes",
        "per link",
        "rows",
        "data",
        "index",
        "filter",
        "raw key",
        "raw val"
    );
    for t in tables.iter().filter(|t| t.file_bytes > 0) {
        outln!(
            "  {:<20} {:>14} {:>9.1} {:>11} {:>7.1} {:>7.1} {:>7.1} {:>8.1} {:>8.1}",
            t.name,
            t.file_bytes,
            per_link(t.file_bytes),
            t.entries,
            per_link(t.data_bytes),
            per_link(t.index_bytes),
            per_link(t.filter_bytes),
            per_link(t.raw_key_bytes),
            per_link(t.raw_value_bytes),
        );
    }
    Ok(())
}

fn print_item(store: &Store, item: &Item) -> Result<()> {
    outln!("{} ({})", item.name, item.level.name());
    let view = store.read();
    match view.counters(item)? {
        None => outln!("not in the index"),
        Some(c) => {
            if let Some(m) = view.metrics(item)? {
                outln!("{:<34} {}", "Trust Flow", m.trust_flow);
                outln!("{:<34} {}", "Citation Flow", m.citation_flow);
                for (topic, v) in &m.topics {
                    outln!("  {v:>3}  {topic}");
                }
            }
            print_counters(&c);
            outln!("\ntop referring domains:");
            let domains = view.ref_domain_matches(&linkstore::RefDomainQuery {
                items: vec![item.clone()],
                depth: 5,
                from: 0,
                count: 5,
                order: vec![(linkstore::RefDomainOrder::MatchedLinks, true)],
                topic: None,
            })?;
            for d in &domains.rows {
                outln!("  {:>6} links  {}", d.per_item[0].links, d.domain);
            }
            outln!("top anchor texts:");
            let anchors = view.anchor_texts(
                item,
                &linkstore::AnchorQuery {
                    count: 5,
                    ..Default::default()
                },
            )?;
            for a in &anchors.rows {
                outln!(
                    "  {:>6} domains {:>6} links  {:?}",
                    a.ref_domains,
                    a.links,
                    a.text
                );
            }
        }
    }
    Ok(())
}

fn print_backlinks(store: &Store, item: &Item, q: &BacklinkQuery) -> Result<()> {
    outln!("SourceTrustFlow\tSourceCitationFlow\tSourceURL\tTargetURL\tAnchorText\tLinkType\tFlagNoFollow\tFlagDeleted\tFirstIndexedDate\tLastSeenDate\tDateLost");
    for r in store.read().backlinks(item, q)? {
        outln!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.source_flow.trust_flow,
            r.source_flow.citation_flow,
            r.source_url,
            r.target_url,
            r.anchor_text,
            r.kind.link_type(),
            u8::from(r.is_nofollow()),
            u8::from(r.is_deleted()),
            format_day(r.first_seen),
            format_day(r.last_seen),
            if r.date_lost == 0 {
                String::new()
            } else {
                format_day(r.date_lost)
            },
        );
    }
    Ok(())
}

fn demo(dir: &Path, pages: usize) -> Result<()> {
    let crawl_dir = dir.join("crawl");
    let data = dir.join("data");
    // Rounds 60 days apart: the newest two fall in the fresh index's 90-day window, all
    // three in historic, so the two indexes answer differently, as in production.
    let spec = webgen::WebSpec {
        crawl_interval_days: 60,
        ..webgen::WebSpec::demo(pages)
    };
    outln!(
        "generating a synthetic web of {pages} pages, {} crawl rounds {} days apart into {}",
        spec.crawls,
        spec.crawl_interval_days,
        crawl_dir.display()
    );
    let generated = webgen::generate(&spec, &crawl_dir, &mut |_, _| {})
        .with_context(|| format!("writing {}", crawl_dir.display()))?;
    let data_dir = DataDir::new(&data);
    let seeds = flow::parse_seeds(DEMO_SEEDS, "data/demo-seeds.tsv")?;
    // Historic: the whole history. Fresh: every crawl too, of which the window keeps
    // the recent ones.
    for index in [IndexKind::Historic, IndexKind::Fresh] {
        // The demo's indexes hold only the crawl it generates: one that an earlier build
        // wrote in another storage format is rebuilt, not refused.
        if let Some(found) = other_format(&data_dir, index)? {
            let path = data_dir.index_path(index);
            outln!(
                "{}: storage format {found}, rebuilt in format {}",
                path.display(),
                linkstore::FORMAT_VERSION
            );
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("removing {}", path.display()))?;
        }
        if indexes::is_empty_index(&data_dir, index)? {
            outln!();
            bulk_ingest(
                &data_dir,
                index,
                &generated.files,
                &bulkbuild::BuildOptions::default(),
                indexes::DEFAULT_WINDOW_DAYS,
            )?;
        }
        let store = data_dir.open(index, &StoreOptions::default())?;
        outln!(
            "
{index} index flow metrics:"
        );
        run_flow(&store, &seeds, None)?;
    }
    let store = data_dir.open(IndexKind::Historic, &StoreOptions::default())?;
    outln!();
    print_index_stats(&store)?;
    let hot = webgen::Web::new(spec).hot_url();
    let item = Item::parse(&hot)?;
    outln!("\nmost linked page: {hot}");
    print_item(&store, &item)?;
    outln!("\ntop 5 backlinks:");
    print_backlinks(
        &store,
        &item,
        &BacklinkQuery {
            count: 5,
            ..Default::default()
        },
    )?;
    let exe =
        std::env::current_exe().map_or_else(|_| "linkbase".into(), |p| p.display().to_string());
    outln!(
        "\ntry:\n  {exe} stats --data {d} {i}\n  {exe} backlinks --data {d} --max-per-domain 1 {i}\n  {exe} flow --data {d} --seeds data/demo-seeds.tsv",
        d = data.display(),
        i = item.name,
    );
    Ok(())
}
