//! A bulk build's `backlinks` rows of host and root-domain items as its views sorter
//! holds them: what the row gives its items' views, in place of the link's record.
//!
//! A store keeps a link's record in its target URL's row only, and a pointer in its host's
//! and root domain's rows; reducing those two rows needs the link's [`ViewFacts`] alone.
//! So the page stage works the facts out once per link and sends these rows, about a
//! third of a record's size, instead of the record three times. A historic build keeps
//! them for its flow build, which re-keys each by its source: there they also name the
//! source URL. Never stored (`docs/format.md`, "Bulk builds").

use crate::codec::{put_bytes, put_ip, put_uvarint, Reader};
use crate::error::{Error, Result};
use crate::item::Level;
use crate::record::{LinkKind, LinkState};
use crate::views::ViewFacts;
use std::borrow::Cow;

/// First byte of a facts row: neither a record's version (4) nor a pointer (`B1`).
const TAG: u8 = 0xF1;

const DELETED: u8 = 1;
const NOFOLLOW: u8 = 1 << 1;
const HTTPS: u8 = 1 << 2;
const EDU: u8 = 1 << 3;
const GOV: u8 = 1 << 4;
const SOURCE_URL: u8 = 1 << 5;
const FLAGS: u8 = DELETED | NOFOLLOW | HTTPS | EDU | GOV | SOURCE_URL;

/// What errors name: the rows live in a build's sorted runs and kept flow-input files.
const WHERE: &str = "backlinks (bulk build)";

/// Whether `value`, a `backlinks` row in a bulk build's views sorter, is a facts row
/// (else the link's record).
pub(crate) fn is_facts_row(value: &[u8]) -> bool {
    value.first() == Some(&TAG)
}

/// Encodes the facts row of `facts` for the row's `items` (one or two of the target's
/// host and root domain: two when their hashes are equal), naming `source_url` when
/// given:
///
/// ```text
/// | F1 | n u8 | n x (level u8, name bytes) | flags u8 | kind u8 | first_seen uvar |
/// | last_seen uvar | date_lost uvar | ip_len u8 | ip | source_domain bytes | anchor bytes |
/// | source_url bytes, with flag bit 5 |
/// ```
///
/// `flags`: bit 0 deleted, 1 nofollow, 2 https source, 3 edu source, 4 gov source, 5 the
/// source URL follows.
pub(crate) fn encode(
    items: &[(Level, &str)],
    facts: &ViewFacts<'_>,
    source_url: Option<&str>,
    out: &mut Vec<u8>,
) {
    debug_assert!(
        matches!(items.len(), 1 | 2),
        "a host, a root domain or both"
    );
    let link = &facts.link;
    out.push(TAG);
    out.push(items.len() as u8);
    for (level, name) in items {
        out.push(*level as u8);
        put_bytes(out, name.as_bytes());
    }
    let flags = [
        (link.deleted, DELETED),
        (link.nofollow, NOFOLLOW),
        (facts.https, HTTPS),
        (facts.edu, EDU),
        (facts.gov, GOV),
        (source_url.is_some(), SOURCE_URL),
    ]
    .into_iter()
    .filter(|(set, _)| *set)
    .fold(0, |acc, (_, bit)| acc | bit);
    out.push(flags);
    out.push(link.kind as u8);
    for day in [link.first_seen, link.last_seen, link.date_lost] {
        put_uvarint(out, u64::from(day));
    }
    put_ip(out, facts.source_ip);
    put_bytes(out, facts.source_domain.as_bytes());
    put_bytes(out, facts.anchor.as_bytes());
    if let Some(url) = source_url {
        put_bytes(out, url.as_bytes());
    }
}

/// The items and facts of a facts row ([`encode`]).
pub(crate) struct FactsRow<'a> {
    items: [(Level, &'a str); 2],
    len: usize,
    pub facts: ViewFacts<'a>,
    pub source_url: Option<&'a str>,
}

impl<'a> FactsRow<'a> {
    pub(crate) fn read(buf: &'a [u8]) -> Result<FactsRow<'a>> {
        let mut r = Reader::new(buf, WHERE);
        if r.u8()? != TAG {
            return Err(corrupt("not a facts row"));
        }
        let len = usize::from(r.u8()?);
        if !(1..=2).contains(&len) {
            return Err(corrupt(format!("{len} items")));
        }
        let mut items = [(Level::RootDomain, ""); 2];
        for item in &mut items[..len] {
            let level = match r.u8()? {
                1 => Level::RootDomain,
                2 => Level::SubDomain,
                other => return Err(corrupt(format!("item level {other}"))),
            };
            *item = (level, text(&mut r)?);
        }
        if len == 2 && (items[0].0, items[1].0) != (Level::SubDomain, Level::RootDomain) {
            return Err(corrupt("two items other than a host and its root domain"));
        }
        let flags = r.u8()?;
        if flags & !FLAGS != 0 {
            return Err(corrupt(format!("flags {flags:#x}")));
        }
        let kind = LinkKind::from_u8(r.u8()?)?;
        let (first_seen, last_seen, date_lost) = (r.u32v()?, r.u32v()?, r.u32v()?);
        let source_ip = r.ip()?;
        let source_domain = text(&mut r)?;
        let anchor = text(&mut r)?;
        let source_url = if flags & SOURCE_URL != 0 {
            Some(text(&mut r)?)
        } else {
            None
        };
        if r.remaining() != 0 {
            return Err(corrupt("bytes after its last field"));
        }
        Ok(FactsRow {
            items,
            len,
            facts: ViewFacts {
                source_domain,
                https: flags & HTTPS != 0,
                edu: flags & EDU != 0,
                gov: flags & GOV != 0,
                anchor: Cow::Borrowed(anchor),
                source_ip,
                link: LinkState {
                    deleted: flags & DELETED != 0,
                    nofollow: flags & NOFOLLOW != 0,
                    kind,
                    first_seen,
                    last_seen,
                    date_lost,
                },
            },
            source_url,
        })
    }

    /// The items the row stands for, host before root domain.
    pub(crate) fn items(&self) -> &[(Level, &'a str)] {
        &self.items[..self.len]
    }
}

fn text<'a>(r: &mut Reader<'a>) -> Result<&'a str> {
    std::str::from_utf8(r.bytes()?).map_err(|_| corrupt("text is not UTF-8"))
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::corrupt(WHERE, what.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LinkRecord;

    #[test]
    fn a_facts_row_reads_back_as_the_facts_of_its_record() {
        let rec = LinkRecord {
            source_url: "https://a.example.ac.uk/page".into(),
            target_url: "http://www.target.com/x".into(),
            anchor_text: "Click HERE".into(),
            kind: LinkKind::Image,
            flags: crate::record::flags::DELETED | crate::record::flags::NOFOLLOW,
            first_seen: 20_000,
            last_seen: 20_400,
            date_lost: 20_401,
            source_ip: Some("192.0.2.7".parse().unwrap()),
            ..Default::default()
        };
        let facts = ViewFacts::of(&rec.backlink_facts());
        assert_eq!(facts.source_domain, "example.ac.uk");
        assert!(facts.https && facts.edu && !facts.gov);
        assert!(facts.link.deleted && facts.link.nofollow);
        assert_eq!(facts.anchor, "click here");
        for items in [
            &[(Level::SubDomain, "www.target.com")][..],
            &[(Level::RootDomain, "target.com")],
            &[
                (Level::SubDomain, "www.target.com"),
                (Level::RootDomain, "target.com"),
            ],
        ] {
            for source_url in [None, Some(rec.source_url.as_str())] {
                let mut buf = Vec::new();
                encode(items, &facts, source_url, &mut buf);
                assert!(is_facts_row(&buf));
                let row = FactsRow::read(&buf).unwrap();
                assert_eq!(row.items(), items);
                assert_eq!(row.facts, facts);
                assert_eq!(row.source_url, source_url);
                // A cut row is refused, not misread.
                for cut in 0..buf.len() {
                    assert!(FactsRow::read(&buf[..cut]).is_err(), "cut at {cut}");
                }
            }
        }
        assert!(!is_facts_row(&rec.encode()), "a record is not a facts row");
        // Unknown flags, and two items out of order, are refused.
        let mut buf = Vec::new();
        encode(&[(Level::RootDomain, "target.com")], &facts, None, &mut buf);
        let flags_at = 2 + 1 + 1 + "target.com".len();
        buf[flags_at] |= 1 << 7;
        assert!(FactsRow::read(&buf).is_err());
        buf.clear();
        let items = [
            (Level::RootDomain, "target.com"),
            (Level::SubDomain, "www.target.com"),
        ];
        encode(&items, &facts, None, &mut buf);
        assert!(FactsRow::read(&buf).is_err());
    }
}
