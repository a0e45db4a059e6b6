//! The input of a query read as it is evaluated: the file (or a shared
//! store's object, through ranged reads) in chunks that end on a line
//! break (64 KiB first, each next twice as large up to 1 MiB), each read
//! into values as the evaluation asks for them. A query that does not
//! slurp holds one chunk at a time, so a page of any file costs the
//! records read up to it, not the file; a slurping one collects
//! every value, bounded by [`ExtractLimits::max_input_bytes`].
//!
//! Offload files hold one JSON value per line, so a chunk never splits a
//! value; a value written across lines by some other program would be
//! read as jq reads a stream cut there (an error naming the record).
//!
//! [`ExtractLimits::max_input_bytes`]: super::ExtractLimits::max_input_bytes

use std::io::{self, Read};

use bytes::Bytes;
use jaq_json::Val;

use super::fast::Records;
use super::input::InputError;
use super::limits::ExtractError;
use super::project::Need;

/// Bytes read at most at a time (a chunk grows past it only for a longer
/// line).
pub(crate) const CHUNK_BYTES: usize = 1 << 20;
/// The longest header line read (a header keeps a result's non-record
/// parts, up to 8 MiB).
const MAX_HEADER_BYTES: u64 = 9 << 20;
/// Bytes read first: each next read is twice as large, up to
/// [`CHUNK_BYTES`], so a first page reads about what its records take.
const FIRST_CHUNK_BYTES: usize = 64 << 10;

/// The values after the header line of `source`, a chunk at a time.
pub(crate) struct Chunks {
    source: Box<dyn Read + Send>,
    need: Need,
    /// Bytes to read next.
    chunk: usize,
    /// The most read at a time.
    max_chunk: usize,
    /// A line longer than this is [`ExtractError::InputTooLarge`].
    max_line: u64,
    /// What was read after the last complete line.
    partial: Vec<u8>,
    current: Option<Records>,
    /// Values yielded by the chunks before `current`.
    before: usize,
    /// Values yielded by `current`.
    in_current: usize,
    header_skipped: bool,
    at_end: bool,
    /// Why reading stopped, when the source failed (not the JSON).
    pub failure: Option<ExtractError>,
}

impl Chunks {
    /// The values of `source` (a whole offload file: the header line is
    /// skipped), each read as far as `need` says; `max_line` bounds one
    /// line.
    pub(crate) fn new(source: Box<dyn Read + Send>, need: Need, max_line: u64) -> Chunks {
        Chunks {
            source,
            need,
            chunk: FIRST_CHUNK_BYTES,
            max_chunk: CHUNK_BYTES,
            max_line,
            partial: Vec::new(),
            current: None,
            before: 0,
            in_current: 0,
            header_skipped: false,
            at_end: false,
            failure: None,
        }
    }

    /// The same values from a source that starts at a record line (no
    /// header line to skip).
    pub(crate) fn at_a_record(mut self) -> Chunks {
        self.header_skipped = true;
        self
    }

    /// Reads the next chunk of complete lines into `current`; `false` at
    /// the end of the source or when it failed.
    fn refill(&mut self) -> bool {
        loop {
            if self.at_end {
                if self.partial.is_empty() {
                    return false;
                }
                let rest = std::mem::take(&mut self.partial);
                return self.start(Bytes::from(rest));
            }
            let mut from = self.partial.len();
            let want = self.chunk;
            self.chunk = (self.chunk * 2).min(self.max_chunk);
            match fill(&mut self.source, &mut self.partial, want) {
                Ok(0) => self.at_end = true,
                Ok(_) => {}
                Err(e) => {
                    self.failure = Some(if e.kind() == io::ErrorKind::InvalidData {
                        ExtractError::Damaged(e.to_string())
                    } else {
                        ExtractError::Unreadable
                    });
                    return false;
                }
            }
            if !self.header_skipped {
                match memchr::memchr(b'\n', &self.partial) {
                    Some(end) => {
                        self.partial.drain(..=end);
                        self.header_skipped = true;
                        from = 0;
                    }
                    None if self.at_end => {
                        // No line break: `tail -n +2` gives nothing.
                        self.partial.clear();
                        return false;
                    }
                    None if self.partial.len() as u64 > self.max_line.max(MAX_HEADER_BYTES) => {
                        self.failure = Some(ExtractError::InputTooLarge { max: self.max_line });
                        return false;
                    }
                    None => continue,
                }
            }
            let Some(end) = memchr::memrchr(b'\n', &self.partial[from..]).map(|i| i + from) else {
                if self.partial.len() as u64 > self.max_line {
                    self.failure = Some(ExtractError::InputTooLarge { max: self.max_line });
                    return false;
                }
                continue;
            };
            let rest = self.partial.split_off(end + 1);
            let lines = std::mem::replace(&mut self.partial, rest);
            return self.start(Bytes::from(lines));
        }
    }

    fn start(&mut self, lines: Bytes) -> bool {
        self.before += self.in_current;
        self.in_current = 0;
        self.current = Some(Records::new(lines, self.need.clone()));
        true
    }
}

impl Iterator for Chunks {
    type Item = Result<Val, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(records) = &mut self.current {
                match records.next() {
                    Some(Ok(v)) => {
                        self.in_current += 1;
                        return Some(Ok(v));
                    }
                    Some(Err(e)) => {
                        // The error counts the chunk's values before it;
                        // the chunks before add theirs. Reading stops.
                        self.current = None;
                        self.at_end = true;
                        self.partial.clear();
                        let index_base = self.before;
                        return Some(Err(e.after(index_base)));
                    }
                    None => self.current = None,
                }
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

/// Appends up to `want` bytes of `source` to `buf`; how many (0 at its
/// end). Retries interrupted reads; the buffer is not zeroed first.
fn fill(source: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    let start = buf.len();
    buf.reserve(want);
    match source.take(want as u64).read_to_end(buf) {
        Ok(n) => Ok(n),
        Err(e) => {
            buf.truncate(start);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &[u8], chunk_reads: usize) -> Vec<Result<String, InputError>> {
        /// Gives at most `n` bytes per read, to cut chunks anywhere.
        struct Trickle(io::Cursor<Vec<u8>>, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.1);
                self.0.read(&mut buf[..n])
            }
        }
        let source = Trickle(io::Cursor::new(text.to_vec()), chunk_reads);
        let mut chunks = Chunks::new(Box::new(source), Need::All, 1 << 20);
        chunks.chunk = chunk_reads.min(CHUNK_BYTES);
        chunks.max_chunk = chunks.chunk;
        chunks.map(|v| v.map(|v| v.to_string())).collect()
    }

    #[test]
    fn the_header_is_skipped_and_every_line_read_whatever_the_reads() {
        let text = b"{\"type\":\"lro_header\"}\n{\"a\":1}\n\"two\"\n[3]\n4";
        for reads in [1, 2, 3, 7, 64, 1 << 20] {
            let got = values(text, reads);
            let got: Vec<String> = got.into_iter().map(Result::unwrap).collect();
            assert_eq!(got, ["{\"a\":1}", "\"two\"", "[3]", "4"], "{reads}");
        }
        assert!(values(b"no line break", 4).is_empty());
        assert!(values(b"header only\n", 4).is_empty());
    }

    #[test]
    fn a_bad_record_is_named_by_its_number_in_the_file() {
        let mut text = b"{\"type\":\"lro_header\"}\n".to_vec();
        for i in 0..3000 {
            text.extend_from_slice(format!("{{\"i\":{i}}}\n").as_bytes());
        }
        text.extend_from_slice(b"{\"i\": nope}\n{\"i\":1}\n");
        let got = values(&text, 4096);
        assert_eq!(got.len(), 3001);
        match got.last().unwrap() {
            Err(InputError::Invalid { index, .. }) => assert_eq!(*index, 3000),
            other => panic!("{other:?}"),
        }
    }
}
