//! Token estimation throughput: the default estimator (and the plain
//! `chars / 4` one) on JSON and on mixed CJK text; the exact o200k BPE when
//! built with `--features o200k`.

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tower_lro::estimate::{CharsPerTokenEstimator, ScriptAwareEstimator, TokenEstimator};

/// The largest char boundary of `s` at or below `at`.
fn char_floor(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn samples(bytes: usize) -> Vec<(&'static str, String)> {
    let mut json = String::new();
    let mems = support::memories(200);
    let one = serde_json::to_string_pretty(&mems).unwrap();
    while json.len() < bytes {
        json.push_str(&one);
    }
    json.truncate(char_floor(&json, bytes));
    let para = "大型结果卸载把过大的工具结果写入文件。The agent reads only what it needs with jq. カタカナとひらがな。한국어 텍스트.\n";
    let mut mixed = String::new();
    while mixed.len() < bytes {
        mixed.push_str(para);
    }
    mixed.truncate(char_floor(&mixed, bytes));
    vec![("json", json), ("mixed_cjk", mixed)]
}

fn bench(
    c: &mut Criterion,
    rows: &mut Vec<Vec<String>>,
    name: &str,
    est: &dyn TokenEstimator,
    bytes: usize,
    target: Option<f64>,
) {
    let quick = support::quick();
    let mut g = c.benchmark_group(format!("estimate/{name}"));
    if quick {
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    for (sample, text) in samples(bytes) {
        g.throughput(Throughput::Bytes(text.len() as u64));
        let key = format!("estimate/{name}/{sample}");
        let mut tokens = 0;
        g.bench_function(sample, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    tokens = std::hint::black_box(est.estimate(std::hint::black_box(&text)));
                }
                let t = start.elapsed();
                support::record(&key, iters, t);
                t
            })
        });
        let ns = support::median_ns(&key).unwrap_or(f64::NAN);
        let gbs = text.len() as f64 / ns;
        rows.push(vec![
            name.to_owned(),
            sample.to_owned(),
            format!("{:.1} MB", text.len() as f64 / 1e6),
            tokens.to_string(),
            format!("{gbs:.3}"),
            match target {
                Some(t) => format!("≥ {t} GB/s ({})", if gbs >= t { "met" } else { "MISSED" }),
                None => "—".into(),
            },
        ]);
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut rows = Vec::new();
    let big = 10 * 1000 * 1000;
    bench(
        &mut c,
        &mut rows,
        "script_aware (default)",
        &ScriptAwareEstimator,
        big,
        Some(1.0),
    );
    bench(
        &mut c,
        &mut rows,
        "chars_per_token",
        &CharsPerTokenEstimator,
        big,
        None,
    );
    #[cfg(feature = "o200k")]
    bench(
        &mut c,
        &mut rows,
        "o200k (exact BPE)",
        &tower_lro::estimate::O200kEstimator,
        if support::quick() { 200_000 } else { 1_000_000 },
        None,
    );
    c.final_summary();
    support::print_table(
        "estimate",
        &format!("Token estimation throughput (quick={})", support::quick()),
        &["estimator", "text", "size", "tokens", "GB/s", "target"],
        &rows,
    );
}
