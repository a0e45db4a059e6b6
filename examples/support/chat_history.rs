//! Deterministic chat histories for the history examples, tests and bench:
//! an agent working through support tickets, with tool calls whose answers
//! are large (JSON arrays of ticket records, or plain-text logs), in the
//! three formats the history offload reads.
#![allow(dead_code)]

use serde_json::{Value, json};

/// The system prompt of every history.
pub(crate) const SYSTEM: &str = "You are a support agent. Use the tools to look tickets up.";

/// Words the generated texts are made of.
const WORDS: [&str; 16] = [
    "login", "export", "timeout", "safari", "invoice", "retry", "cache", "token", "quota",
    "webhook", "latency", "upload", "session", "billing", "search", "report",
];

/// A sentence of `n` words, varied by `seed`.
fn sentence(seed: usize, n: usize) -> String {
    let words: Vec<&str> = (0..n)
        .map(|i| WORDS[(seed * 7 + i * 3 + i / 5) % WORDS.len()])
        .collect();
    let mut s = words.join(" ");
    s.push('.');
    s
}

/// The `k`-th large tool answer (of turn `turn`), about `bytes` bytes: a
/// JSON array of ticket records for even `k`, a plain-text log for odd `k`.
pub(crate) fn large_tool_output(turn: usize, k: usize, bytes: usize) -> String {
    if k.is_multiple_of(2) {
        let mut records = Vec::new();
        let mut size = 2;
        let mut i = 0;
        while size < bytes {
            let status = ["open", "pending", "closed"][i % 3];
            let record = json!({
                "id": format!("TCK-{turn}-{i}"),
                "title": sentence(turn + i, 6),
                "status": status,
                "priority": i % 4,
                "body": sentence(turn * 31 + i, 24),
            });
            size += record.to_string().len() + 1;
            records.push(record);
            i += 1;
        }
        Value::Array(records).to_string()
    } else {
        let mut log = String::new();
        let mut i = 0;
        while log.len() < bytes {
            let line = sentence(turn * 13 + i, 14);
            log.push_str(&format!(
                "2026-11-22T09:{:02}:{:02}Z req-{turn}-{i} {line}\n",
                i / 60 % 60,
                i % 60
            ));
            i += 1;
        }
        log
    }
}

/// Which turns call a tool with a large answer: `large` of `turns`, spread
/// evenly; `Some(k)` for the `k`-th of them.
fn large_turn(turn: usize, turns: usize, large: usize) -> Option<usize> {
    let step = (turns / large.max(1)).max(1);
    (large > 0 && turn.is_multiple_of(step) && turn / step < large).then_some(turn / step)
}

/// An OpenAI Chat Completions history of `turns` turns (each a user
/// message and the assistant's answer), `large` of them with a tool call
/// whose answer is about `tool_bytes` bytes, ending with a new user
/// question.
pub(crate) fn openai_chat(turns: usize, large: usize, tool_bytes: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
    for t in 0..turns {
        messages.push(json!({"role": "user", "content": format!("Turn {t}: {}", sentence(t, 12))}));
        if let Some(k) = large_turn(t, turns, large) {
            let id = format!("call_{t}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": id, "type": "function",
                "function": {"name": "search_tickets", "arguments": format!("{{\"query\":\"turn {t}\"}}")},
            }]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": large_tool_output(t, k, tool_bytes)}));
        }
        messages.push(json!({"role": "assistant", "content": sentence(t * 5, 20)}));
    }
    messages.push(json!({"role": "user", "content": "Which tickets are still open?"}));
    messages
}

/// The same conversation as Anthropic Messages (`system` apart,
/// `tool_use` / `tool_result` blocks).
pub(crate) fn anthropic_messages(turns: usize, large: usize, tool_bytes: usize) -> Vec<Value> {
    let mut messages = Vec::new();
    for t in 0..turns {
        let question = format!("Turn {t}: {}", sentence(t, 12));
        if let Some(k) = large_turn(t, turns, large) {
            let id = format!("toolu_{t}");
            messages.push(json!({"role": "user", "content": question}));
            messages.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": "Let me search."},
                {"type": "tool_use", "id": id, "name": "search_tickets", "input": {"query": format!("turn {t}")}},
            ]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": large_tool_output(t, k, tool_bytes)},
            ]}));
        } else {
            messages.push(json!({"role": "user", "content": question}));
        }
        messages.push(json!({"role": "assistant", "content": sentence(t * 5, 20)}));
    }
    messages.push(json!({"role": "user", "content": "Which tickets are still open?"}));
    messages
}

/// The same conversation as OpenAI Responses input items
/// (`function_call` / `function_call_output`).
pub(crate) fn openai_responses(turns: usize, large: usize, tool_bytes: usize) -> Vec<Value> {
    let mut items = Vec::new();
    for t in 0..turns {
        items.push(json!({"role": "user", "content": format!("Turn {t}: {}", sentence(t, 12))}));
        if let Some(k) = large_turn(t, turns, large) {
            let id = format!("call_{t}");
            items.push(
                json!({"type": "function_call", "call_id": id, "name": "search_tickets",
                "arguments": format!("{{\"query\":\"turn {t}\"}}")}),
            );
            items.push(json!({"type": "function_call_output", "call_id": id,
                "output": large_tool_output(t, k, tool_bytes)}));
        }
        items.push(json!({"role": "assistant", "content": sentence(t * 5, 20)}));
    }
    items.push(json!({"role": "user", "content": "Which tickets are still open?"}));
    items
}

/// A request body for `path` (`/v1/chat/completions`, `/v1/messages`,
/// `/v1/responses`) carrying the history of `turns` turns, `large` of them
/// with a tool answer of about `tool_bytes` bytes.
pub(crate) fn request_body(path: &str, turns: usize, large: usize, tool_bytes: usize) -> Value {
    match path {
        "/v1/messages" => json!({
            "model": "stand-in", "max_tokens": 1024, "system": SYSTEM,
            "messages": anthropic_messages(turns, large, tool_bytes),
        }),
        "/v1/responses" => json!({
            "model": "stand-in", "instructions": SYSTEM,
            "input": openai_responses(turns, large, tool_bytes),
        }),
        _ => json!({"model": "stand-in", "messages": openai_chat(turns, large, tool_bytes)}),
    }
}
