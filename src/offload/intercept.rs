//! Requests the layer answers itself: `tools/call` of `lro_extract` and
//! `lro_list`, `resources/read` of an `lro://files/` URI.
//!
//! # Design: read first, then answer or replay
//!
//! To answer a request without the inner service, its body must be known
//! before the inner service is called. So, when the layer serves offloaded
//! data (`extraction` on, the default), a `POST` with a JSON body is read
//! first, up to the classification cap (`max_request_bytes`):
//!
//! * a body that ends within the cap is classified at once (a byte search
//!   for the few method names that matter; only bodies naming one are
//!   parsed). The layer's own requests are answered here; any other
//!   request goes to the inner service with the same chunks played back
//!   (no copy), and its classification is kept for the response;
//! * a body over the cap, or one that fails, is never the layer's: the
//!   chunks read are played back, then the rest streams on as it comes
//!   (or the error is delivered where it happened).
//!
//! The cost for requests that are not the layer's is reading a small body
//! before calling the inner service (it is read anyway), one boxed future,
//! and one clone of the inner service: the service made ready by
//! `poll_ready` is the one called, and a clone takes its place (tower's
//! readiness swap), so the inner service must be `Clone` (rmcp's
//! `StreamableHttpService`, an axum `Router`, `tower::util::BoxCloneService`
//! are). `GET` and `DELETE` requests, non-JSON bodies, proxy clients and a
//! layer with extraction off keep the streaming path without any of this.
//!
//! Answers go in the form the client accepts: JSON, or an event stream
//! when its `Accept` admits only that, or admits both and the server's own
//! answers are event streams (mirroring the server). Problems with a call
//! are tool errors (`isError: true`), never HTTP or JSON-RPC errors; a
//! `resources/read` the layer cannot serve gets the JSON-RPC error MCP
//! defines for an unknown resource (`-32002`), the same for every reason.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower_service::Service;

use super::body::OffloadBody;
use super::caller::Caller;
use super::future::{ResponseFuture, Step};
use super::request_body::{Capture, RequestBody};
use super::state::{Extra, Shared, Watch, WatchKind};
use crate::answer::{self as engine_serve, EXTRACT_TOOL};
use crate::store::file_name_of_uri;
use crate::wire::jsonrpc::{Served, classify_served};

/// MCP's JSON-RPC error code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// Whether a request's body is JSON (`Content-Type: application/json`,
/// parameters and letter case aside).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// A request body read up to the cap.
pub(crate) enum Read<B: Body> {
    /// The whole body: its bytes, and the frames to play back.
    Whole {
        data: Bytes,
        frames: VecDeque<Frame<Bytes>>,
    },
    /// Over the cap, or failed: the frames read, then the rest or the error.
    Partial {
        frames: VecDeque<Frame<Bytes>>,
        rest: Option<Pin<Box<B>>>,
        error: Option<B::Error>,
    },
}

/// Reads `body` up to `cap` bytes.
pub(crate) async fn read_request<B>(body: B, cap: usize) -> Read<B>
where
    B: Body<Data = Bytes>,
{
    let mut body = Box::pin(body);
    let mut frames = VecDeque::new();
    let mut size = 0usize;
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                size = size.saturating_add(frame.data_ref().map_or(0, Bytes::len));
                frames.push_back(frame);
                if size > cap {
                    let rest = Some(body);
                    return Read::Partial {
                        frames,
                        rest,
                        error: None,
                    };
                }
            }
            Some(Err(e)) => {
                return Read::Partial {
                    frames,
                    rest: None,
                    error: Some(e),
                };
            }
        }
    }
    let data = join(&frames, size);
    Read::Whole { data, frames }
}

/// The data of `frames` in one buffer (no copy for a single chunk).
fn join(frames: &VecDeque<Frame<Bytes>>, size: usize) -> Bytes {
    let mut chunks = frames.iter().filter_map(Frame::data_ref);
    match (chunks.next(), chunks.next()) {
        (None, _) => Bytes::new(),
        (Some(one), None) => one.clone(),
        _ => {
            let mut buf = BytesMut::with_capacity(size);
            for c in frames.iter().filter_map(Frame::data_ref) {
                buf.extend_from_slice(c);
            }
            buf.freeze()
        }
    }
}

/// Reads a JSON `POST` first: answers it when it is the layer's, else
/// calls `inner` (the readied service) with the body played back.
pub(crate) async fn intercept<S, ReqBody, ResBody>(
    mut inner: S,
    shared: Arc<Shared>,
    req: Request<ReqBody>,
    caller: Caller,
    session: Option<String>,
) -> Step<S::Future, ResBody>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    ReqBody: Body<Data = Bytes>,
    ResBody: Body<Data = Bytes>,
{
    let (parts, body) = req.into_parts();
    let (data, frames) = match read_request(body, shared.max_request_bytes).await {
        Read::Whole { data, frames } => (data, frames),
        Read::Partial {
            frames,
            rest,
            error,
        } => {
            // Never the layer's: its response passes through, as past the tee's cap.
            let req = Request::from_parts(parts, RequestBody::replayed(frames, rest, error));
            return Step::Forward(ResponseFuture::passthrough(inner.call(req)));
        }
    };
    let tools = shared.serving.tools();
    let served = classify_served(&data, &tools, |u| file_name_of_uri(u).is_some());
    let extra = match served {
        Served::Call { .. } | Served::ReadResource { .. } => {
            return Step::Answer(answer(&shared, &caller, served).await);
        }
        Served::ListTools { id, first_page } => {
            let kind = if first_page {
                WatchKind::ListTools
            } else {
                WatchKind::ListMoreTools
            };
            vec![Watch::served(id, kind)]
        }
        Served::Capabilities { id } => vec![Watch::served(id, WatchKind::Capabilities)],
        Served::None => Vec::new(),
    };
    let extra = Extra {
        watches: extra,
        resource_link: caller.resource_link(),
        accepts_stream: caller.accepts_stream,
        owner: caller.owner,
    };
    // Classified for the response only if the inner service reads it all,
    // as on the streaming path.
    let capture = Capture::default();
    let body = RequestBody::replayed_whole(frames, data, capture.clone());
    let req = Request::from_parts(parts, body);
    let inner = inner.call(req);
    Step::Forward(ResponseFuture::watching(
        inner, capture, session, extra, shared,
    ))
}

/// The layer's answer to one of its own requests.
async fn answer<B: Body>(
    shared: &Shared,
    caller: &Caller,
    served: Served,
) -> Response<OffloadBody<B>> {
    let owner = caller.owner.as_deref();
    let message = match served {
        Served::Call {
            id,
            tool,
            arguments,
            protocol,
        } => {
            let answer = if tool == EXTRACT_TOOL {
                let extractor = &shared.serving.extractor;
                engine_serve::extract(&shared.offloader, extractor, arguments.as_ref(), owner).await
            } else {
                engine_serve::list(&shared.offloader, owner).await
            };
            let result = answer.to_result_json(caller.result_type(protocol.as_deref()));
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
        }
        Served::ReadResource { id, uri, protocol } => {
            let complete = caller.result_type(protocol.as_deref());
            read_resource(shared, owner, id, &uri, complete).await
        }
        Served::ListTools { .. } | Served::Capabilities { .. } | Served::None => {
            // Not answered by the layer (never reached: see `intercept`).
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
                .to_owned()
        }
    };
    http_answer(message, caller.answer_as_stream)
}

/// The JSON-RPC response to `resources/read` of `uri`.
async fn read_resource(
    shared: &Shared,
    owner: Option<&str>,
    id: Value,
    uri: &str,
    complete: bool,
) -> String {
    let name = file_name_of_uri(uri).unwrap_or_default();
    let max = shared.serving.extractor.limits().max_input_bytes;
    let message = match engine_serve::read_resource(&shared.offloader, name, owner, max).await {
        Ok(text) => {
            let mut result = json!({
                "contents": [{"uri": uri, "mimeType": "application/jsonl", "text": text}]
            });
            if complete {
                result["resultType"] = Value::from("complete");
                result["ttlMs"] = Value::from(0);
                result["cacheScope"] = Value::from("private");
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        }
        Err(e) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": RESOURCE_NOT_FOUND, "message": e.to_string(), "data": {"uri": uri}}
        }),
    };
    message.to_string()
}

/// An HTTP response carrying one JSON-RPC message, as JSON or as one
/// server-sent event.
fn http_answer<B: Body>(message: String, as_stream: bool) -> Response<OffloadBody<B>> {
    let (media, body) = if as_stream {
        let event = format!("event: message\ndata: {message}\n\n");
        ("text/event-stream", Bytes::from(event))
    } else {
        ("application/json", Bytes::from(message))
    };
    let mut response = Response::new(OffloadBody::own(body));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media));
    response
}
