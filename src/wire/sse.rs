//! Server-sent events, split and rewritten without disturbing their bytes.
//!
//! [`EventSplitter`] cuts a byte stream into complete events (each ends with
//! a blank line; lines end with CRLF, LF or CR) and hands each back as the
//! exact bytes received, so an event that is not rewritten is forwarded
//! unchanged: comments, `id:`, `event:`, `retry:` and priming events with
//! empty data included.

use bytes::{Bytes, BytesMut};

/// Cuts a stream of bytes into raw SSE events.
///
/// [`push`](EventSplitter::push) the bytes as they arrive, in chunks of any
/// size; [`next_event`](EventSplitter::next_event) then hands back each
/// complete event (up to and including the blank line that ends it) as the
/// exact bytes received. Scanning resumes where it stopped, so no byte is
/// looked at twice, and an event is never copied once it is whole. At the
/// end of the stream, [`finish_event`](EventSplitter::finish_event) takes
/// a last event that ends in a lone CR, and
/// [`take_rest`](EventSplitter::take_rest) whatever incomplete bytes are
/// left. Memory: the bytes of one incomplete event (bound them with
/// [`buffered`](EventSplitter::buffered) when the peer is not trusted).
#[derive(Debug, Default)]
pub struct EventSplitter {
    buf: BytesMut,
    /// Where scanning resumes.
    scan: usize,
    /// Start of the current line.
    line_start: usize,
}

impl EventSplitter {
    /// Appends received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes held that do not form a complete event yet.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The bytes the buffer holds before it must grow.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Moves what is held into `buf` (an empty buffer, larger: one whose
    /// pages are mapped already), which then collects what comes next.
    pub(crate) fn move_into(&mut self, buf: Vec<u8>) {
        let mut moved = BytesMut::from(Bytes::from(buf));
        moved.clear();
        moved.extend_from_slice(&self.buf);
        // Scanning positions count from the start of what is held: unchanged.
        self.buf = moved;
    }

    /// The next complete event (its bytes up to and including the blank line).
    pub fn next_event(&mut self) -> Option<Bytes> {
        self.next_event_with(BytesMut::freeze)
    }

    /// [`next_event`](Self::next_event), handing an event that is all that
    /// is held to `whole` with its allocation (the splitter starts afresh),
    /// so the buffer can be reused once the event is dropped.
    pub(crate) fn next_event_with(
        &mut self,
        whole: impl FnOnce(BytesMut) -> Bytes,
    ) -> Option<Bytes> {
        match scan_event(&self.buf, self.scan, self.line_start) {
            Ok(end) => {
                self.scan = 0;
                self.line_start = 0;
                if end == self.buf.len() {
                    return Some(whole(std::mem::take(&mut self.buf)));
                }
                Some(self.buf.split_to(end).freeze())
            }
            Err((scan, line_start)) => {
                self.scan = scan;
                self.line_start = line_start;
                None
            }
        }
    }

    /// Whether `chunk`, read from an event boundary, surely ends at one: its
    /// last line is empty (`\n\n`, `\n\r\n` or `\r\r\n` at its end). Only its
    /// last bytes are looked at. (A chunk ending in `\r\r` may still be
    /// followed by the `\n` of a CRLF: not surely at a boundary.)
    pub fn ends_at_boundary(chunk: &[u8]) -> bool {
        chunk.ends_with(b"\n\n") || chunk.ends_with(b"\n\r\n") || chunk.ends_with(b"\r\r\n")
    }

    /// Whether `chunk` is exactly one complete event (what servers usually
    /// send per chunk), so it can be taken as it is, without buffering.
    pub fn is_one_event(chunk: &[u8]) -> bool {
        scan_event(chunk, 0, 0) == Ok(chunk.len())
    }

    /// At the end of the stream: the last event, if what is held ends with
    /// a blank line once a CR at the very end counts as a line end (no `\n`
    /// can follow it any more), as in `data: x\r\r`.
    pub fn finish_event(&mut self) -> Option<Bytes> {
        let ends_in_cr = self.buf.last() == Some(&b'\r');
        if !ends_in_cr {
            return None;
        }
        // With one more LF, the final CR becomes a CRLF line end of the same
        // line: an event is complete iff that finds its end at the last byte.
        let mut probe = self.buf.to_vec();
        probe.push(b'\n');
        match scan_event(&probe, 0, 0) {
            Ok(end) if end == probe.len() => {
                self.scan = 0;
                self.line_start = 0;
                Some(self.buf.split().freeze())
            }
            _ => None,
        }
    }

    /// Everything still held (at the end of the stream).
    pub fn take_rest(&mut self) -> Bytes {
        self.scan = 0;
        self.line_start = 0;
        self.buf.split().freeze()
    }
}

/// Looks for the blank line that ends an event in `bytes`, resuming at `i`
/// with the current line starting at `line_start`: `Ok(end)` when the event
/// ends at `end` (exclusive), else where to resume once more bytes came.
fn scan_event(bytes: &[u8], mut i: usize, mut line_start: usize) -> Result<usize, (usize, usize)> {
    while i < bytes.len() {
        let Some(at) = memchr::memchr2(b'\n', b'\r', &bytes[i..]) else {
            return Err((bytes.len(), line_start));
        };
        i += at;
        // A line ends at i. A CR at the very end may be the first half of CRLF.
        let end = if bytes[i] == b'\r' {
            match bytes.get(i + 1) {
                Some(b'\n') => i + 2,
                Some(_) => i + 1,
                None => return Err((i, line_start)),
            }
        } else {
            i + 1
        };
        let empty_line = i == line_start;
        line_start = end;
        i = end;
        if empty_line {
            return Ok(end);
        }
    }
    Err((i, line_start))
}

/// One line of an event: its content and its terminator.
fn lines(event: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut rest = event;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let pos = memchr::memchr2(b'\n', b'\r', rest);
        let (content, term_len) = match pos {
            None => (rest, 0),
            Some(p) if rest[p] == b'\r' && rest.get(p + 1) == Some(&b'\n') => (&rest[..p], 2),
            Some(p) => (&rest[..p], 1),
        };
        let line_len = content.len();
        let term = &rest[line_len..line_len + term_len];
        rest = &rest[line_len + term_len..];
        Some((content, term))
    })
}

fn field(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b':') {
        Some(p) => {
            let value = &line[p + 1..];
            (&line[..p], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[][..]),
    }
}

/// The data of one event (as [`EventSplitter::next_event`] returns it): its
/// `data` lines joined by `\n`, one optional space after `data:` removed;
/// `None` when it has no `data` line (a comment, or an event of `id:`,
/// `event:` or `retry:` only). One data line (what servers send) is
/// returned as a slice of `event`, without copying it.
pub fn event_data(event: &Bytes) -> Option<Bytes> {
    let mut first: Option<&[u8]> = None;
    let mut joined: Option<Vec<u8>> = None;
    for (line, _) in lines(event) {
        if line.first() == Some(&b':') || line.is_empty() {
            continue;
        }
        let (name, value) = field(line);
        if name == b"data" {
            match (&mut joined, first) {
                (Some(d), _) => {
                    d.push(b'\n');
                    d.extend_from_slice(value);
                }
                (None, None) => first = Some(value),
                (None, Some(f)) => {
                    let mut d = Vec::with_capacity(f.len() + value.len() + 1);
                    d.extend_from_slice(f);
                    d.push(b'\n');
                    d.extend_from_slice(value);
                    joined = Some(d);
                }
            }
        }
    }
    match (joined, first) {
        (Some(d), _) => Some(Bytes::from(d)),
        (None, Some(f)) => Some(event.slice_ref(f)),
        (None, None) => None,
    }
}

/// The event with its data lines replaced by one `data:` line holding
/// `data` (which must not contain line breaks); every other line is kept.
pub fn replace_data(event: &[u8], data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 64);
    let mut written = false;
    for (line, term) in lines(event) {
        let is_data = !line.is_empty() && line.first() != Some(&b':') && field(line).0 == b"data";
        if is_data {
            if !written {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(data);
                out.extend_from_slice(if term.is_empty() { b"\n" } else { term });
                written = true;
            }
            continue;
        }
        // A blank line ended by LF right after a line ended by a lone CR
        // (the data lines between them dropped) would read as one CRLF and
        // the event would lose its end: that blank line ends with CRLF.
        let merges = line.is_empty() && term == b"\n" && out.last() == Some(&b'\r');
        out.extend_from_slice(line);
        out.extend_from_slice(if merges { b"\r\n" } else { term });
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]]) -> (Vec<Bytes>, Bytes) {
        let mut s = EventSplitter::default();
        let mut events = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some(e) = s.next_event() {
                events.push(e);
            }
        }
        (events, s.take_rest())
    }

    #[test]
    fn an_event_all_that_is_held_is_handed_over_with_its_buffer() {
        let mut s = EventSplitter::default();
        s.push(b"data: a\n\ndata: b");
        let mut whole = 0;
        let mut hand = |b: BytesMut| {
            whole += 1;
            b.freeze()
        };
        assert_eq!(&s.next_event_with(&mut hand).unwrap()[..], b"data: a\n\n");
        s.push(b"c\n");
        // Part of an event, then moved into a larger buffer: scanning
        // goes on where it was.
        s.move_into(Vec::with_capacity(1 << 10));
        assert_eq!(s.capacity(), 1 << 10);
        assert!(s.next_event_with(&mut hand).is_none());
        s.push(b"\n");
        let event = s.next_event_with(&mut hand).unwrap();
        assert_eq!(&event[..], b"data: bc\n\n");
        assert_eq!(whole, 1, "only the event held alone");
        assert_eq!((s.buffered(), s.capacity()), (0, 0), "starts afresh");
    }

    #[test]
    fn a_final_cr_ends_the_last_event_at_the_end_of_the_stream() {
        let mut s = EventSplitter::default();
        s.push(b"data: x\r\r");
        assert!(s.next_event().is_none(), "a LF may still follow");
        assert_eq!(&s.finish_event().unwrap()[..], b"data: x\r\r");
        assert_eq!(s.buffered(), 0);
        let mut s = EventSplitter::default();
        s.push(b"data: x\r");
        assert!(s.finish_event().is_none(), "one line end is no blank line");
        assert_eq!(&s.take_rest()[..], b"data: x\r");
        let mut s = EventSplitter::default();
        s.push(b"data: x\n\r");
        assert_eq!(&s.finish_event().unwrap()[..], b"data: x\n\r");
    }

    #[test]
    fn splits_on_blank_lines_with_any_terminator() {
        let (events, rest) = split_all(&[
            b"id: 1\r\ndata: a\r\n\r",
            b"\ndata: b\n",
            b"\n: comment\rdata:\r\rpartial",
        ]);
        assert_eq!(events.len(), 3);
        assert_eq!(&events[0][..], b"id: 1\r\ndata: a\r\n\r\n");
        assert_eq!(&events[1][..], b"data: b\n\n");
        assert_eq!(&events[2][..], b": comment\rdata:\r\r");
        assert_eq!(&rest[..], b"partial");
    }

    #[test]
    fn one_whole_event_is_recognised() {
        for (chunk, one) in [
            (&b"data: x\n\n"[..], true),
            (b"data: x\r\n\r\n", true),
            (b"data: x\rdata: y\r\n\r\n", true),
            (b"id: 1\nevent: message\ndata: {}\n\n", true),
            (b"\n", true),
            (b"", false),
            (b"data: x\n", false),
            (b"data: x\n\ndata: y\n\n", false),
            (b"data: x\r\n\r", false),
            (b"data: x\n\n\n", false),
            // A final CR may be the first half of a CRLF still to come.
            (b"data: x\r\r", false),
        ] {
            let text = String::from_utf8_lossy(chunk);
            assert_eq!(EventSplitter::is_one_event(chunk), one, "{text:?}");
        }
    }

    #[test]
    fn a_chunk_ending_with_a_blank_line_ends_at_a_boundary() {
        for (chunk, boundary) in [
            (&b"data: x\n\n"[..], true),
            (b"data: x\r\n\r\n", true),
            (b"data: x\n\ndata: y\n\n", true),
            (b"data: x\r\r\n", true),
            (b"data: x\n\ndata: y\n", false),
            (b"data: x\r\r", false),
            (b"data: x\r\n", false),
            (b"data: x\n", false),
        ] {
            let text = String::from_utf8_lossy(chunk);
            assert_eq!(EventSplitter::ends_at_boundary(chunk), boundary, "{text:?}");
            if boundary {
                // The splitter agrees: the chunk leaves nothing behind.
                let (_, rest) = split_all(&[chunk]);
                assert!(rest.is_empty(), "{text:?}");
            }
        }
    }

    #[test]
    fn data_is_joined_and_replaced() {
        let ev = b"event: message\nid: 9\ndata: {\"a\":\ndata:  1}\nretry: 5\n\n";
        assert_eq!(
            event_data(&Bytes::from_static(ev)).unwrap(),
            &b"{\"a\":\n 1}"[..]
        );
        let out = replace_data(ev, b"{\"b\":2}");
        assert_eq!(
            &out[..],
            b"event: message\nid: 9\ndata: {\"b\":2}\nretry: 5\n\n"
        );
        assert_eq!(
            event_data(&Bytes::from_static(b"data:\n\n")).unwrap(),
            &b""[..]
        );
        assert!(event_data(&Bytes::from_static(b": ping\n\n")).is_none());
    }
}
