//! Whether a text is exactly minified JSON laid out in a [`Style`], told
//! in one walk of both texts side by side, nothing built.
//!
//! A text block that copies `structuredContent` can be megabytes; this is
//! the compare that tells it is a copy. A string literal, most of the
//! bytes, is compared whole; an indentation as one run; the structural
//! bytes one by one, with no call per byte.

use super::Style;

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
}

/// Whether `style` lays `minified` (valid minified JSON) out as exactly
/// `original`; the same answer as writing it out and comparing.
pub(super) fn lays_out(style: Style, original: &str, minified: &str) -> bool {
    let spacing = Spacing::of(style);
    let mut walk = Walk {
        original: original.as_bytes(),
        minified: minified.as_bytes(),
        o: 0,
        m: 0,
    };
    let mut depth = 0usize;
    while let Some(&b) = walk.minified.get(walk.m) {
        let ok = match b {
            b'"' => walk.string(),
            b'{' | b'[' => walk.open(b, &mut depth, spacing),
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                walk.line_break(depth, spacing) && walk.byte(b)
            }
            b',' => walk.byte(b',') && walk.after_comma(depth, spacing),
            b':' => walk.byte(b':') && walk.expect(spacing.after_colon),
            _ => walk.byte(b),
        };
        if !ok {
            return false;
        }
    }
    walk.o == walk.original.len()
}

impl Walk<'_> {
    /// `original` goes on with byte `b`, the next of `minified`.
    fn byte(&mut self, b: u8) -> bool {
        self.m += 1;
        self.expect(Some(b))
    }

    /// `original` goes on with `b`, if any.
    fn expect(&mut self, b: Option<u8>) -> bool {
        let Some(b) = b else { return true };
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
        let end = self.o + 1 + depth * width;
        let same = match self.original.get(self.o..end) {
            Some([b'\n', indent @ ..]) => indent.iter().all(|&p| p == pad),
            _ => false,
        };
        self.o = end;
        same
    }

    /// The string literal that starts at `minified[m]`, the same in
    /// `original`: its end looked for, then compared whole.
    fn string(&mut self) -> bool {
        let end = super::string_end(self.minified, self.m + 1);
        let n = end - self.m;
        if self.original.get(self.o..self.o + n) != self.minified.get(self.m..end) {
            return false;
        }
        self.advance(n)
    }

    /// Both texts move on by `n` equal bytes.
    fn advance(&mut self, n: usize) -> bool {
        self.m += n;
        self.o += n;
        true
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
    fn tells_each_layout_and_its_near_misses() {
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
