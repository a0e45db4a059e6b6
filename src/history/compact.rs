//! Compaction: a tool answer over `max_tool_message_tokens` (outside the
//! recent messages) is written to a file in `store_dir` and its text
//! replaced, in place, by a pointer with a preview. The answer stays where
//! it was, paired with its call.
//!
//! Structured outputs (a JSON array or object, JSON lines) go through the
//! offload engine: a JSONL file of records with the engine's header, and
//! the engine's descriptor (summary, line schema, ten jq recipes, guidance,
//! preview) as the pointer. Plain text is written as a text file and the
//! pointer is a short text ([`POINTER_MARKER`] first). Both file names are
//! content-addressed (a digest of tool, arguments and output), so the same
//! answer gets the same file and the same pointer on every turn.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::files::{HISTORY_FILE_PREFIX, content_ulid, digest, hex};
use super::format::{self, Call, Shape};
use super::offloader::{Inner, calls_by_id};
use super::report::HistoryError;
use crate::config::DEFAULT_PREVIEW_CHARS;
use crate::engine::Outcome;
use crate::engine::operation_name;
use crate::wire::call::ToolCall;

/// First words of the pointer that replaces a plain-text tool answer.
pub const POINTER_MARKER: &str = "[history offload]";
/// First bytes of the engine's descriptor (a structured answer's pointer).
const DESCRIPTOR_START: &str = "{\"offloaded\":true";

/// What compaction did.
pub(super) struct Compacted {
    pub(super) count: usize,
    pub(super) files: Vec<PathBuf>,
}

/// Whether `text` is already a pointer written by compaction.
pub(crate) fn is_compacted(text: &str) -> bool {
    text.starts_with(POINTER_MARKER) || text.starts_with(DESCRIPTOR_START)
}

/// A compacted answer in one line, for a summarizer's transcript: the
/// text pointer's first line, or what the descriptor says was offloaded
/// where. `None`: not a pointer.
pub(super) fn pointer_line(text: &str) -> Option<String> {
    if text.starts_with(POINTER_MARKER) {
        return text.lines().next().map(str::to_owned);
    }
    if !text.starts_with(DESCRIPTOR_START) {
        return None;
    }
    let d: Value = serde_json::from_str(text).ok()?;
    let summary = &d["summary"];
    Some(format!(
        "{POINTER_MARKER} {} records (~{} tokens) stored in the file {}",
        summary["count"],
        summary["estimated_tokens"],
        d["file_path"].as_str().unwrap_or("")
    ))
}

/// One tool answer to compact: its call (when found) and text.
struct Answer<'a> {
    call: Option<&'a Call>,
    text: &'a str,
}

impl Answer<'_> {
    fn tool(&self) -> &str {
        self.call.map_or("tool", |c| c.name.as_str())
    }

    /// The digest naming the answer's file: tool, arguments and text.
    fn digest(&self) -> [u8; 32] {
        let arguments = self.call.and_then(|c| c.arguments.as_ref());
        let arguments = arguments.map(Value::to_string).unwrap_or_default();
        digest(&[
            self.tool().as_bytes(),
            arguments.as_bytes(),
            self.text.as_bytes(),
        ])
    }
}

impl Inner {
    /// Compacts the answers of the messages before `recent`: remembered
    /// ones always (so a rewrite is the same every turn), new ones when
    /// `run`.
    pub(super) fn compact(
        &self,
        messages: &mut [Value],
        shapes: &[Shape],
        run: bool,
        recent: usize,
    ) -> Result<Compacted, HistoryError> {
        let mut done = Compacted {
            count: 0,
            files: Vec::new(),
        };
        if !run && self.memo.lock().map_or(true, |m| m.no_compacted()) {
            // Nothing due and nothing remembered: no need to look.
            return Ok(done);
        }
        let calls = calls_by_id(shapes);
        for (i, shape) in shapes.iter().enumerate().take(recent) {
            if shape.system {
                continue;
            }
            for answer in &shape.answers {
                let text =
                    format::slot_value(&messages[i], &answer.slot).and_then(format::content_text);
                let Some(text) = text.filter(|t| !is_compacted(t)) else {
                    continue;
                };
                let call = answer
                    .call_id
                    .as_deref()
                    .and_then(|id| calls.get(id).copied());
                let answer_ref = Answer { call, text: &text };
                if let Some(pointer) = self.pointer_for(&answer_ref, run, &mut done.files)? {
                    format::replace_text(&mut messages[i], &answer.slot, &pointer);
                    done.count += 1;
                }
            }
        }
        Ok(done)
    }

    /// The pointer for an answer: remembered, or made now when `run` and
    /// the answer is over `max_tool_message_tokens`; `None` keeps it.
    fn pointer_for(
        &self,
        answer: &Answer<'_>,
        run: bool,
        files: &mut Vec<PathBuf>,
    ) -> Result<Option<String>, HistoryError> {
        // Only answers over the limit are ever compacted (and remembered).
        if self.config.estimator.estimate(answer.text) <= self.config.max_tool_message_tokens {
            return Ok(None);
        }
        let key = answer.digest();
        let remembered = self.memo.lock().ok().and_then(|m| m.compacted(&key));
        if remembered.is_some() || !run {
            return Ok(remembered);
        }
        let (pointer, written) = match self.offload_structured(answer, &key)? {
            Some(done) => done,
            None => self.offload_text(answer, &key)?,
        };
        files.extend(written);
        if let Ok(mut memo) = self.memo.lock() {
            memo.remember_compacted(key, pointer.clone());
        }
        Ok(Some(pointer))
    }

    /// A structured answer through the engine, into the file named by
    /// `key`: the descriptor JSON, and the path when the file is new.
    /// `None`: not structured, or the engine keeps it inline (no records,
    /// a descriptor not smaller than the answer).
    fn offload_structured(
        &self,
        answer: &Answer<'_>,
        key: &[u8; 32],
    ) -> Result<Option<(String, Option<PathBuf>)>, HistoryError> {
        if !looks_structured(answer.text) {
            return Ok(None);
        }
        let id = content_ulid(key);
        let arguments = answer.call.and_then(|c| c.arguments.clone());
        let call = ToolCall::new(answer.tool(), arguments);
        let result = serde_json::json!({"content": [{"type": "text", "text": answer.text}]});
        let (store, created) = self.store.recording();
        let engine = self
            .engine
            .clone()
            .with_file_id(id)
            .with_shared_store(Arc::new(store));
        match engine.process(&call, result.to_string().as_bytes()) {
            Ok(Outcome::Offloaded(o)) => {
                let pointer = serde_json::to_string(&o.response).unwrap_or_default();
                let new = created.load(std::sync::atomic::Ordering::Relaxed);
                Ok(Some((pointer, new.then_some(o.file.path))))
            }
            Ok(Outcome::Truncated(t)) => Err(HistoryError::Store(t.error)),
            Ok(Outcome::Inline(_)) | Err(_) => Ok(None),
        }
    }

    /// A plain-text answer into `history-tool-{operation}-{digest}.txt`:
    /// the pointer, and the path when the file is new.
    fn offload_text(
        &self,
        answer: &Answer<'_>,
        key: &[u8; 32],
    ) -> Result<(String, Option<PathBuf>), HistoryError> {
        let operation = operation_name(answer.tool());
        let name = format!("{HISTORY_FILE_PREFIX}tool-{operation}-{}.txt", hex(key, 16));
        let (path, new) = self.store.put(&name, answer.text.as_bytes())?;
        let tokens = self.config.estimator.estimate(answer.text);
        Ok((text_pointer(answer, &path, tokens), new.then_some(path)))
    }
}

/// The pointer of a plain-text answer: what, where, a preview, how to read
/// on. Nothing in it depends on when it was made.
fn text_pointer(answer: &Answer<'_>, path: &std::path::Path, tokens: usize) -> String {
    let lines = answer.text.lines().count();
    let preview: String = answer.text.chars().take(DEFAULT_PREVIEW_CHARS).collect();
    let more = if preview.len() < answer.text.len() {
        "…"
    } else {
        ""
    };
    let path = path.display();
    format!(
        "{POINTER_MARKER} The output of tool `{tool}` (~{tokens} tokens, {lines} lines) is stored \
         in the file {path}\nPreview: {preview}{more}\nRead it with: sed -n '1,100p' '{path}' \
         (or grep -n 'PATTERN' '{path}')",
        tool = answer.tool(),
    )
}

/// Whether `text` is JSON (an array or object) or JSON lines.
fn looks_structured(text: &str) -> bool {
    let trimmed = text.trim();
    if !(trimmed.starts_with('[') || trimmed.starts_with('{')) {
        return false;
    }
    let is_json = |t: &str| crate::json::validate(t).is_ok();
    is_json(trimmed)
        || trimmed
            .lines()
            .filter(|l| !l.trim().is_empty())
            .all(|l| l.trim_start().starts_with('{') && is_json(l))
}
