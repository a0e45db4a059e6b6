//! The offload engine end to end: real files, real `jq`, exact rebuilds.

use crate::common;

use std::collections::BTreeMap;

use common::{
    FullDisk, check_recipe6, counts_by, descriptor_json, file_header, file_records, json_stream,
    require_jq, run_recipe,
};
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::{Detail, compact_extract_guidance, extract_guidance};
use tower_lro::estimate::{ScriptAwareEstimator, TokenEstimator};
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::{Offloaded, Offloader, Outcome, PassReason, ToolCall, rebuild_file};

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

fn assert_rebuilds(off: &Offloaded, original: &Value) {
    let rebuilt: Value = serde_json::from_str(&rebuild_file(&off.file.path).unwrap()).unwrap();
    assert_eq!(
        &rebuilt, original,
        "rebuilt result differs from the original"
    );
}

const SPEC_RECIPES_1_8: [&str; 8] = [
    "jq -r '[.title, .namespace] | @tsv'",
    "jq 'select(.namespace | startswith(\"_semantic\"))'",
    "jq 'select(.title | test(\"keyword\"; \"i\"))'",
    "jq '{id, title, namespace}'",
    "jq 'select(.memory_type == \"semantic\")'",
    "jq -s 'group_by(.namespace) | map({namespace: .[0].namespace, count: length})'",
    "jq 'select(.tags | index(\"TAG\"))'",
    "jq -s 'sort_by(.created)'",
];

#[test]
fn memory_records_get_the_spec_recipes_at_every_detail() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    for (detail, tool) in [
        (Detail::Light, "recall_memories"),
        (Detail::Medium, "inject_context"),
        (Detail::Full, "recall_memories"),
    ] {
        let memories = MemoryGenerator::new(42).memories(200, detail);
        let result = memory_tool_result(&memories);
        let args = json!({"query": "cache design", "detail": detail.as_str()});
        let off = offload(&o, &ToolCall::new(tool, Some(args)), &result);
        let d = &off.response;
        assert!(d.offloaded);
        assert_eq!(d.summary.count, 200);
        assert_eq!(d.summary.detail, detail);
        assert_eq!(
            d.summary.operation,
            if tool == "recall_memories" {
                "recall"
            } else {
                "inject"
            }
        );
        assert_eq!(d.jq_recipes.len(), 10);
        let file = off.file.path.to_str().unwrap();
        for (n, cmd) in SPEC_RECIPES_1_8.iter().enumerate() {
            assert_eq!(
                d.jq_recipes[n].command,
                format!("tail -n +2 {file} | {cmd}"),
                "recipe {}",
                n + 1
            );
        }
        let (nine, ten) = match detail {
            Detail::Light => (
                "jq -s 'map(.namespace) | unique'",
                "jq -s 'group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})'",
            ),
            Detail::Medium => (
                "jq -s 'sort_by(.confidence) | reverse'",
                "jq 'select(.content | test(\"keyword\"; \"i\"))'",
            ),
            Detail::Full => (
                "jq -s 'sort_by(.provenance.confidence) | reverse'",
                "jq 'select(.content | test(\"keyword\"; \"i\"))'",
            ),
        };
        assert_eq!(
            d.jq_recipes[8].command,
            format!("tail -n +2 {file} | {nine}")
        );
        assert_eq!(
            d.jq_recipes[9].command,
            format!("tail -n +2 {file} | {ten}")
        );
        for r in &d.jq_recipes {
            assert!(!r.command.contains(".score"), "never .score: {}", r.command);
            run_recipe(&r.command);
        }
        // Recipe 6: counts equal the true counts.
        check_recipe6(&d.jq_recipes[5].command, &memories, "engine");
        // Recipe 5: exactly the semantic memories.
        let semantic = json_stream(&run_recipe(&d.jq_recipes[4].command));
        assert_eq!(
            semantic.len(),
            memories
                .iter()
                .filter(|m| m["memory_type"] == "semantic")
                .count()
        );
        // Recipe 9 at full/medium: sorted by confidence descending.
        if detail != Detail::Light {
            let sorted = json_stream(&run_recipe(&d.jq_recipes[8].command));
            let conf: Vec<f64> = sorted[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    if detail == Detail::Full {
                        &m["provenance"]["confidence"]
                    } else {
                        &m["confidence"]
                    }
                    .as_f64()
                    .unwrap()
                })
                .collect();
            assert!(conf.windows(2).all(|w| w[0] >= w[1]));
            assert_eq!(conf.len(), 200);
        }
        // Header, summary and guidance.
        let header = file_header(&off.file.path);
        assert_eq!(header["type"], "lro_header");
        assert_eq!(header["query"], "cache design");
        assert_eq!(header["count"], 200);
        assert_eq!(header["detail"], detail.as_str());
        assert_eq!(header["estimated_tokens"], d.summary.estimated_tokens);
        chrono::DateTime::parse_from_rfc3339(header["timestamp"].as_str().unwrap()).unwrap();
        assert_eq!(file_records(&off.file.path), memories);
        // Extraction is on by default: the spec's lro_extract template,
        // verbatim when the descriptor fits its budget with it, else its
        // compact form (the path named once, in file_path).
        let (count, tokens) = (d.summary.count, d.summary.estimated_tokens);
        let verbatim = extract_guidance(count, tokens, file, detail);
        let compact = compact_extract_guidance(count, tokens, detail);
        assert!(
            d.guidance == verbatim || d.guidance == compact,
            "{}",
            d.guidance
        );
        assert!(verbatim.contains(&format!(
            "- Browse: lro_extract(file_path=\"{file}\", recipe=1)\n"
        )));
        assert!(verbatim.ends_with("9=detail-adaptive, 10=detail-adaptive."));
        assert!(compact.contains("FILE below is the file_path above.\n"));
        assert!(compact.contains("- Browse: lro_extract(file_path=FILE, recipe=1)\n"));
        assert!(!compact.contains(file));
        let estimated = ScriptAwareEstimator.estimate(&serde_json::to_string(d).unwrap());
        assert!(estimated <= 850, "{estimated}");
        let top = &d.summary.top_namespaces;
        assert!(!top.is_empty() && top.len() <= 5);
        let counts = counts_by(&memories, "namespace");
        assert_eq!(counts[&top[0]], *counts.values().max().unwrap());
        if detail == Detail::Light {
            assert_eq!(d.summary.score_range, None);
        } else {
            let (lo, hi) = d.summary.score_range.unwrap();
            assert!(0.5 <= lo && lo <= hi && hi <= 1.0);
        }
        assert!(d.preview.is_empty() || d.preview.starts_with("{\"id\":\"mem_00000_"));
        assert_rebuilds(&off, &result);
        // The rewritten result keeps the structure and empties the record array.
        let mut rewritten: Value = serde_json::from_str(&off.result).unwrap();
        let beside = rewritten["structuredContent"]
            .as_object_mut()
            .and_then(|o| o.shift_remove("offloaded"));
        assert_eq!(
            rewritten["structuredContent"],
            json!({"count": 200, "memories": []})
        );
        assert_eq!(beside.unwrap()["file_path"], json!(d.file_path));
        assert_eq!(rewritten["isError"], false);
        assert_eq!(rewritten["content"].as_array().unwrap().len(), 1);
        assert_eq!(
            descriptor_json(&rewritten),
            serde_json::to_value(d).unwrap()
        );
    }
}

#[test]
fn full_detail_memories_average_about_200_tokens() {
    let memories = MemoryGenerator::new(1).memories(200, Detail::Full);
    let chars: usize = memories.iter().map(|m| m.to_string().chars().count()).sum();
    let avg = chars as f64 / 4.0 / 200.0;
    assert!(
        (170.0..=230.0).contains(&avg),
        "average tokens per full memory: {avg}"
    );
    let light: usize = MemoryGenerator::new(1)
        .memories(200, Detail::Light)
        .iter()
        .map(|m| m.to_string().len())
        .sum();
    assert!(light < chars / 3);
    // Deterministic.
    assert_eq!(
        MemoryGenerator::new(9).memories(5, Detail::Full),
        MemoryGenerator::new(9).memories(5, Detail::Full)
    );
}

#[test]
fn detail_follows_the_records_whatever_the_argument_or_tool_default() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let full = memory_tool_result(&MemoryGenerator::new(3).memories(100, Detail::Full));
    let medium = memory_tool_result(&MemoryGenerator::new(3).memories(150, Detail::Medium));
    let cases = [
        ("recall_memories", None, &full, "full"),
        ("inject_context", None, &full, "full"),
        (
            "recall_memories",
            Some(json!({"detail": "light"})),
            &medium,
            "medium",
        ),
        (
            "recall_memories",
            Some(json!({"detail": "full"})),
            &full,
            "full",
        ),
        ("search_memories", None, &full, "full"),
        ("search_memories", None, &medium, "medium"),
        (
            "other_tool",
            Some(json!({"detail": "bogus"})),
            &medium,
            "medium",
        ),
    ];
    for (tool, args, result, want) in cases {
        let off = offload(&o, &ToolCall::new(tool, args), result);
        assert_eq!(off.response.summary.detail.as_str(), want, "{tool}");
        assert_eq!(off.file.header.detail.as_str(), want);
        assert!(
            off.response
                .guidance
                .contains(&format!("Detail level: {want}\n"))
        );
        // The recipes are the spec's table for that level: recipe 9 sorts
        // by a confidence the records have.
        let nine = &off.response.jq_recipes[8].command;
        match want {
            "full" => assert!(nine.contains("sort_by(.provenance.confidence)"), "{nine}"),
            _ => assert!(nine.contains("sort_by(.confidence)"), "{nine}"),
        }
    }
}

#[test]
fn under_threshold_stays_inline() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let small = memory_tool_result(&MemoryGenerator::new(3).memories(3, Detail::Full));
    let bytes = small.to_string();
    match o
        .process(&ToolCall::new("recall_memories", None), bytes.as_bytes())
        .unwrap()
    {
        Outcome::Inline(PassReason::UnderThreshold { estimated_tokens }) => {
            assert!(estimated_tokens <= 1600)
        }
        other => panic!("{other:?}"),
    }
    // Exactly at the threshold: inline; one token more: offloaded.
    let at = json!({"content": [{"type": "text", "text": "a\n".repeat(3200)}]});
    let o2 = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    assert!(matches!(
        o2.process(&ToolCall::default(), at.to_string().as_bytes())
            .unwrap(),
        Outcome::Inline(PassReason::UnderThreshold {
            estimated_tokens: 1600
        })
    ));
    let over = json!({"content": [{"type": "text", "text": format!("{}ab", "a\n".repeat(3200))}]});
    assert!(matches!(
        o2.process(&ToolCall::default(), over.to_string().as_bytes())
            .unwrap(),
        Outcome::Offloaded(_)
    ));
    // Disabled.
    let off = Offloader::new(
        OffloadConfig::default()
            .enabled(false)
            .output_dir(dir.path()),
    );
    assert!(matches!(
        off.process(&ToolCall::default(), over.to_string().as_bytes())
            .unwrap(),
        Outcome::Inline(PassReason::Disabled)
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn generic_records_get_recipes_from_their_own_fields() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let levels = ["info", "warn", "error", "info", "debug"];
    let rows: Vec<Value> = (0..400)
        .map(|i| {
            let service = ["api", "worker", "db"][i % 3];
            let status = [200, 404, 500][i % 3];
            json!({
                "ts": format!("2026-11-{:02}T10:{:02}:00Z", i % 28 + 1, i % 60),
                "level": levels[i % 5],
                "service": service,
                "message": format!("request {i} finished with status {status}"),
                "latency_ms": (i * 7) % 250,
                "odd key": i % 2 == 0,
            })
        })
        .collect();
    let result = json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&rows).unwrap()}]});
    let off = offload(
        &o,
        &ToolCall::new("query_logs", Some(json!({"query": "status"}))),
        &result,
    );
    let d = &off.response;
    assert_eq!(d.summary.operation, "query_logs");
    assert_eq!(d.summary.top_namespaces[0], "info");
    assert_eq!(d.jq_recipes.len(), 10);
    let descriptions: Vec<&str> = d
        .jq_recipes
        .iter()
        .map(|r| r.description.as_str())
        .collect();
    for r in &d.jq_recipes {
        run_recipe(&r.command);
        assert!(
            !r.command.contains("memory_type") && !r.command.contains(".namespace"),
            "{}",
            r.command
        );
    }
    // The category filter returns exactly the records with that value.
    let filter = d
        .jq_recipes
        .iter()
        .find(|r| r.description.starts_with("Filter by level"))
        .unwrap_or_else(|| panic!("{descriptions:?}"));
    assert_eq!(
        json_stream(&run_recipe(&filter.command)).len(),
        rows.iter().filter(|r| r["level"] == "info").count()
    );
    let count = d
        .jq_recipes
        .iter()
        .find(|r| r.description == "Count by level")
        .unwrap();
    let got = &json_stream(&run_recipe(&count.command))[0];
    let got: BTreeMap<String, usize> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["level"].as_str().unwrap().into(),
                e["count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(got, counts_by(&rows, "level"));
    let stats = d
        .jq_recipes
        .iter()
        .find(|r| r.description.starts_with("Min, max and mean of latency_ms"))
        .unwrap();
    let s = &json_stream(&run_recipe(&stats.command))[0];
    assert_eq!(s["max"], 249);
    assert_eq!(s["min"], 0);
    assert!(d.guidance.contains("(400 records,"));
    assert!(d.guidance.contains("Use the `lro_extract` tool"));
    assert!(d.guidance.contains("- Filter: lro_extract(file_path="));
    assert!(
        d.guidance.contains("Available recipes: 1=")
            || d.guidance
                .ends_with("recipe=N runs the Nth of the jq_recipes above.")
    );
    assert_eq!(d.line_schema["properties"]["odd key"]["type"], "boolean");
    assert_eq!(d.line_schema["properties"]["latency_ms"]["type"], "integer");
    assert_rebuilds(&off, &result);
}

#[test]
fn plain_text_and_jsonl_become_line_records() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let log: String = (0..1500)
        .map(|i| {
            let level = ["INFO", "ERROR"][i % 2];
            format!(
                "2026-11-21 10:00:{:02} {level} worker-{} handled job {i}\n",
                i % 60,
                i % 4
            )
        })
        .collect();
    let result = json!({"content": [{"type": "text", "text": log}], "_meta": {"trace": "abc"}});
    let off = offload(&o, &ToolCall::new("tail_logs", None), &result);
    let recs = file_records(&off.file.path);
    assert_eq!(recs.len(), 1500);
    assert_eq!(
        recs[0],
        json!({"line": 1, "text": "2026-11-21 10:00:00 INFO worker-0 handled job 0"})
    );
    for r in &off.response.jq_recipes {
        run_recipe(&r.command);
    }
    let count = off
        .response
        .jq_recipes
        .iter()
        .find(|r| r.description.starts_with("Count lines containing"))
        .unwrap();
    let word = count.description.split('"').nth(1).unwrap().to_owned();
    let expected = log
        .lines()
        .filter(|l| l.to_lowercase().contains(&word))
        .count();
    assert_eq!(run_recipe(&count.command).trim(), expected.to_string());
    assert_rebuilds(&off, &result);
    let rewritten: Value = serde_json::from_str(&off.result).unwrap();
    assert_eq!(rewritten["_meta"], json!({"trace": "abc"}));

    // JSONL text.
    let jsonl: String = (0..600)
        .map(|i| {
            let kind = ["a", "b"][i % 2];
            format!("{{\"n\":{i},\"kind\":\"{kind}\"}}\n")
        })
        .collect();
    let result = json!({"content": [{"type": "text", "text": jsonl}]});
    let off = offload(&o, &ToolCall::new("export", None), &result);
    assert_eq!(file_records(&off.file.path).len(), 600);
    for r in &off.response.jq_recipes {
        run_recipe(&r.command);
    }
    assert_rebuilds(&off, &result);
}

#[test]
fn layouts_blocks_and_fields_survive_the_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows: Vec<Value> = (0..300).map(|i| json!({"id": i, "name": format!("item {i}"), "big": 123456789012345678901234567890u128.to_string()})).collect();
    let spaced = rows
        .iter()
        .map(|r| r.to_string().replace(",\"", ", \"").replace("\":", "\": "))
        .collect::<Vec<_>>()
        .join(", ");
    let texts = [
        serde_json::to_string(&rows).unwrap(),
        serde_json::to_string_pretty(&rows).unwrap(),
        format!("[{spaced}]"),
        format!(
            "\n  {}  \n",
            serde_json::to_string(&json!({"total": 300, "items": rows})).unwrap()
        ),
        format!(
            "[ {} ]",
            rows.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" ,\n")
        ),
    ];
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    for text in texts {
        let result = json!({
            "content": [{"type": "text", "text": "Found 300 items:"}, image, {"type": "text", "text": text, "annotations": {"priority": 0.5}}],
            "isError": false,
            "_meta": {"progressToken": 7},
            "resultType": "complete",
        });
        let off = offload(&o, &ToolCall::new("list_items", None), &result);
        assert_eq!(off.response.summary.count, 300);
        assert_rebuilds(&off, &result);
        let rewritten: Value = serde_json::from_str(&off.result).unwrap();
        let content = rewritten["content"].as_array().unwrap();
        // The blocks keep their order; the descriptor stands where the
        // offloaded text stood, with its annotations.
        assert_eq!(
            content.len(),
            3,
            "the short text, the image, the descriptor"
        );
        assert_eq!(
            content[0],
            json!({"type": "text", "text": "Found 300 items:"})
        );
        assert_eq!(content[1], image);
        let d: tower_lro::descriptor::OffloadResponse =
            serde_json::from_str(content[2]["text"].as_str().unwrap()).unwrap();
        assert_eq!(d.summary.count, 300);
        assert_eq!(content[2]["annotations"], json!({"priority": 0.5}));
        assert_eq!(rewritten["_meta"], json!({"progressToken": 7}));
        assert_eq!(rewritten["resultType"], "complete");
        assert_eq!(rewritten["isError"], false);
    }
    // Raw literals are kept: a number beyond f64 in the records.
    let raw = format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":\"[{}]\"}}]}}",
        (0..2000)
            .map(|i| format!("{{\\\"n\\\":1{i:030}}}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let off = match o
        .process(&ToolCall::new("nums", None), raw.as_bytes())
        .unwrap()
    {
        Outcome::Offloaded(off) => off,
        other => panic!("{other:?}"),
    };
    let line2 = std::fs::read_to_string(&off.file.path)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_owned();
    assert_eq!(line2, format!("{{\"n\":1{:030}}}", 0));
    assert_eq!(rebuild_file(&off.file.path).unwrap(), raw);
}

#[test]
fn is_error_results_stay_inline_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let mut result = memory_tool_result(&MemoryGenerator::new(5).memories(200, Detail::Full));
    result["isError"] = json!(true);
    assert!(matches!(
        o.process(
            &ToolCall::new("recall_memories", None),
            result.to_string().as_bytes()
        )
        .unwrap(),
        Outcome::Inline(PassReason::IsError)
    ));
    let o = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .offload_errors(true),
    );
    let off = offload(&o, &ToolCall::new("recall_memories", None), &result);
    assert_eq!(
        serde_json::from_str::<Value>(&off.result).unwrap()["isError"],
        true
    );
}

#[cfg(unix)]
#[test]
fn files_are_private_and_named_by_operation() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lro");
    let o = offloader(&out);
    let result = memory_tool_result(&MemoryGenerator::new(5).memories(200, Detail::Light));
    for (tool, op) in [
        ("recall_memories", "recall"),
        ("list_memories", "list"),
        ("inject_context", "inject"),
        ("search", "search"),
        ("search_code", "search"),
        ("Fetch-Page/../../etc", "fetch_page_______etc"),
    ] {
        let off = offload(&o, &ToolCall::new(tool, None), &result);
        let name = off
            .file
            .path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            name.starts_with(&format!("atlatl-{op}-")) && name.ends_with(".jsonl"),
            "{name}"
        );
        assert_eq!(off.file.path.parent().unwrap(), out);
        assert_eq!(
            std::fs::metadata(&off.file.path)
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        assert_eq!(off.file.header.operation, op);
        assert_eq!(off.file.ttl, std::time::Duration::from_secs(3600));
    }
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn write_failure_truncates_inline_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(8).memories(200, Detail::Full);
    let result = memory_tool_result(&memories);
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"").unwrap();
    let stores: Vec<Offloader> = vec![
        offloader(&blocker.join("sub")),
        offloader(dir.path()).with_store(FullDisk(dir.path().into())),
    ];
    for o in stores {
        let t = match o
            .process(
                &ToolCall::new("recall_memories", None),
                result.to_string().as_bytes(),
            )
            .unwrap()
        {
            Outcome::Truncated(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(t.total, 200);
        assert!(t.kept > 0 && t.kept < 200, "kept {}", t.kept);
        let v: Value = serde_json::from_str(&t.result).unwrap();
        let warning = v["content"][0]["text"].as_str().unwrap();
        assert!(
            warning.starts_with("Warning: large result offloading (LRO) failed"),
            "{warning}"
        );
        assert!(warning.contains(&format!("{} of 200 records", t.kept)));
        // The client reads a plain sentence: no server path, no OS error
        // (those are in the OffloadWriteFailed event and the log).
        let dir_name = dir.path().to_string_lossy();
        assert!(!warning.contains(dir_name.as_ref()), "{warning}");
        assert!(
            !warning.contains("os error") && !warning.contains('/'),
            "{warning}"
        );
        assert!(!t.error.to_string().is_empty());
        let kept = v["structuredContent"]["memories"].as_array().unwrap();
        assert_eq!(kept.as_slice(), &memories[..t.kept]);
        let text: Value = serde_json::from_str(v["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text["memories"].as_array().unwrap().as_slice(),
            &memories[..t.kept]
        );
        let tokens = tower_lro::estimate::ScriptAwareEstimator;
        use tower_lro::estimate::TokenEstimator;
        let inline_tokens = tokens.estimate(v["content"][1]["text"].as_str().unwrap());
        assert!(
            inline_tokens <= 1600,
            "truncated text is {inline_tokens} tokens"
        );
    }
}

#[test]
fn bad_input_is_a_typed_error_or_inline() {
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .threshold_tokens(1),
    );
    let call = ToolCall::new("t", None);
    let deep = format!("{{\"content\":{}{}}}", "[".repeat(5000), "]".repeat(5000));
    let cases: Vec<Vec<u8>> = vec![
        b"not json at all, but long enough to be parsed".to_vec(),
        vec![
            0xff, 0xfe, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
        ],
        b"[1,2,3,4,5,6,7,8,9,10,11,12]".to_vec(),
        b"{\"content\": \"not an array of blocks\"}".to_vec(),
        b"{\"content\": [1, 2, 3], \"x\": 1}".to_vec(),
        b"{\"content\": [{\"type\": \"text\"}], \"x\": 1}".to_vec(),
        b"{\"task\": {\"taskId\": \"abc\", \"status\": \"working\"}}".to_vec(),
        deep.into_bytes(),
        b"{\"content\": [{\"type\": \"text\", \"text\": \"[1e999999, 2]\"}]}".to_vec(),
        b"{\"content\": [], \"structuredContent\": {\"a\": 1}, \"pad\": \"xxxxxxxxxxxxxxxxxxxx\"}"
            .to_vec(),
    ];
    for bytes in cases {
        match o.process(&call, &bytes) {
            Err(_) | Ok(Outcome::Inline(_)) => {}
            Ok(Outcome::Offloaded(off)) => {
                // Only valid results may be offloaded, and then losslessly.
                let original: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(
                    serde_json::from_str::<Value>(&rebuild_file(&off.file.path).unwrap()).unwrap(),
                    original
                );
            }
            Ok(Outcome::Truncated(t)) => panic!("unexpected truncation: {}", t.error),
        }
    }
}

/// Rows as the Python SDK's tools return them.
fn python_rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let service = ["api", "db", "cache"][i % 3];
            json!({"id": i, "service": service, "latency_ms": (i * 37) % 500, "message": format!("request {i} handled")})
        })
        .collect()
}

#[test]
fn python_sdk_str_result_keeps_no_second_copy_in_structured_content() {
    // A FastMCP/MCPServer tool returning `str`: the text, and
    // structuredContent {"result": <the same text>}.
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string_pretty(&python_rows(300)).unwrap();
    let result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": text},
        "isError": false
    });
    let o = offloader(dir.path());
    let off = offload(&o, &ToolCall::new("records", None), &result);
    assert_eq!(off.response.summary.count, 300);
    let v: Value = serde_json::from_str(&off.result).unwrap();
    let descriptor = v["content"][0]["text"].as_str().unwrap();
    assert_eq!(v["content"].as_array().unwrap().len(), 1);
    // The string field holds the descriptor too, still a string: a client
    // that shows structuredContent (Claude Code) reads it there.
    let said = v["structuredContent"]["result"].as_str().unwrap();
    assert_eq!(said, descriptor);
    assert_eq!(v["isError"], json!(false));
    assert!(
        off.result.len() * 4 < result.to_string().len(),
        "{} bytes out of {}",
        off.result.len(),
        result.to_string().len()
    );
    assert_rebuilds(&off, &result);
}

#[test]
fn python_sdk_list_result_drops_the_per_item_text_blocks() {
    // A tool returning list[dict]: one text block per item, and
    // structuredContent {"result": [...]}.
    let dir = tempfile::tempdir().unwrap();
    let rows = python_rows(300);
    let blocks: Vec<Value> = rows
        .iter()
        .map(|r| json!({"type": "text", "text": serde_json::to_string_pretty(r).unwrap()}))
        .collect();
    let result =
        json!({"content": blocks, "structuredContent": {"result": rows}, "isError": false});
    let o = offloader(dir.path());
    let off = offload(&o, &ToolCall::new("records_list", None), &result);
    assert_eq!(off.response.summary.count, 300);
    let v: Value = serde_json::from_str(&off.result).unwrap();
    assert_eq!(
        v["content"].as_array().unwrap().len(),
        1,
        "only the descriptor"
    );
    let mut structured = v["structuredContent"].clone();
    let beside = structured
        .as_object_mut()
        .unwrap()
        .shift_remove("offloaded");
    assert_eq!(structured, json!({"result": []}));
    assert_eq!(beside.unwrap()["summary"]["count"], 300);
    assert_eq!(
        v["structuredContent"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap(),
        "offloaded",
        "the descriptor is read before the emptied array"
    );
    assert!(off.result.len() * 4 < result.to_string().len());
    assert_rebuilds(&off, &result);
    assert_eq!(file_records(&off.file.path), rows);

    // When the write fails, the truncated result keeps the blocks of the
    // records it keeps, and no empty stand-ins for the others.
    let full = offloader(dir.path()).with_store(FullDisk(dir.path().into()));
    let Outcome::Truncated(t) = full
        .process(
            &ToolCall::new("records_list", None),
            result.to_string().as_bytes(),
        )
        .unwrap()
    else {
        panic!("expected the fallback")
    };
    let v: Value = serde_json::from_str(&t.result).unwrap();
    let content = v["content"].as_array().unwrap();
    assert_eq!(
        content.len(),
        t.kept + 1,
        "warning + one block per kept record"
    );
    for (n, block) in content[1..].iter().enumerate() {
        let row: Value = serde_json::from_str(block["text"].as_str().unwrap()).unwrap();
        assert_eq!(row, rows[n]);
    }
    assert_eq!(
        v["structuredContent"]["result"].as_array().unwrap().len(),
        t.kept
    );
}

/// `structuredContent` is never shown emptied as if it were the data: when
/// its records are offloaded, the descriptor is added to it (member
/// `offloaded`) for a tool with no output schema or an open one, and the
/// file still rebuilds the original exactly (from the file and the
/// rewritten result, also when the header leaves the text around the array
/// and `_meta` to it). A closed schema keeps the result inline.
#[test]
fn structured_content_carries_the_descriptor_or_stays_whole() {
    use tower_lro::offload::OutputSchema;
    let dir = tempfile::tempdir().unwrap();
    let o = offloader(dir.path());
    let rows: Vec<Value> = (0..300)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "kind": (["a", "b"][i % 2])}))
        .collect();
    let big = "x".repeat(3000);
    let results = [
        json!({"content": [{"type": "text", "text": "rows"}], "structuredContent": {"total": 300, "rows": rows}}),
        // Large parts around the array and in _meta: left to the rewritten result.
        json!({"content": [], "structuredContent": {"rows": rows, "note": big}, "_meta": {"trace": big}}),
    ];
    for result in &results {
        for declared in [
            None,
            Some(OutputSchema::Undeclared),
            Some(OutputSchema::Open),
        ] {
            let mut call = ToolCall::new("rows", None);
            call.output_schema = declared;
            let off = offload(&o, &call, result);
            let v: Value = serde_json::from_str(&off.result).unwrap();
            let d = &off.response;
            let structured = &v["structuredContent"];
            assert_eq!(structured["rows"], json!([]), "{declared:?}");
            // The whole descriptor beside the emptied array, and in the text block.
            let beside: tower_lro::descriptor::OffloadResponse =
                serde_json::from_value(structured["offloaded"].clone()).unwrap();
            assert_eq!(beside.file_path, d.file_path);
            assert_eq!(beside.summary.count, 300);
            assert_eq!(beside.jq_recipes.len(), 10);
            assert!(
                v.get("_meta")
                    .is_none_or(|m| m.get("lro/offloaded").is_none())
            );
            assert_eq!(off.result.matches("jq_recipes").count(), 2, "{declared:?}");
            let file = std::fs::read_to_string(&off.file.path).unwrap();
            let rebuilt: Value = serde_json::from_str(
                &tower_lro::offload::rebuild_with(&file, &off.result).unwrap(),
            )
            .unwrap();
            assert_eq!(&rebuilt, result, "{declared:?}: rebuilt");
        }
        {
            let declared = Some(OutputSchema::Closed);
            let mut call = ToolCall::new("rows", None);
            call.output_schema = declared;
            let out = o.process(&call, result.to_string().as_bytes()).unwrap();
            assert!(
                matches!(out, Outcome::Inline(PassReason::StructuredSchemaClosed)),
                "{declared:?}: {out:?}"
            );
        }
    }
}
