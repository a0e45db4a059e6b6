//! The engine's one seam for parallel work: two independent pieces of work
//! over a large result run on two threads (on one for small inputs, where
//! handing work over costs more than it saves, or when the configuration's
//! one switch, [`OffloadConfig::parallel`](crate::config::OffloadConfig::parallel),
//! is off: the results are the same either way).
//!
//! The threads are kept (a `rayon` pool of the engine's own, made at the
//! first large result, one thread per core): a thread spawned per request
//! can start later than the work it would take over; a kept thread woken is
//! running within microseconds.

use std::sync::OnceLock;

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// Bytes of input from which [`join`] runs its two pieces of work on two
/// threads. Under it, one after the other: waking a thread and handing the
/// work over costs more than the work saves (figures in
/// `benches/README.md`).
pub(crate) const PARALLEL_FROM: usize = 1 << 20;

/// `a()` and `b()`, at once on the engine's threads when `on` and `bytes`
/// (the size of the input they read) is at least [`PARALLEL_FROM`]; else,
/// or when no thread could be made, one after the other on this thread. A
/// panic in either shows here.
pub(crate) fn join<A: Send, B: Send>(
    on: bool,
    bytes: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    match pool().filter(|_| on && bytes >= PARALLEL_FROM) {
        Some(pool) => pool.join(a, b),
        None => (a(), b()),
    }
}

/// The engine's threads (`None`: none could be made).
fn pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .thread_name(|i| format!("lro-parallel-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> Option<String> {
        std::thread::current().name().map(String::from)
    }

    #[test]
    fn large_inputs_run_on_the_engine_threads_and_each_answer_comes_back() {
        let (a, b) = join(true, PARALLEL_FROM, || (5, name()), || (7, name()));
        assert_eq!((a.0, b.0), (5, 7));
        for thread in [a.1, b.1] {
            assert!(thread.is_some_and(|n| n.starts_with("lro-parallel-")));
        }
    }

    #[test]
    fn small_inputs_and_the_switch_off_run_here() {
        let here = name();
        let (a, b) = join(true, PARALLEL_FROM - 1, name, name);
        assert_eq!((a, b), (here.clone(), here.clone()));
        let (a, b) = join(false, PARALLEL_FROM, name, name);
        assert_eq!((a, b), (here.clone(), here));
    }

    #[test]
    fn a_panic_in_either_panics_here() {
        let caught = std::panic::catch_unwind(|| join(true, PARALLEL_FROM, || 5, || panic!("b")));
        assert!(caught.is_err());
        // The threads are still there for the next one.
        assert_eq!(join(true, PARALLEL_FROM, || 1, || 2), (1, 2));
    }
}
