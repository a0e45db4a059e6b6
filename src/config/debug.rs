//! `OffloadConfig`'s `Debug`: every field, the store URL without what
//! could be a secret.

use super::OffloadConfig;

/// Every field, but the store URL without what could be a secret: its
/// user info, query and fragment (`Debug` output ends up in logs).
impl std::fmt::Debug for OffloadConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadConfig")
            .field("enabled", &self.enabled)
            .field("threshold_tokens", &self.threshold_tokens)
            .field("ttl", &self.ttl)
            .field("output_dir", &self.output_dir)
            .field("trust_output_dir", &self.trust_output_dir)
            .field("store", &redacted_url(&self.store))
            .field("schema_version", &self.schema_version)
            .field("preview_chars", &self.preview_chars)
            .field("offload_errors", &self.offload_errors)
            .field("max_tool_output_bytes", &self.max_tool_output_bytes)
            .field("excluded_tools", &self.excluded_tools)
            .field("tools", &self.tools)
            .field("clients", &self.clients)
            .field("cleanup_interval", &self.cleanup_interval)
            .field("auto_cleanup", &self.auto_cleanup)
            .field("max_buffered_bytes", &self.max_buffered_bytes)
            .field("extraction", &self.extraction)
            .field("open_output_schemas", &self.open_output_schemas)
            .field("builtin_profiles", &self.builtin_profiles)
            .field("files_local_to_client", &self.files_local_to_client)
            .field("parallel", &self.parallel)
            .finish()
    }
}

/// `url` without user info, query or fragment.
fn redacted_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let slash = if rest.contains('/') { "/" } else { "" };
    if scheme.is_empty() {
        format!("{host}{slash}{path}")
    } else {
        format!("{scheme}://{host}{slash}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_leaves_secrets_of_the_store_url_out() {
        let config = OffloadConfig::default().store("s3://key:secret@bucket/prefix?token=t#f");
        let shown = format!("{config:?}");
        assert!(shown.contains("store: \"s3://bucket/prefix\""), "{shown}");
        assert!(
            !shown.contains("secret") && !shown.contains("token="),
            "{shown}"
        );
        assert!(shown.contains("threshold_tokens: 1600"), "{shown}");
        assert_eq!(redacted_url("/plain/dir"), "/plain/dir");
        assert_eq!(redacted_url(""), "");
        assert_eq!(redacted_url("memory:///"), "memory:///");
    }
}
