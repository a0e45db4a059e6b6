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
//! 4. Else each call is answered ([`HistoryOffloader::read_back`]: numbered
//!    lines of one of the named files, filtered by a `pattern`, paged by
//!    `offset` and `limit`), [`continue_after`] appends the model's turn
//!    (its calls of other tools dropped: the model makes them again once
//!    it has read) and the answers, and the request goes upstream again.
//!
//! A file is read only when the request names it: a caller reads back
//! only what its own history points to (file names are content digests,
//! so naming one takes having been sent its pointer).

use std::io::{BufRead, BufReader};

use serde_json::{Map, Value, json};

use super::HistoryOffloader;
use super::format::ChatFormat;
use crate::store::no_follow;

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
/// The largest file fetched from a shared store to be read back.
const MAX_READ_BACK_FILE_BYTES: u64 = 64 << 20;
/// Longest line shown whole; longer ones are cut, saying so.
const MAX_LINE_BYTES: usize = 8 << 10;

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

/// The whole answer a streamed answer of `format` makes (its server-sent
/// events, read to their end), in the shape of the same answer not
/// streamed: as far as [`calls`] and [`continue_after`] read it. `None`
/// when the events make no answer.
pub fn response_of_events(format: ChatFormat, events: &[u8]) -> Option<Value> {
    let mut splitter = crate::sse::EventSplitter::default();
    splitter.push(events);
    let mut all = Vec::new();
    while let Some(event) = splitter.next_event() {
        all.push(event);
    }
    all.extend(splitter.finish_event());
    all.push(splitter.take_rest());
    // `[DONE]` and comments are no JSON: left out.
    let datas = all
        .into_iter()
        .filter_map(|event| serde_json::from_slice::<Value>(&crate::sse::event_data(&event)?).ok());
    match format {
        ChatFormat::OpenAiChat => Some(chat_of_chunks(datas)),
        ChatFormat::AnthropicMessages => anthropic_of_events(datas),
        ChatFormat::OpenAiResponses => datas
            .filter(|d| str_at(d, "type") == Some("response.completed"))
            .find_map(|d| d.get("response").cloned()),
    }
}

/// A Chat Completions answer from its chunks (the first choice).
fn chat_of_chunks(chunks: impl Iterator<Item = Value>) -> Value {
    let mut content: Option<String> = None;
    let mut tool_calls: Vec<Value> = Vec::new();
    for chunk in chunks {
        let Some(delta) = chunk
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("delta"))
        else {
            continue;
        };
        if let Some(text) = str_at(delta, "content") {
            content.get_or_insert_with(String::new).push_str(text);
        }
        for call in items(delta, "tool_calls") {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if index > 1024 {
                continue;
            }
            while tool_calls.len() <= index {
                tool_calls
                    .push(json!({"type": "function", "function": {"name": "", "arguments": ""}}));
            }
            let slot = &mut tool_calls[index];
            if let Some(id) = str_at(call, "id") {
                slot["id"] = id.into();
            }
            let function = call.get("function");
            for part in ["name", "arguments"] {
                if let Some(more) = function.and_then(|f| str_at(f, part)) {
                    let had = slot["function"][part].as_str().unwrap_or("").to_owned();
                    slot["function"][part] = (had + more).into();
                }
            }
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({"choices": [{"index": 0, "message": message}]})
}

/// An Anthropic message from its events.
fn anthropic_of_events(events: impl Iterator<Item = Value>) -> Option<Value> {
    let mut message: Option<Value> = None;
    let mut blocks: Vec<Value> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    for event in events {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match str_at(&event, "type") {
            Some("message_start") => message = event.get("message").cloned(),
            Some("content_block_start") if index <= 1024 => {
                while blocks.len() <= index {
                    blocks.push(Value::Null);
                    inputs.push(String::new());
                }
                blocks[index] = event.get("content_block").cloned().unwrap_or(Value::Null);
            }
            Some("content_block_delta") if index < blocks.len() => {
                let delta = &event["delta"];
                let block = &mut blocks[index];
                for (kind, field) in [
                    ("text_delta", "text"),
                    ("thinking_delta", "thinking"),
                    ("signature_delta", "signature"),
                ] {
                    if str_at(delta, "type") == Some(kind) {
                        let had = block[field].as_str().unwrap_or("").to_owned();
                        block[field] = (had + str_at(delta, field).unwrap_or("")).into();
                    }
                }
                if str_at(delta, "type") == Some("input_json_delta") {
                    inputs[index].push_str(str_at(delta, "partial_json").unwrap_or(""));
                }
            }
            _ => {}
        }
    }
    let mut message = message?;
    for (block, input) in blocks.iter_mut().zip(inputs) {
        if !input.is_empty() {
            block["input"] = serde_json::from_str(&input).unwrap_or_else(|_| json!({}));
        }
    }
    message["content"] = Value::Array(blocks.into_iter().filter(|b| !b.is_null()).collect());
    Some(message)
}

impl HistoryOffloader {
    /// The answer to one call of the tool with `arguments`, reading only
    /// the files in `named` (those the request names, see
    /// [`named_files`]): numbered lines of the file (of its records, for a
    /// file with an LRO header line), those containing `pattern` when it
    /// is given, from `offset`, at most `limit` and [`MAX_ANSWER_BYTES`],
    /// then how many there are and how to read on. Blocking (file reads);
    /// every problem is an answer that says what to do instead.
    pub fn read_back(&self, arguments: &Value, named: &[String]) -> String {
        let file = str_at(arguments, "file").unwrap_or("").trim();
        let name = file.rsplit(['/', '\\']).next().unwrap_or("");
        if name.is_empty() || !named.iter().any(|n| n == name) {
            return format!(
                "{TOOL_NAME}: no file {file:?} is named in this conversation's history; give \
                 the file exactly as a [history offload] or [history summary] message names it"
            );
        }
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        let offset = number("offset").unwrap_or(0) as usize;
        let limit = number("limit").map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
        let pattern = str_at(arguments, "pattern")
            .filter(|p| !p.is_empty())
            .map(str::to_lowercase);
        let path = self.config().store_dir.join(name);
        // Written by another process of a fleet: fetched from the store.
        self.inner.store.fetch(name, MAX_READ_BACK_FILE_BYTES);
        let opened = no_follow(std::fs::OpenOptions::new().read(true)).open(&path);
        let Ok(file) = opened else {
            return format!("{TOOL_NAME}: the file {name} is no longer there (files expire)");
        };
        // Used: the sweep keeps it.
        let _ = file.set_modified(std::time::SystemTime::now());
        let mut page = Page::new(offset, limit);
        for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
            let Ok(line) = line else {
                return format!("{TOOL_NAME}: the file {name} could not be read");
            };
            let line = String::from_utf8_lossy(&line);
            if i == 0 && line.starts_with("{\"type\":\"lro_header\"") {
                page.header = true;
                continue;
            }
            let shown = i + usize::from(!page.header);
            let matches = pattern
                .as_ref()
                .is_none_or(|p| line.to_lowercase().contains(p.as_str()));
            if matches {
                page.push(shown, &line);
            }
        }
        page.answer(name, pattern.is_some())
    }
}

/// One page of a read-back answer, as lines are seen.
struct Page {
    offset: usize,
    limit: usize,
    matched: usize,
    lines: Vec<String>,
    bytes: usize,
    /// The page ended on the byte bound before its limit.
    full: bool,
    header: bool,
}

impl Page {
    fn new(offset: usize, limit: usize) -> Page {
        Page {
            offset,
            limit,
            matched: 0,
            lines: Vec::new(),
            bytes: 0,
            full: false,
            header: false,
        }
    }

    /// A matching line, numbered `number` (from 1, records only).
    fn push(&mut self, number: usize, line: &str) {
        self.matched += 1;
        if self.matched <= self.offset || self.lines.len() >= self.limit || self.full {
            return;
        }
        let mut shown = line.to_owned();
        if shown.len() > MAX_LINE_BYTES {
            let mut cut = MAX_LINE_BYTES;
            while !shown.is_char_boundary(cut) {
                cut -= 1;
            }
            shown.truncate(cut);
            shown.push_str(&format!(" … (line cut: {} bytes in all)", line.len()));
        }
        let shown = format!("{number}: {shown}");
        if self.bytes + shown.len() > MAX_ANSWER_BYTES && !self.lines.is_empty() {
            self.full = true;
            return;
        }
        self.bytes += shown.len() + 1;
        self.lines.push(shown);
    }

    fn answer(self, name: &str, filtered: bool) -> String {
        let what = if filtered { "matching lines" } else { "lines" };
        let unit = if self.header { " (records)" } else { "" };
        if self.lines.is_empty() {
            return format!(
                "{name}: no {what} from offset {} ({} {what}{unit} in all)",
                self.offset, self.matched
            );
        }
        let end = self.offset + self.lines.len();
        let mut out = format!(
            "{name}: {what} {}-{end} of {}{unit}, numbered:\n",
            self.offset + 1,
            self.matched
        );
        out.push_str(&self.lines.join("\n"));
        if end < self.matched {
            out.push_str(&format!(
                "\nMore: call {TOOL_NAME} again with offset={end}."
            ));
        }
        out
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

    #[test]
    fn streamed_answers_are_put_back_together() {
        let chat = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hm\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"lro_history_read\",\"arguments\":\"{\\\"fi\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"le\\\":\\\"f.txt\\\"}\"}}]}}]}\n\n",
            "data: [DONE]\n\n"
        );
        let r = response_of_events(ChatFormat::OpenAiChat, chat.as_bytes()).unwrap();
        let c = calls(ChatFormat::OpenAiChat, &r);
        assert_eq!(
            (c[0].id.as_str(), &c[0].arguments),
            ("c1", &json!({"file": "f.txt"}))
        );
        assert_eq!(r["choices"][0]["message"]["content"], "Hm");
        let anthropic = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hm\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"lro_history_read\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"file\\\":\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"f.txt\\\"}\"}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
        let r = response_of_events(ChatFormat::AnthropicMessages, anthropic.as_bytes()).unwrap();
        let c = calls(ChatFormat::AnthropicMessages, &r);
        assert_eq!(
            (c[0].id.as_str(), &c[0].arguments),
            ("c1", &json!({"file": "f.txt"}))
        );
        assert_eq!(r["content"][0]["text"], "Hm");
        let responses = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[]}}\n\n";
        let r = response_of_events(ChatFormat::OpenAiResponses, responses.as_bytes());
        assert_eq!(r, Some(json!({"output": []})));
        assert_eq!(
            response_of_events(ChatFormat::AnthropicMessages, b"data: {}\n\n"),
            None
        );
    }

    #[test]
    fn files_are_read_back_in_numbered_pages_of_named_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = super::super::HistoryConfig::default().store_dir(dir.path());
        let offloader = HistoryOffloader::new(config);
        let text: String = (1..=300)
            .map(|i| format!("line {i}{}\n", if i % 10 == 0 { " ERROR" } else { "" }))
            .collect();
        std::fs::write(dir.path().join("history-tool-a-1.txt"), &text).unwrap();
        std::fs::write(
            dir.path().join("atlatl-a-01J0000000000000000000000.jsonl"),
            "{\"type\":\"lro_header\",\"count\":2}\n{\"a\":1}\n{\"a\":2}\n",
        )
        .unwrap();
        let named = vec![
            "history-tool-a-1.txt".to_owned(),
            "atlatl-a-01J0000000000000000000000.jsonl".to_owned(),
        ];
        let read = |args: Value| offloader.read_back(&args, &named);
        let first = read(json!({"file": format!("{}/history-tool-a-1.txt", dir.path().display())}));
        assert!(
            first.starts_with("history-tool-a-1.txt: lines 1-100 of 300, numbered:\n1: line 1\n"),
            "{first}"
        );
        assert!(
            first.ends_with(
                "100: line 100 ERROR\nMore: call lro_history_read again with offset=100."
            ),
            "{first}"
        );
        let errors =
            read(json!({"file": "history-tool-a-1.txt", "pattern": "error", "offset": 28}));
        assert_eq!(
            errors,
            "history-tool-a-1.txt: matching lines 29-30 of 30, numbered:\n290: line 290 ERROR\n300: line 300 ERROR"
        );
        let records = read(json!({"file": "atlatl-a-01J0000000000000000000000.jsonl", "limit": 1}));
        assert!(records.starts_with("atlatl-a-01J0000000000000000000000.jsonl: lines 1-1 of 2 (records), numbered:\n1: {\"a\":1}\nMore"), "{records}");
        let other = read(json!({"file": "history-checkpoint-x.json"}));
        assert!(
            other.contains("no file") && other.contains("named"),
            "{other}"
        );
        let gone = offloader.read_back(
            &json!({"file": "history-gone.txt"}),
            &["history-gone.txt".into()],
        );
        assert!(gone.contains("no longer there"), "{gone}");
    }

    #[cfg(feature = "object-store")]
    #[test]
    fn files_of_another_process_are_read_back_from_a_shared_store() {
        use std::sync::Arc;
        let memory = Arc::new(object_store::memory::InMemory::new());
        let bucket = Arc::new(crate::store::BucketStore::new(memory, "h").unwrap());
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let process = |i: usize, under: &str| {
            let config = super::super::HistoryConfig::default().store_dir(dirs[i].path());
            HistoryOffloader::new(config)
                .with_bucket(bucket.clone(), under)
                .unwrap()
        };
        let (a, b, other) = (
            process(0, "owner-a"),
            process(1, "owner-a"),
            process(2, "owner-c"),
        );
        let name = "history-tool-x-1.txt";
        a.inner.store.put(name, b"one\ntwo\n").unwrap();
        let named = vec![name.to_owned()];
        let read = b.read_back(&json!({"file": name}), &named);
        assert!(read.ends_with("1: one\n2: two"), "{read}");
        assert!(dirs[1].path().join(name).is_file(), "kept where b reads");
        let refused = other.read_back(&json!({"file": name}), &named);
        assert!(refused.contains("no longer there"), "{refused}");
        let config = super::super::HistoryConfig::default().store_dir(dirs[2].path());
        for bad in ["../x", "owner a", "a/./b/.."] {
            let made = HistoryOffloader::new(config.clone()).with_bucket(bucket.clone(), bad);
            assert!(made.is_err(), "{bad}");
        }
    }
}
