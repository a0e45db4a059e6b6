//! The layer's streaming paths in process, without sockets: the request tee
//! and the event-stream rewriter, driven with `tower::ServiceExt::oneshot`
//! around a hand-written inner service, with bodies fed chunk by chunk
//! (some through a channel, so the test decides when each chunk exists);
//! a property test cutting one event stream at arbitrary offsets; and the
//! `Debug` output of the public types (never a session id, a tool argument
//! or result data).

use crate::common;

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tower::{Layer, ServiceExt, service_fn};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::{Detail, OffloadResponse};
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::{
    EventHook, OffloadBody, OffloadEvent, OffloadLayer, Outcome, RequestBody, ToolCall,
    rebuild_file,
};
use tower_lro::store::{Store, StoreError};

// ---------------------------------------------------------------------------
// Bodies, requests, responses
// ---------------------------------------------------------------------------

/// The error of a test body (a client or upstream that breaks).
#[derive(Debug, Clone, PartialEq)]
struct Broken(&'static str);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "broken: {}", self.0)
    }
}

impl std::error::Error for Broken {}

type Item = Result<Frame<Bytes>, Broken>;

/// A body whose frames come through a channel: each exists only once the
/// test has sent it; the body ends when the sender is dropped. Its size is
/// unknown and it never claims to be at its end before it is.
struct TestBody {
    rx: mpsc::UnboundedReceiver<Item>,
}

impl Body for TestBody {
    type Data = Bytes;
    type Error = Broken;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.rx.poll_recv(cx)
    }
}

/// A body fed by the test, and its feeder.
fn channel() -> (mpsc::UnboundedSender<Item>, TestBody) {
    let (tx, rx) = mpsc::unbounded_channel();
    (tx, TestBody { rx })
}

/// A body of these frames, then its end.
fn body_of(items: impl IntoIterator<Item = Item>) -> TestBody {
    let (tx, body) = channel();
    for item in items {
        tx.send(item).unwrap();
    }
    body
}

fn data(bytes: impl Into<Bytes>) -> Item {
    Ok(Frame::data(bytes.into()))
}

/// `bytes` cut at `cuts` (any order, duplicates and out-of-range cuts
/// ignored), as data frames.
fn cut_at(bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .copied()
        .filter(|&c| c > 0 && c < bytes.len())
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for c in cuts.into_iter().chain([bytes.len()]) {
        out.push(data(Bytes::copy_from_slice(&bytes[start..c])));
        start = c;
    }
    out
}

/// `bytes` in chunks of `size`.
fn chunks_of(bytes: &[u8], size: usize) -> Vec<Item> {
    let cuts: Vec<usize> = (size..bytes.len()).step_by(size).collect();
    cut_at(bytes, &cuts)
}

/// A frame as seen by the inner service (frames are neither `Clone` nor
/// `PartialEq`).
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Data(Bytes),
    Trailers(HeaderMap),
    Error(Broken),
}

fn seen(item: &Item) -> Seen {
    match item {
        Ok(f) => match (f.data_ref(), f.trailers_ref()) {
            (Some(d), _) => Seen::Data(d.clone()),
            (_, Some(t)) => Seen::Trailers(t.clone()),
            _ => unreachable!("a frame is data or trailers"),
        },
        Err(e) => Seen::Error(e.clone()),
    }
}

/// The data of frames, concatenated.
fn joined(frames: &[Seen]) -> Vec<u8> {
    frames
        .iter()
        .filter_map(|f| match f {
            Seen::Data(d) => Some(&d[..]),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}

/// How long any one frame may take to come (a bound, not a wait: frames
/// come at once or the test has failed).
const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// Reads a body to its end (or its first error), frame by frame.
async fn read_frames<B>(body: &mut B) -> Vec<Seen>
where
    B: Body<Data = Bytes, Error = Broken> + Unpin,
{
    let mut out = Vec::new();
    // Bounded: a body of this file never has more frames than this.
    for _ in 0..1_000_000 {
        let next = tokio::time::timeout(FRAME_TIMEOUT, body.frame())
            .await
            .expect("next frame in time");
        match next {
            None => return out,
            Some(item) => {
                let s = seen(&item);
                out.push(s);
                if item.is_err() {
                    return out;
                }
            }
        }
    }
    panic!("body did not end");
}

/// Reads whole frames until exactly `n` bytes came (fails on more: nothing
/// else was sent yet).
async fn read_exactly(body: &mut OffloadBody<TestBody>, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < n {
        let frame = tokio::time::timeout(FRAME_TIMEOUT, body.frame())
            .await
            .unwrap_or_else(|_| panic!("only {} of {n} bytes came", out.len()))
            .expect("body not ended")
            .expect("no error");
        let d = frame.into_data().expect("a data frame");
        out.extend_from_slice(&d);
    }
    assert_eq!(out.len(), n, "more than was sent so far");
    out
}

/// A response body to its end: its bytes and the error that ended it.
async fn read_response(body: &mut OffloadBody<TestBody>) -> (Vec<u8>, Option<Broken>) {
    let frames = read_frames(body).await;
    let error = frames.iter().find_map(|f| match f {
        Seen::Error(e) => Some(e.clone()),
        _ => None,
    });
    assert!(
        frames.iter().all(|f| !matches!(f, Seen::Trailers(_))),
        "no trailers were sent"
    );
    (joined(&frames), error)
}

/// Reads a request body as an inner service does, to its end.
async fn read_request(body: &mut RequestBody<TestBody>) -> Vec<Seen> {
    read_frames(body).await
}

/// A POST to the MCP endpoint.
fn post(body: TestBody) -> Request<TestBody> {
    Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(body)
        .unwrap()
}

fn json_response(body: TestBody) -> Response<TestBody> {
    Response::builder()
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap()
}

fn sse_response(body: TestBody) -> Response<TestBody> {
    Response::builder()
        .header(CONTENT_TYPE, "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap()
}

// ---------------------------------------------------------------------------
// MCP messages
// ---------------------------------------------------------------------------

/// A `tools/call` request.
fn tools_call(id: Value, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

/// A memory tool's result with `n` memories (150 medium ones are ~50k
/// tokens, far over the default threshold).
fn memories(n: usize, detail: Detail) -> Value {
    memory_tool_result(&MemoryGenerator::new(11).memories(n, detail))
}

fn answer(id: &Value, result: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn progress(n: u64) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": n, "total": 3}}).to_string()
}

fn log_message(text: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "t", "data": text}}).to_string()
}

/// The descriptor carried by a rewritten result message.
fn descriptor(message: &Value) -> OffloadResponse {
    let text = message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no descriptor in {message:.300}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not a descriptor ({e}): {text:.300}"))
}

/// `message` answers `id` with a descriptor of `original`, whose file
/// rebuilds `original` exactly.
fn assert_offloaded(message: &Value, id: &Value, original: &Value) -> OffloadResponse {
    assert_eq!(message["jsonrpc"], "2.0", "{message:.300}");
    assert_eq!(message["id"], *id);
    assert!(message.get("error").is_none());
    let d = descriptor(message);
    assert!(d.offloaded);
    let records = original["structuredContent"]["memories"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(d.summary.count, records);
    assert_eq!(d.jq_recipes.len(), 10);
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(rebuilt, *original, "the file rebuilds the original result");
    d
}

/// The files in `dir`.
fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

// ---------------------------------------------------------------------------
// Server-sent events, read back
// ---------------------------------------------------------------------------

/// Cuts an event stream into events exactly as sent (each up to and
/// including its blank line; lines end with CRLF, LF or CR), and what is
/// left after the last one.
fn split_events(s: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut events = Vec::new();
    let (mut start, mut line_start, mut i) = (0, 0, 0);
    while i < s.len() {
        let end = match s[i] {
            b'\n' => i + 1,
            b'\r' if s.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        let empty = i == line_start;
        line_start = end;
        i = end;
        if empty {
            events.push(&s[start..end]);
            start = end;
        }
    }
    (events, &s[start..])
}

/// The lines of an event with their terminators.
fn lines(event: &[u8]) -> Vec<(&str, &str)> {
    let text = std::str::from_utf8(event).unwrap();
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let p = rest.find(['\r', '\n']).unwrap_or(rest.len());
        let term = if rest[p..].starts_with("\r\n") {
            2
        } else {
            usize::from(p < rest.len())
        };
        out.push((&rest[..p], &rest[p..p + term]));
        rest = &rest[p + term..];
    }
    out
}

/// The event's data lines joined (`None` without any).
fn event_data(event: &[u8]) -> Option<String> {
    let data: Vec<&str> = lines(event)
        .into_iter()
        .filter_map(|(l, _)| l.strip_prefix("data:"))
        .map(|v| v.strip_prefix(' ').unwrap_or(v))
        .collect();
    (!data.is_empty()).then(|| data.join("\n"))
}

/// Checks a rewritten result event against the one sent: the same lines
/// in the same order with the same terminators, except that its data lines
/// are now one `data: ` line (where the first was, with its terminator)
/// holding a valid JSON-RPC response to `id` whose result is a descriptor
/// of `original`.
fn assert_rewritten(got: &[u8], sent: &[u8], id: &Value, original: &Value) -> OffloadResponse {
    let got_lines = lines(got);
    let mut expected: Vec<(&str, &str)> = Vec::new();
    let mut data_done = false;
    for (l, t) in lines(sent) {
        if l.starts_with("data:") {
            if !data_done {
                expected.push(("data: <message>", t));
                data_done = true;
            }
        } else {
            expected.push((l, t));
        }
    }
    assert_eq!(got_lines.len(), expected.len(), "lines of the result event");
    let mut message = None;
    for ((gl, gt), (el, et)) in got_lines.iter().zip(&expected) {
        assert_eq!(gt, et, "line terminators kept");
        if *el == "data: <message>" {
            let m = gl.strip_prefix("data: ").expect("one `data: ` line");
            message = Some(m);
        } else {
            assert_eq!(gl, el, "other lines kept");
        }
    }
    let message: Value = serde_json::from_str(message.expect("a data line")).unwrap();
    assert_offloaded(&message, id, original)
}

// ---------------------------------------------------------------------------
// The request tee
// ---------------------------------------------------------------------------

/// The request frames an inner service saw.
type Recorded = Arc<Mutex<Vec<Seen>>>;

/// An inner service that reads the whole request, records the frames it
/// saw, and answers the `tools/call` it read with `result` as JSON.
fn json_answering(
    result: Value,
    recorded: Recorded,
) -> impl tower::Service<
    Request<RequestBody<TestBody>>,
    Response = Response<TestBody>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<TestBody>, Infallible>> + Send,
> + Clone {
    json_answering_in(result, recorded, usize::MAX)
}

/// [`json_answering`], the answer sent in frames of `chunk` bytes.
fn json_answering_in(
    result: Value,
    recorded: Recorded,
    chunk: usize,
) -> impl tower::Service<
    Request<RequestBody<TestBody>>,
    Response = Response<TestBody>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<TestBody>, Infallible>> + Send,
> + Clone {
    service_fn(move |req: Request<RequestBody<TestBody>>| {
        let result = result.clone();
        let recorded = recorded.clone();
        async move {
            let mut body = req.into_body();
            let frames = read_request(&mut body).await;
            let request: Value = serde_json::from_slice(&joined(&frames)).unwrap();
            *recorded.lock().unwrap() = frames;
            let out = answer(&request["id"], &result).to_string();
            Ok(json_response(body_of(chunks_of(out.as_bytes(), chunk))))
        }
    })
}

#[tokio::test]
async fn the_request_reaches_the_inner_service_chunk_for_chunk_and_is_still_classified() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!("req-7");
    let request = tools_call(
        id.clone(),
        "recall_memories",
        json!({"query": "a query, \"quoted\" \u{e9}", "pad": "y".repeat(3000)}),
    )
    .to_string();
    // Chunks of 1 to 13 bytes (so a chunk ends inside every kind of token
    // and inside a multi-byte character), an empty chunk, then trailers.
    let bytes = request.as_bytes();
    let mut cuts = Vec::new();
    let mut at = 0;
    for size in (1..=13).cycle() {
        at += size;
        if at >= bytes.len() {
            break;
        }
        cuts.push(at);
    }
    let mut sent = cut_at(bytes, &cuts);
    sent.insert(40, data(Bytes::new()));
    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", HeaderValue::from_static("abc"));
    sent.push(Ok(Frame::trailers(trailers)));
    let expected: Vec<Seen> = sent.iter().map(seen).collect();
    assert!(expected.len() > 400, "{} frames", expected.len());

    let recorded = Recorded::default();
    let inner = json_answering(original.clone(), recorded.clone());
    let response = layer
        .layer(inner)
        .oneshot(post(body_of(sent)))
        .await
        .unwrap();
    assert_eq!(
        *recorded.lock().unwrap(),
        expected,
        "every frame, empty data and trailers included, as sent"
    );
    let (body, error) = read_response(&mut response.into_body()).await;
    assert!(error.is_none());
    let message: Value = serde_json::from_slice(&body).unwrap();
    assert_offloaded(&message, &id, &original);
}

#[tokio::test]
async fn a_request_in_one_byte_chunks_is_classified() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!(41);
    let request = tools_call(id.clone(), "recall_memories", json!({"query": "x"})).to_string();
    let sent = chunks_of(request.as_bytes(), 1);
    let expected: Vec<Seen> = sent.iter().map(seen).collect();
    let recorded = Recorded::default();
    let response = layer
        .layer(json_answering(original.clone(), recorded.clone()))
        .oneshot(post(body_of(sent)))
        .await
        .unwrap();
    assert_eq!(*recorded.lock().unwrap(), expected);
    let (body, _) = read_response(&mut response.into_body()).await;
    assert_offloaded(&serde_json::from_slice(&body).unwrap(), &id, &original);
}

/// A `tools/call` whose serialised length is exactly `len` bytes.
fn call_of_length(id: u64, len: usize) -> String {
    let base = tools_call(json!(id), "recall_memories", json!({"pad": ""})).to_string();
    assert!(base.len() <= len);
    let call = tools_call(
        json!(id),
        "recall_memories",
        json!({"pad": "p".repeat(len - base.len())}),
    )
    .to_string();
    assert_eq!(call.len(), len);
    call
}

#[tokio::test]
async fn a_request_over_the_cap_reaches_the_inner_service_whole_and_its_response_passes_untouched()
{
    const CAP: usize = 4096;
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir.path()))
        .max_request_bytes(CAP)
        .build();
    let original = memories(150, Detail::Medium);
    for (len, offloaded) in [
        (CAP - 1, true),
        (CAP, true),
        (CAP + 1, false),
        (3 * CAP, false),
    ] {
        let request = call_of_length(len as u64, len);
        let sent = chunks_of(request.as_bytes(), 100);
        let expected: Vec<Seen> = sent.iter().map(seen).collect();
        let recorded = Recorded::default();
        let response = layer
            .clone()
            .layer(json_answering(original.clone(), recorded.clone()))
            .oneshot(post(body_of(sent)))
            .await
            .unwrap();
        assert_eq!(
            *recorded.lock().unwrap(),
            expected,
            "{len} bytes: all of it reached the inner service"
        );
        let (body, _) = read_response(&mut response.into_body()).await;
        let message: Value = serde_json::from_slice(&body).unwrap();
        if offloaded {
            assert_offloaded(&message, &json!(len), &original);
        } else {
            assert_eq!(
                body,
                answer(&json!(len), &original).to_string().into_bytes(),
                "{len} bytes, over the cap: the answer byte for byte"
            );
        }
    }
    assert_eq!(files_in(dir.path()), 2, "only the calls within the cap");
}

#[tokio::test]
async fn an_inner_service_that_does_not_read_the_request_to_its_end_gets_its_response_through() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let answer_text = answer(&json!(5), &original).to_string();
    let request = tools_call(json!(5), "recall_memories", json!({"query": "q"})).to_string();
    // How many frames the inner service reads before answering.
    for frames_read in [0, 1, 3] {
        let answered = answer_text.clone();
        let inner = service_fn(move |req: Request<RequestBody<TestBody>>| {
            let answer_text = answered.clone();
            async move {
                let mut body = req.into_body();
                for _ in 0..frames_read {
                    body.frame().await.unwrap().unwrap();
                }
                Ok::<_, Infallible>(json_response(body_of(chunks_of(
                    answer_text.as_bytes(),
                    4096,
                ))))
            }
        });
        let response = layer
            .clone()
            .layer(inner)
            .oneshot(post(body_of(chunks_of(request.as_bytes(), 10))))
            .await
            .unwrap();
        let (body, error) = read_response(&mut response.into_body()).await;
        assert!(error.is_none());
        assert_eq!(
            body,
            answer_text.as_bytes(),
            "{frames_read} frames read: untouched"
        );
    }
    // A client body that breaks: the inner service sees the error as it
    // came, and its answer passes untouched.
    let mut sent = chunks_of(request.as_bytes(), 10);
    sent.truncate(3);
    sent.push(Err(Broken("client went away")));
    let expected: Vec<Seen> = sent.iter().map(seen).collect();
    let recorded = Recorded::default();
    let rec = recorded.clone();
    let answer_text2 = answer_text.clone();
    let inner = service_fn(move |req: Request<RequestBody<TestBody>>| {
        let rec = rec.clone();
        let answer_text = answer_text2.clone();
        async move {
            let mut body = req.into_body();
            *rec.lock().unwrap() = read_request(&mut body).await;
            Ok::<_, Infallible>(json_response(body_of([data(answer_text)])))
        }
    });
    let response = layer
        .clone()
        .layer(inner)
        .oneshot(post(body_of(sent)))
        .await
        .unwrap();
    assert_eq!(*recorded.lock().unwrap(), expected);
    let (body, _) = read_response(&mut response.into_body()).await;
    assert_eq!(body, answer_text.as_bytes());
    assert_eq!(files_in(dir.path()), 0, "nothing offloaded");
}

// ---------------------------------------------------------------------------
// The event-stream rewriter
// ---------------------------------------------------------------------------

/// An inner service that reads the whole request and answers with an event
/// stream fed through the returned sender.
fn sse_answering(
    body: TestBody,
) -> impl tower::Service<
    Request<RequestBody<TestBody>>,
    Response = Response<TestBody>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<TestBody>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    // Shared, so the service is Clone (the layer needs a Clone inner service).
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(body)));
    service_fn(move |req: Request<RequestBody<TestBody>>| {
        let body = slot.lock().unwrap().take().expect("one call");
        async move {
            let mut req_body = req.into_body();
            read_request(&mut req_body).await;
            Ok::<_, Infallible>(sse_response(body))
        }
    })
}

/// Sends `request` through `layer` to an inner service answering with the
/// event stream `stream` (already fed, or fed later by the test).
async fn sse_call(
    layer: &OffloadLayer,
    request: &Value,
    stream: TestBody,
) -> OffloadBody<TestBody> {
    let response = layer
        .clone()
        .layer(sse_answering(stream))
        .oneshot(post(body_of([data(request.to_string())])))
        .await
        .unwrap();
    assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
    assert!(response.headers().get(CONTENT_LENGTH).is_none());
    response.into_body()
}

#[tokio::test]
async fn events_before_the_result_reach_the_client_before_it_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!(2);
    let (tx, stream) = channel();
    let mut body = sse_call(
        &layer,
        &tools_call(id.clone(), "recall_memories", json!({"query": "q"})),
        stream,
    )
    .await;

    // A priming event, then a progress event in two chunks: both reach the
    // client while the result does not exist yet.
    let priming = "id: 0\nretry: 1000\ndata:\n\n";
    let progress1 = format!("event: message\nid: 1\ndata: {}\n\n", progress(1));
    tx.send(data(priming)).unwrap();
    tx.send(data(progress1[..20].to_owned())).unwrap();
    tx.send(data(progress1[20..].to_owned())).unwrap();
    let got = read_exactly(&mut body, priming.len() + progress1.len()).await;
    assert_eq!(got, format!("{priming}{progress1}").into_bytes());

    // A large log notification (read, not ours), a comment, and a second
    // progress event in the same chunk as the start of the result: all go
    // out before the rest of the result is sent.
    let log = format!(
        "event: message\nid: 1a\ndata: {}\n\n: still working\n\n",
        log_message(&"L".repeat(20_000))
    );
    let progress2 = format!("event: message\nid: 1b\ndata: {}\n\n", progress(2));
    let result_event = format!(
        "event: message\nid: 2\ndata: {}\n\n",
        answer(&id, &original)
    );
    let (r1, rest) = result_event.split_at(100);
    let (r2, r3) = rest.split_at(rest.len() / 2);
    tx.send(data(log.clone())).unwrap();
    tx.send(data(format!("{progress2}{r1}"))).unwrap();
    let got = read_exactly(&mut body, log.len() + progress2.len()).await;
    assert_eq!(got, format!("{log}{progress2}").into_bytes());

    // The rest of the result, the events after it (the first in the same
    // chunk as its end), then the end of the stream.
    let after = format!(
        "event: message\nid: 3\ndata: {}\n\n: bye\n\n",
        log_message("after the result")
    );
    tx.send(data(r2.to_owned())).unwrap();
    tx.send(data(format!("{r3}{}", &after[..10]))).unwrap();
    tx.send(data(after[10..].to_owned())).unwrap();
    drop(tx);
    let (rest, error) = read_response(&mut body).await;
    assert!(error.is_none());
    let (events, tail) = split_events(&rest);
    assert!(tail.is_empty());
    assert_eq!(events.len(), 3);
    assert_rewritten(events[0], result_event.as_bytes(), &id, &original);
    assert_eq!(
        events[1..].concat(),
        after.as_bytes(),
        "events after the result untouched"
    );
    assert_eq!(files_in(dir.path()), 1);
    assert_eq!(layer.buffered_bytes(), 0, "every buffer given back");
}

/// The stream of [`sse_framing_is_kept_and_only_the_result_changes`]: CRLF
/// and CR line ends, a priming event with empty data and a `retry:`, a
/// comment-only event, a notification over two data lines, the result as
/// pretty JSON over many data lines (`data: ` and `data:`) followed by a
/// `retry:` line, and events after it. Returns the events and the index of
/// the result.
fn awkward_stream(id: &Value, result: &Value) -> (Vec<String>, usize) {
    let pretty = serde_json::to_string_pretty(&answer(id, result)).unwrap();
    let data = common::data_lines(&pretty);
    let events = vec![
        "id: prime\r\nretry: 500\r\ndata:\r\n\r\n".to_owned(),
        ": keep-alive\r\n\r\n".to_owned(),
        "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\n".to_owned(),
        format!(": cr only\rid: 1b\rdata: {}\r\r", log_message("cr")),
        format!("event: message\r\nid: 2\r\n{data}retry: 1000\r\n\r\n"),
        format!("event: message\r\nid: 3\r\ndata: {}\r\n\r\n", log_message("after")),
        ": trailing comment\r\n\r\n".to_owned(),
    ];
    (events, 4)
}

#[tokio::test]
async fn sse_framing_is_kept_and_only_the_result_changes() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .threshold_tokens(200),
    );
    let original = memories(20, Detail::Medium);
    let id = json!("call-2");
    let (events, at) = awkward_stream(&id, &original);
    let stream = events.concat().into_bytes();
    let request = tools_call(id.clone(), "recall_memories", json!({}));
    // Cut after every CR (so every CRLF is split between its CR and LF),
    // in one chunk, and one byte per chunk.
    let after_cr: Vec<usize> = (1..stream.len())
        .filter(|&i| stream[i - 1] == b'\r')
        .collect();
    let cuttings: [(&str, Vec<Item>); 3] = [
        ("after every CR", cut_at(&stream, &after_cr)),
        ("one chunk", cut_at(&stream, &[])),
        ("one byte per chunk", chunks_of(&stream, 1)),
    ];
    for (how, chunks) in cuttings {
        let mut body = sse_call(&layer, &request, body_of(chunks)).await;
        let (got, error) = read_response(&mut body).await;
        assert!(error.is_none());
        let (got_events, tail) = split_events(&got);
        assert!(tail.is_empty(), "{how}");
        assert_eq!(got_events.len(), events.len(), "{how}");
        for (i, (g, e)) in got_events.iter().zip(&events).enumerate() {
            if i == at {
                assert_rewritten(g, e.as_bytes(), &id, &original);
            } else {
                assert_eq!(
                    String::from_utf8_lossy(g),
                    e.as_str(),
                    "{how}: event {i} untouched"
                );
            }
        }
    }
    assert_eq!(files_in(dir.path()), 3);
}

#[tokio::test]
async fn an_upstream_error_reaches_the_client_after_the_events_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!(9);
    let request = tools_call(id.clone(), "recall_memories", json!({}));
    let priming = "id: 0\ndata:\n\n";
    let progress1 = format!("event: message\nid: 1\ndata: {}\n\n", progress(1));
    let result_event = format!(
        "event: message\nid: 2\ndata: {}\n\n",
        answer(&id, &original)
    );

    // Mid-result, through a channel: the events before it have been
    // delivered when the error comes; the partial result follows as it came,
    // then the error.
    let (tx, stream) = channel();
    let mut body = sse_call(&layer, &request, stream).await;
    tx.send(data(format!("{priming}{progress1}"))).unwrap();
    let got = read_exactly(&mut body, priming.len() + progress1.len()).await;
    assert_eq!(got, format!("{priming}{progress1}").into_bytes());
    let half = &result_event[..result_event.len() / 2];
    tx.send(data(half.to_owned())).unwrap();
    tx.send(Err(Broken("upstream reset"))).unwrap();
    let (rest, error) = read_response(&mut body).await;
    assert_eq!(error, Some(Broken("upstream reset")));
    assert_eq!(rest, half.as_bytes(), "the partial event as it came");
    assert_eq!(files_in(dir.path()), 0, "no file for a broken result");
    drop((tx, body));
    assert_eq!(layer.buffered_bytes(), 0, "the held half given back");

    // After a whole result and an event after it: both delivered (the
    // result rewritten), then the error.
    let after = format!("event: message\nid: 3\ndata: {}\n\n", log_message("after"));
    let mut body = sse_call(
        &layer,
        &request,
        body_of([
            data(format!("{priming}{progress1}")),
            data(result_event.clone()),
            data(after.clone()),
            Err(Broken("upstream reset")),
        ]),
    )
    .await;
    let (got, error) = read_response(&mut body).await;
    assert_eq!(error, Some(Broken("upstream reset")));
    let (events, tail) = split_events(&got);
    assert!(tail.is_empty());
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[..2].concat(),
        format!("{priming}{progress1}").as_bytes()
    );
    assert_rewritten(events[2], result_event.as_bytes(), &id, &original);
    assert_eq!(events[3], after.as_bytes());
    drop(body);

    // At once: the error is the first thing the client sees.
    let mut body = sse_call(&layer, &request, body_of([Err(Broken("refused"))])).await;
    let (got, error) = read_response(&mut body).await;
    assert!(got.is_empty());
    assert_eq!(error, Some(Broken("refused")));
    drop(body);
    assert_eq!(layer.buffered_bytes(), 0);
}

/// JSON-RPC ids are chosen by each side independently: a server's request
/// to the client (sampling, elicitation, ping) on the stream of a
/// `tools/call` may carry the same id as that call. It is not the call's
/// answer: it passes untouched, and the result that follows is still
/// offloaded.
#[tokio::test]
async fn a_server_request_with_the_calls_id_is_not_taken_for_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!(2);
    let request = tools_call(id.clone(), "recall_memories", json!({}));
    // Large enough (~30 KB of prompt) that the layer has to read it.
    let sampling = json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "context ".repeat(4000)}}],
        "maxTokens": 100
    }});
    let server_request = format!("event: message\nid: 1\ndata: {sampling}\n\n");
    let result_event = format!(
        "event: message\nid: 2\ndata: {}\n\n",
        answer(&id, &original)
    );
    let mut body = sse_call(
        &layer,
        &request,
        body_of([data(server_request.clone()), data(result_event.clone())]),
    )
    .await;
    let (got, error) = read_response(&mut body).await;
    assert!(error.is_none());
    let (events, _) = split_events(&got);
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0],
        server_request.as_bytes(),
        "the request untouched"
    );
    assert_rewritten(events[1], result_event.as_bytes(), &id, &original);
}

#[tokio::test]
async fn two_watched_results_in_one_stream_are_both_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .threshold_tokens(200),
    );
    let original = memories(20, Detail::Medium);
    let small = json!({"content": [{"type": "text", "text": "small"}]});
    // A legacy batch: two large calls and a small one.
    let batch = json!([
        tools_call(json!(1), "recall_memories", json!({})),
        tools_call(json!(2), "recall_memories", json!({})),
        tools_call(json!(3), "recall_memories", json!({})),
    ]);
    let e =
        |id: u64, result: &Value| format!("id: e{id}\ndata: {}\n\n", answer(&json!(id), result));
    let events = [
        e(2, &original),
        format!("data: {}\n\n", progress(1)),
        e(3, &small),
        e(1, &original),
        format!("data: {}\n\n", log_message("after")),
    ];
    let stream = events.concat().into_bytes();
    let mut body = sse_call(&layer, &batch, body_of(chunks_of(&stream, 333))).await;
    let (got, _) = read_response(&mut body).await;
    let (got_events, tail) = split_events(&got);
    assert!(tail.is_empty());
    assert_eq!(got_events.len(), 5);
    assert_rewritten(got_events[0], events[0].as_bytes(), &json!(2), &original);
    assert_eq!(got_events[1], events[1].as_bytes());
    assert_eq!(
        got_events[2],
        events[2].as_bytes(),
        "a small result untouched"
    );
    assert_rewritten(got_events[3], events[3].as_bytes(), &json!(1), &original);
    assert_eq!(got_events[4], events[4].as_bytes());
}

// ---------------------------------------------------------------------------
// One event stream, cut anywhere
// ---------------------------------------------------------------------------

/// A memory tool's result with three tiny memories (~50 tokens): kept
/// small, so that every cut of the stream around it can be tried.
/// A small result, yet larger than its descriptor (a descriptor is never
/// larger than the result it replaces): 80 short records, about 1,300
/// estimated tokens.
fn tiny_result() -> Value {
    let tiny: Vec<Value> = (0..80)
        .map(|i| json!({"id": format!("m{i}"), "title": format!("title of record {i} about caching"), "namespace": "ns"}))
        .collect();
    memory_tool_result(&tiny)
}

/// A stream with a priming event (CRLF), a progress event (LF), a comment,
/// a small tools/call result offloaded under a low threshold (pretty JSON
/// over many CRLF data lines, `data:` with and without the space), and an
/// event after it.
fn cut_stream() -> (Value, Vec<u8>) {
    let id = json!(2);
    let original = tiny_result();
    let pretty = serde_json::to_string_pretty(&answer(&id, &original)).unwrap();
    let data: String = pretty
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 3 == 0 {
                format!("data:{l}\r\n")
            } else {
                format!("data: {l}\r\n")
            }
        })
        .collect();
    let stream = [
        "id: prime\r\ndata:\r\n\r\n".to_owned(),
        format!("event: message\nid: 1\ndata: {}\n\n", progress(1)),
        ": comment\n\n".to_owned(),
        format!("event: message\r\nid: 2\r\n{data}\r\n"),
        format!("id: 3\ndata: {}\n\n", log_message("after")),
    ]
    .concat();
    (id, stream.into_bytes())
}

/// Runs the stream cut at `cuts` through the layer; returns what the client
/// got, with the file's ULID replaced by `<ULID>`, and removes the file.
async fn through_layer(
    layer: &OffloadLayer,
    dir: &std::path::Path,
    stream: &[u8],
    cuts: &[usize],
) -> String {
    let request = tools_call(json!(2), "recall_memories", json!({"query": "q"}));
    let mut body = sse_call(layer, &request, body_of(cut_at(stream, cuts))).await;
    let (got, error) = read_response(&mut body).await;
    assert!(error.is_none());
    let got = String::from_utf8(got).unwrap();
    const PREFIX: &str = "atlatl-recall-";
    let at = got.find(PREFIX).expect("a file named in the output") + PREFIX.len();
    let ulid = got[at..at + 26].to_owned();
    std::fs::remove_file(dir.join(format!("{PREFIX}{ulid}.jsonl"))).expect("the file exists");
    got.replace(&ulid, "<ULID>")
}

#[test]
fn one_event_stream_cut_anywhere_gives_the_same_events() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .threshold_tokens(10),
    );
    let (id, stream) = cut_stream();
    let original = tiny_result();

    // The reference: the stream in one chunk. Its untouched events are the
    // bytes sent; its result is rewritten.
    let reference = rt.block_on(through_layer(&layer, dir.path(), &stream, &[]));
    let (sent, _) = split_events(&stream);
    let (got, tail) = split_events(reference.as_bytes());
    assert!(tail.is_empty());
    assert_eq!(got.len(), sent.len());
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        if i == 3 {
            let event = String::from_utf8_lossy(g).replace("<ULID>", "01JXXXXXXXXXXXXXXXXXXXXXXX");
            let data = event_data(event.as_bytes()).unwrap();
            let message: Value = serde_json::from_str(&data).unwrap();
            assert_eq!(message["id"], id);
            let d = descriptor(&message);
            assert!(d.offloaded);
            assert_eq!(d.summary.count, 80);
            assert!(event.starts_with("event: message\r\nid: 2\r\ndata: {"));
        } else {
            assert_eq!(g, s, "event {i} untouched");
        }
    }
    // Check the reference's file really holds the result (rerun, keeping it).
    rt.block_on(async {
        let request = tools_call(json!(2), "recall_memories", json!({"query": "q"}));
        let mut body = sse_call(&layer, &request, body_of(cut_at(&stream, &[]))).await;
        let (got, _) = read_response(&mut body).await;
        let (events, _) = split_events(&got);
        assert_rewritten(events[3], sent[3], &id, &original);
    });
    for f in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }

    // Every cut at a line break and where a `data:` prefix can be split
    // (the SSE framing: CR, LF, blank lines, `data:` with and without its
    // space), and every 37th byte elsewhere (the result's JSON).
    let breaks: Vec<usize> = (0..stream.len())
        .filter(|&i| matches!(stream[i], b'\r' | b'\n'))
        .collect();
    let near_break = |c: usize| {
        let i = breaks.partition_point(|&b| b <= c);
        i > 0 && matches!(c - breaks[i - 1], 0..=2 | 5..=7)
    };
    let cuts: Vec<usize> = (1..stream.len())
        .filter(|&c| near_break(c) || c % 37 == 0)
        .collect();
    let started = std::time::Instant::now();
    rt.block_on(async {
        for &cut in &cuts {
            let got = through_layer(&layer, dir.path(), &stream, &[cut]).await;
            assert!(got == reference, "cut at {cut}:\n{got}\n---\n{reference}");
        }
        // And cut everywhere: one byte per chunk.
        let every: Vec<usize> = (1..stream.len()).collect();
        let got = through_layer(&layer, dir.path(), &stream, &every).await;
        assert!(got == reference, "one byte per chunk:\n{got}");
    });
    let single = started.elapsed();

    // Sets of up to 40 cuts chosen by proptest.
    let cases = 256;
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let len = stream.len();
    let started = std::time::Instant::now();
    runner
        .run(&prop::collection::vec(1..len, 0..40), |cuts| {
            let got = rt.block_on(through_layer(&layer, dir.path(), &stream, &cuts));
            prop_assert_eq!(&got, &reference, "cuts {:?}", cuts);
            Ok(())
        })
        .unwrap();
    eprintln!(
        "{} single cuts in {single:?}; {cases} proptest cut sets in {:?}",
        cuts.len(),
        started.elapsed()
    );
    assert_eq!(files_in(dir.path()), 0, "every case's file removed");
    assert_eq!(layer.buffered_bytes(), 0);
}

// ---------------------------------------------------------------------------
// Debug never shows session ids, arguments or result data
// ---------------------------------------------------------------------------

const SESSION: &str = "SESSIONMARKER-4b1d9e";
const ARG: &str = "ARGMARKER-c3f07a";
const TASK: &str = "TASKMARKER-77e2ab";
const DATA: &str = "DATAMARKER-0e9d5f";

fn assert_clean(what: &str, debug: &str) {
    for marker in [SESSION, ARG, TASK, DATA] {
        assert!(
            !debug.contains(marker),
            "{what}'s Debug shows {marker}: {debug}"
        );
    }
}

/// A result of 300 records carrying [`DATA`] in their values, in their
/// category field and in `_meta`.
fn marked_result() -> Value {
    let rows: Vec<Value> = (0..300)
        .map(|i| {
            json!({
                "id": i,
                "title": format!("{DATA} title {i}"),
                "category": format!("{DATA}-cat{}", i % 3),
                "score": f64::from(i) / 300.0,
                "body": format!("{DATA} body of row {i}"),
            })
        })
        .collect();
    json!({
        "content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}],
        "_meta": {"trace": DATA},
    })
}

/// An MCP-like inner service: `initialize` answered with a session id,
/// a task-augmented `tools/call` with a `CreateTaskResult` (task id
/// [`TASK`]), any other `tools/call` and `tasks/result` with
/// [`marked_result`].
fn mcp_like() -> impl tower::Service<
    Request<RequestBody<TestBody>>,
    Response = Response<TestBody>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<TestBody>, Infallible>> + Send,
> + Clone
+ std::fmt::Debug {
    service_fn(|req: Request<RequestBody<TestBody>>| async move {
        let mut body = req.into_body();
        let request: Value =
            serde_json::from_slice(&joined(&read_request(&mut body).await)).unwrap();
        let id = &request["id"];
        let (result, session) = match request["method"].as_str() {
            Some("initialize") => (
                json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}),
                true,
            ),
            Some("tools/call") if request["params"].get("task").is_some() => (
                json!({"task": {"taskId": TASK, "status": "working", "createdAt": "2026-11-21T00:00:00Z", "lastUpdatedAt": "2026-11-21T00:00:00Z", "ttl": 60000}}),
                false,
            ),
            _ => (marked_result(), false),
        };
        let mut response = json_response(body_of([data(answer(id, &result).to_string())]));
        if session {
            response
                .headers_mut()
                .insert("mcp-session-id", HeaderValue::from_static(SESSION));
        }
        Ok::<_, Infallible>(response)
    })
}

/// A store whose writes always fail (for `Truncated`, `OffloadWriteFailed`).
struct FailingStore(std::path::PathBuf);

impl Store for FailingStore {
    fn write(&self, file_name: &str, _: &[u8]) -> Result<std::path::PathBuf, StoreError> {
        Err(StoreError::Write {
            path: self.0.join(file_name),
            source: std::io::Error::other("disk full"),
        })
    }
    fn dir(&self) -> &std::path::Path {
        &self.0
    }
}

#[tokio::test]
async fn debug_shows_settings_and_counts_never_sessions_arguments_or_data() {
    let dir = tempfile::tempdir().unwrap();
    let events = Arc::new(Mutex::new(Vec::<OffloadEvent>::new()));
    let sink = events.clone();
    let builder = OffloadLayer::builder()
        .config(
            OffloadConfig::default()
                .output_dir(dir.path())
                .threshold_tokens(1234),
        )
        .max_request_bytes(98_765)
        .event_hook(EventHook::callback(move |e| {
            sink.lock().unwrap().push(e.clone())
        }));
    let builder_debug = format!("{builder:?}");
    let layer = builder.build();
    let service = layer.layer(mcp_like());
    let send = |body: Value, session: Option<&str>| {
        let mut req = post(body_of([data(body.to_string())]));
        if let Some(s) = session {
            req.headers_mut()
                .insert("mcp-session-id", HeaderValue::from_str(s).unwrap());
        }
        let service = service.clone();
        async move {
            let response = service.oneshot(req).await.unwrap();
            let (body, _) = read_response(&mut response.into_body()).await;
            serde_json::from_slice::<Value>(&body).unwrap()
        }
    };

    // A proxy's session: remembered, its calls then pass untouched.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "lro-proxy", "version": "1", "proxy": true}}});
    send(init, None).await;
    let call = tools_call(json!(2), "search_docs", json!({"query": ARG}));
    let passed = send(call.clone(), Some(SESSION)).await;
    assert_eq!(
        passed["result"],
        marked_result(),
        "the proxy session's answer untouched"
    );
    // A task-augmented call: its task remembered; its result, fetched
    // later, offloaded under the call's name.
    let mut augmented = tools_call(
        json!(3),
        "search_docs",
        json!({"query": ARG, "filter": {"owner": ARG}}),
    );
    augmented["params"]["task"] = json!({"ttl": 60000});
    let created = send(augmented, None).await;
    assert_eq!(created["result"]["task"]["taskId"], TASK);
    let fetched = send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": TASK}}),
        None,
    )
    .await;
    let d = descriptor(&fetched);
    assert!(d.file_path.contains("atlatl-search-"), "{}", d.file_path);
    // A 2026-07-28 proxy declared in `_meta`: a `PassedThrough` event.
    let mut meta_proxy = tools_call(json!(5), "search_docs", json!({"query": ARG}));
    meta_proxy["params"]["_meta"] =
        json!({"io.modelcontextprotocol/clientInfo": {"name": "p", "proxy": true}});
    send(meta_proxy, None).await;

    // The layer and its service: settings and counts.
    let layer_debug = format!("{layer:?}");
    let service_debug = format!("{service:?}");
    let offloader_debug = format!("{:?}", layer.offloader());
    for (what, debug) in [
        ("OffloadLayerBuilder", &builder_debug),
        ("OffloadLayer", &layer_debug),
        ("OffloadService", &service_debug),
        ("Offloader", &offloader_debug),
    ] {
        assert_clean(what, debug);
        assert!(debug.contains("threshold_tokens: 1234"), "{what}: {debug}");
    }
    for debug in [&builder_debug, &layer_debug, &service_debug] {
        assert!(debug.contains("max_request_bytes: 98765"), "{debug}");
    }
    for debug in [&layer_debug, &service_debug] {
        assert!(
            debug.contains("ProxySessions { len: 1,"),
            "one session: {debug}"
        );
        assert!(debug.contains("tasks: Memo { len: 1,"), "one task: {debug}");
    }

    // A call, and what the engine makes of a result.
    let call = ToolCall::new(
        "search_docs",
        Some(json!({"query": ARG, "filter": {"owner": ARG}})),
    );
    let call_debug = format!("{call:?}");
    assert_clean("ToolCall", &call_debug);
    assert!(call_debug.contains("arguments: 2"), "{call_debug}");
    let outcome = layer
        .offloader()
        .process(&call, marked_result().to_string().as_bytes())
        .unwrap();
    assert_clean("Outcome", &format!("{outcome:?}"));
    assert!(format!("{outcome:?}").contains("count: 300"));
    let Outcome::Offloaded(offloaded) = outcome else {
        panic!("offloaded expected: {outcome:?}");
    };
    for (what, debug) in [
        ("Offloaded", format!("{offloaded:?}")),
        ("OffloadResponse", format!("{:?}", offloaded.response)),
        (
            "OffloadSummary",
            format!("{:?}", offloaded.response.summary),
        ),
        ("OffloadedResult", format!("{:?}", offloaded.file)),
        ("OffloadHeader", format!("{:?}", offloaded.file.header)),
    ] {
        assert_clean(what, &debug);
        assert!(debug.contains("count: 300"), "{what}: {debug}");
    }
    // The data really is in what these hide.
    assert_eq!(offloaded.file.header.query.as_deref(), Some(ARG));
    assert!(offloaded.result.contains(DATA));
    assert!(offloaded.response.preview.contains(DATA));

    // A write that fails: the truncated outcome.
    let failing = tower_lro::offload::Offloader::new(
        tower_lro::config::OffloadConfig::default()
            .output_dir(dir.path())
            .threshold_tokens(1234),
    )
    .with_store(FailingStore(dir.path().to_owned()))
    .with_event_hook(EventHook::callback({
        let sink = events.clone();
        move |e| sink.lock().unwrap().push(e.clone())
    }));
    let truncated = failing
        .process(&call, marked_result().to_string().as_bytes())
        .unwrap();
    assert!(matches!(truncated, Outcome::Truncated(_)), "{truncated:?}");
    assert_clean("Outcome::Truncated", &format!("{truncated:?}"));
    // Results that are not tool results, each carrying data.
    let pad = "z".repeat(8000);
    for bad in [
        format!(r#"{{"content": "{DATA} {pad}"}}"#),
        format!(r#"{{"content": ["{DATA} {pad}"]}}"#),
        format!(r#"{{"content": [{{"type": "text", "text": ["{DATA} {pad}"]}}]}}"#),
        format!(
            r#"{{"content": [{{"type": "text", "text": "{DATA} {pad}"}}], "isError": "{DATA}"}}"#
        ),
        format!(r#"{{"content": [{{"type": "text", "text": "{DATA} {pad}"#),
        format!(r#"["{DATA} {pad}"]"#),
    ] {
        match layer.offloader().process(&call, bad.as_bytes()) {
            Err(e) => assert_clean("ResultError", &format!("{e:?}")),
            Ok(o) => assert_clean("Outcome", &format!("{o:?}")),
        }
    }

    // Every event the layer and the engines emitted.
    let events = events.lock().unwrap();
    let names: Vec<&str> = events.iter().map(OffloadEvent::name).collect();
    for name in ["Offloaded", "OffloadWriteFailed", "PassedThrough"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for e in events.iter() {
        assert_clean("OffloadEvent", &format!("{e:?}"));
    }
}

/// The types of an offloaded file and its descriptor that carry data when
/// shown in full: the header's `Rebuild` section (the result's envelope,
/// here the `_meta` value) and the recipes (for records that are not
/// memories, a command quotes values of the data).
#[test]
fn rebuild_and_recipe_debug_show_no_result_data() {
    let dir = tempfile::tempdir().unwrap();
    let offloader = tower_lro::offload::Offloader::new(
        tower_lro::config::OffloadConfig::default().output_dir(dir.path()),
    );
    let call = ToolCall::new("search_docs", None);
    let Outcome::Offloaded(o) = offloader
        .process(&call, marked_result().to_string().as_bytes())
        .unwrap()
    else {
        panic!("offloaded expected");
    };
    // The in-memory header leaves it out; the file's header carries it.
    let text = std::fs::read_to_string(&o.file.path).unwrap();
    let header: tower_lro::descriptor::OffloadHeader =
        serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_clean("OffloadHeader (read back)", &format!("{header:?}"));
    let rebuild = header.rebuild.as_ref().expect("a rebuild section");
    assert_clean("Rebuild", &format!("{rebuild:?}"));
    for r in &o.response.jq_recipes {
        assert_clean("JqRecipe", &format!("{r:?}"));
    }
}

// ---------------------------------------------------------------------------
// A result replayed on a resumed GET stream
// ---------------------------------------------------------------------------

/// A server that answers the POST of a session with an event stream the
/// client drops after the priming event, and a later `GET` with
/// `Last-Event-ID` with a replay of the result: the replayed result is
/// offloaded as it would have been on the POST stream. A resumed stream of
/// another session, or a plain GET stream, is not watched.
#[tokio::test]
async fn a_result_replayed_on_a_resumed_get_stream_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(150, Detail::Medium);
    let id = json!(5);
    let request = tools_call(id.clone(), "recall_memories", json!({"query": "q"}));
    let with_session = |mut req: Request<TestBody>, session: &str| {
        req.headers_mut()
            .insert("mcp-session-id", session.parse().unwrap());
        req
    };
    // The POST stream: a priming event, then the client goes away.
    let (_tx, stream) = channel();
    let first = std::sync::Arc::new(std::sync::Mutex::new(Some(stream)));
    let service = layer
        .clone()
        .layer(service_fn(move |req: Request<RequestBody<TestBody>>| {
            let body = first.lock().unwrap().take().expect("one call");
            async move {
                let mut req_body = req.into_body();
                read_request(&mut req_body).await;
                Ok::<_, Infallible>(sse_response(body))
            }
        }));
    let post_req = with_session(post(body_of([data(request.to_string())])), "s-1");
    let response = service.oneshot(post_req).await.unwrap();
    drop(response);

    // The replay, on a GET resumed after the priming event.
    let replay = format!("id: e2\ndata: {}\n\n", answer(&id, &original));
    let get = |session: &str, resumed: bool| {
        let mut req = Request::get("/mcp").body(body_of([])).unwrap();
        if resumed {
            req.headers_mut()
                .insert("last-event-id", "e1".parse().unwrap());
        }
        with_session(req, session)
    };
    let replaying = |replay: String| {
        service_fn(move |_req: Request<RequestBody<TestBody>>| {
            let replay = replay.clone();
            async move { Ok::<_, Infallible>(sse_response(body_of([data(replay)]))) }
        })
    };
    // Another session's resumed stream and a plain GET stream: untouched.
    for (session, resumed) in [("s-2", true), ("s-1", false)] {
        let response = layer
            .clone()
            .layer(replaying(replay.clone()))
            .oneshot(get(session, resumed))
            .await
            .unwrap();
        let (got, _) = read_response(&mut response.into_body()).await;
        assert_eq!(got, replay.as_bytes(), "{session} resumed={resumed}");
    }
    // The session's resumed stream: the replayed result is offloaded.
    let response = layer
        .clone()
        .layer(replaying(replay.clone()))
        .oneshot(get("s-1", true))
        .await
        .unwrap();
    let (got, _) = read_response(&mut response.into_body()).await;
    let got = String::from_utf8(got).unwrap();
    assert!(got.starts_with("id: e2\n"), "{got:.200}");
    let message: Value =
        serde_json::from_str(event_data(got.as_bytes()).unwrap().as_str()).unwrap();
    assert_offloaded(&message, &id, &original);
}

// ---------------------------------------------------------------------------
// A result read once: the layer's validated parse against the engine's own
// ---------------------------------------------------------------------------

/// A large result written awkwardly: whitespace between every token (line
/// breaks included), escaped keys (`content` among them), a duplicate
/// `_meta`, `null`s, an embedded resource.
fn awkward_result() -> String {
    let m = memories(150, Detail::Medium);
    let text = serde_json::to_string(&m["content"][0]["text"]).unwrap();
    let structured = serde_json::to_string_pretty(&m["structuredContent"]).unwrap();
    format!(
        "{{ \"_meta\" : {{ \"a\" : 1 }} ,\n  \"con\\u0074ent\" :\t[ {{ \"type\" : \"text\" , \
         \"text\" : {text} , \"annotations\" : null }} ,\r\n {{ \"ty\\u0070e\" : \"resource\" , \
         \"resource\" : {{ \"uri\" : \"file:///x\" , \"text\" : \"a\\\"b\\\\\" }} }} ] ,\n \
         \"structuredContent\" : {structured} , \"isError\" : false , \"_meta\" : null }}"
    )
}

/// `s` with every file name's ULID and the directory replaced (the rest
/// must be equal byte for byte).
fn without_ids(s: &str, dir: &std::path::Path) -> String {
    const PREFIX: &str = "atlatl-recall-";
    let mut out = s.replace(dir.to_str().unwrap(), "<DIR>");
    while let Some(at) = out.find(PREFIX) {
        let at = at + PREFIX.len();
        out.replace_range(at - PREFIX.len()..at + 26, "atlatl-RECALL-<ULID>");
    }
    out
}

/// The rewritten result (its descriptor's time fields left out) and the
/// file's records, of an offload of `result` that wrote into `dir`.
fn offloaded_parts(result: &str, dir: &std::path::Path) -> (String, String) {
    let mut v: Value = serde_json::from_str(result).unwrap();
    let text = v["content"][0]["text"].as_str().unwrap().to_owned();
    let mut descriptor: Value = serde_json::from_str(&text).unwrap();
    descriptor["expires_at"] = Value::Null;
    v["content"][0]["text"] = Value::String(descriptor.to_string());
    let path = descriptor["file_path"].as_str().unwrap();
    let file = std::fs::read_to_string(path).unwrap();
    let records = file.split_once('\n').unwrap().1.to_owned();
    (without_ids(&v.to_string(), dir), records)
}

#[tokio::test]
async fn a_result_the_layer_read_offloads_as_the_engine_offloads_it() {
    let result = awkward_result();
    let call = ToolCall::new("recall_memories", Some(json!({"query": "q"})));
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default().output_dir(dir.path());
    let engine = tower_lro::offload::Offloader::new(config.clone());
    let Ok(Outcome::Offloaded(o)) = engine.process(&call, result.as_bytes()) else {
        panic!("the engine offloads it");
    };
    let expected = offloaded_parts(&o.result, dir.path());
    let layer = OffloadLayer::new(config);
    let request = tools_call(json!(5), "recall_memories", json!({"query": "q"}));
    let message = format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{result}}}");

    let inner = {
        let message = message.clone();
        service_fn(move |req: Request<RequestBody<TestBody>>| {
            let message = message.clone();
            async move {
                read_request(&mut req.into_body()).await;
                Ok::<_, Infallible>(json_response(body_of([data(message)])))
            }
        })
    };
    let response = layer
        .clone()
        .layer(inner)
        .oneshot(post(body_of([data(request.to_string())])))
        .await
        .unwrap();
    let (body, _) = read_response(&mut response.into_body()).await;
    let got: Value = serde_json::from_slice(&body).unwrap();
    let got_json = offloaded_parts(&got["result"].to_string(), dir.path());
    assert_eq!(got_json, expected, "as JSON");

    // The same message as an event, one data line per line of it.
    let event: String = message
        .lines()
        .map(|l| format!("data: {l}\n"))
        .collect::<String>()
        + "\n";
    let mut body = sse_call(&layer, &request, body_of([data(event)])).await;
    let (got, _) = read_response(&mut body).await;
    let got = event_data(&got).expect("an event");
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(
        offloaded_parts(&got["result"].to_string(), dir.path()),
        expected,
        "as an event"
    );
}

/// Results of a few megabytes take the parallel paths (the body validated
/// in two halves, its long text stepped over, the layout check beside the
/// records, the body collected into the kept buffer from the second on)
/// and come out exact, one after the other, two at once, and as an event
/// stream.
#[tokio::test]
async fn results_of_megabytes_come_out_exact_one_after_the_other_and_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(1200, Detail::Full);
    let size = answer(&json!(1), &original).to_string().len();
    assert!(size > 2 << 20, "{size} bytes");
    let call = |id: u64| {
        let layer = layer.clone();
        let original = original.clone();
        async move {
            let id = json!(id);
            let request = tools_call(id.clone(), "recall_memories", json!({"query": "q"}));
            let response = layer
                .layer(json_answering_in(
                    original.clone(),
                    Recorded::default(),
                    64 << 10,
                ))
                .oneshot(post(body_of([data(request.to_string())])))
                .await
                .unwrap();
            let (body, error) = read_response(&mut response.into_body()).await;
            assert!(error.is_none());
            let message: Value = serde_json::from_slice(&body).unwrap();
            assert_offloaded(&message, &id, &original);
        }
    };
    for id in 1..=3 {
        call(id).await;
    }
    tokio::join!(call(4), call(5));
    assert_eq!(files_in(dir.path()), 5);
    assert_eq!(layer.buffered_bytes(), 0, "every buffer given back");

    // As an event stream, three times: the second event is collected in
    // the buffer the first left; the third has bytes after it in its last
    // chunk (its buffer shared with them, so not kept).
    for (n, after) in [(1, ""), (2, ""), (3, ": after\n\n")] {
        let id = json!(format!("sse-{n}"));
        let request = tools_call(id.clone(), "recall_memories", json!({}));
        let sent = format!(
            ": ping\n\nevent: message\ndata: {}\n\n{after}",
            answer(&id, &original)
        );
        let body = sse_call(
            &layer,
            &request,
            body_of(chunks_of(sent.as_bytes(), 64 << 10)),
        )
        .await;
        let got = body.collect().await.unwrap().to_bytes();
        let (events, rest) = split_events(&got);
        assert!(rest.is_empty());
        assert_eq!(events[0], b": ping\n\n");
        let (sent_events, _) = split_events(sent.as_bytes());
        assert_rewritten(events[1], sent_events[1], &id, &original);
        assert_eq!(events[2..], sent_events[2..], "as sent");
    }
    assert_eq!(layer.buffered_bytes(), 0);
}

/// Events of megabytes that the layer does not rewrite (a notification, an
/// answer to a call it does not watch) go out byte for byte when they are
/// collected in the kept buffer, before and after a watched result, the
/// stream cut into chunks of odd sizes (a chunk ending inside an event, on
/// its blank line, or holding the end of one and the start of the next);
/// every buffer is given back.
#[tokio::test]
async fn unwatched_events_of_megabytes_pass_through_the_kept_buffer_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let original = memories(1200, Detail::Full);
    let blob = "x".repeat(1_300_000);
    for (n, size) in [(1, 64 << 10), (2, 100_003), (3, 1 << 20), (4, 3 << 20)] {
        let id = json!(format!("big-{n}"));
        let request = tools_call(id.clone(), "recall_memories", json!({}));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": blob}});
        let other = json!({"jsonrpc": "2.0", "id": "not-watched", "result": {"content": [
            {"type": "text", "text": blob}]}});
        let sent = format!(
            "event: message\ndata: {note}\n\nid: 7\ndata: {}\n\ndata: {other}\n\n: done\n\n",
            answer(&id, &original)
        );
        let body = sse_call(&layer, &request, body_of(chunks_of(sent.as_bytes(), size))).await;
        let got = body.collect().await.unwrap().to_bytes();
        let (events, rest) = split_events(&got);
        let (sent_events, _) = split_events(sent.as_bytes());
        assert!(rest.is_empty());
        assert_eq!(events.len(), 4, "chunks of {size}");
        assert_eq!(
            events[0], sent_events[0],
            "the notification, chunks of {size}"
        );
        assert_rewritten(events[1], sent_events[1], &id, &original);
        assert_eq!(events[2..], sent_events[2..], "chunks of {size}");
    }
    assert_eq!(files_in(dir.path()), 4);
    assert_eq!(layer.buffered_bytes(), 0, "every buffer given back");
}
