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

use super::linked_hosts::domain_at_host;
use super::{BatchRows, HashMap, Op, SortedBatch, Writer};
use crate::aggregate::Counters;
use crate::build::Table;
use crate::error::{Error, Result};
use crate::item::{Item, Level};
use crate::keys::{generation_item_prefix, level_of_item_key, ItemHasher};
use crate::record::LinkRecord;
use crate::small_item::{
    item_of_key, item_views, may_be_small, member_row_ranges, MEMBER_ROWS_ABOVE, MEMBER_TABLES,
};
use crate::store::{cf_handle, CF_BACKLINKS, CF_COUNTERS};
use crate::table::{is_pointer, BacklinkKey, CountersKey, TableKey};
use crate::views::{domain_of_url, member_counters, out_domain_counters, Contribution};
use std::collections::BTreeMap;

/// How a batch treats an item whose views it changes, from its backlinks before the
/// batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SizeClass {
    /// `before` backlinks, at most [`MEMBER_ROWS_ABOVE`]: its member contributions are
    /// skipped, and worked out when the batch is written.
    Small { before: i64 },
    /// More: its rows are read and written one by one.
    Large,
}

/// An item's backlink count after a batch, as the next batch sees it while that one is
/// being written.
enum ItemSize {
    Exact(i64),
    /// Past the bound before and after.
    Large,
    /// Not known until the batch is in the store: it may cross the bound, and its rows be
    /// written or removed there.
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

    /// Whether the member contributions of `item_key` are skipped: a small item's.
    pub(super) fn skips_member_views(&self, item_key: &[u8]) -> bool {
        matches!(
            self.rows.size_classes.get(item_key),
            Some(SizeClass::Small { .. })
        )
    }

    /// Classes the items whose views `pending` changes and this batch has not met: by
    /// the batch in flight when it met them (waiting for its write when it may move one
    /// across the bound), else by their stored `ext_backlinks` counters, read in one
    /// multi-get (a batch in flight that did not meet an item did not change them: every
    /// backlink of an item brings it a referring-domain contribution, but to a root
    /// domain that reads a host's views, which is never classed).
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
        let mut sizes: Vec<Option<i64>> = unmet
            .iter()
            .map(
                |k| match self.in_flight_rows().and_then(|rows| rows.item_size(k)) {
                    Some(ItemSize::Exact(n)) => Some(n),
                    Some(ItemSize::Large) => Some(MEMBER_ROWS_ABOVE + 1),
                    // Waited for above: the store has it now.
                    Some(ItemSize::Unsettled) | None => None,
                },
            )
            .collect();
        let unread: Vec<&[u8]> = unmet
            .iter()
            .zip(&sizes)
            .filter(|(_, n)| n.is_none())
            .map(|(k, _)| *k)
            .collect();
        let mut stored = stored_backlinks(&self.store.db, &unread)?.into_iter();
        for n in sizes.iter_mut().filter(|n| n.is_none()) {
            *n = stored.next();
        }
        let mut classes = Vec::with_capacity(unmet.len());
        for (item_key, before) in unmet.into_iter().zip(sizes) {
            let before = before.unwrap_or_default();
            let class = if before <= MEMBER_ROWS_ABOVE {
                SizeClass::Small { before }
            } else {
                SizeClass::Large
            };
            classes.push((item_key.to_vec(), class));
        }
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

/// An item's backlink rows as the store holds them (`stored`), and as the batch leaves
/// them (`after`): `(key, value)`, a value a record or a pointer.
#[derive(Default)]
struct ItemRows {
    stored: Vec<(Vec<u8>, Vec<u8>)>,
    after: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl BatchRows {
    /// The backlink count of an item this batch classed, after the batch.
    fn item_size(&self, item_key: &[u8]) -> Option<ItemSize> {
        let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
        Some(match self.size_classes.get(item_key)? {
            SizeClass::Small { before, .. } if before + moved <= MEMBER_ROWS_ABOVE => {
                ItemSize::Exact(before + moved)
            }
            SizeClass::Large if moved >= 0 => ItemSize::Large,
            _ => ItemSize::Unsettled,
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
            match class {
                SizeClass::Small { before } => {
                    let item = item_of_key(item_key)?;
                    small.push(SmallItem {
                        item_key,
                        hash: hasher.hash(item.level, &item.name),
                        item,
                        before: *before,
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
        let rows = backlink_rows(&small, batch, db, generation)?;
        let records = resolve(&small, &rows, batch, db, hasher)?;

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
            let after_records = &records.after;
            let before = if s.before > 0 {
                stored.next().unwrap_or_default()
            } else {
                Counters::default()
            };
            // Rows only for an item that grew past the bound; counters alone are cheaper
            // counted straight from the records.
            let (rows, after) = if after_records.len() as i64 > MEMBER_ROWS_ABOVE {
                item_views(&s.item, after_records, hasher, true)
            } else {
                (Vec::new(), member_counters(after_records))
            };
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
            added.extend(rows.into_iter().filter(|(t, ..)| MEMBER_TABLES.contains(t)));
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

/// Each small item's backlink rows, stored and after `batch`: a scan of its prefix in
/// the store (none for an item new to the batch), then the batch's writes under it in
/// the order written.
fn backlink_rows(
    small: &[SmallItem<'_>],
    batch: &SortedBatch,
    db: &rocksdb::DB,
    generation: u8,
) -> Result<Vec<ItemRows>> {
    let mut at: HashMap<u64, usize> = HashMap::default();
    for (i, s) in small.iter().enumerate() {
        // Items sharing a hash (forced collisions) share its rows, told apart later.
        at.entry(s.hash).or_insert(i);
    }
    let mut rows: Vec<ItemRows> = small.iter().map(|_| ItemRows::default()).collect();
    let mut it = db.raw_iterator_cf(cf_handle(db, CF_BACKLINKS));
    for (s, rows) in small.iter().zip(&mut rows) {
        if s.before == 0 {
            continue;
        }
        let prefix = generation_item_prefix(generation, s.hash);
        it.seek(prefix);
        while let Some((key, value)) = it.item() {
            if !key.starts_with(&prefix) {
                break;
            }
            rows.stored.push((key.to_vec(), value.to_vec()));
            it.next();
        }
        it.status()?;
    }
    for r in &mut rows {
        r.after = r.stored.iter().cloned().collect();
    }
    let mut written: Vec<Vec<(&[u8], &Op)>> = small.iter().map(|_| Vec::new()).collect();
    for (table, key, op) in &batch.ops {
        if *table != Table::Backlinks {
            continue;
        }
        let hash = key
            .get(1..9)
            .map(|h| u64::from_be_bytes(h.try_into().expect("8")));
        if let Some(&i) = hash.and_then(|h| at.get(&h)) {
            written[i].push((key, op));
        }
    }
    for (i, s) in small.iter().enumerate() {
        let first = at[&s.hash];
        for &(key, op) in &written[first] {
            match op {
                Op::Put(value) => {
                    rows[i].after.insert(key.to_vec(), value.clone());
                }
                Op::Delete => {
                    rows[i].after.remove(key);
                }
                Op::Merge(_) => {}
            }
        }
    }
    Ok(rows)
}

/// An item's backlink records after the batch, and (for an item that moves out-domain
/// counters: [`SmallItem::out_domain_item`]) what the batch changed of them.
#[derive(Default)]
struct ItemRecords {
    after: Vec<LinkRecord>,
    /// Whether the batch wrote each record of `after` (its row, or the URL row a
    /// pointer names).
    touched: Vec<bool>,
    /// The stored records of the rows the batch wrote.
    touched_before: Vec<LinkRecord>,
}

/// Each small item's records (see [`ItemRecords`]), from its rows: a pointer resolved
/// to its URL row as the batch leaves it (or as stored, for a record before the batch),
/// the stored ones read in one multi-get; records of other items (colliding hashes)
/// left out.
fn resolve(
    small: &[SmallItem<'_>],
    rows: &[ItemRows],
    batch: &SortedBatch,
    db: &rocksdb::DB,
    hasher: &ItemHasher,
) -> Result<Vec<ItemRecords>> {
    // The batch's last write of each backlink row.
    let mut written: HashMap<&[u8], &Op> = HashMap::default();
    for (table, key, op) in &batch.ops {
        if *table == Table::Backlinks {
            written.insert(key, op);
        }
    }
    // Where each row's record is (its URL row's key, for a pointer), and whether the
    // batch wrote it. A URL's own rows hold their records: a pointer under its hash is
    // another item's.
    let locate = |s: &SmallItem<'_>, key: &[u8], value: &[u8]| -> Result<Option<(Vec<u8>, bool)>> {
        if !is_pointer(value)? {
            return Ok(Some((Vec::new(), written.contains_key(key))));
        }
        if s.item.level == Level::Url {
            return Ok(None);
        }
        let at = BacklinkKey::parse(key)?.url_row(hasher).bytes().to_vec();
        let touched = written.contains_key(key) || written.contains_key(at.as_slice());
        Ok(Some((at, touched)))
    };
    let mut unread: Vec<Vec<u8>> = Vec::new();
    for (s, r) in small.iter().zip(rows) {
        if s.out_domain_item().is_some() {
            for (key, value) in &r.stored {
                if let Some((at, true)) = locate(s, key, value)? {
                    if !at.is_empty() {
                        unread.push(at);
                    }
                }
            }
        }
        for (key, value) in &r.after {
            if let Some((at, _)) = locate(s, key, value)? {
                if !at.is_empty() && !written.contains_key(at.as_slice()) {
                    unread.push(at);
                }
            }
        }
    }
    unread.sort_unstable();
    unread.dedup();
    let values = db.batched_multi_get_cf(cf_handle(db, CF_BACKLINKS), &unread, true);
    let mut stored: HashMap<&[u8], Vec<u8>> = HashMap::default();
    for (key, value) in unread.iter().zip(values) {
        if let Some(value) = value? {
            stored.insert(key, value.to_vec());
        }
    }
    let missing = || Error::corrupt(CF_BACKLINKS, "a pointer row without its URL row");
    let from_store = |at: &[u8]| stored.get(at).map(Vec::as_slice).ok_or_else(missing);
    let mut out = Vec::with_capacity(small.len());
    for (s, r) in small.iter().zip(rows) {
        let mut records = ItemRecords::default();
        if s.out_domain_item().is_some() {
            for (key, value) in &r.stored {
                let Some((at, true)) = locate(s, key, value)? else {
                    continue;
                };
                let record = if at.is_empty() {
                    value
                } else {
                    from_store(&at)?
                };
                let rec = LinkRecord::decode(record)?;
                if s.item.contains_url(&rec.target_url) {
                    records.touched_before.push(rec);
                }
            }
        }
        for (key, value) in &r.after {
            let Some((at, touched)) = locate(s, key, value)? else {
                continue;
            };
            let record: &[u8] = if at.is_empty() {
                value
            } else {
                match written.get(at.as_slice()) {
                    Some(Op::Put(value)) => value,
                    Some(_) => return Err(missing()),
                    None => from_store(&at)?,
                }
            };
            let rec = LinkRecord::decode(record)?;
            if s.item.contains_url(&rec.target_url) {
                records.after.push(rec);
                records.touched.push(touched);
            }
        }
        out.push(records);
    }
    Ok(out)
}

/// How the live links of each referring domain move across the batch (+1 for a domain
/// with a live link after and none before, -1 for the reverse): only domains of records
/// the batch wrote can move, and the records it did not write hold the same links
/// before and after.
fn live_domain_moves(records: &ItemRecords) -> Vec<(&str, i64)> {
    fn live_domains<'r>(recs: impl Iterator<Item = &'r LinkRecord>) -> Vec<&'r str> {
        let mut domains: Vec<&str> = recs
            .filter(|r| !r.is_deleted())
            .map(|r| domain_of_url(&r.source_url))
            .collect();
        domains.sort_unstable();
        domains.dedup();
        domains
    }
    let after = records.after.iter().zip(&records.touched);
    let kept = live_domains(after.clone().filter(|(_, &t)| !t).map(|(r, _)| r));
    let added = live_domains(after.filter(|(_, &t)| t).map(|(r, _)| r));
    let removed = live_domains(records.touched_before.iter());
    let mut moves: BTreeMap<&str, i64> = BTreeMap::new();
    for d in added.iter().filter(|d| kept.binary_search(d).is_err()) {
        *moves.entry(d).or_default() += 1;
    }
    for d in removed.iter().filter(|d| kept.binary_search(d).is_err()) {
        *moves.entry(d).or_default() -= 1;
    }
    moves.into_iter().filter(|&(_, n)| n != 0).collect()
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
