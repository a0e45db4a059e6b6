//! The request tee: the client's body handed to the inner service as it
//! comes, with a reference to each chunk kept to classify the request.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

/// The bytes of a request body, published by [`RequestBody`] once the body
/// has ended within the cap; empty when it did not (too large, broken, or
/// not read to its end by the inner service).
pub(crate) type Capture = Arc<OnceLock<Bytes>>;

pin_project! {
    /// The request body handed to the inner service: the client's body,
    /// byte for byte and as it comes. For a `POST`, the layer keeps a
    /// reference to each chunk as the inner service reads it (no copy for
    /// a body in one chunk) and classifies the request from them when the
    /// response arrives: the request is never held back.
    pub struct RequestBody<B> {
        #[pin]
        body: B,
        tee: Option<Tee>,
    }
}

/// What a [`RequestBody`] keeps of the chunks it hands on.
struct Tee {
    /// The first chunk (most bodies come in one), then the others.
    first: Option<Bytes>,
    more: Vec<Bytes>,
    size: usize,
    cap: usize,
    capture: Capture,
}

impl Tee {
    /// Keeps a reference to a chunk handed on.
    fn keep(&mut self, chunk: &Bytes) {
        if chunk.is_empty() {
            return;
        }
        match &self.first {
            None => self.first = Some(chunk.clone()),
            Some(_) => self.more.push(chunk.clone()),
        }
    }

    /// Publishes the whole body.
    fn publish(self) {
        let data = if self.more.is_empty() {
            self.first.unwrap_or_default()
        } else {
            let mut buf = bytes::BytesMut::with_capacity(self.size);
            for c in self.first.iter().chain(&self.more) {
                buf.extend_from_slice(c);
            }
            buf.freeze()
        };
        let _ = self.capture.set(data);
    }
}

impl<B: Body> RequestBody<B> {
    /// The client's body, not looked at.
    pub(crate) fn original(body: B) -> Self {
        RequestBody { body, tee: None }
    }

    /// The client's body, published into `capture` once it has ended, if
    /// it is at most `cap` bytes long.
    pub(crate) fn teed(body: B, cap: usize, capture: Capture) -> Self {
        let tee = Tee {
            first: None,
            more: Vec::new(),
            size: 0,
            cap,
            capture,
        };
        if body.is_end_stream() {
            // An empty body may never be polled.
            tee.publish();
            return RequestBody::original(body);
        }
        RequestBody {
            body,
            tee: Some(tee),
        }
    }
}

impl<B> Body for RequestBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.body.as_mut().poll_frame(cx));
        let Some(tee) = this.tee else {
            return Poll::Ready(frame);
        };
        let ended = match &frame {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref() {
                    tee.size = tee.size.saturating_add(d.len());
                    if tee.size > tee.cap {
                        *this.tee = None;
                        return Poll::Ready(frame);
                    }
                    tee.keep(d);
                }
                // Published as the last chunk is handed on, so before the
                // inner service can answer.
                f.is_trailers() || this.body.is_end_stream()
            }
            Some(Err(_)) => {
                *this.tee = None;
                return Poll::Ready(frame);
            }
            None => true,
        };
        if ended && let Some(tee) = this.tee.take() {
            tee.publish();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
