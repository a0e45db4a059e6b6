//! Tests of the parent module.

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
