//! From a tool result to records, and back.
//!
//! DESIGN.md's mapping: a JSON array (in `structuredContent` or in a text
//! block) gives one record per element; an object whose bulk is one array
//! gives that array's elements; JSONL text gives its lines; plain text gives
//! one record per line (`{"line": n, "text": "..."}`). Everything that is not
//! a record — the other top-level fields, the other blocks, the object around
//! the array, the exact layout of the text — goes into a [`Rebuild`] stored in
//! the file's header, so [`rebuild`](crate::rebuild) can restore the original
//! `CallToolResult` exactly.
//!
//! # Files
//!
//! This file holds the types (what a file header records, what an
//! extraction gives); `extract` takes a result apart, `assemble` puts one
//! back together, `shape` finds where records sit in one value (used by
//! `extract` only).

mod assemble;
mod extract;
mod shape;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json::{Style, minify, trim_parts};
use crate::wire::mcp::RawObject;

pub(crate) use assemble::assemble;
pub(crate) use extract::extract;

/// The part of a file header that lets the original result be rebuilt.
///
/// It holds the original `CallToolResult` with each value that records came
/// from replaced by `null`, and one `Segment` per such value. Its `Debug`
/// shows sizes only (the envelope is the server's data).
#[derive(Clone, Serialize, Deserialize)]
pub struct Rebuild {
    /// The original result, minified, record sources set to `null`.
    pub(crate) result: Box<RawValue>,
    /// Where the records came from, in file order.
    pub(crate) segments: Vec<Segment>,
    /// A string field of `structuredContent` that held the text of a
    /// record-source block (the Python SDK's `{"result": "<text>"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) structured_copy: Option<StructuredCopy>,
}

impl std::fmt::Debug for Rebuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebuild")
            .field("result_bytes", &self.result.get().len())
            .field("segments", &self.segments.len())
            .finish_non_exhaustive()
    }
}

/// `structuredContent[key]` is the text of content block `block`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StructuredCopy {
    pub key: String,
    pub block: usize,
}

/// A minified JSON object: `object` with the value of `key` replaced by
/// `value` (raw JSON).
pub(crate) fn with_field(object: &RawObject<'_>, key: &str, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 64);
    out.push('{');
    for (n, (k, v)) in object.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        crate::json::push_json_string(&mut out, k);
        out.push(':');
        if k == key {
            out.push_str(value);
        } else {
            out.push_str(&minify(v.get()));
        }
    }
    out.push('}');
    out
}

/// One value of the original result that records were taken from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Segment {
    /// `None`: `structuredContent`; `Some(i)`: the text of content block `i`.
    pub block: Option<usize>,
    /// First record (0-based, after the header) and number of records.
    pub start: usize,
    pub count: usize,
    /// How the records are laid out in the value.
    pub shape: Shape,
}

/// How records sit inside one value.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Shape {
    /// Minified JSON `before + "[" + records.join(",") + "]" + after`, laid
    /// out with `format` when it is a text block.
    Json {
        before: String,
        after: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<TextFormat>,
    },
    /// A single JSON value that is itself the one record.
    Value {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<TextFormat>,
    },
    /// JSON lines joined by `\n` (compact lines only, else `verbatim`).
    Jsonl {
        trailing_newline: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verbatim: Option<String>,
    },
    /// Text lines, one `{"line", "text"}` record each, joined by `\n`.
    Lines { trailing_newline: bool },
}

/// How a JSON text block was laid out around its minified form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TextFormat {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    lead: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    trail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    style: Option<Style>,
    /// The original text, kept when no known style reproduces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verbatim: Option<String>,
}

impl TextFormat {
    fn detect(text: &str, minified: &str) -> TextFormat {
        let (lead, core, trail) = trim_parts(text);
        match Style::detect(core, minified) {
            Some(style) => TextFormat {
                lead: lead.to_owned(),
                trail: trail.to_owned(),
                style: Some(style),
                verbatim: None,
            },
            None => TextFormat {
                lead: String::new(),
                trail: String::new(),
                style: None,
                verbatim: Some(text.to_owned()),
            },
        }
    }

    /// Lays out `minified`; `exact` is false when records were dropped, in
    /// which case a verbatim original cannot be used.
    fn apply(&self, minified: &str, exact: bool) -> String {
        match (&self.verbatim, exact) {
            (Some(v), true) => v.clone(),
            _ => {
                let body = self.style.unwrap_or(Style::Compact).apply(minified);
                let mut s = String::with_capacity(self.lead.len() + body.len() + self.trail.len());
                s.push_str(&self.lead);
                s.push_str(&body);
                s.push_str(&self.trail);
                s
            }
        }
    }
}

/// What kind of records a result gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// JSON values (objects, arrays or scalars).
    Json,
    /// `{"line": n, "text": "..."}` records made from plain text.
    Lines,
}

/// A result taken apart into records.
#[derive(Debug)]
pub(crate) struct Extraction {
    /// Each record as compact JSON (one JSONL line).
    pub records: Vec<String>,
    pub kind: RecordKind,
    pub rebuild: Rebuild,
    /// Blocks that stay in the rewritten result (not record sources).
    pub kept_blocks: Vec<usize>,
    /// `structuredContent` with its record array emptied, when it was a source.
    pub structured_slim: Option<String>,
    /// The `structuredContent` field that copied a source block's text: the
    /// rewritten result puts the descriptor there.
    pub structured_copy_key: Option<String>,
}

/// Errors while rebuilding a result from an offloaded file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RebuildError {
    /// The file has no header line or it is not an LRO header.
    #[error("not an LRO file: {0}")]
    NotLroFile(&'static str),
    /// The header has no `rebuild` section (written by another implementation).
    #[error("the header carries no rebuild information")]
    NoRebuildInfo,
    /// The header says `count` records, the file holds another number.
    #[error("the header announces {expected} records but the file holds {found}")]
    CountMismatch {
        /// Records announced by the header.
        expected: usize,
        /// Records found after it.
        found: usize,
    },
    /// A line or the header is not valid JSON, or the layout is inconsistent.
    #[error("corrupt LRO file: {0}")]
    Corrupt(String),
    /// Reading the file failed.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// The file's time-to-live has passed: it is refused even if the cleanup
    /// task has not deleted it yet.
    #[error("the offloaded file expired at {expired_at}")]
    Expired {
        /// When it expired.
        expired_at: chrono::DateTime<chrono::Utc>,
    },
    /// The path is not an offloaded file of this engine: outside its output
    /// directory, not a regular file, or not named `atlatl-{operation}-{ulid}.jsonl`.
    #[error("not an offloaded file of this engine: {0}")]
    NotOurs(std::path::PathBuf),
}
