//! [`OffloadService`]: classification, the call, and the response path.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method, Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use tower_service::Service;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use http_body::Frame;

use super::body::{Capture, OffloadBody, RequestBody, SseState};
use super::budget::Lease;
use super::future::ResponseFuture;
use super::layer::Shared;
use crate::engine::Outcome;
use crate::lifecycle::events::{OffloadEvent, PassReason};
use crate::wire::jsonrpc::{RawCall, Watched, classify, created_task_id, find_results};
use crate::wire::mcp::ResultError;

/// The `Mcp-Session-Id` header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// Middleware that offloads large MCP tool results to JSONL files.
///
/// Created by [`OffloadLayer`](super::OffloadLayer); see the [module
/// docs](crate::layer).
#[derive(Clone)]
pub struct OffloadService<S> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<Shared>,
}

impl<S> std::fmt::Debug for OffloadService<S>
where
    S: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadService")
            .field("inner", &self.inner)
            .field("offloader", &self.shared.offloader)
            .finish()
    }
}

impl<S> OffloadService<S> {
    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

fn is_truthy(v: &HeaderValue) -> bool {
    let v = v.as_bytes();
    v == b"1" || v.eq_ignore_ascii_case(b"true")
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for OffloadService<S>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    ReqBody: Body<Data = Bytes>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Send + 'static,
{
    type Response = Response<OffloadBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let shared = &self.shared;
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok());
        if req.method() == Method::DELETE
            && let Some(id) = session
        {
            shared.sessions.forget(id);
        }
        let pass = !shared.offloader.config().enabled
            || req.method() != Method::POST
            || req
                .headers()
                .get(&shared.proxy_header)
                .is_some_and(is_truthy)
            || session.is_some_and(|id| shared.sessions.contains(id));
        if pass {
            return ResponseFuture::passthrough(self.inner.call(req.map(RequestBody::original)));
        }
        // The request goes on at once; its chunks are kept as the inner
        // service reads them, and classified when the response arrives.
        let capture = Capture::default();
        let cap = shared.max_request_bytes;
        let req = req.map(|b| RequestBody::teed(b, cap, capture.clone()));
        ResponseFuture::watching(self.inner.call(req), capture, shared.clone())
    }
}

/// What to send in place of a result, given the engine's outcome (which has
/// emitted its event); `None` keeps the original.
pub(crate) fn replacement(outcome: Result<Outcome, ResultError>) -> Option<String> {
    match outcome {
        Ok(Outcome::Offloaded(o)) => Some(o.result),
        Ok(Outcome::Truncated(t)) => Some(t.result),
        Ok(Outcome::Inline(_)) | Err(_) => None,
    }
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(CONTENT_TYPE)?
        .to_str()
        .ok()
        .map(|v| v.split(';').next().unwrap_or_default().trim())
}

/// A response the layer waits for.
struct Expected {
    /// The JSON-RPC id of the request.
    id: Value,
    /// The call whose result it carries (a task's original call when known).
    call: RawCall,
    /// The request is a task-augmented `tools/call` (`params.task`): the
    /// only kind a server may answer with a `CreateTaskResult`.
    task_augmented: bool,
}

/// The watched requests of a body, ready for the response.
fn resolve(shared: &Shared, watched: Vec<(Value, Watched)>) -> Vec<Expected> {
    watched
        .into_iter()
        .map(|(id, w)| match w {
            Watched::Call { call, task } => Expected {
                id,
                call,
                task_augmented: task,
            },
            Watched::TaskResult(task) => Expected {
                id,
                call: shared
                    .tasks
                    .get(&task)
                    .unwrap_or_else(|| RawCall::named("tasks_result")),
                task_augmented: false,
            },
        })
        .collect()
}

/// Whether a response body of `len` bytes can be passed on without looking
/// at it: no watched result in it can be over its threshold, none can be a
/// `CreateTaskResult` to remember, and no one listens for the
/// `PassedThrough` events that looking would emit.
fn surely_untouched(shared: &Shared, watched: &[Expected], len: usize) -> bool {
    watched
        .iter()
        .all(|w| !w.task_augmented && shared.offloader.surely_inline(&w.call.name, len))
        && !shared.offloader.events().wants_pass_events()
}

/// The length of a body known before reading it: its exact size hint (set
/// from `Content-Length` for a body received by hyper, and by full bodies).
fn known_length<B: Body>(body: &B) -> Option<usize> {
    body.size_hint()
        .exact()
        .and_then(|n| usize::try_from(n).ok())
}

/// Reports a result of `tool` that passes untouched because the buffer
/// budget ran out.
pub(crate) fn over_buffer_cap(shared: &Shared, tool: String) {
    shared.offloader.events().emit(OffloadEvent::PassedThrough {
        tool: Some(tool),
        reason: PassReason::BufferCap {
            limit: shared.buffers.limit(),
        },
    });
}

/// What [`respond`] leaves to do.
pub(crate) enum Next<B: Body> {
    /// The response to send.
    Ready(Response<OffloadBody<B>>),
    /// The body must be read first.
    Read(Pin<Box<dyn Future<Output = Response<OffloadBody<B>>> + Send>>),
}

/// Decides what to do with a response, given the request body the inner
/// service read (published in `capture` if it ended within the cap).
pub(crate) fn respond<B>(shared: &Arc<Shared>, capture: &Capture, response: Response<B>) -> Next<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Send + 'static,
{
    let classified = capture.get().map(classify).unwrap_or_default();
    let (mut parts, body) = response.into_parts();
    if classified.proxy {
        let events = shared.offloader.events();
        if events.wants_pass_events() {
            for w in resolve(shared, classified.watched) {
                events.emit(OffloadEvent::PassedThrough {
                    tool: Some(w.call.name),
                    reason: PassReason::Proxy,
                });
            }
        }
        if classified.initialize
            && let Some(id) = parts
                .headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            shared.sessions.remember(id);
        }
        return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
    }
    if classified.watched.is_empty() || !parts.status.is_success() {
        return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
    }
    let watched = resolve(shared, classified.watched);
    match content_type(&parts.headers) {
        Some("text/event-stream") => {
            parts.headers.remove(CONTENT_LENGTH);
            let calls = watched
                .into_iter()
                .map(|w| (w.id, w.call, w.task_augmented))
                .collect();
            let state = SseState::new(calls, shared.clone());
            Next::Ready(Response::from_parts(parts, OffloadBody::sse(body, state)))
        }
        Some("application/json") => {
            if known_length(&body).is_some_and(|len| surely_untouched(shared, &watched, len)) {
                // Small enough to be sure: streamed on, never buffered.
                return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
            }
            Next::Read(Box::pin(read_json(shared.clone(), parts, body, watched)))
        }
        _ => Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body))),
    }
}

/// Collects a JSON response and rewrites the watched results in it.
async fn read_json<B>(
    shared: Arc<Shared>,
    mut parts: http::response::Parts,
    body: B,
    watched: Vec<Expected>,
) -> Response<OffloadBody<B>>
where
    B: Body<Data = Bytes>,
{
    let mut lease = shared.buffers.lease();
    let (data, trailers, error) = match collect(body, &mut lease).await {
        Collected::Done {
            data,
            trailers,
            error,
        } => (data, trailers, error),
        Collected::OverCap { frames, rest } => {
            for w in watched {
                over_buffer_cap(&shared, w.call.name);
            }
            return Response::from_parts(parts, OffloadBody::resume(frames, rest, lease));
        }
    };
    if error.is_some() || surely_untouched(&shared, &watched, data.len()) {
        return Response::from_parts(parts, OffloadBody::full(data, trailers, error, lease));
    }
    let data = rewrite_json(&shared, data, &watched).await;
    lease.resize(data.len());
    if parts.headers.contains_key(CONTENT_LENGTH) {
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(data.len()));
    }
    Response::from_parts(parts, OffloadBody::full(data, trailers, None, lease))
}

/// A response body read by [`collect`].
enum Collected<B: Body> {
    /// The whole body: its data, trailers, and the error that ended it early.
    Done {
        data: Bytes,
        trailers: Option<HeaderMap>,
        error: Option<B::Error>,
    },
    /// The buffer budget ran out: the frames read so far and the rest.
    OverCap {
        frames: VecDeque<Frame<Bytes>>,
        rest: Pin<Box<B>>,
    },
}

/// Collects a body, holding its bytes in `lease`.
async fn collect<B>(body: B, lease: &mut Lease) -> Collected<B>
where
    B: Body<Data = Bytes>,
{
    let mut body = Box::pin(body);
    // One chunk is kept as is; more are copied, as they come, into one
    // buffer sized from the body's hint (Content-Length), so a large body is
    // copied once and its chunks are freed on the way (capped in case the
    // hint is wrong, and by the buffer budget).
    let hint = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    let mut trailers = None;
    let mut error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(d) => {
                    if !lease.grow(d.len()) {
                        let mut frames = VecDeque::with_capacity(2);
                        if let Some(f) = first.take() {
                            frames.push_back(Frame::data(f));
                        } else if !buf.is_empty() {
                            frames.push_back(Frame::data(std::mem::take(&mut buf).freeze()));
                        }
                        frames.push_back(Frame::data(d));
                        return Collected::OverCap { frames, rest: body };
                    }
                    match first.take() {
                        None if buf.is_empty() => first = Some(d),
                        Some(f) => {
                            let want = hint.min(lease.limit()).min(1 << 30);
                            buf.reserve(want.max(f.len() + d.len()));
                            buf.extend_from_slice(&f);
                            buf.extend_from_slice(&d);
                        }
                        None => buf.extend_from_slice(&d),
                    }
                }
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Collected::Done {
        data: first.unwrap_or_else(|| buf.freeze()),
        trailers,
        error,
    }
}

/// Rewrites the watched results in a JSON body (one message or a batch).
async fn rewrite_json(shared: &Shared, data: Bytes, watched: &[Expected]) -> Bytes {
    let Ok(text) = std::str::from_utf8(&data) else {
        return data;
    };
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (id, range) in find_results(text) {
        let Some(w) = watched.iter().find(|w| w.id == id) else {
            continue;
        };
        // Only a task-augmented call may be answered with a CreateTaskResult
        // (a server that does not run it as a task answers it directly).
        if w.task_augmented
            && let Some(task) = created_task_id(&text[range.clone()])
        {
            shared.tasks.insert(task, &w.call);
            continue;
        }
        let outcome = shared
            .offloader
            .process_async(&w.call.to_call(), data.slice(range.clone()))
            .await;
        if let Some(new) = replacement(outcome) {
            edits.push((range, new));
        }
    }
    if edits.is_empty() {
        return data;
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = BytesMut::with_capacity(data.len());
    let mut at = 0;
    for (range, new) in edits {
        out.extend_from_slice(&data[at..range.start]);
        out.extend_from_slice(new.as_bytes());
        at = range.end;
    }
    out.extend_from_slice(&data[at..]);
    out.freeze()
}
