//! Applying page crawls to the store (product brief §1.11), in atomic batches.
//!
//! A crawl of page P at time t replaces P's link set: new links get FirstIndexedDate t,
//! links seen again get LastSeenDate t and a crawl-history day, links P no longer has are
//! marked deleted. A crawl at the time already applied is a no-op (re-ingest is
//! idempotent); an older crawl only adds history days and earlier discovery dates to
//! links it shows, and never revives a deleted link or deletes a live one.
//!
//! Every aggregate is the sum of per-link contributions, so a record change is applied as
//! "remove the old record's contribution, add the new one's". Changes are buffered in an
//! overlay that later pages of the same batch read through, and written in one RocksDB
//! write batch by [`Writer::commit`]: a crash loses at most the uncommitted batch, never
//! leaves half of one.

use crate::aggregate::{
    accumulate, has_ranked_copies, AnchorText, Counters, Extremes, Ranked, RefDomain, TimelineDelta,
};
use crate::build::Table;
use crate::crawl::{
    crawl_order, crawl_status, found_links, newer_crawl, next_state, older_crawl, seen_before,
    CrawlOrder, UrlMetrics,
};
use crate::error::Result;
use crate::item::{url_levels, Item};
use crate::keys::{
    distinct_key, link_key, member_of_key, DistinctKind, ItemHasher, EXPIRY_LINK, EXPIRY_PAGE,
};
use crate::page::{day_of, OutLink, PageCrawl, PageState};
use crate::record::{FlowPair, LinkRecord};
use crate::store::*;
use crate::table::{
    item_key_len, AnchorKey, BacklinkKey, BacklinkRow, BuiltKey, Count, CountersKey, DistinctKey,
    Empty, EncodedRecord, ExpiryLinkKey, ExpiryPageKey, LinkKey, LinkRow, MergedKey, PageKey,
    RankedAnchorKey, RankedRefDomainKey, RefDomainKey, TableKey, TimelineKey, UrlRefKey,
};
use crate::views::{
    contributions, distinct_counters, domain_of_url, out_domain_counters, page_out_domains,
    pair_member, ref_domain_counters, split_anchor_member, subnet_of_member, Contribution,
};
use rocksdb::{ReadOptions, WriteBatch};
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

mod linked_hosts;
mod small_items;
mod write_threads;
use linked_hosts::DomainClass;
pub(crate) use linked_hosts::DomainClasses;
use small_items::SizeClass;
use write_threads::{Helpers, Pending, WriteThreads};

// Keys come from crawled pages: a randomly seeded hash, but much cheaper than SipHash,
// which took 7% of the writer thread.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// One buffered write.
enum Op {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

/// Writes collected in any order and handed to RocksDB sorted by column family and key:
/// the memtable skip list inserts a sorted run several times faster than random keys.
#[derive(Default)]
struct SortedBatch {
    ops: Vec<(Table, Vec<u8>, Op)>,
    /// `[from, to)` key ranges deleted after every op above.
    range_deletes: Vec<(Table, Vec<u8>, Vec<u8>)>,
    /// Bytes of every key and value, to size the RocksDB batch once.
    bytes: usize,
}

impl SortedBatch {
    fn push(&mut self, table: Table, key: Vec<u8>, op: Op) {
        self.bytes += key.len()
            + match &op {
                Op::Put(v) | Op::Merge(v) => v.len(),
                Op::Delete => 0,
            };
        self.ops.push((table, key, op));
    }

    fn put<K: BuiltKey>(&mut self, key: &K, value: &K::Value) {
        self.push(K::TABLE, key.encode(), Op::Put(K::encode_value(value)));
    }

    fn delete<K: BuiltKey>(&mut self, key: &K) {
        self.push(K::TABLE, key.encode(), Op::Delete);
    }

    fn merge<K: MergedKey>(&mut self, key: &K, operand: &K::Value) {
        self.push(K::TABLE, key.encode(), Op::Merge(K::encode_value(operand)));
    }

    /// Adds `other`'s writes after this batch's.
    fn append(&mut self, other: SortedBatch) {
        self.ops.extend(other.ops);
        self.range_deletes.extend(other.range_deletes);
        self.bytes += other.bytes;
    }

    /// Deletes the keys of `table` in `[from, to)`, after every other write of the batch.
    fn delete_range(&mut self, table: Table, from: Vec<u8>, to: Vec<u8>) {
        self.bytes += from.len() + to.len();
        self.range_deletes.push((table, from, to));
    }

    /// Sorts by table and key (later writes of a key staying later) and keeps only the
    /// last put or delete of each key; merges of one key are all kept, in order.
    fn into_write_batch(self, db: &rocksdb::DB) -> WriteBatch {
        let order = self.order();
        // Per entry: a tag, a column family id and two lengths, each at most 5 bytes.
        let mut batch = WriteBatch::with_capacity_bytes(self.bytes + order.len() * 16);
        // Ops come table by table: a handle is looked up (by name) once per table.
        let mut cf: Option<(Table, &rocksdb::ColumnFamily)> = None;
        for (i, &at) in order.iter().enumerate() {
            let (table, key, op) = &self.ops[at as usize];
            let superseded = order.get(i + 1).is_some_and(|&next| {
                let (ntable, nkey, nop) = &self.ops[next as usize];
                ntable == table && nkey == key && !matches!(nop, Op::Merge(_))
            });
            let cf = match cf {
                Some((t, handle)) if t == *table => handle,
                _ => {
                    let handle = cf_handle(db, table.cf_name());
                    cf = Some((*table, handle));
                    handle
                }
            };
            match op {
                Op::Put(_) | Op::Delete if superseded => {}
                Op::Put(v) => batch.put_cf(cf, key, v),
                Op::Delete => batch.delete_cf(cf, key),
                Op::Merge(v) => batch.merge_cf(cf, key, v),
            }
        }
        for (table, from, to) in &self.range_deletes {
            batch.delete_range_cf(cf_handle(db, table.cf_name()), from, to);
        }
        batch
    }

    /// Positions of the ops in (table, key, position) order. Sorting the ops themselves
    /// moved 72-byte entries and compared keys behind pointers (7% of an incremental
    /// ingest); this sorts 16-byte words of table, the key's first 11 bytes and position,
    /// then orders only runs that tie on those bytes by whole key. Eleven bytes reach past
    /// an item key (level and hash) and a backlink key's item hash and Trust Flow, so the
    /// rows of one item seldom tie.
    fn order(&self) -> Vec<u32> {
        // A batch holds a few million ops at most (2,000 crawls), far below 2^32.
        assert!(
            u32::try_from(self.ops.len()).is_ok(),
            "batch too large to order"
        );
        // Table (8 bits), the key's head (88 bits, zero-padded), position (32 bits).
        let word = |(i, (table, key, _)): (usize, &(Table, Vec<u8>, Op))| {
            let mut word = [0u8; 16];
            word[0] = *table as u8;
            let n = key.len().min(11);
            word[1..1 + n].copy_from_slice(&key[..n]);
            word[12..].copy_from_slice(&(i as u32).to_be_bytes());
            u128::from_be_bytes(word)
        };
        let mut words: Vec<u128> = self.ops.iter().enumerate().map(word).collect();
        words.sort_unstable();
        let mut order: Vec<u32> = words.iter().map(|&w| w as u32).collect();
        let mut start = 0;
        while start < words.len() {
            let head = words[start] >> 32;
            let end = start
                + words[start..]
                    .iter()
                    .take_while(|&&w| w >> 32 == head)
                    .count();
            if end - start > 1 {
                // Stable: equal keys keep their order of writing.
                order[start..end]
                    .sort_by(|&a, &b| self.ops[a as usize].1.cmp(&self.ops[b as usize].1));
            }
            start = end;
        }
        order
    }
}

/// What applying one crawl did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApplyStats {
    pub links_new: u64,
    pub links_seen_again: u64,
    pub links_deleted: u64,
    /// The crawl was already applied (same fetch time) or said nothing (5xx).
    pub skipped: bool,
}

impl std::ops::AddAssign for ApplyStats {
    fn add_assign(&mut self, o: ApplyStats) {
        self.links_new += o.links_new;
        self.links_seen_again += o.links_seen_again;
        self.links_deleted += o.links_deleted;
    }
}

/// A value loaded from the store plus its pending replacement.
struct Tracked<T> {
    /// Length of the item-key prefix of the row key.
    item_key_len: usize,
    original: Option<T>,
    current: T,
}

/// Buffers crawls and writes them atomically. Holds the store's write lock: one writer
/// (or flow publication) at a time. After any error, drop it: the batch it holds may
/// rest on a write that failed.
pub struct Writer<'a> {
    store: &'a Store,
    /// The store's write lock, and with it the class of every root domain a batch
    /// written to the store classed: batches meet the same domains again, and reading
    /// their classes from the store was a tenth of a round ([`linked_hosts`]).
    known: std::sync::MutexGuard<'a, DomainClasses>,
    /// Backlink generation written to; fixed while the lock is held.
    generation: u8,
    /// Current flow metrics and top topics of URLs, cached for the batch.
    flows: HashMap<String, UrlMetrics>,
    batch: SortedBatch,
    /// The rows this batch has read and changed.
    rows: BatchRows,
    pending_pages: usize,
    /// Contributions not applied yet, in order: their aggregate rows are read together
    /// first ([`Writer::apply_pending`]).
    pending: Vec<Contribution>,
    /// The last batch handed to a background write ([`Writer::commit_in_background`]):
    /// read before the store while that write is in flight.
    in_flight: Option<InFlight>,
    /// Shared with each batch's write, one at a time.
    written_so_far: Arc<Mutex<WrittenSoFar>>,
    /// Started with the first batch written.
    threads: Option<WriteThreads>,
}

/// A batch being written on the write thread, and its rows as they will be once written.
struct InFlight {
    rows: Arc<BatchRows>,
    write: Pending<Result<()>>,
}

/// Everything one batch writes besides its raw row writes (backlinks, expiry): what it
/// read, as it changed it. Later crawls of the batch read through it; at commit it moves
/// whole to the write.
#[derive(Default)]
struct BatchRows {
    pages: HashMap<String, PageState>,
    /// Whole link sets of the pages the batch touched, by source URL then target URL.
    links: HashMap<String, BTreeMap<String, LinkRecord>>,
    dirty_links: HashSet<(String, String)>,
    /// By item key.
    counters: HashMap<Vec<u8>, Counters>,
    /// By item key and day.
    timeline: HashMap<(Vec<u8>, u32), TimelineDelta>,
    refdomains: HashMap<Vec<u8>, Tracked<RefDomain>>,
    /// Latest "last seen" days of referring-domain rows that only links seen again
    /// touched, by row key, with the item key's length: such a row is not read while
    /// crawls apply but when the batch is written ([`write_seen_days`]). A row is never
    /// both here and in `refdomains`: loading it folds its day in.
    seen_days: HashMap<Vec<u8>, (usize, u32)>,
    anchors: HashMap<Vec<u8>, Tracked<AnchorText>>,
    /// Counts of the anchor-text members of `distinct` (past a referring-domain row's
    /// bound) the batch set, by encoded key.
    distinct: HashMap<Vec<u8>, i64>,
    /// How the reference counts of the other `distinct` members move, by encoded key:
    /// nothing is read while crawls apply; the batch's write thread reads the counts
    /// the moves start from ([`BatchRows::distinct_counts`]).
    distinct_moves: HashMap<Vec<u8>, i64>,
    /// The anchor-text keys of `distinct` this batch wrote, by their referring-domain
    /// prefix (`item_key | 3 | domain \x01`): where a row taking its texts back looks for
    /// the batch's counts ([`Writer::anchor_texts_back`]).
    anchor_texts: HashMap<Vec<u8>, HashSet<Vec<u8>>>,
    /// How the reference counts of the URLs touched move (see `Writer::ref_url`):
    /// resolved against the store when written.
    url_ref_moves: HashMap<String, i64>,
    /// Items whose views the batch changes, by item key, and how it treats them
    /// ([`small_items`]).
    size_classes: HashMap<Vec<u8>, SizeClass>,
    /// Root domains the batch's links point to, by item key, and whether they read a
    /// host's views ([`linked_hosts`]).
    domains: HashMap<Vec<u8>, DomainClass>,
}

/// Contributions held back before their rows are read in one sorted multi-get per table
/// and applied: about 40 MB of them.
const PENDING_CONTRIBUTIONS: usize = 100_000;

/// What `Writer::expire_before` removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ExpireStats {
    pub pages: u64,
    pub links: u64,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(store: &'a Store) -> Writer<'a> {
        let lock = store.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        Writer {
            store,
            known: lock,
            generation: store.generation(),
            flows: HashMap::default(),
            batch: SortedBatch::default(),
            rows: BatchRows::default(),
            pending_pages: 0,
            pending: Vec::new(),
            in_flight: None,
            written_so_far: Arc::default(),
            threads: None,
        }
    }

    /// The rows of the batch being written, if one is in flight.
    fn in_flight_rows(&self) -> Option<&BatchRows> {
        self.in_flight.as_ref().map(|f| &*f.rows)
    }

    /// Crawls applied since the last commit.
    pub fn pending_pages(&self) -> usize {
        self.pending_pages
    }

    /// Applies one crawl to the overlay (visible to later crawls of this batch).
    pub fn apply(&mut self, crawl: &PageCrawl) -> Result<ApplyStats> {
        let mut stats = ApplyStats::default();
        let Some(status) = crawl_status(crawl) else {
            stats.skipped = true;
            return Ok(stats);
        };
        let previous = self.page_state(&crawl.url)?;
        let order = crawl_order(previous, crawl.fetched_at);
        if matches!(order, CrawlOrder::First | CrawlOrder::Newer) {
            // May commit the batch so far: nothing of this crawl is applied yet. An older
            // crawl adds no link, so it links no domain on a host it did not have.
            self.prepare_domains(crawl)?;
        }
        self.pending_pages += 1;
        let day = day_of(crawl.fetched_at);
        let (changes, out_domains_before) = match order {
            CrawlOrder::Same => {
                stats.skipped = true;
                return Ok(stats);
            }
            CrawlOrder::Older => {
                let source_flow = self.url_metrics(&crawl.url)?.flow;
                let mut existing = self.take_links(&crawl.url, source_flow, None)?;
                let before = page_out_domains(existing.values());
                let changes = older_crawl(crawl, &mut existing);
                self.rows.links.insert(crawl.url.clone(), existing);
                (changes, before)
            }
            CrawlOrder::First | CrawlOrder::Newer => {
                let mut delta = Counters {
                    last_crawl_day: i64::from(day),
                    ..Default::default()
                };
                if order == CrawlOrder::First {
                    self.ref_url(&crawl.url, 1);
                    delta.crawled_urls = 1;
                }
                self.add_counters_for_url(&crawl.url, &delta, true);
                let source = self.url_metrics(&crawl.url)?;
                let mut existing = self.take_links(&crawl.url, source.flow, Some(crawl))?;
                let before = page_out_domains(existing.values());
                let mut flows = std::mem::take(&mut self.flows);
                let changes = newer_crawl(
                    crawl,
                    &mut existing,
                    &source,
                    &mut |targets| {
                        read_url_metrics(self.store, &mut flows, targets.iter().copied())?;
                        Ok(targets.iter().map(|&url| flows[url].clone()).collect())
                    },
                    &mut stats,
                );
                self.flows = flows;
                self.rows.links.insert(crawl.url.clone(), existing);
                (changes?, before)
            }
        };
        if !changes.is_empty() {
            // The changed records are out of the page's link set until each change puts
            // its new one back.
            for (old, new) in changes {
                if old.is_none() {
                    self.ref_url(&new.target_url, 1);
                }
                self.change_link(old.as_ref(), new)?;
            }
            let after = page_out_domains(self.rows.links[&crawl.url].values());
            self.add_page_out_domains(&crawl.url, after - out_domains_before);
        }
        let state = next_state(previous, crawl, status);
        // The page's `expiry` row follows its last fetch day.
        let (before, after) = (
            previous.map(|p| day_of(p.last_fetch)),
            day_of(state.last_fetch),
        );
        if before != Some(after) {
            if let Some(day) = before {
                self.batch.delete(&ExpiryPageKey {
                    day,
                    url: &crawl.url,
                });
            }
            let key = ExpiryPageKey {
                day: after,
                url: &crawl.url,
            };
            self.batch.put(&key, &Empty);
        }
        self.rows.pages.insert(crawl.url.clone(), state);
        Ok(stats)
    }

    fn page_state(&mut self, url: &str) -> Result<Option<PageState>> {
        if let Some(s) = self.rows.pages.get(url) {
            return Ok(Some(*s));
        }
        if let Some(s) = self.in_flight_rows().and_then(|c| c.pages.get(url)) {
            return Ok(Some(*s));
        }
        // The latest state, not the published one: pages this writer committed in earlier
        // batches are not published yet.
        self.store.latest_page(url)
    }

    /// Trust and Citation Flow of a URL from the serving flow build (0 before any).
    fn url_metrics(&mut self, url: &str) -> Result<UrlMetrics> {
        url_metrics(self.store, &mut self.flows, url)
    }

    /// The page's current link set (overlay first, then the store), taken out of the
    /// overlay: the caller puts it back before it changes a link. Stored records carry
    /// the source flow of their last write; it is replaced by the current one, which is
    /// what their backlink rows are keyed by. With the newer crawl about to apply, the
    /// records of links it shows as they were are rebuilt rather than read
    /// ([`Writer::stored_links`]).
    fn take_links(
        &mut self,
        source: &str,
        source_flow: FlowPair,
        newer: Option<&PageCrawl>,
    ) -> Result<BTreeMap<String, LinkRecord>> {
        if let Some(set) = self.rows.links.remove(source) {
            return Ok(set);
        }
        if let Some(set) = self.in_flight_rows().and_then(|c| c.links.get(source)) {
            return Ok(set.clone());
        }
        let mut set = BTreeMap::new();
        for mut rec in self.stored_links(source, source_flow.trust_flow, newer)? {
            rec.source_flow = source_flow;
            set.insert(rec.target_url.clone(), rec);
        }
        Ok(set)
    }

    fn change_link(&mut self, old: Option<&LinkRecord>, new: LinkRecord) -> Result<()> {
        match old {
            // Most re-crawls only add a day: skip the full remove-and-add.
            Some(old) if only_seen_again(old, &new) => self.seen_again(&new)?,
            Some(old) => {
                self.contribute(old, -1)?;
                self.contribute(&new, 1)?;
            }
            None => self.contribute(&new, 1)?,
        }
        self.rows
            .dirty_links
            .insert((new.source_url.clone(), new.target_url.clone()));
        self.rows
            .links
            .entry(new.source_url.clone())
            .or_default()
            .insert(new.target_url.clone(), new);
        Ok(())
    }

    /// A link whose record changed only in LastSeenDate and crawl history: its share of
    /// every sum is the same, so only the stored copies and the "last seen" maxima move.
    /// Equivalent to `contribute(old, -1)` then `contribute(new, 1)`.
    fn seen_again(&mut self, rec: &LinkRecord) -> Result<()> {
        if rec.is_internal() {
            return Ok(());
        }
        let link = link_key(&rec.source_url, &rec.target_url);
        let encoded = EncodedRecord::of(rec);
        let delta = Counters {
            last_link_day: i64::from(rec.last_seen),
            ..Default::default()
        };
        let index_key = self.store.hasher.item_key(&Item::index());
        self.add_counters(index_key, &delta);
        let source_domain = domain_of_url(&rec.source_url);
        // In line with other contributions: a backlink row's writes keep their order.
        for (level, name) in url_levels(&rec.target_url) {
            let key = BacklinkKey {
                generation: self.generation,
                item_hash: self.store.hasher.hash(level, name),
                source_trust_flow: rec.source_flow.trust_flow,
                link,
            };
            // The other levels' rows point to the URL row by key alone: unchanged.
            if key.is_url_row(&self.store.hasher) {
                self.pending.push(Contribution::Backlink {
                    key,
                    row: Some(BacklinkRow::Record(encoded.clone())),
                });
            }
            let item_key = self.store.hasher.key_of(level, name);
            // Links and dates unchanged but the last seen one, a maximum: no need to read
            // the referring-domain row now (a fifth of a re-crawl round's time when it
            // was read with the others).
            if !self.reads_host_views(&item_key)? {
                self.see_refdomain(&item_key, source_domain, rec.last_seen);
            }
            self.add_counters(item_key, &delta);
        }
        self.apply_if_full()
    }

    /// Adds (`sign` = 1) or removes (`sign` = -1) one record's share of every ordering,
    /// counter and aggregate. Minima and maxima only move on additions: dates of first
    /// and last sight never go back.
    fn contribute(&mut self, rec: &LinkRecord, sign: i64) -> Result<()> {
        self.push_contributions(rec, sign)?;
        self.apply_if_full()
    }

    /// Moves the "last seen" day of a referring-domain row up to `day`: in place if the
    /// batch holds the row, else noted for when the row is loaded or written.
    fn see_refdomain(&mut self, item_key: &[u8], domain: &str, day: u32) {
        if self.skips_member_views(item_key) {
            return;
        }
        let key = RefDomain::key(item_key, domain).encode();
        if let Some(row) = self.rows.refdomains.get_mut(&key) {
            row.current.last_seen = row.current.last_seen.max(day);
            return;
        }
        let seen = self
            .rows
            .seen_days
            .entry(key)
            .or_insert((item_key.len(), day));
        seen.1 = seen.1.max(day);
    }

    fn apply_if_full(&mut self) -> Result<()> {
        if self.pending.len() >= PENDING_CONTRIBUTIONS {
            self.apply_pending()?;
        }
        Ok(())
    }

    /// Applies the pending contributions in order, after reading every aggregate row they
    /// touch that this batch has not loaded yet: one sorted multi-get per table instead
    /// of a point read per row. Counters and timeline rows are merge operands, never read.
    fn apply_pending(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        self.prefetch(&pending)?;
        let result = pending
            .drain(..)
            .try_for_each(|c| self.apply_contribution(c));
        self.pending = pending;
        result
    }

    /// Loads the `refdomains` and `anchors` rows `pending` will touch into the batch's
    /// overlays.
    fn prefetch(&mut self, pending: &[Contribution]) -> Result<()> {
        self.class_items(pending)?;
        let mut refdomains = Vec::new();
        let mut anchors = Vec::new();
        for c in pending {
            match c {
                c if self.skips(c) => {}
                Contribution::Distinct {
                    item_key,
                    kind: DistinctKind::AnchorDomain,
                    member,
                    ..
                } => {
                    // Counted in the referring-domain row the link's `RefDomain`
                    // contribution loads (or, past the bound, read when met).
                    let key = AnchorText::key(item_key, split_anchor_member(member).1).encode();
                    if !self.rows.anchors.contains_key(&key) {
                        anchors.push((key, item_key.len()));
                    }
                }
                Contribution::RefDomain {
                    item_key, domain, ..
                } => {
                    let key = RefDomain::key(item_key, domain).encode();
                    if !self.rows.refdomains.contains_key(&key) {
                        refdomains.push((key, item_key.len()));
                    }
                }
                Contribution::Anchor { item_key, text, .. } => {
                    let key = AnchorText::key(item_key, text).encode();
                    if !self.rows.anchors.contains_key(&key) {
                        anchors.push((key, item_key.len()));
                    }
                }
                _ => {}
            }
        }
        if let Some(c) = self.in_flight.as_ref().map(|f| Arc::clone(&f.rows)) {
            take_written::<RefDomain>(&mut self.rows.refdomains, &c.refdomains, &mut refdomains)?;
            take_written::<AnchorText>(&mut self.rows.anchors, &c.anchors, &mut anchors)?;
        }
        prefetch_tracked(&mut self.rows.refdomains, self.store, refdomains)?;
        prefetch_tracked(&mut self.rows.anchors, self.store, anchors)
    }

    /// Applies one contribution to the rows it touches, deriving the counters that
    /// referring-domain and anchor rows feed from the rows' values before and after.
    /// `distinct` counts other than anchor texts only move here: the write thread
    /// resolves them.
    fn apply_contribution(&mut self, c: Contribution) -> Result<()> {
        match c {
            ref c if self.skips(c) => {}
            Contribution::Counters { item_key, delta } => self.add_counters(item_key, &delta),
            Contribution::Distinct {
                item_key,
                kind: DistinctKind::AnchorDomain,
                member,
                sign,
            } => {
                let (domain, text) = split_anchor_member(&member);
                let moved = self.bump_row_anchor(&item_key, domain, text, sign)?;
                if moved != 0 {
                    self.anchor_row(&item_key, text)?.ref_domains += moved;
                }
            }
            Contribution::Distinct {
                item_key,
                kind,
                member,
                sign,
            } => {
                let key = DistinctKey {
                    item_key: &item_key,
                    kind,
                    member: &member,
                }
                .encode();
                *self.rows.distinct_moves.entry(key).or_default() += sign;
            }
            Contribution::RefDomain {
                item_key,
                domain,
                share,
            } => {
                let rd = self.refdomain_row(&item_key, &domain)?;
                let before = (rd.links > 0, rd.live_links() > 0);
                rd.fold(&share);
                let after = (rd.links > 0, rd.live_links() > 0);
                let any = i64::from(after.0) - i64::from(before.0);
                let live = i64::from(after.1) - i64::from(before.1);
                if any != 0 || live != 0 {
                    // A root domain that reads this host's views moves with it.
                    let domain_at_host = self.domain_at_host(&item_key);
                    for item_key in [Some(item_key), domain_at_host].into_iter().flatten() {
                        let hasher = &self.store.hasher;
                        if let Some((source, delta)) =
                            out_domain_counters(&item_key, &domain, live, hasher)
                        {
                            self.add_counters(source, &delta);
                        }
                        self.add_counters(item_key, &ref_domain_counters(&domain, any, live));
                    }
                }
            }
            Contribution::Anchor {
                item_key,
                text,
                share,
            } => {
                let row = self.anchor_row(&item_key, &text)?;
                let before = row.is_kept();
                row.fold(&share);
                let moved = i64::from(row.is_kept()) - i64::from(before);
                if moved != 0 {
                    let delta = Counters {
                        anchor_texts: moved,
                        ..Default::default()
                    };
                    if let Some(domain) = self.domain_at_host(&item_key) {
                        self.add_counters(domain, &delta);
                    }
                    self.add_counters(item_key, &delta);
                }
            }
            Contribution::Timeline {
                item_key,
                day,
                delta,
            } => self.add_timeline(&item_key, day, delta),
            Contribution::Backlink { key, row } => match row {
                Some(row) => self.batch.put(&key, &row),
                None => self.batch.delete(&key),
            },
            Contribution::Expiry { key, sign } => {
                if sign > 0 {
                    self.batch.put(&key, &Empty);
                } else {
                    self.batch.delete(&key);
                }
            }
        }
        Ok(())
    }

    /// The anchor-text row of `text` for an item, loaded or started empty.
    fn anchor_row(&mut self, item_key: &[u8], text: &str) -> Result<&mut AnchorText> {
        self.member_row(item_key, text)
    }

    /// The referring-domain row of `domain` for an item, loaded or started empty, with
    /// the "last seen" days noted for it while it was not loaded.
    fn refdomain_row(&mut self, item_key: &[u8], domain: &str) -> Result<&mut RefDomain> {
        let key = RefDomain::key(item_key, domain).encode();
        let mut day = self.rows.seen_days.remove(&key).map_or(0, |(_, d)| d);
        // The batch in flight may not be in the store yet; once it is, this is a no-op.
        if let Some(&(_, d)) = self.in_flight_rows().and_then(|c| c.seen_days.get(&key)) {
            day = day.max(d);
        }
        let row: &mut RefDomain = self.member_row(item_key, domain)?;
        row.last_seen = row.last_seen.max(day);
        Ok(row)
    }

    /// The row of `member` for an item: as this batch holds it, else as the batch in
    /// flight will write it, else from the store, else empty.
    fn member_row<T: MemberRow>(&mut self, item_key: &[u8], member: &str) -> Result<&mut T> {
        let key = T::key(item_key, member).encode();
        // Rows are prefetched before contributions apply: this is the rare miss.
        let in_flight = self.in_flight.as_ref().map(|f| Arc::clone(&f.rows));
        if let Some(c) = in_flight.filter(|_| !T::rows(&self.rows).contains_key(&key)) {
            let mut want = vec![(key.clone(), item_key.len())];
            take_written(T::rows_mut(&mut self.rows), T::rows(&c), &mut want)?;
        }
        tracked(T::rows_mut(&mut self.rows), self.store, key, item_key.len())
    }

    fn add_timeline(&mut self, item_key: &[u8], day: u32, d: TimelineDelta) {
        self.rows
            .timeline
            .entry((item_key.to_vec(), day))
            .or_default()
            .fold(&d);
    }

    /// Moves the out-domain count of a page (its URL item only: hosts count theirs with
    /// `distinct` rows, root domains from their referring-domain rows).
    fn add_page_out_domains(&mut self, url: &str, moved: i64) {
        if moved != 0 {
            let delta = Counters {
                out_domains_external: moved,
                ..Default::default()
            };
            let key = self.store.hasher.item_key(&Item::url(url.to_string()));
            self.add_counters(key, &delta);
        }
    }

    fn add_counters(&mut self, key: Vec<u8>, delta: &Counters) {
        accumulate(self.rows.counters.entry(key).or_default(), delta);
    }

    fn add_counters_for_url(&mut self, url: &str, delta: &Counters, with_index: bool) {
        for key in self.store.hasher.url_item_keys(url, with_index) {
            self.add_counters(key, delta);
        }
    }

    /// Moves a URL's reference count: one for its page once crawled, one per link record
    /// pointing to it. A URL is known to the index (and counted in its items'
    /// `indexed_urls`) while its count is above zero. Nothing is read here: the batch's
    /// write thread reads the counts its moves start from ([`BatchRows::url_refs`]).
    fn ref_url(&mut self, url: &str, sign: i64) {
        match self.rows.url_ref_moves.get_mut(url) {
            Some(n) => *n += sign,
            None => {
                self.rows.url_ref_moves.insert(url.to_string(), sign);
            }
        }
    }

    /// Removes every page last crawled before `cutoff` (a day number) with all its links,
    /// and every other link last seen before it (or, deleted, lost before it), with their
    /// whole share of every ordering, counter and aggregate: the rolling window of the
    /// fresh index. Reads two ranges of the day-keyed `expiry` index (a page's live links
    /// were seen at its last fetch; a deleted link has its own row), never every link.
    /// Commits as it goes; pending crawls are committed first.
    pub fn expire_before(&mut self, cutoff: u32) -> Result<ExpireStats> {
        let expired = self.expire_links_and_pages(cutoff);
        // Domains may have lost every backlink, whether or not all of it was written:
        // classed from the store again afterwards. Such a domain may then read a host's
        // views and later copy its rows without a batch noting their count, so the
        // member row counts are read from the store again too.
        self.known.clear();
        let mut so_far = self
            .written_so_far
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        so_far.member_counts = MemberCounts::default();
        drop(so_far);
        expired
    }

    fn expire_links_and_pages(&mut self, cutoff: u32) -> Result<ExpireStats> {
        self.commit()?;
        let mut stats = ExpireStats::default();
        // Pages by their last fetch day.
        let mut old_pages: Vec<(u32, String)> = Vec::new();
        self.scan_expiry(EXPIRY_PAGE, cutoff, &mut |key| {
            let page = ExpiryPageKey::parse(key)?;
            old_pages.push((page.day, page.url.to_string()));
            Ok(())
        })?;
        let mut old_links: Vec<[u8; 16]> = Vec::new();
        self.scan_expiry(EXPIRY_LINK, cutoff, &mut |key| {
            old_links.push(ExpiryLinkKey::parse(key)?.link);
            Ok(())
        })?;
        // Every expired record once (a deleted link of an expired page is in both).
        let mut expired: BTreeMap<[u8; 16], LinkRecord> = BTreeMap::new();
        for (_, url) in &old_pages {
            let trust_flow = self.url_metrics(url)?.flow.trust_flow;
            let records = self.stored_links(url, trust_flow, None)?;
            self.add_page_out_domains(url, -page_out_domains(&records));
            for rec in records {
                expired.insert(link_key(&rec.source_url, &rec.target_url), rec);
            }
        }
        for chunk in old_links.chunks(10_000) {
            let values =
                self.store
                    .db
                    .batched_multi_get_cf(self.store.cf(CF_LINKS), chunk.iter(), false);
            for (key, value) in chunk.iter().zip(values) {
                let Some(v) = value? else { continue };
                let rec = match LinkRow::decode(&v)? {
                    LinkRow::Internal(record) => record.decode()?,
                    LinkRow::AtTarget(_) => self.external_link(key)?,
                };
                expired.insert(*key, rec);
            }
        }
        let mut expired: Vec<LinkRecord> = expired.into_values().collect();
        for chunk in expired.chunks_mut(20_000) {
            for rec in chunk {
                // Backlink rows are keyed by the source's current flow, not the one
                // stored with the record.
                rec.source_flow = self.url_metrics(&rec.source_url)?.flow;
                self.contribute(rec, -1)?;
                self.ref_url(&rec.target_url, -1);
                self.batch.delete(&LinkKey {
                    source: &rec.source_url,
                    target: &rec.target_url,
                });
                stats.links += 1;
            }
            self.commit()?;
        }
        for (day, url) in &old_pages {
            self.batch.delete(&PageKey(url));
            self.batch.delete(&ExpiryPageKey { day: *day, url });
            let delta = Counters {
                crawled_urls: -1,
                ..Default::default()
            };
            self.add_counters_for_url(url, &delta, true);
            self.ref_url(url, -1);
            stats.pages += 1;
        }
        self.commit()?;
        Ok(stats)
    }

    /// Visits the keys of `expiry` rows of one kind whose day is before `cutoff`, as last
    /// written.
    fn scan_expiry(
        &self,
        kind: u8,
        cutoff: u32,
        visit: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut upper = vec![kind];
        upper.extend_from_slice(&cutoff.to_be_bytes());
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(upper);
        let mut it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.cf(CF_EXPIRY), opts);
        it.seek([kind]);
        while let Some(k) = it.key() {
            visit(k)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// A page's link records as committed (callers look at the batch overlay first): the
    /// internal ones from its `links` rows; the external ones rebuilt from their `links`
    /// rows when the `newer` crawl of the page shows them as they were
    /// ([`crawl::seen_before`]), else read from their `backlinks` URL rows, keyed by the
    /// page's Trust Flow `source_trust_flow`.
    fn stored_links(
        &self,
        source: &str,
        source_trust_flow: u8,
        newer: Option<&PageCrawl>,
    ) -> Result<Vec<LinkRecord>> {
        let found: HashMap<u64, Cow<'_, OutLink>> = newer
            .map(|crawl| {
                found_links(crawl)
                    .into_iter()
                    .map(|(target, link)| (crate::keys::url_hash(target), link))
                    .collect()
            })
            .unwrap_or_default();
        let prefix = crate::keys::url_hash(source).to_be_bytes();
        let mut opts = ReadOptions::default();
        // A page's links are read once per crawl of it, and a round crawls a page once:
        // caching their blocks made a 2.12M-link round fault in 1.6 GB more memory (in
        // `perf`, the kernel zeroing new pages under block-cache inserts) for reads that
        // never came back.
        opts.fill_cache(false);
        if let Some(upper) = u64::from_be_bytes(prefix).checked_add(1) {
            opts.set_iterate_upper_bound(upper.to_be_bytes());
        }
        let mut it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.cf(CF_LINKS), opts);
        it.seek(prefix);
        let mut out = Vec::new();
        let mut at_target = Vec::new();
        while let Some((key, value)) = it.item() {
            match LinkRow::decode(value)? {
                LinkRow::Internal(record) => out.push(record.decode()?),
                LinkRow::AtTarget(summary) => {
                    let link = key
                        .try_into()
                        .map_err(|_| crate::Error::corrupt(CF_LINKS, "key is not 16 bytes"))?;
                    let (_, target_hash) = crate::keys::link_hashes(&link);
                    let rebuilt = newer
                        .zip(found.get(&target_hash))
                        .and_then(|(crawl, shown)| seen_before(crawl, shown, &summary));
                    match rebuilt {
                        Some(rec) => out.push(rec),
                        None => at_target.push(
                            BacklinkKey::url_row_of(
                                link,
                                self.generation,
                                source_trust_flow,
                                &self.store.hasher,
                            )
                            .bytes(),
                        ),
                    }
                }
            }
            it.next();
        }
        it.status()?;
        // In key order: the target hashes ascend under one generation and flow.
        let cf = self.store.cf(CF_BACKLINKS);
        for value in self.store.db.batched_multi_get_cf(cf, &at_target, true) {
            out.push(url_row_record(value?.as_deref())?);
        }
        // A 64-bit hash collision between two source URLs: not this page's link.
        out.retain(|rec| rec.source_url == source);
        Ok(out)
    }

    /// The record of the external link `link` (a `links` key), as committed: its source
    /// page is found by the key's source hash among the crawled pages.
    fn external_link(&mut self, link: &[u8; 16]) -> Result<LinkRecord> {
        let (source_hash, _) = crate::keys::link_hashes(link);
        let mut opts = ReadOptions::default();
        if let Some(upper) = source_hash.checked_add(1) {
            opts.set_iterate_upper_bound(upper.to_be_bytes());
        }
        let mut it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.cf(CF_PAGES), opts);
        it.seek(source_hash.to_be_bytes());
        let mut sources = Vec::new();
        while let Some(key) = it.key() {
            sources.push(PageKey::parse(key)?.0.to_string());
            it.next();
        }
        it.status()?;
        for source in sources {
            let trust_flow = self.url_metrics(&source)?.flow.trust_flow;
            let row =
                BacklinkKey::url_row_of(*link, self.generation, trust_flow, &self.store.hasher);
            let value = self
                .store
                .db
                .get_pinned_cf(self.store.cf(CF_BACKLINKS), row.bytes())?;
            if value.is_some() {
                let rec = url_row_record(value.as_deref())?;
                if rec.source_url == source {
                    return Ok(rec);
                }
            }
        }
        Err(LinkRow::record_missing())
    }

    /// Moves the count of one anchor text among a referring domain's backlinks to an item;
    /// returns the change in the row's distinct texts. The row holds the counts while
    /// they are at most [`ANCHORS_IN_ROW`](crate::aggregate::ANCHORS_IN_ROW); past it they move out to `distinct` rows, and
    /// come back when the row is at the bound again, so a row's place for them depends
    /// only on how many it has (as in a bulk build).
    fn bump_row_anchor(
        &mut self,
        item_key: &[u8],
        domain: &str,
        text: &str,
        sign: i64,
    ) -> Result<i64> {
        let row = self.refdomain_row(item_key, domain)?;
        if row.anchors.in_row() {
            let moved = row.anchors.bump(text, sign);
            if !row.anchors.in_row() {
                for (text, n) in std::mem::take(&mut row.anchors.counts) {
                    let key = anchor_text_key(item_key, domain, &text);
                    self.note_anchor_text(item_key, domain, key, n);
                }
            }
            return Ok(moved);
        }
        let member = pair_member(domain, text);
        let moved = self.bump_distinct(item_key, &member, sign)?;
        let key = anchor_text_key(item_key, domain, text);
        let n = self.rows.distinct[&key];
        self.note_anchor_text(item_key, domain, key, n);
        let row = self.refdomain_row(item_key, domain)?;
        row.anchors.texts += moved;
        if row.anchors.in_row() {
            let counts = self.anchor_texts_back(item_key, domain)?;
            self.refdomain_row(item_key, domain)?.anchors.counts = counts;
        }
        Ok(moved)
    }

    /// Sets the `distinct` count of one of `domain`'s anchor texts for an item (0 deletes
    /// the row when written), filed under the domain's prefix, which is measured, not
    /// searched for: texts may hold `\x01`.
    fn note_anchor_text(&mut self, item_key: &[u8], domain: &str, key: Vec<u8>, n: i64) {
        let prefix = key[..anchor_texts_prefix_len(item_key, domain)].to_vec();
        self.rows
            .anchor_texts
            .entry(prefix)
            .or_default()
            .insert(key.clone());
        self.rows.distinct.insert(key, n);
    }

    /// The anchor texts of a referring-domain row coming back from `distinct` into the
    /// row, with their counts in text order; their `distinct` rows go. Read from the
    /// store, then through the batch in flight and this one (the texts each wrote).
    fn anchor_texts_back(&mut self, item_key: &[u8], domain: &str) -> Result<Vec<(String, i64)>> {
        let mut prefix = anchor_text_key(item_key, domain, "");
        prefix.truncate(anchor_texts_prefix_len(item_key, domain));
        let mut counts: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        let mut opts = ReadOptions::default();
        if let Some(upper) = prefix_successor(&prefix) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.cf(CF_DISTINCT), opts);
        it.seek(&prefix);
        while let Some((key, value)) = it.item() {
            let typed = DistinctKey::parse(key)?;
            counts.insert(key.to_vec(), typed.decode_value(value)?.0);
            it.next();
        }
        it.status()?;
        for rows in self.in_flight_rows().into_iter().chain([&self.rows]) {
            for key in rows.anchor_texts.get(&prefix).into_iter().flatten() {
                counts.insert(key.clone(), rows.distinct[key]);
            }
        }
        let mut back = Vec::new();
        for (key, n) in counts {
            if n > 0 {
                let text = &key[prefix.len()..key.len() - 1];
                let text = std::str::from_utf8(text)
                    .map_err(|_| crate::Error::corrupt(CF_DISTINCT, "anchor text is not UTF-8"))?;
                back.push((text.to_string(), n));
            }
            self.note_anchor_text(item_key, domain, key, 0);
        }
        Ok(back)
    }

    /// Moves the reference count of an anchor text past its referring-domain row's bound;
    /// returns the change in the number of distinct texts (+1 when the text appears, -1
    /// when its count drops to 0). Other members' counts move on the write thread.
    fn bump_distinct(&mut self, item_key: &[u8], member: &str, sign: i64) -> Result<i64> {
        let typed = DistinctKey {
            item_key,
            kind: DistinctKind::AnchorDomain,
            member,
        };
        let key = typed.encode();
        let written = || {
            let c = self.in_flight_rows()?;
            c.distinct.get(&key).map(|&n| n.max(0))
        };
        let before = match self.rows.distinct.get(&key).copied().or_else(written) {
            Some(n) => n,
            None => self.store.row(&typed)?.unwrap_or_default().0,
        };
        let after = before + sign;
        self.rows.distinct.insert(key, after);
        Ok(i64::from(after > 0) - i64::from(before > 0))
    }

    /// Writes everything buffered since the last commit in one atomic write batch, and
    /// returns once it (and any batch still in flight) is in the store.
    pub fn commit(&mut self) -> Result<()> {
        self.commit_in_background()?;
        self.wait()
    }

    /// Hands everything buffered since the last commit to a thread that writes it as one
    /// atomic write batch, and returns: the next crawls are applied meanwhile, reading the
    /// batch's rows from memory until the write is done (at most one batch is in flight).
    /// [`Writer::commit`], or dropping the writer, waits for it.
    pub fn commit_in_background(&mut self) -> Result<()> {
        self.commit_after(|| {})
    }

    /// [`Writer::commit_in_background`], whose write thread first runs `gate`: tests hold
    /// a batch in flight with it for as long as they need.
    fn commit_after(&mut self, gate: impl FnOnce() + Send + 'static) -> Result<()> {
        self.apply_pending()?;
        let rows_before = self.finish_in_flight()?;
        let next = BatchRows::sized_like(&self.rows);
        let rows = Arc::new(std::mem::replace(&mut self.rows, next));
        self.flows.clear();
        self.pending_pages = 0;
        let batch = std::mem::take(&mut self.batch);
        let (db, written) = (Arc::clone(&self.store.db), Arc::clone(&rows));
        let written_so_far = Arc::clone(&self.written_so_far);
        let (generation, hasher) = (self.generation, self.store.hasher);
        let threads = match &mut self.threads {
            Some(threads) => threads,
            threads => threads.insert(WriteThreads::start()?),
        };
        let helpers = Arc::clone(&threads.helpers);
        let write = threads.writer.run(move || {
            // Freeing the batch before's rows (1% of the applying thread) is left to the
            // write thread: the applying thread is the longer of the two.
            drop(rows_before);
            gate();
            let mut so_far = written_so_far.lock().unwrap_or_else(|p| p.into_inner());
            written.write(batch, &db, generation, hasher, &mut so_far, &helpers)
        });
        self.in_flight = Some(InFlight { rows, write });
        Ok(())
    }

    /// Waits for the batch in flight, if any, to be in the store.
    fn wait(&mut self) -> Result<()> {
        self.finish_in_flight().map(drop)
    }

    /// Waits for the batch in flight, if any, to be in the store, and hands back its rows
    /// (no other thread holds them then).
    fn finish_in_flight(&mut self) -> Result<Option<Arc<BatchRows>>> {
        match self.in_flight.take() {
            None => Ok(None),
            Some(f) => {
                f.write
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
                self.remember_classes(&f.rows);
                Ok(Some(f.rows))
            }
        }
    }
}

impl Drop for Writer<'_> {
    /// A batch in flight is written before the write lock is let go. Its result is lost
    /// here (callers that need it commit first), and so is a panic of its thread: this
    /// may run while the writer's own thread unwinds.
    fn drop(&mut self) {
        if let Some(f) = self.in_flight.take() {
            let _ = f.write.join();
        }
    }
}

impl BatchRows {
    /// Empty rows whose maps have room for what `before` held: batches are much alike,
    /// and maps grown from empty batch after batch spent 6% of the applying thread
    /// rehashing.
    fn sized_like(before: &BatchRows) -> BatchRows {
        fn map<K, V>(like: &HashMap<K, V>) -> HashMap<K, V> {
            HashMap::with_capacity_and_hasher(room(like.len()), Default::default())
        }
        fn room(len: usize) -> usize {
            len + len / 8
        }
        BatchRows {
            pages: map(&before.pages),
            links: map(&before.links),
            dirty_links: HashSet::with_capacity_and_hasher(
                room(before.dirty_links.len()),
                Default::default(),
            ),
            counters: map(&before.counters),
            timeline: map(&before.timeline),
            refdomains: map(&before.refdomains),
            seen_days: map(&before.seen_days),
            anchors: map(&before.anchors),
            distinct: map(&before.distinct),
            distinct_moves: map(&before.distinct_moves),
            anchor_texts: map(&before.anchor_texts),
            url_ref_moves: map(&before.url_ref_moves),
            size_classes: map(&before.size_classes),
            domains: map(&before.domains),
        }
    }

    /// Writes the rows, with `batch`'s row writes, in one atomic write batch. Three
    /// threads work out what to write (small items on `helpers.settler`, counts resolved
    /// against the store on `helpers.counts`, the other rows here): each mostly reads the
    /// store, and the applying thread leaves a core idle while it waits for them.
    fn write(
        self: &Arc<Self>,
        batch: SortedBatch,
        db: &Arc<rocksdb::DB>,
        generation: u8,
        hasher: ItemHasher,
        so_far: &mut WrittenSoFar,
        helpers: &Helpers,
    ) -> Result<()> {
        let settling = {
            let (rows, db) = (Arc::clone(self), Arc::clone(db));
            helpers.settler.run(move || {
                let settled = rows.settle_small_items(&batch, &db, generation, &hasher);
                (batch, settled)
            })
        };
        let counting = {
            let (rows, db) = (Arc::clone(self), Arc::clone(db));
            helpers.counts.run(move || rows.counts(&db, &hasher))
        };
        let rows = self.rows_to_write(db, so_far);
        let ((mut batch, settled), counted) = (settling.wait(), counting.wait());
        let (settled, (counts, found), (rows, stored)) = (settled?, counted?, rows?);
        batch.append(rows);
        batch.append(counts);
        batch.append(settled.writes);
        self.merge_counters(&mut batch, found, &so_far.extremes);
        // No WAL: a batch either reaches an (atomically flushed) memtable whole or is
        // lost whole in a crash, and re-applying crawls is idempotent.
        let mut wo = rocksdb::WriteOptions::default();
        wo.disable_wal(true);
        db.write_opt(batch.into_write_batch(db), &wo)?;
        so_far.member_counts.note(&stored, &self.counters);
        so_far.member_counts.forget(&settled.items);
        so_far.extremes.note(&self.counters);
        Ok(())
    }

    /// The writes of the reference counts this batch moves (of `distinct` members and
    /// URLs), resolved against the store, and the counter moves they bring.
    fn counts(
        &self,
        db: &rocksdb::DB,
        hasher: &ItemHasher,
    ) -> Result<(SortedBatch, HashMap<Vec<u8>, Counters>)> {
        let mut batch = SortedBatch::default();
        let mut found: HashMap<Vec<u8>, Counters> = HashMap::default();
        let subnets = self.distinct_counts(&mut batch, db, &mut found)?;
        for (item_key, moved) in subnet_counters(&subnets, db)? {
            found.entry(item_key.to_vec()).or_default().ref_subnets += moved;
        }
        // A root domain that reads a host's views counts the host's addresses.
        let mut at_hosts = Vec::new();
        for (item_key, moved) in &found {
            if let Some(domain) = linked_hosts::domain_at_host(self, hasher, item_key) {
                let c = Counters {
                    ref_ips: moved.ref_ips,
                    ref_subnets: moved.ref_subnets,
                    ..Default::default()
                };
                at_hosts.push((domain, c));
            }
        }
        for (domain, moved) in at_hosts {
            accumulate(found.entry(domain).or_default(), &moved);
        }
        for (item_key, moved) in self.url_refs(&mut batch, db, hasher)? {
            found.entry(item_key).or_default().indexed_urls += moved;
        }
        Ok((batch, found))
    }

    /// Merges the batch's counter deltas, with the moves `found` against the store,
    /// leaving out those an earlier batch's merges already hold.
    fn merge_counters(
        &self,
        batch: &mut SortedBatch,
        mut found: HashMap<Vec<u8>, Counters>,
        extremes: &ExtremesWritten,
    ) {
        for (item_key, delta) in &self.counters {
            let mut delta = *delta;
            if let Some(moved) = found.remove(item_key.as_slice()) {
                accumulate(&mut delta, &moved);
            }
            if !extremes.covers(item_key, &delta) {
                batch.merge(&CountersKey(item_key), &delta);
            }
        }
        for (item_key, delta) in found {
            batch.merge(&CountersKey(&item_key), &delta);
        }
    }

    /// The writes of the batch's pages, links and aggregate rows, and how many member
    /// rows the items whose rows it changes had before it
    /// ([`BatchRows::stored_counters`]).
    fn rows_to_write(
        &self,
        db: &rocksdb::DB,
        so_far: &WrittenSoFar,
    ) -> Result<(SortedBatch, HashMap<Vec<u8>, Counters>)> {
        let mut batch = SortedBatch::default();
        for (url, state) in &self.pages {
            batch.put(&PageKey(url), state);
        }
        for (source, target) in &self.dirty_links {
            let rec = &self.links[source][target];
            batch.put(&LinkKey { source, target }, &LinkRow::of(rec));
        }
        for ((item_key, day), delta) in &self.timeline {
            let key = TimelineKey {
                item_key,
                day: *day,
            };
            batch.merge(&key, delta);
        }
        for (key, &n) in &self.distinct {
            let key = DistinctKey::parse(key)?;
            if n > 0 {
                batch.put(&key, &Count(n));
            } else {
                batch.delete(&key);
            }
        }
        let stored = self.stored_counters(db, &so_far.member_counts)?;
        write_member_rows(&mut batch, &self.refdomains, &self.counters, &stored, db)?;
        write_member_rows(&mut batch, &self.anchors, &self.counters, &stored, db)?;
        let seen = self
            .seen_days
            .iter()
            .filter(|(key, &(item_key_len, _))| !self.settles(&key[..item_key_len]));
        write_seen_days(&mut batch, seen, &self.counters, &stored, db)?;
        Ok((batch, stored))
    }

    /// Writes the reference counts of the URLs whose counts this batch moves, read from
    /// the store in one sorted multi-get (when the batch before is written, so they are
    /// current), and returns how each item's `indexed_urls` moves with them: a URL counts
    /// while its count is above zero (a row is kept only then).
    fn url_refs(
        &self,
        batch: &mut SortedBatch,
        db: &rocksdb::DB,
        hasher: &ItemHasher,
    ) -> Result<HashMap<Vec<u8>, i64>> {
        let mut moves: Vec<(Vec<u8>, &str, i64)> = self
            .url_ref_moves
            .iter()
            .filter(|(_, &n)| n != 0)
            .map(|(url, &n)| (UrlRefKey(url).encode(), url.as_str(), n))
            .collect();
        moves.sort_unstable();
        let cf = cf_handle(db, CF_URLS);
        let values = db.batched_multi_get_cf(cf, moves.iter().map(|(key, ..)| key), true);
        let mut indexed: HashMap<Vec<u8>, i64> = HashMap::default();
        for ((_, url, n), value) in moves.iter().zip(values) {
            let moved = write_count(batch, &UrlRefKey(url), value?.as_deref(), *n)?;
            if moved != 0 {
                for item_key in hasher.url_item_keys(url, true) {
                    *indexed.entry(item_key).or_default() += moved;
                }
            }
        }
        Ok(indexed)
    }

    /// Writes the reference counts of the `distinct` members whose counts this batch
    /// moves (all but anchor texts), read from the store in one sorted multi-get (when
    /// the batch before is written, so they are current). Adds to `found` how the
    /// counters of items move with the members that appear or go, and returns how many
    /// of their referring addresses appear less those that go, per item and subnet (by
    /// `item_key | kind | subnet`).
    fn distinct_counts(
        &self,
        batch: &mut SortedBatch,
        db: &rocksdb::DB,
        found: &mut HashMap<Vec<u8>, Counters>,
    ) -> Result<HashMap<Vec<u8>, i64>> {
        let mut moves: Vec<(&[u8], i64)> = self
            .distinct_moves
            .iter()
            .filter(|(_, &n)| n != 0)
            .map(|(key, &n)| (key.as_slice(), n))
            .collect();
        moves.sort_unstable();
        let cf = cf_handle(db, CF_DISTINCT);
        let values = db.batched_multi_get_cf(cf, moves.iter().map(|(key, _)| key), true);
        let mut subnets = HashMap::default();
        for ((key, n), value) in moves.into_iter().zip(values) {
            let key = DistinctKey::parse(key)?;
            let moved = write_count(batch, &key, value?.as_deref(), n)?;
            if moved == 0 {
                continue;
            }
            if key.kind == DistinctKind::RefIp {
                let subnet = subnet_prefix(key.item_key, key.member);
                *subnets.entry(subnet).or_default() += moved;
            }
            if let Some(delta) = distinct_counters(key.kind, moved) {
                let item = found.entry(key.item_key.to_vec()).or_default();
                accumulate(item, &delta);
            }
        }
        Ok(subnets)
    }

    /// How many referring-domain and anchor rows each item whose rows this batch changes
    /// or sees again had before it, which says whether it keeps ranked copies: from
    /// `counts` where an earlier batch left them, else read from the store's counters
    /// (when the batch before is written, so they are current). Every item of the batch
    /// is in the result, with 0 rows when it has none.
    fn stored_counters(
        &self,
        db: &rocksdb::DB,
        counts: &MemberCounts,
    ) -> Result<HashMap<Vec<u8>, Counters>> {
        let seen_items = self
            .seen_days
            .iter()
            .map(|(key, &(item_key_len, _))| &key[..item_key_len]);
        let mut items: Vec<&[u8]> = changed_items(&self.refdomains)
            .chain(changed_items(&self.anchors))
            .chain(seen_items)
            .collect();
        items.sort_unstable();
        items.dedup();
        let mut out = HashMap::default();
        items.retain(|&item_key| match counts.get(item_key) {
            Some(c) => {
                out.insert(item_key.to_vec(), c);
                false
            }
            None => true,
        });
        let cf = cf_handle(db, CF_COUNTERS);
        let values = db.batched_multi_get_cf(cf, &items, true);
        for (item_key, value) in items.into_iter().zip(values) {
            let stored = match value? {
                Some(v) => {
                    let c = CountersKey(item_key).decode_value(&v)?;
                    member_rows((c.ref_domains, c.anchor_texts))
                }
                None => Counters::default(),
            };
            out.insert(item_key.to_vec(), stored);
        }
        Ok(out)
    }
}

/// Writes a reference count `stored` moved by `n` (its row deleted at zero), and returns
/// how its member's presence moves: 1 when it appears, -1 when it goes.
fn write_count<K: BuiltKey<Value = Count>>(
    batch: &mut SortedBatch,
    key: &K,
    stored: Option<&[u8]>,
    n: i64,
) -> Result<i64> {
    let before = match stored {
        Some(v) => key.decode_value(v)?.0,
        None => 0,
    };
    let after = before + n;
    if after > 0 {
        batch.put(key, &Count(after));
    } else {
        batch.delete(key);
    }
    Ok(i64::from(after > 0) - i64::from(before > 0))
}

/// How each item's subnet count moves with a batch whose referring addresses appear or go
/// by `subnets` (per item and subnet): a subnet whose addresses appeared counts if the
/// store has none of them yet; one whose addresses went stops counting if the store has
/// no more than went. Read in key order, with one iterator, when the batch before is
/// written.
fn subnet_counters<'k>(
    subnets: &'k HashMap<Vec<u8>, i64>,
    db: &rocksdb::DB,
) -> Result<HashMap<&'k [u8], i64>> {
    let mut moved: Vec<(&[u8], i64)> = subnets
        .iter()
        .filter(|(_, &n)| n != 0)
        .map(|(prefix, &n)| (prefix.as_slice(), n))
        .collect();
    moved.sort_unstable();
    let mut out = HashMap::default();
    let mut it = db.raw_iterator_cf(cf_handle(db, CF_DISTINCT));
    for (prefix, n) in moved {
        it.seek(prefix);
        let mut stored = 0;
        while it.key().is_some_and(|k| k.starts_with(prefix)) {
            stored += 1;
            // Appearing addresses only ask whether there is one.
            if n > 0 {
                break;
            }
            it.next();
        }
        it.status()?;
        let change = i64::from(stored + n > 0) - i64::from(stored > 0);
        if change != 0 {
            let item_key = &prefix[..item_key_len(prefix, CF_DISTINCT)?];
            *out.entry(item_key).or_default() += change;
        }
    }
    Ok(out)
}

/// The `distinct` key prefix of the subnet of a referring address of an item: the
/// subnet is a prefix of its addresses' members.
fn subnet_prefix(item_key: &[u8], address: &str) -> Vec<u8> {
    let mut prefix = DistinctKey {
        item_key,
        kind: DistinctKind::RefIp,
        member: subnet_of_member(address),
    }
    .encode();
    prefix.pop(); // the member's terminator
    prefix
}

/// What the batches a writer wrote so far left in the store, for later batches to know
/// without reading it. Exact because a writer holds the store's write lock and notes
/// every batch once it is written.
#[derive(Default)]
struct WrittenSoFar {
    member_counts: MemberCounts,
    extremes: ExtremesWritten,
}

/// Items held in [`MemberCounts`] at most: about 200 MB of keys.
const MEMBER_COUNTS_HELD: usize = 1 << 21;

/// Items held in [`ExtremesWritten`] at most: about 130 MB.
const EXTREMES_HELD: usize = 1 << 20;

/// The first and last days this writer merged into items' counters. A crawl round sees
/// most links again, which moves no sum but sends the items' last days in every batch
/// that meets them: hosts and root domains in nearly every batch. A delta whose days are
/// already in the row changes nothing, and is not written (42% of the counters' merges
/// of a 2.12M-link round). Counters rows only ever take merges, so what was merged stays;
/// emptied when it holds [`EXTREMES_HELD`] items.
#[derive(Default)]
struct ExtremesWritten(HashMap<Vec<u8>, Extremes>);

impl ExtremesWritten {
    /// True when an earlier batch's merges already hold everything `delta` would bring.
    fn covers(&self, item_key: &[u8], delta: &Counters) -> bool {
        self.0
            .get(item_key)
            .is_some_and(|taken| delta.changes_nothing_past(taken))
    }

    /// Notes the deltas of a batch just written.
    fn note(&mut self, deltas: &HashMap<Vec<u8>, Counters>) {
        if self.0.len() + deltas.len() > EXTREMES_HELD {
            self.0.clear();
        }
        for (item_key, delta) in deltas {
            match self.0.get_mut(item_key.as_slice()) {
                Some(taken) => delta.take_extremes(taken),
                None => {
                    let mut taken = Extremes::default();
                    delta.take_extremes(&mut taken);
                    self.0.insert(item_key.clone(), taken);
                }
            }
        }
    }
}

/// How many referring-domain and anchor rows items have, as the batches written so far
/// left them: what decides whether an item keeps ranked copies. A batch reads from the
/// store only the counters of items no earlier batch met (hosts and root domains come
/// back in nearly every batch: reading them was a quarter of the write thread's time).
/// Exact because a writer holds the store's write lock and notes every batch it writes;
/// emptied when it holds [`MEMBER_COUNTS_HELD`] items.
#[derive(Default)]
struct MemberCounts(HashMap<Vec<u8>, (i64, i64)>);

impl MemberCounts {
    fn get(&self, item_key: &[u8]) -> Option<Counters> {
        self.0.get(item_key).map(|&rows| member_rows(rows))
    }

    /// Drops what it holds of `items`, whose rows a batch settled without its deltas.
    fn forget(&mut self, items: &[Vec<u8>]) {
        for item_key in items {
            self.0.remove(item_key);
        }
    }

    /// Notes the batch just written: each item's rows before it (`stored`) plus its
    /// `deltas`.
    fn note(&mut self, stored: &HashMap<Vec<u8>, Counters>, deltas: &HashMap<Vec<u8>, Counters>) {
        if self.0.len() + stored.len() > MEMBER_COUNTS_HELD {
            self.0.clear();
        }
        for (item_key, before) in stored {
            let delta = deltas.get(item_key).copied().unwrap_or_default();
            let after = (
                before.ref_domains + delta.ref_domains,
                before.anchor_texts + delta.anchor_texts,
            );
            self.0.insert(item_key.clone(), after);
        }
    }
}

/// Counters holding only what a [`MemberCounts`] keeps: an item's referring-domain and
/// anchor row counts.
fn member_rows((ref_domains, anchor_texts): (i64, i64)) -> Counters {
    Counters {
        ref_domains,
        anchor_texts,
        ..Default::default()
    }
}

/// Item keys of the rows of `rows` that changed.
fn changed_items<T: MemberRow>(rows: &HashMap<Vec<u8>, Tracked<T>>) -> impl Iterator<Item = &[u8]> {
    rows.iter()
        .filter(|(_, t)| t.original.as_ref() != Some(&t.current))
        .map(|(key, t)| &key[..t.item_key_len])
}

/// A referring-domain or anchor-text row as the writer tracks it: kept in its table
/// under `item_key | member | 0`, with a ranked copy ordered by its counts when its item
/// has more than `RANKED_COPIES_ABOVE` rows ([`write_member_rows`]).
trait MemberRow: Ranked + Clone + PartialEq + 'static {
    type Key<'a>: BuiltKey<Value = Self>;
    type RankedKey<'a>: BuiltKey<Value = Self>;
    /// This batch's rows of the table.
    fn rows(b: &BatchRows) -> &HashMap<Vec<u8>, Tracked<Self>>;
    fn rows_mut(b: &mut BatchRows) -> &mut HashMap<Vec<u8>, Tracked<Self>>;
    /// A row not in the store yet.
    fn empty(member: &str) -> Self;
    fn key<'a>(item_key: &'a [u8], member: &'a str) -> Self::Key<'a>;
    fn ranked_key<'a>(&'a self, item_key: &'a [u8]) -> Self::RankedKey<'a>;
    /// Whether the row counts a link; at zero it and its ranked copy are removed.
    fn is_kept(&self) -> bool;
}

impl MemberRow for RefDomain {
    type Key<'a> = RefDomainKey<'a>;
    type RankedKey<'a> = RankedRefDomainKey<'a>;
    fn rows(b: &BatchRows) -> &HashMap<Vec<u8>, Tracked<Self>> {
        &b.refdomains
    }
    fn rows_mut(b: &mut BatchRows) -> &mut HashMap<Vec<u8>, Tracked<Self>> {
        &mut b.refdomains
    }
    fn empty(domain: &str) -> Self {
        RefDomain {
            domain: domain.to_string(),
            ..Default::default()
        }
    }
    fn key<'a>(item_key: &'a [u8], domain: &'a str) -> RefDomainKey<'a> {
        RefDomainKey { item_key, domain }
    }
    fn ranked_key<'a>(&'a self, item_key: &'a [u8]) -> RankedRefDomainKey<'a> {
        RankedRefDomainKey {
            item_key,
            row: self,
        }
    }
    fn is_kept(&self) -> bool {
        self.links > 0
    }
}

impl MemberRow for AnchorText {
    type Key<'a> = AnchorKey<'a>;
    type RankedKey<'a> = RankedAnchorKey<'a>;
    fn rows(b: &BatchRows) -> &HashMap<Vec<u8>, Tracked<Self>> {
        &b.anchors
    }
    fn rows_mut(b: &mut BatchRows) -> &mut HashMap<Vec<u8>, Tracked<Self>> {
        &mut b.anchors
    }
    fn empty(text: &str) -> Self {
        AnchorText {
            text: text.to_string(),
            ..Default::default()
        }
    }
    fn key<'a>(item_key: &'a [u8], text: &'a str) -> AnchorKey<'a> {
        AnchorKey { item_key, text }
    }
    fn ranked_key<'a>(&'a self, item_key: &'a [u8]) -> RankedAnchorKey<'a> {
        RankedAnchorKey {
            item_key,
            row: self,
        }
    }
    fn is_kept(&self) -> bool {
        self.links > 0
    }
}

/// The pending value of an aggregate row: prefetched with the other rows of its pending
/// contributions (`prefetch_tracked`), else loaded here on first touch, or started empty
/// when the store has none.
fn tracked<'m, T: MemberRow>(
    rows: &'m mut HashMap<Vec<u8>, Tracked<T>>,
    store: &Store,
    key: Vec<u8>,
    item_key_len: usize,
) -> Result<&'m mut T> {
    match rows.entry(key) {
        Entry::Occupied(e) => Ok(&mut e.into_mut().current),
        Entry::Vacant(e) => {
            let member = member_of_key(e.key(), item_key_len, 0, <T::Key<'_>>::CF)?;
            let original = store.row(&T::key(&e.key()[..item_key_len], member))?;
            let row = loaded(member, item_key_len, original);
            Ok(&mut e.insert(row).current)
        }
    }
}

/// Values of `keys` (sorted) in one multi-get, as last written.
fn multi_get<'s, 'k>(
    store: &'s Store,
    cf: &str,
    keys: impl IntoIterator<Item = &'k Vec<u8>>,
) -> Result<Vec<Option<rocksdb::DBPinnableSlice<'s>>>> {
    store
        .db
        .batched_multi_get_cf(store.cf(cf), keys, true)
        .into_iter()
        .map(|v| v.map_err(Into::into))
        .collect()
}

/// Loads aggregate rows (`(key, item-key length)`, keys ending in `member | 0`) missing
/// from `rows`, as [`tracked`] does one at a time.
fn prefetch_tracked<T: MemberRow>(
    rows: &mut HashMap<Vec<u8>, Tracked<T>>,
    store: &Store,
    mut wanted: Vec<(Vec<u8>, usize)>,
) -> Result<()> {
    wanted.sort_unstable();
    wanted.dedup_by(|a, b| a.0 == b.0);
    let cf = <T::Key<'_>>::CF;
    let values = multi_get(store, cf, wanted.iter().map(|(k, _)| k))?;
    for ((key, item_key_len), value) in wanted.into_iter().zip(values) {
        let row = {
            let member = member_of_key(&key, item_key_len, 0, cf)?;
            let typed = T::key(&key[..item_key_len], member);
            let original = value.map(|v| typed.decode_value(&v)).transpose()?;
            loaded(member, item_key_len, original)
        };
        rows.insert(key, row);
    }
    Ok(())
}

/// A row as loaded: its stored value, or empty when it has none.
fn loaded<T: MemberRow>(member: &str, item_key_len: usize, original: Option<T>) -> Tracked<T> {
    let current = original.clone().unwrap_or_else(|| T::empty(member));
    Tracked {
        item_key_len,
        original,
        current,
    }
}

/// Loads the rows of `wanted` that the batch in flight writes from its values, as the
/// store will hold them (a row it empties is deleted), and leaves the others in `wanted`
/// for the store: while the write is in flight the store may still hold the old rows.
fn take_written<T: MemberRow>(
    rows: &mut HashMap<Vec<u8>, Tracked<T>>,
    written: &HashMap<Vec<u8>, Tracked<T>>,
    wanted: &mut Vec<(Vec<u8>, usize)>,
) -> Result<()> {
    let mut left = Vec::with_capacity(wanted.len());
    for (key, item_key_len) in wanted.drain(..) {
        let Some(w) = written.get(&key) else {
            left.push((key, item_key_len));
            continue;
        };
        if rows.contains_key(&key) {
            continue;
        }
        let original = w.current.is_kept().then(|| w.current.clone());
        let row = loaded(w.current.member(), item_key_len, original);
        rows.insert(key, row);
    }
    *wanted = left;
    Ok(())
}

/// Writes the aggregate rows that changed, and their ranked copies where the item keeps
/// them ([`has_ranked_copies`] of its row count before and after the batch: `stored`
/// counters plus the batch's `deltas`). Within an item that keeps them, a ranked key that
/// changed is deleted (from the value as loaded) and the new one written, and one that
/// stayed is overwritten in place. An item that crosses the bound gets ranked copies of
/// all its rows, or loses them all, from a scan of its rows. Empty rows are removed; rows
/// loaded but left as they were are not written at all.
fn write_member_rows<T: MemberRow>(
    batch: &mut SortedBatch,
    rows: &HashMap<Vec<u8>, Tracked<T>>,
    deltas: &HashMap<Vec<u8>, Counters>,
    stored: &HashMap<Vec<u8>, Counters>,
    db: &rocksdb::DB,
) -> Result<()> {
    // Items that cross the bound, and whether upwards.
    let mut crossing: HashMap<&[u8], bool> = HashMap::default();
    for (key, t) in rows {
        if t.original.as_ref() == Some(&t.current) {
            continue;
        }
        let item_key = &key[..t.item_key_len];
        let (before, after) = member_rows_around::<T>(stored, deltas, item_key);
        let kept = t.current.is_kept();
        let row = T::key(item_key, t.current.member());
        if kept {
            batch.put(&row, &t.current);
        } else {
            batch.delete(&row);
        }
        match (has_ranked_copies(before), has_ranked_copies(after)) {
            (true, true) => {
                let ranked = t.current.ranked_key(item_key);
                if let Some(old) = &t.original {
                    let old = old.ranked_key(item_key);
                    if !kept || old.encode() != ranked.encode() {
                        batch.delete(&old);
                    }
                }
                if kept {
                    batch.put(&ranked, &t.current);
                }
            }
            (false, false) => {}
            (had, _) => {
                crossing.insert(item_key, !had);
            }
        }
    }
    if crossing.is_empty() {
        return Ok(());
    }
    let cf = cf_handle(db, T::TABLE);
    for (&item_key, &up) in &crossing {
        let mut opts = ReadOptions::default();
        if let Some(upper) = prefix_successor(item_key) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = db.raw_iterator_cf_opt(cf, opts);
        it.seek(item_key);
        while let Some((key, value)) = it.item() {
            let member = member_of_key(key, item_key.len(), 0, T::TABLE)?;
            let stored = <T as Ranked>::decode(member, value)?;
            // Rows this batch holds are written from its values below.
            if !up {
                batch.delete(&stored.ranked_key(item_key));
            } else if !rows.contains_key(key) {
                batch.put(&stored.ranked_key(item_key), &stored);
            }
            it.next();
        }
        it.status()?;
    }
    for (key, t) in rows {
        let item_key = &key[..t.item_key_len];
        if crossing.get(item_key) == Some(&true) && t.current.is_kept() {
            batch.put(&t.current.ranked_key(item_key), &t.current);
        }
    }
    Ok(())
}

/// An item's count of `T` rows before the batch (`stored` counters) and after it (plus the
/// batch's `deltas`): whether it keeps ranked copies of them before and after.
fn member_rows_around<T: MemberRow>(
    stored: &HashMap<Vec<u8>, Counters>,
    deltas: &HashMap<Vec<u8>, Counters>,
    item_key: &[u8],
) -> (i64, i64) {
    let rows_of =
        |counters: &HashMap<Vec<u8>, Counters>| counters.get(item_key).map_or(0, T::rows_of);
    let before = rows_of(stored);
    (before, before + rows_of(deltas))
}

/// Moves the "last seen" days of referring-domain rows that only links seen again touched
/// (`seen`; the batch holds none of them, and settles the views of none of their items:
/// those rows come from the items' records), read here in one multi-get: the row and, where
/// its item keeps ranked copies after the batch ([`write_member_rows`] has written those
/// of an item that crosses the bound, and deleted them for one that drops below), its
/// ranked copy, under the same key since its counts did not move.
fn write_seen_days<'s>(
    batch: &mut SortedBatch,
    seen: impl Iterator<Item = (&'s Vec<u8>, &'s (usize, u32))>,
    deltas: &HashMap<Vec<u8>, Counters>,
    stored: &HashMap<Vec<u8>, Counters>,
    db: &rocksdb::DB,
) -> Result<()> {
    let mut keys: Vec<(&Vec<u8>, usize, u32)> = seen
        .map(|(key, &(item_key_len, day))| (key, item_key_len, day))
        .collect();
    keys.sort_unstable();
    let cf = cf_handle(db, CF_REFDOMAINS);
    let values = db.batched_multi_get_cf(cf, keys.iter().map(|(key, ..)| key), true);
    for ((key, item_key_len, day), value) in keys.into_iter().zip(values) {
        // A row gone meanwhile has no link left to have been seen.
        let Some(value) = value? else { continue };
        let item_key = &key[..item_key_len];
        let domain = member_of_key(key, item_key_len, 0, CF_REFDOMAINS)?;
        let typed = RefDomain::key(item_key, domain);
        let mut row = typed.decode_value(&value)?;
        if row.last_seen >= day {
            continue;
        }
        row.last_seen = day;
        batch.put(&typed, &row);
        let (_, after) = member_rows_around::<RefDomain>(stored, deltas, item_key);
        if has_ranked_copies(after) {
            batch.put(&row.ranked_key(item_key), &row);
        }
    }
    Ok(())
}

/// Length of `item_key | 3 | domain \x01`, which starts the `distinct` keys of the
/// domain's anchor texts ([`anchor_text_key`]).
fn anchor_texts_prefix_len(item_key: &[u8], domain: &str) -> usize {
    item_key.len() + 1 + domain.len() + 1
}

/// The `distinct` key of one anchor text of an item's referring domain.
fn anchor_text_key(item_key: &[u8], domain: &str, text: &str) -> Vec<u8> {
    distinct_key(
        item_key,
        DistinctKind::AnchorDomain,
        &pair_member(domain, text),
    )
}

/// True when `new` differs from `old` only by a later LastSeenDate and more history:
/// every field that feeds a sum, a key or a distinct count is the same.
/// The record a link's `backlinks` URL row holds.
fn url_row_record(value: Option<&[u8]>) -> Result<LinkRecord> {
    match BacklinkRow::decode(value.ok_or_else(LinkRow::record_missing)?)? {
        BacklinkRow::Record(record) => record.decode(),
        BacklinkRow::Pointer => Err(LinkRow::record_missing()),
    }
}

fn only_seen_again(old: &LinkRecord, new: &LinkRecord) -> bool {
    old.flags == new.flags
        && old.kind == new.kind
        && old.anchor_text == new.anchor_text
        && old.source_ip == new.source_ip
        && old.first_seen == new.first_seen
        && old.date_lost == new.date_lost
        && old.source_flow == new.source_flow
        && old.last_seen <= new.last_seen
}

/// Trust and Citation Flow and topics of a URL from the serving flow build (0 before
/// any), cached in `flows` for the batch.
fn url_metrics(
    store: &Store,
    flows: &mut HashMap<String, UrlMetrics>,
    url: &str,
) -> Result<UrlMetrics> {
    if let Some(f) = flows.get(url) {
        return Ok(f.clone());
    }
    read_url_metrics(store, flows, std::iter::once(url))?;
    Ok(flows[url].clone())
}

/// Reads into `flows` the metrics of those of `urls` it lacks, in one batched read: a
/// crawl's link targets at once rather than one read each (a read view and a multi-get
/// per URL were 4.5% of the applying thread).
fn read_url_metrics<'u>(
    store: &Store,
    flows: &mut HashMap<String, UrlMetrics>,
    urls: impl IntoIterator<Item = &'u str>,
) -> Result<()> {
    let mut missing: Vec<&str> = urls
        .into_iter()
        .filter(|u| !flows.contains_key(*u))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort_unstable();
    missing.dedup();
    let items: Vec<Item> = missing.iter().map(|&url| Item::url(url)).collect();
    for (url, metrics) in missing.into_iter().zip(store.read().metrics_many(&items)?) {
        let f = metrics.map_or(UrlMetrics::default(), |m| UrlMetrics {
            flow: FlowPair {
                trust_flow: m.trust_flow,
                citation_flow: m.citation_flow,
            },
            topics: m.topics,
        });
        flows.insert(url.to_string(), f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{CrawlOutcome, OutLink};
    use crate::table::LINK_AT_TARGET;

    const DAY: i64 = 86_400;
    const T0: i64 = 1_735_689_600; // 2025-01-01

    fn crawl(url: &str, at: i64) -> PageCrawl {
        PageCrawl {
            url: url.into(),
            fetched_at: at,
            ip: None,
            outcome: CrawlOutcome::Html {
                links: vec![OutLink {
                    target: "http://t.com/".into(),
                    anchor_text: "t".into(),
                    ..Default::default()
                }],
            },
        }
    }

    /// A row loaded while the batch before is still being written takes the "last seen"
    /// day that batch only noted: the store does not hold it yet, and the loaded row is
    /// written after it. The write is held until the row is loaded, so this does not
    /// depend on timing.
    #[test]
    fn a_day_noted_by_the_batch_in_flight_reaches_a_row_loaded_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut w = store.writer().unwrap();
        w.apply(&crawl("http://s.org/a", T0)).unwrap();
        w.commit().unwrap();

        // Seen again ten days later: the day is only noted.
        w.apply(&crawl("http://s.org/a", T0 + 10 * DAY)).unwrap();
        let (open, held) = std::sync::mpsc::channel::<()>();
        w.commit_after(move || held.recv().unwrap()).unwrap();
        // A new link from the same domain, crawled earlier than that day, loads the row.
        w.apply(&crawl("http://s.org/b", T0 + 5 * DAY)).unwrap();
        w.apply_pending().unwrap();
        open.send(()).unwrap();
        w.commit().unwrap();
        drop(w);

        let view = store.read();
        for item in ["t.com", "http://t.com/"] {
            let row = view
                .ref_domain(&Item::parse(item).unwrap(), "s.org")
                .unwrap()
                .unwrap();
            assert_eq!(row.links, 2, "{item}");
            assert_eq!(row.last_seen, day_of(T0 + 10 * DAY), "{item}");
        }
    }

    /// An external link's record is its URL row; its `links` row keeps enough to rebuild
    /// it for a link seen again as it was, and a changed link's record is read back. A
    /// URL row gone missing is reported as corruption, not taken for a new link.
    #[test]
    fn an_external_link_is_kept_once_rebuilt_when_seen_again_and_read_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut w = store.writer().unwrap();
        w.apply(&crawl("http://s.org/a", T0)).unwrap();
        w.commit().unwrap();
        let link = link_key("http://s.org/a", "http://t.com/");
        let links_value = store.db.get_cf(store.cf(CF_LINKS), link).unwrap().unwrap();
        assert_eq!(links_value[0], LINK_AT_TARGET);
        let url_row = BacklinkKey::url_row_of(link, store.generation(), 0, &store.hasher);
        let stored_record = || {
            let value = store
                .db
                .get_cf(store.cf(CF_BACKLINKS), url_row.bytes())
                .unwrap();
            url_row_record(value.as_deref()).unwrap()
        };
        assert_eq!(stored_record().first_seen, day_of(T0));

        // Seen again as it was: the record is rebuilt from the `links` row, history kept.
        w.apply(&crawl("http://s.org/a", T0 + DAY)).unwrap();
        w.commit().unwrap();
        let rec = stored_record();
        assert_eq!(
            (rec.first_seen, rec.last_seen),
            (day_of(T0), day_of(T0 + DAY))
        );
        assert_eq!(rec.history.len(), 2);

        // Seen with another anchor text: the record is read from its URL row.
        let mut changed = crawl("http://s.org/a", T0 + 2 * DAY);
        let CrawlOutcome::Html { links } = &mut changed.outcome else {
            unreachable!()
        };
        links[0].anchor_text = "another".into();
        w.apply(&changed).unwrap();
        w.commit().unwrap();
        let rec = stored_record();
        assert_eq!(rec.anchor_text, "another");
        assert_eq!((rec.first_seen, rec.history.len()), (day_of(T0), 3));

        // A URL row gone missing: a changed link must read it, and says it is missing.
        store
            .db
            .delete_cf(store.cf(CF_BACKLINKS), url_row.bytes())
            .unwrap();
        let err = w.apply(&crawl("http://s.org/a", T0 + 3 * DAY)).unwrap_err();
        assert!(err.to_string().contains("URL row is missing"), "{err}");
    }

    #[test]
    fn a_batch_orders_by_table_then_whole_key_and_keeps_write_order_within_a_key() {
        let mut b = SortedBatch::default();
        // Keys tying on the 11 bytes the words hold (written in reverse order), shorter
        // than that, and a prefix of another once zero-padded; one key written twice;
        // tables out of order.
        let writes: [(Table, &[u8]); 10] = [
            (Table::Counters, b"item0001b"),
            (Table::Counters, b"item0001a"),
            (Table::Counters, b"item0001abcz"),
            (Table::Counters, b"item0001abcy"),
            (Table::Links, b"zz"),
            (Table::Counters, b"ab\0"),
            (Table::Counters, b"ab"),
            (Table::Counters, b"item0001a"),
            (Table::Counters, b"item0001"),
            (Table::Links, b"aa"),
        ];
        for (i, (table, key)) in writes.iter().enumerate() {
            b.push(*table, key.to_vec(), Op::Put(vec![i as u8]));
        }
        let got: Vec<(Table, &[u8], u8)> = b
            .order()
            .into_iter()
            .map(|i| {
                let (table, key, op) = &b.ops[i as usize];
                let Op::Put(v) = op else { unreachable!() };
                (*table, key.as_slice(), v[0])
            })
            .collect();
        let mut want: Vec<(Table, &[u8], u8)> = writes
            .iter()
            .enumerate()
            .map(|(i, (t, k))| (*t, *k, i as u8))
            .collect();
        want.sort_by(|a, b| (a.0 as u8, a.1).cmp(&(b.0 as u8, b.1)));
        assert_eq!(got, want);
        assert_eq!(
            b.bytes,
            writes.iter().map(|(_, k)| k.len() + 1).sum::<usize>()
        );
    }
}
