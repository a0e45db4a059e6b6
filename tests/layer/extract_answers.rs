//! `lro_extract` as a remote, shell-less agent meets it, through the real layer in front of a real rmcp server, with a
//! real rmcp client, over loopback: an input schema every client can use
//! (one type per property; numbers and `params` also accepted as strings,
//! as the MCP Inspector CLI and models send them), and answers a model can
//! afford (compact values, one per line; a page always ends on a whole
//! value; all pages together are exactly `jq -c`'s output, run with the
//! real jq).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::mcp::{Mode, mcp_service, serve_mcp};
use common::{checked_descriptor, require_jq, run_recipe};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadResponse;
use tower_lro::offload::OffloadLayer;

type Client = RunningService<rmcp::RoleClient, ClientConfig>;

/// Pages one walk follows at most.
const MAX_PAGES: usize = 400;

async fn connect(addr: SocketAddr) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("lro-answers-test", "1.0"),
    );
    tokio::time::timeout(Duration::from_secs(30), info.serve(transport))
        .await
        .expect("connects in time")
        .expect("connects")
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("tool call in time")
        .expect("tool call succeeds")
}

fn texts(result: &CallToolResult) -> Vec<String> {
    let v = serde_json::to_value(result).unwrap();
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The quickstart's setup: the memory server behind a layer with a
/// threshold of `threshold` tokens, a client, and the descriptor of
/// `recall_memories` for 200 full-detail memories.
async fn quickstart(dir: &std::path::Path, threshold: usize) -> (Client, OffloadResponse) {
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .threshold_tokens(threshold)
            .output_dir(dir),
    );
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let client = connect(addr).await;
    let args = json!({"query": "cache design", "count": 200, "detail": "full"});
    let large = call(&client, "recall_memories", args).await;
    let d = checked_descriptor(&large, "quickstart");
    (client, d)
}

/// One page of a walk: its text blocks.
struct Walked {
    pages: Vec<Vec<String>>,
}

/// Every page of `args` from `offset`, following the trailers' `offset=`.
async fn walk(client: &Client, args: &Value, offset: u64) -> Walked {
    let mut pages = Vec::new();
    let mut offset = offset;
    for _ in 0..MAX_PAGES {
        let mut a = args.clone();
        a["offset"] = json!(offset);
        let r = call(client, "lro_extract", a).await;
        assert!(!is_error(&r), "{args}: {:?}", texts(&r));
        let t = texts(&r);
        let next = t
            .get(1)
            .and_then(|trailer| trailer.split("offset=").nth(1))
            .map(|n| n.trim_end_matches('.').parse::<u64>().expect("a number"));
        pages.push(t);
        match next {
            Some(n) => {
                assert!(n > offset, "the next offset moves on: {n} after {offset}");
                offset = n;
            }
            None => return Walked { pages },
        }
    }
    panic!("{args}: more than {MAX_PAGES} pages");
}

/// Exact o200k tokens of `text`.
fn o200k(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

/// Tokens per page of the quickstart's three questions over `lro_extract`
/// (recipe 1, recipe 2 with the first namespace, a custom query), every
/// page of each. Prints the figures; asserts nothing about them.
/// `cargo test --test extract_answers -- --ignored --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints tokens per page"]
async fn measure_tokens_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let (client, d) = quickstart(dir.path(), 1600).await;
    let ns = d.summary.top_namespaces.first().cloned().unwrap();
    let asks = [
        ("recipe 1", json!({"file_path": d.file_path, "recipe": 1})),
        (
            "recipe 2 (namespace)",
            json!({"file_path": d.file_path, "recipe": 2, "params": {"namespace": ns}}),
        ),
        (
            "custom query",
            json!({"file_path": d.file_path,
                   "query": "select(.provenance.confidence > 0.9) | {id, title}"}),
        ),
    ];
    for (name, args) in asks {
        let w = walk(&client, &args, 0).await;
        let page_tokens: Vec<usize> = w.pages.iter().map(|p| o200k(&p.concat())).collect();
        let lines: usize = w.pages.iter().map(|p| p[0].lines().count()).sum();
        let chars: usize = w.pages.iter().map(|p| p[0].len()).sum();
        let total: usize = page_tokens.iter().sum();
        println!(
            "{name}: {} page(s), {lines} lines, {chars} bytes of output, o200k tokens {total} in all, \
             {} per page on average, pages {page_tokens:?}",
            w.pages.len(),
            total / w.pages.len().max(1)
        );
    }
    let _ = client.cancel().await;
}

/// Every `type` in `schema`, at any depth, with its JSON pointer.
fn types(schema: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "type" {
                    out.push((at.to_owned(), v.clone()));
                }
                types(v, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                types(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The layer's tools as a client lists them: one type per property
/// (no `["integer", "null"]`), only `file_path` required.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_schemas_have_one_type_per_property() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let addr = serve_mcp(mcp_service(Mode::StatefulSse), Some(layer)).await;
    let client = connect(addr).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut seen = Vec::new();
    for tool in tools.iter().filter(|t| t.name.starts_with("lro_")) {
        seen.push(tool.name.to_string());
        let schema = serde_json::to_value(&tool.input_schema).unwrap();
        let mut found = Vec::new();
        types(&schema, "", &mut found);
        assert!(!found.is_empty(), "{}: {schema}", tool.name);
        for (at, t) in &found {
            assert!(t.is_string(), "{}: type at {at:?} is {t}", tool.name);
        }
        if tool.name == "lro_extract" {
            assert_eq!(schema["required"], json!(["file_path"]), "{schema}");
            for p in ["recipe", "query", "params", "offset", "limit", "slurp"] {
                assert!(schema["properties"][p].is_object(), "{p}: {schema}");
            }
        }
    }
    seen.sort();
    assert_eq!(seen, ["lro_extract", "lro_list"]);
    let _ = client.cancel().await;
}

/// What the MCP Inspector CLI (0.15) and models send: numbers as strings,
/// `params` as JSON text. Answered as the typed arguments are; strings that
/// are not what they should be get the typed refusal, saying what was got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_and_params_as_strings() {
    let dir = tempfile::tempdir().unwrap();
    let (client, d) = quickstart(dir.path(), 1600).await;
    let file = &d.file_path;
    let ns = d.summary.top_namespaces[0].clone();
    let same = [
        (
            json!({"file_path": file, "recipe": "4", "offset": "10", "limit": "5"}),
            json!({"file_path": file, "recipe": 4, "offset": 10, "limit": 5}),
        ),
        (
            json!({"file_path": file, "recipe": "2",
                   "params": json!({"namespace": ns}).to_string()}),
            json!({"file_path": file, "recipe": 2, "params": {"namespace": ns}}),
        ),
        (
            json!({"file_path": file, "query": ".id", "offset": " 3", "limit": "2"}),
            json!({"file_path": file, "query": ".id", "offset": 3, "limit": 2}),
        ),
    ];
    for (strings, typed) in same {
        let a = call(&client, "lro_extract", strings.clone()).await;
        let b = call(&client, "lro_extract", typed).await;
        assert!(!is_error(&a), "{strings}: {:?}", texts(&a));
        assert_eq!(texts(&a), texts(&b), "{strings}");
        assert!(!texts(&a)[0].is_empty(), "{strings}");
    }
    let page = texts(
        &call(
            &client,
            "lro_extract",
            json!({"file_path": file, "recipe": "4", "offset": "10", "limit": "5"}),
        )
        .await,
    );
    assert_eq!(page[0].lines().count(), 5, "{page:?}");
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": file, "recipe": 2, "params": "{\"namespace\":\"x\"}"}),
    )
    .await;
    assert!(!is_error(&r), "{:?}", texts(&r));
    assert!(texts(&r)[1].contains("printed nothing"), "{:?}", texts(&r));
    let refused = [
        (
            json!({"recipe": "four"}),
            "recipe must be an integer from 1 to 10, got \"four\"",
        ),
        (
            json!({"recipe": 2, "params": "{not json"}),
            "params must be an object, or a JSON string holding one",
        ),
        (json!({"recipe": 2, "params": "{not json"}), "(not JSON)"),
        (
            json!({"recipe": 2, "params": "[1]"}),
            "got the string \"[1]\" (JSON an array, not an object)",
        ),
        (
            json!({"recipe": 2, "offset": "ten"}),
            "offset must be a non-negative integer",
        ),
        (
            json!({"recipe": 2, "limit": "0"}),
            "limit must be an integer from 1 to",
        ),
    ];
    for (mut args, want) in refused {
        args["file_path"] = json!(file);
        let r = call(&client, "lro_extract", args.clone()).await;
        assert!(is_error(&r), "{args}: {:?}", texts(&r));
        assert!(texts(&r)[0].contains(want), "{args}: {:?}", texts(&r));
    }
    let _ = client.cancel().await;
}

/// `command` (a descriptor's shell recipe, `tail -n +2 FILE | jq ...`)
/// with `-c`: what lro_extract prints.
fn compact(command: &str) -> String {
    assert!(command.contains("| jq "), "{command}");
    command.replacen("| jq ", "| jq -c ", 1)
}

/// Pages, over many page sizes and offsets, end on whole values and add up
/// to exactly `jq -c`'s output of the same query over the file (real jq).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_end_on_whole_values_and_add_up_to_jq_c() {
    require_jq();
    for threshold in [400, 1600] {
        let dir = tempfile::tempdir().unwrap();
        let (client, d) = quickstart(dir.path(), threshold).await;
        let file = &d.file_path;
        let ns = d.summary.top_namespaces[0].clone();
        let custom = "select(.provenance.confidence > 0.5) | {id, title, tags}";
        let asks = [
            (
                json!({"file_path": file, "recipe": 1}),
                compact(&d.jq_recipes[0].command),
            ),
            (
                json!({"file_path": file, "recipe": 2, "params": {"namespace": ns}}),
                compact(&d.jq_recipes[1].command).replace("_semantic", &ns),
            ),
            (
                json!({"file_path": file, "recipe": 4}),
                compact(&d.jq_recipes[3].command),
            ),
            (
                json!({"file_path": file, "recipe": 6}),
                compact(&d.jq_recipes[5].command),
            ),
            (
                json!({"file_path": file, "query": custom}),
                format!("tail -n +2 '{file}' | jq -c '{custom}'"),
            ),
        ];
        for (args, command) in &asks {
            let jq = run_recipe(command);
            let want: Vec<&str> = jq.lines().collect();
            assert!(!want.is_empty(), "{command}");
            let raw = command.contains(" -r ");
            for limit in [None, Some(3), Some(7)] {
                for start in [0, 5] {
                    let mut a = args.clone();
                    if let Some(l) = limit {
                        a["limit"] = json!(l);
                    }
                    let w = walk(&client, &a, start as u64).await;
                    let mut got = String::new();
                    for p in &w.pages {
                        assert!(p[0].is_empty() || p[0].ends_with('\n'), "{a}: {p:?}");
                        if !raw {
                            for line in p[0].lines() {
                                assert!(
                                    serde_json::from_str::<Value>(line).is_ok(),
                                    "{a}: a page line is one whole value: {line}"
                                );
                            }
                        }
                        if let Some(l) = limit {
                            assert!(p[0].lines().count() <= l, "{a}: {p:?}");
                        }
                        assert!(
                            p.get(1).is_none_or(|t| !t.contains("was cut")),
                            "{a} (threshold {threshold}): {p:?}"
                        );
                        got.push_str(&p[0]);
                    }
                    let rest = want.get(start..).unwrap_or_default();
                    let expected: String = rest.iter().map(|l| format!("{l}\n")).collect();
                    assert_eq!(
                        got, expected,
                        "{a} from {start} (threshold {threshold}): all pages are jq -c's output"
                    );
                }
            }
        }
        let _ = client.cancel().await;
    }
}

/// A value alone over the page budget: cut, the trailer says so and how to
/// read an array an element at a time; that way gives jq -c's output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_over_the_budget_is_cut_and_said() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let (client, d) = quickstart(dir.path(), 1600).await;
    let file = &d.file_path;
    // Recipe 8: the 200 records sorted, one array.
    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": file, "recipe": 8}),
    )
    .await;
    let t = texts(&r);
    assert!(!is_error(&r), "{t:?}");
    let jq = run_recipe(&compact(&d.jq_recipes[7].command));
    assert_eq!(jq.lines().count(), 1);
    assert!(
        jq.starts_with(t[0].trim_end()),
        "the page is the value's start"
    );
    assert!(t[0].len() < jq.len());
    assert!(
        t[1].contains("Value 1 alone is longer than the answer budget")
            && t[1].contains("sort_by(.created) | .[]")
            && t[1].contains("slurp=true"),
        "{t:?}"
    );
    let spread = json!({"file_path": file, "query": "sort_by(.created) | .[]", "slurp": true});
    let w = walk(&client, &spread, 0).await;
    let got: String = w.pages.iter().map(|p| p[0].as_str()).collect();
    assert!(w.pages.len() > 1);
    assert_eq!(
        got,
        run_recipe(&format!(
            "tail -n +2 '{file}' | jq -c -s 'sort_by(.created) | .[]'"
        ))
    );
    let _ = client.cancel().await;
}

/// The extractor's paging by values: a raw string's line breaks stay in
/// its entry, offsets count values, and a first value longer than the page
/// cap comes cut rather than as an error (by lines it is an error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extractor_pages_by_values() {
    use tower_lro::extract::{ExtractError, ExtractLimits, Extractor, Paging, Query};
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("atlatl-notes-01J0000000000000000000000.jsonl");
    let long = "é".repeat(400);
    let records = [
        json!({"text": "one\ntwo"}),
        json!({"text": "three"}),
        json!({"text": long}),
    ];
    let mut content = String::from("{\"type\":\"lro_header\"}\n");
    for r in &records {
        content.push_str(&format!("{r}\n"));
    }
    std::fs::write(&file, content).unwrap();
    let x = Extractor::new(ExtractLimits::default().max_page_bytes(101));
    let raw = Query::new(".text").raw(true).compact(true);
    let all = Paging {
        offset: 0,
        limit: 2,
    };
    let by_lines = x.extract(&file, &raw, all).await.unwrap();
    assert_eq!(by_lines.lines, ["one", "two"]);
    let by_values = x
        .extract(&file, &raw.clone().by_value(true), all)
        .await
        .unwrap();
    assert_eq!(by_values.lines, ["one\ntwo", "three"]);
    assert_eq!(by_values.text(), "one\ntwo\nthree\n");
    assert!(by_values.more && !by_values.cut);
    let third = Paging {
        offset: 2,
        limit: 5,
    };
    let cut = x
        .extract(&file, &raw.clone().by_value(true), third)
        .await
        .unwrap();
    assert!(cut.cut && cut.more, "{cut:?}");
    assert_eq!(cut.lines, ["é".repeat(50)], "cut on a character boundary");
    assert!(matches!(
        x.extract(
            &file,
            &raw,
            Paging {
                offset: 3,
                limit: 1
            }
        )
        .await,
        Err(ExtractError::LineTooLong { .. })
    ));
}

/// The MCP Inspector CLI 0.15.0 (`tests/interop/package.json`; the CLI
/// that `npx @modelcontextprotocol/inspector --cli` runs), which sends
/// every `--tool-arg` as a string unless the tool's schema gives the
/// property one type: with the portable schema it calls `lro_extract`
/// with a recipe number, paging and `params`, and gets what rmcp gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_calls_lro_extract() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let cli = interop.join("node_modules/@modelcontextprotocol/inspector-cli/build/index.js");
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(
        OffloadConfig::default()
            .threshold_tokens(1600)
            .output_dir(dir.path()),
    );
    // The Inspector CLI opens a session per call and sends no credentials:
    // the file name is the capability.
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let client = connect(addr).await;
    let args = json!({"query": "cache design", "count": 200, "detail": "full"});
    let d = checked_descriptor(&call(&client, "recall_memories", args).await, "inspector");
    let ns = d.summary.top_namespaces[0].clone();
    let url = format!("http://{addr}/mcp");
    let inspector = |tool_args: Vec<String>| {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(&cli)
            .arg(&url)
            .args(["--transport", "http", "--method", "tools/call"])
            .args(["--tool-name", "lro_extract", "--tool-arg"])
            .arg(format!("file_path={}", d.file_path))
            .args(tool_args);
        cmd
    };
    let asks = [
        (
            vec!["recipe=4".into(), "offset=10".into(), "limit=5".into()],
            json!({"file_path": d.file_path, "recipe": 4, "offset": 10, "limit": 5}),
        ),
        (
            vec![
                "recipe=2".into(),
                format!("params={}", json!({"namespace": ns})),
            ],
            json!({"file_path": d.file_path, "recipe": 2, "params": {"namespace": ns}}),
        ),
        (
            vec![
                "query=group_by(.namespace) | map(length)".into(),
                "slurp=true".into(),
            ],
            json!({"file_path": d.file_path, "query": "group_by(.namespace) | map(length)",
                   "slurp": true}),
        ),
    ];
    for (tool_args, same) in asks {
        let out = common::output_within(
            inspector(tool_args.clone()),
            Duration::from_secs(60),
            "the Inspector CLI",
        )
        .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{tool_args:?}: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: Value = serde_json::from_str(&stdout).expect("the CLI prints the result");
        assert_ne!(result["isError"], json!(true), "{tool_args:?}: {result}");
        let got: Vec<&str> = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap())
            .collect();
        let want = texts(&call(&client, "lro_extract", same).await);
        assert_eq!(got, want, "{tool_args:?}");
        assert!(!got[0].is_empty(), "{tool_args:?}");
    }
    let _ = client.cancel().await;
}

/// A client that takes a result without `structuredContent` to be
/// `JSON.parse` of its first text block and rejects it unless it is an
/// object (Gemini CLI 0.61's MCP transport) gets, for every answer, either
/// `structuredContent` or a first block that is not one non-object JSON
/// value; `structuredContent` is `{"value": V}` with V the printed value
/// and the trailer as `note`, so a client showing only it misses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_value_that_is_not_an_object_is_also_structured() {
    let dir = tempfile::tempdir().unwrap();
    let (client, d) = quickstart(dir.path(), 4000).await;
    let file = &d.file_path;
    let asks = [
        (json!({"file_path": file, "recipe": 6}), true),
        (json!({"file_path": file, "query": "length"}), false),
        (
            json!({"file_path": file, "query": "length", "limit": 1}),
            false,
        ),
        (
            json!({"file_path": file, "query": ".title", "limit": 1}),
            false,
        ),
        (
            json!({"file_path": file, "query": "[.id]", "limit": 1}),
            false,
        ),
        (
            json!({"file_path": file, "query": "{id}", "limit": 1}),
            false,
        ),
        (
            json!({"file_path": file, "query": "{id}", "limit": 2}),
            false,
        ),
        (json!({"file_path": file, "recipe": 1}), false),
    ];
    let mut structured = 0;
    for (args, more_than_one_value) in asks {
        let r = call(&client, "lro_extract", args.clone()).await;
        assert!(!is_error(&r), "{args}: {:?}", texts(&r));
        let t = texts(&r);
        let parsed = serde_json::from_str::<Value>(&t[0]).ok();
        match (&r.structured_content, parsed) {
            (Some(s), Some(v)) => {
                assert!(!v.is_object(), "{args}: an object needs no copy");
                assert_eq!(s["value"], v, "{args}: the same value");
                assert_eq!(
                    s.get("note").and_then(Value::as_str),
                    t.get(1).map(String::as_str)
                );
                structured += 1;
            }
            (None, Some(v)) => assert!(v.is_object(), "{args}: {v} would be rejected"),
            (None, None) => {}
            (Some(s), None) => panic!("{args}: structured {s} beside text that is not one value"),
        }
        if more_than_one_value {
            // Recipe 6 slurps: one array, the namespaces with their counts.
            let s = r
                .structured_content
                .as_ref()
                .expect("recipe 6 is one array");
            assert_eq!(s["value"].as_array().map(Vec::len), Some(8), "{s}");
        }
    }
    assert_eq!(
        structured, 4,
        "recipe 6, a number, a title, an array of one id"
    );
    let _ = client.cancel().await;
}

/// A file cut short on disk (a full disk, a crash, someone's truncate) is
/// refused as damaged, by name, with an `OffloadFileDamaged` event, rather
/// than served in part as if it were whole; an intact
/// file of the same layer is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_cut_short_is_refused_as_damaged() {
    use std::sync::{Arc, Mutex};
    use tower_lro::offload::{EventHook, OffloadEvent};
    let dir = tempfile::tempdir().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let layer = OffloadLayer::builder()
        .config(
            OffloadConfig::default()
                .threshold_tokens(400)
                .output_dir(dir.path()),
        )
        .event_hook(EventHook::callback(move |e| {
            sink.lock().unwrap().push(e.clone())
        }))
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let client = connect(addr).await;
    let args = json!({"query": "cache", "count": 200, "detail": "full"});
    let cut = checked_descriptor(&call(&client, "recall_memories", args.clone()).await, "cut");
    let whole = checked_descriptor(&call(&client, "recall_memories", args).await, "whole");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&cut.file_path)
        .unwrap();
    let size = file.metadata().unwrap().len();
    file.set_len(size / 2).unwrap();
    drop(file);

    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": cut.file_path, "recipe": 6}),
    )
    .await;
    let t = texts(&r);
    assert!(is_error(&r), "{t:?}");
    assert!(
        t[0].contains("is damaged") && t[0].contains("its header counts"),
        "{t:?}"
    );
    let damaged: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            OffloadEvent::OffloadFileDamaged { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(damaged, [std::path::PathBuf::from(&cut.file_path)]);

    let r = call(
        &client,
        "lro_extract",
        json!({"file_path": whole.file_path, "recipe": 6}),
    )
    .await;
    assert!(!is_error(&r), "{:?}", texts(&r));
    let _ = client.cancel().await;
}
