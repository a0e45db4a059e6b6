//! The transport-free offload engine.
//!
//! [`Offloader::process`] takes a tool call ([`ToolCall`]: tool name and
//! arguments) and its MCP `CallToolResult` as JSON bytes, and decides:
//!
//! * **inline** — the estimated tokens are `<= threshold_tokens` (default
//!   1600), offloading is disabled, the result is an error (`isError`), or it
//!   holds nothing to offload: the caller keeps the original bytes, untouched;
//! * **offloaded** — the result is written as a JSONL file (a header line,
//!   then one record per line) and a rewritten `CallToolResult` carrying the
//!   [`OffloadResponse`] descriptor is returned;
//! * **truncated** — the file could not be written: the result is returned
//!   inline, cut on record boundaries to fit the threshold, with a warning
//!   block first (the spec's write-failure fallback). The call still succeeds.
//!
//! No HTTP types appear here: the tower layer, a proxy binary or an
//! extraction tool all drive the same engine.
//!
//! # Token estimation
//!
//! The estimate covers what a model would read: the text of the text blocks,
//! or the serialised `structuredContent`, whichever is larger (servers send
//! the same data in both; clients show one). Image, audio and resource blocks
//! are not counted. Estimation is pluggable ([`TokenEstimator`]); the default
//! is the spec's `characters / 4`, CJK-aware ([`ScriptAwareEstimator`]).
//! Results whose byte length alone proves them under the threshold are not
//! even parsed.
//!
//! # Records
//!
//! A JSON array in `structuredContent` or in a text block gives one record
//! per element; an object whose bulk (over half its bytes) is one array gives
//! that array's elements; JSONL text gives its lines; plain text gives one
//! `{"line": n, "text": "..."}` record per line. Everything else (other
//! fields, other blocks, the object around the array, the exact whitespace of
//! the text) is kept in the header's `rebuild` section: [`rebuild`] restores
//! the original `CallToolResult`, equal as JSON, from the file alone. Literals
//! are never re-serialised, so numbers beyond `f64` and escapes survive.
//!
//! # The rewritten result
//!
//! The rewritten `CallToolResult` is valid MCP: its first content block is a
//! text block holding the descriptor JSON; image, audio and resource blocks,
//! and text blocks that were not record sources, follow in their original
//! order; `isError`, `_meta`, `resultType` and every other top-level field
//! are kept as they were.
//!
//! **`structuredContent`**: when records came from it, it is kept with the
//! record array emptied (`{"memories": [...]}` becomes `{"memories": []}`,
//! every other field unchanged). A client that validates the tool's
//! `outputSchema` (the TypeScript and Python SDKs do, and reject a result of
//! such a tool that has no `structuredContent`) therefore still gets an
//! object of the declared shape, unless the schema demands a minimum number
//! of items; exclude such tools from offloading. When `structuredContent`
//! holds no array it is left untouched.
//!
//! # Detail level
//!
//! The call's `detail` argument (`light`, `medium`, `full`), else the tool's
//! default (`light` for `recall_memories`, `medium` for `inject_context`),
//! else inferred from the records (`provenance` → full, a flattened
//! `confidence` → medium, else light). It appears in the header, the summary
//! and the guidance, and selects recipes 9 and 10 for memory records.
//!
//! # Example
//!
//! ```
//! use tower_lro::{OffloadConfig, Offloader, Outcome, ToolCall};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
//! let rows: Vec<_> = (0..500).map(|i| serde_json::json!({"id": i, "level": "info", "msg": "started worker"})).collect();
//! let result = serde_json::json!({
//!     "content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]
//! });
//! let call = ToolCall::new("query_logs", None);
//! match offloader.process(&call, result.to_string().as_bytes()).unwrap() {
//!     Outcome::Offloaded(o) => {
//!         assert_eq!(o.response.summary.count, 500);
//!         assert_eq!(o.response.jq_recipes.len(), 10);
//!         // Nothing is lost: the file alone gives the original back.
//!         let file = std::fs::read_to_string(&o.file.path).unwrap();
//!         let rebuilt: serde_json::Value = serde_json::from_str(&tower_lro::rebuild(&file).unwrap()).unwrap();
//!         assert_eq!(rebuilt, result);
//!     }
//!     other => panic!("expected an offload, got {other:?}"),
//! }
//! ```

pub mod config;
pub mod descriptor;
pub mod estimate;
pub(crate) mod jsonfmt;
pub(crate) mod recipes;
pub(crate) mod records;
pub(crate) mod stats;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

pub use descriptor::{
    HEADER_TYPE, JqRecipe, OffloadHeader, OffloadResponse, OffloadSummary, OffloadedResult,
    guidance,
};
#[cfg(feature = "o200k")]
pub use estimate::O200kEstimator;
pub use estimate::{CharsPerTokenEstimator, ScriptAwareEstimator, TokenEstimator};
pub use records::{Rebuild, RebuildError};

pub use crate::lifecycle::events::PassReason;
pub use config::{ConfigError, EffectivePolicy, OffloadConfig, ToolPolicy};

use crate::lifecycle::events::{EventHook, Events, OffloadEvent};
use crate::lifecycle::store::{FsStore, Store, StoreError};
use crate::wire::mcp::{BlockOut, RawResult, ResultError};
use records::{Extraction, RecordKind};
use stats::RecordStats;

/// Default token threshold (the spec's `DEFAULT_OFFLOAD_THRESHOLD_TOKENS`).
pub const DEFAULT_OFFLOAD_THRESHOLD_TOKENS: usize = 1600;
/// Default time-to-live of an offloaded file: one hour.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// Default `schema_version` written in file headers.
pub const DEFAULT_SCHEMA_VERSION: &str = "1.0";
/// Default length of the descriptor's `preview`, in characters.
pub const DEFAULT_PREVIEW_CHARS: usize = 200;

/// The call a result answers: tool name and arguments.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    /// The tool's name (`params.name` of `tools/call`).
    pub name: String,
    /// The call's arguments (`params.arguments`).
    pub arguments: Option<Value>,
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<Value>) -> Self {
        ToolCall {
            name: name.into(),
            arguments,
        }
    }

    fn string_arg(&self, key: &str) -> Option<&str> {
        self.arguments.as_ref()?.get(key)?.as_str()
    }
}

/// The spec's operation name for a tool: `recall`, `list`, `inject`,
/// `search`, else the tool name reduced to `[a-z0-9_]` (at most 64 bytes), so
/// a tool name can never steer a file path.
pub fn operation_name(tool: &str) -> String {
    match tool {
        "recall_memories" => return "recall".into(),
        "list_memories" => return "list".into(),
        "inject_context" => return "inject".into(),
        _ => {}
    }
    let lower = tool.to_ascii_lowercase();
    if lower == "search" || lower.starts_with("search_") || lower.ends_with("_search") {
        return "search".into();
    }
    let mut op: String = lower
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if op.trim_matches('_').is_empty() {
        op = "tool".into();
    }
    op
}

/// A result written to a file.
#[derive(Debug, Clone)]
pub struct Offloaded {
    /// The rewritten `CallToolResult` JSON, carrying the descriptor.
    pub result: String,
    /// The descriptor.
    pub response: OffloadResponse,
    /// The file.
    pub file: OffloadedResult,
}

/// A result that could not be written and was truncated instead.
#[derive(Debug)]
pub struct Truncated {
    /// The truncated `CallToolResult` JSON, with a warning block first.
    pub result: String,
    /// Why the file could not be written.
    pub error: StoreError,
    /// Records kept inline.
    pub kept: usize,
    /// Records in the full result.
    pub total: usize,
    /// Estimated tokens of the full result.
    pub estimated_tokens: usize,
}

/// What the engine decided for one result.
#[derive(Debug)]
pub enum Outcome {
    /// Keep the original bytes.
    Inline(PassReason),
    /// Written to a file; send `result` instead.
    Offloaded(Box<Offloaded>),
    /// The write failed; send the truncated `result` instead.
    Truncated(Box<Truncated>),
}

/// The offload engine. Cheap to clone; shares its configuration, estimator,
/// store and event hook.
#[derive(Clone)]
pub struct Offloader {
    config: Arc<OffloadConfig>,
    estimator: Arc<dyn TokenEstimator>,
    store: Arc<dyn Store>,
    events: Events,
}

impl std::fmt::Debug for Offloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offloader")
            .field("config", &self.config)
            .field("dir", &self.store.dir())
            .finish_non_exhaustive()
    }
}

impl Offloader {
    /// An engine with the default estimator, writing with [`FsStore`] into
    /// `config.output_dir`.
    pub fn new(config: OffloadConfig) -> Self {
        let store = FsStore::new(config.output_dir.clone());
        Offloader {
            config: Arc::new(config),
            estimator: Arc::new(ScriptAwareEstimator),
            store: Arc::new(store),
            events: Events::default(),
        }
    }

    /// Replaces the token estimator.
    pub fn with_estimator(mut self, estimator: impl TokenEstimator) -> Self {
        self.estimator = Arc::new(estimator);
        self
    }

    /// Replaces the store (another location, or fault injection in tests).
    pub fn with_store(mut self, store: impl Store) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Sends every event (see [`crate::lifecycle::events`]) to `hook` too.
    pub fn with_event_hook(mut self, hook: EventHook) -> Self {
        self.events = Events::new(Some(hook));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OffloadConfig {
        &self.config
    }

    /// The store files are written to.
    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// Where events go.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Whether `len` bytes of a result of `tool` are sure to stay inline,
    /// without looking at them.
    pub fn surely_inline(&self, tool: &str, len: usize) -> bool {
        let policy = self.config.policy_for(tool);
        !policy.enabled || self.surely_under(&policy, len)
    }

    fn surely_under(&self, policy: &EffectivePolicy, len: usize) -> bool {
        self.estimator.max_tokens_for_bytes(len) <= policy.threshold_tokens
            && policy.max_tool_output_bytes.is_none_or(|b| len < b)
    }

    /// Estimated tokens of a tool result (see the module docs).
    pub fn estimate(&self, result: &[u8]) -> Result<usize, ResultError> {
        let text = std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?;
        let parsed = RawResult::parse(text)?;
        Ok(self.estimate_parsed(&parsed))
    }

    fn estimate_parsed(&self, parsed: &RawResult<'_>) -> usize {
        let text: usize = parsed
            .blocks
            .iter()
            .filter_map(|b| b.text.as_deref())
            .map(|t| self.estimator.estimate(t))
            .sum();
        let structured = parsed
            .structured()
            .map_or(0, |s| self.estimator.estimate(s.get()));
        text.max(structured)
    }

    /// UTF-8 bytes of the content a model would read: the text blocks, or
    /// `structuredContent`, whichever is larger (the byte trigger's measure).
    fn content_bytes(parsed: &RawResult<'_>) -> usize {
        let text: usize = parsed
            .blocks
            .iter()
            .filter_map(|b| b.text.as_deref())
            .map(str::len)
            .sum();
        text.max(parsed.structured().map_or(0, |s| s.get().len()))
    }

    /// Decides inline or offload for one result, writing the file when
    /// offloading, and emits the event (`Offloaded`, `OffloadWriteFailed`
    /// or `PassedThrough`). Blocking (parsing and file I/O): in async code
    /// use [`process_async`](Self::process_async).
    pub fn process(&self, call: &ToolCall, result: &[u8]) -> Result<Outcome, ResultError> {
        let outcome = self.decide(call, result);
        self.emit(&call.name, result.len(), &outcome);
        outcome
    }

    fn decide(&self, call: &ToolCall, result: &[u8]) -> Result<Outcome, ResultError> {
        let policy = self.config.policy_for(&call.name);
        if !policy.enabled {
            let reason = if self.config.enabled {
                PassReason::Excluded
            } else {
                PassReason::Disabled
            };
            return Ok(Outcome::Inline(reason));
        }
        if self.surely_under(&policy, result.len()) {
            return Ok(Outcome::Inline(PassReason::UnderThreshold {
                estimated_tokens: self.estimator.max_tokens_for_bytes(result.len()),
            }));
        }
        let text = std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?;
        let parsed = RawResult::parse(text)?;
        if !policy.offload_errors && parsed.top.get("isError").is_some_and(|v| v.get() == "true") {
            return Ok(Outcome::Inline(PassReason::IsError));
        }
        let estimated_tokens = self.estimate_parsed(&parsed);
        let over_bytes = policy
            .max_tool_output_bytes
            .is_some_and(|b| Self::content_bytes(&parsed) >= b);
        if estimated_tokens <= policy.threshold_tokens && !over_bytes {
            return Ok(Outcome::Inline(PassReason::UnderThreshold {
                estimated_tokens,
            }));
        }
        let large = policy.threshold_tokens / 4;
        let extraction = records::extract(&parsed, |t| self.estimator.estimate(t) > large)?;
        if extraction.records.is_empty() {
            return Ok(Outcome::Inline(PassReason::NoRecords));
        }
        Ok(self.offload(call, &parsed, extraction, estimated_tokens, &policy))
    }

    fn emit(&self, tool: &str, bytes: usize, outcome: &Result<Outcome, ResultError>) {
        let event = match outcome {
            Ok(Outcome::Offloaded(o)) => OffloadEvent::Offloaded {
                tool: tool.to_owned(),
                path: o.file.path.clone(),
                count: o.response.summary.count,
                estimated_tokens: o.response.summary.estimated_tokens,
                bytes,
            },
            Ok(Outcome::Truncated(t)) => OffloadEvent::OffloadWriteFailed {
                tool: tool.to_owned(),
                error: t.error.to_string(),
                kept: t.kept,
                total: t.total,
                estimated_tokens: t.estimated_tokens,
            },
            Ok(Outcome::Inline(reason)) => {
                if !self.events.wants_pass_events() {
                    return;
                }
                OffloadEvent::PassedThrough {
                    tool: Some(tool.to_owned()),
                    reason: reason.clone(),
                }
            }
            Err(e) => OffloadEvent::PassedThrough {
                tool: Some(tool.to_owned()),
                reason: PassReason::Unparseable(e.to_string()),
            },
        };
        self.events.emit(event);
    }

    /// [`process`](Self::process) off the async executor: results that may
    /// be over the threshold are handled on tokio's blocking pool.
    ///
    /// If this future is dropped while the file is being written (the
    /// client went away), the file is deleted once written: nothing is left
    /// that no one was told about.
    pub async fn process_async(
        &self,
        call: &ToolCall,
        result: bytes::Bytes,
    ) -> Result<Outcome, ResultError> {
        if self.surely_inline(&call.name, result.len()) {
            return self.process(call, &result);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        let len = result.len();
        let name = call.name.clone();
        let call = call.clone();
        let task = tokio::task::spawn_blocking(move || {
            let outcome = this.decide(&call, &result);
            if let Err(Ok(Outcome::Offloaded(o))) = tx.send(outcome) {
                // No one is waiting for this file any more.
                let _ = std::fs::remove_file(&o.file.path);
                tracing::debug!(
                    target: "tower_lro",
                    path = %o.file.path.display(),
                    "caller gone before the result was sent; offloaded file removed"
                );
            }
        });
        let outcome = match rx.await {
            Ok(outcome) => outcome,
            // The blocking task panicked or the runtime is shutting down: keep the original.
            Err(_) => {
                drop(task);
                Ok(Outcome::Inline(PassReason::Interrupted))
            }
        };
        self.emit(&name, len, &outcome);
        outcome
    }

    fn detail(&self, call: &ToolCall, stats: &RecordStats) -> String {
        if let Some(d @ ("light" | "medium" | "full")) = call.string_arg("detail") {
            return d.to_owned();
        }
        match call.name.as_str() {
            "recall_memories" => "light".into(),
            "inject_context" => "medium".into(),
            _ => stats.inferred_detail().into(),
        }
    }

    fn offload(
        &self,
        call: &ToolCall,
        parsed: &RawResult<'_>,
        extraction: Extraction,
        estimated_tokens: usize,
        policy: &EffectivePolicy,
    ) -> Outcome {
        let Extraction {
            records,
            kind,
            rebuild,
            kept_blocks,
            structured_slim,
            structured_copy_key,
        } = extraction;
        let stats = RecordStats::collect(records.iter().map(String::as_str));
        let detail = self.detail(call, &stats);
        let operation = operation_name(&call.name);
        let id = ulid::Ulid::new();
        let created_at: DateTime<Utc> = id.datetime().into();
        let header = OffloadHeader {
            header_type: HEADER_TYPE.to_owned(),
            operation: operation.clone(),
            query: call.string_arg("query").map(str::to_owned),
            count: records.len(),
            schema_version: self.config.schema_version.clone(),
            timestamp: created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            estimated_tokens,
            detail: detail.clone(),
            tool: Some(call.name.clone()),
            expires_at: Some(
                expiry(created_at, self.config.ttl)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ),
            rebuild: Some(rebuild),
        };
        let file_name = format!("atlatl-{operation}-{id}.jsonl");
        let contents = file_contents(&header, &records);
        let path = match self.store.write(&file_name, &contents) {
            Ok(path) => path,
            Err(error) => {
                let rebuild = header.rebuild.as_ref();
                return self.truncate(
                    parsed,
                    rebuild,
                    &records,
                    error,
                    estimated_tokens,
                    policy.threshold_tokens,
                );
            }
        };
        drop(contents);
        let file_path = path.to_string_lossy().into_owned();
        let jq_recipes = recipes::build(&file_path, &stats, kind, &detail, &records);
        let memories = kind == RecordKind::Json && stats.memory_recipes_fit(&detail);
        let guidance = if memories {
            guidance(records.len(), estimated_tokens, &file_path, &detail)
        } else {
            descriptor::generic_guidance(
                records.len(),
                estimated_tokens,
                &file_path,
                &detail,
                &jq_recipes,
            )
        };
        let response = OffloadResponse {
            offloaded: true,
            summary: OffloadSummary {
                count: records.len(),
                estimated_tokens,
                operation,
                top_namespaces: stats.top_categories(5),
                score_range: stats.score_range(),
                detail,
            },
            file_path,
            line_schema: stats.line_schema(),
            jq_recipes,
            guidance,
            preview: preview(&records, self.config.preview_chars),
        };
        let descriptor_json = serde_json::to_string(&response).unwrap_or_default();
        let mut blocks = vec![BlockOut::NewText(&descriptor_json)];
        blocks.extend(kept_blocks.iter().map(|&i| BlockOut::Original(i)));
        // A structuredContent string that copied the text now copies the descriptor.
        let structured_slim = match (&structured_copy_key, parsed.structured()) {
            (Some(key), Some(raw)) => {
                serde_json::from_str::<crate::wire::mcp::RawObject<'_>>(raw.get())
                    .ok()
                    .map(|object| {
                        let mut value = String::with_capacity(descriptor_json.len() + 16);
                        crate::wire::mcp::push_json_string(&mut value, &descriptor_json);
                        records::with_field(&object, key, &value)
                    })
            }
            _ => structured_slim,
        };
        let result = parsed.write(&blocks, structured_slim.as_deref());
        Outcome::Offloaded(Box::new(Offloaded {
            result,
            response,
            file: OffloadedResult {
                path,
                header: OffloadHeader {
                    rebuild: None,
                    ..header
                },
                ttl: self.config.ttl,
                created_at,
            },
        }))
    }

    /// The spec's write-failure fallback: inline, cut on record boundaries
    /// to fit the threshold, with a warning first.
    fn truncate(
        &self,
        parsed: &RawResult<'_>,
        rebuild: Option<&Rebuild>,
        records: &[String],
        error: StoreError,
        estimated_tokens: usize,
        threshold: usize,
    ) -> Outcome {
        let total = records.len();
        let make_warning = |kept: usize| {
            format!(
                "Warning: large result offloading (LRO) failed ({error}); the result below is \
                 truncated to {kept} of {total} records to fit {} tokens.",
                threshold
            )
        };
        // Tokens of what stays besides the records (other blocks, fields, the warning).
        let overhead = self.estimator.estimate(&make_warning(total))
            + rebuild.map_or(0, |r| self.estimator.estimate(r.result.get()));
        let budget = threshold.saturating_sub(overhead);
        let mut used = 0usize;
        let mut kept = 0usize;
        for rec in records {
            let cost = self.estimator.estimate(rec) + 1;
            if used + cost > budget {
                break;
            }
            used += cost;
            kept += 1;
        }
        // Records were costed minified; the text may be laid out more
        // loosely, so check the real estimate and shrink until it fits.
        let mut result = String::new();
        for _ in 0..24 {
            let warning = make_warning(kept);
            result = self.truncated_result(parsed, rebuild, &records[..kept], &warning);
            let tokens = RawResult::parse(&result).map_or(0, |r| self.estimate_parsed(&r));
            if tokens <= threshold || kept == 0 {
                break;
            }
            let scaled = kept * threshold / tokens.max(1);
            kept = scaled.min(kept - 1);
        }
        Outcome::Truncated(Box::new(Truncated {
            result,
            error,
            kept,
            total,
            estimated_tokens,
        }))
    }
}

impl Offloader {
    fn truncated_result(
        &self,
        parsed: &RawResult<'_>,
        rebuild: Option<&Rebuild>,
        records: &[String],
        warning: &str,
    ) -> String {
        let refs: Vec<&str> = records.iter().map(String::as_str).collect();
        let body = rebuild
            .and_then(|r| records::assemble(r, &refs, false).ok())
            .unwrap_or_default();
        match RawResult::parse(&body) {
            Ok(truncated) => {
                let mut blocks = vec![BlockOut::NewText(warning)];
                blocks.extend((0..truncated.blocks.len()).map(BlockOut::Original));
                truncated.write(&blocks, None)
            }
            Err(_) => parsed.write(&[BlockOut::NewText(warning)], None),
        }
    }
}

fn file_contents(header: &OffloadHeader, records: &[String]) -> Vec<u8> {
    let size: usize = records.iter().map(|r| r.len() + 1).sum();
    let mut out = Vec::with_capacity(size + 1024);
    // Serialising our own types into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, header);
    out.push(b'\n');
    for r in records {
        out.extend_from_slice(r.as_bytes());
        out.push(b'\n');
    }
    out
}

/// About the first `limit` characters of the data (records joined by newlines).
fn preview(records: &[String], limit: usize) -> String {
    if limit == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut taken = 0usize;
    let mut total = 0usize;
    for (n, rec) in records.iter().enumerate() {
        let sep = usize::from(n > 0);
        let chars = rec.chars().count();
        total += chars + sep;
        if taken < limit {
            if sep == 1 {
                out.push('\n');
                taken += 1;
            }
            let want = limit.saturating_sub(taken);
            match rec.char_indices().nth(want) {
                Some((cut, _)) => {
                    out.push_str(&rec[..cut]);
                    taken += want;
                }
                None => {
                    out.push_str(rec);
                    taken += chars;
                }
            }
        }
    }
    if total > taken {
        out.push_str(&format!("...(truncated, {} more chars)", total - taken));
    }
    out
}

/// Rebuilds the original `CallToolResult` JSON from the contents of an
/// offloaded file. The result equals the original as JSON; every literal is
/// as the server wrote it.
pub fn rebuild(jsonl: &str) -> Result<String, RebuildError> {
    let mut lines = jsonl.split('\n');
    let header_line = lines
        .next()
        .filter(|l| !l.is_empty())
        .ok_or(RebuildError::NotLroFile("empty file"))?;
    let header: OffloadHeader = serde_json::from_str(header_line)
        .map_err(|_| RebuildError::NotLroFile("the first line is not an LRO header"))?;
    if header.header_type != HEADER_TYPE {
        return Err(RebuildError::NotLroFile(
            "the header type is not \"lro_header\"",
        ));
    }
    if let Some(expires_at) = header.expires_at.as_deref() {
        let expired_at = DateTime::parse_from_rfc3339(expires_at)
            .map_err(|_| RebuildError::Corrupt(format!("bad expires_at {expires_at:?}")))?
            .with_timezone(&Utc);
        if Utc::now() >= expired_at {
            return Err(RebuildError::Expired { expired_at });
        }
    }
    let rebuild = header.rebuild.ok_or(RebuildError::NoRebuildInfo)?;
    let records: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if records.len() != header.count {
        return Err(RebuildError::CountMismatch {
            expected: header.count,
            found: records.len(),
        });
    }
    records::assemble(&rebuild, &records, true)
}

/// When a file created at `created_at` with time-to-live `ttl` expires.
pub(crate) fn expiry(created_at: DateTime<Utc>, ttl: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|d| created_at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

impl Offloader {
    /// Checks that `path` is an offloaded file of this engine that may still
    /// be read: a regular file (not a symlink) directly inside the output
    /// directory, named `atlatl-{operation}-{ulid}.jsonl`, whose creation
    /// time (from the ULID) plus the configured ttl has not passed. Returns
    /// the file's canonical path.
    pub fn check_readable(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<PathBuf, RebuildError> {
        let path = path.as_ref();
        let not_ours = || RebuildError::NotOurs(path.to_owned());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(not_ours)?;
        let (_, ulid) = crate::lifecycle::store::parse_file_name(name).ok_or_else(not_ours)?;
        let meta = std::fs::symlink_metadata(path)?;
        if !meta.file_type().is_file() {
            return Err(not_ours());
        }
        let dir = std::fs::canonicalize(self.store.dir()).map_err(|_| not_ours())?;
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = std::fs::canonicalize(parent.unwrap_or(std::path::Path::new(".")))?;
        if parent != dir {
            return Err(not_ours());
        }
        let expired_at = expiry(ulid.datetime().into(), self.config.ttl);
        if Utc::now() >= expired_at {
            return Err(RebuildError::Expired { expired_at });
        }
        Ok(dir.join(name))
    }

    /// Rebuilds the original `CallToolResult` JSON from one of this engine's
    /// files, after [`check_readable`](Self::check_readable).
    pub fn rebuild_file(&self, path: impl AsRef<std::path::Path>) -> Result<String, RebuildError> {
        let path = self.check_readable(path)?;
        rebuild_file(path)
    }
}

/// Reads an offloaded file and rebuilds the original `CallToolResult` JSON.
/// Refuses a file whose header's `expires_at` has passed.
pub fn rebuild_file(path: impl AsRef<std::path::Path>) -> Result<String, RebuildError> {
    let text = std::fs::read_to_string(path)?;
    rebuild(&text)
}
