//! Reseller commands (Linkbase's own, free): a reseller creates sub-accounts for its
//! customers, gives each an allowance carved out of its own, hands out their keys, and
//! reads their usage. A reseller only ever sees and touches its own sub-accounts.

use crate::envelope::Reply;
use crate::error::ApiError;
use crate::metering::Caller;
use crate::params::Params;
use crate::row::{table_row, Row};
use accounts::{Account, NewAccount, Units};

const ALLOWANCE_PARAMS: [&str; 3] = [
    "IndexItemInfoResUnits",
    "AnalysisResUnits",
    "RetrievalResUnits",
];

fn store_error(e: accounts::Error) -> ApiError {
    ApiError::new(e.code(), e.to_string())
}

/// The calling account, which must be a reseller using its own key.
fn reseller(caller: &Caller<'_>) -> Result<Account, ApiError> {
    let account = caller
        .accounts
        .account(caller.principal.account)
        .map_err(store_error)?;
    if !account.reseller || caller.principal.app.is_some() {
        return Err(ApiError::new(
            "NotAReseller",
            "only a reseller account, with its own API key, can manage sub-accounts",
        ));
    }
    Ok(account)
}

/// One of the reseller's sub-accounts, named by `AccountID`.
fn sub_account(caller: &Caller<'_>, p: &Params) -> Result<(Account, Account), ApiError> {
    let reseller = reseller(caller)?;
    let id = p.int("AccountID", 0)?;
    let child = caller.accounts.account(id).ok();
    match child {
        Some(c) if c.parent == Some(reseller.id) => Ok((reseller, c)),
        // A sibling or a stranger looks the same as an account that does not exist.
        _ => Err(store_error(accounts::Error::NotYourSubAccount {
            reseller: reseller.id,
            child: id,
        })),
    }
}

fn allowance(p: &Params, default: Units) -> Result<Units, ApiError> {
    let get = |name: &str, default: u64| -> Result<u64, ApiError> {
        let v = p.int(name, default as i64)?;
        u64::try_from(v).map_err(|_| {
            ApiError::new(
                "InvalidParameter",
                format!("parameter '{name}' must not be negative"),
            )
        })
    };
    Ok(Units {
        index_item_info: get(ALLOWANCE_PARAMS[0], default.index_item_info)?,
        analysis: get(ALLOWANCE_PARAMS[1], default.analysis)?,
        retrieval: get(ALLOWANCE_PARAMS[2], default.retrieval)?,
    })
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

table_row! {
    /// The `SubAccount` row of a new sub-account, with its first key (shown once).
    pub struct SubAccountRow {
        account_id: i64 = "AccountID",
        name: String = "Name",
        index_item_info: i64 = "IndexItemInfoResUnits",
        analysis: i64 = "AnalysisResUnits",
        retrieval: i64 = "RetrievalResUnits",
        api_key: String = "APIKey",
    }
}

table_row! {
    /// The `SubAccountKey` row: a further key of a sub-account.
    pub struct SubAccountKeyRow {
        account_id: i64 = "AccountID",
        key_id: i64 = "KeyID",
        api_key: String = "APIKey",
    }
}

table_row! {
    /// A `SubAccounts` row: allowance, use and what remains this period.
    pub struct SubAccountsRow {
        account_id: i64 = "AccountID",
        name: String = "Name",
        index_item_info: i64 = "IndexItemInfoResUnits",
        analysis: i64 = "AnalysisResUnits",
        retrieval: i64 = "RetrievalResUnits",
        used_index_item_info: i64 = "UsedIndexItemInfoResUnits",
        used_analysis: i64 = "UsedAnalysisResUnits",
        used_retrieval: i64 = "UsedRetrievalResUnits",
        remaining_index_item_info: i64 = "RemainingIndexItemInfoResUnits",
        remaining_analysis: i64 = "RemainingAnalysisResUnits",
        remaining_retrieval: i64 = "RemainingRetrievalResUnits",
        period_starts: String = "PeriodStarts",
        period_expires: String = "PeriodExpires",
    }
}

/// CreateSubAccount: `Name` and the three allowances; answers with the new account and
/// its first API key (shown this once).
pub fn create_sub_account(caller: &Caller<'_>, p: &Params) -> Result<Reply, ApiError> {
    let reseller = reseller(caller)?;
    let new = NewAccount {
        name: p.required("Name")?.to_string(),
        parent: Some(reseller.id),
        reseller: false,
        allowance: allowance(p, Units::default())?,
        period_days: p.int("PeriodDays", reseller.period_days)?,
    };
    let account = caller.accounts.create_account(&new).map_err(store_error)?;
    let (_, key) = caller
        .accounts
        .create_key(account.id, &[])
        .map_err(store_error)?;
    let mut t = SubAccountRow::table("SubAccount");
    t.add(SubAccountRow {
        account_id: account.id,
        name: account.name.clone(),
        index_item_info: int(account.allowance.index_item_info),
        analysis: int(account.allowance.analysis),
        retrieval: int(account.allowance.retrieval),
        api_key: key,
    });
    let mut reply = Reply::ok();
    reply.tables.push(t);
    Ok(reply)
}

/// CreateSubAccountKey: a further API key for one of the reseller's sub-accounts.
pub fn create_sub_account_key(caller: &Caller<'_>, p: &Params) -> Result<Reply, ApiError> {
    let (_, child) = sub_account(caller, p)?;
    let (info, key) = caller
        .accounts
        .create_key(child.id, &[])
        .map_err(store_error)?;
    let mut t = SubAccountKeyRow::table("SubAccountKey");
    t.add(SubAccountKeyRow {
        account_id: child.id,
        key_id: info.id,
        api_key: key,
    });
    let mut reply = Reply::ok();
    reply.tables.push(t);
    Ok(reply)
}

/// SetSubAccountAllowance: new allowances for one sub-account (missing ones unchanged).
pub fn set_sub_account_allowance(caller: &Caller<'_>, p: &Params) -> Result<Reply, ApiError> {
    let (_, child) = sub_account(caller, p)?;
    let units = allowance(p, child.allowance)?;
    caller
        .accounts
        .set_allowance(child.id, units)
        .map_err(store_error)?;
    get_sub_accounts(caller)
}

/// GetSubAccounts: every sub-account with its allowance, use and what remains this
/// period.
pub fn get_sub_accounts(caller: &Caller<'_>) -> Result<Reply, ApiError> {
    let reseller = reseller(caller)?;
    let mut t = SubAccountsRow::table("SubAccounts");
    for child in caller
        .accounts
        .accounts(Some(reseller.id))
        .map_err(store_error)?
    {
        let u = caller.accounts.usage(child.id).map_err(store_error)?;
        t.add(SubAccountsRow {
            account_id: child.id,
            name: child.name.clone(),
            index_item_info: int(child.allowance.index_item_info),
            analysis: int(child.allowance.analysis),
            retrieval: int(child.allowance.retrieval),
            used_index_item_info: int(u.used.index_item_info),
            used_analysis: int(u.used.analysis),
            used_retrieval: int(u.used.retrieval),
            remaining_index_item_info: int(u.remaining.index_item_info),
            remaining_analysis: int(u.remaining.analysis),
            remaining_retrieval: int(u.remaining.retrieval),
            period_starts: crate::envelope::date_time(u.period.0),
            period_expires: crate::envelope::date_time(u.period.1),
        });
    }
    let mut reply = Reply::ok();
    reply.tables.push(t);
    Ok(reply)
}
