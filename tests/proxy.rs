//! `lro proxy`, the spec's local LRO proxy, as an agent runs it: the
//! official Python SDK's stdio client launches the real `lro` binary, which
//! talks streamable HTTP to an rmcp server on loopback that runs its own
//! `OffloadLayer`. The proxy registers as an LRO proxy, so the server
//! answers in full and the offloading happens once, in the proxy's own
//! directory.

mod common;

use std::path::Path;
use std::time::Duration;

use common::mcp::{Mode, memories, serve_with_and_without};
use common::{check_recipe6, checked_descriptor, interop_setup, output_within};
use serde_json::Value;
use tower_lro::Detail;

/// How long one client run may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// What the client asks recall_memories for.
const COUNT: usize = 200;

/// Runs the Python stdio client through `lro proxy` against the server in
/// `mode`; returns what it printed, the proxy's and the server's directories.
async fn python_through_proxy(
    mode: Mode,
    negotiation: &str,
) -> Option<(Value, tempfile::TempDir, tempfile::TempDir)> {
    let dir = interop_setup()?;
    let server_dir = tempfile::tempdir().unwrap();
    let proxy_dir = tempfile::tempdir().unwrap();
    let (with, _without) = serve_with_and_without(mode, server_dir.path()).await;
    let mut cmd = tokio::process::Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("stdio_client.py"))
        .arg(negotiation)
        .arg(env!("CARGO_BIN_EXE_lro"))
        .arg(format!("http://{with}/mcp"))
        .arg(proxy_dir.path());
    let out = output_within(cmd, CLIENT_TIMEOUT, "python stdio client").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stdout}\n{stderr}");
    let v = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client printed no JSON ({e}): {stdout}\n{stderr}"));
    Some((v, proxy_dir, server_dir))
}

fn ok<'a>(v: &'a Value, what: &str) -> &'a Value {
    assert!(v.get("error").is_none(), "{what}: {}", v["error"]);
    &v["ok"]
}

fn offload_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref().is_ok_and(|e| {
                    tower_lro::is_offload_file_name(&e.file_name().to_string_lossy())
                })
            })
            .count()
        })
        .unwrap_or(0)
}

/// What every run must show.
fn check(v: &Value, protocol: &str, proxy_dir: &Path, server_dir: &Path) {
    let name = format!("python {}", v["mode"]);
    assert_eq!(
        v["protocolVersion"], protocol,
        "{name}: negotiated through the proxy"
    );
    let tools = v["tools"].as_array().expect("tools listed");
    for tool in ["recall_memories", "status", "slow_recall"] {
        assert!(
            tools.contains(&Value::from(tool)),
            "{name}: {tool} listed: {tools:?}"
        );
    }
    let small = ok(&v["small"], "small");
    assert!(
        small["content"][0]["text"].is_string(),
        "{name}: small result inline: {small}"
    );
    let large = ok(&v["large"], "large");
    let d = checked_descriptor(large, &format!("{name} large"));
    assert_eq!(d.summary.count, COUNT, "{name}");
    assert!(
        Path::new(&d.file_path).starts_with(proxy_dir),
        "{name}: the file is the proxy's: {}",
        d.file_path
    );
    check_recipe6(
        &d.jq_recipes[5].command,
        &memories(COUNT, Detail::Full),
        &name,
    );
    // The server saw the proxy flag: it offloaded nothing itself.
    assert_eq!(
        offload_files(server_dir),
        0,
        "{name}: the server offloaded too"
    );
    assert!(
        offload_files(proxy_dir) >= 2,
        "{name}: large and slow offloaded by the proxy"
    );
    let events = v["slow"]["events"].as_array().expect("events");
    let progress = events.iter().filter(|e| e["kind"] == "progress").count();
    assert_eq!(progress, 2, "{name}: progress relayed: {events:?}");
    assert_eq!(
        events.last().unwrap()["kind"],
        "result",
        "{name}: progress before the result"
    );
    checked_descriptor(ok(&v["slow"], "slow"), &format!("{name} slow"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_stdio_client_through_the_proxy_sse_session() {
    let Some((v, proxy_dir, server_dir)) = python_through_proxy(Mode::StatefulSse, "legacy").await
    else {
        return;
    };
    check(&v, "2025-11-25", proxy_dir.path(), server_dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_stdio_client_through_the_proxy_json_stateless() {
    let Some((v, proxy_dir, server_dir)) =
        python_through_proxy(Mode::StatelessJson, "legacy").await
    else {
        return;
    };
    check(&v, "2025-11-25", proxy_dir.path(), server_dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_stdio_client_through_the_proxy_2026_07_28() {
    let Some((v, proxy_dir, server_dir)) = python_through_proxy(Mode::StatefulSse, "auto").await
    else {
        return;
    };
    check(&v, "2026-07-28", proxy_dir.path(), server_dir.path());
}
