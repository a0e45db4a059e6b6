//! The tower middleware: [`OffloadLayer`] and [`OffloadService`].
//!
//! Put the layer in front of any MCP streamable-http endpoint (an axum
//! `Router`, rmcp's `StreamableHttpService`, a hyper service, a gateway):
//!
//! * a request is never held back: it reaches the inner service at once,
//!   byte for byte, and only the chunks of a `POST` body are kept (by
//!   reference, as the inner service reads them) up to a cap
//!   ([`DEFAULT_MAX_REQUEST_BYTES`]). When the response arrives, the
//!   request is classified from them; a body over the cap, not JSON, not
//!   read to its end, or of another method gets its response passed
//!   through. `GET` (never-ending SSE streams), `DELETE` and everything
//!   else stream through untouched, never buffered;
//! * `tools/call` and `tasks/result` requests (also inside legacy JSON-RPC
//!   batches) are watched: their id, tool name and arguments are kept;
//! * an `application/json` response whose length (`Content-Length`) proves
//!   every watched result in it under its threshold streams on unread;
//!   any other is collected; each watched result in it
//!   is handed to the [`Offloader`](crate::Offloader) and, when offloaded,
//!   replaced by the descriptor result; every other byte is unchanged and
//!   `Content-Length` is fixed;
//! * a `text/event-stream` response is split into events as they arrive:
//!   events before the result (progress, logging, server requests) are
//!   forwarded at once, byte for byte; only the event carrying a watched
//!   result is rewritten (its `id:`, `event:` and other lines kept); after
//!   the last watched result the stream is forwarded untouched;
//! * a request with the proxy header ([`DEFAULT_PROXY_HEADER`]: `1` or
//!   `true`), from a session whose `initialize` declared
//!   `clientInfo.proxy: true`, or whose `params._meta` carries
//!   `"io.modelcontextprotocol/clientInfo": {"proxy": true}` (2026-07-28)
//!   gets the inner response untouched;
//! * the layer never answers on its own: the inner service's errors, error
//!   statuses and broken bodies reach the client as they were.
//!
//! ```no_run
//! use axum::{Router, routing::post};
//! use tower_lro::OffloadLayer;
//!
//! # async fn handler() -> &'static str { "" }
//! let layer = OffloadLayer::builder()
//!     .threshold_tokens(1600)
//!     .output_dir("/tmp/lro")
//!     .build();
//! let app: Router = Router::new().route("/mcp", post(handler)).layer(layer);
//! ```

mod body;
mod budget;
mod future;
#[allow(clippy::module_inception)]
mod layer;
mod service;

pub use body::{OffloadBody, RequestBody};
pub use future::ResponseFuture;
pub use layer::{
    DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER,
    DEFAULT_PROXY_SESSION_TTL, OffloadLayer, OffloadLayerBuilder,
};
pub use service::OffloadService;
