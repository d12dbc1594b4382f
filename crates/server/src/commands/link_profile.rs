//! GetLinkProfile: how an item's links (or referring domains) spread over the Citation
//! Flow × Trust Flow grid.

use super::{internal, items_up_to};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Row};
use linkstore::{BacklinkQuery, Item, ReadView};
use std::collections::BTreeMap;

/// Most items per request.
pub const MAX_PROFILE_ITEMS: usize = 10;
/// Most backlinks (by SourceTrustFlow) or referring domains (by links) counted per item:
/// the work is bounded before it runs; `TotalValues` says how many were.
pub const PROFILE_LIMIT: usize = 1_000_000;
const DOMAIN_PROFILE_LIMIT: usize = 100_000;

table_row! {
    /// An `Items` row: one requested item and the table holding its grid.
    pub struct ProfileItemRow {
        orig_item: String = "OrigItem",
        item: String = "Item",
        status: &'static str = "Status",
        item_type: &'static str = "ItemType",
        data_type: &'static str = "DataType",
        matrix_table_name: String = "MatrixTableName",
    }
}

table_row! {
    /// One non-empty cell of the grid.
    pub struct MatrixRow {
        citation_flow: i64 = "CitationFlow",
        trust_flow: i64 = "TrustFlow",
        value: i64 = "Value",
    }
}

/// Cells `(CitationFlow, TrustFlow) -> count` of an item's backlinks (their sources'
/// flows) or referring domains (the domains' flows).
fn grid(view: &ReadView, item: &Item, domains: bool) -> Result<BTreeMap<(u8, u8), i64>, ApiError> {
    let mut cells: BTreeMap<(u8, u8), i64> = BTreeMap::new();
    if domains {
        let refs = view
            .ref_domains(item, 0, DOMAIN_PROFILE_LIMIT)
            .map_err(internal)?;
        let items: Vec<Item> = refs
            .iter()
            .map(|d| Item::domain(d.domain.clone()))
            .collect();
        for m in view.metrics_many(&items).map_err(internal)? {
            let m = m.unwrap_or_default();
            *cells.entry((m.citation_flow, m.trust_flow)).or_default() += 1;
        }
    } else {
        let q = BacklinkQuery {
            max_scan: Some(PROFILE_LIMIT),
            ..Default::default()
        };
        view.for_each_backlink(item, &q, |r| {
            let f = r.source_flow;
            *cells.entry((f.citation_flow, f.trust_flow)).or_default() += 1;
            true
        })
        .map_err(internal)?;
    }
    Ok(cells)
}

pub(super) fn get_link_profile(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let items = items_up_to(p, MAX_PROFILE_ITEMS)?;
    let mut listing = ProfileItemRow::table("Items");
    let mut matrices = Vec::with_capacity(items.len());
    for (n, (raw, item)) in items.iter().enumerate() {
        let domains = match p.int(&format!("datatype{n}"), 0)? {
            0 => false,
            1 => true,
            d => {
                return Err(ApiError::new(
                    "InvalidParameter",
                    format!("datatype{n} must be 0 (links) or 1 (referring domains), not {d}"),
                ))
            }
        };
        let cells = grid(&view, item, domains)?;
        let name = format!("RankingMatrix_{n}");
        listing.add(ProfileItemRow {
            orig_item: raw.clone(),
            item: item.name.clone(),
            status: "OK",
            item_type: item.level.name(),
            data_type: if domains { "RefDomains" } else { "Links" },
            matrix_table_name: name.clone(),
        });
        let mut t = MatrixRow::table(&name);
        t.param("MaxValue", cells.values().copied().max().unwrap_or(0));
        t.param("TotalValues", cells.values().sum::<i64>());
        for ((cf, tf), value) in cells {
            t.add(MatrixRow {
                citation_flow: i64::from(cf),
                trust_flow: i64::from(tf),
                value,
            });
        }
        matrices.push(t);
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetLinkProfile");
    reply.tables.push(listing);
    reply.tables.extend(matrices);
    Ok(reply)
}
