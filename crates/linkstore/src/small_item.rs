//! Items with few backlinks keep no referring-domain, anchor-text or address rows: their
//! views are worked out from their backlink records when needed (URLs since format 12,
//! hosts and root domains since format 19).
//!
//! Most items have a handful of backlinks, and a reader folds a few dozen records into
//! an item's rows in microseconds: a URL's backlink rows hold its links' records whole,
//! a host's or root domain's point to them and are resolved in one multi-get. At 1.04M
//! links, rows of URLs with at most [`MEMBER_ROWS_ABOVE`] backlinks were 77% of the
//! URL-level referring-domain and address rows; on the UK host graph of 1996, small
//! hosts hold 79% of the host-level referring domains. Whether an item keeps rows
//! depends only on its `ext_backlinks` counter, whichever write path wrote it; counters
//! (referring domains, addresses, subnets, anchor texts) are kept for every item.

use crate::aggregate::{AnchorText, Counters, RefDomain, TimelineDelta};
use crate::build::item_rows::{item_rows, MemberRows, Row};
use crate::build::ContributionSum;
use crate::build::Table;
use crate::error::{Error, Result};
use crate::item::{Item, Level};
use crate::keys::{level_of_item_key, DistinctKind, ItemHasher};
use crate::record::LinkRecord;
use crate::store::prefix_successor;
use crate::table::{CountersKey, TableKey};
use crate::views::{target_contributions, ViewFacts, ViewSink};

/// URLs, hosts and root domains with at most this many backlinks (deleted ones
/// included) keep no rows in `refdomains`, `anchors` or `distinct` (kinds 1 and 3).
pub const MEMBER_ROWS_ABOVE: i64 = 64;

// A small item's referring domain has at most as many anchor texts as backlinks, so all
// of them fit its row (`distinct` kind 3 holds texts only past `ANCHORS_IN_ROW`): the
// bulk build writes kind-3 rows without asking whether their item is small.
const _: () = assert!(crate::aggregate::ANCHORS_IN_ROW >= MEMBER_ROWS_ABOVE);

/// Whether the item of `item_key` keeps its referring-domain, anchor-text and address
/// rows when it has `ext_backlinks` backlinks: the index always does; a URL, host or
/// root domain only past [`MEMBER_ROWS_ABOVE`].
pub(crate) fn keeps_member_rows(item_key: &[u8], ext_backlinks: i64) -> bool {
    !may_be_small(item_key) || ext_backlinks > MEMBER_ROWS_ABOVE
}

/// Whether the item of `item_key` is a URL, host or root domain: one that keeps no
/// member rows while it is small.
pub(crate) fn may_be_small(item_key: &[u8]) -> bool {
    level_of_item_key(item_key) != Some(Level::Index as u8)
}

/// The item an item key (`hash | level | name | 0`) names.
pub(crate) fn item_of_key(item_key: &[u8]) -> Result<Item> {
    let level = match level_of_item_key(item_key) {
        Some(1) => Level::RootDomain,
        Some(2) => Level::SubDomain,
        Some(3) => Level::Url,
        _ => {
            return Err(Error::corrupt(
                crate::store::CF_COUNTERS,
                "an item key of no URL, host or domain",
            ))
        }
    };
    let name = item_key
        .get(9..item_key.len().saturating_sub(1))
        .and_then(|name| std::str::from_utf8(name).ok())
        .ok_or_else(|| Error::corrupt(crate::store::CF_COUNTERS, "an item key without a name"))?;
    Ok(Item {
        level,
        name: name.to_string(),
    })
}

/// The tables of an item's member rows: those a small item does without (of
/// `distinct`, the kinds its backlinks feed: [`DistinctKind::MEMBER_KINDS`]).
pub(crate) const MEMBER_TABLES: [Table; 5] = [
    Table::Distinct,
    Table::RefDomains,
    Table::Anchors,
    Table::RefDomainsRanked,
    Table::AnchorsRanked,
];

/// The key ranges of an item's member rows: all its rows of the referring-domain and
/// anchor tables and their ranked copies, and its `distinct` rows of the member kinds
/// (a host's out-domains and a root domain's linked host are its own).
pub(crate) fn member_row_ranges(item_key: &[u8]) -> Vec<(Table, Vec<u8>, Vec<u8>)> {
    let end = prefix_successor(item_key).unwrap_or_default();
    let mut ranges: Vec<_> = MEMBER_TABLES[1..]
        .iter()
        .map(|&t| (t, item_key.to_vec(), end.clone()))
        .collect();
    for kind in DistinctKind::MEMBER_KINDS {
        let from = [item_key, &[kind as u8]].concat();
        let to = prefix_successor(&from).unwrap_or_default();
        ranges.push((Table::Distinct, from, to));
    }
    ranges
}

/// The views an item's backlink `records` give it: with `with_rows`, its `distinct`,
/// `refdomains` and `anchors` rows (with ranked copies past the bound, as a bulk build
/// writes them); and the counters those rows feed (referring domains, live, edu and gov
/// ones, addresses, subnets, anchor texts; no link counts).
pub(crate) fn item_views<'r>(
    item: &Item,
    records: impl IntoIterator<Item = &'r LinkRecord>,
    hasher: &ItemHasher,
    with_rows: bool,
) -> (Vec<Row>, Counters) {
    // The records are in memory already: no budget to flush at.
    let mut sum = ContributionSum::with_budget(usize::MAX);
    for rec in records {
        let facts = ViewFacts::of(&rec.backlink_facts());
        target_contributions(
            &facts,
            1,
            [(item.level, item.name.as_str())],
            hasher,
            &mut MemberShares(&mut sum),
        );
    }
    let (mut rows, mut counters) = (Vec::new(), Counters::default());
    let item_key = hasher.item_key(item);
    // The item's own counters; a root domain's rows also feed its referring domains'.
    let mut fed = |(table, key, value): Row| {
        if table == Table::Counters && key == item_key {
            if let Ok(c) = CountersKey(&[]).decode_value(&value) {
                counters = c;
            }
        }
    };
    // The incremental writer writes these rows (an item crossing the bound), and no
    // snapshot takes it.
    let keep = MemberRows {
        members: with_rows,
        writer_rows: true,
        alias: None,
    };
    sum.drain_items(&mut |item_sum| item_rows(item_sum, hasher, keep, &mut rows, &mut fed));
    (rows, counters)
}

/// A link's shares of an item's referring-domain, anchor-text and distinct rows, summed;
/// its own counter and timeline shares are dropped ([`item_views`] gives only the
/// counters those rows feed).
struct MemberShares<'a>(&'a mut ContributionSum);

impl ViewSink for MemberShares<'_> {
    fn counters(&mut self, _: &[u8], _: Counters) {}

    fn distinct(&mut self, item_key: &[u8], kind: DistinctKind, member: &str, sign: i64) {
        self.0.distinct(item_key, kind, member, sign);
    }

    fn ref_domain(&mut self, item_key: &[u8], domain: &str, share: RefDomain) {
        self.0.ref_domain(item_key, domain, share);
    }

    fn anchor(&mut self, item_key: &[u8], text: &str, share: AnchorText) {
        self.0.anchor(item_key, text, share);
    }

    fn timeline(&mut self, _: &[u8], _: u32, _: TimelineDelta) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::flags;
    use crate::views::{member_counters, member_rows};

    /// The writer counts a small URL's member counters straight from its records; they
    /// must be what folding the records into rows gives.
    #[test]
    fn counting_records_gives_the_counters_and_rows_of_their_fold() {
        let url = "http://t.example.ac.uk/page";
        let sources = [
            ("http://a.com/1", Some("10.0.0.1"), "Click", 0),
            (
                "http://b.a.com/2",
                Some("10.0.0.2"),
                "click",
                flags::DELETED,
            ),
            ("http://c.gov/3", Some("10.0.1.9"), "Other", flags::DELETED),
            ("http://x.ac.uk/4", Some("2001:db8::1"), "", 0),
            (
                "http://y.ac.uk/5",
                Some("2001:db8:0:1::7"),
                "",
                flags::NOFOLLOW,
            ),
            ("http://z.org/6", None, "z", 0),
            // The first address again, spelt as IPv6; a text lower-cased past ASCII.
            ("http://d.net/7", Some("::ffff:10.0.0.1"), "ÉTÉ", 0),
            // An IPv6 subnet whose words are those of an IPv4 one (10.0.0).
            ("http://d.net/8", Some("a:0:0::5"), "été", flags::DELETED),
        ];
        let records: Vec<LinkRecord> = sources
            .iter()
            .map(|&(source, ip, anchor, flags)| LinkRecord {
                source_url: source.into(),
                target_url: url.into(),
                anchor_text: anchor.into(),
                source_ip: ip.map(|ip| ip.parse().unwrap()),
                flags,
                first_seen: 20_000,
                last_seen: 20_001,
                ..Default::default()
            })
            .collect();
        let hasher = ItemHasher::new(64);
        for n in 0..=records.len() {
            let (_, folded) = item_views(&Item::url(url), &records[..n], &hasher, false);
            let facts = records[..n].iter().map(LinkRecord::backlink_facts);
            assert_eq!(member_counters(facts), folded, "{n} records");
        }
        // And readers fold them into the rows a store would hold (texts aside).
        let item_key = hasher.item_key(&Item::url(url));
        let (rows, _) = item_views(&Item::url(url), &records, &hasher, true);
        let mut stored_domains = Vec::new();
        let mut stored_anchors = Vec::new();
        for (table, key, value) in rows {
            let member = crate::keys::member_of_key(&key, item_key.len(), 0, "test").unwrap();
            match table {
                Table::RefDomains => {
                    stored_domains.push(RefDomain::decode(member, &value).unwrap())
                }
                Table::Anchors => stored_anchors.push(AnchorText::decode(member, &value).unwrap()),
                _ => {}
            }
        }
        let (mut domains, mut anchors) = member_rows(&records);
        for rows in [&mut stored_domains, &mut domains] {
            rows.sort_unstable_by(|a, b| a.domain.cmp(&b.domain));
        }
        for rows in [&mut stored_anchors, &mut anchors] {
            rows.sort_unstable_by(|a, b| a.text.cmp(&b.text));
        }
        assert_eq!(domains, stored_domains);
        assert_eq!(anchors, stored_anchors);
        assert_eq!((domains.len(), anchors.len()), (6, 5));
        assert_eq!(
            anchors
                .iter()
                .find(|a| a.text == "click")
                .unwrap()
                .ref_domains,
            1
        );

        let all = member_counters(records.iter().map(LinkRecord::backlink_facts));
        assert_eq!((all.ref_domains, all.ref_domains_live), (6, 5));
        assert_eq!((all.ref_domains_edu, all.ref_domains_gov), (2, 1));
        assert_eq!((all.ref_ips, all.ref_subnets, all.anchor_texts), (6, 4, 5));
    }
}
