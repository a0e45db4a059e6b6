//! The response future of [`HistoryOffloadService`](crate::history::HistoryOffloadService).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pin_project! {
    /// Response future of
    /// [`HistoryOffloadService`](crate::history::HistoryOffloadService): the inner
    /// service's response, never looked at.
    ///
    /// A request that is not a chat request polls the inner future in
    /// place (no allocation); a chat request is read, rewritten and sent on
    /// in one boxed future.
    pub struct HistoryResponseFuture<F: Future> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F: Future> {
        Direct { #[pin] inner: F },
        Rewriting { step: BoxFuture<F::Output> },
    }
}

impl<F: Future> HistoryResponseFuture<F> {
    /// The inner service's future, polled in place.
    pub(crate) fn direct(inner: F) -> Self {
        HistoryResponseFuture {
            kind: Kind::Direct { inner },
        }
    }

    /// The body read and rewritten, then the inner service called.
    pub(crate) fn rewriting(step: BoxFuture<F::Output>) -> Self {
        HistoryResponseFuture {
            kind: Kind::Rewriting { step },
        }
    }
}

impl<F: Future> Future for HistoryResponseFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Direct { inner } => inner.poll(cx),
            KindProj::Rewriting { step } => step.as_mut().poll(cx),
        }
    }
}
