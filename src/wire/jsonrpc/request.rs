//! Request bodies classified: the `tools/call` and `tasks/result`
//! requests whose responses are evaluated, the proxy flag, `initialize`.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::mcp::Raw;

use super::{CLIENT_INFO_META_KEY, RawCall, Request, json_str, members};
use crate::json::range_in;

/// The members of `params` the layer reads; each kept raw, so a member of
/// an unexpected type costs only that member, not the whole request.
#[derive(Default)]
struct Params<'a> {
    name: Option<Raw<'a>>,
    arguments: Option<Raw<'a>>,
    meta: Option<Raw<'a>>,
    client_info: Option<Raw<'a>>,
    task_id: Option<Raw<'a>>,
    task: Option<Raw<'a>>,
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
fn meta_client_info(meta: Raw<'_>) -> Option<Raw<'_>> {
    let [info] = members(meta.get(), [CLIENT_INFO_META_KEY]).ok()?;
    info
}

/// `clientInfo.name`, when it is a string (at most [`MAX_CLIENT_NAME`]
/// characters are kept).
fn client_name(client_info: Option<Raw<'_>>) -> Option<String> {
    let [name] = members(client_info?.get(), ["name"]).ok()?;
    let name = json_str(name?)?;
    Some(name.chars().take(MAX_CLIENT_NAME).collect())
}

/// Characters of a client's name kept.
pub(crate) const MAX_CLIENT_NAME: usize = 128;

/// `clientInfo.proxy` is exactly `true` (anything else, or a member of
/// another type, is not the flag).
fn is_proxy_flag(client_info: Option<Raw<'_>>) -> bool {
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
    /// The client's `clientInfo.name` (of `initialize`, or of the 2026-07-28
    /// `_meta` client info).
    pub client: Option<String>,
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

/// Whether a body may hold a watched request, the proxy flag or a client's
/// name: it names `tools/call`, `tasks/result`, `proxy` or `clientInfo`, or has an escape (behind which
/// any of them could hide). Most requests (`initialize`, `tools/list`,
/// notifications) are then classified without being parsed.
fn may_matter(body: &[u8]) -> bool {
    use memchr::memmem;
    memchr::memchr(b'\\', body).is_some()
        || memmem::find(body, b"tools/call").is_some()
        || memmem::find(body, b"tasks/result").is_some()
        || memmem::find(body, b"proxy").is_some()
        || memmem::find(body, b"clientInfo").is_some()
}

/// A request body and its text, to slice parts of it out.
struct Whole<'a> {
    body: &'a Bytes,
    text: &'a str,
}

impl Whole<'_> {
    fn slice(&self, part: Raw<'_>) -> Bytes {
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
    if out.client.is_none() {
        out.client = client_name(meta_info);
    }
    if method == "initialize" {
        out.initialize = true;
        if is_proxy_flag(params.client_info) {
            out.proxy = true;
        }
        out.client = client_name(params.client_info).or(out.client.take());
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
        // The client's name is read from `initialize` and from `_meta`.
        let init = br#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c"}}}"#;
        assert!(may_matter(init));
        let c = classify(init);
        assert!(c.initialize && !c.proxy && c.client.as_deref() == Some("c"));
        let c = classify(
            br#"{"id":2,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"m\u00e9","version":"1"}}}}"#,
        );
        assert_eq!(c.client.as_deref(), Some("mé"));
        let long = format!(
            r#"{{"id":1,"method":"initialize","params":{{"clientInfo":{{"name":"{}"}}}}}}"#,
            "n".repeat(1000)
        );
        assert_eq!(
            classify(long.as_bytes()).client.map(|n| n.len()),
            Some(MAX_CLIENT_NAME)
        );
        // Skipped without a parse, and still found behind escapes.
        assert!(!may_matter(br#"{"id":1,"method":"tools/list"}"#));
        let c = classify(br#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"p","pro\u0078y":true}}}"#);
        assert!(c.initialize && c.proxy);
        let c = classify(br#"{"id":1,"method":"tasks\/result","params":{"taskId":"t-2"}}"#);
        assert!(matches!(&c.watched[..], [(_, Watched::TaskResult(t))] if t == "t-2"));
        let c = classify(br#"{"id":3,"method":"tasks/result","params":{"taskId":"t-1"}}"#);
        assert!(matches!(&c.watched[..], [(_, Watched::TaskResult(t))] if t == "t-1"));
    }
}
