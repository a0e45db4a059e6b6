//! Level 3 lifecycle without HTTP: the cleanup task, expiry, configuration,
//! per-tool policy and events.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};
use tower_lro::cleanup::Custodian;
use tower_lro::config::{ConfigError, DEFAULT_CLEANUP_INTERVAL};
use tower_lro::config::{OffloadConfig, ToolPolicy};
use tower_lro::descriptor::Detail;
use tower_lro::fixtures::{MemoryGenerator, memory_tool_result};
use tower_lro::offload::{
    EventHook, OffloadEvent, Offloader, Outcome, PassReason, RebuildError, ToolCall, rebuild_at,
    rebuild_file,
};
use tower_lro::store::{FsStore, Store};

const HOUR_MS: u64 = 3_600_000;

fn now_ms() -> u64 {
    Utc::now().timestamp_millis() as u64
}

/// An offload file name whose ULID says it was created `age_ms` ago.
fn name_aged(age_ms: u64, n: u128) -> String {
    let id = ulid::Ulid::from_parts(now_ms() - age_ms, n);
    format!("atlatl-recall-{id}.jsonl")
}

fn touch(path: &Path) {
    std::fs::write(path, b"{\"type\":\"lro_header\"}\n").unwrap();
}

fn large_result(count: usize) -> Value {
    memory_tool_result(&MemoryGenerator::new(7).memories(count, Detail::Full))
}

fn events_of(rx: &mut tokio::sync::mpsc::Receiver<OffloadEvent>) -> Vec<OffloadEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

#[test]
fn cleanup_deletes_only_expired_offload_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();

    let expired = [name_aged(2 * HOUR_MS, 1), name_aged(HOUR_MS + 1000, 2)];
    let fresh = name_aged(HOUR_MS - 60_000, 3);
    for n in expired.iter().chain([&fresh]) {
        touch(&d.join(n));
    }
    // Not ours, or not regular files: never touched.
    let target = outside.path().join("precious.jsonl");
    touch(&target);
    let link = name_aged(5 * HOUR_MS, 4);
    std::os::unix::fs::symlink(&target, d.join(&link)).unwrap();
    let subdir = name_aged(5 * HOUR_MS, 5);
    std::fs::create_dir(d.join(&subdir)).unwrap();
    for other in ["notes.txt", "atlatl-recall-notaulid.jsonl", "atlatl-.jsonl"] {
        touch(&d.join(other));
    }
    let foreign = format!("atlatl-Recall-{}.jsonl", ulid::Ulid::from_parts(1, 1));
    touch(&d.join(&foreign));
    // Our own temporary file, left by a crash long ago, and a fresh one being written.
    let stale_tmp = format!(".{}.tmp", name_aged(3 * HOUR_MS, 6));
    let live_tmp = format!(".{}.tmp", name_aged(1000, 7));
    touch(&d.join(&stale_tmp));
    touch(&d.join(&live_tmp));

    let (hook, mut rx) = EventHook::channel(64);
    let offloader = Offloader::new(OffloadConfig::default().output_dir(d)).with_event_hook(hook);
    let report = Custodian::for_offloader(&offloader).run_once();

    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let mut deleted: Vec<String> = report
        .deleted
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    deleted.sort();
    let mut want = vec![expired[0].clone(), expired[1].clone(), stale_tmp.clone()];
    want.sort();
    assert_eq!(deleted, want);
    for n in &want {
        assert!(!d.join(n).exists(), "{n} should be gone");
    }
    for kept in [
        fresh.as_str(),
        link.as_str(),
        subdir.as_str(),
        "notes.txt",
        "atlatl-recall-notaulid.jsonl",
        "atlatl-.jsonl",
        foreign.as_str(),
        live_tmp.as_str(),
    ] {
        assert!(
            d.join(kept).symlink_metadata().is_ok(),
            "{kept} must not be touched"
        );
    }
    assert!(target.exists(), "a symlink's target is never touched");

    let events = events_of(&mut rx);
    assert_eq!(events.len(), 3);
    for e in &events {
        match e {
            OffloadEvent::OffloadFileExpired {
                path,
                created_at,
                age_seconds,
            } => {
                assert!(want.contains(&path.file_name().unwrap().to_string_lossy().into_owned()));
                assert!(*age_seconds >= 3600, "{age_seconds}");
                assert!(*created_at < Utc::now() - chrono::Duration::hours(1));
            }
            other => panic!("unexpected event {other:?}"),
        }
        assert_eq!(e.name(), "OffloadFileExpired");
    }
}

#[test]
fn cleanup_uses_the_configured_ttl_and_its_clock() {
    let dir = tempfile::tempdir().unwrap();
    let name = name_aged(10 * 60_000, 1); // ten minutes old
    touch(&dir.path().join(&name));
    let custodian = Custodian::new(dir.path(), Duration::from_secs(3600));
    assert!(custodian.run_once().deleted.is_empty());
    // Fifty-one minutes later, the hour has passed.
    let later = Utc::now() + chrono::Duration::minutes(51);
    assert_eq!(custodian.run_once_at(later).deleted.len(), 1);
    // A missing directory is no error: nothing was written yet.
    let gone = Custodian::new(dir.path().join("never-created"), Duration::from_secs(1));
    let report = gone.run_once();
    assert!(report.errors.is_empty() && report.scanned == 0);
}

#[test]
fn cleanup_goes_on_when_files_vanish_during_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..400).map(|n| name_aged(2 * HOUR_MS, n)).collect();
    for n in &names {
        touch(&dir.path().join(n));
    }
    let custodian = Custodian::new(dir.path(), Duration::from_secs(3600));
    let d = dir.path().to_owned();
    let racer = std::thread::spawn(move || {
        for n in names.iter().rev() {
            let _ = std::fs::remove_file(d.join(n));
        }
    });
    let report = custodian.run_once();
    racer.join().unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.deleted.len() + report.vanished <= 400);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn cleanup_reports_an_unreadable_directory_and_goes_on() {
    // A path that is a file, not a directory: read_dir fails, no panic.
    let file = tempfile::NamedTempFile::new().unwrap();
    let report = Custodian::new(file.path(), Duration::from_secs(1)).run_once();
    assert_eq!(report.errors.len(), 1);
    assert!(report.deleted.is_empty());
}

/// Lets every task and every run on the blocking pool finish: with tokio's
/// clock paused, a sleep ends only when the runtime has nothing else to do
/// and no blocking task is in flight (those hold the paused clock).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn cleanup_task_runs_on_its_interval_and_stops_on_shutdown_or_drop() {
    // Tokio's clock is paused: the task's hour-long interval passes when the
    // test moves the clock on, at once. (The files' ages come from the ULIDs
    // in their names, so nothing here waits for the wall clock either.)
    const INTERVAL: Duration = Duration::from_secs(3600);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let first = d.join(name_aged(2 * HOUR_MS, 1));
    touch(&first);
    let custodian = Custodian::new(&d, Duration::from_secs(3600));

    let handle = custodian.clone().spawn(INTERVAL);
    // The first run is at once.
    common::eventually("first expired file deleted", || !first.exists()).await;
    // Later runs pick up new expired files.
    settle().await;
    let second = d.join(name_aged(2 * HOUR_MS, 2));
    touch(&second);
    tokio::time::advance(INTERVAL).await;
    common::eventually("second expired file deleted", || !second.exists()).await;
    assert!(!handle.is_finished());
    handle.shutdown().await;
    let third = d.join(name_aged(2 * HOUR_MS, 3));
    touch(&third);
    // Three intervals: a task still running would have run (and finished
    // its run: a run in flight holds the paused clock) before this ends.
    tokio::time::sleep(3 * INTERVAL).await;
    assert!(third.exists(), "no run after shutdown");

    // Dropping the handle stops the task too.
    let handle = custodian.spawn(INTERVAL);
    common::eventually("third expired file deleted", || !third.exists()).await;
    drop(handle);
    settle().await;
    let fourth = d.join(name_aged(2 * HOUR_MS, 4));
    touch(&fourth);
    tokio::time::sleep(3 * INTERVAL).await;
    assert!(fourth.exists(), "no run after the handle was dropped");
}

/// A file whose header says when it expires.
fn touch_expiring(path: &Path, expires_at: chrono::DateTime<Utc>) {
    let header = json!({"type": "lro_header", "expires_at": expires_at.to_rfc3339()});
    std::fs::write(path, format!("{header}\n{{}}\n")).unwrap();
}

#[test]
fn cleanup_honours_each_files_own_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let custodian = Custodian::new(d, Duration::from_secs(3600));
    // Written a minute ago by a process whose ttl was 10 s: expired.
    let short = d.join(name_aged(60_000, 1));
    touch_expiring(&short, Utc::now() - chrono::Duration::seconds(50));
    // Written two hours ago by a process whose ttl is a day: kept.
    let long = d.join(name_aged(2 * HOUR_MS, 2));
    touch_expiring(&long, Utc::now() + chrono::Duration::hours(22));
    // No expires_at in its header: the configured ttl decides.
    let plain = d.join(name_aged(2 * HOUR_MS, 3));
    touch(&plain);
    let report = custodian.run_once();
    assert!(!short.exists(), "its own expiry passed");
    assert!(long.exists(), "its own expiry is still ahead");
    assert!(!plain.exists(), "older than the configured ttl");
    assert_eq!(report.deleted.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_layer_starts_its_cleanup_and_stops_it_with_its_last_clone() {
    use tower::{Service, ServiceExt};
    const INTERVAL: Duration = Duration::from_secs(3600);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let first = d.join(name_aged(2 * HOUR_MS, 1));
    touch(&first);
    let inner = tower::service_fn(
        |_req: http::Request<tower_lro::offload::RequestBody<String>>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
        },
    );
    let layer = tower_lro::offload::OffloadLayer::new(
        OffloadConfig::default()
            .output_dir(&d)
            .cleanup_interval(INTERVAL),
    );
    let mut service = tower::Layer::layer(&layer, inner);
    assert!(first.exists(), "nothing runs before the layer is used");
    let req = || http::Request::get("/mcp").body(String::new()).unwrap();
    service.ready().await.unwrap().call(req()).await.unwrap();
    common::eventually("expired file deleted by the layer's own task", || {
        !first.exists()
    })
    .await;
    // One task however many requests and clones.
    let mut clone = service.clone();
    clone.ready().await.unwrap().call(req()).await.unwrap();
    let alive = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert_eq!(alive, 1, "one cleanup task");
    // It runs on its interval...
    settle().await;
    let second = d.join(name_aged(2 * HOUR_MS, 2));
    touch(&second);
    tokio::time::advance(INTERVAL).await;
    common::eventually("second expired file deleted", || !second.exists()).await;
    // ...and stops when the layer and every service made from it are gone.
    drop((layer, service, clone));
    settle().await;
    let third = d.join(name_aged(2 * HOUR_MS, 3));
    touch(&third);
    tokio::time::sleep(3 * INTERVAL).await;
    assert!(third.exists(), "no run after the last clone was dropped");
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );

    // Switched off: no task at all.
    let layer = tower_lro::offload::OffloadLayer::new(
        OffloadConfig::default().output_dir(&d).auto_cleanup(false),
    );
    let inner = tower::service_fn(
        |_req: http::Request<tower_lro::offload::RequestBody<String>>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
        },
    );
    let service = tower::Layer::layer(&layer, inner);
    service.oneshot(req()).await.unwrap();
    tokio::time::sleep(3 * INTERVAL).await;
    assert!(third.exists(), "auto_cleanup(false) starts nothing");
}

/// A layer with auto cleanup on (the default), and a service of it.
fn cleaning_layer(
    dir: &Path,
    interval: Duration,
) -> (
    tower_lro::offload::OffloadLayer,
    impl tower::Service<
        http::Request<String>,
        Response = http::Response<tower_lro::offload::OffloadBody<String>>,
        Error = std::convert::Infallible,
    > + Clone,
) {
    let inner = tower::service_fn(
        |_req: http::Request<tower_lro::offload::RequestBody<String>>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
        },
    );
    let layer = tower_lro::offload::OffloadLayer::new(
        OffloadConfig::default()
            .output_dir(dir)
            .cleanup_interval(interval),
    );
    let service = tower::Layer::layer(&layer, inner);
    (layer, service)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(start_paused = true)]
async fn spawn_cleanup_claims_the_layers_one_cleanup_task() {
    use tower::ServiceExt;
    const INTERVAL: Duration = Duration::from_secs(3600);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let req = || http::Request::get("/mcp").body(String::new()).unwrap();

    // Claimed before the first request: the layer, auto cleanup on, starts
    // no task of its own beside it (it used to start a second one).
    let (layer, service) = cleaning_layer(&d, INTERVAL);
    let handle = layer.spawn_cleanup().expect("the layer's first task");
    assert!(matches!(
        layer.spawn_cleanup(),
        Err(tower_lro::cleanup::CleanupError::AlreadyStarted)
    ));
    let first = d.join(name_aged(2 * HOUR_MS, 1));
    touch(&first);
    settle().await;
    tokio::time::advance(INTERVAL).await;
    common::eventually("expired file deleted by the claimed task", || {
        !first.exists()
    })
    .await;
    for _ in 0..3 {
        service.clone().oneshot(req()).await.unwrap();
    }
    settle().await;
    assert_eq!(alive_tasks(), 1, "one cleanup task, the claimed one");
    // Its handle stops it, and the layer does not start another.
    handle.shutdown().await;
    service.clone().oneshot(req()).await.unwrap();
    settle().await;
    assert_eq!(alive_tasks(), 0, "none after the claimed task stopped");
    let second = d.join(name_aged(2 * HOUR_MS, 2));
    touch(&second);
    tokio::time::sleep(3 * INTERVAL).await;
    assert!(second.exists(), "no run after the claimed task stopped");
    drop((layer, service));

    // Started by the layer's first request: a claim is refused, and the
    // layer's own task goes on alone.
    let (layer, service) = cleaning_layer(&d, INTERVAL);
    service.clone().oneshot(req()).await.unwrap();
    common::eventually("expired file deleted by the layer's own task", || {
        !second.exists()
    })
    .await;
    assert!(matches!(
        layer.spawn_cleanup(),
        Err(tower_lro::cleanup::CleanupError::AlreadyStarted)
    ));
    settle().await;
    assert_eq!(alive_tasks(), 1, "one cleanup task, the layer's own");
    drop((layer, service));
    settle().await;
    assert_eq!(alive_tasks(), 0);
}

#[test]
fn spawn_cleanup_outside_a_runtime_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let layer =
        tower_lro::offload::OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    assert!(matches!(
        layer.spawn_cleanup(),
        Err(tower_lro::cleanup::CleanupError::NoRuntime)
    ));
}

#[test]
fn expired_files_are_refused_before_the_cleanup_runs() {
    let dir = tempfile::tempdir().unwrap();
    let result = large_result(30);
    let offloader = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .ttl(Duration::from_millis(2000)),
    );
    let Outcome::Offloaded(off) = offloader
        .process(
            &ToolCall::new("recall_memories", None),
            result.to_string().as_bytes(),
        )
        .unwrap()
    else {
        panic!("expected an offload")
    };
    let path = off.file.path.clone();
    // Fresh: both readers accept it.
    assert!(rebuild_file(&path).is_ok());
    assert!(offloader.rebuild_file(&path).is_ok());
    let header = common::file_header(&path);
    assert!(header["expires_at"].is_string(), "{header}");
    // 2.1 s later, by the clock the readers and the cleanup are given.
    let later = Utc::now() + chrono::Duration::milliseconds(2100);
    assert!(path.exists(), "still on disk: the cleanup has not run");
    assert!(matches!(
        rebuild_at(&std::fs::read_to_string(&path).unwrap(), later),
        Err(RebuildError::Expired { .. })
    ));
    assert!(matches!(
        offloader.rebuild_file_at(&path, later),
        Err(RebuildError::Expired { .. })
    ));
    // And the cleanup deletes it.
    let report = Custodian::for_offloader(&offloader).run_once_at(later);
    assert_eq!(report.deleted, vec![path]);
}

#[test]
fn reads_are_confined_to_our_files_in_the_output_dir() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let Outcome::Offloaded(off) = offloader
        .process(
            &ToolCall::new("recall_memories", None),
            large_result(30).to_string().as_bytes(),
        )
        .unwrap()
    else {
        panic!("expected an offload")
    };
    let name = off.file.path.file_name().unwrap().to_owned();
    // The same file copied elsewhere: not ours.
    let copy = other.path().join(&name);
    std::fs::copy(&off.file.path, &copy).unwrap();
    assert!(matches!(
        offloader.rebuild_file(&copy),
        Err(RebuildError::NotOurs(_))
    ));
    // A symlink named like ours inside the directory: refused.
    let link = dir.path().join(name_aged(0, 9));
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    assert!(matches!(
        offloader.rebuild_file(&link),
        Err(RebuildError::NotOurs(_))
    ));
    // Another name: refused. The real one: fine, also through `..`.
    let renamed = dir.path().join("data.jsonl");
    std::fs::copy(&off.file.path, &renamed).unwrap();
    assert!(matches!(
        offloader.rebuild_file(&renamed),
        Err(RebuildError::NotOurs(_))
    ));
    let dotted = dir
        .path()
        .join("..")
        .join(dir.path().file_name().unwrap())
        .join(&name);
    assert!(offloader.rebuild_file(&dotted).is_ok());
}

#[test]
fn toml_section_environment_and_defaults() {
    let toml = r#"
        [server]
        port = 8080                    # other sections are ignored

        [prompt.offload]
        enabled = true
        threshold_tokens = 4000
        ttl_seconds = 600
        output_dir = "/var/tmp/lro"
        preview_chars = 80
        offload_errors = true
        max_tool_output_bytes = 65536
        cleanup_interval_seconds = 120
        max_buffered_bytes = 1048576
        exclude_tools = ["read_secret", "whoami"]

        [prompt.offload.tools.query_logs]
        threshold_tokens = 9000
        offload_errors = false

        [prompt.offload.tools.dump]
        max_tool_output_bytes = 0
    "#;
    let file = OffloadConfig::from_toml_str(toml).unwrap();
    assert_eq!(file.threshold_tokens, 4000);
    assert_eq!(file.ttl, Duration::from_secs(600));
    assert_eq!(file.output_dir, PathBuf::from("/var/tmp/lro"));
    assert_eq!(file.preview_chars, 80);
    assert!(file.offload_errors);
    assert_eq!(file.max_tool_output_bytes, Some(65536));
    assert_eq!(file.cleanup_interval, Duration::from_secs(120));
    assert_eq!(file.max_buffered_bytes, 1 << 20);
    assert!(!file.policy_for("read_secret").enabled);
    assert!(!file.policy_for("whoami").enabled);
    let logs = file.policy_for("query_logs");
    assert_eq!((logs.threshold_tokens, logs.offload_errors), (9000, false));
    assert_eq!(logs.max_tool_output_bytes, Some(65536));
    assert_eq!(file.policy_for("dump").max_tool_output_bytes, None);
    assert_eq!(file.policy_for("other").threshold_tokens, 4000);

    // Environment over file over defaults.
    let env = [
        ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "2500"),
        ("ATLATL_PROMPT__OFFLOAD__ENABLED", "FALSE"),
        ("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", ""),
        ("ATLATL_PROMPT__OFFLOAD__EXCLUDE_TOOLS", "a, b,,c"),
        (
            "ATLATL_PROMPT__OFFLOAD__TOOLS__query_logs__THRESHOLD_TOKENS",
            "100",
        ),
        ("UNRELATED", "x"),
    ];
    let both = file.clone().apply_env_vars(env).unwrap();
    assert_eq!(both.threshold_tokens, 2500);
    assert!(!both.enabled);
    assert_eq!(both.ttl, Duration::from_secs(600), "file value kept");
    for t in ["a", "b", "c", "read_secret"] {
        assert!(both.excluded_tools.contains(t), "{t}");
        assert!(both.is_excluded(t), "{t}");
    }
    assert_eq!(both.tools["query_logs"].threshold_tokens, Some(100));
    // An empty output_dir means the per-user default directory in the
    // system temp dir, for the store and for the cleanup alike.
    assert_eq!(both.output_dir, PathBuf::new());
    assert_eq!(
        FsStore::new(both.output_dir.clone()).dir(),
        std::path::absolute(FsStore::default_dir()).unwrap()
    );
    assert_eq!(
        Custodian::new(both.output_dir.clone(), both.ttl).dir(),
        FsStore::new(both.output_dir.clone()).dir()
    );
    let defaults = OffloadConfig::default().apply_env_vars(env).unwrap();
    assert_eq!(defaults.ttl, Duration::from_secs(3600));
    assert_eq!(defaults.cleanup_interval, DEFAULT_CLEANUP_INTERVAL);

    // load(): the file from disk, then the process environment (only our
    // prefix is read; none of it is set in this test process).
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), toml).unwrap();
    if std::env::vars().all(|(k, _)| !k.starts_with("ATLATL_PROMPT__OFFLOAD__")) {
        assert_eq!(OffloadConfig::load(Some(f.path())).unwrap(), file);
        assert_eq!(OffloadConfig::load(None).unwrap(), OffloadConfig::default());
    }
}

#[test]
fn invalid_values_name_the_key_and_the_value() {
    let cases: [(&str, &str); 8] = [
        (
            "[prompt.offload]\nthreshold_tokens = \"lots\"",
            "invalid value \"lots\" for prompt.offload.threshold_tokens: expected a non-negative integer",
        ),
        (
            "[prompt.offload]\nthreshold_tokens = -5",
            "invalid value -5 for prompt.offload.threshold_tokens: expected a non-negative integer",
        ),
        (
            "[prompt.offload]\nthreshold_tokens = 5000000000",
            "invalid value 5000000000 for prompt.offload.threshold_tokens: expected a non-negative integer",
        ),
        (
            "[prompt.offload]\nenabled = \"yes\"",
            "invalid value \"yes\" for prompt.offload.enabled: expected true or false",
        ),
        (
            "[prompt.offload]\nttl_seconds = -1",
            "invalid value -1 for prompt.offload.ttl_seconds: expected a non-negative integer",
        ),
        (
            "[prompt.offload]\noutput_dir = 3",
            "invalid value 3 for prompt.offload.output_dir: expected a string",
        ),
        (
            "[prompt.offload]\nthreshold = 10",
            "unknown configuration key prompt.offload.threshold",
        ),
        (
            "[prompt.offload.tools.logs]\nthreshold_tokens = 1.5",
            "invalid value 1.5 for prompt.offload.tools.logs.threshold_tokens: expected a non-negative integer",
        ),
    ];
    for (toml, want) in cases {
        let err = OffloadConfig::from_toml_str(toml).unwrap_err();
        assert_eq!(err.to_string(), want, "for {toml:?}");
    }
    let env_cases = [
        (
            ("ATLATL_PROMPT__OFFLOAD__ENABLED", "maybe"),
            "invalid value \"maybe\" for ATLATL_PROMPT__OFFLOAD__ENABLED: expected true, false, 1 or 0",
        ),
        (
            ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "1k"),
            "invalid value \"1k\" for ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS: expected a non-negative integer",
        ),
        (
            ("ATLATL_PROMPT__OFFLOAD__TTL", "60"),
            "unknown configuration key ATLATL_PROMPT__OFFLOAD__TTL",
        ),
    ];
    for (var, want) in env_cases {
        let err = OffloadConfig::default().apply_env_vars([var]).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
    let err = OffloadConfig::from_toml_str("[prompt.offload\nenabled = true").unwrap_err();
    assert!(matches!(err, ConfigError::Toml { .. }), "{err}");
    let missing = Path::new("/nonexistent/lro.toml");
    let err = OffloadConfig::load(Some(missing)).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/lro.toml"), "{err}");
}

fn outcome(o: &Offloader, tool: &str, result: &Value) -> Outcome {
    o.process(&ToolCall::new(tool, None), result.to_string().as_bytes())
        .unwrap()
}

#[test]
fn per_tool_policy_and_the_byte_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let big = large_result(30); // ~6,000 tokens
    let config = OffloadConfig::default()
        .output_dir(dir.path())
        .exclude_tools(["secret_recall"])
        .tool_policy("patient", ToolPolicy::new().threshold_tokens(100_000))
        .tool_policy("eager", ToolPolicy::new().threshold_tokens(50));
    let o = Offloader::new(config);
    assert!(matches!(
        outcome(&o, "secret_recall", &big),
        Outcome::Inline(PassReason::Excluded)
    ));
    assert!(matches!(
        outcome(&o, "patient", &big),
        Outcome::Inline(PassReason::UnderThreshold { .. })
    ));
    assert!(matches!(outcome(&o, "other", &big), Outcome::Offloaded(_)));
    // 20 light memories: under 1600 tokens, over 50, and larger than their
    // descriptor (which is never larger than the result it replaces).
    let small = memory_tool_result(&MemoryGenerator::new(1).memories(20, Detail::Light));
    assert!(matches!(
        outcome(&o, "other", &small),
        Outcome::Inline(PassReason::UnderThreshold { .. })
    ));
    assert!(matches!(
        outcome(&o, "eager", &small),
        Outcome::Offloaded(_)
    ));

    // The byte trigger: the same small result, offloaded once its content
    // reaches max_tool_output_bytes, whatever the token estimate.
    let text_len = small["content"][0]["text"].as_str().unwrap().len();
    let by_bytes = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .max_tool_output_bytes(Some(text_len))
            .tool_policy("exempt", ToolPolicy::new().max_tool_output_bytes(0)),
    );
    match outcome(&by_bytes, "other", &small) {
        Outcome::Offloaded(off) => assert_eq!(off.response.summary.count, 20),
        other => panic!("expected an offload, got {other:?}"),
    }
    assert!(matches!(
        outcome(&by_bytes, "exempt", &small),
        Outcome::Inline(_)
    ));
    let one_short = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .max_tool_output_bytes(Some(text_len + 1)),
    );
    assert!(matches!(
        outcome(&one_short, "other", &small),
        Outcome::Inline(PassReason::UnderThreshold { .. })
    ));
}

#[test]
fn an_excluded_tool_stays_excluded_whatever_policy_comes_before_or_after() {
    // `exclude_tools(["x"])` then `tool_policy("x", ...)` used to replace
    // the exclusion with the policy and offload x again.
    let dir = tempfile::tempdir().unwrap();
    let big = large_result(30); // ~6,000 tokens
    let eager = || ToolPolicy::new().threshold_tokens(50).enabled(true);
    let configs = [
        OffloadConfig::default()
            .exclude_tools(["x"])
            .tool_policy("x", eager()),
        OffloadConfig::default()
            .tool_policy("x", eager())
            .exclude_tools(["x"]),
        OffloadConfig::from_toml_str(
            "[prompt.offload]\nexclude_tools = [\"x\"]\n\
             [prompt.offload.tools.x]\nenabled = true\nthreshold_tokens = 50\n",
        )
        .unwrap(),
        OffloadConfig::default()
            .apply_env_vars([
                ("ATLATL_PROMPT__OFFLOAD__EXCLUDE_TOOLS", "x"),
                ("ATLATL_PROMPT__OFFLOAD__TOOLS__x__ENABLED", "1"),
                ("ATLATL_PROMPT__OFFLOAD__TOOLS__x__THRESHOLD_TOKENS", "50"),
            ])
            .unwrap(),
        // Excluded in the file, a policy for it in code afterwards.
        OffloadConfig::from_toml_str("[prompt.offload]\nexclude_tools = [\"x\"]\n")
            .unwrap()
            .tool_policy("x", eager()),
    ];
    for (i, config) in configs.into_iter().enumerate() {
        let o = Offloader::new(config.output_dir(dir.path()));
        assert!(
            matches!(
                outcome(&o, "x", &big),
                Outcome::Inline(PassReason::Excluded)
            ),
            "case {i}"
        );
        assert!(
            matches!(outcome(&o, "y", &big), Outcome::Offloaded(_)),
            "case {i}"
        );
    }
}

#[test]
fn the_builder_takes_the_configuration_whole_and_its_own_setters_touch_none_of_it() {
    // The builder has no setter of a configuration value (a doctest on
    // `OffloadLayerBuilder` checks that `.threshold_tokens(..)` does not
    // compile there), so nothing set before `.config(c)` can be lost and
    // nothing set after it can change `c`.
    let dir = tempfile::tempdir().unwrap();
    let config = OffloadConfig::default()
        .output_dir(dir.path())
        .threshold_tokens(4321)
        .ttl(Duration::from_secs(77))
        .trust_output_dir(true)
        .schema_version("1.0")
        .preview_chars(12)
        .offload_errors(true)
        .max_tool_output_bytes(Some(999))
        .exclude_tools(["secret"])
        .tool_policy("logs", ToolPolicy::new().threshold_tokens(9))
        .cleanup_interval(Duration::from_secs(5))
        .auto_cleanup(false)
        .max_buffered_bytes(1 << 20)
        .extraction(false);
    assert_ne!(config, OffloadConfig::default());
    let layer_setters = |b: tower_lro::offload::OffloadLayerBuilder| {
        b.proxy_header(http::HeaderName::from_static("x-raw"))
            .max_request_bytes(1234)
            .proxy_sessions(3, Duration::from_secs(9))
            .estimator(tower_lro::estimate::CharsPerTokenEstimator)
            .store(FsStore::new(dir.path()))
            .extract_limits(tower_lro::extract::ExtractLimits::default())
            .partition(|_| None)
            .event_hook(EventHook::callback(|_| {}))
    };
    let before = layer_setters(tower_lro::offload::OffloadLayer::builder())
        .config(config.clone())
        .build();
    let after =
        layer_setters(tower_lro::offload::OffloadLayer::builder().config(config.clone())).build();
    assert_eq!(before.offloader().config(), &config);
    assert_eq!(after.offloader().config(), &config);
    assert_eq!(
        tower_lro::offload::OffloadLayer::new(config.clone())
            .offloader()
            .config(),
        &config
    );
    // A second `config` replaces the first, whole.
    let other = OffloadConfig::default().output_dir(dir.path());
    let twice = tower_lro::offload::OffloadLayer::builder()
        .config(config)
        .config(other.clone())
        .build();
    assert_eq!(twice.offloader().config(), &other);
}

#[test]
fn error_results_stay_inline_unless_the_tool_allows_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut err = large_result(30);
    err["isError"] = json!(true);
    let o = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .tool_policy("diagnose", ToolPolicy::new().offload_errors(true)),
    );
    assert!(matches!(
        outcome(&o, "recall_memories", &err),
        Outcome::Inline(PassReason::IsError)
    ));
    match outcome(&o, "diagnose", &err) {
        Outcome::Offloaded(off) => {
            let v: Value = serde_json::from_str(&off.result).unwrap();
            assert_eq!(v["isError"], json!(true), "isError kept");
        }
        other => panic!("expected an offload, got {other:?}"),
    }
    let all = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir.path())
            .offload_errors(true)
            .tool_policy("strict", ToolPolicy::new().offload_errors(false)),
    );
    assert!(matches!(
        outcome(&all, "recall_memories", &err),
        Outcome::Offloaded(_)
    ));
    assert!(matches!(
        outcome(&all, "strict", &err),
        Outcome::Inline(PassReason::IsError)
    ));
}

#[test]
fn events_reach_the_hook_with_their_fields() {
    let dir = tempfile::tempdir().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let hook = EventHook::callback(move |e| sink.lock().unwrap().push(e.clone()));
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path())).with_event_hook(hook);
    let big = large_result(30);
    let bytes = big.to_string().len();
    let Outcome::Offloaded(off) = outcome(&o, "recall_memories", &big) else {
        panic!("expected an offload")
    };
    let _ = outcome(
        &o,
        "status",
        &json!({"content": [{"type": "text", "text": "ok"}]}),
    );
    // Long enough to need parsing, and not JSON.
    let broken = format!("{{\"content\": [{}", "x".repeat(20_000));
    let _ = o.process(&ToolCall::new("broken", None), broken.as_bytes());

    // A real write failure: the output "directory" is a regular file.
    let file = tempfile::NamedTempFile::new().unwrap();
    let failing = Offloader::new(OffloadConfig::default().output_dir(file.path().join("sub")))
        .with_event_hook(EventHook::callback({
            let sink = seen.clone();
            move |e| sink.lock().unwrap().push(e.clone())
        }));
    let Outcome::Truncated(t) = outcome(&failing, "recall_memories", &big) else {
        panic!("expected the fallback")
    };
    // Disk full, through the store interface.
    let (hook, mut rx) = EventHook::channel(8);
    let full = Offloader::new(OffloadConfig::default())
        .with_store(common::FullDisk(dir.path().to_owned()))
        .with_event_hook(hook);
    assert!(matches!(
        outcome(&full, "recall_memories", &big),
        Outcome::Truncated(_)
    ));

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "{seen:#?}");
    assert_eq!(
        seen[0],
        OffloadEvent::Offloaded {
            tool: "recall_memories".into(),
            path: off.file.path.clone(),
            count: 30,
            estimated_tokens: off.response.summary.estimated_tokens,
            bytes,
        }
    );
    assert!(matches!(
        &seen[1],
        OffloadEvent::PassedThrough { tool: Some(t), reason: PassReason::UnderThreshold { .. } } if t == "status"
    ));
    assert!(matches!(
        &seen[2],
        OffloadEvent::PassedThrough { tool: Some(t), reason: PassReason::Unparseable(_) } if t == "broken"
    ));
    match &seen[3] {
        OffloadEvent::OffloadWriteFailed {
            tool,
            error,
            kept,
            total,
            ..
        } => {
            assert_eq!(tool, "recall_memories");
            assert!(error.contains("Not a directory"), "{error}");
            assert_eq!((*kept, *total), (t.kept, 30));
            assert!(*kept > 0 && *kept < 30);
        }
        other => panic!("expected OffloadWriteFailed, got {other:?}"),
    }
    let events = events_of(&mut rx);
    match &events[..] {
        [OffloadEvent::OffloadWriteFailed { error, .. }] => {
            assert!(error.contains("No space left on device"), "{error}")
        }
        other => panic!("expected one OffloadWriteFailed, got {other:?}"),
    }
}

#[test]
fn a_full_channel_drops_events_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let (hook, mut rx) = EventHook::channel(2);
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()))
        .with_event_hook(hook.clone());
    let small = json!({"content": [{"type": "text", "text": "ok"}]});
    for _ in 0..5 {
        let _ = outcome(&o, "status", &small);
    }
    assert_eq!(events_of(&mut rx).len(), 2);
    assert_eq!(hook.dropped(), 3);
}
