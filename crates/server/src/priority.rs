//! Background work yields the CPU to quick requests: a thread that runs heavy commands,
//! renders their replies or exports downloads lowers its own scheduling priority (nice
//! 10) once, so on a busy machine the connections' workers, which answer quick commands
//! inline, are scheduled first (the Linux scheduler gives a nice-0 thread about nine
//! times the CPU share of a nice-10 one).

use std::cell::Cell;

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
}
