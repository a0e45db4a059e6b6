//! Step 1: inline or offload. The cheap checks first (policy, byte length),
//! then the parse and the token estimate.

use super::events::PassReason;
use crate::config::EffectivePolicy;
use crate::estimate::TokenEstimator;
use crate::json::Style;
use crate::wire::mcp::{Input, RawResult, ResultError};

/// What step 1 decided.
pub(super) enum Decision<'a> {
    /// Keep the original bytes.
    Inline(PassReason),
    /// Over the threshold: the parsed result and its estimated tokens.
    Offload(RawResult<'a>, usize),
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
    if let Some(reason) = switched_off(policy, enabled) {
        return Ok(Decision::Inline(reason));
    }
    if under_threshold_by_size(estimator, policy, result.len()) {
        return Ok(Decision::Inline(PassReason::UnderThreshold {
            estimated_tokens: estimator.max_tokens_for_bytes(result.len()),
        }));
    }
    let text = match input {
        Input::Validated(text, _) => text,
        Input::Unchecked => std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?,
    };
    let parsed = RawResult::parse_input(text, input)?;
    if !policy.offload_errors && parsed.top.get("isError").is_some_and(|v| v.get() == "true") {
        return Ok(Decision::Inline(PassReason::IsError));
    }
    let estimated_tokens = content_tokens(estimator, &parsed);
    if let Some(reason) = under(policy, estimated_tokens, content_bytes(&parsed) as u64) {
        return Ok(Decision::Inline(reason));
    }
    Ok(Decision::Offload(parsed, estimated_tokens))
}

/// Why no result of this tool is offloaded, when none is: excluded by
/// the policy, or offloading is off (`enabled`, the global switch).
pub(super) fn switched_off(policy: &EffectivePolicy, enabled: bool) -> Option<PassReason> {
    match (policy.enabled, enabled) {
        (true, _) => None,
        (false, true) => Some(PassReason::Excluded),
        (false, false) => Some(PassReason::Disabled),
    }
}

/// Why a result of `estimated_tokens` and `content_bytes` (what a model
/// would read) stays inline, when it does: under the token threshold and
/// under the byte trigger, when there is one.
pub(super) fn under(
    policy: &EffectivePolicy,
    estimated_tokens: usize,
    content_bytes: u64,
) -> Option<PassReason> {
    let over_bytes = policy
        .max_tool_output_bytes
        .is_some_and(|b| content_bytes >= b as u64);
    (estimated_tokens <= policy.threshold_tokens && !over_bytes)
        .then_some(PassReason::UnderThreshold { estimated_tokens })
}

/// Whether `len` bytes are sure to stay inline, without looking at them.
pub(super) fn under_threshold_by_size(
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
    let texts: usize = parsed
        .blocks
        .iter()
        .filter_map(|b| b.text.as_deref())
        .map(|t| estimator.estimate(t))
        .sum();
    let (laid, structured) = match parsed.structured() {
        Some(structured) => {
            let layouts = parsed.blocks.iter().filter_map(|b| b.laid_out);
            let laid = laid_tokens(estimator, structured.get(), layouts);
            (laid, estimator.estimate(structured.get()))
        }
        None => (0, 0),
    };
    (texts + laid).max(structured)
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
