//! What the split decides by: which blocks become records
//! ([`Precedence`]), and the layout the lines of a JSON lines text share
//! ([`LineStyle`]).

use super::{Found, JsonShape, Style, TextKind};

/// Which blocks that hold no array still become records. Array records
/// (`structuredContent`'s, a JSON array text's, JSON lines) win over a text
/// holding a single JSON value, and any JSON text wins over plain text,
/// unless the losing block is large itself.
pub(super) struct Precedence {
    /// Some records come from an array.
    array_records: bool,
    /// Some records come from an array, or some text is JSON.
    json_records: bool,
}

impl Precedence {
    pub(super) fn new(
        found: &Found,
        kinds: &[Option<TextKind<'_>>],
        shapes: &[Option<JsonShape<'_>>],
    ) -> Self {
        let array_texts = shapes
            .iter()
            .any(|s| matches!(s, Some(JsonShape::Array { .. })))
            || kinds.iter().any(|k| matches!(k, Some(TextKind::Jsonl)));
        let json_texts = kinds
            .iter()
            .any(|k| matches!(k, Some(TextKind::Json { .. } | TextKind::Copy { .. })));
        let array_records = !found.records.is_empty() || array_texts;
        Precedence {
            array_records,
            json_records: array_records || json_texts,
        }
    }

    /// Whether a text holding a single JSON value becomes a record.
    pub(super) fn takes_value(&self, text: &str, is_large: impl Fn(&str) -> bool) -> bool {
        !self.array_records || is_large(text)
    }

    /// Whether a plain text block becomes line records.
    pub(super) fn takes_plain(&self, text: &str, is_large: impl Fn(&str) -> bool) -> bool {
        !self.json_records || is_large(text)
    }
}

/// The layout shared by the lines of a JSON lines text, learnt line by line.
#[derive(Default)]
pub(super) struct LineStyle {
    /// The style of the first line, when it has one.
    pub(super) style: Option<Style>,
    /// Every line so far is laid out in `style`.
    pub(super) uniform: bool,
    /// Lines seen.
    pub(super) count: usize,
    /// Their bytes.
    pub(super) bytes: usize,
}

impl LineStyle {
    /// Notes `line`, whose minified form is `minified`.
    pub(super) fn note(&mut self, line: &str, minified: &str) {
        if self.count == 0 {
            self.style = Style::detect(line, minified);
            self.uniform = self.style.is_some();
        } else if self.uniform {
            self.uniform = self.style.is_some_and(|s| s.lays_out(line, minified));
        }
        self.count += 1;
        self.bytes += line.len();
    }
}
