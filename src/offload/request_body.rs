//! The request tee: the client's body handed to the inner service as it
//! comes, with a reference to each chunk kept to classify the request.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::replay::Replay;

/// The bytes of a request body, published by [`RequestBody`] once the body
/// has ended within the cap; empty when it did not (too large, broken, or
/// not read to its end by the inner service).
pub(crate) type Capture = Arc<OnceLock<Bytes>>;

pin_project! {
    /// The request body handed to the inner service: the client's body,
    /// byte for byte and as it comes. For a `POST`, the layer keeps a
    /// reference to each chunk as the inner service reads it (no copy for
    /// a body in one chunk) and classifies the request from them when the
    /// response arrives: the request is never held back. When the layer
    /// serves offloaded data, a JSON `POST` body is read first (up to the
    /// classification cap), then played back to the inner service, chunk
    /// for chunk, followed by the rest of the body if it was longer.
    ///
    /// [`HistoryOffloadService`](crate::history::HistoryOffloadService) hands on the
    /// same type: a chat request's body rewritten, or played back as read.
    pub struct RequestBody<B: Body> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B: Body> {
        Direct {
            #[pin]
            body: B,
            tee: Option<Tee>,
        },
        Replayed {
            replay: Replay<B>,
            // The whole body, published into the capture once the inner
            // service has read it to its end (as the tee does).
            publish: Option<(Bytes, Capture)>,
        },
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
        RequestBody {
            kind: Kind::Direct { body, tee: None },
        }
    }

    /// Frames already read from the client's body, then the rest of it (if
    /// not read to its end) or the error that ended it.
    pub(crate) fn replayed(
        frames: std::collections::VecDeque<Frame<Bytes>>,
        rest: Option<Pin<Box<B>>>,
        error: Option<B::Error>,
    ) -> Self {
        RequestBody {
            kind: Kind::Replayed {
                replay: Replay::new(frames, rest, error),
                publish: None,
            },
        }
    }

    /// The whole body `data` played back from `frames`, published into
    /// `capture` once the inner service has read it to its end.
    pub(crate) fn replayed_whole(
        frames: std::collections::VecDeque<Frame<Bytes>>,
        data: Bytes,
        capture: Capture,
    ) -> Self
    where
        B: Body<Data = Bytes>,
    {
        let replay = Replay::new(frames, None, None);
        if replay.is_end_stream() {
            // An empty body may never be polled.
            let _ = capture.set(data);
            return RequestBody {
                kind: Kind::Replayed {
                    replay,
                    publish: None,
                },
            };
        }
        RequestBody {
            kind: Kind::Replayed {
                replay,
                publish: Some((data, capture)),
            },
        }
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
            kind: Kind::Direct {
                body,
                tee: Some(tee),
            },
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
        match self.project().kind.project() {
            KindProj::Direct { body, tee } => poll_teed(body, tee, cx),
            KindProj::Replayed { replay, publish } => {
                let frame = ready!(replay.poll_frame(cx));
                if replay.is_end_stream()
                    && let Some((data, capture)) = publish.take()
                {
                    let _ = capture.set(data);
                }
                Poll::Ready(frame)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Direct { body, .. } => body.is_end_stream(),
            Kind::Replayed { replay, .. } => replay.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Direct { body, .. } => body.size_hint(),
            Kind::Replayed { replay, .. } => replay.size_hint(),
        }
    }
}

/// The next frame of the client's body, its data kept in `tee` (dropped
/// past the cap or on an error; published when the body ends).
fn poll_teed<B>(
    mut body: Pin<&mut B>,
    tee: &mut Option<Tee>,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<Frame<Bytes>, B::Error>>>
where
    B: Body<Data = Bytes>,
{
    let frame = ready!(body.as_mut().poll_frame(cx));
    let Some(t) = tee else {
        return Poll::Ready(frame);
    };
    let ended = match &frame {
        Some(Ok(f)) => {
            if let Some(d) = f.data_ref() {
                t.size = t.size.saturating_add(d.len());
                if t.size > t.cap {
                    *tee = None;
                    return Poll::Ready(frame);
                }
                t.keep(d);
            }
            // Published as the last chunk is handed on, so before the
            // inner service can answer.
            f.is_trailers() || body.is_end_stream()
        }
        Some(Err(_)) => {
            *tee = None;
            return Poll::Ready(frame);
        }
        None => true,
    };
    if ended && let Some(t) = tee.take() {
        t.publish();
    }
    Poll::Ready(frame)
}
