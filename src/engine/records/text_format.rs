//! How a JSON text block was laid out around its minified form, so that
//! its records rebuild it byte for byte.

use serde::{Deserialize, Serialize};

use super::*;

/// How a JSON text block was laid out around its minified form, in the
/// first of these ways that fits: a known [`Style`]; a [`Layout`] table
/// (the whitespace of each kind of gap, and the few gaps that differ); the
/// text itself when it is short.
/// The header's share of them is bounded by [`LAYOUT_BUDGET`]. A text laid
/// out in none of these ways (whitespace that differs from gap to gap, in a
/// text of more than a few KB) is rebuilt compact, between its original
/// leading and trailing whitespace: equal as JSON, not byte for byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TextFormat {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    lead: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    trail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    style: Option<Style>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layout: Option<layout::Layout>,
    /// The original text, kept when no known style or layout table
    /// reproduces it and it is short. During an extraction `Some("")`
    /// stands for it: the block's text is moved in at the end
    /// ([`Segment::keep_verbatim`]), never copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) verbatim: Option<String>,
}

impl TextFormat {
    /// The layout of a text too large to hold, learnt as it streamed by:
    /// its leading and trailing whitespace, and the style of the JSON
    /// between (`None`: no known style; it is rebuilt compact, equal as
    /// JSON, not byte for byte, as for any large text no known layout
    /// reproduces).
    pub(crate) fn streamed(lead: &str, trail: &str, style: Option<Style>) -> TextFormat {
        TextFormat {
            lead: lead.to_owned(),
            trail: trail.to_owned(),
            style,
            layout: None,
            verbatim: None,
        }
    }

    /// How `text` lays out `minified`; `budget` is what is left of
    /// [`LAYOUT_BUDGET`], and what this text takes of it is taken off.
    pub(super) fn detect(text: &str, minified: &str, budget: &mut usize) -> TextFormat {
        let (_, core, _) = trim_parts(text);
        Self::detect_known(text, Style::detect(core, minified), budget)
    }

    /// [`detect`](Self::detect) when the style of the text is known already
    /// (`style` is `Style::detect` of its core).
    pub(super) fn detect_known(text: &str, style: Option<Style>, budget: &mut usize) -> TextFormat {
        let (mut lead, core, mut trail) = trim_parts(text);
        // Whitespace around the JSON: kept while it fits.
        if lead.len() + trail.len() > *budget {
            (lead, trail) = ("", "");
        }
        *budget -= lead.len() + trail.len();
        let mut format = TextFormat {
            lead: lead.to_owned(),
            trail: trail.to_owned(),
            style,
            layout: None,
            verbatim: None,
        };
        if format.style.is_some() {
            return format;
        }
        format.layout = layout::learn(core, *budget);
        if let Some(l) = &format.layout {
            *budget = budget.saturating_sub(l.bytes());
        } else if text.len() <= *budget {
            // The text itself is moved in at the end of the extraction.
            *budget -= text.len();
            format.verbatim = Some(String::new());
        }
        format
    }

    /// Lays out `minified`; `exact` is false when records were dropped, in
    /// which case a verbatim original cannot be used.
    pub(super) fn apply(&self, minified: &str, exact: bool) -> String {
        match (&self.verbatim, exact) {
            (Some(v), true) => v.clone(),
            _ => {
                let body = match &self.layout {
                    Some(layout) => layout.apply(minified, exact),
                    None => self.style.unwrap_or(Style::Compact).apply(minified),
                };
                let mut s = String::with_capacity(self.lead.len() + body.len() + self.trail.len());
                s.push_str(&self.lead);
                s.push_str(&body);
                s.push_str(&self.trail);
                s
            }
        }
    }
}
