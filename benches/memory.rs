//! Peak heap while offloading a 100 MB result (a counting global allocator
//! wrapping the system one); peak heap, time and file size for results of
//! hostile shapes (many tiny records: newlines, arrays of zeros) beside
//! normal ones; and the time to write one offload file for a 500-memory
//! result (the LRO paper measured about 24 ms median).
//!
//! The engine's bound, checked here on every shape: peak heap above what
//! the caller holds is at most [`BOUND`] times the result's size.
//!
//! `LRO_BENCH_QUICK=1`: fewer repetitions (the 100 MB run is kept);
//! `LRO_MEM_ONLY=shapes`: the shapes table only; `LRO_MEM_ONLY=large`:
//! the 600 MB and 1 GB rows only (`memory/large.rs`).

#[path = "memory/large.rs"]
mod large;
#[path = "memory/rss.rs"]
mod rss;
#[path = "support/mod.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::{Layer, ServiceExt};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{OffloadLayer, Offloader, Outcome, ToolCall};

use rss::{current_rss, peak_rss, reset_peak_rss};
use support::Chunked;

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`; returns its value and the peak live heap during it, in bytes
/// (everything alive at the start included).
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed))
}

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The response as one SSE event.
fn sse_event(response: &Bytes) -> Bytes {
    let mut v = Vec::with_capacity(response.len() + 32);
    v.extend_from_slice(b"event: message\ndata: ");
    v.extend_from_slice(response);
    v.extend_from_slice(b"\n\n");
    Bytes::from(v)
}

/// One watched request through the layer; the inner service answers `body`.
fn through_layer(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    body: Bytes,
    sse: bool,
) -> usize {
    let content_type = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    let inner = tower::service_fn(
        move |req: Request<tower_lro::offload::RequestBody<Full<Bytes>>>| {
            let body = body.clone();
            async move {
                // Read the request, as a server does (the layer classifies
                // the request from what the inner service read).
                let _ = req.into_body().collect().await;
                let mut r = Response::new(Chunked {
                    data: body,
                    chunk: 64 * 1024,
                });
                r.headers_mut()
                    .insert(http::header::CONTENT_TYPE, content_type.parse().unwrap());
                Ok::<_, Infallible>(r)
            }
        },
    );
    let svc = OffloadLayer::new(OffloadConfig::default().output_dir(dir)).layer(inner);
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(support::tools_call(
            1,
            "recall_memories",
            json!({"detail": "full"}),
        ))))
        .unwrap();
    rt.block_on(async {
        let resp = svc.oneshot(req).await.unwrap();
        resp.into_body().collect().await.unwrap().to_bytes().len()
    })
}

fn clear(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let _ = std::fs::remove_file(e.path());
    }
}

/// Peak-memory cases; each runs in its own process so nothing one leaves
/// behind (allocator state, runtime caches) counts in another.
const CASES: [&str; 5] = ["json", "sse", "engine", "value", "naive"];

/// The stated bound: `Offloader::process` never holds more than this many
/// times the result's size on the heap, whatever the result's shape.
const BOUND: f64 = 3.0;

/// Runs each case in a child process and collects the rows it prints.
fn run_cases(cases: impl IntoIterator<Item = String>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for case in cases {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env("LRO_MEM_CASE", &case)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "memory case {case} failed");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(r) = line.strip_prefix("ROW\t") {
                rows.push(r.split('\t').map(str::to_owned).collect());
            }
        }
    }
    rows
}

fn main() {
    let quick = support::quick();
    let Ok(case) = std::env::var("LRO_MEM_CASE") else {
        let large_rows = run_cases(large::CASES.iter().map(|c| (*c).to_owned()));
        support::print_table(
            "large",
            "Results of 600 MB and 1 GB through the layer, made on the fly (one process per row; peak above the start; tail: the upstream's last byte to the client's descriptor; write: file MB over the tail)",
            &[
                "path",
                "result",
                "peak heap",
                "peak RSS",
                "time",
                "tail",
                "MB/s",
                "write MB/s",
                "target",
            ],
            &large_rows,
        );
        if std::env::var("LRO_MEM_ONLY").is_ok_and(|v| v == "large") {
            return;
        }
        let shape_rows = run_cases(SHAPES.iter().map(|s| format!("shape:{}", s.0)));
        support::print_table(
            "shapes",
            &format!(
                "Offloader::process by result shape (counting allocator, one process per row; peak heap above the input the caller holds; bound ≤ {BOUND:.1} × result)"
            ),
            &[
                "shape",
                "result",
                "records",
                "peak heap above start",
                "peak / result",
                "held after (outcome alive)",
                "peak RSS above start",
                "RSS after, above start",
                "time",
                "file",
                "file / result",
                "bound",
            ],
            &shape_rows,
        );
        // `LRO_MEM_ONLY=shapes`: the shapes table alone.
        if std::env::var("LRO_MEM_ONLY").is_ok_and(|v| v == "shapes") {
            return;
        }
        let rows = run_cases(CASES.iter().map(|c| (*c).to_owned()));
        support::print_table(
            "memory",
            "Peak heap while offloading a 100 MB result (counting allocator, one process per row; 'above start' excludes the response bytes the server already holds)",
            &[
                "path",
                "response",
                "peak above start",
                "peak live heap",
                "above start / size",
                "live / size",
                "target",
            ],
            &rows,
        );
        write_times(quick);
        return;
    };
    if case.starts_with("large:") {
        large::run(&case);
        return;
    }
    if let Some(shape) = case.strip_prefix("shape:") {
        shape_case(shape, quick);
        return;
    }
    let want = |c: &str| case == c;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    // --- Peak memory, 100 MB ---
    let n = support::memories_for_bytes(100 * 1000 * 1000);
    let (response, result_len, records) = {
        let mems = support::memories(n);
        let result = tower_lro::fixtures::memory_tool_result(&mems);
        let response = Bytes::from(support::response(1, &result));
        let result_len = serde_json::to_vec(&result).unwrap().len();
        (response, result_len, serde_json::to_vec(&mems).unwrap())
    };
    drop(records);
    let size = response.len() as f64;
    let mut rows = Vec::new();
    let mut row = |what: &str, base: usize, peak: usize| {
        rows.push(vec![
            what.to_owned(),
            format!("{:.1} MB", size / 1e6),
            format!("{:.1} MB", (peak - base) as f64 / 1e6),
            format!("{:.1} MB", peak as f64 / 1e6),
            format!("{:.2}", (peak - base) as f64 / size),
            format!("{:.2}", peak as f64 / size),
            if what.starts_with("layer") || what.starts_with("engine") {
                let r = (peak - base) as f64 / size;
                format!("≤ 3.0 ({})", if r <= 3.0 { "met" } else { "MISSED" })
            } else {
                "—".into()
            },
        ]);
    };
    eprintln!(
        "100 MB case: {n} memories, response {} bytes, result {result_len} bytes",
        response.len()
    );
    for sse in [false, true]
        .into_iter()
        .filter(|&sse| want(if sse { "sse" } else { "json" }))
    {
        // The server's response bytes exist before the layer sees them.
        let body = if sse {
            sse_event(&response)
        } else {
            response.clone()
        };
        let base = live();
        let (out, peak) = peak_during(|| through_layer(&rt, dir.path(), body, sse));
        assert!(out < response.len() / 10, "not offloaded");
        clear(dir.path());
        row(if sse { "layer, SSE" } else { "layer, JSON" }, base, peak);
    }
    if want("engine") {
        let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
        let call = ToolCall::new("recall_memories", Some(json!({"detail": "full"})));
        let v: Value = serde_json::from_slice(&response).unwrap();
        let mut result = serde_json::to_vec(&v["result"]).unwrap();
        result.shrink_to_fit();
        let result = Bytes::from(result);
        drop(v);
        let base = live();
        let (outcome, peak) = peak_during(|| offloader.process(&call, &result).unwrap());
        assert!(matches!(outcome, Outcome::Offloaded(_)));
        drop(outcome);
        clear(dir.path());
        let result_size = result.len();
        drop(result);
        let _ = result_size;
        row("engine (Offloader::process)", base, peak);
    }
    if want("value") {
        let base = live();
        let (v, peak) = peak_during(|| serde_json::from_slice::<Value>(&response).unwrap());
        drop(v);
        row("one from_slice::<Value>", base, peak);
    }
    if want("naive") {
        let base = live();
        let (_, peak) = peak_during(|| {
            let v: Value = serde_json::from_slice(&response).unwrap();
            let mut out = Vec::new();
            for r in v["result"]["structuredContent"]["memories"]
                .as_array()
                .unwrap()
            {
                serde_json::to_writer(&mut out, r).unwrap();
                out.push(b'\n');
            }
            std::fs::write(dir.path().join("naive.jsonl"), out).unwrap();
        });
        clear(dir.path());
        row("naive (Value, each record, write)", base, peak);
    }
    drop(response);
    for r in rows {
        println!("ROW\t{}", r.join("\t"));
    }
}

/// Time to write one offload file, 500 full memories.
fn write_times(quick: bool) {
    let dir = tempfile::tempdir().unwrap();
    let reps = if quick { 30 } else { 200 };
    let result = Bytes::from(serde_json::to_vec(&support::memory_result(500)).unwrap());
    let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let call = ToolCall::new("recall_memories", Some(json!({"detail": "full"})));
    let mut process = Vec::with_capacity(reps);
    let mut write = Vec::with_capacity(reps);
    let mut file_len = 0;
    for _ in 0..reps {
        let start = Instant::now();
        let outcome = offloader.process(&call, &result).unwrap();
        process.push(start.elapsed().as_nanos() as f64);
        let Outcome::Offloaded(o) = outcome else {
            panic!("500 memories must be offloaded")
        };
        let contents = std::fs::read(&o.file.path).unwrap();
        file_len = contents.len();
        std::fs::remove_file(&o.file.path).unwrap();
        let start = Instant::now();
        let name = o
            .file
            .path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let path = offloader.store().write(&name, &contents).unwrap();
        write.push(start.elapsed().as_nanos() as f64);
        std::fs::remove_file(path).unwrap();
    }
    process.sort_by(f64::total_cmp);
    write.sort_by(f64::total_cmp);
    support::print_table(
        "write",
        &format!(
            "One offload file for 500 full memories ({:.2} MB result, {:.2} MB file, {reps} runs)",
            result.len() as f64 / 1e6,
            file_len as f64 / 1e6
        ),
        &["step", "median", "p99", "LRO paper"],
        &[
            vec![
                "Offloader::process (parse, records, stats, recipes, write)".into(),
                support::fmt_ns(support::percentile(&process, 50.0)),
                support::fmt_ns(support::percentile(&process, 99.0)),
                "≈ 24 ms median".into(),
            ],
            vec![
                "FsStore::write of the file alone".into(),
                support::fmt_ns(support::percentile(&write, 50.0)),
                support::fmt_ns(support::percentile(&write, 99.0)),
                "—".into(),
            ],
        ],
    );
}

/// A shape measured: its name and a builder of the result (compact JSON).
type Shape = (&'static str, fn() -> Vec<u8>);

/// The shapes measured: the issue's, normal results, and more hostile ones.
const SHAPES: [Shape; 11] = [
    ("newlines, 20 MB text block", || newlines(20)),
    ("newlines, 40 MB text block", || newlines(40)),
    ("zeros array, 20 MB text block", || zeros(20, false)),
    ("zeros array, 20 MB structuredContent", || zeros(20, true)),
    ("one-letter lines, 20 MB text block", || {
        text_block(&"a\n".repeat(20_000_000 / 3))
    }),
    ("JSON lines [0], 20 MB text block", || {
        text_block(&"[0]\n".repeat(20_000_000 / 5))
    }),
    ("zeros array, 20 MB text block, pretty", || {
        let n = 20_000_000 / 6;
        text_block(&serde_json::to_string_pretty(&vec![0; n]).unwrap())
    }),
    (
        "zeros array, 20 MB text block, odd layout (kept verbatim)",
        || text_block(&format!("[{}]", vec!["0"; 20_000_000 / 3].join(" ,"))),
    ),
    ("20 MB of empty text blocks (passes inline)", || {
        let block = r#"{"type":"text","text":""}"#;
        let blocks = vec![block; 20_000_000 / (block.len() + 1)].join(",");
        format!(r#"{{"content":[{blocks}]}}"#).into_bytes()
    }),
    ("200 full memories", || to_vec(&support::memory_result(200))),
    ("10 MB of full memories", || {
        to_vec(&support::memory_result(support::memories_for_bytes(
            10_000_000,
        )))
    }),
];

fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap();
    out.shrink_to_fit();
    out
}

/// A result of one text block.
fn text_block(text: &str) -> Vec<u8> {
    to_vec(&json!({"content": [{"type": "text", "text": text}]}))
}

/// A text block of newlines only, `mb` MB of JSON (each `\n` is 2 bytes).
fn newlines(mb: usize) -> Vec<u8> {
    let text = "\n".repeat(mb * 1_000_000 / 2);
    to_vec(&json!({"content": [{"type": "text", "text": text}]}))
}

/// A JSON array of zeros, `mb` MB: the text of a block, or a field of
/// `structuredContent` (with a short text block beside it).
fn zeros(mb: usize, structured: bool) -> Vec<u8> {
    let n = mb * 1_000_000 / 2;
    let mut array = String::with_capacity(2 * n + 2);
    array.push('[');
    for i in 0..n {
        if i > 0 {
            array.push(',');
        }
        array.push('0');
    }
    array.push(']');
    let result = if structured {
        format!(
            r#"{{"content":[{{"type":"text","text":"{n} zeros"}}],"structuredContent":{{"values":{array}}}}}"#
        )
    } else {
        let text = serde_json::to_string(&array).unwrap();
        format!(r#"{{"content":[{{"type":"text","text":{text}}}]}}"#)
    };
    result.into_bytes()
}

/// One shape: peak heap and time of `Offloader::process`, file size.
fn shape_case(name: &str, quick: bool) {
    let (_, build) = SHAPES.iter().find(|s| s.0 == name).expect("known shape");
    let dir = tempfile::tempdir().unwrap();
    let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let call = ToolCall::new("hostile_tool", None);
    let result = Bytes::from(build());
    let size = result.len() as f64;
    let base = live();
    let rss_base = reset_peak_rss();
    let start = Instant::now();
    let (outcome, peak) = peak_during(|| offloader.process(&call, &result));
    let mut times = vec![start.elapsed().as_nanos() as f64];
    let rss_peak = peak_rss();
    let held = live() - base;
    let rss_held = current_rss().saturating_sub(rss_base);
    let (file, count) = match outcome {
        Ok(Outcome::Offloaded(o)) => (
            std::fs::metadata(&o.file.path).unwrap().len() as f64,
            o.response.summary.count.to_string(),
        ),
        Ok(Outcome::Inline(reason)) => (0.0, format!("inline: {reason:?}")),
        // Refused unread (e.g. too many content blocks): passes through.
        Err(e) => (0.0, format!("refused: {e}")),
        other => panic!("{name}: {other:?}"),
    };
    clear(dir.path());
    // Small results: the median of more runs.
    let reps = match result.len() {
        n if n < 1_000_000 => {
            if quick {
                20
            } else {
                100
            }
        }
        n if n < 15_000_000 => {
            if quick {
                2
            } else {
                5
            }
        }
        _ => 0,
    };
    for _ in 0..reps {
        let start = Instant::now();
        let outcome = offloader.process(&call, &result);
        times.push(start.elapsed().as_nanos() as f64);
        drop(outcome);
        clear(dir.path());
    }
    times.sort_by(f64::total_cmp);
    let ratio = (peak - base) as f64 / size;
    let row = [
        name.to_owned(),
        format!("{:.2} MB", size / 1e6),
        count,
        format!("{:.1} MB", (peak - base) as f64 / 1e6),
        format!("{ratio:.2}"),
        format!("{:.2} MB", held as f64 / 1e6),
        format!("{:.1} MB", rss_peak.saturating_sub(rss_base) as f64 / 1e6),
        format!("{:.1} MB", rss_held as f64 / 1e6),
        support::fmt_ns(support::percentile(&times, 50.0)),
        format!("{:.2} MB", file / 1e6),
        format!("{:.2}", file / size),
        format!(
            "≤ {BOUND:.1} ({})",
            if ratio <= BOUND { "met" } else { "MISSED" }
        ),
    ];
    println!("ROW\t{}", row.join("\t"));
}
