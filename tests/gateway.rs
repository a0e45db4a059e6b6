//! `examples/gateway.rs` in front of an MCP server written with the official
//! Python SDK (`tests/interop/py_server.py`, mcp 2.3.0), both run as real
//! subprocesses on loopback and driven by the rmcp client and raw HTTP; and
//! the self-demos of the other examples (`axum_router`, `rmcp_server`,
//! `hyper_service`), run as binaries.
//!
//! The example binaries are the ones `cargo test` builds next to this test
//! (`target/<profile>/examples/`); when one is missing (e.g. `cargo test
//! --test gateway`), it is built with `cargo build --example NAME`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use common::mcp::{rmcp_call, sse_messages, tools_call};
use common::{checked_descriptor, json_stream, output_within_blocking, require_jq, run_recipe};
use serde_json::{Value, json};
use tower_lro::{OffloadResponse, rebuild_file};

// ---- child processes ------------------------------------------------------

/// A child process, killed and reaped on drop; its stderr is kept (capped)
/// for failure messages.
struct Proc {
    name: String,
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.name, self.child.id())
    }
}

/// Spawns `cmd` and waits, at most `timeout`, for a stdout line starting with
/// `prefix`; returns the process and the rest of that line. Both pipes keep
/// being drained afterwards, so the child never blocks on a full pipe.
fn spawn_ready(name: &str, mut cmd: Command, prefix: &str, timeout: Duration) -> (Proc, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr_pipe = child.stderr.take().expect("piped stderr");
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr_pipe);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let mut s = sink.lock().unwrap();
            if s.len() < 1 << 20 {
                s.push_str(&String::from_utf8_lossy(&line));
            }
            line.clear();
        }
    });
    let (tx, rx) = mpsc::channel();
    let prefix_owned = prefix.to_owned();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix(&prefix_owned) {
                let _ = tx.send(rest.trim().to_owned());
            }
        }
    });
    let mut proc = Proc {
        name: name.to_owned(),
        child,
        stderr,
    };
    match rx.recv_timeout(timeout) {
        Ok(rest) => (proc, rest),
        Err(_) => {
            let status = proc.child.try_wait().ok().flatten();
            // Give the stderr thread a moment to collect the last lines.
            std::thread::sleep(Duration::from_millis(200));
            panic!(
                "{name} did not print `{prefix}` within {timeout:?} (exit status: {status:?})\nstderr:\n{}",
                proc.stderr()
            );
        }
    }
}

/// Waits until `addr` accepts TCP connections (50 tries, 100 ms apart).
fn wait_for_port(addr: SocketAddr) {
    for _ in 0..50 {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        // A real process starting up: polled on the wall clock.
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{addr} does not accept connections after 5 s");
}

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    for p in ["src", "examples", "Cargo.toml", "Cargo.lock"] {
        walk(&root.join(p), &mut newest);
    }
    newest
}

/// Path of an example binary built by cargo next to this test binary;
/// (re)builds it with `cargo build --example` if it is missing or older
/// than the sources (e.g. after `cargo test --test gateway`, which does not
/// build examples).
fn example_binary(name: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/gateway-xxxx -> target/<profile>
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
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
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

/// The Python SDK server on a free port (`extra`: `--json`, `--stateless`);
/// returns it and its port. `None`: skipped (no interop tooling; see
/// `common::require`).
fn python_server(extra: &[&str]) -> Option<(Proc, u16)> {
    let dir = common::interop_setup()?;
    let mut cmd = Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("py_server.py")).arg("0").args(extra);
    let (proc, port) = spawn_ready(
        "python MCP server",
        cmd,
        "LISTENING ",
        Duration::from_secs(60),
    );
    let port: u16 = port.parse().expect("port number");
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)));
    Some((proc, port))
}

/// The gateway in front of `upstream`, writing files into `dir`.
fn gateway(upstream: &str, dir: &Path) -> (Proc, SocketAddr) {
    let mut cmd = Command::new(example_binary("gateway"));
    cmd.args(["--upstream", upstream, "--listen", "127.0.0.1:0"])
        .args(["--threshold-tokens", "1600", "--ttl-seconds", "600"])
        .arg("--output-dir")
        .arg(dir)
        .env("RUST_LOG", "info");
    let (proc, rest) = spawn_ready(
        "gateway",
        cmd,
        "gateway listening on http://",
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
struct Stack {
    gateway_proc: Proc,
    _python: Proc,
    /// `http://127.0.0.1:PORT/mcp` of the gateway.
    gateway: String,
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
fn stack_with(python_args: &[&str]) -> Option<Stack> {
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
async fn wait_for_log(proc: &Proc, done: impl Fn(&str) -> bool) -> String {
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

fn http() -> reqwest::Client {
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
    //   the descriptor instead;
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
}

#[test]
fn bad_arguments_are_named() {
    let bin = example_binary("gateway");
    let run = |args: &[&str]| {
        let out = Command::new(&bin)
            .args(args)
            .output()
            .expect("gateway runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("--upstream URL") && stdout.contains("--threshold-tokens"));
    assert!(
        stdout.contains("--max-request-bytes N"),
        "the classification cap is configurable"
    );
    let up = ["--upstream", "http://127.0.0.1:1/mcp"];
    let cases: &[(&[&str], &[&str])] = &[
        (&["--listen", "127.0.0.1:0"], &["--upstream", "required"]),
        (
            &[
                &up[..],
                &["--listen", "127.0.0.1:0", "--max-request-bytes", "lots"],
            ]
            .concat(),
            &["--max-request-bytes", "lots"],
        ),
        (
            &[&up[..], &["--listen", "nowhere"]].concat(),
            &["--listen", "nowhere"],
        ),
        (
            &[
                "--upstream",
                "https://example.com/mcp",
                "--listen",
                "127.0.0.1:0",
            ],
            &["--upstream", "https://example.com/mcp"],
        ),
        (
            &[
                &up[..],
                &["--listen", "127.0.0.1:0", "--threshold-tokens", "lots"],
            ]
            .concat(),
            &["--threshold-tokens", "lots"],
        ),
        (
            &[&up[..], &["--listen", "127.0.0.1:0", "--ttl-seconds=-3"]].concat(),
            &["--ttl-seconds", "-3"],
        ),
        (
            &[&up[..], &["--listen", "127.0.0.1:0", "--threads", "4"]].concat(),
            &["--threads"],
        ),
        (
            &[&up[..], &["--listen"]].concat(),
            &["--listen needs a value"],
        ),
        (
            &[
                "--upstream",
                "http://127.0.0.1:/mcp",
                "--listen",
                "127.0.0.1:0",
            ],
            &["--upstream", "empty port"],
        ),
    ];
    for (args, words) in cases {
        let (code, _, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        for w in *words {
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
