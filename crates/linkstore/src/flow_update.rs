//! Publishing a flow build: new metrics and re-ordered backlinks are written as the next
//! generation beside the serving one, then one durable write switches generations.
//!
//! Readers scan only the serving generation, so they never see a half-updated index; a
//! build killed before the switch leaves the serving generation untouched, and its
//! leftovers are cleared by the next build.

use crate::error::Result;
use crate::item::Item;
use crate::keys::{backlink_key, metrics_key};
use crate::metrics::ItemMetrics;
use crate::record::{FlowPair, LinkRecord, SOURCE_TOPICS, TARGET_TOPICS};
use crate::store::{prefix_successor, Store, CF_BACKLINKS, CF_META, CF_METRICS};
use rocksdb::{WriteBatch, WriteOptions};
use std::sync::MutexGuard;

const BATCH_ROWS: usize = 20_000;

/// An open flow publication; holds the store's write lock (no ingest meanwhile).
pub struct FlowUpdate<'a> {
    store: &'a Store,
    _lock: MutexGuard<'a, ()>,
    current: u8,
    next: u8,
    batch: WriteBatch,
    pending: usize,
    metrics_rows: u64,
}

/// What publishing did.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowUpdateReport {
    pub metrics_rows: u64,
    pub backlink_rows: u64,
    pub generation: u8,
}

fn no_wal() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.disable_wal(true);
    wo
}

impl Store {
    /// Starts publishing flow metrics. Clears what a killed earlier build left behind.
    pub fn begin_flow_update(&self) -> Result<FlowUpdate<'_>> {
        let lock = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.generation();
        // Generations cycle through 0..=254, so no key starts with 0xff and a range
        // ending at [0xff] covers every later generation exactly.
        let next = if current >= 254 { 0 } else { current + 1 };
        for cf in [CF_BACKLINKS, CF_METRICS] {
            self.clear_other_generations(cf, current, false)?;
        }
        Ok(FlowUpdate {
            store: self,
            _lock: lock,
            current,
            next,
            batch: WriteBatch::default(),
            pending: 0,
            metrics_rows: 0,
        })
    }

    /// Deletes every row of `cf` outside generation `keep`. With `drop_files`, SST files
    /// holding only such rows are removed at once instead of waiting for compaction:
    /// only when no reader can hold a snapshot that still needs them.
    fn clear_other_generations(&self, cf: &str, keep: u8, drop_files: bool) -> Result<()> {
        let cf = self.cf(cf);
        let mut ranges = vec![([keep + 1], [0xffu8])];
        if keep > 0 {
            ranges.push(([0u8], [keep]));
        }
        for (from, to) in ranges {
            if drop_files {
                self.db.delete_file_in_range_cf(cf, from, to)?;
            }
            self.db.delete_range_cf(cf, from, to)?;
        }
        Ok(())
    }
}

impl FlowUpdate<'_> {
    fn maybe_commit(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.store.db.write_opt(batch, &no_wal())?;
        self.pending = 0;
        Ok(())
    }

    /// Stores an item's metrics in the next generation.
    pub fn put_metrics(&mut self, item: &Item, m: &ItemMetrics) -> Result<()> {
        let key = metrics_key(self.next, &self.store.hasher.item_key(item));
        self.batch
            .put_cf(self.store.cf(CF_METRICS), key, m.encode());
        self.metrics_rows += 1;
        self.maybe_commit()
    }

    /// Copies every backlink row of the serving generation into the next one with the
    /// flows and top topics `flow_of(url)` gives (re-keyed by the new SourceTrustFlow), makes the next
    /// generation durable, switches to it, and drops the old one.
    pub fn finish(
        mut self,
        flow_of: impl Fn(&str) -> (FlowPair, Vec<(String, u8)>),
        progress: &mut dyn FnMut(u64),
    ) -> Result<FlowUpdateReport> {
        let s = self.store;
        let mut report = FlowUpdateReport {
            generation: self.next,
            metrics_rows: self.metrics_rows,
            backlink_rows: 0,
        };
        let prefix = [self.current];
        let mut opts = rocksdb::ReadOptions::default();
        if let Some(upper) = prefix_successor(&prefix) {
            opts.set_iterate_upper_bound(upper);
        }
        let mut it = s.db.raw_iterator_cf_opt(s.cf(CF_BACKLINKS), opts);
        it.seek(prefix);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let mut rec = LinkRecord::decode(v)?;
            let (source_flow, source_topics) = flow_of(&rec.source_url);
            let (target_flow, mut target_topics) = flow_of(&rec.target_url);
            rec.source_flow = source_flow;
            rec.source_topics = source_topics;
            rec.source_topics.truncate(SOURCE_TOPICS);
            target_topics.truncate(TARGET_TOPICS);
            rec.target_flow = target_flow;
            rec.target_topics = target_topics;
            let item_hash = u64::from_be_bytes(k[1..9].try_into().expect("26-byte key"));
            let link: [u8; 16] = k[10..26].try_into().expect("26-byte key");
            let key = backlink_key(self.next, item_hash, rec.source_flow.trust_flow, &link);
            self.batch.put_cf(s.cf(CF_BACKLINKS), key, rec.encode());
            report.backlink_rows += 1;
            if report.backlink_rows.is_multiple_of(100_000) {
                progress(report.backlink_rows);
            }
            self.maybe_commit()?;
            it.next();
        }
        it.status()?;
        drop(it);
        self.commit()?;
        // Durable before the switch: everything of the next generation, then the pointer.
        s.flush()?;
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        s.db.put_cf_opt(s.cf(CF_META), b"generation", [self.next], &sync)?;
        // A served store's readers must see the new rows before they ask for them; a
        // reader may still hold the previous snapshot, so its files stay until compacted.
        let served = s.is_published();
        if served {
            s.publish_generation(self.next);
        } else {
            s.set_generation(self.next);
        }
        for cf in [CF_BACKLINKS, CF_METRICS] {
            s.clear_other_generations(cf, self.next, !served)?;
        }
        progress(report.backlink_rows);
        Ok(report)
    }
}
