//! One message from the agent, with what the relay needs to know of it:
//! whether an answer is owed (its id), its method, the tool it calls, and
//! the per-request headers of the 2026-07-28 transport it declares.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use serde_json::Value;

use super::VERSION_HEADER;

/// One message from the agent, with what the relay needs to know of it.
pub(super) struct Message {
    pub(super) bytes: Bytes,
    /// The id, when it is a request (an answer is owed).
    pub(super) request_id: Option<Value>,
    pub(super) method: Option<String>,
    /// The tool a `tools/call` names.
    pub(super) tool: Option<String>,
    /// The 2026-07-28 routing headers the message's HTTP request carries.
    pub(super) routing: Vec<(HeaderName, HeaderValue)>,
}

impl Message {
    /// Whether the message must reach the server before the next one is
    /// sent: anything but a request, and `initialize` (later requests need
    /// its session).
    pub(super) fn in_order(&self) -> bool {
        self.request_id.is_none() || self.method.as_deref() == Some("initialize")
    }

    pub(super) fn new(text: &str, value: &Value) -> Message {
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let request_id = match (value.get("id"), &method) {
            (Some(id), Some(_)) => Some(id.clone()),
            _ => None,
        };
        let tool = match method.as_deref() {
            Some("tools/call") => value.pointer("/params/name").and_then(Value::as_str),
            _ => None,
        };
        Message {
            bytes: Bytes::copy_from_slice(text.as_bytes()),
            tool: tool.map(str::to_owned),
            request_id,
            routing: method
                .as_deref()
                .map(|m| routing_headers(m, value))
                .unwrap_or_default(),
            method,
        }
    }
}

/// The per-request headers of the 2026-07-28 HTTP transport, for a message
/// that declares that version in `_meta`: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that name something (over
/// stdio the agent has no headers to send; the server checks them against
/// the body). Not derived: `Mcp-Param-*`, which needs the tool's schema.
fn routing_headers(method: &str, value: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let params = value.get("params");
    let version = params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
        .and_then(Value::as_str);
    let Some(version) = version else {
        return Vec::new();
    };
    let mut headers = Vec::new();
    let mut add = |name: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(&header_text(v)) {
            headers.push((HeaderName::from_static(name), v));
        }
    };
    add(VERSION_HEADER, version);
    add("mcp-method", method);
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(name) = name_key.and_then(|k| params?.get(k)?.as_str()) {
        add("mcp-name", name);
    }
    headers
}

/// A header value as the 2026-07-28 transport writes it: visible ASCII
/// without edge spaces as is, anything else as `=?base64?...?=`.
fn header_text(v: &str) -> String {
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && v.trim() == v
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if plain {
        return v.to_owned();
    }
    use base64::Engine as _;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(v)
    )
}
