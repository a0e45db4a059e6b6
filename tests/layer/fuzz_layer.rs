//! Fuzzing the rewriter through the public API:
//! `OffloadLayer` in process, around a `tower::service_fn` inner service
//! that reads the request and answers with a generated body — JSON or an
//! event stream, hostile shapes included — in generated chunks, with
//! pending polls, trailers and errors between them.
//!
//! Each case must end in time (`tokio::time::timeout`: never hangs) without
//! a panic, and the response must be byte-identical to the inner one or a
//! valid rewrite: only the result of a watched call replaced by a
//! `CallToolResult` carrying a descriptor whose file rebuilds that result,
//! every other byte (other messages, other events, the lines around the
//! data of a rewritten event) as the inner service sent it, a length header
//! that matches the body or none, trailers and errors passed on.
//!
//! Cases: `LRO_FUZZ_CASES` (default 256, about 2 s in a debug build); see
//! `tests/fuzz/mod.rs` for running longer
//! (`LRO_FUZZ_CASES=20000 cargo test --release --test layer fuzz_layer`) and
//! `LRO_FUZZ_SLOW_MS`.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tower::{Layer, ServiceExt, service_fn};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadResponse;
use tower_lro::offload::{
    EventHook, OffloadLayer, RebuildError, RequestBody, rebuild_file, rebuild_with,
};

// ---------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------

fn cases() -> u32 {
    let base = std::env::var("LRO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(256);
    base.max(1)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 1024,
        ..ProptestConfig::default()
    }
}

/// A case that takes three times as long as this is cut off as a hang
/// (a deadline against hanging, not a speed requirement).
fn slow_limit() -> Duration {
    let ms = std::env::var("LRO_FUZZ_SLOW_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(10_000);
    Duration::from_millis(ms)
}

// ---------------------------------------------------------------------------
// The inner service's body: scripted frames
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Broken;

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("upstream broke")
    }
}

impl std::error::Error for Broken {}

#[derive(Debug, Clone)]
enum Step {
    Data(Bytes),
    /// One `Pending` poll (the body wakes itself).
    Pending,
    Trailers(HeaderMap),
    Error,
}

/// A body playing `steps`; its size is exactly known when `exact`.
struct Scripted {
    steps: VecDeque<Step>,
    exact: bool,
}

impl Body for Scripted {
    type Data = Bytes;
    type Error = Broken;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Broken>>> {
        match self.steps.pop_front() {
            None => Poll::Ready(None),
            Some(Step::Pending) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Step::Data(d)) => Poll::Ready(Some(Ok(Frame::data(d)))),
            Some(Step::Trailers(t)) => Poll::Ready(Some(Ok(Frame::trailers(t)))),
            Some(Step::Error) => Poll::Ready(Some(Err(Broken))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.exact && self.steps.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        if !self.exact {
            return SizeHint::default();
        }
        let n: usize = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Data(d) => d.len(),
                _ => 0,
            })
            .sum();
        SizeHint::with_exact(n as u64)
    }
}

/// `bytes` cut at `cuts`, with a pending poll before the chunks `pending`
/// points at.
fn script(bytes: &[u8], cuts: &[Index], pending: &[Index]) -> VecDeque<Step> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for c in at.into_iter().chain([bytes.len()]) {
        chunks.push(Bytes::copy_from_slice(&bytes[start..c]));
        start = c;
    }
    let pause: Vec<usize> = pending.iter().map(|p| p.index(chunks.len())).collect();
    let mut steps = VecDeque::new();
    for (n, c) in chunks.into_iter().enumerate() {
        if pause.contains(&n) {
            steps.push_back(Step::Pending);
        }
        steps.push_back(Step::Data(c));
    }
    steps
}

/// What a body gave: its data, trailers, and whether it ended in an error.
#[derive(Debug, Default)]
struct Read {
    data: Vec<u8>,
    trailers: Option<HeaderMap>,
    error: bool,
}

async fn read_all<B>(mut body: Pin<&mut B>) -> Read
where
    B: Body<Data = Bytes>,
{
    let mut out = Read::default();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(f) => match f.into_data() {
                Ok(d) => {
                    assert!(out.trailers.is_none(), "data after trailers");
                    out.data.extend_from_slice(&d);
                }
                Err(f) => out.trailers = f.into_trailers().ok(),
            },
            Err(_) => {
                out.error = true;
                break;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Hostile JSON text
// ---------------------------------------------------------------------------

/// JSON text, compact, with hostile literals, duplicate keys and deep
/// nesting.
fn raw_json() -> BoxedStrategy<String> {
    let plain = select(
        &[
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1.5e3",
            "42",
            "\"x\"",
            "\"\"",
            "\"info\"",
            "\"é\\n\\\"中\"",
            "\"\\u00e9\\/\"",
            "\"data: x\\r\\n\\r\\n\"",
            "\"}]\\\\\"",
            "\"tools/call\"",
            "\"\\u2028\u{2028}\"",
        ][..],
    );
    let hostile = select(
        &[
            "1e999",
            "-1E-400",
            "123456789012345678901234567890",
            "18446744073709551616",
            "\"\\ud800\"",
            "\"\\udfff\\ud800\"",
            "\"\\ud83d\\ude00\"",
        ][..],
    );
    let leaf = prop_oneof![6 => plain, 1 => hostile]
        .prop_map(String::from)
        .boxed();
    let key = select(
        &[
            "\"id\"",
            "\"result\"",
            "\"content\"",
            "\"text\"",
            "\"type\"",
            "\"a\"",
            "\"\"",
            "\"\\u0069d\"",
            "\"k\\ud800\"",
            "\"rows\"",
            "\"name\"",
            "\"level\"",
        ][..],
    );
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            4 => prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("[{}]", items.join(","))),
            4 => prop::collection::vec((key.clone(), inner.clone()), 0..6).prop_map(|members| {
                let m: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", m.join(","))
            }),
            1 => (1usize..300, any::<bool>(), inner).prop_map(|(n, objects, v)| {
                if objects {
                    format!("{}{v}{}", "{\"d\":".repeat(n), "}".repeat(n))
                } else {
                    format!("{}{v}{}", "[".repeat(n), "]".repeat(n))
                }
            }),
        ]
    })
    .boxed()
}

/// JSON text with whitespace added between tokens, drawn from `seed` (0:
/// none). `line_breaks`: whether LF and CR may be used.
fn respace(text: &str, mut seed: u64, line_breaks: bool) -> String {
    if seed == 0 {
        return text.to_owned();
    }
    let mut next = move || {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let gaps: &[&str] = if line_breaks {
        &[" ", "\n", "\r\n", "\t", "\n  ", "\r", "", "", "", ""]
    } else {
        &[" ", "\t", "  ", "", "", ""]
    };
    let mut out = String::with_capacity(text.len() * 2);
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        out.push(c);
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' | ',' | ':' | '}' | ']' => {
                out.push_str(gaps[(next() % gaps.len() as u64) as usize]);
            }
            _ => {}
        }
    }
    out
}

/// `seed`, or 0 (no whitespace) one time in `n`.
fn sometimes(seed: u64, n: u64) -> u64 {
    if seed.is_multiple_of(n) { 0 } else { seed }
}

/// `text` as the contents of a JSON string literal, quotes included.
fn literal(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The (decoded) text of a text block.
fn text_payload() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::collection::vec(raw_json(), 0..40).prop_map(|r| format!("[{}]", r.join(","))),
        1 => (prop::collection::vec(raw_json(), 0..40), any::<u64>())
            .prop_map(|(r, seed)| respace(&format!("[{}]", r.join(",")), seed, true)),
        1 => (0usize..2000, raw_json()).prop_map(|(n, r)| format!("[{}]", vec![r; n].join(","))),
        2 => prop::collection::vec(
            (raw_json(), select(&["\n", "\r\n", "\n\n", "\r\n\r\n"][..])),
            0..20,
        )
        .prop_map(|lines| lines.iter().map(|(l, e)| format!("{l}{e}")).collect()),
        2 => prop::collection::vec(("\\PC{0,30}", select(&["\n", "\r\n", "\r", ""][..])), 0..30)
            .prop_map(|lines| lines.iter().map(|(l, e)| format!("{l}{e}")).collect()),
    ]
    .boxed()
}

/// A `CallToolResult` (mostly), as compact JSON text.
fn tool_result() -> BoxedStrategy<String> {
    let block = prop_oneof![
        5 => text_payload().prop_map(|t| format!("{{\"type\":\"text\",\"text\":{}}}", literal(&t))),
        1 => Just("{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}".to_owned()),
        1 => raw_json(),
    ];
    let structured = prop_oneof![
        2 => prop::collection::vec(raw_json(), 0..40)
            .prop_map(|rows| format!("{{\"rows\":[{}],\"total\":{}}}", rows.join(","), rows.len())),
        1 => raw_json(),
    ];
    prop_oneof![
        6 => (
            prop::collection::vec(block, 0..4),
            prop::option::of(structured),
            prop::option::of(raw_json()),
            prop::option::of(select(&["true", "false"][..])),
        )
            .prop_map(|(blocks, structured, meta, is_error)| {
                let mut out = format!("{{\"content\":[{}]", blocks.join(","));
                if let Some(s) = structured {
                    out.push_str(&format!(",\"structuredContent\":{s}"));
                }
                if let Some(m) = meta {
                    out.push_str(&format!(",\"_meta\":{m}"));
                }
                if let Some(e) = is_error {
                    out.push_str(&format!(",\"isError\":{e}"));
                }
                out.push('}');
                out
            }),
        // The structured records and their text copy (the usual SDK shape).
        2 => prop::collection::vec(raw_json(), 0..40).prop_map(|rows| {
            let array = format!("[{}]", rows.join(","));
            format!(
                "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"structuredContent\":{{\"items\":{array}}}}}",
                literal(&format!("{{\"items\":{array}}}"))
            )
        }),
        1 => raw_json(),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/// How the inner service answers.
#[derive(Debug, Clone)]
enum Answer {
    /// `application/json`: one message, or a batch.
    Json { body: String },
    /// `text/event-stream`: these events.
    Sse { body: Vec<u8> },
}

#[derive(Debug, Clone)]
struct Case {
    /// The request body and its cuts.
    request: String,
    /// The id of its `tools/call`.
    id: &'static str,
    /// The request declares `clientInfo.proxy: true`.
    proxy_flag: bool,
    request_cuts: Vec<Index>,
    /// The inner service reads the request before answering.
    reads_request: bool,
    /// The request carries the proxy header.
    proxy_header: bool,
    answer: Answer,
    cuts: Vec<Index>,
    pending: Vec<Index>,
    /// The inner body's size is known (`Content-Length`).
    exact: bool,
    content_length: bool,
    transfer_encoding: bool,
    trailers: bool,
    error: bool,
    threshold: usize,
    hook: bool,
    max_buffered: Option<usize>,
}

const IDS: &[&str] = &[
    "1",
    "0",
    "-5",
    "\"x\"",
    "\"é\\\"\\\\\"",
    "1.5",
    "12345678901234567890",
    "\"\\u0061b\"",
];

/// A `tools/call` request (sometimes a batch, task-augmented, or with the
/// proxy flag), and the id it is watched by.
fn request() -> BoxedStrategy<(String, &'static str, bool)> {
    (
        select(IDS),
        select(&["fuzz_tool", "recall_memories", "t\\u00e9"][..]),
        prop::option::of(raw_json()),
        0u8..10,
        any::<u64>(),
    )
        .prop_map(|(id, tool, args, shape, seed)| {
            let args = args.map_or(String::new(), |a| format!(",\"arguments\":{a}"));
            let call = match shape {
                7 => format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\"{args},\"task\":{{\"ttl\":1000}}}}}}"
                ),
                8 => format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\"{args},\"_meta\":{{\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"p\",\"proxy\":true}}}}}}}}"
                ),
                _ => format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\"{args}}}}}"
                ),
            };
            let body = if shape == 9 {
                format!(
                    "[{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}},{call},{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/list\"}}]"
                )
            } else {
                call
            };
            (respace(&body, sometimes(seed, 3), true), id, shape == 8)
        })
        .boxed()
}

/// A response message answering `id` (or another id) with `result`.
fn message(id: &'static str) -> BoxedStrategy<String> {
    (
        prop_oneof![8 => Just(id), 1 => select(IDS)],
        prop_oneof![
            8 => tool_result().prop_map(|r| format!("\"result\":{r}")),
            1 => Just("\"error\":{\"code\":-32000,\"message\":\"no\"}".to_owned()),
            1 => tool_result().prop_map(|r| format!("\"result\":{r},\"result\":{{\"content\":[]}}")),
            1 => Just("\"result\":{\"task\":{\"taskId\":\"t-1\",\"status\":\"working\"}}".to_owned()),
        ],
        any::<bool>(),
    )
        .prop_map(|(id, body, id_first)| {
            if id_first {
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},{body}}}")
            } else {
                format!("{{{body},\"jsonrpc\":\"2.0\",\"id\":{id}}}")
            }
        })
        .boxed()
}

fn notification() -> BoxedStrategy<String> {
    select(&[
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\\r\\n\\r\\n\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":{}}",
    ][..])
    .prop_map(String::from)
    .boxed()
}

/// One event of a stream, carrying `data` (a JSON-RPC message; its line
/// breaks become separate `data:` lines).
fn event(data: String) -> BoxedStrategy<Vec<u8>> {
    let data = Arc::new(data);
    (
        select(&["\n", "\r\n", "\r"][..]),
        prop::option::of(select(&["event: message", "id: 5", ": c", "retry: 9"][..])),
        prop::option::of(select(&["id: 6", ": after", "event: x"][..])),
        prop::option::of(any::<u64>()),
        any::<u8>(),
    )
        .prop_map(move |(term, before, after, mixed, space)| {
            // One line end for the event, or one drawn per line.
            let ends = ["\n", "\r\n", "\r"];
            let mut bits = mixed.unwrap_or(0);
            let mut end = || match mixed {
                Some(_) => {
                    bits = bits.rotate_right(2) ^ 0x9e37_79b9_7f4a_7c15;
                    ends[(bits % 3) as usize]
                }
                None => term,
            };
            let mut out = String::new();
            if let Some(b) = before {
                out.push_str(b);
                out.push_str(end());
            }
            let prefix = if space % 3 == 0 { "data:" } else { "data: " };
            for line in data.split(['\n', '\r']) {
                out.push_str(prefix);
                out.push_str(line);
                out.push_str(end());
            }
            if let Some(a) = after {
                out.push_str(a);
                out.push_str(end());
            }
            out.push_str(end());
            out.into_bytes()
        })
        .boxed()
}

/// An event stream answering `id`.
fn stream(id: &'static str) -> BoxedStrategy<Vec<u8>> {
    let item = prop_oneof![
        4 => (message(id), any::<u64>())
            .prop_flat_map(|(m, seed)| event(respace(&m, sometimes(seed, 2), true))),
        3 => notification().prop_flat_map(event),
        1 => Just(b"id: 0\ndata:\n\n".to_vec()),
        1 => Just(b": ping\n\n".to_vec()),
        1 => Just(b"retry: 100\r\n\r\n".to_vec()),
        1 => prop::collection::vec(select(&b"\r\n:data {}\""[..]), 0..20),
    ];
    (
        prop::collection::vec(item, 1..6),
        prop::option::of("[ -~]{0,10}"),
    )
        .prop_map(|(items, tail)| {
            let mut out = items.concat();
            out.extend_from_slice(tail.unwrap_or_default().as_bytes());
            out
        })
        .boxed()
}

fn case() -> BoxedStrategy<Case> {
    request()
        .prop_flat_map(|(request, id, proxy_flag)| {
            let answer = prop_oneof![
                3 => (message(id), any::<u64>()).prop_map(|(m, seed)| Answer::Json {
                    body: respace(&m, sometimes(seed, 2), true)
                }),
                1 => (prop::collection::vec(prop_oneof![message(id), notification()], 0..4), any::<u64>())
                    .prop_map(|(ms, seed)| Answer::Json {
                        body: respace(&format!("[{}]", ms.join(",")), sometimes(seed, 2), true)
                    }),
                4 => stream(id).prop_map(|body| Answer::Sse { body }),
            ];
            (
                (Just(request), Just(id), Just(proxy_flag)),
                prop::collection::vec(any::<Index>(), 0..6),
                prop::bool::weighted(0.95),
                prop::bool::weighted(0.05),
                answer,
                prop::collection::vec(any::<Index>(), 0..10),
                prop::collection::vec(any::<Index>(), 0..3),
                (any::<bool>(), any::<bool>(), prop::bool::weighted(0.1)),
                (prop::bool::weighted(0.1), prop::bool::weighted(0.05)),
                (prop_oneof![3 => 1usize..40, 1 => 40usize..400], any::<bool>(), prop::option::weighted(0.1, 0usize..20_000)),
            )
        })
        .prop_map(
            |(
                (request, id, proxy_flag),
                request_cuts,
                reads_request,
                proxy_header,
                answer,
                cuts,
                pending,
                (exact, content_length, transfer_encoding),
                (trailers, error),
                (threshold, hook, max_buffered),
            )| Case {
                request,
                id,
                proxy_flag,
                request_cuts,
                reads_request,
                proxy_header,
                answer,
                cuts,
                pending,
                exact,
                content_length,
                transfer_encoding,
                trailers,
                error,
                threshold,
                hook,
                max_buffered,
            },
        )
        .boxed()
}

// ---------------------------------------------------------------------------
// A reference reading of JSON (literals as written, strings as UTF-16, any
// depth, the last duplicate key wins) and of event streams
// ---------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Canon {
    Null,
    Bool(bool),
    Num(String),
    Str(Vec<u16>),
    Arr(Vec<Canon>),
    Obj(BTreeMap<Vec<u16>, Canon>),
}

/// Valid JSON text read as a [`Canon`]; `None` if not valid.
/// Equal except for the layout of JSON texts in text blocks: a large JSON
/// text laid out irregularly is rebuilt compact (equal as JSON; see
/// `tower_lro::offload::rebuild`). Texts compare without the whitespace between
/// their tokens (no parse: fuzzed texts nest deeper than serde_json reads).
fn same_but_text_layout(rebuilt: &str, original: &str) -> bool {
    match (canon(rebuilt), canon(original)) {
        (Some(a), Some(b)) => texts_without_layout(a) == texts_without_layout(b),
        _ => false,
    }
}

/// A result with the text of each content block without its layout.
fn texts_without_layout(result: Canon) -> Canon {
    let Canon::Obj(mut top) = result else {
        return result;
    };
    let utf16 = |s: &str| -> Vec<u16> { s.encode_utf16().collect() };
    if let Some(Canon::Arr(blocks)) = top.get_mut(&utf16("content")) {
        for block in blocks {
            if let Canon::Obj(members) = block
                && let Some(Canon::Str(text)) = members.get_mut(&utf16("text"))
            {
                *text = utf16(&without_layout(&String::from_utf16_lossy(text)));
            }
        }
    }
    Canon::Obj(top)
}

/// `text` without JSON whitespace outside string literals.
fn without_layout(text: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::with_capacity(text.len()), false, false);
    for c in text.chars() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        } else {
            in_string = c == '"';
        }
        out.push(c);
    }
    out
}

fn canon(text: &str) -> Option<Canon> {
    serde_json::from_str::<&RawValue>(text).ok()?;
    let mut p = Reader { s: text, i: 0 };
    Some(p.value())
}

struct Reader<'a> {
    s: &'a str,
    i: usize,
}

impl Reader<'_> {
    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Canon {
        self.ws();
        let b = self.s.as_bytes();
        match b[self.i] {
            b'n' => {
                self.i += 4;
                Canon::Null
            }
            b't' => {
                self.i += 4;
                Canon::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Canon::Bool(false)
            }
            b'"' => Canon::Str(self.string()),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if b[self.i] == b']' {
                    self.i += 1;
                    return Canon::Arr(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    self.i += 1;
                    if b[self.i - 1] == b']' {
                        return Canon::Arr(items);
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut members = BTreeMap::new();
                self.ws();
                if b[self.i] == b'}' {
                    self.i += 1;
                    return Canon::Obj(members);
                }
                loop {
                    self.ws();
                    let k = self.string();
                    self.ws();
                    self.i += 1;
                    let v = self.value();
                    members.insert(k, v);
                    self.ws();
                    self.i += 1;
                    if b[self.i - 1] == b'}' {
                        return Canon::Obj(members);
                    }
                }
            }
            _ => {
                let start = self.i;
                while self.i < b.len()
                    && matches!(b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                Canon::Num(self.s[start..self.i].to_owned())
            }
        }
    }

    fn string(&mut self) -> Vec<u16> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i..].chars().next().unwrap_or('"');
            self.i += c.len_utf8();
            match c {
                '"' => return out,
                '\\' => {
                    let e = self.s.as_bytes()[self.i];
                    self.i += 1;
                    match e {
                        b'n' => out.push(10),
                        b'r' => out.push(13),
                        b't' => out.push(9),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = &self.s[self.i..self.i + 4];
                            out.push(u16::from_str_radix(hex, 16).unwrap_or(0));
                            self.i += 4;
                        }
                        other => out.push(u16::from(other)),
                    }
                }
                c => {
                    let mut buf = [0u16; 2];
                    out.extend_from_slice(c.encode_utf16(&mut buf));
                }
            }
        }
    }
}

/// The lines of an event, each with its terminator.
fn lines(event: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
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

/// A finished stream cut into events, and what follows the last one.
fn split_events(stream: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut events = Vec::new();
    let (mut start, mut line_start) = (0, 0);
    for (content, term) in lines(stream) {
        let at = content.as_ptr() as usize - stream.as_ptr() as usize;
        if term.is_empty() {
            break;
        }
        let end = at + content.len() + term.len();
        if at == line_start && content.is_empty() {
            events.push(&stream[start..end]);
            start = end;
        }
        line_start = end;
    }
    (events, &stream[start..])
}

fn is_data_line(line: &[u8]) -> bool {
    if line.is_empty() || line[0] == b':' {
        return false;
    }
    let name = line
        .iter()
        .position(|&b| b == b':')
        .map_or(line, |p| &line[..p]);
    name == b"data"
}

fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let values: Vec<&[u8]> = lines(event)
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

/// The lines of `event` with its data lines replaced by one `data` line
/// (marked `None`) where the first was. A blank line ended by LF right
/// after a line ended by a lone CR (the data lines between them dropped)
/// ends with CRLF instead, as the layer writes it: the CR and the LF would
/// otherwise read as one CRLF and the event would lose its end (see
/// `regression_a_rewritten_event_keeps_its_blank_line`). In an event with
/// one data line no such pair is left, so this reads a rewritten event's
/// lines as they are.
fn lines_around_data(event: &[u8]) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut done = false;
    for (l, t) in lines(event) {
        if is_data_line(l) {
            if !done {
                let t = if t.is_empty() { &b"\n"[..] } else { t };
                out.push((None, t.to_vec()));
                done = true;
            }
        } else {
            let after_cr = out.last().is_some_and(|(_, end)| end == b"\r");
            let t = if l.is_empty() && t == b"\n" && after_cr {
                &b"\r\n"[..]
            } else {
                t
            };
            out.push((Some(l.to_vec()), t.to_vec()));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Checking a rewrite
// ---------------------------------------------------------------------------

/// What the cases did, printed at the end (`--nocapture`): a suite whose
/// cases never rewrite anything would pass without testing much.
struct Tally {
    cases: AtomicUsize,
    identical: AtomicUsize,
    json_rewritten: AtomicUsize,
    events_rewritten: AtomicUsize,
    calls_failed_alone: AtomicUsize,
}

static TALLY: Tally = Tally {
    cases: AtomicUsize::new(0),
    identical: AtomicUsize::new(0),
    json_rewritten: AtomicUsize::new(0),
    events_rewritten: AtomicUsize::new(0),
    calls_failed_alone: AtomicUsize::new(0),
};

fn count(n: &AtomicUsize) {
    n.fetch_add(1, Ordering::Relaxed);
}

/// The messages of a JSON body (one, or a batch), as the layer reads them.
#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

/// Per message of a JSON body: its id and the range of its result.
fn results_of(body: &str) -> Vec<Option<(Option<Value>, Range<usize>)>> {
    let read = |text: &str| {
        serde_json::from_str::<Msg<'_>>(text).ok().and_then(|m| {
            let r = m.result?;
            let start = r.get().as_ptr() as usize - body.as_ptr() as usize;
            Some((m.id, start..start + r.get().len()))
        })
    };
    if body.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<&RawValue>>(body)
            .unwrap_or_default()
            .into_iter()
            .map(|m| read(m.get()))
            .collect()
    } else {
        vec![read(body)]
    }
}

/// `new` is a rewrite of the result `old` of a call watched by `id`: a
/// `CallToolResult` whose first block is a descriptor of a file that
/// rebuilds `old`.
fn check_rewritten_result(old: &str, new: &str) -> Result<(), TestCaseError> {
    // Read without `Value`: a kept field may nest past its recursion limit.
    #[derive(Deserialize)]
    struct Rewritten<'a> {
        #[serde(borrow)]
        content: Vec<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct TextBlock {
        text: String,
    }
    let r: Rewritten<'_> = serde_json::from_str(new).map_err(|e| {
        TestCaseError::fail(format!("rewritten result unreadable ({e}): {new:.300}"))
    })?;
    // The descriptor stands where the first offloaded block stood.
    let d = r
        .content
        .iter()
        .filter_map(|b| serde_json::from_str::<TextBlock>(b.get()).ok())
        .find_map(|TextBlock { text }| serde_json::from_str::<OffloadResponse>(&text).ok());
    let Some(d) = d else {
        return Err(TestCaseError::fail(format!("no descriptor: {new:.300}")));
    };
    prop_assert!(d.offloaded);
    prop_assert_eq!(d.jq_recipes.len(), 10);
    // The file alone, or with the rewritten result when it leaves large
    // kept parts to it.
    let rebuilt = match rebuild_file(&d.file_path) {
        Err(RebuildError::NeedsRewrittenResult) => std::fs::read_to_string(&d.file_path)
            .map_err(RebuildError::from)
            .and_then(|file| rebuild_with(&file, new)),
        other => other,
    };
    let _ = std::fs::remove_file(&d.file_path);
    let rebuilt = rebuilt.map_err(|e| TestCaseError::fail(format!("rebuild failed: {e}")))?;
    prop_assert!(
        canon(old).is_some()
            && (canon(&rebuilt) == canon(old) || same_but_text_layout(&rebuilt, old)),
        "the file does not rebuild the result:\n{:.600}\n{:.600}",
        old,
        rebuilt
    );
    Ok(())
}

/// A JSON body: the same bytes, or the same with watched results rewritten.
fn check_json(sent: &[u8], got: &[u8], ids: &[Value]) -> Result<(), TestCaseError> {
    if sent == got {
        return Ok(());
    }
    let (Ok(sent), Ok(got)) = (std::str::from_utf8(sent), std::str::from_utf8(got)) else {
        return Err(TestCaseError::fail("a body that is not UTF-8 was changed"));
    };
    let (old, new) = (results_of(sent), results_of(got));
    prop_assert_eq!(old.len(), new.len(), "messages");
    let mut expected = String::with_capacity(got.len());
    let mut at = 0;
    for (o, n) in old.iter().zip(&new) {
        let (Some((id, o)), Some((_, n))) = (o, n) else {
            continue;
        };
        let (old_result, new_result) = (&sent[o.clone()], &got[n.clone()]);
        if old_result != new_result {
            count(&TALLY.json_rewritten);
            let watched = id.as_ref().is_some_and(|id| ids.contains(id));
            prop_assert!(watched, "the result of an unwatched id {:?} changed", id);
            check_rewritten_result(old_result, new_result)?;
        }
        expected.push_str(&sent[at..o.start]);
        expected.push_str(new_result);
        at = o.end;
    }
    expected.push_str(&sent[at..]);
    prop_assert!(
        expected == got,
        "bytes besides the results changed:\n{:.600}\n{:.600}",
        sent,
        got
    );
    Ok(())
}

/// An event stream: the same events, each byte-identical or a rewrite of
/// a watched result event.
fn check_sse(sent: &[u8], got: &[u8], ids: &[Value]) -> Result<(), TestCaseError> {
    if sent == got {
        return Ok(());
    }
    let (old, old_rest) = split_events(sent);
    let (new, new_rest) = split_events(got);
    prop_assert_eq!(old_rest, new_rest, "the unfinished end");
    prop_assert_eq!(old.len(), new.len(), "events");
    for (o, n) in old.iter().zip(&new) {
        if o == n {
            continue;
        }
        prop_assert_eq!(
            lines_around_data(o),
            lines_around_data(n),
            "lines around the data"
        );
        prop_assert_eq!(
            lines(n).iter().filter(|(l, _)| is_data_line(l)).count(),
            1,
            "one data line"
        );
        let (Some(od), Some(nd)) = (event_data(o), event_data(n)) else {
            return Err(TestCaseError::fail("an event without data changed"));
        };
        let (Ok(od), Ok(nd)) = (std::str::from_utf8(&od), std::str::from_utf8(&nd)) else {
            return Err(TestCaseError::fail("data that is not UTF-8 changed"));
        };
        let (Some(Some((id, or))), Some(Some((_, nr)))) = (
            results_of(od).into_iter().next(),
            results_of(nd).into_iter().next(),
        ) else {
            return Err(TestCaseError::fail(format!(
                "a changed event is not a result: {od:.300}"
            )));
        };
        prop_assert!(
            id.as_ref().is_some_and(|id| ids.contains(id)),
            "unwatched id {:?}",
            id
        );
        count(&TALLY.events_rewritten);
        check_rewritten_result(&od[or.clone()], &nd[nr.clone()])?;
        // The message around the result: the same, as JSON.
        let strip =
            |text: &str, r: &Range<usize>| format!("{}null{}", &text[..r.start], &text[r.end..]);
        prop_assert_eq!(
            canon(&strip(od, &or)),
            canon(&strip(nd, &nr)),
            "the message around"
        );
    }
    Ok(())
}

/// Runs one case through the layer and checks the response.
async fn run(case: Case, dir: &std::path::Path) -> Result<(), TestCaseError> {
    let mut config = OffloadConfig::default()
        .output_dir(dir)
        .threshold_tokens(case.threshold)
        .auto_cleanup(false);
    if let Some(cap) = case.max_buffered {
        config = config.max_buffered_bytes(cap);
    }
    let mut builder = OffloadLayer::builder().config(config);
    if case.hook {
        builder = builder.event_hook(EventHook::callback(|_| {}));
    }
    let layer = builder.build();
    let (sent, content_type) = match &case.answer {
        Answer::Json { body } => (body.as_bytes().to_vec(), "application/json"),
        Answer::Sse { body } => (body.clone(), "text/event-stream"),
    };
    let mut steps = script(&sent, &case.cuts, &case.pending);
    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", HeaderValue::from_static("abc"));
    if case.trailers {
        steps.push_back(Step::Trailers(trailers.clone()));
    }
    if case.error {
        steps.push_back(Step::Error);
    }
    let sent_len = sent.len();
    let inner = {
        let case = case.clone();
        service_fn(move |req: Request<RequestBody<Scripted>>| {
            let case = case.clone();
            let steps = steps.clone();
            async move {
                if case.reads_request {
                    let body = req.into_body();
                    tokio::pin!(body);
                    let _ = read_all(body).await;
                }
                let mut response = Response::builder().header(CONTENT_TYPE, content_type);
                if case.content_length {
                    response = response.header(CONTENT_LENGTH, sent_len);
                }
                if case.transfer_encoding {
                    response = response.header(TRANSFER_ENCODING, "chunked");
                }
                let body = Scripted {
                    steps,
                    exact: case.exact,
                };
                Ok::<_, std::convert::Infallible>(response.body(body).unwrap())
            }
        })
    };
    let mut request = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream");
    if case.proxy_header {
        request = request.header("lro-proxy", "1");
    }
    let request = request
        .body(Scripted {
            steps: script(case.request.as_bytes(), &case.request_cuts, &[]),
            exact: false,
        })
        .unwrap();
    let response = layer.layer(inner).oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    tokio::pin!(body);
    let got = read_all(body).await;
    count(&TALLY.cases);
    if got.data == sent {
        count(&TALLY.identical);
        if std::env::var("ZZ_DEBUG").is_ok() {
            let kind = matches!(case.answer, Answer::Json { .. });
            eprintln!(
                "ID json={kind} len={} thr={} proxy={} {} reads={} err={} cap={:?} :: {:.150}",
                sent.len(),
                case.threshold,
                case.proxy_header,
                case.proxy_flag,
                case.reads_request,
                case.error,
                case.max_buffered,
                String::from_utf8_lossy(&sent)
            );
        }
    }

    // Framing.
    if let Some(len) = parts.headers.get(CONTENT_LENGTH) {
        prop_assert!(
            !parts.headers.contains_key(TRANSFER_ENCODING),
            "Content-Length beside Transfer-Encoding"
        );
        if !got.error {
            let expected = got.data.len().to_string();
            prop_assert_eq!(len.to_str().ok(), Some(expected.as_str()), "Content-Length");
        }
    }
    // A JSON answer to calls the layer watched (a valid `tools/call`,
    // not a proxy's) that breaks off was held back whole: each call gets a
    // JSON-RPC error instead, in a whole answer. An answer it did not
    // watch passes with its error.
    let proxy = case.proxy_header || case.proxy_flag;
    let held_back = matches!(case.answer, Answer::Json { .. }) && !proxy && case.reads_request;
    if case.error && held_back && !got.error {
        let answer: Value = serde_json::from_slice(&got.data).expect("a JSON answer");
        let errors = match &answer {
            Value::Array(all) => all.clone(),
            one => vec![one.clone()],
        };
        prop_assert!(!errors.is_empty());
        for e in &errors {
            prop_assert_eq!(&e["error"]["code"], &json!(-32603), "{}", e);
            let message = e["error"]["message"].as_str().unwrap_or_default();
            prop_assert!(message.contains("broke off"), "{}", e);
        }
        let id: Value = serde_json::from_str(case.id).expect("an id");
        prop_assert_eq!(&errors[0]["id"], &id, "{}", answer);
        count(&TALLY.calls_failed_alone);
        return Ok(());
    }
    prop_assert_eq!(got.error, case.error, "the upstream error passed on");
    if case.trailers && !case.error {
        prop_assert_eq!(got.trailers.as_ref(), Some(&trailers), "trailers passed on");
    }
    // Proxies get the inner bytes.
    if proxy || !case.reads_request {
        prop_assert!(
            got.data == sent,
            "a proxy's or unclassified response changed"
        );
        return Ok(());
    }
    let ids: Vec<Value> = serde_json::from_str(case.id).into_iter().collect();
    match &case.answer {
        Answer::Json { .. } => {
            if case.error {
                prop_assert!(got.data == sent, "a body cut short changed");
            }
            check_json(&sent, &got.data, &ids)
        }
        Answer::Sse { .. } => check_sse(&sent, &got.data, &ids),
    }
}

#[test]
fn fuzz_layer() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let limit = slow_limit();
    proptest!(config(), |(c in case())| {
        let started = Instant::now();
        let outcome = rt.block_on(async {
            tokio::time::timeout(limit * 3, run(c, dir.path())).await
        });
        // A deadline against a hang only; speed is benches/layer.rs's.
        match outcome {
            Ok(result) => result?,
            Err(_) => {
                let took = started.elapsed();
                return Err(TestCaseError::fail(format!("hung: no response after {took:?}")));
            }
        }
    });
    eprintln!(
        "fuzz_layer: {} runs, {} byte-identical, {} JSON results and {} events rewritten, {} broken answers failing their calls alone",
        TALLY.cases.load(Ordering::Relaxed),
        TALLY.identical.load(Ordering::Relaxed),
        TALLY.json_rewritten.load(Ordering::Relaxed),
        TALLY.events_rewritten.load(Ordering::Relaxed),
        TALLY.calls_failed_alone.load(Ordering::Relaxed),
    );
}

// ---------------------------------------------------------------------------
// Regressions: inputs the fuzzing found, kept literally
// ---------------------------------------------------------------------------

/// The body a layer (threshold 1 token) gives for an inner answer of
/// `content_type` with `body`, to a `tools/call` with id 1.
async fn through_layer(content_type: &'static str, body: &[u8]) -> Vec<u8> {
    through_layer_capped(content_type, body, None).await
}

/// [`through_layer`] with `max_buffered_bytes` set (a larger response is
/// spilled to disk and offloaded from there).
async fn through_layer_capped(
    content_type: &'static str,
    body: &[u8],
    max_buffered: Option<usize>,
) -> Vec<u8> {
    through_layer_read(content_type, body, max_buffered, None)
        .await
        .data
}

/// [`through_layer_capped`], the body followed by `trailers` when some:
/// all it gave back (reading it checks that no data comes after trailers).
async fn through_layer_read(
    content_type: &'static str,
    body: &[u8],
    max_buffered: Option<usize>,
    trailers: Option<HeaderMap>,
) -> Read {
    let dir = tempfile::tempdir().unwrap();
    let mut config = OffloadConfig::default()
        .output_dir(dir.path())
        .threshold_tokens(1)
        .auto_cleanup(false);
    if let Some(cap) = max_buffered {
        config = config.max_buffered_bytes(cap);
    }
    let layer = OffloadLayer::new(config);
    let body = Bytes::copy_from_slice(body);
    let inner = service_fn(move |req: Request<RequestBody<Scripted>>| {
        let body = body.clone();
        let trailers = trailers.clone();
        async move {
            let request = req.into_body();
            tokio::pin!(request);
            let _ = read_all(request).await;
            let mut steps = VecDeque::from([Step::Data(body)]);
            if let Some(t) = trailers {
                steps.push_back(Step::Trailers(t));
            }
            let response = Response::builder()
                .header(CONTENT_TYPE, content_type)
                .body(Scripted {
                    steps,
                    exact: false,
                })
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fuzz_tool"}}"#;
    let request = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(CONTENT_TYPE, "application/json")
        .body(Scripted {
            steps: VecDeque::from([Step::Data(Bytes::from_static(call.as_bytes()))]),
            exact: false,
        })
        .unwrap();
    let response = layer.layer(inner).oneshot(request).await.unwrap();
    let body = response.into_body();
    tokio::pin!(body);
    read_all(body).await
}

/// Found by `fuzz_layer`: a result event whose first data line ends with a
/// lone CR and whose blank line is a LF. The rewriter drops the second data
/// line with its line end, the CR and the blank line's LF become one CRLF,
/// and the rewritten event has no blank line: the client merges it with
/// the next event, or (here, the last) never dispatches it — it never gets
/// the tool's result.
#[tokio::test]
async fn regression_a_rewritten_event_keeps_its_blank_line() {
    let rows: Vec<String> = (0..200)
        .map(|i| format!("{{\"id\":{i},\"msg\":\"started worker\"}}"))
        .collect();
    let result = format!(
        "{{\"content\":[],\"structuredContent\":{{\"rows\":[{}]}}}}",
        rows.join(",")
    );
    let sent = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\rdata: {result}}}\n\n"
    );
    assert_eq!(split_events(sent.as_bytes()).0.len(), 1, "one event sent");
    let got = through_layer("text/event-stream", sent.as_bytes()).await;
    assert_ne!(got, sent.as_bytes(), "rewritten");
    let (events, rest) = split_events(&got);
    assert!(
        events.len() == 1 && rest.is_empty(),
        "{} events and {} bytes unfinished: {:.200}",
        events.len(),
        rest.len(),
        String::from_utf8_lossy(&got)
    );
}

/// Found by `fuzz_layer`: a JSON response over `max_buffered_bytes` (spilled,
/// then offloaded from the spill) came back with the message around its
/// result written compact: the whitespace between its members, and its keys'
/// escapes, were lost. Only the result may change.
#[tokio::test]
async fn regression_a_spilled_message_keeps_its_bytes_around_the_result() {
    let rows: Vec<String> = (0..4000)
        .map(|i| format!("{{\"id\":{i},\"msg\":\"started worker {i}\"}}"))
        .collect();
    let result = format!(
        "{{\"content\":[],\"structuredContent\":{{\"rows\":[{}]}}}}",
        rows.join(",")
    );
    let before = "{\r\n\"jsonrpc\":\r\"2.0\",\t\"id\":\r\n1,\n\"result\":\r";
    let after = " ,\n \"\\u005fx\" : [ 1 ]\r\n}\n";
    let sent = format!("{before}{result}{after}");
    let got = through_layer_capped("application/json", sent.as_bytes(), Some(4096)).await;
    let got = String::from_utf8(got).unwrap();
    assert!(got.contains("offloaded"), "not offloaded: {got:.300}");
    assert!(got.starts_with(before), "{got:.300}");
    assert!(got.ends_with(after), "{got:.300}");
}

/// Rows enough for a record source of a spilled result (over 64 KiB).
fn many_rows() -> String {
    let rows: Vec<String> = (0..4000)
        .map(|i| format!("{{\"id\":{i},\"msg\":\"started worker {i}\"}}"))
        .collect();
    format!(
        "{{\"content\":[],\"structuredContent\":{{\"rows\":[{}]}}}}",
        rows.join(",")
    )
}

/// Found by `fuzz_layer`: an event over `max_buffered_bytes`, its message
/// in several data lines (one of them empty), was rewritten into one data
/// line holding the message's line breaks: the empty line ended the event
/// early, and the client saw two.
#[tokio::test]
async fn regression_a_spilled_event_in_many_data_lines_stays_one_event() {
    let sent = format!(
        "event: message\ndata:{{\"jsonrpc\":\"2.0\",\ndata:\ndata: \"id\":1,\ndata:\"result\":{}}}\n\n",
        many_rows()
    );
    let got = through_layer_capped("text/event-stream", sent.as_bytes(), Some(4096)).await;
    let (events, rest) = split_events(&got);
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("offloaded"), "not offloaded: {text:.300}");
    assert!(events.len() == 1 && rest.is_empty(), "{text:.300}");
}

/// Found by `fuzz_layer`: a spilled message answering twice (`result`
/// given twice) was offloaded, where a held one is not one JSON-RPC
/// message and passes as it came.
#[tokio::test]
async fn regression_a_spilled_message_with_two_results_passes_as_it_came() {
    let sent = format!(
        "{{\"result\":{},\"result\":{{\"content\":[]}},\"jsonrpc\":\"2.0\",\"id\":1}}",
        many_rows()
    );
    let got = through_layer_capped("application/json", sent.as_bytes(), Some(4096)).await;
    assert!(
        got == sent.as_bytes(),
        "changed: {:.300}",
        String::from_utf8_lossy(&got)
    );
}

/// Found by `fuzz_layer`: trailers ending a stream inside an event being
/// spilled went out before the event's bytes, played back after them.
#[tokio::test]
async fn regression_trailers_after_a_spilled_unfinished_event_come_last() {
    let sent = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}}\r\nz",
        many_rows()
    );
    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", "1".parse().unwrap());
    let got = through_layer_read(
        "text/event-stream",
        sent.as_bytes(),
        Some(4096),
        Some(trailers),
    )
    .await;
    assert_eq!(
        got.data,
        sent.as_bytes(),
        "an unfinished event plays back as it came"
    );
    assert!(got.trailers.is_some(), "the trailers, last");
}
