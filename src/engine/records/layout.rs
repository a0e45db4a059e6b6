//! The whitespace of a JSON text that no known [`Style`](crate::json::Style)
//! lays out, kept small: one entry per kind of gap between two tokens.
//!
//! A gap is keyed by the nesting depth at it and the kinds of the tokens on
//! either side (a bracket, a brace, `,`, `:`, or a value). A text whose
//! every gap of one key holds the same whitespace (`[ {...} ,\n{...} ]`,
//! Python's `indent=3` with `", "` separators, a depth-dependent indent)
//! is described by a table of a few entries whatever its size, and laid out
//! again exactly from its minified form, or from fewer records after a
//! truncation. The table holds the whitespace most gaps of a key have; the
//! few gaps that differ (a hand edit, one missing space) are listed by their
//! place, so that the whole text is still rebuilt exactly. A text whose gaps
//! of one key differ too often (whitespace sprinkled at random) has no such
//! table: see [`learn`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::json::after_string;

/// Depths past this one share its entries.
const MAX_DEPTH: usize = 64;

/// The whitespace of each kind of gap: `(depth, before, after, whitespace)`,
/// the token kinds as bytes (`[`, `]`, `{`, `}`, `,`, `:`, or `v` for a
/// value); gaps not listed are empty. Then the gaps that differ from their
/// entry: `(place, whitespace)`, the place counted over every gap of the
/// text from 0. Written as the bare table when no gap differs (as before
/// the odd gaps were kept), else as `{"table": [...], "odd": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Written", into = "Written")]
pub(crate) struct Layout {
    table: Vec<Entry>,
    odd: Vec<(u64, String)>,
}

type Entry = (u8, char, char, String);

/// How a [`Layout`] is written in a header.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Written {
    Table(Vec<Entry>),
    WithOdd {
        table: Vec<Entry>,
        odd: Vec<(u64, String)>,
    },
}

impl From<Written> for Layout {
    fn from(w: Written) -> Layout {
        match w {
            Written::Table(table) => Layout { table, odd: vec![] },
            Written::WithOdd { table, odd } => Layout { table, odd },
        }
    }
}

impl From<Layout> for Written {
    fn from(l: Layout) -> Written {
        if l.odd.is_empty() {
            Written::Table(l.table)
        } else {
            Written::WithOdd {
                table: l.table,
                odd: l.odd,
            }
        }
    }
}

type Key = (u8, u8, u8);

/// What one odd gap costs besides its whitespace: its place, written.
const ODD_GAP_COST: usize = 12;

/// Distinct whitespace of one key past which a text is taken for sprinkled
/// at random, and no table is looked for.
const MAX_VARIANTS: usize = 64;

/// The layout of `core` (a JSON text without leading or trailing
/// whitespace) around its minified form, when its table and odd gaps hold
/// at most `max_bytes` bytes. Two walks: one counts the whitespace of each
/// key (the most frequent becomes its entry), one lists the gaps that
/// differ. The first stops at [`MAX_VARIANTS`] kinds of whitespace, the
/// second at `max_bytes`.
pub(crate) fn learn(core: &str, max_bytes: usize) -> Option<Layout> {
    // (count, first seen) of each whitespace of each key.
    let mut seen: HashMap<Key, HashMap<&str, (usize, usize)>> = HashMap::new();
    let mut variants = 0usize;
    let mut order = 0usize;
    let mut too_many = false;
    walk(core, |key, ws| {
        let of_key = seen.entry(key).or_default();
        if let Some(c) = of_key.get_mut(ws) {
            c.0 += 1;
        } else {
            of_key.insert(ws, (1, order));
            variants += 1;
        }
        order += 1;
        too_many = variants > MAX_VARIANTS;
        !too_many
    });
    if too_many {
        return None;
    }
    // The most frequent whitespace of each key; of equals, the first seen.
    let rule: HashMap<Key, &str> = seen
        .into_iter()
        .filter_map(|(key, of_key)| {
            let best = of_key
                .into_iter()
                .max_by_key(|(_, (count, first))| (*count, std::cmp::Reverse(*first)))?;
            Some((key, best.0))
        })
        .collect();
    let mut kept: usize = rule.values().map(|ws| ws.len()).sum();
    if kept > max_bytes {
        return None;
    }
    let mut odd = Vec::new();
    let mut place = 0u64;
    walk(core, |key, ws| {
        if rule.get(&key) != Some(&ws) {
            kept += ws.len() + ODD_GAP_COST;
            odd.push((place, ws.to_owned()));
        }
        place += 1;
        kept <= max_bytes
    });
    if kept > max_bytes {
        return None;
    }
    let mut table: Vec<Entry> = rule
        .into_iter()
        .filter(|(_, ws)| !ws.is_empty())
        .map(|((d, a, b), ws)| (d, char::from(a), char::from(b), ws.to_owned()))
        .collect();
    table.sort();
    Some(Layout { table, odd })
}

impl Layout {
    /// Bytes of whitespace the table and the odd gaps hold.
    pub(crate) fn bytes(&self) -> usize {
        let table: usize = self.table.iter().map(|e| e.3.len() + 4).sum();
        let odd: usize = self.odd.iter().map(|o| o.1.len() + ODD_GAP_COST).sum();
        table + odd
    }

    /// `minified` laid out with this table; with the odd gaps too when
    /// `exact` (`minified` holds every token of the text learnt from: no
    /// record was dropped).
    pub(crate) fn apply(&self, minified: &str, exact: bool) -> String {
        let table: HashMap<Key, &str> = self
            .table
            .iter()
            .filter(|(_, a, b, _)| a.is_ascii() && b.is_ascii())
            .map(|(d, a, b, ws)| ((*d, *a as u8, *b as u8), ws.as_str()))
            .collect();
        let odd: &[(u64, String)] = if exact { &self.odd } else { &[] };
        let mut odd = odd.iter().peekable();
        let extra: usize = self.table.iter().map(|e| e.3.len()).sum();
        let mut out = String::with_capacity(minified.len() + extra.min(1 << 16));
        let mut last = 0usize;
        let mut place = 0u64;
        tokens(minified, |key, gap_at, _| {
            out.push_str(&minified[last..gap_at]);
            last = gap_at;
            match odd.next_if(|(at, _)| *at == place) {
                Some((_, ws)) => out.push_str(ws),
                None => out.push_str(table.get(&key).copied().unwrap_or("")),
            }
            place += 1;
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
        b'"' => after_string(bytes, i + 1),
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
        assert_eq!(layout.apply(&minify(text), true), text);
        let written = serde_json::to_string(&layout).unwrap();
        assert_eq!(serde_json::from_str::<Layout>(&written).unwrap(), layout);
        Some(layout.table.len() + layout.odd.len())
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
    fn a_few_odd_gaps_are_listed_by_their_place() {
        let v: serde_json::Value = serde_json::from_str(
            &serde_json::to_string(
                &(0..200)
                    .map(|i| serde_json::json!({"a": i, "b": [i]}))
                    .collect::<Vec<_>>(),
            )
            .unwrap(),
        )
        .unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        // One space missing, in the first record (its key's first gap) and
        // in a later one; a newline too many.
        for edited in [
            pretty.replacen("\"a\": 0", "\"a\":0", 1),
            pretty.replacen("\"a\": 7", "\"a\":7", 1),
            pretty.replacen("\"b\": [\n      9", "\"b\": [\n\n      9", 1),
        ] {
            assert_ne!(edited, pretty);
            let layout = learn(&edited, 4096).unwrap();
            assert_eq!(layout.odd.len(), 1, "{:?}", layout.odd);
            assert_eq!(layout.apply(&minify(&edited), true), edited);
            // Fewer records: the table alone, the text's usual layout.
            let fewer = minify(&edited).replacen(",{\"a\":199,\"b\":[199]}", "", 1);
            let mut v198 = v.clone();
            v198.as_array_mut().unwrap().pop();
            assert_eq!(
                layout.apply(&fewer, false),
                serde_json::to_string_pretty(&v198).unwrap()
            );
            round_trip(&edited).unwrap();
        }
        // Written as the bare table when no gap is odd, as headers were.
        let regular = learn(&pretty, 4096).unwrap();
        assert!(serde_json::to_string(&regular).unwrap().starts_with("[["));
        let odd = learn(&pretty.replacen("\"a\": 7", "\"a\":7", 1), 4096).unwrap();
        assert!(
            serde_json::to_string(&odd)
                .unwrap()
                .starts_with("{\"table\"")
        );
    }

    #[test]
    fn irregular_or_large_layouts_have_none() {
        let sprinkled: String = (0..400)
            .map(|i| format!("{}{i},", " ".repeat(i * 7 % 13)))
            .collect::<String>();
        let sprinkled = format!("[{}0]", sprinkled);
        assert_eq!(learn(&sprinkled, 4096), None);
        let text = format!("[{}1]", " ".repeat(5000));
        assert!(learn(&text, 4096).is_none());
        assert!(learn(&text, 8192).is_some());
        // Few gaps, each its own: listed while they fit.
        assert_eq!(round_trip("[1, 2,3]"), Some(2));
    }
}
