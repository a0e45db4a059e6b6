//! Tests of the parent module.

use super::*;

#[test]
fn exclusion_wins_over_a_tool_policy_set_before_or_after() {
    let policy = || ToolPolicy::new().threshold_tokens(10).enabled(true);
    let after = OffloadConfig::default()
        .exclude_tools(["x"])
        .tool_policy("x", policy());
    let before = OffloadConfig::default()
        .tool_policy("x", policy())
        .exclude_tools(["x"]);
    for c in [&after, &before] {
        let p = c.policy_for("x");
        assert!(!p.enabled, "{c:?}");
        assert_eq!(p.threshold_tokens, 10, "the policy's thresholds still hold");
        assert!(c.policy_for("y").enabled);
    }
    // A policy's own `enabled(false)` excludes too; `enabled(true)`
    // never overrides the global switch.
    let c = OffloadConfig::default().tool_policy("z", ToolPolicy::new().enabled(false));
    assert!(c.is_excluded("z") && !c.policy_for("z").enabled);
    let off = OffloadConfig::default()
        .enabled(false)
        .tool_policy("x", ToolPolicy::new().enabled(true));
    assert!(!off.policy_for("x").enabled);
}

#[test]
fn exclusion_wins_in_toml_and_environment_too() {
    let toml = "[prompt.offload]\nexclude_tools = [\"x\"]\n\
                    [prompt.offload.tools.x]\nenabled = true\nthreshold_tokens = 5\n";
    let c = OffloadConfig::from_toml_str(toml).unwrap();
    assert!(!c.policy_for("x").enabled);
    let c = OffloadConfig::default()
        .apply_env_vars([
            ("ATLATL_PROMPT__OFFLOAD__EXCLUDE_TOOLS", "x"),
            ("ATLATL_PROMPT__OFFLOAD__TOOLS__x__ENABLED", "true"),
        ])
        .unwrap();
    assert!(!c.policy_for("x").enabled);
}

#[test]
fn client_setters_write_their_field_and_nothing_else() {
    let d = OffloadConfig::default();
    let profile = ClientProfile::new().list_tools(false);
    assert_eq!(
        d.clone().client_profile("A b", profile),
        OffloadConfig {
            clients: [("a_b".to_owned(), profile)].into(),
            ..d.clone()
        }
    );
    assert_eq!(
        d.clone().builtin_profiles(false),
        OffloadConfig {
            builtin_profiles: false,
            ..d.clone()
        }
    );
    assert_eq!(
        d.clone().files_local_to_client(true),
        OffloadConfig {
            files_local_to_client: true,
            ..d.clone()
        }
    );
    assert_eq!(
        d.clone().parallel(false),
        OffloadConfig {
            parallel: false,
            ..d
        }
    );
}

// About 100 lines: one case per setter, in one table.
#[test]
fn every_setter_writes_its_field_and_nothing_else() {
    let d = OffloadConfig::default();
    let set = |c: OffloadConfig| c;
    let cases: Vec<(OffloadConfig, OffloadConfig)> = vec![
        (
            set(d.clone()).open_output_schemas(false),
            OffloadConfig {
                open_output_schemas: false,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).enabled(false),
            OffloadConfig {
                enabled: false,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).threshold_tokens(7),
            OffloadConfig {
                threshold_tokens: 7,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).ttl(Duration::from_secs(5)),
            OffloadConfig {
                ttl: Duration::from_secs(5),
                ..d.clone()
            },
        ),
        (
            set(d.clone()).output_dir("/o"),
            OffloadConfig {
                output_dir: "/o".into(),
                ..d.clone()
            },
        ),
        (
            set(d.clone()).trust_output_dir(true),
            OffloadConfig {
                trust_output_dir: true,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).schema_version("2.0"),
            OffloadConfig {
                schema_version: "2.0".into(),
                ..d.clone()
            },
        ),
        (
            set(d.clone()).preview_chars(0),
            OffloadConfig {
                preview_chars: 0,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).offload_errors(true),
            OffloadConfig {
                offload_errors: true,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).max_tool_output_bytes(Some(9)),
            OffloadConfig {
                max_tool_output_bytes: Some(9),
                ..d.clone()
            },
        ),
        (set(d.clone()).max_tool_output_bytes(Some(0)), d.clone()),
        (
            set(d.clone()).cleanup_interval(Duration::from_secs(3)),
            OffloadConfig {
                cleanup_interval: Duration::from_secs(3),
                ..d.clone()
            },
        ),
        (
            set(d.clone()).auto_cleanup(false),
            OffloadConfig {
                auto_cleanup: false,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).max_buffered_bytes(1),
            OffloadConfig {
                max_buffered_bytes: 1,
                ..d.clone()
            },
        ),
        (
            set(d.clone()).extraction(false),
            OffloadConfig {
                extraction: false,
                ..d.clone()
            },
        ),
    ];
    for (i, (got, want)) in cases.into_iter().enumerate() {
        assert_eq!(got, want, "case {i}");
    }
}
