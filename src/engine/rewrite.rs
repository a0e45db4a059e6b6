//! The last step: the rewritten `CallToolResult`, the descriptor standing
//! where the records were.

use super::records;
use crate::json::push_json_string;
use crate::store;
use crate::wire::mcp::{BlockOut, RawObject, RawResult, resource_link_block};

/// What takes the records' place.
pub(super) struct Replacement<'a> {
    /// The descriptor, as JSON.
    pub descriptor_json: &'a str,
    /// The `resource_link` block to the file, when the client gets one.
    pub link: Option<&'a str>,
    /// Blocks that stay (not record sources), in order.
    pub kept_blocks: &'a [usize],
    /// `structuredContent` with its record array emptied, when it was a source.
    pub structured_slim: Option<String>,
    /// The `structuredContent` field that copied a source block's text.
    pub structured_copy_key: Option<&'a str>,
    /// Records in the file, and its path.
    pub count: usize,
    pub file_path: &'a str,
    /// Whether the tool declared an `outputSchema` (`None`: not known).
    pub output_schema: Option<bool>,
}

/// The member of `structuredContent` (for a tool without an
/// `outputSchema`) that says its records were offloaded.
pub(crate) const STRUCTURED_MARKER: &str = "offloaded";

/// The `_meta` member that says so when `structuredContent` must keep its
/// declared shape.
pub(crate) const META_MARKER: &str = "lro/offloaded";

/// `parsed` (the texts that gave records already taken out) with the
/// descriptor in place of the records.
///
/// `structuredContent` is never emptied in silence, and the descriptor is
/// said once (in the text block): when records came from
/// `structuredContent`, its record array is emptied and, for a tool known
/// to declare no `outputSchema`, a member `offloaded: {offloaded, count,
/// file_path}` is added to it; otherwise (a schema, or not known) it keeps
/// the declared shape and that marker goes to the result's `_meta`
/// (`lro/offloaded`). A `structuredContent` member that copied the text
/// (`{"result": "..."}`) gets a one-line sentence, not the descriptor.
pub(super) fn rewritten(parsed: &RawResult<'_>, r: Replacement<'_>) -> String {
    let blocks = blocks_around(
        r.kept_blocks,
        parsed.blocks.len(),
        r.descriptor_json,
        r.link,
    );
    let marker = marker(r.count, r.file_path);
    let (structured, in_meta) = match (r.structured_copy_key, r.structured_slim) {
        (Some(key), _) => (structured_copy(parsed, key, r.count, r.file_path), false),
        (None, Some(slim)) if r.output_schema == Some(false) => {
            match with_member(&slim, STRUCTURED_MARKER, &marker) {
                Some(marked) => (Some(marked), false),
                None => (Some(slim), true),
            }
        }
        (None, Some(slim)) => (Some(slim), true),
        (None, None) => (None, false),
    };
    let structured = structured.as_deref();
    if !in_meta {
        return parsed.write(&blocks, structured);
    }
    match parsed.top.get("_meta").map(|m| m.get()) {
        Some(meta) => match with_member(meta, META_MARKER, &marker) {
            Some(marked) => parsed.write_over(&blocks, structured, &[("_meta", &marked)]),
            None => parsed.write(&blocks, structured),
        },
        None => {
            let mut out = parsed.write(&blocks, structured);
            if out.ends_with('}') {
                out.pop();
                if out.len() > 1 {
                    out.push(',');
                }
                out.push_str("\"_meta\":{");
                push_json_string(&mut out, META_MARKER);
                out.push(':');
                out.push_str(&marker);
                out.push_str("}}");
            }
            out
        }
    }
}

/// `{"offloaded":true,"count":N,"file_path":"..."}`.
fn marker(count: usize, file_path: &str) -> String {
    let mut out = format!("{{\"offloaded\":true,\"count\":{count},\"file_path\":");
    push_json_string(&mut out, file_path);
    out.push('}');
    out
}

/// The JSON object `object`, minified, with a member `key: value` added
/// last; `None` when it is not an object or already has `key`.
fn with_member(object: &str, key: &str, value: &str) -> Option<String> {
    let minified = crate::json::minify(object);
    let fields = serde_json::from_str::<RawObject<'_>>(&minified).ok()?;
    if fields.contains_key(key) {
        return None;
    }
    let mut out = minified.strip_suffix('}')?.to_owned();
    if !fields.is_empty() {
        out.push(',');
    }
    push_json_string(&mut out, key);
    out.push(':');
    out.push_str(value);
    out.push('}');
    Some(out)
}

/// The minified JSON object `object` without the marker member `key` that
/// [`rewritten`] added last, when it has it; else `None`.
pub(crate) fn without_marker(object: &str, key: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Marker {
        offloaded: bool,
        count: usize,
        file_path: String,
    }
    let fields = serde_json::from_str::<RawObject<'_>>(object).ok()?;
    let (last, value) = fields.last()?;
    let m: Marker = serde_json::from_str(value.get()).ok()?;
    if last != key || !m.offloaded || value.get() != marker(m.count, &m.file_path) {
        return None;
    }
    let mut suffix = String::new();
    if fields.len() > 1 {
        suffix.push(',');
    }
    push_json_string(&mut suffix, key);
    suffix.push(':');
    suffix.push_str(value.get());
    suffix.push('}');
    let kept = object.strip_suffix(&suffix)?;
    Some(format!("{kept}}}"))
}

/// The rewritten result's blocks: the kept blocks before the first block
/// the descriptor stands for keep their place; then the descriptor, with
/// that block's annotations, and the link to the file; then the other kept
/// blocks, in order.
fn blocks_around<'a>(
    kept_blocks: &[usize],
    total: usize,
    descriptor_json: &'a str,
    link: Option<&'a str>,
) -> Vec<BlockOut<'a>> {
    let source = records::first_source(kept_blocks, total);
    let lead = source.unwrap_or(0);
    let mut blocks = Vec::with_capacity(kept_blocks.len() + 2);
    blocks.extend(kept_blocks[..lead].iter().map(|&i| BlockOut::Original(i)));
    blocks.push(match source {
        Some(i) => BlockOut::TextLike(descriptor_json, i),
        None => BlockOut::NewText(descriptor_json),
    });
    blocks.extend(link.map(BlockOut::Json));
    blocks.extend(kept_blocks[lead..].iter().map(|&i| BlockOut::Original(i)));
    blocks
}

/// `structuredContent` whose member `key` copied the text as a string: now
/// a sentence saying where the records went (the descriptor itself is in
/// the text block; a model reads it once).
fn structured_copy(
    parsed: &RawResult<'_>,
    key: &str,
    count: usize,
    file_path: &str,
) -> Option<String> {
    let object = serde_json::from_str::<RawObject<'_>>(parsed.structured()?.get()).ok()?;
    let sentence = format!(
        "Offloaded: {count} records were written to {file_path}; the descriptor (recipes, \
         guidance) is in the text content."
    );
    let mut value = String::with_capacity(sentence.len() + 16);
    push_json_string(&mut value, &sentence);
    Some(records::with_field(&object, key, &value))
}

/// The `resource_link` block to the file at `path`.
pub(super) fn link_to(path: &std::path::Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let size = std::fs::metadata(path).ok().map(|m| m.len());
    resource_link_block(&store::resource_uri(&name), &name, size)
}
