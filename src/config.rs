//! Configuration: [`OffloadConfig`], the one place every offload setting
//! lives (the spec's `[prompt.offload]` keys and our additions), per-tool
//! policy, and (in `config/load.rs`) loading it from TOML and the
//! environment.
//!
//! # One source of truth
//!
//! Every setting that has a TOML key and an environment variable is a field
//! of [`OffloadConfig`] with a setter of the same name, and nowhere else:
//! [`OffloadLayerBuilder`](crate::OffloadLayerBuilder) has no copy of them
//! and takes a whole configuration with its `config` method. Its own
//! setters are only what a file cannot say (the estimator, the store, the
//! event hook, the tenant partition, the request-side transport bounds,
//! the extraction limits), so no setter of one can undo a setter of the
//! other.
//!
//! # Exclusion wins
//!
//! A tool's results are offloaded only when nothing switches it off: the
//! global `enabled`, the tool in `exclude_tools`, and its own policy's
//! `enabled` must all allow it. A [`ToolPolicy`] set after an exclusion
//! (or before it, or from another source: TOML, environment, code) changes
//! the tool's thresholds, never its exclusion; `enabled = true` in a policy
//! cannot undo `exclude_tools` or a global `enabled = false`.
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
//! store = ""                     # empty: output_dir; s3://bucket/prefix (gs://, az://): object storage, shared by a fleet
//! # tower-lro's additions
//! preview_chars = 200            # characters of data in the descriptor's preview (0: none)
//! offload_errors = false         # may results with isError: true be offloaded?
//! max_tool_output_bytes = 0      # byte trigger beside the token one (0: off)
//! cleanup_interval_seconds = 3600
//! auto_cleanup = true            # the layer starts the cleanup task itself
//! max_buffered_bytes = 536870912 # cap on response bytes held in memory at once (larger ones are spilled to disk)
//! extraction = true              # serve offloaded data over MCP (lro_extract, lro_list, resources/read)
//! open_output_schemas = true     # take closed output schemas out of tools/list (else such results stay inline)
//! builtin_profiles = true        # the shipped client profiles apply (see ClientProfile)
//! files_local_to_client = false  # the files are on the client's machine (lro proxy: true)
//! parallel = true                # two threads for the walks of a large result (false: one)
//! exclude_tools = ["read_secret"]
//!
//! [prompt.offload.tools.query_logs]   # per-tool policy; every key optional
//! threshold_tokens = 8000
//! max_tool_output_bytes = 65536
//! offload_errors = true
//! enabled = true                      # false: excluded, as by exclude_tools
//!
//! [prompt.offload.clients.claude-code] # per-client profile, by clientInfo.name; every key optional
//! threshold_tokens = 4000
//! max_result_bytes = 50000             # its own limit: larger results always offloaded
//! shell = true                         # its model has a shell on the client's machine
//! guidance = "shell"                   # "extract" (lro_extract) or "shell" (jq recipes)
//! list_tools = "after_offload"         # true, false, or once something was offloaded
//! enabled = true                       # false: its results pass through
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
//! `ATLATL_PROMPT__OFFLOAD__TOOLS__{tool name as written}__{KEY}`, a
//! per-client one `ATLATL_PROMPT__OFFLOAD__CLIENTS__{CLIENT_NAME}__{KEY}`
//! (see [`ClientProfile`] for how names match). Booleans
//! are `true`/`false`/`1`/`0`.
//!
//! [`OffloadConfig::load`] applies the environment over the file over the
//! defaults. Every invalid value gets a [`ConfigError`] naming the key (or
//! variable) and the value.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// Default token threshold (the spec's `DEFAULT_OFFLOAD_THRESHOLD_TOKENS`).
pub const DEFAULT_OFFLOAD_THRESHOLD_TOKENS: usize = 1600;
/// Default time-to-live of an offloaded file: one hour.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// Default `schema_version` written in file headers.
pub const DEFAULT_SCHEMA_VERSION: &str = "1.0";
/// Default length of the descriptor's `preview`, in characters.
pub const DEFAULT_PREVIEW_CHARS: usize = 200;

mod client;
mod debug;
mod load;
mod policy;

pub use client::{ClientProfile, GuidanceKind, ToolListing, shipped_profiles};

pub use load::ConfigError;
pub use policy::{EffectivePolicy, ToolPolicy};
// The loader's parts the history offload's configuration shares.
#[cfg(feature = "history")]
pub(crate) use load::{
    EnvValue, RawValue, TomlValue, apply_toml_file, env_vars, integer, parse_toml, prompt_section,
};

/// Default interval of the cleanup task: one hour (the spec's schedule).
pub const DEFAULT_CLEANUP_INTERVAL: Duration = Duration::from_secs(3600);
/// Default cap on the response bytes the layer buffers at once, across all
/// in-flight responses: 512 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 512 << 20;
/// Prefix of the environment variables of `[prompt.offload]`.
pub const ENV_PREFIX: &str = "ATLATL_PROMPT__OFFLOAD__";

/// Offload configuration: the spec's `[prompt.offload]` keys and ours, the
/// one place each of them is set.
///
/// Build it from [`Default`] with its setters (one per field, each naming
/// its TOML key, environment variable and default), or load it
/// ([`load`](Self::load), [`from_toml_str`](Self::from_toml_str),
/// [`apply_env_vars`](Self::apply_env_vars)), then give it whole to
/// [`OffloadLayer::new`](crate::OffloadLayer::new),
/// [`OffloadLayerBuilder::config`](crate::OffloadLayerBuilder::config) or
/// [`Offloader::new`](crate::Offloader::new).
///
/// Whether a tool's results are offloaded: see [`policy_for`](Self::policy_for)
/// (exclusion wins over every per-tool policy).
///
/// ```
/// use std::time::Duration;
/// use tower_lro::config::{OffloadConfig, ToolPolicy};
/// use tower_lro::offload::OffloadLayer;
///
/// let config = OffloadConfig::default()
///     .threshold_tokens(4000)
///     .ttl(Duration::from_secs(600))
///     .exclude_tools(["read_secret"])
///     .tool_policy("query_logs", ToolPolicy::new().threshold_tokens(8000))
///     // A policy never includes an excluded tool again.
///     .tool_policy("read_secret", ToolPolicy::new().enabled(true));
/// assert!(!config.policy_for("read_secret").enabled);
/// assert_eq!(config.policy_for("query_logs").threshold_tokens, 8000);
/// let layer = OffloadLayer::new(config);
/// # drop(layer);
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct OffloadConfig {
    /// Enable or disable LRO (`enabled`, `ATLATL_PROMPT__OFFLOAD__ENABLED`,
    /// default true). False: every result passes through and the layer
    /// serves nothing of its own.
    pub enabled: bool,
    /// Token threshold for activation (`threshold_tokens`, default 1600).
    pub threshold_tokens: usize,
    /// Time-to-live of the files (`ttl_seconds`, default 3600 s). 0: a file
    /// expires as soon as it is written (reading it back is refused) and
    /// the next cleanup run deletes it.
    pub ttl: Duration,
    /// Directory for JSONL files (`output_dir`; default empty = a private
    /// per-user directory in the system temp dir, see
    /// [`FsStore::default_dir`](crate::FsStore::default_dir)).
    pub output_dir: PathBuf,
    /// Use `output_dir` even when it is not private: a symbolic link, not
    /// owned by this user, or writable by others (`trust_output_dir`,
    /// default false: such a directory is refused, see [`FsStore`](crate::store::FsStore)).
    pub trust_output_dir: bool,
    /// Where files are stored (`store`; default empty: `output_dir`):
    /// `file:///dir`, a directory; `s3://bucket/prefix`, `gs://…`, `az://…`,
    /// object storage shared by the replicas of a fleet (feature
    /// `object-store`; see [`store::from_url`](crate::store::from_url)).
    pub store: String,
    /// `schema_version` written in headers (default "1.0"; no TOML key).
    pub schema_version: String,
    /// Characters of data in the descriptor's `preview` (`preview_chars`,
    /// default 200; 0 = none).
    pub preview_chars: usize,
    /// Whether results with `isError: true` may be offloaded
    /// (`offload_errors`, default false).
    pub offload_errors: bool,
    /// Byte trigger beside the token one, as in the memory pointer pattern's
    /// `maxToolOutputBytes` (`max_tool_output_bytes`, 0 in TOML): a result
    /// whose content (text of its text blocks, or its `structuredContent`,
    /// whichever is larger) has at least this many UTF-8 bytes is offloaded
    /// even under the token threshold. `None` (the default) turns it off.
    pub max_tool_output_bytes: Option<usize>,
    /// Tools whose results always pass through (`exclude_tools`, default
    /// none). Exclusion wins over [`tools`](Self::tools).
    pub excluded_tools: BTreeSet<String>,
    /// Per-tool policy, by tool name (`[prompt.offload.tools.NAME]`).
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Client profiles, by client name as `initialize`'s `clientInfo.name`
    /// gives it, folded (`[prompt.offload.clients.NAME]`; see
    /// [`ClientProfile`]).
    pub clients: BTreeMap<String, ClientProfile>,
    /// Whether the [shipped client profiles](client::shipped_profiles)
    /// apply under the configured ones (`builtin_profiles`, default true).
    pub builtin_profiles: bool,
    /// Whether the files are on the machine where the client and its
    /// model's tools run (`files_local_to_client`, default false; `lro
    /// proxy` sets it): a client whose profile says it has a shell
    /// ([`ClientProfile::shell`]) then gets the shell guidance.
    pub files_local_to_client: bool,
    /// Interval of the cleanup task (`cleanup_interval_seconds`, default
    /// one hour).
    pub cleanup_interval: Duration,
    /// Whether a layer starts its cleanup task by itself, in the runtime it
    /// is first used in (`auto_cleanup`, default true); it stops when the
    /// last clone of the layer and its services is dropped. Either way a
    /// layer runs at most one cleanup task (see
    /// [`OffloadLayer::spawn_cleanup`](crate::OffloadLayer::spawn_cleanup)).
    pub auto_cleanup: bool,
    /// Cap on the response bytes the layer holds in memory at once, across
    /// all in-flight responses (`max_buffered_bytes`, default 512 MiB). It
    /// bounds memory, not what is offloaded: a response that would pass it
    /// (or any response over 16 MiB) is spilled to a private temporary file
    /// and offloaded from there in bounded memory. Only when no spill file
    /// can be made does a response pass through untouched. The buffer of
    /// the last large JSON body (1 to 16 MiB) is kept for the next one
    /// within this cap (its pages cost nothing the second time), and let
    /// go when responses need the room.
    pub max_buffered_bytes: usize,
    /// Whether offloaded data is also served over MCP (`extraction`,
    /// default true): the layer lists and answers the `lro_extract` and
    /// `lro_list` tools and `resources/read` of an offload file, and the
    /// descriptor's guidance is the spec's native `lro_extract` template.
    /// False: only the file path and its shell recipes.
    pub extraction: bool,
    /// Whether the layer takes closed output schemas (ones that forbid a
    /// member they do not name, as zod's do) out of the `tools/list`
    /// answers it passes on (`open_output_schemas`, default true), so that
    /// it may add the descriptor to such a tool's `structuredContent`
    /// (see the [`offload`](crate::offload) docs). False: the schemas stay,
    /// and a large result whose records are in such a tool's
    /// `structuredContent` passes through inline.
    pub open_output_schemas: bool,
    /// Whether the engine may run two walks of a large result (its records'
    /// statistics and their SHA-256) on two threads (`parallel`, default
    /// true; see `PARALLEL_FROM` in `benches/README.md`). False: one after
    /// the other; the file and the descriptor are the same either way.
    pub parallel: bool,
}

impl Default for OffloadConfig {
    /// The spec's defaults (each field says its own).
    fn default() -> Self {
        OffloadConfig {
            enabled: true,
            threshold_tokens: DEFAULT_OFFLOAD_THRESHOLD_TOKENS,
            ttl: DEFAULT_TTL,
            output_dir: PathBuf::new(),
            trust_output_dir: false,
            store: String::new(),
            schema_version: DEFAULT_SCHEMA_VERSION.to_owned(),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            offload_errors: false,
            max_tool_output_bytes: None,
            excluded_tools: BTreeSet::new(),
            tools: BTreeMap::new(),
            clients: BTreeMap::new(),
            builtin_profiles: true,
            files_local_to_client: false,
            cleanup_interval: DEFAULT_CLEANUP_INTERVAL,
            auto_cleanup: true,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            extraction: true,
            open_output_schemas: true,
            parallel: true,
        }
    }
}

/// One setter per field: each replaces the field's value; the later call
/// wins, except [`exclude_tools`](Self::exclude_tools) (adds) and
/// [`tool_policy`](Self::tool_policy) (replaces that one tool's policy).
impl OffloadConfig {
    /// Sets [`enabled`](Self::enabled) (`enabled`,
    /// `ATLATL_PROMPT__OFFLOAD__ENABLED`; default true).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }
    /// Sets [`threshold_tokens`](Self::threshold_tokens) (`threshold_tokens`,
    /// `ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS`; default 1600).
    pub fn threshold_tokens(mut self, tokens: usize) -> Self {
        self.threshold_tokens = tokens;
        self
    }
    /// Sets [`ttl`](Self::ttl), the files' time-to-live (`ttl_seconds`,
    /// `ATLATL_PROMPT__OFFLOAD__TTL_SECONDS`; default one hour).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Sets [`output_dir`](Self::output_dir) (`output_dir`,
    /// `ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR`; default empty: a private
    /// per-user directory in the system temp dir).
    pub fn output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }
    /// Sets [`trust_output_dir`](Self::trust_output_dir): use the output
    /// directory even when it is not private (`trust_output_dir`,
    /// `ATLATL_PROMPT__OFFLOAD__TRUST_OUTPUT_DIR`; default false).
    pub fn trust_output_dir(mut self, trusted: bool) -> Self {
        self.trust_output_dir = trusted;
        self
    }
    /// Sets [`store`](Self::store) (`store`,
    /// `ATLATL_PROMPT__OFFLOAD__STORE`; default empty: `output_dir`).
    pub fn store(mut self, url: impl Into<String>) -> Self {
        self.store = url.into();
        self
    }
    /// Sets [`schema_version`](Self::schema_version), written in the files'
    /// headers (no TOML key; default "1.0").
    pub fn schema_version(mut self, version: impl Into<String>) -> Self {
        self.schema_version = version.into();
        self
    }
    /// Sets [`preview_chars`](Self::preview_chars) (`preview_chars`,
    /// `ATLATL_PROMPT__OFFLOAD__PREVIEW_CHARS`; default 200, 0: no preview).
    pub fn preview_chars(mut self, chars: usize) -> Self {
        self.preview_chars = chars;
        self
    }
    /// Sets [`offload_errors`](Self::offload_errors): may results with
    /// `isError: true` be offloaded (`offload_errors`,
    /// `ATLATL_PROMPT__OFFLOAD__OFFLOAD_ERRORS`; default false).
    pub fn offload_errors(mut self, allow: bool) -> Self {
        self.offload_errors = allow;
        self
    }
    /// Sets [`max_tool_output_bytes`](Self::max_tool_output_bytes), the byte
    /// trigger (`max_tool_output_bytes`,
    /// `ATLATL_PROMPT__OFFLOAD__MAX_TOOL_OUTPUT_BYTES`; default off; `None`
    /// or `Some(0)`: off).
    pub fn max_tool_output_bytes(mut self, bytes: Option<usize>) -> Self {
        self.max_tool_output_bytes = bytes.filter(|&b| b > 0);
        self
    }
    /// Adds tools to [`excluded_tools`](Self::excluded_tools): their results
    /// always pass through, whatever their [`ToolPolicy`] says, set before
    /// or after (`exclude_tools`, `ATLATL_PROMPT__OFFLOAD__EXCLUDE_TOOLS`, a
    /// comma-separated list; default none). Tools excluded before stay
    /// excluded.
    pub fn exclude_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.excluded_tools
            .extend(tools.into_iter().map(Into::into));
        self
    }
    /// Sets the policy of one tool, replacing a policy set for it before
    /// (`[prompt.offload.tools.NAME]`,
    /// `ATLATL_PROMPT__OFFLOAD__TOOLS__NAME__KEY`). It does not undo an
    /// exclusion ([`exclude_tools`](Self::exclude_tools)).
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.tools.insert(tool.into(), policy);
        self
    }
    /// Sets the profile of one client, by the name it gives in
    /// `clientInfo` (any letter case; see [`ClientProfile`]), replacing a
    /// profile set for it before (`[prompt.offload.clients.NAME]`,
    /// `ATLATL_PROMPT__OFFLOAD__CLIENTS__NAME__KEY`).
    pub fn client_profile(mut self, client: &str, profile: ClientProfile) -> Self {
        self.clients.insert(client::fold_name(client), profile);
        self
    }
    /// Sets [`cleanup_interval`](Self::cleanup_interval)
    /// (`cleanup_interval_seconds`,
    /// `ATLATL_PROMPT__OFFLOAD__CLEANUP_INTERVAL_SECONDS`; default one hour).
    pub fn cleanup_interval(mut self, interval: Duration) -> Self {
        self.cleanup_interval = interval;
        self
    }
    /// Sets [`auto_cleanup`](Self::auto_cleanup): the layer starts its
    /// cleanup task by itself (`auto_cleanup`,
    /// `ATLATL_PROMPT__OFFLOAD__AUTO_CLEANUP`; default true).
    pub fn auto_cleanup(mut self, on: bool) -> Self {
        self.auto_cleanup = on;
        self
    }
    /// Sets [`max_buffered_bytes`](Self::max_buffered_bytes), the cap on
    /// response bytes buffered at once (`max_buffered_bytes`,
    /// `ATLATL_PROMPT__OFFLOAD__MAX_BUFFERED_BYTES`; default 512 MiB).
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }
    /// Sets [`open_output_schemas`](Self::open_output_schemas): take closed
    /// output schemas out of `tools/list` (`open_output_schemas`,
    /// `ATLATL_PROMPT__OFFLOAD__OPEN_OUTPUT_SCHEMAS`; default true).
    pub fn open_output_schemas(mut self, on: bool) -> Self {
        self.open_output_schemas = on;
        self
    }
    /// Sets [`parallel`](Self::parallel): two threads for the walks of a
    /// large result (`parallel`, `ATLATL_PROMPT__OFFLOAD__PARALLEL`;
    /// default true).
    pub fn parallel(mut self, on: bool) -> Self {
        self.parallel = on;
        self
    }
    /// Sets [`builtin_profiles`](Self::builtin_profiles): the shipped
    /// client profiles apply (`builtin_profiles`,
    /// `ATLATL_PROMPT__OFFLOAD__BUILTIN_PROFILES`; default true).
    pub fn builtin_profiles(mut self, on: bool) -> Self {
        self.builtin_profiles = on;
        self
    }
    /// Sets [`files_local_to_client`](Self::files_local_to_client): the
    /// files are on the client's machine (`files_local_to_client`,
    /// `ATLATL_PROMPT__OFFLOAD__FILES_LOCAL_TO_CLIENT`; default false).
    pub fn files_local_to_client(mut self, local: bool) -> Self {
        self.files_local_to_client = local;
        self
    }
    /// Sets [`extraction`](Self::extraction): serve offloaded data over MCP
    /// (`extraction`, `ATLATL_PROMPT__OFFLOAD__EXTRACTION`; default true).
    pub fn extraction(mut self, on: bool) -> Self {
        self.extraction = on;
        self
    }
}

#[cfg(test)]
mod tests;
