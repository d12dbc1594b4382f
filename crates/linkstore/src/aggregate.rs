//! Per-item counters and aggregate rows (referring domains, anchor texts, timeline),
//! with their versioned encodings and the counters' merge operator.

use crate::codec::{put_bytes, put_ivarint, put_uvarint, Reader};
use crate::error::Result;
use crate::store::{CF_ANCHORS, CF_ANCHORS_RANKED, CF_REFDOMAINS, CF_REFDOMAINS_RANKED};
use crate::views::min_nonzero;

pub const COUNTERS_VERSION: u8 = 1;
pub const AGGREGATE_VERSION: u8 = 1;
/// Version of anchor-text values, of referring-domain ranked copies and of a snapshot's
/// referring-domain rows (format 22). Version 1 repeated the member (domain, anchor
/// text) that ends the row's key; version 2 leaves it to the key.
pub const MEMBER_ROW_VERSION: u8 = 2;
/// Version of referring-domain rows: version 2's fields, then the row's anchor texts
/// (format 11).
pub const REF_DOMAIN_ROW_VERSION: u8 = 3;

/// Most anchor texts a referring-domain row holds itself: a row whose links use more
/// keeps none, and `distinct` kind-3 rows count them instead, so one domain linking to
/// an item under millions of texts cannot grow one value without bound.
pub const ANCHORS_IN_ROW: i64 = 64;

/// Items with at most this many referring-domain (or anchor-text) rows keep no ranked
/// copies: a read sorts their rows instead (at most about 35 µs for a top 100). At 1.04M
/// links 61% of referring-domain rows and 83% of anchor rows belong to such items, whose
/// copies both write paths skip (format 15; the bound of 64 before left 34% and 53%).
pub const RANKED_COPIES_ABOVE: i64 = 256;

/// How many ranked copies of referring-domain rows a snapshot keeps per item: those of
/// its first rows in rank order, what GetRefDomains reads at its default `AnalysisDepth`.
/// A read past them sorts the item's later rows from `refdomains` (format 30); at 4.35M
/// links about 40% of the copies lie past it.
pub const SNAPSHOT_RANKED_REF_DOMAINS: usize = 1_000;

/// A snapshot's item with more referring-domain rows than this keeps a ranked copy of
/// each: a read past the first [`SNAPSHOT_RANKED_REF_DOMAINS`] then reads and sorts at
/// most this many rows, the most a read of ranked rows asks for (`MAX_ANALYSIS_DEPTH`).
pub const SNAPSHOT_SORTED_ROWS_MAX: usize = 100_000;

/// How many of its `rows` referring-domain rows (more than [`RANKED_COPIES_ABOVE`]) a
/// snapshot's item keeps ranked copies of: the first in rank order.
pub(crate) fn snapshot_ranked_copies(rows: usize) -> usize {
    if rows > SNAPSHOT_SORTED_ROWS_MAX {
        rows
    } else {
        rows.min(SNAPSHOT_RANKED_REF_DOMAINS)
    }
}

/// Whether an item whose table holds `rows` member rows keeps ranked copies of them.
pub(crate) fn has_ranked_copies(rows: i64) -> bool {
    rows > RANKED_COPIES_ABOVE
}

/// A referring-domain or anchor-text row: kept in its table under `item_key | member |
/// 0` and, when the item has more than [`RANKED_COPIES_ABOVE`] of them, copied under
/// `item_key | rank | member | 0` in its ranked table.
pub(crate) trait Ranked: Sized + Clone {
    /// The table of the rows and that of their ranked copies.
    const TABLE: &'static str;
    const RANKED_TABLE: &'static str;
    /// Words of the rank in a ranked key.
    const RANK_WORDS: usize;
    fn decode(member: &str, buf: &[u8]) -> Result<Self>;
    fn member(&self) -> &str;
    /// How many rows of this table an item has, from its counters.
    fn rows_of(c: &Counters) -> i64;
    /// This table's rows among an item's referring-domain and anchor-text rows.
    fn pick(rows: (Vec<RefDomain>, Vec<AnchorText>)) -> Vec<Self>;
    /// The order of the ranked table: rank words descending, then member.
    fn ranked_order(&self, other: &Self) -> std::cmp::Ordering;
    /// How many of an item's ranked copies a snapshot keeps, the first in rank order,
    /// unless it has more than [`SNAPSHOT_SORTED_ROWS_MAX`] rows; `None`: all of them.
    const SNAPSHOT_KEEPS: Option<usize>;
}

macro_rules! counter_fields {
    ($($(#[$doc:meta])* $name:ident: $kind:ident,)*) => {
        /// Per-item counters, served without scanning. Kept current by ingest through a
        /// RocksDB merge operator; each field is a sum of deltas, a minimum or a maximum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: i64,)*
        }

        const FIELD_KINDS: &[FieldKind] = &[$(FieldKind::$kind,)*];
        const FIELDS: usize = FIELD_KINDS.len();

        impl Counters {
            fn to_array(self) -> [i64; FIELDS] {
                [$(self.$name,)*]
            }

            fn from_slice(v: &[i64]) -> Counters {
                let mut it = v.iter().copied().chain(std::iter::repeat(0));
                Counters { $($name: it.next().unwrap_or(0),)* }
            }

            /// Folds `delta` in field by field, each as its kind says, with no array
            /// between: builds fold a delta into an item's sums several times per link.
            fn fold(&mut self, delta: &Counters) {
                $(fold_field(FieldKind::$kind, &mut self.$name, delta.$name);)*
            }
        }
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    Sum,
    /// Minimum of the non-zero values (0 means "no value").
    Min,
    Max,
}

counter_fields! {
    /// External backlinks, live and deleted.
    ext_backlinks: Sum,
    deleted_links: Sum,
    nofollow_links: Sum,
    redirect_links: Sum,
    image_links: Sum,
    frame_links: Sum,
    text_links: Sum,
    https_links: Sum,
    edu_links: Sum,
    gov_links: Sum,
    /// Distinct referring root domains (any link, live or deleted).
    ref_domains: Sum,
    /// Distinct referring root domains with at least one live link.
    ref_domains_live: Sum,
    ref_domains_edu: Sum,
    ref_domains_gov: Sum,
    ref_ips: Sum,
    ref_subnets: Sum,
    /// URLs of the item known to the index (crawled or linked to).
    indexed_urls: Sum,
    /// URLs of the item crawled at least once.
    crawled_urls: Sum,
    /// Live links from the item's pages to other root domains.
    out_links_external: Sum,
    /// Live links from the item's pages within its root domain.
    out_links_internal: Sum,
    /// Distinct root domains linked from the item's pages.
    out_domains_external: Sum,
    /// Earliest FirstIndexedDate of a backlink (day number).
    first_link_day: Min,
    /// Latest LastSeenDate of a backlink (day number).
    last_link_day: Max,
    /// Latest crawl of a page of the item (day number).
    last_crawl_day: Max,
    /// Rows in the item's anchor-text table (distinct lower-cased texts); with
    /// `ref_domains`, which counts its referring-domain rows, it says whether the item's
    /// rows have ranked copies ([`has_ranked_copies`]).
    anchor_texts: Sum,
}

impl Counters {
    pub fn encode(&self) -> Vec<u8> {
        let v = self.to_array();
        let mut out = Vec::with_capacity(v.len() * 2 + 2);
        out.push(COUNTERS_VERSION);
        out.push(v.len() as u8);
        for x in v {
            put_ivarint(&mut out, x);
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<Counters> {
        Ok(Counters::from_slice(&decode_fields(buf)?))
    }

    /// Live external backlinks.
    pub fn live_links(&self) -> i64 {
        self.ext_backlinks - self.deleted_links
    }
}

/// The fields of an encoded value; fields beyond those this build knows are ignored
/// (they are only ever appended).
fn decode_fields(buf: &[u8]) -> Result<[i64; FIELDS]> {
    let mut r = Reader::new(buf, "counters");
    r.version(COUNTERS_VERSION)?;
    let n = r.u8()? as usize;
    let mut out = [0i64; FIELDS];
    for i in 0..n {
        let v = r.ivarint()?;
        if let Some(slot) = out.get_mut(i) {
            *slot = v;
        }
    }
    Ok(out)
}

fn combine(acc: &mut [i64; FIELDS], delta: &[i64; FIELDS]) {
    for ((a, &d), kind) in acc.iter_mut().zip(delta).zip(FIELD_KINDS) {
        fold_field(*kind, a, d);
    }
}

/// Folds one field of a delta into the field of a row: what merging does.
fn fold_field(kind: FieldKind, a: &mut i64, d: i64) {
    match kind {
        FieldKind::Sum => *a += d,
        FieldKind::Min if d != 0 && (*a == 0 || d < *a) => *a = d,
        FieldKind::Max if d > *a => *a = d,
        _ => {}
    }
}

/// RocksDB merge operator of the `counters` CF: operands are encoded `Counters` deltas.
/// A corrupt operand is skipped rather than poisoning the whole row.
pub(crate) fn merge_counters(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let mut acc = existing
        .and_then(|e| decode_fields(e).ok())
        .unwrap_or_default();
    for op in operands {
        if let Ok(delta) = decode_fields(op) {
            combine(&mut acc, &delta);
        }
    }
    Some(Counters::from_slice(&acc).encode())
}

/// How many counter fields are extremes (a minimum or a maximum) rather than sums.
const EXTREMES: usize = {
    let (mut n, mut i) = (0, 0);
    while i < FIELDS {
        if !matches!(FIELD_KINDS[i], FieldKind::Sum) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The extreme fields of a counters row, in field order: what a row that took some merge
/// operands holds at least, whatever else was merged into it.
pub(crate) type Extremes = [i64; EXTREMES];

impl Counters {
    /// True when merging this delta into a row that holds at least `taken` changes
    /// nothing: no sum moves and no extreme goes past what the row holds.
    pub(crate) fn changes_nothing_past(&self, taken: &Extremes) -> bool {
        let sums_still = self
            .to_array()
            .iter()
            .zip(FIELD_KINDS)
            .all(|(&d, kind)| d == 0 || *kind != FieldKind::Sum);
        let mut after = *taken;
        self.take_extremes(&mut after);
        sums_still && after == *taken
    }

    /// Folds this delta's extremes into `taken`, as merging it folds them into a row.
    pub(crate) fn take_extremes(&self, taken: &mut Extremes) {
        let extremes = self
            .to_array()
            .into_iter()
            .zip(FIELD_KINDS)
            .filter(|(_, kind)| **kind != FieldKind::Sum);
        for (t, (d, kind)) in taken.iter_mut().zip(extremes) {
            fold_field(*kind, t, d);
        }
    }
}

/// Adds deltas to a pending (not yet merged) counters value.
pub(crate) fn accumulate(acc: &mut Counters, delta: &Counters) {
    acc.fold(delta);
}

/// RocksDB merge operator of the `timeline` CF: two summed zigzag varints (found, lost).
pub(crate) fn merge_timeline(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let mut acc = existing
        .and_then(|e| TimelineDelta::decode(e).ok())
        .unwrap_or_default();
    for op in operands {
        if let Ok(d) = TimelineDelta::decode(op) {
            acc.found += d.found;
            acc.lost += d.lost;
        }
    }
    Some(acc.encode())
}

/// Links found and lost on one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimelineDelta {
    pub found: i64,
    pub lost: i64,
}

impl TimelineDelta {
    /// Adds another delta of the same day.
    pub(crate) fn fold(&mut self, d: &TimelineDelta) {
        self.found += d.found;
        self.lost += d.lost;
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![AGGREGATE_VERSION];
        put_ivarint(&mut out, self.found);
        put_ivarint(&mut out, self.lost);
        out
    }

    pub fn decode(buf: &[u8]) -> Result<TimelineDelta> {
        let mut r = Reader::new(buf, "timeline");
        r.version(AGGREGATE_VERSION)?;
        Ok(TimelineDelta {
            found: r.ivarint()?,
            lost: r.ivarint()?,
        })
    }
}

/// One referring root domain of an item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RefDomain {
    pub domain: String,
    /// Backlinks from this domain, live and deleted.
    pub links: i64,
    pub deleted_links: i64,
    pub nofollow_links: i64,
    pub first_seen: u32,
    pub last_seen: u32,
    /// The lower-cased anchor texts of these backlinks: what an anchor's referring-domain
    /// count is kept from. Rows only; ranked copies leave them out.
    pub(crate) anchors: RowAnchors,
}

/// The anchor texts of a referring-domain row's backlinks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RowAnchors {
    /// Distinct texts.
    pub(crate) texts: i64,
    /// Each text with its backlinks, sorted by text, while `texts` is at most
    /// [`ANCHORS_IN_ROW`]; empty above, when `distinct` kind-3 rows hold the counts.
    pub(crate) counts: Vec<(String, i64)>,
}

impl RowAnchors {
    /// Whether the row holds its texts (else `distinct` kind-3 rows do).
    pub(crate) fn in_row(&self) -> bool {
        self.texts <= ANCHORS_IN_ROW
    }

    /// Moves `text`'s count by `sign` in a row that holds its texts; returns the change
    /// in distinct texts (1 when the text appears, -1 when its count drops to 0).
    pub(crate) fn bump(&mut self, text: &str, sign: i64) -> i64 {
        let at = self.counts.binary_search_by(|(t, _)| t.as_str().cmp(text));
        let before = at.map_or(0, |i| self.counts[i].1);
        let after = before + sign;
        match (at, after > 0) {
            (Ok(i), true) => self.counts[i].1 = after,
            (Ok(i), false) => {
                self.counts.remove(i);
            }
            (Err(i), true) => self.counts.insert(i, (text.to_string(), after)),
            (Err(_), false) => {}
        }
        let moved = i64::from(after > 0) - i64::from(before > 0);
        self.texts += moved;
        moved
    }
}

impl RefDomain {
    /// Adds another share of the same row (the default row is the empty sum): counts
    /// add, the first day is the earliest non-zero one, the last the latest, and anchor
    /// texts join (a bulk build brings a row's texts in one share of their own).
    pub(crate) fn fold(&mut self, d: &RefDomain) {
        self.links += d.links;
        self.deleted_links += d.deleted_links;
        self.nofollow_links += d.nofollow_links;
        self.first_seen = min_nonzero(self.first_seen, d.first_seen);
        self.last_seen = self.last_seen.max(d.last_seen);
        if d.anchors.texts != 0 {
            self.anchors.texts += d.anchors.texts;
            self.anchors.counts.extend(d.anchors.counts.iter().cloned());
            self.anchors.counts.sort_unstable();
        }
    }

    pub fn live_links(&self) -> i64 {
        self.links - self.deleted_links
    }

    fn put_counts(&self, out: &mut Vec<u8>) {
        for v in [
            self.links,
            self.deleted_links,
            self.nofollow_links,
            i64::from(self.first_seen),
            i64::from(self.last_seen),
        ] {
            put_ivarint(out, v);
        }
    }

    /// The value of the row, version 3; the domain is the key's.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.push(REF_DOMAIN_ROW_VERSION);
        self.put_counts(&mut out);
        put_uvarint(&mut out, self.anchors.texts.max(0) as u64);
        if self.anchors.in_row() {
            for (text, n) in &self.anchors.counts {
                put_bytes(&mut out, text.as_bytes());
                put_ivarint(&mut out, *n);
            }
        }
        out
    }

    /// The counts without the texts, version 2: the value of a ranked copy, and of a
    /// snapshot's row (format 22), whose texts no writer will move.
    pub(crate) fn encode_counts(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12);
        out.push(MEMBER_ROW_VERSION);
        self.put_counts(&mut out);
        out
    }

    /// The row of `domain` (the member its key ends with) from a row's value (version 3)
    /// or a ranked copy's (version 2), without the row's anchor texts: what readers see.
    pub fn decode(domain: &str, buf: &[u8]) -> Result<RefDomain> {
        RefDomain::read_counts(domain, &mut Reader::new(buf, "refdomains")).map(|(row, _)| row)
    }

    /// The row of `domain` from a row's value (version 3) with its anchor texts, as the
    /// writers keep it.
    pub(crate) fn decode_row(domain: &str, buf: &[u8]) -> Result<RefDomain> {
        let mut r = Reader::new(buf, "refdomains");
        let (mut row, version) = RefDomain::read_counts(domain, &mut r)?;
        if version != REF_DOMAIN_ROW_VERSION {
            return Err(crate::Error::corrupt(
                "refdomains",
                format!("row version {version}, expected {REF_DOMAIN_ROW_VERSION}"),
            ));
        }
        row.anchors.texts = r.uvarint()? as i64;
        if row.anchors.in_row() {
            for _ in 0..row.anchors.texts {
                let text = r.string()?;
                row.anchors.counts.push((text, r.ivarint()?));
            }
        }
        Ok(row)
    }

    /// The version and counts that start both kinds of value.
    fn read_counts(domain: &str, r: &mut Reader<'_>) -> Result<(RefDomain, u8)> {
        let version = r.u8()?;
        if version != MEMBER_ROW_VERSION && version != REF_DOMAIN_ROW_VERSION {
            return Err(crate::Error::corrupt(
                "refdomains",
                format!(
                    "value version {version}, expected {MEMBER_ROW_VERSION} or \
                     {REF_DOMAIN_ROW_VERSION}"
                ),
            ));
        }
        let row = RefDomain {
            domain: domain.to_string(),
            links: r.ivarint()?,
            deleted_links: r.ivarint()?,
            nofollow_links: r.ivarint()?,
            first_seen: r.ivarint()? as u32,
            last_seen: r.ivarint()? as u32,
            anchors: RowAnchors::default(),
        };
        Ok((row, version))
    }

    /// Words of [`RefDomain::rank`] in a ranked key.
    pub(crate) const RANK_WORDS: usize = 1;

    /// Rank: most backlinks first.
    pub(crate) fn rank(&self) -> [u64; Self::RANK_WORDS] {
        [self.links.max(0) as u64]
    }
}

impl Ranked for RefDomain {
    const TABLE: &'static str = CF_REFDOMAINS;
    const RANKED_TABLE: &'static str = CF_REFDOMAINS_RANKED;
    const RANK_WORDS: usize = RefDomain::RANK_WORDS;
    const SNAPSHOT_KEEPS: Option<usize> = Some(SNAPSHOT_RANKED_REF_DOMAINS);
    fn decode(domain: &str, buf: &[u8]) -> Result<Self> {
        RefDomain::decode(domain, buf)
    }
    fn member(&self) -> &str {
        &self.domain
    }
    fn rows_of(c: &Counters) -> i64 {
        c.ref_domains
    }
    fn pick((domains, _): (Vec<RefDomain>, Vec<AnchorText>)) -> Vec<Self> {
        domains
    }
    fn ranked_order(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank()
            .cmp(&self.rank())
            .then_with(|| self.domain.cmp(&other.domain))
    }
}

/// One anchor text of an item's backlinks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnchorText {
    pub text: String,
    /// Distinct referring domains using this anchor.
    pub ref_domains: i64,
    pub links: i64,
    pub deleted_links: i64,
    pub nofollow_links: i64,
}

impl AnchorText {
    /// Adds another share of the same row (the default row is the empty sum).
    pub(crate) fn fold(&mut self, a: &AnchorText) {
        self.ref_domains += a.ref_domains;
        self.links += a.links;
        self.deleted_links += a.deleted_links;
        self.nofollow_links += a.nofollow_links;
    }

    /// The value of the row; the text is the key's.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12);
        out.push(MEMBER_ROW_VERSION);
        for v in [
            self.ref_domains,
            self.links,
            self.deleted_links,
            self.nofollow_links,
        ] {
            put_ivarint(&mut out, v);
        }
        out
    }

    /// The row of `text` (the member its key ends with) from its value.
    pub fn decode(text: &str, buf: &[u8]) -> Result<AnchorText> {
        let mut r = Reader::new(buf, "anchors");
        r.version(MEMBER_ROW_VERSION)?;
        Ok(AnchorText {
            text: text.to_string(),
            ref_domains: r.ivarint()?,
            links: r.ivarint()?,
            deleted_links: r.ivarint()?,
            nofollow_links: r.ivarint()?,
        })
    }

    /// Words of [`AnchorText::rank`] in a ranked key.
    pub(crate) const RANK_WORDS: usize = 2;

    /// Rank: most referring domains first, then most links.
    pub(crate) fn rank(&self) -> [u64; Self::RANK_WORDS] {
        [self.ref_domains.max(0) as u64, self.links.max(0) as u64]
    }
}

impl Ranked for AnchorText {
    const TABLE: &'static str = CF_ANCHORS;
    const RANKED_TABLE: &'static str = CF_ANCHORS_RANKED;
    const RANK_WORDS: usize = AnchorText::RANK_WORDS;
    // Anchor-text reads with a filter scan far down the ranked rows (`ANCHOR_SCAN_LIMIT`),
    // and the copies are few (0.7 bytes per backlink at 4.35M links): all kept.
    const SNAPSHOT_KEEPS: Option<usize> = None;
    fn decode(text: &str, buf: &[u8]) -> Result<Self> {
        AnchorText::decode(text, buf)
    }
    fn member(&self) -> &str {
        &self.text
    }
    fn rows_of(c: &Counters) -> i64 {
        c.anchor_texts
    }
    fn pick((_, anchors): (Vec<RefDomain>, Vec<AnchorText>)) -> Vec<Self> {
        anchors
    }
    fn ranked_order(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank()
            .cmp(&self.rank())
            .then_with(|| self.text.cmp(&other.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_of_days_already_taken_changes_nothing() {
        let days = |first, last, crawl| Counters {
            first_link_day: first,
            last_link_day: last,
            last_crawl_day: crawl,
            ..Default::default()
        };
        let mut taken = Extremes::default();
        assert!(!days(10, 20, 20).changes_nothing_past(&taken));
        days(10, 20, 20).take_extremes(&mut taken);
        days(12, 15, 0).take_extremes(&mut taken);
        assert!(days(10, 20, 20).changes_nothing_past(&taken));
        assert!(days(15, 18, 0).changes_nothing_past(&taken));
        assert!(days(0, 0, 0).changes_nothing_past(&taken), "no days at all");
        assert!(
            !days(9, 20, 20).changes_nothing_past(&taken),
            "an earlier first day"
        );
        assert!(
            !days(10, 21, 0).changes_nothing_past(&taken),
            "a later last day"
        );
        assert!(
            !days(0, 0, 21).changes_nothing_past(&taken),
            "a later crawl"
        );
        let mut with_sum = days(10, 20, 20);
        with_sum.ext_backlinks = 1;
        assert!(!with_sum.changes_nothing_past(&taken), "a sum moves");
        with_sum.ext_backlinks = -1;
        assert!(!with_sum.changes_nothing_past(&taken), "a sum moves back");
        // What was taken is what merging the same operands into a row gives.
        let mut row = Counters::default();
        for d in [days(10, 20, 20), days(12, 15, 0)] {
            accumulate(&mut row, &d);
        }
        let mut from_row = Extremes::default();
        row.take_extremes(&mut from_row);
        assert_eq!(from_row, taken);
    }

    #[test]
    fn a_row_holds_its_anchor_texts_up_to_the_bound_and_only_their_number_above() {
        let mut row = RefDomain {
            domain: "a.com".into(),
            links: 100,
            ..Default::default()
        };
        for i in 0..ANCHORS_IN_ROW {
            assert_eq!(row.anchors.bump(&format!("text {i}"), 1), 1);
        }
        assert_eq!(row.anchors.bump("text 0", 1), 0, "a text seen again");
        assert_eq!(row.anchors.counts[0], ("text 0".to_string(), 2));
        let value = row.encode();
        assert_eq!(RefDomain::decode_row("a.com", &value).unwrap(), row);
        // Readers see the counts alone.
        let seen = RefDomain::decode("a.com", &value).unwrap();
        assert_eq!((seen.links, seen.anchors), (100, RowAnchors::default()));
        // One text more: the row keeps only their number (the writers move the counts
        // to `distinct` rows).
        row.anchors.texts += 1;
        row.anchors.counts.clear();
        let small = row.encode();
        assert!(small.len() < 12, "{} bytes", small.len());
        let back = RefDomain::decode_row("a.com", &small).unwrap();
        assert_eq!(back.anchors.texts, ANCHORS_IN_ROW + 1);
        assert!(back.anchors.counts.is_empty() && !back.anchors.in_row());
        // Texts going: counts fall, and a text at 0 leaves the row.
        let mut row = RefDomain::default();
        row.anchors.bump("b", 1);
        row.anchors.bump("a", 1);
        assert_eq!(row.anchors.bump("b", -1), -1);
        assert_eq!(row.anchors.counts, vec![("a".to_string(), 1)]);
        assert_eq!(row.anchors.texts, 1);
    }

    #[test]
    fn a_snapshot_keeps_the_first_copies_up_to_the_rows_it_may_sort() {
        let kept = SNAPSHOT_RANKED_REF_DOMAINS;
        assert_eq!(snapshot_ranked_copies(300), 300);
        assert_eq!(snapshot_ranked_copies(kept), kept);
        assert_eq!(snapshot_ranked_copies(kept + 1), kept);
        assert_eq!(snapshot_ranked_copies(SNAPSHOT_SORTED_ROWS_MAX), kept);
        let past = SNAPSHOT_SORTED_ROWS_MAX + 1;
        assert_eq!(snapshot_ranked_copies(past), past);
    }

    #[test]
    fn counters_combine_sums_minima_and_maxima() {
        let mut acc = Counters {
            ext_backlinks: 5,
            first_link_day: 100,
            last_link_day: 100,
            ..Default::default()
        };
        accumulate(
            &mut acc,
            &Counters {
                ext_backlinks: -2,
                first_link_day: 90,
                last_link_day: 95,
                ..Default::default()
            },
        );
        accumulate(
            &mut acc,
            &Counters {
                first_link_day: 0,
                last_link_day: 120,
                ..Default::default()
            },
        );
        assert_eq!(acc.ext_backlinks, 3);
        assert_eq!(acc.first_link_day, 90);
        assert_eq!(acc.last_link_day, 120);
        assert_eq!(Counters::decode(&acc.encode()).unwrap(), acc);
        // A build's fold and the merge operator's fold agree on every field.
        let mut folded = Counters::default();
        let mut merged = [0i64; FIELDS];
        for i in 0..50i64 {
            let delta: Vec<i64> = (0..FIELDS as i64)
                .map(|f| (i * 37 + f * 11) % 23 - 5)
                .collect();
            accumulate(&mut folded, &Counters::from_slice(&delta));
            combine(&mut merged, &delta.try_into().unwrap());
        }
        assert_eq!(folded, Counters::from_slice(&merged));
    }

    #[test]
    fn aggregates_round_trip() {
        let d = RefDomain {
            domain: "a.com".into(),
            links: 3,
            deleted_links: 1,
            nofollow_links: 2,
            first_seen: 5,
            last_seen: 9,
            anchors: RowAnchors::default(),
        };
        let value = d.encode();
        assert!(
            !value.windows(5).any(|w| w == b"a.com"),
            "the member is the key's, not repeated in the value"
        );
        assert_eq!(RefDomain::decode("a.com", &value).unwrap(), d);
        let a = AnchorText {
            text: "click | here".into(),
            ref_domains: 2,
            links: 7,
            deleted_links: 0,
            nofollow_links: 1,
        };
        assert_eq!(AnchorText::decode("click | here", &a.encode()).unwrap(), a);
        // A version-1 value (member repeated) is refused, naming the table.
        let old = [1u8, 5, b'a', b'.', b'c', b'o', b'm', 6, 2, 4, 10, 18];
        let err = RefDomain::decode("a.com", &old).unwrap_err().to_string();
        assert!(err.contains("refdomains"), "{err}");
    }
}
