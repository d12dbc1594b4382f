//! The typed table layer: a row is written as a typed key and a typed value.
//!
//! A key type names its column family and the type of value its rows hold, and lays out
//! its own bytes (the layouts are the functions of `keys.rs`, drawn in `docs/format.md`);
//! the value type's codec is named once, beside it. The incremental writer's batch, the
//! bulk build's rows and flow publication write through these types, so no writer
//! assembles key or value bytes, and no value can be written under another table's key.
//! The bytes themselves stay visible only where they are the point: sorters, write
//! batches, SST files.

#[cfg(test)]
use crate::aggregate::RowAnchors;
use crate::aggregate::{AnchorText, Counters, RefDomain, TimelineDelta};
use crate::build::Table;
use crate::codec::{put_bytes, put_ivarint, put_uvarint, Reader};
use crate::error::{Error, Result};
use crate::keys::{self, DistinctKind};
use crate::metrics::ItemMetrics;
use crate::page::PageState;
use crate::record::{put_history, read_history, FlowPair, LinkRecord};
use crate::source_row::SourceRow;
use crate::store::{CF_BACKLINKS, CF_METRICS, CF_SOURCES, CF_TOP_PAGES};
use roaring::RoaringBitmap;

/// The key of a row in one column family, which fixes the type of the row's value.
pub(crate) trait TableKey {
    /// The column family the row lives in.
    const CF: &'static str;
    /// What the row holds.
    type Value;
    fn encode(&self) -> Vec<u8>;
    fn encode_value(value: &Self::Value) -> Vec<u8>;
    /// Reads a stored value of this key (some values take their member from the key).
    fn decode_value(&self, bytes: &[u8]) -> Result<Self::Value>;
}

/// A key of a table the write paths build ([`Table`]): what orders a writer's batch and a
/// bulk build's sorters.
pub(crate) trait BuiltKey: TableKey {
    const TABLE: Table;
}

/// A key whose rows are merge operands: the store's merge operator sums the values
/// written under it.
pub(crate) trait MergedKey: BuiltKey {}

impl crate::Store {
    /// The value of one row, as last written (committed or not yet published).
    pub(crate) fn row<K: TableKey>(&self, key: &K) -> Result<Option<K::Value>> {
        self.db
            .get_pinned_cf(self.cf(K::CF), key.encode())?
            .map(|v| key.decode_value(&v))
            .transpose()
    }
}

/// Length of the item key that starts an aggregate or distinct key: `hash (8) | level |
/// name | 0x00`, names holding no NUL.
pub(crate) fn item_key_len(key: &[u8], cf: &'static str) -> Result<usize> {
    key.get(9..)
        .and_then(|rest| rest.iter().position(|&b| b == 0))
        .map(|p| 9 + p + 1)
        .ok_or_else(|| Error::corrupt(cf, "key does not start with an item key"))
}

/// `key`, an aggregate or distinct key of `cf` that starts with the item key `from`,
/// with that replaced by `to`: the same row of another item (a root domain taking its
/// host's rows as its own).
pub(crate) fn with_item_key(
    key: &[u8],
    cf: &'static str,
    from: &[u8],
    to: &[u8],
) -> Result<Vec<u8>> {
    let rest = key
        .strip_prefix(from)
        .ok_or_else(|| Error::corrupt(cf, "key is not of the item it was read under"))?;
    Ok([to, rest].concat())
}

/// Adds a row to a RocksDB write batch.
pub(crate) fn put_row<K: TableKey>(
    store: &crate::Store,
    batch: &mut rocksdb::WriteBatch,
    key: &K,
    value: &K::Value,
) {
    batch.put_cf(store.cf(K::CF), key.encode(), K::encode_value(value));
}

/// A key and value as a bulk build carries a row: `(table, key, value)`.
pub(crate) fn row<K: BuiltKey>(key: &K, value: &K::Value) -> (Table, Vec<u8>, Vec<u8>) {
    (K::TABLE, key.encode(), K::encode_value(value))
}

/// Implements [`TableKey`] and [`BuiltKey`] for a key of a built table, whose values
/// encode with `$value::encode` unless another of its methods is named.
macro_rules! built_key {
    ($key:ty, $table:expr, $value:ty) => {
        built_key!($key, $table, $value, encode);
    };
    ($key:ty, $table:expr, $value:ty, $encode:ident) => {
        impl BuiltKey for $key {
            const TABLE: Table = $table;
        }
        impl TableKey for $key {
            const CF: &'static str = $table.cf_name();
            type Value = $value;
            fn encode(&self) -> Vec<u8> {
                self.layout()
            }
            fn encode_value(value: &$value) -> Vec<u8> {
                value.$encode()
            }
            fn decode_value(&self, bytes: &[u8]) -> Result<$value> {
                self.read_value(bytes)
            }
        }
    };
}

/// A count kept as a signed varint (reference counts of URLs and distinct members).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Count(pub i64);

impl Count {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(2);
        put_ivarint(&mut v, self.0);
        v
    }

    pub(crate) fn decode(bytes: &[u8], cf: &'static str) -> Result<Count> {
        Reader::new(bytes, cf).ivarint().map(Count)
    }
}

/// A row that is its key alone (`expiry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Empty;

impl Empty {
    fn encode(&self) -> Vec<u8> {
        Vec::new()
    }
}

/// A link record encoded once for the several rows that carry it (its backlink row at
/// each level of its target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncodedRecord(Vec<u8>);

impl EncodedRecord {
    pub(crate) fn of(rec: &LinkRecord) -> EncodedRecord {
        EncodedRecord(rec.encode())
    }

    /// The bytes, for a row that takes them whole (a bulk build's backlink row).
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The record these bytes hold.
    pub(crate) fn decode(&self) -> Result<LinkRecord> {
        LinkRecord::decode(&self.0)
    }

    fn encode(&self) -> Vec<u8> {
        self.0.clone()
    }
}

/// The URL a `url_hash | URL` key ends with.
fn url_of_url_key<'a>(key: &'a [u8], cf: &'static str) -> Result<&'a str> {
    key.get(8..)
        .and_then(|u| std::str::from_utf8(u).ok())
        .ok_or_else(|| Error::corrupt(cf, "key is not url_hash | UTF-8 URL"))
}

/// `pages`: a crawled page's state, by URL.
pub(crate) struct PageKey<'a>(pub &'a str);

impl PageKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<PageKey<'_>> {
        url_of_url_key(key, Self::CF).map(PageKey)
    }

    fn layout(&self) -> Vec<u8> {
        keys::url_key(self.0)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<PageState> {
        PageState::decode(bytes)
    }
}
built_key!(PageKey<'_>, Table::Pages, PageState);

/// `urls`: a URL's reference count (its crawl, and every record linking to it).
pub(crate) struct UrlRefKey<'a>(pub &'a str);

impl UrlRefKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<UrlRefKey<'_>> {
        url_of_url_key(key, Self::CF).map(UrlRefKey)
    }

    fn layout(&self) -> Vec<u8> {
        keys::url_key(self.0)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<Count> {
        Count::decode(bytes, Self::CF)
    }
}
built_key!(UrlRefKey<'_>, Table::Urls, Count);

/// `sources`: a source page's fields that its backlink records leave to it, by flow
/// generation and the name its backlink keys give the page: the 64-bit hash of its URL,
/// or in a generation that numbers its sources ([`Store::numbers_sources`]) the page's
/// number, the rank of that hash among the generation's rows (so both orders agree).
///
/// [`Store::numbers_sources`]: crate::Store::numbers_sources
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SourceKey {
    pub generation: u8,
    pub source: u64,
}

impl SourceKey {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<SourceKey> {
        let bad = || Error::corrupt(CF_SOURCES, "a key that is not a generation and source name");
        let (&generation, source) = key.split_first().ok_or_else(bad)?;
        let source = <[u8; 8]>::try_from(source).map_err(|_| bad())?;
        Ok(SourceKey {
            generation,
            source: u64::from_be_bytes(source),
        })
    }

    fn layout(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(9);
        k.push(self.generation);
        k.extend_from_slice(&self.source.to_be_bytes());
        k
    }
    fn read_value(&self, bytes: &[u8]) -> Result<SourceRow> {
        SourceRow::decode(bytes)
    }
}
built_key!(SourceKey, Table::Sources, SourceRow);

/// `links`: a link, by source then target.
pub(crate) struct LinkKey<'a> {
    pub source: &'a str,
    pub target: &'a str,
}

impl LinkKey<'_> {
    fn layout(&self) -> Vec<u8> {
        keys::link_key(self.source, self.target).to_vec()
    }
    fn read_value(&self, bytes: &[u8]) -> Result<LinkRow> {
        LinkRow::decode(bytes)
    }
}
built_key!(LinkKey<'_>, Table::Links, LinkRow);

/// First byte of a `links` value standing for an external link, whose record is its
/// `backlinks` URL row; a record's first byte is its version, a small number.
pub const LINK_AT_TARGET: u8 = 0xB2;

/// The record a stored `links` value holds: an internal link's; `None` for an external
/// link's summary.
pub(crate) fn internal_record(value: &[u8]) -> Option<&[u8]> {
    match value {
        [LINK_AT_TARGET, ..] => None,
        record => Some(record),
    }
}

/// First byte of a snapshot page's flow targets, after its state in its `pages` value.
pub const PAGE_FLOW_TARGETS: u8 = 0xB4;

/// The page URL of a stored `sources` row: what a snapshot's page number stands for
/// (`docs/format.md`, "Source pages by number").
pub fn source_row_url(value: &[u8]) -> Result<String> {
    Ok(SourceRow::decode(value)?.url)
}

/// Visits the flow edges a stored row of `table` holds: of a `links` row, an internal
/// link's record, its edge if the link carries flow ([`crate::flow_link`]), and none
/// for an external link, whose record comes with its `backlinks` URL row; of a
/// snapshot's `pages` row, one edge per flow target of the page. Rows of other tables
/// hold none.
pub fn row_flow_edges<E: From<Error>>(
    table: Table,
    key: &[u8],
    value: &[u8],
    mut visit: impl FnMut(&str, &str) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    match table {
        Table::Links => match internal_record(value)
            .map(crate::record::flow_link)
            .transpose()?
        {
            Some(crate::FlowLink::Edge { source, target }) => visit(source, target),
            _ => Ok(()),
        },
        Table::Pages => {
            let (_, targets) = PageState::decode_prefix(value)?;
            if targets.is_empty() {
                return Ok(());
            }
            let source = PageKey::parse(key)?.0;
            FlowTargets::for_each(targets, |target| visit(source, target))
        }
        _ => Ok(()),
    }
}

/// `pages` in a snapshot: a crawled page's state and its flow targets (format 28), by
/// URL as [`PageKey`], which reads the state alone.
pub(crate) struct SnapshotPageKey<'a>(pub &'a str);

impl SnapshotPageKey<'_> {
    fn layout(&self) -> Vec<u8> {
        keys::url_key(self.0)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<SnapshotPage> {
        let (state, rest) = PageState::decode_prefix(bytes)?;
        let flow_targets = match rest {
            [] => None,
            rest => {
                let mut targets = Vec::new();
                FlowTargets::for_each(rest, |t| {
                    targets.push(t.to_string());
                    Ok::<_, Error>(())
                })?;
                Some(FlowTargets(targets))
            }
        };
        Ok(SnapshotPage {
            state,
            flow_targets,
        })
    }
}
built_key!(SnapshotPageKey<'_>, Table::Pages, SnapshotPage);

/// A snapshot's `pages` value: the page's state, then the targets of its internal links
/// that carry flow when it has some. A snapshot keeps no other internal link: only flow
/// builds read them, and only as edges.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SnapshotPage {
    pub state: PageState,
    pub flow_targets: Option<FlowTargets>,
}

impl SnapshotPage {
    /// `page state | flow targets, if any` ([`FlowTargets::encode_into`]).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = self.state.encode();
        if let Some(targets) = &self.flow_targets {
            targets.encode_into(&mut v);
        }
        v
    }
}

/// The targets of a page's internal links that carry flow (live and followed), in byte
/// order, without repeats: a snapshot keeps no other internal link (formats 27 and 28).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlowTargets(pub Vec<String>);

impl FlowTargets {
    /// The flow targets of a page's final link `records`; `None` when it has none.
    pub(crate) fn of(records: &[LinkRecord]) -> Option<FlowTargets> {
        let carrying = records
            .iter()
            .filter(|r| r.is_internal() && r.carries_flow());
        let mut targets: Vec<String> = carrying.map(|r| r.target_url.clone()).collect();
        targets.sort_unstable();
        targets.dedup();
        (!targets.is_empty()).then_some(FlowTargets(targets))
    }

    /// `B4 | n uvar | n x (shared uvar | rest bytes)`: each target as the length of the
    /// prefix it shares with the one before (0 for the first) and the rest of its bytes.
    fn encode_into(&self, v: &mut Vec<u8>) {
        v.push(PAGE_FLOW_TARGETS);
        put_uvarint(v, self.0.len() as u64);
        let mut before: &[u8] = &[];
        for target in &self.0 {
            let target = target.as_bytes();
            let shared = before
                .iter()
                .zip(target)
                .take_while(|(a, b)| a == b)
                .count();
            put_uvarint(v, shared as u64);
            put_bytes(v, &target[shared..]);
            before = target;
        }
    }

    /// Visits the targets of encoded flow targets ([`FlowTargets::encode_into`]) in
    /// order, each rebuilt from the one before.
    fn for_each<E: From<Error>>(
        value: &[u8],
        mut visit: impl FnMut(&str) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let cf = Table::Pages.cf_name();
        let mut r = Reader::new(value, cf);
        if r.u8()? != PAGE_FLOW_TARGETS {
            return Err(Error::corrupt(cf, "not a page's flow targets").into());
        }
        let n = r.uvarint()?;
        let (mut target, mut before) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let shared = r.uvarint()?;
            if shared > target.len() as u64 {
                return Err(
                    Error::corrupt(cf, "flow target: shares more than the one before").into(),
                );
            }
            std::mem::swap(&mut before, &mut target);
            target.clear();
            target.extend_from_slice(&before[..shared as usize]);
            target.extend_from_slice(r.bytes()?);
            // Every flow build reads these (both must read the same graph): targets come
            // in byte order, once each, none empty.
            if target <= before {
                return Err(Error::corrupt(cf, "flow targets: not in byte order").into());
            }
            let url = std::str::from_utf8(&target)
                .map_err(|_| Error::corrupt(cf, "flow target: not UTF-8"))?;
            visit(url)?;
        }
        if r.remaining() != 0 {
            return Err(Error::corrupt(cf, "flow targets: trailing bytes").into());
        }
        Ok(())
    }
}

/// What a `links` row holds. An internal link's record lives only here; an external
/// link's lives once, in its `backlinks` row under its target URL, and its `links` row
/// keeps what a re-crawl needs to rebuild the record of a link seen again. A snapshot
/// keeps none of these, but its pages' flow targets ([`FlowTargets`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LinkRow {
    Internal(EncodedRecord),
    AtTarget(LinkSummary),
}

/// The part of an external link's record its `links` row keeps: with a crawl that
/// describes the link as the record does ([`LinkRecord::description_check`]), enough to
/// rebuild the record, so a page re-crawled reads only its changed, lost and revived
/// links' URL rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LinkSummary {
    pub deleted: bool,
    pub check: u64,
    pub first_seen: u32,
    pub last_seen: u32,
    pub redirect_status: u16,
    pub history: RoaringBitmap,
}

impl LinkSummary {
    fn of(rec: &LinkRecord) -> LinkSummary {
        LinkSummary {
            deleted: rec.is_deleted(),
            check: rec.description_check(),
            first_seen: rec.first_seen,
            last_seen: rec.last_seen,
            redirect_status: rec.redirect_status,
            history: rec.history.clone(),
        }
    }
}

impl LinkRow {
    /// The row of the link `rec`.
    pub(crate) fn of(rec: &LinkRecord) -> LinkRow {
        if rec.is_internal() {
            LinkRow::Internal(EncodedRecord::of(rec))
        } else {
            LinkRow::AtTarget(LinkSummary::of(rec))
        }
    }

    /// `B2 | deleted u8 | check u64be | first_seen uvar | last_seen uvar |
    /// redirect_status uvar | history` for an external link.
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            LinkRow::Internal(record) => record.encode(),
            LinkRow::AtTarget(summary) => {
                let mut v = Vec::with_capacity(24);
                v.push(LINK_AT_TARGET);
                v.push(u8::from(summary.deleted));
                v.extend_from_slice(&summary.check.to_be_bytes());
                put_uvarint(&mut v, u64::from(summary.first_seen));
                put_uvarint(&mut v, u64::from(summary.last_seen));
                put_uvarint(&mut v, u64::from(summary.redirect_status));
                put_history(&mut v, &summary.history);
                v
            }
        }
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<LinkRow> {
        if let Some(record) = internal_record(bytes) {
            return Ok(LinkRow::Internal(EncodedRecord(record.to_vec())));
        }
        let cf = Table::Links.cf_name();
        let mut r = Reader::new(&bytes[1..], cf);
        let deleted = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(Error::corrupt(cf, "summary: deleted is not 0 or 1")),
        };
        let check = u64::from_be_bytes(r.take(8)?.try_into().expect("8 bytes"));
        let (first_seen, last_seen) = (r.u32v()?, r.u32v()?);
        let redirect_status = u16::try_from(r.uvarint()?)
            .map_err(|_| Error::corrupt(cf, "summary: redirect status out of range"))?;
        let history = read_history(&mut r)?;
        if r.remaining() != 0 {
            return Err(Error::corrupt(cf, "summary: trailing bytes"));
        }
        Ok(LinkRow::AtTarget(LinkSummary {
            deleted,
            check,
            first_seen,
            last_seen,
            redirect_status,
            history,
        }))
    }

    /// What reading an external link's record finds when its `backlinks` row is absent.
    pub(crate) fn record_missing() -> Error {
        Error::corrupt(CF_BACKLINKS, "an external link's URL row is missing")
    }
}

/// `backlinks`: a link's record under one item of its target, in one flow generation,
/// ordered by its source's Trust Flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BacklinkKey {
    pub generation: u8,
    pub item_hash: u64,
    pub source_trust_flow: u8,
    /// The link's `links` key.
    pub link: [u8; 16],
}

impl BacklinkKey {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<BacklinkKey> {
        let key: &[u8; 26] = key
            .try_into()
            .map_err(|_| Error::corrupt(Self::CF, "key is not 26 bytes"))?;
        Ok(BacklinkKey {
            generation: key[0],
            item_hash: u64::from_be_bytes(key[1..9].try_into().expect("8 bytes")),
            source_trust_flow: 255 - key[9],
            link: key[10..].try_into().expect("16 bytes"),
        })
    }

    /// The key's bytes, fixed in size.
    pub(crate) fn bytes(&self) -> [u8; 26] {
        keys::backlink_key(
            self.generation,
            self.item_hash,
            self.source_trust_flow,
            &self.link,
        )
    }

    fn layout(&self) -> Vec<u8> {
        self.bytes().to_vec()
    }
    fn read_value(&self, bytes: &[u8]) -> Result<BacklinkRow> {
        BacklinkRow::decode(bytes)
    }

    /// The key of this link's row under its target URL, which holds the record a
    /// pointer row of the same link stands for.
    pub(crate) fn url_row(&self, hasher: &keys::ItemHasher) -> BacklinkKey {
        BacklinkKey::url_row_of(self.link, self.generation, self.source_trust_flow, hasher)
    }

    /// The key of the row holding the record of the link `link` (a `links` key) in
    /// `generation`, whose source's Trust Flow is `source_trust_flow`: under the target
    /// URL, whose item hash is its `url_hash`, the key's last eight bytes.
    pub(crate) fn url_row_of(
        link: [u8; 16],
        generation: u8,
        source_trust_flow: u8,
        hasher: &keys::ItemHasher,
    ) -> BacklinkKey {
        let (_, target_hash) = keys::link_hashes(&link);
        BacklinkKey {
            generation,
            item_hash: hasher.url_item(target_hash),
            source_trust_flow,
            link,
        }
    }

    /// True when this is the link's URL row (which holds the record).
    pub(crate) fn is_url_row(&self, hasher: &keys::ItemHasher) -> bool {
        self.url_row(hasher) == *self
    }
}
built_key!(BacklinkKey, Table::Backlinks, BacklinkRow);

/// A pointer row's whole value; a record's first byte is its version, a small number.
pub const BACKLINK_POINTER: u8 = 0xB1;

/// What the host and root-domain rows of a link hold in place of its record: the byte
/// [`BACKLINK_POINTER`] alone. The URL row it stands for is named by the row's own key
/// ([`BacklinkKey::url_row`]); a flow build finds the link's source by the key's source
/// hash, or the hash of the page a numbered generation's key names (format 14: format 13 added a 32-bit hash of the source URL, which the flow
/// build now keeps in memory instead, `docs/format.md`).
pub(crate) const POINTER: [u8; 1] = [BACKLINK_POINTER];

/// Whether a stored `backlinks` value is a pointer (else it is a record).
pub(crate) fn is_pointer(value: &[u8]) -> Result<bool> {
    match value {
        [BACKLINK_POINTER] => Ok(true),
        [BACKLINK_POINTER, ..] => Err(Error::corrupt(
            CF_BACKLINKS,
            "a pointer row holds more than its marker byte",
        )),
        _ => Ok(false),
    }
}

/// What reading the URL row of a pointer row finds when that row is absent.
pub(crate) fn url_row_missing() -> Error {
    Error::corrupt(CF_BACKLINKS, "a pointer row's URL row is missing")
}

/// The error of a record whose source row is not in the store.
pub(crate) fn source_row_missing() -> Error {
    Error::corrupt(CF_SOURCES, "a record's source row is missing")
}

/// What a snapshot's flow build finds when a backlink's source page has no source row
/// to take its number from.
pub(crate) fn source_page_unnumbered() -> Error {
    Error::corrupt(CF_SOURCES, "a backlink's source page has no source row")
}

/// What a `backlinks` row holds. The row under the link's target URL holds its whole
/// record; the rows under the target's host and root domain point to that row, so a
/// link's record is stored once among its backlink rows. A row whose item hash equals
/// the target URL's (forced collisions) is that URL row and holds the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BacklinkRow {
    Record(EncodedRecord),
    Pointer,
}

impl BacklinkRow {
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            BacklinkRow::Record(record) => record.encode(),
            BacklinkRow::Pointer => POINTER.to_vec(),
        }
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<BacklinkRow> {
        Ok(if is_pointer(bytes)? {
            BacklinkRow::Pointer
        } else {
            BacklinkRow::Record(EncodedRecord(bytes.to_vec()))
        })
    }
}

/// `expiry`: a page, on the day of its last fetch.
pub(crate) struct ExpiryPageKey<'a> {
    pub day: u32,
    pub url: &'a str,
}

impl ExpiryPageKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<ExpiryPageKey<'_>> {
        let (day, rest) = expiry_day(key, keys::EXPIRY_PAGE)?;
        let url = rest
            .get(8..)
            .and_then(|u| std::str::from_utf8(u).ok())
            .ok_or_else(|| Error::corrupt(Self::CF, "page row key does not end in a URL"))?;
        Ok(ExpiryPageKey { day, url })
    }

    fn layout(&self) -> Vec<u8> {
        keys::expiry_page_key(self.day, self.url)
    }
    fn read_value(&self, _: &[u8]) -> Result<Empty> {
        Ok(Empty)
    }
}
built_key!(ExpiryPageKey<'_>, Table::Expiry, Empty);

/// `expiry`: a deleted link, on the day it leaves the fresh window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpiryLinkKey {
    pub day: u32,
    pub link: [u8; 16],
}

/// The day of an `expiry` key of `kind`, and the bytes after it.
fn expiry_day(key: &[u8], kind: u8) -> Result<(u32, &[u8])> {
    match key {
        [k, d0, d1, d2, d3, rest @ ..] if *k == kind => {
            Ok((u32::from_be_bytes([*d0, *d1, *d2, *d3]), rest))
        }
        _ => Err(Error::corrupt(
            Table::Expiry.cf_name(),
            "key of another kind",
        )),
    }
}

impl ExpiryLinkKey {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<ExpiryLinkKey> {
        let (day, rest) = expiry_day(key, keys::EXPIRY_LINK)?;
        let link = rest
            .try_into()
            .map_err(|_| Error::corrupt(Self::CF, "link row key is not 21 bytes"))?;
        Ok(ExpiryLinkKey { day, link })
    }

    fn layout(&self) -> Vec<u8> {
        keys::expiry_link_key(self.day, &self.link).to_vec()
    }
    fn read_value(&self, _: &[u8]) -> Result<Empty> {
        Ok(Empty)
    }
}
built_key!(ExpiryLinkKey, Table::Expiry, Empty);

/// `counters`: an item's counters, by item key. Merge operands.
pub(crate) struct CountersKey<'a>(pub &'a [u8]);

impl CountersKey<'_> {
    fn layout(&self) -> Vec<u8> {
        self.0.to_vec()
    }
    fn read_value(&self, bytes: &[u8]) -> Result<Counters> {
        Counters::decode(bytes)
    }
}
built_key!(CountersKey<'_>, Table::Counters, Counters);
impl MergedKey for CountersKey<'_> {}

/// `timeline`: an item's backlinks found and lost on one day. Merge operands.
pub(crate) struct TimelineKey<'a> {
    pub item_key: &'a [u8],
    pub day: u32,
}

impl TimelineKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<TimelineKey<'_>> {
        let at = item_key_len(key, Self::CF)?;
        match key[at..] {
            [d0, d1, d2, d3] => Ok(TimelineKey {
                item_key: &key[..at],
                day: u32::from_be_bytes([d0, d1, d2, d3]),
            }),
            _ => Err(Error::corrupt(Self::CF, "key does not end in a day")),
        }
    }

    fn layout(&self) -> Vec<u8> {
        keys::timeline_key(self.item_key, self.day)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<TimelineDelta> {
        TimelineDelta::decode(bytes)
    }
}
built_key!(TimelineKey<'_>, Table::Timeline, TimelineDelta);
impl MergedKey for TimelineKey<'_> {}

/// `distinct`: the reference count of one distinct member of an item.
pub(crate) struct DistinctKey<'a> {
    pub item_key: &'a [u8],
    pub kind: DistinctKind,
    pub member: &'a str,
}

impl DistinctKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<DistinctKey<'_>> {
        let at = item_key_len(key, Self::CF)?;
        let kind = key
            .get(at)
            .and_then(|&b| DistinctKind::from_u8(b))
            .ok_or_else(|| Error::corrupt(Self::CF, "unknown distinct kind"))?;
        let member = keys::member_of_key(key, at + 1, 0, Self::CF)?;
        Ok(DistinctKey {
            item_key: &key[..at],
            kind,
            member,
        })
    }

    fn layout(&self) -> Vec<u8> {
        keys::distinct_key(self.item_key, self.kind, self.member)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<Count> {
        Count::decode(bytes, Self::CF)
    }
}
built_key!(DistinctKey<'_>, Table::Distinct, Count);

/// `refdomains`: one referring domain of an item.
pub(crate) struct RefDomainKey<'a> {
    pub item_key: &'a [u8],
    pub domain: &'a str,
}

impl RefDomainKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<RefDomainKey<'_>> {
        let at = item_key_len(key, Self::CF)?;
        let domain = keys::member_of_key(key, at, 0, Self::CF)?;
        Ok(RefDomainKey {
            item_key: &key[..at],
            domain,
        })
    }

    fn layout(&self) -> Vec<u8> {
        keys::member_key(self.item_key, self.domain)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<RefDomain> {
        RefDomain::decode_row(self.domain, bytes)
    }
}
built_key!(RefDomainKey<'_>, Table::RefDomains, RefDomain);

/// `refdomains` in a snapshot (format 22): a row's counts without its anchor texts,
/// which only the incremental writer reads (it moves an anchor's referring-domain count
/// by them) and which no writer takes from a snapshot.
pub(crate) struct SnapshotRefDomainKey<'a>(pub RefDomainKey<'a>);

impl SnapshotRefDomainKey<'_> {
    fn layout(&self) -> Vec<u8> {
        self.0.layout()
    }
    fn read_value(&self, bytes: &[u8]) -> Result<RefDomain> {
        RefDomain::decode(self.0.domain, bytes)
    }
}
built_key!(
    SnapshotRefDomainKey<'_>,
    Table::RefDomains,
    RefDomain,
    encode_counts
);

/// `refdomains_ranked`: a referring-domain row's copy, keyed by its rank.
pub(crate) struct RankedRefDomainKey<'a> {
    pub item_key: &'a [u8],
    pub row: &'a RefDomain,
}

impl RankedRefDomainKey<'_> {
    fn layout(&self) -> Vec<u8> {
        keys::ranked_key(self.item_key, &self.row.rank(), &self.row.domain)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<RefDomain> {
        RefDomain::decode(&self.row.domain, bytes)
    }
}
// Ranked copies leave the row's anchor texts out: only writers read those.
built_key!(
    RankedRefDomainKey<'_>,
    Table::RefDomainsRanked,
    RefDomain,
    encode_counts
);

/// `anchors`: one anchor text of an item.
pub(crate) struct AnchorKey<'a> {
    pub item_key: &'a [u8],
    pub text: &'a str,
}

impl AnchorKey<'_> {
    /// Reads a stored key.
    pub(crate) fn parse(key: &[u8]) -> Result<AnchorKey<'_>> {
        let at = item_key_len(key, Self::CF)?;
        let text = keys::member_of_key(key, at, 0, Self::CF)?;
        Ok(AnchorKey {
            item_key: &key[..at],
            text,
        })
    }

    fn layout(&self) -> Vec<u8> {
        keys::member_key(self.item_key, self.text)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<AnchorText> {
        AnchorText::decode(self.text, bytes)
    }
}
built_key!(AnchorKey<'_>, Table::Anchors, AnchorText);

/// `anchors_ranked`: an anchor-text row's copy, keyed by its rank.
pub(crate) struct RankedAnchorKey<'a> {
    pub item_key: &'a [u8],
    pub row: &'a AnchorText,
}

impl RankedAnchorKey<'_> {
    fn layout(&self) -> Vec<u8> {
        keys::ranked_key(self.item_key, &self.row.rank(), &self.row.text)
    }
    fn read_value(&self, bytes: &[u8]) -> Result<AnchorText> {
        AnchorText::decode(&self.row.text, bytes)
    }
}
built_key!(RankedAnchorKey<'_>, Table::AnchorsRanked, AnchorText);

/// `metrics`: an item's flow metrics in one generation.
pub(crate) struct MetricsKey<'a> {
    pub generation: u8,
    pub item_key: &'a [u8],
}

impl TableKey for MetricsKey<'_> {
    const CF: &'static str = CF_METRICS;
    type Value = ItemMetrics;
    fn encode(&self) -> Vec<u8> {
        keys::metrics_key(self.generation, self.item_key)
    }
    fn encode_value(value: &ItemMetrics) -> Vec<u8> {
        value.encode()
    }
    fn decode_value(&self, bytes: &[u8]) -> Result<ItemMetrics> {
        ItemMetrics::decode(bytes)
    }
}

/// `top_pages`: a page among its site's pages (a host or a root domain), by its flows;
/// the row is its key alone, which ends with the page's URL.
pub(crate) struct TopPageKey<'a> {
    pub generation: u8,
    pub site_hash: u64,
    pub flow: FlowPair,
    pub url: &'a str,
}

impl TableKey for TopPageKey<'_> {
    const CF: &'static str = CF_TOP_PAGES;
    type Value = Empty;
    fn encode(&self) -> Vec<u8> {
        keys::top_page_key(self.generation, self.site_hash, self.flow, self.url)
    }
    fn encode_value(value: &Empty) -> Vec<u8> {
        value.encode()
    }
    fn decode_value(&self, _: &[u8]) -> Result<Empty> {
        Ok(Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{link_key, ItemHasher};
    use crate::Item;

    /// A row re-keyed to another item parses as that item's, its member unchanged; a key
    /// not of the item named is refused.
    #[test]
    fn a_row_re_keyed_is_the_same_row_of_another_item() {
        let hasher = ItemHasher::new(16);
        let host = hasher.item_key(&Item::host("www.d.example"));
        let domain = hasher.item_key(&Item::domain("d.example"));
        let key = RefDomainKey {
            item_key: &host,
            domain: "s.example",
        }
        .encode();
        let copy = with_item_key(&key, Table::RefDomains.cf_name(), &host, &domain).unwrap();
        let parsed = RefDomainKey::parse(&copy).unwrap();
        assert_eq!((parsed.item_key, parsed.domain), (&domain[..], "s.example"));
        let day = TimelineKey {
            item_key: &host,
            day: 20_000,
        }
        .encode();
        let copy = with_item_key(&day, Table::Timeline.cf_name(), &host, &domain).unwrap();
        assert_eq!(TimelineKey::parse(&copy).unwrap().day, 20_000);
        assert!(with_item_key(&day, Table::Timeline.cf_name(), &domain, &host).is_err());
    }

    /// A pointer row is its marker byte alone; a record is not a pointer, and a marker
    /// followed by more bytes (a format-13 pointer, or damage) is refused as corruption
    /// of `backlinks`.
    #[test]
    fn a_pointer_row_is_one_byte_and_a_longer_one_is_refused() {
        assert_eq!(BacklinkRow::Pointer.encode(), POINTER);
        assert_eq!(BacklinkRow::decode(&POINTER).unwrap(), BacklinkRow::Pointer);
        let record = EncodedRecord::of(&LinkRecord {
            source_url: "http://a.com/".into(),
            target_url: "http://b.com/".into(),
            ..Default::default()
        });
        assert!(!is_pointer(&record.encode()).unwrap());
        assert_eq!(
            BacklinkRow::decode(&record.encode()).unwrap(),
            BacklinkRow::Record(record)
        );
        let err = is_pointer(&[BACKLINK_POINTER, 0, 0, 0, 1])
            .unwrap_err()
            .to_string();
        assert!(err.contains("backlinks"), "{err}");
    }

    /// An external link's summary reads back as written, an internal link's row is its
    /// record, and a damaged summary is refused as corruption of `links`.
    #[test]
    fn a_links_row_reads_back_and_a_damaged_summary_is_refused() {
        let mut rec = LinkRecord {
            source_url: "http://a.com/".into(),
            target_url: "http://b.com/x".into(),
            anchor_text: "b".into(),
            redirect_status: 301,
            first_seen: 20_000,
            last_seen: 20_010,
            ..Default::default()
        };
        rec.history.insert_range(20_000..=20_003);
        rec.history.insert(20_010);
        let row = LinkRow::of(&rec);
        let bytes = row.encode();
        assert_eq!(bytes[0], LINK_AT_TARGET);
        assert_eq!(LinkRow::decode(&bytes).unwrap(), row);
        assert_eq!(internal_record(&bytes), None);

        rec.target_url = "http://www.a.com/y".into();
        rec.set_flag(crate::record::flags::INTERNAL, true);
        let internal = EncodedRecord::of(&rec).encode();
        assert_eq!(internal_record(&internal), Some(&internal[..]));
        assert_eq!(LinkRow::decode(&internal).unwrap(), LinkRow::of(&rec));

        let mut bad_flag = bytes.clone();
        bad_flag[1] = 2;
        let mut trailing = bytes.clone();
        trailing.push(0);
        for damaged in [&bytes[..6], &bad_flag[..], &trailing[..]] {
            let err = LinkRow::decode(damaged).unwrap_err().to_string();
            assert!(err.contains("links"), "{err}");
        }
    }

    /// A snapshot keeps of a page's links the targets of its internal links that carry
    /// flow, in byte order and once each, after the page's state in its `pages` row: they
    /// read back as the edges their records give, the state as a page's; a damaged row is
    /// refused as corruption of `pages`.
    #[test]
    fn a_snapshot_page_keeps_the_targets_of_its_internal_links_that_carry_flow() {
        let source = "http://a.com/";
        let link = |target: &str, flags: &[u16]| {
            let mut rec = LinkRecord {
                source_url: source.into(),
                target_url: target.into(),
                anchor_text: "y".into(),
                first_seen: 20_000,
                last_seen: 20_000,
                ..Default::default()
            };
            rec.history.insert(20_000);
            for &flag in flags {
                rec.set_flag(flag, true);
            }
            rec
        };
        use crate::record::flags::{DELETED, INTERNAL, NOFOLLOW};
        let records = [
            link("http://www.a.com/z", &[INTERNAL]),
            link("http://b.com/", &[]),
            link("http://www.a.com/y", &[INTERNAL, NOFOLLOW]),
            link("http://www.a.com/x", &[INTERNAL, DELETED]),
            link("http://www.a.com/", &[INTERNAL]),
            link("http://www.a.com/zz", &[INTERNAL]),
        ];
        assert_eq!(FlowTargets::of(&records[1..4]), None);
        let state = PageState {
            first_fetch: 1_700_000_000,
            last_fetch: 1_700_086_400,
            last_status: 200,
        };
        let page = SnapshotPage {
            state,
            flow_targets: FlowTargets::of(&records),
        };
        let key = SnapshotPageKey(source);
        let (bytes, stored_key) = (SnapshotPageKey::encode_value(&page), key.encode());
        assert_eq!(key.decode_value(&bytes).unwrap(), page);
        assert_eq!(PageKey(source).decode_value(&bytes).unwrap(), state);
        assert_eq!(stored_key, PageKey(source).encode());
        let edges = |table: Table, key: &[u8], value: &[u8]| {
            let mut edges = Vec::new();
            row_flow_edges(table, key, value, |s, t| {
                edges.push((s.to_string(), t.to_string()));
                Ok::<_, Error>(())
            })
            .map(|()| edges)
        };
        let from_records: Vec<_> = records
            .iter()
            .filter(|r| r.is_internal())
            .flat_map(|r| edges(Table::Links, &[], &EncodedRecord::of(r).encode()).unwrap())
            .collect();
        let mut expected = from_records.clone();
        expected.sort();
        assert_eq!(edges(Table::Pages, &stored_key, &bytes).unwrap(), expected);
        assert_eq!(
            expected.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(),
            [
                "http://www.a.com/",
                "http://www.a.com/z",
                "http://www.a.com/zz"
            ]
        );
        let no_targets = SnapshotPage {
            state,
            flow_targets: None,
        };
        let bare = SnapshotPageKey::encode_value(&no_targets);
        assert_eq!(bare, state.encode(), "a page row as any store's");
        assert_eq!(key.decode_value(&bare).unwrap(), no_targets);
        assert!(edges(Table::Pages, &stored_key, &bare).unwrap().is_empty());

        let at = state.encode().len();
        let mut trailing = bytes.clone();
        trailing.push(0);
        let mut not_utf8 = bytes.clone();
        let last = not_utf8.len() - 1;
        not_utf8[last] = 0xff;
        let mut shares_too_much = bytes.clone();
        shares_too_much[at + 2] = 1;
        let mut untagged = bytes.clone();
        untagged[at] = 0;
        let repeated = SnapshotPageKey::encode_value(&SnapshotPage {
            state,
            flow_targets: Some(FlowTargets(vec!["http://a.com/x".into(); 2])),
        });
        let empty = SnapshotPageKey::encode_value(&SnapshotPage {
            state,
            flow_targets: Some(FlowTargets(vec![String::new()])),
        });
        let damaged = [
            &bytes[..at + 5],
            &trailing[..],
            &not_utf8[..],
            &shares_too_much[..],
            &untagged[..],
            &repeated[..],
            &empty[..],
        ];
        for damaged in damaged {
            let err = edges(Table::Pages, &stored_key, damaged)
                .unwrap_err()
                .to_string();
            assert!(err.contains("pages"), "{err}");
            assert!(key.decode_value(damaged).is_err());
        }
        assert!(
            edges(Table::Pages, &stored_key[..4], &bytes).is_err(),
            "a short key"
        );
    }

    #[test]
    fn a_backlink_key_reads_back_as_written() {
        let key = BacklinkKey {
            generation: 3,
            item_hash: 0x0102_0304_0506_0708,
            source_trust_flow: 42,
            link: link_key("http://a.com/", "http://b.com/"),
        };
        assert_eq!(BacklinkKey::parse(&key.encode()).unwrap(), key);
        assert!(BacklinkKey::parse(&key.encode()[..25]).is_err());
    }

    #[test]
    fn values_read_back_through_their_keys() {
        let item_key = ItemHasher::new(64).item_key(&Item::domain("b.com"));
        let mut row = RefDomain {
            domain: "a.com".into(),
            links: 3,
            first_seen: 10,
            last_seen: 12,
            ..Default::default()
        };
        row.anchors.bump("click", 2);
        row.anchors.bump("here", 1);
        let key = RefDomainKey {
            item_key: &item_key,
            domain: &row.domain,
        };
        let bytes = RefDomainKey::encode_value(&row);
        assert_eq!(key.decode_value(&bytes).unwrap(), row);
        // The ranked copy holds the counts alone.
        let ranked = RankedRefDomainKey {
            item_key: &item_key,
            row: &row,
        };
        let copy = ranked
            .decode_value(&RankedRefDomainKey::encode_value(&row))
            .unwrap();
        assert_eq!(copy.anchors, RowAnchors::default());
        assert_eq!(
            copy,
            RefDomain {
                anchors: RowAnchors::default(),
                ..row.clone()
            }
        );
        let distinct = DistinctKey {
            item_key: &item_key,
            kind: DistinctKind::RefIp,
            member: "10.0.0.1",
        };
        let bytes = DistinctKey::encode_value(&Count(-7));
        assert_eq!(distinct.decode_value(&bytes).unwrap(), Count(-7));
        let top = TopPageKey {
            generation: 1,
            site_hash: 9,
            flow: FlowPair {
                trust_flow: 7,
                citation_flow: 8,
            },
            url: "http://b.com/x",
        };
        let key = top.encode();
        assert_eq!(keys::top_page_url(&key).unwrap(), "http://b.com/x");
        assert_eq!(keys::top_page_flow(&key), top.flow);
        assert!(keys::top_page_url(&key[..10]).is_err());
        assert!(TopPageKey::encode_value(&Empty).is_empty());
    }
}
