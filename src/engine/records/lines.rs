//! Plain text as line records, and back.
//!
//! A text gives one `{"line": n, "text": "..."}` record per non-empty line.
//! Empty lines cost nothing: they get no record, and the rebuild puts them
//! back from the line numbers and the segment's line count. (A text of empty
//! lines only still gives one record, its first line, so that it is
//! offloaded like any other.)
//!
//! A text whose lines are so short that one record each would take more
//! than twice the text's JSON size (a record costs about 27 bytes besides
//! its text: `{"line":1234567,"text":""}` and a newline) is cut in groups
//! instead: a record holds consecutive lines joined by `\n`, from a
//! non-empty line on, until its text reaches [`GROUP_BYTES`]; `line` is the
//! first one's number. Either way the records of a text take at most about
//! twice its JSON size.

use serde::Deserialize;

use super::{RebuildError, Records, Shape};
use crate::json::escape;

/// A group of short lines is closed once its text has this many bytes; a
/// run of more empty lines than this closes it too (they cost nothing
/// outside a record).
pub(super) const GROUP_BYTES: usize = 64;

/// Bytes of a line record besides its escaped text and line number:
/// `{"line":` `,"text":"` `"}` and the newline.
const RECORD_OVERHEAD: usize = 20;

/// The most lines a segment may announce (a corrupt header must not make
/// the rebuild write without end).
const MAX_LINES: usize = 1 << 32;

/// Writes the line records of `text` into `records`; returns the segment's
/// shape and whether lines were grouped.
pub(super) fn write(text: &str, records: &mut Records) -> (Shape, bool) {
    let trailing_newline = text.ends_with('\n');
    let content = if trailing_newline {
        &text[..text.len() - 1]
    } else {
        text
    };
    let lines = memchr::memchr_iter(b'\n', content.as_bytes()).count() + 1;
    let one_each = records_bytes(content, 0);
    let grouped = one_each > 2 * escaped_len(text) + 2;
    let min_bytes = if grouped { GROUP_BYTES } else { 0 };
    let bytes = if grouped {
        records_bytes(content, min_bytes)
    } else {
        one_each
    };
    records.reserve(bytes.max(RECORD_OVERHEAD + 1));
    let mut written = 0usize;
    for (line, part) in Groups::new(content, min_bytes) {
        push_line(records, line, part);
        written += 1;
    }
    if written == 0 {
        push_line(records, 1, "");
    }
    let shape = Shape::Lines {
        trailing_newline,
        lines: Some(lines),
    };
    (shape, grouped)
}

/// Bytes the records of `content` take, lines grouped by `min_bytes`.
fn records_bytes(content: &str, min_bytes: usize) -> usize {
    Groups::new(content, min_bytes)
        .map(|(line, part)| RECORD_OVERHEAD + digits(line) + escaped_len(part))
        .sum()
}

/// `{"line":n,"text":"..."}`, one record.
fn push_line(records: &mut Records, line: usize, text: &str) {
    use std::fmt::Write;
    let body = &mut records.body;
    body.push_str("{\"line\":");
    let _ = write!(body, "{line}");
    body.push_str(",\"text\":\"");
    push_escaped(body, text);
    body.push_str("\"}");
    records.end();
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Length of `s` escaped as the contents of a JSON string (no quotes).
fn escaped_len(s: &str) -> usize {
    s.bytes().map(|b| escape(b).map_or(1, str::len)).sum()
}

/// Appends `s` escaped as the contents of a JSON string, as `serde_json`
/// would (every escaped byte is ASCII, so the runs between are whole
/// characters).
fn push_escaped(out: &mut String, s: &str) {
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        if let Some(e) = escape(b) {
            out.push_str(&s[run..i]);
            out.push_str(e);
            run = i + 1;
        }
    }
    out.push_str(&s[run..]);
}

/// The records of a text: its non-empty lines, one each (`min_bytes` 0),
/// or grouped: `(number of the first line, the lines joined by \n)`.
struct Groups<'a> {
    content: &'a [u8],
    text: &'a str,
    /// Start of the next line, and its number.
    pos: usize,
    line: usize,
    min_bytes: usize,
}

impl<'a> Groups<'a> {
    fn new(text: &'a str, min_bytes: usize) -> Self {
        Groups {
            content: text.as_bytes(),
            text,
            pos: 0,
            line: 1,
            min_bytes,
        }
    }

    /// End of the line starting at `from`.
    fn line_end(&self, from: usize) -> usize {
        memchr::memchr(b'\n', &self.content[from..]).map_or(self.content.len(), |p| from + p)
    }

    /// Whether the group ending at `end` (its text `len` bytes) takes the
    /// next non-empty line; if so, where that line starts.
    fn next_in_group(&self, end: usize, len: usize) -> Option<usize> {
        if len >= self.min_bytes {
            return None;
        }
        let mut at = end + 1;
        while at < self.content.len() && self.content[at] == b'\n' {
            if at - end > self.min_bytes {
                return None;
            }
            at += 1;
        }
        (at < self.content.len()).then_some(at)
    }
}

impl<'a> Iterator for Groups<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let len = self.content.len();
        // Empty lines: no record.
        while self.pos < len && self.content[self.pos] == b'\n' {
            self.pos += 1;
            self.line += 1;
        }
        if self.pos >= len {
            return None;
        }
        let (start, first) = (self.pos, self.line);
        let mut end = self.line_end(start);
        while let Some(next) = self.next_in_group(end, end - start) {
            end = self.line_end(next);
        }
        let part = &self.text[start..end];
        self.line = first + memchr::memchr_iter(b'\n', part.as_bytes()).count() + 1;
        self.pos = end + 1;
        Some((first, part))
    }
}

/// The text of line records, as it was: the records' texts at their line
/// numbers, empty lines between and after them (up to `lines` when
/// `exact`; with records dropped, up to the last one kept), and the final
/// `\n`.
pub(super) fn rebuild(
    recs: &[&str],
    trailing_newline: bool,
    lines: Option<usize>,
    exact: bool,
) -> Result<String, RebuildError> {
    #[derive(Deserialize)]
    struct Line {
        line: Option<usize>,
        text: String,
    }
    let corrupt = |what: &str| RebuildError::Corrupt(format!("line records: {what}"));
    let mut s = String::new();
    // Number of the next line to write.
    let mut next = 1usize;
    for r in recs {
        let Line { line, text } =
            serde_json::from_str(r).map_err(|e| RebuildError::Corrupt(e.to_string()))?;
        let line = line.unwrap_or(next);
        if line < next || line > MAX_LINES {
            return Err(corrupt("out of order"));
        }
        empty_lines(&mut s, next, line);
        if line > 1 {
            s.push('\n');
        }
        s.push_str(&text);
        next = line + memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
    }
    if exact && let Some(lines) = lines {
        if lines > MAX_LINES || lines + 1 < next {
            return Err(corrupt("more lines than announced"));
        }
        empty_lines(&mut s, next, lines + 1);
    }
    if trailing_newline {
        s.push('\n');
    }
    Ok(s)
}

/// Empty lines `from` up to (not including) `to`.
fn empty_lines(s: &mut String, from: usize, to: usize) {
    let n = to.saturating_sub(from);
    // Every line but the first starts with the newline that ends the one before.
    let newlines = n - usize::from(from == 1 && n > 0);
    s.extend(std::iter::repeat_n('\n', newlines));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> (usize, bool) {
        let mut records = Records::default();
        let (shape, grouped) = write(text, &mut records);
        let Shape::Lines {
            trailing_newline,
            lines,
        } = shape
        else {
            unreachable!()
        };
        let recs: Vec<&str> = records.view().iter().collect();
        for r in &recs {
            let v: serde_json::Value = serde_json::from_str(r).unwrap();
            assert_eq!(v, serde_json::json!({"line": v["line"], "text": v["text"]}));
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                *r,
                "escaped as serde_json does"
            );
        }
        let back = rebuild(&recs, trailing_newline, lines, true).unwrap();
        assert_eq!(back, text);
        (records.len(), grouped)
    }

    #[test]
    fn empty_lines_cost_nothing_and_come_back() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "\na",
            "a\n\nb",
            "a\n\n\n",
            "\n\n\nx\n\n",
            "a\r\nb\r\n",
            "\u{1}\"\\\t\u{7f}é\n\n中",
        ] {
            round_trip(text);
        }
        assert_eq!(round_trip(&"\n".repeat(10_000)), (1, false));
        let text = format!("{}first\n\n\nsecond{}", "\n".repeat(500), "\n".repeat(500));
        assert_eq!(round_trip(&text), (2, false));
    }

    #[test]
    fn short_lines_are_grouped() {
        let text = "a\n".repeat(10_000);
        let (count, grouped) = round_trip(&text);
        assert!(grouped);
        assert!(count <= 10_000 * 2 / GROUP_BYTES + 1, "{count} records");
        let mut records = Records::default();
        write(&text, &mut records);
        assert!(
            records.into_body().len() <= 2 * escaped_len(&text),
            "at most twice the text"
        );
        // Lines of normal length are one record each.
        let log: String = (0..100)
            .map(|i| format!("2026-01-01 INFO worker {i} started\n"))
            .collect();
        assert_eq!(round_trip(&log), (100, false));
        // Runs of empty lines between short ones still cost nothing.
        let sparse = format!("{}{}", "a\n".repeat(1000), "\n".repeat(100)).repeat(20);
        let (count, grouped) = round_trip(&sparse);
        assert!(grouped);
        assert!(count <= 20 * (2000 / GROUP_BYTES + 1), "{count} records");
        let mut records = Records::default();
        write(&sparse, &mut records);
        let run = "\\n".repeat(GROUP_BYTES + 2);
        assert!(records.view().iter().all(|r| !r.contains(&run)));
        for text in ["x\n\ny\n\n\nz", "ab\ncd\n\nef\n"] {
            let mut records = Records::default();
            for (line, part) in Groups::new(text, 4) {
                push_line(&mut records, line, part);
            }
            let recs: Vec<&str> = records.view().iter().collect();
            assert_eq!(rebuild(&recs, false, None, false).unwrap(), text.trim_end());
        }
    }

    #[test]
    fn corrupt_line_numbers_are_refused() {
        let recs = [r#"{"line":3,"text":"a"}"#, r#"{"line":2,"text":"b"}"#];
        assert!(rebuild(&recs, false, None, true).is_err());
        assert!(rebuild(&recs[..1], false, Some(1), true).is_err());
        assert!(rebuild(&recs[..1], false, Some(usize::MAX), true).is_err());
        // Files written before: every line numbered, no count.
        let old = [r#"{"line":1,"text":""}"#, r#"{"line":2,"text":"b"}"#];
        assert_eq!(rebuild(&old, true, None, true).unwrap(), "\nb\n");
    }
}
