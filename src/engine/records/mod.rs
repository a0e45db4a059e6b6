//! From a tool result to records, and back.
//!
//! The mapping: a JSON array (in `structuredContent` or in a text
//! block) gives one record per element; an object whose bulk is one array
//! gives that array's elements; JSONL text gives its lines; plain text gives
//! one record per non-empty line (`{"line": n, "text": "..."}`; see
//! `lines` for empty lines and for texts of very short lines). The text of
//! an embedded text resource (`resource.text`) is text like any other.
//! Everything that is not a record — the other top-level fields, the other
//! blocks, the object around the array, the layout of the text — goes into
//! a [`Rebuild`] stored in the file's header, so [`rebuild`](crate::offload::rebuild)
//! can restore the original `CallToolResult`.
//!
//! # The header stays small
//!
//! Line 1 is read by agents (the guidance points at it), so it holds a few
//! KB whatever the result (measured: 400-2,100 bytes for the shapes of
//! `tests/engine/result_fidelity.rs`, at most 6 KB for any of its property cases):
//!
//! * Text layout: a known style, else a `layout` table (the whitespace of
//!   each kind of gap, and the few gaps that differ from it by their place),
//!   else the text itself when short; all texts together at most
//!   [`LAYOUT_BUDGET`]. Past it the layout is given up: such a JSON text (or
//!   JSON lines text) is rebuilt compact, **equal as JSON but not byte for
//!   byte** — only large texts whose whitespace differs from gap to gap
//!   more than a few times. A text whose object around its record array would not fit becomes
//!   one record (the whole value).
//! * Kept parts: blocks and top-level fields the rewritten result carries
//!   unchanged (an image, `_meta`, a `structuredContent` that stays, the
//!   text around its record array) are repeated up to [`KEPT_BUDGET`]; the
//!   rest is left to the rewritten result ([`FromResult`]): rebuilding it
//!   then needs that result too ([`rebuild_with`](crate::offload::rebuild_with)).
//! * Many blocks: alike segments and equal source blocks (a list sent as
//!   one text block per element) are stored as runs.
//!
//! Beyond these, a header grows by about 100 bytes per text block that gave
//! records and is unlike its neighbours.
//!
//! # Memory
//!
//! Records live in one buffer, [`Records`]: each record's JSON text followed
//! by a newline, which is the file's body as it will be written. A record
//! costs its bytes and one newline, never an allocation or an index entry of
//! its own, so a result of ten million one-byte records costs what its bytes
//! do. Nothing here keeps a list of records or of element positions.
//!
//! # Files
//!
//! This file holds the types (what a file header records, what an
//! extraction gives, the record buffer); `split` takes a result apart,
//! with `envelope` (what of the original the header keeps, and what it
//! leaves to the rewritten result), `assemble` puts one back together, `shape` finds where records sit in
//! one value and walks a minified array's elements (used by `split`),
//! `lines` turns plain text into line records and back, `layout` keeps the
//! whitespace of a JSON text as a small table.

mod assemble;
mod buffer;
mod envelope;
mod layout;
mod lines;
mod marker;
mod shape;
mod split;
mod text_format;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json::{Style, minify, trim_parts};
use crate::wire::mcp::RawObject;

pub(crate) use assemble::{KeptSource, assemble};
pub(crate) use buffer::{Records, RecordsView};
pub(crate) use envelope::envelope;
pub(crate) use marker::{STRUCTURED_MARKER, with_descriptor};
pub(crate) use split::split;
pub(crate) use text_format::TextFormat;

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
    /// What the header leaves to the rewritten result, which carries it
    /// unchanged (a large image, a large `_meta`): rebuilding then needs
    /// that result too ([`rebuild_with`](crate::offload::rebuild_with)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_result: Option<FromResult>,
    /// Runs of equal blocks in the envelope, `(i, n)`: envelope block `i`
    /// stands for itself and the `n` equal blocks after it (a list sent as
    /// one text block per element: thousands of `{"type":"text","text":null}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) repeats: Vec<(usize, usize)>,
}

/// Bytes of kept content blocks and top-level fields a file header repeats,
/// all together; larger ones are left to the rewritten result
/// ([`FromResult`]), so line 1 stays small whatever the result holds.
pub(crate) const KEPT_BUDGET: usize = 2048;

/// The parts of the original result a header does not repeat because the
/// rewritten result carries them unchanged, in order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct FromResult {
    /// Blocks the rewritten result has before the kept ones (the
    /// descriptor, the resource link).
    pub inserted: usize,
    /// Content blocks left out of the envelope, as runs `(first original
    /// index, count)`: the kept blocks of the rewritten result, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<(usize, usize)>,
    /// Top-level fields whose value in the envelope is a `null` standing
    /// for the rewritten result's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// `(n, segments)`: the text around the record array of these segments
    /// is the rewritten result's `structuredContent` (`before[]after`, the
    /// array emptied), cut at byte `n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub around: Option<(usize, Vec<usize>)>,
}

impl std::fmt::Debug for Rebuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebuild")
            .field("result_bytes", &self.result.get().len())
            .field("segments", &self.segments.len())
            .field("from_result", &self.from_result.is_some())
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
    /// In a header: this many more segments follow this one, each of the
    /// next block, `count` records further, of the same shape (see
    /// [`compact_segments`]). Always 0 once expanded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The segments with runs of alike ones (block after block, records after
/// records, one shape) written as one, for the header.
pub(crate) fn compact_segments(segments: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(segments.len().min(64));
    for seg in segments {
        if let Some(last) = out.last_mut() {
            let k = last.repeat + 1;
            let follows = last.block.zip(seg.block).is_some_and(|(a, b)| a + k == b)
                && last.start + k * last.count == seg.start
                && last.count == seg.count
                && last.shape == seg.shape;
            if follows {
                last.repeat += 1;
                continue;
            }
        }
        out.push(seg);
    }
    out
}

/// The segments of a header, runs expanded; at most `max` of them.
pub(crate) fn expand_segments(
    segments: &[Segment],
    max: usize,
) -> Result<std::borrow::Cow<'_, [Segment]>, RebuildError> {
    if segments.iter().all(|s| s.repeat == 0) {
        return Ok(std::borrow::Cow::Borrowed(segments));
    }
    let total = segments
        .iter()
        .try_fold(0usize, |n, s| n.checked_add(s.repeat)?.checked_add(1))
        .filter(|&n| n <= max)
        .ok_or_else(|| RebuildError::Corrupt("too many segments".into()))?;
    let run = || RebuildError::Corrupt("segment run".into());
    let mut out = Vec::with_capacity(total);
    for seg in segments {
        for k in 0..=seg.repeat {
            let block = match seg.block {
                Some(b) => Some(b.checked_add(k).ok_or_else(run)?),
                None => None,
            };
            let start = k
                .checked_mul(seg.count)
                .and_then(|o| seg.start.checked_add(o))
                .ok_or_else(run)?;
            out.push(Segment {
                block,
                start,
                count: seg.count,
                shape: seg.shape.clone(),
                repeat: 0,
            });
        }
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// How records sit inside one value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// JSON lines joined by `\n`: compact lines, or every line laid out
    /// in one `style` (Python's `json.dumps` default `", "` and `": "`
    /// separators), else `verbatim`.
    Jsonl {
        trailing_newline: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verbatim: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        style: Option<Style>,
    },
    /// Text lines joined by `\n`: one `{"line", "text"}` record per
    /// non-empty line, or per group of consecutive short lines (`text`
    /// holding them joined by `\n`); the lines no record covers are empty.
    Lines {
        trailing_newline: bool,
        /// Number of lines (the final empty one after a trailing `\n` not
        /// counted). Absent in files written before empty lines were left
        /// out: then every line has its record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<usize>,
    },
}

/// Bytes of text layout a file header may hold, all blocks together: the
/// [`Layout`] tables, and the texts kept verbatim. Past it, a text's layout
/// is given up (see [`TextFormat`]).
pub(crate) const LAYOUT_BUDGET: usize = 2048;

impl Segment {
    /// Where this segment keeps its block's text verbatim: a JSON text no
    /// known style lays out, or JSON lines that are not compact.
    fn verbatim_slot(&mut self) -> Option<&mut String> {
        match &mut self.shape {
            Shape::Json {
                format: Some(f), ..
            }
            | Shape::Value { format: Some(f) } => f.verbatim.as_mut(),
            Shape::Jsonl { verbatim, .. } => verbatim.as_mut(),
            _ => None,
        }
    }

    /// Moves `text` (its block's) in where the segment keeps it verbatim;
    /// gives it back when the segment does not.
    fn keep_verbatim(&mut self, text: String) -> Option<String> {
        match self.verbatim_slot() {
            Some(slot) => {
                *slot = text;
                None
            }
            None => Some(text),
        }
    }
}

/// What kind of records a result gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// JSON values (objects, arrays or scalars).
    Json,
    /// `{"line": n, "text": "..."}` records made from plain text, one per
    /// non-empty line.
    Lines,
    /// Line records of which some hold a group of consecutive short lines
    /// (`text` has them joined by `\n`, `line` is the first one's number).
    LineGroups,
}

impl RecordKind {
    /// What a line of the file is, for the line schema's description
    /// (`None`: the default, one record per line).
    pub(crate) fn describe(self) -> Option<&'static str> {
        match self {
            RecordKind::Json => None,
            RecordKind::Lines => Some(
                "One record per non-empty line of the text, after the header line: `line` is \
                 its number in the text, `text` the line. Empty lines have no record.",
            ),
            RecordKind::LineGroups => Some(
                "One record per group of consecutive short lines of the text, after the header \
                 line: `line` is the number of the group's first line, `text` its lines joined \
                 by \\n (empty lines between them included). Other empty lines have no record.",
            ),
        }
    }
}

/// A result taken apart into records.
#[derive(Debug)]
pub(crate) struct Extraction {
    /// Each record as compact JSON (one JSONL line).
    pub records: Records,
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

impl FromResult {
    /// For each of `blocks` original blocks, whether it is left out.
    pub(crate) fn left_out(&self, blocks: usize) -> Vec<bool> {
        let mut out = vec![false; blocks];
        for &(start, n) in &self.blocks {
            let end = start.saturating_add(n).min(blocks);
            if let Some(run) = out.get_mut(start.min(end)..end) {
                run.fill(true);
            }
        }
        out
    }
}

/// The first content block (of `blocks`) that gave records, from the
/// sorted list of the blocks that did not: the descriptor stands for it
/// and carries its annotations.
pub(crate) fn first_source(kept_blocks: &[usize], blocks: usize) -> Option<usize> {
    let first = kept_blocks
        .iter()
        .enumerate()
        .find(|&(n, &i)| n != i)
        .map_or(kept_blocks.len(), |(n, _)| n);
    (first < blocks).then_some(first)
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
    /// The header leaves large kept parts (an image, a large `_meta`) to the
    /// rewritten result: rebuild with [`rebuild_with`](crate::offload::rebuild_with).
    #[error("the rebuild needs the rewritten result, which holds the parts the file does not")]
    NeedsRewrittenResult,
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
