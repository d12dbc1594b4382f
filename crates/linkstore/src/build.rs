//! The store's side of a bulk build: rows by table, for a builder that knows no layouts.
//!
//! A bulk build fills an empty store without reading it. It replays each page's crawls in
//! time order ([`PageRows`]), which yields the page's final link records and the `links`
//! and `pages` rows, plus every record's contributions to the views, summed per row
//! (`ContributionSum`) and encoded as rows of their tables. The builder sorts those rows
//! by (partition hash, table, key) and hands each group of equal keys to a [`Reducer`],
//! which emits final rows and the rows they feed in later tables ([`ReduceOut`]).
//!
//! In the first stage ([`Table::stage`]) an item's backlinks, and the distinct members its
//! pages contributed, come together (they share the item's hash). Their contributions are
//! summed in memory, and when they fit the budget the item's every view row is worked out
//! there (`item_rows`): most items never reach a later stage. A larger item's partial
//! sums are fed to the later stages, sorted and reduced table by table (a distinct member
//! feeds its item's counters, a referring domain its ranked copy), so every row a table
//! receives exists before it is reduced; the builder cuts its files around such an item
//! ([`ReduceOut::cut`]). Finished rows go into SST files ([`TableFileWriter`]) that
//! [`Store::ingest_table_files`](crate::Store::ingest_table_files) adds.
//!
//! Every key starts with a 64-bit hash (of the page, the URL or the item), and a row a
//! reduction feeds in a later table (other than `counters` fed by `urls`) starts with the
//! same hash as the row that feeds it: a builder that partitions rows by ranges of their
//! first 8 bytes reduces every group in one partition and writes SST files whose key
//! ranges never overlap.

use crate::aggregate::{
    accumulate, has_ranked_copies, snapshot_ranked_copies, AnchorText, Counters, RefDomain,
    RowAnchors, TimelineDelta, ANCHORS_IN_ROW, SNAPSHOT_SORTED_ROWS_MAX,
};
use crate::crawl::{crawl_order, crawl_status, newer_crawl, next_state, CrawlOrder, UrlMetrics};
use crate::error::{Error, Result};
use crate::item::{url_levels, Item, Level};
use crate::keys::{url_hash, url_key, DistinctKind, ItemHasher};
use crate::page::{day_of, PageCrawl, PageState};
use crate::record::{BacklinkFacts, LinkRecord};
use crate::small_item::keeps_member_rows;
use crate::source_row::SourceRow;
use crate::store::{bottom_file_options, flow_backlink_file_options, has_dictionary};
use crate::table::{
    row, AnchorKey, BacklinkKey, BuiltKey, Count, CountersKey, DistinctKey, Empty, ExpiryPageKey,
    FlowTargets, LinkKey, LinkRow, PageKey, RankedAnchorKey, RankedRefDomainKey, RefDomainKey,
    SnapshotPage, SnapshotPageKey, SnapshotRefDomainKey, SourceKey, TableKey, TimelineKey,
    UrlRefKey,
};
use crate::views::{
    distinct_counters, link_contributions, out_domain_counters, page_out_domains,
    ref_domain_counters, split_anchor_member, subnet_of_member, target_contributions, Contribution,
    ViewFacts,
};
use crate::writer::ApplyStats;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod contribution_sum;
pub(crate) mod facts_row;
mod host_urls;
pub(crate) mod item_rows;
mod linked_hosts;
pub(crate) use contribution_sum::ContributionSum;
use host_urls::HostUrls;
use item_rows::{item_rows, MemberRows, Row};
use linked_hosts::LinkedHosts;

/// A column family a bulk build writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Links = 0,
    Pages = 1,
    Distinct = 2,
    RefDomains = 3,
    Urls = 4,
    Timeline = 5,
    Backlinks = 6,
    Anchors = 7,
    RefDomainsRanked = 8,
    AnchorsRanked = 9,
    Counters = 10,
    Expiry = 11,
    Sources = 12,
}

impl Table {
    pub const ALL: [Table; 13] = [
        Table::Links,
        Table::Pages,
        Table::Distinct,
        Table::RefDomains,
        Table::Urls,
        Table::Timeline,
        Table::Backlinks,
        Table::Anchors,
        Table::RefDomainsRanked,
        Table::AnchorsRanked,
        Table::Counters,
        Table::Expiry,
        Table::Sources,
    ];

    pub fn from_u8(b: u8) -> Option<Table> {
        Table::ALL.get(usize::from(b)).copied()
    }

    pub const fn cf_name(self) -> &'static str {
        use crate::store::*;
        match self {
            Table::Links => CF_LINKS,
            Table::Pages => CF_PAGES,
            Table::Distinct => CF_DISTINCT,
            Table::RefDomains => CF_REFDOMAINS,
            Table::Urls => CF_URLS,
            Table::Timeline => CF_TIMELINE,
            Table::Backlinks => CF_BACKLINKS,
            Table::Anchors => CF_ANCHORS,
            Table::RefDomainsRanked => CF_REFDOMAINS_RANKED,
            Table::AnchorsRanked => CF_ANCHORS_RANKED,
            Table::Counters => CF_COUNTERS,
            Table::Expiry => CF_EXPIRY,
            Table::Sources => CF_SOURCES,
        }
    }

    /// The 64-bit hash a row is partitioned by: the key's first 8 bytes (a page, URL or
    /// item hash), after the generation byte for backlinks and sources, zero-padded.
    /// [`Table::sort_words`] relies on its being the key's own bytes. `expiry` keys
    /// start with a kind byte and a day, so one partition holds them all (one row per
    /// page and per deleted link: a small table).
    pub fn partition_hash(self, key: &[u8]) -> u64 {
        let start = self.partition_start();
        let mut h = [0u8; 8];
        let bytes = key.get(start..).unwrap_or_default();
        let n = bytes.len().min(8);
        h[..n].copy_from_slice(&bytes[..n]);
        u64::from_be_bytes(h)
    }

    /// Where the partition hash starts in a key: after the generation byte for
    /// backlinks and sources, else at its first byte.
    fn partition_start(self) -> usize {
        usize::from(matches!(self, Table::Backlinks | Table::Sources))
    }

    /// Two words that order a row of this table among a sorter's rows as its
    /// `(partition hash, table, key)` does whenever they differ: the partition hash, then
    /// the table byte, the generation byte of a backlink or source key and the key's
    /// first bytes past the hash, zero-padded. Rows of one item share the hash; the
    /// second word tells most of them apart without their keys.
    ///
    /// Why differing words order as the keys do: equal partition hashes mean the
    /// key's hash bytes are equal up to zero padding, and a key whose hash bytes are cut
    /// short has no bytes past them, so it is a byte prefix of the other key (or both are
    /// equal up to padding). The second word then holds the bytes that still decide,
    /// in key order, zero-padded: padding ties only where a key ended, which the whole
    /// key settles. This holds because the partition hash is the key's own bytes
    /// ([`Table::partition_hash`]).
    pub fn sort_words(self, key: &[u8]) -> (u64, u64) {
        let start = self.partition_start();
        let mut next = [0u8; 8];
        next[0] = self as u8;
        let generation = &key[..start.min(key.len())];
        next[1..1 + generation.len()].copy_from_slice(generation);
        let head = 1 + generation.len();
        let rest = key.get(start + 8..).unwrap_or_default();
        let n = rest.len().min(8 - head);
        next[head..head + n].copy_from_slice(&rest[..n]);
        (self.partition_hash(key), u64::from_be_bytes(next))
    }

    /// When the table's rows are final: 0, as [`PageRows`] emits them; later stages once
    /// every table of a lower stage is reduced (their reductions feed this one).
    /// Backlink rows come first: reducing one yields the link's share of its target
    /// item's views, which arrive item by item, so the reducer sums them cheaply (and
    /// finishes the item there when its sums fit in memory).
    pub fn stage(self) -> u8 {
        match self {
            Table::Links | Table::Pages | Table::Sources => 0,
            Table::Backlinks | Table::Urls | Table::Expiry => 1,
            // A referring-domain row takes its anchor texts from the `distinct` rows.
            Table::Distinct | Table::Timeline => 2,
            Table::Anchors | Table::RefDomains => 3,
            Table::RefDomainsRanked | Table::AnchorsRanked => 4,
            Table::Counters => 5,
        }
    }
}

/// The `pages` key of a page (`url_hash | url`): groups a page's crawls in a build.
fn page_key(url: &str) -> Vec<u8> {
    url_key(url)
}

/// Bytes a crawl's sort key adds after its page key: the fetch time and a hash.
pub const CRAWL_SORT_SUFFIX: usize = 16;

/// Sort key of one crawl (`encoded`: the crawl as [`PageCrawl::encode`] wrote it): its
/// page key, then its fetch time (sign bit flipped, so byte order is time order), then a
/// hash of the crawl. Sorted, a page's crawls come together in the order
/// [`PageRows::page`] replays them, crawls at the same second in an order set by their
/// content alone.
pub fn crawl_sort_key(crawl: &PageCrawl, encoded: &[u8]) -> Vec<u8> {
    let mut key = page_key(&crawl.url);
    key.extend_from_slice(&((crawl.fetched_at as u64) ^ (1 << 63)).to_be_bytes());
    key.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(encoded).to_be_bytes());
    key
}

/// Receives rows: `(table, key, value)`.
pub type Emit<'a> = dyn FnMut(Table, Vec<u8>, Vec<u8>) + 'a;

/// What replaying the crawls of pages did, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageReport {
    /// Crawls applied (first, newer or older than the last applied).
    pub crawls_applied: u64,
    /// Crawls at a fetch time already applied, or that said nothing (5xx).
    pub crawls_skipped: u64,
    pub pages: u64,
    pub links: u64,
    pub stats: ApplyStats,
}

/// Replays pages' crawls into rows (see the module documentation).
pub struct PageRows {
    hasher: ItemHasher,
    contributions: Vec<Contribution>,
    sum: ContributionSum,
    pub report: PageReport,
    /// Whether external links' `links` rows are emitted ([`Reducer::new`]).
    writer_rows: bool,
    /// Whether a link's host and root-domain `backlinks` rows name its source URL
    /// ([`PageRows::new`]).
    source_urls: bool,
}

impl PageRows {
    /// `hash_bits`: as the store was created with ([`Store::hash_bits`](crate::Store::hash_bits));
    /// `writer_rows` as for [`Reducer::new`]. A link's host and root-domain `backlinks`
    /// rows carry what their views need ([`facts_row`]), with `source_urls` also its
    /// source URL, by which a flow build re-keys the rows a builder keeps for it.
    pub fn new(hash_bits: u8, writer_rows: bool, source_urls: bool) -> PageRows {
        PageRows {
            hasher: ItemHasher::new(hash_bits),
            contributions: Vec::new(),
            sum: ContributionSum::default(),
            report: PageReport::default(),
            writer_rows,
            source_urls,
        }
    }

    /// Replays every crawl of one page, read one at a time from `crawls` (all with its
    /// URL, in fetch-time order: [`crawl_sort_key`] order), as the incremental writer
    /// applies them when they arrive in that order, and emits the page's rows: its `links`
    /// rows in key order, its `pages` row, and the contributions of its final records and
    /// of the page itself. Of crawls at the same second the first applied wins; their
    /// order is set by their content, so the result does not depend on the input's order.
    /// Memory holds the page's link set, not its crawls.
    pub fn page(
        &mut self,
        crawls: &mut dyn FnMut() -> Result<Option<PageCrawl>>,
        emit: &mut Emit<'_>,
    ) -> Result<()> {
        let mut url = None;
        let mut state: Option<PageState> = None;
        let mut links: BTreeMap<String, LinkRecord> = BTreeMap::new();
        while let Some(crawl) = crawls()? {
            let url = url.get_or_insert_with(|| crawl.url.clone());
            if crawl.url != *url {
                return Err(Error::corrupt("pages", "crawls of two pages in one group"));
            }
            let crawl = &crawl;
            let Some(status) = crawl_status(crawl) else {
                self.report.crawls_skipped += 1;
                continue;
            };
            match crawl_order(state, crawl.fetched_at) {
                CrawlOrder::Same => {
                    self.report.crawls_skipped += 1;
                    continue;
                }
                CrawlOrder::Older => {
                    return Err(Error::corrupt("pages", "crawls out of time order"));
                }
                CrawlOrder::First | CrawlOrder::Newer => {}
            }
            self.report.crawls_applied += 1;
            let changes = newer_crawl(
                crawl,
                &mut links,
                &UrlMetrics::default(),
                &mut |targets| Ok(vec![UrlMetrics::default(); targets.len()]),
                &mut self.report.stats,
            )?;
            for (_, new) in changes {
                links.insert(new.target_url.clone(), new);
            }
            state = Some(next_state(state, crawl, status));
        }
        let (Some(state), Some(url)) = (state, url) else {
            return Ok(());
        };
        self.report.pages += 1;
        self.report.links += links.len() as u64;

        let mut records: Vec<LinkRecord> = links.into_values().collect();
        records.sort_by_key(|r| url_hash(&r.target_url));
        // An external link's `links` row only helps the incremental writer re-crawl the
        // page (its record is in `backlinks`), and only flow builds read a snapshot's
        // internal links: its page row keeps the targets of those that carry flow.
        if self.writer_rows {
            for rec in &records {
                let key = LinkKey {
                    source: &rec.source_url,
                    target: &rec.target_url,
                };
                emit_row(emit, &key, &LinkRow::of(rec));
            }
            emit_row(emit, &PageKey(&url), &state);
        } else {
            let page = SnapshotPage {
                state,
                flow_targets: FlowTargets::of(&records),
            };
            emit_row(emit, &SnapshotPageKey(&url), &page);
        }
        // A snapshot's records leave their source fields to the page's source row where
        // they equal it (a flow build tells them apart).
        if !self.writer_rows {
            if let Some(row) = shared_source(&records) {
                // A bulk build's rows are generation 0's, as its backlink rows are.
                let key = SourceKey {
                    generation: 0,
                    source: url_hash(&url),
                };
                emit_row(emit, &key, &row);
            }
        }
        let day = day_of(state.last_fetch);
        // Only the incremental writer's window expiry reads `expiry`: a snapshot never
        // expires.
        if self.writer_rows {
            emit_row(emit, &ExpiryPageKey { day, url: &url }, &Empty);
        }
        emit_row(emit, &UrlRefKey(&url), &Count(1));
        let crawled = Counters {
            crawled_urls: 1,
            last_crawl_day: i64::from(day),
            ..Default::default()
        };
        for key in self.hasher.url_item_keys(&url, true) {
            emit_row(emit, &CountersKey(&key), &crawled);
        }
        let out_domains = page_out_domains(&records);
        if out_domains > 0 {
            let delta = Counters {
                out_domains_external: out_domains,
                ..Default::default()
            };
            let key = self.hasher.item_key(&Item::url(url.clone()));
            emit_row(emit, &CountersKey(&key), &delta);
        }
        for rec in &records {
            emit_row(emit, &UrlRefKey(&rec.target_url), &Count(1));
            self.contributions.clear();
            let facts = (!rec.is_internal()).then(|| ViewFacts::of(&rec.backlink_facts()));
            let hasher = &self.hasher;
            link_contributions(rec, facts.as_ref(), 1, hasher, 0, &mut self.contributions);
            let levels = url_levels(&rec.target_url);
            if facts.is_some() {
                // A root domain with one linked host reads that host's views.
                let [_, (_, host), (domain_level, domain)] = levels;
                self.contributions.push(Contribution::Distinct {
                    item_key: hasher.key_of(domain_level, domain),
                    kind: DistinctKind::LinkedHost,
                    member: host.to_string(),
                    sign: 1,
                });
            }
            let source_url = self.source_urls.then_some(rec.source_url.as_str());
            for c in self.contributions.drain(..) {
                match (c, &facts) {
                    (Contribution::Backlink { key, .. }, Some(facts))
                        if !key.is_url_row(hasher) =>
                    {
                        // The host's or root domain's row (or both's, when their hashes
                        // are equal): what their views need.
                        let (items, n) = levels_of_hash(levels, key.item_hash, hasher);
                        let mut value = Vec::with_capacity(64);
                        facts_row::encode(&items[..n], facts, source_url, &mut value);
                        emit(Table::Backlinks, key.encode(), value);
                    }
                    (Contribution::Expiry { .. }, _) if !self.writer_rows => {}
                    (c, _) => self.sum.add(c, emit),
                }
            }
        }
        self.sum.flush(emit);
        Ok(())
    }
}

/// The source fields most of a page's backlink records hold, if it has any: of its live
/// ones when it has some (its last crawl wrote them all), the first met in the records'
/// order of those held by as many. Records written by one crawl share them.
fn shared_source(records: &[LinkRecord]) -> Option<SourceRow> {
    let external = || records.iter().filter(|r| !r.is_internal());
    let live = external().any(|r| !r.is_deleted());
    let mut held: Vec<(SourceRow, usize)> = Vec::new();
    for rec in external().filter(|r| !live || !r.is_deleted()) {
        match held
            .iter_mut()
            .find(|(row, _)| row.ip == rec.source_ip && row.out == rec.source_out)
        {
            Some((_, n)) => *n += 1,
            None => held.push((SourceRow::of(rec), 1)),
        }
    }
    let most = held.iter().map(|(_, n)| *n).max()?;
    held.into_iter()
        .find(|(_, n)| *n == most)
        .map(|(row, _)| row)
}

/// The first `n` of the returned levels are those of `levels` (a URL's, as
/// [`url_levels`] gives them) whose item hash is `item_hash`: the items one backlink row
/// stands for (more than one when their hashes are equal, as with forced collisions).
fn levels_of_hash<'u>(
    levels: [(Level, &'u str); 3],
    item_hash: u64,
    hasher: &ItemHasher,
) -> ([(Level, &'u str); 3], usize) {
    let mut items = levels;
    let mut n = 0;
    for (level, name) in levels {
        if hasher.hash(level, name) == item_hash {
            items[n] = (level, name);
            n += 1;
        }
    }
    (items, n)
}

/// Emits a row of a typed key and value.
fn emit_row<K: BuiltKey>(emit: &mut Emit<'_>, key: &K, value: &K::Value) {
    let (table, key, value) = row(key, value);
    emit(table, key, value);
}

/// The values of one group, read one at a time: a group can hold more values than fit
/// in memory (a sorter streams them from its runs).
pub trait Values {
    fn next_value(&mut self) -> Option<&[u8]>;
}

/// Where a reduction's rows go.
pub trait ReduceOut {
    /// A final row. Each table's final rows come in strictly increasing key order within
    /// a stage, and their files never overlap (see [`ReduceOut::cut`]).
    fn row(&mut self, table: Table, key: &[u8], value: &[u8]);
    /// A final `backlinks` row: its `value` as the views sorter held it, the whole record
    /// (a URL row) or a [`facts_row`] (a host's or root domain's, naming the link's
    /// source URL when rows are kept), and whether the row is its target URL's, the one
    /// that keeps the record in a store ([`stored_backlink`]). Rows kept for a flow build
    /// to re-key need the record or source URL; the store takes the pointer.
    fn backlink(&mut self, key: &[u8], value: &[u8], is_url_row: bool) {
        self.row(Table::Backlinks, key, stored_backlink(value, is_url_row));
    }
    /// A row that a later stage reduces (counters: the counters' own reduction).
    fn feed(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>);
    /// Later-stage tables' final rows resume past a gap that a later stage fills (an
    /// item reduced stage by stage): their open files must end here.
    fn cut(&mut self);
}

/// Where a reduced `backlinks` row goes.
enum BacklinkRow {
    /// To the store; `at_url`: the row is its target URL's, which keeps the record.
    /// `left_with`: the host of the group ([`HostUrls::note`]) whose reading its URLs'
    /// rows would leave the row out, if its other items do without it.
    Written {
        at_url: bool,
        left_with: Option<usize>,
    },
    /// Nowhere: a root domain's row, the domain reading its linked hosts' rows.
    Left,
}

/// What a store keeps of a `backlinks` row that a build's views sorter held as `value`:
/// the record in the link's URL row, a pointer in the others (`docs/format.md`,
/// "`backlinks`").
pub fn stored_backlink(value: &[u8], is_url_row: bool) -> &[u8] {
    if is_url_row {
        value
    } else {
        &crate::table::POINTER
    }
}

/// What the reducer sums across groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Summing {
    /// The items of one partition hash, while backlinks are reduced: their backlinks'
    /// views and the distinct members their pages contributed.
    Items(u64),
    /// What the groups of one table and partition hash feed (later stages).
    Feeds(Table, u64),
}

/// Reduces groups of equal keys into final rows (see the module documentation).
pub struct Reducer {
    hasher: ItemHasher,
    /// See [`Summing`].
    sum: ContributionSum,
    summing: Option<Summing>,
    /// The stage whose groups are being reduced ([`Reducer::start_stage`]).
    stage: u8,
    /// Final rows of the items just summed whole, before they are put in key order.
    item_rows: Vec<Row>,
    ranked_ref_domains: RankedCopies,
    ranked_anchors: RankedCopies,
    /// `item_key | kind | subnet` of the last referring address reduced.
    last_subnet: Vec<u8>,
    anchor_run: AnchorRun,
    /// Whether `distinct` rows that only the incremental writer reads are written
    /// (`Reducer::new`).
    writer_rows: bool,
    /// Root domains that read their one linked host's views.
    linked_hosts: LinkedHosts,
    /// Hosts that read their URLs' backlink rows (snapshots).
    host_urls: HostUrls,
}

/// One referring domain's anchor texts as they are reduced (`distinct` kind 3 rows,
/// `domain \x01 anchor`, sort together): held until the domain's last, then given to
/// its referring-domain row, or written as `distinct` rows once there are more than
/// [`ANCHORS_IN_ROW`], the row then keeping only their number. Not in a snapshot, whose
/// rows keep no texts.
#[derive(Default)]
struct AnchorRun {
    /// `item_key | 3 | domain \x01`; empty while no run is open.
    prefix: Vec<u8>,
    item_key_len: usize,
    domain: String,
    /// Each text's `distinct` key, text and count, while there are at most the bound.
    held: Vec<(Vec<u8>, String, i64)>,
    /// Texts past the bound: written as `distinct` rows (in a snapshot only counted).
    written: i64,
}

impl AnchorRun {
    /// The next anchor text (of `domain`) of an item, with its count; past the bound its
    /// `distinct` row is written if `write` (not for a root domain reading its one linked
    /// host's views).
    fn add(
        &mut self,
        key: &DistinctKey<'_>,
        domain: &str,
        n: i64,
        write: bool,
        out: &mut dyn ReduceOut,
    ) {
        let raw = key.encode();
        let prefix_len = key.item_key.len() + 1 + domain.len() + 1;
        if raw[..prefix_len] != self.prefix[..] {
            self.end(out);
            self.prefix.extend_from_slice(&raw[..prefix_len]);
            self.item_key_len = key.item_key.len();
            self.domain.push_str(domain);
        }
        if self.written > 0 {
            if write {
                out.row(Table::Distinct, &raw, &Count(n).encode());
            }
            self.written += 1;
            return;
        }
        let text = key.member[domain.len() + 1..].to_string();
        self.held.push((raw, text, n));
        if self.held.len() as i64 > ANCHORS_IN_ROW {
            for (raw, _, n) in self.held.drain(..) {
                if write {
                    out.row(Table::Distinct, &raw, &Count(n).encode());
                }
                self.written += 1;
            }
        }
    }

    /// Ends the open run: feeds its referring-domain row the texts, or their number.
    fn end(&mut self, out: &mut dyn ReduceOut) {
        if self.prefix.is_empty() {
            return;
        }
        let anchors = if self.written > 0 {
            RowAnchors {
                texts: self.written,
                counts: Vec::new(),
            }
        } else {
            RowAnchors {
                texts: self.held.len() as i64,
                counts: self.held.drain(..).map(|(_, text, n)| (text, n)).collect(),
            }
        };
        let share = RefDomain {
            anchors,
            ..Default::default()
        };
        let key = RefDomainKey {
            item_key: &self.prefix[..self.item_key_len],
            domain: &self.domain,
        };
        let (t, k, v) = row(&key, &share);
        out.feed(t, k, v);
        self.prefix.clear();
        self.domain.clear();
        self.held.clear();
        self.written = 0;
    }
}

/// The ranked copies of one item's referring-domain or anchor rows, held back until the
/// item has more than [`RANKED_COPIES_ABOVE`](crate::aggregate::RANKED_COPIES_ABOVE)
/// rows: a smaller item keeps none. A snapshot's referring domains (`first_only`) are
/// held until the item ends, then its [`snapshot_ranked_copies`] first in rank order
/// are kept, unless the item has more than [`SNAPSHOT_SORTED_ROWS_MAX`] rows and keeps
/// every copy: so at most that many copies are held.
#[derive(Default)]
struct RankedCopies {
    item_key: Vec<u8>,
    rows: i64,
    /// `(table, ranked key, value)`: a ranked key's bytes sort in rank order.
    held: Vec<Row>,
    first_only: bool,
}

impl RankedCopies {
    fn new(first_only: bool) -> RankedCopies {
        RankedCopies {
            first_only,
            ..Default::default()
        }
    }

    /// The next row of the table (rows come item by item): emits its ranked copy, and
    /// those held, once its item turns out to keep every copy, or holds it.
    fn add<K: BuiltKey>(
        &mut self,
        item_key: &[u8],
        ranked: &K,
        value: &K::Value,
        emit: &mut Emit<'_>,
    ) {
        if self.item_key != item_key {
            self.end(emit);
            self.item_key.extend_from_slice(item_key);
        }
        self.rows += 1;
        self.held.push(row(ranked, value));
        let every_copy = match self.first_only {
            false => has_ranked_copies(self.rows),
            true => self.rows as usize > SNAPSHOT_SORTED_ROWS_MAX,
        };
        if every_copy {
            for (table, key, value) in self.held.drain(..) {
                emit(table, key, value);
            }
        }
    }

    /// Ends the item: emits the first copies it holds if it turned out large.
    fn end(&mut self, emit: &mut Emit<'_>) {
        if self.first_only && has_ranked_copies(self.rows) {
            let limit = snapshot_ranked_copies(self.held.len());
            if self.held.len() > limit {
                self.held
                    .select_nth_unstable_by(limit, |a, b| a.1.cmp(&b.1));
                self.held.truncate(limit);
            }
            for (table, key, value) in self.held.drain(..) {
                emit(table, key, value);
            }
        }
        self.item_key.clear();
        self.rows = 0;
        self.held.clear();
    }
}

impl Reducer {
    /// `item_budget`: about how many bytes of members an item's sums may hold before the
    /// item is reduced stage by stage instead of in memory. Without `writer_rows` the
    /// rows only the incremental writer reads (`urls`, `expiry`, writer-only `distinct`
    /// kinds) are counted but not written (a snapshot store,
    /// [`crate::Store::mark_snapshot`]).
    pub fn new(hash_bits: u8, item_budget: usize, writer_rows: bool) -> Reducer {
        Reducer {
            hasher: ItemHasher::new(hash_bits),
            sum: ContributionSum::with_budget(item_budget),
            summing: None,
            stage: 0,
            item_rows: Vec::new(),
            ranked_ref_domains: RankedCopies::new(!writer_rows),
            ranked_anchors: RankedCopies::default(),
            last_subnet: Vec::new(),
            anchor_run: AnchorRun::default(),
            writer_rows,
            linked_hosts: LinkedHosts::new(!writer_rows),
            host_urls: HostUrls::new(!writer_rows),
        }
    }

    /// The groups that follow are of `stage` ([`Table::stage`]). In the backlinks' stage
    /// the distinct rows there are pages' contributions, summed with the backlinks of
    /// their item; in later stages they are partial sums of items reduced stage by stage.
    pub fn start_stage(&mut self, stage: u8) {
        self.stage = stage;
    }

    /// Emits what the last groups' contributions still hold: call after the last group of
    /// a sorter, before its fed rows are sorted.
    pub fn finish(&mut self, out: &mut dyn ReduceOut) {
        self.anchor_run.end(out);
        let fed = &mut |t, k, v| out.feed(t, k, v);
        self.ranked_ref_domains.end(fed);
        self.ranked_anchors.end(fed);
        let items = matches!(self.summing.take(), Some(Summing::Items(_)));
        let whole = self.sum.take_whole();
        let named_urls = self.host_urls.end_group(&self.hasher, out);
        if !(items && whole) {
            // The items' `distinct` rows are reduced in a later stage.
            for (t, k, v) in named_urls {
                out.feed(t, k, v);
            }
            self.sum.flush(&mut |t, k, v| out.feed(t, k, v));
            if items {
                self.linked_hosts.end_group(false);
                // The items' rows come from later stages, between this stage's files.
                out.cut();
            }
            return;
        }
        let (hasher, rows) = (&self.hasher, &mut self.item_rows);
        rows.extend(named_urls);
        let (writer_rows, linked_hosts) = (self.writer_rows, &self.linked_hosts);
        self.sum.drain_items(&mut |item| {
            let backlinks = item.counters.map_or(0, |c| c.ext_backlinks);
            let keep = MemberRows {
                members: keeps_member_rows(&item.key, backlinks),
                writer_rows,
                alias: linked_hosts.alias(&item.key),
            };
            item_rows(item, hasher, keep, rows, &mut |(t, k, v)| out.feed(t, k, v));
        });
        self.linked_hosts.end_group(true);
        // Items that share a partition hash (forced collisions) interleave.
        rows.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        for (t, k, v) in rows.drain(..) {
            out.row(t, &k, &v);
        }
    }

    /// A backlink row's share of its target item's views: the target contributions of
    /// its record (or [`facts_row`]) for each level of the target URL the key's item hash
    /// stands for (two levels share one row when their hashes are equal, as with forced
    /// collisions). Returns where the row goes.
    fn backlink_views(
        &mut self,
        key: &[u8],
        value: &[u8],
        emit: &mut Emit<'_>,
    ) -> Result<BacklinkRow> {
        let key = BacklinkKey::parse(key)?;
        // The levels of the target the row stands for.
        let (facts, (items, n)) = if facts_row::is_facts_row(value) {
            // A host's or root domain's row: its items named.
            let row = facts_row::FactsRow::read(value)?;
            let mut items = [(Level::RootDomain, ""); 3];
            let n = row.items().len();
            items[..n].copy_from_slice(row.items());
            (row.facts, (items, n))
        } else {
            let rec = BacklinkFacts::read(value)?;
            let levels = url_levels(rec.target_url);
            (
                ViewFacts::of(&rec),
                levels_of_hash(levels, key.item_hash, &self.hasher),
            )
        };
        let items = &items[..n];
        debug_assert!(items
            .iter()
            .all(|&(level, name)| self.hasher.hash(level, name) == key.item_hash));
        let url_row = key.url_row(&self.hasher);
        let at_url = url_row == key;
        // The row's host, if it stands for one, and whether its root domain, if it stands
        // for one, reads its hosts' backlink rows.
        let (mut host, mut domain_reads_hosts) = (None, None);
        for &(level, name) in items {
            match level {
                Level::SubDomain => host = self.host_urls.note(name, url_row.item_hash),
                Level::RootDomain => {
                    let alias = self.linked_hosts.alias(&self.hasher.key_of(level, name));
                    domain_reads_hosts = Some(alias.is_some());
                }
                Level::Url | Level::Index => {}
            }
        }
        // A row of the root domain alone, which reads its hosts' rows, is left out; a
        // host's may be, unless its root domain keeps its own rows.
        let at_hosts = items.len() == 1 && domain_reads_hosts == Some(true);
        let left_with = host.filter(|_| domain_reads_hosts != Some(false));
        let items = items.iter().copied();
        target_contributions(&facts, 1, items, &self.hasher, &mut self.sum);
        self.sum.flush_if_full(emit);
        Ok(if at_hosts {
            BacklinkRow::Left
        } else {
            BacklinkRow::Written { at_url, left_with }
        })
    }

    /// Which of the item's member rows are written, once its sums were flushed (reduced
    /// stage by stage).
    fn staged_member_rows(&self, item_key: &[u8]) -> MemberRows {
        MemberRows {
            members: self.sum.keeps_member_rows(item_key),
            writer_rows: self.writer_rows,
            alias: self.linked_hosts.alias(item_key),
        }
    }

    /// Whether the item's referring-domain and anchor rows are written, once its sums
    /// were flushed (reduced stage by stage).
    fn writes_views(&self, item_key: &[u8]) -> bool {
        self.staged_member_rows(item_key).views()
    }

    /// What the reducer sums across groups up to `table`'s group of `key`.
    fn summing_for(&self, table: Table, key: &[u8]) -> Option<Summing> {
        let hash = table.partition_hash(key);
        if self.stage == Table::Backlinks.stage() {
            // Other tables' groups (URLs, expiry) come between, and leave the sum be
            // unless they start another partition hash.
            return match (table, self.summing) {
                (Table::Backlinks | Table::Distinct, _) => Some(Summing::Items(hash)),
                (_, Some(Summing::Items(h))) if h == hash => self.summing,
                _ => None,
            };
        }
        let feeds = matches!(table, Table::Distinct | Table::RefDomains | Table::Anchors);
        feeds.then_some(Summing::Feeds(table, hash))
    }

    /// Reduces every value of one key of `table` into its final row, and emits the rows
    /// it feeds in tables of later stages.
    pub fn reduce(
        &mut self,
        table: Table,
        key: &[u8],
        values: &mut dyn Values,
        out: &mut dyn ReduceOut,
    ) -> Result<()> {
        if table != Table::Distinct {
            self.anchor_run.end(out);
        }
        let lead = self.summing_for(table, key);
        if self.summing != lead {
            self.finish(out);
            self.summing = lead;
        }
        match table {
            Table::Backlinks => {
                // One row per key, as below; its record or facts row feeds the target's
                // views.
                if let Some(v) = values.next_value() {
                    let fed = &mut |t, k, v| out.feed(t, k, v);
                    let written = self.backlink_views(key, v, fed)?;
                    if let BacklinkRow::Written { at_url, left_with } = written {
                        self.host_urls.put(key, v, at_url, left_with, out);
                    }
                }
            }
            Table::Links
            | Table::Pages
            | Table::Sources
            | Table::RefDomainsRanked
            | Table::AnchorsRanked
            | Table::Expiry => {
                // One row per key; a second one is a 64-bit hash collision of two links
                // (the incremental writer keeps one too).
                if let Some(v) = values.next_value() {
                    out.row(table, key, v);
                }
            }
            Table::Distinct if self.stage == Table::Backlinks.stage() => {
                // A page's contribution: summed with the item's backlinks.
                let key = DistinctKey::parse(key)?;
                let n = sum_counts(&key, values)?;
                if key.kind == DistinctKind::LinkedHost {
                    self.linked_hosts.note(key.item_key, key.member);
                }
                let fed = &mut |t, k, v| out.feed(t, k, v);
                self.sum
                    .add_distinct(key.item_key, key.kind, key.member, n, fed);
            }
            Table::Distinct => {
                let raw = key;
                let key = DistinctKey::parse(raw)?;
                let n = sum_counts(&key, values)?;
                if n <= 0 {
                    return Ok(());
                }
                if key.kind == DistinctKind::AnchorDomain {
                    let (domain, text) = split_anchor_member(key.member);
                    // A snapshot's referring-domain rows keep no texts.
                    if self.writer_rows {
                        let write = !self.linked_hosts.one_host(key.item_key);
                        self.anchor_run.add(&key, domain, n, write, out);
                    }
                    let fed = &mut |t, k, v| out.feed(t, k, v);
                    self.sum.add_anchor_ref_domain(key.item_key, text, fed);
                    return Ok(());
                }
                if let Some(kind) = self.staged_member_rows(key.item_key).distinct(key.kind) {
                    let key = DistinctKey { kind, ..key };
                    let (t, k, v) = row(&key, &Count(kind.stored_count(n)));
                    out.row(t, &k, &v);
                }
                if key.kind == DistinctKind::RefIp {
                    // One subnet's addresses sort together: count it at its first.
                    let subnet = subnet_of_member(key.member);
                    let prefix = &raw[..key.item_key.len() + 1 + subnet.len()];
                    if self.last_subnet != prefix {
                        self.last_subnet.clear();
                        self.last_subnet.extend_from_slice(prefix);
                        let delta = Counters {
                            ref_subnets: 1,
                            ..Default::default()
                        };
                        self.sum.add_counters(key.item_key, &delta);
                    }
                }
                if let Some(delta) = distinct_counters(key.kind, 1) {
                    self.sum.add_counters(key.item_key, &delta);
                }
            }
            Table::RefDomains => {
                let key = RefDomainKey::parse(key)?;
                let mut row = RefDomain {
                    domain: key.domain.to_string(),
                    ..Default::default()
                };
                while let Some(v) = values.next_value() {
                    row.fold(&key.decode_value(v)?);
                }
                if row.links <= 0 {
                    return Ok(());
                }
                let fed = &mut |t, k, v| out.feed(t, k, v);
                let live = i64::from(row.live_links() > 0);
                let delta = ref_domain_counters(&row.domain, 1, live);
                self.sum.add_counters(key.item_key, &delta);
                // Another item's counters: emitted, not summed with this item's.
                if let Some((source, delta)) =
                    out_domain_counters(key.item_key, &row.domain, live, &self.hasher)
                {
                    emit_row(fed, &CountersKey(&source), &delta);
                }
                if !self.writes_views(key.item_key) {
                    return Ok(());
                }
                let ranked = RankedRefDomainKey {
                    item_key: key.item_key,
                    row: &row,
                };
                self.ranked_ref_domains
                    .add(key.item_key, &ranked, &row, fed);
                if self.writer_rows {
                    emit_final(out, &key, &row);
                } else {
                    emit_final(out, &SnapshotRefDomainKey(key), &row);
                }
            }
            Table::Anchors => {
                let key = AnchorKey::parse(key)?;
                let mut row = AnchorText {
                    text: key.text.to_string(),
                    ..Default::default()
                };
                while let Some(v) = values.next_value() {
                    row.fold(&key.decode_value(v)?);
                }
                if row.links <= 0 {
                    return Ok(());
                }
                let delta = Counters {
                    anchor_texts: 1,
                    ..Default::default()
                };
                self.sum.add_counters(key.item_key, &delta);
                if !self.writes_views(key.item_key) {
                    return Ok(());
                }
                let fed = &mut |t, k, v| out.feed(t, k, v);
                let ranked = RankedAnchorKey {
                    item_key: key.item_key,
                    row: &row,
                };
                self.ranked_anchors.add(key.item_key, &ranked, &row, fed);
                emit_final(out, &key, &row);
            }
            Table::Urls => {
                let key = UrlRefKey::parse(key)?;
                let n = sum_counts(&key, values)?;
                if n <= 0 {
                    return Ok(());
                }
                if self.writer_rows {
                    emit_final(out, &key, &Count(n));
                }
                let delta = Counters {
                    indexed_urls: 1,
                    ..Default::default()
                };
                for item_key in self.hasher.url_item_keys(key.0, true) {
                    let (t, k, v) = row(&CountersKey(&item_key), &delta);
                    out.feed(t, k, v);
                }
            }
            Table::Timeline => {
                let key = TimelineKey::parse(key)?;
                let mut acc = TimelineDelta::default();
                while let Some(v) = values.next_value() {
                    acc.fold(&key.decode_value(v)?);
                }
                let keep = self.staged_member_rows(key.item_key).timeline();
                if (acc.found != 0 || acc.lost != 0) && keep {
                    emit_final(out, &key, &acc);
                }
            }
            Table::Counters => {
                let key = CountersKey(key);
                let mut acc = Counters::default();
                while let Some(v) = values.next_value() {
                    accumulate(&mut acc, &key.decode_value(v)?);
                }
                emit_final(out, &key, &acc);
            }
        }
        Ok(())
    }
}

/// Emits a final row of a typed key and value.
fn emit_final<K: BuiltKey>(out: &mut dyn ReduceOut, key: &K, value: &K::Value) {
    let (table, key, value) = row(key, value);
    out.row(table, &key, &value);
}

/// The sum of a group's counts.
fn sum_counts<K: TableKey<Value = Count>>(key: &K, values: &mut dyn Values) -> Result<i64> {
    let mut n = 0i64;
    while let Some(v) = values.next_value() {
        n += key.decode_value(v)?.0;
    }
    Ok(n)
}

/// Table options made once per table: an SST file is written with the options of the
/// column family it will be added to, at the bottom level.
fn table_options(table: Table) -> &'static rocksdb::Options {
    static OPTIONS: OnceLock<Vec<rocksdb::Options>> = OnceLock::new();
    &OPTIONS.get_or_init(|| {
        Table::ALL
            .iter()
            .map(|t| bottom_file_options(t.cf_name()))
            .collect()
    })[table as usize]
}

/// Raw bytes (keys and values) after which a file of a table with a dictionary is
/// finished and the next begun ([`TableFileWriter::is_full`]). Its dictionary is made
/// from its own blocks, so RocksDB holds every block of the file uncompressed until it
/// is finished: this bounds that memory per open file. Files of other tables are
/// written as they go and need no bound; fewer files keep a large store's files within
/// the readers it keeps open (`StoreOptions::max_open_files`).
pub const FILE_RAW_BYTES: u64 = 64 << 20;

/// Writes one SST file of a table from rows in strictly increasing key order.
pub struct TableFileWriter {
    inner: rocksdb::SstFileWriter<'static>,
    path: PathBuf,
    rows: u64,
    raw_bytes: u64,
    /// The table's files have a dictionary: RocksDB holds their blocks until finished.
    dictionary: bool,
    last_key: Vec<u8>,
}

impl TableFileWriter {
    pub fn create(table: Table, path: &Path) -> Result<TableFileWriter> {
        TableFileWriter::create_with(table, table_options(table), path)
    }

    /// A `backlinks` file of a flow build, compressed harder
    /// ([`flow_backlink_file_options`]).
    pub(crate) fn create_flow_backlinks(path: &Path) -> Result<TableFileWriter> {
        static OPTIONS: OnceLock<rocksdb::Options> = OnceLock::new();
        let options = OPTIONS.get_or_init(flow_backlink_file_options);
        TableFileWriter::create_with(Table::Backlinks, options, path)
    }

    fn create_with(
        table: Table,
        options: &'static rocksdb::Options,
        path: &Path,
    ) -> Result<TableFileWriter> {
        let inner = rocksdb::SstFileWriter::create(options);
        inner.open(path)?;
        Ok(TableFileWriter {
            inner,
            path: path.to_path_buf(),
            rows: 0,
            raw_bytes: 0,
            dictionary: has_dictionary(table.cf_name()),
            last_key: Vec::new(),
        })
    }

    /// Adds a row; a key not above the previous one is skipped (a 64-bit hash collision
    /// between two pages' links) and reported as `false`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        if self.rows > 0 && key <= self.last_key.as_slice() {
            return Ok(false);
        }
        self.inner.put(key, value)?;
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.rows += 1;
        self.raw_bytes += (key.len() + value.len()) as u64;
        Ok(true)
    }

    /// Raw bytes (keys and values) written so far.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// True once a file whose blocks RocksDB holds until it is finished (its table has a
    /// dictionary) has `limit` raw bytes ([`FILE_RAW_BYTES`], or a build's own): finish
    /// it and start the next.
    pub fn is_full(&self, limit: u64) -> bool {
        self.dictionary && self.raw_bytes >= limit
    }

    /// Finishes the file; `None` (and no file) when it holds no row.
    pub fn finish(mut self) -> Result<Option<PathBuf>> {
        if self.rows == 0 {
            drop(self.inner);
            let _ = std::fs::remove_file(&self.path);
            return Ok(None);
        }
        self.inner.finish()?;
        Ok(Some(self.path))
    }
}
