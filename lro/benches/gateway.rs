//! What `lro gateway` and `lro proxy` add to a request, over loopback.
//!
//! A real rmcp server (the memory server, stateless, answering in JSON)
//! on 127.0.0.1; in front of it `lro gateway` (the built binary, logs off)
//! twice: offloading on, and offloading off (`enabled = false`, the same
//! hop without the layer's work). A keep-alive
//! client sends each request as SDK clients do, the head and the body in
//! two writes (`TCP_NODELAY` on, as Node's); latency is request sent →
//! whole answer read. Kinds: pass-through (`ping`, `initialize`) and a
//! small result (`recall_memories`, ~1 KB, under the threshold).
//!
//! Ratios: gateway on / gateway off (target ≤ 1.05, p50 and p99) and
//! gateway on / direct (the price of the extra hop, reported). Then `lro
//! proxy` (the built binary, one line on its stdin, one line read from its
//! stdout) against the same call sent directly: the time the proxy adds to
//! a small call.
//!
//! `LRO_BENCH_QUICK=1` shortens the run; criterion flags apply
//! (`-- --warm-up-time 1 --measurement-time 3`).

#[path = "../../examples/support/memory_server.rs"]
mod memory_server;
#[path = "../../benches/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::serve::ListenerExt;
use criterion::Criterion;
use memory_server::MemoryServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Longest one request may take before the run is aborted.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The memory server, stateless, JSON answers, on a free port.
async fn upstream() -> SocketAddr {
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        || Ok(MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = Router::new().route_service("/mcp", service);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// The built `lro` with `args`, logs off (as the library gateway ran
/// without a log subscriber before it moved into the binary), killed when
/// dropped; stdin and stdout piped.
fn lro(args: &[&str], offload: bool) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .env("RUST_LOG", "off")
        .env("ATLATL_PROMPT__OFFLOAD__ENABLED", offload.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("lro starts")
}

/// `lro gateway` in front of `upstream`, offloading on or off: the child
/// (kept to be killed at the end) and the address it says it listens on.
async fn gateway(upstream: SocketAddr, offload: bool, dir: &Path) -> (Child, SocketAddr) {
    let url = format!("http://{upstream}/mcp");
    let args = [
        "gateway",
        "--upstream",
        &url,
        "--listen",
        "127.0.0.1:0",
        "--output-dir",
        dir.to_str().unwrap(),
    ];
    let mut child = lro(&args, offload);
    let addr = support::gateway_address(&mut child, REQUEST_TIMEOUT).await;
    (child, addr)
}

/// A keep-alive HTTP/1.1 client that writes a request's head and body
/// separately, as SDK clients do.
struct Client {
    stream: BufReader<TcpStream>,
    addr: SocketAddr,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let tcp = TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        Client {
            stream: BufReader::new(tcp),
            addr,
        }
    }

    /// POSTs `body`; returns the answer's body length.
    async fn post(&mut self, body: &str) -> usize {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        tokio::time::timeout(REQUEST_TIMEOUT, self.read_answer())
            .await
            .expect("an answer in time")
    }

    /// Reads one answer (Content-Length or chunked); returns its body length.
    async fn read_answer(&mut self) -> usize {
        let (mut length, mut chunked, mut line) = (None, false, String::new());
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(v) = header.strip_prefix("content-length:") {
                length = v.trim().parse::<usize>().ok();
            }
            chunked |= header.starts_with("transfer-encoding:") && header.contains("chunked");
        }
        if chunked {
            return self.read_chunks().await;
        }
        let mut body = vec![0; length.expect("a framed answer")];
        self.stream.read_exact(&mut body).await.unwrap();
        body.len()
    }

    async fn read_chunks(&mut self) -> usize {
        let (mut total, mut line) = (0, String::new());
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
            let mut chunk = vec![0; size + 2];
            self.stream.read_exact(&mut chunk).await.unwrap();
            total += size;
            if size == 0 {
                return total;
            }
        }
    }
}

/// The request kinds: (name, body, target ratio on/off).
fn kinds() -> Vec<(&'static str, String, f64)> {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}});
    vec![
        (
            "pass-through: ping",
            json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string(),
            1.05,
        ),
        ("pass-through: initialize", init.to_string(), 1.05),
        (
            "small result ~1 KB",
            support::tools_call(1, "recall_memories", json!({"count": 2, "detail": "light"})),
            1.05,
        ),
    ]
}

/// Latencies (ns) of `n` requests on one keep-alive connection.
async fn latencies(client: &mut Client, body: &str, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        assert!(client.post(body).await > 0, "an empty answer");
        out.push(start.elapsed().as_nanos() as f64);
    }
    out
}

/// p50 and p99 of the three sides, measured in alternating rounds so that
/// machine noise hits them alike.
async fn percentiles(sides: [SocketAddr; 3], body: &str, rounds: usize, n: usize) -> [[f64; 2]; 3] {
    let mut clients = Vec::new();
    for addr in sides {
        clients.push(Client::connect(addr).await);
    }
    let mut samples: [Vec<f64>; 3] = Default::default();
    for _ in 0..rounds {
        for (side, client) in clients.iter_mut().enumerate() {
            samples[side].extend(latencies(client, body, n).await);
        }
    }
    samples.map(|mut s| {
        s.sort_by(f64::total_cmp);
        [support::percentile(&s, 50.0), support::percentile(&s, 99.0)]
    })
}

/// Criterion timings of one kind on each side (one keep-alive connection each).
fn criterion_kind(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    sides: [SocketAddr; 3],
    name: &str,
    body: &str,
) {
    let mut group = c.benchmark_group(format!("gateway/{name}"));
    for (side, addr) in ["direct", "gateway offload off", "gateway offload on"]
        .iter()
        .zip(sides)
    {
        let mut client = rt.block_on(Client::connect(addr));
        group.bench_function(*side, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        client.post(body).await;
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

/// One line through `lro proxy` (its stdin and stdout), answered; the
/// proxy is started once and reused.
struct ProxyPipe {
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    _child: Child,
}

impl ProxyPipe {
    fn start(upstream: SocketAddr, dir: &Path) -> ProxyPipe {
        let url = format!("http://{upstream}/mcp");
        let auth = dir.join("auth");
        let args = [
            "proxy",
            &url,
            "--output-dir",
            dir.to_str().unwrap(),
            "--auth-dir",
            auth.to_str().unwrap(),
        ];
        let mut child = lro(&args, true);
        ProxyPipe {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            _child: child,
        }
    }

    async fn call(&mut self, line: &str) -> usize {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
        let mut answer = String::new();
        let read = self.output.read_line(&mut answer);
        tokio::time::timeout(REQUEST_TIMEOUT, read)
            .await
            .expect("an answer")
            .unwrap()
    }
}

/// p50/p99 of a small call through the proxy and directly, alternating.
async fn proxy_percentiles(
    upstream: SocketAddr,
    dir: &Path,
    rounds: usize,
    n: usize,
) -> [[f64; 2]; 2] {
    let body = support::tools_call(1, "recall_memories", json!({"count": 2, "detail": "light"}));
    let mut pipe = ProxyPipe::start(upstream, dir);
    let mut direct = Client::connect(upstream).await;
    let mut samples: [Vec<f64>; 2] = Default::default();
    for _ in 0..rounds {
        for _ in 0..n {
            let start = Instant::now();
            assert!(pipe.call(&body).await > 0);
            samples[0].push(start.elapsed().as_nanos() as f64);
        }
        samples[1].extend(latencies(&mut direct, &body, n).await);
    }
    samples.map(|mut s| {
        s.sort_by(f64::total_cmp);
        [support::percentile(&s, 50.0), support::percentile(&s, 99.0)]
    })
}

fn main() {
    let quick = support::quick();
    let (rounds, n) = if quick { (6, 100) } else { (20, 250) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (sides, _gateways) = rt.block_on(async {
        let up = upstream().await;
        let (off, off_addr) = gateway(up, false, dir.path()).await;
        let (on, on_addr) = gateway(up, true, dir.path()).await;
        ([up, off_addr, on_addr], [off, on])
    });
    let mut c = Criterion::default().configure_from_args();
    let mut rows = Vec::new();
    for (name, body, target) in kinds() {
        criterion_kind(&mut c, &rt, sides, name, &body);
        let [direct, off, on] = rt.block_on(percentiles(sides, &body, rounds, n));
        rows.push(gateway_row(name, direct, off, on, target));
    }
    support::print_table(
        "gateway",
        "lro gateway over loopback (keep-alive, head and body in two writes)",
        &[
            "request",
            "direct p50/p99",
            "offload off p50/p99",
            "offload on p50/p99",
            "on/off p50, p99 (target)",
            "on/direct p50, p99",
        ],
        &rows,
    );
    let [through, direct] = rt.block_on(proxy_percentiles(sides[0], dir.path(), rounds, n));
    support::print_table(
        "proxy",
        "lro proxy: a small call (~1 KB result) through it vs direct",
        &["side", "p50", "p99"],
        &[
            vec![
                "direct HTTP".into(),
                support::fmt_ns(direct[0]),
                support::fmt_ns(direct[1]),
            ],
            vec![
                "through lro proxy".into(),
                support::fmt_ns(through[0]),
                support::fmt_ns(through[1]),
            ],
            vec![
                "added".into(),
                support::fmt_ns(through[0] - direct[0]),
                support::fmt_ns(through[1] - direct[1]),
            ],
        ],
    );
    c.final_summary();
}

/// One table row: the three sides and the ratios.
fn gateway_row(
    name: &str,
    direct: [f64; 2],
    off: [f64; 2],
    on: [f64; 2],
    target: f64,
) -> Vec<String> {
    let pair = |v: [f64; 2]| format!("{} / {}", support::fmt_ns(v[0]), support::fmt_ns(v[1]));
    let ratio = |a: [f64; 2], b: [f64; 2]| format!("{:.3}, {:.3}", a[0] / b[0], a[1] / b[1]);
    vec![
        name.to_owned(),
        pair(direct),
        pair(off),
        pair(on),
        format!("{} (≤ {target})", ratio(on, off)),
        ratio(on, direct),
    ]
}
