//! A chat request read, rewritten by the history engine, and sent on; or,
//! on any trouble, sent on with its original body.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HeaderValue, TRANSFER_ENCODING};
use http::{HeaderMap, Request};
use http_body::{Body, Frame};
use tower_service::Service;

use super::events::{FallbackReason, HistoryEvent};
use super::state::HistoryShared;
use crate::history::{BodyRewrite, ChatFormat, HistoryError};
use crate::offload::RequestBody;
use crate::offload::{Read, read_request};

/// Reads `req`'s body (within the caps), rewrites its messages, and calls
/// `inner` (the readied service) with the result. Whatever goes wrong on
/// the layer's side, `inner` gets the original body, byte for byte.
pub(crate) async fn rewrite_then_call<S, B>(
    mut inner: S,
    shared: Arc<HistoryShared>,
    req: Request<B>,
    format: Option<ChatFormat>,
) -> Result<S::Response, S::Error>
where
    S: Service<Request<RequestBody<B>>>,
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    // Held until the inner service has answered (it reads the body first).
    let mut lease = shared.buffers.lease();
    let cap = shared.max_body_bytes;
    let reserve = declared_length(&parts.headers).map_or(cap, |n| n.min(cap as u64) as usize);
    if !lease.grow(reserve) {
        let limit = lease.limit();
        shared
            .events
            .fell_back(&path, FallbackReason::BufferCap { limit });
        let req = Request::from_parts(parts, RequestBody::original(body));
        return inner.call(req).await;
    }
    let body = match read_request(body, cap).await {
        Read::Whole { data, frames } => {
            // A body without a length held the cap while it was read.
            lease.resize(data.len());
            let rewrite = Rewrite {
                shared: &shared,
                path: &path,
                format,
            };
            rewrite.body(&mut parts.headers, data, frames).await
        }
        Read::Partial {
            frames,
            rest,
            error,
        } => {
            let reason = match &error {
                Some(e) => FallbackReason::BodyError(e.to_string()),
                None => FallbackReason::TooLarge { limit: cap },
            };
            shared.events.fell_back(&path, reason);
            RequestBody::replayed(frames, rest, error)
        }
    };
    let response = inner.call(Request::from_parts(parts, body)).await;
    drop(lease);
    response
}

/// One chat request's rewrite.
struct Rewrite<'a> {
    shared: &'a HistoryShared,
    path: &'a str,
    format: Option<ChatFormat>,
}

impl Rewrite<'_> {
    /// The body the inner service gets for the whole body `data` (read as
    /// `frames`): rewritten, or the original frames played back.
    async fn body<B: Body>(
        &self,
        headers: &mut HeaderMap,
        data: Bytes,
        frames: VecDeque<Frame<Bytes>>,
    ) -> RequestBody<B> {
        let shared = self.shared;
        let rewrite = shared.offloader.rewrite_body(self.format, &data);
        let outcome = match tokio::time::timeout(shared.rewrite_timeout, rewrite).await {
            Ok(Ok(outcome)) => outcome,
            // A JSON body on another path that is no chat request: not ours.
            Ok(Err(HistoryError::NotChatBody(_))) if self.format.is_none() => {
                return RequestBody::replayed(frames, None, None);
            }
            Ok(Err(e)) => return self.fall_back(FallbackReason::Rewrite(e.to_string()), frames),
            Err(_) => {
                let reason = FallbackReason::TimedOut(shared.rewrite_timeout);
                return self.fall_back(reason, frames);
            }
        };
        let path = self.path.to_owned();
        match outcome {
            BodyRewrite::Rewritten { body, report } => {
                let (bytes_before, bytes_after) = (data.len(), body.len());
                set_length(headers, bytes_after);
                let event = HistoryEvent::Rewritten {
                    path,
                    report,
                    bytes_before,
                    bytes_after,
                };
                shared.events.emit(event);
                RequestBody::replayed(with_trailers(body, frames), None, None)
            }
            BodyRewrite::Unchanged(_) => {
                shared.events.emit(HistoryEvent::Unchanged { path });
                RequestBody::replayed(frames, None, None)
            }
        }
    }

    /// The original `frames` played back, with an event saying why.
    fn fall_back<B: Body>(
        &self,
        reason: FallbackReason,
        frames: VecDeque<Frame<Bytes>>,
    ) -> RequestBody<B> {
        self.shared.events.fell_back(self.path, reason);
        RequestBody::replayed(frames, None, None)
    }
}

/// The rewritten `body` in one frame, then the original's trailers, if it
/// had any.
fn with_trailers(body: Vec<u8>, original: VecDeque<Frame<Bytes>>) -> VecDeque<Frame<Bytes>> {
    let trailers = original.into_iter().filter(Frame::is_trailers);
    std::iter::once(Frame::data(Bytes::from(body)))
        .chain(trailers)
        .collect()
}

/// The framing of a body of exactly `len` bytes: its `Content-Length`, no
/// `Transfer-Encoding`.
fn set_length(headers: &mut HeaderMap, len: usize) {
    headers.remove(TRANSFER_ENCODING);
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
}

/// The body's `Content-Length`, when it has a valid one.
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}
