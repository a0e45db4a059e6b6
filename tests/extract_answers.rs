//! `lro_extract` as a remote, shell-less agent meets it (issue 23, points 4
//! and 5), through the real layer in front of a real rmcp server, with a
//! real rmcp client, over loopback: an input schema every client can use
//! (one type per property; numbers and `params` also accepted as strings,
//! as the MCP Inspector CLI and models send them), and answers a model can
//! afford (compact values, one per line; a page always ends on a whole
//! value; all pages together are exactly `jq -c`'s output, run with the
//! real jq).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::mcp::{Mode, mcp_service, serve_mcp};
use common::{checked_descriptor, require_jq, run_recipe};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tower_lro::descriptor::OffloadResponse;
use tower_lro::offload::OffloadLayer;

type Client = RunningService<rmcp::RoleClient, ClientConfig>;

/// Pages one walk follows at most.
const MAX_PAGES: usize = 400;

async fn connect(addr: SocketAddr) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("lro-answers-test", "1.0"),
    );
    tokio::time::timeout(Duration::from_secs(30), info.serve(transport))
        .await
        .expect("connects in time")
        .expect("connects")
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("tool call in time")
        .expect("tool call succeeds")
}

fn texts(result: &CallToolResult) -> Vec<String> {
    let v = serde_json::to_value(result).unwrap();
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The quickstart's setup: the memory server behind a layer with a
/// threshold of `threshold` tokens, a client, and the descriptor of
/// `recall_memories` for 200 full-detail memories.
async fn quickstart(
    dir: &std::path::Path,
    threshold: usize,
) -> (Client, OffloadResponse) {
    let layer = OffloadLayer::builder()
        .threshold_tokens(threshold)
        .output_dir(dir)
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let client = connect(addr).await;
    let args = json!({"query": "cache design", "count": 200, "detail": "full"});
    let large = call(&client, "recall_memories", args).await;
    let d = checked_descriptor(&large, "quickstart");
    (client, d)
}

/// One page of a walk: its text blocks.
struct Walked {
    pages: Vec<Vec<String>>,
}

/// Every page of `args` from `offset`, following the trailers' `offset=`.
async fn walk(client: &Client, args: &Value, offset: u64) -> Walked {
    let mut pages = Vec::new();
    let mut offset = offset;
    for _ in 0..MAX_PAGES {
        let mut a = args.clone();
        a["offset"] = json!(offset);
        let r = call(client, "lro_extract", a).await;
        assert!(!is_error(&r), "{args}: {:?}", texts(&r));
        let t = texts(&r);
        let next = t
            .get(1)
            .and_then(|trailer| trailer.split("offset=").nth(1))
            .map(|n| n.trim_end_matches('.').parse::<u64>().expect("a number"));
        pages.push(t);
        match next {
            Some(n) => {
                assert!(n > offset, "the next offset moves on: {n} after {offset}");
                offset = n;
            }
            None => return Walked { pages },
        }
    }
    panic!("{args}: more than {MAX_PAGES} pages");
}

/// Exact o200k tokens of `text`.
fn o200k(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

/// Tokens per page of the quickstart's three questions over `lro_extract`
/// (recipe 1, recipe 2 with the first namespace, a custom query), every
/// page of each. Prints the figures; asserts nothing about them.
/// `cargo test --test extract_answers -- --ignored --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints tokens per page"]
async fn measure_tokens_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let (client, d) = quickstart(dir.path(), 1600).await;
    let ns = d.summary.top_namespaces.first().cloned().unwrap();
    let asks = [
        ("recipe 1", json!({"file_path": d.file_path, "recipe": 1})),
        (
            "recipe 2 (namespace)",
            json!({"file_path": d.file_path, "recipe": 2, "params": {"namespace": ns}}),
        ),
        (
            "custom query",
            json!({"file_path": d.file_path,
                   "query": "select(.provenance.confidence > 0.9) | {id, title}"}),
        ),
    ];
    for (name, args) in asks {
        let w = walk(&client, &args, 0).await;
        let page_tokens: Vec<usize> = w.pages.iter().map(|p| o200k(&p.concat())).collect();
        let lines: usize = w.pages.iter().map(|p| p[0].lines().count()).sum();
        let chars: usize = w.pages.iter().map(|p| p[0].len()).sum();
        let total: usize = page_tokens.iter().sum();
        println!(
            "{name}: {} page(s), {lines} lines, {chars} bytes of output, o200k tokens {total} in all, \
             {} per page on average, pages {page_tokens:?}",
            w.pages.len(),
            total / w.pages.len().max(1)
        );
    }
    let _ = client.cancel().await;
}
