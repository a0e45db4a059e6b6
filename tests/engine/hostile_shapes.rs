//! Results of hostile shapes. Many tiny records (newlines, one-word lines,
//! arrays of zeros, JSON lines of zeros): the file stays near the data's
//! size and the result rebuilds exactly. Records that broke jq 1.6 (a jq
//! keyword as a field name, `provenance` an object here and a string
//! there, nesting past jq's parser limit, and generated records of every
//! kind): every recipe runs under the real `jq`.
//!
//! Peak memory is measured by `benches/memory.rs`, not here.

use crate::common;

use common::{FullDisk, file_records, json_stream, require_jq, run_recipe};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{Offloaded, Offloader, Outcome, ToolCall, Truncated, rebuild_file};

fn offloader(dir: &std::path::Path) -> Offloader {
    Offloader::new(OffloadConfig::default().output_dir(dir))
}

fn offload_bytes(o: &Offloader, call: &ToolCall, result: &[u8]) -> Box<Offloaded> {
    match o.process(call, result).unwrap() {
        Outcome::Offloaded(off) => off,
        other => panic!("expected an offload, got {other:?}"),
    }
}

/// Offloads `result` (compact JSON) and checks that the file rebuilds it,
/// byte for byte.
fn offload_exact(o: &Offloader, tool: &str, result: &str) -> Box<Offloaded> {
    let off = offload_bytes(o, &ToolCall::new(tool, None), result.as_bytes());
    assert_eq!(
        rebuild_file(&off.file.path).unwrap(),
        result,
        "rebuilt exactly"
    );
    off
}

/// File size over result size.
fn ratio(off: &Offloaded, result: &str) -> f64 {
    std::fs::metadata(&off.file.path).unwrap().len() as f64 / result.len() as f64
}

fn text_result(text: &str) -> String {
    json!({"content": [{"type": "text", "text": text}]}).to_string()
}

/// Runs the recipe whose description starts with `prefix`.
fn recipe(off: &Offloaded, prefix: &str) -> String {
    let r = off
        .response
        .jq_recipes
        .iter()
        .find(|r| r.description.starts_with(prefix))
        .unwrap_or_else(|| panic!("no recipe {prefix:?}: {:?}", off.response.jq_recipes));
    run_recipe(&r.command)
}

fn run_all_recipes(off: &Offloaded) {
    assert_eq!(off.response.jq_recipes.len(), 10);
    for r in &off.response.jq_recipes {
        run_recipe(&r.command);
    }
}

#[test]
fn empty_lines_cost_nothing_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    // 200,000 newlines: one record, a file of a few hundred bytes.
    let result = text_result(&"\n".repeat(200_000));
    let off = offload_exact(&o, "dump", &result);
    assert_eq!(off.response.summary.count, 1);
    assert!(
        ratio(&off, &result) < 0.01,
        "file / result {}",
        ratio(&off, &result)
    );
    // Log lines with runs of empty lines between them: one record per
    // non-empty line, numbered as in the text.
    let text: String = (0..2000)
        .map(|i| format!("2026-11-21 INFO worker {i} started{}", "\n".repeat(40)))
        .collect();
    let result = text_result(&text);
    let off = offload_exact(&o, "dump", &result);
    let recs = file_records(&off.file.path);
    assert_eq!(recs.len(), 2000);
    assert_eq!(
        recs[1],
        json!({"line": 41, "text": "2026-11-21 INFO worker 1 started"})
    );
    assert!(
        ratio(&off, &result) < 1.0,
        "file / result {}",
        ratio(&off, &result)
    );
    require_jq();
    run_all_recipes(&off);
    let first = recipe(&off, "Lines 1 to 20");
    assert_eq!(first, "2026-11-21 INFO worker 0 started\n");
}

#[test]
fn short_lines_are_grouped_and_recipes_still_see_lines() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let words = ["fail", "ok", "go", "", "fail", "warn"];
    let lines: Vec<&str> = (0..60_000).map(|i| words[i % words.len()]).collect();
    let text = lines.join("\n") + "\n";
    let result = text_result(&text);
    let off = offload_exact(&o, "tail", &result);
    let r = ratio(&off, &result);
    assert!(r <= 2.0, "file / result {r}");
    let count = off.response.summary.count;
    assert!(count < 60_000 / 8, "{count} records for 60,000 short lines");
    let described = off.response.line_schema["description"].as_str().unwrap();
    assert!(
        described.contains("group of consecutive short lines"),
        "{described}"
    );
    run_all_recipes(&off);
    // The recipes split the groups back into lines.
    let non_empty = lines.iter().filter(|l| !l.is_empty()).count();
    assert_eq!(
        recipe(&off, "Count non-empty lines").trim(),
        non_empty.to_string()
    );
    let fail = lines.iter().filter(|l| l.contains("fail")).count();
    assert_eq!(
        recipe(&off, "Count lines containing \"fail\"").trim(),
        fail.to_string()
    );
    let first: Vec<&str> = lines[..20]
        .iter()
        .copied()
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(recipe(&off, "Lines 1 to 20"), first.join("\n") + "\n");
    let numbered = recipe(&off, "Search lines for \"fail\"");
    assert!(
        numbered.starts_with("1: fail\n5: fail\n7: fail\n"),
        "{numbered:.60}"
    );
}

#[test]
fn arrays_of_zeros_take_what_they_take() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let n = 200_000;
    let zeros = format!("[{}]", vec!["0"; n].join(","));
    let results = [
        text_result(&zeros),
        format!(
            r#"{{"content":[{{"type":"text","text":"{n} zeros"}}],"structuredContent":{{"values":{zeros}}}}}"#
        ),
        text_result(&"[0]\n".repeat(n)),
    ];
    for result in &results {
        let off = offload_exact(&o, "zeros", result);
        assert_eq!(off.response.summary.count, n);
        assert_eq!(file_records(&off.file.path).len(), n);
        let r = ratio(&off, result);
        assert!(r <= 1.05, "file / result {r}");
    }
    require_jq();
    let off = offload_exact(&o, "zeros", &results[0]);
    run_all_recipes(&off);
    assert_eq!(recipe(&off, "Count records").trim(), n.to_string());
}

#[test]
fn write_failure_on_many_tiny_records_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path()).with_store(FullDisk(dir.path().into()));
    let n = 200_000;
    for result in [
        text_result(&format!("[{}]", vec!["0"; n].join(","))),
        text_result(&"a\n".repeat(n)),
        text_result(&"\n".repeat(n)),
    ] {
        let t: Box<Truncated> = match o.process(&ToolCall::new("t", None), result.as_bytes()) {
            Ok(Outcome::Truncated(t)) => t,
            other => panic!("{other:?}"),
        };
        assert!(
            t.kept <= 1600 && t.kept <= t.total,
            "kept {} of {}",
            t.kept,
            t.total
        );
        assert!(t.result.len() < 16_000, "{} bytes inline", t.result.len());
        let v: Value = serde_json::from_str(&t.result).unwrap();
        assert!(
            v["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Warning")
        );
    }
}

/// Rows whose fields are jq 1.6 keywords: `module` is the category.
fn keyword_rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let module = ["auth", "db", "api"][i % 3];
            json!({
                "module": module,
                "break": i,
                "if": format!("branch {i}"),
                "then": i * 2,
            })
        })
        .collect()
}

#[test]
fn jq_keywords_as_field_names_run_under_jq_16() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows = keyword_rows(300);
    let result = text_result(&serde_json::to_string(&rows).unwrap());
    let off = offload_exact(&o, "modules", &result);
    run_all_recipes(&off);
    let extract = json_stream(&recipe(&off, "Extract"));
    assert_eq!(extract.len(), 300);
    assert_eq!(extract[1]["module"], "db");
    assert_eq!(off.response.summary.top_namespaces, ["api", "auth", "db"]);
}

#[test]
fn provenance_of_mixed_types_runs_under_jq_16() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows: Vec<Value> = (0..300)
        .map(|i| match i % 3 {
            0 => json!({"id": i, "title": format!("t{i}"), "provenance": {"confidence": i as f64 / 300.0}}),
            1 => json!({"id": i, "title": format!("t{i}"), "provenance": "imported"}),
            _ => json!({"id": i, "title": format!("t{i}"), "provenance": [1, 2]}),
        })
        .collect();
    let result = text_result(&serde_json::to_string(&rows).unwrap());
    let off = offload_exact(&o, "facts", &result);
    run_all_recipes(&off);
    let top = json_stream(&recipe(&off, "Sort by provenance.confidence"));
    assert_eq!(top[0][0]["provenance"]["confidence"], json!(297.0 / 300.0));
    // Memory records whose provenance is a string in some: at full detail
    // the spec's `sort_by(.provenance.confidence)` would fail; they get
    // recipes that run.
    let memories: Vec<Value> = (0..200)
        .map(|i| {
            let provenance = if i % 2 == 0 { json!({"confidence": 0.5}) } else { json!("manual") };
            json!({"id": format!("m{i}"), "title": "t", "namespace": "_semantic", "memory_type": "semantic",
                   "tags": [], "content": "c", "provenance": provenance})
        })
        .collect();
    let result = json!({"content": [], "structuredContent": {"memories": memories}}).to_string();
    let call = ToolCall::new("recall_memories", Some(json!({"detail": "full"})));
    let off = offload_bytes(&o, &call, result.as_bytes());
    assert!(
        off.response
            .jq_recipes
            .iter()
            .all(|r| !r.command.contains("sort_by(.provenance.confidence)"))
    );
    run_all_recipes(&off);
}

/// `[[[...]]]` around `inner`, `depth` levels.
fn nested(depth: usize, inner: &str) -> String {
    format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn records_deeper_than_jq_parses_do_not_stop_the_recipes() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let mut rows: Vec<String> = keyword_rows(299).iter().map(Value::to_string).collect();
    rows.insert(
        7,
        format!(r#"{{"module":"deep","v":{}}}"#, nested(300, "1")),
    );
    let result = text_result(&format!("[{}]", rows.join(",")));
    let off = offload_exact(&o, "deep", &result);
    run_all_recipes(&off);
    assert_eq!(recipe(&off, "Count records").trim(), "300");
    // Memory records with one too deep for jq: not the spec's table (which
    // jq could not run), recipes that run.
    let mut memories: Vec<String> = (0..200)
        .map(|i| json!({"id": format!("m{i}"), "title": "t", "namespace": "_semantic", "memory_type": "semantic"}).to_string())
        .collect();
    memories[3] = format!(
        r#"{{"id":"m3","title":"t","namespace":"_semantic","memory_type":"semantic","x":{}}}"#,
        nested(200, "0")
    );
    let result = format!(
        r#"{{"content":[],"structuredContent":{{"memories":[{}]}}}}"#,
        memories.join(",")
    );
    let off = offload_exact(&o, "recall_memories", &result);
    assert!(
        off.response.jq_recipes[0].command.contains(" -R "),
        "{:?}",
        off.response.jq_recipes[0]
    );
    run_all_recipes(&off);
    assert_eq!(recipe(&off, "Count records").trim(), "200");
}

/// Field names that trip jq programs: keywords, quotes, escapes, spaces,
/// interpolation, empty, non-ASCII, names that look like numbers or paths.
fn odd_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "module", "break", "__loc__", "if", "then", "else", "elif", "end", "and", "or", "not",
            "as", "def", "reduce", "foreach", "try", "catch", "label", "import", "include",
            "true", "false", "null", "nan", "empty", "length", "type", "count", "keys",
            "$x", "\\(x)", "it's", "a b", "a.b", "1abc", "", "\"", "\\", "é", "中文", "\u{0}",
            "\n", "-", "id", "title", "namespace", "memory_type", "tags", "content",
            "provenance", "confidence", "score", "created", "level", "text", "line",
        ]).prop_map(str::to_owned),
        1 => "\\PC{0,6}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "2026-01-02",
            "info",
            "error",
            "_semantic",
            "keyword a'b"
        ])
        .prop_map(|s| json!(s)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((odd_key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A record: mostly objects with odd keys, sometimes a scalar or an array.
fn record() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::collection::vec((odd_key(), value()), 0..6)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => value(),
    ]
}

/// A record as JSON text, sometimes nested past jq's parser limit.
fn record_text() -> impl Strategy<Value = String> {
    (record(), prop::option::weighted(0.05, 120usize..300)).prop_map(|(r, deep)| match deep {
        Some(depth) => format!(r#"{{"deep":{}}}"#, nested(depth, &r.to_string())),
        None => r.to_string(),
    })
}

/// Where the records go: a text block, `structuredContent`, JSON lines;
/// or plain text of short odd lines (grouped, or one record each).
fn result_text() -> impl Strategy<Value = String> {
    let lines = prop::collection::vec("\\PC{0,5}|\"|\\\\|\r|\t", 1..300);
    (prop::collection::vec(record_text(), 1..25), 0..4, lines).prop_map(
        |(records, place, lines)| {
            let array = format!("[{}]", records.join(","));
            match place {
                0 => text_result(&array),
                1 => format!(r#"{{"content":[],"structuredContent":{{"rows":{array}}}}}"#),
                2 => text_result(&(records.join("\n") + "\n")),
                _ => text_result(&lines.join("\n")),
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every recipe runs under jq 1.6 on the file it describes, whatever
    /// the records hold, and the file rebuilds the result exactly.
    #[test]
    fn recipes_run_on_any_records(
        result in result_text(),
        tool in prop::sample::select(vec!["recall_memories", "query", "inject_context"]),
        detail in prop::option::of(prop::sample::select(vec!["light", "medium", "full"])),
    ) {
        require_jq();
        let dir = tempfile::tempdir().unwrap();
        let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()).threshold_tokens(4));
        let call = ToolCall::new(tool, detail.map(|d| json!({"detail": d})));
        if let Outcome::Offloaded(off) = o.process(&call, result.as_bytes()).unwrap() {
            prop_assert_eq!(rebuild_file(&off.file.path).unwrap(), result);
            prop_assert_eq!(off.response.jq_recipes.len(), 10);
            for r in &off.response.jq_recipes {
                run_recipe(&r.command);
            }
        }
    }
}
