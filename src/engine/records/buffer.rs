//! The records of a result in one buffer, the file's body byte for byte,
//! and views of it.

use crate::json::minify_into;

/// The records of a result, in one buffer: each record's compact JSON text
/// followed by `\n` (a record never holds a raw newline, and is never
/// empty). This is the file's body, byte for byte.
#[derive(Default)]
pub(crate) struct Records {
    pub(super) body: String,
    count: usize,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("count", &self.count)
            .field("bytes", &self.body.len())
            .finish()
    }
}

impl Records {
    /// Number of records.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// A view of the records.
    pub(crate) fn view(&self) -> RecordsView<'_> {
        RecordsView {
            body: &self.body,
            count: self.count,
        }
    }

    /// The buffer: every record followed by `\n`.
    #[cfg(test)]
    pub(crate) fn into_body(self) -> String {
        self.body
    }

    /// Makes room for `bytes` more bytes of records, exactly (the buffer
    /// never grows by doubling, so its capacity is what it holds, or what
    /// one value it is taken from did).
    pub(super) fn reserve(&mut self, bytes: usize) {
        self.body.reserve_exact(bytes);
    }

    /// Where the records end now, to [`truncate`](Self::truncate) back to.
    pub(super) fn mark(&self) -> (usize, usize) {
        (self.body.len(), self.count)
    }

    /// Drops the records pushed since `mark` was taken.
    pub(super) fn truncate(&mut self, (len, count): (usize, usize)) {
        self.body.truncate(len);
        self.count = count;
    }

    /// Gives back the room reserved beyond what the records hold.
    pub(super) fn shrink(&mut self) {
        self.body.shrink_to_fit();
    }

    /// Appends one record, compact JSON without a newline.
    pub(super) fn push(&mut self, record: &str) {
        self.body.push_str(record);
        self.end();
    }

    /// Appends one record, minifying valid JSON text on the way.
    pub(super) fn push_minified(&mut self, json: &str) {
        minify_into(json, &mut self.body);
        self.end();
    }

    /// Ends the record written so far straight into the buffer.
    pub(super) fn end(&mut self) {
        self.body.push('\n');
        self.count += 1;
    }
}

/// The records, borrowed: from a [`Records`] buffer, or from the body of a
/// file being written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordsView<'a> {
    body: &'a str,
    count: usize,
}

impl<'a> RecordsView<'a> {
    /// The records of `body` (each followed by `\n`), `count` of them.
    pub(crate) fn new(body: &'a str, count: usize) -> Self {
        RecordsView { body, count }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The records, each followed by `\n`: the file's data lines.
    pub(crate) fn body(&self) -> &'a str {
        self.body
    }

    /// Each record, in order.
    pub(crate) fn iter(&self) -> RecordIter<'a> {
        RecordIter { rest: self.body }
    }

    /// The records joined by `\n`, in characters.
    pub(crate) fn chars(&self) -> usize {
        self.body.chars().count().saturating_sub(1)
    }
}

/// The records of a [`RecordsView`], one after the other (a byte search
/// for each newline: records may be one byte long, ten million of them).
#[derive(Debug, Clone)]
pub(crate) struct RecordIter<'a> {
    rest: &'a str,
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest.as_bytes()).unwrap_or(self.rest.len());
        let record = &self.rest[..end];
        self.rest = self.rest.get(end + 1..).unwrap_or_default();
        Some(record)
    }
}
