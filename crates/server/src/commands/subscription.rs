//! GetSubscriptionInfo and GetIndexStats: free commands about the account and the
//! indexes.

use super::MAX_ITEMS;
use crate::context::{index_error, unique_index_id, Context};
use crate::envelope::{date_time, Reply, Table, Value};
use crate::error::ApiError;
use crate::metering::Caller;
use crate::params::Params;
use crate::row::{table_row, Date, Row};
use indexes::IndexKind;

table_row! {
    /// The `Subscriptions` row: this period's allowance left.
    pub struct SubscriptionRow {
        starts: String = "Starts",
        expires: String = "Expires",
        index_item_info: i64 = "IndexItemInfoResUnits",
        retrieval: i64 = "RetrievalResUnits",
        analysis: i64 = "AnalysisResUnits",
    }
}

table_row! {
    /// One index's statistics (`IndexInfo`, `IndexStats`).
    pub struct IndexRow {
        index_type: i64 = "IndexType",
        index_name: &'static str = "IndexName",
        index_build_date: String = "IndexBuildDate",
        unique_index_id: String = "UniqueIndexID",
        crawled_urls: i64 = "CrawledURLs",
        indexed_urls: i64 = "IndexedURLs",
        first_backlink_date: Date = "FirstBackLinkDate",
        most_recent_backlink_date: Date = "MostRecentBackLinkDate",
        window_days: Value = "WindowDays",
    }
}

/// GetSubscriptionInfo: free; the limits this server enforces and both indexes' facts.
pub(super) fn get_subscription_info(
    ctx: &Context,
    caller: &Caller<'_>,
    p: &Params,
) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("MaxGetIndexInfoBatchCount", MAX_ITEMS as i64);
    reply.global("SubscriptionIsActive", 1);
    let usage = caller
        .accounts
        .usage(caller.principal.account)
        .map_err(|e| ApiError::new("InternalError", e.to_string()))?;
    let total = usage.account.allowance;
    reply.global("TotalIndexItemInfoResUnits", total.index_item_info as i64);
    reply.global("TotalAnalysisResUnits", total.analysis as i64);
    reply.global("TotalRetrievalResUnits", total.retrieval as i64);
    let left = usage.remaining;
    let mut subs = SubscriptionRow::table("Subscriptions");
    subs.add(SubscriptionRow {
        starts: date_time(usage.period.0),
        expires: date_time(usage.period.1),
        index_item_info: left.index_item_info as i64,
        retrieval: left.retrieval as i64,
        analysis: left.analysis as i64,
    });
    reply.tables.push(subs);
    reply.tables.push(index_table(ctx, "IndexInfo")?);
    Ok(reply)
}

/// The four statistics of each index, one row per index: the `IndexInfo` table of
/// GetSubscriptionInfo, and GetIndexStats.
fn index_table(ctx: &Context, name: &str) -> Result<Table, ApiError> {
    let mut t = IndexRow::table(name);
    for kind in IndexKind::ALL {
        let stats = ctx.indexes.stats(kind).map_err(index_error)?;
        t.add(IndexRow {
            index_type: i64::from(kind == IndexKind::Fresh),
            index_name: kind.as_str(),
            index_build_date: date_time(stats.updated_at),
            unique_index_id: unique_index_id(&stats),
            crawled_urls: stats.crawled_urls,
            indexed_urls: stats.found_urls,
            first_backlink_date: Date(stats.first_day),
            most_recent_backlink_date: Date(stats.last_day),
            window_days: match kind {
                IndexKind::Fresh => i64::from(ctx.indexes.window_days()).into(),
                IndexKind::Historic => Value::empty(),
            },
        });
    }
    Ok(t)
}

/// GetIndexStats (free): the statistics of both indexes, and the requested one's globals.
pub(super) fn get_index_stats(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(index_table(ctx, "IndexStats")?);
    Ok(reply)
}
