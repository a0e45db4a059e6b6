//! The history offload on HTTP: summaries from a chat endpoint
//! (`endpoint`, feature `history-endpoint`).

#[cfg(feature = "history-endpoint")]
mod endpoint;

#[cfg(feature = "history-endpoint")]
pub use endpoint::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_TIMEOUT, EndpointError,
    EndpointSummarizer,
};
