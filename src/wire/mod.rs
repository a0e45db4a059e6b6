//! Wire types: MCP results as raw JSON (and, for the layer, JSON-RPC and SSE).

pub mod mcp;
