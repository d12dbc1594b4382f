//! GetHostedDomains: the domains served from the same address, and from the same /24
//! (IPv4) or /48 (IPv6) subnet, as a domain (or a given address).

use super::{internal, parse_item};
use crate::context::Context;
use crate::envelope::{Reply, Table};
use crate::error::ApiError;
use crate::params::Params;
use crate::row::{table_row, Row, Topics};
use linkstore::{ip_member, subnet_of_member, Item, ReadView};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Most domains per table (Majestic's limit).
pub const MAX_HOSTED_DOMAINS: i64 = 100;
/// Most (address, domain) pairs read per table: they are all ranked, so the work is
/// bounded before it runs; `TotalDomains` is `-1` beyond.
pub const HOSTED_SCAN_LIMIT: usize = 10_000;

table_row! {
    /// A `DomainsOnIP` or `DomainsOnSubnet` row.
    pub struct HostedDomainRow {
        domain: String = "Domain",
        ip_address: String = "IPAddress",
        ref_domains: i64 = "RefDomains",
        ext_backlinks: i64 = "ExtBackLinks",
        citation_flow: i64 = "CitationFlow",
        trust_flow: i64 = "TrustFlow",
        topics: Topics<3> = "TopicalTrustFlow",
    }
}

/// The `/24` or `/48` prefix of an address in its member spelling.
fn subnet_prefix(ip: IpAddr) -> String {
    subnet_of_member(&ip_member(ip)).to_string()
}

/// One table of domains under an address prefix: the strongest `max` by Trust Flow, then
/// external backlinks, one row per domain (its address with the most links).
fn table(view: &ReadView, name: &str, prefix: &str, max: usize) -> Result<Table, ApiError> {
    let found = view
        .hosted_domains(prefix, HOSTED_SCAN_LIMIT + 1)
        .map_err(internal)?;
    let complete = found.len() <= HOSTED_SCAN_LIMIT;
    let mut best: BTreeMap<String, (String, i64)> = BTreeMap::new();
    for (domain, ip, links) in found.into_iter().take(HOSTED_SCAN_LIMIT) {
        let e = best.entry(domain).or_insert((ip.clone(), 0));
        if links > e.1 {
            *e = (ip, links);
        }
    }
    let items: Vec<Item> = best.keys().map(|d| Item::domain(d.clone())).collect();
    let counters = view.counters_many(&items).map_err(internal)?;
    let metrics = view.metrics_many(&items).map_err(internal)?;
    let mut rows: Vec<HostedDomainRow> = best
        .into_iter()
        .zip(counters.into_iter().zip(metrics))
        .map(|((domain, (ip, _)), (c, m))| {
            let (c, m) = (c.unwrap_or_default(), m.unwrap_or_default());
            HostedDomainRow {
                domain,
                ip_address: ip,
                ref_domains: c.ref_domains,
                ext_backlinks: c.ext_backlinks,
                citation_flow: i64::from(m.citation_flow),
                trust_flow: i64::from(m.trust_flow),
                topics: Topics(m.topics),
            }
        })
        .collect();
    let total = rows.len();
    let (total_links, total_refs) = rows.iter().fold((0, 0), |(l, r), row| {
        (l + row.ext_backlinks, r + row.ref_domains)
    });
    rows.sort_by(|a, b| {
        (b.trust_flow, b.ext_backlinks)
            .cmp(&(a.trust_flow, a.ext_backlinks))
            .then_with(|| a.domain.cmp(&b.domain))
    });
    let mut t = HostedDomainRow::table(name);
    for row in rows.into_iter().take(max) {
        t.add(row);
    }
    t.param("MaxRefDomainTopics", 3);
    t.param("RefDomainTopicsCount", 3);
    t.param("TotalDomains", if complete { total as i64 } else { -1 });
    t.param("TotalExtBackLinks", total_links);
    t.param("TotalRefDomains", total_refs);
    Ok(t)
}

pub(super) fn get_hosted_domains(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("Domain")?;
    let max = p.int("MaxDomains", 10)?;
    if !(0..=MAX_HOSTED_DOMAINS).contains(&max) {
        return Err(ApiError::new(
            "InvalidParameter",
            format!("MaxDomains must be 0 to {MAX_HOSTED_DOMAINS}"),
        ));
    }
    // An address as given, or the one a domain's crawled pages were served from most.
    let ip: Option<IpAddr> = match raw.trim().parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            let item = parse_item(raw, "Domain")?;
            let host = linkstore::host_of(&item.name);
            let domain = linkstore::root_domain(host).unwrap_or(host);
            view.domain_addresses(domain)
                .map_err(internal)?
                .first()
                // The member spelling (IPv6 expanded) parses as an address.
                .and_then(|(ip, _)| ip.parse().ok())
        }
    };
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetHostedDomains");
    let (on_ip, on_subnet) = match ip {
        Some(ip) => {
            let member = ip_member(ip);
            let mut a = table(
                &view,
                "DomainsOnIP",
                &format!("{member}\u{1}"),
                max as usize,
            )?;
            a.param("IP", ip.to_canonical().to_string());
            let prefix = subnet_prefix(ip);
            let mut b = table(&view, "DomainsOnSubnet", &prefix, max as usize)?;
            b.param("Subnet", prefix);
            reply.global("RecommendedIP", ip.to_canonical().to_string());
            (a, b)
        }
        None => {
            reply.global("RecommendedIP", "");
            (
                HostedDomainRow::table("DomainsOnIP"),
                HostedDomainRow::table("DomainsOnSubnet"),
            )
        }
    };
    reply.tables.push(on_ip);
    reply.tables.push(on_subnet);
    Ok(reply)
}
