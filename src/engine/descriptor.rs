//! The specification's types: what an offloaded result becomes.
//!
//! * [`OffloadResponse`] — the descriptor the client receives in place of
//!   the result, as the JSON of a text block: `offloaded`, an
//!   [`OffloadSummary`] (`count`, `estimated_tokens`, `operation`,
//!   `top_namespaces`, `score_range`, `detail`), `file_path`, `line_schema`
//!   (a JSON Schema of the record lines), ten [`JqRecipe`]s and
//!   `guidance` ([`guidance`], or [`extract_guidance`] when the layer
//!   serves `lro_extract`). A descriptor aims at about 850 estimated
//!   tokens: over that it is built again with less, first the guidance in
//!   its compact form ([`compact_extract_guidance`]: the path named once,
//!   in `file_path`), then without the preview, then with the schema one
//!   level deep; every field the spec requires stays.
//! * [`OffloadHeader`] — the first line of every offload file
//!   (`"type": "lro_header"`, [`HEADER_TYPE`]): the operation, the count,
//!   the schema version, when it was written, the tokens, the [`Detail`]
//!   level; then one record per line.
//!
//! **Completeness contract.** Every descriptor and header says how many
//! record lines follow the header (`count`), how many bytes they are
//! (`data_bytes`) and their SHA-256 (`data_sha256`), computed while the
//! lines were made: `tail -n +2 FILE | wc -l`, `| wc -c` and `| sha256sum`
//! give the same figures for a file that holds the whole result.
//! * [`OffloadedResult`] — the file as the engine wrote it (path, header,
//!   ttl, creation time).
//!
//! Field names are exactly the specification's. Additions are marked as
//! such in each field's docs (`preview`, `expires_after_seconds`, `page`
//! ([`PageInfo`]), `summary.score_field` and the completeness contract
//! `summary.data_bytes` and `summary.data_sha256` in the descriptor;
//! `tool`, `expires_at`, `rebuild`, `recipes` ([`RecipeProgram`]),
//! `owner`, `data_bytes` and `data_sha256` in the header) and are skipped when empty, so a reader that knows only the
//! spec's fields reads our files and descriptors unchanged. The
//! [`offload`](crate::offload) module docs say what the client receives
//! around the descriptor (the other blocks, `structuredContent`, paged
//! results).
//!
//! A descriptor, shortened (from `cargo run --example quickstart`):
//!
//! ```json
//! {"offloaded": true,
//!  "summary": {"count": 200, "estimated_tokens": 64553, "operation": "recall",
//!              "top_namespaces": ["_episodic/incidents", "_procedural/reviews", "…"],
//!              "score_range": [0.501, 0.999], "detail": "full", "score_field": "provenance.confidence"},
//!  "file_path": "/tmp/tower-lro-quickstart/atlatl-recall-01M8759JFJ7KFTTDA47R3A1X0M.jsonl",
//!  "line_schema": {"type": "object", "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "…": {}}},
//!  "jq_recipes": [{"description": "List titles with namespaces",
//!                  "command": "tail -n +2 /tmp/tower-lro-quickstart/atlatl-recall-01M8759JFJ7KFTTDA47R3A1X0M.jsonl | jq -r '[.title, .namespace] | @tsv'"},
//!                 "… 10 in all"],
//!  "guidance": "Results offloaded to JSONL (200 memories, ~64553 tokens saved).\nFILE below is the file_path above.\nDetail level: full\nUse the `lro_extract` tool to query this result set. Examples:\n- Browse: lro_extract(file_path=FILE, recipe=1)\n…\nrecipe=N runs the Nth of the jq_recipes above.",
//!  "expires_after_seconds": 3600}
//! ```
//!
//! Reading both back, as a client or a tool of your own would:
//!
//! ```
//! use tower_lro::config::OffloadConfig;
//! use tower_lro::descriptor::{HEADER_TYPE, OffloadHeader, OffloadResponse};
//! use tower_lro::offload::{Offloader, Outcome, ToolCall};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let rows: Vec<_> = (0..500)
//!     .map(|i| serde_json::json!({"id": i, "level": "info", "msg": "worker started"}))
//!     .collect();
//! let result = serde_json::json!({"content": [{"type": "text", "text": serde_json::to_string(&rows)?}]});
//!
//! let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
//! let Outcome::Offloaded(offloaded) =
//!     offloader.process(&ToolCall::new("query_logs", None), result.to_string().as_bytes())?
//! else { panic!("500 rows are over the threshold") };
//!
//! // The client's side: the text block of the rewritten result.
//! let sent: serde_json::Value = serde_json::from_str(&offloaded.result)?;
//! let descriptor: OffloadResponse =
//!     serde_json::from_str(sent["content"][0]["text"].as_str().unwrap())?;
//! assert_eq!(descriptor.summary.count, 500);
//! assert_eq!(descriptor.summary.operation, "query_logs");
//! assert_eq!(descriptor.jq_recipes.len(), 10);
//!
//! // The file: the header line, then one record per line.
//! let file = std::fs::read_to_string(&descriptor.file_path)?;
//! let header: OffloadHeader = serde_json::from_str(file.lines().next().unwrap())?;
//! assert_eq!(header.header_type, HEADER_TYPE);
//! assert_eq!(header.count, 500);
//! assert_eq!(file.lines().count(), 1 + 500);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::records::Rebuild;

mod guidance;

pub(crate) use guidance::{FILE_LINE, RECIPES_ARE_JQ_RECIPES, extract_guidance_with, json_string};
pub use guidance::{compact_extract_guidance, extract_guidance, guidance};

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
    /// (see [`rebuild`](crate::offload::rebuild)).
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
    /// Addition, the completeness contract: bytes of the data lines (every
    /// byte after the header line, newlines included; `tail -n +2 FILE |
    /// wc -c`). With `count` and `data_sha256` a reader can tell the file
    /// holds the whole result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_bytes: Option<u64>,
    /// Addition, the completeness contract: SHA-256 of the data lines
    /// (lowercase hex; `tail -n +2 FILE | sha256sum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_sha256: Option<String>,
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

    /// Adds the parameter `name`, shown as `value` in the shell command
    /// (replaces its value when it is there already).
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.insert(name.into(), value.into());
        self
    }

    /// The filter with each `$name` that is a parameter replaced by the
    /// JSON string literal of its value (other variables, bound in the
    /// filter, stay). Run with the parameters as jq variables, the filter
    /// prints the same.
    pub fn rendered(&self) -> String {
        let mut out = String::with_capacity(self.filter.len() + 32);
        let mut rest = self.filter.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            match self.params.get(&after[..len]) {
                Some(value) => out.push_str(&serde_json::to_string(value).unwrap_or_default()),
                None => out.push_str(&rest[at..at + 1 + len]),
            }
            rest = &after[len..];
        }
        out.push_str(rest);
        out
    }

    /// The jq options, as words (`-s -r`).
    pub fn flag_words(&self) -> Vec<String> {
        self.flags.chars().map(|c| format!("-{c}")).collect()
    }

    /// The shell command that runs it over `file`: `tail -n +2 FILE | jq
    /// FLAGS 'FILTER'`, the filter [rendered](Self::rendered), both quoted
    /// for a POSIX shell.
    pub fn command(&self, file: &str) -> String {
        shell_command(
            &shell_quote(file),
            &self.flag_words().join(" "),
            &self.rendered(),
        )
    }
}

/// Quotes `s` for a POSIX shell, leaving it bare when that is safe.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `tail -n +2 FILE | jq FLAGS 'FILTER'`; `file` already quoted.
pub(crate) fn shell_command(file: &str, flags: &str, filter: &str) -> String {
    let quoted = format!("'{}'", filter.replace('\'', "'\\''"));
    if flags.is_empty() {
        format!("tail -n +2 {file} | jq {quoted}")
    } else {
        format!("tail -n +2 {file} | jq {flags} {quoted}")
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
    /// Addition: the file expires this many seconds after it was written
    /// (the header's `expires_at` says when); after that it may be deleted
    /// and extraction refuses it. Relative, so that the same result always
    /// gets the same descriptor apart from the file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_after_seconds: Option<u64>,
    /// Addition: the result was one page of a paged listing (it carried a
    /// cursor, `has_more` or a total beyond its count): the file holds
    /// this page only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<PageInfo>,
}

/// Addition: what a paged result said about its other pages.
///
/// The spec forbids a result that is offloaded and has an active cursor at
/// once; a layer in front of a server cannot stop the server from paging,
/// so it says so instead: the file holds this page, how many records there
/// are in all when the result said, and how to ask for the next page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PageInfo {
    /// The cursor of the next page, as the result gave it (cut to 200
    /// characters when longer; `next_cursor_field` says where to read it
    /// whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Where the result carried it (`structuredContent.nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor_field: Option<String>,
    /// Records in all pages, when the result said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more pages follow, when the result said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// What this means for the reader, in a sentence or two.
    pub note: String,
}

/// Summary of an offloaded result set. Its `Debug` leaves out the
/// namespaces (values from the data).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OffloadSummary {
    /// Total number of records in the file.
    pub count: usize,
    /// Estimated tokens of the whole result: what reading it inline would
    /// cost. The spec calls this "tokens saved"; the descriptor itself
    /// costs some of them (about 850).
    pub estimated_tokens: usize,
    /// The operation that was performed.
    pub operation: String,
    /// Top namespaces represented (up to 5): values of `namespace`, or of the
    /// most category-like field for other records.
    pub top_namespaces: Vec<String>,
    /// Score range (min, max) if applicable: of the records' `score`-like
    /// field, else of their confidence (`confidence`, or
    /// `provenance.confidence` at full detail). `score_field` names it.
    pub score_range: Option<(f64, f64)>,
    /// Detail level used for serialization.
    pub detail: Detail,
    /// Addition: the field `score_range` comes from (`score`,
    /// `confidence`, `provenance.confidence`, ...), so a confidence range is
    /// not read as search scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_field: Option<String>,
    /// Addition, the completeness contract (as in the file's header):
    /// bytes of the file's data lines, every byte after the header line
    /// (`tail -n +2 FILE | wc -c`). `count` is their number of lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_bytes: Option<u64>,
    /// Addition, the completeness contract: SHA-256 of the data lines,
    /// lowercase hex (`tail -n +2 FILE | sha256sum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_sha256: Option<String>,
}

/// A ready-to-run jq command. Its `Debug` shows neither (a command or a
/// description may quote values from the data).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JqRecipe {
    /// Human-readable description of what this recipe does.
    pub description: String,
    /// The jq command to execute.
    pub command: String,
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
            .field("data_bytes", &self.data_bytes)
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
            .field("data_bytes", &self.data_bytes)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for JqRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqRecipe")
            .field("description_chars", &self.description.chars().count())
            .finish_non_exhaustive()
    }
}
