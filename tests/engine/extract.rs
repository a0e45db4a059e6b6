//! Extraction: every recipe of every kind of record prints, byte for byte,
//! what `jq` 1.6 prints for the descriptor's shell command; custom queries
//! with variables too; paging; and hostile queries end with their error in
//! time while others are served.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{require_jq, run_recipe};
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::extract::{
    ExtractError, ExtractLimits, Extractor, Page, Paging, Query, RecipeCommand,
};
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::{Offloaded, Offloader, Outcome, ToolCall};

fn offload(dir: &Path, tool: &str, args: Option<Value>, result: &Value) -> Box<Offloaded> {
    let o = Offloader::new(OffloadConfig::default().output_dir(dir));
    match o
        .process(&ToolCall::new(tool, args), result.to_string().as_bytes())
        .expect("valid result")
    {
        Outcome::Offloaded(off) => off,
        other => panic!("expected an offload, got {other:?}"),
    }
}

/// Limits under which whole outputs fit one page.
fn roomy() -> ExtractLimits {
    ExtractLimits::default()
        .max_page_bytes(64 << 20)
        .max_concurrent(4)
}

fn extract_all(file: &Path, query: &Query) -> Page {
    Extractor::new(roomy())
        .extract_blocking(file, query, Paging::ALL)
        .unwrap_or_else(|e| panic!("{:?} failed: {e}", query.filter()))
}

/// Every recipe of the descriptor, through the extractor and through bash
/// and jq: the same bytes.
fn every_recipe_matches_jq(off: &Offloaded, what: &str) {
    assert_eq!(off.response.jq_recipes.len(), 10, "{what}");
    for r in &off.response.jq_recipes {
        let want = run_recipe(&r.command);
        let recipe = RecipeCommand::parse(&r.command).unwrap();
        assert_eq!(
            Path::new(&recipe.file),
            off.file.path,
            "{what}: {}",
            r.command
        );
        let page = extract_all(&off.file.path, &recipe.query);
        assert_eq!(page.errors, Vec::<String>::new(), "{what}: {}", r.command);
        let got = page.text();
        assert!(
            got == want,
            "{what}: {}\n--- extractor\n{got:.2000}\n--- jq\n{want:.2000}",
            r.command
        );
        assert_eq!(
            page.total_lines,
            Some(want.matches('\n').count()),
            "{what}: {}",
            r.command
        );
        assert!(!page.more);
    }
}

#[test]
fn memory_recipes_match_jq_at_every_detail() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    for (detail, tool) in [
        (Detail::Light, "recall_memories"),
        (Detail::Medium, "inject_context"),
        (Detail::Full, "recall_memories"),
    ] {
        let memories = MemoryGenerator::new(7).memories(200, detail);
        let off = offload(dir.path(), tool, None, &memory_tool_result(&memories));
        every_recipe_matches_jq(&off, detail.as_str());
    }
}

#[test]
fn log_rows_recipes_match_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let levels = ["info", "warn", "error", "info", "debug"];
    let rows: Vec<Value> = (0..400)
        .map(|i| {
            json!({
                "ts": format!("2026-11-{:02}T10:{:02}:00Z", i % 28 + 1, i % 60),
                "level": levels[i % 5],
                "service": (["api", "worker", "db"][i % 3]),
                "message": format!("request {i} finished with status {}", [200, 404, 500][i % 3]),
                "latency_ms": (i * 7) % 250,
                "odd key": i % 2 == 0,
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&rows).unwrap();
    let result = json!({"content": [{"type": "text", "text": text}]});
    let off = offload(
        dir.path(),
        "query_logs",
        Some(json!({"query": "status"})),
        &result,
    );
    every_recipe_matches_jq(&off, "log rows");
}

/// Database-like rows: integers, doubles of every print form, big
/// integers, nulls, nested values, escapes and non-ASCII text.
fn database_rows() -> Vec<Value> {
    let numbers = [
        json!(0.1),
        json!(1e-7),
        json!(1.5e300),
        json!(-0.0),
        json!(12345678901234567890u64),
        json!(1e17),
        json!(100000000000000000000.0),
        json!(0.30000000000000004),
        json!(-42),
        json!(3.0),
    ];
    (0..300)
        .map(|i| {
            json!({
                "order_id": 10_000 + i,
                "customer": format!("Cliente {} «ñ» \u{1F600} \"q\" \\ tab\there", i % 17),
                "amount": (i as f64) * 1.37 - 100.0,
                "ratio": numbers[i % numbers.len()],
                "region": (["eu-west", "us-east", "ap-south"][i % 3]),
                "shipped_at": if i % 4 == 0 { Value::Null } else { json!(format!("2026-0{}-1{}T08:00:00Z", i % 9 + 1, i % 10)) },
                "items": {"count": i % 5, "skus": [format!("SKU-{i}"), "x\u{7f}\u{1}"]},
            })
        })
        .collect()
}

#[test]
fn database_rows_recipes_match_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let rows = database_rows();
    let result = json!({"content": [{"type": "text", "text": "see structured"}], "structuredContent": {"rows": rows}});
    let off = offload(dir.path(), "sql_query", None, &result);
    every_recipe_matches_jq(&off, "database rows");
}

#[test]
fn text_recipes_match_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let log: String = (0..1500)
        .map(|i| {
            let level = ["INFO", "ERROR"][i % 2];
            format!(
                "2026-11-21 10:00:{:02} {level}\tworker-{} «handled» \"job\" {i} \\ ok\n",
                i % 60,
                i % 4
            )
        })
        .collect();
    let result = json!({"content": [{"type": "text", "text": log}]});
    let off = offload(dir.path(), "tail_logs", None, &result);
    every_recipe_matches_jq(&off, "plain text");

    let jsonl: String = (0..600)
        .map(|i| {
            format!(
                "{{\"n\":{i},\"kind\":\"{}\",\"w\":{}}}\n",
                ["a", "b"][i % 2],
                i as f64 / 8.0
            )
        })
        .collect();
    let result = json!({"content": [{"type": "text", "text": jsonl}]});
    let off = offload(dir.path(), "export", None, &result);
    every_recipe_matches_jq(&off, "JSONL text");
}

#[test]
fn scalar_array_recipes_match_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<Value> = (0..2000)
        .map(|i| match i % 4 {
            0 => json!(format!("item {} keyword", i % 50)),
            1 => json!(i as f64 / 3.0),
            2 => json!(i),
            _ => json!(format!("ünïcode {i}")),
        })
        .collect();
    let result =
        json!({"content": [{"type": "text", "text": serde_json::to_string(&values).unwrap()}]});
    let off = offload(dir.path(), "list_values", None, &result);
    every_recipe_matches_jq(&off, "scalar array");
}

/// A POSIX single-quoted shell word.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// What `tail -n +2 FILE | jq FLAGS --argjson ... FILTER` prints.
fn jq_prints(file: &Path, q: &Query) -> String {
    let f = q.jq_flags();
    let mut cmd = format!("tail -n +2 {} | jq", sq(&file.display().to_string()));
    for (on, flag) in [(f.slurp, " -s"), (f.raw, " -r"), (f.compact, " -c")] {
        if on {
            cmd.push_str(flag);
        }
    }
    for (name, value) in q.vars() {
        cmd.push_str(&format!(" --argjson {name} {}", sq(&value.to_string())));
    }
    cmd.push(' ');
    cmd.push_str(&sq(q.filter()));
    run_recipe(&cmd)
}

#[test]
fn custom_queries_with_variables_match_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let result = json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"rows": database_rows()}});
    let off = offload(dir.path(), "sql_query", None, &result);
    let file = &off.file.path;
    let q = Query::new;
    let queries = [
        q("select(.region == $region) | {order_id, amount}").var("region", json!("eu-west")),
        q("select(.amount > $min) | .customer").raw(true).var("min", json!(150.5)),
        q("[.ratio, .amount] | @csv, @tsv").raw(true),
        q("$ARGS.named").compact(true).var("a", json!([1, {"b": null}])).var("z", json!("s")),
        q("map(.ratio) | unique").slurp(true).compact(true),
        q("map(.ratio) | sort, min, max, add").slurp(true),
        q("group_by(.region) | map({region: .[0].region, total: (map(.amount) | add), n: length})").slurp(true),
        q(r#""\(.order_id): \(.ratio) \(.items) \(.shipped_at)""#).raw(true),
        q(".customer | @html, @uri, @sh, @base64, ascii_downcase, length, utf8bytelength").raw(true),
        q(".items.skus | join(\"|\"), tojson, (.[0] | ltrimstr(\"SKU-\") | tonumber)").raw(true),
        q("to_entries | map(.key) | join(\",\")").raw(true),
        q("([paths] | length), (del(.items) | keys), (with_entries(.value |= tostring) | .ratio)").compact(true),
        q(".[2:5], .[-1], (map(.order_id) | .[1.5:3.2]), (.[0] | has(\"ratio\"))").slurp(true).compact(true),
        q(".amount % 7, (.amount | floor), (.order_id / 3), (\"ab\" * 2.5), (\"ab\" * 0)").compact(true),
        q("[limit(3; .[] | .order_id)], first(.[] | .region), [range(0; 10; 3)], [range(5; 0; -2)]").slurp(true).compact(true),
        q("(INDEX(.region) | keys), (map(.order_id) | IN(10003)), ([.[0].items.skus[0]] | inside([\"SKU-0\", 1]))").slurp(true).compact(true),
        q("map(select(.customer | test(\"cliente 1\\\\b\"; \"i\"))) | length").slurp(true),
        q("[.[] | .customer | split(\" \")[0:2]] | unique | .[]").slurp(true).compact(true),
        q("reduce range(300) as $i (0; [.])").compact(true),
        q("{\"b\": 1, \"a\": [2, {\"d\": 3, \"c\": 4}]} | ., keys_unsorted, (.a[1] | to_entries)").compact(true),
        q("[.[] | .items.skus | indices(\"x\\u007f\\u0001\")], ([1,2,1,2] | indices([1,2])), (\"a,b,c\" | indices(\",\"))").slurp(true).compact(true),
        q("[.[].shipped_at | values] | length, (map(select(. != null)) | sort_by(.) | .[0])").slurp(true),
        q("[.[] | .amount] | (add / length), (map(. * 1000 | round) | max), (.[0] | tostring)").slurp(true),
        q("(null | setpath([2]; 1)), ([1] | .[3] = 2), (null | setpath([\"a\", 1, \"b\"]; 3)), ([1, 2] | .[-1] = 5), ([[0]] | .[0][2] |= 7)").compact(true),
        q(".customer | sub(\"Cliente\"; \"C\"), gsub(\"[aeiou]\"; \"_\"), [scan(\"[0-9]+\")], capture(\"(?<n>[0-9]+)\").n, [splits(\" +\")], test(\"\\\\d{1,3}\")").compact(true),
    ];
    for query in &queries {
        let want = jq_prints(file, query);
        let page = extract_all(file, query);
        let got = page.text();
        assert!(
            got == want,
            "{:?}\n--- extractor\n{got:.3000}\n--- jq\n{want:.3000}",
            query.filter()
        );
    }
}

#[test]
fn errors_end_one_input_and_go_on_with_the_next() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let result = json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"rows": database_rows()}});
    let off = offload(dir.path(), "sql_query", None, &result);
    let query = Query::new(".order_id, (.shipped_at | ascii_downcase), \"after\"").compact(true);
    let want = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "tail -n +2 {} | jq -c {} 2>/dev/null; true",
            sq(&off.file.path.display().to_string()),
            sq(query.filter())
        ))
        .output()
        .unwrap();
    let page = extract_all(&off.file.path, &query);
    assert_eq!(page.text(), String::from_utf8(want.stdout).unwrap());
    assert_eq!(page.error_count, 75);
    assert_eq!(page.errors.len(), 10);
    assert!(page.errors[0].contains("null"), "{:?}", page.errors);
}

#[test]
fn pages_cut_the_output_lines() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(100, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let query = Query::new("{id, tags}");
    let whole = extract_all(&off.file.path, &query);
    let total = whole.lines.len();
    assert_eq!(whole.total_lines, Some(total));
    let ex = Extractor::new(roomy());
    let page = ex
        .extract_blocking(
            &off.file.path,
            &query,
            Paging {
                offset: 10,
                limit: 25,
            },
        )
        .unwrap();
    assert_eq!(page.lines, whole.lines[10..35]);
    assert_eq!(
        (page.offset, page.total_lines, page.more),
        (10, Some(total), true)
    );
    let last = ex
        .extract_blocking(
            &off.file.path,
            &query,
            Paging {
                offset: total - 5,
                limit: 25,
            },
        )
        .unwrap();
    assert_eq!(last.lines, whole.lines[total - 5..]);
    assert!(!last.more);
    let past = ex
        .extract_blocking(
            &off.file.path,
            &query,
            Paging {
                offset: total + 5,
                limit: 25,
            },
        )
        .unwrap();
    assert!(past.lines.is_empty() && !past.more);
    // Counting stops past the page: the total is unknown, more remain.
    let counted = Extractor::new(roomy().max_counted_lines(10))
        .extract_blocking(
            &off.file.path,
            &query,
            Paging {
                offset: 0,
                limit: 5,
            },
        )
        .unwrap();
    assert_eq!(
        (counted.lines.len(), counted.total_lines, counted.more),
        (5, None, true)
    );
}

#[test]
fn bad_queries_are_typed_errors_without_paths() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(100, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let ex = Extractor::new(ExtractLimits::default());
    let run = |q: Query| ex.extract_blocking(&off.file.path, &q, Paging::default());
    // What reaches out of the evaluation is not defined: the server's
    // environment, time zone, stdin, stderr, file names, exit.
    let secrets: Vec<String> = std::env::vars()
        .map(|(_, v)| v)
        .filter(|v| v.len() >= 8)
        .collect();
    for filter in [
        "env",
        "env.PATH",
        "$ENV",
        "$ENV.PATH",
        "[env[]]",
        "input",
        "[inputs]",
        "first(inputs)",
        "debug",
        "debug(\"x\")",
        "stderr",
        "input_filename",
        "$__loc__",
        "halt",
        "halt_error",
        "halt_error(1)",
        "localtime",
        "now | strflocaltime(\"%Z\")",
        "get_search_list",
        "import \"a\" as a; .",
        "include \"a\"; .",
        "map(",
        "$undefined",
    ] {
        let e = run(Query::new(filter)).unwrap_err();
        assert!(matches!(e, ExtractError::Syntax(_)), "{filter}: {e:?}");
        let shown = e.to_string();
        assert!(
            !secrets.iter().any(|v| shown.contains(v.as_str())),
            "{filter}: {shown}"
        );
    }
    assert!(matches!(
        run(Query::new(".").var("no-dash", json!(1))),
        Err(ExtractError::BadVariable(_))
    ));
    assert!(matches!(
        run(Query::new(".").var("ARGS", json!(1))),
        Err(ExtractError::BadVariable(_))
    ));
    assert!(matches!(
        run(Query::new(" ".repeat(20_000))),
        Err(ExtractError::FilterTooLong { .. })
    ));
    let missing = dir.path().join("atlatl-x-01J00000000000000000000000.jsonl");
    let e = ex
        .extract_blocking(&missing, &Query::new("."), Paging::default())
        .unwrap_err();
    assert_eq!(e, ExtractError::Unreadable);
    assert!(!e.to_string().contains(&dir.path().display().to_string()));
    // A slurping query holds the whole file: the limit applies. Others
    // read it a chunk at a time, whatever its size.
    let small = Extractor::new(ExtractLimits::default().max_input_bytes(100));
    let slurp = Query::new("length").slurp(true);
    let e = small
        .extract_blocking(&off.file.path, &slurp, Paging::default())
        .unwrap_err();
    assert!(
        matches!(e, ExtractError::InputTooLarge { max: 100 }),
        "{e:?}"
    );
    let page = small
        .extract_blocking(&off.file.path, &Query::new(".id"), Paging::default())
        .unwrap();
    assert!(!page.lines.is_empty());
}

/// Limits for hostile queries: one second, small outputs.
fn strict() -> ExtractLimits {
    ExtractLimits::default()
        .time_limit(Duration::from_secs(1))
        .max_alloc_bytes(64 << 20)
        .max_output_bytes(1 << 20)
        .max_page_bytes(64 << 10)
        .max_counted_lines(10_000)
}

/// Which errors a hostile query may end with.
type Expected = fn(&ExtractError) -> bool;

#[test]
fn hostile_queries_get_their_error_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let ex = Extractor::new(strict());
    let memory_or_time: Expected =
        |e| matches!(e, ExtractError::Memory { .. } | ExtractError::Timeout(_));
    let cases: [(&str, Expected); 23] = [
        ("def f: f; f", |e| matches!(e, ExtractError::Timeout(_))),
        ("def f: 1 + f; f", |e| {
            matches!(e, ExtractError::TooDeep | ExtractError::Timeout(_))
        }),
        ("def f: [f]; f", |e| {
            matches!(e, ExtractError::TooDeep | ExtractError::Timeout(_))
        }),
        ("[repeat(.)]", |e| {
            matches!(e, ExtractError::Memory { .. } | ExtractError::Timeout(_))
        }),
        ("[range(1e12)]", |e| {
            matches!(e, ExtractError::Memory { .. } | ExtractError::Timeout(_))
        }),
        ("last(range(1e12))", |e| {
            matches!(e, ExtractError::Timeout(_))
        }),
        ("reduce range(64) as $i (\"x\"; . + .)", |e| {
            matches!(e, ExtractError::Memory { .. })
        }),
        ("\"x\" * 1e12", |e| matches!(e, ExtractError::Memory { .. })),
        ("reduce range(60) as $i (1; [., .]) | tojson", |e| {
            matches!(e, ExtractError::Memory { .. } | ExtractError::Timeout(_))
        }),
        ("def d: reduce range(60) as $i (1; [., .]); d == d", |e| {
            matches!(e, ExtractError::Timeout(_))
        }),
        ("reduce range(1e8) as $i (0; [.])", |e| {
            matches!(e, ExtractError::Memory { .. } | ExtractError::Timeout(_))
        }),
        ("until(false; .)", |e| matches!(e, ExtractError::Timeout(_))),
        ("def f: def g: f; g; f", |e| {
            matches!(e, ExtractError::Timeout(_))
        }),
        ("[limit(1e12; repeat(1))]", memory_or_time),
        ("reduce range(40) as $i (\"a\"; . + .)", |e| {
            matches!(e, ExtractError::Memory { .. })
        }),
        ("[range(1e7)] as $p | null | getpath($p)", memory_or_time),
        ("null | setpath([range(1e6) | tostring]; 1)", memory_or_time),
        ("[range(1e7)] | tojson", memory_or_time),
        ("[range(1e7)] | @sh", memory_or_time),
        (
            "(\"x\" * 1e7) as $s | [$s, $s, $s, $s, $s, $s, $s] | @sh",
            memory_or_time,
        ),
        ("[.[] | tojson] | join(\",\") * 1e4", memory_or_time),
        ("[paths] | length as $n | [range($n * 1e6)]", memory_or_time),
        ("last(repeat(1))", |e| matches!(e, ExtractError::Timeout(_))),
    ];
    for (filter, expected) in cases {
        let start = Instant::now();
        let e = ex
            .extract_blocking(
                &off.file.path,
                &Query::new(filter).slurp(true),
                Paging::default(),
            )
            .unwrap_err();
        let took = start.elapsed();
        // The typed error is the bound the extractor enforces (its time
        // limit, its allocation cap); how long it took is only printed
        // (benches/extract.rs measures speed).
        assert!(expected(&e), "{filter}: {e:?}");
        eprintln!("{filter:60} {took:>10.1?}  {e}");
    }
}

/// A regular expression cannot be stopped once it runs: one whose work
/// (string length times automaton size) would pass about a second is
/// refused before it runs, with an error of the query.
#[test]
fn costly_regular_expressions_are_refused_before_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let ex = Extractor::new(strict().max_alloc_bytes(256 << 20));
    for filter in [
        "(\"a\" * 1e7) | test(\"(a*)*b\")",
        "(\"a\" * 1e5) | test(\"(a{100}){100}b\")",
        "(\"ab \" * 1e7) | [splits(\" \")] | length",
        "(\"ab \" * 1e7) | gsub(\"b\"; \"c\") | length",
        "(\"ab \" * 1e7) | matches(\"a\"; \"g\") | length",
    ] {
        // Refused before it runs: a page with the query's error, not a
        // `Timeout` (which is what running it would end in).
        let page = ex
            .extract_blocking(
                &off.file.path,
                &Query::new(filter).slurp(true),
                Paging::default(),
            )
            .unwrap_or_else(|e| panic!("{filter}: {e:?}"));
        assert_eq!(page.error_count, 1, "{filter}: {page:?}");
        assert!(
            page.errors[0].contains("too costly"),
            "{filter}: {:?}",
            page.errors
        );
    }
    // Within the bound, the same functions answer.
    let page = ex
        .extract_blocking(
            &off.file.path,
            &Query::new("(\"ab \" * 1e4) | [splits(\" \")] | length").slurp(true),
            Paging::default(),
        )
        .unwrap();
    assert_eq!(page.lines, ["10001"]);
}

/// Queries that may well end (with a page or a typed error), but must do
/// so in time, leaving the process standing: deep paths built and read,
/// regular expressions that backtrack in other engines.
#[test]
fn deep_paths_and_costly_patterns_end_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let ex = Extractor::new(strict());
    for filter in [
        "[range(1e5) | tostring] as $p | null | setpath($p; 1) | getpath($p)",
        "null | setpath([range(1e5) | tostring]; 1) | tojson | length",
        "null | setpath([range(1e5)]; 1)",
        "[range(1e5)] as $p | null | getpath($p)",
        "(\"a\" * 100000) | test(\"(a*)*b\")",
        "(\"a\" * 100000) | [match(\"a\"; \"g\")] | length",
        "[paths] | length",
        "tostream",
    ] {
        let start = Instant::now();
        let r = ex.extract_blocking(&off.file.path, &Query::new(filter), Paging::default());
        let took = start.elapsed();
        // A page, or one of the errors of the extractor's bounds (time,
        // memory, depth, output) or of the query (`tostream` is not in
        // jaq): never a crash of the evaluation thread.
        assert!(
            matches!(
                r,
                Ok(_)
                    | Err(ExtractError::Timeout(_)
                        | ExtractError::Memory { .. }
                        | ExtractError::TooDeep
                        | ExtractError::OutputTooLarge { .. }
                        | ExtractError::LineTooLong { .. }
                        | ExtractError::Syntax(_))
            ),
            "{filter}: {r:?}"
        );
        eprintln!("{filter:70} {took:>10.1?}  {:.80}", format!("{r:?}"));
    }
}

#[test]
fn endless_and_giant_outputs_give_a_page_or_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let ex = Extractor::new(strict());
    let run = |q: Query, p: Paging| ex.extract_blocking(&off.file.path, &q, p);
    for filter in ["repeat(.)", "range(1e12)", "limit(1e12; repeat(1))"] {
        // Ends at the page: ten lines and "more", not the endless rest.
        let page = run(
            Query::new(filter).compact(true),
            Paging {
                offset: 0,
                limit: 10,
            },
        )
        .unwrap();
        assert_eq!(
            (page.lines.len(), page.total_lines, page.more),
            (10, None, true),
            "{filter}"
        );
    }
    let e = run(
        Query::new("repeat(.)").compact(true),
        Paging {
            offset: 1_000_000_000,
            limit: 10,
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ExtractError::OutputTooLarge { .. } | ExtractError::Timeout(_)
        ),
        "{e:?}"
    );
    let e = run(
        Query::new("[range(100000)]").compact(true),
        Paging::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ExtractError::LineTooLong { .. }), "{e:?}");
    let page = run(
        Query::new("[range(100000)]"),
        Paging {
            offset: 0,
            limit: 3,
        },
    )
    .unwrap();
    assert_eq!(page.lines, ["[", "  0,", "  1,"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_hostile_calls_leave_room_for_others() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let limits = strict()
        .time_limit(Duration::from_secs(2))
        .max_concurrent(2)
        .queue_wait(Duration::from_millis(200));
    let ex = Extractor::new(limits);
    // One hostile query takes one slot for its whole time limit...
    let (taken, slot_taken) = tokio::sync::oneshot::channel();
    let hostile = {
        let (ex, file) = (ex.clone(), off.file.path.clone());
        tokio::spawn(async move {
            let query = Query::new("def f: f; f");
            let mut call = std::pin::pin!(ex.extract(&file, &query, Paging::default()));
            // A free slot is taken on the first poll (the semaphore has
            // permits): once that poll returns, the query holds its slot.
            let mut taken = Some(taken);
            std::future::poll_fn(|cx| {
                let r = call.as_mut().poll(cx);
                if let Some(t) = taken.take() {
                    let _ = t.send(());
                }
                r
            })
            .await
        })
    };
    slot_taken.await.unwrap();
    // ...while a normal query is served on the other: without a free slot
    // it would be told `Busy` after the 200 ms queue wait.
    let page = ex
        .extract(
            &off.file.path,
            &Query::new(".id").raw(true),
            Paging::default(),
        )
        .await
        .unwrap();
    assert_eq!(page.lines.len(), 50);
    assert!(
        !hostile.is_finished(),
        "served while the hostile query held its slot"
    );
    // Many more hostile calls: those that find no slot are told so.
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let (ex, file) = (ex.clone(), off.file.path.clone());
            tokio::spawn(async move {
                ex.extract(&file, &Query::new("def f: f; f"), Paging::default())
                    .await
            })
        })
        .collect();
    let mut busy = 0;
    for c in calls {
        match c.await.unwrap() {
            Err(ExtractError::Busy) => busy += 1,
            Err(ExtractError::Timeout(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(busy >= 4, "{busy}");
    assert!(matches!(
        hostile.await.unwrap(),
        Err(ExtractError::Timeout(_))
    ));
    // The slots come back: a normal query works again.
    ex.extract(&off.file.path, &Query::new(".id"), Paging::default())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let memories = MemoryGenerator::new(3).memories(50, Detail::Light);
    let off = offload(
        dir.path(),
        "recall_memories",
        None,
        &memory_tool_result(&memories),
    );
    let limits = ExtractLimits::default()
        .time_limit(Duration::from_secs(60))
        .max_concurrent(1)
        .queue_wait(Duration::from_secs(5));
    let ex = Extractor::new(limits);
    let gave_up = tokio::time::timeout(
        Duration::from_millis(200),
        ex.extract(
            &off.file.path,
            &Query::new("def f: f; f"),
            Paging::default(),
        ),
    )
    .await;
    assert!(gave_up.is_err());
    // The only slot is free again: with it still taken (the query runs
    // for up to 60 s) this call would be told `Busy` after its 5 s wait.
    ex.extract(&off.file.path, &Query::new(".id"), Paging::default())
        .await
        .expect("the slot was freed");
}

/// What `tail -n +2 FILE | jq ...` prints on stdout, and how many errors
/// it reports on stderr (jq fails then; that is expected here).
fn jq_with_errors(file: &Path, q: &Query) -> (String, usize) {
    let f = q.jq_flags();
    let mut cmd = format!("tail -n +2 {} | jq", sq(&file.display().to_string()));
    for (on, flag) in [(f.slurp, " -s"), (f.raw, " -r"), (f.compact, " -c")] {
        if on {
            cmd.push_str(flag);
        }
    }
    cmd.push(' ');
    cmd.push_str(&sq(q.filter()));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("jq: error"))
        .count();
    (String::from_utf8(out.stdout).unwrap(), errors)
}

/// The reader skips the fields a filter never reads. Records of every
/// shape (not objects, keys missing, null, duplicated, escaped, nested
/// under other names) give what jq prints, errors included, for filters
/// that read a few fields, with and without `-s`.
#[test]
fn filters_reading_few_fields_match_jq_on_odd_records() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("atlatl-odd-01J00000000000000000000000.jsonl");
    let records = [
        r#"{"namespace":"a","provenance":{"confidence":0.9,"source":"x"},"id":1,"title":"t","tags":["x"]}"#,
        r#"{"na\u006despace":"b","provenance":{"confidence":0.2},"id":2, "title" : "\"q\""}"#,
        r#""just a string""#,
        r#"[1,2,{"namespace":"c"}]"#,
        r#"{"namespace":null,"provenance":null,"extra":{"namespace":"deep","id":9}}"#,
        r#"{"provenance":{"confidence":"high"},"id":{"nested":true},"title":null}"#,
        r#"{"namespace":"a","namespace":"dup","provenance":{"confidence":0.7,"confidence":0.1}}"#,
        r#"{}"#,
        r#"42"#,
        r#"null"#,
        r#"{"provenance":[1,2],"id":"x","tags":{"a":[{"b":1e400}]}}"#,
        r#"{"provenance":"str","id":3,"skipped":[{"deep":[[["\ud83d\ude00"]]]},-0.0,1E-7,true,false]}"#,
    ];
    std::fs::write(
        &file,
        format!("{{\"type\":\"lro_header\"}}\n{}\n", records.join("\n")),
    )
    .unwrap();
    let q = Query::new;
    let queries = [
        q("select(.provenance.confidence > 0.5) | {id, title, tags}").compact(true),
        q(".namespace"),
        q(".provenance.confidence"),
        q("select(.namespace) | .id"),
        q("{namespace, c: .provenance.confidence}").compact(true),
        q("if .id then .title else .namespace end"),
        q("try .provenance.confidence catch \"E\""),
        q(".provenance.confidence?, .extra.id?"),
        q("\"\\(.namespace)-\\(.id)\"").raw(true),
        q("select(.provenance) | .provenance | .confidence // \"none\""),
        q("1, (.tags | length)"),
        q("group_by(.namespace) | map({namespace: .[0].namespace, count: length})")
            .slurp(true)
            .compact(true),
        q("[.[] | .namespace?]").slurp(true).compact(true),
        q("[.[] | select(.id?) | .id] | length, length").slurp(true),
        q("sort_by(.id?) | map(.title?)").slurp(true).compact(true),
        q("group_by(.namespace?) | map({n: .[0].namespace?, c: length})")
            .slurp(true)
            .compact(true),
        q("first(.[] | .provenance?), [limit(2; .[] | .id?)]")
            .slurp(true)
            .compact(true),
        q("min_by(.id?) | .title?, (max_by(.id?) | .id?)")
            .slurp(true)
            .compact(true),
    ];
    for query in &queries {
        let (want, errors) = jq_with_errors(&file, query);
        let page = extract_all(&file, query);
        assert!(
            page.text() == want,
            "{:?}\n--- extractor\n{}\n--- jq\n{want}",
            query.filter(),
            page.text()
        );
        assert_eq!(
            page.error_count,
            errors,
            "{:?}: {:?}",
            query.filter(),
            page.errors
        );
    }
}

/// `Query::var` binds any JSON value as `$name`, exactly as jq's
/// `--argjson name VALUE` does; a variable no one bound is a syntax error
/// that names it.
#[test]
fn variables_hold_any_json_value_and_unbound_ones_are_named() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("atlatl-vars-01J00000000000000000000000.jsonl");
    std::fs::write(&file, "{\"type\":\"lro_header\"}\n{\"a\":1}\n").unwrap();
    let values = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-0.0),
        json!(1.5e300),
        json!(12345678901234567890u64),
        json!(0.1),
        json!(""),
        json!("tab\t \"quote\" \\ «ñ» \u{1F600} \u{7f}\u{1}"),
        json!([]),
        json!({}),
        json!([1, "two", [3, {"four": null}], {"b": 2, "a": 1}]),
        json!({"z": {"y": [true, false]}, "a": "é", "k e y": -2}),
    ];
    for value in values {
        for filter in [
            "$v",
            "$v | type",
            "[$v, .a] | tojson",
            "$ARGS.named.v == $v",
        ] {
            let query = Query::new(filter).compact(true).var("v", value.clone());
            let got = extract_all(&file, &query).text();
            assert_eq!(got, jq_prints(&file, &query), "{filter} with {value}");
        }
    }
    let ex = Extractor::new(ExtractLimits::default());
    let run = |q: Query| ex.extract_blocking(&file, &q, Paging::default());
    let e = run(Query::new("$nope")).unwrap_err();
    assert!(
        matches!(&e, ExtractError::Syntax(m) if m.contains("$nope")),
        "{e:?}"
    );
    let e = run(Query::new("$a + $b").var("a", json!(1))).unwrap_err();
    assert!(
        matches!(&e, ExtractError::Syntax(m) if m.contains("$b") && !m.contains("$a")),
        "{e:?}"
    );
    let page = run(Query::new("$a + $b").var("a", json!(1)).var("b", json!(2))).unwrap();
    assert_eq!(page.lines, ["3"]);
}
