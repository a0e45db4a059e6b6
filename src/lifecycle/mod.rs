//! Lifecycle of offloaded files: where they are stored.

pub mod store;
