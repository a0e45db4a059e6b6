//! A streamed answer put back together: the whole answer its events make.

use serde_json::{Value, json};

use super::{items, str_at};
use crate::history::format::ChatFormat;

/// The whole answer a streamed answer of `format` makes (its server-sent
/// events, read to their end), in the shape of the same answer not
/// streamed: as far as [`calls`](super::calls) and [`continue_after`](super::continue_after) read it. `None`
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::read_back::calls;

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
}
