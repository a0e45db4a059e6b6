//! # tower-lro
//!
//! Large Result Offloading (LRO) for the Model Context Protocol: tool results
//! too large for an LLM's context window are written to a JSONL file (a
//! header line, then one record per line) and replaced by a compact
//! descriptor — file path, summary, JSON schema of the lines, ten ready jq
//! recipes and guidance — so the agent reads only what it needs with one
//! `jq` or `grep`.
//!
//! * [`OffloadLayer`] — the tower middleware (see [`layer`]).
//! * [`Offloader`] — the transport-free engine (see [`engine`]).
//! * [`rebuild`] — the original result back from a file, exactly.
//! * [`fixtures`] — deterministic memory records for tests and benches.
//!
//! The normative protocol is the LRO specification; field names, defaults,
//! recipes and templates follow it exactly.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod engine;
pub mod fixtures;
pub mod layer;
pub mod lifecycle;
pub mod wire;

pub use engine::estimate::{CharsPerTokenEstimator, ScriptAwareEstimator, TokenEstimator};
pub use engine::{
    ConfigError, DEFAULT_OFFLOAD_THRESHOLD_TOKENS, EffectivePolicy, JqRecipe, OffloadConfig,
    OffloadHeader, OffloadResponse, OffloadSummary, Offloaded, OffloadedResult, Offloader, Outcome,
    PassReason, RebuildError, ToolCall, ToolPolicy, Truncated, operation_name, rebuild,
    rebuild_file,
};
pub use layer::{DEFAULT_PROXY_HEADER, OffloadLayer, OffloadLayerBuilder, OffloadService};
pub use lifecycle::events::{EventHook, OffloadEvent};
pub use lifecycle::store::{FsStore, Store, StoreError};
pub use wire::mcp::ResultError;
