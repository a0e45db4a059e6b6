//! The spec's local LRO proxy ("Remote Transport Proxy"): MCP over stdio to
//! the agent, streamable HTTP to the remote server (or the old HTTP+SSE
//! transport: [`transport`]), large results offloaded into files on the
//! agent's own disk, where its shell and `jq` are.
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
//! Nothing else is changed: messages are relayed byte for byte, put on one
//! line only when an event's data spans several lines.
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
//! to the `initialize` of a renewed session, each then sent once more. Bounds:
//! `connect_timeout`, `headers_timeout` (status and headers) and
//! `body_timeout` (the longest silence in an answer). Memory: the queue to
//! stdout is bounded (a server that floods an agent that reads slowly is
//! slowed down, its stream read no faster than stdout is), and so is an
//! event of an event stream while it comes ([`answer`]).
//! Tools the user hid ([`hidden_tools`]) are refused here and left out of
//! `tools/list` answers.
//!
//! [`auth`]: crate::auth

//!
//! The files, in the order a message goes through them:
//!
//! * [`stdio`] — the agent's side: lines in (bounded, parse errors
//!   answered), the order they are sent in, lines out;
//!   [`message`] — what the relay needs to know of one line (request id,
//!   method, tool, the 2026-07-28 routing headers).
//! * [`relay`] — one message through the layer to the server, with its
//!   recoveries (a new session, a new token), then its answer relayed.
//! * [`upstream`] — the HTTP requests to the server (session headers,
//!   token, the LRO proxy announcement) and the service behind the layer;
//!   [`transport`] — which transport that service speaks (`--transport`):
//!   streamable HTTP, or [`legacy_sse`], the old HTTP+SSE transport
//!   (2024-11-05), whose answers come on the server's event stream and are
//!   handed to the layer as the answers of their requests
//!   ([`upstream_body`]), so they are offloaded the same way.
//! * [`answer`] — the server's answer to the agent: a JSON body, or an
//!   event stream event by event; [`refusal`] — what the agent learns of
//!   an HTTP error.
//! * [`session`] — the session's life: remembered at `initialize`, its GET
//!   stream, renewed when the server drops it, ended with `DELETE`;
//!   [`fresh_token`] — a new token and one more try for the requests that
//!   do not go through the layer (the GET stream, a renewed `initialize`);
//!   [`keep_alive`] — pings of the proxy's own while the link is idle: a
//!   dead link or a dropped session found before the agent needs them.
//! * [`args`] — the `lro proxy` command line (mcp-remote's flags).

mod answer;
pub(crate) mod args;
mod fresh_token;
mod hidden_tools;
mod keep_alive;
mod legacy_sse;
mod message;
mod refusal;
mod relay;
mod session;
mod stdio;
pub(crate) mod transport;
mod upstream;
mod upstream_body;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Uri;
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;
use tower_lro::store::StoreError;

use self::hidden_tools::HiddenTools;
use self::session::goodbye;
use self::stdio::{Outbox, read_lines, write_lines};
use self::transport::{Strategy, Transport};
use self::upstream::Upstream;
use crate::auth::{Auth, AuthError, AuthOptions};
use crate::connect::{ConnectError, ConnectOptions, upstream_client};
use crate::fetch::HttpClient;

/// How long a message sent in order may take to be taken by the server.
const IN_ORDER_TIMEOUT: Duration = Duration::from_secs(30);

/// What the proxy connects to and how.
#[derive(Debug, Clone)]
pub(crate) struct ProxyOptions {
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
    /// Streamable HTTP, the old HTTP+SSE transport, or one then the other.
    pub transport: Strategy,
    /// Keep-alive: a `ping` of the proxy's own when the link has been idle
    /// this long ([`keep_alive`]); `None`: no pings.
    pub ping_interval: Option<Duration>,
}

impl ProxyOptions {
    /// A proxy to `upstream` with the default configuration.
    pub(crate) fn new(upstream: Uri) -> Self {
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
            transport: Strategy::default(),
            ping_interval: None,
        }
    }
}

/// Why the proxy stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyError {
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
    /// The task relaying the server's stream, once opened.
    stream: Option<tokio::task::AbortHandle>,
    /// Whether that stream broke off (rather than being refused or ended).
    stream_broken: bool,
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
    /// The bounded queue to stdout (a sender waits for room).
    out: Outbox,
    /// Which transport is spoken upstream (and the HTTP+SSE connection).
    transport: Transport,
    /// When a request was last sent upstream (keep-alive pings the idle).
    last_sent: Mutex<Instant>,
}

/// The header carrying the session id.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version.
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";

/// Runs the proxy until `input` ends, writing to `output`.
pub(crate) async fn run<R, W>(options: ProxyOptions, input: R, output: W) -> Result<(), ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    check_upstream(&options)?;
    // One agent is behind the proxy: its files are its own for the life of
    // the process, whatever its session or token (a renewed session or a
    // refreshed token would otherwise lose the files made before).
    let layer = OffloadLayer::builder()
        .config(options.config.clone())
        .partition(|_| Some("the agent of this lro proxy".to_owned()))
        .try_build()?;
    let (out, rx, room) = Outbox::new();
    let writer = tokio::spawn(write_lines(rx, room, output));
    let ping_interval = options.ping_interval;
    let shared = Arc::new(Shared::new(options, out)?);
    if let Some(auth) = &shared.auth
        && let Err(e) = auth.prepare().await
    {
        tracing::warn!(target: "tower_lro", "oauth: {e}");
    }
    let service = tower_layer::Layer::layer(&layer, Upstream(shared.clone()));
    let pings = ping_interval.map(|interval| keep_alive::spawn(&shared, interval));
    let read = read_lines(input, &shared, &service).await;
    if let Some(pings) = pings {
        pings.abort();
    }
    goodbye(&shared).await;
    shared.transport.legacy.close();
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

impl Shared {
    fn new(options: ProxyOptions, out: Outbox) -> Result<Shared, ProxyError> {
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
            transport: Transport::new(options.transport),
            last_sent: Mutex::new(Instant::now()),
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
}

/// `future`'s output, or `None` when `limit` passes first.
async fn within<F: std::future::Future>(limit: Option<Duration>, future: F) -> Option<F::Output> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}
