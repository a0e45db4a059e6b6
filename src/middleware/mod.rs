//! The tower middleware: [`OffloadLayer`] in front of an MCP streamable-http
//! endpoint (see its docs for what it does).
//!
//! The files, each importing only those after it: `layer` (the layer and
//! its builder) → `service` (classifies nothing, tees the request) →
//! `future` (waits for the response) → `respond` (decides: pass through,
//! read as JSON, rewrite as events) → `json_response` (collect and rewrite
//! a JSON body) → `body` (the response body) → `sse_rewrite` (the event
//! stream rewriter) → `replay` (held frames played back); `serve` (a JSON
//! `POST` read first: the layer's own answers to `lro_extract`, `lro_list`
//! and `resources/read`, or the body played back to the inner service) and
//! `caller` (what serving needs per layer and knows per client); below all of
//! them `request_body` (the request tee), `state` (what the services of one
//! layer share: the engine, proxy sessions, task calls), `memo` (what is
//! remembered between requests, bounded), `sessions` and `budget` (the cap
//! on buffered bytes).
//!
//! `history` (above all of them, importing `serve`'s request reader,
//! `respond`'s encoding check, `request_body` and `budget`) is the history
//! offload layer, [`HistoryOffloadLayer`], and with feature
//! `history-endpoint` the chat-endpoint summarizer.

mod body;
mod budget;
mod caller;
mod future;
mod history;
mod json_response;
#[allow(clippy::module_inception)]
mod layer;
mod memo;
mod replay;
mod request_body;
mod respond;
mod serve;
mod service;
mod sessions;
mod sse_rewrite;
mod state;

pub use body::OffloadBody;
pub use future::ResponseFuture;
#[cfg(feature = "history-endpoint")]
pub use history::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_TIMEOUT, EndpointError,
    EndpointSummarizer,
};
pub use history::{
    DEFAULT_MAX_CHAT_BODY_BYTES, DEFAULT_MAX_HELD_CHAT_BYTES, DEFAULT_REWRITE_TIMEOUT,
    FallbackReason, HistoryEvent, HistoryOffloadLayer, HistoryOffloadLayerBuilder,
    HistoryOffloadService, HistoryResponseFuture,
};
pub use layer::{OffloadLayer, OffloadLayerBuilder};
pub use request_body::RequestBody;
pub use service::OffloadService;
pub use state::{
    DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER,
    DEFAULT_PROXY_SESSION_TTL,
};
