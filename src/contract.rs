//! The completeness contract: how many record lines a file holds, how many
//! bytes they are and their SHA-256, computed as the lines are made, so a
//! reader can tell it holds the whole result (`tail -n +2 FILE | wc -c`,
//! `tail -n +2 FILE | sha256sum`, `tail -n +2 FILE | wc -l`).

use sha2::{Digest, Sha256};

/// Folds the data lines of a file (every byte after the header line, each
/// record's newline included) into their count, size and SHA-256.
#[derive(Clone, Default)]
pub(crate) struct DataDigest {
    hasher: Sha256,
    bytes: u64,
    lines: usize,
}

/// What [`DataDigest`] found: the contract's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataContract {
    /// Record lines.
    pub count: usize,
    /// Bytes of the data lines, newlines included.
    pub bytes: u64,
    /// SHA-256 of the data lines, lowercase hex.
    pub sha256: String,
}

impl DataDigest {
    /// Folds in `bytes` of data holding `lines` complete lines.
    pub(crate) fn update(&mut self, bytes: &[u8], lines: usize) {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
        self.lines += lines;
    }

    /// The contract of everything folded in.
    pub(crate) fn finish(self) -> DataContract {
        DataContract {
            count: self.lines,
            bytes: self.bytes,
            sha256: hex(&self.hasher.finalize()),
        }
    }

    /// The contract of a whole records buffer at once.
    pub(crate) fn of(body: &[u8], count: usize) -> DataContract {
        let mut d = DataDigest::default();
        d.update(body, count);
        d.finish()
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_of_known_lines() {
        let c = DataDigest::of(b"{\"a\":1}\n2\n", 2);
        assert_eq!(c.count, 2);
        assert_eq!(c.bytes, 10);
        // printf '{"a":1}\n2\n' | sha256sum
        assert_eq!(
            c.sha256,
            "d9dce416d1e5e71574e0fb9342f6ffab1265b47368e35401e821c5d05b72c163"
        );
        let mut split = DataDigest::default();
        split.update(b"{\"a\":1}\n", 1);
        split.update(b"2\n", 1);
        assert_eq!(split.finish(), c);
        assert_eq!(
            DataDigest::of(b"", 0).sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
