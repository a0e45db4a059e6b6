//! [`OffloadLayer`] and its builder.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderName;
use tower_layer::Layer;

use super::budget::BufferBudget;
use super::service::OffloadService;
use crate::engine::{OffloadConfig, Offloader, TokenEstimator, ToolPolicy};
use crate::lifecycle::cleanup::{CleanupHandle, Custodian};
use crate::lifecycle::events::EventHook;
use crate::lifecycle::sessions::ProxySessions;
use crate::lifecycle::store::Store;
use crate::wire::jsonrpc::RawCall;

/// Default name of the request header that asks for untouched responses.
/// Values `1` and `true` (any case) count.
pub const DEFAULT_PROXY_HEADER: &str = "lro-proxy";
/// Default cap on the request body kept to classify a request (1 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;
/// Proxy sessions remembered at most.
pub const DEFAULT_MAX_PROXY_SESSIONS: usize = 10_000;
/// A proxy session is forgotten after this long without a request.
pub const DEFAULT_PROXY_SESSION_TTL: Duration = Duration::from_secs(24 * 3600);

/// Calls that answered with `CreateTaskResult`, by task id: at most
/// [`TaskCalls::CAPACITY`], the oldest forgotten first (its result is then
/// still evaluated, under the name `tasks_result`).
#[derive(Debug, Default)]
pub(crate) struct TaskCalls {
    inner: Mutex<TaskMap>,
}

#[derive(Debug, Default)]
struct TaskMap {
    calls: HashMap<String, RawCall>,
    /// Task ids, oldest first (each once).
    order: VecDeque<String>,
}

impl TaskCalls {
    pub(crate) const CAPACITY: usize = 10_000;

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskMap> {
        // A panic while holding the lock leaves a valid map; keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers the call a task runs (with its own copy of the arguments).
    pub(crate) fn insert(&self, task: String, call: &RawCall) {
        let call = call.detached();
        let mut map = self.lock();
        if map.calls.insert(task.clone(), call).is_none() {
            map.order.push_back(task);
        }
        while map.order.len() > Self::CAPACITY {
            if let Some(oldest) = map.order.pop_front() {
                map.calls.remove(&oldest);
            }
        }
    }

    pub(crate) fn get(&self, task: &str) -> Option<RawCall> {
        self.lock().calls.get(task).cloned()
    }
}

/// State shared by every service of one layer.
#[derive(Debug)]
pub(crate) struct Shared {
    pub offloader: Offloader,
    pub proxy_header: HeaderName,
    pub max_request_bytes: usize,
    pub sessions: ProxySessions,
    pub tasks: TaskCalls,
    pub buffers: BufferBudget,
}

/// Tower layer applying Large Result Offloading to an MCP streamable-http
/// endpoint. See the [module docs](crate::layer).
#[derive(Debug, Clone)]
pub struct OffloadLayer {
    shared: Arc<Shared>,
}

impl OffloadLayer {
    /// A layer with the spec's defaults and `config`.
    pub fn new(config: OffloadConfig) -> Self {
        OffloadLayer::builder().config(config).build()
    }

    /// A builder with the spec's defaults.
    pub fn builder() -> OffloadLayerBuilder {
        OffloadLayerBuilder::default()
    }

    /// The engine used by this layer.
    pub fn offloader(&self) -> &Offloader {
        &self.shared.offloader
    }

    /// Starts the `offload_cleanup` task for this layer's files, every
    /// `cleanup_interval` of the configuration (default one hour; the first
    /// run at once). It stops when the handle is shut down or dropped. Must
    /// be called within a tokio runtime.
    pub fn spawn_cleanup(&self) -> CleanupHandle {
        let offloader = &self.shared.offloader;
        Custodian::for_offloader(offloader).spawn(offloader.config().cleanup_interval)
    }

    /// Bytes of responses buffered at this moment, across all services of
    /// this layer.
    pub fn buffered_bytes(&self) -> usize {
        self.shared.buffers.in_use()
    }
}

impl<S> Layer<S> for OffloadLayer {
    type Service = OffloadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OffloadService {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// Builder of [`OffloadLayer`].
pub struct OffloadLayerBuilder {
    config: OffloadConfig,
    proxy_header: HeaderName,
    max_request_bytes: usize,
    max_proxy_sessions: usize,
    proxy_session_ttl: Duration,
    estimator: Option<Box<dyn FnOnce(Offloader) -> Offloader>>,
    store: Option<Box<dyn FnOnce(Offloader) -> Offloader>>,
    hook: Option<EventHook>,
}

impl Default for OffloadLayerBuilder {
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
        }
    }
}

impl std::fmt::Debug for OffloadLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadLayerBuilder")
            .field("config", &self.config)
            .field("proxy_header", &self.proxy_header)
            .field("max_request_bytes", &self.max_request_bytes)
            .finish_non_exhaustive()
    }
}

impl OffloadLayerBuilder {
    /// Replaces the whole engine configuration.
    pub fn config(mut self, config: OffloadConfig) -> Self {
        self.config = config;
        self
    }
    /// Enables or disables offloading (disabled: a pure pass-through).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.config.enabled = enabled;
        self
    }
    /// Token threshold above which results are offloaded (default 1600).
    pub fn threshold_tokens(mut self, tokens: usize) -> Self {
        self.config.threshold_tokens = tokens;
        self
    }
    /// Directory for the JSONL files (default: the system temp dir).
    pub fn output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.output_dir = dir.into();
        self
    }
    /// Time-to-live of the files (default one hour).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.config.ttl = ttl;
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
    /// Bound and idle expiry of the remembered proxy sessions.
    pub fn proxy_sessions(mut self, capacity: usize, ttl: Duration) -> Self {
        self.max_proxy_sessions = capacity;
        self.proxy_session_ttl = ttl;
        self
    }
    /// Replaces the token estimator.
    pub fn estimator(mut self, estimator: impl TokenEstimator) -> Self {
        self.estimator = Some(Box::new(move |o: Offloader| o.with_estimator(estimator)));
        self
    }
    /// Replaces the file store.
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Box::new(move |o: Offloader| o.with_store(store)));
        self
    }
    /// Excludes tools: their results always pass through.
    pub fn exclude_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config = self.config.exclude_tools(tools);
        self
    }
    /// Sets the policy of one tool (its own threshold, byte trigger,
    /// `isError` offloading, or exclusion).
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.config = self.config.tool_policy(tool, policy);
        self
    }
    /// Byte trigger beside the token threshold (`maxToolOutputBytes`;
    /// `None`: off, the default).
    pub fn max_tool_output_bytes(mut self, bytes: Option<usize>) -> Self {
        self.config = self.config.max_tool_output_bytes(bytes);
        self
    }
    /// Whether results with `isError: true` may be offloaded (default false).
    pub fn offload_errors(mut self, allow: bool) -> Self {
        self.config.offload_errors = allow;
        self
    }
    /// Cap on the response bytes buffered at once across all in-flight
    /// responses (default 512 MiB); past it a response passes through
    /// untouched, with a `PassedThrough` event.
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.config.max_buffered_bytes = bytes;
        self
    }
    /// Interval of the cleanup task started by [`OffloadLayer::spawn_cleanup`].
    pub fn cleanup_interval(mut self, interval: Duration) -> Self {
        self.config.cleanup_interval = interval;
        self
    }
    /// Sends every event to `hook` too (see [`crate::lifecycle::events`]).
    pub fn event_hook(mut self, hook: EventHook) -> Self {
        self.hook = Some(hook);
        self
    }
    /// Builds the layer.
    pub fn build(self) -> OffloadLayer {
        let buffers = BufferBudget::new(self.config.max_buffered_bytes);
        let mut offloader = Offloader::new(self.config);
        if let Some(f) = self.estimator {
            offloader = f(offloader);
        }
        if let Some(f) = self.store {
            offloader = f(offloader);
        }
        if let Some(hook) = self.hook {
            offloader = offloader.with_event_hook(hook);
        }
        OffloadLayer {
            shared: Arc::new(Shared {
                offloader,
                proxy_header: self.proxy_header,
                max_request_bytes: self.max_request_bytes,
                sessions: ProxySessions::new(self.max_proxy_sessions, self.proxy_session_ttl),
                tasks: TaskCalls::default(),
                buffers,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_calls_forget_the_oldest_first() {
        let tasks = TaskCalls::default();
        for i in 0..TaskCalls::CAPACITY + 5 {
            tasks.insert(format!("t{i}"), &RawCall::named(format!("tool{i}")));
        }
        // Inserting a known task again does not count twice.
        tasks.insert("t7".into(), &RawCall::named("again"));
        for i in 0..5 {
            assert!(tasks.get(&format!("t{i}")).is_none(), "t{i} is the oldest");
        }
        assert_eq!(tasks.get("t5").unwrap().name, "tool5");
        assert_eq!(tasks.get("t7").unwrap().name, "again");
        let last = TaskCalls::CAPACITY + 4;
        assert_eq!(
            tasks.get(&format!("t{last}")).unwrap().name,
            format!("tool{last}")
        );
        assert_eq!(tasks.lock().calls.len(), TaskCalls::CAPACITY);
    }
}
