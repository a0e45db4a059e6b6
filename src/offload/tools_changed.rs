//! Notifying a client that the layer's tools are there now
//! ([`ToolListing::AfterOffload`](crate::config::ToolListing::AfterOffload)):
//! `notifications/tools/list_changed`, sent before the answer that carries
//! the session's first offload, in the same response (a JSON answer
//! becomes an event stream of the two messages; the client accepts one,
//! see [`Shared::lazy_session`](super::state::Shared::lazy_session)).

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, TRANSFER_ENCODING};

/// The notification, as one server-sent event.
pub(crate) const TOOLS_CHANGED_EVENT: &[u8] =
    b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";

/// A JSON answer as an event stream: the notification, then the answer
/// (each of its lines one `data:` line, so any JSON text fits).
pub(crate) fn as_stream_after_notice(parts: &mut http::response::Parts, json: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(TOOLS_CHANGED_EVENT.len() + json.len() + 32);
    out.extend_from_slice(TOOLS_CHANGED_EVENT);
    out.extend_from_slice(b"event: message\n");
    for line in json.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\n");
    }
    out.extend_from_slice(b"\n");
    parts.headers.remove(CONTENT_LENGTH);
    parts.headers.remove(TRANSFER_ENCODING);
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    out.freeze()
}

/// An event with the notification before it.
pub(crate) fn after_notice(event: Bytes) -> Bytes {
    let mut out = BytesMut::with_capacity(TOOLS_CHANGED_EVENT.len() + event.len());
    out.extend_from_slice(TOOLS_CHANGED_EVENT);
    out.extend_from_slice(&event);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sse::{EventSplitter, event_data};

    #[test]
    fn a_json_answer_becomes_two_events_read_back_whole() {
        let json = b"{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\n  \"result\": {}\n}";
        let mut parts = http::Response::new(()).into_parts().0;
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(json.len()));
        let body = as_stream_after_notice(&mut parts, json);
        assert_eq!(parts.headers[CONTENT_TYPE], "text/event-stream");
        assert!(!parts.headers.contains_key(CONTENT_LENGTH));
        let mut split = EventSplitter::default();
        split.push(&body);
        let mut messages = Vec::new();
        while let Some(e) = split.next_event() {
            let data = event_data(&e).unwrap();
            messages.push(serde_json::from_slice::<serde_json::Value>(&data).unwrap());
        }
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["method"], "notifications/tools/list_changed");
        assert_eq!(messages[1]["id"], 1);
    }
}
