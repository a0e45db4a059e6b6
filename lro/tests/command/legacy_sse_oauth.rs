//! `lro proxy` signing in to a protected server of the old HTTP+SSE
//! transport (2024-11-05): the `GET` of its event stream and every POST
//! behind the same bearer check as in `oauth.rs` (tokens introspected at
//! `oidc-provider` on loopback, `401` with the RFC 9728 challenge), the
//! server itself `legacy_sse_faults.rs`'s. The first `GET` gets `401`, the
//! sign-in happens in the "browser", the stream opens with the token, the
//! messages are POSTed with it; the next run uses the stored token; with
//! `--no-oauth`, the agent is told the server wants credentials.

use crate::common;
use crate::legacy_sse_faults::{Server, message, stream};
use crate::oauth::{Agent, Guard, StreamFaults, bearer_check, provider, proxy_command};

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use serde_json::json;

/// The HTTP+SSE server at `/sse` (messages at `/messages`) behind the
/// bearer check, and its protected resource metadata.
async fn protected_sse(issuer: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let guard = Guard {
        issuer: issuer.to_owned(),
        resource: format!("http://{addr}/sse"),
        metadata_url: format!("http://{addr}/.well-known/oauth-protected-resource/sse"),
        http: reqwest::Client::new(),
        streams: StreamFaults::default(),
    };
    let metadata = json!({
        "resource": guard.resource,
        "authorization_servers": [issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    });
    let app = Router::new()
        .route("/sse", axum::routing::get(stream))
        .route("/messages", axum::routing::post(message))
        .with_state(Arc::new(Server::default()))
        .layer(axum::middleware::from_fn_with_state(guard, bearer_check))
        .route(
            "/.well-known/oauth-protected-resource/sse",
            axum::routing::get(move || async move { axum::Json(metadata) }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_sse_server_gets_a_sign_in_then_the_stored_token() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    let (_provider, port) = provider(&dir, 3600, &[]).await;
    let addr = protected_sse(&format!("http://127.0.0.1:{port}")).await;
    let auth_dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let browser_log = auth_dir.path().join("browser.log");
    let run = || {
        let mut cmd = proxy_command(&format!("http://{addr}/sse"), out_dir.path());
        cmd.args(["--transport", "sse-only", "--auth-dir"])
            .arg(auth_dir.path())
            .env(
                "BROWSER",
                format!("node {}", dir.join("oauth_browser.mjs").display()),
            )
            .env("BROWSER_LOG", &browser_log);
        Agent::spawn(cmd)
    };
    let sign_ins = || {
        std::fs::read_to_string(&browser_log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    for (n, what) in [(1, "a sign-in"), (1, "the stored token, no browser")] {
        let mut agent = run();
        let init = agent.handshake().await;
        assert!(init["result"]["serverInfo"].is_object(), "{what}: {init}");
        let call = agent.status(2).await;
        assert_eq!(
            call["result"]["content"][0]["text"], "small",
            "{what}: {call}"
        );
        let (ok, log) = agent.finish().await;
        assert!(ok, "{what}: {log}");
        assert_eq!(sign_ins(), n, "{what}");
    }
    // Without sign-in, the agent is told what the server wants.
    let mut cmd = proxy_command(&format!("http://{addr}/sse"), out_dir.path());
    cmd.args(["--transport", "sse-only", "--no-oauth"]);
    let mut agent = Agent::spawn(cmd);
    let init = agent.handshake().await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("HTTP 401") && message.contains("wants credentials"),
        "{init}"
    );
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
}
