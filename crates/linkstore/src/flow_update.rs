//! Publishing a flow build: new metrics and re-ordered backlinks are written as the next
//! generation beside the serving one, then one durable write switches generations.
//!
//! Readers scan only the serving generation, so they never see a half-updated index; a
//! build killed before the switch leaves the serving generation untouched, and its
//! leftovers are cleared by the next build.
//!
//! The next generation's backlink rows are written as SST files in their new order and
//! added with `IngestExternalFile`, not through the memtable: the old generation is read
//! in item order, so only one item's rows are re-sorted in memory at a time (an item
//! with more rows than [`ITEM_BUFFER_BYTES`] goes through write batches instead). The
//! old generation is split into ranges of item hashes, each re-keyed by its own thread
//! into files of its own: their key ranges never overlap.

use crate::build::facts_row::{self, FactsRow};
use crate::build::{Table, TableFileWriter};
use crate::error::{Error, Result};
use crate::item::Item;
use crate::item::{host_of, root_domain, Level};
use crate::keys::{link_of, url_hash};
use crate::metrics::ItemMetrics;
use crate::record::{FlowPair, FlowSlots, LinkEnd};
use crate::store::{
    prefix_successor, Store, CF_BACKLINKS, CF_META, CF_METRICS, CF_SOURCES, CF_TOP_PAGES,
    NUMBERED_GENERATION,
};
use crate::table::{
    is_pointer, put_row, source_page_unnumbered, source_row_missing, url_row_missing, BacklinkKey,
    Empty, MetricsKey, SourceKey, TableKey, TopPageKey, POINTER,
};
use rocksdb::{WriteBatch, WriteOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;
use std::time::Duration;

/// How a re-keyed row names a link end: by its URL, or (the source of a pointer row) by
/// the URL's 64-bit hash alone. The caller's `end_of` answers `None` only for a hash that
/// does not settle which URL it is (its graph, or the sources outside it, hold two URLs
/// of that hash); the row's URL is then read from its URL row.
#[derive(Debug, Clone, Copy)]
pub enum EndName<'a> {
    Url(&'a str),
    Hash,
}

/// The column families whose rows are keyed by flow generation.
const GENERATION_CFS: [&str; 4] = [CF_BACKLINKS, CF_METRICS, CF_TOP_PAGES, CF_SOURCES];

const BATCH_ROWS: usize = 20_000;
/// Rows re-keyed between two progress reports.
const PROGRESS_ROWS: u64 = 500_000;
/// The most bytes of one item's rows re-sorted in memory.
const ITEM_BUFFER_BYTES: usize = 256 << 20;
/// Raw bytes of rows at which a backlink file is closed and the next one started:
/// about 1.3 GiB of file at `backlinks`' 3.2x compression. The table has no dictionary,
/// so nothing is held back while a file is written; large files keep a large store's
/// files within the readers it keeps open.
const FILE_RAW_BYTES: u64 = 4 << 30;

/// The next generation's backlink rows, written as sorted SST files.
struct BacklinkFiles {
    /// Rows of the item being read (its hash), to be written in their new order.
    item: Option<u64>,
    rows: Vec<([u8; 26], Vec<u8>)>,
    bytes: usize,
    /// The item's rows outgrew the buffer: the rest go through write batches.
    overflowed: bool,
    files: TableFiles,
}

impl BacklinkFiles {
    fn new(dir: PathBuf) -> Result<BacklinkFiles> {
        Ok(BacklinkFiles {
            item: None,
            rows: Vec::new(),
            bytes: 0,
            overflowed: false,
            files: TableFiles::new(dir, TableFileWriter::create_flow_backlinks)?,
        })
    }

    /// Writes the buffered item's rows in key order.
    fn write_item(&mut self) -> Result<()> {
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_unstable_by_key(|r| r.0);
        for (key, value) in rows.drain(..) {
            self.files.put(&key, &value)?;
        }
        self.rows = rows; // keeps its capacity for the next item
        self.bytes = 0;
        Ok(())
    }

    /// Writes what is buffered and closes the last file: the files to add (they stay
    /// until `self` is dropped, so add them first).
    fn finish(&mut self) -> Result<Vec<PathBuf>> {
        self.write_item()?;
        self.files.finish()
    }
}

/// One table's files written one after another into a directory, each opened at its
/// first row and finished at [`FILE_RAW_BYTES`] of raw rows; the directory goes when
/// this is dropped, so add the files first.
struct TableFiles {
    dir: PathBuf,
    create: fn(&Path) -> Result<TableFileWriter>,
    writer: Option<TableFileWriter>,
    files: Vec<PathBuf>,
}

impl TableFiles {
    fn new(dir: PathBuf, create: fn(&Path) -> Result<TableFileWriter>) -> Result<TableFiles> {
        std::fs::create_dir_all(&dir)?;
        Ok(TableFiles {
            dir,
            create,
            writer: None,
            files: Vec::new(),
        })
    }

    /// The next row, in key order.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let writer = match &mut self.writer {
            Some(w) => w,
            None => {
                let path = self.dir.join(format!("{:06}.sst", self.files.len()));
                let w = (self.create)(&path)?;
                self.files.push(path);
                self.writer.insert(w)
            }
        };
        writer.put(key, value)?;
        if writer.raw_bytes() >= FILE_RAW_BYTES {
            self.close_file()?;
        }
        Ok(())
    }

    fn close_file(&mut self) -> Result<()> {
        if let Some(w) = self.writer.take() {
            if w.finish()?.is_none() {
                self.files.pop();
            }
        }
        Ok(())
    }

    /// Closes the last file: the files written.
    fn finish(&mut self) -> Result<Vec<PathBuf>> {
        self.close_file()?;
        Ok(self.files.clone())
    }
}

impl Drop for TableFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where a store's flow build keeps its files while it runs.
fn scratch_dir(store_path: &Path) -> PathBuf {
    crate::store::sibling_path(store_path, ".flow-scratch")
}

/// An open flow publication; holds the store's write lock (no ingest meanwhile).
pub struct FlowUpdate<'a> {
    store: &'a Store,
    _lock: MutexGuard<'a, crate::writer::DomainClasses>,
    current: u8,
    next: u8,
    batches: Batches<'a>,
    metrics_rows: u64,
    /// [`ITEM_BUFFER_BYTES`], lowered by tests.
    item_buffer_bytes: usize,
}

/// What publishing did.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowUpdateReport {
    pub metrics_rows: u64,
    pub backlink_rows: u64,
    pub generation: u8,
}

fn no_wal() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.disable_wal(true);
    wo
}

impl Store {
    /// Starts publishing flow metrics. Clears what a killed earlier build left behind.
    pub fn begin_flow_update(&self) -> Result<FlowUpdate<'_>> {
        let lock = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.generation();
        // Generations cycle through 0..=254, so no key starts with 0xff and a range
        // ending at [0xff] covers every later generation exactly.
        let next = if current >= 254 { 0 } else { current + 1 };
        for cf in GENERATION_CFS {
            self.clear_other_generations(cf, current, false)?;
        }
        Ok(FlowUpdate {
            store: self,
            _lock: lock,
            current,
            next,
            batches: Batches::new(self),
            metrics_rows: 0,
            item_buffer_bytes: ITEM_BUFFER_BYTES,
        })
    }

    /// Deletes every row of `cf` outside generation `keep`. With `drop_files`, SST files
    /// holding only such rows are removed at once instead of waiting for compaction:
    /// only when no reader can hold a snapshot that still needs them.
    ///
    /// A range holding no row gets no range deletion: its tombstone would cover the next
    /// generation's keys, and files added under a tombstone cannot go to the bottom
    /// level (they must be newer than it), so the whole generation would be compacted
    /// down from level 0 again.
    fn clear_other_generations(&self, cf: &str, keep: u8, drop_files: bool) -> Result<()> {
        let cf = self.cf(cf);
        let mut ranges = vec![([keep + 1], [0xffu8])];
        if keep > 0 {
            ranges.push(([0u8], [keep]));
        }
        for (from, to) in ranges {
            let mut it = self.db.raw_iterator_cf(cf);
            it.seek(from);
            let holds_rows = it.valid() && it.key().is_some_and(|k| k < to.as_slice());
            it.status()?;
            if !holds_rows {
                continue;
            }
            if drop_files {
                self.db.delete_file_in_range_cf(cf, from, to)?;
            }
            self.db.delete_range_cf(cf, from, to)?;
        }
        Ok(())
    }
}

impl FlowUpdate<'_> {
    /// Stores an item's metrics in the next generation.
    pub fn put_metrics(&mut self, item: &Item, m: &ItemMetrics) -> Result<()> {
        let item_key = self.store.hasher.item_key(item);
        let key = MetricsKey {
            generation: self.next,
            item_key: &item_key,
        };
        put_row(self.store, &mut self.batches.batch, &key, m);
        self.metrics_rows += 1;
        self.batches.added()
    }

    /// Lists a page among its host's and its root domain's pages, by its flows.
    pub fn put_top_page(&mut self, url: &str, flow: FlowPair) -> Result<()> {
        let host = host_of(url);
        let sites = [
            (Level::SubDomain, host),
            (Level::RootDomain, root_domain(host).unwrap_or(host)),
        ];
        for (level, name) in sites {
            let key = TopPageKey {
                generation: self.next,
                site_hash: self.store.hasher.hash(level, name),
                flow,
                url,
            };
            put_row(self.store, &mut self.batches.batch, &key, &Empty);
            self.batches.added()?;
        }
        Ok(())
    }

    /// Copies every backlink row of the serving generation into the next one with the
    /// ends `end_of(url_hash, name)` gives (re-keyed by the new SourceTrustFlow), makes
    /// the next generation durable, switches to it, and drops the old one. The rows are
    /// re-keyed by `threads` threads, each over its own range of item hashes.
    pub fn finish(
        self,
        end_of: impl Fn(u64, EndName<'_>) -> Option<LinkEnd> + Sync,
        threads: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Result<FlowUpdateReport> {
        let parts = threads.clamp(1, 64) as u64;
        let current = self.current;
        let sources: Vec<RowSource<std::iter::Empty<_>>> = (0..parts)
            .map(|part| {
                let (from, to) = hash_range(part, parts);
                RowSource::Generation { current, from, to }
            })
            .collect();
        self.rekey_and_switch(end_of, sources, progress)
    }

    /// [`FlowUpdate::finish`] for a store whose backlink rows were kept outside it (a
    /// bulk build's, before any flow): each source yields rows of any generation in key
    /// order, and the sources hold ascending, disjoint ranges of item hashes. One thread
    /// re-keys each source. The rows name their sources by URL hash, as a bulk build
    /// writes them, so the store's serving generation must too (it is read for the
    /// source rows): a numbered one is refused.
    pub fn finish_from_rows<I>(
        self,
        end_of: impl Fn(u64, EndName<'_>) -> Option<LinkEnd> + Sync,
        sources: Vec<I>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<FlowUpdateReport>
    where
        I: Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>> + Send,
    {
        if self.store.numbers_sources(self.current)? {
            return Err(Error::corrupt(
                CF_SOURCES,
                "rows kept by a bulk build name sources by hash, this store's by number",
            ));
        }
        let sources = sources.into_iter().map(RowSource::Rows).collect();
        self.rekey_and_switch(end_of, sources, progress)
    }

    fn rekey_and_switch<I>(
        mut self,
        end_of: impl Fn(u64, EndName<'_>) -> Option<LinkEnd> + Sync,
        sources: Vec<RowSource<I>>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<FlowUpdateReport>
    where
        I: Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>> + Send,
    {
        self.batches.commit()?;
        let s = self.store;
        let scratch = ScratchDir::new(scratch_dir(s.path()))?;
        let rows = AtomicU64::new(0);
        let (next, item_buffer_bytes) = (self.next, self.item_buffer_bytes);
        let mut source_files = TableFiles::new(scratch.0.join("sources"), |path| {
            TableFileWriter::create(Table::Sources, path)
        })?;
        let source_pages = match s.is_snapshot() {
            true => Some(SourcePages::read_and_carry(
                s,
                next,
                &end_of,
                &mut source_files,
            )?),
            false => None,
        };
        let source_paths = source_files.finish()?;
        let results: Vec<Result<(BacklinkFiles, Vec<PathBuf>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = sources
                .into_iter()
                .enumerate()
                .map(|(part, source)| {
                    let (end_of, rows, dir) = (&end_of, &rows, scratch.0.join(part.to_string()));
                    let source_pages = source_pages.as_ref();
                    scope.spawn(move || {
                        let mut rekey = Rekey {
                            store: s,
                            next,
                            files: BacklinkFiles::new(dir)?,
                            batches: Batches::new(s),
                            item_buffer_bytes,
                            end_of,
                            source_pages,
                            rows,
                            counted: 0,
                        };
                        match source {
                            RowSource::Generation { current, from, to } => {
                                rekey.run_generation(current, from, to)?
                            }
                            RowSource::Rows(rows) => rekey.run_rows(rows)?,
                        }
                        rekey.finish()?;
                        let paths = rekey.files.finish()?;
                        Ok((rekey.files, paths))
                    })
                })
                .collect();
            let mut reported = 0;
            while !handles.iter().all(|h| h.is_finished()) {
                std::thread::sleep(Duration::from_millis(100));
                let now = rows.load(Ordering::Relaxed);
                if now >= reported + PROGRESS_ROWS {
                    progress(now);
                    reported = now;
                }
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut parts_files = Vec::with_capacity(results.len());
        let mut paths = Vec::new();
        for r in results {
            let (files, part_paths) = r?;
            paths.extend(part_paths);
            parts_files.push(files);
        }
        s.ingest_table_files(Table::Backlinks, &paths)?;
        s.ingest_table_files(Table::Sources, &source_paths)?;
        drop((parts_files, source_files));
        drop(scratch);
        // Durable before the switch: everything of the next generation, then the pointer.
        s.flush()?;
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        let mut switch = WriteBatch::default();
        switch.put_cf(s.cf(CF_META), b"generation", [next]);
        if source_pages.is_some() {
            switch.put_cf(s.cf(CF_META), NUMBERED_GENERATION, [next]);
        }
        s.db.write_opt(switch, &sync)?;
        // A served store's readers must see the new rows before they ask for them; a
        // reader may still hold the previous snapshot, so its files stay until compacted.
        let served = s.is_published();
        if served {
            s.publish_generation(next);
        } else {
            s.set_generation(next);
        }
        for cf in GENERATION_CFS {
            s.clear_other_generations(cf, next, !served)?;
        }
        // The metrics and top pages came through memtables into level-0 files (LZ4, with
        // Bloom filters): compacted, they reach the bottom level in ZSTD with dictionaries,
        // as the backlink files and every bulk-built file do, and the old generation's
        // range deletions go.
        // A compaction would move a lone level-0 file down as it is: rewrite it.
        let mut rewrite = rocksdb::CompactOptions::default();
        rewrite.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        for cf in [CF_METRICS, CF_TOP_PAGES] {
            s.db.compact_range_cf_opt(s.cf(cf), None::<&[u8]>, None::<&[u8]>, &rewrite);
        }
        let report = FlowUpdateReport {
            generation: next,
            metrics_rows: self.metrics_rows,
            backlink_rows: rows.into_inner(),
        };
        progress(report.backlink_rows);
        Ok(report)
    }
}

/// A snapshot's source pages: the URL hash of each source row of the serving generation
/// with the check of its fields ([`SourceRow::check`](crate::source_row::SourceRow::check)),
/// 16 bytes a page, sorted by hash. A page's place here is its number, the name the next
/// generation's keys give it (`docs/format.md`, "Source pages by number").
struct SourcePages {
    pages: Vec<(u64, u64)>,
    /// The serving generation's keys name pages by number, else by URL hash.
    numbered: bool,
}

impl SourcePages {
    /// The serving generation's source pages; and each page's row, with the Citation
    /// Flow and topics `end_of` gives it, written under its number as generation `next`'s
    /// into `files`, as its records are.
    fn read_and_carry(
        store: &Store,
        next: u8,
        end_of: &impl Fn(u64, EndName<'_>) -> Option<LinkEnd>,
        files: &mut TableFiles,
    ) -> Result<SourcePages> {
        let view = store.read();
        let numbered = store.numbers_sources(view.generation)?;
        let mut pages: Vec<(u64, u64)> = Vec::new();
        // Rows come in key order, which is their URL hashes' order whether keyed by hash
        // or by number (a hash's rank).
        view.each_source_row(|name, row| {
            let hash = url_hash(&row.url);
            let misnamed = match numbered {
                true => name != pages.len() as u64,
                false => name != hash,
            };
            if misnamed || pages.last().is_some_and(|&(last, _)| last >= hash) {
                return Err(Error::corrupt(
                    CF_SOURCES,
                    "a source row keyed by neither its URL's hash nor its number",
                ));
            }
            let key = SourceKey {
                generation: next,
                source: pages.len() as u64,
            };
            pages.push((hash, row.check()));
            let end = end_of(hash, EndName::Url(&row.url)).unwrap_or_default();
            files.put(&key.encode(), &row.with_end(&end).encode())
        })?;
        Ok(SourcePages { pages, numbered })
    }

    /// The place of the source page the serving generation's keys name `name` (its
    /// number, in the serving generation if that is numbered and in the next in any
    /// case), and its URL hash.
    fn page(&self, name: u64) -> Result<(usize, u64)> {
        let at = match self.numbered {
            true => usize::try_from(name)
                .ok()
                .filter(|&at| at < self.pages.len()),
            false => self.pages.binary_search_by_key(&name, |&(h, _)| h).ok(),
        };
        let at = at.ok_or_else(source_page_unnumbered)?;
        Ok((at, self.pages[at].0))
    }

    /// True when the source page at `at` has fields whose check is `check`.
    fn holds(&self, at: usize, check: u64) -> bool {
        self.pages[at].1 == check
    }
}

/// Part `part` of `parts` equal ranges of 64-bit item hashes: `[from, to)`, `to` `None`
/// for the last.
fn hash_range(part: u64, parts: u64) -> (u64, Option<u64>) {
    let step = u64::MAX / parts + 1;
    let to = (part + 1 < parts).then(|| (part + 1) * step);
    (part * step, to)
}

/// The flow build's scratch directory, removed with what is left in it when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(dir: PathBuf) -> Result<ScratchDir> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where one re-keying thread reads the rows it copies.
enum RowSource<I> {
    /// The serving generation's rows whose item hash is in `[from, to)` (`to` `None`:
    /// to the end).
    Generation {
        current: u8,
        from: u64,
        to: Option<u64>,
    },
    /// Rows in key order from outside the store.
    Rows(I),
}

/// One thread's share of the re-keying: the backlink rows of a range of item hashes.
struct Rekey<'a, E> {
    store: &'a Store,
    next: u8,
    files: BacklinkFiles,
    /// Rows of items too big to re-sort in memory, ordered by the memtable instead.
    batches: Batches<'a>,
    item_buffer_bytes: usize,
    end_of: &'a E,
    /// In a snapshot, its source pages: a URL row whose source fields match its page's
    /// leaves them to the page's row, and the next generation names pages by number.
    source_pages: Option<&'a SourcePages>,
    /// Rows re-keyed by every thread, for progress; `counted` by this one since it last
    /// added to it.
    rows: &'a AtomicU64,
    counted: u64,
}

impl<E: Fn(u64, EndName<'_>) -> Option<LinkEnd>> Rekey<'_, E> {
    /// Re-keys the serving generation's (`current`) rows whose item hash is in
    /// `[from, to)`.
    fn run_generation(&mut self, current: u8, from: u64, to: Option<u64>) -> Result<()> {
        let s = self.store;
        let bound = |hash: u64| {
            let mut k = vec![current];
            k.extend_from_slice(&hash.to_be_bytes());
            k
        };
        let mut opts = rocksdb::ReadOptions::default();
        // Every row is read once: caching its blocks would only evict what readers use.
        opts.fill_cache(false);
        match to {
            Some(to) => opts.set_iterate_upper_bound(bound(to)),
            None => {
                if let Some(upper) = prefix_successor(&[current]) {
                    opts.set_iterate_upper_bound(upper);
                }
            }
        }
        let mut it = s.db.raw_iterator_cf_opt(s.cf(CF_BACKLINKS), opts);
        it.seek(bound(from));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            self.rekey(k, v)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Re-keys rows read in key order from outside the store.
    fn run_rows(
        &mut self,
        rows: impl Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Result<()> {
        for row in rows {
            let (k, v) = row?;
            self.rekey(&k, &v)?;
        }
        Ok(())
    }

    /// Copies one row into the next generation with its ends' new flows: a record
    /// rewritten, or a pointer kept (and made, when the row is not its target URL's, from
    /// a record or a kept facts row).
    fn rekey(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        let key = BacklinkKey::parse(k)?;
        let (source_name, target_hash) = crate::keys::link_hashes(&key.link);
        // One lookup gives the page's URL hash and its number in the next generation.
        let (source_hash, page) = match self.source_pages {
            Some(pages) => {
                let (at, hash) = pages.page(source_name)?;
                (hash, Some((pages, at)))
            }
            None => (source_name, None),
        };
        let (source_trust_flow, value) = if facts_row::is_facts_row(v) {
            // A host's or root domain's row a bulk build kept for this flow build.
            if key.is_url_row(&self.store.hasher) {
                return Err(Error::corrupt(CF_BACKLINKS, "a URL row without its record"));
            }
            let source_url = FactsRow::read(v)?.source_url.ok_or_else(|| {
                Error::corrupt(CF_BACKLINKS, "a kept facts row without its source URL")
            })?;
            let source = (self.end_of)(source_hash, EndName::Url(source_url)).unwrap_or_default();
            (source.flow.trust_flow, POINTER.to_vec())
        } else if is_pointer(v)? {
            let source = match (self.end_of)(source_hash, EndName::Hash) {
                Some(end) => end,
                None => {
                    let url = self.source_of_pointer(&key, source_name)?;
                    (self.end_of)(source_hash, EndName::Url(&url)).unwrap_or_default()
                }
            };
            (source.flow.trust_flow, v.to_vec())
        } else {
            let slots = FlowSlots::find(v)?;
            let end = |hash, url| (self.end_of)(hash, EndName::Url(url)).unwrap_or_default();
            let source = if slots.has_source_row() {
                self.end_by_hash(source_hash, source_name)?
            } else {
                end(source_hash, slots.source_url)
            };
            let value = if key.is_url_row(&self.store.hasher) {
                let target = end(target_hash, slots.target_url);
                let to_source_row = !slots.has_source_row()
                    && page.is_some_and(|(pages, at)| pages.holds(at, slots.source_check(v)));
                slots.rewrite(v, &source, &target, to_source_row)
            } else {
                POINTER.to_vec()
            };
            (source.flow.trust_flow, value)
        };
        let link = match page {
            Some((_, at)) => link_of(at as u64, target_hash),
            None => key.link,
        };
        let key = BacklinkKey {
            generation: self.next,
            source_trust_flow,
            link,
            ..key
        };
        self.put(key, value)?;
        self.counted += 1;
        if self.counted == 10_000 {
            self.rows.fetch_add(self.counted, Ordering::Relaxed);
            self.counted = 0;
        }
        Ok(())
    }

    /// The source URL of a pointer row of the serving generation, from the URL row it
    /// names: only when its source's hashes do not settle which URL it is. `source_name`
    /// is the source's name in the row's key.
    fn source_of_pointer(&self, key: &BacklinkKey, source_name: u64) -> Result<String> {
        let s = self.store;
        let at_url = key.url_row(&s.hasher).bytes();
        let record =
            s.db.get_pinned_cf(s.cf(CF_BACKLINKS), at_url)?
                .ok_or_else(url_row_missing)?;
        let slots = FlowSlots::find(&record)?;
        if slots.has_source_row() {
            return self.source_row_url(source_name);
        }
        Ok(slots.source_url.to_string())
    }

    /// The end of a record's source that its source row names (by the URL's hash, or
    /// by the row's URL when the hash does not settle it); `source_name` is the source's
    /// name in the serving generation's keys.
    fn end_by_hash(&self, source_hash: u64, source_name: u64) -> Result<LinkEnd> {
        if let Some(end) = (self.end_of)(source_hash, EndName::Hash) {
            return Ok(end);
        }
        let url = self.source_row_url(source_name)?;
        Ok((self.end_of)(source_hash, EndName::Url(&url)).unwrap_or_default())
    }

    /// The URL of the serving generation's source row of `source_name`.
    fn source_row_url(&self, source_name: u64) -> Result<String> {
        let key = SourceKey {
            generation: self.store.generation(),
            source: source_name,
        };
        let row = self.store.row(&key)?;
        Ok(row.ok_or_else(source_row_missing)?.url)
    }

    /// Writes what is batched and counts the last rows.
    fn finish(&mut self) -> Result<()> {
        self.rows.fetch_add(self.counted, Ordering::Relaxed);
        self.counted = 0;
        self.batches.commit()
    }

    /// Adds a re-keyed row (rows arrive in item order).
    fn put(&mut self, key: BacklinkKey, value: Vec<u8>) -> Result<()> {
        let files = &mut self.files;
        let (item_hash, key) = (key.item_hash, key.bytes());
        if files.item != Some(item_hash) {
            files.write_item()?;
            files.item = Some(item_hash);
            files.overflowed = false;
        }
        if !files.overflowed && files.bytes + value.len() + 64 > self.item_buffer_bytes {
            // The memtable orders this item's rows: move those buffered so far there.
            files.overflowed = true;
            for (k, v) in std::mem::take(&mut files.rows) {
                self.put_row(k, v)?;
            }
            self.files.bytes = 0;
        }
        if self.files.overflowed {
            return self.put_row(key, value);
        }
        self.files.bytes += value.len() + 64;
        self.files.rows.push((key, value));
        Ok(())
    }

    fn put_row(&mut self, key: [u8; 26], value: Vec<u8>) -> Result<()> {
        let cf = self.batches.store.cf(CF_BACKLINKS);
        self.batches.batch.put_cf(cf, key, value);
        self.batches.added()
    }
}

/// Rows of the next generation written through the memtable, [`BATCH_ROWS`] at a time and
/// without the WAL: the synced generation switch is what makes them durable.
struct Batches<'a> {
    store: &'a Store,
    batch: WriteBatch,
    pending: usize,
}

impl<'a> Batches<'a> {
    fn new(store: &'a Store) -> Batches<'a> {
        Batches {
            store,
            batch: WriteBatch::default(),
            pending: 0,
        }
    }

    /// Counts a row put into `batch`, writing the batch when it is full.
    fn added(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.store.db.write_opt(batch, &no_wal())?;
        self.pending = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::Table;
    use crate::page::{CrawlOutcome, OutLink, PageCrawl};
    use crate::StoreOptions;

    /// A store where one page is linked from 300 domains, flowed with source Trust Flow
    /// set by the source's name; `buffer` bounds the rows re-sorted in memory.
    fn flowed(buffer: usize, threads: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        flowed_naming(buffer, threads, true)
    }

    /// [`flowed`], with pointer rows' sources found by their hashes when `by_hash`, else
    /// by the URL read from their URL rows.
    fn flowed_naming(buffer: usize, threads: usize, by_hash: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut w = store.writer().unwrap();
        for i in 0..300 {
            w.apply(&PageCrawl {
                url: format!("http://s{i}.com/"),
                fetched_at: 1_735_689_600,
                ip: None,
                outcome: CrawlOutcome::Html {
                    links: vec![OutLink {
                        target: "http://t.org/".into(),
                        anchor_text: format!("a{i}"),
                        ..Default::default()
                    }],
                },
            })
            .unwrap();
        }
        w.commit().unwrap();
        drop(w);
        let mut update = store.begin_flow_update().unwrap();
        update.item_buffer_bytes = buffer;
        let end_of = |url_hash: u64, name: EndName<'_>| {
            match name {
                EndName::Url(url) => {
                    assert_eq!(url_hash, crate::keys::url_hash(url), "the URL's own hash")
                }
                EndName::Hash if !by_hash => return None,
                EndName::Hash => {}
            }
            let tf = (url_hash % 100) as u8;
            let flow = FlowPair {
                trust_flow: tf,
                citation_flow: tf,
            };
            Some(LinkEnd::new(flow, &[]))
        };
        let report = update.finish(end_of, threads, &mut |_| {}).unwrap();
        // The URL's rows and its host's (the root domain reads its one host's).
        assert_eq!(report.backlink_rows, 600);
        assert!(!scratch_dir(dir.path()).exists(), "scratch files removed");
        let mut rows = Vec::new();
        store
            .read()
            .scan_table(Table::Backlinks, |k, v| rows.push((k.to_vec(), v.to_vec())))
            .unwrap();
        let item = crate::Item::parse("t.org").unwrap();
        let tfs: Vec<u8> = store
            .read()
            .backlinks(
                &item,
                &crate::BacklinkQuery {
                    count: 1000,
                    ..Default::default()
                },
            )
            .unwrap()
            .iter()
            .map(|r| r.source_flow.trust_flow)
            .collect();
        assert_eq!(tfs.len(), 300);
        assert!(
            tfs.windows(2).all(|w| w[0] >= w[1]),
            "by SourceTrustFlow: {tfs:?}"
        );
        rows
    }

    #[test]
    fn an_item_too_big_to_sort_in_memory_gets_the_same_rows_through_batches() {
        let in_files = flowed(ITEM_BUFFER_BYTES, 1);
        assert_eq!(in_files.len(), 600);
        assert_eq!(in_files, flowed(4096, 1));
    }

    /// A pointer row whose source its hash does not settle is re-keyed by the source URL
    /// its URL row holds, to the same row.
    #[test]
    fn pointer_rows_are_re_keyed_alike_by_hash_and_by_url() {
        let by_hash = flowed(ITEM_BUFFER_BYTES, 1);
        assert_eq!(by_hash, flowed_naming(ITEM_BUFFER_BYTES, 1, false));
        let pointers = by_hash.iter().filter(|(_, v)| v == &POINTER).count();
        assert_eq!(pointers, 300, "the host's rows, one byte each");
    }

    /// Threads re-key ranges of item hashes; the ranges cover every hash once.
    #[test]
    fn threads_give_the_same_rows_as_one() {
        let one = flowed(ITEM_BUFFER_BYTES, 1);
        assert_eq!(one, flowed(ITEM_BUFFER_BYTES, 3));
        assert_eq!(one, flowed(4096, 2));
        assert_eq!(hash_range(0, 1), (0, None));
        assert_eq!(hash_range(0, 2), (0, Some(1 << 63)));
        assert_eq!(hash_range(1, 2), (1 << 63, None));
        assert_eq!(hash_range(2, 3).1, None);
    }
}
