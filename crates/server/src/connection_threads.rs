//! The threads that serve connections: one single-threaded runtime per core, each
//! connection kept on one of them from accept to close (as actix-web's workers do).
//!
//! A connection's requests then run with no cross-thread wake-ups or work stealing: on
//! two cores this takes about a sixth of the server's CPU time off a GetIndexItemInfo
//! (`docs/benchmarks.md`). What could hold a thread long runs elsewhere anyway: heavy
//! commands on the background pool ([`crate::priority`]), blocking work on the runtime's
//! blocking threads.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::runtime::{Builder, Handle};

pub struct ConnectionThreads {
    threads: Vec<Thread>,
}

struct Thread {
    runtime: Handle,
    /// Connections on this thread now.
    connections: Arc<AtomicUsize>,
}

/// A connection's place on its thread, given back when the connection ends.
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnectionThreads {
    /// Starts one thread per core (as the system reports them).
    pub fn start() -> std::io::Result<ConnectionThreads> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (0..cores)
            .map(|i| {
                let runtime = Builder::new_current_thread().enable_all().build()?;
                let handle = runtime.handle().clone();
                std::thread::Builder::new()
                    .name(format!("connections-{i}"))
                    .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
                Ok(Thread {
                    runtime: handle,
                    connections: Arc::default(),
                })
            })
            .collect::<std::io::Result<_>>()?;
        Ok(ConnectionThreads { threads })
    }

    /// Runs `connection` on the thread serving the fewest connections now. What it
    /// registers once running (its socket) belongs to that thread's runtime.
    pub fn serve(&self, connection: impl Future<Output = ()> + Send + 'static) {
        let thread = self
            .threads
            .iter()
            .min_by_key(|t| t.connections.load(Ordering::Relaxed))
            .expect("at least one thread");
        thread.connections.fetch_add(1, Ordering::Relaxed);
        let place = Place(Arc::clone(&thread.connections));
        thread.runtime.spawn(async move {
            let _place = place;
            connection.await;
        });
    }
}
