//! The budget: the history before its newest turn is kept within
//! `max_total_tokens` with hysteresis, and between two rewrites a request
//! only appends to the previous one.
//!
//! A rewrite is remembered as a *checkpoint*: the rewritten messages of a
//! prefix of the original history, keyed by the chained digest of that
//! prefix (in memory, and in `store_dir` as
//! `history-checkpoint-{digest}.json`, so another process gives the same
//! bytes). A request whose history starts with a remembered prefix gets
//! the checkpoint in its place and the messages after it as they came.
//! When that is over `max_total_tokens`, everything before the newest turn
//! is reduced to `low_water_tokens`, escalating: tool answers to files
//! (compaction), then summaries of the newer messages beside the earlier
//! summaries, then, when those still do not fit, one summary of all of
//! them (a summary of summaries and pointers).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::compact::is_compacted;
use super::compress::{Scope, is_summary, message_digest};
use super::config::SummaryMode;
use super::files::{HISTORY_FILE_PREFIX, digest, hex};
use super::format::{self, ChatFormat, Shape};
use super::offloader::{
    HistoryOffloader, Inner, count_start, recent_start, shapes, shapes_unchecked,
};
use super::report::{HistoryError, HistoryOutcome, HistoryReport};

/// The chained digests of `messages`: `[0]` of none, `[i]` of the first `i`.
pub(super) fn chain(messages: &[Value]) -> Vec<[u8; 32]> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(digest(&[b"lro-history-checkpoint"]));
    for m in messages {
        let last = out[out.len() - 1];
        out.push(digest(&[&last, &message_digest(m)]));
    }
    out
}

/// How many of a history's longest prefixes are looked for in a shared
/// store when `store_dir` lacks their checkpoint (a round trip each): a
/// checkpoint another process made within the conversation's last this
/// many messages is found, older ones only in `store_dir`. Across a fleet
/// taking turns, each process sees a new checkpoint a turn or two after
/// it is made; a first request of a long history costs at most this many
/// round trips.
const MAX_REMOTE_CHECKPOINT_LOOKUPS: usize = 16;

/// The file name of the checkpoint of a prefix.
fn checkpoint_name(key: &[u8; 32]) -> String {
    format!("{HISTORY_FILE_PREFIX}checkpoint-{}.json", hex(key, 16))
}

impl Inner {
    /// The longest remembered prefix (`chain[i]`, `i >= 1`): `i` and its
    /// rewritten messages; from memory, else from `store_dir`.
    pub(super) fn checkpoint(&self, chain: &[[u8; 32]]) -> Option<(usize, Arc<Vec<Value>>)> {
        if let Ok(memo) = self.memo.lock() {
            let found = (1..chain.len())
                .rev()
                .find_map(|i| Some((i, memo.checkpoint(&chain[i])?)));
            if found.is_some() {
                return found;
            }
        }
        (1..chain.len()).rev().enumerate().find_map(|(n, i)| {
            // Each prefix is looked for on disk once per process: the next
            // turns ask again only for their new ones.
            if !self.memo.lock().is_ok_and(|mut m| m.first_look(chain[i])) {
                return None;
            }
            let remote = n < MAX_REMOTE_CHECKPOINT_LOOKUPS;
            let text = self
                .store
                .read_checkpoint(&checkpoint_name(&chain[i]), remote)?;
            let messages: Vec<Value> = serde_json::from_str(&text).ok()?;
            let messages = Arc::new(messages);
            if let Ok(mut memo) = self.memo.lock() {
                memo.remember_checkpoint(chain[i], messages.clone(), text.len());
            }
            Some((i, messages))
        })
    }

    /// Remembers `messages` as the rewrite of the prefix `key`, in memory
    /// and in `store_dir` (a failed write only costs the next process the
    /// work; the files it points to are written already).
    /// The file, when this wrote it (not when it was there already).
    pub(super) fn remember_checkpoint(&self, key: [u8; 32], messages: &[Value]) -> Option<PathBuf> {
        let text = Value::from(messages.to_vec()).to_string();
        let written = match self.store.put(&checkpoint_name(&key), text.as_bytes()) {
            Ok((path, true)) => Some(path),
            Ok((_, false)) => None,
            Err(e) => {
                tracing::debug!(target: "tower_lro", error = %e, "history checkpoint not stored");
                None
            }
        };
        if let Ok(mut memo) = self.memo.lock() {
            memo.remember_checkpoint(key, Arc::new(messages.to_vec()), text.len());
        }
        written
    }

    /// The report's counts of what the output replaces: when it differs
    /// from the input, its pointers and summaries.
    pub(super) fn count_replacements(
        &self,
        format: ChatFormat,
        output: &[Value],
        changed: bool,
        report: &mut HistoryReport,
    ) {
        if !changed {
            report.messages_compacted = 0;
            report.groups_compressed = 0;
            return;
        }
        let shapes = shapes_unchecked(format, output);
        report.messages_compacted = output
            .iter()
            .zip(&shapes)
            .flat_map(|(m, s)| s.answers.iter().map(move |a| (m, a)))
            .filter(|(m, a)| {
                format::slot_value(m, &a.slot)
                    .and_then(format::content_text)
                    .is_some_and(|t| is_compacted(&t))
            })
            .count();
        report.groups_compressed = output.iter().filter(|m| is_summary(m)).count();
    }
}

impl HistoryOffloader {
    /// Rewrites the messages of a conversation in `format` (see the module
    /// docs): system messages and the newest turn are kept as they are; the
    /// rest gets the remembered rewrite of its start, and when over the
    /// budget, large tool answers are compacted in place and older groups
    /// compressed into summaries, as the mode says. Blocking work (parsing, file I/O) runs
    /// on tokio's blocking pool, so this must be awaited inside a tokio
    /// runtime. An error leaves nothing half done in the messages (they
    /// are the caller's to send unchanged); files already written stay,
    /// and the next rewrite finds them.
    pub async fn rewrite_messages(
        &self,
        format: ChatFormat,
        messages: Vec<Value>,
    ) -> Result<HistoryOutcome, HistoryError> {
        let shapes = shapes(format, &messages)?;
        let inner = &self.inner;
        let config = &inner.config;
        let before = inner.total_tokens(&messages);
        let mut report = HistoryReport::new(config.mode, before);
        let newest = recent_start(&shapes, config.keep_recent_compact);
        let chain = chain(&messages[..newest]);
        let lookup = {
            let inner = inner.clone();
            let chain = chain.clone();
            tokio::task::spawn_blocking(move || inner.checkpoint(&chain))
        };
        let found = lookup.await.map_err(|_| HistoryError::Interrupted)?;
        let mut output = match found {
            Some((k, base)) => {
                let mut out = Vec::with_capacity(base.len() + messages.len() - k);
                out.extend(base.iter().cloned());
                out.extend(messages[k..newest].iter().cloned());
                out
            }
            // Nothing remembered and within the budget: the history as it
            // came (no copy, nothing to compare).
            None if inner.total_tokens(&messages[..newest]) <= config.max_total_tokens => {
                report.tokens_after = before;
                return Ok(HistoryOutcome { messages, report });
            }
            None => messages[..newest].to_vec(),
        };
        let tokens = inner.total_tokens(&output);
        if tokens > config.max_total_tokens {
            output = self.reduce(format, output, tokens, &mut report).await?;
            let (inner, key, rewritten) = (inner.clone(), chain[newest], output.clone());
            let written =
                tokio::task::spawn_blocking(move || inner.remember_checkpoint(key, &rewritten))
                    .await
                    .map_err(|_| HistoryError::Interrupted)?;
            report.files_written.extend(written);
        }
        let changed = output[..] != messages[..newest];
        output.extend(messages[newest..].iter().cloned());
        inner.count_replacements(format, &output, changed, &mut report);
        report.tokens_after = inner.total_tokens(&output);
        Ok(HistoryOutcome {
            messages: output,
            report,
        })
    }

    /// `older` (the history before its newest turn, `before` tokens, over
    /// the budget) brought down to `low_water_tokens` as far as the mode allows:
    /// compaction of every answer over `max_tool_message_tokens` (not in
    /// `compress` mode), then (not in `compact` mode, and in `auto` only
    /// when still over the low mark or when compaction kept more than
    /// `compact_ratio_threshold`) compression of all but the
    /// `keep_recent_compress` last messages by `group_token_threshold`,
    /// earlier summaries left alone; then, while still over, all of them in
    /// one group with the earlier summaries, then with the last messages
    /// too.
    pub(super) async fn reduce(
        &self,
        format: ChatFormat,
        older: Vec<Value>,
        before: usize,
        report: &mut HistoryReport,
    ) -> Result<Vec<Value>, HistoryError> {
        let inner = &self.inner;
        let config = &inner.config;
        let low = config.low_water();
        let mut older = older;
        if config.mode != SummaryMode::Compress {
            let shapes = shapes_unchecked(format, &older);
            let all = older.len();
            older = self
                .compact_off_runtime(older, shapes, true, all, report)
                .await?;
        }
        let after = inner.total_tokens(&older);
        let due = match config.mode {
            SummaryMode::Compact => false,
            SummaryMode::Compress => true,
            SummaryMode::Auto => {
                after > low || after as f64 / before.max(1) as f64 > config.compact_ratio_threshold
            }
        };
        if !due {
            return Ok(older);
        }
        // New groups after the earlier summaries (which stay, so the
        // requests keep their prefix); then everything in one group,
        // earlier summaries too (a summary of summaries); then, should the
        // last messages alone be too many, with them.
        for (merge_all, keep) in [(false, true), (true, true), (true, false)] {
            let shapes: Vec<Shape> = shapes_unchecked(format, &older);
            let recent = if keep {
                count_start(&shapes, config.keep_recent_compress)
            } else {
                older.len()
            };
            let scope = Scope { recent, merge_all };
            older = inner
                .compress(format, older, &shapes, true, scope, report)
                .await?;
            if inner.total_tokens(&older) <= low {
                break;
            }
        }
        Ok(older)
    }
}
