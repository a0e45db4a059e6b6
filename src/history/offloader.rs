//! [`HistoryOffloader`]: what it holds (configuration, summarizer, engine,
//! store, memo) and what the steps of a rewrite share (token counts,
//! shapes, where the newest turn starts); the rewrite itself, in order, is
//! in `budget`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::config::HistoryConfig;
use super::extractive::ExtractiveSummarizer;
use super::files::HistoryStore;
use super::format::{self, Call, ChatFormat, Shape};
use super::report::{HistoryError, HistoryReport};
use super::summarize::Summarizer;
use crate::config::OffloadConfig;
use crate::engine::Offloader;
use crate::estimate::TokenEstimator;
use crate::store::{FsStore, Store, StoreError};

/// How long the engine's files of a history say they live: as long as the
/// chat (their names carry no time; `store_dir` is not for the custodian).
const HISTORY_FILE_TTL: Duration = Duration::from_secs(u32::MAX as u64);
/// The most bytes of text the in-memory memo holds; past it the memo
/// starts over (the files on disk and the content-addressed names keep
/// the rewrites the same; only the work is done again).
const MAX_MEMO_BYTES: usize = 32 << 20;

/// Rewrites chat histories: compaction of large tool answers and
/// compression of older message groups (the MessageOffloadOp modes). Cheap
/// to clone; clones share the configuration, the summarizer and what was
/// remembered.
#[derive(Clone)]
pub struct HistoryOffloader {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) config: HistoryConfig,
    pub(super) summarizer: Arc<dyn Summarizer>,
    pub(super) engine: Offloader,
    pub(super) store: HistoryStore,
    pub(super) memo: Mutex<Memo>,
}

/// What a [`HistoryOffloader`] remembers, keyed by content digests.
#[derive(Default)]
pub(super) struct Memo {
    /// Tool answer → its replacement text.
    compacted: HashMap<[u8; 32], String>,
    /// Group → its replacement text.
    groups: HashMap<[u8; 32], String>,
    /// Chained digest of a history's prefix → its rewrite (see `budget`).
    checkpoints: HashMap<[u8; 32], Arc<Vec<Value>>>,
    /// Prefixes already looked for in `store_dir`.
    looked: HashSet<[u8; 32]>,
    /// First message of a group → the groups that started with it
    /// (messages, group digest).
    starts: HashMap<[u8; 32], Vec<(usize, [u8; 32])>>,
    /// Bytes of the texts held.
    bytes: usize,
    /// The most bytes held (`None`: [`MAX_MEMO_BYTES`]).
    limit: Option<usize>,
}

impl Memo {
    /// The replacement remembered for a tool answer.
    pub(super) fn compacted(&self, key: &[u8; 32]) -> Option<String> {
        self.compacted.get(key).cloned()
    }

    /// Whether no tool answer is remembered.
    pub(super) fn no_compacted(&self) -> bool {
        self.compacted.is_empty()
    }

    /// Remembers the replacement of a tool answer.
    pub(super) fn remember_compacted(&mut self, key: [u8; 32], pointer: String) {
        self.make_room(pointer.len());
        self.compacted.insert(key, pointer);
    }

    /// The rewrite remembered for a history's prefix.
    pub(super) fn checkpoint(&self, key: &[u8; 32]) -> Option<Arc<Vec<Value>>> {
        self.checkpoints.get(key).cloned()
    }

    /// Remembers the rewrite of a history's prefix (`bytes`: its JSON).
    pub(super) fn remember_checkpoint(
        &mut self,
        key: [u8; 32],
        messages: Arc<Vec<Value>>,
        bytes: usize,
    ) {
        self.make_room(bytes);
        self.checkpoints.insert(key, messages);
    }

    /// Whether the checkpoint of this prefix is looked for in `store_dir`
    /// for the first time (and notes that it is).
    pub(super) fn first_look(&mut self, key: [u8; 32]) -> bool {
        if self.looked.contains(&key) {
            return false;
        }
        self.make_room(32);
        self.looked.insert(key)
    }

    /// The replacement remembered for a group.
    pub(super) fn group(&self, digest: &[u8; 32]) -> Option<String> {
        self.groups.get(digest).cloned()
    }

    /// The groups remembered to start with a message.
    pub(super) fn starts(&self, first: &[u8; 32]) -> Option<&[(usize, [u8; 32])]> {
        self.starts.get(first).map(Vec::as_slice)
    }

    /// Whether no group is remembered.
    pub(super) fn no_groups(&self) -> bool {
        self.starts.is_empty()
    }

    /// Remembers a group of `count` messages starting with `first`.
    pub(super) fn remember_group(
        &mut self,
        first: [u8; 32],
        count: usize,
        digest: [u8; 32],
        text: String,
    ) {
        self.make_room(text.len() + 80);
        self.groups.insert(digest, text);
        let starts = self.starts.entry(first).or_default();
        if !starts.contains(&(count, digest)) {
            starts.push((count, digest));
        }
    }

    /// Starts over when `more` bytes would pass the bound.
    fn make_room(&mut self, more: usize) {
        self.bytes += more;
        if self.bytes > self.limit.unwrap_or(MAX_MEMO_BYTES) {
            *self = Memo {
                bytes: more,
                limit: self.limit,
                ..Memo::default()
            };
        }
    }
}

impl std::fmt::Debug for HistoryOffloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryOffloader")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl HistoryOffloader {
    /// An offloader with `config` and the [`ExtractiveSummarizer`].
    pub fn new(config: HistoryConfig) -> Self {
        let fs = FsStore::new(config.store_dir.clone()).trust_dir(config.trust_store_dir);
        let store = HistoryStore::new(fs);
        let mut engine_config = OffloadConfig::default()
            .output_dir(config.store_dir.clone())
            .threshold_tokens(config.max_tool_message_tokens)
            .ttl(HISTORY_FILE_TTL)
            .extraction(false);
        engine_config.trust_output_dir = config.trust_store_dir;
        let engine = Offloader::new(engine_config)
            .with_shared_estimator(config.estimator.clone())
            .with_shared_store(Arc::new(store.clone()));
        HistoryOffloader {
            inner: Arc::new(Inner {
                config,
                summarizer: Arc::new(ExtractiveSummarizer),
                engine,
                store,
                memo: Mutex::new(Memo::default()),
            }),
        }
    }

    /// The same offloader with another summarizer (what it remembered is
    /// not carried over).
    pub fn with_summarizer(self, summarizer: Arc<dyn Summarizer>) -> Self {
        let inner = &self.inner;
        HistoryOffloader {
            inner: Arc::new(Inner {
                config: inner.config.clone(),
                summarizer,
                engine: inner.engine.clone(),
                store: inner.store.clone(),
                memo: Mutex::new(Memo::default()),
            }),
        }
    }

    /// The same offloader with its files also in object storage (feature
    /// `object-store`): in `store` under `under` (`""` for its prefix,
    /// else `/`-separated names of `[A-Za-z0-9_-]`), each written there too
    /// and read back from there when `store_dir` does not hold it. So the
    /// processes of a fleet given the same store read each other's files
    /// (`read_back`), checkpoints and summaries: a conversation keeps the
    /// same rewrite whichever process gets its next turn. What it
    /// remembered is not carried over.
    #[cfg(feature = "object-store")]
    pub fn with_bucket(
        self,
        store: Arc<crate::store::BucketStore>,
        under: &str,
    ) -> Result<Self, StoreError> {
        let safe = under
            .split('/')
            .filter(|part| !part.is_empty())
            .all(|part| {
                part.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            });
        if !safe {
            return Err(StoreError::InvalidName(under.to_owned()));
        }
        let remote = super::files::BucketRemote {
            store,
            under: under.to_owned(),
        };
        let inner = &self.inner;
        let store = inner.store.clone().with_remote(Arc::new(remote));
        Ok(HistoryOffloader {
            inner: Arc::new(Inner {
                config: inner.config.clone(),
                summarizer: inner.summarizer.clone(),
                engine: inner
                    .engine
                    .clone()
                    .with_shared_store(Arc::new(store.clone())),
                store,
                memo: Mutex::new(Memo::default()),
            }),
        })
    }

    /// Bounds what it remembers in memory (rewrites of tool answers,
    /// summaries, checkpoints) to about `bytes` of text (default 32 MiB);
    /// past it, it starts over, doing the work again (the files keep the
    /// rewrites the same). For a process that keeps one offloader per
    /// caller.
    pub fn with_memo_limit(self, bytes: usize) -> Self {
        if let Ok(mut memo) = self.inner.memo.lock() {
            memo.limit = Some(bytes);
        }
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HistoryConfig {
        &self.inner.config
    }

    /// Checks that files can be written in `store_dir` (it exists or can
    /// be created, and is private): for a report at start-up.
    pub fn check_store(&self) -> Result<(), StoreError> {
        self.inner.store.check()
    }

    /// Compaction of the messages before `recent`, on tokio's blocking
    /// pool (file writes, parsing).
    pub(super) async fn compact_off_runtime(
        &self,
        messages: Vec<Value>,
        shapes: Vec<Shape>,
        run: bool,
        recent: usize,
        report: &mut HistoryReport,
    ) -> Result<Vec<Value>, HistoryError> {
        let inner = self.inner.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut messages = messages;
            let done = inner.compact(&mut messages, &shapes, run, recent);
            done.map(|done| (messages, done))
        });
        let (messages, done) = task.await.map_err(|_| HistoryError::Interrupted)??;
        report.compacted = run;
        report.messages_compacted = done.count;
        report.files_written.extend(done.files);
        Ok(messages)
    }
}

impl Inner {
    /// Estimated tokens of a message: of every string in it (texts,
    /// arguments, ids), not of its JSON punctuation.
    pub(super) fn message_tokens(&self, message: &Value) -> usize {
        let estimator: &dyn TokenEstimator = &*self.config.estimator;
        fn walk(v: &Value, e: &dyn TokenEstimator) -> usize {
            match v {
                Value::String(s) => e.estimate(s),
                Value::Array(items) => items.iter().map(|i| walk(i, e)).sum(),
                Value::Object(map) => map.values().map(|i| walk(i, e)).sum(),
                _ => 0,
            }
        }
        walk(message, estimator)
    }

    pub(super) fn total_tokens(&self, messages: &[Value]) -> usize {
        messages.iter().map(|m| self.message_tokens(m)).sum()
    }
}

/// The shapes of all messages, or the first that is not a message.
pub(super) fn shapes(format: ChatFormat, messages: &[Value]) -> Result<Vec<Shape>, HistoryError> {
    messages
        .iter()
        .enumerate()
        .map(|(index, m)| {
            format::shape(format, m).map_err(|reason| HistoryError::BadMessage {
                index,
                reason: reason.to_owned(),
            })
        })
        .collect()
}

/// The shapes of messages already checked.
pub(super) fn shapes_unchecked(format: ChatFormat, messages: &[Value]) -> Vec<Shape> {
    let shape = |m| format::shape(format, m).unwrap_or_default();
    messages.iter().map(shape).collect()
}

/// The index of the first message kept as it is: the first of the `keep`
/// most recent messages that are not system messages, or the newest turn's
/// start when that is earlier. Recency counts turns: the newest message
/// that makes calls (an assistant message with its `tool_calls` /
/// `tool_use` blocks; Responses: its `function_call` items, adjacent) and
/// every message after it (every answer to those calls, however many)
/// stay, so a tool answer the model has not seen yet is never replaced.
pub(super) fn recent_start(shapes: &[Shape], keep: usize) -> usize {
    count_start(shapes, keep).min(newest_turn(shapes))
}

/// The index of the first of the `keep` most recent messages that are not
/// system messages (`shapes.len()` when `keep` is 0).
pub(super) fn count_start(shapes: &[Shape], keep: usize) -> usize {
    let mut left = keep;
    let mut start = shapes.len();
    while left > 0 && start > 0 {
        start -= 1;
        if !shapes[start].system {
            left -= 1;
        }
    }
    start
}

/// Where the newest turn with calls starts (`shapes.len()` without one):
/// the newest message making calls, and the call-making messages right
/// before it (a Responses turn's parallel `function_call` items).
fn newest_turn(shapes: &[Shape]) -> usize {
    let Some(mut start) = shapes.iter().rposition(|s| !s.calls.is_empty()) else {
        return shapes.len();
    };
    while start > 0 && !shapes[start - 1].calls.is_empty() {
        start -= 1;
    }
    start
}

/// The calls of all messages, by id.
pub(super) fn calls_by_id(shapes: &[Shape]) -> HashMap<&str, &Call> {
    shapes
        .iter()
        .flat_map(|s| &s.calls)
        .map(|c| (c.id.as_str(), c))
        .collect()
}
