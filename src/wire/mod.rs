//! Wire types: the call a result answers, JSON-RPC classification, MCP
//! results as raw JSON, SSE events. Imports only the byte-level JSON helpers
//! ([`crate::json`]).

pub(crate) mod call;
pub(crate) mod jsonrpc;
pub(crate) mod mcp;
pub(crate) mod sse;
