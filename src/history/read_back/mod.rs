//! Reading offloaded history back wherever the agent runs: a tool
//! ([`TOOL_NAME`]) that a proxy adds to a chat request whose history holds
//! pointers or summaries, and answers itself when the model calls it,
//! sending the conversation on upstream with the answer, unseen by the
//! client. The pointers name files on the proxy's host; an agent whose own
//! tools run elsewhere (another machine, a sandbox, a hosted runtime)
//! cannot open them, but its model can call this tool.
//!
//! What a proxy does with a request (the `lro history` command does it):
//!
//! 1. [`named_files`]: the history files the request names (in its
//!    pointers and summary messages). None: the request goes on as it is.
//! 2. [`add_tool`] puts the tool's definition in the request's `tools`, in
//!    the request's format (not when `tool_choice` is `none`).
//! 3. The answer, or the answer's events when it streams
//!    ([`response_of_events`]), read whole: [`calls`] lists the model's
//!    calls of the tool. None: the answer goes to the client as it came.
//! 4. Else each call is answered ([`HistoryOffloader::read_back`](super::HistoryOffloader::read_back): numbered
//!    lines of one of the named files, filtered by a `pattern`, paged by
//!    `offset` and `limit`), [`continue_after`] appends the model's turn
//!    (its calls of other tools dropped: the model makes them again once
//!    it has read) and the answers, and the request goes upstream again.
//!
//! A file is read only when the request names it: a caller reads back
//! only what its own history points to (file names are content digests,
//! so naming one takes having been sent its pointer).

use serde_json::{Map, Value, json};

use super::format::ChatFormat;

mod events;
mod file;

pub use events::response_of_events;

/// The tool's name.
pub const TOOL_NAME: &str = "lro_history_read";

/// The tool's description, as the model reads it.
pub const TOOL_DESCRIPTION: &str = "Reads back part of an earlier tool output or of earlier \
    messages that were moved out of this conversation into a file: the messages starting with \
    [history offload] or [history summary], and offloaded results ({\"offloaded\":true,...}), \
    name the file. Returns numbered lines of it; use pattern to find lines, offset and limit to \
    page.";

/// Lines returned when a call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 100;
/// The most lines one call returns.
pub const MAX_LIMIT: usize = 500;
/// The most bytes of lines one answer holds (about 8k tokens): more lines
/// are left for the next call.
pub const MAX_ANSWER_BYTES: usize = 32 << 10;

/// One call of the tool in a model's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadCall {
    /// The call's id (`tool_calls[].id`, `tool_use.id`, `call_id`).
    pub id: String,
    /// Its arguments (an object; `{}` when they are not JSON).
    pub arguments: Value,
}

/// The tool's JSON Schema of its arguments.
fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file": {"type": "string", "description": "The file as the pointer or summary names it (its path or name)."},
            "pattern": {"type": "string", "description": "Only lines containing this text (case-insensitive)."},
            "offset": {"type": "integer", "minimum": 0, "description": "Lines (matching lines, with pattern) to skip."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Lines to return (default 100)."}
        },
        "required": ["file"]
    })
}

/// The history files `body` (a chat request) names: every
/// `history-….txt`, `history-….jsonl` and `atlatl-….jsonl` in it, by name,
/// once each, in order.
pub fn named_files(body: &[u8]) -> Vec<String> {
    let name_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let mut names: Vec<String> = Vec::new();
    for prefix in [&b"history-"[..], b"atlatl-"] {
        for at in memchr::memmem::find_iter(body, prefix) {
            if at > 0 && name_byte(&body[at - 1]) {
                continue;
            }
            let len = body[at..].iter().take_while(|b| name_byte(b)).count();
            let Ok(name) = std::str::from_utf8(&body[at..at + len]) else {
                continue;
            };
            let name = name.trim_end_matches('.');
            let ours = name.ends_with(".txt") || name.ends_with(".jsonl");
            if ours && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// Adds the tool to `request` (a chat request body of `format`); `false`
/// when it was not added: `tool_choice` is `none`, `tools` is not an
/// array, or the tool is there already.
pub fn add_tool(format: ChatFormat, request: &mut Value) -> bool {
    let Some(body) = request.as_object_mut() else {
        return false;
    };
    let choice = body.get("tool_choice");
    let none = choice.and_then(Value::as_str) == Some("none")
        || choice.and_then(|c| c.get("type")).and_then(Value::as_str) == Some("none");
    if none {
        return false;
    }
    let tool = match format {
        ChatFormat::OpenAiChat => json!({"type": "function", "function": {
            "name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": parameters()}}),
        ChatFormat::AnthropicMessages => json!({
            "name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": parameters()}),
        ChatFormat::OpenAiResponses => json!({"type": "function",
            "name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": parameters()}),
    };
    let tools = body
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(tools) = tools.as_array_mut() else {
        return false;
    };
    if tools
        .iter()
        .any(|t| tool_name(format, t) == Some(TOOL_NAME))
    {
        return false;
    }
    tools.push(tool);
    true
}

/// Takes the tool out of `request` again (the last round: the model must
/// answer without it).
pub fn remove_tool(format: ChatFormat, request: &mut Value) {
    if let Some(tools) = request.get_mut("tools").and_then(Value::as_array_mut) {
        tools.retain(|t| tool_name(format, t) != Some(TOOL_NAME));
    }
}

/// The name of a tool definition of `format`.
fn tool_name(format: ChatFormat, tool: &Value) -> Option<&str> {
    match format {
        ChatFormat::OpenAiChat => tool.get("function")?.get("name")?.as_str(),
        _ => tool.get("name")?.as_str(),
    }
}

/// Arguments sent as a JSON string (OpenAI) or as an object (Anthropic).
fn arguments_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
        Some(v @ Value::Object(_)) => v.clone(),
        _ => json!({}),
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str()
}

/// The calls of the tool in `response` (a whole answer of `format`).
pub fn calls(format: ChatFormat, response: &Value) -> Vec<ReadCall> {
    let call = |id: Option<&str>, arguments| {
        Some(ReadCall {
            id: id?.to_owned(),
            arguments,
        })
    };
    match format {
        ChatFormat::OpenAiChat => chat_message(response)
            .and_then(|m| m.get("tool_calls")?.as_array())
            .into_iter()
            .flatten()
            .filter(|c| c.get("function").and_then(|f| str_at(f, "name")) == Some(TOOL_NAME))
            .filter_map(|c| {
                call(
                    str_at(c, "id"),
                    arguments_of(c["function"].get("arguments")),
                )
            })
            .collect(),
        ChatFormat::AnthropicMessages => items(response, "content")
            .filter(|b| {
                str_at(b, "type") == Some("tool_use") && str_at(b, "name") == Some(TOOL_NAME)
            })
            .filter_map(|b| call(str_at(b, "id"), arguments_of(b.get("input"))))
            .collect(),
        ChatFormat::OpenAiResponses => items(response, "output")
            .filter(|i| is_our_function_call(i))
            .filter_map(|i| call(str_at(i, "call_id"), arguments_of(i.get("arguments"))))
            .collect(),
    }
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn chat_message(response: &Value) -> Option<&Value> {
    response.get("choices")?.get(0)?.get("message")
}

fn is_our_function_call(item: &Value) -> bool {
    str_at(item, "type") == Some("function_call") && str_at(item, "name") == Some(TOOL_NAME)
}

/// Appends to `request` the model's turn of `response` (its text and its
/// calls of the tool; calls of other tools dropped, since each call needs
/// its answer and only the client has those) and `answers` (call id, text).
pub fn continue_after(
    format: ChatFormat,
    request: &mut Value,
    response: &Value,
    answers: &[(String, String)],
) {
    let key = format.messages_key();
    let Some(body) = request.as_object_mut() else {
        return;
    };
    if let Some(Value::String(text)) = body.get(key) {
        // Responses: `input` may be one string, the user's message.
        let user = json!([{"role": "user", "content": text}]);
        body.insert(key.to_owned(), user);
    }
    let Some(messages) = body.get_mut(key).and_then(Value::as_array_mut) else {
        return;
    };
    match format {
        ChatFormat::OpenAiChat => {
            let message = chat_message(response).cloned().unwrap_or_else(|| json!({}));
            let ours: Vec<Value> = items(&message, "tool_calls")
                .filter(|c| c.get("function").and_then(|f| str_at(f, "name")) == Some(TOOL_NAME))
                .cloned()
                .collect();
            let mut turn = Map::new();
            turn.insert("role".into(), "assistant".into());
            turn.insert(
                "content".into(),
                message.get("content").cloned().unwrap_or(Value::Null),
            );
            turn.insert("tool_calls".into(), Value::Array(ours));
            messages.push(Value::Object(turn));
            for (id, text) in answers {
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
        }
        ChatFormat::AnthropicMessages => {
            let blocks: Vec<Value> = items(response, "content")
                .filter(|b| match str_at(b, "type") {
                    Some("tool_use") => str_at(b, "name") == Some(TOOL_NAME),
                    _ => true,
                })
                .cloned()
                .collect();
            messages.push(json!({"role": "assistant", "content": blocks}));
            let results: Vec<Value> = answers
                .iter()
                .map(
                    |(id, text)| json!({"type": "tool_result", "tool_use_id": id, "content": text}),
                )
                .collect();
            messages.push(json!({"role": "user", "content": results}));
        }
        ChatFormat::OpenAiResponses => {
            for item in items(response, "output") {
                let keep = match str_at(item, "type") {
                    Some("function_call") => is_our_function_call(item),
                    _ => true,
                };
                if keep {
                    messages.push(item.clone());
                }
            }
            for (id, text) in answers {
                messages
                    .push(json!({"type": "function_call_output", "call_id": id, "output": text}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_found_by_name_in_any_quoting() {
        let body = br#"{"messages":[{"content":"[history offload] ... in the file /tmp/x/history-tool-read_log-0a1b.txt\nRead it with: sed -n '1,100p' '/tmp/x/history-tool-read_log-0a1b.txt'"},
            {"content":"{\"offloaded\":true,\"file_path\":\"/tmp/x/atlatl-read_log-01J0000000000000000000000.jsonl\"}"},
            {"content":"[history summary] ... in the file /tmp/x/history-chat1-ffee.jsonl (one JSON message per line)."},
            {"content":"myhistory-tool-x.txt and history-checkpoint-x.json"}]}"#;
        assert_eq!(
            named_files(body),
            [
                "history-tool-read_log-0a1b.txt",
                "history-chat1-ffee.jsonl",
                "atlatl-read_log-01J0000000000000000000000.jsonl"
            ]
        );
    }

    #[test]
    fn the_tool_goes_in_once_and_never_against_tool_choice_none() {
        for format in [
            ChatFormat::OpenAiChat,
            ChatFormat::AnthropicMessages,
            ChatFormat::OpenAiResponses,
        ] {
            let mut request = json!({"model": "m"});
            assert!(add_tool(format, &mut request));
            assert!(!add_tool(format, &mut request));
            assert_eq!(request["tools"].as_array().unwrap().len(), 1);
            remove_tool(format, &mut request);
            assert_eq!(request["tools"], json!([]));
            let mut none = json!({"tool_choice": "none"});
            assert!(!add_tool(format, &mut none));
            let mut none = json!({"tool_choice": {"type": "none"}});
            assert!(!add_tool(format, &mut none));
        }
    }

    #[test]
    fn calls_are_found_and_the_turn_is_continued_in_each_format() {
        let args = r#"{"file":"history-tool-a-1.txt","pattern":"error"}"#;
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": TOOL_NAME, "arguments": args}},
            {"id": "c2", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]}}]});
        let anthropic = json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "c1", "name": TOOL_NAME, "input": serde_json::from_str::<Value>(args).unwrap()},
            {"type": "tool_use", "id": "c2", "name": "read_log", "input": {}}]});
        let responses = json!({"output": [
            {"type": "function_call", "call_id": "c1", "name": TOOL_NAME, "arguments": args},
            {"type": "function_call", "call_id": "c2", "name": "read_log", "arguments": "{}"}]});
        for (format, response, request) in [
            (
                ChatFormat::OpenAiChat,
                chat,
                json!({"messages": [{"role": "user", "content": "q"}]}),
            ),
            (
                ChatFormat::AnthropicMessages,
                anthropic,
                json!({"messages": [{"role": "user", "content": "q"}]}),
            ),
            (
                ChatFormat::OpenAiResponses,
                responses,
                json!({"input": "q"}),
            ),
        ] {
            let found = calls(format, &response);
            assert_eq!(found.len(), 1, "{format:?}");
            assert_eq!(found[0].id, "c1");
            assert_eq!(found[0].arguments["pattern"], "error");
            let mut request = request;
            continue_after(
                format,
                &mut request,
                &response,
                &[("c1".into(), "1: error".into())],
            );
            let text = request.to_string();
            assert!(
                !text.contains("read_log"),
                "{format:?}: the other call is dropped: {text}"
            );
            assert!(
                text.contains("1: error") && text.contains(TOOL_NAME),
                "{text}"
            );
            let items = request[format.messages_key()].as_array().unwrap();
            assert!(items.len() >= 3, "{format:?}: {text}");
        }
    }
}
