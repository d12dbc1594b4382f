//! Reseller commands (Linkbase's own, free): a reseller creates sub-accounts for its
//! customers, gives each an allowance carved out of its own, hands out their keys, and
//! reads their usage. A reseller only ever sees and touches its own sub-accounts.

use crate::envelope::{Reply, Table, Value};
use crate::error::ApiError;
use crate::metering::Caller;
use crate::params::Params;
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

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|c| c.to_string()).collect()
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
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
    let mut t = Table::new(
        "SubAccount",
        columns(&[
            "AccountID",
            "Name",
            ALLOWANCE_PARAMS[0],
            ALLOWANCE_PARAMS[1],
            ALLOWANCE_PARAMS[2],
            "APIKey",
        ]),
    );
    t.push(vec![
        account.id.into(),
        account.name.as_str().into(),
        int(account.allowance.index_item_info),
        int(account.allowance.analysis),
        int(account.allowance.retrieval),
        key.into(),
    ]);
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
    let mut t = Table::new("SubAccountKey", columns(&["AccountID", "KeyID", "APIKey"]));
    t.push(vec![child.id.into(), info.id.into(), key.into()]);
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
    let mut t = Table::new(
        "SubAccounts",
        columns(&[
            "AccountID",
            "Name",
            "IndexItemInfoResUnits",
            "AnalysisResUnits",
            "RetrievalResUnits",
            "UsedIndexItemInfoResUnits",
            "UsedAnalysisResUnits",
            "UsedRetrievalResUnits",
            "RemainingIndexItemInfoResUnits",
            "RemainingAnalysisResUnits",
            "RemainingRetrievalResUnits",
            "PeriodStarts",
            "PeriodExpires",
        ]),
    );
    for child in caller
        .accounts
        .accounts(Some(reseller.id))
        .map_err(store_error)?
    {
        let u = caller.accounts.usage(child.id).map_err(store_error)?;
        t.push(vec![
            child.id.into(),
            child.name.as_str().into(),
            int(child.allowance.index_item_info),
            int(child.allowance.analysis),
            int(child.allowance.retrieval),
            int(u.used.index_item_info),
            int(u.used.analysis),
            int(u.used.retrieval),
            int(u.remaining.index_item_info),
            int(u.remaining.analysis),
            int(u.remaining.retrieval),
            crate::envelope::date_time(u.period.0).into(),
            crate::envelope::date_time(u.period.1).into(),
        ]);
    }
    let mut reply = Reply::ok();
    reply.tables.push(t);
    Ok(reply)
}
