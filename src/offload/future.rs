//! The response future of [`OffloadService`](crate::offload::OffloadService).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http::Response;
use http_body::Body;
use pin_project_lite::pin_project;

use super::body::OffloadBody;
use super::request_body::Capture;
use super::respond::{Next, drop_conflicting_length, respond, respond_resumed};
use super::state::{Extra, Shared, Watch};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Where a request the layer read first goes on: its own answer, or the
/// inner service's response future.
pub(crate) enum Step<F, B: Body> {
    /// The layer's own answer.
    Answer(Response<OffloadBody<B>>),
    /// The inner service was called: its response, handled as usual.
    Forward(ResponseFuture<F, B>),
}

pin_project! {
    /// Response future of [`OffloadService`](crate::offload::OffloadService).
    ///
    /// It polls the inner future in place (no allocation). When the
    /// response arrives, the request (its body read by the inner service) is
    /// classified; only a response that may carry a result to rewrite
    /// continues in a boxed future that reads it.
    pub struct ResponseFuture<F, B: Body> {
        #[pin]
        kind: Kind<F, B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, B: Body> {
        Passthrough { #[pin] inner: F },
        Watching {
            #[pin]
            inner: F,
            capture: Capture,
            session: Option<String>,
            extra: Extra,
            shared: Arc<Shared>,
        },
        Intercepting { step: BoxFuture<Step<F, B>> },
        Resumed {
            #[pin]
            inner: F,
            watched: Vec<Watch>,
            session: String,
            shared: Arc<Shared>,
        },
        Reading { inner: BoxFuture<Response<OffloadBody<B>>> },
    }
}

impl<F, B: Body> ResponseFuture<F, B> {
    pub(crate) fn passthrough(inner: F) -> Self {
        ResponseFuture {
            kind: Kind::Passthrough { inner },
        }
    }

    pub(crate) fn watching(
        inner: F,
        capture: Capture,
        session: Option<String>,
        extra: Extra,
        shared: Arc<Shared>,
    ) -> Self {
        ResponseFuture {
            kind: Kind::Watching {
                inner,
                capture,
                session,
                extra,
                shared,
            },
        }
    }

    /// A request read first: the layer answers it, or calls the inner
    /// service with it (see `serve`).
    pub(crate) fn intercepting(step: BoxFuture<Step<F, B>>) -> Self {
        ResponseFuture {
            kind: Kind::Intercepting { step },
        }
    }

    /// A resumed `GET` stream of `session` that may replay `watched`.
    pub(crate) fn resumed(
        inner: F,
        watched: Vec<Watch>,
        session: String,
        shared: Arc<Shared>,
    ) -> Self {
        ResponseFuture {
            kind: Kind::Resumed {
                inner,
                watched,
                session,
                shared,
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Send + 'static,
{
    type Output = Result<Response<OffloadBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut kind = self.project().kind;
        loop {
            match kind.as_mut().project() {
                KindProj::Passthrough { inner } => {
                    let mut response = ready!(inner.poll(cx))?;
                    drop_conflicting_length(response.headers_mut());
                    return Poll::Ready(Ok(response.map(OffloadBody::passthrough)));
                }
                KindProj::Watching {
                    inner,
                    capture,
                    session,
                    extra,
                    shared,
                } => {
                    let response = ready!(inner.poll(cx))?;
                    let extra = std::mem::take(extra);
                    match respond(shared, capture, session.take(), extra, response) {
                        Next::Ready(response) => return Poll::Ready(Ok(response)),
                        Next::Read(inner) => kind.set(Kind::Reading { inner }),
                    }
                }
                KindProj::Intercepting { step } => match ready!(step.as_mut().poll(cx)) {
                    Step::Answer(response) => return Poll::Ready(Ok(response)),
                    Step::Forward(next) => kind.set(next.kind),
                },
                KindProj::Resumed {
                    inner,
                    watched,
                    session,
                    shared,
                } => {
                    let response = ready!(inner.poll(cx))?;
                    let (watched, session) = (std::mem::take(watched), std::mem::take(session));
                    return Poll::Ready(Ok(respond_resumed(shared, watched, session, response)));
                }
                KindProj::Reading { inner } => return inner.as_mut().poll(cx).map(Ok),
            }
        }
    }
}
