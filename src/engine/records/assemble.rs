//! From rebuild info and records back to a result: each segment's value laid
//! out again from its records, put in its block or in `structuredContent`,
//! then written into the envelope.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::Style;
use crate::wire::mcp::{BlockOut, MAX_CONTENT_BLOCKS, RawObject, RawResult};

use super::marker::{STRUCTURED_MARKER, without_marker};
use super::shape::{JsonShape, json_shape, minified};
use super::{FromResult, Rebuild, RebuildError, Segment, Shape, StructuredCopy, with_field};

/// Where the parts a header leaves out ([`FromResult`]) are found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeptSource<'r, 'a> {
    /// The original result (the write-failure fallback still has it).
    Original(&'r RawResult<'a>),
    /// The rewritten result the client got.
    Rewritten(&'r RawResult<'a>),
}

impl KeptSource<'_, '_> {
    /// Original block `i`, the `rank`-th of the kept blocks, as JSON.
    fn block(&self, i: usize, rank: usize, inserted: usize) -> Option<String> {
        let (result, at) = match *self {
            KeptSource::Original(r) => (r, i),
            KeptSource::Rewritten(r) => (r, inserted.checked_add(rank)?),
        };
        (at < result.blocks.len()).then(|| result.block_json(at))
    }

    /// A top-level field, raw.
    fn field(&self, key: &str) -> Option<&str> {
        let (KeptSource::Original(r) | KeptSource::Rewritten(r)) = *self;
        r.top.get(key).map(|v| v.get())
    }

    /// The text around `structuredContent`'s record array, cut at `at` in
    /// the rewritten result.
    fn around(&self, at: usize) -> Option<(String, String)> {
        match *self {
            KeptSource::Rewritten(r) => {
                let slim = minified(r.structured()?.get()).into_owned();
                let slim = without_marker(&slim, STRUCTURED_MARKER).unwrap_or(slim);
                (slim.get(at..at + 2) == Some("[]")).then(|| {
                    let after = slim.get(at + 2..).unwrap_or_default().to_owned();
                    (slim.get(..at).unwrap_or_default().to_owned(), after)
                })
            }
            KeptSource::Original(r) => match json_shape(&minified(r.structured()?.get())) {
                JsonShape::Array { before, after, .. } => Some((before.into(), after.into())),
                JsonShape::Single => None,
            },
        }
    }
}

/// Puts a result back together from its rebuild info and (some of) its
/// records. With `exact == false` (records dropped) text that was kept
/// verbatim is re-laid out from the remaining records instead. What the
/// header leaves out is taken from `source`; without one, such a header
/// is refused.
pub(crate) fn assemble(
    rebuild: &Rebuild,
    records: &[&str],
    exact: bool,
    source: Option<KeptSource<'_, '_>>,
) -> Result<String, RebuildError> {
    let segments = super::expand_segments(&rebuild.segments, MAX_CONTENT_BLOCKS + 1)?;
    let base = expand_repeats(rebuild)?;
    let resolved = match &rebuild.from_result {
        None => base,
        Some(from) => {
            let source = source.ok_or(RebuildError::NeedsRewrittenResult)?;
            Cow::Owned(resolve(&base, &segments, from, source)?)
        }
    };
    let around = match (&rebuild.from_result, source) {
        (
            Some(FromResult {
                around: Some((at, segs)),
                ..
            }),
            Some(source),
        ) => {
            let parts = source
                .around(*at)
                .ok_or_else(|| corrupt("structuredContent"))?;
            Some((parts, segs.as_slice()))
        }
        _ => None,
    };
    let envelope =
        RawResult::parse_envelope(&resolved).map_err(|e| RebuildError::Corrupt(e.to_string()))?;
    let mut values = Values::new(envelope.blocks.len());
    for (n, seg) in segments.iter().enumerate() {
        let recs = segment_records(seg, records, exact)?;
        let parts = around
            .as_ref()
            .filter(|(_, segs)| segs.contains(&n))
            .map(|((b, a), _)| (b.as_str(), a.as_str()));
        let value = lay_out(&seg.shape, recs, exact, parts)?;
        values.put(seg, value, !exact && recs.is_empty())?;
    }
    if let Some(copy) = &rebuild.structured_copy {
        values.structured = Some(structured_with_copy(&envelope, &values.texts, copy)?);
    }
    values.write(&envelope)
}

fn corrupt(what: &str) -> RebuildError {
    RebuildError::Corrupt(what.to_owned())
}

/// The records of one segment: all of them when `exact` (one missing is
/// corruption), else those that are left after truncation.
fn segment_records<'r, 's>(
    seg: &Segment,
    records: &'r [&'s str],
    exact: bool,
) -> Result<&'r [&'s str], RebuildError> {
    let end = seg
        .start
        .checked_add(seg.count)
        .ok_or_else(|| corrupt("segment range"))?;
    if exact {
        records
            .get(seg.start..end)
            .ok_or_else(|| corrupt("segment out of range"))
    } else {
        Ok(records
            .get(seg.start.min(records.len())..end.min(records.len()))
            .unwrap_or_default())
    }
}

/// The header's envelope with its runs of equal blocks written out.
fn expand_repeats(rebuild: &Rebuild) -> Result<Cow<'_, str>, RebuildError> {
    let stored = rebuild.result.get();
    if rebuild.repeats.is_empty() {
        return Ok(Cow::Borrowed(stored));
    }
    let envelope =
        RawResult::parse_envelope(stored).map_err(|e| RebuildError::Corrupt(e.to_string()))?;
    let mut extra = vec![0usize; envelope.blocks.len()];
    let mut total = envelope.blocks.len();
    for &(at, n) in &rebuild.repeats {
        let slot = extra.get_mut(at).ok_or_else(|| corrupt("repeat"))?;
        *slot = slot.saturating_add(n);
        total = total.saturating_add(n);
    }
    if total > MAX_CONTENT_BLOCKS {
        return Err(corrupt("too many repeated blocks"));
    }
    let blocks: Vec<BlockOut<'_>> = extra
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| std::iter::repeat_n(BlockOut::Original(i), n + 1))
        .collect();
    Ok(Cow::Owned(envelope.write(&blocks, None)))
}

/// The envelope with what the header left out put back from `source`.
fn resolve(
    base: &str,
    segments: &[Segment],
    from: &FromResult,
    source: KeptSource<'_, '_>,
) -> Result<String, RebuildError> {
    let envelope =
        RawResult::parse_envelope(base).map_err(|e| RebuildError::Corrupt(e.to_string()))?;
    let count: usize = from.blocks.iter().map(|r| r.1).sum();
    let total = envelope.blocks.len().saturating_add(count);
    if total > MAX_CONTENT_BLOCKS {
        return Err(corrupt("too many blocks left out"));
    }
    let mut is_source = vec![false; total];
    for seg in segments {
        if let Some(slot) = seg.block.and_then(|b| is_source.get_mut(b)) {
            *slot = true;
        }
    }
    let left_out = from.left_out(total);
    // The kept blocks before the first source block come before the
    // inserted ones (descriptor, link) in the rewritten result.
    let lead = is_source.iter().position(|&s| s).unwrap_or(0);
    let (mut rank, mut next) = (0usize, 0usize);
    let mut taken: Vec<Result<String, usize>> = Vec::with_capacity(total);
    for (i, source_block) in is_source.iter().enumerate() {
        if left_out[i] {
            let inserted = if rank < lead { 0 } else { from.inserted };
            let block = source.block(i, rank, inserted);
            taken.push(Ok(block.ok_or_else(|| corrupt("kept block"))?));
        } else {
            taken.push(Err(next));
            next += 1;
        }
        rank += usize::from(!source_block);
    }
    let blocks: Vec<BlockOut<'_>> = taken
        .iter()
        .map(|t| match t {
            Ok(json) => BlockOut::Json(json),
            Err(e) => BlockOut::Original(*e),
        })
        .collect();
    let mut raws = Vec::with_capacity(from.fields.len());
    for key in &from.fields {
        raws.push(source.field(key).ok_or_else(|| corrupt("kept field"))?);
    }
    let fields: Vec<(&str, &str)> = from
        .fields
        .iter()
        .zip(&raws)
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    Ok(envelope.write_over(&blocks, None, &fields))
}

/// The value a segment's records came from, laid out as it was; with
/// records dropped (`!exact`), from the records that are left. `around`:
/// the text around the record array, when the header left it out.
fn lay_out(
    shape: &Shape,
    recs: &[&str],
    exact: bool,
    around: Option<(&str, &str)>,
) -> Result<String, RebuildError> {
    Ok(match shape {
        Shape::Json {
            before,
            after,
            format,
        } => {
            let (before, after) = around.unwrap_or((before, after));
            let minified = json_array(before, recs, after);
            match format {
                Some(f) => f.apply(&minified, exact),
                None => minified,
            }
        }
        Shape::Value { format } => {
            let m = recs.first().copied().unwrap_or("null");
            match format {
                Some(f) => f.apply(m, exact && recs.len() == 1),
                None => m.to_owned(),
            }
        }
        Shape::Jsonl {
            trailing_newline,
            verbatim,
            style,
        } => match (verbatim, exact) {
            (Some(v), true) => v.clone(),
            _ => json_lines(recs, *trailing_newline, *style),
        },
        Shape::Lines {
            trailing_newline,
            lines,
        } => super::lines::rebuild(recs, *trailing_newline, *lines, exact)?,
    })
}

/// `before + "[" + recs.join(",") + "]" + after`.
fn json_array(before: &str, recs: &[&str], after: &str) -> String {
    let mut m = String::with_capacity(
        before.len() + after.len() + 2 + recs.iter().map(|r| r.len() + 1).sum::<usize>(),
    );
    m.push_str(before);
    m.push('[');
    for (n, r) in recs.iter().enumerate() {
        if n > 0 {
            m.push(',');
        }
        m.push_str(r);
    }
    m.push(']');
    m.push_str(after);
    m
}

/// The records joined by `\n`, and a final `\n` when there was one (and
/// any record is left).
fn json_lines(recs: &[&str], trailing_newline: bool, style: Option<Style>) -> String {
    let mut s = match style {
        Some(style) => recs
            .iter()
            .map(|r| style.apply(r))
            .collect::<Vec<_>>()
            .join("\n"),
        None => recs.join("\n"),
    };
    if trailing_newline && !recs.is_empty() {
        s.push('\n');
    }
    s
}

/// `structuredContent` with its copy field set to the rebuilt text of the
/// block it copies.
fn structured_with_copy(
    envelope: &RawResult<'_>,
    texts: &[Option<String>],
    copy: &StructuredCopy,
) -> Result<String, RebuildError> {
    let text = texts
        .get(copy.block)
        .and_then(Option::as_deref)
        .ok_or_else(|| corrupt("structured copy of a block without records"))?;
    let object: RawObject<'_> = envelope
        .structured()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .ok_or_else(|| corrupt("structuredContent is not an object"))?;
    let mut value = String::with_capacity(text.len() + 2);
    crate::json::push_json_string(&mut value, text);
    Ok(with_field(&object, &copy.key, &value))
}

/// The values put back so far.
struct Values {
    /// Each block's rebuilt text; `None`: the block was no record source.
    texts: Vec<Option<String>>,
    /// Blocks left out of the result.
    dropped: Vec<bool>,
    /// The rebuilt `structuredContent`, when it changes.
    structured: Option<String>,
}

impl Values {
    fn new(blocks: usize) -> Values {
        Values {
            texts: vec![None; blocks],
            dropped: vec![false; blocks],
            structured: None,
        }
    }

    /// Puts a segment's value in its place; `emptied`: truncation left the
    /// segment no record.
    fn put(&mut self, seg: &Segment, value: String, emptied: bool) -> Result<(), RebuildError> {
        match seg.block {
            None => self.structured = Some(value),
            Some(i) => {
                let slot = self
                    .texts
                    .get_mut(i)
                    .ok_or_else(|| corrupt("block index"))?;
                *slot = Some(value);
                // Truncated: a block that copied one dropped record goes too.
                self.dropped[i] = emptied && matches!(seg.shape, Shape::Value { .. });
            }
        }
        Ok(())
    }

    /// The envelope with the values in place; a `structuredContent` that is
    /// not JSON means the records were corrupt.
    fn write(&self, envelope: &RawResult<'_>) -> Result<String, RebuildError> {
        let blocks: Vec<BlockOut<'_>> = self
            .texts
            .iter()
            .enumerate()
            .filter(|&(i, _)| !self.dropped[i])
            .map(|(i, t)| match t {
                Some(t) => BlockOut::WithText(i, Some(t.as_str())),
                None => BlockOut::Original(i),
            })
            .collect();
        if let Some(s) = &self.structured
            && serde_json::from_str::<&RawValue>(s).is_err()
        {
            return Err(corrupt("structuredContent records are not valid JSON"));
        }
        Ok(envelope.write(&blocks, self.structured.as_deref()))
    }
}
