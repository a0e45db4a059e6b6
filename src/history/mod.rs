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
//! body, keeping every other byte of it. [`HistoryOffloadLayer`] does it
//! in front of an HTTP service that receives chat requests ([The history
//! offload layer](#the-history-offload-layer)).
//!
//! The three formats: OpenAI Chat Completions (`messages`, role `tool`,
//! `tool_calls`), Anthropic Messages (`tool_use` / `tool_result` blocks,
//! string or block content) and OpenAI Responses (`input`,
//! `function_call` / `function_call_output`). Tokens are estimated with
//! the crate's CJK-aware estimator, or any
//! [`TokenEstimator`](crate::estimate::TokenEstimator).
//!
//! # Modes ([`HistoryConfig`], the spec's parameters and defaults)
//!
//! Each mode acts on the history before its newest turn, and only when
//! that is over `max_total_tokens` (20000) ([the
//! budget](#the-budget-a-cap-with-hysteresis)):
//!
//! * **compact**: each tool answer over `max_tool_message_tokens` (2000)
//!   is written to a file in `store_dir` and its text replaced, in place,
//!   by a pointer: a JSON answer (array, object, JSON lines) goes through
//!   the offload engine (a JSONL file with the engine's header; the
//!   pointer is the engine's descriptor with its preview, line schema and
//!   ten jq recipes), plain text goes to a text file and the pointer is a
//!   short text ([`POINTER_MARKER`], the file, a preview, how to read on).
//! * **compress**: the messages that are neither system nor among the
//!   `keep_recent_compress` (2) most recent are cut into groups of at most
//!   `group_token_threshold` tokens (`None` or 0: one group; a unit over
//!   it is a group of its own), each replaced by one `user` message
//!   holding a summary from the [`Summarizer`] ([`SUMMARY_MARKER`], how
//!   many messages, the file `history-{chat_id}-{digest}.jsonl` holding
//!   them, one per line).
//! * **auto** (the default): compact, then compress when tokens after
//!   compaction / tokens before is above `compact_ratio_threshold` (0.75),
//!   or when compaction left the history over the low mark.
//!
//! # The budget: a cap with hysteresis
//!
//! * **The newest turn is never touched**: the newest message that makes
//!   calls (an assistant message's `tool_calls` / `tool_use` blocks; the
//!   Responses `function_call` items of one turn) and everything after it,
//!   however many answers (parallel calls), and at least the
//!   `keep_recent_compact` (1) last messages. A tool answer the model has
//!   not seen yet is never replaced.
//! * **A cap**: after a rewrite, the history before the newest turn is
//!   within `max_total_tokens`, every time the mode allows it: over it,
//!   it is brought down to `low_water_tokens` (default: half the budget)
//!   by escalating: compaction, then (not in `compact` mode) new summaries
//!   beside the earlier ones, then one summary of everything (earlier
//!   summaries and pointers included: a summary of summaries), then the
//!   `keep_recent_compress` last messages too. Only system messages, the
//!   newest turn and, in `compact` mode, what compaction cannot shrink stay
//!   over it.
//! * **Hysteresis, for prompt caches**: a rewrite is remembered as a
//!   checkpoint (the rewritten messages of that prefix of the original
//!   history, by its digest; in memory and in `store_dir` as
//!   `history-checkpoint-{digest}.json`). The next requests, which resend
//!   the original history with new turns, get the checkpoint and their new
//!   messages as they came: each request starts with the previous one,
//!   until the budget is reached again. `tests/command/history.rs`
//!   measures it over 50 turns of ~1.5k-token tool answers: 0.92 of each
//!   request is the start of the previous one. The share falls as turns
//!   grow against the budget: a turn of a third of the budget brings a
//!   rewrite every second turn, which keeps only the checkpoint (~0.7).
//!
//! # Read back wherever the agent runs
//!
//! The pointers name files on the host that rewrote the history. A proxy
//! in front of the provider can add a tool to the requests whose history
//! names such files and answer the model's calls itself
//! ([`read_back`]; the `lro history` command does), so a model whose own
//! tools run elsewhere still reads what was offloaded. With
//! [`HistoryOffloader::with_bucket`] (feature `object-store`) the files
//! also go to object storage, where the other processes of a fleet read
//! them, and the checkpoints and summaries, back.
//!
//! [`HistoryConfig::load`] reads the same keys from a `[prompt.history]`
//! TOML section and `ATLATL_PROMPT__HISTORY__*` variables
//! (`working_summary_mode = "compress"`, `group_token_threshold = 4000`,
//! ...), as [`OffloadConfig::load`](crate::config::OffloadConfig::load)
//! does for `[prompt.offload]`.
//!
//! System messages (`system` / `developer`; Anthropic's `system` is not a
//! message and is never touched) and the newest turn are always kept as
//! they are.
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
//!   every turn);
//! * the rewrite of the history's start is remembered as a checkpoint in
//!   `store_dir` too, so after a restart a client resending the original
//!   history gets the same bytes.
//!
//! Files in `store_dir` carry a content-derived id
//! whose time part is zero and do not expire by the offload TTL: do not
//! point a [`Custodian`](crate::cleanup::Custodian) at `store_dir`. They
//! expire when unused for `file_ttl_seconds` (7 days): each use touches a
//! file, and [`sweep_history_dir`] deletes those past it (`lro history`
//! sweeps its directory; a program of its own calls it, or deletes
//! `store_dir` when the conversation ends). In a shared store, give the
//! prefix a lifecycle rule of the same age.
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
//! use tower_lro::history::{ChatFormat, HistoryConfig, HistoryOffloader, SummaryMode, POINTER_MARKER};
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
//!     json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_2", "type": "function",
//!            "function": {"name": "read_config", "arguments": "{}"}}]}),
//!     json!({"role": "tool", "tool_call_id": "call_2", "content": "timeout = 30s"}),
//! ];
//! let out = offloader.rewrite_messages(ChatFormat::OpenAiChat, messages.clone()).await.unwrap();
//! let pointer = out.messages[3]["content"].as_str().unwrap();
//! assert!(pointer.starts_with(POINTER_MARKER));          // the answer, compacted in place
//! assert_eq!(out.messages[3]["tool_call_id"], "call_1");  // still paired with its call
//! assert_eq!(out.messages[4..], messages[4..]);           // the newest turn is kept
//! let file = &out.report.files_written[0];
//! assert_eq!(std::fs::read_to_string(file).unwrap(), log); // nothing is lost
//! // The same history next turn: the same rewrite, nothing written again.
//! let again = offloader.rewrite_messages(ChatFormat::OpenAiChat, messages).await.unwrap();
//! assert_eq!(again.messages, out.messages);
//! assert!(again.report.files_written.is_empty());
//! # }
//! ```
//!
//! In an agent loop, and in a gateway:
//!
//! ```no_run
//! use tower_lro::history::{ChatFormat, HistoryConfig, HistoryError, HistoryOffloader, SummaryMode};
//!
//! # async fn run(messages: Vec<serde_json::Value>, body: &[u8]) -> Result<(), HistoryError> {
//! let offloader = HistoryOffloader::new(
//!     HistoryConfig::default()
//!         .mode(SummaryMode::Auto)
//!         .store_dir("/var/lib/agent/history")
//!         .chat_id("ticket-4711"),
//! );
//! // In an agent loop: the messages before each model call.
//! let out = offloader.rewrite_messages(ChatFormat::OpenAiChat, messages).await?;
//! println!("{} → {} tokens, {} files", out.report.tokens_before, out.report.tokens_after,
//!          out.report.files_written.len());
//! // In a gateway: a whole request body (format detected), other members kept byte for byte.
//! let rewritten = offloader.rewrite_body(None, body).await?;
//! # let _ = rewritten; Ok(()) }
//! ```
//!
//! # The history offload layer
//!
//! [`HistoryOffloadLayer`] puts the history offload in front of an HTTP
//! service that receives chat requests: a gateway in front of a model
//! provider, or an agent's own endpoint. The inner service gets the request
//! with its history already rewritten; nothing else changes.
//! `examples/history_gateway.rs` runs it on 127.0.0.1: a stand-in chat
//! endpoint (no model; it answers how many messages it got) behind the
//! layer, a 40-turn history with ten large tool answers sent, then resent
//! with one more turn; it prints the tokens before and after and the files
//! written.
//!
//! ```no_run
//! use axum::{Router, routing::post};
//! use tower_lro::history::{HistoryConfig, HistoryOffloadLayer, HistoryOffloader, SummaryMode};
//!
//! # async fn forward_to_provider() -> &'static str { "" }
//! # fn main() {
//! let config = HistoryConfig::default()
//!     .mode(SummaryMode::Auto)
//!     .store_dir("/var/lib/gateway/history");
//! let layer = HistoryOffloadLayer::builder(HistoryOffloader::new(config))
//!     .event_hook(|event| eprintln!("history: {}", event.name()))
//!     .build();
//! let app: Router = Router::new()
//!     .route("/v1/chat/completions", post(forward_to_provider))
//!     .route("/v1/messages", post(forward_to_provider))
//!     .route("/v1/responses", post(forward_to_provider))
//!     .layer(layer);
//! # }
//! ```
//!
//! * **Which requests.** A `POST` whose path ends in `/chat/completions`
//!   (OpenAI Chat Completions), `/messages` (Anthropic Messages) or
//!   `/responses` (OpenAI Responses) is rewritten in that format; any other
//!   `POST` with a JSON body is read and its format detected (a JSON body
//!   that is no chat request goes on as it came, without an event). Other
//!   methods and bodies reach the inner service at once, never read.
//! * **What the inner service gets.** The body with its messages rewritten
//!   (every other member keeps its bytes), `Content-Length` set to the new
//!   length, `Transfer-Encoding` dropped. The same history always becomes
//!   the same bytes ([The same rewrite every
//!   turn](#the-same-rewrite-every-turn)), so a provider's prompt cache
//!   still hits when the client resends it.
//! * **Responses** are never looked at: a streamed answer
//!   (`"stream": true`, `text/event-stream`) reaches the client chunk by
//!   chunk as the inner service sends it.
//! * **Never fails a request because of its own trouble.** A body over
//!   `max_body_bytes` (default 32 MiB, [`DEFAULT_MAX_CHAT_BODY_BYTES`];
//!   announced by `Content-Length`, or found while reading), bodies held by
//!   all requests over `max_held_bytes` (default 256 MiB,
//!   [`DEFAULT_MAX_HELD_CHAT_BYTES`]), a compressed body
//!   (`Content-Encoding`), a body that is not a chat request in JSON on a
//!   chat path, a broken body, a summarizer or file store that fails, a
//!   rewrite over `rewrite_timeout` (default 120 s,
//!   [`DEFAULT_REWRITE_TIMEOUT`]): the inner service gets the original
//!   body, byte for byte, and a [`HistoryEvent::FellBack`] says why
//!   ([`FallbackReason`]).
//! * **Events.** [`HistoryEvent::Rewritten`] (with the engine's
//!   [`HistoryReport`]: tokens before and after, files written, messages
//!   compacted, groups compressed), `Unchanged`, `FellBack`; each also a
//!   `tracing` event (target `tower_lro`, `event` = `HistoryRewritten` /
//!   `HistoryUnchanged` / `HistoryFellBack`), and handed to the
//!   [`event_hook`](HistoryOffloadLayerBuilder::event_hook) callback.
//! * **Body type.** The inner service receives
//!   `Request<`[`RequestBody<B>`](crate::offload::RequestBody)`>`, the same
//!   body type as behind the offload layer, so both layers stack; the inner
//!   service must be `Clone` (a chat request is read before the readied
//!   service is called).
//!
//! # Summaries from a chat endpoint (feature `history-endpoint`)
//!
//! `EndpointSummarizer` makes the summaries of `compress` mode with any
//! OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp's
//! server, LiteLLM, ...): `POST {base_url}/chat/completions` with the
//! model, a system prompt asking for a faithful summary that keeps tool
//! names, identifiers, paths and numbers exactly (`DEFAULT_SUMMARY_PROMPT`,
//! replaceable), the group's transcript as the user message, `max_tokens`
//! set to the summary's budget and `temperature` 0.
//!
//! ```no_run
//! # #[cfg(feature = "history-endpoint")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tower_lro::history::{EndpointSummarizer, HistoryConfig, HistoryOffloader, SummaryMode};
//!
//! let summarizer = EndpointSummarizer::new("http://127.0.0.1:8000/v1", "qwen2.5-7b-instruct")?
//!     .api_key_env("LLM_API_KEY")? // or .api_key("sk-...")?
//!     .timeout(Duration::from_secs(30));
//! let offloader = HistoryOffloader::new(HistoryConfig::default().mode(SummaryMode::Auto))
//!     .with_summarizer(Arc::new(summarizer));
//! # Ok(()) }
//! # #[cfg(not(feature = "history-endpoint"))]
//! # fn main() {}
//! ```
//!
//! * The key goes in `Authorization: Bearer`; it comes from the
//!   configuration (`api_key`) or from an environment variable read once
//!   (`api_key_env`), and never shows in `Debug` or in errors.
//! * Each summary is bounded: `timeout` (default 60 s) for connecting,
//!   asking and reading, and `max_answer_bytes` (default 1 MiB) of answer
//!   read.
//! * Errors are typed (`EndpointError`): `Transport`, `Timeout`, `Status`
//!   (with the start of the answer, made safe for a log line), `BadAnswer`
//!   (not JSON, no `choices[0].message`, no text, too long), `Config`.
//!   Through the [`Summarizer`] trait they become `SummaryError::Endpoint`
//!   or `BadAnswer`; in the layer, the request goes on with its original
//!   body.
//! * The default connector speaks plain HTTP (a model server on the same
//!   host or network); for `https://` give a TLS connector with
//!   `EndpointSummarizer::with_connector` (e.g. `hyper-rustls`).
//! * The feature adds the `hyper` client and `hyper-util`; without it, none
//!   of them is compiled.
//!
//! No real model was available to the tests. `tests/layer/history_endpoint.rs`
//! drives `EndpointSummarizer` against HTTP servers on 127.0.0.1 speaking
//! the chat completions API: a stand-in endpoint
//! (`examples/support/chat_endpoint.rs`) that checks the request's shape
//! and key and answers a fixed completion built from the transcript, and
//! small servers that answer an error status, text that is not a
//! completion, an oversized answer, or nothing in time.
//! `tests/layer/history_layer.rs` puts the layer in front of the same stand-in
//! endpoint and drives it with reqwest. Whether a given model's summaries
//! are good is not tested here.
//!
//! # Files
//!
//! `offloader` (the offloader and the order of a rewrite), extended by
//! `body` (a whole request body), `compact` and `compress` (the two
//! modes); `render` (a group as a transcript); `format` (the three
//! formats: shapes, pairing, where an answer's text is); `files`
//! (content-addressed names, the idempotent store); `extractive` and
//! `summarize` (summarizers); `config`; `report`; `layer` (the tower
//! layer, with `endpoint`, the chat-endpoint summarizer).

mod body;
mod budget;
mod compact;
mod compress;
mod config;
mod extractive;
mod files;
mod format;
mod layer;
mod offloader;
pub mod read_back;
mod render;
mod report;
mod summarize;

pub use compact::POINTER_MARKER;
pub use compress::SUMMARY_MARKER;
pub use config::{
    DEFAULT_COMPACT_RATIO_THRESHOLD, DEFAULT_HISTORY_FILE_TTL, DEFAULT_KEEP_RECENT_COMPACT,
    DEFAULT_KEEP_RECENT_COMPRESS, DEFAULT_MAX_TOOL_MESSAGE_TOKENS, DEFAULT_MAX_TOTAL_TOKENS,
    DEFAULT_SUMMARY_MAX_TOKENS, HISTORY_ENV_PREFIX, HistoryConfig, SummaryMode, UnknownMode,
};
pub use extractive::ExtractiveSummarizer;
pub use files::{HISTORY_FILE_PREFIX, HistorySweep, sweep_history_dir};
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
