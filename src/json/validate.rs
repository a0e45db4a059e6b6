//! A JSON check over a whole text in memory: one value, whitespace around
//! it, nothing else; exactly what `serde_json::from_str` accepts when it
//! skips a value (`IgnoredAny`, then `end`): strings checked for raw
//! control characters and escapes (a `\u` escape for its four hex digits,
//! not for surrogates), numbers for their grammar, literals spelled out,
//! any depth.
//!
//! A string is read eight bytes at a time up to its first backslash (most
//! strings have none), then 64 at a time, as [`blocks`](super::blocks)
//! skips them: masks of the quotes and backslashes, the escaped characters
//! from the runs of backslashes, the escaped ones checked in bulk against
//! the one-letter escapes (a `\u` escape then checked alone), control
//! characters looked for only in a block that has one. Outside strings, a
//! token at a time, nesting on a bit stack (one bit per level: an object
//! or an array), no limit on the depth.
//!
//! Its speed against serde's skipping is measured by the `layer` bench
//! (see `benches/README.md`).
//!
//! [`Check`](super::Check) takes its input in pieces, a byte state at a
//! time; this one has it whole, which is what lets it read ahead.

use std::ops::Range;

use super::blocks::{Escapes, block_at, gather};
use super::swar::{WORD, controls, first, marks, word_at};

/// The text is not one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Invalid;

/// Whether `json` is one JSON value with whitespace around it, by
/// `serde_json`'s rules for a skipped value.
pub(crate) fn validate(json: &str) -> Result<(), Invalid> {
    validate_visiting(json, &mut Nothing)
}

/// A [`Visitor`] that ignores everything.
struct Nothing;

impl Visitor for Nothing {
    fn member(&mut self, _: usize, _: Range<usize>, _: Range<usize>) {}
}

/// [`validate`], calling `member` for each member of a top-level object as
/// it is crossed: the range of its key (quotes included) and of its value.
/// It may be called for some before the text is found invalid.
#[cfg(test)]
pub(crate) fn validate_with(
    json: &str,
    mut member: impl FnMut(Range<usize>, Range<usize>),
) -> Result<(), Invalid> {
    validate_nested(json, |depth, key, value| {
        if depth == 1 {
            member(key, value);
        }
    })
}

/// [`validate_with`], reporting also the members of the objects that are
/// values of the top-level object's members (`depth` 2; 1: the top-level
/// object's own), each before the member that holds it.
#[cfg(test)]
pub(crate) fn validate_nested(
    json: &str,
    member: impl FnMut(usize, Range<usize>, Range<usize>),
) -> Result<(), Invalid> {
    validate_visiting(json, &mut Members(member))
}

/// [`validate`], reporting to `visitor` what it crosses (see [`Visitor`]),
/// possibly some of it before the text is found invalid.
pub(crate) fn validate_visiting(json: &str, visitor: &mut impl Visitor) -> Result<(), Invalid> {
    let b = json.as_bytes();
    let mut validator = Validator {
        b,
        stack: Stack::default(),
    };
    match validator.run(ws(b, 0), visitor)? {
        end if ws(b, end) == b.len() => Ok(()),
        _ => Err(Invalid),
    }
}

/// A string value this long or longer (in bytes, quotes included) is
/// reported where it sits ([`Visitor::long_string`]): a later reader of the same text
/// steps over it at once instead of looking for its end again.
pub(crate) const LONG_STRING: usize = 16 << 10;

/// What the validator reports as it crosses a text, in text order.
pub(crate) trait Visitor {
    /// A member of the top-level object (`depth` 1) or of an object that is
    /// the value of one of its members (`depth` 2): the range of its key
    /// (quotes included) and of its value, each reported before the member
    /// that holds it.
    fn member(&mut self, depth: usize, key: Range<usize>, value: Range<usize>);

    /// A string value (not a key) of at least [`LONG_STRING`] bytes, at any
    /// depth: its range, quotes included.
    fn long_string(&mut self, at: Range<usize>) {
        let _ = at;
    }
}

/// A [`Visitor`] of the members only, to a closure.
#[cfg(test)]
struct Members<F>(F);

#[cfg(test)]
impl<F: FnMut(usize, Range<usize>, Range<usize>)> Visitor for Members<F> {
    fn member(&mut self, depth: usize, key: Range<usize>, value: Range<usize>) {
        (self.0)(depth, key, value);
    }
}

/// The text and the open objects and arrays.
struct Validator<'a> {
    b: &'a [u8],
    stack: Stack,
}

impl Validator<'_> {
    /// From a value at `i` on: a value at a time, then what ends it (`,`, a
    /// closing bracket), until the value at `i` ends: where it ends.
    fn run(&mut self, mut i: usize, visitor: &mut impl Visitor) -> Result<usize, Invalid> {
        let b = self.b;
        // By depth (1 and 2): the key and the start of the value being read.
        let mut key = [0..0, 0..0, 0..0];
        let mut start = [0; 3];
        'value: loop {
            if let Some(s) = start.get_mut(self.stack.depth) {
                *s = i;
            }
            i = match b.get(i) {
                Some(b'{') => {
                    i = ws(b, i + 1);
                    if b.get(i) != Some(&b'}') {
                        self.stack.push(true);
                        i = self.key(i, &mut key)?;
                        continue 'value;
                    }
                    i + 1
                }
                Some(b'[') => {
                    i = ws(b, i + 1);
                    if b.get(i) != Some(&b']') {
                        self.stack.push(false);
                        continue 'value;
                    }
                    i + 1
                }
                Some(b'"') => {
                    let end = string(b, i + 1)?;
                    if end - i >= LONG_STRING {
                        visitor.long_string(i..end);
                    }
                    end
                }
                Some(b'-' | b'0'..=b'9') => number(b, i)?,
                Some(b't') => literal(b, i, b"true")?,
                Some(b'f') => literal(b, i, b"false")?,
                Some(b'n') => literal(b, i, b"null")?,
                _ => return Err(Invalid),
            };
            // A value ended at `i`: what comes after it, closing brackets
            // one after the other.
            loop {
                let depth = self.stack.depth;
                if (depth == 1 || depth == 2) && self.stack.in_object {
                    visitor.member(depth, key[depth].clone(), start[depth]..i);
                }
                if depth == 0 {
                    return Ok(i);
                }
                i = ws(b, i);
                match (b.get(i), self.stack.in_object) {
                    (Some(b','), true) => {
                        i = self.key(ws(b, i + 1), &mut key)?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        i = ws(b, i + 1);
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.stack.pop();
                        i += 1;
                    }
                    _ => return Err(Invalid),
                }
            }
        }
    }

    /// A key at `i`, then `:`: where its value starts. The key's range is
    /// put in `key` (by depth) when it is at depth 1 or 2.
    fn key(&self, i: usize, key: &mut [Range<usize>; 3]) -> Result<usize, Invalid> {
        if self.b.get(i) != Some(&b'"') {
            return Err(Invalid);
        }
        let end = string(self.b, i + 1)?;
        if let Some(k) = key.get_mut(self.stack.depth) {
            *k = i..end;
        }
        let colon = ws(self.b, end);
        match self.b.get(colon) {
            Some(b':') => Ok(ws(self.b, colon + 1)),
            _ => Err(Invalid),
        }
    }
}

/// The open objects and arrays: one bit each (1: an object), the first 64
/// in a word of their own (no allocation for the common depths).
#[derive(Default)]
struct Stack {
    depth: usize,
    /// Whether the innermost open value is an object.
    in_object: bool,
    low: u64,
    high: Vec<u64>,
}

impl Stack {
    /// Whether the open value at `level` (1: the outermost) is an object.
    fn is_object(&self, level: usize) -> bool {
        let d = level - 1;
        let word = match d.checked_sub(64) {
            None => self.low,
            Some(h) => self.high[h / 64],
        };
        word >> (d % 64) & 1 == 1
    }

    fn push(&mut self, object: bool) {
        let d = self.depth;
        let bit = 1u64 << (d % 64);
        let word = match d.checked_sub(64) {
            None => &mut self.low,
            Some(h) => {
                if h / 64 == self.high.len() {
                    self.high.push(0);
                }
                &mut self.high[h / 64]
            }
        };
        *word = if object { *word | bit } else { *word & !bit };
        self.depth += 1;
        self.in_object = object;
    }

    /// Closes the innermost value; the depth is at least 1.
    fn pop(&mut self) {
        self.depth -= 1;
        if self.depth > 0 {
            self.in_object = self.is_object(self.depth);
        }
    }
}

/// Past the JSON whitespace from `i`.
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Past the literal `word` at `i`.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Result<usize, Invalid> {
    match b.get(i..i + word.len()) {
        Some(w) if w == word => Ok(i + word.len()),
        _ => Err(Invalid),
    }
}

/// Past the digits from `i`.
fn digits(b: &[u8], mut i: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(i) {
        i += 1;
    }
    i
}

/// Past at least one digit from `i`.
fn some_digits(b: &[u8], i: usize) -> Result<usize, Invalid> {
    match digits(b, i) {
        end if end > i => Ok(end),
        _ => Err(Invalid),
    }
}

/// Past the number at `i` (JSON's grammar: no leading zero, digits after
/// `.` and after the exponent's sign). What follows is read as the next
/// token, so `01` or `1x` is refused there.
fn number(b: &[u8], mut i: usize) -> Result<usize, Invalid> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match b.get(i) {
        Some(b'0') => i + 1,
        Some(b'1'..=b'9') => digits(b, i + 1),
        _ => return Err(Invalid),
    };
    if b.get(i) == Some(&b'.') {
        i = some_digits(b, i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = some_digits(b, i)?;
    }
    Ok(i)
}

/// Past the closing quote of the string whose text starts at `at`, its
/// characters and escapes checked: eight bytes at a time up to its first
/// escape (most strings have none), 64 at a time from there.
fn string(b: &[u8], at: usize) -> Result<usize, Invalid> {
    let mut i = at;
    while let Some(w) = word_at(b, i) {
        let special = marks(w, b'"') | marks(w, b'\\') | controls(w);
        if special != 0 {
            let k = i + first(special);
            if b[k] == b'"' {
                return Ok(k + 1);
            }
            // A backslash starts a run here: the blocks take it from here.
            return blocks(b, k);
        }
        i += WORD;
    }
    blocks(b, i)
}

/// [`string`] from `at`, no backslash just before it, 64 bytes at a time.
fn blocks(b: &[u8], mut at: usize) -> Result<usize, Invalid> {
    let mut escapes = Escapes::default();
    while at < b.len() {
        let c = Classes::of(&block_at(b, at));
        let escaped = escapes.next(c.backslash);
        let quotes = c.quote & !escaped;
        // The bits before the closing quote (all of them without one).
        let before = quotes.wrapping_sub(1) & !quotes;
        if c.control & before != 0 {
            return Err(Invalid);
        }
        let escaped = escaped & before;
        let mut odd = match escaped {
            0 => 0,
            _ => escaped & !c.letters(),
        };
        while odd != 0 {
            // Not a one-letter escape: `\u` and four hex digits, or refused.
            let k = at + odd.trailing_zeros() as usize;
            match b.get(k..k + 5) {
                Some([b'u', hex @ ..]) if hex.iter().all(u8::is_ascii_hexdigit) => {}
                _ => return Err(Invalid),
            }
            odd &= odd - 1;
        }
        if quotes != 0 {
            return Ok(at + quotes.trailing_zeros() as usize + 1);
        }
        at += 64;
    }
    Err(Invalid)
}

/// Bit `k` of each mask: what byte `k` of a 64-byte block is.
struct Classes {
    quote: u64,
    backslash: u64,
    /// A control character (below 0x20); only gathered when the block
    /// has one.
    control: u64,
    /// Each byte's class bits, eight bytes a word, for the classes
    /// gathered only when needed.
    words: [u64; 8],
}

/// Bits of a byte's class.
const QUOTE: u8 = 1;
const BACKSLASH: u8 = 2;
const CONTROL: u8 = 4;
/// The letter of a one-letter escape (`"\/bfnrt`).
const LETTER: u8 = 8;

impl Classes {
    /// The masks of `block`: each byte's class in a loop the compiler makes
    /// vector compares of, then gathered word by word.
    fn of(block: &[u8; 64]) -> Self {
        let mut classes = [0u8; 64];
        for (class, &c) in classes.iter_mut().zip(block) {
            let letter = (c == b'"')
                | (c == b'\\')
                | (c == b'/')
                | (c == b'b')
                | (c == b'f')
                | (c == b'n')
                | (c == b'r')
                | (c == b't');
            *class = (u8::from(c == b'"') * QUOTE)
                | (u8::from(c == b'\\') * BACKSLASH)
                | (u8::from(c < 0x20) * CONTROL)
                | (u8::from(letter) * LETTER);
        }
        let present = classes.iter().fold(0, |all, &c| all | c);
        let mut m = Classes {
            quote: 0,
            backslash: 0,
            control: 0,
            words: [0; 8],
        };
        for (k, word) in classes.chunks_exact(8).enumerate() {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            let w = u64::from_le_bytes(bytes);
            m.words[k] = w;
            let shift = 8 * k;
            m.quote |= gather(w, QUOTE) << shift;
            m.backslash |= gather(w, BACKSLASH) << shift;
            if present & CONTROL != 0 {
                m.control |= gather(w, CONTROL) << shift;
            }
        }
        m
    }

    /// The mask of the one-letter escapes' letters.
    fn letters(&self) -> u64 {
        let mut m = 0;
        for (k, &w) in self.words.iter().enumerate() {
            m |= gather(w, LETTER) << (8 * k);
        }
        m
    }
}

#[cfg(test)]
mod tests;
