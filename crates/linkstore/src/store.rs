//! Opening the store and every read path.

use crate::aggregate::{
    merge_counters, merge_timeline, AnchorText, Counters, RefDomain, TimelineDelta,
};
use crate::error::{Error, Result};
use crate::item::{host_of, root_domain, Item};
use crate::keys::{backlink_prefix, metrics_key, url_key, ItemHasher};
use crate::metrics::ItemMetrics;
use crate::page::PageState;
use crate::record::LinkRecord;
use crate::writer::Writer;
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, Direction,
    IteratorMode, Options, ReadOptions, DB,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A published point-in-time view of the store.
struct Published(rocksdb::SnapshotWithThreadMode<'static, DB>);

/// Read options of one read, and the snapshot they point into (kept alive by the caller
/// for as long as the read runs).
struct View {
    opts: ReadOptions,
    _snapshot: Option<Arc<Published>>,
}

/// Version of the key layout and column-family set, stored under `meta/format`.
pub const FORMAT_VERSION: u8 = 4;

pub(crate) const CF_META: &str = "meta";
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

const ALL_CFS: &[&str] = &[
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
];

/// The most rows one backlink read returns (Majestic's `Count` limit).
pub const MAX_BACKLINK_COUNT: usize = 50_000;

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Bits of the item hash kept in keys. 64 in production; tests lower it to force
    /// collisions. Fixed when the store is created.
    pub hash_bits: u8,
    /// Shared block cache size: the bound on the store's read memory.
    pub block_cache_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            hash_bits: 64,
            block_cache_bytes: 512 << 20,
        }
    }
}

/// A backlink database on disk.
pub struct Store {
    /// What readers see once a writer publishes (`publish`); `None`: the latest writes.
    /// Declared before `db`: a snapshot must be released before its database closes.
    published: RwLock<Option<Arc<Published>>>,
    pub(crate) db: DB,
    pub(crate) hasher: ItemHasher,
    path: PathBuf,
    /// Generation of the `backlinks` and `metrics` rows being served (see `FlowUpdate`).
    generation: AtomicU8,
    /// One writer at a time: an ingest `Writer` or a `FlowUpdate`.
    pub(crate) write_lock: Mutex<()>,
}

/// Which backlinks of an item to read, in SourceTrustFlow order.
#[derive(Debug, Clone)]
pub struct BacklinkQuery {
    /// Matching rows to skip (paging).
    pub from: usize,
    /// Rows to return, at most [`MAX_BACKLINK_COUNT`].
    pub count: usize,
    pub exclude_deleted: bool,
    /// At most this many source URLs per referring root domain.
    pub max_per_ref_domain: Option<usize>,
    /// At most this many rows per source URL.
    pub max_per_source_url: Option<usize>,
    /// Only links from this referring root domain.
    pub ref_domain: Option<String>,
}

impl Default for BacklinkQuery {
    fn default() -> Self {
        BacklinkQuery {
            from: 0,
            count: 100,
            exclude_deleted: false,
            max_per_ref_domain: None,
            max_per_source_url: None,
            ref_domain: None,
        }
    }
}

/// Links found and lost on one day for one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelinePoint {
    pub day: u32,
    pub found: i64,
    pub lost: i64,
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

/// Options of one column family. SST files made outside the database (bulk builds) are
/// written with the same options, so they read exactly like flushed ones.
pub(crate) fn cf_options(name: &str, cache: Option<&Cache>) -> Options {
    let mut o = Options::default();
    let mut table = BlockBasedOptions::default();
    if let Some(cache) = cache {
        table.set_block_cache(cache);
    }
    table.set_bloom_filter(10.0, false);
    // Partitioned index and filters: a point read loads one small filter partition, not
    // a whole file's filter, so a bounded cache never thrashes on filter blocks while
    // ingest probes for new keys.
    table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_partition_filters(true);
    table.set_metadata_block_size(4096);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_top_level_index_and_filter(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    table.set_block_size(16 << 10);
    o.set_block_based_table_factory(&table);
    o.set_compression_type(rocksdb::DBCompressionType::Lz4);
    o.set_write_buffer_size(64 << 20);
    // Most ingest reads are misses on new keys: let the memtable say so cheaply.
    o.set_memtable_prefix_bloom_ratio(0.1);
    o.set_memtable_whole_key_filtering(true);
    match name {
        CF_COUNTERS => o.set_merge_operator_associative("counters_v1", merge_counters),
        CF_TIMELINE => o.set_merge_operator_associative("timeline_v1", merge_timeline),
        _ => {}
    }
    o
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
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.increase_parallelism(2);
        db_opts.set_max_background_jobs(2);
        // Writes skip the WAL (see `Writer::commit`); atomic flushes keep every column
        // family at the same batch boundary, so a crash leaves a consistent earlier state.
        db_opts.set_atomic_flush(true);
        let cfs = ALL_CFS
            .iter()
            .map(|&name| ColumnFamilyDescriptor::new(name, cf_options(name, Some(&cache))));
        let db = DB::open_cf_descriptors(&db_opts, &path, cfs)?;
        let meta = db.cf_handle(CF_META).expect("meta CF opened above");
        let hash_bits = match db.get_cf(meta, b"format")? {
            Some(v) => {
                if v.len() != 2 || v[0] != FORMAT_VERSION {
                    return Err(Error::Version {
                        found: v.first().copied().unwrap_or(0),
                        supported: FORMAT_VERSION,
                    });
                }
                v[1]
            }
            None => {
                db.put_cf(meta, b"format", [FORMAT_VERSION, options.hash_bits])?;
                options.hash_bits
            }
        };
        let generation = db
            .get_cf(meta, b"generation")?
            .map_or(0, |v| v.first().copied().unwrap_or(0));
        Ok(Store {
            published: RwLock::new(None),
            db,
            hasher: ItemHasher::new(hash_bits),
            path,
            generation: AtomicU8::new(generation),
            write_lock: Mutex::new(()),
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
        let snapshot = self.db.snapshot();
        // SAFETY: the snapshot borrows `self.db`. It is stored in `self.published`, which
        // is declared before `db` and so dropped before it; readers hold clones only for
        // the duration of a `&self` method call.
        let snapshot: rocksdb::SnapshotWithThreadMode<'static, DB> =
            unsafe { std::mem::transmute(snapshot) };
        *self.published.write().unwrap_or_else(|p| p.into_inner()) =
            Some(Arc::new(Published(snapshot)));
    }

    pub(crate) fn is_published(&self) -> bool {
        self.published
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Read options for one read: the published snapshot, if any.
    fn view(&self) -> View {
        let snapshot = self
            .published
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut opts = ReadOptions::default();
        if let Some(s) = &snapshot {
            opts.set_snapshot(&s.0);
        }
        View {
            opts,
            _snapshot: snapshot,
        }
    }

    /// The generation of backlink orderings and metrics being served.
    pub fn generation(&self) -> u8 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn set_generation(&self, g: u8) {
        self.generation.store(g, Ordering::Release);
    }

    /// Flow metrics of an item from the last flow build, `None` before any.
    pub fn metrics(&self, item: &Item) -> Result<Option<ItemMetrics>> {
        let key = metrics_key(self.generation(), &self.hasher.item_key(item));
        let view = self.view();
        self.db
            .get_pinned_cf_opt(self.cf(CF_METRICS), key, &view.opts)?
            .map(|v| ItemMetrics::decode(&v))
            .transpose()
    }

    /// Metrics of many items in one batched read, in request order.
    pub fn metrics_many(&self, items: &[Item]) -> Result<Vec<Option<ItemMetrics>>> {
        let g = self.generation();
        let keys: Vec<Vec<u8>> = items
            .iter()
            .map(|i| metrics_key(g, &self.hasher.item_key(i)))
            .collect();
        let view = self.view();
        self.db
            .batched_multi_get_cf_opt(self.cf(CF_METRICS), &keys, false, &view.opts)
            .into_iter()
            .map(|r| r?.map(|v| ItemMetrics::decode(&v)).transpose())
            .collect()
    }

    /// Visits every stored link (internal and external, live and deleted), by source.
    pub fn scan_links(&self, visit: impl FnMut(&LinkRecord)) -> Result<()> {
        self.scan_links_with(self.view().opts, visit)
    }

    /// Visits every stored link as last written, published or not (for writers).
    pub(crate) fn scan_latest_links(&self, visit: impl FnMut(&LinkRecord)) -> Result<()> {
        self.scan_links_with(ReadOptions::default(), visit)
    }

    fn scan_links_with(&self, opts: ReadOptions, mut visit: impl FnMut(&LinkRecord)) -> Result<()> {
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_LINKS), opts);
        it.seek_to_first();
        while let Some(v) = it.value() {
            visit(&LinkRecord::decode(v)?);
            it.next();
        }
        it.status()?;
        Ok(())
    }

    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("every CF is opened by Store::open")
    }

    /// A writer applying page crawls in batches.
    pub fn writer(&self) -> Writer<'_> {
        Writer::new(self)
    }

    /// Counters of an item, or `None` when the index knows nothing of it.
    pub fn counters(&self, item: &Item) -> Result<Option<Counters>> {
        let key = self.hasher.item_key(item);
        let view = self.view();
        self.db
            .get_pinned_cf_opt(self.cf(CF_COUNTERS), key, &view.opts)?
            .map(|v| Counters::decode(&v))
            .transpose()
    }

    /// Counters of many items in one batched read, in request order.
    pub fn counters_many(&self, items: &[Item]) -> Result<Vec<Option<Counters>>> {
        let cf = self.cf(CF_COUNTERS);
        let keys: Vec<Vec<u8>> = items.iter().map(|i| self.hasher.item_key(i)).collect();
        let view = self.view();
        self.db
            .batched_multi_get_cf_opt(cf, &keys, false, &view.opts)
            .into_iter()
            .map(|r| r?.map(|v| Counters::decode(&v)).transpose())
            .collect()
    }

    /// Whole-index totals (links, pages crawled, URLs known, dates).
    pub fn index_counters(&self) -> Result<Counters> {
        Ok(self.counters(&Item::index())?.unwrap_or_default())
    }

    /// Whole-index totals as last written, published or not (for the writer's side).
    pub fn latest_index_counters(&self) -> Result<Counters> {
        self.db
            .get_pinned_cf(self.cf(CF_COUNTERS), self.hasher.item_key(&Item::index()))?
            .map(|v| Counters::decode(&v))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// State of a crawled page.
    pub fn page(&self, url: &str) -> Result<Option<PageState>> {
        let view = self.view();
        self.db
            .get_pinned_cf_opt(self.cf(CF_PAGES), url_key(url), &view.opts)?
            .map(|v| PageState::decode(&v))
            .transpose()
    }

    /// Backlinks of an item by SourceTrustFlow descending (deterministic tie-break), with
    /// the query's filters and caps. Every row is checked against the item, so a hash
    /// collision can never return another item's links.
    pub fn backlinks(&self, item: &Item, q: &BacklinkQuery) -> Result<Vec<LinkRecord>> {
        let count = q.count.min(MAX_BACKLINK_COUNT);
        let mut rows = Vec::with_capacity(count.min(1024));
        if count == 0 {
            return Ok(rows);
        }
        let ref_domain = q.ref_domain.as_deref().map(str::to_ascii_lowercase);
        let mut per_domain: HashMap<String, usize> = HashMap::new();
        let mut per_source: HashMap<String, usize> = HashMap::new();
        let mut skipped = 0usize;
        self.scan_backlinks(item, |rec| {
            if q.exclude_deleted && rec.is_deleted() {
                return true;
            }
            let needs_domain = ref_domain.is_some() || q.max_per_ref_domain.is_some();
            let domain = if needs_domain {
                let host = host_of(&rec.source_url);
                root_domain(host).unwrap_or(host)
            } else {
                ""
            };
            if ref_domain.as_deref().is_some_and(|d| d != domain) {
                return true;
            }
            if let Some(max) = q.max_per_ref_domain {
                let n = per_domain.entry(domain.to_string()).or_default();
                if *n >= max {
                    return true;
                }
                *n += 1;
            }
            if let Some(max) = q.max_per_source_url {
                let n = per_source.entry(rec.source_url.clone()).or_default();
                if *n >= max {
                    return true;
                }
                *n += 1;
            }
            if skipped < q.from {
                skipped += 1;
                return true;
            }
            rows.push(rec);
            rows.len() < count
        })?;
        Ok(rows)
    }

    /// Visits the item's backlinks in key order until `visit` returns false.
    pub fn scan_backlinks(
        &self,
        item: &Item,
        mut visit: impl FnMut(LinkRecord) -> bool,
    ) -> Result<()> {
        let hash = self.hasher.hash(item.level, &item.name);
        let lower = backlink_prefix(self.generation(), hash);
        let View {
            mut opts,
            _snapshot,
        } = self.view();
        if let Some(upper) = prefix_successor(&lower) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_BACKLINKS), opts);
        it.seek(lower);
        while it.valid() {
            let (Some(key), Some(value)) = (it.key(), it.value()) else {
                break;
            };
            if !key.starts_with(&lower) {
                break;
            }
            let rec = LinkRecord::decode(value)?;
            if item.contains_url(&rec.target_url) && !visit(rec) {
                return Ok(());
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Referring domains of an item, most backlinks first.
    pub fn ref_domains(&self, item: &Item, from: usize, count: usize) -> Result<Vec<RefDomain>> {
        self.ranked(item, CF_REFDOMAINS_RANKED, from, count, RefDomain::decode)
    }

    /// One referring domain's aggregate for an item.
    pub fn ref_domain(&self, item: &Item, domain: &str) -> Result<Option<RefDomain>> {
        let key = crate::keys::member_key(&self.hasher.item_key(item), domain);
        let view = self.view();
        self.db
            .get_pinned_cf_opt(self.cf(CF_REFDOMAINS), key, &view.opts)?
            .map(|v| RefDomain::decode(&v))
            .transpose()
    }

    /// Anchor texts of an item, most referring domains first.
    pub fn anchors(&self, item: &Item, from: usize, count: usize) -> Result<Vec<AnchorText>> {
        self.ranked(item, CF_ANCHORS_RANKED, from, count, AnchorText::decode)
    }

    fn ranked<T>(
        &self,
        item: &Item,
        cf: &str,
        from: usize,
        count: usize,
        decode: fn(&[u8]) -> Result<T>,
    ) -> Result<Vec<T>> {
        let prefix = self.hasher.item_key(item);
        let view = self.view();
        let mut it = self.db.iterator_cf_opt(
            self.cf(cf),
            view.opts,
            IteratorMode::From(&prefix, Direction::Forward),
        );
        let mut out = Vec::new();
        let mut skipped = 0;
        while out.len() < count {
            let Some(kv) = it.next() else { break };
            let (k, v) = kv?;
            if !k.starts_with(&prefix) {
                break;
            }
            if skipped < from {
                skipped += 1;
                continue;
            }
            out.push(decode(&v)?);
        }
        Ok(out)
    }

    /// Links found and lost per day in `[from_day, to_day]`, days with no change omitted.
    pub fn timeline(&self, item: &Item, from_day: u32, to_day: u32) -> Result<Vec<TimelinePoint>> {
        let prefix = self.hasher.item_key(item);
        let start = crate::keys::timeline_key(&prefix, from_day);
        let view = self.view();
        let it = self.db.iterator_cf_opt(
            self.cf(CF_TIMELINE),
            view.opts,
            IteratorMode::From(&start, Direction::Forward),
        );
        let mut out = Vec::new();
        for kv in it {
            let (k, v) = kv?;
            if !k.starts_with(&prefix) || k.len() != prefix.len() + 4 {
                break;
            }
            let day = u32::from_be_bytes(k[prefix.len()..].try_into().expect("4 bytes"));
            if day > to_day {
                break;
            }
            let d = TimelineDelta::decode(&v)?;
            if d.found != 0 || d.lost != 0 {
                out.push(TimelinePoint {
                    day,
                    found: d.found,
                    lost: d.lost,
                });
            }
        }
        Ok(out)
    }

    /// Approximate bytes on disk of every column family (SST files).
    pub fn disk_bytes(&self) -> Result<u64> {
        let mut total = 0;
        for name in ALL_CFS {
            total += self
                .db
                .property_int_value_cf(self.cf(name), "rocksdb.total-sst-files-size")?
                .unwrap_or(0);
        }
        Ok(total)
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

    /// Visits every row of a table in key order (as published): for tools and tests
    /// that compare stores row by row.
    pub fn scan_table(
        &self,
        table: crate::build::Table,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let mut it = self
            .db
            .raw_iterator_cf_opt(self.cf(table.cf_name()), self.view().opts);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            visit(k, v);
            it.next();
        }
        it.status()?;
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
