//! Lifecycle of offloaded files and sessions: where files are stored, which
//! sessions are LRO proxies.

pub mod sessions;
pub mod store;
