//! `lro proxy` signing in to a protected MCP server, against a real
//! authorization server: `oidc-provider` (npm) on loopback, with dynamic
//! registration, PKCE, refresh tokens, client credentials, introspection
//! and revocation. The MCP server is rmcp's behind a bearer check that
//! introspects every token at the provider and answers `401` with the
//! RFC 9728 `resource_metadata` challenge. The sign-in in the "browser" is
//! `tests/interop/oauth_browser.mjs` (run as `$BROWSER`), which follows the
//! provider's redirects and submits its login and consent forms up to the
//! proxy's loopback callback. The agent is a small JSON-RPC client on the
//! proxy's stdin and stdout.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long one answer through the proxy may take (a sign-in included).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// `resource-server:rs-secret`, the introspecting client's credentials.
const RS_BASIC: &str = "Basic cmVzb3VyY2Utc2VydmVyOnJzLXNlY3JldA==";

/// The authorization server, the protected MCP server, and the proxy's
/// token and output directories.
pub(crate) struct World {
    _provider: Child,
    pub(crate) issuer: String,
    pub(crate) mcp: SocketAddr,
    sessions: Arc<LocalSessionManager>,
    streams: StreamFaults,
    auth_dir: tempfile::TempDir,
    out_dir: tempfile::TempDir,
    browser_log: PathBuf,
}

/// A world whose access tokens live `ttl` seconds (`None` when the
/// interop tooling cannot be installed).
pub(crate) async fn world(ttl: u64) -> Option<World> {
    world_with(ttl, &[]).await
}

/// [`world`], the provider started with `env` too.
pub(crate) async fn world_with(ttl: u64, env: &[(&str, &str)]) -> Option<World> {
    let dir = common::interop_setup()?;
    let (provider, port) = provider(&dir, ttl, env).await;
    let issuer = format!("http://127.0.0.1:{port}");
    let streams = StreamFaults::default();
    let (mcp, sessions) = protected_mcp(issuer.clone(), streams.clone()).await;
    let auth_dir = tempfile::tempdir().unwrap();
    let browser_log = auth_dir.path().join("browser.log");
    Some(World {
        _provider: provider,
        issuer,
        mcp,
        sessions,
        streams,
        auth_dir,
        out_dir: tempfile::tempdir().unwrap(),
        browser_log,
    })
}

impl World {
    /// The MCP server's open sessions.
    async fn session_ids(&self) -> Vec<Arc<str>> {
        let sessions = self.sessions.sessions.read().await;
        sessions.keys().cloned().collect()
    }
}

/// A world (access tokens living `ttl` seconds) after a first sign-in;
/// the tokens then stored.
async fn signed_in(ttl: u64) -> Option<(World, Value)> {
    let world = world(ttl).await?;
    session(&world, &[], &[]).await;
    let (_, tokens) = stored(&world, "_tokens.json");
    Some((world, tokens))
}

/// A world (tokens living `ttl` seconds) and an agent in session, signed
/// in, after one successful call; that call's answer.
async fn agent_after_a_call(ttl: u64) -> Option<(World, Agent, Value)> {
    let world = world(ttl).await?;
    let mut agent = Agent::start(&world, &[], &[]);
    agent.handshake().await;
    let first = agent.status(2).await;
    assert!(first["result"]["content"].is_array(), "{first}");
    Some((world, agent, first))
}

/// Starts oidc-provider; returns it and its port.
pub(crate) async fn provider(dir: &Path, ttl: u64, env: &[(&str, &str)]) -> (Child, u16) {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(dir.join("oauth_provider.mjs"))
        .env("ACCESS_TTL", ttl.to_string())
        .envs(env.iter().copied())
        .current_dir(dir)
        .stderr(Stdio::inherit());
    common::start_listening(cmd, "oidc-provider").await
}

/// What the bearer check needs.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(super) issuer: String,
    pub(super) resource: String,
    pub(super) metadata_url: String,
    pub(super) http: reqwest::Client,
    pub(super) streams: StreamFaults,
}

/// Faults of the bearer check: it refuses (`401`) the next `refuse`
/// stream GETs, and the next `refuse_new` POSTs that open a session (no
/// `Mcp-Session-Id`), even with a valid token, as a server does once it
/// stops accepting a token; `opened` counts the streams let through.
#[derive(Clone, Default)]
pub(crate) struct StreamFaults {
    refuse: Arc<AtomicUsize>,
    refuse_new: Arc<AtomicUsize>,
    opened: Arc<AtomicUsize>,
}

impl StreamFaults {
    /// Whether this request with a valid token is let through.
    fn admit(&self, request: &Request) -> bool {
        let take = |n: &AtomicUsize| {
            n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        };
        if request.method() == axum::http::Method::GET {
            let refused = take(&self.refuse);
            if !refused {
                self.opened.fetch_add(1, Ordering::SeqCst);
            }
            return !refused;
        }
        let opens_session = request.method() == axum::http::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        !(opens_session && take(&self.refuse_new))
    }
}

/// rmcp's memory server (sessions) at `/mcp`, behind the bearer check, and
/// its protected resource metadata.
async fn protected_mcp(
    issuer: String,
    streams: StreamFaults,
) -> (SocketAddr, Arc<LocalSessionManager>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let guard = Guard {
        issuer: issuer.clone(),
        resource: format!("http://{addr}/mcp"),
        metadata_url: format!("http://{addr}/.well-known/oauth-protected-resource/mcp"),
        http: reqwest::Client::new(),
        streams,
    };
    let sessions = Arc::new(LocalSessionManager::default());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_sse_keep_alive(None);
    let mcp =
        StreamableHttpService::new(|| Ok(common::mcp::MemoryServer), sessions.clone(), config);
    let metadata = json!({
        "resource": guard.resource,
        "authorization_servers": [issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    });
    let app = Router::new()
        .route_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(guard, bearer_check))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(move || async move { axum::Json(metadata) }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, sessions)
}

/// Lets a request through when its bearer token is active at the provider
/// and meant for this resource; else `401` with the RFC 9728 challenge.
pub(crate) async fn bearer_check(
    State(guard): State<Guard>,
    request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let active = match token {
        Some(token) => introspect(&guard, &token).await,
        None => false,
    };
    if active && guard.streams.admit(&request) {
        return next.run(request).await;
    }
    let challenge = format!(
        r#"Bearer error="invalid_token", resource_metadata="{}", scope="mcp""#,
        guard.metadata_url
    );
    (
        axum::http::StatusCode::UNAUTHORIZED,
        [("www-authenticate", challenge)],
    )
        .into_response()
}

/// RFC 7662 introspection at the provider.
async fn introspect(guard: &Guard, token: &str) -> bool {
    let body = format!("token={}", urlencode(token));
    let answer = guard
        .http
        .post(format!("{}/token/introspection", guard.issuer))
        .header("authorization", RS_BASIC)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await;
    let Ok(answer) = answer else { return false };
    let Ok(bytes) = answer.bytes().await else {
        return false;
    };
    let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let audience = match &v["aud"] {
        Value::String(a) => vec![a.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    v["active"] == true && audience.contains(&guard.resource)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `lro proxy URL --output-dir OUT`.
pub(crate) fn proxy_command(url: &str, out: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"));
    cmd.args(["proxy", url, "--output-dir"]).arg(out);
    cmd
}

/// An agent on the proxy's stdio.
pub(crate) struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) lines: Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

impl Agent {
    /// Starts `lro proxy` for `world` with `extra` flags and environment.
    pub(crate) fn start(world: &World, extra: &[&str], env: &[(&str, &str)]) -> Agent {
        let dir = common::interop_dir();
        let browser = format!("node {}", dir.join("oauth_browser.mjs").display());
        let mut cmd = proxy_command(&format!("http://{}/mcp", world.mcp), world.out_dir.path());
        cmd.arg("--auth-dir")
            .arg(world.auth_dir.path())
            .args(extra)
            .env("BROWSER", browser)
            .env("BROWSER_LOG", &world.browser_log)
            .envs(env.iter().copied());
        Agent::spawn(cmd)
    }

    /// Runs `cmd` (an `lro proxy`) as the agent's server.
    pub(crate) fn spawn(mut cmd: tokio::process::Command) -> Agent {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("lro runs");
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut err, &mut text).await;
            text
        });
        Agent {
            stdin: child.stdin.take(),
            lines: BufReader::new(child.stdout.take().unwrap()).lines(),
            child,
            stderr,
        }
    }

    pub(crate) async fn say(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The answer to request `id` (other messages skipped).
    pub(crate) async fn answer(&mut self, id: u64) -> Value {
        let wait = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id {
                    return v;
                }
            }
            let log = (&mut self.stderr).await.unwrap_or_default();
            panic!("stdout ended before the answer to {id}; the proxy logged: {log}");
        };
        tokio::time::timeout(ANSWER_TIMEOUT, wait)
            .await
            .unwrap_or_else(|_| panic!("no answer to {id} within {ANSWER_TIMEOUT:?}"))
    }

    /// `initialize` and `notifications/initialized`; the answer.
    pub(crate) async fn handshake(&mut self) -> Value {
        self.say(
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"oauth-test","version":"1"}}}),
        )
        .await;
        let answer = self.answer(1).await;
        self.say(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        answer
    }

    /// A `tools/call` of the server's `status` tool; the answer.
    pub(crate) async fn status(&mut self, id: u64) -> Value {
        self.say(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"status","arguments":{}}}))
            .await;
        self.answer(id).await
    }

    /// Closes stdin; the exit status and what the proxy logged.
    pub(crate) async fn finish(mut self) -> (bool, String) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the proxy ends when stdin ends")
            .unwrap();
        (status.success(), self.stderr.await.unwrap())
    }
}

/// A run an agent makes: handshake, one tool call, exit. Panics unless all
/// of it succeeded; returns the tool's result.
pub(crate) async fn session(world: &World, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let mut agent = Agent::start(world, extra, env);
    let init = agent.handshake().await;
    assert!(
        init["result"]["serverInfo"].is_object(),
        "initialize: {init}"
    );
    let status = agent.status(2).await;
    let (ok, log) = agent.finish().await;
    assert!(
        status["result"]["content"].is_array(),
        "status: {status}\n{log}"
    );
    assert!(ok, "the proxy exits cleanly: {log}");
    status["result"].clone()
}

/// How many sign-ins the browser completed.
pub(crate) fn sign_ins(world: &World) -> Vec<String> {
    std::fs::read_to_string(&world.browser_log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The one stored file whose name ends with `suffix`.
pub(crate) fn stored(world: &World, suffix: &str) -> (PathBuf, Value) {
    let found: Vec<PathBuf> = std::fs::read_dir(world.auth_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "one {suffix}: {found:?}");
    let v = serde_json::from_slice(&std::fs::read(&found[0]).unwrap()).unwrap();
    (found[0].clone(), v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_sign_in_then_the_stored_tokens_on_the_next_start() {
    let Some(world) = world(3600).await else {
        return;
    };
    let first = session(&world, &[], &[]).await;
    assert_eq!(
        sign_ins(&world),
        ["200"],
        "one sign-in, the callback answered 200"
    );
    let (path, tokens) = stored(&world, "_tokens.json");
    assert!(tokens["access_token"].is_string() && tokens["refresh_token"].is_string());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600, "tokens readable by this user only");
        let (client, _) = stored(&world, "_client_info.json");
        assert_eq!(mode(&client), 0o600);
    }
    let again = session(&world, &[], &[]).await;
    assert_eq!(again, first);
    assert_eq!(
        sign_ins(&world).len(),
        1,
        "the stored token was used: no browser"
    );
    assert_eq!(stored(&world, "_tokens.json").1, tokens, "and kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refreshed_without_a_browser() {
    let Some((world, before)) = signed_in(2).await else {
        return;
    };
    until_expired(&world, before["access_token"].as_str().unwrap()).await;
    session(&world, &[], &[]).await;
    let (_, after) = stored(&world, "_tokens.json");
    assert_eq!(sign_ins(&world).len(), 1, "refreshed, not signed in again");
    assert_ne!(after["access_token"], before["access_token"], "a new token");
    assert!(after["refresh_token"].is_string());
}

/// Waits until the provider says `token` has expired (its introspection
/// answers `active: false`), polling every 50 ms; fails the test after 10 s.
/// The worlds' tokens live 2 s: this waits until that precise moment, not
/// a fixed time past it.
async fn until_expired(world: &World, token: &str) {
    let http = reqwest::Client::new();
    for _ in 0..200 {
        let v: Value = http
            .post(format!("{}/token/introspection", world.issuer))
            .header("authorization", RS_BASIC)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={}", urlencode(token)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["active"] != true {
            return;
        }
        // The provider's clock moving on: polled on the wall clock.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the access token is still active after 10 s");
}

/// Revokes `token` at the provider as the proxy's own (public) client.
async fn revoke(world: &World, token: &str, client_id: &str) {
    let status = reqwest::Client::new()
        .post(format!("{}/token/revocation", world.issuer))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "token={}&client_id={}",
            urlencode(token),
            urlencode(client_id)
        ))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "revocation: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_leads_to_a_new_sign_in() {
    let Some((world, tokens)) = signed_in(3600).await else {
        return;
    };
    let (_, client) = stored(&world, "_client_info.json");
    let client_id = client["client_id"].as_str().unwrap();
    revoke(&world, tokens["refresh_token"].as_str().unwrap(), client_id).await;
    revoke(&world, tokens["access_token"].as_str().unwrap(), client_id).await;
    session(&world, &[], &[]).await;
    assert_eq!(
        sign_ins(&world).len(),
        2,
        "the refresh was refused: signed in again"
    );
    let (_, now) = stored(&world, "_tokens.json");
    assert_ne!(now["access_token"], tokens["access_token"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_stream_gets_a_new_token_and_opens() {
    let Some((world, before)) = signed_in(3600).await else {
        return;
    };
    world.streams.refuse.store(1, Ordering::SeqCst);
    let mut agent = Agent::start(&world, &[], &[]);
    agent.handshake().await;
    // The stream opens in the background after `notifications/initialized`.
    for _ in 0..100 {
        if world.streams.opened.load(Ordering::SeqCst) > 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        world.streams.refuse.load(Ordering::SeqCst),
        0,
        "refused once"
    );
    assert_eq!(
        world.streams.opened.load(Ordering::SeqCst),
        2,
        "the first run's stream, then this one's after a new token"
    );
    let answer = agent.status(2).await;
    assert!(answer["result"]["content"].is_array(), "{answer}");
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    let (_, after) = stored(&world, "_tokens.json");
    assert_ne!(after["access_token"], before["access_token"], "refreshed");
    assert_eq!(sign_ins(&world).len(), 1, "no second sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_started_together_sign_in_once() {
    let Some(world) = world(3600).await else {
        return;
    };
    let (a, b) = tokio::join!(session(&world, &[], &[]), session(&world, &[], &[]));
    assert_eq!(a, b);
    assert_eq!(sign_ins(&world), ["200"], "one browser, one callback port");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_session_is_renewed_with_the_token() {
    let Some((world, mut agent, first)) = agent_after_a_call(3600).await else {
        return;
    };
    let ids = world.session_ids().await;
    assert_eq!(ids.len(), 1);
    for id in &ids {
        world.sessions.close_session(id).await.unwrap();
    }
    let again = agent.status(3).await;
    assert_eq!(
        again["result"], first["result"],
        "answered in a new session"
    );
    let now = world.session_ids().await;
    assert_eq!(now.len(), 1, "one new session");
    assert_ne!(now, ids);
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    assert!(
        world.sessions.sessions.read().await.is_empty(),
        "ended at exit (DELETE with the token)"
    );
    assert_eq!(sign_ins(&world).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_session_whose_new_initialize_is_refused_gets_a_new_token() {
    let Some((world, mut agent, first)) = agent_after_a_call(3600).await else {
        return;
    };
    let (_, before) = stored(&world, "_tokens.json");
    world.streams.refuse_new.store(1, Ordering::SeqCst);
    for id in &world.session_ids().await {
        world.sessions.close_session(id).await.unwrap();
    }
    let again = agent.status(3).await;
    assert_eq!(
        again["result"], first["result"],
        "answered in a new session"
    );
    assert_eq!(
        world.streams.refuse_new.load(Ordering::SeqCst),
        0,
        "refused once"
    );
    let (_, after) = stored(&world, "_tokens.json");
    assert_ne!(after["access_token"], before["access_token"], "refreshed");
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
    assert_eq!(sign_ins(&world).len(), 1, "no second sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_signs_in_with_client_credentials() {
    let Some(world) = world(3600).await else {
        return;
    };
    let info = r#"{"client_id":"machine","client_secret":"${MACHINE_SECRET}"}"#;
    let flags = ["--client-credentials", "--static-oauth-client-info", info];
    session(&world, &flags, &[("MACHINE_SECRET", "machine-secret")]).await;
    assert!(sign_ins(&world).is_empty(), "no browser");
    let (_, tokens) = stored(&world, "_tokens.json");
    assert!(tokens["access_token"].is_string());
    // A wrong secret (tokens of their own: another resource name): the
    // agent gets an error, not a hang.
    let resource = format!("http://{}/mcp#other", world.mcp);
    let mut agent = Agent::start(
        &world,
        &[&flags[..], &["--resource", &resource]].concat(),
        &[("MACHINE_SECRET", "wrong")],
    );
    let init = agent.handshake().await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("sign-in"), "{init}");
    agent.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_header_from_a_header_file_needs_no_oauth() {
    let Some(world) = world(3600).await else {
        return;
    };
    // A token of the machine client, put in a header file as ${TOKEN}.
    let answer = reqwest::Client::new()
        .post(format!("{}/token", world.issuer))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("authorization", "Basic bWFjaGluZTptYWNoaW5lLXNlY3JldA==")
        .body(format!(
            "grant_type=client_credentials&scope=mcp&resource={}",
            urlencode(&format!("http://{}/mcp", world.mcp))
        ))
        .send()
        .await
        .unwrap();
    let token: Value = serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap();
    let token = token["access_token"].as_str().expect("a machine token");
    let file = world.auth_dir.path().join("headers.txt");
    std::fs::write(&file, "# credentials\nAuthorization: Bearer ${TOKEN}\n").unwrap();
    let file = file.to_str().unwrap();
    session(&world, &["--header-file", file], &[("TOKEN", token)]).await;
    assert!(sign_ins(&world).is_empty());
    // The same without the variable: a one-line error naming it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args([
            "proxy",
            &format!("http://{}/mcp", world.mcp),
            "--header-file",
            file,
        ])
        .env_remove("TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("TOKEN") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn mcp_remote_flags_without_meaning_here_are_refused_by_name() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
            .arg("proxy")
            .arg("http://127.0.0.1:9/mcp")
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
        (&["--transport", "sse"][..], "--transport \"sse\""),
        (&["--protocol", "auto"][..], "--protocol auto"),
        (
            &["--authorize-param", "state=x"][..],
            "--authorize-param state",
        ),
    ] {
        let (ok, err) = run(args);
        assert!(!ok, "{args:?} refused");
        assert!(err.contains(named), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let (ok, err) = run(&[
        "--allow-http",
        "--transport",
        "http-only",
        "--silent",
        "--disable-cookies",
    ]);
    assert!(ok, "accepted flags, stdin closed at once: {err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["proxy", "http://mcp.example/mcp"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--allow-http"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_of_2025_at_a_server_that_requires_2026_07_28_gets_a_clear_error() {
    // rmcp, stateless, demanding the 2026-07-28 per-request `_meta` of every
    // request after the handshake: an earlier agent cannot be served.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_stateless_protocol_metadata_required(true);
    let service = StreamableHttpService::new(
        || Ok(common::mcp::MemoryServer),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let addr = common::mcp::serve_mcp(service, None).await;
    let out = tempfile::tempdir().unwrap();
    let mut cmd = proxy_command(&format!("http://{addr}/mcp"), out.path());
    cmd.arg("--no-oauth");
    let mut agent = Agent::spawn(cmd);
    let init = agent.handshake().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let status = agent.status(2).await;
    let message = status["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("protocol revision mismatch")
            && message.contains("2026-07-28")
            && message.contains("2025-11-25"),
        "{status}"
    );
    let (ok, _) = agent.finish().await;
    assert!(ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_tools_are_neither_listed_nor_called() {
    let mode = common::mcp::Mode::StatefulSse;
    let addr = common::mcp::serve_mcp(common::mcp::mcp_service(mode), None).await;
    let out = tempfile::tempdir().unwrap();
    let mut cmd = proxy_command(&format!("http://{addr}/mcp"), out.path());
    cmd.args(["--ignore-tool", "recall*", "--ignore-tool", "STATUS"]);
    let mut agent = Agent::spawn(cmd);
    agent.handshake().await;
    agent
        .say(json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}))
        .await;
    let list = agent.answer(2).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"slow_recall"), "{names:?}");
    assert!(names.contains(&"lro_extract"), "{names:?}");
    for hidden in ["recall_memories", "recall_structured", "status"] {
        assert!(!names.contains(&hidden), "{hidden} hidden: {names:?}");
    }
    let status = agent.status(3).await;
    assert_eq!(
        status["error"]["message"], "Tool \"status\" is not available",
        "{status}"
    );
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
}

/// A fault no real server shows on demand: a listener that reads each
/// request and then answers nothing (`head` empty) or only `head`, keeping
/// the connection open.
async fn stalling_server(head: &'static str) -> SocketAddr {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let _ = stream.write_all(head.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(120)).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_body_timeouts_answer_the_agent_instead_of_hanging() {
    let event_stream = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
    for (head, flag, expected) in [
        ("", "--headers-timeout", "headers timeout"),
        (event_stream, "--body-timeout", "body timeout"),
    ] {
        let addr = stalling_server(head).await;
        let out = tempfile::tempdir().unwrap();
        let mut cmd = proxy_command(&format!("http://{addr}/mcp"), out.path());
        cmd.args(["--no-oauth", flag, "1"]);
        let mut agent = Agent::spawn(cmd);
        let init = agent.handshake().await;
        let message = init["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{flag}: {init}");
        drop(agent);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_the_old_http_sse_transport_with_http_only_gets_a_clear_error() {
    let Some(dir) = common::interop_setup() else {
        return;
    };
    // server-everything in its HTTP+SSE (2024-11-05) mode: GET /sse, POST
    // /message. The default, http-first, would fall back to it
    // (tests/command/legacy_sse.rs); http-only says why it cannot.
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(dir.join("everything_server.mjs"))
        .arg("sse")
        .current_dir(&dir)
        .stderr(Stdio::null());
    let (_server, port) = common::start_listening(cmd, "server-everything (sse)").await;
    let out = tempfile::tempdir().unwrap();
    let mut cmd = proxy_command(&format!("http://127.0.0.1:{port}/sse"), out.path());
    cmd.args(["--no-oauth", "--transport", "http-only"]);
    let mut agent = Agent::spawn(cmd);
    let init = agent.handshake().await;
    let message = init["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("old HTTP+SSE transport") && message.contains("http-only"),
        "{init}"
    );
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_sleep_an_expired_token_and_a_dropped_session_both_recover() {
    let Some((world, mut agent, first)) = agent_after_a_call(2).await else {
        return;
    };
    // A large result, offloaded by the proxy to a local file.
    let recall = json!({"count": 200});
    agent
        .say(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                    "params": {"name": "recall_memories", "arguments": recall}}))
        .await;
    let large = agent.answer(10).await;
    let text = large["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let descriptor: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{large:.300}"));
    assert_eq!(descriptor["offloaded"], true, "{large:.300}");
    let (_, before) = stored(&world, "_tokens.json");
    for id in world.session_ids().await {
        world.sessions.close_session(&id).await.unwrap();
    }
    until_expired(&world, before["access_token"].as_str().unwrap()).await;
    let again = agent.status(3).await;
    assert_eq!(again["result"], first["result"], "{again}");
    // With a new token and a new session, the file made before is still
    // the agent's: files follow the agent, not the session or token.
    let extract = json!({"file_path": descriptor["file_path"], "query": ".id", "limit": 1});
    agent
        .say(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                    "params": {"name": "lro_extract", "arguments": extract}}))
        .await;
    let read = agent.answer(11).await;
    assert_ne!(read["result"]["isError"], true, "{read:.300}");
    assert!(
        read["result"]["content"][0]["text"].is_string(),
        "{read:.300}"
    );
    let (_, after) = stored(&world, "_tokens.json");
    assert_ne!(after["access_token"], before["access_token"], "refreshed");
    assert_eq!(world.session_ids().await.len(), 1, "a new session");
    assert_eq!(sign_ins(&world).len(), 1, "no second sign-in");
    let (ok, log) = agent.finish().await;
    assert!(ok, "{log}");
}
