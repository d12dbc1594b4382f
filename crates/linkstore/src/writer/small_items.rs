//! The incremental writer's side of items that keep no member rows
//! ([`crate::small_item`]): URLs, hosts and root domains with few backlinks.
//!
//! A batch classes each item whose views it changes when it first meets it: **small** (at
//! most [`MEMBER_ROWS_ABOVE`] backlinks, by its stored `ext_backlinks` counter, or by the
//! batch in flight) or **large**. A small item's referring-domain, anchor-text and
//! address contributions are not applied at all; when the batch is written (its write
//! thread sees the store exactly as the batch before left it), the item's backlink
//! records are read (a host's or root domain's through its pointer rows) and the batch's
//! own backlink writes applied to them, and its counters move from their stored values
//! to those the records give. So do the counters of a root domain that reads the views
//! of a small host, and the out-domain counters of the referring domains whose live
//! links to a small root domain appear or end. An item that grows past the bound gets
//! all its rows from those records; a large one that drops to it loses them all (range
//! deletions, last in the write batch).
//!
//! The next batch cannot read the rows of an item that grew while that write is under
//! way, so it settles the item the same way (**grown**), replacing the rows its stored
//! records give with those after it, until the item passes [`GROWN_SETTLED_UP_TO`]
//! backlinks: only then does it wait for the write, and class the item large. Waiting
//! each time held the applying thread idle for about a sixth of a 2.12M-link round
//! (`docs/benchmarks.md`, "Grown items settled again").

use super::linked_hosts::domain_at_host;
use super::{BatchRows, HashMap, Op, SortedBatch, Writer};
use crate::aggregate::Counters;
use crate::build::item_rows::Row;
use crate::build::Table;
use crate::error::Result;
use crate::item::{Item, Level};
use crate::keys::{generation_item_prefix, level_of_item_key, ItemHasher};
use crate::record::{BacklinkFacts, LinkRecord};
use crate::small_item::{
    item_of_key, item_views, may_be_small, member_row_ranges, MEMBER_ROWS_ABOVE, MEMBER_TABLES,
};
use crate::store::{cf_handle, CF_BACKLINKS, CF_COUNTERS};
use crate::table::{is_pointer, url_row_missing, BacklinkKey, CountersKey, TableKey};
use crate::views::{domain_of_url, member_counters, out_domain_counters, Contribution};
use std::collections::BTreeMap;

/// How a batch treats an item whose views it changes, from its backlinks before the
/// batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SizeClass {
    /// `before` backlinks, at most [`MEMBER_ROWS_ABOVE`]: its member contributions are
    /// skipped, and worked out when the batch is written.
    Small { before: i64 },
    /// `before` backlinks, past the bound but at most [`GROWN_SETTLED_UP_TO`], after the
    /// batch in flight, which took the item past the bound (or found it so) and writes
    /// its member rows: settled like a small item, its rows replaced, so that this batch
    /// need not wait for that write to read them.
    Grown { before: i64 },
    /// More: its rows are read and written one by one.
    Large,
}

/// The most backlinks an item that grew past the bound in the batch in flight may have
/// for the next batch to settle it ([`SizeClass::Grown`]) rather than wait for that
/// batch's write: settling reads all its records, twice.
const GROWN_SETTLED_UP_TO: i64 = 4 * MEMBER_ROWS_ABOVE;

/// An item's backlink count after a batch, as the next batch sees it while that one is
/// being written.
enum ItemSize {
    /// At most the bound.
    Exact(i64),
    /// Past the bound, its member rows written by the batch's settling.
    Grown(i64),
    /// Past the bound before and after.
    Large,
    /// Not known until the batch is in the store: it may drop to the bound, and its rows
    /// be removed there; or it grew too far to be settled again.
    Unsettled,
}

impl Writer<'_> {
    /// Whether `c` is a small item's member contribution, which is skipped.
    pub(super) fn skips(&self, c: &Contribution) -> bool {
        match c {
            Contribution::RefDomain { item_key, .. } | Contribution::Anchor { item_key, .. } => {
                self.skips_member_views(item_key)
            }
            // A host's out-domains are its pages' own.
            Contribution::Distinct { item_key, kind, .. } => {
                kind.is_member() && self.skips_member_views(item_key)
            }
            _ => false,
        }
    }

    /// Whether the member contributions of `item_key` are skipped: those of an item the
    /// batch settles.
    pub(super) fn skips_member_views(&self, item_key: &[u8]) -> bool {
        self.rows.settles(item_key)
    }

    /// Classes the items whose views `pending` changes and this batch has not met: by
    /// the batch in flight when it met them (waiting for its write when it may take one
    /// down to the bound, or too far past it), else by their stored `ext_backlinks`
    /// counters, read in one multi-get (a batch in flight that did not meet an item did
    /// not change them: every backlink of an item brings it a referring-domain
    /// contribution, but to a root domain that reads a host's views, which is never
    /// classed).
    pub(super) fn class_items(&mut self, pending: &[Contribution]) -> Result<()> {
        let mut unmet: Vec<&[u8]> = pending
            .iter()
            .filter_map(|c| match c {
                Contribution::RefDomain { item_key, .. } if may_be_small(item_key) => {
                    Some(item_key.as_slice())
                }
                _ => None,
            })
            .filter(|item_key| !self.rows.size_classes.contains_key(*item_key))
            .collect();
        unmet.sort_unstable();
        unmet.dedup();
        if unmet.is_empty() {
            return Ok(());
        }
        let unsettled = self.in_flight_rows().is_some_and(|rows| {
            unmet
                .iter()
                .any(|k| matches!(rows.item_size(k), Some(ItemSize::Unsettled)))
        });
        if unsettled {
            self.wait()?;
        }
        let mut classes: Vec<Option<SizeClass>> = unmet
            .iter()
            .map(
                |k| match self.in_flight_rows().and_then(|rows| rows.item_size(k)) {
                    Some(ItemSize::Exact(before)) => Some(SizeClass::Small { before }),
                    Some(ItemSize::Grown(before)) => Some(SizeClass::Grown { before }),
                    Some(ItemSize::Large) => Some(SizeClass::Large),
                    // Waited for above: the store has it now.
                    Some(ItemSize::Unsettled) | None => None,
                },
            )
            .collect();
        let unread: Vec<&[u8]> = unmet
            .iter()
            .zip(&classes)
            .filter(|(_, class)| class.is_none())
            .map(|(k, _)| *k)
            .collect();
        let mut stored = stored_backlinks(&self.store.db, &unread)?.into_iter();
        for class in classes.iter_mut().filter(|class| class.is_none()) {
            let before = stored.next().unwrap_or_default();
            *class = Some(if before <= MEMBER_ROWS_ABOVE {
                SizeClass::Small { before }
            } else {
                SizeClass::Large
            });
        }
        let classes = unmet
            .into_iter()
            .zip(classes)
            .filter_map(|(item_key, class)| Some((item_key.to_vec(), class?)));
        self.rows.size_classes.extend(classes);
        Ok(())
    }
}

/// The stored counters of `items` (0 for those without), in one multi-get.
fn stored_counters(db: &rocksdb::DB, items: &[&[u8]]) -> Result<Vec<Counters>> {
    let cf = cf_handle(db, CF_COUNTERS);
    let values = db.batched_multi_get_cf(cf, items, false);
    items
        .iter()
        .zip(values)
        .map(|(item_key, value)| match value? {
            Some(v) => CountersKey(item_key).decode_value(&v),
            None => Ok(Counters::default()),
        })
        .collect()
}

/// The stored `ext_backlinks` counters of `items`.
fn stored_backlinks(db: &rocksdb::DB, items: &[&[u8]]) -> Result<Vec<i64>> {
    let counters = stored_counters(db, items)?;
    Ok(counters.iter().map(|c| c.ext_backlinks).collect())
}

/// A small item the batch settles.
struct SmallItem<'b> {
    item_key: &'b [u8],
    item: Item,
    hash: u64,
    before: i64,
    /// Whether its member rows are in the store ([`SizeClass::Grown`]): replaced.
    grown: bool,
    /// The root domain whose counters move with this host's ([`domain_at_host`]).
    domain_at_host: Option<Vec<u8>>,
}

impl SmallItem<'_> {
    /// The root domain whose referring domains' out-domain counters move with this
    /// item's live referring domains: itself, or the domain that reads its views.
    fn out_domain_item(&self) -> Option<&[u8]> {
        if level_of_item_key(self.item_key) == Some(Level::RootDomain as u8) {
            return Some(self.item_key);
        }
        self.domain_at_host.as_deref()
    }
}

impl BatchRows {
    /// Whether this batch settles the views of `item_key` when it is written (a small or
    /// grown item's).
    pub(super) fn settles(&self, item_key: &[u8]) -> bool {
        matches!(
            self.size_classes.get(item_key),
            Some(SizeClass::Small { .. } | SizeClass::Grown { .. })
        )
    }

    /// The backlink count of an item this batch classed, after the batch.
    fn item_size(&self, item_key: &[u8]) -> Option<ItemSize> {
        let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
        Some(match self.size_classes.get(item_key)? {
            SizeClass::Small { before } | SizeClass::Grown { before } => match before + moved {
                n if n <= MEMBER_ROWS_ABOVE => ItemSize::Exact(n),
                n if n <= GROWN_SETTLED_UP_TO => ItemSize::Grown(n),
                _ => ItemSize::Unsettled,
            },
            SizeClass::Large if moved >= 0 => ItemSize::Large,
            SizeClass::Large => ItemSize::Unsettled,
        })
    }

    /// What the small items of this batch need (see the module documentation), given the
    /// backlink writes of `batch`: counter moves, and the rows of those that grew past
    /// the bound; and range deletions of the rows of large items that dropped to it.
    /// Runs beside the batch's write thread, before the batch is written.
    pub(super) fn settle_small_items(
        &self,
        batch: &SortedBatch,
        db: &rocksdb::DB,
        generation: u8,
        hasher: &ItemHasher,
    ) -> Result<Settled> {
        let mut out = SortedBatch::default();
        let mut small: Vec<SmallItem<'_>> = Vec::new();
        let mut large: Vec<&[u8]> = Vec::new();
        for (item_key, class) in &self.size_classes {
            match *class {
                SizeClass::Small { before } | SizeClass::Grown { before } => {
                    let item = item_of_key(item_key)?;
                    small.push(SmallItem {
                        item_key,
                        hash: hasher.hash(item.level, &item.name),
                        item,
                        before,
                        grown: matches!(class, SizeClass::Grown { .. }),
                        domain_at_host: domain_at_host(self, hasher, item_key),
                    });
                }
                SizeClass::Large => {
                    let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
                    if moved < 0 {
                        large.push(item_key);
                    }
                }
            }
        }
        // In key order, so that one iterator's seeks move forward through the table
        // (forced collisions, in tests, give items one hash).
        small.sort_unstable_by(|a, b| (a.hash, a.item_key).cmp(&(b.hash, b.item_key)));
        let writes = BatchWrites::of(batch, &small);
        let stored = stored_rows(&small, db, generation)?;
        let located = small
            .iter()
            .zip(&stored)
            .map(|(s, stored)| ItemRows::locate(s, stored, &writes, hasher))
            .collect::<Result<Vec<_>>>()?;
        let url_rows = StoredUrlRows::read(db, &located, &writes)?;
        let records = located
            .iter()
            .map(|rows| rows.records(&writes, &url_rows))
            .collect::<Result<Vec<_>>>()?;

        // The counters the store holds for them are those of their records before the
        // batch: the views of the set before need not be worked out again. Items new to
        // the batch have neither records nor counters to read.
        let known: Vec<&[u8]> = small
            .iter()
            .filter(|s| s.before > 0)
            .map(|s| s.item_key)
            .collect();
        let mut stored = stored_counters(db, &known)?.into_iter();
        let mut added = Vec::new();
        let mut settled = Vec::new();
        for (s, records) in small.iter().zip(records) {
            let before = if s.before > 0 {
                stored.next().unwrap_or_default()
            } else {
                Counters::default()
            };
            // Rows only for an item that grew past the bound; counters alone are cheaper
            // counted straight from the records.
            let (rows, after) = if records.after.len() as i64 > MEMBER_ROWS_ABOVE {
                let decoded = records
                    .after
                    .iter()
                    .map(|r| LinkRecord::decode(r.record))
                    .collect::<Result<Vec<_>>>()?;
                item_views(&s.item, &decoded, hasher, true)
            } else {
                (
                    Vec::new(),
                    member_counters(records.after.iter().map(|r| r.facts)),
                )
            };
            let mut rows = member_table_rows(rows);
            // The rows the store holds are those its records before the batch give, as
            // the batch that wrote them gave them: only past the bound.
            if s.grown && records.before.len() as i64 > MEMBER_ROWS_ABOVE {
                let decoded = records
                    .before
                    .iter()
                    .map(|r| LinkRecord::decode(r.record))
                    .collect::<Result<Vec<_>>>()?;
                let (stored, _) = item_views(&s.item, &decoded, hasher, true);
                rows = replace_rows(&mut out, member_table_rows(stored), rows);
            }
            let delta = member_counter_moves(&before, &after);
            if delta != Counters::default() {
                out.merge(&CountersKey(s.item_key), &delta);
                if let Some(domain) = &s.domain_at_host {
                    out.merge(&CountersKey(domain), &delta);
                }
            }
            if let Some(target) = s.out_domain_item() {
                let moves = live_domain_moves(&records);
                for (domain, live) in moves {
                    if let Some((source, delta)) = out_domain_counters(target, domain, live, hasher)
                    {
                        out.merge(&CountersKey(&source), &delta);
                    }
                }
            }
            added.extend(rows);
            settled.push(s.item_key.to_vec());
            settled.extend(s.domain_at_host.iter().cloned());
        }
        for (table, key, value) in added {
            out.push(table, key, Op::Put(value));
        }
        let stored = stored_backlinks(db, &large)?;
        for (item_key, stored) in large.into_iter().zip(stored) {
            let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
            if stored + moved <= MEMBER_ROWS_ABOVE {
                for (table, from, to) in member_row_ranges(item_key) {
                    out.delete_range(table, from, to);
                }
                settled.push(item_key.to_vec());
            }
        }
        Ok(Settled {
            writes: out,
            items: settled,
        })
    }
}

/// The batch's backlink writes: the last of each row, and those under each small item's
/// hash in the order written.
struct BatchWrites<'b> {
    last: HashMap<&'b [u8], &'b Op>,
    by_hash: HashMap<u64, Vec<(&'b [u8], &'b Op)>>,
}

impl<'b> BatchWrites<'b> {
    fn of(batch: &'b SortedBatch, small: &[SmallItem<'_>]) -> BatchWrites<'b> {
        // Items sharing a hash (forced collisions) share its writes, told apart later.
        let mut by_hash: HashMap<u64, Vec<(&[u8], &Op)>> =
            small.iter().map(|s| (s.hash, Vec::new())).collect();
        let mut last: HashMap<&[u8], &Op> = HashMap::default();
        for (table, key, op) in &batch.ops {
            if *table != Table::Backlinks {
                continue;
            }
            last.insert(key, op);
            let hash = key
                .get(1..9)
                .map(|h| u64::from_be_bytes(h.try_into().expect("8")));
            if let Some(written) = hash.and_then(|h| by_hash.get_mut(&h)) {
                written.push((key, op));
            }
        }
        BatchWrites { last, by_hash }
    }

    fn wrote(&self, key: &[u8]) -> bool {
        self.last.contains_key(key)
    }
}

/// A small item's backlink rows as the store holds them, keys and values copied into
/// one buffer (a scan's rows live only until its next step).
#[derive(Default)]
struct StoredRows {
    bytes: Vec<u8>,
    /// Where each row's key and value end in `bytes`; each starts where the last ended.
    ends: Vec<(usize, usize)>,
}

impl StoredRows {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    /// `(key, value)` in key order.
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|&(_, end)| end));
        starts.zip(&self.ends).map(|(start, &(key_end, end))| {
            (&self.bytes[start..key_end], &self.bytes[key_end..end])
        })
    }
}

/// Each small item's stored backlink rows: a scan of its prefix (none for an item new to
/// the batch), in key order across items, so that one iterator's seeks move forward.
fn stored_rows(
    small: &[SmallItem<'_>],
    db: &rocksdb::DB,
    generation: u8,
) -> Result<Vec<StoredRows>> {
    let mut out: Vec<StoredRows> = small.iter().map(|_| StoredRows::default()).collect();
    let mut it = db.raw_iterator_cf(cf_handle(db, CF_BACKLINKS));
    for (s, rows) in small.iter().zip(&mut out) {
        if s.before == 0 {
            continue;
        }
        let prefix = generation_item_prefix(generation, s.hash);
        it.seek(prefix);
        while let Some((key, value)) = it.item() {
            if !key.starts_with(&prefix) {
                break;
            }
            rows.push(key, value);
            it.next();
        }
        it.status()?;
    }
    Ok(out)
}

/// Where a backlink row's record is.
enum RecordAt<'a> {
    /// In the row: a URL row's value.
    Here(&'a [u8]),
    /// In the URL row a pointer row names, by this key.
    UrlRow(Vec<u8>),
}

/// A backlink row located: where its record is, and whether the batch wrote the row or
/// the URL row it points to.
struct Located<'a> {
    at: RecordAt<'a>,
    touched: bool,
}

/// A small item's backlink rows, each located once.
struct ItemRows<'a> {
    item: &'a Item,
    /// The rows as the batch leaves them, in key order.
    after: Vec<Located<'a>>,
    /// Stored rows: all of a grown item's (its member rows are replaced), and those the
    /// batch wrote of an item that moves out-domain counters
    /// ([`SmallItem::out_domain_item`]).
    before: Vec<Located<'a>>,
}

impl<'a> ItemRows<'a> {
    /// The rows of `s`: `stored`, with the batch's writes under its hash applied in the
    /// order written. A URL's own rows hold their records: a pointer under its hash is
    /// another item's, and left out.
    fn locate(
        s: &'a SmallItem<'_>,
        stored: &'a StoredRows,
        writes: &BatchWrites<'a>,
        hasher: &ItemHasher,
    ) -> Result<ItemRows<'a>> {
        let locate = |key: &[u8], value: &'a [u8]| -> Result<Option<Located<'a>>> {
            let at = if !is_pointer(value)? {
                RecordAt::Here(value)
            } else if s.item.level == Level::Url {
                return Ok(None);
            } else {
                RecordAt::UrlRow(BacklinkKey::parse(key)?.url_row(hasher).bytes().to_vec())
            };
            let touched = writes.wrote(key)
                || matches!(&at, RecordAt::UrlRow(url_row) if writes.wrote(url_row));
            Ok(Some(Located { at, touched }))
        };
        let mut after: BTreeMap<&[u8], &[u8]> = stored.iter().collect();
        for &(key, op) in writes.by_hash.get(&s.hash).into_iter().flatten() {
            match op {
                Op::Put(value) => {
                    after.insert(key, value);
                }
                Op::Delete => {
                    after.remove(key);
                }
                Op::Merge(_) => {}
            }
        }
        let mut before = Vec::new();
        if s.grown || s.out_domain_item().is_some() {
            for (key, value) in stored.iter() {
                before.extend(locate(key, value)?.filter(|row| s.grown || row.touched));
            }
        }
        let after = after
            .into_iter()
            .filter_map(|(key, value)| locate(key, value).transpose())
            .collect::<Result<_>>()?;
        Ok(ItemRows {
            item: &s.item,
            after,
            before,
        })
    }

    /// The item's records after the batch, and the stored ones of [`ItemRows::before`],
    /// with their facts; records of other items (colliding hashes) left out.
    fn records<'r>(
        &'r self,
        writes: &BatchWrites<'r>,
        url_rows: &'r StoredUrlRows<'_>,
    ) -> Result<ItemRecords<'r>> {
        let mut out = ItemRecords::default();
        for row in &self.after {
            let record = match &row.at {
                RecordAt::Here(record) => record,
                RecordAt::UrlRow(key) => match writes.last.get(key.as_slice()) {
                    Some(Op::Put(value)) => value.as_slice(),
                    Some(_) => return Err(url_row_missing()),
                    None => url_rows.get(key)?,
                },
            };
            self.keep(&mut out.after, record, row.touched)?;
        }
        for row in &self.before {
            let record = match &row.at {
                RecordAt::Here(record) => record,
                RecordAt::UrlRow(key) => url_rows.get(key)?,
            };
            self.keep(&mut out.before, record, row.touched)?;
        }
        Ok(out)
    }

    /// Adds `record` to `records` if it is the item's.
    fn keep<'r>(
        &self,
        records: &mut Vec<ItemRecord<'r>>,
        record: &'r [u8],
        touched: bool,
    ) -> Result<()> {
        let facts = BacklinkFacts::read(record)?;
        if self.item.contains_url(facts.target_url) {
            records.push(ItemRecord {
                record,
                facts,
                touched,
            });
        }
        Ok(())
    }
}

/// The stored URL rows that pointer rows name and the batch did not write (or whose
/// stored records are wanted), read in one sorted multi-get.
struct StoredUrlRows<'d> {
    keys: Vec<&'d [u8]>,
    values: Vec<Option<rocksdb::DBPinnableSlice<'d>>>,
}

impl<'d> StoredUrlRows<'d> {
    fn read(
        db: &'d rocksdb::DB,
        items: &'d [ItemRows<'_>],
        writes: &BatchWrites<'_>,
    ) -> Result<StoredUrlRows<'d>> {
        let url_row = |row: &'d Located<'_>| match &row.at {
            RecordAt::UrlRow(key) => Some(key.as_slice()),
            RecordAt::Here(_) => None,
        };
        let mut keys: Vec<&[u8]> = Vec::new();
        for rows in items {
            let after = rows.after.iter().filter_map(url_row);
            keys.extend(after.filter(|key| !writes.wrote(key)));
            keys.extend(rows.before.iter().filter_map(url_row));
        }
        keys.sort_unstable();
        keys.dedup();
        let values = db
            .batched_multi_get_cf(cf_handle(db, CF_BACKLINKS), &keys, true)
            .into_iter()
            .collect::<std::result::Result<_, _>>()?;
        Ok(StoredUrlRows { keys, values })
    }

    fn get(&self, key: &[u8]) -> Result<&[u8]> {
        let i = self
            .keys
            .binary_search(&key)
            .map_err(|_| url_row_missing())?;
        self.values[i].as_deref().ok_or_else(url_row_missing)
    }
}

/// One of a small item's backlink records.
struct ItemRecord<'a> {
    record: &'a [u8],
    facts: BacklinkFacts<'a>,
    /// Whether the batch wrote it (its row, or the URL row a pointer names).
    touched: bool,
}

/// An item's backlink records after the batch, and those of [`ItemRows::before`] as
/// stored.
#[derive(Default)]
struct ItemRecords<'a> {
    after: Vec<ItemRecord<'a>>,
    before: Vec<ItemRecord<'a>>,
}

/// How the live links of each referring domain move across the batch (+1 for a domain
/// with a live link after and none before, -1 for the reverse): only domains of records
/// the batch wrote can move, and the records it did not write hold the same links
/// before and after.
fn live_domain_moves<'r>(records: &ItemRecords<'r>) -> Vec<(&'r str, i64)> {
    fn live_domains<'r>(recs: impl Iterator<Item = BacklinkFacts<'r>>) -> Vec<&'r str> {
        let mut domains: Vec<&str> = recs
            .filter(|r| !r.state.deleted)
            .map(|r| domain_of_url(r.source_url))
            .collect();
        domains.sort_unstable();
        domains.dedup();
        domains
    }
    let after = |touched: bool| {
        records
            .after
            .iter()
            .filter(move |r| r.touched == touched)
            .map(|r| r.facts)
    };
    let kept = live_domains(after(false));
    let added = live_domains(after(true));
    let removed = live_domains(records.before.iter().filter(|r| r.touched).map(|r| r.facts));
    let mut moves: BTreeMap<&str, i64> = BTreeMap::new();
    for d in added.iter().filter(|d| kept.binary_search(d).is_err()) {
        *moves.entry(d).or_default() += 1;
    }
    for d in removed.iter().filter(|d| kept.binary_search(d).is_err()) {
        *moves.entry(d).or_default() -= 1;
    }
    moves.into_iter().filter(|&(_, n)| n != 0).collect()
}

/// The rows of `rows` in member tables.
fn member_table_rows(rows: Vec<Row>) -> Vec<Row> {
    rows.into_iter()
        .filter(|(table, ..)| MEMBER_TABLES.contains(table))
        .collect()
}

/// Deletes from `out` the `stored` rows that `rows` leaves out, and hands back those of
/// `rows` that are new or changed: the writes that turn an item's stored member rows
/// into `rows`.
fn replace_rows(out: &mut SortedBatch, stored: Vec<Row>, rows: Vec<Row>) -> Vec<Row> {
    let mut stored: HashMap<(Table, Vec<u8>), Vec<u8>> = stored
        .into_iter()
        .map(|(table, key, value)| ((table, key), value))
        .collect();
    let mut changed = Vec::new();
    for (table, key, value) in rows {
        let at = (table, key);
        if stored.remove(&at).is_none_or(|old| old != value) {
            changed.push((at.0, at.1, value));
        }
    }
    for ((table, key), _) in stored {
        out.push(table, key, Op::Delete);
    }
    changed
}

/// What settling a batch's small items adds to it.
pub(super) struct Settled {
    /// Writes to add to the batch: they touch no key the batch's other writes touch but
    /// `counters` rows, whose merges commute.
    pub(super) writes: SortedBatch,
    /// The items whose rows the batch settles this way: their row counts are the store's
    /// to tell from now on.
    pub(super) items: Vec<Vec<u8>>,
}

/// How the counters fed by member rows move from the views of `before` to those of
/// `after` (all sums).
fn member_counter_moves(before: &Counters, after: &Counters) -> Counters {
    Counters {
        ref_domains: after.ref_domains - before.ref_domains,
        ref_domains_live: after.ref_domains_live - before.ref_domains_live,
        ref_domains_edu: after.ref_domains_edu - before.ref_domains_edu,
        ref_domains_gov: after.ref_domains_gov - before.ref_domains_gov,
        ref_ips: after.ref_ips - before.ref_ips,
        ref_subnets: after.ref_subnets - before.ref_subnets,
        anchor_texts: after.anchor_texts - before.anchor_texts,
        ..Default::default()
    }
}
