//! Request and response bodies of [`OffloadService`](super::OffloadService).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use serde_json::Value;

use super::budget::Lease;
use super::layer::Shared;
use crate::engine::jsonfmt::range_in;
use crate::engine::{Offloader, ToolCall};
use crate::wire::jsonrpc::{RawCall, ResponseMessage, created_task_id};
use crate::wire::sse::{EventSplitter, event_data, replace_data};

/// Frames held in memory, then the rest of a body or the error that cut it
/// short: a collected (possibly rewritten) response body.
pub(crate) struct Replay<B: Body> {
    frames: VecDeque<Frame<Bytes>>,
    rest: Option<Pin<Box<B>>>,
    error: Option<B::Error>,
    /// Yield once between the last held frame and the error, so the
    /// server flushes the bytes before it (as it would have, streaming).
    flush_before_error: bool,
}

impl<B: Body> Replay<B> {
    pub(crate) fn new(
        frames: VecDeque<Frame<Bytes>>,
        rest: Option<Pin<Box<B>>>,
        error: Option<B::Error>,
    ) -> Self {
        let flush_before_error = error.is_some() && !frames.is_empty();
        Replay {
            frames,
            rest,
            error,
            flush_before_error,
        }
    }
}

impl<B: Body<Data = Bytes>> Replay<B> {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        if let Some(f) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(f)));
        }
        if self.error.is_some() && std::mem::take(&mut self.flush_before_error) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(e) = self.error.take() {
            return Poll::Ready(Some(Err(e)));
        }
        match &mut self.rest {
            Some(body) => body.as_mut().poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty()
            && self.error.is_none()
            && self.rest.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
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

type EventFuture = Pin<Box<dyn Future<Output = Bytes> + Send>>;

/// State of an event stream in which some responses are watched.
pub(crate) struct SseState<E> {
    splitter: EventSplitter,
    /// Watched ids, the calls they answer, and whether each is a
    /// task-augmented `tools/call` (whose answer may be a `CreateTaskResult`).
    watched: Vec<(Value, RawCall, bool)>,
    shared: Arc<Shared>,
    /// Frames ready to send, in order.
    ready: VecDeque<Frame<Bytes>>,
    /// The watched event being evaluated.
    pending: Option<EventFuture>,
    /// The inner body has ended.
    ended: bool,
    /// The inner body's error, sent after the frames before it.
    error: Option<E>,
    /// Bytes held (in the splitter and the event being evaluated) against
    /// the layer's buffer budget; taken when something is first held.
    lease: Option<Lease>,
    /// Length of the event being evaluated.
    pending_len: usize,
    /// Yield once before the error (see [`Replay`]).
    flush_before_error: bool,
}

impl<E> SseState<E> {
    pub(crate) fn new(watched: Vec<(Value, RawCall, bool)>, shared: Arc<Shared>) -> Self {
        SseState {
            splitter: EventSplitter::default(),
            watched,
            shared,
            ready: VecDeque::new(),
            pending: None,
            ended: false,
            error: None,
            lease: None,
            pending_len: 0,
            flush_before_error: false,
        }
    }

    /// Holds exactly `n` bytes of the budget (false if that passes the cap).
    fn hold(&mut self, n: usize) -> bool {
        if n == 0 && self.lease.is_none() {
            return true;
        }
        let buffers = &self.shared.buffers;
        self.lease.get_or_insert_with(|| buffers.lease()).resize(n)
    }

    /// Holds what is buffered against the budget; past the cap, stops
    /// watching: the held bytes and the rest of the stream go out untouched.
    fn account(&mut self) {
        if self.watched.is_empty() {
            self.hold(self.pending_len);
            return;
        }
        if self.hold(self.splitter.buffered() + self.pending_len) {
            return;
        }
        for (_, call, _) in std::mem::take(&mut self.watched) {
            super::service::over_buffer_cap(&self.shared, call.name);
        }
        self.hold(self.pending_len);
        // With nothing watched, this forwards what is held (after the event
        // being evaluated, if any).
        self.drain_events();
    }

    /// Moves complete events to `ready`, stopping at a watched one.
    fn drain_events(&mut self) {
        while self.pending.is_none() {
            if self.watched.is_empty() {
                // Nothing left to watch: forward whatever is held, as is.
                if self.splitter.buffered() > 0 {
                    self.ready.push_back(Frame::data(self.splitter.take_rest()));
                }
                return;
            }
            let Some(event) = self.splitter.next_event() else {
                return;
            };
            self.take_event(event);
        }
    }

    /// Sends an event on, or starts evaluating the result it carries.
    fn take_event(&mut self, event: Bytes) {
        if self.surely_inline(event.len()) {
            // Whatever this event is, it carries no result to evaluate (nor
            // a task to remember): sent on unparsed; watching goes on.
            self.ready.push_back(Frame::data(event));
            return;
        }
        match self.watch_event(&event) {
            Some((call, _, range))
                if self.shared.offloader.surely_inline(&call.name, range.len())
                    && !self.shared.offloader.events().wants_pass_events() =>
            {
                // Surely under its threshold: sent on as it is.
                self.ready.push_back(Frame::data(event));
            }
            Some((call, data, range)) => {
                let held = self.splitter.buffered() + event.len() + data.len();
                if !self.hold(held) {
                    // Over the cap: this result goes out untouched.
                    super::service::over_buffer_cap(&self.shared, call.name);
                    self.ready.push_back(Frame::data(event));
                    return;
                }
                self.pending_len = event.len() + data.len();
                let offloader = self.shared.offloader.clone();
                self.pending = Some(Box::pin(rewrite_event(
                    offloader,
                    call.to_call(),
                    event,
                    data,
                    range,
                )));
            }
            None => self.ready.push_back(Frame::data(event)),
        }
    }

    /// Whether an event of `len` bytes surely needs no evaluation: every
    /// result still watched would be under its threshold at that size, none
    /// may be a `CreateTaskResult`, and no one listens for the
    /// `PassedThrough` events an evaluation would emit.
    fn surely_inline(&self, len: usize) -> bool {
        let offloader = &self.shared.offloader;
        self.watched
            .iter()
            .all(|(_, call, task)| !task && offloader.surely_inline(&call.name, len))
            && !offloader.events().wants_pass_events()
    }

    /// If `event` carries the result of a watched request: its call, its
    /// data and the range of the result in it. A `CreateTaskResult`
    /// answering a `tools/call` is remembered (its result comes later, from
    /// `tasks/result`) and sent on as it is.
    fn watch_event(&mut self, event: &Bytes) -> Option<(RawCall, Bytes, std::ops::Range<usize>)> {
        let data = event_data(event)?;
        if data.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let text = std::str::from_utf8(&data).ok()?;
        let msg: ResponseMessage<'_> = serde_json::from_str(text).ok()?;
        let id = msg.id?;
        let pos = self.watched.iter().position(|(w, _, _)| *w == id)?;
        let (_, call, task_augmented) = self.watched.swap_remove(pos);
        let result = msg.result?;
        if task_augmented && let Some(task) = created_task_id(result.get()) {
            self.shared.tasks.insert(task, &call);
            return None;
        }
        let range = range_in(text, result.get());
        Some((call, data, range))
    }
}

/// Evaluates one watched event; resolves to the bytes to send for it.
async fn rewrite_event(
    offloader: Offloader,
    call: ToolCall,
    event: Bytes,
    data: Bytes,
    range: std::ops::Range<usize>,
) -> Bytes {
    let outcome = offloader
        .process_async(&call, data.slice(range.clone()))
        .await;
    match super::service::replacement(outcome) {
        Some(result) => {
            // Only the message around the result is re-read (it was valid
            // UTF-8 when the event was watched; the result may be megabytes).
            let before = String::from_utf8_lossy(&data[..range.start]);
            let after = String::from_utf8_lossy(&data[range.end..]);
            let mut message = String::with_capacity(before.len() + result.len() + after.len());
            crate::engine::jsonfmt::minify_into(&before, &mut message);
            message.push_str(&result);
            crate::engine::jsonfmt::minify_into(&after, &mut message);
            replace_data(&event, message.as_bytes())
        }
        None => event,
    }
}

pin_project! {
    /// The response body of [`OffloadService`](super::OffloadService): the
    /// inner body untouched, a collected (possibly rewritten) JSON body, or
    /// an event stream in which watched results are rewritten.
    pub struct OffloadBody<B: Body> {
        #[pin]
        kind: BodyKind<B>,
    }
}

pin_project! {
    #[project = OffloadBodyProj]
    pub(crate) enum BodyKind<B: Body> {
        Passthrough { #[pin] body: B },
        Full { replay: Replay<B>, lease: Option<Lease> },
        Sse {
            #[pin] body: B,
            state: Box<SseState<B::Error>>,
        },
    }
}

impl<B: Body> OffloadBody<B> {
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

    /// Frames already read, then the rest of the body, untouched.
    pub(crate) fn resume(frames: VecDeque<Frame<Bytes>>, rest: Pin<Box<B>>, lease: Lease) -> Self {
        OffloadBody {
            kind: BodyKind::Full {
                replay: Replay::new(frames, Some(rest), None),
                lease: Some(lease),
            },
        }
    }

    pub(crate) fn sse(body: B, state: SseState<B::Error>) -> Self {
        OffloadBody {
            kind: BodyKind::Sse {
                body,
                state: Box::new(state),
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
                if replay.frames.is_empty() {
                    // What was held is sent: give its bytes back to the budget.
                    lease.take();
                }
                frame
            }
            OffloadBodyProj::Sse { mut body, state } => loop {
                if let Some(frame) = state.ready.pop_front() {
                    return Poll::Ready(Some(Ok(frame)));
                }
                if let Some(fut) = state.pending.as_mut() {
                    let event = ready!(fut.as_mut().poll(cx));
                    state.pending = None;
                    state.pending_len = 0;
                    state.ready.push_back(Frame::data(event));
                    state.drain_events();
                    state.account();
                    continue;
                }
                if state.ended {
                    if state.error.is_some() && std::mem::take(&mut state.flush_before_error) {
                        // Let the server flush what went before the error.
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    return Poll::Ready(state.error.take().map(Err));
                }
                if state.watched.is_empty() && state.splitter.buffered() == 0 {
                    // Nothing more to rewrite: plain forwarding.
                    return body.as_mut().poll_frame(cx);
                }
                match ready!(body.as_mut().poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => {
                            if state.pending.is_none()
                                && state.splitter.buffered() == 0
                                && EventSplitter::ends_at_boundary(&data)
                                && state.surely_inline(data.len())
                            {
                                // Whole events, each too small for any
                                // watched result: straight out, unread.
                                return Poll::Ready(Some(Ok(Frame::data(data))));
                            }
                            if state.pending.is_none()
                                && state.splitter.buffered() == 0
                                && EventSplitter::is_one_event(&data)
                            {
                                // A whole event in one chunk: no copy.
                                state.take_event(data);
                            } else {
                                state.splitter.push(&data);
                            }
                            state.drain_events();
                            state.account();
                        }
                        Err(frame) => {
                            // Trailers end the stream: flush what is held first.
                            let rest = state.splitter.take_rest();
                            if !rest.is_empty() {
                                state.ready.push_back(Frame::data(rest));
                            }
                            state.ready.push_back(frame);
                        }
                    },
                    Some(Err(e)) => {
                        // Forward what is held, then the error, unchanged.
                        let rest = state.splitter.take_rest();
                        if !rest.is_empty() {
                            state.ready.push_back(Frame::data(rest));
                        }
                        state.watched.clear();
                        state.flush_before_error = !state.ready.is_empty();
                        state.error = Some(e);
                        state.ended = true;
                    }
                    None => {
                        state.ended = true;
                        let rest = state.splitter.take_rest();
                        if !rest.is_empty() {
                            state.ready.push_back(Frame::data(rest));
                        }
                    }
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            BodyKind::Passthrough { body } => body.is_end_stream(),
            BodyKind::Full { replay, .. } => replay.is_end_stream(),
            BodyKind::Sse { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            BodyKind::Passthrough { body } => body.size_hint(),
            BodyKind::Full { replay, .. } => replay.size_hint(),
            BodyKind::Sse { .. } => SizeHint::default(),
        }
    }
}
