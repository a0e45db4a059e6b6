//! Loading an [`OffloadConfig`] from TOML and the environment: the
//! `[prompt.offload]` section of a file, then the
//! `ATLATL_PROMPT__OFFLOAD__*` variables, over what is already set. Every
//! invalid value gets a [`ConfigError`] naming the key (or variable) and the
//! value. The helpers below (`parse_toml`, `prompt_section`, `env_vars`,
//! the value readers) are shared with the history offload's configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::client::fold_name;
use super::{ClientProfile, ENV_PREFIX, GuidanceKind, OffloadConfig, ToolListing, ToolPolicy};

impl OffloadConfig {
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
            if key == "clients" {
                let clients = value
                    .as_table()
                    .ok_or_else(|| invalid(&full, value, "a table of client tables"))?;
                for (client, profile) in clients {
                    let ckey = format!("{full}.{client}");
                    let profile = profile
                        .as_table()
                        .ok_or_else(|| invalid(&ckey, profile, "a table"))?;
                    for (pkey, pvalue) in profile {
                        let v = TomlValue(pvalue);
                        let entry = self.clients.entry(fold_name(client)).or_default();
                        set_client_key(entry, pkey, &format!("{ckey}.{pkey}"), &v)?;
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
            if let Some(client_key) = rest.strip_prefix("CLIENTS__") {
                let Some((client, key)) =
                    client_key.rsplit_once("__").filter(|(c, _)| !c.is_empty())
                else {
                    return Err(ConfigError::UnknownKey(name));
                };
                let entry = self.clients.entry(fold_name(client)).or_default();
                set_client_key(entry, &key.to_ascii_lowercase(), &name, &v)?;
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
            "store" => self.store = v.string(name)?.trim().to_owned(),
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
            "parallel" => self.parallel = v.boolean(name)?,
            "open_output_schemas" => self.open_output_schemas = v.boolean(name)?,
            "builtin_profiles" => self.builtin_profiles = v.boolean(name)?,
            "files_local_to_client" => self.files_local_to_client = v.boolean(name)?,
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

/// A `list_tools` value: a boolean, or `"always"`, `"never"`,
/// `"after_offload"`.
fn tool_listing(v: &dyn RawValue, name: &str) -> Result<ToolListing, ConfigError> {
    if let Ok(listed) = v.boolean(name) {
        return Ok(listed.into());
    }
    let s = v.string(name).unwrap_or_else(|_| v.shown());
    match s.trim().to_ascii_lowercase().as_str() {
        "always" => Ok(ToolListing::Always),
        "never" => Ok(ToolListing::Never),
        "after_offload" | "after-offload" => Ok(ToolListing::AfterOffload),
        _ => Err(ConfigError::Invalid {
            key: name.to_owned(),
            value: s,
            expected: "true, false, \"always\", \"never\" or \"after_offload\"",
        }),
    }
}

fn set_client_key(
    profile: &mut ClientProfile,
    key: &str,
    name: &str,
    v: &dyn RawValue,
) -> Result<(), ConfigError> {
    match key {
        "enabled" => profile.enabled = Some(v.boolean(name)?),
        "threshold_tokens" => {
            profile.threshold_tokens = Some(integer(v, name, 0, u32::MAX.into())?)
        }
        "list_tools" => profile.list_tools = Some(tool_listing(v, name)?),
        "max_result_bytes" => profile.max_result_bytes = Some(integer(v, name, 0, u64::MAX)?),
        "shell" => profile.shell = Some(v.boolean(name)?),
        "guidance" => {
            let s = v.string(name)?;
            profile.guidance = Some(match s.trim().to_ascii_lowercase().as_str() {
                "extract" => GuidanceKind::Extract,
                "shell" => GuidanceKind::Shell,
                _ => {
                    return Err(ConfigError::Invalid {
                        key: name.to_owned(),
                        value: s,
                        expected: "\"extract\" or \"shell\"",
                    });
                }
            });
        }
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
mod tests;
