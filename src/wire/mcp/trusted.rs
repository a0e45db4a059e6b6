//! The trusted reader: a result whose bytes serde has validated already as
//! one JSON value (the `result` member the layer found in a response),
//! taken apart as [`TopFast`](super::TopFast) does, without validating
//! the bytes a second time.
//!
//! Values are not read, only skipped, 64 bytes at a time: masks of quotes,
//! backslashes and brackets (byte compares the compiler vectorizes, then
//! gathered word at a time), the escaped characters found from the runs of
//! backslashes (as simdjson does), so a string dense with escapes costs no
//! more than any other. On data like the layer bench's 10 MB result: about
//! 5 GB/s through its escaped text, 3 GB/s through compact JSON (serde's
//! validating skip: about 1 and 1.6). Skipping keeps no stack: the input
//! is valid, brackets match, a counter is enough (serde reads raw values
//! at any depth too).
//!
//! Anything unusual (not an object, no `content` array of objects, more
//! than [`MAX_CONTENT_BLOCKS`] blocks, a key serde would refuse) is left to
//! the serde path, which reads it as before and names its error.

use super::{MAX_CONTENT_BLOCKS, Raw, RawObject};

/// The top-level fields and the content blocks' fields of `json`, one
/// valid JSON value, exactly as `TopFast` reads them (`content` a `[]`
/// placeholder in place); `None`: anything unusual.
pub(super) fn read(json: &str) -> Option<(RawObject<'_>, Vec<RawObject<'_>>)> {
    let mut r = Reader {
        s: json,
        b: json.as_bytes(),
        i: 0,
    };
    r.ws();
    let mut blocks = None;
    let top = r.object(|r, key| {
        if key != "content" {
            return r.value();
        }
        // The last `content` wins, in the first one's place, as in a map.
        blocks = Some(r.blocks()?);
        Some(Raw::trusted("[]"))
    })?;
    r.ws();
    (r.i == r.b.len()).then_some(())?;
    Some((top, blocks?))
}

/// A position in valid JSON.
struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
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
            b'"' => string_end(self.b, start + 1)? + 1,
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

/// The index of the quote closing the string whose text starts at `at`
/// (the byte at `at` not escaped), 64 bytes at a time; `None` when `b`
/// ends first.
pub(crate) fn string_end(b: &[u8], mut at: usize) -> Option<usize> {
    let mut escapes = Escapes::default();
    while at < b.len() {
        let m = Masks::of(&block_at(b, at), false);
        let quotes = m.quote & !escapes.next(m.backslash);
        if quotes != 0 {
            return Some(at + quotes.trailing_zeros() as usize);
        }
        at += 64;
    }
    None
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

/// The 64 bytes from `at`, zeros past the end (no quote, backslash or bracket).
fn block_at(b: &[u8], at: usize) -> [u8; 64] {
    let rest = b.get(at..).unwrap_or_default();
    if let Some(Ok(full)) = rest.get(..64).map(<[u8; 64]>::try_from) {
        return full;
    }
    let mut block = [0u8; 64];
    block[..rest.len()].copy_from_slice(rest);
    block
}

/// Bit `k` of each mask: byte `k` of a 64-byte block is that character.
struct Masks {
    quote: u64,
    backslash: u64,
    /// `{` or `[`.
    open: u64,
    /// `}` or `]`.
    close: u64,
}

/// Bits of a byte's class: `"`, `\`, `{` or `[`, `}` or `]`.
const QUOTE: u8 = 1;
const BACKSLASH: u8 = 2;
const OPEN: u8 = 4;
const CLOSE: u8 = 8;

impl Masks {
    /// The masks of `block`; the brackets only when `brackets`. Each byte's
    /// class first, in a loop the compiler makes vector compares of, then
    /// each class gathered from the eight words, bit by bit.
    fn of(block: &[u8; 64], brackets: bool) -> Self {
        let mut classes = [0u8; 64];
        if brackets {
            for (class, &c) in classes.iter_mut().zip(block) {
                // `[` and `{` differ in bit 5 only, as do `]` and `}`.
                let folded = c | 0x20;
                *class = (u8::from(c == b'"') * QUOTE)
                    | (u8::from(c == b'\\') * BACKSLASH)
                    | (u8::from(folded == b'{') * OPEN)
                    | (u8::from(folded == b'}') * CLOSE);
            }
        } else {
            for (class, &c) in classes.iter_mut().zip(block) {
                *class = (u8::from(c == b'"') * QUOTE) | (u8::from(c == b'\\') * BACKSLASH);
            }
        }
        let mut m = Masks {
            quote: 0,
            backslash: 0,
            open: 0,
            close: 0,
        };
        for (k, word) in classes.chunks_exact(8).enumerate() {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            let w = u64::from_le_bytes(bytes);
            let shift = 8 * k;
            m.quote |= gather(w, QUOTE) << shift;
            m.backslash |= gather(w, BACKSLASH) << shift;
            if brackets {
                m.open |= gather(w, OPEN) << shift;
                m.close |= gather(w, CLOSE) << shift;
            }
        }
        m
    }
}

/// Whether each byte of `w` has the `class` bit, as the low eight bits.
fn gather(w: u64, class: u8) -> u64 {
    let lanes = (w >> class.trailing_zeros()) & 0x0101_0101_0101_0101;
    lanes.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit `k` set: an odd number of quotes at or before bit `k`.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The escaped characters of consecutive blocks, from their backslashes.
#[derive(Default)]
struct Escapes {
    /// 1: the first character of the next block is escaped.
    carry: u64,
}

impl Escapes {
    /// The escaped characters of the next block (simdjson's
    /// `find_escaped_branchless`): a character is escaped when an odd run
    /// of backslashes ends just before it.
    fn next(&mut self, backslash: u64) -> u64 {
        const EVEN: u64 = 0x5555_5555_5555_5555;
        let backslash = backslash & !self.carry;
        let follows = (backslash << 1) | self.carry;
        let odd_starts = backslash & !EVEN & !follows;
        let (even_runs, overflow) = odd_starts.overflowing_add(backslash);
        self.carry = u64::from(overflow);
        (EVEN ^ (even_runs << 1)) & follows
    }
}

#[cfg(test)]
mod tests;
