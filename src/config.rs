//! Configuration: the spec's `[prompt.offload]` section, our additions,
//! per-tool policy, and loading from TOML and the environment.
//!
//! # TOML
//!
//! ```toml
//! [prompt.offload]
//! enabled = true                 # the spec's keys
//! threshold_tokens = 1600
//! ttl_seconds = 3600
//! output_dir = ""                # empty: a private per-user directory in the system temp dir
//! trust_output_dir = false       # true: use output_dir even if others can write it
//! # tower-lro's additions
//! preview_chars = 200            # characters of data in the descriptor's preview (0: none)
//! offload_errors = false         # may results with isError: true be offloaded?
//! max_tool_output_bytes = 0      # byte trigger beside the token one (0: off)
//! cleanup_interval_seconds = 3600
//! auto_cleanup = true            # the layer starts the cleanup task itself
//! max_buffered_bytes = 536870912 # cap on response bytes buffered at once, all responses together
//! extraction = true              # serve offloaded data over MCP (lro_extract, lro_list, resources/read)
//! exclude_tools = ["read_secret"]
//!
//! [prompt.offload.tools.query_logs]   # per-tool policy; every key optional
//! threshold_tokens = 8000
//! max_tool_output_bytes = 65536
//! offload_errors = true
//! enabled = true                      # false: the same as exclude_tools
//! ```
//!
//! Other sections of the file are ignored; an unknown key inside
//! `[prompt.offload]` is an error, so a typo never goes unnoticed.
//!
//! # Environment
//!
//! `ATLATL_PROMPT__OFFLOAD__{KEY}` for every key above, upper-case
//! (`ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS=4000`); `EXCLUDE_TOOLS` is a
//! comma-separated list; a per-tool key is
//! `ATLATL_PROMPT__OFFLOAD__TOOLS__{tool name as written}__{KEY}`. Booleans
//! are `true`/`false`/`1`/`0`.
//!
//! [`OffloadConfig::load`] applies the environment over the file over the
//! defaults. Every invalid value gets a [`ConfigError`] naming the key (or
//! variable) and the value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default token threshold (the spec's `DEFAULT_OFFLOAD_THRESHOLD_TOKENS`).
pub const DEFAULT_OFFLOAD_THRESHOLD_TOKENS: usize = 1600;
/// Default time-to-live of an offloaded file: one hour.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// Default `schema_version` written in file headers.
pub const DEFAULT_SCHEMA_VERSION: &str = "1.0";
/// Default length of the descriptor's `preview`, in characters.
pub const DEFAULT_PREVIEW_CHARS: usize = 200;

/// Default interval of the cleanup task: one hour (the spec's schedule).
pub const DEFAULT_CLEANUP_INTERVAL: Duration = Duration::from_secs(3600);
/// Default cap on the response bytes the layer buffers at once, across all
/// in-flight responses: 512 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 512 << 20;
/// Prefix of the environment variables of `[prompt.offload]`.
pub const ENV_PREFIX: &str = "ATLATL_PROMPT__OFFLOAD__";

/// Engine configuration: the spec's `[prompt.offload]` keys and ours.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OffloadConfig {
    /// Enable or disable LRO (`prompt.offload.enabled`, default true).
    pub enabled: bool,
    /// Token threshold for activation (`prompt.offload.threshold_tokens`, default 1600).
    pub threshold_tokens: usize,
    /// Seconds before file cleanup (`prompt.offload.ttl_seconds`, default
    /// 3600). 0: a file expires as soon as it is written (reading it back
    /// is refused) and the next cleanup run deletes it.
    pub ttl: Duration,
    /// Directory for JSONL files (`prompt.offload.output_dir`; empty = a
    /// private per-user directory in the system temp dir, see
    /// [`FsStore::default_dir`](crate::store::FsStore::default_dir)).
    pub output_dir: PathBuf,
    /// Use `output_dir` even when it is not private: a symbolic link, not
    /// owned by this user, or writable by others (`trust_output_dir`,
    /// default false: such a directory is refused, see [`FsStore`](crate::store::FsStore)).
    pub trust_output_dir: bool,
    /// `schema_version` written in headers (default "1.0").
    pub schema_version: String,
    /// Characters of data in the descriptor's `preview` (default 200; 0 = none).
    pub preview_chars: usize,
    /// Whether results with `isError: true` may be offloaded (default false).
    pub offload_errors: bool,
    /// Byte trigger beside the token one, as in the memory pointer pattern's
    /// `maxToolOutputBytes`: a result whose content (text of its text
    /// blocks, or its `structuredContent`, whichever is larger) has at least
    /// this many UTF-8 bytes is offloaded even under the token threshold.
    /// `None` (the default) turns it off.
    pub max_tool_output_bytes: Option<usize>,
    /// Per-tool policy, by tool name.
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Interval of the cleanup task (default one hour).
    pub cleanup_interval: Duration,
    /// Whether a layer starts the cleanup task by itself, in the runtime it
    /// is first used in (`auto_cleanup`, default true); it stops when the
    /// last clone of the layer and its services is dropped.
    pub auto_cleanup: bool,
    /// Cap on the response bytes the layer buffers at once, across all
    /// in-flight responses (default 512 MiB). Past it a response passes
    /// through untouched.
    pub max_buffered_bytes: usize,
    /// Whether offloaded data is also served over MCP (`extraction`,
    /// default true): the layer lists and answers the `lro_extract` and
    /// `lro_list` tools and `resources/read` of an offload file, and the
    /// descriptor's guidance is the spec's native `lro_extract` template.
    /// False: only the file path and its shell recipes.
    pub extraction: bool,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        OffloadConfig {
            enabled: true,
            threshold_tokens: DEFAULT_OFFLOAD_THRESHOLD_TOKENS,
            ttl: DEFAULT_TTL,
            output_dir: PathBuf::new(),
            trust_output_dir: false,
            schema_version: DEFAULT_SCHEMA_VERSION.to_owned(),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            offload_errors: false,
            max_tool_output_bytes: None,
            tools: BTreeMap::new(),
            cleanup_interval: DEFAULT_CLEANUP_INTERVAL,
            auto_cleanup: true,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            extraction: true,
        }
    }
}

/// Policy of one tool; `None` fields follow the global configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// `Some(false)`: the tool's results always pass through (excluded).
    pub enabled: Option<bool>,
    /// The tool's own token threshold.
    pub threshold_tokens: Option<usize>,
    /// The tool's own byte trigger (`Some(0)` turns it off for the tool).
    pub max_tool_output_bytes: Option<usize>,
    /// Whether the tool's `isError` results may be offloaded.
    pub offload_errors: Option<bool>,
}

impl ToolPolicy {
    /// A policy following the global configuration in everything.
    pub fn new() -> Self {
        ToolPolicy::default()
    }
    /// Sets `enabled` (`false` excludes the tool).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }
    /// Sets the tool's token threshold.
    pub fn threshold_tokens(mut self, tokens: usize) -> Self {
        self.threshold_tokens = Some(tokens);
        self
    }
    /// Sets the tool's byte trigger (0: off).
    pub fn max_tool_output_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_output_bytes = Some(bytes);
        self
    }
    /// Sets whether the tool's `isError` results may be offloaded.
    pub fn offload_errors(mut self, allow: bool) -> Self {
        self.offload_errors = Some(allow);
        self
    }
}

/// The policy in force for one tool: the global configuration with the
/// tool's own policy applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectivePolicy {
    /// Offloading is on for this tool.
    pub enabled: bool,
    /// The tool's token threshold.
    pub threshold_tokens: usize,
    /// The tool's byte trigger, if any.
    pub max_tool_output_bytes: Option<usize>,
    /// Whether the tool's `isError` results may be offloaded.
    pub offload_errors: bool,
}

impl OffloadConfig {
    /// Sets `enabled`.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }
    /// Sets `threshold_tokens`.
    pub fn threshold_tokens(mut self, tokens: usize) -> Self {
        self.threshold_tokens = tokens;
        self
    }
    /// Sets the file time-to-live.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Sets the output directory (empty: system temp dir).
    pub fn output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }
    /// Sets the preview length in characters.
    pub fn preview_chars(mut self, chars: usize) -> Self {
        self.preview_chars = chars;
        self
    }
    /// Allows offloading results with `isError: true`.
    pub fn offload_errors(mut self, allow: bool) -> Self {
        self.offload_errors = allow;
        self
    }
    /// Sets the byte trigger (`maxToolOutputBytes`; `None` or 0: off).
    pub fn max_tool_output_bytes(mut self, bytes: Option<usize>) -> Self {
        self.max_tool_output_bytes = bytes.filter(|&b| b > 0);
        self
    }
    /// Excludes tools: their results always pass through.
    pub fn exclude_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for tool in tools {
            self.tools.entry(tool.into()).or_default().enabled = Some(false);
        }
        self
    }
    /// Sets the policy of one tool.
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.tools.insert(tool.into(), policy);
        self
    }
    /// Sets the cleanup task's interval.
    pub fn cleanup_interval(mut self, interval: Duration) -> Self {
        self.cleanup_interval = interval;
        self
    }
    /// Sets the cap on response bytes buffered at once.
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }
    /// Sets [`extraction`](Self::extraction): serve offloaded data over MCP.
    pub fn extraction(mut self, on: bool) -> Self {
        self.extraction = on;
        self
    }

    /// The policy in force for `tool`.
    pub fn policy_for(&self, tool: &str) -> EffectivePolicy {
        let own = self.tools.get(tool);
        let max_bytes = match own.and_then(|p| p.max_tool_output_bytes) {
            Some(0) => None,
            Some(b) => Some(b),
            None => self.max_tool_output_bytes,
        };
        EffectivePolicy {
            enabled: self.enabled && own.and_then(|p| p.enabled).unwrap_or(true),
            threshold_tokens: own
                .and_then(|p| p.threshold_tokens)
                .unwrap_or(self.threshold_tokens),
            max_tool_output_bytes: max_bytes,
            offload_errors: own
                .and_then(|p| p.offload_errors)
                .unwrap_or(self.offload_errors),
        }
    }

    /// The defaults, then the `[prompt.offload]` section of `toml_file` (if
    /// given), then the `ATLATL_PROMPT__OFFLOAD__*` environment variables.
    pub fn load(toml_file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = OffloadConfig::default();
        if let Some(path) = toml_file {
            config = config.apply_toml_file(path)?;
        }
        config.apply_env()
    }

    /// The defaults with the `[prompt.offload]` section of a TOML document applied.
    pub fn from_toml_str(toml: &str) -> Result<Self, ConfigError> {
        OffloadConfig::default().apply_toml_str(toml)
    }

    /// Applies the `[prompt.offload]` section of the TOML file at `path`.
    pub fn apply_toml_file(self, path: &Path) -> Result<Self, ConfigError> {
        apply_toml_file(path, |text| self.apply_toml_str(text))
    }

    /// Applies the `[prompt.offload]` section of a TOML document (absent:
    /// nothing changes).
    pub fn apply_toml_str(mut self, toml_text: &str) -> Result<Self, ConfigError> {
        let doc = parse_toml(toml_text)?;
        let Some(section) = prompt_section(&doc, "offload")? else {
            return Ok(self);
        };
        for (key, value) in section {
            let full = format!("prompt.offload.{key}");
            if key == "tools" {
                let tools = value
                    .as_table()
                    .ok_or_else(|| invalid(&full, value, "a table of tool tables"))?;
                for (tool, policy) in tools {
                    let tkey = format!("{full}.{tool}");
                    let policy = policy
                        .as_table()
                        .ok_or_else(|| invalid(&tkey, policy, "a table"))?;
                    for (pkey, pvalue) in policy {
                        let v = TomlValue(pvalue);
                        let entry = self.tools.entry(tool.clone()).or_default();
                        set_tool_key(entry, pkey, &format!("{tkey}.{pkey}"), &v)?;
                    }
                }
                continue;
            }
            if key == "exclude_tools" {
                let list = value
                    .as_array()
                    .ok_or_else(|| invalid(&full, value, "an array of tool names"))?;
                let mut names = Vec::with_capacity(list.len());
                for item in list {
                    let name = item
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| invalid(&full, value, "an array of tool names"))?;
                    names.push(name.to_owned());
                }
                self = self.exclude_tools(names);
                continue;
            }
            self.set_key(key, &full, &TomlValue(value))?;
        }
        Ok(self)
    }

    /// Applies the `ATLATL_PROMPT__OFFLOAD__*` variables of the process
    /// environment.
    pub fn apply_env(self) -> Result<Self, ConfigError> {
        self.apply_env_vars(env_vars(ENV_PREFIX)?)
    }

    /// Applies `ATLATL_PROMPT__OFFLOAD__*` variables given as pairs (other
    /// names are ignored). For callers with their own environment source.
    pub fn apply_env_vars<I, K, V>(mut self, vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        // Sorted, so the outcome never depends on the environment's order.
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, _)| k.as_ref().starts_with(ENV_PREFIX))
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        vars.sort();
        for (name, value) in vars {
            let rest = &name[ENV_PREFIX.len()..];
            let v = EnvValue(&value);
            if let Some(tool_key) = rest.strip_prefix("TOOLS__") {
                let Some((tool, key)) = tool_key.rsplit_once("__").filter(|(t, _)| !t.is_empty())
                else {
                    return Err(ConfigError::UnknownKey(name));
                };
                let entry = self.tools.entry(tool.to_owned()).or_default();
                set_tool_key(entry, &key.to_ascii_lowercase(), &name, &v)?;
                continue;
            }
            if rest == "EXCLUDE_TOOLS" {
                let names: Vec<&str> = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect();
                self = self.exclude_tools(names);
                continue;
            }
            self.set_key(&rest.to_ascii_lowercase(), &name, &v)?;
        }
        Ok(self)
    }

    fn set_key(&mut self, key: &str, name: &str, v: &dyn RawValue) -> Result<(), ConfigError> {
        match key {
            "enabled" => self.enabled = v.boolean(name)?,
            "threshold_tokens" => self.threshold_tokens = integer(v, name, 0, u32::MAX.into())?,
            // 0: every file is expired at once, deleted by the next cleanup run.
            "ttl_seconds" => self.ttl = Duration::from_secs(integer(v, name, 0, u64::MAX)?),
            "output_dir" => self.output_dir = PathBuf::from(v.string(name)?),
            "trust_output_dir" => self.trust_output_dir = v.boolean(name)?,
            "preview_chars" => self.preview_chars = integer(v, name, 0, u32::MAX.into())?,
            "offload_errors" => self.offload_errors = v.boolean(name)?,
            "max_tool_output_bytes" => {
                let b: usize = integer(v, name, 0, u64::MAX)?;
                self.max_tool_output_bytes = (b > 0).then_some(b);
            }
            "cleanup_interval_seconds" => {
                self.cleanup_interval = Duration::from_secs(integer(v, name, 1, u64::MAX)?);
            }
            "max_buffered_bytes" => self.max_buffered_bytes = integer(v, name, 0, u64::MAX)?,
            "auto_cleanup" => self.auto_cleanup = v.boolean(name)?,
            "extraction" => self.extraction = v.boolean(name)?,
            _ => return Err(ConfigError::UnknownKey(name.to_owned())),
        }
        Ok(())
    }
}

fn set_tool_key(
    policy: &mut ToolPolicy,
    key: &str,
    name: &str,
    v: &dyn RawValue,
) -> Result<(), ConfigError> {
    match key {
        "enabled" => policy.enabled = Some(v.boolean(name)?),
        "threshold_tokens" => policy.threshold_tokens = Some(integer(v, name, 0, u32::MAX.into())?),
        "max_tool_output_bytes" => {
            policy.max_tool_output_bytes = Some(integer(v, name, 0, u64::MAX)?)
        }
        "offload_errors" => policy.offload_errors = Some(v.boolean(name)?),
        _ => return Err(ConfigError::UnknownKey(name.to_owned())),
    }
    Ok(())
}

/// A configuration error. Each names the key (or environment variable) and,
/// for a bad value, the value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value of the wrong type or out of range.
    #[error("invalid value {value} for {key}: expected {expected}")]
    Invalid {
        /// The key (`prompt.offload.threshold_tokens`) or variable
        /// (`ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS`).
        key: String,
        /// The value as written.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A key that `[prompt.offload]` does not have.
    #[error("unknown configuration key {0}")]
    UnknownKey(String),
    /// The document is not valid TOML.
    #[error("invalid TOML{}: {message}", path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default())]
    Toml {
        /// The file, when read from one.
        path: Option<PathBuf>,
        /// The parser's message.
        message: String,
    },
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

fn invalid(key: &str, value: &toml::Value, expected: &'static str) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        value: show(value),
        expected,
    }
}

/// `apply` run on the text of the TOML file at `path`; its errors name the
/// file.
pub(crate) fn apply_toml_file<T>(
    path: &Path,
    apply: impl FnOnce(&str) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    apply(&text).map_err(|e| match e {
        ConfigError::Toml {
            path: None,
            message,
        } => ConfigError::Toml {
            path: Some(path.to_owned()),
            message,
        },
        e => e,
    })
}

/// A TOML document, or an error naming no file yet.
pub(crate) fn parse_toml(toml_text: &str) -> Result<toml::Table, ConfigError> {
    toml::from_str(toml_text).map_err(|e| ConfigError::Toml {
        path: None,
        message: e.to_string(),
    })
}

/// The `[prompt.{name}]` table of a TOML document, when there is one.
pub(crate) fn prompt_section<'a>(
    doc: &'a toml::Table,
    name: &str,
) -> Result<Option<&'a toml::Table>, ConfigError> {
    let Some(prompt) = doc.get("prompt") else {
        return Ok(None);
    };
    let prompt = prompt
        .as_table()
        .ok_or_else(|| invalid("prompt", prompt, "a table"))?;
    let Some(section) = prompt.get(name) else {
        return Ok(None);
    };
    let full = format!("prompt.{name}");
    section
        .as_table()
        .map(Some)
        .ok_or_else(|| invalid(&full, section, "a table"))
}

/// The process environment's variables named `{prefix}*`, which must be
/// UTF-8.
pub(crate) fn env_vars(prefix: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let vars = std::env::vars_os().filter_map(|(k, v)| {
        let k = k.into_string().ok()?;
        k.starts_with(prefix).then_some((k, v))
    });
    let mut pairs = Vec::new();
    for (k, v) in vars {
        match v.into_string() {
            Ok(v) => pairs.push((k, v)),
            Err(v) => {
                return Err(ConfigError::Invalid {
                    key: k,
                    value: v.to_string_lossy().into_owned(),
                    expected: "valid UTF-8",
                });
            }
        }
    }
    Ok(pairs)
}

/// A value from TOML or from the environment, converted with errors that
/// name the key and the value.
pub(crate) trait RawValue {
    fn boolean(&self, key: &str) -> Result<bool, ConfigError>;
    fn unsigned(&self) -> Option<u64>;
    /// Used by the history offload's configuration (ratios).
    #[cfg_attr(not(feature = "history"), allow(dead_code))]
    fn float(&self) -> Option<f64>;
    fn shown(&self) -> String;
    fn string(&self, key: &str) -> Result<String, ConfigError>;
}

pub(crate) fn integer<T: TryFrom<u64>>(
    v: &dyn RawValue,
    key: &str,
    min: u64,
    max: u64,
) -> Result<T, ConfigError> {
    let expected = if min == 0 {
        "a non-negative integer"
    } else {
        "a positive integer"
    };
    let err = || ConfigError::Invalid {
        key: key.to_owned(),
        value: v.shown(),
        expected,
    };
    let n = v.unsigned().ok_or_else(err)?;
    if n < min || n > max {
        return Err(err());
    }
    T::try_from(n).map_err(|_| err())
}

/// A TOML value as written in a file (tables and arrays abbreviated).
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => format!("[{}]", a.iter().map(show).collect::<Vec<_>>().join(", ")),
        toml::Value::Table(_) => "{...}".to_owned(),
    }
}

pub(crate) struct TomlValue<'a>(pub(crate) &'a toml::Value);

impl RawValue for TomlValue<'_> {
    fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        self.0
            .as_bool()
            .ok_or_else(|| invalid(key, self.0, "true or false"))
    }
    fn unsigned(&self) -> Option<u64> {
        self.0.as_integer().and_then(|i| u64::try_from(i).ok())
    }
    fn float(&self) -> Option<f64> {
        self.0
            .as_float()
            .or_else(|| self.0.as_integer().map(|i| i as f64))
    }
    fn shown(&self) -> String {
        show(self.0)
    }
    fn string(&self, key: &str) -> Result<String, ConfigError> {
        self.0
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(key, self.0, "a string"))
    }
}

pub(crate) struct EnvValue<'a>(pub(crate) &'a str);

impl RawValue for EnvValue<'_> {
    fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        match self.0.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(ConfigError::Invalid {
                key: key.to_owned(),
                value: self.shown(),
                expected: "true, false, 1 or 0",
            }),
        }
    }
    fn unsigned(&self) -> Option<u64> {
        self.0.trim().parse::<u64>().ok()
    }
    fn float(&self) -> Option<f64> {
        self.0.trim().parse::<f64>().ok()
    }
    fn shown(&self) -> String {
        format!("{:?}", self.0)
    }
    fn string(&self, _key: &str) -> Result<String, ConfigError> {
        Ok(self.0.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_bounds_name_key_and_value() {
        let e = OffloadConfig::default()
            .apply_env_vars([("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "-1")])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"-1\" for ATLATL_PROMPT__OFFLOAD__TTL_SECONDS: expected a non-negative integer"
        );
        let e = OffloadConfig::default()
            .apply_env_vars([("ATLATL_PROMPT__OFFLOAD__CLEANUP_INTERVAL_SECONDS", "0")])
            .unwrap_err();
        assert!(
            e.to_string().ends_with("expected a positive integer"),
            "{e}"
        );
    }

    #[test]
    fn a_zero_ttl_is_allowed_in_toml_and_env() {
        let c = OffloadConfig::default()
            .apply_env_vars([("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "0")])
            .unwrap();
        assert_eq!(c.ttl, Duration::ZERO);
        let c = OffloadConfig::from_toml_str("[prompt.offload]\nttl_seconds = 0\n").unwrap();
        assert_eq!(c.ttl, Duration::ZERO);
    }
}
