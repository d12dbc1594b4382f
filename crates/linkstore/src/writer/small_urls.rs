//! The incremental writer's side of URLs that keep no member rows ([`crate::small_url`]).
//!
//! A batch classes each URL whose views it changes when it first meets it: **small** (at
//! most [`URL_ROWS_ABOVE`] backlinks) or **large**. A small URL's referring-domain,
//! anchor-text and address contributions are not applied at all; when the batch is
//! written (its write thread sees the store exactly as the batch before left it), the
//! URL's backlinks are read before and after the batch's own backlink writes, and its
//! counters move by the difference of the views the two sets give. A URL that grows past
//! the bound gets all its rows from the records after the batch; a large one that drops
//! to it loses them all (range deletions, last in the write batch).

use super::{BatchRows, HashMap, Op, SortedBatch, Writer};
use crate::aggregate::Counters;
use crate::build::Table;
use crate::error::Result;
use crate::keys::{generation_item_prefix, url_hash, ItemHasher};
use crate::record::LinkRecord;
use crate::small_url::{
    is_member_table, is_url_item_key, url_backlinks, url_views, URL_ROWS_ABOVE,
};
use crate::store::{cf_handle, prefix_successor, CF_BACKLINKS, CF_COUNTERS};
use crate::table::{CountersKey, TableKey};
use crate::views::Contribution;
use std::collections::BTreeMap;

/// How a batch treats a URL whose views it changes, from its backlinks before the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UrlClass {
    /// `before` backlinks, at most [`URL_ROWS_ABOVE`]: its member contributions are
    /// skipped, and worked out when the batch is written.
    Small { url: String, before: i64 },
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
fn url_of_item_key(item_key: &[u8]) -> Option<&str> {
    std::str::from_utf8(item_key.get(9..item_key.len().checked_sub(1)?)?).ok()
}

impl Writer<'_> {
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
    /// across the bound), else by counting their backlink rows in the store, up to one
    /// past the bound.
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
        let cf = self.store.cf(CF_BACKLINKS);
        let mut it = self.store.db.raw_iterator_cf(cf);
        let mut classes = Vec::with_capacity(unmet.len());
        for item_key in unmet {
            let url = url_of_item_key(item_key).ok_or_else(|| {
                crate::Error::corrupt(CF_BACKLINKS, "a URL item key without a URL")
            })?;
            let known = self
                .in_flight_rows()
                .and_then(|rows| rows.url_size(item_key));
            let before = match known {
                Some(UrlSize::Exact(n)) => n,
                Some(UrlSize::Large) => URL_ROWS_ABOVE + 1,
                // Waited for above; the store has it now.
                Some(UrlSize::Unsettled) | None => {
                    let hash = self.store.hasher.url_item(url_hash(url));
                    let prefix = generation_item_prefix(self.generation, hash);
                    let limit = URL_ROWS_ABOVE as usize + 1;
                    url_backlinks(&mut it, &prefix, url, limit, |_, _| {})? as i64
                }
            };
            let class = if before <= URL_ROWS_ABOVE {
                UrlClass::Small {
                    url: url.to_string(),
                    before,
                }
            } else {
                UrlClass::Large
            };
            classes.push((item_key.to_vec(), class));
        }
        self.rows.url_classes.extend(classes);
        Ok(())
    }
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

    /// Adds to `batch` what the small URLs of this batch need (see the module
    /// documentation): counter moves, and the rows of those that grew past the bound;
    /// and range deletions of the rows of large URLs that dropped to it. Runs on the
    /// write thread, before the batch is written. Returns the URLs whose rows the batch
    /// settles this way: their row counts are the store's to tell from now on.
    pub(super) fn settle_urls(
        &self,
        batch: &mut SortedBatch,
        db: &rocksdb::DB,
        generation: u8,
        hasher: &ItemHasher,
    ) -> Result<Vec<Vec<u8>>> {
        // Forced collisions (tests) give URLs one hash.
        let mut small: Vec<(u64, &[u8], &str)> = Vec::new();
        let mut large: Vec<&[u8]> = Vec::new();
        for (item_key, class) in &self.url_classes {
            match class {
                UrlClass::Small { url, .. } => {
                    small.push((hasher.url_item(url_hash(url)), item_key, url));
                }
                UrlClass::Large => {
                    let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
                    if moved < 0 {
                        large.push(item_key);
                    }
                }
            }
        }
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
        let mut it = db.raw_iterator_cf(cf_handle(db, CF_BACKLINKS));
        let mut added = Vec::new();
        for (hash, item_key, url) in small {
            let prefix = generation_item_prefix(generation, hash);
            let mut records: BTreeMap<Vec<u8>, LinkRecord> = BTreeMap::new();
            url_backlinks(&mut it, &prefix, url, usize::MAX, |key, rec| {
                records.insert(key.to_vec(), rec);
            })?;
            let (_, before) = url_views(url, records.values(), hasher);
            for &i in writes.get(&hash).into_iter().flatten() {
                let (_, key, op) = &batch.ops[i];
                match op {
                    Op::Put(value) => {
                        if crate::table::Pointer::of_value(value)?.is_none() {
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
            let (rows, after) = url_views(url, records.values(), hasher);
            let delta = member_counter_moves(&before, &after);
            if delta != Counters::default() {
                batch.merge(&CountersKey(item_key), &delta);
            }
            if records.len() as i64 > URL_ROWS_ABOVE {
                added.extend(rows.into_iter().filter(|(t, ..)| is_member_table(*t)));
            }
        }
        for (table, key, value) in added {
            batch.push(table, key, Op::Put(value));
        }
        let cf = cf_handle(db, CF_COUNTERS);
        let values = db.batched_multi_get_cf(cf, &large, false);
        for (item_key, value) in large.into_iter().zip(values) {
            let stored = match value? {
                Some(v) => CountersKey(item_key).decode_value(&v)?.ext_backlinks,
                None => 0,
            };
            let moved = self.counters.get(item_key).map_or(0, |c| c.ext_backlinks);
            if stored + moved <= URL_ROWS_ABOVE {
                let end = prefix_successor(item_key).unwrap_or_default();
                for table in MEMBER_TABLES {
                    batch.delete_range(table, item_key.to_vec(), end.clone());
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
        Ok(settled)
    }
}

/// The tables of a URL's member rows.
const MEMBER_TABLES: [Table; 5] = [
    Table::Distinct,
    Table::RefDomains,
    Table::Anchors,
    Table::RefDomainsRanked,
    Table::AnchorsRanked,
];

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
