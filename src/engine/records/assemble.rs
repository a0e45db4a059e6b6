//! From rebuild info and records back to a result: each segment's value laid
//! out again from its records, put in its block or in `structuredContent`,
//! then written into the envelope.

use serde_json::value::RawValue;

use crate::wire::mcp::{BlockOut, RawObject, RawResult};

use super::{Rebuild, RebuildError, Segment, Shape, StructuredCopy, with_field};

/// Puts a result back together from its rebuild info and (some of) its
/// records. With `exact == false` (records dropped) text that was kept
/// verbatim is re-laid out from the remaining records instead.
pub(crate) fn assemble(
    rebuild: &Rebuild,
    records: &[&str],
    exact: bool,
) -> Result<String, RebuildError> {
    let envelope = RawResult::parse_envelope(rebuild.result.get())
        .map_err(|e| RebuildError::Corrupt(e.to_string()))?;
    let mut values = Values::new(envelope.blocks.len());
    for seg in &rebuild.segments {
        let recs = segment_records(seg, records, exact)?;
        let value = lay_out(&seg.shape, recs, exact)?;
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

/// The value a segment's records came from, laid out as it was; with
/// records dropped (`!exact`), from the records that are left.
fn lay_out(shape: &Shape, recs: &[&str], exact: bool) -> Result<String, RebuildError> {
    Ok(match shape {
        Shape::Json {
            before,
            after,
            format,
        } => {
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
        } => match (verbatim, exact) {
            (Some(v), true) => v.clone(),
            _ => json_lines(recs, *trailing_newline),
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
fn json_lines(recs: &[&str], trailing_newline: bool) -> String {
    let mut s = recs.join("\n");
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
