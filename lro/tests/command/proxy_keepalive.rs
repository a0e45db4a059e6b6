//! `--keep-alive` / `--ping-interval`: `lro proxy` pings an idle server on
//! its own (MCP `ping`, answers never relayed to the agent), finds a dead
//! link, and once the server is back with the session forgotten (it was
//! restarted on the same port) makes a new session before the agent asks
//! for anything. The server is rmcp's memory server (sessions, SSE) behind
//! a middleware that records the method of each POST; "killing" it closes
//! its listener and every connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};

use super::oauth::{Agent, proxy_command};
use crate::common;
use common::mcp::{Mode, mcp_service};

/// How long a condition the proxy brings about may take to hold.
const EVENTUALLY: Duration = Duration::from_secs(30);

/// The methods of the POSTs a server received, in order.
#[derive(Clone, Default)]
struct Methods(Arc<Mutex<Vec<String>>>);

impl Methods {
    fn count(&self, method: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn record(State(methods): State<Methods>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    if parts.method == axum::http::Method::POST {
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let method = v["method"].as_str().unwrap_or("(an answer)").to_owned();
        methods.0.lock().unwrap().push(method);
    } else if parts.method == axum::http::Method::GET {
        methods.0.lock().unwrap().push("GET".to_owned());
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The memory server (its sessions with it), recording into `methods`.
fn app(methods: Methods) -> Router {
    Router::new()
        .route_service("/mcp", mcp_service(Mode::StatefulSse))
        .layer(axum::middleware::from_fn_with_state(methods, record))
}

/// A memory server on `listener`, recording into `methods`; aborting the
/// task closes the listener and all its connections.
fn serve(listener: tokio::net::TcpListener, methods: Methods) -> tokio::task::JoinHandle<()> {
    serve_app(listener, app(methods))
}

/// `app` on `listener`; aborting the task closes the listener and all its
/// connections (the app and its sessions live on).
fn serve_app(listener: tokio::net::TcpListener, app: Router) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        while let Ok((tcp, _)) = listener.accept().await {
            let service = TowerToHyperService::new(app.clone());
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
            while connections.try_join_next().is_some() {}
        }
    })
}

/// Waits, polling, until `cond` holds; fails after [`EVENTUALLY`].
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let polled = async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(EVENTUALLY, polled)
        .await
        .unwrap_or_else(|_| panic!("within {EVENTUALLY:?}: {what}"));
}

fn agent(addr: SocketAddr, out: &std::path::Path, flags: &[&str]) -> Agent {
    let mut cmd = proxy_command(&format!("http://{addr}/mcp"), out);
    cmd.arg("--no-oauth").args(flags);
    Agent::spawn(cmd)
}

/// The next message on the agent's stdout.
async fn next_message(agent: &mut Agent) -> Value {
    let line = tokio::time::timeout(EVENTUALLY, agent.lines.next_line())
        .await
        .expect("a message in time")
        .unwrap()
        .expect("stdout open");
    serde_json::from_str(&line).unwrap()
}

/// A `status` call whose answer is the very next message the agent gets
/// (no ping answer, nothing else before it).
async fn status_is_next(agent: &mut Agent, id: u64) {
    agent
        .say(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"status","arguments":{}}}))
        .await;
    let answer = next_message(agent).await;
    assert_eq!(answer["id"], id, "the next message: {answer}");
    assert!(answer["result"]["content"].is_array(), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_links_get_pings_whose_answers_the_agent_never_sees() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let methods = Methods::default();
    let _server = serve(listener, methods.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut agent = agent(addr, dir.path(), &["--ping-interval", "0.2"]);
    agent.handshake().await;
    eventually("three pings while idle", || methods.count("ping") >= 3).await;
    status_is_next(&mut agent, 2).await;
    eventually("pings go on after the call", || methods.count("ping") >= 4).await;
    status_is_next(&mut agent, 3).await;
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    // --keep-alive alone pings every 30 s: a run of it works the same.
    let mut agent = self::agent(addr, dir.path(), &["--keep-alive"]);
    agent.handshake().await;
    status_is_next(&mut agent, 2).await;
    assert!(agent.finish().await.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_keep_alive_the_proxy_sends_no_pings() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let methods = Methods::default();
    let _server = serve(listener, methods.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut agent = agent(addr, dir.path(), &[]);
    agent.handshake().await;
    status_is_next(&mut agent, 2).await;
    // Idle for what would be five intervals of 0.2 s.
    tokio::time::sleep(Duration::from_secs(1)).await;
    status_is_next(&mut agent, 3).await;
    assert!(agent.finish().await.0);
    assert_eq!(methods.count("ping"), 0, "{:?}", methods.all());
}

/// Stops `server` (every connection closed), then keeps its port dead
/// (each attempt accepted and closed at once) until the proxy has tried
/// it twice.
async fn gone_for_a_while(server: tokio::task::JoinHandle<()>, addr: SocketAddr) {
    server.abort();
    let _ = server.await;
    let down = tokio::net::TcpListener::bind(addr).await.unwrap();
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = attempts.clone();
    let dead = tokio::spawn(async move {
        while let Ok((tcp, _)) = down.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(tcp);
        }
    });
    eventually("pings at the dead link", || {
        attempts.load(std::sync::atomic::Ordering::SeqCst) >= 2
    })
    .await;
    dead.abort();
    let _ = dead.await;
}

/// `lro proxy` pinging every 0.2 s, logging at info.
fn pinging_agent(addr: SocketAddr, out: &std::path::Path) -> Agent {
    let mut cmd = proxy_command(&format!("http://{addr}/mcp"), out);
    cmd.args(["--no-oauth", "--keep-alive", "--ping-interval", "0.2"])
        .env("RUST_LOG", "tower_lro=info");
    Agent::spawn(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_cut_and_back_gets_the_servers_stream_opened_again() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let methods = Methods::default();
    let app = app(methods.clone());
    let server = serve_app(listener, app.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut agent = pinging_agent(addr, dir.path());
    agent.handshake().await;
    eventually("the server's stream opened", || methods.count("GET") == 1).await;
    eventually("a ping", || methods.count("ping") >= 1).await;
    gone_for_a_while(server, addr).await;
    // Back, with its sessions: no new session, the stream opened again.
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let _server = serve_app(listener, app);
    eventually("the stream opened again, the agent silent", || {
        methods.count("GET") >= 2
    })
    .await;
    status_is_next(&mut agent, 2).await;
    assert_eq!(methods.count("initialize"), 1, "{:?}", methods.all());
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    assert!(
        log.contains("keep-alive: the server answers again"),
        "{log}"
    );
    assert!(log.contains("opening the server's stream again"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_and_back_gets_a_new_session_before_the_agent_asks() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let first = Methods::default();
    let server = serve(listener, first.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut agent = pinging_agent(addr, dir.path());
    agent.handshake().await;
    status_is_next(&mut agent, 2).await;
    eventually("a ping at the first server", || first.count("ping") >= 1).await;
    // Gone: every connection closed; the port answers no more (each
    // attempt is accepted and closed at once, and counted).
    gone_for_a_while(server, addr).await;
    // Back on the same port, the session forgotten.
    let second = Methods::default();
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let _server = serve(listener, second.clone());
    eventually("a new session, the agent silent", || {
        second.count("notifications/initialized") == 1
    })
    .await;
    let before = second.all();
    assert_eq!(second.count("initialize"), 1, "{before:?}");
    assert_eq!(
        before.first().map(String::as_str),
        Some("ping"),
        "{before:?}"
    );
    status_is_next(&mut agent, 3).await;
    assert_eq!(second.count("initialize"), 1, "{:?}", second.all());
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    assert!(
        log.contains("keep-alive: the server does not answer"),
        "{log}"
    );
    assert!(
        log.contains("keep-alive: the server dropped the session"),
        "{log}"
    );
}
