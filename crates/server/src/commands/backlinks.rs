//! GetBackLinkData: an item's backlinks by SourceTrustFlow, with Majestic's caps, filters
//! and sort keys; and the `BackLinks` row every command that lists links shares.

use super::domain_facts::DomainFacts;
use super::filters::Filters;
use super::{domain_of, internal, parse_item, read_unique, text_param};
use crate::context::Context;
use crate::envelope::{Reply, Table};
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Date, Flag, Row, Topics, UnknownNumber, UnknownText};
use linkstore::{
    BacklinkQuery, Counters, Item, LinkKind, LinkRecord, ReadView, MAX_BACKLINK_COUNT,
    SOURCE_TOPICS, TARGET_TOPICS,
};
use std::collections::BTreeMap;

table_row! {
    /// A `BackLinks` row, in Majestic's current JSON column order.
    pub struct BackLinkRow {
        source_url: String = "SourceURL",
        ac_rank: UnknownNumber = "ACRank",
        anchor_text: String = "AnchorText",
        date: Date = "Date",
        source_title: UnknownText = "SourceTitle",
        source_out_domains_external: i64 = "SourceOutDomainsExternal",
        source_out_links_external: i64 = "SourceOutLinksExternal",
        source_out_links_internal: i64 = "SourceOutLinksInternal",
        source_language: UnknownText = "SourceLanguage",
        source_language_desc: UnknownText = "SourceLanguageDesc",
        source_language_confidence: UnknownText = "SourceLanguageConfidence",
        flag_redirect: Flag = "FlagRedirect",
        flag_frame: Flag = "FlagFrame",
        flag_no_follow: Flag = "FlagNoFollow",
        flag_images: Flag = "FlagImages",
        flag_deleted: Flag = "FlagDeleted",
        flag_alt_text: Flag = "FlagAltText",
        flag_mention: Flag = "FlagMention",
        target_url: String = "TargetURL",
        indirect_target_url: UnknownText = "IndirectTargetURL",
        indirect_target_type: UnknownText = "IndirectTargetType",
        target_title: UnknownText = "TargetTitle",
        target_language: UnknownText = "TargetLanguage",
        target_language_desc: UnknownText = "TargetLanguageDesc",
        target_language_confidence: UnknownText = "TargetLanguageConfidence",
        links_available_for_root_domain: UnknownText = "LinksAvailableForRootDomain",
        domain_id: i64 = "DomainID",
        first_indexed_date: Date = "FirstIndexedDate",
        last_seen_date: Date = "LastSeenDate",
        date_lost: Date = "DateLost",
        reason_lost: &'static str = "ReasonLost",
        link_type: &'static str = "LinkType",
        link_sub_type: &'static str = "LinkSubType",
        target_citation_flow: i64 = "TargetCitationFlow",
        target_trust_flow: i64 = "TargetTrustFlow",
        target_topics: Topics<TARGET_TOPICS> = "TargetTopicalTrustFlow",
        source_citation_flow: i64 = "SourceCitationFlow",
        source_trust_flow: i64 = "SourceTrustFlow",
        source_topics: Topics<SOURCE_TOPICS> = "SourceTopicalTrustFlow",
    }
}

impl BackLinkRow {
    /// The row of a link; `domain_id` joins the DomainsInfo table (-1 without it).
    /// Takes the record: its strings move into the row (a 50,000-row reply copied them).
    pub fn of(r: LinkRecord, domain_id: i64) -> BackLinkRow {
        let (nofollow, deleted) = (r.is_nofollow(), r.is_deleted());
        BackLinkRow {
            source_url: r.source_url,
            anchor_text: r.anchor_text,
            date: Date(r.last_seen),
            source_out_domains_external: i64::from(r.source_out.external_domains),
            source_out_links_external: i64::from(r.source_out.external),
            source_out_links_internal: i64::from(r.source_out.internal),
            flag_redirect: Flag(r.kind == LinkKind::Redirect),
            flag_frame: Flag(r.kind == LinkKind::Frame),
            flag_no_follow: Flag(nofollow),
            flag_images: Flag(r.kind == LinkKind::Image),
            flag_deleted: Flag(deleted),
            target_url: r.target_url,
            domain_id,
            first_indexed_date: Date(r.first_seen),
            last_seen_date: Date(r.last_seen),
            date_lost: Date(r.date_lost),
            reason_lost: r.lost_reason.as_str(),
            link_type: r.kind.link_type(),
            link_sub_type: r.kind.link_subtype(),
            target_citation_flow: i64::from(r.target_flow.citation_flow),
            target_trust_flow: i64::from(r.target_flow.trust_flow),
            target_topics: Topics(r.target_topics),
            source_citation_flow: i64::from(r.source_flow.citation_flow),
            source_trust_flow: i64::from(r.source_flow.trust_flow),
            source_topics: Topics(r.source_topics),
            ..Default::default()
        }
    }
}

table_row! {
    /// The `Statistics` row of a filtered GetBackLinkData: matches in the scanned window.
    pub struct StatisticsRow {
        matches: i64 = "Matches",
        scanned: i64 = "Scanned",
    }
}

/// The `BackLinks` table parameters of an item's link list.
pub fn backlink_params(t: &mut Table, raw: &str, item: &Item, from: i64, total: i64) {
    t.param("AvailableLines", total);
    t.param("BackLinkItem", raw);
    t.param("BackLinkType", item.level.name());
    t.param("Count", t.len() as i64);
    t.param("From", from);
    t.param("Item", raw);
    t.param("ItemType", item.level.name());
    t.param("MaxRefDomainTopics", 10);
    t.param("MaxSourceTopics", 10);
    t.param("MaxTargetTopics", 10);
    t.param("OrigItem", raw);
    t.param("RefDomainTopicsCount", 0);
    t.param("SourceTopicsCount", SOURCE_TOPICS as i64);
    t.param("TargetTopicsCount", TARGET_TOPICS as i64);
    t.param("TotalBackLinks", total);
    t.param("TotalLines", total);
    t.param("TotalMatches", total);
}

/// Most backlink rows one GetBackLinkData reads, matching or not (caps and filters that
/// match little would otherwise read every link of a giant item).
pub const BACKLINK_SCAN_BUDGET: usize = 1_000_000;

/// Most rows (`From + Count`) of a GetBackLinkData page that runs on the connection's
/// own task ([`is_bounded_page`]).
pub const INLINE_PAGE_ROWS: i64 = 1_000;

/// True when a GetBackLinkData request reads at most `From + Count` backlink rows, no
/// more than [`INLINE_PAGE_ROWS`], and one counters row: none of the parameters that
/// make a read skip rows (`Mode=1`, the per-domain and per-source caps, `RefDomain`,
/// `FilterTopic`, `Filters`, another sort order) is given. Bad values answer false, so
/// the command reports them from its usual place.
pub(super) fn is_bounded_page(p: &Params) -> bool {
    let (Ok(count), Ok(from)) = (p.int("Count", 100), p.int("From", 0)) else {
        return false;
    };
    let skips_rows = ["RefDomain", "FilterTopic", "Filters", "SortBy1", "SortBy2"]
        .iter()
        .any(|name| p.get(name).is_some_and(|v| !v.trim().is_empty()));
    count >= 0
        && from >= 0
        && count.saturating_add(from) <= INLINE_PAGE_ROWS
        && p.int("Mode", 0).is_ok_and(|m| m != 1)
        && cap(p, "MaxSourceURLsPerRefDomain").is_ok_and(|c| c.is_none())
        && cap(p, "MaxSameSourceURLs").is_ok_and(|c| c.is_none())
        && !skips_rows
}

fn cap(p: &Params, name: &str) -> Result<Option<usize>, ApiError> {
    let v = p.int(name, -1)?;
    Ok((v >= 0).then_some(v as usize))
}

/// A GetBackLinkData sort value: numbers and texts compare within their kind.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortValue {
    Num(i64),
    Text(String),
}

const SORT_KEYS: &[&str] = &[
    "anchortext",
    "datedeleted",
    "domaincitationflow",
    "domaintrustflow",
    "externaloutlinks",
    "firstseen",
    "internaloutlinks",
    "lastseen",
    "outdomainsexternal",
    "sourcecitationflow",
    "sourcetrustflow",
    "sourceurl",
    "targeturllength",
    "totaloutlinks",
];

/// `SortBy1`/`SortDir1` and `SortBy2`/`SortDir2` (`asc` or `desc`, default `desc`).
fn sort_keys(p: &Params) -> Result<Vec<(String, bool)>, ApiError> {
    let mut keys = Vec::new();
    for n in 1..=2 {
        let Some(by) = text_param(p, &format!("SortBy{n}")) else {
            continue;
        };
        let by = by.to_ascii_lowercase();
        if !SORT_KEYS.contains(&by.as_str()) {
            return Err(ApiError::new(
                "InvalidParameter",
                format!("SortBy{n}={by:?} is not a sort key"),
            ));
        }
        let desc = match p
            .get(&format!("SortDir{n}"))
            .map(|d| d.trim().to_ascii_lowercase())
        {
            None => true,
            Some(d) if d == "desc" || d.is_empty() => true,
            Some(d) if d == "asc" => false,
            Some(d) => {
                return Err(ApiError::new(
                    "InvalidParameter",
                    format!("SortDir{n} must be asc or desc, not {d:?}"),
                ))
            }
        };
        keys.push((by, desc));
    }
    Ok(keys)
}

/// How many backlinks match the filters that stored counts can answer (`Mode`,
/// `RefDomain`, `MaxSourceURLsPerRefDomain`), or `None` when only a full scan could tell.
fn matches_from_counts(
    view: &ReadView,
    item: &Item,
    q: &BacklinkQuery,
    c: &Counters,
) -> Result<Option<i64>, ApiError> {
    if q.max_per_source_url.is_some() {
        return Ok(None);
    }
    let live = |links: i64, deleted: i64| {
        if q.exclude_deleted {
            links - deleted
        } else {
            links
        }
    };
    let capped = |n: i64| q.max_per_ref_domain.map_or(n, |cap| n.min(cap as i64));
    if let Some(domain) = &q.ref_domain {
        let d = view
            .ref_domain(item, &domain.to_ascii_lowercase())
            .map_err(internal)?
            .unwrap_or_default();
        return Ok(Some(capped(live(d.links, d.deleted_links))));
    }
    match q.max_per_ref_domain {
        None => Ok(Some(live(c.ext_backlinks, c.deleted_links))),
        // One per referring domain: as many as there are domains with a (live) link.
        Some(1) if q.exclude_deleted => Ok(Some(c.ref_domains_live)),
        Some(1) => Ok(Some(c.ref_domains)),
        Some(cap) => {
            // Summed over the referring domains, read in one bounded ranked scan.
            const MAX_DOMAINS: usize = 100_000;
            if c.ref_domains as usize > MAX_DOMAINS {
                return Ok(None);
            }
            let domains = view.ref_domains(item, 0, MAX_DOMAINS).map_err(internal)?;
            Ok(Some(
                domains
                    .iter()
                    .map(|d| live(d.links, d.deleted_links).min(cap as i64))
                    .sum(),
            ))
        }
    }
}

pub(super) fn get_back_link_data(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 100)?;
    if count > MAX_BACKLINK_COUNT as i64 {
        return Err(ApiError::new(
            "CountTooLarge",
            format!("Count is at most {MAX_BACKLINK_COUNT}; use DownloadBackLinks for more"),
        ));
    }
    let from = p.int("From", 0)?;
    if count < 0 || from < 0 {
        return Err(ApiError::new(
            "InvalidParameter",
            "Count and From must not be negative",
        ));
    }
    let filter_topic = text_param(p, "FilterTopic").map(str::to_string);
    let filters = Filters::parse(p.get("Filters").unwrap_or(""))?;
    let sort_keys = sort_keys(p)?;
    // Filtering by topic or expression, or sorting by another key, works on a scanned
    // window (`FilteringDepth` rows, as Majestic does), then pages through it.
    let row_filter = filter_topic.is_some() || !filters.is_empty();
    let post_process = row_filter || !sort_keys.is_empty();
    let depth = if post_process {
        p.int(
            "FilteringDepth",
            if sort_keys.is_empty() { 50_000 } else { 5_000 },
        )?
        .clamp(1, MAX_BACKLINK_COUNT as i64) as usize
    } else {
        count as usize
    };
    let q = BacklinkQuery {
        from: if post_process { 0 } else { from as usize },
        count: depth,
        exclude_deleted: p.int("Mode", 0)? == 1,
        max_per_ref_domain: cap(p, "MaxSourceURLsPerRefDomain")?,
        max_per_source_url: cap(p, "MaxSameSourceURLs")?,
        ref_domain: text_param(p, "RefDomain").map(str::to_string),
        max_scan: Some(BACKLINK_SCAN_BUDGET),
    };
    let page = view.backlink_page(&item, &q).map_err(internal)?;
    let mut scanned = page.rows;
    // A scan that stopped short of what it asked for, within its budget, saw every
    // matching row.
    let exhausted = scanned.len() < depth && !page.budget_spent;
    let mut order: Vec<usize> = (0..scanned.len())
        .filter(|&i| {
            let r = &scanned[i];
            filters.accepts(r)
                && filter_topic
                    .as_ref()
                    .is_none_or(|topic| r.source_topics.iter().any(|(t, _)| t == topic))
        })
        .collect();
    let window_matches = order.len();
    if !sort_keys.is_empty() {
        sort_rows(&view, &scanned, &mut order, &sort_keys)?;
    }
    if post_process {
        order = order
            .into_iter()
            .skip(from as usize)
            .take(count as usize)
            .collect();
    }
    let c = view.counters(&item).map_err(internal)?.unwrap_or_default();
    let total = if exhausted {
        if post_process {
            window_matches as i64
        } else {
            from + scanned.len() as i64
        }
    } else if row_filter {
        // Only the scanned window was tested (its count is in `Statistics`).
        -1
    } else {
        matches_from_counts(&view, &item, &q, &c)?.unwrap_or(-1)
    };
    let show_domains = p.int("ShowDomainInfo", 0)? == 1;
    let mut domain_ids: BTreeMap<String, i64> = Default::default();
    let mut t = BackLinkRow::table("BackLinks");
    let scanned_rows = scanned.len();
    for &i in &order {
        // Each index is in `order` once: the row is taken, not copied.
        let r = std::mem::take(&mut scanned[i]);
        let domain_id = if show_domains {
            let next = domain_ids.len() as i64;
            *domain_ids.entry(domain_of(&r.source_url)).or_insert(next)
        } else {
            -1
        };
        t.add(BackLinkRow::of(r, domain_id));
    }
    backlink_params(&mut t, raw, &item, from, total);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(t);
    if show_domains {
        reply.tables.push(domains_info(&view, &domain_ids)?);
    }
    if row_filter {
        let mut stats = StatisticsRow::table("Statistics");
        stats.add(StatisticsRow {
            matches: window_matches as i64,
            scanned: scanned_rows as i64,
        });
        reply.tables.push(stats);
    }
    Ok(reply)
}

/// Orders `order` (indexes into `scanned`) by the request's sort keys; stable, so ties
/// keep the SourceTrustFlow order.
fn sort_rows(
    view: &ReadView,
    scanned: &[LinkRecord],
    order: &mut [usize],
    sort_keys: &[(String, bool)],
) -> Result<(), ApiError> {
    let by_domain = sort_keys.iter().any(|(k, _)| k.starts_with("domain"));
    let domains: Vec<Item> = if by_domain {
        scanned
            .iter()
            .map(|r| Item::domain(domain_of(&r.source_url)))
            .collect()
    } else {
        Vec::new()
    };
    let domain_metrics = read_unique(&domains, |i| view.metrics_many(i))?;
    let key = |i: usize, k: &str| -> SortValue {
        let r = &scanned[i];
        let o = r.source_out;
        let dm = || domain_metrics[i].clone().unwrap_or_default();
        match k {
            "anchortext" => SortValue::Text(r.anchor_text.to_lowercase()),
            "sourceurl" => SortValue::Text(r.source_url.clone()),
            "datedeleted" => SortValue::Num(i64::from(r.date_lost)),
            "domaintrustflow" => SortValue::Num(i64::from(dm().trust_flow)),
            "domaincitationflow" => SortValue::Num(i64::from(dm().citation_flow)),
            "externaloutlinks" => SortValue::Num(i64::from(o.external)),
            "internaloutlinks" => SortValue::Num(i64::from(o.internal)),
            "totaloutlinks" => SortValue::Num(i64::from(o.external + o.internal)),
            "outdomainsexternal" => SortValue::Num(i64::from(o.external_domains)),
            "firstseen" => SortValue::Num(i64::from(r.first_seen)),
            "lastseen" => SortValue::Num(i64::from(r.last_seen)),
            "sourcecitationflow" => SortValue::Num(i64::from(r.source_flow.citation_flow)),
            "targeturllength" => SortValue::Num(r.target_url.len() as i64),
            _ => SortValue::Num(i64::from(r.source_flow.trust_flow)),
        }
    };
    order.sort_by(|&a, &b| {
        for (k, desc) in sort_keys {
            let o = key(a, k).cmp(&key(b, k));
            let o = if *desc { o.reverse() } else { o };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    Ok(())
}

table_row! {
    /// A `DomainsInfo` row (GetBackLinkData with `ShowDomainInfo=1`).
    pub struct DomainInfoRow {
        domain_id: i64 = "DomainID",
        domain: String = "Domain",
        facts: DomainFacts = "",
    }
}

/// The `DomainsInfo` table of the referring domains `ids` numbers.
pub(super) fn domains_info(
    view: &ReadView,
    ids: &BTreeMap<String, i64>,
) -> Result<Table, ApiError> {
    let mut t = DomainInfoRow::table("DomainsInfo");
    let mut by_id: Vec<(i64, &String)> = ids.iter().map(|(d, i)| (*i, d)).collect();
    by_id.sort();
    let items: Vec<Item> = by_id
        .iter()
        .map(|(_, d)| Item::domain((*d).clone()))
        .collect();
    let counters = view.counters_many(&items).map_err(internal)?;
    let metrics = view.metrics_many(&items).map_err(internal)?;
    for (((id, domain), c), m) in by_id.iter().zip(&counters).zip(&metrics) {
        let c = c.unwrap_or_default();
        let m = m.clone().unwrap_or_default();
        t.add(DomainInfoRow {
            domain_id: *id,
            domain: (*domain).clone(),
            facts: DomainFacts::of(domain, c, &m),
        });
    }
    Ok(t)
}

#[cfg(test)]
mod inline_tests {
    use super::*;

    fn bounded(query: &str) -> bool {
        is_bounded_page(&Params::parse(query.as_bytes(), b"").unwrap())
    }

    #[test]
    fn only_pages_bounded_by_count_and_from_run_inline() {
        assert!(bounded("cmd=GetBackLinkData&item=a.com"));
        assert!(bounded(
            "cmd=GetBackLinkData&item=a.com&Count=100&From=900&Mode=0"
        ));
        assert!(bounded(
            "item=a.com&MaxSameSourceURLs=-1&ShowDomainInfo=1&RefDomain="
        ));
        assert!(!bounded("item=a.com&Count=100&From=901"));
        assert!(!bounded("item=a.com&Count=50000"));
        assert!(!bounded("item=a.com&Count=-1"));
        assert!(!bounded("item=a.com&From=9223372036854775807"));
        assert!(!bounded("item=a.com&Count=ten"));
        assert!(!bounded("item=a.com&Mode=1"));
        assert!(!bounded("item=a.com&MaxSourceURLsPerRefDomain=1"));
        assert!(!bounded("item=a.com&MaxSameSourceURLs=0"));
        assert!(!bounded("item=a.com&RefDomain=b.com"));
        assert!(!bounded("item=a.com&FilterTopic=News"));
        assert!(!bounded("item=a.com&Filters=NoFollow"));
        assert!(!bounded("item=a.com&SortBy1=AnchorText"));
    }
}
