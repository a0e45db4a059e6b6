//! From a parsed result to records, and the [`Rebuild`] that puts it back.
//!
//! The steps, in order: the record array of `structuredContent`; each text
//! block classified (and its JSON shaped) once; the text blocks that copy
//! structured records; the records of the other text blocks, under the
//! [`Precedence`] rules; a `structuredContent` field that copies a source
//! block's text; the envelope, the original result with every source nulled.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{BuildHasher, BuildHasherDefault};

use std::borrow::Cow;

use crate::json::{Style, minify, trim_parts};
use crate::wire::mcp::{Raw, RawResult, ResultError};

use super::envelope::{envelope, leave_to_result, structured_text_copy};
use super::lines;
use super::shape::{
    JsonShape, TextKind, classify_text, json_shape, jsonl_lines, minified_shape, push_elements,
};
use super::{Extraction, FromResult, Rebuild, RecordKind, Records, Segment, Shape, TextFormat};
use rules::{LineStyle, Precedence};

mod rules;

/// Takes a parsed result apart. `is_large` says whether a plain text block is
/// big enough to become records even when JSON records exist elsewhere.
///
/// The text of each block that gave records leaves `result`: it is in the
/// records now, or (when no known layout reproduces it) moved into the
/// rebuild as it was; it is never copied.
///
/// `inserted` blocks (the descriptor, a resource link) will come before the
/// kept ones in the rewritten result: large kept parts are left to it (see
/// [`FromResult`]).
pub(crate) fn split(
    result: &mut RawResult<'_>,
    is_large: impl Fn(&str) -> bool,
    inserted: usize,
) -> Result<Extraction, ResultError> {
    let (mut found, mut structured) = find_records(result, &is_large);
    if structured.is_none() && result.blocks.iter().any(|b| b.laid_out.is_some()) {
        // No record array in `structuredContent` for a text copying it to
        // repeat: the text is taken apart as any JSON text is.
        result.decode_laid_out();
        (found, structured) = find_records(result, &is_large);
    }
    let kind = found.kind();
    let text_copy = structured_text_copy(result, &found.is_source, found.has_structured_source());
    let nulled_structured = match &text_copy {
        Some((_, emptied)) => Some(emptied.as_str()),
        None => found.has_structured_source().then_some("null"),
    };
    let from_result = leave_to_result(
        result,
        &found.is_source,
        &mut found.segments,
        nulled_structured.is_none(),
        inserted,
    );
    let (envelope, repeats) = envelope(result, &found.is_source, nulled_structured, &from_result)?;
    let kept_blocks = (0..result.blocks.len())
        .filter(|&i| !found.is_source[i])
        .collect();
    let structured_copy = text_copy.map(|(copy, _)| copy);
    found.take_source_texts(result);
    Ok(Extraction {
        records: found.records,
        kind,
        structured_copy_key: structured_copy.as_ref().map(|c| c.key.clone()),
        rebuild: Rebuild {
            result: envelope,
            segments: super::compact_segments(found.segments),
            repeats,
            structured_copy,
            from_result: Some(from_result).filter(FromResult::refers),
        },
        kept_blocks,
        structured_slim: structured.map(|s| s.slim),
    })
}

/// The records of `structuredContent`, then those of each text block, in
/// block order.
fn find_records<'a>(
    result: &RawResult<'a>,
    is_large: impl Fn(&str) -> bool,
) -> (Found, Option<StructuredArray<'a>>) {
    let mut found = Found::new(result.blocks.len());
    let structured = result
        .structured()
        .and_then(|raw| found.structured_array(raw));
    let structured_minified = structured.as_ref().map(|s| &*s.minified);
    let kinds: Vec<Option<TextKind<'_>>> = result
        .blocks
        .iter()
        .map(|b| match (b.laid_out, structured_minified) {
            // Detected already, from the escaped text (`structuredContent`,
            // minified, laid out): a copy.
            (Some((style, _)), Some(_)) => Some(TextKind::Copy { style: Some(style) }),
            _ => b
                .text
                .as_deref()
                .map(|t| classify_text(t, structured_minified)),
        })
        .collect();
    let element_copies = element_copies(&found, &kinds);
    let mut shapes = shape_json_texts(&kinds);
    let precedence = Precedence::new(&found, &kinds, &shapes);
    // Each text block gives at most one segment.
    for (i, kind) in kinds.iter().enumerate() {
        let Some(kind) = kind else { continue };
        let text = result.blocks[i].text.as_deref().unwrap_or_default();
        match (kind, element_copies[i]) {
            (TextKind::Copy { style }, _) => {
                found.structured_copy_text(i, text, *style, structured.as_ref())
            }
            (TextKind::Json { minified, .. }, Some(element)) => {
                found.element_copy_text(i, element, text, minified)
            }
            (TextKind::Json { minified, .. }, None) => match found.fit_around(shapes[i].take()) {
                Some(JsonShape::Array {
                    before,
                    after,
                    array,
                }) => found.array_text(i, text, minified, (before, after), array),
                Some(JsonShape::Single) if precedence.takes_value(text, &is_large) => {
                    found.value_text(i, text, minified)
                }
                Some(JsonShape::Single) | None => {}
            },
            (TextKind::Jsonl, _) => found.jsonl_text(i, text),
            (TextKind::Plain, _) if precedence.takes_plain(text, &is_large) => {
                found.plain_text(i, text)
            }
            (TextKind::Plain, _) => {}
        }
    }
    (found, structured)
}

/// The record array of `structuredContent`, when it holds one.
struct StructuredArray<'a> {
    /// `structuredContent` minified: a text block that minifies to exactly
    /// this is its backwards-compatible copy.
    minified: Cow<'a, str>,
    /// `structuredContent` with the record array emptied.
    slim: String,
}

/// The records and segments found so far, and which blocks gave them.
struct Found {
    records: Records,
    /// What is left of [`LAYOUT_BUDGET`](super::LAYOUT_BUDGET) for the
    /// layout of the texts.
    layout_budget: usize,
    /// Some plain text gave groups of lines.
    grouped_lines: bool,
    /// In file order. A segment of a block that copies records (of the
    /// structured array) points at them instead of adding its own.
    segments: Vec<Segment>,
    /// `is_source[i]`: content block `i` gave (or copies) records, so its
    /// text is nulled in the envelope and it leaves the rewritten result.
    is_source: Vec<bool>,
}

impl Found {
    fn new(blocks: usize) -> Found {
        Found {
            records: Records::default(),
            layout_budget: super::LAYOUT_BUDGET,
            grouped_lines: false,
            segments: Vec::new(),
            is_source: vec![false; blocks],
        }
    }

    /// Adds the records `write` appends as a new segment of `block`
    /// (`None`: `structuredContent`).
    fn add(&mut self, block: Option<usize>, write: impl FnOnce(&mut Records) -> Shape) {
        let start = self.records.len();
        let shape = write(&mut self.records);
        self.added_since(block, start, shape);
    }

    /// Adds the segment of `block` holding the records pushed since there
    /// were `start`.
    fn added_since(&mut self, block: Option<usize>, start: usize, shape: Shape) {
        self.segments.push(Segment {
            block,
            start,
            count: self.records.len() - start,
            shape,
            repeat: 0,
        });
        if let Some(i) = block {
            self.is_source[i] = true;
        }
    }

    /// Adds a segment of `block` that repeats records already found.
    fn repeat(&mut self, block: usize, start: usize, count: usize, shape: Shape) {
        self.segments.push(Segment {
            block: Some(block),
            start,
            count,
            shape,
            repeat: 0,
        });
        self.is_source[block] = true;
    }

    /// Takes the elements of `structuredContent`'s record array, if any. It
    /// comes first: the structured segment, when there is one, is segment 0.
    fn structured_array<'a>(&mut self, raw: Raw<'a>) -> Option<StructuredArray<'a>> {
        let raw = raw.get();
        // Servers send compact JSON: detected in the walk that finds the array,
        // which takes its elements too.
        let start = self.records.len();
        if let Some(shape) = minified_shape(raw, &mut self.records) {
            let slim = self.structured_segment(shape, start)?;
            return Some(StructuredArray {
                minified: Cow::Borrowed(raw),
                slim,
            });
        }
        let minified = minify(raw);
        let shape = json_shape(&minified);
        if let JsonShape::Array { array, .. } = shape {
            push_elements(&mut self.records, array);
        }
        let slim = self.structured_segment(shape, start)?;
        Some(StructuredArray {
            minified: Cow::Owned(minified),
            slim,
        })
    }

    /// The segment of the record array of `structuredContent` (minified,
    /// of shape `shape`), whose elements are the records from `start`;
    /// returns `structuredContent` with the array emptied.
    fn structured_segment(&mut self, shape: JsonShape<'_>, start: usize) -> Option<String> {
        let JsonShape::Array { before, after, .. } = shape else {
            return None;
        };
        self.added_since(None, start, json_array_shape(before, after, None));
        Some(format!("{before}[]{after}"))
    }

    /// A text copy of `structuredContent` (the spec's backwards-compatible
    /// text): it repeats the structured records, laid out as the text was.
    /// A text that copies the structured content laid out in `style` (found
    /// while classifying it): it repeats the structured records.
    fn structured_copy_text(
        &mut self,
        block: usize,
        text: &str,
        style: Option<Style>,
        array: Option<&StructuredArray>,
    ) {
        let (Some(first), Some(_)) = (self.segments.first(), array) else {
            return;
        };
        let Shape::Json { before, after, .. } = &first.shape else {
            return;
        };
        let format = TextFormat::detect_known(text, style, &mut self.layout_budget);
        let shape = json_array_shape(before, after, Some(format));
        let (start, count) = (first.start, first.count);
        self.repeat(block, start, count, shape);
    }

    /// A JSON text equal to structured record `element`: it repeats it.
    fn element_copy_text(&mut self, block: usize, element: usize, text: &str, minified: &str) {
        let format = Some(TextFormat::detect(text, minified, &mut self.layout_budget));
        self.repeat(block, element, 1, Shape::Value { format });
    }

    /// The shape of a JSON text block, as one value when the text around
    /// its record array does not fit in the header (what is left of
    /// [`LAYOUT_BUDGET`](super::LAYOUT_BUDGET)), which then keeps it.
    fn fit_around<'k>(&mut self, shape: Option<JsonShape<'k>>) -> Option<JsonShape<'k>> {
        match shape {
            Some(JsonShape::Array { before, after, .. })
                if before.len() + after.len() > self.layout_budget =>
            {
                Some(JsonShape::Single)
            }
            Some(JsonShape::Array {
                before,
                after,
                array,
            }) => {
                self.layout_budget -= before.len() + after.len();
                Some(JsonShape::Array {
                    before,
                    after,
                    array,
                })
            }
            other => other,
        }
    }

    /// A JSON text holding a record array: its elements.
    fn array_text(
        &mut self,
        block: usize,
        text: &str,
        minified: &str,
        (before, after): (&str, &str),
        array: &str,
    ) {
        let format = Some(TextFormat::detect(text, minified, &mut self.layout_budget));
        self.add(Some(block), |records| {
            push_elements(records, array);
            json_array_shape(before, after, format)
        });
    }

    /// A JSON text holding one value: that value, one record.
    fn value_text(&mut self, block: usize, text: &str, minified: &str) {
        let format = Some(TextFormat::detect(text, minified, &mut self.layout_budget));
        self.add(Some(block), |records| {
            records.reserve(minified.len() + 1);
            records.push(minified);
            Shape::Value { format }
        });
    }

    /// JSON lines: one record per line. The text is kept verbatim unless it
    /// is exactly its lines joined by `\n`, with at most a final `\n`, every
    /// line compact or every line laid out in one [`Style`].
    fn jsonl_text(&mut self, block: usize, text: &str) {
        let (lead, core, trail) = trim_parts(text);
        let trailing_newline = trail == "\n";
        let mut budget = self.layout_budget;
        self.add(Some(block), |records| {
            records.reserve(core.len() + 1);
            let mut lines = LineStyle::default();
            for line in jsonl_lines(core) {
                let start = records.body.len();
                records.push_minified(line);
                lines.note(line, &records.body[start..records.body.len() - 1]);
            }
            // The lines, joined by `\n`, are the text itself when no blank
            // line, `\r` or other whitespace was left out between them.
            let whole = lead.is_empty()
                && (trail.is_empty() || trailing_newline)
                && lines.bytes + lines.count.saturating_sub(1) == core.len();
            let style = lines.style.filter(|_| whole && lines.uniform);
            // Else the text is kept as it was when it is short; a longer one
            // is rebuilt as its compact lines (equal as JSON lines, not
            // byte for byte: see `TextFormat`).
            let verbatim = style.is_none() && text.len() <= budget;
            if verbatim {
                budget -= text.len();
            }
            Shape::Jsonl {
                trailing_newline,
                // The text itself is moved in at the end (`take_source_texts`).
                verbatim: verbatim.then(String::new),
                style: style.filter(|s| *s != Style::Compact),
            }
        });
        self.layout_budget = budget;
    }

    /// Plain text: line records (see `lines`).
    fn plain_text(&mut self, block: usize, text: &str) {
        let mut grouped = false;
        self.add(Some(block), |records| {
            let (shape, g) = lines::write(text, records);
            grouped = g;
            shape
        });
        self.grouped_lines |= grouped;
    }

    /// Takes the text of every source block out of `result`: moved into
    /// its segment when kept verbatim, else dropped (it is in the records).
    fn take_source_texts(&mut self, result: &mut RawResult<'_>) {
        for seg in &mut self.segments {
            let Some(i) = seg.block else { continue };
            if let Some(text) = result.blocks[i].text.take() {
                drop(seg.keep_verbatim(text));
            }
        }
        for (block, source) in result.blocks.iter_mut().zip(&self.is_source) {
            if *source {
                block.text = None;
            }
        }
    }

    /// `Lines` (or `LineGroups`) when every segment is plain text, else `Json`.
    fn kind(&self) -> RecordKind {
        let all_lines = !self.segments.is_empty()
            && self
                .segments
                .iter()
                .all(|s| matches!(s.shape, Shape::Lines { .. }));
        match (all_lines, self.grouped_lines) {
            (false, _) => RecordKind::Json,
            (true, false) => RecordKind::Lines,
            (true, true) => RecordKind::LineGroups,
        }
    }

    fn has_structured_source(&self) -> bool {
        self.segments.iter().any(|s| s.block.is_none())
    }
}

/// A [`Shape::Json`] from the text around the record array.
fn json_array_shape(before: &str, after: &str, format: Option<TextFormat>) -> Shape {
    Shape::Json {
        before: before.to_owned(),
        after: after.to_owned(),
        format,
    }
}

/// For each text block, the structured record it equals, when it is a JSON
/// text holding one element of the structured array (the Python SDK sends a
/// list as one text block per element). Looked for only when some JSON text
/// is not an array: the texts are hashed, then the records walked once, the
/// first equal record winning; nothing is kept per record.
fn element_copies(found: &Found, kinds: &[Option<TextKind<'_>>]) -> Vec<Option<usize>> {
    let hash = |s: &str| BuildHasherDefault::<DefaultHasher>::default().hash_one(s);
    let mut copies = vec![None; kinds.len()];
    let structured_first = found.segments.first().is_some_and(|s| s.block.is_none());
    let single_json_texts = kinds
        .iter()
        .any(|k| matches!(k, Some(TextKind::Json { minified }) if !minified.starts_with('[')));
    if !structured_first || !single_json_texts {
        return copies;
    }
    let mut wanted: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, k) in kinds.iter().enumerate() {
        if let Some(TextKind::Json { minified }) = k {
            wanted.entry(hash(minified)).or_default().push(i);
        }
    }
    for (n, record) in found.records.view().iter().enumerate() {
        let Some(blocks) = wanted.get(&hash(record)) else {
            continue;
        };
        for &i in blocks {
            if let Some(TextKind::Json { minified }) = &kinds[i]
                && copies[i].is_none()
                && **minified == *record
            {
                copies[i] = Some(n);
            }
        }
    }
    copies
}

/// Every JSON text shaped (walked for its record array) once, here.
fn shape_json_texts<'k>(kinds: &'k [Option<TextKind<'_>>]) -> Vec<Option<JsonShape<'k>>> {
    kinds
        .iter()
        .map(|k| match k {
            Some(TextKind::Json { minified }) => Some(json_shape(minified)),
            _ => None,
        })
        .collect()
}
