//! The `lro` command's engines (feature `cli`): what the `lro` binary runs,
//! as a library so that it can be embedded and tested in process.
//!
//! * [`gateway`] — an HTTP reverse proxy that puts the offload layer in front
//!   of any streamable-http MCP server, for remote agents.
//! * [`proxy`] — the spec's local LRO proxy ("Remote Transport Proxy"): MCP
//!   over stdio to the agent, streamable HTTP to the remote server, large
//!   results offloaded into files on the agent's own disk.
//! * [`connect`] — the upstream HTTP client both use (`https://` with
//!   rustls, `TCP_NODELAY`, connect timeout).
//! * [`auth`] — OAuth 2.1 for MCP: the proxy's sign-in to a protected server.

mod announce;
pub mod auth;
pub mod connect;
pub mod gateway;
mod hidden_tools;
mod http;
pub mod proxy;
