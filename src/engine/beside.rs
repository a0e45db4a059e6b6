//! Work on a second thread beside this one's: for the large results, where
//! a thread costs less than it saves, on a machine with a core to spare.

/// Bytes of input from which work runs beside other work (under it, a
/// thread costs more than it saves).
pub(crate) const BESIDE_FROM: usize = 1 << 20;

/// `work()` on this thread and `side()` on a thread of its own meanwhile
/// (named `name`); `side()` on this thread when no thread can be made, or
/// again when it panicked there (a panic then shows here).
pub(crate) fn beside<S: Send, W>(
    name: &str,
    side: impl Fn() -> S + Sync,
    work: impl FnOnce() -> W,
) -> (W, S) {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, &side);
        let done = work();
        let side = match handle {
            Ok(handle) => handle.join().unwrap_or_else(|_| side()),
            Err(_) => side(),
        };
        (done, side)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_run_and_each_answer_comes_back() {
        let seen = std::sync::Mutex::new(Vec::new());
        let (work, side) = beside(
            "lro-test",
            || {
                seen.lock()
                    .unwrap()
                    .push(std::thread::current().name().map(String::from));
                7
            },
            || 5,
        );
        assert_eq!((work, side), (5, 7));
        assert_eq!(*seen.lock().unwrap(), vec![Some("lro-test".to_string())]);
    }

    #[test]
    fn a_side_that_panics_on_its_thread_panics_here_too() {
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            beside(
                "lro-test",
                || {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    panic!("side");
                },
                || (),
            )
        }));
        assert!(caught.is_err());
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
