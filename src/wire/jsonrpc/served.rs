//! Requests the layer answers itself, or whose answer it adds to.

use std::borrow::Cow;

use serde_json::Value;

use super::{Request, json_str, members};

/// The `_meta` key of a 2026-07-28 request's protocol version.
const PROTOCOL_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// A request the layer answers itself, or whose answer it adds to (when it
/// serves offloaded data over MCP).
#[derive(Debug, PartialEq)]
pub(crate) enum Served {
    /// Not the layer's business.
    None,
    /// `tools/call` of one of `tools` (see [`classify_served`]).
    Call {
        /// The JSON-RPC id.
        id: Value,
        /// The tool's name.
        tool: String,
        /// `params.arguments`.
        arguments: Option<Value>,
        /// The protocol version in `params._meta` (2026-07-28).
        protocol: Option<String>,
    },
    /// `resources/read`.
    ReadResource {
        /// The JSON-RPC id.
        id: Value,
        /// `params.uri`.
        uri: String,
        /// The protocol version in `params._meta` (2026-07-28).
        protocol: Option<String>,
    },
    /// `tools/list`: its answer gets the layer's tools (the first page:
    /// without a cursor) and loses its closed output schemas.
    ListTools {
        /// The JSON-RPC id.
        id: Value,
        /// No cursor: the first page.
        first_page: bool,
    },
    /// `initialize` or `server/discover`: its answer gets the resources
    /// capability when it has none.
    Capabilities {
        /// The JSON-RPC id.
        id: Value,
    },
}

/// Classifies a request body (one JSON-RPC message; batches are never the
/// layer's) for serving: a `tools/call` of one of `tools`, a
/// `resources/read` of a URI for which `ours` holds, a first-page
/// `tools/list`, an `initialize` or `server/discover`. Bodies naming none
/// of these methods are not parsed.
pub(crate) fn classify_served(body: &[u8], tools: &[&str], ours: impl Fn(&str) -> bool) -> Served {
    use memchr::memmem;
    let named = |m: &[u8]| memmem::find(body, m).is_some();
    // A call of one of the layer's tools names `lro_`; anything may hide
    // behind an escape.
    let maybe = memchr::memchr(b'\\', body).is_some()
        || named(b"lro_")
        || named(b"resources/read")
        || named(b"tools/list")
        || named(b"initialize")
        || named(b"server/discover");
    if !maybe || !body.trim_ascii_start().starts_with(b"{") {
        return Served::None;
    }
    let Some(r) = std::str::from_utf8(body).ok().and_then(Request::read) else {
        return Served::None;
    };
    let (Some(method), Some(id)) = (r.method.and_then(json_str), r.id) else {
        return Served::None;
    };
    if !(id.is_string() || id.is_number()) {
        return Served::None;
    }
    let names = ["name", "arguments", "uri", "cursor", "_meta"];
    let [name, arguments, uri, cursor, meta] = r
        .params
        .filter(|p| p.get().starts_with("{"))
        .and_then(|p| members(p.get(), names).ok())
        .unwrap_or_default();
    let protocol = || {
        let [v] = members(meta?.get(), [PROTOCOL_META_KEY]).ok()?;
        json_str(v?).map(Cow::into_owned)
    };
    match &*method {
        "tools/call" => match name.and_then(json_str) {
            Some(tool) if !tool.is_empty() && tools.contains(&&*tool) => Served::Call {
                id,
                tool: tool.into_owned(),
                arguments: arguments.and_then(|a| serde_json::from_str(a.get()).ok()),
                protocol: protocol(),
            },
            _ => Served::None,
        },
        "resources/read" => match uri.and_then(json_str) {
            Some(uri) if ours(&uri) => Served::ReadResource {
                id,
                uri: uri.into_owned(),
                protocol: protocol(),
            },
            _ => Served::None,
        },
        "tools/list" => Served::ListTools {
            id,
            first_page: cursor.is_none_or(|c| c.get() == "null"),
        },
        "initialize" | "server/discover" => Served::Capabilities { id },
        _ => Served::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_requests_are_found_and_others_left_alone() {
        let tools = ["lro_extract", "lro_list"];
        let ours = |u: &str| u.starts_with("lro://");
        let c = |b: &str| classify_served(b.as_bytes(), &tools, ours);
        let call = c(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lro_extract","arguments":{"recipe":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(
            call,
            Served::Call {
                id: Value::from(4),
                tool: "lro_extract".into(),
                arguments: Some(serde_json::json!({"recipe": 1})),
                protocol: Some("2026-07-28".into()),
            }
        );
        assert!(matches!(
            c(r#"{"id":"a","method":"tools\/call","params":{"name":"lro_list"}}"#),
            Served::Call { .. }
        ));
        assert!(matches!(
            c(r#"{"id":1,"method":"resources/read","params":{"uri":"lro://files/x"}}"#),
            Served::ReadResource { .. }
        ));
        assert_eq!(
            c(r#"{"id":1,"method":"tools/list"}"#),
            Served::ListTools {
                id: Value::from(1),
                first_page: true
            }
        );
        assert_eq!(
            c(r#"{"id":1,"method":"tools/list","params":{"cursor":null}}"#),
            Served::ListTools {
                id: Value::from(1),
                first_page: true
            }
        );
        assert_eq!(
            c(r#"{"id":1,"method":"tools/list","params":{"cursor":"2"}}"#),
            Served::ListTools {
                id: Value::from(1),
                first_page: false
            }
        );
        assert_eq!(
            c(r#"{"id":1,"method":"initialize","params":{}}"#),
            Served::Capabilities { id: Value::from(1) }
        );
        for other in [
            r#"{"id":1,"method":"tools/call","params":{"name":"status"}}"#,
            r#"{"id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
            r#"{"method":"tools/call","params":{"name":"lro_extract"}}"#,
            r#"[{"id":1,"method":"tools/call","params":{"name":"lro_extract"}}]"#,
            r#"{"id":null,"method":"tools/call","params":{"name":"lro_extract"}}"#,
            r#"{"id":1,"method":"ping"}"#,
            "not json",
        ] {
            assert_eq!(c(other), Served::None, "{other}");
        }
        // A shadowed tool is an empty name: a call named "" is not one.
        let empty = br#"{"id":1,"method":"tools/call","params":{"name":"","x":"lro_"}}"#;
        assert_eq!(
            classify_served(empty, &["", "lro_list"], ours),
            Served::None
        );
    }
}
