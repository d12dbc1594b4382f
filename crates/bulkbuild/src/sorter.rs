//! An external sort of `(table, key, value)` rows within a memory budget.
//!
//! Rows are appended to an arena; when the arena reaches the budget it is sorted by
//! `(partition hash, table, key)` ([`Table::partition_hash`]) and written to a run file.
//! The rows of one item come together whatever their table (a reduction sees an item's
//! backlinks and its other rows in turn), and each table's rows are still in key order,
//! since every key starts with its partition hash (backlink keys after their generation
//! byte, which all rows of one build share). Reading merges the runs (and whatever is
//! still in memory) and yields groups of equal keys. Memory is the budget plus one read
//! buffer per run, whatever the input size; disk holds the runs.
//!
//! ```text
//! run file:  codec u8 | rows, as they are (codec 1) or in one LZ4 frame (codec 2)
//! rows:      { shared uvar | rest uvar | vlen uvar | rest of table u8 + key | value }*
//! ```
//!
//! A row's `table | key` is front-coded: `shared` bytes of the previous row's, then
//! `rest` bytes of its own (the first row shares none). Sorted keys of one item share
//! most of their bytes, about two thirds of a run's key bytes and a third of all its
//! bytes.
//!
//! A build's first runs are written as they are, the rest LZ4-compressed ([`RunPolicy`]):
//! compressing took a tenth of a build's CPU, but runs as they are take about three
//! times the space, and once more of them than the page cache comfortably holds are
//! written, the kernel's writeback and reclaim cost more than LZ4 saved.
//!
//! Run files are private to one build and removed when read (or when the build ends).

use crate::error::{Error, Result};
use linkstore::build::{Table, Values};
use lz4_flex::frame::{FrameDecoder, FrameEncoder};
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Bytes of bookkeeping per row in memory besides its key and value.
const ROW_OVERHEAD: usize = std::mem::size_of::<RowRef>();

/// Room past the budget in the arena's one allocation, so the row that reaches the
/// budget seldom makes it grow.
const ARENA_SLACK: usize = 1 << 20;

/// A row in the arena: its sort words (most comparisons end there), its offset, and
/// the lengths of `table | key` and value.
#[derive(Clone, Copy)]
struct RowRef {
    words: SortWords,
    offset: u32,
    key_len: u32,
    value_len: u32,
}

/// The two words a `table | key` sorts by before its bytes ([`Table::sort_words`]): most
/// comparisons end there, without reading the arena or a run's key, which, for rows
/// sorted in place, is a cache miss per comparison.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct SortWords {
    partition: u64,
    next: u64,
}

impl SortWords {
    fn of(table_and_key: &[u8]) -> SortWords {
        let table = Table::from_u8(table_and_key[0]).expect("sorter holds valid table bytes");
        let (partition, next) = table.sort_words(&table_and_key[1..]);
        SortWords { partition, next }
    }
}

/// The sorter's order of two `table | key`s with their words: partition hash, then
/// table, then key.
fn order(a: (SortWords, &[u8]), b: (SortWords, &[u8])) -> Ordering {
    a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// How a run file's rows are written: its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunCodec {
    /// As they are.
    Raw = 1,
    /// In one LZ4 frame: rows of link records and URLs shrink about 3x.
    Lz4 = 2,
}

impl RunCodec {
    fn from_u8(b: u8) -> Option<RunCodec> {
        [RunCodec::Raw, RunCodec::Lz4]
            .into_iter()
            .find(|c| *c as u8 == b)
    }
}

/// Which runs a build writes as they are: its first runs, while their rows (all sorters
/// of all workers together) fit in `raw_bytes`; from the first that does not, every
/// run is LZ4-compressed.
#[derive(Clone, Debug)]
pub(crate) struct RunPolicy {
    shared: Arc<RunBudget>,
}

#[derive(Debug)]
struct RunBudget {
    raw_left: AtomicU64,
    /// Runs written so far, as they are and compressed: what the build reports.
    raw_runs: AtomicU64,
    compressed_runs: AtomicU64,
}

impl RunPolicy {
    pub(crate) fn new(raw_bytes: u64) -> RunPolicy {
        RunPolicy {
            shared: Arc::new(RunBudget {
                raw_left: AtomicU64::new(raw_bytes),
                raw_runs: AtomicU64::new(0),
                compressed_runs: AtomicU64::new(0),
            }),
        }
    }

    /// The codec of the next run, of `bytes`: as they are if they fit in what is left,
    /// which is then used up either way (a later, smaller run is compressed too).
    fn codec(&self, bytes: u64) -> RunCodec {
        // An empty run still takes a byte, so a spent budget compresses every run.
        let bytes = bytes.max(1);
        let left = self
            .shared
            .raw_left
            .fetch_update(Relaxed, Relaxed, |l| Some(l.saturating_sub(bytes)))
            .expect("the update always gives a value");
        let (codec, count) = if left >= bytes {
            (RunCodec::Raw, &self.shared.raw_runs)
        } else {
            (RunCodec::Lz4, &self.shared.compressed_runs)
        };
        count.fetch_add(1, Relaxed);
        codec
    }

    /// Runs written so far: as they are, and compressed.
    pub(crate) fn runs(&self) -> (u64, u64) {
        let b = &self.shared;
        (b.raw_runs.load(Relaxed), b.compressed_runs.load(Relaxed))
    }
}

pub struct Sorter {
    dir: PathBuf,
    name: String,
    budget: usize,
    policy: RunPolicy,
    arena: Vec<u8>,
    rows: Vec<RowRef>,
    runs: Vec<PathBuf>,
}

impl Sorter {
    /// `dir`: where runs go, written as `policy` says; `name`: their file-name prefix
    /// (unique per sorter).
    pub(crate) fn new(dir: &Path, name: &str, budget: usize, policy: RunPolicy) -> Sorter {
        Sorter {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            budget: budget.max(1 << 20),
            policy,
            arena: Vec::new(),
            rows: Vec::new(),
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        if self.arena.capacity() == 0 {
            // One arena for the sorter's life, reused by every run: grown by doubling and
            // dropped at each spill, it was copied on every growth and its fresh pages
            // zeroed by the kernel again for every run (a quarter of a build's CPU).
            self.arena
                .reserve_exact((self.budget + ARENA_SLACK).min(u32::MAX as usize));
            // Likewise the rows, as many as the budget can hold (past 4 GiB they may still
            // grow): address space only, faulted in as rows arrive.
            self.rows
                .reserve_exact(self.budget.min(u32::MAX as usize) / ROW_OVERHEAD + 1);
        }
        let offset = self.arena.len();
        if offset + key.len() + value.len() + 1 > u32::MAX as usize {
            self.spill()?;
            return self.push(table, key, value);
        }
        self.arena.push(table as u8);
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
        let key_len = key.len() + 1;
        let (partition, next) = table.sort_words(key);
        self.rows.push(RowRef {
            words: SortWords { partition, next },
            offset: offset as u32,
            key_len: key_len as u32,
            value_len: value.len() as u32,
        });
        if self.arena.len() + self.rows.len() * ROW_OVERHEAD >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn sort(&mut self) {
        let arena = &self.arena;
        let key = |r: &RowRef| &arena[r.offset as usize..(r.offset + r.key_len) as usize];
        self.rows
            .sort_unstable_by(|a, b| order((a.words, key(a)), (b.words, key(b))));
    }

    fn spill(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        self.sort();
        let path = self
            .dir
            .join(format!("{}-{:05}.run", self.name, self.runs.len()));
        let codec = self.policy.codec(self.arena.len() as u64);
        let mut out = RunWriter::create(&path, codec)?;
        for (i, r) in self.rows.iter().enumerate() {
            if let Some(ahead) = self.rows.get(i + PREFETCH_ROWS) {
                prefetch(&self.arena[ahead.offset as usize..]);
            }
            let (o, k, v) = (r.offset as usize, r.key_len as usize, r.value_len as usize);
            out.put(&self.arena[o..o + k], &self.arena[o + k..o + k + v])?;
        }
        out.finish()?;
        self.runs.push(path);
        self.arena.clear();
        self.rows.clear();
        Ok(())
    }

    /// Every row in `(partition hash, table, key)` order, as groups of rows whose `table | key` start
    /// with the same `group_len(table | key)` bytes (`<[u8]>::len`: groups of equal keys).
    /// Run files are removed when the groups are dropped.
    pub fn into_groups(mut self, group_len: fn(&[u8]) -> usize) -> Result<Groups> {
        let merge = if self.runs.is_empty() {
            self.sort();
            Merge::Memory {
                arena: std::mem::take(&mut self.arena),
                rows: std::mem::take(&mut self.rows),
                at: 0,
            }
        } else {
            self.spill()?;
            self.arena = Vec::new();
            self.rows = Vec::new();
            let mut runs = Vec::with_capacity(self.runs.len());
            for path in &self.runs {
                let mut r = RunReader::open(path)?;
                if r.advance()? {
                    runs.push(r);
                }
            }
            Merge::Runs(Heap::new(runs))
        };
        Ok(Groups {
            merge,
            runs: std::mem::take(&mut self.runs),
            group_len,
            group: Vec::new(),
            open: false,
            handed_out: false,
            error: None,
        })
    }
}

/// Sorted rows in groups, read one value at a time: a group may hold more values than
/// fit in memory. An operator can stop between values or groups and resume later.
pub struct Groups {
    merge: Merge,
    runs: Vec<PathBuf>,
    group_len: fn(&[u8]) -> usize,
    /// `table | key` prefix of the current group.
    group: Vec<u8>,
    /// True while the current group may have values left.
    open: bool,
    /// The merge's current row was handed out as a value: the merge moves past it before
    /// the next row is looked at. Rows are read where the merge holds them, not copied.
    handed_out: bool,
    /// A read error met while yielding values; see [`Groups::take_error`].
    error: Option<Error>,
}

impl Groups {
    /// Moves to the next group, skipping what is left of the current one, and writes its
    /// key (group part, without the table byte) into `key`; `None` when no rows are left.
    pub fn next_group(&mut self, key: &mut Vec<u8>) -> Result<Option<Table>> {
        while self.advance() {}
        self.take_error()?;
        self.move_past_handed_out();
        let Some((k, _)) = self.merge.peek()? else {
            return Ok(None);
        };
        let n = (self.group_len)(k);
        self.group.clear();
        self.group.extend_from_slice(&k[..n]);
        self.open = true;
        key.clear();
        key.extend_from_slice(&self.group[1..]);
        Ok(Some(
            Table::from_u8(self.group[0]).expect("sorter holds valid table bytes"),
        ))
    }

    fn move_past_handed_out(&mut self) {
        if std::mem::take(&mut self.handed_out) {
            self.merge.pop();
        }
    }

    /// Moves to the current group's next row, which [`Merge::current`] then shows; false
    /// at the group's end or on a read error (kept for `take_error`).
    fn advance(&mut self) -> bool {
        if !self.open {
            return false;
        }
        self.move_past_handed_out();
        let in_group = match self.merge.peek() {
            Ok(Some((k, _))) => {
                (self.group_len)(k) == self.group.len() && starts_with_group(k, &self.group)
            }
            Ok(None) => false,
            Err(e) => {
                self.error = Some(e);
                false
            }
        };
        self.open = in_group;
        self.handed_out = in_group;
        in_group
    }

    /// The error that ended the last group's values early, if any.
    pub fn take_error(&mut self) -> Result<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// Whether `key` starts with `group`, its last bytes compared first: keys of a group
/// share a long item prefix, and the next group's first key most often differs only
/// near the end (a link's hashes, a member's name), which a forward comparison reaches
/// last.
fn starts_with_group(key: &[u8], group: &[u8]) -> bool {
    let n = group.len();
    if key.len() < n {
        return false;
    }
    let tail = n.saturating_sub(8);
    key[tail..n] == group[tail..] && key[..tail] == group[..tail]
}

impl Values for Groups {
    fn next_value(&mut self) -> Option<&[u8]> {
        if self.advance() {
            self.merge.current().map(|(_, v)| v)
        } else {
            None
        }
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        for path in &self.runs {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Sorter {
    fn drop(&mut self) {
        for path in &self.runs {
            let _ = std::fs::remove_file(path);
        }
    }
}

enum Merge {
    Memory {
        arena: Vec<u8>,
        rows: Vec<RowRef>,
        at: usize,
    },
    Runs(Heap),
}

impl Merge {
    /// The current row (table byte + key, value) in order, reading it if needed; it stays
    /// current until [`Merge::pop`].
    fn peek(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if let Merge::Runs(heap) = self {
            heap.advance_if_popped()?;
        }
        Ok(self.current())
    }

    /// The row [`Merge::peek`] read last.
    fn current(&self) -> Option<(&[u8], &[u8])> {
        match self {
            Merge::Memory { arena, rows, at } => {
                let r = rows.get(*at)?;
                let (o, k, v) = (r.offset as usize, r.key_len as usize, r.value_len as usize);
                Some((&arena[o..o + k], &arena[o + k..o + k + v]))
            }
            Merge::Runs(heap) => heap.top(),
        }
    }

    /// Moves past the current row.
    fn pop(&mut self) {
        match self {
            Merge::Memory { arena, rows, at } => {
                *at += 1;
                if let Some(ahead) = rows.get(*at + PREFETCH_ROWS) {
                    prefetch(&arena[ahead.offset as usize..]);
                }
            }
            Merge::Runs(heap) => heap.popped = true,
        }
    }
}

/// Writes a run file (format above), rows in the order given.
pub(crate) struct RunWriter {
    path: PathBuf,
    out: RunOut,
    header: Vec<u8>,
    /// The previous row's key, which the next one's is front-coded against.
    last_key: Vec<u8>,
}

/// Where a run's rows go after its codec byte.
enum RunOut {
    Raw(BufWriter<File>),
    Lz4(FrameEncoder<BufWriter<File>>),
}

impl RunWriter {
    pub(crate) fn create(path: &Path, codec: RunCodec) -> Result<RunWriter> {
        let err = |e| Error::io(path, e);
        let mut file = BufWriter::with_capacity(1 << 20, File::create(path).map_err(err)?);
        file.write_all(&[codec as u8]).map_err(err)?;
        Ok(RunWriter {
            path: path.to_path_buf(),
            out: match codec {
                RunCodec::Raw => RunOut::Raw(file),
                RunCodec::Lz4 => RunOut::Lz4(FrameEncoder::new(file)),
            },
            header: Vec::with_capacity(30),
            last_key: Vec::new(),
        })
    }

    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let shared = common_prefix(&self.last_key, key);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        let key = &key[shared..];
        self.header.clear();
        put_uvarint(&mut self.header, shared as u64);
        put_uvarint(&mut self.header, key.len() as u64);
        put_uvarint(&mut self.header, value.len() as u64);
        let out: &mut dyn Write = match &mut self.out {
            RunOut::Raw(w) => w,
            RunOut::Lz4(w) => w,
        };
        out.write_all(&self.header)
            .and_then(|()| out.write_all(key))
            .and_then(|()| out.write_all(value))
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Completes the file: its path.
    pub(crate) fn finish(self) -> Result<PathBuf> {
        let file = match self.out {
            RunOut::Raw(w) => Ok(w),
            RunOut::Lz4(w) => w.finish().map_err(std::io::Error::from),
        };
        file.and_then(|mut w| w.flush())
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(self.path)
    }
}

/// One run file being read: its current row.
pub(crate) struct RunReader {
    path: PathBuf,
    input: BufReader<Box<dyn Read + Send>>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl RunReader {
    /// The row [`RunReader::advance`] read last.
    pub(crate) fn row(&self) -> (&[u8], &[u8]) {
        (&self.key, &self.value)
    }

    pub(crate) fn open(path: &Path) -> Result<RunReader> {
        let err = |e| Error::io(path, e);
        let mut file = File::open(path).map_err(err)?;
        let mut codec = [0];
        file.read_exact(&mut codec).map_err(err)?;
        let rows: Box<dyn Read + Send> = match RunCodec::from_u8(codec[0]) {
            Some(RunCodec::Raw) => Box::new(file),
            Some(RunCodec::Lz4) => Box::new(FrameDecoder::new(file)),
            None => {
                return Err(err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("not a sorted run: codec byte {}", codec[0]),
                )))
            }
        };
        Ok(RunReader {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 16, rows),
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// Reads the next row; false at the end of the run.
    pub(crate) fn advance(&mut self) -> Result<bool> {
        let err = |e| Error::io(&self.path, e);
        if self.input.fill_buf().map_err(err)?.is_empty() {
            return Ok(false);
        }
        let shared = read_uvarint(&mut self.input).map_err(err)?;
        let rest = read_uvarint(&mut self.input).map_err(err)?;
        let v = read_uvarint(&mut self.input).map_err(err)?;
        let invalid = |why: String| err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
        if shared > self.key.len() as u64 {
            return Err(invalid(format!(
                "row sharing {shared} bytes of a {}-byte key: not a sorted run's",
                self.key.len()
            )));
        }
        // A sorter's rows are shorter than 4 GiB (their offsets are `u32`): a longer
        // length is a damaged run, refused before anything is allocated for it.
        let (Ok(rest), Ok(v)) = (u32::try_from(rest), u32::try_from(v)) else {
            return Err(invalid(format!(
                "row of {shared} + {rest} + {v} bytes: not a sorted run's"
            )));
        };
        let (shared, rest, v) = (shared as usize, rest as usize, v as usize);
        self.key.resize(shared + rest, 0);
        self.value.resize(v, 0);
        self.input
            .read_exact(&mut self.key[shared..])
            .map_err(err)?;
        self.input.read_exact(&mut self.value).map_err(err)?;
        Ok(true)
    }
}

/// A binary min-heap of run readers by their current key.
struct Heap {
    /// Each run's reader with the sort words of its current row.
    runs: Vec<(SortWords, RunReader)>,
    /// Indices into `runs` of those with rows left, as a binary heap: moving an index
    /// costs less than moving a reader.
    heap: Vec<usize>,
    /// Set once the top's row was popped: its run reads its next row before the top is
    /// looked at again.
    popped: bool,
}

impl Heap {
    fn new(runs: Vec<RunReader>) -> Heap {
        let mut h = Heap {
            heap: (0..runs.len()).collect(),
            runs: runs
                .into_iter()
                .map(|r| (SortWords::of(&r.key), r))
                .collect(),
            popped: false,
        };
        for i in (0..h.heap.len()).rev() {
            h.sift_down(i);
        }
        h
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (wa, a) = &self.runs[self.heap[a]];
        let (wb, b) = &self.runs[self.heap[b]];
        order((*wa, &a.key), (*wb, &b.key)) == Ordering::Less
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < self.heap.len() && self.less(l, m) {
                m = l;
            }
            if r < self.heap.len() && self.less(r, m) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    fn advance_if_popped(&mut self) -> Result<()> {
        if std::mem::take(&mut self.popped) {
            let (words, top) = &mut self.runs[self.heap[0]];
            if top.advance()? {
                *words = SortWords::of(&top.key);
            } else {
                self.heap.swap_remove(0);
            }
            self.sift_down(0);
        }
        Ok(())
    }

    /// The smallest current row of the runs.
    fn top(&self) -> Option<(&[u8], &[u8])> {
        let (_, r) = &self.runs[*self.heap.first()?];
        Some((&r.key[..], &r.value[..]))
    }
}

/// Rows ahead of the one being read whose bytes a spill or an in-memory merge asks the
/// CPU to fetch: sorted, the rows are read from all over the arena, each read a cache
/// miss.
const PREFETCH_ROWS: usize = 8;

/// Asks the CPU to bring the first cache line of `bytes` into its caches.
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program, never faults, and
    // its pointer comes from a live slice.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            bytes.as_ptr().cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// How many bytes `a` and `b` start with in common, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 <= n {
        let differ = word(a, i) ^ word(b, i);
        if differ != 0 {
            return i + (differ.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_uvarint(r: &mut impl Read) -> std::io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8];
        r.read_exact(&mut b)?;
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "varint longer than 10 bytes",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(s: Sorter) -> Vec<(Table, Vec<u8>, Vec<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut g = s.into_groups(<[u8]>::len).unwrap();
        let mut key = Vec::new();
        while let Some(table) = g.next_group(&mut key).unwrap() {
            let mut v = Vec::new();
            while let Some(value) = g.next_value() {
                v.push(value.to_vec());
            }
            g.take_error().unwrap();
            v.sort();
            out.push((table, key.clone(), v));
        }
        out
    }

    #[test]
    fn a_group_prefix_is_found_as_starts_with_finds_it() {
        let group = b"item-key-of-some-length|member";
        for key in [
            &group[..],
            b"item-key-of-some-length|member and more",
            b"item-key-of-some-length|membeR",
            b"Item-key-of-some-length|member",
            b"item-key-of-some-length|memb",
            b"item-key-of-some-length|mem|er",
            b"",
        ] {
            assert_eq!(
                starts_with_group(key, group),
                key.starts_with(group),
                "{key:?}"
            );
        }
        for (key, group) in [
            (&b"abc"[..], &b"abc"[..]),
            (b"abd", b"abc"),
            (b"a", b""),
            (b"", b""),
        ] {
            assert_eq!(starts_with_group(key, group), key.starts_with(group));
        }
    }

    #[test]
    fn common_prefixes_are_counted_byte_by_byte() {
        let a: Vec<u8> = (0..40).collect();
        for len in 0..=40 {
            for at in 0..=len {
                let mut b = a[..len].to_vec();
                if at < len {
                    b[at] ^= 0x10;
                }
                let expected = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                assert_eq!(common_prefix(&a, &b), expected, "{len} {at}");
                assert_eq!(common_prefix(&b, &a), expected, "{len} {at}");
            }
        }
    }

    #[test]
    fn sort_words_order_keys_as_their_hash_then_bytes_do() {
        // Short keys, keys that differ only past the words, zero bytes where padding
        // goes, and a generation byte: every pair, both ways.
        let mut keys = Vec::new();
        for table in [
            Table::Backlinks,
            Table::Counters,
            Table::Sources,
            Table::Urls,
        ] {
            for len in [0usize, 1, 5, 8, 9, 10, 15, 16, 17, 24] {
                for seed in 0..6u8 {
                    let key: Vec<u8> = (0..len)
                        .map(|i| match seed {
                            0 => 0,
                            1 => (i % 2) as u8,
                            s => (i as u8).wrapping_mul(s) ^ (len as u8) & 3,
                        })
                        .collect();
                    keys.push([&[table as u8][..], &key].concat());
                }
            }
        }
        let expected = |k: &[u8]| {
            let table = Table::from_u8(k[0]).unwrap();
            (table.partition_hash(&k[1..]), k.to_vec())
        };
        for a in &keys {
            for b in &keys {
                assert_eq!(
                    order((SortWords::of(a), a), (SortWords::of(b), b)),
                    expected(a).cmp(&expected(b)),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn spilled_and_in_memory_sorts_give_the_same_groups() {
        // Every run as it is, every run compressed, and the first as it is.
        for raw_bytes in [u64::MAX, 0, 1 << 20] {
            spilled_and_in_memory_sorts_agree(raw_bytes);
        }
    }

    fn spilled_and_in_memory_sorts_agree(raw_bytes: u64) {
        let dir = tempfile::tempdir().unwrap();
        let policy = RunPolicy::new(raw_bytes);
        // Spills every megabyte.
        let mut small = Sorter::new(dir.path(), "small", 1, policy.clone());
        let mut big = Sorter::new(dir.path(), "big", 1 << 30, policy);
        let mut rows = Vec::new();
        for i in 0..200_000u32 {
            let table = if i % 3 == 0 {
                Table::Counters
            } else {
                Table::Distinct
            };
            let key = (i.wrapping_mul(2_654_435_761) % 7_000).to_be_bytes();
            let value = vec![(i % 251) as u8; 1 + (i % 40) as usize];
            rows.push((table, key, value));
        }
        for (t, k, v) in &rows {
            small.push(*t, k, v).unwrap();
            big.push(*t, k, v).unwrap();
        }
        assert!(small.runs.len() > 1, "the small budget spilled");
        assert!(big.runs.is_empty());
        // The last, partial run too (`into_groups` would spill it): smaller than those
        // before, it is compressed once one of them was.
        small.spill().unwrap();
        let codecs: Vec<u8> = small
            .runs
            .iter()
            .map(|r| std::fs::read(r).unwrap()[0])
            .collect();
        let raw = codecs.iter().filter(|&&c| c == RunCodec::Raw as u8).count();
        match raw_bytes {
            0 => assert_eq!(raw, 0),
            u64::MAX => assert_eq!(raw, codecs.len()),
            _ => assert!(raw > 0 && raw < codecs.len(), "{codecs:?}"),
        }
        assert!(codecs[..raw].iter().all(|&c| c == RunCodec::Raw as u8));
        assert!(codecs[raw..].iter().all(|&c| c == RunCodec::Lz4 as u8));
        let a = groups(small);
        assert_eq!(a, groups(big));
        let order =
            |g: &(Table, Vec<u8>, Vec<Vec<u8>>)| (g.0.partition_hash(&g.1), g.0, g.1.clone());
        assert!(a.windows(2).all(|w| order(&w[0]) < order(&w[1])));
        assert_eq!(a.iter().map(|g| g.2.len()).sum::<usize>(), rows.len());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "runs removed"
        );
    }

    #[test]
    fn groups_by_key_prefix_stream_in_key_order_and_skip_unread_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = Sorter::new(dir.path(), "prefix", 1, RunPolicy::new(0));
        // Keys: a 4-byte page, then a 1-byte suffix that orders its values.
        for i in (0..40_000u32).rev() {
            let key = [(i % 3).to_be_bytes().as_slice(), &[(i % 200) as u8]].concat();
            sorter.push(Table::Pages, &key, &i.to_be_bytes()).unwrap();
        }
        let mut groups = sorter.into_groups(|k| k.len() - 1).unwrap();
        let mut key = Vec::new();
        let mut seen = Vec::new();
        while let Some(table) = groups.next_group(&mut key).unwrap() {
            assert_eq!(table, Table::Pages);
            let page = u32::from_be_bytes(key[..4].try_into().unwrap());
            if page == 1 {
                // Read two values only: the rest of the group is skipped.
                groups.next_value().unwrap();
                groups.next_value().unwrap();
                seen.push((page, 2));
                continue;
            }
            let mut n = 0;
            let mut last = None;
            while let Some(v) = groups.next_value() {
                let suffix = u32::from_be_bytes(v.try_into().unwrap()) % 200;
                assert!(last.is_none_or(|l| l <= suffix), "values in key order");
                last = Some(suffix);
                n += 1;
            }
            seen.push((page, n));
        }
        groups.take_error().unwrap();
        assert_eq!(seen, vec![(0, 13_334), (1, 2), (2, 13_333)]);
    }

    #[test]
    fn a_run_of_an_unknown_codec_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w0-views1-00000.run");
        for (bytes, why) in [
            (&[0u8, 1, 1, b'k', b'v'][..], "codec byte 0"),
            (&[3u8][..], "codec byte 3"),
            (&[][..], "failed to fill whole buffer"),
        ] {
            std::fs::write(&path, bytes).unwrap();
            let e = RunReader::open(&path).err().expect("refused").to_string();
            assert!(e.contains("w0-views1-00000.run") && e.contains(why), "{e}");
        }
        // A damaged length: refused, not allocated; a first row sharing bytes with no
        // key before it: refused; a row cut short: refused.
        for (bytes, why) in [
            (
                &[1u8, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, b'k'][..],
                "row of 0 + 34359738367 + 1 bytes: not a sorted run's",
            ),
            (
                &[1u8, 2, 1, 1, b'k', b'v'][..],
                "row sharing 2 bytes of a 0-byte key",
            ),
            (&[1u8, 0, 3, 1, b'k'][..], "failed to fill whole buffer"),
        ] {
            std::fs::write(&path, bytes).unwrap();
            let e = RunReader::open(&path)
                .unwrap()
                .advance()
                .unwrap_err()
                .to_string();
            assert!(e.contains("w0-views1-00000.run") && e.contains(why), "{e}");
        }
        // Keys front-coded against the one before, whatever their order.
        let rows: [(&[u8], &[u8]); 5] = [
            (b"key", b"value"),
            (b"key", b""),
            (b"keys", b"v"),
            (b"k", b"w"),
            (b"other", b"x"),
        ];
        let mut w = RunWriter::create(&path, RunCodec::Raw).unwrap();
        for (k, v) in rows {
            w.put(k, v).unwrap();
        }
        w.finish().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let whole: usize = rows.iter().map(|(k, v)| 3 + k.len() + v.len()).sum();
        assert_eq!(
            len as usize,
            1 + whole - 3 - 3 - 1,
            "shared bytes are left out"
        );
        let mut r = RunReader::open(&path).unwrap();
        for row in rows {
            assert!(r.advance().unwrap());
            assert_eq!(r.row(), row);
        }
        assert!(!r.advance().unwrap());
    }
}
