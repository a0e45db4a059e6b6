//! Client profiles: the layer learns the client from `initialize`'s
//! `clientInfo.name` (per session) or the request's 2026-07-28 `_meta`
//! client info, and applies that client's profile; a client without one,
//! or without a name, gets the rest of the configuration.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use serde_json::{Value, json};
use tower_lro::config::{ClientProfile, GuidanceKind, OffloadConfig};
use tower_lro::offload::OffloadLayer;

use crate::common;
use common::mcp::{Mode, mcp_service, post, response_message, serve_mcp, tools_call};

/// Calls `recall_memories` (200 full memories, ~64k tokens) as a client
/// named `name`, after listing the tools; returns the tool names listed and
/// the result.
async fn call_as(url: &str, name: &str) -> (Vec<String>, Value) {
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, "1.0"),
    )
    .serve(transport)
    .await
    .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names = tools.iter().map(|t| t.name.to_string()).collect();
    let result = recall(&client, 200).await;
    let _ = client.cancel().await;
    (names, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_gets_its_profile_and_others_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default()
        .output_dir(dir.path())
        // Over the whole result: its results stay inline.
        .client_profile(
            "Big Window",
            ClientProfile::new().threshold_tokens(1_000_000),
        )
        // A shell on the files' machine, no tool definitions in its requests.
        .client_profile(
            "shell-agent",
            ClientProfile::new()
                .list_tools(false)
                .guidance(GuidanceKind::Shell),
        )
        .client_profile("no-offload", ClientProfile::new().enabled(false));
    let layer = OffloadLayer::new(config);
    let addr = serve_mcp(mcp_service(Mode::StatefulSse), Some(layer)).await;
    let url = format!("http://{addr}/mcp");

    // No profile: today's behaviour, the lro_extract guidance.
    let (tools, result) = call_as(&url, "some-client").await;
    assert!(tools.iter().any(|t| t == "lro_extract"), "{tools:?}");
    let d = common::descriptor(&result);
    assert!(d.guidance.contains("lro_extract("), "{}", d.guidance);

    // Folded names match ("big-window" is the profile "Big Window").
    let (_, result) = call_as(&url, "big-window").await;
    assert!(
        common::try_descriptor(&result).is_none(),
        "inline for its profile"
    );
    assert_eq!(
        result["structuredContent"]["memories"]
            .as_array()
            .map(Vec::len),
        Some(200)
    );

    let (_, result) = call_as(&url, "no-offload").await;
    assert!(common::try_descriptor(&result).is_none());

    // Its tools not listed, the spec's shell guidance naming the file.
    let (tools, result) = call_as(&url, "shell-agent").await;
    assert!(!tools.iter().any(|t| t.starts_with("lro_")), "{tools:?}");
    let d = common::descriptor(&result);
    assert!(!d.guidance.contains("lro_extract"), "{}", d.guidance);
    assert!(
        d.guidance.contains(&format!("File: {}", d.file_path)),
        "{}",
        d.guidance
    );
}

/// Stateless (2026-07-28 style): the name in the request's own `_meta`
/// client info picks the profile; without it, the defaults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_names_its_client_in_meta() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default()
        .output_dir(dir.path())
        .client_profile(
            "big-window",
            ClientProfile::new().threshold_tokens(1_000_000),
        );
    let addr = serve_mcp(
        mcp_service(Mode::StatelessJson),
        Some(OffloadLayer::new(config)),
    )
    .await;
    for (meta, offloaded) in [
        (
            json!({"io.modelcontextprotocol/clientInfo": {"name": "big-window", "version": "1"}}),
            false,
        ),
        (
            json!({"io.modelcontextprotocol/clientInfo": {"name": "other", "version": "1"}}),
            true,
        ),
        (json!({}), true),
    ] {
        let args = json!({"query": "cache", "count": 200});
        let call = tools_call(7, "recall_memories", args, Some(meta.clone()));
        let text = post(addr, &call, &[]).await.text().await.unwrap();
        let body = response_message(&text, 7).unwrap_or_else(|| panic!("{text:.300}"));
        let result = &body["result"];
        assert_eq!(
            common::try_descriptor(result).is_some(),
            offloaded,
            "{meta}: {:.300}",
            result
        );
    }
}

/// An rmcp client that counts the `notifications/tools/list_changed` it
/// is sent.
#[derive(Clone)]
struct Counting {
    info: ClientConfig,
    changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Counting {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.changed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Counting {
    fn changed(&self) -> usize {
        self.changed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (5 s at most) until `n` notifications came.
    async fn wait_for(&self, n: usize) {
        for _ in 0..100 {
            if self.changed() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} notifications, {n} expected", self.changed());
    }
}

/// Connects to `url` as `name`; its handler counts tool-list changes.
async fn connect_counting(
    url: &str,
    name: &str,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, Counting>,
    Counting,
) {
    let handler = Counting {
        info: ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(name, "1.0"),
        ),
        changed: Default::default(),
    };
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
    let client = handler.clone().serve(transport).await.unwrap();
    (client, handler)
}

/// The layer's tools as listed to `client`: name and declared result size.
async fn lro_tools(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Counting>,
) -> Vec<(String, Option<Value>)> {
    let tools = client.list_all_tools().await.unwrap();
    tools
        .iter()
        .filter(|t| t.name.starts_with("lro_"))
        .map(|t| {
            let size = t
                .meta
                .as_ref()
                .and_then(|m| m.get("anthropic/maxResultSizeChars").cloned());
            (t.name.to_string(), size)
        })
        .collect()
}

/// `recall_memories` of `count` memories, called by `client`: the result.
async fn recall<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    count: u64,
) -> Value {
    let params = CallToolRequestParams::new("recall_memories").with_arguments(
        json!({"query": "cache", "count": count})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let result = tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .unwrap()
        .unwrap();
    serde_json::to_value(&result).unwrap()
}

/// The shipped profiles with no configuration: Gemini CLI (which sends
/// every tool definition with every request) is listed `lro_extract` and
/// `lro_list` only once something was offloaded in its session, and told
/// so by `notifications/tools/list_changed` before that result; Claude
/// Code is listed them from the start, sized to its own limit; switched
/// off, every client gets today's listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_profiles_list_the_tools_when_the_client_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default().output_dir(dir.path());
    let addr = serve_mcp(
        mcp_service(Mode::StatefulSse),
        Some(OffloadLayer::new(config.clone())),
    )
    .await;
    let url = format!("http://{addr}/mcp");

    let (gemini, counts) = connect_counting(&url, "gemini-cli-mcp-client").await;
    let caps = gemini.peer_info().unwrap().capabilities.tools.clone();
    assert_eq!(caps.and_then(|t| t.list_changed), Some(true));
    assert!(lro_tools(&gemini).await.is_empty());
    // Small: nothing offloaded, nothing said.
    let small = recall(&gemini, 2).await;
    assert!(common::try_descriptor(&small).is_none());
    assert!(lro_tools(&gemini).await.is_empty());
    let large = recall(&gemini, 200).await;
    let d = common::descriptor(&large);
    assert!(d.guidance.contains("lro_extract("), "{}", d.guidance);
    counts.wait_for(1).await;
    let listed = lro_tools(&gemini).await;
    assert_eq!(
        listed,
        [
            ("lro_extract".to_owned(), Some(json!(40_000))),
            ("lro_list".to_owned(), Some(json!(40_000)))
        ]
    );
    // Told once per session.
    let _ = recall(&gemini, 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counts.changed(), 1);
    let _ = gemini.cancel().await;

    // Claude Code defers MCP tools behind a tool search: listed at once.
    let (claude, counts) = connect_counting(&url, "claude-code").await;
    let listed = lro_tools(&claude).await;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|(_, size)| *size == Some(json!(50_000))));
    let _ = recall(&claude, 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counts.changed(), 0);
    let _ = claude.cancel().await;

    // A client with no profile, and Gemini CLI with the shipped profiles off.
    let plain = serve_mcp(
        mcp_service(Mode::StatefulSse),
        Some(OffloadLayer::new(config.builtin_profiles(false))),
    )
    .await;
    for (url, name) in [
        (&url, "some-client"),
        (&format!("http://{plain}/mcp"), "gemini-cli-mcp-client"),
    ] {
        let (client, counts) = connect_counting(url, name).await;
        let listed = lro_tools(&client).await;
        assert_eq!(
            listed,
            [
                ("lro_extract".to_owned(), None),
                ("lro_list".to_owned(), None)
            ],
            "{name}"
        );
        let _ = recall(&client, 200).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(counts.changed(), 0, "{name}");
        let _ = client.cancel().await;
    }
}

/// A first offload over the spill size (16 MiB, the event spilled to a
/// file and offloaded from there) also comes after
/// `notifications/tools/list_changed` for Gemini CLI's profile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spilled_first_offload_is_preceded_by_the_notice_too() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default().output_dir(dir.path());
    let addr = serve_mcp(
        mcp_service(Mode::StatefulSse),
        Some(OffloadLayer::new(config)),
    )
    .await;
    let url = format!("http://{addr}/mcp");
    let (gemini, counts) = connect_counting(&url, "gemini-cli-mcp-client").await;
    assert!(lro_tools(&gemini).await.is_empty());
    // 12,000 full memories: records of ~11 MB, twice in the response
    // (structured and a pretty copy): over the 16 MiB spill size.
    let large = recall(&gemini, 12_000).await;
    let d = common::descriptor(&large);
    assert_eq!(d.summary.count, 12_000);
    // The response holds the records twice (structured and a pretty copy).
    let file = std::fs::metadata(&d.file_path).unwrap().len();
    assert!(file > 8 << 20, "{file}");
    counts.wait_for(1).await;
    assert_eq!(lro_tools(&gemini).await.len(), 2);
    let _ = gemini.cancel().await;
}
