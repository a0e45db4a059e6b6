//! The self-demo shared by the examples: an rmcp client calls a small and a
//! large tool on an MCP endpoint and prints what it received (and runs one
//! jq recipe on the offloaded file). `tests/command/gateway.rs` checks the lines it
//! prints: `small result (inline): ...`, `large result offloaded: N records
//! ...`, `file: PATH`, ``recipe `...` ``.
#![allow(dead_code)]

use std::error::Error;
use std::path::PathBuf;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use tower_lro::descriptor::OffloadResponse;

/// Where an example writes its files: `$TOWER_LRO_DEMO_DIR` when set (the
/// tests set it), else `<temp dir>/tower-lro-<example>`.
pub(crate) fn output_dir(example: &str) -> PathBuf {
    std::env::var_os("TOWER_LRO_DEMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("tower-lro-{example}")))
}

/// `--serve`: keep serving after the demo.
pub(crate) fn serve_forever() -> bool {
    std::env::args().skip(1).any(|a| a == "--serve")
}

/// The text of a result's first content block.
fn first_text(result: &Value) -> Result<&str, Box<dyn Error>> {
    result["content"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("no text block in {result}").into())
}

/// Calls `small` and `large` (tool name, arguments) on `url` and prints what
/// came back. Fails when the small result is not inline or the large one was
/// not offloaded.
pub(crate) async fn demo(
    url: &str,
    small: (&str, Value),
    large: (&str, Value),
) -> Result<(), Box<dyn Error>> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("tower-lro-demo", "0.1"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_06_18)
    .serve(transport)
    .await?;
    let call = |(name, args): (&str, Value)| {
        CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default())
    };
    let small_result = serde_json::to_value(client.call_tool(call(small)).await?)?;
    let large_result = serde_json::to_value(client.call_tool(call(large)).await?)?;
    let _ = client.cancel().await;

    let text = first_text(&small_result)?;
    if text.contains("\"offloaded\":true") {
        return Err("the small result was offloaded".into());
    }
    println!("small result (inline): {text}");

    let text = first_text(&large_result)?;
    let descriptor: OffloadResponse = serde_json::from_str(text)
        .map_err(|e| format!("the large result was not offloaded ({e})"))?;
    if !descriptor.offloaded {
        return Err("the large result was not offloaded".into());
    }
    println!(
        "large result offloaded: {} records, ~{} tokens, sent as a {}-character descriptor",
        descriptor.summary.count,
        descriptor.summary.estimated_tokens,
        text.len()
    );
    println!("file: {}", descriptor.file_path);
    let recipe = descriptor
        .jq_recipes
        .iter()
        .find(|r| r.description.starts_with("Count"))
        .or(descriptor.jq_recipes.first())
        .ok_or("no recipes")?;
    println!("recipe `{}`: $ {}", recipe.description, recipe.command);
    match std::process::Command::new("sh")
        .arg("-c")
        .arg(&recipe.command)
        .output()
    {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            // jq pretty-prints; show each JSON value on one line.
            let values: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(&text)
                .into_iter()
                .collect();
            let lines: Vec<String> = match values {
                Ok(vs) => vs.iter().map(Value::to_string).collect(),
                Err(_) => text.lines().map(str::to_owned).collect(),
            };
            for line in lines.iter().take(12) {
                println!("    {line}");
            }
        }
        Ok(out) => println!(
            "    (jq failed: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => println!("    (could not run the recipe: {e}; install jq)"),
    }
    Ok(())
}
