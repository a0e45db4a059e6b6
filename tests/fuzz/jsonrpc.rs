//! The JSON-RPC readers of `wire::jsonrpc`: request classification
//! (`classify`: watched calls, the proxy flag) and reply reading
//! (`find_results`, `read_reply`), on generated requests and responses,
//! edited ones and arbitrary bytes, checked against a model written here
//! over `serde_json`'s reading of the same body.

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use serde_json::value::RawValue;

use super::bounds::{config, timed};
use super::messages::{request_body, response_body};
use super::model::{Json, Obj, canon};
use crate::wire::jsonrpc::{Found, Reply, Watched, classify, find_results, read_reply};

/// What `classify` should find in a request body.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    watched: Vec<(Value, ExpectedWatch)>,
    proxy: bool,
}

#[derive(Debug, PartialEq)]
enum ExpectedWatch {
    Call {
        name: String,
        arguments: Option<Json>,
        task: bool,
    },
    TaskResult(String),
}

/// The members a JSON-RPC reader reads: an object (never an array read
/// positionally), none of `fields` repeated (keys it does not read, lone
/// surrogates included, are skipped).
fn readable_struct<'a>(raw: &'a RawValue, fields: &[&str]) -> Option<Obj<'a>> {
    Obj::read(raw.get()).filter(|o| fields.iter().all(|f| !o.repeats(f)))
}

/// The member `key` of `o`, unless it is `null` (read as absent).
fn present<'a>(o: &Obj<'a>, key: &str) -> Option<&'a RawValue> {
    o.get(key).filter(|v| v.get() != "null")
}

/// A JSON string's text (`None`: not a string, or a lone surrogate).
fn text(raw: &RawValue) -> Option<String> {
    serde_json::from_str(raw.get()).ok()
}

/// An id as the readers take it: absent or `null` is none (`Ok(None)`);
/// one `serde_json` refuses as a `Value` makes the message unreadable
/// (`Err`).
fn id_of(o: &Obj<'_>) -> Result<Option<Value>, ()> {
    present(o, "id")
        .map(|raw| serde_json::from_str::<Value>(raw.get()).map_err(|_| ()))
        .transpose()
}

/// `clientInfo.proxy` is exactly `true`.
fn proxy_flag(client_info: Option<&RawValue>) -> bool {
    client_info
        .and_then(|c| readable_struct(c, &["proxy"]))
        .and_then(|c| c.get("proxy"))
        .is_some_and(|p| p.get() == "true")
}

/// The model of `classify_one`, on one request.
fn expect_one(r: &RawValue, out: &mut Expected) {
    let Some(r) = readable_struct(r, &["id", "method", "params"]) else {
        return;
    };
    let Ok(id) = id_of(&r) else {
        return;
    };
    let Some(method) = r.get("method").and_then(text) else {
        return;
    };
    let params = r.get("params").and_then(|p| {
        readable_struct(
            p,
            &["name", "arguments", "_meta", "clientInfo", "taskId", "task"],
        )
    });
    let member = |k: &str| params.as_ref().and_then(|p| present(p, k));
    const META_KEY: &str = "io.modelcontextprotocol/clientInfo";
    let meta_info = member("_meta")
        .and_then(|m| readable_struct(m, &[META_KEY]))
        .and_then(|m| present(&m, META_KEY));
    if proxy_flag(meta_info) {
        out.proxy = true;
    }
    if method == "initialize" {
        if proxy_flag(member("clientInfo")) {
            out.proxy = true;
        }
        return;
    }
    let Some(id) = id.filter(|id| id.is_string() || id.is_number()) else {
        return;
    };
    match method.as_str() {
        "tools/call" => {
            let Some(name) = member("name").and_then(text) else {
                return;
            };
            out.watched.push((
                id,
                ExpectedWatch::Call {
                    name,
                    arguments: member("arguments").and_then(|a| canon(a.get())),
                    task: member("task").is_some(),
                },
            ));
        }
        "tasks/result" => {
            let task = member("taskId").and_then(text).unwrap_or_default();
            out.watched.push((id, ExpectedWatch::TaskResult(task)));
        }
        _ => {}
    }
}

/// `classify` never panics, watches only string and number ids, and agrees
/// with the model on bodies it can read.
fn check_classify(body: &[u8]) -> Result<(), TestCaseError> {
    let classified = classify(&Bytes::copy_from_slice(body));
    for (id, _) in &classified.watched {
        prop_assert!(id.is_string() || id.is_number(), "watched id {}", id);
    }
    let whole = std::str::from_utf8(body)
        .ok()
        .and_then(|b| serde_json::from_str::<&RawValue>(b).ok());
    let Some(whole) = whole else {
        prop_assert!(classified.watched.is_empty() && !classified.proxy);
        return Ok(());
    };
    let requests: Vec<&RawValue> = match whole.get().as_bytes().first() {
        Some(b'{') => vec![whole],
        Some(b'[') => serde_json::from_str(whole.get()).unwrap_or_default(),
        _ => vec![],
    };
    let mut expected = Expected::default();
    requests.iter().for_each(|r| expect_one(r, &mut expected));
    let got: Vec<(Value, ExpectedWatch)> = classified
        .watched
        .iter()
        .map(|(id, w)| {
            let w = match w {
                Watched::Call { call, task } => ExpectedWatch::Call {
                    name: call.name.clone(),
                    arguments: call
                        .arguments
                        .as_deref()
                        .and_then(|a| std::str::from_utf8(a).ok())
                        .and_then(canon),
                    task: *task,
                },
                Watched::TaskResult(task) => ExpectedWatch::TaskResult(task.clone()),
            };
            (id.clone(), w)
        })
        .collect();
    prop_assert_eq!(&got, &expected.watched, "watched requests");
    prop_assert_eq!(classified.proxy, expected.proxy, "proxy flag");
    Ok(())
}

/// The result `read_reply` should find in one message, with the id it
/// answers. Not an object, a repeated member, an id `serde_json` refuses,
/// a `method`: not one JSON-RPC response, no result.
fn expect_reply(m: &RawValue) -> Option<(Value, Json)> {
    let m = readable_struct(m, &["id", "method", "result"])?;
    let id = id_of(&m).ok()??;
    if present(&m, "method").is_some() {
        return None;
    }
    let result = present(&m, "result")?;
    Some((id, canon(result.get())?))
}

/// `find_results` and `read_reply`: ranges inside the body, on character
/// boundaries, each one JSON value; agreeing with the model where it can
/// tell.
fn check_find_results(body: &str) -> Result<(), TestCaseError> {
    let found = find_results(body);
    let mut results = Vec::new();
    for f in &found {
        if let Found::Result { id, range, .. } = f {
            prop_assert!(
                range.start <= range.end && range.end <= body.len(),
                "{:?}",
                range
            );
            prop_assert!(body.is_char_boundary(range.start) && body.is_char_boundary(range.end));
            let raw = &body[range.clone()];
            let t = canon(raw);
            prop_assert!(t.is_some(), "result range not JSON: {:.200}", raw);
            results.push((id.clone(), t.unwrap_or(Json::Lit(String::new()))));
        }
    }
    let reply = read_reply(body);
    if let Reply::Result { result, .. } = &reply {
        prop_assert!(canon(result.get()).is_some());
    }
    // The model, on bodies that are JSON.
    let Ok(whole) = serde_json::from_str::<&RawValue>(body) else {
        return Ok(());
    };
    let messages: Vec<&RawValue> =
        if whole.get().starts_with('[') && body.trim_start().starts_with('[') {
            serde_json::from_str(whole.get()).unwrap_or_default()
        } else {
            vec![whole]
        };
    let expected: Vec<(Value, Json)> = messages.into_iter().filter_map(expect_reply).collect();
    prop_assert_eq!(results, expected, "results found");
    Ok(())
}

proptest! {
    #![proptest_config(config(1))]

    #[test]
    fn fuzz_classify_bytes(body in prop::collection::vec(any::<u8>(), 0..512)) {
        timed(|| check_classify(&body))?;
    }

    #[test]
    fn fuzz_classify_requests(body in request_body()) {
        timed(|| check_classify(&body))?;
    }

    #[test]
    fn fuzz_find_results(body in response_body()) {
        timed(|| check_find_results(&body))?;
    }
}

// ---------------------------------------------------------------------------
// Regressions: inputs the fuzzing found, kept literally
// ---------------------------------------------------------------------------

/// Found by `fuzz_classify_requests`: a member the layer does not read,
/// whose key is a lone surrogate escape, makes the whole `tools/call`
/// unreadable, so its result is never evaluated.
#[test]
fn regression_a_lone_surrogate_key_does_not_hide_a_tools_call() {
    let body = br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"fuzz_tool"},"\ud800":null}"#;
    let c = classify(&Bytes::from_static(body));
    assert_eq!(c.watched.len(), 1, "{c:?}");
    let body =
        br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"t","x\udfff":1}}"#;
    assert_eq!(classify(&Bytes::from_static(body)).watched.len(), 1);
    let reply = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"\ud800":0}"#;
    assert!(matches!(read_reply(reply), Reply::Result { .. }));
}

/// Found by `fuzz_find_results`: an array inside a batch is read as a
/// message, its elements taken as `id`, `method`, `result` in order
/// (`[[true,null,true]]` was a result for id `true`); requests and the
/// client information alike.
#[test]
fn regression_arrays_are_not_messages() {
    assert!(find_results("[[true,null,true]]").is_empty());
    assert!(find_results(r#"[[7,null,{"content":[]}]]"#).is_empty());
    let batch = br#"[[7,"tools/call",{"name":"t"}]]"#;
    assert!(classify(&Bytes::from_static(batch)).watched.is_empty());
    let positional_flag = br#"{"id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":[true]}}}"#;
    assert!(!classify(&Bytes::from_static(positional_flag)).proxy);
    let positional_meta =
        br#"{"id":1,"method":"initialize","params":{"clientInfo":[true],"x":"\n"}}"#;
    assert!(!classify(&Bytes::from_static(positional_meta)).proxy);
}

/// Found by `fuzz_classify_requests` (2,000 cases): keys are read without
/// checks (so a lone surrogate does not hide a request), and so a raw line
/// break inside a key, which JSON forbids, was read too: a body that is not
/// JSON was classified as a `tasks/result`.
#[test]
fn regression_a_raw_control_character_in_a_key_is_not_json() {
    let body = b"{\"id\":0,\"method\":\"tasks/result\",\"\nparams\":{},\"jsonrpc\":\"2.0\"}";
    assert!(classify(&Bytes::from_static(body)).watched.is_empty());
    // Escaped, it is JSON: read, as before.
    let body = br#"{"id":0,"method":"tasks/result","\nparams":{},"jsonrpc":"2.0"}"#;
    assert_eq!(classify(&Bytes::from_static(body)).watched.len(), 1);
    let reply = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"\tx\":0}";
    assert!(!matches!(read_reply(reply), Reply::Result { .. }));
}
