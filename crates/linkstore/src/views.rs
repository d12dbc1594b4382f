//! One link record's share of every view, as typed contributions.
//!
//! Both write paths take them from here: the incremental [`Writer`](crate::Writer) lists
//! them and applies each to the rows it reads (and derives distinct and referring-domain
//! counters from their before/after values); the bulk builder sums them per row and
//! encodes the sums as rows ([`crate::build`]), which it sorts and reduces by key. Keeping
//! one source of contributions is what makes the two paths give the same views. A link's
//! share of its target items' views ([`target_contributions`]) goes to a [`ViewSink`]: the
//! writer's is a list of owned contributions, a bulk build's sum folds the shares in with
//! their members lent.

use crate::aggregate::{accumulate, AnchorText, Counters, RefDomain, TimelineDelta};
use crate::item::{host_of, root_domain, url_levels, Item, Level};
use crate::keys::{level_of_item_key, link_key, DistinctKind, ItemHasher};
use crate::record::{BacklinkFacts, LinkKind, LinkRecord, LinkState};
use crate::table::{BacklinkKey, BacklinkRow, EncodedRecord, ExpiryLinkKey};
use std::borrow::Cow;
use std::net::IpAddr;

/// A change to one row of one view, caused by adding (`sign` = 1) or removing (`sign` =
/// -1) one link record.
#[derive(Debug, Clone)]
pub(crate) enum Contribution {
    /// A delta of an item's counters (sums, and minima and maxima on additions).
    Counters { item_key: Vec<u8>, delta: Counters },
    /// A reference to a distinct member; the counter it feeds moves when the member's
    /// count goes 0 → 1 or 1 → 0.
    Distinct {
        item_key: Vec<u8>,
        kind: DistinctKind,
        member: String,
        sign: i64,
    },
    /// A backlink's share of its referring-domain row, folded in with
    /// [`RefDomain::fold`] (the share's own `domain` is empty: the member is `domain`).
    /// `first_seen`/`last_seen` are 0 on removals (dates never move back).
    RefDomain {
        item_key: Vec<u8>,
        domain: String,
        share: RefDomain,
    },
    /// A backlink's share of its anchor-text row, folded in with [`AnchorText::fold`]
    /// (its referring domains come from the `AnchorDomain` distinct members).
    Anchor {
        item_key: Vec<u8>,
        text: String,
        share: AnchorText,
    },
    Timeline {
        item_key: Vec<u8>,
        day: u32,
        delta: TimelineDelta,
    },
    /// A backlink row: `row` written on additions (the record in the target URL's row,
    /// a pointer in the others), deleted on removals (`None`). A bulk build sends the
    /// others as facts rows instead (`build::facts_row`).
    Backlink {
        key: BacklinkKey,
        row: Option<BacklinkRow>,
    },
    /// A deleted link's `expiry` row (the day it leaves the fresh window): written on
    /// additions, deleted on removals.
    Expiry { key: ExpiryLinkKey, sign: i64 },
}

/// Every contribution of `rec` with `sign`, in a fixed order: the link's own rows
/// ([`link_contributions`]) and its share of each target item's views
/// ([`target_contributions`]).
pub(crate) fn contributions(
    rec: &LinkRecord,
    sign: i64,
    hasher: &ItemHasher,
    generation: u8,
    out: &mut Vec<Contribution>,
) {
    let facts = (!rec.is_internal()).then(|| ViewFacts::of(&rec.backlink_facts()));
    link_contributions(rec, facts.as_ref(), sign, hasher, generation, out);
    if let Some(facts) = &facts {
        target_contributions(facts, sign, url_levels(&rec.target_url), hasher, out);
    }
}

/// The contributions of `rec` that are not a target item's views: the source page's
/// counters and out-domains, the whole index's counters and addresses, the deleted
/// link's expiry row, and (external links, whose [`ViewFacts`] are `facts`) one
/// backlink row per target level. A bulk build derives the rest from each backlink row
/// when it reduces it (one source of contributions either way).
pub(crate) fn link_contributions(
    rec: &LinkRecord,
    facts: Option<&ViewFacts<'_>>,
    sign: i64,
    hasher: &ItemHasher,
    generation: u8,
    out: &mut Vec<Contribution>,
) {
    let source_levels = url_levels(&rec.source_url);
    let source_domain = source_levels[2].1;
    let target_domain = domain_of_url(&rec.target_url);
    let index_key = hasher.item_key(&Item::index());

    if rec.is_deleted() {
        let day = min_nonzero(rec.last_seen, rec.date_lost);
        let link = link_key(&rec.source_url, &rec.target_url);
        out.push(Contribution::Expiry {
            key: ExpiryLinkKey { day, link },
            sign,
        });
    } else {
        for (level, name) in source_levels {
            let item_key = hasher.key_of(level, name);
            let mut delta = Counters::default();
            if rec.is_internal() {
                delta.out_links_internal = sign;
            } else {
                delta.out_links_external = sign;
                // Out-domains of a page come from its link set (`page_out_domains`), of
                // a root domain from its referring-domain rows (`out_domain_counters`).
                if level == Level::SubDomain {
                    out.push(Contribution::Distinct {
                        item_key: item_key.clone(),
                        kind: DistinctKind::OutDomain,
                        member: target_domain.to_string(),
                        sign,
                    });
                }
            }
            out.push(Contribution::Counters { item_key, delta });
        }
        let delta = Counters {
            out_links_internal: sign * i64::from(rec.is_internal()),
            out_links_external: sign * i64::from(!rec.is_internal()),
            ..Default::default()
        };
        out.push(Contribution::Counters {
            item_key: index_key.clone(),
            delta,
        });
        // Which domains are served from which addresses, counted by live links so a
        // re-crawl from another address moves them (GetHostedDomains).
        if let Some(ip) = rec.source_ip {
            let ip = ip_member(ip);
            out.push(Contribution::Distinct {
                item_key: index_key.clone(),
                kind: DistinctKind::IpDomain,
                member: pair_member(&ip, source_domain),
                sign,
            });
            out.push(Contribution::Distinct {
                item_key: index_key.clone(),
                kind: DistinctKind::DomainIp,
                member: pair_member(source_domain, &ip),
                sign,
            });
        }
    }
    if rec.is_internal() {
        return;
    }
    let worked_out;
    let facts = match facts {
        Some(facts) => facts,
        None => {
            worked_out = ViewFacts::of(&rec.backlink_facts());
            &worked_out
        }
    };

    out.push(Contribution::Counters {
        item_key: index_key,
        delta: backlink_counters(facts, sign),
    });
    let link = link_key(&rec.source_url, &rec.target_url);
    let keys = url_levels(&rec.target_url).map(|(level, name)| BacklinkKey {
        generation,
        item_hash: hasher.hash(level, name),
        source_trust_flow: rec.source_flow.trust_flow,
        link,
    });
    let adding = sign > 0;
    let mut record = adding.then(|| EncodedRecord::of(rec));
    // Two levels share the URL's row when their hashes are equal (forced collisions).
    let mut url_rows_left = keys.iter().filter(|k| k.is_url_row(hasher)).count();
    for key in keys {
        let row = match (adding, key.is_url_row(hasher)) {
            (false, _) => None,
            (true, false) => Some(BacklinkRow::Pointer),
            (true, true) => {
                url_rows_left -= 1;
                let record = match url_rows_left {
                    0 => record.take(),
                    _ => record.clone(),
                };
                record.map(BacklinkRow::Record)
            }
        };
        out.push(Contribution::Backlink { key, row });
    }
}

/// What one backlink adds to (or, `sign` -1, takes from) a target item's counters.
fn backlink_counters(facts: &ViewFacts<'_>, sign: i64) -> Counters {
    let link = &facts.link;
    let mut delta = Counters {
        ext_backlinks: sign,
        deleted_links: sign * i64::from(link.deleted),
        nofollow_links: sign * i64::from(link.nofollow),
        redirect_links: sign * i64::from(link.kind == LinkKind::Redirect),
        image_links: sign * i64::from(link.kind == LinkKind::Image),
        frame_links: sign * i64::from(link.kind == LinkKind::Frame),
        text_links: sign * i64::from(link.kind == LinkKind::Text),
        https_links: sign * i64::from(facts.https),
        edu_links: sign * i64::from(facts.edu),
        gov_links: sign * i64::from(facts.gov),
        ..Default::default()
    };
    if sign > 0 {
        delta.first_link_day = i64::from(link.first_seen);
        delta.last_link_day = i64::from(link.last_seen);
    }
    delta
}

/// Where an external link's share of its target items' views goes
/// ([`target_contributions`]). Members are lent: a sink that already holds a member
/// folds the share in without copying it.
pub(crate) trait ViewSink {
    fn counters(&mut self, item_key: &[u8], delta: Counters);
    fn distinct(&mut self, item_key: &[u8], kind: DistinctKind, member: &str, sign: i64);
    fn ref_domain(&mut self, item_key: &[u8], domain: &str, share: RefDomain);
    fn anchor(&mut self, item_key: &[u8], text: &str, share: AnchorText);
    fn timeline(&mut self, item_key: &[u8], day: u32, delta: TimelineDelta);
}

/// The shares as owned contributions, in the order [`target_contributions`] gives them.
impl ViewSink for Vec<Contribution> {
    fn counters(&mut self, item_key: &[u8], delta: Counters) {
        self.push(Contribution::Counters {
            item_key: item_key.to_vec(),
            delta,
        });
    }

    fn distinct(&mut self, item_key: &[u8], kind: DistinctKind, member: &str, sign: i64) {
        self.push(Contribution::Distinct {
            item_key: item_key.to_vec(),
            kind,
            member: member.to_string(),
            sign,
        });
    }

    fn ref_domain(&mut self, item_key: &[u8], domain: &str, share: RefDomain) {
        self.push(Contribution::RefDomain {
            item_key: item_key.to_vec(),
            domain: domain.to_string(),
            share,
        });
    }

    fn anchor(&mut self, item_key: &[u8], text: &str, share: AnchorText) {
        self.push(Contribution::Anchor {
            item_key: item_key.to_vec(),
            text: text.to_string(),
            share,
        });
    }

    fn timeline(&mut self, item_key: &[u8], day: u32, delta: TimelineDelta) {
        self.push(Contribution::Timeline {
            item_key: item_key.to_vec(),
            day,
            delta,
        });
    }
}

/// What a backlink gives each of its target items' views, worked out once per link: its
/// record's facts, with its source's registered domain (and whether that is an
/// educational or government one) and its anchor text as the views spell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewFacts<'a> {
    pub source_domain: &'a str,
    pub https: bool,
    pub edu: bool,
    pub gov: bool,
    /// Lower-cased: anchor views hold Majestic's GetAnchorText form, so case variants
    /// share one row and their referring domains are counted exactly.
    pub anchor: Cow<'a, str>,
    pub source_ip: Option<IpAddr>,
    pub link: LinkState,
}

impl<'a> ViewFacts<'a> {
    pub(crate) fn of(rec: &BacklinkFacts<'a>) -> ViewFacts<'a> {
        let source_domain = domain_of_url(rec.source_url);
        let (edu, gov) = edu_gov(source_domain);
        ViewFacts {
            source_domain,
            https: rec.source_url.starts_with("https:"),
            edu,
            gov,
            anchor: lower_case(rec.anchor_text),
            source_ip: rec.source_ip,
            link: rec.state,
        }
    }
}

/// An external link's share of the views of each of `items` (levels of its target
/// URL): referring domain, addresses and subnets, anchor text and its referring
/// domains, found and lost days, counters. What depends on the link alone is worked out
/// once for all the items.
pub(crate) fn target_contributions<'i, S: ViewSink + ?Sized>(
    facts: &ViewFacts<'_>,
    sign: i64,
    items: impl IntoIterator<Item = (Level, &'i str)>,
    hasher: &ItemHasher,
    out: &mut S,
) {
    let link = &facts.link;
    let delta = backlink_counters(facts, sign);
    let anchor_domain = pair_member(facts.source_domain, &facts.anchor);
    let ip = facts.source_ip.map(ip_member);
    let mut key_buffer = Vec::new();
    for (level, name) in items {
        hasher.key_into(level, name, &mut key_buffer);
        let item_key = key_buffer.as_slice();
        out.ref_domain(item_key, facts.source_domain, ref_domain_share(link, sign));
        // Subnets are counted from the addresses' rows (`subnet_of_member`).
        if let Some(ip) = &ip {
            out.distinct(item_key, DistinctKind::RefIp, ip, sign);
        }
        out.distinct(item_key, DistinctKind::AnchorDomain, &anchor_domain, sign);
        out.anchor(item_key, &facts.anchor, anchor_share(link, sign));
        for (day, delta) in timeline_shares(link, sign) {
            out.timeline(item_key, day, delta);
        }
        out.counters(item_key, delta);
    }
}

/// A backlink's shares of its target items' timelines: found on its first day, and
/// lost on the day it was lost, if it is.
pub(crate) fn timeline_shares(
    link: &LinkState,
    sign: i64,
) -> impl Iterator<Item = (u32, TimelineDelta)> {
    let found = TimelineDelta {
        found: sign,
        lost: 0,
    };
    let lost = TimelineDelta {
        found: 0,
        lost: sign,
    };
    std::iter::once((link.first_seen, found)).chain(link.deleted.then_some((link.date_lost, lost)))
}

/// A backlink's share of its referring-domain row (the member, its domain, is the key's).
/// `first_seen`/`last_seen` are 0 on removals (dates never move back).
fn ref_domain_share(link: &LinkState, sign: i64) -> RefDomain {
    RefDomain {
        domain: String::new(),
        links: sign,
        deleted_links: sign * i64::from(link.deleted),
        nofollow_links: sign * i64::from(link.nofollow),
        first_seen: if sign > 0 { link.first_seen } else { 0 },
        last_seen: if sign > 0 { link.last_seen } else { 0 },
        ..Default::default()
    }
}

/// A backlink's share of its anchor-text row, but its referring domains (counted from
/// the distinct domains using the text).
fn anchor_share(link: &LinkState, sign: i64) -> AnchorText {
    AnchorText {
        text: String::new(),
        ref_domains: 0,
        links: sign,
        deleted_links: sign * i64::from(link.deleted),
        nofollow_links: sign * i64::from(link.nofollow),
    }
}

/// One item's referring-domain and anchor-text rows as readers see them (no anchor
/// texts in referring-domain rows), folded straight from the records of its backlinks:
/// the same shares as [`target_contributions`], without rows to encode.
pub(crate) fn member_rows(records: &[LinkRecord]) -> (Vec<RefDomain>, Vec<AnchorText>) {
    use std::collections::HashMap;
    let mut domains: HashMap<&str, RefDomain> = HashMap::new();
    let mut anchors: HashMap<String, (AnchorText, Vec<&str>)> = HashMap::new();
    for rec in records.iter().map(LinkRecord::backlink_facts) {
        let domain = domain_of_url(rec.source_url);
        let link = rec.state;
        domains
            .entry(domain)
            .or_default()
            .fold(&ref_domain_share(&link, 1));
        let (row, by) = anchors.entry(rec.anchor_text.to_lowercase()).or_default();
        row.fold(&anchor_share(&link, 1));
        if !by.contains(&domain) {
            by.push(domain);
            row.ref_domains += 1;
        }
    }
    let domains = domains
        .into_iter()
        .map(|(domain, row)| RefDomain {
            domain: domain.to_string(),
            ..row
        })
        .collect();
    let anchors = anchors
        .into_iter()
        .map(|(text, (row, _))| AnchorText { text, ..row })
        .collect();
    (domains, anchors)
}

/// What a distinct member's appearance (`moved` = 1) or disappearance (-1) changes in
/// its item's counters: nothing for `IpDomain` and `DomainIp`, whose rows are the index,
/// nor for `AnchorDomain`, which moves its anchor row's referring-domain count instead.
pub(crate) fn distinct_counters(kind: DistinctKind, moved: i64) -> Option<Counters> {
    let mut c = Counters::default();
    match kind {
        DistinctKind::RefIp => c.ref_ips = moved,
        DistinctKind::OutDomain => c.out_domains_external = moved,
        DistinctKind::AnchorDomain
        | DistinctKind::IpDomain
        | DistinctKind::DomainIp
        | DistinctKind::LinkedHost
        | DistinctKind::BacklinkHost
        | DistinctKind::BacklinkUrl => return None,
    }
    Some(c)
}

/// A member made of two parts, `a \x01 b` (domains never hold `\x01`).
pub(crate) fn pair_member(a: &str, b: &str) -> String {
    let mut m = String::with_capacity(a.len() + 1 + b.len());
    m.push_str(a);
    m.push('\u{1}');
    m.push_str(b);
    m
}

/// An address as `RefIp`, `IpDomain` and `DomainIp` members spell it: IPv4 dotted, IPv6
/// as eight groups of four hex digits, so that an address's /24 or /48 is a text prefix
/// ([`subnet_of_member`]) and one subnet's members sort together.
pub fn ip_member(ip: IpAddr) -> String {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            // Written digit by digit: the formatting machinery costs more than the rest
            // of a link's contributions to the address views.
            let mut m = String::with_capacity(15);
            for (i, octet) in a.octets().into_iter().enumerate() {
                if i > 0 {
                    m.push('.');
                }
                if octet >= 100 {
                    m.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    m.push(char::from(b'0' + octet / 10 % 10));
                }
                m.push(char::from(b'0' + octet % 10));
            }
            m
        }
        IpAddr::V6(a) => a
            .segments()
            .iter()
            .map(|g| format!("{g:04x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// The `/24` (IPv4) or `/48` (IPv6) prefix of an address spelt by [`ip_member`]: up to
/// its third dot, or its first three groups and their colons.
pub fn subnet_of_member(member: &str) -> &str {
    if member.contains(':') {
        member.get(..15).unwrap_or(member)
    } else {
        let end = member.rfind('.').map_or(member.len(), |i| i + 1);
        &member[..end]
    }
}

/// Distinct root domains a page's live external links point to: its own
/// `out_domains_external` (hosts count theirs with `distinct` rows).
pub(crate) fn page_out_domains<'r>(records: impl IntoIterator<Item = &'r LinkRecord>) -> i64 {
    let mut domains: Vec<&str> = records
        .into_iter()
        .filter(|r| !r.is_internal() && !r.is_deleted())
        .map(|r| domain_of_url(&r.target_url))
        .collect();
    domains.sort_unstable();
    domains.dedup();
    domains.len() as i64
}

/// What a referring-domain row of a root-domain item feeds in its referring domain's own
/// counters when the row's live links appear or end (`live` 1 or -1): the two rows count
/// the same links, those from one root domain to another, so the referring domain gains
/// or loses an out-domain exactly then. `None` for rows of other items.
pub(crate) fn out_domain_counters(
    item_key: &[u8],
    domain: &str,
    live: i64,
    hasher: &ItemHasher,
) -> Option<(Vec<u8>, Counters)> {
    let root = level_of_item_key(item_key) == Some(Level::RootDomain as u8);
    (root && live != 0).then(|| {
        let delta = Counters {
            out_domains_external: live,
            ..Default::default()
        };
        (hasher.item_key(&Item::domain(domain.to_string())), delta)
    })
}

/// The counters a referring-domain row feeds when it appears or empties (`any`) and
/// when its live links appear or end (`live`): each -1, 0 or 1.
pub(crate) fn ref_domain_counters(domain: &str, any: i64, live: i64) -> Counters {
    let (edu, gov) = edu_gov(domain);
    Counters {
        ref_domains: any,
        ref_domains_live: live,
        ref_domains_edu: any * i64::from(edu),
        ref_domains_gov: any * i64::from(gov),
        ..Default::default()
    }
}

/// The counters one item's member rows feed (referring domains, live, edu and gov ones,
/// addresses, subnets, anchor texts), counted straight from the facts of its backlink
/// records: what folding their contributions into rows gives
/// ([`crate::small_item::item_views`]), without the rows or their members' spellings.
pub(crate) fn member_counters<'r>(
    records: impl IntoIterator<Item = BacklinkFacts<'r>>,
) -> Counters {
    // Referring domains, each with whether that link is live; addresses as members spell
    // them apart (canonical); texts as anchor rows key them (lower-cased).
    let mut domains: Vec<(&str, bool)> = Vec::new();
    let mut ips: Vec<IpAddr> = Vec::new();
    let mut anchors: Vec<Cow<'r, str>> = Vec::new();
    for rec in records {
        domains.push((domain_of_url(rec.source_url), !rec.state.deleted));
        ips.extend(rec.source_ip.map(|ip| ip.to_canonical()));
        anchors.push(lower_case(rec.anchor_text));
    }
    ips.sort_unstable();
    ips.dedup();
    anchors.sort_unstable();
    anchors.dedup();
    // One subnet's addresses sort together, as their members do.
    let mut subnets: Vec<(bool, [u16; 3])> = ips.iter().map(|&ip| subnet_of_ip(ip)).collect();
    subnets.dedup();
    let mut c = Counters {
        ref_ips: ips.len() as i64,
        ref_subnets: subnets.len() as i64,
        anchor_texts: anchors.len() as i64,
        ..Default::default()
    };
    // A domain's live entry sorts after its deleted ones: the last of each run says
    // whether it has a live link.
    domains.sort_unstable();
    for (i, &(domain, live)) in domains.iter().enumerate() {
        if domains.get(i + 1).is_none_or(|(next, _)| *next != domain) {
            accumulate(&mut c, &ref_domain_counters(domain, 1, i64::from(live)));
        }
    }
    c
}

/// `text` lower-cased, as anchor members are, borrowed when it already is.
fn lower_case(text: &str) -> Cow<'_, str> {
    if text
        .bytes()
        .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
    {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// The subnet of a canonical address, as [`subnet_of_member`] cuts its member: the first
/// three octets of an IPv4 address, the first three groups of an IPv6 one (told apart by
/// the flag, so that no IPv4 subnet equals an IPv6 one).
fn subnet_of_ip(ip: IpAddr) -> (bool, [u16; 3]) {
    match ip {
        IpAddr::V4(a) => {
            let [a, b, c, _] = a.octets();
            (false, [a.into(), b.into(), c.into()])
        }
        IpAddr::V6(a) => {
            let [a, b, c, ..] = a.segments();
            (true, [a, b, c])
        }
    }
}

/// The referring domain and anchor text of an `AnchorDomain` member (`domain \x01
/// anchor`; domains never hold `\x01`, anchors may).
pub(crate) fn split_anchor_member(member: &str) -> (&str, &str) {
    member.split_once('\u{1}').unwrap_or(("", member))
}

/// The smaller of two day numbers, where 0 means "none".
pub(crate) fn min_nonzero(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

pub(crate) fn domain_of_url(url: &str) -> &str {
    let host = host_of(url);
    root_domain(host).unwrap_or(host)
}

/// Educational and government registrable domains, by their public suffix.
fn edu_gov(domain: &str) -> (bool, bool) {
    let suffix = psl::suffix_str(domain).unwrap_or("");
    let first = suffix.split('.').next().unwrap_or("");
    let edu = matches!(first, "edu" | "ac") || suffix == "edu";
    let gov = matches!(first, "gov" | "govt" | "gouv" | "gob" | "mil") || suffix == "gov";
    (edu, gov)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn ipv4_members_are_dotted_decimal() {
        for n in (0..=u32::MAX)
            .step_by(65_521)
            .chain([0, 1, 10, 99, 100, 255, u32::MAX])
        {
            let a = Ipv4Addr::from(n);
            assert_eq!(ip_member(IpAddr::V4(a)), a.to_string());
        }
        // A v4-mapped v6 address is its v4 address.
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(ip_member(mapped), "192.0.2.7");
    }
}
