//! # tower-lro
//!
//! Large Result Offloading (LRO) for the Model Context Protocol: tool results
//! too large for an LLM's context window are written to a JSONL file (a
//! header line, then one record per line) and replaced by a compact
//! descriptor — file path, summary, JSON schema of the lines, ten ready jq
//! recipes and guidance — so the agent reads only what it needs with one
//! `jq` or `grep`.
//!
//! * [`OffloadLayer`] — the tower middleware, in front of any MCP
//!   streamable-http endpoint.
//! * [`Offloader`] — the transport-free engine: one `CallToolResult` in,
//!   inline or offloaded out.
//! * [`rebuild`] / [`rebuild_file`] — the original result back from a file,
//!   exactly.
//! * [`Custodian`] — deletes expired files (the spec's `offload_cleanup`).
//!
//! The normative protocol is the LRO specification; field names, defaults,
//! recipes and templates follow it exactly.
//!
//! # Architecture
//!
//! Four levels, each importing only from the levels before it (never from
//! one above, and the files of one level never in a circle):
//!
//! 1. `json` — byte-level JSON helpers: minify, outline, lay out again,
//!    without ever re-serialising a literal.
//! 2. `wire` — what travels: the call a result answers (`call`), JSON-RPC
//!    classification of requests and responses (`jsonrpc`), MCP results as
//!    raw JSON (`mcp`), server-sent events (`sse`).
//! 3. `engine` — the transport-free offload engine, no HTTP types:
//!    configuration and per-tool policy (`config`), token estimation
//!    (`estimate`), records and the rebuild layout (`records`), statistics
//!    and schema (`stats`), recipes (`recipes`), the spec's types
//!    (`descriptor`), the file store (`store`), events (`events`), and the
//!    pipeline that ties them together (`pipeline` → `output` → `fallback`
//!    → `offloader`; `rebuild` is the read side; `serve` answers the
//!    layer's own MCP requests: `lro_extract`, `lro_list`, `resources/read`).
//!    Beside it, on the same level: `history` — chat histories kept within
//!    the window (the MessageOffloadOp modes), on the engine, no HTTP types.
//! 4. On top, side by side: `middleware` — the tower layer, shaped like
//!    `tower-http`'s middlewares (`layer` → `service` → `future` →
//!    `respond` → `json_response` / `sse_rewrite` → `body`, with
//!    `request_body` (the request tee) and `state` (what the services of
//!    one layer share) below them; `serve` reads a JSON `POST` first and
//!    answers the layer's own requests, `caller` what is known of a
//!    client); beside it `middleware::history`, the history offload
//!    layer ([`HistoryOffloadLayer`]: chat requests rewritten by the
//!    `history` engine, read with `serve`'s reader and handed on as
//!    `request_body`'s body); and `cleanup` — the custodial task.
//! 5. `command` (feature `cli`) — what the `lro` binary runs, on top of
//!    the layer: the local stdio proxy (`command::proxy`) with its OAuth
//!    sign-in (`command::auth`), the gateway (`command::gateway`), and the
//!    upstream client both use (`command::connect`: TLS, `TCP_NODELAY`).
//!
//! All modules are private; the public surface below is re-exported here,
//! once.
//!
//! # Public surface
//!
//! * Middleware: [`OffloadLayer`], [`OffloadLayerBuilder`],
//!   [`OffloadService`], [`ResponseFuture`], [`OffloadBody`],
//!   [`RequestBody`]; [`DEFAULT_PROXY_HEADER`], [`DEFAULT_MAX_REQUEST_BYTES`],
//!   [`DEFAULT_MAX_PROXY_SESSIONS`], [`DEFAULT_PROXY_SESSION_TTL`],
//!   [`CLIENT_INFO_META_KEY`].
//! * Engine: [`Offloader`], [`ToolCall`], [`Outcome`] ([`Offloaded`],
//!   [`Truncated`], [`PassReason`]), [`ResultError`], [`operation_name`].
//! * Configuration: [`OffloadConfig`], [`ToolPolicy`], [`EffectivePolicy`],
//!   [`ConfigError`], [`ENV_PREFIX`] and the `DEFAULT_*` constants.
//! * The spec's types: [`OffloadHeader`], [`OffloadResponse`],
//!   [`OffloadSummary`], [`OffloadedResult`], [`JqRecipe`], [`RecipeProgram`], [`PageInfo`], [`Detail`],
//!   [`HEADER_TYPE`], [`guidance`], [`extract_guidance`].
//! * Reading files back: [`rebuild`], [`rebuild_at`], [`rebuild_file`],
//!   [`Rebuild`], [`RebuildError`].
//! * Extraction (jq queries over a file, output as jq 1.6 prints it, by
//!   pages, bounded in time, memory and output): [`Extractor`], [`Query`],
//!   [`JqFlags`], [`Paging`], [`Page`], [`ExtractLimits`], [`ExtractError`],
//!   [`RecipeCommand`].
//! * Estimation: [`TokenEstimator`], [`ScriptAwareEstimator`] (default),
//!   [`CharsPerTokenEstimator`], `O200kEstimator` (feature `o200k`).
//! * Storage: [`Store`], [`FsStore`], [`StoreError`], [`FILE_PREFIX`],
//!   [`FILE_EXTENSION`], [`is_offload_file_name`], [`RESOURCE_URI_PREFIX`], [`resource_uri`], [`file_name_of_uri`].
//! * Lifecycle: [`Custodian`], [`CleanupHandle`], [`CleanupReport`];
//!   events: [`OffloadEvent`], [`EventHook`].
//! * History offload (chat histories; see [`HistoryOffloader`]):
//!   [`HistoryOffloader`], [`HistoryConfig`], [`SummaryMode`],
//!   [`UnknownMode`], [`ChatFormat`], [`HistoryOutcome`], [`BodyRewrite`],
//!   [`HistoryReport`], [`HistoryError`], [`Summarizer`],
//!   [`SummaryRequest`], [`SummaryFuture`], [`SummaryError`],
//!   [`ExtractiveSummarizer`], [`POINTER_MARKER`], [`SUMMARY_MARKER`],
//!   [`HISTORY_FILE_PREFIX`], [`HISTORY_ENV_PREFIX`] and the `DEFAULT_*` constants of the spec's
//!   parameters.
//! * History offload over HTTP: [`HistoryOffloadLayer`],
//!   [`HistoryOffloadLayerBuilder`], [`HistoryOffloadService`],
//!   [`HistoryResponseFuture`], [`HistoryEvent`], [`FallbackReason`],
//!   [`DEFAULT_MAX_CHAT_BODY_BYTES`], [`DEFAULT_MAX_HELD_CHAT_BYTES`],
//!   [`DEFAULT_REWRITE_TIMEOUT`]; with feature `history-endpoint`,
//!   `EndpointSummarizer`, `EndpointError`, `DEFAULT_SUMMARY_PROMPT`,
//!   `DEFAULT_SUMMARY_TIMEOUT`, `DEFAULT_MAX_ANSWER_BYTES`.
//! * `fixtures` (feature `fixtures`): deterministic memory records for
//!   tests, examples and benches.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod cleanup;
#[cfg(feature = "cli")]
pub mod command;
mod engine;
#[cfg(feature = "fixtures")]
pub mod fixtures;
#[cfg(test)]
mod fuzz;
mod history;
mod json;
mod middleware;
mod wire;

pub use cleanup::{CleanupHandle, CleanupReport, Custodian};
pub use engine::config::{
    ConfigError, DEFAULT_CLEANUP_INTERVAL, DEFAULT_MAX_BUFFERED_BYTES, ENV_PREFIX, EffectivePolicy,
    OffloadConfig, ToolPolicy,
};
pub use engine::descriptor::{
    Detail, HEADER_TYPE, JqRecipe, OffloadHeader, OffloadResponse, OffloadSummary, OffloadedResult,
    PageInfo, RecipeProgram, extract_guidance, guidance,
};
#[cfg(feature = "o200k")]
pub use engine::estimate::O200kEstimator;
pub use engine::estimate::{CharsPerTokenEstimator, ScriptAwareEstimator, TokenEstimator};
pub use engine::events::{EventHook, OffloadEvent, PassReason};
pub use engine::extract::{
    ExtractError, ExtractLimits, Extractor, JqFlags, Page, Paging, Query, RecipeCommand,
};
pub use engine::rebuild::{rebuild, rebuild_at, rebuild_file, rebuild_with};
pub use engine::records::{Rebuild, RebuildError};
pub use engine::store::{
    FILE_EXTENSION, FILE_PREFIX, FsStore, RESOURCE_URI_PREFIX, Store, StoreError, file_name_of_uri,
    is_offload_file_name, resource_uri,
};
pub use engine::{
    DEFAULT_OFFLOAD_THRESHOLD_TOKENS, DEFAULT_PREVIEW_CHARS, DEFAULT_SCHEMA_VERSION, DEFAULT_TTL,
    Offloaded, Offloader, Outcome, Truncated, operation_name,
};
pub use history::{
    BodyRewrite, ChatFormat, DEFAULT_COMPACT_RATIO_THRESHOLD, DEFAULT_KEEP_RECENT_COMPACT,
    DEFAULT_KEEP_RECENT_COMPRESS, DEFAULT_MAX_TOOL_MESSAGE_TOKENS, DEFAULT_MAX_TOTAL_TOKENS,
    DEFAULT_SUMMARY_MAX_TOKENS, ExtractiveSummarizer, HISTORY_ENV_PREFIX, HISTORY_FILE_PREFIX,
    HistoryConfig, HistoryError, HistoryOffloader, HistoryOutcome, HistoryReport, POINTER_MARKER,
    SUMMARY_MARKER, Summarizer, SummaryError, SummaryFuture, SummaryMode, SummaryRequest,
    UnknownMode,
};
#[cfg(feature = "history-endpoint")]
pub use middleware::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_TIMEOUT, EndpointError,
    EndpointSummarizer,
};
pub use middleware::{
    DEFAULT_MAX_CHAT_BODY_BYTES, DEFAULT_MAX_HELD_CHAT_BYTES, DEFAULT_MAX_PROXY_SESSIONS,
    DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER, DEFAULT_PROXY_SESSION_TTL,
    DEFAULT_REWRITE_TIMEOUT, FallbackReason, HistoryEvent, HistoryOffloadLayer,
    HistoryOffloadLayerBuilder, HistoryOffloadService, HistoryResponseFuture, OffloadBody,
    OffloadLayer, OffloadLayerBuilder, OffloadService, RequestBody, ResponseFuture,
};
pub use wire::call::ToolCall;
pub use wire::jsonrpc::CLIENT_INFO_META_KEY;
pub use wire::mcp::ResultError;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
