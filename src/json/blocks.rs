//! JSON a block of 64 bytes at a time: masks of the bytes that matter
//! (quotes, backslashes, brackets), one bit per byte, from byte compares
//! the compiler vectorizes and gathers a word at a time; the escaped
//! characters from the runs of backslashes (simdjson's method), so a string
//! dense with escapes costs no more than any other. Used where JSON is
//! skipped (the trusted reader of a validated result, the walks over a
//! spilled one) and where it is validated (`validate`).

/// The 64 bytes from `at`, zeros past the end (no quote, backslash or bracket).
pub(crate) fn block_at(b: &[u8], at: usize) -> [u8; 64] {
    let rest = b.get(at..).unwrap_or_default();
    if let Some(Ok(full)) = rest.get(..64).map(<[u8; 64]>::try_from) {
        return full;
    }
    let mut block = [0u8; 64];
    block[..rest.len()].copy_from_slice(rest);
    block
}

/// Bit `k` of each mask: byte `k` of a 64-byte block is that character.
pub(crate) struct Masks {
    pub quote: u64,
    pub backslash: u64,
    /// `{` or `[`.
    pub open: u64,
    /// `}` or `]`.
    pub close: u64,
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
    pub(crate) fn of(block: &[u8; 64], brackets: bool) -> Self {
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
pub(crate) fn gather(w: u64, class: u8) -> u64 {
    let lanes = (w >> class.trailing_zeros()) & 0x0101_0101_0101_0101;
    lanes.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit `k` set: an odd number of quotes at or before bit `k`.
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The escaped characters of consecutive blocks, from their backslashes.
#[derive(Default)]
pub(crate) struct Escapes {
    /// 1: the first character of the next block is escaped.
    carry: u64,
}

impl Escapes {
    /// The escaped characters of the next block (simdjson's
    /// `find_escaped_branchless`): a character is escaped when an odd run
    /// of backslashes ends just before it.
    pub(crate) fn next(&mut self, backslash: u64) -> u64 {
        const EVEN: u64 = 0x5555_5555_5555_5555;
        let backslash = backslash & !self.carry;
        let follows = (backslash << 1) | self.carry;
        let odd_starts = backslash & !EVEN & !follows;
        let (even_runs, overflow) = odd_starts.overflowing_add(backslash);
        self.carry = u64::from(overflow);
        (EVEN ^ (even_runs << 1)) & follows
    }
}
