//! GetIndexItemInfo: one row of headline statistics per item, up to 100 items.

use super::{crawl_result, internal, item_count, parse_item, MAX_ITEMS};
use crate::context::Context;
use crate::envelope::{Columns, Reply, Value};
use crate::error::ApiError;
use crate::metering;
use crate::params::Params;
use crate::row::{
    push_topic_values, table_row, topic_columns, Date, NumText, Row, TrueFalse, UnknownNumber,
    UnknownText,
};
use linkstore::{Counters, Item, ItemMetrics, Level, PageState};
use std::sync::{Arc, OnceLock};

table_row! {
    /// A `Results` row, in Majestic's current column order (topic pairs follow it).
    pub struct InfoRow {
        item_num: i64 = "ItemNum",
        item: String = "Item",
        result_code: &'static str = "ResultCode",
        status: &'static str = "Status",
        ext_backlinks: i64 = "ExtBackLinks",
        ref_domains: i64 = "RefDomains",
        analysis_cost: i64 = "AnalysisResUnitsCost",
        ac_rank: UnknownNumber = "ACRank",
        item_type: i64 = "ItemType",
        indexed_urls: i64 = "IndexedURLs",
        top_backlinks_cost: i64 = "GetTopBackLinksAnalysisResUnitsCost",
        download_cost: i64 = "DownloadBacklinksAnalysisResUnitsCost",
        download_ref_domain_cost: i64 = "DownloadRefDomainBacklinksAnalysisResUnitsCost",
        ref_ips: i64 = "RefIPs",
        ref_subnets: i64 = "RefSubNets",
        ref_domains_edu: i64 = "RefDomainsEDU",
        ext_backlinks_edu: i64 = "ExtBackLinksEDU",
        ref_domains_gov: i64 = "RefDomainsGOV",
        ext_backlinks_gov: i64 = "ExtBackLinksGOV",
        ref_domains_edu_exact: UnknownNumber = "RefDomainsEDU_Exact",
        ext_backlinks_edu_exact: UnknownNumber = "ExtBackLinksEDU_Exact",
        ref_domains_gov_exact: UnknownNumber = "RefDomainsGOV_Exact",
        ext_backlinks_gov_exact: UnknownNumber = "ExtBackLinksGOV_Exact",
        crawled_flag: TrueFalse = "CrawledFlag",
        last_crawl_date: Date = "LastCrawlDate",
        last_crawl_result: String = "LastCrawlResult",
        redirect_flag: TrueFalse = "RedirectFlag",
        final_redirect_result: UnknownText = "FinalRedirectResult",
        out_domains_external: NumText = "OutDomainsExternal",
        out_links_external: NumText = "OutLinksExternal",
        out_links_internal: NumText = "OutLinksInternal",
        out_links_pages: NumText = "OutLinksPages",
        last_seen: Date = "LastSeen",
        affected_by_anti_spam: i64 = "AffectedByAntiSpamAlgo",
        title: UnknownText = "Title",
        redirect_to: UnknownText = "RedirectTo",
        language: UnknownText = "Language",
        language_desc: UnknownText = "LanguageDesc",
        language_confidence: UnknownText = "LanguageConfidence",
        language_page_ratios: UnknownText = "LanguagePageRatios",
        language_total_pages: UnknownNumber = "LanguageTotalPages",
        ref_language: UnknownText = "RefLanguage",
        ref_language_desc: UnknownText = "RefLanguageDesc",
        ref_language_confidence: UnknownText = "RefLanguageConfidence",
        ref_language_page_ratios: UnknownText = "RefLanguagePageRatios",
        ref_language_total_pages: UnknownNumber = "RefLanguageTotalPages",
        crawled_urls: i64 = "CrawledURLs",
        root_domain_ip: UnknownText = "RootDomainIPAddress",
        total_non_unique_links: NumText = "TotalNonUniqueLinks",
        homepage_links: UnknownText = "NonUniqueLinkTypeHomepages",
        indirect_links: UnknownText = "NonUniqueLinkTypeIndirect",
        deleted_links: NumText = "NonUniqueLinkTypeDeleted",
        nofollow_links: NumText = "NonUniqueLinkTypeNoFollow",
        https_links: NumText = "NonUniqueLinkTypeProtocolHTTPS",
        frame_links: NumText = "NonUniqueLinkTypeFrame",
        image_links: NumText = "NonUniqueLinkTypeImageLink",
        redirect_links: NumText = "NonUniqueLinkTypeRedirect",
        text_links: NumText = "NonUniqueLinkTypeTextLink",
        ref_domains_live: NumText = "RefDomainTypeLive",
        ref_domains_follow: UnknownText = "RefDomainTypeFollow",
        ref_domains_homepage: UnknownText = "RefDomainTypeHomepageLink",
        ref_domains_direct: UnknownText = "RefDomainTypeDirect",
        ref_domains_https: UnknownText = "RefDomainTypeProtocolHTTPS",
        canonical_url: UnknownText = "CanonicalURL",
        citation_flow: i64 = "CitationFlow",
        trust_flow: i64 = "TrustFlow",
        trust_metric: i64 = "TrustMetric",
    }
}

impl InfoRow {
    /// The row of an item found (or not) in the index.
    fn of(
        n: usize,
        raw: &str,
        item: &Item,
        c: Counters,
        m: &ItemMetrics,
        page: Option<PageState>,
    ) -> InfoRow {
        InfoRow {
            item_num: n as i64,
            item: raw.to_string(),
            result_code: "OK",
            status: if c.ext_backlinks > 0 || c.indexed_urls > 0 {
                "Found"
            } else {
                "NotFound"
            },
            ext_backlinks: c.ext_backlinks,
            ref_domains: c.ref_domains,
            analysis_cost: c.ext_backlinks,
            item_type: i64::from(item.level.item_type()),
            indexed_urls: c.indexed_urls,
            top_backlinks_cost: metering::BACKLINK_ANALYSIS as i64,
            download_cost: metering::download_analysis(c.ext_backlinks, c.indexed_urls),
            download_ref_domain_cost: metering::download_ref_domain_analysis(c.ref_domains),
            ref_ips: c.ref_ips,
            ref_subnets: c.ref_subnets,
            ref_domains_edu: c.ref_domains_edu,
            ext_backlinks_edu: c.edu_links,
            ref_domains_gov: c.ref_domains_gov,
            ext_backlinks_gov: c.gov_links,
            crawled_flag: TrueFalse(page.is_some()),
            last_crawl_date: Date(page.map_or(0, |pg| linkstore::day_of(pg.last_fetch))),
            last_crawl_result: page.map(|pg| crawl_result(&pg)).unwrap_or_default(),
            redirect_flag: TrueFalse(page.is_some_and(|pg| (300..400).contains(&pg.last_status))),
            out_domains_external: NumText(c.out_domains_external),
            out_links_external: NumText(c.out_links_external),
            out_links_internal: NumText(c.out_links_internal),
            out_links_pages: NumText(c.crawled_urls),
            last_seen: Date::of(c.last_link_day),
            crawled_urls: c.crawled_urls,
            total_non_unique_links: NumText(c.ext_backlinks),
            deleted_links: NumText(c.deleted_links),
            nofollow_links: NumText(c.nofollow_links),
            https_links: NumText(c.https_links),
            frame_links: NumText(c.frame_links),
            image_links: NumText(c.image_links),
            redirect_links: NumText(c.redirect_links),
            text_links: NumText(c.text_links),
            ref_domains_live: NumText(c.ref_domains_live),
            citation_flow: i64::from(m.citation_flow),
            trust_flow: i64::from(m.trust_flow),
            trust_metric: i64::from(m.trust_flow),
            ..Default::default()
        }
    }

    /// The row of an item the request got wrong: its own code, nothing else known.
    fn refused(n: usize, raw: &str, e: &ApiError) -> InfoRow {
        InfoRow {
            item_num: n as i64,
            item: raw.to_string(),
            result_code: e.code,
            status: "NotFound",
            ..Default::default()
        }
    }
}

/// Most topic pairs a request may ask for (`DesiredTopics`).
const MAX_DESIRED_TOPICS: usize = 30;

/// The `Results` columns for `topics` topic pairs, with `TrustCategories` or not: every
/// combination made once per process.
fn columns(topics: usize, all_topics: bool) -> Arc<Columns> {
    static ALL: OnceLock<Vec<Arc<Columns>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        (0..=MAX_DESIRED_TOPICS)
            .flat_map(|n| [false, true].map(|all| (n, all)))
            .map(|(n, all)| {
                let mut cols = InfoRow::columns();
                cols.extend(topic_columns("TopicalTrustFlow", n));
                if all {
                    cols.push("TrustCategories".into());
                }
                Columns::new(cols)
            })
            .collect()
    });
    Arc::clone(&all[topics.min(MAX_DESIRED_TOPICS) * 2 + usize::from(all_topics)])
}

/// `TrustCategories` (with `AddAllTopics=1`): every topic as `Topic=<share>%=<value>`,
/// strongest first, the share being the topic's part of the item's summed topical values.
fn trust_categories(topics: &[(String, u8)]) -> String {
    let sum: f64 = topics.iter().map(|(_, v)| f64::from(*v)).sum();
    topics
        .iter()
        .map(|(t, v)| format!("{t}={:.2}%={v}", 100.0 * f64::from(*v) / sum.max(1.0)))
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn get_index_item_info(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let count = item_count(p, MAX_ITEMS)?;
    let topics = p
        .int("DesiredTopics", 3)?
        .clamp(0, MAX_DESIRED_TOPICS as i64) as usize;
    let all_topics = p.int("AddAllTopics", 0)? == 1;
    // Each item stands alone: a missing or malformed one gets its own ResultCode.
    let requested: Vec<(String, Result<Item, ApiError>)> = (0..count)
        .map(|i| {
            let name = format!("item{i}");
            match p.required(&name) {
                Ok(raw) => (raw.to_string(), parse_item(raw, &name)),
                Err(e) => (String::new(), Err(e)),
            }
        })
        .collect();
    let found: Vec<Item> = requested
        .iter()
        .filter_map(|(_, i)| i.as_ref().ok().cloned())
        .collect();
    let counters = view.counters_many(&found).map_err(internal)?;
    let metrics = view.metrics_many(&found).map_err(internal)?;
    let mut t = crate::envelope::Table::with_columns("Results", columns(topics, all_topics));
    t.param("MaxTopicsRootDomain", 30);
    t.param("MaxTopicsSubDomain", 20);
    t.param("MaxTopicsURL", 10);
    t.param("TopicsCount", topics as i64);
    let mut queried = [0i64; 3];
    let mut answered = counters.iter().zip(&metrics);
    for (n, (raw, item)) in requested.iter().enumerate() {
        let mut cells: Vec<Value> = Vec::with_capacity(t.columns.len());
        match item {
            Ok(item) => {
                let (c, m) = answered.next().expect("one answer per parsed item");
                queried[item.level as usize - 1] += 1;
                let m = m.clone().unwrap_or_default();
                let page = if item.level == Level::Url {
                    view.page(&item.name).map_err(internal)?
                } else {
                    None
                };
                InfoRow::of(n, raw, item, c.unwrap_or_default(), &m, page).cells(&mut cells);
                let categories = all_topics.then(|| trust_categories(&m.topics));
                push_topic_values(m.topics, topics, &mut cells);
                cells.extend(categories.map(Value::Str));
            }
            Err(e) => {
                InfoRow::refused(n, raw, e).cells(&mut cells);
                push_topic_values(Vec::new(), topics, &mut cells);
                if all_topics {
                    cells.push(Value::empty());
                }
            }
        }
        t.push(cells);
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("QueriedRootDomains", queried[0]);
    reply.global("QueriedSubDomains", queried[1]);
    reply.global("QueriedURLs", queried[2]);
    reply.global("QueriedURLsMayExist", 0);
    reply.billed_rows = Some(found.len() as u64);
    reply.tables.push(t);
    Ok(reply)
}
