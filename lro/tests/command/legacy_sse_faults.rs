//! `lro proxy` over the old HTTP+SSE transport against a hostile server on
//! loopback (fault injection: an axum app that speaks the transport and
//! misbehaves): a flood on the event stream at an agent that does not read
//! stdout for a while (peak RSS under a fixed bound, nothing lost), answers
//! over the event cap (the waiting request gets an error, the stream goes
//! on), with the answer's id first (as the Python SDK writes it) and last
//! (as the TypeScript SDK does), and a session the server forgets.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use http_body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::common;

/// How long the server may take to hand one event to the connection.
const SEND_TIME: Duration = Duration::from_secs(90);

#[derive(Default)]
pub(super) struct Server {
    /// The event stream's sending side, once the proxy opened it.
    stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// Bytes taken by the connection.
    sent: AtomicUsize,
    /// The flood is out.
    flood_done: AtomicBool,
    /// Event streams opened, `initialize` requests received.
    gets: AtomicUsize,
    initializes: AtomicUsize,
    /// The next message is answered `404` (a forgotten session).
    forget_next: AtomicBool,
    /// `ping` requests received.
    pings: AtomicUsize,
}

/// A body fed by a channel of one chunk: what is "sent" was taken by the
/// connection, not held here.
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

fn sse(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// The event stream: its endpoint first, then what the posts send.
pub(super) async fn stream(State(server): State<Arc<Server>>) -> Response {
    let (tx, rx) = mpsc::channel(1);
    tx.send(Bytes::from_static(
        b"event: endpoint\ndata: /messages?session=1\n\n",
    ))
    .await
    .unwrap();
    *server.stream.lock().unwrap() = Some(tx);
    server.gets.fetch_add(1, Ordering::SeqCst);
    (
        [(http::header::CONTENT_TYPE, "text/event-stream")],
        Body::new(ChannelBody(rx)),
    )
        .into_response()
}

/// Sends `chunks` on the event stream, bounded in time per chunk.
async fn send(server: &Server, chunks: impl Iterator<Item = Bytes>) {
    let Some(tx) = server.stream.lock().unwrap().clone() else {
        return;
    };
    for chunk in chunks {
        let n = chunk.len();
        match tokio::time::timeout(SEND_TIME, tx.send(chunk)).await {
            Ok(Ok(())) => server.sent.fetch_add(n, Ordering::Relaxed),
            _ => return,
        };
    }
}

/// `size` bytes of `x` in chunks of 64 KiB.
fn filler(size: usize) -> impl Iterator<Item = Bytes> {
    (0..size / (64 << 10)).map(|_| Bytes::from(vec![b'x'; 64 << 10]))
}

/// A message of the agent: `202`, and its answer on the stream.
pub(super) async fn message(State(server): State<Arc<Server>>, body: Bytes) -> StatusCode {
    if server.forget_next.swap(false, Ordering::SeqCst) {
        return StatusCode::NOT_FOUND;
    }
    let message: Value = serde_json::from_slice(&body).unwrap();
    if message["method"] == "initialize" {
        server.initializes.fetch_add(1, Ordering::SeqCst);
    }
    if message["method"] == "ping" {
        server.pings.fetch_add(1, Ordering::SeqCst);
    }
    let (Some(id), Some(method)) = (message.get("id").cloned(), message["method"].as_str()) else {
        return StatusCode::ACCEPTED;
    };
    let tool = message["params"]["name"].as_str().unwrap_or_default();
    let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    let chunks: Vec<Bytes> = match (method, tool) {
        ("initialize", _) => vec![sse(&answer(json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        })))],
        ("tools/call", "huge_last") => [Bytes::from_static(
            b"event: message\ndata: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"",
        )]
        .into_iter()
        .chain(filler(72 << 20))
        .chain([Bytes::from(format!(
            "\"}}]}},\"jsonrpc\":\"2.0\",\"id\":{id}}}\n\n"
        ))])
        .collect(),
        ("tools/call", "huge_first") => [Bytes::from(format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\""
        ))]
        .into_iter()
        .chain(filler(72 << 20))
        .chain([Bytes::from_static(b"\"}]}}\n\n")])
        .collect(),
        ("tools/call", "flood") => {
            let (count, size) = (
                message["params"]["arguments"]["count"].as_u64().unwrap() as usize,
                message["params"]["arguments"]["size"].as_u64().unwrap() as usize,
            );
            let server = server.clone();
            let done = sse(&answer(text("done")));
            tokio::spawn(async move {
                let noise = (0..count).map(move |n| {
                    sse(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": {"n": n, "pad": "x".repeat(size)}}}))
                });
                send(&server, noise.chain([done])).await;
                server.flood_done.store(true, Ordering::Relaxed);
            });
            return StatusCode::ACCEPTED;
        }
        _ => vec![sse(&answer(text("small")))],
    };
    tokio::spawn(async move { send(&server, chunks.into_iter()).await });
    StatusCode::ACCEPTED
}

/// `lro proxy --transport sse-only` to a new server, initialized.
async fn start() -> (Agent, Arc<Server>) {
    start_with(&[]).await
}

/// [`start`] with more flags for the proxy.
async fn start_with(flags: &[&str]) -> (Agent, Arc<Server>) {
    let server = Arc::new(Server::default());
    let app = Router::new()
        .route("/sse", axum::routing::get(stream))
        .route("/messages", axum::routing::post(message))
        .with_state(server.clone());
    let addr = common::mcp::serve(app).await;
    let url = format!("http://{addr}/sse");
    let args = [&["--transport", "sse-only"], flags].concat();
    let mut agent = Agent::start(&url, &args, "2024-11-05").await;
    agent
        .say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    (agent, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_on_the_event_stream_is_slowed_down_not_buffered() {
    // 1600 notifications of 64 KiB: about 105 MB, then the answer.
    let (count, size) = (1600, 64 << 10);
    let (mut agent, server) = start().await;
    agent
        .call(2, "flood", json!({"count": count, "size": size}))
        .await;
    // The agent reads nothing until the flood is out or the server has
    // been held back for a while (each poll bounded; at most 60 s).
    let (mut last, mut still) = (0, 0);
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sent = server.sent.load(Ordering::Relaxed);
        if server.flood_done.load(Ordering::Relaxed) {
            break;
        }
        still = if sent == last { still + 1 } else { 0 };
        last = sent;
        if still >= 20 {
            break;
        }
    }
    let held_back_at = server.sent.load(Ordering::Relaxed);
    // Now the agent reads it all: nothing lost, in order, then the answer.
    let mut n = 0;
    let answer = loop {
        let v = agent.next().await.expect("stdout open until the answer");
        if v["id"] == 2 {
            break v;
        }
        assert_eq!(v["params"]["data"]["n"], n, "in order");
        n += 1;
    };
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
    let peak = agent.peak_rss();
    let log = agent.finish().await;
    eprintln!(
        "server held back at {} MB; {} MB sent in all, proxy peak RSS {} MiB",
        held_back_at / 1_000_000,
        server.sent.load(Ordering::Relaxed) / 1_000_000,
        peak >> 20
    );
    assert_eq!(n, count, "every notification relayed");
    assert!(
        held_back_at < 100_000_000,
        "the server was held back while the agent did not read: {held_back_at} bytes"
    );
    assert!(peak < 64 << 20, "peak RSS {} MiB: {log}", peak >> 20);
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_cap_is_an_error_for_its_request_and_the_stream_goes_on() {
    let (mut agent, _server) = start().await;
    for (id, tool) in [(2, "huge_last"), (3, "huge_first")] {
        agent.call(id, tool, json!({})).await;
        let v = agent.next().await.expect("an answer");
        assert_eq!(v["id"], id, "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("over 64 MiB"), "{tool}: {v}");
    }
    agent.call(4, "small", json!({})).await;
    let v = agent.next().await.expect("the stream goes on");
    assert_eq!(v["result"]["content"][0]["text"], "small", "{v}");
    let peak = agent.peak_rss();
    let log = agent.finish().await;
    assert!(log.contains("event over 64 MiB; it is dropped"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    eprintln!("proxy peak RSS with two 72 MiB answers: {} MiB", peak >> 20);
    // Bounded by the cap (an event up to 64 MiB, its buffer grown by
    // doubling), not by what the server sends.
    assert!(peak < 192 << 20, "peak RSS {} MiB", peak >> 20);
}

/// A `404` to a POST: the server forgot the session. The proxy opens a new
/// stream, sends the agent's `initialize` again, then the message, which
/// is answered; the agent sees nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_renewed_without_the_agent_noticing() {
    let (mut agent, server) = start().await;
    assert_eq!(server.gets.load(Ordering::SeqCst), 1);
    server.forget_next.store(true, Ordering::SeqCst);
    agent.call(2, "small", json!({})).await;
    let v = agent.next().await.expect("an answer");
    assert_eq!(v["id"], 2, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "small", "{v}");
    assert_eq!(server.gets.load(Ordering::SeqCst), 2, "a new stream");
    assert_eq!(
        server.initializes.load(Ordering::SeqCst),
        2,
        "the agent's initialize sent again"
    );
    let log = agent.finish().await;
    assert!(!log.contains("panicked"), "{log}");
}

/// `--ping-interval` over HTTP+SSE: the proxy's pings are POSTed to the
/// endpoint and answered on the event stream, and the agent never sees
/// their answers, only its own call's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_pings_go_over_the_event_stream_unseen_by_the_agent() {
    let (mut agent, server) = start_with(&["--ping-interval", "0.2"]).await;
    // Idle: pings, bounded in time.
    for _ in 0..200 {
        if server.pings.load(Ordering::SeqCst) >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(server.pings.load(Ordering::SeqCst) >= 3, "pings while idle");
    agent.call(2, "small", json!({})).await;
    let v = agent.next().await.expect("an answer");
    assert_eq!(v["id"], 2, "the agent's own answer, no ping's: {v}");
    assert_eq!(v["result"]["content"][0]["text"], "small", "{v}");
    assert_eq!(
        server.gets.load(Ordering::SeqCst),
        1,
        "one stream throughout"
    );
    let log = agent.finish().await;
    assert!(
        !log.contains("does not answer"),
        "every ping answered: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}
