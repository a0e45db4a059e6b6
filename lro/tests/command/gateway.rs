//! `lro gateway` (the real binary) in front of MCP servers on loopback: an
//! MCP server written with the official Python SDK (`tests/interop/
//! py_server.py`), driven by the rmcp client and raw HTTP; the rmcp memory
//! server behind a local TLS server whose certificate is made here, driven
//! by the official Python and TypeScript SDK clients; the third-party
//! `@modelcontextprotocol/server-everything`; and bad conditions (unknown
//! CA, refusing, silent and dying upstreams, slow and idle clients, SIGTERM
//! with a request in flight), for `lro proxy` too where they apply. Also
//! the self-demos of the examples (`axum_router`, `rmcp_server`,
//! `hyper_service`), run as binaries.
//!
//! The example binaries are the ones `cargo test` builds next to this test
//! (`target/<profile>/examples/`); when one is missing (e.g. `cargo test
//! --test command gateway`), it is built with `cargo build --example NAME`.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mcp::{
    Mode, memories, response_message, rmcp_call, serve_with_and_without, sse_messages, tools_call,
};
use common::{
    check_recipe6, checked_descriptor, json_stream, output_within, output_within_blocking,
    require_jq, run_recipe,
};
use serde_json::{Value, json};
use std::io::Write as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tower_lro::descriptor::{Detail, OffloadResponse};
use tower_lro::offload::rebuild_file;

// ---- child processes ------------------------------------------------------

pub(crate) use common::procs::{Proc, python_server, spawn_ready, wait_for_port};

/// The newest modification time of the sources an example is built from.
fn newest_source() -> std::time::SystemTime {
    fn walk(path: &Path, newest: &mut std::time::SystemTime) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if meta.is_dir() {
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                walk(&entry.path(), newest);
            }
        } else if let Ok(m) = meta.modified() {
            *newest = (*newest).max(m);
        }
    }
    let root = common::repo_root();
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    for p in ["src", "examples", "Cargo.toml", "Cargo.lock"] {
        walk(&root.join(p), &mut newest);
    }
    newest
}

/// Path of an example binary built by cargo next to this test binary;
/// (re)builds it with `cargo build --example` if it is missing or older
/// than the sources (e.g. after `cargo test --test command gateway`, which
/// does not build examples).
fn example_binary(name: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/command-xxxx -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    if built.is_some_and(|b| b >= newest_source()) {
        return bin;
    }
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(common::repo_root())
        .env("CARGO_TARGET_DIR", target_dir)
        .args(["build", "--example", name]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build --example {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(bin.is_file(), "{} missing after the build", bin.display());
    bin
}

/// The `lro` binary cargo built for this test, or `LRO_TEST_BIN` when set
/// (a copy of it: with a target directory shared between checkouts,
/// another build may replace the binary while the tests run).
pub(crate) fn lro_bin() -> PathBuf {
    std::env::var_os("LRO_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_lro")))
}

/// `lro gateway` in front of `upstream`, writing files into `dir`.
fn gateway(upstream: &str, dir: &Path) -> (Proc, SocketAddr) {
    gateway_with(upstream, dir, &[])
}

/// `lro gateway` in front of `upstream` with `extra` flags; returns it and
/// the address it listens on.
pub(crate) fn gateway_with(upstream: &str, dir: &Path, extra: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = Command::new(lro_bin());
    cmd.args(["gateway", "--upstream", upstream, "--listen", "127.0.0.1:0"])
        .args(["--threshold-tokens", "1600", "--ttl-seconds", "600"])
        .arg("--output-dir")
        .arg(dir)
        .args(extra)
        .env("RUST_LOG", "info");
    start_gateway(cmd)
}

/// Starts `cmd` (an `lro gateway` command line listening on port 0) and
/// waits until it listens; returns it and its address.
pub(crate) fn start_gateway(cmd: Command) -> (Proc, SocketAddr) {
    let (proc, rest) = spawn_ready(
        "lro gateway",
        cmd,
        "lro gateway listening on http://",
        Duration::from_secs(30),
    );
    let addr: SocketAddr = rest
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("gateway printed `{rest}`"));
    wait_for_port(addr);
    (proc, addr)
}

/// A Python server with the gateway in front of it.
pub(crate) struct Stack {
    gateway_proc: Proc,
    _python: Proc,
    /// `http://127.0.0.1:PORT/mcp` of the gateway.
    pub(crate) gateway: String,
    /// `http://127.0.0.1:PORT/mcp` of the Python server itself.
    upstream: String,
    upstream_port: u16,
    dir: tempfile::TempDir,
}

/// [`stack_with`] no server options.
fn stack() -> Option<Stack> {
    stack_with(&[])
}

/// The stack, the Python server started with `python_args`. `None`: skipped
/// (no interop tooling; see `common::require`).
pub(crate) fn stack_with(python_args: &[&str]) -> Option<Stack> {
    let dir = tempfile::tempdir().unwrap();
    let (python, port) = python_server(python_args)?;
    let upstream = format!("http://127.0.0.1:{port}/mcp");
    let (gateway_proc, addr) = gateway(&upstream, dir.path());
    Some(Stack {
        gateway_proc,
        _python: python,
        gateway: format!("http://{addr}/mcp"),
        upstream,
        upstream_port: port,
        dir,
    })
}

/// Waits (at most 5 s) until the stderr of `proc` satisfies `done`; returns it.
pub(crate) async fn wait_for_log(proc: &Proc, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = proc.stderr();
        if done(&log) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "{proc:?}: expected log lines missing:\n{log}"
        );
        // A real process writing its log: polled on the wall clock.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- MCP helpers ----------------------------------------------------------

const CATEGORIES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

/// Per-category counts of `py_server.py`'s `make_records(count)`.
fn expected_categories(count: usize) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for i in 0..count {
        *m.entry(CATEGORIES[(i * i) % 5].to_owned()).or_insert(0) += 1;
    }
    m
}

pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    common::mcp::post_to(&http(), url, body, headers).await
}

/// Initializes a session by hand; returns the session id.
async fn initialize(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = post(url, &init, &[]).await;
    assert_eq!(resp.status(), 200, "initialize on {url}");
    let session = resp
        .headers()
        .get("mcp-session-id")
        .expect("the response carries Mcp-Session-Id")
        .to_str()
        .unwrap()
        .to_owned();
    let body = resp.text().await.unwrap();
    let msgs = sse_messages(&body);
    assert_eq!(
        msgs[0]["result"]["serverInfo"]["name"], "py-interop",
        "{body}"
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(url, &note, &[("mcp-session-id", &session)]).await;
    assert_eq!(r.status(), 202);
    session
}

/// The JSON-RPC response with `id` in an SSE body.
fn response_with_id(body: &str, id: u64) -> Value {
    sse_messages(body)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response {id} in:\n{body}"))
}

/// Descriptor, file, jq recipes and rebuild of an offloaded `records` result.
fn check_offloaded(result: &Value, original: &Value, count: usize, dir: &Path) {
    require_jq();
    let d = checked_descriptor(result, "gateway");
    assert_eq!(d.summary.count, count);
    let path = Path::new(&d.file_path);
    assert_eq!(path.parent(), Some(dir), "file in --output-dir");
    let recipe = |desc: &str| {
        d.jq_recipes
            .iter()
            .find(|r| r.description == desc)
            .unwrap_or_else(|| panic!("no recipe `{desc}` in {:#?}", d.jq_recipes))
            .command
            .clone()
    };
    assert_eq!(
        run_recipe(&recipe("Count records")).trim(),
        count.to_string()
    );
    let by_category = json_stream(&run_recipe(&recipe("Count by category")));
    let got: BTreeMap<String, u64> = by_category[0]
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| {
            (
                e["category"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        expected_categories(count),
        "recipe `Count by category`"
    );
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(&rebuilt, original, "the file rebuilds what the server sent");
}

// ---- the gateway ----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_through_the_gateway_small_inline_large_offloaded() {
    let Some(s) = stack() else {
        return;
    };
    // Small: identical to calling the Python server directly.
    let small = rmcp_call(&s.gateway, None, "greet", json!({"name": "lro"})).await;
    let direct = rmcp_call(&s.upstream, None, "greet", json!({"name": "lro"})).await;
    assert_eq!(small, direct);
    assert_eq!(
        serde_json::to_value(&small).unwrap()["content"][0]["text"],
        "hello, lro"
    );
    // Large: a descriptor whose file and recipes give the right answers.
    let large = rmcp_call(&s.gateway, None, "records", json!({"count": 300})).await;
    let original = rmcp_call(&s.upstream, None, "records", json!({"count": 300})).await;
    let original_text = serde_json::to_value(&original).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .len();
    let large_v = serde_json::to_value(&large).unwrap();
    let large_text = large_v["content"][0]["text"].as_str().unwrap().len();
    assert!(
        large_text * 3 < original_text,
        "descriptor {large_text} chars vs original {original_text}"
    );
    check_offloaded(
        &large_v,
        &serde_json::to_value(&original).unwrap(),
        300,
        s.dir.path(),
    );
    // One log line per request, on stderr.
    let log = wait_for_log(&s.gateway_proc, |log| {
        log.lines().any(|l| {
            l.contains(" request ") && l.contains("method=POST") && l.contains("status=200")
        })
    })
    .await;
    assert!(log.contains("gateway started"), "{log}");
    assert!(log.contains("tool result offloaded"), "{log}");
}

/// The quickstart's 200 full memories reach a client of `lro gateway` as
/// at most 900 estimated tokens: the descriptor and its `resource_link`,
/// every block the client is given, estimated as the layer estimates.
/// The descriptor still has every field the spec requires, and its recipe
/// and its `lro_extract` example give the true counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickstart_memories_reach_a_client_in_at_most_900_tokens() {
    use tower_lro::estimate::{ScriptAwareEstimator, TokenEstimator};
    let upstream =
        common::mcp::serve_mcp(common::mcp::mcp_service(Mode::StatelessJson), None).await;
    let dir = tempfile::tempdir().unwrap();
    let (_gateway, addr) = gateway_with(&format!("http://{upstream}/mcp"), dir.path(), &[]);
    let url = format!("http://{addr}/mcp");
    let args = json!({"query": "cache design", "count": 200, "detail": "full"});
    let result = rmcp_call(&url, None, "recall_memories", args.clone()).await;
    let v = serde_json::to_value(&result).unwrap();
    let blocks = v["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{v:.400}");
    assert_eq!(blocks[1]["type"], "resource_link");
    let tokens: usize = blocks
        .iter()
        .map(|b| match b["text"].as_str() {
            Some(text) => ScriptAwareEstimator.estimate(text),
            None => ScriptAwareEstimator.estimate(&b.to_string()),
        })
        .sum();
    let d = checked_descriptor(&result, "200 memories");
    println!(
        "200 full memories (~{} tokens) reach the client as ~{tokens} tokens",
        d.summary.estimated_tokens
    );
    assert!(tokens <= 900, "~{tokens} tokens: {v}");
    let raw: Value = serde_json::from_str(blocks[0]["text"].as_str().unwrap()).unwrap();
    for field in [
        "offloaded",
        "summary",
        "file_path",
        "line_schema",
        "jq_recipes",
        "guidance",
    ] {
        assert!(raw.get(field).is_some(), "{field}");
    }
    for field in [
        "count",
        "estimated_tokens",
        "operation",
        "top_namespaces",
        "score_range",
        "detail",
    ] {
        assert!(raw["summary"].get(field).is_some(), "summary.{field}");
    }
    assert!(raw["summary"]["data_sha256"].is_string());
    assert!(raw["line_schema"]["properties"]["namespace"].is_object());
    let records = memories(200, Detail::Full);
    check_recipe6(&d.jq_recipes[5].command, &records, "recipe 6");
    // The guidance's example, with FILE the file_path, through the gateway.
    assert!(
        d.guidance.contains("lro_extract(file_path=FILE, recipe=1)"),
        "{}",
        d.guidance
    );
    let page = rmcp_call(
        &url,
        None,
        "lro_extract",
        json!({"file_path": d.file_path, "recipe": 6}),
    )
    .await;
    let page = serde_json::to_value(&page).unwrap();
    let text = page["content"][0]["text"].as_str().unwrap();
    let mut counts = BTreeMap::new();
    for m in &records {
        *counts
            .entry(m["namespace"].as_str().unwrap().to_owned())
            .or_insert(0u64) += 1;
    }
    for (namespace, count) in counts {
        assert!(
            text.contains(&format!("\"namespace\":\"{namespace}\",\"count\":{count}")),
            "{namespace}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_headers_are_forwarded_both_ways() {
    let Some(s) = stack() else {
        return;
    };
    let session = initialize(&s.gateway).await;
    // The session id came from the Python server: it works there directly.
    let direct = post(
        &s.upstream,
        &tools_call(1, "greet", json!({"name": "direct"}), None),
        &[("mcp-session-id", &session)],
    )
    .await;
    assert_eq!(direct.status(), 200);
    let r = response_with_id(&direct.text().await.unwrap(), 1);
    assert_eq!(r["result"]["content"][0]["text"], "hello, direct");

    // What the Python server saw of a request sent to the gateway.
    let resp = post(
        &s.gateway,
        &tools_call(2, "echo_headers", json!({}), None),
        &[
            ("mcp-session-id", &session),
            ("last-event-id", "evt-41"),
            ("x-trace-id", "t-123"),
            ("connection", "keep-alive, x-hop"),
            ("x-hop", "only for the first hop"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let r = response_with_id(&resp.text().await.unwrap(), 2);
    let seen: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["mcp-session-id"], session.as_str(), "{seen}");
    assert_eq!(seen["mcp-protocol-version"], "2025-06-18", "{seen}");
    assert_eq!(seen["last-event-id"], "evt-41", "{seen}");
    assert_eq!(seen["x-trace-id"], "t-123", "{seen}");
    assert_eq!(seen["content-type"], "application/json", "{seen}");
    assert_eq!(
        seen["accept"], "application/json, text/event-stream",
        "{seen}"
    );
    assert_eq!(
        seen["host"],
        format!("127.0.0.1:{}", s.upstream_port),
        "{seen}"
    );
    assert!(
        seen.get("x-hop").is_none(),
        "hop-by-hop header leaked: {seen}"
    );

    // DELETE reaches the Python server: the session is gone there too.
    let del = http()
        .delete(&s.gateway)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 200, "{:?}", del.text().await);
    let after = post(
        &s.upstream,
        &tools_call(3, "greet", json!({}), None),
        &[("mcp-session-id", &session)],
    )
    .await;
    assert_eq!(after.status(), 404, "session terminated upstream");
    // And the gateway answers as the upstream does for the dead session.
    let via = post(
        &s.gateway,
        &tools_call(3, "greet", json!({}), None),
        &[("mcp-session-id", &session)],
    )
    .await;
    assert_eq!(via.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_before_the_offloaded_result() {
    let Some(s) = stack() else {
        return;
    };
    let session = initialize(&s.gateway).await;
    let body = tools_call(
        7,
        "slow_records",
        json!({"count": 300}),
        Some(json!({"progressToken": "p7"})),
    );
    let start = Instant::now();
    let mut resp = post(&s.gateway, &body, &[("mcp-session-id", &session)]).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = common::mcp::progress_then_result(&mut resp, start).await;
    let msgs = sse_messages(&text);
    let progress: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{text}");
    assert_eq!(progress[0]["params"]["progressToken"], "p7");
    // The same call straight to the Python server, for the original result.
    let direct_session = initialize(&s.upstream).await;
    let direct = post(
        &s.upstream,
        &tools_call(7, "slow_records", json!({"count": 300}), None),
        &[("mcp-session-id", &direct_session)],
    )
    .await
    .text()
    .await
    .unwrap();
    let original = response_with_id(&direct, 7)["result"].clone();
    let rewritten = response_with_id(&text, 7)["result"].clone();
    check_offloaded(&rewritten, &original, 300, s.dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_event_stream_delivers_events_as_they_are_sent() {
    let Some(s) = stack() else {
        return;
    };
    let session = initialize(&s.gateway).await;
    let mut stream = open_get_stream(&s.gateway, &session, None).await;
    // Ask the server to send a notification on the standalone stream.
    announce(&s.gateway, &session, 4).await;
    // The event arrives while the stream stays open (it never ends).
    event_with(&mut stream, "notifications/tools/list_changed").await;
}

/// Calls the `announce` tool (the server then notifies `tools/list_changed`
/// on the session's GET stream) and checks its answer.
async fn announce(gateway: &str, session: &str, id: u64) {
    let r = post(
        gateway,
        &tools_call(id, "announce", json!({}), None),
        &[("mcp-session-id", session)],
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(
        response_with_id(&r, id)["result"]["content"][0]["text"],
        "announced"
    );
}

/// Opens a GET event stream on `url` for `session`.
async fn open_get_stream(
    url: &str,
    session: &str,
    last_event_id: Option<&str>,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let resp = tokio::time::timeout(Duration::from_secs(10), req.send())
        .await
        .expect("GET stream opens in time")
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    resp
}

/// Reads `stream` (at most 10 s) until a whole event mentions `needle`;
/// returns that event. Panics if the stream ends first.
async fn event_with(stream: &mut reqwest::Response, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = String::new();
    loop {
        let text = got.replace("\r\n", "\n");
        if let Some(event) = text
            .split("\n\n")
            .find(|ev| ev.contains(needle) && text.contains(&format!("{ev}\n\n")))
        {
            return event.to_owned();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("no `{needle}` event within 10 s; got {got:?}"))
            .expect("stream readable")
            .unwrap_or_else(|| panic!("stream ended before a `{needle}` event; got {got:?}"));
        got.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// The `id:` of the first whole event on `stream` that mentions `needle`.
async fn event_id_of(stream: &mut reqwest::Response, needle: &str) -> String {
    let event = event_with(stream, needle).await;
    event
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .unwrap_or_else(|| panic!("event without id: {event:?}"))
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_stream_resumes_with_last_event_id() {
    let Some(s) = stack_with(&["--resumable"]) else {
        return;
    };
    let session = initialize(&s.gateway).await;
    let mut first = open_get_stream(&s.gateway, &session, None).await;
    announce(&s.gateway, &session, 10).await;
    let seen: u64 = event_id_of(&mut first, "notifications/tools/list_changed")
        .await
        .parse()
        .expect("numeric event id");
    drop(first);
    // Missed while disconnected; the server keeps it.
    announce(&s.gateway, &session, 11).await;
    let mut resumed = open_get_stream(&s.gateway, &session, Some(&seen.to_string())).await;
    let replayed: u64 = event_id_of(&mut resumed, "notifications/tools/list_changed")
        .await
        .parse()
        .expect("numeric event id");
    assert!(replayed > seen, "replayed event {replayed} after {seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_header_gets_the_upstream_bytes_untouched() {
    let Some(s) = stack() else {
        return;
    };
    let via_session = initialize(&s.gateway).await;
    let direct_session = initialize(&s.upstream).await;
    let body = tools_call(5, "records", json!({"count": 300}), None);
    let direct = post(&s.upstream, &body, &[("mcp-session-id", &direct_session)])
        .await
        .bytes()
        .await
        .unwrap();
    let proxied = post(
        &s.gateway,
        &body,
        &[("mcp-session-id", &via_session), ("lro-proxy", "1")],
    )
    .await
    .bytes()
    .await
    .unwrap();
    assert_eq!(proxied, direct, "byte-identical with lro-proxy: 1");
    assert_eq!(std::fs::read_dir(s.dir.path()).unwrap().count(), 0);
    // Without the header the same call is offloaded.
    let normal = post(&s.gateway, &body, &[("mcp-session-id", &via_session)])
        .await
        .text()
        .await
        .unwrap();
    assert!(normal.contains(r#"\"offloaded\":true"#));
    assert_eq!(std::fs::read_dir(s.dir.path()).unwrap().count(), 1);
    // Small results are byte-identical even without the header.
    let small = tools_call(6, "greet", json!({"name": "bytes"}), None);
    let a = post(&s.gateway, &small, &[("mcp-session-id", &via_session)])
        .await
        .bytes()
        .await
        .unwrap();
    let b = post(&s.upstream, &small, &[("mcp-session-id", &direct_session)])
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_responses_of_a_stateless_server() {
    let Some(s) = stack_with(&["--json", "--stateless"]) else {
        return;
    };
    let small = tools_call(1, "greet", json!({"name": "json"}), None);
    let via = post(&s.gateway, &small, &[]).await;
    assert_eq!(via.headers()["content-type"], "application/json");
    let via = via.bytes().await.unwrap();
    let direct = post(&s.upstream, &small, &[]).await.bytes().await.unwrap();
    assert_eq!(via, direct, "small JSON response byte-identical");
    let large = tools_call(2, "records", json!({"count": 300}), None);
    let resp = post(&s.gateway, &large, &[]).await;
    assert_eq!(resp.status(), 200);
    let declared = resp.content_length().expect("Content-Length");
    let bytes = resp.bytes().await.unwrap();
    assert_eq!(
        declared as usize,
        bytes.len(),
        "Content-Length fits the rewritten body"
    );
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 2);
    let original: Value =
        serde_json::from_slice(&post(&s.upstream, &large, &[]).await.bytes().await.unwrap())
            .unwrap();
    check_offloaded(&v["result"], &original["result"], 300, s.dir.path());

    // The two shapes the Python SDK gives a large result, and what the
    // client receives through the gateway. Correct (descriptor, file,
    // recipes, exact rebuild) in both, and the SDK's second copy of the data
    // does not reach the client either:
    // * `-> str`: structuredContent {"result": "<the same text>"} carries
    //   one sentence saying where the records went (not the descriptor
    //   a second time);
    // * `-> list[dict]`: the 300 one-record text blocks are copies of the
    //   structuredContent elements and go with them.
    for (id, tool) in [(3u64, "records"), (4, "records_list")] {
        let call = tools_call(id, tool, json!({"count": 300}), None);
        let original = post(&s.upstream, &call, &[]).await.bytes().await.unwrap();
        let rewritten = post(&s.gateway, &call, &[]).await.bytes().await.unwrap();
        let (o, r): (Value, Value) = (
            serde_json::from_slice(&original).unwrap(),
            serde_json::from_slice(&rewritten).unwrap(),
        );
        check_offloaded(&r["result"], &o["result"], 300, s.dir.path());
        eprintln!(
            "{tool}: {} bytes from the server, {} bytes to the client",
            original.len(),
            rewritten.len()
        );
        assert!(rewritten.len() * 4 < original.len(), "{tool}");
    }

    // Concurrent calls: each large one gets its own file, small ones pass.
    let files_before = std::fs::read_dir(s.dir.path()).unwrap().count();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..16u64 {
        let url = s.gateway.clone();
        set.spawn(async move {
            let (tool, args) = if i % 2 == 0 {
                ("records", json!({"count": 300}))
            } else {
                ("greet", json!({"name": format!("n{i}")}))
            };
            let resp = post(&url, &tools_call(100 + i, tool, args, None), &[]).await;
            assert_eq!(resp.status(), 200);
            let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
            assert_eq!(v["id"], 100 + i);
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        });
    }
    let mut paths = std::collections::BTreeSet::new();
    while let Some(text) = set.join_next().await {
        let text = text.expect("task completes");
        if text.starts_with("hello, n") {
            continue;
        }
        let d: OffloadResponse = serde_json::from_str(&text).expect("descriptor");
        assert_eq!(d.summary.count, 300);
        paths.insert(d.file_path);
    }
    assert_eq!(paths.len(), 8, "one file per large call");
    assert_eq!(
        std::fs::read_dir(s.dir.path()).unwrap().count(),
        files_before + 8
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_get_404_and_a_dead_upstream_502() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let (gw, addr) = gateway(&format!("http://127.0.0.1:{port}/mcp"), dir.path());
    for path in ["/", "/other", "/mcp/extra", "/mcpx"] {
        let r = http()
            .post(format!("http://{addr}{path}"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
    let r = post(
        &format!("http://{addr}/mcp"),
        &tools_call(1, "greet", json!({}), None),
        &[],
    )
    .await;
    assert_eq!(r.status(), 502);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = r.text().await.unwrap();
    assert!(text.starts_with("bad gateway"), "{text}");
    assert!(!text.contains("jsonrpc"), "{text}");
    // Neither the internal address nor the OS error reaches the client.
    for secret in ["127.0.0.1", &port.to_string(), "os error", "refused ("] {
        assert!(!text.contains(secret), "`{secret}` in {text}");
    }
    let health = http()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        health.status(),
        200,
        "the health endpoint answers without the upstream"
    );
    let get = http()
        .get(format!("http://{addr}/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 502);
    // Each request was logged.
    let log = wait_for_log(&gw, |log| {
        log.matches("status=502").count() >= 2 && log.matches("status=404").count() >= 4
    })
    .await;
    assert!(log.contains("upstream request failed"), "{log}");
    // The details are in the log.
    assert!(log.contains(&format!("127.0.0.1:{port}")), "{log}");
}

#[test]
fn bad_arguments_are_named() {
    let run = |args: &[&str]| {
        let out = Command::new(lro_bin())
            .arg("gateway")
            .args(args)
            .output()
            .expect("lro runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    for flag in [
        "--upstream <URL>",
        "--ca-cert <FILE>",
        "--header <NAME: VALUE>",
        "--max-connections",
        "--header-timeout",
        "--response-timeout",
        "--health-path",
        "--ready-path",
        "--metrics-path",
        "--log-format",
        "--no-announce",
        "--max-request-bytes",
    ] {
        assert!(stdout.contains(flag), "{flag} in --help:\n{stdout}");
    }
    let up = ["--upstream", "http://127.0.0.1:1/mcp"];
    let listen = ["--listen", "127.0.0.1:0"];
    let with = |more: &[&'static str]| [&up[..], &listen[..], more].concat();
    // (arguments, exit status, words the one-line error names)
    let cases: Vec<(Vec<&str>, i32, Vec<&str>)> = vec![
        // No --upstream and no routes file: the gateway's own error.
        (listen.to_vec(), 1, vec!["--upstream", "[[gateway.route]]"]),
        (
            with(&["--max-request-bytes", "lots"]),
            2,
            vec!["--max-request-bytes", "lots"],
        ),
        (
            [&up[..], &["--listen", "nowhere"]].concat(),
            2,
            vec!["--listen", "nowhere"],
        ),
        (
            with(&["--threshold-tokens", "lots"]),
            2,
            vec!["--threshold-tokens", "lots"],
        ),
        (with(&["--ttl-seconds=-3"]), 2, vec!["--ttl-seconds", "-3"]),
        (with(&["--threads", "4"]), 2, vec!["--threads"]),
        (
            with(&["--log-format", "xml"]),
            2,
            vec!["--log-format", "xml"],
        ),
        (
            vec![
                "--upstream",
                "ftp://example.com/mcp",
                "--listen",
                "127.0.0.1:0",
            ],
            1,
            vec!["ftp://example.com/mcp"],
        ),
        (
            with(&["--header", "no colon"]),
            1,
            vec!["--header", "no colon"],
        ),
        (
            with(&["--header-timeout", "0"]),
            1,
            vec!["--header-timeout"],
        ),
        (
            with(&["--health-path", "/mcp"]),
            1,
            vec!["health path", "/mcp"],
        ),
        (
            with(&["--ca-cert", "/nonexistent/ca.pem"]),
            1,
            vec!["/nonexistent/ca.pem"],
        ),
    ];
    for (args, status, words) in cases {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(status), "{args:?}: {stderr}");
        if status == 1 {
            assert_eq!(
                stderr.trim().lines().count(),
                1,
                "{args:?}: one line: {stderr}"
            );
        }
        for w in words {
            assert!(stderr.contains(w), "{args:?}: `{w}` not in {stderr}");
        }
    }
}

// ---- the other examples' self-demos ---------------------------------------

/// Runs an example's self-demo (at most 120 s); returns its stdout.
fn run_demo(name: &str) -> String {
    let bin = example_binary(name);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(&bin);
    cmd.env("TOWER_LRO_DEMO_DIR", dir.path());
    let out = output_within_blocking(cmd, Duration::from_secs(120), name);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // The offloaded file it reports is in the directory it was given.
    let file = stdout
        .lines()
        .find_map(|l| l.split_once("file: ").map(|(_, f)| f.trim().to_owned()))
        .unwrap_or_else(|| panic!("{name} printed no file:\n{stdout}"));
    assert!(
        Path::new(&file).starts_with(dir.path()) && Path::new(&file).is_file(),
        "{file}"
    );
    stdout
}

fn check_demo(stdout: &str, small: &str, count: usize) {
    assert!(
        stdout.contains(&format!("small result (inline): {small}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("large result offloaded: {count} records")),
        "{stdout}"
    );
    assert!(stdout.contains("recipe `"), "{stdout}");
}

#[test]
fn axum_router_demo_runs() {
    let out = run_demo("axum_router");
    check_demo(&out, "ok: 3 workers, 0 errors", 200);
    assert!(out.contains("GET /health -> 200 ok"), "{out}");
}

#[test]
fn rmcp_server_demo_runs() {
    let out = run_demo("rmcp_server");
    check_demo(&out, "ok: 3 workers, 0 errors", 200);
}

#[test]
fn hyper_service_demo_runs() {
    let out = run_demo("hyper_service");
    check_demo(&out, "pong", 250);
}

// ---- https upstreams: a local TLS server, a certificate made here -------

/// A private CA and a certificate for `127.0.0.1` it signed.
struct Pki {
    ca_pem: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        cert: cert.der().clone(),
        key: PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    }
}

/// Serves TLS with `pki`'s certificate on a free port and relays each
/// connection, decrypted, to `plain`; returns the TLS address.
async fn tls_in_front(plain: SocketAddr, pki: &Pki) -> SocketAddr {
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert.clone()], pki.key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut inner) = tokio::net::TcpStream::connect(plain).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut inner).await;
                }
            });
        }
    });
    addr
}

/// The memory server (sessions, SSE) with its own offload layer behind TLS,
/// `lro gateway` in front of it trusting the private CA, and the same
/// server plain without a layer for comparison.
struct TlsStack {
    _gateway_proc: Proc,
    /// `http://127.0.0.1:PORT/mcp` of the gateway.
    gateway: String,
    /// The server without a layer, directly.
    direct: String,
    /// `https://127.0.0.1:PORT/mcp` of the server with its layer.
    https: String,
    gateway_dir: tempfile::TempDir,
    server_dir: tempfile::TempDir,
    ca_dir: tempfile::TempDir,
}

async fn tls_stack(mode: Mode, extra: &[&str]) -> TlsStack {
    let server_dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(mode, server_dir.path()).await;
    let pki = pki();
    let tls = tls_in_front(with, &pki).await;
    let ca_dir = tempfile::tempdir().unwrap();
    let ca = ca_dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let gateway_dir = tempfile::tempdir().unwrap();
    let https = format!("https://{tls}/mcp");
    let args = [&["--ca-cert", ca.to_str().unwrap()], extra].concat();
    let (proc, addr) = gateway_with(&https, gateway_dir.path(), &args);
    TlsStack {
        _gateway_proc: proc,
        gateway: format!("http://{addr}/mcp"),
        direct: format!("http://{without}/mcp"),
        https,
        gateway_dir,
        server_dir,
        ca_dir,
    }
}

/// How long one SDK client run may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// What the SDK clients ask recall_memories for.
const COUNT: usize = 200;

/// Runs an SDK client script of `tests/interop` with `args`; returns the
/// JSON object it prints.
pub(crate) async fn run_client(program: &Path, args: &[&str]) -> Value {
    let dir = common::interop_dir();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).current_dir(&dir);
    let out = output_within(cmd, CLIENT_TIMEOUT, &format!("{args:?}")).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?} failed: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {stdout}\n{stderr}"))
}

pub(crate) fn sdk_ok<'a>(v: &'a Value, what: &str) -> &'a Value {
    assert!(v.get("error").is_none(), "{what}: {}", v["error"]);
    &v["ok"]
}

/// The offloaded files in `dir`.
fn offload_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| tower_lro::store::is_offload_file_name(&e.file_name().to_string_lossy()))
        .count()
}

/// What an SDK client run through the gateway to the https server shows:
/// the server's tools and the layer's two, small results as direct, large
/// ones offloaded by the gateway with recipes that run under jq, progress
/// before the result, and nothing offloaded by the server (it saw the
/// proxy flag).
fn check_sdk_run(v: &Value, protocol: &str, s: &TlsStack) {
    let name = format!("{} {}", v["client"], v["mode"]);
    let (via, direct) = (&v["with"], &v["without"]);
    assert_eq!(via["protocolVersion"], protocol, "{name}");
    let mut listed = direct["tools"].as_array().unwrap().clone();
    listed.extend([json!("lro_extract"), json!("lro_list")]);
    listed.sort_by_key(|t| t.as_str().unwrap_or_default().to_owned());
    assert_eq!(via["tools"], json!(listed), "{name}: tools");
    assert_eq!(
        sdk_ok(&via["small"], "small"),
        sdk_ok(&direct["small"], "small direct"),
        "{name}: a small result is the direct one"
    );
    let d = checked_descriptor(sdk_ok(&via["large"], "large"), &name);
    assert_eq!(d.summary.count, COUNT, "{name}");
    assert!(
        Path::new(&d.file_path).starts_with(s.gateway_dir.path()),
        "{name}: {}",
        d.file_path
    );
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(COUNT, Detail::Full),
        &name,
    );
    let events = via["slow"]["events"].as_array().expect("events");
    assert!(
        events.iter().any(|e| e["kind"] == "progress"),
        "{name}: progress relayed: {events:?}"
    );
    assert_eq!(
        events.last().unwrap()["kind"],
        "result",
        "{name}: progress first"
    );
    checked_descriptor(sdk_ok(&via["slow"], "slow"), &format!("{name} slow"));
    assert_eq!(
        offload_files(s.server_dir.path()),
        0,
        "{name}: the server offloaded too"
    );
    assert!(offload_files(s.gateway_dir.path()) >= 2, "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_through_the_gateway_to_an_https_server() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    for (negotiation, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let s = tls_stack(Mode::StatefulSse, &[]).await;
        let script = dir.join("client.py");
        let python = dir.join(".venv/bin/python");
        let args = [
            script.to_str().unwrap(),
            negotiation,
            &s.gateway,
            &s.direct,
            &s.direct,
        ];
        let v = run_client(&python, &args).await;
        check_sdk_run(&v, protocol, &s);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_through_the_gateway_to_an_https_server() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    let s = tls_stack(Mode::StatefulSse, &[]).await;
    let script = dir.join("client.mjs");
    let v = run_client(
        Path::new("node"),
        &[script.to_str().unwrap(), &s.gateway, &s.direct, &s.direct],
    )
    .await;
    check_sdk_run(&v, "2025-11-25", &s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_announcement_the_server_offloads_itself() {
    let s = tls_stack(Mode::StatefulSse, &["--no-announce"]).await;
    let args = json!({"query": "cache", "count": COUNT});
    let result = rmcp_call(&s.gateway, None, "recall_memories", args).await;
    let d = checked_descriptor(&result, "no announce");
    assert!(
        Path::new(&d.file_path).starts_with(s.server_dir.path()),
        "the server's own layer offloaded: {}",
        d.file_path
    );
    assert_eq!(offload_files(s.gateway_dir.path()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_party_server_through_the_gateway() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("everything_server.mjs")).current_dir(&dir);
    let (_server, port) = spawn_ready(
        "server-everything",
        cmd,
        "LISTENING ",
        Duration::from_secs(30),
    );
    let upstream = format!("http://127.0.0.1:{port}/mcp");
    let gateway_dir = tempfile::tempdir().unwrap();
    let (_gw, addr) = gateway(&upstream, gateway_dir.path());
    let via = format!("http://{addr}/mcp");
    let script = dir.join("everything_client.py");
    let python = dir.join(".venv/bin/python");
    let v = run_client(
        &python,
        &[script.to_str().unwrap(), "--gateway", &upstream, &via],
    )
    .await;
    let (direct, proxied) = (&v["direct"], &v["proxied"]);
    let mut tools = direct["tools"].as_array().unwrap().clone();
    assert!(
        tools.len() >= 5,
        "server-everything lists its tools: {tools:?}"
    );
    tools.extend([json!("lro_extract"), json!("lro_list")]);
    tools.sort_by_key(|t| t.as_str().unwrap().to_owned());
    assert_eq!(
        proxied["tools"],
        json!(tools),
        "its tools, and the gateway's two"
    );
    let (calls, through) = (
        direct["calls"].as_array().unwrap(),
        proxied["calls"].as_array().unwrap(),
    );
    for (n, (d, p)) in calls.iter().zip(through).take(4).enumerate() {
        assert_eq!(
            sdk_ok(p, "via"),
            sdk_ok(d, "direct"),
            "call {n}: small results unchanged"
        );
    }
    let d = checked_descriptor(sdk_ok(&through[4], "large"), "server-everything large echo");
    assert!(Path::new(&d.file_path).starts_with(gateway_dir.path()));
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(
        rebuilt["content"],
        sdk_ok(&calls[4], "direct large")["content"],
        "nothing lost"
    );
}

// ---- bad conditions ---------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_ca_gets_a_502_naming_tls_and_no_address() {
    let server_dir = tempfile::tempdir().unwrap();
    let (with, _) = serve_with_and_without(Mode::StatelessJson, server_dir.path()).await;
    let tls = tls_in_front(with, &pki()).await;
    let dir = tempfile::tempdir().unwrap();
    let (gw, addr) = gateway(&format!("https://{tls}/mcp"), dir.path());
    let r = post(
        &format!("http://{addr}/mcp"),
        &tools_call(1, "status", json!({}), None),
        &[],
    )
    .await;
    assert_eq!(r.status(), 502);
    let text = r.text().await.unwrap();
    assert!(text.contains("TLS"), "{text}");
    assert!(
        !text.contains("127.0.0.1") && !text.contains("certificate"),
        "{text}"
    );
    let log = wait_for_log(&gw, |log| log.contains("upstream request failed")).await;
    assert!(
        log.contains("UnknownIssuer") || log.contains("unknown issuer"),
        "{log}"
    );
}

/// Runs `lro proxy URL [extra]` with `lines` on its stdin (then closed);
/// returns the messages it printed and its stderr.
async fn proxy_run(url: &str, extra: &[&str], lines: &[Value]) -> (Vec<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut input = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(input, "{line}").unwrap();
    }
    let mut cmd = tokio::process::Command::new(lro_bin());
    cmd.args(["proxy", url, "--output-dir"])
        .arg(dir.path())
        .args(extra)
        .stdin(std::fs::File::open(input.path()).unwrap());
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("lro proxy ends within 60 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let messages = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (messages, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn init_lines(call: Value) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_speaks_https_with_a_private_ca_and_reports_an_unknown_one() {
    let s = tls_stack(Mode::StatefulSse, &[]).await;
    let ca = s.ca_dir.path().join("ca.pem");
    let call = tools_call(1, "status", json!({}), None);
    let (messages, stderr) = proxy_run(
        &s.https,
        &["--ca-cert", ca.to_str().unwrap()],
        &init_lines(call.clone()),
    )
    .await;
    let answer = messages
        .iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("{messages:?}\n{stderr}"));
    assert!(
        answer["result"]["content"][0]["text"].is_string(),
        "{answer}"
    );
    // Without the CA: each request gets a JSON-RPC error naming TLS.
    let (messages, stderr) = proxy_run(&s.https, &[], &init_lines(call)).await;
    for id in [0, 1] {
        let answer = messages
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{messages:?}\n{stderr}"));
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("TLS"), "{answer}");
        assert!(!message.contains("127.0.0.1"), "{answer}");
    }
}

/// A fault-injecting upstream (no real server fails on cue): answers each
/// request with an event-stream head and `events` events `gap` apart, then
/// either ends the stream properly or, with `die`, drops the connection
/// mid-stream. `silent`: reads the request and never answers.
#[derive(Clone, Copy)]
struct Faulty {
    events: usize,
    gap: Duration,
    die: bool,
    silent: bool,
    /// A JSON answer's head and half its body, then silence.
    half_json: bool,
}

async fn faulty_upstream(f: Faulty) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = tcp.read(&mut buf).await;
                if f.silent {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    return;
                }
                if f.half_json {
                    let body = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"half"}]}}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = tcp.write_all(head.as_bytes()).await;
                    let _ = tcp.write_all(&body.as_bytes()[..body.len() / 2]).await;
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = tcp.write_all(head.as_bytes()).await;
                for n in 0..f.events {
                    let event = format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{n}}}}}\n\n"
                    );
                    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                    let _ = tcp.write_all(chunk.as_bytes()).await;
                    tokio::time::sleep(f.gap).await;
                }
                if !f.die {
                    let end =
                        "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
                    let chunk = format!("{:x}\r\n{end}\r\n0\r\n\r\n", end.len());
                    let _ = tcp.write_all(chunk.as_bytes()).await;
                }
            });
        }
    });
    addr
}

impl Faulty {
    /// `events` events `gap` apart, then the end (`die`: a dropped connection).
    fn stream(events: usize, gap: Duration, die: bool) -> Faulty {
        Faulty {
            events,
            gap,
            die,
            silent: false,
            half_json: false,
        }
    }

    /// Never answers.
    const SILENT: Faulty = Faulty {
        events: 0,
        gap: Duration::ZERO,
        die: false,
        silent: true,
        half_json: false,
    };

    /// Sends a JSON answer's head and half its body, then nothing.
    const HALF_THEN_SILENT: Faulty = Faulty {
        events: 0,
        gap: Duration::ZERO,
        die: false,
        silent: false,
        half_json: true,
    };
}

/// `lro gateway` (with `extra` flags) in front of a [`Faulty`] upstream,
/// and the answer to one `tools/call` through it.
/// Returns the gateway, its address, the upstream URL and the answer.
async fn call_via_gateway(
    f: Faulty,
    dir: &Path,
    extra: &[&str],
) -> (Proc, SocketAddr, String, reqwest::Response) {
    let upstream = format!("http://{}/mcp", faulty_upstream(f).await);
    let (gw, addr) = gateway_with(&upstream, dir, extra);
    let call = tools_call(1, "status", json!({}), None);
    let answer = post(&format!("http://{addr}/mcp"), &call, &[]).await;
    (gw, addr, upstream, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_outlives_the_response_timeout_and_a_silent_upstream_gets_504() {
    let dir = tempfile::tempdir().unwrap();
    // Events 0.7 s apart: within the idle timeout, so never cut.
    let timeout = ["--response-timeout", "1", "--body-idle-timeout", "1"];
    let long = Faulty::stream(4, Duration::from_millis(700), false);
    let (_gw, _, _, r) = call_via_gateway(long, dir.path(), &timeout).await;
    assert_eq!(r.status(), 200);
    let body = r
        .text()
        .await
        .expect("the whole stream, past the response timeout");
    let messages = sse_messages(&body);
    assert_eq!(messages.len(), 5, "{body}");
    assert_eq!(messages[4]["id"], 1, "{body}");

    let (_gw, _, _, r) = call_via_gateway(Faulty::SILENT, dir.path(), &timeout).await;
    assert_eq!(r.status(), 504);
    assert!(r.text().await.unwrap().starts_with("gateway timeout"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_dying_mid_stream_ends_the_answer_and_nothing_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let dying = Faulty::stream(2, Duration::from_millis(50), true);
    let (_gw, addr, url, r) = call_via_gateway(dying, dir.path(), &[]).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await;
    assert!(
        body.is_err(),
        "the client sees the stream break off: {body:?}"
    );
    let health = http()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "the gateway lives on");
    // The proxy: the events that came, then a JSON-RPC error for the request.
    let call = tools_call(1, "status", json!({}), None);
    let (messages, stderr) = proxy_run(&url, &[], &[call]).await;
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 2, "{messages:?}");
    let error = messages
        .iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("{messages:?}\n{stderr}"));
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broke off"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_silent_mid_body_fails_the_call_alone_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let idle = ["--body-idle-timeout", "1"];
    let started = std::time::Instant::now();
    let (_gw, addr, _, r) = call_via_gateway(Faulty::HALF_THEN_SILENT, dir.path(), &idle).await;
    assert_eq!(r.status(), 200);
    let answer: Value = tokio::time::timeout(Duration::from_secs(20), r.json())
        .await
        .expect("an answer, not a hang")
        .expect("a whole JSON answer");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broke off"),
        "{answer}"
    );
    let health = http()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "the gateway lives on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_sent_a_byte_at_a_time_do_not_hold_the_slots() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (_gw, addr) = gateway_with(
        "http://127.0.0.1:1/mcp",
        dir.path(),
        &["--max-connections", "4", "--request-body-timeout", "1"],
    );
    // Eight clients (twice the slots) sending a body a byte a second.
    let mut slow = Vec::new();
    for _ in 0..8 {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.push(tokio::spawn(async move {
            let head = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
            if tcp.write_all(head.as_bytes()).await.is_err() {
                return true;
            }
            for _ in 0..100 {
                if tcp.write_all(b" ").await.is_err() {
                    return true;
                }
                let mut buf = [0u8; 512];
                match tokio::time::timeout(Duration::from_secs(1), tcp.read(&mut buf)).await {
                    // An answer, or the connection closed: let go.
                    Ok(_) => return true,
                    Err(_) => continue,
                }
            }
            false
        }));
    }
    // A normal client is served once the deadlines free the slots.
    let health = tokio::time::timeout(
        Duration::from_secs(15),
        http().get(format!("http://{addr}/healthz")).send(),
    )
    .await
    .expect("healthz answers while slow bodies trickle")
    .unwrap();
    assert_eq!(health.status(), 200);
    for client in slow {
        let let_go = tokio::time::timeout(Duration::from_secs(30), client).await;
        assert!(
            matches!(let_go, Ok(Ok(true))),
            "a slow body is let go: {let_go:?}"
        );
    }
}

/// An upstream answering every request with the same large JSON answer.
async fn large_answer_upstream(bytes: usize) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"pad":"{}"}}}}"#,
        "x".repeat(bytes)
    );
    let body: &'static str = Box::leak(body.into_boxed_str());
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = tcp.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(body.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reading_at_1_kb_a_second_loses_its_slot_and_a_fast_one_does_not() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let upstream = format!("http://{}/mcp", large_answer_upstream(16 << 20).await);
    let (gw, addr) = gateway_with(
        &upstream,
        dir.path(),
        &["--min-send-rate", "65536", "--max-connections", "1"],
    );
    // A fast client: the whole 16 MB answer (a `ping`, passed through);
    // its connection closed after (a client of its own, dropped).
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let fast = reqwest::Client::new();
    let whole = fast
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&ping)
        .send()
        .await
        .unwrap();
    assert_eq!(whole.bytes().await.unwrap().len(), (16 << 20) + 44);
    drop(fast);
    // A client that reads 1 KB a second takes the only slot.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = ping.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let slow = tokio::spawn(async move {
        for _ in 0..60 {
            let mut buf = [0u8; 1024];
            if matches!(tcp.read(&mut buf).await, Ok(0) | Err(_)) {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    // Another client is served once the slow one is cut off (its reading
    // stayed under the minimum rate for the grace period).
    let started = std::time::Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(40),
        reqwest::Client::new()
            .get(format!("http://{addr}/healthz"))
            .send(),
    )
    .await
    .unwrap_or_else(|_| panic!("the slow reader kept the slot: {}", gw.stderr()))
    .unwrap();
    assert_eq!(health.status(), 200);
    println!("served after {:?}", started.elapsed());
    assert!(
        gw.stderr().contains("read its answer too slowly"),
        "{}",
        gw.stderr()
    );
    slow.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_and_the_cap_holds() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (_gw, addr) = gateway_with(
        "http://127.0.0.1:1/mcp",
        dir.path(),
        &["--header-timeout", "1", "--max-connections", "3"],
    );
    // Two idle connections and one trickling its head a byte at a time.
    let mut idle = Vec::new();
    for _ in 0..2 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    let trickle = tokio::spawn(async move {
        let head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
        for byte in head.iter().cycle().take(200) {
            if slow.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    // A normal client still gets served once the timeouts free the slots.
    let health = http()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    for mut conn in idle {
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(15), conn.read(&mut buf)).await;
        assert!(
            matches!(n, Ok(Ok(0)) | Ok(Err(_))),
            "an idle connection is closed: {n:?}"
        );
    }
    let cut = tokio::time::timeout(Duration::from_secs(15), trickle).await;
    assert!(
        matches!(cut, Ok(Ok(true))),
        "the trickling client is cut off: {cut:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_request_in_flight_finish_and_leaves_no_temp_file() {
    // The upstream (no layer) tells the test when a call reaches it.
    let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
    let upstream = axum::Router::new()
        .route_service("/mcp", common::mcp::mcp_service(Mode::StatelessJson))
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let _ = arrived.send(());
                next.run(request)
            },
        ));
    let without = common::mcp::serve(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut gw, addr) = gateway(&format!("http://{without}/mcp"), dir.path());
    let url = format!("http://{addr}/mcp");
    let args = json!({"query": "cache", "count": COUNT});
    let in_flight = tokio::spawn(async move {
        post(&url, &tools_call(1, "slow_recall", args, None), &[])
            .await
            .text()
            .await
    });
    // slow_recall takes 1.5 s: the signal comes while it runs, once the
    // call has reached the upstream.
    tokio::time::timeout(Duration::from_secs(30), arrivals.recv())
        .await
        .expect("the call reaches the upstream")
        .unwrap();
    let pid = gw.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let body = tokio::time::timeout(Duration::from_secs(30), in_flight)
        .await
        .expect("the request ends")
        .unwrap()
        .expect("the request in flight finishes");
    let answer = response_message(&body, 1).unwrap_or_else(|| panic!("{body}"));
    checked_descriptor(&answer["result"], "in flight at SIGTERM");
    let status = gw.exited_within(Duration::from_secs(30)).await;
    assert!(status.success(), "{status:?}\n{}", gw.stderr());
    let log = gw.stderr();
    assert!(log.contains("SIGTERM") && log.contains("stopped"), "{log}");
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            tower_lro::store::is_offload_file_name(&name),
            "left behind: {name}"
        );
    }
    assert_eq!(offload_files(dir.path()), 1);
}

/// A listener that never accepts, its accept queue filled by held
/// connections, so that a new connection to it hangs unanswered (the
/// kernel drops its SYNs): what a connect timeout is for. `None` when the
/// queue could not be filled in 16 connections.
async fn unaccepting_upstream() -> Option<(
    tokio::net::TcpListener,
    Vec<tokio::net::TcpStream>,
    SocketAddr,
)> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..16 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(500), connect).await {
            Ok(Ok(stream)) => held.push(stream),
            _ => return Some((listener, held, addr)),
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_accepts_gets_504_after_the_connect_timeout() {
    let (_listener, _held, upstream) = unaccepting_upstream()
        .await
        .expect("a listen backlog of 1 fills within 16 connections");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{upstream}/mcp");
    let (_gw, addr) = gateway_with(&url, dir.path(), &["--connect-timeout", "1"]);
    let call = tools_call(1, "status", json!({}), None);
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        post(&format!("http://{addr}/mcp"), &call, &[]),
    )
    .await
    .expect("answered after the connect timeout, not left hanging");
    assert_eq!(answer.status(), 504);
    let body = answer.text().await.unwrap();
    assert!(body.starts_with("gateway timeout"), "{body}");
    assert!(!body.contains("127.0.0.1"), "no address: {body}");
}

// ---- files follow the caller's credentials --------------------------------

/// The text of an SDK tool result's first block, and whether it is an error.
pub(crate) fn sdk_text(v: &Value, what: &str) -> (String, bool) {
    let r = sdk_ok(v, what);
    let text = r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (text, r["isError"] == true)
}

/// The official Python SDK client through `lro gateway`, each reader in a
/// session of its own (or none, under 2026-07-28): the same bearer token
/// reads the file (lro_extract, resources/read) and lists it; another
/// token and no token get the one refusal and list nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_files_follow_credentials_across_sessions() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    for (negotiation, mode) in [("legacy", Mode::StatefulSse), ("auto", Mode::StatelessJson)] {
        let upstream = common::mcp::serve_mcp(common::mcp::mcp_service(mode), None).await;
        let out = tempfile::tempdir().unwrap();
        let (_gateway, addr) = gateway(&format!("http://{upstream}/mcp"), out.path());
        let script = dir.join("bind_client.py");
        let python = dir.join(".venv/bin/python");
        let url = format!("http://{addr}/mcp");
        let v = run_client(&python, &[script.to_str().unwrap(), negotiation, &url]).await;
        let d = &v["descriptor"];
        assert_eq!(d["offloaded"], true, "{negotiation}: {v:.400}");
        let name = d["uri"]
            .as_str()
            .unwrap()
            .trim_start_matches("lro://files/");
        // Alice, in a new session with the same token: her file.
        let again = &v["alice_again"];
        let (ids, err) = sdk_text(&again["extract"], "alice again: lro_extract");
        assert!(!err && ids.lines().count() == 2, "{negotiation}: {ids}");
        let read = sdk_ok(&again["read"], "alice again: resources/read");
        let text = read["contents"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("{\"type\":\"lro_header\""), "{text:.200}");
        let (list, _) = sdk_text(&again["list"], "alice again: lro_list");
        assert!(list.contains(name), "{negotiation}: {list}");
        // Bob and a client without credentials: one refusal, nothing listed.
        let mut refusals = Vec::new();
        for who in ["bob", "nobody"] {
            let (text, err) = sdk_text(&v[who]["extract"], who);
            assert!(err, "{negotiation}: {who} read the file: {text}");
            refusals.push(text);
            assert!(
                v[who]["read"].get("error").is_some(),
                "{negotiation}: {who} read the resource: {}",
                v[who]["read"]
            );
            let (list, _) = sdk_text(&v[who]["list"], who);
            assert!(
                !list.contains(name),
                "{negotiation}: {who} lists it: {list}"
            );
        }
        assert_eq!(refusals[0], refusals[1], "{negotiation}: refusals differ");
    }
}

// ---- exact rebuilds of what servers in other languages write --------------

/// A Python SDK server writes its records as Python, JavaScript and Go
/// servers do (JSON lines with `", "`/`": "` separators, one `json.dumps`
/// array, two-space indents, Go's escapes); through `lro gateway` each is
/// offloaded, and `lro rebuild` of the file gives back the server's text
/// byte for byte, not merely equal as JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuilds_are_byte_exact_for_the_layouts_servers_write() {
    let Some(s) = stack() else {
        return;
    };
    for kind in ["ndjson", "spaced", "indent2", "go"] {
        let args = json!({"kind": kind, "count": 300});
        let direct = rmcp_call(&s.upstream, None, "layout", args.clone()).await;
        let via = rmcp_call(&s.gateway, None, "layout", args).await;
        let via = serde_json::to_value(&via).unwrap();
        let descriptor: Value =
            serde_json::from_str(via["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(descriptor["offloaded"], true, "{kind}: {via:.300}");
        let file = descriptor["file_path"].as_str().unwrap();
        let out = Command::new(lro_bin())
            .args(["rebuild", file])
            .output()
            .unwrap();
        assert!(out.status.success(), "{kind}: {out:?}");
        let rebuilt: Value = serde_json::from_slice(&out.stdout).unwrap();
        let direct = serde_json::to_value(&direct).unwrap();
        let want = direct["content"][0]["text"].as_str().unwrap();
        let got = rebuilt["content"][0]["text"].as_str().unwrap();
        assert!(
            got == want,
            "{kind}: not byte for byte\n  want {:?}\n   got {:?}",
            &want[..want.len().min(160)],
            &got[..got.len().min(160)]
        );
    }
}

/// A streamed answer is logged when its body ends, with the time to its
/// last byte: the Python server waits 1.5 s between its progress events
/// and its result, so the answer took at least that long (the log said
/// `ms=0`, the time to the headers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_logged_with_its_whole_time() {
    let Some(s) = stack() else {
        return;
    };
    let slow = rmcp_call(&s.gateway, None, "slow_records", json!({"count": 300})).await;
    assert!(!slow.content.is_empty());
    // The answer to the call is the event stream with the most bytes (the
    // others answer initialize and notifications).
    let streams = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("text/event-stream") && l.contains("end=\"complete\""))
            .map(str::to_owned)
            .collect()
    };
    let field_of = |line: &str, name: &str| -> u64 {
        let at = line
            .find(&format!(" {name}="))
            .unwrap_or_else(|| panic!("{name} in {line}"));
        line[at + name.len() + 2..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {line}"))
    };
    let log = wait_for_log(&s.gateway_proc, |log| {
        streams(log).iter().any(|l| field_of(l, "bytes") > 1000)
    })
    .await;
    let line = streams(&log)
        .into_iter()
        .max_by_key(|l| field_of(l, "bytes"))
        .unwrap_or_else(|| panic!("no complete event-stream line in:\n{log}"));
    let field = |name: &str| field_of(&line, name);
    assert!(field("ms") >= 1500, "{line}");
    assert!(field("bytes") > 0, "{line}");
    assert!(field("ms") >= field("ms_to_headers"), "{line}");
}

/// A client profile asking for what the layer cannot give (the
/// `lro_extract` guidance with extraction off) is said in the log at start;
/// that client gets the shell guidance (`config::client` tests).
#[test]
fn a_client_profile_the_layer_cannot_meet_is_logged_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lro.toml");
    std::fs::write(
        &config,
        "[prompt.offload]\nextraction = false\n\n[prompt.offload.clients.Some-Agent]\nguidance = \"extract\"\n",
    )
    .unwrap();
    let (gw, _addr) = gateway_with(
        "http://127.0.0.1:9/mcp",
        &dir.path().join("out"),
        &["--config", config.to_str().unwrap()],
    );
    let said = |log: &str| log.contains("client profile asks for the lro_extract guidance");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !said(&gw.stderr()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = gw.stderr();
    assert!(said(&log) && log.contains("some_agent"), "{log}");
}
