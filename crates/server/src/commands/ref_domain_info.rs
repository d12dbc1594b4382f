//! GetRefDomainInfo: domain-level statistics for up to 1,000 domains (the root domain of
//! each item).

use super::domain_facts::DomainFacts;
use super::{internal, item_count, parse_item};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Row, Topics};
use linkstore::{Item, Level};

/// Most items one request may name (Majestic's limit).
pub const MAX_REF_DOMAIN_INFO_ITEMS: usize = 1_000;

table_row! {
    /// A `DomainsInfo` row of GetRefDomainInfo.
    pub struct RefDomainInfoRow {
        row_id: i64 = "RowID",
        original_item: String = "OriginalItem",
        status: &'static str = "Status",
        root_domain: String = "RootDomain",
        facts: DomainFacts = "",
        topics: Topics<3> = "TopicalTrustFlow",
    }
}

/// The root domain an item stands for here.
fn root_domain_of(item: &Item) -> Item {
    match item.level {
        Level::RootDomain => item.clone(),
        _ => {
            let host = linkstore::host_of(&item.name);
            Item::domain(linkstore::root_domain(host).unwrap_or(host).to_string())
        }
    }
}

pub(super) fn get_ref_domain_info(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let count = item_count(p, MAX_REF_DOMAIN_INFO_ITEMS)?;
    // A missing or malformed item gets its code as its row's Status.
    let requested: Vec<(String, Result<Item, ApiError>)> = (0..count)
        .map(|i| {
            let name = format!("item{i}");
            match p.required(&name) {
                Ok(raw) => (
                    raw.to_string(),
                    parse_item(raw, &name).map(|i| root_domain_of(&i)),
                ),
                Err(e) => (String::new(), Err(e)),
            }
        })
        .collect();
    let domains: Vec<Item> = requested
        .iter()
        .filter_map(|(_, d)| d.as_ref().ok().cloned())
        .collect();
    let counters = view.counters_many(&domains).map_err(internal)?;
    let metrics = view.metrics_many(&domains).map_err(internal)?;
    let mut answers = counters.into_iter().zip(metrics);
    let mut t = RefDomainInfoRow::table("DomainsInfo");
    for (n, (raw, domain)) in requested.iter().enumerate() {
        let row = match domain {
            Ok(d) => {
                let (c, m) = answers.next().expect("one answer per domain");
                let found = c.is_some_and(|c| c.ext_backlinks > 0 || c.indexed_urls > 0);
                let (c, m) = (c.unwrap_or_default(), m.unwrap_or_default());
                let topics = Topics(m.topics.clone());
                RefDomainInfoRow {
                    row_id: n as i64,
                    original_item: raw.clone(),
                    status: if found { "Found" } else { "NotFound" },
                    root_domain: d.name.clone(),
                    facts: DomainFacts::of(&d.name, c, &m),
                    topics,
                }
            }
            Err(e) => RefDomainInfoRow {
                row_id: n as i64,
                original_item: raw.clone(),
                status: e.code,
                ..Default::default()
            },
        };
        t.add(row);
    }
    t.param("Count", t.len() as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetRefDomainInfo");
    reply.tables.push(t);
    Ok(reply)
}
