//! JSON-RPC messages, as far as the layer needs them.
//!
//! Requests are classified from their body: which `tools/call` and
//! `tasks/result` requests to watch (id, tool name, arguments), whether the
//! client declared itself an LRO proxy, and whether it is an `initialize`.
//! Responses are searched for the watched ids without parsing results.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::call::ToolCall;
use crate::json::range_in;

/// The `_meta` key under which 2026-07-28 requests carry client information.
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";

/// A request as the layer reads it: borrowed from the body, with the
/// parts it does not need left unparsed (no allocation for `initialize`,
/// `tools/list` and the like).
struct Request<'a> {
    id: Option<Value>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
}

impl<'a> Request<'a> {
    /// `None` when `json` is no object, repeats a member read here, or
    /// has an id that cannot be read.
    fn read(json: &'a str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }
}

/// Read with [`members`]' rules (an object only; keys it does not read
/// skipped, lone surrogates included).
impl<'de> Deserialize<'de> for Request<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{DeserializeSeed, Error};
        let [id, method, params] = Members(["id", "method", "params"]).deserialize(d)?;
        let id = id.map(value_of).transpose().map_err(D::Error::custom)?;
        Ok(Request { id, method, params })
    }
}

/// The members of `params` the layer reads; each kept raw, so a member of
/// an unexpected type costs only that member, not the whole request.
#[derive(Default)]
struct Params<'a> {
    name: Option<&'a RawValue>,
    arguments: Option<&'a RawValue>,
    meta: Option<&'a RawValue>,
    client_info: Option<&'a RawValue>,
    task_id: Option<&'a RawValue>,
    task: Option<&'a RawValue>,
}

impl<'a> Params<'a> {
    fn read(json: &'a str) -> Option<Self> {
        let names = ["name", "arguments", "_meta", "clientInfo", "taskId", "task"];
        let [name, arguments, meta, client_info, task_id, task] = members(json, names).ok()?;
        Some(Params {
            name,
            arguments,
            meta,
            client_info,
            task_id,
            task,
        })
    }
}

/// The `_meta` member that carries client information (2026-07-28), when
/// `meta` is an object.
fn meta_client_info(meta: &RawValue) -> Option<&RawValue> {
    let [info] = members(meta.get(), [CLIENT_INFO_META_KEY]).ok()?;
    info
}

/// A raw value as a `Value` (refused: a string with a lone surrogate).
fn value_of(raw: &RawValue) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Value>(raw.get())
}

/// The members named in `names` of the JSON object `json`, each raw (a
/// `null` member counts as absent); the others skipped. Anything but an object is refused: a JSON array is never
/// read positionally as a message, `_meta` or client information (serde's
/// derived structs accept `[id, method, params]`). Keys are compared once
/// unescaped without checking surrogates, so a key holding a lone surrogate
/// (`"\ud800"`) is one more key to skip, not an error that would hide the
/// whole message. A name given twice is an error, as with a derived struct.
fn members<'a, const N: usize>(
    json: &'a str,
    names: [&'static str; N],
) -> Result<[Option<&'a RawValue>; N], serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(json);
    let found = Members(names).deserialize(&mut de)?;
    de.end()?;
    Ok(found)
}

/// The seed and visitor of [`members`].
struct Members<const N: usize>([&'static str; N]);

impl<'de, const N: usize> serde::de::DeserializeSeed<'de> for Members<N> {
    type Value = [Option<&'de RawValue>; N];

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, const N: usize> serde::de::Visitor<'de> for Members<N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        let mut seen = [false; N];
        while let Some(KeyBytes(key)) = map.next_key()? {
            match self.0.iter().position(|n| n.as_bytes() == &*key) {
                Some(i) if seen[i] => {
                    return Err(serde::de::Error::duplicate_field(self.0[i]));
                }
                Some(i) => {
                    seen[i] = true;
                    let value = map.next_value::<&'de RawValue>()?;
                    found[i] = Some(value).filter(|v| v.get() != "null");
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// An object key as bytes, unescaped without checking surrogates.
struct KeyBytes<'de>(Cow<'de, [u8]>);

impl<'de> Deserialize<'de> for KeyBytes<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = KeyBytes<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(KeyBytes(Cow::Borrowed(v)))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(KeyBytes(Cow::Owned(v.to_vec())))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(KeyBytes(Cow::Borrowed(v.as_bytes())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(KeyBytes(Cow::Owned(v.as_bytes().to_vec())))
            }
        }
        d.deserialize_bytes(Visit)
    }
}

/// A JSON string, borrowed when it has no escapes.
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(Cow::Owned),
    }
}

/// `clientInfo.proxy` is exactly `true` (anything else, or a member of
/// another type, is not the flag).
fn is_proxy_flag(client_info: Option<&RawValue>) -> bool {
    client_info
        .and_then(|c| members(c.get(), ["proxy"]).ok())
        .and_then(|[proxy]| proxy)
        .is_some_and(|p| p.get() == "true")
}

/// What a request body asks for, from the layer's point of view.
#[derive(Debug, Default)]
pub(crate) struct Classified {
    /// Requests whose responses are evaluated: JSON-RPC id and call.
    pub watched: Vec<(Value, Watched)>,
    /// The client declared `clientInfo.proxy: true` (in `initialize` or in
    /// the 2026-07-28 `_meta` client info).
    pub proxy: bool,
    /// The body holds an `initialize` request.
    pub initialize: bool,
}

/// A `tools/call` as read from a request: its arguments kept as raw JSON
/// (a slice of the request body, no copy) and parsed only when a result
/// really has to be evaluated.
#[derive(Debug, Clone)]
pub(crate) struct RawCall {
    /// The tool's name.
    pub name: String,
    /// `params.arguments`, as sent.
    pub arguments: Option<Bytes>,
}

impl RawCall {
    /// A call known by name only.
    pub fn named(name: impl Into<String>) -> Self {
        RawCall {
            name: name.into(),
            arguments: None,
        }
    }

    /// The call with its arguments parsed.
    pub fn to_call(&self) -> ToolCall {
        let arguments = self
            .arguments
            .as_deref()
            .and_then(|a| serde_json::from_slice::<Value>(a).ok());
        ToolCall::new(self.name.clone(), arguments)
    }

    /// What of the call is kept for long (a task's call, until its
    /// `tasks/result`): the name and the few string arguments the engine
    /// reads ([`DESCRIPTOR_ARGUMENTS`]), each cut to [`KEPT_CHARS`]
    /// characters, in a buffer of its own (not a slice keeping the whole
    /// request body alive). At most a few KB, whatever the client sent.
    pub fn kept(&self) -> Self {
        let arguments = self.arguments.as_deref().and_then(|a| {
            let all: serde_json::Map<String, Value> = serde_json::from_slice(a).ok()?;
            let kept: serde_json::Map<String, Value> = DESCRIPTOR_ARGUMENTS
                .iter()
                .filter_map(|&k| {
                    let v = all.get(k)?.as_str()?;
                    Some((
                        k.to_owned(),
                        Value::String(cut_chars(v, KEPT_CHARS).to_owned()),
                    ))
                })
                .collect();
            let bytes = serde_json::to_vec(&kept).ok()?;
            Some(Bytes::from(bytes))
        });
        RawCall {
            name: cut_chars(&self.name, KEPT_CHARS).to_owned(),
            arguments,
        }
    }

    /// Bytes this call holds.
    pub fn size(&self) -> usize {
        self.name.len() + self.arguments.as_ref().map_or(0, Bytes::len)
    }
}

/// The arguments the engine reads from a call (detail level, query under
/// each of its names, see [`ToolCall::query`]).
pub(crate) const DESCRIPTOR_ARGUMENTS: [&str; 8] = [
    "detail", "query", "q", "pattern", "search", "filter", "keyword", "term",
];

/// Characters kept of a remembered call's name and of each kept argument.
pub(crate) const KEPT_CHARS: usize = 256;

/// The first `n` characters of `s`.
fn cut_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(at, _)| &s[..at])
}

/// A watched request.
#[derive(Debug, Clone)]
pub(crate) enum Watched {
    /// `tools/call`; `task` when it is task-augmented (`params.task`), the
    /// only case in which a server may answer with a `CreateTaskResult`.
    Call {
        /// The call.
        call: RawCall,
        /// The request carries `params.task`.
        task: bool,
    },
    /// `tasks/result` for this task id.
    TaskResult(String),
}

/// Classifies a request body: a single JSON-RPC message or a batch (an
/// array, from clients older than 2025-06-18). Anything else: nothing to do.
pub(crate) fn classify(body: &Bytes) -> Classified {
    let mut out = Classified::default();
    if !may_matter(body) {
        return out;
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return out;
    };
    let whole = Whole { body, text };
    match text.trim_ascii_start().as_bytes().first() {
        Some(b'{') => {
            if let Some(r) = Request::read(text) {
                classify_one(r, &whole, &mut out);
            }
        }
        Some(b'[') => {
            if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
                for item in items {
                    if let Some(r) = Request::read(item.get()) {
                        classify_one(r, &whole, &mut out);
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether a body may hold a watched request or the proxy flag: it names
/// `tools/call`, `tasks/result` or `proxy`, or has an escape (behind which
/// any of them could hide). Most requests (`initialize`, `tools/list`,
/// notifications) are then classified without being parsed.
fn may_matter(body: &[u8]) -> bool {
    use memchr::memmem;
    memchr::memchr(b'\\', body).is_some()
        || memmem::find(body, b"tools/call").is_some()
        || memmem::find(body, b"tasks/result").is_some()
        || memmem::find(body, b"proxy").is_some()
}

/// A request body and its text, to slice parts of it out.
struct Whole<'a> {
    body: &'a Bytes,
    text: &'a str,
}

impl Whole<'_> {
    fn slice(&self, part: &RawValue) -> Bytes {
        self.body.slice(range_in(self.text, part.get()))
    }
}

fn classify_one(r: Request<'_>, whole: &Whole<'_>, out: &mut Classified) {
    let Some(method) = r.method.and_then(json_str) else {
        return;
    };
    // Positional (array) params are not MCP: read as no params.
    let params = r
        .params
        .filter(|p| p.get().starts_with('{'))
        .and_then(|p| Params::read(p.get()))
        .unwrap_or_default();
    let meta_info = params.meta.and_then(meta_client_info);
    if is_proxy_flag(meta_info) {
        out.proxy = true;
    }
    if method == "initialize" {
        out.initialize = true;
        if is_proxy_flag(params.client_info) {
            out.proxy = true;
        }
        return;
    }
    let Some(id) = r.id.filter(|id| id.is_string() || id.is_number()) else {
        return; // a notification or a response
    };
    match &*method {
        "tools/call" => {
            let Some(name) = params.name.and_then(json_str) else {
                return;
            };
            let arguments = params.arguments.map(|a| whole.slice(a));
            let task = params.task.is_some_and(|t| t.get() != "null");
            let call = RawCall {
                name: name.into_owned(),
                arguments,
            };
            out.watched.push((id, Watched::Call { call, task }));
        }
        "tasks/result" => {
            let task = params
                .task_id
                .and_then(json_str)
                .map(Cow::into_owned)
                .unwrap_or_default();
            out.watched.push((id, Watched::TaskResult(task)));
        }
        _ => {}
    }
}

/// A message of a response body, as far as the layer reads it (a member
/// that is `null` counts as absent).
struct Message<'a> {
    id: Option<Value>,
    method: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
}

impl<'a> Message<'a> {
    fn read(json: &'a str) -> Result<Self, serde_json::Error> {
        let [id, method, result] = members(json, ["id", "method", "result"])?;
        let id = id.map(value_of).transpose()?;
        Ok(Message { id, method, result })
    }
}

/// What a message in a response body is.
#[derive(Debug)]
pub(crate) enum Reply<'a> {
    /// A response carrying a result.
    Result { id: Value, result: &'a RawValue },
    /// A response without a result (an error response).
    NoResult { id: Value },
    /// Anything else: a request or notification of the server (it has a
    /// `method`, whatever its id), a message without an id.
    Other,
    /// A JSON object that cannot be read as one JSON-RPC message (a
    /// duplicate member, a wrong type), with its id when one can be read:
    /// a client may still take it for the response.
    Broken { id: Option<Value>, why: String },
}

/// Reads one message of a response body.
pub(crate) fn read_reply(text: &str) -> Reply<'_> {
    match Message::read(text) {
        Ok(Message {
            id: Some(id),
            method: None,
            result: Some(result),
        }) => Reply::Result { id, result },
        Ok(Message {
            id: Some(id),
            method: None,
            result: None,
        }) => Reply::NoResult { id },
        Ok(_) => Reply::Other,
        Err(e) => {
            // Read leniently (the last of duplicate members wins, as in most
            // clients) only to learn whose answer it claims to be.
            let lenient: Option<Value> = serde_json::from_str(text).ok();
            let id = lenient.and_then(|mut v| match v.get_mut("method") {
                Some(_) => None,
                None => v.get_mut("id").map(Value::take),
            });
            Reply::Broken {
                id,
                why: format!("not one JSON-RPC message: {e}"),
            }
        }
    }
}

/// A response found in a JSON body.
#[derive(Debug)]
pub(crate) enum Found {
    /// A result: the id it answers and the byte range of the result.
    Result { id: Value, range: Range<usize> },
    /// A message claiming to answer `id` that cannot be read (see
    /// [`Reply::Broken`]).
    Broken { id: Value, why: String },
}

/// Finds the responses in a JSON body (one message or a batch array).
pub(crate) fn find_results(body: &str) -> Vec<Found> {
    let found = |text: &str| match read_reply(text) {
        Reply::Result { id, result } => Some(Found::Result {
            id,
            range: range_in(body, result.get()),
        }),
        Reply::Broken { id: Some(id), why } => Some(Found::Broken { id, why }),
        Reply::NoResult { .. } | Reply::Other | Reply::Broken { id: None, .. } => None,
    };
    let trimmed = body.trim_start();
    if !trimmed.starts_with('[') {
        // One message: parsed once, straight into its id and raw result
        // (the body may be megabytes; a second pass would cost as much).
        return found(body).into_iter().collect();
    }
    let messages: Vec<&RawValue> = serde_json::from_str(body).unwrap_or_default();
    messages.iter().filter_map(|m| found(m.get())).collect()
}

/// The task id of a `CreateTaskResult` (`{"task": {"taskId": ...}}`).
pub(crate) fn created_task_id(result: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Created {
        task: Task,
    }
    #[derive(Deserialize)]
    struct Task {
        #[serde(rename = "taskId")]
        task_id: String,
    }
    serde_json::from_str::<Created>(result)
        .ok()
        .map(|c| c.task.task_id)
}

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
    /// `tools/list` without a cursor: its answer gets the layer's tools.
    ListTools {
        /// The JSON-RPC id.
        id: Value,
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
        "tools/list" if cursor.is_none_or(|c| c.get() == "null") => Served::ListTools { id },
        "initialize" | "server/discover" => Served::Capabilities { id },
        _ => Served::None,
    }
}

#[cfg(test)]
mod served_tests {
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
            Served::ListTools { id: Value::from(1) }
        );
        assert_eq!(
            c(r#"{"id":1,"method":"tools/list","params":{"cursor":null}}"#),
            Served::ListTools { id: Value::from(1) }
        );
        assert_eq!(
            c(r#"{"id":1,"method":"initialize","params":{}}"#),
            Served::Capabilities { id: Value::from(1) }
        );
        for other in [
            r#"{"id":1,"method":"tools/call","params":{"name":"status"}}"#,
            r#"{"id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
            r#"{"id":1,"method":"tools/list","params":{"cursor":"2"}}"#,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_calls_batches_and_proxies() {
        let c = classify(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall_memories","arguments":{"query":"x"}}}"#);
        assert_eq!(
            call(&c),
            (
                "recall_memories".into(),
                Some(serde_json::json!({"query": "x"})),
                false
            )
        );
        assert_eq!(c.watched[0].0, Value::from(7));
        assert!(!c.proxy);
        let c = classify(br#"[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t"}},{"jsonrpc":"2.0","method":"notifications/progress"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#);
        assert_eq!(c.watched.len(), 1);
        let c = classify(br#"[{"id":"b","method":"tools/list"}, {"id":"a","method":"tools/call","params":{"name":"u","arguments":{"k":[1, "]"]}}}]"#);
        assert_eq!(
            call(&c),
            ("u".into(), Some(serde_json::json!({"k": [1, "]"]})), false)
        );
        let c = classify(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"p","version":"1","proxy":true}}}"#);
        assert!(c.initialize && c.proxy);
        let c = classify(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"p","proxy":true}}}}"#);
        assert!(c.proxy);
        assert!(classify(b"not json").watched.is_empty());
        assert!(
            classify(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#)
                .watched
                .is_empty()
        );
    }

    fn classify(body: &[u8]) -> Classified {
        super::classify(&Bytes::copy_from_slice(body))
    }

    fn call(c: &Classified) -> (String, Option<Value>, bool) {
        match &c.watched[..] {
            [(_, Watched::Call { call, task })] => {
                let parsed = call.to_call();
                (parsed.name, parsed.arguments, *task)
            }
            other => panic!("one call expected, got {other:?}"),
        }
    }

    #[test]
    fn reads_names_arguments_and_task_augmentation() {
        let c = classify(br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"r\u00e9sum\u00e9","arguments":{"q":"a\"b","n":[1,2]},"task":{"ttl":60000}}}"#);
        let (name, args, task) = call(&c);
        assert_eq!(name, "résumé");
        assert_eq!(args, Some(serde_json::json!({"q": "a\"b", "n": [1, 2]})));
        assert!(task);
        let c = classify(br#" {"id":"x","method":"tools/call","params":{"name":"t","task":null}}"#);
        assert_eq!(call(&c), ("t".into(), None, false));
        // A member of an unexpected type costs that member only.
        let c = classify(
            br#"{"id":2,"method":"tools/call","params":{"name":"t","_meta":7,"clientInfo":"x"}}"#,
        );
        assert_eq!(call(&c).0, "t");
        assert!(!c.proxy);
        // Not a string name, positional params, ids that cannot be answered.
        for body in [
            r#"{"id":2,"method":"tools/call","params":{"name":5}}"#,
            r#"{"id":2,"method":"tools/call","params":["t"]}"#,
            r#"{"id":null,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"id":{"a":1},"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"id":2,"method":7,"params":{"name":"t"}}"#,
        ] {
            assert!(classify(body.as_bytes()).watched.is_empty(), "{body}");
        }
        // Only `true` is the proxy flag.
        for (flag, proxy) in [
            ("true", true),
            ("\"true\"", false),
            ("1", false),
            ("false", false),
        ] {
            let body = format!(
                r#"{{"id":1,"method":"initialize","params":{{"clientInfo":{{"name":"p","proxy":{flag}}}}}}}"#
            );
            assert_eq!(classify(body.as_bytes()).proxy, proxy, "{flag}");
        }
        // Skipped without a parse, and still found behind escapes.
        assert!(!may_matter(
            br#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c"}}}"#
        ));
        assert!(!may_matter(br#"{"id":1,"method":"tools/list"}"#));
        let c = classify(br#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"p","pro\u0078y":true}}}"#);
        assert!(c.initialize && c.proxy);
        let c = classify(br#"{"id":1,"method":"tasks\/result","params":{"taskId":"t-2"}}"#);
        assert!(matches!(&c.watched[..], [(_, Watched::TaskResult(t))] if t == "t-2"));
        let c = classify(br#"{"id":3,"method":"tasks/result","params":{"taskId":"t-1"}}"#);
        assert!(matches!(&c.watched[..], [(_, Watched::TaskResult(t))] if t == "t-1"));
    }

    #[test]
    fn finds_result_ranges() {
        let body = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        let found = find_results(body);
        assert!(
            matches!(&found[..], [Found::Result { id, range }] if *id == 3 && &body[range.clone()] == r#"{"content":[]}"#)
        );
        let batch = r#"[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}]"#;
        assert_eq!(find_results(batch).len(), 1);
    }

    #[test]
    fn only_the_arguments_the_engine_reads_are_kept_and_cut() {
        let big = "x".repeat(1 << 20);
        let args = format!(r#"{{"detail":"full","query":"{big}","blob":"{big}","n":3}}"#);
        let call = RawCall {
            name: "t".repeat(10_000),
            arguments: Some(Bytes::from(args)),
        };
        let kept = call.kept();
        let value: Value = serde_json::from_slice(kept.arguments.as_ref().unwrap()).unwrap();
        assert_eq!(value["detail"], "full");
        assert_eq!(value["query"].as_str().unwrap().len(), KEPT_CHARS);
        assert!(value.get("blob").is_none() && value.get("n").is_none());
        assert_eq!(kept.name.len(), KEPT_CHARS);
        assert!(kept.size() < 1024, "{}", kept.size());
    }

    #[test]
    fn server_requests_are_not_responses_and_broken_messages_are_named() {
        // A server request may reuse the id of the client's call.
        let req = r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#;
        assert!(matches!(read_reply(req), Reply::Other));
        assert!(find_results(req).is_empty());
        let err = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#;
        assert!(matches!(read_reply(err), Reply::NoResult { .. }));
        // Duplicate members: not one message, but whose answer it claims to be is known.
        let dup = r#"{"jsonrpc":"2.0","id":9,"result":{"content":[]},"result":{"content":[1]}}"#;
        assert!(
            matches!(read_reply(dup), Reply::Broken { id: Some(ref id), ref why } if *id == 9 && why.contains("duplicate"))
        );
        assert!(matches!(&find_results(dup)[..], [Found::Broken { id, .. }] if *id == 9));
    }
}
