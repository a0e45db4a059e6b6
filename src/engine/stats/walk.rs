//! The fold of one record read by a walk of its own: a record is a data
//! line the engine made (one valid JSON value), so nothing is checked
//! twice. What `serde_json` would hand its visitor ([`fold`](super::fold)
//! reads it so, in the tests, and must agree) is found here with the same
//! answers: strings decoded as serde decodes them (a lone surrogate an
//! error), numbers typed as serde types them (`-0` and integers beyond
//! 64 bits are floats, a float beyond `f64` an error), keys decoded as
//! strings are; what is not looked at is
//! skipped as serde skips it, without a check. An error stops the record
//! where serde's would: it counts as opaque, what came before stays.

use super::fold::{Fold, tracked};
use super::memory::MemoryFields;
use super::{RecordStats, ty};
use crate::json::{decode_string, to_quote_or_backslash};

/// Why a record cannot be folded in whole (what serde would refuse).
pub(super) struct Opaque;

/// A position in a record: valid JSON.
struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Objects and arrays open at the cursor, and the most ever.
    depth: usize,
    deepest: usize,
}

/// Folds `record` into `stats` as [`Root`](super::fold::Root) does: its
/// type, and how deep its objects and arrays nest when it was walked whole.
pub(super) fn record(stats: &mut RecordStats, record: &str) -> (Result<u8, Opaque>, Option<usize>) {
    let mut c = Cursor {
        s: record,
        b: record.as_bytes(),
        i: 0,
        depth: 0,
        deepest: 0,
    };
    let read = c.walk(stats);
    let deepest = read.is_ok().then_some(c.deepest);
    (read, deepest)
}

impl<'a> Cursor<'a> {
    /// The whole record.
    fn walk(&mut self, stats: &mut RecordStats) -> Result<u8, Opaque> {
        let c = self;
        c.ws();
        let t = if c.peek() == Some(b'{') {
            c.root_object(stats)?
        } else {
            c.value(Fold {
                node: Some(&mut stats.schema),
                field: None,
                confidence: None,
                depth: 0,
            })?
        };
        c.ws();
        if c.i == c.b.len() { Ok(t) } else { Err(Opaque) }
    }

    /// Steps into an object or array (the cursor on its bracket).
    fn open(&mut self) {
        self.i += 1;
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
    }

    /// Steps out of an object or array (its bracket taken already).
    fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips JSON whitespace (a data line has none; a record handed in
    /// otherwise may).
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Takes `byte`, the next after whitespace, if it is.
    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        let next = self.peek() == Some(byte);
        self.i += usize::from(next);
        next
    }

    /// The string literal at the cursor, raw (quotes included), and
    /// whether it holds an escape: both from one pass, eight bytes at a
    /// time (keys and values are short), where a `string_end` would need
    /// a second pass for the escape.
    fn literal(&mut self) -> Result<(&'a str, bool), Opaque> {
        let start = self.i;
        let mut j = start + 1;
        let mut escaped = false;
        loop {
            j += to_quote_or_backslash(self.b.get(j..).unwrap_or_default());
            match self.b.get(j) {
                Some(b'"') => break,
                Some(_) => {
                    escaped = true;
                    j += 2;
                }
                None => return Err(Opaque),
            }
        }
        self.i = j + 1;
        let raw = self.s.get(start..=j).ok_or(Opaque)?;
        Ok((raw, escaped))
    }

    /// The string literal at the cursor, decoded as serde decodes it.
    fn text(&mut self) -> Result<std::borrow::Cow<'a, str>, Opaque> {
        let (raw, escaped) = self.literal()?;
        if !escaped {
            return Ok(std::borrow::Cow::Borrowed(&raw[1..raw.len() - 1]));
        }
        decode_string(raw)
            .map(std::borrow::Cow::Owned)
            .map_err(|_| Opaque)
    }

    /// An object record: each top-level field folded into its node, its
    /// field statistics and the memory check.
    fn root_object(&mut self, stats: &mut RecordStats) -> Result<u8, Opaque> {
        let RecordStats {
            schema,
            fields,
            next_field,
            provenance_confidence,
            memory,
            ..
        } = stats;
        schema.types |= ty::OBJECT;
        schema.begin_object();
        *next_field = 0;
        let mut memory_fields = MemoryFields::default();
        self.members(|c, key| {
            let t = c.value(Fold {
                node: schema.child(key),
                field: tracked(fields, next_field, key),
                confidence: (key == "provenance").then_some(&mut *provenance_confidence),
                depth: 1,
            })?;
            memory_fields.note(key, t);
            Ok(())
        })?;
        memory.fold(&memory_fields);
        Ok(ty::OBJECT)
    }

    /// The object at the cursor: `member` called with each key, the cursor
    /// on its value, which it must take.
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &str) -> Result<(), Opaque>,
    ) -> Result<(), Opaque> {
        self.open();
        if !self.eat(b'}') {
            loop {
                self.ws();
                let key = self.text()?;
                self.eat(b':');
                self.ws();
                member(self, &key)?;
                if !self.eat(b',') {
                    self.eat(b'}');
                    break;
                }
            }
        }
        self.close();
        Ok(())
    }

    /// The value at the cursor, folded in as `fold` says; its type.
    fn value(&mut self, mut fold: Fold<'_>) -> Result<u8, Opaque> {
        match self.peek().ok_or(Opaque)? {
            b'"' => {
                let text = self.text()?;
                if let Some(field) = fold.field.as_deref_mut() {
                    field.observe_str(&text);
                }
                Ok(fold.typed(ty::STRING))
            }
            b'{' => self.object(fold),
            b'[' => self.array(fold),
            b't' | b'f' => {
                self.i += if self.b[self.i] == b't' { 4 } else { 5 };
                Ok(fold.typed(ty::BOOL))
            }
            b'n' => {
                self.i += 4;
                Ok(fold.typed(ty::NULL))
            }
            _ => {
                let (t, f) = self.number()?;
                Ok(fold.number(t, f))
            }
        }
    }

    /// The number at the cursor as serde reads it for a visitor: its type
    /// (an integer when it fits `u64`, or `i64` below zero, `-0` aside)
    /// and its value.
    fn number(&mut self) -> Result<(u8, f64), Opaque> {
        let start = self.i;
        let mut j = start + usize::from(self.b[start] == b'-');
        let digits = j;
        while self.b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        let int_end = j;
        while self
            .b
            .get(j)
            .is_some_and(|b| matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            j += 1;
        }
        self.i = j;
        let literal = &self.s[start..j];
        if j == int_end {
            let negative = digits > start;
            if let Ok(n) = self.s[digits..int_end].parse::<u64>() {
                match negative {
                    false => return Ok((ty::INTEGER, n as f64)),
                    true if n != 0 && n <= 1 << 63 => {
                        return Ok((ty::INTEGER, (n as i64).wrapping_neg() as f64));
                    }
                    true => {}
                }
            }
        }
        // A fraction, an exponent, `-0`, or more than 64 bits: a float, as
        // serde computes it (out of range: an error).
        serde_json::from_str::<f64>(literal)
            .map(|f| (ty::NUMBER, f))
            .map_err(|_| Opaque)
    }

    /// An array, folded into its node's items when described.
    fn array(&mut self, mut fold: Fold<'_>) -> Result<u8, Opaque> {
        let depth = fold.depth + 1;
        let mut items = fold
            .described()
            .map(|node| &mut **node.items.get_or_insert_with(Default::default));
        self.open();
        if !self.eat(b']') {
            loop {
                self.ws();
                match items.as_deref_mut() {
                    Some(node) => {
                        self.value(Fold {
                            node: Some(node),
                            field: None,
                            confidence: None,
                            depth,
                        })?;
                    }
                    None => self.skip()?,
                }
                if !self.eat(b',') {
                    self.eat(b']');
                    break;
                }
            }
        }
        self.close();
        Ok(fold.typed(ty::ARRAY))
    }

    /// An object below the top: its members folded into their nodes when
    /// described, and a `confidence` into its statistics.
    fn object(&mut self, mut fold: Fold<'_>) -> Result<u8, Opaque> {
        let depth = fold.depth + 1;
        let mut confidence = fold.confidence.take();
        let mut node = fold.described();
        if let Some(node) = node.as_deref_mut() {
            node.begin_object();
        }
        self.members(|c, key| {
            let child = node.as_deref_mut().and_then(|n| n.child(key));
            let field = confidence.as_deref_mut().filter(|_| key == "confidence");
            if child.is_none() && field.is_none() {
                return c.skip();
            }
            c.value(Fold {
                node: child,
                field,
                confidence: None,
                depth,
            })
            .map(drop)
        })?;
        Ok(fold.typed(ty::OBJECT))
    }

    /// Skips the value at the cursor, looking at nothing (serde's
    /// `IgnoredAny` of valid JSON: never an error).
    fn skip(&mut self) -> Result<(), Opaque> {
        match self.peek().ok_or(Opaque)? {
            b'"' => {
                self.literal()?;
            }
            b'{' | b'[' => {
                let outside = self.depth;
                self.open();
                while self.depth > outside {
                    match self.peek().ok_or(Opaque)? {
                        b'"' => {
                            self.literal()?;
                        }
                        b'{' | b'[' => self.open(),
                        b'}' | b']' => {
                            self.i += 1;
                            self.close();
                        }
                        _ => self.i += 1,
                    }
                }
            }
            _ => {
                while self.peek().is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r')
                }) {
                    self.i += 1;
                }
            }
        }
        Ok(())
    }
}
