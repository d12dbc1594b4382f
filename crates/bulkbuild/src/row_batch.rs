//! Rows between a worker's operators, packed many to an allocation.
//!
//! An operator that emits rows puts each in the open batch of the worker that owns it
//! and hands a batch on once it is full, or when the operator yields. Rows sent one
//! by one as `(table, key, value)` cost two allocations each, freed by whichever worker
//! took the row: with seven rows per link, the allocator's cross-thread frees were a
//! tenth of a build's CPU.
//!
//! ```text
//! batch: { table u8 | key_len u32 LE | value_len u32 LE | key | value }*
//! ```
//!
//! Batches live in memory only, between operators of one build, and are read back by
//! [`rows`], which trusts them: only [`Batcher`] writes them.

use linkstore::build::Table;

/// A batch and the worker it goes to.
pub(crate) type RowBatch = (u64, Vec<u8>);

/// Bytes past which a batch is handed on.
const BATCH_BYTES: usize = 32 << 10;

/// Fixed bytes of a row in a batch besides its key and value.
const ROW_HEADER: usize = 9;

/// One open batch per worker.
pub(crate) struct Batcher {
    open: Vec<Vec<u8>>,
}

impl Batcher {
    pub(crate) fn new(peers: usize) -> Batcher {
        Batcher {
            open: vec![Vec::new(); peers],
        }
    }

    /// Adds a row to the batch of its owner (see [`crate::pipeline`]), handing the
    /// batch to `give` once full.
    pub(crate) fn put(
        &mut self,
        table: Table,
        key: &[u8],
        value: &[u8],
        give: &mut dyn FnMut(RowBatch),
    ) {
        let owner = crate::pipeline::owner(table.partition_hash(key), self.open.len());
        let batch = &mut self.open[owner as usize];
        if batch.capacity() == 0 {
            batch.reserve(BATCH_BYTES + ROW_HEADER + key.len() + value.len());
        }
        batch.push(table as u8);
        batch.extend_from_slice(&len_u32(key).to_le_bytes());
        batch.extend_from_slice(&len_u32(value).to_le_bytes());
        batch.extend_from_slice(key);
        batch.extend_from_slice(value);
        if batch.len() >= BATCH_BYTES {
            give((owner, std::mem::take(batch)));
        }
    }

    /// Hands on every batch not empty: before the operator yields, so that no row
    /// waits for more to come.
    pub(crate) fn flush(&mut self, give: &mut dyn FnMut(RowBatch)) {
        for (owner, batch) in self.open.iter_mut().enumerate() {
            if !batch.is_empty() {
                give((owner as u64, std::mem::take(batch)));
            }
        }
    }
}

/// A key's or value's length as a batch holds it: rows of a build are far below 4 GiB
/// (a sorter's offsets are `u32` too).
fn len_u32(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.len()).expect("a row shorter than 4 GiB")
}

/// The rows of a batch, in the order they were put.
pub(crate) fn rows(batch: &[u8]) -> impl Iterator<Item = (Table, &[u8], &[u8])> {
    let mut rest = batch;
    std::iter::from_fn(move || {
        let (header, tail) = rest.split_at_checked(ROW_HEADER)?;
        let table = Table::from_u8(header[0]).expect("batches hold valid tables");
        let len = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
        let (k, v) = (len(&header[1..5]), len(&header[5..9]));
        let (key, tail) = tail.split_at(k);
        let (value, tail) = tail.split_at(v);
        rest = tail;
        Some((table, key, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type OwnedRow = (Table, Vec<u8>, Vec<u8>);

    #[test]
    fn rows_come_back_in_order_in_their_owners_batches() {
        let peers = 3;
        let mut batcher = Batcher::new(peers);
        let mut batches = Vec::new();
        let mut put = Vec::new();
        for i in 0..20_000u32 {
            let table = [Table::Backlinks, Table::Distinct, Table::Counters][i as usize % 3];
            let key = i
                .wrapping_mul(2_654_435_761)
                .to_be_bytes()
                .repeat(1 + i as usize % 5);
            let value = vec![i as u8; i as usize % 37];
            batcher.put(table, &key, &value, &mut |b| batches.push(b));
            put.push((table, key, value));
        }
        assert!(batches.len() > peers, "full batches were handed on");
        batcher.flush(&mut |b| batches.push(b));
        batcher.flush(&mut |_| panic!("nothing left to flush"));
        let mut got: Vec<Vec<OwnedRow>> = vec![Vec::new(); peers];
        for (owner, batch) in &batches {
            assert!(!batch.is_empty());
            for (t, k, v) in rows(batch) {
                let o = crate::pipeline::owner(t.partition_hash(k), peers);
                assert_eq!(o, *owner, "a row in its owner's batch");
                got[o as usize].push((t, k.to_vec(), v.to_vec()));
            }
        }
        for (o, rows) in got.iter().enumerate() {
            let expected: Vec<_> = put
                .iter()
                .filter(|(t, k, _)| crate::pipeline::owner(t.partition_hash(k), peers) == o as u64)
                .cloned()
                .collect();
            assert_eq!(rows, &expected, "worker {o}'s rows, in order");
        }
    }
}
