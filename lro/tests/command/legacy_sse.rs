//! `lro proxy` to servers of the old HTTP+SSE transport (2024-11-05): the
//! official Python SDK server in its `sse` mode and server-everything's
//! `sse` mode, driven by the official Python SDK client, which also talks
//! to each server directly over SSE for comparison
//! (`tests/interop/sse_client.py`). The answers come on the server's event
//! stream there, so the proxy offloads them itself: the same descriptor,
//! the same local files. Also: the transport strategies (`--transport`),
//! an endpoint on another origin refused, a stream that drops.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{checked_descriptor, interop_setup, output_within};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long one client run may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the proxy may take to answer one message.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Starts `tests/interop/py_server.py PORT FLAGS` (port 0: a free one).
async fn py_server(dir: &Path, port: u16, flags: &[&str]) -> (tokio::process::Child, u16) {
    let mut cmd = tokio::process::Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("py_server.py"))
        .arg(port.to_string())
        .args(flags)
        .current_dir(dir)
        .stderr(Stdio::null());
    common::start_listening(cmd, "py_server.py").await
}

/// Runs `sse_client.py KIND` against `url` (the proxy with `flags`);
/// returns what it printed and the proxy's directory.
async fn client(kind: &str, url: &str, flags: &[&str]) -> (Value, tempfile::TempDir) {
    let dir = common::interop_dir();
    let proxy_dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("sse_client.py"))
        .arg(kind)
        .arg(env!("CARGO_BIN_EXE_lro"))
        .arg(url)
        .arg(proxy_dir.path())
        .args(flags)
        .current_dir(&dir);
    let out = output_within(cmd, CLIENT_TIMEOUT, "sse_client.py").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sse_client.py failed: {stdout}\n{stderr}"
    );
    let v = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("sse_client.py printed no JSON ({e}): {stdout}\n{stderr}"));
    (v, proxy_dir)
}

fn ok<'a>(v: &'a Value, what: &str) -> &'a Value {
    assert!(v.get("error").is_none(), "{what}: {}", v["error"]);
    &v["ok"]
}

/// `jq -c FILTER` over `input`, as real jq prints it.
fn jq(filter: &str, input: &[u8]) -> String {
    let mut child = std::process::Command::new("jq")
        .args(["-c", filter])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jq runs");
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "jq {filter} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// What both servers' runs must show: the server's tools and the proxy's
/// two; the small results byte for byte as the direct ones; the large one
/// (call `large`) offloaded into the proxy's directory, rebuilt whole;
/// progress relayed before the result; the proxy's tools on its files.
fn check_common(v: &Value, large: usize, proxy_dir: &Path) -> tower_lro::OffloadResponse {
    let (direct, proxied) = (&v["direct"], &v["proxied"]);
    let mut tools = direct["tools"].as_array().unwrap().clone();
    assert!(tools.len() >= 3, "the server lists its tools: {tools:?}");
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
    assert_eq!(calls.len(), through.len());
    for (n, (d, p)) in calls.iter().zip(through).enumerate() {
        if n != large {
            assert_eq!(ok(p, "proxied"), ok(d, "direct"), "call {n}: unchanged");
        }
    }
    let d = checked_descriptor(ok(&through[large], "large"), "large through the proxy");
    assert!(
        Path::new(&d.file_path).starts_with(proxy_dir),
        "the file is the proxy's: {}",
        d.file_path
    );
    let rebuilt: Value =
        serde_json::from_str(&tower_lro::offload::rebuild_file(&d.file_path).unwrap()).unwrap();
    let direct_large = ok(&calls[large], "direct large");
    assert_eq!(rebuilt["content"], direct_large["content"], "nothing lost");
    // Progress: as many notifications as directly, all before the result.
    let events = |s: &Value| s["slow"]["events"].as_array().unwrap().clone();
    let (direct_events, proxied_events) = (events(direct), events(proxied));
    assert!(
        direct_events.len() >= 3,
        "the server reports progress: {direct_events:?}"
    );
    assert_eq!(
        proxied_events, direct_events,
        "progress relayed, then the result"
    );
    assert_eq!(
        proxied["asked"], direct["asked"],
        "the same server requests"
    );
    // The proxy's own tools on its own files.
    let listed = ok(&proxied["lro_list"], "lro_list")["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        listed.contains(&d.file_path),
        "lro_list lists the file: {listed}"
    );
    let compact = d.jq_recipes[5].command.replacen("| jq ", "| jq -c ", 1);
    assert_eq!(
        ok(&proxied["recipe6"], "lro_extract")["content"][0]["text"].as_str(),
        Some(common::run_recipe(&compact).as_str()),
        "lro_extract as jq runs the recipe"
    );
    d
}

/// The Python SDK server over HTTP+SSE through the proxy with `flags`.
async fn python_sdk_server(flags: &[&str]) {
    let Some(dir) = interop_setup() else {
        return;
    };
    common::require_jq();
    let (_server, port) = py_server(&dir, 0, &["--sse"]).await;
    let url = format!("http://127.0.0.1:{port}/sse");
    let (v, proxy_dir) = client("py", &url, flags).await;
    let d = check_common(&v, 1, proxy_dir.path());
    // The file's records are the server's: the direct answer's array, as jq
    // prints its elements.
    let direct = ok(&v["direct"]["calls"][1], "direct records")["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = std::fs::read(&d.file_path).unwrap();
    let records = jq(
        ".",
        &file[file.iter().position(|b| *b == b'\n').unwrap() + 1..],
    );
    assert_eq!(
        records,
        jq(".[]", direct.as_bytes()),
        "the server's records"
    );
    assert_eq!(d.summary.count, 300);
    let slow = ok(&v["proxied"]["slow"], "slow_records");
    assert_eq!(checked_descriptor(slow, "slow").summary.count, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sse_server_through_the_proxy_sse_only() {
    python_sdk_server(&["--transport", "sse-only"]).await;
}

/// The default (`http-first`): the server answers the streamable-HTTP
/// POST to /sse with 405, so the proxy falls back to HTTP+SSE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sse_server_through_the_proxy_http_first_falls_back_on_405() {
    python_sdk_server(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sse_server_through_the_proxy_sse_first() {
    python_sdk_server(&["--transport", "sse-first"]).await;
}

/// server-everything's `sse` mode, with the default strategy: its POST to
/// /sse gets 404, so the proxy falls back to HTTP+SSE. Its sampling and
/// elicitation requests go to the agent and the agent's answers back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_sse_through_the_proxy_http_first_falls_back_on_404() {
    let Some(dir) = interop_setup() else {
        return;
    };
    common::require_jq();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(dir.join("everything_server.mjs"))
        .arg("sse")
        .current_dir(&dir)
        .stderr(Stdio::null());
    let (_server, port) = common::start_listening(cmd, "server-everything sse").await;
    let url = format!("http://127.0.0.1:{port}/sse");
    let (v, proxy_dir) = client("everything", &url, &[]).await;
    let d = check_common(&v, 6, proxy_dir.path());
    assert_eq!(
        v["proxied"]["asked"],
        serde_json::json!([
            "Resource trigger-sampling-request context: what is 2+2?",
            "Please provide inputs for the following fields:"
        ]),
        "the server's requests reached the agent"
    );
    let text = ok(&v["proxied"]["calls"][4], "sampling")["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("\"four\""),
        "the agent's answer reached the server: {text}"
    );
    let rebuilt = tower_lro::offload::rebuild_file(&d.file_path).unwrap();
    assert!(
        rebuilt.contains("line 1199: the quick brown fox"),
        "the echo is whole"
    );
}

/// `lro proxy URL FLAGS` with stdin and stdout at hand.
struct Proxy {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _dir: tempfile::TempDir,
}

impl Proxy {
    fn start(url: &str, flags: &[&str]) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"))
            .args(["proxy", url, "--output-dir"])
            .arg(dir.path())
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("lro runs");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Proxy {
            child,
            stdin,
            lines,
            _dir: dir,
        }
    }

    async fn say(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next line the proxy writes that `pick` picks (bounded in time).
    async fn next(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let wait = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if pick(&v) {
                    return v;
                }
            }
            panic!("stdout ended before {what}");
        };
        tokio::time::timeout(ANSWER_TIMEOUT, wait)
            .await
            .unwrap_or_else(|_| panic!("no {what} within {ANSWER_TIMEOUT:?}"))
    }

    /// The line of the answer to `id`, as the proxy wrote it.
    async fn raw_answer(&mut self, id: u64) -> String {
        let wait = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id && v.get("method").is_none() {
                    return line;
                }
            }
            panic!("stdout ended before the answer to {id}");
        };
        tokio::time::timeout(ANSWER_TIMEOUT, wait)
            .await
            .unwrap_or_else(|_| panic!("no answer to {id} within {ANSWER_TIMEOUT:?}"))
    }

    async fn answer(&mut self, id: u64) -> Value {
        self.next(&format!("answer to {id}"), |v| {
            v["id"] == id && v.get("method").is_none()
        })
        .await
    }
}

/// The error message of an answer.
fn error_of(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error: {answer}"))
        .to_owned()
}

/// `sse-only` against a server of streamable HTTP only: the agent's
/// `initialize` gets an error that says what is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_only_against_a_streamable_only_server_is_a_clear_error() {
    let Some(dir) = interop_setup() else {
        return;
    };
    let (_server, port) = py_server(&dir, 0, &[]).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut proxy = Proxy::start(&url, &["--transport", "sse-only"]);
    proxy.say(INITIALIZE).await;
    let message = error_of(&proxy.answer(1).await);
    assert!(
        message.contains("to the GET of an HTTP+SSE event stream")
            && message.contains("does not speak the old HTTP+SSE transport (2024-11-05)"),
        "{message}"
    );
    // http-only against an HTTP+SSE server: an error naming the fallback.
    let (_sse, sse_port) = py_server(&dir, 0, &["--sse"]).await;
    let mut proxy = Proxy::start(
        &format!("http://127.0.0.1:{sse_port}/sse"),
        &["--transport", "http-only"],
    );
    proxy.say(INITIALIZE).await;
    let message = error_of(&proxy.answer(1).await);
    assert!(
        message.contains("HTTP 405") && message.contains("old HTTP+SSE transport"),
        "{message}"
    );
}

/// An endpoint event naming another origin: refused, nothing is sent
/// there. Fault injection: a server of a few bytes whose event stream
/// names a listener that counts the connections it gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_on_another_origin_is_refused() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;
    let elsewhere = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let elsewhere_addr = elsewhere.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = elsewhere.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = server.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: endpoint\ndata: http://{elsewhere_addr}/messages?session_id=1\n\n"
        );
        socket.write_all(answer.as_bytes()).await.unwrap();
        // The stream stays open until the proxy goes.
        let _ = socket.read(&mut buf).await;
    });
    let mut proxy = Proxy::start(
        &format!("http://{server_addr}/sse"),
        &["--transport", "sse-only"],
    );
    proxy.say(INITIALIZE).await;
    let message = error_of(&proxy.answer(1).await);
    assert!(
        message.contains("another origin") && message.contains(&format!("http://{elsewhere_addr}")),
        "{message}"
    );
    drop(proxy.stdin);
    let _ = tokio::time::timeout(ANSWER_TIMEOUT, proxy.child.wait()).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was sent elsewhere");
}

/// The server goes away during a call: the call gets an error at once
/// (never a wait without end); the server comes back on the same port: the
/// next call opens a new stream, the agent's `initialize` is sent again
/// (the Python SDK server refuses requests before it), and it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_fails_the_waiting_call_and_the_next_reconnects() {
    let Some(dir) = interop_setup() else {
        return;
    };
    let (mut server, port) = py_server(&dir, 0, &["--sse"]).await;
    let url = format!("http://127.0.0.1:{port}/sse");
    let mut proxy = Proxy::start(&url, &["--transport", "sse-only"]);
    proxy.say(INITIALIZE).await;
    assert!(proxy.answer(1).await["result"].is_object());
    proxy.say(INITIALIZED).await;
    proxy
        .say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_records","arguments":{"count":10},"_meta":{"progressToken":"p"}}}"#)
        .await;
    proxy
        .next("progress", |v| v["method"] == "notifications/progress")
        .await;
    server.kill().await.unwrap();
    let message = error_of(&proxy.answer(2).await);
    assert!(
        message.contains("closed before the answer came"),
        "{message}"
    );
    let (_again, same) = py_server(&dir, port, &["--sse"]).await;
    assert_eq!(same, port);
    proxy
        .say(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"again"}}}"#)
        .await;
    let answer = proxy.answer(3).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "hello, again",
        "answered on a new stream: {answer}"
    );
}

/// `sse-first` to a server of streamable HTTP whose `GET` is `405` (rmcp
/// without sessions): the proxy falls back to streamable HTTP, and its
/// offloading works there as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_first_falls_back_to_streamable_http_on_405() {
    use common::mcp::{Mode, mcp_service, serve_mcp};
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), None).await;
    let mut proxy = Proxy::start(&format!("http://{addr}/mcp"), &["--transport", "sse-first"]);
    proxy.say(INITIALIZE).await;
    let init = proxy.answer(1).await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    proxy.say(INITIALIZED).await;
    proxy
        .say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .await;
    let list = proxy.answer(2).await;
    let tools: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"recall_memories") && tools.contains(&"lro_extract"),
        "{tools:?}"
    );
    proxy
        .say(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall_memories","arguments":{"count":200}}}"#)
        .await;
    let large = proxy.answer(3).await;
    let d = checked_descriptor(&large["result"], "recall_memories over streamable HTTP");
    assert_eq!(d.summary.count, 200);
    assert!(Path::new(&d.file_path).starts_with(proxy._dir.path()));
}

/// The user's headers and the LRO proxy announcement go with the messages
/// POSTed to the endpoint, as with streamable HTTP (the Python SDK
/// server's `echo_headers` tool says what it got).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_the_proxy_announcement_reach_an_sse_server() {
    let Some(dir) = interop_setup() else {
        return;
    };
    let (_server, port) = py_server(&dir, 0, &["--sse"]).await;
    let url = format!("http://127.0.0.1:{port}/sse");
    let mut proxy = Proxy::start(&url, &["--header", "X-Team: lro"]);
    proxy.say(INITIALIZE).await;
    assert!(proxy.answer(1).await["result"].is_object());
    proxy.say(INITIALIZED).await;
    proxy
        .say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_headers","arguments":{}}}"#)
        .await;
    let answer = proxy.answer(2).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let headers: Value = serde_json::from_str(text).unwrap();
    assert_eq!(headers["x-team"], "lro", "{headers}");
    assert_eq!(headers["lro-proxy"], "1", "{headers}");
}

/// The data of the event answering `id` that a plain HTTP+SSE client gets
/// from the server at `url` after POSTing `lines` (bounded in time).
async fn direct_answer(url: &str, lines: &[&str], id: u64) -> String {
    use tower_lro::sse::{EventSplitter, event_data};
    let http = reqwest::Client::new();
    let mut stream = http
        .get(url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut splitter = EventSplitter::default();
    let mut endpoint = None;
    let read = async {
        loop {
            while let Some(event) = splitter.next_event() {
                let Some(data) = event_data(&event) else {
                    continue;
                };
                let data = String::from_utf8(data.to_vec()).unwrap();
                if event.starts_with(b"event: endpoint") {
                    let at = reqwest::Url::parse(url).unwrap().join(&data).unwrap();
                    for line in lines {
                        let sent = http
                            .post(at.clone())
                            .header("content-type", "application/json")
                            .body(line.to_string())
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(sent.status(), 202);
                    }
                    endpoint = Some(at);
                } else if serde_json::from_str::<Value>(&data).unwrap()["id"] == id {
                    return data;
                }
            }
            let chunk = stream.chunk().await.unwrap().expect("the stream goes on");
            splitter.push(&chunk);
        }
    };
    let data = tokio::time::timeout(ANSWER_TIMEOUT, read)
        .await
        .expect("the answer within the time");
    assert!(endpoint.is_some());
    data
}

/// Small results through the proxy are the server's own bytes: the line
/// the agent gets is the data of the event a plain client gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_results_are_the_servers_own_bytes() {
    let Some(dir) = interop_setup() else {
        return;
    };
    let (_server, port) = py_server(&dir, 0, &["--sse"]).await;
    let url = format!("http://127.0.0.1:{port}/sse");
    for call in [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"bytes \u00e9\u4e2d"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"records_list","arguments":{"count":5}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"layout","arguments":{"kind":"nope"}}}"#,
    ] {
        let direct = direct_answer(&url, &[INITIALIZE, INITIALIZED, call], 2).await;
        let mut proxy = Proxy::start(&url, &["--transport", "sse-only"]);
        for line in [INITIALIZE, INITIALIZED, call] {
            proxy.say(line).await;
        }
        let proxied = proxy.raw_answer(2).await;
        assert_eq!(proxied, direct, "{call}");
    }
}
