//! Wire types: MCP results as raw JSON, JSON-RPC classification, SSE events.

pub mod jsonrpc;
pub mod mcp;
pub(crate) mod sse;
