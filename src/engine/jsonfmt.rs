//! Whitespace-level JSON formatting that never re-serialises a literal.
//!
//! The engine keeps every string and number exactly as the server wrote it
//! (numbers too large for `f64`, `\u` escapes, ...). These helpers only add or
//! remove insignificant whitespace, so `minify(reformat(x)) == x` for any valid
//! JSON text `x`. Inputs must already be valid JSON (the engine validates them
//! with `serde_json` before calling in here).

use serde::{Deserialize, Serialize};

/// Removes all insignificant whitespace from valid JSON text.
pub(crate) fn minify(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    minify_into(src, &mut out);
    out
}

/// Appends the minified form of `src` to `out`.
pub(crate) fn minify_into(src: &str, out: &mut String) {
    let bytes = src.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b' ' | b'\t' | b'\n' | b'\r' => {
                // ASCII positions are always char boundaries.
                out.push_str(&src[run_start..i]);
                run_start = i + 1;
            }
            _ => {}
        }
    }
    out.push_str(&src[run_start..]);
}

/// How a JSON text was laid out by the program that wrote it.
///
/// The common writers all produce one of these: `serde_json::to_string`,
/// `JSON.stringify(v)` (compact), Python's `json.dumps(v)` (compact with
/// spaces), and `serde_json::to_string_pretty`, `JSON.stringify(v, null, n)`,
/// `json.dumps(v, indent=n)` (pretty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Style {
    /// No whitespace at all.
    Compact,
    /// `", "` between items and `": "` between key and value, on one line.
    Spaced,
    /// One item per line, indented by this many spaces, `": "` after keys.
    Indent(u8),
    /// One item per line, indented by tabs.
    Tabs,
}

impl Style {
    /// Candidates tried, most common first.
    const CANDIDATES: [Style; 6] = [
        Style::Compact,
        Style::Indent(2),
        Style::Spaced,
        Style::Indent(4),
        Style::Tabs,
        Style::Indent(1),
    ];

    /// Finds the style that turns `minified` back into exactly `original`.
    pub(crate) fn detect(original: &str, minified: &str) -> Option<Style> {
        if original.len() == minified.len() {
            return (original == minified).then_some(Style::Compact);
        }
        let mut buf = String::with_capacity(original.len());
        for style in Self::CANDIDATES.into_iter().skip(1) {
            buf.clear();
            style.write(minified, &mut buf);
            if buf == original {
                return Some(style);
            }
        }
        None
    }

    /// Lays out minified JSON text in this style.
    pub(crate) fn apply(self, minified: &str) -> String {
        if self == Style::Compact {
            return minified.to_owned();
        }
        let mut out = String::with_capacity(minified.len() + minified.len() / 4);
        self.write(minified, &mut out);
        out
    }

    fn newline(self, out: &mut String, depth: usize) {
        match self {
            Style::Indent(n) => {
                out.push('\n');
                for _ in 0..depth * n as usize {
                    out.push(' ');
                }
            }
            Style::Tabs => {
                out.push('\n');
                for _ in 0..depth {
                    out.push('\t');
                }
            }
            Style::Compact | Style::Spaced => {}
        }
    }

    fn write(self, minified: &str, out: &mut String) {
        let bytes = minified.as_bytes();
        let pretty = matches!(self, Style::Indent(_) | Style::Tabs);
        let mut depth = 0usize;
        let mut i = 0;
        let mut literal_start = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'"' => {
                    // Skip the string literal; it is copied with the literal run.
                    i += 1;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'\\' => i += 2,
                            b'"' => break,
                            _ => i += 1,
                        }
                    }
                    i += 1;
                    continue;
                }
                b'{' | b'[' | b'}' | b']' | b',' | b':' => {
                    out.push_str(&minified[literal_start..i]);
                    literal_start = i + 1;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
            match b {
                b'{' | b'[' => {
                    let close = if b == b'{' { b'}' } else { b']' };
                    if bytes.get(i + 1) == Some(&close) {
                        out.push(b as char);
                        out.push(close as char);
                        i += 2;
                        literal_start = i;
                        continue;
                    }
                    out.push(b as char);
                    depth += 1;
                    self.newline(out, depth);
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.newline(out, depth);
                    out.push(b as char);
                }
                b',' => {
                    out.push(',');
                    if pretty {
                        self.newline(out, depth);
                    } else if self == Style::Spaced {
                        out.push(' ');
                    }
                }
                _ => {
                    out.push(':');
                    if self != Style::Compact {
                        out.push(' ');
                    }
                }
            }
            i += 1;
        }
        out.push_str(&minified[literal_start.min(minified.len())..]);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn trims() {
        assert_eq!(trim_parts("\n [1] \n"), ("\n ", "[1]", " \n"));
        assert_eq!(trim_parts("  "), ("  ", "", ""));
    }
}
