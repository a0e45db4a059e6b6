//! Extraction against the `jq` binary, in the same run: recipe 6 (count by
//! namespace, `jq -s`) and a custom per-record filter over the offload file
//! of a 10 MB result of full-detail memories (the table gives the file's
//! size), from the file on disk to the output lines (the
//! extractor: read, parse, evaluate, print one page of everything; `jq`:
//! `tail -n +2 FILE | jq ...` through bash, output collected). A summary
//! table gives the ratio jq / extractor (target: at least 3).
//!
//! `LRO_BENCH_QUICK=1` shortens the runs. `jq` must be on `PATH` for the
//! comparison (its rows are skipped otherwise).

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tower_lro::config::OffloadConfig;
use tower_lro::extract::{ExtractLimits, Extractor, Paging, RecipeCommand};
use tower_lro::offload::{Offloader, Outcome, ToolCall};

use support::{fmt_ns, median_ns, record};

/// Writes the 10 MB file (through the engine, so it is a real offload file)
/// and returns it with recipe 6's command.
fn fixture(dir: &Path) -> (PathBuf, String) {
    let n = support::memories_for_bytes(10 * 1000 * 1000);
    let result = support::memory_result(n);
    let o = Offloader::new(OffloadConfig::default().output_dir(dir));
    match o.process(
        &ToolCall::new("recall_memories", None),
        result.to_string().as_bytes(),
    ) {
        Ok(Outcome::Offloaded(off)) => (
            off.file.path.clone(),
            off.response.jq_recipes[5].command.clone(),
        ),
        other => panic!("expected an offload, got {other:?}"),
    }
}

fn jq_available() -> bool {
    Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_jq(command: &str) -> usize {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail; {command}"))
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{command} failed");
    out.stdout.len()
}

fn cases(file: &Path, recipe6: &str) -> Vec<(&'static str, String)> {
    let q = |s: &str| format!("tail -n +2 '{}' | jq {s}", file.display());
    vec![
        ("recipe 6 (count by namespace)", recipe6.to_owned()),
        (
            "custom: select(.provenance.confidence > 0.5) | {id, title, tags}",
            q("-c 'select(.provenance.confidence > 0.5) | {id, title, tags}'"),
        ),
    ]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recipe6) = fixture(dir.path());
    let size = std::fs::metadata(&file).unwrap().len();
    let quick = support::quick();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(if quick { 300 } else { 2000 }))
        .measurement_time(Duration::from_secs(if quick { 2 } else { 10 }))
        .configure_from_args();
    let extractor = Extractor::new(ExtractLimits::default().max_page_bytes(256 << 20));
    let has_jq = jq_available();
    let cases = cases(&file, &recipe6);
    let mut group = c.benchmark_group("extract/10mb");
    for (name, command) in &cases {
        let query = RecipeCommand::parse(command).unwrap().query;
        let ours = format!("{name} / extractor");
        group.bench_function(&ours, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    let page = extractor
                        .extract_blocking(&file, &query, Paging::ALL)
                        .unwrap();
                    std::hint::black_box(page.lines.len());
                }
                let took = start.elapsed();
                record(&ours, iters, took);
                took
            })
        });
        if has_jq {
            let theirs = format!("{name} / jq");
            group.bench_function(&theirs, |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(run_jq(command));
                    }
                    let took = start.elapsed();
                    record(&theirs, iters, took);
                    took
                })
            });
        }
    }
    group.finish();
    summary(&cases, size);
}

fn summary(cases: &[(&'static str, String)], size: u64) {
    let mut rows = Vec::new();
    for (name, _) in cases {
        let Some(ours) = median_ns(&format!("{name} / extractor")) else {
            continue;
        };
        let theirs = median_ns(&format!("{name} / jq"));
        let mbps = size as f64 / 1e6 / (ours / 1e9);
        rows.push(vec![
            (*name).to_owned(),
            fmt_ns(ours),
            format!("{mbps:.0} MB/s"),
            theirs.map_or("-".into(), fmt_ns),
            theirs.map_or("-".into(), |t| format!("{:.1}x", t / ours)),
        ]);
    }
    support::print_table(
        "extract",
        &format!(
            "Extraction over a {:.1} MB file, against jq (same run)",
            size as f64 / 1e6
        ),
        &[
            "query",
            "extractor",
            "throughput",
            "jq 1.6",
            "jq / extractor",
        ],
        &rows,
    );
}
