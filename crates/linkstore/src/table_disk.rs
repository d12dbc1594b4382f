//! Where a table's bytes on disk go: data, index and filter blocks, and the raw key and
//! value bytes they hold, from RocksDB's aggregated table properties.

/// One column family's SST files, bytes (`Store::disk_by_table`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableDisk {
    pub name: &'static str,
    /// The files' size on disk.
    pub file_bytes: u64,
    pub entries: u64,
    /// Data blocks after compression.
    pub data_bytes: u64,
    pub index_bytes: u64,
    pub filter_bytes: u64,
    /// Keys and values before prefix encoding and compression; each key counts RocksDB's
    /// 8-byte sequence number and type.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
}

impl TableDisk {
    /// Fills the block and raw sizes from the text of RocksDB's
    /// `rocksdb.aggregated-table-properties` (`name=value` pairs joined by `; `). A
    /// property missing from the text stays 0.
    pub(crate) fn with_properties(mut self, text: &str) -> TableDisk {
        for pair in text.split("; ") {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<u64>() else {
                continue;
            };
            let field = match key.trim() {
                "# entries" => &mut self.entries,
                "data block size" => &mut self.data_bytes,
                "filter block size" => &mut self.filter_bytes,
                "raw key size" => &mut self.raw_key_bytes,
                "raw value size" => &mut self.raw_value_bytes,
                // Named with its options: "index block size (user-key? 1, ...)".
                k if k.starts_with("index block size") => &mut self.index_bytes,
                _ => continue,
            };
            *field = value;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_text_fills_the_sizes_it_names() {
        let text = "# data blocks=12; # entries=3400; # deletions=0; raw key size=81600; \
                    raw average key size=24; raw value size=10200; data block size=40960; \
                    index block size (user-key? 1, delta-value? 1)=512; \
                    filter block size=4352; filter policy name=bloomfilter";
        let t = TableDisk::default().with_properties(text);
        assert_eq!(
            (t.entries, t.data_bytes, t.index_bytes, t.filter_bytes),
            (3400, 40960, 512, 4352)
        );
        assert_eq!((t.raw_key_bytes, t.raw_value_bytes), (81600, 10200));
        assert_eq!(
            TableDisk::default().with_properties("garbage; =; x=y"),
            TableDisk::default()
        );
    }
}
