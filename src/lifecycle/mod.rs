//! Lifecycle of offloaded files and sessions: where files are stored, when
//! they are deleted, which events tell about them, which sessions are LRO
//! proxies.

pub mod cleanup;
pub mod events;
pub mod sessions;
pub mod store;
