//! The layouts JSON writers produce, and writing minified JSON in one.

use serde::{Deserialize, Serialize};

use super::{Sink, after_string, layout, string_end_in_chunk};

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
    /// Each candidate is compared as it is laid out, without building it.
    pub(crate) fn detect(original: &str, minified: &str) -> Option<Style> {
        if original.len() == minified.len() {
            return (original == minified).then_some(Style::Compact);
        }
        Self::CANDIDATES
            .into_iter()
            .skip(1)
            .find(|style| style.lays_out(original, minified))
    }

    /// [`detect`](Self::detect) for a text still escaped as the inside of
    /// a JSON string (as `serde_json` escapes), and the whitespace bytes
    /// the style adds; `None` also when `minified` has whitespace.
    pub(crate) fn detect_escaped(escaped: &str, minified: &str) -> Option<(Style, usize)> {
        Self::CANDIDATES.into_iter().find_map(|style| {
            layout::lays_out_escaped(style, escaped, minified).map(|spaces| (style, spaces))
        })
    }

    /// Whether this style turns `minified` into exactly `original`,
    /// compared as it is laid out, without building it.
    pub(crate) fn lays_out(self, original: &str, minified: &str) -> bool {
        if self == Style::Compact {
            return original == minified;
        }
        layout::lays_out(self, original, minified)
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

    fn newline(self, out: &mut impl Sink, depth: usize) {
        match self {
            Style::Indent(n) => {
                out.put_byte(b'\n');
                for _ in 0..depth * n as usize {
                    out.put_byte(b' ');
                }
            }
            Style::Tabs => {
                out.put_byte(b'\n');
                for _ in 0..depth {
                    out.put_byte(b'\t');
                }
            }
            Style::Compact | Style::Spaced => {}
        }
    }

    fn write(self, minified: &str, out: &mut impl Sink) {
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
                    i = after_string(bytes, i + 1);
                    continue;
                }
                b'{' | b'[' | b'}' | b']' | b',' | b':' => {
                    if out.failed() {
                        return;
                    }
                    out.put(&minified[literal_start..i]);
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
                        out.put_byte(b);
                        out.put_byte(close);
                        i += 2;
                        literal_start = i;
                        continue;
                    }
                    out.put_byte(b);
                    depth += 1;
                    self.newline(out, depth);
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.newline(out, depth);
                    out.put_byte(b);
                }
                b',' => {
                    out.put_byte(b',');
                    if pretty {
                        self.newline(out, depth);
                    } else if self == Style::Spaced {
                        out.put_byte(b' ');
                    }
                }
                _ => {
                    out.put_byte(b':');
                    if self != Style::Compact {
                        out.put_byte(b' ');
                    }
                }
            }
            i += 1;
        }
        out.put(&minified[literal_start.min(minified.len())..]);
    }
}

/// Which [`Style`] lays out a JSON text too large to hold, fed a chunk at
/// a time: the text's whitespace checked against what each style would
/// put between the same two bytes, the styles that disagree dropped. The
/// text must be one valid JSON value with no whitespace around it.
pub(crate) struct StyleCheck {
    /// The styles still possible, in [`Style::CANDIDATES`] order.
    alive: Vec<Style>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The last byte outside strings and whitespace (`0`: none yet).
    prev: u8,
    /// The whitespace since `prev`.
    run: Vec<u8>,
}

/// Longest whitespace run looked at (deeper is laid out by no writer).
const RUN_MAX: usize = 1 << 16;

impl Default for StyleCheck {
    fn default() -> Self {
        StyleCheck {
            alive: Style::CANDIDATES.into_iter().skip(1).collect(),
            depth: 0,
            in_string: false,
            escaped: false,
            prev: 0,
            run: Vec::new(),
        }
    }
}

impl StyleCheck {
    /// The next bytes of the text: a string's bytes stepped over to its
    /// closing quote in one search, and only the bytes with whitespace
    /// before them or a bracket, comma or colon beside them checked
    /// against the styles (between two bytes of one number or literal
    /// every style puts nothing).
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() {
            if self.alive.is_empty() {
                return;
            }
            if self.in_string {
                if self.escaped {
                    (self.escaped, i) = (false, i + 1);
                    continue;
                }
                match string_end_in_chunk(chunk, i) {
                    Ok(quote) => (self.in_string, i) = (false, quote + 1),
                    Err(escaped) => (self.escaped, i) = (escaped, chunk.len()),
                }
                continue;
            }
            let b = chunk[i];
            i += 1;
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                match self.run.len() < RUN_MAX {
                    true => self.run.push(b),
                    false => self.alive.clear(),
                }
                continue;
            }
            let inside_literal = self.run.is_empty()
                && !matches!(self.prev, b'{' | b'[' | b',' | b':')
                && !matches!(b, b'}' | b']');
            if !inside_literal {
                self.between(b);
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            self.prev = b;
            self.run.clear();
        }
    }

    /// Drops the styles that would not put `self.run` between `self.prev`
    /// and `next`.
    fn between(&mut self, next: u8) {
        let (prev, depth, run) = (self.prev, self.depth, &self.run);
        let empty = matches!((prev, next), (b'{', b'}') | (b'[', b']'));
        self.alive.retain(|&style| {
            let pretty = matches!(style, Style::Indent(_) | Style::Tabs);
            match prev {
                _ if empty => run.is_empty(),
                b'{' | b'[' => newline_is(style, run, depth),
                _ if matches!(next, b'}' | b']') => newline_is(style, run, depth - 1),
                b',' if pretty => newline_is(style, run, depth),
                b',' | b':' => run == b" ",
                _ => run.is_empty(),
            }
        });
    }

    /// The style found: the first candidate that laid out every byte, as
    /// [`Style::detect`] would find it.
    pub(crate) fn style(&self) -> Option<Style> {
        self.alive.first().copied()
    }
}

/// Whether `run` is what `style` writes for a new line at `depth`.
fn newline_is(style: Style, run: &[u8], depth: usize) -> bool {
    let (unit, n) = match style {
        Style::Indent(n) => (b' ', n as usize * depth),
        Style::Tabs => (b'\t', depth),
        Style::Compact | Style::Spaced => return run.is_empty(),
    };
    run.len() == n + 1 && run[0] == b'\n' && run[1..].iter().all(|&b| b == unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every style laid over every value of the grammar corpus is found
    /// again fed a byte at a time and whole; compact text matches none.
    #[test]
    fn the_streamed_check_finds_what_detect_finds() {
        let values = [
            r#"{"a":[1,2,{"b":[]}],"c":{},"d":"x, y: {z}","e":[[["deep"]]]}"#,
            r#"[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}]"#,
            r#"{"s":"quote \" and \\ backslash","n":null}"#,
            r#"[{"a":"\\\\\"","b":-1.5e3,"c":true},{"a":"\\","b":[false,null,12]}]"#,
        ];
        for minified in values {
            for style in Style::CANDIDATES.into_iter().skip(1) {
                let text = style.apply(minified);
                assert_eq!(Style::detect(&text, minified), Some(style));
                let mut whole = StyleCheck::default();
                whole.feed(text.as_bytes());
                for size in [1, 2, 3, 7] {
                    let mut pieces = StyleCheck::default();
                    text.as_bytes().chunks(size).for_each(|c| pieces.feed(c));
                    assert_eq!(
                        (whole.style(), pieces.style()),
                        (Some(style), Some(style)),
                        "{text} in pieces of {size}"
                    );
                }
            }
            let mut compact = StyleCheck::default();
            compact.feed(minified.as_bytes());
            assert_eq!(compact.style(), None);
            let mut odd = StyleCheck::default();
            odd.feed(
                Style::Indent(2)
                    .apply(minified)
                    .replacen("\n  ", "\n   ", 1)
                    .as_bytes(),
            );
            assert_eq!(odd.style(), None);
        }
    }
}
