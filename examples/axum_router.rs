//! `OffloadLayer` on one route of an existing axum app.
//!
//! ```text
//! cargo run --example axum_router            # self-demo, then exit
//! cargo run --example axum_router -- --serve # keep serving
//! ```
//!
//! The app has its own routes (`/health`, `/api/version`) and an MCP
//! endpoint at `/mcp` (rmcp's `StreamableHttpService` with the memory
//! tools). Only `/mcp` goes through the layer; the other routes never see it.
//! The self-demo calls `GET /health`, then a small tool (`status`) and a
//! large one (`recall_memories`, 200 memories) with an rmcp client.

#[path = "support/demo_client.rs"]
mod demo_client;
#[path = "support/memory_server.rs"]
mod memory_server;

use std::sync::Arc;

use axum::{Json, Router, routing::get};
use memory_server::MemoryServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

async fn version() -> Json<Value> {
    Json(json!({"name": "my-app", "version": env!("CARGO_PKG_VERSION")}))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output_dir = demo_client::output_dir("axum_router");
    let mcp = StreamableHttpService::new(
        || Ok(MemoryServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let offload = OffloadLayer::new(
        OffloadConfig::default()
            .threshold_tokens(1600)
            .output_dir(&output_dir),
    );
    // The layer wraps the MCP service only; the rest of the app is untouched.
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/api/version", get(version))
        .route_service("/mcp", ServiceBuilder::new().layer(offload).service(mcp));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    println!(
        "axum app on http://{addr} (MCP at /mcp, files in {})",
        output_dir.display()
    );

    let health = reqwest::get(format!("http://{addr}/health")).await?;
    println!(
        "GET /health -> {} {}",
        health.status().as_u16(),
        health.text().await?
    );
    demo_client::demo(
        &format!("http://{addr}/mcp"),
        ("status", json!({})),
        ("recall_memories", json!({"query": "cache", "count": 200})),
    )
    .await?;

    if demo_client::serve_forever() {
        println!("Serving on http://{addr} — Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
