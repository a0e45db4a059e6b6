//! Whether a text is exactly minified JSON laid out in a [`Style`], found
//! in one walk of both texts side by side, nothing built.
//!
//! A text block that copies `structuredContent` can be megabytes; this is
//! the compare that tells it is a copy. A string literal, most of the
//! bytes, is compared whole; an indentation as one run; the structural
//! bytes one by one, with no call per byte.
//!
//! [`lays_out_escaped`] compares the text as it stands in the result, a
//! JSON string escaped as `serde_json` escapes it, so that a copy is found
//! without decoding it first.

use super::{Style, to_quote_or_backslash};

/// What a style writes around the structural bytes of minified JSON.
#[derive(Clone, Copy)]
struct Spacing {
    /// The byte written after `:`, and after `,` when `line` is `None`.
    after_colon: Option<u8>,
    after_comma: Option<u8>,
    /// One item per line: the byte an indentation level is made of, and
    /// how many of them.
    line: Option<(u8, usize)>,
}

impl Spacing {
    fn of(style: Style) -> Spacing {
        let (after_colon, after_comma, line) = match style {
            Style::Compact => (None, None, None),
            Style::Spaced => (Some(b' '), Some(b' '), None),
            Style::Indent(n) => (Some(b' '), None, Some((b' ', usize::from(n)))),
            Style::Tabs => (Some(b' '), None, Some((b'\t', 1))),
        };
        Spacing {
            after_colon,
            after_comma,
            line,
        }
    }
}

/// The two texts, walked side by side.
struct Walk<'a> {
    original: &'a [u8],
    minified: &'a [u8],
    /// Next byte of `original`.
    o: usize,
    /// Next byte of `minified`.
    m: usize,
    /// `original` is the text escaped as the inside of a JSON string.
    escaped: bool,
    /// Whitespace bytes the layout added so far.
    spaces: usize,
}

/// Whether `style` lays `minified` (valid minified JSON) out as exactly
/// `original`; the same answer as writing it out and comparing.
pub(super) fn lays_out(style: Style, original: &str, minified: &str) -> bool {
    let mut walk = Walk::new(original, minified, false);
    walk.run(Spacing::of(style))
}

/// The whitespace bytes `style` adds to `minified` (valid JSON) when
/// `escaped`, the inside of a JSON string literal, is exactly that layout
/// escaped as `serde_json` escapes a string (`\"`, `\\`, `\n`, `\t`,
/// anything else as it is); `None` when it is not, or when `minified` is
/// not minified after all. What decoding `escaped`, then [`lays_out`],
/// answers for text written by `serde_json`, without the decoding.
pub(super) fn lays_out_escaped(style: Style, escaped: &str, minified: &str) -> Option<usize> {
    let mut walk = Walk::new(escaped, minified, true);
    walk.run(Spacing::of(style)).then_some(walk.spaces)
}

impl<'a> Walk<'a> {
    fn new(original: &'a str, minified: &'a str, escaped: bool) -> Self {
        Walk {
            original: original.as_bytes(),
            minified: minified.as_bytes(),
            o: 0,
            m: 0,
            escaped,
            spaces: 0,
        }
    }

    /// The walk over the whole of both texts.
    fn run(&mut self, spacing: Spacing) -> bool {
        let mut depth = 0usize;
        while let Some(&b) = self.minified.get(self.m) {
            let ok = match b {
                b'"' => self.string(),
                b'{' | b'[' => self.open(b, &mut depth, spacing),
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.line_break(depth, spacing) && self.byte(b)
                }
                b',' => self.byte(b',') && self.after_comma(depth, spacing),
                b':' => self.byte(b':') && self.expect(spacing.after_colon),
                // Whitespace in `minified`: not minified, no answer.
                b' ' | b'\t' | b'\n' | b'\r' if self.escaped => false,
                _ => self.byte(b),
            };
            if !ok {
                return false;
            }
        }
        self.o == self.original.len()
    }
}

impl Walk<'_> {
    /// `original` goes on with byte `b`, the next of `minified`.
    fn byte(&mut self, b: u8) -> bool {
        self.m += 1;
        self.put(b)
    }

    /// `original` goes on with the whitespace `b`, if any.
    fn expect(&mut self, b: Option<u8>) -> bool {
        let Some(b) = b else { return true };
        self.spaces += 1;
        self.put(b)
    }

    /// `original` goes on with byte `b` of the laid-out text (escaped, when
    /// `original` is).
    fn put(&mut self, b: u8) -> bool {
        let escape = match b {
            _ if !self.escaped => None,
            b'"' | b'\\' => Some(b),
            b'\n' => Some(b'n'),
            b'\t' => Some(b't'),
            _ => None,
        };
        if let Some(e) = escape {
            let same = self.original.get(self.o..self.o + 2) == Some(&[b'\\', e][..]);
            self.o += 2;
            return same;
        }
        let same = self.original.get(self.o) == Some(&b);
        self.o += 1;
        same
    }

    /// An opening bracket: an empty container stays on its line, any other
    /// opens a level.
    fn open(&mut self, b: u8, depth: &mut usize, spacing: Spacing) -> bool {
        let close = if b == b'{' { b'}' } else { b']' };
        if self.minified.get(self.m + 1) == Some(&close) {
            return self.byte(b) && self.byte(close);
        }
        *depth += 1;
        self.byte(b) && self.line_break(*depth, spacing)
    }

    fn after_comma(&mut self, depth: usize, spacing: Spacing) -> bool {
        match spacing.line {
            Some(_) => self.line_break(depth, spacing),
            None => self.expect(spacing.after_comma),
        }
    }

    /// A newline and the indentation of `depth`, in a style with lines.
    fn line_break(&mut self, depth: usize, spacing: Spacing) -> bool {
        let Some((pad, width)) = spacing.line else {
            return true;
        };
        let n = depth * width;
        self.spaces += 1 + n;
        if self.escaped {
            if !self.put(b'\n') {
                return false;
            }
            if pad == b'\t' {
                return (0..n).all(|_| self.put(pad));
            }
        } else if !self.put(b'\n') {
            return false;
        }
        let same = self
            .original
            .get(self.o..self.o + n)
            .is_some_and(|indent| indent.iter().all(|&p| p == pad));
        self.o += n;
        same
    }

    /// The string literal that starts at `minified[m]`, the same in
    /// `original`: its end looked for, then compared whole (escaped: run by
    /// run between the quotes and backslashes, each escaped once more).
    fn string(&mut self) -> bool {
        if self.escaped {
            return self.escaped_string();
        }
        let end = super::after_string(self.minified, self.m + 1);
        let n = end - self.m;
        if self.original.get(self.o..self.o + n) != self.minified.get(self.m..end) {
            return false;
        }
        self.m += n;
        self.o += n;
        true
    }

    /// [`string`](Self::string) into an escaped `original`, the literal
    /// at `m` walked once: runs without quotes or backslashes compared
    /// whole, each quote and backslash escaped once more.
    fn escaped_string(&mut self) -> bool {
        // The opening quote.
        if !self.byte(b'"') {
            return false;
        }
        loop {
            let rest = self.minified.get(self.m..).unwrap_or_default();
            let run = to_quote_or_backslash(rest);
            if self.original.get(self.o..self.o + run) != rest.get(..run) {
                return false;
            }
            self.o += run;
            self.m += run;
            match self.minified.get(self.m) {
                Some(b'"') => return self.byte(b'"'),
                // An escape: the backslash, and the byte it escapes.
                Some(b'\\') => {
                    let Some(&next) = self.minified.get(self.m + 1) else {
                        return false;
                    };
                    if !(self.byte(b'\\') && self.byte(next)) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lays_out` against its definition: writing the layout and comparing.
    fn agrees(style: Style, original: &str, minified: &str) {
        assert_eq!(
            lays_out(style, original, minified),
            style.apply(minified) == original,
            "{style:?} {original:?} {minified:?}"
        );
    }

    #[test]
    fn detects_each_layout_and_its_near_misses() {
        let m = r#"{"a":[1,{"b":[],"c":{}},"s, t: \"u\" \\"],"long key of more than a word":"é😀 and a value of more than a word \n","d":null}"#;
        let styles = [
            Style::Spaced,
            Style::Indent(2),
            Style::Indent(4),
            Style::Tabs,
            Style::Indent(0),
        ];
        for style in styles {
            let laid_out = style.apply(m);
            assert!(lays_out(style, &laid_out, m), "{style:?}");
            for other in styles {
                agrees(other, &laid_out, m);
            }
            for (i, _) in laid_out.char_indices() {
                let (a, b) = laid_out.split_at(i);
                agrees(
                    style,
                    &format!("{a}{}", &b[b.chars().next().map_or(0, char::len_utf8)..]),
                    m,
                );
                agrees(style, &format!("{a} {b}"), m);
                agrees(style, &format!("{a}x{b}"), m);
            }
        }
    }

    /// `lays_out_escaped` against its definition: serde's escaping of the
    /// layout, compared.
    fn agrees_escaped(style: Style, escaped: &str, minified: &str) {
        let laid_out = style.apply(minified);
        let serde = serde_json::to_string(&laid_out).unwrap();
        let expected =
            (serde[1..serde.len() - 1] == *escaped).then(|| laid_out.len() - minified.len());
        assert_eq!(
            lays_out_escaped(style, escaped, minified),
            expected,
            "{style:?} {escaped:?} {minified:?}"
        );
    }

    #[test]
    fn detects_an_escaped_layout_and_its_near_misses() {
        let m = r#"{"a":[1,{"b":[],"c":{}},"s, t: \"u\" \\"],"long key of more than a word":"é😀 and a value \n\u0001","d":null}"#;
        let styles = [
            Style::Compact,
            Style::Spaced,
            Style::Indent(2),
            Style::Indent(4),
            Style::Tabs,
        ];
        for style in styles {
            let serde = serde_json::to_string(&style.apply(m)).unwrap();
            let escaped = &serde[1..serde.len() - 1];
            assert!(lays_out_escaped(style, escaped, m).is_some(), "{style:?}");
            for other in styles {
                agrees_escaped(other, escaped, m);
            }
            for (i, _) in escaped.char_indices() {
                let (a, b) = escaped.split_at(i);
                let next = b.chars().next().map_or(0, char::len_utf8);
                agrees_escaped(style, &format!("{a}{}", &b[next..]), m);
                agrees_escaped(style, &format!("{a} {b}"), m);
                agrees_escaped(style, &format!("{a}\\n{b}"), m);
            }
        }
        // Not minified after all: no answer, whatever the text.
        let spaced = r#"{"a": [1]}"#;
        let serde = serde_json::to_string(&Style::Indent(2).apply(spaced)).unwrap();
        assert_eq!(
            lays_out_escaped(Style::Indent(2), &serde[1..serde.len() - 1], spaced),
            None
        );
        // Escaped otherwise than serde does (`\/`, `\u00e9`): no answer.
        assert_eq!(
            lays_out_escaped(Style::Compact, r#"[\"\/\"]"#, r#"["/"]"#),
            None
        );
        assert_eq!(
            lays_out_escaped(Style::Compact, r#"[\"\u00e9\"]"#, r#"["é"]"#),
            None
        );
    }

    #[test]
    fn indentation_and_quotes_are_compared() {
        assert!(lays_out(Style::Indent(2), "[\n  1\n]", "[1]"));
        assert!(!lays_out(Style::Indent(2), "[\n 1\n]", "[1]"));
        assert!(!lays_out(Style::Indent(2), "[\n\t1\n]", "[1]"));
        assert!(lays_out(Style::Tabs, "[\n\t1\n]", "[1]"));
        assert!(!lays_out(Style::Spaced, " \"", "\"\""));
        assert!(!lays_out(
            Style::Spaced,
            "\"abcdefghijk\"",
            "\"abcdefghijK\""
        ));
        assert!(lays_out(Style::Spaced, "[1, {}, []]", "[1,{},[]]"));
        assert!(!lays_out(Style::Spaced, "[1, {}, []] ", "[1,{},[]]"));
        assert!(!lays_out(Style::Spaced, "[1, {}, []", "[1,{},[]]"));
    }

    #[test]
    fn unclosed_literals_agree_with_writing() {
        for m in [
            "\"abc",
            "\"abc\\",
            "\"abcdefghij\\",
            "\"abcdefghij\\\"",
            "[\"a\\",
        ] {
            for original in [m.to_owned(), format!("{m} "), m[..m.len() - 1].to_owned()] {
                for style in [Style::Spaced, Style::Indent(2)] {
                    agrees(style, &original, m);
                }
            }
        }
    }
}
