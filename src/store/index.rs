//! The line index a shared store's manifest carries ([`LineIndex`]), built
//! as the data object is uploaded: where every `stride`-th record line
//! starts, so that a page deep in a large file is read with a ranged `GET`
//! from near its first record instead of from the file's start.

use super::shared::LineIndex;

/// Records between two entries at first; the stride doubles (every other
/// entry dropped) whenever the entries would pass [`MAX_ENTRIES`], so a
/// file of any length has an index of at most that many offsets.
pub(crate) const FIRST_STRIDE: u64 = 256;
/// The most entries an index holds: about 12 KiB of manifest, which every
/// read fetches first, against a range of at most `stride` records to
/// skip after the jump.
pub(crate) const MAX_ENTRIES: usize = 1024;
/// A record nesting deeper than this may be refused by jq 1.6's parser
/// (256 levels), so a file holding one is not `objects_only` (one short of
/// jq's limit, to be safe).
const MAX_NESTING: usize = 255;

/// Builds a [`LineIndex`] from a file's bytes, fed in order, in chunks of
/// any size.
pub(crate) struct LineIndexer {
    /// The offset of the next byte fed.
    at: u64,
    in_header: bool,
    /// Whether the next byte starts a line.
    line_start: bool,
    /// Record lines started so far.
    records: u64,
    /// `{` and `[` seen in the current line.
    opening: usize,
    /// Where the current line started, when it started in the chunk being
    /// fed (a line split across chunks is judged by its count alone).
    start_in_chunk: Option<usize>,
    objects_only: bool,
    stride: u64,
    offsets: Vec<u64>,
}

impl Default for LineIndexer {
    fn default() -> Self {
        LineIndexer {
            at: 0,
            in_header: true,
            line_start: false,
            records: 0,
            opening: 0,
            start_in_chunk: None,
            objects_only: true,
            stride: FIRST_STRIDE,
            offsets: Vec::new(),
        }
    }
}

impl LineIndexer {
    /// Folds in the next bytes of the file.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        let mut from = 0;
        for end in memchr::memchr_iter(b'\n', chunk) {
            self.segment(chunk, from, end);
            self.end_line(chunk, end);
            from = end + 1;
        }
        self.segment(chunk, from, chunk.len());
        self.start_in_chunk = None;
        self.at += chunk.len() as u64;
    }

    /// The bytes `chunk[from..to]` of the current line (no line break).
    fn segment(&mut self, chunk: &[u8], from: usize, to: usize) {
        if self.in_header || from == to {
            return;
        }
        let bytes = &chunk[from..to];
        if self.line_start {
            self.line_start = false;
            if self.records.is_multiple_of(self.stride) {
                self.push(self.at + from as u64);
            }
            self.records += 1;
            self.start_in_chunk = Some(from);
            // Only a compact object record starts with `{`.
            self.objects_only &= bytes[0] == b'{';
        }
        if self.objects_only {
            self.opening += bytes.iter().filter(|&&b| b == b'{' || b == b'[').count();
        }
    }

    /// The line that ends at `chunk[end]` (its line break).
    fn end_line(&mut self, chunk: &[u8], end: usize) {
        if self.in_header {
            self.in_header = false;
        } else if self.line_start {
            // An empty line: no record where a reader counting lines
            // expects one.
            self.objects_only = false;
        } else if self.objects_only && self.opening > MAX_NESTING {
            // Brackets in strings count too: only a line whole in this
            // chunk can be measured exactly.
            self.objects_only = match self.start_in_chunk {
                Some(start) => !crate::json::nests_deeper(&chunk[start..end], MAX_NESTING),
                None => false,
            };
        }
        self.line_start = true;
        self.opening = 0;
        self.start_in_chunk = None;
    }

    fn push(&mut self, offset: u64) {
        if self.offsets.len() == MAX_ENTRIES {
            self.stride *= 2;
            let mut i = 0;
            self.offsets.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            if !self.records.is_multiple_of(self.stride) {
                return;
            }
        }
        self.offsets.push(offset);
    }

    /// The index of the file fed; `None` when it has no header line.
    pub(crate) fn finish(self) -> Option<LineIndex> {
        if self.in_header {
            return None;
        }
        // A last line without its line break is a record too, but a file
        // should end with one: no jumps into a file that does not.
        let objects_only = self.objects_only && self.line_start;
        Some(LineIndex {
            stride: self.stride,
            offsets: self.offsets,
            records: self.records,
            objects_only,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(file: &[u8], chunk: usize) -> LineIndex {
        let mut ix = LineIndexer::default();
        file.chunks(chunk.max(1)).for_each(|c| ix.feed(c));
        ix.finish().expect("a header line")
    }

    fn file_of(records: &[String]) -> Vec<u8> {
        let mut f = b"{\"type\":\"lro_header\"}\n".to_vec();
        for r in records {
            f.extend_from_slice(r.as_bytes());
            f.push(b'\n');
        }
        f
    }

    #[test]
    fn every_strideth_record_is_found_whatever_the_chunks() {
        let records: Vec<String> = (0..5000).map(|i| format!("{{\"i\":{i}}}")).collect();
        let file = file_of(&records);
        for chunk in [1, 7, 4096, file.len()] {
            let ix = index_of(&file, chunk);
            assert_eq!(ix.records, 5000);
            assert!(ix.objects_only);
            assert_eq!(ix.stride, FIRST_STRIDE);
            assert_eq!(ix.offsets.len(), 5000usize.div_ceil(FIRST_STRIDE as usize));
            for (k, &at) in ix.offsets.iter().enumerate() {
                let line = file[at as usize..].split(|&b| b == b'\n').next().unwrap();
                assert_eq!(line, records[k * FIRST_STRIDE as usize].as_bytes());
            }
        }
    }

    #[test]
    fn the_stride_doubles_to_keep_the_index_small() {
        let n = FIRST_STRIDE as usize * MAX_ENTRIES * 3;
        let records: Vec<String> = (0..n).map(|i| format!("{{\"i\":{i}}}")).collect();
        let file = file_of(&records);
        let ix = index_of(&file, 65_536);
        assert_eq!(ix.stride, FIRST_STRIDE * 4);
        assert!(ix.offsets.len() <= MAX_ENTRIES);
        for (k, &at) in ix.offsets.iter().enumerate() {
            let line = file[at as usize..].split(|&b| b == b'\n').next().unwrap();
            assert_eq!(line, records[k * ix.stride as usize].as_bytes());
        }
        assert_eq!(ix.record_at(10_000), Some((9216, ix.offsets[9])));
        assert_eq!(
            ix.record_at(u64::MAX).map(|r| r.1),
            ix.offsets.last().copied()
        );
    }

    #[test]
    fn anything_but_plain_object_lines_turns_objects_only_off() {
        let ok = |recs: &[&str]| {
            let recs: Vec<String> = recs.iter().map(|s| s.to_string()).collect();
            index_of(&file_of(&recs), 3).objects_only
        };
        assert!(ok(&["{}", "{\"a\":[1,{\"b\":2}]}"]));
        assert!(!ok(&["{}", "[1]"]));
        assert!(!ok(&["{}", "\"text\""]));
        assert!(!ok(&["{}", ""]));
        assert!(!ok(&["{}", " {}"]));
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(300), "]".repeat(300));
        assert!(!ok(&["{}", &deep]));
        // Brackets inside strings are not nesting.
        let brackets = format!("{{\"a\":\"{}\"}}", "[".repeat(300));
        let recs = vec!["{}".to_string(), brackets];
        assert!(index_of(&file_of(&recs), 1 << 20).objects_only);
        // Split across chunks, the same line cannot be measured: refused.
        assert!(!index_of(&file_of(&recs), 16).objects_only);
        let mut cut = file_of(&["{}".to_string()]);
        cut.extend_from_slice(b"{}");
        assert!(!index_of(&cut, 4).objects_only);
        assert!(LineIndexer::default().finish().is_none());
    }
}
