//! What one crawl of a page does to the page's links (product brief §1.11), as pure
//! functions of the page's previous state and link set: shared by the incremental
//! [`Writer`](crate::Writer), which reads that state from the store, and the bulk
//! builder ([`crate::build`]), which holds it in memory while it replays a page's crawls
//! in time order.

use crate::error::Result;
use crate::page::{day_of, CrawlOutcome, OutLink, PageCrawl, PageState};
use crate::record::{
    flags, FlowPair, LinkKind, LinkRecord, LostReason, SourceOutlinks, SOURCE_TOPICS, TARGET_TOPICS,
};
use crate::table::LinkSummary;
use crate::views::domain_of_url;
use crate::writer::ApplyStats;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

/// A record before and after a crawl (`None` before: a new link).
pub(crate) type Change = (Option<LinkRecord>, LinkRecord);

/// How a crawl stands against the last one applied to its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrawlOrder {
    First,
    Newer,
    /// Already applied: a no-op.
    Same,
    /// Only adds history days and earlier discovery dates.
    Older,
}

pub(crate) fn crawl_order(previous: Option<PageState>, fetched_at: i64) -> CrawlOrder {
    match previous {
        None => CrawlOrder::First,
        Some(p) if fetched_at == p.last_fetch => CrawlOrder::Same,
        Some(p) if fetched_at < p.last_fetch => CrawlOrder::Older,
        Some(_) => CrawlOrder::Newer,
    }
}

/// The HTTP status a crawl records, or `None` when it says nothing about the page's
/// links (5xx, 429, ...: ignored).
pub(crate) fn crawl_status(crawl: &PageCrawl) -> Option<u16> {
    match &crawl.outcome {
        CrawlOutcome::Failed { .. } => None,
        CrawlOutcome::Html { .. } | CrawlOutcome::NotHtml => Some(200),
        CrawlOutcome::Redirect { status, .. } | CrawlOutcome::Gone { status } => Some(*status),
    }
}

/// The page's state after applying a first, newer or older crawl.
pub(crate) fn next_state(previous: Option<PageState>, crawl: &PageCrawl, status: u16) -> PageState {
    match previous {
        Some(p) if crawl.fetched_at < p.last_fetch => PageState {
            first_fetch: p.first_fetch.min(crawl.fetched_at),
            ..p
        },
        _ => PageState {
            first_fetch: previous.map_or(crawl.fetched_at, |p| p.first_fetch),
            last_fetch: crawl.fetched_at,
            last_status: status,
        },
    }
}

/// Flow metrics and topics of a URL as of the serving flow build.
#[derive(Debug, Clone, Default)]
pub(crate) struct UrlMetrics {
    pub flow: FlowPair,
    pub topics: Vec<(String, u8)>,
}

/// Changes made by a first or newer crawl: links it no longer shows are deleted with the
/// crawl's reason, links it shows are new or seen again. The record of every link that
/// changes moves out of `existing` into its change; the caller puts the new ones back.
/// `target_metrics` gives the metrics of all the crawl's targets at once (one batched
/// read), in the order asked. Nothing is moved unless they were read.
pub(crate) fn newer_crawl(
    crawl: &PageCrawl,
    existing: &mut BTreeMap<String, LinkRecord>,
    source: &UrlMetrics,
    target_metrics: &mut dyn FnMut(&[&str]) -> Result<Vec<UrlMetrics>>,
    stats: &mut ApplyStats,
) -> Result<Vec<Change>> {
    let day = day_of(crawl.fetched_at);
    let found = found_links(crawl);
    let wanted: Vec<&str> = found.keys().copied().collect();
    let targets = target_metrics(&wanted)?;
    debug_assert_eq!(targets.len(), wanted.len());
    let page_out = page_outlinks(&crawl.url, &found);
    let lost_reason = match &crawl.outcome {
        CrawlOutcome::Gone { status: 410 } => LostReason::PageGone,
        CrawlOutcome::Gone { .. } => LostReason::PageNotFound,
        CrawlOutcome::Redirect { .. } => LostReason::PageRedirected,
        CrawlOutcome::NotHtml => LostReason::NotHtml,
        _ => LostReason::LinkRemoved,
    };
    let lost: Vec<String> = existing
        .iter()
        .filter(|(target, rec)| !found.contains_key(target.as_str()) && !rec.is_deleted())
        .map(|(target, _)| target.clone())
        .collect();
    let mut changes = Vec::with_capacity(lost.len() + found.len());
    for target in lost {
        let old = existing.remove(&target).expect("listed above");
        let mut new = old.clone();
        new.set_flag(flags::DELETED, true);
        new.date_lost = day;
        new.lost_reason = lost_reason;
        new.source_out = page_out;
        stats.links_deleted += 1;
        changes.push((Some(old), new));
    }
    for ((target, link), metrics) in found.iter().zip(targets) {
        let old = existing.remove(*target);
        let mut new = match &old {
            Some(old) => {
                stats.links_seen_again += 1;
                let mut r = old.clone();
                r.set_flag(flags::DELETED, false);
                r.date_lost = 0;
                r.lost_reason = LostReason::None;
                r
            }
            None => {
                stats.links_new += 1;
                LinkRecord {
                    source_url: crawl.url.clone(),
                    target_url: link.target.clone(),
                    first_seen: day,
                    ..Default::default()
                }
            }
        };
        describe(&mut new, link, crawl.ip);
        new.source_flow = source.flow;
        new.source_topics = top(&source.topics, SOURCE_TOPICS);
        new.target_flow = metrics.flow;
        new.target_topics = top(&metrics.topics, TARGET_TOPICS);
        new.source_out = page_out;
        if let CrawlOutcome::Redirect { status, .. } = crawl.outcome {
            new.redirect_status = status;
        }
        new.last_seen = new.last_seen.max(day);
        new.history.insert(day);
        changes.push((old, new));
    }
    Ok(changes)
}

/// Changes made by a crawl older than the one applied: the links it shows get its day in
/// their history and, if earlier, as their discovery date. Nothing else changes. As with
/// [`newer_crawl`], changed records move out of `existing` into their changes.
pub(crate) fn older_crawl(
    crawl: &PageCrawl,
    existing: &mut BTreeMap<String, LinkRecord>,
) -> Vec<Change> {
    let day = day_of(crawl.fetched_at);
    let mut changes = Vec::new();
    for target in found_links(crawl).keys() {
        let Some(old) = existing.get(*target) else {
            continue;
        };
        if old.history.contains(day) && old.first_seen <= day {
            continue;
        }
        let old = existing.remove(*target).expect("found above");
        let mut new = old.clone();
        new.history.insert(day);
        new.first_seen = new.first_seen.min(day);
        changes.push((Some(old), new));
    }
    changes
}

fn top(topics: &[(String, u8)], n: usize) -> Vec<(String, u8)> {
    topics.iter().take(n).cloned().collect()
}

/// Live out-links of a page as one crawl shows them.
fn page_outlinks(page: &str, found: &BTreeMap<&str, Cow<'_, OutLink>>) -> SourceOutlinks {
    let own = domain_of_url(page);
    let mut out = SourceOutlinks::default();
    let mut domains = HashSet::new();
    for target in found.keys() {
        let d = domain_of_url(target);
        if d == own {
            out.internal += 1;
        } else {
            out.external += 1;
            domains.insert(d);
        }
    }
    out.external_domains = domains.len() as u32;
    out
}

/// The links a crawl shows, one per target (the first occurrence wins), borrowed from
/// it; a redirect shows exactly one, to its `Location`.
pub(crate) fn found_links(crawl: &PageCrawl) -> BTreeMap<&str, Cow<'_, OutLink>> {
    let mut found = BTreeMap::new();
    match &crawl.outcome {
        CrawlOutcome::Html { links } => {
            for l in links {
                found.entry(l.target.as_str()).or_insert(Cow::Borrowed(l));
            }
        }
        CrawlOutcome::Redirect { location, .. } => {
            let link = OutLink {
                target: location.clone(),
                kind: LinkKind::Redirect,
                ..Default::default()
            };
            found.insert(location.as_str(), Cow::Owned(link));
        }
        _ => {}
    }
    found
}

/// The record a link had, rebuilt from its `links` row's summary for a newer `crawl` of
/// its source that shows it again as `link`: `None` unless the crawl describes the link
/// as the record did and the record is live, the only case where [`newer_crawl`] makes
/// of it no more than a link seen again (so its flows, topics and out-link counts, which
/// that overwrites, are left out).
pub(crate) fn seen_before(
    crawl: &PageCrawl,
    link: &OutLink,
    summary: &LinkSummary,
) -> Option<LinkRecord> {
    if summary.deleted {
        return None;
    }
    let mut rec = LinkRecord {
        source_url: crawl.url.clone(),
        target_url: link.target.clone(),
        ..Default::default()
    };
    describe(&mut rec, link, crawl.ip);
    if rec.description_check() != summary.check {
        return None;
    }
    rec.first_seen = summary.first_seen;
    rec.last_seen = summary.last_seen;
    rec.redirect_status = summary.redirect_status;
    rec.history = summary.history.clone();
    Some(rec)
}

/// Copies what the latest crawl says about a link into its record.
fn describe(rec: &mut LinkRecord, link: &OutLink, ip: Option<IpAddr>) {
    rec.anchor_text = link.anchor_text.clone();
    rec.alt_text = link.alt_text.clone();
    rec.kind = link.kind;
    rec.set_flag(flags::NOFOLLOW, link.nofollow);
    rec.set_flag(flags::UGC, link.ugc);
    rec.set_flag(flags::SPONSORED, link.sponsored);
    rec.set_flag(flags::ALT_TEXT, !link.alt_text.is_empty());
    rec.set_flag(
        flags::INTERNAL,
        domain_of_url(&rec.source_url) == domain_of_url(&rec.target_url),
    );
    rec.source_ip = ip.or(rec.source_ip);
}
