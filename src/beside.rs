//! Work on a second thread beside this one's: for the large results, where
//! handing work over costs less than it saves, on a machine with a core to
//! spare.
//!
//! The threads are kept (a `rayon` pool of the engine's own, made at the
//! first large result, one thread per core): a thread made for each
//! request started 1.5 to 3.5 ms late on the 2-core bench machine (the
//! scheduler put it behind its parent), longer than the work it took over
//! there; a kept thread woken is running within microseconds.

use std::sync::OnceLock;

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// Bytes of input from which work runs beside other work (under it,
/// handing it over costs more than it saves).
pub(crate) const BESIDE_FROM: usize = 1 << 20;

/// `work()` and `side()` at once, on the engine's threads; one after the
/// other on this thread when no thread could be made. A panic in either
/// shows here.
pub(crate) fn beside<S: Send, W: Send>(
    side: impl FnOnce() -> S + Send,
    work: impl FnOnce() -> W + Send,
) -> (W, S) {
    match pool() {
        Some(pool) => pool.join(work, side),
        None => (work(), side()),
    }
}

/// The engine's threads (`None`: none could be made).
fn pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .thread_name(|i| format!("lro-beside-{i}"))
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
    fn both_run_on_the_engine_threads_and_each_answer_comes_back() {
        let (work, side) = beside(|| (7, name()), || (5, name()));
        assert_eq!((work.0, side.0), (5, 7));
        for thread in [work.1, side.1] {
            assert!(thread.is_some_and(|n| n.starts_with("lro-beside-")));
        }
    }

    #[test]
    fn a_side_that_panics_panics_here() {
        let caught = std::panic::catch_unwind(|| beside(|| panic!("side"), || 5));
        assert!(caught.is_err());
        // The threads are still there for the next one.
        assert_eq!(beside(|| 1, || 2), (2, 1));
    }
}
