//! `lro gateway`: an HTTP reverse proxy that puts the offload layer in front
//! of any streamable-http MCP server, whatever it is written in, for agents
//! that reach it over the network.
//!
//! ```text
//! MCP client ── HTTP ──► gateway (OffloadLayer) ── http(s) ──► MCP server
//! ```
//!
//! Every request on a route's path (the upstream URL's with `--upstream`,
//! else the `[[gateway.route]]` tables' of the `--config` file, see
//! [`routes`]; `POST`, `GET`, `DELETE`) is forwarded to its upstream with
//! its headers (`Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`,
//! ...) minus the hop-by-hop ones, plus the configured ones; bodies stream
//! both ways, so events reach the client as the server sends them. Tool
//! results over the route's threshold become a descriptor and a JSONL
//! file, which remote agents read through `lro_extract` (the route's layer
//! answers it). Upstream, the gateway registers as an LRO proxy (the
//! `lro-proxy` header and `clientInfo.proxy: true`), so a server running
//! LRO itself answers in full and the offloading happens once, here.
//!
//! Client sockets get `TCP_NODELAY`; at most [`Limits::max_connections`]
//! are served at once; a connection that does not deliver a request head
//! within [`Limits::header_read_timeout`] (slow or idle) is closed, and a
//! request body must arrive whole within [`Limits::request_body_timeout`].
//! The upstream gets [`Limits::response_head_timeout`] to start its answer
//! and may then go silent at most [`Limits::body_idle_timeout`] at a time
//! ([`deadline`]).
//! Failures answer `502` or `504` with a body that names no address; the
//! details go to the log. `GET` on the health path answers `200`; on the
//! readiness path, `200` while every route's store can be written, else
//! `503`; on the metrics path, the [`metrics`]. On shutdown, requests in
//! flight finish (within [`Limits::shutdown_grace`]) and the cleanup tasks
//! stop.
//!
//! [`args`] turns the `lro gateway` command line into [`GatewayOptions`];
//! [`Gateway::bind`] checks them and binds, [`Gateway::serve`] runs until
//! [`shutdown_signal`]. The files, one per concern: [`listen`] (accept,
//! `TCP_NODELAY`, the connection cap), [`limits`], [`routes`] (the routes
//! file), [`route`] (health, readiness, metrics, the served paths, `404`),
//! [`metrics`] (their names and labels), [`forward`] (the request upstream
//! and its answer back), [`deadline`] (bodies with a clock), [`serve`]
//! (hyper's connections, the graceful end), [`shutdown`] (SIGINT,
//! SIGTERM); for chat routes, [`tenants`] (a history offload per caller),
//! [`read_back`] (the `lro_history_read` tool answered here) and [`relay`]
//! (streamed answers relayed around it). Rust programs that want a gateway
//! of their own put `tower_lro::offload::OffloadLayer` in front of their
//! proxy.

pub(crate) mod args;
mod deadline;
mod forward;
mod limits;
mod listen;
mod metrics;
mod read_back;
mod relay;
mod route;
mod routes;
mod serve;
mod shutdown;
mod tenants;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

pub(crate) use limits::Limits;
pub(crate) use shutdown::shutdown_signal;

use self::forward::{Forward, Upstream};
use self::listen::Listener;
use self::metrics::Metrics;
use self::route::{Route, RouteKind, Router};
use self::tenants::Tenants;
use crate::connect::{ConnectError, ConnectOptions, check_upstream, upstream_client};
use tower_lro::cleanup::CleanupHandle;
use tower_lro::config::OffloadConfig;
use tower_lro::history::HistoryConfig;
use tower_lro::offload::BindingKey;
use tower_lro::offload::OffloadLayer;
use tower_lro::store::{FsStore, StoreError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The object store of a chat route's files (none without the
/// `object-store` feature).
#[cfg(feature = "object-store")]
pub(crate) type Bucket = tower_lro::store::BucketStore;
/// The object store of a chat route's files (none without the
/// `object-store` feature).
#[cfg(not(feature = "object-store"))]
pub(crate) type Bucket = std::convert::Infallible;
/// The body type flowing through the gateway in both directions.
type GatewayBody = UnsyncBoxBody<Bytes, BoxError>;

/// The default health endpoint path.
pub(crate) const DEFAULT_HEALTH_PATH: &str = "/healthz";
/// The default readiness endpoint path.
pub(crate) const DEFAULT_READY_PATH: &str = "/readyz";
/// The default metrics endpoint path.
pub(crate) const DEFAULT_METRICS_PATH: &str = "/metrics";

/// One served path and the upstream it forwards to.
#[derive(Debug, Clone)]
pub(crate) struct RouteOptions {
    /// The path served (e.g. `/github/mcp`); exact match.
    pub path: String,
    /// The upstream MCP endpoint (`http://` or `https://`); requests on
    /// [`path`](Self::path) go to its path.
    pub upstream: Uri,
    /// Headers sent with every request upstream (e.g. `Authorization`),
    /// in place of the client's of the same name.
    pub headers: HeaderMap,
    /// The offload configuration of this route (threshold, output
    /// directory, ttl...): its files are readable through it only.
    pub config: OffloadConfig,
    /// `Some`: a chat route (`lro history`, `kind = "history"`): the
    /// history offload with this configuration in front of a chat
    /// provider, serving every path under the upstream URL's (its
    /// `/chat/completions`, `/messages`, `/responses` rewritten, the others
    /// passed through); `config` is then unused.
    pub history: Option<HistoryConfig>,
}

impl RouteOptions {
    /// A route serving the upstream URL's own path, with the defaults.
    pub(crate) fn new(upstream: Uri) -> Self {
        RouteOptions {
            path: upstream.path().to_owned(),
            upstream,
            headers: HeaderMap::new(),
            config: OffloadConfig::default(),
            history: None,
        }
    }
}

/// What the gateway serves and forwards to.
#[derive(Debug, Clone)]
pub(crate) struct GatewayOptions {
    /// The routes: paths served and their upstreams (at least one).
    pub routes: Vec<RouteOptions>,
    /// Where to listen (port 0: any free port).
    pub listen: SocketAddr,
    /// Whether to register upstream as an LRO proxy (default true).
    pub announce: bool,
    /// How upstream connections are opened (CA file, connect timeout).
    pub connect: ConnectOptions,
    /// Limits against slow, idle and too many clients; upstream timeouts.
    pub limits: Limits,
    /// The health endpoint's path (default [`DEFAULT_HEALTH_PATH`]).
    pub health_path: String,
    /// The readiness endpoint's path (default [`DEFAULT_READY_PATH`]).
    pub ready_path: String,
    /// The metrics endpoint's path (default [`DEFAULT_METRICS_PATH`]).
    pub metrics_path: String,
    /// Requests up to this many bytes are read to find the tool calls to
    /// watch (default: the layer's, 1 MiB); answers to larger ones pass.
    pub max_request_bytes: Option<usize>,
    /// The key binding files to their caller's credentials, shared by the
    /// replicas of a fleet (default: a random key per process).
    pub binding_key: Option<tower_lro::offload::BindingKey>,
}

impl GatewayOptions {
    /// A gateway with `routes` on `listen` with the defaults.
    pub(crate) fn new(routes: Vec<RouteOptions>, listen: SocketAddr) -> Self {
        GatewayOptions {
            routes,
            listen,
            announce: true,
            connect: ConnectOptions::default(),
            limits: Limits::default(),
            health_path: DEFAULT_HEALTH_PATH.to_owned(),
            ready_path: DEFAULT_READY_PATH.to_owned(),
            metrics_path: DEFAULT_METRICS_PATH.to_owned(),
            max_request_bytes: None,
            binding_key: None,
        }
    }
}

/// Why the gateway cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GatewayError {
    /// The upstream URL or the TLS setup is not usable.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The output store (directory or object storage) cannot be used.
    #[error("output store: {0}")]
    Store(#[from] StoreError),
    /// The object storage of a route cannot be used (a missing bucket or
    /// container, refused credentials): its URL, without credentials.
    #[error("output store {url}: {source}")]
    StoreAt {
        /// The store URL, user information and query left out.
        url: String,
        /// Why.
        source: StoreError,
    },
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address given.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The health, readiness or metrics path is not a path, or is the
    /// served path or another of them.
    #[error(
        "{0} path {1:?}: expected a path starting with / other than the served ones and the other endpoints'"
    )]
    BadEndpointPath(&'static str, String),
    /// A route's path is not a path or is served twice, or there is none.
    #[error("route path {0:?}: expected a path starting with /, served by one route only")]
    BadRoutePath(String),
    /// No route.
    #[error("no route: give --upstream, or [[gateway.route]] tables in the --config file")]
    NoRoute,
}

/// A gateway bound to its address, ready to [`serve`](Gateway::serve).
#[derive(Debug)]
pub(crate) struct Gateway {
    listener: Listener,
    router: Router,
    limits: Limits,
    cleanup: Vec<CleanupHandle>,
    local_addr: SocketAddr,
}

impl Gateway {
    /// Checks the options, makes the output directory and the upstream
    /// client, binds the address and starts the cleanup task.
    pub(crate) async fn bind(mut options: GatewayOptions) -> Result<Gateway, GatewayError> {
        if options.routes.is_empty() {
            return Err(GatewayError::NoRoute);
        }
        for (i, route) in options.routes.iter().enumerate() {
            check_upstream(&route.upstream)?;
            let twice = options.routes[..i].iter().any(|r| r.path == route.path);
            if !route.path.starts_with('/') || twice {
                return Err(GatewayError::BadRoutePath(route.path.clone()));
            }
        }
        let served: Vec<&str> = options.routes.iter().map(|r| r.path.as_str()).collect();
        check_endpoints(
            &served,
            &[
                ("health", &options.health_path),
                ("readiness", &options.ready_path),
                ("metrics", &options.metrics_path),
            ],
        )?;
        let metrics = Metrics::new();
        let client = upstream_client(&options.connect)?;
        // Binds chat routes' files to their callers (MCP routes take the
        // option itself: their layer makes its own key without one).
        let key = options
            .binding_key
            .clone()
            .unwrap_or_else(BindingKey::random);
        let mut routes = Vec::with_capacity(options.routes.len());
        let mut cleanup = Vec::new();
        for route in std::mem::take(&mut options.routes) {
            let path: Arc<str> = route.path.into();
            let upstream = Upstream {
                client: client.clone(),
                uri: route.upstream,
                headers: route.headers,
                // A chat provider is no MCP server to announce a proxy to.
                announce: options.announce && route.history.is_none(),
                keep_path: route.history.is_some(),
                response_head_timeout: options.limits.response_head_timeout,
                body_idle_timeout: options.limits.body_idle_timeout,
                latency: metrics.upstream_duration(&path),
            };
            let forward = Forward(Arc::new(upstream));
            let kind = match route.history {
                Some(history) => history_route(history, &path, &metrics, forward, key.clone())?,
                None => {
                    let (kind, handle) =
                        mcp_route(route.config, &path, &metrics, &options, forward)?;
                    cleanup.extend(handle);
                    kind
                }
            };
            routes.push(Route { path, kind });
        }
        let bind = |source| GatewayError::Bind {
            addr: options.listen,
            source,
        };
        let tcp = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(bind)?;
        let listener = Listener::new(tcp, options.limits.max_connections);
        let local_addr = listener.local_addr().map_err(bind)?;
        Ok(Gateway {
            listener,
            router: Router {
                routes: routes.into(),
                health: options.health_path.into(),
                ready: options.ready_path.into(),
                metrics_path: options.metrics_path.into(),
                metrics,
            },
            limits: options.limits,
            cleanup,
            local_addr,
        })
    }

    /// The address the gateway listens on.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The paths it serves, one per route.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.router.routes.iter().map(|r| &*r.path)
    }
}

/// An MCP route: the offload layer over `forward`, and its cleanup task.
fn mcp_route(
    config: OffloadConfig,
    path: &str,
    metrics: &Arc<Metrics>,
    options: &GatewayOptions,
    forward: Forward,
) -> Result<(RouteKind, Option<CleanupHandle>), GatewayError> {
    let auto_cleanup = config.auto_cleanup;
    let store_url = shown_url(&config.store);
    let mut layer = OffloadLayer::builder()
        .config(config)
        .event_hook(metrics.event_hook(path));
    if let Some(n) = options.max_request_bytes {
        layer = layer.max_request_bytes(n);
    }
    if let Some(key) = &options.binding_key {
        layer = layer.binding_key(key.clone());
    }
    let layer = layer.try_build().map_err(|source| match store_url {
        Some(url) => GatewayError::StoreAt { url, source },
        None => GatewayError::Store(source),
    })?;
    // The layer's one cleanup task, held to stop it on shutdown: the layer
    // is new (no request started its own) and this runs in a runtime, so
    // it is not refused.
    let handle = auto_cleanup.then(|| layer.spawn_cleanup().ok()).flatten();
    let service = tower_layer::Layer::layer(&layer, forward);
    Ok((RouteKind::Mcp { service, layer }, handle))
}

/// An object store URL as it may be shown: without user information or
/// query (where credentials could be); `None` for no store URL.
fn shown_url(store: &str) -> Option<String> {
    let store = store.trim();
    if store.is_empty() {
        return None;
    }
    let Ok(mut url) = url::Url::parse(store) else {
        return Some("(an unparsable URL)".to_owned());
    };
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    Some(url.to_string())
}

/// A chat route: the history offload, one per caller ([`Tenants`]), over
/// `forward`; its files also in the object store its `store` names (a
/// fleet's), checked at start.
fn history_route(
    config: HistoryConfig,
    path: &str,
    metrics: &Arc<Metrics>,
    forward: Forward,
    key: BindingKey,
) -> Result<RouteKind, GatewayError> {
    let store = FsStore::new(config.store_dir.clone()).trust_dir(config.trust_store_dir);
    let bucket = history_bucket(&config.store)?;
    if let Some(ttl) = config.file_ttl {
        tokio::spawn(sweep_history(
            config.store_dir.clone(),
            ttl,
            path.to_owned(),
        ));
    }
    let service = Tenants::new(config, key, forward, metrics.clone(), path, bucket.clone());
    Ok(RouteKind::History {
        service,
        store,
        bucket,
    })
}

/// Deletes the files of a chat route's `dir` unused for `ttl`, every
/// quarter of it (at least every second, at most every hour), for as long
/// as the gateway runs.
async fn sweep_history(dir: std::path::PathBuf, ttl: Duration, route: String) {
    let every = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let d = dir.clone();
        let swept = tokio::task::spawn_blocking(move || {
            tower_lro::history::sweep_history_dir(&d, ttl, std::time::SystemTime::now())
        });
        let Ok(sweep) = swept.await else { continue };
        if sweep.deleted > 0 {
            tracing::info!(target: "gateway", route = %route, deleted = sweep.deleted, scanned = sweep.scanned, "expired history files deleted");
        }
        for (path, error) in sweep.errors.iter().take(3) {
            tracing::warn!(target: "gateway", route = %route, path = %path.display(), error = %error, "history sweep");
        }
    }
}

/// The object store a chat route's `store` URL names, checked (`None`
/// for none).
#[cfg(feature = "object-store")]
fn history_bucket(url: &str) -> Result<Option<Arc<Bucket>>, GatewayError> {
    if url.trim().is_empty() {
        return Ok(None);
    }
    let shown = shown_url(url).unwrap_or_default();
    let at = |source| GatewayError::StoreAt {
        url: shown.clone(),
        source,
    };
    let bucket = Bucket::from_url(url.trim()).map_err(at)?;
    tower_lro::store::Store::check(&bucket).map_err(at)?;
    Ok(Some(Arc::new(bucket)))
}

/// Without the `object-store` feature, a chat route has no object store.
#[cfg(not(feature = "object-store"))]
fn history_bucket(url: &str) -> Result<Option<Arc<Bucket>>, GatewayError> {
    if url.trim().is_empty() {
        return Ok(None);
    }
    Err(GatewayError::StoreAt {
        url: shown_url(url).unwrap_or_default(),
        source: tower_lro::store::StoreError::Url {
            url: shown_url(url).unwrap_or_default(),
            reason: "object storage needs the `object-store` feature of tower-lro".into(),
        },
    })
}

/// Each endpoint path starts with `/` and differs from the served paths
/// and from the others (a clash is reported on the later one).
fn check_endpoints(
    served: &[&str],
    endpoints: &[(&'static str, &String)],
) -> Result<(), GatewayError> {
    for (i, (what, path)) in endpoints.iter().enumerate() {
        let clash = endpoints[..i].iter().any(|(_, other)| other == path);
        if !path.starts_with('/') || served.contains(&path.as_str()) || clash {
            return Err(GatewayError::BadEndpointPath(what, (*path).clone()));
        }
    }
    Ok(())
}

/// A whole body.
fn full(bytes: Bytes) -> GatewayBody {
    Full::new(bytes).map_err(|e| match e {}).boxed_unsync()
}

/// A short plain-text answer of the gateway's own.
fn text_response(status: StatusCode, text: &str) -> Response<GatewayBody> {
    let mut response = Response::new(full(Bytes::copy_from_slice(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
