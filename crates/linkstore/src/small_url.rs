//! URLs with few backlinks keep no referring-domain, anchor-text or address rows (format
//! 12): their views are worked out from their backlink records when needed.
//!
//! Most URLs have a handful of backlinks, and a URL's backlink rows hold its links'
//! records whole (the target's other levels hold pointers), so a reader can fold them
//! into the URL's rows in microseconds. At 1.04M links, rows of URLs with at most
//! [`URL_ROWS_ABOVE`] backlinks were 77% of the URL-level referring-domain and address
//! rows and 83% of its anchor rows. Whether a URL keeps rows depends only on its
//! `ext_backlinks` counter, whichever write path wrote it; counters (referring domains,
//! addresses, subnets, anchor texts) are kept for every item.

use crate::aggregate::Counters;
use crate::build::item_rows::{item_rows, Row};
use crate::build::ContributionSum;
use crate::build::Table;
use crate::item::{Item, Level};
use crate::keys::{level_of_item_key, ItemHasher};
use crate::record::LinkRecord;
use crate::table::{CountersKey, Pointer, TableKey};
use crate::views::{target_contributions, Contribution};

/// URLs with at most this many backlinks (deleted ones included) keep no rows in
/// `refdomains`, `anchors` or `distinct`.
pub const URL_ROWS_ABOVE: i64 = 64;

/// Whether the item of `item_key` keeps its referring-domain, anchor-text and address
/// rows when it has `ext_backlinks` backlinks: every host, root domain and the index do;
/// a URL only past [`URL_ROWS_ABOVE`].
pub(crate) fn keeps_member_rows(item_key: &[u8], ext_backlinks: i64) -> bool {
    !is_url_item_key(item_key) || ext_backlinks > URL_ROWS_ABOVE
}

pub(crate) fn is_url_item_key(item_key: &[u8]) -> bool {
    level_of_item_key(item_key) == Some(Level::Url as u8)
}

/// Whether a row of `table` is one a URL with few backlinks does without.
pub(crate) fn is_member_table(table: Table) -> bool {
    matches!(
        table,
        Table::Distinct
            | Table::RefDomains
            | Table::Anchors
            | Table::RefDomainsRanked
            | Table::AnchorsRanked
    )
}

/// The views a URL's backlink `records` give it: its `distinct`, `refdomains` and
/// `anchors` rows (with ranked copies past the bound, as a bulk build writes them), and
/// the counters those rows feed (referring domains, live, edu and gov ones, addresses,
/// subnets, anchor texts; no link counts).
pub(crate) fn url_views<'r>(
    url: &str,
    records: impl IntoIterator<Item = &'r LinkRecord>,
    hasher: &ItemHasher,
) -> (Vec<Row>, Counters) {
    let item = Item::url(url.to_string());
    // The records are in memory already: no budget to flush at.
    let mut sum = ContributionSum::with_budget(usize::MAX);
    let mut contributions = Vec::new();
    let mut unused = |_: Table, _: Vec<u8>, _: Vec<u8>| {};
    for rec in records {
        target_contributions(rec, 1, [item.clone()], hasher, &mut contributions);
        for c in contributions.drain(..) {
            if matches!(
                c,
                Contribution::RefDomain { .. }
                    | Contribution::Anchor { .. }
                    | Contribution::Distinct { .. }
            ) {
                sum.add(c, &mut unused);
            }
        }
    }
    let (mut rows, mut counters) = (Vec::new(), Counters::default());
    sum.drain_items(&mut |item_sum| {
        item_rows(item_sum, hasher, true, &mut rows, &mut |(
            table,
            _,
            value,
        )| {
            if table == Table::Counters {
                if let Ok(c) = CountersKey(&[]).decode_value(&value) {
                    counters = c;
                }
            }
        });
    });
    (rows, counters)
}

/// Reads the records of a URL's backlink rows (those whose target is `url`; pointer rows
/// of colliding hosts and domains, and other URLs' rows, are skipped) from an iterator
/// over `backlinks` set at the URL's `generation | item_hash` prefix, stopping after
/// `limit`.
pub(crate) fn url_backlinks(
    it: &mut rocksdb::DBRawIterator<'_>,
    prefix: &[u8],
    url: &str,
    limit: usize,
    mut visit: impl FnMut(&[u8], LinkRecord),
) -> crate::Result<usize> {
    let mut n = 0;
    it.seek(prefix);
    while n < limit {
        let Some((key, value)) = it.item() else { break };
        if !key.starts_with(prefix) {
            break;
        }
        if Pointer::of_value(value)?.is_none() {
            let rec = LinkRecord::decode(value)?;
            if rec.target_url == url {
                n += 1;
                visit(key, rec);
            }
        }
        it.next();
    }
    it.status()?;
    Ok(n)
}
