//! `--enable-proxy`: `lro proxy` and `lro gateway` reach their server
//! through the HTTP proxy of `HTTPS_PROXY` / `HTTP_PROXY` (lower-case forms
//! too), `NO_PROXY` honoured, as mcp-remote does. The proxy is a forward
//! proxy on loopback ([`forward_proxy`](super::forward_proxy)) which alone
//! resolves the server's host name, so a request that bypasses it fails;
//! one variant wants credentials, given in the proxy's URL. The server is
//! rmcp's memory server, behind TLS (a certificate for the name, from a CA
//! made here) for the `CONNECT` tunnel. OAuth discovery, registration and
//! token requests go through the proxy too (the `oidc-provider` world of
//! [`oauth`](super::oauth)).

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::forward_proxy::{ForwardProxy, SERVER_NAME, forward_proxy};
use super::oauth::{Agent, proxy_command, sign_ins, world};
use crate::common;

/// The proxy's credentials as its URL gives them (a space, encoded)...
const CREDENTIALS: &str = "lro-user:pr0xy%20pass";
/// ...and as `Proxy-Authorization` carries them: `lro-user:pr0xy pass`.
const BASIC: &str = "Basic bHJvLXVzZXI6cHIweHkgcGFzcw==";

/// The proxy variables, all cleared before a run sets its own.
const PROXY_VARIABLES: [&str; 8] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// rmcp's memory server (sessions, SSE) on loopback, answering to the
/// test name too.
async fn mcp_server() -> SocketAddr {
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(true)
        .with_allowed_hosts([SERVER_NAME, "127.0.0.1", "localhost"]);
    let service = StreamableHttpService::new(
        || Ok(common::mcp::MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    common::mcp::serve_mcp(service, None).await
}

/// TLS for [`SERVER_NAME`] in front of `plain` (each connection relayed to
/// it, decrypted); the TLS address and the PEM of the CA that signed it.
async fn tls_front(plain: SocketAddr) -> (SocketAddr, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![SERVER_NAME.to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut inner) = tokio::net::TcpStream::connect(plain).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut inner).await;
                }
            });
        }
    });
    (addr, ca_pem)
}

/// `lro proxy URL` (no sign-in) with `flags`, the proxy variables cleared
/// and then set to `env`.
fn agent(url: &str, out: &std::path::Path, flags: &[&str], env: &[(&str, &str)]) -> Agent {
    let mut cmd = proxy_command(url, out);
    cmd.arg("--no-oauth").args(flags);
    for v in PROXY_VARIABLES {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied());
    Agent::spawn(cmd)
}

/// Handshake, a tool call, a tools/list and the end: panics unless all of
/// it worked.
async fn a_full_run(mut agent: Agent) {
    let init = agent.handshake().await;
    assert!(
        init["result"]["serverInfo"].is_object(),
        "initialize: {init}"
    );
    let status = agent.status(2).await;
    assert!(status["result"]["content"].is_array(), "status: {status}");
    agent
        .say(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}))
        .await;
    let tools = agent.answer(3).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"status"), "{names:?}");
    let (ok, log) = agent.finish().await;
    assert!(ok, "the proxy exits cleanly: {log}");
}

/// The error message of the answer to `initialize` (the run must fail).
async fn refused_run(mut agent: Agent) -> String {
    let init = agent.handshake().await;
    let message = init["error"]["message"].as_str().map(str::to_owned);
    agent.finish().await;
    message.unwrap_or_else(|| panic!("initialize should fail: {init}"))
}

/// The forward proxy resolving the test name to `to`, wanting
/// [`BASIC`] when `credentials`.
async fn proxy_to(to: SocketAddr, credentials: bool) -> ForwardProxy {
    forward_proxy(&[(SERVER_NAME, to)], credentials.then_some(BASIC)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_only_the_proxy_resolves_is_reached_through_its_tunnel() {
    let (tls, ca_pem) = tls_front(mcp_server().await).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let proxy = proxy_to(tls, true).await;
    let url = format!("https://{SERVER_NAME}:{}/mcp", tls.port());
    let flags = ["--enable-proxy", "--ca-cert", ca.to_str().unwrap()];
    let through = proxy.url(Some(CREDENTIALS));
    a_full_run(agent(
        &url,
        dir.path(),
        &flags,
        &[("HTTPS_PROXY", &through)],
    ))
    .await;
    let seen = proxy.seen();
    let tunnel = format!("CONNECT {SERVER_NAME}:{}", tls.port());
    assert!(!seen.is_empty(), "nothing went through the proxy");
    assert!(seen.iter().all(|s| *s == tunnel), "{seen:?}");
    // Wrong credentials: the tunnel is refused (407), the agent is told.
    let wrong = proxy.url(Some("lro-user:wrong"));
    let message = refused_run(agent(&url, dir.path(), &flags, &[("HTTPS_PROXY", &wrong)])).await;
    assert!(message.contains("cannot be reached"), "{message}");
    // Without the proxy, the name does not resolve here.
    let message = refused_run(agent(&url, dir.path(), &flags[1..], &[])).await;
    assert!(message.contains("cannot be reached"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_reached_in_absolute_form_with_the_proxy_credentials() {
    let server = mcp_server().await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_to(server, true).await;
    let url = format!("http://{SERVER_NAME}:{}/mcp", server.port());
    let flags = ["--enable-proxy", "--allow-http"];
    let through = proxy.url(Some(CREDENTIALS));
    a_full_run(agent(&url, dir.path(), &flags, &[("HTTP_PROXY", &through)])).await;
    let seen = proxy.seen();
    let post = format!("POST {url}");
    // initialize, initialized, tools/call, tools/list; the GET stream and
    // the DELETE at the end.
    let posts = seen.iter().filter(|s| **s == post).count();
    assert!(posts >= 4, "{seen:?}");
    assert!(seen.iter().all(|s| s.ends_with(&url)), "{seen:?}");
    assert!(seen.contains(&format!("DELETE {url}")), "{seen:?}");
    // Wrong credentials: the proxy's 407 is relayed as an error.
    let wrong = proxy.url(Some("lro-user:wrong"));
    let message = refused_run(agent(&url, dir.path(), &flags, &[("HTTP_PROXY", &wrong)])).await;
    assert!(message.contains("407"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_enable_proxy_the_proxy_variables_are_ignored() {
    let server = mcp_server().await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_to(server, false).await;
    let through = proxy.url(None);
    let env = [("HTTP_PROXY", through.as_str()), ("HTTPS_PROXY", &through)];
    let direct = format!("http://127.0.0.1:{}/mcp", server.port());
    a_full_run(agent(&direct, dir.path(), &[], &env)).await;
    let named = format!("http://{SERVER_NAME}:{}/mcp", server.port());
    let message = refused_run(agent(&named, dir.path(), &["--allow-http"], &env)).await;
    assert!(message.contains("cannot be reached"), "{message}");
    assert_eq!(proxy.seen(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_hosts_are_reached_directly_lower_case_variables_too() {
    let server = mcp_server().await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_to(server, false).await;
    let through = proxy.url(None);
    let direct = format!("http://127.0.0.1:{}/mcp", server.port());
    let env = [
        ("http_proxy", through.as_str()),
        ("no_proxy", "localhost,127.0.0.1"),
    ];
    a_full_run(agent(&direct, dir.path(), &["--enable-proxy"], &env)).await;
    assert_eq!(proxy.seen(), Vec::<String>::new(), "NO_PROXY bypasses");
    // The same variables, the server by the name only the proxy knows.
    let named = format!("http://{SERVER_NAME}:{}/mcp", server.port());
    let flags = ["--enable-proxy", "--allow-http"];
    a_full_run(agent(&named, dir.path(), &flags, &env)).await;
    assert!(!proxy.seen().is_empty(), "http_proxy is read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socks_proxy_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = proxy_command("http://127.0.0.1:9/mcp", dir.path());
    cmd.args(["--no-oauth", "--enable-proxy"]);
    for v in PROXY_VARIABLES {
        cmd.env_remove(v);
    }
    cmd.env("HTTPS_PROXY", "socks5://127.0.0.1:1080");
    let out = common::output_within(cmd, std::time::Duration::from_secs(30), "lro proxy").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("HTTPS_PROXY names a socks5:// proxy"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_reaches_its_upstream_through_the_proxy() {
    let (tls, ca_pem) = tls_front(mcp_server().await).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let proxy = proxy_to(tls, true).await;
    let upstream = format!("https://{SERVER_NAME}:{}/mcp", tls.port());
    let mut cmd = std::process::Command::new(super::gateway::lro_bin());
    cmd.args([
        "gateway",
        "--upstream",
        &upstream,
        "--listen",
        "127.0.0.1:0",
    ])
    .args(["--enable-proxy", "--ca-cert", ca.to_str().unwrap()])
    .arg("--output-dir")
    .arg(dir.path());
    for v in PROXY_VARIABLES {
        cmd.env_remove(v);
    }
    cmd.env("HTTPS_PROXY", proxy.url(Some(CREDENTIALS)));
    let (_gateway, rest) = super::gateway::spawn_ready(
        "lro gateway",
        cmd,
        "lro gateway listening on http://",
        std::time::Duration::from_secs(30),
    );
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://{rest}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"gateway-test","version":"1"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let body = answer.text().await.unwrap();
    let message: Value =
        common::mcp::response_message(&body, 1).unwrap_or_else(|| panic!("no answer: {body}"));
    assert!(message["result"]["serverInfo"].is_object(), "{message}");
    let tunnel = format!("CONNECT {SERVER_NAME}:{}", tls.port());
    assert_eq!(proxy.seen().first(), Some(&tunnel));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_discovery_registration_and_tokens_go_through_the_proxy() {
    let Some(world) = world(3600).await else {
        return;
    };
    let proxy = forward_proxy(&[], None).await;
    let through = proxy.url(None);
    let mut agent = Agent::start(&world, &["--enable-proxy"], &[("HTTP_PROXY", &through)]);
    let init = agent.handshake().await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let status = agent.status(2).await;
    assert!(status["result"]["content"].is_array(), "{status}");
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    assert_eq!(sign_ins(&world).len(), 1, "one sign-in in the browser");
    let seen = proxy.seen();
    let asked = |method: &str, prefix: &str| {
        seen.iter()
            .any(|s| s.starts_with(&format!("{method} {prefix}")))
    };
    let mcp = format!("http://{}", world.mcp);
    let issuer = &world.issuer;
    assert!(asked("POST", &format!("{mcp}/mcp")), "{seen:?}");
    assert!(
        asked(
            "GET",
            &format!("{mcp}/.well-known/oauth-protected-resource")
        ),
        "{seen:?}"
    );
    assert!(asked("GET", &format!("{issuer}/.well-known/")), "{seen:?}");
    assert!(asked("POST", &format!("{issuer}/reg")), "{seen:?}");
    assert!(asked("POST", &format!("{issuer}/token")), "{seen:?}");
}
