//! GetTopBackLinks (deprecated by Majestic, still what its connectors' samples call): a
//! URL's strongest backlinks, and optionally its subdomain's and root domain's, one
//! table per level.

use super::backlinks::{backlink_params, domains_info, BackLinkRow};
use super::{domain_of, internal, parse_item};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::Row;
use linkstore::{BacklinkQuery, Item, Level, MAX_BACKLINK_COUNT};
use std::collections::BTreeMap;

pub(super) fn get_top_back_links(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("URL")?;
    let url = parse_item(raw, "URL")?;
    let count = p.int("MaxSourceURLs", 100)?;
    if !(0..=MAX_BACKLINK_COUNT as i64).contains(&count) {
        return Err(ApiError::new(
            "InvalidParameter",
            format!("MaxSourceURLs must be 0 to {MAX_BACKLINK_COUNT}"),
        ));
    }
    let host = linkstore::host_of(&url.name).to_string();
    let levels = [
        ("URL", "GetUrlData", 1, url.clone()),
        (
            "SubDomain",
            "GetSubDomainData",
            0,
            Item {
                level: Level::SubDomain,
                name: host.clone(),
            },
        ),
        (
            "RootDomain",
            "GetRootDomainData",
            0,
            Item::domain(linkstore::root_domain(&host).unwrap_or(&host).to_string()),
        ),
    ];
    let show_domains = p.int("ShowDomainInfo", 0)? == 1;
    let mut domain_ids: BTreeMap<String, i64> = Default::default();
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    for (table, flag, default, item) in levels {
        // A URL query asks about that URL; a domain query has no URL level.
        if p.int(flag, default)? != 1 || (table == "URL" && url.level != Level::Url) {
            continue;
        }
        let q = BacklinkQuery {
            count: count as usize,
            ..Default::default()
        };
        let rows = view.backlinks(&item, &q).map_err(internal)?;
        let total = view
            .counters(&item)
            .map_err(internal)?
            .unwrap_or_default()
            .ext_backlinks;
        let mut t = BackLinkRow::table(table);
        for r in rows {
            let domain_id = if show_domains {
                let next = domain_ids.len() as i64;
                *domain_ids.entry(domain_of(&r.source_url)).or_insert(next)
            } else {
                -1
            };
            t.add(BackLinkRow::of(r, domain_id));
        }
        backlink_params(&mut t, &item.name, &item, 0, total);
        reply.tables.push(t);
    }
    if show_domains {
        reply.tables.push(domains_info(&view, &domain_ids)?);
    }
    reply.global("AnalysisMode", "AnalyseAllBackLinks");
    reply.global("Cmd", "GetTopBackLinks");
    Ok(reply)
}
