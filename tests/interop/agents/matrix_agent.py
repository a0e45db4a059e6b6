"""Runs run_codex.py or run_gemini.py (the real Codex CLI or Gemini CLI, its
model scripted) for three tools of tests/interop/py_server.py, each called
with count 2000, three ways: the server directly, through `lro gateway`, and
through `lro proxy` as the agent's stdio MCP server. Prints one JSON line per
run (the driver's report, plus `case` and `via`) and then a table of what
reached the model.

    python matrix_agent.py --agent codex|gemini --lro PATH/TO/lro
                           [--via direct gateway proxy]
                           [--only records_text records rows] [--keep DIR]

Needs tests/interop/setup.sh (the .venv) and setup.sh here (npm ci). In
every run the scripted model calls the tool; then, when the result holds a
descriptor (not directly), runs the recipe described "count by category"
with the shell tool (`exec_command`, `run_shell_command`), and calls
lro_extract on the file with
a slurped group_by; then says done. Everything listens on 127.0.0.1.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from matrix import INTEROP, PYTHON, start

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = ["records_text", "records", "rows"]
QUERY = "group_by(.category) | map({category: .[0].category, count: length})"


def turns(tool: str) -> list:
    return [
        {"tool": f"mcp__{{server}}__{tool}", "input": {"count": 2000}},
        {"tool": "shell", "input": {"command": "{recipe~count by category}"}, "optional": True},
        {"tool": "mcp__{server}__lro_extract", "input": {"file_path": "{file_path}", "slurp": True, "query": QUERY},
         "optional": True},
        {"text": "done"},
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", choices=["codex", "gemini"], required=True)
    ap.add_argument("--lro", help="the lro binary (needed for gateway and proxy)")
    ap.add_argument("--via", nargs="*", default=["direct", "gateway", "proxy"])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--keep")
    ap.add_argument("--timeout", type=float, default=120)
    opts = ap.parse_args()
    if not opts.lro and set(opts.via) - {"direct"}:
        sys.exit("--lro is needed for gateway and proxy")
    if opts.keep:
        os.makedirs(opts.keep, exist_ok=True)
    procs = []
    rows = []
    out_dir = None
    try:
        py, port = start([PYTHON, os.path.join(INTEROP, "py_server.py"), "0"], r"LISTENING (\d+)")
        procs.append(py)
        upstream = f"http://127.0.0.1:{port}/mcp"
        out_dir = tempfile.mkdtemp(prefix=f"lro-{opts.agent}-files-", dir=opts.keep)
        where = {}
        if "direct" in opts.via:
            where["direct"] = ("py", ["--http", upstream])
        if "gateway" in opts.via:
            gw, url = start(
                [opts.lro, "gateway", "--upstream", upstream, "--listen", "127.0.0.1:0", "--output-dir", out_dir],
                r"(http://127\.0\.0\.1:\d+/\S*)",
            )
            procs.append(gw)
            where["gateway"] = ("lro", ["--http", url])
        if "proxy" in opts.via:
            where["proxy"] = ("lro", ["--stdio-json", json.dumps([opts.lro, "proxy", upstream, "--output-dir", out_dir])])
        for via, (server, target) in where.items():
            for tool in TOOLS:
                if opts.only and tool not in opts.only:
                    continue
                with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as script:
                    json.dump({"turns": turns(tool)}, script)
                argv = [sys.executable, os.path.join(HERE, f"run_{opts.agent}.py"), *target, "--server", server,
                        "--script", script.name, "--timeout", str(opts.timeout)]
                if opts.keep:
                    argv += ["--keep", os.path.join(opts.keep, f"{via}-{tool}")]
                try:
                    done = subprocess.run(argv, capture_output=True, text=True, timeout=opts.timeout + 60)
                    report = json.loads(done.stdout)
                except (ValueError, subprocess.TimeoutExpired) as e:
                    report = {"ok": False, "error": repr(e)[-2000:]}
                finally:
                    os.unlink(script.name)
                report.update(case=tool, via=via)
                print(json.dumps(report), flush=True)
                for t in report.get("tool_results", []):
                    if t["tool"] == "tool_search":  # Codex's own tool lookup
                        continue
                    rows.append((via, tool, t["tool"], t["bytes"], t["server_bytes"], t["is_error"],
                                 t.get("truncated"), t["server_text"][:70]))
        print(f"{'via':8} {'case':13} {'tool':24} {'bytes':>7} {'server':>7} err trunc  what the model saw (start)",
              file=sys.stderr)
        for r in rows:
            print(f"{r[0]:8} {r[1]:13} {r[2]:24} {r[3]:7} {r[4]:7} {'E' if r[5] else ' ':3} {'T' if r[6] else ' ':5}"
                  f"  {r[7]!r}", file=sys.stderr)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if out_dir and not opts.keep:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
