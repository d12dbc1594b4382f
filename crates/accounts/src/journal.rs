//! The metering journal (`docs/format.md`, "Metering journal"): after each charge or
//! refund, the new absolute totals of every account it touched, appended with one
//! `write`. Absolute totals make replay idempotent: the last entry of an account and
//! period is its total. Journals are numbered by generation; the account store records
//! the generation its `usage` table was checkpointed at, and every journal from that
//! generation on holds what came after.

use crate::Units;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"LBMJ";
const VERSION: u8 = 1;
const HEADER_LEN: usize = 16;
const ENTRY_LEN: usize = 48;

/// An account's total use in one period, as of one charge or refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub account: i64,
    pub period: i64,
    pub used: Units,
}

impl Entry {
    fn encode(&self, slot: &mut [u8]) {
        let words = [
            self.account as u64,
            self.period as u64,
            self.used.index_item_info,
            self.used.analysis,
            self.used.retrieval,
        ];
        for (w, b) in words.iter().zip(slot.chunks_exact_mut(8)) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        let crc = crc32fast::hash(&slot[..40]);
        slot[40..44].copy_from_slice(&crc.to_le_bytes());
        slot[44..48].fill(0);
    }

    /// `None` for a torn or corrupt entry, or unwritten space.
    fn decode(b: &[u8]) -> Option<Entry> {
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(b[40..44].try_into().expect("4 bytes"));
        (crc32fast::hash(&b[..40]) == crc).then(|| Entry {
            account: word(0) as i64,
            period: word(1) as i64,
            used: Units {
                index_item_info: word(2),
                analysis: word(3),
                retrieval: word(4),
            },
        })
    }
}

/// The journal of generation `generation` beside the account store at `base`.
pub(crate) fn path(base: &Path, generation: u64) -> PathBuf {
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(format!("-meter.{generation}"));
    base.with_file_name(name)
}

/// The generations whose journals exist beside `base`, oldest first.
pub(crate) fn generations(base: &Path) -> io::Result<Vec<u64>> {
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = base.file_name().unwrap_or_default().to_os_string();
    prefix.push("-meter.");
    let prefix = prefix.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(g) = name.strip_prefix(&prefix).and_then(|g| g.parse().ok()) {
            found.push(g);
        }
    }
    found.sort_unstable();
    Ok(found)
}

/// The entries of one journal, in order; `None` if it does not exist. Reading stops at
/// the first torn entry (a write cut short by a power loss).
pub(crate) fn read(base: &Path, generation: u64) -> io::Result<Option<Vec<Entry>>> {
    let at = path(base, generation);
    let mut bytes = Vec::new();
    match File::open(&at) {
        Ok(mut f) => f.read_to_end(&mut bytes)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let header_ok = bytes.len() >= HEADER_LEN
        && &bytes[..4] == MAGIC
        && bytes[8..16] == generation.to_le_bytes();
    if !header_ok {
        // A journal being created (sized, then headed: another process may read it in
        // between), or created and killed before its header was whole, holds nothing:
        // each byte of its header is still zero or already what `Journal::create` writes.
        let mut created = [0u8; HEADER_LEN];
        created[..4].copy_from_slice(MAGIC);
        created[4] = VERSION;
        created[8..].copy_from_slice(&generation.to_le_bytes());
        let header = &bytes[..bytes.len().min(HEADER_LEN)];
        if header.iter().zip(created).all(|(&b, c)| b == 0 || b == c) {
            return Ok(Some(Vec::new()));
        }
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: not a metering journal of generation {generation}",
                at.display()
            ),
        ));
    }
    if bytes[4] != VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: metering journal version {}, this build reads version {VERSION}",
                at.display(),
                bytes[4]
            ),
        ));
    }
    Ok(Some(
        bytes[HEADER_LEN..]
            .chunks_exact(ENTRY_LEN)
            .map_while(Entry::decode)
            .collect(),
    ))
}

/// Entries one journal holds; a full journal is switched for the next one.
const CAPACITY: usize = 1 << 17;

/// The journal being appended to: a file of fixed size mapped into memory, so an append
/// is a copy into the page cache, with no system call. Unwritten space is zeros, which
/// never pass an entry's check, so readers stop there.
pub(crate) struct Journal {
    map: memmap2::MmapMut,
    file: File,
    len: usize,
    pub generation: u64,
}

/// Appending to a full journal.
#[derive(Debug)]
pub(crate) struct Full;

impl Journal {
    /// Creates the journal of `generation`, which must not exist yet.
    pub fn create(base: &Path, generation: u64) -> io::Result<Journal> {
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(path(base, generation))?;
        file.set_len((HEADER_LEN + CAPACITY * ENTRY_LEN) as u64)?;
        // SAFETY: memmap2 asks that the file change only through this mapping while it
        // lives (others writing or truncating it would change memory Rust assumes it
        // owns). The file was just created (`create_new`), so nobody else has it open
        // for writing; only the process holding the exclusive metering lock creates
        // journals, each generation once, and every process (this one included) reads
        // journals with read(2) only. The size is set above and never changed while
        // mapped; old journals are unlinked, which leaves a mapping valid. So its bytes
        // change only through `map`, which this `Journal` owns and writes via `&mut self`.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        map[..4].copy_from_slice(MAGIC);
        map[4] = VERSION;
        map[8..HEADER_LEN].copy_from_slice(&generation.to_le_bytes());
        file.sync_data()?;
        Ok(Journal {
            map,
            file,
            len: HEADER_LEN,
            generation,
        })
    }

    /// Appends `entries` (copied into the mapped file): once it returns they survive the
    /// process being killed (they are in the operating system's page cache);
    /// [`Journal::sync`] makes them survive a power loss too.
    pub fn append(&mut self, entries: &[Entry]) -> Result<(), Full> {
        let end = self.len + entries.len() * ENTRY_LEN;
        if end > self.map.len() {
            return Err(Full);
        }
        for (e, slot) in entries
            .iter()
            .zip(self.map[self.len..end].chunks_exact_mut(ENTRY_LEN))
        {
            e.encode(slot);
        }
        self.len = end;
        Ok(())
    }

    /// A handle on the file, for syncing without holding the journal.
    pub fn file(&self) -> io::Result<File> {
        self.file.try_clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(account: i64, n: u64) -> Entry {
        Entry {
            account,
            period: 3,
            used: Units {
                index_item_info: n,
                analysis: 2 * n,
                retrieval: u64::MAX - n,
            },
        }
    }

    #[test]
    fn entries_read_back_in_order_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("accounts.sqlite");
        assert_eq!(read(&base, 7).unwrap(), None);
        let mut j = Journal::create(&base, 7).unwrap();
        j.append(&[entry(1, 1), entry(2, 1)]).unwrap();
        j.append(&[entry(1, 2)]).unwrap();
        let all = vec![entry(1, 1), entry(2, 1), entry(1, 2)];
        assert_eq!(read(&base, 7).unwrap(), Some(all.clone()));
        assert_eq!(generations(&base).unwrap(), vec![7]);
        // A power loss tears the last entry: it is dropped, the others stay.
        drop(j);
        let mut bytes = std::fs::read(path(&base, 7)).unwrap();
        let end = HEADER_LEN + 3 * ENTRY_LEN;
        bytes[end - 10..end].fill(0);
        std::fs::write(path(&base, 7), &bytes).unwrap();
        assert_eq!(read(&base, 7).unwrap(), Some(all[..2].to_vec()));
        // A flipped bit ends the readable part at the entry it hits.
        bytes[HEADER_LEN + ENTRY_LEN + 3] ^= 1;
        std::fs::write(path(&base, 7), &bytes).unwrap();
        assert_eq!(read(&base, 7).unwrap(), Some(all[..1].to_vec()));
    }

    #[test]
    fn a_full_journal_says_so_and_keeps_what_it_has() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("accounts.sqlite");
        let mut j = Journal::create(&base, 1).unwrap();
        for n in 0..CAPACITY as u64 {
            j.append(&[entry(1, n)]).unwrap();
        }
        assert!(j.append(&[entry(1, 0)]).is_err());
        let read = read(&base, 1).unwrap().unwrap();
        assert_eq!(
            (read.len(), read.last()),
            (CAPACITY, Some(&entry(1, CAPACITY as u64 - 1)))
        );
        assert!(
            Journal::create(&base, 1).is_err(),
            "a generation is created once"
        );
    }

    /// A reader that comes between `Journal::create` sizing the file and writing its
    /// header finds nothing in it, not a foreign file.
    #[test]
    fn a_journal_sized_but_not_yet_headed_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("accounts.sqlite");
        let sized = vec![0u8; HEADER_LEN + 4 * ENTRY_LEN];
        std::fs::write(path(&base, 3), &sized).unwrap();
        assert_eq!(read(&base, 3).unwrap(), Some(Vec::new()));
        let mut half_headed = sized;
        half_headed[..4].copy_from_slice(MAGIC);
        std::fs::write(path(&base, 3), &half_headed).unwrap();
        assert_eq!(read(&base, 3).unwrap(), Some(Vec::new()));
        // Another generation's header is still refused.
        half_headed[8..HEADER_LEN].copy_from_slice(&4u64.to_le_bytes());
        std::fs::write(path(&base, 3), &half_headed).unwrap();
        assert!(read(&base, 3).is_err());
    }

    #[test]
    fn a_foreign_or_newer_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("accounts.sqlite");
        std::fs::write(path(&base, 1), b"something else entirely").unwrap();
        let e = read(&base, 1).unwrap_err().to_string();
        assert!(
            e.contains("accounts.sqlite-meter.1") && e.contains("not a metering journal"),
            "{e}"
        );
        drop(Journal::create(&base, 2).unwrap());
        let mut bytes = std::fs::read(path(&base, 2)).unwrap();
        bytes[4] = 9;
        std::fs::write(path(&base, 2), &bytes).unwrap();
        let e = read(&base, 2).unwrap_err().to_string();
        assert!(e.contains("version 9"), "{e}");
    }
}
