//! Load and faults through the layer over loopback: many concurrent large
//! calls, the global buffer cap, write failures, clients that go away,
//! upstreams that break mid-body.

use crate::common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use common::mcp::{
    Mode, mcp_service, memories, post, post_with, response_message, serve, serve_mcp, tools_call,
};
use common::try_descriptor;
use serde_json::{Value, json};
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::memory_tool_result;
use tower_lro::offload::{EventHook, OffloadEvent, OffloadLayer, PassReason, rebuild_file};
use tower_lro::store::{FsStore, Store, StoreError};

/// The file names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// 200 large calls at once: each response answers its own request, each
/// file is its own and complete, nothing temporary is left.
async fn concurrent_large_calls(mode: Mode) {
    const CALLS: u64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let addr = serve_mcp(mcp_service(mode), Some(layer.clone())).await;
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for i in 0..CALLS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let count = 10 + (i as usize % 40);
            let query = format!("q-{i}");
            let body = tools_call(
                i,
                "recall_memories",
                json!({"count": count, "query": query}),
                None,
            );
            let resp = tokio::time::timeout(
                Duration::from_secs(120),
                post_with(&client, addr, &body, &[]),
            )
            .await
            .expect("response in time");
            assert!(resp.status().is_success());
            let text = resp.text().await.unwrap();
            let msg = response_message(&text, i).expect("the response answers this request");
            (i, count, msg)
        }));
    }
    let mut paths = HashSet::new();
    for t in tasks {
        let (i, count, msg) = t.await.unwrap();
        let d = try_descriptor(&msg["result"])
            .unwrap_or_else(|| panic!("call {i}: no descriptor: {msg}"));
        assert_eq!(d.summary.count, count, "call {i}");
        let path = PathBuf::from(&d.file_path);
        let header = common::file_header(&path);
        assert_eq!(
            header["query"],
            format!("q-{i}"),
            "call {i} got another file"
        );
        let rebuilt: Value = serde_json::from_str(&rebuild_file(&path).unwrap()).unwrap();
        assert_eq!(
            rebuilt,
            memory_tool_result(&memories(count, Detail::Full)),
            "call {i}: the file is complete"
        );
        assert!(
            paths.insert(path),
            "call {i}: file shared with another call"
        );
    }
    let names = names_in(dir.path());
    assert_eq!(names.len(), CALLS as usize, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("atlatl-recall-")),
        "no temporary file left: {names:?}"
    );
    assert_eq!(layer.buffered_bytes(), 0, "every buffer given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_large_calls_json() {
    concurrent_large_calls(Mode::StatelessJson).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_large_calls_sse() {
    concurrent_large_calls(Mode::StatelessSse).await;
}

fn collecting_hook() -> (EventHook, Arc<Mutex<Vec<OffloadEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (
        EventHook::callback(move |e| sink.lock().unwrap().push(e.clone())),
        seen,
    )
}

fn buffer_cap_events(seen: &Mutex<Vec<OffloadEvent>>) -> usize {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(
                e,
                OffloadEvent::PassedThrough {
                    reason: PassReason::BufferCap { .. },
                    ..
                }
            )
        })
        .count()
}

/// `max_buffered_bytes` bounds memory, not what is offloaded: a response
/// past it is spilled to disk and offloaded from there (JSON, and the one
/// event of an event stream), nothing passes through for being too large.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_buffer_cap_a_response_is_spilled_and_offloaded() {
    for mode in [Mode::StatelessJson, Mode::StatelessSse] {
        let dir = tempfile::tempdir().unwrap();
        let (hook, seen) = collecting_hook();
        let layer = OffloadLayer::builder()
            .config(
                OffloadConfig::default()
                    .output_dir(dir.path())
                    .max_buffered_bytes(64 * 1024),
            )
            .event_hook(hook)
            .build();
        let with = serve_mcp(mcp_service(mode), Some(layer.clone())).await;
        // ~300 KB: over the cap.
        let big = tools_call(1, "recall_memories", json!({"count": 200}), None);
        let text = post(with, &big, &[]).await.text().await.unwrap();
        let msg = response_message(&text, 1).unwrap();
        let descriptor = try_descriptor(&msg["result"])
            .unwrap_or_else(|| panic!("{mode:?}: not offloaded: {:.300}", msg.to_string()));
        assert_eq!(descriptor.summary.count, 200, "{mode:?}");
        assert!(descriptor.summary.data_sha256.is_some(), "{mode:?}");
        assert_eq!(buffer_cap_events(&seen), 0, "{mode:?}");
        assert_eq!(names_in(dir.path()).len(), 1, "{mode:?}");
        // ~20 KB: under the cap, offloaded as usual.
        let small = tools_call(2, "recall_memories", json!({"count": 12}), None);
        let text = post(with, &small, &[]).await.text().await.unwrap();
        let msg = response_message(&text, 2).unwrap();
        assert_eq!(
            try_descriptor(&msg["result"])
                .expect("offloaded")
                .summary
                .count,
            12
        );
        assert_eq!(layer.buffered_bytes(), 0, "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_buffer_cap_holds_across_concurrent_responses() {
    let dir = tempfile::tempdir().unwrap();
    let (hook, seen) = collecting_hook();
    // Room for about three ~300 KB responses at once.
    let layer = OffloadLayer::builder()
        .config(
            OffloadConfig::default()
                .output_dir(dir.path())
                .max_buffered_bytes(1 << 20),
        )
        .event_hook(hook)
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer.clone())).await;
    let original = memory_tool_result(&memories(200, Detail::Full));
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..16u64)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let body = tools_call(i, "recall_memories", json!({"count": 200}), None);
                let text = post_with(&client, addr, &body, &[])
                    .await
                    .text()
                    .await
                    .unwrap();
                response_message(&text, i).expect("answer")
            })
        })
        .collect();
    let (mut offloaded, mut untouched) = (0, 0);
    for c in calls {
        let msg = c.await.unwrap();
        match try_descriptor(&msg["result"]) {
            Some(d) if d.offloaded => offloaded += 1,
            _ => {
                assert_eq!(msg["result"], original, "an untouched result is whole");
                untouched += 1;
            }
        }
    }
    assert_eq!(offloaded + untouched, 16);
    assert_eq!(untouched, buffer_cap_events(&seen));
    assert_eq!(names_in(dir.path()).len(), offloaded);
    assert_eq!(layer.buffered_bytes(), 0);
    println!("offloaded {offloaded}, passed through at the cap {untouched}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_still_answers_with_a_truncated_result() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let (hook, seen) = collecting_hook();
    // A path under a regular file cannot be a directory (root or not).
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(file.path().join("lro")))
        .event_hook(hook)
        .build();
    for mode in [Mode::StatelessJson, Mode::StatelessSse] {
        let addr = serve_mcp(mcp_service(mode), Some(layer.clone())).await;
        let body = tools_call(7, "recall_memories", json!({"count": 100}), None);
        let resp = post(addr, &body, &[]).await;
        assert!(resp.status().is_success());
        let text = resp.text().await.unwrap();
        let msg = response_message(&text, 7).expect("valid JSON-RPC answer");
        let content = msg["result"]["content"].as_array().unwrap();
        let warning = content[0]["text"].as_str().unwrap();
        assert!(warning.starts_with("Warning: large result offloading (LRO) failed"));
        // A plain sentence: the path and the OS error go to the event only.
        assert!(!warning.contains("Not a directory"), "{warning}");
        assert!(!warning.contains("os error"), "{warning}");
        assert!(
            !warning.contains(file.path().to_string_lossy().as_ref()),
            "{warning}"
        );
        let kept: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
        let kept = kept["memories"]
            .as_array()
            .expect("the records' array, cut");
        assert!(!kept.is_empty() && kept.len() < 100, "{}", kept.len());
        assert_eq!(kept[..], memories(100, Detail::Full)[..kept.len()]);
    }
    let seen = seen.lock().unwrap();
    let failed: Vec<_> = seen
        .iter()
        .filter(|e| e.name() == "OffloadWriteFailed")
        .collect();
    assert_eq!(failed.len(), 2, "{seen:#?}");
    for event in failed {
        let OffloadEvent::OffloadWriteFailed { error, .. } = event else {
            unreachable!()
        };
        assert!(
            error.contains("Not a directory"),
            "the event says why: {error}"
        );
    }
}

/// A store that holds every write until the test lets it go, so a client
/// can leave while a file is being written.
struct GatedStore {
    inner: FsStore,
    entered: Mutex<mpsc::Sender<()>>,
    gate: Mutex<mpsc::Receiver<()>>,
    written: Mutex<mpsc::Sender<()>>,
}

impl Store for GatedStore {
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        let _ = self.entered.lock().unwrap().send(());
        let _ = self
            .gate
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(20));
        let written = self.inner.write(file_name, contents);
        let _ = self.written.lock().unwrap().send(());
        written
    }
    fn dir(&self) -> &Path {
        self.inner.dir()
    }
}

/// Waits (bounded) until `dir` holds no file at all.
async fn until_empty(dir: &Path, what: &str) {
    common::eventually(&format!("{what}: no file left behind"), || {
        names_in(dir).is_empty()
    })
    .await;
    assert!(names_in(dir).is_empty(), "{what}: {:?}", names_in(dir));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_mid_response_leaves_no_file_behind() {
    for mode in [Mode::StatelessSse, Mode::StatelessJson] {
        let dir = tempfile::tempdir().unwrap();
        let (entered_tx, entered) = mpsc::channel();
        let (open, gate) = mpsc::channel();
        let (written_tx, written) = mpsc::channel();
        let layer = OffloadLayer::builder()
            .store(GatedStore {
                inner: FsStore::new(dir.path()),
                entered: Mutex::new(entered_tx),
                gate: Mutex::new(gate),
                written: Mutex::new(written_tx),
            })
            .build();
        let addr = serve_mcp(mcp_service(mode), Some(layer)).await;
        let body = tools_call(1, "recall_memories", json!({"count": 200}), None);
        let client = reqwest::Client::new();
        let request = tokio::spawn(async move {
            let resp = post_with(&client, addr, &body, &[]).await;
            // The SSE headers arrive before the result; then wait for more.
            let mut resp = resp;
            let _ = resp.chunk().await;
        });
        // The engine is writing the file now.
        tokio::task::spawn_blocking(move || entered.recv_timeout(Duration::from_secs(20)))
            .await
            .unwrap()
            .expect("the write started");
        // The client goes away (its connection closes) mid-response.
        request.abort();
        let _ = request.await;
        // A real sleep, kept: the server must notice the closed TCP
        // connection and drop the response before the write ends. That is
        // the OS and hyper at work, and nothing the test can observe tells
        // when it has happened.
        tokio::time::sleep(Duration::from_millis(300)).await;
        open.send(()).unwrap();
        // The file exists once written; only then can its removal be seen.
        tokio::task::spawn_blocking(move || written.recv_timeout(Duration::from_secs(20)))
            .await
            .unwrap()
            .expect("the write finished");
        until_empty(dir.path(), &format!("{mode:?}")).await;
    }
}

/// A raw HTTP/1.1 upstream that answers every request with `response` and
/// closes the connection, whatever the response says about its length.
async fn broken_upstream(response: Vec<u8>) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let response = response.clone();
            tokio::spawn(async move {
                // Read the request head and its Content-Length body.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if Instant::now() > deadline {
                        return;
                    }
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                let _ = sock.write_all(&response).await;
                let _ = sock.flush().await;
                // Closed here, mid-body when the response promised more.
            });
        }
    });
    addr
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Boxed = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, BoxError>;
type HttpClient =
    hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Boxed>;

/// Forwards one request to `upstream` with hyper's client (502 when it fails).
async fn forward<B>(
    client: HttpClient,
    upstream: SocketAddr,
    req: http::Request<B>,
) -> Result<http::Response<Boxed>, std::convert::Infallible>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    use http_body_util::BodyExt;
    let (mut parts, body) = req.into_parts();
    parts.uri = format!("http://{upstream}/mcp").parse().unwrap();
    parts.headers.remove(http::header::HOST);
    let body: Boxed = body.map_err(Into::into).boxed_unsync();
    Ok(
        match client.request(http::Request::from_parts(parts, body)).await {
            Ok(resp) => resp.map(|b| b.map_err(|e| Box::new(e) as BoxError).boxed_unsync()),
            Err(e) => http::Response::builder()
                .status(502)
                .body(
                    http_body_util::Full::new(bytes::Bytes::from(e.to_string()))
                        .map_err(|e| match e {})
                        .boxed_unsync(),
                )
                .unwrap(),
        },
    )
}

/// An axum app forwarding `/mcp` to `upstream` with hyper's client; with
/// the layer or without it.
async fn forwarder(upstream: SocketAddr, dir: &Path, with_layer: bool) -> SocketAddr {
    let client: HttpClient =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let app = if with_layer {
        let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir));
        Router::new().route_service(
            "/mcp",
            ServiceBuilder::new()
                .layer(layer)
                .service(tower::service_fn(move |req| {
                    forward(client.clone(), upstream, req)
                })),
        )
    } else {
        Router::new().route_service(
            "/mcp",
            tower::service_fn(move |req: http::Request<axum::body::Body>| {
                forward(client.clone(), upstream, req)
            }),
        )
    };
    serve(app).await
}

/// What a client sees: status, the bytes before the body ended, and
/// whether it ended with an error (status 0: the connection ended before
/// a whole head, which a server aborting a body it has not flushed yet
/// may cause as well as a cut one).
async fn observe(addr: SocketAddr, body: &Value) -> (u16, Vec<u8>, bool) {
    let sent = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
        .send();
    let mut resp = match tokio::time::timeout(Duration::from_secs(20), sent)
        .await
        .expect("headers in time")
    {
        Ok(resp) => resp,
        Err(_) => return (0, Vec::new(), true),
    };
    let status = resp.status().as_u16();
    let mut got = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), resp.chunk())
            .await
            .expect("body in time")
        {
            Ok(Some(c)) => got.extend_from_slice(&c),
            Ok(None) => return (status, got, false),
            Err(_) => return (status, got, true),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_mid_body_reach_the_client_unchanged_or_fail_the_call_alone() {
    let dir = tempfile::tempdir().unwrap();
    let large = json!({"jsonrpc": "2.0", "id": 1, "result": memory_tool_result(&memories(100, Detail::Full))})
        .to_string();
    let half = &large[..large.len() / 2];
    // Past the spill size: held in a file, not in memory.
    let huge = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "log line\n".repeat(4 << 20)}
    ]}})
    .to_string();
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}"#;
    let sse_event = format!("event: message\ndata: {progress}\n\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "JSON cut short of its Content-Length",
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{half}",
                large.len()
            )
            .into_bytes(),
        ),
        (
            "JSON cut short of its Content-Length, past the spill size",
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
                huge.len(),
                &huge[..huge.len() * 3 / 4]
            )
            .into_bytes(),
        ),
        (
            "SSE closed mid-stream (no last chunk)",
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{sse_event}\r\n{:x}\r\ndata: {}",
                sse_event.len(),
                half.len() + 6,
                half
            )
            .into_bytes(),
        ),
        (
            "a server error with a body",
            {
                let e = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#;
                format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{e}",
                    e.len()
                )
                .into_bytes()
            },
        ),
        (
            "closed before any response",
            Vec::new(),
        ),
    ];
    let call = tools_call(1, "recall_memories", json!({"count": 100}), None);
    for (name, script) in cases {
        println!("case: {name}");
        let upstream = broken_upstream(script).await;
        let with = forwarder(upstream, dir.path(), true).await;
        let without = forwarder(upstream, dir.path(), false).await;
        let a = observe(with, &call).await;
        let b = observe(without, &call).await;
        if name.starts_with("JSON cut short") {
            // Without the layer the client gets a 200 whose body breaks
            // off; the layer, which held it back, fails that call alone.
            assert!(b.2, "{name}: without the layer the body breaks off");
            assert_eq!(a.0, 200, "{name}: status");
            assert!(!a.2, "{name}: a whole body");
            let answer: Value = serde_json::from_slice(&a.1).expect("JSON");
            assert_eq!(answer["id"], 1);
            assert_eq!(answer["error"]["code"], -32603);
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("broke off"), "{message}");
            continue;
        }
        assert_eq!(a.0, b.0, "{name}: status");
        assert_eq!(a.2, b.2, "{name}: the error reaches the client");
        // The same bytes before it. How many of them reach the client
        // before the connection is torn down is up to the sockets (an
        // abort may drop what is in flight, with or without the layer):
        // what one side got starts what the other got.
        let (short, long) = if a.1.len() <= b.1.len() {
            (&a.1, &b.1)
        } else {
            (&b.1, &a.1)
        };
        assert!(
            long.starts_with(short),
            "{name}: the same bytes before it:\n{}\n---\n{}",
            String::from_utf8_lossy(&a.1),
            String::from_utf8_lossy(&b.1)
        );
        if !a.2 {
            assert_eq!(a.1, b.1, "{name}: a whole body is the same body");
        }
        println!("{name}: status {}, {} bytes, error {}", a.0, a.1.len(), a.2);
    }
    assert!(names_in(dir.path()).is_empty(), "nothing was offloaded");
}
