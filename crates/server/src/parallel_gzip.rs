//! A gzip writer that compresses on several threads, as pigz does: the input is cut into
//! blocks, each block is deflated on a worker with no window shared with the block before
//! it and ends on a byte boundary (a sync flush), and the blocks are written in order as
//! one gzip member whose CRC-32 is combined from the blocks' own. Any gzip reader reads
//! the result; it is a few bytes per block larger than one deflate stream.
//!
//! Writes only append to the current block, so the caller may write field by field (with
//! a single-threaded encoder every small write was a call into the compressor).

use flate2::{Compress, Compression, FlushCompress, Status};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Uncompressed bytes per block: large enough that the lost window costs nothing
/// measurable, small enough that blocks in flight stay a few MiB.
const BLOCK_BYTES: usize = 1 << 20;

/// gzip header: magic, deflate, no flags, no time, no extra flags, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// A block for a worker and where its result goes.
struct Job {
    data: Vec<u8>,
    last: bool,
    reply: SyncSender<io::Result<Deflated>>,
}

/// A block deflated, with the CRC of its uncompressed bytes.
struct Deflated {
    bytes: Vec<u8>,
    crc: crc32fast::Hasher,
}

/// Writes one gzip member to `inner`, compressed on `threads` workers. Call
/// [`ParallelGzWriter::finish`]: dropping the writer leaves the member unterminated (its
/// workers stop once they finish the blocks they hold).
pub struct ParallelGzWriter<W: Write> {
    inner: W,
    block: Vec<u8>,
    jobs: Option<SyncSender<Job>>,
    /// Results of blocks handed out, oldest first: written in this order.
    pending: VecDeque<Receiver<io::Result<Deflated>>>,
    max_pending: usize,
    workers: Vec<JoinHandle<()>>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> ParallelGzWriter<W> {
    /// Starts the member and `threads` (at least 1) compressing threads, which run at the
    /// calling thread's priority.
    pub fn new(mut inner: W, level: Compression, threads: usize) -> io::Result<Self> {
        inner.write_all(&HEADER)?;
        let threads = threads.max(1);
        let (jobs, queue) = sync_channel::<Job>(threads);
        let queue = Arc::new(Mutex::new(queue));
        let mut workers = Vec::with_capacity(threads);
        for n in 0..threads {
            let queue = queue.clone();
            workers.push(
                std::thread::Builder::new()
                    .name(format!("gzip-{n}"))
                    .spawn(move || loop {
                        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(job) = job else { return };
                        let _ = job.reply.send(deflate(&job.data, job.last, level));
                    })?,
            );
        }
        Ok(ParallelGzWriter {
            inner,
            block: Vec::with_capacity(BLOCK_BYTES + BLOCK_BYTES / 8),
            jobs: Some(jobs),
            pending: VecDeque::new(),
            max_pending: 2 * threads,
            workers,
            crc: crc32fast::Hasher::new(),
            len: 0,
        })
    }

    /// Hands the current block to a worker, first writing out the oldest results while
    /// too many are in flight.
    fn send_block(&mut self, last: bool) -> io::Result<()> {
        while self.pending.len() >= self.max_pending {
            self.write_oldest()?;
        }
        let next = if last { 0 } else { self.block.capacity() };
        let data = std::mem::replace(&mut self.block, Vec::with_capacity(next));
        self.len += data.len() as u64;
        let (reply, result) = sync_channel(1);
        let job = Job { data, last, reply };
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(worker_gone());
        }
        self.pending.push_back(result);
        Ok(())
    }

    fn write_oldest(&mut self) -> io::Result<()> {
        let Some(result) = self.pending.pop_front() else {
            return Ok(());
        };
        let deflated = result.recv().map_err(|_| worker_gone())??;
        self.crc.combine(&deflated.crc);
        self.inner.write_all(&deflated.bytes)
    }

    /// Compresses what is left, writes the member's trailer and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.send_block(true)?;
        while !self.pending.is_empty() {
            self.write_oldest()?;
        }
        let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new()).finalize();
        self.inner.write_all(&crc.to_le_bytes())?;
        // ISIZE is the input length modulo 2^32 (RFC 1952).
        self.inner.write_all(&(self.len as u32).to_le_bytes())?;
        self.inner.flush()?;
        self.stop_workers();
        Ok(self.inner)
    }

    fn stop_workers(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl<W: Write> Write for ParallelGzWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.block.extend_from_slice(buf);
        if self.block.len() >= BLOCK_BYTES {
            self.send_block(false)?;
        }
        Ok(buf.len())
    }

    /// Blocks are cut by size only: a flush writes nothing (each block boundary costs
    /// compression).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Deflates `data` as raw deflate blocks: ending with a sync flush (byte-aligned, not
/// final) unless it is the `last` block, which ends the stream.
fn deflate(data: &[u8], last: bool, level: Compression) -> io::Result<Deflated> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(data);
    let mut c = Compress::new(level, false);
    let mut bytes = Vec::with_capacity(data.len() / 3 + 1024);
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    loop {
        if bytes.capacity() - bytes.len() < 4096 {
            bytes.reserve(bytes.capacity().max(4096));
        }
        let consumed = c.total_in() as usize;
        let status = c
            .compress_vec(&data[consumed..], &mut bytes, flush)
            .map_err(io::Error::other)?;
        let all_in = c.total_in() as usize == data.len();
        // A sync flush is complete when the compressor stopped with output room to spare.
        let done = match status {
            Status::StreamEnd => true,
            Status::Ok | Status::BufError => !last && all_in && bytes.len() < bytes.capacity(),
        };
        if done {
            return Ok(Deflated { bytes, crc });
        }
    }
}

fn worker_gone() -> io::Error {
    io::Error::other("a compressing thread stopped")
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    /// Rows like an export's, in small writes, over several blocks and threads.
    fn sample(rows: usize) -> Vec<u8> {
        let mut s = Vec::new();
        for i in 0..rows {
            writeln!(
                s,
                "http://example.com/{i},anchor {},{}",
                i % 97,
                i * 7919 % 1000
            )
            .unwrap();
        }
        s
    }

    #[test]
    fn any_gzip_reader_gets_back_exactly_what_was_written() {
        for (rows, threads) in [(0, 1), (1, 2), (50_000, 1), (120_000, 3)] {
            let input = sample(rows);
            let mut w = ParallelGzWriter::new(Vec::new(), Compression::fast(), threads).unwrap();
            for line in input.split_inclusive(|&b| b == b'\n') {
                w.write_all(line).unwrap();
            }
            let out = w.finish().unwrap();
            assert_eq!(gunzip(&out), input, "{rows} rows on {threads} threads");
            // One member: its trailer holds the CRC and length of all the input.
            let trailer = &out[out.len() - 8..];
            assert_eq!(trailer[..4], crc32fast::hash(&input).to_le_bytes());
            assert_eq!(trailer[4..], (input.len() as u32).to_le_bytes());
        }
    }

    #[test]
    fn incompressible_input_of_many_blocks_round_trips() {
        // xorshift bytes: deflate output larger than its input must still be collected whole.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let input: Vec<u8> = (0..3 * BLOCK_BYTES + 17)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut w = ParallelGzWriter::new(Vec::new(), Compression::fast(), 2).unwrap();
        w.write_all(&input).unwrap();
        assert_eq!(gunzip(&w.finish().unwrap()), input);
    }
}
