//! History offload (the spec's MessageOffloadOp): keeps a chat history
//! that grows over dozens of tool calls within the model's window, on the
//! same engine as tool results. Transport-free: no HTTP types here (the
//! tower layer for a chat endpoint is built on it).
//!
//! [`HistoryOffloader::rewrite_messages`] takes the messages of a
//! conversation in one of three formats ([`ChatFormat`]: OpenAI Chat
//! Completions, Anthropic Messages, OpenAI Responses) and returns them
//! rewritten, with a [`HistoryReport`] (tokens before and after, files
//! written, answers compacted, groups compressed).
//! [`HistoryOffloader::rewrite_body`] does the same on a whole request
//! body, keeping every other byte of it.
//!
//! # Modes ([`HistoryConfig`], the spec's parameters and defaults)
//!
//! * **compact**: when the history is over `max_total_tokens` (20000),
//!   each tool answer over `max_tool_message_tokens` (2000) outside the
//!   `keep_recent_compact` (1) most recent messages is written to a file in
//!   `store_dir` and its text replaced, in place, by a pointer: a JSON
//!   answer (array, object, JSON lines) goes through the offload engine
//!   (a JSONL file with the engine's header; the pointer is the engine's
//!   descriptor with its preview, line schema and ten jq recipes), plain
//!   text goes to a text file and the pointer is a short text
//!   ([`POINTER_MARKER`], the file, a preview, how to read on).
//! * **compress**: when the messages that are neither system nor among the
//!   `keep_recent_compress` (2) most recent are over `max_total_tokens`,
//!   they are cut into groups of at most `group_token_threshold` tokens
//!   (`None` or 0: one group; a unit over it is a group of its own), each
//!   replaced by one `user` message holding a summary from the
//!   [`Summarizer`] ([`SUMMARY_MARKER`], how many messages, the file
//!   `history-{chat_id}-{digest}.jsonl` holding them, one per line).
//! * **auto** (the default): compact, then compress when tokens after
//!   compaction / tokens before is above `compact_ratio_threshold` (0.75).
//!
//! System messages (`system` / `developer`; Anthropic's `system` is not a
//! message and is never touched) and the most recent messages are always
//! kept as they are.
//!
//! # Calls and their answers stay paired
//!
//! Compaction rewrites an answer's text where it stands (a `tool` message's
//! `content`, a `tool_result` block's `content`, a `function_call_output`'s
//! `output`), so its `tool_call_id` / `tool_use_id` / `call_id` and its
//! place stay. Compression replaces whole units: an assistant message with
//! its calls and every message up to the last answer to them (Anthropic:
//! the `tool_use` message and the next message with the `tool_result`
//! blocks; Responses: `function_call` to its `function_call_output` by
//! `call_id`, and a `reasoning` item with the item after it). The recent
//! messages start at the beginning of the unit they fall in.
//!
//! # The same rewrite every turn
//!
//! Clients resend the whole history every turn and providers cache prompt
//! prefixes, so a rewrite must not change what it wrote before:
//!
//! * file names are content-addressed (a SHA-256 of tool, arguments and
//!   answer; of `chat_id` and the group's messages), and the engine's
//!   files get an id made from that digest: the same answer always gets the
//!   same file and the same pointer, and nothing in a replacement depends
//!   on the time;
//! * pointers and summary messages are recognised and left alone, so a
//!   rewritten history fed back (an agent loop keeping the rewrite) keeps
//!   its prefix;
//! * summaries are remembered by the digest of their group, in memory and
//!   in `store_dir` (`history-summary-{digest}.txt`), so a new process
//!   gives the same text without asking the summarizer again; a group that
//!   was summarized is replaced again whenever its messages come back (the
//!   original history resent with a new turn), even when compression is not
//!   due;
//! * without a `chat_id`, the id is derived from the conversation's first
//!   non-system message (the spec's random UUID would rename every file
//!   every turn).
//!
//! One limit: after a restart, a client resending the *original* history
//! gets the same compacted answers and the same summaries for groups that
//! were closed by a following unit, but the groups are planned anew, so the
//! last group of the earlier turn may be cut differently (the in-memory
//! plan is what keeps it). Files in `store_dir` carry a content-derived id
//! whose time part is zero and do not expire by the offload TTL: do not
//! point a [`Custodian`](crate::cleanup::Custodian) at `store_dir`; delete it when
//! the conversation ends.
//!
//! # Summarizers
//!
//! [`ExtractiveSummarizer`] (the default) needs no model: it keeps the tool
//! names, the identifiers and the most informative sentences within the
//! budget, deterministically. Implement [`Summarizer`] for another.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tower_lro::{ChatFormat, HistoryConfig, HistoryOffloader, SummaryMode, POINTER_MARKER};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = HistoryOffloader::new(
//!     HistoryConfig::default()
//!         .mode(SummaryMode::Compact)
//!         .store_dir(dir.path())
//!         .max_total_tokens(1_000)
//!         .max_tool_message_tokens(500),
//! );
//! let log: String = (0..300).map(|i| format!("request req_{i} took {i}ms\n")).collect();
//! let messages = vec![
//!     json!({"role": "system", "content": "You are an operations agent."}),
//!     json!({"role": "user", "content": "Why is the API slow?"}),
//!     json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
//!            "function": {"name": "read_log", "arguments": "{\"lines\":300}"}}]}),
//!     json!({"role": "tool", "tool_call_id": "call_1", "content": log}),
//!     json!({"role": "assistant", "content": "Requests get slower over time."}),
//! ];
//! let out = offloader.rewrite_messages(ChatFormat::OpenAiChat, messages.clone()).await.unwrap();
//! let pointer = out.messages[3]["content"].as_str().unwrap();
//! assert!(pointer.starts_with(POINTER_MARKER));          // the answer, compacted in place
//! assert_eq!(out.messages[3]["tool_call_id"], "call_1");  // still paired with its call
//! assert_eq!(out.messages[4], messages[4]);              // the recent message is kept
//! let file = &out.report.files_written[0];
//! assert_eq!(std::fs::read_to_string(file).unwrap(), log); // nothing is lost
//! // The same history next turn: the same rewrite, nothing written again.
//! let again = offloader.rewrite_messages(ChatFormat::OpenAiChat, messages).await.unwrap();
//! assert_eq!(again.messages, out.messages);
//! assert!(again.report.files_written.is_empty());
//! # }
//! ```
//!
//! # Files
//!
//! `offloader` (the offloader and the order of a rewrite), extended by
//! `body` (a whole request body), `compact` and `compress` (the two
//! modes); `render` (a group as a transcript); `format` (the three
//! formats: shapes, pairing, where an answer's text is); `files`
//! (content-addressed names, the idempotent store); `extractive` and
//! `summarize` (summarizers); `config`; `report`.

mod body;
mod compact;
mod compress;
mod config;
mod extractive;
mod files;
mod format;
mod layer;
mod offloader;
mod render;
mod report;
mod summarize;

pub use compact::POINTER_MARKER;
pub use compress::SUMMARY_MARKER;
pub use config::{
    DEFAULT_COMPACT_RATIO_THRESHOLD, DEFAULT_KEEP_RECENT_COMPACT, DEFAULT_KEEP_RECENT_COMPRESS,
    DEFAULT_MAX_TOOL_MESSAGE_TOKENS, DEFAULT_MAX_TOTAL_TOKENS, DEFAULT_SUMMARY_MAX_TOKENS,
    HISTORY_ENV_PREFIX, HistoryConfig, SummaryMode, UnknownMode,
};
pub use extractive::ExtractiveSummarizer;
pub use files::HISTORY_FILE_PREFIX;
pub use format::ChatFormat;
#[cfg(feature = "history-endpoint")]
pub use layer::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_TIMEOUT, EndpointError,
    EndpointSummarizer,
};
pub use layer::{
    DEFAULT_MAX_CHAT_BODY_BYTES, DEFAULT_MAX_HELD_CHAT_BYTES, DEFAULT_REWRITE_TIMEOUT,
    FallbackReason, HistoryEvent, HistoryOffloadLayer, HistoryOffloadLayerBuilder,
    HistoryOffloadService, HistoryResponseFuture,
};
pub use offloader::HistoryOffloader;
pub use report::{BodyRewrite, HistoryError, HistoryOutcome, HistoryReport};
pub use summarize::{Summarizer, SummaryError, SummaryFuture, SummaryRequest};
