//! The layer serves offloaded data over MCP (`lro_extract`, `lro_list`,
//! `resources/read`), in front of a real rmcp server, to a real rmcp
//! client and raw HTTP, over loopback; answers checked against the true
//! data.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use common::mcp::{Mode, mcp_service, memories, post, serve_mcp, tools_call};
use common::{checked_descriptor, counts_by};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::offload::OffloadLayer;

type Client = RunningService<rmcp::RoleClient, ClientConfig>;

/// An rmcp client session with the server at `addr`.
async fn connect(addr: SocketAddr, version: ProtocolVersion) -> Client {
    connect_as(addr, version, None).await
}

/// An rmcp client session with the server at `addr`, sending `token` as
/// its bearer credentials.
async fn connect_as(addr: SocketAddr, version: ProtocolVersion, token: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("lro-serve-test", "1.0"),
    )
    .with_protocol_version(version);
    tokio::time::timeout(Duration::from_secs(30), info.serve(transport))
        .await
        .expect("connects in time")
        .expect("connects")
}

/// One call in `client`'s session (30 s at most).
async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("tool call in time")
        .expect("tool call succeeds")
}

/// The text of each content block.
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

/// The memories the server's `recall_memories` returns for `count`.
fn truth(count: usize) -> Vec<Value> {
    memories(count, Detail::Full)
}

/// Counts by namespace, as a custom slurped query prints them.
fn counts_of(line: &str) -> BTreeMap<String, usize> {
    let v: Value = serde_json::from_str(line).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let ns = e["namespace"].as_str().unwrap().to_owned();
            (ns, e["count"].as_u64().unwrap() as usize)
        })
        .collect()
}

fn layer(dir: &std::path::Path) -> OffloadLayer {
    OffloadLayer::new(OffloadConfig::default().output_dir(dir))
}

/// Every page of `args` (custom query) by `offset`, at most 50 pages.
async fn all_pages(client: &Client, args: Value) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut pages = 0;
    let mut offset = 0u64;
    for _ in 0..50 {
        let mut a = args.clone();
        a["offset"] = json!(offset);
        let r = call(client, "lro_extract", a).await;
        assert!(!is_error(&r), "{:?}", texts(&r));
        let t = texts(&r);
        pages += 1;
        lines.extend(t[0].lines().map(str::to_owned));
        let Some(trailer) = t.get(1) else {
            return (lines, pages);
        };
        let next = trailer.split("offset=").nth(1).expect("a next offset");
        offset = next.trim_end_matches('.').parse().unwrap();
    }
    panic!("more than 50 pages");
}

/// The URIs `lro_list` shows `client`.
async fn listed(client: &Client) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&texts(&call(client, "lro_list", json!({})).await)[0]).unwrap();
    let files = v["files"].as_array().unwrap();
    files
        .iter()
        .map(|f| f["uri"].as_str().unwrap().to_owned())
        .collect()
}

async fn session_scenario(mode: Mode, version: ProtocolVersion) {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_mcp(mcp_service(mode), Some(layer(dir.path()))).await;
    let client = connect(addr, version).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"lro_extract") && names.contains(&"lro_list"),
        "{names:?}"
    );
    assert!(names.contains(&"recall_memories"), "{names:?}");
    let caps = &client.peer_info().expect("initialized").capabilities;
    assert!(
        caps.resources.is_some(),
        "the resources capability is added"
    );
    let large = call(&client, "recall_memories", json!({"count": 300})).await;
    let d = checked_descriptor(&large, "recall");
    let records = truth(300);
    // A custom query over every record, paged within the threshold.
    let (ids, pages) = all_pages(&client, json!({"file_path": d.file_path, "query": ".id"})).await;
    let want: Vec<String> = records.iter().map(|r| r["id"].to_string()).collect();
    assert_eq!(ids, want, "every id, in order, across pages");
    assert!(
        pages > 1,
        "300 ids do not fit in 1600 tokens: {pages} page(s)"
    );
    // An aggregation with slurp: the true counts.
    let q = "group_by(.namespace) | map({namespace: .[0].namespace, count: length})";
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": d.file_path, "query": q, "slurp": true}),
    )
    .await;
    assert_eq!(
        counts_of(texts(&r)[0].trim()),
        counts_by(&records, "namespace")
    );
    // The bare file name works too, and lro_list shows the file.
    let name = std::path::Path::new(&d.file_path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": name, "query": ".title", "limit": 2}),
    )
    .await;
    let titles: Vec<String> = records[..2]
        .iter()
        .map(|r| r["title"].to_string())
        .collect();
    assert_eq!(texts(&r)[0], format!("{}\n{}\n", titles[0], titles[1]));
    let listed: Value =
        serde_json::from_str(&texts(&call(&client, "lro_list", json!({})).await)[0]).unwrap();
    assert_eq!(listed["files"][0]["file_path"], d.file_path);
    assert_eq!(listed["files"][0]["count"], 300);
    assert_eq!(listed["files"][0]["tool"], "recall_memories");
    // The file as a resource: its exact bytes.
    let uri = format!("lro://files/{name}");
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    match &read.contents[..] {
        [
            ResourceContents::TextResourceContents {
                uri: u,
                text,
                mime_type,
                ..
            },
        ] => {
            assert_eq!(u, &uri);
            assert_eq!(mime_type.as_deref(), Some("application/jsonl"));
            assert_eq!(text, &std::fs::read_to_string(&d.file_path).unwrap());
        }
        other => panic!("one text resource expected: {other:?}"),
    }
    // Other resources go to the server (which has none): its error.
    let other = client
        .read_resource(ReadResourceRequestParams::new("file:///etc/passwd"))
        .await;
    assert!(other.is_err(), "{other:?}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_with_event_streams() {
    session_scenario(Mode::StatefulSse, ProtocolVersion::V_2025_06_18).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_json() {
    session_scenario(Mode::StatelessJson, ProtocolVersion::V_2025_06_18).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2026_07_28() {
    session_scenario(Mode::StatelessSse, ProtocolVersion::V_2026_07_28).await;
    session_scenario(Mode::StatelessJson, ProtocolVersion::V_2026_07_28).await;
}

/// A recipe, by number, against the true data (needs the header's recipe
/// programs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipe_6_counts_are_the_true_counts() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer(dir.path()))).await;
    let client = connect(addr, ProtocolVersion::V_2025_06_18).await;
    let large = call(&client, "recall_memories", json!({"count": 200})).await;
    let d = checked_descriptor(&large, "recall");
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": d.file_path, "recipe": 6}),
    )
    .await;
    assert!(!is_error(&r), "{:?}", texts(&r));
    let compact: Value = serde_json::from_str(&texts(&r)[0]).unwrap();
    assert_eq!(
        counts_of(&compact.to_string()),
        counts_by(&truth(200), "namespace")
    );
    // A parameterised recipe, paged: the records of one namespace, as the
    // shell command would print them with that namespace.
    let records = truth(200);
    let ns = records[7]["namespace"].as_str().unwrap();
    let args = json!({"file_path": d.file_path, "recipe": 2, "params": {"namespace": ns}});
    let (lines, _) = all_pages(&client, args).await;
    let got: Vec<Value> = common::json_stream(&(lines.join("\n") + "\n"));
    let want: Vec<&Value> = records
        .iter()
        .filter(|r| r["namespace"].as_str().unwrap().starts_with(ns))
        .collect();
    assert_eq!(got.len(), want.len(), "recipe 2 with namespace {ns}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(&g["id"], &w["id"]);
    }
    // Out of range and unknown parameters: tool errors that say what to change.
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": d.file_path, "recipe": 11}),
    )
    .await;
    assert!(is_error(&r) && texts(&r)[0].contains("from 1 to 10"));
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": d.file_path, "recipe": 2, "params": {"nope": "x"}}),
    )
    .await;
    assert!(
        is_error(&r) && texts(&r)[0].contains("accepted parameters"),
        "{:?}",
        texts(&r)
    );
    let _ = client.cancel().await;
}

/// Raw HTTP: the answer comes as the client accepts it, never reaches the
/// server, and bad arguments are tool errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_answers_json_or_event_stream_and_tool_errors() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer(dir.path()))).await;
    let body = tools_call(7, "lro_extract", json!({"recipe": 1}), None);
    let r = post(addr, &body, &[]).await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["isError"], true);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("missing file_path")
    );
    assert!(
        v["result"].get("resultType").is_none(),
        "2025-06-18 results have no resultType"
    );
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = r.text().await.unwrap();
    let m = common::mcp::response_message(&text, 7).expect("the answer event");
    assert_eq!(m["result"]["resultType"], "complete");
    // tools/list: the server's tools and ours, JSON.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let v: Value = post(addr, &list, &[]).await.json().await.unwrap();
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(&names[names.len() - 2..], ["lro_extract", "lro_list"]);
    assert_eq!(
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == "lro_extract")
            .count(),
        1
    );
}

/// The same error for every file a client may not read; files follow the
/// credentials that produced them, not the MCP session: the same
/// credentials read and list them from another session, other or absent
/// credentials get the one refusal and list nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_look_alike_and_credentials_bind_files() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_mcp(mcp_service(Mode::StatefulSse), Some(layer(dir.path()))).await;
    let v = ProtocolVersion::V_2025_06_18;
    let alice = connect_as(addr, v.clone(), Some("alice-token")).await;
    let bob = connect_as(addr, v.clone(), Some("bob-token")).await;
    let anonymous = connect(addr, v.clone()).await;
    let d = checked_descriptor(
        &call(&alice, "recall_memories", json!({"count": 200})).await,
        "alice",
    );
    let path = std::path::PathBuf::from(&d.file_path);
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let ok = call(
        &alice,
        "lro_extract",
        json!({"file_path": d.file_path, "query": ".id", "limit": 1}),
    )
    .await;
    assert!(!is_error(&ok), "{:?}", texts(&ok));
    let refused = |r: &CallToolResult, reference: &str| -> String {
        assert!(is_error(r), "{reference}: {:?}", texts(r));
        let last = reference.rsplit('/').next().unwrap();
        texts(r)[0].replace(last, "REF")
    };
    let other_credentials = refused(
        &call(
            &bob,
            "lro_extract",
            json!({"file_path": d.file_path, "query": "."}),
        )
        .await,
        &d.file_path,
    );
    let no_credentials = refused(
        &call(
            &anonymous,
            "lro_extract",
            json!({"file_path": d.file_path, "query": "."}),
        )
        .await,
        &d.file_path,
    );
    // Alice again, in a new session (a client that reconnected): her file.
    let alice_again = connect_as(addr, v.clone(), Some("alice-token")).await;
    let again = call(
        &alice_again,
        "lro_extract",
        json!({"file_path": d.file_path, "query": ".id", "limit": 1}),
    )
    .await;
    assert!(!is_error(&again), "{:?}", texts(&again));
    // Files made by hand next to it: expired, foreign, a symbolic link, a copy outside.
    let content = std::fs::read_to_string(&path).unwrap();
    let (header, rest) = content.split_once('\n').unwrap();
    let mut h: Value = serde_json::from_str(header).unwrap();
    // Another ULID: the last two characters changed, to ones it does not
    // end with (the file's own ULID ended in `ZY` once, and the foreign
    // copy replaced it).
    let own = &name[name.len() - 8..name.len() - 6];
    let mut endings = ["ZZ", "ZY", "ZX", "ZW", "ZV"]
        .into_iter()
        .filter(|last| *last != own);
    let mut variant = || {
        let last = endings.next().unwrap();
        format!("{}{last}.jsonl", &name[..name.len() - 8])
    };
    let write = |file: &str, header: &Value| {
        std::fs::write(dir.path().join(file), format!("{header}\n{rest}")).unwrap();
    };
    h["expires_at"] = json!("2000-01-01T00:00:00Z");
    let expired = variant();
    write(&expired, &h);
    let mut foreign_h: Value = serde_json::from_str(header).unwrap();
    foreign_h["owner"] = json!("0123456789abcdef0123456789abcdef");
    let foreign = variant();
    write(&foreign, &foreign_h);
    let link = variant();
    std::os::unix::fs::symlink(&path, dir.path().join(&link)).unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir.path().join(&name);
    std::fs::copy(&path, &outside).unwrap();
    let missing = variant();
    let mut seen = vec![other_credentials, no_credentials];
    for reference in [
        expired.clone(),
        foreign.clone(),
        link.clone(),
        missing.clone(),
        outside.to_str().unwrap().to_owned(),
        "/etc/passwd".to_owned(),
        format!("{}/../{name}", dir.path().display()),
    ] {
        let r = call(
            &alice,
            "lro_extract",
            json!({"file_path": reference, "query": "."}),
        )
        .await;
        seen.push(refused(&r, &reference));
    }
    seen.dedup();
    assert_eq!(seen.len(), 1, "one message for every refusal: {seen:?}");
    assert!(
        !seen[0].contains(dir.path().to_str().unwrap()),
        "{}",
        seen[0]
    );
    // Bob lists nothing, nor does a client without credentials; Alice her
    // file only (not the hand-made ones), from either session.
    assert_eq!(listed(&bob).await, Vec::<String>::new());
    assert_eq!(listed(&anonymous).await, Vec::<String>::new());
    assert_eq!(listed(&alice).await, [format!("lro://files/{name}")]);
    assert_eq!(listed(&alice_again).await, [format!("lro://files/{name}")]);
    let _ = (
        alice.cancel().await,
        alice_again.cancel().await,
        bob.cancel().await,
        anonymous.cancel().await,
    );
}
