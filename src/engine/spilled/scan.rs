//! Byte passes over JSON that is too large to hold, a buffer of [`CHUNK`]
//! bytes at a time: the check that it is one JSON value, a value copied
//! minified, and a string literal decoded into a file (the walk over the
//! children of an object or array is in `walk`). The passes after the
//! check trust the JSON to be valid; on anything unexpected they return
//! [`NotStreamable`] rather than guess.

use std::io::{self, Read, Write};

use crate::json::{Check, escaped, to_quote_or_backslash};

/// Bytes read at a time.
pub(super) const CHUNK: usize = 256 * 1024;
/// A spilled result this path does not take apart; the caller keeps the
/// original.
#[derive(Debug)]
pub(crate) struct NotStreamable(pub(crate) &'static str);

impl From<io::Error> for NotStreamable {
    fn from(_: io::Error) -> Self {
        NotStreamable("the spilled result could not be read back")
    }
}

/// Whether `input` is one JSON value and nothing else, read in bounded
/// memory a buffer at a time (see [`Check`]: what `serde_json` accepts,
/// nesting up to a million levels).
pub(super) fn check_json(mut input: impl Read) -> bool {
    let mut buf = vec![0u8; CHUNK];
    let mut check = Check::default();
    loop {
        match input.read(&mut buf) {
            Ok(0) => return check.finish().is_ok(),
            Ok(n) => {
                if check.feed(&buf[..n]).is_err() {
                    return false;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Copies `input` (one JSON value) to `out` minified.
pub(super) fn minify_copy(mut input: impl Read, out: &mut dyn Write) -> Result<(), NotStreamable> {
    let mut buf = vec![0u8; CHUNK];
    let mut kept = Vec::with_capacity(CHUNK);
    let (mut in_str, mut esc) = (false, false);
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        for &b in &buf[..n] {
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
            } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                continue;
            } else if b == b'"' {
                in_str = true;
            }
            kept.push(b);
        }
        out.write_all(&kept)?;
        kept.clear();
    }
}

/// Decodes the JSON string literal in `input` (quotes included) into
/// `out` as UTF-8; returns the decoded length.
pub(super) fn decode_string(
    mut input: impl Read,
    out: &mut dyn Write,
) -> Result<u64, NotStreamable> {
    let mut buf = vec![0u8; CHUNK];
    let mut plain: Vec<u8> = Vec::with_capacity(CHUNK);
    // An escape being read (at most `\uXXXX\uXXXX`).
    let mut escape: Vec<u8> = Vec::with_capacity(12);
    let mut state = 0u8; // 0: before the opening quote, 1: inside, 2: after the closing one
    let mut written = 0u64;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut i = 0;
        while i < n {
            if state == 1 && escape.is_empty() {
                // Plain bytes up to the next quote or backslash, in one step.
                let run = to_quote_or_backslash(&buf[i..n]);
                plain.extend_from_slice(&buf[i..i + run]);
                i += run;
                if i == n {
                    break;
                }
            }
            let b = buf[i];
            i += 1;
            match state {
                0 if b == b'"' => state = 1,
                0 if b.is_ascii_whitespace() => {}
                1 if !escape.is_empty() => {
                    escape.push(b);
                    finish_escape(&mut escape, &mut plain)?;
                }
                1 if b == b'\\' => escape.push(b),
                1 if b == b'"' => state = 2,
                1 => plain.push(b),
                2 if b.is_ascii_whitespace() => {}
                _ => return Err(NotStreamable("not a string")),
            }
        }
        written += plain.len() as u64;
        out.write_all(&plain)?;
        plain.clear();
    }
    if state != 2 || !escape.is_empty() {
        return Err(NotStreamable("the string does not end"));
    }
    Ok(written)
}

/// Decodes the escape in `escape` into `plain` once it is complete (and
/// clears it); leaves it while more bytes are needed.
fn finish_escape(escape: &mut Vec<u8>, plain: &mut Vec<u8>) -> Result<(), NotStreamable> {
    let bad = || NotStreamable("a bad escape");
    let Some(&after) = escape.get(1) else {
        return Ok(());
    };
    if let Some(c) = escaped(Some(after)) {
        plain.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        escape.clear();
        return Ok(());
    }
    if after != b'u' {
        return Err(bad());
    }
    if escape.len() < 6 {
        return Ok(());
    }
    let hex = std::str::from_utf8(&escape[2..6]).map_err(|_| bad())?;
    let unit = u16::from_str_radix(hex, 16).map_err(|_| bad())?;
    // A high surrogate needs its low half: `\uD83D\uDE00`.
    if (0xD800..0xDC00).contains(&unit) && escape.len() < 12 {
        return Ok(());
    }
    let mut quoted = Vec::with_capacity(escape.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(escape);
    quoted.push(b'"');
    escape.clear();
    let text = serde_json::from_slice::<String>(&quoted).map_err(|_| bad())?;
    plain.extend_from_slice(text.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_decode_across_any_cut() {
        let text = "a\"b\\c\n\r\t\u{8}\u{c}\u{1F600} é \u{7}end";
        let literal = serde_json::to_string(text).unwrap();
        for cut in [1usize, 2, 3, 5, 7] {
            // A reader that gives `cut` bytes at a time.
            struct Slow<'a>(&'a [u8], usize);
            impl Read for Slow<'_> {
                fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                    let n = self.1.min(self.0.len()).min(buf.len());
                    buf[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let mut out = Vec::new();
            decode_string(Slow(literal.as_bytes(), cut), &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
        let mut out = Vec::new();
        decode_string(&b"\"\\/\""[..], &mut out).unwrap();
        assert_eq!(out, b"/");
        assert!(decode_string(&b"\"\\x\""[..], &mut Vec::new()).is_err());
        assert!(decode_string(&b"\"\\ud800x\""[..], &mut Vec::new()).is_err());
        assert!(decode_string(&b"\"open"[..], &mut Vec::new()).is_err());
    }

    #[test]
    fn one_value_only() {
        assert!(check_json(&b" {\"a\": [1, \"x\"]} "[..]));
        assert!(!check_json(&b"{} {}"[..]));
        assert!(!check_json(&b"[1,"[..]));
    }
}
