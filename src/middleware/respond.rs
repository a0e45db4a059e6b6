//! What to do with a response, once the request it answers is classified:
//! pass it through, read it as JSON, or rewrite it as an event stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Response};
use http_body::Body;

use super::body::OffloadBody;
use super::json_response::read_json;
use super::request_body::Capture;
use super::sse_rewrite::SseRewriter;
use super::state::{SESSION_HEADER, Shared};
use crate::engine::events::{OffloadEvent, PassReason};
use crate::wire::jsonrpc::classify;

/// The kinds of body the layer reads.
#[derive(PartialEq)]
enum Media {
    Json,
    EventStream,
    Other,
}

/// The kind of a body from its media type (parameters ignored; media types
/// compare without case).
fn media(headers: &HeaderMap) -> Media {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return Media::Other;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Media::Json
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        Media::EventStream
    } else {
        Media::Other
    }
}

/// The length of a body known before reading it: its exact size hint (set
/// from `Content-Length` for a body received by hyper, and by full bodies).
fn known_length<B: Body>(body: &B) -> Option<usize> {
    body.size_hint()
        .exact()
        .and_then(|n| usize::try_from(n).ok())
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
            for w in shared.resolve(classified.watched) {
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
    let watched = shared.resolve(classified.watched);
    match media(&parts.headers) {
        Media::EventStream => {
            parts.headers.remove(CONTENT_LENGTH);
            let rewriter = SseRewriter::new(watched, shared.clone());
            Next::Ready(Response::from_parts(
                parts,
                OffloadBody::sse(body, rewriter),
            ))
        }
        Media::Json => {
            if known_length(&body).is_some_and(|len| shared.surely_untouched(&watched, len)) {
                // Small enough to be sure: streamed on, never buffered.
                return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
            }
            Next::Read(Box::pin(read_json(shared.clone(), parts, body, watched)))
        }
        Media::Other => Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body))),
    }
}
