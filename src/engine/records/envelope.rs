//! The envelope of a split result: the original with its record sources
//! nulled (what the header's rebuild layout keeps), the parts left to the
//! rewritten result when the header would grow past [`KEPT_BUDGET`], and
//! the `structuredContent` field that copies a text block.

use serde_json::value::RawValue;

use crate::wire::mcp::{BlockOut, RawObject, RawResult, ResultError};

use super::{FromResult, KEPT_BUDGET, Segment, Shape, StructuredCopy, with_field};

/// When `structuredContent` gave no records, the string field of it that
/// repeats the text of a source block (the Python SDK's `{"result":
/// "<text>"}`), and the object with that field emptied, for the envelope.
pub(super) fn structured_text_copy(
    result: &RawResult<'_>,
    is_source: &[bool],
    structured_source: bool,
) -> Option<(StructuredCopy, String)> {
    let raw = result.structured()?;
    if structured_source || !raw.get().trim_start().starts_with('{') {
        return None;
    }
    let object = serde_json::from_str::<RawObject<'_>>(raw.get()).ok()?;
    for (key, value) in &object {
        if !value.get().starts_with('"') {
            continue;
        }
        let Ok(field) = serde_json::from_str::<String>(value.get()) else {
            continue;
        };
        let copied = (0..result.blocks.len())
            .find(|&i| is_source[i] && result.blocks[i].text.as_deref() == Some(field.as_str()));
        if let Some(block) = copied {
            let copy = StructuredCopy {
                key: key.clone(),
                block,
            };
            return Some((copy, with_field(&object, key, "\"\"")));
        }
    }
    None
}

/// Which kept parts the header leaves to the rewritten result: kept blocks
/// and top-level fields (`structuredContent` when `structured_kept`, it
/// stays as it is) past [`KEPT_BUDGET`] bytes, in order, and the text
/// around `structuredContent`'s record array when it does not fit either
/// (its segments then hold none).
pub(super) fn leave_to_result(
    result: &RawResult<'_>,
    is_source: &[bool],
    segments: &mut [Segment],
    structured_kept: bool,
    inserted: usize,
) -> FromResult {
    let mut left = KEPT_BUDGET;
    let mut fits = |bytes: usize| match left.checked_sub(bytes) {
        Some(rest) => {
            left = rest;
            true
        }
        None => false,
    };
    let mut from = FromResult {
        inserted,
        ..FromResult::default()
    };
    for i in (0..result.blocks.len()).filter(|&i| !is_source[i]) {
        if !fits(result.block_bytes(i)) {
            match from.blocks.last_mut() {
                Some((start, n)) if *start + *n == i => *n += 1,
                _ => from.blocks.push((i, 1)),
            }
        }
    }
    for (key, value) in &result.top {
        let stays = key != "content" && (key != "structuredContent" || structured_kept);
        if stays && !fits(value.get().len()) {
            from.fields.push(key.clone());
        }
    }
    leave_around(segments, &mut fits, &mut from);
    from
}

impl FromResult {
    /// Whether the header leaves anything to the rewritten result.
    pub(super) fn refers(&self) -> bool {
        !self.blocks.is_empty() || !self.fields.is_empty() || self.around.is_some()
    }
}

/// Leaves the text around the structured record array to the rewritten
/// result when it does not fit: from every segment that repeats it.
fn leave_around(
    segments: &mut [Segment],
    fits: &mut impl FnMut(usize) -> bool,
    from: &mut FromResult,
) {
    let Some(Segment {
        block: None,
        shape: Shape::Json { before, after, .. },
        ..
    }) = segments.first()
    else {
        return;
    };
    if fits(before.len() + after.len()) {
        return;
    }
    let (before, after) = (before.clone(), after.clone());
    let mut segs = Vec::new();
    for (n, seg) in segments.iter_mut().enumerate() {
        if let Shape::Json {
            before: b,
            after: a,
            ..
        } = &mut seg.shape
            && *b == before
            && *a == after
        {
            b.clear();
            a.clear();
            segs.push(n);
        }
    }
    from.around = Some((before.len(), segs));
}

/// Runs of blocks, `(first, count)`.
type Runs = Vec<(usize, usize)>;

/// The original result with every source text block's `text` nulled and,
/// when `structured` is `Some`, that in place of `structuredContent`; the
/// parts left to the rewritten result out (blocks) or `null` (fields); a
/// source block equal to the one before it written once (the runs, as
/// [`Rebuild::repeats`]).
pub(crate) fn envelope(
    result: &RawResult<'_>,
    is_source: &[bool],
    structured: Option<&str>,
    from: &FromResult,
) -> Result<(Box<RawValue>, Runs), ResultError> {
    let left_out = from.left_out(result.blocks.len());
    let mut blocks: Vec<BlockOut<'_>> = Vec::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    // The last source block written, as JSON: an equal one after it is a repeat.
    let mut last: Option<String> = None;
    for i in (0..result.blocks.len()).filter(|&i| !left_out[i]) {
        if !is_source[i] {
            blocks.push(BlockOut::Original(i));
            last = None;
            continue;
        }
        let json = result.block_json_as(&BlockOut::WithText(i, None));
        if last.as_ref() == Some(&json) {
            match repeats.last_mut() {
                Some((at, n)) if *at + 1 == blocks.len() => *n += 1,
                _ => repeats.push((blocks.len() - 1, 1)),
            }
            continue;
        }
        blocks.push(BlockOut::WithText(i, None));
        last = Some(json);
    }
    let fields: Vec<(&str, &str)> = from.fields.iter().map(|k| (k.as_str(), "null")).collect();
    let json = result.write_over(&blocks, structured, &fields);
    Ok((
        RawValue::from_string(json).map_err(ResultError::NotJson)?,
        repeats,
    ))
}
