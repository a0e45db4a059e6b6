//! A chat route's read-back tool (`tower_lro::history::read_back`): under
//! the history offload layer, in front of [`Forward`]. A chat request whose
//! rewritten history names offloaded files gets the `lro_history_read`
//! tool; when the model calls it, the answer is read here, the calls are
//! answered from the named files and the conversation goes upstream again
//! (at most [`MAX_ROUNDS`] times, the tool taken out for the last), so the
//! client gets the model's answer after it has read. Every other request
//! (and one over the history layer's 32 MiB, which it did not hold), and
//! every answer without such a call, passes as it came. An answer to a
//! request given the tool is held whole to look for calls, but for a
//! streamed Chat Completions or Anthropic answer, which is relayed as it
//! comes and spliced with the next one ([`relay`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use tower_lro::history::read_back::{self, ReadCall};
use tower_lro::history::{ChatFormat, DEFAULT_MAX_CHAT_BODY_BYTES, HistoryOffloader};
use tower_service::Service;

use super::forward::Forward;
use super::relay::{self, Events, Splice};
use super::{BoxError, GatewayBody, full, text_response};

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

impl ReadBack {
    async fn run<B>(mut self, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let format = ChatFormat::of_path(request.uri().path());
        // Read whole only within the history layer's own bound: a body it
        // held is of known length; one over the bound, or streaming past
        // it, it let pass as it came.
        let length = request.body().size_hint().upper();
        let small = length.is_some_and(|n| n <= DEFAULT_MAX_CHAT_BODY_BYTES as u64);
        let (Some(format), true) = (format, self.on && small && request.method() == Method::POST)
        else {
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
            let streamed = is_event_stream(&head.headers);
            if streamed && format != ChatFormat::OpenAiResponses {
                // Relayed as it comes (see `relay`).
                let (tx, to_client) = relay::channel();
                let conversation = Conversation {
                    parts,
                    chat,
                    format,
                    named,
                    round,
                };
                tokio::spawn(self.relay(conversation, body, tx));
                return Response::from_parts(head, to_client);
            }
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

    /// Relays the streamed answer `body`, and the answers after each call
    /// of the tool in it, to the client through `tx` (see `relay`).
    async fn relay(mut self, mut c: Conversation, mut body: GatewayBody, tx: relay::Sender) {
        let mut splice = Splice::default();
        loop {
            let mut events = Events::new(body);
            let mut all = BytesMut::new();
            let mut held: Vec<Bytes> = Vec::new();
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                all.extend_from_slice(&event);
                let ours = c.round < MAX_ROUNDS && splice.starts_our_call(c.format, &event);
                if !held.is_empty() || ours {
                    held.push(event);
                } else if !send(&tx, splice.rewrite(c.format, event)).await {
                    return;
                }
            }
            let Some((answer, calls)) =
                relay::answer_of(c.format, &all).filter(|_| !held.is_empty())
            else {
                for event in held {
                    if !send(&tx, splice.rewrite(c.format, event)).await {
                        return;
                    }
                }
                return;
            };
            let answers = self.answer(calls, c.named.clone()).await;
            self.reads.inc_by(answers.len() as u64);
            tracing::info!(target: "gateway", path = %c.parts.uri.path(), reads = answers.len(), round = c.round, "the model read back offloaded history");
            read_back::continue_after(c.format, &mut c.chat, &answer, &answers);
            c.round += 1;
            if c.round == MAX_ROUNDS {
                read_back::remove_tool(c.format, &mut c.chat);
            }
            splice.next_answer(c.format, &answer);
            let next = Bytes::from(serde_json::to_vec(&c.chat).unwrap_or_default());
            let response = self.send(with_body(&c.parts, next)).await;
            if !response.status().is_success() || !is_event_stream(response.headers()) {
                tracing::warn!(target: "gateway", status = %response.status(), "the upstream's answer after a read back failed");
                let _ = tx
                    .send(Err("the upstream's answer after a read back failed".into()))
                    .await;
                return;
            }
            body = response.into_body();
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

/// One client request given the tool, as it goes upstream round after
/// round.
struct Conversation {
    parts: http::request::Parts,
    chat: Value,
    format: ChatFormat,
    named: Vec<String>,
    round: usize,
}

/// Whether `headers` say the body is a stream of server-sent events.
fn is_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"))
}

/// Sends `event` (when there is one) to the client; `false` when it has
/// gone.
async fn send(tx: &relay::Sender, event: Option<Bytes>) -> bool {
    match event {
        Some(event) => tx.send(Ok(event)).await.is_ok(),
        None => true,
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
