//! History offload (MessageOffloadOp): compact and compress chat histories
//! on the same engine as tool results. Transport-free: no HTTP types here.

mod body;
mod compact;
mod compress;
mod config;
mod extractive;
mod files;
mod format;
mod offloader;
mod render;
mod report;
mod summarize;

pub use compact::POINTER_MARKER;
pub use compress::SUMMARY_MARKER;
pub use config::{
    DEFAULT_COMPACT_RATIO_THRESHOLD, DEFAULT_KEEP_RECENT_COMPACT, DEFAULT_KEEP_RECENT_COMPRESS,
    DEFAULT_MAX_TOOL_MESSAGE_TOKENS, DEFAULT_MAX_TOTAL_TOKENS, DEFAULT_SUMMARY_MAX_TOKENS,
    HistoryConfig, SummaryMode, UnknownMode,
};
pub use extractive::ExtractiveSummarizer;
pub use files::HISTORY_FILE_PREFIX;
pub use format::ChatFormat;
pub use offloader::HistoryOffloader;
pub use report::{BodyRewrite, HistoryError, HistoryOutcome, HistoryReport};
pub use summarize::{Summarizer, SummaryError, SummaryFuture, SummaryRequest};
