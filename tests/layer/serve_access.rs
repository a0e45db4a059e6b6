//! Serving offloaded data through the layer: tenants bound by a partition
//! function, and hostile or careless queries (each a clear tool error
//! within the extractor's limits, while other requests are served).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::mcp::{Mode, mcp_service, post, serve_mcp, tools_call};
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::extract::ExtractLimits;
use tower_lro::offload::OffloadLayer;

/// The JSON-RPC answer to `body` posted with `headers` (JSON answers).
async fn answer(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> Value {
    let r = tokio::time::timeout(Duration::from_secs(30), post(addr, body, headers))
        .await
        .expect("answered in time");
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// The file path of the descriptor in a JSON-RPC answer.
fn file_path(answer: &Value) -> String {
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let d: Value = serde_json::from_str(text).unwrap();
    assert_eq!(d["offloaded"], true);
    d["file_path"].as_str().unwrap().to_owned()
}

fn extract(id: u64, file: &str, query: &str) -> Value {
    tools_call(
        id,
        "lro_extract",
        json!({"file_path": file, "query": query}),
        None,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_bound_to_the_tenant_the_partition_names() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir.path()))
        .partition(|parts| {
            let tenant = parts.headers.get("x-tenant")?;
            tenant.to_str().ok().map(str::to_owned)
        })
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let recall = tools_call(1, "recall_memories", json!({"count": 200}), None);
    let file = file_path(&answer(addr, &recall, &[("x-tenant", "acme")]).await);
    let by = |tenant: Option<&'static str>| {
        let file = file.clone();
        async move {
            let headers: Vec<(&str, &str)> = tenant.map(|t| ("x-tenant", t)).into_iter().collect();
            let v = answer(addr, &extract(2, &file, ".id"), &headers).await;
            v["result"]["isError"] == true
        }
    };
    assert!(!by(Some("acme")).await, "the tenant reads its file");
    assert!(by(Some("globex")).await, "another tenant does not");
    assert!(by(None).await, "nor a request without a tenant");
    let list = tools_call(3, "lro_list", json!({}), None);
    let listed = |v: Value| -> usize {
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let l: Value = serde_json::from_str(&text).unwrap();
        l["files"].as_array().unwrap().len()
    };
    assert_eq!(
        listed(answer(addr, &list, &[("x-tenant", "acme")]).await),
        1
    );
    assert_eq!(
        listed(answer(addr, &list, &[("x-tenant", "globex")]).await),
        0
    );
}

/// Without sessions or tenants the unguessable name is the capability:
/// anyone who has it reads the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sessions_the_file_name_is_the_capability() {
    let dir = tempfile::tempdir().unwrap();
    let layer = OffloadLayer::new(OffloadConfig::default().output_dir(dir.path()));
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let recall = tools_call(1, "recall_memories", json!({"count": 200}), None);
    let file = file_path(&answer(addr, &recall, &[]).await);
    let v = answer(addr, &extract(2, &file, ".id"), &[]).await;
    assert!(v["result"].get("isError").is_none(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_queries_get_tool_errors_and_others_are_served_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ExtractLimits::default()
        .time_limit(Duration::from_millis(1500))
        .max_alloc_bytes(32 << 20)
        .max_output_bytes(4 << 20)
        .max_counted_lines(100_000)
        .max_concurrent(2)
        .queue_wait(Duration::from_millis(500));
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir.path()))
        .extract_limits(limits.clone())
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let recall = tools_call(1, "recall_memories", json!({"count": 200}), None);
    let file = file_path(&answer(addr, &recall, &[]).await);
    let hostile = [
        ("def f: f; f", "did not finish"),
        // The depth bound, or (on a loaded machine) the time bound first.
        ("def f: 1 + f; f", "recursed|did not finish"),
        ("repeat(.)", ""),
        ("range(1e12)", ""),
        ("reduce range(64) as $_ (\"x\"; . + .)", "bytes of values"),
        ("[range(1e7)] | tostring", ""),
        ("\"x\" * 1e12", ""),
        ("tostream", "jq syntax"),
        ("env", "jq syntax"),
    ];
    // Each bounded by what the extractor enforces (time limit, recursion,
    // allocation, the page's size), seen in the answer; `answer` bounds the
    // wait itself (30 s), so a hang fails the test.
    for (query, why) in hostile {
        let v = answer(addr, &extract(9, &file, query), &[]).await;
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let trailer = v["result"]["content"][1]["text"]
            .as_str()
            .unwrap_or_default();
        // A tool error, or (for endless generators) a first page that stops
        // at the threshold and says more follows: never a flood, never a hang.
        let bounded = v["result"]["isError"] == true || trailer.contains("More follows");
        assert!(bounded, "{query}: {v:.300}");
        assert!(
            text.len() < 16 << 10,
            "{query}: {} bytes answered",
            text.len()
        );
        if !why.is_empty() {
            assert!(why.split('|').any(|w| text.contains(w)), "{query}: {text}");
        }
    }
    // 20 hostile calls at once: each answered (a tool error: too busy, or
    // stopped at the time limit) while a plain tool call is served. A
    // server of its own, whose queries run 4 s, so that the order of the
    // answers below does not depend on how loaded the machine is.
    let layer = OffloadLayer::builder()
        .config(OffloadConfig::default().output_dir(dir.path()))
        .extract_limits(limits.time_limit(Duration::from_secs(4)))
        .build();
    let addr = serve_mcp(mcp_service(Mode::StatelessJson), Some(layer)).await;
    let (done, mut answers) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..20 {
        let body = extract(100 + i, &file, "def f: f; f");
        let done = done.clone();
        tokio::spawn(async move {
            let v = answer(addr, &body, &[]).await;
            let _ = done.send(v);
        });
    }
    drop(done);
    let mut texts = Vec::new();
    async fn next(answers: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> String {
        let v = tokio::time::timeout(Duration::from_secs(60), answers.recv())
            .await
            .expect("every call answered")
            .expect("an answer");
        assert_eq!(v["result"]["isError"], true, "{v}");
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }
    // A first "too many queries": every slot is taken now, by queries that
    // run until their time limit.
    while !texts
        .iter()
        .any(|t: &String| t.contains("too many queries"))
    {
        texts.push(next(&mut answers).await);
    }
    let status = answer(addr, &tools_call(2, "status", json!({}), None), &[]).await;
    assert_eq!(
        status["result"]["content"][0]["text"],
        "ok: 3 workers, 0 errors"
    );
    // Served while the slots were still taken: no query had reached its
    // time limit yet when the status answer came.
    while let Ok(v) = answers.try_recv() {
        texts.push(
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert!(
        !texts.iter().any(|t| t.contains("did not finish")),
        "the status call waited for the hostile queries: {texts:?}"
    );
    while texts.len() < 20 {
        texts.push(next(&mut answers).await);
    }
    let mut busy = 0;
    for text in &texts {
        busy += usize::from(text.contains("too many queries"));
        assert!(
            text.contains("too many queries") || text.contains("did not finish"),
            "{text}"
        );
    }
    assert!(
        busy >= 10,
        "only 2 run at once: {busy} of 20 were told to retry"
    );
}
