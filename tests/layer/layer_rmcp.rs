//! The layer in front of a real rmcp server, driven by a real rmcp client
//! and by raw HTTP, over loopback.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::mcp::{
    Mode, memories, post, rmcp_call, serve_pair, serve_with_and_without, sse_messages, tools_call,
};
use common::{check_recipe6, checked_descriptor, descriptor, require_jq};
use rmcp::model::{CallToolResult, ProtocolVersion};
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::memory_tool_result;
use tower_lro::offload::{OffloadLayer, rebuild_file};

/// One rmcp client call to the server at `addr`, speaking `version`.
async fn call(
    addr: SocketAddr,
    version: ProtocolVersion,
    tool: &str,
    args: Value,
) -> CallToolResult {
    rmcp_call(&format!("http://{addr}/mcp"), Some(version), tool, args).await
}

/// The checks every large result must pass: descriptor, file, jq, rebuild.
fn check_large(result: &CallToolResult, original: &CallToolResult, count: usize) {
    require_jq();
    let d = checked_descriptor(result, "layer");
    assert_eq!(d.summary.count, count);
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(count, Detail::Full),
        "layer",
    );
    let rebuilt: CallToolResult =
        serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(
        &rebuilt, original,
        "rebuilt result equals what the server sent"
    );
    // The descriptor first in structuredContent, then the emptied array.
    let mut structured = result.structured_content.clone().unwrap();
    let beside = structured
        .as_object_mut()
        .unwrap()
        .shift_remove("offloaded");
    assert_eq!(structured, json!({"count": count, "memories": []}));
    assert_eq!(beside.unwrap()["file_path"], json!(d.file_path));
}

async fn scenario(mode: Mode, version: ProtocolVersion) {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(mode, dir.path()).await;
    let small = call(with, version.clone(), "status", json!({})).await;
    let small_plain = call(without, version.clone(), "status", json!({})).await;
    assert_eq!(small, small_plain);
    let args = json!({"query": "cache", "count": 200});
    let large = call(with, version.clone(), "recall_memories", args.clone()).await;
    let original = call(without, version.clone(), "recall_memories", args).await;
    assert_eq!(
        original.structured_content.as_ref().unwrap()["memories"]
            .as_array()
            .unwrap()
            .len(),
        200
    );
    check_large(&large, &original, 200);
    let d = descriptor(&large);
    assert_eq!(d.summary.operation, "recall");
    assert_eq!(
        d.summary.detail,
        tower_lro::descriptor::Detail::Full,
        "the records' level (full memories), not the tool's default (light)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_sse_mode() {
    scenario(Mode::StatefulSse, ProtocolVersion::V_2025_06_18).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_json_mode() {
    scenario(Mode::StatelessJson, ProtocolVersion::V_2025_06_18).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2026_07_28() {
    scenario(Mode::StatelessSse, ProtocolVersion::V_2026_07_28).await;
    scenario(Mode::StatelessJson, ProtocolVersion::V_2026_07_28).await;
}

// ---- raw HTTP -------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_json_responses_are_byte_identical_and_content_length_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(Mode::StatelessJson, dir.path()).await;
    let body = tools_call(1, "status", json!({}), None);
    let a = post(with, &body, &[]).await;
    let b = post(without, &body, &[]).await;
    assert_eq!(a.status(), b.status());
    assert_eq!(a.bytes().await.unwrap(), b.bytes().await.unwrap());
    // Large: Content-Length matches the rewritten body.
    let large = post(
        with,
        &tools_call(2, "recall_memories", json!({"count": 300}), None),
        &[],
    )
    .await;
    let declared: Option<usize> = large.content_length().map(|n| n as usize);
    let bytes = large.bytes().await.unwrap();
    if let Some(n) = declared {
        assert_eq!(n, bytes.len());
    }
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 2);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"offloaded\":true")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_header_and_client_info_get_untouched_results() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(Mode::StatelessJson, dir.path()).await;
    let body = tools_call(5, "recall_memories", json!({"count": 200}), None);
    let plain = post(without, &body, &[]).await.bytes().await.unwrap();
    for value in ["1", "true", "TRUE"] {
        let proxied = post(with, &body, &[("lro-proxy", value)])
            .await
            .bytes()
            .await
            .unwrap();
        assert_eq!(proxied, plain, "lro-proxy: {value}");
    }
    let not_proxy = post(with, &body, &[("lro-proxy", "0")])
        .await
        .bytes()
        .await
        .unwrap();
    assert_ne!(not_proxy, plain);
    // 2026-07-28: clientInfo in _meta.
    let meta = json!({"io.modelcontextprotocol/clientInfo": {"name": "lro-proxy", "version": "1", "proxy": true}});
    let body = tools_call(5, "recall_memories", json!({"count": 200}), Some(meta));
    let plain = post(without, &body, &[]).await.bytes().await.unwrap();
    let proxied = post(with, &body, &[]).await.bytes().await.unwrap();
    assert_eq!(proxied, plain);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the non-proxy call wrote a file"
    );
}

/// Initializes a session by hand; returns the session id.
async fn initialize(addr: SocketAddr, proxy: bool) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1", "proxy": proxy}}});
    let resp = post(addr, &init, &[]).await;
    let session = resp
        .headers()
        .get("mcp-session-id")
        .expect("session id")
        .to_str()
        .unwrap()
        .to_owned();
    let _ = resp.bytes().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(addr, &note, &[("mcp-session-id", &session)]).await;
    assert!(r.status().is_success());
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_with_client_info_proxy_marks_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (with, _) = serve_with_and_without(Mode::StatefulSse, dir.path()).await;
    let proxy_session = initialize(with, true).await;
    let normal_session = initialize(with, false).await;
    let body = tools_call(9, "recall_memories", json!({"count": 200}), None);
    let proxied = post(with, &body, &[("mcp-session-id", &proxy_session)])
        .await
        .text()
        .await
        .unwrap();
    let msgs = sse_messages(&proxied);
    let result = msgs.iter().find(|m| m["id"] == 9).expect("result");
    assert_eq!(
        result["result"]["structuredContent"]["memories"]
            .as_array()
            .unwrap()
            .len(),
        200
    );
    let normal = post(with, &body, &[("mcp-session-id", &normal_session)])
        .await
        .text()
        .await
        .unwrap();
    let msgs = sse_messages(&normal);
    let result = msgs.iter().find(|m| m["id"] == 9).expect("result");
    assert_eq!(result["result"]["structuredContent"]["memories"], json!([]));
    // DELETE ends the session on both sides.
    let r = reqwest::Client::new()
        .delete(format!("http://{with}/mcp"))
        .header("mcp-session-id", &proxy_session)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success() || r.status().as_u16() == 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_ending_get_stream_flows_through() {
    let dir = tempfile::tempdir().unwrap();
    let (with, _) = serve_with_and_without(Mode::StatefulSse, dir.path()).await;
    let session = initialize(with, false).await;
    let mut resp = reqwest::Client::new()
        .get(format!("http://{with}/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let first = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
        .await
        .expect("first event in time");
    assert!(!first.unwrap().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_client_before_the_large_result() {
    let dir = tempfile::tempdir().unwrap();
    let (with, _) = serve_with_and_without(Mode::StatelessSse, dir.path()).await;
    let body = tools_call(
        3,
        "slow_recall",
        json!({"count": 200}),
        Some(json!({"progressToken": "p1"})),
    );
    let mut resp = post(with, &body, &[]).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let start = Instant::now();
    let text = common::mcp::progress_then_result(&mut resp, start).await;
    let msgs = sse_messages(&text);
    assert_eq!(
        msgs.iter()
            .filter(|m| m["method"] == "notifications/progress")
            .count(),
        2
    );
    let result = msgs.iter().find(|m| m["id"] == 3).unwrap();
    let original: CallToolResult =
        serde_json::from_value(memory_tool_result(&memories(200, Detail::Full))).unwrap();
    let rewritten: CallToolResult = serde_json::from_value(result["result"].clone()).unwrap();
    check_large(&rewritten, &original, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_stay_beside_the_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(Mode::StatelessJson, dir.path()).await;
    let v = ProtocolVersion::V_2025_06_18;
    let r = call(with, v.clone(), "chart", json!({})).await;
    let o = call(without, v, "chart", json!({})).await;
    let rv = serde_json::to_value(&r).unwrap();
    let ov = serde_json::to_value(&o).unwrap();
    // The image where it was, then the descriptor where the data stood and
    // the link to the file (2025-06-18 knows resource links).
    assert_eq!(rv["content"].as_array().unwrap().len(), 3);
    assert_eq!(
        rv["content"][0], ov["content"][0],
        "image block intact, in place"
    );
    let d = descriptor(&r);
    assert_eq!(d.summary.count, 600);
    let text = rv["content"][1]["text"].as_str().unwrap_or_default();
    assert!(text.contains("\"offloaded\":true"), "the descriptor second");
    let name = std::path::Path::new(&d.file_path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(rv["content"][2]["type"], "resource_link");
    assert_eq!(
        rv["content"][2]["uri"],
        tower_lro::store::resource_uri(name)
    );
    let rebuilt: CallToolResult =
        serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(rebuilt, o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_layer_is_a_pure_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .enabled(false)
            .output_dir(dir.path()),
    );
    let (with, without) = serve_pair(Mode::StatelessJson, layer).await;
    let body = tools_call(1, "recall_memories", json!({"count": 300}), None);
    assert_eq!(
        post(with, &body, &[]).await.bytes().await.unwrap(),
        post(without, &body, &[]).await.bytes().await.unwrap()
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// With rmcp's client, after `tools/list`: whether the tool declares an
/// (open) `outputSchema` or none, its `structuredContent` carries the
/// descriptor beside the emptied record array (a client that shows
/// `structuredContent` to its model reads it there); the file rebuilds the
/// original exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_says_it_was_offloaded_after_tools_list() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(Mode::StatefulSse, dir.path()).await;
    let connect = |addr: SocketAddr| {
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lro-test", "1.0"),
        )
        .serve(transport)
    };
    let client = connect(with).await.unwrap();
    let plain = connect(without).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let declares = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.output_schema.is_some())
    };
    assert_eq!(declares("recall_memories"), Some(false));
    assert_eq!(declares("recall_structured"), Some(true));
    let args = json!({"query": "cache", "count": 200});
    for tool in ["recall_memories", "recall_structured"] {
        let params =
            CallToolRequestParams::new(tool).with_arguments(args.as_object().cloned().unwrap());
        let result =
            tokio::time::timeout(Duration::from_secs(30), client.call_tool(params.clone()))
                .await
                .unwrap()
                .unwrap();
        let original = plain.call_tool(params).await.unwrap();
        let d = checked_descriptor(&result, tool);
        let v = serde_json::to_value(&result).unwrap();
        // With or without a (schemars, open) output schema: the descriptor
        // beside the emptied array, never the array alone.
        let mut structured = v["structuredContent"].clone();
        let beside = structured.as_object_mut().unwrap().remove("offloaded");
        assert_eq!(structured, json!({"count": 200, "memories": []}), "{tool}");
        assert_eq!(beside.unwrap(), serde_json::to_value(&d).unwrap(), "{tool}");
        assert!(
            v.get("_meta")
                .is_none_or(|m| m.get("lro/offloaded").is_none())
        );
        assert_eq!(
            {
                let text = v.to_string();
                // Once in each part; the compact guidance names it too.
                text.matches("jq_recipes").count() - text.matches("jq_recipes above").count()
            },
            2,
            "{tool}"
        );
        let rebuilt: CallToolResult =
            serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
        assert_eq!(rebuilt, original, "{tool}: rebuilt");
    }
    let _ = client.cancel().await;
    let _ = plain.cancel().await;
}
