//! Property tests: nothing is lost, and no input makes the engine panic.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{Offloaded, Offloader, Outcome, ToolCall, rebuild_with};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::String),
        "[\"\\\\\\n\\t\\u{0}-\\u{1f}ÿ中🎉 ]{0,12}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_ é\"]{0,8}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// How a block's text is written.
#[derive(Debug, Clone, Copy)]
enum Layout {
    Compact,
    Pretty,
    Spaced,
    Jsonl,
    Wrapped,
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Compact),
        Just(Layout::Pretty),
        Just(Layout::Spaced),
        Just(Layout::Jsonl),
        Just(Layout::Wrapped)
    ]
}

fn render(records: &[Value], layout: Layout) -> String {
    match layout {
        Layout::Compact => serde_json::to_string(records).unwrap(),
        Layout::Pretty => serde_json::to_string_pretty(records).unwrap(),
        Layout::Spaced => format!(
            " [ {} ]\n",
            records
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" ,  ")
        ),
        Layout::Jsonl => records.iter().map(|r| format!("{r}\n")).collect(),
        Layout::Wrapped => {
            serde_json::to_string(&json!({"items": records, "n": records.len()})).unwrap()
        }
    }
}

fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (prop::collection::vec(value(), 0..40), layout())
            .prop_map(|(recs, l)| json!({"type": "text", "text": render(&recs, l)})),
        2 => "(\\PC{0,60}\n){0,30}".prop_map(|t| json!({"type": "text", "text": t})),
        1 => "[A-Za-z0-9+/]{0,40}".prop_map(|d| json!({"type": "image", "data": d, "mimeType": "image/png"})),
        1 => value().prop_map(|v| json!({"type": "resource", "resource": {"uri": "file:///x", "text": v.to_string()}})),
    ]
}

fn tool_result() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(block(), 1..5),
        prop::option::of(prop::collection::vec(value(), 0..30)),
        prop::option::of(value()),
        any::<bool>(),
    )
        .prop_map(|(content, structured, meta, is_error)| {
            let mut r = json!({"content": content});
            if let Some(s) = structured {
                r["structuredContent"] = json!({"rows": s, "total": s.len()});
            }
            if let Some(m) = meta {
                r["_meta"] = json!({"x": m});
            }
            if is_error {
                r["isError"] = json!(false);
            }
            r
        })
}

/// Whether `rebuilt` differs from `original` only as the engine's docs
/// allow (`engine/records/mod.rs`, "Text layout"): past the layout budget
/// a JSON text whose whitespace no known layout reproduces is rebuilt
/// compact — the same leading and trailing whitespace, the same JSON, not
/// one byte of whitespace between its tokens (a JSON lines text: line by
/// line) — equal as JSON, not byte for byte. Everything else must be equal.
fn only_relaid_compact(rebuilt: &Value, original: &Value) -> bool {
    let (Some(r), Some(o)) = (rebuilt.as_object(), original.as_object()) else {
        return false;
    };
    let same_but_content =
        r.len() == o.len() && o.iter().all(|(k, v)| k == "content" || r.get(k) == Some(v));
    let (Some(rb), Some(ob)) = (r["content"].as_array(), o["content"].as_array()) else {
        return false;
    };
    same_but_content
        && rb.len() == ob.len()
        && rb
            .iter()
            .zip(ob)
            .all(|(a, b)| a == b || compact_text_of(a, b))
}

/// `a` is block `b` with its text rebuilt compact (see [`only_relaid_compact`]).
fn compact_text_of(a: &Value, b: &Value) -> bool {
    let (Some(ta), Some(tb)) = (a["text"].as_str(), b["text"].as_str()) else {
        return false;
    };
    let mut rest_a = a.clone();
    let mut rest_b = b.clone();
    rest_a["text"] = Value::Null;
    rest_b["text"] = Value::Null;
    let trim = |t: &str| {
        let core = t.trim_matches([' ', '\n', '\r', '\t']);
        let lead = &t[..t.len() - t.trim_start_matches([' ', '\n', '\r', '\t']).len()];
        (
            lead.to_owned(),
            core.to_owned(),
            t[lead.len() + core.len()..].to_owned(),
        )
    };
    let ((la, ca, ra), (lb, cb, rb)) = (trim(ta), trim(tb));
    rest_a == rest_b && (la, ra) == (lb, rb) && (compact_of(&ca, &cb) || compact_lines_of(&ca, &cb))
}

/// JSON text `a` is JSON text `b` without a byte of whitespace between
/// its tokens.
fn compact_of(a: &str, b: &str) -> bool {
    let parsed = |c: &str| serde_json::from_str::<Value>(c).ok();
    parsed(a).is_some()
        && parsed(a) == parsed(b)
        && a.len() == b.len() - insignificant_whitespace(b)
}

/// JSON lines text `a` is `b` with each line compact (see [`compact_of`]).
fn compact_lines_of(a: &str, b: &str) -> bool {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.split('\n').collect(), b.split('\n').collect());
    la.len() == lb.len() && la.iter().zip(&lb).all(|(x, y)| x == y || compact_of(x, y))
}

/// Bytes of whitespace between the tokens of the JSON text `json`.
fn insignificant_whitespace(json: &str) -> usize {
    let (mut in_string, mut escaped, mut n) = (false, false, 0);
    for c in json.bytes() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') | (false, _, b'"') => in_string = !in_string,
            (false, _, b' ' | b'\n' | b'\r' | b'\t') => n += 1,
            _ => {}
        }
    }
    n
}

/// The result rebuilt from the file and the rewritten result (the file
/// alone when it holds every part; large kept parts are left to the
/// rewritten result, which the client holds).
fn rebuild(off: &Offloaded) -> String {
    let file = std::fs::read_to_string(&off.file.path).unwrap();
    rebuild_with(&file, &off.result).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every offloaded result is rebuilt from its file, equal as JSON.
    #[test]
    fn rebuilt_equals_original(result in tool_result()) {
        let dir = tempfile::tempdir().unwrap();
        // A tiny threshold so that nearly everything is offloaded.
        let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()).threshold_tokens(4));
        let bytes = serde_json::to_vec(&result).unwrap();
        match o.process(&ToolCall::new("prop_tool", None), &bytes).unwrap() {
            Outcome::Offloaded(off) => {
                let rebuilt: Value = serde_json::from_str(&rebuild(&off)).unwrap();
                if rebuilt != result {
                    prop_assert!(
                        only_relaid_compact(&rebuilt, &result),
                        "rebuilt {:.800}\noriginal {:.800}", rebuilt, result
                    );
                }
                // The rewritten result is a valid CallToolResult with the
                // descriptor where the first offloaded block stood.
                let rewritten: Value = serde_json::from_str(&off.result).unwrap();
                let d = rewritten["content"].as_array().unwrap().iter()
                    .filter_map(|b| serde_json::from_str::<Value>(b["text"].as_str()?).ok())
                    .find(|v| v.get("offloaded").is_some());
                prop_assert!(d.is_some(), "no descriptor: {}", off.result);
                let d = d.unwrap();
                prop_assert_eq!(d["offloaded"].as_bool(), Some(true));
                prop_assert_eq!(d["jq_recipes"].as_array().unwrap().len(), 10);
            }
            Outcome::Inline(_) => {}
            Outcome::Truncated(t) => prop_assert!(false, "write failed: {}", t.error),
        }
    }

    /// Arbitrary bytes never panic: a typed error or an inline decision.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let dir = tempfile::tempdir().unwrap();
        let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()).threshold_tokens(1));
        let _ = o.process(&ToolCall::new("t", None), &bytes);
    }

    /// Mutated valid results never panic either, and what is offloaded rebuilds exactly.
    #[test]
    fn mutated_results_never_panic(result in tool_result(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let dir = tempfile::tempdir().unwrap();
        let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()).threshold_tokens(1));
        let mut bytes = serde_json::to_vec(&result).unwrap();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        if let Ok(Outcome::Offloaded(off)) = o.process(&ToolCall::new("t", None), &bytes) {
            let rebuilt = rebuild(&off);
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(original) => {
                    let rebuilt: Value = serde_json::from_str(&rebuilt).unwrap();
                    // As in `rebuilt_equals_original`: past the layout
                    // budget a text block may come back compact.
                    if rebuilt != original {
                        prop_assert!(
                            only_relaid_compact(&rebuilt, &original),
                            "rebuilt {:.800}\noriginal {:.800}", rebuilt, original
                        );
                    }
                }
                // A mutation can make a number too large for f64 (`1e999`):
                // valid JSON that the engine keeps literally but `Value`
                // refuses; the rebuild must keep it and be refused alike.
                Err(e) => {
                    let again = serde_json::from_str::<Value>(&rebuilt).unwrap_err();
                    prop_assert!(e.to_string().starts_with("number out of range"), "{}", e);
                    prop_assert!(again.to_string().starts_with("number out of range"), "{}", again);
                }
            }
        }
    }
}
