//! Server-sent events, cut into events without disturbing their bytes.
//!
//! An MCP streamable-http server answers a `POST` (and the `GET` of its own
//! stream) with `text/event-stream`: events separated by blank lines, lines
//! ending in CRLF, LF or CR, the JSON-RPC message in the `data:` lines,
//! besides comments, `id:`, `event:`, `retry:` and priming events with empty
//! data. [`EventSplitter`] cuts such a byte stream into complete events as
//! the chunks arrive, whatever their boundaries; [`event_data`] reads the
//! message of one, and [`replace_data`] gives it another. The offload layer reads event streams with them, and so
//! does the `lro proxy` command, which writes each message to the agent on
//! a line of its own.
//!
//! ```
//! use tower_lro::sse::{EventSplitter, event_data};
//!
//! let mut splitter = EventSplitter::default();
//! let mut messages = Vec::new();
//! // Chunks cut anywhere, even inside a line end.
//! for chunk in [&b": keep-alive\r\n\r\nid: 1\r\ndata: {\"id\""[..], b":1}\r", b"\n\r\n"] {
//!     splitter.push(chunk);
//!     while let Some(event) = splitter.next_event() {
//!         // The comment carries no data.
//!         if let Some(data) = event_data(&event) {
//!             messages.push(data);
//!         }
//!     }
//! }
//! assert_eq!(messages, [&b"{\"id\":1}"[..]]);
//! assert_eq!(splitter.buffered(), 0);
//! ```

pub use crate::wire::sse::{EventSplitter, event_data, replace_data};
