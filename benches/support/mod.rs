//! Shared bench helpers: quick mode, a per-iteration time recorder fed from
//! criterion's `iter_custom`, summary tables, and result fixtures.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use serde_json::{Value, json};
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};

/// `LRO_BENCH_QUICK=1`: short runs (the whole set in a few minutes on 2 cores).
pub(crate) fn quick() -> bool {
    std::env::var("LRO_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Per-iteration times (ns) recorded by name, from `iter_custom` batches.
static SAMPLES: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

/// Records one batch of `iters` iterations that took `total`.
pub(crate) fn record(name: &str, iters: u64, total: Duration) {
    if iters == 0 {
        return;
    }
    let per = total.as_nanos() as f64 / iters as f64;
    let mut map = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(name.to_owned()).or_default().push(per);
}

/// Median per-iteration time of `name`, in nanoseconds.
pub(crate) fn median_ns(name: &str) -> Option<f64> {
    let map = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    let mut v = map.get(name)?.clone();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Percentile (0..=100) of a sorted slice.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Prints a summary table and saves it as markdown under
/// `$CARGO_TARGET_DIR/lro-bench/<file>.md` (or `target/lro-bench`).
pub(crate) fn print_table(file: &str, title: &str, header: &[&str], rows: &[Vec<String>]) {
    let mut md = String::new();
    md.push_str(&format!("### {title}\n\n| {} |\n|", header.join(" | ")));
    for _ in header {
        md.push_str("---|");
    }
    md.push('\n');
    for r in rows {
        md.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    println!("\n{md}");
    let dir = std::path::PathBuf::from(
        std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()),
    )
    .join("lro-bench");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{file}.md")), md);
    }
}

/// A JSON-RPC `tools/call` request body.
pub(crate) fn tools_call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string()
}

/// A JSON-RPC response carrying `result`, compact, as rmcp sends it.
pub(crate) fn response(id: u64, result: &Value) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
    v.shrink_to_fit();
    v
}

/// Full-detail memories (deterministic).
pub(crate) fn memories(n: usize) -> Vec<Value> {
    MemoryGenerator::new(2026).memories(n, Detail::Full)
}

/// A memory tool result with `n` full-detail memories.
pub(crate) fn memory_result(n: usize) -> Value {
    memory_tool_result(&memories(n))
}

/// The number of full-detail memories whose JSON-RPC response is about `bytes` long.
pub(crate) fn memories_for_bytes(bytes: usize) -> usize {
    let probe = response(1, &memory_result(100)).len();
    (bytes * 100).div_ceil(probe).max(1)
}

/// A text-only tool result of about `bytes` bytes (under the threshold
/// when small): log lines.
pub(crate) fn text_result(bytes: usize) -> Value {
    let mut text = String::with_capacity(bytes + 80);
    let mut n = 0;
    while text.len() < bytes.saturating_sub(60) {
        n += 1;
        text.push_str(&format!(
            "{n:04} INFO worker started, queue depth {}\n",
            n * 7 % 13
        ));
    }
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// Formats nanoseconds for a table.
pub(crate) fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A response body delivered in frames of `chunk` bytes (zero-copy slices),
/// its exact length known up front, as hyper reports a body with a
/// `Content-Length`.
pub(crate) struct Chunked {
    pub data: Bytes,
    pub chunk: usize,
}

impl Body for Chunked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.data.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.chunk.min(self.data.len());
        let part = self.data.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len() as u64)
    }
}

/// The address `lro gateway` (`child`, its stdout piped) says it listens
/// on, in the first line it prints (`lro gateway listening on
/// http://127.0.0.1:PORT/mcp`); panics when none comes within `timeout`.
pub(crate) async fn gateway_address(
    child: &mut tokio::process::Child,
    timeout: Duration,
) -> std::net::SocketAddr {
    use tokio::io::AsyncBufReadExt;
    let stdout = child.stdout.take().expect("lro's stdout piped");
    let mut line = String::new();
    tokio::time::timeout(
        timeout,
        tokio::io::BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("lro gateway starts in time")
    .unwrap();
    line.trim()
        .rsplit_once("http://")
        .and_then(|(_, url)| url.split_once('/'))
        .and_then(|(addr, _)| addr.parse().ok())
        .unwrap_or_else(|| panic!("lro gateway said {line:?}"))
}
