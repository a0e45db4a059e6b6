//! The server-sent events of `wire::sse`: the splitter (fed arbitrary
//! bytes in arbitrary chunks, and byte by byte), its boundary tests, and
//! the reading and rewriting of an event's data, each checked against a
//! reference reading of the SSE specification written here.

use bytes::Bytes;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;

use super::bounds::{config, timed};
use crate::wire::sse::{EventSplitter, event_data, replace_data};

// ---------------------------------------------------------------------------
// A reference reading
// ---------------------------------------------------------------------------

/// The lines of an event: content and terminator (CRLF, LF or CR; the last
/// line may have none).
fn ref_lines(event: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < event.len() {
        let term = match event[i] {
            b'\n' => 1,
            b'\r' if event.get(i + 1) == Some(&b'\n') => 2,
            b'\r' => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        out.push((&event[start..i], &event[i..i + term]));
        i += term;
        start = i;
    }
    if start < event.len() {
        out.push((&event[start..], &event[event.len()..]));
    }
    out
}

/// A stream cut into events (each up to and including its blank line) and
/// what follows the last one, reading a CR at the very end as a line end
/// (the stream is over: no LF can follow it).
fn ref_split(stream: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut events = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    for (content, term) in ref_lines(stream) {
        let content_start = content.as_ptr() as usize - stream.as_ptr() as usize;
        let end = content_start + content.len() + term.len();
        if term.is_empty() {
            break;
        }
        if content_start == line_start && content.is_empty() {
            events.push(&stream[start..end]);
            start = end;
        }
        line_start = end;
    }
    (events, &stream[start..])
}

/// Whether a line is a `data` field.
fn is_data_line(line: &[u8]) -> bool {
    if line.is_empty() || line[0] == b':' {
        return false;
    }
    let name = match line.iter().position(|&b| b == b':') {
        Some(p) => &line[..p],
        None => line,
    };
    name == b"data"
}

/// The event's data, as the SSE specification reads it: the values of its
/// `data` lines (one leading space dropped) joined by LF.
fn ref_event_data(event: &[u8]) -> Option<Vec<u8>> {
    let values: Vec<&[u8]> = ref_lines(event)
        .into_iter()
        .filter(|(l, _)| is_data_line(l))
        .map(|(l, _)| {
            let v = l
                .iter()
                .position(|&b| b == b':')
                .map_or(&l[l.len()..], |p| &l[p + 1..]);
            v.strip_prefix(b" ").unwrap_or(v)
        })
        .collect();
    (!values.is_empty()).then(|| values.join(&b'\n'))
}

fn sse_line() -> BoxedStrategy<Vec<u8>> {
    let content = prop_oneof![
        4 => select(&[
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "data:", "data", "data:  x",
            "id: 7", "event: message", "retry: 10", ": comment", ":", "", "", "", "dat",
            "data :x", "DATA: x", "data: \u{feff}x", "data:x:y", "data: 中",
        ][..])
        .prop_map(|l| l.as_bytes().to_vec()),
        2 => "data: [^\r\n]{0,30}".prop_map(String::into_bytes),
        1 => "[ -~]{0,20}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..10),
    ];
    const ENDS: &[&[u8]] = &[b"\n", b"\r", b"\r\n", b"\n", b"\n", b"\r\n"];
    (content, select(ENDS))
        .prop_map(|(mut line, end)| {
            line.extend_from_slice(end);
            line
        })
        .boxed()
}

/// A byte stream that is mostly SSE.
fn sse_stream() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..300),
        1 => prop::collection::vec(select(&b"\r\n\r\n:da \x00\xff"[..]), 0..200),
        5 => (prop::collection::vec(sse_line(), 0..40), prop::option::of("[ -~]{0,10}"))
            .prop_map(|(lines, tail)| {
                let mut out = lines.concat();
                out.extend_from_slice(tail.unwrap_or_default().as_bytes());
                out
            }),
    ]
    .boxed()
}

/// `bytes` cut at `cuts`.
fn cut(bytes: &[u8], cuts: &[Index]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::with_capacity(at.len() + 1);
    let mut start = 0;
    for c in at.into_iter().chain([bytes.len()]) {
        out.push(bytes[start..c].to_vec());
        start = c;
    }
    out
}

/// The lines `replace_data(event, data)` should have: every line with its
/// terminator, in order, but the data lines: one `data: {data}` line where
/// the first was. A blank line ended by LF right after a line ended by a
/// lone CR (the data lines between them dropped) ends with CRLF instead:
/// as written before, the CR and the LF would read as one CRLF and the
/// event would lose its end (`data: a\rdata: b\n\n`; see
/// `regression_replace_data_keeps_the_blank_line_after_a_cr_data_line`).
fn expected_lines(event: &[u8], data: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut done = false;
    for (l, t) in ref_lines(event) {
        if is_data_line(l) {
            if !done {
                let mut line = b"data: ".to_vec();
                line.extend_from_slice(data);
                let t = if t.is_empty() { &b"\n"[..] } else { t };
                out.push((line, t.to_vec()));
                done = true;
            }
        } else {
            let after_cr = out.last().is_some_and(|(_, end)| end == b"\r");
            let t = if l.is_empty() && t == b"\n" && after_cr {
                &b"\r\n"[..]
            } else {
                t
            };
            out.push((l.to_vec(), t.to_vec()));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Splits `chunks` with the splitter, as the rewriter does, and checks it
/// against the reference reading of their concatenation.
fn check_splitter(chunks: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let input: Vec<u8> = chunks.concat();
    let mut splitter = EventSplitter::default();
    let mut events: Vec<Bytes> = Vec::new();
    for c in chunks {
        splitter.push(c);
        while let Some(e) = splitter.next_event() {
            events.push(e);
        }
    }
    for e in &events {
        // Each event is one event: whole (or its last CR, decided by the
        // byte after it, is not yet known to be a line end on its own).
        prop_assert!(
            EventSplitter::is_one_event(e) || e.ends_with(b"\r"),
            "not one event: {:?}",
            String::from_utf8_lossy(e)
        );
    }
    let held = splitter.buffered();
    let last = splitter.finish_event();
    if let Some(last) = &last {
        prop_assert_eq!(last.len(), held);
        prop_assert_eq!(splitter.buffered(), 0);
        events.push(last.clone());
    }
    let rest = splitter.take_rest();
    prop_assert_eq!(splitter.buffered(), 0);
    let (ref_events, ref_rest) = ref_split(&input);
    let got: Vec<&[u8]> = events.iter().map(|e| &e[..]).collect();
    prop_assert_eq!(&got, &ref_events, "events");
    prop_assert_eq!(&rest[..], ref_rest, "rest");
    let mut joined: Vec<u8> = events.concat();
    joined.extend_from_slice(&rest);
    prop_assert_eq!(joined, input, "events and rest are the input");
    Ok(())
}

/// `ends_at_boundary` and `is_one_event` agree with the reference reading.
fn check_boundaries(chunk: &[u8]) -> Result<(), TestCaseError> {
    // The streaming reading: a final CR is not a line end yet.
    let streaming = |bytes: &[u8]| -> (usize, usize) {
        let mut s = EventSplitter::default();
        s.push(bytes);
        let mut n = 0;
        while s.next_event().is_some() {
            n += 1;
        }
        (n, s.buffered())
    };
    if EventSplitter::ends_at_boundary(chunk) {
        prop_assert_eq!(
            streaming(chunk).1,
            0,
            "a chunk at a boundary leaves nothing"
        );
    }
    let one = EventSplitter::is_one_event(chunk);
    prop_assert_eq!(one, streaming(chunk) == (1, 0), "is_one_event");
    Ok(())
}

/// `event_data` and `replace_data` on one event.
fn check_event_data(event: &[u8], data: &[u8]) -> Result<(), TestCaseError> {
    let bytes = Bytes::copy_from_slice(event);
    let got = event_data(&bytes);
    let expected = ref_event_data(event);
    prop_assert_eq!(got.as_deref(), expected.as_deref(), "event_data");
    let out = replace_data(event, data);
    let Some(_) = expected else {
        prop_assert_eq!(&out[..], event, "an event without data is kept");
        return Ok(());
    };
    let expected_lines = expected_lines(event, data);
    let got_lines: Vec<(Vec<u8>, Vec<u8>)> = ref_lines(&out)
        .into_iter()
        .map(|(l, t)| (l.to_vec(), t.to_vec()))
        .collect();
    prop_assert_eq!(&got_lines, &expected_lines, "lines of the rewritten event");
    let new_data = event_data(&out);
    prop_assert_eq!(new_data.as_deref(), Some(data), "the new data");
    // One whole event stays one whole event.
    let (events, rest) = ref_split(event);
    if events.len() == 1 && rest.is_empty() {
        let (out_events, out_rest) = ref_split(&out);
        prop_assert!(
            out_events.len() == 1 && out_rest.is_empty(),
            "one event became {} events and {} bytes: {:?}",
            out_events.len(),
            out_rest.len(),
            String::from_utf8_lossy(&out)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1))]

    /// The splitter, fed arbitrary bytes in arbitrary chunks.
    #[test]
    fn fuzz_sse_splitter(input in sse_stream(), cuts in prop::collection::vec(any::<Index>(), 0..12)) {
        timed(|| check_splitter(&cut(&input, &cuts)))?;
    }

    /// Every chunk cut into single bytes: the splitter resumes at each.
    #[test]
    fn fuzz_sse_splitter_byte_by_byte(input in sse_stream()) {
        let chunks: Vec<Vec<u8>> = input.iter().map(|&b| vec![b]).collect();
        timed(|| check_splitter(&chunks))?;
    }

    #[test]
    fn fuzz_sse_boundaries(chunk in sse_stream()) {
        timed(|| check_boundaries(&chunk))?;
    }

    /// `event_data` and `replace_data` on the events of a stream (and on
    /// the unfinished one at its end).
    #[test]
    fn fuzz_sse_event_data(input in sse_stream(), data in "[^\r\n]{0,40}") {
        timed(|| {
            let (events, rest) = ref_split(&input);
            for e in events.iter().copied().chain([rest]) {
                check_event_data(e, data.as_bytes())?;
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------
// Regressions: inputs the fuzzing found, kept literally
// ---------------------------------------------------------------------------

/// Found by `fuzz_sse_event_data`: the first data line ends with a lone CR,
/// the second with LF, then the blank line; `replace_data` drops the second
/// data line with its LF, so the CR and the blank line's LF become one CRLF
/// and the event loses its end.
#[test]
fn regression_replace_data_keeps_the_blank_line_after_a_cr_data_line() {
    let event = b"data: a\rdata: b\n\n";
    assert_eq!(ref_split(event), (vec![&event[..]], &b""[..]), "one event");
    let out = replace_data(event, b"{}");
    let (events, rest) = ref_split(&out);
    assert!(
        events.len() == 1 && rest.is_empty(),
        "one event in, {} events and {:?} out: {:?}",
        events.len(),
        String::from_utf8_lossy(rest),
        String::from_utf8_lossy(&out)
    );
    // A field line between the data lines: the same.
    let event = b"data: a\nid: 7\rdata: b\n\n";
    let out = replace_data(event, b"{}");
    assert_eq!(
        ref_split(&out).0.len(),
        1,
        "{:?}",
        String::from_utf8_lossy(&out)
    );
}
