//! Reading the HTTP+SSE event stream: each `message` event is either the
//! answer a request waits for (handed to it, see [`LegacySse`]) or
//! anything else, which goes to the agent as it comes: progress, logs,
//! the server's own requests. Each message waits for room in the bounded
//! queue to stdout before the stream is read on (a server that floods an
//! agent that reads slowly is slowed down, never buffered without bound),
//! and an event is held only up to a cap while it comes: over it, it is
//! dropped with a warning and the stream goes on after it; when it was the
//! answer a request waits for, that request gets an error at once
//! ([`oversized`](super::oversized)).
//!
//! [`LegacySse`]: super::LegacySse

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tower_lro::sse::{EventSplitter, event_data};

use super::super::Shared;
use super::super::answer::one_line;
use super::answer_id;
use super::oversized::Oversized;

/// The largest event of the stream: it carries the answers too, so as
/// large as an event of an answer in streamable HTTP (large tool results
/// are offloaded once whole).
const MAX_EVENT_BYTES: usize = 64 << 20;

/// Reads the stream of `generation` to its end, then tells the requests
/// waiting on it that their answers cannot come.
pub(super) async fn read(shared: Arc<Shared>, stream: (Incoming, EventSplitter), generation: u64) {
    let why = relay(&shared, stream).await;
    tracing::warn!(
        target: "tower_lro",
        "the server's HTTP+SSE event stream ended ({why}); requests waiting on it get an error, the next message opens a new one"
    );
    shared.transport.legacy.dropped(generation);
}

/// Relays the stream's events until it ends; why it ended.
async fn relay(shared: &Shared, (mut body, mut splitter): (Incoming, EventSplitter)) -> String {
    // Past an event over the cap, the bytes up to its end are skipped.
    let mut skipping: Option<Oversized> = None;
    loop {
        while let Some(event) = splitter.next_event() {
            on_event(shared, event).await;
        }
        if splitter.buffered() > MAX_EVENT_BYTES {
            tracing::warn!(
                target: "tower_lro",
                "the server's HTTP+SSE stream sent an event over {} MiB; it is dropped, the stream goes on",
                MAX_EVENT_BYTES >> 20
            );
            let held = splitter.take_rest();
            match Oversized::start(&held) {
                (oversized, Some(end)) => {
                    dropped(shared, &oversized);
                    splitter.push(&held[end..]);
                }
                (oversized, None) => skipping = Some(oversized),
            }
            continue;
        }
        let mut data = match body.frame().await {
            None => return "closed by the server".to_owned(),
            Some(Err(e)) => return format!("broke off: {e}"),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        if let Some(oversized) = &mut skipping {
            let Some(end) = oversized.feed(&data) else {
                continue;
            };
            dropped(shared, oversized);
            data = data.slice(end..);
            skipping = None;
        }
        splitter.push(&data);
    }
}

/// A dropped event: when it was the answer a request waits for, the
/// request learns of it.
fn dropped(shared: &Shared, oversized: &Oversized) {
    let waiter = oversized
        .answer_id()
        .and_then(|id| shared.transport.legacy.answered(&id));
    if let Some(waiter) = waiter {
        let _ = waiter.send(Err(format!(
            "the server sent an answer over {} MiB; it is dropped",
            MAX_EVENT_BYTES >> 20
        )));
    }
}

/// One event: an awaited answer to its request, any other message to the
/// agent; events of other types than `message` are not MCP's.
async fn on_event(shared: &Shared, event: Bytes) {
    let kind = event_type(&event);
    if !kind.is_empty() && kind != b"message" {
        tracing::debug!(
            target: "tower_lro",
            "an HTTP+SSE event of type {:?} is ignored",
            String::from_utf8_lossy(kind)
        );
        return;
    }
    let Some(data) = event_data(&event) else {
        return;
    };
    let waiter = answer_id(&data).and_then(|id| shared.transport.legacy.answered(&id));
    match waiter {
        Some(waiter) => {
            let data = match std::str::from_utf8(&data) {
                Ok(text) if text.contains(['\r', '\n']) => Bytes::from(one_line(text)),
                _ => data,
            };
            let _ = waiter.send(Ok(data));
        }
        None => shared.send_event(&event, None).await,
    }
}

/// The type of an event: its last `event` field (empty, like none, means
/// `message`).
pub(super) fn event_type(event: &[u8]) -> &[u8] {
    let mut kind: &[u8] = b"message";
    for line in event.split(|b| *b == b'\n' || *b == b'\r') {
        if let Some(value) = line.strip_prefix(b"event:") {
            kind = value.strip_prefix(b" ").unwrap_or(value);
        } else if line == b"event" {
            kind = b"";
        }
    }
    kind
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_of_an_event_is_its_last_event_field() {
        assert_eq!(
            event_type(b"event: endpoint\r\ndata: /m?s=1\r\n\r\n"),
            b"endpoint"
        );
        assert_eq!(event_type(b"event:message\ndata: {}\n\n"), b"message");
        assert_eq!(event_type(b"data: {}\n\n"), b"message");
        assert_eq!(event_type(b": comment\revent: a\revent: b\r\r"), b"b");
        assert_eq!(event_type(b"event: a\nevent\ndata: {}\n\n"), b"");
    }
}
