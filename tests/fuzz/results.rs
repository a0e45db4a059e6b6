//! Generators of MCP tool results (`CallToolResult`s: text blocks holding
//! JSON arrays, JSON lines with mixed line ends, plain text; other blocks;
//! `structuredContent`; odd `isError` and `_meta`), and of edits that
//! break them. Shared like `values.rs`.

use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::values::{
    J, escaped, json, json_text, key, leaf, lit, obj, render, s, str_contents, ws_seed,
};

pub(super) fn line_end() -> BoxedStrategy<&'static str> {
    select(&["\n", "\r\n", "\r", "\n\n", "\r\n\r\n", "", "\n"][..]).boxed()
}

/// The (decoded) text of a text block.
pub(super) fn text_payload() -> BoxedStrategy<String> {
    prop_oneof![
        // A JSON array of records.
        4 => (prop::collection::vec(json(), 0..30), ws_seed())
            .prop_map(|(records, seed)| render(&J::Arr(records), seed)),
        // Many tiny records.
        1 => (0usize..3000, leaf(), ws_seed())
            .prop_map(|(n, r, seed)| render(&J::Arr(vec![r; n]), seed)),
        // An object whose bulk is one array.
        2 => (prop::collection::vec(json(), 0..30), key(), json(), ws_seed()).prop_map(
            |(records, k, other, seed)| {
                render(&J::Obj(vec![(k, J::Arr(records)), ("n".into(), other)]), seed)
            }
        ),
        // JSON lines, with mixed line ends and empty lines.
        2 => prop::collection::vec((json(), line_end()), 0..20).prop_map(|lines| {
            lines.iter().map(|(j, end)| render(j, 0) + *end).collect::<String>()
        }),
        // Plain text.
        2 => prop::collection::vec(("\\PC{0,30}", line_end()), 0..30)
            .prop_map(|lines| lines.iter().map(|(l, e)| format!("{l}{e}")).collect()),
        1 => json_text(),
        1 => "\\PC{0,20}",
    ]
    .boxed()
}

/// One content block.
pub(super) fn block() -> BoxedStrategy<J> {
    prop_oneof![
        6 => (text_payload(), any::<u8>()).prop_map(|(t, v)| {
            obj(vec![("type", s("text")), ("text", J::Str(escaped(&t, v)))])
        }),
        1 => (text_payload(), json(), any::<u8>()).prop_map(|(t, extra, v)| {
            obj(vec![
                ("annotations", extra),
                ("text", J::Str(escaped(&t, v))),
                ("type", s("text")),
                ("_meta", obj(vec![("k", s("v"))])),
            ])
        }),
        1 => "[A-Za-z0-9+/]{0,40}".prop_map(|d| {
            obj(vec![("type", s("image")), ("data", J::Str(d)), ("mimeType", s("image/png"))])
        }),
        1 => json_text().prop_map(|t| {
            obj(vec![
                ("type", s("resource")),
                ("resource", obj(vec![("uri", s("file:///x")), ("text", J::Str(escaped(&t, 0)))])),
            ])
        }),
        // Text blocks the parser must refuse or handle: a null, number or
        // escaped-surrogate text, a missing type, a duplicate text.
        1 => prop_oneof![
            json().prop_map(|j| obj(vec![("type", s("text")), ("text", j)])),
            json().prop_map(|j| obj(vec![("type", j), ("text", s("x"))])),
            str_contents().prop_map(|c| obj(vec![("type", s("text")), ("text", J::Str(c))])),
            (text_payload(), text_payload()).prop_map(|(a, b)| obj(vec![
                ("type", s("text")),
                ("text", J::Str(escaped(&a, 0))),
                ("text", J::Str(escaped(&b, 0))),
            ])),
        ],
        1 => json(),
    ]
    .boxed()
}

/// `structuredContent`.
pub(super) fn structured() -> BoxedStrategy<J> {
    prop_oneof![
        3 => (key(), prop::collection::vec(json(), 0..30), json()).prop_map(|(k, rows, other)| {
            J::Obj(vec![(k, J::Arr(rows)), ("total".into(), other)])
        }),
        1 => prop::collection::vec(json(), 0..30).prop_map(J::Arr),
        1 => (0usize..3000, leaf()).prop_map(|(n, r)| obj(vec![("rows", J::Arr(vec![r; n]))])),
        1 => json(),
    ]
    .boxed()
}

/// A `CallToolResult` (mostly valid), as a value.
pub(super) fn tool_result_j() -> BoxedStrategy<J> {
    (
        prop::collection::vec(block(), 0..5),
        prop::option::of(structured()),
        prop::option::of(json()),
        prop::option::of(select(&["true", "false", "1", "null", "\"true\""][..])),
        prop::collection::vec((key(), json()), 0..2),
        any::<u8>(),
    )
        .prop_map(|(blocks, structured, meta, is_error, extra, order)| {
            let mut members: Vec<(String, J)> = vec![("content".into(), J::Arr(blocks))];
            if let Some(st) = structured {
                members.push(("structuredContent".into(), st));
            }
            if let Some(m) = meta {
                members.push(("_meta".into(), m));
            }
            if let Some(e) = is_error {
                members.push(("isError".into(), lit(e)));
            }
            members.extend(extra);
            let n = members.len();
            members.rotate_left(usize::from(order) % n);
            J::Obj(members)
        })
        .boxed()
}

/// A `CallToolResult` as JSON text.
pub(super) fn tool_result() -> BoxedStrategy<String> {
    (tool_result_j(), ws_seed())
        .prop_map(|(j, seed)| render(&j, seed))
        .boxed()
}

/// An edit of a byte string.
#[derive(Debug, Clone)]
pub(super) enum Edit {
    Set(Index, u8),
    Insert(Index, u8),
    Delete(Index),
    Truncate(Index),
    /// Copies a range over another place (a structural splice).
    Splice(Index, Index, Index),
}

pub(super) fn edit() -> BoxedStrategy<Edit> {
    let interesting = select(&b"{}[],:\"\\ 0-e.\n\rtfnu\x00\xff\xc3"[..]);
    prop_oneof![
        3 => (any::<Index>(), interesting.clone()).prop_map(|(i, b)| Edit::Set(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        3 => (any::<Index>(), interesting).prop_map(|(i, b)| Edit::Insert(i, b)),
        2 => any::<Index>().prop_map(Edit::Delete),
        1 => any::<Index>().prop_map(Edit::Truncate),
        1 => (any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(a, b, c)| Edit::Splice(a, b, c)),
    ]
    .boxed()
}

pub(super) fn apply_edits(bytes: &mut Vec<u8>, edits: &[Edit]) {
    for e in edits {
        if bytes.is_empty() {
            return;
        }
        match e {
            Edit::Set(i, b) => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Edit::Insert(i, b) => {
                let at = i.index(bytes.len() + 1);
                bytes.insert(at, *b);
            }
            Edit::Delete(i) => {
                bytes.remove(i.index(bytes.len()));
            }
            Edit::Truncate(i) => bytes.truncate(i.index(bytes.len())),
            Edit::Splice(from, len, to) => {
                let start = from.index(bytes.len());
                let end = start + len.index(bytes.len() - start + 1).min(64);
                let piece = bytes[start..end].to_vec();
                let at = to.index(bytes.len() + 1);
                bytes.splice(at..at, piece);
            }
        }
    }
}

/// A valid result with a few edits (often no longer valid, or valid in
/// another way).
pub(super) fn mutated_result() -> BoxedStrategy<Vec<u8>> {
    (tool_result(), prop::collection::vec(edit(), 1..4))
        .prop_map(|(text, edits)| {
            let mut bytes = text.into_bytes();
            apply_edits(&mut bytes, &edits);
            bytes
        })
        .boxed()
}
