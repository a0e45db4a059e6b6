//! The `lro` command's file tools, run as a user runs them: the real
//! binary on files the engine wrote, checked against the engine and the
//! real `jq`; and which subcommands read the offload configuration.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::Detail;
use tower_lro::offload::{Offloader, Outcome, ToolCall};

/// Runs `lro ARGS`.
fn lro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .env_remove("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR")
        .output()
        .expect("lro runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "lro failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

/// An offloaded recall of `count` full memories in `dir`: the file and the
/// original result.
fn offloaded(dir: &Path, count: usize) -> (PathBuf, String) {
    let config = OffloadConfig::default().output_dir(dir);
    let offloader = Offloader::new(config);
    let memories = common::mcp::memories(count, Detail::Full);
    let result =
        json!({"content": [{"type": "text", "text": serde_json::to_string(&memories).unwrap()}]});
    let original = result.to_string();
    let call = ToolCall::new(
        "recall_memories",
        Some(json!({"query": "cache", "detail": "full"})),
    );
    match offloader
        .process(&call, original.as_bytes())
        .expect("processed")
    {
        Outcome::Offloaded(o) => (o.file.path.clone(), original),
        other => panic!("not offloaded: {other:?}"),
    }
}

#[test]
fn rebuild_prints_the_original_result() {
    let dir = tempfile::tempdir().unwrap();
    let (file, original) = offloaded(dir.path(), 60);
    let out = stdout(&lro(&["rebuild", file.to_str().unwrap()]));
    let rebuilt: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(rebuilt, serde_json::from_str::<Value>(&original).unwrap());
}

#[test]
fn inspect_shows_the_header_fields_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = offloaded(dir.path(), 60);
    let out = stdout(&lro(&["inspect", file.to_str().unwrap()]));
    assert!(out.contains("Records   60 (~"), "{out}");
    assert!(
        out.contains("by recall_memories (operation recall)"),
        "{out}"
    );
    assert!(out.contains("Query     \"cache\""), "{out}");
    assert!(out.contains("Expires") && out.contains("(in "), "{out}");
    assert!(out.contains("namespace (60)"), "fields counted: {out}");
}

#[test]
fn extract_runs_a_custom_query_by_pages_like_jq() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = offloaded(dir.path(), 60);
    let path = file.to_str().unwrap();
    let page = stdout(&lro(&[
        "extract", path, "--query", ".id", "-r", "--offset", "10", "--limit", "5",
    ]));
    common::require_jq();
    let jq = common::run_recipe(&format!("tail -n +2 '{path}' | jq -r .id"));
    let jq: Vec<&str> = jq.lines().collect();
    assert_eq!(page.lines().collect::<Vec<_>>(), jq[10..15]);
    let more = lro(&["extract", path, "--query", ".id", "--limit", "5"]);
    assert!(
        String::from_utf8_lossy(&more.stderr).contains("--offset 5"),
        "tells where the next page starts"
    );
}

#[test]
fn extract_runs_the_files_recipes_with_params() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = offloaded(dir.path(), 60);
    let path = file.to_str().unwrap();
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let recipes = header["recipes"]
        .as_array()
        .expect("the header lists its recipes");
    assert_eq!(recipes.len(), 10);
    let counts = stdout(&lro(&["extract", path, "--recipe", "6"]));
    let counts: Value = serde_json::from_str(&counts).expect("recipe 6 prints JSON");
    let total: u64 = counts
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 60, "recipe 6 counts every record: {counts}");
    let bad = lro(&["extract", path, "--recipe", "2", "--param", "nope=1"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.starts_with("lro: recipe 2 has no parameter \"nope\"; accepted parameters: namespace"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn cleanup_dry_run_lists_and_deletes_nothing_then_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = offloaded(dir.path(), 30);
    let d = dir.path().to_str().unwrap();
    // Not expired yet under the file's own expires_at (one hour).
    let out = stdout(&lro(&["cleanup", d, "--dry-run"]));
    assert!(out.contains("0 expired file(s)"), "{out}");
    // Rewrite the header's expiry into the past: now it is expired.
    let text = std::fs::read_to_string(&file).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(head).unwrap();
    header["expires_at"] = json!("2000-01-01T00:00:00.000Z");
    std::fs::write(&file, format!("{header}\n{rest}")).unwrap();
    let out = stdout(&lro(&["cleanup", d, "--dry-run"]));
    assert!(
        out.contains(file.to_str().unwrap()) && out.contains("1 expired file(s)"),
        "{out}"
    );
    assert!(file.exists(), "a dry run deletes nothing");
    let out = stdout(&lro(&["cleanup", d]));
    assert!(out.contains("deleted 1 of 1"), "{out}");
    assert!(!file.exists());
}

#[test]
fn bad_input_gets_one_line_and_a_failure_status() {
    let dir = tempfile::tempdir().unwrap();
    let not_ours = dir.path().join("x.jsonl");
    std::fs::write(&not_ours, "{\"a\":1}\n").unwrap();
    for args in [
        vec!["inspect", not_ours.to_str().unwrap()],
        vec!["rebuild", "/nonexistent/atlatl-x.jsonl"],
        vec!["extract", not_ours.to_str().unwrap(), "--query", "."],
    ] {
        let out = lro(&args);
        assert!(!out.status.success(), "{args:?} failed");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("lro: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let out = lro(&["extract", "f", "--recipe", "1", "--query", "."]);
    assert!(!out.status.success(), "recipe and query are exclusive");
}

#[test]
fn rebuild_takes_the_rewritten_result_for_what_the_file_leaves_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let rows: Vec<Value> = (0..800)
        .map(|i| json!({"id": i, "level": "info", "msg": format!("worker {i} started")}))
        .collect();
    let image = "iVBORw0KGgo".repeat(2000);
    let original = json!({"content": [
        {"type": "text", "text": serde_json::to_string(&rows).unwrap()},
        {"type": "image", "data": image, "mimeType": "image/png"},
    ]});
    let call = ToolCall::new("query_logs", None);
    let Outcome::Offloaded(o) = offloader
        .process(&call, original.to_string().as_bytes())
        .unwrap()
    else {
        panic!("not offloaded");
    };
    let file = o.file.path.to_str().unwrap().to_owned();
    let alone = lro(&["rebuild", &file]);
    assert!(!alone.status.success(), "the image is not in the file");
    let err = String::from_utf8_lossy(&alone.stderr);
    assert!(err.contains("--with") && err.lines().count() == 1, "{err}");
    let rewritten = dir.path().join("result.json");
    std::fs::write(&rewritten, &o.result).unwrap();
    let out = stdout(&lro(&[
        "rebuild",
        &file,
        "--with",
        rewritten.to_str().unwrap(),
    ]));
    assert_eq!(serde_json::from_str::<Value>(out.trim()).unwrap(), original);
}

/// `lro ARGS` with `VAR=VALUE` in its environment; a child still running
/// after a bounded wait (a gateway that started) is killed and `None`.
fn lro_with_env(args: &[&str], var: &str, value: &str) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .env_remove("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR")
        .env(var, value)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lro runs");
    for _ in 0..600 {
        if child.try_wait().expect("lro's status").is_some() {
            return Some(child.wait_with_output().expect("lro's output"));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn only_the_subcommands_that_offload_read_the_offload_configuration() {
    const VAR: &str = "ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS";
    let dir = tempfile::tempdir().unwrap();
    let (file, original) = offloaded(dir.path(), 60);
    let file = file.to_str().unwrap();
    // The file tools that read only their file do not care.
    let out = lro_with_env(&["rebuild", file], VAR, "abc").expect("rebuild ends");
    let rebuilt: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(rebuilt, serde_json::from_str::<Value>(&original).unwrap());
    let out = lro_with_env(&["inspect", file], VAR, "abc").expect("inspect ends");
    assert!(stdout(&out).contains("Records   60"));
    let out = lro_with_env(
        &["extract", file, "--query", ".id", "--limit", "1"],
        VAR,
        "abc",
    )
    .expect("extract ends");
    assert_eq!(stdout(&out).lines().count(), 1);
    // Those that offload or clean up refuse it, naming the variable.
    let dir_arg = dir.path().to_str().unwrap();
    for args in [
        &[
            "gateway",
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--listen",
            "127.0.0.1:0",
        ][..],
        &["cleanup", dir_arg, "--dry-run"][..],
    ] {
        let out = lro_with_env(args, VAR, "abc").expect("a refusal, not a running command");
        assert!(!out.status.success(), "{args:?} accepted a bad {VAR}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("lro: configuration:") && stderr.contains(VAR),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// `lro proxy --version` answers as `lro --version` does (desktop
/// configurations pass it), and `lro proxy --help` names the two tools it
/// adds and how to hide them.
#[test]
fn proxy_version_and_help() {
    let version = stdout(&lro(&["proxy", "--version"]));
    assert!(
        version.trim().starts_with(&format!(
            "lro-proxy {} (features: ",
            env!("CARGO_PKG_VERSION")
        )),
        "{version}"
    );
    let gateway = stdout(&lro(&["gateway", "--version"]));
    assert!(gateway.contains(env!("CARGO_PKG_VERSION")), "{gateway}");
    let help = stdout(&lro(&["proxy", "--help"]));
    for needle in ["lro_extract", "lro_list", "--ignore-tool 'lro_*'"] {
        assert!(help.contains(needle), "{needle} not in:\n{help}");
    }
}
