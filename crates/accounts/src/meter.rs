//! Metering in memory: what each account has used this period, checked and updated under
//! one lock, each charge made durable by one append to the journal (`journal.rs`), and the
//! totals checkpointed into the `usage` table every second.
//!
//! One process meters an account store at a time (the running server): the first charge
//! takes an exclusive lock beside the database, replays what an earlier process left in
//! its journals, and from then on this process's memory is the truth for use. Other
//! processes (the operator's `linkbase keys`) read use as the `usage` table plus the
//! journals written since its checkpoint. Account definitions (allowances, periods,
//! resellers) stay in SQLite, where either process may change them; the cache of them is
//! dropped when SQLite reports another connection's commit (checked every 100 ms), and
//! re-read before any refusal, so a raised allowance counts at once and a lowered one
//! within 100 ms.

use crate::journal::{self, Entry, Journal};
use crate::{io_error, lock, Account, ChargeError, Error, Insufficient, Result, Units, KINDS};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How often the journal is synced to disk and foreign commits are looked for.
const TICK: Duration = Duration::from_millis(100);
/// How often the totals are written to the `usage` table and old journals removed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// Reseller chains deeper than this are refused (they cannot be made by the API).
const MAX_CHAIN: usize = 64;

/// What a charge needs of an account: its allowance, period and reseller.
#[derive(Debug, Clone, Copy)]
struct Plan {
    parent: Option<i64>,
    allowance: Units,
    period_start: i64,
    period_seconds: i64,
}

impl Plan {
    fn of(a: &Account) -> Plan {
        Plan {
            parent: a.parent,
            allowance: a.allowance,
            period_start: a.period_start,
            period_seconds: a.period_seconds(),
        }
    }

    fn period_at(&self, now: i64) -> i64 {
        (now - self.period_start).div_euclid(self.period_seconds)
    }
}

/// One level of a charge: an account, its period now, its use and its allowance.
#[derive(Debug, Clone, Copy)]
struct Level {
    account: i64,
    period: i64,
    used: Units,
    allowance: Units,
}

pub(crate) struct Meter {
    base: PathBuf,
    /// The meter's own connection: loads, checkpoints, and `PRAGMA data_version` (which
    /// changes only for commits of other connections).
    conn: Mutex<Connection>,
    state: Mutex<Option<Owner>>,
    this: Weak<Meter>,
}

/// The state of the process that meters the store.
struct Owner {
    _lock: File,
    journal: Journal,
    /// The next journal, created ahead so a checkpoint switches to it at once.
    next: Option<Journal>,
    plans: HashMap<i64, Plan>,
    used: HashMap<(i64, i64), Units>,
    /// Totals changed since the last checkpoint.
    dirty: HashMap<(i64, i64), Units>,
    unsynced: bool,
    data_version: i64,
    last_checkpoint: Instant,
    levels: Vec<Level>,
    entries: Vec<Entry>,
}

fn lock_path(base: &Path) -> PathBuf {
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push("-meter.lock");
    base.with_file_name(name)
}

fn checkpointed_generation(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT generation FROM meter", [], |r| r.get::<_, i64>(0))
        .map(|g| g.max(0) as u64)
}

fn load_plan(conn: &Connection, id: i64) -> Result<Plan> {
    Ok(Plan::of(&crate::account_in(conn, id)?))
}

fn load_used(conn: &Connection, account: i64, period: i64) -> rusqlite::Result<Units> {
    Ok(conn
        .prepare_cached("SELECT index_item_info_units, analysis_units, retrieval_units FROM usage WHERE account = ?1 AND period = ?2")?
        .query_row(params![account, period], |r| crate::units_from_row(r, 0))
        .optional()?
        .unwrap_or_default())
}

/// The totals of every journal in `found` from generation `from` on, the last entry of an
/// account and period winning; `None` if one disappeared while being read (a checkpoint
/// removed it).
fn replay(base: &Path, found: &[u64], from: u64) -> Result<Option<HashMap<(i64, i64), Units>>> {
    let mut totals = HashMap::new();
    for &g in found.iter().filter(|&&g| g >= from) {
        let entries = journal::read(base, g).map_err(|e| io_error(&journal::path(base, g), e))?;
        let Some(entries) = entries else {
            return Ok(None);
        };
        for e in entries {
            totals.insert((e.account, e.period), e.used);
        }
    }
    Ok(Some(totals))
}

/// Commits of other connections change it; this connection's own do not.
fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

/// Writes totals and the generation they are complete up to, in one transaction.
fn write_totals(
    conn: &mut Connection,
    totals: &HashMap<(i64, i64), Units>,
    generation: u64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO usage (account, period, index_item_info_units, analysis_units, retrieval_units) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (account, period) DO UPDATE SET
               index_item_info_units = excluded.index_item_info_units,
               analysis_units = excluded.analysis_units,
               retrieval_units = excluded.retrieval_units",
        )?;
        for (&(account, period), u) in totals {
            put.execute(params![
                account,
                period,
                crate::to_i64(u.index_item_info),
                crate::to_i64(u.analysis),
                crate::to_i64(u.retrieval)
            ])?;
        }
    }
    tx.execute("UPDATE meter SET generation = ?1", [generation as i64])?;
    tx.commit()
}

impl Meter {
    pub fn new(base: &Path, conn: Connection) -> Arc<Meter> {
        Arc::new_cyclic(|this| Meter {
            base: base.to_path_buf(),
            conn: Mutex::new(conn),
            state: Mutex::new(None),
            this: this.clone(),
        })
    }

    /// Takes the metering lock and replays what an earlier process left: every journal
    /// from the checkpointed generation on, applied in order into the `usage` table.
    fn acquire(&self) -> Result<Owner> {
        let at = lock_path(&self.base);
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&at)
            .map_err(|e| io_error(&at, e))?;
        match lock_file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Open {
                    path: self.base.display().to_string(),
                    message: "another running process meters this account store".into(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error(&at, e)),
        }
        let mut conn = lock(&self.conn);
        let checkpointed = checkpointed_generation(&conn)?;
        let found = journal::generations(&self.base).map_err(|e| io_error(&self.base, e))?;
        // Under the lock no journal goes away while it is read.
        let totals = replay(&self.base, &found, checkpointed)?.unwrap_or_default();
        let generation = found.last().copied().unwrap_or(0).max(checkpointed) + 1;
        let journal_at = journal::path(&self.base, generation);
        let journal =
            Journal::create(&self.base, generation).map_err(|e| io_error(&journal_at, e))?;
        write_totals(&mut conn, &totals, generation)?;
        for g in found {
            let _ = std::fs::remove_file(journal::path(&self.base, g));
        }
        let data_version = data_version(&conn)?;
        drop(conn);
        let next = Journal::create(&self.base, generation + 1)
            .map_err(|e| io_error(&journal::path(&self.base, generation + 1), e))?;
        let this = self.this.clone();
        std::thread::Builder::new()
            .name("meter".into())
            .spawn(move || loop {
                std::thread::sleep(TICK);
                let Some(meter) = this.upgrade() else { return };
                meter.tick();
            })
            .map_err(|e| io_error(&self.base, e))?;
        Ok(Owner {
            _lock: lock_file,
            journal,
            next: Some(next),
            plans: HashMap::new(),
            used: HashMap::new(),
            dirty: HashMap::new(),
            unsynced: false,
            data_version,
            last_checkpoint: Instant::now(),
            levels: Vec::with_capacity(4),
            entries: Vec::with_capacity(4),
        })
    }

    /// Runs `f` on the owner state, taking the lock first if this process has not yet.
    fn owned<T>(&self, f: impl FnOnce(&mut Owner, &Meter) -> T) -> Result<T> {
        let mut state = lock(&self.state);
        if state.is_none() {
            *state = Some(self.acquire()?);
        }
        Ok(f(state.as_mut().expect("set above"), self))
    }

    /// Takes the metering lock now (replaying what an earlier process left), so use is
    /// read from memory from the first request on.
    pub fn start(&self) -> Result<()> {
        self.owned(|_, _| ())
    }

    /// Charges `cost` to `id` and every reseller above it, or refuses and charges nothing.
    pub fn charge(&self, id: i64, cost: Units, now: i64) -> Result<crate::Balance, ChargeError> {
        self.owned(|o, m| o.apply(m, id, now, Change::Charge(cost)))?
    }

    /// Gives back `cost` to `id` and every reseller above it (never below 0).
    pub fn refund(&self, id: i64, cost: Units, now: i64) -> Result<()> {
        match self.owned(|o, m| o.apply(m, id, now, Change::Refund(cost)))? {
            Ok(_) => Ok(()),
            Err(ChargeError::Store(e)) => Err(e),
            Err(ChargeError::Insufficient(_)) => unreachable!("refunds are never refused"),
        }
    }

    /// `id`'s use this period and what its chain has left: from memory in the metering
    /// process, otherwise from the `usage` table and the journals after it.
    pub fn usage(&self, id: i64, now: i64) -> Result<(Units, Units)> {
        {
            let mut state = lock(&self.state);
            if let Some(o) = state.as_mut() {
                o.walk(self, id, now)?;
                return Ok((o.levels[0].used, least_left(&o.levels)));
            }
        }
        self.read_usage(id, now)
    }

    /// Use as another process sees it. The `usage` table is read with its generation,
    /// then the journals from that generation on; if the metering process checkpointed
    /// and removed that journal in between, read again.
    fn read_usage(&self, id: i64, now: i64) -> Result<(Units, Units)> {
        for _ in 0..100 {
            let (generation, mut levels) = {
                let conn = lock(&self.conn);
                let tx = conn.unchecked_transaction()?;
                let generation = checkpointed_generation(&tx)?;
                let levels = chain_levels(&tx, id, now)?;
                tx.finish()?;
                (generation, levels)
            };
            let found = journal::generations(&self.base).map_err(|e| io_error(&self.base, e))?;
            if generation > 0 && !found.contains(&generation) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if let Some(totals) = replay(&self.base, &found, generation)? {
                for l in levels.iter_mut() {
                    if let Some(used) = totals.get(&(l.account, l.period)) {
                        l.used = *used;
                    }
                }
                return Ok((levels[0].used, least_left(&levels)));
            }
        }
        Err(Error::Invalid(format!(
            "{}: the metering journals kept changing while being read",
            self.base.display()
        )))
    }

    /// Forgets cached account definitions (after this process changed one).
    pub fn invalidate(&self) {
        if let Some(o) = lock(&self.state).as_mut() {
            o.plans.clear();
        }
    }

    /// Every `TICK`: sync the journal, notice foreign commits, checkpoint when due.
    fn tick(&self) {
        let (sync, due) = {
            let mut state = lock(&self.state);
            let Some(o) = state.as_mut() else { return };
            if let Ok(v) = data_version(&lock(&self.conn)) {
                if v != o.data_version {
                    o.data_version = v;
                    o.plans.clear();
                }
            }
            let sync = std::mem::take(&mut o.unsynced)
                .then(|| o.journal.file().ok())
                .flatten();
            (sync, o.last_checkpoint.elapsed() >= CHECKPOINT_EVERY)
        };
        if let Some(f) = sync {
            let _ = f.sync_data();
        }
        if due {
            let _ = self.checkpoint();
        }
    }

    /// Switches to the next journal, writes the totals changed before the switch into
    /// the `usage` table with the new generation, then removes the older journals. A
    /// failure leaves the journals in place and the totals to the next checkpoint.
    fn checkpoint(&self) -> Result<()> {
        let (totals, generation, old) = {
            let mut state = lock(&self.state);
            let Some(o) = state.as_mut() else {
                return Ok(());
            };
            o.last_checkpoint = Instant::now();
            if o.dirty.is_empty() {
                return Ok(());
            }
            let old = o.switch_journal(self)?;
            o.unsynced = false;
            (std::mem::take(&mut o.dirty), o.journal.generation, old)
        };
        // What the old journal holds is synced before SQLite is told it is complete.
        let _ = old.file().and_then(|f| f.sync_data());
        drop(old);
        let written = write_totals(&mut lock(&self.conn), &totals, generation);
        let next = Journal::create(&self.base, generation + 1);
        let mut state = lock(&self.state);
        let o = state
            .as_mut()
            .expect("the owner stays until the meter is dropped");
        o.next = next.ok();
        if let Err(e) = written {
            for (k, v) in totals {
                o.dirty.entry(k).or_insert(v);
            }
            return Err(e.into());
        }
        for g in journal::generations(&self.base).unwrap_or_default() {
            if g < generation {
                let _ = std::fs::remove_file(journal::path(&self.base, g));
            }
        }
        // Keep only each account's latest period in memory.
        let mut latest: HashMap<i64, i64> = HashMap::new();
        for &(a, p) in o.used.keys() {
            let l = latest.entry(a).or_insert(p);
            *l = (*l).max(p);
        }
        o.used.retain(|(a, p), _| latest.get(a) == Some(p));
        Ok(())
    }
}

impl Drop for Meter {
    /// A clean stop leaves everything in the `usage` table.
    fn drop(&mut self) {
        let _ = self.checkpoint();
    }
}

#[derive(Clone, Copy)]
enum Change {
    Charge(Units),
    Refund(Units),
}

fn least_left(levels: &[Level]) -> Units {
    levels.iter().fold(Units::MAX, |m, l| {
        m.zip(l.allowance.zip(l.used, u64::saturating_sub), u64::min)
    })
}

/// The levels of `id`'s chain as stored in SQLite (for processes that do not meter).
fn chain_levels(conn: &Connection, id: i64, now: i64) -> Result<Vec<Level>> {
    let mut levels = Vec::new();
    let mut next = Some(id);
    while let Some(account) = next {
        if levels.len() >= MAX_CHAIN {
            return Err(Error::Invalid(format!(
                "account {id}: reseller chain too deep"
            )));
        }
        let plan = load_plan(conn, account)?;
        let period = plan.period_at(now);
        levels.push(Level {
            account,
            period,
            used: load_used(conn, account, period)?,
            allowance: plan.allowance,
        });
        next = plan.parent;
    }
    Ok(levels)
}

impl Owner {
    /// Fills `self.levels` with `id`'s chain, loading what memory lacks.
    fn walk(&mut self, meter: &Meter, id: i64, now: i64) -> Result<()> {
        self.levels.clear();
        let mut next = Some(id);
        while let Some(account) = next {
            if self.levels.len() >= MAX_CHAIN {
                return Err(Error::Invalid(format!(
                    "account {id}: reseller chain too deep"
                )));
            }
            let plan = match self.plans.get(&account) {
                Some(p) => *p,
                None => {
                    let p = load_plan(&lock(&meter.conn), account)?;
                    self.plans.insert(account, p);
                    p
                }
            };
            let period = plan.period_at(now);
            let used = match self.used.get(&(account, period)) {
                Some(u) => *u,
                None => {
                    let u = load_used(&lock(&meter.conn), account, period)?;
                    self.used.insert((account, period), u);
                    u
                }
            };
            self.levels.push(Level {
                account,
                period,
                used,
                allowance: plan.allowance,
            });
            next = plan.parent;
        }
        Ok(())
    }

    fn apply(
        &mut self,
        meter: &Meter,
        id: i64,
        now: i64,
        change: Change,
    ) -> Result<crate::Balance, ChargeError> {
        self.walk(meter, id, now)?;
        let cost = match change {
            Change::Charge(cost) => {
                if self.check(cost).is_err() {
                    // Allowances may have been raised elsewhere since they were cached.
                    self.plans.clear();
                    self.walk(meter, id, now)?;
                    self.check(cost)?;
                }
                cost
            }
            Change::Refund(cost) => cost,
        };
        if cost.is_zero() {
            return Ok(crate::Balance {
                charged: cost,
                remaining: least_left(&self.levels),
            });
        }
        self.entries.clear();
        for l in &mut self.levels {
            l.used = match change {
                Change::Charge(_) => l.used.zip(cost, u64::saturating_add),
                Change::Refund(_) => l.used.zip(cost, u64::saturating_sub),
            };
            self.entries.push(Entry {
                account: l.account,
                period: l.period,
                used: l.used,
            });
        }
        if self.journal.append(&self.entries).is_err() {
            let full = self.switch_journal(meter)?;
            full.file()
                .and_then(|f| f.sync_data())
                .map_err(|e| io_error(&journal::path(&meter.base, full.generation), e))?;
            self.journal
                .append(&self.entries)
                .map_err(|_| Error::Invalid("a charge larger than a whole journal".into()))?;
        }
        self.unsynced = true;
        for e in &self.entries {
            self.used.insert((e.account, e.period), e.used);
            self.dirty.insert((e.account, e.period), e.used);
        }
        Ok(crate::Balance {
            charged: match change {
                Change::Charge(c) => c,
                Change::Refund(_) => Units::default(),
            },
            remaining: least_left(&self.levels),
        })
    }

    /// Moves appends to the next journal and returns the one before; the checkpoint
    /// after this writes what it holds into SQLite.
    fn switch_journal(&mut self, meter: &Meter) -> Result<Journal> {
        let next = match self.next.take() {
            Some(j) => j,
            None => {
                let g = self.journal.generation + 1;
                Journal::create(&meter.base, g)
                    .map_err(|e| io_error(&journal::path(&meter.base, g), e))?
            }
        };
        Ok(std::mem::replace(&mut self.journal, next))
    }

    /// Refuses `cost` if any level of the chain has less left than it asks.
    fn check(&self, cost: Units) -> Result<(), Insufficient> {
        for (depth, l) in self.levels.iter().enumerate() {
            let left = l.allowance.zip(l.used, u64::saturating_sub);
            if let Some(kind) = KINDS.into_iter().find(|k| cost.get(*k) > left.get(*k)) {
                return Err(Insufficient {
                    kind,
                    cost: cost.get(kind),
                    remaining: least_left(&self.levels).get(kind),
                    by_reseller: depth > 0,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Accounts, ChargeError, NewAccount, Units};
    use std::path::Path;

    fn units(analysis: u64) -> Units {
        Units {
            analysis,
            ..Units::default()
        }
    }

    fn store(path: &Path) -> Accounts {
        Accounts::open(path).unwrap()
    }

    fn account(s: &Accounts, allowance: u64, parent: Option<i64>) -> i64 {
        s.create_account(&NewAccount {
            name: "a".into(),
            parent,
            reseller: parent.is_none(),
            allowance: units(allowance),
            period_days: 30,
        })
        .unwrap()
        .id
    }

    /// What a `kill -9` leaves: the lock released, the journal as written, no checkpoint.
    fn crash(s: Accounts) {
        drop(crate::lock(&s.meter.state).take());
        std::mem::forget(s);
    }

    fn checkpointed(path: &Path, id: i64) -> u64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT coalesce(sum(analysis_units), 0) FROM usage WHERE account = ?1",
            [id],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as u64
    }

    #[test]
    fn charges_in_the_journal_survive_a_crash_and_replay_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("accounts.sqlite");
        let s = store(&path);
        let reseller = account(&s, 1_000, None);
        let sub = account(&s, 500, Some(reseller));
        for _ in 0..7 {
            s.charge(sub, units(10)).unwrap();
        }
        s.refund(sub, units(10)).unwrap();
        crash(s);
        assert_eq!(checkpointed(&path, sub), 0, "nothing was checkpointed");
        // Another process reads the journal.
        let s = store(&path);
        assert_eq!(s.usage(sub).unwrap().used, units(60));
        assert_eq!(s.usage(reseller).unwrap().used, units(60));
        // The next metering process replays it into the usage table, once.
        s.charge(sub, units(1)).unwrap();
        assert_eq!(checkpointed(&path, sub), 60);
        crash(s);
        let s = store(&path);
        s.charge(sub, units(1)).unwrap();
        assert_eq!(s.usage(sub).unwrap().used, units(62));
        assert_eq!(s.usage(reseller).unwrap().remaining, units(1_000 - 62));
        drop(s);
        assert_eq!(checkpointed(&path, sub), 62, "a clean stop checkpoints");
        assert_eq!(checkpointed(&path, reseller), 62);
    }

    #[test]
    fn one_process_meters_a_store_and_others_read_it_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("accounts.sqlite");
        let server = store(&path);
        let a = account(&server, 100, None);
        server.charge(a, units(30)).unwrap();
        let operator = store(&path);
        assert_eq!(operator.usage(a).unwrap().used, units(30));
        let e = operator.charge(a, units(1)).unwrap_err();
        assert!(
            matches!(&e, ChargeError::Store(_))
                && e.to_string().contains("another running process meters"),
            "{e}"
        );
        // The checkpoint every second moves the totals to SQLite and removes old
        // journals; readers stay exact throughout.
        for _ in 0..15 {
            server.charge(a, units(1)).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert_eq!(
                operator.usage(a).unwrap().used,
                server.usage(a).unwrap().used
            );
        }
        assert!(checkpointed(&path, a) >= 30, "checkpointed");
        assert!(crate::journal::generations(&path).unwrap().len() <= 3);
        assert_eq!(server.usage(a).unwrap().used, units(45));
    }

    #[test]
    fn allowances_changed_elsewhere_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("accounts.sqlite");
        let server = store(&path);
        let a = account(&server, 100, None);
        server.charge(a, units(100)).unwrap();
        let operator = store(&path);
        // Raised: at once.
        operator.set_allowance(a, units(200)).unwrap();
        server.charge(a, units(50)).unwrap();
        // Lowered: within a tick.
        operator.set_allowance(a, units(160)).unwrap();
        std::thread::sleep(super::TICK * 3);
        assert!(matches!(
            server.charge(a, units(11)),
            Err(ChargeError::Insufficient(_))
        ));
        server.charge(a, units(10)).unwrap();
        assert_eq!(server.usage(a).unwrap().remaining, units(0));
    }
}
