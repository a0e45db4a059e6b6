//! Bounded load over loopback HTTP: a real rmcp server
//! (`StreamableHttpService`, stateless, so each request stands alone;
//! answering in JSON, and for small results also as an event stream)
//! mounted with axum on 127.0.0.1 with and without `OffloadLayer`;
//! N keep-alive connections send requests back to back for D seconds.
//! The two servers are measured in alternating rounds (without, with,
//! without, with, ...) so machine noise hits both; p50 and p99 latency
//! (request sent → whole body received) are compared.
//!
//! Environment: `LRO_BENCH_QUICK=1` (2 s per side in 8 rounds, 8
//! connections), `LRO_LOOPBACK_SECS` (seconds per side per request kind,
//! default 20), `LRO_LOOPBACK_CONNS` (default 32), `LRO_LOOPBACK_ROUNDS`
//! (default 20: short alternating rounds, so slow drifts of the machine
//! hit both sides alike). `LRO_LOOPBACK_ONLY=with` or `=without` loads
//! only that server (on both "sides"), for profiling one of them.

#[path = "../examples/support/memory_server.rs"]
mod memory_server;
#[path = "support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::serve::ListenerExt;
use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use memory_server::MemoryServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tower::ServiceBuilder;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{OffloadLayer, RequestBody};

/// Longest a single request may take before the run is aborted.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests per connection per phase, at most.
const MAX_REQUESTS_PER_PHASE: usize = 1_000_000;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mcp_service(json: bool) -> StreamableHttpService<MemoryServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(false)
        .with_json_response(json);
    StreamableHttpService::new(
        || Ok(MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // No Nagle delay on the server side either (an event stream's last
    // chunk is a separate small write).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[derive(Clone)]
struct Kind {
    name: &'static str,
    group: &'static str,
    method: Method,
    body: String,
    /// The server answers with an event stream (else JSON).
    sse: bool,
    target: f64,
}

fn request(addr: SocketAddr, kind: &Kind) -> Request<Full<Bytes>> {
    Request::builder()
        .method(kind.method.clone())
        .uri(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(Full::new(Bytes::from(kind.body.clone())))
        .unwrap()
}

/// One request on a fresh connection; returns status and body length.
async fn probe(addr: SocketAddr, kind: &Kind) -> (u16, usize) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let resp = send.send_request(request(addr, kind)).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, body.len())
}

/// `conns` connections sending `kind` back to back for `secs`; latencies in ns.
async fn phase(addr: SocketAddr, kind: &Kind, conns: usize, secs: f64) -> Vec<f64> {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::with_capacity(conns);
    for _ in 0..conns {
        let kind = kind.clone();
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            let conn = tokio::spawn(conn);
            let mut lat = Vec::with_capacity(4096);
            for _ in 0..MAX_REQUESTS_PER_PHASE {
                if Instant::now() >= deadline {
                    break;
                }
                let req = request(addr, &kind);
                let start = Instant::now();
                let one = async {
                    send.ready().await.unwrap();
                    let resp = send.send_request(req).await.unwrap();
                    resp.into_body().collect().await.unwrap().to_bytes().len()
                };
                tokio::time::timeout(REQUEST_TIMEOUT, one)
                    .await
                    .expect("a request timed out");
                lat.push(start.elapsed().as_nanos() as f64);
            }
            drop(send);
            conn.abort();
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

fn main() {
    let quick = support::quick();
    let secs = env_num("LRO_LOOPBACK_SECS", if quick { 2 } else { 20 }) as f64;
    let conns = env_num("LRO_LOOPBACK_CONNS", if quick { 8 } else { 32 }) as usize;
    let rounds = env_num("LRO_LOOPBACK_ROUNDS", if quick { 8 } else { 20 }).max(1) as usize;
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kinds = vec![
        Kind {
            name: "initialize",
            group: "pass-through",
            method: Method::POST,
            body: json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}).to_string(),
            sse: false,
            target: 1.03,
        },
        Kind {
            name: "tools_list",
            group: "pass-through",
            method: Method::POST,
            body: json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string(),
            sse: false,
            target: 1.03,
        },
        Kind {
            name: "get (405 in stateless mode)",
            group: "pass-through",
            method: Method::GET,
            body: String::new(),
            sse: false,
            target: 1.03,
        },
        Kind {
            name: "result ~1 KB",
            group: "small",
            method: Method::POST,
            body: support::tools_call(1, "recall_memories", json!({"count": 2, "detail": "light"})),
            sse: false,
            target: 1.05,
        },
        Kind {
            name: "result ~4 KB",
            group: "small",
            method: Method::POST,
            body: support::tools_call(1, "recall_memories", json!({"count": 8, "detail": "light"})),
            sse: false,
            target: 1.05,
        },
        Kind {
            name: "result ~1 KB, SSE",
            group: "small",
            method: Method::POST,
            body: support::tools_call(1, "recall_memories", json!({"count": 2, "detail": "light"})),
            sse: true,
            target: 1.05,
        },
        Kind {
            name: "result ~4 KB, SSE",
            group: "small",
            method: Method::POST,
            body: support::tools_call(1, "recall_memories", json!({"count": 8, "detail": "light"})),
            sse: true,
            target: 1.05,
        },
    ];
    let mut rows = Vec::new();
    rt.block_on(async {
        let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
        // (without, with) for JSON and for event-stream answers.
        let mut servers = Vec::new();
        // On both sides rmcp gets axum's own body type, so both run the same
        // compiled rmcp code (generic over the body type): two copies of it
        // laid out apart in memory would differ by a few percent on their
        // own. The side with the layer pays for the re-boxing of its body;
        // on the other side `Body::new` of a `Body` is a no-op.
        for json in [true, false] {
            let with = serve(Router::new().route_service(
                "/mcp",
                ServiceBuilder::new()
                    .layer(layer.clone())
                    .map_request(|r: Request<RequestBody<Body>>| r.map(Body::new))
                    .service(mcp_service(json)),
            ))
            .await;
            let without = serve(Router::new().route_service(
                "/mcp",
                ServiceBuilder::new()
                    .map_request(|r: Request<Body>| r.map(Body::new))
                    .service(mcp_service(json)),
            ))
            .await;
            servers.push((without, with));
        }
        for kind in &kinds {
            if filter.as_ref().is_some_and(|f| !kind.name.contains(f.as_str())) {
                continue;
            }
            let (mut without, mut with) = servers[usize::from(kind.sse)];
            // For profiling one side: both "sides" are then the same server.
            match std::env::var("LRO_LOOPBACK_ONLY").as_deref() {
                Ok("with") => without = with,
                Ok("without") => with = without,
                _ => {}
            }
            let (status, len) = probe(without, kind).await;
            let (status_with, len_with) = probe(with, kind).await;
            assert_eq!((status, len), (status_with, len_with), "{}: the layer changed the response", kind.name);
            eprintln!("{}: status {status}, {len} bytes; {rounds} rounds × 2 × {:.1} s, {conns} connections", kind.name, secs / rounds as f64);
            // Warm both servers up.
            phase(without, kind, conns, 0.3).await;
            phase(with, kind, conns, 0.3).await;
            let mut a = Vec::new();
            let mut b = Vec::new();
            for r in 0..rounds {
                let per = secs / rounds as f64;
                // Alternate which side goes first, too.
                if r % 2 == 0 {
                    a.extend(phase(without, kind, conns, per).await);
                    b.extend(phase(with, kind, conns, per).await);
                } else {
                    b.extend(phase(with, kind, conns, per).await);
                    a.extend(phase(without, kind, conns, per).await);
                }
            }
            a.sort_by(f64::total_cmp);
            b.sort_by(f64::total_cmp);
            let (a50, a99) = (support::percentile(&a, 50.0), support::percentile(&a, 99.0));
            let (b50, b99) = (support::percentile(&b, 50.0), support::percentile(&b, 99.0));
            let verdict = |r: f64| if r <= kind.target { "met" } else { "MISSED" };
            rows.push(vec![
                kind.group.to_owned(),
                kind.name.to_owned(),
                format!("{len} B"),
                format!("{} / {}", a.len(), b.len()),
                format!("{:.0} / {:.0}", a50 / 1e3, b50 / 1e3),
                format!("{:.3} ({})", b50 / a50, verdict(b50 / a50)),
                format!("{:.0} / {:.0}", a99 / 1e3, b99 / 1e3),
                format!("{:.3} ({})", b99 / a99, verdict(b99 / a99)),
                format!("≤ {:.2}", kind.target),
            ]);
        }
    });
    support::print_table(
        "loopback",
        &format!(
            "Loopback HTTP load, rmcp stateless server ({conns} connections, {secs} s per side, {rounds} alternating rounds; quick={quick})"
        ),
        &[
            "kind",
            "request",
            "response",
            "requests without / with",
            "p50 µs without / with",
            "p50 ratio",
            "p99 µs without / with",
            "p99 ratio",
            "target",
        ],
        &rows,
    );
    let files = std::fs::read_dir(dir.path()).map_or(0, |d| d.count());
    assert_eq!(files, 0, "no small result may be offloaded");
}
