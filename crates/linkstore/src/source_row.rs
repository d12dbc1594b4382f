//! A source page's `sources` row: the fields every backlink record from the page would
//! otherwise repeat (its URL, address and out-link counts), kept once in a snapshot
//! (`docs/format.md`, "`sources`").

use crate::codec::{put_bytes, put_ip, Reader};
use crate::error::{Error, Result};
use crate::record::{LinkRecord, SourceOutlinks};
use crate::store::CF_SOURCES;
use crate::table::source_row_missing;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::xxh3_64;

const SOURCE_ROW_VERSION: u8 = 1;

/// What the backlink records of one source page share.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceRow {
    pub url: String,
    pub ip: Option<IpAddr>,
    pub out: SourceOutlinks,
}

impl SourceRow {
    /// The fields of a record that a source row can stand for.
    pub(crate) fn of(rec: &LinkRecord) -> SourceRow {
        SourceRow {
            url: rec.source_url.clone(),
            ip: rec.source_ip,
            out: rec.source_out,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + self.url.len());
        out.push(SOURCE_ROW_VERSION);
        self.put_fields(&mut out);
        out
    }

    /// The fields as a whole record encodes them, one after the other.
    fn put_fields(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.url.as_bytes());
        put_ip(out, self.ip);
        self.out.put(out);
    }

    pub(crate) fn decode(buf: &[u8]) -> Result<SourceRow> {
        let mut r = Reader::new(buf, CF_SOURCES);
        r.version(SOURCE_ROW_VERSION)?;
        let url = r.string()?;
        let ip = r.ip()?;
        let out = SourceOutlinks::read(&mut r)?;
        if r.remaining() > 0 {
            return Err(Error::corrupt(CF_SOURCES, "bytes after a source row"));
        }
        Ok(SourceRow { url, ip, out })
    }

    /// A 64-bit hash of the fields, equal to `FlowSlots::source_check` of a record that
    /// holds the same: a flow build's test of whether a record can leave them to this
    /// row (a record whose fields differ and collide, at 2^-64, would read this row's).
    pub(crate) fn check(&self) -> u64 {
        let mut fields = Vec::with_capacity(24 + self.url.len());
        self.put_fields(&mut fields);
        xxh3_64(&fields)
    }
}

/// Source rows a store keeps in memory, about 100 bytes each: a read of 50,000 backlinks
/// finds its sources again on its next run.
const SOURCE_ROWS_KEPT: usize = 65_536;

/// Source rows read lately, by URL hash, at most [`SOURCE_ROWS_KEPT`]: a full memo starts
/// over, so the rows asked for lately are the ones kept.
#[derive(Default)]
pub(crate) struct SourceMemo(Mutex<foldhash::HashMap<u64, Arc<SourceRow>>>);

impl SourceMemo {
    /// The source rows of `hashes`, from memory where kept, the others from `read` (given
    /// the hashes it must read, returning their rows in that order). A row that is not
    /// in the store is an error: a record names its source row only when it was written.
    pub(crate) fn get_or_read(
        &self,
        hashes: &[u64],
        read: impl FnOnce(&[u64]) -> Result<Vec<Option<SourceRow>>>,
    ) -> Result<Vec<Arc<SourceRow>>> {
        let mut out: Vec<Option<Arc<SourceRow>>> = Vec::with_capacity(hashes.len());
        let mut missing = Vec::new();
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            for &hash in hashes {
                let row = kept.get(&hash).cloned();
                if row.is_none() {
                    missing.push(hash);
                }
                out.push(row);
            }
        }
        if !missing.is_empty() {
            let read = read(&missing)?;
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let mut read = missing.iter().zip(read);
            for slot in out.iter_mut().filter(|row| row.is_none()) {
                let (&hash, row) = read.next().ok_or_else(source_row_missing)?;
                let row = Arc::new(row.ok_or_else(source_row_missing)?);
                if kept.len() >= SOURCE_ROWS_KEPT {
                    kept.clear();
                }
                kept.insert(hash, Arc::clone(&row));
                *slot = Some(row);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}
