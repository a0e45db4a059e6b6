//! Fuzz suite (issue 16, point 8): property-based fuzzing, with proptest,
//! of the code that reads what servers and clients send — the SSE splitter
//! and data rewriting (`wire::sse`), JSON-RPC classification and response
//! reading (`wire::jsonrpc`), the result parser (`wire::mcp`), the engine
//! (`Offloader::process`, checked against `rebuild_file`) and the JSON
//! helpers (`json::minify`, `minify_outline`, `Style`). The rewriter,
//! through the public API, is fuzzed in `tests/fuzz_layer.rs`.
//!
//! The generators aim at hostile shapes: nesting a few hundred levels deep
//! (past `serde_json`'s recursion limit of 128, which raw values do not
//! have), huge and out-of-range numbers, escapes and lone surrogates
//! (`\ud800`), duplicate and escaped keys, thousands of tiny records, and
//! CR, LF and CRLF line ends mixed with empty lines; each JSON text is laid
//! out with random whitespace. Every target also runs on arbitrary bytes.
//!
//! # Running it
//!
//! Everything runs on stable, with plain `cargo test`, for a bounded number
//! of cases per target: `LRO_FUZZ_CASES` (default [`DEFAULT_CASES`]) for the
//! cheap targets, a fraction of it for the engine. To fuzz for longer:
//!
//! ```text
//! LRO_FUZZ_CASES=100000 cargo test --release --lib fuzz
//! LRO_FUZZ_CASES=20000 cargo test --release --test fuzz_layer
//! ```
//!
//! (`--release` also turns off the crate's `debug_assertions` cross-checks
//! — `RawResult::check_fast`, the outline-versus-parse check of the record
//! shapes — so run a long one in a debug build too.) Each run draws a new
//! random seed; `PROPTEST_RNG_SEED=<n>` replays one. A case slower than
//! `LRO_FUZZ_SLOW_MS` milliseconds (default 10 000) fails as slow.
//!
//! Inputs found crashing or slow are kept at the end of this file as plain
//! `#[test]`s (`regression_*`) holding the literal input. While a bug found
//! is not fixed, its regression test is `#[ignore]`d and the properties skip
//! inputs of its shape (the `known_bug_*` functions), so the suite stays
//! green on CI; `LRO_FUZZ_KNOWN_BUGS=1` stops skipping them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::json::{Style, minifies_to, minify, minify_outline};
use crate::wire::jsonrpc::{Found, Reply, Watched, classify, find_results, read_reply};
use crate::wire::mcp::{BlockOut, RawResult};
use crate::wire::sse::{EventSplitter, event_data, replace_data};
use crate::{OffloadConfig, OffloadResponse, Offloader, Outcome, ToolCall};

// ---------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------

/// Cases per cheap target when `LRO_FUZZ_CASES` is not set.
const DEFAULT_CASES: u32 = 256;

/// `LRO_FUZZ_CASES`, divided by `cost` (at least one case).
fn cases(cost: u32) -> u32 {
    let base = std::env::var("LRO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(DEFAULT_CASES);
    (base / cost).max(1)
}

/// The configuration of a target costing `cost` cheap cases per case. No
/// failure file is written: what is found becomes a named test below.
fn config(cost: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(cost),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

/// A case slower than this fails.
fn slow_limit() -> Duration {
    let ms = std::env::var("LRO_FUZZ_SLOW_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(10_000);
    Duration::from_millis(ms)
}

/// Runs one case's check, failing it when it is slow.
fn timed(check: impl FnOnce() -> Result<(), TestCaseError>) -> Result<(), TestCaseError> {
    let start = Instant::now();
    check()?;
    let took = start.elapsed();
    prop_assert!(took < slow_limit(), "slow input: {took:?}");
    Ok(())
}

/// Whether inputs of known, unfixed bugs are skipped (see the module docs).
fn skip_known_bugs() -> bool {
    std::env::var("LRO_FUZZ_KNOWN_BUGS").map_or(true, |v| v != "1")
}

// ---------------------------------------------------------------------------
// JSON values, written out with hostile choices
// ---------------------------------------------------------------------------

/// A JSON value as it will be written: literals and string contents exactly
/// as they appear in the text (escapes included).
#[derive(Debug, Clone)]
enum J {
    /// `null`, `true`, `false` or a number, as written.
    Lit(String),
    /// The contents of a string literal, escaped as written.
    Str(String),
    Arr(Vec<J>),
    /// Members in order; keys are string contents as written (may repeat).
    Obj(Vec<(String, J)>),
    /// `inner` wrapped in `levels` arrays (or single-member objects).
    Deep(u16, bool, Box<J>),
}

fn s(text: &str) -> J {
    J::Str(text.to_owned())
}

fn lit(text: &str) -> J {
    J::Lit(text.to_owned())
}

fn obj(members: Vec<(&str, J)>) -> J {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// The contents of a string literal holding `text` (escaped as
/// `serde_json` does, then, when `variant` is odd, with some characters
/// written as `\u` escapes and `/` as `\/`).
fn escaped(text: &str, variant: u8) -> String {
    let literal = serde_json::to_string(text).unwrap_or_default();
    let inner = &literal[1..literal.len() - 1];
    if variant.is_multiple_of(2) {
        return inner.to_owned();
    }
    let mut out = String::with_capacity(inner.len() + 16);
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                if let Some(n) = chars.next() {
                    out.push(n);
                    if n == 'u' {
                        out.extend(chars.by_ref().take(4));
                    }
                }
            }
            '/' => out.push_str("\\/"),
            'a' | 'e' | '{' | '[' | ',' | ':' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            'é' | '中' => out.push_str(&format!("\\u{:04X}", c as u32)),
            '🎉' => out.push_str("\\ud83c\\udf89"),
            c => out.push(c),
        }
    }
    out
}

/// Whitespace between tokens, drawn from a seed (0: none at all).
struct Ws(u64);

impl Ws {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn gap(&mut self, out: &mut String) {
        if self.0 == 0 {
            return;
        }
        out.push_str(match self.next() % 16 {
            0 => " ",
            1 => "\n",
            2 => "\r\n",
            3 => "\t",
            4 => "  \n\t ",
            5 => "\r",
            _ => "",
        });
    }
}

fn write_j(j: &J, ws: &mut Ws, out: &mut String) {
    match j {
        J::Lit(l) => out.push_str(l),
        J::Str(c) => {
            out.push('"');
            out.push_str(c);
            out.push('"');
        }
        J::Arr(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    ws.gap(out);
                    out.push(',');
                }
                ws.gap(out);
                write_j(item, ws, out);
            }
            ws.gap(out);
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (n, (k, v)) in members.iter().enumerate() {
                if n > 0 {
                    ws.gap(out);
                    out.push(',');
                }
                ws.gap(out);
                out.push('"');
                out.push_str(k);
                out.push('"');
                ws.gap(out);
                out.push(':');
                ws.gap(out);
                write_j(v, ws, out);
            }
            ws.gap(out);
            out.push('}');
        }
        J::Deep(levels, objects, inner) => {
            for _ in 0..*levels {
                out.push_str(if *objects { "{\"d\":" } else { "[" });
                ws.gap(out);
            }
            write_j(inner, ws, out);
            for _ in 0..*levels {
                ws.gap(out);
                out.push(if *objects { '}' } else { ']' });
            }
        }
    }
}

/// `j` as JSON text, laid out from `seed`.
fn render(j: &J, seed: u64) -> String {
    let mut out = String::new();
    let mut ws = Ws(seed);
    write_j(j, &mut ws, &mut out);
    out
}

/// A whitespace seed: none a third of the time.
fn ws_seed() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 2 => 1..u64::MAX]
}

fn number() -> BoxedStrategy<String> {
    prop_oneof![
        3 => any::<i64>().prop_map(|n| n.to_string()),
        3 => "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,4})?",
        1 => any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:e}")),
        2 => select(&[
            "0", "-0", "1e999", "-1e999", "1E-400", "18446744073709551616",
            "-9223372036854775809", "0.1e1", "123456789012345678901234567890.5e-3",
            "1E+2", "-0.0e-0", "4.9e-324", "1.7976931348623157e308",
        ][..])
        .prop_map(String::from),
    ]
    .boxed()
}

/// The contents of a string literal, as written.
fn str_contents() -> BoxedStrategy<String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-zA-Z0-9 _,:\\[\\]{}]{1,8}",
            2 => "\\PC{1,4}".prop_map(|p| p.replace('\\', "\\\\").replace('"', "\\\"")),
            2 => select(&[
                "\\n", "\\r", "\\r\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\u0000",
                "\\u001f", "\\u00e9", "\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u2028",
                "\\ud800\\ud800", "\\uDBFF\\uDFFF", "\\u005c", "\\u0022",
            ][..])
            .prop_map(String::from),
            1 => select(&[
                "中", "🎉", "é", "\u{2028}", "\u{feff}", "\u{7f}", "tools/call", "proxy",
                "data: ", "result", "\u{10ffff}",
            ][..])
            .prop_map(String::from),
        ],
        0..8,
    )
    .prop_map(|pieces| pieces.concat())
    .boxed()
}

/// Object keys: the names the code looks for (some escaped), and others.
fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(&[
            "id", "jsonrpc", "method", "params", "result", "error", "content", "type", "text",
            "structuredContent", "_meta", "isError", "name", "arguments", "items", "task",
            "taskId", "a", "", "con\\u0074ent", "\\u0069d", "res\\u0075lt", "t\\u0065xt",
            "memories", "rows",
        ][..])
        .prop_map(String::from),
        1 => str_contents(),
    ]
    .boxed()
}

fn leaf() -> BoxedStrategy<J> {
    prop_oneof![
        1 => Just(lit("null")),
        1 => Just(lit("true")),
        1 => Just(lit("false")),
        3 => number().prop_map(J::Lit),
        4 => str_contents().prop_map(J::Str),
    ]
    .boxed()
}

/// Any JSON value, hostile shapes included.
fn json() -> BoxedStrategy<J> {
    leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                4 => prop::collection::vec(inner.clone(), 0..6).prop_map(J::Arr),
                4 => prop::collection::vec((key(), inner.clone()), 0..6).prop_map(J::Obj),
                1 => (1u16..400, any::<bool>(), inner)
                    .prop_map(|(levels, objects, j)| J::Deep(levels, objects, Box::new(j))),
                1 => (0usize..1500, leaf()).prop_map(|(n, j)| J::Arr(vec![j; n])),
            ]
        })
        .boxed()
}

/// JSON text: a value laid out with random whitespace.
fn json_text() -> BoxedStrategy<String> {
    (json(), ws_seed())
        .prop_map(|(j, seed)| render(&j, seed))
        .boxed()
}

// ---------------------------------------------------------------------------
// A reference reading of JSON: literals as written, strings as UTF-16 code
// units (so lone surrogates compare), any depth, duplicate keys kept.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tree {
    Null,
    Bool(bool),
    Num(String),
    Str(Vec<u16>),
    Arr(Vec<Tree>),
    Obj(Vec<(Vec<u16>, Tree)>),
}

/// A `Tree` compared as JSON: objects are maps (the last duplicate wins).
#[derive(Debug, PartialEq)]
enum Canon {
    Null,
    Bool(bool),
    Num(String),
    Str(Vec<u16>),
    Arr(Vec<Canon>),
    Obj(BTreeMap<Vec<u16>, Canon>),
}

impl Tree {
    fn canon(&self) -> Canon {
        match self {
            Tree::Null => Canon::Null,
            Tree::Bool(b) => Canon::Bool(*b),
            Tree::Num(n) => Canon::Num(n.clone()),
            Tree::Str(s) => Canon::Str(s.clone()),
            Tree::Arr(items) => Canon::Arr(items.iter().map(Tree::canon).collect()),
            Tree::Obj(members) => Canon::Obj(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.canon()))
                    .collect(),
            ),
        }
    }

    /// The member `key` (its last occurrence).
    fn get(&self, key: &str) -> Option<&Tree> {
        let key: Vec<u16> = key.encode_utf16().collect();
        match self {
            Tree::Obj(members) => members.iter().rev().find(|(k, _)| *k == key).map(|m| &m.1),
            _ => None,
        }
    }

    /// Whether `key` appears more than once among this object's members.
    fn repeats(&self, key: &str) -> bool {
        let key: Vec<u16> = key.encode_utf16().collect();
        match self {
            Tree::Obj(members) => members.iter().filter(|(k, _)| *k == key).count() > 1,
            _ => false,
        }
    }

    /// A string's value, when it has no lone surrogate.
    fn as_string(&self) -> Option<String> {
        match self {
            Tree::Str(units) => String::from_utf16(units).ok(),
            _ => None,
        }
    }

    /// As `serde_json` reads it as a member of a top-level object (`None`
    /// where it refuses: lone surrogates, numbers out of range, more than
    /// 127 more levels of nesting).
    fn to_value(&self) -> Option<Value> {
        self.to_value_at(127)
    }

    /// `depth`: the levels `serde_json` may still enter.
    fn to_value_at(&self, depth: usize) -> Option<Value> {
        if matches!(self, Tree::Arr(_) | Tree::Obj(_)) && depth == 0 {
            return None;
        }
        Some(match self {
            Tree::Null => Value::Null,
            Tree::Bool(b) => Value::Bool(*b),
            Tree::Num(n) => serde_json::from_str(n).ok()?,
            Tree::Str(_) => Value::String(self.as_string()?),
            Tree::Arr(items) => Value::Array(
                items
                    .iter()
                    .map(|i| i.to_value_at(depth - 1))
                    .collect::<Option<_>>()?,
            ),
            Tree::Obj(members) => {
                let mut map = serde_json::Map::new();
                for (k, v) in members {
                    map.insert(String::from_utf16(k).ok()?, v.to_value_at(depth - 1)?);
                }
                Value::Object(map)
            }
        })
    }
}

/// Reads valid JSON text (checked with `serde_json`, whose raw values have
/// no depth limit) into a [`Tree`]; `None` for invalid text.
fn tree(text: &str) -> Option<Tree> {
    serde_json::from_str::<&RawValue>(text).ok()?;
    let mut p = TreeParser { s: text, i: 0 };
    let t = p.value();
    Some(t)
}

/// `text` compared as JSON.
fn canon(text: &str) -> Option<Canon> {
    tree(text).map(|t| t.canon())
}

/// A recursive-descent reader of text already known to be valid JSON.
struct TreeParser<'a> {
    s: &'a str,
    i: usize,
}

impl TreeParser<'_> {
    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Tree {
        self.ws();
        let b = self.s.as_bytes();
        match b[self.i] {
            b'n' => {
                self.i += 4;
                Tree::Null
            }
            b't' => {
                self.i += 4;
                Tree::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Tree::Bool(false)
            }
            b'"' => Tree::Str(self.string()),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if b[self.i] == b']' {
                    self.i += 1;
                    return Tree::Arr(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    let c = b[self.i];
                    self.i += 1;
                    if c == b']' {
                        return Tree::Arr(items);
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if b[self.i] == b'}' {
                    self.i += 1;
                    return Tree::Obj(members);
                }
                loop {
                    self.ws();
                    let k = self.string();
                    self.ws();
                    self.i += 1; // ':'
                    let v = self.value();
                    members.push((k, v));
                    self.ws();
                    let c = b[self.i];
                    self.i += 1;
                    if c == b'}' {
                        return Tree::Obj(members);
                    }
                }
            }
            _ => {
                let start = self.i;
                while self.i < b.len()
                    && matches!(b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                Tree::Num(self.s[start..self.i].to_owned())
            }
        }
    }

    /// A string literal starting at the quote, as UTF-16 code units.
    fn string(&mut self) -> Vec<u16> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i..].chars().next().unwrap_or('"');
            self.i += c.len_utf8();
            match c {
                '"' => return out,
                '\\' => {
                    let e = self.s.as_bytes()[self.i];
                    self.i += 1;
                    match e {
                        b'n' => out.push(u16::from(b'\n')),
                        b'r' => out.push(u16::from(b'\r')),
                        b't' => out.push(u16::from(b'\t')),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = &self.s[self.i..self.i + 4];
                            out.push(u16::from_str_radix(hex, 16).unwrap_or(0));
                            self.i += 4;
                        }
                        other => out.push(u16::from(other)),
                    }
                }
                c => {
                    let mut buf = [0u16; 2];
                    out.extend_from_slice(c.encode_utf16(&mut buf));
                }
            }
        }
    }
}

/// `a` and `b` are equal as JSON (both valid).
fn same_json(a: &str, b: &str) -> Result<(), TestCaseError> {
    let ca = canon(a);
    prop_assert!(ca.is_some(), "not JSON: {:.300}", a);
    let cb = canon(b);
    prop_assert!(cb.is_some(), "not JSON: {:.300}", b);
    prop_assert!(ca == cb, "not equal as JSON:\n{:.600}\n{:.600}", a, b);
    Ok(())
}

/// [`same_json`], a text block's text that holds JSON (or JSON lines)
/// compared by the JSON it holds, not its layout.
fn same_json_but_layout(a: &str, b: &str) -> Result<(), TestCaseError> {
    let (Some(ta), Some(tb)) = (tree(a), tree(b)) else {
        return Err(TestCaseError::fail("not JSON"));
    };
    let (ca, cb) = (texts_as_json(ta).canon(), texts_as_json(tb).canon());
    prop_assert!(
        ca == cb,
        "not equal as JSON, texts read as JSON:\n{:.600}\n{:.600}",
        a,
        b
    );
    Ok(())
}

/// The result with each block's text (or `resource.text`) read as JSON, or
/// as JSON lines (an array of them), where it is.
fn texts_as_json(t: Tree) -> Tree {
    let as_json = |t: Tree| -> Tree {
        let Some(text) = t.as_string() else { return t };
        if let Some(parsed) = tree(&text) {
            return parsed;
        }
        let lines: Option<Vec<Tree>> = text
            .split('\n')
            .filter(|l| !l.trim().is_empty())
            .map(tree)
            .collect();
        lines.map_or(t, Tree::Arr)
    };
    let map = |t: Tree, key: &str, f: &dyn Fn(Tree) -> Tree| match t {
        Tree::Obj(members) => Tree::Obj(
            members
                .into_iter()
                .map(
                    |(k, v)| match String::from_utf16(&k).ok().as_deref() == Some(key) {
                        true => (k, f(v)),
                        false => (k, v),
                    },
                )
                .collect(),
        ),
        other => other,
    };
    let block = |b: Tree| {
        let b = map(b, "text", &as_json);
        map(b, "resource", &|r| map(r, "text", &as_json))
    };
    map(t, "content", &|c| match c {
        Tree::Arr(blocks) => Tree::Arr(blocks.into_iter().map(block).collect()),
        other => other,
    })
}

// ---------------------------------------------------------------------------
// Tool results
// ---------------------------------------------------------------------------

fn line_end() -> BoxedStrategy<&'static str> {
    select(&["\n", "\r\n", "\r", "\n\n", "\r\n\r\n", "", "\n"][..]).boxed()
}

/// The (decoded) text of a text block.
fn text_payload() -> BoxedStrategy<String> {
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
fn block() -> BoxedStrategy<J> {
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
fn structured() -> BoxedStrategy<J> {
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
fn tool_result_j() -> BoxedStrategy<J> {
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
fn tool_result() -> BoxedStrategy<String> {
    (tool_result_j(), ws_seed())
        .prop_map(|(j, seed)| render(&j, seed))
        .boxed()
}

/// An edit of a byte string.
#[derive(Debug, Clone)]
enum Edit {
    Set(Index, u8),
    Insert(Index, u8),
    Delete(Index),
    Truncate(Index),
    /// Copies a range over another place (a structural splice).
    Splice(Index, Index, Index),
}

fn edit() -> BoxedStrategy<Edit> {
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

fn apply_edits(bytes: &mut Vec<u8>, edits: &[Edit]) {
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
fn mutated_result() -> BoxedStrategy<Vec<u8>> {
    (tool_result(), prop::collection::vec(edit(), 1..4))
        .prop_map(|(text, edits)| {
            let mut bytes = text.into_bytes();
            apply_edits(&mut bytes, &edits);
            bytes
        })
        .boxed()
}

// ---------------------------------------------------------------------------
// Server-sent events: a reference reading
// ---------------------------------------------------------------------------

/// The lines of an event: content and terminator (CRLF, LF or CR; the last
/// line may have none).
fn ref_lines(event: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < event.len() {
        let term = match event[i] {
            b'\n' => 1,
            b'\r' if event.get(i + 1) == Some(&b'\n') => 2,
            b'\r' => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        out.push((&event[start..i], &event[i..i + term]));
        i += term;
        start = i;
    }
    if start < event.len() {
        out.push((&event[start..], &event[event.len()..]));
    }
    out
}

/// A stream cut into events (each up to and including its blank line) and
/// what follows the last one, reading a CR at the very end as a line end
/// (the stream is over: no LF can follow it).
fn ref_split(stream: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut events = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    for (content, term) in ref_lines(stream) {
        let content_start = content.as_ptr() as usize - stream.as_ptr() as usize;
        let end = content_start + content.len() + term.len();
        if term.is_empty() {
            break;
        }
        if content_start == line_start && content.is_empty() {
            events.push(&stream[start..end]);
            start = end;
        }
        line_start = end;
    }
    (events, &stream[start..])
}

/// Whether a line is a `data` field.
fn is_data_line(line: &[u8]) -> bool {
    if line.is_empty() || line[0] == b':' {
        return false;
    }
    let name = match line.iter().position(|&b| b == b':') {
        Some(p) => &line[..p],
        None => line,
    };
    name == b"data"
}

/// The event's data, as the SSE specification reads it: the values of its
/// `data` lines (one leading space dropped) joined by LF.
fn ref_event_data(event: &[u8]) -> Option<Vec<u8>> {
    let values: Vec<&[u8]> = ref_lines(event)
        .into_iter()
        .filter(|(l, _)| is_data_line(l))
        .map(|(l, _)| {
            let v = l
                .iter()
                .position(|&b| b == b':')
                .map_or(&l[l.len()..], |p| &l[p + 1..]);
            v.strip_prefix(b" ").unwrap_or(v)
        })
        .collect();
    (!values.is_empty()).then(|| values.join(&b'\n'))
}

fn sse_line() -> BoxedStrategy<Vec<u8>> {
    let content = prop_oneof![
        4 => select(&[
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "data:", "data", "data:  x",
            "id: 7", "event: message", "retry: 10", ": comment", ":", "", "", "", "dat",
            "data :x", "DATA: x", "data: \u{feff}x", "data:x:y", "data: 中",
        ][..])
        .prop_map(|l| l.as_bytes().to_vec()),
        2 => "data: [^\r\n]{0,30}".prop_map(String::into_bytes),
        1 => "[ -~]{0,20}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..10),
    ];
    const ENDS: &[&[u8]] = &[b"\n", b"\r", b"\r\n", b"\n", b"\n", b"\r\n"];
    (content, select(ENDS))
        .prop_map(|(mut line, end)| {
            line.extend_from_slice(end);
            line
        })
        .boxed()
}

/// A byte stream that is mostly SSE.
fn sse_stream() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..300),
        1 => prop::collection::vec(select(&b"\r\n\r\n:da \x00\xff"[..]), 0..200),
        5 => (prop::collection::vec(sse_line(), 0..40), prop::option::of("[ -~]{0,10}"))
            .prop_map(|(lines, tail)| {
                let mut out = lines.concat();
                out.extend_from_slice(tail.unwrap_or_default().as_bytes());
                out
            }),
    ]
    .boxed()
}

/// `bytes` cut at `cuts`.
fn cut(bytes: &[u8], cuts: &[Index]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::with_capacity(at.len() + 1);
    let mut start = 0;
    for c in at.into_iter().chain([bytes.len()]) {
        out.push(bytes[start..c].to_vec());
        start = c;
    }
    out
}

// ---------------------------------------------------------------------------
// Known bugs (see the module docs): inputs of these shapes are skipped by
// the properties until the bug is fixed.
// ---------------------------------------------------------------------------

/// `replace_data` drops the data lines after the first with their line
/// ends: when the line written before a dropped one ends with a lone CR and
/// the line kept after it is empty and ends with LF, the CR and the LF
/// would join into one CRLF line end and the event's blank line would be
/// lost (`data: a\rdata: b\n\n` became `data: X\r\n`). Fixed: that blank
/// line is now written with CRLF. The properties' models expect every kept
/// line end unchanged, so they still skip this shape; the two regression
/// tests (`regression_replace_data_keeps_the_blank_line_after_a_cr_data_line`
/// here, `regression_a_rewritten_event_keeps_its_blank_line` in
/// `tests/fuzz_layer.rs`) check it.
fn known_bug_cr_joins_lf(event: &[u8]) -> bool {
    let expected = expected_lines(event, b"x");
    let joined: Vec<u8> = expected
        .iter()
        .flat_map(|(l, t)| [&l[..], &t[..]].concat())
        .collect();
    let again: Vec<(Vec<u8>, Vec<u8>)> = ref_lines(&joined)
        .into_iter()
        .map(|(l, t)| (l.to_vec(), t.to_vec()))
        .collect();
    again != expected
}

/// The lines `replace_data(event, data)` should have: every line with its
/// terminator, in order, but the data lines: one `data: {data}` line where
/// the first was.
fn expected_lines(event: &[u8], data: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut done = false;
    for (l, t) in ref_lines(event) {
        if is_data_line(l) {
            if !done {
                let mut line = b"data: ".to_vec();
                line.extend_from_slice(data);
                let t = if t.is_empty() { &b"\n"[..] } else { t };
                out.push((line, t.to_vec()));
                done = true;
            }
        } else {
            out.push((l.to_vec(), t.to_vec()));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Splits `chunks` with the splitter, as the rewriter does, and checks it
/// against the reference reading of their concatenation.
fn check_splitter(chunks: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let input: Vec<u8> = chunks.concat();
    let mut splitter = EventSplitter::default();
    let mut events: Vec<Bytes> = Vec::new();
    for c in chunks {
        splitter.push(c);
        while let Some(e) = splitter.next_event() {
            events.push(e);
        }
    }
    for e in &events {
        // Each event is one event: whole (or its last CR, decided by the
        // byte after it, is not yet known to be a line end on its own).
        prop_assert!(
            EventSplitter::is_one_event(e) || e.ends_with(b"\r"),
            "not one event: {:?}",
            String::from_utf8_lossy(e)
        );
    }
    let held = splitter.buffered();
    let last = splitter.finish_event();
    if let Some(last) = &last {
        prop_assert_eq!(last.len(), held);
        prop_assert_eq!(splitter.buffered(), 0);
        events.push(last.clone());
    }
    let rest = splitter.take_rest();
    prop_assert_eq!(splitter.buffered(), 0);
    let (ref_events, ref_rest) = ref_split(&input);
    let got: Vec<&[u8]> = events.iter().map(|e| &e[..]).collect();
    prop_assert_eq!(&got, &ref_events, "events");
    prop_assert_eq!(&rest[..], ref_rest, "rest");
    let mut joined: Vec<u8> = events.concat();
    joined.extend_from_slice(&rest);
    prop_assert_eq!(joined, input, "events and rest are the input");
    Ok(())
}

/// `ends_at_boundary` and `is_one_event` agree with the reference reading.
fn check_boundaries(chunk: &[u8]) -> Result<(), TestCaseError> {
    // The streaming reading: a final CR is not a line end yet.
    let streaming = |bytes: &[u8]| -> (usize, usize) {
        let mut s = EventSplitter::default();
        s.push(bytes);
        let mut n = 0;
        while s.next_event().is_some() {
            n += 1;
        }
        (n, s.buffered())
    };
    if EventSplitter::ends_at_boundary(chunk) {
        prop_assert_eq!(
            streaming(chunk).1,
            0,
            "a chunk at a boundary leaves nothing"
        );
    }
    let one = EventSplitter::is_one_event(chunk);
    prop_assert_eq!(one, streaming(chunk) == (1, 0), "is_one_event");
    Ok(())
}

/// `event_data` and `replace_data` on one event.
fn check_event_data(event: &[u8], data: &[u8]) -> Result<(), TestCaseError> {
    let bytes = Bytes::copy_from_slice(event);
    let got = event_data(&bytes);
    let expected = ref_event_data(event);
    prop_assert_eq!(got.as_deref(), expected.as_deref(), "event_data");
    let out = replace_data(event, data);
    let Some(_) = expected else {
        prop_assert_eq!(&out[..], event, "an event without data is kept");
        return Ok(());
    };
    if skip_known_bugs() && known_bug_cr_joins_lf(event) {
        return Ok(());
    }
    let expected_lines = expected_lines(event, data);
    let got_lines: Vec<(Vec<u8>, Vec<u8>)> = ref_lines(&out)
        .into_iter()
        .map(|(l, t)| (l.to_vec(), t.to_vec()))
        .collect();
    prop_assert_eq!(&got_lines, &expected_lines, "lines of the rewritten event");
    let new_data = event_data(&out);
    prop_assert_eq!(new_data.as_deref(), Some(data), "the new data");
    // One whole event stays one whole event.
    let (events, rest) = ref_split(event);
    if events.len() == 1 && rest.is_empty() {
        let (out_events, out_rest) = ref_split(&out);
        prop_assert!(
            out_events.len() == 1 && out_rest.is_empty(),
            "one event became {} events and {} bytes: {:?}",
            out_events.len(),
            out_rest.len(),
            String::from_utf8_lossy(&out)
        );
    }
    Ok(())
}

/// `minify`, `minify_outline`, `minifies_to` and `Style` on valid JSON.
fn check_minify(text: &str) -> Result<(), TestCaseError> {
    let Some(original) = tree(text) else {
        return Ok(());
    };
    let m = minify(text);
    same_json(&m, text)?;
    prop_assert_eq!(minify(&m), m.clone(), "minified twice");
    prop_assert!(minifies_to(text, &m));
    let longer = format!("{m} ");
    prop_assert!(!minifies_to(text, &longer));
    let (m2, outline) = minify_outline(text);
    prop_assert_eq!(&m2, &m, "minify_outline minifies");
    let slice = |r: &std::ops::Range<usize>| -> Result<Tree, TestCaseError> {
        prop_assert!(
            r.start <= r.end && r.end <= m.len(),
            "range {:?} out of {}",
            r,
            m.len()
        );
        prop_assert!(m.is_char_boundary(r.start) && m.is_char_boundary(r.end));
        let t = tree(&m[r.clone()]);
        prop_assert!(
            t.is_some(),
            "range {:?} is not JSON: {:.200}",
            r,
            &m[r.clone()]
        );
        Ok(t.unwrap_or(Tree::Null))
    };
    match &original {
        Tree::Arr(items) => {
            prop_assert_eq!(outline.top, b'[');
            let got = outline
                .elements
                .iter()
                .map(slice)
                .collect::<Result<Vec<_>, _>>()?;
            prop_assert_eq!(&got, items, "top-level elements");
        }
        Tree::Obj(members) => {
            prop_assert_eq!(outline.top, b'{');
            prop_assert_eq!(outline.members.len(), members.len());
            for (member, (k, v)) in outline.members.iter().zip(members) {
                prop_assert_eq!(&slice(&member.key)?, &Tree::Str(k.clone()), "key");
                let value = slice(&member.value)?;
                prop_assert_eq!(&value, v, "value");
                let elements = member
                    .elements
                    .iter()
                    .map(slice)
                    .collect::<Result<Vec<_>, _>>()?;
                match v {
                    Tree::Arr(items) => prop_assert_eq!(&elements, items, "member elements"),
                    _ => prop_assert!(elements.is_empty()),
                }
            }
        }
        _ => prop_assert_eq!(outline.top, 0),
    }
    if let Some(style) = Style::detect(text, &m) {
        prop_assert_eq!(style.apply(&m), text, "detected style {:?}", style);
    }
    for style in [
        Style::Compact,
        Style::Spaced,
        Style::Indent(2),
        Style::Indent(4),
        Style::Tabs,
        Style::Indent(1),
    ] {
        let laid_out = style.apply(&m);
        same_json(&laid_out, &m)?;
        prop_assert_eq!(minify(&laid_out), m.clone());
        let again = Style::detect(&laid_out, &m);
        prop_assert!(again.is_some(), "{:?} not detected", style);
        prop_assert_eq!(again.map(|s| s.apply(&m)), Some(laid_out));
    }
    Ok(())
}

/// `RawResult::parse` never panics; what it accepts it writes back equal.
fn check_parse(text: &str) -> Result<(), TestCaseError> {
    let Ok(parsed) = RawResult::parse(text) else {
        return Ok(());
    };
    let _ = parsed.structured();
    let blocks: Vec<BlockOut<'_>> = (0..parsed.blocks.len()).map(BlockOut::Original).collect();
    let written = parsed.write(&blocks, None);
    same_json(&written, text)?;
    for (i, b) in parsed.blocks.iter().enumerate() {
        if let Some(t) = &b.text {
            let again = parsed.write(&[BlockOut::WithText(i, Some(t))], None);
            prop_assert!(canon(&again).is_some());
        }
    }
    Ok(())
}

/// A shared output directory for the engine's files.
fn out_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// The engine on one result: never panics; an offloaded result is a valid
/// `CallToolResult` with the descriptor first, its file rebuilds the input
/// exactly, and its top-level fields other than `content` and
/// `structuredContent` are kept.
fn check_engine(
    dir: &std::path::Path,
    bytes: &[u8],
    threshold: usize,
    offload_errors: bool,
) -> Result<(), TestCaseError> {
    let offloader = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir)
            .threshold_tokens(threshold)
            .offload_errors(offload_errors),
    );
    let outcome = offloader.process(&ToolCall::new("fuzz_tool", None), bytes);
    let off = match outcome {
        Ok(Outcome::Offloaded(off)) => off,
        Ok(Outcome::Inline(_)) | Err(_) => return Ok(()),
        Ok(Outcome::Truncated(t)) => {
            return Err(TestCaseError::fail(format!(
                "the write failed: {}",
                t.error
            )));
        }
    };
    let input = std::str::from_utf8(bytes);
    prop_assert!(input.is_ok(), "offloaded bytes that are not UTF-8");
    let input = input.unwrap_or_default();
    // The file alone rebuilds it, unless its header leaves large kept
    // parts to the rewritten result; the two together always do.
    let file = std::fs::read_to_string(&off.file.path).unwrap_or_default();
    let alone = crate::rebuild_file(&off.file.path);
    let checked = offloader.rebuild_file(&off.file.path);
    let _ = std::fs::remove_file(&off.file.path);
    let rebuilt = crate::rebuild_with(&file, &off.result);
    prop_assert!(rebuilt.is_ok(), "rebuild failed: {:?}", rebuilt.err());
    let rebuilt = rebuilt.unwrap_or_default();
    match (alone, checked) {
        (Ok(alone), Ok(checked)) => {
            prop_assert_eq!(&alone, &rebuilt);
            prop_assert_eq!(&checked, &rebuilt);
        }
        (
            Err(crate::RebuildError::NeedsRewrittenResult),
            Err(crate::RebuildError::NeedsRewrittenResult),
        ) => {}
        (a, c) => prop_assert!(
            false,
            "rebuild from the file: {:?} / {:?}",
            a.err(),
            c.err()
        ),
    }
    if same_json(&rebuilt, input).is_err() {
        // A large JSON text laid out irregularly comes back compact.
        same_json_but_layout(&rebuilt, input)?;
    }
    // The rewritten result.
    let rewritten = RawResult::parse(&off.result);
    prop_assert!(rewritten.is_ok(), "rewritten result: {:?}", rewritten.err());
    let rewritten = rewritten.map_err(|e| TestCaseError::fail(e.to_string()))?;
    // The descriptor stands where the first offloaded block stood.
    let descriptor = rewritten
        .blocks
        .iter()
        .filter_map(|b| b.text.as_deref())
        .find_map(|t| serde_json::from_str::<OffloadResponse>(t).ok());
    let Some(d) = descriptor else {
        return Err(TestCaseError::fail(format!(
            "no descriptor: {:.300}",
            off.result
        )));
    };
    prop_assert!(d.offloaded);
    prop_assert_eq!(d.jq_recipes.len(), 10);
    prop_assert_eq!(d.file_path, off.file.path.to_string_lossy());
    let (Some(before), Some(after)) = (tree(input), tree(&off.result)) else {
        return Err(TestCaseError::fail("not JSON"));
    };
    if let Tree::Obj(members) = &before {
        for (k, _) in members {
            let name = String::from_utf16_lossy(k);
            if name == "content" || name == "structuredContent" {
                continue;
            }
            prop_assert_eq!(
                before.get(&name).map(Tree::canon),
                after.get(&name).map(Tree::canon),
                "top-level field {:?} kept",
                name
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// JSON-RPC requests and responses
// ---------------------------------------------------------------------------

fn client_info() -> BoxedStrategy<J> {
    prop_oneof![
        4 => (select(&["true", "false", "\"true\"", "1", "null", "true "][..]), any::<bool>())
            .prop_map(|(flag, dup)| {
                let mut m = vec![("name", s("c")), ("proxy", lit(flag.trim()))];
                if dup {
                    m.push(("pro\\u0078y", lit("true")));
                }
                obj(m)
            }),
        1 => json(),
    ]
    .boxed()
}

fn params() -> BoxedStrategy<J> {
    let name = prop_oneof![
        4 => select(&["fuzz_tool", "t\\u00e9", "recall_memories", ""][..]).prop_map(s),
        2 => str_contents().prop_map(J::Str),
        1 => json(),
    ];
    let member = prop_oneof![
        3 => json().prop_map(|v| ("arguments".to_owned(), v)),
        2 => (client_info(), any::<bool>()).prop_map(|(ci, escaped_key)| {
            let k = if escaped_key {
                "io.modelcontextprotocol\\/clientInfo"
            } else {
                "io.modelcontextprotocol/clientInfo"
            };
            ("_meta".to_owned(), obj(vec![(k, ci)]))
        }),
        1 => client_info().prop_map(|ci| ("clientInfo".to_owned(), ci)),
        1 => prop_oneof![str_contents().prop_map(J::Str), json()]
            .prop_map(|v| ("taskId".to_owned(), v)),
        1 => prop_oneof![Just(lit("null")), json()].prop_map(|v| ("task".to_owned(), v)),
        1 => (key(), json()),
        1 => json().prop_map(|v| ("name".to_owned(), v)),
    ];
    prop_oneof![
        6 => (prop::option::weighted(0.85, name), prop::collection::vec(member, 0..4), any::<u8>())
            .prop_map(|(name, others, order)| {
                let mut members: Vec<(String, J)> = name.map(|n| ("name".to_owned(), n)).into_iter().collect();
                members.extend(others);
                if !members.is_empty() {
                    let n = members.len();
                    members.rotate_left(usize::from(order) % n);
                }
                J::Obj(members)
            }),
        1 => json(),
    ]
    .boxed()
}

/// A JSON-RPC request (or something close to one).
fn request() -> BoxedStrategy<J> {
    let id = prop_oneof![
        3 => number().prop_map(J::Lit),
        3 => str_contents().prop_map(J::Str),
        1 => Just(lit("null")),
        1 => json(),
    ];
    let method = prop_oneof![
        8 => select(&["tools/call", "tools\\/call", "\\u0074ools/call", "tasks/result"][..])
            .prop_map(s),
        3 => select(&[
            "initialize", "tools/list", "notifications/progress", "tools/call ", "Tools/call",
        ][..])
        .prop_map(s),
        1 => json(),
    ];
    (
        prop::option::weighted(0.9, id),
        prop::option::weighted(0.95, method),
        prop::option::weighted(0.9, params()),
        prop::collection::vec((key(), json()), 0..2),
        any::<u8>(),
    )
        .prop_map(|(id, method, params, extra, order)| {
            let mut members = vec![("jsonrpc".to_owned(), s("2.0"))];
            members.extend(id.map(|v| ("id".to_owned(), v)));
            members.extend(method.map(|v| ("method".to_owned(), v)));
            members.extend(params.map(|v| ("params".to_owned(), v)));
            members.extend(extra);
            let n = members.len();
            members.rotate_left(usize::from(order) % n);
            J::Obj(members)
        })
        .boxed()
}

/// A request body: one request, a batch, or anything.
fn request_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => (request(), ws_seed()).prop_map(|(r, seed)| render(&r, seed).into_bytes()),
        2 => (prop::collection::vec(request(), 0..5), ws_seed())
            .prop_map(|(rs, seed)| render(&J::Arr(rs), seed).into_bytes()),
        1 => (json_text(), select(&["", " ", "\u{feff}", "\x0c", "\n\r\t"][..]))
            .prop_map(|(t, lead)| format!("{lead}{t}").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => (request(), ws_seed(), prop::collection::vec(edit(), 1..3)).prop_map(
            |(r, seed, edits)| {
                let mut b = render(&r, seed).into_bytes();
                apply_edits(&mut b, &edits);
                b
            }
        ),
    ]
    .boxed()
}

/// What `classify` should find in one request, read from its [`Tree`]
/// (`None`: the model cannot tell, e.g. a member `serde_json` refuses).
#[derive(Debug, Default, PartialEq)]
struct Expected {
    watched: Vec<(Value, ExpectedWatch)>,
    proxy: bool,
}

#[derive(Debug, PartialEq)]
enum ExpectedWatch {
    Call {
        name: String,
        arguments: Option<Canon>,
        task: bool,
    },
    TaskResult(String),
}

/// The members a JSON-RPC reader reads: an object (never an array read
/// positionally), none of those members repeated (keys it does not read,
/// lone surrogates included, are skipped).
fn readable_struct(t: &Tree, fields: &[&str]) -> bool {
    matches!(t, Tree::Obj(_)) && fields.iter().all(|f| !t.repeats(f))
}

/// `clientInfo.proxy` is exactly `true`.
fn proxy_flag(client_info: Option<&Tree>) -> bool {
    client_info
        .filter(|c| readable_struct(c, &["proxy"]))
        .and_then(|c| c.get("proxy"))
        .is_some_and(|p| *p == Tree::Bool(true))
}

/// The model of `classify_one`. `None` when `serde_json` refuses the id
/// (the request is then skipped entirely, which is modelled) — kept as
/// `Some(default)` — or when the model is unsure.
fn expect_one(r: &Tree, out: &mut Expected) {
    if !readable_struct(r, &["id", "method", "params"]) {
        return;
    }
    // `id` is read as a `Value`: one it refuses makes the request unreadable.
    let id = match r.get("id") {
        None | Some(Tree::Null) => None,
        Some(t) => match t.to_value() {
            Some(v) => Some(v),
            None => return,
        },
    };
    let Some(method) = r.get("method").and_then(Tree::as_string) else {
        return;
    };
    let params = r.get("params").filter(|p| {
        readable_struct(
            p,
            &["name", "arguments", "_meta", "clientInfo", "taskId", "task"],
        )
    });
    let member = |k: &str| params.and_then(|p| p.get(k)).filter(|v| **v != Tree::Null);
    let meta_info = member("_meta")
        .filter(|m| readable_struct(m, &["io.modelcontextprotocol/clientInfo"]))
        .and_then(|m| m.get("io.modelcontextprotocol/clientInfo"))
        .filter(|v| **v != Tree::Null);
    if proxy_flag(meta_info) {
        out.proxy = true;
    }
    if method == "initialize" {
        if proxy_flag(member("clientInfo")) {
            out.proxy = true;
        }
        return;
    }
    let Some(id) = id.filter(|id| id.is_string() || id.is_number()) else {
        return;
    };
    match method.as_str() {
        "tools/call" => {
            let Some(name) = member("name").and_then(Tree::as_string) else {
                return;
            };
            out.watched.push((
                id,
                ExpectedWatch::Call {
                    name,
                    arguments: member("arguments").map(Tree::canon),
                    task: member("task").is_some(),
                },
            ));
        }
        "tasks/result" => {
            let task = member("taskId")
                .and_then(Tree::as_string)
                .unwrap_or_default();
            out.watched.push((id, ExpectedWatch::TaskResult(task)));
        }
        _ => {}
    }
}

/// `classify` never panics, watches only string and number ids, and agrees
/// with the model on bodies it can read.
fn check_classify(body: &[u8]) -> Result<(), TestCaseError> {
    let classified = classify(&Bytes::copy_from_slice(body));
    for (id, _) in &classified.watched {
        prop_assert!(id.is_string() || id.is_number(), "watched id {}", id);
    }
    let Some(t) = std::str::from_utf8(body).ok().and_then(tree) else {
        prop_assert!(classified.watched.is_empty() && !classified.proxy);
        return Ok(());
    };
    let requests: Vec<&Tree> = match &t {
        Tree::Obj(_) => vec![&t],
        Tree::Arr(items) => items.iter().collect(),
        _ => vec![],
    };
    let mut expected = Expected::default();
    requests.iter().for_each(|r| expect_one(r, &mut expected));
    let got: Vec<(Value, ExpectedWatch)> = classified
        .watched
        .iter()
        .map(|(id, w)| {
            let w = match w {
                Watched::Call { call, task } => ExpectedWatch::Call {
                    name: call.name.clone(),
                    arguments: call
                        .arguments
                        .as_deref()
                        .and_then(|a| std::str::from_utf8(a).ok())
                        .and_then(canon),
                    task: *task,
                },
                Watched::TaskResult(task) => ExpectedWatch::TaskResult(task.clone()),
            };
            (id.clone(), w)
        })
        .collect();
    prop_assert_eq!(&got, &expected.watched, "watched requests");
    prop_assert_eq!(classified.proxy, expected.proxy, "proxy flag");
    Ok(())
}

/// A JSON-RPC message a server sends.
fn message() -> BoxedStrategy<J> {
    let id = prop_oneof![
        3 => number().prop_map(J::Lit),
        3 => str_contents().prop_map(J::Str),
        1 => Just(lit("null")),
        1 => json(),
    ];
    let body = prop_oneof![
        4 => tool_result_j().prop_map(|r| ("result".to_owned(), r)),
        1 => json().prop_map(|r| ("result".to_owned(), r)),
        1 => json().prop_map(|e| ("error".to_owned(), e)),
        1 => json().prop_map(|p| ("params".to_owned(), p)),
    ];
    (
        prop::option::weighted(0.9, id),
        prop::option::weighted(
            0.15,
            select(&["notifications/progress", "sampling/createMessage"][..]),
        ),
        prop::collection::vec(body, 1..3),
        any::<u8>(),
    )
        .prop_map(|(id, method, bodies, order)| {
            let mut members = vec![("jsonrpc".to_owned(), s("2.0"))];
            members.extend(id.map(|v| ("id".to_owned(), v)));
            members.extend(method.map(|m| ("method".to_owned(), s(m))));
            members.extend(bodies);
            let n = members.len();
            members.rotate_left(usize::from(order) % n);
            J::Obj(members)
        })
        .boxed()
}

/// A response body: one message, a batch, or anything.
fn response_body() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (message(), ws_seed()).prop_map(|(m, seed)| render(&m, seed)),
        2 => (prop::collection::vec(message(), 0..4), ws_seed())
            .prop_map(|(ms, seed)| render(&J::Arr(ms), seed)),
        1 => json_text(),
        1 => prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => (message(), ws_seed(), prop::collection::vec(edit(), 1..3)).prop_map(
            |(m, seed, edits)| {
                let mut b = render(&m, seed).into_bytes();
                apply_edits(&mut b, &edits);
                String::from_utf8_lossy(&b).into_owned()
            }
        ),
    ]
    .boxed()
}

/// What `read_reply` should say of one message (`None`: unsure).
fn expect_reply(m: &Tree) -> Option<Option<(Value, Option<Canon>)>> {
    // Not an object, a repeated member, an id `serde_json` refuses: not
    // one JSON-RPC message, no result.
    if !readable_struct(m, &["id", "method", "result"]) {
        return Some(None);
    }
    let id = match m.get("id") {
        None | Some(Tree::Null) => None,
        Some(t) => match t.to_value() {
            Some(v) => Some(v),
            None => return Some(None),
        },
    };
    let method = m.get("method").filter(|v| **v != Tree::Null);
    let result = m.get("result").filter(|v| **v != Tree::Null);
    match (id, method) {
        (Some(id), None) => Some(Some((id, result.map(Tree::canon)))),
        _ => Some(None),
    }
}

/// `find_results` and `read_reply`: ranges inside the body, on character
/// boundaries, each one JSON value; agreeing with the model where it can
/// tell.
fn check_find_results(body: &str) -> Result<(), TestCaseError> {
    let found = find_results(body);
    let mut results = Vec::new();
    for f in &found {
        if let Found::Result { id, range } = f {
            prop_assert!(
                range.start <= range.end && range.end <= body.len(),
                "{:?}",
                range
            );
            prop_assert!(body.is_char_boundary(range.start) && body.is_char_boundary(range.end));
            let raw = &body[range.clone()];
            let t = canon(raw);
            prop_assert!(t.is_some(), "result range not JSON: {:.200}", raw);
            results.push((id.clone(), t));
        }
    }
    let reply = read_reply(body);
    if let Reply::Result { result, .. } = &reply {
        prop_assert!(canon(result.get()).is_some());
    }
    // The model, on bodies without surprises.
    let Some(t) = tree(body) else {
        return Ok(());
    };
    let messages: Vec<&Tree> = match &t {
        Tree::Arr(items) if body.trim_start().starts_with('[') => items.iter().collect(),
        other => vec![other],
    };
    let mut expected = Vec::new();
    for m in messages {
        match expect_reply(m) {
            None => return Ok(()),
            Some(Some((id, Some(result)))) => expected.push((id, Some(result))),
            Some(_) => {}
        }
    }
    prop_assert_eq!(results, expected, "results found");
    Ok(())
}

// ---------------------------------------------------------------------------
// The targets
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1))]

    /// The splitter, fed arbitrary bytes in arbitrary chunks.
    #[test]
    fn fuzz_sse_splitter(input in sse_stream(), cuts in prop::collection::vec(any::<Index>(), 0..12)) {
        timed(|| check_splitter(&cut(&input, &cuts)))?;
    }

    /// Every chunk cut into single bytes: the splitter resumes at each.
    #[test]
    fn fuzz_sse_splitter_byte_by_byte(input in sse_stream()) {
        let chunks: Vec<Vec<u8>> = input.iter().map(|&b| vec![b]).collect();
        timed(|| check_splitter(&chunks))?;
    }

    #[test]
    fn fuzz_sse_boundaries(chunk in sse_stream()) {
        timed(|| check_boundaries(&chunk))?;
    }

    /// `event_data` and `replace_data` on the events of a stream (and on
    /// the unfinished one at its end).
    #[test]
    fn fuzz_sse_event_data(input in sse_stream(), data in "[^\r\n]{0,40}") {
        timed(|| {
            let (events, rest) = ref_split(&input);
            for e in events.iter().copied().chain([rest]) {
                check_event_data(e, data.as_bytes())?;
            }
            Ok(())
        })?;
    }

    #[test]
    fn fuzz_classify_bytes(body in prop::collection::vec(any::<u8>(), 0..512)) {
        timed(|| check_classify(&body))?;
    }

    #[test]
    fn fuzz_classify_requests(body in request_body()) {
        timed(|| check_classify(&body))?;
    }

    #[test]
    fn fuzz_find_results(body in response_body()) {
        timed(|| check_find_results(&body))?;
    }

    #[test]
    fn fuzz_minify(text in json_text()) {
        timed(|| check_minify(&text))?;
    }

    /// Arbitrary text: no panic (the helpers require valid JSON; the engine
    /// checks before calling them, but a panic here would still be a
    /// hazard).
    #[test]
    fn fuzz_minify_arbitrary(text in "\\PC{0,80}|[\" \\\\\\[\\]{},:\n]{0,40}") {
        let _ = minify(&text);
        let _ = minify_outline(&text);
        let _ = minifies_to(&text, "[]");
    }

    #[test]
    fn fuzz_parse_results(text in tool_result()) {
        timed(|| check_parse(&text))?;
    }

    #[test]
    fn fuzz_parse_mutated(bytes in mutated_result()) {
        timed(|| check_parse(&String::from_utf8_lossy(&bytes)))?;
    }

    #[test]
    fn fuzz_parse_arbitrary(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        timed(|| check_parse(&String::from_utf8_lossy(&bytes)))?;
    }
}

proptest! {
    // The engine writes a file per case: a quarter of the cases.
    #![proptest_config(config(4))]

    #[test]
    fn fuzz_engine_results(text in tool_result(), threshold in 1usize..64, errors in any::<bool>()) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), text.as_bytes(), threshold, errors))?;
    }

    #[test]
    fn fuzz_engine_mutated(bytes in mutated_result(), threshold in 1usize..64, errors in any::<bool>()) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), &bytes, threshold, errors))?;
    }

    #[test]
    fn fuzz_engine_arbitrary(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), &bytes, 1, true))?;
    }
}

// ---------------------------------------------------------------------------
// Regressions: inputs the fuzzing found, kept literally
// ---------------------------------------------------------------------------

/// Found by `fuzz_sse_event_data`: the first data line ends with a lone CR,
/// the second with LF, then the blank line; `replace_data` drops the second
/// data line with its LF, so the CR and the blank line's LF become one CRLF
/// and the event loses its end.
#[test]
fn regression_replace_data_keeps_the_blank_line_after_a_cr_data_line() {
    let event = b"data: a\rdata: b\n\n";
    assert_eq!(ref_split(event), (vec![&event[..]], &b""[..]), "one event");
    let out = replace_data(event, b"{}");
    let (events, rest) = ref_split(&out);
    assert!(
        events.len() == 1 && rest.is_empty(),
        "one event in, {} events and {:?} out: {:?}",
        events.len(),
        String::from_utf8_lossy(rest),
        String::from_utf8_lossy(&out)
    );
    // A field line between the data lines: the same.
    let event = b"data: a\nid: 7\rdata: b\n\n";
    let out = replace_data(event, b"{}");
    assert_eq!(
        ref_split(&out).0.len(),
        1,
        "{:?}",
        String::from_utf8_lossy(&out)
    );
}

/// Found by `fuzz_classify_requests`: a member the layer does not read,
/// whose key is a lone surrogate escape, makes the whole `tools/call`
/// unreadable, so its result is never evaluated.
#[test]
fn regression_a_lone_surrogate_key_does_not_hide_a_tools_call() {
    let body = br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"fuzz_tool"},"\ud800":null}"#;
    let c = classify(&Bytes::from_static(body));
    assert_eq!(c.watched.len(), 1, "{c:?}");
    let body =
        br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"t","x\udfff":1}}"#;
    assert_eq!(classify(&Bytes::from_static(body)).watched.len(), 1);
    let reply = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"\ud800":0}"#;
    assert!(matches!(read_reply(reply), Reply::Result { .. }));
}

/// Found by `fuzz_find_results`: an array inside a batch is read as a
/// message, its elements taken as `id`, `method`, `result` in order
/// (`[[true,null,true]]` was a result for id `true`); requests and the
/// client information alike.
#[test]
fn regression_arrays_are_not_messages() {
    assert!(find_results("[[true,null,true]]").is_empty());
    assert!(find_results(r#"[[7,null,{"content":[]}]]"#).is_empty());
    let batch = br#"[[7,"tools/call",{"name":"t"}]]"#;
    assert!(classify(&Bytes::from_static(batch)).watched.is_empty());
    let positional_flag = br#"{"id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":[true]}}}"#;
    assert!(!classify(&Bytes::from_static(positional_flag)).proxy);
    let positional_meta =
        br#"{"id":1,"method":"initialize","params":{"clientInfo":[true],"x":"\n"}}"#;
    assert!(!classify(&Bytes::from_static(positional_meta)).proxy);
}
