//! Decoding a JSON string literal that `serde_json` has already validated,
//! eight bytes at a time.
//!
//! A text block's `text` can be megabytes of pretty JSON, an escape every
//! few bytes (`\n`, `\"`). `serde_json` decodes one escape per call into a
//! scratch buffer and copies the result once more; here each eight-byte
//! word is appended whole and cut back at its first backslash, with no call
//! per escape. The rare `\u` escape (surrogate pairs, lone surrogates,
//! which are errors) is left to `serde_json`, so the answers are the same.
//!
//! The output is built from `&str` pieces of the input and ASCII bytes, so
//! it is UTF-8 by construction and never checked again: a piece always
//! starts and ends at a char boundary (the start of the literal, a
//! backslash, the byte after an escape, or a boundary `str::get` vouched
//! for), and every escape handled here stands for an ASCII byte.

use super::swar::{WORD, first, marks, word_at};

/// The string `json` holds, exactly as `serde_json::from_str::<String>`
/// decodes it, errors included (a value that is not a string, a lone
/// surrogate). `json` must be one valid JSON value: read by serde as a
/// raw value, or a span of bytes serde validated (`wire::mcp::Raw`);
/// the fast path trusts it.
pub(crate) fn decode_string(json: &str) -> Result<String, serde_json::Error> {
    // A valid JSON value that starts with a quote is one string literal:
    // no control byte, no unescaped quote inside, only valid escapes.
    let inner = json
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'));
    match inner.and_then(decode_inner) {
        Some(text) => Ok(text),
        None => serde_json::from_str(json),
    }
}

/// The contents of a valid string literal (between the quotes), decoded;
/// `None` at a `\u` escape (or anything it does not expect), for
/// `serde_json` to decode instead.
fn decode_inner(inner: &str) -> Option<String> {
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    // `at` is always a char boundary of `inner`.
    let mut at = 0;
    while let Some(word) = word_at(bytes, at) {
        let backslashes = marks(word, b'\\');
        if backslashes == 0 {
            at = push_word(inner, at, &mut out);
            continue;
        }
        let before = first(backslashes);
        push_before(inner, at, before, &mut out)?;
        out.push(escaped(bytes.get(at + before + 1).copied())?);
        at += before + 2;
    }
    decode_tail(inner, at, &mut out)?;
    Some(out)
}

/// Appends the backslash-free word at `at` (a char boundary); returns
/// where the next word starts. A word whose end cuts a character is
/// extended to the end of that character.
fn push_word(inner: &str, at: usize, out: &mut String) -> usize {
    if let Some(word) = inner.get(at..at + WORD) {
        out.push_str(word);
        return at + WORD;
    }
    // The word ends inside a character of at most four bytes, all of them
    // non-ASCII, so no backslash is skipped.
    let end = (at + WORD..=inner.len())
        .find(|&end| inner.is_char_boundary(end))
        .unwrap_or(inner.len());
    out.push_str(inner.get(at..end).unwrap_or_default());
    end
}

/// Appends the `before` bytes of the word at `at` that come before its
/// first backslash: the whole word, cut back (one fixed-size copy, not a
/// call per run), or when the word ends inside a character, the run.
fn push_before(inner: &str, at: usize, before: usize, out: &mut String) -> Option<()> {
    let Some(word) = inner.get(at..at + WORD) else {
        return push_run(inner, at, at + before, out);
    };
    out.push_str(word);
    // The backslash is ASCII: a char boundary of `out` too.
    let cut = out.len() - (WORD - before);
    if !out.is_char_boundary(cut) {
        return None;
    }
    out.truncate(cut);
    Some(())
}

/// Appends `inner[from..to]`, `to` being a backslash; `None` if that is
/// not a char boundary (it always is).
fn push_run(inner: &str, from: usize, to: usize, out: &mut String) -> Option<()> {
    out.push_str(inner.get(from..to)?);
    Some(())
}

/// The character a backslash followed by `after` stands for; `None` for
/// `\u` (left to `serde_json`) or anything that is not an escape.
pub(crate) fn escaped(after: Option<u8>) -> Option<char> {
    Some(match after? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// Decodes the last bytes (fewer than a word) from `at` on.
fn decode_tail(inner: &str, mut at: usize, out: &mut String) -> Option<()> {
    let bytes = inner.as_bytes();
    while at < bytes.len() {
        let Some(p) = bytes[at..].iter().position(|&b| b == b'\\') else {
            return push_run(inner, at, bytes.len(), out);
        };
        push_run(inner, at, at + p, out)?;
        out.push(escaped(bytes.get(at + p + 1).copied())?);
        at += p + 2;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Both decoders on the literal `json`: Ok and equal, or both Err.
    fn same_as_serde(json: &str) -> Result<(), TestCaseError> {
        let Ok(raw) = serde_json::from_str::<&serde_json::value::RawValue>(json) else {
            return Ok(());
        };
        let ours = decode_string(raw.get());
        let theirs = serde_json::from_str::<String>(json);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "{json:?}: {ours:?} vs {theirs:?}"),
        }
        Ok(())
    }

    #[test]
    fn decodes_every_escape() {
        for json in [
            r#""""#,
            r#""a""#,
            r#""\"\\\/\b\f\n\r\t""#,
            r#""0123456\n89abcdef\"""#,
            r#""\u00e9\ud83d\ude00 x""#,
            r#""lone \ud800 surrogate""#,
            r#""lone \udc00""#,
            r#""héllo wörld ☃ 😀 and more than a word""#,
            r#""1234567é\n1234567😀x\t""#,
            "\"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"",
            "12",
            "null",
            r#"{"a":"b"}"#,
        ] {
            same_as_serde(json).unwrap();
        }
        let raw = serde_json::from_str::<&serde_json::value::RawValue>(r#""x\ny""#).unwrap();
        assert_eq!(decode_string(raw.get()).unwrap(), "x\ny");
        let lone = serde_json::from_str::<&serde_json::value::RawValue>(r#""\ud800""#).unwrap();
        assert!(decode_string(lone.get()).is_err());
        let number = serde_json::from_str::<&serde_json::value::RawValue>("12").unwrap();
        assert!(decode_string(number.get()).is_err());
    }

    #[test]
    fn escapes_at_every_word_position() {
        for escape in [
            "\\n",
            "\\\"",
            "\\\\",
            "\\u0041",
            "é",
            "😀",
            "\\ud83d\\ude00",
        ] {
            for before in 0..20 {
                for after in 0..12 {
                    let json = format!("\"{}{escape}{}\"", "a".repeat(before), "b".repeat(after));
                    same_as_serde(&json).unwrap();
                    let json = format!(
                        "\"{}{escape}{escape}{}\"",
                        "é".repeat(before),
                        "😀".repeat(after)
                    );
                    same_as_serde(&json).unwrap();
                }
            }
        }
    }

    /// Pieces of a string literal's contents, valid or not.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,12}",
            any::<char>().prop_map(String::from),
            Just("\\\"".to_owned()),
            Just("\\\\".to_owned()),
            Just("\\/".to_owned()),
            Just("\\b".to_owned()),
            Just("\\f".to_owned()),
            Just("\\n".to_owned()),
            Just("\\r".to_owned()),
            Just("\\t".to_owned()),
            (0u32..0x1_0000).prop_map(|u| format!("\\u{u:04x}")),
            (0xd800u32..0xdc00, 0xdc00u32..0xe000)
                .prop_map(|(h, l)| format!("\\u{h:04X}\\u{l:04x}")),
            (0xd800u32..0xe000).prop_map(|u| format!("\\u{u:04x}")),
        ]
    }

    proptest! {
        #[test]
        fn equals_serde_on_serialized_strings(s in any::<String>(), pad in 0usize..9) {
            let s = format!("{}{s}", "x".repeat(pad));
            same_as_serde(&serde_json::to_string(&s).unwrap())?;
        }

        #[test]
        fn equals_serde_on_escape_mixes(pieces in prop::collection::vec(piece(), 0..40)) {
            same_as_serde(&format!("\"{}\"", pieces.concat()))?;
        }

        #[test]
        fn equals_serde_on_long_pretty_text(v in prop::collection::vec(("[a-z]{0,9}", 0u32..1000), 0..30)) {
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            same_as_serde(&serde_json::to_string(&pretty).unwrap())?;
        }
    }
}
