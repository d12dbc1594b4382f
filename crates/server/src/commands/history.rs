//! GetBackLinksHistory: links (and referring domains) an item gained and lost over time,
//! by month in the historic index and by day in the fresh one, for up to 5 items.

use super::{internal, items_up_to, text_param};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Date, Row};
use indexes::IndexKind;
use linkstore::{format_day, parse_day, Item, ReadView};
use std::collections::BTreeMap;

/// Most items one request may name (Majestic's limit).
pub const MAX_HISTORY_ITEMS: usize = 5;
/// Referring domains read per item to date their discovery; an item with more gets `-1`
/// in `RefDomains` (documented in `docs/api.md`).
pub const HISTORY_REF_DOMAIN_LIMIT: usize = 100_000;

table_row! {
    /// A `Results` row: one requested item and the table holding its history.
    pub struct HistoryItemRow {
        item: String = "Item",
        item_type: &'static str = "ItemType",
        status: &'static str = "Status",
        data_table_name: String = "DataTableName",
    }
}

table_row! {
    /// One period of an item's history.
    pub struct HistoryRow {
        date: Date = "Date",
        total_links: i64 = "TotalLinks",
        lost_links: i64 = "LostLinks",
        ref_domains: i64 = "RefDomains",
    }
}

/// The first day of the period `day` falls in: its month's first day (historic) or
/// the day itself (fresh).
fn period_of(day: u32, kind: IndexKind) -> u32 {
    match kind {
        IndexKind::Fresh => day,
        IndexKind::Historic => {
            let text = format_day(day);
            parse_day(&format!("{}-01", &text[..7])).unwrap_or(day)
        }
    }
}

/// An item's periods: links found and lost, and referring domains first seen.
fn history(view: &ReadView, item: &Item, kind: IndexKind) -> Result<Vec<HistoryRow>, ApiError> {
    let mut periods: BTreeMap<u32, HistoryRow> = BTreeMap::new();
    fn at(periods: &mut BTreeMap<u32, HistoryRow>, day: u32, kind: IndexKind) -> &mut HistoryRow {
        let p = period_of(day, kind);
        periods.entry(p).or_insert_with(|| HistoryRow {
            date: Date(p),
            ..Default::default()
        })
    }
    for pt in view.timeline(item, 1, u32::MAX).map_err(internal)? {
        let row = at(&mut periods, pt.day, kind);
        row.total_links += pt.found;
        row.lost_links += pt.lost;
    }
    let domains = view
        .ref_domains(item, 0, HISTORY_REF_DOMAIN_LIMIT + 1)
        .map_err(internal)?;
    let counted = domains.len() <= HISTORY_REF_DOMAIN_LIMIT;
    if counted {
        for d in domains.iter().filter(|d| d.first_seen > 0) {
            at(&mut periods, d.first_seen, kind).ref_domains += 1;
        }
    }
    Ok(periods
        .into_values()
        .map(|mut r| {
            if !counted {
                r.ref_domains = -1;
            }
            r
        })
        .collect())
}

pub(super) fn get_back_links_history(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    if text_param(p, "UsePrefixScan").is_some_and(|v| v != "0") {
        return Err(ApiError::new(
            "InvalidParameter",
            "UsePrefixScan is not supported",
        ));
    }
    let items = items_up_to(p, MAX_HISTORY_ITEMS)?;
    let mut results = HistoryItemRow::table("Results");
    let mut tables = Vec::with_capacity(items.len());
    for (n, (raw, item)) in items.iter().enumerate() {
        let name = format!("History_{n}");
        let rows = history(&view, item, kind)?;
        results.add(HistoryItemRow {
            item: raw.clone(),
            item_type: item.level.name(),
            status: if rows.is_empty() { "NotFound" } else { "Found" },
            data_table_name: name.clone(),
        });
        let mut t = HistoryRow::table(&name);
        for r in rows {
            t.add(r);
        }
        t.param("Item", raw.as_str());
        t.param(
            "Period",
            match kind {
                IndexKind::Fresh => "Day",
                IndexKind::Historic => "Month",
            },
        );
        tables.push(t);
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetBackLinksHistory");
    reply.tables.push(results);
    reply.tables.extend(tables);
    Ok(reply)
}
