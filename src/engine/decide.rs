//! Step 1: inline or offload. The cheap checks first (policy, byte length),
//! then the parse and the token estimate.

use super::ahead::Ahead;
use super::events::PassReason;
use super::records::{self, Prepared};
use crate::beside::beside;
use crate::config::EffectivePolicy;
use crate::estimate::TokenEstimator;
use crate::json::Style;
use crate::wire::mcp::{Input, RawResult, ResultError};

/// What step 1 decided.
pub(super) enum Decision<'a> {
    /// Keep the original bytes.
    Inline(PassReason),
    /// Over the threshold: the parsed result, its estimated tokens, and the
    /// records of its `structuredContent` when they were taken already,
    /// with their statistics and digest begun (see [`tell_layouts`]).
    Offload(
        RawResult<'a>,
        Tokens<'a>,
        Option<Box<(Prepared<'a>, Ahead)>>,
    ),
}

/// The estimated tokens of a result offloaded: known, or left to count
/// beside later work ([`Tokens::count`]) when the offload was certain
/// without them (its `structuredContent` alone is over the threshold) and
/// a text lays it out (its tokens are those of the structured content
/// laid out: a walk over as many bytes).
pub(super) enum Tokens<'a> {
    Known(usize),
    Later(Estimate<'a>),
}

impl Tokens<'_> {
    /// The estimated tokens.
    pub(super) fn count(self, estimator: &dyn TokenEstimator) -> usize {
        match self {
            Tokens::Known(n) => n,
            Tokens::Later(estimate) => estimate.tokens(estimator),
        }
    }
}

/// What a result's estimate is made of (see [`content_tokens`]).
pub(super) struct Estimate<'a> {
    structured: Option<&'a str>,
    structured_tokens: usize,
    /// Tokens of the text blocks told as text.
    texts: usize,
    /// The layouts of the text blocks that lay out `structuredContent`
    /// (its style and added whitespace).
    layouts: Vec<(Style, usize)>,
    /// The tokens of those layouts, when counted already (beside taking
    /// the records, see [`tell_layouts`]).
    laid: Option<usize>,
}

impl<'a> Estimate<'a> {
    fn of(
        estimator: &dyn TokenEstimator,
        parsed: &RawResult<'a>,
        structured_tokens: usize,
        laid: Option<usize>,
    ) -> Self {
        let structured = parsed.structured().map(|s| s.get());
        let texts = parsed
            .blocks
            .iter()
            .filter_map(|b| b.text.as_deref())
            .map(|t| estimator.estimate(t))
            .sum();
        let layouts = match structured {
            Some(_) => parsed.blocks.iter().filter_map(|b| b.laid_out).collect(),
            None => Vec::new(),
        };
        Estimate {
            structured,
            structured_tokens,
            texts,
            layouts,
            laid,
        }
    }

    /// The text blocks' tokens (a layout's counted from the structured
    /// content, or from the layout built when the estimator cannot), or
    /// those of `structuredContent`, whichever is larger.
    fn tokens(&self, estimator: &dyn TokenEstimator) -> usize {
        let laid = match (self.laid, self.structured) {
            (Some(laid), _) => laid,
            (None, Some(s)) => laid_tokens(estimator, s, self.layouts.iter().copied()),
            (None, None) => 0,
        };
        (self.texts + laid).max(self.structured_tokens)
    }
}

/// The tokens of `structured` laid out in each of `layouts` (counted from
/// it, or from the layout built when the estimator cannot).
fn laid_tokens(
    estimator: &dyn TokenEstimator,
    structured: &str,
    layouts: impl Iterator<Item = (Style, usize)>,
) -> usize {
    layouts
        .map(|(style, spaces)| {
            estimator
                .estimate_spaced(structured, spaces)
                .unwrap_or_else(|| estimator.estimate(&style.apply(structured)))
        })
        .sum()
}

/// Whether `result` is offloaded under `policy`, and when it is, the result
/// parsed. `enabled` is the global switch (it names the reason a tool is
/// not offloaded); `input` says whether serde validated `result` already.
pub(super) fn decide<'a>(
    estimator: &dyn TokenEstimator,
    policy: &EffectivePolicy,
    enabled: bool,
    result: &'a [u8],
    input: Input<'a>,
) -> Result<Decision<'a>, ResultError> {
    if !policy.enabled {
        let reason = if enabled {
            PassReason::Excluded
        } else {
            PassReason::Disabled
        };
        return Ok(Decision::Inline(reason));
    }
    if surely_under(estimator, policy, result.len()) {
        return Ok(Decision::Inline(PassReason::UnderThreshold {
            estimated_tokens: estimator.max_tokens_for_bytes(result.len()),
        }));
    }
    let text = match input {
        Input::Validated(text, _) => text,
        Input::Unchecked => std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?,
    };
    let mut parsed = RawResult::parse_untold(text, input)?;
    if !policy.offload_errors && parsed.top.get("isError").is_some_and(|v| v.get() == "true") {
        return Ok(Decision::Inline(PassReason::IsError));
    }
    let structured = structured_tokens(estimator, &parsed);
    let certain = structured > policy.threshold_tokens;
    let (prepared, laid) = tell_layouts(estimator, &mut parsed, certain)?;
    let estimate = Estimate::of(estimator, &parsed, structured, laid);
    if certain {
        return Ok(Decision::Offload(parsed, Tokens::Later(estimate), prepared));
    }
    let estimated_tokens = estimate.tokens(estimator);
    let over_bytes = policy
        .max_tool_output_bytes
        .is_some_and(|b| content_bytes(&parsed) >= b);
    if estimated_tokens <= policy.threshold_tokens && !over_bytes {
        return Ok(Decision::Inline(PassReason::UnderThreshold {
            estimated_tokens,
        }));
    }
    let tokens = Tokens::Known(estimated_tokens);
    Ok(Decision::Offload(parsed, tokens, prepared))
}

/// Bytes of texts to tell from which they are told beside taking the
/// records (under it, one after the other on this thread). Measured with
/// `Offloader::process` on full memories, medians of 500 runs, two rounds:
/// a copy of 150 KiB took 2-9 % longer on two threads than on one, 251 KiB
/// 3-15 % less, 503 KiB 13-21 % less.
const TELL_BESIDE_FROM: usize = 192 << 10;

/// Tells whether the large texts of `parsed` lay out its
/// `structuredContent` (a copy, whose tokens are those of the structured
/// content laid out). When the result is offloaded whatever they hold
/// (`certain`: the structured content alone is over the threshold) and they
/// are large, that runs at once with taking the records of the structured
/// content ([`records::prepare`], see [`beside`]): two walks over as many
/// bytes at once, given to the split. The records' statistics and digest
/// are begun as soon as they are taken (see [`Ahead`]), and the tokens of
/// the layouts are counted by the thread that told them.
fn tell_layouts<'a>(
    estimator: &dyn TokenEstimator,
    parsed: &mut RawResult<'a>,
    certain: bool,
) -> Result<Taken<'a>, ResultError> {
    if !parsed.has_untold() {
        return Ok((None, None));
    }
    if !certain || parsed.untold_bytes() < TELL_BESIDE_FROM {
        let told = parsed.tell_layouts();
        parsed.settle_layouts(told)?;
        return Ok((None, None));
    }
    let shared: &RawResult<'a> = parsed;
    let (taken, (told, laid)) = beside(
        || {
            let told = shared.tell_layouts();
            // The layouts the result will hold: those told before, and these.
            let before = shared.blocks.iter().filter(|b| !b.untold);
            let layouts = before
                .filter_map(|b| b.laid_out)
                .chain(told.iter().flatten().copied());
            let structured = shared.structured().map(|s| s.get());
            let laid = structured.map(|s| laid_tokens(estimator, s, layouts));
            (told, laid)
        },
        || {
            let prepared = records::prepare(shared);
            let ahead = Ahead::of(prepared.records());
            (prepared, ahead)
        },
    );
    parsed.settle_layouts(told)?;
    Ok((Some(Box::new(taken)), laid))
}

/// What [`tell_layouts`] took ahead: the records of `structuredContent`
/// with their statistics and digest begun, and the layouts' tokens.
type Taken<'a> = (Option<Box<(Prepared<'a>, Ahead)>>, Option<usize>);

/// Whether `len` bytes are sure to stay inline, without looking at them.
pub(super) fn surely_under(
    estimator: &dyn TokenEstimator,
    policy: &EffectivePolicy,
    len: usize,
) -> bool {
    estimator.max_tokens_for_bytes(len) <= policy.threshold_tokens
        && policy.max_tool_output_bytes.is_none_or(|b| len < b)
}

/// Estimated tokens of what a model would read: the text blocks, or
/// `structuredContent`, whichever is larger. A text that lays out
/// `structuredContent` is estimated from it (or from its layout, built,
/// when the estimator cannot tell from it).
pub(super) fn content_tokens(estimator: &dyn TokenEstimator, parsed: &RawResult<'_>) -> usize {
    Estimate::of(
        estimator,
        parsed,
        structured_tokens(estimator, parsed),
        None,
    )
    .tokens(estimator)
}

/// Estimated tokens of `structuredContent` (0: none).
fn structured_tokens(estimator: &dyn TokenEstimator, parsed: &RawResult<'_>) -> usize {
    parsed
        .structured()
        .map_or(0, |s| estimator.estimate(s.get()))
}

/// UTF-8 bytes of the content a model would read: the text blocks, or
/// `structuredContent`, whichever is larger (the byte trigger's measure).
fn content_bytes(parsed: &RawResult<'_>) -> usize {
    let structured = parsed.structured().map_or(0, |s| s.get().len());
    let text: usize = parsed
        .blocks
        .iter()
        .map(|b| match (&b.text, b.laid_out) {
            (Some(t), _) => t.len(),
            (None, Some((_, spaces))) => structured + spaces,
            _ => 0,
        })
        .sum();
    text.max(structured)
}
