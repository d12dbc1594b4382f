//! Resource units: who pays, and the charges (Majestic's published ones where it has
//! them) that `commands::Command::cost` and the item info columns use.

use crate::envelope::Reply;
use crate::error::ApiError;
use crate::params::Params;
use accounts::{Accounts, ChargeError, Principal, UnitKind, Units};

/// Analysis units of GetBackLinkData, GetNewLostBackLinks, GetTopPages, GetTopBackLinks
/// and GetHostedDomains.
pub const BACKLINK_ANALYSIS: u64 = 5_000;
/// Analysis units of GetRefDomains, GetAnchorText, GetTopics, GetRefDomainInfo and
/// GetNewLostBackLinkCalendar.
pub const SUMMARY_ANALYSIS: u64 = 1_000;
/// Analysis units of GetLinkProfile.
pub const LINK_PROFILE_ANALYSIS: u64 = 500;

/// `DownloadBacklinksAnalysisResUnitsCost`: max(25,000, ExtBackLinks + IndexedURLs).
pub fn download_analysis(ext_backlinks: i64, indexed_urls: i64) -> i64 {
    (ext_backlinks + indexed_urls).max(25_000)
}

/// `DownloadRefDomainBacklinksAnalysisResUnitsCost`: 50,000 + 20 per referring domain.
pub fn download_ref_domain_analysis(ref_domains: i64) -> i64 {
    50_000 + 20 * ref_domains
}

/// The globals a charged reply carries for each kind of unit, `(charged, remaining)`:
/// IndexItemInfo, Analysis, Retrieval.
pub const UNIT_GLOBALS: [(&str, &str); 3] = [
    (
        "ChargedIndexItemInfoResUnits",
        "RemainingIndexItemInfoResUnits",
    ),
    ("ChargedAnalysisResUnits", "RemainingAnalysisResUnits"),
    ("ChargedRetrievalResUnits", "RemainingRetrievalResUnits"),
];

/// Who a request acts for, and whether it pays.
pub struct Caller<'a> {
    pub principal: Principal,
    pub accounts: &'a Accounts,
    /// Sandbox requests are never charged.
    pub sandbox: bool,
}

impl Caller<'_> {
    /// Refuses, with the code a charge would give, a caller who could not pay `least`
    /// now (its own allowance and every reseller's above it): checked before a heavy
    /// command runs, so a request that will be refused does no work. The charge after the
    /// work stays the one that counts.
    pub(crate) fn can_pay(&self, least: Units) -> Result<(), ApiError> {
        if self.sandbox || least == Units::default() {
            return Ok(());
        }
        let remaining = self
            .accounts
            .remaining(self.principal.account)
            .map_err(|e| ApiError::new("InternalError", e.to_string()))?;
        for kind in [
            UnitKind::IndexItemInfo,
            UnitKind::Analysis,
            UnitKind::Retrieval,
        ] {
            if least.get(kind) > remaining.get(kind) {
                let refusal = accounts::Insufficient {
                    kind,
                    cost: least.get(kind),
                    remaining: remaining.get(kind),
                    by_reseller: false,
                };
                return Err(ApiError::new(refusal.code(), refusal.to_string()));
            }
        }
        Ok(())
    }

    /// Charges `cost` to the caller (and any reseller above it) and writes the
    /// `Charged*`/`Remaining*` globals, or refuses with the `Insufficient*` code and
    /// charges nothing.
    pub(crate) fn charge(&self, reply: &mut Reply, cost: Units) -> Result<(), ApiError> {
        if self.sandbox {
            return Ok(());
        }
        let balance = self
            .accounts
            .charge(self.principal.account, cost)
            .map_err(|e| match e {
                ChargeError::Insufficient(i) => ApiError::new(i.code(), i.to_string()),
                ChargeError::Store(e) => ApiError::new("InternalError", e.to_string()),
            })?;
        let (c, r) = (&balance.charged, &balance.remaining);
        for (names, charged, remaining) in [
            (UNIT_GLOBALS[0], c.index_item_info, r.index_item_info),
            (UNIT_GLOBALS[1], c.analysis, r.analysis),
            (UNIT_GLOBALS[2], c.retrieval, r.retrieval),
        ] {
            reply.global(names.0, to_int(charged));
            reply.global(names.1, to_int(remaining));
        }
        Ok(())
    }
}

fn to_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// GetIndexItemInfo paid in analysis and retrieval units when index item info units run
/// out and the request allows it (`EnableResourceUnitFailover=1`): 500 per call, 50 per
/// item, and one retrieval unit per item.
pub(crate) fn failover(p: &Params, cost: Units) -> Result<Option<Units>, ApiError> {
    if p.int("EnableResourceUnitFailover", 0)? != 1 || cost.index_item_info == 0 {
        return Ok(None);
    }
    Ok(Some(Units {
        analysis: 500 + 50 * cost.index_item_info,
        retrieval: cost.index_item_info,
        ..Units::default()
    }))
}
