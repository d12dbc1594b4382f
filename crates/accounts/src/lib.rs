//! The account store: accounts with subscriptions and three allowances, reseller
//! sub-accounts, API keys (hashed, IP-restricted, cycled, revoked), OpenApp applications
//! and the access tokens users grant them, and exact resource-unit metering.
//!
//! One SQLite database (`DATA/accounts.sqlite`, layout in `docs/format.md`). SQLite,
//! not the link store's RocksDB, because the operator's `linkbase keys` commands and the
//! running server must both write it: SQLite's file locks let two processes share one
//! database.
//!
//! Metering (`meter.rs`) is in memory in the one process that charges (the server): a
//! charge is checked and counted under one lock and made durable by one append to a
//! journal (`journal.rs`), synced in groups and checkpointed into SQLite every second.
//! Concurrent charges never overspend, and an acknowledged charge survives `kill -9`.
//!
//! This crate knows nothing of HTTP or of the Majestic protocol: it answers "who is
//! this?" and "may they spend this?".

mod error;
mod ip;
mod journal;
mod key_cache;
mod meter;
mod secret;

pub use error::{AuthError, ChargeError, Error, Insufficient, Result};
pub use ip::IpRange;

/// A new random secret (128 bits as 32 upper-case hex digits), for tokens made outside
/// the store.
pub fn new_secret() -> Result<String> {
    secret::generate()
}

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use secret::Digest;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// `PRAGMA user_version` of the schema this build writes.
pub const SCHEMA_VERSION: i64 = 2;

/// Version 2 adds the generation of the metering journal the `usage` table is
/// checkpointed at.
const METER_TABLE: &str = "
CREATE TABLE meter (id INTEGER PRIMARY KEY CHECK (id = 0), generation INTEGER NOT NULL);
INSERT INTO meter (id, generation) VALUES (0, 0);
";

const SCHEMA: &str = "
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    parent INTEGER REFERENCES accounts(id),
    reseller INTEGER NOT NULL,
    index_item_info_units INTEGER NOT NULL,
    analysis_units INTEGER NOT NULL,
    retrieval_units INTEGER NOT NULL,
    period_start INTEGER NOT NULL,
    period_days INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE INDEX accounts_parent ON accounts(parent);
CREATE TABLE usage (
    account INTEGER NOT NULL REFERENCES accounts(id),
    period INTEGER NOT NULL,
    index_item_info_units INTEGER NOT NULL,
    analysis_units INTEGER NOT NULL,
    retrieval_units INTEGER NOT NULL,
    PRIMARY KEY (account, period)
) WITHOUT ROWID;
CREATE TABLE keys (
    id INTEGER PRIMARY KEY,
    account INTEGER NOT NULL REFERENCES accounts(id),
    selector INTEGER NOT NULL,
    digest BLOB NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER,
    revoked INTEGER,
    replaced_by INTEGER,
    allowed_ips TEXT NOT NULL
);
CREATE INDEX keys_selector ON keys(selector);
CREATE TABLE apps (
    id INTEGER PRIMARY KEY,
    account INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    publisher TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    selector INTEGER NOT NULL,
    digest BLOB NOT NULL,
    created INTEGER NOT NULL,
    revoked INTEGER
);
CREATE INDEX apps_selector ON apps(selector);
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    app INTEGER NOT NULL REFERENCES apps(id),
    account INTEGER NOT NULL REFERENCES accounts(id),
    selector INTEGER NOT NULL,
    digest BLOB NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    revoked INTEGER
);
CREATE INDEX tokens_selector ON tokens(selector);
";

/// The three kinds of resource unit (product brief §1.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    IndexItemInfo,
    Analysis,
    Retrieval,
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::IndexItemInfo => "IndexItemInfo",
            UnitKind::Analysis => "Analysis",
            UnitKind::Retrieval => "Retrieval",
        })
    }
}

/// An amount of each kind of unit: an allowance, a cost, what was used or what remains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Units {
    pub index_item_info: u64,
    pub analysis: u64,
    pub retrieval: u64,
}

impl Units {
    /// The amount of one kind of unit.
    pub fn get(&self, kind: UnitKind) -> u64 {
        match kind {
            UnitKind::IndexItemInfo => self.index_item_info,
            UnitKind::Analysis => self.analysis,
            UnitKind::Retrieval => self.retrieval,
        }
    }

    fn zip(self, o: Units, f: impl Fn(u64, u64) -> u64) -> Units {
        Units {
            index_item_info: f(self.index_item_info, o.index_item_info),
            analysis: f(self.analysis, o.analysis),
            retrieval: f(self.retrieval, o.retrieval),
        }
    }

    const MAX: Units = Units {
        index_item_info: u64::MAX,
        analysis: u64::MAX,
        retrieval: u64::MAX,
    };

    pub fn is_zero(&self) -> bool {
        *self == Units::default()
    }
}

const KINDS: [UnitKind; 3] = [
    UnitKind::IndexItemInfo,
    UnitKind::Analysis,
    UnitKind::Retrieval,
];

/// An account and its subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: i64,
    pub name: String,
    /// The reseller that owns this sub-account.
    pub parent: Option<i64>,
    /// May create sub-accounts.
    pub reseller: bool,
    /// Units per subscription period.
    pub allowance: Units,
    /// Unix seconds when the first period began; periods follow back to back.
    pub period_start: i64,
    pub period_days: i64,
    pub created: i64,
}

/// The longest subscription period: longer ones could not be counted in seconds (and
/// no subscription runs for a century).
pub const MAX_PERIOD_DAYS: i64 = 36_500;

impl Account {
    fn period_seconds(&self) -> i64 {
        self.period_days.clamp(1, MAX_PERIOD_DAYS) * 86_400
    }

    /// The number of the period `now` falls in.
    fn period_at(&self, now: i64) -> i64 {
        (now - self.period_start).div_euclid(self.period_seconds())
    }

    /// Start and end (exclusive) of the period `now` falls in, Unix seconds.
    pub fn period_bounds(&self, now: i64) -> (i64, i64) {
        let start = self.period_start + self.period_at(now) * self.period_seconds();
        (start, start + self.period_seconds())
    }
}

/// What `create_account` needs.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub name: String,
    pub parent: Option<i64>,
    pub reseller: bool,
    pub allowance: Units,
    pub period_days: i64,
}

/// An account's standing in its current period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    pub account: Account,
    pub period: (i64, i64),
    pub used: Units,
    /// What the account can still spend: its own allowance less its use, and never more
    /// than any reseller above it has left.
    pub remaining: Units,
}

/// The result of a charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    pub charged: Units,
    pub remaining: Units,
}

/// An API key, as listed (the secret itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub id: i64,
    pub account: i64,
    pub created: i64,
    /// Set when the key was cycled: it keeps working until then.
    pub expires: Option<i64>,
    pub revoked: Option<i64>,
    pub replaced_by: Option<i64>,
    /// Empty: any address.
    pub allowed_ips: Vec<IpRange>,
}

/// A registered OpenApp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub id: i64,
    /// The developer's account.
    pub account: i64,
    pub name: String,
    pub publisher: String,
    /// Where the grant page sends the user back with the token.
    pub redirect_uri: String,
    pub created: i64,
    pub revoked: Option<i64>,
}

/// An access token a user granted an OpenApp (the secret itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub id: i64,
    pub app: i64,
    /// The granting user's account: the one charged.
    pub account: i64,
    pub created: i64,
    pub expires: i64,
    pub revoked: Option<i64>,
}

/// A credential as a request presents it.
#[derive(Debug, Clone, Copy)]
pub enum Credential<'a> {
    Key(&'a str),
    OpenApp {
        private_key: &'a str,
        token: &'a str,
    },
}

/// Who a request acts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal {
    /// The account that is charged.
    pub account: i64,
    /// The OpenApp acting for the account, if any.
    pub app: Option<i64>,
}

/// The account store. Cheap to share: one connection behind a mutex (SQLite serialises
/// writers anyway, and every operation is a few indexed rows).
pub struct Accounts {
    path: PathBuf,
    /// The writer: every change, and every group of charges.
    conn: Mutex<Connection>,
    /// Read-only connections for `authenticate`, so checking a credential never waits for
    /// a commit (WAL readers see the last committed state).
    readers: Mutex<Vec<Connection>>,
    meter: Arc<meter::Meter>,
    keys: key_cache::KeyCache,
    clock: Box<dyn Fn() -> i64 + Send + Sync>,
}

/// An I/O error on a file of the account store, naming the file.
pub(crate) fn io_error(at: &Path, e: std::io::Error) -> Error {
    Error::Open {
        path: at.display().to_string(),
        message: e.to_string(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn system_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn units_from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Units> {
    Ok(Units {
        index_item_info: row.get::<_, i64>(first)?.max(0) as u64,
        analysis: row.get::<_, i64>(first + 1)?.max(0) as u64,
        retrieval: row.get::<_, i64>(first + 2)?.max(0) as u64,
    })
}

const ACCOUNT_COLUMNS: &str = "id, name, parent, reseller, index_item_info_units, analysis_units, retrieval_units, period_start, period_days, created";

fn account_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Account> {
    Ok(Account {
        id: row.get(0)?,
        name: row.get(1)?,
        parent: row.get(2)?,
        reseller: row.get::<_, i64>(3)? != 0,
        allowance: units_from_row(row, 4)?,
        period_start: row.get(7)?,
        period_days: row.get(8)?,
        created: row.get(9)?,
    })
}

const KEY_COLUMNS: &str = "id, account, created, expires, revoked, replaced_by, allowed_ips";

fn key_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyInfo> {
    let ips: String = row.get(6)?;
    Ok(KeyInfo {
        id: row.get(0)?,
        account: row.get(1)?,
        created: row.get(2)?,
        expires: row.get(3)?,
        revoked: row.get(4)?,
        replaced_by: row.get(5)?,
        // Written by `restrict_key` from parsed ranges, so it parses.
        allowed_ips: ip::parse_list(&ips).unwrap_or_default(),
    })
}

const APP_COLUMNS: &str = "id, account, name, publisher, redirect_uri, created, revoked";

fn app_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<App> {
    Ok(App {
        id: row.get(0)?,
        account: row.get(1)?,
        name: row.get(2)?,
        publisher: row.get(3)?,
        redirect_uri: row.get(4)?,
        created: row.get(5)?,
        revoked: row.get(6)?,
    })
}

const TOKEN_COLUMNS: &str = "id, app, account, created, expires, revoked";

fn token_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenInfo> {
    Ok(TokenInfo {
        id: row.get(0)?,
        app: row.get(1)?,
        account: row.get(2)?,
        created: row.get(3)?,
        expires: row.get(4)?,
        revoked: row.get(5)?,
    })
}

fn account_in(conn: &Connection, id: i64) -> Result<Account> {
    conn.prepare_cached(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = ?1"
    ))?
    .query_row([id], account_from_row)
    .optional()?
    .ok_or(Error::NotFound {
        what: "account",
        id,
    })
}

impl Accounts {
    /// Opens (creating if needed) the account store at `path`.
    pub fn open(path: &Path) -> Result<Accounts> {
        Accounts::open_with_clock(path, Box::new(system_now))
    }

    /// Opens the store with a clock (Unix seconds) other than the system's: for tests of
    /// periods and expiry.
    pub fn open_with_clock(
        path: &Path,
        clock: Box<dyn Fn() -> i64 + Send + Sync>,
    ) -> Result<Accounts> {
        let open_err = |message: String| Error::Open {
            path: path.display().to_string(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        }
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL: readers never wait for the writer; synchronous=NORMAL: a commit is in the
        // operating system's hands when it returns, so it survives the process being killed.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        match version {
            0 | 1 => {
                let tx = conn.unchecked_transaction()?;
                if version == 0 {
                    tx.execute_batch(SCHEMA)?;
                }
                tx.execute_batch(METER_TABLE)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
                tx.commit()?;
            }
            SCHEMA_VERSION => {}
            v => {
                return Err(open_err(format!(
                    "schema version {v}, this build reads version {SCHEMA_VERSION}"
                )))
            }
        }
        let meter_conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        meter_conn.busy_timeout(std::time::Duration::from_secs(10))?;
        Ok(Accounts {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            readers: Mutex::new(Vec::new()),
            meter: meter::Meter::new(path, meter_conn),
            keys: key_cache::KeyCache::open(path)?,
            clock,
        })
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// A read-only connection from the pool (opened when none is free), returned on drop.
    fn reader(&self) -> Result<Reader<'_>> {
        let conn = match lock(&self.readers).pop() {
            Some(c) => c,
            None => open_read_only(&self.path)?,
        };
        Ok(Reader {
            pool: &self.readers,
            conn: Some(conn),
        })
    }

    /// Creates an account. A sub-account's allowance is carved out of its reseller's: the
    /// reseller's sub-accounts together may not be given more than the reseller has.
    pub fn create_account(&self, new: &NewAccount) -> Result<Account> {
        if new.name.trim().is_empty() {
            return Err(Error::Invalid("an account needs a name".into()));
        }
        if !(1..=MAX_PERIOD_DAYS).contains(&new.period_days) {
            return Err(Error::Invalid(format!(
                "period_days must be 1 to {MAX_PERIOD_DAYS}, not {}",
                new.period_days
            )));
        }
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(parent) = new.parent {
            check_carve_out(&tx, parent, None, new.allowance)?;
        }
        let now = self.now();
        tx.execute(
            "INSERT INTO accounts (name, parent, reseller, index_item_info_units, analysis_units, retrieval_units, period_start, period_days, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7)",
            params![
                new.name.trim(),
                new.parent,
                i64::from(new.reseller),
                to_i64(new.allowance.index_item_info),
                to_i64(new.allowance.analysis),
                to_i64(new.allowance.retrieval),
                now,
                new.period_days
            ],
        )?;
        let account = account_in(&tx, tx.last_insert_rowid())?;
        tx.commit()?;
        Ok(account)
    }

    /// Sets an account's allowance per period, keeping every reseller's carve-out whole.
    pub fn set_allowance(&self, id: i64, allowance: Units) -> Result<Account> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let account = account_in(&tx, id)?;
        if let Some(parent) = account.parent {
            check_carve_out(&tx, parent, Some(id), allowance)?;
        }
        let given = children_total(&tx, id, None)?;
        for kind in KINDS {
            if given.get(kind) > allowance.get(kind) {
                return Err(Error::Invalid(format!(
                    "account {id} has given {} {kind} units to its sub-accounts; its allowance cannot be less",
                    given.get(kind)
                )));
            }
        }
        tx.execute(
            "UPDATE accounts SET index_item_info_units = ?2, analysis_units = ?3, retrieval_units = ?4 WHERE id = ?1",
            params![
                id,
                to_i64(allowance.index_item_info),
                to_i64(allowance.analysis),
                to_i64(allowance.retrieval)
            ],
        )?;
        let account = account_in(&tx, id)?;
        tx.commit()?;
        self.meter.invalidate();
        Ok(account)
    }

    pub fn account(&self, id: i64) -> Result<Account> {
        account_in(&self.conn(), id)
    }

    /// Every account, or the sub-accounts of one reseller.
    pub fn accounts(&self, parent: Option<i64>) -> Result<Vec<Account>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE ?1 IS NULL OR parent = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([parent], account_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// An account's use and what it has left in its current period.
    pub fn usage(&self, id: i64) -> Result<Usage> {
        let account = self.account(id)?;
        let now = self.now();
        let (used, remaining) = self.meter.usage(id, now)?;
        Ok(Usage {
            period: account.period_bounds(now),
            used,
            remaining,
            account,
        })
    }

    /// What an account can still spend now (its own allowance and every reseller's
    /// above it): [`Accounts::usage`]'s `remaining`, from memory in the metering process.
    pub fn remaining(&self, id: i64) -> Result<Units> {
        Ok(self.meter.usage(id, self.now())?.1)
    }

    /// Makes this process the one that meters the store (the server does at start): the
    /// journals an earlier process left are replayed, and use is kept in memory from now
    /// on. Fails, naming the store, if another running process meters it.
    pub fn start_metering(&self) -> Result<()> {
        self.meter.start()
    }

    /// Charges `cost` to an account and every reseller above it, or to none of them. The
    /// check and the update happen under one lock, so concurrent charges never
    /// overspend; the charge is in the journal when this returns, so it survives the
    /// process being killed.
    pub fn charge(&self, id: i64, cost: Units) -> Result<Balance, ChargeError> {
        self.meter.charge(id, cost, self.now())
    }

    /// Gives back what a charge took, when the work it paid for failed: the account's and
    /// every reseller's use in the current period goes down by `cost` (never below 0).
    pub fn refund(&self, id: i64, cost: Units) -> Result<()> {
        self.meter.refund(id, cost, self.now())
    }

    /// Creates an API key for an account. The secret is returned once and never stored.
    pub fn create_key(&self, account: i64, allowed_ips: &[IpRange]) -> Result<(KeyInfo, String)> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        account_in(&tx, account)?;
        let created = insert_key(&tx, account, allowed_ips, self.now())?;
        tx.commit()?;
        Ok(created)
    }

    /// The keys of an account, or all keys.
    pub fn keys(&self, account: Option<i64>) -> Result<Vec<KeyInfo>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {KEY_COLUMNS} FROM keys WHERE ?1 IS NULL OR account = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([account], key_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Replaces a key by a new one with the same account and IP restriction. The old key
    /// works for `grace_seconds` more (0: it fails at once).
    pub fn cycle_key(&self, id: i64, grace_seconds: i64) -> Result<(KeyInfo, String)> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let old = key_in(&tx, id)?;
        if old.revoked.is_some() || old.replaced_by.is_some() {
            return Err(Error::Invalid(format!(
                "key {id} was already revoked or cycled"
            )));
        }
        let now = self.now();
        let (new, secret) = insert_key(&tx, old.account, &old.allowed_ips, now)?;
        tx.execute(
            "UPDATE keys SET expires = ?2, replaced_by = ?3 WHERE id = ?1",
            params![id, now + grace_seconds.max(0), new.id],
        )?;
        tx.commit()?;
        self.keys.changed()?;
        Ok((new, secret))
    }

    pub fn revoke_key(&self, id: i64) -> Result<KeyInfo> {
        let conn = self.conn();
        key_in(&conn, id)?;
        conn.execute(
            "UPDATE keys SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL",
            params![id, self.now()],
        )?;
        self.keys.changed()?;
        key_in(&conn, id)
    }

    /// Restricts a key to addresses in `ranges` (empty: any address).
    pub fn restrict_key(&self, id: i64, ranges: &[IpRange]) -> Result<KeyInfo> {
        let conn = self.conn();
        key_in(&conn, id)?;
        conn.execute(
            "UPDATE keys SET allowed_ips = ?2 WHERE id = ?1",
            params![id, ip::format_list(ranges)],
        )?;
        self.keys.changed()?;
        key_in(&conn, id)
    }

    /// Registers an OpenApp for a developer's account; returns its private key, once.
    pub fn register_app(
        &self,
        account: i64,
        name: &str,
        publisher: &str,
        redirect_uri: &str,
    ) -> Result<(App, String)> {
        if name.trim().is_empty() {
            return Err(Error::Invalid("an OpenApp needs a name".into()));
        }
        if !(redirect_uri.starts_with("https://") || redirect_uri.starts_with("http://")) {
            return Err(Error::Invalid(format!(
                "redirect URI {redirect_uri:?} must be an http or https URL"
            )));
        }
        let conn = self.conn();
        account_in(&conn, account)?;
        let secret = secret::generate()?;
        let digest = Digest::of(&secret);
        conn.execute(
            "INSERT INTO apps (account, name, publisher, redirect_uri, selector, digest, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![account, name.trim(), publisher.trim(), redirect_uri, digest.selector(), &digest.0[..], self.now()],
        )?;
        let app = app_in(&conn, conn.last_insert_rowid())?;
        Ok((app, secret))
    }

    pub fn app(&self, id: i64) -> Result<App> {
        app_in(&self.conn(), id)
    }

    pub fn apps(&self) -> Result<Vec<App>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached(&format!("SELECT {APP_COLUMNS} FROM apps ORDER BY id"))?;
        let rows = stmt.query_map([], app_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Revokes an OpenApp: its private key and every token granted to it stop working.
    pub fn revoke_app(&self, id: i64) -> Result<App> {
        let conn = self.conn();
        app_in(&conn, id)?;
        conn.execute(
            "UPDATE apps SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL",
            params![id, self.now()],
        )?;
        app_in(&conn, id)
    }

    /// A user's grant: an access token for `app`, bound to `account` (charged for the
    /// app's requests), valid for `ttl_seconds`. The token is returned once.
    pub fn grant(&self, app: i64, account: i64, ttl_seconds: i64) -> Result<(TokenInfo, String)> {
        if ttl_seconds < 1 {
            return Err(Error::Invalid(format!(
                "a token lifetime must be at least one second, not {ttl_seconds}"
            )));
        }
        let conn = self.conn();
        let a = app_in(&conn, app)?;
        if a.revoked.is_some() {
            return Err(Error::Invalid(format!("OpenApp {app} was revoked")));
        }
        account_in(&conn, account)?;
        let secret = secret::generate()?;
        let digest = Digest::of(&secret);
        let now = self.now();
        conn.execute(
            "INSERT INTO tokens (app, account, selector, digest, created, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![app, account, digest.selector(), &digest.0[..], now, now.saturating_add(ttl_seconds)],
        )?;
        let token = token_in(&conn, conn.last_insert_rowid())?;
        Ok((token, secret))
    }

    /// Tokens granted to an app, or by an account, or all.
    pub fn tokens(&self, app: Option<i64>, account: Option<i64>) -> Result<Vec<TokenInfo>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TOKEN_COLUMNS} FROM tokens WHERE (?1 IS NULL OR app = ?1) AND (?2 IS NULL OR account = ?2) ORDER BY id"
        ))?;
        let rows = stmt.query_map(params![app, account], token_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn revoke_token(&self, id: i64) -> Result<TokenInfo> {
        let conn = self.conn();
        token_in(&conn, id)?;
        conn.execute(
            "UPDATE tokens SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL",
            params![id, self.now()],
        )?;
        token_in(&conn, id)
    }

    /// Checks a credential presented from `client` (the peer, or the address a trusted
    /// proxy forwarded; `None` when a trusted proxy's header named no valid address).
    pub fn authenticate(
        &self,
        credential: Credential<'_>,
        client: Option<IpAddr>,
    ) -> Result<Principal, AuthError> {
        let now = self.now();
        match credential {
            Credential::Key(secret) => {
                let digest = Digest::of(secret);
                let key = match self.keys.get(&digest)? {
                    Some(key) => key,
                    None => {
                        let version = self.keys.version()?;
                        let conn = self.reader()?;
                        let id =
                            find_by_digest(&conn, "keys", &digest)?.ok_or(AuthError::UnknownKey)?;
                        let key = key_in(&conn, id)?;
                        self.keys.put(version, digest, key.clone());
                        key
                    }
                };
                if key.revoked.is_some() {
                    return Err(AuthError::KeyRevoked);
                }
                if key.expires.is_some_and(|t| now >= t) {
                    return Err(AuthError::KeyCycled);
                }
                if !key.allowed_ips.is_empty()
                    && !client.is_some_and(|ip| key.allowed_ips.iter().any(|r| r.contains(ip)))
                {
                    return Err(AuthError::IpNotAllowed(
                        client.map_or_else(|| "an unknown address".into(), |ip| ip.to_string()),
                    ));
                }
                Ok(Principal {
                    account: key.account,
                    app: None,
                })
            }
            Credential::OpenApp { private_key, token } => {
                let conn = self.reader()?;
                let id = find_by_digest(&conn, "apps", &Digest::of(private_key))?
                    .ok_or(AuthError::UnknownApp)?;
                let app = app_in(&conn, id)?;
                if app.revoked.is_some() {
                    return Err(AuthError::AppRevoked);
                }
                let id = find_by_digest(&conn, "tokens", &Digest::of(token))?
                    .ok_or(AuthError::UnknownToken)?;
                let token = token_in(&conn, id)?;
                if token.app != app.id {
                    return Err(AuthError::TokenOfAnotherApp);
                }
                if token.revoked.is_some() {
                    return Err(AuthError::TokenRevoked);
                }
                if now >= token.expires {
                    return Err(AuthError::TokenExpired);
                }
                Ok(Principal {
                    account: token.account,
                    app: Some(app.id),
                })
            }
        }
    }
}

fn open_read_only(path: &Path) -> Result<Connection> {
    let c = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(c)
}

/// A pooled read-only connection.
struct Reader<'a> {
    pool: &'a Mutex<Vec<Connection>>,
    conn: Option<Connection>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            lock(self.pool).push(c);
        }
    }
}

/// Finds the id of the row of `table` whose digest matches: by the indexed selector, then
/// a constant-time comparison of the whole digest.
fn find_by_digest(
    conn: &Connection,
    table: &str,
    digest: &Digest,
) -> Result<Option<i64>, AuthError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, digest FROM {table} WHERE selector = ?1"
    ))?;
    let mut rows = stmt.query([digest.selector()])?;
    while let Some(row) = rows.next()? {
        let stored: Vec<u8> = row.get(1)?;
        if digest.matches(&stored) {
            return Ok(Some(row.get(0)?));
        }
    }
    Ok(None)
}

fn insert_key(
    conn: &Connection,
    account: i64,
    allowed_ips: &[IpRange],
    now: i64,
) -> Result<(KeyInfo, String)> {
    let secret = secret::generate()?;
    let digest = Digest::of(&secret);
    conn.execute(
        "INSERT INTO keys (account, selector, digest, created, allowed_ips) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![account, digest.selector(), &digest.0[..], now, ip::format_list(allowed_ips)],
    )?;
    Ok((key_in(conn, conn.last_insert_rowid())?, secret))
}

fn key_in(conn: &Connection, id: i64) -> Result<KeyInfo> {
    conn.prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM keys WHERE id = ?1"))?
        .query_row([id], key_from_row)
        .optional()?
        .ok_or(Error::NotFound { what: "key", id })
}

fn app_in(conn: &Connection, id: i64) -> Result<App> {
    conn.prepare_cached(&format!("SELECT {APP_COLUMNS} FROM apps WHERE id = ?1"))?
        .query_row([id], app_from_row)
        .optional()?
        .ok_or(Error::NotFound {
            what: "OpenApp",
            id,
        })
}

fn token_in(conn: &Connection, id: i64) -> Result<TokenInfo> {
    conn.prepare_cached(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = ?1"))?
        .query_row([id], token_from_row)
        .optional()?
        .ok_or(Error::NotFound { what: "token", id })
}

/// The allowances a reseller has given its sub-accounts, leaving one out.
fn children_total(conn: &Connection, parent: i64, except: Option<i64>) -> Result<Units> {
    Ok(conn
        .prepare_cached(
            "SELECT COALESCE(SUM(index_item_info_units), 0), COALESCE(SUM(analysis_units), 0), COALESCE(SUM(retrieval_units), 0)
             FROM accounts WHERE parent = ?1 AND (?2 IS NULL OR id != ?2)",
        )?
        .query_row(params![parent, except], |r| units_from_row(r, 0))?)
}

/// Refuses giving `asked` to a sub-account of `parent` (other than `except`) when the
/// reseller's sub-accounts would then hold more than the reseller's own allowance.
fn check_carve_out(
    conn: &Connection,
    parent: i64,
    except: Option<i64>,
    asked: Units,
) -> Result<()> {
    let reseller = account_in(conn, parent)?;
    if !reseller.reseller {
        return Err(Error::Invalid(format!(
            "account {parent} is not a reseller and cannot have sub-accounts"
        )));
    }
    let given = children_total(conn, parent, except)?;
    for kind in KINDS {
        let left = reseller.allowance.get(kind).saturating_sub(given.get(kind));
        if asked.get(kind) > left {
            return Err(Error::ExceedsReseller {
                kind,
                asked: asked.get(kind),
                left,
                reseller: parent,
            });
        }
    }
    Ok(())
}
