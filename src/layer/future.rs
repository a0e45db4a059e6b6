//! The response future of [`OffloadService`](super::OffloadService).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;
use http_body::Body;
use pin_project_lite::pin_project;

use super::body::OffloadBody;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pin_project! {
    /// Response future of [`OffloadService`](super::OffloadService).
    ///
    /// Requests that cannot carry a tool call poll the inner future
    /// directly (no allocation); watched requests run the read-classify-
    /// call-rewrite sequence as one boxed future.
    pub struct ResponseFuture<F, B: Body, E> {
        #[pin]
        kind: Kind<F, B, E>,
    }
}

pin_project! {
    #[project = ResponseFutureProj]
    enum Kind<F, B: Body, E> {
        Passthrough { #[pin] inner: F },
        Watched { inner: BoxFuture<Result<Response<OffloadBody<B>>, E>> },
    }
}

impl<F, B: Body, E> ResponseFuture<F, B, E> {
    pub(crate) fn passthrough(inner: F) -> Self {
        ResponseFuture {
            kind: Kind::Passthrough { inner },
        }
    }

    pub(crate) fn watched(inner: BoxFuture<Result<Response<OffloadBody<B>>, E>>) -> Self {
        ResponseFuture {
            kind: Kind::Watched { inner },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F, B, E>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body,
{
    type Output = Result<Response<OffloadBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            ResponseFutureProj::Passthrough { inner } => {
                let response = ready!(inner.poll(cx))?;
                Poll::Ready(Ok(response.map(OffloadBody::passthrough)))
            }
            ResponseFutureProj::Watched { inner } => inner.as_mut().poll(cx),
        }
    }
}
