//! JSON-RPC messages, as far as the layer needs them.
//!
//! Requests are classified from their body: which `tools/call` and
//! `tasks/result` requests to watch (id, tool name, arguments), whether the
//! client declared itself an LRO proxy, and whether it is an `initialize`.
//! Responses are searched for the watched ids without parsing results.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::ToolCall;
use crate::engine::jsonfmt::range_in;

/// The `_meta` key under which 2026-07-28 requests carry client information.
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";

#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
    #[serde(default, rename = "clientInfo")]
    client_info: Option<Value>,
    #[serde(default, rename = "taskId")]
    task_id: Option<Value>,
}

fn is_proxy_flag(client_info: Option<&Value>) -> bool {
    client_info
        .and_then(|c| c.get("proxy"))
        .is_some_and(|p| p == &Value::Bool(true))
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

/// A watched request.
#[derive(Debug, Clone)]
pub(crate) enum Watched {
    /// `tools/call`.
    Call(ToolCall),
    /// `tasks/result` for this task id.
    TaskResult(String),
}

/// Classifies a request body: a single JSON-RPC message or a batch (an
/// array, from clients older than 2025-06-18). Anything else: nothing to do.
pub(crate) fn classify(body: &[u8]) -> Classified {
    let mut out = Classified::default();
    let trimmed = body.trim_ascii_start();
    let requests: Vec<Request> = match trimmed.first() {
        Some(b'{') => match serde_json::from_slice::<Request>(body) {
            Ok(r) => vec![r],
            Err(_) => return out,
        },
        Some(b'[') => match serde_json::from_slice::<Vec<Box<RawValue>>>(body) {
            Ok(items) => items
                .iter()
                .filter_map(|i| serde_json::from_str::<Request>(i.get()).ok())
                .collect(),
            Err(_) => return out,
        },
        _ => return out,
    };
    for r in requests {
        let Some(method) = r.method.as_deref() else {
            continue;
        };
        let params = r.params.as_ref();
        let meta_info = params
            .and_then(|p| p.meta.as_ref())
            .and_then(|m| m.get(CLIENT_INFO_META_KEY));
        if is_proxy_flag(meta_info) {
            out.proxy = true;
        }
        if method == "initialize" {
            out.initialize = true;
            if is_proxy_flag(params.and_then(|p| p.client_info.as_ref())) {
                out.proxy = true;
            }
            continue;
        }
        let Some(id) = r.id.clone().filter(|id| id.is_string() || id.is_number()) else {
            continue; // a notification or a response
        };
        match method {
            "tools/call" => {
                let Some(p) = params else { continue };
                let Some(name) = p.name.as_ref().and_then(Value::as_str) else {
                    continue;
                };
                out.watched
                    .push((id, Watched::Call(ToolCall::new(name, p.arguments.clone()))));
            }
            "tasks/result" => {
                let task = params
                    .and_then(|p| p.task_id.as_ref())
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                out.watched.push((id, Watched::TaskResult(task)));
            }
            _ => {}
        }
    }
    out
}

/// A response message seen in a body: its id and its raw `result`.
#[derive(Deserialize)]
pub(crate) struct ResponseMessage<'a> {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
}

/// Finds the responses in a JSON body (one message or a batch array):
/// for each, its id and the byte range of its `result`.
pub(crate) fn find_results(body: &str) -> Vec<(Value, std::ops::Range<usize>)> {
    let trimmed = body.trim_start();
    if !trimmed.starts_with('[') {
        // One message: parsed once, straight into its id and raw result
        // (the body may be megabytes; a second pass would cost as much).
        return match serde_json::from_str::<ResponseMessage<'_>>(body) {
            Ok(ResponseMessage {
                id: Some(id),
                result: Some(result),
            }) => vec![(id, range_in(body, result.get()))],
            _ => Vec::new(),
        };
    }
    let messages: Vec<&RawValue> = serde_json::from_str(body).unwrap_or_default();
    let mut out = Vec::new();
    for m in messages {
        let Ok(msg) = serde_json::from_str::<ResponseMessage<'_>>(m.get()) else {
            continue;
        };
        if let (Some(id), Some(result)) = (msg.id, msg.result) {
            out.push((id, range_in(body, result.get())));
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_calls_batches_and_proxies() {
        let c = classify(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall_memories","arguments":{"query":"x"}}}"#);
        assert_eq!(c.watched.len(), 1);
        assert_eq!(c.watched[0].0, Value::from(7));
        assert!(!c.proxy);
        let c = classify(br#"[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t"}},{"jsonrpc":"2.0","method":"notifications/progress"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#);
        assert_eq!(c.watched.len(), 1);
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

    #[test]
    fn finds_result_ranges() {
        let body = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        let found = find_results(body);
        assert_eq!(found.len(), 1);
        assert_eq!(&body[found[0].1.clone()], r#"{"content":[]}"#);
        let batch = r#"[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}]"#;
        assert_eq!(find_results(batch).len(), 1);
    }
}
