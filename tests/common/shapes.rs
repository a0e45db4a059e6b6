//! Tool results of every record kind the recipes know: memories at three
//! detail levels, generic objects, scalars, log lines, grouped short
//! lines, a directory tree, one large object, one long line, a paged
//! result. Deterministic.

use serde_json::{Value, json};
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::ToolCall;

/// One case: its name, the call and the result.
pub(crate) struct Case {
    pub name: &'static str,
    pub call: ToolCall,
    pub result: Value,
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// Every case.
pub(crate) fn all() -> Vec<Case> {
    let mut cases = memories();
    cases.extend([
        Case {
            name: "generic objects",
            call: ToolCall::new("query_logs", None),
            result: text(&serde_json::to_string(&log_rows(400)).unwrap()),
        },
        Case {
            name: "scalars",
            call: ToolCall::new("list_values", None),
            result: text(&serde_json::to_string(&scalars(600)).unwrap()),
        },
        Case {
            name: "lines",
            call: ToolCall::new("tail_logs", None),
            result: text(&log_text(1500)),
        },
        Case {
            name: "line groups",
            call: ToolCall::new("tail", None),
            result: text(&short_lines(30_000)),
        },
        Case {
            name: "tree",
            call: ToolCall::new("list_dir", None),
            result: json!({"content": [], "structuredContent": tree()}),
        },
        Case {
            name: "large object",
            call: ToolCall::new("get_env", None),
            result: text(&environment(300).to_string()),
        },
        Case {
            name: "long line",
            call: ToolCall::new("read_page", None),
            result: text(&long_line(9000)),
        },
        Case {
            name: "paged",
            call: ToolCall::new("list_items", None),
            result: paged(300, 900),
        },
    ]);
    cases
}

/// Memories at each detail level, with the tool of that level.
pub(crate) fn memories() -> Vec<Case> {
    [
        ("memories light", Detail::Light, "recall_memories"),
        ("memories medium", Detail::Medium, "inject_context"),
        ("memories full", Detail::Full, "recall_memories"),
    ]
    .into_iter()
    .map(|(name, detail, tool)| Case {
        name,
        call: ToolCall::new(tool, Some(json!({"detail": detail.as_str()}))),
        result: memory_tool_result(&MemoryGenerator::new(7).memories(120, detail)),
    })
    .collect()
}

/// Log rows: a category (`level`), a service, a text, a number and a date.
pub(crate) fn log_rows(n: usize) -> Vec<Value> {
    let levels = ["info", "warn", "error", "info", "debug"];
    (0..n)
        .map(|i| {
            json!({
                "id": format!("req-{i}"),
                "ts": format!("2026-11-{:02}T10:{:02}:00Z", i % 28 + 1, i % 60),
                "level": (levels[i % 5]),
                "service": (["api", "worker", "db"][i % 3]),
                "message": format!("request {i} {} with status {}", ["finished", "retried", "failed"][i % 3], [200, 404, 500][i % 3]),
                "latency_ms": (i * 7) % 250,
            })
        })
        .collect()
}

fn scalars(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match i % 3 {
            0 => json!(format!("alpha {} value", ["red", "green", "blue"][i % 3])),
            1 => json!(i as f64 / 4.0),
            _ => json!(format!("beta item {}", i % 17)),
        })
        .collect()
}

/// Plain log text.
pub(crate) fn log_text(n: usize) -> String {
    (0..n)
        .map(|i| {
            let level = ["INFO", "ERROR", "INFO", "WARN"][i % 4];
            format!(
                "2026-11-21 10:00:{:02} {level} worker-{} handled job {i}\n",
                i % 60,
                i % 4
            )
        })
        .collect()
}

fn short_lines(n: usize) -> String {
    let words = ["fail", "ok", "go", "", "fail", "warn"];
    (0..n)
        .map(|i| format!("{}\n", words[i % words.len()]))
        .collect()
}

/// A directory tree of about 3,000 nodes: 10 top directories, each of
/// subdirectories holding files.
pub(crate) fn tree() -> Value {
    let file = |d: usize, s: usize, f: usize| json!({"name": format!("{}_{s}_{f}.rs", ["main", "parser", "cache", "router", "store"][f % 5]), "type": "file", "size": (d * 31 + s * 7 + f * 13) % 5000});
    let sub = |d: usize, s: usize| json!({"name": format!("module{s}"), "type": "dir", "children": (0..29).map(|f| file(d, s, f)).collect::<Vec<_>>()});
    let top: Vec<Value> = (0..10)
        .map(|d| json!({"name": format!("crate{d}"), "type": "dir", "children": (0..10).map(|s| sub(d, s)).collect::<Vec<_>>()}))
        .collect();
    json!({"name": "root", "children": top})
}

/// An environment of `n` variables.
pub(crate) fn environment(n: usize) -> Value {
    let mut env = serde_json::Map::new();
    env.insert("HOME".into(), json!("/home/worker"));
    env.insert("PATH".into(), json!("/usr/local/bin:/usr/bin:/bin"));
    for i in 0..n.saturating_sub(2) {
        let value = format!(
            "{}-{}",
            ["service", "region", "token", "cache"][i % 4],
            "x".repeat(i % 40)
        );
        env.insert(format!("APP_SETTING_{i}"), json!(value));
    }
    Value::Object(env)
}

/// One line of `words` words of prose.
pub(crate) fn long_line(words: usize) -> String {
    let vocab = [
        "the", "cache", "layer", "stores", "results", "before", "serving", "requests", "and",
        "the", "router", "forwards", "traffic", "between", "regions",
    ];
    let mut s = String::new();
    for i in 0..words {
        s.push_str(vocab[(i * 7 + i / 3) % vocab.len()]);
        s.push(if i % 12 == 11 { '.' } else { ' ' });
        if i % 12 == 11 {
            s.push(' ');
        }
    }
    s
}

/// A page of `n` items out of `total`, with a cursor.
pub(crate) fn paged(n: usize, total: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "kind": (["book", "film"][i % 2])}))
        .collect();
    json!({
        "content": [],
        "structuredContent": {"items": items, "nextCursor": "page-2-token", "total": total}
    })
}
