//! What the engine decided for one result.

use super::descriptor::{OffloadResponse, OffloadedResult};
use super::events::PassReason;
use super::store::StoreError;

/// A result written to a file.
#[derive(Debug, Clone)]
pub struct Offloaded {
    /// The rewritten `CallToolResult` JSON, carrying the descriptor.
    pub result: String,
    /// The descriptor.
    pub response: OffloadResponse,
    /// The file.
    pub file: OffloadedResult,
}

/// A result that could not be written and was truncated instead.
#[derive(Debug)]
pub struct Truncated {
    /// The truncated `CallToolResult` JSON, with a warning block first.
    pub result: String,
    /// Why the file could not be written.
    pub error: StoreError,
    /// Records kept inline.
    pub kept: usize,
    /// Records in the full result.
    pub total: usize,
    /// Estimated tokens of the full result.
    pub estimated_tokens: usize,
}

/// What the engine decided for one result.
#[derive(Debug)]
pub enum Outcome {
    /// Keep the original bytes.
    Inline(PassReason),
    /// Written to a file; send `result` instead.
    Offloaded(Box<Offloaded>),
    /// The write failed; send the truncated `result` instead.
    Truncated(Box<Truncated>),
}

impl Outcome {
    /// The JSON to send in place of the result: `None` keeps the original.
    pub(crate) fn into_replacement(self) -> Option<String> {
        match self {
            Outcome::Offloaded(o) => Some(o.result),
            Outcome::Truncated(t) => Some(t.result),
            Outcome::Inline(_) => None,
        }
    }
}
