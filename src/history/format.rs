//! The three chat formats: where the messages are, which ones are system
//! messages, which hold tool calls and tool answers, and how a call is
//! paired with its answer.
//!
//! * OpenAI Chat Completions: `messages`; roles `system` / `developer`
//!   (system), `user`, `assistant` (with `tool_calls[].id`), `tool` (with
//!   `tool_call_id`; its `content` is the answer).
//! * Anthropic Messages: `messages` (the system prompt is the body's
//!   `system`, never a message); an assistant message's `tool_use` blocks
//!   (`id`) are answered by `tool_result` blocks (`tool_use_id`, `content`)
//!   of the next user message.
//! * OpenAI Responses: `input` items; `function_call` (`call_id`, `name`)
//!   answered by `function_call_output` (`call_id`, `output`); a
//!   `reasoning` item belongs with the item after it; messages with role
//!   `system` / `developer` are system messages.

use serde_json::Value;

/// The request format of a chat history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatFormat {
    /// OpenAI Chat Completions (`messages`, role `tool`, `tool_calls`).
    OpenAiChat,
    /// Anthropic Messages (`messages`, `tool_use` / `tool_result` blocks).
    AnthropicMessages,
    /// OpenAI Responses (`input`, `function_call` / `function_call_output`).
    OpenAiResponses,
}

impl ChatFormat {
    /// The body member holding the messages: `messages`, or `input` for
    /// Responses.
    pub fn messages_key(self) -> &'static str {
        match self {
            ChatFormat::OpenAiResponses => "input",
            _ => "messages",
        }
    }

    /// The format a request path names: `…/chat/completions`, `…/messages`,
    /// `…/responses` (a trailing `/` allowed); `None` for other paths.
    pub fn of_path(path: &str) -> Option<ChatFormat> {
        let path = path.trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            Some(ChatFormat::OpenAiChat)
        } else if path.ends_with("/messages") {
            Some(ChatFormat::AnthropicMessages)
        } else if path.ends_with("/responses") {
            Some(ChatFormat::OpenAiResponses)
        } else {
            None
        }
    }

    /// The format of a request body: an `input` array without `messages`
    /// is Responses; `messages` with a top-level `system`, or with a
    /// `tool_use` / `tool_result` / `thinking` block, is Anthropic; other
    /// `messages` are Chat Completions. `None`: no messages.
    pub fn detect(body: &Value) -> Option<ChatFormat> {
        let has_system = body.get("system").is_some();
        match body.get("messages").and_then(Value::as_array) {
            Some(messages) => Some(Self::of_messages(has_system, messages)),
            None => body
                .get("input")
                .is_some_and(Value::is_array)
                .then_some(ChatFormat::OpenAiResponses),
        }
    }

    /// Anthropic or Chat Completions, for a body with `messages`.
    pub(crate) fn of_messages(has_system: bool, messages: &[Value]) -> ChatFormat {
        let anthropic_block = |m: &Value| {
            m.get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    blocks.iter().any(|b| {
                        matches!(
                            b.get("type").and_then(Value::as_str),
                            Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking")
                        )
                    })
                })
        };
        if has_system || messages.iter().any(anthropic_block) {
            ChatFormat::AnthropicMessages
        } else {
            ChatFormat::OpenAiChat
        }
    }
}

/// Where a tool answer's content sits in its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The message's `content` (Chat Completions `tool` message).
    Content,
    /// Block `n` of the message's `content`, its `content` (Anthropic
    /// `tool_result`).
    Block(usize),
    /// The item's `output` (Responses `function_call_output`).
    Output,
}

/// One tool call: its id, the tool's name and arguments.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Option<Value>,
}

impl Call {
    /// A call; `arguments` given as a JSON text (Chat Completions,
    /// Responses) is parsed, falling back to the text itself.
    fn new(id: &str, name: Option<&str>, arguments: Option<&Value>) -> Call {
        let arguments = arguments.map(|a| match a {
            Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| a.clone()),
            other => other.clone(),
        });
        Call {
            id: id.to_owned(),
            name: name.unwrap_or("tool").to_owned(),
            arguments,
        }
    }
}

/// One tool answer: where it is and which call it answers.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub slot: Slot,
    pub call_id: Option<String>,
}

/// What one message is, for the rewrite.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    /// Kept as it is, always.
    pub system: bool,
    /// The calls it makes.
    pub calls: Vec<Call>,
    /// The tool answers it holds.
    pub answers: Vec<Answer>,
    /// Belongs with the message after it (a Responses `reasoning` item).
    pub binds_next: bool,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The shape of message `index`, or why it is not a message of `format`.
pub(crate) fn shape(format: ChatFormat, m: &Value) -> Result<Shape, &'static str> {
    if !m.is_object() {
        return Err("not a JSON object");
    }
    Ok(match format {
        ChatFormat::OpenAiChat => chat_shape(m),
        ChatFormat::AnthropicMessages => anthropic_shape(m),
        ChatFormat::OpenAiResponses => responses_shape(m),
    })
}

fn is_system_role(m: &Value) -> bool {
    matches!(str_of(m, "role"), Some("system" | "developer"))
}

fn chat_shape(m: &Value) -> Shape {
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let function = c.get("function");
            Some(Call::new(
                str_of(c, "id")?,
                function.and_then(|f| str_of(f, "name")),
                function.and_then(|f| f.get("arguments")),
            ))
        })
        .collect();
    let answers = if str_of(m, "role") == Some("tool") {
        vec![Answer {
            slot: Slot::Content,
            call_id: str_of(m, "tool_call_id").map(str::to_owned),
        }]
    } else {
        Vec::new()
    };
    Shape {
        system: is_system_role(m),
        calls,
        answers,
        binds_next: false,
    }
}

fn anthropic_shape(m: &Value) -> Shape {
    let mut shape = Shape::default();
    let blocks = m.get("content").and_then(Value::as_array);
    for (n, b) in blocks.into_iter().flatten().enumerate() {
        match str_of(b, "type") {
            Some("tool_use" | "server_tool_use") => {
                if let Some(id) = str_of(b, "id") {
                    let call = Call::new(id, str_of(b, "name"), b.get("input"));
                    shape.calls.push(call);
                }
            }
            Some("tool_result") => shape.answers.push(Answer {
                slot: Slot::Block(n),
                call_id: str_of(b, "tool_use_id").map(str::to_owned),
            }),
            _ => {}
        }
    }
    shape
}

fn responses_shape(m: &Value) -> Shape {
    let mut shape = Shape {
        system: is_system_role(m),
        ..Shape::default()
    };
    match str_of(m, "type") {
        Some("function_call" | "custom_tool_call") => {
            if let Some(id) = str_of(m, "call_id") {
                let arguments = m.get("arguments").or_else(|| m.get("input"));
                shape
                    .calls
                    .push(Call::new(id, str_of(m, "name"), arguments));
            }
        }
        Some("function_call_output" | "custom_tool_call_output") => shape.answers.push(Answer {
            slot: Slot::Output,
            call_id: str_of(m, "call_id").map(str::to_owned),
        }),
        Some("reasoning") => shape.binds_next = true,
        _ => {}
    }
    shape
}

/// The value holding an answer's content.
pub(crate) fn slot_value<'a>(m: &'a Value, slot: &Slot) -> Option<&'a Value> {
    match slot {
        Slot::Content => m.get("content"),
        Slot::Block(n) => m.get("content")?.get(*n)?.get("content"),
        Slot::Output => m.get("output"),
    }
}

fn slot_value_mut<'a>(m: &'a mut Value, slot: &Slot) -> Option<&'a mut Value> {
    match slot {
        Slot::Content => m.get_mut("content"),
        Slot::Block(n) => m.get_mut("content")?.get_mut(*n)?.get_mut("content"),
        Slot::Output => m.get_mut("output"),
    }
}

/// The text parts' types of the three formats.
fn is_text_part(part: &Value) -> bool {
    matches!(
        str_of(part, "type"),
        Some("text" | "input_text" | "output_text")
    ) && part.get("text").is_some_and(Value::is_string)
}

/// The text of a content value: a string, or its text parts joined by
/// line breaks. `None` when it holds no text.
pub(crate) fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| is_text_part(p))
                .filter_map(|p| str_of(p, "text"))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// Puts `text` in place of an answer's text: a string content becomes
/// `text`; in an array of parts, the text parts give way to one part of the
/// first one's type holding `text`, where the first one stood, and other
/// parts (images) stay. The answer stays where it was, paired as before.
pub(crate) fn replace_text(m: &mut Value, slot: &Slot, text: &str) {
    let Some(content) = slot_value_mut(m, slot) else {
        return;
    };
    match content {
        Value::Array(parts) => {
            let Some(first) = parts.iter().position(is_text_part) else {
                return;
            };
            let kind = str_of(&parts[first], "type").unwrap_or("text").to_owned();
            // Every part before the first text part stays before it.
            parts.retain(|p| !is_text_part(p));
            let part = serde_json::json!({"type": kind, "text": text});
            parts.insert(first.min(parts.len()), part);
        }
        other => *other = Value::String(text.to_owned()),
    }
}
