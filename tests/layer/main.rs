//! The tower layers, over loopback HTTP or in process
//! (see `tests/README.md`). One test binary for these files, so that the
//! dependencies are linked once for all of them.

/// The stand-in chat endpoint of the history examples (for
/// `history_layer` and `history_endpoint`).
#[cfg(feature = "history")]
#[path = "../../examples/support/chat_endpoint.rs"]
mod chat_endpoint;
mod client_profiles;
#[path = "../common/mod.rs"]
mod common;

mod extract_answers;
mod fuzz_layer;
// The features these need are on when the workspace is tested as a whole
// (`cargo test`: the `lro` command's crate switches them on).
#[cfg(feature = "history-endpoint")]
mod history_endpoint;
#[cfg(feature = "history")]
mod history_layer;
mod hostile;
mod layer_axum;
mod layer_faults;
mod layer_rmcp;
mod middleware_streams;
mod output_schemas;
mod serve_access;
mod serve_extract;
#[cfg(feature = "object-store")]
mod shared_store;
