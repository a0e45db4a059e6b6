//! [`OffloadLayer`] and its builder.
//!
//! The builder holds what is not configuration (estimator, store, event
//! hook, tenant partition, extraction limits, request-side transport
//! bounds) and one [`OffloadConfig`], given whole: every offload setting is
//! set there and only there. A layer runs at most one cleanup task, started
//! by itself (`auto_cleanup`) or by [`OffloadLayer::spawn_cleanup`],
//! never both.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;
use tower_layer::Layer;

use super::caller::{Partition, Serving};
use super::service::OffloadService;
use super::sessions::ProxySessions;
use super::state::{
    DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER,
    DEFAULT_PROXY_SESSION_TTL, Shared,
};
use crate::answer::BindingKey;
use crate::cleanup::{CleanupError, CleanupHandle};
use crate::config::OffloadConfig;
use crate::engine::Offloader;
use crate::engine::events::EventHook;
use crate::estimate::TokenEstimator;
use crate::extract::ExtractLimits;
use crate::store::{Store, StoreError};

/// Tower layer applying Large Result Offloading to an MCP streamable-http
/// endpoint.
///
/// Put it in front of any MCP streamable-http endpoint (an axum `Router`,
/// rmcp's `StreamableHttpService`, a hyper service, a gateway):
///
/// * a request is never held back: it reaches the inner service at once,
///   byte for byte, and only the chunks of a `POST` body are kept (by
///   reference, as the inner service reads them) up to a cap
///   ([`DEFAULT_MAX_REQUEST_BYTES`]). When the response arrives, the
///   request is classified from them; a body over the cap, not JSON, not
///   read to its end, or of another method gets its response passed
///   through. `GET` (never-ending SSE streams), `DELETE` and everything
///   else stream through untouched, never buffered;
/// * `tools/call` and `tasks/result` requests (also inside legacy JSON-RPC
///   batches) are watched: their id, tool name and arguments are kept;
/// * an `application/json` response whose length (`Content-Length`) proves
///   every watched result in it under its threshold streams on unread;
///   any other is collected; each watched result in it is handed to the
///   [`Offloader`] and, when offloaded, replaced by the descriptor result;
///   every other byte is unchanged and `Content-Length` is fixed;
/// * a `text/event-stream` response is split into events as they arrive:
///   events before the result (progress, logging, server requests) are
///   forwarded at once, byte for byte; only the event carrying a watched
///   result is rewritten (its `id:`, `event:` and other lines kept); after
///   the last watched result the stream is forwarded untouched;
/// * a request with the proxy header ([`DEFAULT_PROXY_HEADER`]: `1` or
///   `true`), from a session whose `initialize` declared
///   `clientInfo.proxy: true`, or whose `params._meta` carries
///   `"io.modelcontextprotocol/clientInfo": {"proxy": true}` (2026-07-28)
///   gets the inner response untouched;
/// * the inner service's errors, error statuses and broken bodies reach the
///   client as they were.
///
/// # Remote clients: offloaded data over MCP
///
/// A descriptor's `file_path` is on the server's disk, out of reach of a
/// remote agent. So, unless `extraction` is off
/// ([`OffloadConfig::extraction`]), the layer also serves the files
/// through MCP itself:
///
/// * `tools/call` of `lro_extract` (the spec's native extraction: a recipe
///   1-10 with `params`, or a custom jq `query`; `offset`/`limit` over the
///   output lines) and `lro_list` (the offloads this client may read), and
///   `resources/read` of `lro://files/{name}`, are answered by the layer,
///   without calling the inner service, as JSON or as an event stream
///   (what the client accepts, mirroring the server). An answer is at most
///   the threshold in estimated tokens; past it, it says which `offset`
///   comes next. Mistakes and refusals are tool errors (`isError: true`).
/// * the first page of a `tools/list` answer gets the two tools (unless the
///   server lists tools of those names: then their calls go to it), and an
///   `initialize` answer whose server declared no resources capability
///   gets one, so SDK clients may call `resources/read`.
/// * who may read what: a file made for a request with credentials (its
///   `Authorization` header) is readable by requests with the same
///   credentials, from any MCP session or none, and by no one else (a keyed
///   MAC of the header is in the file's header, see [`BindingKey`]);
///   [`OffloadLayerBuilder::partition`] binds files to tenants instead;
///   without either, the unguessable file name is the capability, and
///   `lro_list` shows a caller without credentials the files made without
///   any. "The same credentials" means the same header value, byte for
///   byte: a refreshed OAuth access token is new credentials, and files
///   made with the old one are refused to it (bind to a stable identity
///   with `partition`, e.g. the token's subject once an auth layer checked
///   it). A missing, expired, foreign file, a path outside the output
///   directory or a symbolic link all get the same error, which tells
///   nothing about other files.
/// * queries are untrusted code, bounded by [`ExtractLimits`]
///   ([`OffloadLayerBuilder::extract_limits`]): time, memory, output,
///   concurrency.
///
/// To answer a request itself, the layer reads a JSON `POST` body (up to
/// the classification cap) before calling the inner service, then plays
/// it back; so the inner service must be `Clone` (rmcp's
/// `StreamableHttpService` and axum's `Router` are): the readied service is
/// the one called and a clone takes its place. `GET` streams, other
/// methods, proxy clients and a layer with extraction off stream as before.
///
/// ```no_run
/// use axum::{Router, routing::post};
/// use tower_lro::config::OffloadConfig;
/// use tower_lro::offload::OffloadLayer;
///
/// # async fn handler() -> &'static str { "" }
/// let layer = OffloadLayer::new(
///     OffloadConfig::default()
///         .threshold_tokens(1600)
///         .output_dir("/tmp/lro"),
/// );
/// let app: Router = Router::new().route("/mcp", post(handler)).layer(layer);
/// ```
///
/// Its `Debug` shows settings and counts, never a session id or a tool's
/// arguments.
#[derive(Debug, Clone)]
pub struct OffloadLayer {
    shared: Arc<Shared>,
}

impl Default for OffloadLayer {
    /// A layer with the spec's defaults.
    fn default() -> Self {
        OffloadLayer::builder().build()
    }
}

impl OffloadLayer {
    /// A layer with `config` and the layer's defaults for the rest (the
    /// same as `OffloadLayer::builder().config(config).build()`).
    pub fn new(config: OffloadConfig) -> Self {
        OffloadLayer::builder().config(config).build()
    }

    /// A builder with the spec's defaults; give it an [`OffloadConfig`]
    /// with [`OffloadLayerBuilder::config`].
    pub fn builder() -> OffloadLayerBuilder {
        OffloadLayerBuilder::default()
    }

    /// The engine used by this layer.
    pub fn offloader(&self) -> &Offloader {
        &self.shared.offloader
    }

    /// Starts this layer's cleanup task (`offload_cleanup` of its files,
    /// every `cleanup_interval` of the configuration, the first run at
    /// once) and gives you its handle: it stops when the handle is shut
    /// down or dropped.
    ///
    /// A layer runs at most one cleanup task, whatever is called: once this
    /// succeeded, the layer starts none by itself (even with `auto_cleanup`
    /// on), and a second call is refused. Call it right after building the
    /// layer, before it serves a request: with `auto_cleanup` on, the first
    /// request starts the layer's own task, and this is then refused with
    /// [`CleanupError::AlreadyStarted`] (the running task goes on). Outside a
    /// tokio runtime it is refused with [`CleanupError::NoRuntime`].
    pub fn spawn_cleanup(&self) -> Result<CleanupHandle, CleanupError> {
        self.shared.hand_out_cleanup()
    }

    /// Bytes of responses buffered at this moment, across all services of
    /// this layer (not the spare buffer kept for the next large body: see
    /// [`OffloadConfig::max_buffered_bytes`](crate::OffloadConfig::max_buffered_bytes)).
    pub fn buffered_bytes(&self) -> usize {
        self.shared.buffers.in_use()
    }
}

impl<S> Layer<S> for OffloadLayer {
    type Service = OffloadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OffloadService::from_shared(inner, self.shared.clone())
    }
}

/// Builder of [`OffloadLayer`].
///
/// Every offload setting (threshold, output directory, ttl, tool policy,
/// cleanup, extraction on or off, buffer cap...) lives in [`OffloadConfig`],
/// the one place it is set, loaded or read: build one and give it whole
/// with [`config`](Self::config). The builder's own setters are what a
/// configuration file cannot hold: the estimator, the store, the event
/// hook, the tenant partition, the extraction limits and the request-side
/// transport bounds (proxy header, request cap, proxy sessions). So no
/// setter here can change or undo a configuration value, and the order of
/// the calls does not matter (a second `config` replaces the first, as
/// any second call of one setter does).
///
/// ```
/// use tower_lro::config::OffloadConfig;
/// use tower_lro::offload::OffloadLayer;
///
/// let config = OffloadConfig::default()
///     .threshold_tokens(4000)
///     .output_dir(std::env::temp_dir().join("lro-doc"))
///     .exclude_tools(["read_secret"]);
/// let layer = OffloadLayer::builder()
///     .config(config.clone())
///     .max_request_bytes(256 << 10)
///     .build();
/// assert_eq!(layer.offloader().config(), &config);
/// ```
///
/// The builder has no copies of the configuration's setters:
///
/// ```compile_fail
/// let layer = tower_lro::offload::OffloadLayer::builder().threshold_tokens(4000).build();
/// ```
///
/// Cloning it shares the estimator, store and event hook set so far.
#[derive(Clone)]
pub struct OffloadLayerBuilder {
    config: OffloadConfig,
    proxy_header: HeaderName,
    max_request_bytes: usize,
    max_proxy_sessions: usize,
    proxy_session_ttl: Duration,
    estimator: Option<Arc<dyn TokenEstimator>>,
    store: Option<Arc<dyn Store>>,
    hook: Option<EventHook>,
    extract_limits: ExtractLimits,
    partition: Option<Partition>,
    binding_key: Option<BindingKey>,
}

impl Default for OffloadLayerBuilder {
    /// The spec's defaults ([`OffloadConfig::default`]) and the layer's.
    fn default() -> Self {
        OffloadLayerBuilder {
            config: OffloadConfig::default(),
            proxy_header: HeaderName::from_static(DEFAULT_PROXY_HEADER),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_proxy_sessions: DEFAULT_MAX_PROXY_SESSIONS,
            proxy_session_ttl: DEFAULT_PROXY_SESSION_TTL,
            estimator: None,
            store: None,
            hook: None,
            extract_limits: ExtractLimits::default(),
            partition: None,
            binding_key: None,
        }
    }
}

impl std::fmt::Debug for OffloadLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadLayerBuilder")
            .field("config", &self.config)
            .field("proxy_header", &self.proxy_header)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("extract_limits", &self.extract_limits)
            .field("partition", &self.partition.is_some())
            .finish_non_exhaustive()
    }
}

impl OffloadLayerBuilder {
    /// Sets the offload configuration, every setting of it (default
    /// [`OffloadConfig::default`]). It is the only way to set one: nothing
    /// else of the builder touches it.
    pub fn config(mut self, config: OffloadConfig) -> Self {
        self.config = config;
        self
    }
    /// Name of the request header that asks for untouched responses
    /// (default [`DEFAULT_PROXY_HEADER`]).
    pub fn proxy_header(mut self, name: HeaderName) -> Self {
        self.proxy_header = name;
        self
    }
    /// Cap on the request body kept (by reference, as the inner service
    /// reads it) to classify a request; the responses to larger requests
    /// pass through untouched (default [`DEFAULT_MAX_REQUEST_BYTES`]).
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }
    /// Bound and idle expiry of the remembered proxy sessions (default
    /// [`DEFAULT_MAX_PROXY_SESSIONS`], [`DEFAULT_PROXY_SESSION_TTL`]).
    pub fn proxy_sessions(mut self, capacity: usize, ttl: Duration) -> Self {
        self.max_proxy_sessions = capacity;
        self.proxy_session_ttl = ttl;
        self
    }
    /// Replaces the token estimator (default
    /// [`ScriptAwareEstimator`](crate::estimate::ScriptAwareEstimator)).
    pub fn estimator(mut self, estimator: impl TokenEstimator) -> Self {
        self.estimator = Some(Arc::new(estimator));
        self
    }
    /// Replaces the file store (default: the configuration's `store` URL,
    /// see [`store::from_url`](crate::store::from_url); else an [`FsStore`](crate::FsStore) of
    /// the configuration's `output_dir`).
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }
    /// Limits of the queries `lro_extract` runs (time, memory, output,
    /// concurrency; see [`ExtractLimits`]). One extractor serves every
    /// service of the layer, so `max_concurrent` bounds them all.
    pub fn extract_limits(mut self, limits: ExtractLimits) -> Self {
        self.extract_limits = limits;
        self
    }
    /// The key of the MAC that binds offloaded files to their caller's
    /// credentials or tenant (see [`BindingKey`]). Default: a random key
    /// of this layer's own, so only this layer can read what it wrote;
    /// replicas serving each other's files share one key.
    pub fn binding_key(mut self, key: BindingKey) -> Self {
        self.binding_key = Some(key);
        self
    }
    /// Binds offloaded files to tenants instead of credentials: `partition`
    /// names the tenant of a request from its head (e.g. the authenticated
    /// principal an auth layer put in its extensions or headers). A file
    /// made for a request of tenant `t` can then be read (`lro_extract`,
    /// `lro_list`, `resources/read`) only by requests of tenant `t`. When it
    /// returns `None`, the request's credentials (its `Authorization`
    /// header) bind its files, if it has any; with neither, the unguessable
    /// file name is the capability.
    pub fn partition<F>(mut self, partition: F) -> Self
    where
        F: Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    {
        self.partition = Some(Arc::new(partition));
        self
    }
    /// Sends every event to `hook` too (see [`OffloadEvent`](crate::offload::OffloadEvent)).
    pub fn event_hook(mut self, hook: EventHook) -> Self {
        self.hook = Some(hook);
        self
    }
    /// Builds the layer, after checking that its output directory can be
    /// used: an error names what is wrong (the layer would still pass
    /// every result on, truncated by the spec's fallback when large).
    pub fn try_build(self) -> Result<OffloadLayer, StoreError> {
        let layer = self.build_unchecked();
        layer.shared.offloader.check_store()?;
        Ok(layer)
    }
    /// Builds the layer. If its output directory cannot be used, that is
    /// logged as an error now (and each large result falls back to the
    /// spec's truncation); use [`try_build`](Self::try_build) to stop instead.
    pub fn build(self) -> OffloadLayer {
        let layer = self.build_unchecked();
        if let Err(e) = layer.shared.offloader.check_store() {
            tracing::error!(target: "tower_lro", error = %e, "offload output directory unusable");
        }
        layer
    }
    fn build_unchecked(self) -> OffloadLayer {
        // The configuration's `store` URL, unless a store was given.
        let store = self.store.or_else(|| {
            let c = &self.config;
            (!c.store.is_empty()).then(|| {
                crate::store::from_url_or_unusable(&c.store, &c.output_dir, c.trust_output_dir)
            })
        });
        let mut offloader = Offloader::new(self.config);
        if let Some(estimator) = self.estimator {
            offloader = offloader.with_shared_estimator(estimator);
        }
        if let Some(store) = store {
            offloader = offloader.with_shared_store(store);
        }
        if let Some(hook) = self.hook {
            offloader = offloader.with_event_hook(hook);
        }
        OffloadLayer {
            shared: Arc::new(Shared {
                proxy_header: self.proxy_header,
                max_request_bytes: self.max_request_bytes,
                sessions: ProxySessions::new(self.max_proxy_sessions, self.proxy_session_ttl),
                serving: Serving::new(
                    self.extract_limits,
                    self.binding_key.unwrap_or_else(BindingKey::random),
                    self.partition,
                ),
                ..Shared::new(offloader)
            }),
        }
    }
}
