//! Where the records sit in one value: the record array of a JSON text or
//! of `structuredContent`, and what a text block holds (JSON, a copy of
//! `structuredContent`, JSON lines, plain text).

use serde_json::value::RawValue;

use crate::json::{Outline, minifies_to, minify, minify_outline, range_in, trim_parts};
use crate::wire::mcp::RawObject;

/// The shape of one JSON text or structured value.
pub(super) enum JsonShape<'a> {
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
pub(super) fn json_shape_outlined<'m>(minified: &'m str, outline: &Outline) -> JsonShape<'m> {
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
pub(super) enum TextKind {
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

pub(super) fn classify_text(text: &str, structured_minified: Option<&str>) -> TextKind {
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
