//! Object storage against the local directory, in the same run: the same
//! `OffloadLayer` in process, once writing into a directory, once into a
//! bucket of `moto_server` (an S3-compatible server, here on loopback, as
//! the fleet tests run it), offloading a 1 MB result and answering one
//! page of `lro_extract` (20 values of a custom query) of a file written
//! before (so from the local cache of the object store: one manifest `GET`
//! per page, as every page checks expiry and binding). A third row times
//! that `GET` alone: a page from the bucket should cost about the page from
//! the disk plus one such round trip.
//!
//! `moto_server` is taken from `tests/interop/.venv` (`tests/interop/setup.sh`
//! installs it) or `PATH`; without it the bench says so and measures
//! nothing. `LRO_BENCH_QUICK=1` shortens the runs.

#[path = "support/mod.rs"]
mod support;

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::Criterion;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::{Layer, ServiceExt};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;
use tower_lro::store::{BucketStore, Store};

use support::{fmt_ns, median_ns, record};

/// `moto_server`, killed on drop.
struct Moto(Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts moto on a free port and makes the bucket `bench`.
fn moto() -> Option<(Moto, u16)> {
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/.venv/bin/moto_server");
    let program = if venv.is_file() {
        venv
    } else {
        PathBuf::from("moto_server")
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new(program)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let moto = Moto(child);
    for _ in 0..100 {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let put = format!(
                "PUT /bench HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            s.write_all(put.as_bytes()).ok()?;
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            return answer.starts_with("HTTP/1.1 200").then_some((moto, port));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

fn request(body: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap()
}

/// The server: answers `answer` (JSON) to every request.
#[derive(Clone)]
struct Canned(Bytes);

impl<B> tower::Service<Request<B>> for Canned
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    /// Reads the request like a server (the layer learns the call as it is
    /// read), then answers.
    fn call(&mut self, req: Request<B>) -> Self::Future {
        let answer = self.0.clone();
        Box::pin(async move {
            let _ = req.into_body().collect().await;
            let mut resp = Response::new(Full::new(answer));
            resp.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            Ok(resp)
        })
    }
}

/// One request through `layer` in front of a server answering `answer`;
/// returns the response body.
async fn roundtrip(layer: &OffloadLayer, answer: Bytes, body: &str) -> Bytes {
    let resp = layer
        .layer(Canned(answer))
        .oneshot(request(body))
        .await
        .unwrap();
    resp.into_body().collect().await.unwrap().to_bytes()
}

/// The descriptor's `file_path` in an offloaded answer.
fn file_path(answer: &[u8]) -> String {
    let v: Value = serde_json::from_slice(answer).unwrap();
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not offloaded: {:.300}", String::from_utf8_lossy(answer)));
    let d: Value = serde_json::from_str(text).unwrap();
    d["file_path"]
        .as_str()
        .unwrap_or_else(|| panic!("no file_path: {text:.300}"))
        .to_owned()
}

fn main() {
    let Some((_moto, port)) = moto() else {
        eprintln!(
            "fleet bench skipped: moto_server does not run (tests/interop/setup.sh installs it)"
        );
        return;
    };
    // SAFETY: no other thread runs yet; the store reads these when built.
    unsafe {
        std::env::set_var("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"));
        std::env::set_var("AWS_ACCESS_KEY_ID", "bench");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "bench");
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::set_var("AWS_ALLOW_HTTP", "true");
    }
    let dir = tempfile::tempdir().unwrap();
    let bucket = Arc::new(BucketStore::from_url("s3://bench/fleet").unwrap());
    let local = OffloadLayer::builder()
        .config(
            OffloadConfig::default()
                .output_dir(dir.path())
                .auto_cleanup(false),
        )
        .build();
    let shared = OffloadLayer::builder()
        .config(OffloadConfig::default().auto_cleanup(false))
        .store(SharedStore(bucket.clone()))
        .build();
    let n = support::memories_for_bytes(1_000_000);
    let answer = Bytes::from(support::response(1, &support::memory_result(n)));
    let call = support::tools_call(1, "recall_memories", json!({"query": "x"}));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A file in each store, read once (the object store's cache is warm).
    let extract_of = |file: String| {
        support::tools_call(
            2,
            "lro_extract",
            json!({"file_path": file, "query": "{id, title}", "limit": 20}),
        )
    };
    let mut extracts = Vec::new();
    for layer in [&local, &shared] {
        let written = rt.block_on(roundtrip(layer, answer.clone(), &call));
        let extract = extract_of(file_path(&written));
        let page = rt.block_on(roundtrip(layer, Bytes::new(), &extract));
        assert!(
            !String::from_utf8_lossy(&page).contains("isError"),
            "{page:?}"
        );
        extracts.push(extract);
    }
    let name = file_path(&rt.block_on(roundtrip(&shared, answer.clone(), &call)))
        .trim_start_matches("lro://files/")
        .to_owned();
    // A 100 MB result, offloaded once into each store; its first page
    // (recipe 1) read from the directory, by the replica that wrote it
    // (its kept upload) and by another replica (ranged GETs, every time:
    // ranged reads are not cached).
    let other = OffloadLayer::builder()
        .config(OffloadConfig::default().auto_cleanup(false))
        .store(SharedStore(Arc::new(
            BucketStore::from_url("s3://bench/fleet").unwrap(),
        )))
        .build();
    let records = support::memories_for_bytes(100_000_000);
    let big = Bytes::from(support::response(1, &support::memory_result(records)));
    let first_page =
        |file: &str| support::tools_call(3, "lro_extract", json!({"file_path": file, "recipe": 1}));
    // A page at 90 % of the file, of recipe 4 (`{id, title, namespace}`:
    // one value per record, so a shared store's index lets it start there).
    let deep_page = |file: &str| {
        let args = json!({"file_path": file, "recipe": 4, "offset": records * 9 / 10, "limit": 20});
        support::tools_call(3, "lro_extract", args)
    };
    let big_local = file_path(&rt.block_on(roundtrip(&local, big.clone(), &call)));
    let big_shared = file_path(&rt.block_on(roundtrip(&shared, big.clone(), &call)));
    let (deep_local, deep_shared) = (deep_page(&big_local), deep_page(&big_shared));
    let (big_local, big_shared) = (first_page(&big_local), first_page(&big_shared));
    drop(big);

    let quick = support::quick();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(if quick { 300 } else { 1000 }))
        .measurement_time(Duration::from_secs(if quick { 2 } else { 5 }))
        .configure_from_args();
    let mut group = c.benchmark_group("fleet");
    for (store, layer, extract) in [
        ("local", &local, &extracts[0]),
        ("s3", &shared, &extracts[1]),
    ] {
        let offload = format!("offload 1 MB / {store}");
        group.bench_function(&offload, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(rt.block_on(roundtrip(layer, answer.clone(), &call)));
                }
                let took = start.elapsed();
                record(&offload, iters, took);
                took
            })
        });
        let page = format!("extract page / {store}");
        group.bench_function(&page, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(rt.block_on(roundtrip(layer, Bytes::new(), extract)));
                }
                let took = start.elapsed();
                record(&page, iters, took);
                took
            })
        });
    }
    for (case, layer, extract) in [
        ("first page of 100 MB / local", &local, &big_local),
        ("first page of 100 MB / s3 writer", &shared, &big_shared),
        (
            "first page of 100 MB / s3 other replica",
            &other,
            &big_shared,
        ),
        ("page deep in 100 MB / local", &local, &deep_local),
        ("page deep in 100 MB / s3 writer", &shared, &deep_shared),
        (
            "page deep in 100 MB / s3 other replica",
            &other,
            &deep_shared,
        ),
    ] {
        group.bench_function(case, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    let page = rt.block_on(roundtrip(layer, Bytes::new(), extract));
                    assert!(!String::from_utf8_lossy(&page).contains("isError"));
                    std::hint::black_box(page);
                }
                let took = start.elapsed();
                record(case, iters, took);
                took
            })
        });
    }
    let get = "manifest GET (one round trip)";
    group.bench_function(get, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let shared = bucket.shared().unwrap();
                std::hint::black_box(shared.manifest(&name).unwrap());
            }
            let took = start.elapsed();
            record(get, iters, took);
            took
        })
    });
    group.finish();
    summary(get);
}

/// The bench's bucket store, shared with the layer (a layer takes a store
/// by value).
struct SharedStore(Arc<BucketStore>);

impl Store for SharedStore {
    fn write(&self, name: &str, contents: &[u8]) -> Result<PathBuf, tower_lro::store::StoreError> {
        self.0.write(name, contents)
    }
    fn write_from(
        &self,
        name: &str,
        head: &[u8],
        body: &mut dyn Read,
    ) -> Result<PathBuf, tower_lro::store::StoreError> {
        self.0.write_from(name, head, body)
    }
    fn dir(&self) -> &std::path::Path {
        self.0.dir()
    }
    fn check(&self) -> Result<(), tower_lro::store::StoreError> {
        self.0.check()
    }
    fn remove(&self, name: &str) -> Result<bool, tower_lro::store::StoreError> {
        self.0.remove(name)
    }
    fn shared(&self) -> Option<&dyn tower_lro::store::SharedFiles> {
        self.0.shared()
    }
}

fn summary(get: &str) {
    let rt = median_ns(get).unwrap_or(f64::NAN);
    let mut rows = Vec::new();
    for (case, s3_case) in [
        ("offload 1 MB", "s3"),
        ("extract page", "s3"),
        ("first page of 100 MB", "s3 writer"),
        ("first page of 100 MB", "s3 other replica"),
        ("page deep in 100 MB", "s3 writer"),
        ("page deep in 100 MB", "s3 other replica"),
    ] {
        let (Some(local), Some(s3)) = (
            median_ns(&format!("{case} / local")),
            median_ns(&format!("{case} / {s3_case}")),
        ) else {
            continue;
        };
        rows.push(vec![
            format!("{case} ({s3_case})"),
            fmt_ns(local),
            fmt_ns(s3),
            format!("{:.2}x", s3 / local),
            if s3 >= local {
                fmt_ns(s3 - local)
            } else {
                format!("-{}", fmt_ns(local - s3))
            },
            format!("{:.1}", (s3 - local) / rt),
        ]);
    }
    support::print_table(
        "fleet",
        &format!(
            "fleet: object storage (moto_server on loopback) vs the local directory, same run; one manifest GET = {}",
            fmt_ns(rt)
        ),
        &[
            "case",
            "local dir",
            "object store",
            "ratio",
            "difference",
            "difference in round trips",
        ],
        &rows,
    );
}
