//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tower_lro::descriptor::OffloadResponse;
use tower_lro::store::{Store, StoreError};

pub(crate) mod mcp;
pub(crate) mod procs;

/// Runs a recipe command with `bash -c` and `pipefail`, returning stdout; panics with the
/// command and stderr when it fails.
pub(crate) fn run_recipe(command: &str) -> String {
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
pub(crate) fn json_stream(s: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<Value>()
        .map(|v| v.expect("jq printed JSON"))
        .collect()
}

/// Each line of `text` as an SSE data line ending in CRLF, alternately
/// `data: ` and `data:` (both are valid): a message spread awkwardly over
/// many lines of one event.
pub(crate) fn data_lines(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 2 == 0 {
                format!("data: {l}\r\n")
            } else {
                format!("data:{l}\r\n")
            }
        })
        .collect()
}

/// The record lines of an offloaded file (after the header).
pub(crate) fn file_records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("file readable");
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("record line is JSON"))
        .collect()
}

/// The header line of an offloaded file.
pub(crate) fn file_header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("file readable");
    serde_json::from_str(text.lines().next().expect("header")).expect("header is JSON")
}

/// Fails the test early with a clear message if `jq` is missing.
pub(crate) fn require_jq() {
    let ok = Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "these tests need the `jq` binary on PATH (.ci/run installs it)"
    );
}

/// Whether a test that needs `what` can run here: true when `available`.
/// Otherwise the test is skipped (this returns false and the test returns
/// early), after saying why on stderr: past the test harness's capture, so
/// the skip shows in a plain `cargo test`. Never with the `CI` environment
/// variable set: there every test must run, so a missing tool fails the
/// test with `why`.
pub(crate) fn require(what: &str, available: bool, why: &str) -> bool {
    if available {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "this test needs {what}: {why} (CI is set, so it fails instead of being skipped)"
    );
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: it needs {what}: {why} (with CI set it would fail)"
    );
    false
}

/// [`require`] for a command on PATH: `tool --version` must run and succeed.
pub(crate) fn require_tool(tool: &str) -> bool {
    require(
        &format!("`{tool}`"),
        runs(tool),
        &format!("`{tool} --version` does not run (not on PATH?)"),
    )
}

/// Whether `tool --version` runs and succeeds.
fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The workspace root: the library's package, whose `tests/` these helpers
/// are in, for its own tests and for the `lro` command's (`lro/`).
pub(crate) fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("tests/interop").is_dir())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The folder of the interop tooling (`tests/interop`): the official MCP SDKs
/// and the conformance suite, installed there by `tests/interop/setup.sh`.
pub(crate) fn interop_dir() -> PathBuf {
    repo_root().join("tests/interop")
}

/// Runs `tests/interop/setup.sh` once per test process (it is idempotent and
/// locks against other processes), so `cargo test` works on a fresh machine:
/// Node packages go to `tests/interop/node_modules`, Python packages to
/// `tests/interop/.venv`. Returns the folder, or `None` (the test skips)
/// when `node`, `npm` or `python3`, which the script needs, is missing; see
/// [`require`]. Panics with the installer's output if it fails.
pub(crate) fn interop_setup() -> Option<PathBuf> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let tools_run = ["node", "npm", "python3"].into_iter().all(|tool| {
        require(
            &format!("`{tool}`"),
            runs(tool),
            &format!(
                "`{tool} --version` does not run, and tests/interop/setup.sh installs the \
                 interop tooling with node, npm and python3"
            ),
        )
    });
    if !tools_run {
        return None;
    }
    let dir = interop_dir();
    DONE.get_or_init(|| {
        run_setup(
            &dir.join("setup.sh"),
            "it needs node, npm, python3 and the package registries",
        )
    });
    Some(dir)
}

/// Runs an installer script of `tests/interop` (idempotent, locked against
/// other processes); panics with its output, and `needs`, if it fails.
pub(crate) fn run_setup(script: &Path, needs: &str) {
    let out = Command::new("bash")
        .arg(script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{} failed ({needs})\nstdout: {}\nstderr: {}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` to its end (stdin closed, stdout and stderr captured) and
/// returns its output; kills it and fails the test, naming it `what`, if it
/// is not done within `timeout`.
pub(crate) async fn output_within(
    cmd: impl Into<tokio::process::Command>,
    timeout: Duration,
    what: &str,
) -> Output {
    let mut cmd: tokio::process::Command = cmd.into();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish in {timeout:?}"))
        .unwrap_or_else(|e| panic!("{what}: no output: {e}"))
}

/// Starts `cmd` (a server that prints `LISTENING <port>` once it listens)
/// and returns it with its port; its stdout is read on, so that it never
/// blocks on a full pipe. Fails the test, naming it `what`, if it does not
/// listen within 30 s.
#[allow(dead_code)]
pub(crate) async fn start_listening(
    mut cmd: tokio::process::Command,
    what: &str,
) -> (tokio::process::Child, u16) {
    use tokio::io::AsyncBufReadExt;
    let mut child = cmd
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(port) = line.strip_prefix("LISTENING ") {
                return port.trim().parse::<u16>().unwrap();
            }
        }
        panic!("{what} ended before listening");
    })
    .await
    .unwrap_or_else(|_| panic!("{what} listens within 30 s"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

/// [`output_within`] for a test that runs no tokio runtime of its own.
pub(crate) fn output_within_blocking(cmd: Command, timeout: Duration, what: &str) -> Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(output_within(cmd, timeout, what))
}

/// A store whose disk is always full: every write fails with `ENOSPC`.
pub(crate) struct FullDisk(pub PathBuf);

impl Store for FullDisk {
    fn write(&self, file_name: &str, _: &[u8]) -> Result<PathBuf, StoreError> {
        Err(StoreError::Write {
            path: self.0.join(file_name),
            source: std::io::Error::from_raw_os_error(28), // ENOSPC
        })
    }
    fn dir(&self) -> &Path {
        &self.0
    }
}

/// The text block of `result` (a `CallToolResult` as JSON) that holds the
/// descriptor: where the first offloaded block stood (blocks kept before
/// it keep their place).
fn descriptor_text(result: &Value) -> Option<&str> {
    result["content"].as_array()?.iter().find_map(|b| {
        let text = b["text"].as_str()?;
        let v: Value = serde_json::from_str(text).ok()?;
        v.get("offloaded").is_some().then_some(text)
    })
}

/// The JSON of `result`'s descriptor block (a `CallToolResult` as JSON).
/// Panics when there is none.
pub(crate) fn descriptor_json(result: &Value) -> Value {
    let text = descriptor_text(result).unwrap_or_else(|| panic!("no descriptor block: {result}"));
    serde_json::from_str(text).expect("checked JSON")
}

/// The descriptor of `result` (an rmcp `CallToolResult` or its JSON), if
/// one of its text blocks holds one.
pub(crate) fn try_descriptor(result: &impl serde::Serialize) -> Option<OffloadResponse> {
    let result = serde_json::to_value(result).ok()?;
    serde_json::from_str(descriptor_text(&result)?).ok()
}

/// The descriptor of `result` (an rmcp `CallToolResult` or its JSON);
/// panics when there is none.
pub(crate) fn descriptor(result: &impl serde::Serialize) -> OffloadResponse {
    let result = serde_json::to_value(result).expect("a result serialises");
    let d = descriptor_json(&result);
    serde_json::from_value(d.clone()).unwrap_or_else(|e| {
        panic!(
            "the descriptor block is not a descriptor ({e}): {:.300}",
            d.to_string()
        )
    })
}

/// [`descriptor`], checked as every offloaded result must be: `offloaded`
/// is true, there are 10 jq recipes, the file exists. `what` names the
/// result in failure messages.
pub(crate) fn checked_descriptor(result: &impl serde::Serialize, what: &str) -> OffloadResponse {
    let d = descriptor(result);
    assert!(d.offloaded, "{what}: {d:?}");
    assert_eq!(d.jq_recipes.len(), 10, "{what}: jq recipes");
    assert!(
        Path::new(&d.file_path).is_file(),
        "{what}: {} is a file",
        d.file_path
    );
    d
}

/// Count, bytes and SHA-256 (hex) of the data lines of `file` (every byte
/// after the header line): what its completeness contract states.
pub(crate) fn data_figures(file: &[u8]) -> (usize, u64, String) {
    use sha2::Digest;
    let at = file.iter().position(|&b| b == b'\n').unwrap() + 1;
    let data = &file[at..];
    let lines = data.iter().filter(|&&b| b == b'\n').count();
    let sha: String = sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (lines, data.len() as u64, sha)
}

/// Waits until `cond` holds, checking every 20 ms; fails the test after 10 s.
pub(crate) async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "timed out: {what}"
        );
        // A poll interval, not a wait for time to pass: on a paused tokio
        // clock it ends once the runtime is idle.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Records counted by the string value of `field` (`"null"` when absent).
pub(crate) fn counts_by(records: &[Value], field: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(r[field].as_str().unwrap_or("null").to_owned())
            .or_default() += 1;
    }
    m
}

/// Runs recipe 6 (`command`, count by namespace) and checks that its counts
/// are the true counts of `records`.
pub(crate) fn check_recipe6(command: &str, records: &[Value], what: &str) {
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

/// The peak resident memory (`VmHWM`) of process `pid`, in bytes.
pub(crate) fn peak_rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib << 10
}
