"""Runs the real Claude Code CLI (tests/interop/agents/node_modules, pinned in
package.json) against one MCP server, with its model replaced by model.py (a
scripted Anthropic Messages endpoint on 127.0.0.1), and prints ONE JSON line:
what reached the model's context from every tool call, as the model received
it in the next request.

    python run_claude.py (--http URL | --stdio-json '["cmd", "arg", ...]')
                         (--tool NAME [--args JSON] [--scenario S] | --script FILE)
                         [--server NAME] [--timeout 120] [--keep DIR]

  --http URL       a streamable-http MCP server (e.g. http://127.0.0.1:PORT/mcp)
  --stdio-json     a stdio MCP server: its command and arguments as a JSON array
  --server NAME    the server's name in the MCP config (default `srv`): its
                   tools reach the model as `mcp__NAME__TOOL`
  --tool NAME      the server's tool the scripted model calls first
  --args JSON      its arguments (default {})
  --scenario S     what the model does next, every later turn optional (skipped
                   when its placeholder is not in the result):
                     call          nothing more, says "done" (the default)
                     bash          Bash `tail -n +2 {file_path} | head -n 3`,
                                   then Bash {recipe_1}
                     extract       mcp__NAME__lro_extract(file_path, recipe=1)
                     spill         Bash `head -c 3000 {spill_path}` (the file to
                                   which Claude Code saved an over-long result)
  --script FILE    a model.py script instead; `{server}` in a turn's `tool` is
                   replaced by NAME
  --no-tool-search ENABLE_TOOL_SEARCH=false (by default Claude Code defers MCP
                   tools behind ToolSearch; model.py then calls ToolSearch
                   `select:<tool>` first, as a model must)
  --no-persist     --no-session-persistence: Claude Code then deletes the files
                   to which it saved over-long results
  --chars-per-token  model.py's count_tokens answer is characters / this
                   (default 4); it decides whether Claude Code spills a result
  --keep DIR       keep HOME, the work dir and the logs in DIR (default: a
                   temporary dir, removed afterwards)

The report: `ok`, claude's exit code and final JSON, and `tool_results`: for
every tool_result the model received, the tool's name and input, `content`
(the tool_result content blocks as sent to the model), `text` (their text
joined by newlines, what the model reads), `bytes` (UTF-8 of `text`),
`est_tokens_bytes_div_4`, `is_error`, `blocks` (type, bytes, head of
each block, and whether it is a `<system-reminder>` Claude Code added), and
`server_text`/`server_bytes` (`text` without those reminders); for Bash and
lro_extract calls `text` is the command's output. `mcp_tools` lists the MCP tools the model was
offered (name, description bytes, whether an outputSchema-like field was
passed on). `spills` lists the files Claude Code wrote for over-long results
(path, size, first 400 bytes). Nothing but 127.0.0.1 is contacted.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from agent_common import read_log, scenario_turns, start_model

HERE = os.path.dirname(os.path.abspath(__file__))
CLAUDE = os.path.join(HERE, "node_modules", ".bin", "claude")


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(b.get("text", ""))
            else:
                parts.append(json.dumps(b))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


REMINDER = "<system-reminder>"


def strip_reminders(text: str) -> str:
    """The text without the `<system-reminder>` blocks Claude Code appends
    (e.g. `<total_tokens>... tokens left</total_tokens>`): what came from the
    tool, as far as the model can tell."""
    out = text
    while REMINDER in out:
        start = out.index(REMINDER)
        end = out.find("</system-reminder>", start)
        if end == -1:
            break
        out = out[:start] + out[end + len("</system-reminder>") :]
    return out.rstrip("\n")


def blocks_summary(content) -> list:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    out = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "text":
            t = b.get("text", "")
            out.append({"type": "text", "bytes": len(t.encode()), "client_reminder": t.lstrip().startswith(REMINDER),
                        "head": t[:160]})
        else:
            out.append({"type": b.get("type") if isinstance(b, dict) else type(b).__name__, "bytes": len(json.dumps(b))})
    return out


def analyse(records: list) -> dict:
    mains = [r for r in records if r.get("main")]
    side = [r for r in records if not r.get("main")]
    report: dict = {
        "requests": {"main": len(mains), "side": len(side), "side_paths": sorted({r.get("path", "") for r in side})},
        "tool_results": [],
        "mcp_tools": [],
        "script_skipped": [],
    }
    for r in mains:
        report["script_skipped"] += (r.get("reply") or {}).get("skipped") or []
    if not mains:
        return report
    last = mains[-1]["body"]
    for t in last.get("tools") or []:
        if str(t.get("name", "")).startswith("mcp__"):
            report["mcp_tools"].append(
                {
                    "name": t["name"],
                    "description_bytes": len((t.get("description") or "").encode()),
                    "keys": sorted(t.keys()),
                }
            )
    uses = {}
    for m in last.get("messages") or []:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            if m.get("role") == "assistant" and b.get("type") == "tool_use":
                uses[b["id"]] = b
            elif m.get("role") == "user" and b.get("type") == "tool_result":
                use = uses.get(b.get("tool_use_id"), {})
                text = text_of(b.get("content"))
                size = len(text.encode())
                server_text = strip_reminders(text)
                others = [x for x in content if isinstance(x, dict) and x.get("type") != "tool_result"]
                report["tool_results"].append(
                    {
                        "tool": use.get("name"),
                        "input": use.get("input"),
                        "is_error": bool(b.get("is_error")),
                        "content": b.get("content"),
                        "content_block_types": [x.get("type") for x in b.get("content")]
                        if isinstance(b.get("content"), list)
                        else type(b.get("content")).__name__,
                        "blocks": blocks_summary(b.get("content")),
                        "text": text,
                        "bytes": size,
                        "est_tokens_bytes_div_4": size // 4,
                        "server_text": server_text,
                        "server_bytes": len(server_text.encode()),
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
    ap.add_argument("--claude", default=CLAUDE)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for claude's environment")
    ap.add_argument("--permission-mode", default="dontAsk",
                    help="claude's --permission-mode (dontAsk: only --allowedTools run, nothing prompts; bypassPermissions needs IS_SANDBOX=1 as root, set here)")
    ap.add_argument("--no-tool-search", action="store_true", help="ENABLE_TOOL_SEARCH=false: MCP tools offered up front")
    ap.add_argument("--no-persist", action="store_true", help="--no-session-persistence (spilled results are then not kept)")
    ap.add_argument("--chars-per-token", type=float, default=4, help="model.py's count_tokens estimate")
    opts = ap.parse_args()

    base = opts.keep or tempfile.mkdtemp(prefix="lro-claude-")
    os.makedirs(base, exist_ok=True)
    home, work = os.path.join(base, "home"), os.path.join(base, "work")
    os.makedirs(home, exist_ok=True)
    os.makedirs(work, exist_ok=True)

    if opts.script:
        with open(opts.script) as f:
            spec = json.load(f)
        for t in spec.get("turns", []):
            if "tool" in t:
                t["tool"] = t["tool"].replace("{server}", opts.server)
    elif opts.tool:
        spec = {"turns": scenario_turns(opts.scenario, opts.server, opts.tool, json.loads(opts.args), shell="Bash", described=True)}
    else:
        sys.exit("--tool or --script is required")
    spec.setdefault("count_tokens_chars_per_token", opts.chars_per_token)
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
    mcp_config = json.dumps({"mcpServers": {opts.server: server}})

    model, port = start_model("model.py", script_path, log_path, os.path.join(base, "model.err"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        # Claude Code refuses bypassPermissions as root outside a sandbox.
        "IS_SANDBOX": "1" if opts.permission_mode == "bypassPermissions" else "",
        "MCP_TIMEOUT": "30000",
        "MCP_TOOL_TIMEOUT": "60000",
    }
    if opts.no_tool_search:
        env["ENABLE_TOOL_SEARCH"] = "false"
    for kv in opts.env:
        k, _, v = kv.partition("=")
        env[k] = v
    argv = [
        opts.claude,
        "-p",
        opts.prompt,
        "--mcp-config",
        mcp_config,
        "--strict-mcp-config",
        "--permission-mode",
        opts.permission_mode,
        "--allowedTools",
        f"mcp__{opts.server}__*",
        "Bash",
        "--output-format",
        "json",
        "--model",
        "claude-sonnet-4-5",
    ] + (["--no-session-persistence"] if opts.no_persist else [])
    started = time.time()
    proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
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

    try:
        final = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except ValueError:
        final = {"unparsed_stdout": out[-2000:]}
    report = {
        "ok": proc.returncode == 0 and not timed_out,
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "elapsed_s": elapsed,
        "server": server,
        "script": spec,
        "claude_result": final,
        "stderr_tail": err[-2000:],
        "log": log_path if opts.keep else None,
    }
    report.update(analyse(read_log(log_path)))
    spills = []
    for p in sorted(glob.glob(os.path.join(home, ".claude", "projects", "**", "tool-results", "*"), recursive=True)):
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
