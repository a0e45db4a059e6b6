//! Results of any size through `lro gateway`, in bounded memory: a raw
//! upstream on loopback streams a result of hundreds of MB made on the fly
//! (JSON with `Content-Length`, chunked JSON, a stream cut short); the
//! gateway spills it, offloads it, and its peak resident memory
//! (`VmHWM`) grows by at most [`RSS_GROWTH`]. Every record is in the file
//! (count and SHA-256 recomputed here), real jq reads it.

use std::io::{BufRead, Read};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::common;
use crate::gateway::{gateway_with, http};

/// The bound on the gateway's peak memory growth while it offloads.
const RSS_GROWTH: usize = 64 << 20;
/// Records per 64 KiB-ish chunk of the upstream's body.
const PER_CHUNK: usize = 600;

/// How the upstream sends the result.
#[derive(Clone, Copy, Debug)]
enum Sending {
    /// JSON with `Content-Length`.
    Sized,
    /// Chunked JSON.
    Chunked,
    /// Chunked JSON that stops with an error half way.
    CutShort,
    /// One event of an event stream (after a progress notification), its
    /// lines ending in CRLF, cut in chunks anywhere.
    Event,
    /// Chunked JSON of a hostile shape (`records` is its size in MB).
    Hostile(Hostile),
}

/// Hostile shapes of a text block's text.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// A JSON array of zeros: two bytes a record.
    Zeros,
    /// One line of plain text, no newline at all.
    OneString,
    /// One element nested 100,000 deep, then ones.
    Deep,
}

/// The chunks of a hostile result of about `mb` MB.
fn hostile_chunks(id: &Value, shape: Hostile, mb: usize) -> Box<dyn Iterator<Item = Bytes> + Send> {
    let head = head(id);
    let chunk = 64 << 10;
    let n = mb * 1_000_000 / chunk;
    let (open, unit, close): (String, &'static str, &'static str) = match shape {
        Hostile::Zeros => ("[0".into(), ",0", "]"),
        Hostile::OneString => ("x".into(), "x", ""),
        Hostile::Deep => ("[".repeat(100_001) + &"]".repeat(100_000), ",1", "]"),
    };
    let body = Bytes::from(unit.repeat(chunk / unit.len()));
    let mut head = head.into_bytes();
    // The string starts with `[` already (see `head`): a plain text drops it.
    // `head` ends with the `[` of a JSON array: `open` starts the text instead.
    head.pop();
    head.extend_from_slice(open.as_bytes());
    Box::new(
        std::iter::once(Bytes::from(head))
            .chain(std::iter::repeat_n(body, n))
            .chain(std::iter::once(Bytes::from(format!("{close}\"}}]}}}}")))),
    )
}

/// The chunks of the body `up` sends.
fn body_chunks(id: &Value, up: Upstream) -> Box<dyn Iterator<Item = Bytes> + Send> {
    match up.send {
        Sending::Hostile(shape) => hostile_chunks(id, shape, up.records),
        _ => Box::new(chunks(id, up.records)),
    }
}

#[derive(Clone, Copy)]
struct Upstream {
    send: Sending,
    records: usize,
}

/// Record `n`, as its text appears inside the JSON string of the text
/// block (escaped).
fn record(n: usize) -> String {
    format!(
        "{{\\\"n\\\":{n},\\\"level\\\":\\\"{}\\\",\\\"msg\\\":\\\"worker {n:09} finished a job\\\"}}",
        ["info", "warn", "error"][n % 3]
    )
}

/// The record as the file holds it (unescaped, compact).
fn line(n: usize) -> String {
    format!(
        "{{\"n\":{n},\"level\":\"{}\",\"msg\":\"worker {n:09} finished a job\"}}",
        ["info", "warn", "error"][n % 3]
    )
}

fn head(id: &Value) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"["
    )
}

const TAIL: &str = "]\"}]}}";

/// The chunks of the body, made on the fly.
fn chunks(id: &Value, records: usize) -> impl Iterator<Item = Bytes> + Send + 'static {
    let head = head(id);
    let body = (0..records.div_ceil(PER_CHUNK)).map(move |c| {
        let mut s = String::with_capacity(PER_CHUNK * 110);
        for n in c * PER_CHUNK..((c + 1) * PER_CHUNK).min(records) {
            if n > 0 {
                s.push(',');
            }
            s.push_str(&record(n));
        }
        Bytes::from(s)
    });
    std::iter::once(Bytes::from(head))
        .chain(body)
        .chain(std::iter::once(Bytes::from_static(TAIL.as_bytes())))
}

/// A body fed by a channel of one chunk (the producer waits until the
/// connection takes each): nothing is held here.
struct ChannelBody(mpsc::Receiver<Result<Bytes, std::io::Error>>, Option<u64>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|c| c.map(Frame::data)))
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.1.map_or_else(
            http_body::SizeHint::default,
            http_body::SizeHint::with_exact,
        )
    }
}

async fn mcp(State(up): State<Upstream>, request: Request) -> Response {
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = message["id"].clone();
    if message["method"] != "tools/call" {
        let result = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}});
        return axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response();
    }
    let sized = matches!(up.send, Sending::Sized);
    let length = sized.then(|| body_chunks(&id, up).map(|c| c.len() as u64).sum());
    let (tx, rx) = mpsc::channel(1);
    let (send, records) = (up.send, up.records);
    let up = Upstream { send, records };
    tokio::spawn(async move {
        let total = records.div_ceil(PER_CHUNK) + 2;
        let sse = matches!(send, Sending::Event);
        if sse {
            let progress = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\nid: 42\r\ndata: ";
            if tx.send(Ok(Bytes::from(progress))).await.is_err() {
                return;
            }
        }
        for (i, c) in body_chunks(&id, up).enumerate() {
            if matches!(send, Sending::CutShort) && i == total / 2 {
                let _ = tx.send(Err(std::io::Error::other("upstream gone"))).await;
                return;
            }
            if tx.send(Ok(c)).await.is_err() {
                return;
            }
        }
        if sse {
            let _ = tx.send(Ok(Bytes::from_static(b"\r\n\r\n"))).await;
        }
    });
    let mut response = Response::new(Body::new(ChannelBody(rx, length)));
    let kind = match up.send {
        Sending::Event => "text/event-stream",
        _ => "application/json",
    };
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, kind.parse().unwrap());
    response
}

/// Runs one result of `records` records through a fresh gateway; returns
/// the client's answer (or the error), the gateway's peak growth and the
/// output directory.
async fn through_gateway(
    send: Sending,
    records: usize,
) -> (Result<Value, String>, usize, tempfile::TempDir) {
    let app = Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .with_state(Upstream { send, records });
    let addr = common::mcp::serve(app).await;
    let dir = tempfile::tempdir().unwrap();
    let (gateway, listen) = gateway_with(&format!("http://{addr}/mcp"), dir.path(), &[]);
    let url = format!("http://{listen}/mcp");
    let client = http();
    let post = |body: Value| {
        client
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .timeout(std::time::Duration::from_secs(600))
            .json(&body)
            .send()
    };
    // A small call first: the process's baseline.
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    init.await.unwrap().bytes().await.unwrap();
    let pid = gateway.pid();
    let before = common::peak_rss(pid);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query_logs", "arguments": {}}});
    let answer = match post(call).await {
        Ok(r) => match r.bytes().await {
            Ok(b) if matches!(send, Sending::Event) => last_event(&b),
            Ok(b) => {
                serde_json::from_slice(&b).map_err(|e| format!("not JSON ({} bytes): {e}", b.len()))
            }
            Err(e) => Err(format!("body: {e}")),
        },
        Err(e) => Err(format!("send: {e}")),
    };
    let growth = common::peak_rss(pid).saturating_sub(before);
    if answer.is_err() || std::env::var_os("LRO_TEST_LOG").is_some() {
        eprintln!("gateway log: {}", gateway.stderr());
    }
    eprintln!(
        "{send:?} ({records}): gateway peak grew by {} MiB",
        growth >> 20
    );
    (answer, growth, dir)
}

/// The message of the last event of an event stream (its `id:` line kept).
fn last_event(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let events: Vec<&str> = text.split("\r\n\r\n").filter(|e| !e.is_empty()).collect();
    let last = events.last().ok_or("no event")?;
    if !last.starts_with("id: 42\r\n") {
        return Err(format!(
            "the event lost its id line: {}",
            &last[..last.len().min(200)]
        ));
    }
    let data: Vec<&str> = last
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    if events.len() != 2 || data.len() != 1 {
        return Err(format!(
            "{} events, {} data lines",
            events.len(),
            data.len()
        ));
    }
    serde_json::from_str(data[0]).map_err(|e| e.to_string())
}

/// Every record of `path` in order, the count and SHA-256 of the data lines
/// (recomputed), checked against the descriptor.
fn check_file(descriptor: &Value, records: usize) {
    let path = descriptor["file_path"].as_str().unwrap();
    let mut file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut header = String::new();
    file.read_line(&mut header).unwrap();
    let header: Value = serde_json::from_str(&header).unwrap();
    let (mut n, mut sha, mut bytes) = (0usize, Sha256::new(), 0u64);
    let mut l = String::new();
    loop {
        l.clear();
        if file.read_line(&mut l).unwrap() == 0 {
            break;
        }
        assert_eq!(l.trim_end_matches('\n'), line(n), "record {n}");
        sha.update(l.as_bytes());
        bytes += l.len() as u64;
        n += 1;
    }
    let sha: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(n, records);
    for d in [&descriptor["summary"], &header] {
        assert_eq!(d["count"], records);
        assert_eq!(d["data_bytes"], bytes);
        assert_eq!(d["data_sha256"], sha.as_str());
    }
    // The statistics cover every record (three levels, all counted).
    let schema = descriptor["line_schema"].to_string();
    assert!(schema.contains("\"level\""), "{schema}");
    // Real jq reads every line.
    common::require_jq();
    let counted = common::run_recipe(&format!("tail -n +2 '{path}' | jq -c .n | wc -l"));
    assert_eq!(counted.trim(), records.to_string());
    let recipe = descriptor["jq_recipes"][0]["command"].as_str().unwrap();
    // The first recipe, on the first thousand records (a pipe that stops
    // early would fail it under pipefail).
    let first = recipe.replace(
        &format!("tail -n +2 {path}"),
        &format!("head -n 1001 {path} | tail -n +2"),
    );
    assert_ne!(first, recipe, "{recipe}");
    assert!(!common::run_recipe(&first).is_empty());
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

/// About 100 MB of records (1,000,000 records of about 95 bytes), as sized
/// JSON, chunked JSON and one event of an event stream: offloaded whole,
/// the gateway's memory bounded. `LRO_LARGE_RECORDS` sets another count
/// (6,300,000 for 600 MB: about ten minutes in a debug
/// build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_of_100_mb_is_offloaded_in_bounded_memory() {
    let records = std::env::var("LRO_LARGE_RECORDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    for send in [Sending::Event, Sending::Sized, Sending::Chunked] {
        let (answer, growth, _dir) = through_gateway(send, records).await;
        let answer = answer.unwrap();
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        let descriptor: Value = serde_json::from_str(text).unwrap();
        assert!(
            descriptor["file_path"].is_string(),
            "{send:?}: not a descriptor: {}",
            &text[..text.len().min(300)]
        );
        assert_eq!(answer["id"], 1);
        check_file(&descriptor, records);
        assert!(
            growth <= RSS_GROWTH,
            "{send:?}: the gateway grew by {growth} bytes"
        );
    }
}

/// A result whose stream stops half way: nothing is published, and the
/// call gets a JSON-RPC error in a whole answer (the gateway held the
/// body back, so nothing of it was sent): that call fails alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_cut_short_publishes_nothing() {
    let (answer, growth, dir) = through_gateway(Sending::CutShort, 800_000).await;
    let answer = answer.expect("a whole answer");
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], -32603);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("broke off"), "{message}");
    let files = std::fs::read_dir(dir.path())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(files, 0, "nothing published");
    assert!(growth <= RSS_GROWTH, "the gateway grew by {growth} bytes");
}

/// Hostile shapes of about 40 MB each: twenty million tiny records, one
/// string of 40 MB, an element nested 100,000 deep (a record of its own;
/// the statistics count it as too deep for jq): offloaded whole, the
/// gateway's memory bounded in every case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_shapes_stay_bounded() {
    let mb = 40;
    let per_chunk = (64 << 10) / 2;
    let n = mb * 1_000_000 / (64 << 10);
    for (shape, records) in [
        (Hostile::Zeros, 1 + n * per_chunk),
        (Hostile::OneString, 1),
        (Hostile::Deep, 1 + n * per_chunk),
    ] {
        let (answer, growth, _dir) = through_gateway(Sending::Hostile(shape), mb).await;
        assert!(
            growth <= RSS_GROWTH,
            "{shape:?}: the gateway grew by {growth} bytes"
        );
        let answer = answer.unwrap();
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        let descriptor: Value = serde_json::from_str(text).unwrap();
        assert_eq!(descriptor["summary"]["count"], records, "{shape:?}");
        let path = descriptor["file_path"].as_str().unwrap();
        let lines = common::run_recipe(&format!("tail -n +2 '{path}' | wc -l"));
        assert_eq!(lines.trim(), records.to_string(), "{shape:?}");
        let first = common::run_recipe(&format!("sed -n 2p '{path}' | wc -c"));
        let first_len = match shape {
            Hostile::Zeros => 2,
            Hostile::OneString => mb * 1_000_000 / (64 << 10) * (64 << 10) + 1 + 21,
            Hostile::Deep => 200_001,
        };
        assert_eq!(first.trim(), first_len.to_string(), "{shape:?}");
    }
}
