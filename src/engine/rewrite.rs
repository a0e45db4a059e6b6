//! The last step: the rewritten `CallToolResult`, the descriptor standing
//! where the records were, in every part of the result some client shows
//! its model.

use super::events::PassReason;
use super::records::{self, STRUCTURED_MARKER, with_descriptor};
use crate::json::push_json_string;
use crate::store;
use crate::wire::call::OutputSchema;
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
}

/// Whether `structuredContent`'s records (`slim`: the object with its
/// record array emptied) may be offloaded for a tool whose output schema
/// is `schema`: only when the descriptor can be added to it as a member
/// (`offloaded`) that every client validating the schema accepts: not for
/// a [closed](OutputSchema::Closed) schema (`None`, not known, counts as
/// no schema: the layer takes closed schemas out of the `tools/list`
/// answers it passes on, so no client validates one), nor for an object
/// that has the member already. Such a result stays inline: an emptied
/// array beside the rest of the object, shown to a model as if it were the
/// data, is worse than no offload at all.
pub(super) fn structured_fits(
    slim: Option<&str>,
    schema: Option<OutputSchema>,
) -> Result<(), PassReason> {
    let Some(slim) = slim else { return Ok(()) };
    if schema == Some(OutputSchema::Closed) {
        return Err(PassReason::StructuredSchemaClosed);
    }
    let minified = crate::json::minify(slim);
    if minified == "[]" {
        return Ok(()); // a bare record array: it becomes `[descriptor]`
    }
    match serde_json::from_str::<RawObject<'_>>(&minified) {
        Ok(fields) if !fields.contains_key(STRUCTURED_MARKER) => Ok(()),
        _ => Err(PassReason::StructuredSchemaClosed),
    }
}

/// `parsed` (the texts that gave records already taken out) with the
/// descriptor in place of the records.
///
/// The descriptor is in every part a client may show its model: the text
/// block that stands where the first record source stood; when records
/// came from `structuredContent`, its record array is emptied and the
/// descriptor put first in it as the member `offloaded` (checked
/// beforehand by [`structured_fits`]), so that a model reads where the
/// records are before it reads the empty array (a bare record array
/// becomes `[descriptor]`); a `structuredContent` member that copied the
/// text (`{"result": "..."}`) holds the descriptor's JSON text instead.
pub(super) fn rewritten(parsed: &RawResult<'_>, r: Replacement<'_>) -> String {
    let blocks = blocks_around(
        r.kept_blocks,
        parsed.blocks.len(),
        r.descriptor_json,
        r.link,
    );
    let structured = match (r.structured_copy_key, r.structured_slim) {
        (Some(key), _) => structured_copy(parsed, key, r.descriptor_json),
        (None, Some(slim)) => Some(with_descriptor(&slim, r.descriptor_json)),
        (None, None) => None,
    };
    parsed.write(&blocks, structured.as_deref())
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
/// the descriptor's JSON text, a string as the copy was (a client that
/// shows `structuredContent` rather than the text block reads it there).
fn structured_copy(parsed: &RawResult<'_>, key: &str, descriptor_json: &str) -> Option<String> {
    let object = serde_json::from_str::<RawObject<'_>>(parsed.structured()?.get()).ok()?;
    let mut value = String::with_capacity(descriptor_json.len() + 64);
    push_json_string(&mut value, descriptor_json);
    Some(records::with_field(&object, key, &value))
}

/// The `resource_link` block to the file at `path`.
pub(super) fn link_to(path: &std::path::Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let size = std::fs::metadata(path).ok().map(|m| m.len());
    resource_link_block(&store::resource_uri(&name), &name, size)
}
