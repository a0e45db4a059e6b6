//! The whole LRO loop in one command:
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Starts an rmcp MCP server with a `recall_memories` tool (200 generated
//! full-detail memories, about 40,000 tokens) behind `OffloadLayer` on
//! loopback, calls it with an rmcp client, prints the descriptor the client
//! receives, then runs one of its jq recipes on the offloaded file, as an
//! agent with a shell does. Then it does what a remote, shell-less agent
//! does with the same descriptor: it asks the layer itself, over MCP, with
//! the `lro_extract` tool (a recipe with a parameter, then its own jq
//! filter, one page at a time).
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
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadResponse;
use tower_lro::offload::OffloadLayer;

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
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .threshold_tokens(1600)
            .output_dir(&output_dir),
    );
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

    // 5. A remote agent without a shell: the same questions over MCP. The
    //    layer answers lro_extract itself, a page that fits the threshold
    //    at a time, and says where the next page starts.
    let namespace = descriptor.summary.top_namespaces.first().cloned();
    let asks = [
        json!({"file_path": descriptor.file_path, "recipe": 1}),
        json!({"file_path": descriptor.file_path, "recipe": 2,
               "params": {"namespace": namespace}}),
        json!({"file_path": descriptor.file_path,
               "query": "select(.provenance.confidence > 0.9) | {id, title}",
               "limit": 5}),
    ];
    for ask in asks {
        println!("lro_extract({ask})");
        let answer = client
            .call_tool(
                CallToolRequestParams::new("lro_extract")
                    .with_arguments(ask.as_object().cloned().unwrap_or_default()),
            )
            .await?;
        print_answer(&serde_json::to_value(&answer)?);
    }
    let _ = client.cancel().await;

    if serve_forever {
        println!("Serving on http://{addr}/mcp — Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}

/// The first lines of an answer's page, and its trailer (where the next
/// page starts) when there is one.
fn print_answer(answer: &serde_json::Value) {
    let blocks = answer["content"].as_array().cloned().unwrap_or_default();
    let page = blocks
        .first()
        .and_then(|b| b["text"].as_str())
        .unwrap_or_default();
    let lines: Vec<&str> = page.lines().collect();
    for line in lines.iter().take(8) {
        println!("  {line}");
    }
    if lines.len() > 8 {
        println!("  ... ({} lines in this page)", lines.len());
    }
    if let Some(trailer) = blocks.get(1).and_then(|b| b["text"].as_str()) {
        println!("  {trailer}");
    }
    println!();
}
