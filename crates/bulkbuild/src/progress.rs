//! Build progress: counters the workers bump, read by a reporter thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running totals of a build, shared by every worker.
#[derive(Debug, Default)]
pub struct Counters {
    pub bytes_total: AtomicU64,
    pub bytes_read: AtomicU64,
    pub files_read: AtomicU64,
    pub crawls: AtomicU64,
    pub pages: AtomicU64,
    pub groups: AtomicU64,
    pub rows_written: AtomicU64,
    pub sst_bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn add(&self, counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// One worker's counts of something it does per row, added to the shared counter every
/// [`LocalCount::EVERY`] counts and when flushed: each worker bumping the shared atomic
/// once per row moved its cache line between the cores every time (three quarters of
/// the SST writer's own time in the build's profile).
#[derive(Debug, Default)]
pub(crate) struct LocalCount(u64);

impl LocalCount {
    const EVERY: u64 = 4096;

    pub(crate) fn bump(&mut self, total: &AtomicU64) {
        self.0 += 1;
        if self.0 == Self::EVERY {
            self.flush(total);
        }
    }

    pub(crate) fn flush(&mut self, total: &AtomicU64) {
        if self.0 > 0 {
            total.fetch_add(std::mem::take(&mut self.0), Ordering::Relaxed);
        }
    }
}

/// The stages of a build, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Reading crawl files (and sorting crawls by page as they arrive).
    Read,
    /// Replaying pages and reducing views into SST files.
    Reduce,
    /// Adding the SST files to the store.
    Ingest,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Reduce => "sort, reduce and write",
            Stage::Ingest => "ingest",
        }
    }
}

/// A snapshot of a build's progress, given to the caller's callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub stage: Stage,
    /// Since the build started, and since its current stage started.
    pub seconds: f64,
    pub stage_seconds: f64,
    pub bytes_read: u64,
    pub bytes_total: u64,
    pub crawls: u64,
    /// Pages replayed (of those read: `crawls` is an upper bound).
    pub pages: u64,
    /// Groups of view rows reduced.
    pub groups: u64,
    pub rows_written: u64,
    pub sst_bytes: u64,
}

impl Progress {
    pub(crate) fn of(c: &Counters, stage: Stage, seconds: f64, stage_seconds: f64) -> Progress {
        Progress {
            stage,
            seconds,
            stage_seconds,
            bytes_read: Counters::get(&c.bytes_read),
            bytes_total: Counters::get(&c.bytes_total),
            crawls: Counters::get(&c.crawls),
            pages: Counters::get(&c.pages),
            groups: Counters::get(&c.groups),
            rows_written: Counters::get(&c.rows_written),
            sst_bytes: Counters::get(&c.sst_bytes),
        }
    }

    /// What the stage is doing now: crawls read, pages replayed, then view groups
    /// reduced once every page is replayed.
    pub fn unit(&self) -> &'static str {
        self.work().0
    }

    /// The unit of the work under way and how much of it is done.
    fn work(&self) -> (&'static str, u64) {
        match self.stage {
            Stage::Read => ("crawls", self.crawls),
            _ if self.pages < self.crawls => ("pages", self.pages),
            _ => ("view groups", self.groups),
        }
    }

    /// The stage's work ([`Progress::unit`]) done per second so far; none while the
    /// stage is too young to tell, or while ingesting.
    pub fn rate(&self) -> Option<f64> {
        let done = self.work().1;
        (self.stage != Stage::Ingest && self.stage_seconds >= 0.5)
            .then(|| done as f64 / self.stage_seconds)
    }

    /// Seconds left in the stage at its rate so far, when it can be told: reading by
    /// bytes; replaying by pages (every crawl read is at most one page). Reducing views
    /// after the last page has no known total.
    pub fn eta(&self) -> Option<f64> {
        match self.stage {
            Stage::Read if self.bytes_read > 0 => {
                let rate = self.bytes_read as f64 / self.stage_seconds.max(1e-3);
                Some(self.bytes_total.saturating_sub(self.bytes_read) as f64 / rate)
            }
            Stage::Reduce if self.pages > 0 && self.pages < self.crawls => self
                .rate()
                .map(|rate| (self.crawls - self.pages) as f64 / rate),
            _ => None,
        }
    }
}
