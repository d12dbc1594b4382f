//! The commands: parameters in, a [`Reply`] out, one module per command family. Every
//! command reads one index, chosen by `datasource` (`historic` by default), through one
//! [`linkstore::ReadView`], and declares its tables' rows once ([`crate::row`]).

mod anchors;
mod backlinks;
mod command;
mod domain_facts;
mod filters;
mod history;
mod hosted_domains;
mod item_info;
mod link_profile;
mod new_lost;
mod ref_domain_info;
mod ref_domains;
mod subscription;
mod top_backlinks;
mod top_pages;
mod topics;

pub use command::Command;
pub use item_info::InfoRowMemo;

use crate::context::Context;
use crate::envelope::Reply;
use crate::error::ApiError;
use crate::metering::{self, Caller};
use crate::params::Params;
use linkstore::{parse_day, Item};

/// Most items one GetIndexItemInfo or GetRefDomains request may name.
pub const MAX_ITEMS: usize = 100;

/// Runs one command for `caller` and charges what it cost. A command that fails, or that
/// the caller cannot afford, charges nothing.
pub fn execute(
    ctx: &std::sync::Arc<Context>,
    caller: &Caller<'_>,
    command: Command,
    p: &Params,
) -> Result<Reply, ApiError> {
    let _ticket = if command.is_heavy() {
        caller.can_pay(command.least_cost())?;
        Some(ctx.admission.enter(caller.principal.account)?)
    } else {
        None
    };
    let mut reply = match command {
        Command::DownloadBackLinks => crate::downloads::download_back_links(ctx, caller, p),
        Command::DownloadRefDomainBackLinks => {
            crate::downloads::download_ref_domain_back_links(ctx, caller, p)
        }
        Command::GetDownloadsList => crate::downloads::get_downloads_list(ctx, caller, p),
        Command::DeleteDownloads => crate::downloads::delete_downloads(ctx, caller, p),
        Command::GetIndexItemInfo => item_info::get_index_item_info(ctx, p),
        Command::GetBackLinkData => backlinks::get_back_link_data(ctx, p),
        Command::GetRefDomains => ref_domains::get_ref_domains(ctx, p),
        Command::GetAnchorText => anchors::get_anchor_text(ctx, p),
        Command::GetNewLostBackLinks => new_lost::get_new_lost_back_links(ctx, p),
        Command::GetNewLostBackLinkCalendar => new_lost::get_new_lost_back_link_calendar(ctx, p),
        Command::GetTopics => topics::get_topics(ctx, p),
        Command::GetTopPages => top_pages::get_top_pages(ctx, p),
        Command::GetRefDomainInfo => ref_domain_info::get_ref_domain_info(ctx, p),
        Command::GetBackLinksHistory => history::get_back_links_history(ctx, p),
        Command::GetTopBackLinks => top_backlinks::get_top_back_links(ctx, p),
        Command::GetLinkProfile => link_profile::get_link_profile(ctx, p),
        Command::GetHostedDomains => hosted_domains::get_hosted_domains(ctx, p),
        Command::GetSubscriptionInfo => subscription::get_subscription_info(ctx, caller, p),
        Command::GetIndexStats => subscription::get_index_stats(ctx, p),
        Command::CreateSubAccount => crate::resellers::create_sub_account(caller, p),
        Command::SetSubAccountAllowance => crate::resellers::set_sub_account_allowance(caller, p),
        Command::GetSubAccounts => crate::resellers::get_sub_accounts(caller),
        Command::CreateSubAccountKey => crate::resellers::create_sub_account_key(caller, p),
    }?;
    if let Some(cost) = command.cost(&reply) {
        match caller.charge(&mut reply, cost) {
            Err(e) if e.code == "InsufficientIndexItemInfoUnits" => {
                match metering::failover(p, cost)? {
                    Some(other) => caller.charge(&mut reply, other)?,
                    None => return Err(e),
                }
            }
            charged => charged?,
        }
    }
    if caller.sandbox {
        reply.global("Sandbox", 1);
    }
    Ok(reply)
}

fn internal(e: linkstore::Error) -> ApiError {
    ApiError::new("InternalError", e.to_string())
}

/// A batched read in which repeated items are read once (backlinks of one URL share a
/// target; links from one domain share a domain).
fn read_unique<T: Clone>(
    items: &[Item],
    read: impl Fn(&[Item]) -> linkstore::Result<Vec<Option<T>>>,
) -> Result<Vec<Option<T>>, ApiError> {
    let mut index: std::collections::HashMap<&Item, usize> = Default::default();
    let mut unique: Vec<Item> = Vec::new();
    let slots: Vec<usize> = items
        .iter()
        .map(|i| {
            *index.entry(i).or_insert_with(|| {
                unique.push(i.clone());
                unique.len() - 1
            })
        })
        .collect();
    let values = read(&unique).map_err(internal)?;
    Ok(slots.into_iter().map(|s| values[s].clone()).collect())
}

fn parse_item(raw: &str, param: &str) -> Result<Item, ApiError> {
    Item::parse(raw).map_err(|e| ApiError::new("InvalidItem", format!("{param}: {e}")))
}

/// The number of items a request names: `items`, or else how many of `item0..` are
/// present. Refuses none and more than `max`.
fn item_count(p: &Params, max: usize) -> Result<usize, ApiError> {
    let count = match p.get("items") {
        Some(_) => p.int("items", 0)?,
        None => (0..=max as i64)
            .take_while(|i| p.get(&format!("item{i}")).is_some())
            .count() as i64,
    };
    if count <= 0 {
        return Err(ApiError::new(
            "MissingParameter",
            "parameter 'item0' is required",
        ));
    }
    if count as usize > max {
        return Err(ApiError::new(
            "TooManyItems",
            format!("at most {max} items per request, got {count}"),
        ));
    }
    Ok(count as usize)
}

/// `items` + `item0..`, or just `item0..` when `items` is absent; every item must parse.
fn items(p: &Params) -> Result<Vec<(String, Item)>, ApiError> {
    items_up_to(p, MAX_ITEMS)
}

/// [`items`] with another limit than [`MAX_ITEMS`].
fn items_up_to(p: &Params, max: usize) -> Result<Vec<(String, Item)>, ApiError> {
    (0..item_count(p, max)?)
        .map(|i| {
            let name = format!("item{i}");
            let raw = p.required(&name)?;
            Ok((raw.to_string(), parse_item(raw, &name)?))
        })
        .collect()
}

/// An optional text parameter, trimmed; empty counts as absent.
fn text_param<'a>(p: &'a Params, name: &str) -> Option<&'a str> {
    p.get(name).map(str::trim).filter(|s| !s.is_empty())
}

/// An optional date parameter under any of `names` (`yyyy-mm-dd`).
fn date_param(p: &Params, names: &[&str]) -> Result<Option<u32>, ApiError> {
    for n in names {
        if let Some(v) = text_param(p, n) {
            return parse_day(v).map(Some).ok_or_else(|| {
                ApiError::new(
                    "InvalidDate",
                    format!("parameter '{n}' must be a date yyyy-mm-dd, not {v:?}"),
                )
            });
        }
    }
    Ok(None)
}

/// The registered domain of a URL's host (the host itself when it has none).
fn domain_of(url: &str) -> String {
    let host = linkstore::host_of(url);
    linkstore::root_domain(host).unwrap_or(host).to_string()
}

/// `LastCrawlResult`: how the last fetch of a page went.
fn crawl_result(page: &linkstore::PageState) -> String {
    match page.last_status {
        200..=299 => "DownloadedSuccessfully".into(),
        st => format!("HttpStatus{st}"),
    }
}

/// The `TLD` column: everything after a domain's first label.
fn psl_suffix(domain: &str) -> String {
    domain
        .split_once('.')
        .map_or(domain, |(_, s)| s)
        .to_string()
}
