//! What the model sees, with real agents: Claude Code (npm
//! `@anthropic-ai/claude-code`), Codex CLI (npm `@openai/codex`) and Gemini
//! CLI (npm `@google/gemini-cli`), pinned in `tests/interop/agents`, their
//! models replaced by scripted endpoints on loopback (Anthropic Messages:
//! `model.py`, driven by `run_claude.py`; OpenAI Responses:
//! `model_openai.py`, driven by `run_codex.py`; Generative Language:
//! `model_gemini.py`, driven by `run_gemini.py`), call the
//! tools of the official Python SDK server (`tests/interop/py_server.py`)
//! directly, through `lro gateway` and through `lro proxy` as its stdio MCP
//! server. The report is read from the model's side: the bytes of each tool
//! result as the model received it in its next request.
//!
//! Claude Code and Codex show their model `JSON.stringify(structuredContent)`
//! whenever a result has `structuredContent` (declared schema or not) and
//! drop the text blocks; so the descriptor must be there too. Gemini CLI
//! shows the text blocks, and takes `JSON.parse` of the first one as
//! `structuredContent` when there is none, failing the call unless it is
//! an object: an `lro_extract` answer of one array (the counts here) must
//! still reach its model. Checked for a tool
//! answering one text block, one answering a `str` (the SDK copies it into
//! `structuredContent: {"result": text}`) and one answering structured
//! records under an output schema (`{"rows": [...], "total": N}`): the
//! model reads the file path and the recipes, never an emptied list before
//! them, and a recipe run by the agent's own shell tool and an
//! `lro_extract` call give the true counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::common;
use super::gateway::{gateway_with, lro_bin, python_server};

/// Records each tool answers (py_server.py's `make_records`).
const COUNT: usize = 2000;

/// Installs the agent CLIs once per test process (`tests/interop/agents/setup.sh`,
/// idempotent, locked against other processes). `None`: skipped (see
/// `common::require`).
fn agents_setup() -> Option<PathBuf> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let dir = common::interop_setup()?.join("agents");
    DONE.get_or_init(|| {
        common::run_setup(
            &dir.join("setup.sh"),
            "it installs Claude Code from the npm registry",
        )
    });
    Some(dir)
}

/// Where Claude Code reaches the tools.
enum Server<'a> {
    Http(&'a str),
    Stdio(Vec<String>),
}

/// A real agent CLI and how its harness names things.
#[derive(Clone, Copy)]
enum Agent {
    /// Claude Code (`run_claude.py`, its model a scripted Anthropic
    /// Messages endpoint).
    ClaudeCode,
    /// Codex CLI (`run_codex.py`, its model a scripted OpenAI Responses
    /// endpoint).
    Codex,
    /// Gemini CLI (`run_gemini.py`, its model a scripted Generative
    /// Language endpoint).
    Gemini,
}

impl Agent {
    fn driver(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "run_claude.py",
            Agent::Codex => "run_codex.py",
            Agent::Gemini => "run_gemini.py",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// Its shell tool: as a script names it, and as the report does.
    fn shell(self) -> (&'static str, &'static str) {
        match self {
            Agent::ClaudeCode => ("Bash", "Bash"),
            Agent::Codex => ("shell", "exec_command"),
            Agent::Gemini => ("shell", "run_shell_command"),
        }
    }
}

/// Runs `agent` once with `turns` as its model's script; returns the
/// report of its driver.
fn run_agent(agent: Agent, agents: &Path, server: &Server<'_>, name: &str, turns: &Value) -> Value {
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), json!({ "turns": turns }).to_string()).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(agents.join(agent.driver()))
        .args(["--server", name, "--timeout", "120", "--script"])
        .arg(script.path());
    match server {
        Server::Http(url) => cmd.args(["--http", url]),
        Server::Stdio(argv) => cmd.args(["--stdio-json", &json!(argv).to_string()]),
    };
    let out = common::output_within_blocking(cmd, Duration::from_secs(180), agent.driver());
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{} printed no report ({e}): {stdout:.2000}\nstderr: {:.4000}",
            agent.driver(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The tool results the model received for `tool` (a suffix of its name:
/// `_NAME` for an MCP tool, which Claude Code and Codex name
/// `mcp__SERVER__NAME` and Gemini CLI `mcp_SERVER_NAME`).
fn results_of<'a>(report: &'a Value, tool: &str) -> Vec<&'a Value> {
    report["tool_results"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|r| r["tool"].as_str().is_some_and(|t| t.ends_with(tool)))
                .collect()
        })
        .unwrap_or_default()
}

/// Per-category counts of `make_records(count)`.
fn expected_categories(count: usize) -> BTreeMap<String, u64> {
    const CATEGORIES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let mut m = BTreeMap::new();
    for i in 0..count {
        *m.entry(CATEGORIES[(i * i) % 5].to_owned()).or_insert(0) += 1;
    }
    m
}

/// Per-category counts in a recipe's or a query's output: a JSON array of
/// `{"category": .., "count": ..}` (pretty, compact, or one per line), or
/// such an array as the `value` of an `lro_extract` answer's
/// `structuredContent` (what Claude Code and Codex show their model).
fn counts_in(output: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let values = serde_json::Deserializer::from_str(output.trim()).into_iter::<Value>();
    for v in values.map_while(Result::ok) {
        let v = match v {
            Value::Object(mut o) if o.contains_key("value") => {
                o.remove("value").unwrap_or_default()
            }
            other => other,
        };
        let items = match v {
            Value::Array(items) => items,
            other => vec![other],
        };
        for item in items {
            if let (Some(c), Some(n)) = (item["category"].as_str(), item["count"].as_u64()) {
                m.insert(c.to_owned(), n);
            }
        }
    }
    m
}

/// The model's script: the tool, a recipe by the agent's shell tool, the
/// same counts by `lro_extract`, then done.
fn script(agent: Agent, server: &str, tool: &str) -> Value {
    json!([
        {"tool": format!("mcp__{server}__{tool}"), "input": {"count": COUNT}},
        {"tool": agent.shell().0, "input": {"command": "{recipe~count by category}", "description": "recipe"}, "optional": true},
        {"tool": format!("mcp__{server}__lro_extract"), "input": {
            "file_path": "{file_path}", "slurp": true,
            "query": "group_by(.category) | map({category: .[0].category, count: length})"
        }, "optional": true},
        {"text": "done"}
    ])
}

/// One row of the table printed at the end.
struct Seen {
    agent: &'static str,
    path: &'static str,
    tool: &'static str,
    bytes: u64,
    tokens: u64,
}

/// What the model read of an offloaded result through lro: the descriptor
/// (file path, recipes) whichever part the agent showed, the records'
/// array never shown emptied before it, and the true counts from a recipe
/// run by Bash and from `lro_extract`.
fn check_offloaded(agent: Agent, report: &Value, path: &str, tool: &str) -> Seen {
    let what = format!("{} / {path} / {tool}", agent.name());
    let seen = results_of(report, &format!("_{tool}"));
    let first = seen
        .first()
        .unwrap_or_else(|| panic!("{what}: no tool result reached the model: {report:.3000}"));
    let text = first["server_text"].as_str().unwrap_or_default();
    assert!(
        text.contains(".jsonl") && text.contains("jq_recipes") && text.contains("tail -n +2"),
        "{what}: the model did not see the descriptor: {text:.1500}"
    );
    // The shipped profiles: each of these agents has a shell, so where the
    // files are on its machine (`lro proxy`) the guidance is the shell
    // one; through the gateway, `lro_extract`.
    assert_eq!(
        text.contains("lro_extract("),
        path == "gateway",
        "{what}: the guidance: {text:.1500}"
    );
    if let Agent::Gemini = agent {
        // Listed `lro_extract` only once something was offloaded.
        let offered = |key: &str| -> Vec<String> {
            let names = report[key].as_array().cloned().unwrap_or_default();
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        };
        let has_extract = |names: &[String]| names.iter().any(|n| n.ends_with("_lro_extract"));
        assert!(
            !has_extract(&offered("offered_first")),
            "{what}: {:?}",
            offered("offered_first")
        );
        assert!(
            has_extract(&offered("offered_tools")),
            "{what}: {:?}",
            offered("offered_tools")
        );
    }
    if let Some(empty) = text.find(r#""rows":[]"#) {
        let descriptor = text.find(r#""offloaded":{"#);
        assert!(
            descriptor.is_some_and(|d| d < empty),
            "{what}: an emptied list before any descriptor: {text:.1500}"
        );
    }
    let expected = expected_categories(COUNT);
    let shell = results_of(report, agent.shell().1);
    let recipe = shell
        .first()
        .unwrap_or_else(|| panic!("{what}: the recipe did not run: {report:.3000}"));
    assert_eq!(
        counts_in(recipe["server_text"].as_str().unwrap_or_default()),
        expected,
        "{what}: recipe output {:.600}",
        recipe["text"]
    );
    let extract = results_of(report, "_lro_extract");
    let extract = extract
        .first()
        .unwrap_or_else(|| panic!("{what}: lro_extract did not run: {report:.3000}"));
    assert_eq!(
        counts_in(extract["server_text"].as_str().unwrap_or_default()),
        expected,
        "{what}: lro_extract output {:.600}",
        extract["server_text"]
    );
    Seen {
        agent: agent.name(),
        path: if path == "gateway" {
            "lro gateway"
        } else {
            "lro proxy"
        },
        tool: static_name(tool),
        bytes: first["server_bytes"].as_u64().unwrap_or_default(),
        tokens: first["server_bytes"].as_u64().unwrap_or_default() / 4,
    }
}

fn static_name(tool: &str) -> &'static str {
    match tool {
        "records_text" => "records_text",
        "records" => "records",
        _ => "rows",
    }
}

/// Claude Code, Codex CLI and Gemini CLI, directly and through `lro gateway` and `lro
/// proxy`, for the three kinds of tool result: what reached their model,
/// and the answers their own tools got from the file.
#[test]
fn agents_read_the_descriptor_whatever_part_they_show() {
    let Some(agents) = agents_setup() else { return };
    common::require_jq();
    let Some((_py, port)) = python_server(&[]) else {
        return;
    };
    let upstream = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let (_gw, addr) = gateway_with(&upstream, &dir.path().join("gateway"), &[]);
    let gateway_url = format!("http://{addr}/mcp");
    let proxy_dir = dir.path().join("proxy");
    let proxy: Vec<String> = vec![
        lro_bin().to_string_lossy().into_owned(),
        "proxy".into(),
        upstream.clone(),
        "--output-dir".into(),
        proxy_dir.to_string_lossy().into_owned(),
    ];
    let mut table = Vec::new();
    for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Gemini] {
        for tool in ["records_text", "records", "rows"] {
            // Directly: what the model reads of the whole result (the
            // agent's own spill notice or truncation over its limits).
            let direct = run_agent(
                agent,
                &agents,
                &Server::Http(&upstream),
                "py",
                &json!([{"tool": format!("mcp__py__{tool}"), "input": {"count": COUNT}}, {"text": "done"}]),
            );
            let seen = results_of(&direct, &format!("_{tool}"));
            let bytes = seen
                .first()
                .and_then(|r| r["server_bytes"].as_u64())
                .unwrap_or_else(|| panic!("{} direct {tool}: {direct:.2000}", agent.name()));
            table.push(Seen {
                agent: agent.name(),
                path: "direct",
                tool: static_name(tool),
                bytes,
                tokens: bytes / 4,
            });
            for (path, server) in [
                ("gateway", Server::Http(&gateway_url)),
                ("proxy", Server::Stdio(proxy.clone())),
            ] {
                let turns = script(agent, "lro", tool);
                let report = run_agent(agent, &agents, &server, "lro", &turns);
                table.push(check_offloaded(agent, &report, path, tool));
            }
        }
    }
    // `lro proxy` learns its agent's name as the layer does: a profile for
    // Claude Code (`clientInfo.name` "claude-code") keeps its results inline.
    let mut profiled = vec![
        "env".to_owned(),
        "ATLATL_PROMPT__OFFLOAD__CLIENTS__CLAUDE_CODE__THRESHOLD_TOKENS=100000000".to_owned(),
    ];
    profiled.extend(proxy.iter().cloned());
    let small =
        json!([{"tool": "mcp__lro__records_text", "input": {"count": 100}}, {"text": "done"}]);
    for (server, inline) in [
        (Server::Stdio(profiled), true),
        (Server::Stdio(proxy.clone()), false),
    ] {
        let report = run_agent(Agent::ClaudeCode, &agents, &server, "lro", &small);
        let seen = results_of(&report, "__records_text");
        let text = seen.first().and_then(|r| r["server_text"].as_str());
        let text = text.unwrap_or_else(|| panic!("profile run: {report:.2000}"));
        assert_eq!(text.contains("rec_0099"), inline, "{text:.600}");
        assert_eq!(text.contains("jq_recipes"), !inline, "{text:.600}");
    }
    eprintln!("what reached the model ({COUNT} records; tokens: bytes / 4)");
    for s in &table {
        eprintln!(
            "  {:12} {:12} {:13} {:>8} bytes {:>7} tokens",
            s.agent, s.path, s.tool, s.bytes, s.tokens
        );
    }
}
