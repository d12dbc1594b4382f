//! A connection that gives up on a client that stops reading: once a write has waited
//! `limit` without the socket taking a byte, it fails with `TimedOut`, hyper drops the
//! connection, and the reply it held is freed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub struct WriteTimeout<IO> {
    io: IO,
    limit: Duration,
    /// Armed while a write is pending; cleared when the socket takes bytes.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteTimeout<IO> {
    pub fn new(io: IO, limit: Duration) -> WriteTimeout<IO> {
        WriteTimeout {
            io,
            limit,
            deadline: None,
        }
    }

    /// Passes a write's result through; on `Pending`, fails once the deadline has passed.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.deadline = None;
            return r;
        }
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", limit.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteTimeout<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_shutdown(cx);
        self.watch(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_reader_that_stops_is_cut_off_and_one_that_reads_is_not() {
        // A pipe with a small buffer: the writer blocks once it is full.
        let (client, server) = tokio::io::duplex(1024);
        let mut w = WriteTimeout::new(server, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let e = w.write_all(&[b'x'; 1 << 20]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(client);

        let (mut client, server) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut client, &mut sink)
                .await
                .unwrap();
            sink.len()
        });
        let mut w = WriteTimeout::new(server, Duration::from_millis(200));
        w.write_all(&[b'x'; 1 << 20]).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reader.await.unwrap(), 1 << 20);
    }
}
