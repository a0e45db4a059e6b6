//! [`Offloader`]: the engine's parts (configuration, estimator, store,
//! events) and its whole public API. The offload itself is
//! [`pipeline::run`](super::pipeline::run), step by step.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::decide;
use super::events::{EventHook, Events, OffloadEvent, PassReason};
use super::outcome::Outcome;
use super::pipeline;
use super::rebuild::{expiry, rebuild_at};
use super::records::RebuildError;
use crate::config::OffloadConfig;
use crate::estimate::{ScriptAwareEstimator, TokenEstimator};
use crate::store::{FsStore, Store, StoreError, parse_file_name};
use crate::wire::call::ToolCall;
use bytestring::ByteString;

use crate::wire::mcp::{Input, MemberRanges, RawResult, ResultError};

/// The offload engine. Cheap to clone; shares its configuration, estimator,
/// store and event hook.
#[derive(Clone)]
pub struct Offloader {
    pub(super) config: Arc<OffloadConfig>,
    pub(crate) estimator: Arc<dyn TokenEstimator>,
    pub(super) store: Arc<dyn Store>,
    pub(super) events: Events,
    /// The id of the next file, when the caller names it (the history's
    /// content-addressed files); `None`: a new ULID per file.
    pub(super) file_id: Option<ulid::Ulid>,
}

impl std::fmt::Debug for Offloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offloader")
            .field("config", &self.config)
            .field("dir", &self.store.dir())
            .finish_non_exhaustive()
    }
}

/// Building an engine.
impl Offloader {
    /// An engine with the default estimator, writing with [`FsStore`] into
    /// `config.output_dir`.
    pub fn new(config: OffloadConfig) -> Self {
        let store = FsStore::new(config.output_dir.clone()).trust_dir(config.trust_output_dir);
        Offloader {
            config: Arc::new(config),
            estimator: Arc::new(ScriptAwareEstimator),
            store: Arc::new(store),
            events: Events::default(),
            file_id: None,
        }
    }

    /// Replaces the token estimator.
    pub fn with_estimator(self, estimator: impl TokenEstimator) -> Self {
        self.with_shared_estimator(Arc::new(estimator))
    }

    /// Replaces the store (another location, or fault injection in tests).
    pub fn with_store(self, store: impl Store) -> Self {
        self.with_shared_store(Arc::new(store))
    }

    pub(crate) fn with_shared_estimator(mut self, estimator: Arc<dyn TokenEstimator>) -> Self {
        self.estimator = estimator;
        self
    }

    pub(crate) fn with_shared_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = store;
        self
    }

    /// The same engine naming its file with `id` instead of a new ULID (the
    /// history offload's content-addressed files: the same content gets the
    /// same file name and descriptor every time).
    #[cfg(feature = "history")]
    pub(crate) fn with_file_id(mut self, id: ulid::Ulid) -> Self {
        self.file_id = Some(id);
        self
    }

    /// Sends every event (see [`OffloadEvent`](crate::offload::OffloadEvent)) to `hook` too.
    pub fn with_event_hook(mut self, hook: EventHook) -> Self {
        self.events = Events::new(Some(hook));
        self
    }
}

/// Its parts.
impl Offloader {
    /// The configuration.
    pub fn config(&self) -> &OffloadConfig {
        &self.config
    }

    /// Checks that files can be written (the output directory exists or can
    /// be created, and is private): for a report at start-up.
    pub fn check_store(&self) -> Result<(), StoreError> {
        self.store.check()
    }

    /// The store files are written to.
    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// The store, shared (for the cleanup of a shared store).
    pub(crate) fn store_arc(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// Where events go.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// What the pipeline needs, with the id of the file it may write.
    fn parts(&self) -> pipeline::Parts<'_> {
        pipeline::Parts {
            config: &self.config,
            estimator: &*self.estimator,
            store: &*self.store,
            file_id: self.next_file_id(),
        }
    }

    /// The id of the next file: the one the caller named, else a new ULID
    /// (`Ulid::default()` is the nil id, never what is meant here).
    fn next_file_id(&self) -> ulid::Ulid {
        match self.file_id {
            Some(id) => id,
            None => ulid::Ulid::new(),
        }
    }
}

/// A result as the engine receives it off the executor.
enum Received {
    /// Bytes from a library user.
    Unchecked(bytes::Bytes),
    /// The layer's: text read whole as one JSON value already, and where
    /// its members sit when the validator reported them.
    Validated(ByteString, Option<MemberRanges>),
}

impl Received {
    fn len(&self) -> usize {
        match self {
            Received::Unchecked(b) => b.len(),
            Received::Validated(t, _) => t.len(),
        }
    }

    /// Its bytes, and what is known of them.
    fn input(&self) -> (&[u8], Input<'_>) {
        match self {
            Received::Unchecked(b) => (b, Input::Unchecked),
            Received::Validated(t, members) => {
                (t.as_bytes(), Input::Validated(t, members.as_ref()))
            }
        }
    }
}

/// Estimating and offloading.
impl Offloader {
    /// Whether `len` bytes of a result of `tool`, called by `client`, are
    /// sure to stay inline, without looking at them.
    pub(crate) fn inline_by_size(&self, tool: &str, client: Option<&str>, len: usize) -> bool {
        let policy = self.config.policy_for_client(tool, client);
        !policy.enabled || decide::under_threshold_by_size(&*self.estimator, &policy, len)
    }

    /// Estimated tokens of a tool result (see the module docs).
    pub fn estimate(&self, result: &[u8]) -> Result<usize, ResultError> {
        let text = std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?;
        let parsed = RawResult::parse(text)?;
        Ok(decide::content_tokens(&*self.estimator, &parsed))
    }

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
        self.process_input(call, result, Input::Unchecked)
    }

    /// [`process`](Self::process), `input` saying whether serde validated
    /// `result` already.
    fn process_input(
        &self,
        call: &ToolCall,
        result: &[u8],
        input: Input<'_>,
    ) -> Result<Outcome, ResultError> {
        let outcome = pipeline::run(&self.parts(), call, result, input);
        self.emit(&call.name, result.len(), &outcome);
        outcome
    }

    /// [`process`](Self::process) off the async executor: results that may
    /// be over the threshold are handled on tokio's blocking pool.
    ///
    /// If this future is dropped while the file is being written (the
    /// client went away), the file is deleted once written: nothing is left
    /// that no one ever heard of.
    pub async fn process_async(
        &self,
        call: &ToolCall,
        result: bytes::Bytes,
    ) -> Result<Outcome, ResultError> {
        self.process_input_async(call, Received::Unchecked(result))
            .await
    }

    /// [`process_async`](Self::process_async) of a result validated whole
    /// as one JSON value already, with serde's rules (the `result` member
    /// of a response the layer read with [`find_results`] or [`read_reply`]):
    /// it is parsed without validating it again, its members taken where
    /// `members` says when it does. Bytes not validated so must go to
    /// [`process_async`](Self::process_async).
    ///
    /// [`find_results`]: crate::wire::jsonrpc::find_results
    /// [`read_reply`]: crate::wire::jsonrpc::read_reply
    pub(crate) async fn process_validated_async(
        &self,
        call: &ToolCall,
        result: ByteString,
        members: Option<MemberRanges>,
    ) -> Result<Outcome, ResultError> {
        self.process_input_async(call, Received::Validated(result, members))
            .await
    }

    /// [`process_async`](Self::process_async) of what was received.
    async fn process_input_async(
        &self,
        call: &ToolCall,
        result: Received,
    ) -> Result<Outcome, ResultError> {
        if self.inline_by_size(&call.name, call.client.as_deref(), result.len()) {
            let (bytes, input) = result.input();
            return self.process_input(call, bytes, input);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        let len = result.len();
        let name = call.name.clone();
        let call = call.clone();
        let task = tokio::task::spawn_blocking(move || {
            let (bytes, input) = result.input();
            let outcome = pipeline::run(&this.parts(), &call, bytes, input);
            if let Err(Ok(Outcome::Offloaded(o))) = tx.send(outcome) {
                // No one is waiting for this file any more (a shared
                // store's: its manifest and data).
                let name = o.file.path.file_name().and_then(|n| n.to_str());
                match (this.store.shared(), name) {
                    (Some(_), Some(name)) => drop(this.store.remove(name)),
                    _ => drop(std::fs::remove_file(&o.file.path)),
                }
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

    /// Offloads a JSON-RPC response too large to hold, spilled to `spill`
    /// (`len` bytes, read from its start; a private temporary file), in
    /// bounded memory: the records are split from the file in streaming
    /// passes and written through [`Store::write_from`]; see
    /// [`SpilledReply`](super::SpilledReply). The caller checks the reply's
    /// `id` and sends its `message` in place of the spilled response; when
    /// the outcome is `Inline` it sends the spilled bytes as they were.
    /// Blocking (file I/O): call it on a blocking thread. Emits the event
    /// as [`process`](Self::process) does.
    pub fn process_spilled(
        &self,
        call: &ToolCall,
        spill: &std::fs::File,
        len: u64,
    ) -> super::SpilledReply {
        let mut reply = super::spilled::run(&self.parts(), call, spill, len);
        let outcome = Ok(std::mem::replace(
            &mut reply.outcome,
            Outcome::Inline(PassReason::Interrupted),
        ));
        let bytes = usize::try_from(len).unwrap_or(usize::MAX);
        self.emit(&call.name, bytes, &outcome);
        if let Ok(o) = outcome {
            reply.outcome = o;
        }
        reply
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
}

/// Reading its files back.
impl Offloader {
    /// Checks that `path` is an offloaded file of this engine that may still
    /// be read: a regular file (not a symlink) directly inside the output
    /// directory, named `atlatl-{operation}-{ulid}.jsonl`, whose creation
    /// time (from the ULID) plus the configured ttl has not passed. Returns
    /// the file's canonical path.
    pub fn check_readable(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<PathBuf, RebuildError> {
        self.check_readable_at(path, Utc::now())
    }

    /// [`check_readable`](Self::check_readable), as if the time were `now`
    /// (for callers with their own clock, and for tests of expiry that do
    /// not wait).
    pub fn check_readable_at(
        &self,
        path: impl AsRef<std::path::Path>,
        now: DateTime<Utc>,
    ) -> Result<PathBuf, RebuildError> {
        let path = path.as_ref();
        let not_ours = || RebuildError::NotOurs(path.to_owned());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(not_ours)?;
        let (_, ulid) = parse_file_name(name).ok_or_else(not_ours)?;
        let meta = std::fs::symlink_metadata(path)?;
        if !meta.file_type().is_file() {
            return Err(not_ours());
        }
        let dir = std::fs::canonicalize(self.store.dir()).map_err(|_| not_ours())?;
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = std::fs::canonicalize(parent.unwrap_or(std::path::Path::new(".")))?;
        if parent != dir {
            return Err(not_ours());
        }
        let expired_at = expiry(ulid.datetime().into(), self.config.ttl);
        if now >= expired_at {
            return Err(RebuildError::Expired { expired_at });
        }
        Ok(dir.join(name))
    }

    /// Rebuilds the original `CallToolResult` JSON from one of this engine's
    /// files, after [`check_readable`](Self::check_readable).
    pub fn rebuild_file(&self, path: impl AsRef<std::path::Path>) -> Result<String, RebuildError> {
        self.rebuild_file_at(path, Utc::now())
    }

    /// [`rebuild_file`](Self::rebuild_file), as if the time were `now`:
    /// [`check_readable_at`](Self::check_readable_at), then
    /// [`rebuild_at`](crate::offload::rebuild_at).
    pub fn rebuild_file_at(
        &self,
        path: impl AsRef<std::path::Path>,
        now: DateTime<Utc>,
    ) -> Result<String, RebuildError> {
        let path = self.check_readable_at(path, now)?;
        rebuild_at(&std::fs::read_to_string(path)?, now)
    }
}
