//! The outline of a spilled JSON-RPC response: its members, the members of
//! its `result`, the content blocks and which values are record sources
//! (a text block's `text`, `structuredContent`, of more than
//! [`SOURCE_MIN`] bytes). Everything that is not a source is read into
//! memory, at most [`ENVELOPE_MAX`] bytes in all.

use std::fs::File;

use super::scan::{NotStreamable, Visit, walk};
use super::split::{SOURCE_MIN, range, read_small};

/// Most bytes of a spilled result kept in memory besides its sources.
pub(super) const ENVELOPE_MAX: u64 = 1 << 20;
/// Most content blocks of a spilled result.
const MAX_BLOCKS: usize = 10_000;

/// A value in the spill: where it starts and ends (absolute offsets).
#[derive(Debug, Clone, Copy)]
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

/// The members (or elements, with empty keys) of the object or array at
/// `span`.
pub(super) fn children(file: &File, span: Span, max: usize) -> Result<Vec<Member>, NotStreamable> {
    struct Kids {
        base: u64,
        max: usize,
        key: Option<Vec<u8>>,
        out: Vec<Member>,
    }
    impl Visit for Kids {
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
    }
    let mut kids = Kids {
        base: span.start,
        max,
        key: None,
        out: Vec::new(),
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
}

/// Outlines the JSON-RPC response in `file` (`len` bytes of valid JSON).
pub(super) fn outline(file: &File, len: u64) -> Result<Outline, NotStreamable> {
    let message = children(file, Span { start: 0, end: len }, 64)?;
    let result = find(&message, b"result").ok_or(NotStreamable("not a result"))?;
    let members = children(file, result, 256)?;
    let mut sources = Vec::new();
    if let Some(s) = find(&members, b"structuredContent").filter(|s| s.len() > SOURCE_MIN) {
        sources.push(Source::Structured(s));
    }
    let mut blocks = Vec::new();
    let mut kept = 0u64;
    if let Some(content) = find(&members, b"content") {
        if peek_is(file, content, b'[')? {
            blocks = children(file, content, MAX_BLOCKS)?
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
        let fields = children(file, *block, 256)?;
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
    })
}

/// The value of member `key` (raw key bytes, as written).
pub(super) fn find(members: &[Member], key: &[u8]) -> Option<Span> {
    members.iter().find(|m| m.key == key).map(|m| m.value)
}

fn peek_is(file: &File, span: Span, b: u8) -> Result<bool, NotStreamable> {
    Ok(read_small(file, span.start, 1.min(span.len()))?.as_bytes() == [b])
}
