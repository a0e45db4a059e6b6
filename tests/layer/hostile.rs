//! Hostile and odd upstream answers: a raw upstream on loopback writes the
//! exact bytes of each case; the layer sits in a small forwarding service in
//! front of it (as in a gateway) and a client reads what comes out.
//!
//! Each case is either offloaded or passed through with a `PassedThrough`
//! event at a level an operator sees by default (WARN), and every body the
//! layer sends carries a length header that matches it, or none.

use crate::common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{EventHook, OffloadEvent, OffloadLayer, PassReason, RequestBody};

const DEADLINE: Duration = Duration::from_secs(20);

/// A raw upstream: answers every request on a connection with `answer`
/// (exact bytes, then the connection is closed) and records the heads of
/// the requests it got.
async fn raw_upstream(answer: Vec<u8>) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        for _ in 0..16 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let head = read_request(&mut sock).await;
            seen.lock().unwrap().push(head);
            let _ = sock.write_all(&answer).await;
            let _ = sock.shutdown().await;
        }
    });
    (addr, heads)
}

/// Reads one request (head and a `Content-Length` body); returns the head.
async fn read_request(sock: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = sock.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return head;
        }
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return String::from_utf8_lossy(&buf).into_owned();
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The layer in front of a forwarding service to `upstream`, served on
/// loopback; returns its address and the events it emits.
async fn layer_in_front(
    upstream: SocketAddr,
    dir: &std::path::Path,
) -> (SocketAddr, tokio::sync::mpsc::Receiver<OffloadEvent>) {
    let (hook, events) = EventHook::channel(64);
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir))
        .event_hook(hook)
        .build();
    let client: Client<HttpConnector, RequestBody<Incoming>> =
        Client::builder(TokioExecutor::new()).build_http();
    let forward = tower::service_fn(move |req: Request<RequestBody<Incoming>>| {
        let client = client.clone();
        async move {
            let (mut parts, body) = req.into_parts();
            parts.uri = format!("http://{upstream}/mcp").parse().unwrap();
            let resp = client
                .request(Request::from_parts(parts, body))
                .await
                .expect("the upstream answers");
            Ok::<_, Infallible>(resp)
        }
    });
    let service = ServiceBuilder::new().layer(layer).service(forward);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..16 {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let _ = sock.set_nodelay(true);
            let svc = hyper_util::service::TowerToHyperService::new(service.clone());
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(sock), svc),
            );
        }
    });
    (addr, events)
}

fn call_body(id: u64) -> String {
    common::mcp::tools_call(id, "query_logs", json!({"query": "x"}), None).to_string()
}

/// Sends one tools/call over a raw keep-alive connection and returns the
/// raw bytes read until the server has been quiet for a moment.
async fn raw_exchange(addr: SocketAddr) -> Vec<u8> {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let body = call_body(1);
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match tokio::time::timeout(Duration::from_millis(500), sock.read(&mut chunk)).await {
            Ok(Ok(0)) | Err(_) => return out,
            Ok(Ok(n)) => out.extend_from_slice(&chunk[..n]),
            Ok(Err(_)) => return out,
        }
    }
}

/// Posts one tools/call and returns the response head and body.
async fn post(addr: SocketAddr) -> (http::response::Parts, Bytes) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let req = Request::post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(call_body(1))))
        .unwrap();
    let resp: Response<Incoming> = tokio::time::timeout(DEADLINE, client.request(req))
        .await
        .expect("in time")
        .unwrap();
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(DEADLINE, body.collect())
        .await
        .expect("in time")
        .unwrap()
        .to_bytes();
    (parts, body)
}

/// A JSON-RPC answer to call 1 whose result holds `n` log rows as text.
fn large_answer(n: usize) -> String {
    let rows: Vec<Value> = (0..n)
        .map(|i| json!({"id": i, "level": "info", "msg": format!("worker {i} started on node {}", i % 7)}))
        .collect();
    let text = serde_json::to_string(&rows).unwrap();
    json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
        .to_string()
}

fn http_answer(headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn offloaded(body: &str) -> bool {
    body.contains(r#"\"offloaded\":true"#)
}

/// The events received so far.
fn drain(events: &mut tokio::sync::mpsc::Receiver<OffloadEvent>) -> Vec<OffloadEvent> {
    std::iter::from_fn(|| events.try_recv().ok()).collect()
}

fn passed_for(events: &[OffloadEvent], want: fn(&PassReason) -> bool) -> bool {
    events.iter().any(|e| {
        matches!(e, OffloadEvent::PassedThrough { reason, .. } if want(reason) && reason.is_notable())
    })
}

#[tokio::test]
async fn a_stale_content_length_beside_chunked_framing_is_never_sent_on() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"small"}]}}"#;
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n{chunked}"
    );
    let (upstream, _) = raw_upstream(answer.into_bytes()).await;
    let (addr, _events) = layer_in_front(upstream, dir.path()).await;
    let raw = tokio::time::timeout(DEADLINE, raw_exchange(addr))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").expect("a response head");
    let head = head.to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap());
    let chunked_out = head.contains("transfer-encoding: chunked");
    assert!(
        !(chunked_out && length.is_some()),
        "both framings sent:\n{head}"
    );
    match length {
        // Exactly the body, nothing after it for a keep-alive client to
        // take as the next answer.
        Some(n) => assert_eq!(rest, body, "Content-Length {n} must frame the whole body"),
        None => assert!(chunked_out && rest.contains(body), "{text}"),
    }
}

#[tokio::test]
async fn media_types_compare_without_case() {
    let dir = tempfile::tempdir().unwrap();
    for content_type in ["Application/JSON", "APPLICATION/JSON; charset=UTF-8"] {
        let answer = http_answer(
            &format!("Content-Type: {content_type}\r\n"),
            &large_answer(600),
        );
        let (upstream, _) = raw_upstream(answer).await;
        let (addr, _events) = layer_in_front(upstream, dir.path()).await;
        let (_, body) = post(addr).await;
        assert!(offloaded(&String::from_utf8_lossy(&body)), "{content_type}");
    }
    let sse = format!("data: {}\n\n", large_answer(600));
    let answer = http_answer("Content-Type: TEXT/EVENT-STREAM\r\n", &sse);
    let (upstream, _) = raw_upstream(answer).await;
    let (addr, _events) = layer_in_front(upstream, dir.path()).await;
    let (_, body) = post(addr).await;
    assert!(
        offloaded(&String::from_utf8_lossy(&body)),
        "TEXT/EVENT-STREAM"
    );
}

#[tokio::test]
async fn compressed_answers_are_not_parsed_and_identity_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    // Not really gzip: the layer must not try to read it either way.
    let garbage = "\u{1f}\u{8b}compressed-looking bytes";
    let answer = http_answer(
        "Content-Type: application/json\r\nContent-Encoding: gzip\r\n",
        garbage,
    );
    let (upstream, heads) = raw_upstream(answer).await;
    let (addr, mut events) = layer_in_front(upstream, dir.path()).await;
    let (parts, body) = post(addr).await;
    assert_eq!(parts.headers["content-encoding"], "gzip");
    assert_eq!(&body[..], garbage.as_bytes(), "passed on untouched");
    let head = heads.lock().unwrap()[0].clone();
    assert!(head.contains("accept-encoding: identity"), "{head}");
    let events = drain(&mut events);
    assert!(
        passed_for(
            &events,
            |r| matches!(r, PassReason::Encoded(e) if e == "gzip")
        ),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_server_request_reusing_the_calls_id_does_not_hide_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let sampling = json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "s".repeat(12_000)}}], "maxTokens": 10}});
    let sse = format!("data: {sampling}\n\ndata: {}\n\n", large_answer(1500));
    let answer = http_answer("Content-Type: text/event-stream\r\n", &sse);
    let (upstream, _) = raw_upstream(answer).await;
    let (addr, _events) = layer_in_front(upstream, dir.path()).await;
    let (_, body) = post(addr).await;
    let body = String::from_utf8_lossy(&body).into_owned();
    let events = common::mcp::sse_messages(&body);
    assert_eq!(events.len(), 2, "{body:.300}");
    assert_eq!(events[0], sampling, "the server request goes on untouched");
    assert!(
        offloaded(&events[1].to_string()),
        "the real result is offloaded"
    );
}

#[tokio::test]
async fn an_event_ended_by_cr_cr_at_the_end_of_the_stream_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let sse = format!("data: {}\r\r", large_answer(600));
    let answer = http_answer("Content-Type: text/event-stream\r\n", &sse);
    let (upstream, _) = raw_upstream(answer).await;
    let (addr, _events) = layer_in_front(upstream, dir.path()).await;
    let (_, body) = post(addr).await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert!(offloaded(&body), "{body:.300}");
    assert!(body.ends_with("\r\r"), "the event's framing is kept");
}

#[tokio::test]
async fn unreadable_results_pass_with_a_warning_event() {
    let dir = tempfile::tempdir().unwrap();
    let big = large_answer(600);
    // A duplicate `result` member: which one a client takes is its choice.
    let dup = big.replacen(r#""result":"#, r#""result":{"content":[]},"result":"#, 1);
    // A lone surrogate escape in the text.
    let surrogate = big.replacen("worker 5 ", "worker \\ud800 ", 1);
    assert_ne!(surrogate, big);
    for (what, body) in [("duplicate result", dup), ("lone surrogate", surrogate)] {
        for sse in [false, true] {
            let (content_type, payload) = if sse {
                ("text/event-stream", format!("data: {body}\n\n"))
            } else {
                ("application/json", body.clone())
            };
            let answer = http_answer(&format!("Content-Type: {content_type}\r\n"), &payload);
            let (upstream, _) = raw_upstream(answer).await;
            let (addr, mut events) = layer_in_front(upstream, dir.path()).await;
            let (_, got) = post(addr).await;
            assert_eq!(
                &got[..],
                payload.as_bytes(),
                "{what} ({content_type}): untouched"
            );
            let events = drain(&mut events);
            assert!(
                passed_for(&events, |r| matches!(r, PassReason::Unparseable(_))),
                "{what} ({content_type}): {events:?}"
            );
        }
    }
}
