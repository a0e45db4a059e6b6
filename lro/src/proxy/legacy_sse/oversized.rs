//! An event over the cap on the HTTP+SSE stream: skipped to its end,
//! holding only its first and last bytes, from which the id of the answer
//! it was is read, so that the request waiting for it learns at once
//! instead of waiting for ever. Servers write the answer's `id` before its
//! `result` (the Python SDK: `{"jsonrpc":"2.0","id":4,"result":…}`) or
//! after it (the TypeScript SDK: `{"result":…,"jsonrpc":"2.0","id":4}`);
//! the first bytes also tell an answer (`result`, `error`) from a request
//! of the server (`method`), whose id is in another space. The same reading
//! spares a large answer that comes whole a second parse ([`at_edges`]).

use std::fmt;

use bytes::Bytes;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::super::answer::SkipEvent;
use super::id_key;

/// The first bytes of a message read for its id.
pub(super) const HEAD_BYTES: usize = 4096;
/// The last bytes of a message read for its id.
pub(super) const TAIL_BYTES: usize = 256;

/// What the first and last bytes of a message say of it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Edges {
    /// An answer, with its id (as a key of the waiting requests).
    Answer(String),
    /// A request or a notification of the server.
    NotAnswer,
    /// Nothing certain.
    Unknown,
}

/// What `head` (the first bytes of a JSON-RPC message) and `tail` (its
/// last ones) say of it; an id only when it is certainly the answer's.
pub(super) fn at_edges(head: &[u8], tail: &[u8]) -> Edges {
    let mut says = HeadSays::Unknown;
    let mut de = serde_json::Deserializer::from_slice(head);
    // The head is cut short: the error at its end is expected, what was
    // read before it is in `says`.
    let _ = serde::Deserializer::deserialize_map(&mut de, Head(&mut says));
    match says {
        HeadSays::Answer(Some(id)) => Edges::Answer(id_key(&id)),
        HeadSays::Answer(None) => match id_at_end(tail) {
            Some(id) => Edges::Answer(id_key(&id)),
            None => Edges::Unknown,
        },
        HeadSays::NotAnswer => Edges::NotAnswer,
        HeadSays::Unknown => Edges::Unknown,
    }
}

/// An event being skipped.
#[derive(Debug)]
pub(super) struct Oversized {
    skip: SkipEvent,
    head: Bytes,
    tail: Vec<u8>,
}

impl Oversized {
    /// Starts skipping the event whose first bytes are `held`; where it
    /// ends in them, if it does.
    pub(super) fn start(held: &Bytes) -> (Oversized, Option<usize>) {
        let mut oversized = Oversized {
            skip: SkipEvent::default(),
            head: held.slice(..held.len().min(HEAD_BYTES)),
            tail: Vec::with_capacity(2 * TAIL_BYTES),
        };
        let end = oversized.feed(held);
        (oversized, end)
    }

    /// Skips `chunk`; where the event ends in it, if it does.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> Option<usize> {
        let end = self.skip.end_in(chunk);
        let part = &chunk[..end.unwrap_or(chunk.len())];
        let part = &part[part.len().saturating_sub(TAIL_BYTES)..];
        self.tail.extend_from_slice(part);
        if self.tail.len() > TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        end
    }

    /// The id of the answer the event was (as a key of the waiting
    /// requests), when its first and last bytes tell it.
    pub(super) fn answer_id(&self) -> Option<String> {
        match at_edges(first_data(&self.head)?, &self.tail) {
            Edges::Answer(id) => Some(id),
            Edges::NotAnswer | Edges::Unknown => None,
        }
    }
}

/// The event's first `data:` line (the JSON text's first bytes).
fn first_data(head: &[u8]) -> Option<&[u8]> {
    let mut rest = head;
    loop {
        let end = rest
            .iter()
            .position(|b| *b == b'\r' || *b == b'\n')
            .unwrap_or(rest.len());
        if let Some(value) = rest[..end].strip_prefix(b"data:") {
            return Some(value.strip_prefix(b" ").unwrap_or(value));
        }
        if end == rest.len() {
            return None;
        }
        rest = &rest[end + 1..];
    }
}

/// What the first members of a message say.
enum HeadSays {
    Unknown,
    /// A request or notification (`method`).
    NotAnswer,
    /// An answer (`result` or `error`), with the id when it came first.
    Answer(Option<Value>),
}

/// Reads the members of a message up to its first `result`, `error` or
/// `method`.
struct Head<'a>(&'a mut HeadSays);

impl<'de> Visitor<'de> for Head<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut id = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => id = Some(map.next_value::<Value>()?),
                "method" => {
                    *self.0 = HeadSays::NotAnswer;
                    return Ok(());
                }
                "result" | "error" => {
                    *self.0 = HeadSays::Answer(id);
                    return Ok(());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The id of a message that ends with its `id` member (`…,"id":4}`).
fn id_at_end(tail: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(tail).ok()?.trim_end();
    let text = text.strip_suffix('}')?;
    let at = text.rfind("\"id\"")?;
    let before = text[..at].trim_end();
    if !(before.ends_with(',') || before.ends_with('{')) {
        return None;
    }
    let value = text[at + 4..].trim_start().strip_prefix(':')?;
    match serde_json::from_str::<Value>(value).ok()? {
        id @ (Value::Number(_) | Value::String(_)) => Some(id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skips `event` fed in chunks of `n` bytes, with `held` first.
    fn skipped(event: &[u8], held: usize, n: usize) -> (Option<String>, usize) {
        let (mut o, mut end) = Oversized::start(&Bytes::copy_from_slice(&event[..held]));
        let mut at = held;
        while end.is_none() && at < event.len() {
            let chunk = &event[at..(at + n).min(event.len())];
            end = o.feed(chunk).map(|e| at + e);
            at += chunk.len();
        }
        (o.answer_id(), end.unwrap_or(usize::MAX))
    }

    #[test]
    fn the_id_of_a_dropped_answer_is_read_from_its_first_or_last_bytes() {
        let big = "x".repeat(20_000);
        let python = format!(
            "event: message\r\ndata: {{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{{\"t\":\"{big}\"}}}}\r\n\r\nnext"
        );
        let typescript = format!(
            "data: {{\"result\":{{\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"a\"}}\n\nnext"
        );
        for (event, id) in [(&python, "4"), (&typescript, "\"a\"")] {
            for (held, n) in [(5000, 7), (100, 4096), (event.len() - 4, 1)] {
                let (found, end) = skipped(event.as_bytes(), held, n);
                assert_eq!(found.as_deref(), Some(id), "held {held}, chunks of {n}");
                assert_eq!(&event[end..], "next");
            }
        }
    }

    #[test]
    fn no_id_is_made_up() {
        let big = "x".repeat(20_000);
        for event in [
            // A request of the server: its id is not an answer's.
            format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":{{\"t\":\"{big}\"}}}}\n\n"
            ),
            format!(
                "data: {{\"method\":\"x\",\"params\":{{\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":4}}\n\n"
            ),
            // The last record's id, inside the result, is not the answer's.
            format!(
                "data: {{\"result\":{{\"t\":\"{big}\",\"r\":[{{\"id\":4}}]}},\"jsonrpc\":\"2.0\"}}\n\n"
            ),
            format!("data: {{\"result\":{{\"t\":\"{big}\",\"id\":4}}}}\n\n"),
            format!("data: not json {big}\n\n"),
        ] {
            assert_eq!(
                skipped(event.as_bytes(), 4096, 1000).0,
                None,
                "{}",
                &event[..80]
            );
        }
    }
}
