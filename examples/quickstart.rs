//! The whole LRO loop in one command:
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Starts an rmcp MCP server with a `recall_memories` tool (200 generated
//! full-detail memories, about 40,000 tokens) behind `OffloadLayer` on
//! loopback, calls it with an rmcp client, prints the descriptor the client
//! receives, then runs one of its jq recipes on the offloaded file.
//! Pass `--serve` to keep the server running for your own MCP client.

#[path = "support/memory_server.rs"]
mod memory_server;

use std::sync::Arc;

use axum::Router;
use memory_server::MemoryServer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tower::ServiceBuilder;
use tower_lro::{OffloadLayer, OffloadResponse};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve_forever = std::env::args().any(|a| a == "--serve");
    let output_dir = std::env::temp_dir().join("tower-lro-quickstart");

    // 1. An MCP server (rmcp's streamable-http service) behind the layer.
    let mcp = StreamableHttpService::new(
        || Ok(MemoryServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    // The layer also runs the spec's offload_cleanup task (expired files go
    // every hour) from its first request until it is dropped.
    let layer = OffloadLayer::builder()
        .threshold_tokens(1600)
        .output_dir(&output_dir)
        .build();
    let app = Router::new().route_service("/mcp", ServiceBuilder::new().layer(layer).service(mcp));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    println!(
        "MCP server with OffloadLayer on http://{addr}/mcp (files in {})\n",
        output_dir.display()
    );

    // 2. A client calls recall_memories.
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("quickstart", "0.1"),
    )
    .serve(transport)
    .await?;
    let args = json!({"query": "cache design", "count": 200, "detail": "full"});
    let result = client
        .call_tool(
            CallToolRequestParams::new("recall_memories")
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await?;
    let _ = client.cancel().await;

    // 3. What the model sees instead of ~40,000 tokens.
    let value = serde_json::to_value(&result)?;
    let text = value["content"][0]["text"]
        .as_str()
        .ok_or("no text block")?;
    let descriptor: OffloadResponse = serde_json::from_str(text)?;
    println!(
        "The client received {} characters instead of the full result:\n",
        text.len()
    );
    println!("{}\n", serde_json::to_string_pretty(&descriptor)?);

    // 4. The agent runs one recipe on the file.
    let recipe = &descriptor.jq_recipes[5];
    println!("$ {}   # recipe 6: {}", recipe.command, recipe.description);
    match std::process::Command::new("sh")
        .arg("-c")
        .arg(&recipe.command)
        .output()
    {
        Ok(out) if out.status.success() => println!("{}", String::from_utf8_lossy(&out.stdout)),
        Ok(out) => println!("(jq failed: {})", String::from_utf8_lossy(&out.stderr)),
        Err(e) => println!("(could not run the recipe: {e}; install jq)"),
    }

    if serve_forever {
        println!("Serving on http://{addr}/mcp — Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
