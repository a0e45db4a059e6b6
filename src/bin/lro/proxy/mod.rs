//! The spec's local LRO proxy ("Remote Transport Proxy"): MCP over stdio to
//! the agent, streamable HTTP to the remote server, large results offloaded
//! into files on the agent's own disk, where its shell and `jq` are.
//!
//! ```text
//! agent ── stdin/stdout (one JSON-RPC message per line) ──► lro proxy
//!   lro proxy ── OffloadLayer ── announce as proxy ── HTTP ──► remote server
//! ```
//!
//! Each line from the agent is POSTed to the server as it comes (in
//! parallel: a long tool call never holds back the agent's answer to a
//! server request); the answer, JSON or an event stream, goes back one
//! message per line, each event as the server sends it. The answers pass
//! through the same [`OffloadLayer`] as any server's,
//! so large tool results become descriptors with files in a per-user `0700`
//! directory, and the layer answers `lro_extract` itself. Upstream, the
//! proxy registers as an LRO proxy (the `lro-proxy` header and
//! `clientInfo.proxy: true` in `initialize`, the spec's step 1), so a server
//! running LRO itself answers in full and the offloading happens once, here.
//! Nothing else is changed: messages are relayed byte for byte, minified
//! only when an event's data spans several lines.
//!
//! The session: the `Mcp-Session-Id` and the negotiated protocol version
//! of the `initialize` answer go with every later request; once the agent
//! says `notifications/initialized`, the server's GET stream is opened for
//! its own requests and notifications; at the end of stdin the session is
//! ended with `DELETE`. A request the server cannot be reached for, or
//! answers with an HTTP error, gets a JSON-RPC error answer, so the agent
//! never waits forever; a line that is not JSON gets the JSON-RPC parse
//! error. Logs go to stderr (`tracing`).
//!
//! Recovery, each at most once per message and unseen by the agent: a
//! `404` for a session the server dropped makes a new session with the
//! agent's own `initialize`; a `401` gets a new token ([`auth`]: refresh,
//! client credentials or a sign-in in the browser) that every later
//! request carries; so does a `401` to the GET of the server's stream or
//! to the `initialize` of a renewed session, each then sent once more. Bounds: `connect_timeout`, `headers_timeout` (status
//! and headers) and `body_timeout` (the longest silence in an answer).
//! Tools the user hid (`hidden_tools`) are refused here and left out of
//! `tools/list` answers.
//!
//! [`auth`]: crate::auth

pub mod args;
mod hidden_tools;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE,
};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tower_service::Service;

use crate::announce::{announce_in_headers, announce_in_initialize};
use crate::auth::{Auth, AuthError, AuthOptions};
use crate::connect::{ConnectError, ConnectOptions, failure_kind, upstream_client};
use self::hidden_tools::HiddenTools;
use crate::fetch::HttpClient;
use tower_lro::{OffloadBody, OffloadLayer, OffloadService, RequestBody};
use tower_lro::sse::{EventSplitter, event_data};
use tower_lro::{OffloadConfig, StoreError};

/// The header carrying the session id.
const SESSION_HEADER: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version.
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The longest line read from the agent (a message of 64 MiB).
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// How long a message sent in order may take to be taken by the server.
const IN_ORDER_TIMEOUT: Duration = Duration::from_secs(30);
/// How many times one message is sent again after a recovery (a new
/// token, a new session).
const MAX_RECOVERIES: usize = 2;
/// How long the end of the session (`DELETE`) may take at exit.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the proxy connects to and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// The remote MCP endpoint (`http://host/mcp` or `https://host/mcp`).
    pub upstream: Uri,
    /// Headers sent with every request upstream (e.g. `Authorization`).
    pub headers: HeaderMap,
    /// The offload configuration (output directory, threshold, ttl...).
    pub config: OffloadConfig,
    /// Whether the proxy registers upstream as an LRO proxy (default true).
    pub announce: bool,
    /// How upstream connections are opened (https roots, CA file, timeout).
    pub connect: ConnectOptions,
    /// OAuth sign-in on a `401` (default on, with [`AuthOptions::default`];
    /// `None`: a `401` is relayed as an error). Not used when `headers`
    /// carry an `Authorization` of their own.
    pub auth: Option<AuthOptions>,
    /// Plain `http` to a server that is not on loopback.
    pub allow_http: bool,
    /// How long the server may take to answer with a status and headers.
    pub headers_timeout: Option<Duration>,
    /// The longest silence within an answer's body (an event stream too).
    pub body_timeout: Option<Duration>,
    /// Tools hidden from the agent (`*` patterns, any case): their calls
    /// are refused, `tools/list` answers relayed without them.
    pub hidden_tools: Vec<String>,
}

impl ProxyOptions {
    /// A proxy to `upstream` with the default configuration.
    pub fn new(upstream: Uri) -> Self {
        ProxyOptions {
            upstream,
            headers: HeaderMap::new(),
            config: OffloadConfig::default(),
            announce: true,
            connect: ConnectOptions::default(),
            auth: Some(AuthOptions::default()),
            allow_http: false,
            headers_timeout: None,
            body_timeout: None,
            hidden_tools: Vec::new(),
        }
    }
}

/// Why the proxy stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The upstream URL or the TLS setup is not usable.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// Plain `http` to a server off loopback, not allowed.
    #[error(
        "upstream URL {0:?}: plain http is only for loopback servers; pass --allow-http for a trusted network"
    )]
    PlainHttp(String),
    /// The sign-in options cannot be used.
    #[error("oauth: {0}")]
    Auth(#[from] AuthError),
    /// The output directory cannot be used.
    #[error("output directory: {0}")]
    Store(#[from] StoreError),
    /// Reading the agent's messages failed.
    #[error("stdin: {0}")]
    Input(std::io::Error),
}

/// The session shared by the requests of one run.
#[derive(Debug, Default)]
struct Session {
    id: Option<HeaderValue>,
    version: Option<HeaderValue>,
    stream_opened: bool,
    /// How many times the session was renewed after the server dropped it.
    generation: u64,
    /// The agent's `initialize`, sent again to renew the session.
    initialize: Option<Bytes>,
}

/// What every request of one run shares.
struct Shared {
    client: HttpClient,
    upstream: Uri,
    headers: HeaderMap,
    announce: bool,
    /// The OAuth sign-in, when the server may ask for it.
    auth: Option<Auth>,
    headers_timeout: Option<Duration>,
    body_timeout: Option<Duration>,
    hidden: HiddenTools,
    session: Mutex<Session>,
    /// Held while a dropped session is renewed (one renewal at a time).
    renewing: tokio::sync::Mutex<()>,
    out: mpsc::UnboundedSender<String>,
}

/// Runs the proxy until `input` ends, writing to `output`.
pub async fn run<R, W>(options: ProxyOptions, input: R, output: W) -> Result<(), ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    check_upstream(&options)?;
    let layer = OffloadLayer::builder()
        .config(options.config.clone())
        .try_build()?;
    let (out, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(rx, output));
    let shared = Arc::new(Shared::new(options, out)?);
    if let Some(auth) = &shared.auth
        && let Err(e) = auth.prepare().await
    {
        tracing::warn!(target: "tower_lro", "oauth: {e}");
    }
    let service = tower_layer::Layer::layer(&layer, Upstream(shared.clone()));
    let read = read_lines(input, &shared, &service).await;
    goodbye(&shared).await;
    drop(service);
    drop(shared);
    let _ = writer.await;
    read
}

/// The upstream is an `http://` or `https://` URL with a host; plain
/// http only on loopback unless it was allowed.
fn check_upstream(options: &ProxyOptions) -> Result<(), ProxyError> {
    let upstream = &options.upstream;
    crate::connect::check_upstream(upstream)?;
    let Some(host) = upstream
        .host()
        .filter(|_| upstream.scheme_str() == Some("http"))
    else {
        return Ok(());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback && !options.allow_http {
        return Err(ProxyError::PlainHttp(upstream.to_string()));
    }
    Ok(())
}

/// Writes each message as one line, flushed.
async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::UnboundedReceiver<String>, mut out: W) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
            tracing::warn!(target: "tower_lro", "stdout closed; messages from the server are dropped");
            return;
        }
    }
}

/// Reads the agent's lines and sends each upstream in a task of its own;
/// waits for the tasks at the end of the input.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    shared: &Arc<Shared>,
    service: &OffloadService<Upstream>,
) -> Result<(), ProxyError> {
    let mut lines = BufReader::new(input);
    let mut tasks = tokio::task::JoinSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut lines)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(ProxyError::Input)?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES {
            tracing::error!(target: "tower_lro", "a message over {MAX_LINE_BYTES} bytes; stopping");
            break;
        }
        let Some(message) = message_of(&line, shared) else {
            continue;
        };
        // Order matters to the server (a tools/list must not overtake the
        // notifications/initialized before it): notifications, answers to
        // the server and `initialize` are sent and acknowledged before the
        // next line is read; other requests run on their own, so a long
        // tool call never holds back the agent's answer to a server request.
        // A message sent in order that takes long (a sign-in in the
        // browser) goes on in its task while the next lines are read.
        if message.in_order() {
            let (done, taken) = tokio::sync::oneshot::channel::<()>();
            let relayed = relay(message, shared.clone(), service.clone());
            tasks.spawn(async move {
                relayed.await;
                let _ = done.send(());
            });
            if tokio::time::timeout(shared.in_order_wait(), taken)
                .await
                .is_err()
            {
                tracing::warn!(target: "tower_lro", "the server took long to take a message; going on");
            }
        } else {
            tasks.spawn(relay(message, shared.clone(), service.clone()));
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The message of one line: trimmed, checked to be JSON (else the parse
/// error goes back to the agent).
fn message_of(line: &[u8], shared: &Shared) -> Option<Message> {
    let text = std::str::from_utf8(line).ok().map(str::trim);
    if text.is_some_and(str::is_empty) {
        return None;
    }
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => Some(Message::new(text.unwrap_or_default(), &value)),
        _ => {
            tracing::warn!(target: "tower_lro", "a line from the agent is not JSON");
            let error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line that is not JSON"}}"#;
            let _ = shared.out.send(error.to_owned());
            None
        }
    }
}

/// One message from the agent, with what the relay needs to know of it.
struct Message {
    bytes: Bytes,
    /// The id, when it is a request (an answer is owed).
    request_id: Option<Value>,
    method: Option<String>,
    /// The tool a `tools/call` names.
    tool: Option<String>,
    /// The 2026-07-28 routing headers the message's HTTP request carries.
    routing: Vec<(HeaderName, HeaderValue)>,
}

impl Message {
    /// Whether the message must reach the server before the next one is
    /// sent: anything but a request, and `initialize` (later requests need
    /// its session).
    fn in_order(&self) -> bool {
        self.request_id.is_none() || self.method.as_deref() == Some("initialize")
    }

    fn new(text: &str, value: &Value) -> Message {
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let request_id = match (value.get("id"), &method) {
            (Some(id), Some(_)) => Some(id.clone()),
            _ => None,
        };
        let tool = match method.as_deref() {
            Some("tools/call") => value.pointer("/params/name").and_then(Value::as_str),
            _ => None,
        };
        Message {
            bytes: Bytes::copy_from_slice(text.as_bytes()),
            tool: tool.map(str::to_owned),
            request_id,
            routing: method
                .as_deref()
                .map(|m| routing_headers(m, value))
                .unwrap_or_default(),
            method,
        }
    }
}

/// The per-request headers of the 2026-07-28 HTTP transport, for a message
/// that declares that version in `_meta`: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that name something (over
/// stdio the agent has no headers to send; the server checks them against
/// the body). Not derived: `Mcp-Param-*`, which needs the tool's schema.
fn routing_headers(method: &str, value: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let params = value.get("params");
    let version = params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
        .and_then(Value::as_str);
    let Some(version) = version else {
        return Vec::new();
    };
    let mut headers = Vec::new();
    let mut add = |name: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(&header_text(v)) {
            headers.push((HeaderName::from_static(name), v));
        }
    };
    add(VERSION_HEADER, version);
    add("mcp-method", method);
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(name) = name_key.and_then(|k| params?.get(k)?.as_str()) {
        add("mcp-name", name);
    }
    headers
}

/// A header value as the 2026-07-28 transport writes it: visible ASCII
/// without edge spaces as is, anything else as `=?base64?...?=`.
fn header_text(v: &str) -> String {
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && v.trim() == v
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if plain {
        return v.to_owned();
    }
    use base64::Engine as _;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(v)
    )
}

/// Sends one message upstream through the layer and relays the answer.
/// When the server has dropped the session (`404` to a request that
/// carried one), a new session is made with the agent's `initialize`; when
/// it wants a (new) token (`401`), one is got; either way the message is
/// sent once more, so the agent never notices. A call of a hidden tool is
/// refused here.
async fn relay(message: Message, shared: Arc<Shared>, mut service: OffloadService<Upstream>) {
    if let (Some(tool), Some(id)) = (&message.tool, &message.request_id)
        && shared.hidden.hides(tool)
    {
        shared.send(&HiddenTools::refusal(id, tool));
        return;
    }
    if message.method.as_deref() == Some("initialize") {
        shared.lock().initialize = Some(message.bytes.clone());
    }
    let (mut with, mut sent) = send(&message, &shared, &mut service).await;
    // After a night's sleep both happen: the token expired (401) and the
    // server dropped the session (404, once the new token is taken).
    for _ in 0..MAX_RECOVERIES {
        let Ok(response) = &sent else { break };
        let status = response.status();
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match recover(status, challenge, &with, &message, &shared).await {
            Recovery::Retry => (with, sent) = send(&message, &shared, &mut service).await,
            Recovery::Fail(why) => sent = Err(UpstreamError::Auth(why)),
            Recovery::None => break,
        }
    }
    let answer = match sent {
        Ok(response) => deliver(response, &shared, &message).await,
        Err(UpstreamError::Auth(why)) => Err(why),
        Err(e) => Err(format!("the server cannot be reached ({})", error_kind(&e))),
    };
    if let Err(why) = answer {
        tracing::warn!(target: "tower_lro", method = ?message.method, "{why}");
        shared.owe_error(&message, &why);
    }
    if message.method.as_deref() == Some("notifications/initialized") {
        open_stream(&shared);
    }
}

/// What a request was sent with: the session generation (`None`: without
/// a session) and the `Authorization` value.
struct SentWith {
    generation: Option<u64>,
    bearer: Option<HeaderValue>,
}

/// What to do about an answer.
enum Recovery {
    /// Send the message once more (a new session, a new token).
    Retry,
    /// Answer the agent with this error.
    Fail(String),
    /// Relay the answer.
    None,
}

/// POSTs one message through the layer; returns what it was sent with and
/// the answer.
async fn send(
    message: &Message,
    shared: &Shared,
    service: &mut OffloadService<Upstream>,
) -> (
    SentWith,
    Result<Response<OffloadBody<Incoming>>, UpstreamError>,
) {
    let mut request = shared.post(message.bytes.clone());
    for (name, value) in &message.routing {
        request.headers_mut().insert(name, value.clone());
    }
    let generation = {
        let session = shared.lock();
        session.id.as_ref().map(|_| session.generation)
    };
    let with = SentWith {
        generation,
        bearer: request.headers().get(AUTHORIZATION).cloned(),
    };
    (with, service.call(request).await)
}

/// A dropped session (`404` to a request that carried one) is renewed; a
/// `401` gets a new token (refresh, or sign-in); either way the message is
/// sent once more.
async fn recover(
    status: StatusCode,
    challenge: Option<String>,
    with: &SentWith,
    message: &Message,
    shared: &Arc<Shared>,
) -> Recovery {
    let initialize = message.method.as_deref() == Some("initialize");
    match (status, with.generation, &shared.auth) {
        (StatusCode::NOT_FOUND, Some(generation), _) if !initialize => {
            tracing::info!(target: "tower_lro", "the server dropped the session; renewing it");
            renew_session(shared, generation).await;
            Recovery::Retry
        }
        (StatusCode::UNAUTHORIZED, _, Some(auth)) => {
            match auth.renew(challenge.as_deref(), with.bearer.as_ref()).await {
                Ok(()) => Recovery::Retry,
                Err(e) => {
                    tracing::warn!(target: "tower_lro", "oauth: {e}");
                    Recovery::Fail(format!("the server needs a sign-in, which failed: {e}"))
                }
            }
        }
        (StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED, None, _) if initialize => {
            Recovery::Fail(format!(
                "the server answered HTTP {} to initialize: it may speak only the old HTTP+SSE transport (2024-11-05), which lro proxy does not support",
                status.as_u16()
            ))
        }
        _ => Recovery::None,
    }
}

/// A new session in place of the one the server dropped (generation
/// `dropped`): the agent's `initialize` again (its answer is not relayed:
/// the agent has had one), then `notifications/initialized`, then the
/// server's GET stream again. Done once however many requests saw the 404.
async fn renew_session(shared: &Arc<Shared>, dropped: u64) {
    let _one_at_a_time = shared.renewing.lock().await;
    let initialize = {
        let mut session = shared.lock();
        if session.generation != dropped {
            return;
        }
        session.generation += 1;
        session.id = None;
        session.stream_opened = false;
        session.initialize.clone()
    };
    let Some(initialize) = initialize else { return };
    let Some(response) = new_session(shared, initialize).await else {
        return;
    };
    shared.remember_session(response.headers());
    let _ = response.into_body().collect().await;
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let (parts, _) = shared.post(initialized.clone()).into_parts();
    let _ = shared.send_upstream(parts, initialized).await;
    open_stream(shared);
}

/// Why a request upstream got no answer.
#[derive(Debug, thiserror::Error)]
enum UpstreamError {
    /// The connection failed.
    #[error("{0}")]
    Client(#[from] hyper_util::client::legacy::Error),
    /// No status and headers within `--headers-timeout`.
    #[error("no answer in time")]
    Timeout,
    /// A sign-in was needed and failed.
    #[error("{0}")]
    Auth(String),
}

/// A short, address-free account of an upstream error.
fn error_kind(e: &UpstreamError) -> &'static str {
    match e {
        UpstreamError::Client(e) => failure_kind(e),
        UpstreamError::Timeout => "no answer within the headers timeout",
        UpstreamError::Auth(_) => "the sign-in failed",
    }
}

/// Relays one HTTP answer to the agent.
async fn deliver<B>(response: Response<B>, shared: &Shared, message: &Message) -> Result<(), String>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let status = response.status();
    if message.method.as_deref() == Some("initialize") && status.is_success() {
        shared.remember_session(response.headers());
    }
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return Ok(());
    }
    if !status.is_success() {
        return Err(refusal(status, response.into_body(), shared).await);
    }
    let event_stream = is_event_stream(response.headers());
    let body = response.into_body();
    if event_stream {
        relay_events(body, shared, message.method.as_deref()).await
    } else {
        let collected = within(shared.body_timeout, body.collect())
            .await
            .ok_or("the answer stalled (body timeout)")?;
        let bytes = collected.map_err(|e| format!("the answer broke off: {e}"))?;
        relay_json(&bytes.to_bytes(), shared, message)
    }
}

/// The largest error answer read for its JSON-RPC error.
const MAX_REFUSAL_BYTES: usize = 64 << 10;
/// How long an error answer's body may take.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the agent is told about an HTTP error answer: the server's own
/// JSON-RPC error message when it sent one, and, when the server demands
/// the 2026-07-28 revision of an agent that speaks an earlier one, what
/// that means.
async fn refusal<B>(status: StatusCode, body: B, shared: &Shared) -> String
where
    B: http_body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut bytes = Vec::new();
    while bytes.len() < MAX_REFUSAL_BYTES {
        match within(Some(REFUSAL_TIMEOUT), body.frame()).await {
            Some(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    let error = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("error").cloned());
    let code = error.as_ref().and_then(|e| e.get("code")?.as_i64());
    let Some(message) = error.as_ref().and_then(|e| e.get("message")?.as_str()) else {
        return format!("the server answered HTTP {}", status.as_u16());
    };
    let revision = shared
        .lock()
        .version
        .as_ref()
        .and_then(|v| v.to_str().ok().map(str::to_owned));
    let per_request = message.contains("protocolVersion") && message.contains("_meta");
    match revision {
        Some(agent) if agent.as_str() < "2026-07-28" && (per_request || code == Some(-32022)) => {
            format!(
                "protocol revision mismatch: the server requires the 2026-07-28 revision on every request ({message}), and the agent negotiated {agent}; lro proxy relays the agent's own revision and does not translate between them, so use an agent that speaks 2026-07-28"
            )
        }
        _ => format!("the server answered HTTP {}: {message}", status.as_u16()),
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// A JSON answer: one message, or a batch (one line per message).
fn relay_json(bytes: &[u8], shared: &Shared, message: &Message) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the answer is not UTF-8".to_owned())?;
    if message.method.as_deref() == Some("initialize") {
        shared.remember_version(text);
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) {
        Ok(batch) => batch
            .iter()
            .for_each(|m| shared.send_answer(m.get(), message.method.as_deref())),
        Err(_) => shared.send_answer(text, message.method.as_deref()),
    }
    Ok(())
}

/// An event stream: each event's data, as it comes; `method`: the request
/// it answers (`None`: the server's own stream).
async fn relay_events<B>(body: B, shared: &Shared, method: Option<&str>) -> Result<(), String>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut body = std::pin::pin!(body);
    let mut splitter = EventSplitter::default();
    while let Some(frame) = within(shared.body_timeout, body.frame())
        .await
        .ok_or("the event stream stalled (body timeout)")?
    {
        let frame = frame.map_err(|e| format!("the event stream broke off: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        splitter.push(&data);
        while let Some(event) = splitter.next_event() {
            shared.send_event(&event, method);
        }
    }
    if let Some(event) = splitter.finish_event() {
        shared.send_event(&event, method);
    }
    Ok(())
}

/// `future`'s output, or `None` when `limit` passes first.
async fn within<F: std::future::Future>(limit: Option<Duration>, future: F) -> Option<F::Output> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}

/// The server's answer to the agent's `initialize` sent again for a new
/// session; a `401` gets a new token and one more try.
async fn new_session(shared: &Arc<Shared>, initialize: Bytes) -> Option<Response<Incoming>> {
    with_fresh_token(shared, "a new session", || async {
        let (parts, _) = shared.post(initialize.clone()).into_parts();
        let bearer = parts.headers.get(AUTHORIZATION).cloned();
        let sent = shared.send_upstream(parts, initialize.clone()).await;
        (bearer, sent.map_err(|e| error_kind(&e)))
    })
    .await
}

/// The answer to what `send` sends (with the token it reports), unless it
/// fails or is refused; a `401` gets a new token and one more try. `what`
/// names the request in the log.
async fn with_fresh_token<F, Fut>(
    shared: &Shared,
    what: &str,
    send: F,
) -> Option<Response<Incoming>>
where
    F: Fn() -> Fut,
    Fut: Future<
        Output = (
            Option<HeaderValue>,
            Result<Response<Incoming>, &'static str>,
        ),
    >,
{
    for attempt in 0..2 {
        let (bearer, sent) = send().await;
        let response = match sent {
            Ok(response) => response,
            Err(why) => {
                tracing::info!(target: "tower_lro", "{what}: {why}");
                return None;
            }
        };
        let status = response.status();
        if status.is_success() {
            return Some(response);
        }
        if status != StatusCode::UNAUTHORIZED
            || attempt > 0
            || !renew_token(shared, &response, bearer).await
        {
            tracing::info!(target: "tower_lro", %status, "{what}: refused");
            return None;
        }
    }
    None
}

/// After a `401`: a new token (refresh, client credentials or a sign-in)
/// unless another request got one already; whether there is one now.
async fn renew_token<B>(
    shared: &Shared,
    response: &Response<B>,
    failed: Option<HeaderValue>,
) -> bool {
    let Some(auth) = shared.auth.as_ref() else {
        return false;
    };
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok());
    match auth.renew(challenge, failed.as_ref()).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(target: "tower_lro", "oauth: {e}");
            false
        }
    }
}

/// Opens the server's GET stream once per session, in the background.
fn open_stream(shared: &Arc<Shared>) {
    {
        let mut session = shared.session.lock().unwrap_or_else(|e| e.into_inner());
        if session.stream_opened || session.id.is_none() {
            return;
        }
        session.stream_opened = true;
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        let Some(response) = stream_response(&shared).await else {
            return;
        };
        if let Err(why) = relay_events(response.into_body(), &shared, None).await {
            tracing::info!(target: "tower_lro", "server stream ended: {why}");
        }
    });
}

/// The server's answer to the GET of its stream, when it opens one; a
/// `401` gets a new token (as for any message) and one more try.
async fn stream_response(shared: &Arc<Shared>) -> Option<Response<Incoming>> {
    with_fresh_token(shared, "server stream", || async {
        let request = shared.request(Method::GET, Bytes::new());
        let bearer = request.headers().get(AUTHORIZATION).cloned();
        let sent = shared.client.request(request).await;
        (bearer, sent.map_err(|e| failure_kind(&e)))
    })
    .await
}

/// Ends the session upstream (`DELETE`), when there is one.
async fn goodbye(shared: &Shared) {
    let has_session = shared
        .session
        .lock()
        .map(|s| s.id.is_some())
        .unwrap_or(false);
    if !has_session {
        return;
    }
    let request = shared.request(Method::DELETE, Bytes::new());
    let _ = tokio::time::timeout(GOODBYE_TIMEOUT, shared.client.request(request)).await;
}

impl Shared {
    fn new(
        options: ProxyOptions,
        out: mpsc::UnboundedSender<String>,
    ) -> Result<Shared, ProxyError> {
        let client = upstream_client(&options.connect)?;
        let auth = match options.auth {
            Some(auth) if !options.headers.contains_key(AUTHORIZATION) => Some(Auth::new(
                auth,
                &options.upstream.to_string(),
                &options.headers,
                client.clone(),
            )?),
            _ => None,
        };
        Ok(Shared {
            client,
            upstream: options.upstream,
            headers: options.headers,
            announce: options.announce,
            auth,
            headers_timeout: options.headers_timeout,
            body_timeout: options.body_timeout,
            hidden: HiddenTools::new(&options.hidden_tools),
            session: Mutex::new(Session::default()),
            renewing: tokio::sync::Mutex::new(()),
            out,
        })
    }

    /// How long a message sent in order is waited for before the next
    /// line is read (longer when a sign-in may be under way).
    fn in_order_wait(&self) -> Duration {
        match &self.auth {
            Some(auth) => IN_ORDER_TIMEOUT + auth.sign_in_time(),
            None => IN_ORDER_TIMEOUT,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a request to the server, registering as an LRO proxy on the
    /// way (the header, and `clientInfo.proxy` in `initialize`).
    async fn send_upstream(
        &self,
        mut parts: http::request::Parts,
        bytes: Bytes,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let bytes = if self.announce {
            announce_in_headers(&mut parts.headers);
            announce_in_initialize(bytes)
        } else {
            bytes
        };
        let request = self
            .client
            .request(Request::from_parts(parts, Full::new(bytes)));
        match within(self.headers_timeout, request).await {
            Some(answer) => Ok(answer?),
            None => Err(UpstreamError::Timeout),
        }
    }

    /// A POST of one message, with the session's headers.
    fn post(&self, body: Bytes) -> Request<Full<Bytes>> {
        self.request(Method::POST, body)
    }

    fn request(&self, method: Method, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method.clone();
        *request.uri_mut() = self.upstream.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        if let Some(bearer) = self.auth.as_ref().and_then(Auth::bearer) {
            headers.insert(AUTHORIZATION, bearer);
        }
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = &session.id {
            headers.insert(SESSION_HEADER, id.clone());
        }
        if let Some(version) = &session.version {
            headers.insert(VERSION_HEADER, version.clone());
        }
        request
    }

    fn remember_session(&self, headers: &HeaderMap) {
        if let Some(id) = headers.get(SESSION_HEADER) {
            let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
            session.id = Some(id.clone());
        }
    }

    /// The protocol version of an `initialize` answer.
    fn remember_version(&self, answer: &str) {
        let version = serde_json::from_str::<Value>(answer).ok().and_then(|v| {
            let v = v.pointer("/result/protocolVersion")?.as_str()?.to_owned();
            HeaderValue::from_str(&v).ok()
        });
        if let Some(version) = version {
            let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
            session.version = Some(version);
        }
    }

    /// One message to the agent.
    fn send(&self, message: &str) {
        let _ = self.out.send(message.to_owned());
    }

    /// An answer to the agent's `method`: a `tools/list` one without the
    /// hidden tools.
    fn send_answer(&self, text: &str, method: Option<&str>) {
        match method
            .filter(|m| *m == "tools/list")
            .and_then(|_| self.hidden.list_without(text))
        {
            Some(shown) => self.send(&shown),
            None => self.send(text),
        }
    }

    /// The data of one event to the agent (none for priming events and
    /// comments); data of several lines is minified into one. In the
    /// answer to `initialize`, the negotiated version is remembered.
    fn send_event(&self, event: &Bytes, method: Option<&str>) {
        let Some(data) = event_data(event) else {
            return;
        };
        let Ok(text) = std::str::from_utf8(&data) else {
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        if text.contains('\n') || text.contains('\r') {
            self.send_answer(&one_line(text), method);
        } else {
            self.send_answer(text, method);
        }
        if method == Some("initialize") {
            self.remember_version(text);
        }
    }

    /// The JSON-RPC error a request is owed when its answer cannot come.
    fn owe_error(&self, message: &Message, why: &str) {
        let Some(id) = &message.request_id else {
            return;
        };
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32000, "message": format!("lro proxy: {why}")},
        });
        self.send(&error.to_string());
    }
}

/// The service behind the layer: sends to the server, registering as an
/// LRO proxy on the way.
#[derive(Clone)]
struct Upstream(Arc<Shared>);

impl Service<Request<RequestBody<Full<Bytes>>>> for Upstream {
    type Response = Response<Incoming>;
    type Error = UpstreamError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<RequestBody<Full<Bytes>>>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // Our own Full body inside the tee: it cannot fail.
            let bytes = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            shared.send_upstream(parts, bytes).await
        })
    }
}

/// A JSON text on one line: a JSON text holds CR and LF only as whitespace
/// between tokens (inside strings they are escaped), so each becomes a
/// space and the value is the same.
fn one_line(json: &str) -> String {
    json.replace(['\r', '\n'], " ")
}
