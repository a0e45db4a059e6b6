use super::*;
use crate::json::Check;
use proptest::prelude::*;

/// What `serde_json` says, skipping a value from a string.
fn serde_says(input: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(input).is_ok()
}

/// What the validator says.
fn says(input: &str) -> bool {
    validate(input).is_ok()
}

/// What the chunked check says, fed whole.
fn check_says(input: &str) -> bool {
    let mut check = Check::default();
    check
        .feed(input.as_bytes())
        .and_then(|()| check.finish())
        .is_ok()
}

/// Asserts the validator agrees with serde on `input` (and with `Check`
/// below its depth cap).
fn agree(input: &str) {
    assert_eq!(says(input), serde_says(input), "{input:?}");
}

#[test]
fn agrees_with_serde_on_the_edges_of_the_grammar() {
    let cases = crate::json::GRAMMAR_EDGES;
    for case in cases {
        agree(case);
        assert_eq!(says(case), check_says(case), "{case:?}");
    }
}

#[test]
fn every_escape_letter() {
    for byte in 0u8..=0x7f {
        let c = char::from(byte);
        for pad in [0, 1, 7, 15, 16, 17, 62, 63, 64, 65] {
            let text = format!("\"{}\\{c}\"", "a".repeat(pad));
            agree(&text);
            let text = format!("[\"{}\\{c}0000\", 1]", "a".repeat(pad));
            agree(&text);
        }
    }
    agree("\"\\é\"");
}

#[test]
fn backslash_runs_across_blocks() {
    for pad in 0..140 {
        for run in 1..6 {
            for end in ["\"", "n\"", "u0041\"", "x\"", "\u{1}\""] {
                let text = format!("\"{}{}{end}", "a".repeat(pad), "\\".repeat(run));
                agree(&text);
                agree(&format!("{{\"k\":{text},\"l\":[{text}]}}"));
            }
        }
    }
}

#[test]
fn deep_nesting_has_no_limit() {
    let n = 100_000;
    let deep = format!("{}0{}", "[{\"a\":".repeat(n), "}]".repeat(n));
    assert!(says(&deep) && serde_says(&deep));
    let open = format!("{}0{}", "[{\"a\":".repeat(n), "}]".repeat(n - 1));
    assert!(!says(&open) && !serde_says(&open));
    let wrong = format!("{}0{}]}}", "[{\"a\":".repeat(n), "}]".repeat(n - 1));
    assert!(!says(&wrong) && !serde_says(&wrong));
    for n in [63, 64, 65, 127, 128, 129, 200] {
        let mixed: String = (0..n)
            .map(|k| if k % 3 == 0 { "[" } else { "{\"k\":" })
            .collect();
        let close: String = (0..n)
            .rev()
            .map(|k| if k % 3 == 0 { "]" } else { "}" })
            .collect();
        agree(&format!("{mixed}1{close}"));
        agree(&format!("{mixed}1{close}]"));
        let swapped = close.replacen('}', "]", 1);
        agree(&format!("{mixed}1{swapped}"));
    }
}

#[test]
fn truncated_inputs() {
    let text = r#" {"a": [1, -2.5e+3, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9y"], "b": {"c": {}}, "d": []} "#;
    for end in 0..=text.len() {
        if let Some(prefix) = text.get(..end) {
            agree(prefix);
        }
    }
}

#[test]
fn members_are_reported_with_their_ranges() {
    let text = r#" { "a" : [1, {"x": 2}] , "b\u0063":"s" ,"n":null} "#;
    let mut seen = Vec::new();
    validate_with(text, |k, v| seen.push((&text[k], &text[v]))).unwrap();
    assert_eq!(
        seen,
        [
            ("\"a\"", "[1, {\"x\": 2}]"),
            ("\"b\\u0063\"", "\"s\""),
            ("\"n\"", "null")
        ]
    );
    let mut seen = 0;
    validate_with("[{\"a\":1}]", |_, _| seen += 1).unwrap();
    validate_with("{}", |_, _| seen += 1).unwrap();
    assert_eq!(seen, 0);
}

/// A valid JSON value, compact or pretty, with strings rich in escapes.
fn json_value() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        ".{0,20}",
        "[\"\\\\\n\t/a\u{1}\u{7f}é😀]{0,80}",
        "[a-z ]{0,70}",
    ];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        text.prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    (value, any::<bool>()).prop_map(|(v, pretty)| match pretty {
        true => serde_json::to_string_pretty(&v).unwrap_or_default(),
        false => serde_json::to_string(&v).unwrap_or_default(),
    })
}

/// One change to a text: a byte replaced, inserted or deleted.
#[derive(Debug, Clone)]
enum Edit {
    Set(prop::sample::Index, u8),
    Insert(prop::sample::Index, u8),
    Delete(prop::sample::Index),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let pick = prop::sample::select(b"\"\\{}[],:0-+.eEtfnu \n\x01\x1faZ/b".to_vec());
    let edit = prop_oneof![
        (any::<prop::sample::Index>(), pick.clone()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<prop::sample::Index>(), pick).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<prop::sample::Index>().prop_map(Edit::Delete),
    ];
    prop::collection::vec(edit, 0..3)
}

/// `text` with `edits` made, as text when it is still UTF-8.
fn edited(text: &str, edits: &[Edit]) -> Option<String> {
    let mut bytes = text.as_bytes().to_vec();
    for edit in edits {
        let n = bytes.len();
        match *edit {
            Edit::Set(i, b) if n > 0 => bytes[i.index(n)] = b,
            Edit::Insert(i, b) => bytes.insert(i.index(n + 1), b),
            Edit::Delete(i) if n > 0 => {
                bytes.remove(i.index(n));
            }
            _ => {}
        }
    }
    String::from_utf8(bytes).ok()
}

/// Long strings dense with escapes, some backslash runs put at 64-byte
/// boundaries.
fn long_strings() -> impl Strategy<Value = String> {
    (crate::json::escape_heavy_texts(), 0usize..64).prop_map(|(texts, shift)| {
        let json = serde_json::to_string(&texts).unwrap_or_default();
        format!("{}{json}", " ".repeat(shift))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn agrees_with_serde_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            prop_assert_eq!(says(text), serde_says(text));
        }
    }

    #[test]
    fn agrees_with_serde_on_json_like_bytes(
        bytes in prop::collection::vec(prop::sample::select(b"\"\\{}[],:0123-+.eEtrufalsn \n\x01/a".to_vec()), 0..40),
    ) {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            prop_assert_eq!(says(text), serde_says(text));
            prop_assert_eq!(says(text), check_says(text));
        }
    }

    #[test]
    fn agrees_with_serde_on_edited_json(text in json_value(), edits in edits()) {
        prop_assert!(says(&text), "{:?}", text);
        if let Some(text) = edited(&text, &edits) {
            prop_assert_eq!(says(&text), serde_says(&text), "{:?}", text);
        }
    }

    #[test]
    fn agrees_with_serde_on_long_strings(text in long_strings(), edits in edits()) {
        prop_assert!(says(&text));
        if let Some(text) = edited(&text, &edits) {
            prop_assert_eq!(says(&text), serde_says(&text), "{:?}", text);
        }
    }

    #[test]
    fn agrees_with_serde_on_truncated_json(text in json_value(), cut in any::<prop::sample::Index>()) {
        let end = cut.index(text.len() + 1);
        if let Some(prefix) = text.get(..end) {
            prop_assert_eq!(says(prefix), serde_says(prefix));
        }
    }
}

/// Best of 15 runs of `f` over `input`, in MB/s.
fn mb_per_s(input: &str, f: impl Fn(&str) -> bool) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        assert!(f(std::hint::black_box(input)));
        best = best.min(t.elapsed().as_secs_f64());
    }
    input.len() as f64 / best / 1e6
}

/// Many runs of `f` over a small `input`, in MB/s (best of 15 rounds).
fn small_mb_per_s(input: &str, f: impl Fn(&str) -> bool) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        for _ in 0..10_000 {
            assert!(f(std::hint::black_box(input)));
        }
        best = best.min(t.elapsed().as_secs_f64() / 10_000.0);
    }
    input.len() as f64 / best / 1e6
}

#[test]
#[ignore = "a measure: cargo test --release --lib validate_speed -- --ignored --nocapture"]
fn validate_speed() {
    let memories =
        crate::fixtures::MemoryGenerator::new(2026).memories(4200, crate::descriptor::Detail::Full);
    let result = crate::fixtures::memory_tool_result(&memories);
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    let text = serde_json::to_string(&result["content"][0]["text"]).unwrap();
    let structured = serde_json::to_string(&result["structuredContent"]).unwrap();
    let small = r#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"Stored memory mem_00017 in namespace \"work\".\nTags: a, b"}],"structuredContent":{"id":"mem_00017","tags":["a","b"],"score":0.875},"isError":false}}"#;
    let inputs = [
        ("body", body.as_str()),
        ("text", &text),
        ("structured", &structured),
    ];
    for (name, input) in inputs {
        let serde = mb_per_s(input, serde_says);
        let check = mb_per_s(input, check_says);
        let ours = mb_per_s(input, says);
        println!(
            "{name:>10} {:>6.1} MB: serde {serde:>5.0} MB/s, Check {check:>5.0}, validate {ours:>5.0}",
            input.len() as f64 / 1e6
        );
    }
    let serde = small_mb_per_s(small, serde_says);
    let ours = small_mb_per_s(small, says);
    println!(
        "{:>10} {:>6} B: serde {serde:>5.0} MB/s, validate {ours:>5.0}",
        "small",
        small.len()
    );
}
