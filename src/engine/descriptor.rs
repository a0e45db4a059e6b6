//! The specification's public types: the JSONL header, the descriptor that
//! replaces an offloaded result, its summary and recipes, and the guidance.
//!
//! Field names are exactly the specification's. Additions are marked as such
//! and are skipped when empty, so a reader that knows only the spec's fields
//! reads our files and descriptors unchanged.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::records::Rebuild;

/// Detail level of the records: which fields they carry (the spec's
/// `light`, `medium`, `full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// id, title, namespace, memory_type, tags, created, status.
    Light,
    /// Light plus content, summary, modified and a flattened `confidence`.
    Medium,
    /// Medium (without the flattened confidence) plus enrichment,
    /// `provenance`, `temporal`, extensions and citations.
    Full,
}

impl Detail {
    /// `"light"`, `"medium"` or `"full"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Light => "light",
            Detail::Medium => "medium",
            Detail::Full => "full",
        }
    }

    /// The level named `s` (`light`, `medium`, `full`, any letter case).
    pub fn parse(s: &str) -> Option<Detail> {
        [Detail::Light, Detail::Medium, Detail::Full]
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(s))
    }
}

impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Marker value of [`OffloadHeader::header_type`].
pub const HEADER_TYPE: &str = "lro_header";

/// Metadata header written as the first line of an offloaded JSONL file.
///
/// Its `Debug` leaves out the `query` argument and the rebuild data.
#[derive(Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OffloadHeader {
    /// Marker identifying this as an LRO header. Always `"lro_header"`.
    #[serde(rename = "type")]
    pub header_type: String,
    /// The operation that produced these results: "recall", "search",
    /// "inject", "list", or the sanitised tool name for other tools.
    pub operation: String,
    /// The query string (if applicable): the call's `query` argument.
    pub query: Option<String>,
    /// Total number of record lines following the header.
    pub count: usize,
    /// Schema version of the record objects.
    pub schema_version: String,
    /// ISO 8601 timestamp of when the file was written.
    pub timestamp: String,
    /// Estimated total tokens of the result set.
    pub estimated_tokens: usize,
    /// Detail level used for serialization.
    pub detail: Detail,
    /// Addition: the MCP tool that was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Addition: when the file expires (ISO 8601, `timestamp` + ttl); readers
    /// of ours refuse the file after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Addition: what is needed to rebuild the original `CallToolResult`
    /// (see [`rebuild`](crate::rebuild)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<Rebuild>,
    /// Addition: the descriptor's recipes as `lro_extract` runs them, in
    /// the same order (recipe `n` is `recipes[n - 1]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipes: Vec<RecipeProgram>,
    /// Addition: who may read the file over MCP (a keyed digest of the
    /// session or tenant that produced it; never the session id itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Addition: one recipe as the extractor runs it. Its parameters are jq
/// variables (`$keyword`), never pasted into the filter; the descriptor's
/// shell command is the same filter with each variable replaced by the
/// value in `params`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecipeProgram {
    /// The jq options of the command, as letters (`"s"`, `"r"`, `"sr"`;
    /// empty for none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flags: String,
    /// The jq filter; each parameter appears as `$name`.
    pub filter: String,
    /// Each parameter's name and the value the shell command shows.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
}

impl RecipeProgram {
    /// A recipe program of `flags` and `filter`, without parameters.
    pub fn new(flags: impl Into<String>, filter: impl Into<String>) -> Self {
        RecipeProgram {
            flags: flags.into(),
            filter: filter.into(),
            params: BTreeMap::new(),
        }
    }

    /// Adds the parameter `name`, shown as `value` in the shell command.
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.insert(name.into(), value.into());
        self
    }
}

/// Represents an offloaded result file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadedResult {
    /// Absolute path to the JSONL file.
    pub path: PathBuf,
    /// Header metadata.
    pub header: OffloadHeader,
    /// Time-to-live for this file. After expiry, custodial cleanup MAY delete it.
    pub ttl: Duration,
    /// When this file was created.
    pub created_at: DateTime<Utc>,
}

/// Compact response returned when results are offloaded to JSONL.
///
/// Its `Debug` shows the summary's counts, the file and the number of
/// recipes; not the preview, the namespaces, recipes or guidance (which
/// quote the data).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OffloadResponse {
    /// Indicates this is an offloaded result.
    pub offloaded: bool,
    /// Summary of the result set.
    pub summary: OffloadSummary,
    /// Absolute path to the JSONL file.
    pub file_path: String,
    /// JSON Schema describing each record line in the JSONL file.
    pub line_schema: serde_json::Value,
    /// Ready-to-use jq recipes for common extraction patterns (always 10).
    pub jq_recipes: Vec<JqRecipe>,
    /// Usage guidance for the AI assistant.
    pub guidance: String,
    /// Addition (memory pointer pattern): about the first 200 characters of
    /// the data, so the reader can judge it before opening the file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preview: String,
}

/// Summary of an offloaded result set. Its `Debug` leaves out the
/// namespaces (values from the data).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OffloadSummary {
    /// Total number of records in the file.
    pub count: usize,
    /// Estimated total tokens saved by offloading.
    pub estimated_tokens: usize,
    /// The operation that was performed.
    pub operation: String,
    /// Top namespaces represented (up to 5): values of `namespace`, or of the
    /// most category-like field for other records.
    pub top_namespaces: Vec<String>,
    /// Score range (min, max) if applicable.
    pub score_range: Option<(f64, f64)>,
    /// Detail level used for serialization.
    pub detail: Detail,
}

/// A ready-to-run jq command. Its `Debug` shows the description only (a
/// command may quote values from the data).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JqRecipe {
    /// Human-readable description of what this recipe does.
    pub description: String,
    /// The jq command to execute.
    pub command: String,
}

/// The specification's guidance template, filled in.
pub fn guidance(count: usize, tokens: usize, path: &str, detail: Detail) -> String {
    format!(
        "Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n\
         File: {path}\n\
         Detail level: {detail}\n\
         Use the jq recipes above to extract specific data. Common patterns:\n\
         - Browse: recipe #1 (titles with namespaces)\n\
         - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
         - Analyze: recipe #6 (count by namespace)\n\
         Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; memory objects start at line 2."
    )
}

/// Guidance for records that are not memories: the same template, with the
/// recipe pointers naming what this file's recipes really do.
pub(crate) fn generic_guidance(
    count: usize,
    tokens: usize,
    path: &str,
    detail: Detail,
    recipes: &[JqRecipe],
) -> String {
    let name = |i: usize| {
        recipes
            .get(i)
            .map(|r| r.description.to_lowercase())
            .unwrap_or_default()
    };
    format!(
        "Results offloaded to JSONL ({count} records, ~{tokens} tokens saved).\n\
         File: {path}\n\
         Detail level: {detail}\n\
         Use the jq recipes above to extract specific data. Common patterns:\n\
         - Browse: recipe #1 ({})\n\
         - Filter: recipe #2 ({}) or #3 ({})\n\
         - Analyze: recipe #4 ({})\n\
         Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; records start at line 2.",
        name(0),
        name(1),
        name(2),
        name(3)
    )
}

impl std::fmt::Debug for OffloadHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadHeader")
            .field("operation", &self.operation)
            .field("count", &self.count)
            .field("schema_version", &self.schema_version)
            .field("timestamp", &self.timestamp)
            .field("estimated_tokens", &self.estimated_tokens)
            .field("detail", &self.detail)
            .field("tool", &self.tool)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for OffloadResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadResponse")
            .field("offloaded", &self.offloaded)
            .field("summary", &self.summary)
            .field("file_path", &self.file_path)
            .field("jq_recipes", &self.jq_recipes.len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for OffloadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadSummary")
            .field("count", &self.count)
            .field("estimated_tokens", &self.estimated_tokens)
            .field("operation", &self.operation)
            .field("top_namespaces", &self.top_namespaces.len())
            .field("detail", &self.detail)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for JqRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqRecipe")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}
