//! Byte walks over JSON that is too large to hold: the children of one
//! object or array (their keys and where each value starts and ends), each
//! child's bytes minified as they stream by, and a string literal decoded
//! into a file. Memory: a buffer of [`CHUNK`] bytes and the key being read
//! (at most [`MAX_KEY`] bytes); the depth is a counter.
//!
//! The walks trust the JSON to be valid (it was checked first, in bounded
//! memory, by [`check_json`]); on anything unexpected they return
//! [`NotStreamable`] rather than guess.

use std::io::{self, Read, Write};

use serde::de::IgnoredAny;

/// Bytes read at a time.
pub(super) const CHUNK: usize = 256 * 1024;
/// Longest key kept of an object member (longer ones are named by their
/// first bytes; no key we look for is that long).
const MAX_KEY: usize = 256;

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
/// memory (strings are skipped, not kept).
pub(super) fn check_json(input: impl Read) -> bool {
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(CHUNK, input));
    serde::Deserialize::deserialize(&mut de)
        .map(|_: IgnoredAny| ())
        .and_then(|()| de.end())
        .is_ok()
}

/// What a walk tells about the children of the value walked.
pub(super) trait Visit {
    /// A member's key (raw JSON string contents, escapes as written; cut
    /// at [`MAX_KEY`] bytes).
    fn key(&mut self, _raw: &[u8]) {}
    /// A child starts at byte `at` (relative to the walk's start).
    fn start(&mut self, _at: u64) -> Result<(), NotStreamable> {
        Ok(())
    }
    /// The next bytes of the child, minified (whitespace outside strings
    /// left out); only asked for when [`wants_bytes`](Self::wants_bytes).
    fn bytes(&mut self, _b: &[u8]) -> Result<(), NotStreamable> {
        Ok(())
    }
    /// Whether the child's bytes are wanted.
    fn wants_bytes(&self) -> bool {
        false
    }
    /// The child ends just before byte `at`.
    fn end(&mut self, _at: u64) -> Result<(), NotStreamable> {
        Ok(())
    }
}

/// What the walk found around the children.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Outer {
    /// `{` or `[`.
    pub open: u8,
    /// Whitespace bytes before the value, and after it.
    pub lead: u64,
    pub trail: u64,
    /// Whitespace bytes outside strings within the value (0: compact).
    pub inner_ws: u64,
}

/// Where the walk is at depth 1 (directly inside the value walked).
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the value.
    Before,
    /// Expecting a key (objects) or a value (arrays).
    Expect,
    InKey,
    /// After a key, before its value.
    Colon,
    InValue,
    /// After the value.
    After,
}

/// Walks the object or array in `input` (which holds it, whitespace
/// around it allowed, nothing else), telling `visit` about each child.
/// (About 160 lines: one state machine over every byte, the hot loop of a
/// spilled result; split up, its state would go back and forth.)
pub(super) fn walk(mut input: impl Read, visit: &mut dyn Visit) -> Result<Outer, NotStreamable> {
    let mut buf = vec![0u8; CHUNK];
    let mut out: Vec<u8> = Vec::new();
    let wants = visit.wants_bytes();
    let mut outer = Outer::default();
    let (mut at, mut depth, mut in_str, mut esc) = (At::Before, 0u32, false, false);
    let mut key: Vec<u8> = Vec::new();
    let mut pos: u64 = 0;
    // Position just after the last byte of the current child.
    let mut child_end: u64 = 0;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut i = 0;
        while i < n {
            if in_str && !esc {
                // The plain bytes of a string up to its next quote or
                // backslash, in one step (most of a result's bytes).
                let run = memchr::memchr2(b'"', b'\\', &buf[i..n]).unwrap_or(n - i);
                if run > 0 {
                    let bytes = &buf[i..i + run];
                    match at {
                        At::InKey => {
                            let room = MAX_KEY.saturating_sub(key.len());
                            key.extend_from_slice(&bytes[..run.min(room)]);
                        }
                        At::InValue => {
                            if wants {
                                out.extend_from_slice(bytes);
                            }
                            child_end = pos + run as u64;
                        }
                        _ => {}
                    }
                    pos += run as u64;
                    i += run;
                    if wants && out.len() >= CHUNK {
                        visit.bytes(&out)?;
                        out.clear();
                    }
                    continue;
                }
            }
            let b = buf[i];
            i += 1;
            let here = pos;
            pos += 1;
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
                match at {
                    At::InKey if in_str => key.extend(Some(b).filter(|_| key.len() < MAX_KEY)),
                    At::InKey => {
                        visit.key(&key);
                        key.clear();
                        at = At::Colon;
                    }
                    At::InValue => {
                        if wants {
                            out.push(b);
                        }
                        child_end = pos;
                    }
                    _ => {}
                }
                continue;
            }
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                match at {
                    At::Before => outer.lead += 1,
                    At::After if depth == 0 => outer.trail += 1,
                    _ => outer.inner_ws += 1,
                }
                continue;
            }
            match at {
                At::Before => {
                    if b != b'{' && b != b'[' {
                        return Err(NotStreamable("not an object or an array"));
                    }
                    outer.open = b;
                    depth = 1;
                    at = At::Expect;
                }
                At::Expect | At::Colon if depth == 1 && (b == b'}' || b == b']') => {
                    depth = 0;
                    at = At::After;
                }
                At::Expect if outer.open == b'{' => {
                    if b != b'"' {
                        return Err(NotStreamable("a key was expected"));
                    }
                    in_str = true;
                    at = At::InKey;
                }
                At::Colon if b == b':' => {}
                At::Expect | At::Colon => {
                    visit.start(here)?;
                    at = At::InValue;
                    if b == b'"' {
                        in_str = true;
                    } else if b == b'{' || b == b'[' {
                        depth += 1;
                    }
                    if wants {
                        out.push(b);
                    }
                    child_end = pos;
                }
                At::InValue => {
                    if depth == 1 && (b == b',' || b == b'}' || b == b']') {
                        if wants && !out.is_empty() {
                            visit.bytes(&out)?;
                            out.clear();
                        }
                        visit.end(child_end)?;
                        if b == b',' {
                            at = At::Expect;
                        } else {
                            depth = 0;
                            at = At::After;
                        }
                        continue;
                    }
                    if b == b'"' {
                        in_str = true;
                    } else if b == b'{' || b == b'[' {
                        depth += 1;
                    } else if b == b'}' || b == b']' {
                        depth -= 1;
                    }
                    if wants {
                        out.push(b);
                    }
                    child_end = pos;
                }
                At::After | At::InKey => return Err(NotStreamable("bytes after the value")),
            }
            if wants && out.len() >= CHUNK {
                visit.bytes(&out)?;
                out.clear();
            }
        }
        if wants && !out.is_empty() {
            visit.bytes(&out)?;
            out.clear();
        }
    }
    if at != At::After {
        return Err(NotStreamable("the value does not end"));
    }
    Ok(outer)
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
                let run = memchr::memchr2(b'"', b'\\', &buf[i..n]).unwrap_or(n - i);
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
    let simple = match escape.get(1) {
        None => return Ok(()),
        Some(b'"') => Some(b'"'),
        Some(b'\\') => Some(b'\\'),
        Some(b'/') => Some(b'/'),
        Some(b'n') => Some(b'\n'),
        Some(b't') => Some(b'\t'),
        Some(b'r') => Some(b'\r'),
        Some(b'b') => Some(0x08),
        Some(b'f') => Some(0x0c),
        Some(b'u') => None,
        Some(_) => return Err(bad()),
    };
    if let Some(c) = simple {
        plain.push(c);
        escape.clear();
        return Ok(());
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

    #[derive(Default)]
    struct Collect {
        keys: Vec<String>,
        spans: Vec<(u64, u64)>,
        bytes: Vec<u8>,
        ends: usize,
    }

    impl Visit for Collect {
        fn key(&mut self, raw: &[u8]) {
            self.keys.push(String::from_utf8_lossy(raw).into_owned());
        }
        fn start(&mut self, at: u64) -> Result<(), NotStreamable> {
            self.spans.push((at, 0));
            Ok(())
        }
        fn wants_bytes(&self) -> bool {
            true
        }
        fn bytes(&mut self, b: &[u8]) -> Result<(), NotStreamable> {
            self.bytes.extend_from_slice(b);
            Ok(())
        }
        fn end(&mut self, at: u64) -> Result<(), NotStreamable> {
            self.spans.last_mut().unwrap().1 = at;
            self.bytes.push(b'\n');
            self.ends += 1;
            Ok(())
        }
    }

    #[test]
    fn children_of_objects_and_arrays() {
        let src = br#" { "a" : [1, {"x": "y,}"}] , "b\"c": "s" , "n":null } "#;
        let mut c = Collect::default();
        let outer = walk(&src[..], &mut c).unwrap();
        assert_eq!(c.keys, ["a", "b\\\"c", "n"]);
        assert_eq!(outer.lead, 1);
        assert_eq!(outer.trail, 1);
        assert_eq!(
            &src[c.spans[0].0 as usize..c.spans[0].1 as usize],
            br#"[1, {"x": "y,}"}]"#
        );
        assert_eq!(
            String::from_utf8(c.bytes).unwrap(),
            "[1,{\"x\":\"y,}\"}]\n\"s\"\nnull\n"
        );
        let mut c = Collect::default();
        walk(&b"[]"[..], &mut c).unwrap();
        assert_eq!(c.ends, 0);
        let mut c = Collect::default();
        let outer = walk(&b"[1,\n 22 ,\"\\\\\"]"[..], &mut c).unwrap();
        assert_eq!(String::from_utf8(c.bytes).unwrap(), "1\n22\n\"\\\\\"\n");
        assert!(outer.inner_ws > 0);
        assert!(walk(&b"[1] x"[..], &mut Collect::default()).is_err());
        assert!(walk(&b"[1"[..], &mut Collect::default()).is_err());
        assert!(walk(&b"7"[..], &mut Collect::default()).is_err());
    }

    #[test]
    fn strings_decode_across_any_cut() {
        let text = "a\"b\\c\n\u{1F600} é \u{7}end";
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
