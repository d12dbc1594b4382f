//! Background work yields the CPU to quick requests: heavy commands and the rendering of
//! their replies run on their own pool of threads ([`spawn_background`]), and download
//! exports on their own threads, all at a lower scheduling priority (nice 10), so on a
//! busy machine the connections' workers, which answer quick commands inline, are
//! scheduled first (the Linux scheduler gives a nice-0 thread about nine times the CPU
//! share of a nice-10 one). Other blocking work (admin ingest, metrics) keeps the normal
//! priority: a thread's priority is never raised again (that needs a privilege), so
//! background threads are never shared with it.

use std::cell::Cell;
use std::sync::OnceLock;

/// The nice value background threads run at.
const BACKGROUND_NICE: libc::c_int = 10;

thread_local! {
    static LOWERED: Cell<bool> = const { Cell::new(false) };
}

/// Lowers the calling thread's priority, once per thread. A failure (a system that
/// refuses) leaves the priority as it was: it only affects latency, never results.
pub fn background() {
    LOWERED.with(|lowered| {
        if !lowered.replace(true) {
            // SAFETY: `setpriority` takes three integers and touches no memory of ours;
            // any values are safe to pass. On Linux, PRIO_PROCESS with who = 0 names the
            // calling thread only (threads have their own nice values).
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
            }
        }
    });
}

/// Runs `f` on the background pool: threads at nice 10 (created as needed, like tokio's
/// blocking pool, and kept apart from it). Tasks it spawns with
/// `tokio::task::spawn_blocking` run on the same pool.
pub fn spawn_background<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    static POOL: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    POOL.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("background")
            .on_thread_start(background)
            .enable_all()
            .build()
            .expect("the background pool starts")
    })
    .spawn_blocking(f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_background_thread_runs_at_a_lower_priority_and_others_do_not() {
        let nice = || std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Field 19 of /proc/thread-self/stat is the nice value.
        let field = |s: String| {
            s.rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .nth(16)
                .unwrap()
                .to_string()
        };
        let before = field(nice());
        let lowered = std::thread::spawn(move || {
            super::background();
            super::background();
            field(nice())
        })
        .join()
        .unwrap();
        assert_eq!(lowered, "10");
        assert_eq!(field(nice()), before, "the calling thread is untouched");
    }

    #[test]
    fn background_tasks_and_what_they_spawn_run_lowered_and_blocking_work_does_not() {
        let field = || {
            std::fs::read_to_string("/proc/thread-self/stat")
                .unwrap()
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .nth(16)
                .unwrap()
                .to_string()
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        rt.block_on(async {
            let (outer, inner) = super::spawn_background(move || {
                let inner = tokio::task::spawn_blocking(field);
                (field(), inner)
            })
            .await
            .unwrap();
            assert_eq!(outer, "10");
            assert_eq!(inner.await.unwrap(), "10");
            let normal = tokio::task::spawn_blocking(field).await.unwrap();
            assert_ne!(
                normal, "10",
                "the ordinary blocking pool keeps its priority"
            );
        });
    }
}
