//! What a rewrite did ([`HistoryReport`]), its results and its errors.

use std::path::PathBuf;

use super::config::SummaryMode;
use super::summarize::SummaryError;
use crate::store::StoreError;

/// What a rewrite did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistoryReport {
    /// Estimated tokens of the messages before.
    pub tokens_before: usize,
    /// Estimated tokens of the messages after.
    pub tokens_after: usize,
    /// Files written by this rewrite (files already there from an earlier
    /// turn are not listed again).
    pub files_written: Vec<PathBuf>,
    /// Tool answers replaced by a pointer to their file in this rewrite
    /// (remembered ones included).
    pub messages_compacted: usize,
    /// Groups of messages replaced by a summary (remembered ones included).
    pub groups_compressed: usize,
    /// Summaries asked of the summarizer (the others were remembered).
    pub summaries_made: usize,
    /// The mode that was configured.
    pub mode: SummaryMode,
    /// Whether compaction ran (the history was over `max_total_tokens`).
    pub compacted: bool,
    /// Whether compression ran (by mode, or in `auto` because compaction
    /// kept more than `compact_ratio_threshold`).
    pub compressed: bool,
}

impl HistoryReport {
    pub(crate) fn new(mode: SummaryMode, tokens_before: usize) -> Self {
        HistoryReport {
            tokens_before,
            tokens_after: tokens_before,
            files_written: Vec::new(),
            messages_compacted: 0,
            groups_compressed: 0,
            summaries_made: 0,
            mode,
            compacted: false,
            compressed: false,
        }
    }

    /// Whether the messages changed.
    pub fn changed(&self) -> bool {
        self.messages_compacted > 0 || self.groups_compressed > 0
    }
}

/// The rewritten messages and what was done.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HistoryOutcome {
    /// The messages, in the same format as given.
    pub messages: Vec<serde_json::Value>,
    /// What was done.
    pub report: HistoryReport,
}

/// The result of [`HistoryOffloader::rewrite_body`](crate::history::HistoryOffloader::rewrite_body).
#[derive(Debug, Clone)]
pub enum BodyRewrite {
    /// Nothing to change: send the original body.
    Unchanged(HistoryReport),
    /// The body with its messages rewritten; every other member keeps its
    /// bytes.
    Rewritten {
        /// The new body.
        body: Vec<u8>,
        /// What was done.
        report: HistoryReport,
    },
}

impl BodyRewrite {
    /// The report, either way.
    pub fn report(&self) -> &HistoryReport {
        match self {
            BodyRewrite::Unchanged(report) | BodyRewrite::Rewritten { report, .. } => report,
        }
    }
}

/// Why a history could not be rewritten.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The body is not a JSON object with the format's messages member.
    #[error("not a chat request body: {0}")]
    NotChatBody(String),
    /// A message is not shaped as its format says.
    #[error("message {index}: {reason}")]
    BadMessage {
        /// Its position in the messages.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be written or read in `store_dir`.
    #[error("history store: {0}")]
    Store(#[from] StoreError),
    /// The summarizer failed.
    #[error(transparent)]
    Summarizer(#[from] SummaryError),
    /// The blocking work was interrupted (its task panicked or the runtime
    /// is shutting down).
    #[error("history rewrite interrupted")]
    Interrupted,
}
