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
//!
//! A result too large to hold is read as a stream, so its work cannot be
//! split in two halves: there, [`Background`] folds the batches the
//! stream makes on a thread of its own while the stream goes on.

use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

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

/// Batches handed to a [`Background`] fold and not yet folded, at most:
/// the memory it holds is this many batches besides the one being made.
const BATCHES_IN_FLIGHT: usize = 2;

/// A fold over batches made on this thread: with the switch on, run in
/// order on a thread of its own (spawned for the one stream: a stream this
/// long makes the spawn's cost nothing, and a thread of its own cannot
/// wait on the pool's), [`push`](Self::push) waiting only when
/// [`BATCHES_IN_FLIGHT`] are queued; with it off, or when no thread could
/// be made, each batch folded here as it comes. The state is the same
/// either way.
pub(crate) struct Background<S, B> {
    run: Run<S, B>,
}

/// Where a [`Background`] fold runs.
enum Run<S, B> {
    Here(S, fn(&mut S, B)),
    Thread(SyncSender<B>, JoinHandle<S>),
}

impl<S: Send + 'static, B: Send + 'static> Background<S, B> {
    /// A fold of `fold` over the batches, from `init()`.
    pub(crate) fn new(on: bool, init: fn() -> S, fold: fn(&mut S, B)) -> Self {
        let run = match on.then(|| {
            let (tx, rx) = sync_channel::<B>(BATCHES_IN_FLIGHT);
            std::thread::Builder::new()
                .name("lro-fold".into())
                .spawn(move || {
                    let mut state = init();
                    for batch in rx {
                        fold(&mut state, batch);
                    }
                    state
                })
                .map(|handle| Run::Thread(tx, handle))
        }) {
            Some(Ok(thread)) => thread,
            _ => Run::Here(init(), fold),
        };
        Background { run }
    }

    /// Folds `batch` after those pushed before it.
    pub(crate) fn push(&mut self, batch: B) {
        match &mut self.run {
            Run::Here(state, fold) => fold(state, batch),
            // Closed only when the fold panicked: `finish` shows the panic.
            Run::Thread(tx, _) => drop(tx.send(batch)),
        }
    }

    /// The state once every batch is folded. A panic of the fold shows here.
    pub(crate) fn finish(self) -> S {
        match self.run {
            Run::Here(state, _) => state,
            Run::Thread(tx, handle) => {
                drop(tx);
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
        }
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
    fn a_background_fold_sees_every_batch_in_order_on_or_off() {
        for on in [true, false] {
            let mut fold = Background::new(
                on,
                Vec::new,
                |seen: &mut Vec<(usize, Option<String>)>, b| seen.push((b, name())),
            );
            for b in 0..100 {
                fold.push(b);
            }
            let seen = fold.finish();
            assert_eq!(
                seen.iter().map(|s| s.0).collect::<Vec<_>>(),
                (0..100).collect::<Vec<_>>()
            );
            let threads: Vec<_> = seen.into_iter().map(|s| s.1).collect();
            let expected = if on {
                Some("lro-fold".to_owned())
            } else {
                name()
            };
            assert!(
                threads.iter().all(|t| *t == expected),
                "on: {on}: {threads:?}"
            );
        }
    }

    #[test]
    fn a_panic_of_a_background_fold_shows_at_its_finish() {
        let mut fold = Background::new(
            true,
            || 0usize,
            |_: &mut usize, b: usize| {
                assert!(b < 3, "batch {b}");
            },
        );
        for b in 0..10 {
            fold.push(b);
        }
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fold.finish())).is_err());
    }

    #[test]
    fn a_panic_in_either_panics_here() {
        let caught = std::panic::catch_unwind(|| join(true, PARALLEL_FROM, || 5, || panic!("b")));
        assert!(caught.is_err());
        // The threads are still there for the next one.
        assert_eq!(join(true, PARALLEL_FROM, || 1, || 2), (1, 2));
    }
}
