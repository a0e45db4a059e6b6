//! The MCP conformance server (see `examples/support/conformance_server.rs`)
//! on loopback, optionally behind the offload layer, for running the MCP
//! conformance suite by hand:
//!
//! ```sh
//! cargo run --example conformance_server -- --port 3001 --offload
//! tests/interop/node_modules/.bin/node \
//!   tests/interop/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!   server --url http://127.0.0.1:3001/mcp --suite all
//! ```
//!
//! Options: `--port N` (default 3001), `--offload` (put the layer in front,
//! default threshold), `--threshold N` (with `--offload`: offload results
//! over N tokens), `--json` (stateless JSON responses instead of SSE
//! sessions). `tests/sdks/conformance.rs` runs the suite the same way in-process.

#[path = "support/conformance_server.rs"]
mod conformance_server;

use std::sync::Arc;

use axum::Router;
use conformance_server::ConformanceServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let port: u16 = value("--port").map_or(Ok(3001), |p| p.parse())?;
    let json = args.iter().any(|a| a == "--json");
    let offload = args.iter().any(|a| a == "--offload");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!json)
        .with_json_response(json);
    let mcp = StreamableHttpService::new(
        move || {
            Ok(if json {
                ConformanceServer::stateless()
            } else {
                ConformanceServer::new()
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = if offload {
        let mut config = OffloadConfig::default();
        if let Some(t) = value("--threshold") {
            config = config.threshold_tokens(t.parse()?);
        }
        Router::new().route_service(
            "/mcp",
            ServiceBuilder::new()
                .layer(OffloadLayer::new(config))
                .service(mcp),
        )
    } else {
        Router::new().route_service("/mcp", mcp)
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "conformance server on http://{}/mcp ({}, {})",
        listener.local_addr()?,
        if json {
            "JSON stateless"
        } else {
            "SSE sessions"
        },
        if offload {
            "behind the offload layer"
        } else {
            "no layer"
        }
    );
    axum::serve(listener, app).await?;
    Ok(())
}
