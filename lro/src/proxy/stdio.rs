//! The agent's side of the proxy: one JSON-RPC message per line on stdin
//! (bounded; a line that is not JSON gets the parse error), sent upstream
//! in the order the server needs (notifications, answers to the server and
//! `initialize` are taken before the next line is read; other requests run
//! side by side), and the messages to the agent written one per line
//! through a bounded queue ([`Outbox`]): a sender waits for room, so a
//! server that floods an agent that reads slowly is slowed down (its
//! stream is no longer read, TCP pushes back), never buffered without
//! bound. The reading of stdin never waits for that room, so an agent that
//! writes before it reads cannot deadlock with the proxy.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tower_lro::offload::OffloadService;

use super::message::Message;
use super::relay::relay;
use super::upstream::Upstream;
use super::{ProxyError, Shared};

/// The longest line read from the agent (a message of 64 MiB).
const MAX_LINE_BYTES: usize = 64 << 20;

/// The most messages queued for stdout at once.
const OUT_MESSAGES: usize = 1024;
/// The most bytes queued for stdout at once (a message larger than this
/// waits until the queue is empty and then goes alone).
const OUT_BYTES: usize = 8 << 20;

/// A line for stdout with the room it takes in the queue.
pub(super) type Queued = (String, OwnedSemaphorePermit);

/// The sending side of the bounded queue to stdout, bounded both in
/// messages and in bytes: [`send`](Outbox::send) waits for room.
pub(super) struct Outbox {
    tx: mpsc::Sender<Queued>,
    room: Arc<Semaphore>,
}

impl Outbox {
    /// The queue, and its receiving side for [`write_lines`].
    pub(super) fn new() -> (Outbox, mpsc::Receiver<Queued>, Arc<Semaphore>) {
        let (tx, rx) = mpsc::channel(OUT_MESSAGES);
        let room = Arc::new(Semaphore::new(OUT_BYTES));
        (
            Outbox {
                tx,
                room: room.clone(),
            },
            rx,
            room,
        )
    }

    /// Queues one message for stdout, waiting for room; dropped when
    /// stdout is closed.
    pub(super) async fn send(&self, line: String) {
        let bytes = line.len().clamp(1, OUT_BYTES);
        let Ok(permit) = self
            .room
            .clone()
            .acquire_many_owned(u32::try_from(bytes).unwrap_or(u32::MAX))
            .await
        else {
            return;
        };
        let _ = self.tx.send((line, permit)).await;
    }

    /// Queues one message if there is room now; `Err` gives it back.
    pub(super) fn try_send(&self, line: String) -> Result<(), String> {
        let bytes = u32::try_from(line.len().clamp(1, OUT_BYTES)).unwrap_or(u32::MAX);
        let Ok(permit) = self.room.clone().try_acquire_many_owned(bytes) else {
            return Err(line);
        };
        self.tx
            .try_send((line, permit))
            .map_err(|e| e.into_inner().0)
    }
}

/// Writes each message as one line, flushed; its room in the queue is
/// given back once it is written. When stdout is closed, the queue is
/// closed too, so no sender waits for room that never comes.
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Queued>,
    room: Arc<Semaphore>,
    mut out: W,
) {
    while let Some((mut line, permit)) = rx.recv().await {
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
            tracing::warn!(target: "tower_lro", "stdout closed; messages from the server are dropped");
            room.close();
            return;
        }
        drop(permit);
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
        let Some(message) = message_of(&line, shared, &mut tasks) else {
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
            tasks.spawn(relay(message, shared.clone(), service.clone(), Some(done)));
            if tokio::time::timeout(shared.in_order_wait(), taken)
                .await
                .is_err()
            {
                tracing::warn!(target: "tower_lro", "the server took long to take a message; going on");
            }
        } else {
            tasks.spawn(relay(message, shared.clone(), service.clone(), None));
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The message of one line: trimmed, checked to be JSON (else the parse
/// error goes back to the agent, from a task of its own when stdout's
/// queue is full: the reading of stdin never waits for stdout).
fn message_of(
    line: &[u8],
    shared: &Arc<Shared>,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Option<Message> {
    let text = std::str::from_utf8(line).ok().map(str::trim);
    if text.is_some_and(str::is_empty) {
        return None;
    }
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => Some(Message::new(text.unwrap_or_default(), &value)),
        _ => {
            tracing::warn!(target: "tower_lro", "a line from the agent is not JSON");
            let error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line that is not JSON"}}"#;
            if let Err(error) = shared.out.try_send(error.to_owned()) {
                let shared = shared.clone();
                tasks.spawn(async move { shared.out.send(error).await });
            }
            None
        }
    }
}
