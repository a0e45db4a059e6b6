//! The whitespace of a JSON text that no known [`Style`](crate::json::Style)
//! lays out, kept small: one entry per kind of gap between two tokens.
//!
//! A gap is keyed by the nesting depth at it and the kinds of the tokens on
//! either side (a bracket, a brace, `,`, `:`, or a value). A text whose
//! every gap of one key holds the same whitespace (`[ {...} ,\n{...} ]`,
//! Python's `indent=3` with `", "` separators, a depth-dependent indent)
//! is described by a table of a few entries whatever its size, and laid out
//! again exactly from its minified form, or from fewer records after a
//! truncation. A text whose gaps of one key differ (whitespace sprinkled at
//! random) has no such table: see [`learn`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::shape::string_end;

/// Depths past this one share its entries.
const MAX_DEPTH: usize = 64;

/// The whitespace of each kind of gap: `(depth, before, after, whitespace)`,
/// the token kinds as bytes (`[`, `]`, `{`, `}`, `,`, `:`, or `v` for a
/// value). Gaps not listed are empty.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub(crate) struct Layout(Vec<(u8, char, char, String)>);

type Key = (u8, u8, u8);

/// The layout of `core` (a JSON text without leading or trailing
/// whitespace) around its minified form, when one table describes it and
/// the table's whitespace holds at most `max_bytes` bytes.
pub(crate) fn learn(core: &str, max_bytes: usize) -> Option<Layout> {
    let mut table: HashMap<Key, &str> = HashMap::new();
    let mut kept = 0usize;
    let mut conflict = false;
    walk(core, |key, ws| {
        match table.get(&key) {
            Some(seen) if *seen == ws => {}
            Some(_) => conflict = true,
            None => {
                kept += ws.len();
                table.insert(key, ws);
            }
        }
        !conflict && kept <= max_bytes
    });
    if conflict || kept > max_bytes {
        return None;
    }
    let mut entries: Vec<(u8, char, char, String)> = table
        .into_iter()
        .filter(|(_, ws)| !ws.is_empty())
        .map(|((d, a, b), ws)| (d, char::from(a), char::from(b), ws.to_owned()))
        .collect();
    entries.sort();
    Some(Layout(entries))
}

impl Layout {
    /// Bytes of whitespace the table holds.
    pub(crate) fn bytes(&self) -> usize {
        self.0.iter().map(|e| e.3.len() + 4).sum()
    }

    /// `minified` laid out with this table.
    pub(crate) fn apply(&self, minified: &str) -> String {
        let table: HashMap<Key, &str> = self
            .0
            .iter()
            .filter(|(_, a, b, _)| a.is_ascii() && b.is_ascii())
            .map(|(d, a, b, ws)| ((*d, *a as u8, *b as u8), ws.as_str()))
            .collect();
        let extra: usize = self.0.iter().map(|e| e.3.len()).sum();
        let mut out = String::with_capacity(minified.len() + extra.min(1 << 16));
        let mut last = 0usize;
        tokens(minified, |key, gap_at, _| {
            out.push_str(&minified[last..gap_at]);
            last = gap_at;
            if let Some(ws) = table.get(&key) {
                out.push_str(ws);
            }
            true
        });
        out.push_str(&minified[last..]);
        out
    }
}

/// Calls `gap(key, whitespace)` for every gap between two tokens of `text`
/// (empty gaps included) until it returns false.
fn walk<'t>(text: &'t str, mut gap: impl FnMut(Key, &'t str) -> bool) {
    tokens(text, |key, from, to| gap(key, &text[from..to]))
}

/// Walks the tokens of a JSON text: for each gap between two tokens, calls
/// `gap(key, start, end)` with the byte range of the whitespace in it.
fn tokens(text: &str, mut gap: impl FnMut(Key, usize, usize) -> bool) {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut prev: Option<u8> = None;
    let mut i = 0usize;
    while i < bytes.len() {
        let ws_start = i;
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else { return };
        let kind = kind_of(b);
        if let Some(p) = prev
            && !gap((depth.min(MAX_DEPTH) as u8, p, kind), ws_start, i)
        {
            return;
        }
        match b {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i = token_end(bytes, i);
        prev = Some(kind);
    }
}

/// The kind of the token starting with `b`: the byte of a bracket, a
/// brace, `,` or `:`, else `v` (a value).
fn kind_of(b: u8) -> u8 {
    match b {
        b'[' | b']' | b'{' | b'}' | b',' | b':' => b,
        _ => b'v',
    }
}

/// The end of the token starting at `i`.
fn token_end(bytes: &[u8], i: usize) -> usize {
    match bytes[i] {
        b'"' => string_end(bytes, i + 1),
        b'[' | b']' | b'{' | b'}' | b',' | b':' => i + 1,
        _ => scalar_end(bytes, i),
    }
}

/// The end of a number or literal starting at `i`.
fn scalar_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len()
        && !matches!(
            bytes[i],
            b' ' | b'\t' | b'\n' | b'\r' | b'[' | b']' | b'{' | b'}' | b',' | b':' | b'"'
        )
    {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::minify;

    fn round_trip(text: &str) -> Option<usize> {
        let layout = learn(text, 4096)?;
        assert_eq!(layout.apply(&minify(text)), text);
        Some(layout.0.len())
    }

    #[test]
    fn regular_layouts_are_a_few_entries() {
        let rows: Vec<String> = (0..300)
            .map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\",\"tags\":[1,2]}}"))
            .collect();
        let text = format!("[ {} ]", rows.join(" ,\n"));
        assert!(round_trip(&text).unwrap() <= 4);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pretty3 = {
            let mut out = Vec::new();
            let f = serde_json::ser::PrettyFormatter::with_indent(b"   ");
            let mut s = serde_json::Serializer::with_formatter(&mut out, f);
            serde::Serialize::serialize(&v, &mut s).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(round_trip(&pretty3).unwrap() < 20);
        for t in ["1", "\"a b\"", "[]", "{ }", "[ true , null ]", "{\"a\" :1}"] {
            round_trip(t).unwrap();
        }
    }

    #[test]
    fn irregular_or_large_layouts_have_none() {
        assert_eq!(round_trip("[1, 2,3]"), None);
        let text = format!("[{}1]", " ".repeat(5000));
        assert!(learn(&text, 4096).is_none());
        assert!(learn(&text, 8192).is_some());
    }
}
