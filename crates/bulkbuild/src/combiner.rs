//! Rows of one key combined before they are sent on: most contributions of a page land on
//! a few rows (the whole index's counters, a host's timeline day, a domain's referring
//! domain), so combining first shrinks what is exchanged and sorted.

use crate::error::Result;
use linkstore::build::{combine, Table};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

/// A row between operators: `(table, key, value)`.
pub(crate) type Row = (u8, Vec<u8>, Vec<u8>);

/// Map overhead per row besides key and value, for the budget.
const ENTRY_OVERHEAD: usize = 64;

pub(crate) struct Combiner {
    rows: HashMap<(u8, Vec<u8>), Vec<u8>, Xxh3DefaultBuilder>,
    bytes: usize,
    budget: usize,
}

impl Combiner {
    pub(crate) fn new(budget: usize) -> Combiner {
        Combiner {
            rows: HashMap::default(),
            bytes: 0,
            budget,
        }
    }

    /// Adds a row, combined with an earlier one of its key; rows of tables that do not
    /// combine go straight to `give`, and so does everything once the budget is reached.
    pub(crate) fn push(
        &mut self,
        table: Table,
        key: Vec<u8>,
        value: Vec<u8>,
        give: &mut dyn FnMut(Row),
    ) -> Result<()> {
        if !table.combines() {
            give((table as u8, key, value));
            return Ok(());
        }
        match self.rows.entry((table as u8, key)) {
            Entry::Occupied(mut e) => {
                let combined = combine(table, e.get(), &value)?.expect("table combines");
                self.bytes = self.bytes + combined.len() - e.get().len();
                *e.get_mut() = combined;
            }
            Entry::Vacant(e) => {
                self.bytes += e.key().1.len() + value.len() + ENTRY_OVERHEAD;
                e.insert(value);
            }
        }
        if self.bytes >= self.budget {
            self.flush(give);
        }
        Ok(())
    }

    pub(crate) fn flush(&mut self, give: &mut dyn FnMut(Row)) {
        for ((t, k), v) in self.rows.drain() {
            give((t, k, v));
        }
        self.bytes = 0;
    }
}
