//! A stand-in chat endpoint on 127.0.0.1 for the history examples and
//! tests: it speaks enough of OpenAI Chat Completions
//! (`/v1/chat/completions`), Anthropic Messages (`/v1/messages`) and OpenAI
//! Responses (`/v1/responses`) to be driven by a real HTTP client, records
//! every request as it reached it, and answers with a short completion (an
//! event stream when the request asks for `"stream": true`).
//!
//! No model runs here: the answer says how many messages came and, to a
//! summarizer's request, gives a fixed summary built from the transcript's
//! first words.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// One request as the stand-in endpoint received it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    /// Its path.
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body, as read.
    pub body: Bytes,
}

impl Received {
    /// The body as JSON (panics when it is not: tests only).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the endpoint received JSON")
    }
}

/// What the stand-in endpoint shares with its caller.
#[derive(Clone, Default)]
pub(crate) struct Endpoint {
    received: Arc<Mutex<Vec<Received>>>,
    /// Lets a streamed answer go on after its first event.
    release: Arc<Notify>,
    /// The key the endpoint requires (`Authorization: Bearer`), if any.
    key: Option<String>,
}

impl Endpoint {
    /// An endpoint requiring `key`, when given.
    pub(crate) fn new(key: Option<&str>) -> Self {
        Endpoint {
            key: key.map(str::to_owned),
            ..Endpoint::default()
        }
    }

    /// The requests received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Lets a streamed answer waiting after its first event go on.
    pub(crate) fn release_stream(&self) {
        self.release.notify_one();
    }

    /// The endpoint's routes: the three chat APIs and `GET /v1/models`.
    pub(crate) fn router(&self) -> Router {
        Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/messages", post(chat))
            .route("/v1/responses", post(chat))
            .route("/v1/models", get(models))
            .with_state(self.clone())
    }

    fn record(&self, path: &Uri, headers: &HeaderMap, body: &Bytes) {
        self.received.lock().expect("lock").push(Received {
            path: path.path().to_owned(),
            headers: headers.clone(),
            body: body.clone(),
        });
    }
}

/// Serves `router` on an ephemeral port of 127.0.0.1 until the runtime
/// ends; its address.
pub(crate) async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    let listener = listener.tap_io(|socket| {
        let _ = socket.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({"object": "list", "data": [{"id": "stand-in", "object": "model"}]}))
}

/// Records the request, checks its key, answers a completion.
async fn chat(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    endpoint.record(&parts.uri, &parts.headers, &body);
    if let Some(key) = &endpoint.key {
        let expected = format!("Bearer {key}");
        let given = parts.headers.get(header::AUTHORIZATION);
        if given.and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
            let error = json!({"error": {"message": "invalid api key", "type": "auth"}});
            return (StatusCode::UNAUTHORIZED, axum::Json(error)).into_response();
        }
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        let error = json!({"error": {"message": "the body is not JSON"}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    };
    let text = answer_text(&request);
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        return streamed(&endpoint, text);
    }
    axum::Json(completion(&text)).into_response()
}

/// The answer: a summary for a summarizer's request (a system message
/// asking to summarize), else how many messages came.
fn answer_text(request: &Value) -> String {
    let messages = request
        .get("messages")
        .or_else(|| request.get("input"))
        .and_then(Value::as_array);
    let count = messages.map_or(0, Vec::len);
    let asks_summary = messages
        .and_then(|m| m.first())
        .and_then(|m| m.get("content")?.as_str())
        .is_some_and(|s| s.contains("summarize"));
    if !asks_summary {
        return format!("stand-in answer to {count} messages");
    }
    let transcript = messages
        .and_then(|m| m.get(1))
        .and_then(|m| m.get("content")?.as_str())
        .unwrap_or_default();
    let words: Vec<&str> = transcript.split_whitespace().take(12).collect();
    format!("Summary: {}", words.join(" "))
}

/// A chat completion carrying `text`.
fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "model": "stand-in",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }],
    })
}

/// `text` as a stream of completion chunks: the first at once, the others
/// once [`Endpoint::release_stream`] is called (or after ten seconds).
fn streamed(endpoint: &Endpoint, text: String) -> Response {
    let release = endpoint.release.clone();
    let stream = async_stream(text, release);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("a response")
}

fn chunk_event(content: &str) -> Bytes {
    let chunk = json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": content}}],
    });
    Bytes::from(format!("data: {chunk}\n\n"))
}

fn async_stream(
    text: String,
    release: Arc<Notify>,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx.send(Ok(chunk_event("first"))).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), release.notified()).await;
        let _ = tx.send(Ok(chunk_event(&text))).await;
        let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
    });
    ReceiverStream(rx)
}

/// A tokio receiver as a stream.
pub(crate) struct ReceiverStream<T>(pub tokio::sync::mpsc::Receiver<T>);

impl<T> futures_core::Stream for ReceiverStream<T> {
    type Item = T;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}
