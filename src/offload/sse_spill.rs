//! One event of an event stream too large to hold: its bytes written to a
//! private temporary file as they arrive (until the blank line that ends
//! it), then its data lines joined into a second file (the JSON-RPC
//! message), which the engine offloads from there in bounded memory. The
//! event sent is the original's other lines (`id:`, `event:`, comments)
//! with one `data:` line of the rewritten message; or, when the result
//! stays, the original event played back from its file byte for byte.
//!
//! Memory: a read buffer, and the event's lines other than `data` (at
//! most [`KEPT_MAX`] bytes; past it the event is played back unchanged).

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, Write};

use bytes::{Bytes, BytesMut};

use crate::offload::{Offloader, Outcome, ToolCall};

/// Most bytes of an event's lines other than `data` kept to rebuild it.
const KEPT_MAX: usize = 64 * 1024;

/// An event being spilled: its raw bytes so far, and where its end is
/// looked for.
pub(crate) struct EventSpill {
    out: std::io::BufWriter<File>,
    len: u64,
    /// The current line has no bytes yet.
    empty: bool,
    /// The last byte was a CR ending a line (a LF may follow).
    cr: bool,
    /// A blank line ended by a lone CR: the event ends unless a LF follows.
    ending: bool,
}

impl EventSpill {
    /// A spill starting with `start` (the event's first bytes, from a line
    /// start); `None` when no file can be made or written.
    pub(crate) fn new(start: &[u8]) -> Option<EventSpill> {
        let file = tempfile::tempfile().ok()?;
        let mut spill = EventSpill {
            out: std::io::BufWriter::with_capacity(256 * 1024, file),
            len: 0,
            empty: true,
            cr: false,
            ending: false,
        };
        match spill.push(start) {
            Ok(None) => Some(spill),
            // The bytes held are never a whole event (the splitter would
            // have cut it): anything else is a bug, not a spill.
            _ => None,
        }
    }

    /// A spill of `event`, a whole event; `None` when no file can be made
    /// or written.
    pub(crate) fn whole(event: &[u8]) -> Option<EventSpill> {
        let file = tempfile::tempfile().ok()?;
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
        out.write_all(event).ok()?;
        Some(EventSpill {
            out,
            len: event.len() as u64,
            empty: true,
            cr: false,
            ending: false,
        })
    }

    /// Writes the bytes of `chunk` that belong to the event; `Some(n)` when
    /// the event ended after the first `n` bytes (the rest is the stream's).
    /// (The file is local and was just made: these writes land in the page
    /// cache, short enough to do in place.)
    pub(crate) fn push(&mut self, chunk: &[u8]) -> std::io::Result<Option<usize>> {
        let end = self.scan(chunk);
        let take = end.unwrap_or(chunk.len());
        self.out.write_all(&chunk[..take])?;
        self.len += take as u64;
        Ok(end)
    }

    /// At the end of the stream: whether the event is complete (it ended
    /// with a blank line closed by a lone CR).
    pub(crate) fn complete_at_end(&self) -> bool {
        self.ending
    }

    /// Where the blank line that ends the event ends in `chunk`, if there.
    fn scan(&mut self, chunk: &[u8]) -> Option<usize> {
        for (i, &b) in chunk.iter().enumerate() {
            if std::mem::take(&mut self.cr) && b == b'\n' {
                // The LF of a CRLF: the line already ended.
                if std::mem::take(&mut self.ending) {
                    return Some(i + 1);
                }
                continue;
            }
            if std::mem::take(&mut self.ending) {
                return Some(i);
            }
            match b {
                b'\n' | b'\r' => {
                    let blank = self.empty;
                    self.empty = true;
                    if b == b'\r' {
                        self.cr = true;
                        self.ending = blank;
                    } else if blank {
                        return Some(i + 1);
                    }
                }
                _ => self.empty = false,
            }
        }
        None
    }

    /// The event's file, rewound, and its length.
    pub(crate) fn finish(self) -> std::io::Result<(File, u64)> {
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        Ok((file, self.len))
    }
}

/// One line of the event besides its data: kept as it was, or where the
/// data lines were.
enum Part {
    Line(Vec<u8>),
    Data { term: Vec<u8> },
}

/// Offloads the spilled event in `event` (`len` bytes) for `call`: the
/// rewritten event and the reply's id, or `None` (play it back).
pub(crate) fn offload_event(
    offloader: &Offloader,
    call: &ToolCall,
    event: &File,
) -> Option<(serde_json::Value, Bytes, Outcome)> {
    let mut data = tempfile::tempfile().ok()?;
    let parts = data_of(event, &mut data).ok()??;
    let len = data.stream_position().ok()?;
    data.rewind().ok()?;
    let reply = offloader.process_spilled(call, &data, len);
    let message = match (&reply.outcome, reply.message) {
        (Outcome::Inline(_), _) | (_, None) => return None,
        // One data line: the line breaks of the data lines it came in go
        // (whitespace of the JSON, as when an event is rewritten in memory).
        (_, Some(m)) => crate::json::minify(&m),
    };
    let mut out = BytesMut::with_capacity(message.len() + 256);
    for part in &parts {
        match part {
            Part::Line(l) => out.extend_from_slice(l),
            Part::Data { term } => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(message.as_bytes());
                out.extend_from_slice(term);
            }
        }
    }
    Some((reply.id, out.freeze(), reply.outcome))
}

/// Writes the event's data lines, joined by `\n` (one space after `data:`
/// left out), to `data`; returns its other lines, or `None` when they are
/// too many bytes to keep. (About 60 lines: one pass over the lines of an
/// event of any size, each line streamed.)
fn data_of(event: &File, data: &mut File) -> std::io::Result<Option<Vec<Part>>> {
    let mut input = BufReader::with_capacity(256 * 1024, event.try_clone()?);
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, data);
    let mut parts: Vec<Part> = Vec::new();
    let (mut kept, mut data_lines) = (0usize, 0usize);
    loop {
        // The field name: up to ':' or the line's end (a name is short; a
        // long one is not `data` and is kept like any line).
        let mut line: Vec<u8> = Vec::new();
        let is_data = loop {
            let buf = input.fill_buf()?;
            if buf.is_empty() {
                break false;
            }
            match memchr::memchr3(b':', b'\n', b'\r', buf) {
                Some(p) => {
                    let colon = buf[p] == b':';
                    line.extend_from_slice(&buf[..p]);
                    input.consume(p);
                    break colon && line == b"data";
                }
                None => {
                    let n = buf.len();
                    line.extend_from_slice(buf);
                    input.consume(n);
                    if line.len() > KEPT_MAX {
                        return Ok(None);
                    }
                }
            }
        };
        if line.is_empty() && input.fill_buf()?.is_empty() {
            break;
        }
        if is_data {
            input.consume(1); // ':'
            if input.fill_buf()?.first() == Some(&b' ') {
                input.consume(1);
            }
            if data_lines > 0 {
                out.write_all(b"\n")?;
            }
            data_lines += 1;
            let term = copy_line(&mut input, &mut out)?;
            if data_lines == 1 {
                parts.push(Part::Data { term });
            }
        } else {
            let mut rest = Vec::new();
            let term = copy_line(&mut input, &mut rest)?;
            line.extend_from_slice(&rest);
            line.extend_from_slice(&term);
            kept += line.len();
            if kept > KEPT_MAX {
                return Ok(None);
            }
            parts.push(Part::Line(line));
        }
    }
    out.flush()?;
    Ok((data_lines > 0).then_some(parts))
}

/// Copies the rest of the line to `out`; returns its terminator.
fn copy_line(input: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<Vec<u8>> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(Vec::new());
        }
        match memchr::memchr2(b'\n', b'\r', buf) {
            Some(p) => {
                out.write_all(&buf[..p])?;
                let lf = buf[p] == b'\n';
                input.consume(p + 1);
                if lf {
                    return Ok(b"\n".to_vec());
                }
                if input.fill_buf()?.first() == Some(&b'\n') {
                    input.consume(1);
                    return Ok(b"\r\n".to_vec());
                }
                return Ok(b"\r".to_vec());
            }
            None => {
                let n = buf.len();
                out.write_all(buf)?;
                input.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_end_of_an_event_is_found_across_chunks() {
        let stream = b"id: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nnext";
        for cut in 1..stream.len() {
            let mut s = EventSpill::new(&stream[..1]).unwrap();
            let mut at = 1;
            let mut end = None;
            for piece in stream[1..].chunks(cut) {
                if let Some(n) = s.push(piece).unwrap() {
                    end = Some(at + n);
                    break;
                }
                at += piece.len();
            }
            assert_eq!(end, Some(stream.len() - 4), "cut {cut}");
            let (mut file, len) = s.finish().unwrap();
            let mut data = tempfile::tempfile().unwrap();
            let parts = data_of(&file, &mut data).unwrap().unwrap();
            data.rewind().unwrap();
            let mut joined = String::new();
            data.read_to_string(&mut joined).unwrap();
            assert_eq!(joined, "{\"a\":\n1}");
            assert_eq!(parts.len(), 3, "id, data, blank line");
            let mut raw = Vec::new();
            file.rewind().unwrap();
            file.read_to_end(&mut raw).unwrap();
            assert_eq!(raw.len() as u64, len);
        }
        // A whole large event, offloaded.
        let dir = tempfile::tempdir().unwrap();
        let o = Offloader::new(crate::config::OffloadConfig::default().output_dir(dir.path()));
        let rows: Vec<String> = (0..20_000).map(|i| format!("{{\"n\":{i}}}")).collect();
        let text = serde_json::to_string(&format!("[{}]", rows.join(","))).unwrap();
        let event = format!(
            "id: 4\r\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{text}}}]}}}}\r\n\r\n"
        );
        let mut s = EventSpill::new(&event.as_bytes()[..10]).unwrap();
        assert_eq!(
            s.push(&event.as_bytes()[10..]).unwrap(),
            Some(event.len() - 10)
        );
        let (file, _) = s.finish().unwrap();
        let (id, out, outcome) = offload_event(&o, &ToolCall::new("t", None), &file).unwrap();
        assert_eq!(id, 1);
        assert!(matches!(outcome, Outcome::Offloaded(_)));
        let out = String::from_utf8(out.to_vec()).unwrap();
        assert!(out.starts_with("id: 4\r\ndata: {"), "{out}");
        assert!(out.ends_with("}\r\n\r\n"), "{out}");
        // A blank line closed by a lone CR ends the event once another byte comes.
        let mut s = EventSpill::new(b"data: x\r").unwrap();
        assert_eq!(s.push(b"\r").unwrap(), None);
        assert_eq!(s.push(b"y").unwrap(), Some(0));
        let mut s = EventSpill::new(b"data: x\r").unwrap();
        assert_eq!(s.push(b"\r").unwrap(), None);
        assert!(s.complete_at_end());
    }
}
