//! A collected response body played back: frames held in memory, then the
//! rest of the body or the error that cut it short.

use std::collections::VecDeque;
use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// Bytes read at a time when playing a spill back.
const SPILL_READ: usize = 256 * 1024;

/// Frames held in memory, then the rest of a body or the error that cut it
/// short: a collected (possibly rewritten) response body.
pub(crate) struct Replay<B: Body> {
    frames: VecDeque<Frame<Bytes>>,
    rest: Option<Pin<Box<B>>>,
    error: DeferredError<B::Error>,
}

impl<B: Body> Replay<B> {
    pub(crate) fn new(
        frames: VecDeque<Frame<Bytes>>,
        rest: Option<Pin<Box<B>>>,
        error: Option<B::Error>,
    ) -> Self {
        let error = DeferredError::new(error, !frames.is_empty());
        Replay {
            frames,
            rest,
            error,
        }
    }
}

impl<B: Body<Data = Bytes>> Replay<B> {
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        if let Some(f) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(f)));
        }
        if self.error.is_some() {
            return self.error.poll_take(cx).map(|e| e.map(Err));
        }
        match &mut self.rest {
            Some(body) => body.as_mut().poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    pub(crate) fn is_end_stream(&self) -> bool {
        self.frames.is_empty()
            && !self.error.is_some()
            && self.rest.as_ref().is_none_or(|b| b.is_end_stream())
    }

    pub(crate) fn size_hint(&self) -> SizeHint {
        if self.error.is_some() {
            // With an error to deliver the length is not known in advance.
            return SizeHint::default();
        }
        let held: u64 = self
            .frames
            .iter()
            .filter_map(|f| f.data_ref())
            .map(|d| d.len() as u64)
            .sum();
        match &self.rest {
            None => SizeHint::with_exact(held),
            Some(b) => {
                let h = b.size_hint();
                let mut out = SizeHint::new();
                out.set_lower(h.lower() + held);
                if let Some(u) = h.upper() {
                    out.set_upper(u + held);
                }
                out
            }
        }
    }
}

/// The frames still held.
impl<B: Body> Replay<B> {
    pub(crate) fn is_drained(&self) -> bool {
        self.frames.is_empty()
    }
}

/// The error that ended a body, delivered after the frames read before it.
/// When frames went before it, the body first yields once, so the server
/// flushes them to the client (as it would have, streaming) before the
/// error tears the connection down.
pub(crate) struct DeferredError<E> {
    error: Option<E>,
    yield_first: bool,
}

impl<E> DeferredError<E> {
    /// `error` (if any), after `after_frames` were sent or not.
    pub(crate) fn new(error: Option<E>, after_frames: bool) -> Self {
        let yield_first = error.is_some() && after_frames;
        DeferredError { error, yield_first }
    }

    /// No error.
    pub(crate) fn none() -> Self {
        DeferredError {
            error: None,
            yield_first: false,
        }
    }

    pub(crate) fn is_some(&self) -> bool {
        self.error.is_some()
    }

    /// The error (once), after yielding once if frames went before it;
    /// `None` when there is none.
    pub(crate) fn poll_take(&mut self, cx: &mut Context<'_>) -> Poll<Option<E>> {
        if self.error.is_some() && std::mem::take(&mut self.yield_first) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.error.take())
    }
}

/// A spill played back: its bytes, then its trailers or the error that cut
/// the body short.
pub(crate) struct SpillReplay<E> {
    file: std::fs::File,
    left: u64,
    trailers: Option<http::HeaderMap>,
    error: Option<E>,
}

impl<E> SpillReplay<E> {
    /// `len` bytes of `file` (rewound), then `trailers` or `error`.
    pub(crate) fn new(
        file: std::fs::File,
        len: u64,
        trailers: Option<http::HeaderMap>,
        error: Option<E>,
    ) -> Self {
        SpillReplay {
            file,
            left: len,
            trailers,
            error,
        }
    }

    /// `len` bytes of `file` (rewound), nothing after them.
    pub(crate) fn plain(file: std::fs::File, len: u64) -> Self {
        Self::new(file, len, None, None)
    }

    /// The next frame (reads of a local file just written: in the page cache).
    pub(crate) fn next(&mut self) -> Option<Result<Frame<Bytes>, E>> {
        if self.left > 0 {
            let want = SPILL_READ.min(usize::try_from(self.left).unwrap_or(SPILL_READ));
            let mut buf = vec![0u8; want];
            match self.file.read(&mut buf) {
                Ok(n) if n > 0 => {
                    buf.truncate(n);
                    self.left -= n as u64;
                    return Some(Ok(Frame::data(Bytes::from(buf))));
                }
                // The spill shrank or failed under us: end here.
                _ => self.left = 0,
            }
        }
        if let Some(e) = self.error.take() {
            return Some(Err(e));
        }
        self.trailers.take().map(|t| Ok(Frame::trailers(t)))
    }

    pub(crate) fn is_end_stream(&self) -> bool {
        self.left == 0 && self.error.is_none() && self.trailers.is_none()
    }

    pub(crate) fn left(&self) -> u64 {
        self.left
    }
}
