//! The `lro` binary run as a user runs it: file tools, gateway, proxy, OAuth
//! (see `tests/README.md`). One test binary for these files, so that the
//! dependencies are linked once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod gateway;
mod large_results;
mod metrics;
mod oauth;
mod proxy;
mod proxy_memory;
