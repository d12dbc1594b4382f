//! What one crawl of one page says, in crawl-format-neutral terms, and the per-page state
//! the store keeps to apply crawls in order.

use crate::codec::{put_bytes, put_ip, put_ivarint, put_uvarint, Reader};
use crate::error::{Error, Result};
use crate::record::LinkKind;
use std::net::IpAddr;

pub const PAGE_VERSION: u8 = 1;

/// One fetch of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageCrawl {
    /// Normalised URL of the page.
    pub url: String,
    /// Fetch time, Unix seconds.
    pub fetched_at: i64,
    /// Address the page was fetched from, when the crawl records it.
    pub ip: Option<IpAddr>,
    pub outcome: CrawlOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CrawlOutcome {
    /// A successful HTML fetch and the links found in it (possibly none).
    Html { links: Vec<OutLink> },
    /// A successful fetch of something that is not HTML: the page has no links now.
    NotHtml,
    /// A 3xx answer with a `Location`: the page's only link is the redirect.
    Redirect { status: u16, location: String },
    /// 404 or 410: the page and its links are gone.
    Gone { status: u16 },
    /// Any other answer (5xx, 429, ...): says nothing about the links; ignored.
    Failed { status: u16 },
}

/// A link as extracted from a page (target already normalised).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutLink {
    pub target: String,
    /// Link text; for image links the ALT text, as Majestic reports it.
    pub anchor_text: String,
    pub alt_text: String,
    pub kind: LinkKind,
    pub nofollow: bool,
    pub ugc: bool,
    pub sponsored: bool,
}

/// Version of the [`PageCrawl`] encoding (bulk builds exchange and spill crawls in it).
pub const CRAWL_VERSION: u8 = 1;

impl PageCrawl {
    /// `docs/format.md`, "Page crawls in a bulk build".
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.url.len());
        out.push(CRAWL_VERSION);
        put_bytes(&mut out, self.url.as_bytes());
        put_ivarint(&mut out, self.fetched_at);
        put_ip(&mut out, self.ip);
        match &self.outcome {
            CrawlOutcome::Html { links } => {
                out.push(0);
                put_uvarint(&mut out, links.len() as u64);
                for l in links {
                    put_bytes(&mut out, l.target.as_bytes());
                    put_bytes(&mut out, l.anchor_text.as_bytes());
                    put_bytes(&mut out, l.alt_text.as_bytes());
                    out.push(l.kind as u8);
                    out.push(
                        u8::from(l.nofollow) | u8::from(l.ugc) << 1 | u8::from(l.sponsored) << 2,
                    );
                }
            }
            CrawlOutcome::NotHtml => out.push(1),
            CrawlOutcome::Redirect { status, location } => {
                out.push(2);
                put_uvarint(&mut out, u64::from(*status));
                put_bytes(&mut out, location.as_bytes());
            }
            CrawlOutcome::Gone { status } => {
                out.push(3);
                put_uvarint(&mut out, u64::from(*status));
            }
            CrawlOutcome::Failed { status } => {
                out.push(4);
                put_uvarint(&mut out, u64::from(*status));
            }
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<PageCrawl> {
        const CF: &str = "page crawl";
        let mut r = Reader::new(buf, CF);
        r.version(CRAWL_VERSION)?;
        let url = r.string()?;
        let fetched_at = r.ivarint()?;
        let ip = r.ip()?;
        let outcome = match r.u8()? {
            0 => {
                let n = r.uvarint()? as usize;
                let mut links = Vec::with_capacity(n.min(4096));
                for _ in 0..n {
                    let target = r.string()?;
                    let anchor_text = r.string()?;
                    let alt_text = r.string()?;
                    let kind = LinkKind::from_u8(r.u8()?)?;
                    let f = r.u8()?;
                    links.push(OutLink {
                        target,
                        anchor_text,
                        alt_text,
                        kind,
                        nofollow: f & 1 != 0,
                        ugc: f & 2 != 0,
                        sponsored: f & 4 != 0,
                    });
                }
                CrawlOutcome::Html { links }
            }
            1 => CrawlOutcome::NotHtml,
            2 => CrawlOutcome::Redirect {
                status: r.u32v()? as u16,
                location: r.string()?,
            },
            3 => CrawlOutcome::Gone {
                status: r.u32v()? as u16,
            },
            4 => CrawlOutcome::Failed {
                status: r.u32v()? as u16,
            },
            n => return Err(Error::corrupt(CF, format!("crawl outcome {n}"))),
        };
        Ok(PageCrawl {
            url,
            fetched_at,
            ip,
            outcome,
        })
    }
}

/// What the store remembers about a crawled page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageState {
    pub first_fetch: i64,
    pub last_fetch: i64,
    pub last_status: u16,
}

impl PageState {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![PAGE_VERSION];
        put_ivarint(&mut out, self.first_fetch);
        put_ivarint(&mut out, self.last_fetch);
        put_uvarint(&mut out, u64::from(self.last_status));
        out
    }

    /// Reads the state a `pages` value starts with (a snapshot's goes on with its page's
    /// flow targets, which [`PageState::decode_prefix`] hands back).
    pub fn decode(buf: &[u8]) -> Result<PageState> {
        Self::decode_prefix(buf).map(|(state, _)| state)
    }

    /// The state a `pages` value starts with, and the bytes after it.
    pub(crate) fn decode_prefix(buf: &[u8]) -> Result<(PageState, &[u8])> {
        let mut r = Reader::new(buf, "pages");
        r.version(PAGE_VERSION)?;
        let state = PageState {
            first_fetch: r.ivarint()?,
            last_fetch: r.ivarint()?,
            last_status: r.u32v()? as u16,
        };
        Ok((state, &buf[buf.len() - r.remaining()..]))
    }
}

/// Day number (days since 1970-01-01 UTC) of a Unix time.
pub fn day_of(unix_seconds: i64) -> u32 {
    unix_seconds
        .div_euclid(86_400)
        .clamp(1, i64::from(u32::MAX)) as u32
}

/// `yyyy-mm-dd` of a day number.
pub fn format_day(day: u32) -> String {
    let mut s = String::with_capacity(10);
    push_day(&mut s, day);
    s
}

/// Appends `yyyy-mm-dd` of a day number without allocating.
pub fn push_day(out: &mut String, day: u32) {
    let (y, m, d) = civil_from_days(i64::from(day));
    let digit = |v: i64| b'0' + (v % 10) as u8;
    let y = y.clamp(0, 9999);
    let (m, d) = (i64::from(m), i64::from(d));
    // Formatted whole, then appended once: a reply of backlinks has three dates a row.
    let text = [
        digit(y / 1000),
        digit(y / 100),
        digit(y / 10),
        digit(y),
        b'-',
        digit(m / 10),
        digit(m),
        b'-',
        digit(d / 10),
        digit(d),
    ];
    out.push_str(std::str::from_utf8(&text).expect("ASCII digits and dashes"));
}

/// Day number of a `yyyy-mm-dd` date.
pub fn parse_day(s: &str) -> Option<u32> {
    let mut it = s.trim().splitn(3, '-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let d: u32 = it.next()?.parse().ok()?;
    // Day numbers start in 1970; four-digit years keep the arithmetic far from overflow.
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    u32::try_from(days_from_civil(y, m, d)).ok()
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil-date algorithms (proleptic Gregorian calendar).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_convert_both_ways() {
        assert_eq!(format_day(1), "1970-01-02");
        assert_eq!(day_of(86_400 * 3 + 5), 3);
        assert_eq!(parse_day("2024-02-29"), Some(19_782));
        assert_eq!(format_day(19_782), "2024-02-29");
        assert_eq!(parse_day("2023-02-29"), None);
        assert_eq!(parse_day("2024-13-01"), None);
        assert_eq!(parse_day("yesterday"), None);
        // Years outside what a day number holds are refused, not overflowed.
        for huge in [
            "9223372036854775807-01-01",
            "-9223372036854775808-01-01",
            "99999-01-01",
            "1969-12-31",
        ] {
            assert_eq!(parse_day(huge), None, "{huge}");
        }
        assert_eq!(parse_day("9999-12-31"), Some(2_932_896));
        for day in [1u32, 10_000, 19_000, 20_500, 60_000] {
            assert_eq!(parse_day(&format_day(day)), Some(day));
        }
    }

    #[test]
    fn page_crawls_round_trip() {
        let crawls = [
            PageCrawl {
                url: "http://a.com/x".into(),
                fetched_at: 1_700_000_000,
                ip: Some("10.1.2.3".parse().unwrap()),
                outcome: CrawlOutcome::Html {
                    links: vec![OutLink {
                        target: "https://b.org/".into(),
                        anchor_text: "B \u{1} b".into(),
                        alt_text: "logo".into(),
                        kind: LinkKind::Image,
                        nofollow: true,
                        ugc: false,
                        sponsored: true,
                    }],
                },
            },
            PageCrawl {
                url: "http://a.com/y".into(),
                fetched_at: -5,
                ip: Some("2001:db8::1".parse().unwrap()),
                outcome: CrawlOutcome::Redirect {
                    status: 301,
                    location: "http://a.com/z".into(),
                },
            },
            PageCrawl {
                url: "http://a.com/g".into(),
                fetched_at: 7,
                ip: None,
                outcome: CrawlOutcome::Gone { status: 410 },
            },
        ];
        for c in crawls {
            let enc = c.encode();
            assert_eq!(PageCrawl::decode(&enc).unwrap(), c);
            assert!(PageCrawl::decode(&enc[..enc.len() - 1]).is_err());
        }
    }

    #[test]
    fn page_state_round_trips() {
        let s = PageState {
            first_fetch: 1_700_000_000,
            last_fetch: 1_700_086_400,
            last_status: 200,
        };
        assert_eq!(PageState::decode(&s.encode()).unwrap(), s);
    }
}
