//! Interop: the official MCP SDK clients (TypeScript `@modelcontextprotocol/sdk`
//! with `StreamableHTTPClientTransport`, Python `mcp` with its streamable-http
//! client) talking to the rmcp `MemoryServer` with and without the layer, in
//! both server modes (SSE with sessions, JSON stateless).
//!
//! Each client runs as a subprocess (`tests/interop/client.mjs`,
//! `tests/interop/client.py`), does the same calls against both servers and a
//! third, corrupted one, and prints JSON; the assertions are all here.
//! `LRO_INTEROP_DUMP=DIR cargo test --test sdks interop_sdks` keeps that JSON in DIR.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use common::mcp::{Mode, mcp_service, memories, serve, serve_with_and_without};
use common::{check_recipe6, checked_descriptor, file_records, interop_setup, output_within};
use serde_json::{Value, json};
use tower_lro::descriptor::{Detail, OffloadResponse};

/// How long one client subprocess may run before the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// What both clients ask the memory tools for.
const COUNT: usize = 200;

/// A negative control for output-schema validation: POST responses of the
/// server without the layer with `structuredContent.count` turned into a
/// string, which the tool's `outputSchema` forbids (`count` is an integer).
async fn corrupt_structured_content(req: Request, next: Next) -> Response {
    let post = req.method() == http::Method::POST;
    let resp = next.run(req).await;
    if !post {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = tokio::time::timeout(
        Duration::from_secs(30),
        axum::body::to_bytes(body, 256 << 20),
    )
    .await
    .expect("response body within 30 s")
    .expect("response body readable");
    let text = String::from_utf8(bytes.to_vec())
        .expect("utf-8 body")
        .replace(
            r#""structuredContent":{"count":"#,
            r#""structuredContent":{"count":"corrupted","was":"#,
        );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(text))
}

struct Servers {
    with: SocketAddr,
    without: SocketAddr,
    corrupted: SocketAddr,
    _dir: tempfile::TempDir,
}

async fn servers(mode: Mode) -> Servers {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = serve_with_and_without(mode, dir.path()).await;
    let corrupted = Router::new()
        .route_service("/mcp", mcp_service(mode))
        .layer(middleware::from_fn(corrupt_structured_content));
    Servers {
        with,
        without,
        corrupted: serve(corrupted).await,
        _dir: dir,
    }
}

/// Runs one client subprocess (killed on timeout or drop) and parses the JSON
/// it prints.
async fn run_client(program: &Path, args: &[String]) -> Value {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).current_dir(common::interop_dir());
    let out = output_within(cmd, CLIENT_TIMEOUT, &format!("client {args:?}")).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client {args:?} failed: {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client printed no JSON ({e}):\n{stdout}\nstderr: {stderr}"));
    if let Some(dir) = std::env::var_os("LRO_INTEROP_DUMP") {
        // For debugging: keep what the client printed.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{}-{n}.json", v["client"].as_str().unwrap_or("client"));
        let _ = std::fs::write(Path::new(&dir).join(name), stdout.as_bytes());
    }
    eprintln!(
        "{} {} ({:?}): {:.1} s",
        v["client"],
        v["sdk"],
        args.first(),
        started.elapsed().as_secs_f64()
    );
    v
}

fn urls(s: &Servers) -> [String; 3] {
    [s.with, s.without, s.corrupted].map(|a| format!("http://{a}/mcp"))
}

/// Runs the TypeScript client; the servers (and the offloaded files) are
/// returned so they outlive the checks. `None`: skipped (see
/// `common::require`).
async fn ts_client(mode: Mode) -> Option<(Value, Servers)> {
    let dir = interop_setup()?;
    let s = servers(mode).await;
    let mut args = vec![dir.join("client.mjs").display().to_string()];
    args.extend(urls(&s));
    Some((run_client(Path::new("node"), &args).await, s))
}

/// Runs the Python client (`legacy` or `auto` negotiation). `None`: skipped.
async fn py_client(mode: Mode, negotiation: &str) -> Option<(Value, Servers)> {
    let dir = interop_setup()?;
    let s = servers(mode).await;
    let mut args = vec![
        dir.join("client.py").display().to_string(),
        negotiation.to_owned(),
    ];
    args.extend(urls(&s));
    Some((run_client(&dir.join(".venv/bin/python"), &args).await, s))
}

// ---- checks -----------------------------------------------------------------

/// The result of a call the client reported as successful.
fn ok<'a>(v: &'a Value, what: &str) -> &'a Value {
    assert!(
        v.get("error").is_none(),
        "{what}: the client rejected the result: {}",
        v["error"]
    );
    &v["ok"]
}

/// The file rebuilt into the original result: its blocks and structured
/// content equal what the client got from the server without the layer.
fn check_rebuilt(d: &OffloadResponse, plain: &Value, what: &str) {
    let rebuilt: Value = serde_json::from_str(
        &tower_lro::offload::rebuild_file(&d.file_path).expect("file rebuilds"),
    )
    .unwrap();
    assert_eq!(
        rebuilt["content"], plain["content"],
        "{what}: rebuilt content"
    );
    assert_eq!(
        rebuilt.get("structuredContent"),
        plain.get("structuredContent"),
        "{what}: rebuilt structuredContent"
    );
}

/// Progress events reached the client before the result, as they happened
/// (the server sleeps 1.5 s between its last progress and its result).
fn check_progress(slow: &Value, what: &str) {
    let events = slow["events"].as_array().expect("events");
    let progress: Vec<&Value> = events.iter().filter(|e| e["kind"] == "progress").collect();
    assert_eq!(
        progress.len(),
        2,
        "{what}: progress notifications: {events:?}"
    );
    assert_eq!(
        events.last().map(|e| &e["kind"]),
        Some(&json!("result")),
        "{what}: progress after the result: {events:?}"
    );
    assert_eq!(progress[0]["progress"], 1.0, "{what}");
    assert_eq!(progress[1]["progress"], 2.0, "{what}");
    assert_eq!(progress[1]["total"], 3.0, "{what}");
    let last = progress[1]["t"].as_f64().unwrap();
    let result = events.last().unwrap()["t"].as_f64().unwrap();
    assert!(
        result - last >= 750.0,
        "{what}: progress arrived {:.0} ms before the result, not as it was sent: {events:?}",
        result - last
    );
}

fn image_blocks(result: &Value) -> Vec<&Value> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "image")
        .collect()
}

/// The text blocks of a tool result the client accepted.
fn texts<'a>(v: &'a Value, what: &str) -> Vec<&'a str> {
    let result = ok(v, what);
    assert_ne!(
        result["isError"],
        json!(true),
        "{what}: a tool error: {result}"
    );
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no content: {result}"))
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// What a shell-less agent got over MCP from the descriptor of the large
/// result (the client's `extraction` report): each answer equals what the
/// descriptor's shell command prints under jq 1.6 on the same file.
fn check_extraction(x: &Value, d: &OffloadResponse, what: &str) {
    assert_eq!(x["file_path"], json!(d.file_path), "{what}");
    // Recipe 6 whole (a short answer): jq -c's output, byte for byte
    // (lro_extract prints compact values, one per line).
    let compact = |command: &str| command.replacen("| jq ", "| jq -c ", 1);
    let recipe6 = texts(&x["recipe6"], &format!("{what} recipe 6"));
    assert_eq!(
        recipe6,
        [common::run_recipe(&compact(&d.jq_recipes[5].command))],
        "{what}: recipe 6"
    );
    // Recipe 2 with a namespace parameter: the first page of jq -c's output for
    // the command with that namespace, and where the next page starts.
    let namespace = x["namespace"].as_str().expect("a namespace");
    let command = compact(&d.jq_recipes[1].command).replace("_semantic", namespace);
    let jq = common::run_recipe(&command);
    let recipe2 = texts(&x["recipe2"], &format!("{what} recipe 2"));
    let shown = recipe2[0].lines().count();
    assert!(shown > 0, "{what}: recipe 2 printed nothing");
    let expected: Vec<&str> = jq.lines().take(shown).collect();
    assert_eq!(
        recipe2[0].lines().collect::<Vec<_>>(),
        expected,
        "{what}: recipe 2 page"
    );
    if shown < jq.lines().count() {
        assert!(
            recipe2
                .get(1)
                .is_some_and(|t| t.contains(&format!("offset={shown}"))),
            "{what}: next offset: {recipe2:?}"
        );
    }
    // A custom query by pages of 50 lines.
    let ids: Vec<String> = memories(COUNT, Detail::Full)
        .iter()
        .map(|m| m["id"].to_string())
        .collect();
    for (page, from) in [("page1", 0), ("page2", 50)] {
        let text = texts(&x[page], &format!("{what} {page}"));
        assert_eq!(
            text[0].lines().collect::<Vec<_>>(),
            ids[from..from + 50],
            "{what}: {page}"
        );
    }
    // Arguments that break the tool's contract: a tool error, not a failure.
    assert_eq!(
        ok(&x["bad"], "bad")["isError"],
        json!(true),
        "{what}: recipe and query together"
    );
    // lro_list names the file.
    let name = Path::new(&d.file_path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let list = texts(&x["list"], &format!("{what} lro_list"));
    assert!(
        list.iter().any(|t| t.contains(name)),
        "{what}: lro_list: {list:?}"
    );
    // The resource_link's resource is the file.
    assert_eq!(
        x["link"]["uri"],
        json!(tower_lro::store::resource_uri(name)),
        "{what}: resource_link"
    );
    let resource = ok(&x["resource"], "resources/read");
    let contents = &resource["contents"][0];
    assert_eq!(contents["uri"], x["link"]["uri"], "{what}");
    let file = std::fs::read_to_string(&d.file_path).unwrap();
    assert_eq!(
        contents["text"].as_str(),
        Some(file.as_str()),
        "{what}: resources/read is the file"
    );
}

/// Everything one client run must show.
fn check_client(v: &Value, protocol: &str) {
    let name = format!("{} {}", v["client"], v["mode"]);
    let (with, without) = (&v["with"], &v["without"]);
    for side in [with, without] {
        assert_eq!(
            side["protocolVersion"], protocol,
            "{name}: negotiated version"
        );
    }

    // tools/list: the server's tools, and the layer's two.
    let mut listed = without["tools"].as_array().unwrap().clone();
    listed.extend([json!("lro_extract"), json!("lro_list")]);
    listed.sort_by_key(|t| t.as_str().unwrap_or_default().to_owned());
    assert_eq!(with["tools"], json!(listed), "{name}: tools");
    for tool in [
        "chart",
        "recall_memories",
        "recall_structured",
        "slow_recall",
        "status",
    ] {
        assert!(
            with["tools"].as_array().unwrap().contains(&json!(tool)),
            "{name}: {tool} listed"
        );
    }
    assert_eq!(with["outputSchemas"], without["outputSchemas"], "{name}");
    assert!(
        with["outputSchemas"]["recall_structured"].is_object(),
        "{name}: recall_structured declares an outputSchema"
    );

    // A small tool: identical result.
    assert_eq!(
        ok(&with["small"], "small"),
        ok(&without["small"], "small plain"),
        "{name}: small result"
    );

    // A large tool: descriptor, file, jq, rebuild.
    let large = ok(&with["large"], "large");
    let plain = ok(&without["large"], "large plain");
    let d = checked_descriptor(large, &format!("{name} large"));
    assert_eq!(d.summary.count, COUNT, "{name}");
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(COUNT, Detail::Full),
        &format!("{name} large"),
    );
    check_rebuilt(&d, plain, &format!("{name} large"));
    check_extraction(&with["extraction"], &d, &format!("{name} extraction"));
    // No outputSchema: structuredContent carries the descriptor beside the
    // emptied array (a client showing structuredContent reads it there).
    let beside = |result: &Value| {
        let mut structured = result["structuredContent"].clone();
        let descriptor = structured
            .as_object_mut()
            .and_then(|o| o.remove("offloaded"));
        (structured, descriptor)
    };
    let (rest, descriptor) = beside(large);
    assert_eq!(
        rest,
        json!({"count": COUNT, "memories": []}),
        "{name}: large"
    );
    assert_eq!(
        descriptor.as_ref().and_then(|d| d["file_path"].as_str()),
        Some(d.file_path.as_str()),
        "{name}: the descriptor in structuredContent"
    );

    // A tool with an (open) outputSchema: the client validated and accepted
    // the offloaded result, the descriptor added to structuredContent ...
    let structured = ok(&with["structured"], "structured");
    let plain = ok(&without["structured"], "structured plain");
    assert_eq!(
        plain["structuredContent"]["memories"]
            .as_array()
            .map(Vec::len),
        Some(COUNT),
        "{name}: the server without the layer sends {COUNT} records"
    );
    let d = checked_descriptor(structured, &format!("{name} structured"));
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(COUNT, Detail::Full),
        &format!("{name} structured"),
    );
    check_rebuilt(&d, plain, &format!("{name} structured"));
    let (rest, descriptor) = beside(structured);
    assert_eq!(
        rest,
        json!({"count": COUNT, "memories": []}),
        "{name}: structuredContent kept with its records emptied"
    );
    assert_eq!(
        descriptor
            .as_ref()
            .and_then(|d| d["summary"]["count"].as_u64()),
        Some(COUNT as u64),
        "{name}: ... and the descriptor beside them"
    );
    // ... and the same client does reject structuredContent that breaks the schema.
    let err = v["corrupted"]["error"].as_str().unwrap_or_else(|| {
        panic!(
            "{name}: the corrupted result was accepted: {}",
            v["corrupted"]
        )
    });
    assert!(
        err.to_lowercase().contains("structured content"),
        "{name}: unexpected rejection: {err}"
    );

    // An image and a large text: the image intact, the text offloaded.
    let chart = ok(&with["chart"], "chart");
    let plain = ok(&without["chart"], "chart plain");
    let d = checked_descriptor(chart, &format!("{name} chart"));
    assert_eq!(
        image_blocks(chart),
        image_blocks(plain),
        "{name}: image block"
    );
    assert_eq!(image_blocks(chart).len(), 1, "{name}");
    assert_eq!(
        file_records(Path::new(&d.file_path)).len(),
        600,
        "{name}: chart rows in the file"
    );
    check_rebuilt(&d, plain, &format!("{name} chart"));

    // Progress before the result, with and without the layer.
    check_progress(&without["slow"], &format!("{name} slow (no layer)"));
    check_progress(&with["slow"], &format!("{name} slow"));
    let slow = ok(&with["slow"], "slow");
    let d = checked_descriptor(slow, &format!("{name} slow"));
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(COUNT, Detail::Full),
        &format!("{name} slow"),
    );
}

// ---- the runs ---------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_sse_session() {
    let Some((v, _servers)) = ts_client(Mode::StatefulSse).await else {
        return;
    };
    check_client(&v, "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_json_stateless() {
    let Some((v, _servers)) = ts_client(Mode::StatelessJson).await else {
        return;
    };
    check_client(&v, "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sse_session() {
    let Some((v, _servers)) = py_client(Mode::StatefulSse, "legacy").await else {
        return;
    };
    check_client(&v, "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_json_stateless() {
    let Some((v, _servers)) = py_client(Mode::StatelessJson, "legacy").await else {
        return;
    };
    check_client(&v, "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2026_07_28_sse_server() {
    let Some((v, _servers)) = py_client(Mode::StatefulSse, "auto").await else {
        return;
    };
    check_client(&v, "2026-07-28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2026_07_28_json_server() {
    let Some((v, _servers)) = py_client(Mode::StatelessJson, "auto").await else {
        return;
    };
    check_client(&v, "2026-07-28");
}
