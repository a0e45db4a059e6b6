//! Generators of JSON text with hostile choices: nesting a few hundred
//! levels deep, huge and out-of-range numbers, escapes and lone
//! surrogates, duplicate and escaped keys, thousands of tiny elements, and
//! random whitespace between tokens. Shared by the properties of the
//! library's internals (`mod.rs`) and `tests/fuzz_engine.rs`.

use proptest::prelude::*;
use proptest::sample::select;

/// A JSON value as it will be written: literals and string contents exactly
/// as they appear in the text (escapes included).
#[derive(Debug, Clone)]
pub(super) enum J {
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

pub(super) fn s(text: &str) -> J {
    J::Str(text.to_owned())
}

pub(super) fn lit(text: &str) -> J {
    J::Lit(text.to_owned())
}

pub(super) fn obj(members: Vec<(&str, J)>) -> J {
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
pub(super) fn escaped(text: &str, variant: u8) -> String {
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
pub(super) fn render(j: &J, seed: u64) -> String {
    let mut out = String::new();
    let mut ws = Ws(seed);
    write_j(j, &mut ws, &mut out);
    out
}

/// A whitespace seed: none a third of the time.
pub(super) fn ws_seed() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 2 => 1..u64::MAX]
}

pub(super) fn number() -> BoxedStrategy<String> {
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
pub(super) fn str_contents() -> BoxedStrategy<String> {
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
pub(super) fn key() -> BoxedStrategy<String> {
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

pub(super) fn leaf() -> BoxedStrategy<J> {
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
pub(super) fn json() -> BoxedStrategy<J> {
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
pub(super) fn json_text() -> BoxedStrategy<String> {
    (json(), ws_seed())
        .prop_map(|(j, seed)| render(&j, seed))
        .boxed()
}
