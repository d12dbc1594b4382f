//! Contributions summed by the row they change before they are encoded.
//!
//! A bulk build meets an item's contributions together: a page's link records all
//! contribute to the page's (and its host's and domain's) counters, and a target item's
//! backlinks are reduced one after another (backlink keys start with the item hash). Most
//! of those contributions land on a few rows (the item's counters, a day of its
//! timeline, one referring domain), so summing them here, typed, means each row is
//! encoded, combined and sorted once instead of once per link.
//!
//! Every view row is a sum (counts), a minimum or a maximum of its contributions, so a
//! partial sum is itself a valid contribution: flushing early (at the memory bound) only
//! leaves more rows for the reduction to fold. A sum that never flushed early holds an
//! item's contributions whole, and its final rows can be worked out in memory
//! (`item_rows`).

use super::{emit_row, Emit};
use crate::aggregate::{accumulate, AnchorText, Counters, RefDomain, TimelineDelta};
use crate::keys::DistinctKind;
use crate::small_item::{keeps_member_rows, may_be_small};
use crate::table::{
    row, AnchorKey, BacklinkKey, BacklinkRow, BuiltKey, Count, CountersKey, DistinctKey, Empty,
    RefDomainKey, TableKey, TimelineKey,
};
use crate::views::{Contribution, ViewSink};

pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Bytes of members held before the sum is flushed whatever the caller does: a hot
/// item's backlinks bring hundreds of thousands of referring domains and addresses.
const BUDGET: usize = 8 << 20;

/// Bookkeeping bytes counted per member besides its text.
const MEMBER_OVERHEAD: usize = 64;

/// The summed rows of one item.
#[derive(Default)]
pub(crate) struct ItemSum {
    pub(super) key: Vec<u8>,
    pub(super) counters: Option<Counters>,
    pub(super) distinct: DistinctSums,
    pub(super) ref_domains: HashMap<String, RefDomain>,
    pub(super) anchors: HashMap<String, AnchorText>,
    /// Few days per item: a build's links were mostly found on a few crawl days.
    pub(super) timeline: Vec<(u32, TimelineDelta)>,
}

impl ItemSum {
    fn emit(&mut self, emit: &mut Emit<'_>) {
        let item_key = self.key.as_slice();
        if let Some(delta) = self.counters.take() {
            emit_row(emit, &CountersKey(item_key), &delta);
        }
        for (kind, member, n) in self.distinct.drain() {
            let key = DistinctKey {
                item_key,
                kind,
                member: &member,
            };
            emit_row(emit, &key, &Count(n));
        }
        for (domain, value) in self.ref_domains.drain() {
            let key = RefDomainKey {
                item_key,
                domain: &domain,
            };
            emit_row(emit, &key, &value);
        }
        for (text, value) in self.anchors.drain() {
            let key = AnchorKey {
                item_key,
                text: &text,
            };
            emit_row(emit, &key, &value);
        }
        for (day, delta) in self.timeline.drain(..) {
            emit_row(emit, &TimelineKey { item_key, day }, &delta);
        }
        self.shrink();
    }

    /// Lets go of the room a hot item's maps grew to (call once they are drained).
    pub(super) fn shrink(&mut self) {
        shrink_after_hot_item(&mut self.distinct.counts);
        shrink_after_hot_item(&mut self.ref_domains);
        shrink_after_hot_item(&mut self.anchors);
    }
}

/// An item's distinct members and their reference counts, one map for every kind: a
/// key is the kind's byte, then the member, so that a member already counted is found
/// without making a key of it.
#[derive(Default)]
pub(crate) struct DistinctSums {
    counts: HashMap<String, i64>,
    /// The key being looked up.
    key: String,
}

impl DistinctSums {
    /// Adds `n` references to `member`; true when it is new.
    fn add(&mut self, kind: DistinctKind, member: &str, n: i64) -> bool {
        self.key.clear();
        self.key.push(char::from(kind as u8));
        self.key.push_str(member);
        match self.counts.get_mut(self.key.as_str()) {
            Some(count) => {
                *count += n;
                false
            }
            None => {
                self.counts.insert(self.key.clone(), n);
                true
            }
        }
    }

    /// Every member with its kind and count, in no order.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = (DistinctKind, String, i64)> + '_ {
        self.counts.drain().map(|(mut key, n)| {
            let kind = u8::try_from(key.remove(0))
                .ok()
                .and_then(DistinctKind::from_u8);
            (kind.expect("keys start with a kind"), key, n)
        })
    }
}

/// Most entries a drained map keeps room for.
const RETAINED_CAPACITY: usize = 1024;

/// Drops a drained map that a hot item grew: draining and clearing a map costs its
/// whole capacity, so each small item that used the same sum after a hot one paid for
/// the hot one's table (`perf`: 1.8% of a bulk build in `memset`).
fn shrink_after_hot_item<K, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > RETAINED_CAPACITY {
        *map = HashMap::default();
    }
}

/// Folds `share` into `member`'s row of `rows`, copying the member only when the row is
/// new; true when it is.
fn fold_member<V>(
    rows: &mut HashMap<String, V>,
    member: &str,
    share: V,
    fold: fn(&mut V, &V),
) -> bool {
    match rows.get_mut(member) {
        Some(row) => {
            fold(row, &share);
            false
        }
        None => {
            rows.insert(member.to_string(), share);
            true
        }
    }
}

/// Sums contributions per item and row (see the module documentation).
pub(crate) struct ContributionSum {
    /// `items[..live]` hold sums; the rest keep their maps' memory for the next items.
    items: Vec<ItemSum>,
    live: usize,
    bytes: usize,
    budget: usize,
    /// The budget made the sum flush since the last [`ContributionSum::take_whole`].
    flushed_early: bool,
    /// Backlinks of the items whose sums were flushed (reduced stage by stage), by item
    /// key: whether their rows are kept ([`ContributionSum::keeps_member_rows`]).
    flushed_backlinks: HashMap<Vec<u8>, i64>,
}

impl Default for ContributionSum {
    fn default() -> ContributionSum {
        ContributionSum::with_budget(BUDGET)
    }
}

impl ContributionSum {
    /// A sum that flushes when its members take about `budget` bytes.
    pub(crate) fn with_budget(budget: usize) -> ContributionSum {
        ContributionSum {
            items: Vec::new(),
            live: 0,
            bytes: 0,
            budget,
            flushed_early: false,
            flushed_backlinks: HashMap::default(),
        }
    }

    /// Whether the sums held are whole (never flushed early since the last call), and
    /// a fresh start for the next items.
    pub(crate) fn take_whole(&mut self) -> bool {
        !std::mem::take(&mut self.flushed_early)
    }

    /// Adds one contribution. Rows that are not sums (backlinks, expiry) are emitted at
    /// once.
    pub(crate) fn add(&mut self, c: Contribution, emit: &mut Emit<'_>) {
        match c {
            Contribution::Counters { item_key, delta } => self.counters(&item_key, delta),
            Contribution::Distinct {
                item_key,
                kind,
                member,
                sign,
            } => self.distinct(&item_key, kind, &member, sign),
            Contribution::RefDomain {
                item_key,
                domain,
                share,
            } => self.ref_domain(&item_key, &domain, share),
            Contribution::Anchor {
                item_key,
                text,
                share,
            } => self.anchor(&item_key, &text, share),
            Contribution::Timeline {
                item_key,
                day,
                delta,
            } => self.timeline(&item_key, day, delta),
            Contribution::Backlink { key, row } => {
                let Some(BacklinkRow::Record(record)) = row else {
                    unreachable!("a bulk build adds records, and no pointer rows (facts rows)")
                };
                emit(BacklinkKey::TABLE, key.encode(), record.into_bytes());
            }
            Contribution::Expiry { key, .. } => {
                let (table, key, value) = row(&key, &Empty);
                emit(table, key, value);
            }
        }
        self.flush_if_full(emit);
    }

    /// Adds `n` references to a distinct member of an item.
    pub(crate) fn add_distinct(
        &mut self,
        item_key: &[u8],
        kind: DistinctKind,
        member: &str,
        n: i64,
        emit: &mut Emit<'_>,
    ) {
        self.distinct(item_key, kind, member, n);
        self.flush_if_full(emit);
    }

    /// Emits every summed row once the members held reach the budget (a caller that
    /// feeds the sum as a [`ViewSink`] calls this after each link).
    pub(crate) fn flush_if_full(&mut self, emit: &mut Emit<'_>) {
        if self.bytes >= self.budget {
            self.flush_early(emit);
        }
    }

    fn flush_early(&mut self, emit: &mut Emit<'_>) {
        self.flushed_early = true;
        self.flush(emit);
    }

    /// Adds a delta of an item's counters.
    pub(crate) fn add_counters(&mut self, item_key: &[u8], delta: &Counters) {
        let sum = self.item(item_key);
        match &mut sum.counters {
            Some(acc) => accumulate(acc, delta),
            None => sum.counters = Some(*delta),
        }
    }

    /// Adds one referring domain to the count of an anchor text's row (what an
    /// `AnchorDomain` distinct member feeds).
    pub(crate) fn add_anchor_ref_domain(
        &mut self,
        item_key: &[u8],
        text: &str,
        emit: &mut Emit<'_>,
    ) {
        let share = AnchorText {
            ref_domains: 1,
            ..Default::default()
        };
        self.anchor(item_key, text, share);
        self.flush_if_full(emit);
    }

    /// Emits every summed row and starts over.
    pub(crate) fn flush(&mut self, emit: &mut Emit<'_>) {
        for sum in &mut self.items[..self.live] {
            let backlinks = sum.counters.map_or(0, |c| c.ext_backlinks);
            if backlinks != 0 && may_be_small(&sum.key) {
                *self.flushed_backlinks.entry(sum.key.clone()).or_default() += backlinks;
            }
            sum.emit(emit);
        }
        self.live = 0;
        self.bytes = 0;
    }

    /// Whether an item whose sums were flushed keeps its `distinct`, `refdomains` and
    /// `anchors` rows: an item's backlinks are all summed in the first stage, so in later
    /// stages this is final.
    pub(crate) fn keeps_member_rows(&self, item_key: &[u8]) -> bool {
        let backlinks = self.flushed_backlinks.get(item_key).copied();
        keeps_member_rows(item_key, backlinks.unwrap_or(0))
    }

    /// Hands every item's sums to `f`, which must drain them (as [`ItemSum::emit`]
    /// does: a sum is reused for the next items), and starts over.
    pub(crate) fn drain_items(&mut self, f: &mut dyn FnMut(&mut ItemSum)) {
        for sum in &mut self.items[..self.live] {
            f(sum);
            sum.shrink();
        }
        self.live = 0;
        self.bytes = 0;
    }

    /// The sum of `item_key`'s rows, started if new. Linear: a sum holds the few items of
    /// one page or one target item between flushes.
    fn item(&mut self, item_key: &[u8]) -> &mut ItemSum {
        let live = &self.items[..self.live];
        let i = match live.iter().position(|s| s.key == item_key) {
            Some(i) => i,
            None => {
                if self.live == self.items.len() {
                    self.items.push(ItemSum::default());
                }
                let sum = &mut self.items[self.live];
                sum.key.clear();
                sum.key.extend_from_slice(item_key);
                self.bytes += item_key.len() + MEMBER_OVERHEAD;
                self.live += 1;
                self.live - 1
            }
        };
        &mut self.items[i]
    }
}

/// Shares folded into the item sums; the caller flushes ([`ContributionSum::flush_if_full`]).
impl ViewSink for ContributionSum {
    fn counters(&mut self, item_key: &[u8], delta: Counters) {
        self.add_counters(item_key, &delta);
    }

    fn distinct(&mut self, item_key: &[u8], kind: DistinctKind, member: &str, sign: i64) {
        if self.item(item_key).distinct.add(kind, member, sign) {
            self.bytes += member.len() + MEMBER_OVERHEAD;
        }
    }

    fn ref_domain(&mut self, item_key: &[u8], domain: &str, share: RefDomain) {
        let rows = &mut self.item(item_key).ref_domains;
        if fold_member(rows, domain, share, RefDomain::fold) {
            self.bytes += domain.len() + MEMBER_OVERHEAD;
        }
    }

    fn anchor(&mut self, item_key: &[u8], text: &str, share: AnchorText) {
        let rows = &mut self.item(item_key).anchors;
        if fold_member(rows, text, share, AnchorText::fold) {
            self.bytes += text.len() + MEMBER_OVERHEAD;
        }
    }

    fn timeline(&mut self, item_key: &[u8], day: u32, delta: TimelineDelta) {
        let sum = self.item(item_key);
        match sum.timeline.iter_mut().find(|(d, _)| *d == day) {
            Some((_, acc)) => acc.fold(&delta),
            None => sum.timeline.push((day, delta)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{ReduceOut, Reducer, Table, Values};
    use crate::item::Item;
    use crate::keys::ItemHasher;
    use std::collections::BTreeMap;

    /// One group's values, as a sorter yields them.
    struct GroupValues(std::vec::IntoIter<Vec<u8>>, Vec<u8>);

    impl Values for GroupValues {
        fn next_value(&mut self) -> Option<&[u8]> {
            self.1 = self.0.next()?;
            Some(&self.1)
        }
    }

    /// Every kind and member, odd ones included, comes back out of the map as it went in,
    /// with its references summed.
    #[test]
    fn distinct_sums_give_back_each_kind_and_member() {
        let kinds = [
            DistinctKind::RefIp,
            DistinctKind::AnchorDomain,
            DistinctKind::OutDomain,
            DistinctKind::IpDomain,
            DistinctKind::DomainIp,
            DistinctKind::LinkedHost,
        ];
        let members = ["", "a.example", "a.example\u{1}text", "\u{1}", "Éé文字"];
        let mut sums = DistinctSums::default();
        for (i, &kind) in kinds.iter().enumerate() {
            for (j, member) in members.iter().enumerate() {
                assert!(sums.add(kind, member, 1), "{kind:?} {member:?} is new");
                assert!(!sums.add(kind, member, (i * 10 + j) as i64));
            }
        }
        let mut got: Vec<(u8, String, i64)> = sums
            .drain()
            .map(|(kind, member, n)| (kind as u8, member, n))
            .collect();
        got.sort();
        let mut want: Vec<(u8, String, i64)> = kinds
            .iter()
            .enumerate()
            .flat_map(|(i, &kind)| {
                members
                    .iter()
                    .enumerate()
                    .map(move |(j, m)| (kind as u8, m.to_string(), 1 + (i * 10 + j) as i64))
            })
            .collect();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(sums.drain().count(), 0);
    }

    /// A hot item's contributions, summed within a tiny budget (many early flushes) and
    /// within the default one, give the same rows once a reduction folds them.
    #[test]
    fn early_flushes_fold_to_the_same_rows() {
        fn contributions(item: Vec<u8>) -> impl Iterator<Item = Contribution> {
            (0..2_000u32).flat_map(move |i| {
                let item_key = item.clone();
                [
                    Contribution::Distinct {
                        item_key: item_key.clone(),
                        kind: DistinctKind::RefIp,
                        member: format!("10.0.{}.{}", i % 7, i % 11),
                        sign: 1,
                    },
                    Contribution::RefDomain {
                        item_key: item_key.clone(),
                        domain: format!("d{}.example", i % 13),
                        share: RefDomain {
                            links: 1,
                            deleted_links: i64::from(i % 5 == 0),
                            first_seen: 100 + i % 17,
                            last_seen: 200 + i % 19,
                            ..Default::default()
                        },
                    },
                    Contribution::Anchor {
                        item_key: item_key.clone(),
                        text: format!("anchor {}", i % 3),
                        share: AnchorText {
                            links: 1,
                            nofollow_links: i64::from(i % 2 == 0),
                            ..Default::default()
                        },
                    },
                    Contribution::Timeline {
                        item_key: item_key.clone(),
                        day: 100 + i % 3,
                        delta: TimelineDelta { found: 1, lost: 0 },
                    },
                    Contribution::Counters {
                        item_key,
                        delta: Counters {
                            ext_backlinks: 1,
                            first_link_day: i64::from(100 + i % 17),
                            ..Default::default()
                        },
                    },
                ]
            })
        }
        // Rows as a builder gets them: summed within `budget`, sorted by key, and each
        // group reduced into its table's final row.
        let folded = |budget: usize| {
            let mut sum = ContributionSum::with_budget(budget);
            let mut groups: BTreeMap<(Table, Vec<u8>), Vec<Vec<u8>>> = BTreeMap::new();
            let mut emitted = 0;
            let mut emit = |table: Table, key: Vec<u8>, value: Vec<u8>| {
                emitted += 1;
                groups.entry((table, key)).or_default().push(value);
            };
            let hasher = ItemHasher::new(64);
            for item in Item::levels_of_url("http://www.a.example/page")
                .into_iter()
                .take(2)
            {
                for c in contributions(hasher.item_key(&item)) {
                    sum.add(c, &mut emit);
                }
            }
            sum.flush(&mut emit);
            // A later stage's reduction: final rows kept, fed ones left out.
            struct Final(BTreeMap<(Table, Vec<u8>), Vec<u8>>);
            impl ReduceOut for Final {
                fn row(&mut self, table: Table, key: &[u8], value: &[u8]) {
                    self.0.insert((table, key.to_vec()), value.to_vec());
                }
                fn feed(&mut self, _: Table, _: Vec<u8>, _: Vec<u8>) {}
                fn cut(&mut self) {}
            }
            let mut reducer = Reducer::new(64, BUDGET, true);
            reducer.start_stage(Table::Distinct.stage());
            let mut rows = Final(BTreeMap::new());
            for ((table, key), values) in groups {
                let mut values = GroupValues(values.into_iter(), Vec::new());
                reducer.reduce(table, &key, &mut values, &mut rows).unwrap();
            }
            (rows.0, emitted)
        };
        let (small, small_emitted) = folded(256);
        let (large, large_emitted) = folded(BUDGET);
        assert_eq!(small, large);
        // 2 items x (77 addresses, 13 domains, 3 anchors, 3 days, 1 counters row).
        assert_eq!(large_emitted, 2 * (77 + 13 + 3 + 3 + 1));
        assert!(small_emitted > 10 * large_emitted, "{small_emitted} rows");
    }
}
