//! A result too large to hold, offloaded from where it was spilled, in
//! bounded memory.
//!
//! The caller (the layer, `lro proxy`) spills a JSON-RPC response to a
//! private temporary file once it is over its buffer bound, and hands the
//! file to [`Offloader::process_spilled`](super::Offloader::process_spilled).
//! Here, in passes over that file that each hold a buffer, never the
//! result:
//!
//! 1. it is checked to be one JSON value (strings skipped, not kept);
//! 2. its outline is read (`message`): the members of the message and of
//!    its `result`, the content blocks, and the record sources (a text
//!    block's `text` or `structuredContent` of more than 64 KiB); all the
//!    rest is read into memory (at most 1 MiB, else the original is kept);
//! 3. each text source is decoded into a private temporary file (its
//!    tokens estimated on the way), and each source is split into records
//!    (`split`) written to a second private temporary file, folding the
//!    statistics, the completeness digest and a sample of the first
//!    records as they go (`sink`);
//! 4. the header, the recipes and the descriptor are made as for any
//!    result; the rebuild layout is the one of a streamed value (its
//!    style found as it streams by, `json::StyleCheck`; a text in no known
//!    style is rebuilt compact: equal as JSON), the small rest of the
//!    result is the envelope;
//! 5. the store writes the header and then the data file through
//!    [`Store::write_from`](crate::store::Store::write_from), streamed.
//!
//! Memory: a few buffers of 256 KiB, one record up to 1 MiB (for the
//! statistics), the sample (256 KiB) and the envelope (at most 1 MiB),
//! whatever the result's size and shape. A text block that copies
//! `structuredContent`'s records gives no records of its own (same count
//! and digest); a `structuredContent` member that copies a text block (the
//! SDKs' `{"result": text}`, compared byte for byte: `copy`) carries the
//! descriptor, as from memory.

mod copy;
mod message;
mod scan;
mod sink;
mod split;
mod walk;

use std::fs::File;
use std::io::{Read, Write};

use super::decide;
use super::events::PassReason;
use super::outcome::Outcome;
use super::pipeline::{self, Data, Parts, Split};
use super::records::{
    self, FromResult, Rebuild, RecordKind, RecordsView, Segment, Shape, StructuredCopy,
};
use super::rewrite;
use crate::wire::call::ToolCall;
use crate::wire::mcp::RawResult;
use message::{Outline, Source, find, outline};
use scan::{CHUNK, NotStreamable, check_json, decode_string};
use sink::Sink;
use split::{range, read_small};

/// What became of a spilled JSON-RPC response.
#[derive(Debug)]
#[non_exhaustive]
pub struct SpilledReply {
    /// The message's JSON-RPC `id` (`null` when it has none).
    pub id: serde_json::Value,
    /// What the engine decided. When it is not `Inline`, [`message`](Self::message)
    /// holds the response to send instead.
    pub outcome: Outcome,
    /// The whole JSON-RPC response to send in place of the spilled one
    /// (compact), when the result was offloaded or truncated.
    pub message: Option<String>,
}

/// Offloads the spilled JSON-RPC response in `spill` (`len` bytes).
pub(super) fn run(o: &Parts<'_>, call: &ToolCall, spill: &File, len: u64) -> SpilledReply {
    let mut reply = SpilledReply {
        id: serde_json::Value::Null,
        outcome: Outcome::Inline(PassReason::Unparseable(String::new())),
        message: None,
    };
    match offload(o, call, spill, len, &mut reply) {
        Ok(outcome) => reply.outcome = outcome,
        Err(Stop::Keep(reason)) => reply.outcome = Outcome::Inline(reason),
        Err(Stop::Not(NotStreamable(why))) => {
            reply.outcome = Outcome::Inline(PassReason::Unparseable(format!(
                "spilled result kept: {why}"
            )));
        }
    }
    if matches!(reply.outcome, Outcome::Inline(_)) {
        reply.message = None;
    }
    reply
}

/// Why a spilled result stays as it is.
enum Stop {
    Keep(PassReason),
    Not(NotStreamable),
}

impl From<NotStreamable> for Stop {
    fn from(e: NotStreamable) -> Self {
        Stop::Not(e)
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Not(e.into())
    }
}

/// A source decoded (a text) or in place (`structuredContent`).
struct Prepared {
    source: Source,
    /// The decoded text and its length.
    text: Option<(File, u64)>,
}

/// Steps 1 to 3a: checked, outlined, the texts decoded and the tokens
/// estimated; `Stop::Keep` when the result stays. (About 90 lines: the
/// checks in order, each a call.)
fn prepare(
    o: &Parts<'_>,
    call: &ToolCall,
    spill: &File,
    len: u64,
    reply: &mut SpilledReply,
) -> Result<(Outline, Vec<Prepared>, usize), Stop> {
    let policy = o
        .config
        .policy_for_client(&call.name, call.client.as_deref());
    if let Some(reason) = decide::switched_off(&policy, o.config.enabled) {
        return Err(Stop::Keep(reason));
    }
    if !check_json(range(spill, 0, len)?) {
        return Err(NotStreamable("not JSON").into());
    }
    let mut outline = outline(spill, len)?;
    message::one_response(spill, &outline.message)?;
    if let Some(id) = find(&outline.message, b"id") {
        reply.id = serde_json::from_str(&read_small(spill, id.start, id.len())?)
            .map_err(|_| NotStreamable("a bad id"))?;
    }
    if !policy.offload_errors
        && find(&outline.members, b"isError")
            .map(|s| read_small(spill, s.start, s.len().min(8)))
            .transpose()?
            .is_some_and(|v| v == "true")
    {
        return Err(Stop::Keep(PassReason::IsError));
    }
    // Decode the texts, estimating tokens on the way.
    let estimator = o.estimator;
    let small_tokens = small_text_tokens(estimator, spill, &outline)?;
    let (mut text_tokens, mut structured_tokens, mut content_bytes) = (0usize, 0usize, 0u64);
    let mut prepared = Vec::new();
    for source in std::mem::take(&mut outline.sources) {
        match source {
            Source::Structured(s) => {
                structured_tokens = estimate(estimator, range(spill, s.start, s.len())?)?;
                content_bytes = content_bytes.max(s.len());
                prepared.push(Prepared { source, text: None });
            }
            Source::Text { text, .. } => {
                let mut decoded = tempfile::tempfile()?;
                let mut w = std::io::BufWriter::with_capacity(CHUNK, &mut decoded);
                let n = decode_string(range(spill, text.start, text.len())?, &mut w)?;
                w.flush()?;
                drop(w);
                text_tokens += estimate(estimator, range(&decoded, 0, n)?)?;
                content_bytes += n;
                prepared.push(Prepared {
                    source,
                    text: Some((decoded, n)),
                });
            }
        }
    }
    let estimated_tokens = (text_tokens + small_tokens).max(structured_tokens);
    if prepared.is_empty() {
        return Err(Stop::Keep(PassReason::NoRecords));
    }
    if let Some(reason) = decide::under(&policy, estimated_tokens, content_bytes) {
        return Err(Stop::Keep(reason));
    }
    Ok((outline, prepared, estimated_tokens))
}

/// What splitting the sources gave.
struct SplitSources {
    data: sink::Finished,
    segments: Vec<Segment>,
    is_source: Vec<bool>,
    slim: Option<String>,
    kind: RecordKind,
}

/// Step 3b: every source split into the data file, in order (the
/// statistics folded beside when `parallel`).
fn split_sources(
    spill: &File,
    blocks: usize,
    prepared: &[Prepared],
    parallel: bool,
) -> Result<SplitSources, Stop> {
    // Split every source into the data file.
    let mut sink = Sink::new(tempfile::tempfile()?, parallel);
    let mut segments = Vec::new();
    let mut is_source = vec![false; blocks];
    let mut slim: Option<String> = None;
    let mut all_lines = true;
    // The structured records' segment and contract, to tell a text block
    // that copies them (memory servers send both).
    let mut structured: Option<(usize, usize, String)> = None;
    for p in prepared {
        let start = sink.count();
        let (block, shape) = match (&p.source, &p.text) {
            (Source::Structured(s), _) => {
                let shape = split::json_value(spill, s.start, s.len(), false, &mut sink)?;
                slim = Some(match &shape {
                    Shape::Json { before, after, .. } => format!("{before}[]{after}"),
                    _ => "null".to_owned(),
                });
                (None, shape)
            }
            (Source::Text { block, .. }, Some((text, n))) => {
                is_source[*block] = true;
                if let Some((start, count, sha)) = &structured {
                    let mut dry = Sink::dry();
                    let shape = split::text(text, *n, &mut dry)?;
                    let copy = dry.contract();
                    if copy.count == *count && copy.sha256 == *sha {
                        // The same records: the text repeats the segment.
                        segments.push(Segment {
                            block: Some(*block),
                            start: *start,
                            count: *count,
                            shape,
                            repeat: 0,
                        });
                        continue;
                    }
                }
                (Some(*block), split::text(text, *n, &mut sink)?)
            }
            (Source::Text { .. }, None) => continue,
        };
        all_lines &= matches!(shape, Shape::Lines { .. });
        if block.is_none() {
            let c = sink.contract();
            structured = Some((start, c.count, c.sha256));
        }
        segments.push(Segment {
            block,
            start,
            count: sink.count() - start,
            shape,
            repeat: 0,
        });
    }
    let data = sink.finish()?;
    let kind = if all_lines {
        RecordKind::Lines
    } else {
        RecordKind::Json
    };
    Ok(SplitSources {
        data,
        segments,
        is_source,
        slim,
        kind,
    })
}

/// The steps (see the module docs); the records once split go through the
/// same [`pipeline::finish`] as a result held in memory.
fn offload(
    o: &Parts<'_>,
    call: &ToolCall,
    spill: &File,
    len: u64,
    reply: &mut SpilledReply,
) -> Result<Outcome, Stop> {
    let policy = o
        .config
        .policy_for_client(&call.name, call.client.as_deref());
    let (mut outline, mut prepared, estimated_tokens) = prepare(o, call, spill, len, reply)?;
    // A text copied in `structuredContent`: the text alone gives records.
    let text_copy = copy::find(spill, &prepared, &mut outline.long)?;
    if text_copy.is_some() {
        prepared.retain(|p| !matches!(p.source, Source::Structured(_)));
    }
    let (copy, emptied) = match text_copy {
        Some(c) => (Some(c.copy), Some(c.emptied)),
        None => (None, None),
    };
    let SplitSources {
        data,
        segments,
        is_source,
        slim,
        kind,
    } = split_sources(spill, outline.blocks.len(), &prepared, o.config.parallel)?;
    drop(prepared);
    rewrite::structured_fits(slim.as_deref(), call.output_schema).map_err(Stop::Keep)?;
    // `structuredContent` in the rewritten result and the envelope: its
    // record array emptied, or its copy of a text emptied.
    let structured = slim.as_deref().or(emptied.as_deref());
    let shrunk = message::shrunk_result(
        spill,
        &outline.members,
        &outline.blocks,
        &is_source,
        structured,
        &mut outline.long,
    )?;
    let parsed = RawResult::parse(&shrunk).map_err(|_| NotStreamable("the rest of the result"))?;
    let copy_key = copy.as_ref().map(|c| c.key.clone());
    let rebuild = rebuild_of(&parsed, &is_source, structured, segments, copy)?;
    let kept_blocks = (0..outline.blocks.len())
        .filter(|&i| !is_source[i])
        .collect();
    let sink::Finished {
        stats,
        contract,
        chars,
        file,
        sample,
        sample_count,
    } = data;
    let records = Data::File {
        file: &file,
        sample: RecordsView::new(&sample, sample_count),
        count: contract.count,
        chars,
    };
    let split = Split {
        kind,
        rebuild,
        stats,
        contract,
        estimated_tokens,
        kept_blocks,
        structured_slim: slim,
        structured_copy_key: copy_key,
    };
    let outcome = pipeline::finish(o, call, policy.threshold_tokens, &parsed, records, split);
    let result = match &outcome {
        Outcome::Offloaded(off) => &off.result,
        Outcome::Truncated(t) => &t.result,
        Outcome::Inline(reason) => return Err(Stop::Keep(reason.clone())),
    };
    reply.message = Some(message::with_result(spill, &outline.message, result, len)?);
    Ok(outcome)
}

/// The rebuild layout: the envelope (the small rest of the result,
/// `parsed`, the sources nulled, `structuredContent` as `structured` when
/// it gave records or copied a text) and the segments.
fn rebuild_of(
    parsed: &RawResult<'_>,
    is_source: &[bool],
    structured: Option<&str>,
    segments: Vec<Segment>,
    structured_copy: Option<StructuredCopy>,
) -> Result<Rebuild, NotStreamable> {
    let nulled = match structured_copy {
        Some(_) => structured,
        None => structured.map(|_| "null"),
    };
    let (envelope, repeats) = records::envelope(parsed, is_source, nulled, &FromResult::default())
        .map_err(|_| NotStreamable("the envelope"))?;
    Ok(Rebuild {
        result: envelope,
        segments: records::compact_segments(segments),
        structured_copy,
        from_result: None,
        repeats,
    })
}

/// Estimated tokens of the UTF-8 text `input` yields, a chunk at a time.
fn estimate(
    estimator: &dyn crate::estimate::TokenEstimator,
    mut input: impl Read,
) -> Result<usize, NotStreamable> {
    let mut buf = vec![0u8; CHUNK];
    let (mut carry, mut tokens) = (0usize, 0usize);
    loop {
        let n = input.read(&mut buf[carry..])?;
        let end = carry + n;
        let valid = match std::str::from_utf8(&buf[..end]) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() && n > 0 => e.valid_up_to(),
            Err(_) => return Err(NotStreamable("not UTF-8")),
        };
        tokens += estimator.estimate(std::str::from_utf8(&buf[..valid]).unwrap_or_default());
        if n == 0 {
            return Ok(tokens);
        }
        buf.copy_within(valid..end, 0);
        carry = end - valid;
    }
}

/// Tokens of the text blocks that are not sources.
fn small_text_tokens(
    estimator: &dyn crate::estimate::TokenEstimator,
    spill: &File,
    outline: &Outline,
) -> Result<usize, NotStreamable> {
    let mut tokens = 0;
    for (i, b) in outline.blocks.iter().enumerate() {
        let is_source = outline
            .sources
            .iter()
            .any(|s| matches!(s, Source::Text { block, .. } if *block == i));
        if is_source || b.len() > split::SOURCE_MIN {
            continue;
        }
        let block: serde_json::Value = serde_json::from_str(&read_small(spill, b.start, b.len())?)
            .map_err(|_| NotStreamable("a bad block"))?;
        if let Some(t) = block.get("text").and_then(|t| t.as_str()) {
            tokens += estimator.estimate(t);
        }
    }
    Ok(tokens)
}
