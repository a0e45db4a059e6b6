//! A client whose shipped profile lists the layer's tools only once
//! something was offloaded (Gemini CLI's `gemini-cli-mcp-client`), through
//! `lro gateway` to the Python SDK server answering JSON: the offloaded
//! answer comes as an event stream, `notifications/tools/list_changed`
//! first; a client that accepts only JSON is listed the tools at once.

use serde_json::{Value, json};

use super::common;
use super::gateway::{http, stack_with};
use common::mcp::{sse_messages, tools_call};

/// POSTs `body` with this `Accept` header (only), and a session when given.
async fn post_to(
    url: &str,
    body: &Value,
    accept: &str,
    session: Option<&str>,
) -> reqwest::Response {
    let mut req = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    if let Some(session) = session {
        req = req.header("mcp-session-id", session);
    }
    req.send().await.unwrap()
}

/// Initializes a session as `client`, accepting `accept`; returns the
/// session id and the `initialize` result.
async fn initialize_as(url: &str, client: &str, accept: &str) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}});
    let resp = post_to(url, &init, accept, None).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = resp.text().await.unwrap();
    let result = messages(&body).remove(0)["result"].clone();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let status = post_to(url, &note, accept, Some(&session)).await.status();
    assert_eq!(status, 202);
    (session, result)
}

/// The JSON-RPC messages of a JSON or event-stream body.
fn messages(body: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => vec![v],
        Err(_) => sse_messages(body),
    }
}

/// Sends `message` in `session`; returns the answer's media type and its
/// messages.
async fn send(url: &str, session: &str, accept: &str, message: &Value) -> (String, Vec<Value>) {
    let resp = post_to(url, message, accept, Some(session)).await;
    assert_eq!(resp.status(), 200);
    let media = resp.headers()["content-type"].to_str().unwrap().to_owned();
    (media, messages(&resp.text().await.unwrap()))
}

/// The names of the layer's tools in the session's `tools/list`.
async fn lro_tools(url: &str, session: &str, accept: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (_, answer) = send(url, session, accept, &list).await;
    let tools = answer[0]["result"]["tools"].as_array().unwrap().clone();
    tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("lro_"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_is_told_of_the_tools_before_its_first_offloaded_result() {
    let Some(s) = stack_with(&["--json"]) else {
        return;
    };
    let both = "application/json, text/event-stream";
    let (session, init) = initialize_as(&s.gateway, "gemini-cli-mcp-client", both).await;
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");
    assert!(lro_tools(&s.gateway, &session, both).await.is_empty());

    // A small result: JSON, as the server sent it.
    let small = tools_call(2, "records_text", json!({"count": 3}), None);
    let (media, answer) = send(&s.gateway, &session, both, &small).await;
    assert_eq!(media, "application/json");
    assert_eq!(answer.len(), 1);

    let large = tools_call(3, "records_text", json!({"count": 2000}), None);
    let (media, answer) = send(&s.gateway, &session, both, &large).await;
    assert_eq!(media, "text/event-stream");
    assert_eq!(answer.len(), 2, "{answer:?}");
    assert_eq!(answer[0]["method"], "notifications/tools/list_changed");
    assert_eq!(answer[1]["id"], 3);
    let d = common::descriptor(&answer[1]["result"]);
    assert!(d.guidance.contains("lro_extract("), "{}", d.guidance);
    assert_eq!(
        lro_tools(&s.gateway, &session, both).await,
        ["lro_extract", "lro_list"]
    );
    // The file reads back through the tool now listed.
    let extract = tools_call(
        4,
        "lro_extract",
        json!({"file_path": d.file_path, "query": "select(.category == \"alpha\") | .id", "limit": 2}),
        None,
    );
    let (_, answer) = send(&s.gateway, &session, both, &extract).await;
    let text = answer[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("rec_0000"), "{text:.400}");
    // Told once: the next offload is JSON again.
    let again = tools_call(5, "records_text", json!({"count": 2000}), None);
    let (media, answer) = send(&s.gateway, &session, both, &again).await;
    assert_eq!(media, "application/json");
    assert!(common::try_descriptor(&answer[0]["result"]).is_some());

    // Accepting JSON only, it cannot be told: listed from the start.
    let json_only = "application/json";
    let (session, init) = initialize_as(&s.gateway, "gemini-cli-mcp-client", json_only).await;
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        lro_tools(&s.gateway, &session, json_only).await,
        ["lro_extract", "lro_list"]
    );
}
