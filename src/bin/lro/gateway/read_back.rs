//! A chat route's read-back tool (`tower_lro::history::read_back`): under
//! the history offload layer, in front of [`Forward`]. A chat request whose
//! rewritten history names offloaded files gets the `lro_history_read`
//! tool; when the model calls it, the answer is read here, the calls are
//! answered from the named files and the conversation goes upstream again
//! (at most [`MAX_ROUNDS`] times, the tool taken out for the last), so the
//! client gets the model's answer after it has read. Every other request,
//! and every answer without such a call, passes as it came (an answer
//! to a request given the tool is held whole first, streamed or not).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tower_lro::history::read_back::{self, ReadCall};
use tower_lro::history::{ChatFormat, HistoryOffloader};
use tower_service::Service;

use super::forward::Forward;
use super::{BoxError, GatewayBody, text_response};

/// Rounds upstream for one client request at most (the last without the
/// tool, so the model answers).
pub(crate) const MAX_ROUNDS: usize = 4;
/// The largest answer held to look for calls of the tool; a larger one
/// goes to the client as it comes.
pub(crate) const MAX_HELD_ANSWER_BYTES: usize = 32 << 20;

/// The read-back service (see the module docs).
#[derive(Clone)]
pub(crate) struct ReadBack {
    pub(crate) forward: Forward,
    pub(crate) offloader: HistoryOffloader,
    /// The `read_tool` setting: off, every request passes as it is.
    pub(crate) on: bool,
    /// `lro_history_reads_total` of the route.
    pub(crate) reads: prometheus_client::metrics::counter::Counter,
}

impl std::fmt::Debug for ReadBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBack")
            .field("on", &self.on)
            .finish_non_exhaustive()
    }
}

impl<B> Service<Request<B>> for ReadBack
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<GatewayBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<GatewayBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.run(request).await) })
    }
}

/// The chat format a path names.
fn format_of_path(path: &str) -> Option<ChatFormat> {
    let path = path.trim_end_matches('/');
    [
        ("/chat/completions", ChatFormat::OpenAiChat),
        ("/messages", ChatFormat::AnthropicMessages),
        ("/responses", ChatFormat::OpenAiResponses),
    ]
    .into_iter()
    .find_map(|(end, format)| path.ends_with(end).then_some(format))
}

impl ReadBack {
    async fn run<B>(mut self, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let format = format_of_path(request.uri().path());
        let (Some(format), true) = (format, self.on && request.method() == Method::POST) else {
            return self.send(request).await;
        };
        let (parts, body) = request.into_parts();
        let bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return text_response(StatusCode::BAD_REQUEST, "the request body broke off\n");
            }
        };
        let named = read_back::named_files(&bytes);
        let mut chat = match serde_json::from_slice::<Value>(&bytes) {
            Ok(v)
                if !named.is_empty()
                    && v.get("previous_response_id").is_none_or(Value::is_null) =>
            {
                v
            }
            _ => return self.send(Request::from_parts(parts, full(bytes))).await,
        };
        if !read_back::add_tool(format, &mut chat) {
            return self.send(Request::from_parts(parts, full(bytes))).await;
        }
        let mut round = 1;
        loop {
            if round == MAX_ROUNDS {
                read_back::remove_tool(format, &mut chat);
            }
            let body = Bytes::from(serde_json::to_vec(&chat).unwrap_or_default());
            let response = self.send(with_body(&parts, body)).await;
            if round == MAX_ROUNDS || !response.status().is_success() {
                return response;
            }
            let (head, body) = response.into_parts();
            let held = match hold(body).await {
                Ok(held) => held,
                Err(Held::TooLarge(body)) => {
                    return Response::from_parts(head, body.boxed_unsync());
                }
                Err(Held::BrokeOff) => {
                    let text = "bad gateway: the upstream's answer broke off\n";
                    return text_response(StatusCode::BAD_GATEWAY, text);
                }
            };
            let streamed = head
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            let answer = if streamed {
                read_back::response_of_events(format, &held)
            } else {
                serde_json::from_slice(&held).ok()
            };
            let calls = answer
                .as_ref()
                .map(|a| read_back::calls(format, a))
                .unwrap_or_default();
            let Some(answer) = answer.filter(|_| !calls.is_empty()) else {
                return Response::from_parts(head, full(held));
            };
            let answers = self.answer(calls, named.clone()).await;
            self.reads.inc_by(answers.len() as u64);
            tracing::info!(target: "gateway", path = %parts.uri.path(), reads = answers.len(), round, "the model read back offloaded history");
            read_back::continue_after(format, &mut chat, &answer, &answers);
            round += 1;
        }
    }

    /// `request` upstream.
    async fn send<B>(&mut self, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        match self.forward.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// Each call answered from the files `named`, off the async threads.
    async fn answer(&self, calls: Vec<ReadCall>, named: Vec<String>) -> Vec<(String, String)> {
        let offloader = self.offloader.clone();
        let read = move || {
            calls
                .into_iter()
                .map(|c| {
                    let text = offloader.read_back(&c.arguments, &named);
                    (c.id, text)
                })
                .collect::<Vec<_>>()
        };
        tokio::task::spawn_blocking(read).await.unwrap_or_default()
    }
}

/// A request with the head of `parts` and `body` (its length set).
fn with_body(parts: &http::request::Parts, body: Bytes) -> Request<GatewayBody> {
    let mut request = Request::new(full(Bytes::new()));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    let headers = request.headers_mut();
    headers.remove(header::TRANSFER_ENCODING);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    *request.body_mut() = full(body);
    request
}

/// The whole of `body`, or, past [`MAX_HELD_ANSWER_BYTES`], a body of
/// what was read and the rest as it comes; `502` when it broke off.
async fn hold(mut body: GatewayBody) -> Result<Bytes, Held> {
    let mut held = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(Held::BrokeOff);
        };
        if let Ok(data) = frame.into_data() {
            held.extend_from_slice(&data);
        }
        if held.len() > MAX_HELD_ANSWER_BYTES {
            let first = Some(held.freeze());
            return Err(Held::TooLarge(Chained { first, rest: body }));
        }
    }
    Ok(held.freeze())
}

/// An answer not held whole.
enum Held {
    /// Its body broke off (the upstream died or went silent).
    BrokeOff,
    /// Larger than what is held: what was read, then the rest.
    TooLarge(Chained),
}

/// `first`, then `rest`.
struct Chained {
    first: Option<Bytes>,
    rest: GatewayBody,
}

impl Body for Chained {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(first))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }
}

fn full(bytes: Bytes) -> GatewayBody {
    Full::new(bytes).map_err(|e| match e {}).boxed_unsync()
}
