//! `HistoryOffloadLayer` in front of a chat endpoint: a gateway that keeps
//! an agent's history small before it reaches the model.
//!
//! It starts a stand-in OpenAI-compatible chat endpoint on 127.0.0.1 (no
//! model: it answers how many messages it got), puts the layer in front of
//! it, sends a 40-turn history with ten large tool answers twice (the
//! second time as a client resending its whole history with one more
//! turn), prints what the layer did and the files it wrote, and exits.
//!
//! ```text
//! cargo run --example history_gateway
//! ```

#[path = "support/chat_endpoint.rs"]
mod chat_endpoint;
#[path = "support/chat_history.rs"]
mod chat_history;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tower_lro::history::{
    HistoryConfig, HistoryEvent, HistoryOffloadLayer, HistoryOffloader, SummaryMode,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = tempfile::tempdir()?;
    let config = HistoryConfig::default()
        .mode(SummaryMode::Auto)
        .store_dir(store.path())
        .chat_id("example-chat");

    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let layer = HistoryOffloadLayer::builder(HistoryOffloader::new(config))
        .event_hook(move |event| seen.lock().expect("lock").push(event.clone()))
        .build();
    let endpoint = chat_endpoint::Endpoint::new(None);
    let addr = chat_endpoint::serve(endpoint.router().layer(layer)).await;
    println!("stand-in chat endpoint behind the layer on http://{addr}");

    let client = reqwest::Client::new();
    let mut body = chat_history::request_body("/v1/chat/completions", 40, 10, 12_000);
    for turn in ["first request", "resent with one more turn"] {
        let sent = serde_json::to_vec(&body)?;
        let answer: Value = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(sent.clone())
            .send()
            .await?
            .json()
            .await?;
        let received = endpoint
            .received()
            .pop()
            .ok_or("the endpoint got nothing")?;
        println!(
            "\n{turn}: {} bytes sent, {} bytes reached the endpoint",
            sent.len(),
            received.body.len()
        );
        println!(
            "  endpoint answered: {}",
            answer["choices"][0]["message"]["content"]
        );
        report(&events.lock().expect("lock").drain(..).collect::<Vec<_>>());
        show_first_tool_message(&received.json());
        // The agent's next turn: the answer and a new question appended.
        let messages = body["messages"].as_array_mut().ok_or("no messages")?;
        messages.push(
            json!({"role": "assistant", "content": answer["choices"][0]["message"]["content"]}),
        );
        messages.push(json!({"role": "user", "content": "And which of them are urgent?"}));
    }
    let mut files: Vec<_> = std::fs::read_dir(store.path())?
        .filter_map(Result::ok)
        .collect();
    files.sort_by_key(|f| f.file_name());
    println!("\n{} files in {}:", files.len(), store.path().display());
    for file in files {
        println!(
            "  {} ({} bytes)",
            file.file_name().to_string_lossy(),
            file.metadata()?.len()
        );
    }
    Ok(())
}

/// Prints what the layer did with one request.
fn report(events: &[HistoryEvent]) {
    for event in events {
        match event {
            HistoryEvent::Rewritten { report, .. } => {
                println!(
                    "  rewritten: {} -> {} estimated tokens, {} files written, {} messages compacted, {} groups compressed",
                    report.tokens_before,
                    report.tokens_after,
                    report.files_written.len(),
                    report.messages_compacted,
                    report.groups_compressed,
                );
            }
            other => println!("  {other:?}"),
        }
    }
}

/// Prints the start of the first tool message the endpoint received (a
/// pointer to its file, after the rewrite).
fn show_first_tool_message(body: &Value) {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let tool = messages.iter().find(|m| m["role"] == "tool");
    if let Some(content) = tool.and_then(|m| m["content"].as_str()) {
        let start: String = content.chars().take(400).collect();
        println!(
            "  first tool message as the endpoint got it:\n    {}",
            start.replace('\n', "\n    ")
        );
    }
}
