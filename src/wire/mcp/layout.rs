//! Whether a text block lays out `structuredContent` (the copy the MCP
//! SDKs send beside it), detected from the escaped text without decoding it.

use super::{LAID_OUT_FROM, RawObject};
use crate::json::Style;
#[cfg(debug_assertions)]
use crate::json::decode_string;

/// Whether a text block's text may lay out `structuredContent`: a large text that
/// opens as JSON (a copy is seldom smaller).
fn may_lay_out(fields: &RawObject<'_>) -> bool {
    fields.get("text").is_some_and(|t| {
        let raw = t.get();
        raw.len() >= LAID_OUT_FROM && (raw.starts_with("\"{") || raw.starts_with("\"["))
    })
}

/// The style in which a text block's text lays out `structured`, detected from
/// the escaped text, and the whitespace bytes it adds; only for a text that
/// [may](may_lay_out). Debug builds check it against the decoded text.
pub(super) fn laid_out(fields: &RawObject<'_>, structured: &str) -> Option<(Style, usize)> {
    let raw = fields.get("text")?.get();
    if !may_lay_out(fields) {
        return None;
    }
    let found = Style::detect_escaped(&raw[1..raw.len() - 1], structured);
    #[cfg(debug_assertions)]
    if let Some((style, spaces)) = found {
        let text = decode_string(raw).expect("a JSON string");
        assert_eq!(text, style.apply(structured), "not the layout");
        assert_eq!(text.len(), structured.len() + spaces);
    }
    found
}
