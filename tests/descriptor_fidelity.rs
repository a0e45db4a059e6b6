//! What the descriptor says: small (never larger than the result, never
//! over a fixed budget), true (labels follow the records, recipes use
//! fields the records have and print something useful) and safe.

mod common;

use serde_json::{Value, json};
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::{
    Detail, OffloadConfig, Offloaded, Offloader, Outcome, ScriptAwareEstimator, TokenEstimator,
    ToolCall,
};

/// The descriptor budget, in estimated tokens.
const BUDGET: usize = 1200;

fn offloader(dir: &std::path::Path) -> Offloader {
    Offloader::new(OffloadConfig::default().output_dir(dir))
}

fn offload(o: &Offloader, call: &ToolCall, result: &Value) -> Box<Offloaded> {
    match o.process(call, result.to_string().as_bytes()).unwrap() {
        Outcome::Offloaded(off) => off,
        other => panic!("expected an offload, got {other:?}"),
    }
}

/// The descriptor's JSON and its estimated tokens.
fn size(off: &Offloaded) -> (usize, usize) {
    let json = serde_json::to_string(&off.response).unwrap();
    (json.len(), ScriptAwareEstimator.estimate(&json))
}

/// Descriptor sizes for memories and log lines, with extraction on and off
/// (printed with --nocapture); each within the budget.
#[test]
fn descriptor_sizes_report() {
    let dir = tempfile::tempdir().unwrap();
    for extraction in [true, false] {
        let o = Offloader::new(
            OffloadConfig::default()
                .output_dir(dir.path())
                .extraction(extraction),
        );
        for n in [7usize, 29, 200, 4000] {
            let result = memory_tool_result(&MemoryGenerator::new(1).memories(n, Detail::Full));
            let call = ToolCall::new("recall_memories", Some(json!({"detail": "full"})));
            let off = offload(&o, &call, &result);
            let (bytes, est) = size(&off);
            let tokens = off.response.summary.estimated_tokens;
            println!(
                "extraction {extraction}: {n} full memories (~{tokens} tokens): descriptor {bytes} bytes, ~{est} tokens"
            );
            assert!(est <= BUDGET && est < tokens);
        }
        let log: String = (0..2000)
            .map(|i| {
                format!(
                    "2026-11-21 10:00:{:02} INFO worker-{} handled job {i}\n",
                    i % 60,
                    i % 4
                )
            })
            .collect();
        let result = json!({"content": [{"type": "text", "text": log}]});
        let off = offload(&o, &ToolCall::new("tail_logs", None), &result);
        let (bytes, est) = size(&off);
        println!(
            "extraction {extraction}: 2000 log lines: descriptor {bytes} bytes, ~{est} tokens"
        );
        assert!(est <= BUDGET);
    }
}

#[test]
#[ignore]
fn dump_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let result = memory_tool_result(&MemoryGenerator::new(1).memories(7, Detail::Full));
    let call = ToolCall::new("recall_memories", Some(json!({"detail": "full"})));
    let off = offload(&o, &call, &result);
    println!("{}", serde_json::to_string_pretty(&off.response).unwrap());
    println!("{}", off.response.summary.estimated_tokens);
}
