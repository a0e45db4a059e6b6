//! A fleet: three `lro gateway` replicas sharing one S3-compatible store
//! (`moto_server` on loopback, from `tests/interop/requirements.txt`) and
//! one binding key file. The official Python SDK client sends each call to
//! another replica, in both protocol generations; 100 concurrent calls
//! across the replicas, one killed with SIGKILL in the middle, lose nothing
//! committed and mix nothing up; files expire everywhere and are swept by
//! every replica and by `lro cleanup --store`. Store faults: `fleet_faults.rs`.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::gateway::{Proc, lro_bin, run_client, sdk_ok, sdk_text, wait_for_port};
use crate::common;
use crate::common::mcp::{Mode, mcp_service, serve_mcp, tools_call};

pub(crate) const BUCKET: &str = "lro-fleet";

/// `moto_server` on a free loopback port, killed on drop.
pub(crate) struct Moto {
    child: Child,
    pub(crate) port: u16,
    /// Its request log (stderr: a line per request, method, path, status).
    log: tempfile::NamedTempFile,
}

impl Moto {
    /// The statuses of the `GET`s of object `key` logged so far.
    pub(crate) fn gets_of(&self, key: &str) -> Vec<u16> {
        let needle = format!("GET /{BUCKET}/{key} ");
        std::fs::read_to_string(self.log.path())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&needle))
            .filter_map(|l| {
                l.rsplit('"')
                    .next()?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound, then released for the child to bind).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts moto from the interop venv and makes the bucket (a plain PUT).
pub(crate) async fn moto(interop: &Path) -> Moto {
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(interop.join(".venv/bin/moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("moto_server (tests/interop/setup.sh installs it)");
    let moto = Moto { child, port, log };
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)));
    let made = http()
        .put(format!("http://127.0.0.1:{port}/{BUCKET}"))
        .send()
        .await
        .unwrap();
    assert!(made.status().is_success(), "bucket: {}", made.status());
    moto
}

pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The keys under `prefix` in the bucket (moto's ListObjectsV2).
pub(crate) async fn keys(port: u16, prefix: &str) -> Vec<String> {
    let url = format!("http://127.0.0.1:{port}/{BUCKET}?list-type=2&prefix={prefix}");
    let xml = http().get(url).send().await.unwrap().text().await.unwrap();
    xml.split("<Key>")
        .skip(1)
        .filter_map(|k| k.split("</Key>").next())
        .map(str::to_owned)
        .collect()
}

/// `lro` with the S3 variables pointing at `s3_port` (moto, or the fault
/// proxy in front of it).
pub(crate) fn lro(s3_port: u16) -> Command {
    let mut cmd = Command::new(lro_bin());
    cmd.env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{s3_port}"))
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_TIMEOUT", "2s")
        .env("RUST_LOG", "info");
    cmd
}

/// One replica: `lro gateway` with `args` (after `gateway`); returns it and
/// its address.
pub(crate) fn replica(s3_port: u16, global: &[&str], args: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = lro(s3_port);
    cmd.args(global)
        .args(["gateway", "--listen", "127.0.0.1:0"])
        .args(args);
    crate::gateway::start_gateway(cmd)
}

/// A `tools/call` through `url` with a bearer `token`: the JSON-RPC
/// answer, or `None` when the replica did not answer (killed).
pub(crate) async fn call(
    url: &str,
    token: &str,
    id: u64,
    tool: &str,
    args: Value,
) -> Option<Value> {
    let body = tools_call(id, tool, args, None);
    let resp = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    let text = resp.text().await.ok()?;
    let v = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => common::mcp::sse_messages(&text).into_iter().next()?,
    };
    Some(v)
}

/// The first text block of a JSON-RPC tool answer, and `isError`.
pub(crate) fn text_of(v: &Value) -> (String, bool) {
    let r = &v["result"];
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    (text.to_owned(), r["isError"] == true)
}

/// How many records `lro_extract` finds in `file` through `url` with
/// `token` (`Err`: the refusal's text).
pub(crate) async fn count_via(url: &str, token: &str, file: &str) -> Result<usize, String> {
    let args = json!({"file_path": file, "query": "length", "slurp": true});
    let v = call(url, token, 7, "lro_extract", args)
        .await
        .ok_or("no answer")?;
    let (text, err) = text_of(&v);
    if err {
        return Err(text);
    }
    text.trim().parse().map_err(|_| text)
}

/// The routes of every replica: one per protocol generation (a stateful
/// SSE upstream for sessions, a stateless JSON one for 2026-07-28 and raw
/// calls), and one whose files live 5 s and are swept every second.
fn routes_file(dir: &Path, legacy: SocketAddr, stateless: SocketAddr) -> PathBuf {
    let path = dir.join("fleet.toml");
    std::fs::write(
        &path,
        format!(
            r#"[[gateway.route]]
path = "/legacy/mcp"
upstream = "http://{legacy}/mcp"

[[gateway.route]]
path = "/auto/mcp"
upstream = "http://{stateless}/mcp"

[[gateway.route]]
path = "/short/mcp"
upstream = "http://{stateless}/mcp"
ttl_seconds = 5
cleanup_interval_seconds = 1
"#
        ),
    )
    .unwrap();
    path
}

/// The Python SDK client over the three replicas, both generations: the
/// file one replica wrote is read, read as a resource and listed through
/// the others with the same token; other or no credentials get the one
/// refusal from every replica.
async fn sdk_clients_round_robin(interop: &Path, addrs: &[SocketAddr], moto_port: u16) {
    let ports: Vec<String> = addrs.iter().map(|a| a.port().to_string()).collect();
    for (negotiation, route) in [("legacy", "legacy"), ("auto", "auto")] {
        let url = format!("http://{}/{route}/mcp", addrs[0]);
        let script = interop.join("fleet_client.py");
        let python = interop.join(".venv/bin/python");
        let mut args = vec![script.to_str().unwrap(), negotiation, &url];
        args.extend(ports.iter().map(String::as_str));
        let v = run_client(&python, &args).await;
        let d = &v["descriptor"];
        assert_eq!(d["offloaded"], true, "{negotiation}: {v:.600}");
        let file = d["file_path"].as_str().unwrap();
        assert!(file.starts_with("lro://files/atlatl-"), "{file}");
        let name = file.trim_start_matches("lro://files/");
        // Committed: data and manifest, under the route's prefix.
        let listed = keys(moto_port, &format!("fleet/route-{route}-mcp/")).await;
        for key in [name.to_owned(), format!("{name}.manifest")] {
            let key = format!("fleet/route-{route}-mcp/{key}");
            assert!(listed.contains(&key), "{key} not in {listed:?}");
        }
        let writer = &v["replicas"][0];
        assert_eq!(writer[0], "tools/call", "{v:.300}");
        // Alice again, each call on another replica than the writer's.
        let again = &v["alice_again"];
        let served: Vec<&Value> = again["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r[1])
            .collect();
        assert_ne!(
            served[0], &writer[1],
            "{negotiation}: extract on the writer"
        );
        assert_ne!(served[1], served[0], "{negotiation}: no round robin");
        let (ids, err) = sdk_text(&again["extract"], "alice again: lro_extract");
        assert!(!err && ids.lines().count() == 2, "{negotiation}: {ids}");
        let (count, err) = sdk_text(&again["extract_again"], "alice again: length");
        assert!(!err && count.trim() == "200", "{negotiation}: {count}");
        let read = sdk_ok(&again["read"], "alice again: resources/read");
        let text = read["contents"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("{\"type\":\"lro_header\""), "{text:.200}");
        assert_eq!(text.lines().count(), 201, "{negotiation}: header + records");
        let (list, _) = sdk_text(&again["list"], "alice again: lro_list");
        assert!(list.contains(name), "{negotiation}: {list}");
        // Bob and nobody, on every replica: one refusal, nothing listed.
        let mut refusals = Vec::new();
        for who in ["bob", "nobody"] {
            for call in ["extract", "extract_again"] {
                let (text, err) = sdk_text(&v[who][call], who);
                assert!(err, "{negotiation}: {who} read the file: {text}");
                refusals.push(text);
            }
            assert!(
                v[who]["read"].get("error").is_some(),
                "{negotiation}: {who}"
            );
            let (list, _) = sdk_text(&v[who]["list"], who);
            assert!(!list.contains(name), "{negotiation}: {who} lists it");
        }
        let ports_seen: std::collections::BTreeSet<String> = ["bob", "nobody"]
            .iter()
            .flat_map(|w| v[*w]["replicas"].as_array().unwrap().iter())
            .map(|r| r[1].to_string())
            .collect();
        assert_eq!(ports_seen.len(), 3, "refusals from every replica");
        assert!(
            refusals.windows(2).all(|w| w[0] == w[1]),
            "{negotiation}: refusals differ: {refusals:?}"
        );
    }
}

/// A bucket that does not exist is refused at start, in one line naming
/// the store URL (its credentials left out) and the server's code and
/// message; no XML body reaches stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_bucket_is_refused_at_start_in_one_line() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let moto = moto(&interop).await;
    let mut cmd = lro(moto.port);
    cmd.args(["gateway", "--listen", "127.0.0.1:0"])
        .args(["--upstream", "http://127.0.0.1:9/mcp"])
        .args(["--store", "s3://no-such-bucket/lro?token=secret"]);
    let out = common::output_within(cmd, Duration::from_secs(60), "lro gateway").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let refusals: Vec<&str> = stderr.lines().filter(|l| l.starts_with("lro: ")).collect();
    let [line] = refusals[..] else {
        panic!("one refusal line: {stderr}");
    };
    assert!(
        line.starts_with("lro: output store s3://no-such-bucket/lro:")
            && line.contains("NoSuchBucket: The specified bucket does not exist"),
        "{line}"
    );
    assert!(
        !stderr.contains('<') && !stderr.contains("secret"),
        "{stderr}"
    );
    // The bucket that exists starts.
    let (_gateway, _) = replica(
        moto.port,
        &[],
        &[
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--store",
            &format!("s3://{BUCKET}/lro"),
        ],
    );
}

/// Replicas sharing one bucket and one key: the SDK client round robin,
/// 100 concurrent calls with a replica killed (SIGKILL) in the middle and
/// restarted, expiry and sweeps across replicas, `lro cleanup --store`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_offloaded_results_through_object_storage() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let moto = moto(&interop).await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("binding.key");
    std::fs::write(&key, format!("{}\n", "5e".repeat(32))).unwrap();
    let legacy = serve_mcp(mcp_service(Mode::StatefulSse), None).await;
    let stateless = serve_mcp(mcp_service(Mode::StatelessJson), None).await;
    let routes = routes_file(dir.path(), legacy, stateless);
    let store = format!("s3://{BUCKET}/fleet");
    let global = ["--config", routes.to_str().unwrap()];
    let args = [
        "--store",
        store.as_str(),
        "--binding-key-file",
        key.to_str().unwrap(),
    ];
    let mut replicas: Vec<Option<(Proc, SocketAddr)>> = (0..3)
        .map(|_| Some(replica(moto.port, &global, &args)))
        .collect();
    let addrs: Vec<SocketAddr> = replicas.iter().flatten().map(|r| r.1).collect();

    sdk_clients_round_robin(&interop, &addrs, moto.port).await;
    // Ready: each replica writes and removes a probe file in the bucket.
    for a in &addrs {
        let ready = http()
            .get(format!("http://{a}/readyz"))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200, "{a}");
    }
    assert!(
        !keys(moto.port, "fleet/")
            .await
            .iter()
            .any(|k| k.contains("readyprobe")),
        "probe files left"
    );

    a_result_over_one_part(&addrs, &moto).await;

    let killed = replicas[2].take().expect("replica 2");
    let written = concurrent_calls_with_a_replica_killed(&addrs, killed).await;

    // The killed replica, restarted with the same key, reads what it wrote.
    let restarted = replica(moto.port, &global, &args);
    let url = format!("http://{}/auto/mcp", restarted.1);
    let (i, file) = written.iter().find(|(i, _)| i % 3 == 2).unwrap();
    assert_eq!(
        count_via(&url, &format!("user-{i}"), file).await,
        Ok(60 + *i as usize)
    );
    replicas[2] = Some(restarted);

    expiry_and_sweeps(&addrs[..2], moto.port, &store).await;
}

/// A result over one 8 MiB part: a multipart upload (its size checked in
/// the bucket). The replica that wrote it reads it without a `GET` of its
/// data (it kept its upload); another answers a first page with a few
/// ranged `GET`s (206) of its start, not the object; a third counts every
/// record, reading it all through ranges.
async fn a_result_over_one_part(addrs: &[SocketAddr], moto: &Moto) {
    let url = format!("http://{}/auto/mcp", addrs[0]);
    let big_args = json!({"query": "big", "count": 12000});
    let v = call(&url, "erin", 1, "recall_memories", big_args)
        .await
        .unwrap();
    let d: Value = serde_json::from_str(&text_of(&v).0).expect("a descriptor");
    let big = d["file_path"].as_str().unwrap();
    let key = format!(
        "fleet/route-auto-mcp/{}",
        big.trim_start_matches("lro://files/")
    );
    let listing = format!(
        "http://127.0.0.1:{}/{BUCKET}?list-type=2&prefix={key}",
        moto.port
    );
    let xml = http()
        .get(listing)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let size: u64 = xml
        .split("<Size>")
        .nth(1)
        .and_then(|s| s.split("</Size>").next()?.parse().ok())
        .unwrap_or_else(|| panic!("{xml}"));
    assert!(size > 8 << 20, "{size} bytes: one part only");
    let page = json!({"file_path": big, "recipe": 1});
    let first_page = |addr: SocketAddr| {
        let page = page.clone();
        async move {
            let url = format!("http://{addr}/auto/mcp");
            let v = call(&url, "erin", 8, "lro_extract", page).await.unwrap();
            let (text, err) = text_of(&v);
            assert!(!err && text.lines().count() > 10, "{text:.300}");
        }
    };
    first_page(addrs[0]).await;
    assert_eq!(
        moto.gets_of(&key),
        [] as [u16; 0],
        "the writer fetched its own file"
    );
    first_page(addrs[1]).await;
    let gets = moto.gets_of(&key);
    assert!(
        !gets.is_empty() && gets.len() <= 3 && gets.iter().all(|s| *s == 206),
        "a first page on another replica: {gets:?}"
    );
    println!(
        "a first page on another replica: {} ranged GETs",
        gets.len()
    );
    // A page near the end, of a recipe that makes one value per record:
    // read from the indexed record before it, in one or two ranges.
    let deep = json!({"file_path": big, "recipe": 4, "offset": 11000, "limit": 3});
    let v = call(
        &format!("http://{}/auto/mcp", addrs[1]),
        "erin",
        9,
        "lro_extract",
        deep,
    )
    .await
    .unwrap();
    let (text, err) = text_of(&v);
    assert!(!err && text.contains("mem_11000_"), "{text:.300}");
    let more = moto.gets_of(&key).len() - gets.len();
    assert!((1..=2).contains(&more), "a deep page: {more} more GETs");
    println!("a page at record 11,000 on another replica: {more} ranged GETs");
    let other = format!("http://{}/auto/mcp", addrs[2]);
    assert_eq!(count_via(&other, "erin", big).await, Ok(12000));
    assert!(moto.gets_of(&key).iter().all(|s| *s == 206));
    from_a_shell(moto.port, &d, big);
}

/// The descriptor of a file in the store says how to read it from a
/// shell; that command, run as written (through `sh`, with the store's
/// credentials in the environment), gives the recipe's output, and
/// `inspect` and `rebuild` read the file through `--store` too.
fn from_a_shell(moto_port: u16, d: &Value, file: &str) {
    let guidance = d["guidance"].as_str().unwrap();
    let command = guidance
        .split('`')
        .find(|part| part.starts_with("lro extract --store "))
        .unwrap_or_else(|| panic!("{guidance}"));
    let command = command
        .replacen("lro ", "\"$LRO\" ", 1)
        .replace("--recipe N", "--recipe 4");
    let mut sh = lro(moto_port);
    let lro_path = sh.get_program().to_owned();
    let out = Command::new("sh")
        .args(["-c", &format!("{command} --limit 10")])
        .env("LRO", lro_path)
        .envs(sh.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: Value = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{text}"))
        .unwrap();
    assert!(
        first["id"].is_string() && first["title"].is_string(),
        "{text}"
    );
    let url = command.split_whitespace().nth(3).unwrap();
    let inspect = sh.args(["inspect", "--store", url, file]).output().unwrap();
    let shown = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        inspect.status.success() && shown.contains("12000"),
        "{shown}"
    );
    let rebuilt = lro(moto_port)
        .args(["rebuild", "--store", url, file])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&rebuilt.stdout).unwrap();
    assert_eq!(
        result["structuredContent"]["memories"]
            .as_array()
            .map(Vec::len),
        Some(12000)
    );
    // Without --store, one line that says what to give.
    let refused = lro(moto_port)
        .args(["extract", file, "--recipe", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("--store") && err.lines().count() == 1,
        "{err}"
    );
}

/// 100 concurrent calls, call i on replica i % 3 with its own token and
/// 60 + i records; replica 2 (`killed`) is killed with SIGKILL once 30 have
/// answered. Every answered call is committed: its file, read through
/// another live replica with its caller's token, has its own records, and
/// the next caller's token gets the refusal. Returns (call, file) of each.
async fn concurrent_calls_with_a_replica_killed(
    addrs: &[SocketAddr],
    killed: (Proc, SocketAddr),
) -> Vec<(u64, String)> {
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(128);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..100u64 {
        let url = format!("http://{}/auto/mcp", addrs[(i % 3) as usize]);
        let done = done_tx.clone();
        set.spawn(async move {
            let args = json!({"query": format!("q{i}"), "count": 60 + i});
            let answer = call(&url, &format!("user-{i}"), i, "recall_memories", args).await;
            let _ = done.send(()).await;
            (i, answer)
        });
    }
    drop(done_tx);
    for _ in 0..30 {
        done_rx.recv().await.expect("answers");
    }
    drop(killed); // SIGKILL
    let mut written = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (i, answer) = joined.unwrap();
        let Some(answer) = answer else {
            assert_eq!(i % 3, 2, "call {i} to a live replica got no answer");
            continue;
        };
        let (text, err) = text_of(&answer);
        if answer.get("error").is_some() || err {
            assert_eq!(i % 3, 2, "call {i} failed on a live replica: {answer:.300}");
            continue;
        }
        let d: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("call {i}: not a descriptor: {text:.300}"));
        assert_eq!(d["offloaded"], true, "call {i}");
        written.push((i, d["file_path"].as_str().unwrap().to_owned()));
    }
    let by_dead = written.iter().filter(|(i, _)| i % 3 == 2).count();
    assert!(
        written.len() >= 67 && by_dead >= 1,
        "{} written, {by_dead} by the killed replica",
        written.len()
    );
    // Everything that was answered is committed: each file, read through
    // another live replica with its caller's token, has its own records;
    // the next caller's token gets the refusal.
    let mut names = std::collections::BTreeSet::new();
    for (i, file) in &written {
        assert!(names.insert(file.clone()), "two calls got {file}");
        let other = addrs[((i + 1) % 2) as usize];
        let url = format!("http://{other}/auto/mcp");
        assert_eq!(
            count_via(&url, &format!("user-{i}"), file).await,
            Ok(60 + *i as usize),
            "call {i}"
        );
        let refused = count_via(&url, &format!("user-{}", i + 1), file).await;
        assert!(
            refused.is_err_and(|t| t.starts_with("no offloaded file")),
            "call {i}"
        );
    }
    written
}

/// A file of the 5-second route, written by one replica: read through the
/// others, refused everywhere once expired, swept from the bucket by the
/// replicas' cleanup tasks; `lro cleanup --store` then finds nothing to do
/// and fails on nothing.
async fn expiry_and_sweeps(addrs: &[SocketAddr], moto_port: u16, store: &str) {
    let url = |a: SocketAddr| format!("http://{a}/short/mcp");
    let args = json!({"query": "short", "count": 80});
    let v = call(&url(addrs[0]), "carol", 1, "recall_memories", args)
        .await
        .unwrap();
    let d: Value = serde_json::from_str(&text_of(&v).0).unwrap();
    let file = d["file_path"].as_str().unwrap().to_owned();
    let name = file.trim_start_matches("lro://files/").to_owned();
    assert_eq!(count_via(&url(addrs[1]), "carol", &file).await, Ok(80));
    let prefix = "fleet/route-short-mcp/";
    assert_eq!(keys(moto_port, prefix).await.len(), 2, "data and manifest");
    // Expired: refused by every replica (polled, at most 30 s).
    let mut refused = 0;
    for _ in 0..120 {
        refused = 0;
        for a in addrs {
            if count_via(&url(*a), "carol", &file).await.is_err() {
                refused += 1;
            }
        }
        if refused == addrs.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(refused, addrs.len(), "{name} not refused everywhere");
    // Swept by the replicas' cleanup tasks (every second; polled, 30 s).
    let mut left = Vec::new();
    for _ in 0..120 {
        left = keys(moto_port, prefix).await;
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(left.is_empty(), "not swept: {left:?}");
    let out = lro(moto_port)
        .args(["cleanup", "--store", &format!("{store}/route-short-mcp")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("deleted 0 of 0"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bad key file, store URL or unreachable store stops the gateway at
/// start with a message that names it.
#[test]
fn bad_store_and_key_flags_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.key");
    std::fs::write(&short, "too short\n").unwrap();
    let missing = dir.path().join("missing.key");
    let run = |extra: &[&str]| {
        // Port 9 on loopback: nothing listens (the store is unreachable).
        let out = lro(9)
            .args(["gateway", "--upstream", "http://127.0.0.1:9/mcp"])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{extra:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--binding-key-file", missing.to_str().unwrap()]);
    assert!(e.contains("--binding-key-file: cannot read"), "{e}");
    let e = run(&["--binding-key-file", short.to_str().unwrap()]);
    assert!(e.contains("at least 32 bytes, got 9"), "{e}");
    let e = run(&["--store", "ftp://user:secret@host/x"]);
    assert!(
        e.contains("\"ftp://host/x\"") && !e.contains("secret"),
        "{e}"
    );
    let e = run(&["--store", "s3://lro-fleet/x"]);
    assert!(
        e.contains("output store s3://lro-fleet/x: object store"),
        "{e}"
    );
}
