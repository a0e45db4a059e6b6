//! The spec's write-failure fallback: the result inline, cut on record
//! boundaries to fit the threshold, with a warning first.
//!
//! The warning is what the client (and the model) reads: it says that
//! offloading failed and how much is kept, never why (the store's error
//! names server paths and OS errors; those go to the `OffloadWriteFailed`
//! event and the log).

use super::decide::content_tokens;
use super::outcome::{Outcome, Truncated};
use super::records::{self, Rebuild, RecordsView};
use crate::estimate::TokenEstimator;
use crate::store::StoreError;
use crate::wire::mcp::{BlockOut, RawResult};

/// The spec's write-failure fallback: inline, cut on record boundaries
/// to fit the threshold, with a warning first.
///
/// `records` may be the first of `total` (a spilled result's sample).
///
/// Bounded by the threshold, not by the records: only the records that
/// fit are looked at (each costs at least one token) and kept.
pub(super) fn truncate(
    estimator: &dyn TokenEstimator,
    parsed: &RawResult<'_>,
    rebuild: Option<&Rebuild>,
    (records, total): (RecordsView<'_>, usize),
    error: StoreError,
    estimated_tokens: usize,
    threshold: usize,
) -> Outcome {
    // A plain sentence: the store's error names server paths and OS
    // errors, which go to the `OffloadWriteFailed` event and the log only.
    let make_warning = |kept: usize| client_warning(kept, total, threshold);
    // Tokens of what stays besides the records (other blocks, fields, the warning).
    let overhead = estimator.estimate(&make_warning(total))
        + rebuild.map_or(0, |r| estimator.estimate(r.result.get()));
    let budget = threshold.saturating_sub(overhead);
    let mut used = 0usize;
    let mut fitting: Vec<&str> = Vec::new();
    for rec in records.iter() {
        let cost = estimator.estimate(rec) + 1;
        if used + cost > budget {
            break;
        }
        used += cost;
        fitting.push(rec);
    }
    let mut kept = fitting.len();
    // Records were costed minified; the text may be laid out more
    // loosely, so check the real estimate and shrink until it fits.
    let mut result = String::new();
    for _ in 0..24 {
        let warning = make_warning(kept);
        result = truncated_result(parsed, rebuild, &fitting[..kept], &warning);
        let tokens = RawResult::parse(&result).map_or(0, |r| content_tokens(estimator, &r));
        if tokens <= threshold || kept == 0 {
            break;
        }
        let scaled = kept * threshold / tokens.max(1);
        kept = scaled.min(kept - 1);
    }
    Outcome::Truncated(Box::new(Truncated {
        result,
        error,
        kept,
        total,
        estimated_tokens,
    }))
}

fn truncated_result(
    parsed: &RawResult<'_>,
    rebuild: Option<&Rebuild>,
    records: &[&str],
    warning: &str,
) -> String {
    let body = rebuild
        .and_then(|r| {
            let kept = Some(records::KeptSource::Original(parsed));
            records::assemble(r, records, false, kept).ok()
        })
        .unwrap_or_default();
    match RawResult::parse(&body) {
        Ok(truncated) => {
            let mut blocks = vec![BlockOut::NewText(warning)];
            blocks.extend((0..truncated.blocks.len()).map(BlockOut::Original));
            truncated.write(&blocks, None)
        }
        Err(_) => parsed.write(&[BlockOut::NewText(warning)], None),
    }
}

/// The warning the client reads: no path, no OS error.
pub(crate) fn client_warning(kept: usize, total: usize, threshold: usize) -> String {
    format!(
        "Warning: large result offloading (LRO) failed: the full result could not be saved \
         to a file, so the result below is truncated to {kept} of {total} records to fit \
         {threshold} tokens."
    )
}
