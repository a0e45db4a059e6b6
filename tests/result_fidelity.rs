//! What the file and the rewritten result keep (issue 14, points 3, 8, 9
//! and 10): the header's query under other argument names, a zero TTL, the
//! text of embedded resources, kept blocks and annotations, a small header
//! line for any input, and the `resource_link` to the file.

mod common;

use serde_json::{Value, json};
use tower_lro::{
    Custodian, OffloadConfig, Offloaded, Offloader, Outcome, RebuildError, ToolCall, rebuild_file,
};

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
