//! GetTopics: the topical profile of the links to an item, from its backlinks' source
//! pages (each link counts under every topic of its source page).

use super::{domain_of, internal, parse_item, text_param};
use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Row};
use linkstore::BacklinkQuery;
use std::collections::{BTreeMap, HashSet};

/// Most backlinks GetTopics reads (strongest sources first); documented in `docs/api.md`.
pub const TOPICS_SCAN_LIMIT: usize = 200_000;

table_row! {
    /// A `Topics` row.
    pub struct TopicRow {
        topic: String = "Topic",
        links: i64 = "Links",
        topical_trust_flow: i64 = "TopicalTrustFlow",
        links_from_ref_domains: i64 = "LinksFromRefDomains",
        ref_domains: i64 = "RefDomains",
        pages: i64 = "Pages",
    }
}

/// What the links from pages of one topic add up to.
#[derive(Default)]
struct TopicLinks {
    links: i64,
    pages: HashSet<String>,
    domains: HashSet<String>,
}

/// `SortBy` values of the reference.
const SORT_BY: &[&str] = &[
    "trustflow&links",
    "topic",
    "links",
    "pages",
    "refdomains",
    "linksfromrefdomains",
];

pub(super) fn get_topics(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 100)?.clamp(0, 10_000) as usize;
    let from = (p.int("From", 1)?.max(1) - 1) as usize;
    let sort_by = text_param(p, "SortBy")
        .unwrap_or("trustflow&links")
        .to_ascii_lowercase();
    if !SORT_BY.contains(&sort_by.as_str()) {
        return Err(ApiError::new(
            "InvalidParameter",
            format!(
                "SortBy must be one of {}, not {sort_by:?}",
                SORT_BY.join(", ")
            ),
        ));
    }
    let desc = match text_param(p, "SortOrder").map(str::to_ascii_lowercase) {
        None => true,
        Some(o) if o == "desc" => true,
        Some(o) if o == "asc" => false,
        Some(o) => {
            return Err(ApiError::new(
                "InvalidParameter",
                format!("SortOrder must be asc or desc, not {o:?}"),
            ))
        }
    };
    let own = view.metrics(&item).map_err(internal)?.unwrap_or_default();
    let mut per: BTreeMap<String, TopicLinks> = BTreeMap::new();
    let mut scanned = 0usize;
    let q = BacklinkQuery {
        max_scan: Some(TOPICS_SCAN_LIMIT),
        ..Default::default()
    };
    view.for_each_backlink(&item, &q, |r| {
        scanned += 1;
        for (topic, _) in &r.source_topics {
            let t = per.entry(topic.clone()).or_default();
            t.links += 1;
            if !t.pages.contains(&r.source_url) {
                t.pages.insert(r.source_url.clone());
            }
            t.domains.insert(domain_of(&r.source_url));
        }
        true
    })
    .map_err(internal)?;
    let ttf = |t: &str| {
        own.topics
            .iter()
            .find(|(n, _)| n == t)
            .map_or(0, |(_, v)| i64::from(*v))
    };
    let mut rows = Vec::with_capacity(per.len());
    for (topic, t) in per {
        // Every link of the referring domains, not only those from pages of this topic.
        let mut from_domains = 0;
        for d in &t.domains {
            from_domains += view
                .ref_domain(&item, d)
                .map_err(internal)?
                .map_or(0, |r| r.links);
        }
        rows.push(TopicRow {
            topical_trust_flow: ttf(&topic),
            topic,
            links: t.links,
            links_from_ref_domains: from_domains,
            ref_domains: t.domains.len() as i64,
            pages: t.pages.len() as i64,
        });
    }
    rows.sort_by(|a, b| {
        let o = match sort_by.as_str() {
            "topic" => a.topic.cmp(&b.topic),
            "links" => a.links.cmp(&b.links),
            "pages" => a.pages.cmp(&b.pages),
            "refdomains" => a.ref_domains.cmp(&b.ref_domains),
            "linksfromrefdomains" => a.links_from_ref_domains.cmp(&b.links_from_ref_domains),
            _ => (a.topical_trust_flow, a.links).cmp(&(b.topical_trust_flow, b.links)),
        };
        let o = if desc { o.reverse() } else { o };
        o.then_with(|| a.topic.cmp(&b.topic))
    });
    let total = rows.len();
    let mut t = TopicRow::table("Topics");
    for row in rows.into_iter().skip(from).take(count) {
        t.add(row);
    }
    t.param("Count", t.len() as i64);
    t.param("From", from as i64 + 1);
    t.param("SortBy", sort_by);
    t.param("SortOrder", if desc { "desc" } else { "asc" });
    t.param("TotalResults", total as i64);
    t.param("ScannedBackLinks", scanned as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetTopics");
    reply.tables.push(t);
    Ok(reply)
}
