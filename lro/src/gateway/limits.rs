//! The gateway's limits against slow, idle and too many clients, and its
//! upstream timeouts.

use std::time::Duration;

/// Limits and timeouts of a [`Gateway`](super::Gateway).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Client connections served at once; further clients wait in the
    /// listen backlog until one ends (default 256).
    pub max_connections: usize,
    /// How long a client connection may take to deliver a complete request
    /// head, counted from when the gateway starts waiting for one: when the
    /// connection opens and again after each answer. It closes slow clients
    /// (headers sent a byte at a time) and idle keep-alive connections alike
    /// (default 10 s; SDK clients drop idle connections after ~5 s).
    pub header_read_timeout: Duration,
    /// The longest the upstream may take to send the head of its answer
    /// (`504` after it). Only the head: an event stream then runs as long as
    /// it lasts (default 300 s, for tool calls answered with plain JSON).
    pub response_head_timeout: Duration,
    /// How long a client may take to send a whole request body, from its
    /// head (default 60 s): a body sent a byte at a time no longer holds
    /// a connection slot; the request fails (`408`, or the route's error).
    pub request_body_timeout: Duration,
    /// The longest the upstream may go silent in the body of an answer
    /// (default 300 s): an answer cut off after it fails its calls alone
    /// (a JSON-RPC error when the gateway held it back). Not for the
    /// server's own `GET` event stream, which may rest indefinitely.
    pub body_idle_timeout: Duration,
    /// The slowest a client may read its answers, in bytes a second,
    /// judged over the last [`SEND_RATE_GRACE`](super::deadline::SEND_RATE_GRACE)
    /// the answers waited on it; its connection is closed under it
    /// (default 8 KiB/s; 0: no minimum).
    pub min_send_rate: u64,
    /// The largest request head accepted (`431` above it; default 64 KiB).
    pub max_header_bytes: usize,
    /// On shutdown, how long requests in flight may take to finish before
    /// their connections are closed (default 30 s; open event streams are
    /// cut at the end of it).
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            response_head_timeout: Duration::from_secs(300),
            request_body_timeout: Duration::from_secs(60),
            body_idle_timeout: Duration::from_secs(300),
            min_send_rate: 8 << 10,
            max_header_bytes: 64 << 10,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}
