//! `lro history` (the real binary) in front of a recording chat provider on
//! loopback (`tests/interop/chat_provider.py`), used by the official
//! `openai` and `anthropic` Python clients (`interop/history_client.py`):
//! 12-turn agent loops on OpenAI Chat Completions, Anthropic Messages and
//! OpenAI Responses whose tool answers are ~7k-token logs, every fifth
//! turn two parallel calls, and a 50-turn loop of ~1.5k-token answers. Checked on what the provider received: every
//! request valid for its API (each answer after its call, by id), the
//! newest turn and all its answers verbatim, the history within the
//! budget, each request starting with the previous one (≥ 0.9 of it on
//! average in the 50-turn loop), credentials untouched, streaming,
//! `previous_response_id` and
//! other paths passed byte for byte, nothing lost (the files hold the
//! answers), and the metrics and readiness endpoints.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tower_lro::estimate::{ScriptAwareEstimator, TokenEstimator};

use super::common;
use super::common::procs::spawn_ready;
use super::gateway::lro_bin;

/// The history budget the proxy is started with (`--max-total-tokens`).
const BUDGET: usize = 20_000;

/// A message's text, whatever its format keeps it in.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The calls and answers of a request's messages, in order: (`call`, id)
/// or (`answer`, id, text).
fn traffic(path: &str, body: &Value) -> Vec<(bool, String, String)> {
    let mut out = Vec::new();
    if path.ends_with("/responses") {
        for item in body["input"].as_array().into_iter().flatten() {
            let id = item["call_id"].as_str().unwrap_or_default().to_owned();
            match item["type"].as_str() {
                Some("function_call") => out.push((true, id, String::new())),
                Some("function_call_output") => out.push((false, id, text_of(&item["output"]))),
                _ => {}
            }
        }
        return out;
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            out.push((true, call["id"].as_str().unwrap().to_owned(), String::new()));
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap().to_owned();
            out.push((false, id, text_of(&m["content"])));
        }
        for block in m["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => out.push((
                    true,
                    block["id"].as_str().unwrap().to_owned(),
                    String::new(),
                )),
                Some("tool_result") => out.push((
                    false,
                    block["tool_use_id"].as_str().unwrap().to_owned(),
                    text_of(&block["content"]),
                )),
                _ => {}
            }
        }
    }
    out
}

/// Every answer comes after its call, each call answered once.
fn paired(traffic: &[(bool, String, String)]) -> bool {
    let mut called = HashSet::new();
    let mut answered = HashSet::new();
    traffic.iter().all(|(call, id, _)| {
        if *call {
            called.insert(id.clone())
        } else {
            called.contains(id) && answered.insert(id.clone())
        }
    })
}

/// The answers to the newest turn's calls (those after the last call that
/// follows an answer): what the model has not seen yet.
fn newest_answers(traffic: &[(bool, String, String)]) -> Vec<(String, String)> {
    let Some(last_call) = traffic.iter().rposition(|(call, ..)| *call) else {
        return Vec::new();
    };
    let mut first = last_call;
    while first > 0 && traffic[first - 1].0 {
        first -= 1;
    }
    let turn: BTreeSet<&String> = traffic[first..=last_call]
        .iter()
        .map(|(_, id, _)| id)
        .collect();
    traffic
        .iter()
        .filter(|(call, id, _)| !call && turn.contains(id))
        .map(|(_, id, text)| (id.clone(), text.clone()))
        .collect()
}

/// Estimated tokens of every string in a value, as the proxy counts a
/// history (its default estimator, JSON punctuation not counted).
fn tokens_in(v: &Value) -> usize {
    match v {
        Value::String(s) => ScriptAwareEstimator.estimate(s),
        Value::Array(items) => items.iter().map(tokens_in).sum(),
        Value::Object(map) => map.values().map(tokens_in).sum(),
        _ => 0,
    }
}

/// Estimated tokens of a request's messages.
fn history_tokens(path: &str, body: &Value) -> usize {
    let key = if path.ends_with("/responses") {
        "input"
    } else {
        "messages"
    };
    tokens_in(&body[key])
}

/// GET `path` on `addr`: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = format!("http://{addr}{path}");
        let r = reqwest::get(&url).await.expect("GET");
        (r.status().as_u16(), r.text().await.unwrap())
    })
}

/// The answer to the Chat Completions request `body` at `base` with the
/// API key `key`.
fn chat_as(base: &str, key: &str, body: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{base}/v1/chat/completions"))
            .header("content-type", "application/json")
            .bearer_auth(key)
            .body(body.to_owned())
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON")
    })
}

/// POST `body` (as JSON) to `path` on `addr`; the answer is not looked at.
fn post(addr: &str, path: &str, body: &'static str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let _ = reqwest::Client::new()
            .post(format!("http://{addr}{path}"))
            .header("content-type", "application/json")
            .body(body)
            .timeout(Duration::from_secs(30))
            .send()
            .await;
    });
}

#[test]
fn lro_history_keeps_agent_loops_within_budget() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let record = tmp.path().join("received.jsonl");
    let (_provider, port) = chat_provider(&interop, &record);
    let store = tmp.path().join("history");
    let (proxy, base) = history_proxy(&port, &store, &[]);
    let addr = base.trim_start_matches("http://").to_owned();

    let mut client = Command::new(interop.join(".venv/bin/python"));
    client
        .arg(interop.join("history_client.py"))
        .arg(&base)
        .arg(&record);
    let out = common::output_within_blocking(client, Duration::from_secs(300), "history_client.py");
    assert!(
        out.status.success(),
        "history_client.py: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        proxy.stderr()
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert!(
        report["openai_chat"]["streamed"]
            .as_str()
            .unwrap()
            .starts_with("ok, ")
    );
    assert_eq!(
        report["openai_chat"]["models"],
        serde_json::json!(["stand-in"])
    );
    assert!(
        report["anthropic"]["streamed"]
            .as_str()
            .unwrap()
            .starts_with("ok, ")
    );
    let sent = report["sent"].as_array().unwrap();
    let received = report["received"].as_array().unwrap();
    assert_eq!(
        sent.len(),
        received.len(),
        "one upstream request per request"
    );

    let (mut rewritten, mut tokens_sent, mut tokens_received) = (0, 0, 0);
    for (i, (s, r)) in sent.iter().zip(received).enumerate() {
        let path = s["path"].as_str().unwrap();
        assert_eq!(r["path"], path, "request {i}");
        for header in ["authorization", "x_api_key"] {
            assert_eq!(
                r[header], s[header],
                "request {i}: {header} passes untouched"
            );
        }
        let (sent_body, got_body) = (s["body"].as_str().unwrap(), r["body"].as_str().unwrap());
        if sent_body == got_body {
            // Passed as it came: within the budget, or chained, or no chat.
            let Ok(body) = serde_json::from_str::<Value>(sent_body) else {
                continue;
            };
            let chained = body
                .get("previous_response_id")
                .is_some_and(|p| !p.is_null());
            let newest: usize = newest_answers(&traffic(path, &body))
                .iter()
                .map(|(_, t)| ScriptAwareEstimator.estimate(t))
                .sum();
            let history = history_tokens(path, &body).saturating_sub(newest);
            assert!(
                chained || history <= BUDGET,
                "request {i} ({path}) passed with {history} tokens besides the newest turn"
            );
            continue;
        }
        rewritten += 1;
        let what = format!("request {i} ({path})");
        let (sent_json, got_json): (Value, Value) = (
            serde_json::from_str(sent_body).unwrap(),
            serde_json::from_str(got_body).unwrap(),
        );
        assert!(
            sent_json
                .get("previous_response_id")
                .is_none_or(Value::is_null),
            "{what}: a chained request is rewritten"
        );
        let (before, after) = (traffic(path, &sent_json), traffic(path, &got_json));
        assert!(paired(&after), "{what}: an answer without its call");
        let ids = |t: &[(bool, String, String)]| {
            t.iter()
                .map(|(c, id, _)| (*c, id.clone()))
                .collect::<Vec<_>>()
        };
        let (kept, all) = (ids(&after), ids(&before));
        assert!(
            all.ends_with(&kept),
            "{what}: the calls and answers kept are the newest, in order: {kept:?}"
        );
        let newest = newest_answers(&before);
        assert!(!newest.is_empty(), "{what}");
        for (id, text) in &newest {
            assert!(
                after.iter().any(|(c, i2, t)| !c && i2 == id && t == text),
                "{what}: the answer to {id}, not yet seen by the model, was replaced"
            );
        }
        // The budget: the history without its newest turn.
        let newest_tokens: usize = newest
            .iter()
            .map(|(_, t)| ScriptAwareEstimator.estimate(t))
            .sum();
        let history = history_tokens(path, &got_json).saturating_sub(newest_tokens);
        assert!(
            history <= BUDGET,
            "{what}: {history} tokens besides the newest turn, over {BUDGET}"
        );
        tokens_sent += history_tokens(path, &sent_json);
        tokens_received += history_tokens(path, &got_json);
    }
    assert!(rewritten >= 60, "{rewritten} requests rewritten");
    let long = &report["long"]["requests"];
    let range = long[0].as_u64().unwrap() as usize..long[1].as_u64().unwrap() as usize;
    let reuse = prefix_reuse(&received[range]);
    eprintln!(
        "lro history, 50 turns of ~1.5k-token answers: {reuse:.3} of each request is the previous one's start"
    );
    assert!(reuse >= 0.9, "prefix reuse {reuse:.3}");
    let ratio = tokens_received as f64 / tokens_sent as f64;
    eprintln!(
        "lro history: {rewritten} of {} requests rewritten; history tokens {tokens_sent} -> {tokens_received} ({ratio:.3})",
        sent.len()
    );
    assert!(
        ratio < 0.35,
        "tokens sent fell to {ratio:.3} of the client's"
    );

    // Nothing lost: the first turn's log is in a file of the store.
    let first_log_line = "INFO call_1_a req_1_0 GET /api/items/0 took 0ms";
    let found = walk_files(&store)
        .into_iter()
        .any(|f| std::fs::read_to_string(&f).is_ok_and(|t| t.contains(first_log_line)));
    assert!(
        found,
        "the first answer is in a file under {}",
        store.display()
    );

    // Bad input passes byte for byte: a body that is no JSON, and one
    // that is JSON but no chat request, on a chat path.
    for bad in [
        "{\"messages\": [oops",
        "{\"model\": \"m\", \"prompt\": \"hi\"}",
    ] {
        post(&addr, "/v1/chat/completions", bad);
        let last = std::fs::read_to_string(&record).unwrap();
        let last: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
        assert_eq!(last["body"], bad, "passed untouched");
    }
    let (status, _) = get(&addr, "/readyz");
    assert_eq!(status, 200);
    let (status, metrics) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("lro_history_requests_total{") && l.contains("outcome=\"rewritten\"")
        })
        .unwrap_or_else(|| panic!("no rewritten count: {metrics:.3000}"));
    let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(count as usize, rewritten, "{line}");
    let log = proxy.stderr();
    for secret in ["sk-test-openai", "sk-test-anthropic"] {
        assert!(!log.contains(secret), "a credential in the log");
    }
}

/// The mean, over consecutive requests, of the share of the previous
/// request's body that the next one starts with (what a provider's prompt
/// cache can reuse).
fn prefix_reuse(requests: &[Value]) -> f64 {
    let bodies: Vec<&[u8]> = requests
        .iter()
        .map(|r| r["body"].as_str().unwrap().as_bytes())
        .collect();
    let shares: Vec<f64> = bodies
        .windows(2)
        .map(|w| {
            let same = w[0].iter().zip(w[1]).take_while(|(a, b)| a == b).count();
            same as f64 / w[0].len() as f64
        })
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

/// Every file under `dir`.
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Starts `interop/chat_provider.py` recording into `record`; returns it
/// and its port.
fn chat_provider(interop: &Path, record: &Path) -> (common::procs::Proc, String) {
    let mut provider = Command::new(interop.join(".venv/bin/python"));
    provider.arg(interop.join("chat_provider.py")).arg(record);
    spawn_ready(
        "chat provider",
        provider,
        "LISTENING ",
        Duration::from_secs(30),
    )
}

/// Starts `lro history` in front of the provider on `port`, files in
/// `store`, with `extra` flags; returns it and its base URL.
fn history_proxy(port: &str, store: &Path, extra: &[&str]) -> (common::procs::Proc, String) {
    history_proxy_with(Command::new(lro_bin()), port, store, extra)
}

/// [`history_proxy`] run as `proxy` (an `lro` command with its
/// environment).
fn history_proxy_with(
    mut proxy: Command,
    port: &str,
    store: &Path,
    extra: &[&str],
) -> (common::procs::Proc, String) {
    proxy
        .args(["history", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .arg("--store-dir")
        .arg(store)
        .args(["--max-total-tokens", &BUDGET.to_string()])
        .args(extra)
        .env("RUST_LOG", "info");
    let (proxy, url) = spawn_ready(
        "lro history",
        proxy,
        "lro history listening on ",
        Duration::from_secs(30),
    );
    let base = url.trim().trim_end_matches('/').to_owned();
    (proxy, base)
}

/// The model reads its offloaded history back through the tool `lro
/// history` adds (the files are on the proxy's host, which the model's own
/// tools may never reach): with the official `openai` and `anthropic`
/// clients, in all three formats, streamed and not, the scripted model
/// calls `lro_history_read` for turn 2's log, the proxy answers from the
/// file and sends the conversation on, and the client gets the model's
/// answer quoting the original line, never seeing the call. With
/// `--no-read-tool` the tool is not offered. The same with an OpenAI Agents
/// SDK agent whose tool the SDK runs itself, on Chat Completions and on
/// Responses.
#[test]
fn the_model_reads_offloaded_history_back_through_the_proxy() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let record = tmp.path().join("received.jsonl");
    let (_provider, port) = chat_provider(&interop, &record);
    let run = |base: &str| {
        let mut client = Command::new(interop.join(".venv/bin/python"));
        client.arg(interop.join("read_back_client.py")).arg(base);
        let out =
            common::output_within_blocking(client, Duration::from_secs(120), "read_back_client.py");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("a JSON report")
    };
    let (proxy, base) = history_proxy(&port, &tmp.path().join("history"), &[]);
    let report = run(&base);
    for case in [
        "chat",
        "chat_streamed",
        "messages",
        "messages_streamed",
        "responses",
    ] {
        let got = &report[case];
        assert_eq!(
            got["calls"],
            serde_json::json!([]),
            "{case}: the client saw a call: {got}"
        );
        let text = got["text"].as_str().unwrap_or_default();
        // Streamed, what the model said before its call came at once, the
        // answer after it on the same stream.
        let text = match case.ends_with("_streamed") {
            true => text
                .strip_prefix("Reading the offloaded log.")
                .unwrap_or_default(),
            false => text,
        };
        assert!(
            text.starts_with("read back: history-tool-read_log-")
                && text.contains(": matching lines 1-1 of 1, numbered:\n8: ")
                && text.contains(" req_2_7 GET /api/items/7 took 49ms"),
            "{case}: {text}\n{}",
            proxy.stderr()
        );
    }
    // Upstream: each client request went twice, the tool offered the first
    // time, its answer (from the file, not the client) in the second.
    let received: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(received.len(), 10, "two rounds for each of five requests");
    for pair in received.chunks(2) {
        let (first, second) = (&pair[0]["body"], &pair[1]["body"]);
        let (first, second) = (first.as_str().unwrap(), second.as_str().unwrap());
        assert!(first.contains("\"lro_history_read\""), "{first:.300}");
        assert!(
            !first.contains("req_2_7 GET"),
            "the log is offloaded in the first"
        );
        assert!(
            second.contains("req_2_7 GET /api/items/7 took 49ms"),
            "{second:.300}"
        );
    }
    assert!(
        proxy
            .stderr()
            .contains("the model read back offloaded history")
    );
    // Each caller's files in a directory of its own: the rewritten history
    // of the first request, sent again by its caller, reads back; sent by
    // another caller (other credentials), it names the same file, which
    // that caller's directory does not hold.
    let owners = std::fs::read_dir(tmp.path().join("history"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("owner-"))
        .count();
    assert_eq!(owners, 2, "one directory per API key");
    let mut forged: Value = serde_json::from_str(received[0]["body"].as_str().unwrap()).unwrap();
    forged.as_object_mut().unwrap().remove("tools");
    let forged = forged.to_string();
    let as_caller = |key: &str| {
        let answer = chat_as(&base, key, &forged);
        answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let own = as_caller("sk-test-openai");
    assert!(own.contains(" req_2_7 GET /api/items/7 took 49ms"), "{own}");
    // Sent in chunks of no stated length: the history layer holds it, so
    // the tool is offered all the same.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = forged
        .as_bytes()
        .chunks(4096)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let chunked: Value = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{base}/v1/chat/completions"))
            .header("content-type", "application/json")
            .bearer_auth("sk-test-openai")
            .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                chunks,
            )))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON")
    });
    let text = chunked["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(" req_2_7 GET /api/items/7 took 49ms"),
        "chunked: {text}"
    );
    let other = as_caller("sk-someone-else");
    assert!(
        other.contains("is no longer there") && !other.contains("req_2_7 GET"),
        "{other}"
    );

    // An OpenAI Agents SDK loop: the SDK runs read_log six times, the
    // model reads turn 2's log back unseen by the SDK, then answers.
    let before = std::fs::read_to_string(&record).unwrap().lines().count();
    let mut agents = Command::new(interop.join(".venv/bin/python"));
    agents.arg(interop.join("agents_client.py")).arg(&base);
    let out = common::output_within_blocking(agents, Duration::from_secs(120), "agents_client.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agents: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let ran: Vec<String> = (1..=6).map(|t| format!("read_log({t})")).collect();
    for api in ["chat_completions", "responses"] {
        let got = &agents[api];
        let last = got["final"].as_str().unwrap_or_default();
        assert!(
            last.starts_with("done: 6 logs read back: history-tool-read_log-")
                && last.contains(" req_2_7 GET /api/items/7 took 49ms"),
            "{api}: {got}\n{}",
            proxy.stderr()
        );
        assert_eq!(got["ran"], serde_json::json!(ran), "{api}");
    }
    let upstream: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        upstream.len() - before,
        2 * 8,
        "7 requests of the SDK and 1 read each"
    );
    for r in &upstream[before..] {
        let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
        let tokens = history_tokens(r["path"].as_str().unwrap(), &body);
        // The budget, plus the newest turn (one ~7k-token log) kept whole.
        assert!(tokens <= BUDGET + 8_000, "{tokens} tokens sent upstream");
    }

    let (_off, base) = history_proxy(&port, &tmp.path().join("off"), &["--no-read-tool"]);
    let off = run(&base);
    let text = off["chat"]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("no read tool"), "{text}");
}

/// The messages of a conversation whose `turns` tool answers are
/// ~7k-token logs (as `interop/read_back_client.py` makes them).
fn log_conversation(turns: usize) -> Vec<Value> {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "Why is the API slow?"})];
    for turn in 1..=turns {
        let call = format!("call_{turn}");
        let log: Vec<String> = (0..300)
            .map(|i| {
                format!(
                    "2026-11-28T12:{turn:02}:{:02}Z INFO {call} req_{turn}_{i} GET /api/items/{i} took {}ms",
                    i % 60,
                    i * 7 % 900
                )
            })
            .collect();
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "read_log", "arguments": format!("{{\"turn\":{turn}}}")}}]}));
        messages.push(
            serde_json::json!({"role": "tool", "tool_call_id": call, "content": log.join("\n")}),
        );
    }
    messages
}

/// Two `lro history` replicas sharing one object store (moto) and one
/// binding key, each with its own directory: a history one rewrote, sent
/// to the other as the rewrite (only pointers: the other holds none of
/// the files), is read back there from the store; the original history
/// with a new turn, sent to the other, starts with the first's rewrite
/// (its checkpoint, read from the store), so the provider's prompt cache
/// holds across replicas.
#[test]
fn replicas_share_history_files_through_object_storage() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let moto = rt.block_on(super::fleet::moto(&interop));
    let tmp = tempfile::tempdir().unwrap();
    let record = tmp.path().join("received.jsonl");
    let (_provider, port) = chat_provider(&interop, &record);
    let key = tmp.path().join("binding.key");
    std::fs::write(&key, "k".repeat(64)).unwrap();
    let store = format!("s3://{}/hist", super::fleet::BUCKET);
    let flags = [
        "--store",
        &store,
        "--binding-key-file",
        key.to_str().unwrap(),
    ];
    let replica = |dir: &str| {
        let cmd = super::fleet::lro(moto.port);
        history_proxy_with(cmd, &port, &tmp.path().join(dir), &flags)
    };
    let ((_a, a), (b_proc, b)) = (replica("a"), replica("b"));
    let forwarded = || -> Value {
        let last = std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned();
        let line: Value = serde_json::from_str(&last).unwrap();
        serde_json::from_str(line["body"].as_str().unwrap()).unwrap()
    };

    let original = serde_json::json!({"model": "stand-in", "messages": log_conversation(6)});
    chat_as(&a, "sk-one", &original.to_string());
    let rewritten = forwarded();
    let first = serde_json::to_string(&rewritten["messages"]).unwrap();
    assert!(first.contains("[history offload]"), "A rewrote nothing");
    let files = rt.block_on(super::fleet::keys(moto.port, "hist/owner-"));
    assert!(
        files.iter().any(|k| k.contains("/history-tool-read_log-")),
        "{files:?}"
    );

    // The rewrite, fed back to B: the files are in the store only.
    let mut fed_back = rewritten.clone();
    fed_back.as_object_mut().unwrap().remove("tools");
    fed_back["model"] = "reader".into();
    let answer = chat_as(&b, "sk-one", &fed_back.to_string());
    let text = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(" req_2_7 GET /api/items/7 took 49ms"),
        "{text}\n{}",
        b_proc.stderr()
    );

    let fetched = files
        .iter()
        .filter(|k| k.contains("/history-tool-read_log-"))
        .any(|k| moto.gets_of(k).contains(&200));
    assert!(fetched, "B read the log from the store");

    // The original with a new turn, on B: A's rewrite is where it starts.
    let mut next = original.clone();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(serde_json::json!({"role": "assistant", "content": "Looking further."}));
    messages.push(serde_json::json!({"role": "user", "content": "go on"}));
    chat_as(&b, "sk-one", &next.to_string());
    let on_b = forwarded();
    let (before, after) = (
        rewritten["messages"].as_array().unwrap(),
        on_b["messages"].as_array().unwrap(),
    );
    assert!(
        after.len() > before.len(),
        "{} then {}",
        before.len(),
        after.len()
    );
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "B's rewrite starts with A's"
    );
    let checkpoint = files.iter().find(|k| k.contains("/history-checkpoint-"));
    let checkpoint = checkpoint.unwrap_or_else(|| panic!("no checkpoint in {files:?}"));
    assert!(
        moto.gets_of(checkpoint).contains(&200),
        "B read A's checkpoint"
    );
}

/// `--file-ttl-seconds`: the proxy deletes history files unused that long
/// (here 1 s, swept every second): a conversation's files are there after
/// its request, and gone a few seconds later.
#[test]
fn unused_history_files_expire() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_provider, port) = chat_provider(&interop, &tmp.path().join("received.jsonl"));
    let store = tmp.path().join("history");
    let (proxy, base) = history_proxy(&port, &store, &["--file-ttl-seconds", "1"]);
    let original = serde_json::json!({"model": "stand-in", "messages": log_conversation(6)});
    chat_as(&base, "sk-one", &original.to_string());
    let files = || walk_files(&store).len();
    assert!(files() > 0, "the rewrite wrote no file");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while files() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(files(), 0, "{}", proxy.stderr());
    assert!(proxy.stderr().contains("expired history files deleted"));
}
