//! Opening the store, its column families and options, and publishing what readers
//! see (reads themselves are in `read_view.rs`).

use crate::aggregate::{merge_counters, merge_timeline, Counters};
use crate::error::{Error, Result};
use crate::item::Item;
use crate::keys::ItemHasher;
use crate::page::PageState;
use crate::read_view::{PublishedSnapshot, ReadView};
use crate::source_row::SourceMemo;
use crate::table_disk::TableDisk;
use crate::writer::Writer;
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, BlockBasedTablePinningTier, Cache, ColumnFamily,
    ColumnFamilyDescriptor, Options, DB,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// What readers are shown once a writer publishes: a snapshot and the flow generation it
/// serves, replaced together.
struct Published {
    snapshot: Arc<PublishedSnapshot>,
    generation: u8,
}

/// Version of the key layout and column-family set, stored under `meta/format`.
pub const FORMAT_VERSION: u8 = 32;

pub(crate) const CF_META: &str = "meta";
/// `meta` key present in a snapshot store ([`Store::is_snapshot`]).
const SNAPSHOT: &[u8] = b"snapshot";
/// `meta` key naming the generation whose keys name source pages by number
/// ([`Store::numbers_sources`]).
pub(crate) const NUMBERED_GENERATION: &[u8] = b"numbered_generation";
pub(crate) const CF_LINKS: &str = "links";
pub(crate) const CF_BACKLINKS: &str = "backlinks";
pub(crate) const CF_PAGES: &str = "pages";
pub(crate) const CF_URLS: &str = "urls";
pub(crate) const CF_COUNTERS: &str = "counters";
pub(crate) const CF_REFDOMAINS: &str = "refdomains";
pub(crate) const CF_REFDOMAINS_RANKED: &str = "refdomains_ranked";
pub(crate) const CF_ANCHORS: &str = "anchors";
pub(crate) const CF_ANCHORS_RANKED: &str = "anchors_ranked";
pub(crate) const CF_DISTINCT: &str = "distinct";
pub(crate) const CF_TIMELINE: &str = "timeline";
pub(crate) const CF_METRICS: &str = "metrics";
pub(crate) const CF_EXPIRY: &str = "expiry";
pub(crate) const CF_TOP_PAGES: &str = "top_pages";
pub(crate) const CF_SOURCES: &str = "sources";

/// Every column family of a store, by name.
pub const ALL_CFS: &[&str] = &[
    CF_META,
    CF_LINKS,
    CF_BACKLINKS,
    CF_PAGES,
    CF_URLS,
    CF_COUNTERS,
    CF_REFDOMAINS,
    CF_REFDOMAINS_RANKED,
    CF_ANCHORS,
    CF_ANCHORS_RANKED,
    CF_DISTINCT,
    CF_TIMELINE,
    CF_METRICS,
    CF_EXPIRY,
    CF_TOP_PAGES,
    CF_SOURCES,
];

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Bits of the item hash kept in keys. 64 in production; tests lower it to force
    /// collisions. Fixed when the store is created.
    pub hash_bits: u8,
    /// Shared block cache size: the bound on the store's read memory.
    pub block_cache_bytes: usize,
    /// Table files kept open at once (RocksDB `max_open_files`): a served store must not
    /// take every descriptor the process has from its connections.
    pub max_open_files: i32,
    /// Memtables of all column families together (RocksDB `db_write_buffer_size`): the
    /// bound on the store's write memory; past it the largest memtable is flushed.
    pub memtable_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            hash_bits: 64,
            block_cache_bytes: 512 << 20,
            max_open_files: 512,
            memtable_bytes: 256 << 20,
        }
    }
}

/// What a store holds in memory (`Store::memory`), bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreMemory {
    pub memtables: u64,
    pub block_cache: u64,
    /// Open table files' readers outside the block cache.
    pub table_readers: u64,
}

/// A point in a store's history: see [`Store::stamp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStamp {
    sequence: u64,
    publishes: u64,
    generation: u8,
}

/// A backlink database on disk.
pub struct Store {
    /// What readers see once a writer publishes (`publish`); `None`: the latest writes.
    published: RwLock<Option<Published>>,
    pub(crate) db: Arc<DB>,
    pub(crate) hasher: ItemHasher,
    path: PathBuf,
    /// Generation of the latest `backlinks` and `metrics` rows (see `FlowUpdate`): what
    /// writers write and what an unpublished store serves.
    generation: AtomicU8,
    /// Publishes so far, for [`Store::stamp`].
    publishes: AtomicU64,
    /// One writer at a time: an ingest `Writer` or a `FlowUpdate`. Holds what writers
    /// keep from one to the next: the root domains they classed.
    pub(crate) write_lock: Mutex<crate::writer::DomainClasses>,
    cache: Cache,
    /// See [`Store::is_snapshot`].
    snapshot: AtomicBool,
    /// Source rows read lately. A store's `sources` rows are written once, by the bulk
    /// build that makes it a snapshot, so what is kept here never goes stale.
    source_rows: Arc<SourceMemo>,
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// Column families read a run of rows at a time, by prefix scans.
const SCANNED: [&str; 6] = [
    CF_BACKLINKS,
    CF_REFDOMAINS_RANKED,
    CF_ANCHORS_RANKED,
    CF_TIMELINE,
    CF_EXPIRY,
    CF_TOP_PAGES,
];

/// True for a column family whose bottom-level files have a ZSTD dictionary (see
/// [`cf_options`]): RocksDB holds such a file's blocks uncompressed until it is finished.
pub(crate) fn has_dictionary(name: &str) -> bool {
    !SCANNED.contains(&name)
}

/// True for a column family read by point reads (`Get`, `MultiGet`): all but the scanned
/// ones, and `backlinks`, where the writer reads a re-crawled page's external records
/// from their URL rows (format 13).
fn is_point_read(name: &str) -> bool {
    !SCANNED.contains(&name) || name == CF_BACKLINKS
}

/// RocksDB info logs a store keeps: the current one and the last three opens'.
const KEPT_INFO_LOGS: usize = 4;

/// Size of each bottom-level file's ZSTD dictionary.
const DICTIONARY_BYTES: i32 = 32 << 10;
/// Sampled bytes a dictionary is trained on (ten times its size, as zstd advises).
const DICTIONARY_TRAINING_BYTES: i32 = 10 * DICTIONARY_BYTES;
/// RocksDB's defaults for the other compression options: zlib's window bits (ZSTD
/// ignores them) and "the library's default level" (3 for ZSTD).
const ZSTD_WINDOW_BITS: i32 = -14;
const ZSTD_DEFAULT_LEVEL: i32 = 32767;

/// Options of column family `name`, in a store whose memtable budget is
/// `memtable_bytes` ([`StoreOptions::memtable_bytes`]).
pub(crate) fn cf_options(name: &str, cache: Option<&Cache>, memtable_bytes: usize) -> Options {
    let mut o = column_family_options(name, cache, memtable_bytes, true);
    // Bloom filters only above the bottom level: a lookup that gets there reads the
    // block where its key would be whether the key is there or not, and the writer's
    // lookups of an item's rows come together, so that block is mostly read for its
    // neighbours anyway. Files that a compaction writes with nothing below them have
    // none: about 5% of a store, and the writer's lookups ran faster without them
    // (`docs/benchmarks.md`, "Bloom filters above the bottom level only").
    o.set_optimize_filters_for_hits(true);
    o
}

/// Options of the SST files of column family `name` that a bulk build writes, which go
/// to the bottom level: the database's ([`cf_options`]), so they read exactly like
/// compacted ones, without the Bloom filters files at the bottom level do not have, and
/// the tables of [`BULK_ZSTD_LEVELS`] at their ZSTD level.
pub(crate) fn bottom_file_options(name: &str) -> Options {
    let mut o = column_family_options(name, None, StoreOptions::default().memtable_bytes, false);
    if let Some(&(_, level)) = BULK_ZSTD_LEVELS.iter().find(|(table, _)| *table == name) {
        o.set_bottommost_compression_options(ZSTD_WINDOW_BITS, level, 0, DICTIONARY_BYTES, true);
    }
    o
}

/// Tables whose files a bulk build writes at a higher ZSTD level than 3, and the level:
/// together two fifths of a snapshot. At 4.35M links level 6 takes `refdomains` 6.0%
/// smaller, `refdomains_ranked` 8.9%, `anchors` 8.6%, `pages` 4.1% and `counters` 3.3%
/// (the store 47.8 -> 47.1 bytes per backlink with `refdomains` already at level 6), for
/// bulk build times within this machine's noise of level 3's; ZSTD decompresses both
/// levels at about the same speed (`docs/benchmarks.md`, "Storage format 31"). Level 9
/// takes the two referring-domain tables, the largest after `backlinks` and growing
/// with the web, another 5% ("Storage format 32").
/// `backlinks` keeps level 3 there: its bulk-built files are the largest (the build's
/// time), and a snapshot's flow build rewrites them at level 6 anyway. Compactions keep level 3: a level gains a table less
/// than it costs the ingest that waits on them.
const BULK_ZSTD_LEVELS: [(&str, i32); 5] = [
    (CF_REFDOMAINS, 9),
    (CF_REFDOMAINS_RANKED, 9),
    (CF_ANCHORS, 6),
    (CF_PAGES, 6),
    (CF_COUNTERS, 6),
];

/// Column families whose reads scan an item's rows (the scanned ones, and the member
/// rows of items without ranked copies) and seldom look one row up, and rows between
/// their data blocks' restart points (full keys); see [`column_family_options`].
/// `backlinks` is not one: a site's reads resolve its pointer rows one by one.
const SCANNED_BY_ITEM: [&str; 7] = [
    CF_REFDOMAINS,
    CF_REFDOMAINS_RANKED,
    CF_ANCHORS,
    CF_ANCHORS_RANKED,
    CF_TIMELINE,
    CF_EXPIRY,
    CF_TOP_PAGES,
];
const SCANNED_RESTART_INTERVAL: i32 = 64;

/// ZSTD level of the `backlinks` files a flow build writes ([`flow_backlink_file_options`]).
const FLOW_BACKLINKS_ZSTD_LEVEL: i32 = 6;

/// Options of the `backlinks` files a flow build writes: [`bottom_file_options`] with ZSTD
/// at level 6 instead of 3. A flow build writes every backlink row once per generation,
/// after ingest, and a generation is what the store keeps: 6% fewer bytes for the table
/// (4% of the store) for 14-18% more flow time, at the same decompression speed
/// (`docs/benchmarks.md`, "Backlinks rewritten by a flow build at ZSTD level 6"). Bulk
/// builds (but for [`BULK_ZSTD_LEVELS`]) and compactions keep level 3: their time is
/// the ingest rate.
pub(crate) fn flow_backlink_file_options() -> Options {
    let mut o = bottom_file_options(CF_BACKLINKS);
    o.set_bottommost_compression_options(ZSTD_WINDOW_BITS, FLOW_BACKLINKS_ZSTD_LEVEL, 0, 0, true);
    o
}

/// [`cf_options`], with Bloom filters in every file of a point-read table when `filters`.
fn column_family_options(
    name: &str,
    cache: Option<&Cache>,
    memtable_bytes: usize,
    filters: bool,
) -> Options {
    let mut o = Options::default();
    let mut table = BlockBasedOptions::default();
    if let Some(cache) = cache {
        table.set_block_cache(cache);
    }
    // Bloom filters only where point reads look: tables read by prefix scans alone
    // would store and build them for nothing (10 bits per row).
    if filters && is_point_read(name) {
        table.set_bloom_filter(10.0, false);
    }
    // Partitioned index and filters: a point read loads one small filter partition, not
    // a whole file's filter, so a bounded cache never thrashes on filter blocks while
    // ingest probes for new keys.
    table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_partition_filters(true);
    table.set_metadata_block_size(4096);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_top_level_index_and_filter(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // A file's compression dictionary is read and digested once, when the file is
    // opened, and held while it is open (32 KiB and its digest, for at most
    // `max_open_files` files). Left to the block cache, a read that does not fill the
    // cache (the writer's scan of a page's links) read and digested it again for every
    // seek: a third of that scan's time.
    table.set_unpartitioned_pinning_tier(BlockBasedTablePinningTier::All);
    // Scanned tables are read a run of rows at a time: larger blocks compress better
    // and cost a scan nothing; point-read tables keep small ones.
    table.set_block_size(if SCANNED.contains(&name) {
        64 << 10
    } else {
        16 << 10
    });
    // Tables read by item, a run of rows at a time, write a full key every 64 rows, not
    // RocksDB's 16: rows of one item share their key's prefix, which a restart point
    // writes out again. A seek then steps through up to 63 rows after its binary search,
    // which slowed point reads (item info's, a site's pointer rows'): those tables keep 16.
    if SCANNED_BY_ITEM.contains(&name) {
        table.set_block_restart_interval(SCANNED_RESTART_INTERVAL);
    }
    o.set_block_based_table_factory(&table);
    o.set_compression_type(rocksdb::DBCompressionType::Lz4);
    // The bottom level holds nearly all data (and every bulk-built file): ZSTD there,
    // LZ4 above, where files are rewritten soon.
    o.set_bottommost_compression_type(rocksdb::DBCompressionType::Zstd);
    // Point-read tables' small blocks get a dictionary per file, trained on a sample of
    // its blocks: their rows repeat the same field layouts and names across blocks, which
    // a 16 KiB block alone cannot use (-9 to -12% for them). Scanned tables' 64 KiB blocks
    // gained nothing from one (the store's size was the same to 117 bytes). RocksDB holds a
    // file's uncompressed blocks until the dictionary is made, so every file written at
    // the bottom is bounded: compactions by their target file size, bulk-built files by
    // `build::FILE_RAW_BYTES`.
    if has_dictionary(name) {
        o.set_bottommost_compression_options(
            ZSTD_WINDOW_BITS,
            ZSTD_DEFAULT_LEVEL,
            0,
            DICTIONARY_BYTES,
            true,
        );
        o.set_bottommost_zstd_max_train_bytes(DICTIONARY_TRAINING_BYTES, true);
    }
    // A quarter of the budget per table: a table written fast (backlinks, `distinct`)
    // flushes before the others force it to.
    o.set_write_buffer_size((memtable_bytes / 4).max(4 << 20));
    // Most ingest reads are misses on new keys: let the memtables of point-read tables say
    // so cheaply. A memtable's filter is allocated and zeroed whole when the memtable is
    // made: 2% of its budget is about 16 bits per row of a full one.
    if is_point_read(name) {
        o.set_memtable_prefix_bloom_ratio(0.02);
        o.set_memtable_whole_key_filtering(true);
    }
    match name {
        CF_COUNTERS => o.set_merge_operator_associative("counters_v1", merge_counters),
        CF_TIMELINE => o.set_merge_operator_associative("timeline_v1", merge_timeline),
        _ => {}
    }
    o
}

/// The item hash bits of a `meta/format` value of this format, or the error that refuses
/// the store at `path`.
fn hash_bits_of_format(path: &Path, format: &[u8]) -> Result<u8> {
    match format {
        [FORMAT_VERSION, bits] => Ok(*bits),
        _ => Err(Error::Version {
            path: path.to_path_buf(),
            found: format.first().copied().unwrap_or(0),
            supported: FORMAT_VERSION,
        }),
    }
}

/// Refuses an existing store of another format before opening it for writing (which
/// would add this format's column families to it). A store with every column family of
/// this format is checked once opened; only one missing some is opened read-only here.
fn check_format(path: &Path) -> Result<()> {
    let Ok(cfs) = DB::list_cf(&Options::default(), path) else {
        return Ok(()); // no store yet
    };
    let complete = ALL_CFS.iter().all(|n| cfs.iter().any(|c| c == n));
    if complete || !cfs.iter().any(|c| c == CF_META) {
        return Ok(());
    }
    // Only `meta` is read: keep RocksDB from opening every table file up front.
    let mut opts = Options::default();
    opts.set_max_open_files(16);
    let db = DB::open_cf_for_read_only(&opts, path, &cfs, false)?;
    let meta = db.cf_handle(CF_META).expect("listed above");
    match db.get_cf(meta, b"format")? {
        Some(v) => hash_bits_of_format(path, &v).map(drop),
        None => Ok(()),
    }
}

/// `<path><suffix>` beside `path` (same directory, so same file system: files made there
/// are moved, not copied, into the store): build and scratch directories of a store.
pub fn sibling_path(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!("{name}{suffix}"))
}

/// A column family of `db`; every one is opened by [`Store::open`].
pub(crate) fn cf_handle<'db>(db: &'db DB, name: &str) -> &'db ColumnFamily {
    db.cf_handle(name)
        .expect("every CF is opened by Store::open")
}

impl Drop for Store {
    fn drop(&mut self) {
        // Writes bypass the WAL: without this flush a clean exit would drop the last
        // memtables (a crash does too, and re-running the ingest restores them).
        let _ = self.flush();
    }
}

impl Store {
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        check_format(&path)?;
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.increase_parallelism(2);
        db_opts.set_max_background_jobs(2);
        db_opts.set_max_open_files(options.max_open_files);
        db_opts.set_db_write_buffer_size(options.memtable_bytes);
        // RocksDB starts an info log at every open and keeps a thousand: a store that
        // every command and server swap opens would gather them (1.3 MB, a percent of the
        // peer suite's store, after its seven opens).
        db_opts.set_keep_log_file_num(KEPT_INFO_LOGS);
        // Writes skip the WAL (see `Writer::commit`); atomic flushes keep every column
        // family at the same batch boundary, so a crash leaves a consistent earlier state.
        db_opts.set_atomic_flush(true);
        let cfs = ALL_CFS.iter().map(|&name| {
            ColumnFamilyDescriptor::new(
                name,
                cf_options(name, Some(&cache), options.memtable_bytes),
            )
        });
        let db = DB::open_cf_descriptors(&db_opts, &path, cfs)?;
        let meta = db.cf_handle(CF_META).expect("meta CF opened above");
        let hash_bits = match db.get_cf(meta, b"format")? {
            Some(v) => hash_bits_of_format(&path, &v)?,
            None => {
                db.put_cf(meta, b"format", [FORMAT_VERSION, options.hash_bits])?;
                options.hash_bits
            }
        };
        let generation = db
            .get_cf(meta, b"generation")?
            .map_or(0, |v| v.first().copied().unwrap_or(0));
        let snapshot = db.get_cf(meta, SNAPSHOT)?.is_some();
        Ok(Store {
            snapshot: AtomicBool::new(snapshot),
            published: RwLock::new(None),
            db: Arc::new(db),
            hasher: ItemHasher::new(hash_bits),
            path,
            generation: AtomicU8::new(generation),
            publishes: AtomicU64::new(0),
            write_lock: Mutex::default(),
            cache,
            source_rows: Arc::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a named value for the store's owner under `meta/x.<name>` (synced).
    pub fn put_info(&self, name: &str, value: &[u8]) -> Result<()> {
        let mut sync = rocksdb::WriteOptions::default();
        sync.set_sync(true);
        self.db
            .put_cf_opt(self.cf(CF_META), format!("x.{name}"), value, &sync)?;
        Ok(())
    }

    /// A value stored with `put_info`.
    pub fn info(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf(self.cf(CF_META), format!("x.{name}"))?)
    }

    /// Makes everything written so far what readers see, atomically, and keeps them there
    /// until the next `publish`: a writer that publishes only between whole units of work
    /// (a crawl file) is never seen half-way. Reads never wait for writes. A store never
    /// published shows readers every committed batch.
    pub fn publish(&self) {
        self.publish_generation(self.generation());
    }

    /// Publishes everything written so far as serving flow generation `g`, and makes `g`
    /// the writers' generation, under one lock: no reader sees one without the other.
    pub(crate) fn publish_generation(&self, g: u8) {
        let snapshot = Arc::new(PublishedSnapshot::take(&self.db));
        let mut published = self.published.write().unwrap_or_else(|p| p.into_inner());
        self.generation.store(g, Ordering::Release);
        self.publishes.fetch_add(1, Ordering::Release);
        *published = Some(Published {
            snapshot,
            generation: g,
        });
        self.source_rows.clear();
    }

    pub(crate) fn is_published(&self) -> bool {
        self.published
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// A consistent view for reading: the published snapshot and its generation, or the
    /// latest writes of a store never published.
    pub fn read(&self) -> ReadView {
        let published = self.published.read().unwrap_or_else(|p| p.into_inner());
        let (snapshot, generation) = match &*published {
            Some(p) => (Some(Arc::clone(&p.snapshot)), p.generation),
            None => (None, self.generation()),
        };
        ReadView {
            db: Arc::clone(&self.db),
            snapshot,
            generation,
            hasher: self.hasher,
            source_rows: Arc::clone(&self.source_rows),
            snapshot_store: self.is_snapshot(),
        }
    }

    /// Moves whenever what [`Store::read`] or [`Store::info`] returns may have moved: at
    /// every write (RocksDB's latest sequence number), publish and generation switch. Read
    /// it before reading, and a value derived from the reads may be kept while the stamp
    /// stands still.
    pub fn stamp(&self) -> StoreStamp {
        StoreStamp {
            sequence: self.db.latest_sequence_number(),
            publishes: self.publishes.load(Ordering::Acquire),
            generation: self.generation(),
        }
    }

    /// The generation writers write: the serving one, except inside a flow build.
    pub fn generation(&self) -> u8 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn set_generation(&self, g: u8) {
        let _published = self.published.write().unwrap_or_else(|p| p.into_inner());
        self.generation.store(g, Ordering::Release);
        self.source_rows.clear();
    }

    /// State of a crawled page as last written, published or not (for writers).
    pub(crate) fn latest_page(&self, url: &str) -> Result<Option<PageState>> {
        self.row(&crate::table::PageKey(url))
    }

    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        cf_handle(&self.db, name)
    }

    /// A writer applying page crawls in batches; refused on a snapshot.
    pub fn writer(&self) -> Result<Writer<'_>> {
        self.check_writable()?;
        Ok(Writer::new(self))
    }

    /// [`Error::Snapshot`] when the store is a snapshot, which takes no crawl one by one:
    /// what [`Store::writer`] refuses, asked before any crawl is read.
    pub fn check_writable(&self) -> Result<()> {
        if self.is_snapshot() {
            return Err(Error::Snapshot {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// Whether this store was bulk-built without the rows that only the incremental
    /// writer reads (`docs/format.md`, "Snapshots"): it serves every read as any other
    /// store does, but takes no crawl one by one (a historic snapshot is rebuilt, not
    /// updated).
    pub fn is_snapshot(&self) -> bool {
        self.snapshot.load(Ordering::Acquire)
    }

    /// Whether generation `generation`'s `backlinks` and `sources` keys name a link's
    /// source page by its number, the rank of its URL's hash among the generation's
    /// source rows, instead of by that hash: a snapshot's generations written by a flow
    /// build do (`docs/format.md`, "Source pages by number").
    pub fn numbers_sources(&self, generation: u8) -> Result<bool> {
        let numbered = self.db.get_cf(self.cf(CF_META), NUMBERED_GENERATION)?;
        Ok(numbered.is_some_and(|g| g[..] == [generation]))
    }

    /// Marks a store built without writer-only rows as a snapshot (synced), before its
    /// rows are added: from then on [`Store::writer`] refuses it.
    pub fn mark_snapshot(&self) -> Result<()> {
        let mut sync = rocksdb::WriteOptions::default();
        sync.set_sync(true);
        self.db
            .put_cf_opt(self.cf(CF_META), SNAPSHOT, [1u8], &sync)?;
        self.snapshot.store(true, Ordering::Release);
        Ok(())
    }

    /// Whole-index totals as last written, published or not (for the writer's side).
    pub fn latest_index_counters(&self) -> Result<Counters> {
        let index = self.hasher.item_key(&Item::index());
        Ok(self
            .row(&crate::table::CountersKey(&index))?
            .unwrap_or_default())
    }

    /// Memory the store holds now, bytes.
    pub fn memory(&self) -> Result<StoreMemory> {
        let mut m = StoreMemory {
            block_cache: self.cache.get_usage() as u64,
            ..StoreMemory::default()
        };
        for &name in ALL_CFS {
            let cf = self.cf(name);
            let prop = |p: &str| self.db.property_int_value_cf(cf, p);
            // All memtables, those flushed but still held by readers included.
            m.memtables += prop("rocksdb.size-all-mem-tables")?.unwrap_or(0);
            m.table_readers += prop("rocksdb.estimate-table-readers-mem")?.unwrap_or(0);
        }
        Ok(m)
    }

    /// Approximate bytes on disk of every column family (SST files).
    pub fn disk_bytes(&self) -> Result<u64> {
        ALL_CFS.iter().map(|name| self.sst_bytes(name)).sum()
    }

    /// What each column family's SST files hold, in [`ALL_CFS`] order.
    pub fn disk_by_table(&self) -> Result<Vec<TableDisk>> {
        ALL_CFS
            .iter()
            .map(|&name| {
                let table = TableDisk {
                    name,
                    file_bytes: self.sst_bytes(name)?,
                    ..TableDisk::default()
                };
                let properties = self
                    .db
                    .property_value_cf(self.cf(name), "rocksdb.aggregated-table-properties")?
                    .unwrap_or_default();
                Ok(table.with_properties(&properties))
            })
            .collect()
    }

    fn sst_bytes(&self, name: &str) -> Result<u64> {
        Ok(self
            .db
            .property_int_value_cf(self.cf(name), "rocksdb.total-sst-files-size")?
            .unwrap_or(0))
    }

    /// Persists everything written so far (writes bypass the WAL).
    pub fn flush(&self) -> Result<()> {
        let cfs: Vec<&ColumnFamily> = ALL_CFS.iter().map(|n| self.cf(n)).collect();
        self.db
            .flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?;
        Ok(())
    }

    /// Flushes memtables to SST files and compacts, so `disk_bytes` is meaningful.
    pub fn compact(&self) -> Result<()> {
        for name in ALL_CFS {
            let cf = self.cf(name);
            self.db.flush_cf(cf)?;
            self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }

    /// True when no crawl was ever applied (no page, no link): what a bulk build needs.
    pub fn is_empty(&self) -> Result<bool> {
        for cf in [CF_PAGES, CF_LINKS] {
            let mut it = self.db.raw_iterator_cf(self.cf(cf));
            it.seek_to_first();
            if it.valid() {
                return Ok(false);
            }
            it.status()?;
        }
        Ok(true)
    }

    /// Adds finished SST files of one table (from [`crate::build::TableFileWriter`]),
    /// moving them into the database. Files of one call must not overlap in key range;
    /// they then go to the bottom level without compaction.
    pub fn ingest_table_files(&self, table: crate::build::Table, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let mut opts = rocksdb::IngestExternalFileOptions::default();
        opts.set_move_files(true);
        self.db
            .ingest_external_file_cf_opts(self.cf(table.cf_name()), &opts, files.to_vec())?;
        Ok(())
    }

    /// The item hash bits this store was created with.
    pub fn hash_bits(&self) -> u8 {
        self.hasher.bits()
    }
}
