//! [`HistoryConfig`]: the MessageOffloadOp parameters, with the spec's
//! defaults.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{
    ConfigError, EnvValue, RawValue, TomlValue, apply_toml_file, env_vars, integer, parse_toml,
    prompt_section,
};
use crate::estimate::{ScriptAwareEstimator, TokenEstimator};

/// Default `compact_ratio_threshold`: compress after compaction when it kept
/// more than 75% of the tokens.
pub const DEFAULT_COMPACT_RATIO_THRESHOLD: f64 = 0.75;
/// Default `max_total_tokens`: below it, nothing is done.
pub const DEFAULT_MAX_TOTAL_TOKENS: usize = 20_000;
/// Default `max_tool_message_tokens`: tool messages above it are compacted.
pub const DEFAULT_MAX_TOOL_MESSAGE_TOKENS: usize = 2_000;
/// Default `keep_recent_count` for compaction.
pub const DEFAULT_KEEP_RECENT_COMPACT: usize = 1;
/// Default `keep_recent_count` for compression.
pub const DEFAULT_KEEP_RECENT_COMPRESS: usize = 2;
/// Default most tokens of one summary.
pub const DEFAULT_SUMMARY_MAX_TOKENS: usize = 800;
/// How long a history file lives unused (7 days), by default: see
/// [`HistoryConfig::file_ttl`].
pub const DEFAULT_HISTORY_FILE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The spec's `working_summary_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SummaryMode {
    /// Only compaction of large tool messages.
    Compact,
    /// Only compression of older message groups into summaries.
    Compress,
    /// Compaction, then compression when compaction kept more than
    /// `compact_ratio_threshold` of the tokens (the default).
    #[default]
    Auto,
}

impl SummaryMode {
    /// The spec's name: `compact`, `compress` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryMode::Compact => "compact",
            SummaryMode::Compress => "compress",
            SummaryMode::Auto => "auto",
        }
    }
}

impl std::fmt::Display for SummaryMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `working_summary_mode` that is not `compact`, `compress` or `auto`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown working_summary_mode {0:?} (expected compact, compress or auto)")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for SummaryMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "compact" => Ok(SummaryMode::Compact),
            "compress" => Ok(SummaryMode::Compress),
            "auto" => Ok(SummaryMode::Auto),
            _ => Err(UnknownMode(s.to_owned())),
        }
    }
}

/// The MessageOffloadOp parameters (field names follow the spec; defaults
/// are the spec's). Build with [`Default`] and the setters.
#[derive(Clone)]
#[non_exhaustive]
pub struct HistoryConfig {
    /// `working_summary_mode` (default [`SummaryMode::Auto`]).
    pub mode: SummaryMode,
    /// `compact_ratio_threshold` (default 0.75): in `auto` mode, compress
    /// when tokens after compaction / tokens before is above it.
    pub compact_ratio_threshold: f64,
    /// `max_total_tokens` (default 20000): the budget of the history
    /// before its newest turn. A rewrite runs only when that part is over
    /// it, and then brings it down to `low_water_tokens` (see [the
    /// budget](crate::history#the-budget-a-cap-with-hysteresis)).
    pub max_total_tokens: usize,
    /// `low_water_tokens` (default `None`: half of `max_total_tokens`):
    /// what a rewrite brings the history before its newest turn down to,
    /// so that the turns after it only append (their requests keep the
    /// previous one as their prefix, which providers cache) until the
    /// budget is reached again. Above `max_total_tokens` it counts as
    /// `max_total_tokens`.
    pub low_water_tokens: Option<usize>,
    /// `max_tool_message_tokens` (default 2000): a tool message over it is
    /// compacted.
    pub max_tool_message_tokens: usize,
    /// `group_token_threshold` (default `None`): the most tokens of one
    /// compression group; `None` or 0 compresses all in one group. A single
    /// unit over it forms its own group.
    pub group_token_threshold: Option<usize>,
    /// `keep_recent_count` for compaction (default 1).
    pub keep_recent_compact: usize,
    /// `keep_recent_count` for compression (default 2).
    pub keep_recent_compress: usize,
    /// `store_dir`: where offloaded tool outputs, stored groups and
    /// remembered summaries go (default: `history` in the per-user private
    /// temp dir of [`FsStore::default_dir`](crate::store::FsStore::default_dir)).
    pub store_dir: PathBuf,
    /// Use `store_dir` even when it is not private (see
    /// [`FsStore::trust_dir`](crate::store::FsStore::trust_dir)).
    pub trust_store_dir: bool,
    /// `chat_id`: names the files of compressed groups. `None`: an id
    /// derived from the conversation's first non-system message, so that
    /// the same conversation keeps the same id across turns and processes
    /// (the spec's random UUID would change every name every turn).
    pub chat_id: Option<String>,
    /// The most tokens one summary may cost (default 800; a summary is also
    /// never asked for more than a quarter of its group).
    pub summary_max_tokens: usize,
    /// The token estimator (default [`ScriptAwareEstimator`]).
    pub estimator: Arc<dyn TokenEstimator>,
    /// `read_tool` (default `true`): a proxy in front of the provider (the
    /// `lro history` command) adds the [`read_back`](super::read_back)
    /// tool to requests whose history names offloaded files, and answers
    /// it, so the model reads them back wherever its own tools run.
    pub read_tool: bool,
    /// `store` (default empty: `store_dir` only): an object store URL
    /// (`s3://bucket/prefix`, `gs://…`, `az://…`) the files also go to,
    /// shared by the processes of a fleet (see
    /// [`HistoryOffloader::with_bucket`](super::HistoryOffloader::with_bucket);
    /// the `lro history` command reads it).
    pub store: String,
    /// `file_ttl_seconds` (default [`DEFAULT_HISTORY_FILE_TTL`]; 0: never):
    /// files of `store_dir` unused this long may be deleted by
    /// [`sweep_history_dir`](super::sweep_history_dir) (the `lro history`
    /// command sweeps); a file is used when it is written again, read back
    /// or read as a checkpoint or summary.
    pub file_ttl: Option<Duration>,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            mode: SummaryMode::Auto,
            compact_ratio_threshold: DEFAULT_COMPACT_RATIO_THRESHOLD,
            max_total_tokens: DEFAULT_MAX_TOTAL_TOKENS,
            low_water_tokens: None,
            max_tool_message_tokens: DEFAULT_MAX_TOOL_MESSAGE_TOKENS,
            group_token_threshold: None,
            keep_recent_compact: DEFAULT_KEEP_RECENT_COMPACT,
            keep_recent_compress: DEFAULT_KEEP_RECENT_COMPRESS,
            store_dir: crate::store::FsStore::default_dir().join("history"),
            trust_store_dir: false,
            chat_id: None,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            estimator: Arc::new(ScriptAwareEstimator),
            read_tool: true,
            store: String::new(),
            file_ttl: Some(DEFAULT_HISTORY_FILE_TTL),
        }
    }
}

impl std::fmt::Debug for HistoryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryConfig")
            .field("mode", &self.mode)
            .field("compact_ratio_threshold", &self.compact_ratio_threshold)
            .field("max_total_tokens", &self.max_total_tokens)
            .field("max_tool_message_tokens", &self.max_tool_message_tokens)
            .field("low_water_tokens", &self.low_water_tokens)
            .field("group_token_threshold", &self.group_token_threshold)
            .field("keep_recent_compact", &self.keep_recent_compact)
            .field("keep_recent_compress", &self.keep_recent_compress)
            .field("store_dir", &self.store_dir)
            .field("chat_id", &self.chat_id.is_some())
            .field("read_tool", &self.read_tool)
            .field("store", &!self.store.is_empty())
            .field("file_ttl", &self.file_ttl)
            .finish_non_exhaustive()
    }
}

impl HistoryConfig {
    /// Sets `working_summary_mode`.
    pub fn mode(mut self, mode: SummaryMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets `compact_ratio_threshold`.
    pub fn compact_ratio_threshold(mut self, ratio: f64) -> Self {
        self.compact_ratio_threshold = ratio;
        self
    }

    /// Sets `max_total_tokens`.
    pub fn max_total_tokens(mut self, tokens: usize) -> Self {
        self.max_total_tokens = tokens;
        self
    }

    /// Sets `max_tool_message_tokens`.
    pub fn max_tool_message_tokens(mut self, tokens: usize) -> Self {
        self.max_tool_message_tokens = tokens;
        self
    }

    /// Sets `group_token_threshold` (`None` or 0: one group).
    pub fn group_token_threshold(mut self, tokens: Option<usize>) -> Self {
        self.group_token_threshold = tokens;
        self
    }

    /// Sets `keep_recent_count` for compaction.
    pub fn keep_recent_compact(mut self, count: usize) -> Self {
        self.keep_recent_compact = count;
        self
    }

    /// Sets `keep_recent_count` for compression.
    pub fn keep_recent_compress(mut self, count: usize) -> Self {
        self.keep_recent_compress = count;
        self
    }

    /// Sets `store_dir`.
    pub fn store_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.store_dir = dir.into();
        self
    }

    /// Uses `store_dir` even when it is not private.
    pub fn trust_store_dir(mut self, trusted: bool) -> Self {
        self.trust_store_dir = trusted;
        self
    }

    /// Sets `read_tool`.
    pub fn read_tool(mut self, on: bool) -> Self {
        self.read_tool = on;
        self
    }

    /// Sets `chat_id`.
    pub fn chat_id(mut self, id: impl Into<String>) -> Self {
        self.chat_id = Some(id.into());
        self
    }

    /// Sets the most tokens of one summary.
    pub fn summary_max_tokens(mut self, tokens: usize) -> Self {
        self.summary_max_tokens = tokens;
        self
    }

    /// Replaces the token estimator.
    pub fn estimator(mut self, estimator: impl TokenEstimator) -> Self {
        self.estimator = Arc::new(estimator);
        self
    }

    /// The group size limit, `None` for one group.
    /// What a rewrite brings the history before its newest turn down to.
    pub(crate) fn low_water(&self) -> usize {
        self.low_water_tokens
            .unwrap_or(self.max_total_tokens / 2)
            .min(self.max_total_tokens)
    }

    /// Sets `low_water_tokens`.
    pub fn low_water_tokens(mut self, tokens: Option<usize>) -> Self {
        self.low_water_tokens = tokens;
        self
    }

    pub(crate) fn group_limit(&self) -> Option<usize> {
        self.group_token_threshold.filter(|&t| t > 0)
    }
}

/// Prefix of the environment variables that configure the history offload
/// (`ATLATL_PROMPT__HISTORY__MAX_TOTAL_TOKENS=30000`), as
/// [`ENV_PREFIX`](crate::config::ENV_PREFIX) does for the offload.
pub const HISTORY_ENV_PREFIX: &str = "ATLATL_PROMPT__HISTORY__";

impl HistoryConfig {
    /// The defaults, then the `[prompt.history]` section of `toml_file` (if
    /// given), then the `ATLATL_PROMPT__HISTORY__*` environment variables.
    /// Keys are the spec's parameter names (`working_summary_mode`,
    /// `compact_ratio_threshold`, `max_total_tokens`,
    /// `max_tool_message_tokens`, `group_token_threshold` (0: one group),
    /// `store_dir`, `chat_id`), plus `keep_recent_compact`,
    /// `keep_recent_compress`, `trust_store_dir`, `summary_max_tokens`,
    /// `read_tool`, `store` and `file_ttl_seconds`.
    pub fn load(toml_file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = HistoryConfig::default();
        if let Some(path) = toml_file {
            config = apply_toml_file(path, |text| config.apply_toml_str(text))?;
        }
        config.apply_env_vars(env_vars(HISTORY_ENV_PREFIX)?)
    }

    /// The defaults with the `[prompt.history]` section of a TOML document.
    pub fn from_toml_str(toml_text: &str) -> Result<Self, ConfigError> {
        HistoryConfig::default().apply_toml_str(toml_text)
    }

    /// Applies the `[prompt.history]` section of a TOML document (absent:
    /// nothing changes).
    pub fn apply_toml_str(mut self, toml_text: &str) -> Result<Self, ConfigError> {
        let doc = parse_toml(toml_text)?;
        for (key, value) in prompt_section(&doc, "history")?.into_iter().flatten() {
            let name = format!("prompt.history.{key}");
            self.set_key(key, &name, &TomlValue(value))?;
        }
        Ok(self)
    }

    /// Applies `ATLATL_PROMPT__HISTORY__*` variables given as pairs (other
    /// names are ignored), in name order.
    pub fn apply_env_vars<I, K, V>(mut self, vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, _)| k.as_ref().starts_with(HISTORY_ENV_PREFIX))
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        vars.sort();
        for (name, value) in vars {
            let key = name[HISTORY_ENV_PREFIX.len()..].to_ascii_lowercase();
            self.set_key(&key, &name, &EnvValue(&value))?;
        }
        Ok(self)
    }

    fn set_key(&mut self, key: &str, name: &str, v: &dyn RawValue) -> Result<(), ConfigError> {
        let tokens = |v: &dyn RawValue| integer::<usize>(v, name, 0, u32::MAX.into());
        match key {
            "working_summary_mode" => {
                self.mode = v.string(name)?.parse().map_err(|_| ConfigError::Invalid {
                    key: name.to_owned(),
                    value: v.shown(),
                    expected: "compact, compress or auto",
                })?;
            }
            "compact_ratio_threshold" => self.compact_ratio_threshold = ratio(v, name)?,
            "max_total_tokens" => self.max_total_tokens = tokens(v)?,
            "max_tool_message_tokens" => self.max_tool_message_tokens = tokens(v)?,
            "low_water_tokens" => self.low_water_tokens = Some(tokens(v)?),
            "group_token_threshold" => {
                self.group_token_threshold = Some(tokens(v)?).filter(|&t| t > 0)
            }
            "keep_recent_compact" => self.keep_recent_compact = tokens(v)?,
            "keep_recent_compress" => self.keep_recent_compress = tokens(v)?,
            "summary_max_tokens" => self.summary_max_tokens = tokens(v)?,
            "store_dir" => self.store_dir = PathBuf::from(v.string(name)?),
            "trust_store_dir" => self.trust_store_dir = v.boolean(name)?,
            "read_tool" => self.read_tool = v.boolean(name)?,
            "store" => self.store = v.string(name)?.trim().to_owned(),
            "file_ttl_seconds" => {
                let seconds = integer::<u64>(v, name, 0, u32::MAX.into())?;
                self.file_ttl = (seconds > 0).then(|| Duration::from_secs(seconds));
            }
            "chat_id" => self.chat_id = Some(v.string(name)?).filter(|id| !id.is_empty()),
            _ => return Err(ConfigError::UnknownKey(name.to_owned())),
        }
        Ok(())
    }
}

/// A ratio between 0 and 1.
fn ratio(v: &dyn RawValue, name: &str) -> Result<f64, ConfigError> {
    v.float()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| ConfigError::Invalid {
            key: name.to_owned(),
            value: v.shown(),
            expected: "a number from 0 to 1",
        })
}
