//! The response body of the middleware: the inner body untouched, a
//! collected (possibly rewritten) JSON body played back, or an event stream
//! being rewritten.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::budget::Lease;
use super::replay::Replay;
use super::replay::SpillReplay;
use super::sse_rewrite::SseRewriter;

pin_project! {
    /// The response body of [`OffloadService`](crate::offload::OffloadService): the
    /// inner body untouched, a collected (possibly rewritten) JSON body, or
    /// an event stream in which watched results are rewritten.
    pub struct OffloadBody<B: Body> {
        #[pin]
        kind: BodyKind<B>,
    }
}

pin_project! {
    #[project = OffloadBodyProj]
    enum BodyKind<B: Body> {
        Passthrough { #[pin] body: B },
        Full { replay: Replay<B>, lease: Option<Lease> },
        Sse {
            #[pin] body: B,
            rewriter: Box<SseRewriter<B::Error>>,
        },
        Spill { replay: Box<SpillReplay<B::Error>> },
    }
}

impl<B: Body> OffloadBody<B> {
    /// The inner body, untouched.
    pub(crate) fn passthrough(body: B) -> Self {
        OffloadBody {
            kind: BodyKind::Passthrough { body },
        }
    }

    /// A collected body (its data, trailers, and the error that ended it),
    /// holding `lease` of the buffer budget until it is dropped.
    pub(crate) fn full(
        data: Bytes,
        trailers: Option<HeaderMap>,
        error: Option<B::Error>,
        lease: Lease,
    ) -> Self {
        let mut frames = VecDeque::with_capacity(2);
        if !data.is_empty() {
            frames.push_back(Frame::data(data));
        }
        if let Some(t) = trailers {
            frames.push_back(Frame::trailers(t));
        }
        OffloadBody {
            kind: BodyKind::Full {
                replay: Replay::new(frames, None, error),
                lease: Some(lease),
            },
        }
    }

    /// A body of the layer's own (an answer it gives without the inner
    /// service).
    pub(crate) fn own(data: Bytes) -> Self {
        let mut frames = VecDeque::with_capacity(1);
        frames.push_back(Frame::data(data));
        OffloadBody {
            kind: BodyKind::Full {
                replay: Replay::new(frames, None, None),
                lease: None,
            },
        }
    }

    /// A body of the layer's own, then `trailers`.
    pub(crate) fn own_with(data: Bytes, trailers: Option<HeaderMap>) -> Self {
        let mut frames = VecDeque::with_capacity(2);
        frames.push_back(Frame::data(data));
        if let Some(t) = trailers {
            frames.push_back(Frame::trailers(t));
        }
        OffloadBody {
            kind: BodyKind::Full {
                replay: Replay::new(frames, None, None),
                lease: None,
            },
        }
    }

    /// A spilled body played back from its file, byte for byte.
    pub(crate) fn replay_spill(replay: SpillReplay<B::Error>) -> Self {
        OffloadBody {
            kind: BodyKind::Spill {
                replay: Box::new(replay),
            },
        }
    }

    /// Frames already read, then the rest of the body, untouched.
    pub(crate) fn resume(frames: VecDeque<Frame<Bytes>>, rest: Pin<Box<B>>, lease: Lease) -> Self {
        OffloadBody {
            kind: BodyKind::Full {
                replay: Replay::new(frames, Some(rest), None),
                lease: Some(lease),
            },
        }
    }

    /// An event stream whose watched results `rewriter` rewrites.
    pub(crate) fn sse(body: B, rewriter: SseRewriter<B::Error>) -> Self {
        OffloadBody {
            kind: BodyKind::Sse {
                body,
                rewriter: Box::new(rewriter),
            },
        }
    }
}

impl<B> Body for OffloadBody<B>
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
            OffloadBodyProj::Passthrough { body } => body.poll_frame(cx),
            OffloadBodyProj::Full { replay, lease } => {
                let frame = replay.poll_frame(cx);
                if replay.is_drained() {
                    // What was held is sent: give its bytes back to the budget.
                    lease.take();
                }
                frame
            }
            OffloadBodyProj::Sse { body, rewriter } => rewriter.poll_frame(body, cx),
            OffloadBodyProj::Spill { replay } => Poll::Ready(replay.next()),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            BodyKind::Passthrough { body } => body.is_end_stream(),
            BodyKind::Full { replay, .. } => replay.is_end_stream(),
            BodyKind::Sse { .. } => false,
            BodyKind::Spill { replay } => replay.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            BodyKind::Passthrough { body } => body.size_hint(),
            BodyKind::Full { replay, .. } => replay.size_hint(),
            BodyKind::Sse { .. } => SizeHint::default(),
            BodyKind::Spill { replay } => {
                let mut hint = SizeHint::new();
                hint.set_lower(replay.left());
                hint
            }
        }
    }
}
