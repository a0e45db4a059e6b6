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

/// A JSON text with the volatile parts of one offload (its file's path and
/// name, times) replaced by placeholders.
fn normalised(text: &str, off: &tower_lro::offload::Offloaded) -> String {
    let path = off.file.path.to_string_lossy().into_owned();
    let name = off
        .file
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut out = text.replace(&path, "PATH").replace(&name, "NAME");
    // RFC 3339 times (created_at, expires_at, the guidance's expiry).
    let time = regex_lite_times(&out);
    for t in time {
        out = out.replace(&t, "TIME");
    }
    out
}

/// The RFC 3339 timestamps in `text` (`2026-11-28T15:30:03...Z` or `+00:00`).
fn regex_lite_times(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    for i in 0..b.len().saturating_sub(19) {
        let s = &b[i..i + 19];
        let digits = |r: std::ops::Range<usize>| s[r].iter().all(u8::is_ascii_digit);
        if digits(0..4)
            && s[4] == b'-'
            && digits(5..7)
            && s[7] == b'-'
            && digits(8..10)
            && s[10] == b'T'
            && digits(11..13)
            && s[13] == b':'
        {
            let end = text[i..]
                .find(['"', ' ', ')', ',', '\\'])
                .map_or(text.len(), |e| i + e);
            found.push(text[i..end].to_owned());
        }
    }
    found.sort_by_key(|t| std::cmp::Reverse(t.len()));
    found.dedup();
    found
}

/// `n` lines that need escapes (quotes, backslashes, control bytes), blank
/// ones and non-ASCII ones; the fifth `long` bytes long.
fn tricky_lines(n: usize, long: usize) -> String {
    (0..n)
        .map(|i| match i % 6 {
            0 => format!("{i}: a \"quote\" and a back\\slash\n"),
            1 => format!("{i}: tab\there, \u{1}control, \u{c}feed\n"),
            2 => "\n".to_owned(),
            3 => format!("{i}: é ünï \u{1F600}\n"),
            _ if i == 4 && long > 0 => format!("{}\n", "x\"y".repeat(long / 3)),
            _ => format!("{i}: worker finished job {}\n", i * 7),
        })
        .collect()
}

/// Plain text offloaded from a spill: one record per non-empty line, its
/// number and its text whole, escaped as JSON, whatever the reads cut
/// (a line of 600 KB crosses them). The estimate of a text read in pieces
/// is the sum of the pieces' estimates: it may differ from the whole's by a
/// token per read (`Offloader::process` estimates the whole), so the
/// comparison with memory is on texts under one read.
#[test]
fn plain_lines_of_any_length_come_whole() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let text = tricky_lines(3_000, 600_000);
    let message =
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}});
    let (reply, _) = run(&o, "tail_logs", &message);
    let records = check(&o, &reply, &message, true);
    let expected: Vec<Value> = text
        .split('\n')
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
        .map(|(i, line)| json!({"line": i + 1, "text": line}))
        .collect();
    assert_eq!(records.len(), expected.len());
    assert!(records == expected, "the records differ from the lines");
}

/// The same result offloaded from memory and from a spill file: the same
/// data lines, header, descriptor and rewritten result, names and times
/// aside, and the original rebuilt byte for byte from either file. For
/// every record kind a result can hold, and the SDKs' `{"result": text}`;
/// from the spill with the parallel switch on and off.
#[test]
fn a_result_gives_the_same_file_and_descriptor_from_memory_and_from_a_spill() {
    use tower_lro::descriptor::Detail;
    use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
    let rows = rows(3_000);
    let rows_json = serde_json::to_string(&rows).unwrap();
    let jsonl: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let log: String = (0..6_000)
        .map(|i| {
            format!(
                "2026-11-28 12:00:{:02} worker {i} finished job {}\n",
                i % 60,
                i * 7
            )
        })
        .collect();
    // Lines that need escapes, and blank ones (under one read: a text
    // estimated in reads may differ by a token per read, see the note on
    // `plain_lines_of_any_length_come_whole`).
    let tricky = tricky_lines(3_000, 0);
    assert!(tricky.len() < 200_000);
    let memories = MemoryGenerator::new(5).memories(300, Detail::Full);
    let cases: Vec<(&str, Value)> = vec![
        (
            "plain text that needs escapes",
            json!({"content": [{"type": "text", "text": tricky}]}),
        ),
        (
            "json array text",
            json!({"content": [{"type": "text", "text": rows_json}]}),
        ),
        (
            "jsonl text",
            json!({"content": [{"type": "text", "text": jsonl}]}),
        ),
        (
            "plain text",
            json!({"content": [{"type": "text", "text": log}]}),
        ),
        (
            "pretty json object text",
            json!({"content": [{"type": "text", "text":
                serde_json::to_string_pretty(&json!({"items": rows, "next": null})).unwrap()}]}),
        ),
        (
            "structured records with a text copy",
            memory_tool_result(&memories),
        ),
        (
            "structured records alone",
            json!({"content": [{"type": "text", "text": "see structuredContent"}],
                   "structuredContent": {"rows": rows, "total": 3000}}),
        ),
        (
            "a str result (structuredContent {result: text})",
            json!({"content": [{"type": "text", "text": log}],
                   "structuredContent": {"result": log}}),
        ),
        (
            "a str result holding JSON",
            json!({"content": [{"type": "text", "text": rows_json}],
                   "structuredContent": {"result": rows_json}}),
        ),
    ];
    let mut differ = Vec::new();
    for (name, result) in cases {
        let dir = tempfile::tempdir().unwrap();
        let o = offloader(dir.path());
        let call = ToolCall::new("query_logs", None);
        let bytes = result.to_string();
        let Outcome::Offloaded(memory) = o.process(&call, bytes.as_bytes()).unwrap() else {
            panic!("{name}: not offloaded from memory");
        };
        // The statistics of a spilled result are folded on a thread of
        // their own, unless the parallel switch is off: the same either way.
        let serial = Offloader::new(
            OffloadConfig::default()
                .output_dir(dir.path())
                .parallel(false),
        );
        for (spill_how, o) in [("a spill", &o), ("a spill, parallel work off", &serial)] {
            let message = json!({"jsonrpc": "2.0", "id": 1, "result": result});
            let (reply, _) = run(o, "query_logs", &message);
            let Outcome::Offloaded(spilled) = &reply.outcome else {
                differ.push(format!(
                    "{name}: not offloaded from {spill_how}: {:?}",
                    reply.outcome
                ));
                continue;
            };
            for (how, off) in [("memory", &memory), (spill_how, spilled)] {
                if o.rebuild_file(&off.file.path).unwrap() != bytes {
                    differ.push(format!("{name}: rebuilt from {how}: not byte for byte"));
                }
            }
            let file = |off: &tower_lro::offload::Offloaded| {
                normalised(&std::fs::read_to_string(&off.file.path).unwrap(), off)
            };
            let descriptor = |off: &tower_lro::offload::Offloaded| {
                normalised(&serde_json::to_string(&off.response).unwrap(), off)
            };
            let sent: Value = serde_json::from_str(reply.message.as_deref().unwrap()).unwrap();
            let rewritten = |text: &str, off| normalised(text, off);
            let parts = [
                (
                    "data lines",
                    file(&memory).split_once('\n').unwrap().1.to_owned(),
                    file(spilled).split_once('\n').unwrap().1.to_owned(),
                ),
                (
                    "header",
                    file(&memory).split_once('\n').unwrap().0.to_owned(),
                    file(spilled).split_once('\n').unwrap().0.to_owned(),
                ),
                ("descriptor", descriptor(&memory), descriptor(spilled)),
                (
                    "rewritten result",
                    rewritten(&memory.result, &memory),
                    rewritten(&sent["result"].to_string(), spilled),
                ),
            ];
            for (part, a, b) in parts {
                let (a, b): (Value, Value) = match part {
                    "data lines" => (Value::String(a), Value::String(b)),
                    _ => (
                        serde_json::from_str(&a).unwrap(),
                        serde_json::from_str(&b).unwrap(),
                    ),
                };
                if a != b {
                    differ.push(format!(
                        "{name} ({spill_how}): {part}: {}",
                        difference(&a, &b, String::new())
                    ));
                }
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Where `a` and `b` first differ: a JSON path and both values there.
fn difference(a: &Value, b: &Value, at: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if w == v => {}
                    Some(w) => return difference(v, w, format!("{at}.{k}")),
                    None => return format!("{at}.{k} only from memory: {}", short(v)),
                }
            }
            let extra: Vec<_> = y.keys().filter(|k| !x.contains_key(*k)).collect();
            format!("{at}: only from a spill: {extra:?}")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let i = (0..x.len()).find(|&i| x[i] != y[i]).unwrap_or(0);
            difference(&x[i], &y[i], format!("{at}[{i}]"))
        }
        (Value::String(x), Value::String(y)) => match (
            serde_json::from_str::<Value>(x),
            serde_json::from_str::<Value>(y),
        ) {
            (Ok(v @ (Value::Object(_) | Value::Array(_))), Ok(w)) => {
                difference(&v, &w, format!("{at}(json)"))
            }
            _ => {
                let i = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
                let from = floor(x, i.saturating_sub(80));
                format!(
                    "{at}: from byte {i}:\n    memory:  {}\n    spilled: {}",
                    short(&Value::String(x[from..].to_owned())),
                    short(&Value::String(y[floor(y, from)..].to_owned()))
                )
            }
        },
        _ => format!(
            "{at}:\n    memory:  {}\n    spilled: {}",
            short(a),
            short(b)
        ),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.len() > 300 {
        true => format!("{}…", &s[..floor(&s, 300)]),
        false => s,
    }
}

/// The last character boundary of `s` at or before byte `i`.
fn floor(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
