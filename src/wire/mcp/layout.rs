//! Texts that may lay out `structuredContent`: told from the escaped
//! text, left untold by [`RawResult::parse_untold`] for a caller that tells
//! them beside other work.

use super::{LAID_OUT_FROM, RawObject, RawResult, ResultError, block_text};
use crate::json::Style;
#[cfg(debug_assertions)]
use crate::json::decode_string;

impl RawResult<'_> {
    /// Whether some text may lay out `structuredContent`, not told yet.
    pub(crate) fn has_untold(&self) -> bool {
        self.blocks.iter().any(|b| b.untold)
    }

    /// Bytes of the texts not told yet (escaped).
    pub(crate) fn untold_bytes(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.untold)
            .map(|b| b.fields.get("text").map_or(0, |t| t.get().len()))
            .sum()
    }

    /// For each text not told yet, in block order, the style in which it
    /// lays out `structuredContent` and the whitespace bytes that adds
    /// (`None`: it does not). Reads only: it may run beside other readers.
    pub(crate) fn tell_layouts(&self) -> Vec<Option<(Style, usize)>> {
        let Some(structured) = self.structured() else {
            return Vec::new();
        };
        self.blocks
            .iter()
            .filter(|b| b.untold)
            .map(|b| laid_out(&b.fields, structured.get()))
            .collect()
    }

    /// Takes what [`tell_layouts`](Self::tell_layouts) told: a text that
    /// lays out `structuredContent` stays undecoded, any other is decoded.
    pub(crate) fn settle_layouts(
        &mut self,
        told: Vec<Option<(Style, usize)>>,
    ) -> Result<(), ResultError> {
        let mut told = told.into_iter();
        for block in self.blocks.iter_mut().filter(|b| b.untold) {
            block.untold = false;
            block.laid_out = told.next().flatten();
            if block.laid_out.is_none() {
                block.text = block_text(&block.fields, false)?;
            }
        }
        Ok(())
    }

    /// The result with its layouts told, on this thread.
    pub(super) fn settled(mut self) -> Result<Self, ResultError> {
        if self.has_untold() {
            let told = self.tell_layouts();
            self.settle_layouts(told)?;
        }
        Ok(self)
    }
}

/// Whether a text block's text may lay out `structuredContent`: a large text that
/// opens as JSON (a copy is seldom smaller).
pub(super) fn may_lay_out(fields: &RawObject<'_>) -> bool {
    fields.get("text").is_some_and(|t| {
        let raw = t.get();
        raw.len() >= LAID_OUT_FROM && (raw.starts_with("\"{") || raw.starts_with("\"["))
    })
}

/// The style in which a text block's text lays out `structured`, told from
/// the escaped text, and the whitespace bytes it adds; only for a text that
/// [may](may_lay_out). Debug builds check it against the decoded text.
fn laid_out(fields: &RawObject<'_>, structured: &str) -> Option<(Style, usize)> {
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
