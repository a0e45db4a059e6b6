//! Tests of the parent module.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// All the statistics hold, in an order that does not depend on hashing.
pub(super) fn canonical(s: &RecordStats) -> String {
    let fields: Vec<String> = s
        .fields
        .iter()
        .map(|(k, f)| format!("{k}: {}", f.canonical()))
        .collect();
    format!(
        "{} {} {} {} {} {} {:?} {:?} {} {fields:?}",
        s.count,
        s.objects,
        s.strings,
        s.numbers,
        s.opaque,
        s.too_deep,
        s.schema,
        s.memory,
        s.provenance_confidence.canonical(),
    )
}

/// A JSON text, written by hand so that it may hold what a value
/// cannot: escapes of every kind, lone surrogates, `-0`, integers past
/// 64 bits, floats past `f64`, repeated keys.
pub(super) fn json_text() -> impl Strategy<Value = String> {
    let string = prop_oneof![
        "[a-z ]{0,12}",
        Just("2026-11-25T10:00:00Z".to_owned()),
        Just("\\n\\\"\\\\\\u00e9\\ud83d\\ude00".to_owned()),
        Just("\\ud800".to_owned()),
        Just("\\udc00x".to_owned()),
        "[a-z]{0,3}".prop_map(|s| format!("{s}\\t{s}")),
        "x{120,140}",
    ]
    .prop_map(|s| format!("\"{s}\""));
    let number = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        Just("-0".to_owned()),
        Just("-0.0".to_owned()),
        Just("1e999".to_owned()),
        Just("-9223372036854775808".to_owned()),
        Just("-9223372036854775809".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("0.87".to_owned()),
        Just("2.5E-3".to_owned()),
    ];
    let leaf = prop_oneof![
        2 => string.clone(),
        2 => number,
        1 => Just("true".to_owned()),
        1 => Just("false".to_owned()),
        1 => Just("null".to_owned()),
    ];
    let key = prop_oneof![
        Just("\"namespace\"".to_owned()),
        Just("\"title\"".to_owned()),
        Just("\"provenance\"".to_owned()),
        Just("\"confidence\"".to_owned()),
        Just("\"tags\"".to_owned()),
        Just("\"id\"".to_owned()),
        string,
    ];
    leaf.prop_recursive(8, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|m| {
                let members: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

#[test]
fn the_walk_reports_depth_as_the_bracket_count_does() {
    let nest = |n: usize, inner: &str| format!("{}{inner}{}", "[{\"a\":".repeat(n), "}]".repeat(n));
    let records = [
        nest(64, "1"),
        nest(65, "[]"),
        format!(
            "{{\"s\":\"{}\",\"x\":{}}}",
            "[[[[".repeat(100),
            nest(10, "{}")
        ),
        format!("[{},{}]", nest(63, "{}"), nest(20, "null")),
        format!("{{\"e\":{{}},\"deep\":{}}}", nest(70, "\"\\ud800\"")),
        nest(70, "1e999"),
        // Opaque at its first field: the depth is counted instead.
        format!("{{\"n\":1e999,\"d\":{}}}", nest(70, "0")),
    ];
    for r in &records {
        let mut walked = RecordStats::collect([]);
        walked.fold(r);
        assert_eq!(walked.too_deep, usize::from(too_deep_for_jq(r)), "{r:.80}");
    }
}

proptest! {
    /// The walk folds any record in exactly as serde reading it does.
    #[test]
    fn the_walk_folds_as_serde_reads(records in prop::collection::vec(json_text(), 1..12)) {
        let (mut walked, mut read) = (RecordStats::collect([]), RecordStats::collect([]));
        for r in &records {
            prop_assume!(serde_json::from_str::<serde::de::IgnoredAny>(r).is_ok());
            walked.fold(r);
            read.fold_with_serde(r);
        }
        prop_assert_eq!(canonical(&walked), canonical(&read), "{:?}", records);
    }
}

#[test]
fn schema_merges_types_and_required() {
    let recs = [
        r#"{"a":1,"b":"x","c":[1,2]}"#,
        r#"{"a":2.5,"c":[],"d":null}"#,
    ];
    let s = RecordStats::collect(recs);
    let schema = s.line_schema(SCHEMA_DEPTH);
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert_eq!(schema["properties"]["c"]["items"]["type"], "integer");
    assert_eq!(schema["required"], json!(["a", "c"]));
    assert_eq!(s.line_schema(0), json!({"type": "object"}));
    // Every property in every record: no `required` to repeat them.
    let all = RecordStats::collect([r#"{"a":1,"b":{"c":1}}"#, r#"{"a":2,"b":{"c":2}}"#]);
    assert_eq!(
        all.line_schema(SCHEMA_DEPTH),
        json!({"type": "object", "properties": {"a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "integer"}}}}})
    );
    assert_eq!(all.tree_field(), None);
    let tree = RecordStats::collect([r#"{"name":"a","children":[{"name":"b","children":[]}]}"#]);
    assert_eq!(tree.tree_field(), Some("children"));
}

#[test]
fn distinct_counts_stop_only_where_nothing_reads_them() {
    // 50 levels, each twice: a category. 51 or more: none. The named
    // category (`namespace`) keeps counting past any number of values.
    let rec = |i: usize, levels: usize| {
        format!(
            r#"{{"level":"l{}","id":"r{i}","namespace":"n{}"}}"#,
            i % levels,
            if i.is_multiple_of(3) { 0 } else { i }
        )
    };
    for (levels, category) in [(50, true), (51, false), (500, false)] {
        let recs: Vec<String> = (0..1000).map(|i| rec(i, levels)).collect();
        let s = RecordStats::collect(recs.iter().map(String::as_str));
        let level = &s.fields["level"];
        assert_eq!(is_category_like(level, s.objects), category, "{levels}");
        assert_eq!(level.strings, 1000);
        assert!(!is_category_like(&s.fields["id"], s.objects));
        assert_eq!(s.category_field(), Some("namespace"));
        // n0 is every third record; all 667 distinct values counted.
        assert_eq!(s.fields["namespace"].top_values(1), vec![("n0", 334)]);
        assert_eq!(s.fields["namespace"].distinct.len(), 667);
    }
}

#[test]
fn category_and_scores() {
    let recs: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"level":"{}","msg":"m{i}","score":{}}}"#,
                ["info", "warn", "error"][i % 3],
                i as f64 / 10.0
            )
        })
        .collect();
    let s = RecordStats::collect(recs.iter().map(String::as_str));
    assert_eq!(s.category_field(), Some("level"));
    assert_eq!(s.top_categories(5), vec!["info", "warn", "error"]);
    assert_eq!(
        s.score_field().map(|(_, f)| (f.min, f.max)),
        Some((0.0, 1.9))
    );
    assert!(!s.memory_recipes_fit(Detail::Light));
}
