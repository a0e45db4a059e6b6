//! What to do with a response, once the request it answers is classified:
//! pass it through, read it as JSON, or rewrite it as an event stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use http::{HeaderMap, Response};
use http_body::Body;

use super::body::OffloadBody;
use super::json_response::read_json;
use super::request_body::Capture;
use super::sse_rewrite::SseRewriter;
use super::state::{Extra, SESSION_HEADER, Shared, Watch};
use crate::engine::events::{OffloadEvent, PassReason};
use crate::wire::jsonrpc::{Classified, classify};

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

/// RFC 9112, section 6.3: a message with both `Transfer-Encoding` and
/// `Content-Length` is framed by the former; an intermediary removes the
/// latter, so no client reads a stale length.
pub(crate) fn drop_conflicting_length(headers: &mut HeaderMap) {
    if headers.contains_key(TRANSFER_ENCODING) {
        headers.remove(CONTENT_LENGTH);
    }
}

/// The body's `Content-Encoding` when it is not `identity`.
pub(crate) fn encoding(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_ENCODING)?;
    let value = String::from_utf8_lossy(value.as_bytes());
    let identity = value.trim().is_empty() || value.trim().eq_ignore_ascii_case("identity");
    (!identity).then(|| value.into_owned())
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

/// Notes whether the server answers POSTs with event streams (the layer's
/// own answers mirror it).
fn note_media(shared: &Shared, parts: &http::response::Parts) {
    if shared.serves() && parts.status.is_success() {
        let media = media(&parts.headers);
        if media != Media::Other {
            let streams = media == Media::EventStream;
            shared.serving.note_server_streams(streams);
        }
    }
}

/// Decides what to do with a response, given the request body the inner
/// service read (published in `capture` if it ended within the cap) and
/// what the layer adds when it serves offloaded data (`extra`).
pub(crate) fn respond<B>(
    shared: &Arc<Shared>,
    capture: &Capture,
    session: Option<String>,
    extra: Extra,
    response: Response<B>,
) -> Next<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Send + 'static,
{
    let classified = capture.get().map(classify).unwrap_or_default();
    let (mut parts, body) = response.into_parts();
    drop_conflicting_length(&mut parts.headers);
    remember_client(shared, &classified, &parts.headers);
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
    note_media(shared, &parts);
    let mut watched = shared.resolve(classified.watched);
    let accepts_stream = extra.accepts_stream;
    extra.apply(&mut watched);
    if !watched.is_empty() {
        let client = classified
            .client
            .or_else(|| shared.clients.get(session.as_deref()?));
        let lazy = shared.lazy_session(client.as_deref(), session.as_deref(), accepts_stream);
        for w in &mut watched {
            w.client.clone_from(&client);
            w.lazy_session.clone_from(&lazy);
        }
    }
    if watched.is_empty() || !parts.status.is_success() {
        return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
    }
    if let Some(encoding) = encoding(&parts.headers) {
        // Asked for identity (see the service), compressed all the same:
        // not JSON until decoded, so passed on, and said so.
        for w in watched {
            shared.offloader.events().emit(OffloadEvent::PassedThrough {
                tool: Some(w.call.name),
                reason: PassReason::Encoded(encoding.clone()),
            });
        }
        return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
    }
    match media(&parts.headers) {
        Media::EventStream => {
            parts.headers.remove(CONTENT_LENGTH);
            let rewriter = SseRewriter::new(watched, session, shared.clone());
            Next::Ready(Response::from_parts(
                parts,
                OffloadBody::sse(body, rewriter),
            ))
        }
        Media::Json => {
            if known_length(&body).is_some_and(|len| shared.passes_unread(&watched, len)) {
                // Small enough to be sure: streamed on, never buffered.
                return Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body)));
            }
            Next::Read(Box::pin(read_json(shared.clone(), parts, body, watched)))
        }
        Media::Other => Next::Ready(Response::from_parts(parts, OffloadBody::passthrough(body))),
    }
}

/// Remembers the client's name (`clientInfo.name`) for the session an
/// `initialize` was answered with, for the session's later requests.
fn remember_client(shared: &Shared, classified: &Classified, headers: &http::HeaderMap) {
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    if let (true, Some(name), Some(id)) = (classified.initialize, &classified.client, session) {
        shared.clients.insert(id, name.clone());
    }
}

/// A `GET` stream resumed with `Last-Event-ID` may replay the results of
/// `watched`, calls of `session` whose own stream went before they came.
pub(crate) fn respond_resumed<B>(
    shared: &Arc<Shared>,
    watched: Vec<Watch>,
    session: String,
    response: Response<B>,
) -> Response<OffloadBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Send + 'static,
{
    let (mut parts, body) = response.into_parts();
    drop_conflicting_length(&mut parts.headers);
    let readable = parts.status.is_success()
        && media(&parts.headers) == Media::EventStream
        && encoding(&parts.headers).is_none();
    if !readable {
        // Not a replay: the calls may still be answered on another one.
        shared.remember_unanswered(&session, watched);
        return Response::from_parts(parts, OffloadBody::passthrough(body));
    }
    parts.headers.remove(CONTENT_LENGTH);
    let rewriter = SseRewriter::new(watched, Some(session), shared.clone());
    Response::from_parts(parts, OffloadBody::sse(body, rewriter))
}
