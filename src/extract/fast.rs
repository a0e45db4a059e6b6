//! A fast reader for the common case of the input: plain JSON, at most
//! 256 levels deep. Strings without escapes are slices of the file (no
//! copy), numbers are read with Rust's correctly rounded parser (the same
//! double jq 1.6's `strtod` gives). Anything unusual gives `None`, and the
//! caller reads the input again with jaq's reader, which reports errors as
//! jq would.

use bytes::Bytes;
use jaq_json::{Map, Rc, Val};

use super::input::{self, InputError};
use super::project::Need;
use super::value::Jv;

/// The byte that ends a string.
const QUOTE: u8 = 0x22;

/// jq 1.6's `MAX_PARSING_DEPTH`.
const MAX_DEPTH: usize = 256;

/// Every JSON value of `text`, or `None` when anything is unusual.
#[cfg(test)]
pub(crate) fn values(text: &Bytes) -> Option<Vec<Val>> {
    let mut r = Reader::new(text.clone());
    let mut out = Vec::new();
    loop {
        match r.next(&Need::All) {
            Next::Value(v) => out.push(v),
            Next::End => return Some(out),
            Next::Unusual { .. } => return None,
        }
    }
}

/// The input values one at a time, each read as far as `need` says (the
/// rest of it validated and skipped); from the first unusual value on,
/// jaq's reader reads the rest whole and reports errors as jq would.
pub(crate) struct Records {
    reader: Reader,
    need: Need,
    rest: Option<std::vec::IntoIter<Val>>,
    failed: bool,
    count: usize,
}

impl Records {
    /// The values of `text`.
    pub(super) fn new(text: Bytes, need: Need) -> Records {
        Records {
            reader: Reader::new(text),
            need,
            rest: None,
            failed: false,
            count: 0,
        }
    }
}

impl Iterator for Records {
    type Item = Result<Val, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(rest) = &mut self.rest {
            return rest.next().map(Ok);
        }
        if self.failed {
            return None;
        }
        match self.reader.next(&self.need) {
            Next::Value(v) => {
                self.count += 1;
                Some(Ok(v))
            }
            Next::End => None,
            Next::Unusual { at } => match input::values(&self.reader.src[at..]) {
                Ok(values) => {
                    self.rest = Some(values.into_iter());
                    self.next()
                }
                Err(e) => {
                    self.failed = true;
                    Some(Err(e.after(self.count)))
                }
            },
        }
    }
}

/// What the reader found next.
enum Next {
    Value(Val),
    End,
    /// Something the fast reader leaves to jaq's, starting at byte `at`.
    Unusual {
        at: usize,
    },
}

/// A string's contents: a span of the source when it has no escapes.
enum Text {
    Span(usize, usize),
    Owned(Vec<u8>),
}

struct Reader {
    src: Bytes,
    pos: usize,
    /// Entries of the objects being read (a stack shared by all levels, so
    /// each object is built at its final size).
    entries: Vec<(Val, Val)>,
    /// Items of the arrays being read.
    items: Vec<Val>,
    /// Escaped strings being skipped are decoded here.
    scratch: Vec<u8>,
}

impl Reader {
    fn new(src: Bytes) -> Reader {
        Reader {
            src,
            pos: 0,
            entries: Vec::new(),
            items: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn next(&mut self, need: &Need) -> Next {
        self.skip_ws();
        if self.pos >= self.src.len() {
            return Next::End;
        }
        let at = self.pos;
        match self.value(0, need) {
            Some(v) => Next::Value(v),
            None => Next::Unusual { at },
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize, need: &Need) -> Option<Val> {
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' if depth < MAX_DEPTH => self.object(depth + 1, need),
            b'[' if depth < MAX_DEPTH => self.array(depth + 1),
            b'"' => self.string().map(Val::utf8_str),
            b't' => self.literal(b"true", Val::Bool(true)),
            b'f' => self.literal(b"false", Val::Bool(false)),
            b'n' => self.literal(b"null", Val::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// Checks a value as [`value`](Self::value) would read it, builds nothing.
    fn skip(&mut self, depth: usize) -> Option<()> {
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' if depth < MAX_DEPTH => self.skip_object(depth + 1),
            b'[' if depth < MAX_DEPTH => self.skip_array(depth + 1),
            b'"' => self.skip_text(),
            b't' => self.literal(b"true", Val::Null).map(drop),
            b'f' => self.literal(b"false", Val::Null).map(drop),
            b'n' => self.literal(b"null", Val::Null).map(drop),
            b'-' | b'0'..=b'9' => self.number().map(drop),
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
        Some(match self.text()? {
            Text::Span(start, end) => self.src.slice(start..end),
            Text::Owned(v) => Bytes::from(v),
        })
    }

    fn text(&mut self) -> Option<Text> {
        let start = self.pos + 1;
        let rest = self.src.get(start..)?;
        let end = memchr::memchr2(QUOTE, b'\\', rest)?;
        if rest[end] == QUOTE && !has_control(&rest[..end]) {
            self.pos = start + end + 1;
            return Some(Text::Span(start, start + end));
        }
        self.escaped(start).map(Text::Owned)
    }

    /// Checks a string as [`text`](Self::text) would read it; an escaped
    /// one is decoded into a buffer kept for the next.
    fn skip_text(&mut self) -> Option<()> {
        let start = self.pos + 1;
        let rest = self.src.get(start..)?;
        let end = memchr::memchr2(QUOTE, b'\\', rest)?;
        if rest[end] == QUOTE && !has_control(&rest[..end]) {
            self.pos = start + end + 1;
            return Some(());
        }
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let r = self.escaped_into(start, &mut buf);
        self.scratch = buf;
        r
    }

    fn escaped(&mut self, start: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.escaped_into(start, &mut out)?;
        Some(out)
    }

    /// Decodes the string whose contents start at `start` into `out`.
    fn escaped_into(&mut self, start: usize, out: &mut Vec<u8>) -> Option<()> {
        let mut i = start;
        loop {
            let b = *self.src.get(i)?;
            i += 1;
            match b {
                QUOTE => break,
                b'\\' => i = self.escape(i, out)?,
                0..=0x1f => return None,
                _ => out.push(b),
            }
        }
        self.pos = i;
        Some(())
    }

    /// Decodes the escape after a backslash at `i - 1`; returns where it ends.
    fn escape(&self, i: usize, out: &mut Vec<u8>) -> Option<usize> {
        let c = match *self.src.get(i)? {
            b'u' => return self.unicode(i + 1, out),
            after => crate::json::escaped(Some(after))?,
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
        let base = self.items.len();
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b']') {
            loop {
                let v = self.value(depth, &Need::All)?;
                self.items.push(v);
                if self.after_item(b']')? {
                    break;
                }
            }
        }
        self.pos += 1;
        Some(Val::Arr(Rc::new(self.items.drain(base..).collect())))
    }

    /// After an item: `,` (more follow) or `close` (the end, not consumed).
    fn after_item(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b',' => {
                self.pos += 1;
                Some(false)
            }
            b if b == close => Some(true),
            _ => None,
        }
    }

    fn skip_array(&mut self, depth: usize) -> Option<()> {
        self.pos += 1;
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b']') {
            loop {
                self.skip(depth)?;
                if self.after_item(b']')? {
                    break;
                }
            }
        }
        self.pos += 1;
        Some(())
    }

    /// An object, with only the keys `need` reads (all when it reads all).
    fn object(&mut self, depth: usize, need: &Need) -> Option<Val> {
        self.pos += 1;
        let base = self.entries.len();
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b'}') {
            loop {
                let key = self.key()?;
                let wanted = match need {
                    Need::All => Some(&Need::All),
                    Need::Keys(keys) => Need::key(keys, self.text_bytes(&key)),
                };
                match wanted {
                    Some(n) => {
                        let v = self.value(depth, n)?;
                        let k = Val::utf8_str(self.text_into_bytes(key));
                        self.entries.push((k, v));
                    }
                    None => self.skip(depth)?,
                }
                if self.after_item(b'}')? {
                    break;
                }
            }
        }
        self.pos += 1;
        let map: Map = self.entries.drain(base..).collect();
        Some(Val::obj(map))
    }

    fn skip_object(&mut self, depth: usize) -> Option<()> {
        self.pos += 1;
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b'}') {
            loop {
                self.key()?;
                self.skip(depth)?;
                if self.after_item(b'}')? {
                    break;
                }
            }
        }
        self.pos += 1;
        Some(())
    }

    /// A key and its colon.
    fn key(&mut self) -> Option<Text> {
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b'"') {
            return None;
        }
        let key = self.text()?;
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b':') {
            return None;
        }
        self.pos += 1;
        Some(key)
    }

    fn text_bytes<'t>(&'t self, t: &'t Text) -> &'t [u8] {
        match t {
            Text::Span(s, e) => &self.src[*s..*e],
            Text::Owned(v) => v,
        }
    }

    fn text_into_bytes(&self, t: Text) -> Bytes {
        match t {
            Text::Span(s, e) => self.src.slice(s..e),
            Text::Owned(v) => Bytes::from(v),
        }
    }
}

/// Whether `s` holds a control character (which a JSON string cannot);
/// a branch-free check per block, which compilers vectorise.
fn has_control(s: &[u8]) -> bool {
    s.chunks(32)
        .any(|c| c.iter().fold(false, |found, &b| found | (b < 0x20)))
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
mod tests;
