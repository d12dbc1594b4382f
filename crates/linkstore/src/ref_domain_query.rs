//! Referring-domain reads across items: the domains linking to one or more items, with
//! what each item gets from them (GetRefDomains, and the CLI's top referring domains).

use crate::aggregate::{Counters, RefDomain};
use crate::error::Result;
use crate::item::Item;
use crate::metrics::ItemMetrics;
use crate::read_view::ReadView;
use std::collections::BTreeMap;

/// Most referring domains considered per item.
pub const MAX_ANALYSIS_DEPTH: usize = 100_000;
/// Most (item, candidate domain) rows one query reads. Candidates come from every item and
/// each is read for every item, so the depth per item shrinks with the square of the items:
/// 1 item up to 100,000 domains, 4 items 62,500, 100 items 100.
pub const MAX_CANDIDATE_ROWS: usize = 1_000_000;

/// What referring domains are ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefDomainOrder {
    /// Requested items the domain links to.
    Matches,
    /// Links from the domain to the requested items.
    MatchedLinks,
    RefDomains,
    ExtBackLinks,
    IndexedUrls,
    CrawledUrls,
    LastCrawl,
    CitationFlow,
    TrustFlow,
}

/// Which referring domains of `items` to read.
#[derive(Debug, Clone)]
pub struct RefDomainQuery {
    pub items: Vec<Item>,
    /// Candidates: each item's strongest `depth` referring domains (by links).
    pub depth: usize,
    pub from: usize,
    pub count: usize,
    /// Sort keys, each descending when true; ties by domain name.
    pub order: Vec<(RefDomainOrder, bool)>,
    /// Only domains with this topic among their Topical Trust Flow topics.
    pub topic: Option<String>,
}

/// A referring domain: its own counters and metrics, and its row for each requested item
/// (empty where it does not link to that item).
#[derive(Debug, Clone, Default)]
pub struct RefDomainMatch {
    pub domain: String,
    pub per_item: Vec<RefDomain>,
    pub counters: Counters,
    pub metrics: ItemMetrics,
}

impl RefDomainMatch {
    pub fn value(&self, key: RefDomainOrder) -> i64 {
        match key {
            RefDomainOrder::Matches => self.per_item.iter().filter(|a| a.links > 0).count() as i64,
            RefDomainOrder::MatchedLinks => self.per_item.iter().map(|a| a.links).sum(),
            RefDomainOrder::RefDomains => self.counters.ref_domains,
            RefDomainOrder::ExtBackLinks => self.counters.ext_backlinks,
            RefDomainOrder::IndexedUrls => self.counters.indexed_urls,
            RefDomainOrder::CrawledUrls => self.counters.crawled_urls,
            RefDomainOrder::LastCrawl => self.counters.last_crawl_day,
            RefDomainOrder::CitationFlow => i64::from(self.metrics.citation_flow),
            RefDomainOrder::TrustFlow => i64::from(self.metrics.trust_flow),
        }
    }
}

/// A page of referring domains, with how many were considered and how many matched.
#[derive(Debug, Clone, Default)]
pub struct RefDomainPage {
    pub rows: Vec<RefDomainMatch>,
    pub considered: usize,
    pub matched: usize,
    /// The depth used per item, after [`MAX_CANDIDATE_ROWS`].
    pub depth: usize,
}

impl ReadView {
    /// The referring domains `q` selects (see [`RefDomainQuery`]). Each item's ranked rows
    /// give its candidates and its own row for them; the other items' rows, and the
    /// domains' counters and metrics, come in batched reads. The candidates of all items
    /// are bounded by [`MAX_CANDIDATE_ROWS`], so are the rows read for them (items x
    /// candidates).
    pub fn ref_domain_matches(&self, q: &RefDomainQuery) -> Result<RefDomainPage> {
        let depth = q
            .depth
            .min(MAX_ANALYSIS_DEPTH)
            .min(MAX_CANDIDATE_ROWS / q.items.len().max(1).pow(2));
        let mut rows: BTreeMap<String, Vec<Option<RefDomain>>> = BTreeMap::new();
        for (i, item) in q.items.iter().enumerate() {
            for d in self.ref_domains(item, 0, depth)? {
                let slots = rows
                    .entry(d.domain.clone())
                    .or_insert_with(|| vec![None; q.items.len()]);
                slots[i] = Some(d);
            }
        }
        let considered = rows.len();
        let domains: Vec<String> = rows.keys().cloned().collect();
        for (i, item) in q.items.iter().enumerate() {
            let missing: Vec<&str> = domains
                .iter()
                .filter(|d| rows[*d][i].is_none())
                .map(String::as_str)
                .collect();
            for (d, row) in missing.iter().zip(self.ref_domains_many(item, &missing)?) {
                if let Some(r) = rows.get_mut(*d) {
                    r[i] = row;
                }
            }
        }
        let items: Vec<Item> = domains.iter().map(|d| Item::domain(d.clone())).collect();
        let counters = self.counters_many(&items)?;
        let metrics = self.metrics_many(&items)?;
        let mut matches: Vec<RefDomainMatch> = rows
            .into_iter()
            .zip(counters.into_iter().zip(metrics))
            .map(|((domain, per_item), (c, m))| RefDomainMatch {
                domain,
                per_item: per_item
                    .into_iter()
                    .map(Option::unwrap_or_default)
                    .collect(),
                counters: c.unwrap_or_default(),
                metrics: m.unwrap_or_default(),
            })
            .filter(|r| {
                q.topic
                    .as_ref()
                    .is_none_or(|t| r.metrics.topics.iter().any(|(n, _)| n == t))
            })
            .collect();
        matches.sort_by(|a, b| {
            for &(key, desc) in &q.order {
                let (x, y) = (a.value(key), b.value(key));
                let o = if desc { y.cmp(&x) } else { x.cmp(&y) };
                if o.is_ne() {
                    return o;
                }
            }
            a.domain.cmp(&b.domain)
        });
        let matched = matches.len();
        Ok(RefDomainPage {
            rows: matches.into_iter().skip(q.from).take(q.count).collect(),
            considered,
            matched,
            depth,
        })
    }
}
