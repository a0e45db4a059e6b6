//! `OffloadLayer` around a hand-written tower service on plain hyper 1 +
//! hyper-util: no axum, no rmcp on the server side.
//!
//! ```text
//! cargo run --example hyper_service            # self-demo, then exit
//! cargo run --example hyper_service -- --serve # keep serving
//! ```
//!
//! `McpHandler` answers MCP JSON-RPC itself, in the streamable-http
//! transport's stateless JSON mode: `initialize`, `ping`, `tools/list`, and
//! `tools/call` for two tools, `ping` (small) and `rows` (`count` log rows as
//! one JSON text block, 250 by default: large). Notifications get `202`;
//! `GET` and `DELETE` get `405` (no server-initiated stream, no sessions).
//! The self-demo calls both tools with an rmcp client.

#[path = "support/demo_client.rs"]
mod demo_client;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tower::{Service, ServiceBuilder};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

/// Largest request body the handler reads.
const MAX_REQUEST: usize = 1 << 20;
const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// A minimal MCP server as a tower service.
#[derive(Clone, Debug, Default)]
struct McpHandler;

impl<B> Service<Request<B>> for McpHandler
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        Box::pin(async move {
            if req.method() != Method::POST {
                let mut resp = reply(StatusCode::METHOD_NOT_ALLOWED, Bytes::new());
                resp.headers_mut()
                    .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
                return Ok(resp);
            }
            let body = match Limited::new(req.into_body(), MAX_REQUEST).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    return Ok(reply(StatusCode::BAD_REQUEST, Bytes::from(e.to_string())));
                }
            };
            let msg: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => {
                    let err = rpc_error(Value::Null, -32700, &format!("parse error: {e}"));
                    return Ok(json_reply(&err));
                }
            };
            let Some(id) = msg.get("id").cloned() else {
                // A notification or a client response: accepted, no body.
                return Ok(reply(StatusCode::ACCEPTED, Bytes::new()));
            };
            let method = msg["method"].as_str().unwrap_or_default();
            let answer = match answer(method, &msg["params"]) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => rpc_error(id, code, &message),
            };
            Ok(json_reply(&answer))
        })
    }
}

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp
}

fn json_reply(v: &Value) -> Response<Full<Bytes>> {
    let mut resp = reply(StatusCode::OK, Bytes::from(v.to_string()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The result of one request, or a JSON-RPC error code and message.
fn answer(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = if VERSIONS.contains(&asked) {
                asked
            } else {
                "2025-06-18"
            };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hyper-service-demo", "version": env!("CARGO_PKG_VERSION")}
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": [
            {"name": "ping", "description": "Answers pong",
             "inputSchema": {"type": "object", "properties": {}}},
            {"name": "rows", "description": "Recent log rows",
             "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}
        ]})),
        "tools/call" => match params["name"].as_str() {
            Some("ping") => Ok(json!({"content": [{"type": "text", "text": "pong"}]})),
            Some("rows") => {
                let count = params["arguments"]["count"]
                    .as_u64()
                    .unwrap_or(250)
                    .min(100_000);
                Ok(json!({"content": [{"type": "text", "text": rows(count).to_string()}]}))
            }
            Some(other) => Ok(json!({
                "content": [{"type": "text", "text": format!("unknown tool: {other}")}],
                "isError": true
            })),
            None => Err((-32602, "tools/call needs a tool name".to_owned())),
        },
        other => Err((-32601, format!("method not found: {other}"))),
    }
}

/// Deterministic log rows.
fn rows(count: u64) -> Value {
    const LEVELS: [&str; 4] = ["info", "info", "warn", "error"];
    const SERVICES: [&str; 3] = ["api", "worker", "billing"];
    (0..count)
        .map(|i| {
            json!({
                "id": format!("row-{i:05}"),
                "timestamp": format!("2026-03-{:02}T{:02}:{:02}:00Z", i % 28 + 1, i % 24, i % 60),
                "level": LEVELS[(i % 4) as usize],
                "service": SERVICES[(i % 3) as usize],
                "latency_ms": (i * 37) % 500,
                "message": format!("request {i} handled by {} after a cache lookup", SERVICES[(i % 3) as usize]),
            })
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output_dir = demo_client::output_dir("hyper_service");
    let service = ServiceBuilder::new()
        .layer(OffloadLayer::new(
            OffloadConfig::default()
                .threshold_tokens(1600)
                .output_dir(&output_dir),
        ))
        .service(McpHandler);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!(
        "hyper MCP service on http://{addr}/mcp (files in {})",
        output_dir.display()
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            };
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });

    demo_client::demo(
        &format!("http://{addr}/mcp"),
        ("ping", json!({})),
        ("rows", json!({"count": 250})),
    )
    .await?;

    if demo_client::serve_forever() {
        println!("Serving on http://{addr}/mcp — Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
