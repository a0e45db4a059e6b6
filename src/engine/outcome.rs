//! What the engine decided for one result.

use super::descriptor::{OffloadResponse, OffloadedResult};
use super::events::PassReason;
use crate::store::StoreError;

/// A result written to a file. Its `Debug` shows the file and counts, not
/// the result.
#[derive(Clone)]
#[non_exhaustive]
pub struct Offloaded {
    /// The rewritten `CallToolResult` JSON, carrying the descriptor.
    pub result: String,
    /// The descriptor.
    pub response: OffloadResponse,
    /// The file.
    pub file: OffloadedResult,
}

/// A result that could not be written and was truncated instead. Its
/// `Debug` shows counts and the error, not the result.
#[non_exhaustive]
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

impl std::fmt::Debug for Offloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offloaded")
            .field("result_bytes", &self.result.len())
            .field("response", &self.response)
            .field("file", &self.file)
            .finish()
    }
}

impl std::fmt::Debug for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Truncated")
            .field("result_bytes", &self.result.len())
            .field("error", &self.error)
            .field("kept", &self.kept)
            .field("total", &self.total)
            .field("estimated_tokens", &self.estimated_tokens)
            .finish()
    }
}
