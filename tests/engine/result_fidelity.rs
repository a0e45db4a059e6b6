//! What the file and the rewritten result keep: the header's query under other argument names, a zero TTL, the
//! text of embedded resources, kept blocks and annotations, a small header
//! line for any input, and the `resource_link` to the file.

use crate::common;

use common::{require_jq, run_recipe};
use serde_json::{Value, json};
use tower_lro::cleanup::Custodian;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{Offloaded, Offloader, Outcome, RebuildError, ToolCall, rebuild_file};

fn offloader(dir: &std::path::Path) -> Offloader {
    Offloader::new(OffloadConfig::default().output_dir(dir))
}

fn offload(o: &Offloader, call: &ToolCall, result: &Value) -> Box<Offloaded> {
    match o
        .process(call, result.to_string().as_bytes())
        .expect("valid result")
    {
        Outcome::Offloaded(off) => off,
        other => panic!("expected offload, got {other:?}"),
    }
}

/// Rows of a list tool, `n` of them, about 120 bytes each.
fn rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"id": i, "name": format!("item-{i}"), "status": if i % 2 == 0 { "open" } else { "closed" }, "note": "x".repeat(60)}))
        .collect()
}

/// The file's first line, parsed, and its length in bytes.
fn header_line(off: &Offloaded) -> (Value, usize) {
    let text = std::fs::read_to_string(&off.file.path).unwrap();
    let line = text.lines().next().unwrap();
    (serde_json::from_str(line).unwrap(), line.len())
}

#[test]
fn the_query_argument_under_other_names_fills_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let result =
        json!({"content": [{"type": "text", "text": serde_json::to_string(&rows(200)).unwrap()}]});
    for key in [
        "query", "q", "pattern", "search", "filter", "keyword", "term",
    ] {
        let call = ToolCall::new("find_items", Some(json!({ key: "open items", "limit": 5 })));
        let off = offload(&o, &call, &result);
        assert_eq!(
            off.file.header.query.as_deref(),
            Some("open items"),
            "{key}"
        );
        assert_eq!(header_line(&off).0["query"], "open items", "{key}");
    }
    // `query` wins; empty strings and non-strings are skipped.
    let call = ToolCall::new(
        "find_items",
        Some(json!({"q": "second", "query": "first", "pattern": "third"})),
    );
    assert_eq!(call.query(), Some("first"));
    let call = ToolCall::new(
        "find_items",
        Some(json!({"query": " ", "q": 7, "term": "t"})),
    );
    assert_eq!(call.query(), Some("t"));
    assert_eq!(ToolCall::new("find_items", None).query(), None);
    // A huge query is cut: it goes into the header line.
    let long = "é".repeat(100_000);
    let call = ToolCall::new("find_items", Some(json!({"search": long})));
    let off = offload(&o, &call, &result);
    let query = off.file.header.query.as_deref().unwrap();
    assert_eq!(query.chars().count(), ToolCall::MAX_QUERY_CHARS);
    assert!(header_line(&off).1 < 8 << 10);
}

#[test]
fn a_zero_ttl_expires_at_once_and_the_next_cleanup_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::from_toml_str("[prompt.offload]\nttl_seconds = 0\n")
        .unwrap()
        .output_dir(dir.path());
    let o = Offloader::new(config);
    let result =
        json!({"content": [{"type": "text", "text": serde_json::to_string(&rows(200)).unwrap()}]});
    let off = offload(&o, &ToolCall::new("list_items", None), &result);
    assert!(off.file.ttl.is_zero());
    // Expired at once: reading it back is refused, with or without the engine.
    assert!(matches!(
        rebuild_file(&off.file.path),
        Err(RebuildError::Expired { .. })
    ));
    assert!(matches!(
        o.rebuild_file(&off.file.path),
        Err(RebuildError::Expired { .. })
    ));
    // The next cleanup run deletes it, by its header or by the ttl.
    let report = Custodian::for_offloader(&o).run_once();
    assert_eq!(report.deleted, vec![off.file.path.clone()]);
    assert!(!off.file.path.exists());
    let off = offload(&o, &ToolCall::new("list_items", None), &result);
    let report = Custodian::new(dir.path(), std::time::Duration::ZERO).run_once();
    assert_eq!(report.deleted.len(), 1);
    assert!(!off.file.path.exists());
}

/// The rewritten result is an `rmcp::model::CallToolResult`.
fn as_rmcp(rewritten: &str) -> rmcp::model::CallToolResult {
    serde_json::from_str(rewritten).expect("rmcp reads the rewritten result")
}

fn assert_rebuilds(off: &Offloaded, original: &Value) {
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&off.file.path).unwrap()).unwrap();
    assert_eq!(
        &rebuilt, original,
        "rebuilt result differs from the original"
    );
}

#[test]
fn an_embedded_text_resource_is_counted_and_offloaded_like_text() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let log: String = (0..2000)
        .map(|i| {
            format!(
                "2026-01-01T00:00:{:02}Z INFO worker {i} handled request {i}\n",
                i % 60
            )
        })
        .collect();
    assert!(log.len() > 100_000);
    let json_text = serde_json::to_string(&rows(800)).unwrap();
    for (text, mime, count) in [
        (log.as_str(), "text/plain", 2000),
        (json_text.as_str(), "application/json", 800),
    ] {
        let resource = json!({
            "type": "resource",
            "resource": {"uri": "file:///var/log/app.log", "mimeType": mime, "text": text},
            "annotations": {"audience": ["assistant"], "priority": 0.9},
        });
        let result = json!({"content": [resource], "isError": false});
        let off = offload(&o, &ToolCall::new("read_log", None), &result);
        assert_eq!(off.response.summary.count, count);
        // jq 1.6 reads every record of the file.
        require_jq();
        let path = off.file.path.display();
        let counted = run_recipe(&format!("tail -n +2 '{path}' | jq -c . | wc -l"));
        assert_eq!(counted.trim(), count.to_string());
        // Every recipe runs under jq 1.6 on the records.
        for recipe in &off.response.jq_recipes {
            run_recipe(&recipe.command);
        }
        assert_rebuilds(&off, &result);
        let rewritten: Value = serde_json::from_str(&off.result).unwrap();
        assert!(
            off.result.len() * 10 < result.to_string().len(),
            "{}",
            off.result.len()
        );
        let content = rewritten["content"].as_array().unwrap();
        assert_eq!(content.len(), 1, "the descriptor alone");
        assert_eq!(content[0]["type"], "text");
        // The descriptor carries the annotations of the block it stands for.
        assert_eq!(content[0]["annotations"], resource["annotations"]);
        as_rmcp(&off.result);
    }
    // A blob resource stays as it is, and small ones are not counted as text.
    let blob = json!({"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA".repeat(50_000)}});
    let result = json!({"content": [blob]});
    match o
        .process(
            &ToolCall::new("read_blob", None),
            result.to_string().as_bytes(),
        )
        .unwrap()
    {
        Outcome::Inline(_) => {}
        other => panic!("a blob is no text: {other:?}"),
    }
}

#[test]
fn kept_blocks_keep_their_order_and_the_descriptor_its_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let audio = json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"});
    let annotations = json!({"audience": ["user", "assistant"], "priority": 0.25});
    let big = serde_json::to_string(&rows(300)).unwrap();
    let result = json!({
        "content": [
            image,
            {"type": "text", "text": big, "annotations": annotations},
            audio,
            {"type": "text", "text": big},
        ],
        "_meta": {"trace": "abc"},
    });
    let off = offload(&o, &ToolCall::new("list_items", None), &result);
    assert_rebuilds(&off, &result);
    let rewritten: Value = serde_json::from_str(&off.result).unwrap();
    let content = rewritten["content"].as_array().unwrap();
    // The image in place, the descriptor where the first text stood (with
    // its annotations), then the audio.
    assert_eq!(content.len(), 3, "{content:?}");
    assert_eq!(content[0], image);
    assert_eq!(content[1]["annotations"], annotations);
    assert!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .contains("\"offloaded\":true")
    );
    assert_eq!(content[2], audio);
    assert_eq!(rewritten["_meta"], json!({"trace": "abc"}));
    let parsed = as_rmcp(&off.result);
    assert_eq!(parsed.content.len(), 3);
    // Without annotations on the source block, the descriptor has none.
    let result = json!({"content": [{"type": "text", "text": big}, image]});
    let off = offload(&o, &ToolCall::new("list_items", None), &result);
    let rewritten: Value = serde_json::from_str(&off.result).unwrap();
    assert!(rewritten["content"][0].get("annotations").is_none());
    assert_eq!(rewritten["content"][1], image);
}

#[test]
fn a_resource_link_to_the_file_follows_the_descriptor_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let result = json!({"content": [{"type": "text", "text": serde_json::to_string(&rows(300)).unwrap()}, image]});
    let mut call = ToolCall::new("list_items", None);
    let off = offload(&o, &call, &result);
    let rewritten: Value = serde_json::from_str(&off.result).unwrap();
    assert_eq!(
        rewritten["content"].as_array().unwrap().len(),
        2,
        "no link unless asked"
    );
    call.resource_link = true;
    let off = offload(&o, &call, &result);
    let rewritten: Value = serde_json::from_str(&off.result).unwrap();
    let content = rewritten["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    let name = off.file.path.file_name().unwrap().to_str().unwrap();
    let size = std::fs::metadata(&off.file.path).unwrap().len();
    let link = &content[1];
    assert_eq!(link["type"], "resource_link");
    assert_eq!(link["uri"], tower_lro::store::resource_uri(name));
    assert_eq!(link["name"], name);
    assert_eq!(link["mimeType"], "application/jsonl");
    assert_eq!(link["size"], size);
    let description = link["description"].as_str().unwrap();
    assert!(
        description.len() < 120 && !description.contains('/'),
        "{description}"
    );
    assert_eq!(
        tower_lro::store::file_name_of_uri(link["uri"].as_str().unwrap()),
        Some(name)
    );
    assert_eq!(content[2], image);
    assert_rebuilds(&off, &result);
    let parsed = as_rmcp(&off.result);
    let link = parsed.content[1]
        .as_resource_link()
        .expect("a resource_link block");
    assert_eq!(link.uri, tower_lro::store::resource_uri(name));
    assert_eq!(link.size, Some(size));
}

/// Line 1 of any file stays under this many bytes.
const HEADER_MAX: usize = 6 << 10;

/// A small deterministic generator (no clock, no global state).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// `json` with whitespace sprinkled between its tokens at random: no style
/// or table describes it.
fn sprinkled(json: &str, seed: u64) -> String {
    let mut rng = Lcg(seed);
    let mut out = String::with_capacity(json.len() * 2);
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
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
        if c == '"' {
            in_string = true;
        } else if matches!(c, ',' | ':' | '[' | '{') {
            out.push_str(["", " ", "  ", "\n", "\t", " \n "][rng.next(6) as usize]);
        }
    }
    out
}

/// Equal as JSON, a text block that holds JSON compared by its JSON (its
/// layout may be given up), or exactly when `exact_text`.
fn same_result(rebuilt: &Value, original: &Value, exact_text: bool) {
    if exact_text {
        assert!(rebuilt == original, "differs: {:.300}", rebuilt.to_string());
        return;
    }
    // A text that holds JSON, or JSON lines, by what it holds.
    let parse = |text: &mut Value| {
        let Some(t) = text.as_str() else { return };
        if let Ok(parsed) = serde_json::from_str::<Value>(t) {
            *text = parsed;
            return;
        }
        let lines: Result<Vec<Value>, _> = t
            .split('\n')
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect();
        if let Ok(lines) = lines {
            *text = Value::Array(lines);
        }
    };
    let parse_texts = |v: &Value| {
        let mut v = v.clone();
        for block in v["content"].as_array_mut().unwrap() {
            if let Some(text) = block.get_mut("text") {
                parse(text);
            }
            if let Some(text) = block.get_mut("resource").and_then(|r| r.get_mut("text")) {
                parse(text);
            }
        }
        v
    };
    // Not assert_eq: the values are large.
    let (a, b) = (parse_texts(rebuilt), parse_texts(original));
    assert!(
        a == b,
        "differs: {:.300} / {:.300}",
        a.to_string(),
        b.to_string()
    );
}

/// Offloads `result`: line 1 is small, and the file with the rewritten
/// result rebuilds it. Returns line 1's length.
fn check_small_header(o: &Offloader, result: &Value, exact_text: bool) -> usize {
    let off = offload(o, &ToolCall::new("shape_tool", None), result);
    check_offloaded(&off, result, exact_text)
}

/// Line 1 of `off`'s file is small, and the file with the rewritten result
/// rebuilds `result`. Returns line 1's length.
fn check_offloaded(off: &Offloaded, result: &Value, exact_text: bool) -> usize {
    let text = std::fs::read_to_string(&off.file.path).unwrap();
    let line1 = text.lines().next().unwrap().len();
    assert!(
        line1 <= HEADER_MAX,
        "line 1 is {line1} bytes of {}",
        text.len()
    );
    let rebuilt = tower_lro::offload::rebuild_with(&text, &off.result).expect("rebuilds");
    same_result(&serde_json::from_str(&rebuilt).unwrap(), result, exact_text);
    as_rmcp(&off.result);
    line1
}

#[test]
fn line_one_stays_small_whatever_the_result_holds() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows_json = serde_json::to_string(&rows(700)).unwrap();
    let image = json!({"type": "image", "data": "iVBO".repeat(40_000), "mimeType": "image/png"});
    let spaced_jsonl: String = rows(700)
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{}{}\n",
                " ".repeat(i % 3),
                sprinkled(&r.to_string(), i as u64)
            )
        })
        .collect();
    let shapes: Vec<(&str, Value, bool)> = vec![
        (
            "irregular whitespace",
            json!({"content": [{"type": "text", "text": sprinkled(&rows_json, 1)}]}),
            false,
        ),
        (
            "regular odd layout",
            json!({"content": [{"type": "text", "text": format!("[ {} ]", rows(700).iter().map(Value::to_string).collect::<Vec<_>>().join(" ,\n"))}]}),
            true,
        ),
        (
            "a large image kept",
            json!({"content": [{"type": "text", "text": rows_json}, image]}),
            true,
        ),
        (
            "images and audio, small and large",
            json!({"content": (0..40).map(|i| if i == 20 { json!({"type": "text", "text": rows_json}) } else { json!({"type": "image", "data": "A".repeat(i * 500), "mimeType": "image/png"}) }).collect::<Vec<_>>()}),
            true,
        ),
        (
            "a large sibling of the records",
            json!({"content": [{"type": "text", "text": json!({"items": rows(700), "notes": "n".repeat(40_000)}).to_string()}]}),
            true,
        ),
        (
            "structured with a large sibling and its text copy",
            {
                let s = json!({"rows": rows(700), "blob": "b".repeat(30_000)});
                json!({"content": [{"type": "text", "text": s.to_string()}], "structuredContent": s})
            },
            true,
        ),
        (
            "a large _meta",
            json!({"content": [{"type": "text", "text": rows_json}], "_meta": {"trace": "t".repeat(50_000)}}),
            true,
        ),
        (
            "a large structuredContent that stays",
            json!({"content": [{"type": "text", "text": rows_json}], "structuredContent": {"a": "s".repeat(30_000), "b": "s".repeat(30_000)}}),
            true,
        ),
        (
            "JSON lines laid out at random",
            json!({"content": [{"type": "text", "text": spaced_jsonl}]}),
            false,
        ),
        (
            "a resource of sprinkled JSON",
            json!({"content": [{"type": "resource", "resource": {"uri": "file:///r.json", "mimeType": "application/json", "text": sprinkled(&rows_json, 7)}}]}),
            false,
        ),
        (
            "leading whitespace",
            json!({"content": [{"type": "text", "text": format!("{}{rows_json}\n", " ".repeat(30_000))}]}),
            false,
        ),
    ];
    for (name, result, exact) in &shapes {
        let line1 = check_small_header(&o, result, *exact);
        println!("{name}: line 1 is {line1} bytes");
    }
}

#[test]
fn a_list_sent_as_one_block_per_element_keeps_line_one_small() {
    // The Python SDK sends a returned list as one text block per element,
    // beside structuredContent.
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    for n in [50, 400, 3000] {
        let items = rows(n);
        let content: Vec<Value> = items
            .iter()
            .map(|r| json!({"type": "text", "text": serde_json::to_string_pretty(r).unwrap()}))
            .collect();
        let result = json!({"content": content, "structuredContent": {"result": items}});
        let line1 = check_small_header(&o, &result, true);
        println!("{n} element blocks: line 1 is {line1} bytes");
    }
}

mod property {
    use super::*;
    use proptest::prelude::*;

    fn json_text() -> impl Strategy<Value = String> {
        (1usize..400, 0u8..5, any::<u64>()).prop_map(|(n, layout, seed)| {
            let v = Value::Array(rows(n));
            match layout {
                0 => v.to_string(),
                1 => serde_json::to_string_pretty(&v).unwrap(),
                2 => sprinkled(&v.to_string(), seed),
                3 => json!({"items": v, "note": "n".repeat(seed as usize % 20_000)}).to_string(),
                _ => rows(n).iter().map(|r| format!("{r}\r\n")).collect(),
            }
        })
    }

    fn block() -> impl Strategy<Value = Value> {
        prop_oneof![
            3 => json_text().prop_map(|t| json!({"type": "text", "text": t})),
            1 => (0usize..3000).prop_map(|n| json!({"type": "text", "text": format!("line {n}\n").repeat(n)})),
            2 => (0usize..60_000).prop_map(|n| json!({"type": "image", "data": "Q".repeat(n), "mimeType": "image/png"})),
            1 => json_text().prop_map(|t| json!({"type": "resource", "resource": {"uri": "file:///r", "text": t}})),
            1 => (0usize..20_000).prop_map(|n| json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "B".repeat(n)}})),
        ]
    }

    fn tool_result() -> impl Strategy<Value = Value> {
        (
            prop::collection::vec(block(), 1..8),
            prop::option::of((1usize..300, 0usize..30_000)),
            prop::option::of(0usize..30_000),
        )
            .prop_map(|(content, structured, meta)| {
                let mut r = json!({"content": content});
                if let Some((n, extra)) = structured {
                    r["structuredContent"] = json!({"rows": rows(n), "extra": "e".repeat(extra)});
                }
                if let Some(m) = meta {
                    r["_meta"] = json!({"m": "m".repeat(m)});
                }
                r
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever the result holds, line 1 of its file stays small, and the
        /// file with the rewritten result rebuilds it.
        #[test]
        fn line_one_is_small_for_any_result(result in tool_result()) {
            let dir = tempfile::tempdir().unwrap();
            let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()).threshold_tokens(100));
            // The outcome checked is the one produced: offloading again under
            // another tool name (in the path and recipes) may make a result
            // near the descriptor's size stay inline.
            if let Outcome::Offloaded(off) = o.process(&ToolCall::new("prop_tool", None), result.to_string().as_bytes()).unwrap() {
                check_offloaded(&off, &result, false);
            }
        }
    }
}

#[test]
fn a_failed_write_keeps_the_large_parts_the_header_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path()).with_store(common::FullDisk(dir.path().into()));
    let image = json!({"type": "image", "data": "iVBO".repeat(20_000), "mimeType": "image/png"});
    let structured = json!({"rows": rows(300), "blob": "b".repeat(30_000)});
    let result = json!({
        "content": [{"type": "text", "text": structured.to_string()}, image],
        "structuredContent": structured,
        "_meta": {"trace": "t".repeat(20_000)},
    });
    let Outcome::Truncated(t) = o
        .process(
            &ToolCall::new("list_items", None),
            result.to_string().as_bytes(),
        )
        .unwrap()
    else {
        panic!("expected the fallback")
    };
    assert!(t.kept < 300);
    let v: Value = serde_json::from_str(&t.result).unwrap();
    let content = v["content"].as_array().unwrap();
    assert!(content[0]["text"].as_str().unwrap().starts_with("Warning:"));
    assert_eq!(content.last().unwrap(), &image, "the image is kept");
    assert_eq!(v["_meta"], result["_meta"]);
    assert_eq!(v["structuredContent"]["blob"], structured["blob"]);
    let kept = v["structuredContent"]["rows"].as_array().unwrap();
    assert_eq!(kept.as_slice(), &rows(300)[..t.kept]);
    as_rmcp(&t.result);
}

/// Texts over a megabyte that may lay out `structuredContent` are told on
/// a second thread while the structured records are taken:
/// whatever the text turns out to be, the file holds every record, the
/// estimate is the text's (or the structured content's, when larger) and
/// the file with the rewritten result rebuilds the result exactly.
#[test]
fn megabyte_texts_that_may_copy_structured_content_are_detected_right() {
    use tower_lro::descriptor::Detail;
    use tower_lro::estimate::{ScriptAwareEstimator, TokenEstimator};
    use tower_lro::fixtures::MemoryGenerator;
    const N: usize = 1500;
    let memories = MemoryGenerator::new(25).memories(N, Detail::Full);
    let structured = json!({"count": memories.len(), "memories": memories});
    let pretty = serde_json::to_string_pretty(&structured).unwrap();
    assert!(pretty.len() > 1 << 20, "{} bytes", pretty.len());
    let with_text = |structured: &Value, text: &str| {
        json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": false,
        })
    };
    // The last record differs in the text only: told at its very end.
    let mut near = structured.clone();
    near["memories"][N - 1]["title"] = json!("changed at the end");
    let near_text = serde_json::to_string_pretty(&near).unwrap();
    // No record array in the structured content: the text is taken apart.
    let no_array = json!({"report": "r".repeat(1 << 20), "rows": 3});
    let no_array_text = serde_json::to_string_pretty(&no_array).unwrap();
    let estimate = |s: &str| ScriptAwareEstimator.estimate(s);
    let cases = [
        ("a copy", with_text(&structured, &pretty), N, &pretty),
        (
            "a copy but for the end",
            with_text(&structured, &near_text),
            2 * N,
            &near_text,
        ),
        (
            "a copy of a structured content with no record array",
            with_text(&no_array, &no_array_text),
            1,
            &no_array_text,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, result, records, text) in &cases {
        for threshold in [1600, estimate(text) - 1] {
            // Under the second threshold the structured content alone
            // stays inline: the texts are told on this thread.
            let o = Offloader::new(
                OffloadConfig::default()
                    .output_dir(dir.path())
                    .threshold_tokens(threshold),
            );
            let off = offload(&o, &ToolCall::new("recall", None), result);
            let structured_tokens = estimate(&result["structuredContent"].to_string());
            assert_eq!(
                off.response.summary.estimated_tokens,
                estimate(text).max(structured_tokens),
                "{name}, threshold {threshold}: the estimate"
            );
            let file = std::fs::read_to_string(&off.file.path).unwrap();
            assert_eq!(
                file.lines().count() - 1,
                *records,
                "{name}, threshold {threshold}: every record"
            );
            let rebuilt = tower_lro::offload::rebuild_with(&file, &off.result).expect("rebuilds");
            let rebuilt: Value = serde_json::from_str(&rebuilt).unwrap();
            assert!(
                &rebuilt == result,
                "{name}, threshold {threshold}: rebuilt exactly"
            );
            // A structured content with a record array leaves the result
            // with its records; one without stays as it is.
            let kept = if *records == 1 {
                no_array.to_string().len()
            } else {
                0
            };
            assert!(
                off.result.len() < kept + 64 * 1024,
                "{name}, threshold {threshold}: no copy left in the result ({} bytes)",
                off.result.len()
            );
        }
    }
}
