//! GetRefDomains: the domains linking to one or more items, with per-item link counts.

use super::{domain_of, internal, items, parse_item, psl_suffix, text_param, MAX_ITEMS};
use crate::context::Context;
use crate::envelope::{Reply, Value};
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Date, Row, Topics, UnknownNumber, UnknownText};
use linkstore::{RefDomainOrder, RefDomainQuery, MAX_ANALYSIS_DEPTH, MAX_BACKLINK_COUNT};

table_row! {
    /// A `Request` row: one per requested item.
    pub struct RequestRow {
        id: i64 = "ID",
        original_request: String = "OriginalRequest",
        used_root_domain: String = "UsedRootDomain",
        total_ref_domains: i64 = "TotalRefDomains",
        prefix_scan_mode: i64 = "PrefixScanMode",
    }
}

table_row! {
    /// The global part of a `Results` row; three columns per requested item follow.
    pub struct RefDomainRow {
        position: i64 = "Position",
        domain: String = "Domain",
        ref_domains: i64 = "RefDomains",
        alexa_rank: UnknownNumber = "AlexaRank",
        matches: i64 = "Matches",
        matched_links: i64 = "MatchedLinks",
        ext_backlinks: i64 = "ExtBackLinks",
        indexed_urls: i64 = "IndexedURLs",
        crawled_urls: i64 = "CrawledURLs",
        first_crawled: UnknownText = "FirstCrawled",
        last_successful_crawl: Date = "LastSuccessfulCrawl",
        ip: UnknownText = "IP",
        subnet: UnknownText = "SubNet",
        country_code: UnknownText = "CountryCode",
        tld: String = "TLD",
        citation_flow: i64 = "CitationFlow",
        trust_flow: i64 = "TrustFlow",
        title: UnknownText = "Title",
        out_domains_external: i64 = "OutDomainsExternal",
        out_links_external: i64 = "OutLinksExternal",
        out_links_internal: i64 = "OutLinksInternal",
        out_links_pages: i64 = "OutLinksPages",
        language: UnknownText = "Language",
        language_desc: UnknownText = "LanguageDesc",
        language_confidence: UnknownText = "LanguageConfidence",
        language_page_ratios: UnknownText = "LanguagePageRatios",
        language_total_pages: UnknownNumber = "LanguageTotalPages",
        link_saturation: UnknownText = "LinkSaturation",
        topics: Topics<10> = "TopicalTrustFlow",
    }
}

/// The sort key of an `OrderBy<n>` code of the reference; `None` for AlexaRank (1) and
/// first crawled (6), which the index does not keep (every domain ties).
fn sort_key(code: i64) -> Result<Option<RefDomainOrder>, ()> {
    Ok(Some(match code {
        0 => RefDomainOrder::Matches,
        1 | 6 => return Ok(None),
        2 => RefDomainOrder::RefDomains,
        3 => RefDomainOrder::ExtBackLinks,
        4 => RefDomainOrder::IndexedUrls,
        5 => RefDomainOrder::CrawledUrls,
        7 => RefDomainOrder::LastCrawl,
        11 => RefDomainOrder::MatchedLinks,
        12 => RefDomainOrder::CitationFlow,
        13 => RefDomainOrder::TrustFlow,
        _ => return Err(()),
    }))
}

/// `OrderBy1`/`OrderDir1`, `OrderBy2`/`OrderDir2` (direction 0 ascending, 1 descending);
/// by default matches, then matched links, both descending.
fn order(p: &Params) -> Result<Vec<(RefDomainOrder, bool)>, ApiError> {
    let mut order = Vec::new();
    let mut given = false;
    for n in 1..=2 {
        if let Some(code) = text_param(p, &format!("OrderBy{n}")) {
            given = true;
            let code: i64 = code.parse().map_err(|_| {
                ApiError::new("InvalidParameter", format!("OrderBy{n} must be a number"))
            })?;
            let key = sort_key(code).map_err(|()| {
                ApiError::new(
                    "InvalidParameter",
                    format!("OrderBy{n}={code} is not a sort key (0-7, 11-13)"),
                )
            })?;
            let desc = p.int(&format!("OrderDir{n}"), 1)? != 0;
            order.extend(key.map(|k| (k, desc)));
        }
    }
    if !given {
        order = vec![
            (RefDomainOrder::Matches, true),
            (RefDomainOrder::MatchedLinks, true),
        ];
    }
    Ok(order)
}

/// Cells a GetRefDomains reply holds at most (rows times columns): 50,000 rows of one
/// item.
pub const MAX_REPLY_CELLS: usize = 2_600_000;

pub(super) fn get_ref_domains(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let mut items = match items(p) {
        Ok(i) => i,
        // Some clients send `item` for the single-item form.
        Err(_) if p.get("item").is_some() => {
            let raw = p.required("item")?;
            vec![(raw.to_string(), parse_item(raw, "item")?)]
        }
        Err(e) => return Err(e),
    };
    items.truncate(MAX_ITEMS);
    // A row has the global columns and three per item: at 100 items, 50,000 rows would
    // be 17M cells (about 1 GB of JSON), so the rows fit a cell budget instead.
    let width = RefDomainRow::columns().len() + 3 * items.len();
    let count = (p.int("Count", 100)?.clamp(0, MAX_BACKLINK_COUNT as i64) as usize)
        .min(MAX_REPLY_CELLS / width);
    let from = p.int("From", 0)?.max(0) as usize;
    let depth = p
        .int("AnalysisDepth", 1000)?
        .clamp(1, MAX_ANALYSIS_DEPTH as i64) as usize;
    let order = order(p)?;
    let mut request = RequestRow::table("Request");
    for (i, (raw, item)) in items.iter().enumerate() {
        let c = view.counters(item).map_err(internal)?.unwrap_or_default();
        request.add(RequestRow {
            id: i as i64,
            original_request: raw.clone(),
            used_root_domain: domain_of(&format!("http://{}/", linkstore::host_of(&item.name))),
            total_ref_domains: c.ref_domains,
            prefix_scan_mode: 0,
        });
    }
    let page = view
        .ref_domain_matches(&RefDomainQuery {
            items: items.iter().map(|(_, i)| i.clone()).collect(),
            depth,
            from,
            count,
            order,
            topic: text_param(p, "FilterTopic").map(str::to_string),
        })
        .map_err(internal)?;
    let mut cols = RefDomainRow::columns();
    let global_width = cols.len();
    for (raw, _) in &items {
        cols.push(format!("BackLinks_{raw}"));
        cols.push(format!("FirstLinkDate_{raw}"));
        cols.push(format!("LastLinkDate_{raw}"));
    }
    let mut t = crate::envelope::Table::new("Results", cols);
    for (pos, r) in page.rows.iter().enumerate() {
        let c = &r.counters;
        let mut cells = Vec::with_capacity(t.columns.len());
        RefDomainRow {
            position: (from + pos) as i64 + 1,
            domain: r.domain.clone(),
            ref_domains: c.ref_domains,
            matches: r.value(RefDomainOrder::Matches),
            matched_links: r.value(RefDomainOrder::MatchedLinks),
            ext_backlinks: c.ext_backlinks,
            indexed_urls: c.indexed_urls,
            crawled_urls: c.crawled_urls,
            last_successful_crawl: Date::of(c.last_crawl_day),
            tld: psl_suffix(&r.domain),
            citation_flow: i64::from(r.metrics.citation_flow),
            trust_flow: i64::from(r.metrics.trust_flow),
            out_domains_external: c.out_domains_external,
            out_links_external: c.out_links_external,
            out_links_internal: c.out_links_internal,
            out_links_pages: c.crawled_urls,
            topics: Topics(r.metrics.topics.clone()),
            ..Default::default()
        }
        .cells(&mut cells);
        for a in &r.per_item {
            cells.push(Value::Int(a.links));
            crate::row::Cells::cells(Date(a.first_seen), &mut cells);
            crate::row::Cells::cells(Date(a.last_seen), &mut cells);
        }
        t.push(cells);
    }
    t.param("AnalysisDepth", page.depth as i64);
    t.param("ColumnsForGlobalInfo", global_width as i64);
    t.param("ColumnsPerRequestedDomain", 3);
    t.param("MaxRefDomainTopics", 10);
    t.param("RefDomainTopicsCount", 10);
    t.param("TotalConsideredDomains", page.considered as i64);
    t.param("TotalMatchedDomains", page.matched as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetRefDomains");
    reply.tables.push(request);
    reply.tables.push(t);
    Ok(reply)
}
