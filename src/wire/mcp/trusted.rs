//! The trusted reader: a result whose bytes were validated already as one
//! JSON value, with serde's rules (the `result` member the layer found in
//! a response), taken apart as [`TopFast`](super::TopFast) does, without
//! validating the bytes a second time.
//!
//! Values are not read, only skipped, 64 bytes at a time: masks of quotes,
//! backslashes and brackets (byte compares the compiler vectorizes, then
//! gathered word at a time), the escaped characters found from the runs of
//! backslashes (as simdjson does), so a string dense with escapes costs no
//! more than any other (its speed against serde's validating skip is in
//! `benches/README.md`, `layer`). Skipping keeps no stack: the input
//! is valid, brackets match, a counter is enough (serde reads raw values
//! at any depth too).
//!
//! Anything unusual (not an object, no `content` array of objects, more
//! than [`MAX_CONTENT_BLOCKS`] blocks, a key serde would refuse) is left to
//! the serde path, which reads it as before and names its error.

use std::ops::Range;

use super::{MAX_CONTENT_BLOCKS, MemberRanges, Raw, RawObject};
use crate::json::blocks::{Escapes, Masks, block_at, prefix_xor};
use crate::json::string_end;

/// The top-level fields and the content blocks' fields of `json`, one
/// valid JSON value, exactly as `TopFast` reads them (`content` a `[]`
/// placeholder in place); `None`: anything unusual. `placed`: where the
/// top-level members and the long strings sit, as the validator reported them (then
/// only `content` is read, the other values taken as they sit, and a long
/// text stepped over at once).
pub(super) fn read<'a>(
    json: &'a str,
    placed: Option<&MemberRanges>,
) -> Option<(RawObject<'a>, Vec<RawObject<'a>>)> {
    let mut r = Reader {
        s: json,
        b: json.as_bytes(),
        i: 0,
        long_strings: placed.map_or(&[], |p| &p.long_strings[..]),
    };
    let members = placed.map(|p| &p.members[..]);
    let mut blocks = None;
    let mut value = |r: &mut Reader<'a, '_>, key: &str| {
        if key != "content" {
            return r.value();
        }
        // The last `content` wins, in the first one's place, as in a map.
        blocks = Some(r.blocks()?);
        Some(Raw::trusted("[]"))
    };
    let top = match members {
        Some(members) => {
            let mut top = RawObject::new();
            for (key, at) in members {
                r.i = key.start;
                let key = r.key()?;
                r.i = at.start;
                let v = if key == "content" {
                    value(&mut r, &key)?
                } else {
                    Raw::trusted(json.get(at.clone())?)
                };
                (key != "content" || r.i == at.end).then_some(())?;
                top.insert(key, v);
            }
            top
        }
        None => {
            r.ws();
            let top = r.object(value)?;
            r.ws();
            (r.i == r.b.len()).then_some(())?;
            top
        }
    };
    Some((top, blocks?))
}

/// A position in valid JSON.
struct Reader<'a, 'p> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Where the long string values sit (see [`MemberRanges`]), in order.
    long_strings: &'p [Range<usize>],
}

impl<'a> Reader<'a, '_> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// Takes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&byte)).then(|| self.i += 1)
    }

    /// An object, each value read by `value` (given the key).
    fn object(
        &mut self,
        mut value: impl FnMut(&mut Self, &str) -> Option<Raw<'a>>,
    ) -> Option<RawObject<'a>> {
        self.eat(b'{')?;
        let mut out = RawObject::new();
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(out);
        }
        loop {
            self.ws();
            let key = self.key()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let v = value(self, &key)?;
            out.insert(key, v);
            self.ws();
            if self.eat(b'}').is_some() {
                return Some(out);
            }
            self.eat(b',')?;
        }
    }

    /// The `content` array: its blocks' fields (every block an object).
    fn blocks(&mut self) -> Option<Vec<RawObject<'a>>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        self.ws();
        if self.eat(b']').is_some() {
            return Some(out);
        }
        loop {
            self.ws();
            if out.len() == MAX_CONTENT_BLOCKS {
                return None;
            }
            out.push(self.object(Self::value_of)?);
            self.ws();
            if self.eat(b']').is_some() {
                return Some(out);
            }
            self.eat(b',')?;
        }
    }

    /// A key, decoded as serde decodes it (serde itself, when it has escapes).
    fn key(&mut self) -> Option<String> {
        let start = self.i;
        self.eat(b'"')?;
        let end = string_end(self.b, self.i)?;
        self.i = end + 1;
        let inner = self.s.get(start + 1..end)?;
        if !inner.contains('\\') {
            return Some(inner.to_owned());
        }
        serde_json::from_str::<String>(self.s.get(start..=end)?).ok()
    }

    /// [`value`](Self::value), for [`object`](Self::object).
    fn value_of(&mut self, _key: &str) -> Option<Raw<'a>> {
        self.value()
    }

    /// The next value, raw.
    fn value(&mut self) -> Option<Raw<'a>> {
        let start = self.i;
        let end = match *self.b.get(start)? {
            b'"' => match self.long_strings.binary_search_by_key(&start, |r| r.start) {
                Ok(k) => self.long_strings[k].end,
                Err(_) => string_end(self.b, start + 1)? + 1,
            },
            b'{' | b'[' => container_end(self.b, start)?,
            _ => scalar_end(self.b, start),
        };
        self.i = end;
        self.s.get(start..end).map(Raw::trusted)
    }
}

/// Where a number, `true`, `false` or `null` at `at` ends.
fn scalar_end(b: &[u8], at: usize) -> usize {
    let len = b
        .get(at..)
        .unwrap_or_default()
        .iter()
        .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r'));
    at + len.unwrap_or(b.len() - at)
}

/// Where the object or array opening at `at` ends (just past its close).
fn container_end(b: &[u8], mut at: usize) -> Option<usize> {
    let mut escapes = Escapes::default();
    // All ones while in a string at the end of the last block.
    let mut in_string = 0u64;
    let mut depth = 0usize;
    while at < b.len() {
        let m = Masks::of(&block_at(b, at), true);
        let quotes = m.quote & !escapes.next(m.backslash);
        let inside = prefix_xor(quotes) ^ in_string;
        in_string = 0u64.wrapping_sub(inside >> 63);
        let mut brackets = (m.open | m.close) & !inside;
        while brackets != 0 {
            let bit = brackets & brackets.wrapping_neg();
            if m.open & bit != 0 {
                depth += 1;
            } else {
                depth -= 1;
                if depth == 0 {
                    return Some(at + bit.trailing_zeros() as usize + 1);
                }
            }
            brackets &= brackets - 1;
        }
        at += 64;
    }
    None
}

#[cfg(test)]
mod tests;
