//! The agent's side of a running `lro proxy` child process, for the tests
//! that hold a hostile server on loopback: JSON-RPC lines to its stdin,
//! messages from its stdout (each read bounded in time), its peak resident
//! memory, and its log once it exits.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// A running `lro proxy` and the pipes an agent holds.
pub(crate) struct Agent {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
    _dir: tempfile::TempDir,
}

impl Agent {
    /// Starts `lro proxy URL --output-dir (a temporary directory) ARGS…`
    /// and initializes it with `protocol_version` (the answer checked).
    pub(crate) async fn start(url: &str, args: &[&str], protocol_version: &str) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_lro"))
            .args(["proxy", url, "--output-dir"])
            .arg(dir.path())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("lro runs");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text).await;
            text
        });
        let mut agent = Agent {
            child,
            stdin,
            lines,
            stderr,
            _dir: dir,
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": protocol_version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        agent.say(&init.to_string()).await;
        let init = agent.next().await.expect("the initialize answer");
        assert!(init["result"].is_object(), "{init}");
        agent
    }

    /// Writes one line to the proxy's stdin.
    pub(crate) async fn say(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    /// Sends a `tools/call` of `tool` with `arguments`.
    pub(crate) async fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        self.say(&call.to_string()).await;
    }

    /// The next message on stdout (bounded in time).
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("a message within 120 s")
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// The proxy's peak resident memory (`VmHWM`), in bytes.
    pub(crate) fn peak_rss(&self) -> usize {
        crate::common::peak_rss(self.child.id().expect("the proxy runs"))
    }

    /// Ends stdin; the proxy's log once it exits.
    pub(crate) async fn finish(mut self) -> String {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        let _ = self.child.kill().await;
        self.stderr.await.unwrap()
    }
}
