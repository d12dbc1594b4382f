//! A source page's `sources` row: the fields every backlink record from the page would
//! otherwise repeat (its URL, address, out-link counts, and as of a flow generation its
//! Citation Flow and topics), kept once in a snapshot (`docs/format.md`, "`sources`").

use crate::codec::{put_bytes, put_ip, Reader};
use crate::error::{Error, Result};
use crate::record::{LinkEnd, LinkRecord, SourceOutlinks};
use crate::store::CF_SOURCES;
use crate::table::source_row_missing;
use crate::topic::{put_topics, read_topics};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::xxh3_64;

const SOURCE_ROW_VERSION: u8 = 2;

/// What the backlink records of one source page share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceRow {
    pub url: String,
    pub ip: Option<IpAddr>,
    pub out: SourceOutlinks,
    /// The page's Citation Flow and topics (at most
    /// [`SOURCE_TOPICS`](crate::record::SOURCE_TOPICS)) as of the row's generation.
    pub citation_flow: u8,
    pub topics: Vec<(String, u8)>,
}

impl SourceRow {
    /// The fields of a record that a source row can stand for.
    pub(crate) fn of(rec: &LinkRecord) -> SourceRow {
        SourceRow {
            url: rec.source_url.clone(),
            ip: rec.source_ip,
            out: rec.source_out,
            citation_flow: rec.source_flow.citation_flow,
            topics: rec.source_topics.clone(),
        }
    }

    /// The row with the page's flows and topics as a flow build gives them (`end`).
    pub(crate) fn with_end(&self, end: &LinkEnd) -> SourceRow {
        SourceRow {
            citation_flow: end.flow.citation_flow,
            topics: end.topics(),
            ..self.clone()
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.url.len());
        out.push(SOURCE_ROW_VERSION);
        self.put_fields(&mut out);
        out.push(self.citation_flow);
        put_topics(&mut out, &self.topics);
        out
    }

    /// The fields that do not move with flow generations, as a whole record encodes
    /// them, one after the other.
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
        let citation_flow = r.u8()?;
        let topics = read_topics(&mut r, CF_SOURCES)?;
        if r.remaining() > 0 {
            return Err(Error::corrupt(CF_SOURCES, "bytes after a source row"));
        }
        Ok(SourceRow {
            url,
            ip,
            out,
            citation_flow,
            topics,
        })
    }

    /// A 64-bit hash of the fields that do not move with flow generations, equal to
    /// `FlowSlots::source_check` of a record that holds the same: a flow build's test of
    /// whether a record can leave them to this row (a record whose fields differ and
    /// collide, at 2^-64, would read this row's).
    pub(crate) fn check(&self) -> u64 {
        let mut fields = Vec::with_capacity(24 + self.url.len());
        self.put_fields(&mut fields);
        xxh3_64(&fields)
    }
}

/// Source rows a store keeps in memory, about 150 bytes each (10 MB): a read of 50,000
/// backlinks finds its sources again on its next run.
const SOURCE_ROWS_KEPT: usize = 65_536;

/// Source rows of one flow generation read lately, by the name backlink keys give their
/// page (`table::SourceKey`), at most
/// [`SOURCE_ROWS_KEPT`]: a full memo starts over, so the rows asked for lately are the
/// ones kept, and so does a memo asked for another generation's rows (readers move to a
/// new generation together, when a flow build switches to it).
#[derive(Default)]
pub(crate) struct SourceMemo(Mutex<Kept>);

#[derive(Default)]
struct Kept {
    generation: u8,
    rows: foldhash::HashMap<u64, Arc<SourceRow>>,
}

impl SourceMemo {
    /// Forgets every row: the store switched generations. (Generations cycle, so rows
    /// kept across 255 switches would otherwise pass for the current ones.)
    pub(crate) fn clear(&self) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.rows.clear();
    }

    /// The source row named `name` in `generation`, if kept.
    pub(crate) fn get(&self, generation: u8, name: u64) -> Option<Arc<SourceRow>> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (kept.generation == generation)
            .then(|| kept.rows.get(&name).cloned())
            .flatten()
    }

    /// The source rows named `names` in `generation`, from memory where kept, the others
    /// from `read` (given the distinct names it must read, ascending, returning their
    /// rows in that order). A row that is not in the store is an error: a record names
    /// its source row only when it was written.
    pub(crate) fn get_or_read(
        &self,
        generation: u8,
        hashes: &[u64],
        read: impl FnOnce(&[u64]) -> Result<Vec<Option<SourceRow>>>,
    ) -> Result<Vec<Arc<SourceRow>>> {
        let mut out: Vec<Option<Arc<SourceRow>>> = Vec::with_capacity(hashes.len());
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let current = kept.generation == generation;
            out.extend(
                (hashes.iter()).map(|hash| current.then(|| kept.rows.get(hash).cloned()).flatten()),
            );
        }
        let mut missing: Vec<u64> = (hashes.iter().zip(&out))
            .filter(|(_, row)| row.is_none())
            .map(|(&hash, _)| hash)
            .collect();
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        missing.sort_unstable();
        missing.dedup();
        let rows = read(&missing)?;
        if rows.len() != missing.len() {
            return Err(source_row_missing());
        }
        let rows = rows
            .into_iter()
            .map(|row| row.map(Arc::new).ok_or_else(source_row_missing))
            .collect::<Result<Vec<_>>>()?;
        {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if kept.generation != generation {
                kept.rows.clear();
                kept.generation = generation;
            }
            for (&hash, row) in missing.iter().zip(&rows) {
                if kept.rows.len() >= SOURCE_ROWS_KEPT {
                    kept.rows.clear();
                }
                kept.rows.insert(hash, Arc::clone(row));
            }
        }
        for (hash, slot) in hashes.iter().zip(&mut out) {
            if slot.is_none() {
                let at = missing.binary_search(hash).expect("read with the others");
                *slot = Some(Arc::clone(&rows[at]));
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: u32) -> SourceRow {
        SourceRow {
            url: format!("http://a.com/{n}"),
            ip: Some("10.0.0.1".parse().unwrap()),
            out: SourceOutlinks {
                external: n,
                internal: 2,
                external_domains: 1,
            },
            citation_flow: 30,
            topics: vec![("News".into(), 20)],
        }
    }

    #[test]
    fn a_row_round_trips_and_refuses_what_it_does_not_know() {
        let encoded = row(7).encode();
        assert_eq!(SourceRow::decode(&encoded).unwrap(), row(7));
        assert!(SourceRow::decode(&encoded[..encoded.len() - 1]).is_err());
        let mut longer = encoded.clone();
        longer.push(0);
        assert!(SourceRow::decode(&longer).is_err());
        let mut other = encoded;
        other[0] = 1;
        assert!(SourceRow::decode(&other).is_err());
        assert_ne!(row(7).check(), row(8).check());
        // A flow generation's fields are not checked: a record keeps the old ones until
        // its flow build rewrites it.
        let end = LinkEnd::new(
            crate::record::FlowPair {
                trust_flow: 1,
                citation_flow: 2,
            },
            &[("Arts".into(), 1)],
        );
        let moved = row(7).with_end(&end);
        assert_eq!((moved.citation_flow, moved.topics.len()), (2, 1));
        assert_eq!(SourceRow::decode(&moved.encode()).unwrap(), moved);
        assert_eq!(moved.check(), row(7).check());
    }

    #[test]
    fn the_memo_reads_each_row_of_a_generation_once_in_order_and_refuses_a_missing_one() {
        let memo = SourceMemo::default();
        let reads = std::cell::RefCell::new(Vec::new());
        let read = |missing: &[u64]| {
            reads.borrow_mut().extend_from_slice(missing);
            Ok(missing.iter().map(|&h| Some(row(h as u32))).collect())
        };
        let got = memo.get_or_read(0, &[3, 1, 3], read).unwrap();
        assert_eq!(
            got.iter().map(|r| r.out.external).collect::<Vec<_>>(),
            [3, 1, 3]
        );
        let got = memo.get_or_read(0, &[1, 2], read).unwrap();
        assert_eq!(
            got.iter().map(|r| r.out.external).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(*reads.borrow(), [1, 3, 2]);
        assert_eq!(memo.get(0, 2).unwrap().out.external, 2);
        assert!(memo.get(0, 4).is_none());
        // Another generation's rows are read again, and replace the memo's.
        assert!(memo.get(1, 2).is_none());
        memo.get_or_read(1, &[2], read).unwrap();
        assert_eq!(*reads.borrow(), [1, 3, 2, 2]);
        assert!(memo.get(1, 2).is_some() && memo.get(0, 1).is_none());
        memo.clear();
        assert!(
            memo.get(1, 2).is_none(),
            "a generation switch forgets every row"
        );
        let err = memo
            .get_or_read(0, &[5], |_| Ok(vec![None]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("source row is missing"), "{err}");
        assert!(memo.get(0, 5).is_none());
    }
}
