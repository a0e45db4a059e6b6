//! The history offload on HTTP.
//!
//! [`HistoryOffloadLayer`] rewrites the message history of the chat
//! requests an HTTP service receives, with the transport-free
//! [`HistoryOffloader`](crate::history::HistoryOffloader). The files, each
//! importing only those after it: `layer` (the layer, its builder, what its
//! services share) → `service` (which requests are chat requests) →
//! `rewrite` (read, rewrite, call; any trouble: the original body) →
//! `future` (the response future) → `state` (what the services of a layer
//! share) → `events` (what happened, to `tracing` and a hook). `endpoint` (feature `history-endpoint`) is a summarizer
//! asking an OpenAI-compatible chat endpoint.
//!
//! Request bodies are read with the offload layer's `read_request` and
//! handed on as its [`RequestBody`](crate::offload::RequestBody) (played back), so
//! both layers stack with the same body type.

#[cfg(feature = "history-endpoint")]
mod endpoint;
mod events;
mod future;
#[allow(clippy::module_inception)]
mod layer;
mod rewrite;
mod service;
mod state;

#[cfg(feature = "history-endpoint")]
pub use endpoint::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_TIMEOUT, EndpointError,
    EndpointSummarizer,
};
pub use events::{FallbackReason, HistoryEvent};
pub use future::HistoryResponseFuture;
pub use layer::{
    DEFAULT_MAX_CHAT_BODY_BYTES, DEFAULT_MAX_HELD_CHAT_BYTES, DEFAULT_REWRITE_TIMEOUT,
    HistoryOffloadLayer, HistoryOffloadLayerBuilder,
};
pub use service::HistoryOffloadService;
