//! A streamed answer (Chat Completions, Anthropic Messages) to a request
//! given the read-back tool, relayed as it comes: each event goes on to the
//! client at once until one starts a call of the tool. From there the
//! answer is held; once it has ended, the calls are answered, the
//! conversation goes upstream again, and the next answer's events follow
//! on the same stream, spliced in: its `message_start` dropped and its
//! content block indices moved past those already sent (Anthropic), its
//! tool call indices moved past those already sent (Chat Completions). So
//! the client reads one answer, its first tokens as soon as the provider
//! sends them.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tower_lro::history::ChatFormat;
use tower_lro::history::read_back::{self, TOOL_NAME};
use tower_lro::sse::{EventSplitter, event_data, replace_data};

use super::{BoxError, GatewayBody};

/// Events buffered between the relay and the client.
const CHANNEL_EVENTS: usize = 64;
/// The longest event read (a larger one ends the stream with an error).
const MAX_EVENT_BYTES: usize = 16 << 20;

/// The client's side of a relayed stream.
pub(crate) struct Relayed(mpsc::Receiver<Result<Bytes, BoxError>>);

impl Body for Relayed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0
            .poll_recv(cx)
            .map(|got| got.map(|r| r.map(Frame::data)))
    }
}

/// The relay's side of a relayed stream.
pub(crate) type Sender = mpsc::Sender<Result<Bytes, BoxError>>;

/// A channel to the client: its sending end and the body it reads.
pub(crate) fn channel() -> (Sender, GatewayBody) {
    let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
    (tx, Relayed(rx).boxed_unsync())
}

/// The server-sent events of a body, one at a time, as
/// [`EventSplitter`] cuts them (each with its blank line).
pub(crate) struct Events {
    body: GatewayBody,
    splitter: EventSplitter,
    done: bool,
}

impl Events {
    pub(crate) fn new(body: GatewayBody) -> Events {
        Events {
            body,
            splitter: EventSplitter::default(),
            done: false,
        }
    }

    /// The next event; `None` at the end (a last event without its blank
    /// line included).
    pub(crate) async fn next(&mut self) -> Option<Result<Bytes, BoxError>> {
        loop {
            if let Some(event) = self.splitter.next_event() {
                return Some(Ok(event));
            }
            if self.done {
                let last = self.splitter.finish_event();
                let last = last.unwrap_or_else(|| self.splitter.take_rest());
                return (!last.is_empty()).then_some(Ok(last));
            }
            if self.splitter.buffered() > MAX_EVENT_BYTES {
                return Some(Err("an event of the upstream's stream is too long".into()));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.splitter.push(&data);
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => self.done = true,
            }
        }
    }
}

/// An event's data, as JSON.
fn data_of(event: &Bytes) -> Option<Value> {
    serde_json::from_slice(&event_data(event)?).ok()
}

/// How the answers after the first are spliced into the client's stream.
#[derive(Debug, Default)]
pub(crate) struct Splice {
    /// Answers relayed before this one.
    answers: usize,
    /// Added to each index of this answer (Anthropic content blocks, Chat
    /// Completions tool calls).
    offset: u64,
}

impl Splice {
    /// Whether `event` starts a call of the tool (only an event naming it
    /// is read as JSON).
    pub(crate) fn starts_our_call(&self, format: ChatFormat, event: &Bytes) -> bool {
        if memchr::memmem::find(event, TOOL_NAME.as_bytes()).is_none() {
            return false;
        }
        let Some(data) = data_of(event) else {
            return false;
        };
        match format {
            ChatFormat::AnthropicMessages => {
                let block = &data["content_block"];
                data["type"] == "content_block_start"
                    && block["type"] == "tool_use"
                    && block["name"] == TOOL_NAME
            }
            _ => data["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|c| c["function"]["name"] == TOOL_NAME)),
        }
    }

    /// `event` as the client gets it (the first answer's as it came);
    /// `None`: not sent.
    pub(crate) fn rewrite(&self, format: ChatFormat, event: Bytes) -> Option<Bytes> {
        if self.answers == 0 {
            return Some(event);
        }
        let Some(mut data) = data_of(&event) else {
            return Some(event);
        };
        let index = match format {
            ChatFormat::AnthropicMessages => {
                if data["type"] == "message_start" {
                    return None;
                }
                data.get_mut("index")
            }
            _ => data
                .pointer_mut("/choices/0/delta/tool_calls")
                .and_then(Value::as_array_mut)
                .and_then(|calls| calls.first_mut())
                .and_then(|call| call.get_mut("index")),
        };
        let Some(index) = index.filter(|_| self.offset > 0) else {
            return Some(event);
        };
        *index = (index.as_u64().unwrap_or(0) + self.offset).into();
        Some(replace_data(&event, data.to_string().as_bytes()))
    }

    /// The next answer follows `answer` (put back together), whose blocks
    /// or tool calls before its first call of the tool were sent on.
    pub(crate) fn next_answer(&mut self, format: ChatFormat, answer: &Value) {
        let is_ours = |v: &Value| v["name"] == TOOL_NAME || v["function"]["name"] == TOOL_NAME;
        let sent = match format {
            ChatFormat::AnthropicMessages => answer["content"].as_array(),
            _ => answer["choices"][0]["message"]["tool_calls"].as_array(),
        }
        .and_then(|parts| parts.iter().position(is_ours))
        .unwrap_or(0);
        self.answers += 1;
        self.offset += sent as u64;
    }
}

/// The whole answer the events `all` make, and its calls of the tool.
pub(crate) fn answer_of(
    format: ChatFormat,
    all: &[u8],
) -> Option<(Value, Vec<read_back::ReadCall>)> {
    let answer = read_back::response_of_events(format, all)?;
    let calls = read_back::calls(format, &answer);
    (!calls.is_empty()).then_some((answer, calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_answers_move_past_what_was_sent() {
        let mut s = Splice::default();
        let f = ChatFormat::AnthropicMessages;
        let start = Bytes::from("event: message_start\ndata: {\"type\":\"message_start\"}\n\n");
        let block = |i: u64| {
            Bytes::from(format!(
                "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"text\"}}}}\n\n"
            ))
        };
        assert_eq!(s.rewrite(f, start.clone()), Some(start.clone()));
        assert_eq!(s.rewrite(f, block(0)), Some(block(0)));
        let ours = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"name\":\"lro_history_read\"}}\n\n";
        assert!(s.starts_our_call(f, &Bytes::from(ours)));
        assert!(!s.starts_our_call(f, &block(0)));
        let answer = serde_json::json!({"content": [{"type": "text"}, {"type": "tool_use", "name": TOOL_NAME}]});
        s.next_answer(f, &answer);
        assert_eq!(s.rewrite(f, start), None);
        let moved = s.rewrite(f, block(0)).unwrap();
        assert!(
            String::from_utf8_lossy(&moved).contains("\"index\":1"),
            "{moved:?}"
        );
        assert!(
            moved.starts_with(b"event: content_block_start\n"),
            "{moved:?}"
        );
        let chat = ChatFormat::OpenAiChat;
        let mut s = Splice::default();
        let call = |i: u64, name: &str| {
            Bytes::from(format!(
                "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":{i},\"function\":{{\"name\":\"{name}\"}}}}]}}}}]}}\n\n"
            ))
        };
        assert_eq!(
            s.rewrite(chat, call(0, "read_log")),
            Some(call(0, "read_log"))
        );
        assert!(s.starts_our_call(chat, &call(1, TOOL_NAME)));
        assert!(!s.starts_our_call(chat, &call(0, "read_log")));
        let answer = serde_json::json!({"choices": [{"message": {"tool_calls": [
            {"function": {"name": "read_log"}}, {"function": {"name": TOOL_NAME}}]}}]});
        s.next_answer(chat, &answer);
        let moved = s.rewrite(chat, call(0, "read_log")).unwrap();
        assert!(
            String::from_utf8_lossy(&moved).contains("\"index\":1"),
            "{moved:?}"
        );
    }
}
