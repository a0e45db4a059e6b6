//! mcp-remote's flags that were refused: `--ipv4` now works (a server's
//! IPv6 addresses are not tried); `--protocol auto` stays a one-line
//! refusal naming the flag; bad keep-alive intervals and grants that
//! exclude each other are refused with the flags named.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::oauth::{Agent, proxy_command};
use crate::common;

/// rmcp's memory server listening on `ip` only.
async fn server_on(ip: &str) -> SocketAddr {
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(true)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        || Ok(common::mcp::MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// `lro proxy URL --no-oauth FLAGS`: the answer to `initialize`.
async fn initialize(url: &str, flags: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = proxy_command(url, dir.path());
    cmd.arg("--no-oauth").args(flags);
    let mut agent = Agent::spawn(cmd);
    let init = agent.handshake().await;
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    init
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv4_skips_a_servers_ipv6_addresses() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    }
    let v6 = format!("http://{}/mcp", server_on("::1").await);
    let v4 = format!("http://{}/mcp", server_on("127.0.0.1").await);
    let init = initialize(&v6, &[]).await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let init = initialize(&v6, &["--ipv4"]).await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot be reached"), "{init}");
    let init = initialize(&v4, &["--ipv4"]).await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
}

#[test]
fn flags_still_refused_are_one_line_refusals() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
            .args(["proxy", "http://127.0.0.1:9/mcp"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, named) in [
        (
            &["--protocol", "auto"][..],
            "--protocol auto is not supported",
        ),
        (&["--ping-interval", "0"][..], "--ping-interval 0"),
        (&["--ping-interval=-1"][..], "--ping-interval -1"),
    ] {
        let (ok, err) = run(args);
        assert!(!ok, "{args:?} refused");
        assert!(err.contains(named), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let (ok, err) = run(&[
        "--ipv4",
        "--enable-proxy",
        "--keep-alive",
        "--ping-interval",
        "5",
    ]);
    assert!(ok, "accepted flags, stdin closed at once: {err}");
}
