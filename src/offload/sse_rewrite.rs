//! The event-stream rewriter: splits a `text/event-stream` response into
//! events as they arrive and rewrites only the events carrying a watched
//! result.

use std::collections::VecDeque;
use std::future::Future;
use std::io::Seek;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame};

use super::budget::Lease;
use super::replay::DeferredError;
use super::replay::SpillReplay;
use super::spill::SPILL_AT;
use super::sse_spill::{EventSpill, offload_event};
use super::state::{Shared, Watch, WatchKind};
use super::tools_changed::after_notice;
use crate::json::{minify_into, range_in};
use crate::offload::Outcome;
use crate::wire::jsonrpc::{Reply, created_task_id, read_reply};
use crate::wire::mcp::MemberRanges;
use crate::wire::sse::{EventSplitter, event_data, replace_data};
use bytestring::ByteString;

mod spilling;

use spilling::SpillDone;

type EventFuture = Pin<Box<dyn Future<Output = Bytes> + Send>>;

/// Rewrites the watched results of an event stream: events before them
/// (progress, logging, server requests) go out as they come, byte for
/// byte; only the event carrying a watched result is held and rewritten;
/// after the last watched result the stream is forwarded untouched.
pub(crate) struct SseRewriter<E> {
    /// The `Mcp-Session-Id` of the request: results still watched when the
    /// stream goes are remembered for a resumed stream of this session.
    session: Option<String>,
    splitter: EventSplitter,
    /// The responses still watched for.
    watched: Vec<Watch>,
    shared: Arc<Shared>,
    /// Frames ready to send, in order.
    ready: VecDeque<Frame<Bytes>>,
    /// The watched event being evaluated.
    pending: Option<EventFuture>,
    /// The inner body has ended.
    ended: bool,
    /// The trailers that ended it, sent after everything else.
    trailers: Option<Frame<Bytes>>,
    /// The inner body's error, sent after the frames before it.
    error: DeferredError<E>,
    /// Bytes held (in the splitter and the event being evaluated) against
    /// the layer's buffer budget; taken when something is first held.
    lease: Option<Lease>,
    /// Length of the event being evaluated.
    pending_len: usize,
    /// A watched event too large to hold, being spilled (see `sse_spill`).
    spill: Option<EventSpill>,
    /// The spilled event being offloaded.
    spilled: Option<SpillFuture>,
    /// A spilled event played back unchanged.
    replaying: Option<SpillReplay<E>>,
}

type SpillFuture = Pin<Box<dyn Future<Output = SpillDone> + Send>>;

impl<E> SseRewriter<E> {
    pub(crate) fn new(watched: Vec<Watch>, session: Option<String>, shared: Arc<Shared>) -> Self {
        SseRewriter {
            session,
            splitter: EventSplitter::default(),
            watched,
            shared,
            ready: VecDeque::new(),
            pending: None,
            ended: false,
            trailers: None,
            error: DeferredError::none(),
            lease: None,
            pending_len: 0,
            spill: None,
            spilled: None,
            replaying: None,
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
        let buffered = self.splitter.buffered();
        if self.pending.is_none() && buffered > SPILL_AT && self.start_spill() {
            return;
        }
        if self.hold(buffered + self.pending_len) {
            return;
        }
        if self.pending.is_none() && self.start_spill() {
            return;
        }
        for w in std::mem::take(&mut self.watched) {
            self.shared.over_buffer_cap(w.call.name);
        }
        self.hold(self.pending_len);
        // With nothing watched, this forwards what is held (after the event
        // being evaluated, if any).
        self.drain_events();
    }

    /// Moves complete events to `ready`, stopping at a watched one.
    fn drain_events(&mut self) {
        while self.pending.is_none() && self.busy_spilling().is_none() {
            if self.watched.is_empty() {
                // Nothing left to watch: forward whatever is held, as is.
                if self.splitter.buffered() > 0 {
                    self.ready.push_back(Frame::data(self.splitter.take_rest()));
                }
                return;
            }
            let buffers = &self.shared.buffers;
            let Some(event) = self
                .splitter
                .next_event_with(|b| buffers.freeze_bytes_mut(b))
            else {
                return;
            };
            self.take_event(event);
        }
    }

    /// Takes `chunk` into the splitter; an event that grows large is
    /// collected in the layer's spare buffer (its pages mapped already).
    fn push(&mut self, chunk: &[u8]) {
        let (held, room) = (self.splitter.buffered(), self.splitter.capacity());
        if let Some(spare) = self
            .shared
            .buffers
            .reuse_buffer_for_growth(held, room, chunk.len())
        {
            self.splitter.move_into(spare);
        }
        self.splitter.push(chunk);
    }

    /// Sends an event on, or starts evaluating the result it carries.
    fn take_event(&mut self, event: Bytes) {
        if self.shared.passes_unread(&self.watched, event.len()) {
            // Whatever this event is, it carries no result to evaluate (nor
            // a task to remember): sent on unparsed; watching goes on.
            self.ready.push_back(Frame::data(event));
            return;
        }
        match self.watch_event(&event) {
            Some((call, _, range, _))
                if self
                    .shared
                    .passes_unread(std::slice::from_ref(&call), range.len()) =>
            {
                // Certainly under its threshold: sent on as it is.
                self.ready.push_back(Frame::data(event));
            }
            Some((watch, data, range, members)) => {
                let held = self.splitter.buffered() + event.len() + data.len();
                if !self.hold(held) {
                    // Over the cap: spilled and offloaded from there.
                    if self.busy_spilling().is_none()
                        && let Some(spill) = EventSpill::whole(&event)
                    {
                        self.watched.push(watch);
                        self.spill = Some(spill);
                        self.hold(self.pending_len);
                        self.end_spill();
                        return;
                    }
                    // No spill file: this result goes out untouched.
                    self.shared.over_buffer_cap(watch.call.name);
                    self.ready.push_back(Frame::data(event));
                    return;
                }
                self.pending_len = event.len() + data.len();
                let shared = self.shared.clone();
                self.pending = Some(Box::pin(rewrite_event(
                    shared,
                    watch,
                    event,
                    data,
                    (range, members),
                )));
            }
            None => self.ready.push_back(Frame::data(event)),
        }
    }

    /// If `event` carries the result of a watched request: its call, its
    /// data, the range of the result in it and where the result's members
    /// sit when known. A `CreateTaskResult`
    /// answering a `tools/call` is remembered (its result comes later, from
    /// `tasks/result`) and sent on as it is.
    fn watch_event(
        &mut self,
        event: &Bytes,
    ) -> Option<(Watch, ByteString, Range<usize>, Option<MemberRanges>)> {
        let data = event_data(event)?;
        if data.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let data = ByteString::try_from(data).ok()?;
        let text: &str = &data;
        let (id, result, members) = match read_reply(text) {
            Reply::Result {
                id,
                result,
                members,
            } => (id, Some(result), members),
            Reply::NoResult { id } => (id, None, None),
            Reply::Broken { id: Some(id), why } => {
                let pos = self.watched.iter().position(|w| w.id == id)?;
                let watch = self.watched.swap_remove(pos);
                self.shared.unreadable(watch.call.name, why);
                return None;
            }
            Reply::Other | Reply::Broken { id: None, .. } => return None,
        };
        let pos = self.watched.iter().position(|w| w.id == id)?;
        let mut watch = self.watched.swap_remove(pos);
        // An error response ends the watch: nothing to rewrite.
        let result = result?;
        if watch.task_augmented
            && let Some(task) = created_task_id(result.get())
        {
            self.shared.tasks.insert(&task, watch.call.kept());
            return None;
        }
        // Known now: this answer is a result, not a task.
        watch.task_augmented = false;
        let range = range_in(text, result.get());
        Some((watch, data, range, members))
    }
}

/// Evaluates one watched event; resolves to the bytes to send for it.
async fn rewrite_event(
    shared: Arc<Shared>,
    watch: Watch,
    event: Bytes,
    data: ByteString,
    (range, members): (Range<usize>, Option<MemberRanges>),
) -> Bytes {
    match shared
        .transform(&watch, data.slice_ref(&data[range.clone()]), members)
        .await
    {
        Some((result, notify)) => {
            let before = &data[..range.start];
            let after = &data[range.end..];
            let mut message = String::with_capacity(before.len() + result.len() + after.len());
            minify_into(before, &mut message);
            message.push_str(&result);
            minify_into(after, &mut message);
            let event = replace_data(&event, message.as_bytes());
            if notify { after_notice(event) } else { event }
        }
        None => event,
    }
}

impl<E> SseRewriter<E> {
    /// The next frame of the rewritten stream, reading `body` as needed.
    pub(crate) fn poll_frame<B>(
        &mut self,
        mut body: Pin<&mut B>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, E>>>
    where
        B: Body<Data = Bytes, Error = E>,
    {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if let Some(fut) = self.pending.as_mut() {
                let event = ready!(fut.as_mut().poll(cx));
                self.evaluated(event);
                continue;
            }
            if let Some(r) = self.replaying.as_mut() {
                match r.next() {
                    Some(Ok(frame)) => return Poll::Ready(Some(Ok(frame))),
                    _ => {
                        self.replaying = None;
                        self.drain_events();
                        self.account();
                        continue;
                    }
                }
            }
            if let Some(fut) = self.spilled.as_mut() {
                let done = ready!(fut.as_mut().poll(cx));
                self.spilled = None;
                self.spill_done(done);
                continue;
            }
            if self.ended {
                // Everything held has been sent: the trailers last, then
                // its bytes given back.
                if let Some(trailers) = self.trailers.take() {
                    return Poll::Ready(Some(Ok(trailers)));
                }
                self.lease = None;
                return self.error.poll_take(cx).map(|e| e.map(Err));
            }
            if self.watched.is_empty() && self.splitter.buffered() == 0 && self.trailers.is_none() {
                // Nothing more to rewrite: plain forwarding.
                return body.as_mut().poll_frame(cx);
            }
            match ready!(body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        if let Some(data) = self.on_data(data) {
                            return Poll::Ready(Some(Ok(Frame::data(data))));
                        }
                    }
                    Err(trailers) => self.on_trailers(trailers),
                },
                Some(Err(e)) => self.on_error(e),
                None => self.on_end(),
            }
        }
    }

    /// The watched event being evaluated resolved to `event`.
    fn evaluated(&mut self, event: Bytes) {
        self.pending = None;
        self.pending_len = 0;
        self.ready.push_back(Frame::data(event));
        self.drain_events();
        self.account();
    }

    /// Takes a chunk of the stream; returns it when it can go straight out.
    fn on_data(&mut self, data: Bytes) -> Option<Bytes> {
        if let Some(spill) = self.spill.as_mut() {
            match spill.push(&data) {
                Ok(None) => return None,
                Ok(Some(n)) => {
                    self.push(&data[n..]);
                    self.end_spill();
                    return None;
                }
                Err(_) => {
                    // The disk failed under the spill: what it holds goes
                    // out as it is, then this chunk and the rest.
                    self.replay_spill();
                    self.push(&data);
                    return None;
                }
            }
        }
        let idle = self.pending.is_none() && self.splitter.buffered() == 0;
        if idle
            && EventSplitter::ends_at_boundary(&data)
            && self.shared.passes_unread(&self.watched, data.len())
        {
            // Whole events, each too small for any watched result: straight
            // out, unread.
            return Some(data);
        }
        if idle && EventSplitter::is_one_event(&data) {
            // A whole event in one chunk: no copy.
            self.take_event(data);
        } else {
            self.push(&data);
        }
        self.drain_events();
        self.account();
        None
    }

    /// Trailers end the stream as its end does: what is held goes first
    /// (an event being spilled, or evaluated, included), then they do.
    fn on_trailers(&mut self, trailers: Frame<Bytes>) {
        self.trailers = Some(trailers);
        self.end_events();
    }

    /// The inner body failed: what is held goes out, then the error,
    /// unchanged.
    fn on_error(&mut self, error: E) {
        if self.spill.is_some() {
            // Cut short inside the spilled event: played back as it came.
            self.replay_spill();
        }
        self.flush_held();
        self.watched.clear();
        self.error = DeferredError::new(Some(error), !self.ready.is_empty());
        self.ended = true;
    }

    /// The inner body ended: a last event ended by a final CR is taken
    /// like any other; what else is held (an unfinished event) goes out.
    fn on_end(&mut self) {
        self.ended = true;
        self.end_events();
    }

    /// No more events come (the body ended, or its trailers came): the
    /// event being spilled is offloaded if whole, else played back; a last
    /// event ended by a final CR is taken; the rest goes out as it is.
    fn end_events(&mut self) {
        match &self.spill {
            Some(s) if s.complete_at_end() => self.end_spill(),
            Some(_) => self.replay_spill(),
            None => {}
        }
        if !self.watched.is_empty()
            && self.pending.is_none()
            && let Some(event) = self.splitter.finish_event()
        {
            self.take_event(event);
        }
        self.flush_held();
    }

    fn flush_held(&mut self) {
        let rest = self.splitter.take_rest();
        if !rest.is_empty() {
            self.ready.push_back(Frame::data(rest));
        }
    }
}

impl<E> Drop for SseRewriter<E> {
    /// Results not seen on this stream (it ended, failed, or the client
    /// went away) may come on a resumed stream of the same session.
    fn drop(&mut self) {
        if let Some(session) = &self.session
            && !self.watched.is_empty()
        {
            self.shared
                .remember_unanswered(session, std::mem::take(&mut self.watched));
        }
    }
}
