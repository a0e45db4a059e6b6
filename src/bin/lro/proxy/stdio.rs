//! The agent's side of the proxy: one JSON-RPC message per line on stdin
//! (bounded; a line that is not JSON gets the parse error), sent upstream
//! in the order the server needs (notifications, answers to the server and
//! `initialize` are taken before the next line is read; other requests run
//! side by side), and the messages to the agent written one per line.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tower_lro::offload::OffloadService;

use super::message::Message;
use super::relay::relay;
use super::upstream::Upstream;
use super::{ProxyError, Shared};

/// The longest line read from the agent (a message of 64 MiB).
const MAX_LINE_BYTES: usize = 64 << 20;

/// Writes each message as one line, flushed.
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<String>,
    mut out: W,
) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
            tracing::warn!(target: "tower_lro", "stdout closed; messages from the server are dropped");
            return;
        }
    }
}

/// Reads the agent's lines and sends each upstream in a task of its own;
/// waits for the tasks at the end of the input.
pub(super) async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    shared: &Arc<Shared>,
    service: &OffloadService<Upstream>,
) -> Result<(), ProxyError> {
    let mut lines = BufReader::new(input);
    let mut tasks = tokio::task::JoinSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut lines)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(ProxyError::Input)?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES {
            tracing::error!(target: "tower_lro", "a message over {MAX_LINE_BYTES} bytes; stopping");
            break;
        }
        let Some(message) = message_of(&line, shared) else {
            continue;
        };
        // Order matters to the server (a tools/list must not overtake the
        // notifications/initialized before it): notifications, answers to
        // the server and `initialize` are sent and acknowledged before the
        // next line is read; other requests run on their own, so a long
        // tool call never holds back the agent's answer to a server request.
        // A message sent in order that takes long (a sign-in in the
        // browser) goes on in its task while the next lines are read.
        if message.in_order() {
            let (done, taken) = tokio::sync::oneshot::channel::<()>();
            let relayed = relay(message, shared.clone(), service.clone());
            tasks.spawn(async move {
                relayed.await;
                let _ = done.send(());
            });
            if tokio::time::timeout(shared.in_order_wait(), taken)
                .await
                .is_err()
            {
                tracing::warn!(target: "tower_lro", "the server took long to take a message; going on");
            }
        } else {
            tasks.spawn(relay(message, shared.clone(), service.clone()));
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The message of one line: trimmed, checked to be JSON (else the parse
/// error goes back to the agent).
fn message_of(line: &[u8], shared: &Shared) -> Option<Message> {
    let text = std::str::from_utf8(line).ok().map(str::trim);
    if text.is_some_and(str::is_empty) {
        return None;
    }
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => Some(Message::new(text.unwrap_or_default(), &value)),
        _ => {
            tracing::warn!(target: "tower_lro", "a line from the agent is not JSON");
            let error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line that is not JSON"}}"#;
            let _ = shared.out.send(error.to_owned());
            None
        }
    }
}
