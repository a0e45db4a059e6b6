//! `HistoryOffloadLayer` in front of a stand-in chat endpoint
//! (`examples/support/chat_endpoint.rs`, axum on 127.0.0.1), driven with a
//! real HTTP client (reqwest): the endpoint sees rewritten histories in the
//! three formats; other requests and streamed answers pass untouched; every
//! kind of trouble on the layer's side sends the original body on, with an
//! event. No real model is involved.

use crate::chat_endpoint;
#[path = "../../examples/support/chat_history.rs"]
mod chat_history;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chat_endpoint::{Endpoint, Received, serve};
use serde_json::{Value, json};
use tower_lro::history::{
    EndpointSummarizer, FallbackReason, HistoryConfig, HistoryEvent, HistoryOffloadLayer,
    HistoryOffloadLayerBuilder, HistoryOffloader, SummaryMode,
};

/// What a test runs: the endpoint behind the layer, the layer's events and
/// its store.
struct Gateway {
    addr: SocketAddr,
    endpoint: Endpoint,
    events: Arc<Mutex<Vec<HistoryEvent>>>,
    client: reqwest::Client,
    store: tempfile::TempDir,
    layer: HistoryOffloadLayer,
}

impl Gateway {
    /// The stand-in endpoint behind a compacting layer (see [`compacting`]).
    async fn compacting() -> Gateway {
        Gateway::with(|store| HistoryOffloadLayer::builder(compacting(store))).await
    }

    /// The stand-in endpoint behind a compressing layer whose summaries come
    /// from `summarizer_endpoint` (served on 127.0.0.1), set up by
    /// `configure`.
    async fn compressing(
        summarizer_endpoint: axum::Router,
        configure: impl FnOnce(HistoryOffloadLayerBuilder) -> HistoryOffloadLayerBuilder,
    ) -> Gateway {
        let base = format!("http://{}/v1", serve(summarizer_endpoint).await);
        let summarizer = Arc::new(EndpointSummarizer::new(&base, "m").unwrap());
        Gateway::with(|store| {
            let config = HistoryConfig::default()
                .mode(SummaryMode::Compress)
                .max_total_tokens(2_000)
                .store_dir(store);
            configure(HistoryOffloadLayer::builder(
                HistoryOffloader::new(config).with_summarizer(summarizer),
            ))
        })
        .await
    }

    /// The stand-in endpoint behind the layer `builder` makes for a fresh
    /// store (its event hook recording).
    async fn with(builder: impl FnOnce(&Path) -> HistoryOffloadLayerBuilder) -> Gateway {
        let store = tempfile::tempdir().unwrap();
        let builder = builder(store.path());
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let layer = builder
            .event_hook(move |e| seen.lock().unwrap().push(e.clone()))
            .build();
        let endpoint = Endpoint::new(None);
        let addr = serve(endpoint.router().layer(layer.clone())).await;
        Gateway {
            addr,
            endpoint,
            events,
            client: reqwest::Client::new(),
            store,
            layer,
        }
    }

    async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client
            .post(format!("http://{}{path}", self.addr))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("the gateway answers")
    }

    fn last_received(&self) -> Received {
        self.endpoint
            .received()
            .pop()
            .expect("the endpoint got the request")
    }

    fn events(&self) -> Vec<HistoryEvent> {
        self.events.lock().unwrap().clone()
    }

    /// The one event of the one request sent, which must have fallen back.
    fn fallback_reason(&self) -> FallbackReason {
        match self.events().as_slice() {
            [HistoryEvent::FellBack { reason, .. }] => reason.clone(),
            other => panic!("expected one FellBack event, got {other:?}"),
        }
    }
}

/// A compacting engine writing to `store`: tool messages over 500 tokens
/// are offloaded once the history passes 2,000 tokens.
fn compacting(store: &Path) -> HistoryOffloader {
    let config = HistoryConfig::default()
        .mode(SummaryMode::Compact)
        .max_total_tokens(2_000)
        .max_tool_message_tokens(500)
        .store_dir(store)
        .chat_id("layer-test");
    HistoryOffloader::new(config)
}

/// A 12-turn Chat Completions request with four tool answers of 6 KB.
fn history_body() -> Vec<u8> {
    let body = chat_history::request_body("/v1/chat/completions", 12, 4, 6_000);
    serde_json::to_vec(&body).unwrap()
}

/// How many files `dir` holds.
fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// The messages of a chat request body, whatever its format.
fn messages(body: &Value) -> &Vec<Value> {
    body.get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)
        .expect("a history")
}

#[tokio::test]
async fn the_endpoint_sees_the_rewritten_history_in_each_format() {
    for path in ["/v1/chat/completions", "/v1/messages", "/v1/responses"] {
        let gateway = Gateway::compacting().await;
        let sent = chat_history::request_body(path, 12, 4, 6_000);
        let raw = serde_json::to_vec(&sent).unwrap();
        let answer = gateway.post(path, raw.clone()).await;
        assert_eq!(answer.status(), 200, "{path}");
        let answer: Value = answer.json().await.unwrap();
        assert!(
            answer["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .starts_with("stand-in answer")
        );

        let received = gateway.last_received();
        // Three of the four large answers compacted; the newest turn's, not
        // yet seen by the model, kept.
        assert!(
            received.body.len() < raw.len() * 2 / 3,
            "{path}: {} of {}",
            received.body.len(),
            raw.len()
        );
        let length = received.headers["content-length"].to_str().unwrap();
        assert_eq!(length, received.body.len().to_string(), "{path}");
        let got = received.json();
        let (before, after) = (messages(&sent), messages(&got));
        assert_eq!(
            after.len(),
            before.len(),
            "{path}: compaction keeps every message"
        );
        assert_eq!(
            after.last(),
            before.last(),
            "{path}: the newest message is kept"
        );
        assert_eq!(
            got["model"], sent["model"],
            "{path}: other members are kept"
        );

        let events = gateway.events();
        let [
            HistoryEvent::Rewritten {
                report,
                bytes_before,
                bytes_after,
                ..
            },
        ] = events.as_slice()
        else {
            panic!("{path}: expected one Rewritten event, got {events:?}");
        };
        assert_eq!(
            (*bytes_before, *bytes_after),
            (raw.len(), received.body.len())
        );
        assert!(report.tokens_after < report.tokens_before);
        assert_eq!(
            gateway.layer.held_bytes(),
            0,
            "{path}: the body's lease is given back"
        );
        assert_eq!(
            report.files_written.len(),
            4,
            "{path}: one file per large tool answer before the newest turn, and the checkpoint"
        );
        for file in &report.files_written {
            assert!(file.starts_with(gateway.store.path()), "{}", file.display());
            let name = file.file_name().unwrap().to_str().unwrap();
            if name.starts_with("history-checkpoint-") {
                continue;
            }
            assert!(
                String::from_utf8_lossy(&received.body).contains(name),
                "{path}: the pointer names {name}"
            );
        }
    }
}

#[tokio::test]
async fn a_resent_history_gets_the_same_rewrite() {
    let gateway = Gateway::compacting().await;
    let raw = history_body();
    gateway.post("/v1/chat/completions", raw.clone()).await;
    gateway.post("/v1/chat/completions", raw).await;
    let received = gateway.endpoint.received();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].body, received[1].body,
        "byte for byte, for the provider's prompt cache"
    );
}

#[tokio::test]
async fn other_requests_and_small_histories_pass_untouched() {
    let gateway = Gateway::compacting().await;
    let models = gateway
        .client
        .get(format!("http://{}/v1/models", gateway.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    assert_eq!(
        models.json::<Value>().await.unwrap()["data"][0]["id"],
        "stand-in"
    );
    // Not JSON, not a chat path: never read, no event.
    let other = gateway
        .client
        .post(format!("http://{}/v1/other", gateway.addr))
        .header("content-type", "text/plain")
        .body("plain text")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    // JSON on another path: read, found to be no chat request, sent on.
    let embeddings = gateway
        .post("/v1/completions", r#"{"model":"m","prompt":"hello"}"#)
        .await;
    assert_eq!(embeddings.status(), 404);
    assert!(gateway.events().is_empty(), "{:?}", gateway.events());

    let small = br#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}"#;
    gateway.post("/v1/chat/completions", &small[..]).await;
    assert_eq!(gateway.last_received().body, &small[..], "byte for byte");
    assert!(matches!(
        gateway.events().as_slice(),
        [HistoryEvent::Unchanged { .. }]
    ));
    assert_eq!(files_in(gateway.store.path()), 0);
}

#[tokio::test]
async fn a_streamed_answer_flows_chunk_by_chunk() {
    let gateway = Gateway::compacting().await;
    let mut body = chat_history::request_body("/v1/chat/completions", 12, 4, 6_000);
    body["stream"] = json!(true);
    let mut answer = gateway.post("/v1/chat/completions", body.to_string()).await;
    assert_eq!(answer.headers()["content-type"], "text/event-stream");
    // The endpoint holds the rest of its stream until released: the first
    // event arrives before the stream ends, so nothing buffered it.
    let first = answer.chunk().await.unwrap().expect("a first event");
    assert!(String::from_utf8_lossy(&first).contains("\"first\""));
    gateway.endpoint.release_stream();
    let mut rest = Vec::new();
    for _ in 0..16 {
        match answer.chunk().await.unwrap() {
            Some(chunk) => rest.extend_from_slice(&chunk),
            None => break,
        }
    }
    let rest = String::from_utf8(rest).unwrap();
    assert!(
        rest.contains("stand-in answer") && rest.ends_with("data: [DONE]\n\n"),
        "{rest}"
    );
    assert!(matches!(
        gateway.events().as_slice(),
        [HistoryEvent::Rewritten { .. }]
    ));
}

#[tokio::test]
async fn an_oversized_body_goes_on_untouched() {
    let gateway = Gateway::with(|store| {
        HistoryOffloadLayer::builder(compacting(store)).max_body_bytes(10_000)
    })
    .await;
    let raw = history_body();
    // Announced by its Content-Length: never read.
    gateway.post("/v1/chat/completions", raw.clone()).await;
    assert_eq!(gateway.last_received().body, raw);
    assert_eq!(
        gateway.fallback_reason(),
        FallbackReason::TooLarge { limit: 10_000 }
    );
    // Chunked, without a length: read up to the cap, then played back.
    gateway.events.lock().unwrap().clear();
    let (tx, rx) = tokio::sync::mpsc::channel(raw.len() / 4_096 + 1);
    for chunk in raw.chunks(4_096) {
        tx.try_send(Ok::<_, std::io::Error>(chunk.to_vec()))
            .unwrap();
    }
    drop(tx);
    let stream = reqwest::Body::wrap_stream(chat_endpoint::ReceiverStream(rx));
    gateway.post("/v1/chat/completions", stream).await;
    assert_eq!(gateway.last_received().body, raw);
    assert_eq!(
        gateway.fallback_reason(),
        FallbackReason::TooLarge { limit: 10_000 }
    );
    assert_eq!(files_in(gateway.store.path()), 0);
}

#[tokio::test]
async fn a_body_past_the_held_bytes_cap_goes_on_untouched() {
    // Each body fits `max_body_bytes`, but not what the layer may hold at once.
    let gateway = Gateway::with(|store| {
        HistoryOffloadLayer::builder(compacting(store)).max_held_bytes(10_000)
    })
    .await;
    let raw = history_body();
    gateway.post("/v1/chat/completions", raw.clone()).await;
    assert_eq!(gateway.last_received().body, raw);
    assert_eq!(
        gateway.fallback_reason(),
        FallbackReason::BufferCap { limit: 10_000 }
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_goes_on_untouched() {
    let gateway = Gateway::compacting().await;
    let answer = gateway
        .post("/v1/chat/completions", "{\"messages\": [tru")
        .await;
    assert_eq!(
        answer.status(),
        400,
        "the endpoint judged the original body"
    );
    assert_eq!(gateway.last_received().body, "{\"messages\": [tru");
    assert!(matches!(
        gateway.fallback_reason(),
        FallbackReason::Rewrite(_)
    ));
}

#[tokio::test]
async fn a_compressed_body_goes_on_untouched() {
    let gateway = Gateway::compacting().await;
    let gzip: &[u8] = &[
        0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03, 0xab, 0xae, 0x05, 0, 0x43, 0xbf, 0xa6, 0xa3,
        0x02, 0, 0, 0,
    ];
    gateway
        .client
        .post(format!("http://{}/v1/chat/completions", gateway.addr))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip)
        .send()
        .await
        .unwrap();
    let received = gateway.last_received();
    assert_eq!(received.body, gzip);
    assert_eq!(received.headers["content-encoding"], "gzip");
    assert_eq!(
        gateway.fallback_reason(),
        FallbackReason::Encoded("gzip".into())
    );
}

#[tokio::test]
async fn a_failing_summarizer_sends_the_original_body() {
    // The summarizer's endpoint answers every request with a 500.
    let failing = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
    );
    let gateway = Gateway::compressing(failing, |builder| builder).await;
    let raw = history_body();
    let answer = gateway.post("/v1/chat/completions", raw.clone()).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(gateway.last_received().body, raw, "byte for byte");
    match gateway.fallback_reason() {
        FallbackReason::Rewrite(message) => assert!(message.contains("500"), "{message}"),
        other => panic!("expected a rewrite failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_rewrite_over_its_time_sends_the_original_body() {
    // The summarizer's endpoint never answers in time.
    let slow = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            "late"
        }),
    );
    let timeout = std::time::Duration::from_millis(300);
    let gateway = Gateway::compressing(slow, |builder| builder.rewrite_timeout(timeout)).await;
    let raw = history_body();
    let answer = gateway.post("/v1/chat/completions", raw.clone()).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(gateway.last_received().body, raw, "byte for byte");
    assert_eq!(gateway.fallback_reason(), FallbackReason::TimedOut(timeout));
}
