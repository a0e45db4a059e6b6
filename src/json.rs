//! Whitespace-level JSON formatting that never re-serialises a literal.
//!
//! The engine keeps every string and number exactly as the server wrote it
//! (numbers too large for `f64`, `\u` escapes, ...). These helpers only add or
//! remove insignificant whitespace, so `minify(reformat(x)) == x` for any valid
//! JSON text `x`. Inputs must already be valid JSON (the engine validates them
//! with `serde_json` before calling in here).

pub(crate) mod blocks;
mod check;
#[cfg(test)]
mod corpus;
mod key;
mod layout;
mod style;
mod swar;
mod unescape;
mod validate;
pub(crate) use check::{Check, to_quote_or_backslash};
#[cfg(test)]
pub(crate) use corpus::{GRAMMAR_EDGES, escape_heavy_texts};
pub(crate) use key::Key;
pub(crate) use style::{Style, StyleCheck};
pub(crate) use unescape::{decode_string, escaped};
#[cfg(test)]
pub(crate) use validate::LONG_STRING;
pub(crate) use validate::{Visitor, validate, validate_visiting};

/// Removes all insignificant whitespace from valid JSON text.
pub(crate) fn minify(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    minify_into(src, &mut out);
    out
}

/// Appends the minified form of `src` to `out`.
pub(crate) fn minify_into(src: &str, out: &mut String) {
    minify_to(src, out);
}

/// Writes the minified form of `src` to `sink`, run by run, stopping early
/// once the sink has failed.
fn minify_to(src: &str, sink: &mut impl Sink) {
    let bytes = src.as_bytes();
    let len = bytes.len();
    let mut run_start = 0;
    let mut i = 0;
    while i < len && !sink.failed() {
        match bytes[i] {
            b'"' => i = after_string(bytes, i + 1),
            b' ' | b'\t' | b'\n' | b'\r' => {
                // ASCII positions are always char boundaries.
                sink.put(&src[run_start..i]);
                i += 1;
                while i < len && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
                run_start = i;
            }
            _ => i += 1,
        }
    }
    sink.put(&src[run_start.min(len)..]);
}

/// The escape of one byte in a JSON string, as `serde_json` writes it, or
/// `None` when it stands for itself.
pub(crate) fn escape(b: u8) -> Option<&'static str> {
    const CONTROL: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011",
        "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019",
        "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    ];
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..0x20 => Some(CONTROL[b as usize]),
        _ => None,
    }
}

/// Appends `bytes` escaped as the contents of a JSON string, as
/// `serde_json` would: the runs between escapes copied whole (every escaped
/// byte is ASCII, so a run of UTF-8 text is whole characters).
pub(crate) fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if let Some(e) = escape(b) {
            out.extend_from_slice(&bytes[run..i]);
            out.extend_from_slice(e.as_bytes());
            run = i + 1;
        }
    }
    out.extend_from_slice(&bytes[run..]);
}

/// The index of the quote closing the string whose text starts at `from`
/// (after its opening quote; the byte at `from` not escaped); `None` when
/// `bytes` ends first. The crate's one string scanner, for short keys and
/// long texts alike: from escape to escape, the next [`NEAR`] bytes looked
/// at one by one, then one `memchr2` call (SIMD) over the rest.
pub(crate) fn string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let rest = bytes.get(from..)?;
        let near = &rest[..rest.len().min(NEAR)];
        let p = match near.iter().position(|&b| b == b'"' || b == b'\\') {
            Some(p) => p,
            None => near.len() + memchr::memchr2(b'"', b'\\', &rest[near.len()..])?,
        };
        let at = from + p;
        if bytes[at] == b'"' {
            return Some(at);
        }
        // A backslash escapes the next byte.
        from = at + 2;
    }
}

/// [`string_end`] for a string read a chunk at a time: `Ok` with its
/// closing quote's index in `chunk`, or `Err(escaped)` when the chunk ends
/// first, `escaped` telling whether the next chunk's first byte is escaped
/// (an odd run of backslashes at the end of this one).
pub(crate) fn string_end_in_chunk(chunk: &[u8], from: usize) -> Result<usize, bool> {
    string_end(chunk, from).ok_or_else(|| {
        let run = chunk.get(from..).unwrap_or_default();
        run.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
    })
}

/// Bytes [`string_end`] looks at one by one before it calls `memchr2`. It
/// trades the SIMD search's set-up, paid per call, against a byte loop:
/// keys, short values and text dense in escapes (JSON inside a string, a
/// `\"` every few bytes) end or stop within it; long plain runs go to
/// `memchr2`. Figures in `benches/README.md` (`shapes`).
const NEAR: usize = 16;

/// The position just after the string whose text starts at `from`: its
/// closing quote's, or the end of `bytes` when it is not closed.
pub(crate) fn after_string(bytes: &[u8], from: usize) -> usize {
    string_end(bytes, from).map_or(bytes.len(), |quote| quote + 1)
}

/// Whether arrays and objects in `bytes` nest more than `max` levels deep,
/// brackets inside strings not counted; stopped as soon as it knows. Any
/// bytes will do: a closing bracket with none open counts nothing.
pub(crate) fn nests_deeper(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = after_string(bytes, i + 1);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where [`Style::write`] puts its output.
trait Sink {
    fn put(&mut self, s: &str);
    /// An ASCII byte.
    fn put_byte(&mut self, b: u8);
    /// Whether writing on is pointless.
    fn failed(&self) -> bool {
        false
    }
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
    fn put_byte(&mut self, b: u8) {
        self.push(char::from(b));
    }
}

/// Compares what is written with an expected text, allocating nothing.
struct Compare<'o> {
    rest: &'o [u8],
    ok: bool,
}

impl Sink for Compare<'_> {
    fn put(&mut self, s: &str) {
        match self.rest.strip_prefix(s.as_bytes()) {
            Some(rest) if self.ok => self.rest = rest,
            _ => self.ok = false,
        }
    }
    fn put_byte(&mut self, b: u8) {
        match self.rest.split_first() {
            Some((&first, rest)) if self.ok && first == b => self.rest = rest,
            _ => self.ok = false,
        }
    }
    fn failed(&self) -> bool {
        !self.ok
    }
}

/// Whether `src` (valid JSON) has no insignificant whitespace: what
/// [`minifies_to`]`(src, src)` answers, in one walk with nothing compared.
pub(crate) fn is_minified(src: &str) -> bool {
    let bytes = src.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => i = after_string(bytes, i + 1),
            b' ' | b'\t' | b'\n' | b'\r' => return false,
            _ => i += 1,
        }
    }
    true
}

/// Whether minifying `src` (valid JSON) gives exactly `minified`, without
/// building the minified text.
pub(crate) fn minifies_to(src: &str, minified: &str) -> bool {
    let mut cmp = Compare {
        rest: minified.as_bytes(),
        ok: true,
    };
    minify_to(src, &mut cmp);
    cmp.ok && cmp.rest.is_empty()
}

/// Byte range of `inner` inside `outer`; `inner` must borrow from `outer`
/// (a raw value parsed out of it), which makes the offset exact.
pub(crate) fn range_in(outer: &str, inner: &str) -> std::ops::Range<usize> {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    start..start + inner.len()
}

/// Splits `text` into leading whitespace, core and trailing whitespace.
pub(crate) fn trim_parts(text: &str) -> (&str, &str, &str) {
    let is_ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let core_start = text.len() - text.trim_start_matches(is_ws).len();
    let core_end = text.trim_end_matches(is_ws).len().max(core_start);
    (
        &text[..core_start],
        &text[core_start..core_end],
        &text[core_end..],
    )
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    // Serialising a `&str` cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minified_is_what_minify_leaves_alone() {
        for src in [
            r#"{"a":[1,2],"b":"x y"}"#,
            r#"{"a": 1}"#,
            "[1,\n2]",
            r#"["\" ", "\\"]"#,
            r#"["\" \\","z"]"#,
            r#""  ""#,
            "[ ]",
            "7",
        ] {
            assert_eq!(is_minified(src), minify(src) == src, "{src}");
        }
    }

    #[test]
    fn minify_keeps_literals() {
        let src =
            "{ \"a b\" : [ 1 , 2.50e3 , \"x \\\" y\" ] ,\n \"n\":123456789012345678901234567890 }";
        assert_eq!(
            minify(src),
            "{\"a b\":[1,2.50e3,\"x \\\" y\"],\"n\":123456789012345678901234567890}"
        );
    }

    #[test]
    fn detects_the_writers_we_meet() {
        let v = json!({"a": [1, {"b": [], "c": {}}, "s, t: u"], "d": null, "e": "{[,:]}"});
        let min = serde_json::to_string(&v).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        assert_eq!(Style::detect(&min, &min), Some(Style::Compact));
        assert_eq!(Style::detect(&pretty, &min), Some(Style::Indent(2)));
        assert_eq!(Style::Indent(2).apply(&min), pretty);
        let spaced = Style::Spaced.apply(&min);
        assert!(spaced.starts_with("{\"a\": [1, {\"b\": [], \"c\": {}}, \"s, t: u\"]"));
        assert_eq!(Style::detect(&spaced, &min), Some(Style::Spaced));
        assert_eq!(Style::detect("{ \"a\":1}", "{\"a\":1}"), None);
    }

    #[test]
    fn minifies_to_compares_without_building() {
        let src = " { \"a b\" : [ 1 , \"x \\\" y\" ] } ";
        assert!(minifies_to(src, &minify(src)));
        assert!(!minifies_to(src, "{\"a b\":[1]}"));
        assert!(!minifies_to(src, &(minify(src) + " ")));
        assert!(minifies_to("[]", "[]"));
    }

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert!(!nests_deeper(br#"[["]]]]]\"[[[["]]"#, 2));
        assert!(nests_deeper(b"[[[1]]]", 2));
        assert!(!nests_deeper(b"[[1]]", 2));
        assert!(!nests_deeper(b"[\"[[[", 2));
        assert!(!nests_deeper(b"]]][[", 2));
    }

    #[test]
    fn trims() {
        assert_eq!(trim_parts("\n [1] \n"), ("\n ", "[1]", " \n"));
        assert_eq!(trim_parts("  "), ("  ", "", ""));
    }
}
