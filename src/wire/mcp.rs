//! MCP `CallToolResult` seen as raw JSON.
//!
//! A result is parsed only down to its content blocks; every value keeps the
//! exact text the server wrote (big numbers, escapes, unknown fields), so a
//! result can be taken apart and put back together without loss.

use indexmap::IndexMap;

use crate::json::{Style, decode_string, minify_into, push_json_string};

mod layout;
mod raw;
mod trusted;
mod write;

pub(crate) use raw::Raw;

/// Where things sit in a result's text, as the layer's validator crossed
/// them. The trusted reader takes them without skipping the values again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MemberRanges {
    /// The top-level members, in order: the range of each key (quotes
    /// included) and of its value.
    pub members: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    /// The long string values at any depth (a text block's text: see
    /// [`Visitor::long_string`](crate::json::Visitor::long_string)), in order,
    /// quotes included.
    pub long_strings: Vec<std::ops::Range<usize>>,
}

/// A JSON object whose values are kept as raw text, in their original order.
pub(crate) type RawObject<'a> = IndexMap<String, Raw<'a>>;

/// What is known of a result's bytes before they are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input<'a> {
    /// Nothing (bytes from a library user): validated while parsed.
    Unchecked,
    /// They are this text, read whole as one JSON value already (the
    /// `result` member of a response the layer read): parsed without
    /// checking them again, as UTF-8 or as JSON; and where its members sit
    /// in it when the validator reported them ([`MemberRanges`]). Only the layer says
    /// so, where it is true.
    Validated(&'a str, Option<&'a MemberRanges>),
}

/// Why a body is not an MCP tool result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// The bytes are not UTF-8.
    #[error("tool result is not valid UTF-8")]
    InvalidUtf8,
    /// The bytes are not one JSON value (or nest deeper than 128 levels).
    #[error("tool result is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Valid JSON, but not shaped like a `CallToolResult`.
    #[error("not an MCP CallToolResult: {0}")]
    NotToolResult(&'static str),
}

/// One content block of a tool result.
#[derive(Debug)]
pub(crate) struct RawBlock<'a> {
    /// Every field of the block, raw.
    pub fields: RawObject<'a>,
    /// The decoded text of the block: `text` of a text block, or
    /// `resource.text` of an embedded text resource (text is text, whichever
    /// block carries it).
    pub text: Option<String>,
    /// The text is `resource.text` (an embedded resource), not `text`.
    pub in_resource: bool,
    /// The text is `structuredContent` (minified) laid out in this style,
    /// which adds this many whitespace bytes: detected from the escaped text,
    /// which is then left undecoded (`text` is `None`) unless asked for
    /// ([`RawResult::decode_laid_out`]).
    pub laid_out: Option<(Style, usize)>,
}

/// Bytes of a text block's escaped text from which it is compared with
/// `structuredContent` before it is decoded (a copy is seldom smaller).
const LAID_OUT_FROM: usize = 4096;

/// A `CallToolResult` taken apart down to its content blocks.
#[derive(Debug)]
pub(crate) struct RawResult<'a> {
    /// Top-level fields in order (`content`, `structuredContent`, `isError`, `_meta`, ...).
    pub top: RawObject<'a>,
    /// The `content` blocks.
    pub blocks: Vec<RawBlock<'a>>,
}

/// What to put in place of one content block when writing a result.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BlockOut<'s> {
    /// The original block `i`, unchanged.
    Original(usize),
    /// The original block `i` with its `text` replaced (`None`: `null`).
    WithText(usize, Option<&'s str>),
    /// A new text block with this text.
    NewText(&'s str),
    /// A new text block with this text, carrying the `annotations` of
    /// original block `like` when it has some (the descriptor, in place of
    /// the text it stands for).
    TextLike(&'s str, usize),
    /// A block given as minified JSON (an object).
    Json(&'s str),
}

/// A `resource_link` content block (MCP 2025-06-18) to an offload file:
/// its `uri` and `name`, `mimeType` `application/jsonl`, a one-sentence
/// `description` and, when known, its `size` in bytes. Minified JSON.
pub(crate) fn resource_link_block(uri: &str, name: &str, size: Option<u64>) -> String {
    let mut out = String::with_capacity(uri.len() + name.len() + 160);
    out.push_str("{\"type\":\"resource_link\",\"uri\":");
    push_json_string(&mut out, uri);
    out.push_str(",\"name\":");
    push_json_string(&mut out, name);
    out.push_str(
        ",\"mimeType\":\"application/jsonl\",\"description\":\"The full tool result: a \
         header line, then one JSON record per line.\"",
    );
    if let Some(size) = size {
        out.push_str(&format!(",\"size\":{size}"));
    }
    out.push('}');
    out
}

impl<'a> RawResult<'a> {
    /// Parses a tool result. `CreateTaskResult` and other shapes are refused.
    pub(crate) fn parse(json: &'a str) -> Result<Self, ResultError> {
        Self::parse_with(json, false)
    }

    /// [`parse`](Self::parse), or the trusted reader's parse when the input
    /// says it was validated.
    pub(crate) fn parse_input(json: &'a str, input: Input<'_>) -> Result<Self, ResultError> {
        match input {
            Input::Unchecked => Self::parse_with(json, false),
            Input::Validated(_, members) => Self::parse_trusted_with(json, members),
        }
    }

    /// [`parse_trusted_with`](Self::parse_trusted_with), member ranges unknown.
    #[cfg(test)]
    pub(crate) fn parse_trusted(json: &'a str) -> Result<Self, ResultError> {
        Self::parse_trusted_with(json, None)
    }

    /// Parses a tool result that serde has validated already as one JSON
    /// value, without validating it again; the same result as
    /// [`parse`](Self::parse) (anything unusual is left to it). On bytes that are not valid JSON, what it gives is
    /// unspecified (not a panic). `members`: where its members sit (see
    /// [`MemberRanges`]), when known.
    fn parse_trusted_with(
        json: &'a str,
        members: Option<&MemberRanges>,
    ) -> Result<Self, ResultError> {
        let Some((top, objects)) = trusted::read(json, members) else {
            return Self::parse_with(json, false);
        };
        // Debug builds (the tests, the property tests) check it against serde.
        #[cfg(debug_assertions)]
        Self::check_trusted(json, &top, &objects);
        Self::from_parts(top, objects, false)
    }

    /// Asserts that the trusted reader found what `TopFast` finds.
    #[cfg(debug_assertions)]
    fn check_trusted(json: &'a str, top: &RawObject<'a>, objects: &[RawObject<'a>]) {
        let Ok(fast) = serde_json::from_str::<TopFast<'a>>(json) else {
            panic!("the trusted reader read what serde refuses");
        };
        assert_eq!(
            format!("{:?}", fast.top),
            format!("{top:?}"),
            "top-level fields differ"
        );
        let blocks = fast.blocks.unwrap_or_default();
        assert_eq!(
            format!("{blocks:?}"),
            format!("{objects:?}"),
            "content blocks differ"
        );
    }

    /// Parses a rebuild envelope, whose record-source text blocks hold `null`.
    pub(crate) fn parse_envelope(json: &'a str) -> Result<Self, ResultError> {
        Self::parse_with(json, true)
    }

    fn parse_with(json: &'a str, null_text: bool) -> Result<Self, ResultError> {
        // The usual case in one pass: the top level with `content` read
        // straight into block fields. Anything unusual takes the careful
        // way below, which also names the error.
        if let Ok(TopFast {
            top,
            blocks: Some(objects),
        }) = serde_json::from_str::<TopFast<'a>>(json)
        {
            // Debug builds (the tests, the property tests) check it against the careful way.
            #[cfg(debug_assertions)]
            Self::check_fast(json, null_text, &top, &objects);
            return Self::from_parts(top, objects, null_text);
        }
        Self::parse_slow(json, null_text)
    }

    /// Asserts that the one-pass parse found the fields the careful way
    /// finds (`content` aside, a placeholder on the fast way).
    #[cfg(debug_assertions)]
    fn check_fast(json: &'a str, null_text: bool, top: &RawObject<'a>, objects: &[RawObject<'a>]) {
        let Ok(slow) = Self::parse_slow(json, null_text) else {
            return;
        };
        let raw = |o: &RawObject<'a>| -> Vec<(String, String)> {
            o.iter()
                .map(|(k, v)| {
                    let v = if k == "content" { "" } else { v.get() };
                    (k.clone(), v.to_owned())
                })
                .collect()
        };
        assert_eq!(raw(&slow.top), raw(top), "top-level fields differ");
        let blocks: Vec<Vec<(String, String)>> = objects.iter().map(raw).collect();
        let slow_blocks: Vec<Vec<(String, String)>> =
            slow.blocks.iter().map(|b| raw(&b.fields)).collect();
        assert_eq!(slow_blocks, blocks, "content blocks differ");
    }

    /// The careful way: the top level, then `content`, each with its error.
    fn parse_slow(json: &'a str, null_text: bool) -> Result<Self, ResultError> {
        let top: RawObject<'a> = match serde_json::from_str(json) {
            Ok(top) => top,
            Err(e) if e.is_data() => return Err(ResultError::NotToolResult("not a JSON object")),
            Err(e) => return Err(ResultError::NotJson(e)),
        };
        let content = top
            .get("content")
            .ok_or(ResultError::NotToolResult("no `content` array"))?;
        // Blocks are read straight into their fields: one pass over content
        // that may be megabytes. Only when that fails is it read again, to
        // tell which error applies.
        let objects: Vec<RawObject<'a>> =
            match serde_json::from_str::<Bounded<_>>(content.get()) {
                Ok(objects) => objects.0,
                Err(_) => {
                    let raw_blocks: Bounded<Raw<'a>> = serde_json::from_str(content.get())
                        .map_err(|e| match e.is_data() && e.to_string().contains(TOO_MANY) {
                            true => ResultError::NotToolResult(TOO_MANY),
                            false => ResultError::NotToolResult("`content` is not an array"),
                        })?;
                    let raw_blocks = raw_blocks.0;
                    for raw in raw_blocks {
                        serde_json::from_str::<RawObject<'a>>(raw.get()).map_err(|_| {
                            ResultError::NotToolResult("a content block is not an object")
                        })?;
                    }
                    return Err(ResultError::NotToolResult(
                        "a content block is not an object",
                    ));
                }
            };
        Self::from_parts(top, objects, null_text)
    }

    fn from_parts(
        top: RawObject<'a>,
        objects: Vec<RawObject<'a>>,
        null_text: bool,
    ) -> Result<Self, ResultError> {
        let structured = top
            .get("structuredContent")
            .map(|s| s.get())
            .filter(|s| !null_text && s.starts_with(['{', '[']));
        let mut blocks = Vec::with_capacity(objects.len());
        for fields in objects {
            let kind: String = fields
                .get("type")
                .and_then(|t| serde_json::from_str(t.get()).ok())
                .ok_or(ResultError::NotToolResult(
                    "a content block has no string `type`",
                ))?;
            let laid_out = match (kind.as_str(), structured) {
                ("text", Some(structured)) => layout::laid_out(&fields, structured),
                _ => None,
            };
            let (text, in_resource) = match kind.as_str() {
                _ if laid_out.is_some() => (None, false),
                "text" => (block_text(&fields, null_text)?, false),
                "resource" => resource_text(&fields, null_text),
                _ => (None, false),
            };
            blocks.push(RawBlock {
                fields,
                text,
                in_resource,
                laid_out,
            });
        }
        Ok(RawResult { top, blocks })
    }

    /// Decodes the texts left undecoded because they lay out
    /// `structuredContent` (for what needs the text itself).
    pub(crate) fn decode_laid_out(&mut self) {
        for block in &mut self.blocks {
            if block.laid_out.take().is_some() {
                block.text = block
                    .fields
                    .get("text")
                    .and_then(|t| decode_string(t.get()).ok());
            }
        }
    }

    /// The raw `structuredContent`, when present and not `null`.
    pub(crate) fn structured(&self) -> Option<Raw<'a>> {
        self.top
            .get("structuredContent")
            .copied()
            .filter(|v| v.get() != "null")
    }
}

/// The `text` of a text block (`None`: nulled in a rebuild envelope).
fn block_text(fields: &RawObject<'_>, null_text: bool) -> Result<Option<String>, ResultError> {
    let raw = fields.get("text");
    if null_text && raw.is_some_and(|t| t.get() == "null") {
        return Ok(None);
    }
    raw.and_then(|t| decode_string(t.get()).ok())
        .map(Some)
        .ok_or(ResultError::NotToolResult(
            "a text block has no string `text`",
        ))
}

/// The `resource.text` of an embedded resource, and whether the block
/// carries one (nulled in a rebuild envelope: `None`, true). A blob
/// resource, or one not shaped as the schema says, is no text: it stays as
/// it is.
fn resource_text(fields: &RawObject<'_>, null_text: bool) -> (Option<String>, bool) {
    let Some(resource) = fields
        .get("resource")
        .and_then(|r| serde_json::from_str::<RawObject<'_>>(r.get()).ok())
    else {
        return (None, false);
    };
    match resource.get("text") {
        Some(t) if null_text && t.get() == "null" => (None, true),
        Some(t) => match decode_string(t.get()) {
            Ok(text) => (Some(text), true),
            Err(_) => (None, false),
        },
        None => (None, false),
    }
}

/// Content blocks read at most: each costs its fields' map whatever its
/// size in bytes, so a result of very many tiny blocks (`[{},{},...]`)
/// would take many times its size in memory. No real tool result comes
/// near this; one that does passes through, said so.
pub(crate) const MAX_CONTENT_BLOCKS: usize = 100_000;

const TOO_MANY: &str = "more than 100000 content blocks";

/// A JSON array of at most [`MAX_CONTENT_BLOCKS`] elements (else an error
/// as soon as one more is seen, before it is read).
struct Bounded<T>(Vec<T>);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Bounded<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Bounded<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(item) = seq.next_element()? {
                    if out.len() == MAX_CONTENT_BLOCKS {
                        return Err(serde::de::Error::custom(TOO_MANY));
                    }
                    out.push(item);
                }
                Ok(Bounded(out))
            }
        }
        d.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// The top level of a result read in one pass: every field raw, except
/// `content`, read into block fields (its raw entry in `top` is a
/// placeholder: [`RawResult::write`] writes the blocks instead).
struct TopFast<'a> {
    top: RawObject<'a>,
    blocks: Option<Vec<RawObject<'a>>>,
}

impl<'de> serde::Deserialize<'de> for TopFast<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = TopFast<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a CallToolResult object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut top = RawObject::new();
                let mut blocks = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "content" {
                        blocks = Some(map.next_value::<Bounded<RawObject<'de>>>()?.0);
                        // Same position and overwrite rules as a plain map.
                        top.insert(key, Raw::trusted("[]"));
                    } else {
                        top.insert(key, map.next_value::<Raw<'de>>()?);
                    }
                }
                Ok(TopFast { top, blocks })
            }
        }
        d.deserialize_map(Visit)
    }
}

#[cfg(test)]
mod tests;
