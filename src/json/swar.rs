//! Eight bytes at a time: finding a byte in a word of text without a call
//! (SWAR, SIMD within a register), for the short runs between escapes
//! where a `memchr` call costs more than it saves.

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

/// The high bit of each byte of `word` below `0x20` (a control
/// character), exact up to the first one, as [`marks`] is.
pub(super) fn controls(word: u64) -> u64 {
    word.wrapping_sub(ONES * 0x20) & !word & HIGHS
}

/// The index in its word of the first marked byte; `marks` not 0.
pub(super) fn first(marks: u64) -> usize {
    (marks.trailing_zeros() / 8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let word = u64::from_le_bytes(*b" ~\x7f\x80\xff\n\x00\x1f");
        assert_eq!(first(controls(word)), 5);
        assert_eq!(controls(u64::from_le_bytes(*b" ~\x7f\x80\xffabc")), 0);
    }
}
