//! The history offload: rewriting the request body of a
//! 200-turn OpenAI Chat Completions history with 50 large tool answers
//! (about 1 MB) with `HistoryOffloader::rewrite_body`, in `auto` mode with
//! the built-in extractive summarizer, files written to a temp dir.
//!
//! * `first`: a fresh engine and an empty store each time (every tool
//!   answer written, every group summarized);
//! * `again`: the same body once more through an engine that has rewritten
//!   it before (the stable path a client resending its history takes);
//! * `next turn`: the same history plus one new turn, through that engine;
//! * baseline: one `serde_json::from_slice::<Value>` of the same body, in
//!   the same run.
//!
//! `LRO_BENCH_QUICK=1` shortens the runs. A summary table of ratios is
//! printed at the end.

#[path = "../examples/support/chat_history.rs"]
mod chat_history;
#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::{Value, json};
use tower_lro::history::{BodyRewrite, ChatFormat, HistoryConfig, HistoryOffloader, SummaryMode};

use support::{fmt_ns, median_ns, record};

const TURNS: usize = 200;
const LARGE: usize = 50;
const TOOL_BYTES: usize = 19_000;

/// An engine in `auto` mode writing to `store`.
fn offloader(store: &std::path::Path) -> HistoryOffloader {
    let config = HistoryConfig::default()
        .mode(SummaryMode::Auto)
        .store_dir(store)
        .chat_id("bench");
    HistoryOffloader::new(config)
}

/// Rewrites `body`, checking that it was rewritten.
fn rewrite(rt: &tokio::runtime::Runtime, engine: &HistoryOffloader, body: &[u8]) -> usize {
    let outcome = rt.block_on(engine.rewrite_body(Some(ChatFormat::OpenAiChat), body));
    match outcome.expect("the history is rewritten") {
        BodyRewrite::Rewritten { body, .. } => body.len(),
        _ => panic!("a 1 MB history must be rewritten"),
    }
}

/// Times `iters` runs of `run`, recorded under `name`.
fn timed(name: &str, iters: u64, mut run: impl FnMut() -> Duration) -> Duration {
    let total: Duration = (0..iters).map(|_| run()).sum();
    record(name, iters, total);
    total
}

fn main() {
    let body = serde_json::to_vec(&chat_history::request_body(
        "/v1/chat/completions",
        TURNS,
        LARGE,
        TOOL_BYTES,
    ))
    .unwrap();
    let next = next_turn(&body);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let quick = support::quick();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(if quick { 300 } else { 1000 }))
        .measurement_time(Duration::from_secs(if quick { 2 } else { 5 }))
        .configure_from_args();
    let mut group = c.benchmark_group("history/200-turns");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("serde_json::from_slice::<Value>", |b| {
        b.iter_custom(|iters| {
            timed("parse", iters, || {
                let start = Instant::now();
                let v: Value = serde_json::from_slice(&body).unwrap();
                let took = start.elapsed();
                std::hint::black_box(v);
                took
            })
        })
    });
    group.bench_function("first", |b| {
        b.iter_custom(|iters| {
            timed("first", iters, || {
                let store = tempfile::tempdir().unwrap();
                let engine = offloader(store.path());
                let start = Instant::now();
                std::hint::black_box(rewrite(&rt, &engine, &body));
                start.elapsed()
            })
        })
    });
    let store = tempfile::tempdir().unwrap();
    let engine = offloader(store.path());
    let first_len = rewrite(&rt, &engine, &body);
    rewrite(&rt, &engine, &next);
    for (name, input) in [("again", &body), ("next turn", &next)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(name, iters, || {
                    let start = Instant::now();
                    std::hint::black_box(rewrite(&rt, &engine, input));
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
    summary(body.len(), first_len);
}

/// The same history with the assistant's answer and one more question.
fn next_turn(body: &[u8]) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(body).unwrap();
    let messages = value["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": "Tickets TCK-0-1 and TCK-2-4 are open."}));
    messages.push(json!({"role": "user", "content": "Close TCK-0-1, please."}));
    serde_json::to_vec(&value).unwrap()
}

fn summary(bytes: usize, rewritten: usize) {
    let Some(parse) = median_ns("parse") else {
        return;
    };
    let mut rows = vec![vec![
        "serde_json::from_slice::<Value>".to_owned(),
        fmt_ns(parse),
        format!("{:.0} MB/s", bytes as f64 / 1e6 / (parse / 1e9)),
        "1.0x".to_owned(),
    ]];
    for name in ["first", "again", "next turn"] {
        if let Some(ns) = median_ns(name) {
            rows.push(vec![
                format!("rewrite_body, {name}"),
                fmt_ns(ns),
                format!("{:.0} MB/s", bytes as f64 / 1e6 / (ns / 1e9)),
                format!("{:.1}x", ns / parse),
            ]);
        }
    }
    support::print_table(
        "history",
        &format!(
            "History offload: {TURNS} turns, {LARGE} large tool answers, {:.2} MB body -> {:.1} KB",
            bytes as f64 / 1e6,
            rewritten as f64 / 1e3
        ),
        &["case", "median", "throughput", "vs one parse"],
        &rows,
    );
}
