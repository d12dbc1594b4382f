//! GetNewLostBackLinks (the links an item gained or lost in a date range, as `BackLinks`
//! rows) and GetNewLostBackLinkCalendar (how many, day by day).

use super::backlinks::{backlink_params, BackLinkRow};
use super::{date_param, internal, parse_item};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Date, Row};
use linkstore::{BacklinkQuery, Item, ReadView, Store, MAX_BACKLINK_COUNT};
use std::sync::Arc;

/// Most backlink rows GetNewLostBackLinks reads looking for links of the range: the work
/// a request may cause is bounded before it runs (documented in `docs/api.md`).
pub const NEW_LOST_SCAN_LIMIT: usize = 2_000_000;

/// The dates a request gives: `datefrom`/`dateto` (also `date_from`/`date_to`, and the
/// `Dateform` misspelling clients send), either optional; a start after the end is refused.
fn date_bounds(p: &Params) -> Result<(Option<u32>, Option<u32>), ApiError> {
    let from = date_param(p, &["datefrom", "date_from", "dateform"])?;
    let to = date_param(p, &["dateto", "date_to"])?;
    if let (Some(f), Some(t)) = (from, to) {
        if f > t {
            return Err(ApiError::new(
                "InvalidDate",
                "the start date is after the end date",
            ));
        }
    }
    Ok((from, to))
}

/// GetNewLostBackLinks' range: [`date_bounds`], a missing end being the index's most
/// recent backlink day.
fn date_range(
    ctx: &Context,
    p: &Params,
    kind: indexes::IndexKind,
    store: &Arc<Store>,
) -> Result<(u32, u32), ApiError> {
    let (from, to) = date_bounds(p)?;
    let latest = || -> Result<u32, ApiError> {
        Ok(ctx
            .indexes
            .stats_of(kind, store)
            .map_err(crate::context::index_error)?
            .last_day)
    };
    Ok(match (from, to) {
        (Some(f), Some(t)) => (f, t),
        (Some(f), None) => (f, latest()?.max(f)),
        (None, Some(t)) => (latest()?.min(t), t),
        (None, None) => {
            let d = latest()?;
            (d, d)
        }
    })
}

/// Whether a link is new (`lost` false: first seen in the range) or lost (deleted, and
/// found deleted in the range) in `[from, to]`.
fn in_range(r: &linkstore::LinkRecord, lost: bool, from: u32, to: u32) -> bool {
    let day = if lost {
        if !r.is_deleted() {
            return false;
        }
        r.date_lost
    } else {
        r.first_seen
    };
    (from..=to).contains(&day)
}

/// New (or lost) links of the range counted from the day-by-day timeline: exact, and no
/// scan but of a snapshot's small item's at most 64 backlinks, which keeps no timeline.
fn count_in_range(
    view: &ReadView,
    item: &Item,
    lost: bool,
    from: u32,
    to: u32,
) -> Result<i64, ApiError> {
    let points = view.timeline(item, from, to).map_err(internal)?;
    Ok(points
        .iter()
        .map(|pt| if lost { pt.lost } else { pt.found })
        .sum())
}

pub(super) fn get_new_lost_back_links(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let lost = match p.int("Mode", 0)? {
        0 => false,
        1 => true,
        m => {
            return Err(ApiError::new(
                "InvalidParameter",
                format!("Mode must be 0 (new links) or 1 (lost links), not {m}"),
            ))
        }
    };
    let count = p.int("Count", 100)?.clamp(0, MAX_BACKLINK_COUNT as i64) as usize;
    let (from, to) = date_range(ctx, p, kind, &store)?;
    let total = count_in_range(&view, &item, lost, from, to)?;
    let mut t = BackLinkRow::table("BackLinks");
    if count > 0 && total > 0 {
        let q = BacklinkQuery {
            max_scan: Some(NEW_LOST_SCAN_LIMIT),
            ..Default::default()
        };
        view.for_each_backlink(&item, &q, |r| {
            if in_range(&r, lost, from, to) {
                t.add(BackLinkRow::of(r, -1));
            }
            t.len() < count && (t.len() as i64) < total
        })
        .map_err(internal)?;
    }
    backlink_params(&mut t, raw, &item, 0, total);
    t.param("Mode", i64::from(lost));
    t.param("DateFrom", Date(from));
    t.param("DateTo", Date(to));
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(t);
    Ok(reply)
}

table_row! {
    /// A `Calendar` row: one day with links found or lost.
    pub struct CalendarRow {
        date: Date = "Date",
        new_links: i64 = "NewLinks",
        lost_links: i64 = "LostLinks",
    }
}

pub(super) fn get_new_lost_back_link_calendar(
    ctx: &Context,
    p: &Params,
) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let (from, to) = date_bounds(p)?;
    let (from, to) = (from.unwrap_or(1), to.unwrap_or(u32::MAX));
    let mut t = CalendarRow::table("Calendar");
    for pt in view.timeline(&item, from, to).map_err(internal)? {
        t.add(CalendarRow {
            date: Date(pt.day),
            new_links: pt.found,
            lost_links: pt.lost,
        });
    }
    t.param("Item", raw);
    t.param("TotalDays", t.len() as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(t);
    Ok(reply)
}
