//! The server's answer to one message, to the agent: nothing for `202`,
//! the refusal for an HTTP error, a JSON body as one line per message, an
//! event stream event by event as the server sends it (the server's own
//! GET stream too). A `tools/list` answer goes without the hidden tools;
//! a request whose answer cannot come gets a JSON-RPC error.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use tower_lro::sse::{EventSplitter, event_data};

use super::message::Message;
use super::refusal::refusal;
use super::{Shared, within};

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
        relay_json(&bytes.to_bytes(), shared, message)
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
fn relay_json(bytes: &[u8], shared: &Shared, message: &Message) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the answer is not UTF-8".to_owned())?;
    if message.method.as_deref() == Some("initialize") {
        shared.remember_version(text);
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) {
        Ok(batch) => batch
            .iter()
            .for_each(|m| shared.send_answer(m.get(), message.method.as_deref())),
        Err(_) => shared.send_answer(text, message.method.as_deref()),
    }
    Ok(())
}

/// An event stream: each event's data, as it comes; `method`: the request
/// it answers (`None`: the server's own stream).
pub(super) async fn relay_events<B>(
    body: B,
    shared: &Shared,
    method: Option<&str>,
) -> Result<(), String>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut body = std::pin::pin!(body);
    let mut splitter = EventSplitter::default();
    while let Some(frame) = within(shared.body_timeout, body.frame())
        .await
        .ok_or("the event stream stalled (body timeout)")?
    {
        let frame = frame.map_err(|e| format!("the event stream broke off: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        splitter.push(&data);
        while let Some(event) = splitter.next_event() {
            shared.send_event(&event, method);
        }
    }
    if let Some(event) = splitter.finish_event() {
        shared.send_event(&event, method);
    }
    Ok(())
}

impl Shared {
    /// One message to the agent.
    pub(super) fn send(&self, message: &str) {
        let _ = self.out.send(message.to_owned());
    }

    /// An answer to the agent's `method`: a `tools/list` one without the
    /// hidden tools.
    pub(super) fn send_answer(&self, text: &str, method: Option<&str>) {
        match method
            .filter(|m| *m == "tools/list")
            .and_then(|_| self.hidden.list_without(text))
        {
            Some(shown) => self.send(&shown),
            None => self.send(text),
        }
    }

    /// The data of one event to the agent (none for priming events and
    /// comments); data of several lines is minified into one. In the
    /// answer to `initialize`, the negotiated version is remembered.
    pub(super) fn send_event(&self, event: &Bytes, method: Option<&str>) {
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
            self.send_answer(&one_line(text), method);
        } else {
            self.send_answer(text, method);
        }
        if method == Some("initialize") {
            self.remember_version(text);
        }
    }

    /// The JSON-RPC error a request is owed when its answer cannot come.
    pub(super) fn owe_error(&self, message: &Message, why: &str) {
        let Some(id) = &message.request_id else {
            return;
        };
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32000, "message": format!("lro proxy: {why}")},
        });
        self.send(&error.to_string());
    }
}

/// A JSON text on one line: a JSON text holds CR and LF only as whitespace
/// between tokens (inside strings they are escaped), so each becomes a
/// space and the value is the same.
fn one_line(json: &str) -> String {
    json.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
