//! A JSON check that takes its input a piece at a time, in bounded memory:
//! one value, whitespace around it, nothing else; what `serde_json` accepts
//! when it skips a value read from a reader (`IgnoredAny`, then `end`):
//! strings checked for raw control characters and escapes (a `\u` escape
//! for its four hex digits, not for surrogates; bytes not for UTF-8),
//! numbers for their grammar, literals spelled out.
//!
//! `serde_json` reading from a reader takes one byte at a time through
//! its `Read` adaptor; this takes a buffer at a time, crosses the plain
//! bytes of a string (the bulk of a large result) eight at a time and a
//! one-letter escape in one step. (Validating strings 64 bytes at a time,
//! as `blocks` skips them, was tried: no faster on a spilled result.) Nesting is a bit stack (one bit per
//! level, an object or an array) capped at [`MAX_DEPTH`] levels, where
//! `serde_json`'s skipping keeps a byte per level without a cap.

use super::swar::{WORD, controls, first, marks};

/// Nesting this check follows (128 KiB of bit stack); deeper is refused.
pub(crate) const MAX_DEPTH: usize = 1 << 20;

/// Where the check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the top-level value.
    Start,
    /// A value is expected (after `:`, or after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value in an object or array: `,` or its closing bracket.
    After,
    /// After the top-level value: whitespace only.
    End,
    /// In a string; a key when `key`.
    Str { key: bool },
    /// After a backslash in a string.
    Escape { key: bool },
    /// In a `\u` escape, `left` hex digits to go.
    Hex { key: bool, left: u8 },
    /// In a number.
    Num(Num),
    /// In a literal: the bytes still expected.
    Literal(&'static [u8]),
}

/// Where a number is, in its grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    /// After `-`.
    Minus,
    /// After a leading `0`.
    Zero,
    /// In the integer digits.
    Int,
    /// After `.`.
    Dot,
    /// In the fraction digits.
    Frac,
    /// After `e` or `E`.
    Exp,
    /// After the exponent's sign.
    ExpSign,
    /// In the exponent digits.
    ExpDigits,
}

impl Num {
    /// Whether a number may end here.
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }

    /// The state after `b`; `None` when `b` is not part of the number.
    fn next(self, b: u8) -> Option<Num> {
        let digit = b.is_ascii_digit();
        Some(match (self, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, _) if digit => Num::Int,
            (Num::Int, _) if digit => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
            (Num::Dot | Num::Frac, _) if digit => Num::Frac,
            (Num::Exp, b'+' | b'-') => Num::ExpSign,
            (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => Num::ExpDigits,
            _ => return None,
        })
    }
}

/// Why the input is not one JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// Byte offset of the first byte that cannot be (or of the end).
    pub at: u64,
}

/// The check, fed a piece at a time ([`feed`](Self::feed)), then given the
/// input ended ([`finish`](Self::finish)).
#[derive(Debug)]
pub(crate) struct Check {
    at: At,
    /// One bit per open object (1) or array (0), `depth` of them.
    stack: Vec<u64>,
    depth: usize,
    /// Bytes fed so far.
    pos: u64,
}

impl Default for Check {
    fn default() -> Self {
        Check {
            at: At::Start,
            stack: Vec::new(),
            depth: 0,
            pos: 0,
        }
    }
}

impl Check {
    /// Checks the next bytes of the input.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), Invalid> {
        let mut i = 0;
        while i < bytes.len() {
            if let At::Str { key } = self.at {
                i += plain_run(&bytes[i..]);
                let Some(&b) = bytes.get(i) else { break };
                self.at = match (b, bytes.get(i + 1)) {
                    (b'"', _) if key => At::Colon,
                    (b'"', _) => self.after_value(),
                    // A one-letter escape, both bytes here: still in the string.
                    (b'\\', Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')) => {
                        i += 2;
                        continue;
                    }
                    (b'\\', _) => At::Escape { key },
                    _ => return Err(self.invalid(i)),
                };
                i += 1;
                continue;
            }
            match self.step(bytes[i]) {
                Step::Next => i += 1,
                Step::Again => {}
                Step::Bad => return Err(self.invalid(i)),
            }
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// The input ended: whether it was one JSON value.
    pub(crate) fn finish(mut self) -> Result<(), Invalid> {
        if let At::Num(n) = self.at
            && n.complete()
        {
            self.at = self.after_value();
        }
        match self.at {
            At::End => Ok(()),
            _ => Err(Invalid { at: self.pos }),
        }
    }

    fn invalid(&self, i: usize) -> Invalid {
        Invalid {
            at: self.pos + i as u64,
        }
    }

    /// One byte outside a string's plain run.
    fn step(&mut self, b: u8) -> Step {
        let ws = matches!(b, b' ' | b'\n' | b'\t' | b'\r');
        self.at = match self.at {
            At::Start
            | At::Value
            | At::ArrayFirst
            | At::ObjectFirst
            | At::Key
            | At::Colon
            | At::After
            | At::End
                if ws =>
            {
                return Step::Next;
            }
            At::Start | At::Value => match self.value(b) {
                Some(at) => at,
                None => return Step::Bad,
            },
            At::ArrayFirst if b == b']' => {
                self.pop();
                self.after_value()
            }
            At::ArrayFirst => match self.value(b) {
                Some(at) => at,
                None => return Step::Bad,
            },
            At::ObjectFirst if b == b'}' => {
                self.pop();
                self.after_value()
            }
            At::ObjectFirst | At::Key if b == b'"' => At::Str { key: true },
            At::Colon if b == b':' => At::Value,
            At::After => return self.after(b),
            At::Escape { key } => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => At::Str { key },
                b'u' => At::Hex { key, left: 4 },
                _ => return Step::Bad,
            },
            At::Hex { key, left } if b.is_ascii_hexdigit() => match left {
                1 => At::Str { key },
                _ => At::Hex {
                    key,
                    left: left - 1,
                },
            },
            At::Num(n) => match n.next(b) {
                Some(n) => At::Num(n),
                None if n.complete() => {
                    // The byte after the number is read in the next state.
                    self.at = self.after_value();
                    return Step::Again;
                }
                None => return Step::Bad,
            },
            At::Literal([first, rest @ ..]) if b == *first => match rest {
                [] => self.after_value(),
                _ => At::Literal(rest),
            },
            _ => return Step::Bad,
        };
        Step::Next
    }

    /// The first byte of a value.
    fn value(&mut self, b: u8) -> Option<At> {
        Some(match b {
            b'{' => {
                self.push(true)?;
                At::ObjectFirst
            }
            b'[' => {
                self.push(false)?;
                At::ArrayFirst
            }
            b'"' => At::Str { key: false },
            b'-' => At::Num(Num::Minus),
            b'0' => At::Num(Num::Zero),
            b'1'..=b'9' => At::Num(Num::Int),
            b't' => At::Literal(b"rue"),
            b'f' => At::Literal(b"alse"),
            b'n' => At::Literal(b"ull"),
            _ => return None,
        })
    }

    /// A byte after a value inside an object or array.
    fn after(&mut self, b: u8) -> Step {
        let in_object = self.top();
        self.at = match b {
            b',' if in_object => At::Key,
            b',' => At::Value,
            b'}' if in_object => {
                self.pop();
                self.after_value()
            }
            b']' if !in_object => {
                self.pop();
                self.after_value()
            }
            _ => return Step::Bad,
        };
        Step::Next
    }

    /// Where the check is once a value has ended.
    fn after_value(&self) -> At {
        match self.depth {
            0 => At::End,
            _ => At::After,
        }
    }

    fn push(&mut self, object: bool) -> Option<()> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == self.stack.len() {
            self.stack.push(0);
        }
        let mask = 1u64 << bit;
        match object {
            true => self.stack[word] |= mask,
            false => self.stack[word] &= !mask,
        }
        self.depth += 1;
        Some(())
    }

    fn pop(&mut self) {
        self.depth -= 1;
    }

    /// Whether the innermost open value is an object.
    fn top(&self) -> bool {
        let d = self.depth - 1;
        self.stack[d / 64] >> (d % 64) & 1 == 1
    }
}

/// What to do after a byte.
enum Step {
    /// It was taken: on to the next byte.
    Next,
    /// Read the same byte again (the state changed under it).
    Again,
    /// It cannot be here.
    Bad,
}

/// The number of bytes at the start of `bytes` that a string holds as they
/// are: no `"`, no backslash, no control character.
fn plain_run(bytes: &[u8]) -> usize {
    run::<true>(bytes)
}

/// The number of bytes at the start of `bytes`, in a string of valid JSON,
/// before its next `"` or backslash (all of them when there is none). For
/// the short runs between escapes, cheaper than a `memchr2` call.
pub(crate) fn to_quote_or_backslash(bytes: &[u8]) -> usize {
    run::<false>(bytes)
}

/// The bytes before the first `"`, backslash or (with `CONTROL`) control
/// character, eight at a time: the lowest byte flagged in a word is exact
/// (a borrow only runs upwards from a byte that is flagged).
fn run<const CONTROL: bool>(bytes: &[u8]) -> usize {
    let mut chunks = bytes.chunks_exact(WORD);
    let mut n = 0;
    for chunk in &mut chunks {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let mut special = marks(w, b'"') | marks(w, b'\\');
        if CONTROL {
            special |= controls(w);
        }
        if special != 0 {
            return n + first(special);
        }
        n += WORD;
    }
    n + chunks
        .remainder()
        .iter()
        .take_while(|&&b| b != b'"' && b != b'\\' && (!CONTROL || b >= 0x20))
        .count()
}

#[cfg(test)]
mod tests;
