//! # tower-lro
//!
//! Large Result Offloading (LRO) for the Model Context Protocol: tool results
//! too large for an LLM's context window are written to a JSONL file (a
//! header line, then one record per line) and replaced by a compact
//! descriptor — file path, summary, JSON schema of the lines, ten ready jq
//! recipes and guidance — so the agent reads only what it needs with one
//! `jq` or `grep`. The normative protocol is the LRO specification; field
//! names, defaults, recipes and templates follow it exactly.
//!
//! ```no_run
//! # use tower_lro::{OffloadConfig, OffloadLayer};
//! # fn app() -> axum::Router { axum::Router::new() }
//! // In front of any MCP streamable-http endpoint: an axum route, rmcp's
//! // StreamableHttpService, a hyper service, a gateway.
//! let layer = OffloadLayer::builder()
//!     .config(OffloadConfig::load(None).expect("valid [prompt.offload] settings"))
//!     .build();
//! let app = app().layer(layer);
//! ```
//!
//! # Public surface
//!
//! Each public module is one component, with its own docs and a runnable
//! example; the crate root re-exports only the names most users reach for
//! first.
//!
//! | module | what it holds |
//! |---|---|
//! | [`offload`] | the tower middleware ([`OffloadLayer`], its builder, service, future and bodies; `BindingKey`: files bound to the caller's credentials), the transport-free engine ([`Offloader`]: one `CallToolResult` in, inline or offloaded out), events, and [`rebuild`](offload::rebuild) (the original result back from a file, exactly) |
//! | [`config`] | [`OffloadConfig`]: the spec's `[prompt.offload]` keys from TOML and `ATLATL_PROMPT__OFFLOAD__*`, per-tool [`ToolPolicy`] |
//! | [`descriptor`] | the spec's types: [`OffloadResponse`], [`OffloadHeader`], the summary, the jq recipes, the guidance templates |
//! | [`store`] | where files live ([`Store`], [`FsStore`]: a private directory, create-new, 0600) and their names and `lro://files/` URIs |
//! | [`extract`] | [`Extractor`]: a jq [`Query`] over an offload file, in-process (jaq), bounded in time, memory and output, printed as jq 1.6 prints |
//! | [`estimate`] | [`TokenEstimator`] and the estimators (the spec's `chars / 4`, CJK-aware; exact o200k with feature `o200k`) |
//! | [`cleanup`] | [`Custodian`]: deletes expired files (the spec's `offload_cleanup`), on demand or as a task |
//! | [`sse`] | the server-sent-events splitter the layer uses, for proxies that read event streams themselves |
//! | `history` | (feature `history`) the history offload (MessageOffloadOp): `HistoryOffloader` and `HistoryOffloadLayer` |
//! | `fixtures` | (feature `fixtures`) deterministic memory records for tests, examples and benches |
//!
//! # Cargo features
//!
//! None is on by default.
//!
//! | feature | what it adds |
//! |---|---|
//! | `history` | the `history` module |
//! | `history-endpoint` | `history::EndpointSummarizer`: summaries from an OpenAI-compatible chat endpoint (HTTP client: hyper) |
//! | `o200k` | `estimate::O200kEstimator`, exact token counts with OpenAI's o200k BPE |
//! | `fixtures` | the `fixtures` module |
//!
//! # Module map
//!
//! The source tree follows the data path, in levels: a module imports only
//! from the levels above it in this list, and the files of one module never
//! import each other in a circle.
//!
//! 0. `parallel` — two independent pieces of work at once on kept threads,
//!    for large results (the records' statistics and their digest);
//!    `contract` — the completeness contract of a file's data lines (count,
//!    bytes, SHA-256), made by the engine, checked by the store's readers.
//! 1. `json` — byte-level JSON helpers: validate, minify, lay out again,
//!    never re-serialising a literal; `json::key`, the one object-key reader.
//! 2. `wire` — what travels: the call a result answers (`call`), JSON-RPC
//!    classification of requests and replies (`jsonrpc`: `request`, `call`,
//!    `reply`, `served`), MCP results as raw JSON (`mcp`), server-sent
//!    events (`sse`, whose splitter is public as [`sse`]).
//! 3. The transport-free pieces the engine is made of: [`config`] (its TOML
//!    and environment loader in `config/load.rs`), [`estimate`], [`store`].
//! 4. `engine` — `offloader` (the [`Offloader`] API) and the offload
//!    pipeline, top to bottom in one place (`pipeline`): `decide` →
//!    `records` (split, and the layout that puts it back) → `stats` →
//!    `recipes` → `file` → `describe` (the descriptor, fitted) → write, or
//!    `fallback` (the write-failure truncation) → `rewrite`; `descriptor`
//!    (the spec's types), `events`, `rebuild` (the read side).
//! 5. [`extract`] — the jq extractor (jaq), on files the engine wrote.
//! 6. `answer` — the layer's own MCP answers, transport-free: `lro_extract`,
//!    `lro_list`, `resources/read`, the access rules (`access`) and the tool
//!    definitions (`manifest`).
//! 7. [`offload`] — the tower middleware: `layer` → `service` → `future` →
//!    `respond` → `json_response` / `sse_rewrite` → `body`; `intercept`
//!    (requests the layer answers itself, through `answer`); below them
//!    `request_body` (the request tee), `state`, `memo`, `sessions`,
//!    `budget` (the cap on buffered bytes). [`cleanup`] beside it.
//! 8. `history` (feature `history`) — the same engine over chat histories,
//!    and its tower layer (`history::layer`, on the offload layer's request
//!    reader and buffer budget).
//!
//! The `lro` command is a crate of its own on top (`lro/` in the
//! repository, the package `tower-lro-cli`, with its own dependencies): it
//! uses only this public API.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
pub mod cleanup;
pub mod config;
mod contract;
mod engine;
pub mod estimate;
pub mod extract;
#[cfg(feature = "fixtures")]
#[cfg_attr(docsrs, doc(cfg(feature = "fixtures")))]
pub mod fixtures;
mod parallel;
// Property tests of crate-private code, kept out of `src/` (see its docs).
#[cfg(test)]
#[path = "../tests/fuzz/mod.rs"]
mod fuzz;
#[cfg(feature = "history")]
#[cfg_attr(docsrs, doc(cfg(feature = "history")))]
pub mod history;
mod json;
pub mod offload;
pub mod sse;
pub mod store;
mod wire;

pub use engine::descriptor;

pub use cleanup::{CleanupHandle, Custodian};
pub use config::{OffloadConfig, ToolPolicy};
pub use descriptor::{OffloadHeader, OffloadResponse};
pub use estimate::TokenEstimator;
pub use extract::{Extractor, Query};
#[cfg(feature = "history")]
pub use history::{HistoryConfig, HistoryOffloadLayer, HistoryOffloader};
pub use offload::{
    EventHook, OffloadEvent, OffloadLayer, OffloadLayerBuilder, OffloadService, Offloader, Outcome,
    ToolCall, rebuild_file,
};
pub use store::{FsStore, Store};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
