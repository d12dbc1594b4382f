//! GetTopPages: a site's strongest pages, as the serving flow build ranked them.

use super::{crawl_result, internal, parse_item};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Date, Row, Topics, UnknownNumber};
use linkstore::{Item, Level};

/// Most rows one request returns (Majestic's limit).
pub const MAX_TOP_PAGES: i64 = 10_000;
/// `TotalMatches` is counted exactly up to this many pages, else `-1`: the count reads
/// the site's list to its end, so it is bounded like any scan.
pub const TOP_PAGES_COUNT_LIMIT: usize = 1_000_000;

table_row! {
    /// A `Matches` row.
    pub struct TopPageRow {
        url: String = "URL",
        trust_flow: i64 = "TrustFlow",
        citation_flow: i64 = "CitationFlow",
        ref_domains: i64 = "RefDomains",
        ref_ips: i64 = "RefIPs",
        ext_backlinks: i64 = "ExtBackLinks",
        indexed_urls: i64 = "IndexedURLs",
        ac_rank: UnknownNumber = "ACRank",
        topics: Topics<3> = "TopicalTrustFlow",
        last_crawl_result: String = "LastCrawlResult",
        date: Date = "Date",
    }
}

/// The site a `Query` names: a root domain or subdomain; a URL stands for its host.
fn site(raw: &str) -> Result<Item, ApiError> {
    let item = parse_item(raw, "Query")?;
    Ok(match item.level {
        Level::Url => Item {
            level: Level::SubDomain,
            name: linkstore::host_of(&item.name).to_string(),
        },
        _ => item,
    })
}

pub(super) fn get_top_pages(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("Query")?;
    if p.int("UsePrefixScan", 0)? != 0 {
        return Err(ApiError::new(
            "InvalidParameter",
            "UsePrefixScan is not supported: Query takes a domain or subdomain",
        ));
    }
    let site = site(raw)?;
    let count = p.int("Count", 10)?;
    let from = p.int("StartDoc", 0)?;
    if !(0..=MAX_TOP_PAGES).contains(&count) || from < 0 {
        return Err(ApiError::new(
            "InvalidParameter",
            format!("Count must be 0 to {MAX_TOP_PAGES} and StartDoc not negative"),
        ));
    }
    let (pages, total) = view
        .top_pages(&site, from as usize, count as usize, TOP_PAGES_COUNT_LIMIT)
        .map_err(internal)?;
    let items: Vec<Item> = pages.iter().map(|pg| Item::url(pg.url.clone())).collect();
    let counters = view.counters_many(&items).map_err(internal)?;
    let metrics = view.metrics_many(&items).map_err(internal)?;
    let mut t = TopPageRow::table("Matches");
    for ((page, c), m) in pages.iter().zip(counters).zip(metrics) {
        let c = c.unwrap_or_default();
        let crawl = view.page(&page.url).map_err(internal)?;
        t.add(TopPageRow {
            url: page.url.clone(),
            trust_flow: i64::from(page.flow.trust_flow),
            citation_flow: i64::from(page.flow.citation_flow),
            ref_domains: c.ref_domains,
            ref_ips: c.ref_ips,
            ext_backlinks: c.ext_backlinks,
            indexed_urls: c.indexed_urls,
            topics: Topics(m.map(|m| m.topics).unwrap_or_default()),
            last_crawl_result: crawl.map(|pg| crawl_result(&pg)).unwrap_or_default(),
            date: Date(crawl.map_or(0, |pg| linkstore::day_of(pg.last_fetch))),
            ..Default::default()
        });
    }
    t.param("Count", t.len() as i64);
    t.param("Query", raw);
    t.param("ResolvedItem", site.name.as_str());
    t.param("ItemType", site.level.name());
    t.param("StartDoc", from);
    t.param("TotalMatches", total.map_or(-1, |n| n as i64));
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetTopPages");
    reply.tables.push(t);
    Ok(reply)
}
