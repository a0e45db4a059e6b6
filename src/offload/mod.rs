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
mod intercept;
mod json_response;
#[allow(clippy::module_inception)]
mod layer;
mod memo;
mod replay;
mod request_body;
mod respond;
mod service;
mod sessions;
mod sse_rewrite;
mod state;

pub use body::OffloadBody;
pub use future::ResponseFuture;
pub use layer::{OffloadLayer, OffloadLayerBuilder};
pub use request_body::RequestBody;
pub use service::OffloadService;
pub use state::{
    DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER,
    DEFAULT_PROXY_SESSION_TTL,
};

pub use crate::answer::{BindingKey, BindingKeyError};
pub use crate::engine::events::{EventHook, OffloadEvent, PassReason};
pub use crate::engine::rebuild::{rebuild, rebuild_at, rebuild_file, rebuild_with};
pub use crate::engine::records::{Rebuild, RebuildError};
pub use crate::engine::{Offloaded, Offloader, Outcome, Truncated, operation_name};
pub use crate::wire::call::ToolCall;
pub use crate::wire::jsonrpc::CLIENT_INFO_META_KEY;
pub use crate::wire::mcp::ResultError;

// What the history offload layer shares with this one.
#[cfg(feature = "history")]
pub(crate) use budget::BufferBudget;
#[cfg(feature = "history")]
pub(crate) use intercept::{Read, is_json, read_request};
#[cfg(feature = "history")]
pub(crate) use respond::encoding;
