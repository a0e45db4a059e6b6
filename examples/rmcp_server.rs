//! rmcp's `StreamableHttpService` wrapped with
//! `ServiceBuilder::new().layer(OffloadLayer)` and served by hyper directly,
//! without a router.
//!
//! ```text
//! cargo run --example rmcp_server            # self-demo, then exit
//! cargo run --example rmcp_server -- --serve # keep serving
//! ```
//!
//! The layered service is a plain tower service; hyper-util's
//! `TowerToHyperService` turns it into a hyper service for each connection.
//! With no router, every path is the MCP endpoint. The self-demo calls a
//! small tool (`status`) and a large one (`recall_memories`, 200 memories)
//! with an rmcp client.

#[path = "support/demo_client.rs"]
mod demo_client;
#[path = "support/memory_server.rs"]
mod memory_server;

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use memory_server::MemoryServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output_dir = demo_client::output_dir("rmcp_server");
    let service = ServiceBuilder::new()
        .layer(OffloadLayer::new(
            OffloadConfig::default()
                .threshold_tokens(1600)
                .output_dir(&output_dir),
        ))
        .service(StreamableHttpService::new(
            || Ok(MemoryServer),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        ));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!(
        "rmcp service on http://{addr}/mcp (files in {})",
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
        ("status", json!({})),
        ("recall_memories", json!({"query": "cache", "count": 200})),
    )
    .await?;

    if demo_client::serve_forever() {
        println!("Serving on http://{addr}/mcp — Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
