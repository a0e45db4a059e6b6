"""Runs the real Gemini CLI (`gemini -p`, tests/interop/agents/node_modules,
pinned in package.json) against one MCP server, with its model replaced by
model_gemini.py (a scripted Gemini API endpoint on 127.0.0.1, reached through
GOOGLE_GEMINI_BASE_URL), and prints ONE JSON line: what reached the model's
context from every tool call, as the model received it in the next request.
The command line and the report are run_claude.py's.

    python run_gemini.py (--http URL | --stdio-json '["cmd", "arg", ...]')
                         (--tool NAME [--args JSON] [--scenario S] | --script FILE)
                         [--server NAME] [--timeout 120] [--keep DIR]

  --http URL       a streamable-http MCP server (settings.json
                   `mcpServers.NAME.httpUrl`)
  --stdio-json     a stdio MCP server: its command and arguments as a JSON
                   array (`command` / `args`)
  --server NAME    the server's name in Gemini CLI's settings (default `srv`).
                   Gemini CLI offers the server's tools to the model as
                   `mcp_NAME_TOOL` (one underscore each); scripts may write
                   them `mcp__NAME__TOOL` (Claude Code's spelling, translated
                   by model_gemini.py), and the report uses Gemini's names
  --tool NAME      the server's tool the scripted model calls first
  --args JSON      its arguments (default {})
  --scenario S     call | bash | extract | spill, as in run_claude.py (`bash`
                   and `spill` run their commands with `run_shell_command`;
                   `spill` reads the file named by Gemini CLI's truncation
                   notice "For full output see: PATH")
  --script FILE    a model_gemini.py script (model.py's format); `{server}` in
                   a turn's `tool` is replaced by NAME. The shell tool is
                   written `{"tool": "shell", "input": {"command": "CMD"}}`
                   (`"Bash"` is taken as the same) and sent as Gemini CLI's
                   `run_shell_command` {"command": CMD}
  --model M        the model name Gemini CLI is told to use (-m; default
                   gemini-2.5-flash)
  --env KEY=VALUE  extra environment for gemini (repeatable)
  --keep DIR       keep HOME, the work dir and the logs in DIR (default: a
                   temporary dir, removed afterwards)

Gemini CLI runs as `gemini -p PROMPT --approval-mode yolo --skip-trust
--output-format json -m MODEL` (every tool call runs without asking; the
work dir trusted), stdin closed, with HOME (and GEMINI_CLI_HOME) in the
temporary dir. ~/.gemini/settings.json holds the MCP server (`httpUrl`, or
`command`/`args`; `trust: true`), `security.auth.selectedType`
"gemini-api-key" (needed: with GOOGLE_GEMINI_BASE_URL alone Gemini CLI picks
auth type "gateway", which its non-interactive check rejects, "Invalid auth
method selected."), folder trust, usage statistics, telemetry, auto-update
and its notification, checkpointing and the next-speaker check off. The
environment: GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT (the @google/genai
client then POSTs PORT/v1beta/models/MODEL:streamGenerateContent?alt=sse),
GEMINI_API_KEY=dummy, GEMINI_CLI_NO_RELAUNCH=1 (no child node process),
GEMINI_CLI_TRUST_WORKSPACE=true.

What Gemini CLI 0.61.0 puts in the model's context for an MCP result (its
source, packages/core/src/tools/mcp-tool.ts, and seen here): a
`functionResponse` part {"name": "mcp_NAME_TOOL", "response": {"output":
TEXT}}, TEXT being the result's content blocks, each text block wrapped in
"<untrusted_context>\n...\n</untrusted_context>", joined with newlines (a
resource_link block as the line "Resource Link: NAME at URI"). The
`structuredContent` is dropped and the tool's `outputSchema` is not passed
on (a function declaration has name, description, parametersJsonSchema).
A result of a single text block over the truncation threshold
(min(40000 characters, 4 x the tokens left)) is saved to
~/.gemini/tmp/<project>/tool-outputs/session-*/... and replaced by "Output
too large. Showing first 8,000 and last 32,000 characters. For full output
see: PATH" and that head and tail. A run_shell_command result is
"Output: ...\nProcess Group PGID: N" (and "Exit Code: N" when not 0), also
wrapped in untrusted_context.

A quirk (packages/core/src/tools/mcp-compliance-transport.ts): when a result
has no structuredContent, Gemini CLI sets it to JSON.parse of the first text
block; when that text is a JSON array (or string, number), the MCP SDK's
CallToolResult schema (structuredContent: an object) rejects the result,
and the model gets only "MCP tool 'TOOL' reported tool error ... expected
record, received array" instead of the result.

The report (run_claude.py's): `ok` (exit code 0, no timeout, no `error` in
the final JSON; a failed MCP call does not clear it), gemini's exit code,
`gemini_result` (the final JSON of --output-format json: response, error,
stats.models and stats.tools), and `tool_results`: for every
functionResponse the model received, the tool's name (Gemini's) and args,
`content` (the `response` object as sent to the model), `text` (its
`output` string, what the model reads), `bytes`, `est_tokens_bytes_div_4`,
`is_error` (an `error` response, an MCP "reported tool error", or a
non-zero "Exit Code:" of the shell), `blocks` (one per untrusted_context
block, per resource link line, and per line of Gemini's own outside them,
`client_reminder`), `server_text`/`server_bytes` (`text` without Gemini's
wrappers and truncation notice; for run_shell_command the command's output
alone), `truncated` (Gemini's truncation notice is in the text). `mcp_tools`
lists the MCP tools offered (name, description bytes, declaration keys),
`offered_tools` every function's name in the last request and
`offered_first` in the first (the layer's tools may come in between, after
`notifications/tools/list_changed`), `requests` the main and side model
requests, `spills` the files Gemini CLI saved over-long outputs to (path,
size, first 400 bytes). Nothing but 127.0.0.1 is contacted.
"""

import argparse
import glob
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
GEMINI = os.path.join(HERE, "node_modules", ".bin", "gemini")

UNTRUSTED_RE = re.compile(r"<untrusted_context>\n(.*?)\n</untrusted_context>", re.S)
TRUNCATED_RE = re.compile(r"^Output too large\. Showing first [0-9,]+ and last [0-9,]+ characters\. "
                          r"For full output see: \S+\n", re.M)
SHELL_TAIL_RE = re.compile(r"(?:\n(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): [^\n]*)+\Z")
EXIT_RE = re.compile(r"^Exit Code: (-?\d+)$", re.M)


def normalise_turn(turn: dict, server: str) -> dict:
    if "tool" not in turn:
        return turn
    turn = dict(turn)
    turn["tool"] = turn["tool"].replace("{server}", server)
    if turn["tool"] == "Bash":
        turn["tool"] = "shell"
    return turn


def write_settings(path: str, model: str, server_name: str, server: dict) -> None:
    if server["type"] == "http":
        srv = {"httpUrl": server["url"]}
    else:
        srv = {"command": server["command"], "args": server["args"]}
    srv.update(trust=True, timeout=120000)
    settings = {
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "checkpointing": {"enabled": False},
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False, "logPrompts": False},
        "security": {"folderTrust": {"enabled": False}, "auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": model, "skipNextSpeakerCheck": True},
        "ui": {"hideBanner": True, "hideTips": True},
        "mcpServers": {server_name: srv},
    }
    with open(path, "w") as f:
        json.dump(settings, f, indent=2)


def response_text(response) -> str:
    if isinstance(response, dict) and isinstance(response.get("output"), str) and len(response) == 1:
        return response["output"]
    if isinstance(response, dict) and isinstance(response.get("error"), str) and len(response) == 1:
        return response["error"]
    return json.dumps(response)


def blocks_summary(text: str) -> list:
    """One entry per untrusted_context block (an MCP text block, or a shell
    result), per resource link line ("Resource Link: NAME at URI", Gemini
    CLI's rendering of a resource_link block) and per text of Gemini CLI's
    own (its truncation notice: client_reminder)."""
    out, pos = [], 0

    def outside(t):
        for line in t.split("\n"):
            if not line.strip():
                continue
            kind = "resource_link" if line.startswith("Resource Link: ") else "gemini_text"
            out.append({"type": kind, "bytes": len(line.encode()), "client_reminder": kind == "gemini_text",
                        "head": line[:160]})

    for m in UNTRUSTED_RE.finditer(text):
        outside(text[pos : m.start()])
        t = m.group(1)
        out.append({"type": "text", "bytes": len(t.encode()), "client_reminder": False, "head": t[:160]})
        pos = m.end()
    rest = text[pos:]
    if out:
        outside(rest)
    elif rest:
        out.append({"type": "text", "bytes": len(rest.encode()), "client_reminder": False, "head": rest[:160]})
    return out


def server_text_of(tool: str, text: str) -> str:
    """`text` without Gemini CLI's own additions: the untrusted_context
    wrappers and the truncation notice dropped (resource link lines kept);
    for run_shell_command (whose result Gemini CLI wraps too) the command's
    output alone, without "Output: " and the trailing "Process Group PGID:"
    / "Exit Code:" lines."""
    out = TRUNCATED_RE.sub("", text, count=1)
    out = UNTRUSTED_RE.sub(lambda m: m.group(1).replace("&lt;/untrusted_context&gt;", "</untrusted_context>"), out)
    if tool == "run_shell_command" and out.startswith("Output: "):
        body = SHELL_TAIL_RE.sub("", out[len("Output: ") :])
        out = "" if body == "(empty)" else body
    return out.rstrip("\n")


def analyse(records: list) -> dict:
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
    report["offered_first"] = [
        d.get("name") for t in mains[0]["body"].get("tools") or [] for d in t.get("functionDeclarations") or []
    ]
    last = mains[-1]["body"]
    for t in last.get("tools") or []:
        for d in t.get("functionDeclarations") or []:
            report["offered_tools"].append(d.get("name"))
            if str(d.get("name", "")).startswith("mcp_"):
                report["mcp_tools"].append(
                    {"name": d["name"], "description_bytes": len((d.get("description") or "").encode()),
                     "keys": sorted(d.keys())}
                )
    calls = []  # functionCall parts, in order (ids may be absent)
    for c in last.get("contents") or []:
        for p in c.get("parts") or []:
            if not isinstance(p, dict):
                continue
            if c.get("role") == "model" and isinstance(p.get("functionCall"), dict):
                calls.append(p["functionCall"])
            elif isinstance(p.get("functionResponse"), dict):
                fr = p["functionResponse"]
                call = next((x for x in calls if fr.get("id") and x.get("id") == fr.get("id")), None)
                if call is None:
                    call = next((x for x in calls if x.get("name") == fr.get("name") and not x.get("_used")), {})
                if call:
                    call["_used"] = True
                response = fr.get("response")
                text = response_text(response)
                size = len(text.encode())
                name = fr.get("name") or call.get("name")
                server_text = server_text_of(name, text)
                exit_code = EXIT_RE.search(text) if name == "run_shell_command" else None
                is_error = (
                    (isinstance(response, dict) and "error" in response)
                    or text.startswith("MCP tool '") and "reported tool error" in text
                    or bool(exit_code and exit_code.group(1) != "0")
                )
                others = [x for x in c.get("parts") or [] if isinstance(x, dict) and "functionResponse" not in x]
                report["tool_results"].append(
                    {
                        "tool": name,
                        "input": call.get("args"),
                        "is_error": bool(is_error),
                        "content": response,
                        "content_block_types": sorted(response.keys()) if isinstance(response, dict) else type(response).__name__,
                        "blocks": blocks_summary(text),
                        "text": text,
                        "bytes": size,
                        "est_tokens_bytes_div_4": size // 4,
                        "server_text": server_text,
                        "server_bytes": len(server_text.encode()),
                        "truncated": bool(TRUNCATED_RE.search(text)),
                        "same_message_other_blocks": others,
                    }
                )
    return report


def last_json(text: str):
    """The last top-level JSON object in text (--output-format json prints
    one, possibly after warnings)."""
    starts = [m.start() for m in re.finditer(r"^\{", text, re.M)]
    for start in reversed(starts):
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            if isinstance(value, dict):
                return value
        except ValueError:
            continue
    return None


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
    ap.add_argument("--gemini", default=GEMINI)
    ap.add_argument("--model", default="gemini-2.5-flash")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for gemini's environment")
    opts = ap.parse_args()

    base = opts.keep or tempfile.mkdtemp(prefix="lro-gemini-")
    os.makedirs(base, exist_ok=True)
    home, work = os.path.join(base, "home"), os.path.join(base, "work")
    for d in (home, work, os.path.join(home, ".gemini")):
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

    model, port = start_model("model_gemini.py", script_path, log_path, os.path.join(base, "model.err"))
    write_settings(os.path.join(home, ".gemini", "settings.json"), opts.model, opts.server, server)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "GEMINI_CLI_HOME": home,
        "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
        "GEMINI_API_KEY": "dummy",
        "GEMINI_CLI_NO_RELAUNCH": "1",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for kv in opts.env:
        k, _, v = kv.partition("=")
        env[k] = v
    argv = [
        opts.gemini,
        "-p",
        opts.prompt,
        "--approval-mode",
        "yolo",
        "--skip-trust",
        "--output-format",
        "json",
        "-m",
        opts.model,
    ]
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

    final = last_json(out) or last_json(err)  # an error's JSON goes to stderr
    if final is None and out.strip():
        final = {"unparsed_stdout": out[-2000:]}
    if isinstance(final, dict) and isinstance(final.get("stats"), dict):
        final["stats"] = {k: v for k, v in final["stats"].items() if k in ("models", "tools")}
    report = {
        "ok": proc.returncode == 0 and not timed_out and not (isinstance(final, dict) and final.get("error")),
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "elapsed_s": elapsed,
        "server": server,
        "script": spec,
        "gemini_result": final,
        "stderr_tail": err[-2000:],
        "log": log_path if opts.keep else None,
    }
    report.update(analyse(read_log(log_path)))
    spills = []
    for p in sorted(glob.glob(os.path.join(home, ".gemini", "tmp", "**", "tool-outputs", "**", "*"), recursive=True)):
        if os.path.isfile(p):
            with open(p, "rb") as f:
                head = f.read(400).decode("utf-8", "replace")
            spills.append({"path": p, "bytes": os.path.getsize(p), "head": head})
    report["spills"] = spills
    print(json.dumps(report))
    if not opts.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
