//! `lro gateway` for platform teams: routes from a `--config` file, the
//! metrics and readiness endpoints. The real binary in front of the
//! official Python SDK's server and the rmcp memory server, driven by the
//! official Python SDK client (both protocol generations); `/metrics` read
//! by the Prometheus project's own parser (`prometheus_client`'s
//! OpenMetrics parser, `tests/interop/metrics_client.py`), whose counters
//! must move by what the calls did.

use crate::common;
use crate::gateway::{Proc, gateway_with, http, lro_bin, python_server};
use common::mcp::{Mode, mcp_service, serve_mcp};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

/// One parsed sample: name and labels.
type Key = (String, BTreeMap<String, String>);

/// The samples of one scrape, by name and labels.
#[derive(Debug)]
struct Scrape {
    content_type: String,
    samples: BTreeMap<Key, f64>,
}

impl Scrape {
    /// The value of `name` with exactly `labels` (0 when absent: a counter
    /// not yet touched).
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples
            .get(&(name.to_owned(), labels))
            .copied()
            .unwrap_or(0.0)
    }
}

/// The interop Python (its venv) running `metrics_client.py` with `args`;
/// its one JSON line.
async fn metrics_client(args: &[&str]) -> Value {
    let dir = common::interop_dir();
    let mut cmd = tokio::process::Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("metrics_client.py")).args(args);
    let out = common::output_within(cmd, Duration::from_secs(60), "metrics_client.py").await;
    assert!(
        out.status.success(),
        "metrics_client.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "metrics_client.py printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `/metrics` of the gateway at `addr`, parsed by `prometheus_client`.
async fn scrape(addr: SocketAddr) -> Scrape {
    let v = metrics_client(&["scrape", &format!("http://{addr}/metrics")]).await;
    let mut samples = BTreeMap::new();
    for s in v["samples"].as_array().expect("samples") {
        let labels: BTreeMap<String, String> =
            serde_json::from_value(s[1].clone()).expect("labels");
        let key = (s[0].as_str().unwrap().to_owned(), labels);
        samples.insert(key, s[2].as_f64().expect("value"));
    }
    Scrape {
        content_type: v["content_type"].as_str().unwrap_or("").to_owned(),
        samples,
    }
}

/// The Python SDK client's calls (`calls MODE URL TOOL ARGS ...`).
async fn calls(mode: &str, url: &str, calls: &[(&str, Value)]) -> Value {
    let mut args = vec!["calls".to_owned(), mode.to_owned(), url.to_owned()];
    for (tool, a) in calls {
        args.push((*tool).to_owned());
        args.push(a.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    metrics_client(&args).await
}

/// The text of a call's result (`ok`), or a failure naming the call.
fn ok_text(call: &Value) -> String {
    let content = call["ok"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("the call failed: {call}"));
    content
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Python SDK server with the gateway in front (`extra` flags), files in
/// `dir`. `None`: skipped (no interop tooling).
fn stack(dir: &Path, extra: &[&str]) -> Option<(Proc, Proc, SocketAddr)> {
    let (python, port) = python_server(&[])?;
    let upstream = format!("http://127.0.0.1:{port}/mcp");
    let (gateway, addr) = gateway_with(&upstream, dir, extra);
    Some((python, gateway, addr))
}

/// The counters move by what the calls did, over both protocol
/// generations; label values stay bounded (routes, fixed outcomes and
/// reasons: no tool name, argument or session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_by_what_the_python_sdk_client_did() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_python, gateway, addr)) = stack(dir.path(), &[]) else {
        return;
    };
    let url = format!("http://{addr}/mcp");
    let before = scrape(addr).await;
    assert!(
        before
            .content_type
            .starts_with("application/openmetrics-text"),
        "content type {:?}",
        before.content_type
    );

    let legacy = calls(
        "legacy",
        &url,
        &[
            ("greet", json!({"name": "metrics"})),
            ("records", json!({"count": 300})),
            (
                "lro_extract",
                json!({"file_path": "@1", "query": ".id", "limit": 5}),
            ),
            (
                "lro_extract",
                json!({"file_path": "@1", "recipe": 6, "query": ".id"}),
            ),
        ],
    )
    .await;
    let auto = calls("auto", &url, &[("records", json!({"count": 400}))]).await;
    let legacy_calls = legacy["calls"].as_array().unwrap();
    assert_eq!(ok_text(&legacy_calls[0]), "hello, metrics");
    assert!(ok_text(&legacy_calls[1]).contains("\"file_path\""));
    assert!(ok_text(&legacy_calls[2]).contains("rec_0000"), "{legacy}");
    assert_eq!(
        legacy_calls[3]["ok"]["isError"],
        json!(true),
        "a recipe and a query together are refused: {legacy}"
    );
    assert!(ok_text(&auto["calls"][0]).contains("\"file_path\""));
    assert_ne!(
        legacy["protocolVersion"], auto["protocolVersion"],
        "both protocol generations"
    );

    let not_found = http()
        .get(format!("http://{addr}/not-a-route"))
        .send()
        .await
        .unwrap();
    assert_eq!(not_found.status(), 404);

    let after = scrape(addr).await;
    let route = [("route", "/mcp")];
    let delta =
        |name: &str, labels: &[(&str, &str)]| after.get(name, labels) - before.get(name, labels);
    assert_eq!(delta("lro_offloaded_results_total", &route), 2.0);
    assert!(
        delta("lro_offloaded_estimated_tokens_total", &route) > 2.0 * 1600.0,
        "two results over the 1600-token threshold"
    );
    assert!(delta("lro_offloaded_result_bytes_total", &route) > 6400.0);
    assert_eq!(
        delta(
            "lro_passed_through_total",
            &[("route", "/mcp"), ("reason", "under_threshold")]
        ),
        1.0,
        "greet, under the threshold"
    );
    assert_eq!(
        delta(
            "lro_extract_calls_total",
            &[("route", "/mcp"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        delta(
            "lro_extract_calls_total",
            &[("route", "/mcp"), ("outcome", "error")]
        ),
        1.0
    );
    assert_eq!(delta("lro_extract_duration_seconds_count", &route), 2.0);
    assert_eq!(
        delta(
            "lro_extract_duration_seconds_bucket",
            &[("route", "/mcp"), ("le", "+Inf")]
        ),
        2.0
    );
    // Two sessions: initialize (or discover), tools/list, the calls, the
    // session's end; at least the five tools/call.
    assert!(
        delta(
            "lro_gateway_requests_total",
            &[("route", "/mcp"), ("outcome", "ok")]
        ) >= 5.0
    );
    assert_eq!(
        delta(
            "lro_gateway_requests_total",
            &[("route", "other"), ("outcome", "not_found")]
        ),
        1.0
    );
    // The layer answers lro_extract itself: only the other calls (and the
    // sessions' own requests) went upstream.
    let upstream = delta("lro_upstream_response_duration_seconds_count", &route);
    let requests = delta("lro_gateway_request_duration_seconds_count", &route);
    assert!(
        upstream >= 3.0 && upstream < requests,
        "{upstream} upstream of {requests}"
    );
    assert!(
        after.get("lro_gateway_connections_open", &[]) >= 1.0,
        "the scrape's own connection is open"
    );
    assert_eq!(
        delta(
            "lro_offload_write_fallbacks_total",
            &[("route", "/mcp"), ("reason", "untrusted")]
        ),
        0.0
    );

    // Bounded labels: only these names, routes the gateway serves.
    for (name, labels) in after.samples.keys() {
        for (k, v) in labels {
            assert!(
                ["route", "outcome", "reason", "operation", "le"].contains(&k.as_str()),
                "{name}: label {k}"
            );
            if k == "route" {
                assert!(v == "/mcp" || v == "other", "{name}: route {v}");
            }
            assert!(
                !v.contains("records") && !v.contains("greet") && !v.contains("rec_"),
                "{name}: a tool name or argument in label {k}={v}"
            );
        }
    }
    drop(gateway);
}

/// `/readyz` answers `503` while the output directory cannot be written
/// (here: made writable by others, which the store refuses), and `200`
/// again once it can; `/healthz` stays `200`; the fallback and the failed
/// probes are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_while_the_output_store_cannot_be_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let Some((_python, gateway, addr)) = stack(&out, &[]) else {
        return;
    };
    let status = |path: &'static str| {
        let url = format!("http://{addr}{path}");
        async move { http().get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status("/readyz").await, 200);
    assert_eq!(scrape(addr).await.get("lro_gateway_ready", &[]), 1.0);
    assert!(out.is_dir(), "the store made its directory");
    assert!(
        std::fs::read_dir(&out).unwrap().next().is_none(),
        "the probe left no file behind"
    );

    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(status("/readyz").await, 503);
    assert_eq!(status("/healthz").await, 200);
    let url = format!("http://{addr}/mcp");
    let fell_back = calls("legacy", &url, &[("records", json!({"count": 300}))]).await;
    let text = ok_text(&fell_back["calls"][0]);
    assert!(
        !text.contains("\"file_path\""),
        "no file could be written: {text}"
    );
    let broken = scrape(addr).await;
    assert_eq!(broken.get("lro_gateway_ready", &[]), 0.0);
    assert_eq!(
        broken.get(
            "lro_offload_write_fallbacks_total",
            &[("route", "/mcp"), ("reason", "untrusted")]
        ),
        1.0
    );
    assert_eq!(
        broken.get(
            "lro_store_errors_total",
            &[("route", "/mcp"), ("operation", "write")]
        ),
        1.0
    );
    assert_eq!(
        broken.get(
            "lro_store_errors_total",
            &[("route", "/mcp"), ("operation", "probe")]
        ),
        1.0
    );

    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(status("/readyz").await, 200);
    assert_eq!(scrape(addr).await.get("lro_gateway_ready", &[]), 1.0);
    let log = gateway.stderr();
    assert!(
        log.contains("not ready"),
        "the failed probe is logged:\n{log}"
    );
}

/// The endpoints' paths are configurable, and refused when they clash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_paths_are_configurable_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing needs to answer upstream for the gateway's own endpoints.
    let (gateway, addr) = gateway_with(
        "http://127.0.0.1:9/mcp",
        dir.path(),
        &[
            "--metrics-path",
            "/ops/metrics",
            "--ready-path",
            "/ops/ready",
        ],
    );
    let get = |path: &'static str| {
        let url = format!("http://{addr}{path}");
        async move { http().get(url).send().await.unwrap() }
    };
    let metrics = get("/ops/metrics").await;
    assert_eq!(metrics.status(), 200);
    assert!(metrics.text().await.unwrap().ends_with("# EOF\n"));
    assert_eq!(get("/ops/ready").await.status(), 200);
    assert_eq!(get("/metrics").await.status(), 404);
    drop(gateway);

    let out = std::process::Command::new(crate::gateway::lro_bin())
        .args(["gateway", "--upstream", "http://127.0.0.1:9/mcp"])
        .args(["--listen", "127.0.0.1:0", "--metrics-path", "/healthz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("metrics path \"/healthz\""), "{stderr}");
}

/// `lro gateway --config FILE` with `[[gateway.route]]` tables (and no
/// `--upstream`); returns it and its address.
fn gateway_with_routes(config: &Path) -> (Proc, SocketAddr) {
    let mut cmd = std::process::Command::new(lro_bin());
    cmd.arg("--config")
        .arg(config)
        .args(["gateway", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info");
    crate::gateway::start_gateway(cmd)
}

/// Three routes from one file: two to the Python SDK server with their own
/// thresholds, one to the rmcp server; the Python SDK client over both
/// protocol generations sees each route's threshold, reads a route's files
/// through it and not through another; other paths get `404`; the metrics
/// count by route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_from_one_file_with_their_own_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_python, port)) = python_server(&[]) else {
        return;
    };
    let rmcp = serve_mcp(mcp_service(Mode::StatefulSse), None).await;
    let out = dir.path().join("files");
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[prompt.offload]
threshold_tokens = 1600
ttl_seconds = 600
output_dir = "{out}"

[[gateway.route]]
path = "/py-high/mcp"
upstream = "http://127.0.0.1:{port}/mcp"
threshold_tokens = 1000000

[[gateway.route]]
path = "/py/mcp"
upstream = "http://127.0.0.1:{port}/mcp"
headers = {{ X-Team = "infra" }}

[[gateway.route]]
path = "/memory/mcp"
upstream = "http://{rmcp}/mcp"
threshold_tokens = 800
"#,
            out = out.display()
        ),
    )
    .unwrap();
    let (gateway, addr) = gateway_with_routes(&config);
    let url = |route: &str| format!("http://{addr}{route}");
    let before = scrape(addr).await;

    // The same large result: inline under one route's threshold, a file
    // under the other's; over both protocol generations.
    let high = calls(
        "legacy",
        &url("/py-high/mcp"),
        &[("records", json!({"count": 300}))],
    )
    .await;
    let high_text = ok_text(&high["calls"][0]);
    assert!(
        high_text.contains("rec_0299"),
        "inline under /py-high/mcp: {high}"
    );
    let py = calls(
        "auto",
        &url("/py/mcp"),
        &[
            ("records", json!({"count": 300})),
            (
                "lro_extract",
                json!({"file_path": "@0", "query": ".id", "limit": 3}),
            ),
            ("echo_headers", json!({})),
        ],
    )
    .await;
    let descriptor: Value = serde_json::from_str(&ok_text(&py["calls"][0])).unwrap();
    let py_file = descriptor["file_path"]
        .as_str()
        .expect("offloaded under /py/mcp");
    assert!(
        Path::new(py_file).starts_with(out.join("route-py-mcp")),
        "{py_file}: the route's own directory"
    );
    assert!(ok_text(&py["calls"][1]).contains("rec_0000"), "{py}");
    let seen: Value = serde_json::from_str(&ok_text(&py["calls"][2])).unwrap();
    assert_eq!(seen["x-team"], "infra", "the route's header went upstream");
    assert_ne!(high["protocolVersion"], py["protocolVersion"]);

    let memory = calls(
        "legacy",
        &url("/memory/mcp"),
        &[
            ("recall_memories", json!({"query": "cache", "count": 200})),
            ("lro_extract", json!({"file_path": py_file, "query": ".id"})),
        ],
    )
    .await;
    let descriptor: Value = serde_json::from_str(&ok_text(&memory["calls"][0])).unwrap();
    assert!(
        Path::new(
            descriptor["file_path"]
                .as_str()
                .expect("offloaded under /memory/mcp")
        )
        .starts_with(out.join("route-memory-mcp"))
    );
    assert_eq!(
        memory["calls"][1]["ok"]["isError"],
        json!(true),
        "another route's file is not readable here: {memory}"
    );

    for path in ["/nope/mcp", "/mcp", "/py"] {
        let status = http()
            .post(url(path))
            .body("{}")
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{path}");
    }

    let after = scrape(addr).await;
    let delta =
        |name: &str, labels: &[(&str, &str)]| after.get(name, labels) - before.get(name, labels);
    assert_eq!(
        delta("lro_offloaded_results_total", &[("route", "/py/mcp")]),
        1.0
    );
    assert_eq!(
        delta("lro_offloaded_results_total", &[("route", "/memory/mcp")]),
        1.0
    );
    assert_eq!(
        delta("lro_offloaded_results_total", &[("route", "/py-high/mcp")]),
        0.0
    );
    assert_eq!(
        delta(
            "lro_passed_through_total",
            &[("route", "/py-high/mcp"), ("reason", "under_threshold")]
        ),
        1.0
    );
    assert_eq!(
        delta(
            "lro_extract_calls_total",
            &[("route", "/py/mcp"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        delta(
            "lro_extract_calls_total",
            &[("route", "/memory/mcp"), ("outcome", "error")]
        ),
        1.0
    );
    assert_eq!(
        delta(
            "lro_gateway_requests_total",
            &[("route", "other"), ("outcome", "not_found")]
        ),
        3.0
    );
    assert!(
        http().get(url("/readyz")).send().await.unwrap().status() == 200,
        "every route's store is writable"
    );
    drop(gateway);
}

/// `--upstream` and routes in the file together are refused, as is a route
/// without an upstream; each names what is wrong.
#[test]
fn bad_route_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    let run = |text: &str, extra: &[&str]| {
        std::fs::write(&config, text).unwrap();
        let out = std::process::Command::new(lro_bin())
            .arg("--config")
            .arg(&config)
            .args(["gateway", "--listen", "127.0.0.1:0"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let route = "[[gateway.route]]\npath = \"/a/mcp\"\nupstream = \"http://127.0.0.1:9/mcp\"\n";
    let e = run(route, &["--upstream", "http://127.0.0.1:9/mcp"]);
    assert!(e.contains("give one or the other"), "{e}");
    let e = run("[[gateway.route]]\npath = \"/a/mcp\"\n", &[]);
    assert!(e.contains("[[gateway.route]] #1: upstream: missing"), "{e}");
    let e = run(&format!("{route}treshold_tokens = 5\n"), &[]);
    assert!(e.contains("#1") && e.contains("treshold_tokens"), "{e}");
    let e = run(&format!("{route}{route}"), &[]);
    assert!(
        e.contains("#2: path \"/a/mcp\": served by an earlier route too"),
        "{e}"
    );
    let e = run("", &[]);
    assert!(e.contains("no route"), "{e}");
}

/// Unmounts a tmpfs on drop.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The output directory filling up in the middle of a write (a 1 MiB
/// tmpfs, mounted here: the tests run as root in CI; elsewhere the test
/// says it cannot and stops): the call gets the spec's fallback (its
/// records truncated inline after the warning), no partial file is left,
/// the fallback is counted as `no_space`; the gateway serves on, and a
/// result that fits is offloaded whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_output_directory_gives_the_fallback_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("not run: cannot mount a tmpfs here (it needs root)");
        return;
    }
    let _unmount = Unmount(out.clone());
    let upstream = serve_mcp(mcp_service(Mode::StatelessJson), None).await;
    let (_gateway, addr) = gateway_with(&format!("http://{upstream}/mcp"), &out, &[]);
    let url = format!("http://{addr}/mcp");

    // ~2.7 MB of records into 1 MiB.
    let v = crate::fleet::call(&url, "t", 1, "recall_memories", json!({"count": 3000}))
        .await
        .unwrap();
    let (text, err) = crate::fleet::text_of(&v);
    assert!(!err, "{text:.300}");
    assert!(
        text.starts_with("Warning: large result offloading (LRO) failed")
            && text.contains("of 3000 records"),
        "{text:.300}"
    );
    assert!(!v.to_string().contains("\"file_path\""), "no descriptor");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left in the full directory: {left:?}");
    let m = scrape(addr).await;
    assert_eq!(
        m.get(
            "lro_offload_write_fallbacks_total",
            &[("route", "/mcp"), ("reason", "no_space")]
        ),
        1.0
    );

    // It serves on: a result that fits is offloaded, whole.
    let v = crate::fleet::call(&url, "t", 2, "recall_memories", json!({"count": 200}))
        .await
        .unwrap();
    let d: Value = serde_json::from_str(&crate::fleet::text_of(&v).0).expect("a descriptor");
    let file = std::fs::read_to_string(d["file_path"].as_str().unwrap()).unwrap();
    assert_eq!(file.lines().count(), 201, "header and 200 records");
}
