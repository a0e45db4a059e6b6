//! Large results of every record shape through `lro gateway`, against
//! fetching the same answer directly.
//!
//! A raw upstream on 127.0.0.1 answers `tools/call` with a prepared JSON
//! answer (sized, `application/json`) of one shape and size; the built `lro
//! gateway` (offloading on, logs off) stands in front of it. A keep-alive
//! client sends the call and reads the whole answer: directly, the result
//! itself; through the gateway, the descriptor, after the gateway has
//! written the offload file. The two sides alternate, so that machine
//! noise hits them alike; the figure is the median of each and their ratio.
//!
//! Shapes: records in `structuredContent`, one JSON array in a text block,
//! NDJSON text, CSV, plain log lines, pretty-printed JSON. Sizes: 10 MB and
//! 100 MB (`LRO_BENCH_QUICK=1`: 10 MB only, fewer rounds). The target is
//! gateway ÷ direct ≤ 2 for every row.

#[path = "../../benches/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// Longest one request may take before the run is aborted.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The shapes, by the name the upstream's tool argument gives.
const SHAPES: [&str; 6] = [
    "structuredContent records",
    "JSON array in text",
    "NDJSON text",
    "CSV text",
    "plain lines",
    "pretty JSON text",
];

/// The log levels the records cycle through.
const LEVELS: [&str; 4] = ["info", "warn", "error", "debug"];

/// One log record, about 190 bytes as compact JSON.
fn record(i: usize) -> Value {
    json!({
        "id": i,
        "ts": format!("2026-11-28T10:{:02}:{:02}.{:03}Z", i / 60 % 60, i % 60, i % 1000),
        "level": LEVELS[i % 4],
        "service": format!("api-{}", i % 17),
        "latency_ms": (i * 37) % 1000,
        "message": format!("request {i} handled for user u{} on /v1/items/{}", i % 311, i % 97),
        "tags": ["edge", if i.is_multiple_of(3) { "retry" } else { "ok" }],
    })
}

/// `n` records.
fn records(n: usize) -> Vec<Value> {
    (0..n).map(record).collect()
}

/// The text of a result of `shape` holding `records`.
fn text_of(shape: &str, records: &[Value]) -> String {
    let mut out = String::new();
    match shape {
        "JSON array in text" => out = serde_json::to_string(records).unwrap(),
        "pretty JSON text" => out = serde_json::to_string_pretty(records).unwrap(),
        "NDJSON text" => {
            for r in records {
                out.push_str(&r.to_string());
                out.push('\n');
            }
        }
        "CSV text" => {
            out.push_str("id,ts,level,service,latency_ms,message\n");
            for r in records {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},\"{}\"",
                    r["id"],
                    r["ts"].as_str().unwrap(),
                    r["level"].as_str().unwrap(),
                    r["service"].as_str().unwrap(),
                    r["latency_ms"],
                    r["message"].as_str().unwrap()
                );
            }
        }
        "plain lines" => {
            for r in records {
                let _ = writeln!(
                    out,
                    "{} {:>5} {} {}ms {}",
                    r["ts"].as_str().unwrap(),
                    r["level"].as_str().unwrap().to_uppercase(),
                    r["service"].as_str().unwrap(),
                    r["latency_ms"],
                    r["message"].as_str().unwrap()
                );
            }
        }
        other => unreachable!("no text shape {other}"),
    }
    out
}

/// The whole JSON-RPC answer (id 1) of `shape` holding `records`.
fn answer_of(shape: &str, records: &[Value]) -> Bytes {
    let result = if shape == "structuredContent records" {
        let summary = format!("{} log records", records.len());
        json!({
            "content": [{"type": "text", "text": summary}],
            "structuredContent": {"records": records},
        })
    } else {
        json!({"content": [{"type": "text", "text": text_of(shape, records)}]})
    };
    Bytes::from(serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": result})).unwrap())
}

/// The answer of `shape` at about `bytes` bytes (whatever its shape costs
/// per record, measured on a thousand).
fn answer(shape: &str, bytes: usize) -> Bytes {
    let per_record = answer_of(shape, &records(1000)).len() as f64 / 1000.0;
    answer_of(shape, &records((bytes as f64 / per_record) as usize))
}

/// The prepared answers, by (shape, size in MB).
type Answers = Arc<HashMap<(String, usize), Bytes>>;

/// The upstream: answers each call with the prepared answer its arguments
/// name; anything else gets an empty result.
async fn upstream(answers: Answers) -> SocketAddr {
    async fn mcp(State(answers): State<Answers>, body: Bytes) -> impl IntoResponse {
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        let args = &request["params"]["arguments"];
        let key = (
            args["shape"].as_str().unwrap_or_default().to_owned(),
            args["mb"].as_u64().unwrap_or_default() as usize,
        );
        let body = answers.get(&key).cloned().unwrap_or_else(|| {
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#)
        });
        ([(header::CONTENT_TYPE, "application/json")], body)
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = Router::new()
        .route("/mcp", axum::routing::post(mcp))
        .with_state(answers);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// `lro gateway` in front of `upstream`, logs off, killed when dropped,
/// and the address it says it listens on.
async fn gateway(upstream: SocketAddr, dir: &Path) -> (Child, SocketAddr) {
    let url = format!("http://{upstream}/mcp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["gateway", "--upstream", &url, "--listen", "127.0.0.1:0"])
        .arg("--output-dir")
        .arg(dir)
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("lro starts");
    let addr = support::gateway_address(&mut child, REQUEST_TIMEOUT).await;
    (child, addr)
}

/// A keep-alive HTTP/1.1 client reading sized answers whole.
struct Client {
    stream: BufReader<TcpStream>,
    addr: SocketAddr,
    body: Vec<u8>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let tcp = TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        Client {
            stream: BufReader::with_capacity(1 << 16, tcp),
            addr,
            body: Vec::new(),
        }
    }

    /// POSTs `body`; returns the answer's body.
    async fn post(&mut self, body: &str) -> &[u8] {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        tokio::time::timeout(REQUEST_TIMEOUT, self.read_answer())
            .await
            .expect("an answer in time");
        &self.body
    }

    /// Reads one answer, sized or chunked, into `self.body`.
    async fn read_answer(&mut self) {
        let (mut length, mut chunked, mut line) = (None, false, String::new());
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(v) = header.strip_prefix("content-length:") {
                length = v.trim().parse::<usize>().ok();
            }
            chunked |= header.starts_with("transfer-encoding:") && header.contains("chunked");
        }
        self.body.clear();
        if !chunked {
            self.body.resize(length.expect("a framed answer"), 0);
            self.stream.read_exact(&mut self.body).await.unwrap();
            return;
        }
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
            let start = self.body.len();
            self.body.resize(start + size + 2, 0);
            self.stream
                .read_exact(&mut self.body[start..])
                .await
                .unwrap();
            self.body.truncate(start + size);
            if size == 0 {
                return;
            }
        }
    }
}

/// The last JSON-RPC message of an answer, JSON or an event stream.
fn message(body: &[u8]) -> Value {
    if let Ok(v) = serde_json::from_slice(body) {
        return v;
    }
    let text = String::from_utf8_lossy(body);
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .expect("an event with data");
    serde_json::from_str(data.trim()).expect("JSON in the event")
}

/// Checks that the gateway offloaded the call, and its file's line count.
fn check_offloaded(answer: &[u8], shape: &str) {
    let message = message(answer);
    let text = message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("file_path")
            || message["result"]["structuredContent"]["file_path"].is_string(),
        "{shape}: not offloaded: {}",
        &text[..text.len().min(300)]
    );
}

fn main() {
    let quick = support::quick();
    let (sizes, rounds): (&[usize], usize) = if quick { (&[10], 5) } else { (&[10, 100], 9) };
    // `LRO_BENCH_SHAPE=csv` runs the shapes whose name holds it (for a
    // profiler), `LRO_BENCH_ROUNDS` sets the rounds,
    // `LRO_BENCH_MB=100` the sizes (MB, comma-separated).
    let only = std::env::var("LRO_BENCH_SHAPE")
        .unwrap_or_default()
        .to_lowercase();
    let shapes: Vec<&str> = SHAPES
        .into_iter()
        .filter(|s| s.to_lowercase().contains(&only))
        .collect();
    let sizes: Vec<usize> = match std::env::var("LRO_BENCH_MB") {
        Ok(mb) => mb
            .split(',')
            .filter_map(|m| m.trim().parse().ok())
            .collect(),
        Err(_) => sizes.to_vec(),
    };
    let rounds = std::env::var("LRO_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(rounds);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut answers = HashMap::new();
    for &shape in &shapes {
        for &mb in &sizes {
            answers.insert((shape.to_owned(), mb), answer(shape, mb * 1_000_000));
        }
    }
    let sizes_of: HashMap<_, _> = answers.iter().map(|(k, v)| (k.clone(), v.len())).collect();
    let dir = tempfile::tempdir().unwrap();
    let rows = rt.block_on(async {
        let up = upstream(Arc::new(answers)).await;
        let (_child, through) = gateway(up, dir.path()).await;
        let mut direct = Client::connect(up).await;
        let mut gateway = Client::connect(through).await;
        let mut rows = Vec::new();
        for &mb in &sizes {
            for &shape in &shapes {
                let call = support::tools_call(1, "dump", json!({"shape": shape, "mb": mb}));
                let answer_bytes = sizes_of[&(shape.to_owned(), mb)];
                assert_eq!(direct.post(&call).await.len(), answer_bytes);
                check_offloaded(gateway.post(&call).await, shape);
                let mut samples: [Vec<f64>; 2] = Default::default();
                for _ in 0..rounds {
                    for (side, client) in [&mut direct, &mut gateway].into_iter().enumerate() {
                        let start = Instant::now();
                        assert!(!client.post(&call).await.is_empty());
                        samples[side].push(start.elapsed().as_nanos() as f64);
                    }
                    clear(dir.path());
                }
                let [d, g] = samples.map(|mut s| {
                    s.sort_by(f64::total_cmp);
                    support::percentile(&s, 50.0)
                });
                rows.push(vec![
                    shape.to_owned(),
                    format!("{mb} MB"),
                    support::fmt_ns(d),
                    support::fmt_ns(g),
                    format!("{:.0} MB/s", answer_bytes as f64 / g * 1e3),
                    format!("{:.2} (≤ 2)", g / d),
                ]);
            }
        }
        rows
    });
    support::print_table(
        "shapes",
        "large results by shape: through lro gateway (offloaded) vs direct, p50",
        &[
            "shape",
            "size",
            "direct",
            "gateway",
            "gateway MB/s",
            "gateway ÷ direct",
        ],
        &rows,
    );
}

/// Removes the offload files written so far, so the disk holds one round.
fn clear(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_file() {
            let _ = std::fs::remove_file(path);
        }
    }
}
