//! [`HistoryOffloadLayer`], its builder, and what its services share.

use std::sync::Arc;
use std::time::Duration;

use tower_layer::Layer;

use super::events::{HistoryEvent, HistoryEvents};
use super::service::HistoryOffloadService;
use super::state::HistoryShared;
use crate::history::HistoryOffloader;
use crate::offload::BufferBudget;

/// Default cap on a chat request body the layer reads (32 MiB); a longer
/// body goes on untouched.
pub const DEFAULT_MAX_CHAT_BODY_BYTES: usize = 32 << 20;
/// Default cap on the request bytes held at once by all requests of one
/// layer (256 MiB).
pub const DEFAULT_MAX_HELD_CHAT_BYTES: usize = 256 << 20;
/// Default time allowed to rewrite one request (summaries included).
pub const DEFAULT_REWRITE_TIMEOUT: Duration = Duration::from_secs(120);

/// Tower layer applying the history offload to the chat requests an HTTP
/// service receives (a gateway in front of a model provider, an agent's
/// own endpoint).
///
/// * a `POST` whose path ends in `/chat/completions` (OpenAI Chat
///   Completions), `/messages` (Anthropic Messages) or `/responses` (OpenAI
///   Responses), or any other `POST` with a JSON body (its format detected
///   by the engine), is a chat request: its body is read (up to
///   [`DEFAULT_MAX_CHAT_BODY_BYTES`]) and handed to the
///   [`HistoryOffloader`]; the inner service gets the rewritten body, with
///   its `Content-Length` set (and `Transfer-Encoding` dropped);
/// * every other request (other methods, other bodies) reaches the inner
///   service at once, byte for byte, never read;
/// * responses are never looked at: an event stream (`"stream": true`)
///   reaches the client chunk by chunk as the inner service sends it;
/// * the layer never fails a request because of its own trouble: a body
///   over the cap, compressed (`Content-Encoding`), not JSON, broken, a
///   summarizer or file store that fails, a rewrite over its time
///   ([`DEFAULT_REWRITE_TIMEOUT`]) all send the original body on, byte for
///   byte, with a [`HistoryEvent::FellBack`] event.
///
/// The layer reads a chat request before calling the inner service, so the
/// inner service must be `Clone` (an axum `Router`, a hyper client service,
/// `tower::util::BoxCloneService` are): the readied service is the one
/// called and a clone takes its place.
///
/// ```no_run
/// use axum::{Router, routing::post};
/// use tower_lro::{HistoryConfig, HistoryOffloadLayer, HistoryOffloader};
///
/// # async fn handler() -> &'static str { "" }
/// let offloader = HistoryOffloader::new(HistoryConfig::default());
/// let layer = HistoryOffloadLayer::builder(offloader)
///     .event_hook(|event| eprintln!("{}", event.name()))
///     .build();
/// let app: Router = Router::new()
///     .route("/v1/chat/completions", post(handler))
///     .layer(layer);
/// ```
#[derive(Debug, Clone)]
pub struct HistoryOffloadLayer {
    shared: Arc<HistoryShared>,
}

impl HistoryOffloadLayer {
    /// A layer rewriting chat requests with `offloader`, with the default
    /// caps and timeout.
    pub fn new(offloader: HistoryOffloader) -> Self {
        HistoryOffloadLayer::builder(offloader).build()
    }

    /// A builder for a layer rewriting chat requests with `offloader`.
    pub fn builder(offloader: HistoryOffloader) -> HistoryOffloadLayerBuilder {
        HistoryOffloadLayerBuilder {
            offloader,
            max_body_bytes: DEFAULT_MAX_CHAT_BODY_BYTES,
            max_held_bytes: DEFAULT_MAX_HELD_CHAT_BYTES,
            rewrite_timeout: DEFAULT_REWRITE_TIMEOUT,
            hook: None,
        }
    }

    /// The engine used by this layer.
    pub fn offloader(&self) -> &HistoryOffloader {
        &self.shared.offloader
    }

    /// Request bytes held at this moment by all services of this layer.
    pub fn held_bytes(&self) -> usize {
        self.shared.buffers.in_use()
    }
}

impl<S> Layer<S> for HistoryOffloadLayer {
    type Service = HistoryOffloadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HistoryOffloadService::from_shared(inner, self.shared.clone())
    }
}

type Hook = dyn Fn(&HistoryEvent) + Send + Sync;

/// Builder of [`HistoryOffloadLayer`].
#[derive(Clone)]
pub struct HistoryOffloadLayerBuilder {
    offloader: HistoryOffloader,
    max_body_bytes: usize,
    max_held_bytes: usize,
    rewrite_timeout: Duration,
    hook: Option<Arc<Hook>>,
}

impl std::fmt::Debug for HistoryOffloadLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryOffloadLayerBuilder")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_held_bytes", &self.max_held_bytes)
            .field("rewrite_timeout", &self.rewrite_timeout)
            .field("hook", &self.hook.is_some())
            .finish_non_exhaustive()
    }
}

impl HistoryOffloadLayerBuilder {
    /// Cap on a chat request body read; a longer one goes on untouched
    /// (default [`DEFAULT_MAX_CHAT_BODY_BYTES`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Cap on the request bytes held at once by all requests of the layer;
    /// past it a request goes on untouched (default
    /// [`DEFAULT_MAX_HELD_CHAT_BYTES`]). A request holds its
    /// `Content-Length` from the start; one without (chunked) holds
    /// [`max_body_bytes`](Self::max_body_bytes) while it is read, then its
    /// length; both until the inner service has answered.
    pub fn max_held_bytes(mut self, bytes: usize) -> Self {
        self.max_held_bytes = bytes;
        self
    }

    /// Time allowed to rewrite one request, summaries included; past it the
    /// original body goes on (default [`DEFAULT_REWRITE_TIMEOUT`]).
    pub fn rewrite_timeout(mut self, timeout: Duration) -> Self {
        self.rewrite_timeout = timeout;
        self
    }

    /// Calls `hook` with every [`HistoryEvent`], on the task that handles
    /// the request: keep it short and never block.
    pub fn event_hook(mut self, hook: impl Fn(&HistoryEvent) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Builds the layer.
    pub fn build(self) -> HistoryOffloadLayer {
        let shared = HistoryShared {
            offloader: self.offloader,
            max_body_bytes: self.max_body_bytes,
            buffers: BufferBudget::new(self.max_held_bytes),
            rewrite_timeout: self.rewrite_timeout,
            events: HistoryEvents::new(self.hook),
        };
        HistoryOffloadLayer {
            shared: Arc::new(shared),
        }
    }
}
