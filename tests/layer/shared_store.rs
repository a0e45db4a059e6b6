//! Two layers (two replicas, in process) sharing one object store
//! (`object_store`'s in-memory one, behind `BucketStore`, the code that
//! runs against S3) and one binding key, each in front of its own rmcp
//! server over loopback: a file one offloads is read, read as a resource
//! and listed through the other with the same bearer token; other tokens
//! get the one refusal from both; an expired file is refused by both and
//! swept by either's custodian (twice: no harm). `tests/command/fleet.rs`
//! does this with `lro gateway` processes and a real S3-compatible server.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tower_lro::cleanup::Custodian;
use tower_lro::config::OffloadConfig;
use tower_lro::offload::{BindingKey, OffloadLayer};
use tower_lro::store::BucketStore;

use crate::common;
use crate::common::mcp::{Mode, mcp_service, post_to, serve_mcp, tools_call};

/// A replica: a layer over the shared store, in front of its own server.
async fn replica(
    memory: &Arc<object_store::memory::InMemory>,
    ttl: Duration,
) -> (String, OffloadLayer) {
    let store = BucketStore::new(memory.clone(), "fleet").unwrap();
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().ttl(ttl).auto_cleanup(false))
        .store(store)
        .binding_key(BindingKey::from_bytes(&[9u8; 32]).unwrap())
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer.clone())).await;
    (format!("http://{addr}/mcp"), layer)
}

/// The JSON-RPC answer to `body` at `url` with a bearer `token`.
async fn rpc(url: &str, token: &str, body: Value) -> Value {
    let auth = format!("Bearer {token}");
    let resp = post_to(
        &reqwest::Client::new(),
        url,
        &body,
        &[("authorization", &auth)],
    )
    .await;
    let text = resp.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| common::mcp::sse_messages(&text).remove(0))
}

/// The bytes of the object `key` in `memory`.
async fn object(memory: &object_store::memory::InMemory, key: &str) -> Vec<u8> {
    use object_store::ObjectStoreExt;
    let key = object_store::path::Path::from(key);
    let got = memory.get(&key).await.unwrap();
    got.bytes().await.unwrap().to_vec()
}

/// `lro_extract` of `file` with `query` (slurped): the text and `isError`.
async fn extract(url: &str, token: &str, file: &str, query: &str) -> (String, bool) {
    let args = json!({"file_path": file, "query": query, "slurp": true});
    let v = rpc(url, token, tools_call(2, "lro_extract", args, None)).await;
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    (text, v["result"]["isError"] == true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_read_each_others_files_through_a_shared_store() {
    let memory = Arc::new(object_store::memory::InMemory::new());
    let (a, _la) = replica(&memory, Duration::from_secs(600)).await;
    let (b, _lb) = replica(&memory, Duration::from_secs(600)).await;
    let call = tools_call(
        1,
        "recall_memories",
        json!({"query": "x", "count": 120}),
        None,
    );
    let v = rpc(&a, "alice", call).await;
    let d: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let file = d["file_path"].as_str().unwrap().to_owned();
    assert!(file.starts_with("lro://files/atlatl-recall-"), "{file}");
    let name = file.trim_start_matches("lro://files/");
    assert_eq!(
        extract(&b, "alice", &file, "length").await,
        ("120\n".into(), false)
    );
    // The bare name works too.
    assert_eq!(extract(&b, "alice", name, "length").await.0, "120\n");
    let read = rpc(
        &b,
        "alice",
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": file}}),
    )
    .await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(text.lines().count(), 121, "header and records");
    let list = rpc(&b, "alice", tools_call(4, "lro_list", json!({}), None)).await;
    assert!(list.to_string().contains(name), "{list}");
    let (ra, ea) = extract(&a, "bob", &file, "length").await;
    let (rb, eb) = extract(&b, "bob", &file, "length").await;
    assert!(ea && eb && ra == rb, "{ra} / {rb}");
    let list = rpc(&b, "bob", tools_call(5, "lro_list", json!({}), None)).await;
    assert!(!list.to_string().contains(name), "{list}");

    // A replica whose files live 0 s: refused by both at once, swept by
    // either custodian, twice without harm.
    let (c, lc) = replica(&memory, Duration::ZERO).await;
    let v = rpc(
        &c,
        "carol",
        tools_call(6, "recall_memories", json!({"count": 90}), None),
    )
    .await;
    let d: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let expired = d["file_path"].as_str().unwrap().to_owned();
    for url in [&b, &c] {
        let (text, err) = extract(url, "carol", &expired, "length").await;
        assert!(err && text.starts_with("no offloaded file"), "{text}");
    }
    let custodian = Custodian::for_offloader(lc.offloader());
    let report = tokio::task::spawn_blocking(move || {
        let first = custodian.run_once();
        let second = custodian.run_once();
        (first, second)
    })
    .await
    .unwrap();
    let deleted: Vec<String> = report
        .0
        .deleted
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(deleted, [expired], "{:?}", report.0.errors);
    assert!(report.1.deleted.is_empty() && report.1.errors.is_empty());
    // Alice's file (600 s) is still there for both.
    assert_eq!(extract(&a, "alice", &file, "length").await.0, "120\n");
}

/// A file whose object in the store is not what its header says (one byte
/// changed, same size): a replica reading it whole refuses it as damaged,
/// with an `OffloadFileDamaged` event, and caches nothing; a first page,
/// which reads only the object's start, is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_object_is_refused_on_a_whole_read() {
    use object_store::ObjectStoreExt;
    use std::sync::Mutex;
    use tower_lro::offload::{EventHook, OffloadEvent};
    let memory = Arc::new(object_store::memory::InMemory::new());
    let (a, _la) = replica(&memory, Duration::from_secs(600)).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let events = seen.clone();
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().auto_cleanup(false))
        .store(BucketStore::new(memory.clone(), "fleet").unwrap())
        .binding_key(BindingKey::from_bytes(&[9u8; 32]).unwrap())
        .event_hook(EventHook::callback(move |e| {
            events.lock().unwrap().push(e.clone());
        }))
        .build();
    let b = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let b = format!("http://{b}/mcp");
    let call = tools_call(1, "recall_memories", json!({"count": 3000}), None);
    let v = rpc(&a, "alice", call).await;
    let d: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let file = d["file_path"].as_str().unwrap().to_owned();
    let key = format!("fleet/{}", file.trim_start_matches("lro://files/"));
    let mut bytes = object(&memory, &key).await;
    let at = bytes.len() - 5;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    let key = object_store::path::Path::from(key);
    memory.put(&key, bytes.into()).await.unwrap();

    let (text, err) = extract(&b, "alice", &file, "length").await;
    assert!(
        err && text.contains("is damaged") && text.contains("SHA-256"),
        "{text}"
    );
    let damaged = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, OffloadEvent::OffloadFileDamaged { .. }))
        .count();
    assert_eq!(damaged, 1);
    // resources/read fetches it whole into the cache: refused too.
    let read = rpc(
        &b,
        "alice",
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": file}}),
    )
    .await;
    assert!(read["error"].to_string().contains("damaged"), "{read}");
    // A first page reads the start only: served.
    let args = json!({"file_path": file, "recipe": 1, "limit": 5});
    let page = rpc(&b, "alice", tools_call(4, "lro_extract", args, None)).await;
    assert!(
        page["result"]["isError"] != true
            && page["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.lines().count() == 5),
        "{page}"
    );
}

/// A page deep in a file, of a query that makes one value of each object
/// record, is read from its record: the manifest indexes every 256th
/// record line, the reader jumps to the one before the page, and the page
/// says the total. The same page of a query the analysis cannot follow
/// reads from the start; breaking a record before the jump point shows
/// which read what.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_page_is_read_from_its_record() {
    use object_store::ObjectStoreExt;
    let memory = Arc::new(object_store::memory::InMemory::new());
    let (a, _la) = replica(&memory, Duration::from_secs(600)).await;
    let (b, _lb) = replica(&memory, Duration::from_secs(600)).await;
    let call = tools_call(1, "recall_memories", json!({"count": 3000}), None);
    let v = rpc(&a, "alice", call).await;
    let d: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let file = d["file_path"].as_str().unwrap().to_owned();
    let key = format!("fleet/{}", file.trim_start_matches("lro://files/"));
    let manifest: Value =
        serde_json::from_slice(&object(&memory, &format!("{key}.manifest")).await).unwrap();
    let lines = &manifest["lines"];
    assert_eq!(lines["records"], 3000, "{manifest}");
    assert_eq!(lines["stride"], 256);
    assert_eq!(lines["objects_only"], true);
    let offsets: Vec<usize> = lines["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(offsets.len(), 12);
    let data = object(&memory, &key).await;
    for (k, &at) in offsets.iter().enumerate() {
        let header_and_before = data[..at].iter().filter(|&&b| b == b'\n').count();
        assert_eq!(header_and_before, 1 + k * 256, "entry {k}");
    }

    let page_at = |url: &String, query: &'static str| {
        let (b, file) = (url.clone(), file.clone());
        async move {
            let args = json!({"file_path": file, "query": query, "offset": 2500, "limit": 5});
            let v = rpc(&b, "alice", tools_call(2, "lro_extract", args, None)).await;
            let blocks = v["result"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let text: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            (text.join("\n"), v["result"]["isError"] == true)
        }
    };
    let page = |query| page_at(&b, query);
    let (jumped, err) = page("{id, title}").await;
    // The writer jumps in the copy it kept.
    assert_eq!(page_at(&a, "{id, title}").await, (jumped.clone(), false));
    let (piped, _) = page_at(&b, "{id, title} | {id}").await;
    assert!(piped.contains("2501-2505 of 3000"), "{piped}");
    assert!(!err, "{jumped}");
    let (walked, err) = page("select(true) | {id, title}").await;
    assert!(!err, "{walked}");
    let values = |t: &str| -> Vec<String> { t.lines().take(5).map(str::to_owned).collect() };
    assert_eq!(values(&jumped), values(&walked));
    assert!(values(&jumped)[0].contains(r#""id":"#), "{jumped}");
    assert!(
        jumped.contains("2501-2505 of 3000 shown"),
        "the total is known: {jumped}"
    );
    assert!(walked.contains("2501-2505 shown"), "{walked}");

    // Record 10 broken (same length, not JSON): the jump never reads it.
    let mut broken = data.clone();
    let line_start = |n: usize| {
        let mut seen = 0;
        data.iter().position(|&b| {
            seen += usize::from(b == b'\n');
            seen == n + 1
        })
    };
    let (from, to) = (line_start(10).unwrap() + 1, line_start(11).unwrap());
    broken[from..to].fill(b'x');
    memory
        .put(&object_store::path::Path::from(key), broken.into())
        .await
        .unwrap();
    assert_eq!(page("{id, title}").await, (jumped, false));
    let (text, err) = page("select(true) | {id, title}").await;
    assert!(err, "a read from the start meets record 10: {text}");
}
