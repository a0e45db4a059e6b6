//! Client profiles ([`ClientProfile`]): what suits one MCP client, and the
//! profiles shipped for the clients this crate was tried with.

/// What the descriptor's guidance points the model at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuidanceKind {
    /// The spec's native template: the layer's `lro_extract` tool (needs
    /// the layer to serve extraction, and the tool listed to the client).
    Extract,
    /// The spec's shell template: the jq recipes, for an agent with a
    /// shell on the machine that holds the files (a local `lro proxy`).
    Shell,
}

/// When `lro_extract` and `lro_list` are added to a client's `tools/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolListing {
    /// In every `tools/list` (`list_tools = true`).
    Always,
    /// Once something was offloaded in the client's MCP session
    /// (`list_tools = "after_offload"`): the layer then sends
    /// `notifications/tools/list_changed` before the offloaded result, so
    /// the client lists its tools again and finds them. Until then their
    /// definitions cost its model nothing. Where the layer cannot notify
    /// (no `Mcp-Session-Id`, a client that does not accept event streams)
    /// the tools are listed from the start.
    AfterOffload,
    /// Never (`list_tools = false`); the guidance is then the shell one.
    Never,
}

impl From<bool> for ToolListing {
    fn from(listed: bool) -> Self {
        if listed {
            ToolListing::Always
        } else {
            ToolListing::Never
        }
    }
}

/// Client profiles: what suits one MCP client, chosen by the name it gives
/// in `initialize`'s `clientInfo` (or the 2026-07-28 `_meta` client info).
///
/// ```toml
/// [prompt.offload.clients.claude-code]   # clientInfo.name, any letter case
/// threshold_tokens = 4000                # its own threshold
/// max_result_bytes = 50000               # its own limit: larger results always offloaded
/// shell = true                           # its model has a shell where the client runs
/// guidance = "shell"                     # "extract" (lro_extract) or "shell" (jq recipes)
/// list_tools = "after_offload"           # true, false, or listed once something was offloaded
/// enabled = true                         # false: its results pass through
/// ```
///
/// As environment variables, with the name's letters upper-cased and every
/// character that is not a letter or a digit written `_`:
/// `ATLATL_PROMPT__OFFLOAD__CLIENTS__CLAUDE_CODE__THRESHOLD_TOKENS=4000`.
/// A name matches a profile after the same folding (`claude-code`,
/// `Claude Code` and `CLAUDE_CODE` are one profile). A client with no
/// profile, no name, or a name the layer never saw gets the rest of the
/// configuration: today's behaviour. A tool's own policy
/// ([`ToolPolicy`](super::ToolPolicy)) wins over a client's threshold; an
/// exclusion or a global `enabled = false` wins over everything.
///
/// **Shipped profiles** ([`shipped_profiles`](super::shipped_profiles)) for the clients whose
/// behaviour was read from their code and run (see the
/// [`offload`](crate::offload) docs' table); a configured profile of the
/// same name overrides them key by key, and `builtin_profiles = false`
/// turns them off:
///
/// | `clientInfo.name` | client | `max_result_bytes` | `shell` | `list_tools` |
/// |---|---|---|---|---|
/// | `claude-code` | Claude Code | 50,000 (over it: a 2 KB preview and a saved file) | yes | always (it defers MCP tools behind a tool search) |
/// | `codex-mcp-client` | Codex CLI | 40,000 (~10k tokens; over it the middle is cut and lost) | yes | always (deferred too) |
/// | `gemini-cli-mcp-client` | Gemini CLI | 40,000 (over it: head and tail only) | yes | after the first offload (it sends every tool definition with every request, and follows `tools/list_changed`) |
/// | `goose` | Goose | 200,000 (over it: a saved path only) | yes | always |
/// | `Visual Studio Code` | VS Code | none | yes | always |
///
/// Their threshold stays the configured one (1,600 tokens by default): a
/// descriptor costs ~850, so a lower one would cost more than the result;
/// `max_result_bytes` is a ceiling beside it, so that no tool's own larger
/// threshold lets a result reach a client that would cut or spill it.
/// `shell` takes effect only where the files are on the client's machine
/// ([`files_local_to_client`](super::OffloadConfig::files_local_to_client):
/// `lro proxy`); through a gateway the guidance stays `lro_extract`.
///
/// `None` fields follow the rest of the configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientProfile {
    /// `Some(false)`: this client's results always pass through.
    pub enabled: Option<bool>,
    /// The client's token threshold (a tool's own threshold wins).
    pub threshold_tokens: Option<usize>,
    /// What the guidance points at; `Extract` only takes effect where the
    /// layer serves extraction and lists its tools to the client.
    pub guidance: Option<GuidanceKind>,
    /// When `lro_extract` and `lro_list` are added to the client's
    /// `tools/list` (their definitions cost ~460 tokens in every request
    /// to a model that is sent them all); `Never`: its guidance is then
    /// the shell one.
    pub list_tools: Option<ToolListing>,
    /// The client's own limit on one tool result, in bytes: a result over
    /// it is offloaded whatever the tool's threshold (unless offloading is
    /// off for the tool), and `lro_extract` and `lro_list` are declared to
    /// it with `_meta["anthropic/maxResultSizeChars"]` of this size.
    pub max_result_bytes: Option<usize>,
    /// The client's model has a shell tool on the client's machine: where
    /// the files are there too
    /// ([`files_local_to_client`](super::OffloadConfig::files_local_to_client)),
    /// its guidance is the shell one (one `jq` instead of finding and
    /// calling `lro_extract`), unless [`guidance`](Self::guidance) says
    /// otherwise.
    pub shell: Option<bool>,
}

impl ClientProfile {
    /// A profile following the rest of the configuration in everything.
    pub fn new() -> Self {
        ClientProfile::default()
    }
    /// Sets `enabled` (`false`: the client's results pass through).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }
    /// Sets the client's token threshold.
    pub fn threshold_tokens(mut self, tokens: usize) -> Self {
        self.threshold_tokens = Some(tokens);
        self
    }
    /// Sets what the guidance points at.
    pub fn guidance(mut self, kind: GuidanceKind) -> Self {
        self.guidance = Some(kind);
        self
    }
    /// Sets when the layer's tools are listed to the client (`true`,
    /// `false` or a [`ToolListing`]).
    pub fn list_tools(mut self, listing: impl Into<ToolListing>) -> Self {
        self.list_tools = Some(listing.into());
        self
    }
    /// Sets the client's own limit on one result, in bytes.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = Some(bytes);
        self
    }
    /// Sets whether the client's model has a shell on its machine.
    pub fn shell(mut self, shell: bool) -> Self {
        self.shell = Some(shell);
        self
    }

    /// This profile, its unset keys taken from `base`.
    pub(crate) fn over(self, base: ClientProfile) -> ClientProfile {
        ClientProfile {
            enabled: self.enabled.or(base.enabled),
            threshold_tokens: self.threshold_tokens.or(base.threshold_tokens),
            guidance: self.guidance.or(base.guidance),
            list_tools: self.list_tools.or(base.list_tools),
            max_result_bytes: self.max_result_bytes.or(base.max_result_bytes),
            shell: self.shell.or(base.shell),
        }
    }
}

/// The profiles shipped for the clients in [`ClientProfile`]'s table, by
/// folded name.
pub fn shipped_profiles() -> [(&'static str, ClientProfile); 5] {
    let local_shell = ClientProfile::new().shell(true);
    [
        ("claude_code", local_shell.max_result_bytes(50_000)),
        ("codex_mcp_client", local_shell.max_result_bytes(40_000)),
        (
            "gemini_cli_mcp_client",
            local_shell
                .max_result_bytes(40_000)
                .list_tools(ToolListing::AfterOffload),
        ),
        ("goose", local_shell.max_result_bytes(200_000)),
        ("visual_studio_code", local_shell),
    ]
}

/// The shipped profile of a folded client name.
pub(crate) fn shipped_profile(folded: &str) -> Option<ClientProfile> {
    shipped_profiles()
        .into_iter()
        .find_map(|(name, profile)| (name == folded).then_some(profile))
}

/// A client name folded for matching: lower case, every character that is
/// not an ASCII letter or digit written `_`.
pub(crate) fn fold_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigError, OffloadConfig, ToolPolicy};

    #[test]
    fn profiles_load_from_toml_and_env_and_apply() {
        let config = OffloadConfig::from_toml_str(
            r#"
            [prompt.offload.clients.claude-code]
            threshold_tokens = 4000
            guidance = "Shell"
            [prompt.offload.clients."Gemini CLI"]
            list_tools = false
            "#,
        )
        .unwrap()
        .apply_env_vars([
            (
                "ATLATL_PROMPT__OFFLOAD__CLIENTS__CLAUDE_CODE__ENABLED",
                "true",
            ),
            ("ATLATL_PROMPT__OFFLOAD__CLIENTS__CODEX__ENABLED", "false"),
        ])
        .unwrap()
        .tool_policy("logs", ToolPolicy::new().threshold_tokens(9000));
        let claude = config.profile_for(Some("Claude-Code")).unwrap();
        assert_eq!(claude.threshold_tokens, Some(4000));
        assert_eq!(claude.guidance, Some(GuidanceKind::Shell));
        assert_eq!(claude.enabled, Some(true));
        // The client's threshold, unless the tool has its own.
        assert_eq!(
            config
                .policy_for_client("x", Some("claude-code"))
                .threshold_tokens,
            4000
        );
        assert_eq!(
            config
                .policy_for_client("logs", Some("claude-code"))
                .threshold_tokens,
            9000
        );
        assert_eq!(
            config
                .policy_for_client("x", Some("unknown"))
                .threshold_tokens,
            1600
        );
        assert_eq!(config.policy_for_client("x", None).threshold_tokens, 1600);
        assert!(!config.policy_for_client("x", Some("codex")).enabled);
        assert!(config.policy_for_client("x", Some("claude-code")).enabled);
        // The guidance: shell when asked, or when the tools are not listed.
        assert!(!config.extract_guidance_for(Some("claude-code")));
        assert!(!config.lists_tools_to(Some("gemini-cli")));
        assert!(!config.extract_guidance_for(Some("gemini-cli")));
        assert!(config.extract_guidance_for(Some("other")));
        assert!(!config.clone().extraction(false).extract_guidance_for(None));
    }

    #[test]
    fn shipped_profiles_apply_under_configured_ones() {
        let config = OffloadConfig::from_toml_str(
            r#"
            [prompt.offload.clients.gemini-cli-mcp-client]
            list_tools = "always"
            [prompt.offload.clients.goose]
            max_result_bytes = 1000
            shell = false
            "#,
        )
        .unwrap();
        let gemini = Some("gemini-cli-mcp-client");
        // Configured key wins, the others come from the shipped profile.
        assert_eq!(config.tool_listing_for(gemini), ToolListing::Always);
        assert_eq!(
            config.profile_for(gemini).unwrap().max_result_bytes,
            Some(40_000)
        );
        // The client's own limit caps the byte trigger, whatever the
        // tool's threshold; a tool's smaller trigger stays.
        let config = config.tool_policy(
            "logs",
            ToolPolicy::new()
                .threshold_tokens(1_000_000)
                .max_tool_output_bytes(500),
        );
        let policy = config.policy_for_client("big", Some("goose"));
        assert_eq!(policy.max_tool_output_bytes, Some(1000));
        assert_eq!(
            config
                .policy_for_client("logs", Some("goose"))
                .max_tool_output_bytes,
            Some(500)
        );
        assert_eq!(
            config
                .policy_for_client("big", Some("claude-code"))
                .max_tool_output_bytes,
            Some(50_000)
        );
        assert_eq!(
            config.policy_for_client("big", None).max_tool_output_bytes,
            None
        );
        // A shell client gets the shell guidance only where the files are
        // on its machine; one without a shell, or unknown, never.
        assert!(config.extract_guidance_for(Some("claude-code")));
        let local = config.clone().files_local_to_client(true);
        assert!(!local.extract_guidance_for(Some("claude-code")));
        assert!(local.extract_guidance_for(Some("goose")));
        assert!(local.extract_guidance_for(Some("some-other-agent")));
        assert!(local.extract_guidance_for(None));
        // Off: today's behaviour for every client.
        let plain = local.builtin_profiles(false);
        assert_eq!(plain.profile_for(Some("claude-code")), None);
        assert!(plain.extract_guidance_for(Some("claude-code")));
        assert_eq!(plain.tool_listing_for(gemini), ToolListing::Always);
        assert_eq!(
            plain.profile_for(Some("goose")).unwrap().max_result_bytes,
            Some(1000)
        );
    }

    #[test]
    fn list_tools_takes_booleans_and_words() {
        for (value, listing) in [
            ("true", ToolListing::Always),
            ("false", ToolListing::Never),
            ("\"after_offload\"", ToolListing::AfterOffload),
            ("\"Never\"", ToolListing::Never),
        ] {
            let toml = format!("[prompt.offload.clients.x]\nlist_tools = {value}\n");
            let config = OffloadConfig::from_toml_str(&toml).unwrap();
            assert_eq!(config.tool_listing_for(Some("x")), listing, "{value}");
        }
        let env = OffloadConfig::default()
            .apply_env_vars([(
                "ATLATL_PROMPT__OFFLOAD__CLIENTS__X__LIST_TOOLS",
                "after_offload",
            )])
            .unwrap();
        assert_eq!(env.tool_listing_for(Some("x")), ToolListing::AfterOffload);
        let bad =
            OffloadConfig::from_toml_str("[prompt.offload.clients.x]\nlist_tools = \"later\"\n");
        assert!(
            matches!(&bad, Err(ConfigError::Invalid { key, .. }) if key == "prompt.offload.clients.x.list_tools"),
            "{bad:?}"
        );
    }

    #[test]
    fn bad_profile_values_name_their_key() {
        let bad =
            OffloadConfig::from_toml_str("[prompt.offload.clients.x]\nguidance = \"browser\"\n");
        assert!(
            matches!(&bad, Err(ConfigError::Invalid { key, .. }) if key == "prompt.offload.clients.x.guidance"),
            "{bad:?}"
        );
        let unknown = OffloadConfig::default()
            .apply_env_vars([("ATLATL_PROMPT__OFFLOAD__CLIENTS__X__COLOUR", "red")]);
        assert!(
            matches!(unknown, Err(ConfigError::UnknownKey(_))),
            "{unknown:?}"
        );
        let not_table = OffloadConfig::from_toml_str("[prompt.offload]\nclients = 3\n");
        assert!(not_table.is_err());
    }

    #[test]
    fn names_fold_to_one_profile() {
        for name in ["claude-code", "Claude Code", "CLAUDE_CODE", "claude.code"] {
            assert_eq!(fold_name(name), "claude_code", "{name}");
        }
        assert_eq!(fold_name("gemini-cli-mcp-client"), "gemini_cli_mcp_client");
    }
}
