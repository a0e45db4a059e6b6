//! Store faults under `lro gateway --store s3://…`: a refused manifest, a
//! store that stops mid-write, one too slow to answer, injected by a raw
//! HTTP proxy on loopback in front of `moto_server`. Each gives the spec's
//! fallback, leaves nothing visible, and the gateway goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::fleet::{BUCKET, call, count_via, http, keys, moto, replica, text_of};
use crate::common;
use crate::common::mcp::{Mode, mcp_service, serve_mcp};

/// What the fault proxy does with each request.
const PASS: u8 = 0;
/// 403 to the creation of a manifest (the data goes through).
const FORBID_MANIFEST: u8 = 1;
/// Reads a data `PUT`'s head, then drops the connection and refuses every
/// later one: the store stopped mid-write.
const DIE_ON_DATA: u8 = 2;
/// Refuses every connection (the store is down).
const DOWN: u8 = 3;
/// Answers nothing for 10 s (the client's timeout is 2 s).
const SLOW: u8 = 4;

/// A raw HTTP proxy in front of moto, one request per connection (its
/// answers say `Connection: close`), misbehaving as `mode` says.
async fn fault_proxy(moto_port: u16, mode: Arc<AtomicU8>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let mode = mode.clone();
            tokio::spawn(async move {
                let _ = proxy_one(client, moto_port, &mode).await;
            });
        }
    });
    port
}

/// Serves one request of `client` as the mode says.
async fn proxy_one(
    mut client: tokio::net::TcpStream,
    moto_port: u16,
    mode: &AtomicU8,
) -> std::io::Result<()> {
    if mode.load(Ordering::SeqCst) == DOWN {
        return Ok(());
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 << 10 || client.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let first = text.lines().next().unwrap_or_default().to_owned();
    let put = first.starts_with("PUT ") || first.starts_with("POST ");
    let length: usize = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    match mode.load(Ordering::SeqCst) {
        FORBID_MANIFEST if put && first.contains(".manifest") => {
            let body = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
            let answer = format!(
                "HTTP/1.1 403 Forbidden\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            return client.write_all(answer.as_bytes()).await;
        }
        DIE_ON_DATA if put && !first.contains(".manifest") => {
            mode.store(DOWN, Ordering::SeqCst);
            return Ok(());
        }
        SLOW => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            return Ok(());
        }
        _ => {}
    }
    let mut body = vec![0u8; length];
    client.read_exact(&mut body).await?;
    let mut upstream = tokio::net::TcpStream::connect(("127.0.0.1", moto_port)).await?;
    let head: String = text
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\r\n"))
        .collect();
    upstream
        .write_all(format!("{head}connection: close\r\n\r\n").as_bytes())
        .await?;
    upstream.write_all(&body).await?;
    tokio::io::copy(&mut upstream, &mut client).await?;
    client.shutdown().await
}

/// Store faults through a proxy in front of moto: a 403 on the manifest, a
/// store that stops in the middle of a write and stays down, a store too
/// slow to answer. Each large result falls back to the spec's truncation
/// (with the `lro_store_errors_total` count), nothing of it is visible in
/// the bucket, and the next call, the store healthy again, is offloaded.
// (Over 80 lines: one moto and one gateway serve the three faults in
// turn, each checked the same way, which keeps the test binary lean.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_faults_fall_back_and_leave_nothing_visible() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let moto = moto(&interop).await;
    let mode = Arc::new(AtomicU8::new(PASS));
    let proxy = fault_proxy(moto.port, mode.clone()).await;
    let upstream = serve_mcp(mcp_service(Mode::StatelessJson), None).await;
    let upstream = format!("http://{upstream}/mcp");
    let (_gateway, addr) = replica(
        proxy,
        &[],
        &[
            "--upstream",
            &upstream,
            "--store",
            &format!("s3://{BUCKET}/faults"),
        ],
    );
    let url = format!("http://{addr}/mcp");
    let offload = |id: u64| {
        let url = url.clone();
        async move {
            let args = json!({"query": "faults", "count": 150});
            let v = call(&url, "dave", id, "recall_memories", args)
                .await
                .unwrap();
            text_of(&v).0
        }
    };
    let healthy = offload(1).await;
    assert!(healthy.contains("\"offloaded\":true"), "{healthy:.300}");
    let mut before = keys(moto.port, "faults/").await;
    assert_eq!(before.len(), 2, "{before:?}");
    // A store that is down: not ready (a load balancer stops sending).
    mode.store(DOWN, Ordering::SeqCst);
    let ready = http()
        .get(format!("http://{addr}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    mode.store(PASS, Ordering::SeqCst);
    for (n, fault) in [FORBID_MANIFEST, DIE_ON_DATA, SLOW].into_iter().enumerate() {
        mode.store(fault, Ordering::SeqCst);
        let text = offload(10 + n as u64).await;
        assert!(
            text.starts_with("Warning: large result offloading (LRO) failed"),
            "fault {fault}: {text:.300}"
        );
        mode.store(PASS, Ordering::SeqCst);
        assert_eq!(
            keys(moto.port, "faults/").await,
            before,
            "fault {fault}: something is visible"
        );
        let again = offload(20 + n as u64).await;
        assert!(
            again.contains("\"offloaded\":true"),
            "after fault {fault}: {again:.300}"
        );
        let d: Value = serde_json::from_str(&again).unwrap();
        let file = d["file_path"].as_str().unwrap();
        assert_eq!(count_via(&url, "dave", file).await, Ok(150));
        // What the next fault must leave as it is: this file too.
        before = keys(moto.port, "faults/").await;
        assert_eq!(before.len(), 4 + 2 * n, "{before:?}");
    }
    let metrics = http()
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let errors: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("lro_store_errors_total") && l.contains("operation=\"write\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(errors, 3.0, "{metrics}");
}
