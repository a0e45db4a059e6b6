//! Summarizers: what replaces a group of older messages in `compress` mode.
//!
//! A [`Summarizer`] turns the text of a group of messages into a shorter
//! text within a token budget. The history engine calls it once per group and
//! remembers the answer (content-addressed), so the same group always gets the
//! same summary and a remote summarizer is asked only once.

use std::future::Future;
use std::pin::Pin;

/// The future a [`Summarizer`] returns.
pub type SummaryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<String, SummaryError>> + Send + 'a>>;

/// What a [`Summarizer`] is asked to summarize.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SummaryRequest<'a> {
    /// The group's messages, rendered as plain text, one message per
    /// paragraph, each starting with its role (`user:`, `assistant:`,
    /// `tool (name):`).
    pub transcript: &'a str,
    /// The most the summary should cost, in estimated tokens.
    pub budget_tokens: usize,
    /// The conversation's id (`chat_id`), when one was configured.
    pub chat_id: Option<&'a str>,
}

impl<'a> SummaryRequest<'a> {
    /// A request to summarize `transcript` within `budget_tokens`.
    pub fn new(transcript: &'a str, budget_tokens: usize) -> Self {
        SummaryRequest {
            transcript,
            budget_tokens,
            chat_id: None,
        }
    }

    /// The same request for the conversation `chat_id`.
    pub fn with_chat_id(mut self, chat_id: Option<&'a str>) -> Self {
        self.chat_id = chat_id;
        self
    }
}

/// Why a summary could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// The summarizer's endpoint could not be reached or failed.
    #[error("summarizer endpoint: {0}")]
    Endpoint(String),
    /// The summarizer answered something that is not a summary.
    #[error("summarizer answer: {0}")]
    BadAnswer(String),
    /// The summarizer gave up (time, size or another limit).
    #[error("summarizer: {0}")]
    Other(String),
}

/// Makes summaries of message groups (`compress` mode).
///
/// Implementations must be deterministic for a given request where they can
/// (the engine remembers summaries anyway, so a history resent every turn
/// keeps the same prefix).
pub trait Summarizer: Send + Sync + 'static {
    /// Summarizes `request.transcript` within `request.budget_tokens`.
    fn summarize<'a>(&'a self, request: SummaryRequest<'a>) -> SummaryFuture<'a>;
}
