//! The final view rows of an item whose contributions are summed whole in memory.
//!
//! A bulk build reduces a target item's backlinks one after another, and with them (same
//! partition hash) the distinct members its pages contributed. When all of that fits the
//! sum's budget, the item's `distinct`, `refdomains`, `anchors` and `timeline` rows, their
//! ranked copies, and what they feed in counters are worked out here at once: no later
//! stage sorts and folds them row by row. An item that overflows the budget takes the
//! general path (its partial sums are sorted and reduced stage by stage by
//! [`Reducer`](super::Reducer)), which gives the same rows; the bulk-equals-incremental
//! test builds both ways.

use super::contribution_sum::{HashMap, ItemSum};
use super::linked_hosts::Alias;
use super::Table;
use crate::aggregate::{
    accumulate, has_ranked_copies, snapshot_ranked_copies, AnchorText, Counters, Ranked, RefDomain,
    RowAnchors,
};
use crate::keys::{DistinctKind, ItemHasher};
use crate::table::{
    row, AnchorKey, BuiltKey, Count, CountersKey, DistinctKey, RankedAnchorKey, RankedRefDomainKey,
    RefDomainKey, SnapshotRefDomainKey, TimelineKey,
};
use crate::views::{
    distinct_counters, out_domain_counters, ref_domain_counters, split_anchor_member,
    subnet_of_member,
};

/// A row as the reducer hands it on: `(table, key, value)`.
pub(crate) type Row = (Table, Vec<u8>, Vec<u8>);

/// Which of an item's member rows are written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemberRows {
    /// Its `refdomains` and `anchors` rows and `distinct` rows of the member kinds at
    /// all: not for an item with few backlinks ([`crate::small_item`]).
    pub members: bool,
    /// Also the rows only the incremental writer reads (not in a snapshot): `distinct`
    /// rows of its kinds and referring-domain rows' anchor texts.
    pub writer_rows: bool,
    /// What the item, a root domain, reads of its linked hosts' views
    /// ([`super::linked_hosts`]): with one host, of its view rows only that `LinkedHost`
    /// row is written; with a few in a snapshot, its backlink rows are left out and a
    /// `BacklinkHost` row names each host.
    pub alias: Option<Alias>,
}

impl MemberRows {
    /// The kind a `distinct` member of `kind` is written as, if it is written.
    pub(crate) fn distinct(self, kind: DistinctKind) -> Option<DistinctKind> {
        if kind == DistinctKind::LinkedHost {
            return match self.alias? {
                Alias::OneHost => Some(DistinctKind::LinkedHost),
                Alias::BacklinkHosts => Some(DistinctKind::BacklinkHost),
            };
        }
        let written =
            (!kind.is_member() || self.views()) && (self.writer_rows || !kind.is_writer_only());
        written.then_some(kind)
    }

    /// Whether its `refdomains` and `anchors` rows (and their ranked copies) are written.
    pub(crate) fn views(self) -> bool {
        self.members && self.alias != Some(Alias::OneHost)
    }

    /// Whether its `timeline` rows are written: not for a root domain that reads its one
    /// host's views, nor in a snapshot for an item with few backlinks, whose reads work
    /// its timeline out from its records.
    pub(crate) fn timeline(self) -> bool {
        self.alias != Some(Alias::OneHost) && (self.members || self.writer_rows)
    }
}

/// Adds the final rows of one item's whole sum to `rows` (in no particular order), and
/// gives `fed` the counters rows: the item's own, and those of referring root domains
/// that gain an out-domain. Member rows that `keep` leaves out are counted but not
/// added. Drains the sum.
pub(crate) fn item_rows(
    sum: &mut ItemSum,
    hasher: &ItemHasher,
    keep: MemberRows,
    rows: &mut Vec<Row>,
    fed: &mut dyn FnMut(Row),
) {
    let item_key = sum.key.as_slice();
    let mut counters = sum.counters.take();
    let mut count = |delta: &Counters| match &mut counters {
        Some(acc) => accumulate(acc, delta),
        None => counters = Some(*delta),
    };

    // Distinct members in key order, so that one subnet's addresses come together and it
    // is counted at its first. Keys are `item_key | kind | member | 0`, and appending 0,
    // the least byte, to every member keeps their order: (kind, member) sorts them the
    // same, so only the rows kept are encoded.
    let mut members: Vec<(DistinctKind, String, i64)> =
        sum.distinct.drain().filter(|(_, _, n)| *n > 0).collect();
    members.sort_unstable_by(|a, b| (a.0 as u8, a.1.as_bytes()).cmp(&(b.0 as u8, b.1.as_bytes())));
    let mut last_subnet: Option<&str> = None;
    // One referring domain's anchor texts come together (`domain \x01 anchor`).
    let mut run = AnchorRun::default();
    for (kind, member, n) in &members {
        if *kind == DistinctKind::AnchorDomain {
            let (domain, text) = split_anchor_member(member);
            // A snapshot's referring-domain rows keep no texts.
            if keep.writer_rows {
                if domain != run.domain {
                    run.end(item_key, &mut sum.ref_domains, keep, rows);
                    run.domain = domain;
                }
                run.members.push((member, *n));
            }
            let share = AnchorText {
                ref_domains: 1,
                ..Default::default()
            };
            match sum.anchors.get_mut(text) {
                Some(row) => row.fold(&share),
                None => {
                    sum.anchors.insert(text.to_string(), share);
                }
            }
            continue;
        }
        if let Some(stored) = keep.distinct(*kind) {
            let key = DistinctKey {
                item_key,
                kind: stored,
                member,
            };
            rows.push(row(&key, &Count(kind.stored_count(*n))));
        }
        if *kind == DistinctKind::RefIp {
            let subnet = subnet_of_member(member);
            if last_subnet != Some(subnet) {
                last_subnet = Some(subnet);
                count(&Counters {
                    ref_subnets: 1,
                    ..Default::default()
                });
            }
        }
        if let Some(delta) = distinct_counters(*kind, 1) {
            count(&delta);
        }
    }
    run.end(item_key, &mut sum.ref_domains, keep, rows);

    let mut ref_domains: Vec<RefDomain> = sum
        .ref_domains
        .drain()
        .filter(|(_, row)| row.links > 0)
        .map(|(domain, value)| RefDomain { domain, ..value })
        .collect();
    let copies = ranked_copies(&mut ref_domains, keep);
    for (i, value) in ref_domains.iter().enumerate() {
        let live = i64::from(value.live_links() > 0);
        count(&ref_domain_counters(&value.domain, 1, live));
        if let Some((source, delta)) = out_domain_counters(item_key, &value.domain, live, hasher) {
            fed(row(&CountersKey(&source), &delta));
        }
        let copy = (i < copies).then_some(RankedRefDomainKey {
            item_key,
            row: value,
        });
        let key = RefDomainKey {
            item_key,
            domain: &value.domain,
        };
        if keep.writer_rows {
            push_member(rows, keep.views(), &key, copy.as_ref(), value);
        } else {
            let key = SnapshotRefDomainKey(key);
            push_member(rows, keep.views(), &key, copy.as_ref(), value);
        }
    }

    let anchors: Vec<_> = sum
        .anchors
        .drain()
        .filter(|(_, row)| row.links > 0)
        .collect();
    let ranked = has_ranked_copies(anchors.len() as i64);
    for (text, mut value) in anchors {
        count(&Counters {
            anchor_texts: 1,
            ..Default::default()
        });
        value.text = text;
        let copy = ranked.then_some(RankedAnchorKey {
            item_key,
            row: &value,
        });
        let key = AnchorKey {
            item_key,
            text: &value.text,
        };
        push_member(rows, keep.views(), &key, copy.as_ref(), &value);
    }

    for (day, delta) in sum.timeline.drain(..) {
        if (delta.found != 0 || delta.lost != 0) && keep.timeline() {
            rows.push(row(&TimelineKey { item_key, day }, &delta));
        }
    }
    if let Some(delta) = counters {
        fed(row(&CountersKey(item_key), &delta));
    }
}

/// How many of an item's referring-domain rows get ranked copies: none for a small
/// item, all in a store with writer rows, a snapshot's [`snapshot_ranked_copies`] first
/// in rank order, which this moves to the front.
fn ranked_copies(rows: &mut [RefDomain], keep: MemberRows) -> usize {
    if !has_ranked_copies(rows.len() as i64) {
        return 0;
    }
    let copies = match keep.writer_rows {
        true => rows.len(),
        false => snapshot_ranked_copies(rows.len()),
    };
    if copies < rows.len() {
        rows.select_nth_unstable_by(copies, Ranked::ranked_order);
    }
    copies
}

/// One referring domain's anchor texts as the item's `distinct` members come, in key
/// order: `domain \x01 text` members with their counts.
#[derive(Default)]
struct AnchorRun<'m> {
    domain: &'m str,
    members: Vec<(&'m str, i64)>,
}

impl AnchorRun<'_> {
    /// Puts the run's texts where the store keeps them: in its domain's row while they
    /// are few, else in `distinct` rows with only their number in the row. Leaves the
    /// run empty.
    fn end(
        &mut self,
        item_key: &[u8],
        ref_domains: &mut HashMap<String, RefDomain>,
        keep: MemberRows,
        rows: &mut Vec<Row>,
    ) {
        if self.members.is_empty() {
            return;
        }
        let mut anchors = RowAnchors {
            texts: self.members.len() as i64,
            counts: Vec::new(),
        };
        if anchors.in_row() {
            anchors.counts = self
                .members
                .drain(..)
                .map(|(member, n)| (split_anchor_member(member).1.to_string(), n))
                .collect();
        } else {
            for (member, n) in self.members.drain(..) {
                if keep.distinct(DistinctKind::AnchorDomain).is_some() {
                    let key = DistinctKey {
                        item_key,
                        kind: DistinctKind::AnchorDomain,
                        member,
                    };
                    rows.push(row(&key, &Count(n)));
                }
            }
        }
        // Every text came with a backlink of the domain, so its row is in the sum.
        if let Some(row) = ref_domains.get_mut(self.domain) {
            row.anchors = anchors;
        }
    }
}

/// A referring-domain or anchor row, and its ranked copy when the item keeps them.
fn push_member<K: BuiltKey, R: BuiltKey<Value = K::Value>>(
    rows: &mut Vec<Row>,
    keep_members: bool,
    key: &K,
    ranked: Option<&R>,
    value: &K::Value,
) {
    if !keep_members {
        return;
    }
    if let Some(copy) = ranked {
        rows.push(row(copy, value));
    }
    rows.push(row(key, value));
}
