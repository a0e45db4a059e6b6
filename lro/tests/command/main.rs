//! The `lro` binary run as a user runs it: file tools, gateway, proxy, OAuth
//! (see `tests/README.md`). One test binary for these files, so that the
//! dependencies are linked once for all of them.

#[path = "../../../tests/common/mod.rs"]
mod common;

mod agent;
mod agent_clients;
mod cli;
mod client_listing;
mod fleet;
mod fleet_azure;
mod fleet_faults;
mod forward_proxy;
mod gateway;
mod history;
mod large_results;
mod legacy_sse;
mod legacy_sse_faults;
mod legacy_sse_oauth;
mod load;
mod metrics;
mod oauth;
mod proxy;
mod proxy_cimd;
mod proxy_device;
mod proxy_flags;
mod proxy_keepalive;
mod proxy_memory;
mod proxy_reach;
