//! The server's answer to one message, to the agent: nothing for `202`,
//! the refusal for an HTTP error, a JSON body as one line per message, an
//! event stream event by event as the server sends it (the server's own
//! GET stream too). A `tools/list` answer goes without the hidden tools;
//! a request whose answer cannot come gets a JSON-RPC error.
//!
//! Memory: each message waits for room in the bounded queue to stdout
//! before the next bytes of the answer are read, and an event is held only
//! up to a cap while its bytes come. Over the cap, an event of an answer
//! ends that answer with a JSON-RPC error to the agent (the request is
//! owed one, and the rest of the stream cannot be trusted to be relayed
//! whole); an event of the server's own GET stream is dropped with a
//! warning in the log and the stream goes on after it (a server request
//! or notification the agent cannot take in; closing and reopening the
//! stream would lose what comes meanwhile, and a server that sends it
//! again would make it a loop).

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use tower_lro::sse::{EventSplitter, event_data};

use super::message::Message;
use super::refusal::refusal;
use super::{Shared, within};

/// The largest event of an answer's event stream (as the largest line the
/// agent may send: 64 MiB; large tool results are offloaded before this).
const MAX_ANSWER_EVENT_BYTES: usize = 64 << 20;
/// The largest event of the server's own GET stream (its requests and
/// notifications).
const MAX_STREAM_EVENT_BYTES: usize = 16 << 20;

/// Relays one HTTP answer to the agent.
pub(super) async fn deliver<B>(
    response: Response<B>,
    shared: &Shared,
    message: &Message,
) -> Result<(), String>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let status = response.status();
    if message.method.as_deref() == Some("initialize") && status.is_success() {
        shared.remember_session(response.headers());
    }
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return Ok(());
    }
    if !status.is_success() {
        return Err(refusal(status, response.into_body(), shared).await);
    }
    let event_stream = is_event_stream(response.headers());
    let body = response.into_body();
    if event_stream {
        relay_events(body, shared, message.method.as_deref()).await
    } else {
        let collected = within(shared.body_timeout, body.collect())
            .await
            .ok_or("the answer stalled (body timeout)")?;
        let bytes = collected.map_err(|e| format!("the answer broke off: {e}"))?;
        relay_json(&bytes.to_bytes(), shared, message).await
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// A JSON answer: one message, or a batch (one line per message).
async fn relay_json(bytes: &[u8], shared: &Shared, message: &Message) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the answer is not UTF-8".to_owned())?;
    if message.method.as_deref() == Some("initialize") {
        shared.remember_version(text);
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) {
        Ok(batch) => {
            for m in batch {
                shared.send_answer(m.get(), message.method.as_deref()).await;
            }
        }
        Err(_) => shared.send_answer(text, message.method.as_deref()).await,
    }
    Ok(())
}

/// An event stream: each event's data, as it comes; `method`: the request
/// it answers (`None`: the server's own stream, whose events over the cap
/// are dropped; see the module's documentation).
pub(super) async fn relay_events<B>(
    body: B,
    shared: &Shared,
    method: Option<&str>,
) -> Result<(), String>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let cap = match method {
        Some(_) => MAX_ANSWER_EVENT_BYTES,
        None => MAX_STREAM_EVENT_BYTES,
    };
    let mut body = std::pin::pin!(body);
    let mut splitter = EventSplitter::default();
    // Past an event over the cap, the bytes up to its end are skipped.
    let mut skipping: Option<SkipEvent> = None;
    while let Some(frame) = within(shared.body_timeout, body.frame())
        .await
        .ok_or("the event stream stalled (body timeout)")?
    {
        let frame = frame.map_err(|e| format!("the event stream broke off: {e}"))?;
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        if let Some(skip) = &mut skipping {
            let Some(end) = skip.end_in(&data) else {
                continue;
            };
            data = data.slice(end..);
            skipping = None;
        }
        splitter.push(&data);
        while let Some(event) = splitter.next_event() {
            shared.send_event(&event, method).await;
        }
        if splitter.buffered() > cap {
            if method.is_some() {
                return Err(format!(
                    "the server sent an event over {} MiB; the answer is dropped",
                    cap >> 20
                ));
            }
            tracing::warn!(
                target: "tower_lro",
                "the server's stream sent an event over {} MiB; it is dropped, the stream goes on",
                cap >> 20
            );
            let mut skip = SkipEvent::default();
            let held = splitter.take_rest();
            // The held bytes tell where in a line the skipping starts; they
            // may even end the event (a last CR the splitter waited on).
            match skip.end_in(&held) {
                Some(end) => splitter.push(&held[end..]),
                None => skipping = Some(skip),
            }
        }
    }
    if let Some(event) = splitter.finish_event() {
        shared.send_event(&event, method).await;
    }
    Ok(())
}

/// Finds the end of an event (a blank line; lines end with CRLF, LF or
/// CR) in bytes that come in chunks, holding nothing but where it is.
#[derive(Debug, Default)]
pub(super) struct SkipEvent {
    /// No byte since the last line end (and one was seen).
    at_line_start: bool,
    /// The last byte was a CR (a LF right after it is the same line end).
    after_cr: bool,
}

impl SkipEvent {
    /// Where the event ends in `chunk` (the index just past its blank
    /// line), if it does.
    pub(super) fn end_in(&mut self, chunk: &[u8]) -> Option<usize> {
        for (i, &b) in chunk.iter().enumerate() {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match b {
                b'\n' if after_cr => {}
                b'\r' | b'\n' if self.at_line_start => {
                    // A LF right after this CR belongs to this line end: a
                    // next event starting with it would be an empty line.
                    let mut end = i + 1;
                    if b == b'\r' && chunk.get(end) == Some(&b'\n') {
                        end += 1;
                    }
                    self.at_line_start = false;
                    return Some(end);
                }
                b'\r' | b'\n' => {
                    self.at_line_start = true;
                    self.after_cr = b == b'\r';
                }
                _ => self.at_line_start = false,
            }
        }
        None
    }
}

impl Shared {
    /// One message to the agent, once there is room on stdout.
    pub(super) async fn send(&self, message: &str) {
        self.out.send(message.to_owned()).await;
    }

    /// An answer to the agent's `method`: a `tools/list` one without the
    /// hidden tools.
    pub(super) async fn send_answer(&self, text: &str, method: Option<&str>) {
        match method
            .filter(|m| *m == "tools/list")
            .and_then(|_| self.hidden.list_without(text))
        {
            Some(shown) => self.out.send(shown).await,
            None => self.send(text).await,
        }
    }

    /// The data of one event to the agent (none for priming events and
    /// comments); data of several lines is minified into one. In the
    /// answer to `initialize`, the negotiated version is remembered.
    pub(super) async fn send_event(&self, event: &Bytes, method: Option<&str>) {
        let Some(data) = event_data(event) else {
            return;
        };
        let Ok(text) = std::str::from_utf8(&data) else {
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        if text.contains('\n') || text.contains('\r') {
            self.send_answer(&one_line(text), method).await;
        } else {
            self.send_answer(text, method).await;
        }
        if method == Some("initialize") {
            self.remember_version(text);
        }
    }

    /// The JSON-RPC error a request is owed when its answer cannot come.
    pub(super) async fn owe_error(&self, message: &Message, why: &str) {
        let Some(id) = &message.request_id else {
            return;
        };
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32000, "message": format!("lro proxy: {why}")},
        });
        self.out.send(error.to_string()).await;
    }
}

/// A JSON text on one line: a JSON text holds CR and LF only as whitespace
/// between tokens (inside strings they are escaped), so each becomes a
/// space and the value is the same.
pub(super) fn one_line(json: &str) -> String {
    json.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_skipped_event_is_found_across_chunks_and_line_ends() {
        for (chunks, rest) in [
            (&[&b"data: aaaa"[..], b"aa\n", b"\nnext"][..], &b"next"[..]),
            (&[b"data: a\r\n", b"\r\nnext"], b"next"),
            (&[b"data: a\r", b"\n\r\nnext"], b"next"),
            (&[b"data: a\r\r", b"next"], b""),
            (&[b"data: a\r\n\r", b"\nnext"], b""),
            (&[b"data: a\ndata: b\n\n"], b""),
        ] {
            let mut skip = SkipEvent::default();
            let mut found = None;
            for chunk in chunks {
                if let Some(end) = skip.end_in(chunk) {
                    found = Some(&chunk[end..]);
                    break;
                }
            }
            assert_eq!(found, Some(rest), "{chunks:?}");
        }
        let mut skip = SkipEvent::default();
        assert_eq!(skip.end_in(b"data: a\ndata: b\r\nid: 3\r"), None);
    }

    #[test]
    fn data_of_several_lines_becomes_the_same_json_on_one_line() {
        let data = "{\r\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\r  \"result\": {\"text\": \"a\\nb\\r\\n\"}\n}";
        let line = one_line(data);
        assert!(!line.contains(['\r', '\n']));
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed,
            serde_json::from_str::<serde_json::Value>(data).unwrap()
        );
        assert_eq!(parsed["result"]["text"], "a\nb\r\n");
    }
}
