//! WARC record reader (WARC/0.17 to 1.1), tolerant of the damage real archives carry:
//! garbage between records is skipped up to the next `WARC/` line, a record with broken
//! headers is reported and skipped, a truncated stream ends the file with a report.

use std::io::{self, BufRead, Read};

/// Records larger than this are skipped (and reported), not buffered.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WarcRecord {
    pub headers: Vec<(String, String)>,
    pub block: Vec<u8>,
    /// Offset of the record in the decompressed stream.
    pub offset: u64,
}

impl WarcRecord {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a record could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// This record is unusable; reading goes on with the next one.
    Bad { offset: u64, reason: String },
    /// The stream cannot be read further (truncated or corrupt compression).
    Fatal { offset: u64, reason: String },
}

pub struct WarcReader<R> {
    r: R,
    offset: u64,
    line: Vec<u8>,
    /// Offsets of non-WARC bytes skipped while looking for a record, for the report.
    pub garbage_at: Vec<u64>,
}

impl<R: BufRead> WarcReader<R> {
    pub fn new(r: R) -> Self {
        WarcReader {
            r,
            offset: 0,
            line: Vec::new(),
            garbage_at: Vec::new(),
        }
    }

    fn read_line(&mut self) -> io::Result<usize> {
        self.line.clear();
        // Cap line length so a binary blob without newlines cannot exhaust memory.
        let n = (&mut self.r)
            .take(64 << 10)
            .read_until(b'\n', &mut self.line)?;
        self.offset += n as u64;
        Ok(n)
    }

    fn fatal(&self, e: io::Error) -> ReadError {
        ReadError::Fatal {
            offset: self.offset,
            reason: match e.kind() {
                io::ErrorKind::UnexpectedEof => "stream ends inside a record (truncated)".into(),
                _ => format!("unreadable stream: {e}"),
            },
        }
    }

    /// Next record, `None` at a clean end of stream.
    pub fn next_record(&mut self) -> Option<Result<WarcRecord, ReadError>> {
        // Find the version line, skipping blank lines and, with a report, anything else.
        let mut in_garbage = false;
        let start = loop {
            let at = self.offset;
            match self.read_line() {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(self.fatal(e))),
            }
            if self.line.starts_with(b"WARC/") {
                break at;
            }
            if !self.line.iter().all(u8::is_ascii_whitespace) && !in_garbage {
                in_garbage = true;
                self.garbage_at.push(at);
            }
        };
        let mut headers = Vec::new();
        loop {
            match self.read_line() {
                Ok(0) => return Some(Err(self.fatal(io::ErrorKind::UnexpectedEof.into()))),
                Ok(_) => {}
                Err(e) => return Some(Err(self.fatal(e))),
            }
            let line = String::from_utf8_lossy(&self.line);
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            match line.split_once(':') {
                Some((n, v)) => headers.push((n.trim().to_string(), v.trim().to_string())),
                None => {
                    return Some(Err(ReadError::Bad {
                        offset: start,
                        reason: format!("broken WARC header line {:?}", clip(line)),
                    }))
                }
            }
        }
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
            .and_then(|(_, v)| v.parse::<u64>().ok());
        let Some(length) = length else {
            return Some(Err(ReadError::Bad {
                offset: start,
                reason: "WARC record without a valid Content-Length".into(),
            }));
        };
        if length > MAX_RECORD_BYTES {
            match io::copy(&mut (&mut self.r).take(length), &mut io::sink()) {
                Ok(n) if n == length => {}
                Ok(_) => return Some(Err(self.fatal(io::ErrorKind::UnexpectedEof.into()))),
                Err(e) => return Some(Err(self.fatal(e))),
            }
            self.offset += length;
            return Some(Err(ReadError::Bad {
                offset: start,
                reason: format!("record of {length} bytes exceeds {MAX_RECORD_BYTES}"),
            }));
        }
        let mut block = vec![0u8; length as usize];
        if let Err(e) = self.r.read_exact(&mut block) {
            return Some(Err(self.fatal(e)));
        }
        self.offset += length;
        Some(Ok(WarcRecord {
            headers,
            block,
            offset: start,
        }))
    }
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}
