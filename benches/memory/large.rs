//! Results of 600 MB and 1 GB through the layer, made on the fly (never
//! held by the bench): peak heap (counting allocator) and peak RSS above
//! the start, the total time, the time from the upstream's last byte to the
//! client's descriptor, and the throughput. `LRO_MEM_ONLY=large`: this
//! table alone.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tower::{Layer, ServiceExt};
use tower_lro::config::OffloadConfig;
use tower_lro::offload::OffloadLayer;

/// The cases: (JSON or event stream, MB).
pub(crate) const CASES: [&str; 4] = [
    "large:json:600",
    "large:sse:600",
    "large:json:1000",
    "large:sse:1000",
];

/// Records per chunk (about 64 KiB).
const PER_CHUNK: usize = 700;

/// A tools/call response of log records in one text block (a JSON array in
/// an escaped string), made chunk by chunk; as one event of an event
/// stream when `sse`. Notes when its last byte is taken.
struct Generated {
    next: usize,
    records: usize,
    stage: u8,
    sse: bool,
    last_byte: Arc<Mutex<Option<Instant>>>,
}

fn record(n: usize, out: &mut String) {
    use std::fmt::Write;
    let level = ["info", "warn", "error", "debug"][n % 4];
    let _ = write!(
        out,
        "{{\\\"ts\\\":{},\\\"level\\\":\\\"{level}\\\",\\\"service\\\":\\\"svc-{}\\\",\\\"msg\\\":\\\"request {n} served in {} ms\\\"}}",
        1_700_000_000 + n,
        n % 17,
        n % 997
    );
}

impl Body for Generated {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let chunk = match self.stage {
            0 => {
                self.stage = 1;
                let head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"[";
                if self.sse {
                    format!("event: message\ndata: {head}")
                } else {
                    head.to_owned()
                }
            }
            1 => {
                let mut s = String::with_capacity(PER_CHUNK * 120);
                let end = (self.next + PER_CHUNK).min(self.records);
                for n in self.next..end {
                    if n > 0 {
                        s.push(',');
                    }
                    record(n, &mut s);
                }
                self.next = end;
                if end == self.records {
                    self.stage = 2;
                }
                s
            }
            2 => {
                self.stage = 3;
                // The upstream's last byte goes out now (an event stream is
                // read no further until the event is dealt with).
                *self.last_byte.lock().unwrap() = Some(Instant::now());
                let tail = "]\"}]}}";
                if self.sse {
                    format!("{tail}\n\n")
                } else {
                    tail.to_owned()
                }
            }
            _ => return Poll::Ready(None),
        };
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }
}

/// One case (`large:json:600`): prints its row.
pub(crate) fn run(case: &str) {
    let mut parts = case.split(':').skip(1);
    let sse = parts.next() == Some("sse");
    let mb: usize = parts.next().and_then(|m| m.parse().ok()).unwrap_or(600);
    // About 104 bytes a record, escaped.
    let records = mb * 1_000_000 / 104;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let last_byte = Arc::new(Mutex::new(None));
    let lb = last_byte.clone();
    let inner = tower::service_fn(
        move |req: Request<tower_lro::offload::RequestBody<Full<Bytes>>>| {
            let lb = lb.clone();
            async move {
                let _ = req.into_body().collect().await;
                let mut r = Response::new(Generated {
                    next: 0,
                    records,
                    stage: 0,
                    sse,
                    last_byte: lb,
                });
                let kind = if sse {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                r.headers_mut()
                    .insert(http::header::CONTENT_TYPE, kind.parse().unwrap());
                Ok::<_, Infallible>(r)
            }
        },
    );
    let svc = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path())).layer(inner);
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(super::support::tools_call(
            1,
            "query_logs",
            json!({}),
        ))))
        .unwrap();
    let rss_base = super::reset_peak_rss();
    let heap_base = super::live();
    super::PEAK.store(heap_base, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let out = rt.block_on(async {
        let resp = svc.oneshot(req).await.unwrap();
        resp.into_body().collect().await.unwrap().to_bytes()
    });
    let end = Instant::now();
    let heap_peak = super::PEAK.load(std::sync::atomic::Ordering::Relaxed) - heap_base;
    let rss_peak = super::peak_rss().saturating_sub(rss_base);
    assert!(
        out.len() < 64 * 1024,
        "not offloaded ({} bytes back)",
        out.len()
    );
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum::<u64>();
    let last = last_byte
        .lock()
        .unwrap()
        .expect("the body was read to its end");
    let total = end - start;
    let tail = end - last;
    let size = mb as f64 * 1e6;
    println!(
        "ROW\t{}\t{:.0} MB\t{:.1} MB\t{:.1} MB\t{:.2} s\t{:.2} s\t{:.0} MB/s\t{:.0} MB/s\t{}",
        if sse { "layer, SSE" } else { "layer, JSON" },
        size / 1e6,
        heap_peak as f64 / 1e6,
        rss_peak as f64 / 1e6,
        total.as_secs_f64(),
        tail.as_secs_f64(),
        size / 1e6 / total.as_secs_f64(),
        file as f64 / 1e6 / tail.as_secs_f64(),
        if rss_peak <= 64 << 20 {
            "≤ 64 MiB (met)"
        } else {
            "≤ 64 MiB (MISSED)"
        },
    );
}
