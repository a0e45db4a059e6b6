//! [`Offloader`]: the engine's parts (configuration, estimator, store,
//! events) and the cheap checks made before any parsing.

use std::sync::Arc;

use super::events::{EventHook, Events};
use crate::config::{EffectivePolicy, OffloadConfig};
use crate::estimate::{ScriptAwareEstimator, TokenEstimator};
use crate::store::{FsStore, Store, StoreError};
use crate::wire::mcp::{RawResult, ResultError};

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

    /// The id of the next file: the one the caller named, else a new ULID
    /// (`Ulid::default()` is the nil id, never what is meant here).
    pub(super) fn next_file_id(&self) -> ulid::Ulid {
        match self.file_id {
            Some(id) => id,
            None => ulid::Ulid::new(),
        }
    }

    /// Sends every event (see [`OffloadEvent`](crate::offload::OffloadEvent)) to `hook` too.
    pub fn with_event_hook(mut self, hook: EventHook) -> Self {
        self.events = Events::new(Some(hook));
        self
    }

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

    /// Where events go.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// Whether `len` bytes of a result of `tool` are sure to stay inline,
    /// without looking at them.
    pub(crate) fn surely_inline(&self, tool: &str, len: usize) -> bool {
        let policy = self.config.policy_for(tool);
        !policy.enabled || self.surely_under(&policy, len)
    }

    pub(super) fn surely_under(&self, policy: &EffectivePolicy, len: usize) -> bool {
        self.estimator.max_tokens_for_bytes(len) <= policy.threshold_tokens
            && policy.max_tool_output_bytes.is_none_or(|b| len < b)
    }

    /// Estimated tokens of a tool result (see the module docs).
    pub fn estimate(&self, result: &[u8]) -> Result<usize, ResultError> {
        let text = std::str::from_utf8(result).map_err(|_| ResultError::InvalidUtf8)?;
        let parsed = RawResult::parse(text)?;
        Ok(self.estimate_parsed(&parsed))
    }

    pub(super) fn estimate_parsed(&self, parsed: &RawResult<'_>) -> usize {
        let text: usize = parsed
            .blocks
            .iter()
            .filter_map(|b| b.text.as_deref())
            .map(|t| self.estimator.estimate(t))
            .sum();
        let structured = parsed
            .structured()
            .map_or(0, |s| self.estimator.estimate(s.get()));
        text.max(structured)
    }

    /// UTF-8 bytes of the content a model would read: the text blocks, or
    /// `structuredContent`, whichever is larger (the byte trigger's measure).
    pub(super) fn content_bytes(parsed: &RawResult<'_>) -> usize {
        let text: usize = parsed
            .blocks
            .iter()
            .filter_map(|b| b.text.as_deref())
            .map(str::len)
            .sum();
        text.max(parsed.structured().map_or(0, |s| s.get().len()))
    }
}
