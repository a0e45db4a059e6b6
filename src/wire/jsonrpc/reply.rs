//! Response bodies: the messages answering watched requests found, their
//! results left raw.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{members_within, value_of};
use crate::json::range_in;
use crate::wire::mcp::{MemberRanges, Raw};

/// A message of a response body, as far as the layer reads it (a member
/// that is `null` counts as absent).
struct Message<'a> {
    id: Option<Value>,
    method: Option<Raw<'a>>,
    result: Option<Raw<'a>>,
    /// Where the members of `result` sit in it, when known.
    members: Option<MemberRanges>,
}

impl<'a> Message<'a> {
    fn read(json: &'a str) -> Result<Self, serde_json::Error> {
        let ([id, method, result], members) =
            members_within(json, ["id", "method", "result"], Some(2))?;
        let id = id.map(value_of).transpose()?;
        Ok(Message {
            id,
            method,
            result,
            members,
        })
    }
}

/// What a message in a response body is.
#[derive(Debug)]
pub(crate) enum Reply<'a> {
    /// A response carrying a result (validated whole by [`members`], with
    /// serde's rules).
    Result {
        id: Value,
        result: Raw<'a>,
        /// Where the result's members sit in it, when the validator reported them.
        members: Option<MemberRanges>,
    },
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
            members,
        }) => Reply::Result {
            id,
            result,
            members,
        },
        Ok(Message {
            id: Some(id),
            method: None,
            result: None,
            ..
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
    /// A result: the id it answers and the byte range of the result
    /// (read whole by the validator as one JSON value, with serde's rules:
    /// the layer has the engine parse it without validating it again, so
    /// this must stay true).
    Result {
        id: Value,
        range: Range<usize>,
        /// Where the result's members sit in it, when the validator reported them.
        members: Option<MemberRanges>,
    },
    /// A message claiming to answer `id` that cannot be read (see
    /// [`Reply::Broken`]).
    Broken { id: Value, why: String },
}

/// Finds the responses in a JSON body (one message or a batch array).
pub(crate) fn find_results(body: &str) -> Vec<Found> {
    let found = |text: &str| match read_reply(text) {
        Reply::Result {
            id,
            result,
            members,
        } => Some(Found::Result {
            id,
            range: range_in(body, result.get()),
            members,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_result_ranges() {
        let body = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        let found = find_results(body);
        assert!(
            matches!(&found[..], [Found::Result { id, range, .. }] if *id == 3 && &body[range.clone()] == r#"{"content":[]}"#)
        );
        let batch = r#"[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}]"#;
        assert_eq!(find_results(batch).len(), 1);
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
