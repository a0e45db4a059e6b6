//! `lro proxy`'s memory against a hostile server on loopback: a flood of
//! notifications at an agent that does not read stdout for a while (the
//! proxy's peak RSS stays under a fixed bound; nothing is lost once the
//! agent reads), and events larger than the proxy's cap on a pending event.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body::Frame;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::common;

/// What the hostile server sends.
#[derive(Clone, Copy)]
enum Hostile {
    /// `count` notifications of `size` bytes on the GET stream and as many
    /// in the answer to a `tools/call`, each stream ending with a marker.
    Flood { count: usize, size: usize },
    /// One event of `size` bytes on the GET stream then a small one; one
    /// of `answer_size` bytes as the answer to a `resources/read`.
    Huge { size: usize, answer_size: usize },
}

struct Server {
    hostile: Hostile,
    /// Bytes the server has had taken by the connection (all streams).
    sent: AtomicUsize,
    /// Every stream of the flood is out.
    streams_done: AtomicUsize,
    stop: AtomicBool,
}

/// A body fed by a channel of one chunk: the producer waits until the
/// connection takes each chunk, so what is "sent" was taken by the proxy's
/// socket (or the kernel's buffers), not held here.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c))))
    }
}

/// The time bound of one flood stream.
const FLOOD_TIME: Duration = Duration::from_secs(90);

/// An event stream of `events` (each a full SSE event), sent in the
/// background as fast as the connection takes it, bounded by count and by
/// [`FLOOD_TIME`].
fn event_stream(
    server: Arc<Server>,
    events: impl Iterator<Item = Bytes> + Send + 'static,
) -> Response {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + FLOOD_TIME;
        for event in events {
            if server.stop.load(Ordering::Relaxed) {
                break;
            }
            let n = event.len();
            match tokio::time::timeout_at(deadline, tx.send(event)).await {
                Ok(Ok(())) => server.sent.fetch_add(n, Ordering::Relaxed),
                _ => break,
            };
        }
        server.streams_done.fetch_add(1, Ordering::Relaxed);
    });
    (
        [(http::header::CONTENT_TYPE, "text/event-stream")],
        Body::new(ChannelBody(rx)),
    )
        .into_response()
}

fn sse(message: &Value) -> Bytes {
    Bytes::from(format!("data: {message}\n\n"))
}

/// A notification of about `size` bytes, numbered.
fn noise(stream: &str, n: usize, size: usize) -> Bytes {
    sse(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": {"stream": stream, "n": n, "pad": "x".repeat(size)}},
    }))
}

fn marker(stream: &str) -> Bytes {
    sse(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": {"stream": stream, "end": true}},
    }))
}

async fn mcp(State(server): State<Arc<Server>>, request: Request) -> Response {
    match *request.method() {
        Method::GET => {}
        Method::POST => return post(server, request).await,
        _ => return StatusCode::OK.into_response(),
    }
    let events: Box<dyn Iterator<Item = Bytes> + Send> = match server.hostile {
        Hostile::Flood { count, size } => Box::new(
            (0..count)
                .map(move |n| noise("get", n, size))
                .chain([marker("get")]),
        ),
        Hostile::Huge { size, .. } => Box::new(
            [
                // One event over the cap, in many chunks.
                Bytes::from_static(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":\""),
            ]
            .into_iter()
            .chain((0..size / (64 << 10)).map(|_| Bytes::from(vec![b'x'; 64 << 10])))
            .chain([Bytes::from_static(b"\"}\n\n"), marker("get")]),
        ),
    };
    event_stream(server, events)
}

async fn post(server: Arc<Server>, request: Request) -> Response {
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let message: Value = serde_json::from_slice(&body).unwrap();
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let answer = |result: Value| serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
    match (method.as_str(), server.hostile) {
        ("initialize", _) => (
            [("mcp-session-id", "hostile")],
            axum::Json(answer(serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }))),
        )
            .into_response(),
        ("tools/call", Hostile::Flood { count, size }) => {
            let done = sse(&answer(serde_json::json!({
                "content": [{"type": "text", "text": "done"}],
            })));
            event_stream(
                server,
                (0..count)
                    .map(move |n| noise("post", n, size))
                    .chain([marker("post"), done]),
            )
        }
        ("resources/read", Hostile::Huge { answer_size, .. }) => {
            let head = format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"contents\":[{{\"uri\":\"a:b\",\"text\":\""
            );
            event_stream(
                server,
                [Bytes::from(head)]
                    .into_iter()
                    .chain((0..answer_size / (64 << 10)).map(|_| Bytes::from(vec![b'y'; 64 << 10])))
                    .chain([Bytes::from_static(b"\"}]}}\n\n")]),
            )
        }
        _ => axum::Json(answer(serde_json::json!({}))).into_response(),
    }
}

/// `lro proxy` to a new server that does `hostile`, initialized.
async fn start(hostile: Hostile) -> (Agent, Arc<Server>) {
    let server = Arc::new(Server {
        hostile,
        sent: AtomicUsize::new(0),
        streams_done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let app = Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .with_state(server.clone());
    let addr = common::mcp::serve(app).await;
    let agent = Agent::start(&format!("http://{addr}/mcp"), &[], "2025-11-25").await;
    (agent, server)
}

/// The bound on the proxy's peak RSS while the server floods.
const RSS_BOUND: usize = 64 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_at_an_agent_that_reads_slowly_is_slowed_down_not_buffered() {
    // 2 × 2400 notifications of 64 KiB: about 315 MB from the server.
    let (count, size) = (2400, 64 << 10);
    let (mut agent, server) = start(Hostile::Flood { count, size }).await;
    agent
        .say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    agent
        .say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{}}}"#)
        .await;
    // The agent reads nothing until both floods are out or the server has
    // been held back for a while (each poll bounded; at most 60 s).
    let mut last = 0;
    let mut still = 0;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sent = server.sent.load(Ordering::Relaxed);
        if server.streams_done.load(Ordering::Relaxed) == 2 {
            break;
        }
        still = if sent == last { still + 1 } else { 0 };
        last = sent;
        if still >= 20 {
            break;
        }
    }
    let held_back_at = server.sent.load(Ordering::Relaxed);
    let peak_while_not_read = agent.peak_rss();
    // Now the agent reads it all: nothing was lost.
    let (mut get, mut post, mut ends, mut answered) = (0, 0, 0, false);
    while ends < 2 || !answered {
        let v = agent.next().await.expect("stdout open until the ends");
        if v["id"] == 2 {
            assert_eq!(v["result"]["content"][0]["text"], "done", "{v}");
            answered = true;
            continue;
        }
        let data = &v["params"]["data"];
        if data["end"] == true {
            ends += 1;
        } else if data["stream"] == "get" {
            assert_eq!(data["n"], get, "in order");
            get += 1;
        } else {
            assert_eq!(data["stream"], "post", "{v}");
            assert_eq!(data["n"], post, "in order");
            post += 1;
        }
    }
    let total = server.sent.load(Ordering::Relaxed);
    let peak = agent.peak_rss();
    eprintln!(
        "server held back at {} MB while the agent did not read (proxy peak RSS then {} MiB); {} MB sent in all, proxy peak RSS {} MiB",
        held_back_at / 1_000_000,
        peak_while_not_read >> 20,
        total / 1_000_000,
        peak >> 20
    );
    server.stop.store(true, Ordering::Relaxed);
    let log = agent.finish().await;
    assert_eq!((get, post), (count, count), "every notification relayed");
    assert!(total > 300_000_000, "the server sent {total} bytes");
    assert!(
        peak < RSS_BOUND,
        "the proxy's peak RSS {} MiB is over {} MiB (server held back at {held_back_at} bytes): {log}",
        peak >> 20,
        RSS_BOUND >> 20
    );
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_over_the_cap_is_dropped_on_the_stream_and_an_error_in_an_answer() {
    let (mut agent, server) = start(Hostile::Huge {
        size: 24 << 20,
        answer_size: 72 << 20,
    })
    .await;
    agent
        .say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    // The GET stream: the event over 16 MiB is dropped, the next comes.
    let v = agent.next().await.expect("the stream goes on");
    assert_eq!(v["params"]["data"]["end"], true, "only the marker: {v}");
    // An answer: an event over 64 MiB is an error for the request.
    agent
        .say(r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"a:b"}}"#)
        .await;
    let v = agent.next().await.expect("an answer");
    assert_eq!(v["id"], 3, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("over 64 MiB"), "{v}");
    let peak = agent.peak_rss();
    server.stop.store(true, Ordering::Relaxed);
    let log = agent.finish().await;
    assert!(
        log.contains("event over 16 MiB; it is dropped"),
        "a clear warning: {log}"
    );
    eprintln!(
        "proxy peak RSS with a 24 MiB and a 72 MiB event: {} MiB",
        peak >> 20
    );
    assert!(!log.contains("panicked"), "{log}");
    // Bounded by the caps (an event up to 64 MiB and a read's chunk, its
    // buffer grown by doubling), not by what the server sends.
    assert!(peak < 192 << 20, "peak RSS {} MiB", peak >> 20);
}
