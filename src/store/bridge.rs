//! The blocking [`Store`](super::Store) calls over `object_store`'s async
//! API: the store runs its requests on a small runtime of its own and the
//! calling thread (the engine's blocking pool, the cleanup's, a plain
//! thread) waits for each answer. Its own runtime, not the caller's: a
//! caller may block a worker of a single-threaded runtime, which would then
//! never run the request it waits for.

use std::future::Future;

use super::StoreError;

/// A runtime that runs futures for blocking callers.
#[derive(Debug)]
pub(super) struct Bridge {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Bridge {
    /// A runtime of two worker threads named `lro-store`.
    pub(super) fn new() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lro-store")
            .enable_all()
            .build()?;
        Ok(Bridge {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the store's runtime and waits for its output.
    /// `object` names what it works on, for the error of a request that
    /// never ends (the runtime shut down) or panicked.
    pub(super) fn run<T, F>(&self, object: &str, future: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let lost = || StoreError::Remote {
            object: object.to_owned(),
            message: "the store's request was lost (shut down or panicked)".into(),
        };
        let runtime = self.runtime.as_ref().ok_or_else(lost)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().map_err(|_| lost())
    }

    /// Starts `future` on the store's runtime without waiting.
    pub(super) fn spawn<T, F>(&self, future: F) -> Option<tokio::task::JoinHandle<T>>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        Some(self.runtime.as_ref()?.spawn(future))
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Dropping a runtime inside another one's async context panics;
        // this never waits.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
