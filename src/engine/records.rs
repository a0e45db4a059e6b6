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

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json::{Outline, Style, minifies_to, minify, minify_outline, range_in, trim_parts};
use crate::wire::mcp::{BlockOut, RawObject, RawResult, ResultError};

/// The part of a file header that lets the original result be rebuilt.
///
/// It holds the original `CallToolResult` with each value that records came
/// from replaced by `null`, and one `Segment` per such value.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// The shape of one JSON text or structured value.
enum JsonShape<'a> {
    /// `before + [elements] + after`.
    Array {
        before: &'a str,
        after: &'a str,
        elements: Vec<&'a str>,
    },
    /// One value, one record.
    Single,
}

/// Finds the record array in minified JSON: the value itself when it is an
/// array, else the array field holding more than half of an object's bytes.
fn json_shape(minified: &str) -> JsonShape<'_> {
    let bytes = minified.as_bytes();
    let array = match bytes.first() {
        Some(b'[') => Some(minified),
        Some(b'{') => serde_json::from_str::<RawObject<'_>>(minified)
            .ok()
            .and_then(|obj| {
                obj.values()
                    .map(|v| v.get())
                    .filter(|v| v.starts_with('['))
                    .max_by_key(|v| v.len())
            })
            .filter(|v| v.len() * 2 > minified.len()),
        _ => None,
    };
    let Some(array) = array else {
        return JsonShape::Single;
    };
    let Ok(elements) = serde_json::from_str::<Vec<&RawValue>>(array) else {
        return JsonShape::Single;
    };
    let range = range_in(minified, array);
    JsonShape::Array {
        before: &minified[..range.start],
        after: &minified[range.end..],
        elements: elements.into_iter().map(RawValue::get).collect(),
    }
}

/// [`json_shape`] from the outline found while minifying (no parse), the
/// same answer. Objects with escaped or repeated keys take the parsing way.
fn json_shape_outlined<'m>(minified: &'m str, outline: &Outline) -> JsonShape<'m> {
    let shape = shape_from_outline(minified, outline);
    // Debug builds (the tests, the property tests) check it against the parse.
    #[cfg(debug_assertions)]
    match (&shape, json_shape(minified)) {
        (JsonShape::Single, JsonShape::Single) => {}
        (
            JsonShape::Array {
                before,
                after,
                elements,
            },
            JsonShape::Array {
                before: b,
                after: a,
                elements: e,
            },
        ) => assert!(*before == b && *after == a && *elements == e, "{minified}"),
        _ => panic!("outline and parse disagree on {minified}"),
    }
    shape
}

fn shape_from_outline<'m>(minified: &'m str, outline: &Outline) -> JsonShape<'m> {
    let slices = |ranges: &[std::ops::Range<usize>]| -> Vec<&'m str> {
        ranges.iter().map(|r| &minified[r.clone()]).collect()
    };
    match outline.top {
        b'[' => JsonShape::Array {
            before: "",
            after: "",
            elements: slices(&outline.elements),
        },
        b'{' => {
            let keys = || outline.members.iter().map(|m| &minified[m.key.clone()]);
            let mut seen = std::collections::HashSet::with_capacity(outline.members.len());
            if keys().any(|k| k.contains('\\') || !seen.insert(k)) {
                return json_shape(minified);
            }
            let Some(member) = outline
                .members
                .iter()
                .filter(|m| minified[m.value.clone()].starts_with('['))
                .max_by_key(|m| m.value.len())
                .filter(|m| m.value.len() * 2 > minified.len())
            else {
                return JsonShape::Single;
            };
            JsonShape::Array {
                before: &minified[..member.value.start],
                after: &minified[member.value.end..],
                elements: slices(&member.elements),
            }
        }
        _ => JsonShape::Single,
    }
}

/// What a text block holds.
enum TextKind {
    Json {
        minified: String,
        outline: Outline,
    },
    /// JSON that minifies to exactly the minified `structuredContent`: its
    /// backwards-compatible text copy.
    Copy,
    Jsonl {
        lines: Vec<String>,
    },
    Plain,
}

fn classify_text(text: &str, structured_minified: Option<&str>) -> TextKind {
    let (_, core, _) = trim_parts(text);
    if core.starts_with(['{', '[']) && serde_json::from_str::<&RawValue>(core).is_ok() {
        // Compared while minifying: a copy is never built.
        if structured_minified.is_some_and(|m| minifies_to(core, m)) {
            return TextKind::Copy;
        }
        let (minified, outline) = minify_outline(core);
        return TextKind::Json { minified, outline };
    }
    if core.starts_with(['{', '[']) && core.contains('\n') {
        let mut lines = Vec::new();
        for line in core.split('\n') {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            if serde_json::from_str::<&RawValue>(line).is_err() {
                return TextKind::Plain;
            }
            lines.push(minify(line.trim()));
        }
        if lines.len() >= 2 {
            return TextKind::Jsonl { lines };
        }
    }
    TextKind::Plain
}

/// Takes a parsed result apart. `is_large` says whether a plain text block is
/// big enough to become records even when JSON records exist elsewhere.
pub(crate) fn extract(
    result: &RawResult<'_>,
    is_large: impl Fn(&str) -> bool,
) -> Result<Extraction, ResultError> {
    let mut records: Vec<String> = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut structured_slim = None;
    let mut structured_minified = None;

    // 1. structuredContent holding an array.
    if let Some(raw) = result.structured() {
        let (minified, outline) = minify_outline(raw.get());
        let mut is_array = false;
        if let JsonShape::Array {
            before,
            after,
            elements,
        } = json_shape_outlined(&minified, &outline)
        {
            let start = records.len();
            records.extend(elements.iter().map(|e| (*e).to_owned()));
            segments.push(Segment {
                block: None,
                start,
                count: elements.len(),
                shape: Shape::Json {
                    before: before.to_owned(),
                    after: after.to_owned(),
                    format: None,
                },
            });
            structured_slim = Some(format!("{before}[]{after}"));
            is_array = true;
        }
        if is_array {
            structured_minified = Some(minified);
        }
    }

    // 2. Text blocks: classify each.
    let mut kinds: Vec<Option<TextKind>> = Vec::with_capacity(result.blocks.len());
    for block in &result.blocks {
        kinds.push(
            block
                .text
                .as_deref()
                .map(|t| classify_text(t, structured_minified.as_deref())),
        );
    }
    // A text block holding one element of the structured array is its copy
    // (the Python SDK sends a list as one text block per element).
    // Keyed by hash so `records` stays free to grow; a hit is compared in full.
    let hash = |s: &str| {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(s)
    };
    let single_json_texts = kinds
        .iter()
        .any(|k| matches!(k, Some(TextKind::Json { minified, .. }) if !minified.starts_with('[')));
    let element_of: std::collections::HashMap<u64, usize> = match segments.first() {
        Some(seg) if seg.block.is_none() && single_json_texts => records
            .iter()
            .enumerate()
            .rev()
            .map(|(n, r)| (hash(r), n))
            .collect(),
        _ => std::collections::HashMap::new(),
    };
    let element_copies: Vec<Option<usize>> = kinds
        .iter()
        .map(|k| match k {
            Some(TextKind::Json { minified, .. }) if !element_of.is_empty() => element_of
                .get(&hash(minified))
                .copied()
                .filter(|&n| records[n] == *minified),
            _ => None,
        })
        .collect();

    let mut is_source = vec![false; result.blocks.len()];
    // A text block equal to structuredContent is its backwards-compatible
    // copy; every other JSON text is shaped (parsed) once, here.
    let mut shapes: Vec<Option<JsonShape<'_>>> = kinds
        .iter()
        .map(|k| match k {
            Some(TextKind::Json { minified, outline }) => {
                Some(json_shape_outlined(minified, outline))
            }
            _ => None,
        })
        .collect();
    let has_json_array_text = shapes
        .iter()
        .any(|s| matches!(s, Some(JsonShape::Array { .. })))
        || kinds
            .iter()
            .any(|k| matches!(k, Some(TextKind::Jsonl { .. })));
    let has_json_text = kinds
        .iter()
        .any(|k| matches!(k, Some(TextKind::Json { .. } | TextKind::Copy)));
    let has_array_records = !records.is_empty() || has_json_array_text;
    let json_records_exist = has_array_records || has_json_text;

    for (i, kind) in kinds.iter().enumerate() {
        let Some(kind) = kind else { continue };
        let text = result.blocks[i].text.as_deref().unwrap_or_default();
        match kind {
            // A text copy of structuredContent (the spec's backwards-compatible text).
            TextKind::Copy => {
                if let (Some(first), Some(minified)) = (segments.first(), &structured_minified) {
                    if let Shape::Json { before, after, .. } = &first.shape {
                        segments.push(Segment {
                            block: Some(i),
                            start: first.start,
                            count: first.count,
                            shape: Shape::Json {
                                before: before.clone(),
                                after: after.clone(),
                                format: Some(TextFormat::detect(text, minified)),
                            },
                        });
                        is_source[i] = true;
                    }
                }
            }
            TextKind::Json { minified, .. } if element_copies[i].is_some() => {
                segments.push(Segment {
                    block: Some(i),
                    start: element_copies[i].unwrap_or_default(),
                    count: 1,
                    shape: Shape::Value {
                        format: Some(TextFormat::detect(text, minified)),
                    },
                });
                is_source[i] = true;
            }
            TextKind::Json { minified, .. } => match shapes[i].take() {
                None => {}
                Some(JsonShape::Array {
                    before,
                    after,
                    elements,
                }) => {
                    let start = records.len();
                    records.extend(elements.iter().map(|e| (*e).to_owned()));
                    segments.push(Segment {
                        block: Some(i),
                        start,
                        count: elements.len(),
                        shape: Shape::Json {
                            before: before.to_owned(),
                            after: after.to_owned(),
                            format: Some(TextFormat::detect(text, minified)),
                        },
                    });
                    is_source[i] = true;
                }
                Some(JsonShape::Single) if !has_array_records || is_large(text) => {
                    segments.push(Segment {
                        block: Some(i),
                        start: records.len(),
                        count: 1,
                        shape: Shape::Value {
                            format: Some(TextFormat::detect(text, minified)),
                        },
                    });
                    records.push(minified.clone());
                    is_source[i] = true;
                }
                Some(JsonShape::Single) => {}
            },
            TextKind::Jsonl { lines } => {
                let (lead, core, trail) = trim_parts(text);
                let joined = lines.join("\n");
                let trailing_newline = trail == "\n";
                let exact =
                    lead.is_empty() && (trail.is_empty() || trailing_newline) && core == joined;
                segments.push(Segment {
                    block: Some(i),
                    start: records.len(),
                    count: lines.len(),
                    shape: Shape::Jsonl {
                        trailing_newline,
                        verbatim: (!exact).then(|| text.to_owned()),
                    },
                });
                records.extend(lines.iter().cloned());
                is_source[i] = true;
            }
            TextKind::Plain => {
                if json_records_exist && !is_large(text) {
                    continue;
                }
                let mut parts: Vec<&str> = text.split('\n').collect();
                let trailing_newline = parts.len() > 1 && parts.last() == Some(&"");
                if trailing_newline {
                    parts.pop();
                }
                let start = records.len();
                for (n, line) in parts.iter().enumerate() {
                    let mut rec = String::with_capacity(line.len() + 24);
                    rec.push_str("{\"line\":");
                    rec.push_str(&(n + 1).to_string());
                    rec.push_str(",\"text\":");
                    crate::json::push_json_string(&mut rec, line);
                    rec.push('}');
                    records.push(rec);
                }
                segments.push(Segment {
                    block: Some(i),
                    start,
                    count: parts.len(),
                    shape: Shape::Lines { trailing_newline },
                });
                is_source[i] = true;
            }
        }
    }

    let kind = if !segments.is_empty()
        && segments
            .iter()
            .all(|s| matches!(s.shape, Shape::Lines { .. }))
    {
        RecordKind::Lines
    } else {
        RecordKind::Json
    };

    // 3. structuredContent without records whose string field repeats the
    // text of a source block (`{"result": "<the text>"}`).
    let mut structured_copy = None;
    let mut structured_envelope = None;
    if let Some(raw) = result.structured()
        && !segments.iter().any(|s| s.block.is_none())
        && raw.get().trim_start().starts_with('{')
        && let Ok(object) = serde_json::from_str::<RawObject<'_>>(raw.get())
    {
        'fields: for (key, value) in &object {
            if !value.get().starts_with('"') {
                continue;
            }
            let Ok(field) = serde_json::from_str::<String>(value.get()) else {
                continue;
            };
            for (i, block) in result.blocks.iter().enumerate() {
                if is_source[i] && block.text.as_deref() == Some(field.as_str()) {
                    structured_envelope = Some(with_field(&object, key, "\"\""));
                    structured_copy = Some(StructuredCopy {
                        key: key.clone(),
                        block: i,
                    });
                    break 'fields;
                }
            }
        }
    }

    // The envelope: the original result with every source value nulled.
    let blocks: Vec<BlockOut<'_>> = (0..result.blocks.len())
        .map(|i| {
            if is_source[i] {
                BlockOut::WithText(i, None)
            } else {
                BlockOut::Original(i)
            }
        })
        .collect();
    let has_structured_source = segments.iter().any(|s| s.block.is_none());
    let envelope = result.write(
        &blocks,
        structured_envelope
            .as_deref()
            .or(has_structured_source.then_some("null")),
    );
    let envelope = RawValue::from_string(envelope).map_err(ResultError::NotJson)?;
    let kept_blocks = (0..result.blocks.len())
        .filter(|&i| !is_source[i])
        .collect();

    Ok(Extraction {
        records,
        kind,
        structured_copy_key: structured_copy.as_ref().map(|c| c.key.clone()),
        rebuild: Rebuild {
            result: envelope,
            segments,
            structured_copy,
        },
        kept_blocks,
        structured_slim,
    })
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

/// Puts a result back together from its rebuild info and (some of) its
/// records. With `exact == false` (records dropped) text that was kept
/// verbatim is re-laid out from the remaining records instead.
pub(crate) fn assemble(
    rebuild: &Rebuild,
    records: &[&str],
    exact: bool,
) -> Result<String, RebuildError> {
    let corrupt = |what: &str| RebuildError::Corrupt(what.to_owned());
    let envelope = RawResult::parse_envelope(rebuild.result.get())
        .map_err(|e| RebuildError::Corrupt(e.to_string()))?;
    let mut texts: Vec<Option<String>> = vec![None; envelope.blocks.len()];
    let mut dropped = vec![false; envelope.blocks.len()];
    let mut structured: Option<String> = None;
    for seg in &rebuild.segments {
        let end = seg
            .start
            .checked_add(seg.count)
            .ok_or_else(|| corrupt("segment range"))?;
        let recs: &[&str] = if exact {
            records
                .get(seg.start..end)
                .ok_or_else(|| corrupt("segment out of range"))?
        } else {
            records
                .get(seg.start.min(records.len())..end.min(records.len()))
                .unwrap_or_default()
        };
        let value = match &seg.shape {
            Shape::Json {
                before,
                after,
                format,
            } => {
                let mut m = String::with_capacity(
                    before.len()
                        + after.len()
                        + 2
                        + recs.iter().map(|r| r.len() + 1).sum::<usize>(),
                );
                m.push_str(before);
                m.push('[');
                for (n, r) in recs.iter().enumerate() {
                    if n > 0 {
                        m.push(',');
                    }
                    m.push_str(r);
                }
                m.push(']');
                m.push_str(after);
                match format {
                    Some(f) => f.apply(&m, exact),
                    None => m,
                }
            }
            Shape::Value { format } => {
                let m = recs.first().copied().unwrap_or("null");
                match format {
                    Some(f) => f.apply(m, exact && recs.len() == 1),
                    None => m.to_owned(),
                }
            }
            Shape::Jsonl {
                trailing_newline,
                verbatim,
            } => match (verbatim, exact) {
                (Some(v), true) => v.clone(),
                _ => {
                    let mut s = recs.join("\n");
                    if *trailing_newline && !recs.is_empty() {
                        s.push('\n');
                    }
                    s
                }
            },
            Shape::Lines { trailing_newline } => {
                let mut s = String::new();
                for (n, r) in recs.iter().enumerate() {
                    #[derive(Deserialize)]
                    struct Line {
                        text: String,
                    }
                    let line: Line = serde_json::from_str(r)
                        .map_err(|e| RebuildError::Corrupt(e.to_string()))?;
                    if n > 0 {
                        s.push('\n');
                    }
                    s.push_str(&line.text);
                }
                if *trailing_newline {
                    s.push('\n');
                }
                s
            }
        };
        match seg.block {
            None => structured = Some(value),
            Some(i) => {
                let slot = texts.get_mut(i).ok_or_else(|| corrupt("block index"))?;
                *slot = Some(value);
                // Truncated: a block that copied one dropped record goes too.
                dropped[i] = !exact && recs.is_empty() && matches!(seg.shape, Shape::Value { .. });
            }
        }
    }
    if let Some(copy) = &rebuild.structured_copy {
        let text = texts
            .get(copy.block)
            .and_then(Option::as_deref)
            .ok_or_else(|| corrupt("structured copy of a block without records"))?;
        let object: RawObject<'_> = envelope
            .structured()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .ok_or_else(|| corrupt("structuredContent is not an object"))?;
        let mut value = String::with_capacity(text.len() + 2);
        crate::json::push_json_string(&mut value, text);
        structured = Some(with_field(&object, &copy.key, &value));
    }
    let blocks: Vec<BlockOut<'_>> = texts
        .iter()
        .enumerate()
        .filter(|&(i, _)| !dropped[i])
        .map(|(i, t)| match t {
            Some(t) => BlockOut::WithText(i, Some(t.as_str())),
            None => BlockOut::Original(i),
        })
        .collect();
    if let Some(s) = &structured
        && serde_json::from_str::<&RawValue>(s).is_err()
    {
        return Err(corrupt("structuredContent records are not valid JSON"));
    }
    Ok(envelope.write(&blocks, structured.as_deref()))
}
