//! The history offload: compaction, compression and auto mode on
//! the three chat formats, their pairing rules, stability across turns, the
//! files written (JSONL recipes run under real `jq`), CJK-aware estimation,
//! the extractive summarizer and typed errors.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tower_lro::descriptor::OffloadResponse;
use tower_lro::estimate::{CharsPerTokenEstimator, ScriptAwareEstimator, TokenEstimator};
use tower_lro::history::{
    BodyRewrite, ChatFormat, ExtractiveSummarizer, HistoryConfig, HistoryError, HistoryOffloader,
    HistoryOutcome, POINTER_MARKER, SUMMARY_MARKER, Summarizer, SummaryError, SummaryFuture,
    SummaryMode, SummaryRequest,
};

const SYSTEM: &str = "You are an operations agent. Use the tools.";

const SERVICES: [&str; 3] = ["billing", "search", "auth"];

/// A large JSON answer: `n` incident records.
fn incidents(turn: usize, n: usize) -> String {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("INC-{turn}-{i:04}"), "service": SERVICES[i % 3],
                   "severity": i % 4, "title": format!("Latency spike on node-{i} after deploy {turn}")})
        })
        .collect();
    Value::Array(rows).to_string()
}

/// A large plain-text answer: `n` log lines.
fn log_text(turn: usize, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "2026-11-22T09:{:02}:{:02}Z worker-{turn} request req_{turn}_{i} took {}ms\n",
                i / 60 % 60,
                i % 60,
                100 + i
            )
        })
        .collect()
}

/// The answer of turn `t`: JSON on even turns, text on odd ones.
fn answer(t: usize) -> String {
    if t.is_multiple_of(2) {
        incidents(t, 150)
    } else {
        log_text(t, 200)
    }
}

/// Chat Completions: system, then `turns` turns of user question,
/// assistant call, tool answer, assistant reply.
fn chat_history(turns: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "system", "content": SYSTEM})];
    for t in 0..turns {
        let id = format!("call_{t}");
        m.push(json!({"role": "user", "content": format!("Turn {t}: what failed in deploy {t}?")}));
        m.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "query_incidents", "arguments": format!("{{\"query\":\"deploy {t}\"}}")}}]}));
        m.push(json!({"role": "tool", "tool_call_id": id, "content": answer(t)}));
        m.push(json!({"role": "assistant", "content": format!("Deploy {t} caused latency on node-{t}. Rolled back.")}));
    }
    m
}

/// Anthropic Messages: the same turns; answers alternate string and block
/// content.
fn anthropic_history(turns: usize) -> Vec<Value> {
    let mut m = Vec::new();
    for t in 0..turns {
        let id = format!("toolu_{t}");
        let content = if t % 2 == 0 {
            json!(answer(t))
        } else {
            json!([{"type": "text", "text": answer(t)}])
        };
        m.push(json!({"role": "user", "content": format!("Turn {t}: what failed in deploy {t}?")}));
        m.push(json!({"role": "assistant", "content": [{"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": id, "name": "query_incidents", "input": {"query": format!("deploy {t}")}}]}));
        m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": content}]}));
        m.push(json!({"role": "assistant", "content": format!("Deploy {t} caused latency on node-{t}.")}));
    }
    m
}

/// OpenAI Responses: the same turns as input items, with reasoning items.
fn responses_history(turns: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "developer", "content": SYSTEM})];
    for t in 0..turns {
        let id = format!("fc_{t}");
        m.push(json!({"role": "user", "content": format!("Turn {t}: what failed in deploy {t}?")}));
        m.push(json!({"type": "reasoning", "id": format!("rs_{t}"), "summary": []}));
        m.push(
            json!({"type": "function_call", "call_id": id, "name": "query_incidents",
                      "arguments": format!("{{\"query\":\"deploy {t}\"}}")}),
        );
        m.push(json!({"type": "function_call_output", "call_id": id, "output": answer(t)}));
        m.push(json!({"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": format!("Deploy {t} caused latency.")}]}));
    }
    m
}

fn history(format: ChatFormat, turns: usize) -> Vec<Value> {
    match format {
        ChatFormat::OpenAiChat => chat_history(turns),
        ChatFormat::AnthropicMessages => anthropic_history(turns),
        ChatFormat::OpenAiResponses => responses_history(turns),
    }
}

const FORMATS: [ChatFormat; 3] = [
    ChatFormat::OpenAiChat,
    ChatFormat::AnthropicMessages,
    ChatFormat::OpenAiResponses,
];

/// A configuration for small test histories.
fn config(dir: &Path, mode: SummaryMode) -> HistoryConfig {
    HistoryConfig::default()
        .mode(mode)
        .store_dir(dir)
        .max_total_tokens(3_000)
        .low_water_tokens(Some(3_000))
        .max_tool_message_tokens(300)
        .group_token_threshold(Some(2_500))
        .chat_id("ops-chat-1")
}

fn s(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// Chat Completions: every tool message follows, past other tool messages
/// only, an assistant message that made its call; every call is answered.
fn check_chat_pairs(m: &[Value]) {
    for (j, msg) in m.iter().enumerate().filter(|(_, x)| s(x, "role") == "tool") {
        let k = (0..j)
            .rev()
            .find(|&k| s(&m[k], "role") != "tool")
            .expect("a message before a tool message");
        let ids: Vec<String> = m[k]["tool_calls"]
            .as_array()
            .expect("assistant with tool_calls before a tool message")
            .iter()
            .map(|c| s(c, "id"))
            .collect();
        assert!(
            ids.contains(&s(msg, "tool_call_id")),
            "tool message {j} is not paired"
        );
    }
    for (i, msg) in m.iter().enumerate() {
        for call in msg["tool_calls"].as_array().into_iter().flatten() {
            let answered = m[i + 1..]
                .iter()
                .take_while(|x| s(x, "role") == "tool")
                .any(|x| s(x, "tool_call_id") == s(call, "id"));
            assert!(
                answered,
                "call {} of message {i} has no answer right after it",
                s(call, "id")
            );
        }
    }
}

fn blocks<'a>(msg: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    msg["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |b| s(b, "type") == kind)
}

/// Anthropic: the tool_result blocks of a message answer the tool_use
/// blocks of the message right before it, and every tool_use is answered
/// in the next message.
fn check_anthropic_pairs(m: &[Value]) {
    for (j, msg) in m.iter().enumerate() {
        for result in blocks(msg, "tool_result") {
            assert!(j > 0, "a tool_result in the first message");
            let ids: Vec<String> = blocks(&m[j - 1], "tool_use").map(|b| s(b, "id")).collect();
            assert!(
                ids.contains(&s(result, "tool_use_id")),
                "tool_result in message {j} is not paired"
            );
        }
        for call in blocks(msg, "tool_use") {
            let next = m.get(j + 1).expect("a tool_use is answered");
            assert!(
                blocks(next, "tool_result").any(|b| s(b, "tool_use_id") == s(call, "id")),
                "tool_use in {j} unanswered"
            );
        }
    }
    assert_eq!(s(&m[0], "role"), "user", "the first message is the user's");
}

/// Responses: every output has its call before it, every call its output
/// after it, and a reasoning item is followed by its item.
fn check_responses_pairs(m: &[Value]) {
    for (j, item) in m.iter().enumerate() {
        match s(item, "type").as_str() {
            "function_call_output" => {
                assert!(
                    m[..j].iter().any(|x| s(x, "type") == "function_call"
                        && s(x, "call_id") == s(item, "call_id")),
                    "output {j} without its call"
                )
            }
            "function_call" => assert!(
                m[j + 1..]
                    .iter()
                    .any(|x| s(x, "type") == "function_call_output"
                        && s(x, "call_id") == s(item, "call_id")),
                "call {j} without its output"
            ),
            "reasoning" => assert_eq!(
                s(&m[j + 1], "type"),
                "function_call",
                "reasoning {j} lost its call"
            ),
            _ => {}
        }
    }
}

fn check_pairs(format: ChatFormat, m: &[Value]) {
    match format {
        ChatFormat::OpenAiChat => check_chat_pairs(m),
        ChatFormat::AnthropicMessages => check_anthropic_pairs(m),
        ChatFormat::OpenAiResponses => check_responses_pairs(m),
    }
}

/// The text of every tool answer of a history, in order.
fn answer_texts(format: ChatFormat, m: &[Value]) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::String(t) => t.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| s(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    match format {
        ChatFormat::OpenAiChat => m
            .iter()
            .filter(|x| s(x, "role") == "tool")
            .map(|x| text(&x["content"]))
            .collect(),
        ChatFormat::AnthropicMessages => m
            .iter()
            .flat_map(|x| blocks(x, "tool_result"))
            .map(|b| text(&b["content"]))
            .collect(),
        ChatFormat::OpenAiResponses => m
            .iter()
            .filter(|x| s(x, "type") == "function_call_output")
            .map(|x| text(&x["output"]))
            .collect(),
    }
}

/// Checks a compacted answer: a descriptor whose file holds the original
/// records and whose recipes run under jq, or a text pointer whose file is
/// the original text.
fn check_pointer(pointer: &str, original: &str) {
    if let Some(rest) = pointer.strip_prefix(POINTER_MARKER) {
        let path = rest
            .split("stored in the file ")
            .nth(1)
            .and_then(|r| r.lines().next())
            .expect("the pointer names its file");
        assert_eq!(
            std::fs::read_to_string(path).expect("text file readable"),
            original
        );
        assert!(pointer.len() < 1_000, "a pointer is short");
        return;
    }
    let descriptor: OffloadResponse =
        serde_json::from_str(pointer).expect("a structured answer becomes the engine's descriptor");
    let records = common::file_records(Path::new(&descriptor.file_path));
    let original: Vec<Value> = serde_json::from_str(original).expect("original is a JSON array");
    assert_eq!(
        records, original,
        "the JSONL file holds the original records"
    );
    assert_eq!(descriptor.jq_recipes.len(), 10);
    for recipe in &descriptor.jq_recipes {
        if !recipe.command.contains('$') {
            common::run_recipe(&recipe.command);
        }
    }
}

#[tokio::test]
async fn compaction_keeps_pairs_system_and_recent_messages_in_every_format() {
    common::require_jq();
    for format in FORMATS {
        let dir = tempfile::tempdir().unwrap();
        let original = history(format, 4);
        let offloader = HistoryOffloader::new(config(dir.path(), SummaryMode::Compact));
        let out = offloader
            .rewrite_messages(format, original.clone())
            .await
            .unwrap();
        assert_eq!(
            out.messages.len(),
            original.len(),
            "{format:?}: compaction keeps every message"
        );
        check_pairs(format, &out.messages);
        assert_eq!(
            out.messages.last(),
            original.last(),
            "{format:?}: the recent message is kept"
        );
        if format != ChatFormat::AnthropicMessages {
            assert_eq!(
                out.messages[0], original[0],
                "{format:?}: the system message is kept"
            );
        }
        let (before, after) = (
            answer_texts(format, &original),
            answer_texts(format, &out.messages),
        );
        // The newest turn's answer, not yet seen by the model, stays.
        let (newest_old, older_old) = before.split_last().unwrap();
        assert_eq!(
            after.last(),
            Some(newest_old),
            "{format:?}: the newest turn is kept"
        );
        for (old, new) in older_old.iter().zip(&after) {
            assert_ne!(
                old, new,
                "{format:?}: every large answer before the newest turn is compacted"
            );
            check_pointer(new, old);
        }
        let report = out.report;
        assert_eq!(report.messages_compacted, 3, "{format:?}");
        // Three answers and the checkpoint of the rewrite.
        assert_eq!(report.files_written.len(), 4, "{format:?}");
        assert!(
            report.tokens_after * 2 < report.tokens_before,
            "{format:?}: {report:?}"
        );
        assert_eq!(report.groups_compressed, 0);
    }
}

#[tokio::test]
async fn the_recent_tool_answer_is_kept_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut original = chat_history(2);
    original.pop(); // the last message is now a tool answer: recent
    let offloader =
        HistoryOffloader::new(config(dir.path(), SummaryMode::Compact).keep_recent_compact(1));
    let out = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, original.clone())
        .await
        .unwrap();
    assert_eq!(out.messages.last(), original.last());
    assert_eq!(out.report.messages_compacted, 1);
}

/// A summarizer that counts its calls (and answers with the extractive
/// one).
#[derive(Default)]
struct Counting(AtomicUsize);

impl Summarizer for Counting {
    fn summarize<'a>(&'a self, request: SummaryRequest<'a>) -> SummaryFuture<'a> {
        self.0.fetch_add(1, Ordering::SeqCst);
        ExtractiveSummarizer.summarize(request)
    }
}

#[tokio::test]
async fn compression_replaces_whole_units_and_stores_the_originals() {
    for format in FORMATS {
        let dir = tempfile::tempdir().unwrap();
        let original = history(format, 6);
        // A budget the groups' summaries fit in: they stay apart.
        let cfg = config(dir.path(), SummaryMode::Compress)
            .max_total_tokens(6_000)
            .low_water_tokens(Some(6_000));
        let offloader = HistoryOffloader::new(cfg);
        let out = offloader
            .rewrite_messages(format, original.clone())
            .await
            .unwrap();
        check_pairs(format, &out.messages);
        let report = &out.report;
        assert!(report.groups_compressed >= 2, "{format:?}: {report:?}");
        assert!(report.compressed && !report.compacted);
        assert_eq!(
            out.messages[out.messages.len() - 2..],
            original[original.len() - 2..],
            "{format:?}: the two recent messages are kept"
        );
        if format != ChatFormat::AnthropicMessages {
            assert_eq!(
                out.messages[0], original[0],
                "{format:?}: the system message is kept"
            );
        }
        let mut restored = Vec::new();
        for m in &out.messages {
            let text = m["content"].as_str().unwrap_or("");
            match text.strip_prefix(SUMMARY_MARKER) {
                Some(rest) => {
                    assert_eq!(s(m, "role"), "user");
                    let path = rest
                        .split("originals are in the file ")
                        .nth(1)
                        .and_then(|r| r.split(" (one JSON").next())
                        .unwrap();
                    assert!(
                        Path::new(path)
                            .file_name()
                            .unwrap()
                            .to_string_lossy()
                            .contains("ops-chat-1"),
                        "named with chat_id: {path}"
                    );
                    let stored = std::fs::read_to_string(path).unwrap();
                    restored.extend(
                        stored
                            .lines()
                            .map(|l| serde_json::from_str::<Value>(l).unwrap()),
                    );
                }
                None => restored.push(m.clone()),
            }
        }
        assert_eq!(
            restored, original,
            "{format:?}: the stored originals give the history back"
        );
    }
}

#[tokio::test]
async fn auto_compresses_only_when_compaction_kept_too_much() {
    let dir = tempfile::tempdir().unwrap();
    // Compaction removes most tokens: no compression.
    let offloader = HistoryOffloader::new(config(dir.path(), SummaryMode::Auto));
    let out = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, chat_history(6))
        .await
        .unwrap();
    assert!(
        out.report.compacted && !out.report.compressed,
        "{:?}",
        out.report
    );
    assert_eq!(out.report.groups_compressed, 0);
    // Tool answers under the limit: compaction keeps 100% > 75%, so compression runs.
    let dir = tempfile::tempdir().unwrap();
    let offloader = HistoryOffloader::new(
        config(dir.path(), SummaryMode::Auto).max_tool_message_tokens(100_000),
    );
    let out = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, chat_history(6))
        .await
        .unwrap();
    assert!(
        out.report.compacted && out.report.compressed,
        "{:?}",
        out.report
    );
    assert!(out.report.groups_compressed > 0);
    assert_eq!(out.report.messages_compacted, 0);
    // Under max_total_tokens nothing happens.
    let dir = tempfile::tempdir().unwrap();
    let offloader =
        HistoryOffloader::new(config(dir.path(), SummaryMode::Auto).max_total_tokens(10_000_000));
    let original = chat_history(6);
    let out = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, original.clone())
        .await
        .unwrap();
    assert_eq!(out.messages, original);
    assert!(!out.report.changed() && out.report.files_written.is_empty());
}

/// How many leading messages of a rewrite must come back the same next
/// turn: up to the last summary, else up to the newest turn (the newest
/// message making calls, which the next turn's rewrite may compact).
fn stable_prefix(m: &[Value]) -> usize {
    let summary = |x: &Value| {
        x["content"]
            .as_str()
            .is_some_and(|t| t.starts_with(SUMMARY_MARKER))
    };
    let calls = |x: &Value| {
        x.get("tool_calls").is_some()
            || x["type"] == "function_call"
            || x["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_use"))
    };
    let newest = m.iter().rposition(calls).unwrap_or(m.len() - 1);
    m.iter().rposition(summary).map_or(newest, |i| i + 1)
}

fn bytes_of(m: &[Value]) -> Vec<String> {
    m.iter().map(Value::to_string).collect()
}

/// Asserts that the first `n` messages of `a` and `b` are the same bytes.
fn assert_same_prefix(a: &[Value], b: &[Value], n: usize, what: &str) {
    assert_eq!(bytes_of(&a[..n]), bytes_of(&b[..n]), "{what}");
}

async fn rewrite(
    offloader: &HistoryOffloader,
    format: ChatFormat,
    m: Vec<Value>,
) -> HistoryOutcome {
    offloader.rewrite_messages(format, m).await.unwrap()
}

/// Twice, in a new process, with a new turn, and on the rewrite plus a new
/// turn: the rewritten prefix comes back byte for byte.
async fn check_stability(format: ChatFormat, mode: SummaryMode) {
    let dir = tempfile::tempdir().unwrap();
    // In auto mode, answers under the limit, so that compression runs.
    let tool_limit = if mode == SummaryMode::Auto {
        100_000
    } else {
        300
    };
    // A budget the summaries of eight turns fit in (past it, a new turn
    // would merge them into one and the prefix would change, by design).
    let cfg = config(dir.path(), mode)
        .max_tool_message_tokens(tool_limit)
        .max_total_tokens(6_000)
        .low_water_tokens(Some(6_000));
    let offloader = HistoryOffloader::new(cfg.clone());
    let first = rewrite(&offloader, format, history(format, 6)).await;
    let all = first.messages.len();
    let what = |case: &str| format!("{format:?} {mode:?}: {case}");
    let again = rewrite(&offloader, format, history(format, 6)).await;
    assert_same_prefix(&again.messages, &first.messages, all, &what("twice"));
    assert!(
        again.report.files_written.is_empty(),
        "{}",
        what("nothing new written")
    );
    // Another process with the same store.
    let fresh = HistoryOffloader::new(cfg).with_summarizer(Arc::new(Counting::default()));
    let other = rewrite(&fresh, format, history(format, 6)).await;
    assert_same_prefix(&other.messages, &first.messages, all, &what("new process"));
    assert_eq!(
        other.report.summaries_made,
        0,
        "{}",
        what("summaries read back")
    );
    // The history plus a new turn: the rewritten prefix (up to the last
    // summary, or all but the recent message) is kept byte for byte.
    let kept = stable_prefix(&first.messages);
    assert!(kept > 4, "{}", what("something was rewritten"));
    let longer = rewrite(&offloader, format, history(format, 8)).await;
    assert_same_prefix(&longer.messages, &first.messages, kept, &what("new turn"));
    // The rewritten history plus a new turn (an agent loop keeping the rewrite).
    let mut continued = first.messages.clone();
    continued.extend(history(format, 8).split_off(history(format, 6).len()));
    let next = rewrite(&offloader, format, continued).await;
    assert_same_prefix(
        &next.messages,
        &first.messages,
        kept,
        &what("rewrite + new turn"),
    );
    check_pairs(format, &next.messages);
}

#[tokio::test]
async fn rewrites_are_stable_across_runs_turns_and_processes() {
    for format in FORMATS {
        for mode in [
            SummaryMode::Compact,
            SummaryMode::Compress,
            SummaryMode::Auto,
        ] {
            check_stability(format, mode).await;
        }
    }
}

#[tokio::test]
async fn an_already_rewritten_history_is_left_alone() {
    for mode in [SummaryMode::Compact, SummaryMode::Compress] {
        let dir = tempfile::tempdir().unwrap();
        // Compaction brings the history under max_total_tokens; compression
        // leaves nothing but summaries before the recent messages.
        let cfg = config(dir.path(), mode).max_total_tokens(3_000);
        let first = HistoryOffloader::new(cfg.clone())
            .rewrite_messages(ChatFormat::OpenAiChat, chat_history(6))
            .await
            .unwrap();
        assert!(first.report.changed(), "{mode:?}");
        let fresh = HistoryOffloader::new(cfg).with_summarizer(Arc::new(Counting::default()));
        let second = fresh
            .rewrite_messages(ChatFormat::OpenAiChat, first.messages.clone())
            .await
            .unwrap();
        assert_eq!(
            bytes_of(&second.messages),
            bytes_of(&first.messages),
            "{mode:?}"
        );
        assert!(!second.report.changed(), "{mode:?}: {:?}", second.report);
        assert!(second.report.files_written.is_empty());
    }
    // A pointer over max_tool_message_tokens is not compacted again.
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), SummaryMode::Compact).max_tool_message_tokens(10);
    let first = HistoryOffloader::new(cfg.clone())
        .rewrite_messages(ChatFormat::OpenAiChat, chat_history(4))
        .await
        .unwrap();
    let second = HistoryOffloader::new(cfg)
        .rewrite_messages(ChatFormat::OpenAiChat, first.messages.clone())
        .await
        .unwrap();
    assert_eq!(second.messages, first.messages);
    assert_eq!(second.report.messages_compacted, 0);
}

#[tokio::test]
async fn rewrite_body_keeps_every_other_byte() {
    let dir = tempfile::tempdir().unwrap();
    let offloader = HistoryOffloader::new(config(dir.path(), SummaryMode::Compact));
    let messages = serde_json::to_string(&chat_history(3)).unwrap();
    let head = "{ \"model\" : \"gpt-x\",\n  \"temperature\": 1.0e0, \"tools\": [ {\"type\":\"function\"} ],\n  \"messages\": ";
    let tail = ",\n  \"stream\": true, \"x\": 12345678901234567890 }";
    let body = format!("{head}{messages}{tail}");
    let BodyRewrite::Rewritten { body: out, report } =
        offloader.rewrite_body(None, body.as_bytes()).await.unwrap()
    else {
        panic!("expected a rewrite");
    };
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.starts_with(head) && out.ends_with(tail),
        "{}",
        &out[..200]
    );
    assert!(report.messages_compacted > 0);
    let parsed: Value = serde_json::from_str(&out).unwrap();
    check_chat_pairs(parsed["messages"].as_array().unwrap());
    // Anthropic is detected (top-level system), Responses by `input`.
    let anthropic = json!({"model": "claude", "system": SYSTEM, "max_tokens": 100, "messages": anthropic_history(3)});
    let rewritten = offloader
        .rewrite_body(None, anthropic.to_string().as_bytes())
        .await
        .unwrap();
    assert!(rewritten.report().messages_compacted > 0);
    let responses = json!({"model": "gpt-x", "input": responses_history(3)});
    let rewritten = offloader
        .rewrite_body(None, responses.to_string().as_bytes())
        .await
        .unwrap();
    assert!(rewritten.report().messages_compacted > 0);
    // Nothing to do, a string input, not a chat body.
    let small = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    assert!(matches!(
        offloader
            .rewrite_body(None, small.to_string().as_bytes())
            .await
            .unwrap(),
        BodyRewrite::Unchanged(_)
    ));
    let text_input = json!({"model": "m", "input": "hi"});
    assert!(matches!(
        offloader
            .rewrite_body(None, text_input.to_string().as_bytes())
            .await
            .unwrap(),
        BodyRewrite::Unchanged(_)
    ));
    for bad in [
        &b"[1,2]"[..],
        b"{\"model\":\"m\"}",
        b"\xff",
        b"{\"messages\": 3}",
    ] {
        let err = offloader.rewrite_body(None, bad).await.unwrap_err();
        assert!(matches!(err, HistoryError::NotChatBody(_)), "{err:?}");
    }
    let err = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, vec![json!("text")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, HistoryError::BadMessage { index: 0, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn estimation_is_cjk_aware_and_pluggable() {
    // 1,200 Chinese characters: about 864 tokens script-aware, 300 by chars / 4.
    let chinese: String = "部署之后延迟升高，回滚完成。"
        .chars()
        .cycle()
        .take(1_200)
        .collect();
    let mut messages = chat_history(1);
    messages[3]["content"] = json!(chinese);
    messages.push(json!({"role": "user", "content": "next"}));
    // A newer turn: the Chinese answer is no longer the newest turn's.
    messages.push(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_n",
        "type": "function", "function": {"name": "query_incidents", "arguments": "{}"}}]}),
    );
    messages.push(json!({"role": "tool", "tool_call_id": "call_n", "content": "none"}));
    let run = |estimator: Option<CharsPerTokenEstimator>| {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), SummaryMode::Compact)
            .max_total_tokens(100)
            .max_tool_message_tokens(500);
        if let Some(e) = estimator {
            cfg = cfg.estimator(e);
        }
        let messages = messages.clone();
        async move {
            (
                HistoryOffloader::new(cfg)
                    .rewrite_messages(ChatFormat::OpenAiChat, messages)
                    .await
                    .unwrap(),
                dir,
            )
        }
    };
    assert!(ScriptAwareEstimator.estimate(&chinese) > 800);
    let (cjk, _dir) = run(None).await;
    assert_eq!(
        cjk.report.messages_compacted, 1,
        "script-aware: over 500 tokens"
    );
    let (latin, _dir) = run(Some(CharsPerTokenEstimator)).await;
    assert_eq!(
        latin.report.messages_compacted, 0,
        "chars / 4: under 500 tokens"
    );
}

#[test]
fn the_extractive_summarizer_keeps_tools_and_identifiers_within_budget() {
    let transcript = "user: Why did deploy 42 fail?\n\nassistant: calls query_incidents({\"query\":\"deploy 42\"})\n\n\
        tool (query_incidents): INC-42-0007 on node-17: latency spike after deploy. The billing service timed out. \
        Other lines are routine. Nothing else happened. Retries were normal. The weather was fine.\n\n\
        assistant: calls restart_service({\"name\":\"billing_api\"})\n\n\
        tool (restart_service): billing_api restarted at /var/run/billing.pid.\n\n\
        assistant: Restarted billing_api; INC-42-0007 is resolved.";
    for budget in [40, 80, 400] {
        let summary = ExtractiveSummarizer::summary(transcript, budget);
        assert!(
            ScriptAwareEstimator.estimate(&summary) <= budget,
            "{budget}: {summary}"
        );
        assert_eq!(
            summary,
            ExtractiveSummarizer::summary(transcript, budget),
            "deterministic"
        );
        assert!(
            summary.contains("query_incidents") && summary.contains("restart_service"),
            "{budget}: {summary}"
        );
        assert!(summary.contains("INC-42-0007"), "{budget}: {summary}");
    }
    let wide = ExtractiveSummarizer::summary(transcript, 400);
    assert!(
        wide.contains("billing_api") && wide.contains("/var/run/billing.pid"),
        "{wide}"
    );
    assert!(
        !ExtractiveSummarizer::summary(transcript, 40).contains("weather"),
        "uninformative sentences go first"
    );
}

/// A summarizer that always fails (fault injection: no real summarizer
/// fails on demand).
struct Failing;

impl Summarizer for Failing {
    fn summarize<'a>(&'a self, _: SummaryRequest<'a>) -> SummaryFuture<'a> {
        Box::pin(async { Err(SummaryError::Endpoint("connection refused".into())) })
    }
}

#[tokio::test]
async fn errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let offloader = HistoryOffloader::new(config(dir.path(), SummaryMode::Compress))
        .with_summarizer(Arc::new(Failing));
    let err = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, chat_history(6))
        .await
        .unwrap_err();
    assert!(
        matches!(err, HistoryError::Summarizer(SummaryError::Endpoint(_))),
        "{err:?}"
    );
    // A store_dir that cannot be a directory.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let offloader = HistoryOffloader::new(config(&file, SummaryMode::Compact));
    assert!(offloader.check_store().is_err());
    let err = offloader
        .rewrite_messages(ChatFormat::OpenAiChat, chat_history(3))
        .await
        .unwrap_err();
    assert!(matches!(err, HistoryError::Store(_)), "{err:?}");
}

#[test]
fn modes_parse_and_defaults_are_the_specs() {
    assert_eq!(
        "compact".parse::<SummaryMode>().unwrap(),
        SummaryMode::Compact
    );
    assert_eq!(
        "Compress".parse::<SummaryMode>().unwrap(),
        SummaryMode::Compress
    );
    assert_eq!("auto".parse::<SummaryMode>().unwrap(), SummaryMode::Auto);
    assert!("fast".parse::<SummaryMode>().is_err());
    let c = HistoryConfig::default();
    assert_eq!(
        (
            c.mode,
            c.compact_ratio_threshold,
            c.max_total_tokens,
            c.max_tool_message_tokens
        ),
        (SummaryMode::Auto, 0.75, 20_000, 2_000)
    );
    assert_eq!(
        (
            c.keep_recent_compact,
            c.keep_recent_compress,
            c.group_token_threshold
        ),
        (1, 2, None)
    );
    let _: PathBuf = c.store_dir;
}

/// Parallel calls: two calls in one turn, answered after both.
fn parallel_history(format: ChatFormat, turns: usize) -> Vec<Value> {
    let mut m = Vec::new();
    for t in 0..turns {
        let (a, b) = (format!("call_{t}_a"), format!("call_{t}_b"));
        m.push(json!({"role": "user", "content": format!("Turn {t}: check both regions.")}));
        match format {
            ChatFormat::OpenAiChat => {
                let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "query_incidents", "arguments": "{}"}});
                m.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&a), call(&b)]}));
                m.push(json!({"role": "tool", "tool_call_id": a, "content": answer(t)}));
                m.push(json!({"role": "tool", "tool_call_id": b, "content": answer(t + 1)}));
            }
            ChatFormat::AnthropicMessages => {
                let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "query_incidents", "input": {}});
                let result = |id: &str, text: String| json!({"type": "tool_result", "tool_use_id": id, "content": text});
                m.push(json!({"role": "assistant", "content": [call(&a), call(&b)]}));
                m.push(json!({"role": "user", "content": [result(&a, answer(t)), result(&b, answer(t + 1))]}));
            }
            ChatFormat::OpenAiResponses => {
                let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "query_incidents", "arguments": "{}"});
                m.push(call(&a));
                m.push(call(&b));
                m.push(json!({"type": "function_call_output", "call_id": a, "output": answer(t)}));
                m.push(
                    json!({"type": "function_call_output", "call_id": b, "output": answer(t + 1)}),
                );
            }
        }
        m.push(
            json!({"role": "assistant", "content": format!("Both regions checked for turn {t}.")}),
        );
    }
    // The last turn ends on its answers: the recent messages fall inside a unit.
    m.pop();
    m
}

#[tokio::test]
async fn parallel_calls_stay_with_their_answers_in_small_groups() {
    for format in FORMATS {
        for keep in [1, 2, 3] {
            let dir = tempfile::tempdir().unwrap();
            // A budget the small groups' summaries fit in: they stay apart.
            let cfg = config(dir.path(), SummaryMode::Compress)
                .max_total_tokens(10_000)
                .low_water_tokens(Some(10_000))
                .group_token_threshold(Some(50))
                .keep_recent_compress(keep);
            let original = parallel_history(format, 4);
            let out = HistoryOffloader::new(cfg)
                .rewrite_messages(format, original.clone())
                .await
                .unwrap();
            check_pairs(format, &out.messages);
            assert!(
                out.report.groups_compressed >= 3,
                "{format:?} {keep}: {:?}",
                out.report
            );
            // The last unit (the calls and both answers) is kept whole.
            let tail = match format {
                ChatFormat::OpenAiChat => 3,
                ChatFormat::AnthropicMessages => 2,
                ChatFormat::OpenAiResponses => 4,
            };
            assert_eq!(
                out.messages[out.messages.len() - tail..],
                original[original.len() - tail..],
                "{format:?} {keep}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_history_rewritten_at_once_gives_one_set_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), SummaryMode::Auto).max_tool_message_tokens(300);
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            // Separate offloaders: nothing shared but the directory.
            let offloader = HistoryOffloader::new(cfg.clone());
            tokio::spawn(async move {
                rewrite(&offloader, ChatFormat::OpenAiChat, chat_history(6)).await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    for out in &outcomes[1..] {
        assert_eq!(bytes_of(&out.messages), bytes_of(&outcomes[0].messages));
    }
    let written: usize = outcomes.iter().map(|o| o.report.files_written.len()).sum();
    let on_disk = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(written, on_disk, "each file reported written once");
    assert!(
        !std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
}

#[test]
fn configuration_loads_from_toml_and_environment() {
    let toml = "[prompt.history]\nworking_summary_mode = \"compress\"\ncompact_ratio_threshold = 0.5\n\
                max_total_tokens = 30000\ngroup_token_threshold = 4000\nstore_dir = \"/srv/h\"\nchat_id = \"c-1\"\n\
                [prompt.offload]\nthreshold_tokens = 10\n";
    let c = HistoryConfig::from_toml_str(toml).unwrap();
    assert_eq!(
        (c.mode, c.compact_ratio_threshold, c.max_total_tokens),
        (SummaryMode::Compress, 0.5, 30_000)
    );
    assert_eq!(
        (c.group_token_threshold, c.chat_id.as_deref()),
        (Some(4_000), Some("c-1"))
    );
    assert_eq!(c.store_dir, PathBuf::from("/srv/h"));
    let c = c
        .apply_env_vars([
            ("ATLATL_PROMPT__HISTORY__WORKING_SUMMARY_MODE", "auto"),
            ("ATLATL_PROMPT__HISTORY__GROUP_TOKEN_THRESHOLD", "0"),
            ("ATLATL_PROMPT__HISTORY__KEEP_RECENT_COMPRESS", "4"),
            ("OTHER", "ignored"),
        ])
        .unwrap();
    assert_eq!(
        (c.mode, c.group_token_threshold, c.keep_recent_compress),
        (SummaryMode::Auto, None, 4)
    );
    let err = HistoryConfig::default()
        .apply_env_vars([("ATLATL_PROMPT__HISTORY__COMPACT_RATIO_THRESHOLD", "1.5")])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value \"1.5\" for ATLATL_PROMPT__HISTORY__COMPACT_RATIO_THRESHOLD: expected a number from 0 to 1"
    );
    let err = HistoryConfig::from_toml_str("[prompt.history]\nworking_summary_mode = \"fast\"\n")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("prompt.history.working_summary_mode"),
        "{err}"
    );
    assert!(
        HistoryConfig::from_toml_str("[prompt.history]\nmax_tokens = 1\n").is_err(),
        "unknown keys are refused"
    );
}

#[test]
fn the_extractive_summarizer_reads_cjk_text_within_budget() {
    let transcript = "user: 部署之后为什么变慢了？\n\nassistant: calls query_incidents({\"query\":\"部署\"})\n\n\
        tool (query_incidents): 事故INC-7-0001：节点node-3在部署后延迟升高。账单服务超时。其他记录正常。天气很好。\n\n\
        assistant: 已回滚，INC-7-0001 已解决。";
    for budget in [30, 60, 200] {
        let summary = ExtractiveSummarizer::summary(transcript, budget);
        assert!(
            ScriptAwareEstimator.estimate(&summary) <= budget,
            "{budget}: {summary}"
        );
        assert!(summary.contains("query_incidents"), "{budget}: {summary}");
    }
    let wide = ExtractiveSummarizer::summary(transcript, 200);
    assert!(
        wide.contains("INC-7-0001") && wide.contains("延迟升高"),
        "{wide}"
    );
}

#[test]
fn the_extractive_summarizer_keeps_the_conclusions_among_log_lines() {
    let mut transcript = String::new();
    for t in 0..3 {
        let log: String = (0..40)
            .map(|i| {
                format!(
                    "2026-11-22T09:00:{i:02}Z billing_api req_{t}_{i} status=200 took {}ms\n",
                    100 + i
                )
            })
            .collect();
        transcript.push_str(&format!(
            "tool (read_log): {log}\n\nassistant: Deploy {t} broke the cache of shard-{t}.\n\n"
        ));
    }
    let summary = ExtractiveSummarizer::summary(&transcript, 200);
    for t in 0..3 {
        assert!(
            summary.contains(&format!("Deploy {t} broke the cache of shard-{t}.")),
            "{summary}"
        );
    }
}
