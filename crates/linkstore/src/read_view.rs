//! What readers see: an owned, consistent view of a store, and every read path.

use crate::aggregate::{AnchorText, Counters, Ranked, RefDomain, TimelineDelta};
use crate::build::Table;
use crate::error::{Error, Result};
use crate::item::{host_of, root_domain, Item, Level};
use crate::keys::link_hashes;
use crate::keys::{
    generation_item_prefix, member_of_key, member_url_item, top_page_flow, top_page_url,
    DistinctKind, ItemHasher,
};
use crate::metrics::ItemMetrics;
use crate::page::PageState;
use crate::record::{has_source_row, FlowLink, FlowPair, FlowSlots, LinkRecord};
use crate::source_row::{SourceMemo, SourceRow};
use crate::store::{
    cf_handle, prefix_successor, CF_BACKLINKS, CF_DISTINCT, CF_LINKS, CF_SOURCES, CF_TIMELINE,
    CF_TOP_PAGES,
};
use crate::table::{
    internal_record, is_pointer, row_flow_edges, source_row_missing, url_row_missing, AnchorKey,
    BacklinkKey, CountersKey, DistinctKey, MetricsKey, PageKey, RefDomainKey, SourceKey, TableKey,
};
use crate::views::{member_rows, timeline_shares};
use rocksdb::{ColumnFamily, Direction, IteratorMode, ReadOptions, DB};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::xxh3_64;

/// The most rows one backlink read returns (Majestic's `Count` limit).
pub const MAX_BACKLINK_COUNT: usize = 50_000;

type Snapshot<'db> = rocksdb::SnapshotWithThreadMode<'db, DB>;

/// Receives a column family's rows, key and value; an error stops the scan.
type RowVisitor<'v> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'v;

/// Receives an encoded link record, with its source row if it has one.
type RecordVisitor<'v> = dyn FnMut(&[u8], Option<&SourceRow>) -> Result<()> + 'v;

self_cell::self_cell!(
    /// A RocksDB snapshot that owns a handle to its database: it can be shared between
    /// threads and outlive the `&Store` that took it, and the database closes only after
    /// the snapshot is released (a self-cell drops its dependent before its owner).
    pub(crate) struct OwnedSnapshot {
        owner: Arc<DB>,
        #[covariant]
        dependent: Snapshot,
    }
);

impl OwnedSnapshot {
    pub(crate) fn take(db: &Arc<DB>) -> OwnedSnapshot {
        OwnedSnapshot::new(Arc::clone(db), |db| db.snapshot())
    }
}

/// A published snapshot and the summary rows read through it so far. What a snapshot
/// shows never changes, so a row read once is exact for every later view of the same
/// snapshot: item summaries (GetIndexItemInfo, a backlink page's totals) are read from
/// memory after the first time, without RocksDB's index, filter and block lookups. The
/// memo goes with the snapshot when the next publish replaces it.
pub(crate) struct PublishedSnapshot {
    snapshot: OwnedSnapshot,
    /// Unique in the process: what [`ReadView::published_id`] names.
    serial: u64,
    counters: Memo<Counters>,
    metrics: Memo<ItemMetrics>,
    pages: Memo<PageState>,
}

impl PublishedSnapshot {
    pub(crate) fn take(db: &Arc<DB>) -> PublishedSnapshot {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        PublishedSnapshot {
            snapshot: OwnedSnapshot::take(db),
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            counters: Memo::default(),
            metrics: Memo::default(),
            pages: Memo::default(),
        }
    }
}

/// Rows of one table memoised by encoded key (absent rows too), at most [`MEMO_ROWS`]: a
/// full memo starts over, so the rows asked for lately are the ones kept (a historic
/// index may serve one snapshot for months).
struct Memo<V>(Mutex<HashMap<Vec<u8>, Option<V>>>);

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo(Mutex::new(HashMap::new()))
    }
}

/// Rows kept per table and snapshot: a few MB at most.
const MEMO_ROWS: usize = 16_384;

impl<V: Clone> Memo<V> {
    /// The values of `keys`, from memory where kept, the rest from `read` (given the
    /// positions of the keys it must read, returning their values in that order).
    fn get_or_read(
        &self,
        keys: &[Vec<u8>],
        read: impl FnOnce(&[usize]) -> Result<Vec<Option<V>>>,
    ) -> Result<Vec<Option<V>>> {
        let mut out: Vec<Option<V>> = Vec::with_capacity(keys.len());
        let mut missing = Vec::new();
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            for (i, key) in keys.iter().enumerate() {
                match kept.get(key) {
                    Some(v) => out.push(v.clone()),
                    None => {
                        missing.push(i);
                        out.push(None);
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        let read = read(&missing)?;
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for (&i, value) in missing.iter().zip(read) {
            if kept.len() >= MEMO_ROWS {
                kept.clear();
            }
            kept.insert(keys[i].clone(), value.clone());
            out[i] = value;
        }
        Ok(out)
    }
}

/// One consistent read-only view of a store: its database handle, the published snapshot
/// (`None` for a store never published: every committed batch) and the flow generation
/// that snapshot serves, captured together under one lock by [`crate::Store::read`], so
/// a flow build switching generations is seen entirely or not at all. Cheap to clone;
/// hold one for every read of a request so they agree with each other.
#[derive(Clone)]
pub struct ReadView {
    pub(crate) db: Arc<DB>,
    pub(crate) snapshot: Option<Arc<PublishedSnapshot>>,
    pub(crate) generation: u8,
    pub(crate) hasher: ItemHasher,
    /// The store's source rows read lately (they never change: [`Store`](crate::Store)).
    pub(crate) source_rows: Arc<SourceMemo>,
    /// Whether the store is a snapshot, whose hosts may read their URLs' backlink rows
    /// ([`crate::Store::is_snapshot`]): other stores have none to look for.
    pub(crate) snapshot_store: bool,
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
    /// Most backlink rows read, matching or not (`None`: no bound, for exports): the
    /// work a request causes is bounded even when few rows match.
    pub max_scan: Option<usize>,
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
            max_scan: None,
        }
    }
}

/// One of a site's pages, with the flows that rank it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopPage {
    pub url: String,
    pub flow: FlowPair,
}

/// A page of backlinks, and whether the read's budget ended it (more may match).
#[derive(Debug, Clone, Default)]
pub struct BacklinkPage {
    pub rows: Vec<LinkRecord>,
    pub budget_spent: bool,
}

/// A backlink row scanned and held back: its record, or the key of the URL row holding
/// it, with the part of the scan it was read in ([`BacklinkScan`]) and its source's name
/// in the key (which names its source row, if its record has one: [`SourceKey`]).
enum ScannedRow {
    Record(LinkRecord, usize, u64),
    AtUrl([u8; 26], usize, u64),
}

/// What a root domain reads of its linked hosts' views (`docs/format.md`, "Snapshots").
enum HostViews {
    /// Nothing: it keeps its own.
    Own,
    /// Every view of its one linked host.
    Host(String),
    /// The backlink rows of these hosts, merged; its other views are its own.
    BacklinkHosts(Vec<Item>),
}

/// The rows of one item hash that a backlink scan reads: those of `item`'s links. A part
/// at a URL's hash holds records (`records_only`): its pointer rows are a colliding
/// host's or root domain's.
struct ScanPart {
    item: Item,
    hash: u64,
    records_only: bool,
}

/// The backlink rows of one or more item hashes (a root domain's linked hosts, a host's
/// linked URLs), merged in key order after the item hash: SourceTrustFlow descending,
/// then the link hashes, which orders their rows exactly as the item's own would be.
struct BacklinkScan<'a> {
    parts: Vec<rocksdb::DBRawIterator<'a>>,
}

impl<'a> BacklinkScan<'a> {
    /// The part whose row comes next, if any. A part whose iterator stopped on an error
    /// fails the scan, so that the other parts never stand in for its rows.
    fn next_part(&self) -> Result<Option<usize>> {
        let mut best: Option<(usize, &[u8])> = None;
        for (i, it) in self.parts.iter().enumerate() {
            let Some(key) = it.key() else {
                it.status()?;
                continue;
            };
            // A key holds the generation and the item hash (9 bytes), then its order.
            let rest = key.get(9..).unwrap_or_default();
            if best.is_none_or(|(_, b)| rest < b) {
                best = Some((i, rest));
            }
        }
        Ok(best.map(|(i, _)| i))
    }
}

/// Pointer rows a scan resolves in its first multi-get, unless its caller asks for more.
const FIRST_POINTER_CHUNK: usize = 16;
/// The most pointer rows one multi-get resolves (later ones double up to it).
const MAX_POINTER_CHUNK: usize = 1024;

/// Links found and lost on one day for one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelinePoint {
    pub day: u32,
    pub found: i64,
    pub lost: i64,
}

impl ReadView {
    /// Read options pointing into this view's snapshot. Iterators made with them borrow
    /// `self.db`, so they cannot outlive the view that keeps the snapshot alive.
    fn opts(&self) -> ReadOptions {
        let mut opts = ReadOptions::default();
        if let Some(s) = &self.snapshot {
            opts.set_snapshot(s.snapshot.borrow_dependent());
        }
        opts
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        cf_handle(&self.db, name)
    }

    /// The item whose view rows (backlinks, referring domains, anchors, timeline) answer
    /// for `item`: itself, but for a root domain whose backlinks all point to one host,
    /// which keeps none and reads that host's ([`ReadView::linked_host`]). Counters and
    /// metrics stay the domain's own.
    fn views_of<'i>(&self, item: &'i Item) -> Result<Cow<'i, Item>> {
        Ok(match self.host_views(item)? {
            HostViews::Host(host) => Cow::Owned(Item::host(host)),
            HostViews::Own | HostViews::BacklinkHosts(_) => Cow::Borrowed(item),
        })
    }

    /// The one host a root domain reads the views of, when its backlinks all point to
    /// that host (its `LinkedHost` row, `docs/format.md`); `None` for every other item.
    pub fn linked_host(&self, item: &Item) -> Result<Option<String>> {
        Ok(match self.host_views(item)? {
            HostViews::Host(host) => Some(host),
            HostViews::Own | HostViews::BacklinkHosts(_) => None,
        })
    }

    /// What `item` reads of its linked hosts' views: for a root domain, its `LinkedHost`
    /// or `BacklinkHost` rows (kinds 7 and 8 of `distinct`, adjacent in key order).
    fn host_views(&self, item: &Item) -> Result<HostViews> {
        if item.level != Level::RootDomain {
            return Ok(HostViews::Own);
        }
        let mut lower = self.hasher.item_key(item);
        lower.push(DistinctKind::LinkedHost as u8);
        let mut upper = lower.clone();
        *upper.last_mut().expect("pushed above") = DistinctKind::BacklinkHost as u8 + 1;
        let mut opts = self.opts();
        opts.set_iterate_upper_bound(upper);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_DISTINCT), opts);
        it.seek(&lower);
        let mut hosts = Vec::new();
        while let Some(key) = it.key() {
            let key = DistinctKey::parse(key)?;
            match key.kind {
                DistinctKind::LinkedHost => return Ok(HostViews::Host(key.member.to_string())),
                _ => hosts.push(Item::host(key.member.to_string())),
            }
            it.next();
        }
        it.status()?;
        Ok(if hosts.is_empty() {
            HostViews::Own
        } else {
            HostViews::BacklinkHosts(hosts)
        })
    }

    /// The generation of backlink orderings and metrics this view serves.
    pub fn generation(&self) -> u8 {
        self.generation
    }

    /// What this view shows, named for callers that keep what they derive from it: equal
    /// for views of one published snapshot and flow generation, different for any other
    /// view in the process; `None` for a store never published (its views change as
    /// batches commit, so nothing read through them may be kept).
    pub fn published_id(&self) -> Option<(u64, u8)> {
        self.snapshot.as_ref().map(|s| (s.serial, self.generation))
    }

    /// The value of one row in this view.
    fn row<K: TableKey>(&self, key: &K) -> Result<Option<K::Value>> {
        self.db
            .get_pinned_cf_opt(self.cf(K::CF), key.encode(), &self.opts())?
            .map(|v| key.decode_value(&v))
            .transpose()
    }

    /// The values of many rows of one table in one batched read, in the keys' order.
    fn rows<K: TableKey>(&self, keys: &[K]) -> Result<Vec<Option<K::Value>>> {
        self.rows_read(keys, K::decode_value)
    }

    /// Many rows of one table in one batched read, each value read by `read`, in the
    /// keys' order.
    fn rows_read<K: TableKey, T>(
        &self,
        keys: &[K],
        read: impl Fn(&K, &[u8]) -> Result<T>,
    ) -> Result<Vec<Option<T>>> {
        let encoded: Vec<Vec<u8>> = keys.iter().map(TableKey::encode).collect();
        self.db
            .batched_multi_get_cf_opt(self.cf(K::CF), &encoded, false, &self.opts())
            .into_iter()
            .zip(keys)
            .map(|(r, key)| r?.map(|v| read(key, &v)).transpose())
            .collect()
    }

    /// Rows of one table by encoded key, through `memo` of the published snapshot when
    /// the view has one; `key` makes a typed key of an encoded one.
    fn memoized<'k, K: TableKey>(
        &self,
        memo: impl Fn(&PublishedSnapshot) -> &Memo<K::Value>,
        encoded: &'k [Vec<u8>],
        key: impl Fn(&'k [u8]) -> K,
    ) -> Result<Vec<Option<K::Value>>>
    where
        K::Value: Clone,
    {
        if encoded.is_empty() {
            return Ok(Vec::new());
        }
        let read = |at: &[usize]| {
            let keys: Vec<K> = at.iter().map(|&i| key(&encoded[i])).collect();
            self.rows(&keys)
        };
        match &self.snapshot {
            Some(s) => memo(s).get_or_read(encoded, read),
            None => read(&(0..encoded.len()).collect::<Vec<_>>()),
        }
    }

    /// Flow metrics of an item from the last flow build, `None` before any.
    pub fn metrics(&self, item: &Item) -> Result<Option<ItemMetrics>> {
        Ok(self
            .metrics_many(std::slice::from_ref(item))?
            .pop()
            .flatten())
    }

    /// Metrics of many items in one batched read, in request order.
    pub fn metrics_many(&self, items: &[Item]) -> Result<Vec<Option<ItemMetrics>>> {
        let item_keys: Vec<Vec<u8>> = items.iter().map(|i| self.hasher.item_key(i)).collect();
        let generation = self.generation;
        self.memoized(
            |s| &s.metrics,
            &item_keys,
            |item_key| MetricsKey {
                generation,
                item_key,
            },
        )
    }

    /// Counters of an item, or `None` when the index knows nothing of it.
    pub fn counters(&self, item: &Item) -> Result<Option<Counters>> {
        Ok(self
            .counters_many(std::slice::from_ref(item))?
            .pop()
            .flatten())
    }

    /// Counters of many items in one batched read, in request order.
    pub fn counters_many(&self, items: &[Item]) -> Result<Vec<Option<Counters>>> {
        let item_keys: Vec<Vec<u8>> = items.iter().map(|i| self.hasher.item_key(i)).collect();
        self.memoized(|s| &s.counters, &item_keys, CountersKey)
    }

    /// Whole-index totals (links, pages crawled, URLs known, dates).
    pub fn index_counters(&self) -> Result<Counters> {
        Ok(self.counters(&Item::index())?.unwrap_or_default())
    }

    /// State of a crawled page.
    pub fn page(&self, url: &str) -> Result<Option<PageState>> {
        // Keyed by the URL's bytes: the memo needs a key it can keep.
        let url_bytes = [url.as_bytes().to_vec()];
        let pages = self.memoized(
            |s| &s.pages,
            &url_bytes,
            |bytes| PageKey(std::str::from_utf8(bytes).expect("made from a str")),
        )?;
        Ok(pages.into_iter().next().flatten())
    }

    /// Backlinks of an item by SourceTrustFlow descending (deterministic tie-break), with
    /// the query's filters and caps. Every row is checked against the item, so a hash
    /// collision can never return another item's links.
    pub fn backlinks(&self, item: &Item, q: &BacklinkQuery) -> Result<Vec<LinkRecord>> {
        Ok(self.backlink_page(item, q)?.rows)
    }

    /// [`ReadView::backlinks`], saying whether `q.max_scan` cut the read short.
    pub fn backlink_page(&self, item: &Item, q: &BacklinkQuery) -> Result<BacklinkPage> {
        let count = q.count.min(MAX_BACKLINK_COUNT);
        let mut rows = Vec::with_capacity(count.min(1024));
        if count == 0 {
            return Ok(BacklinkPage {
                rows,
                budget_spent: false,
            });
        }
        // Without filters the first rows the read resolves are the ones it returns.
        let first_chunk = q.from.saturating_add(count);
        let budget_spent = self.visit_backlinks(item, q, first_chunk, |rec| {
            rows.push(rec);
            rows.len() < count
        })?;
        Ok(BacklinkPage { rows, budget_spent })
    }

    /// Visits the backlinks [`ReadView::backlinks`] would return, without its row limit
    /// (`q.count` is ignored), until `visit` returns false: exports stream through this.
    /// True when `q.max_scan` rows were read before the item's rows or the visitor ended.
    pub fn for_each_backlink(
        &self,
        item: &Item,
        q: &BacklinkQuery,
        visit: impl FnMut(LinkRecord) -> bool,
    ) -> Result<bool> {
        self.visit_backlinks(item, q, FIRST_POINTER_CHUNK, visit)
    }

    /// [`ReadView::for_each_backlink`], resolving `first_chunk` pointer rows at first.
    fn visit_backlinks(
        &self,
        item: &Item,
        q: &BacklinkQuery,
        first_chunk: usize,
        mut visit: impl FnMut(LinkRecord) -> bool,
    ) -> Result<bool> {
        let ref_domain = q.ref_domain.as_deref().map(str::to_ascii_lowercase);
        // Links kept per referring domain and per source URL, by hash: 16 bytes each.
        let mut per_domain: HashMap<u64, usize> = HashMap::new();
        let mut per_source: HashMap<u64, usize> = HashMap::new();
        let mut skipped = 0usize;
        let (mut read, mut budget_spent) = (0usize, false);
        self.scan_backlinks_from(item, first_chunk, |rec| {
            if q.max_scan.is_some_and(|max| read >= max) {
                budget_spent = true;
                return false;
            }
            read += 1;
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
                let n = per_domain.entry(xxh3_64(domain.as_bytes())).or_default();
                if *n >= max {
                    return true;
                }
                *n += 1;
            }
            if let Some(max) = q.max_per_source_url {
                let n = per_source
                    .entry(xxh3_64(rec.source_url.as_bytes()))
                    .or_default();
                if *n >= max {
                    return true;
                }
                *n += 1;
            }
            if skipped < q.from {
                skipped += 1;
                return true;
            }
            visit(rec)
        })?;
        Ok(budget_spent)
    }

    /// Visits the item's backlinks in key order until `visit` returns false. A host's or
    /// root domain's rows point to their target URLs' rows, which are read a chunk at a
    /// time in one multi-get; chunks grow, so a short read resolves few more rows than
    /// it returns.
    pub fn scan_backlinks(&self, item: &Item, visit: impl FnMut(LinkRecord) -> bool) -> Result<()> {
        self.scan_backlinks_from(item, FIRST_POINTER_CHUNK, visit)
    }

    /// [`ReadView::scan_backlinks`], resolving `first_chunk` pointer rows in its first
    /// multi-get (a caller that knows how many rows it wants).
    fn scan_backlinks_from(
        &self,
        item: &Item,
        first_chunk: usize,
        mut visit: impl FnMut(LinkRecord) -> bool,
    ) -> Result<()> {
        let parts = self.scan_parts(item)?;
        let mut scan = BacklinkScan {
            parts: parts
                .iter()
                .map(|part| self.backlink_rows(part.hash))
                .collect(),
        };
        // Rows read but not visited, in key order: held back behind a pointer not yet
        // resolved.
        let mut held: Vec<ScannedRow> = Vec::new();
        let mut chunk = first_chunk.clamp(FIRST_POINTER_CHUNK, MAX_POINTER_CHUNK);
        while let Some(part) = scan.next_part()? {
            let it = &mut scan.parts[part];
            let (Some(key), Some(value)) = (it.key(), it.value()) else {
                break;
            };
            let ScanPart {
                item, records_only, ..
            } = &parts[part];
            let key = BacklinkKey::parse(key)?;
            let source_name = link_hashes(&key.link).0;
            match is_pointer(value)? {
                false => {
                    let mut rec = LinkRecord::decode(value)?;
                    if rec.has_source_row() {
                        if let Some(source) = self.source_rows.get(self.generation, source_name) {
                            rec.set_source(&source);
                        }
                    }
                    // A record is visited as read unless rows before it wait, or its
                    // source row does (read with others' in one multi-get).
                    if held.is_empty() && !rec.has_source_row() {
                        if item.contains_url(&rec.target_url) && !visit(rec) {
                            return Ok(());
                        }
                    } else {
                        held.push(ScannedRow::Record(rec, part, source_name));
                    }
                }
                // A URL's own rows hold their records: a pointer under its hash is a
                // colliding host's or root domain's.
                true if *records_only => {}
                true => {
                    let at_url = key.url_row(&self.hasher).bytes();
                    held.push(ScannedRow::AtUrl(at_url, part, source_name));
                }
            }
            it.next();
            if held.len() >= chunk {
                if !self.visit_held(&parts, &mut held, &mut visit)? {
                    return Ok(());
                }
                chunk = (chunk * 2).min(MAX_POINTER_CHUNK);
            }
        }
        self.visit_held(&parts, &mut held, &mut visit)?;
        Ok(())
    }

    /// The item hashes whose rows, merged, are `item`'s backlink rows: its own, or those
    /// of the hosts a root domain reads, each host's own or those of the URLs it reads
    /// (`distinct` kinds 7, 8 and 9, `docs/format.md`).
    fn scan_parts(&self, item: &Item) -> Result<Vec<ScanPart>> {
        let items = match self.host_views(item)? {
            HostViews::Own => vec![item.clone()],
            HostViews::Host(host) => vec![Item::host(host)],
            HostViews::BacklinkHosts(hosts) => hosts,
        };
        let mut parts = Vec::with_capacity(items.len());
        for item in items {
            let urls = match item.level {
                Level::SubDomain if self.snapshot_store => self.backlink_urls(&item)?,
                _ => Vec::new(),
            };
            if urls.is_empty() {
                parts.push(ScanPart {
                    hash: self.hasher.hash(item.level, &item.name),
                    records_only: item.level == Level::Url,
                    item,
                });
                continue;
            }
            for hash in urls {
                parts.push(ScanPart {
                    item: item.clone(),
                    hash,
                    records_only: true,
                });
            }
        }
        Ok(parts)
    }

    /// The item hashes of the URLs whose backlink rows a snapshot's host reads instead
    /// of keeping its own (its `BacklinkUrl` rows); empty for every other host.
    fn backlink_urls(&self, host: &Item) -> Result<Vec<u64>> {
        let mut prefix = self.hasher.item_key(host);
        prefix.push(DistinctKind::BacklinkUrl as u8);
        let mut it = self.prefix_iterator(CF_DISTINCT, &prefix);
        let mut urls = Vec::new();
        while let Some(key) = it.key() {
            let key = DistinctKey::parse(key)?;
            let url = member_url_item(key.member)
                .ok_or_else(|| Error::corrupt(CF_DISTINCT, "a linked URL is not an item hash"))?;
            urls.push(url);
            it.next();
        }
        it.status()?;
        Ok(urls)
    }

    /// An iterator over the backlink rows under item hash `hash` in this view's
    /// generation, at the first.
    fn backlink_rows(&self, hash: u64) -> rocksdb::DBRawIterator<'_> {
        self.prefix_iterator(CF_BACKLINKS, &generation_item_prefix(self.generation, hash))
    }

    /// Resolves the held pointers in one multi-get, and the source rows their records
    /// leave their sources to in another, and visits the held rows in order; false when
    /// `visit` ended the scan. A row counts for the part it was read in.
    fn visit_held(
        &self,
        parts: &[ScanPart],
        held: &mut Vec<ScannedRow>,
        visit: &mut impl FnMut(LinkRecord) -> bool,
    ) -> Result<bool> {
        let keys: Vec<&[u8]> = held
            .iter()
            .filter_map(|row| match row {
                ScannedRow::AtUrl(key, ..) => Some(key.as_slice()),
                ScannedRow::Record(..) => None,
            })
            .collect();
        let cf = self.cf(CF_BACKLINKS);
        let mut records = self
            .db
            .batched_multi_get_cf_opt(cf, keys, false, &self.opts())
            .into_iter();
        let mut rows = Vec::with_capacity(held.len());
        for row in held.drain(..) {
            rows.push(match row {
                ScannedRow::Record(rec, part, source) => (rec, part, source),
                ScannedRow::AtUrl(_, part, source) => match records.next().transpose()?.flatten() {
                    Some(value) => (LinkRecord::decode(&value)?, part, source),
                    None => return Err(url_row_missing()),
                },
            });
        }
        self.set_sources(&mut rows)?;
        for (rec, part, _) in rows {
            if parts[part].item.contains_url(&rec.target_url) && !visit(rec) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Gives the records with a source row (`rows`: record, part, source name) their
    /// source fields: those read lately from memory, the others in one multi-get.
    fn set_sources(&self, rows: &mut [(LinkRecord, usize, u64)]) -> Result<()> {
        let names: Vec<u64> = rows
            .iter()
            .filter(|(rec, ..)| rec.has_source_row())
            .map(|&(_, _, name)| name)
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        let generation = self.generation;
        let sources = self
            .source_rows
            .get_or_read(generation, &names, |missing| {
                let key = |&source| SourceKey { generation, source };
                self.rows(&missing.iter().map(key).collect::<Vec<_>>())
            })?;
        let waiting = rows.iter_mut().filter(|(rec, ..)| rec.has_source_row());
        for ((rec, ..), source) in waiting.zip(&sources) {
            rec.set_source(source);
        }
        Ok(())
    }

    /// A site's (subdomain's or root domain's) pages by Trust Flow, then Citation Flow, as
    /// the serving flow build ranked them: rows `from..from + count`, and how many pages
    /// the site has when at most `count_limit` rows are (`None` beyond). Each row is
    /// checked against the site, so a hash collision never lists another site's page.
    pub fn top_pages(
        &self,
        site: &Item,
        from: usize,
        count: usize,
        count_limit: usize,
    ) -> Result<(Vec<TopPage>, Option<usize>)> {
        let hash = self.hasher.hash(site.level, &site.name);
        let lower = generation_item_prefix(self.generation, hash);
        let mut opts = self.opts();
        if let Some(upper) = prefix_successor(&lower) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_TOP_PAGES), opts);
        it.seek(lower);
        let (mut pages, mut seen) = (Vec::new(), 0usize);
        while let Some(key) = it.key() {
            let url = top_page_url(key)?;
            if site.contains_url(url) {
                if seen >= from && pages.len() < count {
                    pages.push(TopPage {
                        url: url.to_string(),
                        flow: top_page_flow(key),
                    });
                }
                seen += 1;
                if seen > count_limit && pages.len() == count {
                    return Ok((pages, None));
                }
            }
            it.next();
        }
        it.status()?;
        Ok((pages, Some(seen)))
    }

    /// Members of the whole index's `kind` distinct rows that start with `prefix`, with
    /// their reference counts, in member order; at most `limit`.
    fn index_members(
        &self,
        kind: DistinctKind,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, i64)>> {
        let mut lower = self.hasher.item_key(&Item::index());
        let member_at = lower.len() + 1;
        lower.push(kind as u8);
        lower.extend_from_slice(prefix.as_bytes());
        let mut opts = self.opts();
        if let Some(upper) = prefix_successor(&lower) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_DISTINCT), opts);
        it.seek(&lower);
        let mut out = Vec::new();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if out.len() == limit {
                break;
            }
            let member = key
                .get(member_at..key.len().saturating_sub(1))
                .and_then(|m| std::str::from_utf8(m).ok())
                .ok_or_else(|| Error::corrupt(CF_DISTINCT, "member is not UTF-8"))?;
            let count = crate::codec::Reader::new(value, CF_DISTINCT).ivarint()?;
            out.push((member.to_string(), count));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The addresses a root domain's crawled pages were served from, each with the live
    /// links of those pages, most first.
    pub fn domain_addresses(&self, domain: &str) -> Result<Vec<(String, i64)>> {
        let mut ips: Vec<(String, i64)> = self
            .index_members(DistinctKind::DomainIp, &format!("{domain}\u{1}"), 1_000)?
            .into_iter()
            .map(|(m, n)| (m[domain.len() + 1..].to_string(), n))
            .collect();
        ips.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(ips)
    }

    /// Root domains served from addresses starting with `prefix` (an address followed by
    /// `\x01` for one address; `a.b.c.` for an IPv4 /24; the first three groups and a
    /// colon of [`crate::views::ip_member`]'s IPv6 form for a /48): `(domain, address,
    /// live links)`, at most `limit` rows read.
    pub fn hosted_domains(&self, prefix: &str, limit: usize) -> Result<Vec<(String, String, i64)>> {
        Ok(self
            .index_members(DistinctKind::IpDomain, prefix, limit)?
            .into_iter()
            .filter_map(|(m, n)| {
                let (ip, domain) = m.split_once('\u{1}')?;
                Some((domain.to_string(), ip.to_string(), n))
            })
            .collect())
    }

    /// Referring domains of an item, most backlinks first.
    pub fn ref_domains(&self, item: &Item, from: usize, count: usize) -> Result<Vec<RefDomain>> {
        self.ranked(item, from, count)
    }

    /// One referring domain's aggregate for an item.
    pub fn ref_domain(&self, item: &Item, domain: &str) -> Result<Option<RefDomain>> {
        Ok(self.ref_domains_many(item, &[domain])?.remove(0))
    }

    /// Many referring domains' aggregates for one item, in one batched read.
    pub fn ref_domains_many(
        &self,
        item: &Item,
        domains: &[&str],
    ) -> Result<Vec<Option<RefDomain>>> {
        let item = &*self.views_of(item)?;
        let item_key = self.hasher.item_key(item);
        let keys: Vec<RefDomainKey<'_>> = domains
            .iter()
            .map(|domain| RefDomainKey {
                item_key: &item_key,
                domain,
            })
            .collect();
        // Readers take the counts; a row's anchor texts are the writers'.
        let found = self.rows_read(&keys, |key, value| RefDomain::decode(key.domain, value))?;
        if found.iter().any(Option::is_some) {
            return Ok(found);
        }
        match self.small_item_rows::<RefDomain>(item)? {
            None => Ok(found),
            Some(rows) => Ok(domains
                .iter()
                .map(|&d| rows.iter().find(|r| r.domain == d).cloned())
                .collect()),
        }
    }

    /// Anchor texts of an item, most referring domains first.
    pub fn anchors(&self, item: &Item, from: usize, count: usize) -> Result<Vec<AnchorText>> {
        self.ranked(item, from, count)
    }

    /// One anchor text's aggregate for an item (anchors are stored lower-cased).
    pub fn anchor(&self, item: &Item, text: &str) -> Result<Option<AnchorText>> {
        let item = &*self.views_of(item)?;
        let item_key = self.hasher.item_key(item);
        let found = self.row(&AnchorKey {
            item_key: &item_key,
            text,
        })?;
        if found.is_some() {
            return Ok(found);
        }
        let rows = self.small_item_rows::<AnchorText>(item)?;
        Ok(rows.and_then(|rows| rows.into_iter().find(|r| r.text == text)))
    }

    /// The rows of `T` of an item that keeps none in the store (at most
    /// [`MEMBER_ROWS_ABOVE`](crate::small_item::MEMBER_ROWS_ABOVE) backlinks), worked out
    /// from its backlinks in no particular order; `None` for the index and for items that
    /// keep rows (found by the first row of its own table, which every such item has).
    fn small_item_rows<T: Ranked>(&self, item: &Item) -> Result<Option<Vec<T>>> {
        if item.level == Level::Index {
            return Ok(None);
        }
        let prefix = self.hasher.item_key(item);
        let it = self.prefix_iterator(T::TABLE, &prefix);
        if it.valid() {
            return Ok(None);
        }
        it.status()?;
        let mut records = Vec::new();
        // All its pointers (at most the bound) resolved in one multi-get.
        let all = crate::small_item::MEMBER_ROWS_ABOVE as usize;
        self.scan_backlinks_from(item, all, |rec| {
            records.push(rec);
            true
        })?;
        Ok(Some(T::pick(member_rows(&records))))
    }

    /// Visits an item's rows of `T` in ranked order until `visit` returns false: its
    /// ranked copies, or, for an item too small to have them
    /// ([`crate::aggregate::RANKED_COPIES_ABOVE`]), its few rows sorted here. A snapshot
    /// keeps only the first copies of a large item ([`Ranked::SNAPSHOT_KEEPS`]): the rows
    /// past them are its table's (at most `SNAPSHOT_SORTED_ROWS_MAX`), sorted here.
    pub(crate) fn scan_ranked<T: Ranked>(
        &self,
        item: &Item,
        mut visit: impl FnMut(T) -> bool,
    ) -> Result<()> {
        let item = &*self.views_of(item)?;
        let prefix = self.hasher.item_key(item);
        let mut it = self.prefix_iterator(T::RANKED_TABLE, &prefix);
        if it.valid() {
            let kept = T::SNAPSHOT_KEEPS.filter(|_| self.snapshot_store);
            let mut copies = 0;
            let mut last = None;
            while let Some((key, value)) = it.item() {
                let member = member_of_key(key, prefix.len(), T::RANK_WORDS, T::RANKED_TABLE)?;
                let row = T::decode(member, value)?;
                copies += 1;
                if Some(copies) == kept {
                    last = Some(row.clone());
                }
                if !visit(row) {
                    return Ok(());
                }
                it.next();
            }
            it.status()?;
            // An item with more copies kept every one (`SNAPSHOT_SORTED_ROWS_MAX`).
            if let Some(last) = last.filter(|_| Some(copies) == kept) {
                let mut rows = self.member_rows::<T>(&prefix)?;
                rows.retain(|r| r.ranked_order(&last).is_gt());
                visit_in_rank_order(rows, visit);
            }
            return Ok(());
        }
        it.status()?;
        let mut rows = self.member_rows::<T>(&prefix)?;
        if rows.is_empty() {
            rows = self.small_item_rows(item)?.unwrap_or_default();
        }
        visit_in_rank_order(rows, visit);
        Ok(())
    }

    /// Every row of `T` under `prefix` (an item key), in member order.
    fn member_rows<T: Ranked>(&self, prefix: &[u8]) -> Result<Vec<T>> {
        let mut rows = Vec::new();
        let mut it = self.prefix_iterator(T::TABLE, prefix);
        while let Some((key, value)) = it.item() {
            rows.push(T::decode(
                member_of_key(key, prefix.len(), 0, T::TABLE)?,
                value,
            )?);
            it.next();
        }
        it.status()?;
        Ok(rows)
    }

    /// An iterator over the rows of `cf` whose keys start with `prefix`, at the first.
    fn prefix_iterator(&self, cf: &str, prefix: &[u8]) -> rocksdb::DBRawIterator<'_> {
        let mut opts = self.opts();
        if let Some(upper) = prefix_successor(prefix) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(cf), opts);
        it.seek(prefix);
        it
    }

    /// Rows `from..from + count` of an item's `T` rows in ranked order.
    fn ranked<T: Ranked>(&self, item: &Item, from: usize, count: usize) -> Result<Vec<T>> {
        let mut out = Vec::new();
        let mut skipped = 0;
        if count > 0 {
            self.scan_ranked(item, |row: T| {
                if skipped < from {
                    skipped += 1;
                } else {
                    out.push(row);
                }
                out.len() < count
            })?;
        }
        Ok(out)
    }

    /// Links found and lost per day in `[from_day, to_day]`, days with no change omitted.
    pub fn timeline(&self, item: &Item, from_day: u32, to_day: u32) -> Result<Vec<TimelinePoint>> {
        let item = &*self.views_of(item)?;
        let prefix = self.hasher.item_key(item);
        let start = crate::keys::timeline_key(&prefix, from_day);
        let it = self.db.iterator_cf_opt(
            self.cf(CF_TIMELINE),
            self.opts(),
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
        // Nothing in range: a snapshot's small item keeps no rows at all, and its records
        // give its timeline.
        if out.is_empty() && self.snapshot_store && item.level != Level::Index {
            let it = self.prefix_iterator(CF_TIMELINE, &prefix);
            if !it.valid() {
                it.status()?;
                return self.small_item_timeline(item, from_day, to_day);
            }
        }
        Ok(out)
    }

    /// The timeline of a snapshot's item that keeps no `timeline` rows (at most
    /// [`MEMBER_ROWS_ABOVE`](crate::small_item::MEMBER_ROWS_ABOVE) backlinks), worked
    /// out from its backlinks as the build sums them.
    fn small_item_timeline(
        &self,
        item: &Item,
        from_day: u32,
        to_day: u32,
    ) -> Result<Vec<TimelinePoint>> {
        if from_day > to_day {
            return Ok(Vec::new());
        }
        let mut days: std::collections::BTreeMap<u32, TimelineDelta> = Default::default();
        let all = crate::small_item::MEMBER_ROWS_ABOVE as usize;
        self.scan_backlinks_from(item, all, |rec| {
            for (day, delta) in timeline_shares(&rec.backlink_facts().state, 1) {
                days.entry(day).or_default().fold(&delta);
            }
            true
        })?;
        let in_range = days.range(from_day..=to_day);
        let changed = in_range.filter(|(_, d)| d.found != 0 || d.lost != 0);
        Ok(changed
            .map(|(&day, d)| TimelinePoint {
                day,
                found: d.found,
                lost: d.lost,
            })
            .collect())
    }

    /// Visits every row of a table in key order (as published): for tools and tests
    /// that compare stores row by row.
    pub fn scan_table(
        &self,
        table: crate::build::Table,
        visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        self.scan_column_family(table.cf_name(), visit)
    }

    /// Visits every row of the column family `name` (one of [`ALL_CFS`](crate::ALL_CFS)),
    /// for comparing whole stores.
    pub fn scan_column_family(
        &self,
        name: &str,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        self.scan_cf(name, &mut |k, v| {
            visit(k, v);
            Ok(())
        })
    }

    /// Visits every stored link record (internal and external, live and deleted): the
    /// internal ones by source, then the external ones by target. A snapshot keeps no
    /// record of its internal links (only the targets of those that carry flow).
    pub fn scan_links(&self, mut visit: impl FnMut(&LinkRecord)) -> Result<()> {
        let visit = &mut |record: &[u8], source: Option<&SourceRow>| {
            let mut rec = LinkRecord::decode(record)?;
            if let Some(source) = source {
                rec.set_source(source);
            }
            visit(&rec);
            Ok(())
        };
        self.scan_cf(CF_LINKS, &mut |_, value| match internal_record(value) {
            Some(record) => visit(record, None),
            None => Ok(()),
        })?;
        self.scan_external_records(visit)
    }

    /// Visits what a flow build's graph takes from every link ([`FlowLink`]), without
    /// decoding the rest of its record: the internal links that carry flow, then every
    /// external link.
    pub fn scan_flow_links(&self, mut visit: impl FnMut(FlowLink<'_>)) -> Result<()> {
        // A snapshot's internal edges are its pages' flow targets.
        let table = match self.snapshot_store {
            true => Table::Pages,
            false => Table::Links,
        };
        self.scan_cf(table.cf_name(), &mut |key, value| {
            row_flow_edges(table, key, value, |source, target| {
                visit(FlowLink::Edge { source, target });
                Ok::<_, crate::Error>(())
            })
        })?;
        self.scan_external_records(&mut |record, source| {
            let slots = FlowSlots::find(record)?;
            visit(match source {
                Some(source) => slots.flow_link(&source.url),
                None => slots.flow_link(slots.source_url),
            });
            Ok(())
        })
    }

    /// Visits every external link's record once, from its `backlinks` URL row in this
    /// view's generation (its `links` row only says it is there), with its source row
    /// when it has one.
    fn scan_external_records(&self, visit: &mut RecordVisitor<'_>) -> Result<()> {
        // Read whole when a record first needs them: a snapshot's source rows, about 150
        // bytes a crawled page with external links, held while the links are scanned.
        let mut sources: Option<Vec<(u64, SourceRow)>> = None;
        self.scan_cf_prefix(CF_BACKLINKS, &[self.generation], &mut |key, value| {
            if is_pointer(value)? {
                return Ok(());
            }
            if !has_source_row(value) {
                return visit(value, None);
            }
            let sources = match &mut sources {
                Some(sources) => sources,
                None => sources.insert(self.all_source_rows()?),
            };
            let source_name = link_hashes(&BacklinkKey::parse(key)?.link).0;
            let at = sources
                .binary_search_by_key(&source_name, |&(name, _)| name)
                .map_err(|_| source_row_missing())?;
            visit(value, Some(&sources[at].1))
        })
    }

    /// Every source row, by its page's name (ascending, as stored).
    fn all_source_rows(&self) -> Result<Vec<(u64, SourceRow)>> {
        let mut rows = Vec::new();
        self.each_source_row(|name, row| {
            rows.push((name, row));
            Ok(())
        })?;
        Ok(rows)
    }

    /// Visits every source row of this view's generation with the name backlink keys give
    /// its page (its URL's hash, or its number: [`SourceKey`]), in order.
    pub(crate) fn each_source_row(
        &self,
        mut visit: impl FnMut(u64, SourceRow) -> Result<()>,
    ) -> Result<()> {
        self.scan_cf_prefix(CF_SOURCES, &[self.generation], &mut |key, value| {
            visit(SourceKey::parse(key)?.source, SourceRow::decode(value)?)
        })
    }

    fn scan_cf(&self, cf: &str, visit: &mut RowVisitor<'_>) -> Result<()> {
        self.scan_cf_prefix(cf, &[], visit)
    }

    /// Visits the rows of a column family whose keys start with `prefix`.
    fn scan_cf_prefix(&self, cf: &str, prefix: &[u8], visit: &mut RowVisitor<'_>) -> Result<()> {
        let mut opts = self.opts();
        // A whole table is read once: caching its blocks would only evict what point
        // reads use.
        opts.fill_cache(false);
        if let Some(upper) = prefix_successor(prefix) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(cf), opts);
        it.seek(prefix);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            visit(k, v)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }
}

/// Sorts `rows` in ranked order and visits them until `visit` returns false.
fn visit_in_rank_order<T: Ranked>(mut rows: Vec<T>, mut visit: impl FnMut(T) -> bool) {
    rows.sort_unstable_by(T::ranked_order);
    for row in rows {
        if !visit(row) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::link_key;
    use crate::{Store, StoreOptions};
    use std::cell::Cell;

    /// A pointer row whose URL row is gone is corruption, said as such, not a row lost.
    #[test]
    fn a_pointer_row_without_its_url_row_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let (source, target) = ("http://a.com/", "http://www.b.org/x");
        let key = BacklinkKey {
            generation: store.generation(),
            item_hash: store.hasher.hash(Level::RootDomain, "b.org"),
            source_trust_flow: 0,
            link: link_key(source, target),
        };
        store
            .db
            .put_cf(store.cf(CF_BACKLINKS), key.bytes(), crate::table::POINTER)
            .unwrap();
        let err = store
            .read()
            .backlinks(&Item::parse("b.org").unwrap(), &BacklinkQuery::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("URL row is missing"), "{err}");
        assert!(err.contains("backlinks"), "names the table: {err}");
    }

    #[test]
    fn a_memo_reads_each_row_once_and_starts_over_when_full() {
        let memo: Memo<u64> = Memo::default();
        let reads = Cell::new(0usize);
        let get = |keys: &[Vec<u8>]| {
            memo.get_or_read(keys, |at| {
                reads.set(reads.get() + at.len());
                Ok(at.iter().map(|&i| Some(keys[i][0] as u64)).collect())
            })
            .unwrap()
        };
        let key = |n: usize| n.to_be_bytes().to_vec();
        assert_eq!(get(&[key(1), key(2)]), vec![Some(0), Some(0)]);
        assert_eq!(get(&[key(2), key(3)]).len(), 2);
        assert_eq!(reads.get(), 3, "the second read of key 2 came from memory");
        for n in 10..10 + MEMO_ROWS {
            get(&[key(n)]);
        }
        assert!(memo.0.lock().unwrap().len() <= MEMO_ROWS);
        let before = reads.get();
        get(&[key(9 + MEMO_ROWS)]);
        assert_eq!(
            reads.get(),
            before,
            "the latest row is kept after starting over"
        );
    }
}
