//! The gateway's limits against slow, idle and too many clients, and its
//! upstream timeouts.

use std::time::Duration;

/// Limits and timeouts of a [`Gateway`](super::Gateway).
#[derive(Debug, Clone)]
pub struct Limits {
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
            max_header_bytes: 64 << 10,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}
