//! The trusted reader against serde: the same result, field for field, on
//! any valid JSON; the skips against byte walks and serde's spans.

use std::fmt::Write as _;
use std::ops::Range;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::super::{MAX_CONTENT_BLOCKS, MemberRanges, RawObject, RawResult};
use super::{container_end, string_end};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        "\\PC{0,20}".prop_map(Value::String),
        escapy().prop_map(Value::String),
    ]
}

/// Text dense with what JSON escapes.
fn escapy() -> impl Strategy<Value = String> {
    "[\"\\\\\\n\\t\\u{0}-\\u{1f}/ÿ中🎉{}\\[\\] ]{0,40}"
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_ é\"\\\\]{0,8}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A key: one a result or a block reads, or any (duplicates are likely).
fn key(known: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(known).prop_map(str::to_owned),
        1 => "[a-z\"\\\\é\\u{1}🎉]{0,5}",
    ]
}

/// A content block: its fields (in order, duplicates kept), or another value.
#[derive(Debug, Clone)]
enum Block {
    Fields(Vec<(String, Value)>),
    Other(Value),
}

/// A top-level field's value: content blocks, or any value.
#[derive(Debug, Clone)]
enum Top {
    Content(Vec<Block>),
    Value(Value),
}

fn block_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(&["text", "resource", "image"][..]).prop_map(|t| json!(t)),
        escapy().prop_map(Value::String),
        escapy().prop_map(|t| json!({"uri": "file:///a", "mimeType": "text/plain", "text": t})),
        Just(json!({"uri": "file:///b", "blob": "AAAA"})),
        Just(json!({"uri": "file:///c", "text": null})),
        value(),
    ]
}

fn block() -> impl Strategy<Value = Block> {
    let known = &["type", "text", "resource", "annotations", "_meta"][..];
    prop_oneof![
        8 => prop::collection::vec((key(known), block_value()), 0..6).prop_map(Block::Fields),
        1 => value().prop_map(Block::Other),
    ]
}

fn top() -> impl Strategy<Value = Vec<(String, Top)>> {
    let known = &[
        "content",
        "content",
        "structuredContent",
        "isError",
        "_meta",
    ][..];
    let field = prop_oneof![
        4 => prop::collection::vec(block(), 0..4).prop_map(Top::Content),
        2 => value().prop_map(Top::Value),
    ];
    prop::collection::vec((key(known), field), 0..6)
}

/// Writes JSON with the given whitespace between tokens, in turn, and keys
/// escaped (`\uXXXX`) or not, in turn.
struct Writer {
    out: String,
    gaps: Vec<&'static str>,
    escape: Vec<bool>,
    n: usize,
}

impl Writer {
    fn gap(&mut self) {
        self.n += 1;
        self.out.push_str(self.gaps[self.n % self.gaps.len()]);
    }

    fn key(&mut self, k: &str) {
        if self.escape[self.n % self.escape.len()] {
            self.out.push('"');
            for u in k.encode_utf16() {
                write!(self.out, "\\u{u:04X}").unwrap();
            }
            self.out.push('"');
        } else {
            self.out.push_str(&serde_json::to_string(k).unwrap());
        }
    }

    fn object<T>(&mut self, fields: &[(String, T)], mut write: impl FnMut(&mut Self, &T)) {
        self.out.push('{');
        for (n, (k, v)) in fields.iter().enumerate() {
            if n > 0 {
                self.gap();
                self.out.push(',');
            }
            self.gap();
            self.key(k);
            self.gap();
            self.out.push(':');
            self.gap();
            write(self, v);
        }
        self.gap();
        self.out.push('}');
    }

    fn array<T>(&mut self, items: &[T], mut write: impl FnMut(&mut Self, &T)) {
        self.out.push('[');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                self.gap();
                self.out.push(',');
            }
            self.gap();
            write(self, item);
        }
        self.gap();
        self.out.push(']');
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Array(items) => self.array(items, Self::value),
            Value::Object(map) => {
                let fields: Vec<(String, Value)> =
                    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                self.object(&fields, Self::value);
            }
            v => self.out.push_str(&v.to_string()),
        }
    }

    fn block(&mut self, b: &Block) {
        match b {
            Block::Fields(fields) => self.object(fields, Self::value),
            Block::Other(v) => self.value(v),
        }
    }

    fn top(&mut self, t: &Top) {
        match t {
            Top::Content(blocks) => self.array(blocks, Self::block),
            Top::Value(v) => self.value(v),
        }
    }
}

fn write(top: &[(String, Top)], gaps: Vec<&'static str>, escape: Vec<bool>) -> String {
    let mut w = Writer {
        out: String::new(),
        gaps,
        escape,
        n: 0,
    };
    w.gap();
    w.object(top, Writer::top);
    w.gap();
    w.out
}

/// Whether `TopFast` reads it: a `content`, every one an array of objects.
fn usual(top: &[(String, Top)]) -> bool {
    let contents: Vec<&Top> = top
        .iter()
        .filter(|(k, _)| k == "content")
        .map(|(_, t)| t)
        .collect();
    !contents.is_empty()
        && contents.iter().all(|t| match t {
            Top::Content(blocks) => blocks.iter().all(|b| match b {
                Block::Fields(_) => true,
                Block::Other(v) => v.is_object(),
            }),
            Top::Value(Value::Array(items)) => items.iter().all(Value::is_object),
            Top::Value(_) => false,
        })
}

/// [`super::read`] on its own.
fn read(json: &str) -> Option<(RawObject<'_>, Vec<RawObject<'_>>)> {
    super::read(json, None)
}

/// [`super::read`] given where the top-level members sit, as the layer's
/// validator reports it (in a message, as the `result` member's).
fn read_placed(json: &str) -> Option<(RawObject<'_>, Vec<RawObject<'_>>)> {
    super::read(json, Some(&placed(json)))
}

/// Where the validator reports the top-level members and long strings sit.
fn placed(json: &str) -> MemberRanges {
    struct Placing(MemberRanges);
    impl crate::json::Visitor for Placing {
        fn member(&mut self, depth: usize, key: Range<usize>, value: Range<usize>) {
            if depth == 1 {
                self.0.members.push((key, value));
            }
        }
        fn long_string(&mut self, at: Range<usize>) {
            self.0.long_strings.push(at);
        }
    }
    let mut placing = Placing(MemberRanges::default());
    crate::json::validate_visiting(json, &mut placing).expect("valid JSON");
    placing.0
}

proptest! {
    #[test]
    fn the_trusted_parse_is_the_serde_parse(
        top in top(),
        gaps in prop::collection::vec(
            prop::sample::select(&["", "", " ", "\n", "\t", "\r\n  ", "  "][..]), 1..8),
        escape in prop::collection::vec(prop::bool::weighted(0.2), 1..5),
    ) {
        let json = write(&top, gaps, escape);
        prop_assert!(serde_json::from_str::<serde::de::IgnoredAny>(&json).is_ok(), "{}", json);
        let trusted = RawResult::parse_trusted(&json);
        let serde = RawResult::parse(&json);
        // Every field's raw text, every block's fields, text and error alike.
        prop_assert_eq!(format!("{trusted:?}"), format!("{serde:?}"));
        // And the usual shapes were read by the trusted reader, not left to serde.
        prop_assert_eq!(read(&json).is_some(), usual(&top), "{}", json);
        // Given where the members sit, it reads the same.
        let placed = read_placed(&json);
        prop_assert_eq!(format!("{placed:?}"), format!("{:?}", read(&json)), "{}", json);
    }

    #[test]
    fn strings_end_where_a_byte_walk_says(
        // Quotes rare: runs of backslashes across the 64-byte blocks.
        text in prop::collection::vec(prop_oneof![
            10 => Just(b'\\'), 10 => Just(b'a'), 1 => Just(b'"'), 1 => Just(b'{'), 1 => Just(0xc3u8),
        ], 0..400),
        at in 0usize..70,
        run in 1usize..40,
    ) {
        let at = at.min(text.len());
        prop_assert_eq!(string_end(&text, at), naive_string_end(&text, at));
        // Plain runs longer than the bytes looked at one by one, too.
        let spread: Vec<u8> = text
            .iter()
            .flat_map(|&b| vec![b; if b == b'a' { run } else { 1 }])
            .collect();
        let at = at.min(spread.len());
        prop_assert_eq!(string_end(&spread, at), naive_string_end(&spread, at));
    }

    #[test]
    fn containers_end_where_serde_says(v in value(), pretty in any::<bool>()) {
        let v = json!([v, "\\\"]", {"a": "}\\\\", "\\": [[{}]]}]);
        let json = match pretty {
            true => serde_json::to_string_pretty(&v).unwrap(),
            false => v.to_string(),
        } + " ,\"after\"]";
        let raw: &serde_json::value::RawValue =
            serde_json::Deserializer::from_str(&json).into_iter().next().unwrap().unwrap();
        prop_assert_eq!(container_end(json.as_bytes(), 0), Some(raw.get().len()));
    }
}

/// The index of the first unescaped quote from `at`, byte by byte.
fn naive_string_end(b: &[u8], mut at: usize) -> Option<usize> {
    while at < b.len() {
        match b[at] {
            b'"' => return Some(at),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    None
}

#[test]
fn deep_nesting_is_read_as_serde_reads_it() {
    let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
    let json = format!(
        r#"{{"content":[{{"type":"text","text":"x","deep":{}}}],"d":{}}}"#,
        deep(5000),
        deep(300)
    );
    let trusted = RawResult::parse_trusted(&json);
    assert!(read(&json).is_some());
    assert_eq!(
        format!("{:?}", read_placed(&json)),
        format!("{:?}", read(&json))
    );
    assert_eq!(
        format!("{trusted:?}"),
        format!("{:?}", RawResult::parse(&json))
    );
}

#[test]
fn long_texts_are_read_as_reported_and_as_found() {
    use crate::json::LONG_STRING;
    let long = |n: usize, c: &str| Value::String(c.repeat(n));
    let result = json!({
        "content": [
            {"type": "text", "text": long(LONG_STRING, "\"x\\\n")},
            {"type": "text", "text": "short"},
            {"type": "text", "annotations": {"note": long(LONG_STRING, "é")}, "text": long(3 * LONG_STRING, "{}")},
        ],
        "structuredContent": {"items": [long(LONG_STRING, "a"), 1]},
        "isError": false,
    });
    for json in [
        result.to_string(),
        serde_json::to_string_pretty(&result).unwrap(),
    ] {
        let placed = read_placed(&json);
        assert!(placed.is_some());
        assert_eq!(format!("{placed:?}"), format!("{:?}", read(&json)));
    }
    // The strings it is given are where the validator found them; given
    // only some (or one it never meets), it finds the others.
    let json = result.to_string();
    let mut reported = placed(&json);
    let first = json.find(r#""\"x"#).expect("the first text");
    let end = json[first..].find(r#""}"#).expect("its end") + first + 1;
    assert_eq!(reported.long_strings[0], first..end);
    assert_eq!(reported.long_strings.len(), 4);
    reported.long_strings.remove(2);
    reported.long_strings.insert(0, 0..1);
    let (_, blocks) = super::read(&json, Some(&reported)).expect("read");
    assert_eq!(blocks[0]["text"].get(), &json[first..end]);
    let (_, found) = read(&json).expect("read");
    assert_eq!(format!("{blocks:?}"), format!("{found:?}"));
}

#[test]
fn unusual_results_get_serde_errors() {
    let many = format!(
        r#"{{"content":[{}]}}"#,
        vec![r#"{"type":"image"}"#; MAX_CONTENT_BLOCKS + 1].join(",")
    );
    let lone = r#"{"content":[],"\ud800":1}"#;
    for json in [
        "[]",
        "null",
        r#"{"x":1}"#,
        r#"{"content":null}"#,
        r#"{"content":[1]}"#,
        r#"{"content":[{"type":"text"}]}"#,
        r#"{"content":[{"type":"text","text":"\ud800"}]}"#,
        lone,
        &many,
    ] {
        assert_eq!(
            format!("{:?}", RawResult::parse_trusted(json)),
            format!("{:?}", RawResult::parse(json)),
            "{json}"
        );
    }
    assert!(read(lone).is_none());
    assert!(read(&many).is_none());
}
