//! The incremental writer's block cache when `linkbase ingest --cache` is not given.
//!
//! A crawl round reads the aggregate rows of every item it touches; once the index
//! outgrows the cache those reads miss and decompress blocks again (a 2.12M-link round on
//! an 18.1M-link, 4.5 GB index: 104.7 s with 2 GB, 81.2 s with the whole index cached).
//! The cache holds blocks decompressed, and the writer reads every table but most of
//! `backlinks` (about 70% of a storage-format-9 index): on a 3.2 GB index the same round
//! took 69.0-73.7 s with 3.2 GB, 64.2-65.3 s and 11% less CPU with 6.5 GB. One round on
//! an 18.1M-link, 2.1 GB index reads 4.9 GB of decompressed blocks, and a long ingest
//! grows the index under a cache sized when it starts: six such rounds in one process
//! took 355.2-370.0 s with 8 GB against 380.6-404.5 s with 4.2 GB (`docs/benchmarks.md`,
//! "Rounds one after another"). So the cache follows four times the index's size, within
//! bounds that keep small machines safe.

use std::path::Path;

/// The least cache given, whatever the index's size.
const FLOOR: usize = 2 << 30;

/// The cache for an index of `on_disk` bytes on a machine with `memory` bytes (unknown:
/// `None`): four times the index's size, at least [`FLOOR`], at most a third of memory.
pub fn cache_bytes(on_disk: u64, memory: Option<u64>) -> usize {
    let ceiling = memory.map_or(FLOOR as u64, |m| m / 3).max(FLOOR as u64);
    let wanted = on_disk.saturating_mul(4);
    usize::try_from(wanted.clamp(FLOOR as u64, ceiling)).unwrap_or(usize::MAX)
}

/// [`cache_bytes`] for the index in `dir` on this machine.
pub fn for_index(dir: &Path) -> usize {
    cache_bytes(dir_bytes(dir), physical_memory())
}

/// Bytes of the files directly in `dir` (a RocksDB directory is flat); 0 when it does not
/// exist yet.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Physical memory from `/proc/meminfo` (Linux); `None` elsewhere or when unreadable.
pub fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_cache_follows_the_index_within_its_bounds() {
        // A small or new index gets the floor.
        assert_eq!(cache_bytes(0, Some(24 * GIB)), FLOOR);
        assert_eq!(cache_bytes(GIB / 4, Some(24 * GIB)), FLOOR);
        // A larger one gets four times its size...
        assert_eq!(cache_bytes(3 * GIB / 2, Some(24 * GIB)), 6 * GIB as usize);
        // ...up to a third of memory.
        assert_eq!(cache_bytes(3 * GIB, Some(24 * GIB)), 8 * GIB as usize);
        assert_eq!(cache_bytes(20 * GIB, Some(24 * GIB)), 8 * GIB as usize);
        // Small or unknown memory never takes the cache below the floor.
        assert_eq!(cache_bytes(20 * GIB, Some(3 * GIB)), FLOOR);
        assert_eq!(cache_bytes(20 * GIB, None), FLOOR);
    }

    #[test]
    fn an_index_directory_is_measured_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("000001.sst"), vec![0u8; 3000]).unwrap();
        std::fs::write(dir.path().join("MANIFEST"), vec![0u8; 500]).unwrap();
        assert_eq!(dir_bytes(dir.path()), 3500);
        assert_eq!(dir_bytes(&dir.path().join("absent")), 0);
        assert!(physical_memory().is_some(), "Linux reports its memory");
    }
}
