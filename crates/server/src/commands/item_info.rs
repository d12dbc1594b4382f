//! GetIndexItemInfo: one row of headline statistics per item, up to 100 items.

use super::{crawl_result, internal, item_count, parse_item, MAX_ITEMS};
use crate::context::Context;
use crate::envelope::{Columns, DeferredRow, JsonKeys, Reply, Value};
use crate::error::ApiError;
use crate::metering;
use crate::params::Params;
use crate::row::{
    push_topic_values, table_row, topic_columns, Date, NumText, Row, TrueFalse, UnknownNumber,
    UnknownText,
};
use linkstore::{Counters, Item, ItemMetrics, Level, PageState};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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
        raw: &str,
        item: &Item,
        c: Counters,
        m: &ItemMetrics,
        page: Option<PageState>,
    ) -> InfoRow {
        InfoRow {
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
    fn refused(raw: &str, e: &ApiError) -> InfoRow {
        InfoRow {
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
    let columns = columns(topics, all_topics);
    let shape = RowShape {
        view: view.published_id(),
        topics,
        all_topics,
    };
    // Each item stands alone: a missing or malformed one gets its own ResultCode. Rows
    // rendered before for this view and shape are taken as they are.
    let mut rows: Vec<Option<Result<Arc<RenderedInfoRow>, InfoRow>>> = Vec::with_capacity(count);
    let mut unread: Vec<(usize, &str, Item)> = Vec::new();
    for n in 0..count {
        let name = format!("item{n}");
        let raw = match p.required(&name) {
            Ok(raw) => raw,
            Err(e) => {
                rows.push(Some(Err(InfoRow::refused("", &e))));
                continue;
            }
        };
        if let Some(row) = ctx.info_rows.get(raw, &shape) {
            rows.push(Some(Ok(row)));
            continue;
        }
        match parse_item(raw, &name) {
            Ok(item) => {
                // Read below, with the other items not rendered yet.
                unread.push((n, raw, item));
                rows.push(None);
            }
            Err(e) => rows.push(Some(Err(InfoRow::refused(raw, &e)))),
        }
    }
    let items: Vec<Item> = unread.iter().map(|(_, _, item)| item.clone()).collect();
    let counters = view.counters_many(&items).map_err(internal)?;
    let metrics = view.metrics_many(&items).map_err(internal)?;
    for (((n, raw, item), c), m) in unread.into_iter().zip(counters).zip(metrics) {
        let m = m.unwrap_or_default();
        let page = if item.level == Level::Url {
            view.page(&item.name).map_err(internal)?
        } else {
            None
        };
        let mut cells = Vec::with_capacity(columns.len());
        InfoRow::of(raw, &item, c.unwrap_or_default(), &m, page).cells(&mut cells);
        // The item's number is the reply's, not the row's.
        cells.remove(0);
        let categories = all_topics.then(|| trust_categories(&m.topics));
        push_topic_values(m.topics, topics, &mut cells);
        cells.extend(categories.map(Value::Str));
        let row = Arc::new(RenderedInfoRow::new(item.level, cells, &columns));
        ctx.info_rows.keep(raw, &shape, &row);
        rows[n] = Some(Ok(row));
    }
    let mut t = crate::envelope::Table::with_columns("Results", columns);
    t.param("MaxTopicsRootDomain", 30);
    t.param("MaxTopicsSubDomain", 20);
    t.param("MaxTopicsURL", 10);
    t.param("TopicsCount", topics as i64);
    let mut queried = [0i64; 3];
    for (n, row) in rows.into_iter().enumerate() {
        match row.expect("every item read above") {
            Ok(row) => {
                queried[row.level as usize - 1] += 1;
                t.push_deferred(Box::new(NumberedRow { num: n, row }));
            }
            Err(refused) => {
                let mut cells: Vec<Value> = Vec::with_capacity(t.columns.len());
                InfoRow {
                    item_num: n as i64,
                    ..refused
                }
                .cells(&mut cells);
                push_topic_values(Vec::new(), topics, &mut cells);
                if all_topics {
                    cells.push(Value::empty());
                }
                t.push(cells);
            }
        }
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("QueriedRootDomains", queried[0]);
    reply.global("QueriedSubDomains", queried[1]);
    reply.global("QueriedURLs", queried[2]);
    reply.global("QueriedURLsMayExist", 0);
    reply.billed_rows = Some(queried.iter().sum::<i64>() as u64);
    reply.tables.push(t);
    Ok(reply)
}

/// What a rendered row depends on besides its item: the view it was read through and the
/// topic columns asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RowShape {
    view: Option<(u64, u8)>,
    topics: usize,
    all_topics: bool,
}

/// The `Results` row of a found item, all but its `ItemNum`: its cells (for XML) and
/// their JSON (the keys and values of every column after `ItemNum`), made once.
struct RenderedInfoRow {
    level: Level,
    cells: Vec<Value>,
    json: String,
}

impl RenderedInfoRow {
    /// `cells` are every column's but the first; `columns` the table's.
    fn new(level: Level, cells: Vec<Value>, columns: &Columns) -> RenderedInfoRow {
        let mut json = String::with_capacity(cells.len() * 32);
        let mut keys = columns.json_keys_from(1);
        for cell in &cells {
            keys.cell(cell, &mut json);
        }
        RenderedInfoRow { level, cells, json }
    }
}

/// A rendered row at its place in a reply.
struct NumberedRow {
    num: usize,
    row: Arc<RenderedInfoRow>,
}

impl DeferredRow for NumberedRow {
    fn into_cells(self: Box<Self>, out: &mut Vec<Value>) {
        out.push(Value::Int(self.num as i64));
        out.extend(self.row.cells.iter().cloned());
    }

    fn write_json(self: Box<Self>, keys: &mut JsonKeys<'_>, out: &mut String) {
        keys.cell(&Value::Int(self.num as i64), out);
        keys.rendered(self.row.cells.len(), &self.row.json, out);
    }
}

/// Rendered `Results` rows of the items asked for lately, by the item as the request
/// spelled it, each for the view and shape it was made for. Exact: a published view never
/// changes, and a row made through another view or shape is never taken. At most
/// [`KEPT_ROWS`]; a full memo starts over, like the store's own summary memos.
#[derive(Default)]
pub struct InfoRowMemo(Mutex<HashMap<Box<str>, KeptRow>>);

/// A rendered row and what it was made for.
struct KeptRow {
    shape: RowShape,
    row: Arc<RenderedInfoRow>,
}

/// Rows kept per context: about 20 MB at most (a row's cells and JSON take about 5 KB).
const KEPT_ROWS: usize = 4_096;

impl InfoRowMemo {
    fn get(&self, raw: &str, shape: &RowShape) -> Option<Arc<RenderedInfoRow>> {
        shape.view?;
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(raw)
            .filter(|kept| kept.shape == *shape)
            .map(|kept| Arc::clone(&kept.row))
    }

    /// Keeps `row` for later requests, unless its view is not a published one.
    fn keep(&self, raw: &str, shape: &RowShape, row: &Arc<RenderedInfoRow>) {
        if shape.view.is_none() {
            return;
        }
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= KEPT_ROWS {
            kept.clear();
        }
        let kept_row = KeptRow {
            shape: *shape,
            row: Arc::clone(row),
        };
        kept.insert(raw.into(), kept_row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_memo_keeps_published_rows_of_one_shape_and_starts_over_when_full() {
        let memo = InfoRowMemo::default();
        let shape = RowShape {
            view: Some((7, 0)),
            topics: 0,
            all_topics: false,
        };
        let columns = columns(0, false);
        let row = || {
            let cells = vec![Value::empty(); columns.len() - 1];
            Arc::new(RenderedInfoRow::new(Level::Url, cells, &columns))
        };
        memo.keep("a", &shape, &row());
        assert!(memo.get("a", &shape).is_some());
        let other_view = RowShape {
            view: Some((8, 0)),
            ..shape
        };
        let other_topics = RowShape { topics: 1, ..shape };
        assert!(memo.get("a", &other_view).is_none());
        assert!(memo.get("a", &other_topics).is_none());
        let unpublished = RowShape {
            view: None,
            ..shape
        };
        memo.keep("b", &unpublished, &row());
        assert!(memo.get("b", &unpublished).is_none(), "never kept");
        for n in 0..KEPT_ROWS {
            memo.keep(&n.to_string(), &shape, &row());
        }
        assert!(memo.0.lock().unwrap().len() <= KEPT_ROWS);
        assert!(memo.get(&(KEPT_ROWS - 1).to_string(), &shape).is_some());
    }
}
