//! History offload (MessageOffloadOp): compact and compress chat histories
//! on the same engine as tool results. Transport-free: no HTTP types here.

mod summarize;

pub use summarize::{Summarizer, SummaryError, SummaryFuture, SummaryRequest};
