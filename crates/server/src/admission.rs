//! Admission of heavy requests (those that scan rows): at most so many run at once in the
//! server and per account, so one client cannot take every worker, and none starts while
//! the replies still being written to clients hold more than a budget of memory (clients
//! that read slowly); one more is refused at once (`TooManyConcurrentRequests`), before
//! any work, and charged nothing.

use crate::error::ApiError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Heavy requests are CPU-bound: beyond two per core they add only latency (for every
/// other request too) and memory (up to a few hundred MB each for 50,000-row replies).
/// So by default at most two per core run at once in all (at least 4), and one per core
/// (at least 2) for one account (`serve --max-heavy`, `--max-heavy-per-account`).
pub fn default_limits() -> (usize, usize) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    ((2 * cores).max(4), cores.max(2))
}
/// Bytes of replies not yet written to their clients beyond which heavy requests wait.
pub const REPLY_BUDGET: usize = 256 << 20;

/// The counts of heavy requests running, and the bytes of replies being written.
pub struct Admission {
    max: usize,
    per_account: usize,
    running: Mutex<(usize, HashMap<i64, usize>)>,
    reply_budget: usize,
    replies: Arc<AtomicUsize>,
}

/// A reply's bytes, counted against the budget until it is written or its connection
/// closes (dropped with the response body).
pub struct ReplyHold {
    replies: Arc<AtomicUsize>,
    bytes: usize,
}

impl Drop for ReplyHold {
    fn drop(&mut self) {
        self.replies.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A running heavy request's place, given back when dropped.
pub struct Ticket<'a> {
    admission: &'a Admission,
    account: i64,
}

impl Default for Admission {
    fn default() -> Admission {
        let (max, per_account) = default_limits();
        Admission::new(max, per_account)
    }
}

impl Admission {
    pub fn new(max: usize, per_account: usize) -> Admission {
        Admission {
            max,
            per_account,
            running: Mutex::new((0, HashMap::new())),
            reply_budget: REPLY_BUDGET,
            replies: Arc::default(),
        }
    }

    /// Counts a reply of `bytes` until the hold is dropped.
    pub fn hold_reply(&self, bytes: usize) -> ReplyHold {
        self.replies.fetch_add(bytes, Ordering::Relaxed);
        ReplyHold {
            replies: self.replies.clone(),
            bytes,
        }
    }

    /// Bytes of replies being written now.
    pub fn reply_bytes(&self) -> usize {
        self.replies.load(Ordering::Relaxed)
    }

    /// A place for one heavy request of `account`, or the refusal.
    pub fn enter(&self, account: i64) -> Result<Ticket<'_>, ApiError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mine = running.1.get(&account).copied().unwrap_or(0);
        if self.reply_bytes() >= self.reply_budget {
            return Err(ApiError::new(
                "TooManyConcurrentRequests",
                format!(
                    "replies of {} MB are still being sent to clients; retry in a moment",
                    self.reply_bytes() >> 20
                ),
            ));
        }
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
