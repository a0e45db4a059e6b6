//! A real MCP server (rmcp's streamable-http service with the memory tools)
//! on loopback, and raw HTTP helpers to talk to it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tower::{Layer, Service};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{OffloadLayer, OffloadService};

#[path = "../../examples/support/memory_server.rs"]
pub(crate) mod memory_server;

#[allow(unused_imports)]
pub(crate) use memory_server::{MemoryServer, memories};

/// How the rmcp server answers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// Sessions, SSE responses.
    StatefulSse,
    /// No sessions, JSON responses.
    StatelessJson,
    /// No sessions, SSE responses.
    StatelessSse,
}

/// rmcp's streamable-http service for [`MemoryServer`] in `mode`.
pub(crate) fn mcp_service(mode: Mode) -> StreamableHttpService<MemoryServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(matches!(mode, Mode::StatefulSse))
        .with_json_response(matches!(mode, Mode::StatelessJson));
    StreamableHttpService::new(
        || Ok(MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves the memory server in `mode` twice on 127.0.0.1: behind an
/// `OffloadLayer` writing into `dir`, and without it. Returns (with, without).
pub(crate) async fn serve_with_and_without(
    mode: Mode,
    dir: &std::path::Path,
) -> (SocketAddr, SocketAddr) {
    serve_pair(
        mode,
        OffloadLayer::new(OffloadConfig::default().output_dir(dir)),
    )
    .await
}

/// Serves the memory server in `mode` twice on 127.0.0.1: behind `layer`,
/// and without it. Returns (with, without).
pub(crate) async fn serve_pair(mode: Mode, layer: OffloadLayer) -> (SocketAddr, SocketAddr) {
    (
        serve_mcp(mcp_service(mode), Some(layer)).await,
        serve_mcp(mcp_service(mode), None).await,
    )
}

/// Serves `service` at `/mcp` on 127.0.0.1 (a free port) in the background,
/// wrapped in `layer` when there is one: the layer sees the service's own
/// body types, as in a `tower::ServiceBuilder` stack.
pub(crate) async fn serve_mcp<S>(service: S, layer: Option<OffloadLayer>) -> SocketAddr
where
    S: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse + 'static,
    S::Future: Send + 'static,
    OffloadService<S>: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    <OffloadService<S> as Service<Request>>::Response: IntoResponse + 'static,
    <OffloadService<S> as Service<Request>>::Future: Send + 'static,
{
    let app = match layer {
        Some(layer) => Router::new().route_service("/mcp", layer.layer(service)),
        None => Router::new().route_service("/mcp", service),
    };
    serve(app).await
}

/// Serves `app` on 127.0.0.1 (a free port) in the background.
pub(crate) async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// A `tools/call` request.
pub(crate) fn tools_call(id: u64, tool: &str, args: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// One `tools/call` of `tool` by rmcp's client over streamable HTTP at `url`
/// (a fresh session, `version` or the client's default protocol version);
/// fails the test if it does not succeed within 30 s.
/// (It lists the tools first, as agents do.)
pub(crate) async fn rmcp_call(
    url: &str,
    version: Option<ProtocolVersion>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    let mut info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("lro-test", "1.0"),
    );
    if let Some(version) = version {
        info = info.with_protocol_version(version);
    }
    let client = info
        .serve(transport)
        .await
        .unwrap_or_else(|e| panic!("rmcp client connects to {url}: {e}"));
    // As agents do: the tools first (the layer learns their output schemas).
    let _ = client.list_all_tools().await;
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result = tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("tool call in time")
        .expect("tool call succeeds");
    let _ = client.cancel().await;
    result
}

/// POSTs `body` to `http://{addr}/mcp` as an MCP client would.
pub(crate) async fn post(
    addr: SocketAddr,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    post_with(&reqwest::Client::new(), addr, body, headers).await
}

/// [`post`] with a given client (to share its connection pool).
pub(crate) async fn post_with(
    client: &reqwest::Client,
    addr: SocketAddr,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    post_to(client, &format!("http://{addr}/mcp"), body, headers).await
}

/// POSTs `body` to `url` as an MCP client would.
pub(crate) async fn post_to(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("request sent")
}

/// The JSON messages of an SSE body.
pub(crate) fn sse_messages(body: &str) -> Vec<Value> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|ev| {
            let data: Vec<&str> = ev
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .filter_map(|d| serde_json::from_str(&d).ok())
        .collect()
}

/// The JSON-RPC message answering `id` in a JSON or SSE response body.
pub(crate) fn response_message(body: &str, id: u64) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return (v["id"] == id).then_some(v);
    }
    sse_messages(body).into_iter().find(|m| m["id"] == id)
}

/// Reads an SSE response to its end (20 s at most per chunk); returns the
/// text and when, after `start`, the first progress notification and the
/// offloaded result arrived. Asserts the progress came at least 1 s before
/// the result (the tools wait 1.5 s between them).
pub(crate) async fn progress_then_result(
    resp: &mut reqwest::Response,
    start: std::time::Instant,
) -> String {
    let mut text = String::new();
    let mut progress_at = None;
    let mut result_at = None;
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), resp.chunk())
        .await
        .expect("next chunk in time")
        .expect("body readable")
    {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        if progress_at.is_none() && text.contains("notifications/progress") {
            progress_at = Some(start.elapsed());
        }
        if result_at.is_none() && text.contains(r#"\"offloaded\":true"#) {
            result_at = Some(start.elapsed());
        }
    }
    let (p, r) = (
        progress_at.expect("progress seen"),
        result_at.expect("offloaded result seen"),
    );
    assert!(
        r >= p + Duration::from_millis(1000),
        "progress at {p:?}, result at {r:?}: progress was held back"
    );
    text
}
