//! The layer in front of a hand-written axum JSON-RPC handler: odd SSE
//! framing, batches, oversized requests, broken bodies.

use crate::common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post as on_post;
use common::descriptor;
use common::mcp::tools_call;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::{OffloadLayer, rebuild_file};

fn big_result() -> Value {
    memory_tool_result(&MemoryGenerator::new(77).memories(150, Detail::Medium))
}

fn answer(req: &Value) -> Value {
    let id = req["id"].clone();
    match req["params"]["name"].as_str() {
        Some("big") => json!({"jsonrpc": "2.0", "id": id, "result": big_result()}),
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "small"}]}})
        }
    }
}

/// POST /json: JSON-RPC over application/json (batches too).
/// POST /sse: the answer as SSE with awkward framing.
/// POST /echo: echoes the request body's length and last byte.
/// POST /broken: a JSON body that fails half-way.
async fn json_handler(body: Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "bad json").into_response();
    };
    let out = match &req {
        Value::Array(items) => Value::Array(items.iter().map(answer).collect()),
        one => answer(one),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        out.to_string(),
    )
        .into_response()
}

async fn sse_handler(body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    // The result as pretty JSON over many data lines (some "data:" without
    // the space), CRLF line ends, a comment, an id, an event name, a retry,
    // a priming event and a progress event, cut into chunks mid-line and
    // between CR and LF.
    let pretty = serde_json::to_string_pretty(&answer(&req)).unwrap();
    let data = common::data_lines(&pretty);
    let result_event = format!("event: message\r\nid: 2\r\n{data}\r\n");
    let (a, b) = result_event.split_at(result_event.len() / 2);
    let (a, b) = (a.to_owned(), b.to_owned());
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}});
    let chunks: Vec<Result<Bytes, Infallible>> = vec![
        Ok(Bytes::from("id: prime\r\nretry: 500\r\ndata:\r\n\r")),
        Ok(Bytes::from(format!(
            "\n: keep-alive\r\nevent: message\r\nid: 1\r\ndata: {progress}\r\n\r\n"
        ))),
        Ok(Bytes::from(a)),
        Ok(Bytes::from(b)),
        Ok(Bytes::from(": trailing comment\r\n\r\n")),
    ];
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(futures_stream(chunks)))
        .unwrap()
}

fn futures_stream(
    chunks: Vec<Result<Bytes, Infallible>>,
) -> impl futures_core_stream::Stream<Item = Result<Bytes, Infallible>> {
    futures_core_stream::iter(chunks)
}

/// A tiny stream helper so the test needs no extra crate.
mod futures_core_stream {
    pub(super) use tokio_stream_shim::{Stream, iter};
    mod tokio_stream_shim {
        use std::pin::Pin;
        use std::task::{Context, Poll};
        pub(crate) trait Stream: futures_core::Stream {}
        impl<T: futures_core::Stream> Stream for T {}
        pub(crate) struct Iter<I>(I);
        impl<I: Iterator + Unpin> futures_core::Stream for Iter<I> {
            type Item = I::Item;
            fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<I::Item>> {
                Poll::Ready(self.0.next())
            }
        }
        pub(crate) fn iter<T>(v: Vec<T>) -> Iter<std::vec::IntoIter<T>> {
            Iter(v.into_iter())
        }
    }
}

async fn echo_handler(headers: HeaderMap, body: Bytes) -> Response {
    let summary = json!({"len": body.len(), "last": body.last(), "content_length": headers.get("content-length").map(|v| v.to_str().unwrap().to_owned())});
    (
        [(header::CONTENT_TYPE, "application/json")],
        summary.to_string(),
    )
        .into_response()
}

async fn broken_handler() -> Response {
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[",
        )),
        Err(std::io::Error::other("backend went away")),
    ];
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(futures_core_stream::iter(chunks)))
        .unwrap()
}

/// POST /unread: answers a big result without reading the request.
async fn unread_handler() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        answer(&call(1, "big")).to_string(),
    )
        .into_response()
}

/// POST /tasks: a task-augmented `tools/call` (`params.task`) gets a
/// `CreateTaskResult` (task id `task-{id}`); `tasks/result` for it gets the
/// call's result; an unaugmented call is answered at once.
/// POST /tasks-sse: the same, each answer as one SSE event.
async fn tasks_handler(body: Bytes) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        task_answer(&body).to_string(),
    )
        .into_response()
}

async fn tasks_sse_handler(body: Bytes) -> Response {
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        format!("event: message\ndata: {}\n\n", task_answer(&body)),
    )
        .into_response()
}

fn task_answer(body: &[u8]) -> Value {
    let req: Value = serde_json::from_slice(body).unwrap();
    let id = req["id"].clone();
    match req["method"].as_str() {
        Some("tools/call") if req["params"].get("task").is_some() => json!({
            "jsonrpc": "2.0", "id": id,
            "result": {"task": {"taskId": format!("task-{id}"), "status": "working", "createdAt": "2026-11-21T00:00:00Z", "lastUpdatedAt": "2026-11-21T00:00:00Z", "ttl": 60000}}
        }),
        Some("tasks/result") => json!({"jsonrpc": "2.0", "id": id, "result": big_result()}),
        _ => answer(&req),
    }
}

async fn serve(layer: Option<OffloadLayer>) -> SocketAddr {
    let router = Router::new()
        .route("/json", on_post(json_handler))
        .route("/unread", on_post(unread_handler))
        .route("/tasks", on_post(tasks_handler))
        .route("/tasks-sse", on_post(tasks_sse_handler))
        .route("/sse", on_post(sse_handler))
        .route("/echo", on_post(echo_handler))
        .route("/broken", on_post(broken_handler));
    common::mcp::serve(match layer {
        Some(l) => router.layer(l),
        None => router,
    })
    .await
}

/// A `tools/call` of `name` without arguments.
fn call(id: u64, name: &str) -> Value {
    tools_call(id, name, json!({}), None)
}

async fn post(addr: SocketAddr, path: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The whole response body of a POST.
async fn body_of(addr: SocketAddr, path: &str, body: impl Into<reqwest::Body>) -> Bytes {
    post(addr, path, body).await.bytes().await.unwrap()
}

/// Posts `body` to both servers; asserts the answers are byte-identical
/// and returns the one through the layer.
async fn same_with_and_without(
    with: SocketAddr,
    without: SocketAddr,
    path: &str,
    body: &str,
) -> Bytes {
    let got = body_of(with, path, body.to_owned()).await;
    assert_eq!(
        got,
        body_of(without, path, body.to_owned()).await,
        "{path}: {body:.80}"
    );
    got
}

fn layer(dir: &std::path::Path) -> OffloadLayer {
    OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir))
        .max_request_bytes(64 * 1024)
        .build()
}

fn check_descriptor(result: &Value) {
    let d = descriptor(result);
    assert_eq!(d.summary.count, 150);
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(rebuilt, big_result());
    common::require_jq();
    for r in &d.jq_recipes {
        common::run_recipe(&r.command);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_handler_small_untouched_large_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let without = serve(None).await;
    same_with_and_without(with, without, "/json", &call(1, "small").to_string()).await;
    let r = post(with, "/json", call(2, "big").to_string()).await;
    let len = r.content_length();
    let bytes = r.bytes().await.unwrap();
    assert_eq!(len, Some(bytes.len() as u64), "Content-Length fixed");
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 2);
    check_descriptor(&v["result"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_rewrite_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let batch = json!([call(1, "big"), call(2, "small"), {"jsonrpc": "2.0", "method": "notifications/x"}, call(3, "big")]);
    let v: Value = post(with, "/json", batch.to_string())
        .await
        .json()
        .await
        .unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 4);
    check_descriptor(&items[0]["result"]);
    assert_eq!(items[1]["result"]["content"][0]["text"], "small");
    check_descriptor(&items[3]["result"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_framing_is_kept_and_only_the_result_event_changes() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let without = serve(None).await;
    let got = post(with, "/sse", call(7, "big").to_string())
        .await
        .text()
        .await
        .unwrap();
    let plain = post(without, "/sse", call(7, "big").to_string())
        .await
        .text()
        .await
        .unwrap();
    let events: Vec<&str> = got.split("\r\n\r\n").collect();
    let plain_events: Vec<&str> = plain.split("\r\n\r\n").collect();
    assert_eq!(events.len(), plain_events.len());
    assert_eq!(events[0], plain_events[0], "priming event untouched");
    assert_eq!(events[1], plain_events[1], "progress event untouched");
    assert_eq!(events[3..], plain_events[3..], "trailing comment untouched");
    assert!(events[2].starts_with("event: message\r\nid: 2\r\ndata: {"));
    assert_eq!(events[2].matches("data:").count(), 1, "one data line now");
    let data = events[2]
        .split("\r\n")
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap();
    let msg: Value = serde_json::from_str(data).unwrap();
    assert_eq!(msg["id"], 7);
    check_descriptor(&msg["result"]);
    // Small results through SSE: identical bytes.
    same_with_and_without(with, without, "/sse", &call(8, "small").to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_odd_requests_reach_the_handler_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    // Over the 64 KiB cap, sent in chunks.
    let mut big = call(1, "big");
    big["params"]["arguments"]["pad"] = json!("x".repeat(200_000));
    let body = big.to_string();
    let v: Value = post(with, "/echo", body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["len"], body.len());
    assert_eq!(v["last"], u64::from(*body.as_bytes().last().unwrap()));
    let chunks: Vec<Result<Vec<u8>, Infallible>> = body
        .as_bytes()
        .chunks(10_000)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let streamed = reqwest::Body::wrap_stream(futures_core_stream::iter(chunks));
    let v: Value = post(with, "/echo", streamed).await.json().await.unwrap();
    assert_eq!(v["len"], body.len());
    // Not JSON: passes, and the handler's 400 comes back unchanged.
    let r = post(with, "/json", "definitely { not json").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.text().await.unwrap(), "bad json");
    // A small request keeps its Content-Length.
    let small = call(3, "small").to_string();
    let v: Value = post(with, "/echo", small.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["content_length"], small.len().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_breaks_midway_is_passed_on() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let without = serve(None).await;
    // The body is collected before the headers are sent (they may change),
    // so the failure shows at whichever step the connection breaks; either
    // way the client sees the upstream's failure, never a made-up success.
    async fn outcome(addr: SocketAddr) -> &'static str {
        let sent = reqwest::Client::new()
            .post(format!("http://{addr}/broken"))
            .header("content-type", "application/json")
            .body(call(1, "big").to_string())
            .send()
            .await;
        match sent {
            Err(_) => "failed",
            Ok(r) => match tokio::time::timeout(Duration::from_secs(10), r.bytes())
                .await
                .unwrap()
            {
                Err(_) => "failed",
                Ok(_) => "complete",
            },
        }
    }
    assert_eq!(outcome(without).await, "failed");
    assert_eq!(outcome(with).await, "failed");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file for a broken body"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_read_as_the_handler_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let without = serve(None).await;
    // A call in many small chunks (under the cap) is still seen whole.
    let body = call(4, "big").to_string();
    let chunks: Vec<Result<Vec<u8>, Infallible>> =
        body.as_bytes().chunks(7).map(|c| Ok(c.to_vec())).collect();
    let streamed = reqwest::Body::wrap_stream(futures_core_stream::iter(chunks));
    let v: Value = post(with, "/json", streamed).await.json().await.unwrap();
    assert_eq!(v["id"], 4);
    check_descriptor(&v["result"]);
    // A call over the request cap is not read: its big answer comes back whole.
    let mut padded = call(5, "big");
    padded["params"]["arguments"]["pad"] = json!("x".repeat(100_000));
    same_with_and_without(with, without, "/json", &padded.to_string()).await;
    // A handler that answers without reading the request: the answer
    // cannot be matched to a call, so it passes untouched.
    same_with_and_without(with, without, "/unread", &call(1, "big").to_string()).await;
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 1, "only the chunked call was offloaded");
}

/// The JSON-RPC message of a JSON body or of a one-event SSE body.
fn message(body: &[u8]) -> Value {
    let text = std::str::from_utf8(body).unwrap();
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(text);
    serde_json::from_str(json).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_result_is_offloaded_as_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let with = serve(Some(layer(dir.path()))).await;
    let without = serve(None).await;
    for (n, path) in [(0u64, "/tasks"), (100, "/tasks-sse")] {
        let mut augmented = call(n + 9, "big");
        augmented["params"]["task"] = json!({"ttl": 60000});
        // The CreateTaskResult passes untouched.
        let created = same_with_and_without(with, without, path, &augmented.to_string()).await;
        let task = format!("task-{}", n + 9);
        assert_eq!(message(&created)["result"]["task"]["taskId"], task.as_str());
        // The result, fetched later, is offloaded under the original call's name.
        let fetch = json!({"jsonrpc": "2.0", "id": n + 10, "method": "tasks/result", "params": {"taskId": task}});
        let v = message(&body_of(with, path, fetch.to_string()).await);
        assert_eq!(v["id"], n + 10);
        check_descriptor(&v["result"]);
        let d = descriptor(&v["result"]);
        let name = std::path::Path::new(&d.file_path)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(name.starts_with("atlatl-big-"), "{path}: {name}");
        // A task the layer never saw created is still a result to evaluate.
        let fetch = json!({"jsonrpc": "2.0", "id": n + 11, "method": "tasks/result", "params": {"taskId": "unknown"}});
        let v = message(&body_of(with, path, fetch.to_string()).await);
        check_descriptor(&v["result"]);
    }
}
