//! `lro proxy`, the spec's local LRO proxy, as an agent runs it: the
//! official Python SDK's stdio client launches the real `lro` binary, which
//! talks streamable HTTP to an rmcp server on loopback that runs its own
//! `OffloadLayer`. The proxy registers as an LRO proxy, so the server
//! answers in full and the offloading happens once, in the proxy's own
//! directory.

use crate::common;
#[path = "../../../examples/support/conformance_server.rs"]
mod conformance_server;

use std::path::Path;
use std::time::Duration;

use common::mcp::{Mode, memories, serve_with_and_without};
use common::{check_recipe6, checked_descriptor, interop_setup, output_within};
use serde_json::Value;
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;

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
    let python = dir.join(".venv/bin/python");
    let url = format!("http://{with}/mcp");
    let v = run_agent(
        &python,
        "stdio_client.py",
        &[negotiation],
        &url,
        proxy_dir.path(),
    )
    .await;
    Some((v, proxy_dir, server_dir))
}

/// Runs the TypeScript stdio client through `lro proxy` against the server
/// in `mode`.
async fn typescript_through_proxy(
    mode: Mode,
) -> Option<(Value, tempfile::TempDir, tempfile::TempDir)> {
    interop_setup()?;
    let server_dir = tempfile::tempdir().unwrap();
    let proxy_dir = tempfile::tempdir().unwrap();
    let (with, _without) = serve_with_and_without(mode, server_dir.path()).await;
    let url = format!("http://{with}/mcp");
    let v = run_agent(
        Path::new("node"),
        "stdio_client.mjs",
        &[],
        &url,
        proxy_dir.path(),
    )
    .await;
    Some((v, proxy_dir, server_dir))
}

/// Runs an agent script of `tests/interop` (`program script [leading...]
/// LRO URL PROXY_DIR`: it launches `lro proxy URL --output-dir PROXY_DIR`
/// as its stdio server) and returns the JSON object it prints.
async fn run_agent(
    program: &Path,
    script: &str,
    leading: &[&str],
    url: &str,
    proxy_dir: &Path,
) -> Value {
    let dir = common::interop_dir();
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg(dir.join(script))
        .args(leading)
        .arg(env!("CARGO_BIN_EXE_lro"))
        .arg(url)
        .arg(proxy_dir)
        .current_dir(&dir);
    let out = output_within(cmd, CLIENT_TIMEOUT, script).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {stdout}\n{stderr}"))
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
                    tower_lro::store::is_offload_file_name(&e.file_name().to_string_lossy())
                })
            })
            .count()
        })
        .unwrap_or(0)
}

/// What every run must show.
fn check(v: &Value, protocol: &str, proxy_dir: &Path, server_dir: &Path) {
    let name = format!("{} {}", v["client"], v["mode"]);
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
    // The proxy's layer answers lro_extract on its own files: jq -c's output.
    let recipe6 = ok(&v["recipe6"], "lro_extract recipe 6");
    let compact = d.jq_recipes[5].command.replacen("| jq ", "| jq -c ", 1);
    assert_eq!(
        recipe6["content"][0]["text"].as_str(),
        Some(common::run_recipe(&compact).as_str()),
        "{name}: lro_extract through the proxy"
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_stdio_client_through_the_proxy_sse_session() {
    let Some((v, proxy_dir, server_dir)) = typescript_through_proxy(Mode::StatefulSse).await else {
        return;
    };
    check(&v, "2025-11-25", proxy_dir.path(), server_dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_stdio_client_through_the_proxy_json_stateless() {
    let Some((v, proxy_dir, server_dir)) = typescript_through_proxy(Mode::StatelessJson).await
    else {
        return;
    };
    check(&v, "2025-11-25", proxy_dir.path(), server_dir.path());
}

/// Runs `lro proxy URL` with `input` on stdin (then closed); returns stdout
/// lines, stderr and whether it exited successfully.
async fn proxy_with_input(url: &str, input: &str) -> (Vec<Value>, String, bool) {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["proxy", url, "--output-dir"])
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("lro runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the proxy ends when stdin ends")
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line not JSON ({e}): {l}"))
        })
        .collect();
    (
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_gets_each_request_an_error_and_garbage_a_parse_error() {
    // A port nothing listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n",
        "this is not json\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#,
        "\n",
    );
    let (lines, stderr, success) =
        proxy_with_input(&format!("http://127.0.0.1:{port}/mcp"), input).await;
    assert!(success, "a closed stdin ends the proxy cleanly: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let by_id = |id: Value| lines.iter().find(|l| l["id"] == id).cloned();
    for id in [Value::from(7), Value::from("x")] {
        let answer =
            by_id(id.clone()).unwrap_or_else(|| panic!("request {id} answered: {lines:?}"));
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("cannot be reached"), "{message}");
        assert!(
            !message.contains("127.0.0.1") && !message.contains("os error"),
            "no address or OS error: {message}"
        );
    }
    let parse = by_id(Value::Null).expect("the parse error");
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(lines.len(), 3, "nothing for the notification: {lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_upstream_url_is_one_line_and_a_failure() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["proxy", "ftp://example/mcp"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("lro: upstream URL") && err.lines().count() == 1,
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_request_is_relayed_both_ways() {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let Some(dir) = interop_setup() else {
        return;
    };
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true);
    let service = StreamableHttpService::new(
        || Ok(conformance_server::ConformanceServer::new()),
        std::sync::Arc::new(LocalSessionManager::default()),
        config,
    );
    let server_dir = tempfile::tempdir().unwrap();
    let layer = tower_lro::offload::OffloadLayer::new(
        OffloadConfig::default().output_dir(server_dir.path()),
    );
    let addr = common::mcp::serve_mcp(service, Some(layer)).await;
    let proxy_dir = tempfile::tempdir().unwrap();
    let python = dir.join(".venv/bin/python");
    let url = format!("http://{addr}/mcp");
    let v = run_agent(&python, "stdio_sampling.py", &[], &url, proxy_dir.path()).await;
    assert_eq!(
        v["asked"],
        serde_json::json!(["what is 2+2?"]),
        "the server's request reached the agent: {v}"
    );
    let text = ok(&v, "test_sampling")["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        text, "LLM response: relayed both ways",
        "the agent's answer reached the server"
    );
}

/// Reads stdout lines until the answer to `id` (bounded in time).
async fn answer_to(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    id: u64,
) -> Value {
    let wait = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
        panic!("stdout ended before the answer to {id}");
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("no answer to {id} within 20 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_server_dropped_is_renewed_without_the_agent_noticing() {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let manager = std::sync::Arc::new(LocalSessionManager::default());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_sse_keep_alive(None);
    let service =
        StreamableHttpService::new(|| Ok(common::mcp::MemoryServer), manager.clone(), config);
    let addr = common::mcp::serve_mcp(service, None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["proxy", &format!("http://{addr}/mcp"), "--output-dir"])
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut say = async |line: String| {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap()
    };
    say(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.into()).await;
    assert!(answer_to(&mut lines, 1).await["result"].is_object());
    say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()).await;
    let status = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"status","arguments":{{}}}}}}"#
        )
    };
    say(status(2)).await;
    let first = answer_to(&mut lines, 2).await;
    assert!(first["result"]["content"].is_array(), "{first}");
    // The server forgets every session.
    let ids: Vec<_> = manager.sessions.read().await.keys().cloned().collect();
    assert_eq!(ids.len(), 1);
    for id in &ids {
        manager.close_session(id).await.unwrap();
    }
    say(status(3)).await;
    let again = answer_to(&mut lines, 3).await;
    assert_eq!(
        again["result"], first["result"],
        "answered in a new session: {again}"
    );
    let now: Vec<_> = manager.sessions.read().await.keys().cloned().collect();
    assert_eq!(now.len(), 1, "one new session");
    assert_ne!(now, ids);
}

/// Starts the third-party `@modelcontextprotocol/server-everything` in its
/// streamable-HTTP mode on a free loopback port (killed on drop).
async fn everything_server(dir: &Path) -> (tokio::process::Child, u16) {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(dir.join("everything_server.mjs"))
        .current_dir(dir)
        .stderr(std::process::Stdio::null());
    common::start_listening(cmd, "server-everything").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_party_server_through_the_proxy() {
    let Some(dir) = interop_setup() else {
        return;
    };
    let (_server, port) = everything_server(&dir).await;
    let proxy_dir = tempfile::tempdir().unwrap();
    let python = dir.join(".venv/bin/python");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let v = run_agent(&python, "everything_client.py", &[], &url, proxy_dir.path()).await;
    let (direct, proxied) = (&v["direct"], &v["proxied"]);
    let mut tools = direct["tools"].as_array().unwrap().clone();
    assert!(
        tools.len() >= 5,
        "server-everything lists its tools: {tools:?}"
    );
    tools.extend([Value::from("lro_extract"), Value::from("lro_list")]);
    tools.sort_by_key(|t| t.as_str().unwrap().to_owned());
    assert_eq!(
        proxied["tools"],
        Value::from(tools),
        "its tools, and the proxy's two"
    );
    let (calls, through) = (
        direct["calls"].as_array().unwrap(),
        proxied["calls"].as_array().unwrap(),
    );
    for (n, (d, p)) in calls.iter().zip(through).take(4).enumerate() {
        assert_eq!(
            ok(p, "proxied"),
            ok(d, "direct"),
            "call {n}: small results unchanged"
        );
    }
    // The large echo: a descriptor, and the file rebuilds the direct answer.
    let d = checked_descriptor(ok(&through[4], "large"), "server-everything large echo");
    assert!(Path::new(&d.file_path).starts_with(proxy_dir.path()));
    let rebuilt: Value =
        serde_json::from_str(&tower_lro::offload::rebuild_file(&d.file_path).unwrap()).unwrap();
    assert_eq!(
        rebuilt["content"],
        ok(&calls[4], "direct large")["content"],
        "nothing lost"
    );
    let text = rebuilt["content"][0]["text"].as_str().unwrap();
    assert!(
        text.ends_with(v["large"].as_str().unwrap()),
        "the echo is whole"
    );
}
