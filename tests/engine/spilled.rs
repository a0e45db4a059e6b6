//! A result too large to hold, offloaded from a spill file in bounded
//! memory (`Offloader::process_spilled`): every record in the file, the
//! completeness contract true, the original rebuilt (byte for byte when it
//! was compact, equal as JSON otherwise), the rewritten message a valid
//! response with the descriptor, recipes that run under real jq; and what
//! it cannot take apart kept as it was.

use crate::common;
use crate::completeness::data_figures;

use serde_json::{Value, json};
use std::io::{Seek, Write};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{Offloader, Outcome, PassReason, SpilledReply, ToolCall};

fn rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| (i, ["info", "warn", "error"][i % 3]))
        .map(|(i, level)| json!({"ts": 1_700_000_000 + i, "level": level, "msg": format!("worker {i} did \"x\"\tand y é \u{1F600}"), "n": i}))
        .collect()
}

fn spill(message: &[u8]) -> std::fs::File {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(message).unwrap();
    f.rewind().unwrap();
    f
}

fn run(o: &Offloader, tool: &str, message: &Value) -> (SpilledReply, String) {
    let text = message.to_string();
    let reply = o.process_spilled(
        &ToolCall::new(tool, None),
        &spill(text.as_bytes()),
        text.len() as u64,
    );
    (reply, text)
}

/// Checks one offloaded reply: the file, its contract, the rebuild, the
/// rewritten message, a recipe under jq. Returns the file's records.
fn check(o: &Offloader, reply: &SpilledReply, original: &Value, exact: bool) -> Vec<Value> {
    let Outcome::Offloaded(off) = &reply.outcome else {
        panic!("expected an offload, got {:?}", reply.outcome);
    };
    assert_eq!(reply.id, original["id"]);
    let file = std::fs::read(&off.file.path).unwrap();
    let (lines, bytes, sha) = data_figures(&file);
    let s = &off.response.summary;
    assert_eq!(s.count, lines);
    assert_eq!(s.data_bytes, Some(bytes));
    assert_eq!(s.data_sha256.as_deref(), Some(sha.as_str()));
    let rebuilt = o.rebuild_file(&off.file.path).unwrap();
    let rebuilt_value: Value = serde_json::from_str(&rebuilt).unwrap();
    // Equal as JSON: a text laid out in no known way comes back compact.
    assert!(
        texts_as_json(&rebuilt_value) == texts_as_json(&original["result"]),
        "the rebuilt result differs"
    );
    if exact {
        assert_eq!(rebuilt, original["result"].to_string());
    }
    let sent: Value = serde_json::from_str(reply.message.as_deref().unwrap()).unwrap();
    assert_eq!(sent["id"], original["id"]);
    assert_eq!(sent["jsonrpc"], "2.0");
    let descriptor: Value =
        serde_json::from_str(sent["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(descriptor["summary"]["count"], lines);
    assert_eq!(descriptor["summary"]["data_sha256"], sha.as_str());
    common::require_jq();
    for recipe in &off.response.jq_recipes {
        common::run_recipe(&recipe.command);
    }
    common::file_records(&off.file.path)
}

/// The result with each text block's text parsed when it is JSON.
fn texts_as_json(result: &Value) -> Value {
    let mut r = result.clone();
    for block in r["content"].as_array_mut().into_iter().flatten() {
        if let Some(t) = block["text"].as_str()
            && let Ok(v) = serde_json::from_str::<Value>(t)
        {
            block["text"] = v;
        }
    }
    r
}

fn offloader(dir: &std::path::Path) -> Offloader {
    Offloader::new(OffloadConfig::default().output_dir(dir))
}

#[test]
fn a_json_array_text_gives_every_element() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows = rows(20_000);
    let message = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
        {"type": "text", "text": serde_json::to_string(&rows).unwrap()},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    ], "isError": false}});
    let (reply, _) = run(&o, "query_logs", &message);
    let records = check(&o, &reply, &message, true);
    assert_eq!(records, rows);
    // The image stays in the rewritten result.
    let sent: Value = serde_json::from_str(reply.message.as_deref().unwrap()).unwrap();
    assert_eq!(sent["result"]["content"][1]["type"], "image");
}

#[test]
fn pretty_json_jsonl_lines_and_structured_content() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows = rows(5_000);
    // Pretty JSON of an object whose bulk is an array: its elements.
    let pretty = serde_json::to_string_pretty(&json!({"total": 5000, "items": rows})).unwrap();
    let message = json!({"jsonrpc": "2.0", "id": "a", "result": {"content": [{"type": "text", "text": format!("\n{pretty}\n")}]}});
    let (reply, _) = run(&o, "query_logs", &message);
    assert_eq!(check(&o, &reply, &message, false), rows);
    // JSON lines, with a trailing newline.
    let jsonl: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let message = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": jsonl}]}});
    let (reply, _) = run(&o, "query_logs", &message);
    assert_eq!(check(&o, &reply, &message, true), rows);
    // Plain lines, empty ones among them, one very long one.
    let mut text: String = (0..30_000)
        .map(|i| {
            if i % 7 == 0 {
                "\n".to_owned()
            } else {
                format!("line {i}: \"quoted\" \\ back\r\n")
            }
        })
        .collect();
    text.push_str(&"x".repeat(3 << 20));
    let message =
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}});
    let (reply, _) = run(&o, "tail_logs", &message);
    let records = check(&o, &reply, &message, true);
    assert_eq!(
        records[0],
        json!({"line": 2, "text": "line 1: \"quoted\" \\ back\r"})
    );
    assert_eq!(
        records.last().unwrap()["text"].as_str().unwrap().len(),
        3 << 20
    );
    // structuredContent as an array, and as an object around one.
    for structured in [
        json!(rows),
        json!({"cursor": null, "rows": rows, "more": false}),
    ] {
        let message = json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "see structuredContent"}], "structuredContent": structured, "_meta": {"k": 1}}});
        let (reply, _) = run(&o, "query_logs", &message);
        assert_eq!(check(&o, &reply, &message, true), rows);
        let sent: Value = serde_json::from_str(reply.message.as_deref().unwrap()).unwrap();
        assert_eq!(
            sent["result"]["content"][1]["text"],
            "see structuredContent"
        );
        // The descriptor in structuredContent too: first in the object, or
        // the one element of a bare array; never an emptied value alone.
        let shown = &sent["result"]["structuredContent"];
        let descriptor = match shown {
            Value::Array(items) => &items[0],
            _ => &shown["offloaded"],
        };
        assert_eq!(descriptor["summary"]["count"], rows.len(), "{shown:.200}");
        if let Some(o) = shown.as_object() {
            assert_eq!(o.keys().next().map(String::as_str), Some("offloaded"));
            assert_eq!(o["rows"], json!([]));
        }
    }
}

#[test]
fn what_cannot_be_taken_apart_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let big = serde_json::to_string(&rows(5_000)).unwrap();
    // Cut short: not JSON.
    let whole =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": big}]}})
            .to_string();
    let cut = &whole[..whole.len() / 2];
    let reply = o.process_spilled(
        &ToolCall::new("t", None),
        &spill(cut.as_bytes()),
        cut.len() as u64,
    );
    assert!(
        matches!(reply.outcome, Outcome::Inline(PassReason::Unparseable(_))),
        "{:?}",
        reply.outcome
    );
    assert!(reply.message.is_none());
    // An error result, with error offloading off.
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": big}], "isError": true}});
    let (reply, _) = run(&o, "t", &message);
    assert!(
        matches!(reply.outcome, Outcome::Inline(PassReason::IsError)),
        "{:?}",
        reply.outcome
    );
    // An error response, not a result.
    let message = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": big}});
    let (reply, _) = run(&o, "t", &message);
    assert!(matches!(reply.outcome, Outcome::Inline(_)));
    // Small after all.
    let message =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}});
    let (reply, _) = run(&o, "t", &message);
    assert!(
        matches!(reply.outcome, Outcome::Inline(PassReason::NoRecords)),
        "{:?}",
        reply.outcome
    );
    // Nothing was written.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}

#[test]
fn a_text_that_copies_structured_content_gives_its_records_once() {
    use tower_lro::descriptor::Detail;
    use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    // What memory servers send: structuredContent and the same as pretty JSON text.
    let memories = MemoryGenerator::new(3).memories(400, Detail::Full);
    let result = memory_tool_result(&memories);
    assert!(result["structuredContent"].is_object() && result["content"][0]["text"].is_string());
    let message = json!({"jsonrpc": "2.0", "id": 9, "result": result});
    let (reply, _) = run(&o, "recall_memories", &message);
    let records = check(&o, &reply, &message, false);
    assert_eq!(records, memories);
}
