//! The `lro` command's engines (feature `cli`): what the `lro` binary runs,
//! as a library so that it can be embedded and tested in process.
//!
//! * [`proxy`] — the spec's local LRO proxy ("Remote Transport Proxy"): MCP
//!   over stdio to the agent, streamable HTTP to the remote server, large
//!   results offloaded into files on the agent's own disk.
//! * [`auth`] — OAuth 2.1 for MCP: the proxy's sign-in to a protected server.

pub mod auth;
mod hidden_tools;
mod http;
pub mod proxy;
