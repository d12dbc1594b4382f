//! Cutting a crawl file into records: decompression, format detection, line and WARC
//! framing. What the records say is the [`crate::parser`]'s job, so records cut on one
//! thread can be parsed on others.

use crate::warc::{self, WarcReader, WarcRecord};
use crate::{Error, FileSummary, Format, Problem, Result, MAX_LINE_BYTES};
use flate2::read::MultiGzDecoder;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

/// One record cut from a crawl file, not yet parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawRecord {
    /// Ordinal of the record in its file, from 1: orders the problems of a file whose
    /// records were parsed in several places.
    pub seq: u64,
    pub body: RawBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RawBody {
    /// A JSON-lines record and its line number.
    Line { line: u64, bytes: Vec<u8> },
    /// A WARC record (a WAT record is one too).
    Warc(WarcRecord),
}

impl RawBody {
    /// Where the record is, as problems name it.
    pub fn at(&self) -> String {
        match self {
            RawBody::Line { line, .. } => format!("line {line}"),
            RawBody::Warc(w) => format!("byte {}", w.offset),
        }
    }
}

/// Counts compressed bytes consumed, for progress.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

enum Framing {
    Lines(Box<dyn BufRead>),
    Warc(WarcReader<Box<dyn BufRead>>),
    /// Empty, unreadable, or read to its end.
    Done,
}

/// Reads one crawl file record by record. Records that cannot be cut out (oversized
/// lines, broken WARC headers) and damage to the stream are counted and listed in the
/// reader's [`FileSummary`]; the records it returns are for a [`crate::RecordParser`].
pub struct FileReader {
    framing: Framing,
    summary: FileSummary,
    /// Compressed bytes consumed.
    consumed: Rc<Cell<u64>>,
    bytes_total: u64,
    line: u64,
    garbage_reported: usize,
}

impl FileReader {
    /// Opens `path` (plain or gzipped) and recognises its format. A file that is empty or
    /// whose first bytes cannot be decompressed reads as no records.
    pub fn open(path: &Path) -> Result<FileReader> {
        let open_err = |source| Error::Open {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(open_err)?;
        let bytes_total = file.metadata().map_err(open_err)?.len();
        let consumed = Rc::new(Cell::new(0));
        let mut raw = BufReader::with_capacity(
            1 << 16,
            Counting {
                inner: file,
                count: consumed.clone(),
            },
        );
        let gzipped = raw.fill_buf().map_err(open_err)?.starts_with(&[0x1f, 0x8b]);
        let mut input: Box<dyn BufRead> = if gzipped {
            Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
        } else {
            Box::new(raw)
        };
        let mut reader = FileReader {
            framing: Framing::Done,
            summary: FileSummary::new(path),
            consumed,
            bytes_total,
            line: 0,
            garbage_reported: 0,
        };
        let head = match input.fill_buf() {
            Ok(h) => h.to_vec(),
            Err(e) => {
                reader.summary.truncated = Some(Problem {
                    record: 0,
                    at: "0".into(),
                    reason: format!("unreadable stream: {e}"),
                });
                return Ok(reader);
            }
        };
        let start = head
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(head.len());
        let format = if head[start..].starts_with(b"WARC/") {
            Format::Warc
        } else if head[start..].starts_with(b"{") {
            Format::JsonLines
        } else if head.is_empty() {
            return Ok(reader);
        } else {
            return Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                start: String::from_utf8_lossy(&head[start..head.len().min(start + 16)]).into(),
            });
        };
        reader.summary.format = Some(format);
        reader.framing = match format {
            Format::Warc => Framing::Warc(WarcReader::new(input)),
            Format::JsonLines => Framing::Lines(input),
        };
        Ok(reader)
    }

    /// The next record, `None` at the end of the file (or of what could be read of it).
    pub fn next_record(&mut self) -> Option<RawRecord> {
        let body = match &mut self.framing {
            Framing::Lines(_) => self.next_line(),
            Framing::Warc(_) => self.next_warc(),
            Framing::Done => None,
        }?;
        Some(RawRecord {
            seq: self.summary.records,
            body,
        })
    }

    /// The file's format; `None` for an empty or unreadable file.
    pub fn format(&self) -> Option<Format> {
        self.summary.format
    }

    /// Records cut so far, including those that could not be cut out whole.
    pub fn records(&self) -> u64 {
        self.summary.records
    }

    /// Compressed bytes consumed so far, and the file's size.
    pub fn bytes(&self) -> (u64, u64) {
        (self.consumed.get(), self.bytes_total)
    }

    /// What the reader found: format, records, and the records and damage it skipped.
    /// Parsers' summaries are [`FileSummary::merge`]d into it.
    pub fn finish(self) -> FileSummary {
        self.summary
    }

    fn next_line(&mut self) -> Option<RawBody> {
        let Framing::Lines(input) = &mut self.framing else {
            return None;
        };
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            self.line += 1;
            let n = match input
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut bytes)
            {
                Ok(n) => n,
                Err(e) => {
                    self.summary.truncated = Some(Problem {
                        record: self.summary.records + 1,
                        at: format!("line {}", self.line),
                        reason: match e.kind() {
                            io::ErrorKind::UnexpectedEof => {
                                "stream ends inside a record (truncated)".into()
                            }
                            _ => format!("unreadable stream: {e}"),
                        },
                    });
                    self.framing = Framing::Done;
                    return None;
                }
            };
            if n == 0 {
                self.framing = Framing::Done;
                return None;
            }
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.summary.records += 1;
            if n > MAX_LINE_BYTES {
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                let _ = input.read_until(b'\n', &mut rest);
                let (record, at) = (self.summary.records, format!("line {}", self.line));
                self.summary.bad_record(
                    record,
                    at,
                    format!("record longer than {MAX_LINE_BYTES} bytes"),
                );
                continue;
            }
            return Some(RawBody::Line {
                line: self.line,
                bytes,
            });
        }
    }

    fn next_warc(&mut self) -> Option<RawBody> {
        loop {
            let Framing::Warc(reader) = &mut self.framing else {
                return None;
            };
            // Garbage after the last record is not reported.
            let next = reader.next_record()?;
            let garbage = reader.garbage_at[self.garbage_reported..].to_vec();
            self.garbage_reported = reader.garbage_at.len();
            for at in garbage {
                self.summary.bad_record(
                    self.summary.records + 1,
                    format!("byte {at}"),
                    "garbage between records skipped".into(),
                );
            }
            match next {
                Ok(rec) => {
                    self.summary.records += 1;
                    return Some(RawBody::Warc(rec));
                }
                Err(warc::ReadError::Bad { offset, reason }) => {
                    self.summary.records += 1;
                    self.summary
                        .bad_record(self.summary.records, format!("byte {offset}"), reason);
                }
                Err(warc::ReadError::Fatal { offset, reason }) => {
                    self.summary.truncated = Some(Problem {
                        record: self.summary.records + 1,
                        at: format!("byte {offset}"),
                        reason,
                    });
                    self.framing = Framing::Done;
                    return None;
                }
            }
        }
    }
}
