//! The layouts JSON writers produce, and writing minified JSON in one.

use serde::{Deserialize, Serialize};

use super::{Sink, layout, string_end};

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
                    i = string_end(bytes, i + 1);
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
