//! Output schemas and what the model is shown: a tool whose `outputSchema`
//! is closed (`additionalProperties: false`, as zod writes it) loses it in
//! `tools/list`, so its `structuredContent` can carry the descriptor; an
//! open one keeps it. With `open_output_schemas(false)` the schema stays
//! and such a tool's large structured result passes through whole, said in
//! an event: never an emptied list without the descriptor.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::post as on_post;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{EventHook, OffloadEvent, OffloadLayer, PassReason};

use crate::common;
use common::mcp::{post, response_message, serve, tools_call};

const ROWS: usize = 300;

fn rows_schema(closed: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}},
        "required": ["rows", "total"]
    });
    if closed {
        schema["additionalProperties"] = json!(false);
    }
    schema
}

/// A JSON-RPC handler: `tools/list` lists `closed_rows` and `open_rows`,
/// `tools/call` of either answers 300 rows in `structuredContent` with the
/// same JSON as text.
async fn handler(body: axum::body::Bytes) -> axum::response::Response {
    let req: Value = serde_json::from_slice(&body).unwrap();
    let id = req["id"].clone();
    let result = match req["method"].as_str() {
        Some("tools/list") => json!({"tools": [
            {"name": "closed_rows", "inputSchema": {"type": "object"}, "outputSchema": rows_schema(true)},
            {"name": "open_rows", "inputSchema": {"type": "object"}, "outputSchema": rows_schema(false)},
        ]}),
        _ => {
            let rows: Vec<Value> = (0..ROWS)
                .map(|i| json!({"id": i, "level": (["info", "warn"][i % 2]), "msg": format!("request {i} handled")}))
                .collect();
            let structured = json!({"rows": rows, "total": ROWS});
            json!({"content": [{"type": "text", "text": structured.to_string()}], "structuredContent": structured})
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

use axum::response::IntoResponse;

async fn listed_and_called(config: OffloadConfig) -> (Value, Value, Value, Vec<OffloadEvent>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let layer = OffloadLayer::builder()
        .config(config)
        .event_hook(EventHook::callback(move |e| {
            sink.lock().unwrap().push(e.clone())
        }))
        .build();
    let addr = serve(Router::new().route("/mcp", on_post(handler)).layer(layer)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let text = post(addr, &list, &[]).await.text().await.unwrap();
    let tools = response_message(&text, 1).unwrap()["result"]["tools"].clone();
    let mut results = Vec::new();
    for (id, tool) in [(2, "closed_rows"), (3, "open_rows")] {
        let text = post(addr, &tools_call(id, tool, json!({}), None), &[])
            .await
            .text()
            .await
            .unwrap();
        results.push(response_message(&text, id).unwrap()["result"].clone());
    }
    let events = seen.lock().unwrap().clone();
    (tools, results.remove(0), results.remove(0), events)
}

fn schema_of<'a>(tools: &'a Value, name: &str) -> Option<&'a Value> {
    tools
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)?
        .get("outputSchema")
}

/// The descriptor first in `structuredContent`, the rows emptied after it.
fn check_descriptor_first(result: &Value) {
    let structured = result["structuredContent"].as_object().unwrap();
    assert_eq!(
        structured.keys().next().map(String::as_str),
        Some("offloaded")
    );
    assert_eq!(structured["offloaded"]["summary"]["count"], ROWS);
    assert_eq!(structured["rows"], json!([]));
    assert_eq!(structured["total"], ROWS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_schemas_are_opened_and_the_descriptor_is_beside_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (tools, closed, open, _) =
        listed_and_called(OffloadConfig::default().output_dir(dir.path())).await;
    assert!(schema_of(&tools, "closed_rows").is_none(), "{tools}");
    assert_eq!(schema_of(&tools, "open_rows"), Some(&rows_schema(false)));
    check_descriptor_first(&closed);
    check_descriptor_first(&open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_closed_schemas_keep_their_results_whole() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default()
        .output_dir(dir.path())
        .open_output_schemas(false);
    let (tools, closed, open, events) = listed_and_called(config).await;
    assert_eq!(schema_of(&tools, "closed_rows"), Some(&rows_schema(true)));
    // Inline, whole: the schema allows no descriptor beside the rows.
    assert_eq!(
        closed["structuredContent"]["rows"].as_array().map(Vec::len),
        Some(ROWS)
    );
    assert!(common::try_descriptor(&closed).is_none());
    assert!(events.iter().any(|e| matches!(
        e,
        OffloadEvent::PassedThrough { tool: Some(t), reason: PassReason::StructuredSchemaClosed }
            if t == "closed_rows"
    )), "{events:?}");
    check_descriptor_first(&open);
}
