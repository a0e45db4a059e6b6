//! The policy in force for one call: a tool's own policy over the global
//! configuration, and the calling client's profile over both.

use super::*;

/// Policy of one tool; `None` fields follow the global configuration.
///
/// It sets the tool's thresholds; it can switch offloading off for the tool
/// (`enabled(false)`) but never on against the global `enabled = false` or
/// an exclusion ([`OffloadConfig::exclude_tools`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// `Some(false)`: the tool's results always pass through (excluded).
    /// `Some(true)` is the same as `None`: it follows the rest of the
    /// configuration and excludes nothing, includes nothing.
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
    /// Sets `enabled` (`false` excludes the tool; `true` cannot undo an
    /// exclusion made elsewhere).
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
/// tool's exclusion and its own policy applied.
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
    /// Whether `tool` is excluded: by [`excluded_tools`](Self::excluded_tools)
    /// or by its policy's `enabled: Some(false)`.
    pub fn is_excluded(&self, tool: &str) -> bool {
        self.excluded_tools.contains(tool)
            || self.tools.get(tool).and_then(|p| p.enabled) == Some(false)
    }

    /// The policy in force for `tool`: offloading is on only when the
    /// global `enabled` is and the tool is not excluded (exclusion wins over
    /// its policy); its thresholds are its policy's where set, else the
    /// global ones.
    pub fn policy_for(&self, tool: &str) -> EffectivePolicy {
        self.policy_for_client(tool, None)
    }

    /// The profile of `client` (a `clientInfo.name`), if it has one: the
    /// configured one, its unset keys from the shipped one (unless
    /// [`builtin_profiles`](Self::builtin_profiles) is off).
    pub fn profile_for(&self, client: Option<&str>) -> Option<ClientProfile> {
        let folded = client::fold_name(client?);
        let shipped = self
            .builtin_profiles
            .then(|| client::shipped_profile(&folded))
            .flatten();
        match (self.clients.get(&folded), shipped) {
            (Some(own), Some(base)) => Some(own.over(base)),
            (Some(own), None) => Some(*own),
            (None, base) => base,
        }
    }

    /// [`policy_for`](Self::policy_for) `tool` called by `client`: the
    /// client's profile may switch offloading off for it, sets the
    /// threshold where the tool has none of its own, and its own limit
    /// ([`ClientProfile::max_result_bytes`]) caps the byte trigger.
    pub fn policy_for_client(&self, tool: &str, client: Option<&str>) -> EffectivePolicy {
        let mut policy = self.tool_policy_in_force(tool);
        let Some(profile) = self.profile_for(client) else {
            return policy;
        };
        if profile.enabled == Some(false) {
            policy.enabled = false;
        }
        let own = self.tools.get(tool).and_then(|p| p.threshold_tokens);
        if let (None, Some(t)) = (own, profile.threshold_tokens) {
            policy.threshold_tokens = t;
        }
        if let Some(limit) = profile.max_result_bytes.filter(|&b| b > 0) {
            let bytes = policy.max_tool_output_bytes.map_or(limit, |b| b.min(limit));
            policy.max_tool_output_bytes = Some(bytes);
        }
        policy
    }

    /// When `lro_extract` and `lro_list` are listed to `client` (when the
    /// layer serves extraction at all): its profile's
    /// [`list_tools`](ClientProfile::list_tools), else always.
    pub fn tool_listing_for(&self, client: Option<&str>) -> ToolListing {
        self.profile_for(client)
            .and_then(|p| p.list_tools)
            .unwrap_or(ToolListing::Always)
    }

    /// Whether `lro_extract` and `lro_list` are listed to `client` at all
    /// (from the start, or once something was offloaded).
    pub fn lists_tools_to(&self, client: Option<&str>) -> bool {
        self.tool_listing_for(client) != ToolListing::Never
    }

    /// Whether the guidance given to `client` points at `lro_extract`: the
    /// layer serves extraction and lists its tools to the client, and the
    /// client's profile neither asks for the shell guidance nor says its
    /// model has a shell where the files are
    /// ([`files_local_to_client`](Self::files_local_to_client)).
    pub fn extract_guidance_for(&self, client: Option<&str>) -> bool {
        let profile = self.profile_for(client).unwrap_or_default();
        let shell = match profile.guidance {
            Some(kind) => kind == GuidanceKind::Shell,
            None => profile.shell == Some(true) && self.files_local_to_client,
        };
        self.extraction && self.lists_tools_to(client) && !shell
    }

    fn tool_policy_in_force(&self, tool: &str) -> EffectivePolicy {
        let own = self.tools.get(tool);
        let max_bytes = match own.and_then(|p| p.max_tool_output_bytes) {
            Some(0) => None,
            Some(b) => Some(b),
            None => self.max_tool_output_bytes,
        };
        EffectivePolicy {
            enabled: self.enabled && !self.is_excluded(tool),
            threshold_tokens: own
                .and_then(|p| p.threshold_tokens)
                .unwrap_or(self.threshold_tokens),
            max_tool_output_bytes: max_bytes,
            offload_errors: own
                .and_then(|p| p.offload_errors)
                .unwrap_or(self.offload_errors),
        }
    }
}
