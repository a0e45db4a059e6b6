//! Client profiles: what suits one MCP client, chosen by the name it gives
//! in `initialize`'s `clientInfo` (or the 2026-07-28 `_meta` client info).
//!
//! ```toml
//! [prompt.offload.clients.claude-code]   # clientInfo.name, any letter case
//! threshold_tokens = 4000                # its own threshold
//! guidance = "shell"                     # "extract" (lro_extract) or "shell" (jq recipes)
//! list_tools = false                     # lro_extract / lro_list not listed to it
//! enabled = true                         # false: its results pass through
//! ```
//!
//! As environment variables, with the name's letters upper-cased and every
//! character that is not a letter or a digit written `_`:
//! `ATLATL_PROMPT__OFFLOAD__CLIENTS__CLAUDE_CODE__THRESHOLD_TOKENS=4000`.
//! A name matches a profile after the same folding (`claude-code`,
//! `Claude Code` and `CLAUDE_CODE` are one profile). A client with no
//! profile, no name, or a name the layer never saw gets the rest of the
//! configuration: today's behaviour. A tool's own policy
//! ([`ToolPolicy`](super::ToolPolicy)) wins over a client's threshold; an
//! exclusion or a global `enabled = false` wins over everything.

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

/// The settings of one client; `None` fields follow the rest of the
/// configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientProfile {
    /// `Some(false)`: this client's results always pass through.
    pub enabled: Option<bool>,
    /// The client's token threshold (a tool's own threshold wins).
    pub threshold_tokens: Option<usize>,
    /// What the guidance points at; `Extract` only takes effect where the
    /// layer serves extraction and lists its tools to the client.
    pub guidance: Option<GuidanceKind>,
    /// `Some(false)`: `lro_extract` and `lro_list` are not added to the
    /// client's `tools/list` (their definitions cost every request to its
    /// model ~460 tokens); its guidance is then the shell one.
    pub list_tools: Option<bool>,
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
    /// Sets whether the layer's tools are listed to the client.
    pub fn list_tools(mut self, list: bool) -> Self {
        self.list_tools = Some(list);
        self
    }
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
