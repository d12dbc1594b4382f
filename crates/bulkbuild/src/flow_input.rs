//! What a bulk build keeps for the flow build that follows it (a historic build): the
//! edges of the link graph and every backlink row, in run files (the sorter's format)
//! beside the store. The flow build then reads neither from the store, and backlink rows
//! are written to it once, in their final SourceTrustFlow order.
//!
//! ```text
//! <store>.flow-input/
//!   w000-p-edges-0.rows       { source URL, target URL }* of internal links that carry
//!                             flow, in `links` key order (a snapshot's: `pages` order)
//!   w000-v-edges-1.rows       the same of external links, in `backlinks` key order, and
//!                             { source URL, "" } of each external link that carries none
//!                             (`linkstore::FlowLink::Source`)
//!   w000-v-backlinks-2.rows   { backlink key, value }* in key order: a URL row's link
//!                             record, a host's or root domain's facts row naming the
//!                             link's source URL (`linkstore::build`)
//! ```
//!
//! Worker `w` owns the `w`-th range of item hashes, so its backlink file holds whole
//! items, and the files in worker order are in key order. The edges come in the order a
//! flow build over the store reads them (`ReadView::scan_flow_links`): internal links,
//! then external ones.

use crate::error::Result;
use crate::sorter::{RunCodec, RunReader, RunWriter};
use linkstore::build::Table;
use linkstore::FlowLink;
use std::path::{Path, PathBuf};

/// The kept files; the directory goes when this is dropped.
#[derive(Debug)]
pub struct FlowInput {
    dir: PathBuf,
    edges: Vec<PathBuf>,
    external_edges: Vec<PathBuf>,
    backlinks: Vec<PathBuf>,
}

impl FlowInput {
    /// No files yet, in `dir`.
    pub(crate) fn new(dir: PathBuf) -> FlowInput {
        FlowInput {
            dir,
            edges: Vec::new(),
            external_edges: Vec::new(),
            backlinks: Vec::new(),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a worker's files (workers in order).
    pub(crate) fn add(&mut self, kept: KeptFiles) {
        self.edges.extend(kept.edges);
        self.external_edges.extend(kept.external_edges);
        self.backlinks.extend(kept.backlinks);
    }

    /// The graph's edges, one reader per file: internal links', then external links'.
    pub fn edges(&self) -> Result<Vec<RowFile>> {
        self.edges
            .iter()
            .chain(&self.external_edges)
            .map(|p| RowFile::open(p))
            .collect()
    }

    /// The backlink rows, one reader per worker, in key order.
    pub fn backlinks(&self) -> Result<Vec<RowFile>> {
        self.backlinks.iter().map(|p| RowFile::open(p)).collect()
    }
}

impl Drop for FlowInput {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The rows of one kept file, in order; an error names the file.
pub struct RowFile {
    reader: RunReader,
}

impl RowFile {
    fn open(path: &Path) -> Result<RowFile> {
        Ok(RowFile {
            reader: RunReader::open(path)?,
        })
    }
}

impl Iterator for RowFile {
    type Item = std::io::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.advance() {
            Ok(true) => {
                let (k, v) = self.reader.row();
                Some(Ok((k.to_vec(), v.to_vec())))
            }
            Ok(false) => None,
            Err(e) => Some(Err(std::io::Error::other(e.to_string()))),
        }
    }
}

/// One writer's kept rows (see [`crate::pipeline`]'s `Files`), each kind in a file
/// opened at its first row.
pub(crate) struct KeptRows {
    dir: PathBuf,
    prefix: String,
    edges: Option<RunWriter>,
    external_edges: Option<RunWriter>,
    backlinks: Option<RunWriter>,
    last_backlink: Vec<u8>,
    /// Files opened so far, numbering their names.
    opened: usize,
}

/// Paths of the files a worker kept.
#[derive(Debug, Default)]
pub(crate) struct KeptFiles {
    pub edges: Vec<PathBuf>,
    pub external_edges: Vec<PathBuf>,
    pub backlinks: Vec<PathBuf>,
}

impl KeptRows {
    pub(crate) fn new(dir: &Path, prefix: &str) -> KeptRows {
        KeptRows {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            edges: None,
            external_edges: None,
            backlinks: None,
            last_backlink: Vec::new(),
            opened: 0,
        }
    }

    /// The open file of a kind, opened if need be. Kept rows are LZ4-compressed: they
    /// stay on disk through the whole flow build.
    fn writer<'w>(
        slot: &'w mut Option<RunWriter>,
        opened: &mut usize,
        dir: &Path,
        name: String,
    ) -> Result<&'w mut RunWriter> {
        if slot.is_none() {
            *opened += 1;
            *slot = Some(RunWriter::create(&dir.join(name), RunCodec::Lz4)?);
        }
        Ok(slot.as_mut().expect("opened above"))
    }

    fn name(&self, kind: &str) -> String {
        format!("{}-{kind}-{}.rows", self.prefix, self.opened)
    }

    /// Keeps the edges of internal links that carry flow from a row of `table` written
    /// to the store: an internal link's `links` row, or a snapshot's `pages` row of its
    /// page's flow targets (an external link's row holds no record: its edge is kept
    /// with its `backlinks` URL row).
    pub(crate) fn put_internal_edges(
        &mut self,
        table: Table,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        linkstore::row_flow_edges(table, key, value, |source, target| {
            self.put_edge(false, source, target)
        })
    }

    /// Keeps an edge among the internal or the `external` links' edges.
    fn put_edge(&mut self, external: bool, source: &str, target: &str) -> Result<()> {
        let name = self.name("edges");
        let slot = if external {
            &mut self.external_edges
        } else {
            &mut self.edges
        };
        Self::writer(slot, &mut self.opened, &self.dir, name)?
            .put(source.as_bytes(), target.as_bytes())
    }

    /// Keeps a backlink row instead of writing it to the store; like a table file, skips
    /// a key not above the previous one (a 64-bit collision between two pages' links).
    /// A URL row (`is_url_row`, whose `value` is the record) also keeps the link's edge,
    /// or its source alone when it carries no flow.
    pub(crate) fn put_backlink(
        &mut self,
        key: &[u8],
        value: &[u8],
        is_url_row: bool,
    ) -> Result<()> {
        if self.backlinks.is_some() && key <= self.last_backlink.as_slice() {
            return Ok(());
        }
        let name = self.name("backlinks");
        Self::writer(&mut self.backlinks, &mut self.opened, &self.dir, name)?.put(key, value)?;
        self.last_backlink.clear();
        self.last_backlink.extend_from_slice(key);
        if !is_url_row {
            return Ok(());
        }
        match linkstore::flow_link(value)? {
            FlowLink::Edge { source, target } => self.put_edge(true, source, target),
            FlowLink::Source(source) => self.put_edge(true, source, ""),
            FlowLink::Nothing => Ok(()),
        }
    }

    /// Completes the open files, adding their paths to `into`.
    pub(crate) fn finish(&mut self, into: &mut KeptFiles) -> Result<()> {
        if let Some(w) = self.edges.take() {
            into.edges.push(w.finish()?);
        }
        if let Some(w) = self.external_edges.take() {
            into.external_edges.push(w.finish()?);
        }
        if let Some(w) = self.backlinks.take() {
            into.backlinks.push(w.finish()?);
        }
        Ok(())
    }
}
