//! The official MCP SDK clients and the MCP conformance suite against the layer
//! (see `tests/README.md`). One test binary for these files, so that the
//! dependencies are linked once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod conformance;
mod interop_sdks;
