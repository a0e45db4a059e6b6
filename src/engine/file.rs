//! The file's contents: its header line (the spec's `OffloadHeader` and
//! our additions), then the records.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::descriptor::{Detail, HEADER_TYPE, OffloadHeader, OffloadedResult};
use super::rebuild::expiry;
use super::recipes::Recipe;
use super::records::Rebuild;
use crate::config::OffloadConfig;
use crate::contract::DataContract;
use crate::wire::call::ToolCall;

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

/// What the header says besides the call and the configuration.
pub(super) struct HeaderFacts<'a> {
    pub id: ulid::Ulid,
    pub estimated_tokens: usize,
    pub detail: Detail,
    pub rebuild: Rebuild,
    pub recipes: &'a [Recipe],
    /// The completeness contract of the data lines.
    pub contract: &'a DataContract,
}

/// The file's first line.
pub(super) fn header(call: &ToolCall, config: &OffloadConfig, h: HeaderFacts<'_>) -> OffloadHeader {
    let created_at: DateTime<Utc> = h.id.datetime().into();
    let timestamp = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    OffloadHeader {
        header_type: HEADER_TYPE.to_owned(),
        operation: operation_name(&call.name),
        query: call.query().map(str::to_owned),
        count: h.contract.count,
        schema_version: config.schema_version.clone(),
        timestamp: timestamp(created_at),
        estimated_tokens: h.estimated_tokens,
        detail: h.detail,
        tool: Some(call.name.clone()),
        expires_at: Some(timestamp(expiry(created_at, config.ttl))),
        rebuild: Some(h.rebuild),
        recipes: h.recipes.iter().map(|r| r.program.clone()).collect(),
        owner: call.owner.clone(),
        data_bytes: Some(h.contract.bytes),
        data_sha256: Some(h.contract.sha256.clone()),
    }
}

/// What the caller learns of the file written at `path`: the header
/// without its rebuild section (which is for the file alone).
pub(super) fn written(
    path: PathBuf,
    header: OffloadHeader,
    ttl: Duration,
    id: ulid::Ulid,
) -> OffloadedResult {
    OffloadedResult {
        path,
        header: OffloadHeader {
            rebuild: None,
            ..header
        },
        ttl,
        created_at: id.datetime().into(),
    }
}

/// The file's header line, with its `\n`.
pub(super) fn head_line(header: &OffloadHeader) -> Vec<u8> {
    // Serialising our own types cannot fail.
    let mut head = serde_json::to_vec(header).unwrap_or_default();
    head.push(b'\n');
    head
}
