//! The validator over a large text in two halves at once, on the kept
//! threads of [`beside`](crate::beside): the same answer and the same
//! things told, in the same order, as one pass.
//!
//! The text is cut at the first `,{"` past its middle: outside strings,
//! that is a comma between two objects of an array (inside one, its quote
//! would end the string). The first half is read as always and pauses
//! where the second starts, if that is indeed a value after a comma in an
//! array; the second is read meanwhile from that value on, its enclosing
//! values unknown: each bracket that closes one of them, and each member
//! or element met at their level, is noted. The two agree when the notes
//! fit the open values the first half paused in (as many closed, each of
//! its kind). When they do not (the cut was inside a string, the text is
//! not valid, or a half told too much to keep), one pass from the start
//! decides: nothing is told before the answer is known.

use std::ops::Range;

use super::{Invalid, Stack, Stop, Tell, Validator, string, ws};

/// Texts from this many bytes are read in two halves at once.
const SPLIT_FROM: usize = 2 << 20;

/// The most notes a half keeps (members at depths 1 and 2, long strings,
/// what the second half meets outside its array): past it, one pass.
const MAX_NOTES: usize = 4096;

/// Where to cut `json`: the comma of the first `,{"` past its middle (and
/// before three quarters, so that the halves are of a size).
pub(super) fn split_at(json: &str) -> Option<usize> {
    if json.len() < SPLIT_FROM {
        return None;
    }
    let b = json.as_bytes();
    let (from, to) = (b.len() / 2, b.len() / 4 * 3);
    memchr::memmem::find(&b[from..to], b",{\"").map(|k| from + k)
}

/// [`validate_told`](super::validate_told) of `b`, cut at `at` (a comma).
pub(super) fn validate_split<T: Tell>(b: &[u8], at: usize, tell: &mut T) -> Result<(), Invalid> {
    let (first, second) = crate::beside::beside(
        || second_half(b, at + 1),
        || first_half(b, at + 1, T::MEMBERS),
    );
    let notes = match first? {
        First::Whole(notes) => Some(notes),
        First::Paused(paused) => second
            .ok()
            .flatten()
            .and_then(|met| paused.join(met, T::MEMBERS)),
    };
    let Some(notes) = notes.filter(|n| n.len() <= MAX_NOTES) else {
        return super::validate_whole(b, tell);
    };
    for note in notes {
        match note {
            Note::Member(depth, key, value) => tell.member(depth, key, value),
            Note::Long(at) => tell.long_string(at),
        }
    }
    Ok(())
}

/// What is told, kept until both halves agree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Note {
    Member(usize, Range<usize>, Range<usize>),
    Long(Range<usize>),
}

/// Notes of what a half tells (of the members only when `members`).
struct Notes {
    notes: Vec<Note>,
    members: bool,
}

impl Tell for Notes {
    fn member(&mut self, depth: usize, key: Range<usize>, value: Range<usize>) {
        if self.members && self.notes.len() <= MAX_NOTES {
            self.notes.push(Note::Member(depth, key, value));
        }
    }

    fn long_string(&mut self, at: Range<usize>) {
        if self.notes.len() <= MAX_NOTES {
            self.notes.push(Note::Long(at));
        }
    }
}

/// How the first half ended.
enum First {
    /// It never met the cut as a value after a comma in an array, and read
    /// the whole text: valid.
    Whole(Vec<Note>),
    /// It paused at the cut.
    Paused(Paused),
}

/// The first half's state at the cut.
struct Paused {
    notes: Vec<Note>,
    stack: Stack,
    key: [Range<usize>; 3],
    start: [usize; 3],
}

/// The first half: the text from its start up to a value at `stop`
/// (`members`: whether members are noted).
fn first_half(b: &[u8], stop: usize, members: bool) -> Result<First, Invalid> {
    let mut notes = Notes {
        notes: Vec::new(),
        members,
    };
    let mut validator = Validator {
        b,
        stack: Stack::default(),
    };
    match validator.run(ws(b, 0), stop, &mut notes)? {
        Stop::End(i) if ws(b, i) == b.len() => Ok(First::Whole(notes.notes)),
        Stop::End(_) => Err(Invalid),
        Stop::Paused(key, start) => Ok(First::Paused(Paused {
            notes: notes.notes,
            stack: validator.stack,
            key,
            start,
        })),
    }
}

/// What the second half meets outside the array it starts in, in order.
#[derive(Debug)]
enum Met {
    /// A string value of [`LONG_STRING`](super::LONG_STRING) bytes or more,
    /// anywhere.
    Long(Range<usize>),
    /// A bracket closing an enclosing value (`object`: a `}`), ending
    /// just before `end`.
    Closed { end: usize, object: bool },
    /// A member of an enclosing object.
    Member {
        key: Range<usize>,
        value: Range<usize>,
    },
    /// An element of an enclosing array.
    Element,
}

/// Notes the long strings of the values read inside the second half, and
/// nothing else (no member there is at depth 1 or 2: see [`Paused::join`]).
struct LongOnly<'m>(&'m mut Vec<Met>);

impl Tell for LongOnly<'_> {
    fn member(&mut self, _: usize, _: Range<usize>, _: Range<usize>) {}

    fn long_string(&mut self, at: Range<usize>) {
        self.0.push(Met::Long(at));
    }
}

/// The second half, from the value at `at`, an element of an array:
/// what it meets outside that array (`None`: more than it keeps).
fn second_half(b: &[u8], at: usize) -> Result<Option<Vec<Met>>, Invalid> {
    let mut met = Vec::new();
    let mut stack = Stack::default();
    stack.push(false);
    let mut i = value_end(b, at, stack, &mut met)?;
    met.push(Met::Closed {
        end: i,
        object: false,
    });
    loop {
        if met.len() > MAX_NOTES {
            return Ok(None);
        }
        i = ws(b, i);
        match b.get(i) {
            None => return Ok(Some(met)),
            Some(&c @ (b'}' | b']')) => {
                i += 1;
                met.push(Met::Closed {
                    end: i,
                    object: c == b'}',
                });
            }
            Some(b',') => i = after_comma(b, ws(b, i + 1), &mut met)?,
            Some(_) => return Err(Invalid),
        }
    }
}

/// After a comma at `i` in an enclosing value: a member (a string, then
/// `:`) or an element; past it.
fn after_comma(b: &[u8], i: usize, met: &mut Vec<Met>) -> Result<usize, Invalid> {
    if b.get(i) != Some(&b'"') {
        let end = value_end(b, i, Stack::default(), met)?;
        element(met);
        return Ok(end);
    }
    let end = string(b, i + 1)?;
    let colon = ws(b, end);
    if b.get(colon) != Some(&b':') {
        if end - i >= super::LONG_STRING {
            met.push(Met::Long(i..end));
        }
        element(met);
        return Ok(end);
    }
    let value = ws(b, colon + 1);
    let value_end = value_end(b, value, Stack::default(), met)?;
    met.push(Met::Member {
        key: i..end,
        value: value..value_end,
    });
    Ok(value_end)
}

/// Notes an element of an enclosing array: once for elements one after
/// the other (the cut may be in an array inside each of a million records:
/// the records after it are elements of the level above).
fn element(met: &mut Vec<Met>) {
    if !matches!(met.last(), Some(Met::Element)) {
        met.push(Met::Element);
    }
}

/// Past the value at `i` (the innermost of `stack` when it holds any).
fn value_end(b: &[u8], i: usize, stack: Stack, met: &mut Vec<Met>) -> Result<usize, Invalid> {
    let mut validator = Validator { b, stack };
    match validator.run(i, usize::MAX, &mut LongOnly(met))? {
        Stop::End(end) => Ok(end),
        Stop::Paused(..) => Err(Invalid),
    }
}

impl Paused {
    /// The notes of the whole text, when what the second half met fits the
    /// values open at the cut; `None` when it does not. `members`: whether
    /// members are told at all.
    fn join(self, met: Vec<Met>, members: bool) -> Option<Vec<Note>> {
        let Paused {
            mut notes,
            stack,
            mut key,
            mut start,
        } = self;
        let mut depth = stack.depth;
        // The array cut is at depth 2 or more: its elements' members are
        // at depth 3 or more, never told (the second half does not note
        // them). Only a top-level array is not.
        if members && depth < 2 {
            return None;
        }
        let told = |depth: usize| members && (depth == 1 || depth == 2) && stack.is_object(depth);
        for m in met {
            match m {
                Met::Long(at) => notes.push(Note::Long(at)),
                Met::Closed { end, object } => {
                    if depth == 0 || stack.is_object(depth) != object {
                        return None;
                    }
                    depth -= 1;
                    if told(depth) {
                        notes.push(Note::Member(depth, key[depth].clone(), start[depth]..end));
                    }
                }
                Met::Member { key: k, value } => {
                    if depth == 0 || !stack.is_object(depth) {
                        return None;
                    }
                    if told(depth) {
                        key[depth] = k;
                        start[depth] = value.start;
                        notes.push(Note::Member(depth, key[depth].clone(), value));
                    }
                }
                Met::Element => {
                    if depth == 0 || stack.is_object(depth) {
                        return None;
                    }
                }
            }
        }
        (depth == 0).then_some(notes)
    }
}

#[cfg(test)]
mod tests;
