//! Admission of heavy requests (those that scan rows): at most so many run at once in the
//! server and per account, so one client cannot take every worker; one more is refused at
//! once (`TooManyConcurrentRequests`), before any work, and charged nothing.

use crate::error::ApiError;
use std::collections::HashMap;
use std::sync::Mutex;

/// Heavy requests running at once, in all.
pub const MAX_HEAVY: usize = 16;
/// Heavy requests running at once for one account.
pub const MAX_HEAVY_PER_ACCOUNT: usize = 4;

/// The counts of heavy requests running.
pub struct Admission {
    max: usize,
    per_account: usize,
    running: Mutex<(usize, HashMap<i64, usize>)>,
}

/// A running heavy request's place, given back when dropped.
pub struct Ticket<'a> {
    admission: &'a Admission,
    account: i64,
}

impl Default for Admission {
    fn default() -> Admission {
        Admission::new(MAX_HEAVY, MAX_HEAVY_PER_ACCOUNT)
    }
}

impl Admission {
    pub fn new(max: usize, per_account: usize) -> Admission {
        Admission {
            max,
            per_account,
            running: Mutex::new((0, HashMap::new())),
        }
    }

    /// A place for one heavy request of `account`, or the refusal.
    pub fn enter(&self, account: i64) -> Result<Ticket<'_>, ApiError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mine = running.1.get(&account).copied().unwrap_or(0);
        if running.0 >= self.max || mine >= self.per_account {
            return Err(ApiError::new(
                "TooManyConcurrentRequests",
                format!(
                    "at most {} heavy requests run at once per account and {} in all; retry when one ends",
                    self.per_account, self.max
                ),
            ));
        }
        running.0 += 1;
        *running.1.entry(account).or_default() += 1;
        Ok(Ticket {
            admission: self,
            account,
        })
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut running = self
            .admission
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        running.0 -= 1;
        if let Some(n) = running.1.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                running.1.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_account_and_in_all_and_come_back() {
        let a = Admission::new(3, 2);
        let t1 = a.enter(1).unwrap();
        let _t2 = a.enter(1).unwrap();
        assert_eq!(a.enter(1).err().unwrap().code, "TooManyConcurrentRequests");
        let _t3 = a.enter(2).unwrap();
        assert!(a.enter(3).is_err(), "three in all");
        drop(t1);
        assert!(a.enter(1).is_ok(), "a place came back");
    }

    #[test]
    fn places_hold_across_threads() {
        let a = std::sync::Arc::new(Admission::new(100, 5));
        let admitted = std::sync::atomic::AtomicUsize::new(0);
        let barrier = std::sync::Barrier::new(20);
        std::thread::scope(|s| {
            for _ in 0..20 {
                s.spawn(|| {
                    let t = a.enter(7);
                    if t.is_ok() {
                        admitted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    barrier.wait(); // every thread holds its ticket (or refusal) here
                });
            }
        });
        assert_eq!(admitted.into_inner(), 5);
        assert!(a.enter(7).is_ok(), "all given back");
    }
}
