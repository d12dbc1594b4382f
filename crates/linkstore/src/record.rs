//! The link record: one source URL → target URL link with every per-link attribute.
//! Encoding version 4: the target's fields first, topics as taxonomy ids (layout diagram
//! in `docs/format.md`).

use crate::codec::{put_bytes, put_ip, put_uvarint, Reader};
use crate::error::{Error, Result};
use crate::source_row::SourceRow;
use crate::topic::{each_topic, put_topic_ids, put_topics, read_topics, topic_id, topic_name};
use roaring::RoaringBitmap;
use std::net::IpAddr;
use std::ops::Range;

pub const RECORD_VERSION: u8 = 4;

/// How the link is made in the source page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LinkKind {
    /// `<a href>` or `<area href>`.
    #[default]
    Text = 0,
    /// `<a href>` wrapping an `<img>` (anchor text is the ALT text).
    Image = 1,
    /// `<frame src>` or `<iframe src>`.
    Frame = 2,
    /// An HTTP 3xx answer with `Location`.
    Redirect = 3,
}

impl LinkKind {
    pub(crate) fn from_u8(b: u8) -> Result<LinkKind> {
        Ok(match b {
            0 => LinkKind::Text,
            1 => LinkKind::Image,
            2 => LinkKind::Frame,
            3 => LinkKind::Redirect,
            _ => return Err(Error::corrupt("links", format!("link kind {b}"))),
        })
    }

    /// Majestic's `LinkSubType` column.
    pub fn link_subtype(self) -> &'static str {
        match self {
            LinkKind::Text => "TextLink_Normal",
            LinkKind::Image => "ImageLink_Normal",
            LinkKind::Frame => "Frame_Normal",
            LinkKind::Redirect => "Redirect_Normal",
        }
    }

    /// Majestic's `LinkType` column.
    pub fn link_type(self) -> &'static str {
        match self {
            LinkKind::Text => "TextLink",
            LinkKind::Image => "ImageLink",
            LinkKind::Frame => "Frame",
            LinkKind::Redirect => "Redirect",
        }
    }
}

/// Why a link was marked deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LostReason {
    #[default]
    None = 0,
    /// The source page was crawled again and no longer has the link.
    LinkRemoved = 1,
    /// The source page answered 404.
    PageNotFound = 2,
    /// The source page answered 410.
    PageGone = 3,
    /// The source page now redirects elsewhere.
    PageRedirected = 4,
    /// The source page is no longer HTML.
    NotHtml = 5,
}

impl LostReason {
    fn from_u8(b: u8) -> Result<LostReason> {
        Ok(match b {
            0 => LostReason::None,
            1 => LostReason::LinkRemoved,
            2 => LostReason::PageNotFound,
            3 => LostReason::PageGone,
            4 => LostReason::PageRedirected,
            5 => LostReason::NotHtml,
            _ => return Err(Error::corrupt("links", format!("lost reason {b}"))),
        })
    }

    /// The `ReasonLost` column value (empty for live links).
    pub fn as_str(self) -> &'static str {
        match self {
            LostReason::None => "",
            LostReason::LinkRemoved => "LinkRemoved",
            LostReason::PageNotFound => "PageNotFound",
            LostReason::PageGone => "PageGone",
            LostReason::PageRedirected => "PageRedirected",
            LostReason::NotHtml => "NotHtml",
        }
    }
}

/// Flag bits of the record's `flags` field.
pub mod flags {
    pub const DELETED: u16 = 1;
    pub const NOFOLLOW: u16 = 1 << 1;
    pub const UGC: u16 = 1 << 2;
    pub const SPONSORED: u16 = 1 << 3;
    /// Source and target share a root domain: an outlink kept for flow, not a backlink.
    pub const INTERNAL: u16 = 1 << 4;
    pub const ALT_TEXT: u16 = 1 << 5;
    /// The record keeps no source URL, address, out-link counts, Citation Flow or topics:
    /// they are its source page's `sources` row of the record's generation (snapshots
    /// only, `docs/format.md`, "`sources`").
    pub const SOURCE_ROW: u16 = 1 << 6;
}

/// Flow metrics as stored with a link end (0..=100 each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowPair {
    pub trust_flow: u8,
    pub citation_flow: u8,
}

/// One link. Dates are day numbers (days since 1970-01-01, UTC).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkRecord {
    pub source_url: String,
    pub target_url: String,
    pub anchor_text: String,
    pub alt_text: String,
    pub kind: LinkKind,
    /// HTTP status for redirects (301, 302, ...), 0 otherwise.
    pub redirect_status: u16,
    pub flags: u16,
    pub first_seen: u32,
    pub last_seen: u32,
    /// Day the link was found deleted, 0 while live.
    pub date_lost: u32,
    pub lost_reason: LostReason,
    pub source_flow: FlowPair,
    pub target_flow: FlowPair,
    pub source_ip: Option<IpAddr>,
    /// Every day the link was seen.
    pub history: RoaringBitmap,
    /// The source page's live out-links when this record was last written.
    pub source_out: SourceOutlinks,
    /// Top topics of the source page (at most [`SOURCE_TOPICS`]) and of the target
    /// (at most [`TARGET_TOPICS`]), as of the serving flow build.
    pub source_topics: Vec<(String, u8)>,
    pub target_topics: Vec<(String, u8)>,
}

/// Topics kept per link end in a record.
pub const SOURCE_TOPICS: usize = 3;
pub const TARGET_TOPICS: usize = 1;

/// Out-link counts of a source page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceOutlinks {
    pub external: u32,
    pub internal: u32,
    /// Distinct external root domains linked.
    pub external_domains: u32,
}

impl SourceOutlinks {
    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        put_uvarint(out, u64::from(self.external));
        put_uvarint(out, u64::from(self.internal));
        put_uvarint(out, u64::from(self.external_domains));
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<SourceOutlinks> {
        Ok(SourceOutlinks {
            external: r.u32v()?,
            internal: r.u32v()?,
            external_domains: r.u32v()?,
        })
    }
}

/// One end of a link as a flow build publishes it in every record that names the URL:
/// its flows and its top topics (ids, most trusted first), fixed in size so a build
/// keeps one per URL without a heap allocation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkEnd {
    pub flow: FlowPair,
    topics: [(u8, u8); SOURCE_TOPICS],
    topic_count: u8,
}

impl LinkEnd {
    /// `topics` most trusted first; only the first [`SOURCE_TOPICS`] of the taxonomy are
    /// kept (a record carries no more).
    pub fn new(flow: FlowPair, topics: &[(String, u8)]) -> LinkEnd {
        let mut end = LinkEnd {
            flow,
            ..LinkEnd::default()
        };
        for (id, value) in topics
            .iter()
            .filter_map(|(t, v)| Some((topic_id(t)?, *v)))
            .take(SOURCE_TOPICS)
        {
            end.topics[usize::from(end.topic_count)] = (id, value);
            end.topic_count += 1;
        }
        end
    }

    /// The topics, by name, most trusted first.
    pub(crate) fn topics(&self) -> Vec<(String, u8)> {
        let ids = &self.topics[..usize::from(self.topic_count)];
        ids.iter()
            .filter_map(|&(id, value)| Some((topic_name(id)?.to_string(), value)))
            .collect()
    }

    /// Writes the first `max` topics as [`put_topics`] does.
    fn put_topics(&self, out: &mut Vec<u8>, max: usize) {
        let n = usize::from(self.topic_count).min(max);
        put_topic_ids(out, n, self.topics[..n].iter().copied());
    }
}

/// What a flow build's graph takes from a link (`docs/flow.md`, the graph).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowLink<'a> {
    /// A link that carries flow (live and followed): an edge of the graph.
    Edge { source: &'a str, target: &'a str },
    /// An external link that carries none: its source alone, which the link's pointer
    /// rows name by hash. The graph may not hold it, and a flow build finds it by hash
    /// only where no other URL it knows has that hash.
    Source(&'a str),
    /// An internal link that carries none (it has no pointer rows).
    Nothing,
}

/// [`FlowLink`] of an encoded link record that keeps its source URL (a record with a
/// source row is refused: its reader knows where the URL is).
pub fn flow_link(record: &[u8]) -> Result<FlowLink<'_>> {
    let slots = FlowSlots::find(record)?;
    if slots.has_source_row() {
        return Err(source_row_needed());
    }
    Ok(slots.flow_link(slots.source_url))
}

/// True for an encoded record with a source row ([`flags::SOURCE_ROW`]); its flags
/// follow its version byte.
pub(crate) fn has_source_row(record: &[u8]) -> bool {
    record
        .get(1..3)
        .is_some_and(|f| u16::from_le_bytes([f[0], f[1]]) & flags::SOURCE_ROW != 0)
}

/// The error of reading a record with a source row where its source is not known.
fn source_row_needed() -> Error {
    Error::corrupt(
        "links",
        "a record whose source is a `sources` row, read without it",
    )
}

/// The fields of an encoded record before its source's flows.
struct Head<'a> {
    flags: u16,
    kind: LinkKind,
    target_url: &'a str,
    /// Bytes the record holds from its target URL's length prefix on.
    target_url_and_after: usize,
    first_seen: u32,
    last_seen: u32,
    date_lost: u32,
}

/// Offset of a record's target flows: after its version byte, flags and kind.
const TARGET_FLOWS_AT: usize = 4;

/// Reads an encoded record's fields before its source's flows, checking its version,
/// kind, target topics and lost reason as [`LinkRecord::decode`] does.
fn read_head<'a>(r: &mut Reader<'a>) -> Result<Head<'a>> {
    r.version(RECORD_VERSION)?;
    let flags = r.u16()?;
    let kind = LinkKind::from_u8(r.u8()?)?;
    r.take(2)?; // target flows
    each_topic(r, "links", |_, _| {})?;
    let target_url_and_after = r.remaining();
    let target_url = read_text(r)?;
    r.u32v()?; // redirect status
    let (first_seen, last_seen, date_lost) = (r.u32v()?, r.u32v()?, r.u32v()?);
    LostReason::from_u8(r.u8()?)?;
    Ok(Head {
        flags,
        kind,
        target_url,
        target_url_and_after,
        first_seen,
        last_seen,
        date_lost,
    })
}

/// A text field of an encoded record, borrowed.
fn read_text<'a>(r: &mut Reader<'a>) -> Result<&'a str> {
    std::str::from_utf8(r.bytes()?).map_err(|_| Error::corrupt("links", "string is not UTF-8"))
}

/// What a backlink record gives its target items' views (counters, referring domain,
/// live or not, address, anchor text, found and lost days), borrowed from the record:
/// read from an encoded one without decoding the history, out-link counts and topics
/// after them, or taken from a decoded one ([`LinkRecord::backlink_facts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BacklinkFacts<'a> {
    pub source_url: &'a str,
    pub target_url: &'a str,
    /// As found: lower-cased where the views use it.
    pub anchor_text: &'a str,
    pub state: LinkState,
    pub source_ip: Option<IpAddr>,
}

/// A backlink's state, as its target items' views count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinkState {
    pub deleted: bool,
    pub nofollow: bool,
    pub kind: LinkKind,
    pub first_seen: u32,
    pub last_seen: u32,
    pub date_lost: u32,
}

impl<'a> BacklinkFacts<'a> {
    /// Reads the facts of the encoded record `buf`, checking the fields up to its address
    /// as [`LinkRecord::decode`] does (the rest, history to topics, is not read).
    pub(crate) fn read(buf: &'a [u8]) -> Result<BacklinkFacts<'a>> {
        let mut r = Reader::new(buf, "links");
        let head = read_head(&mut r)?;
        if head.flags & flags::SOURCE_ROW != 0 {
            return Err(source_row_needed());
        }
        r.take(source_flow_bytes(true))?;
        let source_url = read_text(&mut r)?;
        let anchor_text = read_text(&mut r)?;
        r.bytes()?; // ALT text
        Ok(BacklinkFacts {
            source_url,
            target_url: head.target_url,
            anchor_text,
            state: LinkState {
                deleted: head.flags & flags::DELETED != 0,
                nofollow: head.flags & flags::NOFOLLOW != 0,
                kind: head.kind,
                first_seen: head.first_seen,
                last_seen: head.last_seen,
                date_lost: head.date_lost,
            },
            source_ip: r.ip()?,
        })
    }
}

/// Where an encoded record keeps what a flow build rewrites (both ends' flows and
/// topics), its two URLs and its source page's fields, found without decoding the rest:
/// re-keying every backlink row copies its bytes instead of decoding and encoding each
/// record.
pub(crate) struct FlowSlots<'a> {
    pub flags: u16,
    /// Empty in a record with a source row.
    pub source_url: &'a str,
    pub target_url: &'a str,
    /// Offset of the target URL, after the target's topics.
    target_url_at: usize,
    /// Offset of the source's flow bytes (two, or one in a record with a source row: no
    /// source Citation Flow).
    source_flows_at: usize,
    /// Offset of the source's topics, which run to the end (the end, in a record with
    /// a source row).
    topics_at: usize,
    /// Where the source URL, address and out-link counts are (empty ranges in a record
    /// with a source row), in record order.
    source_fields: [Range<usize>; 3],
}

impl<'a> FlowSlots<'a> {
    /// Reads the layout of `buf`; refuses what [`LinkRecord::decode`] would refuse,
    /// topics included.
    pub(crate) fn find(buf: &'a [u8]) -> Result<FlowSlots<'a>> {
        let mut r = Reader::new(buf, "links");
        let head = read_head(&mut r)?;
        let flags = head.flags;
        let whole = flags & flags::SOURCE_ROW == 0;
        let at = |r: &Reader<'_>| buf.len() - r.remaining();
        let target_url_at = buf.len() - head.target_url_and_after;
        let source_flows_at = at(&r);
        r.take(source_flow_bytes(whole))?;
        let url_at = at(&r);
        let source_url = if whole { read_text(&mut r)? } else { "" };
        let url = url_at..at(&r);
        r.bytes()?; // anchor text
        r.bytes()?; // ALT text
        let ip_at = at(&r);
        if whole {
            r.ip()?;
        }
        let ip = ip_at..at(&r);
        // Checked as decoding checks them, without building what decoding builds.
        history_runs(&mut r, |_, _| {})?;
        let out_at = at(&r);
        if whole {
            SourceOutlinks::read(&mut r)?;
        }
        let topics_at = at(&r);
        if whole {
            each_topic(&mut r, "links", |_, _| {})?;
        }
        Ok(FlowSlots {
            flags,
            source_url,
            target_url: head.target_url,
            target_url_at,
            source_flows_at,
            topics_at,
            source_fields: [url, ip, out_at..topics_at],
        })
    }

    pub(crate) fn has_source_row(&self) -> bool {
        self.flags & flags::SOURCE_ROW != 0
    }

    /// [`SourceRow::check`](crate::source_row::SourceRow::check) of the record's source
    /// fields (`buf`: the record these slots were found in).
    pub(crate) fn source_check(&self, buf: &[u8]) -> u64 {
        let mut check = xxhash_rust::xxh3::Xxh3::new();
        for field in &self.source_fields {
            check.update(&buf[field.clone()]);
        }
        check.digest()
    }

    /// The link as a flow build's graph takes it, its source being `source`.
    pub(crate) fn flow_link<'b>(&self, source: &'b str) -> FlowLink<'b>
    where
        'a: 'b,
    {
        if carries_flow(self.flags) {
            FlowLink::Edge {
                source,
                target: self.target_url,
            }
        } else if self.flags & flags::INTERNAL == 0 {
            FlowLink::Source(source)
        } else {
            FlowLink::Nothing
        }
    }

    /// `buf` (the record these slots were found in) with both ends replaced, and, with
    /// `to_source_row`, without its source fields, which its source row holds. A record
    /// with a source row leaves the source's Citation Flow and topics to it too.
    pub(crate) fn rewrite(
        &self,
        buf: &[u8],
        source: &LinkEnd,
        target: &LinkEnd,
        to_source_row: bool,
    ) -> Vec<u8> {
        let whole = !to_source_row && !self.has_source_row();
        let mut out = Vec::with_capacity(self.topics_at + 2 * (1 + 2 * SOURCE_TOPICS));
        out.extend_from_slice(&buf[..TARGET_FLOWS_AT]);
        out.extend_from_slice(&[target.flow.trust_flow, target.flow.citation_flow]);
        target.put_topics(&mut out, TARGET_TOPICS);
        out.extend_from_slice(&buf[self.target_url_at..self.source_flows_at]);
        out.push(source.flow.trust_flow);
        if whole {
            out.push(source.flow.citation_flow);
        }
        let mut from = self.source_flows_at + source_flow_bytes(!self.has_source_row());
        if to_source_row {
            for field in &self.source_fields {
                out.extend_from_slice(&buf[from..field.start]);
                from = field.end;
            }
            // The flags follow the version byte.
            out[1..3].copy_from_slice(&(self.flags | flags::SOURCE_ROW).to_le_bytes());
        }
        out.extend_from_slice(&buf[from..self.topics_at]);
        if whole {
            source.put_topics(&mut out, SOURCE_TOPICS);
        }
        out
    }
}

/// Whether a link with these flags carries flow: live and followed.
fn carries_flow(link_flags: u16) -> bool {
    link_flags & (flags::DELETED | flags::NOFOLLOW) == 0
}

/// The source's flow bytes in a record: its Trust Flow and Citation Flow, or its Trust
/// Flow alone in a record with a source row.
fn source_flow_bytes(whole: bool) -> usize {
    1 + usize::from(whole)
}

/// Writes the days a link was seen as runs of consecutive days: `n uvar`, then per run
/// the days since the end of the previous one (since day 0 for the first) and its
/// length - 1, both uvar. A link seen once takes 4 or 5 bytes, one crawled daily 4 or 5
/// bytes a stretch; a serialised bitmap takes 18 bytes or more.
pub(crate) fn put_history(out: &mut Vec<u8>, days: &RoaringBitmap) {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for day in days {
        match runs.last_mut() {
            Some((start, len)) if u64::from(*start) + u64::from(*len) == u64::from(day) => {
                *len += 1
            }
            _ => runs.push((day, 1)),
        }
    }
    put_uvarint(out, runs.len() as u64);
    let mut next = 0u64;
    for (start, len) in runs {
        put_uvarint(out, u64::from(start) - next);
        put_uvarint(out, u64::from(len) - 1);
        next = u64::from(start) + u64::from(len);
    }
}

/// Longest run of days read back (179 years): a longer one is corruption, refused before
/// it costs memory.
const MAX_HISTORY_RUN: u64 = 1 << 16;

/// Reads what [`put_history`] wrote, refusing runs past the last day a `u32` holds.
pub(crate) fn read_history(r: &mut Reader<'_>) -> Result<RoaringBitmap> {
    let mut days = RoaringBitmap::new();
    history_runs(r, |first, last| {
        days.insert_range(first..=last);
    })?;
    Ok(days)
}

/// Reads the runs [`put_history`] wrote, giving each one's first and last day to `each`.
fn history_runs(r: &mut Reader<'_>, mut each: impl FnMut(u32, u32)) -> Result<()> {
    let runs = r.uvarint()?;
    let mut next = 0u64;
    for _ in 0..runs {
        let start = next.saturating_add(r.uvarint()?);
        let len = r.uvarint()?.saturating_add(1);
        let end = start.saturating_add(len);
        if len > MAX_HISTORY_RUN || end > u64::from(u32::MAX) + 1 {
            return Err(Error::corrupt("links", "crawl history: run out of range"));
        }
        each(start as u32, (end - 1) as u32);
        next = end;
    }
    Ok(())
}

impl LinkRecord {
    /// A 64-bit hash of what a crawl says about the link (anchor and ALT text, kind,
    /// the flags it sets, the source's address): records that agree on it were
    /// described alike, so one can stand for the other as a link seen again.
    pub(crate) fn description_check(&self) -> u64 {
        let described =
            flags::NOFOLLOW | flags::UGC | flags::SPONSORED | flags::INTERNAL | flags::ALT_TEXT;
        let mut buf = Vec::with_capacity(self.anchor_text.len() + self.alt_text.len() + 24);
        put_uvarint(&mut buf, self.anchor_text.len() as u64);
        buf.extend_from_slice(self.anchor_text.as_bytes());
        put_uvarint(&mut buf, self.alt_text.len() as u64);
        buf.extend_from_slice(self.alt_text.as_bytes());
        buf.push(self.kind as u8);
        buf.extend_from_slice(&(self.flags & described).to_be_bytes());
        put_ip(&mut buf, self.source_ip);
        xxhash_rust::xxh3::xxh3_64(&buf)
    }

    pub(crate) fn backlink_facts(&self) -> BacklinkFacts<'_> {
        BacklinkFacts {
            source_url: &self.source_url,
            target_url: &self.target_url,
            anchor_text: &self.anchor_text,
            state: LinkState {
                deleted: self.is_deleted(),
                nofollow: self.is_nofollow(),
                kind: self.kind,
                first_seen: self.first_seen,
                last_seen: self.last_seen,
                date_lost: self.date_lost,
            },
            source_ip: self.source_ip,
        }
    }

    pub fn is_deleted(&self) -> bool {
        self.flags & flags::DELETED != 0
    }
    pub fn is_nofollow(&self) -> bool {
        self.flags & flags::NOFOLLOW != 0
    }
    pub fn is_internal(&self) -> bool {
        self.flags & flags::INTERNAL != 0
    }
    /// True for a link a flow build's graph takes as an edge ([`FlowLink::Edge`]).
    pub fn carries_flow(&self) -> bool {
        carries_flow(self.flags)
    }
    /// True for a record whose source URL, address, out-link counts, Citation Flow and
    /// topics are its source page's `sources` row ([`flags::SOURCE_ROW`]): empty here
    /// until a reader sets them ([`LinkRecord::set_source`]).
    pub fn has_source_row(&self) -> bool {
        self.flags & flags::SOURCE_ROW != 0
    }
    /// Gives a record its source page's fields, as a record kept whole holds them.
    pub(crate) fn set_source(&mut self, source: &SourceRow) {
        self.source_url.clone_from(&source.url);
        self.source_ip = source.ip;
        self.source_out = source.out;
        self.source_flow.citation_flow = source.citation_flow;
        self.source_topics.clone_from(&source.topics);
        self.flags &= !flags::SOURCE_ROW;
    }
    pub fn set_flag(&mut self, flag: u16, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            48 + self.source_url.len() + self.target_url.len() + self.anchor_text.len(),
        );
        out.push(RECORD_VERSION);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.push(self.kind as u8);
        out.extend_from_slice(&[self.target_flow.trust_flow, self.target_flow.citation_flow]);
        put_topics(&mut out, &self.target_topics);
        put_bytes(&mut out, self.target_url.as_bytes());
        put_uvarint(&mut out, u64::from(self.redirect_status));
        put_uvarint(&mut out, u64::from(self.first_seen));
        put_uvarint(&mut out, u64::from(self.last_seen));
        put_uvarint(&mut out, u64::from(self.date_lost));
        out.push(self.lost_reason as u8);
        let whole = !self.has_source_row();
        out.push(self.source_flow.trust_flow);
        if whole {
            out.push(self.source_flow.citation_flow);
            put_bytes(&mut out, self.source_url.as_bytes());
        }
        put_bytes(&mut out, self.anchor_text.as_bytes());
        put_bytes(&mut out, self.alt_text.as_bytes());
        if whole {
            put_ip(&mut out, self.source_ip);
        }
        put_history(&mut out, &self.history);
        if whole {
            self.source_out.put(&mut out);
            put_topics(&mut out, &self.source_topics);
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<LinkRecord> {
        let mut r = Reader::new(buf, "links");
        r.version(RECORD_VERSION)?;
        let flags = r.u16()?;
        let kind = LinkKind::from_u8(r.u8()?)?;
        let t = r.take(2)?;
        let target_flow = FlowPair {
            trust_flow: t[0],
            citation_flow: t[1],
        };
        let target_topics = read_topics(&mut r, "links")?;
        let target_url = r.string()?;
        let redirect_status = r.u32v()? as u16;
        let first_seen = r.u32v()?;
        let last_seen = r.u32v()?;
        let date_lost = r.u32v()?;
        let lost_reason = LostReason::from_u8(r.u8()?)?;
        let whole = flags & flags::SOURCE_ROW == 0;
        let f = r.take(source_flow_bytes(whole))?;
        let source_flow = FlowPair {
            trust_flow: f[0],
            citation_flow: if whole { f[1] } else { 0 },
        };
        let source_url = if whole { r.string()? } else { String::new() };
        let anchor_text = r.string()?;
        let alt_text = r.string()?;
        let source_ip = if whole { r.ip()? } else { None };
        let history = read_history(&mut r)?;
        let (source_out, source_topics) = if whole {
            (SourceOutlinks::read(&mut r)?, read_topics(&mut r, "links")?)
        } else {
            (SourceOutlinks::default(), Vec::new())
        };
        Ok(LinkRecord {
            source_url,
            target_url,
            anchor_text,
            alt_text,
            kind,
            redirect_status,
            flags,
            first_seen,
            last_seen,
            date_lost,
            lost_reason,
            source_flow,
            target_flow,
            source_ip,
            history,
            source_out,
            source_topics,
            target_topics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_every_field() {
        let mut rec = LinkRecord {
            source_url: "http://a.com/x".into(),
            target_url: "https://b.org/y?z=1".into(),
            anchor_text: "Grüße & more".into(),
            alt_text: "logo".into(),
            kind: LinkKind::Redirect,
            redirect_status: 301,
            flags: flags::DELETED | flags::NOFOLLOW | flags::ALT_TEXT,
            first_seen: 19_000,
            last_seen: 19_500,
            date_lost: 19_501,
            lost_reason: LostReason::PageRedirected,
            source_flow: FlowPair {
                trust_flow: 40,
                citation_flow: 55,
            },
            target_flow: FlowPair {
                trust_flow: 3,
                citation_flow: 100,
            },
            source_ip: Some("2001:db8::1".parse().unwrap()),
            history: RoaringBitmap::new(),
            source_out: SourceOutlinks {
                external: 12,
                internal: 300,
                external_domains: 5,
            },
            source_topics: vec![("News".into(), 40), ("Arts".into(), 3)],
            target_topics: vec![("Health".into(), 9)],
        };
        rec.history.insert(19_000);
        rec.history.insert(19_500);
        let encoded = rec.encode();
        assert_eq!(LinkRecord::decode(&encoded).unwrap(), rec);
        let facts = BacklinkFacts::read(&encoded).unwrap();
        assert_eq!(facts, rec.backlink_facts());
        assert!(facts.state.deleted && facts.anchor_text == "Grüße & more");
        rec.flags = 0;
        rec.source_ip = Some("10.1.2.3".parse().unwrap());
        let facts = rec.backlink_facts();
        assert_eq!(BacklinkFacts::read(&rec.encode()).unwrap(), facts);
        assert!(!facts.state.deleted);
    }

    /// Rewriting an encoded record's ends equals decoding it, setting them and encoding.
    #[test]
    fn rewritten_ends_equal_a_re_encoded_record() {
        let mut rec = LinkRecord {
            source_url: "http://a.com/x".into(),
            target_url: "https://b.org/y".into(),
            anchor_text: "go".into(),
            source_ip: Some("10.1.2.3".parse().unwrap()),
            source_topics: vec![("News".into(), 4)],
            ..Default::default()
        };
        rec.history.insert_range(19_000..19_010);
        let buf = rec.encode();
        let slots = FlowSlots::find(&buf).unwrap();
        assert_eq!(
            (slots.source_url, slots.target_url),
            ("http://a.com/x", "https://b.org/y")
        );
        let topics: Vec<(String, u8)> = ["Arts", "Health", "Science", "Sports"]
            .iter()
            .zip([9, 8, 7, 6])
            .map(|(t, v)| (t.to_string(), v))
            .collect();
        let flow = |t, c| FlowPair {
            trust_flow: t,
            citation_flow: c,
        };
        let source = LinkEnd::new(flow(30, 40), &topics);
        let target = LinkEnd::new(flow(5, 60), &topics[1..]);
        let rewritten = slots.rewrite(&buf, &source, &target, false);
        rec.source_flow = flow(30, 40);
        rec.target_flow = flow(5, 60);
        rec.source_topics = topics[..3].to_vec();
        rec.target_topics = topics[1..2].to_vec();
        assert_eq!(LinkRecord::decode(&rewritten).unwrap(), rec);
        assert_eq!(rewritten, rec.encode());
        // Left to a source row: the record without its source fields, which the row
        // gives back; the row's check is the record's.
        let row = SourceRow::of(&rec);
        assert_eq!(slots.source_check(&buf), row.check());
        let detached = slots.rewrite(&buf, &source, &target, true);
        let mut read = LinkRecord::decode(&detached).unwrap();
        assert!(read.has_source_row() && read.source_url.is_empty());
        assert_eq!(read.encode(), detached);
        assert!(detached.len() < rewritten.len() - rec.source_url.len());
        let again = FlowSlots::find(&detached).unwrap();
        assert!(again.has_source_row() && again.source_url.is_empty());
        assert_eq!(again.rewrite(&detached, &source, &target, true), detached);
        assert!(BacklinkFacts::read(&detached).is_err() && flow_link(&detached).is_err());
        assert_eq!(
            (read.source_flow, read.target_flow),
            (flow(30, 0), flow(5, 60))
        );
        assert!(read.source_topics.is_empty());
        read.set_source(&row);
        assert_eq!(read, rec);
        // A later flow build's ends: the record keeps the source's Trust Flow, and the
        // row of that build's generation the rest.
        let source = LinkEnd::new(flow(7, 8), &topics[3..]);
        let target = LinkEnd::new(flow(1, 2), &[]);
        let moved = again.rewrite(&detached, &source, &target, false);
        let mut read = LinkRecord::decode(&moved).unwrap();
        read.set_source(&row.with_end(&source));
        rec.source_flow = flow(7, 8);
        rec.target_flow = flow(1, 2);
        rec.source_topics = topics[3..].to_vec();
        rec.target_topics.clear();
        assert_eq!(read, rec);
        let other = SourceRow {
            ip: None,
            ..row.clone()
        };
        assert_ne!(other.check(), row.check());
        // What decoding refuses, finding the slots refuses too.
        assert!(FlowSlots::find(&buf[..buf.len() - 1]).is_err());
        let mut other = buf.clone();
        other[0] = 9;
        assert!(FlowSlots::find(&other).is_err());
    }

    #[test]
    fn history_is_stored_as_runs_of_days() {
        let mut days = RoaringBitmap::new();
        days.insert_range(20_000..20_090);
        days.insert(20_100);
        days.insert(0);
        days.insert(u32::MAX);
        let mut out = Vec::new();
        put_history(&mut out, &days);
        let mut once = Vec::new();
        put_history(&mut once, &RoaringBitmap::from_iter([20_454]));
        assert_eq!(once.len(), 5, "a day seen once: {once:?}");
        assert_eq!(read_history(&mut Reader::new(&out, "links")).unwrap(), days);
        // A run that would end past the last day, or one of billions of days, is
        // corruption, refused before it costs memory.
        for run in [
            [1u64, u64::from(u32::MAX), 5],
            [1, 0, u64::from(u32::MAX) - 1],
        ] {
            let mut bad = Vec::new();
            for v in run {
                put_uvarint(&mut bad, v);
            }
            let err = read_history(&mut Reader::new(&bad, "links")).unwrap_err();
            assert!(err.to_string().contains("out of range"), "{err}");
        }
    }

    #[test]
    fn decoding_rejects_other_versions_and_truncation() {
        let rec = LinkRecord::default();
        let mut enc = rec.encode();
        assert!(LinkRecord::decode(&enc[..enc.len() - 1]).is_err());
        enc[0] = 9;
        let err = LinkRecord::decode(&enc).unwrap_err().to_string();
        assert!(err.contains("version 9"), "{err}");
        assert!(BacklinkFacts::read(&enc).is_err());
        // Any cut before the end of the address, the last field facts read (history,
        // three out-link counts and the source's topics of a default record take 5 bytes).
        let enc = rec.encode();
        for end in 0..enc.len() - 5 {
            assert!(BacklinkFacts::read(&enc[..end]).is_err(), "{end}");
        }
        assert!(BacklinkFacts::read(&enc[..enc.len() - 5]).is_ok());
    }
}
