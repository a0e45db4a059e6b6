//! A group of messages as the plain-text transcript a summarizer reads:
//! one paragraph per message (or per tool answer), each starting with its
//! role: `user:`, `assistant:`, `tool (name):`.

use std::collections::HashMap;

use serde_json::Value;

use super::compact::pointer_line;
use super::format::{ChatFormat, content_text};

/// The most characters of a call's arguments shown.
const MAX_ARGUMENT_CHARS: usize = 300;

/// The transcript of `messages`; `names` gives the tool name of a call id.
pub(super) fn transcript(
    format: ChatFormat,
    messages: &[Value],
    names: &HashMap<&str, &str>,
) -> String {
    let mut out = Vec::new();
    for m in messages {
        match format {
            ChatFormat::OpenAiChat => chat_message(m, names, &mut out),
            ChatFormat::AnthropicMessages => anthropic_message(m, names, &mut out),
            ChatFormat::OpenAiResponses => responses_item(m, names, &mut out),
        }
    }
    out.join("\n\n")
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn text_of(v: Option<&Value>) -> String {
    v.and_then(content_text).unwrap_or_default()
}

fn call_line(name: &str, arguments: Option<&Value>) -> String {
    let arguments = match arguments {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let shown: String = arguments.chars().take(MAX_ARGUMENT_CHARS).collect();
    let more = if shown.len() < arguments.len() {
        "…"
    } else {
        ""
    };
    format!("calls {name}({shown}{more})")
}

fn tool_paragraph(names: &HashMap<&str, &str>, id: &str, text: String) -> String {
    let name = names.get(id).copied().unwrap_or("tool");
    let text = pointer_line(&text).unwrap_or(text);
    format!("tool ({name}): {text}")
}

fn chat_message(m: &Value, names: &HashMap<&str, &str>, out: &mut Vec<String>) {
    let role = str_of(m, "role");
    if role == "tool" {
        out.push(tool_paragraph(
            names,
            str_of(m, "tool_call_id"),
            text_of(m.get("content")),
        ));
        return;
    }
    let mut lines = vec![text_of(m.get("content"))];
    for call in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").unwrap_or(&Value::Null);
        lines.push(call_line(
            str_of(function, "name"),
            function.get("arguments"),
        ));
    }
    push_role(out, role, &lines);
}

fn push_role(out: &mut Vec<String>, role: &str, lines: &[String]) {
    let body: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.is_empty())
        .collect();
    if !body.is_empty() {
        out.push(format!("{role}: {}", body.join("\n")));
    }
}

fn anthropic_message(m: &Value, names: &HashMap<&str, &str>, out: &mut Vec<String>) {
    let role = str_of(m, "role");
    let Some(blocks) = m.get("content").and_then(Value::as_array) else {
        push_role(out, role, &[text_of(m.get("content"))]);
        return;
    };
    let mut lines = Vec::new();
    for b in blocks {
        match str_of(b, "type") {
            "text" => lines.push(str_of(b, "text").to_owned()),
            "tool_use" | "server_tool_use" => {
                lines.push(call_line(str_of(b, "name"), b.get("input")))
            }
            "tool_result" => {
                push_role(out, role, &std::mem::take(&mut lines));
                out.push(tool_paragraph(
                    names,
                    str_of(b, "tool_use_id"),
                    text_of(b.get("content")),
                ));
            }
            _ => {}
        }
    }
    push_role(out, role, &lines);
}

fn responses_item(m: &Value, names: &HashMap<&str, &str>, out: &mut Vec<String>) {
    match str_of(m, "type") {
        "function_call" | "custom_tool_call" => {
            let arguments = m.get("arguments").or_else(|| m.get("input"));
            out.push(format!(
                "assistant: {}",
                call_line(str_of(m, "name"), arguments)
            ));
        }
        "function_call_output" | "custom_tool_call_output" => {
            out.push(tool_paragraph(
                names,
                str_of(m, "call_id"),
                text_of(m.get("output")),
            ));
        }
        _ if m.get("role").is_some() => {
            push_role(out, str_of(m, "role"), &[text_of(m.get("content"))])
        }
        _ => {}
    }
}
