//! A fast reader for the common case of the input: plain JSON, at most
//! 256 levels deep. Strings without escapes are slices of the file (no
//! copy), numbers are read with Rust's correctly rounded parser (the same
//! double jq 1.6's `strtod` gives). Anything unusual gives `None`, and the
//! caller reads the input again with jaq's reader, which reports errors as
//! jq would.

use bytes::Bytes;
use jaq_json::{Map, Rc, Val};

use super::value::Jv;

/// jq 1.6's `MAX_PARSING_DEPTH`.
const MAX_DEPTH: usize = 256;

/// Every JSON value of `text`, or `None` when anything is unusual.
pub(crate) fn values(text: &Bytes) -> Option<Vec<Val>> {
    let mut r = Reader { src: text, pos: 0 };
    let mut out = Vec::new();
    loop {
        r.skip_ws();
        if r.pos >= text.len() {
            return Some(out);
        }
        out.push(r.value(0)?);
    }
}

struct Reader<'s> {
    src: &'s Bytes,
    pos: usize,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Val> {
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' if depth < MAX_DEPTH => self.object(depth + 1),
            b'[' if depth < MAX_DEPTH => self.array(depth + 1),
            b'"' => self.string().map(Val::utf8_str),
            b't' => self.literal(b"true", Val::Bool(true)),
            b'f' => self.literal(b"false", Val::Bool(false)),
            b'n' => self.literal(b"null", Val::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], v: Val) -> Option<Val> {
        let end = self.pos + word.len();
        (self.src.get(self.pos..end)? == word).then(|| {
            self.pos = end;
            v
        })
    }

    fn number(&mut self) -> Option<Val> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.src.get(self.pos) {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.src[start..self.pos]).ok()?;
        let digits = text.strip_prefix('-').unwrap_or(text);
        let plain =
            !digits.is_empty() && digits.len() <= 15 && digits.bytes().all(|b| b.is_ascii_digit());
        if plain && !(digits.starts_with('0') && (digits.len() > 1 || text != digits)) {
            return text.parse::<isize>().ok().map(|i| Jv::num(i as f64).0);
        }
        valid_number(digits)?;
        text.parse::<f64>().ok().map(|f| Jv::num(f).0)
    }

    /// A string: a slice of the source when it has no escapes.
    fn string(&mut self) -> Option<Bytes> {
        let start = self.pos + 1;
        let rest = &self.src[start..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] == b'"' && !rest[..end].iter().any(|&b| b < 0x20) {
            self.pos = start + end + 1;
            return Some(self.src.slice(start..start + end));
        }
        self.escaped(start)
    }

    fn escaped(&mut self, start: usize) -> Option<Bytes> {
        let mut out = Vec::new();
        let mut i = start;
        loop {
            let b = *self.src.get(i)?;
            i += 1;
            match b {
                b'"' => break,
                b'\\' => i = self.escape(i, &mut out)?,
                0..=0x1f => return None,
                _ => out.push(b),
            }
        }
        self.pos = i;
        Some(Bytes::from(out))
    }

    /// Decodes the escape after a backslash at `i - 1`; returns where it ends.
    fn escape(&self, i: usize, out: &mut Vec<u8>) -> Option<usize> {
        let c = match *self.src.get(i)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode(i + 1, out),
            _ => return None,
        };
        out.push(c as u8);
        Some(i + 1)
    }

    /// `\uXXXX`, with a surrogate pair when it is one; lone surrogates are
    /// left to jaq's reader.
    fn unicode(&self, i: usize, out: &mut Vec<u8>) -> Option<usize> {
        let hex = |at: usize| {
            let s = std::str::from_utf8(self.src.get(at..at + 4)?).ok()?;
            u32::from_str_radix(s, 16).ok()
        };
        let hi = hex(i)?;
        let (code, end) = if (0xD800..0xDC00).contains(&hi) {
            if self.src.get(i + 4..i + 6)? != b"\\u" {
                return None;
            }
            let lo = hex(i + 6)?;
            if !(0xDC00..0xE000).contains(&lo) {
                return None;
            }
            (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), i + 10)
        } else {
            (hi, i + 4)
        };
        let c = char::from_u32(code)?;
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        Some(end)
    }

    fn array(&mut self, depth: usize) -> Option<Val> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.src.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Some(Val::Arr(Rc::new(items)));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_ws();
            match *self.src.get(self.pos)? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(Val::Arr(Rc::new(items)));
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Val> {
        self.pos += 1;
        let mut map = Map::default();
        self.skip_ws();
        if self.src.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(Val::obj(map));
        }
        loop {
            self.skip_ws();
            if self.src.get(self.pos) != Some(&b'"') {
                return None;
            }
            let key = self.string()?;
            self.skip_ws();
            if self.src.get(self.pos) != Some(&b':') {
                return None;
            }
            self.pos += 1;
            let v = self.value(depth)?;
            map.insert(Val::utf8_str(key), v);
            self.skip_ws();
            match *self.src.get(self.pos)? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(Val::obj(map));
                }
                _ => return None,
            }
        }
    }
}

/// JSON's number grammar (after the sign): `int frac? exp?`.
fn valid_number(s: &str) -> Option<()> {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if b.first() == Some(&b'0') {
        i = 1;
    } else if !digits(&mut i) {
        return None;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        digits(&mut i).then_some(())?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        digits(&mut i).then_some(())?;
    }
    (i == b.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_jaqs_reader_reads() {
        let text = Bytes::from_static(
            br#"{"a":"x\"y\u00e9\ud83d\ude00","b":[1,-2,0,0.5,1e400,12345678901234567890,-0.0,{}],"a":null}
            [] "plain" true"#,
        );
        let fast: Vec<String> = values(&text)
            .unwrap()
            .into_iter()
            .map(|v| Jv(v).to_string())
            .collect();
        let slow: Vec<String> = super::super::input::values(&text)
            .unwrap()
            .into_iter()
            .map(|v| Jv(v).to_string())
            .collect();
        assert_eq!(fast, slow);
        for bad in [
            &b"[1,]"[..],
            b"{\"a\" 1}",
            b"01",
            b"1.",
            b"\"\\ud800\"",
            b"nul",
        ] {
            assert!(values(&Bytes::copy_from_slice(bad)).is_none(), "{bad:?}");
        }
    }
}
