//! The deadlines of a connection, so that no client holds one without making progress:
//!
//! - **write**: once a write has waited `write_limit` without the socket taking a byte,
//!   it fails with `TimedOut`, hyper drops the connection, and the reply it held is freed;
//! - **request head**: each request head must arrive within `head_limit` of the
//!   connection's last progress (opened, a request handled, a byte of a reply written);
//!   past it a pending read fails with `TimedOut`. That closes idle keep-alive connections
//!   and clients that send a head slowly, however often they send a byte.
//!
//! The head deadline costs no timer operation per request, unlike hyper's header read
//! timeout: one timer per connection is armed when it opens and moved only when it fires
//! early (after progress since it was set), at most once per `head_limit`. A reply
//! records the time of its progress instead.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Whether the connection's service is handling a request: meanwhile the connection may
/// read and write nothing for as long as the request takes (its own limits bound that).
#[derive(Clone, Default)]
pub struct Handling(Arc<AtomicBool>);

impl Handling {
    /// Marks a request as handled until the guard is dropped.
    pub fn start(&self) -> HandlingGuard {
        self.0.store(true, Ordering::Relaxed);
        HandlingGuard(self.clone())
    }

    fn now(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

pub struct HandlingGuard(Handling);

impl Drop for HandlingGuard {
    fn drop(&mut self) {
        (self.0).0.store(false, Ordering::Relaxed);
    }
}

pub struct Deadlines<IO> {
    io: IO,
    write_limit: Duration,
    /// Armed while a write is pending; cleared when the socket takes bytes.
    write_deadline: Option<Pin<Box<Sleep>>>,
    head_limit: Duration,
    /// Fires at or before `last_progress + head_limit`; checked when it does.
    head_deadline: Pin<Box<Sleep>>,
    /// The last time a byte was written or a request was seen being handled.
    last_progress: Instant,
    handling: Handling,
}

impl<IO> Deadlines<IO> {
    pub fn new(io: IO, head_limit: Duration, write_limit: Duration, handling: Handling) -> Self {
        let now = Instant::now();
        Deadlines {
            io,
            write_limit,
            write_deadline: None,
            head_limit,
            head_deadline: Box::pin(tokio::time::sleep_until(now + head_limit)),
            last_progress: now,
            handling,
        }
    }

    /// Counts bytes written as progress.
    fn wrote(&mut self, r: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = r {
            if n > 0 {
                self.last_progress = Instant::now();
            }
        }
        r
    }

    /// Passes a write's result through; on `Pending`, fails once the deadline has passed.
    fn watch_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.write_deadline = None;
            return r;
        }
        let limit = self.write_limit;
        let deadline = self
            .write_deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", limit.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Whether a pending read is past the head deadline; otherwise the timer is left to
    /// wake the task at the deadline.
    fn head_overdue(&mut self, cx: &mut Context<'_>) -> bool {
        while self.head_deadline.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if self.handling.now() {
                self.last_progress = now;
            }
            let due = self.last_progress + self.head_limit;
            if due <= now {
                return true;
            }
            self.head_deadline.as_mut().reset(due);
        }
        false
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Deadlines<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Pending if self.head_overdue(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no whole request head in {} s", self.head_limit.as_secs()),
            ))),
            r => r,
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Deadlines<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        let r = self.wrote(r);
        self.watch_write(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        let r = self.wrote(r);
        self.watch_write(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.watch_write(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_shutdown(cx);
        self.watch_write(cx, r)
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
        let mut w = Deadlines::new(
            server,
            Duration::from_secs(60),
            Duration::from_millis(200),
            Handling::default(),
        );
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
        let mut w = Deadlines::new(
            server,
            Duration::from_secs(60),
            Duration::from_millis(200),
            Handling::default(),
        );
        w.write_all(&[b'x'; 1 << 20]).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reader.await.unwrap(), 1 << 20);
    }

    /// A connection whose reads wait with `head_limit` of 200 ms, and the client's end.
    fn connection(
        handling: &Handling,
    ) -> (tokio::io::DuplexStream, Deadlines<tokio::io::DuplexStream>) {
        let (client, server) = tokio::io::duplex(1024);
        let conn = Deadlines::new(
            server,
            Duration::from_millis(200),
            Duration::from_secs(60),
            handling.clone(),
        );
        (client, conn)
    }

    #[tokio::test]
    async fn a_head_sent_slowly_is_cut_off_however_often_a_byte_comes() {
        use tokio::io::AsyncReadExt;
        let (mut client, mut conn) = connection(&Handling::default());
        let started = std::time::Instant::now();
        let trickle = tokio::spawn(async move {
            for _ in 0..40 {
                if client.write_all(b"G").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        });
        let mut buf = [0u8; 16];
        let e = loop {
            match conn.read(&mut buf).await {
                Ok(n) => assert!(n > 0, "the client never closes"),
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_millis(800),
            "{took:?}"
        );
        drop(conn);
        trickle.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_being_handled_and_a_reply_being_written_keep_a_connection() {
        use tokio::io::AsyncReadExt;
        let handling = Handling::default();
        let (mut client, mut conn) = connection(&handling);
        // Handled for 500 ms (over twice the head limit) with nothing read or written.
        let handled = handling.start();
        let mut buf = [0u8; 16];
        let waited = tokio::time::timeout(Duration::from_millis(500), conn.read(&mut buf)).await;
        assert!(waited.is_err(), "still waiting, not cut off: {waited:?}");
        drop(handled);
        // A reply written bit by bit for 500 ms: each byte is progress.
        for _ in 0..10 {
            conn.write_all(b"x").await.unwrap();
            let mut byte = [0u8; 1];
            client.read_exact(&mut byte).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Then the next head is due 200 ms after the last byte written.
        let started = std::time::Instant::now();
        let e = conn.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_millis(400));
    }
}
