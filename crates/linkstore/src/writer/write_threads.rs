//! The threads that write the incremental writer's batches, started with its first batch
//! and kept until it is dropped.
//!
//! A batch is written by three threads at once (the write itself, small items settled,
//! counts resolved; [`super::BatchRows::write`]). Started and ended for every batch (174
//! threads in a 2.12M-link round), they took the round 2-5% longer (`docs/benchmarks.md`,
//! "Write threads kept for the writer's life"); each new thread also began with an empty
//! allocator heap.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A batch's three write threads: the write, and the two it hands work to.
pub(super) struct WriteThreads {
    pub(super) writer: Worker,
    pub(super) helpers: Arc<Helpers>,
}

/// The threads a batch's write hands work to. The write holds them (an `Arc`) while it
/// runs, so they outlive it whichever is dropped last.
pub(super) struct Helpers {
    pub(super) settler: Worker,
    pub(super) counts: Worker,
}

impl WriteThreads {
    pub(super) fn start() -> std::io::Result<WriteThreads> {
        Ok(WriteThreads {
            writer: Worker::start("store-writer")?,
            helpers: Arc::new(Helpers {
                settler: Worker::start("store-settler")?,
                counts: Worker::start("store-counts")?,
            }),
        })
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// One thread that runs the jobs it is given, in order, until it is dropped.
pub(super) struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// What a job given to a [`Worker`] returns, once it has run.
pub(super) struct Pending<T>(mpsc::Receiver<std::thread::Result<T>>);

impl Worker {
    fn start(name: &str) -> std::io::Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || queue.into_iter().for_each(|job| job()))?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `f` after the jobs given before. What `f` holds is dropped before its result
    /// is handed back; a panic of `f` is handed back instead, and the thread goes on.
    pub(super) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Pending<T> {
        let (done, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            // The receiver may be gone (its waiter unwound from another job's panic):
            // then nothing waits for this result.
            let _ = done.send(catch_unwind(AssertUnwindSafe(f)));
        });
        let jobs = self
            .jobs
            .as_ref()
            .expect("a worker's queue is open until it is dropped");
        // Jobs never panic out of their thread (above), so it takes every job sent.
        jobs.send(job)
            .expect("a worker's thread runs until it is dropped");
        Pending(result)
    }
}

impl Drop for Worker {
    /// Closes the queue and waits for the jobs given to run.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl<T> Pending<T> {
    /// Waits for the job: its result, or its panic, as `JoinHandle::join` gives them.
    pub(super) fn join(self) -> std::thread::Result<T> {
        self.0
            .recv()
            .unwrap_or_else(|_| Err(Box::new("a write thread ended before its job ran")))
    }

    /// Waits for the job: its result; its panic goes on here.
    pub(super) fn wait(self) -> T {
        self.join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_runs_jobs_in_order_and_hands_back_a_panic_without_ending() {
        let worker = Worker::start("test-worker").unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let first = {
            let order = Arc::clone(&order);
            worker.run(move || order.lock().unwrap().push(1))
        };
        let panicked = worker.run(|| -> u8 { panic!("job failed") });
        let second = {
            let order = Arc::clone(&order);
            worker.run(move || {
                order.lock().unwrap().push(2);
                std::thread::current().name().map(str::to_string)
            })
        };
        first.wait();
        assert!(panicked.join().is_err());
        assert_eq!(second.wait().as_deref(), Some("test-worker"));
        assert_eq!(*order.lock().unwrap(), [1, 2]);
        // The jobs' captures are dropped before their results came back.
        assert_eq!(Arc::strong_count(&order), 1);
    }
}
