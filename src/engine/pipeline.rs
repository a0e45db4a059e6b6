//! The decision for one result: inline or offload, its event, and running
//! it off the async executor.

use super::events::{OffloadEvent, PassReason};
use super::offloader::Offloader;
use super::outcome::Outcome;
use super::records;
use crate::wire::call::ToolCall;
use crate::wire::mcp::{RawResult, ResultError};

impl Offloader {
    /// Decides inline or offload for one result, writing the file when
    /// offloading, and emits the event (`Offloaded`, `OffloadWriteFailed`
    /// or `PassedThrough`). Blocking (parsing and file I/O): in async code
    /// use [`process_async`](Self::process_async).
    ///
    /// Memory: besides `result` itself, at most three times its size is
    /// held at any moment, whatever the result's shape (ten million
    /// one-byte records or empty lines included): the decoded texts, the
    /// records in one buffer that becomes the file, a minified copy of a
    /// JSON text that was not minified. Work is one parse of each record
    /// plus byte walks; the file is at most about twice the data. The
    /// memory bench (`benches/memory.rs`) measures it on hostile shapes.
    /// One known exception: a result of very many content blocks (or
    /// top-level fields) costs about fifteen times its size to parse. The
    /// file's header line stays a few KB whatever the shape: large kept
    /// parts are left to the rewritten result and a text's layout is kept
    /// as a small table, never copied (see `records`).
    pub fn process(&self, call: &ToolCall, result: &[u8]) -> Result<Outcome, ResultError> {
        let outcome = self.decide(call, result);
        self.emit(&call.name, result.len(), &outcome);
        outcome
    }

    fn decide(&self, call: &ToolCall, result: &[u8]) -> Result<Outcome, ResultError> {
        let policy = self.config.policy_for(&call.name);
        if !policy.enabled {
            let reason = if self.config.enabled {
                PassReason::Excluded
            } else {
                PassReason::Disabled
            };
            return Ok(Outcome::Inline(reason));
        }
        if self.surely_under(&policy, result.len()) {
            return Ok(Outcome::Inline(PassReason::UnderThreshold {
                estimated_tokens: self.estimator.max_tokens_for_bytes(result.len()),
            }));
        }
        let text = std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?;
        let mut parsed = RawResult::parse(text)?;
        if !policy.offload_errors && parsed.top.get("isError").is_some_and(|v| v.get() == "true") {
            return Ok(Outcome::Inline(PassReason::IsError));
        }
        let estimated_tokens = self.estimate_parsed(&parsed);
        let over_bytes = policy
            .max_tool_output_bytes
            .is_some_and(|b| Self::content_bytes(&parsed) >= b);
        if estimated_tokens <= policy.threshold_tokens && !over_bytes {
            return Ok(Outcome::Inline(PassReason::UnderThreshold {
                estimated_tokens,
            }));
        }
        let large = policy.threshold_tokens / 4;
        // The descriptor, and the resource link when asked, come first.
        let inserted = 1 + usize::from(call.resource_link);
        let is_large = |t: &str| self.estimator.estimate(t) > large;
        let extraction = records::split(&mut parsed, is_large, inserted)?;
        if extraction.records.is_empty() {
            return Ok(Outcome::Inline(PassReason::NoRecords));
        }
        Ok(self.offload(call, &parsed, extraction, estimated_tokens, &policy))
    }

    fn emit(&self, tool: &str, bytes: usize, outcome: &Result<Outcome, ResultError>) {
        let event = match outcome {
            Ok(Outcome::Offloaded(o)) => OffloadEvent::Offloaded {
                tool: tool.to_owned(),
                path: o.file.path.clone(),
                count: o.response.summary.count,
                estimated_tokens: o.response.summary.estimated_tokens,
                bytes,
            },
            Ok(Outcome::Truncated(t)) => OffloadEvent::OffloadWriteFailed {
                tool: tool.to_owned(),
                error: t.error.to_string(),
                kept: t.kept,
                total: t.total,
                estimated_tokens: t.estimated_tokens,
            },
            Ok(Outcome::Inline(reason)) => {
                if !self.events.wants_pass_events() {
                    return;
                }
                OffloadEvent::PassedThrough {
                    tool: Some(tool.to_owned()),
                    reason: reason.clone(),
                }
            }
            Err(e) => OffloadEvent::PassedThrough {
                tool: Some(tool.to_owned()),
                reason: PassReason::Unparseable(e.to_string()),
            },
        };
        self.events.emit(event);
    }

    /// [`process`](Self::process) off the async executor: results that may
    /// be over the threshold are handled on tokio's blocking pool.
    ///
    /// If this future is dropped while the file is being written (the
    /// client went away), the file is deleted once written: nothing is left
    /// that no one was told about.
    pub async fn process_async(
        &self,
        call: &ToolCall,
        result: bytes::Bytes,
    ) -> Result<Outcome, ResultError> {
        if self.surely_inline(&call.name, result.len()) {
            return self.process(call, &result);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        let len = result.len();
        let name = call.name.clone();
        let call = call.clone();
        let task = tokio::task::spawn_blocking(move || {
            let outcome = this.decide(&call, &result);
            if let Err(Ok(Outcome::Offloaded(o))) = tx.send(outcome) {
                // No one is waiting for this file any more.
                let _ = std::fs::remove_file(&o.file.path);
                tracing::debug!(
                    target: "tower_lro",
                    path = %o.file.path.display(),
                    "caller gone before the result was sent; offloaded file removed"
                );
            }
        });
        let outcome = match rx.await {
            Ok(outcome) => outcome,
            // The blocking task panicked or the runtime is shutting down: keep the original.
            Err(_) => {
                drop(task);
                Ok(Outcome::Inline(PassReason::Interrupted))
            }
        };
        self.emit(&name, len, &outcome);
        outcome
    }
}
