//! `linkbase keys`: the operator's commands for accounts, API keys, OpenApps and tokens.
//! Secrets are printed alone on standard output (once: only their digests are kept), so
//! scripts can capture them; explanations go to standard error.

use accounts::{Accounts, IpRange, NewAccount, Units};
use anyhow::Result;
use clap::{Args, Subcommand};
use indexes::DataDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct KeysArgs {
    #[arg(long)]
    data: PathBuf,
    #[command(subcommand)]
    action: Action,
}

#[derive(Args)]
struct AllowanceArgs {
    /// IndexItemInfo units per period (GetIndexItemInfo, one per item).
    #[arg(long)]
    index_item_info: Option<u64>,
    /// Analysis units per period.
    #[arg(long)]
    analysis: Option<u64>,
    /// Retrieval units per period (rows returned or exported).
    #[arg(long)]
    retrieval: Option<u64>,
}

impl AllowanceArgs {
    fn over(&self, base: Units) -> Units {
        Units {
            index_item_info: self.index_item_info.unwrap_or(base.index_item_info),
            analysis: self.analysis.unwrap_or(base.analysis),
            retrieval: self.retrieval.unwrap_or(base.retrieval),
        }
    }
}

#[derive(Subcommand)]
enum Action {
    /// Create an account (or a reseller's sub-account); prints its id.
    AccountCreate {
        #[arg(long)]
        name: String,
        /// The reseller account this sub-account's allowance is carved from.
        #[arg(long)]
        parent: Option<i64>,
        /// The account may create sub-accounts.
        #[arg(long)]
        reseller: bool,
        #[command(flatten)]
        allowance: AllowanceArgs,
        /// Length of a subscription period; allowances renew at each period's start.
        #[arg(long, default_value_t = 30)]
        period_days: i64,
    },
    /// List accounts (or one reseller's sub-accounts).
    AccountList {
        #[arg(long)]
        parent: Option<i64>,
    },
    /// Change an account's allowances per period.
    Allowance {
        #[arg(long)]
        account: i64,
        #[command(flatten)]
        allowance: AllowanceArgs,
    },
    /// Units used and left this period, and per sub-account for a reseller.
    Usage {
        #[arg(long)]
        account: i64,
    },
    /// Create an API key for an account; prints the key (shown once).
    Create {
        #[arg(long)]
        account: i64,
        /// Allow only these addresses or CIDR ranges (repeatable).
        #[arg(long = "ip")]
        ips: Vec<IpRange>,
    },
    /// List keys (never the secrets).
    List {
        #[arg(long)]
        account: Option<i64>,
    },
    /// Replace a key with a new one; prints the new key. The old key stops working after
    /// the grace period.
    Cycle {
        #[arg(long)]
        key: i64,
        /// How long the old key keeps working: 0, 90s, 30m, 12h, 7d.
        #[arg(long, default_value = "0", value_parser = parse_duration)]
        grace: i64,
    },
    /// Revoke a key at once.
    Revoke {
        #[arg(long)]
        key: i64,
    },
    /// Restrict a key to addresses or CIDR ranges; with no --ip, lift the restriction.
    Restrict {
        #[arg(long)]
        key: i64,
        #[arg(long = "ip")]
        ips: Vec<IpRange>,
    },
    /// Register an OpenApp for a developer's account; prints its private key (shown once).
    AppRegister {
        #[arg(long)]
        account: i64,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "")]
        publisher: String,
        /// Where the grant page sends users back with their access token.
        #[arg(long)]
        redirect_uri: String,
    },
    /// List OpenApps.
    AppList,
    /// Withdraw an OpenApp: its private key and all its tokens stop working.
    AppRevoke {
        #[arg(long)]
        app: i64,
    },
    /// Grant an OpenApp access to an account (what the grant page does); prints the token.
    Grant {
        #[arg(long)]
        app: i64,
        #[arg(long)]
        account: i64,
        /// Token lifetime: 90s, 30m, 12h, 90d.
        #[arg(long, default_value = "90d", value_parser = parse_duration)]
        ttl: i64,
    },
    /// List access tokens (never the secrets).
    Tokens {
        #[arg(long)]
        app: Option<i64>,
        #[arg(long)]
        account: Option<i64>,
    },
    /// Revoke an access token.
    TokenRevoke {
        #[arg(long)]
        token: i64,
    },
}

/// Seconds in `0`, `45s`, `30m`, `12h` or `7d`.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 90s, 30m, 12h or 7d"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use s, m, h or d)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{s:?} is too long"))
}

/// `yyyy-mm-dd HH:MM` UTC, or `-`.
fn when(t: Option<i64>) -> String {
    t.map_or_else(
        || "-".into(),
        |t| {
            let s = t.rem_euclid(86_400);
            format!(
                "{} {:02}:{:02}",
                linkstore::format_day(t.div_euclid(86_400) as u32),
                s / 3600,
                s / 60 % 60
            )
        },
    )
}

fn print_units(label: &str, u: Units) {
    outln!(
        "{label:<10} index item info {:>14}  analysis {:>16}  retrieval {:>14}",
        u.index_item_info,
        u.analysis,
        u.retrieval
    );
}

fn print_usage(store: &Accounts, account: i64) -> Result<()> {
    let u = store.usage(account)?;
    outln!(
        "account {} {:?}{} period {} to {}",
        u.account.id,
        u.account.name,
        if u.account.reseller {
            " (reseller)"
        } else {
            ""
        },
        when(Some(u.period.0)),
        when(Some(u.period.1))
    );
    print_units("allowance", u.account.allowance);
    print_units("used", u.used);
    print_units("remaining", u.remaining);
    Ok(())
}

pub fn run(args: KeysArgs) -> Result<()> {
    let store = Accounts::open(&DataDir::new(&args.data).accounts_path())?;
    match args.action {
        Action::AccountCreate {
            name,
            parent,
            reseller,
            allowance,
            period_days,
        } => {
            let a = store.create_account(&NewAccount {
                name,
                parent,
                reseller,
                allowance: allowance.over(Units::default()),
                period_days,
            })?;
            eprintln!("created account {} {:?}", a.id, a.name);
            outln!("{}", a.id);
        }
        Action::AccountList { parent } => {
            outln!("id\tparent\treseller\tindex_item_info\tanalysis\tretrieval\tperiod_days\tname");
            for a in store.accounts(parent)? {
                outln!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    a.id,
                    a.parent.map_or_else(|| "-".into(), |p| p.to_string()),
                    u8::from(a.reseller),
                    a.allowance.index_item_info,
                    a.allowance.analysis,
                    a.allowance.retrieval,
                    a.period_days,
                    a.name
                );
            }
        }
        Action::Allowance { account, allowance } => {
            let current = store.account(account)?.allowance;
            store.set_allowance(account, allowance.over(current))?;
            print_usage(&store, account)?;
        }
        Action::Usage { account } => {
            print_usage(&store, account)?;
            for child in store.accounts(Some(account))? {
                outln!();
                print_usage(&store, child.id)?;
            }
        }
        Action::Create { account, ips } => {
            let (k, secret) = store.create_key(account, &ips)?;
            eprintln!(
                "key {} for account {account}; shown once, only its digest is kept",
                k.id
            );
            outln!("{secret}");
        }
        Action::List { account } => {
            outln!("id\taccount\tcreated\texpires\trevoked\treplaced_by\tallowed_ips");
            for k in store.keys(account)? {
                let ips: Vec<String> = k.allowed_ips.iter().map(ToString::to_string).collect();
                outln!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    k.id,
                    k.account,
                    when(Some(k.created)),
                    when(k.expires),
                    when(k.revoked),
                    k.replaced_by.map_or_else(|| "-".into(), |r| r.to_string()),
                    if ips.is_empty() {
                        "any".into()
                    } else {
                        ips.join(",")
                    }
                );
            }
        }
        Action::Cycle { key, grace } => {
            let (k, secret) = store.cycle_key(key, grace)?;
            eprintln!(
                "key {key} replaced by key {}; the old key works for {grace} s more",
                k.id
            );
            outln!("{secret}");
        }
        Action::Revoke { key } => {
            store.revoke_key(key)?;
            eprintln!("key {key} revoked");
        }
        Action::Restrict { key, ips } => {
            let k = store.restrict_key(key, &ips)?;
            eprintln!(
                "key {key} allowed from: {}",
                if k.allowed_ips.is_empty() {
                    "any address".into()
                } else {
                    k.allowed_ips
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
        Action::AppRegister {
            account,
            name,
            publisher,
            redirect_uri,
        } => {
            let (app, secret) = store.register_app(account, &name, &publisher, &redirect_uri)?;
            eprintln!(
                "OpenApp {} {:?} registered; its private key follows, shown once. Users grant it access at /openapp/authorize?app={}",
                app.id, app.name, app.id
            );
            outln!("{secret}");
        }
        Action::AppList => {
            outln!("id\taccount\tcreated\trevoked\tredirect_uri\tname\tpublisher");
            for a in store.apps()? {
                outln!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    a.id,
                    a.account,
                    when(Some(a.created)),
                    when(a.revoked),
                    a.redirect_uri,
                    a.name,
                    a.publisher
                );
            }
        }
        Action::AppRevoke { app } => {
            store.revoke_app(app)?;
            eprintln!("OpenApp {app} revoked with all its tokens");
        }
        Action::Grant { app, account, ttl } => {
            let (t, secret) = store.grant(app, account, ttl)?;
            eprintln!(
                "token {} lets OpenApp {app} act for account {account} until {}",
                t.id,
                when(Some(t.expires))
            );
            outln!("{secret}");
        }
        Action::Tokens { app, account } => {
            outln!("id\tapp\taccount\tcreated\texpires\trevoked");
            for t in store.tokens(app, account)? {
                outln!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    t.id,
                    t.app,
                    t.account,
                    when(Some(t.created)),
                    when(Some(t.expires)),
                    when(t.revoked)
                );
            }
        }
        Action::TokenRevoke { token } => {
            store.revoke_token(token)?;
            eprintln!("token {token} revoked");
        }
    }
    Ok(())
}

/// Warns that a server without accounts answers nobody, naming the commands that fix it
/// (they work while the server runs).
pub fn warn_if_no_accounts(store: &Accounts, data: &std::path::Path) -> Result<()> {
    if store.accounts(None)?.is_empty() {
        eprintln!(
            "warning: no accounts in {}: create one with `linkbase keys --data {} account-create --name NAME --index-item-info N --analysis N --retrieval N`, then a key with `linkbase keys --data {} create --account 1`",
            DataDir::new(data).accounts_path().display(),
            data.display(),
            data.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("45"), Ok(45));
        assert_eq!(parse_duration("30m"), Ok(1800));
        assert_eq!(parse_duration("12h"), Ok(43_200));
        assert_eq!(parse_duration("7d"), Ok(604_800));
        assert!(parse_duration("7w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("99999999999999999d").is_err());
    }
}
