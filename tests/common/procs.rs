//! Child processes of the tests: servers started and waited for, killed
//! and reaped on drop.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// A child process, killed and reaped on drop; its stderr is kept (capped)
/// for failure messages.
pub(crate) struct Proc {
    name: String,
    /// The process (its pid, to signal it; whether it has exited).
    pub child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Its exit status once it has exited, waiting at most `within`
    /// (polled, without blocking the async runtime); panics, with its
    /// stderr, when it is still running then.
    pub(crate) async fn exited_within(
        &mut self,
        within: std::time::Duration,
    ) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} did not exit:\n{}",
                self.name,
                self.stderr()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.name, self.child.id())
    }
}

/// Spawns `cmd` and waits, at most `timeout`, for a stdout line starting with
/// `prefix`; returns the process and the rest of that line. Both pipes keep
/// being drained afterwards, so the child never blocks on a full pipe.
pub(crate) fn spawn_ready(
    name: &str,
    mut cmd: Command,
    prefix: &str,
    timeout: Duration,
) -> (Proc, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr_pipe = child.stderr.take().expect("piped stderr");
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    let (stderr_done, stderr_ended) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr_pipe);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let mut s = sink.lock().unwrap();
            if s.len() < 1 << 20 {
                s.push_str(&String::from_utf8_lossy(&line));
            }
            line.clear();
        }
        drop(stderr_done);
    });
    let (tx, rx) = mpsc::channel();
    let prefix_owned = prefix.to_owned();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix(&prefix_owned) {
                let _ = tx.send(rest.trim().to_owned());
            }
        }
    });
    let mut proc = Proc {
        name: name.to_owned(),
        child,
        stderr,
    };
    match rx.recv_timeout(timeout) {
        Ok(rest) => (proc, rest),
        Err(_) => {
            let status = proc.child.try_wait().ok().flatten();
            // Stop the child and let the stderr thread read its last lines
            // (it ends at the pipe's end; 5 s at most, should a grandchild
            // hold the pipe open).
            let _ = proc.child.kill();
            let _ = stderr_ended.recv_timeout(Duration::from_secs(5));
            panic!(
                "{name} did not print `{prefix}` within {timeout:?} (exit status: {status:?})\nstderr:\n{}",
                proc.stderr()
            );
        }
    }
}

/// Waits until `addr` accepts TCP connections (50 tries, 100 ms apart).
pub(crate) fn wait_for_port(addr: SocketAddr) {
    for _ in 0..50 {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        // A real process starting up: polled on the wall clock.
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{addr} does not accept connections after 5 s");
}

/// The Python SDK server on a free port (`extra`: `--json`, `--stateless`);
/// returns it and its port. `None`: skipped (no interop tooling; see
/// `common::require`).
pub(crate) fn python_server(extra: &[&str]) -> Option<(Proc, u16)> {
    let dir = super::interop_setup()?;
    let mut cmd = Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("py_server.py")).arg("0").args(extra);
    let (proc, port) = spawn_ready(
        "python MCP server",
        cmd,
        "LISTENING ",
        Duration::from_secs(60),
    );
    let port: u16 = port.parse().expect("port number");
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)));
    Some((proc, port))
}
