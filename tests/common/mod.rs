//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

pub mod mcp;

/// Runs a recipe command with `bash -c` and `pipefail`, returning stdout; panics with the
/// command and stderr when it fails.
pub fn run_recipe(command: &str) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail; {command}"))
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "recipe failed: {command}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Parses every JSON value in a stream (jq's default output).
pub fn json_stream(s: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<Value>()
        .map(|v| v.expect("jq printed JSON"))
        .collect()
}

/// The record lines of an offloaded file (after the header).
pub fn file_records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("file readable");
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("record line is JSON"))
        .collect()
}

/// The header line of an offloaded file.
pub fn file_header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("file readable");
    serde_json::from_str(text.lines().next().expect("header")).expect("header is JSON")
}

/// Fails the test early with a clear message if `jq` is missing.
pub fn require_jq() {
    let ok = Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "these tests need the `jq` binary on PATH (.ci/run installs it)"
    );
}

/// The folder of the interop tooling (`tests/interop`): the official MCP SDKs
/// and the conformance suite, installed there by `tests/interop/setup.sh`.
pub fn interop_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// Runs `tests/interop/setup.sh` once per test process (it is idempotent and
/// locks against other processes), so `cargo test` works on a fresh machine:
/// Node packages go to `tests/interop/node_modules`, Python packages to
/// `tests/interop/.venv`. Panics with the installer's output if it fails.
pub fn interop_setup() -> std::path::PathBuf {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let dir = interop_dir();
    DONE.get_or_init(|| {
        let out = Command::new("bash")
            .arg(dir.join("setup.sh"))
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "tests/interop/setup.sh failed (it needs node, npm, python3 and the package registries)\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    dir
}

/// Waits until `cond` holds, checking every 20 ms; fails the test after 10 s.
pub async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "timed out: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Records counted by the string value of `field` (`"null"` when absent).
pub fn counts_by(records: &[Value], field: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(r[field].as_str().unwrap_or("null").to_owned())
            .or_default() += 1;
    }
    m
}

/// Runs recipe 6 (`command`, count by namespace) and checks that its counts
/// are the true counts of `records`.
pub fn check_recipe6(command: &str, records: &[Value], what: &str) {
    require_jq();
    let out = json_stream(&run_recipe(command));
    let got: BTreeMap<String, usize> = out[0]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: recipe 6 printed {out:?}"))
        .iter()
        .map(|e| {
            (
                e["namespace"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(
        got,
        counts_by(records, "namespace"),
        "{what}: recipe 6 counts"
    );
}
