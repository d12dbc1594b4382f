//! The incremental writer's side of URLs that keep no member rows ([`crate::small_url`]).
//!
//! A batch classes each URL whose views it changes when it first meets it: **small** (at
//! most [`URL_ROWS_ABOVE`] backlinks, by its stored `ext_backlinks` counter, or by the
//! batch in flight) or **large**. A small URL's referring-domain, anchor-text and address
//! contributions are not applied at all; when the batch is written (its write thread
//! sees the store exactly as the batch before left it), the URL's backlink records are
//! read and the batch's own backlink writes applied to them, and its counters move from
//! their stored values to those the records give. A URL that grows past the bound gets
//! all its rows from those records; a large one that drops to it loses them all (range
//! deletions, last in the write batch).

use super::{BatchRows, HashMap, Op, SortedBatch, Writer};
use crate::aggregate::Counters;
use crate::build::Table;
use crate::error::Result;
use crate::keys::{generation_item_prefix, url_hash, ItemHasher};
use crate::record::LinkRecord;
use crate::small_url::{is_url_item_key, url_backlinks, url_views, MEMBER_TABLES, URL_ROWS_ABOVE};
use crate::store::{cf_handle, prefix_successor, CF_BACKLINKS, CF_COUNTERS};
use crate::table::{CountersKey, TableKey};
use crate::views::{member_counters, Contribution};
use std::collections::BTreeMap;

/// How a batch treats a URL whose views it changes, from its backlinks before the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UrlClass {
    /// `before` backlinks, at most [`URL_ROWS_ABOVE`]: its member contributions are
    /// skipped, and worked out when the batch is written.
    Small { before: i64 },
    /// More: its rows are read and written like those of hosts and domains.
    Large,
}

/// A URL's backlink count after a batch, as the next batch sees it while that one is
/// being written.
enum UrlSize {
    Exact(i64),
    /// Past the bound before and after.
    Large,
    /// Not known until the batch is in the store: it may cross the bound, and its rows be
    /// written or removed there.
    Unsettled,
}

/// The URL named by a URL item key (`hash | 3 | url | 0`).
fn url_of_item_key(item_key: &[u8]) -> Result<&str> {
    item_key
        .get(9..item_key.len().saturating_sub(1))
        .and_then(|name| std::str::from_utf8(name).ok())
        .ok_or_else(|| crate::Error::corrupt(CF_COUNTERS, "a URL item key without a URL"))
}

impl Writer<'_> {
    /// Whether `c` is a small URL's member contribution, which is skipped.
    pub(super) fn skips(&self, c: &Contribution) -> bool {
        match c {
            Contribution::RefDomain { item_key, .. }
            | Contribution::Anchor { item_key, .. }
            | Contribution::Distinct { item_key, .. } => self.skips_member_views(item_key),
            _ => false,
        }
    }

    /// Whether the member contributions of `item_key` are skipped: a small URL's.
    pub(super) fn skips_member_views(&self, item_key: &[u8]) -> bool {
        is_url_item_key(item_key)
            && matches!(
                self.rows.url_classes.get(item_key),
                Some(UrlClass::Small { .. })
            )
    }

    /// Classes the URLs whose views `pending` changes and this batch has not met: by the
    /// batch in flight when it met them (waiting for its write when it may move one
    /// across the bound), else by their stored `ext_backlinks` counters, read in one
    /// multi-get (a batch in flight that did not meet a URL did not change them).
    pub(super) fn class_urls(&mut self, pending: &[Contribution]) -> Result<()> {
        let mut unmet: Vec<&[u8]> = pending
            .iter()
            .filter_map(|c| match c {
                Contribution::RefDomain { item_key, .. } if is_url_item_key(item_key) => {
                    Some(item_key.as_slice())
                }
                _ => None,
            })
            .filter(|item_key| !self.rows.url_classes.contains_key(*item_key))
            .collect();
        unmet.sort_unstable();
        unmet.dedup();
        if unmet.is_empty() {
            return Ok(());
        }
        let unsettled = self.in_flight_rows().is_some_and(|rows| {
            unmet
                .iter()
                .any(|k| matches!(rows.url_size(k), Some(UrlSize::Unsettled)))
        });
        if unsettled {
            self.wait()?;
        }
        let mut sizes: Vec<Option<i64>> = unmet
            .iter()
            .map(
                |k| match self.in_flight_rows().and_then(|rows| rows.url_size(k)) {
                    Some(UrlSize::Exact(n)) => Some(n),
                    Some(UrlSize::Large) => Some(URL_ROWS_ABOVE + 1),
                    // Waited for above: the store has it now.
                    Some(UrlSize::Unsettled) | None => None,
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
            let class = if before <= URL_ROWS_ABOVE {
                UrlClass::Small { before }
            } else {
                UrlClass::Large
            };
            classes.push((item_key.to_vec(), class));
        }
        self.rows.url_classes.extend(classes);
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

impl BatchRows {
    /// The backlink count of a URL this batch classed, after the batch.
    fn url_size(&self, item_key: &[u8]) -> Option<UrlSize> {
        let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
        Some(match self.url_classes.get(item_key)? {
            UrlClass::Small { before, .. } if before + moved <= URL_ROWS_ABOVE => {
                UrlSize::Exact(before + moved)
            }
            UrlClass::Large if moved >= 0 => UrlSize::Large,
            _ => UrlSize::Unsettled,
        })
    }

    /// What the small URLs of this batch need (see the module documentation), given the
    /// backlink writes of `batch`: counter moves, and the rows of those that grew past
    /// the bound; and range deletions of the rows of large URLs that dropped to it. Runs
    /// beside the batch's write thread, before the batch is written.
    pub(super) fn settle_urls(
        &self,
        batch: &SortedBatch,
        db: &rocksdb::DB,
        generation: u8,
        hasher: &ItemHasher,
    ) -> Result<Settled> {
        let mut out = SortedBatch::default();
        // Forced collisions (tests) give URLs one hash.
        let mut small: Vec<(u64, &[u8], &str, i64)> = Vec::new();
        let mut large: Vec<&[u8]> = Vec::new();
        for (item_key, class) in &self.url_classes {
            match class {
                UrlClass::Small { before } => {
                    let url = url_of_item_key(item_key)?;
                    small.push((hasher.url_item(url_hash(url)), item_key, url, *before));
                }
                UrlClass::Large => {
                    let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
                    if moved < 0 {
                        large.push(item_key);
                    }
                }
            }
        }
        // In key order, so that one iterator's seeks move forward through the table.
        small.sort_unstable_by_key(|&(hash, _, url, _)| (hash, url));
        let mut settled = Vec::new();
        // This batch's backlink writes under each small URL's hash, in the order written.
        let mut writes: HashMap<u64, Vec<usize>> = HashMap::default();
        for &(hash, ..) in &small {
            writes.entry(hash).or_default();
        }
        for (i, (table, key, _)) in batch.ops.iter().enumerate() {
            if *table == Table::Backlinks {
                let hash = key
                    .get(1..9)
                    .map(|h| u64::from_be_bytes(h.try_into().expect("8")));
                if let Some(at) = hash.and_then(|h| writes.get_mut(&h)) {
                    at.push(i);
                }
            }
        }
        // The counters the store holds for them are those of their records before the
        // batch: the views of the set before need not be worked out again. URLs new to
        // the batch have neither records nor counters to read.
        let known: Vec<&[u8]> = small
            .iter()
            .filter(|&&(.., before)| before > 0)
            .map(|&(_, item_key, ..)| item_key)
            .collect();
        let mut stored = stored_counters(db, &known)?.into_iter();
        let mut it = db.raw_iterator_cf(cf_handle(db, CF_BACKLINKS));
        let mut added = Vec::new();
        for (hash, item_key, url, before) in small {
            let mut records: BTreeMap<Vec<u8>, LinkRecord> = BTreeMap::new();
            let before = if before > 0 {
                let prefix = generation_item_prefix(generation, hash);
                url_backlinks(&mut it, &prefix, url, |key, rec| {
                    records.insert(key.to_vec(), rec);
                })?;
                stored.next().unwrap_or_default()
            } else {
                Counters::default()
            };
            for &i in writes.get(&hash).into_iter().flatten() {
                let (_, key, op) = &batch.ops[i];
                match op {
                    Op::Put(value) => {
                        if !crate::table::is_pointer(value)? {
                            let rec = LinkRecord::decode(value)?;
                            if rec.target_url == url {
                                records.insert(key.clone(), rec);
                            }
                        }
                    }
                    Op::Delete => {
                        records.remove(key);
                    }
                    Op::Merge(_) => {}
                }
            }
            // Rows only for a URL that grew past the bound; counters alone are cheaper
            // counted straight from the records.
            let (rows, after) = if records.len() as i64 > URL_ROWS_ABOVE {
                url_views(url, records.values(), hasher, true)
            } else {
                (Vec::new(), member_counters(records.values()))
            };
            let delta = member_counter_moves(&before, &after);
            if delta != Counters::default() {
                out.merge(&CountersKey(item_key), &delta);
            }
            added.extend(rows.into_iter().filter(|(t, ..)| MEMBER_TABLES.contains(t)));
        }
        for (table, key, value) in added {
            out.push(table, key, Op::Put(value));
        }
        let stored = stored_backlinks(db, &large)?;
        for (item_key, stored) in large.into_iter().zip(stored) {
            let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
            if stored + moved <= URL_ROWS_ABOVE {
                let end = prefix_successor(item_key).unwrap_or_default();
                for table in MEMBER_TABLES {
                    out.delete_range(table, item_key.to_vec(), end.clone());
                }
                settled.push(item_key.to_vec());
            }
        }
        // A small URL's row counts moved here, not in the batch's counters.
        settled.extend(
            self.url_classes
                .iter()
                .filter(|(_, c)| matches!(c, UrlClass::Small { .. }))
                .map(|(k, _)| k.clone()),
        );
        Ok(Settled {
            writes: out,
            urls: settled,
        })
    }
}

/// What settling a batch's small URLs adds to it.
pub(super) struct Settled {
    /// Writes to add to the batch: they touch no key the batch's other writes touch but
    /// `counters` rows, whose merges commute.
    pub(super) writes: SortedBatch,
    /// The URLs whose rows the batch settles this way: their row counts are the store's
    /// to tell from now on.
    pub(super) urls: Vec<Vec<u8>>,
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
