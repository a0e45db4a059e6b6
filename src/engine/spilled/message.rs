//! The outline of a spilled JSON-RPC response: its members, the members of
//! its `result`, the content blocks and which values are record sources
//! (a text block's `text`, `structuredContent`, of more than
//! [`SOURCE_MIN`] bytes). Everything that is not a source is read into
//! memory, at most [`ENVELOPE_MAX`] bytes in all. And the way back: the
//! result with its sources emptied, and the message around a new result.

use std::fs::File;

use super::scan::NotStreamable;
use super::split::{SOURCE_MIN, range, read_small};
use super::walk::{Visit, walk};
use crate::json::minify;

/// Most bytes of a spilled result kept in memory besides its sources.
pub(super) const ENVELOPE_MAX: u64 = 1 << 20;
/// Most content blocks of a spilled result.
const MAX_BLOCKS: usize = 10_000;

/// A value in the spill: where it starts and ends (absolute offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub start: u64,
    pub end: u64,
}

impl Span {
    pub(super) fn len(self) -> u64 {
        self.end - self.start
    }
}

/// One member of an object: its raw key and its value.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub key: Vec<u8>,
    pub value: Span,
}

/// Where the long strings seen by one walk end, so that the walks over
/// the same bytes after it (the outline walks each level down: the message,
/// the result, its content, a block) step over them instead of reading a
/// text of hundreds of megabytes four times. At most [`LongStrings::MAX`]
/// are kept.
#[derive(Debug, Default)]
pub(super) struct LongStrings(std::collections::HashMap<u64, u64>);

impl LongStrings {
    const MAX: usize = 4096;
}

/// The members (or elements, with empty keys) of the object or array at
/// `span`.
pub(super) fn children(
    file: &File,
    span: Span,
    max: usize,
    long: &mut LongStrings,
) -> Result<Vec<Member>, NotStreamable> {
    struct Kids<'l> {
        base: u64,
        max: usize,
        key: Option<Vec<u8>>,
        out: Vec<Member>,
        long: &'l mut LongStrings,
    }
    impl Visit for Kids<'_> {
        fn key(&mut self, raw: &[u8]) {
            self.key = Some(raw.to_vec());
        }
        fn start(&mut self, at: u64) -> Result<(), NotStreamable> {
            if self.out.len() >= self.max {
                return Err(NotStreamable("too many members or blocks"));
            }
            let key = self.key.take().unwrap_or_default();
            let at = self.base + at;
            self.out.push(Member {
                key,
                value: Span { start: at, end: at },
            });
            Ok(())
        }
        fn end(&mut self, at: u64) -> Result<(), NotStreamable> {
            if let Some(last) = self.out.last_mut() {
                last.value.end = self.base + at;
            }
            Ok(())
        }
        fn long_string(&mut self, start: u64, end: u64) {
            if self.long.0.len() < LongStrings::MAX {
                self.long.0.insert(self.base + start, self.base + end);
            }
        }
        fn known_string_end(&mut self, start: u64) -> Option<u64> {
            let end = self.long.0.get(&(self.base + start))?;
            end.checked_sub(self.base)
        }
    }
    let mut kids = Kids {
        base: span.start,
        max,
        key: None,
        out: Vec::new(),
        long,
    };
    walk(range(file, span.start, span.len())?, &mut kids)?;
    Ok(kids.out)
}

/// Where the records of a spilled result may come from.
#[derive(Debug)]
pub(super) enum Source {
    /// `structuredContent`.
    Structured(Span),
    /// The `text` string of content block `block` (the literal, quotes
    /// included).
    Text { block: usize, text: Span },
}

/// A spilled JSON-RPC response, outlined.
pub(super) struct Outline {
    /// The message's members; `result` is one of them.
    pub message: Vec<Member>,
    /// The result's members, in order; `content` among them.
    pub members: Vec<Member>,
    /// The content blocks, in order, when there is a `content` array.
    pub blocks: Vec<Span>,
    /// The record sources, `structuredContent` first, then by block.
    pub sources: Vec<Source>,
    /// The long strings the outline stepped over, for later walks.
    pub long: LongStrings,
}

/// Outlines the JSON-RPC response in `file` (`len` bytes of valid JSON).
pub(super) fn outline(file: &File, len: u64) -> Result<Outline, NotStreamable> {
    let mut long_strings = LongStrings::default();
    let long = &mut long_strings;
    let message = children(file, Span { start: 0, end: len }, 64, long)?;
    let result = find(&message, b"result").ok_or(NotStreamable("not a result"))?;
    let members = children(file, result, 256, long)?;
    let mut sources = Vec::new();
    if let Some(s) = find(&members, b"structuredContent").filter(|s| s.len() > SOURCE_MIN) {
        sources.push(Source::Structured(s));
    }
    let mut blocks = Vec::new();
    let mut kept = 0u64;
    if let Some(content) = find(&members, b"content") {
        if peek_is(file, content, b'[')? {
            blocks = children(file, content, MAX_BLOCKS, long)?
                .into_iter()
                .map(|m| m.value)
                .collect();
        } else {
            kept += content.len();
        }
    }
    for (i, block) in blocks.iter().enumerate() {
        if block.len() <= SOURCE_MIN {
            kept += block.len();
            continue;
        }
        let fields = children(file, *block, 256, long)?;
        let is_text = find(&fields, b"type")
            .map(|t| read_small(file, t.start, t.len().min(64)))
            .transpose()?
            .is_some_and(|t| t == "\"text\"");
        match find(&fields, b"text").filter(|t| is_text && t.len() > SOURCE_MIN) {
            Some(text) if peek_is(file, text, b'"')? => {
                kept += block.len() - text.len();
                sources.push(Source::Text { block: i, text });
            }
            _ => kept += block.len(),
        }
    }
    let structured = match sources.first() {
        Some(Source::Structured(s)) => s.len(),
        _ => 0,
    };
    let content = find(&members, b"content").map_or(0, Span::len);
    kept += result.len() - content - structured;
    kept += len - result.len();
    if kept > ENVELOPE_MAX {
        return Err(NotStreamable("too much besides the records"));
    }
    Ok(Outline {
        message,
        members,
        blocks,
        sources,
        long: long_strings,
    })
}

/// The value of member `key` (raw key bytes, as written).
pub(super) fn find(members: &[Member], key: &[u8]) -> Option<Span> {
    members.iter().find(|m| m.key == key).map(|m| m.value)
}

/// Whether the message's members make it one JSON-RPC response carrying a
/// result, as the layer's validator of a held body reports it
/// (`wire::jsonrpc::read_reply`): `id`, `method` and `result` each at most
/// once, no `method` (a request of the server). A member named with
/// escapes that spells one of these is not read here: the response passes
/// as it came, never rewritten against another reading.
pub(super) fn one_response(file: &File, message: &[Member]) -> Result<(), NotStreamable> {
    const NAMES: [&[u8]; 3] = [b"id", b"method", b"result"];
    let mut seen = [0usize; 3];
    for m in message {
        let key = if m.key.contains(&b'\\') {
            let raw = std::str::from_utf8(&m.key).map_err(|_| NotStreamable("a bad key"))?;
            let decoded: Option<String> = serde_json::from_str(&format!("\"{raw}\"")).ok();
            if decoded.is_some_and(|k| NAMES.contains(&k.as_bytes())) {
                return Err(NotStreamable("a member name written with escapes"));
            }
            continue;
        } else {
            m.key.as_slice()
        };
        if let Some(i) = NAMES.iter().position(|n| *n == key) {
            seen[i] += 1;
        }
    }
    if seen.iter().any(|&n| n > 1) {
        return Err(NotStreamable(
            "not one JSON-RPC message: a member given twice",
        ));
    }
    let method = find(message, b"method");
    if method.is_some_and(|m| !peek_is(file, m, b'n').unwrap_or(false)) {
        return Err(NotStreamable("a request, not a response"));
    }
    Ok(())
}

pub(super) fn peek_is(file: &File, span: Span, b: u8) -> Result<bool, NotStreamable> {
    Ok(read_small(file, span.start, 1.min(span.len()))?.as_bytes() == [b])
}

/// The result with each source emptied (a text `""`, `structuredContent`
/// its `slim` form), minified: small (the outline bounded it).
pub(super) fn shrunk_result(
    spill: &File,
    members: &[Member],
    blocks: &[Span],
    is_source: &[bool],
    slim: Option<&str>,
    long: &mut LongStrings,
) -> Result<String, NotStreamable> {
    let mut out = String::from("{");
    for (n, m) in members.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(std::str::from_utf8(&m.key).map_err(|_| NotStreamable("a bad key"))?);
        out.push_str("\":");
        match m.key.as_slice() {
            b"structuredContent" if slim.is_some() => out.push_str(slim.unwrap_or("null")),
            b"content" if !blocks.is_empty() => {
                out.push('[');
                for (i, b) in blocks.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if is_source[i] {
                        out.push_str(&source_block(spill, *b, long)?);
                    } else {
                        out.push_str(&minify(&read_small(spill, b.start, b.len())?));
                    }
                }
                out.push(']');
            }
            _ => out.push_str(&minify(&read_small(spill, m.value.start, m.value.len())?)),
        }
    }
    out.push('}');
    Ok(out)
}

/// A source text block, its text `""`.
fn source_block(
    spill: &File,
    block: Span,
    long: &mut LongStrings,
) -> Result<String, NotStreamable> {
    let fields = children(spill, block, 256, long)?;
    let mut out = String::from("{");
    for (n, f) in fields.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(std::str::from_utf8(&f.key).map_err(|_| NotStreamable("a bad key"))?);
        out.push_str("\":");
        if f.key == b"text" {
            out.push_str("\"\"");
        } else {
            out.push_str(&minify(&read_small(spill, f.value.start, f.value.len())?));
        }
    }
    out.push('}');
    Ok(out)
}

/// The JSON-RPC message (the `len` bytes of `spill`) with `result` in
/// place of its result: every byte around it as it came.
pub(super) fn with_result(
    spill: &File,
    members: &[Member],
    result: &str,
    len: u64,
) -> Result<String, NotStreamable> {
    let at = find(members, b"result").ok_or(NotStreamable("not a result"))?;
    let before = read_small(spill, 0, at.start)?;
    let after = read_small(spill, at.end, len.saturating_sub(at.end))?;
    let mut out = String::with_capacity(before.len() + result.len() + after.len());
    out.push_str(&before);
    out.push_str(result);
    out.push_str(&after);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A message whose text block holds `text` (escaped), in a file.
    fn spilled(text: &str) -> (File, u64) {
        let result = serde_json::json!({"content": [{"type": "text", "text": text}],
            "isError": false});
        let message = serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result});
        let bytes = serde_json::to_vec_pretty(&message).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        (file, bytes.len() as u64)
    }

    #[test]
    fn one_response_is_what_the_reply_reader_takes_for_one() {
        let verdict = |json: &str| {
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(json.as_bytes()).unwrap();
            let whole = Span {
                start: 0,
                end: json.len() as u64,
            };
            let message = children(&file, whole, 64, &mut LongStrings::default()).unwrap();
            one_response(&file, &message).is_ok()
        };
        assert!(verdict(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(verdict(
            r#"{"jsonrpc":"2.0","id":1,"method":null,"result":{},"\u005fx":1}"#
        ));
        assert!(!verdict(
            r#"{"result":{"content":[]},"result":{},"jsonrpc":"2.0","id":0}"#
        ));
        assert!(!verdict(r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#));
        assert!(!verdict(
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#
        ));
        assert!(!verdict(r#"{"jsonrpc":"2.0","\u0069d":1,"result":{}}"#));
    }

    #[test]
    fn later_walks_step_over_the_long_strings_an_earlier_one_found() {
        // Dense escapes, a quote and a backslash at the chunk edges.
        let text = "{\"a\": \"x\\\\y\"}\n".repeat(40_000);
        let (file, len) = spilled(&text);
        let whole = Span { start: 0, end: len };
        let long = &mut LongStrings::default();
        let message = children(&file, whole, 64, long).unwrap();
        assert_eq!(long.0.len(), 1, "the text, found by the first walk");
        let result = find(&message, b"result").unwrap();
        // The same members and spans with the memo as without it.
        let fresh = &mut LongStrings::default();
        for span in [whole, result] {
            let with: Vec<_> = children(&file, span, 64, long).unwrap();
            let without: Vec<_> = children(&file, span, 64, fresh).unwrap();
            let spans = |m: &[Member]| {
                m.iter()
                    .map(|m| (m.key.clone(), m.value))
                    .collect::<Vec<_>>()
            };
            assert_eq!(spans(&with), spans(&without));
        }
        let outline = outline(&file, len).unwrap();
        let Some(Source::Text { text: span, .. }) = outline.sources.first() else {
            panic!("the text is a source");
        };
        let literal = read_small(&file, span.start, span.len()).unwrap();
        assert_eq!(serde_json::from_str::<String>(&literal).unwrap(), text);
    }
}
