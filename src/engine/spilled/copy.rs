//! A `structuredContent` object whose string member is a text block's text
//! (the MCP SDKs' `{"result": text}` for a tool returning a string): found
//! by comparing the two values' bytes in the spill, so the text alone gives
//! the records and the member carries the descriptor, as from memory.

use std::fs::File;
use std::io::Read;

use super::message::{self, LongStrings, Span, peek_is};
use super::scan::{CHUNK, NotStreamable};
use super::split::{range, read_small};
use super::{Prepared, Source};
use crate::engine::records::StructuredCopy;
use crate::json::push_json_string;

/// Most bytes of `structuredContent` besides the copied member.
const REST_MAX: u64 = 1 << 20;

/// What was found: the copy, and `structuredContent` with the copied
/// member's value `""` (minified keys, values as they came).
pub(super) struct TextCopy {
    pub copy: StructuredCopy,
    pub emptied: String,
}

/// The first string member of `structuredContent` (a source, an object)
/// that is byte for byte the text of a text source; `None` when there is
/// none. `long`: the long strings an earlier walk found.
pub(super) fn find(
    spill: &File,
    prepared: &[Prepared],
    long: &mut LongStrings,
) -> Result<Option<TextCopy>, NotStreamable> {
    let Some(structured) = prepared.iter().find_map(|p| match p.source {
        Source::Structured(s) => Some(s),
        Source::Text { .. } => None,
    }) else {
        return Ok(None);
    };
    if !peek_is(spill, structured, b'{')? {
        return Ok(None);
    }
    let members = message::children(spill, structured, 256, long)?;
    let texts = prepared.iter().filter_map(|p| match p.source {
        Source::Text { block, text } => Some((block, text)),
        Source::Structured(_) => None,
    });
    for (block, text) in texts {
        let Some(at) = members.iter().position(|m| {
            m.value.len() == text.len() && same_bytes(spill, m.value, text).unwrap_or(false)
        }) else {
            continue;
        };
        let rest = structured.len() - members[at].value.len();
        if rest > REST_MAX {
            return Ok(None);
        }
        let mut emptied = String::from("{");
        let mut key = String::new();
        for (n, m) in members.iter().enumerate() {
            let raw_key = std::str::from_utf8(&m.key).map_err(|_| NotStreamable("a bad key"))?;
            let decoded: String = serde_json::from_str(&format!("\"{raw_key}\""))
                .map_err(|_| NotStreamable("a bad key"))?;
            if n > 0 {
                emptied.push(',');
            }
            push_json_string(&mut emptied, &decoded);
            emptied.push(':');
            if n == at {
                emptied.push_str("\"\"");
                key = decoded;
            } else {
                emptied.push_str(&read_small(spill, m.value.start, m.value.len())?);
            }
        }
        emptied.push('}');
        let copy = StructuredCopy { key, block };
        return Ok(Some(TextCopy { copy, emptied }));
    }
    Ok(None)
}

/// Whether the bytes at `a` and `b` (of one length) are the same. A chunk
/// of each at a time, each read whole before the other is sought (the
/// readers of one file share its offset).
fn same_bytes(spill: &File, a: Span, b: Span) -> std::io::Result<bool> {
    let (mut p, mut q) = (vec![0; CHUNK], vec![0; CHUNK]);
    let mut done = 0;
    while done < a.len() {
        let n = (a.len() - done).min(CHUNK as u64);
        let m = n as usize;
        range(spill, a.start + done, n)?.read_exact(&mut p[..m])?;
        range(spill, b.start + done, n)?.read_exact(&mut q[..m])?;
        if p[..m] != q[..m] {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}
