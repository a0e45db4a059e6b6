//! Eight bytes at a time: finding a byte in a word of text without a call
//! (SWAR, SIMD within a register), for the short runs between escapes and
//! quotes where a `memchr` call costs more than it saves.

/// Bytes per word.
pub(super) const WORD: usize = 8;
/// `0x01` in every byte of a word.
const ONES: u64 = u64::from_ne_bytes([0x01; WORD]);
/// `0x80` in every byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; WORD]);

/// The eight bytes of `bytes` from `at` on, as a little-endian word (the
/// first byte lowest); `None` when fewer are left.
pub(super) fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk = bytes.get(at..at.checked_add(WORD)?)?;
    let mut w = [0; WORD];
    w.copy_from_slice(chunk);
    Some(u64::from_le_bytes(w))
}

/// The high bit of each byte of `word` equal to `byte`, exact up to the
/// first one: the zero-byte test, whose false marks only ever follow a
/// true one (a borrow runs towards the higher, later bytes).
pub(super) fn marks(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The index in its word of the first marked byte; `marks` not 0.
pub(super) fn first(marks: u64) -> usize {
    (marks.trailing_zeros() / 8) as usize
}

/// The position just after the string literal whose contents start at
/// `from` (after its opening quote); the end of `bytes` if it is not closed.
pub(crate) fn string_end(bytes: &[u8], mut from: usize) -> usize {
    loop {
        let Some(word) = word_at(bytes, from) else {
            return string_end_bytewise(bytes, from);
        };
        let found = marks(word, b'"') | marks(word, b'\\');
        if found == 0 {
            from += WORD;
            continue;
        }
        let at = from + first(found);
        if bytes[at] == b'"' {
            return at + 1;
        }
        // A backslash escapes the next byte.
        from = at + 2;
    }
}

/// [`string_end`] on the last bytes, fewer than a word.
fn string_end_bytewise(bytes: &[u8], mut from: usize) -> usize {
    while let Some(&b) = bytes.get(from) {
        match b {
            b'"' => return from + 1,
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old walk, a `memchr2` run to run.
    fn reference(bytes: &[u8], mut from: usize) -> usize {
        while let Some(p) = bytes
            .get(from..)
            .and_then(|b| memchr::memchr2(b'"', b'\\', b))
        {
            let at = from + p;
            if bytes[at] == b'"' {
                return at + 1;
            }
            from = at + 2;
        }
        bytes.len()
    }

    #[test]
    fn string_end_matches_the_memchr_walk() {
        let texts = [
            r#""abc" x"#,
            r#""a\"b\\" x"#,
            r#""0123456789abcdef\"0123\\\\" , 1"#,
            r#""unclosed"#,
            r#""ends in a backslash\"#,
            r#""é😀\"é" ]"#,
            r#""\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\""#,
        ];
        for text in texts {
            let bytes = text.as_bytes();
            for from in 0..=bytes.len() + 2 {
                assert_eq!(
                    string_end(bytes, from),
                    reference(bytes, from),
                    "{text} {from}"
                );
            }
        }
    }

    #[test]
    fn marks_find_the_first_byte() {
        for at in 0..WORD {
            let mut w = *b"abcdefgh";
            w[at] = b'"';
            let word = u64::from_le_bytes(w);
            assert_eq!(first(marks(word, b'"')), at);
            assert_eq!(marks(word, b'\\'), 0);
        }
        // A byte one above the one looked for borrows into the next: only
        // later marks are false.
        let word = u64::from_le_bytes(*b"\"#\"#####");
        assert_eq!(first(marks(word, b'"')), 0);
    }
}
