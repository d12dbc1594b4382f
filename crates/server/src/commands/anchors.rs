//! GetAnchorText: an item's anchor texts (Mode 0), or the referring domains (1) or
//! backlinks (2) behind one anchor.

use super::backlinks::BackLinkRow;
use super::{domain_of, internal, parse_item, text_param};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, NumText, Row, Topics};
use linkstore::{anchor_form, AnchorFilter, AnchorQuery, BacklinkQuery, MAX_BACKLINK_COUNT};

table_row! {
    /// A Mode 0 `AnchorText` row.
    pub struct AnchorRow {
        anchor_text: String = "AnchorText",
        ref_domains: i64 = "RefDomains",
        total_links: i64 = "TotalLinks",
        deleted_links: i64 = "DeletedLinks",
        nofollow_links: i64 = "NoFollowLinks",
        estimated_citation_flow: NumText = "EstimatedLinkCitationFlow",
        estimated_trust_flow: NumText = "EstimatedLinkTrustFlow",
        topics: Topics<3> = "TopicalTrustFlow",
    }
}

table_row! {
    /// A Mode 1 `RefDomains` row: a domain using the anchor.
    pub struct AnchorDomainRow {
        domain: String = "Domain",
        total_links: i64 = "TotalLinks",
        deleted_links: i64 = "DeletedLinks",
    }
}

pub(super) fn get_anchor_text(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 10)?.clamp(0, 1000) as usize;
    let from = p.int("From", 0)?.max(0) as usize;
    let text_mode = p.int("TextMode", 0)?;
    let mode = p.int("Mode", 0)?;
    let cleaned = text_mode == 1;
    let filter_text = p
        .get("FilterAnchorText")
        .map(|f| anchor_form(f, cleaned))
        .filter(|f| !f.is_empty());
    // Without a mode, a filter text means "contains" (what Majestic does).
    let filter_mode = p.int(
        "FilterAnchorTextMode",
        if filter_text.is_some() { 2 } else { 0 },
    )?;
    let has_filter_text = filter_text.is_some();
    let filter = filter_text.and_then(|f| match filter_mode {
        1 => Some(AnchorFilter::Exact(f)),
        2 => Some(AnchorFilter::Contains(f)),
        _ => None,
    });
    let filter_domain = text_param(p, "FilterRefDomain").map(str::to_ascii_lowercase);
    let c = view.counters(&item).map_err(internal)?.unwrap_or_default();
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    let mut t = match mode {
        0 => {
            let q = AnchorQuery {
                from,
                count,
                filter: filter.clone(),
                cleaned,
            };
            let page = view.anchor_texts(&item, &q).map_err(internal)?;
            let mut t = AnchorRow::table("AnchorText");
            let m = view.metrics(&item).map_err(internal)?.unwrap_or_default();
            for a in &page.rows {
                // Estimated flows: the item's own flows, scaled by the anchor's followed share.
                let followed = (a.links - a.nofollow_links).max(0) as f64 / a.links.max(1) as f64;
                t.add(AnchorRow {
                    anchor_text: a.text.clone(),
                    ref_domains: a.ref_domains,
                    total_links: a.links,
                    deleted_links: a.deleted_links,
                    nofollow_links: a.nofollow_links,
                    estimated_citation_flow: NumText(
                        (f64::from(m.citation_flow) * followed).round() as i64,
                    ),
                    estimated_trust_flow: NumText(
                        (f64::from(m.trust_flow) * followed).round() as i64
                    ),
                    topics: Topics(m.topics.clone()),
                });
            }
            t.param("MaxTopics", 10);
            t.param("TopicsCount", 3);
            t.param("TotalResults", page.total.map_or(-1, |n| n as i64));
            t
        }
        1 | 2 => {
            if !has_filter_text {
                return Err(ApiError::new(
                    "MissingParameter",
                    "Mode 1 and 2 need FilterAnchorText",
                ));
            }
            // Scan the item's backlinks (from one referring domain with FilterRefDomain)
            // for the anchor: referring domains (1) or links (2).
            let q = BacklinkQuery {
                ref_domain: filter_domain.clone(),
                ..Default::default()
            };
            let mut links = Vec::new();
            view.for_each_backlink(&item, &q, |r| {
                let form = anchor_form(&r.anchor_text, cleaned);
                if filter.as_ref().is_none_or(|f| f.accepts(&form)) {
                    links.push(r);
                }
                links.len() < MAX_BACKLINK_COUNT
            })
            .map_err(internal)?;
            if mode == 1 {
                let mut per: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
                for r in &links {
                    let e = per.entry(domain_of(&r.source_url)).or_default();
                    e.0 += 1;
                    e.1 += i64::from(r.is_deleted());
                }
                let mut t = AnchorDomainRow::table("RefDomains");
                let total = per.len();
                for (d, (n, del)) in per.iter().skip(from).take(count) {
                    t.add(AnchorDomainRow {
                        domain: d.clone(),
                        total_links: *n,
                        deleted_links: *del,
                    });
                }
                t.param("TotalResults", total as i64);
                t
            } else {
                let mut t = BackLinkRow::table("BackLinks");
                let total = links.len();
                for r in links.into_iter().skip(from).take(count) {
                    t.add(BackLinkRow::of(r, -1));
                }
                t.param("TotalResults", total as i64);
                t
            }
        }
        _ => return Err(ApiError::new("InvalidParameter", "Mode must be 0, 1 or 2")),
    };
    t.param("CanReturnURLs", 1);
    t.param("Count", t.len() as i64);
    t.param("FilterAnchorText", p.get("FilterAnchorText").unwrap_or(""));
    t.param("FilterAnchorTextMode", filter_mode);
    t.param("FilterRefDomain", filter_domain.as_deref().unwrap_or(""));
    t.param("From", from as i64);
    t.param("Item", raw);
    t.param("Mode", mode);
    t.param("OrigItem", raw);
    t.param("TextMode", text_mode);
    t.param("TotalBackLinks", c.ext_backlinks);
    t.param("TotalRefDomains", c.ref_domains);
    reply.tables.push(t);
    Ok(reply)
}
