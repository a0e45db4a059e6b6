//! The walk over the children of one object or array too large to hold:
//! their keys and where each value starts and ends, each child's bytes
//! minified as they stream by when the visitor wants them, long strings
//! stepped over. Memory: a buffer of [`CHUNK`] bytes and the key being read
//! (at most [`MAX_KEY`] bytes); the depth is a counter. The JSON was
//! checked first ([`check_json`](super::scan::check_json)); on anything
//! unexpected the walk returns [`NotStreamable`] rather than guess.

use std::io::Read;

use super::scan::{CHUNK, NotStreamable};
use crate::json::to_quote_or_backslash;
use crate::json::{string_end, string_end_in_chunk};

/// Longest key kept of an object member (longer ones are named by their
/// first bytes; no key we look for is that long).
const MAX_KEY: usize = 256;

/// What a walk reports about the children of the value walked.
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
    /// A string of [`LONG_STRING`] bytes or more inside a child, its
    /// literal from `start` to just before `end` (quotes included).
    fn long_string(&mut self, _start: u64, _end: u64) {}
    /// Where the string inside a child whose literal starts at `start`
    /// ends (just after its closing quote), when an earlier walk reported
    /// it to [`long_string`](Self::long_string): the walk then takes its
    /// bytes without looking at them.
    fn known_string_end(&mut self, _start: u64) -> Option<u64> {
        None
    }
}

/// Strings this long are reported to [`Visit::long_string`], so that a later
/// walk over the same bytes can step over them.
pub(super) const LONG_STRING: u64 = 64 * 1024;

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
/// around it allowed, nothing else), reporting each child to `visit`.
pub(super) fn walk(mut input: impl Read, visit: &mut dyn Visit) -> Result<Outer, NotStreamable> {
    let mut buf = vec![0u8; CHUNK];
    let mut w = Walker {
        wants: visit.wants_bytes(),
        out: Vec::new(),
        outer: Outer::default(),
        at: At::Before,
        depth: 0,
        in_str: false,
        esc: false,
        key: Vec::new(),
        pos: 0,
        child_end: 0,
        str_start: 0,
        known_end: None,
    };
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        w.chunk(&buf[..n], visit)?;
        w.flush(visit, 1)?;
    }
    if w.at != At::After {
        return Err(NotStreamable("the value does not end"));
    }
    Ok(w.outer)
}

/// The state of [`walk`]: one state machine over every byte, the hot loop
/// of a spilled result.
struct Walker {
    /// Whether the visitor wants the children's bytes, and those not yet
    /// handed over.
    wants: bool,
    out: Vec<u8>,
    outer: Outer,
    at: At,
    depth: u32,
    in_str: bool,
    esc: bool,
    /// The key being read (cut at [`MAX_KEY`] bytes).
    key: Vec<u8>,
    /// Bytes walked.
    pos: u64,
    /// Position just after the last byte of the current child.
    child_end: u64,
    /// The string being read inside a child: where it started, and where
    /// it ends when the visitor knew ([`Visit::known_string_end`]).
    str_start: u64,
    known_end: Option<u64>,
}

impl Walker {
    /// Walks the next bytes.
    fn chunk(&mut self, buf: &[u8], visit: &mut dyn Visit) -> Result<(), NotStreamable> {
        let n = buf.len();
        let mut i = 0;
        while i < n {
            if let Some(end) = self.known_end {
                // A string a walk before this one found long: taken whole.
                let take = (end - self.pos).min((n - i) as u64) as usize;
                if self.wants {
                    self.out.extend_from_slice(&buf[i..i + take]);
                }
                (i, self.pos) = (i + take, self.pos + take as u64);
                if self.pos == end {
                    (self.in_str, self.esc, self.known_end) = (false, false, None);
                    self.child_end = self.pos;
                }
                continue;
            }
            if self.in_str && !self.esc && !self.wants && self.at == At::InValue {
                i = self.skip_string(&buf[..n], i);
                if i == n {
                    continue;
                }
            }
            if self.in_str && !self.esc {
                // The plain bytes of a string up to its next quote or
                // backslash, in one step (most of a result's bytes).
                let run = to_quote_or_backslash(&buf[i..n]);
                if run > 0 {
                    self.plain(&buf[i..i + run]);
                    i += run;
                    self.flush(visit, CHUNK)?;
                    continue;
                }
                // An escape and its byte inside a child: plain bytes too.
                if self.at == At::InValue && buf[i] == b'\\' && i + 1 < n {
                    self.plain(&buf[i..i + 2]);
                    i += 2;
                    continue;
                }
            }
            if !self.in_str && self.depth >= 2 && self.at == At::InValue {
                // Inside an array or object of a child: up to its next
                // string or its closing bracket in one step.
                i = self.nested(buf, i, visit);
                self.flush(visit, CHUNK)?;
                if i == n {
                    continue;
                }
            }
            let b = buf[i];
            i += 1;
            let here = self.pos;
            self.pos += 1;
            if self.in_str {
                self.in_string(b, visit);
            } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                match self.at {
                    At::Before => self.outer.lead += 1,
                    At::After if self.depth == 0 => self.outer.trail += 1,
                    _ => self.outer.inner_ws += 1,
                }
            } else {
                self.structural(b, here, visit)?;
                self.flush(visit, CHUNK)?;
            }
        }
        Ok(())
    }

    /// Hands the bytes kept over to the visitor once there are `at_least`.
    fn flush(&mut self, visit: &mut dyn Visit, at_least: usize) -> Result<(), NotStreamable> {
        if self.wants && self.out.len() >= at_least {
            visit.bytes(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Steps over the bytes of a string inside a child, not wanted, from
    /// `i` (not escaped) to its closing quote or the end of `buf`; where it
    /// stopped.
    fn skip_string(&mut self, buf: &[u8], i: usize) -> usize {
        let to = match string_end_in_chunk(buf, i) {
            Ok(quote) => quote,
            Err(escaped) => {
                self.esc = escaped;
                buf.len()
            }
        };
        self.pos += (to - i) as u64;
        self.child_end = self.pos;
        to
    }

    /// The bytes of an array or object nested in a child, from `i` (not
    /// in a string) to the bracket that closes the child's outermost array
    /// or object, a string that does not end in `buf`, or the end of `buf`
    /// (where it stopped): brackets counted, whitespace outside strings
    /// counted and left out of the bytes kept, the rest (strings whole)
    /// kept as it is.
    fn nested(&mut self, buf: &[u8], start: usize, visit: &mut dyn Visit) -> usize {
        let (mut i, mut run) = (start, start);
        while i < buf.len() {
            match buf[i] {
                b'"' => match string_end(buf, i + 1) {
                    Some(quote) => {
                        if (quote + 1 - i) as u64 >= LONG_STRING {
                            let at = self.pos + (i - start) as u64;
                            visit.long_string(at, at + (quote + 1 - i) as u64);
                        }
                        i = quote;
                    }
                    None => break,
                },
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' if self.depth == 2 => break,
                b'}' | b']' => self.depth -= 1,
                b' ' | b'\t' | b'\n' | b'\r' => {
                    // The whole run of whitespace (an indentation) at once.
                    self.keep(&buf[run..i]);
                    let spaces = buf[i..]
                        .iter()
                        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                        .count();
                    self.outer.inner_ws += spaces as u64;
                    (i, run) = (i + spaces, i + spaces);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.keep(&buf[run..i]);
        if let Some(last) = buf[start..i].iter().rposition(|b| !b.is_ascii_whitespace()) {
            self.child_end = self.pos + last as u64 + 1;
        }
        self.pos += (i - start) as u64;
        i
    }

    /// Bytes of a child kept for the visitor, when it wants them.
    fn keep(&mut self, bytes: &[u8]) {
        if self.wants {
            self.out.extend_from_slice(bytes);
        }
    }

    /// Plain bytes of a string.
    fn plain(&mut self, bytes: &[u8]) {
        match self.at {
            At::InKey => {
                let room = MAX_KEY.saturating_sub(self.key.len());
                self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            At::InValue => {
                if self.wants {
                    self.out.extend_from_slice(bytes);
                }
                self.child_end = self.pos + bytes.len() as u64;
            }
            _ => {}
        }
        self.pos += bytes.len() as u64;
    }

    /// A quote, a backslash or an escaped byte in a string.
    fn in_string(&mut self, b: u8, visit: &mut dyn Visit) {
        if self.esc {
            self.esc = false;
        } else if b == b'\\' {
            self.esc = true;
        } else if b == b'"' {
            self.in_str = false;
        }
        match self.at {
            At::InKey if self.in_str => {
                let room = self.key.len() < MAX_KEY;
                self.key.extend(Some(b).filter(|_| room));
            }
            At::InKey => {
                visit.key(&self.key);
                self.key.clear();
                self.at = At::Colon;
            }
            At::InValue => {
                if self.wants {
                    self.out.push(b);
                }
                self.child_end = self.pos;
                if !self.in_str && self.pos - self.str_start >= LONG_STRING {
                    visit.long_string(self.str_start, self.pos);
                }
            }
            _ => {}
        }
    }

    /// A string starts at `here` inside a child.
    fn string_starts(&mut self, here: u64, visit: &mut dyn Visit) {
        self.in_str = true;
        self.str_start = here;
        self.known_end = visit.known_string_end(here).filter(|&e| e > self.pos);
    }

    /// A byte outside strings that is no whitespace.
    fn structural(&mut self, b: u8, here: u64, visit: &mut dyn Visit) -> Result<(), NotStreamable> {
        match self.at {
            At::Before => {
                if b != b'{' && b != b'[' {
                    return Err(NotStreamable("not an object or an array"));
                }
                self.outer.open = b;
                self.depth = 1;
                self.at = At::Expect;
            }
            At::Expect | At::Colon if self.depth == 1 && (b == b'}' || b == b']') => {
                self.depth = 0;
                self.at = At::After;
            }
            At::Expect if self.outer.open == b'{' => {
                if b != b'"' {
                    return Err(NotStreamable("a key was expected"));
                }
                self.in_str = true;
                self.at = At::InKey;
            }
            At::Colon if b == b':' => {}
            At::Expect | At::Colon => {
                visit.start(here)?;
                self.at = At::InValue;
                self.value_byte(b, here, visit);
            }
            At::InValue if self.depth == 1 && matches!(b, b',' | b'}' | b']') => {
                self.flush(visit, 1)?;
                visit.end(self.child_end)?;
                if b == b',' {
                    self.at = At::Expect;
                } else {
                    self.depth = 0;
                    self.at = At::After;
                }
            }
            At::InValue => {
                if b == b'}' || b == b']' {
                    self.depth -= 1;
                }
                self.value_byte(b, here, visit);
            }
            At::After | At::InKey => return Err(NotStreamable("bytes after the value")),
        }
        Ok(())
    }

    /// A byte of a child outside its strings (the first, or one inside).
    fn value_byte(&mut self, b: u8, here: u64, visit: &mut dyn Visit) {
        if b == b'"' {
            self.string_starts(here, visit);
        } else if b == b'{' || b == b'[' {
            self.depth += 1;
        }
        if self.wants {
            self.out.push(b);
        }
        self.child_end = self.pos;
    }
}

#[cfg(test)]
mod tests;
