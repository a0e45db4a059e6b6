//! The records of one source value of a spilled result, written to a
//! [`Sink`] in one pass over it, with the [`Shape`] that puts the value
//! back together.
//!
//! * `structuredContent` (raw JSON in the spill): an array gives one
//!   record per element; an object whose largest member is an array of
//!   more than [`SOURCE_MIN`] bytes gives that array's elements (the rest
//!   of the object is the shape's `before`/`after`); anything else is one
//!   record.
//! * A text block's text (decoded into a private temporary file first): a
//!   JSON text as above (its lead and trail whitespace kept, and whether
//!   it was compact); JSON lines (at least two, each compact, none blank)
//!   one record per line; any other text one `{"line": n, "text": "..."}`
//!   record per non-empty line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};

use super::super::records::{Shape, TextFormat};
use super::scan::{CHUNK, NotStreamable, check_json, minify_copy};
use super::sink::{FOLD_MAX, Sink};
use super::walk::{Outer, Visit, walk};
use crate::json::{Style, StyleCheck, is_minified, minify, push_escaped};

/// A value larger than this (in the spill, or decoded) is a record source;
/// smaller ones stay in the envelope.
pub(crate) const SOURCE_MIN: u64 = 64 * 1024;
/// Most bytes kept of the text around a record array (`before`, `after`)
/// and of the whitespace around a JSON text.
const AROUND_MAX: u64 = 16 * 1024;
/// Most members of an object looked at for its record array.
const MAX_MEMBERS: usize = 10_000;

/// `len` bytes of `file` from `at`.
pub(super) fn range(file: &File, at: u64, len: u64) -> io::Result<io::Take<BufReader<File>>> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(at))?;
    Ok(BufReader::with_capacity(CHUNK, f).take(len))
}

/// `len` bytes of `file` from `at`, as text (for small parts only).
pub(super) fn read_small(file: &File, at: u64, len: u64) -> Result<String, NotStreamable> {
    let mut s = String::new();
    range(file, at, len)?
        .read_to_string(&mut s)
        .map_err(|_| NotStreamable("not UTF-8"))?;
    Ok(s)
}

/// Writes each child of the array walked as one record.
struct Elements<'s>(&'s mut Sink);

impl Visit for Elements<'_> {
    fn wants_bytes(&self) -> bool {
        true
    }
    fn bytes(&mut self, b: &[u8]) -> Result<(), NotStreamable> {
        self.0.write(b)
    }
    fn end(&mut self, _at: u64) -> Result<(), NotStreamable> {
        self.0.end()
    }
}

/// The members of an object: key, and where the value starts and ends.
#[derive(Default)]
struct Members(Vec<(Vec<u8>, u64, u64)>);

impl Visit for Members {
    fn key(&mut self, raw: &[u8]) {
        self.0.push((raw.to_vec(), 0, 0));
    }
    fn start(&mut self, at: u64) -> Result<(), NotStreamable> {
        if self.0.len() > MAX_MEMBERS {
            return Err(NotStreamable("too many members"));
        }
        if let Some(last) = self.0.last_mut() {
            last.1 = at;
        }
        Ok(())
    }
    fn end(&mut self, at: u64) -> Result<(), NotStreamable> {
        if let Some(last) = self.0.last_mut() {
            last.2 = at;
        }
        Ok(())
    }
}

/// The records of the JSON value in `file[at..at + len]` (valid JSON,
/// checked); `text`: it was a text block's (its whitespace is part of the
/// shape).
pub(super) fn json_value(
    file: &File,
    at: u64,
    len: u64,
    text: bool,
    sink: &mut Sink,
) -> Result<Shape, NotStreamable> {
    let mut first = [0u8; 1];
    let mut lead = 0u64;
    let mut probe = range(file, at, len)?;
    while probe.read(&mut first)? == 1 && first[0].is_ascii_whitespace() {
        lead += 1;
    }
    let around = |outer: &Outer| -> Result<Option<TextFormat>, NotStreamable> {
        if !text {
            return Ok(None);
        }
        let (l, t) = if outer.lead + outer.trail <= AROUND_MAX {
            (
                read_small(file, at, outer.lead)?,
                read_small(file, at + len - outer.trail, outer.trail)?,
            )
        } else {
            (String::new(), String::new())
        };
        let style = match outer.inner_ws {
            0 => Some(Style::Compact),
            _ => streamed_style(file, at + outer.lead, len - outer.lead - outer.trail)?,
        };
        Ok(Some(TextFormat::streamed(&l, &t, style)))
    };
    match first[0] {
        b'[' => {
            let outer = walk(range(file, at, len)?, &mut Elements(sink))?;
            Ok(Shape::Json {
                before: String::new(),
                after: String::new(),
                format: around(&outer)?,
            })
        }
        b'{' => {
            let mut members = Members::default();
            let outer = walk(range(file, at, len)?, &mut members)?;
            let bulk = members
                .0
                .iter()
                .filter(|(_, s, e)| e - s > SOURCE_MIN)
                .max_by_key(|(_, s, e)| e - s)
                .copied_span();
            let format = around(&outer)?;
            if let Some((s, e)) = bulk
                && peek(file, at + s)? == b'['
            {
                let start = at + outer.lead;
                let end = at + len - outer.trail;
                if (at + s - start) + (end - (at + e)) <= AROUND_MAX {
                    let before = minify(&read_small(file, start, at + s - start)?);
                    let after = minify(&read_small(file, at + e, end - (at + e))?);
                    walk(range(file, at + s, e - s)?, &mut Elements(sink))?;
                    return Ok(Shape::Json {
                        before,
                        after,
                        format,
                    });
                }
            }
            let _ = lead;
            one_value(file, at, len, sink)?;
            Ok(Shape::Value { format })
        }
        _ => {
            one_value(file, at, len, sink)?;
            Ok(Shape::Value { format: None })
        }
    }
}

/// The style `file[at..at + len]` (valid JSON, no whitespace around it)
/// is laid out in, read a chunk at a time; `None` when no known one.
fn streamed_style(file: &File, at: u64, len: u64) -> Result<Option<Style>, NotStreamable> {
    let mut check = StyleCheck::default();
    let mut text = range(file, at, len)?;
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = text.read(&mut chunk)?;
        if n == 0 {
            return Ok(check.style());
        }
        check.feed(&chunk[..n]);
    }
}

trait CopiedSpan {
    fn copied_span(self) -> Option<(u64, u64)>;
}

impl CopiedSpan for Option<&(Vec<u8>, u64, u64)> {
    fn copied_span(self) -> Option<(u64, u64)> {
        self.map(|(_, s, e)| (*s, *e))
    }
}

fn peek(file: &File, at: u64) -> Result<u8, NotStreamable> {
    let mut b = [0u8; 1];
    range(file, at, 1)?.read_exact(&mut b)?;
    Ok(b[0])
}

/// The whole value as one record, minified as it streams.
fn one_value(file: &File, at: u64, len: u64, sink: &mut Sink) -> Result<(), NotStreamable> {
    struct To<'s>(&'s mut Sink);
    impl Write for To<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .write(buf)
                .map_err(|e| io::Error::other(e.0))
                .map(|()| buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    minify_copy(range(file, at, len)?, &mut To(sink))?;
    sink.end()
}

/// The records of a text block's text, decoded into `text` (`len` bytes).
pub(super) fn text(text: &File, len: u64, sink: &mut Sink) -> Result<Shape, NotStreamable> {
    let mut head = Vec::new();
    range(text, 0, len.min(4096))?.read_to_end(&mut head)?;
    let first = head.iter().copied().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        if check_json(range(text, 0, len)?) {
            return json_value(text, 0, len, true, sink);
        }
        if let Some(trailing_newline) = jsonl(text, len)? {
            let mut lines = range(text, 0, len)?;
            let mut line = Vec::new();
            loop {
                line.clear();
                if lines.read_until(b'\n', &mut line)? == 0 {
                    break;
                }
                let l = line.strip_suffix(b"\n").unwrap_or(&line);
                sink.record(l)?;
            }
            return Ok(Shape::Jsonl {
                trailing_newline,
                verbatim: None,
                style: None,
            });
        }
    }
    plain_lines(text, len, sink)
}

/// `Some(trailing newline)` when the text is compact JSON lines (objects
/// or arrays, at least two, none blank, none longer than [`FOLD_MAX`]).
fn jsonl(text: &File, len: u64) -> Result<Option<bool>, NotStreamable> {
    let mut lines = range(text, 0, len)?;
    let mut line = Vec::new();
    let (mut count, mut trailing) = (0usize, false);
    loop {
        line.clear();
        // Bounded: a line longer than FOLD_MAX is not JSON lines here.
        let n = (&mut lines)
            .take(FOLD_MAX as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        let l = match line.strip_suffix(b"\n") {
            Some(l) => l,
            None if line.len() > FOLD_MAX => return Ok(None),
            None => &line,
        };
        trailing = line.ends_with(b"\n");
        let compact = std::str::from_utf8(l).is_ok_and(|s| {
            s.starts_with(['{', '['])
                && serde_json::from_str::<&serde_json::value::RawValue>(s).is_ok()
                && is_minified(s)
        });
        if !compact {
            return Ok(None);
        }
        count += 1;
    }
    Ok((count >= 2).then_some(trailing))
}

/// One `{"line": n, "text": "..."}` record per non-empty line, streamed
/// (a line of any length is written as it comes).
fn plain_lines(text: &File, len: u64, sink: &mut Sink) -> Result<Shape, NotStreamable> {
    let mut input = range(text, 0, len)?;
    let mut buf = vec![0u8; CHUNK];
    let mut out: Vec<u8> = Vec::with_capacity(CHUNK + 64);
    let (mut line, mut open, mut last) = (1usize, false, 0u8);
    let written_before = sink.count();
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        last = buf[n - 1];
        let mut at = 0;
        while at < n {
            let newline = memchr::memchr(b'\n', &buf[at..n]).map(|p| at + p);
            let piece = &buf[at..newline.unwrap_or(n)];
            if !piece.is_empty() {
                if !open {
                    out.extend_from_slice(format!("{{\"line\":{line},\"text\":\"").as_bytes());
                    open = true;
                }
                push_escaped(&mut out, piece);
                if out.len() >= CHUNK {
                    sink.write(&out)?;
                    out.clear();
                }
            }
            let Some(newline) = newline else { break };
            if open {
                out.extend_from_slice(b"\"}");
                sink.write(&out)?;
                out.clear();
                sink.end()?;
                open = false;
            }
            line += 1;
            at = newline + 1;
        }
    }
    if open {
        out.extend_from_slice(b"\"}");
        sink.write(&out)?;
        sink.end()?;
    }
    let trailing_newline = last == b'\n';
    let lines = if trailing_newline { line - 1 } else { line };
    if sink.count() == written_before {
        sink.record(b"{\"line\":1,\"text\":\"\"}")?;
    }
    Ok(Shape::Lines {
        trailing_newline,
        lines: Some(lines),
    })
}
