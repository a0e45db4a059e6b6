"""Runs the real OpenAI Codex CLI (`codex exec`, tests/interop/agents/node_modules,
pinned in package.json) against one MCP server, with its model replaced by
model_openai.py (a scripted OpenAI Responses endpoint on 127.0.0.1, a custom
`model_provider`), and prints ONE JSON line: what reached the model's context
from every tool call, as the model received it in the next request. The
command line and the report are run_claude.py's.

    python run_codex.py (--http URL | --stdio-json '["cmd", "arg", ...]')
                        (--tool NAME [--args JSON] [--scenario S] | --script FILE)
                        [--server NAME] [--timeout 120] [--keep DIR]

  --http URL       a streamable-http MCP server (`[mcp_servers.NAME] url = URL`)
  --stdio-json     a stdio MCP server: its command and arguments as a JSON
                   array (`command` / `args`)
  --server NAME    the server's name in Codex's config (default `srv`). Codex
                   offers the server's tools in a `namespace` tool named
                   `mcp__NAME`; the model calls one as a function_call with
                   `"namespace": "mcp__NAME", "name": TOOL`, reported here as
                   `mcp__NAME__TOOL` (Claude Code's spelling, so scripts serve
                   both agents)
  --tool NAME      the server's tool the scripted model calls first
  --args JSON      its arguments (default {})
  --scenario S     call | bash | extract | spill, as in run_claude.py (`bash`
                   runs its commands with the shell tool; Codex writes no
                   spill files, so `spill` ends after the call)
  --script FILE    a model_openai.py script (model.py's format); `{server}` in
                   a turn's `tool` is replaced by NAME. The shell tool is
                   written `{"tool": "shell", "input": {"command": "CMD"}}`
                   (`"Bash"` with Claude Code's input is taken as the same) and
                   sent as the shell tool Codex offers: `exec_command`
                   {"cmd": CMD} (unified exec; what 0.171.0 offers) or
                   `shell_command` {"command": CMD} or `shell`
                   {"command": ["bash", "-lc", CMD]}
  --model M        the model name Codex is told to use (default gpt-5.5, one
                   Codex 0.171.0 has metadata for, so no fallback warning; its
                   tool-output truncation policy, 10000 tokens, applies, and
                   its MCP tools are deferred behind `tool_search`: the
                   scripted model calls tool_search first, see
                   model_openai.py). A name Codex does not know (e.g.
                   gpt-5.1-codex) gets fallback metadata: a warning event,
                   MCP tools offered up front, other truncation limits
  -c KEY=VALUE     extra `codex exec -c` config overrides (repeatable)
  --env KEY=VALUE  extra environment for codex (repeatable)
  --keep DIR       keep CODEX_HOME, HOME, the work dir and the logs in DIR
                   (default: a temporary dir, removed afterwards)

Codex runs as `codex exec --json --skip-git-repo-check --ephemeral
--dangerously-bypass-approvals-and-sandbox` (shell commands run unsandboxed,
nothing asks; works as root) with CODEX_HOME (config.toml: model_provider
`scripted` = http://127.0.0.1:PORT/v1, wire_api "responses", env_key
SCRIPTED_API_KEY, no retries; the MCP server; analytics and the update check
off) and HOME in the temporary dir, and stdin closed.

What Codex 0.171.0 puts in the model's context for an MCP result (seen
here): when the result has `structuredContent`, only that, compact
(JSON.stringify-like), as ONE string after its header ("Wall time: ..
seconds\nOutput:\n{...}"); the content blocks are then not shown. Otherwise
a list: an input_text item holding the header, then one input_text per text
block, other blocks (resource_link, ...) as their JSON. A result of over
its truncation limit is cut in the middle ("…N tokens truncated…").

The report (run_claude.py's): `ok`, codex's exit code, `codex_result` (the
last agent message, the usage and the error events of `--json`), and
`tool_results`: for every tool output the model received (function_call_output
items; tool_search_output items too, as tool `tool_search` with
`loaded_tools`), the tool's name and input, `content` (the output as sent to the
model: a string, or a list of input_text/input_image items), `text` (their
text joined by newlines, what the model reads), `bytes`,
`est_tokens_bytes_div_4`, `is_error` (from codex's --json events: a failed
MCP call, or a non-zero exit code), `blocks` (type, bytes, head of each item;
`client_reminder` when it is Codex's own header, e.g. "Wall time: 0.05
seconds\\nOutput:"), `server_text`/`server_bytes` (`text` without that
header), `truncated` (Codex's truncation marker "…N tokens truncated…" is
in the text; `truncated_tokens` sums the N it claims, which is not the size
cut). `mcp_tools` lists the MCP tools offered, up front or loaded by
tool_search (name, description bytes, keys); `offered_tools` every tool's
name. `spills` is
always empty (Codex truncates, it writes no files). Nothing but 127.0.0.1 is
contacted.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from agent_common import read_log, scenario_turns, start_model

HERE = os.path.dirname(os.path.abspath(__file__))
CODEX = os.path.join(HERE, "node_modules", ".bin", "codex")

# What Codex puts before a tool's output: "Wall time: 0.0503 seconds\nOutput:"
# (an MCP result's first item), or for exec_command "Chunk ID: ..\nWall time:
# ..\nProcess exited with code 0\nOriginal token count: 1\nOutput:\n".
HEADER_RE = re.compile(
    r"^(?:Chunk ID: \S+\n)?Wall time: [0-9.]+ seconds\n"
    r"(?:Process (?:exited with code -?\d+|running with session ID \d+)\n)?"
    r"(?:Original token count: \d+\n)?Output:\n?"
)
TRUNCATED_TOKENS_RE = re.compile(r"…(\d+) tokens truncated…")
TRUNCATED_RE = re.compile(r"tokens truncated|chars truncated|lines truncated|\[\.\.\..*truncated", re.I)


def normalise_turn(turn: dict, server: str) -> dict:
    if "tool" not in turn:
        return turn
    turn = dict(turn)
    turn["tool"] = turn["tool"].replace("{server}", server)
    if turn["tool"] == "Bash":  # Claude Code's shell tool: the same command
        turn["tool"] = "shell"
        turn["input"] = {k: v for k, v in (turn.get("input") or {}).items() if k != "description"}
    return turn


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a TOML basic string


def write_config(path: str, port: int, model: str, server_name: str, server: dict) -> None:
    lines = [
        f"model = {toml_str(model)}",
        'model_provider = "scripted"',
        "check_for_update_on_startup = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f"base_url = {toml_str(f'http://127.0.0.1:{port}/v1')}",
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "stream_idle_timeout_ms = 60000",
        "",
        f"[mcp_servers.{toml_str(server_name)}]",
    ]
    if server["type"] == "http":
        lines.append(f"url = {toml_str(server['url'])}")
    else:
        lines.append(f"command = {toml_str(server['command'])}")
        lines.append("args = [" + ", ".join(toml_str(a) for a in server["args"]) + "]")
    lines += ["startup_timeout_sec = 30", "tool_timeout_sec = 120", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def output_items(output) -> list:
    if isinstance(output, str):
        return [{"type": "input_text", "text": output}]
    if isinstance(output, dict) and "content" in output:
        return output_items(output["content"])
    return output if isinstance(output, list) else [output]


def item_text(item) -> str:
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        return item["text"]
    return json.dumps(item)


def text_of(output) -> str:
    return "\n".join(item_text(i) for i in output_items(output))


def blocks_summary(output) -> list:
    """One entry per content item; Codex's header, when it starts an item
    that holds more, is an entry of its own (type `codex_header`)."""
    out = []
    for i, b in enumerate(output_items(output)):
        if isinstance(b, dict) and isinstance(b.get("text"), str):
            t = b["text"]
            m = HEADER_RE.match(t) if i == 0 else None
            if m and m.end() < len(t):
                h = t[: m.end()]
                out.append({"type": "codex_header", "bytes": len(h.encode()), "client_reminder": True, "head": h})
                t = t[m.end() :]
            out.append({"type": b.get("type"), "bytes": len(t.encode()), "client_reminder": bool(m) and not out,
                        "head": t[:160]})
        else:
            out.append({"type": b.get("type") if isinstance(b, dict) else type(b).__name__, "bytes": len(json.dumps(b))})
    return out


def server_text_of(output) -> str:
    """The text without Codex's own header (wall time, exit code, ...)."""
    items = output_items(output)
    texts = [item_text(i) for i in items]
    if texts and HEADER_RE.match(texts[0]):
        rest = HEADER_RE.sub("", texts[0], count=1)
        texts = ([rest] if rest else []) + texts[1:]
    return "\n".join(texts).rstrip("\n")


def full_name(item: dict) -> str:
    ns, name = item.get("namespace"), item.get("name") or item.get("type")
    if ns and ns != name:
        return f"{ns}{name}" if ns.endswith("__") else f"{ns}__{name}"
    return name


def analyse(records: list, events: list) -> dict:
    mains = [r for r in records if r.get("main")]
    side = [r for r in records if not r.get("main")]
    report: dict = {
        "requests": {"main": len(mains), "side": len(side), "side_paths": sorted({r.get("path", "") for r in side})},
        "tool_results": [],
        "mcp_tools": [],
        "offered_tools": [],
        "script_skipped": [],
    }
    for r in mains:
        report["script_skipped"] += (r.get("reply") or {}).get("skipped") or []
    if not mains:
        return report
    last = mains[-1]["body"]
    tools = list(last.get("tools") or [])
    for i in last.get("input") or []:
        if isinstance(i, dict) and i.get("type") == "tool_search_output":
            tools += i.get("tools") or []  # tools loaded by tool_search
    for t in tools:
        name = t.get("name") or t.get("type")
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                full = full_name({"namespace": name, "name": inner.get("name")})
                if full in report["offered_tools"]:
                    continue
                report["offered_tools"].append(full)
                if name.startswith("mcp__"):
                    report["mcp_tools"].append(
                        {"name": full, "description_bytes": len((inner.get("description") or "").encode()),
                         "keys": sorted(inner.keys())}
                    )
        else:
            report["offered_tools"].append(name)
    # is_error from codex's --json events, in order per kind.
    failed = {"mcp": [], "shell": []}
    for e in events:
        item = e.get("item") or {}
        if e.get("type") != "item.completed":
            continue
        if item.get("type") == "mcp_tool_call":
            failed["mcp"].append(item.get("status") == "failed" or bool(item.get("error"))
                                 or bool((item.get("result") or {}).get("is_error")))
        elif item.get("type") == "command_execution":
            failed["shell"].append(item.get("status") == "failed" or item.get("exit_code") not in (0, None))
    seen = {"mcp": 0, "shell": 0}
    items = [i for i in last.get("input") or [] if isinstance(i, dict)]
    calls = {}
    for n, item in enumerate(items):
        if item.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            calls[item.get("call_id")] = item
        elif item.get("type") == "tool_search_call":
            calls[item.get("call_id")] = {**item, "name": "tool_search"}
        elif item.get("type") == "tool_search_output":
            call = calls.get(item.get("call_id"), {})
            text = json.dumps(item.get("tools"))
            loaded = [full_name({"namespace": t.get("name"), "name": x.get("name")})
                      for t in item.get("tools") or [] for x in (t.get("tools") or [t])]
            report["tool_results"].append(
                {"tool": "tool_search", "input": call.get("arguments"), "is_error": False, "content": item.get("tools"),
                 "content_block_types": "tools", "blocks": [], "text": text, "bytes": len(text.encode()),
                 "est_tokens_bytes_div_4": len(text.encode()) // 4, "server_text": text,
                 "server_bytes": len(text.encode()), "truncated": False, "loaded_tools": loaded,
                 "same_message_other_blocks": []}
            )
        elif item.get("type") in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call = calls.get(item.get("call_id"), {})
            try:
                args = json.loads(call.get("arguments") or call.get("input") or "{}")
            except ValueError:
                args = call.get("arguments")
            name = full_name(call) if call else None
            kind = "mcp" if (call.get("namespace") or "").startswith("mcp__") else (
                "shell" if name in ("exec_command", "shell_command", "shell", "local_shell") else None)
            is_error = False
            if kind and seen[kind] < len(failed[kind]):
                is_error = failed[kind][seen[kind]]
                seen[kind] += 1
            output = item.get("output")
            text = text_of(output)
            size = len(text.encode())
            server_text = server_text_of(output)
            others = []
            for later in items[n + 1 :]:
                if later.get("type") != "message" or later.get("role") == "assistant":
                    break
                others.append(later)
            report["tool_results"].append(
                {
                    "tool": name,
                    "input": args,
                    "is_error": is_error,
                    "content": output,
                    "content_block_types": [b.get("type") if isinstance(b, dict) else type(b).__name__
                                            for b in output_items(output)]
                    if not isinstance(output, str) else "str",
                    "blocks": blocks_summary(output),
                    "text": text,
                    "bytes": size,
                    "est_tokens_bytes_div_4": size // 4,
                    "server_text": server_text,
                    "server_bytes": len(server_text.encode()),
                    "truncated": bool(TRUNCATED_RE.search(text)),
                    "truncated_tokens": sum(int(m.group(1)) for m in TRUNCATED_TOKENS_RE.finditer(text)),
                    "same_message_other_blocks": others,
                }
            )
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--http")
    where.add_argument("--stdio-json")
    ap.add_argument("--server", default="srv")
    ap.add_argument("--tool")
    ap.add_argument("--args", default="{}")
    ap.add_argument("--scenario", default="call")
    ap.add_argument("--script")
    ap.add_argument("--prompt", default="Use the MCP tool as scripted, then say done.")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep")
    ap.add_argument("--codex", default=CODEX)
    ap.add_argument("--model", default="gpt-5.5")
    ap.add_argument("-c", "--config", action="append", default=[], help="KEY=VALUE for `codex exec -c`")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for codex's environment")
    opts = ap.parse_args()

    base = opts.keep or tempfile.mkdtemp(prefix="lro-codex-")
    os.makedirs(base, exist_ok=True)
    home, work, codex_home = (os.path.join(base, d) for d in ("home", "work", "codex-home"))
    for d in (home, work, codex_home):
        os.makedirs(d, exist_ok=True)

    if opts.script:
        with open(opts.script) as f:
            spec = json.load(f)
    elif opts.tool:
        spec = {"turns": scenario_turns(opts.scenario, opts.server, opts.tool, json.loads(opts.args))}
    else:
        sys.exit("--tool or --script is required")
    spec["turns"] = [normalise_turn(t, opts.server) for t in spec.get("turns", [])]
    script_path = os.path.join(base, "script.json")
    with open(script_path, "w") as f:
        json.dump(spec, f)
    log_path = os.path.join(base, "model-requests.jsonl")
    if os.path.exists(log_path):
        os.remove(log_path)

    if opts.http:
        server = {"type": "http", "url": opts.http}
    else:
        cmd = json.loads(opts.stdio_json)
        server = {"type": "stdio", "command": cmd[0], "args": cmd[1:]}

    model, port = start_model("model_openai.py", script_path, log_path, os.path.join(base, "model.err"))
    write_config(os.path.join(codex_home, "config.toml"), port, opts.model, opts.server, server)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "CODEX_HOME": codex_home,
        "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "SCRIPTED_API_KEY": "dummy",
        "NO_PROXY": "127.0.0.1,localhost",
        "RUST_LOG": os.environ.get("RUST_LOG", "error"),
    }
    for kv in opts.env:
        k, _, v = kv.partition("=")
        env[k] = v
    argv = [
        opts.codex,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--dangerously-bypass-approvals-and-sandbox",
        "--color",
        "never",
        "-C",
        work,
    ]
    for kv in opts.config:
        argv += ["-c", kv]
    argv.append(opts.prompt)
    started = time.time()
    proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    finally:
        model.kill()
        model.wait()
    elapsed = round(time.time() - started, 1)

    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    messages = [e["item"].get("text") for e in events
                if e.get("type") == "item.completed" and (e.get("item") or {}).get("type") == "agent_message"]
    errors = [e for e in events if e.get("type") in ("error", "turn.failed")
              or (e.get("item") or {}).get("type") == "error"]
    usage = [e.get("usage") for e in events if e.get("type") == "turn.completed"]
    final = {"final_message": messages[-1] if messages else None, "usage": usage[-1] if usage else None,
             "errors": errors, "event_types": sorted({e.get("type") for e in events})}
    turn_failed = any(e.get("type") in ("turn.failed", "error") for e in events)
    report = {
        "ok": proc.returncode == 0 and not timed_out and not turn_failed,
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "elapsed_s": elapsed,
        "server": server,
        "script": spec,
        "codex_result": final,
        "stderr_tail": err[-2000:],
        "log": log_path if opts.keep else None,
    }
    report.update(analyse(read_log(log_path), events))
    report["spills"] = []
    if opts.keep:
        with open(os.path.join(base, "codex-events.jsonl"), "w") as f:
            f.write(out)
    print(json.dumps(report))
    if not opts.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
